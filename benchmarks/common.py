"""Small helpers shared by the benchmark scripts."""
from __future__ import annotations

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
