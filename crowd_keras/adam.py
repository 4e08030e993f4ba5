"""Adam's arithmetic, written once for numpy arrays and Keras tensors alike.

Keras' Adam (Kingma & Ba 2015, Algorithm 1 in Keras' form, ``amsgrad`` as Reddi et al.
2018): with step size ``α_t = lr √(1 − β₂ᵗ) / (1 − β₁ᵗ)``,

* ``m ← m + (g − m)(1 − β₁)``, ``v ← v + (g² − v)(1 − β₂)``;
* ``v̂ ← max(v̂, v)`` under AMSGrad (else ``v̂ = v``);
* ``w ← w − α_t m / (√v̂ + ε)``.

The functions use arithmetic operators only, plus the ``sqrt`` (and ``power``) they are
given (``np.sqrt`` or ``keras.ops.sqrt``), so :class:`~crowd_keras.optimizers.LazyAdam`
(Keras tensors, dense and row-wise) and the numpy LIA engine (in place, block by block)
compute the same numbers in the same order. Layer 0: imports nothing.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["step_size", "moment_increments", "step"]


def step_size(learning_rate: Any, beta_1_power: Any, beta_2_power: Any,
              sqrt: Callable[[Any], Any]) -> Any:
    """``α_t = lr √(1 − β₂ᵗ) / (1 − β₁ᵗ)`` from the powers ``β₁ᵗ``, ``β₂ᵗ`` (``t`` counts
    from 1)."""
    return learning_rate * sqrt(1 - beta_2_power) / (1 - beta_1_power)


def moment_increments(gradient: Any, m: Any, v: Any, beta_1: Any, beta_2: Any) -> tuple:
    """``((g − m)(1 − β₁), (g² − v)(1 − β₂))``: what the moments ``m`` and ``v`` gain.

    The gradient is spent: a numpy gradient is overwritten with the second increment.
    Augmented operators: numpy works in place (one fresh array), immutable tensors rebind;
    the arithmetic is the same either way."""
    dm = gradient - m
    dm *= 1 - beta_1
    dv = gradient
    dv *= gradient
    dv -= v
    dv *= 1 - beta_2
    return dm, dv


def step(m: Any, scale: Any, alpha: Any, epsilon: Any, sqrt: Callable[[Any], Any]) -> Any:
    """``α m / (√scale + ε)``: what the weight loses (``scale``: ``v̂`` under AMSGrad,
    else ``v``); augmented operators as in :func:`moment_increments`."""
    denominator = sqrt(scale)
    denominator += epsilon
    out = m * alpha
    out /= denominator
    return out
