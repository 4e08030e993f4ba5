"""EBCC: enhanced Bayesian classifier combination (Li, Rubinstein & Cohn, ICML 2019).

IBCC (:mod:`.ibcc`) whose items of each true class ``k`` fall into ``M`` subtypes
(``num_groups``), each with its own confusion row for every annotator; annotators who err
alike on the same subtype of items are correlated through it (Li et al. 2019, section 3):

- ``τ ~ Dirichlet(alpha)``; ``π_k ~ Dirichlet(a_pi / M, …)`` over the subtypes of class k;
- ``z_i ~ Categorical(τ)``, ``g_i | z_i = k ~ Categorical(π_k)``;
- ``v_akm ~ Dirichlet(β_k)`` (``β_kl = a_v`` if ``l = k`` else ``b_v``), and
  ``y_ia ~ Categorical(v_{a z_i g_i})``.

Mean-field VB over ``q(z, g) q(τ) q(π) q(v)`` (section 4): with ``q_ikm = q(z_i = k,
g_i = m)`` and expected counts ``N_aklm = Σ_{i: y_ia = l} q_ikm`` (one sparse product
``Xᵀ q``, ``q`` as (I, K·M)):

- ``q(τ) = Dir(alpha + Σ_{i,m} q_ikm)``, ``q(π_k) = Dir(a_pi / M + Σ_i q_ikm)``,
  ``q(v_akm) = Dir(β_k + N_akm·)``;
- ``log q_ikm = E[log τ_k] + E[log π_km] + Σ_{a: y_ia = l} E[log v_akml] + const``,
  normalised over all ``(k, m)`` of the item (one sparse product ``X W``, ``W`` (A·K, K·M)).

The symmetry between subtypes is broken by a random start: ``q_ikm = q⁰_ik d_ikm`` with
``q⁰`` the soft majority vote and ``d_ik ~ Dirichlet(1, …, 1)``, drawn per item from the
seed and the item's id (:func:`subtype_draws`), so that any split of the items into blocks
draws the same start.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ...numerics import softmax_rows
from ..em import Block, Summary
from .base import BayesianLabelModel, check_positive, confusion_prior, expected_log_dirichlet

__all__ = ["EBCC", "ebcc_statistics", "ebcc_m_step", "ebcc_e_step", "subtype_draws",
           "vote_share_totals"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijection of uint64 whose outputs
    pass as independent uniform words for consecutive inputs (a counter-based generator)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def subtype_draws(item_ids: np.ndarray, n_classes: int, n_groups: int, seed: int) -> np.ndarray:
    """(I, K, M) Dirichlet(1, …, 1) draws over the M subtypes, one per item and class.

    Item ``i``'s draws depend only on ``seed`` and ``item_ids[i]`` (its pandas hash, stable
    across processes): word ``c`` of item ``i`` is ``mix(mix(hash_i + mix(seed)) + c·γ)``,
    its uniform ``u`` gives an Exponential(1) ``−log u``, and normalised exponentials are
    a Dirichlet(1, …, 1) draw.
    """
    ids = np.asarray(item_ids)
    with np.errstate(over="ignore"):
        key = pd.util.hash_array(ids.astype(object) if ids.dtype.kind not in "iub" else ids)
        key = _mix64(key.astype(np.uint64) + _mix64(np.array([seed], dtype=np.uint64)))
        counter = np.arange(1, n_classes * n_groups + 1, dtype=np.uint64) * _GOLDEN
        words = _mix64(key[:, None] + counter[None, :])
    uniform = ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53   # (0, 1)
    draws = -np.log(uniform).reshape(len(ids), n_classes, n_groups)
    return draws / draws.sum(axis=2, keepdims=True)


def ebcc_statistics(XT: sp.spmatrix, latent: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(N, mass)``: N (A·K, K·M) ``N[a·K + l, k·M + m] = Σ_{i: y_ia = l} q_ikm``, and
    mass (K·M,) ``Σ_i q_ikm``; ``latent`` is q (I, K·M). Sums over items."""
    return np.asarray(XT @ latent), latent.sum(axis=0)


