"""Small `keras.ops` helpers shared by the crowd layers (backend-agnostic: the one tf.* call,
in :func:`gather_rows`, is TensorFlow's resource gather, where its variables need it)."""
from __future__ import annotations

import contextlib
import random
from numbers import Real
from typing import Any, Iterator, Optional

from . import keras_required  # noqa: F401  (one clear line without Keras)
from keras import ops

import keras
import numpy as np
import pandas as pd

from .errors import CrowdDataError
from .numerics import MISSING

__all__ = ["annotator_mask", "check_no_label_at_padding", "check_weight_rows",
           "apply_annotator_matrices", "batched_vector_matrix",
           "gather_annotators", "gather_rows",
           "insert_annotator_axis", "identity_initializer", "checked_noise_scale",
           "weight_in_use", "is_shape_list", "split_pair", "n_rows", "split_padding",
           "seeded_construction", "scale_and_shift", "checked_layer_args", "keras_mask",
           "hide_masked_steps", "first_mask", "KeepsTimeStepMask", "KeepsLossDtype",
           "scalar_like", "known_shape", "known_rank", "shapes_match", "check_target_shape",
           "batch_size_on_device", "observed_mean", "observed_mean_of_all",
           "scaled_for_replicas", "reduced_per_item", "weights_at_real_steps", "static_width",
           "floor_at", "clip_probabilities",
           "at_least_float32", "floored_log",
           "softmax", "softmax_logits", "with_keras_mask", "checked_int", "checked_bool",
           "checked_finite", "checked_annotator_features",
           "concrete_values", "concrete_targets", "checked_codes", "ChecksIdsAtEntry",
           "checked_ids_shape",
           "integer_codes", "integer_ids"]

try:  # the one place that reads and sets the mask Keras attaches to a tensor (no public API)
    from keras.src.backend import get_keras_mask as _get_keras_mask
    from keras.src.backend import set_keras_mask as _set_keras_mask
except ImportError:  # pragma: no cover - other Keras 3 releases
    def _get_keras_mask(x: Any) -> Any:
        return getattr(x, "_keras_mask", None)

    def _set_keras_mask(x: Any, mask: Any) -> None:
        x._keras_mask = mask


@contextlib.contextmanager
def seeded_construction(seed: Optional[int]) -> Iterator[None]:
    """Make the weights and dropout of layers built inside the block depend on ``seed`` only.

    Keras draws the seed of an unseeded initializer or ``SeedGenerator`` from Python's
    ``random`` when it is created, and then draws values deterministically from it. Seeding
    ``random`` for the block and restoring its state afterwards gives reproducible models
    without ``keras.utils.set_random_seed``'s global side effects. ``seed=None``: no change.
    """
    if seed is None:
        yield
        return
    state = random.getstate()
    random.seed(int(seed))
    try:
        yield
    finally:
        random.setstate(state)


def n_rows(x: Any) -> Any:
    """Number of rows of an array or of the first array of a nested structure (None if empty)."""
    leaves = keras.tree.flatten(x)
    if not leaves:
        return None
    # a tf.data.Dataset, a generator, a scalar: no rows to count; a keras.utils.PyDataset
    # (a sequence of batches: numpy would read every batch to count them as rows) neither
    if isinstance(x, (list, tuple)) and np.ndim(leaves[0]) == 0:
        # a list is one array per input of a multi-input model, not rows
        raise TypeError(f"x is a {type(x).__name__} of numbers (rows); give it as an array, "
                        "np.asarray(x) (a list is read as one array per input of a "
                        "multi-input model)")
    if isinstance(leaves[0], keras.utils.PyDataset) or np.ndim(leaves[0]) == 0:
        raise TypeError(f"x must be arrays with one row per item (or a dict/list of them), "
                        f"got {type(leaves[0]).__name__}")
    return int(np.shape(leaves[0])[0])


def check_finite_rows(x: Any, what: str = "x") -> None:
    """CrowdDataError naming the first row of ``x`` (an array or a nested structure of them,
    rows first) with a NaN or infinite value. Unchecked, such a row gives NaN weights in
    training and a NaN prediction, which ``argmax`` reads as class 0, naming no row."""
    for leaf in keras.tree.flatten(x):
        a = np.asarray(leaf)
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            row = int(np.argwhere(~np.isfinite(a.reshape(len(a), -1)))[0, 0])
            raise CrowdDataError(f"{what} has a non-finite value in row {row}")


def is_shape_list(shape: Any) -> bool:
    """True for a list of shapes (a layer called on a list such as ``[probs, annotator_ids]``)."""
    return (isinstance(shape, (list, tuple)) and len(shape) > 0
            and isinstance(shape[0], (list, tuple)))


def split_pair(input_shape: Any, forms: str) -> tuple:
    """``(first, second or None)`` of a layer's input shape: one shape, or a list of exactly
    two (``[probs, annotator_ids]``); a list of another length is the ValueError its call
    raises (``forms``: the layer's call forms), here for a symbolic call too (a functional
    model), which runs ``build`` and ``compute_output_shape`` but no ``call``."""
    if not is_shape_list(input_shape):
        return tuple(input_shape), None
    if len(input_shape) != 2:
        raise ValueError(f"{forms}, got a list of {len(input_shape)} inputs")
    return tuple(input_shape[0]), tuple(input_shape[1])


