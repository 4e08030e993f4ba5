"""LIA-E, the feature-free LIA: the model's one definition in numpy (equations and gradients).

The model (the LIA paper's LIA-E; :class:`~.trainer.LIATrainer`'s default feature-free
network builds the same one from Keras layers):

* ``h_θ``: a learned embedding ``e_i`` per item and a softmax layer,
  ``h_i = softmax(e_i W + b)``;
* ``d_φ``: its own item embedding ``u_i`` and a Dense map, ``D_i = u_i V + c`` (Eq. 1's
  difficulty, ``(K, K, L)``);
* ``c_ψ``: a row ``T_j`` per annotator plus a shared bias, ``C_j = T_j + t`` (competence);
* ``Q_ij = softmax_l(logsumexp_m(D_i + C_j))`` (Eq. 1);
* M-step objective Eq. 7: the mean over a batch's items of
  ``−Σ_k ŷ_ik [log h_ik + Σ_j log Q_ij[k, y_ij]]`` plus the trainer's L2 / Cauchy
  penalties (the per-item tables charged on the batch's rows): :func:`objective`, with its
  gradients written out (checked against automatic differentiation in
  ``tests/test_lia_model.py``);
* E-step Eq. 4 (:func:`e_step`), first E-step Eq. 8 (:func:`vote_fractions`) and the
  shared biases that it implies (:func:`initial_biases`).

Arrays of a batch are laid out items last, ``(K, b)``, and annotations first, ``(m, K·K·L)``:
numpy reduces over a 2-8 wide last axis many times slower than across such slabs. The
engine that runs EM with these functions is :class:`~.em.FeatureFreeLIA`; the Keras
trainer runs the same equations through its layers and automatic differentiation.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional

import numpy as np
from scipy import special

from ..annotations import Annotations
from ..aggregation.em import Block
from ..numerics import (draw_seed, keyed_uniforms, label_profile_keys, normalize_rows,
                        softmax_rows)

__all__ = ["WEIGHT_SHAPES", "vote_fractions", "initial_biases", "competence_start",
           "item_keys", "item_tables_start", "eq1",
           "confusions",
           "log_confusions", "truth_probabilities", "annotation_terms", "objective",
           "annotator_penalty", "e_step"]

_CHUNK = 2 ** 16         # annotations per block of the E-step (its arrays fit the caches)
_EPS_H = 1e-7            # h_θ is clipped here before its log (as AnnotationLogLikelihoods)
_EXP_SAFE = 64.0         # logits within ±this: float32 exp neither overflows nor vanishes

#: The weights of the model and their shapes (I items, A annotators, E embedding size,
#: K classes, L latent size); :meth:`FeatureFreeLIA.fit` takes ``initial_weights`` by these
#: names and ``weights_`` holds the fitted ones.
WEIGHT_SHAPES = {
    "truth_embedding": "(I, E)", "truth_kernel": "(E, K)", "truth_bias": "(K,)",
    "difficulty_embedding": "(I, E)", "difficulty_kernel": "(E, K·K·L)",
    "difficulty_bias": "(K·K·L,)", "competence_table": "(A, K·K·L)",
    "competence_bias": "(K·K·L,)"}

def vote_fractions(annotations: Annotations, k: int) -> np.ndarray:
    """Eq. 8: vote fractions ``(items, k)``; unlabelled items uniform."""
    counts = np.zeros((annotations.n_items, k))
    counts[:, :annotations.n_classes] = annotations.label_counts()
    return normalize_rows(counts)


def item_keys(annotations: Annotations) -> np.ndarray:
    """(items,) uint64 content key of each item (what its annotators, known by their label
    counts, said: :meth:`~crowd_keras.aggregation.em.Block.item_content_keys`): the items'
    draws and batch order follow it, so renaming or reordering the items or the annotators
    changes neither."""
    return Block.from_annotations(annotations).item_content_keys(
        annotations.n_classes, label_profile_keys(annotations.annotator_label_counts()))


def competence_start(annotations: Annotations, width: int, seed: Optional[int]) -> np.ndarray:
    """(A, width) float32 start of the one-hot competence table, ``N(0, 0.01²)``.

    Annotator a's row is drawn from ``seed`` and its fingerprint, the wrapping sum of the
    hashes of the (item, label) pairs it gave, the items by their content keys
    (:meth:`~crowd_keras.aggregation.em.Block.content_fingerprints`,
    :func:`~crowd_keras.numerics.keyed_uniforms` through the normal quantile), not from its
    code: renaming or reordering the annotators or the items gives each the same row.
    :class:`~.em.FeatureFreeLIA` and the Keras trainer both start from this table."""
    keys = Block.from_annotations(annotations).summary(annotations.n_classes,
                                                       fingerprints=True).annotator_keys()
    return (0.01 * special.ndtri(keyed_uniforms(keys, draw_seed(seed), int(width)))
            ).astype("float32")


def item_tables_start(annotations: Annotations, dim: int, seed: Optional[int]) -> tuple:
    """The (items, dim) float32 starts of the truth ``U(±0.05)`` and difficulty
    ``N(0, 0.1²)`` embedding tables (Keras' initializers' distributions).

    Item i's rows are drawn from ``seed`` and its content key (:func:`item_keys`,
    :func:`~crowd_keras.numerics.keyed_uniforms`), not from its code or id: reordering or
    renaming the items gives each the same rows (items told the same start alike)."""
    dim = int(dim)
    u = keyed_uniforms(item_keys(annotations), draw_seed(seed), 2 * dim)
    truth = (0.1 * u[:, :dim] - 0.05).astype("float32")
    difficulty = (0.1 * special.ndtri(u[:, dim:])).astype("float32")
    return truth, difficulty


def initial_biases(post: np.ndarray, annotations: Annotations, latent_dim: int) -> tuple:
    """The shared biases that the first E-step ``post (items, K)`` implies.

    Competence bias ``t[k, l, :] = log π_kl − log L`` with ``π`` the confusion matrix pooled
    over all annotations, ``π_kl ∝ 0.5 + Σ_{(i,j): y_ij = l} ŷ_ik`` (so ``Q_ij = π`` while
    the per-annotator rows are 0), flattened ``(K·K·L,)``; truth bias ``log ρ`` with ``ρ``
    the mean posterior (+10⁻³), ``(K,)``. The sum over annotations is one over items, of
    ``ŷ_ik`` times the item's count of label ``l``: O(items · K²).
    """
    k = post.shape[1]
    counts = np.zeros((annotations.n_items, k))
    counts[:, :annotations.n_classes] = annotations.label_counts()       # (items, K)
    pooled = post.T @ counts + 0.5                                       # (K, K)
    log_pi = np.log(normalize_rows(pooled))
    bias = np.repeat(log_pi[:, :, None], latent_dim, axis=2) - np.log(latent_dim)
    prior = post.mean(0) + 1e-3
    return (bias.reshape(-1).astype("float32"),
            np.log(prior / prior.sum()).astype("float32"))


def _exp_safe(z: np.ndarray) -> bool:
    """Whether ``z`` has values and all within ``±_EXP_SAFE`` (unshifted float32 ``exp``)."""
    return bool(z.size) and max(z.max(), -z.min()) < _EXP_SAFE


def confusions(difficulty: np.ndarray, competence: np.ndarray) -> np.ndarray:
    """Eq. 1 row by row: ``softmax_l(logsumexp_m(D + C))``, (n, K, K) probabilities from
    (n, K, K, L) difficulty and competence rows (or any shapes that broadcast to
    (..., K, K, L)), in their float dtype.

    ``L = 1`` with every logit within ``±_EXP_SAFE`` (the usual case): the softmax of each
    flat ``K·K`` row without its max shift (float32 ``exp`` neither overflows nor vanishes),
    its sums over ``l`` and their spread back small matrix products, as in the steps.
    Otherwise the reductions run over the first axis of a transposed copy (numpy reduces
    long rows several times faster than 2-8 wide ones).
    """
    z = difficulty + competence                                      # (..., K, K, L)
    k = z.shape[-2]
    if z.shape[-1] == 1 and z.dtype in (np.float32, np.float64) and _exp_safe(z):
        flat = z.reshape(-1, k * k)                                  # a view: z is fresh
        np.exp(flat, out=flat)
        flat /= (flat @ _row_sums(k)) @ _row_sums(k).T
        return flat.reshape(z.shape[:-1])
    z = np.moveaxis(z, -1, 0)                                        # (L, n, K, K)
    if len(z) == 1:   # L = 1: the logsumexp of one value is that value
        logits = z[0]
    else:
        top = z.max(axis=0)
        logits = top + np.log(np.exp(z - top).sum(axis=0))
    q = np.array(np.moveaxis(logits, -1, 0), dtype=np.result_type(logits, np.float32))
    q -= q.max(axis=0)
    np.exp(q, out=q)
    q /= q.sum(axis=0)
    return np.moveaxis(q, 0, -1)


def eq1(z: Any, logsumexp: Callable, normalize: Callable) -> Any:
    """Eq. 1 on ``z = D + C (..., K, K, L)``, written once for any array library:
    ``normalize_l(logsumexp_m(z))`` → ``(..., K, K)`` (``L = 1``: the logsumexp of one value is
    that value, exactly, and is skipped). ``normalize`` is a softmax (probabilities) or a
    log-softmax (log-probabilities) over the last axis.

    The Keras layer (``DifficultyCompetence.combine``) calls it with ``keras.ops``,
    :func:`log_confusions` with scipy; the numpy engine's steps compute the same equation in
    their own layouts (:func:`annotation_terms`, :func:`confusions`), tested against it."""
    logits = z[..., 0] if z.shape[-1] == 1 else logsumexp(z, axis=-1)
    return normalize(logits, axis=-1)


def log_confusions(z: np.ndarray) -> np.ndarray:
    """Eq. 1 in logs, :func:`eq1` in numpy: ``log_softmax_l(logsumexp_m(z))`` of ``z = D + C
    (..., K, K, L)`` → ``(..., K, K)`` (no underflow to ``log 0`` for confident annotators)."""
    return eq1(z, special.logsumexp, special.log_softmax)


def _log_confusions_t(z: np.ndarray) -> tuple:
    """Eq. 1 for ``z = D + C`` laid out ``(K, K, L, m)`` (annotations last): ``(zq (K, K, m)
    the logits of Q, lse (K, m) their log normaliser per true-class row, Q (K, K, m), the
    latent softmax (K, K, L, m) or None for L = 1)``; ``log Q = zq − lse``."""
    if z.shape[2] == 1:
        zq, e4 = z[:, :, 0], None
    else:   # logsumexp over the latent axis; its softmax carries the gradient back
        top4 = z.max(axis=2, keepdims=True)
        e4 = np.exp(z - top4)
        s4 = e4.sum(axis=2, keepdims=True)
        zq = top4[:, :, 0] + np.log(s4[:, :, 0])
        e4 /= s4
    top = zq.max(axis=1)
    q = np.exp(zq - top[:, None])
    s = q.sum(axis=1)
    q /= s[:, None]
    return zq, top + np.log(s), q, e4


@functools.cache
def _row_sums(k: int) -> np.ndarray:
    """``(K·K, K)`` 0/1, float32: ``x (m, K·K) @ it`` sums each of the ``K`` rows of every
    ``(K, K)`` block (over ``l``); its transpose spreads ``(m, K)`` over those rows. A small
    matrix product: numpy reduces or broadcasts over a 2-8 wide axis many times slower."""
    out = np.kron(np.eye(k, dtype=np.float32), np.ones((k, 1), dtype=np.float32))
    out.flags.writeable = False
    return out


@functools.cache
def _label_columns(k: int) -> np.ndarray:
    """``(K, K·K)`` 0/1, float32: row ``y`` marks column ``y`` of every row of a ``(K, K)``
    block (the observed label's entry of ``Q[k, ·]`` for every true class ``k``)."""
    out = np.tile(np.eye(k, dtype=np.float32), (1, k))
    out.flags.writeable = False
    return out


def _unshifted_log_confusions(z: np.ndarray, labels: np.ndarray, k: int) -> tuple:
    """Eq. 1 for ``L = 1`` without the max shift, for ``z = D_i + C_j (m, K·K)`` whose every
    logit is within ``±_EXP_SAFE`` (float32 ``exp`` then neither overflows nor vanishes).

    ``z`` becomes ``e^z`` in place. Returns ``(log Q[k, y_a] (m, K), Σ_l e^z (m, K), the
    observed labels' one-hot rows (m, K·K): 1 at [k, y_a] for every k)`` for the labels
    ``y (m,)``. Annotations first, every sum over ``l`` one small matrix product.
    """
    hot = np.take(_label_columns(k), labels, axis=0)                    # (m, K·K)
    obs = np.multiply(z, hot) @ _row_sums(k)                            # z[a, k, y_a]
    np.exp(z, out=z)
    norm = z @ _row_sums(k)
    obs -= np.log(norm)
    return obs, norm, hot


def _shifted_log_confusions(z: np.ndarray, labels: np.ndarray, k: int, lat: int) -> tuple:
    """Eq. 1 with the max shifts (any logits, any ``L``) for ``z (m, K·K·L)``: ``(log Q[k,
    y_a] (K, m), Q (K, K, m), the latent softmax (K, K, L, m) or None)`` (see
    :func:`_log_confusions_t`)."""
    m = len(z)
    zq, lse, q, e4 = _log_confusions_t(np.ascontiguousarray(z.T).reshape(k, k, lat, m))
    # log Q[k, y_a] sits at column y_a · m + a of the (K, K·m) view
    obs = np.take(zq.reshape(k, k * m), labels * m + np.arange(m), axis=1)
    obs -= lse
    return obs, q, e4


def _observed_log_confusions(z: np.ndarray, labels: np.ndarray, k: int, lat: int
                             ) -> np.ndarray:
    """``log Q[k, y]`` of each annotation's observed label ``y``, ``(K, m)``, from ``z = D_i
    + C_j`` laid out ``(m, K·K·L)`` (Eq. 1; ``z`` is overwritten)."""
    if lat == 1 and _exp_safe(z):
        return _unshifted_log_confusions(z, labels, k)[0].T
    return _shifted_log_confusions(z, labels, k, lat)[0]




# ---------------------------------------------------------------------------- Eq. 7
def truth_probabilities(kernel: np.ndarray, bias: np.ndarray, embedding_rows: np.ndarray
                        ) -> np.ndarray:
    """``h_θ`` of some items, ``(K, n)`` (items last): ``softmax(e_i W + b)`` from their
    embedding rows ``(n, E)``."""
    h = kernel.T @ embedding_rows.T
    h += bias[:, None]
    h -= h.max(axis=0)
    np.exp(h, out=h)
    h /= h.sum(axis=0)
    return h


def annotation_terms(table: np.ndarray, d: np.ndarray, w: np.ndarray, who: np.ndarray,
                     loc: np.ndarray, labels: np.ndarray, inv_b: np.floating, latent_dim: int,
                     work: Optional[np.ndarray] = None) -> tuple:
    """Eq. 1 and Eq. 7's annotation term for a batch's ``m`` annotations, and its gradient.

    Args: ``table (A, K·K·L)`` the annotator rows ``T_j`` (C order), ``d (b, K·K·L)`` the
    batch's difficulty rows with both shared biases, ``w (K, b)`` its E-step targets; per
    annotation ``who, loc, labels (m,)`` (annotator, batch row, observed label); ``inv_b``
    ``1 / b``; ``work`` optional ``(2, ≥ m, K·K·L)`` scratch of ``table``'s dtype.

    Returns ``(Σ ŷ log Q[k, y] (a float), d loss / d z (m, K·K·L))`` for ``z = D_i + C_j``:
    ``(Q − onehot(y)) ŷ / b`` per true-class row.
    """
    k, lat, m = w.shape[0], int(latent_dim), len(who)
    if work is None:
        work = np.empty((2, m, table.shape[1]), dtype=table.dtype)
    # (m, K·K·L): row gathers into the two work arrays; mode="clip": with out=, take's
    # default mode gathers into a temporary first
    z = np.take(table, who, axis=0, out=work[0, :m], mode="clip")
    z += np.take(d, loc, axis=0, out=work[1, :m], mode="clip")
    if lat == 1:
        # |z| <= max|C| + max|D + t|, from whichever is smaller: the table or z itself
        reach = (max(table.max(), -table.min()) + max(d.max(), -d.min())
                 if len(table) < m else max(z.max(), -z.min()))
        if reach < _EXP_SAFE:
            return _annotation_terms_l1(z, w, loc, labels, inv_b)
    obs, q, e4 = _shifted_log_confusions(z, labels, k, lat)         # (K, m), (K, K, m)
    wa = np.take(w, loc, axis=1)                                    # (K, m)
    ann_loss = float(np.vdot(wa, obs))
    wa *= inv_b
    q -= labels == np.arange(k)[:, None]                           # (K, m) one-hot of y
    if lat > 1:
        q = q[:, :, None, :] * e4
    # written straight into the (m, K·K·L) layout that the sums take (cheaper than a
    # transposed copy)
    g = np.empty((m, table.shape[1]), dtype=z.dtype)
    np.multiply(q.reshape(k, -1, m), wa[:, None, :],
                out=g.reshape(m, k, -1).transpose(1, 2, 0))
    return ann_loss, g


def _annotation_terms_l1(z: np.ndarray, w: np.ndarray, loc: np.ndarray, labels: np.ndarray,
                         inv_b: np.floating) -> tuple:
    """:func:`annotation_terms` for ``L = 1`` with every logit ``z (m, K·K)`` within
    ``±_EXP_SAFE``, in place and annotations first (:func:`_unshifted_log_confusions`):
    ``e^z ŷ / (b Σ_l e^z) − onehot(y) ŷ / b`` per true-class row."""
    k = w.shape[0]
    obs, norm, hot = _unshifted_log_confusions(z, labels, k)       # (m, K), (m, K), (m, K·K)
    wa = np.take(w.T, loc, axis=0)                                  # (m, K)
    ann_loss = float(np.vdot(wa, obs))
    wa *= inv_b
    np.divide(wa, norm, out=norm)                                   # ŷ / (b Σ_l e^z)
    spread = _row_sums(k).T                                         # (K, K·K)
    z *= norm @ spread                                              # Q ŷ / b
    hot *= wa @ spread                                              # onehot(y) ŷ / b
    z -= hot
    return ann_loss, z


def objective(weights: Dict[str, np.ndarray], items_w: np.ndarray, w: np.ndarray,
              who: np.ndarray, loc: np.ndarray, labels: np.ndarray,
              scatter: Callable[[np.ndarray], np.ndarray], grads: Dict[str, np.ndarray], *,
              n_items: int, latent_dim: int, classifier_l2: float = 0.0,
              instance_l2: float = 0.0, row_penalty: Optional[np.ndarray] = None,
              ones: Optional[np.ndarray] = None, work: Optional[np.ndarray] = None) -> tuple:
    """Eq. 7 on a batch of ``b`` items and its gradients, without the annotator penalty
    (:func:`annotator_penalty`).

    Args:
        weights: by :data:`WEIGHT_SHAPES` name (the item tables are not read: ``items_w``).
        items_w: ``(b, 2E)`` the batch's rows of the truth and difficulty embeddings, side
            by side.
        w: ``(K, b)`` the E-step targets ``ŷ`` of the batch's items.
        who, loc, labels: ``(m,)`` per annotation of the batch: annotator, batch row, label.
        scatter: ``g (m, W) -> (b + A, W)``: per batch row (first ``b`` rows) and per
            annotator sums of per-annotation rows.
        grads: arrays written in place with the gradients of ``truth_kernel``,
            ``truth_bias``, ``difficulty_kernel``, ``difficulty_bias`` and
            ``competence_bias``.
        n_items: ``I``; the L2 of the kernels is ``l2 · Σ w² / I`` (the trainer's
            regularisers of the summed loss, divided by the items).
        classifier_l2, instance_l2: L2 of ``h_θ`` and ``d_φ``: their kernels whole, their
            item tables on the batch's rows, ``2 · l2 / b`` per entry (``row_penalty``
            ``(b, 2E)``, made here when not given).
        ones: optional ``(≥ b,)`` ones of the weights' dtype; work: scratch of
            :func:`annotation_terms`.

    Returns ``(loss, g_items (b, 2E), sums (b + A, W))``: the batch's loss, the gradient
    of its item rows and the per-annotator gradient rows ``sums[b:]`` of the table ``T``.
    """
    p, f = weights, items_w.dtype.type
    b, e = items_w.shape[0], items_w.shape[1] // 2
    inv_b = f(1.0 / b)
    eh, ed = items_w[:, :e], items_w[:, e:]
    # ---- forward: h_θ (K, b), D + t (b, K·K·L) (both biases meet every annotation once)
    h = truth_probabilities(p["truth_kernel"], p["truth_bias"], eh)
    hc = np.clip(h, f(_EPS_H), f(1))
    d = ed @ p["difficulty_kernel"]
    d += p["difficulty_bias"] + p["competence_bias"]
    ann_loss, g_z = annotation_terms(p["competence_table"], d, w, who, loc, labels, inv_b,
                                     latent_dim, work)
    loss = -(float((w * np.log(hc)).sum()) + ann_loss) * float(inv_b)
    # ---- backward
    sums = scatter(g_z)                                              # (b + A, K·K·L)
    g_dt = sums[:b]
    g_h = np.where(h >= f(_EPS_H), -w * inv_b / hc, f(0))
    g_lh = h * (g_h - (h * g_h).sum(axis=0))                       # through the softmax
    np.matmul(eh.T, g_lh.T, out=grads["truth_kernel"])
    g_lh.sum(axis=1, out=grads["truth_bias"])
    np.matmul(ed.T, g_dt, out=grads["difficulty_kernel"])
    # both biases meet every annotation once, through its item's row: the same gradient
    ones = np.ones(b, dtype=items_w.dtype) if ones is None else ones[:b]
    np.matmul(ones, g_dt, out=grads["difficulty_bias"])
    grads["competence_bias"][...] = grads["difficulty_bias"]
    g_items = np.concatenate([g_lh.T @ p["truth_kernel"].T,
                              g_dt @ p["difficulty_kernel"].T], axis=1)     # (b, 2E)
    # ---- penalties (the trainer's regularisers)
    cl2, il2 = f(classifier_l2), f(instance_l2)
    if cl2 or il2:
        if row_penalty is None:
            row_penalty = np.repeat(np.array([2 * classifier_l2, 2 * instance_l2],
                                             dtype=items_w.dtype) / b, e)[None, :]
        sq = items_w * items_w
        loss += 0.5 * float(np.vdot(np.broadcast_to(row_penalty, sq.shape), sq))
        g_items += row_penalty * items_w
        for name, l2 in (("truth_kernel", cl2), ("difficulty_kernel", il2)):
            if l2:
                loss += float(l2 * (p[name] ** 2).sum() / n_items)
                grads[name] += (f(2) * l2 / f(n_items)) * p[name]
    return loss, g_items, sums


def annotator_penalty(table: np.ndarray, strength: np.floating, scale: Optional[float],
                      grad: np.ndarray) -> float:
    """The annotator table's penalty (``strength = l2 / I``): L2 ``strength Σ T²``, or with
    a ``scale`` the Cauchy ``strength s² Σ log(1 + T²/s²)``; adds its gradient to ``grad``
    (same shape as ``table``) and returns its value."""
    f = table.dtype.type
    if scale is None:
        grad += (f(2) * strength) * table
        return float(strength * np.vdot(table, table))
    s2 = f(scale) ** 2       # gradient 2T / (1 + T²/s²)
    t2 = table * table
    t2 /= s2
    loss = float(strength * s2 * np.log1p(t2).sum())
    t2 += f(1)
    np.divide(table, t2, out=t2)
    t2 *= f(2) * strength
    grad += t2
    return loss


# ---------------------------------------------------------------------------- Eq. 4
def e_step(weights: Dict[str, np.ndarray], annotations: Annotations, latent_dim: int
           ) -> np.ndarray:
    """Eq. 4 for every item: ``ŷ_ik ∝ h_ik Π_j Q_ij[k, y_ij]``, ``(items, K)`` (items
    without annotations get ``h_θ``), in blocks of whole items of about ``_CHUNK``
    annotations."""
    p, ann = weights, annotations
    n, lat = ann.n_items, int(latent_dim)
    k = p["truth_bias"].shape[0]
    # a C-ordered copy of the embedding (a fitting layout holds it as a strided view)
    h = truth_probabilities(p["truth_kernel"], p["truth_bias"],
                            np.ascontiguousarray(p["truth_embedding"]))
    joint = np.log(np.clip(h.T, _EPS_H, 1)).T.astype("float64")
    d = p["difficulty_embedding"] @ p["difficulty_kernel"]               # (I, K·K·L)
    d += p["difficulty_bias"]
    table = p["competence_table"] + p["competence_bias"]                 # (A, K·K·L)
    per_item, ptr = ann.annotations_per_item(), ann.item_starts()
    start = 0
    while start < n:   # blocks of whole items, about _CHUNK annotations each
        stop = max(int(np.searchsorted(ptr, ptr[start] + _CHUNK, side="right")) - 1,
                   start + 1)
        lo, hi = ptr[start], ptr[stop]
        if hi > lo:
            z = np.take(table, ann.annotators[lo:hi], axis=0)            # (m, K·K·L)
            z += np.take(d, ann.items[lo:hi], axis=0)
            obs = _observed_log_confusions(z, ann.labels[lo:hi], k, lat)  # (K, m)
            # per-item sums: annotations are sorted by item, runs from ptr (reduceat sums
            # from each start to the next: only the items that have annotations)
            some = np.flatnonzero(per_item[start:stop]) + start
            joint[:, some] += np.add.reduceat(obs, ptr[some] - lo, axis=1)
        start = stop
    return softmax_rows(joint.T)[0]
