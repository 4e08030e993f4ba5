"""``CrowdLabelModel`` on a Dask array ``L``: the in-memory ``fit``, chunk of rows by chunk.

``CrowdLabelModel.fit`` hands a Dask array over to :func:`fit_partitioned`. The rows stay in
blocks on the Dask workers (:class:`crowd_keras.distributed.PartitionedAnnotations`); the
adapter takes its decisions from sums over rows (:mod:`.votes`, the functions of the
in-memory fit) and the label model is fitted by the engine of :mod:`crowd_keras.distributed`
(the model's own EM steps per block), so the fitted model, ``get_weights()``,
``get_conditional_probs()`` and ``predict_proba`` equal the in-memory adapter's on the same
``L``. The default ``method="auto"`` decides as in memory: one-class functions, or abstaining
that tells the class (:func:`abstaining_is_informative_partitioned`, the held-out check on
folds of rows, block by block), get the abstain-aware Dawid-Skene, crowd answers the
library's ``"auto"`` model (held-out selection, :mod:`crowd_keras.distributed.auto`).
Methods: those of :func:`crowd_keras.distributed.supported_methods`; feature-aware methods
need ``L`` in memory.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Dict, Optional

import numpy as np

from crowd_keras.distributed.blocks import Block
from crowd_keras.distributed.engine import PartitionedAnnotations
from crowd_keras.distributed.methods import method_for
from crowd_keras.errors import CrowdDataError

from .abstention import (FOLDS, abstention_models, check_sample, held_out_gain, row_folds,
                         sample_fraction, too_few_rows)
from .validation import check_label_matrix
from .votes import (COVOTE_MISFIT, covote_misfit_from, covote_step, function_summary,
                    votes_fixed_by_design)

__all__ = ["fit_partitioned", "predict_proba_partitioned",
           "abstaining_is_informative_partitioned"]


def _check_chunk(chunk: np.ndarray, start: int, cardinality: int) -> np.ndarray:
    """``check_label_matrix`` of one chunk, its rows counted from ``start``."""
    try:
        return check_label_matrix(chunk, cardinality, name="L_train")
    except CrowdDataError as exc:
        raise CrowdDataError(f"{exc} (row within the chunk of rows starting at row {start} of "
                             "the Dask array)") from None


def _check_layout(L: Any, cardinality: int, n_functions: Optional[int] = None) -> None:
    """The checks of ``check_label_matrix`` that need only the shape and dtype."""
    check_label_matrix(np.empty((0,) + tuple(L.shape[1:]), dtype=L.dtype), cardinality,
                       name="L_train", n_functions=n_functions)


def _no_features(features: Any) -> None:
    if features is not None:
        raise ValueError("features= needs L in memory: feature-aware methods are not fitted "
                         "chunk by chunk (pass L as a numpy array)")


def fit_partitioned(adapter: Any, L: Any, Y_dev: Any, class_balance: Any, progress_bar: bool,
                    features: Any, given: Dict[str, Any], train_config: Dict[str, Any],
                    mu_eps: Optional[float]) -> Any:
    """``adapter.fit(L, ...)`` for a Dask array ``L`` (chunks of rows); returns ``adapter``."""
    _no_features(features)
    k = int(adapter.cardinality)
    _check_layout(L, k)
    _, balance = adapter._check_setup(L.shape, Y_dev, class_balance,
                                               {**given, **train_config})
    if adapter.method != "auto":
        method_for(adapter.method)  # an unsupported method fails before any work
    data = PartitionedAnnotations.from_label_matrix(
        L, k, check=functools.partial(_check_chunk, cardinality=k))
    summary = data.summary
    if summary.n_annotations == 0:
        raise CrowdDataError("L_train has no votes: every entry is -1 (abstain)")
    coverage = summary.votes.sum(axis=1) / max(summary.n_items, 1)
    fixed_by_design = votes_fixed_by_design(summary.row_variance, coverage)
    method, kwargs, full_first = adapter._plan(
        summary.votes, lambda: abstaining_is_informative_partitioned(data), fixed_by_design,
        balance, {**given, "progress_bar": progress_bar, **train_config})
    fit = None
    adapter.covote_misfit_ = None
    if full_first:
        # one-class functions: the full model if it explains the co-votes, else anchored
        trial = data.fit(method_for(method, **kwargs, anchor="none"))
        step = covote_step(trial.model, L.shape[1], k, summary.n_items)
        if step is not None:
            adapter.covote_misfit_ = covote_misfit_from(trial.model, *data.covotes(step))
        if adapter.covote_misfit_ is not None and adapter.covote_misfit_ < COVOTE_MISFIT:
            fit = trial
    if fit is None:
        fit = data.fit(method_for(method, **kwargs))
    adapter.label_model_ = fit.model
    adapter.n_functions_ = L.shape[1]
    adapter.class_balance_ = balance
    adapter._train_cache = None
    joint, mass = data.statistics(fit, transform=adapter._finish)
    adapter.weights_, adapter.conditional_probs_ = function_summary(
        joint, summary.votes.sum(axis=1), mass, summary.n_items, mu_eps)
    return adapter


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


def predict_proba_partitioned(adapter: Any, L: Any, features: Any = None) -> Any:
    """``adapter.predict_proba(L)`` for a Dask array: a Dask array (n, cardinality), each chunk
    of rows answered by the in-memory ``predict_proba``."""
    _no_features(features)
    k = int(adapter.cardinality)
    _check_layout(L, k, adapter.n_functions_)
    if len(L.chunks[1]) > 1:
        L = L.rechunk({1: -1})
    light = copy.copy(adapter)
    light._train_cache = None   # not shipped to the workers
    return L.map_blocks(light.predict_proba, dtype=np.float64, chunks=(L.chunks[0], (k,)))
