"""Feeding crowd data to Keras ``fit``: batches of items with their padded annotations.

Two feeders, one batch order:

* :class:`RowBatches` holds the arrays once and makes each epoch a ``tf.data`` pipeline on
  the TensorFlow backend (the batch is gathered in the graph, so ``Model.fit`` runs its
  ``steps_per_execution`` steps without returning to Python), or a :class:`RandomBatches`
  on JAX and PyTorch (a GPU user without TensorFlow);
* :func:`annotation_dataset` is the ``tf.data`` input path from an :class:`Annotations`
  for ``CrowdModel.fit``: ``({"x", "annotator_ids"}, labels)`` per item, shuffled and
  batched in the graph.
"""
from __future__ import annotations

from typing import Any, Optional

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np

from ._keras_utils import check_no_label_at_padding, checked_codes
from .arguments import check_count
from .errors import CrowdDataError
from .numerics import row_order   # its home is numerics (the numpy LIA uses it too)

__all__ = ["RandomBatches", "RowBatches", "annotation_dataset", "tensorflow_backend"]


def tensorflow_backend() -> bool:
    """True on the TensorFlow backend (where ``tf.data`` input runs inside the step)."""
    return keras.backend.backend() == "tensorflow"


class RandomBatches(keras.utils.PyDataset):
    """``steps`` batches of rows drawn epoch by epoch (shuffled, without replacement);
    ``keys``: the rows' uint64 keys that the order follows (:func:`~.numerics.row_order`)."""

    def __init__(self, inputs: dict, target: np.ndarray, batch_size: int, steps: int,
                 rng: np.random.Generator, keys: Optional[np.ndarray] = None) -> None:
        super().__init__()
        n = len(target)
        self.batch = min(int(batch_size), n)
        self.inputs, self.target, self.steps = inputs, target, int(steps)
        self.order = None
        if self.batch < n:   # full batch: every step sees the same arrays, nothing to shuffle
            self.order = row_order(n, self.batch, self.steps, rng, keys)

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, i: int) -> tuple:
        if self.order is None:
            return self.inputs, self.target
        idx = self.order[i * self.batch:(i + 1) * self.batch]
        return {k: v[idx] for k, v in self.inputs.items()}, self.target[idx]


class RowBatches:
    """Batches of rows of in-memory arrays (one row per item) for ``keras.Model.fit``.

    The arrays are converted once; :meth:`epoch` gives ``steps`` batches of ``batch_size``
    rows for a new target (e.g. the E-step posteriors of an EM), in the order
    :class:`RandomBatches` draws from ``rng``. On TensorFlow that is a ``tf.data`` pipeline
    gathering each batch from the held tensors: no Python generator in the step, and the
    same element shapes every epoch (the compiled step is traced once). ``keys``: optional
    (rows,) uint64 key of each row (its item's id, :func:`~.numerics.id_keys`) that the
    batch order follows instead of the rows' positions (:func:`~.numerics.row_order`).
    """

    def __init__(self, inputs: dict, batch_size: int, keys: Optional[np.ndarray] = None) -> None:
        self.inputs = inputs
        self.keys = keys
        self.n = len(next(iter(inputs.values())))
        self.batch = min(int(batch_size), self.n)
        self._tensors = None
        if tensorflow_backend():
            import tensorflow as tf

            self._tensors = {k: tf.convert_to_tensor(v) for k, v in inputs.items()}

    def epoch(self, target: np.ndarray, steps: int, rng: np.random.Generator) -> Any:
        if self._tensors is None:
            return RandomBatches(self.inputs, target, self.batch, steps, rng, self.keys)
        import tensorflow as tf

        y = tf.convert_to_tensor(target)
        if self.batch >= self.n:
            return tf.data.Dataset.from_tensors((self._tensors, y)).repeat(int(steps))
        order = row_order(self.n, self.batch, int(steps), rng, self.keys).reshape(
            int(steps), self.batch)
        tensors = self._tensors

        def gather(idx: Any) -> tuple:
            return {k: tf.gather(v, idx) for k, v in tensors.items()}, tf.gather(y, idx)

        return tf.data.Dataset.from_tensor_slices(order.astype(np.int32)).map(gather) \
            .prefetch(2)


