"""A classifier's probabilities as a per-item prior of the EM label models: the arithmetic.

With a classifier's (out-of-fold) probabilities ``p_i`` (I, K), each item's prior over
classes is ``π_i(k) ∝ ρ_k (p_i(k) / p̄_k)^w``: the class prior ρ times the classifier's
tempered likelihood ratio (p̄, the classifier's mean probabilities, divided out so that the
class prior counts once). The weight w is learned by maximising the expected complete
log-likelihood ``f(w) = Σ_i Σ_k q_ik log π_i(k)``, concave in w, in every M-step: its
gradient and curvature are summed at a few trial weights around the current one
(:data:`TRIAL_FACTORS`), the maximum is bracketed between two of them and found by a Newton
step inside the bracket (:func:`classifier_m_step`). Every statistic is a sum over items
(:func:`classifier_statistics`), so blocks add up.
:class:`~crowd_keras.aggregation.em.ClassifierAnnotator` runs it inside any EM-protocol model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..numerics import column_sums, softmax_rows

__all__ = ["ClassifierState", "classifier_statistics", "classifier_m_step",
           "classifier_log_probs", "fitted_classifier_log_prior", "trial_weights",
           "INITIAL_CLASSIFIER_WEIGHT", "MAX_CLASSIFIER_WEIGHT", "PROBABILITY_FLOOR",
           "TRIAL_FACTORS", "TRIAL_SCALE"]


#: the classifier's weight before the first M-step (0: the first E-step is the crowd's alone,
#: so the weight is first learned against the annotators' consensus, not against itself)
INITIAL_CLASSIFIER_WEIGHT = 0.0
#: bounds of the learned weight (0: the classifier has no say)
MAX_CLASSIFIER_WEIGHT = 50.0
#: probabilities below this count as it, so that one zero cannot veto a class outright
PROBABILITY_FLOOR = 1e-6
#: trial weights of an M-step: these multiples of ``max(w, TRIAL_SCALE)``, and w itself. One
#: Newton step from w alone overshoots where the curvature collapses (a confident classifier
#: at K >= 10: w went 1.0, 0, 1.2, 0, ... and never converged); a bracket cannot
TRIAL_FACTORS = (0.0, 1.0, 2.0)
TRIAL_SCALE = 0.25


def trial_weights(weight: float) -> np.ndarray:
    """(T,) the trial weights of an M-step from ``weight`` (:data:`TRIAL_FACTORS`)."""
    base = max(float(weight), TRIAL_SCALE)
    return np.array([base * c for c in TRIAL_FACTORS] + [float(weight)])


def classifier_log_probs(pred_probs: np.ndarray) -> np.ndarray:
    """(I, K) ``log max(p, PROBABILITY_FLOOR)``."""
    return np.log(np.maximum(pred_probs, PROBABILITY_FLOOR))


@dataclass
class ClassifierState:
    """The classifier's part of a :class:`ClassifierAnnotator` state.

    Attributes:
        weight: w. log_marginal: (K,) ``log p̄``, the classifier's mean probabilities (its own
        class prior, divided out so that the class prior is counted once). log_class_prior:
        (K,) ``log ρ̂``, the consensus' class shares, in the objective of w. quality: the mean
        posterior of the classifier's top class.
    """

    weight: float
    log_marginal: np.ndarray
    log_class_prior: np.ndarray
    quality: float = float("nan")

    def evidence(self, pred_probs: np.ndarray) -> np.ndarray:
        """(I, K) ``ℓ_ik = log p_ik − log p̄_k``: the classifier's log-likelihood ratios."""
        return classifier_log_probs(pred_probs) - self.log_marginal

    def item_log_prior(self, pred_probs: np.ndarray) -> np.ndarray:
        """(I, K) ``w ℓ_ik − log Σ_k ρ̂_k exp(w ℓ_ik)``: what the E-step adds to each
        item's class scores (the item constant keeps the objective a log-likelihood)."""
        scores = self.weight * self.evidence(pred_probs)
        _, log_z = softmax_rows(scores + self.log_class_prior)
        return scores - log_z[:, None]


_HEAD = 3                      # [Σ_i q_i(argmax p_i), I, w·I] before the trials' sums


