"""MACE: who is trustworthy and who spams (Hovy, Berg-Kirkpatrick, Vaswani & Hovy, NAACL 2013)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
from scipy.special import digamma

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import normalize_rows, soft_vote
from ..progress import progress_bar
from .base import LabelModel, as_annotations
from .dawid_skene import e_step

__all__ = ["MACE"]

_METHODS = ("vb", "em")


class MACE(LabelModel):
    """MACE: each annotator is trustworthy with probability ``θ_a`` and then copies the truth;
    otherwise it "spams" from its own strategy ``ξ_a`` over the labels.

    ``p(l | z = k) = θ_a [l = k] + (1 − θ_a) ξ_a[l]`` (Hovy et al. 2013, section 2), with a
    uniform truth prior. The E-step is Dawid-Skene's with these matrices; the expected
    trustworthy count of an annotation ``n`` is ``q_{i_n, l_n} θ_a / (θ_a + (1 − θ_a) ξ_a[l_n])``
    and the rest of it is spam with label ``l_n``. M-step: ``method="vb"`` (the paper's
    recommendation): Beta(``theta_prior``) on ``θ_a``, symmetric Dirichlet(``strategy_prior``)
    on ``ξ_a``, mean-field updates ``exp ψ(·)`` (section 2.2); ``"em"``: maximum likelihood
    with pseudo-count ``smoothing``. Restarts (the paper's random restarts): the first from the
    soft majority vote, the others from random ``θ ~ U(0.3, 0.7)`` and random ``ξ``
    (``random_state``); the one with the highest marginal likelihood wins.

    Args:
        method: ``"vb"`` or ``"em"``. theta_prior: Beta pseudo-counts (trustworthy, spam).
        strategy_prior: Dirichlet pseudo-count of the spamming strategies (vb).
        smoothing: pseudo-count of the em M-step (default ``0.01 / K``, crowd-kit's).
        max_iter, tol: EM stops when the mean log-likelihood per annotation changes < tol.
        restarts: number of EM runs. random_state: seed of the restarts.
        progress: show a progress bar over the restarts.

    Attributes:
        posteriors_: (items, K).
        trustworthiness_: (annotators,) θ, the spam detector: low θ is a spammer.
        strategies_: (annotators, K) ξ.
        confusion_matrices_: (annotators, K, K).
        class_priors_: (K,), uniform.
        log_marginal_likelihood_: of the winning run.
        restart_: the winning run.
        n_iter_: EM iterations of the winning run.
    """

    def __init__(self, method: str = "vb", theta_prior: tuple = (0.5, 0.5),
                 strategy_prior: float = 10.0, smoothing: Optional[float] = None,
                 max_iter: int = 50, tol: float = 1e-6, restarts: int = 10,
                 random_state: Optional[int] = 0, progress: bool = False) -> None:
        self.method = method
        self.theta_prior = theta_prior
        self.strategy_prior = strategy_prior
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.restarts = restarts
        self.random_state = random_state
        self.progress = progress

    def fit(self, annotations: Any, **kwargs: Any) -> "MACE":
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        ann = as_annotations(annotations, **kwargs)
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        k = ann.n_classes
        X = ann.vote_incidence()
        log_prior = np.full(k, -np.log(k))
        rng = np.random.default_rng(self.random_state)
        best = None
        bar = progress_bar(range(max(int(self.restarts), 1)), desc="MACE restarts",
                           disable=not self.progress)
        for restart in bar:
            if restart == 0:
                post = soft_vote(ann.label_counts())
                theta = np.full(ann.n_annotators, 0.5)
                spam, xi = 1 - theta, np.full((ann.n_annotators, k), 1.0 / k)
            else:
                theta = rng.uniform(0.3, 0.7, size=ann.n_annotators)
                spam, xi = 1 - theta, normalize_rows(rng.uniform(1.0, 2.0, (ann.n_annotators, k)))
                post = e_step(X, self._log_confusions(theta, spam, xi), np.exp(log_prior))[0]
            theta, spam, xi, n_iter = self._em(ann, X, post, theta, spam, xi, log_prior)
            pi = normalize_rows(self._confusions(theta, spam, xi))
            post, evidence = e_step(X, np.log(np.maximum(pi, 1e-300)), np.exp(log_prior))
            if best is None or evidence > best[0]:
                best = (evidence, post, theta / (theta + spam), pi, normalize_rows(xi), n_iter,
                        restart)
        bar.close()
        evidence, post, trust, pi, xi, n_iter, restart = best
        self.annotations_ = ann
        self.posteriors_ = post
        self.trustworthiness_ = trust
        self.strategies_ = xi
        self.confusion_matrices_ = pi
        self.class_priors_ = np.exp(log_prior)
        self.log_marginal_likelihood_ = evidence
        self.restart_ = restart
        self.n_iter_ = n_iter
        return self

    @staticmethod
    def _confusions(theta: np.ndarray, spam: np.ndarray, xi: np.ndarray) -> np.ndarray:
        k = xi.shape[1]
        return theta[:, None, None] * np.eye(k) + spam[:, None, None] * xi[:, None, :]

    def _log_confusions(self, theta: np.ndarray, spam: np.ndarray, xi: np.ndarray) -> np.ndarray:
        return np.log(np.maximum(self._confusions(theta, spam, xi), 1e-300))

    def _em(self, ann: Annotations, X: Any, post: np.ndarray, theta: np.ndarray,
            spam: np.ndarray, xi: np.ndarray, log_prior: np.ndarray) -> tuple:
        """One EM (or VB) run from the given start; returns θ, 1 − θ (vb: its own estimate), ξ
        and the number of iterations."""
        k, a = ann.n_classes, ann.n_annotators
        n = ann.annotations_per_annotator().astype(float)
        smoothing = 0.01 / k if self.smoothing is None else float(self.smoothing)
        prev, it = -np.inf, 0
        for it in range(1, int(self.max_iter) + 1):
            share = theta[:, None] / np.maximum(theta[:, None] + spam[:, None] * xi, 1e-300)
            know_n = post[ann.items, ann.labels] * share[ann.annotators, ann.labels]
            know = np.bincount(ann.annotators, weights=know_n, minlength=a)
            strategy = np.bincount(ann.annotators * k + ann.labels, weights=1 - know_n,
                                   minlength=a * k).reshape(a, k)
            if self.method == "vb":
                a0, b0 = self.theta_prior
                total = digamma(n + a0 + b0)
                theta = np.exp(digamma(know + a0) - total)
                spam = np.exp(digamma(n - know + b0) - total)
                xi = np.exp(digamma(strategy + self.strategy_prior)
                            - digamma(strategy.sum(axis=1, keepdims=True)
                                      + k * self.strategy_prior))
            else:
                theta = (know + smoothing) / (n + 2 * smoothing)
                spam = 1 - theta
                xi = normalize_rows(strategy + smoothing)
            post, ll = e_step(X, self._log_confusions(theta, spam, xi), np.exp(log_prior))
            ll /= max(ann.n_annotations, 1)
            if abs(ll - prev) < self.tol:
                break
            prev = ll
        return theta, spam, xi, it

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        return e_step(ann.vote_incidence(), np.log(np.maximum(self.confusion_matrices_, 1e-300)),
                      self.class_priors_)[0]

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: id, number of annotations, estimated accuracy (``Σ_k ρ_k π_kk``) and
        trustworthiness ``θ`` (MACE's spammer score: near 0 for a spammer)."""
        quality = super().annotator_quality_
        quality["trustworthiness"] = self.trustworthiness_
        return quality
