"""Blocks of items: what one partition of annotations becomes on the worker that holds it.

A :class:`Block` is the vote incidence of a block of items (``Annotations.vote_incidence()``:
items × (annotator, label), annotator ids and classes coded the same in every block) and the
items' ids: about 12 bytes per annotation and 12 per item. Every EM step of a partitioned fit
is a product with it or its transpose. :class:`Summary` holds the sums over items that fix a
model's settings before EM (vote counts per annotator and class, numbers of items and
annotations). Numpy and pandas only; the Dask side is :mod:`crowd_keras.distributed.engine`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import normalize_rows, pair_index

__all__ = ["Block", "Summary", "frame_block", "matrix_block", "add"]


@dataclass
class Block:
    """The annotations of a block of items, as the EM steps use them.

    Attributes:
        item_ids: (I,) the items' ids (rows of ``L`` for a label matrix).
        X: (I, A·K) CSR vote incidence: ``X[i, a·K + l] = 1`` when annotator a said l on item i.
    """

    item_ids: np.ndarray
    X: sp.csr_matrix

    @classmethod
    def from_annotations(cls, ann: Annotations, item_ids: Optional[np.ndarray] = None) -> "Block":
        return cls(np.asarray(ann.item_ids if item_ids is None else item_ids), ann.vote_incidence())

    @property
    def XT(self) -> Any:
        """The transposed incidence (a view: no copy)."""
        return self.X.T

    def select(self, keep: np.ndarray) -> "Block":
        """The annotations where ``keep`` (one per annotation, in storage order: by item, then
        annotator) is true; all items stay (as ``Annotations.select``)."""
        X, per_item = self.X, self.annotations_per_item()
        kept = np.bincount(np.repeat(np.arange(len(per_item)), per_item)[keep],
                           minlength=len(per_item))
        indptr = np.concatenate([[0], np.cumsum(kept)])
        return Block(self.item_ids, sp.csr_matrix((X.data[keep], X.indices[keep], indptr),
                                                  shape=X.shape))

    def subset(self, rows: np.ndarray) -> "Block":
        """The items where ``rows`` (a boolean mask over items) is true, in order (as
        ``Annotations.subset``)."""
        return Block(self.item_ids[rows], self.X[rows])

    def annotations_per_item(self) -> np.ndarray:
        """Annotations of each item (as ``Annotations.annotations_per_item``)."""
        return np.diff(self.X.indptr)

    def label_counts(self, k: int) -> np.ndarray:
        """(I, K) float vote counts per item and class (as ``Annotations.label_counts``)."""
        rows = np.repeat(np.arange(self.X.shape[0]), self.annotations_per_item())
        return np.bincount(pair_index(rows, self.X.indices % k, k),
                           minlength=self.X.shape[0] * k).reshape(-1, k).astype(np.float64)

    def summary(self, k: int) -> "Summary":
        per_item = self.annotations_per_item().astype(np.int64)
        votes = np.bincount(self.X.indices, minlength=self.X.shape[1]).reshape(-1, k)
        return Summary(len(per_item), int(per_item.sum()), int((per_item ** 2).sum()), votes)


@dataclass
class Summary:
    """Sums over all items, gathered before EM.

    Attributes:
        n_items, n_annotations: counts. sum_squared_votes: Σ_i (annotations of item i)².
        votes: (A, K) int64 votes of each annotator per class
        (``Annotations.annotator_label_counts()``).
    """

    n_items: int
    n_annotations: int
    sum_squared_votes: int
    votes: np.ndarray

    def __add__(self, other: "Summary") -> "Summary":
        return Summary(self.n_items + other.n_items, self.n_annotations + other.n_annotations,
                       self.sum_squared_votes + other.sum_squared_votes, self.votes + other.votes)

    @property
    def row_variance(self) -> float:
        """Variance of the number of annotations per item."""
        n = max(self.n_items, 1)
        return self.sum_squared_votes / n - (self.n_annotations / n) ** 2

    @property
    def vote_shares(self) -> np.ndarray:
        """(K,) frequency of each class among all votes (uniform without votes)."""
        return normalize_rows(self.votes.sum(axis=0).astype(np.float64))


def add(*parts: Any) -> Any:
    """Element-wise sum of statistics: arrays, numbers, summaries or tuples of them."""
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(add(*column) for column in zip(*parts))
    total = first
    for part in parts[1:]:
        total = total + part
    return total


def frame_block(df: pd.DataFrame, item: str, annotator: str, label: str, classes: Sequence,
                annotator_ids: Sequence, int_labels: bool, row: Optional[str] = None) -> Block:
    """The block of one partition of a long frame holding every annotation of its items.

    Coded by :meth:`Annotations.from_frame` with the global ``classes`` and ``annotator_ids``
    (so every check and error of the in-memory reader applies); items are the partition's
    distinct ids, sorted. ``int_labels``: labels are numbers (booleans become 0/1 codes).
    ``row``: the column holding each row's number in the whole frame, which messages name
    (a failing partition is read again in frame order, so the message does not depend on
    the order a shuffle left its rows in).
    """
    if item not in df.columns and df.index.name == item:
        df = df.reset_index()
    if len(df) == 0:
        n_cols = len(annotator_ids) * len(classes)
        return Block(np.asarray(df[item].to_numpy()[:0]),
                     sp.csr_matrix((0, n_cols), dtype=np.float64))
    if int_labels and df[label].dtype.kind == "b":
        df = df.assign(**{label: df[label].astype(np.int64)})
    def build(df: pd.DataFrame) -> Annotations:
        return Annotations.from_frame(df, item=item, annotator=annotator, label=label,
                                      classes=classes, annotator_ids=annotator_ids,
                                      row_numbers=None if row is None else df[row].to_numpy())

    try:
        ann = build(df)
    except CrowdDataError:
        if row is None:
            raise
        ann = build(df.sort_values(row, kind="stable"))
    return Block.from_annotations(ann)


def matrix_block(chunk: np.ndarray, k: int, start: int,
                 check: Optional[Callable[[np.ndarray, int], np.ndarray]] = None) -> Block:
    """The block of rows ``start, start + 1, ...`` of a label matrix (-1 = abstain).

    ``check(chunk, start)`` validates the chunk (and words the error) before it is read by
    :meth:`Annotations.from_label_matrix`.
    """
    if check is not None:
        chunk = check(chunk, start)
    ann = Annotations.from_label_matrix(chunk, cardinality=k)
    return Block.from_annotations(ann, np.arange(start, start + chunk.shape[0]))
