"""Annotator groups instead of one matrix per annotator (Mena & Ñanculef 2019, "CMM").

The crowd is explained by ``M`` group confusion matrices ``β_m`` (rows = true class) and
mixing weights ``α`` (paper Eqs. 1-3, Table 1), so the parameters do not grow with the
number of annotators. This module holds the feature-free label model and the numpy EM
pieces that :class:`crowd_keras.training.mixture_em.MixtureOfGroupsEM` reuses with a
classifier. Without features the classifier ``f(x_i)`` of the paper is replaced by a latent
true class per item with prior ``ρ`` (the Dawid-Skene story), shared by the item's labels.

Two scenarios (paper section 2):

* ``"global"``: who gave which label is unknown (or ignored); only the label counts
  ``r_ij`` of each item matter. Each *annotation* draws its group ``g ~ α`` and its label
  ``y ~ β_g[z_i]``. Exact EM over ``(z_i, g)`` on the counts (Eqs. 5-6; the E-step
  ``q(m | k, j) = α_m β_m[k, j] / Σ_m' α_m' β_m'[k, j]`` is the paper's ``q_ij(m, k)`` given
  the class). Note the likelihood depends on ``Σ_m α_m β_m`` only: the split into groups
  comes from the K-means initialisation, as in the paper.
* ``"individual"``: each *annotator* belongs to one group, ``g_a ~ α`` (the authors' later
  "C-MoA" idea; community Dawid-Skene). Mean-field EM with ``q(z_i) q(g_a)``; an annotator
  with few labels keeps a membership close to ``α`` and borrows strength from its group.
  At convergence a group is dropped (its annotators re-assigned to the others) when that
  raises the evidence with the matrices integrated out (Dirichlet-multinomial, the Bayes
  factor of M − 1 against M groups), so a surplus group ends with ``α = 0``.

Both start from soft majority vote and a K-means clustering (numpy, k-means++) of the
annotations (global: each label's disagreement with the soft vote, as in the authors'
code) or of the annotators (individual: their smoothed majority-vote confusion matrices),
and run several restarts, keeping the best objective. Every step is a sparse product over
the annotations: cost O(annotations × M × K) per iteration, no Python loop over
annotations or annotators.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import gammaln

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..progress import progress_bar
from .base import LabelModel, as_annotations

__all__ = ["MixtureOfGroupsModel", "counts_to_annotations", "group_probabilities", "kmeans",
           "SCENARIOS"]

SCENARIOS = ("individual", "global")
_LOG_TINY = -745.0  # log of the smallest positive double: stands in for log(0)


# ---------------------------------------------------------------------------- helpers
def safe_log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), _LOG_TINY)


def softmax_rows(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row softmax and row log-sum-exp of ``logits`` (n, c)."""
    top = logits.max(axis=1, keepdims=True)
    p = np.exp(logits - top)
    total = p.sum(axis=1, keepdims=True)
    p /= total
    return p, top[:, 0] + np.log(total[:, 0])


def _normalize(counts: np.ndarray, axis: int = -1) -> np.ndarray:
    total = counts.sum(axis=axis, keepdims=True)
    k = counts.shape[axis]
    return np.divide(counts, total, out=np.full_like(counts, 1.0 / k), where=total > 0)


