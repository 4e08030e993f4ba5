"""A classifier's class probabilities of the annotated items, checked and aligned.

``fit(annotations, pred_probs=...)`` of the EM-protocol label models reads them through
:func:`check_pred_probs`: an (I, K) array in ``annotations.item_ids`` order, or a frame
indexed by item id (aligned by id; columns the classes, or K columns in class-code order).
Out-of-fold probabilities (:func:`crowd_keras.features.out_of_fold`) are the ones to pass: a
classifier's probabilities on its own training items agree with their labels too well.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..codes import as_matrix, numeric_matrix
from ..errors import CrowdDataError

__all__ = ["check_pred_probs", "ROW_SUM_TOLERANCE"]

#: how far a row's sum may be from 1 (float32 soft-max outputs are within it)
ROW_SUM_TOLERANCE = 1e-3


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (messages show ``3``, not
    ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _show(values: Any, n: int = 5) -> str:
    values = [_plain(v) for v in values]
    more = f" and {len(values) - n} more" if len(values) > n else ""
    return ", ".join(repr(v) for v in values[:n]) + more


def _align_frame(frame: pd.DataFrame, ann: Annotations) -> np.ndarray:
    """The frame's rows in ``ann.item_ids`` order and its columns in class-code order."""
    if frame.index.has_duplicates:
        dup = frame.index[frame.index.duplicated()].unique()
        raise CrowdDataError(f"pred_probs: item ids repeated in the frame's index: {_show(dup)}")
    pos = frame.index.get_indexer(ann.item_ids)
    if (pos < 0).any():
        missing = ann.item_ids[pos < 0]
        raise CrowdDataError(f"pred_probs: no row for {len(missing)} item(s) of the annotations: "
                             f"{_show(missing)}")
    if len(frame) > ann.n_items:
        extra = frame.index[~frame.index.isin(ann.item_ids)]
        raise CrowdDataError(f"pred_probs: {len(extra)} row(s) for items that are not in the "
                             f"annotations: {_show(extra)}")
    columns = list(frame.columns)
    classes = list(ann.classes)
    if len(columns) != ann.n_classes:
        raise CrowdDataError(f"pred_probs: {len(columns)} columns, expected one per class "
                             f"({ann.n_classes}: {_show(classes, 10)})")
    named = pd.Index(classes).get_indexer(frame.columns)
    if (named >= 0).all() and len(set(named.tolist())) == len(classes):
        frame = frame[classes]
    elif (named >= 0).any() or frame.columns.has_duplicates:
        # some columns name classes and others do not: reading them by position would put a
        # class's probabilities under another class
        odd = [c for c, n in zip(columns, named) if n < 0] or \
            frame.columns[frame.columns.duplicated()].unique().tolist()
        raise CrowdDataError(f"pred_probs: columns {_show(columns, 10)} name some of the classes "
                             f"{_show(classes, 10)} but not each once (e.g. {_show(odd, 3)}): "
                             "name every class once, or give K columns in class-code order "
                             "that name no class")
    return numeric_matrix(frame.to_numpy(), "pred_probs", "probabilities (numbers)"
                          ).astype(np.float64)[pos]


def check_pred_probs(pred_probs: Any, ann: Annotations) -> np.ndarray:
    """(I, K) float64 class probabilities aligned with ``ann.item_ids``, rows renormalised.

    Args:
        pred_probs: (I, K) array-like in ``ann.item_ids`` order, or a ``pandas.DataFrame``
            indexed by item id (every item once, no other item; columns ``ann.classes`` in
            any order, or K columns in class-code order).
        ann: the annotations being fitted.

    Raises:
        CrowdDataError: wrong shape, missing or extra items, NaN or infinite values,
        negative values or rows whose sum is not 1 (within :data:`ROW_SUM_TOLERANCE`);
        the message names the first offending item.
    """
    if isinstance(pred_probs, pd.DataFrame):
        p = _align_frame(pred_probs, ann)
    elif isinstance(pred_probs, (dict, pd.Series, set, str, bytes)):
        raise CrowdDataError(f"pred_probs must be an (items, classes) array in the annotations' "
                             f"item order, or a pandas DataFrame indexed by item id; got a "
                             f"{type(pred_probs).__name__}" +
                             (" (a dict of rows: pandas.DataFrame.from_dict(d, orient='index'))"
                              if isinstance(pred_probs, dict) else ""))
    else:
        p = as_matrix(pred_probs, "pred_probs", "a probability")
        if p.ndim == 2:
            p = numeric_matrix(p, "pred_probs", "probabilities (numbers)")
        p = p.astype(np.float64)
        if p.shape != (ann.n_items, ann.n_classes):
            raise CrowdDataError(f"pred_probs must have shape (items, classes) = "
                                 f"{(ann.n_items, ann.n_classes)} in the annotations' item "
                                 f"order, got {p.shape}")
    checks = ((~np.isfinite(p)).any(axis=1), "is NaN or infinite"),  \
        ((p < 0).any(axis=1), "is negative")
    for bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise CrowdDataError(f"pred_probs of item {_plain(ann.item_ids[i])!r} (row {i}) "
                                 f"{what}: {p[i].tolist()}")
    sums = p.sum(axis=1)
    bad = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"pred_probs of item {_plain(ann.item_ids[i])!r} (row {i}) sum to "
                             f"{sums[i]:.6g}, not 1 ({int(bad.sum())} such rows): pass "
                             "probabilities (soft-max outputs), not scores")
    return p / sums[:, None]
