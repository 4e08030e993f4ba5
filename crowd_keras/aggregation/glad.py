"""GLAD: annotator ability and item difficulty (Whitehill, Ruvolo, Wu, Bergsma & Movellan 2009)."""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit, log_expit

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError
from ..numerics import column_sums, softmax_rows, stored_rows
from .base import without_evidence
from .em import Block, EMLabelModel, Summary, run_em

__all__ = ["GLAD", "GLADState", "GLADLatent"]


class GLADState(NamedTuple):
    """The M-step's parameters: abilities ``α`` (A,) and the log class prior (K,); and each
    annotator's accuracy (A,), ``σ(α e^β)`` averaged over its items at the E-step the M-step
    started from (the prior's ``β`` for an annotator without labels)."""

    alpha: np.ndarray
    log_prior: np.ndarray
    accuracy: Optional[np.ndarray] = None


class GLADLatent(NamedTuple):
    """A block's E-step: posteriors (I, K), log inverse difficulties ``β`` (I,), the state
    they were computed under, and per annotation ``x_n = α_{a_n} e^{β_{i_n}}`` and
    ``log σ(x_n)`` (which the statistics reuse)."""

    post: np.ndarray
    beta: np.ndarray
    state: GLADState
    x: np.ndarray
    log_right: np.ndarray


class _Votes(NamedTuple):
    """A block's annotations as vectors (storage order): item, annotator, label, and the flat
    position ``item·K + label`` in an (I, K) array."""

    items: np.ndarray
    annotators: np.ndarray
    labels: np.ndarray
    cells: np.ndarray


