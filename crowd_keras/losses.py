"""Masked multi-annotator losses: the mean over the annotations that exist.

Targets hold one entry per (item, annotator) slot, in the layout of the crowd layer's
output without its last (class) axis:

* dense: ``(batch, annotators)`` for ``layer(probs)``; indexed: ``(batch, k)`` for
  ``layer([probs, annotator_ids])``; sequences add a time axis after the batch axis,
  ``(batch, time, annotators)`` or ``(batch, time, k)`` (the sequence form: the same classes).
* a missing annotation is ``-1`` (classification) or ``NaN`` (regression).

The loss is ``Σ_observed ℓ / n_observed`` over the whole batch (the paper's rule of setting
the gradient contributions of missing labels to zero, normalised by the number of labels that
exist), so the dense and indexed layouts of the same data give the same value and gradients.
A batch with no observed annotation gives 0, not NaN.

**Keras masks.** A mask attached to the predictions (``(batch, time)``, from
``Embedding(mask_zero=True)`` or a ``Masking`` layer through the layers that propagate it,
:class:`~crowd_keras.layers.CrowdLayer` included) marks padded steps: their targets count as
missing whatever they hold, so a padded batch never trains on its padding, and the mean is
over the observed annotations of the real steps.

The family-specific losses live with their family and are re-exported here:
:class:`LabelCountCrossEntropy` (mixture of groups); the LIA losses are in
:mod:`crowd_keras.lia.losses`.

With Keras' default reduction (``"sum_over_batch_size"``) and no ``sample_weight`` the loss
makes that mean itself, as one value (divided by the number of replicas under
``tf.distribute``, as Keras divides its reduced losses). Otherwise Keras reduces the per-item
values returned by ``call``: it divides their sum by the batch size, and ``call`` scales them
by ``batch / n_observed`` so that the reduced value is the same mean. Under
``reduction="sum"`` Keras does not divide: the value is the batch size times that mean (not
the sum of the annotations' losses); ``"mean_with_sample_weight"`` divides by the items'
weights, the unlabelled items' included. ``sample_weight`` (per
item) multiplies each item's annotation losses; it may also be per step, ``(batch, time)`` as
Keras' temporal sample weights of a tagger, or per slot, ``(batch, [time,] slots)``, and
multiplies the losses of the annotations it covers (``Σ w ℓ / n_observed``); an item's weight
in ``"mean_with_sample_weight"``'s divisor is then the mean of its weights over the steps a
Keras mask keeps (the weights of padded steps have no say under any reduction).

**No** ``class_weight``: ``keras.Model.fit`` turns it into per-item weights read at the
argmax of each target row, which for these targets is an annotator slot, not a class; the
loss receives them as any per-item ``sample_weight`` and cannot tell. To weight classes,
weight each annotation by its label's class: a per-slot ``sample_weight`` of the targets'
shape, ``np.where(y >= 0, w[np.maximum(y, 0)], 0)``
(:class:`~crowd_keras.models.CrowdModel` refuses ``class_weight`` and takes per-item
weights).
"""
from __future__ import annotations

from typing import Any

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
from keras import ops

from ._keras_utils import (KeepsLossDtype, check_weight_rows, checked_bool,
                           checked_answers, checked_codes, clip_probabilities, concrete_targets,
                           concrete_values, hide_masked_steps, keras_mask, known_rank, known_shape,
                           observed_mean, observed_mean_of_all, reduced_per_item,
                           scaled_for_replicas, check_target_shape, split_padding,
                           static_width, weights_at_real_steps)
from .errors import CrowdDataError
from .mixture_of_groups.losses import LabelCountCrossEntropy

__all__ = ["MaskedMultiCrossEntropy", "MaskedMultiMSE", "LabelCountCrossEntropy"]


