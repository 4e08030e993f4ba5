"""The label model fitted on an export when the caller passes none, and the check that a given
model belongs to the export."""
from __future__ import annotations

from typing import Any

import numpy as np

from crowd_keras.errors import CrowdDataError

from .reader import LabelStudioExport

# Registry name of the label model used when none is passed (predictions_from_model,
# annotator_report); the only place that names it.
DEFAULT_LABEL_MODEL = "dawid_skene"


def _ensure_fitted(export: LabelStudioExport, model: Any) -> Any:
    """``model`` (a new ``DEFAULT_LABEL_MODEL`` when None), fitted on ``export.annotations`` if
    it is not fitted yet; raises when it was fitted on other annotations."""
    if model is None:
        from crowd_keras.aggregation import get_label_model
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
