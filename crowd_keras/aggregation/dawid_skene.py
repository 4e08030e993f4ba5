"""Dawid-Skene: one confusion matrix per annotator, fitted by EM (Dawid & Skene, 1979)."""
from __future__ import annotations

from numbers import Real
from typing import Any, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from ..annotations import Annotations
from ..numerics import column_sums, normalize_rows, softmax_rows, sparse_dot
from .base import check_prior, check_start
from .em import Block, EMLabelModel, Summary
from .labeling_functions import LabelingFunctionFallback

__all__ = ["DawidSkene", "OneCoinDawidSkene", "sufficient_statistics", "m_step", "e_step",
           "population_confusion", "STRUCTURES", "PRIOR_MEANS"]


# The EM steps as functions of sufficient statistics: the M-step needs only sums over items,
# so a partitioned fit (crowd_keras.distributed) adds up the statistics of its partitions and
# calls the same m_step: the same model, however the items are split.
def sufficient_statistics(XT: sp.spmatrix, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected counts of the M-step from (a block of) items.

    Args:
        XT: (A·K, I) transposed vote incidence (``Annotations.vote_incidence().T``, the CSC
            view: its product reads the posteriors item by item).
        post: (I, K) item posteriors.

    Returns:
        ``(counts, class_mass)``: counts (A·K, K), ``counts[a·K + l, t]`` = expected number of
        times annotator a said l when the truth was t; class_mass (K,) = Σ_i post_i.
    """
    return sparse_dot(XT, post), column_sums(post)


STRUCTURES = ("full", "one_coin")
PRIOR_MEANS = ("population", "pooled")


def confusion_counts(counts: np.ndarray, k: int) -> np.ndarray:
    """(A·K, K) statistics as (A, K, K) expected counts ``C[a, t, l]``, rows = true class t."""
    return counts.reshape(-1, k, k).transpose(0, 2, 1)


def population_confusion(C: np.ndarray, smoothing: float, strength: float,
                         prior_mean: str = "population") -> np.ndarray:
    """The crowd-level confusion ``P`` (K, K) that annotators are shrunk toward.

    ``"pooled"``: every annotation counts once, ``P ∝ Σ_a C_a + s`` (the maximum-likelihood
    matrix of one annotator standing for the whole crowd). ``"population"``: each annotator is
    one draw of the hierarchical model (Paun et al., TACL 2018): the mean of the annotators'
    own smoothed rows, each weighted by the precision ``n_at / (n_at + m)`` of its estimate, so
    an annotator with thousands of labels counts once and one with a single label
    ``1 / (1 + m)``; a few very busy accounts then cannot define "typical" (on a crowd where
    the busiest accounts mostly answer one class, the pooled matrix is theirs).
    """
    if prior_mean == "pooled" or not np.isfinite(strength):
        return normalize_rows(C.sum(axis=0) + smoothing)
    n = C.sum(axis=2, keepdims=True)                                   # (A, K, 1)
    rows = (C + smoothing) / (n + C.shape[2] * smoothing)              # each annotator's rows
    weight = n / (n + strength)
    return normalize_rows((weight * rows).sum(axis=0) + 1e-12)


def _full_confusions(C: np.ndarray, smoothing: float, strength: float,
                     prior_mean: str) -> np.ndarray:
    """log π (A, K, K): ``π_a[t, l] = (C_atl + s + m P_tl) / (n_at + K s + m)`` (Dawid & Skene
    1979 Eq. 2.3 with a Dirichlet(s + m P_t) prior on every row, the posterior mean); m = 0
    is plain Dawid-Skene, m = ∞ one matrix for the whole crowd."""
    if strength == 0:
        a = C + smoothing
    else:
        P = population_confusion(C, smoothing, strength, prior_mean)
        if not np.isfinite(strength):
            return np.broadcast_to(np.log(P), C.shape)
        a = C + smoothing + strength * P
    with np.errstate(divide="ignore"):   # smoothing=0: a label never given has log π = -inf
        return np.log(a) - np.log(a.sum(axis=2, keepdims=True))


def _one_coin_confusions(C: np.ndarray, smoothing: float, strength: float,
                         prior_mean: str) -> np.ndarray:
    """log π (A, K, K) of the one-coin model (Zhang, Chen, Zhou & Jordan 2016, Eq. 1): accuracy
    ``s_a`` on the diagonal, ``(1 − s_a)/(K − 1)`` elsewhere, with
    ``s_a = (c_a + m s̄ + ε) / (n_a + m + 2ε)`` (a Beta prior centred on the crowd's accuracy
    ``s̄``; ``c_a`` = expected correct labels, ε = ``smoothing``). ``s̄``: ``"population"``, the
    precision-weighted mean of the annotators' own accuracies; ``"pooled"``, the share of all
    labels that are correct."""
    k = C.shape[-1]
    n = C.sum(axis=(1, 2))
    correct = np.trace(C, axis1=1, axis2=2)
    if strength == 0:
        acc = (correct + smoothing) / (n + 2 * smoothing)
    else:
        if prior_mean == "pooled":
            mean = (correct.sum() + smoothing) / (n.sum() + 2 * smoothing)
        else:
            weight = n / (n + strength) if np.isfinite(strength) else (n > 0).astype(float)
            own = (correct + smoothing) / (n + 2 * smoothing)
            mean = float((weight * own).sum() / max(weight.sum(), 1e-12))
        acc = np.full_like(n, mean) if not np.isfinite(strength) else \
            (correct + strength * mean + smoothing) / (n + strength + 2 * smoothing)
    acc = np.clip(acc, 1e-6, 1 - 1e-6)
    eye = np.eye(k, dtype=bool)
    pi = np.where(eye, acc[:, None, None], ((1 - acc) / max(k - 1, 1))[:, None, None])
    return np.log(pi)


_CONFUSIONS = {"full": _full_confusions, "one_coin": _one_coin_confusions}


def m_step(counts: np.ndarray, class_mass: np.ndarray, smoothing: float,
           fixed_prior: Optional[np.ndarray] = None, *, structure: str = "full",
           prior_strength: float = 0.0,
           prior_mean: str = "population") -> tuple[np.ndarray, np.ndarray]:
    """Class prior (K,) and log confusion matrices (A, K, K) from the sufficient statistics.

    Dawid & Skene (1979) Eq. 2.3-2.4 with a Dirichlet pseudo-count ``smoothing`` on every cell
    and on the prior (``ρ_t ∝ mass_t + s``); ``structure`` ``"full"`` (a confusion matrix per
    annotator) or ``"one_coin"`` (one accuracy per annotator); ``prior_strength`` m shrinks
    every annotator toward the crowd (:func:`population_confusion`) with m pseudo-labels
    per row (0: none; ``inf``: one matrix for all). The crowd-level matrix is re-estimated from
    the same statistics at every M-step (empirical Bayes), so a partitioned fit that sums the
    statistics of its blocks gets the same update.
    """
    k = class_mass.shape[0]
    log_pi = _CONFUSIONS[structure](confusion_counts(counts, k), smoothing,
                                    float(prior_strength), prior_mean)
    if fixed_prior is not None:
        return fixed_prior, log_pi
    prior = class_mass + smoothing
    return prior / prior.sum(), log_pi


def e_step(X: sp.csr_matrix, log_pi: np.ndarray, prior: np.ndarray,
           item_log_prior: Optional[np.ndarray] = None) -> tuple[np.ndarray, float]:
    """Item posteriors (I, K) and the summed log-likelihood of (a block of) items.

    ``log p(z_i = t | labels) ∝ log ρ_t + Σ_{(i,a,l)} log π_a[t, l]``: one sparse product
    with the (I, A·K) vote incidence ``X``; ``item_log_prior`` (I, K), when given, is added
    to each item's scores (gold clamps: see :mod:`crowd_keras.aggregation.em`).
    ``log π`` is floored at ``log 1e-300``, as the prior is: at ``smoothing=0`` a label an
    annotator never gave in the fit is impossible under every class, and an item given it
    (new annotations) had no finite score, a NaN row; floored, that label favours no class.
    """
    k = prior.shape[0]
    # W[(a, l), t] = log π_a[t, l]
    weights = np.maximum(log_pi.transpose(0, 2, 1).reshape(-1, k), np.log(1e-300))
    logits = sparse_dot(X, weights)
    log_prior = np.log(np.maximum(prior, 1e-300))
    if item_log_prior is None:
        # added inside the softmax's blocks, in the order above: no pass of its own
        post, log_norm = softmax_rows(logits, out=logits, offset=log_prior)
        return post, float(log_norm.sum())
    logits += log_prior[None, :]
    logits += item_log_prior
    post, log_norm = softmax_rows(logits, out=logits)
    return post, float(log_norm.sum())


class DawidSkene(LabelingFunctionFallback, EMLabelModel):
    """Dawid-Skene label model fitted by EM in log space.

    Each annotator ``a`` has a confusion matrix ``π_a`` (true class × given label). The
    E-step computes ``log p(z_i = k | labels) ∝ log ρ_k + Σ_{(i,a,l)} log π_a[k, l]``; the
    M-step re-estimates ``π`` and the class prior ``ρ`` from the posteriors plus a Dirichlet
    pseudo-count ``smoothing``. Both steps are sparse matrix products over the
    (item) × (annotator, label) incidence matrix, so one iteration costs O(annotations ×
    classes) with no Python loop over annotations or annotators.

    Args:
        max_iter: maximum number of EM iterations.
        tol: stop when the mean log-likelihood per annotation changes by less than this.
        smoothing: Dirichlet pseudo-count added to every confusion-matrix cell and prior.
        init: ``"mv"`` (soft majority vote posteriors, the usual start) or an items ×
            classes array of initial posteriors.
        class_prior: fix the class prior instead of learning it.
        prior_strength: ``m`` ≥ 0, pseudo-labels per confusion row pulling every annotator
            toward the crowd's matrix (hierarchical Dawid-Skene, Paun et al. 2018, with a point
            estimate of the crowd level): an annotator's own counts dominate once it has many
            more than ``m`` labels of a class. 0 (default): plain Dawid-Skene; ``inf``: one
            matrix for the whole crowd. Annotators with few labels are where plain
            Dawid-Skene overfits (see :class:`AutoLabelModel`, which chooses ``m``).
        prior_mean: the crowd's matrix: ``"population"`` (default; the annotators' mean, each
            counted once) or ``"pooled"`` (all labels pooled); see
            :func:`population_confusion`.
        progress: show a progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    Attributes:
        fixed_prior_: (classes,) the ``class_prior`` given, as probabilities, or None.
        n_iter_: EM iterations run.
        log_likelihood_: (n_iter_,) the mean log-likelihood per annotation after each
            iteration.
        posteriors_: (items, classes).
        confusion_matrices_: (annotators, classes, classes), rows = true class.
        class_priors_: (classes,).
    """

    posterior_has_class_prior = True

    #: confusion form of the M-step (:func:`m_step`); subclasses change it
    _structure = "full"
    accepts_gold = True
    accepts_pred_probs = True

    def __init__(self, max_iter: int = 100, tol: float = 1e-5, smoothing: float = 0.01,
                 init: Any = "mv", class_prior: Optional[Any] = None,
                 prior_strength: float = 0.0, prior_mean: str = "population",
                 progress: bool = False, labeling_functions: str = "auto") -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.init = init
        self.class_prior = class_prior
        self.prior_strength = prior_strength
        self.prior_mean = prior_mean
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _check_params(self) -> None:
        strength = self.prior_strength
        wrong_type = isinstance(strength, bool) or not isinstance(strength, Real)
        if wrong_type or not strength >= 0:
            raise (TypeError if wrong_type else ValueError)(
                f"prior_strength must be a number >= 0 (inf: one matrix for the crowd), got "
                f"{type(strength).__name__} {strength!r}")
        if self.prior_mean not in PRIOR_MEANS:
            raise ValueError(f"prior_mean must be one of {PRIOR_MEANS}, got {self.prior_mean!r}")

    @property
    def fits_labelled_items_only(self) -> bool:  # type: ignore[override]
        """EM on the items with labels or gold (:meth:`Block.labelled`): at the fixed point
        the class prior ``ρ_k ∝ Σ_i q_ik + smoothing`` is the same with or without the
        items that have none (their ``q_i`` is ``ρ``), which only slow its convergence. Not
        with an explicit ``init`` (one row per item of the whole block)."""
        return isinstance(self.init, str)

    def m_step_settings(self) -> dict:
        """The keyword arguments of :func:`m_step` that this model's settings imply (a
        partitioned fit calls ``m_step`` with them)."""
        return {"structure": self._structure, "prior_strength": float(self.prior_strength),
                "prior_mean": self.prior_mean}

    # the EM-step protocol (crowd_keras.aggregation.em)
    em_name = "EM"

    def init_state(self, summary: Summary) -> "DawidSkene":
        self._check_params()
        super().init_state(summary)
        self.fixed_prior_ = check_prior(self.class_prior, summary.n_classes)
        if isinstance(self.init, str) and self.init != "mv":
            raise ValueError(f"init must be 'mv' or an array, got {self.init!r}")
        return self

    def initial_posteriors(self, block: Block) -> np.ndarray:
        if isinstance(self.init, str):
            return super().initial_posteriors(block)
        post = np.asarray(self.init, dtype=np.float64)
        if post.shape != (block.n_items, self.n_classes_):
            raise ValueError(f"init posteriors must have shape {(block.n_items, self.n_classes_)}"
                             f", got {post.shape}")
        return check_start(post, "init posteriors")

    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        return sufficient_statistics(block.XT, latent)

    def m_step(self, stats: tuple) -> tuple:
        return m_step(*stats, self.smoothing, self.fixed_prior_, **self.m_step_settings())

    def e_step(self, block: Block, state: tuple) -> tuple:
        prior, log_pi = state
        return e_step(block.X, log_pi, prior, block.item_log_prior)

    def finish(self, state: tuple, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "DawidSkene":
        prior, log_pi = state
        self._set_fitted(template, np.zeros((0, summary.n_classes)), prior, log_pi, history)
        return self

    def _fit_crowd(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None,
                   pred_probs: Optional[np.ndarray] = None) -> "DawidSkene":
        return self.fit_block(ann, item_log_prior, pred_probs)

    def _set_fitted(self, ann: Annotations, post: np.ndarray, prior: np.ndarray,
                    log_pi: np.ndarray, history: list) -> None:
        """The fitted state from the last M-step and E-step (also a partitioned fit's)."""
        self.annotations_ = ann
        self.posteriors_ = post
        self.class_priors_ = prior
        self.confusion_matrices_ = np.exp(log_pi)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        with np.errstate(divide="ignore"):   # smoothing=0: π = 0, floored by e_step
            log_pi = np.log(self.confusion_matrices_)
        return e_step(ann.vote_incidence(), log_pi, self.class_priors_)[0]


class OneCoinDawidSkene(DawidSkene):
    """One-coin Dawid-Skene: one accuracy per annotator (Zhang, Chen, Zhou & Jordan 2016, Eq. 1).

    Annotator ``a`` gives the true class with probability ``s_a`` and any other class with
    ``(1 − s_a)/(K − 1)``: ``K² − 1`` fewer parameters per annotator than Dawid-Skene, so it
    needs fewer labels per annotator, but it cannot represent biased annotators (one who
    confuses two classes). Same arguments, EM, stopping rule and outputs as
    :class:`DawidSkene`; ``prior_strength`` and ``prior_mean`` shrink each accuracy toward the
    crowd's (a Beta prior with ``m`` pseudo-labels; 0, the default, is crowd-kit's
    ``OneCoinDawidSkene``). ``confusion_matrices_`` hold the one-coin matrices.
    """

    _structure = "one_coin"