def _votes(block: Block, k: int) -> _Votes:
    columns = block.X.indices.astype(np.int64)
    items = np.repeat(np.arange(block.n_items, dtype=np.int64), np.diff(block.X.indptr))
    labels = columns % k
    return _Votes(items, columns // k, labels, items * k + labels)


class GLAD(EMLabelModel):
    """GLAD, multi-class as in crowd-kit: ``p(l = z_i) = σ(α_a e^{β_i})``, the rest spread evenly.

    Annotator ``a`` has an ability ``α_a ∈ ℝ`` (negative: adversarial) and item ``i`` an
    inverse difficulty ``e^{β_i} > 0`` (Whitehill et al. 2009, Eq. 1); a wrong label is any of
    the ``K − 1`` other classes with equal probability. Gaussian priors ``α ~ N(alpha_prior,
    1)``, ``β ~ N(beta_prior, 1)`` (crowd-kit's defaults); the fit maximises the posterior
    ``log p(labels | α, β) + log p(α) + log p(β)`` with the true classes summed out, as the
    paper's EM does (Eqs. 3-5), written as the EM-step protocol
    (:mod:`crowd_keras.aggregation.em`):

    - E-step, per item and so per block: ``β_i`` is the item's own maximum given the
      abilities (the per-item parameter lives with its item, like its posterior: Newton
      steps on ``log p(labels_i | α, β_i) + log p(β_i)``, from the prior's mean), then the
      posterior ``q_i`` (Eq. 3) under it;
    - M-step: a Newton step on every ``α_a`` of the expected complete log-likelihood
      ``Q`` (Eqs. 4-5; concave in ``α``), from its gradient and curvature summed over items,
      and the class prior from ``Σ_i q_i`` when learned.

    Every step is O(annotations) through ``bincount``, with no Python loop over annotations.

    Args:
        max_iter, tol: EM stops when the objective (the log-likelihood and the items'
            log-priors, per annotation) changes by less than ``tol``.
        alpha_prior, beta_prior: means of the Gaussian priors on ability and log inverse
            difficulty (unit variance).
        learn_class_prior: learn the class prior (default: uniform, as the paper and crowd-kit).
        newton_rounds: at most this many Newton steps per item and E-step for ``β`` (an item
            stops once its step is below 1e-7: Newton steps, so the error left is far smaller).
        progress: show a progress bar over EM iterations.

    ``fit(annotations, gold=...)`` fixes the true class of the gold items in every E-step.

    Attributes:
        abilities_: (annotators,) α.
        log_inverse_difficulties_: (items,) β of the fitted items (a partitioned fit keeps
            them with the items' blocks: NaN here).
        n_iter_: EM iterations run.
        log_likelihood_: the objective per annotation, per iteration.
        n_annotators_: the number of annotators.
        per_annotator_: (annotators,) each annotator's number of annotations.
        posteriors_: (items, K).
        confusion_matrices_: (annotators, K, K), one-coin matrices of each annotator's
            accuracy ``σ(α e^β)`` averaged over its items (at the E-step the last M-step
            started from; item-specific matrices are what the model uses).
        class_priors_: (K,).
    """

    accepts_gold = True
    em_name = "EM"

    def __init__(self, max_iter: int = 100, tol: float = 1e-6, alpha_prior: float = 1.0,
                 beta_prior: float = 1.0, learn_class_prior: bool = False,
                 newton_rounds: int = 50, progress: bool = False) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.alpha_prior = alpha_prior
        self.beta_prior = beta_prior
        self.learn_class_prior = learn_class_prior
        self.newton_rounds = newton_rounds
        self.progress = progress

    # ------------------------------------------------------------------ the protocol
    def init_state(self, summary: Summary) -> "GLAD":
        if summary.n_classes < 2:
            raise CrowdDataError("GLAD needs at least two classes")
        # the priors' means may be any real (a negative ability: an adversarial crowd); NaN
        # would make every posterior NaN
        check_number(self.alpha_prior, "GLAD alpha_prior", low=-np.inf)
        check_number(self.beta_prior, "GLAD beta_prior", low=-np.inf)
        check_count(self.newton_rounds, "GLAD newton_rounds")
        super().init_state(summary)
        self.n_annotators_ = summary.votes.shape[0]
        self.per_annotator_ = summary.votes.sum(axis=1)
        return self

    def _start(self) -> GLADState:
        k = self.n_classes_
        return GLADState(np.full(self.n_annotators_, float(self.alpha_prior)),
                         np.full(k, -np.log(k)))

    def initial_statistics(self, block: Block) -> tuple:
        """The statistics of the E-step under the priors' means (α = ``alpha_prior``)."""
        return self.sufficient_statistics(block, self.e_step(block, self._start())[0])

    def _posteriors(self, v: _Votes, n: int, x: np.ndarray, log_prior: np.ndarray,
                    item_log_prior: Optional[np.ndarray], right: Optional[np.ndarray] = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 3 for ``n`` items: ``q_ik ∝ ρ_k Π_n [σ(x_n) if l_n = k else (1 − σ(x_n))/(K −
        1)]`` (and each item's log-normaliser); ``right``: ``log σ(x)`` when at hand."""
        k = self.n_classes_
        right = log_expit(x) if right is None else right
        # log p(label | one wrong class) = log σ(−x) − log(K − 1), and log σ(−x) = log σ(x) − x
        wrong = right - x - np.log(k - 1)
        # summed, not added in place: np.bincount of no votes is an int array
        logits = np.bincount(v.items, weights=wrong, minlength=n)[:, None] + \
            np.bincount(v.cells, weights=right - wrong, minlength=n * k).reshape(n, k) + log_prior
        if item_log_prior is not None:
            logits += item_log_prior
        return softmax_rows(logits, out=logits)

    def _item_betas(self, v: _Votes, n: int, alpha_n: np.ndarray, log_prior: np.ndarray,
                    item_log_prior: Optional[np.ndarray]) -> np.ndarray:
        """(I,) each item's ``β`` maximising ``f_i(β) = log Σ_k ρ_k p(labels_i | k, α, β) −
        (β − β₀)²/2``: Newton steps with ``f′ = Σ_n (q_{l_n} − σ_n) x_n − (β − β₀)`` and
        ``f″ = Σ_n (q_{l_n} − σ_n) x_n − Σ_n σ_n(1 − σ_n) x_n² + Var_q(Σ_{n: l_n = k} x_n) − 1``
        (``x_n = α_{a_n} e^β``); where ``f″ ≥ 0`` (not concave) an ascent step with the
        curvature of ``Q`` plus ``|Σ_n (q − σ) x|``; steps capped at 1. An item stops once
        its step is below 1e-7, so each item's ``β`` depends on its own labels only (not on
        the block it is in); the steps then run on the items still moving."""
        k = self.n_classes_
        beta0 = float(self.beta_prior)
        beta = np.full(n, beta0)
        where = np.arange(n)               # the items still moving, in the arrays below
        b = beta.copy()
        for _ in range(max(int(self.newton_rounds), 0)):
            m = len(where)
            x = alpha_n * np.exp(b[v.items])
            right = log_expit(x)
            post = self._posteriors(v, m, x, log_prior, item_log_prior, right)[0]
            p = post.ravel()[v.cells]
            sg = np.exp(right)
            first = np.bincount(v.items, weights=(p - sg) * x, minlength=m)
            grad = first - (b - beta0)
            curv_q = np.bincount(v.items, weights=sg * (1 - sg) * x * x, minlength=m)
            by_class = np.bincount(v.cells, weights=x, minlength=m * k).reshape(m, k)
            px = (post * by_class).sum(axis=1)
            variance = (post * by_class * by_class).sum(axis=1) - px * px
            second = px - np.bincount(v.items, weights=sg * x, minlength=m) - curv_q \
                + variance - 1.0
            concave = second < 0
            step = np.where(concave, -grad / np.where(concave, second, -1.0),
                            grad / (curv_q + np.abs(first) + 1.0))
            np.clip(step, -1.0, 1.0, out=step)
            b += step
            beta[where] = b
            moving = np.abs(step) >= 1e-7
            if not moving.any():
                break
            if moving.mean() < 0.5:        # go on with the items still moving only
                keep = moving[v.items]
                local = np.cumsum(moving) - 1
                items = local[v.items[keep]]
                labels = v.labels[keep]
                v = _Votes(items, v.annotators[keep], labels, items * k + labels)
                alpha_n = alpha_n[keep]
                if item_log_prior is not None:
                    item_log_prior = item_log_prior[moving]
                where, b = where[moving], b[moving]
        return beta

    def e_step(self, block: Block, state: GLADState) -> tuple[GLADLatent, float]:
        v = _votes(block, self.n_classes_)
        alpha_n = state.alpha[v.annotators]
        beta = self._item_betas(v, block.n_items, alpha_n, state.log_prior,
                                block.item_log_prior)
        x = alpha_n * np.exp(beta[v.items])
        right = log_expit(x)
        post, log_norm = self._posteriors(v, block.n_items, x, state.log_prior,
                                          block.item_log_prior, right)
        objective = float(log_norm.sum()) - 0.5 * float(((beta - self.beta_prior) ** 2).sum())
        return GLADLatent(post, beta, state, x, right), objective

    def sufficient_statistics(self, block: Block, latent: GLADLatent) -> tuple:
        """Per annotator the gradient and curvature of ``Q`` in ``α`` at the E-step's
        abilities (sums over its annotations: ``Σ (q_{l_n} − σ_n) e^{β_i}`` and ``Σ σ_n(1 −
        σ_n) e^{2β_i}``), the class mass ``Σ_i q_i`` (K,) and the abilities themselves (the
        state every block shares, carried so the M-step steps from them)."""
        v = _votes(block, self.n_classes_)
        a = self.n_annotators_
        eb = np.exp(latent.beta[v.items])
        sg = np.exp(latent.log_right)
        p = latent.post.ravel()[v.cells]
        grad = np.bincount(v.annotators, weights=(p - sg) * eb, minlength=a)
        hess = np.bincount(v.annotators, weights=sg * (1 - sg) * eb * eb, minlength=a)
        correct = np.bincount(v.annotators, weights=sg, minlength=a)
        return grad, hess, correct, column_sums(latent.post), _Shared(latent.state.alpha)

    def m_step(self, stats: tuple) -> GLADState:
        grad, hess, correct, mass, shared = stats
        alpha = shared.value
        n = self.per_annotator_
        accuracy = np.where(n > 0, correct / np.maximum(n, 1),
                            expit(alpha * np.exp(self.beta_prior)))
        grad = grad - (alpha - self.alpha_prior)
        alpha = alpha + np.clip(grad / (hess + 1.0), -1.0, 1.0)
        k = self.n_classes_
        if self.learn_class_prior:
            mass = mass + 0.01
            log_prior = np.log(mass / mass.sum())
        else:
            log_prior = np.full(k, -np.log(k))
        return GLADState(alpha, log_prior, accuracy)

    def objective_scale(self, summary: Summary) -> float:
        return float(max(summary.n_annotations, 1))

    def class_posteriors(self, latent: GLADLatent) -> np.ndarray:
        return latent.post

    def finish(self, state: GLADState, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "GLAD":
        k = summary.n_classes
        self.annotations_ = template
        self.abilities_ = state.alpha
        self.class_priors_ = np.exp(state.log_prior)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        self.log_inverse_difficulties_ = np.full(summary.n_items, np.nan)
        acc = state.accuracy
        off = (1 - acc) / (k - 1)
        self.confusion_matrices_ = np.where(np.eye(k, dtype=bool), acc[:, None, None],
                                            off[:, None, None])
        return self

    def fit_block(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None) -> "GLAD":
        """:func:`~crowd_keras.aggregation.em.run_em` over one block; keeps the items' ``β``."""
        block = Block.from_annotations(ann, item_log_prior=item_log_prior)
        run = run_em(self, [block], block.summary(ann.n_classes))
        self.finish(run.state, run.summary, ann, run.history)
        latent = run.latents[0]
        self.posteriors_ = latent.post
        self.log_inverse_difficulties_ = latent.beta
        self.item_log_prior_ = item_log_prior    # gold clamps, which the quality scores add too
        return self

    # ------------------------------------------------------------------ new annotations
    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        """The E-step of the new items under the fitted abilities (each item's ``β`` is its
        own maximum given them, as in the fit)."""
        state = GLADState(self.abilities_, np.log(self.class_priors_))
        return self.e_step(Block.from_annotations(ann), state)[0].post

    def own_vote_factors(self, votes: sp.csr_matrix, start: int, stop: int) -> np.ndarray:
        """(stop - start, K) the factor each of the votes ``start:stop`` of ``votes`` put on
        its item's class posterior
        (:meth:`~crowd_keras.aggregation.base.LabelModel.own_vote_factors`): Eq. 3's
        ``σ(x)`` on the class it names and ``(1 − σ(x)) / (K − 1)`` on the others, ``x =
        α_a e^{β_i}`` at the item's own ``β`` (not the one-coin ``confusion_matrices_``,
        which average ``σ`` over the annotator's items). ``β``: the fit's
        (``log_inverse_difficulties_``) when ``votes`` are the fitted items; otherwise (a
        partitioned fit's block) each item's maximum given the abilities, as the E-step finds
        it, without the items' log-priors."""
        self._check_fitted()
        k = self.n_classes_
        rows = stored_rows(votes, start, stop)
        if stop <= start:
            return np.ones((0, k))
        fitted = np.asarray(self.log_inverse_difficulties_, dtype=np.float64)
        first, last = rows[0], rows[-1] + 1
        if votes.shape[0] == len(fitted) and np.isfinite(fitted[first:last]).all():
            beta = fitted[first:last]
        else:   # an item's β depends on its own labels only: its rows of votes suffice
            part = Block(np.arange(first, last), votes[first:last])
            state = GLADState(self.abilities_, np.log(self.class_priors_))
            beta = self.e_step(part, state)[0].beta
        columns = votes.indices[start:stop]
        x = self.abilities_[columns // k] * np.exp(beta[rows - first])
        out = np.repeat((expit(-x) / (k - 1))[:, None], k, axis=1)
        out[np.arange(stop - start), columns % k] = expit(x)
        return out

    def annotator_quality(self, n_annotations: np.ndarray) -> pd.DataFrame:
        """Per annotator: id, number of annotations, accuracy on its own items (``σ(α e^β)``
        averaged over them) and ability ``α`` (both NaN without annotations: ``α`` is then
        its prior)."""
        quality = super().annotator_quality(n_annotations)
        quality["accuracy"] = without_evidence(
            np.diagonal(self.confusion_matrices_, axis1=1, axis2=2)[:, 0], n_annotations)
        quality["ability"] = without_evidence(self.abilities_, n_annotations)
        return quality


class _Shared:
    """A value every block's statistics carry alike (the abilities of the E-step): the sum of
    statistics keeps one copy instead of adding them."""

    def __init__(self, value: np.ndarray) -> None:
        self.value = value

    def __add__(self, other: "_Shared") -> "_Shared":
        return self
