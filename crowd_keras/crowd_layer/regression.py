"""`CrowdRegressionLayer`: per-annotator scale and bias on a regression output.

Rodrigues & Pereira (2018), "Text regression": annotator ``r``'s answer is modelled as
``o_r = s_r μ + b_r`` on top of the network's output ``μ``, with a scale ``s_r`` (``S``), a
bias ``b_r`` (``B``, the variant that worked best in the paper) or both (``S+B``),
initialised at the identity (``s_r = 1``, ``b_r = 0``). Train with
:class:`crowd_keras.losses.MaskedMultiMSE` (NaN = missing answer); afterwards ``μ`` is the
truth estimate.
"""
from __future__ import annotations

from typing import Any

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
from keras import ops

from .._keras_utils import (ChecksIdsAtEntry, KeepsTimeStepMask, checked_ids_shape,
                            checked_layer_args, gather_annotators, scale_and_shift,
                            split_pair)

__all__ = ["CrowdRegressionLayer"]

CONN_TYPES = ("S", "B", "S+B")
_FORMS = "CrowdRegressionLayer takes mu or [mu, annotator_ids]"


@keras.saving.register_keras_serializable(package="crowd_keras")
class CrowdRegressionLayer(ChecksIdsAtEntry, KeepsTimeStepMask, keras.layers.Layer):
    """Annotator-specific scale and/or bias of a scalar regression output.

    Args:
        num_annotators: number of annotators ``A``.
        conn_type: ``"B"`` (default, bias), ``"S"`` (scale) or ``"S+B"``.

    Call forms (same weights); the input's last axis must have size 1 (``Dense(1)`` output):
        * ``layer(mu)``: ``(batch, 1)`` → ``(batch, A)``; sequences ``(batch, time, 1)`` →
          ``(batch, time, A)``.
        * ``layer([mu, annotator_ids])``: ``annotator_ids (batch, k)`` padded with -1 →
          ``(batch, k)`` (sequences ``(batch, time, k)``); padding slots must get NaN targets.
    """

    def __init__(self, num_annotators: int, conn_type: str = "B", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.num_annotators, conn = checked_layer_args(num_annotators, conn_type, CONN_TYPES)
        self.conn_type = conn
        self.scale = self.bias = None
        self.supports_masking = True

    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the shape unless ``mu`` is ``(batch, [time,] 1)`` and
        ``annotator_ids`` ``(batch, k)`` (the mixin's hook on every call of a built layer,
        ``build``, ``compute_output_shape``: a symbolic call runs no :meth:`call`)."""
        self._checked_shapes(input_shape)

    def _checked_shapes(self, input_shape: Any) -> tuple:
        """``(mu_shape, ids_shape or None)`` of a call's input shape, checked."""
        shape, ids_shape = split_pair(input_shape, _FORMS)
        if len(shape) not in (2, 3) or shape[-1] != 1:
            raise ValueError("CrowdRegressionLayer expects outputs of shape (batch, 1) or "
                             f"(batch, time, 1), got {tuple(shape)}")
        if ids_shape is not None:
            checked_ids_shape(ids_shape, "CrowdRegressionLayer")
        return shape, ids_shape

    def build(self, input_shape: Any) -> None:
        self._checked_shapes(input_shape)
        # per-annotator tables: not autocast (gather_rows), rows cast once gathered
        if "S" in self.conn_type:
            self.scale = self.add_weight(shape=(self.num_annotators,), initializer="ones",
                                         name="scale", autocast=False)
        if "B" in self.conn_type:
            self.bias = self.add_weight(shape=(self.num_annotators,), initializer="zeros",
                                        name="bias", autocast=False)

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 2:
                raise ValueError(f"{_FORMS}, got a list of {len(inputs)} inputs")
            mu, ids = inputs
            seq = len(mu.shape) == 3
            scale = bias = None
            if self.scale is not None:
                scale, _ = gather_annotators(self.scale, ids)     # (batch, k)
            if self.bias is not None:
                bias, _ = gather_annotators(self.bias, ids)
            if seq:  # (batch, k) → (batch, 1, k) to broadcast over time
                scale = None if scale is None else ops.expand_dims(scale, 1)
                bias = None if bias is None else ops.expand_dims(bias, 1)
        else:
            mu, scale, bias = inputs, self.scale, self.bias
        return scale_and_shift(mu, scale, bias)   # (..., 1) broadcasts against (..., A or k)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        mu_shape, ids_shape = self._checked_shapes(input_shape)
        slots = self.num_annotators if ids_shape is None else ids_shape[1]
        return tuple(mu_shape[:-1]) + (slots,)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_annotators=self.num_annotators, conn_type=self.conn_type)
        return config
