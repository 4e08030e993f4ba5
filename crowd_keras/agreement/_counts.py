"""What every agreement statistic starts from: the annotations as sparse count matrices.

* ``C`` (items × classes): how many annotators gave item ``i`` class ``k``;
* ``Y`` (items × annotators): 0/1, annotator ``a`` labelled item ``i``;
* ``Z`` (items·classes × annotators): 0/1, annotator ``a`` gave item ``i`` class ``k``
  (row ``i·K + k``), so ``Z.T @ Z`` counts, per pair of annotators, the items they agree on.

All built from the code arrays of :class:`~crowd_keras.Annotations` without a Python loop;
memory is O(annotations) for the inputs and O(overlapping pairs) for the pairwise products.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..annotations import Annotations
from ..codes import show, spelled_number
from ..errors import Argument, CrowdDataError, Message
from ..sequences.annotations import SequenceAnnotations

__all__ = ["as_annotations", "check_agreement_input", "label_count_matrix", "presence_matrix",
           "agreement_matrix", "class_values", "dense_counts_fit", "own_label_counts",
           "values_at"]


def as_annotations(data: Any) -> Annotations:
    """``data`` as an :class:`Annotations`: itself, or the token-level annotations of a
    :class:`SequenceAnnotations` (items = tokens, classes = tags)."""
    if isinstance(data, Annotations):
        return data
    if isinstance(data, SequenceAnnotations):
        return data.annotations
    raise TypeError(f"agreement statistics take Annotations or SequenceAnnotations, got "
                    f"{type(data).__name__}")


def check_agreement_input(ann: Annotations) -> np.ndarray:
    """(n_items,) annotations per item, after checking there is something to agree on:
    at least two annotators with annotations and one item labelled by two of them."""
    active = int((ann.annotations_per_annotator() > 0).sum())
    if active < 2:
        who = (f" (only annotator {show(ann.annotator_ids[int(np.argmax(ann.annotations_per_annotator()))])})"
               if active == 1 else "")
        raise CrowdDataError(f"agreement needs at least two annotators with annotations, got "
                             f"{active}{who}")
    m = ann.annotations_per_item()
    if not (m >= 2).any():
        raise CrowdDataError(f"no item has two annotations ({ann.n_items} items, "
                             f"{ann.n_annotations} annotations): agreement is undefined")
    return m


def dense_counts_fit(ann: Annotations) -> bool:
    """Whether the dense items × classes counts (``Annotations.label_counts``, cached) are
    small next to the annotations themselves."""
    return ann.n_items * ann.n_classes <= max(8 * ann.n_annotations, 1 << 20)


def own_label_counts(ann: Annotations) -> np.ndarray:
    """(n_annotations,) ``n_{i, l}``: how many annotators gave the annotation's item its
    label (the annotation itself included)."""
    if dense_counts_fit(ann):
        return ann.label_counts()[ann.items, ann.labels]
    _, inverse, counts = np.unique(ann.items * ann.n_classes + ann.labels, return_inverse=True,
                                   return_counts=True)
    return counts[inverse].astype(np.float64)


def values_at(matrix: sp.spmatrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``matrix[rows, cols]`` (0 where absent) by a sorted search over the (row, column) keys:
    linear in the entries, where scipy's fancy indexing is not for millions of queries."""
    m = sp.csr_matrix(matrix)
    m.sum_duplicates()          # canonical: sorted indices, so the keys below are sorted
    n_cols = np.int64(m.shape[1])
    keys = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr)) * n_cols \
        + m.indices
    query = np.asarray(rows, np.int64) * n_cols + np.asarray(cols, np.int64)
    if not len(keys):
        return np.zeros(len(query))
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return np.where(keys[pos] == query, m.data[pos], 0.0)


def label_count_matrix(ann: Annotations) -> sp.csr_matrix:
    """(n_items, n_classes) float64 CSR: votes per item and class."""
    k = ann.n_classes
    if dense_counts_fit(ann):   # small enough: from the cached bincount
        return sp.csr_matrix(ann.label_counts())
    counts = sp.csr_matrix((np.ones(ann.n_annotations), (ann.items, ann.labels)),
                           shape=(ann.n_items, k))
    counts.sum_duplicates()
    return counts


def presence_matrix(ann: Annotations) -> sp.csr_matrix:
    """(n_items, n_annotators) float64 0/1 CSR: the annotator labelled the item."""
    return sp.csr_matrix((np.ones(ann.n_annotations), ann.annotators, ann.item_starts().copy()),
                         shape=(ann.n_items, ann.n_annotators))


def agreement_matrix(ann: Annotations) -> sp.csr_matrix:
    """(n_items · n_classes, n_annotators) 0/1 CSR, row ``item · K + label``."""
    rows = ann.items * ann.n_classes + ann.labels
    return sp.csr_matrix((np.ones(ann.n_annotations), (rows, ann.annotators)),
                         shape=(ann.n_items * ann.n_classes, ann.n_annotators))


def class_values(ann: Annotations, level: str) -> np.ndarray:
    """(n_classes,) float64 numeric value of each class (a text spelling a number counts as
    that number), for the interval and ratio levels; a :class:`CrowdDataError` naming the
    first class that is not a number (for ratio: or is negative, where
    ``(v_c - v_k) / (v_c + v_k)`` has no meaning)."""
    values = []
    for c in ann.classes:
        item = c.item() if hasattr(c, "item") else c
        item = spelled_number(item)
        # inf: every distance to it is inf, and alpha NaN ("one class"), silently
        if isinstance(item, bool) or not isinstance(item, (int, float)) or \
                not math.isfinite(item):
            raise CrowdDataError(Message(
                "{level} needs numeric classes (the distance between two labels is their "
                "difference{ratio}), but class {c} is not a finite number; classes are [{shown}]; "
                "use "
                "{ordinal} (class order) or {nominal}", level=Argument("level", level),
                ratio=" over their sum" if level == "ratio" else "",
                c=show(c), shown=", ".join(show(x) for x in ann.classes[:10]),
                ordinal=Argument("level", "ordinal"), nominal=Argument("level", "nominal")))
        if level == "ratio" and item < 0:
            raise CrowdDataError(Message(
                "{level} needs non-negative classes (the distance between two labels is their "
                "difference over their sum), but class {c} is negative; use {interval}",
                level=Argument("level", level), c=show(c),
                interval=Argument("level", "interval")))
        values.append(float(item))
    return np.asarray(values, dtype=np.float64)
