"""`CrowdLayer`: per-annotator noise on a classifier's probabilities (Rodrigues & Pereira 2018).

The crowd layer sits on top of the classifier's softmax output ``σ`` (the bottleneck that
estimates the true class) and maps it to the logits of every annotator ``r``,
``a_r = f_r(σ)``; annotator ``r``'s label distribution is ``softmax(a_r)`` and the loss is the
cross-entropy with that annotator's label, summed over the labels that exist (the paper's
"gradient contributions set to zero" for missing labels). After training the layer is
dropped and ``σ`` is the truth estimate. Variants of ``f_r`` (the paper's Section
"Crowd layer" and Table 1):

==========  ====================================  ==========================  ==============
conn_type   f_r(σ)                                weights                      identity init
==========  ====================================  ==========================  ==============
``MW``      ``σ W_r`` (per-annotator matrix)      ``kernel (A, K, K)``         ``W_r = I``
``VW``      ``w_r ⊙ σ`` (per-class scale)         ``scale (A, K)``             ones
``VB``      ``σ + b_r`` (per-class bias)          ``bias (A, K)``              zeros
``VW+B``    ``w_r ⊙ σ + b_r``                     ``scale, bias (A, K)``       ones, zeros
``S``       ``s_r σ`` (scalar)                    ``scale (A, 1)``             ones
==========  ====================================  ==========================  ==============

``W_r[i, j]`` links true class ``i`` (row) to annotator label ``j`` (column), as in the
authors' Keras code (``K.dot(x, kernel[:, :, r])``).

Two optional knobs (defaults = the paper) govern how fast the annotator model can move away
from its start. The logits are linear in ``σ`` ∈ simplex, so with ``W_r = I`` an annotator's
label distribution is nearly flat (``e/(e+K-1)``, 0.23 for 10 classes) and the loss acts on
the classifier like a bounded, noise-robust one; Adam at 1e-3 moves each weight by at most
about 1e-3 per step, so in a short run ``W_r`` stays near ``I`` and the annotators' real
accuracies (diagonal logits of 3-4) are never reached:

* ``init_scale = s`` starts at ``s · I`` (``VW``/``S``: scale ``s``), i.e. annotators that
  are initially trusted with probability ``e^s/(e^s+K-1)``;
* ``learning_rate_multiplier = m`` stores ``W_r / m`` in the variable and uses ``m ×`` it, so
  an Adam step moves ``W_r`` ``m`` times further (Adam is invariant to the gradient's scale;
  the same reparametrisation as a per-layer learning rate).
"""
from __future__ import annotations

from typing import Any

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from .._keras_utils import (ChecksIdsAtEntry, KeepsTimeStepMask, apply_annotator_matrices,
                            checked_ids_shape, checked_layer_args, checked_noise_scale,
                            gather_annotators, identity_initializer, insert_annotator_axis,
                            scale_and_shift, split_pair, weight_in_use)

__all__ = ["CrowdLayer"]

CONN_TYPES = ("MW", "VW", "VB", "VW+B", "S")
_FORMS = "CrowdLayer takes probs or [probs, annotator_ids]"



