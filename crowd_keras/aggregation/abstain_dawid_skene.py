"""Dawid-Skene with abstention as a response, for labeling functions (WRENCH's DS) and crowds.

A labeling function that only ever votes "spam" tells nothing through its votes alone: a
Dawid-Skene model that drops abstentions sees a confusion matrix whose every row says
"spam" and learns nothing about it. Treating "abstain" as one more response (each function
gets a true class × (classes + abstain) matrix, as WRENCH's Dawid-Skene does) makes such a
function informative: it votes "spam" far more often when the item is spam.

Two regimes, told apart from the data (``regime_``):

- **labeling functions** (most votes are cast by functions that only ever vote one class):
  abstention is a response in the M-step; the E-step scores the votes cast (as Snorkel's
  ``LabelModel.predict_proba`` does, ``abstain_weight=0``) under a uniform class prior, and
  the reported class is the one with the most votes, the model deciding among tied classes
  (``anchor="votes"``). Functions written by one person from overlapping keywords violate
  the conditional independence every such model assumes, so that even parameters estimated
  from the gold labels can fall below voting; counting votes first keeps the model at least
  as good as voting there.
- **crowd** (annotators answer any class): annotators skip items for reasons unrelated to
  the label, so abstention is not modelled (``abstain="ignore"``, plain Dawid-Skene with a
  learned class prior); the posterior decides.

The fit is the EM-step protocol of :mod:`crowd_keras.aggregation.em` (statistics are sums
over items), so it runs split into blocks and on Dask as in memory.
"""
from __future__ import annotations

from numbers import Real
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..annotations import Annotations
from ..arguments import check_number
from ..errors import CrowdDataError
from ..numerics import (class_vote_counts, normalize_rows, softmax_rows, sparse_dot,
                        top_classes)
from .base import check_prior, partitioned_report
from .em import Block, EMLabelModel, Summary, run_em
from .regime import one_class_share

__all__ = ["AbstainAwareDawidSkene", "abstain_m_step", "abstain_weights", "abstain_logits",
           "AbstainState", "AbstainLatent", "two_class_e_step", "two_class_posteriors"]

_ABSTAIN = ("auto", "response", "ignore")
_ANCHOR = ("auto", "votes", "none")


