"""CoNAL without features: common + individual confusion fitted by EM (Chu et al. 2021, App. B).

Each annotation (i, r) comes from the common confusion matrix π_g with probability ω and
from annotator r's own matrix π_r otherwise:

    p(y_ri | z_i = c) = ω_r π_g[c, y_ri] + (1 − ω_r) π_r[c, y_ri]

Appendix B's EM has one free ω per annotation, which, with no instance features to tie
them together, lets every annotation pick whichever matrix explains it best (ω → 0 or 1).
Without features we therefore tie ω per annotator (ω_r, a Beta-smoothed proportion); the
feature-aware gate ω_ri = σ(û_r·v̂_i) is the Keras layer
:class:`crowd_keras.conal.layers.CommonNoiseAdaptation`. The E- and M-steps are the appendix's
closed forms (q(z_i), q(s_ri) and the Lagrange solutions for π_g, π_r, ω and ρ), written as
sparse products over the annotations with no Python loop over annotations or annotators.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..aggregation.base import LabelModel
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..numerics import normalize_rows, pair_index, softmax_rows, soft_vote, summing_matrix
from ..progress import progress_bar

__all__ = ["CommonNoiseModel"]


class CommonNoiseModel(LabelingFunctionFallback, LabelModel):
    """Feature-free CoNAL label model (common + individual confusion, EM).

    Args:
        max_iter, tol: EM stops when the mean log-likelihood per annotation gains < tol.
        smoothing: Dirichlet pseudo-count on every confusion cell and on the class prior.
        omega_prior: Beta pseudo-counts ``(a, b)`` on each annotator's ω (default (1, 1)).
        init_omega: starting ω for every annotator.
        progress: show a progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    Attributes:
        posteriors_ (items, K); common_confusion_ (K, K); individual_confusions_ (A, K, K);
        omega_ (A,) share of each annotator's labels explained by the common matrix;
        confusion_matrices_ (A, K, K): each annotator's effective matrix
        ω_r π_g + (1 − ω_r) π_r; class_priors_ (K,); log_likelihood_; n_iter_.
    """

    def __init__(self, max_iter: int = 100, tol: float = 1e-5, smoothing: float = 0.01,
                 omega_prior: tuple = (1.0, 1.0), init_omega: float = 0.3,
                 progress: bool = False, labeling_functions: str = "auto") -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.omega_prior = omega_prior
        self.init_omega = init_omega
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _fit_labeling_functions(self, ann: Annotations) -> bool:
        if not super()._fit_labeling_functions(ann):
            return False
        # one common matrix cannot be told apart here: report the average behaviour
        self.common_confusion_ = self.confusion_matrices_.mean(axis=0)
        self.individual_confusions_ = self.confusion_matrices_
        self.omega_ = np.zeros(ann.n_annotators)
        return True

    def _fit_crowd(self, ann: Annotations) -> "CommonNoiseModel":
        a, n = ann.n_annotators, ann.n_annotations
        S = summing_matrix(ann.items, ann.n_items)          # sums annotations into items
        R = summing_matrix(ann.annotators, a)               # ... into annotators
        post = soft_vote(ann.label_counts())
        omega = np.full(a, float(self.init_omega))
        # Start from the majority-vote counts: both matrices see every annotation.
        pi_g, pi_r, prior = self._m_confusions(ann, post[ann.items], np.full(n, 0.5), post)
        history, ll_prev = [], -np.inf
        bar = progress_bar(range(self.max_iter), desc="CoNAL EM", disable=not self.progress)
        for _ in bar:
            # E-step: per annotation and true class, the two sources' likelihoods.
            lg = pi_g[:, ann.labels].T                                    # (n, K)
            lr = pi_r[ann.annotators, :, ann.labels]                      # (n, K)
            w = omega[ann.annotators][:, None]
            mix = w * lg + (1 - w) * lr
            post, log_norm = softmax_rows(np.asarray(S @ np.log(mix)) + np.log(prior))
            ll = float(log_norm.sum()) / max(n, 1)
            q_z = post[ann.items]                                         # (n, K)
            q_s = (w * lg / mix)                                          # q(s=1 | z=c, y)
            # M-step
            joint_common = q_z * q_s
            pi_g, pi_r, prior = self._m_confusions(ann, q_z, joint_common, post)
            b_a, b_b = self.omega_prior
            omega = (np.asarray(R @ joint_common.sum(axis=1)) + b_a - 1 + 1e-9) / \
                (ann.annotations_per_annotator() + b_a + b_b - 2 + 2e-9)
            history.append(ll)
            if abs(ll - ll_prev) < self.tol:
                break
            ll_prev = ll
        bar.close()
        self.annotations_ = ann
        self.posteriors_ = post
        self.class_priors_ = prior
        self.common_confusion_ = pi_g
        self.individual_confusions_ = pi_r
        self.omega_ = omega
        self.confusion_matrices_ = omega[:, None, None] * pi_g + (1 - omega[:, None, None]) * pi_r
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        return self

    def _m_confusions(self, ann: Annotations, q_z: np.ndarray, q_common: np.ndarray,
                      post: np.ndarray) -> tuple:
        """Closed-form π_g, π_r (Lagrange solutions of App. B) and the class prior ρ."""
        k, a = ann.n_classes, ann.n_annotators
        if q_common.ndim == 1:
            q_common = q_z * q_common[:, None]
        q_indiv = q_z - q_common
        counts_g = np.asarray(summing_matrix(ann.labels, k) @ q_common).T   # (K true, K label)
        pi_g = normalize_rows(counts_g + self.smoothing)
        Yr = summing_matrix(pair_index(ann.annotators, ann.labels, k), a * k)
        counts_r = np.asarray(Yr @ q_indiv).reshape(a, k, k).transpose(0, 2, 1)
        pi_r = normalize_rows(counts_r + self.smoothing)
        prior = post.sum(axis=0) + self.smoothing
        return pi_g, pi_r, prior / prior.sum()

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        lik = self.confusion_matrices_[ann.annotators, :, ann.labels]        # (n, K)
        logp = np.asarray(summing_matrix(ann.items, ann.n_items) @ np.log(lik))
        return softmax_rows(logp + np.log(self.class_priors_))[0]
