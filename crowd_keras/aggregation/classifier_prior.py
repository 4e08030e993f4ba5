"""A classifier's probabilities as a per-item prior of the EM label models: the arithmetic.

With a classifier's (out-of-fold) probabilities ``p_i`` (I, K), each item's prior over
classes is ``π_i(k) ∝ ρ_k (p_i(k) / p̄_k)^w``: the class prior ρ times the classifier's
tempered likelihood ratio (p̄, the classifier's mean probabilities, divided out so that the
class prior counts once). The weight w is learned by maximising the expected complete
log-likelihood ``Σ_i Σ_k q_ik log π_i(k)`` with one Newton step per M-step; every statistic
is a sum over items (:func:`classifier_statistics`), so blocks add up.
:class:`~crowd_keras.aggregation.em.ClassifierAnnotator` runs it inside any EM-protocol model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..numerics import softmax_rows

__all__ = ["ClassifierState", "classifier_statistics", "classifier_m_step",
           "classifier_log_probs", "fitted_classifier_log_prior", "INITIAL_CLASSIFIER_WEIGHT",
           "MAX_CLASSIFIER_WEIGHT", "PROBABILITY_FLOOR"]


#: the classifier's weight before the first M-step (1: its probabilities taken as calibrated)
INITIAL_CLASSIFIER_WEIGHT = 1.0
#: bounds of the learned weight (0: the classifier has no say)
MAX_CLASSIFIER_WEIGHT = 50.0
#: probabilities below this count as it, so that one zero cannot veto a class outright
PROBABILITY_FLOOR = 1e-6


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


def classifier_statistics(post: np.ndarray, pred_probs: np.ndarray,
                          state: Optional[ClassifierState]) -> np.ndarray:
    """(5 + 2K,) sums over items for the classifier's M-step, at ``state`` (None: before the
    first M-step, which keeps w at :data:`INITIAL_CLASSIFIER_WEIGHT`).

    ``[g, h, Σ_i q_i(argmax p_i), I, w·I, Σ_i q_i (K), Σ_i p_i (K)]``: g and h the gradient
    and minus the curvature in w of ``Σ_i Σ_k q_ik log π_i(k)``, ``π_i ∝ ρ̂ exp(w ℓ_i)``
    (:meth:`ClassifierState.evidence`), w·I so that w travels with the sums."""
    n = float(len(post))
    probs = np.maximum(pred_probs, PROBABILITY_FLOOR)
    head = np.array([0.0, 1.0, post[np.arange(len(post)), np.argmax(pred_probs, axis=1)].sum(),
                     n, INITIAL_CLASSIFIER_WEIGHT * n])
    if state is not None:
        evidence = state.evidence(pred_probs)
        pi, _ = softmax_rows(state.weight * evidence + state.log_class_prior)
        mean = (pi * evidence).sum(axis=1)
        head[0] = ((post * evidence).sum(axis=1) - mean).sum()
        head[1] = ((pi * evidence * evidence).sum(axis=1) - mean * mean).sum()
        head[4] = state.weight * n
    return np.concatenate([head, post.sum(axis=0), probs.sum(axis=0)])


def classifier_m_step(sums: np.ndarray) -> ClassifierState:
    """The classifier's state from summed :func:`classifier_statistics`: one Newton step of
    the concave ``Σ_i Σ_k q_ik log π_i(k)`` in w from the weight the sums were taken at (a
    generalised EM step), clipped to ``[0, MAX_CLASSIFIER_WEIGHT]``; ``p̄`` and ``ρ̂`` from
    the summed probabilities and posteriors."""
    gradient, curvature, top, n, weighted = sums[:5]
    k = (len(sums) - 5) // 2
    mass, probs = sums[5:5 + k], sums[5 + k:]
    n = max(float(n), 1.0)
    # no curvature: the tempered prior is flat in w (one-hot at a large w, or a classifier
    # whose log-ratios are 0, e.g. uniform rows); a unit step along a real gradient, none
    # along rounding noise, which would walk w up and down at random
    step = gradient / curvature if curvature > 1e-12 else \
        float(np.sign(gradient)) if abs(gradient) > 1e-9 * n else 0.0
    weight = float(np.clip(weighted / n + step, 0.0, MAX_CLASSIFIER_WEIGHT))
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