def vote_share_totals(block: Block, vote_shares: np.ndarray) -> np.ndarray:
    """(K,) ``Σ_i q⁰_i`` of the soft majority vote ``q⁰`` (items without votes: the crowd's
    ``vote_shares``): the empirical class prior, a statistic of the block's votes alone
    (one sparse product with the items' inverse vote counts)."""
    k = vote_shares.shape[0]
    per_item = block.annotations_per_item()
    inverse = np.divide(1.0, per_item, out=np.zeros(len(per_item)), where=per_item > 0)
    totals = np.asarray(block.XT @ inverse).reshape(-1, k).sum(axis=0)
    return totals + (per_item == 0).sum() * vote_shares


def ebcc_m_step(counts: np.ndarray, mass: np.ndarray, n_groups: int, a_pi: float,
                alpha: Any, a_v: float, b_v: float) -> tuple:
    """The variational parameters and expectations from the summed statistics.

    Returns:
        ``(bias, log_v, eta, nu, mu)``: bias (K·M,) ``E[log τ_k] + E[log π_km]``; log_v
        (A·K, K·M) ``E[log v_akml]`` at ``[a·K + l, k·M + m]`` (the E-step's weights); the
        concentrations eta (K, M) of ``q(π)``, nu (K,) of ``q(τ)`` and mu (A, K_l, K, M) of
        ``q(v)`` (``mu[a, l, k, m]``).
    """
    k = counts.shape[1] // n_groups
    eta = mass.reshape(k, n_groups) + a_pi / n_groups
    nu = mass.reshape(k, n_groups).sum(axis=1) + alpha
    # the statistics' layout [a, l, k, m] is the E-step's: normalise over l (axis 1)
    mu = counts.reshape(-1, k, k, n_groups) + confusion_prior(k, a_v, b_v)[None, :, :, None]
    log_v = expected_log_dirichlet(mu, axis=1).reshape(-1, k * n_groups)
    bias = expected_log_dirichlet(eta, axis=1) + expected_log_dirichlet(nu, axis=0)[:, None]
    return bias.ravel(), log_v, eta, nu, mu


def ebcc_e_step(X: sp.csr_matrix, bias: np.ndarray, log_v: np.ndarray,
                item_log_prior: Optional[np.ndarray] = None) -> Tuple[np.ndarray, float]:
    """``q(z, g)`` (I, K·M) and the summed log normaliser ``Σ_i log Σ_{k,m} exp(score_ikm)``;
    ``item_log_prior`` (I, K) is added to every subtype of its class."""
    logits = X @ log_v
    logits += bias
    if item_log_prior is not None:
        groups = logits.shape[1] // item_log_prior.shape[1]
        logits.reshape(len(logits), -1, groups)[...] += item_log_prior[:, :, None]
    latent, log_norm = softmax_rows(logits, out=logits)
    return latent, float(log_norm.sum())


