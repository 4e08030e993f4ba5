"""How well a fitted label model explains the votes it did not see, or their co-occurrence.

Two diagnostics of a fitted model, written from its public parameters (``class_priors_``,
``confusion_matrices_``, and for :class:`~crowd_keras.aggregation.AbstainAwareDawidSkene`
``response_matrices_`` and ``class_balance_``), each a sum over rows so that a block of rows
adds up to the whole:

* :func:`vote_log_likelihood`: ``Σ_i log p(votes_i | which annotators voted on i)``, the
  held-out score that tells labeling functions (abstaining depends on the class) from crowd
  answers;
* :func:`covote_misfit_from`: the share of the pairwise co-votes of distinct annotators that
  the model's conditional independence given the class does not explain.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ..annotations import Annotations
from .abstain_dawid_skene import AbstainAwareDawidSkene

__all__ = ["vote_log_likelihood", "conditional_vote_log_likelihood", "covote_misfit_from",
           "MIN_COVOTES"]

#: fewer co-votes of distinct annotators than this cannot measure the misfit
MIN_COVOTES = 1000


def _vote_terms(X: sp.csr_matrix, log_vote: np.ndarray) -> np.ndarray:
    """(items, K): Σ over an item's votes of ``log_vote[a, k, l]`` (a sparse product)."""
    k = log_vote.shape[1]
    return np.asarray(X @ log_vote.transpose(0, 2, 1).reshape(-1, k))


def conditional_vote_log_likelihood(model: object, ann: Annotations) -> float:
    """``Σ_i log p(votes_i | which annotators voted on i)`` of ``ann``'s items under ``model``.

    The abstain model (response matrices ``R``, ``(m, K, K+1)``, last column abstain):
    ``log Σ_k ρ_k Π_{j voted} R_j[k, l_j] Π_{j silent} R_j[k, ⊥]`` minus the same with
    ``1 − R_j[k, ⊥]`` in place of each vote (the probability of the pattern). A crowd model
    (abstaining independent of the class): ``log Σ_k ρ_k Π_{j voted} π_j[k, l_j]``.
    """
    return vote_log_likelihood(model, ann.vote_incidence())


def vote_log_likelihood(model: object, X: sp.csr_matrix) -> float:
    """:func:`conditional_vote_log_likelihood` of the items of the vote incidence ``X``
    (items × (annotator, class), ``Annotations.vote_incidence()``): a block of rows adds up
    to the whole."""
    log_prior = np.log(np.maximum(model.class_priors_, 1e-300))
    if isinstance(model, AbstainAwareDawidSkene):
        R = np.maximum(model.response_matrices_, 1e-300)
        k = R.shape[1]
        log_abstain = np.log(R[:, :, k])                                  # (m, K)
        log_voted = np.log(np.maximum(1.0 - R[:, :, k], 1e-300))          # (m, K)
        everyone_silent = log_abstain.sum(axis=0)                         # (K,)
        swap = _vote_terms(X, np.log(R[:, :, :k]) - log_abstain[:, :, None])
        # which functions voted: every vote column of function j carries j's term
        swap_pattern = np.asarray(X @ np.repeat(log_voted - log_abstain, k, axis=0))
        joint = logsumexp(log_prior + everyone_silent + swap, axis=1)
        pattern = logsumexp(log_prior + everyone_silent + swap_pattern, axis=1)
        return float((joint - pattern).sum())
    log_pi = np.log(np.maximum(model.confusion_matrices_, 1e-300))
    voted = np.diff(X.indptr) > 0
    return float(logsumexp(log_prior + _vote_terms(X, log_pi), axis=1)[voted].sum())


def covote_misfit_from(model: Any, observed: np.ndarray, n_rows: int) -> Optional[float]:
    """Share of the co-votes of distinct annotators that the fitted abstain-aware ``model``
    misses: ``Σ |O − O_model| / Σ O`` over pairs of distinct annotators ``a, b`` and votes
    ``l, l'``, with ``O_model = n Σ_y π_y R_a[y, l] R_b[y, l']`` (``R``: its response
    matrices, ``π``: its class balance). None with fewer than :data:`MIN_COVOTES` co-votes.

    Args:
        observed: (m·k, m·k) ``XᵀX`` over the sampled rows (``X``: the vote incidence).
        n_rows: number of sampled rows.
    """
    R, pi = np.asarray(model.response_matrices_), np.asarray(model.class_balance_)
    m, k = R.shape[0], R.shape[1]
    off = np.repeat(np.arange(m), k)
    off = off[:, None] != off[None, :]
    if observed[off].sum() < MIN_COVOTES:
        return None
    votes = R[:, :, :k].transpose(1, 0, 2).reshape(k, m * k)  # [y, (a, l)]
    implied = votes.T @ (pi[:, None] * votes) * n_rows
    return float(np.abs(observed - implied)[off].sum() / observed[off].sum())
