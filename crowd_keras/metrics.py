"""Masked multi-annotator metrics: scores over the annotations that exist.

Keras' ``"accuracy"`` on a crowd layer's output counts every empty annotator slot (target
``-1``) as a wrong prediction, so its value falls as the crowd gets sparser whatever the
model learns. :class:`MaskedMultiAccuracy` counts only observed slots, in the targets'
layout of :mod:`crowd_keras.losses` (dense ``(batch, [time,] annotators)``, indexed
``(batch, [time,] k)``), and honours a Keras mask on the predictions (padded steps count as
missing), as the masked losses do.
"""
from __future__ import annotations

from typing import Any, Optional

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
from keras import ops

from ._keras_utils import (checked_codes, concrete_targets, hide_masked_steps, keras_mask,
                           shapes_match)

__all__ = ["MaskedMultiAccuracy"]


@keras.saving.register_keras_serializable(package="crowd_keras")
class MaskedMultiAccuracy(keras.metrics.Metric):
    """Share of observed annotations whose label is the crowd layer's most probable class
    for that annotator: ``Σ_observed w·[argmax ŷ = y] / Σ_observed w``.

    ``y_pred``: ``(batch, [time,] slots, classes)`` probabilities or logits (the argmax is the
    same); ``y_true``: ``(batch, [time,] slots)`` integer labels, ``-1`` = missing.
    ``sample_weight``: per item ``(batch,)``, per step ``(batch, time)`` or per slot (a
    prefix of the targets' shape, broadcast over the rest). No observed annotation: 0.
    Targets given as data (NumPy, a list, an eager tensor) are checked as the masked losses
    check them: a label at or above the number of classes, below -1 or fractional raises.
    Higher is better: Keras' callbacks monitor it with ``mode="auto"``.

    Args:
        name: the metric's name in the logs.
        dtype: the dtype of its running sums.
    """

    def __init__(self, name: str = "masked_multi_accuracy", dtype: Optional[Any] = None
                 ) -> None:
        super().__init__(name=name, dtype=dtype)
        # higher is better, as Keras' own accuracies declare: a ModelCheckpoint, EarlyStopping
        # or ReduceLROnPlateau monitoring it with the default mode="auto" reads this
        self._direction = "up"
        # in the metric's dtype, as Keras' own metrics (without it: floatx, and a float64
        # metric stopped counting past 2**24 annotations)
        self.hits = self.add_variable(shape=(), initializer="zeros", name="hits",
                                      dtype=self.dtype)
        self.observed = self.add_variable(shape=(), initializer="zeros", name="observed",
                                          dtype=self.dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        mask = keras_mask(y_pred)
        y_pred = ops.convert_to_tensor(y_pred)
        # as the masked losses: a label >= K counted as a miss; a masked step's label is
        # missing, whatever it holds
        concrete = concrete_targets(y_true, mask, -1)
        if concrete is not None:
            checked_codes(concrete, y_pred.shape[-1], "label", f"{self.name} y_true", "classes")
        if mask is not None:
            y_true, y_pred = hide_masked_steps(y_true, y_pred, mask, -1)
        y_true = ops.convert_to_tensor(y_true)
        if not shapes_match(tuple(y_true.shape), tuple(y_pred.shape[:-1])):
            raise ValueError(f"{self.name}: targets of shape {tuple(y_true.shape)} do not "
                             f"match predictions of shape {tuple(y_pred.shape)}; expected one "
                             "integer label (-1: missing) per item and annotator slot")
        labels = ops.cast(y_true, "int32")
        observed = ops.cast(ops.greater_equal(labels, 0), self.dtype)
        hits = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), labels),
                        self.dtype) * observed
        if sample_weight is not None:
            weights = ops.cast(ops.convert_to_tensor(sample_weight), self.dtype)
            # a prefix of the targets' shape (or (batch, 1)), as the masked losses take it:
            # another shape met the hits in a backend multiply
            if len(weights.shape) > len(labels.shape) or any(
                    w is not None and t is not None and w != t and not (i and w == 1)
                    for i, (w, t) in enumerate(zip(weights.shape, labels.shape))):
                raise ValueError(f"{self.name}: sample_weight of shape {tuple(weights.shape)} "
                                 "is not per item (batch,), per step (batch, time) or per slot "
                                 f"of targets {tuple(labels.shape)}")
            while len(weights.shape) < len(labels.shape):
                weights = ops.expand_dims(weights, -1)
            hits, observed = hits * weights, observed * weights
        self.hits.assign_add(ops.sum(hits))
        self.observed.assign_add(ops.sum(observed))

    def result(self) -> Any:
        return ops.divide_no_nan(self.hits, self.observed)

    def reset_state(self) -> None:
        self.hits.assign(ops.zeros((), dtype=self.dtype))
        self.observed.assign(ops.zeros((), dtype=self.dtype))
