"""Turning user identifiers and label values into validated integer codes.

The checks behind :class:`~crowd_keras.annotations.Annotations`' constructors: each raises
:class:`~crowd_keras.CrowdDataError` naming the position (row, column, slot) and the value.
Vectorised: a column is checked and factorised by numpy/pandas in a few passes; Python runs
per value only after a problem is found, to name its position.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .arguments import check_count
from .errors import CrowdDataError
from .numerics import dense_ranks
from .string_codes import column_codes

__all__ = ["show", "spelled_number", "alike_hint", "alike_position", "categorical", "frozen", "ids_array", "check_unique_ids",
           "integer_codes", "label_matrix_problem", "as_matrix", "numeric_matrix", "compact_codes", "factorize_labels",
           "factorize_ids", "sort_order", "keyed_order", "dense_codes", "label_matrix_codes",
           "MAX_CODE", "infer_classes", "check_id_values", "is_dask_frame",
           "booleans_as_codes", "number_cells", "rows_by_id",
           "materialized", "stored_ids"]

#: Largest magnitude of a float read as an exact integer code (2**53).
MAX_CODE = 2 ** 53


def booleans_as_codes(labels: Any, classes: Any) -> Any:
    """``labels`` (a column or array of label values) looked up against ``classes``: booleans
    are the integer labels 0 and 1 (as the readers read them without classes) unless the
    classes are booleans themselves, and then the integer labels 0 and 1 are False and True
    (as scikit-learn's encoders match them); any other ``labels`` are returned as given. Used
    wherever label values meet the classes (the readers, gold, ``pred_probs`` columns), so
    one rule holds for all."""
    boolean_classes = pd.Index(list(classes)).inferred_type == "boolean"
    kind = pd.api.types.infer_dtype(labels, skipna=False)
    if not boolean_classes and kind == "boolean":
        return labels.astype(np.int64) if isinstance(labels, pd.Series) else \
            np.asarray(labels).astype(np.int64)
    if boolean_classes and kind == "integer":
        values = np.asarray(labels)
        out = values.astype(object)   # 0 and 1 as booleans; other integers match no class
        zero_one = (values == 0) | (values == 1)
        out[zero_one] = values[zero_one].astype(bool)
        return pd.Series(out, index=labels.index) if isinstance(labels, pd.Series) else out
    return labels


def is_dask_frame(obj: Any) -> bool:
    """True for a Dask DataFrame or Series (without importing Dask when it is not loaded;
    duck-typed: Dask's frame classes moved between versions). ``np.asarray`` computes one
    whole."""
    if "dask" not in sys.modules or isinstance(obj, type):
        return False
    return all(hasattr(obj, name) for name in ("to_delayed", "npartitions", "columns")) \
        and not isinstance(obj, pd.DataFrame)


def categorical(dtype: Any) -> bool:
    """True for a column dtype read by its values, not its codes: pandas' categorical, or an
    arrow dictionary (``pd.read_parquet(..., dtype_backend="pyarrow")`` of a categorical
    column), whose values pandas' type inference calls "unknown-array"."""
    if isinstance(dtype, pd.CategoricalDtype):
        return True
    arrow = getattr(dtype, "pyarrow_dtype", None)   # pd.ArrowDtype: pyarrow is installed
    if arrow is None:
        return False
    import pyarrow as pa

    return pa.types.is_dictionary(arrow)


def show(value: Any) -> str:
    """repr() of a user value without numpy's ``np.int64(...)`` wrapping."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def alike_position(value: Any, known: Any) -> int:
    """The position of the first of ``known`` (ids or classes) written as ``value`` is (``7``
    for the ``"7"`` of a CSV), or -1 (none, or ``value`` is not one value)."""
    table = np.asarray(known, dtype=object)
    if not len(table) or np.ndim(value):
        return -1
    alike = np.flatnonzero(pd.Index(table).astype(str) == str(value))
    return int(alike[0]) if len(alike) else -1


def alike_hint(value: Any, known: Any, what: str) -> str:
    """Error hint for ``value``, not among ``known`` (ids or classes): the one of another type
    written the same (:func:`alike_position`), else ``""``. ``what``: ``"item"``,
    ``"annotator"`` or ``"class"``."""
    at = alike_position(value, known)
    if at < 0:
        return ""
    alike = np.asarray(known, dtype=object)[at]
    if what == "class":
        return f" (the classes include {show(alike)}: give the labels in the classes' type)"
    return f" (the {what} ids include {show(alike)}: give the ids in the type they were read " \
        "with)"


def frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def materialized(value: Any) -> Any:
    """``value`` as the list it yields when it is a one-pass iterator (a generator, ``map``,
    ``iter(...)``), read once; anything else as given. numpy reads an iterator as one
    object (a 0-d array) and ``len()`` fails on it: every reader of
    :class:`~crowd_keras.annotations.Annotations` takes its arrays and ids through this,
    so that an iterator is accepted wherever a list is."""
    return list(value) if isinstance(value, Iterator) else value


def stored_ids(ids: np.ndarray) -> np.ndarray:
    """1-d ids (or classes) as :class:`~crowd_keras.annotations.Annotations` keeps them:
    integers of any width as int64, and numbers that are all whole (``1.0``, ``2.0``: a CSV
    column of integers with a missing value elsewhere reads as floats) as the int64 integers
    they stand for, as labels are read; any other ids (text, fractions, booleans, integers
    beyond int64 or floats beyond 2**53) as given. Read-only."""
    kind = ids.dtype.kind
    if kind == "O" and len(ids):
        kind = {"integer": "i", "floating": "f", "mixed-integer-float": "f"}.get(
            pd.api.types.infer_dtype(ids, skipna=False), "O")
    if kind in "iu" and ids.dtype != np.int64 and not (
            ids.dtype.kind == "u" and len(ids) and ids.max() > _INT64_MAX):
        try:
            return frozen(ids.astype(np.int64))
        except OverflowError:   # Python integers beyond int64: kept as they are
            pass
    if kind == "f":
        values = ids.astype(np.float64)
        if (np.isfinite(values) & (values == np.round(values)) &
                (np.abs(values) <= MAX_CODE)).all():
            return frozen(values.astype(np.int64))
    return frozen(ids if ids.dtype.kind in "iubO" else ids.astype(object))


def ids_array(ids: Iterable[Any]) -> np.ndarray:
    """Identifiers as a 1-d array; integers stay integers, anything else is an object array.
    One string is refused (``classes="xy"`` would be the two classes 'x' and 'y'), and so
    is a set: ids are in code order, and a set's order is its hashes' (another in each
    process for strings), so the class codes and the rows of every result would be too. A
    mapping is read as its keys in order only when its values are those codes, 0..n-1."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"identifiers must be a list, got the string {ids!r} (one id: "
                        f"[{ids!r}])")
    if isinstance(ids, (set, frozenset)):
        raise TypeError(f"identifiers must be a list in code order, got a "
                        f"{type(ids).__name__}, whose order is arbitrary (pass sorted(ids) "
                        f"for the sorted order)")
    if isinstance(ids, Mapping) and not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v == n
            for n, v in enumerate(ids.values())):
        # {label: code} read as its keys in insertion order, the codes ignored: gold codes,
        # pred_probs columns and every result's class order would follow the keys instead
        raise TypeError(f"identifiers must be a list in code order, got a "
                        f"{type(ids).__name__} whose values are not 0..{len(ids) - 1} in its "
                        f"keys' order (its keys would be read in that order, its values "
                        f"ignored); pass sorted(ids, key=ids.get) for the order its values give")
    if not isinstance(ids, Iterable):   # else Python's "'int' object is not iterable"
        raise TypeError(f"identifiers must be a list, got {type(ids).__name__} {show(ids)} "
                        f"(one id: [{show(ids)}])")
    values = list(ids) if not isinstance(ids, (np.ndarray, pd.Index)) else ids
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise CrowdDataError(f"identifiers must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        if isinstance(values, list):   # NumPy would print ["e", 7] as ["e", "7"]
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
        else:
            arr = arr.astype(object)
    return frozen(arr)


def check_unique_ids(ids: np.ndarray, what: str) -> None:
    """Raise when an id repeats or is missing (NaN/None: no frame row can name it, and a
    class of it was a NaN label). Ids are compared by value and type (``1`` and ``"1"`` are
    two ids), and the message names both positions of the first repeat."""
    index = pd.Index(ids)
    if index.hasnans:
        n = int(np.argmax(pd.isna(np.asarray(ids, dtype=object))))
        raise CrowdDataError(f"missing {what} id ({show(ids[n])}) at position {n}: every "
                             f"{what} needs an id")
    dup = index.duplicated()
    if dup.any():
        n = int(np.argmax(dup))
        first = int(np.argmax(index[:n] == index[n])) if n else 0
        raise CrowdDataError(f"{what} ids must be unique; {what} id {show(ids[n])} at position {n} "
                             f"repeats position {first} ({int(dup.sum())} repeat(s))")


def rows_by_id(index: pd.Index, ids: np.ndarray) -> tuple[Optional[np.ndarray], str, Any]:
    """How a table (a frame's ``index``) lines up with ``ids`` (n,), the rule by which
    features and annotator features follow the annotations' codes.

    Returns ``(rows, problem, value)``: ``rows`` (n,) the position of each id in ``index``,
    or None when the table is to be read by position (pandas' default index ``0..m-1``, an
    index already equal to ``ids``, or one naming none of them); ``problem`` is ``""`` or,
    for an index that names ids but cannot be aligned, ``"repeats"`` (``value``: the
    repeated entries, in order), ``"missing"`` (the ids without a row) or ``"extra"`` (the
    entries that are no id) or ``"types"`` (an index naming none of them but written like
    some: ``value`` the pair (entry, id), such as ``"1"`` and ``1``). The callers word the
    error (each names its own argument)."""
    none = None, "", None
    if len(index) == len(ids) and np.array_equal(index.to_numpy(), ids):
        return none
    if index.equals(pd.RangeIndex(len(index))):    # pandas' default: positions, not ids
        return none
    known = index.isin(ids)
    if not known.any():                            # not indexed by these ids ...
        written = pd.Index(index.astype(str)).get_indexer(pd.Index(ids).astype(str))
        if len(index) and (written >= 0).any():    # ... unless written alike (1 and "1")
            at = int(np.argmax(written >= 0))
            return None, "types", (index[written[at]], ids[at])
        return none
    if index.has_duplicates:
        return None, "repeats", index[index.duplicated()]
    rows = index.get_indexer(ids)
    if (rows < 0).any():
        return None, "missing", ids[rows < 0]
    if not known.all():
        return None, "extra", index[~known]
    return rows, "", None


def position_codes(values: Any, n: int, what: str, taker: str, unique: bool = False,
                   from_ids: str = "") -> np.ndarray:
    """``values`` as (m,) int64 positions in ``0..n-1`` of ``what`` ("item", "document"), or
    CrowdDataError naming ``taker``: a boolean mask (it would read as positions 0 and 1),
    text (ids, not codes: ``from_ids`` says how to get codes), a fraction, a position out of
    range (a negative one would count from the end) and, with ``unique``, a position given
    twice."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        raise CrowdDataError(f"{taker} takes {what} codes (0..{n - 1}), got a boolean array; "
                             "for a mask give np.flatnonzero(mask)")
    if values.dtype.kind in "USOT" and from_ids:   # T: numpy 2's StringDType
        raise CrowdDataError(f"{taker} takes {what} codes (0..{n - 1}), got {values.dtype} "
                             f"values; for {what} ids give {from_ids}")
    codes = integer_codes(values.ravel(), f"{taker}: {what} codes", "position ")
    bad = (codes < 0) | (codes >= n)
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"{what} code {int(codes[i])} at position {i} is outside "
                             f"0..{n - 1} ({taker} takes {what} codes)")
    if unique and len(codes):
        uniq, counts = np.unique(codes, return_counts=True)
        if counts.max() > 1:   # a code twice would make two entries of one id
            i = int(np.argmax(counts > 1))
            raise CrowdDataError(f"{what} code {int(uniq[i])} is given {int(counts[i])} "
                                 f"times to {taker}: give each {what} once")
    return codes


_INT64_MAX = np.iinfo(np.int64).max


def _check_int64(values: np.ndarray, at: Callable[[tuple], str]) -> None:
    """Raise for an unsigned value beyond int64 (``astype(np.int64)`` would wrap it to a
    negative code), naming it by ``at(position)``."""
    if values.dtype.kind == "u" and values.size and values.max() > _INT64_MAX:
        pos = tuple(np.argwhere(values > _INT64_MAX)[0])
        raise CrowdDataError(f"{at(pos)}, too large for an integer class code (beyond "
                             "2**63 - 1)")


def integer_codes(values: np.ndarray, what: str, where: str) -> np.ndarray:
    """Validate that `values` hold integer codes (ints or integral floats; no NaN, inf or float
    beyond 2**53) and return them as a new int64 array (never the caller's, which
    :class:`Annotations` would freeze); ``where`` prefixes the position tuple."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        _check_int64(values, lambda pos: f"{what} has a code {show(values[pos])} at "
                                         f"{where}{tuple(int(p) for p in pos)}")
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        if not finite.all():
            pos = np.argwhere(~finite)[0]
            value = values[tuple(pos)].item()
            at = f"{where}{tuple(int(p) for p in pos)}"
            if np.isnan(value):
                raise CrowdDataError(f"{what} contains NaN at {at} (NaN or None); use the "
                                     "missing marker (-1) for absent annotations")
            raise CrowdDataError(f"{what} has a non-finite code {value} at {at}")
        frac = values != np.round(values)
        if frac.any():
            pos = np.argwhere(frac)[0]
            raise CrowdDataError(f"{what} has a non-integer code {show(values[tuple(pos)].item())} at "
                                 f"{where}{tuple(int(p) for p in pos)}")
        huge = np.abs(values) > MAX_CODE
        if huge.any():
            pos = np.argwhere(huge)[0]
            raise CrowdDataError(f"{what} has a code {values[tuple(pos)].item():g} at "
                                 f"{where}{tuple(int(p) for p in pos)}, too large for an exact "
                                 "integer code")
        return values.astype(np.int64)
    # item and annotator codes index the ids (no class codes); ids are read by from_frame
    coded = what.endswith(("item codes", "annotator codes", "annotator ids"))
    ids = "; ids (not codes) are read by Annotations.from_frame" \
        if coded and values.dtype.kind in "USOT" else ""
    raise CrowdDataError(f"{what} must hold integer {'codes' if coded else 'class codes'}, got "
                         f"dtype {values.dtype}{ids}")


def label_matrix_problem(L: np.ndarray, n_classes: int) -> Optional[tuple]:
    """The first bad entry of a label matrix (-1 = missing, codes ``0..n_classes-1``), or None.

    Returns ``(reason, row, column, value)`` with reason ``"nan"``, ``"inf"``, ``"fraction"``
    (not an integer), ``"below"`` (< -1) or ``"above"`` (>= n_classes). An integer matrix costs
    two reductions; positions are searched only when something is wrong. Shared by
    :meth:`Annotations.from_label_matrix` and the Snorkel adapter, which word the error.
    """
    if L.size == 0:
        return None
    if L.dtype.kind == "b":
        L = L.view(np.uint8)
    if L.dtype.kind == "f":
        lo, hi = np.min(L), np.max(L)  # NaN propagates
        finite_ints = np.isfinite(lo) and np.isfinite(hi)
        if not finite_ints or (L != np.floor(L)).any():
            for reason, mask in (("nan", np.isnan), ("inf", np.isinf),
                                 ("fraction", lambda a: np.isfinite(a) & (a != np.floor(a)))):
                hit = mask(L)
                if hit.any():
                    r, c = np.argwhere(hit)[0]
                    return reason, int(r), int(c), L[r, c].item()
    else:
        lo, hi = L.min(), L.max()
    if lo >= -1 and hi < n_classes:
        return None
    bad = L < -1
    if bad.any():
        r, c = np.argwhere(bad)[0]
        return "below", int(r), int(c), L[r, c].item()
    r, c = np.argwhere(L >= n_classes)[0]
    return "above", int(r), int(c), L[r, c].item()


# ----------------------------------------------------------------------------- arrays
def as_matrix(data: Any, what: str, noun: str = "a code") -> np.ndarray:
    """``np.asarray(data)``, raising :class:`CrowdDataError` on ragged rows (naming the first
    row whose length differs from row 0's) instead of numpy's "inhomogeneous shape" error;
    ``noun``: what one entry should be (messages say "not a code"). An ``np.matrix`` (what
    ``scipy.sparse``'s ``todense()`` returns) becomes a plain array: its rows index as 2-d."""
    if isinstance(data, np.matrix):
        return np.asarray(data)
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, (pd.DataFrame, pd.Series)):
        return data.to_numpy()
    if sp.issparse(data):   # numpy reads it as one object (a "shape ()" error)
        why = ": its absent entries would read as 0, a class code, not as missing" \
            if noun == "a code" else ""
        raise CrowdDataError(f"{what} must be a dense array, got a scipy sparse "
                             f"{type(data).__name__} of shape {data.shape}{why}")
    try:
        arr = np.asarray(data)
        # numbers mixed with strings become all text: keep the types to name the string
        return np.asarray(data, dtype=object) if arr.dtype.kind in "US" else arr
    except (ValueError, TypeError) as exc:
        rows = list(data) if isinstance(data, (list, tuple)) else None
        if rows:
            def size(row: Any) -> Optional[int]:
                return len(row) if isinstance(row, (list, tuple, np.ndarray)) else None
            width = size(rows[0])
            for r, row in enumerate(rows):
                inner = [c for c, v in enumerate(row) if size(v) is not None] \
                    if size(row) == width and width else []
                if inner:
                    v = row[inner[0]]
                    raise CrowdDataError(f"{what}: the entry at row {r}, column {inner[0]} is a "
                                         f"{type(v).__name__} {show(v)}, not {noun}") from None
                if size(row) != width:
                    got = f"has {size(row)} entries" if size(row) is not None else \
                        f"is {type(row).__name__} {show(row)}, not a row of entries,"
                    raise CrowdDataError(f"{what}: row {r} {got} but row 0 has "
                                         f"{width if width is not None else 'no'} entries; "
                                         "rows must all have one length") from None
        raise CrowdDataError(f"{what} is not a rectangular array ({exc})") from None