@keras.saving.register_keras_serializable(package="crowd_keras")
class CrowdLayer(ChecksIdsAtEntry, KeepsTimeStepMask, keras.layers.Layer):
    """Annotator-specific transformation of class probabilities (classification crowd layer).

    Args:
        num_annotators: number of annotators ``A`` (annotator codes are ``0..A-1``).
        conn_type: ``"MW"`` (default), ``"VW"``, ``"VB"``, ``"VW+B"`` or ``"S"`` (see module doc).
        init_scale: the multiplicative weights start at ``init_scale · I`` (1 = the paper).
        learning_rate_multiplier: the layer's weights move this many times faster under
            Adam than the classifier's (see the module doc; 1 = plain). The variables hold
            the weights divided by it; :meth:`effective_weights` gives the weights in use.

    Call forms (same weights):
        * ``layer(probs)``: ``probs (batch, K)`` → logits ``(batch, A, K)`` of every annotator;
          sequences ``(batch, time, K)`` → ``(batch, time, A, K)``.
        * ``layer([probs, annotator_ids])``: ``annotator_ids (batch, k)`` integer codes padded
          with -1 → logits ``(batch, k, K)`` (sequences: ``(batch, time, k, K)``) for just those
          annotators; cost ∝ ``batch × k``, not ``A``. Padding slots hold meaningless logits:
          give them the label -1 so that :class:`crowd_keras.losses.MaskedMultiCrossEntropy`
          ignores them.

    The outputs are logits: pair them with ``MaskedMultiCrossEntropy(from_logits=True)``.
    Do not give ``keras.Model.fit`` a ``class_weight``: Keras weights an item by the argmax
    of its target row, here an annotator slot, not a class. Give ``sample_weight`` instead,
    per slot (``np.where(y >= 0, w[np.maximum(y, 0)], 0)`` for class weights ``w``) or per
    item (what :class:`~crowd_keras.models.CrowdModel` takes; it refuses ``class_weight``).
    """

    def __init__(self, num_annotators: int, conn_type: str = "MW", init_scale: float = 1.0,
                 learning_rate_multiplier: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.num_annotators, conn = checked_layer_args(num_annotators, conn_type, CONN_TYPES)
        self.init_scale, self.learning_rate_multiplier = checked_noise_scale(
            init_scale, learning_rate_multiplier)
        self.conn_type = conn
        self.num_classes = None
        self.supports_masking = True
        self.kernel = self.scale = self.bias = None

    # ------------------------------------------------------------------ weights
    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the shape unless ``probs`` are ``(batch, [time,] classes)`` (at
        least 2 classes; the classes the layer was built for, once built) and
        ``annotator_ids`` ``(batch, k)``: a symbolic call (a functional model) is checked
        here (the mixin's hook, ``build``, ``compute_output_shape``), as it runs no ``call``."""
        self._checked_shapes(input_shape)

    def _checked_shapes(self, input_shape: Any) -> tuple:
        """``(probs_shape, ids_shape or None)`` of a call's input shape, checked."""
        probs_shape, ids_shape = split_pair(input_shape, _FORMS)
        k = self.num_classes
        if len(probs_shape) not in (2, 3) or (probs_shape[-1] is None and k is None) or \
                (None not in (k, probs_shape[-1]) and probs_shape[-1] != k):
            classes = "classes" if k is None else k
            built = "" if k is None else f" (layer {self.name!r} was built for {k} classes)"
            raise ValueError(f"CrowdLayer expects probabilities of shape (batch, {classes}) or "
                             f"(batch, time, {classes}) with known classes, got "
                             f"{probs_shape}{built}")
        if probs_shape[-1] == 1:
            # one class: every softmax is 1 and the loss 0 (JAX, torch) or a label out of range
            raise ValueError("CrowdLayer expects probabilities over at least 2 classes (a "
                             f"softmax output), got shape {probs_shape}; for a binary "
                             "classifier with one sigmoid unit use Dense(2, activation="
                             "'softmax') instead")
        if ids_shape is not None:
            checked_ids_shape(ids_shape, "CrowdLayer")
        return probs_shape, ids_shape

    def build(self, input_shape: Any) -> None:
        probs_shape, _ = self._checked_shapes(input_shape)
        k = int(probs_shape[-1])
        a = self.num_annotators
        self.num_classes = k
        start = self.init_scale / self.learning_rate_multiplier   # stored value at init
        # per-annotator tables: not autocast (gather_rows), rows cast once gathered
        if self.conn_type == "MW":
            self.kernel = self.add_weight(
                shape=(a, k, k), name="kernel", autocast=False,
                initializer=lambda shape, dtype=None: start * identity_initializer(shape, dtype))
        if self.conn_type in ("VW", "VW+B", "S"):
            self.scale = self.add_weight(shape=(a, 1 if self.conn_type == "S" else k),
                                         initializer=keras.initializers.Constant(start),
                                         name="scale", autocast=False)
        if self.conn_type in ("VB", "VW+B"):
            self.bias = self.add_weight(shape=(a, k), initializer="zeros", name="bias",
                                        autocast=False)

    def _effective(self, weight: Any, dtype: Any) -> Any:
        """The weight in use: the stored variable times ``learning_rate_multiplier``."""
        if weight is None:
            return None
        return weight_in_use(weight, self.learning_rate_multiplier, dtype)

    def effective_weights(self) -> dict:
        """The weights in use (variables × ``learning_rate_multiplier``) as numpy, by name."""
        if not self.built:
            raise ValueError("the layer is not built yet: call it on data (or fit) first")
        return {name: ops.convert_to_numpy(self._effective(w, "float32"))
                for name, w in (("kernel", self.kernel), ("scale", self.scale),
                                ("bias", self.bias)) if w is not None}

    # ------------------------------------------------------------------ forward
    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 2:
                raise ValueError(f"{_FORMS}, got a list of {len(inputs)} inputs")
            return self._indexed(*inputs)
        return self._dense(inputs)

    def _dense(self, probs: Any) -> Any:
        """All annotators: ``(batch, [time,] K)`` → ``(batch, [time,] A, K)``."""
        dt = probs.dtype
        if self.conn_type == "MW":
            eq = "bi,aij->baj" if len(probs.shape) == 2 else "bti,aij->btaj"
            return ops.einsum(eq, probs, self._effective(self.kernel, dt))
        return scale_and_shift(insert_annotator_axis(probs), self._effective(self.scale, dt),
                                 self._effective(self.bias, dt))

    def _indexed(self, probs: Any, annotator_ids: Any) -> Any:
        """Listed annotators: ``annotator_ids (batch, k)`` → ``(batch, [time,] k, K)``."""
        if len(annotator_ids.shape) != 2:
            raise ValueError(f"annotator_ids must be (batch, k), got shape {annotator_ids.shape}")
        seq = len(probs.shape) == 3

        def pick(w):
            if w is None:
                return None
            g, _ = gather_annotators(w, annotator_ids)       # (batch, k, ...)
            g = self._effective(g, probs.dtype)
            return ops.expand_dims(g, 1) if seq else g      # (batch, 1, k, ...) for sequences

        if self.conn_type == "MW":
            kernel, _ = gather_annotators(self.kernel, annotator_ids)   # (batch, k, K, K)
            return apply_annotator_matrices(probs, self._effective(kernel, probs.dtype))
        return scale_and_shift(insert_annotator_axis(probs), pick(self.scale), pick(self.bias))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        probs_shape, ids_shape = self._checked_shapes(input_shape)
        slots = self.num_annotators if ids_shape is None else ids_shape[1]
        return tuple(probs_shape[:-1]) + (slots, probs_shape[-1])

    # ------------------------------------------------------------------ inspection
    def confusion_matrices(self) -> np.ndarray:
        """Learned annotator confusion matrices as probabilities, ``(A, K, K)``.

        Row ``i`` of matrix ``r`` is ``softmax(f_r(e_i))``: annotator ``r``'s label distribution
        when the classifier is certain of class ``i`` (rows = true class, rows sum to 1).
        """
        if not self.built:
            raise ValueError("the layer is not built yet: call it on data (or fit) first")
        # in float32 whatever the policy (the weights' own dtype), as the other noise layers'
        # matrices: logits made in bfloat16 move the probabilities by up to 1e-2
        eye = ops.eye(self.num_classes, dtype="float32")
        logits = self._dense(eye)                              # (K, A, K)
        probs = ops.softmax(logits, axis=-1)
        return ops.convert_to_numpy(ops.transpose(probs, (1, 0, 2)))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_annotators=self.num_annotators, conn_type=self.conn_type,
                      init_scale=self.init_scale,
                      learning_rate_multiplier=self.learning_rate_multiplier)
        return config
