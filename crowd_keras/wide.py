"""cleanlab's wide layout of annotations: an items × annotators frame (or array) of class
codes with NaN where an annotator gave no label (``cleanlab.multiannotator``'s
``labels_multiannotator``). :func:`wide_codes` validates it for ``Annotations.from_wide``;
:func:`to_wide` writes it back."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .errors import CrowdDataError

__all__ = ["wide_codes", "to_wide"]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def wide_codes(frame: Any, n_classes: Optional[int] = None,
               classes: Optional[Sequence] = None) -> Tuple[np.ndarray, ...]:
    """``(rows, cols, codes, item_ids, annotator_ids, n_classes)`` of the non-NaN cells.

    Args:
        frame: ``pandas.DataFrame`` (index = item ids, columns = annotator ids) or a 2-d
            array (ids ``0..n-1``) of class codes ``0..K-1``, NaN (or ``pd.NA``/None) where
            there is no label.
        n_classes, classes: K (default: the largest code + 1, or ``len(classes)``).

    Raises:
        CrowdDataError: a cell that is not a whole non-negative number, or a code ``>= K``,
        naming the item (row), the annotator (column) and the value.
    """
    if isinstance(frame, pd.DataFrame):
        item_ids, annotator_ids = frame.index.to_numpy(), frame.columns.to_numpy()
        try:
            values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            values = None
        if values is None:       # a cell that is not a number: find it
            raw = frame.to_numpy(dtype=object)
            for r, c in zip(*np.nonzero(~pd.isna(raw))):
                try:
                    float(raw[r, c])
                except (TypeError, ValueError):
                    raise CrowdDataError(
                        f"wide annotations: label {raw[r, c]!r} of item {_plain(item_ids[r])!r} "
                        f"(row {r}), annotator {_plain(annotator_ids[c])!r} (column {c}) is "
                        "not a class code (whole numbers 0..K-1, NaN where missing)") from None
            values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        try:
            values = np.asarray(frame, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise CrowdDataError(f"wide annotations must be numbers with NaN where missing: "
                                 f"{err}") from None
        if values.ndim != 2:
            raise CrowdDataError(f"wide annotations must be 2-d (items × annotators), got shape "
                                 f"{values.shape}")
        item_ids, annotator_ids = np.arange(values.shape[0]), np.arange(values.shape[1])
    present = ~np.isnan(values)
    rows, cols = np.nonzero(present)
    labels = values[rows, cols]
    k = len(classes) if classes is not None else n_classes
    if n_classes is not None and classes is not None and int(n_classes) != len(classes):
        raise CrowdDataError(f"n_classes={n_classes} but {len(classes)} classes given")
    bad = ~np.isfinite(labels) | (labels != np.round(labels)) | (labels < 0)
    what = "not a class code (whole numbers 0..K-1, NaN where missing)"
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