def number_cells(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, Optional[int]]:
    """Which cells of an object array (any shape) read as numbers: ``(number, missing,
    mixed)``, two masks of ``raw``'s shape and the flat position of the first number
    beside booleans, or None.

    Numbers are ints, floats and numpy numbers; missing cells (None, ``pd.NA``, NaN) count
    as numbers. Booleans are the integer codes 0 and 1, as a bool column or matrix reads
    (and :func:`booleans_as_codes`), unless a present cell is another number: then they are
    refused (``mixed``), as :func:`factorize_labels` refuses a column mixing True and 2.
    Text and other objects are refused."""
    kind = pd.Series(raw.ravel(), dtype=object).map(
        lambda v: 0 if v is None or v is pd.NA or (isinstance(v, (float, np.floating))
                                                   and v != v)
        else 1 if isinstance(v, (bool, np.bool_))
        else 2 if isinstance(v, (int, float, np.number)) else 3).to_numpy()
    mixed = int(np.argmax(kind == 2)) if (kind == 1).any() and (kind == 2).any() else None
    number = (kind == 0) | (kind == 2) | ((kind == 1) & (mixed is None))
    return number.reshape(raw.shape), (kind == 0).reshape(raw.shape), mixed


def numeric_matrix(m: np.ndarray, what: str, noun: str = "numeric codes") -> np.ndarray:
    """A 2-d array of numbers (object arrays converted to float); a string, list or other
    non-number entry raises naming its (row, column); ``noun``: what the entries should be."""
    if m.dtype == object:
        number, missing, mixed = number_cells(m)
        if not number.all():
            r, c = np.unravel_index(int(np.argmax(~number)), m.shape)
            v = m[r, c]
            beside = ""
            if mixed is not None:   # booleans read as 0 and 1 only where all cells are
                r2, c2 = np.unravel_index(mixed, m.shape)
                beside = (f" beside {type(m[r2, c2]).__name__} {show(m[r2, c2])} at row {r2}, "
                          f"column {c2} (booleans and numbers mixed: give the cells one type)")
            raise CrowdDataError(f"{what} must be {noun}: {type(v).__name__} {show(v)} at "
                                 f"row {r}, column {c}{beside}")
        with np.errstate(over="ignore"):
            try:
                m = np.where(missing, np.nan, m).astype(np.float64)
            except OverflowError:  # an int beyond float range
                r, c = next((r, c) for (r, c), v in np.ndenumerate(m)
                            if not missing[r, c] and abs(v) > MAX_CODE)
                raise CrowdDataError(f"{what} has a code {show(m[r, c])} at (row, column) "
                                     f"({r}, {c}), too large for an exact integer code") from None
    if m.dtype.kind not in "iufb":
        what_kind = "text" if m.dtype.kind in "UST" else f"dtype {m.dtype}"
        raise CrowdDataError(f"{what} must be {noun}, got {what_kind} (e.g. "
                             f"{show(m.flat[0]) if m.size else 'nothing'} at row 0, column 0)")
    return m


