"""BWA: Bayesian weighted average (Li, Rubinstein & Cohn, WWW 2019).

Each class ``k`` is a binary problem ("is the truth k?") relaxed to a regression (section 3):
the item's score ``z_ik ∈ [0, 1]`` has a normal prior ``N(μ_k, 1/λ)``, each annotator ``a``
reports ``y_iak = [y_ia = k] ~ N(z_ik, 1/v_ak)`` with a precision ``v_ak`` that has a
``Gamma(a_v, b_k)`` prior. EM alternates (section 3, the binary model's updates):

- M-step: ``μ_k = mean_i z_ik`` and the posterior mode of every precision,
  ``v_ak = (a_v + N_a) / (b_k + Σ_{i ∈ a} (z_ik − y_iak)²)``, ``N_a`` = labels of ``a``;
- E-step: ``z_ik = (λ μ_k + Σ_{a ∈ i} v_ak y_iak) / (λ + Σ_{a ∈ i} v_ak)``, the precision-
  weighted average of the votes (one sparse product ``X [V_num | V_den]``).

The rate ``b_k = a_v c Σ_i n_i z⁰_ik (1 − z⁰_ik) / n`` sets the prior's mean precision from
the spread of the majority vote ``z⁰`` (n_i labels of item i, n labels in all); with
``prior_correction`` ``c = 4 (1 − 1/K)`` (the variance of a K-class vote relative to a binary
one), else ``c = 1``. The statistics ``Σ_{i ∈ a, y_ia = l} z_ik``, ``Σ_{i ∈ a} z_ik²``,
``Σ_i z_ik`` and ``Σ_i n_i z⁰_ik (1 − z⁰_ik)`` are sums over items (one sparse product
``Xᵀ [z | z²]`` and the votes' counts).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ...annotations import Annotations
from ...numerics import (column_sums, in_row_blocks, normalize_rows, sparse_dot, sparse_row_blocks,
                          stored_rows, value_blocks)
from ..classifier_prior import fitted_classifier_log_prior
from ..em import Block, Summary
from .base import BayesianLabelModel, check_positive

__all__ = ["BWA", "bwa_statistics", "bwa_m_step", "bwa_e_step", "vote_spread"]

#: pseudo-count of the confusion matrices implied by the fitted scores (BWA has none)
CONFUSION_SMOOTHING = 0.01
_E_STEP_ROWS = 1 << 12   # items per run of the E-step's arithmetic (its arrays stay in the cache)
_MAX_PRECISION = 1e9      # an annotator's precision on a class (a vote's weight) at most


def bwa_statistics(block: Block, scores: np.ndarray) -> tuple:
    """Sums over the block's items.

    Returns:
        ``(products, score_mass, spread, n_items)``: products (A·K, 2K), ``[a·K + l, k]`` =
        ``Σ_{i ∈ a, y_ia = l} z_ik`` and ``[a·K + l, K + k]`` = ``Σ_{i ∈ a, y_ia = l} z_ik²``;
        score_mass (K,) ``Σ_i z_ik``; spread (K,) ``Σ_i n_i z⁰_ik (1 − z⁰_ik)`` of the vote
        shares ``z⁰`` (:func:`vote_spread`, made once per block); n_items the block's items
        (the class means' denominator).
    """
    n, k = scores.shape
    both = np.empty((n, 2 * k))                                     # [z | z²]

    def fill(lo: int, hi: int) -> None:
        both[lo:hi, :k] = scores[lo:hi]
        np.multiply(scores[lo:hi], scores[lo:hi], out=both[lo:hi, k:])

    in_row_blocks(value_blocks(n, 2 * k), fill)
    products = sparse_dot(block.XT, both)
    spread = block.memo(("bwa vote spread", k), lambda: vote_spread(block.label_counts(k)))
    return products, column_sums(scores), spread, n


def vote_spread(counts: np.ndarray) -> np.ndarray:
    """(K,) ``Σ_i n_i z⁰_ik (1 − z⁰_ik) = Σ_i c_ik − c_ik² / n_i`` of the vote counts ``c``
    (I, K), ``n_i = Σ_k c_ik``, ``z⁰_i = c_i / n_i`` (items without votes add 0): a statistic
    of the votes alone."""
    per_item = counts.sum(axis=1, keepdims=True)
    return (counts - np.divide(counts * counts, per_item, out=np.zeros_like(counts),
                               where=per_item > 0)).sum(axis=0)


def bwa_m_step(products: np.ndarray, score_mass: np.ndarray, spread: np.ndarray,
               votes: np.ndarray, n_items: int, a_v: float, lambda_: float,
               correction: float) -> tuple:
    """Class means and annotator precisions from the summed statistics.

    Args:
        products, score_mass, spread: :func:`bwa_statistics` summed over blocks.
        votes: (A, K) labels of each annotator per class. n_items: the items fitted.
        a_v, lambda_: the priors' shape and the scores' prior precision.
        correction: ``c`` of the precisions' rate (see the module docstring).

    Returns:
        ``(weights, mean, precisions, sums)``: weights (A·K, 2K) of the E-step,
        ``[a·K + l, k] = v_ak [l = k]`` and ``[a·K + l, K + k] = v_ak``; mean (K,) μ;
        precisions (A, K) v; sums (A, K, K) ``Σ_{i ∈ a, y_ia = l} z_ik`` at ``[a, k, l]``.
    """
    a, k = votes.shape
    linear = products[:, :k].reshape(a, k, k)                       # [a, l, k]
    squares = products[:, k:].reshape(a, k, k).sum(axis=1)          # Σ_{i ∈ a} z_ik²
    agree = np.einsum("akk->ak", linear)                             # Σ_{i ∈ a, y = k} z_ik
    residual = np.maximum(squares - 2.0 * agree + votes, 0.0)        # Σ_{i ∈ a} (z_ik − y_iak)²
    rate = a_v * correction * spread / max(float(votes.sum()), 1.0)
    # a class whose votes never disagree has neither spread nor residual: its precision
    # would be 1/0, and the vote factors (a difference of such sums) would cancel to 0
    precisions = np.minimum((a_v + votes.sum(axis=1, keepdims=True))
                            / np.maximum(rate + residual, 1e-300), _MAX_PRECISION)
    weights = np.zeros((a, k, 2 * k))
    diagonal = np.arange(k)
    weights[:, diagonal, diagonal] = precisions
    weights[:, :, k:] = precisions[:, None, :]
    mean = score_mass / max(n_items, 1)
    return weights.reshape(a * k, 2 * k), mean, precisions, linear.transpose(0, 2, 1)


def bwa_e_step(X: sp.csr_matrix, weights: np.ndarray, mean: np.ndarray, lambda_: float,
               item_log_prior: Optional[np.ndarray] = None) -> Tuple[np.ndarray, float]:
    """Scores z (I, K) and the Gaussian log-likelihood (up to constants) of the votes and the
    scores' prior under the precisions, ``−½ Σ_ik [Σ_{a ∈ i} v_ak (y_iak − z_ik)² +
    λ (z_ik − μ_k)²]``.

    ``item_log_prior`` (I, K) re-weights the scores by ``exp(prior − max prior)``: a class
    with ``-inf`` gets score 0, and an item with one class left is known (score 1 there).

    The product's row blocks (:func:`~crowd_keras.numerics.sparse_row_blocks`, on threads)
    are turned into scores by their own threads, a cache-sized run of items at a time: every
    value is computed alone, so the runs change no bit.
    """
    k = mean.shape[0]
    n = X.shape[0]
    scores = np.empty((n, k))
    fit = np.empty((n, k))                     # per item and class: summed in (I, K) order
    means = mean[:, None]

    def averages(part: np.ndarray, start: int, stop: int) -> None:
        for lo in range(0, stop - start, _E_STEP_ROWS):
            hi = min(lo + _E_STEP_ROWS, stop - start)
            # in (K, items) layout: numpy steps an (items, K) array of few classes row by
            # row, the more so with the (K,) means broadcast along that short axis
            agree = np.ascontiguousarray(part[lo:hi, :k].T)
            total = np.ascontiguousarray(part[lo:hi, k:].T)
            z = (lambda_ * means + agree) / (lambda_ + total)
            if item_log_prior is not None:
                rows = z.T.copy()
                prior = item_log_prior[start + lo:start + hi]
                top = prior.max(axis=1, keepdims=True)
                allowed = np.exp(prior - top)
                rows *= allowed
                known = (allowed > 0).sum(axis=1) == 1
                rows[known] = allowed[known]
                z = np.ascontiguousarray(rows.T)
            terms = agree - 2.0 * z * agree + z * z * total + lambda_ * (z - means) ** 2
            scores[start + lo:start + hi] = z.T
            fit[start + lo:start + hi] = terms.T

    sparse_row_blocks(X, weights, then=averages)
    return scores, float(-0.5 * fit.sum())


class BWA(BayesianLabelModel):
    """Bayesian weighted average: one binary model per class, one precision per annotator and
    class (Li, Rubinstein & Cohn 2019; their defaults). Built for highly redundant crowds.

    Args:
        a_v: shape of the precisions' Gamma prior (pseudo-labels per annotator).
        lambda_: prior precision of the scores around the class mean.
        prior_correction: scale the precisions' prior rate by ``4 (1 − 1/K)``.
        max_iter: maximum number of EM iterations.
        tol: stop when the log-likelihood per annotation (:func:`bwa_e_step`) moves by less.
        progress: show a progress bar over iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"`` (see
            :class:`~crowd_keras.aggregation.labeling_functions.LabelingFunctionFallback`).

    Attributes:
        scores_: (items, K) the weighted averages z (each in [0, 1]; rows need not sum to 1).
        precisions_: (annotators, K).
        state_: the last M-step's ``(weights, μ, v, sums)``.
        objective_: the objective per iteration.
        n_iter_: EM iterations run.
        votes_: (annotators, K) each annotator's number of votes per class.
        n_items_: the number of items.
        correction_: the factor of the precisions' prior rate (``4 (1 − 1/K)``, or 1
            without ``prior_correction``).
        posteriors_: (items, K) the scores normalised per item.
        class_priors_: (K,) the class means μ, normalised.
        confusion_matrices_: (annotators, K, K), rows = true class:
            ``Σ_{i ∈ a, y_ia = l} z_ik`` (+ :data:`CONFUSION_SMOOTHING`) normalised over l
            (BWA has no confusion matrix; this is the one its scores imply).
    """

    def __init__(self, a_v: float = 15.0, lambda_: float = 1.0, prior_correction: bool = True,
                 max_iter: int = 500, tol: float = 1e-6, progress: bool = False,
                 labeling_functions: str = "auto") -> None:
        self.a_v = a_v
        self.lambda_ = lambda_
        self.prior_correction = prior_correction
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _check_priors(self) -> None:
        check_positive(self, "a_v", "lambda_")

    # the EM-step protocol (crowd_keras.aggregation.em)
    def init_state(self, summary: Summary) -> "BWA":
        super().init_state(summary)
        self.votes_ = summary.votes.astype(np.float64)
        self.n_items_ = summary.n_items
        k = summary.n_classes
        self.correction_ = 4.0 * (1.0 - 1.0 / k) if self.prior_correction else 1.0
        return self

    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        return bwa_statistics(block, latent)

    def m_step(self, stats: tuple) -> tuple:
        # μ over the items fitted: an unlabelled item's score is μ, so the fixed point is the
        # one with every item (Block.labelled)
        products, score_mass, spread, n_items = stats
        return bwa_m_step(products, score_mass, spread, self.votes_, n_items, self.a_v,
                          self.lambda_, self.correction_)

    def e_step(self, block: Block, state: tuple) -> Tuple[np.ndarray, float]:
        return bwa_e_step(block.X, state[0], state[1], self.lambda_, block.item_log_prior)

    def class_posteriors(self, latent: np.ndarray) -> np.ndarray:
        return normalize_rows(np.maximum(latent, 0.0))

    def own_vote_factors(self, votes: sp.csr_matrix, start: int, stop: int) -> np.ndarray:
        """(stop - start, K) the factor each of the votes ``start:stop`` of ``votes`` put on
        its item's class posterior
        (:meth:`~crowd_keras.aggregation.base.LabelModel.own_vote_factors`).

        BWA's posterior is the normalised average ``z_ik = (λ μ_k + Σ_{a ∈ i} v_ak y_iak) /
        (λ + Σ_{a ∈ i} v_ak)`` (Li et al. 2019, section 3), not a product of per-vote
        factors; vote ``(i, a, l)`` changed class k by ``z_ik / z_ik^{-a}``, where
        ``z^{-a}`` leaves ``v_ak y_iak`` and ``v_ak`` out of the sums, so dividing it out
        gives the average without the vote (``inf`` where nothing is left: a class only the
        vote named, whose mean ``μ_k`` is 0). The sums are the E-step's, recomputed for the
        votes' items (an item's log-prior multiplies both averages alike and cancels)."""
        if getattr(self, "labeling_function_model_", None) is not None:
            return super().own_vote_factors(votes, start, stop)   # the abstain-aware model's
        self._check_fitted()
        weights, mean, precisions = self.state_[:3]
        k = len(mean)
        if stop <= start:
            return np.ones((0, k))
        rows = stored_rows(votes, start, stop)
        sums = np.asarray(votes[rows[0]:rows[-1] + 1] @ weights)[rows - rows[0]]   # (n, 2K)
        numerator = self.lambda_ * mean + sums[:, :k]
        denominator = self.lambda_ + sums[:, k:]
        columns = votes.indices[start:stop]
        own = precisions[columns // k]                                   # (n, K) v_ak
        numerator_without = numerator.copy()
        numerator_without[np.arange(stop - start), columns % k] -= \
            own[np.arange(stop - start), columns % k]
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = numerator * (denominator - own) / (denominator * numerator_without)
        factor[numerator_without <= 0] = np.inf
        return factor

    def _set_parameters(self, state: tuple, summary: Summary) -> None:
        _, mean, precisions, sums = state
        self.precisions_ = precisions
        self.class_priors_ = normalize_rows(mean)
        self.confusion_matrices_ = normalize_rows(sums + CONFUSION_SMOOTHING)

    def fit_block(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None,
                  pred_probs: Optional[np.ndarray] = None) -> "BWA":
        model = super().fit_block(ann, item_log_prior, pred_probs)
        # the last E-step again, for the raw scores (the protocol keeps only posteriors)
        if pred_probs is not None:
            item_log_prior = fitted_classifier_log_prior(model, pred_probs, item_log_prior)
        block = Block.from_annotations(ann, item_log_prior=item_log_prior)
        model.scores_ = model.e_step(block, model.state_)[0]
        return model
