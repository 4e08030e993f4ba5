"""Train a small tagger directly from crowd spans (PICO), through the sequence crowd layer.

The story, end to end:

1. PICO's crowd train split: 3,549 medical abstracts, "Participants" spans from Mechanical
   Turk workers as character offsets (``crowd_keras.datasets.load_pico``), tokenised on
   whitespace and tagged IO per worker (a worker who saw an abstract tags every token);
2. a vocabulary from the training text only, documents cut into windows of 128 tokens
   (``crowd_keras.sequences.batches``), word id 0 at padding;
3. a small tagger: ``Embedding(mask_zero=True)`` → BiLSTM (or two 1-D convolutions) → softmax
   over the tags, topped by ``CrowdLayer`` in its indexed sequence form, trained with
   ``MaskedMultiCrossEntropy`` on every worker's tags: no aggregation step; the Keras mask of
   the padding flows through the crowd layer into the loss, so padding never trains;
4. the same tagger trained on majority-vote tags, for comparison;
5. epochs chosen by each model's own loss on the crowd dev split (no gold), then spans
   predicted on the test abstracts (``acl17-test``), scored on the gold half when present.

Run from the repository root (PICO from ``CROWD_KERAS_DATA`` or the cache)::

    python examples/pico_tagger.py              # ~5 min on 2 CPU cores per model
    python examples/pico_tagger.py --quick      # a few hundred abstracts, 2 epochs
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras.quiet import quiet_import  # noqa: E402

with quiet_import("--verbose" in sys.argv):  # TensorFlow's start-up notices, unless --verbose
    import keras  # noqa: E402

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.errors import DownloadError  # noqa: E402
from crowd_keras.callbacks import FitProgress  # noqa: E402
from crowd_keras.datasets import load_pico  # noqa: E402
from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.losses import MaskedMultiCrossEntropy  # noqa: E402
from crowd_keras.sequences.batches import Vocabulary, windows  # noqa: E402
from crowd_keras.sequences.models import TokenMajorityVote  # noqa: E402
from crowd_keras.sequences.quality import spans_token_mask, token_prf  # noqa: E402

SPLITS = ("train", "dev", "acl17-test")
#: The crowd layer's start: every worker trusted at 3·I (P(correct) = e³/(e³+1) = 0.95 for two
#: tags), as in the prototype's per-token crowd layer. At the paper's start (1·I) the workers
#: look almost random and the tagger tags nothing (its dev loss is also far worse: 0.291 vs
#: 0.187); README, "Spans and sequences", says how this was chosen.
CROWD_LAYER = {"init_scale": 3.0}


def load(data: Optional[Path], quick: bool = False, window: int = 128) -> dict:
    """PICO's train / dev / acl17-test abstracts, vocabulary, windows and majority-vote tags."""
    pico = load_pico(data, splits=SPLITS)
    seq, split = pico.sequences, pico.split
    if quick:   # a slice: 240 train, 60 dev and all test abstracts
        keep = np.concatenate([np.flatnonzero(split == "train")[:240],
                               np.flatnonzero(split == "dev")[:60],
                               np.flatnonzero(split == "acl17-test")])
        seq, split = seq.subset(keep), split[keep]
    docs = {s: np.flatnonzero(split == s) for s in SPLITS}
    vocab = Vocabulary(min_count=2).fit(seq, docs["train"])
    word_ids = vocab.encode(seq)
    majority = TokenMajorityVote().fit(seq).predict()
    return {"pico": pico, "seq": seq, "docs": docs, "vocab": vocab, "word_ids": word_ids,
            "majority": majority,
            "windows": {s: windows(seq, d, window) for s, d in docs.items()}}


def build_tagger(vocab_size: int, n_tags: int, window: int = 128, units: int = 32,
                 arch: str = "lstm") -> keras.Model:
    """Word ids (batch, window) → tag probabilities (batch, window, n_tags); the BiLSTM's
    carry the Keras mask of the padding."""
    words = keras.Input((window,), dtype="int32", name="words")
    # Conv1D takes no mask (Keras warns that it drops one); padding still never trains, as
    # its targets are -1 (missing) in the windows
    h = keras.layers.Embedding(vocab_size, 64, mask_zero=arch == "lstm")(words)
    h = keras.layers.Dropout(0.25)(h)
    if arch == "lstm":
        h = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(h)
    else:
        for _ in range(2):
            h = keras.layers.Conv1D(units, 5, padding="same", activation="relu")(h)
    h = keras.layers.Dropout(0.25)(h)
    probs = keras.layers.Dense(n_tags, activation="softmax", name="tags")(h)
    return keras.Model(words, probs, name="tagger")


