"""What the Bayesian label models share: the fit through the EM-step protocol, scoring new
annotations with the fitted state, and the Dirichlet algebra of their variational steps."""
from __future__ import annotations

from numbers import Real
from typing import Any, Optional, Sequence, Tuple

import numpy as np
from scipy.special import digamma, gammaln

from ...annotations import Annotations
from ...arguments import check_count
from ...numerics import elementwise, in_row_blocks, value_blocks
from ..em import Block, EMLabelModel, Summary
from ..labeling_functions import LabelingFunctionFallback

__all__ = ["BayesianLabelModel", "confusion_prior", "expected_log_dirichlet",
           "expected_log_confusions", "dirichlet_kl", "check_positive"]

_CONFUSION_BLOCK = 1 << 14   # values per block of expected_log_confusions (kept in the cache)


def confusion_prior(n_classes: int, a_v: float, b_v: float) -> np.ndarray:
    """(K, K) Dirichlet pseudo-counts of a confusion matrix: ``a_v`` on the diagonal (the
    annotator gives the true class), ``b_v`` elsewhere (symmetric, so either index may be the
    true class)."""
    return np.eye(n_classes) * (a_v - b_v) + b_v


def expected_log_dirichlet(concentration: np.ndarray, axis: int) -> np.ndarray:
    """``E[log θ] = ψ(α) − ψ(Σ α)`` of Dirichlet(α) distributions along ``axis`` (the
    mean-field expectation that replaces ``log θ`` in every VB update)."""
    expected = elementwise(digamma, concentration)
    expected -= digamma(concentration.sum(axis=axis, keepdims=True))
    return expected


