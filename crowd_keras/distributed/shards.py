"""Sharded parquet files of items for training at scale: features, annotator ids and labels.

:func:`write_shards` writes one row per item (its id, its features and its annotations in
the padded form ``CrowdModel`` takes: annotator codes and labels, -1 = none) to
``part-00000.parquet ...`` plus ``_crowd_shards.json`` (the sizes, the coding, the rows per
file). Any other writer (Spark, Dask's ``to_parquet``) may produce the same layout: fixed-size
list columns ``x`` (float32), ``annotator_ids`` and ``labels`` (int32), and the JSON file.
:func:`read_shards` reads the description; :func:`iter_file` streams one file in record
batches of numpy arrays (``crowd_keras.distributed.training`` feeds them to ``tf.data``).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union

import numpy as np

from ..annotations import Annotations
from ..arguments import check_count
from ..codes import show
from ..errors import CrowdDataError
from ..files import atomic_write_text, publish_file, read_json_text

__all__ = ["write_shards", "read_shards", "check_files", "iter_file", "SHARDS_FILE"]

SHARDS_FILE = "_crowd_shards.json"
_FORMAT = "crowd-keras/shards"


def _fixed_lists(values: np.ndarray) -> Any:
    import pyarrow as pa

    width = values.shape[1]
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(values).ravel()), width)


def _plain(values: np.ndarray) -> list:
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def write_shards(annotations: Annotations, x: Any, directory: Union[str, Path],
                 n_shards: int = 8, row_group_size: int = 65536,
                 max_annotations: Optional[int] = None) -> Dict[str, Any]:
    """Write the items of ``annotations`` with their features ``x`` as parquet shards.

    Args:
        annotations: the crowd labels; rows are its items in code order.
        x: (n_items, ...) features, one row per item of ``annotations`` (stored as float32).
        directory: created if needed; existing shards there are an error.
        n_shards: number of files (contiguous ranges of items). For N training workers use a
            multiple of N: each worker reads every N-th file.
        row_group_size: rows per parquet row group (the unit the reader streams).
        max_annotations: width of the padded annotator ids and labels (default: the largest
            number of annotations on one item).

    Returns:
        The description written to ``_crowd_shards.json``: ``files``, ``rows`` per file,
        ``feature_shape``, ``max_annotations``, ``n_annotators``, ``n_classes``, ``classes``,
        ``n_items``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(annotations, Annotations):
        raise TypeError(f"write_shards takes Annotations, got {type(annotations).__name__} "
                        "(a long frame: Annotations.from_frame(df))")
    # counts, not truncated: n_shards=2.5 wrote 2 files, True one
    n_shards = check_count(n_shards, "write_shards n_shards", 1)
    row_group_size = check_count(row_group_size, "write_shards row_group_size", 1)
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[0] != annotations.n_items:
        raise CrowdDataError(f"x has {x.shape[0] if x.ndim else 0} rows but the annotations "
                             f"have {annotations.n_items} items")
    if x.dtype.kind not in "biuf":
        raise CrowdDataError(f"x must hold numbers (stored as float32), got dtype {x.dtype}")
    finite = np.isfinite(x.reshape(len(x), -1)).all(axis=1)
    if not finite.all():   # NaN features train to NaN losses on every worker
        row = int(np.argmin(finite))
        raise CrowdDataError(f"x has a NaN or infinite feature at row {row} (item "
                             f"{show(annotations.item_ids[row])})")
    if not 1 <= n_shards <= max(annotations.n_items, 1):
        raise ValueError(f"n_shards must be in 1..{annotations.n_items} (one item per file at "
                         f"least), got {n_shards}")
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise CrowdDataError(f"{directory} is a file; give a folder for the shards (it is "
                             "created when missing)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):   # a file where a folder above must be
        raise CrowdDataError(f"{directory}: cannot make the folder: a file is in the "
                             "way") from None
    if (directory / SHARDS_FILE).exists() or any(directory.glob("part-*.parquet")):
        raise FileExistsError(f"{directory} already holds shards; write to an empty folder")
    ids, labels = annotations.to_padded(max_annotations)
    features = x.reshape(len(x), -1).astype(np.float32, copy=False)
    files, rows, staged = [], [], []
    try:   # every file under a temporary name first: a failed write leaves no part behind
        for n, part in enumerate(np.array_split(np.arange(annotations.n_items), n_shards)):
            lo, hi = (int(part[0]), int(part[-1]) + 1) if len(part) else (0, 0)
            table = pa.table({"item": pa.array(_plain(annotations.item_ids[lo:hi])),
                              "x": _fixed_lists(features[lo:hi]),
                              "annotator_ids": _fixed_lists(ids[lo:hi].astype(np.int32)),
                              "labels": _fixed_lists(labels[lo:hi].astype(np.int32))})
            name = f"part-{n:05d}.parquet"
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
            os.close(fd)
            staged.append(tmp)
            pq.write_table(table, tmp, row_group_size=row_group_size)
            files.append(name)
            rows.append(hi - lo)
        for tmp, name in zip(staged, files):
            publish_file(tmp, directory / name)
    except BaseException:
        for tmp in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    meta = {"format": _FORMAT, "version": 1, "files": files, "rows": rows,
            "n_items": annotations.n_items, "feature_shape": list(x.shape[1:]),
            "max_annotations": int(ids.shape[1]), "n_annotators": annotations.n_annotators,
            "n_classes": annotations.n_classes, "classes": _plain(annotations.classes)}
    atomic_write_text(directory / SHARDS_FILE, json.dumps(meta, indent=1, default=str))
    return meta


def read_shards(directory: Union[str, Path]) -> Dict[str, Any]:
    """The description of the shards in ``directory``, with ``paths`` (absolute file paths)."""
    directory = Path(directory)
    path = directory / SHARDS_FILE
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise CrowdDataError(f"{directory} has no {SHARDS_FILE}: not written by write_shards "
                             "(or a writer of the same layout)") from None
    meta = read_json_text(text, path, "the shard description")
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise CrowdDataError(f"{path} is not a crowd-keras shard description")
    files, rows = meta.get("files"), meta.get("rows")
    if not (isinstance(files, list) and all(isinstance(f, str) for f in files)
            and isinstance(rows, list) and len(rows) == len(files)
            and all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in rows)):
        raise CrowdDataError(f"{path}: 'files' must list file names and 'rows' one row count "
                             f"per file; got files={files!r}, rows={rows!r}")
    for key in ("n_items", "max_annotations", "n_annotators", "n_classes"):
        value = meta.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CrowdDataError(f"{path}: {key!r} must be a non-negative integer, got {value!r}")
    meta["paths"] = [str(directory / name) for name in meta["files"]]
    return meta


