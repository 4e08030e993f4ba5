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

__all__ = ["DawidSkene"]


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
                raise ValueError(f"init posteriors must have shape {(ann.n_items, k)}, got {post.shape}")
        history = []
        ll_prev = -np.inf
        bar = progress_bar(range(self.max_iter), desc="Dawid-Skene EM", disable=not self.progress)
        for _ in bar:
            prior, log_pi = self._m_step(XT, post, ann, fixed_prior)
            post, ll = self._e_step(X, log_pi, prior)
            ll /= max(ann.n_annotations, 1)
            history.append(ll)
            if self.progress:
                bar.set_postfix(loglik=f"{ll:.6f}")
            if abs(ll - ll_prev) < self.tol:
                break
            ll_prev = ll
        bar.close()
        self.annotations_ = ann
        self.posteriors_ = post
        self.class_priors_ = prior
        self.confusion_matrices_ = np.exp(log_pi)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        return self

    def _m_step(self, XT: sp.csr_matrix, post: np.ndarray, ann: Annotations,
                fixed_prior: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        k = ann.n_classes
        # counts[a, l, t]: expected number of times annotator a said l when the truth was t.
        counts = (XT @ post).reshape(ann.n_annotators, k, k).transpose(0, 2, 1)
        counts = counts + self.smoothing
        log_pi = np.log(counts) - np.log(counts.sum(axis=2, keepdims=True))
        if fixed_prior is not None:
            prior = fixed_prior
        else:
            prior = post.sum(axis=0) + self.smoothing
            prior = prior / prior.sum()
        return prior, log_pi

    @staticmethod
    def _e_step(X: sp.csr_matrix, log_pi: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, float]:
        k = prior.shape[0]
        # W[(a, l), t] = log π_a[t, l]
        W = log_pi.transpose(0, 2, 1).reshape(-1, k)
        logits = X @ W
        logits += np.log(np.maximum(prior, 1e-300))[None, :]
        post, log_norm = softmax_rows(logits, out=logits)
        return post, float(log_norm.sum())

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        post, _ = self._e_step(ann.vote_incidence(), np.log(self.confusion_matrices_),
                               self.class_priors_)
        return post
