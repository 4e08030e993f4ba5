"""MACE: who is trustworthy and who spams (Hovy, Berg-Kirkpatrick, Vaswani & Hovy, NAACL 2013)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd
from scipy.special import digamma

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError
from ..numerics import draw_seed, keyed_uniforms, normalize_rows
from .base import check_settings, without_evidence
from .dawid_skene import e_step
from .em import Block, EMLabelModel, Summary

__all__ = ["MACE", "MACERestarts", "MACEState", "MACEStatistics"]

_METHODS = ("vb", "em")

#: phases of a restart in the side-by-side loop (:class:`MACERestarts`)
RUN, EVALUATE, DONE = 0, 1, 2


def confusions(theta: np.ndarray, spam: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """(A, K, K) ``θ_a [l = k] + s_a ξ_a[l]`` (rows: true class k; ``s_a``: the spam weight,
    ``1 − θ_a`` in EM, its own estimate in VB)."""
    k = xi.shape[1]
    return theta[:, None, None] * np.eye(k) + spam[:, None, None] * xi[:, None, :]


def log_confusions(theta: np.ndarray, spam: np.ndarray, xi: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(confusions(theta, spam, xi), 1e-300))


@dataclass
class MACEState:
    """The parameters of every restart and where each stands.

    Attributes:
        theta, spam: (R, A) trustworthiness and spam weights; xi: (R, A, K) strategies.
        phase: (R,) :data:`RUN` (EM steps), :data:`EVALUATE` (its marginal likelihood is
            computed next) or :data:`DONE`.
        previous: (R,) log-likelihood per annotation of the last E-step (``-inf`` first).
        n_iter: (R,) EM iterations of the parameters held.
        evidence: (R,) marginal log-likelihood of the restarts done (NaN before).
        best: the winning restart once every restart is done (-1 before).
        step: number of M-steps so far (the loop's objective, see :class:`MACERestarts`).
    """

    theta: np.ndarray
    spam: np.ndarray
    xi: np.ndarray
    phase: np.ndarray
    previous: np.ndarray
    n_iter: np.ndarray
    evidence: np.ndarray
    best: int = -1
    step: int = 0

    def share(self, r: int) -> np.ndarray:
        """(A, K) ``θ / (θ + s ξ[l])``: the share of a label l that is trustworthy."""
        theta = self.theta[r][:, None]
        return theta / np.maximum(theta + self.spam[r][:, None] * self.xi[r], 1e-300)

    def normalized(self, r: int) -> np.ndarray:
        """(A, K, K) restart r's confusion matrices, rows normalised."""
        return normalize_rows(confusions(self.theta[r], self.spam[r], self.xi[r]))


@dataclass
class MACEStatistics:
    """Sums over items of one E-step of every restart, with the state it ran under (which
    every block carries alike: the sum keeps one).

    Attributes:
        know: (R, A) expected trustworthy labels per annotator.
        strategy: (R, A, K) expected spam labels per annotator and label.
        loglik: (R,) summed log-normaliser of the EM E-step (restarts running).
        evidence: (R,) summed log-normaliser under the normalised matrices (restarts
            evaluated).
        state: the :class:`MACEState` of the E-step.
    """

    know: np.ndarray
    strategy: np.ndarray
    loglik: np.ndarray
    evidence: np.ndarray
    state: MACEState

    def __add__(self, other: "MACEStatistics") -> "MACEStatistics":
        return MACEStatistics(self.know + other.know, self.strategy + other.strategy,
                              self.loglik + other.loglik, self.evidence + other.evidence,
                              self.state)


class MACE(EMLabelModel):
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
    (``random_state``; each annotator's drawn from what it said, not its name or column:
    :meth:`MACERestarts._start`); the one with the highest marginal likelihood wins.

    The restarts run side by side as one EM-step protocol (:class:`MACERestarts`, the model
    :meth:`init_state` hands over to): statistics are sums over items, so the same fit runs
    split into blocks and on Dask. ``fit(annotations, gold=...)`` fixes the true class of
    the gold items in every E-step.

    Args:
        method: ``"vb"`` or ``"em"``.
        theta_prior: Beta pseudo-counts (trustworthy, spam).
        strategy_prior: Dirichlet pseudo-count of the spamming strategies (vb).
        smoothing: pseudo-count of the em M-step (default ``0.01 / K``, crowd-kit's).
        max_iter, tol: each restart's EM stops when the mean log-likelihood per annotation
            changes by less than ``tol``, or after ``max_iter`` iterations (≥ 0).
        restarts: number of EM runs.
        random_state: seed of the restarts' random starts (None: unseeded).
        progress: show a progress bar over the EM iterations (all restarts together).

    Attributes:
        trustworthiness_: (annotators,) θ, the spam detector: low θ is a spammer.
        strategies_: (annotators, K) ξ.
        log_marginal_likelihood_: of the winning run.
        restart_: the winning run.
        n_iter_: EM iterations of the winning run.
        posteriors_: (items, K).
        confusion_matrices_: (annotators, K, K).
        class_priors_: (K,), uniform.
    """

    accepts_gold = True
    needs_annotator_keys = True

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

    def fit(self, annotations: Any, gold: Any = None, **kwargs: Any) -> "MACE":
        """Fit on annotations (an ``Annotations``, a dense matrix with -1 where missing, or a
        long frame: ``kwargs`` go to its reader); ``gold``: known classes of some items (see
        :func:`~crowd_keras.aggregation.base.gold_codes`). Returns self."""
        self._check_params()
        check_settings(self)
        return super().fit(annotations, gold, **kwargs)

    def _check_params(self) -> None:
        """The settings, before any work: a zero or negative pseudo-count would make the
        variational posteriors NaN or uniform."""
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        check_count(self.restarts, "MACE restarts", 1)
        if np.ndim(self.theta_prior) != 1 or len(self.theta_prior) != 2:
            raise ValueError(f"MACE theta_prior must be two Beta pseudo-counts (trustworthy, "
                             f"spam), got {self.theta_prior!r}")
        for name, value in (("theta_prior", self.theta_prior[0]),
                            ("theta_prior", self.theta_prior[1]),
                            ("strategy_prior", self.strategy_prior)):
            if check_number(value, f"MACE {name}") == 0:
                raise ValueError(f"MACE {name} must be a pseudo-count > 0, got {value!r}")

    def init_state(self, summary: Summary) -> "MACERestarts":
        """Hand over to the side-by-side restarts (:class:`MACERestarts`)."""
        self._check_params()
        if summary.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        if not int(self.max_iter) >= 0:
            raise ValueError(f"max_iter must be >= 0, got {self.max_iter!r}")
        return MACERestarts(self, summary)

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        return e_step(ann.vote_incidence(), np.log(np.maximum(self.confusion_matrices_, 1e-300)),
                      self.class_priors_)[0]

    def annotator_quality(self, n_annotations: np.ndarray) -> pd.DataFrame:
        """Per annotator: id, number of annotations, estimated accuracy (``Σ_k ρ_k π_kk``) and
        trustworthiness ``θ`` (MACE's spammer score: near 0 for a spammer); NaN without
        annotations."""
        quality = super().annotator_quality(n_annotations)
        quality["trustworthiness"] = without_evidence(self.trustworthiness_, n_annotations)
        return quality


class MACERestarts(EMLabelModel):
    """MACE's restarts side by side, as one EM-step protocol.

    Every restart follows its own EM (its own stopping rule, as if run alone); the state
    (:class:`MACEState`) says where each stands. An M-step reads the statistics of the
    E-step and the state that E-step ran under (:class:`MACEStatistics` carries it):

    - a restart running whose log-likelihood per annotation moved by less than ``tol`` (or
      that has run ``max_iter`` iterations) keeps its parameters and is evaluated: the next
      E-step computes its marginal likelihood under its normalised matrices;
    - an evaluated restart is done; once all are, the one with the highest marginal
      likelihood wins (the first on ties), and the next E-step gives its posteriors.

    The loop's objective is the number of M-steps (in steps larger than ``tol``), which stops
    moving only once the winner is chosen, so the loop (in memory or on Dask) runs until then;
    it needs at most ``max_iter + 2`` iterations (its ``max_iter``).
    """

    em_name = "restarts"
    needs_annotator_keys = True

    def __init__(self, model: MACE, summary: Summary) -> None:
        self.model = model
        self.summary = summary
        self.max_iter = int(model.max_iter) + 2
        self.tol = float(model.tol)
        self.progress = model.progress
        k = summary.n_classes
        super().init_state(summary)
        self.n_annotators_ = summary.votes.shape[0]
        self.per_annotator_ = summary.votes.sum(axis=1).astype(float)
        self.smoothing_ = 0.01 / k if model.smoothing is None else float(model.smoothing)
        self.log_prior_ = np.full(k, -np.log(k))
        self.prior_ = np.exp(self.log_prior_)
        self.n_restarts_ = max(int(model.restarts), 1)
        self.objective_step_ = max(1.0, 2.0 * self.tol) if np.isfinite(self.tol) else 1.0
        self.start_ = self._start(self.n_annotators_, k)

    def _start(self, a: int, k: int) -> MACEState:
        """The starting parameters: restart 0 from θ = 0.5, ξ uniform (its posteriors: the soft
        majority vote); restart r ≥ 1 from ``θ_a = 0.3 + 0.4 u`` and ``ξ_a ∝ 1 + u`` (the
        paper's U(0.3, 0.7) and the authors' random strategies), each annotator's numbers
        ``u`` drawn from ``random_state`` and its fingerprint (what it said,
        :meth:`Block.content_fingerprints <crowd_keras.aggregation.em.Block.content_fingerprints>`;
        :func:`~crowd_keras.numerics.keyed_uniforms`), so that renaming or reordering the
        annotators starts every restart alike."""
        r = self.n_restarts_
        theta = np.full((r, a), 0.5)
        xi = np.full((r, a, k), 1.0 / k)
        if r > 1:
            # K + 1 numbers per annotator and restart: θ's, then ξ's
            u = keyed_uniforms(self.summary.annotator_keys(), draw_seed(self.model.random_state),
                               (r - 1) * (k + 1)).reshape(a, r - 1, k + 1).transpose(1, 0, 2)
            theta[1:] = 0.3 + 0.4 * u[:, :, 0]
            xi[1:] = normalize_rows(1.0 + u[:, :, 1:])
        return MACEState(theta, 1 - theta, xi, np.full(r, RUN), np.full(r, -np.inf),
                         np.zeros(r, dtype=np.int64), np.full(r, np.nan))

    # ------------------------------------------------------------------ the protocol
    def initial_statistics(self, block: Block) -> MACEStatistics:
        start = self.start_
        posts: List[Optional[np.ndarray]] = [self.initial_posteriors(block)]
        for r in range(1, self.n_restarts_):
            log_pi = log_confusions(start.theta[r], start.spam[r], start.xi[r])
            posts.append(e_step(block.X, log_pi, self.prior_, block.item_log_prior)[0])
        return self._statistics(block, start, posts, np.zeros(self.n_restarts_),
                                np.zeros(self.n_restarts_))

    def _statistics(self, block: Block, state: MACEState, posts: Sequence[Optional[np.ndarray]],
                    loglik: np.ndarray, evidence: np.ndarray) -> MACEStatistics:
        """Expected trustworthy and spam counts of each restart with posteriors in ``posts``."""
        r, a, k = self.n_restarts_, self.n_annotators_, self.n_classes_
        columns = block.X.indices.astype(np.int64)               # a·K + l, item by item
        annotators = columns // k
        # flat position of (item, label) in the (I, K) posteriors, one per annotation
        cells = np.repeat(np.arange(block.n_items, dtype=np.int64) * k,
                          np.diff(block.X.indptr)) + columns % k
        know = np.zeros((r, a))
        strategy = np.zeros((r, a, k))
        for i, post in enumerate(posts):
            if post is None:
                continue
            know_n = post.ravel().take(cells) * state.share(i).ravel().take(columns)
            know[i] = np.bincount(annotators, weights=know_n, minlength=a)
            strategy[i] = np.bincount(columns, weights=1 - know_n,
                                      minlength=a * k).reshape(a, k)
        return MACEStatistics(know, strategy, loglik, evidence, state)

    def sufficient_statistics(self, block: Block, latent: tuple) -> MACEStatistics:
        posts, loglik, evidence, _report, state = latent
        return self._statistics(block, state, posts, loglik, evidence)

    def _update(self, know: np.ndarray, strategy: np.ndarray) -> tuple:
        """One restart's M-step: θ, the spam weight and ξ from its expected counts."""
        model, k, n = self.model, self.n_classes_, self.per_annotator_
        if model.method == "vb":
            a0, b0 = model.theta_prior
            total = digamma(n + a0 + b0)
            theta = np.exp(digamma(know + a0) - total)
            spam = np.exp(digamma(n - know + b0) - total)
            xi = np.exp(digamma(strategy + model.strategy_prior)
                        - digamma(strategy.sum(axis=1, keepdims=True) + k * model.strategy_prior))
            return theta, spam, xi
        s = self.smoothing_
        theta = (know + s) / (n + 2 * s)
        return theta, 1 - theta, normalize_rows(strategy + s)

    def m_step(self, stats: MACEStatistics) -> MACEState:
        old = stats.state
        if old.best >= 0:
            return old
        new = replace(old, theta=old.theta.copy(), spam=old.spam.copy(), xi=old.xi.copy(),
                      phase=old.phase.copy(), previous=old.previous.copy(),
                      n_iter=old.n_iter.copy(), evidence=old.evidence.copy(), step=old.step + 1)
        scale = max(float(self.per_annotator_.sum()), 1.0)
        for r in range(self.n_restarts_):
            if old.phase[r] == EVALUATE:
                new.evidence[r] = stats.evidence[r]
                new.phase[r] = DONE
                continue
            if old.phase[r] != RUN:
                continue
            if old.step > 0:   # the statistics are of an EM E-step: has it settled?
                loglik = stats.loglik[r] / scale
                if abs(loglik - old.previous[r]) < self.tol or old.n_iter[r] >= self.model.max_iter:
                    new.phase[r] = EVALUATE
                    continue
                new.previous[r] = loglik
            elif self.model.max_iter < 1:
                new.phase[r] = EVALUATE
                continue
            new.theta[r], new.spam[r], new.xi[r] = self._update(stats.know[r], stats.strategy[r])
            new.n_iter[r] += 1
        if (new.phase == DONE).all():
            new.best = int(np.argmax(new.evidence))
            new.step = old.step        # the objective stops moving: the loop ends
        return new

    def e_step(self, block: Block, state: MACEState) -> tuple:
        r = self.n_restarts_
        posts: List[Optional[np.ndarray]] = [None] * r
        loglik, evidence = np.zeros(r), np.zeros(r)
        report = None
        if state.best >= 0:
            report = e_step(block.X, np.log(np.maximum(state.normalized(state.best), 1e-300)),
                            self.prior_, block.item_log_prior)[0]
        for i in range(r):
            if state.best >= 0:
                break
            if state.phase[i] == RUN:
                log_pi = log_confusions(state.theta[i], state.spam[i], state.xi[i])
                posts[i], loglik[i] = e_step(block.X, log_pi, self.prior_, block.item_log_prior)
            elif state.phase[i] == EVALUATE:
                evidence[i] = e_step(block.X, np.log(np.maximum(state.normalized(i), 1e-300)),
                                     self.prior_, block.item_log_prior)[1]
        objective = block.n_items * state.step * self.objective_step_
        return (posts, loglik, evidence, report, state), float(objective)

    def objective_scale(self, summary: Summary) -> float:
        return float(max(summary.n_items, 1))

    def class_posteriors(self, latent: tuple) -> np.ndarray:
        report = latent[3]
        if report is None:
            raise RuntimeError("MACE's restarts stopped before a winner was chosen")
        return report

    def finish(self, state: MACEState, summary: Summary, template: Annotations,
               history: Sequence[float]) -> MACE:
        if state.best < 0:
            raise RuntimeError("MACE's restarts stopped before a winner was chosen")
        model, b = self.model, state.best
        model.annotations_ = template
        model.trustworthiness_ = state.theta[b] / (state.theta[b] + state.spam[b])
        model.strategies_ = normalize_rows(state.xi[b])
        model.confusion_matrices_ = state.normalized(b)
        model.class_priors_ = self.prior_
        model.log_marginal_likelihood_ = float(state.evidence[b])
        model.restart_ = b
        model.n_iter_ = int(state.n_iter[b])
        return model
