"""Dawid-Skene: one confusion matrix per annotator, fitted by EM (Dawid & Skene, 1979)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..annotations import Annotations
from ..numerics import softmax_rows, soft_vote
from ..progress import progress_bar
from .base import LabelModel, check_prior
from .labeling_functions import LabelingFunctionFallback

__all__ = ["DawidSkene", "sufficient_statistics", "m_step", "e_step"]


# The EM steps as functions of sufficient statistics: the M-step needs only sums over items,
# so a partitioned fit (crowd_keras.distributed) adds up the statistics of its partitions and
# calls the same m_step: the same model, however the items are split.
def sufficient_statistics(XT: sp.csr_matrix, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected counts of the M-step from (a block of) items.

    Args:
        XT: (A·K, I) transposed vote incidence (``Annotations.vote_incidence().T``).
        post: (I, K) item posteriors.

    Returns:
        ``(counts, class_mass)``: counts (A·K, K), ``counts[a·K + l, t]`` = expected number of
        times annotator a said l when the truth was t; class_mass (K,) = Σ_i post_i.
    """
    return np.asarray(XT @ post), post.sum(axis=0)


def m_step(counts: np.ndarray, class_mass: np.ndarray, smoothing: float,
           fixed_prior: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """Class prior (K,) and log confusion matrices (A, K, K) from the sufficient statistics.

    Dawid & Skene (1979) Eq. 2.3-2.4 with a Dirichlet pseudo-count ``smoothing`` on every
    cell and on the prior: ``π_a[t, l] ∝ counts[a·K + l, t] + s``, ``ρ_t ∝ mass_t + s``.
    """
    k = class_mass.shape[0]
    conf = counts.reshape(-1, k, k).transpose(0, 2, 1) + smoothing   # (A, true t, label l)
    log_pi = np.log(conf) - np.log(conf.sum(axis=2, keepdims=True))
    if fixed_prior is not None:
        return fixed_prior, log_pi
    prior = class_mass + smoothing
    return prior / prior.sum(), log_pi


def e_step(X: sp.csr_matrix, log_pi: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, float]:
    """Item posteriors (I, K) and the summed log-likelihood of (a block of) items.

    ``log p(z_i = t | labels) ∝ log ρ_t + Σ_{(i,a,l)} log π_a[t, l]``: one sparse product
    with the (I, A·K) vote incidence ``X``.
    """
    k = prior.shape[0]
    logits = X @ log_pi.transpose(0, 2, 1).reshape(-1, k)         # W[(a, l), t] = log π_a[t, l]
    logits += np.log(np.maximum(prior, 1e-300))[None, :]
    post, log_norm = softmax_rows(logits, out=logits)
    return post, float(log_norm.sum())


class DawidSkene(LabelingFunctionFallback, LabelModel):
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
        progress: show a progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    Attributes:
        posteriors_: (items, classes); confusion_matrices_: (annotators, classes, classes),
        rows = true class; class_priors_: (classes,); n_iter_; log_likelihood_ (history).
    """

    def __init__(self, max_iter: int = 100, tol: float = 1e-5, smoothing: float = 0.01,
                 init: Any = "mv", class_prior: Optional[Any] = None,
                 progress: bool = False, labeling_functions: str = "auto") -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.init = init
        self.class_prior = class_prior
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _fit_crowd(self, ann: Annotations) -> "DawidSkene":
        k = ann.n_classes
        fixed_prior = check_prior(self.class_prior, k)
        X = ann.vote_incidence()
        XT = X.T.tocsr()
        if isinstance(self.init, str):
            if self.init != "mv":
                raise ValueError(f"init must be 'mv' or an array, got {self.init!r}")
            post = soft_vote(ann.label_counts())
        else:
            post = np.asarray(self.init, dtype=np.float64)
            if post.shape != (ann.n_items, k):
                raise ValueError(f"init posteriors must have shape {(ann.n_items, k)}, got "
                                 f"{post.shape}")
        history = []
        ll_prev = -np.inf
        bar = progress_bar(range(self.max_iter), desc="Dawid-Skene EM", disable=not self.progress)
        for _ in bar:
            prior, log_pi = m_step(*sufficient_statistics(XT, post), self.smoothing, fixed_prior)
            post, ll = e_step(X, log_pi, prior)
            ll /= max(ann.n_annotations, 1)
            history.append(ll)
            if self.progress:
                bar.set_postfix(loglik=f"{ll:.6f}")
            if abs(ll - ll_prev) < self.tol:
                break
            ll_prev = ll
        bar.close()
        self._set_fitted(ann, post, prior, log_pi, history)
        return self

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
        return e_step(ann.vote_incidence(), np.log(self.confusion_matrices_),
                      self.class_priors_)[0]
