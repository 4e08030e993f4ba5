"""The one fit of a label model on an export (Label Studio's ground truth as gold by
default), the label model fitted when the caller passes none, the check that a given model
belongs to the export, and the check of what predictions label (version, object)."""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from crowd_keras.aggregation.registry import DEFAULT_LABEL_MODEL, get_label_model
from crowd_keras.errors import Argument, CrowdDataError, Message
from crowd_keras.sequences.registry import DEFAULT_SEQUENCE_MODEL, get_sequence_model

from ._records import check_flag
from ._spans import LabelStudioSpans
from .reader import LabelStudioExport

__all__ = ["fit_label_model", "gold_for_fit", "ensure_fitted", "prediction_target"]


def gold_for_fit(export: Union[LabelStudioExport, LabelStudioSpans], model: Any,
                 use_gold: bool = True) -> Optional[np.ndarray]:
    """The ground truth :func:`fit_label_model` holds the export's tasks at: (n_tasks,)
    ``export.gold_codes()`` (-1: no ground truth) when ``use_gold``, ``model`` takes gold
    (``accepts_gold``) and some task has a ground-truth annotation; else None (a span
    export's sequence models take no gold)."""
    check_flag("use_gold", use_gold)
    if not use_gold or isinstance(export, LabelStudioSpans) \
            or not getattr(model, "accepts_gold", False):
        return None
    gold = export.gold_codes()
    return gold if (gold >= 0).any() else None


def fit_label_model(export: Union[LabelStudioExport, LabelStudioSpans], model: Any = None, *,
                    use_gold: bool = True) -> Any:
    """``model`` fitted on the export, as ``crowd-keras label-studio aggregate`` fits it.

    A Choices/Rating export: ``model`` (default: a new ``DEFAULT_LABEL_MODEL``; a name is
    looked up in the label model registry) fitted on ``export.annotations``, with the tasks
    that have a ground-truth annotation held at its class (``fit(..., gold=...)``, see
    :func:`gold_for_fit`) when the model takes gold, unless ``use_gold=False``. A span
    export: a sequence model (default ``DEFAULT_SEQUENCE_MODEL``; names from the sequence
    registry) fitted on ``export.sequences`` (sequence models take no gold). Always fits:
    :func:`ensure_fitted` keeps a model that already is.
    """
    spans = isinstance(export, LabelStudioSpans)
    if model is None or isinstance(model, str):
        model = (get_sequence_model(model or DEFAULT_SEQUENCE_MODEL) if spans else
                 get_label_model(DEFAULT_LABEL_MODEL if model is None else model))
    gold = gold_for_fit(export, model, use_gold)
    if spans:
        model.fit(export.sequences)
    elif gold is None:
        model.fit(export.annotations)
    else:
        model.fit(export.annotations, gold=gold)
    return model


def ensure_fitted(export: LabelStudioExport, model: Any, use_gold: bool = True) -> Any:
    """``model`` (a new ``DEFAULT_LABEL_MODEL`` when None; a name is looked up in the label
    model registry, as a span export's sequence model is), fitted by :func:`fit_label_model`
    (ground truth as gold unless ``use_gold=False``) if it is not fitted yet (a fitted model
    is kept as it is); raises when it was fitted on other annotations."""
    check_flag("use_gold", use_gold)
    if model is None or isinstance(model, str) or not hasattr(model, "posteriors_"):
        model = fit_label_model(export, model, use_gold=use_gold)
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
    if not isinstance(model_version, str) or not model_version.strip():
        # blank, it was written to the file and refused only by the push (_check_version)
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
