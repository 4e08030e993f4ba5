"""LIA-E's EM in numpy: the engine that fits :mod:`.model` (the feature-free LIA) without Keras.

The same model, objective, optimiser, first E-step and batches as
:class:`~.trainer.LIATrainer` on its default feature-free network (the paper's LIA-E); the
equations and their gradients are :mod:`.model`'s. This module lays the weights out for the
steps, draws the batches, runs AMSGrad (:mod:`crowd_keras.adam`: the item tables lazily,
on the batch's rows, as :class:`~crowd_keras.optimizers.LazyAdam`, everything else densely)
and the EM loop (:func:`run_em`, shared with the trainer).

A step costs O(annotations of the batch) in a few dozen vectorised numpy calls: no graph,
no tracing, no compile, which at 10⁵-10⁶ annotations is most of what a Keras fit spends.
Numpy only (layer 2): :class:`~.label_model.LIA` runs this when it is fitted without
features, and builds the Keras trainer from these weights only if asked for it.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, Optional

import numpy as np
from scipy import sparse

from .. import adam
from ..aggregation.base import check_flags
from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError, NotFittedError
from ..numerics import row_order
from ..params import Params
from ..progress import progress_bar
from .model import (annotator_penalty, competence_start, confusions, e_step, initial_biases,
                    item_keys, item_tables_start, objective, truth_probabilities, vote_fractions)

__all__ = ["FeatureFreeLIA", "run_em", "lia_batch_size"]

# items per step with batch_size=None: every item up to this (full batch), then this or one
# M-step's share of every item. One bound for both, so a step's work grows with the items
# without a jump
_MIN_BATCH = 1024        # the paper's batch
_BETA_1, _BETA_2, _ADAM_EPS = 0.9, 0.999, 1e-7   # Keras' Adam defaults
_ADAM_BLOCK = 1 << 16    # elements per block of a large AMSGrad update (_Adam.apply)

_ROW_TABLES = ("truth_embedding", "difficulty_embedding")   # updated on the batch's rows
_DENSE = ("truth_kernel", "truth_bias", "difficulty_kernel", "difficulty_bias",
          "competence_bias")                                  # updated whole, every step


def check_step_settings(fitter: Any) -> None:
    """The step counts and numbers of an LIA fit (the numpy engine's or the trainer's),
    before any work: ``m_steps=0`` learned nothing (numpy) or failed in Keras with "max()
    arg is an empty sequence", ``2.5`` steps were truncated, a negative count ran nothing."""
    name = type(fitter).__name__
    check_count(fitter.em_iterations, f"{name} em_iterations", 0)
    check_count(fitter.m_steps, f"{name} m_steps", 1)
    if hasattr(fitter, "marginal_steps"):
        check_count(fitter.marginal_steps, f"{name} marginal_steps", 0)
    check_number(fitter.tol, f"{name} tol", low=-np.inf)
    if fitter.seed is not None:
        check_count(fitter.seed, f"{name} seed", 0)
    check_model_settings(fitter)


def check_model_settings(fitter: Any) -> None:
    """The sizes, strengths and rates of an LIA fit (``LIA``, the numpy engine's, the
    trainer's), before any work: a negative learning rate or L2 strength was taken as given
    (gradient ascent, a reward for large weights), a size of 0 or ``"16"`` failed deep in
    numpy or Keras with a message naming no setting. Settings a class lacks are skipped; one
    whose default is None may be None (LIA's L2 strengths: chosen at fit)."""
    name = type(fitter).__name__
    defaults = {p.name: p.default
                for p in inspect.signature(type(fitter).__init__).parameters.values()}

    def given(setting: str) -> bool:
        return setting in defaults and not (defaults[setting] is None and
                                            getattr(fitter, setting) is None)

    for setting, least in (("latent_dim", 1), ("embedding_dim", 1),
                           ("instance_embedding_dim", 1), ("batch_size", 1), ("num_classes", 2)):
        if given(setting):
            check_count(getattr(fitter, setting), f"{name} {setting}", least)
    for setting in ("classifier_l2", "instance_l2", "annotator_l2"):
        if given(setting):
            check_number(getattr(fitter, setting), f"{name} {setting}")
    for setting in ("learning_rate", "marginal_learning_rate", "annotator_scale"):
        if given(setting) and not check_number(getattr(fitter, setting), f"{name} {setting}",
                                               low=-np.inf) > 0:
            raise ValueError(f"{name} {setting} must be a finite number > 0, got "
                             f"{getattr(fitter, setting)!r}")
    if given("marginal") and fitter.marginal not in ("annotation", "item"):
        raise ValueError(f"{name} marginal must be 'annotation' or 'item', got "
                         f"{fitter.marginal!r}")
    check_flags(fitter)