def _held_inputs(x: Any) -> Any:
    """``x`` as TensorFlow tensors: one array (or nested lists), or a dict, list or tuple of
    arrays (a classifier of several inputs; a list becomes a tuple, which ``tf.data`` keeps
    as a structure instead of stacking it into one tensor)."""
    import tensorflow as tf

    if isinstance(x, dict):
        return {k: tf.convert_to_tensor(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and x and all(hasattr(v, "shape") for v in x):
        return tuple(tf.convert_to_tensor(v) for v in x)
    return tf.convert_to_tensor(x)


def annotation_dataset(x: Any, annotations: Any, batch_size: int = 32, shuffle: bool = True,
                       seed: Optional[int] = None, *, num_annotators: Optional[int] = None,
                       num_classes: Optional[int] = None) -> Any:
    """A ``tf.data.Dataset`` of ``({"x": x, "annotator_ids": ids}, labels)`` batches of items.

    The indexed form ``CrowdModel.fit`` consumes, built in the graph: ``x`` (items, ...),
    or a dict / list of such arrays for a classifier of several inputs, and the annotations
    (an :class:`~crowd_keras.Annotations`, item codes = rows of ``x``, or its padded
    ``(annotator_ids, labels)``, as :meth:`Annotations.to_padded` gives them) are held as
    tensors; each epoch reshuffles the items (``seed``) and gathers its batches
    in the pipeline, so ``Model.fit`` runs without a Python generator. TensorFlow only
    (``tf.data``); ``model.fit(annotation_dataset(x, ann, 64), epochs=...)``.

    The padded arrays are checked once, here (one vectorised pass; nothing per step):
    integer codes, -1 the only padding, ids below ``num_annotators`` and labels below
    ``num_classes`` when given (an ``Annotations`` gives its own); else
    :class:`~crowd_keras.CrowdDataError` naming the argument, position and value.
    """
    import tensorflow as tf

    if hasattr(annotations, "to_padded"):
        annotator_ids, labels = annotations.to_padded()
        num_annotators = annotations.n_annotators if num_annotators is None else num_annotators
        num_classes = annotations.n_classes if num_classes is None else num_classes
    elif isinstance(annotations, (tuple, list)) and len(annotations) == 2:
        annotator_ids, labels = annotations
    else:
        raise TypeError("annotations must be an Annotations or its padded (annotator_ids, "
                        f"labels), got {type(annotations).__name__}")
    annotator_ids = checked_codes(annotator_ids, num_annotators, "annotator id",
                                  "annotation_dataset annotator_ids", "num_annotators")
    labels = checked_codes(labels, num_classes, "label", "annotation_dataset labels",
                           "num_classes")
    if annotator_ids.ndim != 2 or labels.shape[:1] != annotator_ids.shape[:1] \
            or labels.shape[-1:] != annotator_ids.shape[1:]:   # else failed inside the loss
        raise CrowdDataError(f"annotation_dataset: annotator_ids must be (items, k) and labels "
                             f"(items, [time,] k); got {annotator_ids.shape} and "
                             f"{labels.shape}")
    check_no_label_at_padding(annotator_ids, labels, "annotation_dataset")
    batch_size = check_count(batch_size, "batch_size", 1)
    n = len(labels)
    inputs = _held_inputs(x)
    # every input's rows (len() of a dict: its keys); a second input of other rows was
    # gathered silently, misaligned with the items
    named = (inputs.items() if isinstance(inputs, dict) else enumerate(inputs)
             if isinstance(inputs, (list, tuple)) else [(None, inputs)])
    for key, part in named:
        for value in tf.nest.flatten(part):
            rows = value.shape[0]
            if rows != n or len(annotator_ids) != n:
                name = "x" if key is None else f"x[{key!r}]"
                raise CrowdDataError(f"{name} has {rows} rows, annotator_ids "
                                     f"{len(annotator_ids)} and labels {n}: one row per item "
                                     "in each")
    held = {"x": inputs, "annotator_ids": tf.convert_to_tensor(annotator_ids)}
    targets = tf.convert_to_tensor(labels)
    ds = tf.data.Dataset.range(n)
    if shuffle:
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)

    def gather(idx: Any) -> tuple:
        return tf.nest.map_structure(lambda v: tf.gather(v, idx), held), \
            tf.gather(targets, idx)

    return ds.batch(min(batch_size, n)).map(gather).prefetch(2)
