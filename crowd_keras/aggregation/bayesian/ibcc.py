"""IBCC: independent Bayesian classifier combination (Kim & Ghahramani, AISTATS 2012).

The Dawid-Skene model with conjugate priors, fitted by mean-field variational Bayes:

- class proportions ``τ ~ Dirichlet(alpha)``, true class ``z_i ~ Categorical(τ)``;
- each annotator ``a`` and true class ``k``: a confusion row ``v_ak ~ Dirichlet(β_k)`` with
  ``β_kl = a_v`` if ``l = k`` else ``b_v``; the label ``y_ia ~ Categorical(v_{a z_i})``.

With ``q(z) q(τ) q(v)`` the updates are (Kim & Ghahramani 2012, section 3, the VB algorithm):

- ``q(τ) = Dirichlet(alpha + Σ_i q_i)``, ``q(v_ak) = Dirichlet(β_k + N_ak)`` with expected
  counts ``N_akl = Σ_{i: y_ia = l} q_ik`` (one sparse product ``Xᵀ q``);
- ``log q_ik = E[log τ_k] + Σ_{a: y_ia = l} E[log v_akl] + const`` (one sparse product
  ``X W``), ``E[log θ] = ψ(θ's concentration) − ψ(its sum)``.

The statistics ``(Xᵀ q, Σ_i q_i)`` are those of Dawid-Skene
(:func:`crowd_keras.aggregation.dawid_skene.sufficient_statistics`): sums over items.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ...numerics import softmax_rows, sparse_dot
from ..dawid_skene import sufficient_statistics
from ..em import Block, Summary
from .base import (BayesianLabelModel, check_positive, confusion_prior, expected_log_confusions,
                   expected_log_dirichlet)

__all__ = ["IBCC", "ibcc_m_step", "ibcc_e_step"]


def ibcc_m_step(counts: np.ndarray, class_mass: np.ndarray, a_v: float, b_v: float,
                alpha: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The variational parameters and expectations from the summed statistics.

    Args:
        counts: (A·K, K) expected counts, ``counts[a·K + l, k] = Σ_{i: y_ia = l} q_ik``.
        class_mass: (K,) ``Σ_i q_i``.
        a_v, b_v, alpha: the prior pseudo-counts.

    Returns:
        ``(log_tau, log_v, nu, mu)``: ``E[log τ]`` (K,); ``E[log v]`` as the E-step's weight
        matrix (A·K, K), ``log_v[a·K + l, k] = E[log v_akl]``; the concentrations ``nu`` (K,)
        of ``q(τ)`` and ``mu`` (A, K_l, K) of ``q(v)`` (``mu[a, l, k]``: true class k).
    """
    k = class_mass.shape[0]
    # the (A·K_l, K) layout of the statistics is the E-step's: normalise over l (axis 1)
    mu, log_v = expected_log_confusions(counts.reshape(-1, k, k), confusion_prior(k, a_v, b_v))
    log_v = log_v.reshape(-1, k)
    nu = class_mass + alpha
    return expected_log_dirichlet(nu, axis=0), log_v, nu, mu


def ibcc_e_step(X: sp.csr_matrix, log_tau: np.ndarray, log_v: np.ndarray,
                item_log_prior: Optional[np.ndarray] = None) -> Tuple[np.ndarray, float]:
    """``q(z)`` (I, K) and the summed log normaliser ``Σ_i log Σ_k exp(score_ik)``.

    ``score_ik = E[log τ_k] + Σ_{a: y_ia = l} E[log v_akl]`` (+ ``item_log_prior``): one sparse
    product of the (I, A·K) vote incidence with ``log_v`` (A·K, K).
    """
    logits = sparse_dot(X, log_v)
    if item_log_prior is None:
        # E[log τ] added inside the softmax's blocks: no pass of its own
        post, log_norm = softmax_rows(logits, out=logits, offset=log_tau)
        return post, float(log_norm.sum())
    logits += log_tau
    logits += item_log_prior
    post, log_norm = softmax_rows(logits, out=logits)
    return post, float(log_norm.sum())


