"""Keras optimizers of the library."""
from __future__ import annotations

from typing import Any

import keras
from keras import ops

__all__ = ["LazyAdam"]


@keras.saving.register_keras_serializable(package="crowd_keras")
class LazyAdam(keras.optimizers.Adam):
    """Adam that updates only the annotator rows present in the batch (TensorFlow backend).

    The indexed crowd layers gather per-annotator weights, so on TensorFlow their gradient
    is sparse (``tf.IndexedSlices``: the rows of the annotators in the batch). Plain Adam
    turns it dense and updates all ``A × K × K`` weights and moments every step, so an epoch
    costs more with more annotators even at a fixed number of annotations. ``LazyAdam``
    applies Adam's rule to the touched rows only (the "lazy Adam" of TF Addons and
    PyTorch's ``SparseAdam``): untouched annotators keep their weights and moments as they
    are instead of drifting on old momentum. Dense gradients (every other weight, and all
    weights on the torch and JAX backends, whose gathers give dense gradients) get the
    ordinary Adam update. Same arguments as ``keras.optimizers.Adam`` (no ``amsgrad``).

    Repeated rows (one annotator in several items of a batch) are summed before the update,
    so the first step equals Adam's on the dense gradient. (Keras' own Adam, given those
    sparse gradients, squares each repeat separately for the second moment.)
    """

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        if keras.backend.backend() != "tensorflow" or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf  # only reached on the TensorFlow backend

        if not isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = ops.cast(self.iterations + 1, dtype)
        b1, b2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
        alpha = (ops.cast(learning_rate, dtype) * ops.sqrt(1 - ops.power(b2, step))
                 / (1 - ops.power(b1, step)))
        rows = gradient.indices
        values = ops.cast(gradient.values, dtype)
        # Sum the gradients of repeated rows (one annotator in several items of the batch)
        # with a (n, n) equality matrix: static shapes, so it also runs under XLA.
        same = ops.cast(ops.equal(ops.expand_dims(rows, 1), ops.expand_dims(rows, 0)), dtype)
        flat = ops.reshape(values, (ops.shape(values)[0], -1))
        g = ops.reshape(ops.matmul(same, flat), ops.shape(values))
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        m_rows = ops.take(m, rows, axis=0) * b1 + (1 - b1) * g
        v_rows = ops.take(v, rows, axis=0) * b2 + (1 - b2) * ops.square(g)
        new_rows = ops.take(variable, rows, axis=0) - alpha * m_rows / (ops.sqrt(v_rows)
                                                                        + self.epsilon)
        # repeated rows write identical values (a scatter *update*, not an add), so the
        # scatter order does not matter
        self.assign(m, tf.IndexedSlices(m_rows, rows))
        self.assign(v, tf.IndexedSlices(v_rows, rows))
        self.assign(variable, tf.IndexedSlices(new_rows, rows))