# The EM steps as functions of sums over items (the statistics of dawid_skene's
# sufficient_statistics), so that a partitioned fit (crowd_keras.distributed) runs the same steps.
def abstain_m_step(votes: np.ndarray, class_mass: np.ndarray, n_items: int,
                   votes_per_function: np.ndarray, modelled: np.ndarray, smoothing: float,
                   fixed_prior: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Log class prior (K,) and log response matrices (functions, K, K + 1), abstain last.

    Args:
        votes: (functions, K true, K label) expected votes: ``votes[a, t, l]`` = expected
            number of votes l of function a when the truth was t
            (:func:`~crowd_keras.numerics.class_vote_counts`). class_mass: (K,) ``Σ_i post_i``.
        n_items: number of items (rows of ``L``, voted or not).
        votes_per_function: (functions,) votes cast. modelled: (functions,) bool, abstention
            modelled per class. smoothing: the pseudo-count. fixed_prior: the prior to hold.
    """
    s = smoothing
    m, k = modelled.shape[0], class_mass.shape[0]
    # resp[a, t, l]: expected number of times function a gave response l (last: abstain)
    # when the truth was t, plus the pseudo-count
    n_true = class_mass
    resp = np.empty((m, k, k + 1))
    resp[:, :, :k] = votes + s
    resp[:, :, k] = np.maximum(n_true[None, :] - votes.sum(axis=2), 0.0) + s
    resp = normalize_rows(resp)
    if not modelled.all():
        # not modelled: p(abstain) is one shared rate, so it cancels from the posterior
        rest = ~modelled
        rate = (n_items - votes_per_function[rest] + s) / (n_items + 2 * s)
        cond = normalize_rows(votes[rest] + s)
        resp[rest, :, :k] = cond * (1.0 - rate)[:, None, None]
        resp[rest, :, k] = rate[:, None]
    if fixed_prior is not None:
        prior = fixed_prior
    else:
        prior = (n_true + s) / (n_true + s).sum()
    return np.log(np.maximum(prior, 1e-300)), np.log(resp)


def abstain_weights(log_resp: np.ndarray, log_prior: np.ndarray, abstain_weight: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """E-step weights: logits = ``X @ W + const``, ``W`` (functions × classes, classes)."""
    k = log_prior.shape[0]
    w = abstain_weight
    log_abstain = log_resp[:, :, k]  # (functions, classes)
    W = (log_resp[:, :, :k] - w * log_abstain[:, :, None]).transpose(0, 2, 1).reshape(-1, k)
    return W, w * log_abstain.sum(axis=0) + log_prior


def abstain_logits(X: sp.csr_matrix, log_resp: np.ndarray, log_prior: np.ndarray,
                   abstain_weight: float) -> np.ndarray:
    """Items × classes unnormalized log posteriors (E-step) of (a block of) items."""
    W, const = abstain_weights(log_resp, log_prior, abstain_weight)
    return np.asarray(X @ W) + const[None, :]


class AbstainLatent(NamedTuple):
    """The E-step's posteriors of a block, with the block and state they came from (the
    reported posteriors, anchored to the votes or not, are computed from them).

    ``q``: (I, K) posteriors; two classes (most labeling-function sets): ``q`` (I,) is
    ``p(class 1)`` only. ``d``: (I,) ``l₁ − l₀`` of the two-class path (None otherwise).
    ``full``: the (I, K) posteriors when the E-step made them (None on the two-class path).
    """

    q: np.ndarray
    d: Optional[np.ndarray]
    full: Optional[np.ndarray]
    block: Block
    state: "AbstainState"


class AbstainState(NamedTuple):
    """The M-step's parameters: log class prior (K,), log response matrices (functions, K,
    K + 1), the E-step weights ``W`` (functions × K, K) and ``const`` (K,) of
    :func:`abstain_weights`, and the mean posterior (K,) of the statistics it was made from."""

    log_prior: np.ndarray
    log_resp: np.ndarray
    W: np.ndarray
    const: np.ndarray
    balance: np.ndarray


def two_class_e_step(X: sp.csr_matrix, W: np.ndarray, const: np.ndarray,
                     column_votes: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The E-step of two classes on ``p = q_·1`` alone: ``p = σ(d)``, ``d = l₁ − l₀`` one
    product with ``W₁ − W₀``, and the evidence ``Σ_i log(e^l₀ + e^l₁) = Σ_i l₁ + Σ_i log(1 +
    e^−d)`` with ``Σ_i l₁ = votes · W₁ + I const₁`` (``column_votes``: the block's votes per
    column of ``X``). The same numbers as the general path up to rounding.

    Returns ``(p, d, evidence)``, ``p`` and ``d`` of shape (I,).
    """
    d = np.asarray(X @ (W[:, 1] - W[:, 0]))
    d += const[1] - const[0]
    with np.errstate(over="ignore"):
        den = np.exp(-d)                                 # e^(l₀ − l₁)
    den += 1.0
    tail = float(np.log(den).sum())                      # Σ_i log(1 + e^(l₀ − l₁))
    if not np.isfinite(tail):                            # some l₀ − l₁ > 709
        tail = float(np.maximum(-d, 0.0).sum()) + float(np.log1p(np.exp(-np.abs(d))).sum())
    p = np.reciprocal(den, out=den)                      # σ(d)
    return p, d, float(column_votes @ W[:, 1]) + len(d) * float(const[1]) + tail


def two_class_posteriors(p: np.ndarray, d: Optional[np.ndarray]) -> np.ndarray:
    """(I, 2) posteriors from ``p = σ(d)``; ``p(class 0) = σ(−d)`` (exact where ``1 − p``
    would round to 0)."""
    post = np.empty((len(p), 2))
    post[:, 1] = p
    post[:, 0] = _sigmoid(-d) if d is not None else 1.0 - p
    return post


def _sigmoid(d: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):   # exp(−d) = inf gives exactly 0
        out = np.exp(-d)
    out += 1.0
    return np.reciprocal(out, out=out)


