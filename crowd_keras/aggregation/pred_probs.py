"""A classifier's class probabilities of the annotated items, checked and aligned.

``fit(annotations, pred_probs=...)`` of the EM-protocol label models reads them through
:func:`check_pred_probs`: an (I, K) array in ``annotations.item_ids`` order, or a frame
indexed by item id (aligned by id; columns the classes, or K columns in class-code order).
Out-of-fold probabilities (:func:`crowd_keras.features.out_of_fold`) are the ones to pass: a
classifier's probabilities on its own training items agree with their labels too well.

The checks are also public one by one (:func:`class_columns`, :func:`check_rows` and the
errors for missing, extra and repeated items), so that a partitioned fit
(:func:`crowd_keras.distributed.aggregate`), which sees the items block by block, applies
the same rules with the same messages.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..codes import as_matrix, booleans_as_codes, number_cells, numeric_matrix
from ..errors import CrowdDataError

__all__ = ["check_pred_probs", "align_pred_probs", "class_columns", "check_rows",
           "bad_probability_rows", "check_probability_matrix",
           "missing_items_error", "extra_items_error", "repeated_items_error",
           "index_facts", "index_hint", "ROW_SUM_TOLERANCE"]

#: how far a row's sum may be from 1 (float32 soft-max outputs are within it)
ROW_SUM_TOLERANCE = 1e-3


def bad_probability_rows(p: np.ndarray) -> np.ndarray:
    """(I,) True where a row of ``p`` (I, K) is not a probability vector: a NaN, infinite or
    negative entry, or a sum farther than :data:`ROW_SUM_TOLERANCE` from 1."""
    bad = ~np.isfinite(p).all(axis=1) | (p < 0).any(axis=1)
    return bad | (~bad & (np.abs(p.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE))


def check_probability_matrix(values: Any, shape: tuple, what: str, shape_text: str,
                             row_name: Any) -> np.ndarray:
    """``values`` as a float64 array of ``shape`` whose rows are probability vectors.

    ``what`` names the array in messages, ``shape_text`` says the expected shape, and
    ``row_name(i)`` names row ``i`` (e.g. "item 'a'" or "task 7").

    Raises:
        CrowdDataError: another shape, or the first row that is not a probability vector
        (:func:`bad_probability_rows`), with its values.
    """
    p = np.asarray(values, dtype=np.float64)
    if p.shape != tuple(shape):
        raise CrowdDataError(f"{what} must have shape {shape_text}, got {p.shape}")
    bad = bad_probability_rows(p)
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"{what} of {row_name(i)} (row {i}) are not probabilities "
                             f"(finite, non-negative, summing to 1): {p[i].tolist()}")
    return p


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (messages show ``3``, not
    ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _show(values: Any, n: int = 5, total: Optional[int] = None) -> str:
    values = [_plain(v) for v in values]
    total = len(values) if total is None else total
    more = f" and {total - min(n, len(values))} more" if total > n else ""
    return ", ".join(repr(v) for v in values[:n]) + more


def missing_items_error(missing: Sequence, n_missing: Optional[int] = None) -> CrowdDataError:
    """The error for items of the annotations without a row: ``missing`` their ids (the first
    few are named), ``n_missing`` how many in all (default ``len(missing)``)."""
    n = len(missing) if n_missing is None else int(n_missing)
    return CrowdDataError(f"pred_probs: no row for {n} item(s) of the annotations: "
                          f"{_show(missing, total=n)}")


def extra_items_error(extra: Sequence, n_extra: Optional[int] = None) -> CrowdDataError:
    """The error for rows of items that are not in the annotations (as
    :func:`missing_items_error`)."""
    n = len(extra) if n_extra is None else int(n_extra)
    return CrowdDataError(f"pred_probs: {n} row(s) for items that are not in the "
                          f"annotations: {_show(extra, total=n)}")


def repeated_items_error(repeated: Sequence) -> CrowdDataError:
    """The error for item ids that index more than one row."""
    return CrowdDataError(f"pred_probs: item ids repeated in the frame's index: "
                          f"{_show(repeated)}")


#: one probability per item where there are two classes (a sigmoid output, P(class 1))
_BINARY_HINT = (" (one probability per item: with two classes give both, e.g. "
                "numpy.c_[1 - p, p] for p the chance of the second class)")


def _count_hint(columns: list, classes: list) -> str:
    """Which columns of a frame with too many or too few columns are not classes, and which
    classes have none (read by name, or as text: a frame read back from CSV); for columns
    ``0..m-1``, m > K (a frame made from an array with a class nobody chose), how to read
    the annotations with that class. Empty when no column is a class name."""
    if len(columns) == 1 and len(classes) == 2:
        return _BINARY_HINT
    for known in (pd.Index(columns).isin(classes),
                  pd.Index([str(c) for c in columns]).isin([str(c) for c in classes])):
        if known.any():
            break
    else:
        return ""
    if columns == list(range(len(columns))) and len(columns) > len(classes):
        return (f" (the annotations have {len(classes)} classes: a class nobody chose needs "
                f"n_classes= or classes= when they are read, e.g. "
                f"Annotations.from_wide(frame, n_classes={len(columns)}))")
    unknown = [c for c, ok in zip(columns, known) if not ok]
    named = {str(c) for c, ok in zip(columns, known) if ok}
    absent = [c for c in classes if str(c) not in named]
    parts = ([f"column(s) {_show(unknown)} are not classes"] if unknown else []) + \
        ([f"no column for the class(es) {_show(absent)}"] if absent else [])
    return f": {'; '.join(parts)}" if parts else ""


def class_columns(columns: Sequence, classes: Sequence) -> np.ndarray:
    """(K,) the position in ``columns`` of each class, in class-code order.

    Columns named by the classes (any order) are read by name, also when they are written as
    text (``"2"`` for the class ``2``, a frame read back from CSV); columns ``False`` and
    ``True`` name the classes 0 and 1, and columns 0 and 1 the classes False and True, as
    such labels do (:func:`~crowd_keras.codes.booleans_as_codes`); K columns none of which
    is a class name (``0..K-1`` from an array, or other names) are taken in class-code
    order.

    Raises:
        CrowdDataError: not one column per class, or columns of which some are class names
        (also as text) and others are not: the unknown columns and the classes without a
        column are named.
    """
    columns, classes = [_plain(c) for c in columns], [_plain(c) for c in classes]
    coded = booleans_as_codes(columns, classes)
    if coded is not columns:   # True/False name the classes 1 and 0, as labels and gold do
        columns = [_plain(c) for c in coded]
    if len(columns) != len(classes):
        raise CrowdDataError(f"pred_probs: {len(columns)} columns, expected one per class "
                             f"({len(classes)}: {classes}){_count_hint(columns, classes)}")
    index = pd.Index(columns)
    if index.has_duplicates:
        raise CrowdDataError(f"pred_probs: columns repeated: "
                             f"{_show(index[index.duplicated()].unique())}")
    positions = index.get_indexer(classes)
    positional = columns == list(range(len(classes)))
    if (positions >= 0).all():
        return positions
    if not (positions >= 0).any() and not positional:
        # the class names written as text (a frame read back from CSV: 0 -> "0"): by name
        written = pd.Index([str(c) for c in columns])
        alike = written.get_indexer([str(c) for c in classes])
        if not written.has_duplicates and (alike >= 0).all():
            return alike
        if not written.has_duplicates and (alike >= 0).any():
            # some written as class names, some not (classes 1..K against 0..K-1 in a CSV):
            # an error, as for columns that are not text; by position they would shift
            positions = alike
    if positional or not (positions >= 0).any():
        return np.arange(len(classes))
    found = set(positions[positions >= 0].tolist())
    unknown = [c for i, c in enumerate(columns) if i not in found]
    absent = [c for c, at in zip(classes, positions) if at < 0]
    raise CrowdDataError(f"pred_probs: column(s) {_show(unknown)} are not classes of the "
                         f"annotations {classes} (no column for {_show(absent)}); name one "
                         "column per class")


def check_rows(p: np.ndarray, item_ids: Sequence, rows: Optional[Sequence] = None
               ) -> np.ndarray:
    """``p`` (I, K) with its rows renormalised, after checking that they are probabilities.

    ``item_ids`` (I,) name the rows in messages, ``rows`` (I,) the row numbers shown beside
    them (default ``0..I-1``; an empty sequence: none).

    Raises:
        CrowdDataError: NaN or infinite values, negative values or rows whose sum is not 1
        (within :data:`ROW_SUM_TOLERANCE`); the message names the first offending item.
    """
    rows = np.arange(len(p)) if rows is None else np.asarray(rows)

    def where(i: int) -> str:
        at = f" (row {_plain(rows[i])})" if len(rows) else ""
        return f"pred_probs of item {_plain(item_ids[i])!r}{at}"

    checks = ((~np.isfinite(p)).any(axis=1), "is NaN or infinite"),  \
        ((p < 0).any(axis=1), "is negative")
    for bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise CrowdDataError(f"{where(i)} {what}: {p[i].tolist()}")
    sums = p.sum(axis=1)
    bad = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"{where(i)} sum to {sums[i]:.6g}, not 1 ({int(bad.sum())} such "
                             "rows): pass probabilities (soft-max outputs), not scores")
    return p / sums[:, None]


def _numbers(values: Any) -> np.ndarray:
    """Float64 probabilities from an array-like: ragged rows and non-numbers named by
    (row, column)."""
    p = as_matrix(values, "pred_probs", "a probability")
    if p.ndim == 2:
        p = numeric_matrix(p, "pred_probs", "probabilities (numbers)")
    try:
        return p.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise CrowdDataError(f"pred_probs must be numbers: {err}") from None


def index_facts(index: pd.Index, missing: Any, start: int = 0) -> tuple:
    """What :func:`index_hint` reads off (a piece of) a frame's index, rows ``start, start + 1,
    ...`` of the frame: ``(alike, positions)``, ``alike`` a list of the first index value
    written as the missing item id ``missing`` (``"1"`` for ``1``; empty for none),
    ``positions`` whether the piece holds the positions ``start, start + 1, ...``."""
    alike = index[index.astype(str) == str(_plain(missing))][:1].tolist()
    positions = not len(index) or index.equals(pd.RangeIndex(start, start + len(index)))
    return alike, bool(positions)


def index_hint(alike: Sequence, positions: bool, n_items: int) -> str:
    """Why a frame's index misses items, when it is plain: ids of another type written alike
    (``alike``: ``[the index value]``), or the positions ``0..n-1`` of a frame made from an
    array (``positions``: the frame has ``n_items`` rows indexed ``0..n_items - 1``)."""
    if len(alike):
        return (f" (the frame's index has {_plain(alike[0])!r}: the ids of pred_probs and of "
                "the annotations must be of one type)")
    if positions:
        return (f" (the frame's index is 0..{n_items - 1}, not the item ids: index it by item "
                "id, or pass pred_probs.to_numpy() for rows in the annotations' item order)")
    return ""


def _index_hint(index: pd.Index, missing: np.ndarray, n_items: int) -> str:
    alike, positions = index_facts(index, missing[0])
    return index_hint(alike, positions and len(index) == n_items, n_items)


def _align_frame(frame: pd.DataFrame, item_ids: np.ndarray, classes: Sequence) -> np.ndarray:
    """The frame's rows in ``item_ids`` order and its columns in class-code order."""
    if frame.index.has_duplicates:
        raise repeated_items_error(frame.index[frame.index.duplicated()].unique())
    pos = frame.index.get_indexer(item_ids)
    if (pos < 0).any():
        raise CrowdDataError(f"{missing_items_error(item_ids[pos < 0])}"
                             f"{_index_hint(frame.index, item_ids[pos < 0], len(item_ids))}")
    if len(frame) > len(item_ids):
        raise extra_items_error(frame.index[~frame.index.isin(item_ids)])
    part = frame.iloc[:, class_columns(frame.columns, classes)]
    try:
        return _numbers(part)[pos]
    except CrowdDataError:
        number, _, _ = number_cells(part.to_numpy(dtype=object))
        if number.all():
            raise
        # by item id and column name: the frame's positions after the columns were put in
        # class order named neither
        r, c = np.unravel_index(int(np.argmax(~number)), number.shape)
        value = part.iat[r, c]
        raise CrowdDataError(f"pred_probs of item {_plain(part.index[r])!r}, column "
                             f"{_plain(part.columns[c])!r}, must be a probability (a number), "
                             f"got {type(value).__name__} {_plain(value)!r}") from None


