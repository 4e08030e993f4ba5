"""Losses of the LIA EM (Eqs. 7 and 9) on the output of :class:`~.layers.AnnotationLogLikelihoods`.

``y_pred`` is ``(batch, 1 + k, C)``: row 0 ``log h_θ(x_i)_c``, row ``1 + j`` the log
probability of annotation ``j`` of the item under true class ``c`` (0 in padding slots).
"""
from __future__ import annotations

from typing import Any

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
from keras import ops

from .._keras_utils import (KeepsLossDtype, check_target_shape, check_weight_rows, checked_codes,
                            concrete_values, known_shape)

__all__ = ["ExpectedCompleteNLL", "MarginalNLL"]


def _joint(y_pred: Any) -> Any:
    """``log h_c + Σ_j log Q_{c, y_ij}``: ``(batch, C)``."""
    return y_pred[:, 0, :] + ops.sum(y_pred[:, 1:, :], axis=1)


def _check_item_weights(sample_weight: Any, y_true: Any, name: str) -> None:
    """The LIA losses are per item: a weight per item, ``(batch,)`` or ``(batch, 1)``; per-slot
    weights ``(batch, k)`` were broadcast by Keras' reduction (weights [[1, 0], [0, 1]] halved
    the loss instead of weighting annotations), other rows a backend's error."""
    check_weight_rows(sample_weight, y_true, name)
    shape = known_shape(sample_weight) if sample_weight is not None else None
    if shape and len(shape) > 1 and shape[1:] != (1,):
        raise ValueError(f"{name}: sample_weight of shape {shape} is not per item; the LIA "
                         "losses take one weight per item, (batch,) or (batch, 1)")


@keras.saving.register_keras_serializable(package="crowd_keras")
class ExpectedCompleteNLL(KeepsLossDtype, keras.losses.Loss):
    """Negative of the M-step objective (Eq. 7) for one item; ``y_true`` = E-step ``ŷ (batch, C)``."""

    def __init__(self, name: str = "lia_expected_nll", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        _check_item_weights(sample_weight, y_true, self.name)
        return super().__call__(y_true, y_pred, sample_weight)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        check_target_shape(y_true, (y_pred.shape[0], y_pred.shape[-1]), self.name,
                           "the E-step's posterior: one row of class probabilities per item")
        return -ops.sum(ops.cast(y_true, y_pred.dtype) * _joint(y_pred), axis=-1)


@keras.saving.register_keras_serializable(package="crowd_keras")
class MarginalNLL(KeepsLossDtype, keras.losses.Loss):
    """Negative marginal log-likelihood of an item's labels; ``y_true`` = labels ``(batch, k)``.

    ``per="annotation"``: the paper's Eq. 9, ``−Σ_j log Σ_k h_k [Q_ij]_{k,y_ij}``;
    ``per="item"``: the exact marginal ``−log Σ_k h_k Π_j [Q_ij]_{k,y_ij}``.
    """

    def __init__(self, per: str = "annotation", name: str = "lia_marginal_nll",
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        if per not in ("annotation", "item"):
            raise ValueError(f"per must be 'annotation' or 'item', got {per!r}")
        self.per = per

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        # labels entering as data are checked once (-2 is no missing marker); a compiled
        # step's symbolic ones are not (no op in the graph)
        labels = concrete_values(y_true)
        if labels is not None:
            checked_codes(labels, y_pred.shape[-1], "label", f"{self.name} y_true", "classes")
        _check_item_weights(sample_weight, y_true, self.name)
        return super().__call__(y_true, y_pred, sample_weight)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        slots = None if y_pred.shape[1] is None else y_pred.shape[1] - 1
        check_target_shape(y_true, (y_pred.shape[0], slots), self.name,
                           "one label per item and annotation slot, -1: missing")
        if self.per == "item":
            return -ops.logsumexp(_joint(y_pred), axis=-1)
        mask = ops.cast(ops.greater_equal(y_true, 0), y_pred.dtype)          # (b, k)
        per_annotation = ops.logsumexp(y_pred[:, :1, :] + y_pred[:, 1:, :], axis=-1)
        return -ops.sum(per_annotation * mask, axis=-1)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(per=self.per)
        return config
