"""Span agreement: pairwise F1 between annotators with exact, overlap and token-proportional
matching, per label, and where their boundaries disagree.

Spans are an annotation's tagged regions as token ranges
(:meth:`SequenceAnnotations.annotation_spans`: a span that starts or ends inside a token
covers it; one annotator's overlapping spans of a label are one region). For every span
``s`` of label ``l`` by annotator ``x`` on a document and every *other* annotator ``y`` who
annotated that document, ``s`` is matched to ``y``:

* ``exact``: ``y`` has a span of label ``l`` with the same first and last token;
* ``overlap``: ``y`` tagged at least one token of ``s`` with ``l``;
* ``token``: the share of the tokens of ``s`` that ``y`` tagged ``l`` (proportional credit,
  Johansson & Moschitti 2010, "Syntactic and semantic structure for opinion expression
  detection", §5: ``c(s, ŝ) = |s ∩ ŝ| / |s|``).

The precision of ``x`` against ``y`` is the mean match of ``x``'s spans; the recall is the
mean match of ``y``'s spans against ``x``; ``F1 = 2PR / (P + R)``. Pooled over all ordered
pairs the precision and the recall are the same number, the mean match over all (span,
other annotator) pairs, which is the pooled F1 (for exact matching it is Hripcsak &
Rothschild's 2005 positive specific agreement ``2a / (2a + b + c)``). Documents where neither
annotator marked a span give no pair (they agree, on nothing).

Boundary disagreements of the (span, other annotator) pairs are counted per label: exact,
same start but another end, same end but another start, both boundaries differ (overlapping
spans), no overlap. All vectorised over (span, other annotator) pairs; one pass over the
flat tag array per label.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import CrowdDataError
from ..sequences.annotations import SequenceAnnotations
from ..sequences.spans import tag_labels

__all__ = ["SPAN_MATCHINGS", "span_agreement", "span_pairwise_f1", "span_pairs"]

SPAN_MATCHINGS = ("exact", "overlap", "token")
BOUNDARY_KINDS = ("exact", "end_differs", "start_differs", "both_differ", "no_overlap")


def _check(seq: Any) -> SequenceAnnotations:
    if not isinstance(seq, SequenceAnnotations):
        raise TypeError(f"span agreement takes a SequenceAnnotations, got {type(seq).__name__}")
    if len(np.unique(seq.assign_annotator)) < 2:
        raise CrowdDataError(f"span agreement needs at least two annotators, got "
                             f"{len(np.unique(seq.assign_annotator))}")
    return seq


def span_pairs(sequences: Any) -> pd.DataFrame:
    """One row per (span, other annotator of its document) pair: the raw material of
    :func:`span_agreement` and :func:`span_pairwise_f1`.

    Returns:
        DataFrame with codes ``annotator`` (the span's), ``other``, ``doc``, ``label``,
        ``length`` (tokens), ``covered`` (tokens of the span ``other`` tagged with its label),
        ``exact``, ``same_start``, ``same_end`` (bool).
    """
    seq = _check(sequences)
    assign, first, last, label = seq.annotation_spans()
    doc = seq.assign_doc[assign]
    # assignments are sorted by document: those of document d are doc_first[d]:doc_first[d+1]
    per_doc = np.bincount(seq.assign_doc, minlength=seq.n_docs)
    doc_first = np.concatenate([[0], np.cumsum(per_doc)])
    reps = per_doc[doc]
    owner = np.repeat(np.arange(len(assign)), reps)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(reps) - reps, reps)
    other = doc_first[doc][owner] + within
    keep = other != assign[owner]
    owner, other = owner[keep], other[keep]
    s_first, s_last, s_label = first[owner], last[owner], label[owner]
    length = s_last - s_first + 1

    # the flat tag array: assignment x's tokens are base[x] : base[x] + len(doc x)
    lens = seq.tokens.lengths[seq.assign_doc]
    base = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    flat_lab = tag_labels(seq.obs_tag, seq.scheme)
    doc_start = seq.tokens.doc_ptr[doc[owner]]
    lo = base[other] + (s_first - doc_start)
    hi = base[other] + (s_last - doc_start) + 1
    covered = np.zeros(len(owner), np.int64)
    for lab in np.unique(s_label):      # one cumulative sum per span label
        sel = s_label == lab
        cum = np.concatenate([[0], np.cumsum(flat_lab == lab, dtype=np.int64)])
        covered[sel] = cum[hi[sel]] - cum[lo[sel]]

    # the other annotator's spans, keyed by (assignment, first token, label) and (…, last, …)
    n_lab = max(len(seq.labels), 1)
    t = seq.n_tokens + 1

    def key(x: np.ndarray, tok: np.ndarray, lab: np.ndarray) -> np.ndarray:
        return (x.astype(np.int64) * t + tok) * n_lab + lab

    start_keys = key(assign, first, label)
    order = np.argsort(start_keys, kind="stable")
    sorted_keys = start_keys[order]
    query = key(other, s_first, s_label)
    pos = np.minimum(np.searchsorted(sorted_keys, query), max(len(sorted_keys) - 1, 0))
    same_start = (sorted_keys[pos] == query) if len(sorted_keys) else np.zeros(len(query), bool)
    exact = same_start & (last[order][pos] == s_last) if len(sorted_keys) else same_start
    same_end = np.isin(key(other, s_last, s_label), key(assign, last, label))
    return pd.DataFrame({"annotator": seq.assign_annotator[assign[owner]],
                         "other": seq.assign_annotator[other], "doc": doc[owner],
                         "label": s_label, "length": length, "covered": covered,
                         "exact": exact, "same_start": same_start, "same_end": same_end})


def _matches(pairs: pd.DataFrame) -> dict:
    return {"exact": pairs["exact"].to_numpy(np.float64),
            "overlap": (pairs["covered"].to_numpy() > 0).astype(np.float64),
            "token": pairs["covered"].to_numpy(np.float64) / pairs["length"].to_numpy()}


def span_agreement(sequences: Any, pairs: Any = None) -> pd.DataFrame:
    """Pooled pairwise span F1 per label (and ``"(all)"``) under the three matchings, and the
    boundary-disagreement counts (see the module docstring).

    Returns:
        DataFrame, one row per span label then ``"(all)"``: ``label, n_spans`` (spans after
        tagging), ``n_pairs`` ((span, other annotator) pairs), ``f1_exact, f1_overlap,
        f1_token`` and the counts ``exact, end_differs, start_differs, both_differ,
        no_overlap`` (summing to ``n_pairs``).
    """
    seq = _check(sequences)
    pairs = span_pairs(seq) if pairs is None else pairs
    _, _, _, span_label = seq.annotation_spans()
    n_lab = len(seq.labels)
    lab = pairs["label"].to_numpy()
    match = _matches(pairs)
    exact = pairs["exact"].to_numpy()
    start, end = pairs["same_start"].to_numpy(), pairs["same_end"].to_numpy()
    overlap = pairs["covered"].to_numpy() > 0
    kinds = {"exact": exact, "end_differs": start & ~exact, "start_differs": end & ~start & ~exact,
             "both_differ": overlap & ~start & ~end, "no_overlap": ~overlap}

    def row(sel: np.ndarray, name: Any, n_spans: int) -> dict:
        n = int(sel.sum())
        out = {"label": name, "n_spans": n_spans, "n_pairs": n}
        for m in SPAN_MATCHINGS:
            out[f"f1_{m}"] = float(match[m][sel].mean()) if n else float("nan")
        for kname, flag in kinds.items():
            out[kname] = int((flag & sel).sum())
        return out

    rows = [row(lab == k, seq.labels[k], int((span_label == k).sum())) for k in range(n_lab)]
    rows.append(row(np.ones(len(lab), bool), "(all)", len(span_label)))
    return pd.DataFrame(rows)


def span_pairwise_f1(sequences: Any, matching: str = "exact", pairs: Any = None) -> pd.DataFrame:
    """Span F1 of every pair of annotators who annotated a common document.

    Args:
        sequences: a :class:`~crowd_keras.sequences.annotations.SequenceAnnotations`.
        matching: ``"exact"``, ``"overlap"`` or ``"token"`` (see the module docstring).
        pairs: the :func:`span_pairs` frame of ``sequences`` when already computed.

    Returns:
        DataFrame, one row per pair ``a < b`` (codes in ``annotator_ids`` order) with at least
        one span between them: ``annotator_a, annotator_b, n_spans_a, n_spans_b`` (their spans
        on the documents both annotated), ``precision`` (of ``a`` against ``b``), ``recall``,
        ``f1``.
    """
    if matching not in SPAN_MATCHINGS:
        raise ValueError(f"matching must be one of {SPAN_MATCHINGS}, got {matching!r}")
    seq = _check(sequences)
    pairs = span_pairs(seq) if pairs is None else pairs
    w = len(seq.annotator_ids)
    x, y = pairs["annotator"].to_numpy(), pairs["other"].to_numpy()
    match = _matches(pairs)[matching]
    keys, inverse = np.unique(x * w + y, return_inverse=True)
    n = np.bincount(inverse, minlength=len(keys)).astype(np.float64)
    hit = np.bincount(inverse, weights=match, minlength=len(keys))
    a, b = keys // w, keys % w
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pair_keys, pair_inv = np.unique(lo * w + hi, return_inverse=True)
    forward = a < b
    stats = np.zeros((len(pair_keys), 4))      # n_a, hit_a, n_b, hit_b
    np.add.at(stats, (pair_inv[forward], 0), n[forward])
    np.add.at(stats, (pair_inv[forward], 1), hit[forward])
    np.add.at(stats, (pair_inv[~forward], 2), n[~forward])
    np.add.at(stats, (pair_inv[~forward], 3), hit[~forward])
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats[:, 1] / stats[:, 0]
        r = stats[:, 3] / stats[:, 2]
        # one side without spans on the shared documents: nothing of the other's matched
        f1 = np.where((stats[:, 0] == 0) | (stats[:, 2] == 0) | (p + r == 0), 0.0,
                      2 * p * r / (p + r))
    ids = seq.annotator_ids
    return pd.DataFrame({"annotator_a": ids[pair_keys // w], "annotator_b": ids[pair_keys % w],
                         "n_spans_a": stats[:, 0].astype(np.int64),
                         "n_spans_b": stats[:, 2].astype(np.int64),
                         "precision": p, "recall": r, "f1": f1})
