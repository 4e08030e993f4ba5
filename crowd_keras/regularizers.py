"""Keras regularisers of the library (serializable, backend-agnostic ``keras.ops``)."""
from __future__ import annotations

from typing import Any

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
from keras import ops

from ._keras_utils import checked_finite

__all__ = ["CauchyShrinkage"]


@keras.saving.register_keras_serializable(package="crowd_keras")
class CauchyShrinkage(keras.regularizers.Regularizer):
    """``strength · scale² · Σ log(1 + w² / scale²)``: a heavy-tailed (Cauchy) prior.

    Equal to the L2 penalty ``strength · Σ w²`` for small weights, so annotators with few
    labels are shrunk towards the shared competence as strongly as with L2; but the penalty
    grows only logarithmically for large weights, so a deviation backed by much evidence (an
    annotator who is always right, whose logits must grow without bound) is not capped.
    """

    def __init__(self, strength: float, scale: float) -> None:
        # checked here: a scale of 0 made the penalty NaN, a negative strength rewarded
        # large weights, and both reach Keras only as a NaN loss
        self.strength = checked_finite(strength, "strength")
        self.scale = checked_finite(scale, "scale")
        if self.strength < 0 or self.scale <= 0:
            raise ValueError("CauchyShrinkage needs strength >= 0 and scale > 0, got "
                             f"strength={strength!r}, scale={scale!r}")

    def __call__(self, x: Any) -> Any:
        s2 = self.scale ** 2
        return self.strength * s2 * ops.sum(ops.log1p(ops.square(x) / s2))

    def get_config(self) -> dict:
        return {"strength": self.strength, "scale": self.scale}