def checked_initial_posteriors(initial_posteriors: Any, n: int, k: int) -> np.ndarray:
    """``initial_posteriors`` as float64 ``(n, k)`` probabilities, rows renormalised, or
    CrowdDataError naming the first row that is not a distribution (finite, non-negative,
    summing to 1 within 1e-3): NaN rows gave NaN posteriors and scores were taken as given."""
    post = np.asarray(initial_posteriors, dtype="float64")
    if post.shape != (n, k):
        raise CrowdDataError(f"initial_posteriors must be ({n}, {k}), got {post.shape}")
    sums = post.sum(axis=1)
    bad = ~np.isfinite(post).all(axis=1) | (post < 0).any(axis=1) | (np.abs(sums - 1) > 1e-3)
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"initial_posteriors row {i} is not a probability distribution "
                             f"(finite, non-negative, summing to 1): {post[i].tolist()} "
                             f"({int(bad.sum())} such rows)")
    return post / sums[:, None]


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
    the names of :data:`~.model.WEIGHT_SHAPES`), ``history_`` (one dict per M-step with its mean
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
        ``init_biases``): item tables ``U(±0.05)`` / ``N(0, 0.1²)`` (each row from its
        item's content key, :func:`~.model.item_tables_start`), kernels Glorot-uniform,
        the annotator table ``N(0, 0.01²)`` (each row from its annotator's fingerprint,
        :func:`~.model.competence_start`), biases from :func:`initial_biases`."""
        k, e, width = self.num_classes_, int(self.embedding_dim), self.width_
        comp_bias, truth_bias = initial_biases(post, annotations, int(self.latent_dim))
        # the item tables' rows from the items' content keys, not their codes (any order or
        # names, same rows)
        truth_table, difficulty_table = item_tables_start(annotations, e, self.seed)
        return {
            "truth_embedding": truth_table,
            "truth_kernel": _glorot(rng, (e, k)), "truth_bias": truth_bias,
            "difficulty_embedding": difficulty_table,
            "difficulty_kernel": _glorot(rng, (e, width)),
            "difficulty_bias": np.zeros(width, dtype="float32"),
            # the trainer's own draw (per annotator, from the seed): the same table
            "competence_table": competence_start(annotations, width, self.seed),
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
                :data:`~.model.WEIGHT_SHAPES` (e.g. a Keras trainer's, to compare the two); default:
                drawn from ``seed`` as the trainer draws them.
        """
        if not isinstance(annotations, Annotations):
            raise CrowdDataError(f"annotations must be a crowd_keras.Annotations, got "
                                 f"{type(annotations).__name__}")
        check_step_settings(self)
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
            post = checked_initial_posteriors(initial_posteriors, n, k)
        rng = np.random.default_rng(self.seed)
        if initial_weights is None:
            weights = self._initial_weights(annotations, post, np.random.default_rng(
                None if self.seed is None else [int(self.seed), 1]))
        else:
            weights = self._check_weights(initial_weights, n, annotations.n_annotators)
        self.annotations_ = annotations
        self.batch_size_ = lia_batch_size(self.batch_size, n, self.m_steps)
        # the batches follow the items' content keys, not their codes or ids (the
        # trainer's order too)
        self._item_keys = item_keys(annotations)
        self._fitting_layout(weights)
        self.history_ = []
        post = run_em(self, post, lambda target: self._m_step(target, int(self.m_steps), rng),
                      lambda: self.posteriors(annotations=annotations))
        for name in (*_ROW_TABLES, *_DENSE, "competence_table"):   # plain arrays again
            weights[name] = np.array(weights[name], order="C")
        del self._item_rows, self._dense, self._grads, self._flat_grads, self._item_keys
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
        # an item's record (4·2E floats) as one value: numpy gathers and (much faster)
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
                 else row_order(n, b, steps, rng, self._item_keys).reshape(steps, b))  # S = 1: full
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
        # the steps' (m, K·K·L) gathers of annotator and item rows (model.annotation_terms)
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

    def _step(self, rows: np.ndarray, w: np.ndarray, who: np.ndarray, labels: np.ndarray,
              loc: np.ndarray, pairs: np.ndarray, repeats: bool) -> float:
        """One AMSGrad step on a batch: ``rows (b,)`` items with E-step targets ``w (K, b)``;
        their ``m`` annotations: ``who, labels, loc (m,)`` (annotator, label, row of the
        batch), ``pairs (m, 2)`` (see :meth:`_sums`). ``repeats``: the batch may hold an item
        twice (it spans two shuffled passes). Returns the loss (:func:`.model.objective`)."""
        p, grads = self.weights_, self._grads
        n = self.annotations_.n_items
        b = len(rows)
        f32 = np.float32
        al2 = f32(self.annotator_l2)
        table = p["competence_table"]                                  # (A, K·K·L)
        a = len(table)
        e = int(self.embedding_dim)
        # the batch's rows of both item tables and of their moments, (4, b, 2E) (contiguous:
        # the update's dozen passes over strided rows cost more than this copy)
        x = np.take(self._item_rows, rows).view(np.float32).reshape(b, 4, 2 * e)
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
        loss, g_items, sums = objective(
            p, x[0], w, who, loc, labels, lambda g: self._sums(pairs, b + a, g), grads,
            n_items=n, latent_dim=int(self.latent_dim), classifier_l2=self.classifier_l2,
            instance_l2=self.instance_l2, row_penalty=self._row_penalty, ones=self._ones,
            work=self._work)
        alpha = self._adam.alpha()
        if al2:   # a weight penalty: the table's gradient is dense (as in Keras)
            g_t = grads["competence_table"]                                 # (A, K·K·L)
            g_t[...] = sums[b:]
            loss += annotator_penalty(table, al2 / f32(n), self.annotator_scale, g_t)
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
            raise NotFittedError("this FeatureFreeLIA is not fitted yet; call fit() first")

    def _items(self, items: Any) -> np.ndarray:
        n = self.annotations_.n_items
        idx = np.arange(n) if items is None else np.asarray(items)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or ((idx < 0) | (idx >= n)).any():
            raise CrowdDataError(f"feature-free model: items must be item codes in 0..{n - 1}")
        return idx

    def _truth(self, items: np.ndarray) -> np.ndarray:
        """``h_θ`` of items (n, K), float32 (computed as (K, n): long reductions)."""
        p = self.weights_
        return truth_probabilities(p["truth_kernel"], p["truth_bias"],
                                   p["truth_embedding"][items]).T

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
        if ann.n_classes > self.num_classes_:   # was numpy's IndexError from the E-step
            raise CrowdDataError(f"annotations have {ann.n_classes} classes; the model has "
                                 f"{self.num_classes_}")
        return e_step(self.weights_, ann, int(self.latent_dim))

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
