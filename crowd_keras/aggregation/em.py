"""The public EM-step protocol of the label models, and the one loop that runs it.

Every EM-style label model (Dawid-Skene and its variants, the Bayesian models IBCC, EBCC and
BWA, ...) is written as pure steps over a :class:`Block` of items, so that the in-memory fit,
the Dask engine (:mod:`crowd_keras.distributed`), the default model's held-out folds and the
Snorkel adapter's partitioned fit are the same loop over the same steps:

==============================================  ==============================================
``init_state(summary) -> model``                settings from sums over all items
                                                (:class:`Summary`); returns the model that runs
                                                (itself, or another on a hand-over)
``initial_statistics(block) -> stats``          statistics of the starting posteriors
``m_step(stats) -> state``                      parameters from statistics summed over blocks
``e_step(block, state) -> (latent, objective)`` per-item latent posteriors and the block's
                                                summed objective (log-likelihood or its bound)
``sufficient_statistics(block, latent)``        summable statistics of a block's posteriors
``combine(*stats) -> stats``                    sum of partial statistics (:func:`add`)
``class_posteriors(latent) -> (I, K)``          the items' class posteriors
``finish(state, summary, template, history)``   the fitted model (parameters; no per-item state)
``fitting_block(block) -> block``               the items the steps run on (all, or with
                                                ``fits_labelled_items_only`` those with labels
                                                or gold: :meth:`Block.labelled`)
==============================================  ==============================================

Because statistics are sums over items, a fit that splits the items into blocks and adds the
blocks' statistics runs the same EM as one block of all items. :func:`run_em` is the loop;
``fit`` of an :class:`EMLabelModel` is ``run_em`` over one block.

Known classes of some items (gold) enter every model the same way: the block's
``item_log_prior`` (I, K) is added to each item's class log-scores before they are normalised
(0 for the known class and ``-inf`` for the others clamps an item).

A classifier's out-of-fold probabilities (``fit(annotations, pred_probs=...)``) ride on the
block as ``pred_probs`` (I, K): :class:`ClassifierAnnotator` runs any model's steps with the
classifier's tempered likelihood ratio ``(p / p̄)^w`` joining ``item_log_prior`` in the E-step
(gold clamps, ``-inf``, still win), w learned in the M-step.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from ..annotations import Annotations
from ..numerics import (annotation_hashes, group_fingerprints, id_keys, label_profile_keys,
                        mix64, normalize_rows, pair_index, soft_vote)
from ..progress import Convergence
from .base import LabelModel, as_annotations, check_settings, gold_codes
from .classifier_prior import (ClassifierState, classifier_m_step, classifier_statistics,
                               fitted_classifier_log_prior)
from .pred_probs import check_pred_probs

__all__ = ["Block", "Summary", "add", "EMLabelModel", "run_em", "EMRun", "gold_log_prior",
           "ClassifierAnnotator"]


@dataclass
class Block:
    """The annotations of a block of items, as the EM steps read them.

    Attributes:
        item_ids: (I,) the items' ids.
        X: (I, A·K) CSR vote incidence: ``X[i, a·K + l] = 1`` when annotator a said l on item i
            (``Annotations.vote_incidence()``; annotators and classes coded alike in every block).
        item_log_prior: optional (I, K) log-weights added to each item's class scores before
            normalisation (gold clamps, outside priors); None: none.
        pred_probs: optional (I, K) a classifier's (out-of-fold) class probabilities of the
            items, read by :class:`ClassifierAnnotator`; None: none.
    """

    item_ids: np.ndarray
    X: sp.csr_matrix
    item_log_prior: Optional[np.ndarray] = None
    pred_probs: Optional[np.ndarray] = None

    @classmethod
    def from_annotations(cls, ann: Annotations, item_ids: Optional[np.ndarray] = None,
                         item_log_prior: Optional[np.ndarray] = None,
                         pred_probs: Optional[np.ndarray] = None) -> "Block":
        return cls(np.asarray(ann.item_ids if item_ids is None else item_ids),
                   ann.vote_incidence(), item_log_prior, pred_probs)

    @cached_property
    def XT(self) -> Any:
        """The transposed incidence (a CSC view: no copy; made once per block, since building
        the view costs as much as a product on a small block)."""
        return self.X.T

    def __getstate__(self) -> dict:
        # the cached views are not part of the block's data: not pickled
        return {name: value for name, value in self.__dict__.items()
                if name not in ("XT", "_labelled", "_memo")}

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per block and kept under ``key``: a statistic of the
        block's votes alone, which an EM step reads in every iteration (not pickled; a block
        made by :meth:`select`, :meth:`subset` or ``dataclasses.replace`` starts without)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @cached_property
    def _memo(self) -> dict:
        return {}

    @property
    def n_items(self) -> int:
        return self.X.shape[0]

    def select(self, keep: np.ndarray) -> "Block":
        """The annotations where ``keep`` (one per annotation, in storage order: by item, then
        annotator) is true; all items stay (as ``Annotations.select``)."""
        X, per_item = self.X, self.annotations_per_item()
        kept = np.bincount(np.repeat(np.arange(len(per_item)), per_item)[keep],
                           minlength=len(per_item))
        indptr = np.concatenate([[0], np.cumsum(kept)])
        return replace(self, X=sp.csr_matrix((X.data[keep], X.indices[keep], indptr),
                                             shape=X.shape))

    def subset(self, rows: np.ndarray) -> "Block":
        """The items where ``rows`` (a boolean mask over items) is true, in order."""
        prior = None if self.item_log_prior is None else self.item_log_prior[rows]
        probs = None if self.pred_probs is None else self.pred_probs[rows]
        return Block(self.item_ids[rows], self.X[rows], prior, probs)

    def labelled(self) -> "Block":
        """The items EM can learn from: those with an annotation or with a row of
        ``item_log_prior`` that is not all 0 (a gold clamp); every item when the block
        carries ``pred_probs``. The block itself when that is all of them. The other items'
        likelihood is 1 under any parameters, so they add nothing to the posterior of the
        parameters; their class posterior is the fitted class prior's. Made once per block
        (a partitioned fit asks for it in every iteration)."""
        return self._labelled

    @cached_property
    def _labelled(self) -> "Block":
        if self.pred_probs is not None:
            return self
        keep = self.annotations_per_item() > 0
        if self.item_log_prior is not None:
            keep |= (self.item_log_prior != 0).any(axis=1)
        return self if keep.all() else self.subset(keep)

    def annotations_per_item(self) -> np.ndarray:
        """Annotations of each item (as ``Annotations.annotations_per_item``)."""
        return np.diff(self.X.indptr)

    def label_counts(self, k: int) -> np.ndarray:
        """(I, K) float vote counts per item and class (as ``Annotations.label_counts``)."""
        rows = np.repeat(np.arange(self.X.shape[0]), self.annotations_per_item())
        return np.bincount(pair_index(rows, self.X.indices % k, k),
                           minlength=self.X.shape[0] * k).reshape(-1, k).astype(np.float64)

    def with_log_prior(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` (I, K) plus the block's item log-prior (in place when there is one)."""
        if self.item_log_prior is not None:
            logits += self.item_log_prior
        return logits

    def annotation_hashes(self, k: int, item_keys: Optional[np.ndarray] = None) -> np.ndarray:
        """(n,) :func:`~crowd_keras.numerics.annotation_hashes` of the annotations (storage
        order): each from its item's key and its label, not its annotator. ``item_keys``
        (I,) uint64: the items' keys (:meth:`item_content_keys`); None: their ids'."""
        keys = id_keys(self.item_ids, 0) if item_keys is None else item_keys
        return annotation_hashes(np.repeat(keys, self.annotations_per_item()),
                                 self.X.indices % k)

    def annotator_fingerprints(self, k: int, item_keys: Optional[np.ndarray] = None
                               ) -> np.ndarray:
        """(A,) uint64 fingerprint of each annotator: the wrapping sum of the hashes of the
        (item, label) pairs it gave in the block (items by ``item_keys``, see
        :meth:`annotation_hashes`); summable over blocks (wrapping), the same under any
        renaming or reordering of the annotators (0: no annotations)."""
        return group_fingerprints(self.annotation_hashes(k, item_keys), self.X.indices // k,
                                  self.X.shape[1] // k)

    def content_fingerprints(self, k: int, profile_keys: np.ndarray) -> np.ndarray:
        """(A,) uint64 :meth:`annotator_fingerprints` with the items known by their
        :meth:`item_content_keys` (from the crowd's ``profile_keys``): no item id nor
        annotator name plays a part, so renaming or reordering either draws alike; summable
        over blocks (wrapping)."""
        return self.annotator_fingerprints(k, self.item_content_keys(k, profile_keys))

    def item_content_keys(self, k: int, profile_keys: np.ndarray) -> np.ndarray:
        """(I,) uint64 key of each item from what it was told, no id nor name: the wrapping
        sum over its annotations of the hash of (its annotator's ``profile_keys``, the
        label), ``profile_keys`` (A,) from the votes of the whole crowd
        (:func:`~crowd_keras.numerics.label_profile_keys`), so a block's keys are those of
        the whole set. Items told the same by annotators of the same profile share a key (a
        draw keyed on it is then the same for them); without annotations: 0."""
        annotators = self.X.indices // k
        hashes = annotation_hashes(mix64(np.asarray(profile_keys, dtype=np.uint64)[annotators]),
                                   self.X.indices % k)
        items = np.repeat(np.arange(self.n_items), self.annotations_per_item())
        return group_fingerprints(hashes, items, self.n_items)

    def summary(self, k: int, fingerprints: bool = False) -> "Summary":
        """The block's :class:`Summary`; ``fingerprints``: with the annotators'
        (:meth:`content_fingerprints` from this block's own label profiles, so only for a
        block that holds the whole crowd: one hash per annotation, which only the models that
        draw per annotator need, ``needs_annotator_keys``)."""
        per_item = self.annotations_per_item().astype(np.int64)
        votes = np.bincount(self.X.indices, minlength=self.X.shape[1]).reshape(-1, k)
        keys = self.content_fingerprints(k, label_profile_keys(votes)) if fingerprints else None
        return Summary(len(per_item), int(per_item.sum()), int((per_item ** 2).sum()), votes,
                       n_pred_probs=len(per_item) if self.pred_probs is not None else 0,
                       fingerprints=keys)


@dataclass
class Summary:
    """Sums over all items, gathered before EM.

    Attributes:
        n_items, n_annotations: counts. sum_squared_votes: Σ_i (annotations of item i)².
        votes: (A, K) int64 votes of each annotator per class
        (``Annotations.annotator_label_counts()``).
        n_pred_probs: items whose block carries a classifier's probabilities (``pred_probs``):
            a partitioned fit's strategies run the model with the classifier
            (:class:`ClassifierAnnotator`) when every item has them.
        fingerprints: (A,) uint64 :meth:`Block.content_fingerprints`, summed (wrapping):
            the keys of the random starts drawn per annotator (MACE, the mixture of groups),
            so they follow what each annotator said, not its name nor the items' ids; None:
            not gathered.
    """

    n_items: int
    n_annotations: int
    sum_squared_votes: int
    votes: np.ndarray
    n_pred_probs: int = field(default=0, kw_only=True)
    fingerprints: Optional[np.ndarray] = field(default=None, kw_only=True)

    def __add__(self, other: "Summary") -> "Summary":
        mine, theirs = self.fingerprints, getattr(other, "fingerprints", None)
        with np.errstate(over="ignore"):
            fingerprints = None if mine is None or theirs is None else mine + theirs
        return Summary(self.n_items + other.n_items, self.n_annotations + other.n_annotations,
                       self.sum_squared_votes + other.sum_squared_votes, self.votes + other.votes,
                       n_pred_probs=self.n_pred_probs + getattr(other, "n_pred_probs", 0),
                       fingerprints=fingerprints)

    def annotator_keys(self) -> np.ndarray:
        """(A,) :attr:`fingerprints`; a summary without them raises."""
        if self.fingerprints is None:
            raise ValueError("this Summary has no annotator fingerprints (Block.summary(k, "
                             "fingerprints=True), or run_em, gathers them): the random "
                             "starts are drawn from them")
        return self.fingerprints

    @property
    def n_classes(self) -> int:
        return self.votes.shape[1]

    @property
    def row_variance(self) -> float:
        """Variance of the number of annotations per item."""
        n = max(self.n_items, 1)
        return self.sum_squared_votes / n - (self.n_annotations / n) ** 2

    @property
    def vote_shares(self) -> np.ndarray:
        """(K,) frequency of each class among all votes (uniform without votes)."""
        return normalize_rows(self.votes.sum(axis=0).astype(np.float64))


def add(*parts: Any) -> Any:
    """Element-wise sum of statistics: arrays, numbers, summaries, or tuples of them."""
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(add(*column) for column in zip(*parts))
    total = first
    for part in parts[1:]:
        total = total + part
    return total


def gold_log_prior(n_items: int, n_classes: int, gold_items: np.ndarray,
                   gold_classes: np.ndarray) -> np.ndarray:
    """(I, K) item log-prior that clamps the items ``gold_items`` (codes) to ``gold_classes``
    (codes): 0 on the known class, ``-inf`` on the others, 0 everywhere for other items."""
    prior = np.zeros((n_items, n_classes))
    prior[gold_items] = -np.inf
    prior[gold_items, gold_classes] = 0.0
    return prior


class EMLabelModel(LabelModel):
    """A label model written as the public EM-step protocol (see the module docstring).

    Subclasses implement :meth:`sufficient_statistics`, :meth:`m_step`, :meth:`e_step` and
    :meth:`finish`, and may override :meth:`init_state`, :meth:`initial_posteriors` (soft
    majority vote by default), :meth:`initial_statistics`, :meth:`class_posteriors`,
    :meth:`combine` and :meth:`objective_scale`. They hold ``max_iter`` and ``tol`` (EM stops
    when the objective per :meth:`objective_scale` changes by less than ``tol``, or by less
    than ``tol`` times its size with :attr:`relative_tol`) and may hold ``progress``
    (``True``, ``False`` or ``"auto"``, as :class:`~crowd_keras.progress.Convergence`).
    :meth:`fit_block` fits one block in memory. An override of :meth:`init_state` calls this
    one (it sets ``n_classes_`` and ``vote_shares_``, which :meth:`initial_posteriors`
    reads). A model whose :meth:`e_step` adds the block's ``item_log_prior`` sets
    ``accepts_gold = True`` (``fit(..., gold=...)``); ``accepts_pred_probs = True`` runs it
    inside :class:`ClassifierAnnotator` for ``fit(..., pred_probs=...)``.
    """

    max_iter: int
    tol: float

    #: name of the EM loop in progress bars
    em_name = "EM"
    #: True: the start draws per annotator from the annotators' fingerprints
    #: (:attr:`Summary.fingerprints`, which :func:`run_em` then gathers)
    needs_annotator_keys = False
    #: True: EM stops when the objective moves by less than ``tol`` times its size
    relative_tol = False
    #: True: EM runs on :meth:`Block.labelled` (:meth:`fitting_block`), for a model to which
    #: an item without labels adds nothing (its posterior is the class prior: it only drags
    #: the prior toward its last value, and in a mean-field bound shifts the fixed point);
    #: such items' posteriors come from the last state's E-step
    fits_labelled_items_only = False

    # ---------------------------------------------------------------- the protocol
    def init_state(self, summary: Summary) -> "EMLabelModel":
        """Resolve settings from sums over all items; the model that runs (default: self)."""
        self.n_classes_ = summary.n_classes
        self.vote_shares_ = summary.vote_shares
        return self

    def fitting_block(self, block: Block) -> Block:
        """The part of ``block`` that EM runs on: :meth:`Block.labelled` with
        :attr:`fits_labelled_items_only`, else the whole block."""
        return block.labelled() if self.fits_labelled_items_only else block

    def initial_posteriors(self, block: Block) -> np.ndarray:
        """(I, K) starting posteriors: the soft majority vote (items without votes: the
        crowd's vote shares), then the block's item log-prior."""
        post = soft_vote(block.label_counts(self.n_classes_))
        post[block.annotations_per_item() == 0] = self.vote_shares_
        if block.item_log_prior is not None:
            with np.errstate(divide="ignore"):
                post = normalize_rows(np.exp(np.log(post + 1e-300) + block.item_log_prior))
        return post

    def initial_statistics(self, block: Block) -> Any:
        """Statistics of :meth:`initial_posteriors` (a model with other latent variables
        overrides this)."""
        return self.sufficient_statistics(block, self.initial_posteriors(block))

    def sufficient_statistics(self, block: Block, latent: Any) -> Any:  # pragma: no cover
        raise _missing_step(self, "sufficient_statistics(block, latent)")

    @staticmethod
    def combine(*stats: Any) -> Any:
        """Sum of partial statistics of disjoint blocks."""
        return add(*stats)

    def m_step(self, stats: Any) -> Any:  # pragma: no cover - abstract
        raise _missing_step(self, "m_step(stats)")

    def e_step(self, block: Block, state: Any) -> Tuple[Any, float]:  # pragma: no cover
        raise _missing_step(self, "e_step(block, state)")

    def class_posteriors(self, latent: Any) -> np.ndarray:
        """(I, K) class posteriors from the E-step's latent posteriors (default: the same)."""
        return latent

    @property
    def progress_name(self) -> str:
        """Name of the EM loop in progress bars (default: the class name and :attr:`em_name`)."""
        return f"{type(self).__name__} {self.em_name}"

    def objective_scale(self, summary: Summary) -> float:
        """What the summed objective is divided by for the stopping rule."""
        return float(max(summary.n_annotations, 1))

    def finish(self, state: Any, summary: Summary, template: Annotations,
               history: Sequence[float]) -> LabelModel:  # pragma: no cover - abstract
        """Set the fitted parameters (``class_priors_``, ``confusion_matrices_``, ``n_iter_``,
        ...) from the last state; ``template`` is the coding (``annotations_``). Returns the
        fitted model (self, or the model it handed over to)."""
        raise _missing_step(self, "finish(state, summary, template, history)")

    # ---------------------------------------------------------------- in memory
    def fit(self, annotations: Any, gold: Any = None, pred_probs: Any = None,
            **kwargs: Any) -> LabelModel:
        """Fit on annotations (an ``Annotations``, a dense matrix with -1 where missing, or a
        long frame: ``kwargs`` go to its reader); ``gold``: known classes of some items (see
        :func:`~crowd_keras.aggregation.base.gold_codes`), held at their class in every
        E-step, for a model with ``accepts_gold``; ``pred_probs``: a classifier's
        out-of-fold class probabilities of the items (I, K) or a frame indexed by item id
        (:func:`~crowd_keras.aggregation.pred_probs.check_pred_probs`), for a model with
        ``accepts_pred_probs`` (:class:`ClassifierAnnotator`, as on Dask). Returns the
        fitted model (:meth:`fit_block`'s)."""
        ann = as_annotations(annotations, **kwargs)
        if gold is not None and not self.accepts_gold:
            raise TypeError(f"{type(self).__name__}.fit() does not take gold labels")
        if pred_probs is not None and not self.accepts_pred_probs:
            raise TypeError(f"{type(self).__name__}.fit() does not take pred_probs")
        prior = None if gold is None else \
            gold_log_prior(ann.n_items, ann.n_classes, *gold_codes(ann, gold, annotations))
        if pred_probs is None:     # models that take no pred_probs narrow fit_block
            return self.fit_block(ann, prior)
        return self.fit_block(ann, prior, check_pred_probs(pred_probs, ann))

    def fit_block(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None,
                  pred_probs: Optional[np.ndarray] = None) -> LabelModel:
        """:func:`run_em` over all of ``ann`` as one block; sets ``posteriors_``. With
        ``pred_probs`` (I, K, checked) the classifier is one more annotator
        (:class:`ClassifierAnnotator`). Sets ``item_log_prior_`` (I, K, or None): what the
        items' class scores got besides their labels (gold clamps, the fitted classifier
        prior), which the quality scores add too."""
        for name in ("classifier_quality_", "classifier_weight_", "classifier_marginal_"):
            self.__dict__.pop(name, None)                      # from an earlier fit
        block = Block.from_annotations(ann, item_log_prior=item_log_prior, pred_probs=pred_probs)
        model = self if pred_probs is None else ClassifierAnnotator(self)
        run = run_em(model, [block], block.summary(ann.n_classes))
        model = run.runner.finish(run.state, run.summary, ann, run.history)
        model.annotations_ = ann
        model.posteriors_ = run.runner.class_posteriors(run.latents[0])
        # what each item's scores got besides its labels, for the quality scores
        model.item_log_prior_ = item_log_prior if pred_probs is None else \
            fitted_classifier_log_prior(model, pred_probs, item_log_prior)
        return model


@dataclass
class EMRun:
    """What :func:`run_em` leaves: the model that ran, its last state and statistics, each
    block's last latent posteriors, the objective history and the summary."""

    runner: EMLabelModel
    state: Any
    stats: Any
    latents: List[Any]
    summary: Summary
    history: List[float] = field(default_factory=list)


def _missing_step(model: Any, step: str) -> NotImplementedError:
    """The error of a protocol step a model does not define (it said nothing before)."""
    return NotImplementedError(f"{type(model).__name__} does not define the EM-step protocol's "
                               f"{step} (docs/protocol-label-models.md)")


def run_em(model: EMLabelModel, blocks: Sequence[Block], summary: Summary,
           map_blocks: Optional[Callable[[Callable, Sequence[Block]], List[Any]]] = None
           ) -> EMRun:
    """The EM loop of the protocol over ``blocks``: M-step on the combined statistics, E-step
    per block, stop when the objective per ``objective_scale`` moves by less than ``tol`` (times
    its size with ``relative_tol``) or after ``max_iter`` iterations. ``map_blocks(fn,
    blocks)`` applies ``fn`` to each block (default: in this process, in order)."""
    check_settings(model)
    apply = map_blocks or (lambda fn, bs: [fn(b) for b in bs])
    if getattr(model, "needs_annotator_keys", False) and summary.fingerprints is None:
        k, profiles = summary.n_classes, label_profile_keys(summary.votes)
        with np.errstate(over="ignore"):   # partial fingerprints add up, wrapping
            keys = sum(apply(lambda b: b.content_fingerprints(k, profiles), blocks),
                       np.zeros(summary.votes.shape[0], dtype=np.uint64))
        summary = replace(summary, fingerprints=keys)
    runner = model.init_state(summary)
    fitted = apply(runner.fitting_block, blocks)
    stats = runner.combine(*apply(runner.initial_statistics, fitted))
    progress = getattr(runner, "progress", False)
    if isinstance(progress, np.ndarray) or progress not in (True, False, "auto"):
        # not bool(): "yes" or "off" would run a bar (or none) silently
        raise ValueError(f"{type(model).__name__} progress must be True, False or 'auto', "
                         f"got {progress!r}")
    loop = Convergence(runner.max_iter, runner.tol, runner.progress_name,
                       progress if progress == "auto" else bool(progress),
                       relative=runner.relative_tol)
    scale = runner.objective_scale(summary)
    state, latents = None, []
    for _ in loop:
        state = runner.m_step(stats)
        steps = apply(lambda b: runner.e_step(b, state), fitted)
        latents = [latent for latent, _ in steps]
        stats = runner.combine(*[runner.sufficient_statistics(b, latent)
                                 for b, latent in zip(fitted, latents)])
        loop.record(sum(objective for _, objective in steps) / scale)
    if state is None:   # no M-step ran (MACE's restarts take 0: their start is a state)
        raise ValueError(f"{type(model).__name__} max_iter must be at least 1 for an EM fit, "
                         f"got {runner.max_iter}")
    if any(part is not whole for part, whole in zip(fitted, blocks)):
        # every item's posterior, from the state the last E-step used (a row's E-step
        # reads only its own labels: the fitted items' posteriors are unchanged)
        latents = [runner.e_step(whole, state)[0] if part is not whole else latent
                   for part, whole, latent in zip(fitted, blocks, latents)]
    return EMRun(runner, state, stats, latents, summary, list(loop.history))



class ClassifierAnnotator(EMLabelModel):
    """Any EM-protocol model with a classifier's probabilities as a learned per-item prior.

    Each item's prior over classes is ``π_i(k) ∝ ρ_k (p_i(k) / p̄_k)^w``: the wrapped model's
    class prior ρ times the classifier's tempered likelihood ratio (its probabilities p_i,
    the block's ``pred_probs``, over their mean p̄, so that the class prior is counted once),
    added to ``item_log_prior`` before the wrapped model's E-step (gold clamps, ``-inf``,
    still win). The weight w is learned in the M-step by maximising the expected complete
    log-likelihood ``Σ_i Σ_k q_ik log π_i(k)`` (concave in w: bracketed by trial weights and
    found by a Newton step inside the bracket, :func:`classifier_m_step`; w starts at 0, so the
    first consensus is the annotators'): how well the classifier predicts the consensus, as
    CROWDLAB weights its classifier by its agreement with the consensus (Goh, Tkachenko & Mueller
    2022). One exponent, not a confusion matrix: it corrects an under- or over-confident
    classifier's scale, where a soft annotator's matrix would dilute soft probabilities; a
    classifier unrelated to the truth gets w near 0.

    Statistics are ``(wrapped model's, classifier_statistics)``, sums over items, so the fit
    splits into blocks as the wrapped model's (each block carries its items' ``pred_probs``).
    """

    def __init__(self, model: EMLabelModel) -> None:
        self.model = model

    # run_em reads these from the model that runs
    @property
    def max_iter(self) -> int:  # type: ignore[override]
        return self.model.max_iter

    @property
    def tol(self) -> float:  # type: ignore[override]
        return self.model.tol

    @property
    def progress(self) -> Any:
        return getattr(self.model, "progress", False)     # "auto" stays "auto"

    @property
    def em_name(self) -> str:  # type: ignore[override]
        return f"{self.model.em_name} with a classifier"

    @property
    def needs_annotator_keys(self) -> bool:  # type: ignore[override]
        return getattr(self.model, "needs_annotator_keys", False)

    @property
    def progress_name(self) -> str:
        """The wrapped model's loop name (its class, not this wrapper's) with a classifier."""
        return f"{self.model.progress_name} with a classifier"

    def init_state(self, summary: Summary) -> "ClassifierAnnotator":
        self.n_classes_ = summary.n_classes
        self.runner_ = self.model.init_state(summary)
        return self

    @staticmethod
    def _probs(block: Block) -> np.ndarray:
        if block.pred_probs is None:
            raise ValueError("ClassifierAnnotator needs blocks with pred_probs")
        return block.pred_probs

    def initial_statistics(self, block: Block) -> Tuple[Any, np.ndarray]:
        return (self.runner_.initial_statistics(block),
                classifier_statistics(self.runner_.initial_posteriors(block), self._probs(block),
                                      None))

    def combine(self, *stats: Any) -> Tuple[Any, np.ndarray]:  # type: ignore[override]
        return (self.runner_.combine(*[s[0] for s in stats]), add(*[s[1] for s in stats]))

    def m_step(self, stats: Tuple[Any, np.ndarray]) -> Tuple[Any, ClassifierState]:
        return self.runner_.m_step(stats[0]), classifier_m_step(stats[1])

    def e_step(self, block: Block, state: Tuple[Any, ClassifierState]) -> Tuple[Any, float]:
        prior = block.with_log_prior(state[1].item_log_prior(self._probs(block)))
        latent, objective = self.runner_.e_step(replace(block, item_log_prior=prior), state[0])
        return (latent, state[1]), objective

    def sufficient_statistics(self, block: Block, latent: Tuple[Any, ClassifierState]
                              ) -> Tuple[Any, np.ndarray]:
        inner, classifier = latent
        return (self.runner_.sufficient_statistics(block, inner),
                classifier_statistics(self.runner_.class_posteriors(inner), self._probs(block),
                                      classifier))

    def class_posteriors(self, latent: Tuple[Any, ClassifierState]) -> np.ndarray:
        return self.runner_.class_posteriors(latent[0])

    def objective_scale(self, summary: Summary) -> float:
        return self.runner_.objective_scale(summary)

    def finish(self, state: Tuple[Any, ClassifierState], summary: Summary,
               template: Annotations, history: Sequence[float]) -> LabelModel:
        """The wrapped model's fit, with ``classifier_weight_`` (the learned w),
        ``classifier_marginal_`` (K,) p̄, and ``classifier_quality_`` (the mean posterior of
        the classifier's top class: its accuracy against the consensus, as
        ``annotator_quality_``'s)."""
        model = self.runner_.finish(state[0], summary, template, history)
        model.classifier_weight_ = float(state[1].weight)
        model.classifier_marginal_ = np.exp(state[1].log_marginal)
        model.classifier_quality_ = float(state[1].quality)
        return model
