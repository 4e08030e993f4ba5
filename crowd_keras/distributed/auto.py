"""The default label model (``"auto"``) fitted block by block: held-out selection on Dask.

:class:`AutoMethod` is the strategy of :class:`~crowd_keras.aggregation.AutoLabelModel`
(``register_method("auto", ...)`` in :mod:`.methods`). It takes the in-memory model's steps
one by one:

1. the regime from the summed votes: on labeling-function votes the abstain-aware
   Dawid-Skene (as every crowd model's ``labeling_functions="auto"``);
2. the same folds: each block draws the folds of its own annotations from its items' ids and
   the annotations' ranks within their items (:func:`~crowd_keras.aggregation.auto.
   annotation_folds`), so no annotation moves and nothing is shuffled;
3. per fold, the training annotations as blocks of their own (each block without its
   held-out annotations, persisted where the block is, dropped after the fold), and on them
   a partitioned fit of every candidate (each a Dawid-Skene-family strategy of
   :mod:`.methods`; the candidates in lock-step, ``PartitionedAnnotations.fit_many``);
4. the held-out scores (the posterior predictive of each hidden label,
   :func:`~crowd_keras.aggregation.auto.predictive_log_likelihood`) summed per block, in a
   table by the fold each held-out annotation has in every pass (:func:`pass_means` turns it
   into the in-memory model's mean over annotations of their average over passes, however
   many passes scored them); the same stopping rule (``min_heldout``, ``max_repeats``) and
   choice (``AutoLabelModel._choose``);
5. the winner refitted on all blocks by its strategy, which this method then runs.

The fitted model is an ``AutoLabelModel`` (``chosen_``, ``heldout_log_likelihood_``,
``n_heldout_``, ``model_``) equal to the in-memory fit on the same annotations up to the
order of floating-point sums.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from dask import delayed

from ..aggregation.auto import AutoLabelModel, annotation_folds, predictive_log_likelihood
from ..annotations import Annotations
from ..errors import CrowdDataError
from ..progress import progress_bar
from .blocks import Block, Summary
from .methods import Fit, Method, labeling_function_method, method_for

__all__ = ["AutoMethod", "pass_means"]


def _folds(block: Block, n_folds: int, seed: int) -> np.ndarray:
    return annotation_folds(block.item_ids, block.annotations_per_item(), n_folds, seed)


def _training_block(block: Block, n_folds: int, seed: int, fold: int) -> Block:
    """The block without the annotations of ``fold`` (those drawn with ``seed``)."""
    return block.select(_folds(block, n_folds, seed) != fold)


def _score_block(block: Block, n_folds: int, seeds: Sequence[int], repeat: int, fold: int,
                 fits: List[tuple]) -> np.ndarray:
    """The held-out table of one block for fold ``fold`` of pass ``repeat``: ``(1 + C, R, F)``,
    ``[0, r, g]`` the number of held-out annotations whose fold in pass ``r`` is ``g`` and
    ``[1 + c, r, g]`` the sum of their log-likelihoods under candidate ``c`` (``fits``: its
    strategy, parameters and confusion matrices, fitted on the training annotations)."""
    folds = np.stack([_folds(block, n_folds, seed) for seed in seeds])      # (R, n)
    test = folds[repeat] == fold
    train = block.select(~test)
    rows = np.repeat(np.arange(block.X.shape[0]), block.annotations_per_item())[test]
    cols = block.X.indices[test]
    cell = (folds[:, test] + n_folds * np.arange(len(seeds))[:, None]).ravel()   # (r, g)
    size = len(seeds) * n_folds
    table = [np.bincount(cell, minlength=size).astype(np.float64)]
    for method, params, confusion in fits:
        k = confusion.shape[1]
        scores = predictive_log_likelihood(method.posteriors(train, params)[rows], confusion,
                                           cols // k, cols % k)
        table.append(np.bincount(cell, weights=np.tile(scores, len(seeds)), minlength=size))
    return np.stack(table).reshape(1 + len(fits), len(seeds), n_folds)


def pass_means(table: np.ndarray, repeat: int, fold: int) -> Tuple[np.ndarray, int]:
    """Mean held-out log-likelihood per candidate and the number of annotations held out,
    from the summed tables of :func:`_score_block` after the scoring stopped at fold ``fold``
    of pass ``repeat``.

    Every annotation that can be held out was held out once in each earlier pass and once
    more in this pass if its fold here is at most ``fold``: how often it was scored depends
    only on its fold ``g`` in the last pass, so the in-memory mean over annotations of their
    average score is ``Σ_g S_g / t_g / Σ_g N_g`` with ``S_g``, ``N_g`` the sums and counts
    in the table (every score of the annotations of group ``g``; counted ``t_g`` times each).
    """
    times = repeat + (np.arange(table.shape[2]) <= fold)
    scored = times > 0
    last = table[:, repeat, scored] / times[scored]                 # (1 + C, groups)
    n_heldout = int(round(last[0].sum()))
    return last[1:].sum(axis=1) / max(n_heldout, 1), n_heldout


class AutoMethod(Method):
    """:class:`~crowd_keras.aggregation.AutoLabelModel` fitted partition by partition (see the
    module docstring). After :meth:`choose` it runs the winner's strategy (``inner``) and
    its ``finish`` returns the ``AutoLabelModel`` answering through the refitted winner."""

    def __init__(self, model: AutoLabelModel) -> None:
        super().__init__(model)
        self.inner: Optional[Method] = None

    # the protocol, the winner's once chosen
    iterative = property(lambda self: self.inner.iterative)
    needs_report = property(lambda self: self.inner.needs_report)
    max_iter = property(lambda self: self.inner.max_iter)
    tol = property(lambda self: self.inner.tol)

    def prepare(self, summary: Summary) -> Method:
        model = self.model
        model._check_params()
        lf_method = labeling_function_method(model, summary)
        if lf_method is not None:
            return lf_method
        if summary.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        self.ladder = model._ladder(summary.votes.shape[1])
        for _, candidate in self.ladder:   # a candidate without a strategy fails before any fit
            method_for(candidate)
        return super().prepare(summary)

    def choose(self, data: Any) -> Method:
        """Score the candidates on held-out annotations of ``data``, pick one and prepare its
        strategy for the refit on all blocks."""
        model = self.model
        self.chosen = model._choose(self.ladder, self._heldout_means(data))
        self.inner = method_for(model._candidate(self.ladder, self.chosen)).prepare(data.summary)
        return self

    def _heldout_means(self, data: Any) -> Optional[Dict[str, float]]:
        """``AutoLabelModel._heldout_scores`` averaged, from partitioned fits; sets
        ``n_heldout_``."""
        model, names = self.model, [name for name, _ in self.ladder]
        seed = 0 if model.random_state is None else int(model.random_state)
        n_folds, seeds = int(model.n_folds), [seed + r for r in range(int(model.max_repeats))]
        table = np.zeros((1 + len(names), len(seeds), n_folds))
        scored, step = 0, 0
        bar = progress_bar(range(len(seeds) * n_folds), desc="auto: held-out fits (partitioned)",
                           disable=not model.progress)
        for step in bar:
            repeat, fold = divmod(step, n_folds)
            train = data.derive(_training_block, n_folds, seeds[repeat], fold)
            n_test = data.summary.n_annotations - train.summary.n_annotations
            if n_test == 0:
                continue
            fits = train.fit_many([method_for(candidate) for _, candidate in self.ladder])
            fitted = [(fit.method, fit.params, fit.model.confusion_matrices_) for fit in fits]
            table += data.reduce(_score_block, n_folds, seeds, repeat, fold,
                                 delayed(fitted, traverse=False))
            scored += n_test
            if scored >= int(model.min_heldout):
                break
        bar.close()
        means, model.n_heldout_ = pass_means(table, *divmod(step, n_folds))
        return None if model.n_heldout_ == 0 else dict(zip(names, means.tolist()))

    def initial(self, block: Block) -> tuple:
        return self.inner.initial(block)

    def update(self, stats: tuple, summary: Summary) -> Any:
        return self.inner.update(stats, summary)

    def step(self, block: Block, params: Any) -> tuple:
        return self.inner.step(block, params)

    def normalizer(self, summary: Summary) -> float:
        return self.inner.normalizer(summary)

    def posteriors(self, block: Block, params: Any) -> np.ndarray:
        return self.inner.posteriors(block, params)

    def finish(self, fit: Fit, template: Annotations) -> AutoLabelModel:
        return self.model._adopt(self.chosen, self.inner.finish(fit, template), template)

    def quality(self, model: AutoLabelModel, fit: Fit, report: Optional[tuple]) -> pd.DataFrame:
        return self.inner.quality(model.model_, fit, report)
