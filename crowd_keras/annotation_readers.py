"""The readers of :class:`~crowd_keras.annotations.Annotations`: frames, matrices, counts.

A mixin of classmethods: each turns one input layout into validated integer codes (with the
checks of :mod:`crowd_keras.codes`, errors naming the row, column or slot and the value) and
builds the container through its internal constructors.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
import pandas as pd

from .codes import (alike_hint, alike_position, booleans_as_codes, categorical, check_id_values,
                    check_unique_ids, dense_codes, factorize_ids, factorize_labels, ids_array,
                    integer_codes, is_dask_frame, label_matrix_codes, materialized, show,
                    stored_ids)
from .arguments import check_count
from .errors import CrowdDataError
from .numerics import MISSING
from .wide import wide_codes

if TYPE_CHECKING:   # for the return annotations only (annotations.py imports this module)
    from .annotations import Annotations

__all__ = ["AnnotationReaders", "frame_codes", "check_frame_columns"]


#: Most annotations ``from_counts`` expands (one code per label: 2**31 is 48 GiB of codes)
MAX_EXPANDED = 2 ** 31


class AnnotationReaders:
    """``from_dense``, ``from_wide``, ``from_label_matrix``, ``from_frame``, ``from_counts``,
    ``from_padded``."""

    __slots__ = ()   # Annotations stores its state in slots: no instance __dict__

    @classmethod
    def from_dense(cls, matrix: Any, missing: Any = MISSING, classes: Optional[Sequence] = None, *,
                   item_ids: Any = None, annotator_ids: Any = None) -> "Annotations":
        """From an items × annotators matrix of class codes, ``missing`` where absent.

        Args:
            matrix: array-like of shape ``(items, annotators)``; a ``pandas.DataFrame``'s
                index and columns are the item and annotator ids (as in :meth:`from_wide`)
                unless ``item_ids`` / ``annotator_ids`` are given.
            missing: the marker of an absent annotation (default -1; may be NaN).
            classes: class names in code order; default ``0..max code``.
            item_ids: one id per row (default: a frame's index, else ``0..items-1``).
            annotator_ids: one id per column (default: a frame's columns, else
                ``0..annotators-1``).
        """
        matrix, classes, item_ids, annotator_ids = (
            materialized(v) for v in (matrix, classes, item_ids, annotator_ids))
        if isinstance(matrix, pd.DataFrame):   # its ids, not 0..n-1: results keep the user's
            item_ids, annotator_ids = _frame_axes(matrix, item_ids, annotator_ids)
        rows, cols, labels, classes, shape = dense_codes(matrix, missing, classes,
                                                         allow_empty=item_ids is not None)
        for ids, size, what in ((item_ids, shape[0], "item_ids"), (annotator_ids, shape[1],
                                                                  "annotator_ids")):
            _check_id_count(ids, size, what, f"the matrix's {size} "
                            f"{'rows' if what == 'item_ids' else 'columns'} (shape "
                            f"{tuple(shape)})")
        return cls._checked(rows, cols, labels, classes,
                            item_ids=item_ids, annotator_ids=annotator_ids,
                            n_items=shape[0], n_annotators=shape[1],
                            where=lambda n: f"row {rows[n]}, column {cols[n]}")

    @classmethod
    def from_wide(cls, frame: Any, classes: Optional[Sequence] = None, *,
                  n_classes: Optional[int] = None) -> "Annotations":
        """From cleanlab's wide layout: an items × annotators frame of class codes with NaN
        where missing (``labels_multiannotator`` of ``cleanlab.multiannotator``).

        Every non-NaN cell is one annotation. The frame's index gives the item ids and its
        columns the annotator ids (a 2-d array: ``0..n-1``). Items (rows) with no label at
        all are kept, with no annotation (``annotations_per_item() == 0``; label models give
        them the class prior, or a classifier's ``pred_probs``), as are annotators with none.

        Args:
            frame: ``pandas.DataFrame`` or 2-d array of codes ``0..K-1`` and NaN (or
                ``pd.NA``); True/False cells are the codes 1 and 0, as ``from_frame`` reads
                them (a boolean beside numbers raises).
            classes: class names in code order (default ``0..K-1``). A frame whose cells
                are not all numbers is then read by class name (the frame
                ``to_wide(class_names=True)`` writes).
            n_classes: K, when the largest class never appears (cleanlab takes it from
                ``pred_probs``); default ``len(classes)`` or the largest code + 1.

        Raises :class:`crowd_keras.CrowdDataError` naming the item, the annotator (and their
        row and column) and the value of the first cell that is not a whole number in
        ``0..K-1``. :meth:`Annotations.to_wide` writes the layout back.
        """
        frame, classes = materialized(frame), materialized(classes)
        rows, cols, codes, item_ids, annotator_ids, k = wide_codes(frame, n_classes, classes)
        return cls(rows, cols, codes, item_ids=item_ids, annotator_ids=annotator_ids,
                   classes=classes, n_classes=None if classes is not None else k,
                   n_items=len(item_ids), n_annotators=len(annotator_ids))

    @classmethod
    def from_label_matrix(cls, L: Any, cardinality: Optional[int] = None, *,
                          classes: Optional[Sequence] = None) -> "Annotations":
        """From a Snorkel label matrix ``L`` (items × labeling functions, -1 = abstain).

        Vectorised: one pass to validate (two reductions for an integer matrix; an entry is
        located only when one is bad) and one ``nonzero``; no sort, since row-major order is
        already (item, function) order. Items are ``0..n-1``, annotators ``0..m-1`` (a
        ``pandas.DataFrame``'s index and columns, as in :meth:`from_dense`).

        Args:
            L: array-like of shape ``(items, functions)`` of class codes, -1 where a function
                abstains; a ``pandas.DataFrame``'s index and columns are the item and
                annotator ids.
            cardinality: number of classes ``k`` (codes ``0..k-1``); default ``max(L) + 1``.
            classes: class names in code order (instead of ``cardinality``).

        Raises :class:`crowd_keras.CrowdDataError` naming the row and column of the first bad
        entry (NaN, a non-integer, a code below -1 or outside the classes), as :meth:`from_dense`.
        """
        L, classes = materialized(L), materialized(classes)
        m, classes = label_matrix_codes(L, cardinality, classes)
        flat = np.flatnonzero(m >= 0)  # row-major: sorted by (item, annotator), no duplicates
        rows, cols = np.divmod(flat, m.shape[1])
        ids = [ids_array(classes)]
        if isinstance(L, pd.DataFrame):   # its index and columns (function names) as the ids
            ids += [ids_array(axis) for axis in _frame_axes(L, None, None)]
        else:
            ids += [np.arange(m.shape[0]), np.arange(m.shape[1])]
        for values, what in zip(ids, ("class", "item", "annotator")):
            check_unique_ids(values, what)
        ids = [stored_ids(values) for values in ids]   # as every reader stores them
        return cls._trusted(rows, cols, m.reshape(-1)[flat], item_ids=ids[1],
                            annotator_ids=ids[2], classes=ids[0])

    @classmethod
    def from_frame(cls, df: pd.DataFrame, item: str = "task", annotator: str = "worker",
                   label: str = "label", classes: Optional[Sequence] = None, *,
                   item_ids: Optional[Sequence] = None, annotator_ids: Optional[Sequence] = None,
                   duplicates: str = "error", row_numbers: Any = None) -> "Annotations":
        """From a long frame with one row per annotation (crowd-kit's layout).

        Labels may be strings or integers. Without ``classes``, compact integer labels give
        classes ``0..max`` (:func:`~crowd_keras.codes.compact_codes`), other labels their
        sorted distinct values (one stray ``10**9`` makes one class, not a billion). A pandas
        categorical column is read by its values, as scikit-learn's encoders read it: its
        unused categories are not classes and its category order is not the code order;
        ``classes=list(df[label].cat.categories)`` keeps both. ``item_ids`` may list items that have no annotation (they are kept); without it the
        items are the distinct values of the ``item`` column in sorted order. A role that
        is no column may be a level of the frame's index (a frame indexed by item, or by
        (item, annotator)): it is read as ``df.reset_index()`` would read it.

        Vectorised: each column is checked and factorised in a few numpy/pandas passes and
        the rows are ordered by one sort of packed (item, annotator, row, label) values (10M
        rows in seconds on one core). Bad rows raise :class:`~crowd_keras.CrowdDataError`
        naming the row, its item and annotator and the value: a missing value, a list/dict
        value, a column mixing types (``1`` and ``"1"``), a negative, fractional, infinite
        or too large number, a duplicate (item, annotator) pair (both rows named), two
        columns of one name, one column given for two roles (:func:`frame_codes`).

        Ids and labels are compared exactly as given: no spaces are stripped and no Unicode
        normalisation is applied (``"café"`` in NFC and in NFD are two items that print
        alike; ``unicodedata.normalize`` them first).

        ``row_numbers`` (n,): the row numbers that messages name (default ``0..n-1``): a
        partition of a larger frame names the larger frame's rows (``crowd_keras.distributed``).
        """
        rows = _row_numbers(row_numbers, df)
        codes, classes, ids, distinct = frame_codes(df, item, annotator, label, classes,
                                                    item_ids=item_ids,
                                                    annotator_ids=annotator_ids,
                                                    row_numbers=rows)
        (item_codes, item_ids), (ann_codes, annotator_ids) = ids["item"], ids["annotator"]
        # every code came from a factorisation or a checked lookup: only sort and dedupe
        return cls._from_valid_codes(item_codes, ann_codes, codes, item_ids=item_ids,
                                     annotator_ids=annotator_ids, classes=classes,
                                     duplicates=duplicates, distinct=distinct,
                                     row_numbers=rows)

    @classmethod
    def from_counts(cls, counts: Any, classes: Optional[Sequence] = None) -> "Annotations":
        """From (items, K) label counts without annotator ids: the ``k``-th label of an item
        is credited to a pseudo-annotator ``"slot-k"``.

        A ``pandas.DataFrame`` of counts (``pd.crosstab(df.task, df.label)``) gives its index
        as the item ids and its columns as the label values (unless ``classes`` is given),
        read as :meth:`from_frame` reads a label column, so that the crosstab of a long frame
        gives the classes that frame gives: text sorted, booleans the codes 0 and 1, integer
        (and whole-number float) labels the classes ``0..max`` when compact (the ratings
        1..5 are the classes 0..5, class 0 without a count); ``classes=list(counts.columns)``
        keeps the columns' order instead (``classes`` name the columns by position).

        Raises:
            CrowdDataError: not a 2-D array of non-negative integer counts.
        """
        counts, classes = materialized(counts), materialized(classes)
        item_ids, columns = None, None
        if isinstance(counts, pd.DataFrame):   # its ids and classes, not 0..n-1 and 0..K-1
            item_ids, names = _frame_axes(counts, None, classes, "class")
            if classes is None:
                columns, classes = _label_columns(names)
            if all(pd.api.types.is_numeric_dtype(t) for t in counts.dtypes):   # Int64 too
                counts = counts.to_numpy(dtype=np.float64, na_value=np.nan)
        r = np.asarray(counts)
        if r.ndim != 2:
            raise CrowdDataError(f"label counts must be a 2-D items × classes array, got shape "
                                 f"{r.shape}")
        if r.dtype.kind not in "iuf" or (r.dtype.kind == "f" and not np.isfinite(r).all()):
            bad = "non-numeric" if r.dtype.kind not in "iuf" else "non-finite"
            raise CrowdDataError(f"label counts must be finite numbers; got {bad} values")
        if (r < 0).any() or (r != np.round(r)).any():
            pos = tuple(int(p) for p in np.argwhere((r < 0) | (r != np.round(r)))[0])
            raise CrowdDataError(f"label counts must be non-negative integers; got {r[pos]} at "
                                 f"(item, class) {pos}")
        total = float(r.sum()) if r.size else 0.0
        if total > MAX_EXPANDED:   # checked before the expansion allocates one code per label
            raise CrowdDataError(f"label counts add up to {total:.3g} annotations, more than "
                                 f"{MAX_EXPANDED:.3g}: too many to expand one by one")
        r = r.astype(np.int64)
        if columns is not None:   # the frame's columns at their classes' codes
            placed = np.zeros((r.shape[0], len(classes)), dtype=np.int64)
            placed[:, columns] = r
            r = placed
        n, k = r.shape
        if classes is not None and len(classes) != k:
            raise CrowdDataError(f"{len(classes)} classes given for {k} count columns")
        items = np.repeat(np.repeat(np.arange(n), k), r.ravel())
        labels = np.repeat(np.tile(np.arange(k), n), r.ravel())
        starts = np.concatenate([[0], np.cumsum(r.sum(axis=1))[:-1]])
        slots = np.arange(len(items)) - starts[items]
        n_slots = max(int(r.sum(axis=1).max()) if n else 0, 1)
        return cls(items, slots, labels, n_items=n, item_ids=item_ids,
                   annotator_ids=[f"slot-{s}" for s in range(n_slots)],
                   classes=classes, n_classes=k)

    @classmethod
    def from_padded(cls, annotator_idx: Any, labels: Any, n_annotators: Optional[int] = None,
                    classes: Optional[Sequence] = None, *, item_ids: Any = None,
                    annotator_ids: Any = None) -> "Annotations":
        """Inverse of :meth:`to_padded`: per-item annotator codes and labels padded with -1."""
        annotator_idx, labels, classes, item_ids, annotator_ids = (
            materialized(v) for v in (annotator_idx, labels, classes, item_ids, annotator_ids))
        a = np.asarray(annotator_idx)
        y = np.asarray(labels)
        if a.shape != y.shape or a.ndim != 2:
            raise CrowdDataError(f"padded annotator ids and labels must be 2-d and of one shape, got "
                                 f"{a.shape} and {y.shape}")
        a = integer_codes(a, "padded annotator ids", "(row, slot) ")
        y = integer_codes(y, "padded labels", "(row, slot) ")
        for name, codes in (("annotator id", a), ("label", y)):
            below = codes < MISSING   # else -5 and -7 read as padding, the entry dropped
            if below.any():
                r, c = np.argwhere(below)[0]
                raise CrowdDataError(f"padded {name} {codes[r, c]} at row {r}, slot {c}: only "
                                     f"the padding marker {MISSING} may be negative")
        present = a >= 0
        if ((y >= 0) != present).any():
            r, c = np.argwhere((y >= 0) != present)[0]
            raise CrowdDataError(f"padding mismatch at row {r}, slot {c}: annotator {a[r, c]}, "
                                 f"label {y[r, c]} (both must be -1 or both set)")
        rows, slots = np.nonzero(present)
        _check_padded_repeats(a, rows, slots, a[rows, slots])
        if n_annotators is not None:
            n_annotators = check_count(n_annotators, "n_annotators", 0)
        if n_annotators is None and annotator_ids is None:
            n_annotators = int(a.max()) + 1 if present.any() else 0
        _check_id_count(item_ids, a.shape[0], "item_ids",
                        f"the padded arrays' {a.shape[0]} rows (shape {a.shape})")
        return cls._checked(rows, a[rows, slots], y[rows, slots], classes, item_ids=item_ids,
                            annotator_ids=annotator_ids, n_items=a.shape[0],
                            n_annotators=n_annotators,
                            where=lambda n: f"row {rows[n]}, slot {slots[n]}")

    @classmethod
    def _checked(cls, items, annotators, labels, classes, *, where, **kwargs) -> "Annotations":
        """Construct, re-raising range errors with the caller's notion of position."""
        labels = np.asarray(labels, dtype=np.int64)
        if classes is None and not len(labels):
            # no annotation and no classes: the one class 0, as from_wide, from_label_matrix
            # and from_frame read a crowd of codes without a label (not the constructor's
            # "pass n_classes=", a keyword these readers do not take)
            kwargs["n_classes"] = 1
        if classes is not None:
            bad = (labels < 0) | (labels >= len(classes))
            if bad.any():
                n = int(np.argmax(bad))
                raise CrowdDataError(f"label code {labels[n]} at {where(n)} is outside the "
                                     f"{len(classes)} classes {ids_array(classes).tolist()}")
        ids, size = kwargs.get("annotator_ids"), kwargs.get("n_annotators")
        if ids is not None and not isinstance(ids, (str, bytes)) and np.ndim(ids) == 1:
            size = len(ids)
        if size is not None and len(annotators):   # else named by its sorted position
            bad = np.asarray(annotators) >= size
            if bad.any():
                n = int(np.argmax(bad))
                given = "annotator_ids" if ids is not None else f"n_annotators={size}"
                raise CrowdDataError(f"annotator code {annotators[n]} at {where(n)} is outside "
                                     f"the {size} annotators of {given} (codes 0..{size - 1})")
        return cls(items, annotators, labels, classes=classes, **kwargs)


def _check_id_count(ids: Any, size: int, what: str, of: str) -> None:
    """Raise when ``ids`` (a list) has not ``size`` entries, naming ``what`` and ``of`` (the
    rows or columns they name); else the constructor names an ``n_items`` never given."""
    if ids is not None and not isinstance(ids, (str, bytes)) and np.ndim(ids) == 1 and \
            len(ids) != size:
        raise CrowdDataError(f"{what} has {len(ids)} ids for {of}")


def _frame_axes(frame: pd.DataFrame, item_ids: Any, column_ids: Any,
                columns: str = "annotator") -> tuple:
    """``(item_ids, column_ids)``: those given, else the frame's index and columns, checked
    by the rules of a long frame's id columns (:func:`check_id_values`); ``columns``: what
    the columns are (``"annotator"``, ``"class"``)."""
    out = []
    for given, axis, what, where in ((item_ids, frame.index, "item", "row {} of the frame's "
                                      "index"),
                                     (column_ids, frame.columns, columns,
                                      "column {} of the frame")):
        if given is None:
            check_id_values(axis, what, where.format)
            given = axis.to_numpy()
        out.append(given)
    return tuple(out)


def _label_columns(names: Any) -> tuple:
    """``(codes (K',), classes (K,))`` of a counts frame's columns ``names`` (K',), label
    values read by :meth:`AnnotationReaders.from_frame`'s rule (:func:`factorize_labels`).
    Two columns of one class raise: ``1`` and ``1.0`` here, ``True`` and ``1`` (a mix of
    types) in :func:`_frame_axes`."""
    names = ids_array(names)
    check_unique_ids(names, "class")
    return factorize_labels(pd.Series(names, dtype=object),
                            lambda n: f"column {n} of the counts frame", "class")


def _check_padded_repeats(padded: np.ndarray, rows: np.ndarray, slots: np.ndarray,
                          annotators: np.ndarray) -> None:
    """Raise for an annotator in two slots of one padded row, naming the row and both slots
    (the constructor's duplicate message would name positions and a ``duplicates=`` that
    :meth:`AnnotationReaders.from_padded` does not take). ``padded`` (items, slots): the
    annotator codes, -1 = padding; ``rows``, ``slots``, ``annotators`` (n,): its entries."""
    if len(rows) < 2:
        return
    # each row sorted on its own (a few slots) finds a repeat; the sort of all the entries
    # by three keys that locates it (1.7 of 2.3 s of a 1M-item from_padded) runs only then
    by_row = np.sort(padded, axis=1)
    if not ((by_row[:, 1:] == by_row[:, :-1]) & (by_row[:, :-1] >= 0)).any():
        return
    order = np.lexsort((slots, annotators, rows))
    r, a = rows[order], annotators[order]
    again = (r[1:] == r[:-1]) & (a[1:] == a[:-1])
    if again.any():
        k = int(np.argmax(again))
        raise CrowdDataError(f"padded row {r[k]}: annotator {a[k]} is in slots "
                             f"{slots[order[k]]} and {slots[order[k + 1]]}; an annotator "
                             "labels an item once")


def _row_numbers(row_numbers: Any, df: Any) -> Optional[np.ndarray]:
    if row_numbers is None:
        return None
    rows = np.asarray(row_numbers)
    if rows.ndim != 1 or rows.dtype.kind not in "iu" or (
            isinstance(df, pd.DataFrame) and len(rows) != len(df)):
        raise ValueError(f"row_numbers must be a 1-d integer array with one entry per row, got "
                         f"shape {rows.shape} and dtype {rows.dtype}")
    return rows


def _label_type_hint(value: Any, classes: Sequence, column: str) -> str:
    """Error hint for a label ``value`` not among ``classes`` that is written like one of
    them in another type (a CSV's ``"1"`` against the fitted ``1``), else ``""``."""
    at = alike_position(value, classes)
    if at < 0:
        return ""
    alike = list(classes)[at]
    # no astype for booleans: "False".astype(bool) is True
    kind = None if isinstance(alike, (bool, np.bool_)) else \
        "int" if isinstance(alike, (int, np.integer)) else "str" if isinstance(alike, str) else None
    how = f", e.g. frame[{show(column)}].astype({kind})" if kind else ""
    return f" (class {show(alike)} is written alike: give the labels in the classes' type{how})"


def check_frame_columns(columns: Sequence, roles: dict, index: Sequence = ()) -> None:
    """Raise :class:`CrowdDataError` when a role's column is absent or named twice in
    ``columns``, or when one column is given for two roles; ``roles`` maps a role
    (``"item"``, ``"annotator"``, ``"label"``) to its column name. ``index``: the names of
    the frame's index levels, which stand for columns of those names (:func:`frame_codes`)."""
    shown = list(columns)
    columns = shown + [name for name in index if name not in shown]
    absent = [name for name in roles.values() if name not in columns]
    if absent:
        # another library's layout (cleanlab's long one: task, annotator, label) names a
        # column by its role: the keyword of that role reads it
        named = [f"{role}={show(role)}" for role, name in roles.items()
                 if name not in columns and role in columns]
        # (fit and aggregate take these keywords; predict_proba and to_cleanlab take
        # Annotations, read so)
        hint = f" (a column is named by its role: read it with {', '.join(named)}, e.g. " \
            f"Annotations.from_frame(frame, {', '.join(named)}))" if named else ""
        levels = f"; index level(s) are {list(index)}" if len(index) else ""
        raise CrowdDataError(f"frame has no column(s) {absent}; columns are {shown}{levels}"
                             f"{hint}")
    for role, name in roles.items():
        if columns.count(name) > 1:
            raise CrowdDataError(f"frame has {columns.count(name)} columns named {show(name)} (the "
                                 f"{role} column); give each column a distinct name")
    seen: dict = {}
    for role, name in roles.items():
        if name in seen:
            raise CrowdDataError(f"column {show(name)} is given as both the {seen[name]} and the "
                                 f"{role} column; they must be two different columns")
        seen[name] = role


def frame_codes(df: pd.DataFrame, item: str, annotator: str, label: str,
                classes: Optional[Sequence] = None, *, item_ids: Optional[Sequence] = None,
                annotator_ids: Optional[Sequence] = None,
                row_numbers: Optional[np.ndarray] = None) -> tuple:
    """The checks and codes of :meth:`AnnotationReaders.from_frame`, without building.

    Returns ``(label codes (n,), classes, {"item": (codes (n,), ids), "annotator": (codes
    (n,), ids)}, distinct)``, ``distinct`` naming the id arrays a factorisation made. Raises
    :class:`CrowdDataError` naming the row (``row_numbers[n]`` when given), its item and
    annotator and the value. Used by ``crowd_keras.distributed`` to check each partition of
    a Dask frame by the same rules, with the frame's row numbers.
    """
    if not isinstance(df, pd.DataFrame):
        got = f"a Dask {type(df).__name__}: fit it partition by partition with " \
            "crowd_keras.distributed.aggregate(ddf, ...), or read it with " \
            "Annotations.from_frame(ddf.compute())" if is_dask_frame(df) else type(df).__name__
        raise CrowdDataError(f"expected a pandas DataFrame, got {got}")
    roles = {"item": item, "annotator": annotator, "label": label}
    columns = list(df.columns)
    # a frame indexed by item (or by (item, annotator): set_index, groupby) is read as its
    # reset_index() would be, as crowd_keras.distributed reads a Dask frame indexed by item
    levels = [name for name in df.index.names if name is not None]
    check_frame_columns(columns, roles, levels)
    indexed = {role for role, name in roles.items() if name not in columns}
    if len(df) == 0 and item_ids is None:
        raise CrowdDataError("frame has no annotations")
    rows = row_numbers
    cols = {role: df.index.get_level_values(name).to_series(index=df.index)
            if role in indexed else df[name] for role, name in roles.items()}
    cols = {k: pd.Series(np.asarray(c, dtype=object), index=c.index)
            if categorical(c.dtype) else c for k, c in cols.items()}

    def row(n: int) -> int:
        return int(rows[n]) if rows is not None else n

    def where(n: int, skip: str = "label") -> str:
        # a missing co-id is said so (an annotator named "nan" is a valid id)
        shown = ", ".join(f"{role} missing too" if _missing(cols[role].iloc[n])
                          else f"{role} {show(cols[role].iloc[n])}"
                          for role in ("item", "annotator", "label") if role not in (skip, "label"))
        return f"row {row(n)} ({shown})" if shown else f"row {row(n)}"

    for role, name in (("item", item), ("annotator", annotator), ("label", label)):
        null = cols[role].isna().to_numpy()
        if null.any():
            r = int(np.argmax(null))
            # crowd-kit skips a row without a label: here it is an error, so say what to do
            # (in words that also fit the command line, which shows this message)
            drop = " (a row without a label is no annotation: leave those rows out)" \
                if role == "label" else ""
            raise CrowdDataError(f"missing value (NaN/None) in column {show(name)} at "
                                 f"{where(r, skip=role)}: the {role} of every row is needed"
                                 f"{drop}")
    # read once (a generator would be empty at the lookups below); a repeat would make them
    # ambiguous
    classes, item_ids, annotator_ids = (None if given is None else ids_array(given)
                                        for given in (classes, item_ids, annotator_ids))
    for given, what in ((classes, "class"), (item_ids, "item"), (annotator_ids, "annotator")):
        if given is not None:
            check_unique_ids(given, what)
    distinct = []   # id arrays that a factorisation made (no repeats to look for)
    if classes is None:
        codes, classes = factorize_labels(cols["label"], where)
        distinct.append("class")
    else:
        wanted = pd.Index(list(classes))
        # booleans are the integer labels 0 and 1, as without classes
        codes = wanted.get_indexer(booleans_as_codes(cols["label"], classes))
        if (codes < 0).any():
            n = int(np.argmax(codes < 0))
            value = cols["label"].iloc[n]
            raise CrowdDataError(f"label {show(value)} at {where(n)} is not one of the classes "
                                 f"{ids_array(classes).tolist()}"
                                 f"{_label_type_hint(value, classes, label)}")
    ids = {}
    for role, given in (("item", item_ids), ("annotator", annotator_ids)):
        if given is None:
            ids[role] = factorize_ids(cols[role], role, lambda n, r=role: where(n, skip=r))
            distinct.append(role)
            continue
        found = pd.Index(list(given)).get_indexer(cols[role])
        if (found < 0).any():
            n = int(np.argmax(found < 0))
            value = cols[role].iloc[n]
            raise CrowdDataError(f"{role} {show(value)} at {where(n, skip=role)} is not in "
                                 f"{role}_ids{alike_hint(value, ids_array(given), role)}")
        ids[role] = (found.astype(np.int64), given)
    return codes, classes, ids, distinct


def _missing(value: Any) -> bool:
    """NaN/None/pd.NA (a list or an array is a value, not a missing one)."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