class IBCC(BayesianLabelModel):
    """Independent Bayesian classifier combination: variational Dawid-Skene with Dirichlet
    priors (Kim & Ghahramani 2012; the authors of EBCC's defaults).

    Args:
        a_v: Dirichlet pseudo-count of a confusion row on its diagonal (the true class).
        b_v: pseudo-count on every other cell of the row.
        alpha: Dirichlet pseudo-count of the class proportions.
        max_iter: maximum number of VB iterations.
        tol: stop when the summed log normaliser per annotation moves by less than this.
        progress: show a progress bar over iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"`` (see
            :class:`~crowd_keras.aggregation.labeling_functions.LabelingFunctionFallback`).

    Attributes:
        state_: ``(E[log τ], E[log v])`` of the last iteration (``predict_proba(new)``).
        objective_: the summed log normaliser per iteration.
        n_iter_: VB iterations run.
        posteriors_: (items, K) ``q(z)``.
        class_priors_: (K,) ``E[τ]``.
        posterior_log_prior_: (K,) ``E[log τ]``, the class weights of the E-step (not
            ``log E[τ]``).
        confusion_matrices_: (annotators, K, K) ``E[v]``, rows = true class (the E-step
            weighs a vote by ``exp E[log v]``: :meth:`own_vote_factors`).
    """

    posterior_has_class_prior = True

    em_name = "VB"

    def __init__(self, a_v: float = 4.0, b_v: float = 1.0, alpha: float = 1.0,
                 max_iter: int = 500, tol: float = 1e-6, progress: bool = False,
                 labeling_functions: str = "auto") -> None:
        self.a_v = a_v
        self.b_v = b_v
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _check_priors(self) -> None:
        check_positive(self, "a_v", "b_v", "alpha")

    # the EM-step protocol (crowd_keras.aggregation.em)
    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        return sufficient_statistics(block.XT, latent)

    def m_step(self, stats: tuple) -> tuple:
        return ibcc_m_step(*stats, self.a_v, self.b_v, self.alpha)

    def e_step(self, block: Block, state: tuple) -> Tuple[np.ndarray, float]:
        return ibcc_e_step(block.X, state[0], state[1], block.item_log_prior)

    @property
    def posterior_log_prior_(self) -> np.ndarray:
        """(K,) ``E[log τ] = ψ(ν) − ψ(Σ ν)``: the E-step scores class k with
        ``E[log τ_k]`` (Kim & Ghahramani 2012, section 3), so ``q(z)`` carries
        ``exp E[log τ]``, below ``class_priors_ = E[τ]`` most for the rare classes."""
        if getattr(self, "labeling_function_model_", None) is not None:
            return super().posterior_log_prior_          # the abstain-aware model's prior
        self._check_fitted()
        return self.state_[0].copy()

    def own_vote_factors(self, votes: sp.csr_matrix, start: int, stop: int) -> np.ndarray:
        """(stop - start, K) ``exp E[log v_akl]`` of the votes ``start:stop`` of ``votes``
        (:meth:`~crowd_keras.aggregation.base.LabelModel.own_vote_factors`), each row over its
        maximum: the E-step scores a vote with ``E[log v_akl]`` (Kim & Ghahramani 2012,
        section 3), so ``q(z)`` carries ``exp E[log v]``, below ``confusion_matrices_ = E[v]``
        most for annotators with few labels (their ``q(v)`` are the widest)."""
        if getattr(self, "labeling_function_model_", None) is not None:
            return super().own_vote_factors(votes, start, stop)   # the abstain-aware model's
        self._check_fitted()
        log_v = self.state_[1][votes.indices[start:stop]]               # (n, K)
        log_v -= log_v.max(axis=1, keepdims=True)
        return np.exp(log_v, out=log_v)

    def _set_parameters(self, state: tuple, summary: Summary) -> None:
        _, _, nu, mu = state
        self.class_priors_ = nu / nu.sum()
        # mu[a, l, k] -> E[v_ak·] as rows (A, K_true, K_label)
        self.confusion_matrices_ = (mu / mu.sum(axis=1, keepdims=True)).transpose(0, 2, 1).copy()
