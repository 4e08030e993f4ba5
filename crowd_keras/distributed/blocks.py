"""Blocks of items: what one partition of annotations becomes on the worker that holds it.

:class:`Block` and :class:`Summary` are the EM-step protocol's
(:mod:`crowd_keras.aggregation.em`, re-exported here): the vote incidence of a block of items
and the sums over items that fix a model's settings. This module builds blocks from a
partition of a long frame or from rows of a label matrix. Numpy and pandas only; the Dask
side is :mod:`crowd_keras.distributed.engine`.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..aggregation.em import Block, Summary, add
from ..annotations import Annotations
from ..errors import CrowdDataError

__all__ = ["Block", "Summary", "frame_block", "matrix_block", "add"]


def frame_block(df: pd.DataFrame, item: str, annotator: str, label: str, classes: Sequence,
                annotator_ids: Sequence, int_labels: bool, row: Optional[str] = None,
                duplicates: str = "error") -> Block:
    """The block of one partition of a long frame holding every annotation of its items.

    Coded by :meth:`Annotations.from_frame` with the global ``classes`` and ``annotator_ids``
    (so every check and error of the in-memory reader applies); items are the partition's
    distinct ids, sorted. ``int_labels``: labels are numbers (booleans become 0/1 codes).
    ``row``: the column holding each row's number in the whole frame, which messages name
    (a failing partition is read again in frame order, so the message does not depend on
    the order a shuffle left its rows in). ``duplicates``: as in ``Annotations.from_frame``;
    ``"last"``/``"first"`` keep the last/first of a repeated pair in frame order.
    """
    if item not in df.columns and df.index.name == item:
        df = df.reset_index()
    if len(df) == 0:
        n_cols = len(annotator_ids) * len(classes)
        return Block(np.asarray(df[item].to_numpy()[:0]),
                     sp.csr_matrix((0, n_cols), dtype=np.float64))
    if int_labels and df[label].dtype.kind == "b":
        df = df.assign(**{label: df[label].astype(np.int64)})
    if duplicates != "error" and row is not None:   # "last" of the frame, not of the shuffle
        df = df.sort_values(row, kind="stable")

    def build(df: pd.DataFrame) -> Annotations:
        return Annotations.from_frame(df, item=item, annotator=annotator, label=label,
                                      classes=classes, annotator_ids=annotator_ids,
                                      duplicates=duplicates,
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