class EBCC(BayesianLabelModel):
    """Enhanced Bayesian classifier combination: confusions as mixtures of subtypes, which
    captures correlated annotators (Li, Rubinstein & Cohn 2019; their defaults).

    Args:
        num_groups: M, subtypes per true class.
        a_pi: Dirichlet pseudo-count of the subtype weights of a class (``a_pi / M`` each).
        alpha: Dirichlet pseudo-count of the class proportions (ignored with
            ``empirical_prior``).
        a_v, b_v: Dirichlet pseudo-counts of a confusion row, on and off the true class.
        empirical_prior: use the soft majority vote's class totals ``Σ_i q⁰_i`` as ``alpha``
            (the votes only: gold clamps do not enter it; :func:`vote_share_totals`).
        seed: seed of the random start (per item: :func:`subtype_draws`).
        init: ``"random"``, or an explicit start ``q(z, g)`` of shape (I, K, M) or
            (I, K·M) for a one-block fit (e.g. the authors' code's draw).
        max_iter: maximum number of VB iterations.
        tol: stop when the summed log normaliser per annotation moves by less than this.
        progress: show a progress bar over iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"`` (see
            :class:`~crowd_keras.aggregation.labeling_functions.LabelingFunctionFallback`).

    Attributes:
        posteriors_: (items, K) ``Σ_m q(z_i = k, g_i = m)``. class_priors_: (K,) ``E[τ]``.
        confusion_matrices_: (annotators, K, K), rows = true class: the subtype mixture's
        marginal ``Σ_m E[π_km] E[v_akm·]``. subtype_weights_: (K, M) ``E[π]``.
        state_: the last iteration's ``(bias, E[log v], eta, nu, mu)``. objective_: the
        summed log normaliser per iteration. n_iter_.
    """

    em_name = "VB"

    def __init__(self, num_groups: int = 10, a_pi: float = 0.1, alpha: float = 1.0,
                 a_v: float = 4.0, b_v: float = 1.0, empirical_prior: bool = False,
                 seed: int = 1234, init: Any = "random", max_iter: int = 500,
                 tol: float = 1e-6, progress: bool = False,
                 labeling_functions: str = "auto") -> None:
        self.num_groups = num_groups
        self.a_pi = a_pi
        self.alpha = alpha
        self.a_v = a_v
        self.b_v = b_v
        self.empirical_prior = empirical_prior
        self.seed = seed
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _check_params(self) -> None:
        check_positive(self, "a_pi", "alpha", "a_v", "b_v")
        if not (isinstance(self.num_groups, (int, np.integer)) and self.num_groups >= 1):
            raise ValueError(f"EBCC: num_groups must be a positive integer, got "
                             f"{self.num_groups!r}")
        if not isinstance(self.seed, (int, np.integer)):
            raise TypeError(f"EBCC: seed must be an integer, got {self.seed!r}")
        if isinstance(self.init, str) and self.init != "random":
            raise ValueError(f"EBCC: init must be 'random' or an array, got {self.init!r}")

    # the EM-step protocol (crowd_keras.aggregation.em)
    def initial_latent(self, block: Block) -> np.ndarray:
        """(I, K·M) starting ``q(z, g)``: the soft majority vote times per-item subtype
        draws, or the explicit ``init``."""
        k, m = self.n_classes_, self.num_groups
        if not isinstance(self.init, str):
            start = np.asarray(self.init, dtype=np.float64)
            if start.shape not in ((block.n_items, k, m), (block.n_items, k * m)):
                raise ValueError(f"EBCC: init must have shape {(block.n_items, k, m)} or "
                                 f"{(block.n_items, k * m)}, got {start.shape}")
            return start.reshape(block.n_items, k * m).copy()
        post = self.initial_posteriors(block)
        draws = subtype_draws(block.item_ids, k, m, int(self.seed))
        return (draws * post[:, :, None]).reshape(block.n_items, k * m)

    def initial_statistics(self, block: Block) -> tuple:
        return self.sufficient_statistics(block, self.initial_latent(block))

    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        counts, mass = ebcc_statistics(block.XT, latent)
        prior_mass = vote_share_totals(block, self.vote_shares_) if self.empirical_prior else 0.0
        return counts, mass, prior_mass

    def m_step(self, stats: tuple) -> tuple:
        counts, mass, prior_mass = stats
        alpha = prior_mass if self.empirical_prior else self.alpha
        return ebcc_m_step(counts, mass, self.num_groups, self.a_pi, alpha, self.a_v, self.b_v)

    def e_step(self, block: Block, state: tuple) -> Tuple[np.ndarray, float]:
        return ebcc_e_step(block.X, state[0], state[1], block.item_log_prior)

    def class_posteriors(self, latent: np.ndarray) -> np.ndarray:
        k = self.n_classes_
        return latent.reshape(len(latent), k, -1).sum(axis=2)

    def _set_parameters(self, state: tuple, summary: Summary) -> None:
        _, _, eta, nu, mu = state
        self.class_priors_ = nu / nu.sum()
        self.subtype_weights_ = eta / eta.sum(axis=1, keepdims=True)
        rows = mu / mu.sum(axis=1, keepdims=True)                       # E[v] at [a, l, k, m]
        self.confusion_matrices_ = np.einsum("km,alkm->akl", self.subtype_weights_, rows)