def classifier_statistics(post: np.ndarray, pred_probs: np.ndarray,
                          state: Optional[ClassifierState]) -> np.ndarray:
    """(3 + 2T + 2K,) sums over items for the classifier's M-step, at ``state`` (None:
    before the first M-step, which keeps w at :data:`INITIAL_CLASSIFIER_WEIGHT`).

    ``[Σ_i q_i(argmax p_i), I, w·I, g (T), h (T), Σ_i q_i (K), Σ_i p_i (K)]``: g and h the
    gradient and minus the curvature in w of ``Σ_i Σ_k q_ik log π_i(k)``,
    ``π_i ∝ ρ̂ exp(t ℓ_i)`` (:meth:`ClassifierState.evidence`), at each trial weight t of
    :func:`trial_weights` (0 before the first M-step); w·I so that w travels with the sums."""
    n = float(len(post))
    probs = np.maximum(pred_probs, PROBABILITY_FLOOR)
    weight = INITIAL_CLASSIFIER_WEIGHT if state is None else float(state.weight)
    trials = trial_weights(weight)
    slopes = np.zeros(2 * len(trials))
    if state is not None:
        evidence = state.evidence(pred_probs)
        observed = (post * evidence).sum()
        distinct, where = np.unique(trials, return_inverse=True)
        for j, t in enumerate(distinct):
            # at w = 0 every item's π is ρ̂: no softmax over the items
            pi = np.exp(state.log_class_prior)[None, :] if t == 0.0 else \
                softmax_rows(t * evidence + state.log_class_prior)[0]
            weighted = pi * evidence
            # per-item sums over the K classes as a product with ones (numpy's reductions
            # over a short last axis step row by row)
            mean = weighted @ np.ones(weighted.shape[1])
            at = where == j
            slopes[:len(trials)][at] = observed - mean.sum()
            slopes[len(trials):][at] = (weighted * evidence).sum() - mean @ mean
    head = np.array([post[np.arange(len(post)), np.argmax(pred_probs, axis=1)].sum(), n,
                     weight * n])
    return np.concatenate([head, slopes, column_sums(post), column_sums(probs)])


def _maximum(trials: np.ndarray, gradient: np.ndarray, curvature: np.ndarray,
             current: float, noise: float) -> float:
    """The w that maximises the concave objective, from its ``gradient`` and ``curvature``
    (minus the second derivative) at the ``trials``: 0 when it falls at 0; else between the
    last trial where it rises and the next, by a Newton step from the current weight (exact
    at a fixed point), else from either end, else the secant; beyond the last trial, a Newton
    step from it of at most the last trial's length again."""
    order = np.argsort(trials, kind="stable")
    t, g, h = trials[order], gradient[order], curvature[order]
    rising = g > noise                    # rounding noise is no slope (a flat objective)
    if not rising[0]:
        return 0.0
    if rising.all():
        step = g[-1] / h[-1] if h[-1] > 1e-12 else t[-1]
        return float(t[-1] + min(step, max(t[-1], TRIAL_SCALE)))
    j = int(np.argmin(rising)) - 1       # the maximum lies in [t[j], t[j + 1]]
    lo, hi = t[j], t[j + 1]
    near = [int(np.argmin(np.abs(t - current)))] + [j, j + 1]
    for i in near:
        if h[i] > 1e-12:
            x = t[i] + g[i] / h[i]
            if lo <= x <= hi:
                return float(x)
    return float(lo + g[j] * (hi - lo) / (g[j] - g[j + 1]))


def classifier_m_step(sums: np.ndarray) -> ClassifierState:
    """The classifier's state from summed :func:`classifier_statistics`: the maximum in w of
    the concave ``Σ_i Σ_k q_ik log π_i(k)``, bracketed by the trial weights (:func:`_maximum`;
    a generalised EM step), clipped to ``[0, MAX_CLASSIFIER_WEIGHT]``; ``p̄`` and ``ρ̂`` from
    the summed probabilities and posteriors. Before the first M-step (no slopes): w stays
    :data:`INITIAL_CLASSIFIER_WEIGHT`."""
    top, n, weighted = sums[:_HEAD]
    n_trials = len(TRIAL_FACTORS) + 1
    gradient = sums[_HEAD:_HEAD + n_trials]
    curvature = sums[_HEAD + n_trials:_HEAD + 2 * n_trials]
    rest = sums[_HEAD + 2 * n_trials:]
    k = len(rest) // 2
    mass, probs = rest[:k], rest[k:]
    n = max(float(n), 1.0)
    current = weighted / n
    trials = trial_weights(current)
    if not np.any(curvature):          # no slopes summed: before the first M-step
        weight = current
    else:
        weight = _maximum(trials, gradient, curvature, current, 1e-9 * n)
    weight = float(np.clip(weight, 0.0, MAX_CLASSIFIER_WEIGHT))
    return ClassifierState(weight, np.log(probs / probs.sum()),
                           np.log((mass + 1.0) / (mass.sum() + k)), float(top / n))


def fitted_classifier_log_prior(model: Any, pred_probs: np.ndarray,
                                item_log_prior: Optional[np.ndarray] = None) -> np.ndarray:
    """(I, K) the item log-prior of a fit's classifier, ``w (log p_i − log p̄)`` (up to a
    constant per item), plus ``item_log_prior``: what
    :class:`~crowd_keras.aggregation.em.ClassifierAnnotator`'s E-step adds."""
    prior = model.classifier_weight_ * (classifier_log_probs(pred_probs)
                                        - np.log(model.classifier_marginal_))
    return prior if item_log_prior is None else prior + item_log_prior
