"""Beyond one machine: label models fitted on Dask, crowd models trained on several workers.

``pip install crowd-keras[dask]`` (dask[dataframe], distributed, pyarrow). Two halves:

- **Label models on Dask** (:func:`aggregate`): the default label model ``"auto"``
  (:class:`~crowd_keras.aggregation.AutoLabelModel`: held-out selection among its
  candidates, :mod:`.auto`), Dawid-Skene, one-coin Dawid-Skene and majority vote (with the
  labeling-function regime, the abstain-aware Dawid-Skene) fitted on a ``dask.dataframe`` of
  annotations, any partitioning (:func:`supported_methods`). The items are split into blocks
  held by the workers; each EM iteration runs the E-step per block and the M-step on a tree
  reduction of the blocks' sufficient statistics, with the in-memory models' own step
  functions, so the results equal the in-memory fit's (``auto``: the same held-out folds,
  drawn block by block, the same choice and refit). Runs on the threaded scheduler or on a
  ``dask.distributed`` cluster (whichever is active). Gold labels (``gold=``) and a
  classifier's probabilities of the items (``pred_probs=``, a pandas or Dask frame by item
  id, :mod:`.pred_probs`) enter as in memory. Snorkel users pass a Dask array of
  ``L`` to ``CrowdLabelModel.fit`` (the same code path and the same default decision).
- **Training on several workers** (:mod:`crowd_keras.distributed.training`): sharded
  parquet files of items (features, annotator ids, labels) written from ``Annotations``, a
  ``tf.data`` pipeline that reads one worker's shards, for ``CrowdModel`` under
  ``tf.distribute.MultiWorkerMirroredStrategy``.

Importing this package imports neither Dask nor TensorFlow: each name loads its module on
first use.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["aggregate", "AggregationResult", "to_parquet", "supported_methods",
           "register_method", "Method", "PartitionedAnnotations", "write_shards", "read_shards",
           "crowd_dataset", "distribute_crowd_dataset", "steps_per_epoch", "is_dask_array"]

_LAZY = {
    "aggregate": "dataframe", "AggregationResult": "dataframe", "to_parquet": "dataframe",
    "supported_methods": "methods", "register_method": "methods", "Method": "methods",
    "PartitionedAnnotations": "engine",
    "write_shards": "shards", "read_shards": "shards",
    "crowd_dataset": "training", "distribute_crowd_dataset": "training",
    "steps_per_epoch": "training",
}


def is_dask_array(obj: Any) -> bool:
    """True for a ``dask.array.Array`` (without importing Dask when it is not loaded)."""
    if "dask.array" not in sys.modules:
        return False
    return isinstance(obj, sys.modules["dask.array"].Array)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(__all__)
