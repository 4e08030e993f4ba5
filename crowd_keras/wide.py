"""cleanlab's wide layout of annotations: an items × annotators frame (or array) of class
codes with NaN where an annotator gave no label (``cleanlab.multiannotator``'s
``labels_multiannotator``). :func:`wide_codes` validates it for ``Annotations.from_wide``;
:func:`to_wide` writes it back."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .arguments import check_count
from .codes import (MAX_CODE, alike_hint, as_matrix, booleans_as_codes, check_id_values,
                    compact_codes, ids_array, number_cells, numeric_matrix)
from .errors import CrowdDataError

__all__ = ["wide_codes", "to_wide"]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _named_cells(raw: np.ndarray, missing: np.ndarray, classes: Sequence,
                 item_ids: np.ndarray, annotator_ids: np.ndarray) -> np.ndarray:
    """The cells of ``raw`` (items, annotators) object, where some cell is no number, read as
    class names: their codes as floats, NaN where ``missing`` (of ``raw``'s shape). A present
    cell that is not a class raises, named."""
    cells = pd.Series(raw[~missing], dtype=object)
    try:
        found = pd.Index(list(classes)).get_indexer(booleans_as_codes(cells, classes))
    except TypeError:   # an unhashable cell (a list): named as no class below
        found = np.array([-1 if isinstance(v, (list, dict, set, np.ndarray)) else 0
                          for v in cells])
    if (found < 0).any():
        r, c = (int(v) for v in np.argwhere(~missing)[int(np.argmax(found < 0))])
        raise CrowdDataError(
            f"wide annotations: label {_plain(raw[r, c])!r} of item {_plain(item_ids[r])!r} "
            f"(row {r}), annotator {_plain(annotator_ids[c])!r} (column {c}) is not one of "
            f"the classes {ids_array(classes).tolist()} (cells that are not all numbers are "
            f"read as class names){alike_hint(raw[r, c], ids_array(classes), 'class')}")
    out = np.full(raw.shape, np.nan)
    out[~missing] = found
    return out


def wide_codes(frame: Any, n_classes: Optional[int] = None,
               classes: Optional[Sequence] = None) -> Tuple[np.ndarray, ...]:
    """``(rows, cols, codes, item_ids, annotator_ids, n_classes)`` of the non-NaN cells.

    Args:
        frame: ``pandas.DataFrame`` (index = item ids, columns = annotator ids) or a 2-d
            array (ids ``0..n-1``) of class codes ``0..K-1``, NaN (or ``pd.NA``/None) where
            there is no label; with ``classes``, cells that are not all numbers are read as
            class names (what ``Annotations.to_wide(class_names=True)`` writes).
        n_classes, classes: K (default: the largest code + 1, or ``len(classes)``).

    Raises:
        CrowdDataError: a cell that is not a whole non-negative number, or a code ``>= K``,
        naming the item (row), the annotator (column) and the value.
    """
    if n_classes is not None:
        n_classes = check_count(n_classes, "n_classes", 1)
    if isinstance(frame, pd.DataFrame):
        check_id_values(frame.index, "item", lambda n: f"row {n} of the wide frame's index")
        check_id_values(frame.columns, "annotator",
                        lambda n: f"column {n} of the wide frame")
        item_ids, annotator_ids = frame.index.to_numpy(), frame.columns.to_numpy()
        # numbers (a bool column too, as from_dense reads a bool matrix); object columns are
        # checked per cell, so that the text "1" is not read as the code 1
        numeric = all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes)
        values = None
        if numeric:
            values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
        else:       # text, booleans or other objects: class names (with classes), or find
            # the first cell that is no number
            raw = frame.to_numpy(dtype=object)
            # booleans (a bool column with a missing cell is an object column) are 0 and 1,
            # as in a bool column and in from_frame / from_dense, unless beside numbers
            number, missing, mixed = number_cells(raw)
            if classes is not None and not number.all():   # class names, not codes
                raw = _named_cells(raw, missing, classes, item_ids, annotator_ids)
                number = np.ones(raw.shape, bool)
            if not number.all():
                r, c = (int(v) for v in np.argwhere(~number)[0])
                why = "not a class code (whole numbers 0..K-1, NaN where missing)"
                if isinstance(raw[r, c], str):
                    why += "; cells of class names are read with classes="
                if mixed is not None:
                    r2, c2 = np.unravel_index(mixed, raw.shape)
                    why += (f": a boolean beside numbers (label {_plain(raw[r2, c2])!r} of "
                            f"item {_plain(item_ids[r2])!r}, annotator "
                            f"{_plain(annotator_ids[c2])!r}); give the cells one type")
                raise CrowdDataError(
                    f"wide annotations: label {_plain(raw[r, c])!r} of item "
                    f"{_plain(item_ids[r])!r} (row {r}), annotator {_plain(annotator_ids[c])!r} "
                    f"(column {c}) is {why}")
            # to_numpy(na_value=nan) leaves pd.NA in object columns (float() fails on it)
            values = np.where(pd.isna(raw), np.nan, raw).astype(np.float64)
    else:
        values = as_matrix(frame, "wide annotations")
        if values.ndim != 2:
            raise CrowdDataError(f"wide annotations must be 2-d (items × annotators), got shape "
                                 f"{values.shape}")
        values = numeric_matrix(values, "wide annotations",
                                "class codes (numbers, NaN where missing)").astype(np.float64)
        item_ids, annotator_ids = np.arange(values.shape[0]), np.arange(values.shape[1])
    present = ~np.isnan(values)
    rows, cols = np.nonzero(present)
    labels = values[rows, cols]
    k = len(classes) if classes is not None else n_classes
    if n_classes is not None and classes is not None and int(n_classes) != len(classes):
        raise CrowdDataError(f"n_classes={n_classes} but {len(classes)} classes given")
    bad = ~np.isfinite(labels) | (labels != np.round(labels)) | (labels < 0)
    what = "not a class code (whole numbers 0..K-1, NaN where missing)"
    if k is None and not bad.any() and len(labels) and labels.max() >= 64:
        # the classes would be 0..max: one stray large code must not make millions
        top = float(labels.max())
        if top > MAX_CODE or not compact_codes(len(np.unique(labels)), int(top)):
            bad, what = labels == top, (f"a code that would make {top + 1:.6g} classes from "
                                        f"{len(np.unique(labels))} distinct codes; pass "
                                        "n_classes= or classes=")
    if k is not None:
        bad_range = ~bad & (labels >= int(k))
        if bad_range.any() and not bad.any():
            bad, what = bad_range, f"outside the {int(k)} classes (codes 0..{int(k) - 1})"
    if bad.any():
        n = int(np.argmax(bad))
        r, c = int(rows[n]), int(cols[n])
        raise CrowdDataError(f"wide annotations: label {_plain(labels[n])!r} of item "
                             f"{_plain(item_ids[r])!r} (row {r}), annotator "
                             f"{_plain(annotator_ids[c])!r} (column {c}) is {what}")
    codes = labels.astype(np.int64)
    if k is None:
        k = int(codes.max()) + 1 if len(codes) else 1
    return rows, cols, codes, item_ids, annotator_ids, int(k)


def to_wide(items: np.ndarray, annotators: np.ndarray, labels: np.ndarray,
            item_ids: np.ndarray, annotator_ids: np.ndarray) -> pd.DataFrame:
    """Items × annotators float frame of ``labels`` (codes or names as given), NaN where
    absent; index = item ids, columns = annotator ids."""
    values = labels.astype(np.float64) if labels.dtype.kind in "iuf" else labels.astype(object)
    out = np.full((len(item_ids), len(annotator_ids)), np.nan,
                  dtype=values.dtype)
    out[items, annotators] = values
    return pd.DataFrame(out, index=pd.Index(item_ids), columns=pd.Index(annotator_ids))