class _MaskedMultiLoss(KeepsLossDtype, keras.losses.Loss):
    """A masked multi-annotator loss: per-slot values and their observed mask
    (:meth:`slot_values`), averaged over the observed slots.

    A Keras mask on ``y_pred`` first turns its masked steps' targets into missing ones
    (``_missing``). With Keras' default reduction and no ``sample_weight`` (a training step's
    usual call) the mean over the observed slots is made directly
    (:func:`observed_mean_of_all`): the same value as Keras' reduction of :meth:`call`'s
    per-item values, with far fewer ops per step (no per-item sums, batch size or casts of the
    targets to floats and back). Otherwise ``keras.losses.Loss`` reduces :meth:`call`.
    """

    _missing: Any = -1

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        mask = keras_mask(y_pred)
        # targets given as data, their masked steps missing (those may hold anything): read
        # before hide_masked_steps makes them a tensor that only TensorFlow's check reads
        data = concrete_targets(y_true, mask, self._missing)
        if mask is not None:
            y_true, y_pred = hide_masked_steps(y_true, y_pred, mask, self._missing)
        self.check_targets(y_true if data is None else data, y_pred)
        check_weight_rows(sample_weight, y_true, self.name)
        if sample_weight is not None and known_rank(sample_weight) == 0:
            # one weight for the batch, as Keras' own losses take it: every item's
            sample_weight = ops.full(ops.shape(y_true)[:1], sample_weight, dtype=self.dtype)
        if sample_weight is not None and known_rank(sample_weight) != 1:
            if (known_shape(sample_weight) or ())[1:] == (1,):
                sample_weight = ops.reshape(sample_weight, (-1,))   # (batch, 1): per item
            else:
                return self._step_weighted(y_true, y_pred, sample_weight, mask)
        if sample_weight is not None or self.reduction not in ("sum_over_batch_size", "mean"):
            return super().__call__(y_true, y_pred, sample_weight)
        with keras.name_scope(self.name):
            y_pred = ops.convert_to_tensor(y_pred, dtype=self.dtype)
            values, observed = self.slot_values(ops.convert_to_tensor(y_true), y_pred)
            return scaled_for_replicas(observed_mean_of_all(values, observed))

    def _step_weighted(self, y_true: Any, y_pred: Any, sample_weight: Any,
                       mask: Any = None) -> Any:
        """The loss under weights per step or per slot (a prefix of the targets' shape:
        ``(batch, time)``, Keras' temporal sample weights, or ``(batch, [time,] slots)``),
        which Keras' reduction of :meth:`call`'s per-item values cannot take: each
        annotation's loss times its weight, then :meth:`call`'s per-item values and Keras'
        reduction of them (``"mean_with_sample_weight"``: divided by the items' mean weights,
        over the real steps of the Keras ``mask`` when there is one)."""
        with keras.name_scope(self.name):
            y_pred = ops.convert_to_tensor(y_pred, dtype=self.dtype)
            y_true = ops.convert_to_tensor(y_true)
            weights = ops.convert_to_tensor(sample_weight, dtype=y_pred.dtype)
            rank = known_rank(weights)
            if rank is not None and (rank > len(y_true.shape) or any(
                    w is not None and t is not None and w != t
                    for w, t in zip(weights.shape, y_true.shape))):
                raise ValueError(f"{self.name}: sample_weight of shape {tuple(weights.shape)} "
                                 "is not per item (batch,), per step (batch, time) or per slot "
                                 f"of targets {tuple(y_true.shape)}")
            values, observed = self.slot_values(y_true, y_pred)
            weights, real = weights_at_real_steps(weights, mask)
            # (batch, w, rest): the w weights of an item (1, its steps or its slots) and the
            # slots each one covers; the weights' rank may be unknown in a compiled step, and
            # static sizes where known (a batch of 0 rows cannot infer a -1)
            batch = ops.shape(y_true)[0]
            width, slots = static_width(known_shape(weights)), static_width(y_true.shape)
            rest = slots // width if width > 0 and slots >= 0 else -1
            weights = ops.reshape(weights, (batch, width))
            real = None if real is None else ops.reshape(real, (batch, width))
            layout = (batch, ops.shape(weights)[1], rest)
            per_item = observed_mean(ops.reshape(values, layout) * ops.expand_dims(weights, -1),
                                     ops.reshape(observed, layout))
            return reduced_per_item(per_item, weights, self.reduction, real)

    def check_targets(self, y_true: Any, y_pred: Any) -> None:
        """Check targets that enter as data (numpy, a list, an eager TensorFlow tensor:
        ``_keras_utils.concrete_values``) once per call; a compiled step's symbolic targets
        are not checked (``CrowdModel.fit`` checks its targets before training)."""

    def call(self, y_true: Any, y_pred: Any) -> Any:
        """Per-item values ``(batch,)`` whose batch mean is the mean over observed slots."""
        values, observed = self.slot_values(y_true, y_pred)
        shape = ops.shape(y_true)
        return observed_mean(ops.reshape(values, shape), ops.reshape(observed, shape))

    def slot_values(self, y_true: Any, y_pred: Any) -> tuple:
        """``(values, observed)``: the loss of every slot and whether it holds an annotation,
        the same shape (any layout: the slots of ``y_true`` in order). Unobserved values are
        left out of the mean, and their gradient is multiplied by 0: they must be finite, as
        must the derivatives behind them."""
        raise NotImplementedError


