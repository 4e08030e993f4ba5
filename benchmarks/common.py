"""Small helpers shared by the benchmark scripts."""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

DATA = Path(os.environ.get("CROWD_KERAS_DATA") or
            Path(__file__).resolve().parents[2] / "shared" / "data")
"""The shared data sets: ``$CROWD_KERAS_DATA``, else ``../shared/data`` beside the clone (as
the tests read them)."""


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best wall time of `repeat` calls of `fn` and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def count(text: str) -> int:
    """argparse type of a count of seeds, repeats, epochs or draws: an integer >= 1 (0 ran no
    fit and failed later, inside the table, with a traceback)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value
