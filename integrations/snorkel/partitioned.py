"""``CrowdLabelModel`` on a Dask array ``L``: the pieces of the in-memory ``fit``, chunk of
rows by chunk.

``CrowdLabelModel.fit`` of a Dask array takes the same decisions as in memory from sums over
rows (:mod:`.votes`) and fits the label model by the engine of
:mod:`crowd_keras.distributed` (for an EM label model, the public EM-step protocol run over
the blocks: ``distributed.methods.ProtocolMethod``), so the fitted model, ``get_weights()``,
``get_conditional_probs()`` and ``predict_proba`` equal the in-memory adapter's on the same
``L``. The functions here know nothing of the adapter: they take the data, a method and
plain settings, and return what the adapter keeps. The rows stay in blocks on the Dask
workers (:class:`crowd_keras.distributed.PartitionedAnnotations`). The abstention check of
the default method is :func:`abstaining_is_informative_partitioned` (the held-out check on
folds of rows, block by block); crowd answers get the library's ``"auto"`` model (held-out
selection, :mod:`crowd_keras.distributed.auto`). Methods: those of
:func:`crowd_keras.distributed.supported_methods` and every EM-protocol label model;
feature-aware methods need ``L`` in memory.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from crowd_keras.distributed.blocks import Block
from crowd_keras.distributed.engine import PartitionedAnnotations
from crowd_keras.distributed.methods import Fit, method_for
from crowd_keras.errors import CrowdDataError

from .abstention import (FOLDS, abstention_models, check_sample, held_out_gain, row_folds,
                         sample_fraction, too_few_rows)
from .validation import check_label_matrix
from .votes import COVOTE_MISFIT, covote_misfit_from, covote_step, votes_fixed_by_design

__all__ = ["check_layout", "no_features", "partitioned_label_matrix", "fixed_by_design",
           "fit_method", "gold_rows", "predict_proba_partitioned",
           "abstaining_is_informative_partitioned"]


def _check_chunk(chunk: np.ndarray, start: Any, cardinality: int,
                 name: str = "L_train") -> np.ndarray:
    """``check_label_matrix`` of one chunk, its rows counted from ``start`` (or, for an
    array of unknown chunk lengths, ``start`` is ``"chunk i"``)."""
    try:
        return check_label_matrix(chunk, cardinality, name=name)
    except CrowdDataError as exc:
        where = start if isinstance(start, str) else f"the chunk of rows starting at row {start}"
        raise CrowdDataError(f"{exc} (row within {where} of the Dask array)") from None


def check_layout(L: Any, cardinality: int, n_functions: Optional[int] = None,
                 name: str = "L_train") -> None:
    """The checks of ``check_label_matrix`` that need only the shape and dtype of ``L``."""
    # a stand-in without rows holds no values to read; a shape that is not 2-d is checked on
    # a zero-stride view of L's own shape, so that the message names L's shape, not (0,)
    stand_in = np.empty((0,) + tuple(L.shape[1:]), dtype=L.dtype) if L.ndim == 2 else \
        np.broadcast_to(np.zeros((), dtype=L.dtype), L.shape)
    check_label_matrix(stand_in, cardinality, name=name, n_functions=n_functions)


def no_features(features: Any) -> None:
    """Feature-aware methods are not fitted chunk by chunk."""
    if features is not None:
        raise ValueError("features= needs L in memory: feature-aware methods are not fitted "
                         "chunk by chunk (pass L as a numpy array)")


def partitioned_label_matrix(L: Any, cardinality: int,
                             dev: Optional[Tuple[np.ndarray, np.ndarray]] = None
                             ) -> Tuple[PartitionedAnnotations, Optional[PartitionedAnnotations]]:
    """The rows of the Dask array ``L`` (each chunk checked on its worker) as partitioned
    annotations, and, with a dev split ``dev = (L_dev, Y_dev)`` (in memory), the same with
    the dev rows appended after ``L``'s and held at their gold class (else None)."""
    import dask.array as da

    k = int(cardinality)
    if any(np.isnan(rows) for rows in L.chunks[0]):
        raise CrowdDataError("L_train has chunks of unknown length (as ddf.to_dask_array() "
                             "makes): pass ddf.to_dask_array(lengths=True) or "
                             "L_train.compute_chunk_sizes()")
    if dev is not None:
        L = da.concatenate([L, da.from_array(dev[0], chunks=(max(len(dev[0]), 1), -1))])
    data = PartitionedAnnotations.from_label_matrix(
        L, k, check=functools.partial(_check_chunk, cardinality=k))
    if data.summary.n_annotations == 0:
        raise CrowdDataError("L_train has no votes: every entry is -1 (abstain)")
    if dev is None:
        return data, None
    first = L.shape[0] - len(dev[1])
    return data, data.with_gold(dict(zip(range(first, L.shape[0]), dev[1].tolist())))


