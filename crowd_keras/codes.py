"""Turning user identifiers and label values into validated integer codes.

The checks behind :class:`~crowd_keras.annotations.Annotations`' constructors: each raises
:class:`~crowd_keras.CrowdDataError` naming the position (row, column, slot) and the value.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

import numpy as np
import pandas as pd

from .errors import CrowdDataError

__all__ = ["show", "frozen", "ids_array", "check_unique_ids", "integer_codes",
           "coerce_int_labels", "infer_classes", "label_matrix_problem"]


def show(value: Any) -> str:
    """repr() of a user value without numpy's ``np.int64(...)`` wrapping."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def ids_array(ids: Iterable[Any]) -> np.ndarray:
    """Identifiers as a 1-d array; integers stay integers, anything else is an object array."""
    arr = np.asarray(list(ids) if not isinstance(ids, (np.ndarray, pd.Index)) else ids)
    if arr.ndim != 1:
        raise CrowdDataError(f"identifiers must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        arr = arr.astype(object)
    return frozen(arr)


def check_unique_ids(ids: np.ndarray, what: str) -> None:
    uniq, counts = np.unique(ids.astype(str) if ids.dtype == object else ids, return_counts=True)
    if (counts > 1).any():
        raise CrowdDataError(f"{what} ids must be unique; repeated: {list(uniq[counts > 1][:5])}")


def integer_codes(values: np.ndarray, what: str, where: str) -> np.ndarray:
    """Validate that `values` hold integer codes (ints or integral floats, no NaN)."""
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    if values.dtype.kind == "b":
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():
            pos = np.argwhere(nan)[0]
            raise CrowdDataError(f"{what} contains NaN at {where}{tuple(int(p) for p in pos)}; "
                                 "use the missing marker (-1) for absent annotations")
        frac = values != np.round(values)
        if frac.any():
            pos = np.argwhere(frac)[0]
            raise CrowdDataError(f"{what} has a non-integer code {show(values[tuple(pos)].item())} at "
                                 f"{where}{tuple(int(p) for p in pos)}")
        return values.astype(np.int64)
    raise CrowdDataError(f"{what} must hold integer class codes, got dtype {values.dtype}")


def coerce_int_labels(raw: np.ndarray, where: Callable[[int], str]) -> np.ndarray:
    """Integer labels (ints or integral floats, non-negative) as int64; ``where(n)`` names row n."""
    values = np.asarray(raw)
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            n = int(np.argmax(bad))
            raise CrowdDataError(f"non-integer label {show(values[n].item())} at {where(n)}")
    codes = values.astype(np.int64)
    if (codes < 0).any():
        n = int(np.argmax(codes < 0))
        raise CrowdDataError(f"negative label {codes[n]} at {where(n)}; drop missing "
                             "annotations from a long frame instead of coding them")
    return codes


def infer_classes(raw: np.ndarray, where: Callable[[int], str]
                  ) -> tuple[list, Optional[np.ndarray]]:
    """The classes of a label column given without them, and the codes when they are the labels.

    Numbers (integers, integral floats, booleans) give the classes ``0..max`` and are their own
    codes (checked by :func:`coerce_int_labels`; ``where(n)`` names row n); any other labels
    give their distinct values sorted by ``str`` (codes None: look the labels up). The rule of
    :meth:`Annotations.from_frame`, shared with the partitioned fits of ``crowd_keras.distributed``
    so that both code the classes alike.
    """
    kind = pd.api.types.infer_dtype(raw, skipna=False)
    if kind in ("integer", "floating", "mixed-integer-float", "boolean"):
        codes = coerce_int_labels(raw.astype(float) if kind != "integer" else raw, where)
        return (list(range(int(codes.max()) + 1)) if len(codes) else [0]), codes
    return sorted(pd.unique(raw).tolist(), key=str), None


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
