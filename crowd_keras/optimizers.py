"""Keras optimizers of the library."""
from __future__ import annotations

import functools
import types
from typing import Any

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
from keras import ops

from . import adam
from ._keras_utils import gather_rows

__all__ = ["LazyAdam"]


def sum_repeated_rows(indices: Any, values: Any) -> tuple:
    """Rows and values of a sparse gradient with each repeated row summed into one.

    TensorFlow only: ``tf.unique`` and a segment sum, so every row is written once. XLA
    compiles it too.
    """
    import tensorflow as tf

    rows, slot = tf.unique(indices)
    return rows, tf.math.unsorted_segment_sum(values, slot, tf.shape(rows)[0])


@functools.lru_cache(maxsize=None)   # looked up once, not at every step
def _torch_fused_adam() -> Any:
    """Keras' multi-tensor Adam step for the torch backend (``fn(optimizer, grads, variables,
    learning_rate)``), or None where this Keras has none (then the per-variable loop runs)."""
    try:
        from keras.src.backend.torch.optimizers.torch_adam import Adam as TorchAdam
    except ImportError:
        return None
    return getattr(TorchAdam, "_parallel_update_step", None)


@keras.saving.register_keras_serializable(package="crowd_keras")
class LazyAdam(keras.optimizers.Adam):
    """Adam that updates only the rows a sparse gradient touches (TensorFlow backend).

    The indexed crowd layers gather per-annotator weights, so on TensorFlow their gradient
    is sparse (``tf.IndexedSlices``: the rows of the annotators in the batch); so is the
    gradient of a per-item table (LIA's instance embeddings). Plain Adam turns it dense and
    updates every row and moment each step, so an epoch costs more with more annotators
    (items) even at a fixed number of annotations. ``LazyAdam`` applies Adam's rule, written
    as Keras' (``amsgrad`` too), to the touched rows only (the "lazy Adam" of TF Addons and
    PyTorch's ``SparseAdam``): untouched rows keep their weights and moments as they are
    instead of drifting on old momentum, and a step costs O(batch). When a batch touches
    every row (full batch) the numbers are Adam's. Dense gradients (every other weight, and
    all weights on the torch and JAX backends, whose gathers give dense gradients) get the
    ordinary Adam update: on TensorFlow Keras' arithmetic with the step size made once
    for all weights (:meth:`_dense_update`), on torch Keras' multi-tensor form of it, as
    ``keras.optimizers.Adam`` has there. Same arguments as ``keras.optimizers.Adam``;
    ``weight_decay`` is Keras' decoupled decay, applied by the base optimizer to every row
    of every weight each step (untouched rows shrink too: their moments stay as they are).

    Repeated rows (one annotator in several items of a batch) are summed before the update
    (:func:`sum_repeated_rows`), so the first step equals Adam's on the dense gradient.
    (Keras' own optimizers square a sparse gradient slice by slice: the crowd layers' gathers
    give each row's sum in one slice, ``_keras_utils.gather_rows``, and ``CrowdModel`` sums
    the replicas' slices under ``tf.distribute``, :func:`sum_repeated_rows_across_replicas`.)
    """

    def _backend_update_step(self, grads: list, trainable_variables: list,
                             learning_rate: Any) -> None:
        if keras.backend.backend() == "tensorflow":
            # the step size, made once per step (and device) for all variables while the
            # update is traced (see _step_size); a namespace, as Keras would wrap a dict
            self._step_sizes = types.SimpleNamespace(by_key={})
            try:
                return super()._backend_update_step(grads, trainable_variables, learning_rate)
            finally:
                self._step_sizes = None
        fused = _torch_fused_adam() if keras.backend.backend() == "torch" else None
        if fused is None:
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        # torch: Keras' multi-tensor Adam (``torch._foreach_*`` over every variable at once),
        # the update ``keras.optimizers.Adam`` itself gets on this backend. The base class's
        # per-variable loop made Adam's constants into new device tensors for each variable:
        # six host-to-device copies per variable and step, each one a wait for the GPU
        # (CrowdLayer MW: 30 of its 41 host syncs per step on an H100, benchmarks/gpu.py).
        import torch

        with torch.no_grad():
            fused(self, grads, trainable_variables, learning_rate)

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        if keras.backend.backend() != "tensorflow":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf  # only reached on the TensorFlow backend

        if not isinstance(gradient, tf.IndexedSlices):
            return self._dense_update(gradient, variable, learning_rate)
        dtype = variable.dtype
        rows, g = sum_repeated_rows(gradient.indices, ops.cast(gradient.values, dtype))
        alpha = self._step_size(variable, learning_rate)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]

        # Adam's arithmetic (crowd_keras.adam) on the rows
        m_rows, v_rows = gather_rows(m, rows), gather_rows(v, rows)
        dm, dv = adam.moment_increments(g, m_rows, v_rows, self.beta_1, self.beta_2)
        m_rows, v_rows = m_rows + dm, v_rows + dv
        updates = [(m, m_rows), (v, v_rows)]
        scale = v_rows
        if self.amsgrad:
            v_hat = self._velocity_hats[index]
            scale = ops.maximum(gather_rows(v_hat, rows), v_rows)
            updates.append((v_hat, scale))
        step_rows = adam.step(m_rows, scale, alpha, self.epsilon, ops.sqrt)
        # each row once (summed above): scatter updates of distinct rows. The weight's rows
        # too, as read rows minus the step: TensorFlow's CPU scatter_sub evaluates each row
        # as a separate Eigen expression, while scatter_update copies rows
        updates.append((variable, ops.subtract(gather_rows(variable, rows), step_rows)))
        for target, value in updates:
            self.assign(target, tf.IndexedSlices(value, rows))

    def _dense_update(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        """``keras.optimizers.Adam.update_step`` (the same formulas in the same order), with
        the step size shared by all weights (:meth:`_step_size`).

        Separate ops, not TensorFlow's fused ``ResourceApplyAdam``: on CPU the fused op
        costs more (records in ``benchmarks/PERFORMANCE.md``)."""
        alpha = self._step_size(variable, learning_rate)
        gradient = ops.cast(gradient, variable.dtype)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        dm, dv = adam.moment_increments(gradient, m, v, self.beta_1, self.beta_2)
        self.assign_add(m, dm)
        self.assign_add(v, dv)
        if self.amsgrad:
            v_hat = self._velocity_hats[index]
            self.assign(v_hat, ops.maximum(v_hat, v))
            v = v_hat
        self.assign_sub(variable, adam.step(m, v, alpha, self.epsilon, ops.sqrt))

    def _step_size(self, variable: Any, learning_rate: Any) -> Any:
        """Adam's step size of this step, ``lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ)``, in ``variable``'s dtype.

        Made once per step for all weights of a dtype and device. Keras' Adam makes it for
        each weight: two powers, casts and a read of the step counter per weight, about half
        of a crowd model's optimizer ops on TensorFlow, which does not merge them. Outside
        :meth:`_backend_update_step` (no cache) it is made afresh.
        """
        dtype = variable.dtype
        cache = getattr(getattr(self, "_step_sizes", None), "by_key", None)
        key = (dtype, getattr(variable, "device", None))
        if cache is not None and key in cache:
            return cache[key]
        step = ops.cast(self.iterations + 1, dtype)
        beta_1_power = ops.power(ops.cast(self.beta_1, dtype), step)
        beta_2_power = ops.power(ops.cast(self.beta_2, dtype), step)
        alpha = adam.step_size(ops.cast(learning_rate, dtype), beta_1_power, beta_2_power, ops.sqrt)
        if cache is not None:
            cache[key] = alpha
        return alpha


def sum_repeated_rows_across_replicas(optimizer: Any) -> Any:
    """``optimizer`` (TensorFlow), its update step given each sparse gradient with every row
    once (:func:`sum_repeated_rows`) when several replicas train.

    A replica's gathered rows already hold each row once (``_keras_utils.gather_rows``), but
    ``tf.distribute`` sums sparse gradients by concatenating the replicas' slices: a row in
    two replicas' batches reached Keras' optimizers twice, and they square a sparse gradient
    slice by slice (Adam's second moment took ``g₁² + g₂²`` for ``(g₁ + g₂)²``: another step
    than one process takes on the same global batch). ``LazyAdam`` sums them itself; with one
    replica nothing is added to the step. Returns ``optimizer``, changed in place.
    """
    if keras.backend.backend() != "tensorflow":
        return optimizer
    inner = getattr(optimizer, "inner_optimizer", optimizer)   # a LossScaleOptimizer's
    if isinstance(inner, LazyAdam) or getattr(inner, "_sums_replicas_rows", False):
        return optimizer
    import tensorflow as tf

    update_step = inner.update_step

    def summed_update_step(gradient: Any, variable: Any, learning_rate: Any) -> Any:
        if isinstance(gradient, tf.IndexedSlices) and \
                tf.distribute.get_strategy().num_replicas_in_sync > 1:
            rows, values = sum_repeated_rows(gradient.indices, gradient.values)
            gradient = tf.IndexedSlices(values, rows, gradient.dense_shape)
        return update_step(gradient, variable, learning_rate)

    inner.update_step = summed_update_step
    inner._sums_replicas_rows = True
    return optimizer
