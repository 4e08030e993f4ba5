"""A simulated span crowd with known truth, for the sequence tests (numpy only)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from crowd_keras.sequences.annotations import SequenceAnnotations


def simulated_spans(n_docs: int = 60, n_workers: int = 8, per_doc: int = 4, seed: int = 0,
                    scheme: str = "IO", good: int = 3):
    """Documents of 20-40 one-character-word tokens ("a b c ..."), 1-3 true spans each.

    ``good`` workers mark each true span with probability 0.9 and add a false span rarely;
    the others mark a true span with probability 0.5, move its edges by one token half the
    time and add false spans often. Every worker listed for a document saw it.

    Returns ``(sequences, truth)``: truth is the (T,) IO truth (1 = inside a true span).
    """
    rng = np.random.default_rng(seed)
    texts, true_spans, rows, seen = [], [], [], []
    for d in range(n_docs):
        n = int(rng.integers(20, 41))
        texts.append(" ".join("abcdefghij"[i % 10] for i in range(n)))
        spans = []
        for s in np.sort(rng.choice(np.arange(0, n - 4, 5), size=int(rng.integers(1, 4)),
                                    replace=False)):
            spans.append((int(s), int(s + rng.integers(1, 4))))      # token range [s, e)
        true_spans.append(spans)
        for w in rng.choice(n_workers, size=per_doc, replace=False):
            seen.append((d, f"w{w}"))
            good_w = w < good
            for s, e in spans:
                if rng.random() < (0.9 if good_w else 0.5):
                    if not good_w and rng.random() < 0.5:
                        s, e = max(0, s - 1), min(n, e + 1)
                    rows.append((d, f"w{w}", 2 * s, 2 * e - 1))
            if rng.random() < (0.05 if good_w else 0.6):
                s = int(rng.integers(0, n - 2))
                rows.append((d, f"w{w}", 2 * s, 2 * s + 3))
    frame = pd.DataFrame(rows, columns=["doc", "annotator", "start", "end"])
    seq = SequenceAnnotations.from_spans(texts, frame, seen=seen, scheme=scheme)
    truth = np.zeros(seq.n_tokens, np.int64)
    for d, spans in enumerate(true_spans):
        for s, e in spans:
            truth[seq.tokens.doc_ptr[d] + s:seq.tokens.doc_ptr[d] + e] = 1
    return seq, truth
