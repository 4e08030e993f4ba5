"""Small helpers shared by the benchmark scripts."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best wall time of `repeat` calls of `fn` and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out
