"""Numpy EM pieces of the mixture of annotator groups (Mena & Ñanculef 2019, "CMM").

Shared by the feature-free :class:`~crowd_keras.mixture_of_groups.label_model.MixtureOfGroupsModel`
and the Keras :class:`~crowd_keras.mixture_of_groups.trainer.MixtureOfGroupsEM`:

* :class:`GlobalEM`: the global scenario on label counts (paper Eqs. 4-6), over the observed
  ``(item, label)`` pairs, so memory does not grow with the number of annotators;
* :class:`IndividualEM`: one group per annotator, mean-field ``q(z_i) q(g_a)``, on the
  annotations of all items; its annotator-level steps are functions of the expected counts
  ``N[a, k, y]`` (sums over items: :func:`kmeans_memberships`, :func:`groups_m_step`,
  :func:`group_posteriors`, :func:`annotator_bound`, :func:`fewer_groups`), which the label
  model's EM-step protocol runs on statistics summed over blocks of items;
* :func:`kmeans` (the authors' K-means initialisation), :func:`best_removal` /
  :func:`fewer_groups` (drop a surplus group by collapsed Dirichlet evidence) and
  :func:`group_probabilities` (section 3.4).

Every step is a sparse product over the annotations: O(annotations × M × K) per iteration,
no Python loop over annotations or annotators.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
from scipy.special import gammaln

from ..annotations import Annotations
from ..aggregation.em import Block
from ..numerics import (annotation_hashes, class_vote_counts, confusion_posteriors, draw_seed,
                        id_keys, keyed_choice, normalize_rows, safe_log, softmax_rows,
                        summing_matrix)

__all__ = ["GlobalEM", "IndividualEM", "kmeans", "best_removal", "fewer_groups",
           "collapsed_evidence", "group_probabilities", "kmeans_memberships", "groups_m_step",
           "group_posteriors", "annotator_log_confusions", "annotator_bound"]


def kmeans(points: np.ndarray, n_clusters: int, weights: Optional[np.ndarray] = None,
           n_init: int = 3, max_iter: int = 100, seed: Optional[int] = None,
           keys: Optional[np.ndarray] = None) -> np.ndarray:
    """Weighted K-means (k-means++ seeding, Lloyd iterations), numpy only.

    Args:
        points: (n, d); weights: (n,) non-negative (default ones); n_init: seedings tried,
        the lowest weighted inertia wins.
        keys: optional (n,) uint64 key of each point (e.g. an annotator's fingerprint): the
            seeding's draws then follow the keys and ``seed``
            (:func:`~crowd_keras.numerics.keyed_choice`), not the points' order; None: draws
            from ``np.random.default_rng(seed)`` over the points in order.

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
    if keys is None:
        rng = np.random.default_rng(seed)

        def choose(p: Optional[np.ndarray], draw: int) -> int:
            return int(rng.integers(n) if p is None else rng.choice(n, p=p / p.sum()))
    else:
        keys, seed = np.asarray(keys, dtype=np.uint64), draw_seed(seed)

        def choose(p: Optional[np.ndarray], draw: int) -> int:
            return keyed_choice(keys, np.ones(n) if p is None else p, seed, draw)
    sq = np.einsum("nd,nd->n", x, x)
    d = np.empty((c, n))
    best_labels, best_inertia = None, np.inf
    for start in range(max(int(n_init), 1)):
        centres = _kmeanspp(x, sq, w, c, choose, start * c)
        labels = None
        for _ in range(int(max_iter)):
            _distances(x, sq, centres, out=d)
            new = _nearest(d)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            onehot = summing_matrix(labels, c, weights=w)
            mass = np.asarray(onehot.sum(axis=1)).ravel()
            sums = onehot @ x
            filled = mass > 0
            centres[filled] = sums[filled] / mass[filled, None]
        _distances(x, sq, centres, out=d)
        inertia = float((w * np.maximum(d[labels, np.arange(n)], 0.0)).sum())
        if inertia < best_inertia:
            best_labels, best_inertia = labels, inertia
    return best_labels.astype(np.int64)


def _distances(x: np.ndarray, sq: np.ndarray, centres: np.ndarray, out: np.ndarray) -> None:
    """Squared distances ``|x_i|² − 2 x_i·c_j + |c_j|²`` into ``out (c, n)``, clusters
    first: numpy's passes over a (n, c) array with c = 2-8 run an inner loop of c, several
    times slower; the products and their order are those of the (n, c) form."""
    np.multiply((x @ centres.T).T, 2.0, out=out)
    np.subtract(sq, out, out=out)
    out += np.einsum("cd,cd->c", centres, centres)[:, None]


def _nearest(d: np.ndarray) -> np.ndarray:
    """``argmin`` over the clusters of ``d (c, n)`` (the first of equal minima), by one
    comparison per cluster row (an argmin over a c-wide axis is several times slower)."""
    best = d[0].copy()
    labels = np.zeros(d.shape[1], dtype=np.int64)
    for j in range(1, len(d)):
        closer = d[j] < best
        labels[closer] = j
        np.minimum(best, d[j], out=best)
    return labels


def _kmeanspp(x: np.ndarray, sq: np.ndarray, w: np.ndarray, c: int,
              choose: Callable[[Optional[np.ndarray], int], int], draw: int) -> np.ndarray:
    """k-means++ seeding (D² sampling, weighted); loops over the c clusters only.
    ``choose(p, j)``: a point drawn with probability ∝ ``p`` (n,; None: uniform), the
    ``j``-th draw of the fit."""
    n = len(x)
    p = w if w.sum() > 0 else np.ones(n)
    centres = [x[choose(p, draw)]]
    dist = np.maximum(sq - 2.0 * x @ centres[0] + centres[0] @ centres[0], 0.0)
    for j in range(1, c):
        score = w * dist
        idx = choose(score if score.sum() > 0 else None, draw + j)
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

    def __init__(self, counts: np.ndarray, num_groups: int, smoothing: float,
                 item_ids: Optional[np.ndarray] = None) -> None:
        """``counts`` (items, K); ``item_ids`` (items,): the items' ids or keys (the label
        model passes :func:`~crowd_keras.numerics.label_profile_keys` of ``counts``, what
        each item was told): K-means' seeding draws each (item, label) pair from the hash of
        its item's key and label, so that reordering or renaming the items draws the same
        start; None: drawn over the pairs in item-code order."""
        counts = np.asarray(counts, dtype=np.float64)
        self.counts = counts
        self.n_items, self.k = counts.shape
        self.m = int(num_groups)
        self.smoothing = float(smoothing)
        self.pair_items, self.pair_labels = np.nonzero(counts)
        self.pair_counts = counts[self.pair_items, self.pair_labels]
        self.pair_keys = (None if item_ids is None else annotation_hashes(
            id_keys(np.asarray(item_ids), 0)[self.pair_items], self.pair_labels))
        # Y: (K labels, pairs) scatters per-pair values into label columns.
        self.Y = summing_matrix(self.pair_labels, self.k)
        self.S_items = summing_matrix(self.pair_items, self.n_items)

    # -- initialisation: K-means over annotations (authors' "mv_close" representation)
    def kmeans_groups(self, mv: np.ndarray, seed: Optional[int]) -> np.ndarray:
        """(pairs, M) hard group of each observed label from K-means.

        Each label ``j`` on item ``i`` is described by the soft vote of ``i`` with class ``j``
        zeroed: the consensus mass that disagrees with the label (the authors' code uses
        the cross-entropy ``-mv_i log onehot_j``, the same direction).
        """
        # with keys, the pairs are clustered in the order of their keys: the sums of the
        # standardisation and of Lloyd's centres, and so their ties, are those of any order
        order = (np.arange(len(self.pair_items)) if self.pair_keys is None
                 else np.argsort(self.pair_keys, kind="stable"))
        feats = mv[self.pair_items[order]]
        feats[np.arange(len(feats)), self.pair_labels[order]] = 0.0
        feats = _standardize(feats, self.pair_counts[order])
        labels = np.empty(len(order), dtype=np.int64)
        labels[order] = kmeans(feats, self.m, weights=self.pair_counts[order], seed=seed,
                               keys=None if self.pair_keys is None else self.pair_keys[order])
        return np.eye(self.m)[labels]

    # -- M-step (Eq. 6) from per-pair joint responsibilities q (pairs, M, K)
    def m_step(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``α`` (M,), ``β`` (M, K, K) and the raw expected counts (M, K, K)."""
        weighted = q * self.pair_counts[:, None, None]
        raw = np.asarray(self.Y @ weighted.reshape(len(q), -1)).reshape(self.k, self.m, self.k)
        raw = raw.transpose(1, 2, 0)                                     # (m, true k, label j)
        alpha = raw.sum(axis=(1, 2))
        alpha = alpha / alpha.sum()
        beta = normalize_rows(raw + self.smoothing)
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
    Every term depends on an annotation through (annotator, label, true class) only, so
    both steps go through Dawid-Skene's statistics: the expected counts
    ``N[a, k, y] = Σ_{i: a said y} q(z_i = k)`` (one sparse product, :meth:`counts`) and
    the item logits ``X @ W`` with ``W[(a, y), k] = Σ_m q(g_a = m) log β_m[k, y]``; the
    rest is O(annotators × M × K²).
    """

    def __init__(self, ann: Annotations, num_groups: int, smoothing: float) -> None:
        self.ann = ann
        self.k, self.m = ann.n_classes, int(num_groups)
        self.smoothing = float(smoothing)
        self.X = ann.vote_incidence()
        self.XT = self.X.T   # a CSC view: its products stream through the items
        self.active = ann.annotations_per_annotator() > 0

    def counts(self, post: np.ndarray) -> np.ndarray:
        """Expected votes ``N[a, k, y]`` (annotators, K true, K label) under item posteriors."""
        return class_vote_counts(self.XT, post, self.ann.n_annotators)

    def kmeans_groups(self, post: np.ndarray, seed: Optional[int],
                      strength: float = 2.0, counts: Optional[np.ndarray] = None) -> np.ndarray:
        """(annotators, M) hard groups from K-means (:func:`kmeans_memberships`, drawn from
        the annotators' fingerprints) on the counts of ``post`` (``counts``: when the caller
        already has them)."""
        counts = self.counts(post) if counts is None else counts        # (a, true, label)
        # items by what they were told, not their ids: renamed items start alike
        keys = Block(self.ann.item_ids, self.X).summary(self.k, fingerprints=True).annotator_keys()
        return kmeans_memberships(counts, self.ann.annotations_per_annotator(), self.m, seed,
                                  strength, keys=keys)

    def m_step(self, post: np.ndarray, groups: np.ndarray,
               counts: Optional[np.ndarray] = None) -> tuple:
        """``α`` (M,), ``β`` (M, K, K) and raw expected counts (M, K, K) from q(z), q(g)
        (:func:`groups_m_step`). ``counts``: :meth:`counts` of ``post`` when the caller
        already has them.
        """
        counts = self.counts(post) if counts is None else counts
        return groups_m_step(counts, groups, self.active, self.smoothing)

    @staticmethod
    def label_log_beta(beta: np.ndarray) -> np.ndarray:
        """``log β`` (M, K, K) with log 0 = ``LOG_TINY``: what the two E-steps use."""
        return safe_log(beta)

    def group_step(self, post: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                   lb: Optional[np.ndarray] = None,
                   counts: Optional[np.ndarray] = None) -> np.ndarray:
        """q(g_a) (annotators, M) (:func:`group_posteriors`)."""
        lb = self.label_log_beta(beta) if lb is None else lb
        counts = self.counts(post) if counts is None else counts
        return group_posteriors(counts, lb, alpha, self.active)

    def item_step(self, log_prior: np.ndarray, groups: np.ndarray, beta: np.ndarray,
                  lb: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
        """q(z_i) (items, K) and the per-item log normaliser (items,).

        ``log_prior`` is (K,) (label model: log ρ) or (items, K) (trainer: log f(x_i)).
        """
        lb = self.label_log_beta(beta) if lb is None else lb
        return confusion_posteriors(self.X, annotator_log_confusions(groups, lb),
                                    np.atleast_2d(log_prior))

    def elbo(self, lse: np.ndarray, groups: np.ndarray, alpha: np.ndarray) -> float:
        """Mean-field bound: ``Σ_i lse_i + Σ_a Σ_m q(g_a=m) (log α_m − log q(g_a=m))``."""
        return float(lse.sum() + annotator_bound(groups, alpha, self.active))


# ------------------------------------------------------- individual EM on summed statistics
# The annotator-level steps read the items only through the expected counts N[a, k, y]
# (sums over items), so they run unchanged on statistics summed over blocks of items.
def kmeans_memberships(counts: np.ndarray, per_annotator: np.ndarray, num_groups: int,
                       seed: Optional[int], strength: float = 2.0,
                       keys: Optional[np.ndarray] = None) -> np.ndarray:
    """(annotators, M) hard groups from K-means on smoothed majority-vote confusions.

    Each annotator's rows ``counts[a] = Σ_i q(z_i=k) [y=j]`` (A, K, K) are shrunk toward the
    crowd's matrix with ``strength`` pseudo-labels per row (few labels: close to the crowd),
    flattened, and clustered with weights = number of labels ``per_annotator`` (A,) (the
    authors' ``"flatten"`` option). Annotators without labels get no group (a zero row).
    ``keys``: (A,) the annotators' fingerprints
    (:meth:`~crowd_keras.aggregation.em.Block.annotator_fingerprints`), which K-means'
    seeding draws from (:func:`kmeans`), so that renaming or reordering the annotators
    gives the same groups; None: drawn over the annotators in code order.
    """
    crowd = normalize_rows(counts.sum(axis=0))
    prof = (counts + strength * crowd) / (counts.sum(axis=2, keepdims=True) + strength)
    memberships = np.zeros((len(per_annotator), int(num_groups)))
    act = np.flatnonzero(np.asarray(per_annotator) > 0)
    labels = kmeans(prof[act].reshape(len(act), -1), int(num_groups),
                    weights=np.asarray(per_annotator)[act], seed=seed,
                    keys=None if keys is None else np.asarray(keys)[act])
    memberships[act, labels] = 1.0
    return memberships


def groups_m_step(counts: np.ndarray, groups: np.ndarray, active: np.ndarray,
                  smoothing: float) -> tuple:
    """M-step: ``α`` (M,) (share of the annotators with labels), ``β`` (M, K, K) (expected
    counts + ``smoothing``, rows = true class) and the raw expected counts (M, K, K), from
    the counts (A, K, K) and memberships q(g) (A, M)."""
    raw = np.einsum("am,aky->mky", groups, counts)
    alpha = groups[active].sum(axis=0)
    alpha = alpha / alpha.sum()
    beta = normalize_rows(raw + smoothing)
    return alpha, beta, raw


def group_posteriors(counts: np.ndarray, log_beta: np.ndarray, alpha: np.ndarray,
                     active: np.ndarray) -> np.ndarray:
    """Mean-field ``q(g_a = m) ∝ α_m exp(Σ_{k,y} N[a, k, y] log β_m[k, y])`` (A, M);
    annotators without labels get ``α``."""
    logits = np.einsum("aky,mky->am", counts, log_beta) + safe_log(alpha)[None, :]
    groups, _ = softmax_rows(logits)
    groups[~active] = alpha
    return groups


def annotator_log_confusions(groups: np.ndarray, log_beta: np.ndarray) -> np.ndarray:
    """``W[a, k, y] = Σ_m q(g_a = m) log β_m[k, y]`` (A, K, K): what the item E-step reads."""
    return np.einsum("am,mky->aky", groups, log_beta)


def annotator_bound(groups: np.ndarray, alpha: np.ndarray, active: np.ndarray) -> Any:
    """The annotators' part of the mean-field bound, ``Σ_a Σ_m q(g_a=m) (log α_m − log
    q(g_a=m))`` over annotators with labels (a numpy scalar)."""
    g = groups[active]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(g > 0, g * (safe_log(alpha)[None, :] - np.log(g)), 0.0)
    return terms.sum()


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
    """:func:`fewer_groups` of the counts of ``post``."""
    return fewer_groups(em.counts(post), alpha, beta, em.active)


def fewer_groups(counts: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                 active: np.ndarray) -> Optional[np.ndarray]:
    """Memberships without the group whose removal most raises the collapsed evidence.

    For each non-empty group, its annotators are re-assigned among the others (an E-step
    with that group's ``α`` set to 0) and the collapsed evidence of the result is compared
    with keeping all groups (the Bayes factor of ``M − 1`` against ``M`` groups). ``counts``
    (A, K, K) are the expected votes of the current item posteriors. Returns the new
    memberships, or None when every group is worth keeping. Loops over groups only.
    """
    lb = safe_log(beta)
    groups = group_posteriors(counts, lb, alpha, active)
    best = collapsed_evidence(groups_m_step(counts, groups, active, 0.0)[2], groups, active)
    choice = None
    for m in np.flatnonzero(alpha > 1e-9):
        if (alpha > 1e-9).sum() < 2:
            break
        reduced = alpha.copy()
        reduced[m] = 0.0
        reduced /= reduced.sum()
        candidate = group_posteriors(counts, lb, reduced, active)
        evidence = collapsed_evidence(groups_m_step(counts, candidate, active, 0.0)[2],
                                      candidate, active)
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
