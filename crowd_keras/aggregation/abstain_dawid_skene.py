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
from ..numerics import normalize_rows, softmax_rows, top_classes
from ..progress import progress_bar
from .base import LabelModel, as_annotations, check_prior
from .regime import one_class_share

__all__ = ["AbstainAwareDawidSkene", "abstain_m_step", "abstain_logits"]

_ABSTAIN = ("auto", "response", "ignore")
_ANCHOR = ("auto", "votes", "none")


# The EM steps as functions of sums over items (the statistics of dawid_skene's
# sufficient_statistics), so that a partitioned fit (crowd_keras.distributed) runs the same steps.
def abstain_m_step(counts: np.ndarray, class_mass: np.ndarray, n_items: int,
                   votes_per_function: np.ndarray, modelled: np.ndarray, smoothing: float,
                   fixed_prior: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Log class prior (K,) and log response matrices (functions, K, K + 1), abstain last.

    Args:
        counts: (functions·K, K) ``XT @ post``: ``counts[a·K + l, t]`` = expected number of
            votes l of function a when the truth was t. class_mass: (K,) ``Σ_i post_i``.
        n_items: number of items (rows of ``L``, voted or not).
        votes_per_function: (functions,) votes cast. modelled: (functions,) bool, abstention
            modelled per class. smoothing: the pseudo-count. fixed_prior: the prior to hold.
    """
    s = smoothing
    m, k = modelled.shape[0], class_mass.shape[0]
    # resp[a, t, l]: expected number of times function a gave response l (last: abstain)
    # when the truth was t, plus the pseudo-count
    votes = counts.reshape(m, k, k).transpose(0, 2, 1)
    n_true = class_mass
    resp = np.empty((m, k, k + 1))
    resp[:, :, :k] = votes + s
    resp[:, :, k] = np.maximum(n_true[None, :] - votes.sum(axis=2), 0.0) + s
    resp = normalize_rows(resp)
    if not modelled.all():
        # not modelled: p(abstain) is one shared rate, so it cancels from the posterior
        rest = ~modelled
        rate = (n_items - votes_per_function[rest] + s) / (n_items + 2 * s)
        cond = votes[rest] + s
        cond = normalize_rows(cond)
        resp[rest, :, :k] = cond * (1.0 - rate)[:, None, None]
        resp[rest, :, k] = rate[:, None]
    if fixed_prior is not None:
        prior = fixed_prior
    else:
        prior = (n_true + s) / (n_true + s).sum()
    return np.log(np.maximum(prior, 1e-300)), np.log(resp)


def abstain_logits(X: sp.csr_matrix, log_resp: np.ndarray, log_prior: np.ndarray,
                   abstain_weight: float) -> np.ndarray:
    """Items × classes unnormalized log posteriors (E-step) of (a block of) items."""
    k = log_prior.shape[0]
    w = abstain_weight
    log_abstain = log_resp[:, :, k]  # (functions, classes)
    W = (log_resp[:, :, :k] - w * log_abstain[:, :, None]).transpose(0, 2, 1).reshape(-1, k)
    return np.asarray(X @ W) + (w * log_abstain.sum(axis=0) + log_prior)[None, :]


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
        regime_: ``"labeling_functions"`` or ``"crowd"``; abstain_, anchor_,
        abstain_weight_: the resolved settings. response_matrices_: (functions, classes,
        classes + 1), last column = abstain. confusion_matrices_: (functions, classes,
        classes), ``p(vote l | true k, voted)``. class_priors_: (classes,) prior used in
        the E-step. class_balance_: (classes,) mean un-anchored posterior of the fitted items.
        posteriors_: (items, classes). abstain_modelled_: (functions,) bool. n_iter_,
        log_likelihood_ (mean log evidence per item, per iteration).
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
    def _resolve(self, votes: np.ndarray) -> None:
        """Pick the regime from the (functions, K) vote counts and resolve every ``"auto"``
        setting."""
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
        self._votes_per_function = n_votes

    def _fixed_prior(self, k: int) -> Optional[np.ndarray]:
        """The class prior to hold fixed, or None to learn it."""
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
        self._resolve(ann.annotator_label_counts())
        k = ann.n_classes
        fixed_prior = self._fixed_prior(k)
        X = ann.vote_incidence()
        XT = X.T.tocsr()
        counts = ann.label_counts()
        post = normalize_rows(counts)
        history: list = []
        prev = -np.inf
        bar = progress_bar(range(self.max_iter), desc="Abstain-aware Dawid-Skene EM",
                           disable=not self.progress)
        for _ in bar:
            log_prior, log_resp = self._m_step(XT, post, ann.n_items, fixed_prior)
            logits = self._logits(X, log_resp, log_prior)
            post, log_norm = softmax_rows(logits)
            evidence = float(log_norm.sum())
            history.append(evidence / max(ann.n_items, 1))
            if self.progress:
                bar.set_postfix(evidence=f"{history[-1]:.6f}")
            if abs(history[-1] - prev) < self.tol:
                break
            prev = history[-1]
        bar.close()
        self._set_fitted(ann, log_prior, log_resp, post.mean(axis=0), history)
        self.posteriors_ = self._report(logits, counts) if self.anchor_ == "votes" else post
        return self

    def _set_fitted(self, ann: Annotations, log_prior: np.ndarray, log_resp: np.ndarray,
                    class_balance: np.ndarray, history: list) -> None:
        """The fitted parameters from the last M-step (also a partitioned fit's)."""
        k = log_prior.shape[0]
        self.annotations_ = ann
        self.response_matrices_ = np.exp(log_resp)
        self.class_priors_ = np.exp(log_prior)
        self.class_balance_ = class_balance
        votes = self.response_matrices_[:, :, :k]
        self.confusion_matrices_ = normalize_rows(votes)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)

    def _m_step(self, XT: sp.csr_matrix, post: np.ndarray, n_items: int,
                fixed_prior: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        n_true = np.ones(post.shape[0]) @ post  # a column sum of (items, k): BLAS, not strided
        return abstain_m_step(np.asarray(XT @ post), n_true, n_items, self._votes_per_function,
                              self.abstain_modelled_, self.smoothing, fixed_prior)

    def _logits(self, X: sp.csr_matrix, log_resp: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
        """Items × classes unnormalized log posteriors (E-step)."""
        return abstain_logits(X, log_resp, log_prior, self.abstain_weight_)

    @staticmethod
    def _report(logits: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Anchor to the votes: keep only the most-voted classes, then normalize (log space)."""
        return softmax_rows(np.where(top_classes(counts), logits, -np.inf))[0]

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        logits = self._logits(ann.vote_incidence(), np.log(self.response_matrices_),
                              np.log(np.maximum(self.class_priors_, 1e-300)))
        if self.anchor_ == "votes":
            return self._report(logits, ann.label_counts())
        return softmax_rows(logits)[0]

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