def check_files(meta: Dict[str, Any], paths: Any) -> None:
    """CrowdDataError naming the first of ``paths`` (of ``meta``'s files) that is missing or
    holds another number of rows than the description lists (read from the parquet footer:
    a short file was read silently, a missing one failed inside ``tf.data``)."""
    import pyarrow.parquet as pq

    listed = dict(zip(meta["paths"], meta["rows"]))
    for path in paths:
        if not Path(path).is_file():
            raise CrowdDataError(f"shard file {path} is listed in {SHARDS_FILE} but missing")
        found = pq.read_metadata(path).num_rows
        if found != listed[path]:
            raise CrowdDataError(f"shard file {path} holds {found} rows; {SHARDS_FILE} lists "
                                 f"{listed[path]}: write the shards again")


def iter_file(path: Union[str, bytes], feature_size: int, width: int,
              batch_rows: int = 65536) -> Iterator[tuple]:
    """``(x (b, feature_size) float32, annotator_ids (b, width), labels (b, width) int32)``
    per record batch of one shard file."""
    import pyarrow.parquet as pq

    path = path.decode() if isinstance(path, bytes) else path
    with pq.ParquetFile(path) as reader:
        for batch in reader.iter_batches(batch_size=batch_rows,
                                         columns=["x", "annotator_ids", "labels"]):
            x, ids, labels = (col.flatten().to_numpy(zero_copy_only=False)
                              for col in batch.columns)
            n = batch.num_rows
            if len(x) != n * feature_size or len(ids) != n * width or len(labels) != n * width:
                raise CrowdDataError(f"shard file {path}: rows of {len(x) // max(n, 1)} "
                                     f"features and {len(ids) // max(n, 1)} annotations, where "
                                     f"the description says {feature_size} and {width}")
            yield (x.reshape(-1, feature_size), ids.reshape(-1, width), labels.reshape(-1, width))
