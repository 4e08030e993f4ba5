"""The label model fitted on an export when the caller passes none, the check that a given
model belongs to the export, and the check of what predictions label (version, object)."""
from __future__ import annotations

from typing import Any

import numpy as np

from crowd_keras.aggregation.registry import DEFAULT_LABEL_MODEL, get_label_model
from crowd_keras.errors import Argument, CrowdDataError, Message

from .reader import LabelStudioExport

__all__ = ["ensure_fitted", "prediction_target"]


def ensure_fitted(export: LabelStudioExport, model: Any) -> Any:
    """``model`` (a new ``DEFAULT_LABEL_MODEL`` when None; a name is looked up in the label
    model registry, as a span export's sequence model is), fitted on ``export.annotations``
    if it is not fitted yet; raises when it was fitted on other annotations."""
    if model is None or isinstance(model, str):
        model = get_label_model(DEFAULT_LABEL_MODEL if model is None else model)
    if not hasattr(model, "posteriors_"):
        model.fit(export.annotations)
    fitted = model.annotations_
    if not (np.array_equal(fitted.item_ids, export.task_ids)
            and np.array_equal(fitted.annotator_ids, export.annotator_ids)
            and np.array_equal(fitted.classes, export.classes)):
        raise CrowdDataError("the label model was fitted on other annotations than this export's; "
                             "fit it on export.annotations (or pass an unfitted model)")
    return model


def prediction_target(export: Any, model_version: Any, to_name: Any) -> str:
    """The object name predictions label (``to_name`` or the export's); raises on a bad
    ``model_version`` or when neither names the object."""
    if not isinstance(model_version, str) or not model_version:
        raise CrowdDataError(f"model_version must be a non-empty string, got {model_version!r}")
    if to_name is not None and (not isinstance(to_name, str) or not to_name):
        raise CrowdDataError(f"to_name must be the name of the labeled object (a non-empty "
                             f"string), got {to_name!r}")
    to_name = to_name or export.to_name
    if not to_name:
        raise CrowdDataError(Message(
            "the {fmt} export does not name the object control '{control}' labels; pass "
            "{to_name} (the name= of the object tag its toName points to, e.g. 'text' for "
            "<Text name=\"text\" value=\"$text\"/>) or read the export with {config}",
            fmt=export.format, control=export.control, to_name=Argument("to_name"),
            config=Argument("label_config")))
    return to_name