def expected_log_confusions(counts: np.ndarray, prior: np.ndarray) -> Tuple[np.ndarray,
                                                                         np.ndarray]:
    """``(mu, E[log v])`` of the confusion Dirichlets ``mu = counts + prior``, both
    (A, L, S), normalised over the given label ``l`` (axis 1).

    ``counts``: (A, L, S) expected counts; ``prior``: (L, S) pseudo-counts shared by every
    annotator. A row ``(a, l)`` of nil counts (annotator ``a`` never gave label ``l``: most
    rows of a sparse crowd) has ``ψ(mu) = ψ(prior[l])``, computed once instead of per
    annotator; ψ is the M-step's costliest operation. Computed in blocks of annotators that
    stay in the cache through every pass, the blocks of large crowds on threads (each
    annotator's values are computed alone: the blocks change no bit).
    """
    counts = np.asarray(counts, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    mu = np.empty(counts.shape)
    expected = np.empty(counts.shape)
    prior_log = digamma(prior)
    per_annotator = max(int(np.prod(counts.shape[1:])), 1)
    rows = max(_CONFUSION_BLOCK // per_annotator, 1)

    def annotators(start: int, stop: int) -> None:
        for lo in range(start, stop, rows):
            hi = min(lo + rows, stop)
            c, m, e = counts[lo:hi], mu[lo:hi], expected[lo:hi]
            np.add(c, prior[None], out=m)
            seen = c.any(axis=2)                                     # (n, L)
            if seen.all():
                digamma(m, out=e)
            else:
                e[...] = prior_log[None]
                e[seen] = digamma(m[seen])
            e -= digamma(m.sum(axis=1, keepdims=True))

    in_row_blocks(value_blocks(counts.shape[0], per_annotator), annotators)
    return mu, expected


def dirichlet_kl(posterior: np.ndarray, prior: np.ndarray, axis: int,
                 expected_log: Optional[np.ndarray] = None) -> float:
    """``Σ KL(Dir(posterior) ‖ Dir(prior))`` over the Dirichlets along ``axis`` (arrays
    broadcast): ``log Γ(Σa) − Σ log Γ(a) − log Γ(Σb) + Σ log Γ(b) + Σ (a − b)(ψ(a) − ψ(Σa))``.

    The terms of the prior alone are computed on the prior's own Dirichlets (a prior shared
    by many posteriors is broadcast) and counted as often as it repeats. ``expected_log``:
    ``ψ(a) − ψ(Σa)`` of the posterior when the caller has it (the M-step's), else computed.
    """
    a = np.asarray(posterior, dtype=np.float64)
    shape = np.broadcast_shapes(a.shape, np.shape(prior))
    a = np.broadcast_to(a, shape)
    axis = axis % len(shape)
    b = np.asarray(prior, dtype=np.float64)
    b = b.reshape((1,) * (len(shape) - b.ndim) + b.shape)
    b = np.broadcast_to(b, b.shape[:axis] + (shape[axis],) + b.shape[axis + 1:])
    repeats = np.prod(shape) / max(b.size, 1)
    a_sum = a.sum(axis=axis)
    kl = float((gammaln(a_sum) - gammaln(a).sum(axis=axis)).sum())
    kl += float((gammaln(b).sum(axis=axis) - gammaln(b.sum(axis=axis))).sum()) * repeats
    if expected_log is None:
        expected_log = expected_log_dirichlet(a, axis)
    kl += float(((a - b) * expected_log).sum())
    return kl


def check_positive(model: Any, *names: str) -> None:
    """ValueError naming the first of ``names`` that is not a positive finite number
    (TypeError for a bool or a string: ``float()`` read ``True`` as 1 and ``"4"`` as 4, and
    the string then failed in numpy with a message naming no setting)."""
    for name in names:
        value = getattr(model, name)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
            raise TypeError(f"{type(model).__name__}: {name} must be a positive number, "
                            f"got {type(value).__name__} {value!r}")
        if not (np.isfinite(float(value)) and float(value) > 0):
            raise ValueError(f"{type(model).__name__}: {name} must be a positive number, "
                             f"got {value!r}")


class BayesianLabelModel(LabelingFunctionFallback, EMLabelModel):
    """Base of :class:`IBCC`, :class:`EBCC` and :class:`BWA`.

    ``fit(annotations, **reader_kwargs)`` is :func:`~crowd_keras.aggregation.em.run_em` over
    one block (:meth:`fit_block`; on labeling-function votes the abstain-aware model of
    :class:`LabelingFunctionFallback`). The fitted state of the last M-step is kept in
    ``state_``: ``predict_proba(new)`` is the E-step of the new items under it.

    Subclasses implement the protocol's steps, :meth:`_check_priors` and
    :meth:`_set_parameters` (the common fitted attributes from the last state).
    """

    #: settings that carry over to the labeling-function model
    _LF_SETTINGS: tuple = ("max_iter", "tol")
    accepts_gold = True
    accepts_pred_probs = True

    @property
    def fits_labelled_items_only(self) -> bool:  # type: ignore[override]
        """VB on the items with labels or gold (:meth:`Block.labelled`): an item without
        either has likelihood 1 under every parameter, so the posterior of the parameters
        does not depend on it (in the mean-field bound it would only pull ``q(τ)`` toward its
        own last value); not with an explicit ``init`` (one row per item of the block)."""
        return isinstance(getattr(self, "init", "random"), str)

    def __getattr__(self, name: str) -> Any:
        # a crowd fit's attribute (scores_, elbo_, state_ ...) after a fit that used the
        # labeling-function model: say why it is missing (only called when lookup failed)
        if hasattr(type(self), name):               # a property that raised: its own error
            return object.__getattribute__(self, name)
        if name.endswith("_") and not name.startswith("_") and \
                self.__dict__.get("labeling_function_model_") is not None:
            raise AttributeError(f"{type(self).__name__} has no {name}: this fit used the "
                                 "labeling-function model (regime_='labeling_functions'); "
                                 "pass labeling_functions='ignore' to fit this model as is")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_params(self) -> None:
        """The settings, checked before any fitted attribute is set (a refused refit leaves
        the previous fit whole): ``max_iter`` at least 1 (VB runs one iteration at least),
        then the model's priors (:meth:`_check_priors`)."""
        check_count(self.max_iter, f"{type(self).__name__} max_iter", 1)
        self._check_priors()

    def _check_priors(self) -> None:  # pragma: no cover - every model has priors
        raise NotImplementedError

    def init_state(self, summary: Summary) -> "BayesianLabelModel":
        self._check_params()
        super().init_state(summary)
        return self

    def finish(self, state: Any, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "BayesianLabelModel":
        self.state_ = state
        self.objective_ = np.asarray(history)
        self.n_iter_ = len(history)
        self._set_parameters(state, summary)
        return self

    def _set_parameters(self, state: Any, summary: Summary) -> None:  # pragma: no cover
        """Set ``class_priors_`` (K,) and ``confusion_matrices_`` (A, K, K) from ``state``."""
        raise NotImplementedError

    def _fit_crowd(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None,
                   pred_probs: Optional[np.ndarray] = None) -> "BayesianLabelModel":
        return self.fit_block(ann, item_log_prior, pred_probs)

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        latent, _ = self.e_step(Block.from_annotations(ann), self.state_)
        return self.class_posteriors(latent)
