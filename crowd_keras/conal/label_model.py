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

from typing import Any, Optional, Sequence

import numpy as np

from ..aggregation.em import Block, EMLabelModel, Summary
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..arguments import check_number
from ..numerics import (class_vote_counts, column_sums, confusion_posteriors, normalize_rows,
                        safe_log)

__all__ = ["CommonNoiseModel"]


class CommonNoiseModel(LabelingFunctionFallback, EMLabelModel):
    """Feature-free CoNAL label model (common + individual confusion, EM).

    Written as the EM-step protocol of :mod:`crowd_keras.aggregation.em`, so the same fit
    runs in memory, split into blocks of items, on Dask and in the default model's folds:

    * statistics (summed over items): ``(counts (A, K, K), class_mass (K,), common (A, K, K),
      start)``: the expected votes ``Σ_i q(z_i = c) [a said y on i]``, ``Σ_i q(z_i)``, the
      part of the votes the common matrix explains (``counts · q(s = 1 | c, y)``), and the
      number of blocks whose statistics are the starting ones (> 0: the first M-step, where
      each matrix sees half of every vote and ω is ``init_omega``);
    * state: ``(ω (A,), π_g (K, K), π_r (A, K, K), ρ (K,))``;
    * latent posteriors of a block: ``(q(z) (I, K), q(s = 1 | c, y) (A, K, K))``.

    Args:
        max_iter, tol: EM stops when the mean log-likelihood per annotation gains < tol.
        smoothing: Dirichlet pseudo-count on every confusion cell and on the class prior.
        omega_prior: Beta pseudo-counts ``(a, b)`` on each annotator's ω (default (1, 1)),
            each at least 1 (ω is their MAP estimate, inside [0, 1] only then).
        init_omega: starting ω for every annotator, in [0, 1].
        progress: show a progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    ``fit(annotations, gold=...)`` fixes the known class of gold items in every E-step.

    Attributes:
        common_confusion_: (K, K).
        individual_confusions_: (A, K, K).
        omega_: (A,) share of each annotator's labels explained by the common matrix.
        log_likelihood_: the log-likelihood per annotation after each iteration.
        n_iter_: EM iterations run.
        n_annotators_: A.
        votes_per_annotator_: (A,) each annotator's number of annotations.
        posteriors_: (items, K).
        confusion_matrices_: (A, K, K), each annotator's effective matrix
            ω_r π_g + (1 − ω_r) π_r.
        class_priors_: (K,).
    """

    accepts_gold = True
    em_name = "EM"
    #: ρ ∝ Σ_i q(z_i) + smoothing has the same fixed point without the items that have no
    #: labels (their q is ρ): EM runs on the others (:meth:`Block.labelled`)
    fits_labelled_items_only = True

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

    def adopt_labeling_function_model(self, model: Any, ann: Annotations) -> None:
        super().adopt_labeling_function_model(model, ann)
        # one common matrix cannot be told apart here: report the average behaviour
        self.common_confusion_ = self.confusion_matrices_.mean(axis=0)
        self.individual_confusions_ = self.confusion_matrices_
        self.omega_ = np.zeros(ann.n_annotators)

    def _fit_crowd(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None
                   ) -> "CommonNoiseModel":
        return self.fit_block(ann, item_log_prior)

    # ---------------------------------------------------------------- the EM-step protocol
    def init_state(self, summary: Summary) -> "CommonNoiseModel":
        name = type(self).__name__
        check_number(self.init_omega, f"{name} init_omega", high=1.0)
        if np.ndim(self.omega_prior) != 1 or len(self.omega_prior) != 2:
            raise ValueError(f"{name} omega_prior must be two Beta pseudo-counts (a, b), got "
                             f"{self.omega_prior!r}")
        for count in self.omega_prior:
            check_number(count, f"{name} omega_prior (a, b)", low=1.0)
        super().init_state(summary)
        self.n_annotators_ = summary.votes.shape[0]
        self.votes_per_annotator_ = summary.votes.sum(axis=1)
        return self

    def initial_statistics(self, block: Block) -> tuple:
        # Start from the majority-vote counts: both matrices see every annotation.
        post = self.initial_posteriors(block)
        counts = class_vote_counts(block.XT, post, self.n_annotators_)
        return counts, column_sums(post), 0.5 * counts, 1

    def sufficient_statistics(self, block: Block, latent: tuple) -> tuple:
        post, common_share = latent
        counts = class_vote_counts(block.XT, post, self.n_annotators_)
        return counts, column_sums(post), counts * common_share, 0

    def m_step(self, stats: tuple) -> tuple:
        """Closed-form π_g, π_r, ρ (the Lagrange solutions of App. B) and ω (a Beta-smoothed
        share of each annotator's votes explained by the common matrix)."""
        counts, class_mass, common, start = stats
        pi_g = normalize_rows(common.sum(axis=0) + self.smoothing)
        pi_r = normalize_rows(counts - common + self.smoothing)
        prior = class_mass + self.smoothing
        if start:
            omega = np.full(self.n_annotators_, float(self.init_omega))
        else:
            b_a, b_b = self.omega_prior
            omega = (common.sum(axis=(1, 2)) + b_a - 1 + 1e-9) / \
                (self.votes_per_annotator_ + b_a + b_b - 2 + 2e-9)
        return omega, pi_g, pi_r, prior / prior.sum()

    def e_step(self, block: Block, state: tuple) -> tuple:
        # With ω tied per annotator, an annotation's likelihood under true class c,
        # ω_r π_g[c, y] + (1 − ω_r) π_r[c, y], depends on (r, c, y) only: the E-step is
        # Dawid-Skene's with these effective matrices, and q(s = 1 | z = c, y) too.
        omega, pi_g, pi_r, prior = state
        common = omega[:, None, None] * pi_g[None]                         # (A, K, K)
        mix = common + (1 - omega[:, None, None]) * pi_r
        with np.errstate(divide="ignore"):   # smoothing=0: a class or (c, y) never seen is 0
            log_prior, log_mix = np.log(prior), np.log(mix)
        if block.item_log_prior is not None:
            log_prior = log_prior + block.item_log_prior
        post, log_norm = confusion_posteriors(block.X, log_mix, log_prior)
        # q(s = 1 | c, y); 0 where mix is 0 (no vote there: 0/0 was NaN, and NaN · 0 votes
        # made every statistic NaN)
        share = np.divide(common, mix, out=np.zeros_like(mix), where=mix > 0)
        return (post, share), float(log_norm.sum())

    def class_posteriors(self, latent: tuple) -> np.ndarray:
        return latent[0]

    def finish(self, state: tuple, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "CommonNoiseModel":
        omega, pi_g, pi_r, prior = state
        self.annotations_ = template
        self.class_priors_ = prior
        self.common_confusion_ = pi_g
        self.individual_confusions_ = pi_r
        self.omega_ = omega
        self.confusion_matrices_ = omega[:, None, None] * pi_g + (1 - omega[:, None, None]) * pi_r
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        return self

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        # smoothing=0: an unlabelled class has ρ = 0, and a label nobody gave in the fit has
        # π = 0 under every class; log π is floored, else an item given that label (new
        # annotations) had no finite score, a NaN row: it favours no class
        with np.errstate(divide="ignore"):
            return confusion_posteriors(ann.vote_incidence(), safe_log(self.confusion_matrices_),
                                        np.log(self.class_priors_))[0]
