"""A classifier's probabilities of the items, joined to the blocks of a partitioned fit.

``aggregate(ddf, pred_probs=...)`` takes a frame indexed by item id with one column per
class (as ``fit(annotations, pred_probs=...)`` in memory): each block gets its items' rows
as ``Block.pred_probs`` (I_b, K), checked by the in-memory rules and messages
(:mod:`crowd_keras.aggregation.pred_probs`):

- a **pandas** frame is in the client already: the blocks' item ids come back (one id per
  item), the frame is checked and aligned once on all of them in sorted order (the in-memory
  item order, so errors read as in memory) and each block is sent its rows;
- a **Dask** frame is joined on item id to the blocks' items (one merge and one shuffle that
  routes each block its rows, by block number), so it never passes through the client; each
  block checks its rows, and the client names missing, extra and repeated items from the
  blocks' findings.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Optional, Sequence, Tuple

import dask
import numpy as np
import pandas as pd
from dask import delayed

from ..aggregation.pred_probs import (align_pred_probs, check_rows, class_columns,
                                      extra_items_error, index_facts, index_hint,
                                      missing_items_error, repeated_items_error)
from ..codes import is_dask_frame
from ..errors import CrowdDataError
from .blocks import Block

__all__ = ["join_pred_probs", "check_frame", "is_dask_frame"]

_SHOWN = 5          # ids named in a message (as the in-memory messages)
_BLOCK, _MERGE = "_crowd_keras_block", "_merge"
_PART, _ROW = "_crowd_keras_part", "_crowd_keras_row"   # a row's place in the frame


def check_frame(pred_probs: Any) -> None:
    """TypeError unless ``pred_probs`` is a pandas or Dask DataFrame."""
    if not (isinstance(pred_probs, pd.DataFrame) or is_dask_frame(pred_probs)):
        raise TypeError(f"pred_probs of a partitioned fit must be a DataFrame indexed by item id "
                        f"with one column per class (pandas or Dask), got "
                        f"{type(pred_probs).__module__}.{type(pred_probs).__name__}")


def join_pred_probs(blocks: Sequence[Any], classes: Sequence, pred_probs: Any,
                    index_dtype: Any) -> List[Any]:
    """The blocks (persisted ``dask.delayed`` :class:`Block` s) with their items' rows of
    ``pred_probs`` as ``Block.pred_probs`` (I_b, K) in class-code order, persisted where
    they are; ``index_dtype`` is the dtype of the blocks' item ids.

    Raises:
        TypeError: ``pred_probs`` is not a pandas or Dask DataFrame.
        CrowdDataError: columns that are not one per class, items of the annotations
        without a row, rows of other items, repeated items, rows that are not probabilities
        (:func:`~crowd_keras.aggregation.pred_probs.align_pred_probs`' rules).
    """
    check_frame(pred_probs)
    class_columns(pred_probs.columns, classes)      # before any pass over the data
    if isinstance(pred_probs, pd.DataFrame):
        return _from_pandas(list(blocks), classes, pred_probs)
    return _from_dask(list(blocks), classes, pred_probs, index_dtype)


# ---------------------------------------------------------------------- a pandas frame
def _item_ids(block: Block) -> np.ndarray:
    return block.item_ids


def _with_probs(block: Block, probs: np.ndarray) -> Block:
    return replace(block, pred_probs=probs)


def _sort_order(ids: np.ndarray) -> np.ndarray:
    """The order that sorts the item ids (their in-memory order); ids of mixed types that do
    not sort keep the blocks' order."""
    try:
        return np.argsort(ids, kind="stable")
    except TypeError:
        return np.arange(len(ids))


def _from_pandas(blocks: List[Any], classes: Sequence, frame: pd.DataFrame) -> List[Any]:
    ids = dask.compute(*[delayed(_item_ids)(block) for block in blocks])
    sizes = [len(i) for i in ids]
    all_ids = np.concatenate([np.asarray(i, dtype=object) for i in ids])
    order = _sort_order(all_ids)
    probs = np.empty((len(all_ids), len(classes)))
    probs[order] = align_pred_probs(frame, all_ids[order], classes)
    bounds = np.cumsum([0] + sizes)
    return list(dask.persist(*[delayed(_with_probs)(block, probs[lo:hi])
                               for block, lo, hi in zip(blocks, bounds[:-1], bounds[1:])]))


# ---------------------------------------------------------------------- a Dask frame
def _item_keys(block: Block, number: int, index_dtype: Any) -> pd.DataFrame:
    """The block's items (index) and its number (column), to join the probabilities to."""
    return pd.DataFrame({_BLOCK: np.full(len(block.item_ids), number, dtype=np.int64)},
                        index=pd.Index(block.item_ids, dtype=index_dtype))


def _placed(part: pd.DataFrame, partition_info: Optional[dict] = None) -> pd.DataFrame:
    """The partition with each row's place in the frame (partition number, row within it),
    which orders the extra rows named as in memory (for ``map_partitions``)."""
    number = partition_info["number"] if partition_info else 0
    return part.assign(**{_PART: np.full(len(part), number, dtype=np.int64),
                          _ROW: np.arange(len(part), dtype=np.int64)})


def _extra_ids(*parts: pd.DataFrame) -> Tuple[int, list]:
    """How many rows of the probabilities matched no item, and the first few ids in the
    frame's order (as the in-memory message names them)."""
    n = sum(len(part) for part in parts)
    first = pd.concat([part.sort_values([_PART, _ROW]).iloc[:_SHOWN] for part in parts])
    return n, first.sort_values([_PART, _ROW]).index[:_SHOWN].tolist()


def _joined_block(block: Block, part: pd.DataFrame, k: int) -> Any:
    """The block with its rows of the probabilities (``part``: the item ids, the ``k``
    columns in class-code order and the merge indicator), or what is wrong with them:
    ``("repeated" | "missing" | "rows", ids or message)``; repeated: a frame of each
    repeated id (``id``) at its second row in the frame (``_PART``, ``_ROW``), the order in
    which the in-memory message names them."""
    ids = part.iloc[:, 0]
    if ids.duplicated().any():
        placed = part.sort_values([_PART, _ROW], kind="stable")
        later = placed[placed.iloc[:, 0].duplicated().to_numpy()]
        second = later[~later.iloc[:, 0].duplicated().to_numpy()]
        return "repeated", pd.DataFrame({"id": second.iloc[:, 0].to_numpy(),
                                         _PART: second[_PART].to_numpy(),
                                         _ROW: second[_ROW].to_numpy()})
    missing = ids[(part[_MERGE] == "left_only").to_numpy()]
    if len(missing):
        return "missing", missing.to_numpy()
    pos = pd.Index(ids).get_indexer(block.item_ids)
    try:
        values = part[_columns(k)].to_numpy(dtype=np.float64)[pos]
        probs = check_rows(values, block.item_ids, rows=())
    except CrowdDataError as err:   # before ValueError, which it is
        return "rows", str(err)
    except (TypeError, ValueError) as err:
        return "rows", f"pred_probs must be numbers: {err}"
    return replace(block, pred_probs=probs)


def _columns(k: int) -> List[str]:
    """The probability columns of the joined frame, in class-code order."""
    return [f"_p{c}" for c in range(k)]


def _failure(part: Any) -> Optional[tuple]:
    return part if isinstance(part, tuple) else None


def _n_items(block: Block) -> int:
    return len(block.item_ids)


def _index_facts(part: pd.DataFrame, missing: Any, start: int) -> tuple:
    return index_facts(part.index, missing, start)


def _index_hint(probs: Any, missing: Any, blocks: List[Any]) -> str:
    """The in-memory hint of a missing item (:func:`index_hint`) from the partitions of the
    probabilities ``probs``: an index value written as the item id ``missing``, or an index
    of the positions 0..n-1 of the ``blocks``' items (two more passes, on this error only)."""
    parts = probs.to_delayed()
    lengths = dask.compute(*[delayed(len)(part) for part in parts])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    facts = dask.compute(*[delayed(_index_facts)(part, missing, int(start))
                           for part, start in zip(parts, starts)])
    n_items = sum(dask.compute(*[delayed(_n_items)(block) for block in blocks]))
    alike = next((found for found, _ in facts if found), [])
    return index_hint(alike, sum(lengths) == n_items and all(p for _, p in facts), n_items)


def _from_dask(blocks: List[Any], classes: Sequence, ddf: Any, index_dtype: Any) -> List[Any]:
    import dask.dataframe as dd

    k = len(classes)
    names = [ddf.columns[c] for c in class_columns(ddf.columns, classes)]
    probs = ddf[names].rename(columns=dict(zip(names, _columns(k))))
    empty = pd.DataFrame({c: pd.Series([], dtype=t) for c, t in probs.dtypes.items()},
                         index=pd.Index([], dtype=probs.index.dtype))
    probs = probs.map_partitions(_placed, meta=_placed(empty))
    meta = pd.DataFrame({_BLOCK: pd.Series([], dtype=np.int64)},
                        index=pd.Index([], dtype=index_dtype))
    keys = dd.from_delayed([delayed(_item_keys)(block, j, index_dtype)
                            for j, block in enumerate(blocks)], meta=meta, verify_meta=False)
    try:
        joined = keys.merge(probs, left_index=True, right_index=True, how="outer",
                            indicator=True)
    except (TypeError, ValueError) as err:
        raise CrowdDataError(f"pred_probs: its index (item ids, {ddf.index.dtype}) cannot be "
                             f"joined to the items of the annotations ({index_dtype}): "
                             f"{err}") from None
    extra = joined[joined[_MERGE] == "right_only"]
    routed = joined[joined[_MERGE] != "right_only"].reset_index()
    routed = routed.assign(**{_BLOCK: routed[_BLOCK].astype(np.int64)})
    # block j's rows in partition j: divisions [j, j + 1) by block number
    routed = routed.set_index(_BLOCK, divisions=list(range(len(blocks) + 1)))
    *parts, found = dask.persist(*[delayed(_joined_block)(block, part, k)
                                   for block, part in zip(blocks, routed.to_delayed())],
                                 delayed(_extra_ids)(*extra.to_delayed()))
    failures = [f for f in dask.compute(*[delayed(_failure)(p) for p in parts])
                if f is not None]
    repeated = [rows for what, rows in failures if what == "repeated"]
    if repeated:
        rows = pd.concat(repeated).sort_values([_PART, _ROW], kind="stable")
        raise repeated_items_error(rows["id"].to_numpy())
    missing = [ids for what, ids in failures if what == "missing"]
    if missing:
        ids = np.concatenate(missing)
        shown = ids[_sort_order(ids)]
        raise CrowdDataError(f"{missing_items_error(shown[:_SHOWN], len(ids))}"
                             f"{_index_hint(probs, shown[0], blocks)}")
    n_extra, shown = dask.compute(found)[0]
    if n_extra:
        raise extra_items_error(shown, n_extra)
    if failures:
        raise CrowdDataError(failures[0][1])
    return parts