def align_pred_probs(pred_probs: Any, item_ids: Sequence, classes: Sequence) -> np.ndarray:
    """(I, K) float64 class probabilities aligned with ``item_ids``, rows renormalised: the
    rules of :func:`check_pred_probs` for items ``item_ids`` (I,) and ``classes`` (K,)."""
    item_ids = np.asarray(item_ids)
    rows = None
    if isinstance(pred_probs, pd.DataFrame):
        p = _align_frame(pred_probs, item_ids, classes)
        # a row named by its position in the frame, not in the annotations' item order
        rows = pred_probs.index.get_indexer(item_ids)
    elif isinstance(pred_probs, (dict, pd.Series, set, str, bytes)):
        raise CrowdDataError(f"pred_probs must be an (items, classes) array in the annotations' "
                             f"item order, or a pandas DataFrame indexed by item id; got a "
                             f"{type(pred_probs).__name__}" +
                             (" (a dict of rows: pandas.DataFrame.from_dict(d, orient='index'))"
                              if isinstance(pred_probs, dict) else
                              _BINARY_HINT if isinstance(pred_probs, pd.Series) and
                              len(classes) == 2 else ""))
    else:
        p = _numbers(pred_probs)
        if p.shape != (len(item_ids), len(classes)):
            # cleanlab takes K from pred_probs; annotations read without n_classes= stop at
            # the largest class chosen
            hint = ""
            if len(classes) == 2 and p.shape in ((len(item_ids),), (len(item_ids), 1)):
                hint = _BINARY_HINT
            elif p.ndim == 2 and p.shape == (len(classes), len(item_ids)):
                hint = " (transposed: pass pred_probs.T, one row per item)"
            elif p.ndim == 2 and p.shape[0] == len(item_ids) and p.shape[1] > len(classes):
                hint = (f" (the annotations have {len(classes)} classes: a class nobody chose "
                        f"needs n_classes= or classes= when they are read, e.g. "
                        f"Annotations.from_wide(frame, n_classes={p.shape[1]}))")
            raise CrowdDataError(f"pred_probs must have shape (items, classes) = "
                                 f"{(len(item_ids), len(classes))} in the annotations' item "
                                 f"order, got {p.shape}{hint}")
    return check_rows(p, item_ids, rows)


def check_pred_probs(pred_probs: Any, ann: Annotations) -> np.ndarray:
    """(I, K) float64 class probabilities aligned with ``ann.item_ids``, rows renormalised.

    Args:
        pred_probs: (I, K) array-like in ``ann.item_ids`` order, or a ``pandas.DataFrame``
            indexed by item id (every item once, no other item; columns ``ann.classes`` in
            any order, or K columns none of which is a class name, in class-code order:
            :func:`class_columns`).
        ann: the annotations being fitted.

    Raises:
        CrowdDataError: wrong shape or columns, missing or extra items, NaN or infinite
        values, negative values or rows whose sum is not 1 (within
        :data:`ROW_SUM_TOLERANCE`); the message names the first offending item or column.
    """
    return align_pred_probs(pred_probs, ann.item_ids, ann.classes)