def fixed_by_design(data: PartitionedAnnotations) -> bool:
    """:func:`.votes.votes_fixed_by_design` from the summed votes of ``data``."""
    summary = data.summary
    coverage = summary.votes.sum(axis=1) / max(summary.n_items, 1)
    return votes_fixed_by_design(summary.row_variance, coverage)


def fit_method(data: PartitionedAnnotations, method: str, kwargs: Dict[str, Any],
               full_first: bool) -> Tuple[Fit, Optional[float]]:
    """The partitioned fit of the registry name ``method`` with ``kwargs``, and the co-vote
    misfit of the un-anchored model when ``full_first`` (one-class functions: the full model
    is kept if it explains the co-votes, :data:`.votes.COVOTE_MISFIT`, else the anchored
    one is fitted), as the in-memory fit decides."""
    misfit = None
    if full_first:
        trial = data.fit(method_for(method, **kwargs, anchor="none"))
        summary = data.summary
        step = covote_step(trial.model, len(data.annotator_ids), data.n_classes,
                           summary.n_items)
        if step is not None:
            misfit = covote_misfit_from(trial.model, *data.covotes(step))
        if misfit is not None and misfit < COVOTE_MISFIT:
            return trial, misfit
    return data.fit(method_for(method, **kwargs)), misfit


def gold_rows(post: np.ndarray, block: Block) -> np.ndarray:
    """``post`` (I, K) with the block's gold rows (an item log-prior with one finite class)
    set to their class: how the weights count the dev rows."""
    if block.item_log_prior is None:
        return post
    known = np.isfinite(block.item_log_prior)
    clamped = known.sum(axis=1) == 1
    post = np.array(post, dtype=np.float64)
    post[clamped] = known[clamped]
    return post


def _voted_rows(block: Block) -> int:
    return int(np.count_nonzero(block.annotations_per_item()))


def _sampled_rows(block: Block, n_votes: int) -> Block:
    """The rows of ``block`` in the check's sample (:func:`.abstention.check_sample`)."""
    return block.subset(check_sample(block.item_ids, n_votes))


def _fold_rows(block: Block, seed: int, fold: int, held_out: bool) -> Block:
    """The rows of ``block`` in held-out fold ``fold`` (``held_out``) or the others."""
    return block.subset((row_folds(block.item_ids, seed) == fold) == held_out)


def _fold_gain(block: Block, seed: int, fold: int, models: tuple) -> float:
    return held_out_gain(*models, _fold_rows(block, seed, fold, True).X)


def abstaining_is_informative_partitioned(data: PartitionedAnnotations, seed: int = 0) -> bool:
    """:func:`.abstention.abstaining_is_informative` of a partitioned ``L``: the same folds
    of rows (a hash of the row ids, drawn block by block; on a large ``L`` the same sample
    of rows), per fold both models fitted on the
    training rows by partitioned fits (each block's training rows persisted where the block
    is) and their held-out gain summed over blocks."""
    if sample_fraction(data.summary.n_annotations) < 1.0:
        data = data.derive(_sampled_rows, data.summary.n_annotations)
    if too_few_rows(data.reduce(_voted_rows)):
        return True
    gain = 0.0
    for fold in range(FOLDS):
        train = data.derive(_fold_rows, seed, fold, False)
        if train.summary.n_items in (0, data.summary.n_items):   # no training or test rows
            continue
        abstain, crowd = (fit.model for fit in train.fit_many(
            [method_for(model) for model in abstention_models()]))
        gain += data.reduce(_fold_gain, seed, fold, (abstain, crowd))
    return gain > 0


def predict_proba_partitioned(predict_proba: Callable[[np.ndarray], np.ndarray], L: Any,
                              cardinality: int, n_functions: int) -> Any:
    """``predict_proba(L)`` for a Dask array: a Dask array (n, cardinality), each chunk of
    rows answered by the in-memory ``predict_proba`` (a function of a label matrix)."""
    k = int(cardinality)
    check_layout(L, k, n_functions, name="L")
    if len(L.chunks[1]) > 1:
        L = L.rechunk({1: -1})
    return L.map_blocks(_predict_chunk, predict_proba=predict_proba, cardinality=k,
                        dtype=np.float64, chunks=(L.chunks[0], (k,)))


def _predict_chunk(chunk: np.ndarray, predict_proba: Callable[[np.ndarray], np.ndarray],
                   cardinality: int, block_info: Optional[dict] = None) -> np.ndarray:
    """``predict_proba`` of one chunk of rows, checked first so that an error names the
    chunk's first row in the Dask array (``block_info``: Dask's location of the chunk)."""
    start = block_info[0]["array-location"][0][0] if block_info else 0
    if start is None or start != start:   # chunks of unknown length: name the chunk
        start = f"chunk {block_info[0]['chunk-location'][0]}"
    return predict_proba(_check_chunk(chunk, start, cardinality, name="L"))
