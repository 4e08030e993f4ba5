"""The label model fitted on an export when the caller passes none, and the check that a given
model belongs to the export."""
from __future__ import annotations

from typing import Any

import numpy as np

from crowd_keras.aggregation.registry import DEFAULT_LABEL_MODEL, get_label_model
from crowd_keras.errors import CrowdDataError

from .reader import LabelStudioExport


def _ensure_fitted(export: LabelStudioExport, model: Any) -> Any:
    """``model`` (a new ``DEFAULT_LABEL_MODEL`` when None), fitted on ``export.annotations`` if
    it is not fitted yet; raises when it was fitted on other annotations."""
    if model is None:
        model = get_label_model(DEFAULT_LABEL_MODEL)
    if not hasattr(model, "posteriors_"):
        model.fit(export.annotations)
    fitted = model.annotations_
    if not (np.array_equal(fitted.item_ids, export.task_ids)
            and np.array_equal(fitted.annotator_ids, export.annotator_ids)
            and np.array_equal(fitted.classes, export.classes)):
        raise CrowdDataError("the label model was fitted on other annotations than this export's; "
                             "fit it on export.annotations (or pass an unfitted model)")
    return model
