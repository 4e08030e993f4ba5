"""`LabelCountCrossEntropy`: multinomial log-likelihood of label counts (Mena & Ñanculef, Eq. 4).

Targets are label counts per item, ``r_i`` (batch, K) (``Annotations.label_counts()``), and
predictions the crowd's label distribution ``p(y|x_i)`` (batch, K), e.g. the output of the
global :class:`crowd_keras.mixture_of_groups.layers.MixtureOfGroups`. The loss of an item is
``−Σ_j r_ij log p(y = j | x_i)``; the batch value is the mean over the items with at least
one label (items without labels add nothing; a batch without any label gives 0, not NaN).
A time axis, ``(batch, time, K)``, is handled like extra items; a Keras mask on the predictions
(``(batch, time)``, kept by :class:`~crowd_keras.mixture_of_groups.layers.MixtureOfGroups`)
marks padded steps, whose counts are taken as zero (unlabelled) whatever they hold.
"""
from __future__ import annotations

from typing import Any

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from .._keras_utils import (KeepsLossDtype, check_weight_rows, checked_bool, clip_probabilities,
                            concrete_targets, concrete_values, hide_masked_steps, keras_mask,
                            known_rank, known_shape, observed_mean, reduced_per_item,
                            shapes_match, weights_at_real_steps)
from ..errors import CrowdDataError

__all__ = ["LabelCountCrossEntropy"]


def _check_counts(y_true: Any, what: str) -> None:
    """Label counts that enter as data (``concrete_values``; a compiled step's symbolic ones
    are not checked) must be finite and non-negative, else CrowdDataError naming the first
    bad one: a -1 (the missing-label code of the other losses) or a NaN would enter the
    log-likelihood as a negative or NaN count."""
    counts = concrete_values(y_true)
    if counts is None or counts.dtype.kind not in "iuf":
        return
    bad = ~np.isfinite(counts) | (counts < 0)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        raise CrowdDataError(f"{what} y_true: label count {counts[pos].item()!r} at {pos} is not "
                             f"a count ({int(bad.sum())} such value(s)); counts are finite and "
                             "non-negative, 0 for a class nobody chose")


@keras.saving.register_keras_serializable(package="crowd_keras")
class LabelCountCrossEntropy(KeepsLossDtype, keras.losses.Loss):
    """Cross-entropy of label counts (Eq. 4), mean over labelled items.

    Args:
        from_logits: whether ``y_pred`` holds logits instead of probabilities.
        normalize: divide each item's loss by its number of labels (cross-entropy with the
            soft majority vote ``r_i / T_i``) instead of Eq. 4's sum over labels.
        reduction, name, dtype: as for any ``keras.losses.Loss``.

    Keras divides the per-item values returned by ``call`` by the batch size; they are
    scaled by ``batch / n_labelled`` so that the reduced value is the mean over labelled
    items. ``sample_weight`` (per item, or per step ``(batch, time)`` as Keras' temporal
    sample weights of a tagger) multiplies each item's (step's) loss.
    """

    def __init__(self, from_logits: bool = False, normalize: bool = False,
                 reduction: str = "sum_over_batch_size", name: str = "label_count_cross_entropy",
                 dtype: Any = None) -> None:
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.from_logits = checked_bool(from_logits, "from_logits")
        self.normalize = checked_bool(normalize, "normalize")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        # a masked step is an unlabelled item: Keras' own weighting by the mask would keep the
        # masked steps' counts in the number of labelled items that scales the mean
        mask = keras_mask(y_pred)
        # counts given as data, a masked step's zero (it may hold anything): read before
        # hide_masked_steps makes them a tensor that only TensorFlow's check reads
        data = concrete_targets(y_true, mask, 0.0)
        if mask is not None:
            y_true, y_pred = hide_masked_steps(y_true, y_pred, mask, 0.0)
        _check_counts(y_true if data is None else data, self.name)
        check_weight_rows(sample_weight, y_true, self.name)
        if sample_weight is not None and known_rank(y_true) == 2 \
                and (known_shape(sample_weight) or (None,))[1:] not in ((), (1,)):
            raise ValueError(f"{self.name}: sample_weight of shape {known_shape(sample_weight)} "
                             "is not per item; counts (batch, classes) take one weight per "
                             "item, (batch,) or (batch, 1)")
        if sample_weight is not None and known_rank(y_true) == 3 \
                and (known_shape(sample_weight) or (None, 1))[1:] not in ((), (1,)):
            # per step (batch, time): Keras' reduction of call()'s per-item values cannot take
            # them (a backend shape error)
            return self._step_weighted(y_true, y_pred, sample_weight, mask)
        return super().__call__(y_true, y_pred, sample_weight)

    def _step_weighted(self, y_true: Any, y_pred: Any, sample_weight: Any,
                       mask: Any = None) -> Any:
        """The loss under per-step weights ``(batch, time)``: each step's loss times its
        weight, then Keras' reduction of the per-item values (as the masked losses; the
        weights of the steps a Keras ``mask`` pads have no say)."""
        with keras.name_scope(self.name):
            y_pred = ops.convert_to_tensor(y_pred, dtype=self.dtype)
            y_true = ops.convert_to_tensor(y_true)
            weights = ops.convert_to_tensor(sample_weight, dtype=y_pred.dtype)
            if len(weights.shape) != 2 or any(w is not None and t is not None and w != t
                                              for w, t in zip(weights.shape, y_true.shape)):
                raise ValueError(f"{self.name}: sample_weight of shape {tuple(weights.shape)} "
                                 "is not per item (batch,) or per step (batch, time) of label "
                                 f"counts {tuple(y_true.shape)}")
            nll, labelled = self._step_losses(y_true, y_pred)
            weights, real = weights_at_real_steps(weights, mask)
            return reduced_per_item(observed_mean(nll * weights, labelled), weights,
                                    self.reduction, real)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return observed_mean(*self._step_losses(y_true, y_pred))

    def _step_losses(self, y_true: Any, y_pred: Any) -> tuple:
        """``(nll, labelled)`` of every item (step): ``(batch, [time])``."""
        if not shapes_match(tuple(y_true.shape), tuple(y_pred.shape)):
            raise ValueError(f"{self.name}: label counts of shape {tuple(y_true.shape)} do not "
                             f"match predictions {tuple(y_pred.shape)}; expected (batch, [time,] "
                             "classes) counts")
        counts = ops.cast(y_true, y_pred.dtype)
        if self.from_logits:
            log_p = ops.log_softmax(y_pred, axis=-1)
        else:
            log_p = ops.log(clip_probabilities(y_pred, keras.config.epsilon()))
        n_labels = ops.sum(counts, axis=-1)                               # (batch, [time])
        nll = -ops.sum(counts * log_p, axis=-1)
        if self.normalize:
            nll = nll / ops.maximum(n_labels, ops.ones_like(n_labels))
        return nll, ops.greater(n_labels, ops.zeros_like(n_labels))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(from_logits=self.from_logits, normalize=self.normalize)
        return config
