"""Checking and coding a Dask frame of annotations by the rules of the in-memory reader.

One pass over the partitions as they are (before any shuffle) runs the checks of
:meth:`Annotations.from_frame <crowd_keras.annotations.Annotations.from_frame>`
(:func:`~crowd_keras.annotation_readers.frame_codes`) on each partition and gathers its
length, its distinct annotator ids and labels with the row where each first appears.
From the lengths the client knows every partition's first row in the frame, so that:

- an error names the *frame's* row (the partition that failed first in frame order is
  checked again with its rows numbered from its offset: the same message as in memory,
  independent of the scheduler);
- the distinct values of all partitions are coded together by the in-memory rules (a
  label ``'x'`` among integers, or annotators ``1`` and ``"1"``, in different partitions
  are the same errors as in one frame); a frame with no rows is refused as in memory;
- each row carries its frame row number through the shuffle (:func:`number_rows`), so that
  a duplicate (item, annotator) pair found after the shuffle names the frame's rows.

Numpy and pandas only; the Dask calls are made by :mod:`crowd_keras.distributed.engine`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..annotation_readers import frame_codes
from ..codes import categorical, factorize_ids, infer_classes, show
from ..errors import CrowdDataError

__all__ = ["PartitionScan", "scan_partition", "Coding", "coding_of", "disjoint", "row_column",
           "number_rows", "first_row_named", "first_failure", "first_repeated_item",
           "split_items", "unconverted"]


@dataclass
class PartitionScan:
    """What the check of one partition leaves for the client.

    Attributes:
        n_rows: the partition's length. failed: the in-memory checks raised on it.
        annotators, labels: the first row of each distinct annotator id / label (columns
            ``annotator``, ``label``, ``item`` and ``row``, the row within the partition);
            None when the coding was given.
        first: the partition's first row (``item``, ``annotator``), None when empty.
        span: the partition's smallest and largest item id, None when empty or unordered.
    """

    n_rows: int
    failed: bool
    annotators: Optional[pd.DataFrame]
    labels: Optional[pd.DataFrame]
    first: Optional[tuple]
    span: Optional[tuple] = None


def _firsts(df: pd.DataFrame, column: str, item: str, annotator: str) -> pd.DataFrame:
    rows = np.flatnonzero(~df[column].duplicated().to_numpy())
    values = df[column].iloc[rows].reset_index(drop=True)
    if categorical(values.dtype):  # its values, as the in-memory reader
        values = pd.Series(np.asarray(values, dtype=object))
    out = {"value": values,
           "item": df[item].iloc[rows].reset_index(drop=True),
           "annotator": df[annotator].iloc[rows].reset_index(drop=True)}
    return pd.DataFrame({**out, "row": rows})


def scan_partition(df: pd.DataFrame, item: str, annotator: str, label: str,
                   classes: Optional[Sequence], annotator_ids: Optional[Sequence]) -> PartitionScan:
    """Check one partition (in-memory rules, no build) and gather its first rows."""
    if item not in df.columns and df.index.name == item:
        df = df.reset_index()
    if len(df) == 0:
        return PartitionScan(0, False, None, None, None)
    try:
        frame_codes(df, item, annotator, label, classes, annotator_ids=annotator_ids)
    except CrowdDataError:
        return PartitionScan(len(df), True, None, None, None)
    return PartitionScan(
        len(df), False,
        _firsts(df, annotator, item, annotator) if annotator_ids is None else None,
        _firsts(df, label, item, annotator) if classes is None else None,
        (df[item].iloc[0], df[annotator].iloc[0]), _span(df[item]))


def _span(items: pd.Series) -> Optional[tuple]:
    if categorical(items.dtype):   # by value, as `disjoint` compares
        items = pd.Series(np.asarray(items))
    try:
        return items.min(), items.max()
    except TypeError:
        return None


def disjoint(spans: Sequence[Optional[tuple]], n_rows: Sequence[int]) -> bool:
    """Whether each non-empty partition's items all come after the previous one's (its
    ``span`` starts after theirs ends): then no item lies in two partitions. Divisions read
    from files' statistics can overlap (an item's rows in two files, its id the last of one
    and the first of the next) though Dask calls them known."""
    last = None
    for span, n in zip(spans, n_rows):
        if not n:
            continue
        if span is None:
            return False
        try:
            if last is not None and not last < span[0]:
                return False
        except TypeError:
            return False
        last = span[1]
    return True


@dataclass
class Coding:
    """The frame's coding: ``classes``, ``annotator_ids``, ``int_labels`` (integer labels
    are their own codes), ``offsets`` (P,), the frame row of each partition's row 0, and
    ``disjoint``: the partitions' item ranges follow each other without overlap."""

    classes: list
    annotator_ids: list
    int_labels: bool
    offsets: np.ndarray
    disjoint: bool = False


