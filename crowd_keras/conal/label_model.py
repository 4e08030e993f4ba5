"""CoNAL without features: common + individual confusion fitted by EM (Chu et al. 2021, App. B).

Each annotation (i, r) comes from the common confusion matrix π_g with probability ω and
from annotator r's own matrix π_r otherwise:

    p(y_ri | z_i = c) = ω_r π_g[c, y_ri] + (1 − ω_r) π_r[c, y_ri]

Appendix B's EM has one free ω per annotation, which, with no instance features to tie
them together, lets every annotation pick whichever matrix explains it best (ω → 0 or 1).
Without features we therefore tie ω per annotator (ω_r, a Beta-smoothed proportion); the
feature-aware gate ω_ri = σ(û_r·v̂_i) is the Keras layer
:class:`crowd_keras.conal.layers.CommonNoiseAdaptation`. The E- and M-steps are the appendix's
closed forms (q(z_i), q(s_ri) and the Lagrange solutions for π_g, π_r, ω and ρ). With ω tied per
annotator both steps depend on the annotations only through Dawid-Skene's statistics (one
sparse product each way per iteration), with no Python loop over annotations or annotators.
"""
from __future__ import annotations


import numpy as np

from ..aggregation.base import LabelModel
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..numerics import class_vote_counts, confusion_posteriors, normalize_rows, soft_vote
from ..progress import Convergence

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
        posteriors_: (items, K).
        common_confusion_: (K, K).
        individual_confusions_: (A, K, K).
        omega_: (A,) share of each annotator's labels explained by the common matrix.
        confusion_matrices_: (A, K, K), each annotator's effective matrix
            ω_r π_g + (1 − ω_r) π_r.
        class_priors_: (K,).
        log_likelihood_, n_iter_: per iteration; EM iterations run.
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
        X = ann.vote_incidence()
        XT = X.T   # a CSC view: its products stream through the items (no transposed copy)
        post = soft_vote(ann.label_counts())
        omega = np.full(a, float(self.init_omega))
        # Start from the majority-vote counts: both matrices see every annotation.
        counts = class_vote_counts(XT, post, a)                          # (A, K true, K label)
        pi_g, pi_r, prior = self._m_confusions(counts, 0.5 * counts, post)
        b_a, b_b = self.omega_prior
        per_annotator = ann.annotations_per_annotator()
        loop = Convergence(self.max_iter, self.tol, "CoNAL EM", self.progress)
        for _ in loop:
            # With ω tied per annotator, an annotation's likelihood under true class c,
            # ω_r π_g[c, y] + (1 − ω_r) π_r[c, y], depends on (r, c, y) only: the E-step is
            # Dawid-Skene's with these effective matrices, and q(s = 1 | z = c, y) too.
            common = omega[:, None, None] * pi_g[None]                     # (A, K, K)
            mix = common + (1 - omega[:, None, None]) * pi_r
            post, log_norm = confusion_posteriors(X, np.log(mix), np.log(prior))
            ll = float(log_norm.sum()) / max(n, 1)
            # M-step on the expected counts: Σ_i q(z_i = c) q(s = 1 | c, y) per (r, c, y)
            counts = class_vote_counts(XT, post, a)
            joint_common = counts * (common / mix)
            pi_g, pi_r, prior = self._m_confusions(counts, joint_common, post)
            omega = (joint_common.sum(axis=(1, 2)) + b_a - 1 + 1e-9) / \
                (per_annotator + b_a + b_b - 2 + 2e-9)
            loop.record(ll)
        history = loop.history
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

    def _m_confusions(self, counts: np.ndarray, common: np.ndarray, post: np.ndarray) -> tuple:
        """Closed-form π_g, π_r (Lagrange solutions of App. B) and the class prior ρ.

        ``counts`` (A, K, K): expected votes per (annotator, true class, label);
        ``common`` (A, K, K): the part of them attributed to the common matrix.
        """
        pi_g = normalize_rows(common.sum(axis=0) + self.smoothing)
        pi_r = normalize_rows(counts - common + self.smoothing)
        prior = post.sum(axis=0) + self.smoothing
        return pi_g, pi_r, prior / prior.sum()

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        return confusion_posteriors(ann.vote_incidence(), np.log(self.confusion_matrices_),
                                    np.log(self.class_priors_))[0]
