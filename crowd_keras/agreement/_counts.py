"""What every agreement statistic starts from: the annotations as sparse count matrices.

* ``C`` (items × classes): how many annotators gave item ``i`` class ``k``;
* ``Y`` (items × annotators): 0/1, annotator ``a`` labelled item ``i``;
* ``Z`` (items·classes × annotators): 0/1, annotator ``a`` gave item ``i`` class ``k``
  (row ``i·K + k``), so ``Z.T @ Z`` counts, per pair of annotators, the items they agree on.

All built from the code arrays of :class:`~crowd_keras.Annotations` without a Python loop;
memory is O(annotations) for the inputs and O(overlapping pairs) for the pairwise products.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..annotations import Annotations
from ..codes import show
from ..errors import CrowdDataError
from ..sequences.annotations import SequenceAnnotations

__all__ = ["as_annotations", "check_agreement_input", "label_count_matrix", "presence_matrix",
           "agreement_matrix", "class_values"]


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


def label_count_matrix(ann: Annotations) -> sp.csr_matrix:
    """(n_items, n_classes) float64 CSR: votes per item and class."""
    k = ann.n_classes
    if ann.n_items * k <= max(8 * ann.n_annotations, 1 << 20):   # small enough: the cached bincount
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
    """(n_classes,) float64 numeric value of each class, for the interval level; a
    :class:`CrowdDataError` naming the first class that is not a number."""
    values = []
    for c in ann.classes:
        item = c.item() if hasattr(c, "item") else c
        if isinstance(item, bool) or not isinstance(item, (int, float)) or item != item:
            raise CrowdDataError(f"level={level!r} needs numeric classes (the distance between "
                                 f"two labels is their difference), but class {show(c)} is not a "
                                 f"number; classes are {[show(x) for x in ann.classes[:10]]}; use "
                                 "level='ordinal' (class order) or 'nominal'")
        values.append(float(item))
    return np.asarray(values, dtype=np.float64)
