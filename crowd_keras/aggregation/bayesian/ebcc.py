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
seed and the item's content key (what its annotators, known by their label counts over the
whole crowd, said: ``Block.item_content_keys``; :func:`subtype_draws`), so that any split of
the items into blocks draws the same start and renaming items or annotators draws it alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ...annotations import Annotations
from ...arguments import check_count, check_number
from ...errors import CrowdDataError
from ...numerics import (GOLDEN64, column_sums, id_keys, in_row_blocks, label_profile_keys, mix64,
                          softmax_rows, sparse_dot_of_blocks, sparse_row_blocks, stored_rows,
                          value_blocks)
from ..base import check_start
from ..em import Block, Summary
from .base import (BayesianLabelModel, check_positive, confusion_prior, dirichlet_kl,
                   expected_log_confusions, expected_log_dirichlet)

__all__ = ["EBCC", "SubtypeStatistics", "ebcc_statistics", "ebcc_m_step", "ebcc_e_step",
           "row_blocks", "subtype_draws", "vote_share_totals"]

_DRAW_BLOCK = 1 << 15   # words per block of subtype_draws (its arrays stay in the L2 cache)
_FACTOR_CELLS = 1 << 22  # values per block of own_vote_factors' (votes, subtypes) scores


def subtype_draws(item_ids: np.ndarray, n_classes: int, n_groups: int, seed: int) -> np.ndarray:
    """(I, K, M) Dirichlet(1, …, 1) draws over the M subtypes, one per item and class.

    ``item_ids``: the items' ids or keys (EBCC passes their content keys,
    :meth:`~crowd_keras.aggregation.em.Block.item_content_keys`). Item ``i``'s draws depend
    only on ``seed`` and ``item_ids[i]`` (its key
    :func:`~crowd_keras.numerics.id_keys`, stable across processes): word ``c`` of item ``i``
    is ``mix(key_i + c·γ)`` (:func:`~crowd_keras.numerics.mix64`),
    its uniform ``u`` gives an Exponential(1) ``−log u``, and normalised exponentials are
    a Dirichlet(1, …, 1) draw. Computed block by block of items in place, the blocks of
    large crowds on threads (every value is computed alone: the blocks change no bit).
    """
    ids = np.asarray(item_ids)
    n, width = len(ids), n_classes * n_groups
    key = id_keys(ids, seed)
    with np.errstate(over="ignore"):
        counter = np.arange(1, width + 1, dtype=np.uint64) * GOLDEN64
    draws = np.empty((n, n_classes, n_groups))
    rows = max(_DRAW_BLOCK // max(width, 1), 1)

    def draw(start: int, stop: int) -> None:
        words = np.empty((min(rows, stop - start), width), dtype=np.uint64)
        scratch = np.empty_like(words)
        for lo in range(start, stop, rows):
            hi = min(lo + rows, stop)
            w, t = words[:hi - lo], scratch[:hi - lo]
            np.add(key[lo:hi, None], counter[None, :], out=w)
            mix64(w, t)
            np.right_shift(w, np.uint64(11), out=w)
            part = draws[lo:hi]
            flat = part.reshape(hi - lo, width)
            flat[...] = w                                              # exact below 2^53
            flat += 0.5
            flat *= 2.0 ** -53                                         # uniform in (0, 1)
            np.log(flat, out=flat)
            np.negative(flat, out=flat)
            part /= part.sum(axis=2, keepdims=True)

    in_row_blocks(value_blocks(n, width), draw)      # every value alone: blocks change no bit
    return draws


@dataclass
class SubtypeStatistics:
    """Summable statistics of the live subtypes ``active`` (column codes ``k·M + m``).

    Attributes:
        counts: (A·K, S) ``Σ_{i: y_ia = l} q_ikm`` at ``[a·K + l, s]`` for subtype s.
        mass: (S,) ``Σ_i q_ikm``. prior_mass: (K,) the empirical prior's vote totals, or 0.
        active: (S,) the subtypes' column codes (the same in every block).
    """

    counts: np.ndarray
    mass: np.ndarray
    prior_mass: Any
    active: np.ndarray

    def __add__(self, other: "SubtypeStatistics") -> "SubtypeStatistics":
        if not np.array_equal(self.active, other.active):
            raise ValueError("EBCC statistics of different live subtypes cannot be added")
        return SubtypeStatistics(self.counts + other.counts, self.mass + other.mass,
                                 self.prior_mass + other.prior_mass, self.active)


def row_blocks(values: Any) -> Tuple[np.ndarray, ...]:
    """The row blocks of a latent's ``q`` values: an (I, S) array is one block; the E-step
    gives one block per thread (:func:`~crowd_keras.numerics.sparse_row_blocks`)."""
    return (values,) if isinstance(values, np.ndarray) else tuple(values)


def ebcc_statistics(XT: sp.spmatrix, values: Any, active: np.ndarray,
                    prior_mass: Any = 0.0) -> SubtypeStatistics:
    """The statistics of ``q`` on the live subtypes: ``values`` (I, S) with columns
    ``active``, or its row blocks in item order; one sparse product ``Xᵀ q`` (block by
    block: :func:`~crowd_keras.numerics.sparse_dot_of_blocks`). Sums over items."""
    blocks = row_blocks(values)
    mass = sum(column_sums(part) for part in blocks)
    # a float32 product's counts: summed over blocks and into the M-step in float64
    counts = np.asarray(sparse_dot_of_blocks(XT, blocks), dtype=np.float64)
    return SubtypeStatistics(counts, mass, prior_mass, active)


def vote_share_totals(block: Block, vote_shares: np.ndarray) -> np.ndarray:
    """(K,) ``Σ_i q⁰_i`` of the soft majority vote ``q⁰`` (items without votes: the crowd's
    ``vote_shares``): the empirical class prior, a statistic of the block's votes alone
    (one sparse product with the items' inverse vote counts)."""
    k = vote_shares.shape[0]
    per_item = block.annotations_per_item()
    inverse = np.divide(1.0, per_item, out=np.zeros(len(per_item)), where=per_item > 0)
    totals = np.asarray(block.XT @ inverse).reshape(-1, k).sum(axis=0)
    return totals + (per_item == 0).sum() * vote_shares


def ebcc_m_step(stats: SubtypeStatistics, n_classes: int, n_groups: int, a_pi: float,
                alpha: Any, a_v: float, b_v: float, prune_below: float = 0.0) -> tuple:
    """The variational parameters and expectations from the summed statistics.

    Subtypes whose expected number of items ``Σ_i q_ikm`` is below ``prune_below`` are
    dropped (never the largest of a class): their counts are nil, so ``q(v_akm)`` is the prior
    and ``E[log π_km] ≈ ψ(a_pi / M) − ψ(·)`` (about −100 at the defaults) keeps them at
    ``q_ikm`` far below ``prune_below`` on every item whose labels the live subtypes explain.

    Returns:
        ``(bias, log_v, live, eta, nu, mu, alpha)``: for the S live subtypes ``live`` (column
        codes ``k·M + m``): bias (S,) ``E[log τ_k] + E[log π_km]``, log_v (A·K, S)
        ``E[log v_akml]`` at ``[a·K + l, s]`` (the E-step's weights) and mu (A, K_l, S) the
        concentrations of ``q(v)``; eta (K, M) of ``q(π)`` and nu (K,) of ``q(τ)`` over all
        subtypes; alpha (K,) the prior of ``q(τ)`` (the ELBO's KL term reads it).
    """
    k, m = n_classes, n_groups
    mass = np.zeros(k * m)
    mass[stats.active] = stats.mass
    eta = mass.reshape(k, m) + a_pi / m
    nu = mass.reshape(k, m).sum(axis=1) + alpha
    keep = stats.mass >= prune_below
    largest = np.full(k, -1.0)
    np.maximum.at(largest, stats.active // m, stats.mass)
    keep |= stats.mass == largest[stats.active // m]
    live = stats.active[keep]
    # the statistics' layout [a, l, s] is the E-step's: normalise over l (axis 1)
    counts = stats.counts if keep.all() else stats.counts[:, keep]
    mu, log_v = expected_log_confusions(counts.reshape(-1, k, len(live)),
                                        confusion_prior(k, a_v, b_v)[:, live // m])
    log_v = log_v.reshape(-1, len(live))
    bias = expected_log_dirichlet(eta, axis=1) + expected_log_dirichlet(nu, axis=0)[:, None]
    return (bias.ravel()[live], log_v, live, eta, nu, mu,
            np.broadcast_to(np.asarray(alpha, dtype=np.float64), (k,)))


def ebcc_e_step(X: sp.csr_matrix, bias: np.ndarray, log_v: np.ndarray, live: np.ndarray,
                n_groups: int, item_log_prior: Optional[np.ndarray] = None
                ) -> Tuple[Tuple[Tuple[np.ndarray, ...], np.ndarray], float]:
    """``q(z, g)`` on the live subtypes, ``(values, live)`` with ``values`` the (I, S) array's
    row blocks in item order (:func:`row_blocks`), and the summed log normaliser ``Σ_i log
    Σ_{k,m} exp(score_ikm)``; ``item_log_prior`` (I, K) is added to every subtype of its
    class.

    Each block's scores are normalised in place by the thread that computed them: the
    (I, S) array is S/K times DS's, and assembling it from the blocks would cost as much as
    the product."""
    log_norm = np.empty(X.shape[0])
    classes = live // n_groups

    def normalise(part: np.ndarray, lo: int, hi: int) -> None:
        if item_log_prior is not None:
            part += item_log_prior[lo:hi, classes]
        # wide rows (S columns): exponentiated without their maximum (rows out of range
        # redone)
        log_norm[lo:hi] = softmax_rows(part, out=part, offset=bias, shift=False)[1]

    values = tuple(sparse_row_blocks(X, log_v, then=normalise))
    return (values, live), float(log_norm.sum())


def _class_log_sums(scores: np.ndarray, first: np.ndarray) -> np.ndarray:
    """(n, C) ``log Σ_m exp(scores)`` over each class's subtypes: the columns of ``scores``
    (n, S) from ``first[c]`` to ``first[c + 1]`` (a class's live subtypes are adjacent)."""
    peak = np.maximum.reduceat(scores, first, axis=1)
    peak[~np.isfinite(peak)] = 0.0                    # a class whose subtypes are all -inf
    width = np.diff(np.r_[first, scores.shape[1]])
    with np.errstate(divide="ignore"):
        return np.log(np.add.reduceat(np.exp(scores - np.repeat(peak, width, axis=1)), first,
                                      axis=1)) + peak


def _check_named(impossible: np.ndarray) -> None:
    """CrowdDataError for the classes ``impossible`` (K,) bool: the prior gives them no mass
    but items are held there (gold only can put them there: an empirical prior gives a class
    no vote names none)."""
    if impossible.any():
        raise CrowdDataError(
            f"EBCC(empirical_prior=True): the gold holds the class code(s) "
            f"{np.flatnonzero(impossible).tolist()}, which no vote names; the empirical "
            "prior gives them no mass, so those gold items are impossible under the model "
            "(an ELBO of -inf): use empirical_prior=False, whose prior gives every class "
            "mass")


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
        seed: seed of the random start (per item, from its content: :func:`subtype_draws`).
        init: ``"random"``, or an explicit start ``q(z, g)`` of shape (I, K, M) or
            (I, K·M) for a one-block fit (e.g. the authors' code's draw).
        prune_below: drop a subtype once its expected number of items ``Σ_i q_ikm`` falls
            below this (never a class's largest; see :func:`ebcc_m_step`): with
            ``a_pi / M`` small most subtypes die within tens of iterations, and the live ones
            are all the sparse products then compute. 0: keep every subtype (the exact VB).
        max_iter: maximum number of VB iterations.
        tol: stop when the summed log normaliser per annotation moves by less than this.
        progress: show a progress bar over iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"`` (see
            :class:`~crowd_keras.aggregation.labeling_functions.LabelingFunctionFallback`).
        dtype: ``"float64"`` (default) or ``"float32"``: the precision of the (items,
            subtypes) posteriors and of the two sparse products per iteration, EBCC's
            largest arrays and most of its time on large crowds (``K·M`` columns where
            Dawid-Skene has ``K``). float32 halves their memory and reading; the statistics,
            the M-step and the log normalisers stay in float64, and the posteriors move by
            about 1e-6 (``docs/bayesian-label-models.md``).

    Attributes:
        subtype_weights_: (K, M) ``E[π]``.
        live_subtypes_: (K, M) bool, the subtypes not dropped.
        elbo_: the evidence lower bound of the fit (Li et al. 2019 keep the best of several
            seeds by it).
        state_: the last iteration's ``(bias, E[log v], live, eta, nu, mu)``.
        objective_: the summed log normaliser per iteration.
        n_iter_: VB iterations run.
        profile_keys_: (annotators,) uint64 the annotators' label-profile keys
            (:func:`~crowd_keras.numerics.label_profile_keys`) the start was keyed on.
        posteriors_: (items, K) ``Σ_m q(z_i = k, g_i = m)``.
        class_priors_: (K,) ``E[τ]``.
        posterior_log_prior_: (K,) ``E[log τ]``, the class weights of the E-step (not
            ``log E[τ]``; ``E[log π]`` belongs to the class's subtype mixture).
        confusion_matrices_: (annotators, K, K), rows = true class: the subtype mixture's
            marginal ``Σ_m E[π_km] E[v_akm·]`` (the E-step weighs a vote per subtype by
            ``exp E[log v_akml]``: :meth:`own_vote_factors`).
    """

    posterior_has_class_prior = True

    em_name = "VB"

    def __init__(self, num_groups: int = 10, a_pi: float = 0.1, alpha: float = 1.0,
                 a_v: float = 4.0, b_v: float = 1.0, empirical_prior: bool = False,
                 seed: int = 1234, init: Any = "random", prune_below: float = 1e-10,
                 max_iter: int = 500, tol: float = 1e-6, progress: bool = False,
                 labeling_functions: str = "auto", dtype: str = "float64") -> None:
        self.num_groups = num_groups
        self.a_pi = a_pi
        self.alpha = alpha
        self.a_v = a_v
        self.b_v = b_v
        self.empirical_prior = empirical_prior
        self.seed = seed
        self.init = init
        self.prune_below = prune_below
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress
        self.labeling_functions = labeling_functions
        self.dtype = dtype

    def _check_priors(self) -> None:
        check_positive(self, "a_pi", "alpha", "a_v", "b_v")
        check_count(self.num_groups, "EBCC num_groups", 1)
        check_number(self.prune_below, "EBCC prune_below", low=0.0)
        if not isinstance(self.seed, (int, np.integer)):
            raise TypeError(f"EBCC: seed must be an integer, got {self.seed!r}")
        if self.seed >= 2 ** 64:   # numpy's OverflowError named no argument
            raise ValueError(f"EBCC seed must be an integer below 2**64 (the item draws hash "
                             f"it in 64 bits), got {self.seed}")
        if isinstance(self.init, str) and self.init != "random":
            raise ValueError(f"EBCC: init must be 'random' or an array, got {self.init!r}")
        self._precision()

    def _precision(self) -> np.dtype:
        """``dtype`` as a numpy dtype, float64 or float32 (anything else refused by name)."""
        dtype = None
        if isinstance(self.dtype, (str, type, np.dtype)):   # np.dtype(None) is float64
            try:
                dtype = np.dtype(self.dtype)
            except TypeError:
                pass
        if dtype is None or dtype.name not in ("float64", "float32"):
            raise ValueError(f"EBCC: dtype must be 'float64' or 'float32', got {self.dtype!r}")
        return dtype

    def _incidence(self, block: Block) -> Tuple[sp.csr_matrix, Any]:
        """The block's vote incidence ``X`` and its transposed view in ``dtype`` (float32:
        a copy of the stored ones sharing the index arrays, made once per block)."""
        dtype = self._precision()
        if dtype == block.X.dtype:
            return block.X, block.XT

        def make() -> Tuple[sp.csr_matrix, Any]:
            X = sp.csr_matrix((block.X.data.astype(dtype), block.X.indices, block.X.indptr),
                              shape=block.X.shape)
            return X, X.T

        return block.memo(("incidence", dtype.name), make)

    def _fit_crowd(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None,
                   pred_probs: Optional[np.ndarray] = None) -> "EBCC":
        if self.empirical_prior and item_log_prior is not None:   # before any state is set
            named = np.bincount(ann.labels, minlength=ann.n_classes) > 0
            held = np.isfinite(item_log_prior)
            nowhere = ~(held & named).any(axis=1)
            _check_named(held[nowhere].any(axis=0) & ~named)
        return super()._fit_crowd(ann, item_log_prior, pred_probs)

    # the EM-step protocol (crowd_keras.aggregation.em)
    def initial_latent(self, block: Block) -> Tuple[np.ndarray, np.ndarray]:
        """The starting ``q(z, g)``: ``(values (I, K·M), all subtypes)``, the soft majority
        vote times per-item subtype draws, or the explicit ``init`` (the E-step's latents hold
        ``values`` as row blocks: :func:`row_blocks`)."""
        k, m = self.n_classes_, self.num_groups
        every = np.arange(k * m)
        if not isinstance(self.init, str):
            start = np.asarray(self.init, dtype=np.float64)
            if start.shape not in ((block.n_items, k, m), (block.n_items, k * m)):
                raise ValueError(f"EBCC: init must have shape {(block.n_items, k, m)} or "
                                 f"{(block.n_items, k * m)}, got {start.shape}")
            start = check_start(start.reshape(block.n_items, k * m).copy(), "EBCC init")
            return start.astype(self._precision(), copy=False), every
        post = self.initial_posteriors(block)
        # keyed on what each item was told, not its id: renamed or re-imported items (new
        # task ids, a shuffled label matrix) start alike and end alike
        draws = subtype_draws(block.item_content_keys(k, self.profile_keys_), k, m,
                              int(self.seed))
        draws *= post[:, :, None]
        return draws.reshape(block.n_items, k * m).astype(self._precision(), copy=False), every

    def init_state(self, summary: Summary) -> "EBCC":
        super().init_state(summary)
        self.profile_keys_ = label_profile_keys(summary.votes)
        return self

    def initial_statistics(self, block: Block) -> SubtypeStatistics:
        return self.sufficient_statistics(block, self.initial_latent(block))

    def sufficient_statistics(self, block: Block, latent: tuple) -> SubtypeStatistics:
        prior_mass = vote_share_totals(block, self.vote_shares_) if self.empirical_prior else 0.0
        return ebcc_statistics(self._incidence(block)[1], latent[0], latent[1], prior_mass)

    def m_step(self, stats: SubtypeStatistics) -> tuple:
        alpha = stats.prior_mass if self.empirical_prior else self.alpha
        return ebcc_m_step(stats, self.n_classes_, self.num_groups, self.a_pi, alpha,
                           self.a_v, self.b_v, float(self.prune_below))

    def e_step(self, block: Block, state: tuple) -> Tuple[tuple, float]:
        return ebcc_e_step(self._incidence(block)[0], state[0],
                           state[1].astype(self._precision(), copy=False), state[2],
                           self.num_groups, block.item_log_prior)

    def class_posteriors(self, latent: tuple) -> np.ndarray:
        blocks, live = row_blocks(latent[0]), latent[1]
        post = np.zeros((sum(len(part) for part in blocks), self.n_classes_))
        # columns of one class are adjacent (codes k·M + m, ascending): add them up
        classes = live // self.num_groups
        starts = np.flatnonzero(np.r_[True, classes[1:] != classes[:-1]])
        lo = 0
        for part in blocks:                         # one per thread of the E-step
            post[lo:lo + len(part), classes[starts]] = np.add.reduceat(part, starts, axis=1)
            lo += len(part)
        # renormalised: a gold item's subtypes summed to 1 - 2e-16, not its one-hot row
        return post / post.sum(axis=1, keepdims=True)

    @property
    def posterior_log_prior_(self) -> np.ndarray:
        """(K,) ``E[log τ] = ψ(ν) − ψ(Σ ν)``: the E-step scores subtype m of class k with
        ``E[log τ_k] + E[log π_km]`` (Li et al. 2019, section 4), so ``q(z_i = k) = Σ_m
        q_ikm`` carries ``exp E[log τ_k]`` times the class's subtype mixture (part of the
        class's likelihood, whatever the class prior); ``-inf`` for a class that an empirical
        prior gives no mass."""
        if getattr(self, "labeling_function_model_", None) is not None:
            return super().posterior_log_prior_          # the abstain-aware model's prior
        self._check_fitted()
        return expected_log_dirichlet(np.asarray(self.state_[4], np.float64), axis=0)

    def own_vote_factors(self, votes: sp.csr_matrix, start: int, stop: int) -> np.ndarray:
        """(stop - start, K) the factor each of the votes ``start:stop`` of ``votes`` put on
        its item's class posterior
        (:meth:`~crowd_keras.aggregation.base.LabelModel.own_vote_factors`), each row over its
        maximum.

        The E-step scores subtype m of class k with ``s_ikm = E[log τ_k] + E[log π_km] +
        Σ_{a: y_ia = l} E[log v_akml]`` (Li et al. 2019, section 4) and ``q_i(k) = Σ_m
        q_ikm``, so vote ``(i, a, l)`` multiplied class k by ``Σ_m e^{s_ikm} / Σ_m
        e^{s_ikm − E[log v_akml]}``: a per-subtype factor, not one of ``confusion_matrices_``
        (the subtype mixture's marginal ``E[v]``). The scores are the E-step's logits,
        recomputed for the votes' items (the item's own log-prior adds alike to every
        subtype of a class and cancels)."""
        if getattr(self, "labeling_function_model_", None) is not None:
            return super().own_vote_factors(votes, start, stop)   # the abstain-aware model's
        self._check_fitted()
        bias, log_v, live = self.state_[:3]
        classes = live // self.num_groups
        first = np.flatnonzero(np.r_[True, classes[1:] != classes[:-1]])   # one per class
        out = np.ones((stop - start, self.n_classes_))
        step = max(1, _FACTOR_CELLS // len(live))     # (votes, S) blocks bound the memory
        for lo in range(start, stop, step):
            hi = min(lo + step, stop)
            rows = stored_rows(votes, lo, hi)
            scores = np.asarray(votes[rows[0]:rows[-1] + 1] @ log_v)[rows - rows[0]]
            scores += bias                                              # (n, S) s_ikm
            with_vote = _class_log_sums(scores, first)
            scores -= log_v[votes.indices[lo:hi]]
            with np.errstate(invalid="ignore"):    # a class an empirical prior gives no mass
                factor = with_vote - _class_log_sums(scores, first)
            factor[np.isnan(factor)] = -np.inf                          # q_i(k) = 0 there
            factor -= factor.max(axis=1, keepdims=True)
            out[lo - start:hi - start, classes[first]] = np.exp(factor)
        return out

    def subtype_posteriors(self, latent: tuple) -> np.ndarray:
        """(I, K, M) ``q(z_i = k, g_i = m)`` (0 for dropped subtypes) from a latent."""
        values, live = np.concatenate(row_blocks(latent[0])), latent[1]
        full = np.zeros((len(values), self.n_classes_ * self.num_groups))
        full[:, live] = values
        return full.reshape(len(values), self.n_classes_, self.num_groups)

    def _set_parameters(self, state: tuple, summary: Summary) -> None:
        _, log_v, live, eta, nu, mu, alpha = state
        k, m = self.n_classes_, self.num_groups
        self.class_priors_ = nu / nu.sum()
        weights = eta / eta.sum(axis=1, keepdims=True)
        self.subtype_weights_ = weights
        self.live_subtypes_ = np.zeros((k, m), dtype=bool)
        self.live_subtypes_.ravel()[live] = True
        # Σ_m E[π_km] E[v_akm·]; a dropped subtype's q(v) is its prior
        rows = mu / mu.sum(axis=1, keepdims=True)                       # E[v] at [a, l, s]
        prior = confusion_prior(k, self.a_v, self.b_v)
        prior /= prior.sum(axis=1, keepdims=True)
        dropped = np.where(self.live_subtypes_, 0.0, weights).sum(axis=1)
        of_class = (live // m)[:, None] == np.arange(k)[None, :]          # (S, K)
        live_part = ((rows * weights.ravel()[live]) @ of_class).transpose(0, 2, 1)
        self.confusion_matrices_ = live_part + dropped[None, :, None] * prior[None]
        # evidence lower bound: the last E-step's Σ_i log Z_i (the expected log joint of the
        # labels and q(z, g) plus its entropy) less the KL of q(τ), q(π), q(v) from their
        # priors (a dropped subtype's q(v) is its prior: no KL)
        _check_named((alpha <= 0) & (nu > 0))          # the Dask path's check (fit checks first)
        # an empirical prior gives a class that no vote names no mass (α_k = ν_k = 0): both
        # Dirichlets lie on the face τ_k = 0, and the KL is the one over the other classes
        named = (alpha > 0) | (nu > 0)
        self.elbo_ = float(self.objective_[-1]) * self.objective_scale(summary) \
            - dirichlet_kl(nu[named], alpha[named], 0) \
            - dirichlet_kl(eta, self.a_pi / m, 1) \
            - dirichlet_kl(mu, confusion_prior(k, self.a_v, self.b_v)[:, live // m][None], 1,
                           log_v.reshape(mu.shape))
