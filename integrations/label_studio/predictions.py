"""Label Studio predictions (one per task, in the control's format) from class probabilities or a
label model, and the prediction file."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from crowd_keras.aggregation.pred_probs import check_probability_matrix
from crowd_keras.errors import CrowdDataError
from crowd_keras.files import atomic_write_text, indented_json

from ._model import ensure_fitted, prediction_target
from ._span_results import span_predictions_from_model
from ._spans import LabelStudioSpans
from ._records import check_flag, python_scalar
from .reader import LabelStudioExport


def to_predictions(export: LabelStudioExport, proba: Any, model_version: str, *,
                   include_unannotated: bool = False,
                   to_name: Optional[str] = None, scores: Any = None) -> list[dict]:
    """Label Studio predictions from items × classes probabilities.

    One prediction per task (tasks without a used annotation only with
    ``include_unannotated=True``): ``{"task", "model_version", "score", "result"}`` where
    ``score`` is ``scores`` (default: the probability of the predicted class) and ``result``
    holds one item in the control's format (``{"choices": [...]}`` or ``{"rating": n}``).

    Args:
        export: the :class:`LabelStudioExport` the probabilities are of.
        proba: (n_tasks, n_classes) rows in ``export.task_ids`` order.
        model_version: a non-empty string: each prediction's ``model_version``.
        include_unannotated: also predict tasks without a used annotation.
        to_name: the object the control labels; default ``export.to_name`` (JSON_MIN/CSV
            exports do not carry it: pass it or read with ``label_config=``).
        scores: (n_tasks,) each prediction's ``score`` in [0, 1]; :func:`predictions_from_model`
            passes the label model's ``consensus_quality()`` (the calibrated chance that the
            predicted class is right).
    """
    if isinstance(export, LabelStudioSpans):
        raise CrowdDataError("a span export's predictions are spans, not class probabilities: "
                             "use span_predictions(export, model.predict_spans(), version) or "
                             "predictions_from_model(export, model)")
    check_flag("include_unannotated", include_unannotated)
    shape = (len(export.task_ids), len(export.classes))
    p = check_probability_matrix(proba, shape, "probabilities", f"{shape} (tasks × classes)",
                                 lambda i: f"task {python_scalar(export.task_ids[i])}")
    to_name = prediction_target(export, model_version, to_name)
    best = np.argmax(p, axis=1)
    score = p[np.arange(len(p)), best] if scores is None else np.asarray(scores, dtype=np.float64)
    if score.shape != (len(p),) or not ((score >= 0) & (score <= 1)).all():
        raise CrowdDataError(f"scores must be {len(p)} numbers in [0, 1] (one per task in "
                             f"export.task_ids order), got {score.shape} values from "
                             f"{np.nanmin(score) if score.size else None} to "
                             f"{np.nanmax(score) if score.size else None}")
    rows = np.arange(len(p)) if include_unannotated else \
        np.flatnonzero(export.annotations.annotations_per_item() > 0)
    out = []
    for i in rows:
        choice = export.class_choices[best[i]]
        value = {"rating": int(choice[0])} if export.control_type == "rating" else \
            {"choices": [str(c) for c in choice]}
        out.append({"task": python_scalar(export.task_ids[i]), "model_version": model_version,
                    "score": float(score[i]),
                    "result": [{"from_name": export.control, "to_name": to_name,
                                "type": export.control_type, "value": value}]})
    return out


def predictions_from_model(export: Union[LabelStudioExport, LabelStudioSpans], model: Any = None,
                           model_version: Optional[str] = None, *, use_gold: bool = True,
                           **kwargs: Any) -> list[dict]:
    """Fit ``model`` on the export if needed; return its predictions.

    ``model`` (a model, or a registry name) defaults to a new model of the package's default
    (``_model.DEFAULT_LABEL_MODEL``;
    for a span export, the sequence registry's ``DEFAULT_SEQUENCE_MODEL``, and the
    predictions hold ``labels`` regions: see :mod:`._span_results`). A model this function
    fits is fitted as ``crowd-keras label-studio aggregate`` fits it
    (:func:`~._model.fit_label_model`): when it takes gold, the tasks with a ground-truth
    annotation are held at its class, unless ``use_gold=False`` (or ``--no-gold``); a fitted
    model is used as it is, and span exports take no gold.
    ``model_version`` defaults to ``"crowd-keras-<ModelClass>"``; other keyword arguments go to
    :func:`to_predictions`. Each prediction's ``score`` is the model's ``consensus_quality()``
    when it has one (the label models: 1 on the tasks held at their ground truth), else the
    probability of the predicted class.
    """
    check_flag("use_gold", use_gold)
    if isinstance(export, LabelStudioSpans):
        return span_predictions_from_model(export, model, model_version, **kwargs)
    model = ensure_fitted(export, model, use_gold=use_gold)
    # only None takes the default: "" was replaced by it in silence (checked as given below)
    version = f"crowd-keras-{type(model).__name__}" if model_version is None else model_version
    if "scores" not in kwargs and hasattr(model, "consensus_quality"):
        kwargs["scores"] = model.consensus_quality()
    return to_predictions(export, model.predict_proba(), version, **kwargs)


def write_predictions(path: Any, predictions: Sequence[dict]) -> Path:
    """Write predictions as a JSON list (atomically: temporary file then ``os.replace``).

    Each entry names its ``task``: the file is what ``POST /api/projects/<id>/import/predictions``
    (SDK: ``client.projects.import_predictions(id, request=...)``) takes for existing tasks.
    """
    if isinstance(predictions, (dict, str, bytes)) or not isinstance(predictions, Sequence):
        raise TypeError(f"predictions must be a list of prediction dicts, got "
                        f"{type(predictions).__name__}")
    odd = [i for i, p in enumerate(predictions) if not isinstance(p, dict) or "task" not in p]
    if odd:
        raise CrowdDataError(f"prediction {odd[0]} is not a dict naming its 'task': "
                             f"{str(predictions[odd[0]])[:80]}")
    return atomic_write_text(path, indented_json(list(predictions), allow_nan=True) + "\n")
