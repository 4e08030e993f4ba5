"""Feeding crowd data to Keras ``fit``: batches of items with their padded annotations."""
from __future__ import annotations

import math

import keras
import numpy as np

__all__ = ["RandomBatches"]


class RandomBatches(keras.utils.PyDataset):
    """``steps`` batches of rows drawn epoch by epoch (shuffled, without replacement)."""

    def __init__(self, inputs: dict, target: np.ndarray, batch_size: int, steps: int,
                 rng: np.random.Generator) -> None:
        super().__init__()
        n = len(target)
        self.batch = min(int(batch_size), n)
        self.inputs, self.target, self.steps = inputs, target, int(steps)
        self.order = None
        if self.batch < n:   # full batch: every step sees the same arrays, nothing to shuffle
            need = self.batch * self.steps
            reps = math.ceil(need / n)
            self.order = np.concatenate([rng.permutation(n) for _ in range(reps)])[:need]

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, i: int) -> tuple:
        if self.order is None:
            return self.inputs, self.target
        idx = self.order[i * self.batch:(i + 1) * self.batch]
        return {k: v[idx] for k, v in self.inputs.items()}, self.target[idx]