class AbstainAwareDawidSkene(EMLabelModel):
    """Dawid-Skene whose annotators (labeling functions) may abstain as a response.

    Function ``a`` has a response matrix ``R_a`` of shape (classes, classes + 1): row ``k``
    is ``p(response | true class k)`` over the classes and, last, "abstain". EM in log space
    (Dawid & Skene 1979, with the abstain column of WRENCH's DS, Zhang et al. 2021):

    - M-step: ``R_a[k, l] ∝ Σ_i q_ik [L_ia = l] + s`` and ``R_a[k, abstain] ∝ N_k −
      Σ_l Σ_i q_ik [L_ia = l] + s``, with ``N_k = Σ_i q_ik`` and pseudo-count ``s``
      (``smoothing``). For functions whose abstention is not modelled (``abstain="ignore"``,
      and any function that never votes) the abstain probability is one shared rate, so it
      cancels from every posterior and the model is the plain Dawid-Skene model.
    - E-step: ``log q_ik = log ρ_k + Σ_{a voted l} (log R_a[k, l] − w log R_a[k, ⊥])
      + w Σ_a log R_a[k, ⊥] + const``, where ``w`` is ``abstain_weight`` (1: the full
      likelihood; 0: votes only, as Snorkel's ``predict_proba``). Both steps are sparse
      products over the items × (functions × classes) vote matrix: no Python loop over
      items, functions or votes. Two classes run on ``p(class 1)`` alone
      (:func:`two_class_e_step`).
    - Anchor (``anchor="votes"``): the reported posterior is zero outside the classes with
      the most votes and proportional to ``q`` among them; items without any vote keep ``q``.
      EM itself runs on the un-anchored ``q``; the anchor applies to what is reported.

    The steps are the EM-step protocol (:mod:`crowd_keras.aggregation.em`): statistics are
    the expected votes ``Xᵀ q`` and the class mass ``Σ_i q_i``, sums over items.

    Args:
        abstain: ``"response"`` (abstention modelled per class for every function that votes),
            ``"ignore"`` (plain Dawid-Skene) or ``"auto"``: ``"response"`` in the labeling
            function regime, ``"ignore"`` in the crowd regime.
        anchor: ``"votes"`` (the most-voted class wins, the model breaks ties), ``"none"``
            (the posterior's argmax) or ``"auto"``: ``"votes"`` in the labeling-function regime.
        abstain_weight: weight ``w`` of abstentions in the E-step, in [0, 1], or ``"auto"``:
            0 when anchored to the votes, else 1.
        class_prior: ``"learn"``, ``"uniform"``, an array of ``n_classes`` probabilities, or
            ``"auto"``: uniform when anchored to the votes (Snorkel's default class balance),
            else learned.
        max_iter: maximum EM iterations.
        tol: stop when the mean log evidence per item changes by less than this.
        smoothing: Dirichlet pseudo-count (> 0).
        one_class_share: the labeling-function regime applies when at least this share of
            all votes comes from functions that vote for a single class only.
        progress: show a progress bar over EM iterations.

    ``fit(annotations, gold=...)`` fixes the true class of the gold items in every E-step
    (the block's item log-prior; a gold item is reported at its class even when it is not
    among its most-voted classes).

    Attributes:
        regime_: ``"labeling_functions"`` or ``"crowd"``.
        abstain_: the resolved ``abstain`` setting.
        anchor_: the resolved ``anchor`` setting.
        abstain_weight_: the resolved ``abstain_weight``.
        response_matrices_: (functions, classes, classes + 1), last column = abstain.
        class_balance_: (classes,) mean un-anchored posterior of the fitted items (a fit
            through the generic partitioned protocol: of the posteriors the last M-step used).
        abstain_modelled_: (functions,) bool.
        n_iter_: EM iterations run.
        log_likelihood_: mean log evidence per item, per iteration.
        one_class_vote_share_: the share of all votes cast by functions that vote for a
            single class only (the regime is ``"labeling_functions"`` from
            ``one_class_share`` on).
        votes_per_function_: (functions,) each function's number of votes.
        fixed_prior_: (classes,) the class prior held fixed, or None when it is learned.
        n_items_: the number of items.
        column_votes_: (functions · classes,) the votes per (function, class), function
            major.
        posteriors_: (items, classes).
        confusion_matrices_: (functions, classes, classes), ``p(vote l | true k, voted)``.
        class_priors_: (classes,) prior used in the E-step.
    """

    accepts_gold = True

    def __init__(self, abstain: str = "auto", anchor: str = "auto",
                 abstain_weight: Union[str, float] = "auto",
                 class_prior: Union[str, Any] = "auto", max_iter: int = 100, tol: float = 1e-5,
                 smoothing: float = 0.01, one_class_share: float = 0.5,
                 progress: bool = False) -> None:
        self.abstain = abstain
        self.anchor = anchor
        self.abstain_weight = abstain_weight
        self.class_prior = class_prior
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.one_class_share = one_class_share
        self.progress = progress

    # ------------------------------------------------------------------ settings
    def resolve_settings(self, votes: np.ndarray) -> None:
        """Pick the regime from the (functions, K) vote counts and resolve every ``"auto"``
        setting (sets ``regime_``, ``abstain_``, ``anchor_``, ``abstain_weight_``,
        ``abstain_modelled_``, ``votes_per_function_``); the first step of a fit, in memory
        or partitioned (votes summed over the partitions)."""
        if self.abstain not in _ABSTAIN:
            raise ValueError(f"abstain must be one of {_ABSTAIN}, got {self.abstain!r}")
        if self.anchor not in _ANCHOR:
            raise ValueError(f"anchor must be one of {_ANCHOR}, got {self.anchor!r}")
        if not self.smoothing > 0:
            raise ValueError(f"smoothing must be > 0, got {self.smoothing!r}")
        # NaN would pick the crowd regime for any votes, silently
        check_number(self.one_class_share, f"{type(self).__name__} one_class_share", high=1.0)
        n_votes = votes.sum(axis=1)
        share = one_class_share(votes)
        self.one_class_vote_share_ = share
        lf = share >= self.one_class_share
        self.regime_ = "labeling_functions" if lf else "crowd"
        self.abstain_ = self.abstain if self.abstain != "auto" else ("response" if lf else "ignore")
        self.anchor_ = self.anchor if self.anchor != "auto" else ("votes" if lf else "none")
        if isinstance(self.abstain_weight, str):
            if self.abstain_weight != "auto":
                raise ValueError(f"abstain_weight must be a number in [0, 1] or 'auto', got "
                                 f"{self.abstain_weight!r}")
            self.abstain_weight_ = 0.0 if self.anchor_ == "votes" else 1.0
        else:
            w = self.abstain_weight
            if isinstance(w, bool) or not isinstance(w, Real):
                raise TypeError(f"abstain_weight must be a number in [0, 1] or 'auto', got "
                                f"{type(w).__name__} {w!r}")
            w = float(w)
            if not 0.0 <= w <= 1.0:
                raise ValueError(f"abstain_weight must be in [0, 1], got {w}")
            self.abstain_weight_ = w
        self.abstain_modelled_ = (n_votes > 0) & (self.abstain_ == "response")
        self.votes_per_function_ = n_votes

    def fixed_prior(self, k: int) -> Optional[np.ndarray]:
        """The (K,) class prior to hold fixed, or None to learn it (after
        :meth:`resolve_settings`)."""
        p = self.class_prior
        if isinstance(p, str):
            if p == "auto":
                p = "uniform" if self.anchor_ == "votes" else "learn"
            if p == "learn":
                return None
            if p == "uniform":
                return np.full(k, 1.0 / k)
            raise ValueError(f"class_prior must be 'auto', 'learn', 'uniform' or {k} "
                             f"probabilities, got {p!r}")
        return check_prior(p, k)

    # ------------------------------------------------------------------ fitting
    def fit_block(self, ann: Annotations,
                  item_log_prior: Optional[np.ndarray] = None) -> "AbstainAwareDawidSkene":
        """:func:`~crowd_keras.aggregation.em.run_em` over all of ``ann`` as one block; the
        class balance is that of the last E-step's posteriors."""
        block = Block.from_annotations(ann, item_log_prior=item_log_prior)
        run = run_em(self, [block], block.summary(ann.n_classes))
        self.finish(run.state, run.summary, ann, run.history)
        latent = run.latents[0]
        self.class_balance_ = self.unanchored_posteriors(latent).mean(axis=0)
        self.posteriors_ = self.class_posteriors(latent)
        self.item_log_prior_ = item_log_prior    # gold clamps, which the quality scores add too
        return self

    # the EM-step protocol (crowd_keras.aggregation.em)
    def init_state(self, summary: Summary) -> "AbstainAwareDawidSkene":
        if summary.n_annotations == 0:
            raise CrowdDataError("no votes to fit: every entry abstains")
        self.resolve_settings(summary.votes)
        super().init_state(summary)
        self.fixed_prior_ = self.fixed_prior(summary.n_classes)
        self.n_items_ = summary.n_items
        self.column_votes_ = summary.votes.reshape(-1)
        return self

    def objective_scale(self, summary: Summary) -> float:
        return float(max(summary.n_items, 1))

    def initial_posteriors(self, block: Block) -> np.ndarray:
        """The vote shares (items without votes: uniform over the classes some function
        votes), then the block's item log-prior."""
        post = normalize_rows(block.label_counts(self.n_classes_))
        voted = self.column_votes_.reshape(-1, self.n_classes_).sum(axis=0) > 0
        if not voted.all():
            # a class no function votes starts without mass: seeded by the rows without votes,
            # the abstain model made it "the class of few votes" and gave it rows where
            # functions voted only other classes (0.93 where one function voted class 0)
            silent = ~block.label_counts(self.n_classes_).any(axis=1)
            post[silent] = voted / voted.sum()
        if block.item_log_prior is not None:
            with np.errstate(divide="ignore"):
                post = normalize_rows(np.exp(np.log(post + 1e-300) + block.item_log_prior))
        return post

    def initial_statistics(self, block: Block) -> tuple:
        post = self.initial_posteriors(block)
        q = np.ascontiguousarray(post[:, 1]) if self.n_classes_ == 2 else post
        return self._statistics(block, q)

    def sufficient_statistics(self, block: Block, latent: AbstainLatent) -> tuple:
        """Two classes: ``(Xᵀ p, Σ_i p_i)`` of ``p = q_·1``; else the expected votes
        (functions, K true, K label) and the class mass ``Σ_i q_i`` (K,)."""
        return self._statistics(block, latent.q)

    def class_mass(self, stats: tuple) -> np.ndarray:
        """(K,) ``Σ_i q_i`` of the statistics (summed over blocks)."""
        if np.ndim(stats[1]) == 0:                         # two classes: (Xᵀ p, Σ_i p_i)
            return np.array([self.n_items_ - stats[1], stats[1]])
        return np.asarray(stats[1])

    @staticmethod
    def _statistics(block: Block, q: np.ndarray) -> tuple:
        if q.ndim == 1:                                   # two classes: p(class 1)
            return np.asarray(block.XT @ q), float(q.sum())
        return class_vote_counts(block.XT, q, block.X.shape[1] // q.shape[1]), \
            np.ones(len(q)) @ q

    def m_step(self, stats: tuple) -> AbstainState:
        k, n = self.n_classes_, self.n_items_
        if k == 2:
            one, n1 = stats
            m = len(one) // 2
            one = one.reshape(m, 2)                           # [a, label] given class 1
            votes = np.empty((m, 2, 2))
            votes[:, 1] = one
            np.subtract(self.column_votes_.reshape(m, 2), one, out=votes[:, 0])
            n_true = np.array([n - n1, n1])
        else:
            votes, n_true = stats
        log_prior, log_resp = abstain_m_step(votes, n_true, n, self.votes_per_function_,
                                             self.abstain_modelled_, self.smoothing,
                                             self.fixed_prior_)
        return self._state(log_prior, log_resp, n_true / max(n, 1))

    def _state(self, log_prior: np.ndarray, log_resp: np.ndarray,
               balance: np.ndarray) -> AbstainState:
        W, const = abstain_weights(log_resp, log_prior, self.abstain_weight_)
        return AbstainState(log_prior, log_resp, W, const, balance)

    def e_step(self, block: Block, state: AbstainState) -> tuple[AbstainLatent, float]:
        k = state.log_prior.shape[0]
        if k == 2 and block.item_log_prior is None:
            votes = np.bincount(block.X.indices, minlength=block.X.shape[1])
            p, d, evidence = two_class_e_step(block.X, state.W, state.const, votes)
            return AbstainLatent(p, d, None, block, state), evidence
        logits = sparse_dot(block.X, state.W)
        logits += state.const
        block.with_log_prior(logits)
        post, log_norm = softmax_rows(logits, out=logits)
        q = np.ascontiguousarray(post[:, 1]) if k == 2 else post
        return AbstainLatent(q, None, post, block, state), float(log_norm.sum())

    def unanchored_posteriors(self, latent: AbstainLatent) -> np.ndarray:
        """(I, K) posteriors of the E-step (EM's ``q``)."""
        return latent.full if latent.full is not None else two_class_posteriors(latent.q,
                                                                                latent.d)

    def class_posteriors(self, latent: AbstainLatent) -> np.ndarray:
        """The reported (I, K) posteriors: anchored to the votes when ``anchor_ == "votes"``."""
        if self.anchor_ != "votes":
            return self.unanchored_posteriors(latent)
        block, state = latent.block, latent.state
        logits = block.with_log_prior(self._logits(block.X, state.log_resp, state.log_prior))
        return self.anchored_posteriors(logits, block.label_counts(state.log_prior.shape[0]))

    def finish(self, state: AbstainState, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "AbstainAwareDawidSkene":
        self.set_fitted(template, state.log_prior, state.log_resp, state.balance, history)
        return self

    def set_fitted(self, ann: Annotations, log_prior: np.ndarray, log_resp: np.ndarray,
                   class_balance: np.ndarray, history: Sequence[float]) -> None:
        """Set the fitted parameters from the last M-step: ``log_prior`` (K,), ``log_resp``
        (functions, K, K + 1), ``class_balance`` (K,) and the log-likelihood per iteration."""
        k = log_prior.shape[0]
        self.annotations_ = ann
        self.response_matrices_ = np.exp(log_resp)
        self.class_priors_ = np.exp(log_prior)
        self.class_balance_ = class_balance
        votes = self.response_matrices_[:, :, :k]
        self.confusion_matrices_ = normalize_rows(votes)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)

    def _logits(self, X: sp.csr_matrix, log_resp: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
        """Items × classes unnormalized log posteriors (E-step)."""
        return abstain_logits(X, log_resp, log_prior, self.abstain_weight_)

    @staticmethod
    def anchored_posteriors(logits: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Posteriors anchored to the votes: of the (items, K) ``logits`` keep only each item's
        most-voted classes in the (items, K) label ``counts``, then normalize (log space). An
        item whose most-voted classes all have zero probability (a gold item of another
        class) keeps its un-anchored posterior."""
        kept = np.where(top_classes(counts), logits, -np.inf)
        dead = ~np.isfinite(kept).any(axis=1)
        if dead.any():
            kept[dead] = logits[dead]
        return softmax_rows(kept)[0]

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        state = self._state(np.log(np.maximum(self.class_priors_, 1e-300)),
                            np.log(self.response_matrices_), self.class_balance_)
        return self.class_posteriors(self.e_step(Block.from_annotations(ann), state)[0])

    # ------------------------------------------------------------------ reporting
    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per function: id, votes, coverage and estimated accuracy when it votes.

        ``accuracy_a = mean over the votes (i, l) of a of posteriors_[i, l]``: the expected
        share of its votes that match the inferred label (NaN for a function that never
        votes), which tracks the accuracy measured against gold labels more closely than one
        read off the response matrices.
        """
        self._check_fitted()
        report = partitioned_report(self)
        if report is not None:
            return report
        return self.annotator_quality_under(self.posteriors_)

    def annotator_quality_under(self, posteriors: np.ndarray) -> pd.DataFrame:
        """:attr:`annotator_quality_` with ``posteriors`` (items, K) as the inferred labels: a
        crowd model that answers through this model reports its gold items at their class
        (:meth:`~crowd_keras.aggregation.labeling_functions.LabelingFunctionFallback.hold_gold`),
        and its functions' accuracy is read off those, as its other quality scores are."""
        self._check_fitted()
        ann = self.annotations_
        m = ann.n_annotators
        n = ann.annotations_per_annotator()
        agree = np.bincount(ann.annotators, weights=posteriors[ann.items, ann.labels],
                            minlength=m)
        acc = np.where(n > 0, agree / np.maximum(n, 1), np.nan)
        return pd.DataFrame({"annotator": ann.annotator_ids, "n_annotations": n,
                             "coverage": n / max(ann.n_items, 1), "accuracy": acc})
