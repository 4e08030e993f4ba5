"""Per-annotator quality against an aggregate, and token-level scores of spans.

Spans are compared as token ranges with their label: an annotator's span matches an aggregate
span when both cover exactly the same tokens of the same document with the same label (after
tagging, so offsets that differ inside a token do not matter). Token scores count tokens that
carry the same span label. All counts are ``bincount``\\ s over the flat annotations.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from ..aggregation.base import without_evidence
from ..codes import show
from ..errors import CrowdDataError
from .annotations import SequenceAnnotations
from .spans import tag_labels, tags_to_spans, token_coverage
from .tokens import check_offsets

__all__ = ["annotator_quality", "token_confusions", "token_prf", "spans_token_mask"]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.full(len(num), np.nan), where=den > 0)


def _f1(hits: np.ndarray, marked: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``2·hits / (marked + reference)``: 0 when precision and recall are both 0 (the ratio
    of the harmonic mean of P and R was 0/0 there), NaN only with nothing on either side."""
    return _ratio(2 * hits, marked + reference)


def annotator_quality(seq: SequenceAnnotations, tags: np.ndarray,
                      confusion: Optional[np.ndarray] = None,
                      class_prior: Optional[np.ndarray] = None) -> pd.DataFrame:
    """Per annotator, against the aggregate ``tags`` (T,).

    Returns a frame with ``annotator, n_documents, n_spans`` (after tagging), ``accuracy``
    (``Σ_k ρ_k π_kk`` of the model's token confusion, when given; NaN for an annotator
    without documents: its matrix is the prior's), ``span_precision``
    (share of the annotator's spans that are aggregate spans), ``span_recall`` (share of the
    aggregate spans in the documents the annotator saw that the annotator marked),
    ``span_f1``, and ``token_precision / token_recall / token_f1`` (tokens with the same span
    label). NaN where a ratio has no denominator (an F1 is 0 when either side has spans and
    none match, and NaN only when neither has any).
    """
    tags = seq.tag_codes(tags)
    n_ann = len(seq.annotator_ids)
    n_lab = max(len(seq.labels), 1)
    T = seq.n_tokens
    first = seq.tokens.position == 0
    g_begin, g_last, g_label = tags_to_spans(tags, first, seq.scheme)
    agg_key = (g_begin * (T + 1) + g_last) * n_lab + g_label
    a_assign, a_begin, a_last, a_label = seq.annotation_spans()
    hit = np.isin((a_begin * (T + 1) + a_last) * n_lab + a_label, agg_key)
    who = seq.assign_annotator[a_assign]
    n_spans = np.bincount(who, minlength=n_ann)
    n_hit = np.bincount(who, weights=hit, minlength=n_ann)
    agg_per_doc = np.bincount(seq.tokens.doc[g_begin], minlength=seq.n_docs)
    n_agg = np.bincount(seq.assign_annotator, weights=agg_per_doc[seq.assign_doc],
                        minlength=n_ann)
    span_p, span_r = _ratio(n_hit, n_spans), _ratio(n_hit, n_agg)

    obs_who = seq.assign_annotator[seq.obs_assign]
    mine = tag_labels(seq.obs_tag, seq.scheme)
    theirs = tag_labels(tags[seq.obs_token], seq.scheme)
    tp = np.bincount(obs_who, weights=(mine >= 0) & (mine == theirs), minlength=n_ann)
    n_mine = np.bincount(obs_who, weights=mine >= 0, minlength=n_ann)
    n_theirs = np.bincount(obs_who, weights=theirs >= 0, minlength=n_ann)
    tok_p, tok_r = _ratio(tp, n_mine), _ratio(tp, n_theirs)
    n_docs = np.bincount(seq.assign_annotator, minlength=n_ann)
    out = pd.DataFrame({"annotator": seq.annotator_ids, "n_documents": n_docs,
                        "n_spans": n_spans})
    if confusion is not None and class_prior is not None:
        out["accuracy"] = without_evidence(np.einsum("k,akk->a", class_prior, confusion),
                                           n_docs)
    out["span_precision"], out["span_recall"] = span_p, span_r
    out["span_f1"] = _f1(n_hit, n_spans, n_agg)
    out["token_precision"], out["token_recall"] = tok_p, tok_r
    out["token_f1"] = _f1(tp, n_mine, n_theirs)
    return out


def token_confusions(seq: SequenceAnnotations, tags: np.ndarray) -> np.ndarray:
    """(W, K, K) counts: annotator ``w`` gave tag ``l`` (column) where the aggregate ``tags``
    say ``t`` (row), over the tokens of the documents ``w`` saw."""
    k = seq.n_tags
    n_ann = len(seq.annotator_ids)
    who = seq.assign_annotator[seq.obs_assign]
    cell = (who * k + seq.tag_codes(tags)[seq.obs_token]) * k + seq.obs_tag
    return np.bincount(cell, minlength=n_ann * k * k).reshape(n_ann, k, k)


def token_prf(pred: np.ndarray, gold: np.ndarray) -> tuple[float, float, float]:
    """Precision, recall and F1 of the positive tokens of boolean ``pred`` against ``gold``."""
    pred, gold = np.asarray(pred, bool), np.asarray(gold, bool)
    if pred.shape != gold.shape:
        raise ValueError(f"pred and gold must be masks of the same tokens, got shapes "
                         f"{pred.shape} and {gold.shape}")
    tp = float((pred & gold).sum())
    p = tp / max(int(pred.sum()), 1)
    r = tp / max(int(gold.sum()), 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def spans_token_mask(seq: SequenceAnnotations, spans: Any) -> np.ndarray:
    """(T,) bool: tokens of ``seq`` overlapped by ``spans`` (the PICO metric's rule).

    ``spans``: a frame with ``doc, start, end`` (doc ids of ``seq``) or a mapping
    ``{doc_id: [[start, end], ...]}``.
    """
    if isinstance(spans, Mapping):
        odd = [(d, m) for d, marks in spans.items() for m in marks
               if isinstance(m, (str, bytes)) or np.ndim(m) != 1 or len(m) not in (2, 3)]
        if odd:
            raise CrowdDataError(f"document {show(odd[0][0])}: a span is [start, end] or "
                                 f"[start, end, label], got {show(odd[0][1])}")
        rows = [(d, s[0], s[1]) for d, marks in spans.items() for s in marks]
        spans = pd.DataFrame(rows, columns=["doc", "start", "end"])
    if not isinstance(spans, pd.DataFrame):
        raise CrowdDataError(f"spans must be a frame with columns doc, start, end or a mapping "
                             f"{{doc_id: [[start, end], ...]}}, got {type(spans).__name__}")
    missing = [c for c in ("doc", "start", "end") if c not in spans.columns]
    if missing:
        raise CrowdDataError(f"spans frame has no column(s) {missing}; columns are "
                             f"{list(spans.columns)}")
    if len(spans) == 0:
        return np.zeros(seq.n_tokens, bool)
    rows = spans.index.to_numpy()
    # NaN, reversed or fractional offsets would cover no token or the wrong ones, silently
    start, end = check_offsets(spans["start"], spans["end"], lambda r: f"span row {rows[r]}")
    doc = pd.Index(seq.doc_ids).get_indexer(spans["doc"])
    if (doc < 0).any():
        r = int(np.argmax(doc < 0))
        raise CrowdDataError(f"span row {rows[r]}: document {show(spans['doc'].iloc[r])} is not "
                             "in the sequences")
    return token_coverage(seq.tokens, doc, start, end)