def compact_codes(n_distinct: int, top: int) -> bool:
    """True when non-negative integer labels with ``n_distinct`` values and maximum ``top``
    may keep their values as class codes ``0..top`` (at most ``n_distinct + 32`` of them
    unseen); otherwise they are factorised into their distinct values, so that one stray
    value such as ``10**9`` never makes 10**9 classes."""
    return top + 1 <= 2 * n_distinct + 32


def _int_values(raw: np.ndarray, where: Callable[[int], str], what: str) -> np.ndarray:
    """int64 values of integer or integral-float labels; the first bad one is located."""
    values = raw
    if values.dtype == object:
        try:
            values = values.astype(np.int64) if pd.api.types.infer_dtype(
                values, skipna=False) == "integer" else values.astype(np.float64)
        except OverflowError:
            n = next(i for i, v in enumerate(raw) if abs(int(v)) > MAX_CODE)
            raise CrowdDataError(f"{what} {show(raw[n])} at {where(n)} is too large for an "
                                 "integer class code (beyond 2**53)") from None
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    _check_int64(values, lambda pos: f"{what} {show(values[pos])} at {where(int(pos[0]))}")
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            n = int(np.argmax(bad))
            kind = "non-integer" if np.isfinite(values[n]) else "non-finite"
            raise CrowdDataError(f"{kind} {what} {show(values[n].item())} at {where(n)}")
        huge = np.abs(values) > MAX_CODE
        if huge.any():
            n = int(np.argmax(huge))
            raise CrowdDataError(f"{what} {values[n].item():g} at {where(n)} is too large for an "
                                 "integer class code (beyond 2**53)")
        values = values.astype(np.int64)
    return values.astype(np.int64, copy=False)