def _gathered(scans: List[PartitionScan], offsets: np.ndarray, field: str) -> pd.DataFrame:
    """The first row of each distinct value over all partitions, in frame order."""
    parts = [getattr(s, field).assign(row=getattr(s, field)["row"] + offset)
             for s, offset in zip(scans, offsets) if getattr(s, field) is not None]
    frame = pd.concat(parts, ignore_index=True)
    return frame[~frame["value"].duplicated()].reset_index(drop=True)


def coding_of(scans: List[PartitionScan], classes: Optional[Sequence],
              annotator_ids: Optional[Sequence], recheck: Any) -> Coding:
    """The global coding from the partitions' scans, or the in-memory error.

    ``recheck(p, first_row)`` checks partition ``p`` again with its rows numbered from
    ``first_row`` (it raises the in-memory error with the frame's row numbers).
    """
    lengths = np.array([s.n_rows for s in scans], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    if not lengths.sum():
        raise CrowdDataError("frame has no annotations")
    failed = [p for p, s in enumerate(scans) if s.failed]
    if failed:
        recheck(failed[0], int(offsets[failed[0]]))
        raise CrowdDataError(f"partition {failed[0]} (from frame row {offsets[failed[0]]}) "
                             "failed the in-memory checks")   # pragma: no cover
    # one type per column over the partitions (each partition's own is checked)
    present = [(p, s) for p, s in enumerate(scans) if s.first is not None]
    firsts = pd.Series([s.first[0] for _, s in present], dtype=object)
    factorize_ids(firsts, "item", lambda n: f"row {offsets[present[n][0]]} "
                                            f"(annotator {show(present[n][1].first[1])})")
    int_labels = False
    if classes is None:
        labels = _gathered(scans, offsets, "labels")
        classes, codes = infer_classes(
            labels["value"].to_numpy(),
            lambda n: f"row {labels['row'].iat[n]} (item {show(labels['item'].iat[n])}, "
                      f"annotator {show(labels['annotator'].iat[n])})")
        int_labels = codes is not None
    if annotator_ids is None:
        found = _gathered(scans, offsets, "annotators")
        annotator_ids = factorize_ids(
            found["value"], "annotator",
            lambda n: f"row {found['row'].iat[n]} (item {show(found['item'].iat[n])})")[1]
    return Coding(list(classes), list(annotator_ids), int_labels, offsets,
                  disjoint([s.span for s in scans], lengths))


#: Dask expressions that move or select rows and columns without computing on values: a
#: frame built of these on ``dd.from_pandas`` can be read without the text conversion.
_LAYOUT_STEPS = frozenset({"FromPandas", "Repartition", "Projection", "Partitions",
                           "ResetIndex", "ClearDivisions", "RenameFrame"})


def unconverted(ddf: Any, columns: Sequence[str]) -> Any:
    """``ddf`` as its pandas frames hold it, when it is ``dd.from_pandas`` of frames (or a
    repartition, column selection or renaming of it: steps that compute on no values) and
    its role ``columns`` then hold Python objects (else None): Dask's
    ``dataframe.convert-string`` turns object columns into text, so that labels
    ``[0, 1, 1.5]`` or ``[0, 1, "x"]`` would arrive as the string classes
    ``"0", "1", "1.5"``; read unconverted they meet the in-memory rules (an error there,
    integer classes for an object column of integers). None too for a frame read from
    files, one with other steps (a filter computes on the converted values), or a Dask
    without these expression methods. The engine keeps the converted
    frame where every such column holds only strings (:func:`object_kinds`): arrow strings
    are coded faster."""
    try:
        from dask.dataframe.dask_expr import new_collection

        expr = ddf.expr
        nodes = list(expr.walk())
        leaves = [node for node in nodes if type(node).__name__ == "FromPandas"
                  and node.operand("pyarrow_strings_enabled")]
        if not leaves or any(type(node).__name__ not in _LAYOUT_STEPS for node in nodes):
            return None
        for leaf in leaves:
            expr = expr.substitute(
                leaf, leaf.substitute_parameters({"pyarrow_strings_enabled": False}))
        raw = new_collection(expr)
        if any(c in raw.columns and raw.dtypes[c] == object for c in columns):
            return raw
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        pass
    return None


def object_kinds(df: pd.DataFrame, columns: Sequence[str]) -> set:
    """The kinds (``pandas.api.types.infer_dtype``) of a partition's object ``columns``."""
    return {pd.api.types.infer_dtype(df[c], skipna=False) for c in columns
            if c in df.columns and df[c].dtype == object}


def row_column(columns: Sequence) -> str:
    """A column name for the frame row numbers that no column of the frame has."""
    name = "_crowd_keras_row"
    while name in columns:
        name += "_"
    return name


def number_rows(df: pd.DataFrame, offsets: np.ndarray, name: str,
                partition_info: Optional[dict] = None) -> pd.DataFrame:
    """The partition with its frame row numbers in column ``name`` (for ``map_partitions``:
    ``partition_info`` gives the partition's number)."""
    start = offsets[partition_info["number"]] if partition_info else 0
    return df.assign(**{name: np.arange(start, start + len(df), dtype=np.int64)})


def first_row_named(message: str) -> float:
    """The first row number a message names (inf for none): orders the failures of several
    partitions so that the one reported does not depend on the scheduler."""
    found = re.search(r"\brow (\d+)", message)
    return int(found.group(1)) if found else float("inf")


_DUPLICATES = re.compile(r"(\d+)( duplicate \(item, annotator\) annotation)")


def first_failure(failures: Sequence[tuple]) -> str:
    """The message of the partitions' failures (``(message, item)`` for each failed partition,
    ``item``: :func:`first_repeated_item`) that names the first frame row; for repeated
    (item, annotator) pairs, as one frame's message: the pairs of every partition counted
    (each partition counts its own), the first pair that of the smallest item."""
    messages = [message for message, _ in failures]
    first = min(messages, key=first_row_named)
    repeated = [(message, item) for message, item in failures if _DUPLICATES.match(message)]
    if len(repeated) > 1 and _DUPLICATES.match(first):
        try:
            first = min((pair for pair in repeated if pair[1] is not None),
                        key=lambda pair: pair[1])[0]
        except (TypeError, ValueError):   # ids without an order: the first row's pair
            pass
        total = sum(int(_DUPLICATES.match(message).group(1)) for message, _ in repeated)
        first = _DUPLICATES.sub(rf"{total}\g<2>", first, count=1)
    return first


def first_repeated_item(df: pd.DataFrame, item: str, annotator: str) -> Any:
    """The smallest item id of a partition's repeated (item, annotator) pairs (None: none)."""
    if item not in df.columns and df.index.name == item:
        df = df.reset_index()
    repeated = df.duplicated([item, annotator], keep=False).to_numpy()
    if not repeated.any():
        return None
    return min(np.asarray(df[item])[repeated].tolist())


def split_items(*item_ids: np.ndarray) -> Optional[tuple]:
    """``(item id, [partitions], number of items split)`` of the first item (in partition
    order) whose annotations lie in more than one partition, or None."""
    if not item_ids:
        return None
    ids = pd.Index(np.concatenate([np.asarray(i) for i in item_ids]))
    part = np.repeat(np.arange(len(item_ids)), [len(i) for i in item_ids])
    repeated = ids.duplicated(keep=False)
    if not repeated.any():
        return None
    first = ids[int(np.argmax(repeated))]
    where = sorted(set(part[repeated & (ids == first)].tolist()))
    return first, where, int(ids[repeated].nunique())