def static_shapes(inputs: Any) -> Any:
    """The static shape of a layer's input (a tuple, None for an unknown axis), or the list
    of them for a list of inputs: what ``build`` and ``compute_output_shape`` receive."""
    def shape(x: Any) -> tuple:
        return tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))

    if isinstance(inputs, (list, tuple)):
        return [shape(x) for x in inputs]
    return shape(inputs)


def check_weight_rows(sample_weight: Any, y_true: Any, name: str) -> None:
    """ValueError naming the loss when a ``sample_weight`` of rank 1 or more has another
    number of rows than the targets (a backend's broadcast error otherwise; Keras' ``fit``
    checks rows first, a direct call or a custom loop does not). Unknown sizes pass."""
    if sample_weight is None:
        return
    weights, targets = known_shape(sample_weight), known_shape(y_true)
    if not weights or not targets or None in (weights[0], targets[0]):
        return
    if weights[0] != targets[0]:
        raise ValueError(f"{name}: sample_weight of shape {weights} does not have the "
                         f"targets' {targets[0]} rows (targets {targets}): one weight per item "
                         "(batch,), per step (batch, time) or per slot")


def known_shape(x: Any) -> Any:
    """The static shape of an array or tensor as a tuple (None for an unknown size), None
    where a compiled step does not know its rank (Keras' temporal sample weights)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        return tuple(np.shape(x))
    try:
        return tuple(shape)
    except (TypeError, ValueError):
        return None


def shapes_match(got: tuple, expected: tuple) -> bool:
    """Same rank and every axis size equal where both are known (a target of size 1 where a
    prediction has more would broadcast in the arithmetic: a silent wrong value)."""
    return len(got) == len(expected) and all(g is None or e is None or g == e
                                             for g, e in zip(got, expected))


def check_target_shape(y_true: Any, expected: tuple, name: str,
                       what: str = "one entry per item and annotator slot") -> None:
    """ValueError naming both shapes unless ``y_true``'s matches ``expected``
    (:func:`shapes_match`): a target of size 1 broadcast silently, another failed in a
    backend op."""
    got = tuple(y_true.shape)
    if not shapes_match(got, expected):
        raise ValueError(f"{name}: targets of shape {got} do not match predictions; expected "
                         f"{expected} ({what})")


def known_rank(x: Any) -> Any:
    """The rank of an array or tensor, None where a compiled step does not know it."""
    shape = known_shape(x)
    return None if shape is None else len(shape)


def annotator_mask(annotator_ids: Any) -> Any:
    """Boolean mask of real slots in padded codes: False where a slot holds ``MISSING`` (-1).

    The one padding test of the layers and losses (annotator ids or labels, any shape).
    The tensor's own ``>`` (``ops.greater`` on a symbolic one): ``ops.greater`` would make
    ``MISSING`` a new device tensor at every step, a host-to-device copy that makes the host
    wait for a GPU under torch.
    """
    return annotator_ids > MISSING


def split_padding(codes: Any) -> tuple[Any, Any]:
    """``(safe, mask)`` of padded int codes: ``safe`` has ``MISSING`` replaced by 0 (a valid
    index to gather with), ``mask`` is True at real slots."""
    codes = ops.cast(codes, "int32")
    # max(codes, 0): 0 wherever the mask is False (every negative code), the code elsewhere;
    # one op where a select needs two (and its zeros)
    return floor_at(codes, 0), annotator_mask(codes)


def gather_rows(table: Any, idx: Any) -> Any:
    """``table[idx]`` (rows along the first axis) of a weight updated row by row.

    On TensorFlow a Keras variable is gathered through its resource (``ResourceGather``),
    which reads the rows only. ``ops.take`` reads the whole variable first, and while such a
    read may be alive TensorFlow's next sparse update of the variable (``LazyAdam``, SGD on
    the rows) copies the whole table: an O(rows of the table) cost per step. Elsewhere (and
    for tensors) ``ops.take``.

    The variable's gradient is then sparse (``tf.IndexedSlices``, one slice per entry of
    ``idx``), with each row's repeats summed into its first slice (:func:`_summed_repeats`):
    Keras' optimizers square a sparse gradient slice by slice, so an annotator in several
    items of a batch got ``Σ g²`` for ``(Σ g)²`` in Adam's second moment, and another step
    than from the same labels in a dense matrix (or on torch and JAX).

    The crowd layers' per-annotator tables are made with ``autocast=False``: under a mixed
    precision policy Keras' autocast would read and cast the whole table to float16 at every
    step, an O(annotators) cost again; the layers cast the rows they gathered instead.
    """
    if keras.backend.backend() == "tensorflow" and isinstance(table, keras.Variable):
        import tensorflow as tf

        return _summed_repeats(tf.gather(table.value, idx), idx)
    return ops.take(table, idx, axis=0)


def _summed_repeats(rows: Any, idx: Any) -> Any:
    """``rows`` (TensorFlow, gathered at ``idx``) whose gradient holds, at the first entry
    of each distinct index, the sum over its repeats, and 0 at the repeats: the same sum per
    row, and a square per row. Static shapes (no ``tf.unique`` row count): XLA compiles it."""
    import tensorflow as tf

    @tf.custom_gradient
    def identity(rows: Any) -> tuple:
        def grad(upstream: Any) -> Any:
            flat = tf.reshape(idx, [-1])
            n = tf.size(flat)
            _, slot = tf.unique(flat)                  # (n,): each entry's distinct row
            position = tf.range(n)
            first = tf.math.unsorted_segment_min(position, slot, n)
            summed = tf.math.unsorted_segment_sum(tf.reshape(upstream, [n, -1]), slot, n)
            at_first = tf.equal(tf.gather(first, slot), position)[:, None]
            values = tf.where(at_first, tf.gather(summed, slot), tf.zeros_like(summed[:1]))
            return tf.reshape(values, tf.shape(upstream))

        return tf.identity(rows), grad

    return identity(rows)


def gather_annotators(weights: Any, annotator_ids: Any) -> tuple[Any, Any]:
    """Rows of per-annotator ``weights`` for padded ``annotator_ids``.

    Args:
        weights: ``(annotators, *shape)`` tensor, one slice per annotator.
        annotator_ids: ``(batch, k)`` integer codes, -1 = padding.

    Returns:
        ``(gathered, mask)``: ``gathered`` is ``(batch, k, *shape)`` (padding slots hold
        annotator 0's slice, to be masked by the caller or the loss) and ``mask`` is the
        ``(batch, k)`` boolean mask of real slots. Cost is proportional to ``batch × k``,
        not to the number of annotators.
    """
    safe, mask = split_padding(annotator_ids)
    return gather_rows(weights, safe), mask


def apply_annotator_matrices(probs: Any, matrices: Any) -> Any:
    """``probs @ M`` for each listed annotator's matrix: ``Σ_i probs[..., i] M[b, k, i, j]``.

    ``probs (batch, [time,] K)`` and gathered ``matrices (batch, k, K, K')`` → ``(batch,
    [time,] k, K')``: the indexed forward of the matrix-weight noise layers (CrowdLayer MW,
    CoNAL's individual matrices). Through :func:`batched_vector_matrix` (a broadcast product
    and a sum, not a batched matmul: see there).
    """
    matrices = ops.cast(matrices, probs.dtype)
    if len(probs.shape) == 3:
        matrices = ops.expand_dims(matrices, 1)                      # (batch, 1, k, K, K')
    # expand_dims, not probs[..., None, :]: a strided slice's gradient is TensorFlow's generic
    # StridedSliceGrad, expand_dims' a reshape
    return batched_vector_matrix(ops.expand_dims(probs, -2), matrices)


def batched_vector_matrix(vectors: Any, matrices: Any) -> Any:
    """``Σ_i vectors[..., i] · matrices[..., i, j]``: a vector times a matrix in every batch
    slot (``(..., I)`` and ``(..., I, J)`` broadcast against each other → ``(..., J)``).

    A broadcast product and a sum over ``i``, not ``ops.matmul`` on ``(..., 1, I)``: the
    crowd layers' matrices are tiny (K × K per annotator slot), and TensorFlow's CPU batched
    matmul (oneDNN) and its two gradient matmuls cost more per call than the arithmetic;
    an einsum (``"bi,bkij->bkj"``) runs with transposes.
    """
    return ops.sum(ops.expand_dims(vectors, -1) * matrices, axis=-2)


def scale_and_shift(h: Any, scale: Any = None, bias: Any = None) -> Any:
    """``h · scale + bias`` (either may be None), in ``h``'s dtype: the per-annotator vector
    and bias forms of the crowd layers (``VW``, ``VB``, ``VW+B``; regression ``S``, ``B``)."""
    out = h
    if scale is not None:
        out = out * ops.cast(scale, h.dtype)
    if bias is not None:
        out = out + ops.cast(bias, h.dtype)
    return out


def insert_annotator_axis(x: Any) -> Any:
    """``(..., c)`` → ``(..., 1, c)``: room for the annotator axis just before the last one."""
    return ops.expand_dims(x, axis=-2)


def identity_initializer(shape: tuple, dtype: Any = None) -> Any:
    """A stack of identity matrices, ``shape = (n, c, c)`` (the paper's initialisation)."""
    n, rows, cols = shape
    # tile, not broadcast_to: torch would get a stride-0 view that in-place updates reject
    return ops.tile(ops.expand_dims(ops.eye(rows, cols, dtype=dtype), 0), (n, 1, 1))


def checked_layer_args(num_annotators: Any, conn_type: str, choices: tuple) -> tuple[int, str]:
    """A crowd layer's ``num_annotators`` (a positive integer) and ``conn_type`` (one of
    ``choices``, case and spaces ignored), or ValueError."""
    conn = str(conn_type).upper().replace(" ", "")
    if conn not in choices:
        raise ValueError(f"conn_type must be one of {choices}, got {conn_type!r}")
    return checked_int(num_annotators, "num_annotators"), conn


def checked_noise_scale(init_scale: float, learning_rate_multiplier: float) -> tuple[float, float]:
    """Validate a noise layer's ``init_scale`` and ``learning_rate_multiplier``: finite
    numbers (:func:`checked_finite`: an infinite one made every output NaN, a string or None
    failed in ``float()`` without naming it), both > 0."""
    scale = checked_finite(init_scale, "init_scale")
    multiplier = checked_finite(learning_rate_multiplier, "learning_rate_multiplier")
    if not scale > 0 or not multiplier > 0:
        raise ValueError("init_scale and learning_rate_multiplier must be positive, got "
                         f"{init_scale!r} and {learning_rate_multiplier!r}")
    return scale, multiplier


def checked_ids_shape(ids_shape: Any, layer: str) -> tuple:
    """The shape of a noise layer's ``annotator_ids``, ``(batch, k)``, or ValueError naming
    it: a symbolic call (a functional model) checks it here, in ``build`` and
    ``compute_output_shape``, as it does not run ``call``."""
    if len(ids_shape) != 2:
        raise ValueError(f"{layer} expects annotator_ids of shape (batch, k): the slots of "
                         "each item (one row per item, shared by its time steps), got "
                         f"{tuple(ids_shape)}")
    return tuple(ids_shape)


def scalar_like(x: Any, value: float) -> Any:
    """``value`` as a 0-d tensor of ``x``'s dtype: ``ops.cast(value, x.dtype)``, made on the
    device.

    Keras' torch backend turns a Python number given to an op (``ops.maximum(x, 1e-7)``)
    into a new tensor on the device at every call: a host-to-device copy that makes the host
    wait for the GPU, one per op and step (``benchmarks/gpu.py``'s host-sync count). A zero
    made on the device plus the number is no copy on any backend; in a compiled graph
    (TensorFlow, JAX) it is folded to a constant.
    """
    return ops.zeros((), dtype=keras.backend.standardize_dtype(x.dtype)) + value


def batch_size_on_device(x: Any, dtype: Any = "float32") -> Any:
    """The length of ``x``'s first axis as a 0-d ``dtype`` tensor, counted on the device: the
    shape cast to a tensor would be a host-to-device copy at every step (see
    :func:`scalar_like`)."""
    first = x[(slice(None),) + (0,) * (len(x.shape) - 1)]
    return ops.sum(ops.ones_like(first, dtype=dtype))


def observed_mean(values: Any, mask: Any) -> Any:
    """Per-item values ``(batch,)`` whose batch mean is ``Σ values[mask] / n_observed``."""
    values = ops.where(mask, values, ops.zeros_like(values))
    axes = tuple(range(1, len(values.shape)))
    per_item = ops.sum(values, axis=axes) if axes else values
    n_obs = ops.sum(ops.cast(mask, values.dtype))
    batch = batch_size_on_device(per_item, values.dtype)
    return per_item * (batch / ops.maximum(n_obs, ops.ones_like(n_obs)))


def observed_mean_of_all(values: Any, mask: Any) -> Any:
    """``Σ values[mask] / n_observed`` as one 0-d value (0 when nothing is observed), for
    ``values`` and ``mask`` of one shape, any layout; values outside the mask are left out
    (NaN ones too) and get a zero gradient. The scalar that :func:`observed_mean`'s per-item
    values average to, made with fewer ops (no batch size, no per-item sums)."""
    total = ops.sum(ops.where(mask, values, scalar_like(values, 0.0)))
    n_obs = ops.sum(ops.cast(mask, values.dtype))
    # max(n, 1), not divide_no_nan: its Python 0 would be a host copy per step under torch
    return total / ops.maximum(n_obs, ops.ones_like(n_obs))


def scaled_for_replicas(loss: Any) -> Any:
    """``loss`` divided by the number of replicas of the ``tf.distribute`` strategy in scope
    (TensorFlow; unchanged elsewhere), as Keras scales its reduced losses
    (``keras.losses.Loss`` with ``"sum_over_batch_size"``): the replicas' gradients are
    summed."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            loss = loss * ops.cast(1.0 / replicas, loss.dtype)
    return loss


def reduced_per_item(per_item: Any, weights: Any, reduction: Any, real: Any = None) -> Any:
    """A loss's per-item values ``(batch,)`` reduced as Keras reduces a loss's values, for
    sample weights ``(batch, w)`` (per step or per slot) already multiplied into them:
    ``"sum_over_batch_size"`` and ``"mean"`` divide the sum by the batch size,
    ``"mean_with_sample_weight"`` by the items' mean weights summed (both then divided by
    the replicas, :func:`scaled_for_replicas`), ``"sum"`` is the sum, ``None``/``"none"``
    the values. A zero divisor (weights all 0, an empty batch) gives 0, as Keras'
    ``divide_no_nan`` (a NaN loss there made every weight NaN).

    ``real`` ``(batch, w)``: 1 where a weight sits on a real step, 0 on a step a Keras mask
    pads (:func:`weights_at_real_steps`); an item's mean weight is then over its real steps,
    so that the weights of padding have no say in the divisor either."""
    if reduction in (None, "none"):
        return per_item
    total = ops.sum(per_item)
    if reduction == "sum":
        return total
    if reduction != "mean_with_sample_weight":
        divisor = batch_size_on_device(per_item, per_item.dtype)
    elif real is None:
        divisor = ops.sum(ops.mean(weights, axis=1))
    else:
        steps = ops.sum(real, axis=1)
        divisor = ops.sum(ops.sum(weights, axis=1) / ops.maximum(steps, ops.ones_like(steps)))
    # the sum is 0 where the divisor is (every weight 0, or no item): 0 / 1; a where on the
    # quotient would still send a NaN gradient through its unused 0 / 0
    divisor = ops.where(divisor != 0, divisor, ops.ones_like(divisor))
    return scaled_for_replicas(total / divisor)


def weights_at_real_steps(weights: Any, mask: Any) -> tuple[Any, Any]:
    """``(weights, real)``: sample weights per step or per slot (``(batch, time[, slots])``)
    set to 0 where a Keras ``mask`` (``(batch, time)``) pads, and ``real``, 1 at the weights
    of real steps and 0 elsewhere, both of the weights' shape (``real`` None, and the weights
    unchanged, without a mask or where their rank is unknown or below the mask's).

    The weights of padded steps have no say: a padded step's loss is left out of the sum,
    and :func:`reduced_per_item` leaves its weight out of ``"mean_with_sample_weight"``'s
    divisor, as Keras' own losses weigh a mask into their sample weights."""
    rank = known_rank(weights)
    if mask is None or rank is None or len(mask.shape) > rank:
        return weights, None
    real = ops.cast(mask, weights.dtype)
    while len(real.shape) < rank:
        real = ops.expand_dims(real, -1)
    real = ops.broadcast_to(real, ops.shape(weights))
    return weights * real, real


def static_width(shape: Any) -> int:
    """The number of entries per row of a tensor of static ``shape`` (the product of its
    sizes after the first), -1 where a size or the rank is unknown (a compiled step's).

    A reshape to ``(batch, width)`` of a batch of 0 rows needs the width: JAX and torch
    cannot infer a -1 beside a 0."""
    if shape is None or any(size is None for size in shape[1:]):
        return -1
    return int(np.prod(shape[1:], dtype=np.int64))


def floor_at(x: Any, value: float) -> Any:
    """``max(x, value)`` elementwise for a Python number ``value``, without a host copy of it
    (:func:`scalar_like`)."""
    return ops.maximum(x, scalar_like(x, value))


def at_least_float32(x: Any) -> Any:
    """``x`` in float32 when it is a half-precision float (float32 and float64 stay).

    Under a mixed policy some steps need float32's range, as Keras' losses compute in
    float32: in float16 a floor such as 10⁻⁷ or 10⁻¹² is subnormal or 0, squares overflow,
    and the gradient of a log at its floor (1/10⁻⁷) is infinite, so that the floor's zero
    gradient times it is NaN."""
    if keras.backend.standardize_dtype(x.dtype) in ("float16", "bfloat16"):
        return ops.cast(x, "float32")
    return x


def floored_log(p: Any, eps: float) -> Any:
    """``log(max(p, eps))`` computed at least in float32 (:func:`at_least_float32`: in
    float16 the gradient of a probability under the floor was NaN), in ``p``'s dtype."""
    return ops.cast(ops.log(floor_at(at_least_float32(p), eps)), p.dtype)


def clip_probabilities(p: Any, eps: float) -> Any:
    """``clip(p, eps, 1)``, without host copies of the bounds (:func:`scalar_like`)."""
    return ops.clip(p, scalar_like(p, eps), scalar_like(p, 1.0))


def softmax(x: Any, axis: int = -1) -> Any:
    """``ops.softmax(x, axis)``, computed on TensorFlow as ``exp(log_softmax(x))``.

    The crowd layers' softmaxes run on tiny tensors at every step (mixture of groups' (M, K, K)
    confusions and (batch, k, M) memberships, LIA's (batch, k, C, C) rows). TensorFlow's CPU
    build hands ``Softmax`` to oneDNN, whose call costs far more than the arithmetic of
    ``exp(log_softmax)``. The two agree to rounding. Other backends: ``ops.softmax`` (one fused kernel).
    """
    if keras.backend.backend() == "tensorflow":
        return ops.exp(ops.log_softmax(x, axis=axis))
    return ops.softmax(x, axis=axis)


def softmax_logits(probs: Any) -> Any:
    """The logits ``z`` of probabilities made as ``softmax(z)`` over the last axis, or None.

    TensorFlow graph tensors only, where the producing op can be read: a ``Softmax`` op
    (TensorFlow's softmax over another axis ends in a transpose, so this is the last axis),
    the same test Keras' own TensorFlow losses use to take a classifier's logits. Elsewhere
    (eager tensors, torch, JAX) None: the ``_keras_logits`` that Keras attaches there is also
    set by a sigmoid, so it does not say which activation made the tensor.

    Why: ``CrowdModel`` wants both the probabilities and their log. From the logits that is
    ``exp(log_softmax(z))`` and ``log_softmax(z)``, one pass each, instead of the oneDNN
    ``Softmax`` plus a floor, a log and another ``log_softmax``; on the CPU a softmax over a
    (64, 8) batch costs more in oneDNN's call than in its arithmetic.
    """
    op = getattr(probs, "op", None)
    if op is None or getattr(op, "type", None) != "Softmax" or len(op.inputs) != 1:
        return None
    return op.inputs[0]


def weight_in_use(weight: Any, multiplier: float, dtype: Any) -> Any:
    """A noise layer's weight as used: the stored variable × ``learning_rate_multiplier``.

    Storing ``W / m`` and using ``m ·`` it makes an Adam step move ``W`` m times further
    (Adam is invariant to the gradient's scale): a per-layer learning rate.
    """
    w = ops.cast(weight, dtype)
    return w if multiplier == 1.0 else w * multiplier


def keras_mask(x: Any) -> Any:
    """The Keras mask attached to ``x`` (e.g. ``(batch, time)`` from ``Embedding(mask_zero=True)``
    through the layers that propagate it), or None."""
    return _get_keras_mask(x)


def with_keras_mask(x: Any, mask: Any) -> Any:
    """``x`` carrying the Keras mask ``mask`` (None: unchanged), for a tensor computed from a
    masked one outside a layer, so that the next layer still sees the mask."""
    if mask is not None:
        _set_keras_mask(x, mask)
    return x


def first_mask(mask: Any) -> Any:
    """The mask of a layer's first input (``[probs, annotator_ids]`` → the mask of ``probs``):
    the crowd layers' output keeps the time steps of the probabilities."""
    if isinstance(mask, (list, tuple)):
        return mask[0] if mask else None
    return mask


def hide_masked_steps(y_true: Any, y_pred: Any, mask: Any, missing: Any) -> tuple[Any, Any]:
    """Targets with ``missing`` at the steps ``mask`` (a prefix of ``y_true``'s shape, e.g.
    ``(batch, time)``) marks False, and ``y_pred`` as a new tensor without Keras' mask.

    The masked losses then count only real steps through their own missing marker, and
    Keras' ``Loss.__call__`` does not weight the per-item values by a mask of another shape.
    """
    y_true = ops.convert_to_tensor(y_true)
    if isinstance(missing, float):
        # at least float32: float16 predictions (a mixed policy) would round the targets
        # (1000.3 → 1000) or overflow them (70000 → inf) before the loss casts to its dtype
        y_true = ops.cast(y_true, keras.backend.result_type(y_pred.dtype, "float32"))
    mask = ops.cast(mask, "bool")
    while len(mask.shape) < len(y_true.shape):
        mask = ops.expand_dims(mask, -1)
    y_true = ops.where(mask, y_true, ops.full_like(y_true, missing))
    return y_true, ops.add(y_pred, ops.zeros((), dtype=y_pred.dtype))


class KeepsLossDtype:
    """Mixin of the package's Keras losses: ``get_config`` keeps the ``dtype`` the loss
    computes in. Keras' ``Loss.get_config`` leaves it out, so a ``MaskedMultiCrossEntropy(
    dtype="float64")`` came back from ``from_config`` or a ``.keras`` file in float32."""

    def get_config(self) -> dict:
        config = super().get_config()
        config.setdefault("dtype", self.dtype)
        return config


class KeepsTimeStepMask:
    """Mixin of the annotator layers that take ``[probabilities, annotator_ids]``."""

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The Keras mask of the outputs: the time-step mask of the first input (a
        ``(batch, time)`` mask from ``Embedding(mask_zero=True)``, say) is kept on the
        ``(batch, time, slots[, K])`` output, so the masked losses skip padded steps."""
        return first_mask(mask)


# ----------------------------------------------------------------------------- argument checks
def checked_int(value: Any, name: str, minimum: int = 1, allow_none: bool = False) -> Any:
    """``value`` as an int, or ValueError as Keras' own layers raise for ``units=2.5``: an
    integer (Python or numpy; not a bool, not a float, even an integral one) of at least
    ``minimum`` (None passes through when ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ValueError(f"Received an invalid value for `{name}`, expected an integer of at "
                         f"least {minimum}. Received: {name}={value!r}")
    return int(value)


def checked_bool(value: Any, name: str) -> bool:
    """``value`` as a bool, or ValueError for anything but True/False (or 0/1)."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer))
                                               and value in (0, 1)):
        return bool(value)
    raise ValueError(f"Received an invalid value for `{name}`, expected True or False. "
                     f"Received: {name}={value!r}")


def checked_finite(value: Any, name: str) -> float:
    """``value`` as a finite float, or ValueError naming it: a NaN or infinite scale or
    loss weight makes every output or loss NaN, silently. A string or bool is a TypeError
    (``float("2")`` would take a string)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"Received an invalid value for `{name}`, expected a number. "
                        f"Received: {name}={value!r}")
    out = float(value)
    if not np.isfinite(out):
        raise ValueError(f"Received an invalid value for `{name}`, expected a finite number. "
                         f"Received: {name}={value!r}")
    return out


def checked_annotator_features(features: Any, layer: str) -> Optional[np.ndarray]:
    """A layer's ``annotator_features`` as a float32 ``(annotators, f)`` array with at least
    one row and finite values (a NaN made every annotator's output NaN), or ValueError
    naming the layer; None passes through."""
    if features is None:
        return None
    try:
        feats = np.asarray(features, dtype="float32")
    except (TypeError, ValueError):   # a string: numpy's message named no argument
        raise TypeError(f"{layer}: annotator_features must be a numeric (annotators, "
                        f"features) array, got {type(features).__name__}") from None
    if feats.ndim != 2 or not len(feats):
        raise ValueError(f"{layer}: annotator_features must be (annotators, features) with at "
                         f"least one annotator, got shape {feats.shape}")
    if not np.isfinite(feats).all():
        row, col = (int(i) for i in np.argwhere(~np.isfinite(feats))[0])
        raise ValueError(f"{layer}: annotator_features must be finite, got "
                         f"{feats[row, col]} at (annotator {row}, feature {col})")
    return feats


# ----------------------------------------------------------------------------- data checks
def concrete_values(x: Any) -> Optional[np.ndarray]:
    """The values of data entering a layer or loss from outside a compiled step: a numpy
    array, a list, or an eager TensorFlow tensor; None for a symbolic or traced tensor (a
    training step's: nothing is added to its graph) and for torch and JAX tensors (whose
    steps run eagerly: a check there would be a per-step copy to the host)."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        try:
            return np.asarray(x)
        except (ValueError, TypeError):
            return None
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        symbolic = getattr(tf, "is_symbolic_tensor", lambda t: not hasattr(t, "numpy"))
        if tf.is_tensor(x) and tf.executing_eagerly() and not symbolic(x):
            return x.numpy()
    return None


def _readable_mask(mask: Any) -> Optional[np.ndarray]:
    """A Keras mask's values when they can be read outside a compiled step: an eager
    TensorFlow tensor (:func:`concrete_values`), a JAX array that is not a tracer, a torch
    tensor outside ``torch.compile``; None otherwise."""
    values = concrete_values(mask)
    if values is not None:
        return values
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        if isinstance(mask, jax.Array) and not isinstance(mask, jax.core.Tracer):
            return np.asarray(mask)
    elif backend == "torch":
        import torch

        if isinstance(mask, torch.Tensor) and not torch.compiler.is_compiling():
            return mask.detach().cpu().numpy()
    return None


def concrete_targets(y_true: Any, mask: Any, missing: Any) -> Optional[np.ndarray]:
    """The values of targets that enter as data (:func:`concrete_values`), with the steps a
    Keras ``mask`` (a prefix of their shape) marks False set to ``missing``: what a masked
    loss or metric sees after :func:`hide_masked_steps`, for its data checks. None when the
    targets are not data, or the mask cannot be read (:func:`_readable_mask`).

    Why: checked after ``hide_masked_steps`` (a backend tensor, which ``concrete_values``
    reads on TensorFlow only), a masked batch's targets went unchecked on JAX and torch (a
    label past the classes gave a wrong loss or NaN); checked before it, the targets of
    padded steps, which count as missing, were refused (a tagger's -100 padding).
    """
    values = concrete_values(y_true)
    if values is None or mask is None:
        return values
    keep = _readable_mask(mask)
    if keep is None:
        return None
    if keep.shape != values.shape[:keep.ndim]:   # hide_masked_steps names the mismatch
        return None
    keep = keep.astype(bool)
    keep = keep.reshape(keep.shape + (1,) * (values.ndim - keep.ndim))
    if isinstance(missing, float):   # NaN (a missing answer) or 0.0 (no label count)
        values = values.astype(np.result_type(values.dtype, np.float32))
    return np.where(keep, values, np.asarray(missing, dtype=values.dtype))


def checked_answers(values: np.ndarray, argument: str) -> np.ndarray:
    """Real-valued answers (regression targets) as given, else
    :class:`~crowd_keras.CrowdDataError` naming the argument, the position and the value
    of an infinite one (NaN = missing; an infinite answer, or one beyond float32, makes
    the squared error infinite and the weights NaN after one step). One vectorised pass,
    where data enter."""
    bad = np.isinf(values)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        raise CrowdDataError(f"{argument}: answer {values[pos].item()!r} at {pos} is not a "
                             f"finite number ({int(bad.sum())} such value(s); as float32, the "
                             "targets' type); NaN marks a missing answer")
    return values


def checked_codes(values: Any, bound: Optional[int], what: str, argument: str,
                  bound_name: str) -> np.ndarray:
    """Integer codes in ``-1..bound-1`` (-1 = missing or padding; ``bound`` None: no upper
    bound) as an int32 array, else :class:`~crowd_keras.CrowdDataError` naming the argument,
    the position and the value: a fraction (``1.7``), a NaN, a code below -1 (``-2`` is no
    padding marker), a code at or above ``bound``. One vectorised pass per array: run where
    data enter (``CrowdModel.fit``'s targets, a dataset builder), never per step."""
    a = np.asarray(values)
    if a.dtype.kind == "b" or a.dtype.kind not in "iuf":
        if a.dtype == object:
            # numbers only (None / pd.NA read as NaN, named below): astype(float) read the
            # text "1" as the code 1, which every reader refuses
            missing = np.array([v is None or v is pd.NA for v in a.ravel()], bool)
            number = missing | np.array([isinstance(v, (int, float, np.number)) and not
                                         isinstance(v, (bool, np.bool_)) for v in a.ravel()],
                                        bool)
            if not number.all():
                pos = tuple(int(p) for p in np.unravel_index(int(np.argmax(~number)), a.shape))
                v = a[pos]
                raise CrowdDataError(f"{argument}: {what}s must be integer codes, got "
                                     f"{type(v).__name__} {v!r} at {pos}")
            a = np.where(missing.reshape(a.shape), np.nan, a).astype(np.float64)
        else:
            raise CrowdDataError(f"{argument}: {what}s must be integer codes, got dtype {a.dtype}")

    def at(bad: np.ndarray) -> tuple:
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        value = a[pos].item()
        return pos, value, int(bad.sum())

    if a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.round(a))
        if bad.any():
            pos, value, n = at(bad)
            raise CrowdDataError(f"{argument}: {what} {value!r} at {pos} is not an integer "
                                 f"code ({n} such value(s)); -1 is the code for a missing one")
    a = a.astype(np.int64)
    bad = a < -1
    if bad.any():
        pos, value, n = at(bad)
        raise CrowdDataError(f"{argument}: {what} {value} at {pos} is below -1 ({n} such "
                             f"value(s)); -1 is the only code for a missing one")
    if bound is not None:
        bad = a >= bound
        if bad.any():
            pos, value, n = at(bad)
            limit = f"{bound_name}={bound}" if bound_name.startswith("num_") else \
                f"{bound} {bound_name}"
            raise CrowdDataError(f"{argument}: {what} {value} at {pos} is outside 0..{bound - 1} "
                                 f"({limit}; {n} such value(s))")
    return a.astype(np.int32)


def integer_codes(codes: Any) -> Any:
    """Floating integer ``codes`` (annotator ids or instance indices from a ``keras.Input`` of
    the default dtype, a float array) as int32, before Keras' ``Layer.__call__`` sees them:
    under a mixed policy it casts every floating input to the compute dtype, and bfloat16
    rounds codes above 256 (float16 above 2048) to other codes, silently or past the table's
    end. Other codes, and symbolic ones (a functional model being built: the model calls
    the layer again on tensors), pass unchanged."""
    if codes is None or isinstance(codes, keras.KerasTensor):
        return codes
    dtype = getattr(codes, "dtype", None)
    if dtype is None:
        dtype = np.asarray(codes).dtype
    if not keras.backend.is_float_dtype(keras.backend.standardize_dtype(dtype)):
        return codes
    return ops.cast(codes, "int32")


def integer_ids(inputs: Any, ids: Any) -> Any:
    """``inputs`` (a list) with its annotator ``ids`` as :func:`integer_codes`."""
    if ids is None or not isinstance(inputs, (list, tuple)):
        return inputs
    as_int = integer_codes(ids)
    if as_int is ids:
        return inputs
    return type(inputs)(as_int if x is ids else x for x in inputs)


class ChecksIdsAtEntry:
    """A layer mixin: annotator ids that enter a call as data (numpy, a list or an eager
    TensorFlow tensor: :func:`concrete_values`) are checked against ``num_annotators``
    before the call (:func:`checked_codes`): ``-2`` would read annotator 0's weights and
    ``1.7`` be truncated to 1. Tensors inside a compiled step are not checked: no op is added
    to the graph (``CrowdModel.fit`` checks its targets once, before training).

    A built layer also checks the static shapes of every later call
    (:meth:`check_input_shape`, which its ``build`` runs too), as Keras' ``input_spec``
    does for its own layers: a layer built for 4 classes and called on 5 would otherwise
    fail in a backend op (eager) or give a wrong output shape (symbolic)."""

    def check_input_shape(self, input_shape: Any) -> None:
        """ValueError naming the layer and the shape of an input it cannot take (a shape,
        or a list of shapes for a list of inputs)."""

    def entry_ids(self, inputs: Any) -> Any:
        """The annotator ids among a call's ``inputs`` (``[probs, annotator_ids, ...]``)."""
        if isinstance(inputs, (list, tuple)) and len(inputs) >= 2:
            return inputs[1]
        return None

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if self.built:
            self.check_input_shape(static_shapes(inputs))
        bound = getattr(self, "num_annotators", None)
        if bound is not None:
            ids = concrete_values(self.entry_ids(inputs))
            if ids is not None:
                checked_codes(ids, bound, "annotator id",
                              f"{type(self).__name__} annotator_ids", "num_annotators")
                # one row of ids per item: a mismatch is otherwise a raw backend error
                first = concrete_values(inputs[0])
                if first is not None and np.ndim(first) and np.ndim(ids) and \
                        len(first) != len(ids):
                    raise ValueError(f"{type(self).__name__}: annotator_ids have {len(ids)} "
                                     f"rows but the first input has {len(first)}: one row of "
                                     "annotator ids per item")
        return super().__call__(integer_ids(inputs, self.entry_ids(inputs)), *args, **kwargs)


def check_no_label_at_padding(ids: np.ndarray, labels: np.ndarray, where: str) -> None:
    """CrowdDataError for a label in a padding slot (annotator id -1): the layers read
    annotator 0's weights there, so the label would be trained as annotator 0's."""
    slots = ids.reshape(ids.shape[:1] + (1,) * (labels.ndim - 2) + ids.shape[1:])
    present = ~np.isnan(labels) if labels.dtype.kind == "f" else labels >= 0
    orphan = (slots < 0) & present
    if orphan.any():
        pos = tuple(int(p) for p in np.argwhere(orphan)[0])
        raise CrowdDataError(f"{where}: label {labels[pos].item()!r} at {pos} is in a padding "
                             f"slot (annotator id -1; {int(orphan.sum())} such label(s)); "
                             "a padding slot's label must be missing (-1, NaN for "
                             "regression)")
