"""LIA-E's EM in numpy: the feature-free LIA of :class:`~.trainer.LIATrainer` without Keras.

The same model, objective, optimiser, first E-step and batches as the trainer on its
default feature-free network (the paper's LIA-E), with the gradients written out instead
of traced:

* ``h_θ``: a learned embedding ``e_i`` per item and a softmax layer,
  ``h_i = softmax(e_i W + b)``;
* ``d_φ``: its own item embedding ``u_i`` and a Dense map, ``D_i = u_i V + c`` (Eq. 1's
  difficulty, ``(K, K, L)``);
* ``c_ψ``: a row ``T_j`` per annotator plus a shared bias, ``C_j = T_j + t`` (competence);
* ``Q_ij = softmax_l(logsumexp_m(D_i + C_j))`` (Eq. 1), M-step objective Eq. 7 (mean over
  the batch's items of ``−Σ_k ŷ_ik [log h_ik + Σ_j log Q_ij[k, y_ij]]`` plus the
  trainer's L2 / Cauchy penalties, the per-item tables charged on the batch's rows),
  E-step Eq. 4, first E-step Eq. 8 (or given posteriors);
* AMSGrad (Keras' Adam arithmetic) updating the item tables lazily (the batch's rows,
  :class:`~crowd_keras.optimizers.LazyAdam`) and everything else densely.

A step costs O(annotations of the batch) in a few dozen vectorised numpy calls: no graph,
no tracing, no compile, which at 10⁵-10⁶ annotations is most of what a Keras fit spends.
Numpy only (layer 2): :class:`~.label_model.LIA` runs this when it is fitted without
features, and builds the Keras trainer from these weights only if asked for it.
"""
from __future__ import annotations

import functools
from typing import Any, Dict, Optional

import numpy as np
from scipy import sparse

from .. import adam
from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import normalize_rows, row_order, softmax_rows
from ..params import Params
from ..progress import progress_bar

__all__ = ["FeatureFreeLIA", "run_em", "lia_batch_size", "initial_biases", "vote_fractions",
           "confusions", "log_confusions", "WEIGHT_SHAPES"]

# items per step with batch_size=None: every item up to this (full batch), then this or one
# M-step's share of every item. One bound for both, so a step's work grows with the items
# without a jump
_MIN_BATCH = 1024        # the paper's batch
_CHUNK = 2 ** 16         # annotations per block of the E-step (its arrays fit the caches)
_EPS_H = 1e-7            # h_θ is clipped here before its log (the trainer's AnnotationLogLikelihoods)
_BETA_1, _BETA_2, _ADAM_EPS = 0.9, 0.999, 1e-7   # Keras' Adam defaults
_EXP_SAFE = 64.0         # logits within ±this: float32 exp neither overflows nor vanishes
_ADAM_BLOCK = 1 << 16    # elements per block of a large AMSGrad update (_Adam.apply)

#: The weights of the model and their shapes (I items, A annotators, E embedding size,
#: K classes, L latent size); :meth:`FeatureFreeLIA.fit` takes ``initial_weights`` by these
#: names and ``weights_`` holds the fitted ones.
WEIGHT_SHAPES = {
    "truth_embedding": "(I, E)", "truth_kernel": "(E, K)", "truth_bias": "(K,)",
    "difficulty_embedding": "(I, E)", "difficulty_kernel": "(E, K·K·L)",
    "difficulty_bias": "(K·K·L,)", "competence_table": "(A, K·K·L)",
    "competence_bias": "(K·K·L,)"}
_ROW_TABLES = ("truth_embedding", "difficulty_embedding")   # updated on the batch's rows
_DENSE = ("truth_kernel", "truth_bias", "difficulty_kernel", "difficulty_bias",
          "competence_bias")                                  # updated whole, every step


