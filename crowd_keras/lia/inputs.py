"""The LIA trainer's inputs: features as numbers, annotator features in annotator-code order.

Item features follow the annotations' item codes through
:func:`crowd_keras.features.by_item_id`; these two do the rest of what ``LIATrainer.fit``
reads before building its network.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..codes import rows_by_id, show
from ..errors import CrowdDataError

__all__ = ["by_annotator_id", "numeric_rows"]


def by_annotator_id(features: Any, annotations: Annotations) -> Any:
    """``annotator_features`` in annotator-code order: a frame indexed by the annotations'
    annotator ids is aligned by id (any row order), as item features are by item id; other
    inputs (pandas' default index too) are taken by position."""
    if not isinstance(features, pd.DataFrame):
        return features
    ids = np.asarray(annotations.annotator_ids)
    rows, problem, values = rows_by_id(features.index, ids)
    if problem == "repeats":
        raise CrowdDataError(f"annotator_features' index repeats annotator ids: "
                             f"{show(values[0])}")
    if problem == "types":
        raise CrowdDataError(f"annotator_features' index holds {show(values[0])} "
                             f"({type(values[0]).__name__}) where the annotator ids hold "
                             f"{show(values[1])} ({type(values[1]).__name__}): ids must be "
                             "of one type")
    if problem:
        what = (f"has no row for annotator {show(values[0])}" if problem == "missing"
                else f"has a row for {show(values[0])}, not an annotator of the annotations")
        raise CrowdDataError(f"annotator_features is indexed by annotator id but {what}")
    return features if rows is None else features.iloc[rows]


def numeric_rows(x: np.ndarray) -> np.ndarray:
    """``x`` as numbers: an object array (a frame with a text or nullable-integer column) as
    float32, or a CrowdDataError naming the first cell that is not a number (Keras' own
    message, "Invalid dtype: object", names none)."""
    if x.dtype.kind not in "OUS" or x.ndim == 0:   # a scalar: the caller's shape check
        return x
    cells = x.reshape(-1).astype(object)
    flat = pd.to_numeric(pd.Series(cells), errors="coerce")
    # text is not read as numbers ("1.5" neither); NaN and pd.NA are left to the finite check
    text = np.frompyfunc(lambda v: isinstance(v, (str, bytes)), 1, 1)(cells).astype(bool)
    bad = text | (flat.isna().to_numpy() & ~pd.isna(cells))
    if bad.any():
        at = int(np.argmax(bad))
        row, cell = divmod(at, max(x.size // max(len(x), 1), 1))
        raise CrowdDataError(f"x must hold numbers; row {row}, column {cell} holds "
                             f"{show(cells[at])}")
    return flat.to_numpy(dtype="float32").reshape(x.shape)
