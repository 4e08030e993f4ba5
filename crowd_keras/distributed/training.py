"""``CrowdModel`` trained on several workers: a ``tf.data`` pipeline over sharded files.

Write the items once with :func:`~crowd_keras.distributed.shards.write_shards`; on every
worker::

    strategy = tf.distribute.MultiWorkerMirroredStrategy()      # reads TF_CONFIG
    with strategy.scope():
        model = CrowdModel(classifier, CrowdLayer(n_annotators))
        model.compile(keras.optimizers.Adam(1e-3))
    data, steps = distribute_crowd_dataset(strategy, "shards/", global_batch_size=256)
    model.fit(data, epochs=10, steps_per_epoch=steps)

Each worker reads its own files (every N-th of them, N = number of workers) in record batches
streamed from parquet; batches are ``({"x": x, "annotator_ids": ids}, labels)``, the
indexed form ``CrowdModel`` takes, padded with -1. Every worker runs the same number of steps
per epoch (``steps``: the smallest of the workers' full batches), so the all-reduce never
waits for a worker that ran out of data.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import tensorflow as tf

from ..arguments import check_count
from .shards import check_files, iter_file, read_shards

__all__ = ["crowd_dataset", "distribute_crowd_dataset", "steps_per_epoch"]


def _pipeline_files(meta: dict, pipeline: int, n_pipelines: int) -> tuple:
    paths, rows = meta["paths"][pipeline::n_pipelines], meta["rows"][pipeline::n_pipelines]
    if not paths:
        raise ValueError(f"{len(meta['paths'])} shard files for {n_pipelines} workers: write at "
                         "least one file per worker (a multiple of the number of workers)")
    return paths, int(sum(rows))


def steps_per_epoch(directory: Union[str, Path], batch_size: int, n_pipelines: int = 1) -> int:
    """Full batches of ``batch_size`` rows that every one of ``n_pipelines`` workers has
    (``batch_size``: the rows one worker's pipeline gives a step, all its replicas' batches).

    A worker with more rows than the steps take leaves the rest out of every epoch (the
    all-reduce needs every worker at every step): a ``UserWarning`` says how many, when that
    is more than a batch (files of very different sizes)."""
    batch_size = check_count(batch_size, "batch_size", minimum=1)
    n_pipelines = check_count(n_pipelines, "n_pipelines", minimum=1)
    meta = read_shards(directory)
    rows = [_pipeline_files(meta, p, n_pipelines)[1] for p in range(n_pipelines)]
    steps = min(r // batch_size for r in rows)
    if steps == 0:
        raise ValueError(f"a worker has fewer than {batch_size} items: lower the batch size")
    unused = sum(rows) - steps * batch_size * n_pipelines
    if unused >= batch_size * n_pipelines:
        warnings.warn(f"{unused} of {sum(rows)} items are left out of every epoch: each of the "
                      f"{n_pipelines} workers runs {steps} steps of {batch_size} rows, what "
                      f"the smallest holds ({min(rows)} rows; the others {max(rows)}); write "
                      "files of about equal rows, a multiple of the number of workers",
                      stacklevel=2)
    return steps


def crowd_dataset(directory: Union[str, Path], batch_size: int,
                  input_context: Optional[tf.distribute.InputContext] = None, *,
                  steps: Optional[int] = None, repeat: bool = False, shuffle_buffer: int = 0,
                  seed: Optional[int] = None, read_rows: int = 65536) -> tf.data.Dataset:
    """Batches ``({"x": x, "annotator_ids": ids}, labels)`` read from the shards in ``directory``.

    Args:
        directory: the folder :func:`write_shards` wrote.
        batch_size: the global batch size; with ``input_context`` each worker's pipeline
            batches ``input_context.get_per_replica_batch_size(batch_size)`` rows.
        input_context: from ``strategy.distribute_datasets_from_function``: this pipeline
            reads files ``pipeline_id, pipeline_id + n, ...`` (n = number of pipelines).
        steps: keep this many full batches per pass (default: all full batches of this
            pipeline).
        repeat: start again after ``steps`` batches (for ``steps_per_epoch``).
        shuffle_buffer: rows shuffled in a buffer of this size (0: file order).
        seed: the shuffle's seed.
        read_rows: rows per record batch read from parquet.
    """
    # a float or zero batch size reached tf.data as a shape error inside the pipeline
    batch_size = check_count(batch_size, "batch_size", minimum=1)
    read_rows = check_count(read_rows, "read_rows", minimum=1)
    shuffle_buffer = check_count(shuffle_buffer, "shuffle_buffer")
    if steps is not None:
        steps = check_count(steps, "steps", minimum=1)
    if seed is not None:
        seed = check_count(seed, "seed")
    if not isinstance(repeat, (bool, np.bool_)):
        raise TypeError(f"repeat must be True or False, got {type(repeat).__name__} {repeat!r}")
    meta = read_shards(directory)
    pipeline, n_pipelines = ((input_context.input_pipeline_id, input_context.num_input_pipelines)
                             if input_context is not None else (0, 1))
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    paths, n_rows = _pipeline_files(meta, pipeline, n_pipelines)
    check_files(meta, paths)
    shape = tuple(meta["feature_shape"])
    size, width = int(np.prod(shape, dtype=np.int64)), int(meta["max_annotations"])
    signature = (tf.TensorSpec((None, size), tf.float32), tf.TensorSpec((None, width), tf.int32),
                 tf.TensorSpec((None, width), tf.int32))

    def read(path: tf.Tensor) -> tf.data.Dataset:
        return tf.data.Dataset.from_generator(iter_file, args=(path, size, width, read_rows),
                                              output_signature=signature)

    data = tf.data.Dataset.from_tensor_slices(paths).interleave(read, cycle_length=1)
    data = data.unbatch()
    if steps is None:
        steps = n_rows // batch_size
    elif steps > n_rows // batch_size:   # take() shortened the pass without a word
        raise ValueError(f"steps={steps} batches of {batch_size} rows, but this pipeline's "
                         f"files hold {n_rows} rows ({n_rows // batch_size} full batches)")
    if shuffle_buffer:
        # before the cut: the rows past the last full batch differ from pass to pass (taken
        # first, the same tail rows were left out of every epoch)
        data = data.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    data = data.take(steps * batch_size)
    data = data.batch(batch_size, drop_remainder=True)
    if repeat:
        data = data.repeat()

    def to_inputs(x: tf.Tensor, ids: tf.Tensor, labels: tf.Tensor) -> tuple:
        return {"x": tf.reshape(x, (-1,) + shape), "annotator_ids": ids}, labels

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return data.map(to_inputs).prefetch(tf.data.AUTOTUNE).with_options(options)


def distribute_crowd_dataset(strategy: tf.distribute.Strategy, directory: Union[str, Path],
                             global_batch_size: int, **kwargs: Any) -> tuple:
    """``(distributed dataset, steps_per_epoch)`` for ``model.fit(data, steps_per_epoch=...)``
    under ``strategy`` (e.g. ``MultiWorkerMirroredStrategy``): each worker's pipeline reads its
    own files; every worker runs ``steps_per_epoch`` full batches per epoch (the dataset
    repeats). ``kwargs`` go to :func:`crowd_dataset`."""
    global_batch_size = check_count(global_batch_size, "global_batch_size", minimum=1)
    found: dict = {}

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        per_replica = context.get_per_replica_batch_size(global_batch_size)
        # a step takes one batch for each replica the pipeline feeds: two replicas of one
        # worker ran twice the steps, each item twice an epoch
        replicas = max(context.num_replicas_in_sync // context.num_input_pipelines, 1)
        found["steps"] = steps_per_epoch(directory, per_replica * replicas,
                                         context.num_input_pipelines)
        return crowd_dataset(directory, global_batch_size, context,
                             steps=found["steps"] * replicas, repeat=True, **kwargs)

    data = strategy.distribute_datasets_from_function(dataset_fn)
    return data, found["steps"]