def lia_batch_size(batch_size: Optional[int], n: int, m_steps: int) -> int:
    """Items per optimiser step: ``batch_size``, or (``None``) every item up to 1024 (the
    paper's batch), else ``max(1024, ⌈n / m_steps⌉)`` so that each M-step passes over every
    item (a per-item parameter, LIA-E's embeddings, is only updated on the steps that see its
    item)."""
    if batch_size is None:
        return min(n, max(_MIN_BATCH, -(-n // max(int(m_steps), 1))))
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be a positive integer or None, got {batch_size!r}")
    return min(int(batch_size), n)


def vote_fractions(annotations: Annotations, k: int) -> np.ndarray:
    """Eq. 8: vote fractions ``(items, k)``; unlabelled items uniform."""
    counts = np.zeros((annotations.n_items, k))
    counts[:, :annotations.n_classes] = annotations.label_counts()
    return normalize_rows(counts)


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


def log_confusions(z: np.ndarray) -> np.ndarray:
    """Eq. 1 in logs: ``log_softmax_l(logsumexp_m(z))`` of ``z = D + C (..., K, K, L)`` →
    ``(..., K, K)`` (no underflow to ``log 0`` for confident annotators)."""
    if z.shape[-1] == 1:
        zq = z[..., 0]
    else:
        top = z.max(axis=-1, keepdims=True)
        zq = top[..., 0] + np.log(np.exp(z - top).sum(axis=-1))
    top = zq.max(axis=-1, keepdims=True)
    return zq - (top + np.log(np.exp(zq - top).sum(axis=-1, keepdims=True)))


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


def run_em(fitter: Any, post: np.ndarray, m_step: Any, e_step: Any) -> np.ndarray:
    """LIA's EM loop, shared by both engines: ``m_step(target float32) -> loss`` (Eq. 7),
    ``e_step() -> (items, K)`` (Eq. 4), up to ``fitter.em_iterations`` times, stopping when no
    posterior moves by more than ``fitter.tol``; appends to ``fitter.history_``, sets
    ``fitter.n_iter_``; returns the last posteriors."""
    fitter.n_iter_ = 0
    bar = progress_bar(range(int(fitter.em_iterations)), desc="LIA EM",
                       disable=not fitter.progress)
    for it in bar:
        loss = m_step(post.astype("float32"))                                 # Eq. 7
        new = e_step()                                                        # Eq. 4
        change = float(np.abs(new - post).max())
        post = new
        fitter.n_iter_ = it + 1
        fitter.history_.append({"phase": "em", "iteration": it + 1, "loss": loss,
                                "max_change": change})
        if change < fitter.tol:
            break
    bar.close()
    return post


def _glorot(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    limit = np.sqrt(6.0 / (shape[0] + shape[1]))
    return rng.uniform(-limit, limit, size=shape).astype("float32")


class _Adam:
    """Keras' Adam (``amsgrad`` on) on numpy arrays, in place: ``m += (g − m)(1 − β₁)``,
    ``v += (g² − v)(1 − β₂)``, ``v̂ = max(v̂, v)``, ``w −= α m / (√v̂ + ε)`` with
    ``α = lr √(1 − β₂ᵗ) / (1 − β₁ᵗ)``; :meth:`rows` is the lazy form on some rows."""

    def __init__(self, weights: Dict[str, np.ndarray], learning_rate: float) -> None:
        self.lr = float(learning_rate)
        self.slots = {name: (np.zeros_like(w), np.zeros_like(w), np.zeros_like(w))
                      for name, w in weights.items()}
        self.t = 0

    def alpha(self) -> np.float32:
        t = np.float32(self.t + 1)
        return adam.step_size(np.float32(self.lr), np.float32(_BETA_1) ** t,
                              np.float32(_BETA_2) ** t, np.sqrt)

    @staticmethod
    def _rule(g: np.ndarray, m: np.ndarray, v: np.ndarray, vh: np.ndarray,
              alpha: np.float32) -> np.ndarray:
        """Adam's rule (:mod:`crowd_keras.adam`): update the moments in place, return the
        step ``α m / (√v̂ + ε)``."""
        # Python floats: 1 − β is rounded to float32 once, as in Keras
        dm, dv = adam.moment_increments(g, m, v, _BETA_1, _BETA_2)
        m += dm
        v += dv
        np.maximum(vh, v, out=vh)
        return adam.step(m, vh, alpha, _ADAM_EPS, np.sqrt)

    @classmethod
    def apply(cls, w: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray,
              vh: np.ndarray, alpha: np.float32) -> None:
        """``w −= α m / (√v̂ + ε)`` after the moments' update (:meth:`_rule`), on arrays of
        one shape. Over more than four blocks of ``_ADAM_BLOCK`` elements (C-contiguous
        arrays), block by block: one block's five arrays (1.25 MiB) stay in the L2 cache
        through the rule's dozen passes, where whole arrays of 10M annotations' annotator
        table (1.6M elements) go to memory on each; exact (elementwise). Small arrays are
        updated whole."""
        arrays = (w, g, m, v, vh)
        if g.size <= 4 * _ADAM_BLOCK or not all(a.flags.c_contiguous for a in arrays):
            w -= cls._rule(g, m, v, vh, alpha)
            return
        flat = [a.reshape(-1) for a in arrays]   # views: all C-contiguous
        for lo in range(0, g.size, _ADAM_BLOCK):
            bw, bg, bm, bv, bh = (a[lo:lo + _ADAM_BLOCK] for a in flat)
            bw -= cls._rule(bg, bm, bv, bh, alpha)

    def dense(self, name: str, w: np.ndarray, g: np.ndarray, alpha: np.float32) -> None:
        self.apply(w, g, *self.slots[name], alpha)

    def rows(self, name: str, w: np.ndarray, rows: np.ndarray, g: np.ndarray,
             alpha: np.float32) -> None:
        """Update rows ``rows`` (distinct) of ``w`` with their gradient rows ``g``."""
        m, v, vh = (np.take(s, rows, axis=0) for s in self.slots[name])
        step = self._rule(g, m, v, vh, alpha)
        for slot, value in zip(self.slots[name], (m, v, vh)):
            slot[rows] = value
        w[rows] -= step


class FeatureFreeLIA(Params):
    """LIA-E (the feature-free LIA of :class:`~.trainer.LIATrainer`) fitted by numpy EM.

    Args:
        num_classes: ``K``; default: the annotations' number of classes.
        latent_dim: ``L`` of the difficulty and competence tensors (Eq. 1).
        embedding_dim: ``E``, size of the two item embeddings (the trainer's
            ``instance_embedding_dim``).
        classifier_l2, instance_l2, annotator_l2, annotator_scale, em_iterations, m_steps,
            batch_size, learning_rate, tol, seed, progress: as in
            :class:`~.trainer.LIATrainer` (no marginal fine-tuning here).

    Attributes (after :meth:`fit`): ``posteriors_`` (items, K) (Eq. 4, final parameters),
    ``posteriors_em_`` (the same: there is no fine-tuning), ``weights_`` (float32 arrays by
    the names of :data:`WEIGHT_SHAPES`), ``history_`` (one dict per M-step with its mean
    loss and the largest posterior change), ``n_iter_``, ``batch_size_``, ``annotations_``.
    """

    def __init__(self, num_classes: Optional[int] = None, *, latent_dim: int = 1,
                 embedding_dim: int = 16, classifier_l2: float = 0.0,
                 instance_l2: float = 1.0, annotator_l2: float = 1.0,
                 annotator_scale: Optional[float] = None, em_iterations: int = 10, m_steps: int = 200,
                 batch_size: Optional[int] = None, learning_rate: float = 0.05,
                 tol: float = 1e-3, seed: Optional[int] = None, progress: bool = False) -> None:
        self.num_classes = num_classes
        self.latent_dim = latent_dim
        self.embedding_dim = embedding_dim
        # the penalties in the model's order: h_θ, d_φ, c_ψ
        self.classifier_l2 = classifier_l2
        self.instance_l2 = instance_l2
        self.annotator_l2 = annotator_l2
        self.annotator_scale = annotator_scale
        self.em_iterations = em_iterations
        self.m_steps = m_steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.tol = tol
        self.seed = seed
        self.progress = progress

    # ------------------------------------------------------------------ set-up
    def _initial_weights(self, annotations: Annotations, post: np.ndarray,
                         rng: np.random.Generator) -> Dict[str, np.ndarray]:
        """The trainer's initialisation (Keras' initializers' distributions, then its
        ``init_biases``): item tables ``U(±0.05)`` / ``N(0, 0.1²)``, kernels Glorot-uniform,
        the annotator table ``N(0, 0.01²)``, biases from :func:`initial_biases`."""
        n, a = annotations.n_items, annotations.n_annotators
        k, e, width = self.num_classes_, int(self.embedding_dim), self.width_
        comp_bias, truth_bias = initial_biases(post, annotations, int(self.latent_dim))
        return {
            "truth_embedding": rng.uniform(-0.05, 0.05, size=(n, e)).astype("float32"),
            "truth_kernel": _glorot(rng, (e, k)), "truth_bias": truth_bias,
            "difficulty_embedding": rng.normal(scale=0.1, size=(n, e)).astype("float32"),
            "difficulty_kernel": _glorot(rng, (e, width)),
            "difficulty_bias": np.zeros(width, dtype="float32"),
            # the trainer's own draw (numpy, from the seed): the same table
            "competence_table": np.random.default_rng(self.seed).normal(
                scale=0.01, size=(a, width)).astype("float32"),
            "competence_bias": comp_bias}

    def _check_weights(self, weights: Dict[str, Any], n: int, a: int) -> Dict[str, np.ndarray]:
        k, e, width = self.num_classes_, int(self.embedding_dim), self.width_
        shapes = {"truth_embedding": (n, e), "truth_kernel": (e, k), "truth_bias": (k,),
                  "difficulty_embedding": (n, e), "difficulty_kernel": (e, width),
                  "difficulty_bias": (width,), "competence_table": (a, width),
                  "competence_bias": (width,)}
        if set(weights) != set(shapes):
            raise ValueError(f"initial_weights must name exactly {sorted(shapes)}, got "
                             f"{sorted(weights)}")
        out = {}
        for name, shape in shapes.items():
            w = np.array(weights[name], dtype="float32")   # a copy: fitting writes in place
            if w.shape != shape:
                raise ValueError(f"initial_weights[{name!r}] must have shape {shape}, got "
                                 f"{w.shape}")
            out[name] = w
        return out

    # ------------------------------------------------------------------ fit
    def fit(self, annotations: Annotations, initial_posteriors: Any = None,
            initial_weights: Optional[Dict[str, Any]] = None) -> "FeatureFreeLIA":
        """Run EM (Eqs. 8 or ``initial_posteriors``, then 7 and 4 in turn).

        Args:
            annotations: the crowd labels.
            initial_posteriors: optional ``(items, K)`` replacing the majority-vote first
                E-step (e.g. Dawid-Skene's posteriors).
            initial_weights: optional starting weights by the names of
                :data:`WEIGHT_SHAPES` (e.g. a Keras trainer's, to compare the two); default:
                drawn from ``seed`` as the trainer draws them.
        """
        if not isinstance(annotations, Annotations):
            raise CrowdDataError(f"annotations must be a crowd_keras.Annotations, got "
                                 f"{type(annotations).__name__}")
        if annotations.n_annotations == 0:
            raise CrowdDataError("no annotations to learn from")
        k = int(self.num_classes or annotations.n_classes)
        if annotations.n_classes > k:
            raise CrowdDataError(f"annotations have {annotations.n_classes} classes but "
                                 f"num_classes={k}")
        n = annotations.n_items
        self.num_classes_ = k
        self.width_ = k * k * int(self.latent_dim)
        if initial_posteriors is None:
            post = vote_fractions(annotations, k)                             # Eq. 8
        else:
            post = np.asarray(initial_posteriors, dtype="float64")
            if post.shape != (n, k):
                raise CrowdDataError(f"initial_posteriors must be ({n}, {k}), got {post.shape}")
        rng = np.random.default_rng(self.seed)
        if initial_weights is None:
            weights = self._initial_weights(annotations, post, np.random.default_rng(
                None if self.seed is None else [int(self.seed), 1]))
        else:
            weights = self._check_weights(initial_weights, n, annotations.n_annotators)
        self.annotations_ = annotations
        self.batch_size_ = lia_batch_size(self.batch_size, n, self.m_steps)
        self._fitting_layout(weights)
        self.history_ = []
        post = run_em(self, post, lambda target: self._m_step(target, int(self.m_steps), rng),
                      lambda: self.posteriors(annotations=annotations))
        for name in (*_ROW_TABLES, *_DENSE, "competence_table"):   # plain arrays again
            weights[name] = np.array(weights[name], order="C")
        del self._item_rows, self._dense, self._grads, self._flat_grads
        del self._adam
        del self._row_penalty
        self.posteriors_ = self.posteriors_em_ = post
        return self

    def _fitting_layout(self, weights: Dict[str, np.ndarray]) -> None:
        """Lay the weights out for the steps; ``weights_`` shows them as views.

        * the two item tables and their three AMSGrad moments in one ``(items, 4, 2E)``
          array (weights, m, v, v̂): an item's four rows are one 512-byte record (E = 16),
          so a step gathers and scatters one record per item of its batch (a quarter of the
          random memory accesses of four separate tables)
          and transposes them to ``(4, b, 2E)``, contiguous for the update's passes;
        * the shared weights (kernels, biases and, under a penalty, the annotator table)
          in one flat vector, their gradients in another alike: one AMSGrad update a step;
        * the annotator table ``(A, K·K·L)`` in C order: the steps gather whole rows.
        """
        n, e = self.annotations_.n_items, int(self.embedding_dim)
        items = np.zeros((n, 4, 2 * e), dtype="float32")
        for t, name in enumerate(_ROW_TABLES):
            items[:, 0, t * e:(t + 1) * e] = weights[name]
            weights[name] = items[:, 0, t * e:(t + 1) * e]
        table = np.array(weights["competence_table"], order="C")            # (A, K·K·L)
        dense = [*_DENSE, "competence_table"] if self.annotator_l2 else list(_DENSE)
        shapes = {name: weights[name].shape for name in _DENSE}
        shapes["competence_table"] = table.shape
        sizes = [int(np.prod(shapes[name])) for name in dense]
        flat, grads = np.empty(sum(sizes), dtype="float32"), np.empty(sum(sizes), dtype="float32")
        self._grads = {}
        for name, lo, size in zip(dense, np.cumsum([0, *sizes]), sizes):
            view = flat[lo:lo + size].reshape(shapes[name])
            view[...] = table if name == "competence_table" else weights[name]
            weights[name] = view
            self._grads[name] = grads[lo:lo + size].reshape(shapes[name])
        if not self.annotator_l2:   # no penalty: the table is updated lazily, on its own
            weights["competence_table"] = table
        # an item's record (4 × 2E floats) as one value: numpy gathers and (much faster)
        # scatters such a 1-d array's elements whole, a 2-d array's rows through its general
        # indexing
        self._item_rows = items.reshape(-1).view(np.dtype((np.void, items[0].nbytes)))
        self._dense, self._flat_grads = flat, grads
        self.weights_ = weights
        # the item tables' L2, 2·l2/b per entry of a batch's (b, 2E) rows (whole: no broadcast
        # in the step's elementwise passes)
        self._row_penalty = np.ascontiguousarray(np.broadcast_to(np.repeat(np.array(
            [2 * self.classifier_l2, 2 * self.instance_l2], dtype="float32") / self.batch_size_,
            e), (self.batch_size_, 2 * e)))
        self._adam = _Adam({"dense": flat} if self.annotator_l2 else
                           {"dense": flat, "competence_table": weights["competence_table"]},
                           self.learning_rate)

    def _m_step(self, target: np.ndarray, steps: int, rng: np.random.Generator) -> float:
        """``steps`` optimiser steps on Eq. 7 with the E-step ``target (items, K)``; the mean
        loss. The batches' annotations are gathered for the whole M-step at once."""
        ann = self.annotations_
        n, b = ann.n_items, self.batch_size_
        if steps < 1:
            return float("nan")
        full = b >= n
        order = (np.arange(n)[None, :] if full
                 else row_order(n, b, steps, rng).reshape(steps, b))       # (S, b), S = 1: full
        per_item, ptr = ann.annotations_per_item(), ann.item_starts()
        counts = per_item[order]                                              # (S, b)
        flat = counts.ravel()
        within = np.cumsum(flat) - flat                   # offset of each row's first annotation
        total = int(flat.sum())
        aidx = np.repeat(ptr[order.ravel()] - within, flat) + np.arange(total)
        per_step = counts.sum(axis=1)
        bounds = np.concatenate([[0], np.cumsum(per_step)])
        who = ann.annotators[aidx].astype(np.int32)
        labels = ann.labels[aidx].astype(np.intp)
        loc = np.repeat(np.tile(np.arange(b, dtype=np.int32), len(order)), flat)
        # each annotation's two rows of the step's (b + A, m) incidence: its batch row and
        # b + its annotator (self._sums: one product gives both sums)
        pairs = np.empty((total, 2), dtype=np.int32)
        pairs[:, 0] = loc
        pairs[:, 1] = who
        pairs[:, 1] += b
        target_t = np.ascontiguousarray(target.T)                             # (K, items)
        self._ones = np.ones(max(2 * int(per_step.max()), b), dtype="float32")
        self._columns = np.arange(0, 2 * int(per_step.max()) + 1, 2, dtype=np.int32)
        # the steps' (m, K·K·L) gathers of annotator and item rows (_annotation_terms)
        self._work = np.empty((2, int(per_step.max()), self.width_), dtype=np.float32)
        losses = np.empty(steps)
        for s in range(steps):
            r = 0 if full else s
            lo, hi = bounds[r], bounds[r + 1]
            rows = order[r]
            losses[s] = self._step(rows, np.take(target_t, rows, axis=1), who[lo:hi],
                                   labels[lo:hi], loc[lo:hi], pairs[lo:hi], repeats=not full
                                   and (s * b) // n != ((s + 1) * b - 1) // n)
        del self._ones, self._columns, self._work
        return float(losses.mean())

    def _sums(self, pairs: np.ndarray, size: int, g: np.ndarray) -> np.ndarray:
        """Per batch row and per annotator sums of ``g (m, W)``, ``(size = b + A, W)``: row
        ``r < b`` sums the annotations of batch row ``r``, row ``b + j`` those of annotator
        ``j`` (``pairs (m, 2)`` names both rows of each annotation). One product with the
        ``(b + A, m)`` incidence (two 1s per column): a scatter-add of whole rows, cheaper
        than bincount's per-entry one or reduceat's strided segments."""
        m = len(pairs)
        incidence = sparse.csc_array((self._ones[:2 * m], pairs.reshape(-1),
                                      self._columns[:m + 1]), shape=(size, m))
        return incidence @ g

    def _annotation_terms(self, d: np.ndarray, w: np.ndarray, who: np.ndarray,
                          loc: np.ndarray, labels: np.ndarray, inv_b: np.float32) -> tuple:
        """Eq. 1 and Eq. 7's annotation term for a batch's ``m`` annotations, and its gradient.

        Args: ``d (b, K·K·L)`` the batch's difficulty rows with both shared biases, ``w (K,
        b)`` its E-step targets; per annotation ``who, loc, labels`` (annotator, batch row,
        observed label).

        Returns ``(Σ ŷ log Q[k, y] (a float), d loss / d z (m, K·K·L))`` for ``z = D_i + C_j``:
        ``(Q − onehot(y)) ŷ / b`` per true-class row.
        """
        table = self.weights_["competence_table"]                    # (A, K·K·L), C order
        k, lat, m = self.num_classes_, int(self.latent_dim), len(who)
        # (m, K·K·L): row gathers (a column gather of the transposed table is slower),
        # into the M-step's two work arrays (fresh ones each step cost more); mode="clip":
        # with out=, take's default mode gathers into a temporary first
        z = np.take(table, who, axis=0, out=self._work[0, :m], mode="clip")
        z += np.take(d, loc, axis=0, out=self._work[1, :m], mode="clip")
        if lat == 1:
            # |z| <= max|C| + max|D + t|, from whichever is smaller: the table or z itself
            reach = (max(table.max(), -table.min()) + max(d.max(), -d.min())
                     if len(table) < m else max(z.max(), -z.min()))
            if reach < _EXP_SAFE:
                return self._annotation_terms_l1(z, w, loc, labels, inv_b)
        obs, q, e4 = _shifted_log_confusions(z, labels, k, lat)         # (K, m), (K, K, m)
        wa = np.take(w, loc, axis=1)                                    # (K, m)
        ann_loss = float(np.vdot(wa, obs))
        wa *= inv_b
        q -= labels == np.arange(k)[:, None]                           # (K, m) one-hot of y
        if lat > 1:
            q = q[:, :, None, :] * e4
        # written straight into the (m, K·K·L) layout that the sums take (cheaper than a
        # transposed copy)
        g = np.empty((m, self.width_), dtype=np.float32)
        np.multiply(q.reshape(k, -1, m), wa[:, None, :],
                    out=g.reshape(m, k, -1).transpose(1, 2, 0))
        return ann_loss, g

    def _annotation_terms_l1(self, z: np.ndarray, w: np.ndarray, loc: np.ndarray,
                             labels: np.ndarray, inv_b: np.float32) -> tuple:
        """:meth:`_annotation_terms` for ``L = 1`` with every logit ``z (m, K·K)`` within
        ``±_EXP_SAFE``, in place and annotations first (:func:`_unshifted_log_confusions`):
        ``e^z ŷ / (b Σ_l e^z) − onehot(y) ŷ / b`` per true-class row."""
        k = self.num_classes_
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

    def _step(self, rows: np.ndarray, w: np.ndarray, who: np.ndarray, labels: np.ndarray,
              loc: np.ndarray, pairs: np.ndarray, repeats: bool) -> float:
        """One AMSGrad step on a batch: ``rows (b,)`` items with E-step targets ``w (K, b)``;
        their ``m`` annotations: ``who, labels, loc (m,)`` (annotator, label, row of the
        batch), ``pairs (m, 2)`` (see :meth:`_sums`). ``repeats``: the batch may hold an item
        twice (it spans two shuffled passes). Returns the loss.

        Per-item arrays are laid out items last, ``(K, b)``: numpy reduces over a 2-8 wide
        last axis some fifty times slower than across such slabs.
        """
        p, grads = self.weights_, self._grads
        n = self.annotations_.n_items
        b = len(rows)
        f32 = np.float32
        inv_b = f32(1.0 / b)
        cl2, il2, al2 = (f32(v) for v in (self.classifier_l2, self.instance_l2,
                                           self.annotator_l2))
        table = p["competence_table"]                                  # (A, K·K·L)
        e = int(self.embedding_dim)
        # the batch's rows of both item tables and of their moments, (4, b, 2E) (contiguous:
        # the update's dozen passes over strided rows cost more than this copy)
        x = np.take(self._item_rows, rows).view(np.float32).reshape(b, 4, 2 * e)
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
        items_w = x[0]
        eh, ed = items_w[:, :e], items_w[:, e:]
        # ---- forward: h_θ (K, b), D + t (b, K·K·L) (both biases meet every annotation once)
        h = p["truth_kernel"].T @ eh.T
        h += p["truth_bias"][:, None]
        h -= h.max(axis=0)
        np.exp(h, out=h)
        h /= h.sum(axis=0)
        hc = np.clip(h, f32(_EPS_H), f32(1))
        d = ed @ p["difficulty_kernel"]
        d += p["difficulty_bias"] + p["competence_bias"]
        ann_loss, g_z = self._annotation_terms(d, w, who, loc, labels, inv_b)
        loss = -(float((w * np.log(hc)).sum()) + ann_loss) * float(inv_b)
        # ---- backward
        a = len(table)
        sums = self._sums(pairs, b + a, g_z)                            # (b + A, K·K·L)
        g_dt = sums[:b]
        g_h = np.where(h >= f32(_EPS_H), -w * inv_b / hc, f32(0))
        g_lh = h * (g_h - (h * g_h).sum(axis=0))                       # through the softmax
        np.matmul(eh.T, g_lh.T, out=grads["truth_kernel"])
        g_lh.sum(axis=1, out=grads["truth_bias"])
        np.matmul(ed.T, g_dt, out=grads["difficulty_kernel"])
        # both biases meet every annotation once, through its item's row: the same gradient
        np.matmul(self._ones[:b], g_dt, out=grads["difficulty_bias"])
        grads["competence_bias"][...] = grads["difficulty_bias"]
        g_items = np.concatenate([g_lh.T @ p["truth_kernel"].T,
                                  g_dt @ p["difficulty_kernel"].T], axis=1)     # (b, 2E)
        # ---- penalties (the trainer's regularisers: weights whole, item tables on the rows,
        # 2·l2/b per row entry: self._row_penalty)
        if cl2 or il2:
            sq = items_w * items_w
            loss += 0.5 * float(np.vdot(self._row_penalty, sq))
            g_items += self._row_penalty * items_w
            for name, l2 in (("truth_kernel", cl2), ("difficulty_kernel", il2)):
                if l2:
                    loss += float(l2 * (p[name] ** 2).sum() / n)
                    grads[name] += (f32(2) * l2 / f32(n)) * p[name]
        alpha = self._adam.alpha()
        if al2:   # a weight penalty: the table's gradient is dense (as in Keras)
            g_t = grads["competence_table"]                                 # (A, K·K·L)
            g_t[...] = sums[b:]
            strength = al2 / f32(n)
            if self.annotator_scale is None:
                loss += float(strength * np.vdot(table, table))
                g_t += (f32(2) * strength) * table
            else:   # Cauchy: s² log(1 + w²/s²), gradient 2w / (1 + w²/s²)
                s2 = f32(self.annotator_scale) ** 2
                t2 = table * table
                t2 /= s2
                loss += float(strength * s2 * np.log1p(t2).sum())
                t2 += f32(1)
                np.divide(table, t2, out=t2)
                t2 *= f32(2) * strength
                g_t += t2
        else:     # only the batch's annotators have a gradient: their rows, lazily
            uniq = np.flatnonzero(np.bincount(who, minlength=a))
            self._adam.rows("competence_table", table, uniq, sums[b + uniq], alpha)
        self._adam.dense("dense", self._dense, self._flat_grads, alpha)
        if repeats:   # an item twice in the batch: one update of its row, gradients summed
            rows, first, inv = np.unique(rows, return_index=True, return_inverse=True)
            summed = np.zeros((len(rows), 2 * e), dtype=f32)
            np.add.at(summed, inv, g_items)
            g_items, x = summed, x[:, first]
        _Adam.apply(x[0], g_items, x[1], x[2], x[3], alpha)
        records = np.ascontiguousarray(x.transpose(1, 0, 2))                  # (b, 4, 2E)
        np.put(self._item_rows, rows, records.reshape(-1).view(self._item_rows.dtype))
        self._adam.t += 1
        return loss

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise RuntimeError("this FeatureFreeLIA is not fitted yet; call fit() first")

    def _items(self, items: Any) -> np.ndarray:
        n = self.annotations_.n_items
        idx = np.arange(n) if items is None else np.asarray(items)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or ((idx < 0) | (idx >= n)).any():
            raise CrowdDataError(f"feature-free model: items must be item codes in 0..{n - 1}")
        return idx

    def _truth(self, items: np.ndarray) -> np.ndarray:
        """``h_θ`` of items (n, K), float32 (computed as (K, n): long reductions)."""
        p = self.weights_
        h = p["truth_kernel"].T @ p["truth_embedding"][items].T
        h += p["truth_bias"][:, None]
        h -= h.max(axis=0)
        np.exp(h, out=h)
        h /= h.sum(axis=0)
        return h.T

    def predict_proba(self, items: Any = None) -> np.ndarray:
        """``h_θ``: (n, K) class probabilities of item codes (``None``: every fitted item)."""
        self._check_fitted()
        return self._truth(self._items(items)).astype("float64")

    def difficulty_tensors(self, items: Any = None) -> np.ndarray:
        """``D_i`` of Eq. 1, ``(n, K, K, L)`` (float32), for item codes (``None``: all)."""
        self._check_fitted()
        p, k = self.weights_, self.num_classes_
        d = p["difficulty_embedding"][self._items(items)] @ p["difficulty_kernel"]
        return (d + p["difficulty_bias"]).reshape(-1, k, k, int(self.latent_dim))

    def competence_tensors(self) -> np.ndarray:
        """``C_j`` of Eq. 1 for the fitted annotators, ``(A, K, K, L)`` (float32)."""
        self._check_fitted()
        p, k = self.weights_, self.num_classes_
        return (p["competence_table"] + p["competence_bias"]).reshape(
            -1, k, k, int(self.latent_dim))

    def posteriors(self, items: Any = None, annotations: Optional[Annotations] = None
                   ) -> np.ndarray:
        """E-step (Eq. 4) of the fitted items given ``annotations`` (item codes = the fitted
        items', annotator codes the fit's; default the fitted ones): ``(items, K)``; items
        without annotations get ``h_θ``. ``items`` must be ``None`` (the model knows only
        its fitted items); the argument mirrors the trainer's ``posteriors(x, ...)``."""
        self._check_fitted()
        if items is not None:
            self._items(items)
        n = self.annotations_.n_items
        ann = self.annotations_ if annotations is None else annotations
        if not isinstance(ann, Annotations) or ann.n_items != n:
            raise CrowdDataError(f"annotations must be an Annotations over the {n} fitted items")
        if ann.n_annotators > len(self.weights_["competence_table"]):
            raise CrowdDataError(f"annotations name {ann.n_annotators} annotators; the model "
                                 f"knows {len(self.weights_['competence_table'])}")
        k, lat, p = self.num_classes_, int(self.latent_dim), self.weights_
        joint = np.log(np.clip(self._truth(np.arange(n)), _EPS_H, 1)).T.astype("float64")
        d = p["difficulty_embedding"] @ p["difficulty_kernel"]               # (I, K·K·L)
        d += p["difficulty_bias"]
        table = p["competence_table"] + p["competence_bias"]                 # (A, K·K·L)
        per_item, ptr = ann.annotations_per_item(), ann.item_starts()
        start = 0
        while start < n:   # blocks of whole items, about _CHUNK annotations each
            stop = max(int(np.searchsorted(ptr, ptr[start] + _CHUNK, side="right")) - 1,
                       start + 1)
            lo, hi = ptr[start], ptr[stop]
            m = int(hi - lo)
            if m:
                z = np.take(table, ann.annotators[lo:hi], axis=0)            # (m, K·K·L)
                z += np.take(d, ann.items[lo:hi], axis=0)
                obs = _observed_log_confusions(z, ann.labels[lo:hi], k, lat)  # (K, m)
                # per-item sums: annotations are sorted by item, runs from ptr (reduceat sums
                # from each start to the next: only the items that have annotations)
                some = np.flatnonzero(per_item[start:stop]) + start
                joint[:, some] += np.add.reduceat(obs, ptr[some] - lo, axis=1)
            start = stop
        return softmax_rows(joint.T)[0]

    def predict_competence(self, items: Any = None, annotator_ids: Any = None,
                           class_probs: Any = None, batch_size: int = 1024) -> np.ndarray:
        """``Σ_k p_ik [Q_ij]_kk`` for items × annotators ``(n, m)``: ``p`` = ``class_probs``
        (n, K) or ``h_θ``; ``annotator_ids`` (m,) codes, ``None``: every annotator."""
        self._check_fitted()
        idx = self._items(items)
        comp = self.competence_tensors()
        ids = np.arange(len(comp)) if annotator_ids is None else np.asarray(annotator_ids)
        if ids.ndim != 1 or ids.dtype.kind not in "iu" or ((ids < 0) | (ids >= len(comp))).any():
            raise CrowdDataError(f"annotator_ids must be codes in 0..{len(comp) - 1}")
        p = self.predict_proba(idx) if class_probs is None else np.asarray(class_probs, "float64")
        if p.shape != (len(idx), self.num_classes_):
            raise CrowdDataError(f"class_probs must be ({len(idx)}, {self.num_classes_}), got "
                                 f"{p.shape}")
        comp = comp[ids][None]                                        # (1, m, K, K, L)
        out = np.empty((len(idx), len(ids)))
        for s in range(0, len(idx), batch_size):
            d = self.difficulty_tensors(idx[s:s + batch_size])[:, None]  # (b, 1, K, K, L)
            q = confusions(d, comp)                                      # (b, m, K, K)
            diag = np.diagonal(q, axis1=-2, axis2=-1).astype("float64")
            out[s:s + batch_size] = np.einsum("nmc,nc->nm", diag, p[s:s + batch_size])
        return out
