"""The default label model (``"auto"``) fitted block by block: held-out selection on Dask.

:class:`AutoMethod` is the strategy of :class:`~crowd_keras.aggregation.AutoLabelModel`
(``register_method("auto", ...)`` in :mod:`.methods`). It takes the in-memory model's steps
one by one:

1. the regime from the summed votes: on labeling-function votes the abstain-aware
   Dawid-Skene (as every crowd model's ``labeling_functions="auto"``);
2. the same folds: each block draws the folds of its own annotations from its items' content
   keys and the annotations' ranks within their items (:func:`~crowd_keras.aggregation.auto.
   block_folds`; the crowd's label profiles from the summed votes, the annotators'
   fingerprints summed over blocks first), so no annotation moves and nothing is shuffled;
3. per fold, the training annotations as blocks of their own (persisted where each block is)
   and on them a partitioned fit of every candidate in lock-step
   (``PartitionedAnnotations.fit_many``; the folds' fits too, in groups: :func:`~crowd_keras.
   distributed.engine.fit_together`), with the in-memory stopping rule
   (:func:`~crowd_keras.aggregation.auto.selection_done`);
4. one pass over the blocks sums the pairwise agreements from which copying annotators
   are found (:func:`~crowd_keras.aggregation.auto.pair_sums`), one more scores every fit's
   hidden annotations
   (:func:`~crowd_keras.aggregation.auto.agreement_sums`, summed over blocks) and the
   in-memory model's rule picks the candidate (``AutoLabelModel.eligible_scores`` and
   ``AutoLabelModel.choose``);
5. the winner refitted on all blocks by its strategy, which this method then runs.

The fitted model is an ``AutoLabelModel`` equal to the in-memory fit on the same annotations
up to the order of floating-point sums.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from dask import delayed

from ..aggregation.auto import (AutoLabelModel, agreement_scores, agreement_sums,
                                annotator_weights, block_folds, content_fingerprints,
                                classifier_top_counts,
                                copy_weights, gold_sums, item_offsets, named_classes,
                                pair_buckets, pair_sums, selection_done, selection_steps,
                                under_target)
from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import label_profile_keys
from ..progress import progress_bar
from .blocks import Block, Summary
from .engine import fit_together
from .methods import Fit, Method, labeling_function_method, method_for

__all__ = ["AutoMethod", "LOCKSTEP_ANNOTATIONS"]

#: Held-out fits run in lock-step in groups of training sets, a group closed once its sets
#: hold this many annotations: a Dask round costs tens of milliseconds whatever it computes,
#: and the sets of a group are held on the workers together.
LOCKSTEP_ANNOTATIONS = 1 << 22


def _training_block(block: Block, k: int, profiles: np.ndarray, fingerprints: np.ndarray,
                    n_folds: int, seed: int, fold: int) -> Block:
    """The block without the annotations of ``fold`` (those drawn with ``seed``; the crowd's
    label ``profiles`` and the annotators' :func:`content_fingerprints` summed over blocks)."""
    return block.select(block_folds(block, k, profiles, fingerprints, n_folds, seed) != fold)


def _score_block(block: Block, k: int, profiles: np.ndarray, fingerprints: np.ndarray,
                 n_folds: int, seed: int, fitted: Sequence[tuple], counts: np.ndarray,
                 exponent: float, pairs: Any) -> Tuple[np.ndarray, int]:
    """:func:`agreement_sums` of one block for the fits ``fitted`` (``[((pass, fold),
    [(strategy, parameters), ...]), ...]``) and the number of its annotations held out;
    ``pairs``: the copying pairs (:func:`copy_weights`)."""
    tests, posteriors, folds = [], [], {}
    for (repeat, fold), fits in fitted:
        if repeat not in folds:   # one draw per pass, shared by its folds
            folds[repeat] = block_folds(block, k, profiles, fingerprints, n_folds, seed + repeat)
        test = folds[repeat] == fold
        train = block.select(~test)
        tests.append(test)
        posteriors.append([method.posteriors(train, params) for method, params in fits])
    weights = annotator_weights(counts, block.X.indices // k, exponent) * \
        copy_weights(block, pairs, k, np.logical_or.reduce(tests))
    return (agreement_sums(block, tests, posteriors, weights),
            int(np.logical_or.reduce(tests).sum()))


def _gold_rows(block: Block) -> np.ndarray:
    """Boolean (items,): the block's gold items (one class left by its item log-prior)."""
    if block.item_log_prior is None:
        return np.zeros(len(block.item_ids), dtype=bool)
    return np.isfinite(block.item_log_prior).sum(axis=1) == 1


def _classifier_top_counts(block: Block, k: int) -> np.ndarray:
    """(K,) the block's items per class that the classifier (``pred_probs``) ranks strictly
    first (:func:`~crowd_keras.aggregation.auto.classifier_top_counts`); 0 without one."""
    if block.pred_probs is None:
        return np.zeros(k, dtype=np.int64)
    return classifier_top_counts(block.pred_probs)


def _gold_fold_counts(block: Block, n_folds: int, seed: int, k: int,
                      profiles: np.ndarray) -> np.ndarray:
    """(n_folds, K) the block's gold items per fold (folds as :func:`_hidden_gold`) and class."""
    rows = np.flatnonzero(_gold_rows(block))
    if len(rows) == 0:
        return np.zeros((n_folds, k), dtype=np.int64)
    fold = item_offsets(block.item_content_keys(k, profiles)[rows], n_folds, seed)
    truth = np.argmax(block.item_log_prior[rows], axis=1)
    return np.bincount(fold * k + truth, minlength=n_folds * k).reshape(n_folds, k)


def _hidden_gold(block: Block, n_folds: int, seed: int, fold: int, k: int,
                 profiles: np.ndarray) -> np.ndarray:
    """The block's gold items of ``fold`` (folds drawn from the items' content keys, from the
    crowd's label ``profiles``, as in memory)."""
    keys = block.item_content_keys(k, profiles)
    return _gold_rows(block) & (item_offsets(keys, n_folds, seed) == fold)


def _gold_fold_block(block: Block, n_folds: int, seed: int, fold: int, k: int,
                     profiles: np.ndarray) -> Block:
    """The block with the gold items of ``fold`` no longer held at their class."""
    hidden = _hidden_gold(block, n_folds, seed, fold, k, profiles)
    if not hidden.any():
        return block
    prior = block.item_log_prior.copy()
    prior[hidden] = 0.0
    return replace(block, item_log_prior=prior)


def _gold_hits(block: Block, n_folds: int, seed: int, fold: int, k: int, profiles: np.ndarray,
               fits: Sequence[tuple], target: Optional[np.ndarray]) -> np.ndarray:
    """:func:`gold_sums` of each candidate's hits on the hidden gold items of ``fold``
    (``fits``: strategy, parameters, the class-prior factor its posteriors carry and whether
    they carry one, fitted without those items), its labels under ``target`` (as in
    memory)."""
    hidden = np.flatnonzero(_hidden_gold(block, n_folds, seed, fold, k, profiles))
    if len(hidden) == 0:
        return np.zeros((len(fits), 1 + len(fits)))
    train = _gold_fold_block(block, n_folds, seed, fold, k, profiles)
    truth = np.argmax(block.item_log_prior[hidden], axis=1)
    return gold_sums(np.stack([
        agreement_scores(under_target(method.posteriors(train, params), priors, target, has),
                         hidden, truth)
        for method, params, priors, has in fits]))


class AutoMethod(Method):
    """:class:`~crowd_keras.aggregation.AutoLabelModel` fitted partition by partition (see the
    module docstring). After :meth:`choose` it runs the winner's strategy (``inner``) and
    its ``finish`` returns the ``AutoLabelModel`` answering through the refitted winner."""

    model_class = AutoLabelModel

    def __init__(self, model: AutoLabelModel) -> None:
        super().__init__(model)
        self.inner: Optional[Method] = None

    # the protocol, the winner's once chosen
    iterative = property(lambda self: self.inner.iterative)
    needs_report = property(lambda self: self.inner.needs_report)
    reports_expected_accuracy = property(lambda self: self.inner.reports_expected_accuracy)
    max_iter = property(lambda self: self.inner.max_iter)
    tol = property(lambda self: self.inner.tol)
    relative_tol = property(lambda self: self.inner.relative_tol)

    def prepare(self, summary: Summary) -> Method:
        model = self.model
        lf_method = labeling_function_method(model, summary)
        if lf_method is not None:
            return lf_method
        if summary.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        self.ladder = model.ladder(summary.votes.shape[1])
        for _, candidate in self.ladder:   # a candidate without a strategy fails before any fit
            method_for(candidate)
        return super().prepare(summary)

    def choose(self, data: Any) -> Method:
        """Score the candidates on held-out annotations of ``data``, pick one and prepare its
        strategy for the refit on all blocks."""
        model = self.model
        k = data.summary.votes.shape[1]
        # a wrong target fails before the fits, as in memory (it failed after all of them)
        model.target_prior_vector(k, classes=data.classes)
        model.named_classes_ = named_classes(data.summary.votes.sum(axis=0)) | \
            (data.reduce(_classifier_top_counts, k) > 0)
        seed = 0 if model.random_state is None else int(model.random_state)
        # gold per fold and class (the folds of :meth:`_gold_sums`; summed: the gold's classes)
        # the crowd's label profiles: the items' content keys of every fold draw below
        self.profiles = label_profile_keys(data.summary.votes)
        self.gold_fold_counts = data.reduce(_gold_fold_counts, int(model.gold_folds), seed, k,
                                            self.profiles)
        model.gold_class_counts_ = self.gold_fold_counts.sum(axis=0)
        model.n_gold_ = int(model.gold_class_counts_.sum())
        if model.n_gold_:
            model.check_gold_candidates(self.ladder)
        model.heldout_agreement_, model.n_heldout_, model.gold_accuracy_ = {}, 0, {}
        model.tied_ = []
        model.copy_pairs_ = np.asarray(data.annotator_ids)[np.empty((0, 2), dtype=np.int64)]
        scores = self._heldout_scores(data)
        model.selection_ = "single" if scores is None else "agreement"
        model.selection_scores_ = {} if scores is None else dict(scores)
        self.chosen = model.choose(self.ladder, scores, model.tied_)
        if model.chooses_by_gold(len(self.ladder)):
            self.chosen = model.choose_by_gold(self.ladder, self.chosen, self._gold_sums(data))
        self.inner = method_for(model.final_model(self.ladder, self.chosen)).prepare(data.summary)
        return self

    def _gold_sums(self, data: Any) -> np.ndarray:
        """``AutoLabelModel``'s gold sums (:func:`gold_sums`), from partitioned fits."""
        model = self.model
        n_folds = min(int(model.gold_folds), model.n_gold_)
        seed = 0 if model.random_state is None else int(model.random_state)
        k = data.summary.votes.shape[1]
        profiles = self.profiles
        counts = self.gold_fold_counts if n_folds == int(model.gold_folds) else \
            data.reduce(_gold_fold_counts, n_folds, seed, k, profiles)
        sums = np.zeros((len(self.ladder), 1 + len(self.ladder)))
        trains = ((fold, data.derive(_gold_fold_block, n_folds, seed, fold, k, profiles))
                  for fold in range(n_folds))
        for fold, fits in self._fit_in_groups(trains):
            target = model.target_prior_vector(k, counts.sum(axis=0) - counts[fold],
                                               data.classes, model.named_classes_)
            scored = [(fit.method, fit.params, np.exp(fit.model.posterior_log_prior_),
                       fit.model.posterior_has_class_prior) for fit in fits]
            sums += data.reduce(_gold_hits, n_folds, seed, fold, k, profiles,
                                delayed(scored, traverse=False), target)
        return sums

    def _fit_in_groups(self, trains: Iterable[tuple]) -> Iterator[tuple]:
        """``(key, fits of every candidate)`` for each ``(key, training set)`` of ``trains``,
        in order: the sets' fits run in lock-step (:func:`fit_together`), a group of sets at a
        time; a group is fitted once its sets hold :data:`LOCKSTEP_ANNOTATIONS` annotations in
        all (or the sets run out), and the next group's sets are derived after that."""
        group: List[tuple] = []
        size = 0
        for key, train in trains:
            group.append((key, train))
            size += train.summary.n_annotations
            if size >= LOCKSTEP_ANNOTATIONS:
                yield from self._fit_group(group)
                group, size = [], 0
        yield from self._fit_group(group)

    def _fit_group(self, group: List[tuple]) -> Iterator[tuple]:
        """``(key, fits of every candidate)`` of each ``(key, training set)`` of ``group``,
        fitted together."""
        fits = fit_together([(data, [method_for(candidate) for _, candidate in self.ladder])
                             for _, data in group]) if group else []
        return zip([key for key, _ in group], fits)

    def _heldout_scores(self, data: Any) -> Optional[dict]:
        model = self.model
        seed = 0 if model.random_state is None else int(model.random_state)
        n_folds, scored = int(model.n_folds), 0
        fitted: List[tuple] = []
        k = data.summary.votes.shape[1]
        # the annotators' fingerprints over the items' content keys, summed over the blocks
        # (wrapping): the folds' order keys
        profiles = self.profiles
        fingerprints = delayed(data.reduce(content_fingerprints, k, profiles), traverse=False)

        def trains() -> Iterator[tuple]:
            """The folds' training sets that hold something out, up to the stopping rule."""
            nonlocal scored
            for repeat, fold in selection_steps(n_folds, model.max_repeats):
                train = data.derive(_training_block, k, profiles, fingerprints, n_folds,
                                    seed + repeat, fold)
                n_test = data.summary.n_annotations - train.summary.n_annotations
                if n_test:
                    scored += n_test
                    yield (repeat, fold), train
                if selection_done((repeat, fold), n_folds, scored, int(model.min_heldout)):
                    break

        # the bar counts fitted folds (a group's all at once, when their fits end)
        bar = progress_bar(self._fit_in_groups(trains()),
                           desc="auto: held-out fits (partitioned)",
                           total=len(selection_steps(n_folds, model.max_repeats)),
                           disable=not model.progress)
        for step, fits in bar:
            fitted.append((step, [(fit.method, fit.params) for fit in fits]))
        bar.close()
        if not fitted:
            model.n_heldout_ = 0
            return None
        counts = data.summary.votes.sum(axis=1)
        sample = (pair_buckets(data.summary.n_annotations), seed + int(model.max_repeats))
        pairs = model.find_copying_pairs(None if model.copy_confidence is None else
                                         data.reduce(pair_sums, k, *sample, profiles),
                                         data.annotator_ids)
        sums, model.n_heldout_ = data.reduce(_score_block, k, profiles, fingerprints, n_folds,
                                             seed,
                                             delayed(fitted, traverse=False), counts,
                                             float(model.selection_exponent),
                                             delayed(pairs, traverse=False))
        return model.eligible_scores(self.ladder, sums)

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

    def report_posteriors(self, block: Block, params: Any) -> np.ndarray:
        return self.inner.report_posteriors(block, params)

    def label_posteriors(self, block: Block, params: Any, model: AutoLabelModel) -> np.ndarray:
        """The winner's posteriors, under ``target_prior`` where it applies (as in memory)."""
        post = self.inner.posteriors(block, params)
        return model.to_target(post, post.shape[1])

    def finish(self, fit: Fit, template: Annotations) -> AutoLabelModel:
        return self.model.adopt(self.chosen, self.inner.finish(fit, template), template)

    def quality(self, model: AutoLabelModel, fit: Fit, report: Optional[tuple]) -> pd.DataFrame:
        return self.inner.quality(model.model_, fit, report)