def summing_matrix(rows: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """(n_rows, len(rows)) 0/1 matrix: ``S @ v`` sums per-annotation values into ``rows``."""
    n = len(rows)
    return sp.csr_matrix((np.ones(n), (rows, np.arange(n))), shape=(n_rows, n))


def soft_vote(counts: np.ndarray) -> np.ndarray:
    """Soft majority vote from (items, K) counts; unlabelled items get the vote frequencies."""
    votes = counts.sum(axis=0)
    k = counts.shape[1]
    fallback = votes / votes.sum() if votes.sum() > 0 else np.full(k, 1.0 / k)
    total = counts.sum(axis=1, keepdims=True)
    return np.where(total > 0, counts / np.maximum(total, 1e-300), fallback)


def kmeans(points: np.ndarray, n_clusters: int, weights: Optional[np.ndarray] = None,
           n_init: int = 3, max_iter: int = 100, seed: Optional[int] = None) -> np.ndarray:
    """Weighted K-means (k-means++ seeding, Lloyd iterations), numpy only.

    Args:
        points: (n, d); weights: (n,) non-negative (default ones); n_init: seedings tried,
        the lowest weighted inertia wins.

    Returns:
        (n,) cluster index per point, in ``0..n_clusters-1`` (a cluster may stay empty
        when there are fewer distinct points than clusters).
    """
    x = np.asarray(points, dtype=np.float64)
    n = len(x)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    c = int(n_clusters)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if c <= 1:
        return np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    sq = np.einsum("nd,nd->n", x, x)
    best_labels, best_inertia = None, np.inf
    for _ in range(max(int(n_init), 1)):
        centres = _kmeanspp(x, sq, w, c, rng)
        labels = None
        for _ in range(int(max_iter)):
            d = sq[:, None] - 2.0 * x @ centres.T + np.einsum("cd,cd->c", centres, centres)[None]
            new = np.argmin(d, axis=1)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            onehot = sp.csr_matrix((w, (labels, np.arange(n))), shape=(c, n))
            mass = np.asarray(onehot.sum(axis=1)).ravel()
            sums = onehot @ x
            filled = mass > 0
            centres[filled] = sums[filled] / mass[filled, None]
        d = sq[:, None] - 2.0 * x @ centres.T + np.einsum("cd,cd->c", centres, centres)[None]
        inertia = float((w * np.maximum(d[np.arange(n), labels], 0.0)).sum())
        if inertia < best_inertia:
            best_labels, best_inertia = labels, inertia
    return best_labels.astype(np.int64)


def _kmeanspp(x: np.ndarray, sq: np.ndarray, w: np.ndarray, c: int,
              rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding (D² sampling, weighted); loops over the c clusters only."""
    n = len(x)
    p = w / w.sum() if w.sum() > 0 else np.full(n, 1.0 / n)
    centres = [x[rng.choice(n, p=p)]]
    dist = np.maximum(sq - 2.0 * x @ centres[0] + centres[0] @ centres[0], 0.0)
    for _ in range(1, c):
        score = w * dist
        total = score.sum()
        idx = rng.choice(n, p=score / total) if total > 0 else rng.integers(n)
        centres.append(x[idx])
        dist = np.minimum(dist, np.maximum(sq - 2.0 * x @ x[idx] + x[idx] @ x[idx], 0.0))
    return np.array(centres)


def _standardize(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    mean = np.average(x, axis=0, weights=w)
    std = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=w))
    return (x - mean) / np.where(std > 0, std, 1.0)


# ---------------------------------------------------------------------------- global EM
class GlobalEM:
    """Numpy pieces of the global-scenario EM on label counts (paper Eqs. 4-6).

    Observed label pairs ``(i, j)`` with count ``r_ij > 0`` are kept as flat arrays, so
    memory is O(pairs × M × K), independent of the number of annotators.
    """

    def __init__(self, counts: np.ndarray, num_groups: int, smoothing: float) -> None:
        counts = np.asarray(counts, dtype=np.float64)
        self.counts = counts
        self.n_items, self.k = counts.shape
        self.m = int(num_groups)
        self.smoothing = float(smoothing)
        self.pair_items, self.pair_labels = np.nonzero(counts)
        self.pair_counts = counts[self.pair_items, self.pair_labels]
        n_pairs = len(self.pair_items)
        # Y: (K labels, pairs) scatters per-pair values into label columns.
        self.Y = sp.csr_matrix((np.ones(n_pairs), (self.pair_labels, np.arange(n_pairs))),
                               shape=(self.k, n_pairs))
        self.S_items = summing_matrix(self.pair_items, self.n_items)

    # -- initialisation: K-means over annotations (authors' "mv_close" representation)
    def kmeans_groups(self, mv: np.ndarray, seed: Optional[int]) -> np.ndarray:
        """(pairs, M) hard group of each observed label from K-means.

        Each label ``j`` on item ``i`` is described by the soft vote of ``i`` with class ``j``
        zeroed: the consensus mass that disagrees with the label (the authors' code uses
        the cross-entropy ``-mv_i log onehot_j``, the same direction).
        """
        feats = mv[self.pair_items].copy()
        feats[np.arange(len(feats)), self.pair_labels] = 0.0
        feats = _standardize(feats, self.pair_counts)
        labels = kmeans(feats, self.m, weights=self.pair_counts, seed=seed)
        return np.eye(self.m)[labels]

    # -- M-step (Eq. 6) from per-pair joint responsibilities q (pairs, M, K)
    def m_step(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``α`` (M,), ``β`` (M, K, K) and the raw expected counts (M, K, K)."""
        weighted = q * self.pair_counts[:, None, None]
        raw = np.asarray(self.Y @ weighted.reshape(len(q), -1)).reshape(self.k, self.m, self.k)
        raw = raw.transpose(1, 2, 0)                                     # (m, true k, label j)
        alpha = raw.sum(axis=(1, 2))
        alpha = alpha / alpha.sum()
        beta = _normalize(raw + self.smoothing)
        return alpha, beta, raw

    def joint(self, prior: np.ndarray, alpha: np.ndarray,
              beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """E-step: ``q_ij(m, k) ∝ β_m[k, j] f_k(x_i) α_m`` per pair, and ``N_ij`` (pairs,).

        ``prior`` is (items, K): the classifier's ``f(x_i)`` (paper) or item posteriors.
        """
        b = beta.transpose(2, 0, 1)[self.pair_labels]                   # (pairs, M, K)
        q = b * alpha[None, :, None] * prior[self.pair_items][:, None, :]
        norm = q.sum(axis=(1, 2))
        q /= np.maximum(norm, 1e-300)[:, None, None]
        return q, norm

    def log_likelihood(self, norm: np.ndarray) -> float:
        """Eq. 4 without the multinomial constant: ``Σ_ij r_ij log N_ij``."""
        return float((self.pair_counts * safe_log(norm)).sum())

    def consensus(self, q: np.ndarray) -> np.ndarray:
        """``r̄_ik = Σ_j r_ij q_ij(·, k)`` (items, K), the classifier's target (Eq. 7)."""
        return np.asarray(self.S_items @ (q.sum(axis=1) * self.pair_counts[:, None]))

    # -- latent-class variant (no features): z_i shared by the item's labels
    def item_posteriors(self, log_prior: np.ndarray, alpha: np.ndarray,
                        beta: np.ndarray) -> tuple[np.ndarray, float]:
        """``q(z_i) ∝ prior_ik Π_j B_kj^{r_ij}``, ``B = Σ_m α_m β_m``; and the log-likelihood.

        ``log_prior`` is (K,) (label model: log ρ) or (items, K) (trainer: log f(x_i)).
        """
        big_b = np.einsum("m,mkj->kj", alpha, beta)
        logits = self.counts @ safe_log(big_b).T + np.atleast_2d(log_prior)
        post, lse = softmax_rows(logits)
        return post, float(lse.sum())

    def latent_class_joint(self, post: np.ndarray, alpha: np.ndarray,
                           beta: np.ndarray) -> np.ndarray:
        """Per pair ``q(m, k) = q(z_i = k) α_m β_m[k, j] / B_kj`` (pairs, M, K)."""
        big_b = np.einsum("m,mkj->kj", alpha, beta)
        resp = alpha[:, None, None] * beta / np.maximum(big_b, 1e-300)[None]   # (m, k, j)
        return resp.transpose(2, 0, 1)[self.pair_labels] * post[self.pair_items][:, None, :]


# ---------------------------------------------------------------------------- individual EM
class IndividualEM:
    """Numpy pieces of the mean-field EM with one group per annotator.

    ``q(z_i = k) ∝ prior_ik exp(Σ_{(i,a,y)} Σ_m q(g_a = m) log β_m[k, y])`` and
    ``q(g_a = m) ∝ α_m exp(Σ_{(i,a,y)} Σ_k q(z_i = k) log β_m[k, y])``; the M-step
    re-estimates ``α`` (share of annotators), ``β`` (expected counts + ``smoothing``).
    Sums over the annotations are sparse products.
    """

    def __init__(self, ann: Annotations, num_groups: int, smoothing: float) -> None:
        self.ann = ann
        self.k, self.m = ann.n_classes, int(num_groups)
        self.smoothing = float(smoothing)
        n = ann.n_annotations
        self.S_items = summing_matrix(ann.items, ann.n_items)
        self.S_annotators = summing_matrix(ann.annotators, ann.n_annotators)
        self.Y = sp.csr_matrix((np.ones(n), (ann.labels, np.arange(n))), shape=(self.k, n))
        self.active = ann.annotations_per_annotator() > 0

    def kmeans_groups(self, post: np.ndarray, seed: Optional[int],
                      strength: float = 2.0) -> np.ndarray:
        """(annotators, M) hard groups from K-means on smoothed majority-vote confusions.

        Each annotator's rows ``Σ_i q(z_i=k) [y=j]`` are shrunk toward the crowd's matrix
        with ``strength`` pseudo-labels per row (few labels: close to the crowd), flattened,
        and clustered with weights = number of labels (the authors' ``"flatten"`` option).
        """
        ann, k = self.ann, self.k
        rows = sp.csr_matrix((np.ones(ann.n_annotations),
                              (ann.annotators * k + ann.labels, np.arange(ann.n_annotations))),
                             shape=(ann.n_annotators * k, ann.n_annotations))
        counts = np.asarray(rows @ post[ann.items]).reshape(ann.n_annotators, k, k)
        counts = counts.transpose(0, 2, 1)                              # (a, true, label)
        crowd = _normalize(counts.sum(axis=0))
        prof = (counts + strength * crowd) / (counts.sum(axis=2, keepdims=True) + strength)
        memberships = np.zeros((ann.n_annotators, self.m))
        act = np.flatnonzero(self.active)
        weights = ann.annotations_per_annotator()[act]
        labels = kmeans(prof[act].reshape(len(act), -1), self.m, weights=weights, seed=seed)
        memberships[act, labels] = 1.0
        return memberships

    def m_step(self, post: np.ndarray, groups: np.ndarray) -> tuple:
        """``α`` (M,), ``β`` (M, K, K) and raw expected counts (M, K, K) from q(z), q(g)."""
        ann = self.ann
        g = groups[ann.annotators]                                      # (n, M)
        z = post[ann.items]                                             # (n, K)
        joint = (g[:, :, None] * z[:, None, :]).reshape(len(g), -1)
        raw = np.asarray(self.Y @ joint).reshape(self.k, self.m, self.k).transpose(1, 2, 0)
        alpha = groups[self.active].sum(axis=0)
        alpha = alpha / alpha.sum()
        beta = _normalize(raw + self.smoothing)
        return alpha, beta, raw

    def label_log_beta(self, beta: np.ndarray) -> np.ndarray:
        return safe_log(beta).transpose(2, 0, 1)[self.ann.labels]       # (n, M, K)

    def group_step(self, post: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                   lb: Optional[np.ndarray] = None) -> np.ndarray:
        """q(g_a) (annotators, M); annotators without labels get ``α``."""
        lb = self.label_log_beta(beta) if lb is None else lb
        per = np.einsum("nk,nmk->nm", post[self.ann.items], lb)
        logits = np.asarray(self.S_annotators @ per) + safe_log(alpha)[None, :]
        groups, _ = softmax_rows(logits)
        groups[~self.active] = alpha
        return groups

    def item_step(self, log_prior: np.ndarray, groups: np.ndarray, beta: np.ndarray,
                  lb: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
        """q(z_i) (items, K) and the per-item log normaliser (items,).

        ``log_prior`` is (K,) (label model: log ρ) or (items, K) (trainer: log f(x_i)).
        """
        lb = self.label_log_beta(beta) if lb is None else lb
        per = np.einsum("nm,nmk->nk", groups[self.ann.annotators], lb)
        logits = np.asarray(self.S_items @ per) + np.atleast_2d(log_prior)
        return softmax_rows(logits)

    def elbo(self, lse: np.ndarray, groups: np.ndarray, alpha: np.ndarray) -> float:
        """Mean-field bound: ``Σ_i lse_i + Σ_a Σ_m q(g_a=m) (log α_m − log q(g_a=m))``."""
        g = groups[self.active]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(g > 0, g * (safe_log(alpha)[None, :] - np.log(g)), 0.0)
        return float(lse.sum() + terms.sum())


def _dirichlet_evidence(counts: np.ndarray, c: float = 1.0) -> float:
    """Σ over rows of log Dirichlet-multinomial evidence of ``counts`` (..., K), prior ``c``."""
    k = counts.shape[-1]
    return float((gammaln(counts + c).sum(axis=-1) - gammaln(counts.sum(axis=-1) + k * c)
                  + gammaln(k * c) - k * gammaln(c)).sum())


def _assignment_evidence(sizes: np.ndarray, gamma: float = 1.0) -> float:
    """Log Dirichlet-multinomial probability of group sizes (soft counts) over len(sizes) groups."""
    m = len(sizes)
    return float(gammaln(m * gamma) - gammaln(sizes.sum() + m * gamma)
                 + (gammaln(sizes + gamma) - gammaln(gamma)).sum())


def collapsed_evidence(raw: np.ndarray, groups: np.ndarray, active: np.ndarray) -> float:
    """Log evidence of a grouping with ``β`` integrated out (uniform Dirichlet priors).

    ``Σ_m`` Dirichlet-multinomial evidence of group ``m``'s expected counts ``raw[m]``
    (K, K) plus that of the annotators' group sizes (empty groups are not counted).
    """
    sizes = groups[active].sum(axis=0)
    live = sizes > 1e-9
    return _dirichlet_evidence(raw[live]) + _assignment_evidence(sizes[live])


def best_removal(em: "IndividualEM", post: np.ndarray, alpha: np.ndarray,
                 beta: np.ndarray) -> Optional[np.ndarray]:
    """Memberships without the group whose removal most raises the collapsed evidence.

    For each non-empty group, its annotators are re-assigned among the others (an E-step
    with that group's ``α`` set to 0) and the collapsed evidence of the result is compared
    with keeping all groups (the Bayes factor of ``M − 1`` against ``M`` groups). Returns
    the new memberships, or None when every group is worth keeping. Loops over groups only.
    """
    lb = em.label_log_beta(beta)
    groups = em.group_step(post, alpha, beta, lb)
    best = collapsed_evidence(em.m_step(post, groups)[2], groups, em.active)
    choice = None
    for m in np.flatnonzero(alpha > 1e-9):
        if (alpha > 1e-9).sum() < 2:
            break
        reduced = alpha.copy()
        reduced[m] = 0.0
        reduced /= reduced.sum()
        candidate = em.group_step(post, reduced, beta, lb)
        evidence = collapsed_evidence(em.m_step(post, candidate)[2], candidate, em.active)
        if evidence > best:
            best, choice = evidence, candidate
    return choice


def group_probabilities(ann: Annotations, truth: np.ndarray, alpha: np.ndarray,
                        beta: np.ndarray) -> np.ndarray:
    """Section 3.4: ``p(g=m | a) ∝ α_m Π_{(i,a,y)} Σ_k t_ik β_m[k, y]``, (annotators, M).

    Args:
        ann: the annotations (any annotators); truth: (items, K) truth distribution ``t`` of
        its items (a classifier's ``p(z|x)`` or item posteriors); alpha (M,); beta (M, K, K).

    All of an annotator's labels are assumed to come from one group. Annotators without
    labels get ``α``.
    """
    lik = np.einsum("nk,nmk->nm", truth[ann.items], beta.transpose(2, 0, 1)[ann.labels])
    logits = np.asarray(summing_matrix(ann.annotators, ann.n_annotators) @ safe_log(lik))
    groups, _ = softmax_rows(logits + safe_log(alpha)[None, :])
    groups[ann.annotations_per_annotator() == 0] = alpha
    return groups


# ---------------------------------------------------------------------------- label model
class MixtureOfGroupsModel(LabelModel):
    """Feature-free mixture of annotator groups (CMM label model, paper Eqs. 1-6, section 3.4).

    Args:
        num_groups: ``M`` group confusion matrices (paper: 3 on LabelMe).
        scenario: ``"individual"`` (default; one group per annotator, see the module doc)
            or ``"global"`` (annotator identity ignored, only label counts per item).
            :meth:`fit_counts` always fits the global scenario.
        max_iter, tol: EM stops when the objective per annotation changes by less than tol.
        smoothing: Dirichlet pseudo-count added to every group-confusion cell and the prior.
        restarts: EM runs from different K-means seedings; the best objective is kept.
        prune_groups: individual scenario: drop a group when the data are better explained
            without it (collapsed Dirichlet evidence); its annotators join the other groups.
        seed: seeds K-means.
        progress: progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default): when most votes come from annotators that
            only ever vote one class (Snorkel labeling functions, abstentions dropped), every
            grouping explains them with uninformative rows and the posteriors fall to the
            class prior (0.48 on WRENCH youtube); :meth:`fit` then delegates to
            :class:`AbstainAwareDawidSkene` (``regime_`` says which ran; the group
            attributes are then absent). ``"ignore"``: always fit the mixture.

    Attributes (after fit):
        posteriors_ (items, K); class_priors_ (K,); mixing_coefficients_ ``α`` (M,);
        group_confusions_ ``β`` (M, K, K), rows = true class; memberships_ ``p(g|a)``
        (annotators, M); confusion_matrices_ ``Σ_m p(g=m|a) β_m`` (annotators, K, K);
        global_confusion_ ``Σ_m α_m β_m`` (K, K); scenario_; objective_ (best restart:
        log-likelihood, global, or mean-field bound, individual); log_likelihood_ (its
        history per annotation); n_iter_; restart_objectives_.
    """

    def __init__(self, num_groups: int = 3, scenario: str = "individual", max_iter: int = 100,
                 tol: float = 1e-6, smoothing: float = 1.0, restarts: int = 3,
                 prune_groups: bool = True, seed: Optional[int] = 0,
                 progress: bool = False, labeling_functions: str = "auto") -> None:
        self.num_groups = num_groups
        self.scenario = scenario
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.restarts = restarts
        self.prune_groups = prune_groups
        self.seed = seed
        self.progress = progress
        self.labeling_functions = labeling_functions

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        if int(self.num_groups) != self.num_groups or self.num_groups < 1:
            raise ValueError(f"num_groups must be a positive integer, got {self.num_groups!r}")
        if self.scenario not in SCENARIOS:
            raise ValueError(f"scenario must be one of {SCENARIOS}, got {self.scenario!r}")
        if int(self.restarts) < 1:
            raise ValueError(f"restarts must be at least 1, got {self.restarts!r}")
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be non-negative, got {self.smoothing!r}")

    # ------------------------------------------------------------------ fitting
    def fit(self, annotations: Any, **kwargs: Any) -> "MixtureOfGroupsModel":
        """Fit on annotations (``Annotations``, dense items × annotators matrix, long frame)."""
        self._check_params()
        ann = as_annotations(annotations, **kwargs)
        if self._fit_labeling_functions(ann, max_iter=self.max_iter):
            return self
        return self._fit(ann, self.scenario)

    def fit_counts(self, counts: Any, classes: Optional[Sequence] = None) -> "MixtureOfGroupsModel":
        """Fit the global scenario on label counts per item (items × classes).

        Without annotator identity the ``k``-th label of an item is credited to a
        pseudo-annotator ``"slot-k"``, so ``annotations_`` and ``annotator_quality_`` still
        have the common shape (each pseudo-annotator gets the crowd's matrix).
        """
        self._check_params()
        self.regime_, self.delegate_ = "crowd", None
        return self._fit(counts_to_annotations(counts, classes), "global")

    def _fit(self, ann: Annotations, scenario: str) -> "MixtureOfGroupsModel":
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        runs = []
        for r in range(int(self.restarts)):
            seed = None if self.seed is None else int(self.seed) + r
            run = (self._fit_individual(ann, seed, r) if scenario == "individual"
                   else self._fit_global(ann, seed, r))
            runs.append(run)
        best = max(runs, key=lambda run: run["objective"])
        self.restart_objectives_ = np.array([run["objective"] for run in runs])
        self.annotations_ = ann
        self.scenario_ = scenario
        self.posteriors_ = best["post"]
        self.class_priors_ = best["rho"]
        self.mixing_coefficients_ = best["alpha"]
        self.group_confusions_ = best["beta"]
        self.global_confusion_ = np.einsum("m,mkj->kj", best["alpha"], best["beta"])
        self.objective_ = best["objective"]
        self.log_likelihood_ = np.asarray(best["history"])
        self.n_iter_ = len(best["history"])
        if scenario == "individual":
            self.memberships_ = best["groups"]
        else:
            self.memberships_ = self._section34(ann, self.posteriors_)
        self.confusion_matrices_ = np.einsum("am,mkj->akj", self.memberships_,
                                             self.group_confusions_)
        return self

    def _bar(self, restart: int) -> Any:
        return progress_bar(range(int(self.max_iter)), desc=f"MixtureOfGroups EM #{restart + 1}",
                            disable=not self.progress)

    def _rho(self, post: np.ndarray) -> np.ndarray:
        rho = post.sum(axis=0) + self.smoothing
        return rho / rho.sum()

    def _fit_global(self, ann: Annotations, seed: Optional[int], restart: int) -> dict:
        em = GlobalEM(ann.label_counts(), self.num_groups, self.smoothing)
        post = soft_vote(em.counts)
        q = em.kmeans_groups(post, seed)[:, :, None] * post[em.pair_items][:, None, :]
        history, prev = [], -np.inf
        bar = self._bar(restart)
        for _ in bar:
            alpha, beta, _ = em.m_step(q)                                   # Eq. 6
            rho = self._rho(post)
            post, ll = em.item_posteriors(np.log(rho), alpha, beta)        # E-step (z)
            q = em.latent_class_joint(post, alpha, beta)                   # E-step (m, k)
            obj = (ll + self.smoothing * (safe_log(beta).sum() + np.log(rho).sum())) \
                / ann.n_annotations
            history.append(obj)
            bar.set_postfix(objective=f"{obj:.6f}")
            if abs(obj - prev) < self.tol:
                break
            prev = obj
        bar.close()
        return dict(post=post, rho=rho, alpha=alpha, beta=beta, objective=history[-1],
                    history=history)

    def _fit_individual(self, ann: Annotations, seed: Optional[int], restart: int) -> dict:
        em = IndividualEM(ann, self.num_groups, self.smoothing)
        post = soft_vote(ann.label_counts())
        groups = em.kmeans_groups(post, seed)
        history, prev = [], -np.inf
        bar = self._bar(restart)
        for _ in bar:
            alpha, beta, _ = em.m_step(post, groups)
            rho = self._rho(post)
            lb = em.label_log_beta(beta)
            groups = em.group_step(post, alpha, beta, lb)
            post, lse = em.item_step(np.log(rho), groups, beta, lb)
            prior = self.smoothing * (safe_log(beta).sum() + np.log(rho).sum())
            obj = (em.elbo(lse, groups, alpha) + prior) / ann.n_annotations
            history.append(obj)
            bar.set_postfix(objective=f"{obj:.6f}", groups=int((alpha > 1e-9).sum()))
            if abs(obj - prev) < self.tol:
                fewer = best_removal(em, post, alpha, beta) if self.prune_groups else None
                if fewer is None:
                    break
                groups, prev = fewer, -np.inf
                continue
            prev = obj
        bar.close()
        alpha, beta, _ = em.m_step(post, groups)
        return dict(post=post, rho=self._rho(post), alpha=alpha, beta=beta, groups=groups,
                    objective=history[-1], history=history)

    # ------------------------------------------------------------------ section 3.4
    def _section34(self, ann: Annotations, truth: np.ndarray) -> np.ndarray:
        return group_probabilities(ann, truth, self.mixing_coefficients_, self.group_confusions_)

    def _check_classes(self, new: Annotations) -> None:
        if not np.array_equal(new.classes, self.annotations_.classes):
            raise CrowdDataError(f"classes {list(new.classes)} differ from the fitted classes "
                                 f"{list(self.annotations_.classes)}")

    def _infer(self, new: Annotations, n_iter: int = 50) -> tuple[np.ndarray, np.ndarray]:
        """Item posteriors and memberships for new annotations (unknown annotators allowed).

        Annotators labelled in fit keep their fitted membership; the others (unknown ids,
        or ids without labels in fit) start at ``α`` and are updated by mean-field steps
        with the fitted ``α, β, ρ`` held fixed.
        """
        self._check_classes(new)
        log_rho = np.log(self.class_priors_)
        beta, alpha = self.group_confusions_, self.mixing_coefficients_
        if self.scenario_ == "global":
            em = GlobalEM(new.label_counts(), beta.shape[0], 0.0)
            post, _ = em.item_posteriors(log_rho, alpha, beta)
            return post, self._section34(new, post)
        codes = self._known_codes(new)
        # "known": labelled in fit; annotators listed but silent in fit are placed like new ones
        fitted_active = self.annotations_.annotations_per_annotator() > 0
        known = (codes >= 0) & fitted_active[np.maximum(codes, 0)]
        groups = np.tile(alpha, (new.n_annotators, 1))
        groups[known] = self.memberships_[codes[known]]
        em = IndividualEM(new, beta.shape[0], 0.0)
        lb = em.label_log_beta(beta)
        post, _ = em.item_step(log_rho, groups, beta, lb)
        if known.all():
            return post, groups
        for _ in range(int(n_iter)):
            fresh = em.group_step(post, alpha, beta, lb)
            change = np.abs(fresh[~known] - groups[~known]).max()
            groups[~known] = fresh[~known]
            post, _ = em.item_step(log_rho, groups, beta, lb)
            if change < 1e-6:
                break
        return post, groups

    def _known_codes(self, new: Annotations) -> np.ndarray:
        return pd.Index(self.annotations_.annotator_ids).get_indexer(new.annotator_ids)

    def predict_proba(self, annotations: Any = None) -> np.ndarray:
        """Items × classes posteriors; new annotations may come from unseen annotators.

        Unseen annotators are placed in the groups by their labels (section 3.4, mean-field
        with the fitted parameters fixed), so they count as much as their group deserves.
        """
        self._check_fitted()
        if annotations is None:
            return self.posteriors_.copy()
        if getattr(self, "delegate_", None) is not None:
            return self.delegate_.predict_proba(annotations)
        post, _ = self._infer(as_annotations(annotations))
        return post

    def group_probabilities(self, annotations: Any = None,
                            item_posteriors: Optional[np.ndarray] = None) -> np.ndarray:
        """``p(g | a)`` for the annotators of ``annotations``: (annotators, M) (section 3.4).

        Args:
            annotations: any annotations with the fitted classes; annotators may be new.
                ``None``: the fitted annotators (``memberships_``).
            item_posteriors: optional (items, K) truth distribution of ``annotations``' items
                (e.g. a classifier's ``p(z|x)``); then ``p(g=m|a) ∝ α_m Π Σ_k t_ik β_m[k, y]``
                exactly as in section 3.4. Default: the model's own item posteriors.

        Rows follow ``annotations.annotator_ids``; annotators without labels get ``α``.
        """
        self._check_fitted()
        self._refuse_if_delegated("there are no groups")
        if annotations is None:
            return self.memberships_.copy()
        new = as_annotations(annotations)
        if item_posteriors is not None:
            self._check_classes(new)
            t = np.asarray(item_posteriors, dtype=np.float64)
            if t.shape != (new.n_items, new.n_classes):
                raise CrowdDataError(f"item_posteriors must be (items={new.n_items}, classes="
                                     f"{new.n_classes}), got {t.shape}")
            return self._section34(new, t)
        return self._infer(new)[1]

    def annotator_confusions(self, annotations: Any = None,
                             item_posteriors: Optional[np.ndarray] = None) -> np.ndarray:
        """Each annotator's implied matrix ``Σ_m p(g=m|a) β_m``: (annotators, K, K)."""
        return np.einsum("am,mkj->akj", self.group_probabilities(annotations, item_posteriors),
                         self.group_confusions_)


def counts_to_annotations(counts: Any, classes: Optional[Sequence] = None) -> Annotations:
    """Annotations from (items, K) label counts: the ``k``-th label of an item goes to "slot-k".

    Raises:
        CrowdDataError: not a 2-D array of non-negative integer counts.
    """
    r = np.asarray(counts)
    if r.ndim != 2:
        raise CrowdDataError(f"label counts must be a 2-D items × classes array, got shape "
                             f"{r.shape}")
    if r.dtype.kind not in "iuf" or (r.dtype.kind == "f" and not np.isfinite(r).all()):
        bad = "non-numeric" if r.dtype.kind not in "iuf" else "non-finite"
        raise CrowdDataError(f"label counts must be finite numbers; got {bad} values")
    if (r < 0).any() or (r != np.round(r)).any():
        pos = tuple(int(p) for p in np.argwhere((r < 0) | (r != np.round(r)))[0])
        raise CrowdDataError(f"label counts must be non-negative integers; got {r[pos]} at "
                             f"(item, class) {pos}")
    r = r.astype(np.int64)
    n, k = r.shape
    if classes is not None and len(classes) != k:
        raise CrowdDataError(f"{len(classes)} classes given for {k} count columns")
    items = np.repeat(np.repeat(np.arange(n), k), r.ravel())
    labels = np.repeat(np.tile(np.arange(k), n), r.ravel())
    starts = np.concatenate([[0], np.cumsum(r.sum(axis=1))[:-1]])
    slots = np.arange(len(items)) - starts[items]
    n_slots = max(int(r.sum(axis=1).max()) if n else 0, 1)
    return Annotations(items, slots, labels, n_items=n,
                       annotator_ids=[f"slot-{s}" for s in range(n_slots)],
                       classes=classes, n_classes=k)