@keras.saving.register_keras_serializable(package="crowd_keras")
class MaskedMultiCrossEntropy(_MaskedMultiLoss):
    """Cross-entropy of each annotator's integer label, -1 = missing, mean over observed labels.

    Args:
        from_logits: whether ``y_pred`` holds logits (the crowd layers' output, default) or
            probabilities.
        reduction, name, dtype: as for any ``keras.losses.Loss``.

    Shapes: ``y_pred (batch, [time,] slots, K)``, ``y_true (batch, [time,] slots)`` integer
    codes in ``0..K-1`` or -1 (see the module doc for dense and indexed slots). Class
    weights go in a per-slot ``sample_weight``, not ``fit``'s ``class_weight`` (which Keras
    reads at the argmax over the slots; see the module doc).
    """

    def __init__(self, from_logits: bool = True, reduction: str = "sum_over_batch_size",
                 name: str = "masked_multi_cross_entropy", dtype: Any = None) -> None:
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.from_logits = checked_bool(from_logits, "from_logits")

    def check_targets(self, y_true: Any, y_pred: Any) -> None:
        """Integer labels in ``0..K-1`` or -1 (``-2`` is no missing marker; ``1.7`` no label)."""
        labels = concrete_values(y_true)
        if labels is not None:
            checked_codes(labels, y_pred.shape[-1], "label", f"{self.name} y_true", "classes")

    def slot_values(self, y_true: Any, y_pred: Any) -> tuple:
        """Flat ``(slots,)`` negative log-likelihoods of the observed labels and the mask."""
        check_target_shape(y_true, tuple(y_pred.shape[:-1]), self.name)
        safe, observed = split_padding(ops.reshape(y_true, (-1,)))
        if self.from_logits:
            # -log_softmax(y_pred)[safe], fused (one op on TensorFlow); on the flat (slots, K)
            # logits, where TensorFlow's rank-3 form adds a reshape and a run-time shape
            # assertion per step
            nll = ops.sparse_categorical_crossentropy(
                safe, ops.reshape(y_pred, (-1, y_pred.shape[-1])), from_logits=True)
        else:
            eps = keras.config.epsilon()
            log_p = ops.log(clip_probabilities(ops.reshape(y_pred, (-1, y_pred.shape[-1])), eps))
            nll = -ops.squeeze(ops.take_along_axis(log_p, ops.expand_dims(safe, -1), axis=-1),
                               -1)
        return nll, observed

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(from_logits=self.from_logits)
        return config


@keras.saving.register_keras_serializable(package="crowd_keras")
class MaskedMultiMSE(_MaskedMultiLoss):
    """Squared error of each annotator's answer, NaN = missing, mean over observed answers.

    Shapes: ``y_pred`` and ``y_true`` both ``(batch, [time,] slots)`` (the output of
    :class:`crowd_keras.layers.CrowdRegressionLayer`).
    """

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "masked_multi_mse",
                 dtype: Any = None) -> None:
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    _missing = float("nan")

    def check_targets(self, y_true: Any, y_pred: Any) -> None:
        """Answers are finite numbers or NaN (missing): an infinite one makes the loss
        infinite and the weights NaN after one step."""
        answers = concrete_values(y_true)
        if answers is not None and answers.dtype.kind not in "iufb":
            # else a backend's conversion error ("Invalid dtype: object"), naming nothing
            raise CrowdDataError(f"{self.name} y_true: answers must be numbers with NaN where "
                                 f"missing, got {answers.dtype} values (None for missing: "
                                 "np.asarray(y_true, dtype=float) makes them NaN)")
        if answers is not None and answers.dtype.kind in "iuf":
            checked_answers(answers, f"{self.name} y_true")

    def slot_values(self, y_true: Any, y_pred: Any) -> tuple:
        """Squared errors ``(batch, [time,] slots)`` and the mask of the targets that are not
        NaN (a NaN target is replaced by 0 before the difference: its error's gradient, times
        the mask's 0, must not be NaN)."""
        check_target_shape(y_true, tuple(y_pred.shape), self.name)
        y_true = ops.cast(y_true, y_pred.dtype)
        observed = ops.logical_not(ops.isnan(y_true))
        return ops.square(y_pred - ops.where(observed, y_true, ops.zeros_like(y_true))), observed