def train_tagger(d: dict, kind: str, seed: int = 0, epochs: int = 15, batch_size: int = 128,
                 units: int = 32, arch: str = "lstm", init_scale: float = 3.0,
                 learning_rate_multiplier: float = 1.0) -> tuple[keras.Model, dict]:
    """Train the tagger from the crowd (``kind="crowd"``) or on majority-vote tags (``"mv"``).

    The crowd form is ``CrowdLayer(A, "MW", init_scale)([tagger(words), annotator_ids])`` →
    logits of each worker who saw the abstract at each token, ``(batch, window, slots, tags)``.
    """
    seq, win = d["seq"], d["windows"]
    keras.utils.set_random_seed(seed)
    length = win["train"].token_index.shape[1]
    tagger = build_tagger(d["vocab"].size, seq.n_tags, length, units, arch)

    def arrays(split):
        w = win[split]
        words = w.gather(d["word_ids"], 0)
        if kind == "crowd":
            return [words, w.annotators], w.labels
        return words, w.gather(d["majority"], -1).astype("int32")

    if kind == "crowd":
        annotators = keras.Input((win["train"].annotators.shape[1],), dtype="int32",
                                 name="annotators")
        logits = CrowdLayer(len(seq.annotator_ids), "MW", init_scale=init_scale,
                            learning_rate_multiplier=learning_rate_multiplier)(
            [tagger.output, annotators])
        model = keras.Model([tagger.input, annotators], logits)
        loss = MaskedMultiCrossEntropy(from_logits=True)
    elif kind == "mv":
        model, loss = tagger, MaskedMultiCrossEntropy(from_logits=False)
    else:
        raise ValueError(f"kind must be 'crowd' or 'mv', got {kind!r}")
    model.compile(keras.optimizers.Adam(2e-3), loss=loss)
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=3,
                                         restore_best_weights=True)
    x, y = arrays("train")
    start = time.perf_counter()
    name = "crowd layer" if kind == "crowd" else "majority-vote tags"
    hist = model.fit(x, y, validation_data=arrays("dev"), epochs=epochs, batch_size=batch_size,
                     verbose=0, callbacks=[stop, FitProgress(f"training the tagger on {name}")])
    info = {"epochs": len(hist.history["loss"]),
            "best_epoch": int(np.argmin(hist.history["val_loss"])) + 1,
            "seconds": time.perf_counter() - start}
    return tagger, info


def predict_tokens(tagger: keras.Model, d: dict, splits=("dev", "acl17-test")) -> np.ndarray:
    """(T, K) tag probabilities of the tokens of ``splits`` (NaN rows elsewhere)."""
    out = np.full((d["seq"].n_tokens, d["seq"].n_tags), np.nan)
    for s in splits:
        w = d["windows"][s]
        probs = tagger.predict(w.gather(d["word_ids"], 0), verbose=0, batch_size=256)
        rows = w.token_index[w.valid]
        out[rows] = probs[w.valid]
    return out


def gold_scores(d: dict, tags: np.ndarray) -> tuple[float, float, float]:
    """Token P/R/F1 on the gold half of acl17-test (README protocol)."""
    seq, gold = d["seq"], d["pico"].gold
    gold = {k: v for k, v in gold.items() if k in set(seq.doc_ids.tolist())}
    on = np.isin(seq.tokens.doc, np.flatnonzero(np.isin(seq.doc_ids, list(gold))))
    return token_prf(np.asarray(tags)[on] > 0, spans_token_mask(seq, gold)[on])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=None,
                   help="folder that holds pico/ (default: CROWD_KERAS_DATA or the cache)")
    p.add_argument("--epochs", type=int, default=None,
                   help="most training epochs of each tagger, stopped early on the dev loss "
                        "(default: 15, 2 with --quick)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--verbose", action="store_true",
                   help="show TensorFlow's start-up messages")
    p.add_argument("--arch", choices=("lstm", "conv"), default="lstm",
                   help="the tagger: a BiLSTM or two 1-D convolutions (default: lstm)")
    p.add_argument("--quick", action="store_true", help="a slice of PICO, 2 epochs")
    args = p.parse_args(argv)
    epochs = args.epochs if args.epochs is not None else 2 if args.quick else 15
    if epochs < 1:
        p.error(f"--epochs must be at least 1, got {epochs}")
    if not 0 <= args.seed < 2 ** 32:   # else a traceback from the seeding, after the data loaded
        p.error(f"--seed must be an integer from 0 to {2 ** 32 - 1}, got {args.seed}")

    try:
        d = load(args.data, quick=args.quick)
    except CrowdDataError as exc:   # a --data folder without PICO: one line, not a traceback
        p.error(str(exc))
    except DownloadError as exc:   # not on disk and not downloadable (offline, say): no usage
        p.exit(1, f"{p.prog}: error: {exc}\n")
    seq, docs = d["seq"], d["docs"]
    print(f"PICO: {len(docs['train'])} train / {len(docs['dev'])} dev / "
          f"{len(docs['acl17-test'])} test abstracts, {len(seq.annotator_ids)} workers, "
          f"vocabulary {d['vocab'].size}; spans: {seq.summary}")
    scores = {}
    for kind in ("crowd", "mv"):
        tagger, info = train_tagger(d, kind, args.seed, epochs, arch=args.arch)
        probs = predict_tokens(tagger, d, ("acl17-test",))
        test = np.isin(seq.tokens.doc, docs["acl17-test"])
        tags = np.where(test, np.argmax(np.nan_to_num(probs), axis=1), 0)
        spans = seq.decode(tags, scores=np.nanmax(np.nan_to_num(probs), axis=1))
        P, R, F = gold_scores(d, tags)
        scores[kind] = F
        name = "crowd layer" if kind == "crowd" else "majority-vote tags"
        trained = (f"tagger trained on {name}: {info['epochs']} epochs (best "
                   f"{info['best_epoch']}, {info['seconds']:.0f} s)")
        if len(spans) == 0:  # precision and F1 of no span are undefined, not 0
            quick = f", as expected of --quick: {epochs} epochs on a slice" if args.quick else ""
            print(f"{trained}; it predicts no span on the test abstracts (every token O{quick}), "
                  f"so there is no precision or F1 to report")
            scores[kind] = float("nan")
            continue
        print(f"{trained}; {len(spans)} spans predicted on the test abstracts; "
              f"gold half token P {P:.3f} R {R:.3f} F1 {F:.3f}")
        if kind == "crowd":
            print(spans.head(3)[["doc", "start", "end", "text", "score"]].to_string(index=False))
    return scores


if __name__ == "__main__":
    main()
