"""Dawid-Skene with abstention as a response, for labeling functions (WRENCH's DS) and crowds.

A labeling function that only ever votes "spam" tells nothing through its votes alone: a
Dawid-Skene model that drops abstentions sees a confusion matrix whose every row says
"spam" and learns nothing about it (crowd-kit's DS: 0.53 on WRENCH youtube). Treating
"abstain" as one more response (each function gets a true class × (classes + abstain)
matrix, as WRENCH's Dawid-Skene does) makes such a function informative: it votes "spam"
far more often when the item is spam.

Two regimes, told apart from the data (``regime_``):

- **labeling functions** (most votes are cast by functions that only ever vote one class):
  abstention is a response in the M-step; the E-step scores the votes cast (as Snorkel's
  ``LabelModel.predict_proba`` does, ``abstain_weight=0``) under a uniform class prior, and
  the reported class is the one with the most votes, the model deciding among tied classes
  (``anchor="votes"``). Functions written by one person from overlapping keywords violate
  the conditional independence every such model assumes: on WRENCH trec even the
  Dawid-Skene parameters estimated from the gold labels score 0.50-0.53 against 0.61 for
  voting, so counting votes first is what keeps the model at least as good as voting there.
- **crowd** (annotators answer any class): annotators skip items for reasons unrelated to
  the label, so abstention is not modelled (``abstain="ignore"``, plain Dawid-Skene with a
  learned class prior); the posterior decides (product: 0.94 against 0.90 for voting).
"""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import class_vote_counts, normalize_rows, softmax_rows, top_classes
from ..progress import Convergence
from .base import LabelModel, as_annotations, check_prior
from .regime import one_class_share

__all__ = ["AbstainAwareDawidSkene", "abstain_m_step", "abstain_weights", "abstain_logits"]

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


