"""Scalar Python arguments checked as scikit-learn checks its parameters.

A count (``k``, ``n_splits``, ``rounds``, ``n_classes``) must be an ``int`` (a numpy integer
too; not ``bool``, not a float even when whole, not a string); a non-negative number
(``min_probability``, ``pseudo_labels``) must be a finite real. A value of the wrong type
raises ``TypeError``, one of the right type out of range ``ValueError``; the message names
the argument and the value, so that ``2.5`` is never truncated to ``2`` nor ``"3"`` read as 3.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Optional

import numpy as np

__all__ = ["check_switch", "check_count", "check_number"]


def _shown(value: Any) -> str:
    return repr(value.item() if hasattr(value, "item") and not isinstance(value, str) and
                getattr(value, "ndim", 1) == 0 else value)


def check_switch(value: Any, name: str) -> bool:
    """``value`` as a bool: True or False (numpy's too); else a ValueError naming it (a
    string such as ``"no"`` is true by its truth value, and read so it did the opposite)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {type(value).__name__} "
                     f"{_shown(value)}")


def check_count(value: Any, name: str, minimum: int = 0) -> int:
    """``value`` as a Python int, at least ``minimum``.

    Raises:
        TypeError: not an integer (``bool``, float, string, None, ...).
        ValueError: below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        hint = " (a whole number, not a float)" if isinstance(value, Real) and \
            not isinstance(value, bool) else ""
        raise TypeError(f"{name} must be an integer >= {minimum}{hint}, got "
                        f"{type(value).__name__} {_shown(value)}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_shown(value)}")
    return int(value)


def check_number(value: Any, name: str, low: float = 0.0, high: Optional[float] = None,
                 high_inclusive: bool = True) -> float:
    """``value`` as a finite Python float in ``[low, high]`` (``[low, high)`` without
    ``high_inclusive``; no upper bound when ``high`` is None).

    Raises:
        TypeError: not a real number (``bool``, string, None, ...).
        ValueError: NaN, infinite or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {_shown(value)}")
    out = float(value)
    bounds = f" in [{low:g}, {high:g}{']' if high_inclusive else ')'}" if high is not None \
        else f" >= {low:g}" if math.isfinite(low) else ""
    if not math.isfinite(out) or out < low or (high is not None and
                                               (out > high if high_inclusive else out >= high)):
        raise ValueError(f"{name} must be a finite number{bounds}, got {_shown(value)}")
    return out