def _int_classes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, classes) of non-negative int64 labels: the values themselves and ``0..max``
    when compact (:func:`compact_codes`), else the inverse of their sorted distinct values."""
    if not len(values):
        return values, np.arange(1)
    top = int(values.max())
    if top < 4 * len(values) + 64:   # cheap distinct count by bincount
        seen = np.bincount(values, minlength=top + 1) > 0
        n_distinct = int(seen.sum())
        if compact_codes(n_distinct, top):
            return values, np.arange(top + 1)
        return (np.cumsum(seen) - 1)[values], np.flatnonzero(seen)
    classes, codes = np.unique(values, return_inverse=True)
    if compact_codes(len(classes), top):
        return values, np.arange(top + 1)
    return codes.astype(np.int64), classes


_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "boolean")


def _first_other_type(raw: np.ndarray) -> tuple[int, int]:
    """Positions of the first value and of the first value of another type (error path)."""
    kinds = pd.Series(raw, dtype=object).map(
        lambda v: "number" if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
        else type(v).__name__).to_numpy()
    other = kinds != kinds[0]
    return 0, int(np.argmax(other))


def _check_scalars(column: pd.Series, kind: str, what: str, where: Callable[[int], str]) -> None:
    """Raise on list/dict/set values and on a column that mixes types (``1`` and ``"1"``)."""
    if kind in _NUMBER_KINDS + ("string", "empty"):
        return
    raw = column.to_numpy()
    scalar = pd.Series(raw, dtype=object).map(
        lambda v: not isinstance(v, (list, tuple, dict, set, frozenset, np.ndarray))).to_numpy()
    if not scalar.all():
        n = int(np.argmax(~scalar))
        raise CrowdDataError(f"{what} {show(raw[n])} at {where(n)} is a {type(raw[n]).__name__}; "
                             f"each {what} must be one value (a string or an integer)")
    whats = "classes" if what == "class" else f"{what}s"   # a counts frame's columns
    if kind in ("mixed", "mixed-integer"):
        a, b = _first_other_type(raw)
        raise CrowdDataError(
            f"{whats} mix types: {type(raw[a]).__name__} {show(raw[a])} at {where(a)} and "
            f"{type(raw[b]).__name__} {show(raw[b])} at {where(b)}; give the column one type "
            "(e.g. all strings: .astype(str))")
    raise CrowdDataError(f"{whats} must be strings or integers, got {kind} values "
                         f"(e.g. {show(raw[0])} at {where(0)})")


def check_id_values(ids: Any, what: str, where: Callable[[int], str]) -> None:
    """Raise on a missing id (NaN/None), a list/dict/tuple id, or ids that mix types (``1``
    and ``"1"``), the rules of a frame's id columns, for ids given otherwise (a wide frame's
    index and columns); ``where(n)`` names position ``n``."""
    values = np.asarray(ids if not isinstance(ids, pd.MultiIndex) else ids.to_flat_index(),
                        dtype=object)
    missing = pd.isna(values)
    if missing.any():
        n = int(np.argmax(missing))
        raise CrowdDataError(f"missing {what} id ({show(values[n])}) at {where(n)}")
    column = pd.Series(values, dtype=object)
    _check_scalars(column, pd.api.types.infer_dtype(column, skipna=False), what, where)


def factorize_labels(column: pd.Series, where: Callable[[int], str],
                     what: str = "label") -> tuple[np.ndarray, np.ndarray]:
    """Label values of one frame column -> ``(codes (n,) int64, classes (k,))``.

    Strings: the sorted distinct values. Integers (or integral floats, booleans): their
    values as codes ``0..max`` when compact (:func:`compact_codes`), else their sorted
    distinct values; never ``range(max)`` for a stray large value. Raises
    :class:`CrowdDataError` naming ``where(n)`` for a negative, non-integer, non-finite or
    too large number, a list/dict value, or a column that mixes types.
    """
    kind = pd.api.types.infer_dtype(column, skipna=False)
    _check_scalars(column, kind, what, where)
    if kind == "string":
        codes, classes = pd.factorize(column, sort=True)
        return codes.astype(np.int64), np.asarray(classes, dtype=object)
    values = _int_values(column.to_numpy(), where, what)
    neg = values < 0
    if neg.any():
        n = int(np.argmax(neg))
        raise CrowdDataError(f"negative {what} {values[n]} at {where(n)}; drop missing "
                             "annotations from a long frame instead of coding them")
    return _int_classes(values)


def infer_classes(raw: np.ndarray, where: Callable[[int], str]
                  ) -> tuple[list, Optional[np.ndarray]]:
    """The classes of label values given without them, and their codes when the labels are
    their own codes (compact integers), else None.

    The rule of :meth:`Annotations.from_frame` (:func:`factorize_labels`), applied by the
    partitioned fits of ``crowd_keras.distributed`` to the distinct values of a column, so
    both code the classes alike (the decision depends only on the distinct values).
    """
    codes, classes = factorize_labels(pd.Series(raw), where)
    own = classes.dtype.kind in "iu" and np.array_equal(classes, np.arange(len(classes)))
    return list(classes), (codes if own else None)


def factorize_ids(column: pd.Series, what: str,
                  where: Callable[[int], str]) -> tuple[np.ndarray, np.ndarray]:
    """Identifiers of one frame column -> ``(codes (n,) int64, sorted distinct ids (m,))``.

    Non-negative integer ids below ``4 n + 64`` are coded with a bincount (no hash table, no
    sort of the column); arrow string ids word by word where that pays
    (:mod:`crowd_keras.string_codes`); others by ``pandas.factorize``. Raises on list/dict
    values and on a column that mixes types (``1`` and ``"1"`` would otherwise be two items
    printed alike).
    """
    kind = pd.api.types.infer_dtype(column, skipna=False)
    _check_scalars(column, kind, what, where)
    raw = column.to_numpy() if column.dtype.kind in "iu" else None
    if raw is not None and len(raw):
        lo, hi = int(raw.min()), int(raw.max())
        if lo >= 0 and hi < 4 * len(raw) + 64:
            return dense_ranks(raw, hi + 1)
    codes, uniques = column_codes(column)
    ids = np.asarray(uniques)
    return codes, ids if ids.dtype.kind in "iub" else ids.astype(object)


def keyed_order(key: np.ndarray, size: int, payload: Optional[np.ndarray] = None,
                payload_size: int = 1) -> Optional[tuple]:
    """Stable order of non-negative int64 ``key (n,)`` values below ``size``: ``(order (n,),
    the keys in that order, payload (n,) in that order or None)``; None when a key and a
    row index do not fit in 63 bits together.

    One sort of values, not of indices: each key shifted up with its row's index below it,
    so that equal keys keep their rows' order (stable) and the index comes back out of the
    sorted values. numpy sorts int64 values with its SIMD quicksort, several times faster
    than an argsort or two counting sorts and the gathers between them. ``payload``, non-negative integers
    below ``payload_size`` (labels), rides in the lowest bits where all three fit (one pass
    to take it out instead of a gather), else it is gathered.
    """
    n = len(key)
    row_bits = max(int(n - 1).bit_length(), 1)
    key_bits = int(max(size, 1) - 1).bit_length()
    if key_bits + row_bits > 63:
        return None
    low = int(max(payload_size, 1) - 1).bit_length() if payload is not None else 0
    if key_bits + row_bits + low > 63:
        low = 0   # no room: the payload is gathered
    packed = key << (row_bits + low)
    rows = np.arange(n, dtype=np.int64)
    if low:
        rows <<= low
        rows |= payload
    packed |= rows
    packed.sort()
    carried = None
    if low:
        carried = packed & ((1 << low) - 1)
        packed >>= low
    order = np.bitwise_and(packed, (1 << row_bits) - 1, out=rows)
    packed >>= row_bits
    if payload is not None and carried is None:
        carried = payload[order]
    return order, packed, carried


def sort_order(items: np.ndarray, annotators: np.ndarray, n_items: int,
               n_annotators: int) -> Optional[np.ndarray]:
    """Stable order (n,) sorting annotations by (item, annotator); None for fewer than two
    (:func:`keyed_order` is faster where its packed key fits: :class:`Annotations` tries it
    first, and tells an input already in order itself).

    Two stable counting sorts (by annotator, then by item: O(n + items + annotators))
    through pandas' group sorter, which falls back to a merge sort where counting does not
    pay.
    """
    if len(items) < 2:
        return None
    try:  # stable counting sorts, O(n + groups)
        from pandas.core.sorting import get_group_index_sorter
    except ImportError:  # pragma: no cover - a pandas without it: a stable comparison sort
        return np.lexsort((annotators, items))
    by_ann = get_group_index_sorter(annotators.astype(np.intp, copy=False), max(n_annotators, 1))
    by_item = get_group_index_sorter(items[by_ann].astype(np.intp, copy=False), max(n_items, 1))
    return by_ann[by_item]


# ----------------------------------------------------------------------------- matrices
def dense_codes(matrix: Any, missing: Any, classes: Optional[Sequence], *,
                allow_empty: bool = False) -> tuple:
    """Validate an items × annotators matrix of class codes (``missing`` where absent).

    Returns ``(rows, cols, labels, classes, shape)``: the (n,) positions and codes of the
    present entries in row-major order, and the classes (``None`` = ``0..max code``; when
    the codes are not compact, e.g. one stray ``10**9``, the sorted distinct codes, with
    ``labels`` re-coded). Bad entries raise naming their row and column.
    """
    m = as_matrix(matrix, "dense annotations")
    if m.ndim != 2:
        raise CrowdDataError(f"dense annotations must be 2-d (items × annotators), got shape {m.shape}")
    if m.size == 0 and not allow_empty:
        raise CrowdDataError(f"dense annotations are empty (shape {m.shape})")
    m = numeric_matrix(m, "dense annotations")
    if missing is not None and (isinstance(missing, (bool, np.bool_)) or
                                not isinstance(missing, (int, float, np.number))):
        raise TypeError(f"missing must be a number (the code of an absent annotation, e.g. -1) "
                        f"or NaN, got {type(missing).__name__} {missing!r}")
    if missing is None or (isinstance(missing, float) and np.isnan(missing)):
        present = ~np.isnan(m) if m.dtype.kind == "f" else np.ones(m.shape, bool)
    else:
        present = m != missing
    # the present entries only (row-major, as np.nonzero gives them): a mostly empty matrix
    # is not copied whole twice more to check and convert its absent cells
    rows, cols = np.nonzero(present)
    try:
        labels = integer_codes(m[rows, cols], "dense annotations", "(row, column) ")
    except CrowdDataError:   # the whole matrix, to name the bad entry's (row, column)
        integer_codes(np.where(present, m, 0), "dense annotations", "(row, column) ")
        raise
    neg = labels < 0
    if neg.any():
        n = int(np.argmax(neg))
        raise CrowdDataError(f"negative code {labels[n]} at row {rows[n]}, column {cols[n]}; "
                             f"only the missing marker {show(missing)} may be negative")
    if classes is None and len(labels):
        top = int(labels.max())
        distinct = np.unique(labels) if top >= 2 ** 20 else np.flatnonzero(np.bincount(labels))
        if not compact_codes(len(distinct), top):  # e.g. one 10**9: classes = values seen
            labels, classes = np.searchsorted(distinct, labels), distinct
    return rows, cols, labels, classes, m.shape


def label_matrix_codes(L: Any, cardinality: Optional[int],
                       classes: Optional[Sequence]) -> tuple[np.ndarray, np.ndarray]:
    """Validate a Snorkel label matrix (items × functions, -1 = abstain, codes ``0..k-1``).

    Returns ``(m, classes)``: the matrix as an array (no copy when it is one) and the
    classes (``classes``, ``0..cardinality-1`` or ``0..max``). Raises naming the row and
    column of the first bad entry (see :func:`label_matrix_problem`).
    """
    m = as_matrix(L, "dense annotations")
    if m.ndim != 2:
        raise CrowdDataError(f"dense annotations must be 2-d (items × annotators), got shape {m.shape}")
    m = numeric_matrix(m, "dense annotations")
    if m.size == 0:
        raise CrowdDataError(f"dense annotations are empty (shape {m.shape})")
    if classes is not None and not len(classes):   # no class: no model (cardinality >= 1)
        raise CrowdDataError("at least one class is needed; classes= is empty")
    if cardinality is not None:
        k = check_count(cardinality, "cardinality", 1)
        if classes is None:
            classes = list(range(k))
        elif len(classes) != k:   # else one of the two would be ignored silently
            raise CrowdDataError(f"cardinality={k} disagrees with the {len(classes)} classes "
                                 f"{ids_array(classes).tolist()}; give one of them")
    if classes is None:
        top = float(m.max()) if m.size else -1.0
        n_classes = int(top) + 1 if np.isfinite(top) and top >= 0 else 1
        if n_classes > 64 and np.isfinite(top) and not compact_codes(
                len(np.unique(m[m >= 0])), n_classes - 1):
            r, c = np.argwhere(m == top)[0]
            raise CrowdDataError(
                f"label code {int(top)} at row {r}, column {c} would make {n_classes} classes "
                "from a few distinct codes; pass cardinality= (codes 0..k-1, -1 = abstain)")
    else:
        n_classes = len(classes)
    bad = label_matrix_problem(m, n_classes)
    if bad is not None:
        reason, r, c, value = bad
        if reason == "nan":
            raise CrowdDataError(f"dense annotations contains NaN at (row, column) ({r}, {c}); "
                                 "use the missing marker (-1) for absent annotations")
        if reason in ("inf", "fraction"):
            kind = "non-integer" if reason == "fraction" else "non-finite"
            raise CrowdDataError(f"dense annotations has a {kind} code {show(value)} at "
                                 f"(row, column) ({r}, {c})")
        if reason == "below":
            raise CrowdDataError(f"negative code {value:g} at row {r}, column {c}: below -1, "
                                 "the missing marker (abstain)")
        shown = list(classes) if classes is not None else list(range(n_classes))
        raise CrowdDataError(f"label code {value:g} at row {r}, column {c} is outside the "
                             f"{n_classes} classes {shown[:20]}")
    return m, np.asarray(classes) if classes is not None else np.arange(n_classes)


def spelled_number(item: Any) -> Any:
    """The number a text class such as ``"4"`` or ``"2.5"`` spells (a Label Studio
    ``<Choices>`` scale's values are texts), else the class itself."""
    if not isinstance(item, str):
        return item
    try:
        number = float(item)
    except ValueError:
        return item
    return number if np.isfinite(number) else item