class _Posteriors:
    """The EM's item posteriors and the two products it takes with them.

    General K: the (items, K) posteriors; ``Xᵀ q`` (expected votes) and the softmax of
    ``X W + const``. Two classes (most labeling-function sets) carry only ``p = q_·1``
    (items,): ``Xᵀ q`` is ``Xᵀ p`` and the column vote counts minus it, the E-step is one
    product with ``W₁ − W₀`` and ``p = σ(d)``, ``d = l₁ − l₀``, and the evidence
    ``Σ_i log(e^l₀ + e^l₁) = Σ_i l₁ + Σ_i log(1 + e^−d)`` with ``Σ_i l₁ = votes · W₁ + I const₁``.
    The same numbers as the general path up to rounding (≤ 1e-12 on the fitted model).
    """

    def __init__(self, X: sp.csr_matrix, column_votes: np.ndarray, k: int,
                 post: Optional[np.ndarray] = None) -> None:
        self.X, self.XT = X, X.T   # Xᵀ as a CSC view: its products stream through the items
        self.column_votes = column_votes
        self.binary = k == 2
        self.q = np.ascontiguousarray(post[:, 1]) if self.binary and post is not None else post
        self.d = None

    def votes(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Expected votes (m, K true, K label) and expected class sizes (K,)."""
        if not self.binary:
            return class_vote_counts(self.XT, self.q, m), np.ones(len(self.q)) @ self.q
        one = np.asarray(self.XT @ self.q).reshape(m, 2)          # [a, label] given class 1
        votes = np.empty((m, 2, 2))
        votes[:, 1] = one
        np.subtract(self.column_votes.reshape(m, 2), one, out=votes[:, 0])
        n1 = float(self.q.sum())
        return votes, np.array([len(self.q) - n1, n1])

    def e_step(self, W: np.ndarray, const: np.ndarray) -> float:
        """Replace the posteriors by those of ``X @ W + const``; returns the total evidence."""
        if not self.binary:
            logits = np.asarray(self.X @ W)
            logits += const
            self.q, log_norm = softmax_rows(logits, out=logits)
            return float(log_norm.sum())
        d = np.asarray(self.X @ (W[:, 1] - W[:, 0]))
        d += const[1] - const[0]
        with np.errstate(over="ignore"):
            den = np.exp(-d)                                 # e^(l₀ − l₁)
        den += 1.0
        tail = float(np.log(den).sum())                      # Σ_i log(1 + e^(l₀ − l₁))
        if not np.isfinite(tail):                            # some l₀ − l₁ > 709
            tail = float(np.maximum(-d, 0.0).sum()) + float(np.log1p(np.exp(-np.abs(d))).sum())
        self.q = np.reciprocal(den, out=den)                 # σ(d)
        self.d = d
        return float(self.column_votes @ W[:, 1]) + len(d) * float(const[1]) + tail

    def full(self) -> np.ndarray:
        """(items, K) posteriors."""
        if not self.binary:
            return self.q
        post = np.empty((len(self.q), 2))
        post[:, 1] = self.q
        post[:, 0] = _sigmoid(-self.d) if self.d is not None else 1.0 - self.q
        return post


def _sigmoid(d: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):   # exp(−d) = inf gives exactly 0
        out = np.exp(-d)
    out += 1.0
    return np.reciprocal(out, out=out)


class AbstainAwareDawidSkene(LabelModel):
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
      items, functions or votes.
    - Anchor (``anchor="votes"``): the reported posterior is zero outside the classes with
      the most votes and proportional to ``q`` among them; items without any vote keep ``q``.
      EM itself runs on the un-anchored ``q``; the anchor applies to what is reported.

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
        max_iter: maximum EM iterations. tol: stop when the mean log evidence per item
            changes by less than this. smoothing: Dirichlet pseudo-count (> 0).
        one_class_share: the labeling-function regime applies when at least this share of
            all votes comes from functions that vote for a single class only.
        progress: show a progress bar over EM iterations.

    Attributes:
        regime_: ``"labeling_functions"`` or ``"crowd"``.
        abstain_, anchor_, abstain_weight_: the resolved settings.
        response_matrices_: (functions, classes, classes + 1), last column = abstain.
        confusion_matrices_: (functions, classes, classes), ``p(vote l | true k, voted)``.
        class_priors_: (classes,) prior used in the E-step.
        class_balance_: (classes,) mean un-anchored posterior of the fitted items.
        posteriors_: (items, classes).
        abstain_modelled_: (functions,) bool.
        n_iter_: EM iterations run.
        log_likelihood_: mean log evidence per item, per iteration.
    """

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
        ``abstain_modelled_``, ``votes_per_function_``); the first step of :meth:`fit` and of
        a partitioned fit, which passes votes summed over its partitions."""
        if self.abstain not in _ABSTAIN:
            raise ValueError(f"abstain must be one of {_ABSTAIN}, got {self.abstain!r}")
        if self.anchor not in _ANCHOR:
            raise ValueError(f"anchor must be one of {_ANCHOR}, got {self.anchor!r}")
        if not self.smoothing > 0:
            raise ValueError(f"smoothing must be > 0, got {self.smoothing!r}")
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
            w = float(self.abstain_weight)
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
    def fit(self, annotations: Any, **kwargs: Any) -> "AbstainAwareDawidSkene":
        """Fit by EM. ``annotations``: `Annotations`, a label matrix (-1 = abstain) or a frame."""
        ann = as_annotations(annotations, **kwargs)
        if ann.n_annotations == 0:
            raise CrowdDataError("no votes to fit: every entry abstains")
        self.resolve_settings(ann.annotator_label_counts())
        k = ann.n_classes
        fixed_prior = self.fixed_prior(k)
        X = ann.vote_incidence()
        counts = ann.label_counts()
        post = _Posteriors(X, ann.annotator_label_counts().reshape(-1), k, normalize_rows(counts))
        loop = Convergence(self.max_iter, self.tol, "Abstain-aware Dawid-Skene EM", self.progress)
        for _ in loop:
            log_prior, log_resp = self._m_step(*post.votes(ann.n_annotators), ann.n_items,
                                               fixed_prior)
            evidence = post.e_step(*self._weights(log_resp, log_prior))
            loop.record(evidence / max(ann.n_items, 1))
        history = loop.history
        post = post.full()
        self.set_fitted(ann, log_prior, log_resp, post.mean(axis=0), history)
        if self.anchor_ == "votes":
            post = self.anchored_posteriors(self._logits(X, log_resp, log_prior), counts)
        self.posteriors_ = post
        return self

    def set_fitted(self, ann: Annotations, log_prior: np.ndarray, log_resp: np.ndarray,
                   class_balance: np.ndarray, history: list) -> None:
        """Set the fitted parameters from the last M-step: ``log_prior`` (K,), ``log_resp``
        (functions, K, K + 1), ``class_balance`` (K,) and the log-likelihood per iteration.
        Public so that a partitioned fit (:mod:`crowd_keras.distributed`) finishes the model
        as :meth:`fit` does."""
        k = log_prior.shape[0]
        self.annotations_ = ann
        self.response_matrices_ = np.exp(log_resp)
        self.class_priors_ = np.exp(log_prior)
        self.class_balance_ = class_balance
        votes = self.response_matrices_[:, :, :k]
        self.confusion_matrices_ = normalize_rows(votes)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)

    def _m_step(self, votes: np.ndarray, n_true: np.ndarray, n_items: int,
                fixed_prior: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``votes`` (m, K true, K label): expected votes; ``n_true`` (K,): class sizes."""
        return abstain_m_step(votes, n_true, n_items, self.votes_per_function_,
                              self.abstain_modelled_, self.smoothing, fixed_prior)

    def _weights(self, log_resp: np.ndarray, log_prior: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """E-step weights: logits = ``X @ W + const``, ``W`` (functions × classes, classes)."""
        return abstain_weights(log_resp, log_prior, self.abstain_weight_)

    def _logits(self, X: sp.csr_matrix, log_resp: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
        """Items × classes unnormalized log posteriors (E-step)."""
        return abstain_logits(X, log_resp, log_prior, self.abstain_weight_)

    @staticmethod
    def anchored_posteriors(logits: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Posteriors anchored to the votes: of the (items, K) ``logits`` keep only each item's
        most-voted classes in the (items, K) label ``counts``, then normalize (log space)."""
        return softmax_rows(np.where(top_classes(counts), logits, -np.inf))[0]

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        log_resp = np.log(self.response_matrices_)
        log_prior = np.log(np.maximum(self.class_priors_, 1e-300))
        if self.anchor_ == "votes":
            return self.anchored_posteriors(
                self._logits(ann.vote_incidence(), log_resp, log_prior), ann.label_counts())
        # the E-step of fit (the same arithmetic: the same numbers on the training votes)
        post = _Posteriors(ann.vote_incidence(), ann.annotator_label_counts().reshape(-1),
                           ann.n_classes)
        post.e_step(*self._weights(log_resp, log_prior))
        return post.full()

    # ------------------------------------------------------------------ reporting
    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per function: id, votes, coverage and estimated accuracy when it votes.

        ``accuracy_a = mean over the votes (i, l) of a of posteriors_[i, l]``: the expected
        share of its votes that match the inferred label (NaN for a function that never
        votes). On the WRENCH and truth-inference sets this tracks the accuracy measured
        against the gold labels more closely than one read off the response matrices.
        """
        self._check_fitted()
        ann = self.annotations_
        m = ann.n_annotators
        n = ann.annotations_per_annotator()
        agree = np.bincount(ann.annotators, weights=self.posteriors_[ann.items, ann.labels],
                            minlength=m)
        acc = np.where(n > 0, agree / np.maximum(n, 1), np.nan)
        return pd.DataFrame({"annotator": ann.annotator_ids, "n_annotations": n,
                             "coverage": n / max(ann.n_items, 1), "accuracy": acc})
