"""GLAD: annotator ability and item difficulty (Whitehill, Ruvolo, Wu, Bergsma & Movellan 2009)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, log_expit

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import pair_index, softmax_rows
from ..progress import Convergence
from .base import LabelModel, as_annotations

__all__ = ["GLAD"]


def _correct_logit(ability: np.ndarray, log_inv_difficulty: np.ndarray) -> np.ndarray:
    """The logit of Eq. 1, ``p(l = z) = σ(α_a e^{β_i})``, per annotation (vectors of one length)."""
    return ability * np.exp(log_inv_difficulty)


class GLAD(LabelModel):
    """GLAD, multi-class as in crowd-kit: ``p(l = z_i) = σ(α_a e^{β_i})``, the rest spread evenly.

    Annotator ``a`` has an ability ``α_a ∈ ℝ`` (negative: adversarial) and item ``i`` an
    inverse difficulty ``e^{β_i} > 0`` (Whitehill et al. 2009, Eq. 1); a wrong label is any of
    the ``K − 1`` other classes with equal probability. Gaussian priors ``α ~ N(alpha_prior,
    1)``, ``β ~ N(beta_prior, 1)`` (crowd-kit's defaults). EM: the E-step is Eq. 3 with two
    ``bincount`` passes over the annotations; the M-step maximises the expected complete
    log-likelihood ``Q(α, β)`` (Eqs. 4-5). ``Q`` separates per annotator in ``α`` and per item in
    ``β``, so instead of crowd-kit's joint conjugate gradient it alternates exact-gradient
    diagonal Newton steps on ``α`` and on ``β`` (``newton_rounds`` per M-step, steps capped at 1,
    warm-started): O(annotations) each, no Python loop over annotations.

    Args:
        max_iter, tol: EM stops when ``Q`` per annotation changes by less than ``tol``.
        alpha_prior, beta_prior: means of the Gaussian priors on ability and log inverse
            difficulty (unit variance).
        learn_class_prior: learn the class prior (default: uniform, as the paper and crowd-kit).
        newton_rounds: alternations of the α and β Newton steps per M-step.
        progress: show a progress bar over EM iterations.

    Attributes:
        posteriors_: (items, K).
        abilities_: (annotators,) α.
        log_inverse_difficulties_: (items,) β.
        confusion_matrices_: (annotators, K, K), each annotator's matrix averaged over its
            items (item-specific matrices are what the model uses).
        class_priors_: (K,).
        n_iter_: EM iterations run.
        log_likelihood_: ``Q`` per annotation, per iteration.
    """

    def __init__(self, max_iter: int = 100, tol: float = 1e-5, alpha_prior: float = 1.0,
                 beta_prior: float = 1.0, learn_class_prior: bool = False,
                 newton_rounds: int = 5, progress: bool = False) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.alpha_prior = alpha_prior
        self.beta_prior = beta_prior
        self.learn_class_prior = learn_class_prior
        self.newton_rounds = newton_rounds
        self.progress = progress

    def fit(self, annotations: Any, **kwargs: Any) -> "GLAD":
        ann = as_annotations(annotations, **kwargs)
        if ann.n_classes < 2:
            raise CrowdDataError("GLAD needs at least two classes")
        k, items, annotators = ann.n_classes, ann.items, ann.annotators
        alpha = np.full(ann.n_annotators, float(self.alpha_prior))
        beta = np.full(ann.n_items, float(self.beta_prior))
        log_prior = np.full(k, -np.log(k))
        post = self._e_step(ann, alpha, beta, log_prior)
        loop = Convergence(self.max_iter, self.tol, "GLAD EM", self.progress)
        for _ in loop:
            p = post[items, ann.labels]                     # q(z_i = l_n): label n is correct
            for _ in range(int(self.newton_rounds)):
                alpha = self._newton_alpha(ann, p, alpha, beta)
                beta = self._newton_beta(ann, p, alpha, beta)
            if self.learn_class_prior:
                mass = post.sum(axis=0) + 0.01
                log_prior = np.log(mass / mass.sum())
            q = self._q_value(ann, p, alpha, beta) / max(ann.n_annotations, 1)
            post = self._e_step(ann, alpha, beta, log_prior)
            loop.record(q)
        history = loop.history
        self.annotations_ = ann
        self.posteriors_ = post
        self.abilities_ = alpha
        self.log_inverse_difficulties_ = beta
        self.class_priors_ = np.exp(log_prior)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        correct = expit(_correct_logit(alpha[annotators], beta[items]))
        n = ann.annotations_per_annotator()
        acc = np.bincount(annotators, weights=correct, minlength=ann.n_annotators)
        acc = np.where(n > 0, acc / np.maximum(n, 1), expit(alpha * np.exp(self.beta_prior)))
        off = (1 - acc) / (k - 1)
        self.confusion_matrices_ = np.where(np.eye(k, dtype=bool), acc[:, None, None],
                                            off[:, None, None])
        return self

    # ------------------------------------------------------------------ EM pieces
    def _log_terms(self, ann: Annotations, alpha: np.ndarray,
                   beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _correct_logit(alpha[ann.annotators], beta[ann.items])
        return log_expit(x), log_expit(-x) - np.log(ann.n_classes - 1)

    def _e_step(self, ann: Annotations, alpha: np.ndarray, beta: np.ndarray,
                log_prior: np.ndarray) -> np.ndarray:
        """Eq. 3: ``q_ik ∝ ρ_k Π_n [σ(x_n) if l_n = k else (1 − σ(x_n))/(K − 1)]``."""
        k = ann.n_classes
        right, wrong = self._log_terms(ann, alpha, beta)
        logits = np.bincount(ann.items, weights=wrong, minlength=ann.n_items)[:, None] + \
            np.bincount(pair_index(ann.items, ann.labels, k), weights=right - wrong,
                        minlength=ann.n_items * k).reshape(ann.n_items, k)
        return softmax_rows(logits + log_prior)[0]

    def _q_value(self, ann: Annotations, p: np.ndarray, alpha: np.ndarray,
                 beta: np.ndarray) -> float:
        """Eq. 4-5: expected complete log-likelihood plus the log priors."""
        right, wrong = self._log_terms(ann, alpha, beta)
        return float((p * right + (1 - p) * wrong).sum()
                     - 0.5 * ((alpha - self.alpha_prior) ** 2).sum()
                     - 0.5 * ((beta - self.beta_prior) ** 2).sum())

    def _newton_alpha(self, ann: Annotations, p: np.ndarray, alpha: np.ndarray,
                      beta: np.ndarray) -> np.ndarray:
        """A diagonal Newton step on the abilities (Q is concave in α for fixed β)."""
        eb = np.exp(beta[ann.items])
        sg = expit(alpha[ann.annotators] * eb)
        grad = np.bincount(ann.annotators, weights=(p - sg) * eb, minlength=len(alpha)) \
            - (alpha - self.alpha_prior)
        hess = np.bincount(ann.annotators, weights=sg * (1 - sg) * eb * eb,
                           minlength=len(alpha)) + 1.0
        return alpha + np.clip(grad / hess, -1.0, 1.0)

    def _newton_beta(self, ann: Annotations, p: np.ndarray, alpha: np.ndarray,
                     beta: np.ndarray) -> np.ndarray:
        """A diagonal Newton-type step on the log inverse difficulties (curvature plus
        |first-order term|, which keeps it an ascent step where Q is not concave in β)."""
        x = _correct_logit(alpha[ann.annotators], beta[ann.items])
        sg = expit(x)
        r = (p - sg) * x
        first = np.bincount(ann.items, weights=r, minlength=len(beta))
        grad = first - (beta - self.beta_prior)
        hess = np.bincount(ann.items, weights=sg * (1 - sg) * x * x, minlength=len(beta)) \
            + np.abs(first) + 1.0
        return beta + np.clip(grad / hess, -1.0, 1.0)

    # ------------------------------------------------------------------ new annotations
    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        """Items fitted before keep their difficulty; new items get the prior's."""
        known = pd.Index(self.annotations_.item_ids).get_indexer(ann.item_ids)
        beta = np.where(known >= 0, self.log_inverse_difficulties_[np.maximum(known, 0)],
                        float(self.beta_prior))
        return self._e_step(ann, self.abilities_, beta, np.log(self.class_priors_))

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: id, number of annotations, accuracy on its own items (``σ(α e^β)``
        averaged over them) and ability ``α``."""
        quality = super().annotator_quality_
        quality["accuracy"] = np.diagonal(self.confusion_matrices_, axis1=1, axis2=2)[:, 0]
        quality["ability"] = self.abilities_
        return quality
