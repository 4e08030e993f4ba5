"""Annotator groups instead of one matrix per annotator (Mena & Ñanculef 2019, "CMM").

The crowd is explained by ``M`` group confusion matrices ``β_m`` (rows = true class) and
mixing weights ``α`` (paper Eqs. 1-3, Table 1), so the parameters do not grow with the
number of annotators. This module holds the feature-free label model; its numpy EM pieces
(:mod:`.em`) are shared with :class:`~crowd_keras.mixture_of_groups.trainer.MixtureOfGroupsEM`,
which runs them around a classifier. Without features the classifier ``f(x_i)`` of the paper is replaced by a latent
true class per item with prior ``ρ`` (the Dawid-Skene story), shared by the item's labels.

Two scenarios (paper section 2):

* ``"global"``: who gave which label is unknown (or ignored); only the label counts
  ``r_ij`` of each item matter. Each *annotation* draws its group ``g ~ α`` and its label
  ``y ~ β_g[z_i]``. Exact EM over ``(z_i, g)`` on the counts (Eqs. 5-6; the E-step
  ``q(m | k, j) = α_m β_m[k, j] / Σ_m' α_m' β_m'[k, j]`` is the paper's ``q_ij(m, k)`` given
  the class). Note the likelihood depends on ``Σ_m α_m β_m`` only: the split into groups
  comes from the K-means initialisation, as in the paper.
* ``"individual"``: each *annotator* belongs to one group, ``g_a ~ α`` (the authors' later
  "C-MoA" idea; community Dawid-Skene). Mean-field EM with ``q(z_i) q(g_a)``; an annotator
  with few labels keeps a membership close to ``α`` and borrows strength from its group.
  At convergence a group is dropped (its annotators re-assigned to the others) when that
  raises the evidence with the matrices integrated out (Dirichlet-multinomial, the Bayes
  factor of M − 1 against M groups), so a surplus group ends with ``α = 0``.

Both start from soft majority vote and a K-means clustering (numpy, k-means++) of the
annotations (global: each label's disagreement with the soft vote, as in the authors'
code) or of the annotators (individual: their smoothed majority-vote confusion matrices),
and run several restarts, keeping the best objective. Every step is a sparse product over
the annotations: cost O(annotations × M × K) per iteration, no Python loop over
annotations or annotators.

The individual scenario is the EM-step protocol of :mod:`crowd_keras.aggregation.em`
(:class:`MixtureOfGroupsRestarts`): its statistics are sums over items (Dawid-Skene's
expected votes, the class mass, the item E-step's log normalisers) and everything at the
annotators' level (K-means start, memberships, pruning, the choice among restarts) runs in
the M-step on those sums, so the same fit runs split into blocks of items and on Dask.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..aggregation.base import check_settings
from ..aggregation.em import Block, EMLabelModel, Summary, run_em
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..arguments import check_count
from ..codes import show
from ..errors import CrowdDataError
from ..numerics import (class_vote_counts, column_sums, confusion_posteriors,
                        label_profile_keys, safe_log, soft_vote)
from ..progress import Convergence
from .em import (GlobalEM, IndividualEM, annotator_bound, annotator_log_confusions,
                 fewer_groups, group_posteriors, group_probabilities, groups_m_step,
                 kmeans_memberships)

__all__ = ["MixtureOfGroupsModel", "MixtureOfGroupsRestarts", "GroupsState",
           "GroupsStatistics", "RestartFit", "counts_to_annotations", "SCENARIOS"]

SCENARIOS = ("individual", "global")

#: Former name of :meth:`Annotations.from_counts` (kept for existing code).
counts_to_annotations = Annotations.from_counts


# ---------------------------------------------------------------------------- label model
class MixtureOfGroupsModel(LabelingFunctionFallback, EMLabelModel):
    """Feature-free mixture of annotator groups (CMM label model, paper Eqs. 1-6, section 3.4).

    The individual scenario is written as the EM-step protocol of
    :mod:`crowd_keras.aggregation.em` (:meth:`init_state` hands over to
    :class:`MixtureOfGroupsRestarts`), so the same fit runs split into blocks of items and on
    Dask (``distributed.aggregate(..., method="mixture_of_groups")``). The global scenario
    clusters all annotations at once to start (K-means over every label) and runs in memory
    only.

    Args:
        num_groups: ``M`` group confusion matrices (paper: 3 on LabelMe).
        scenario: ``"individual"`` (default; one group per annotator, see the module doc)
            or ``"global"`` (annotator identity ignored, only label counts per item).
            :meth:`fit_counts` always fits the global scenario.
        max_iter, tol: EM stops when the objective per annotation changes by less than tol.
        smoothing: Dirichlet pseudo-count added to every group-confusion cell and the prior.
        restarts: EM runs from different K-means seedings; the best objective is kept.
        prune_groups: individual scenario: drop a group when the data are better explained
            without it (collapsed Dirichlet evidence); its annotators join the other groups.
        seed: seeds K-means (individual scenario: each annotator's draws follow what it
            said, its fingerprint over the items' content keys, not its name, its column nor
            the items' ids; global scenario: each (item, label) pair's draws follow the
            item's label counts and the label): renaming or reordering the annotators or the
            items gives the same fit.
        progress: progress over EM iterations (``True``: a bar, or lines without tqdm;
            ``"auto"``: lines only on a long fit; default off, as every label model).
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    Attributes:
        mixing_coefficients_: (M,) ``α`` over ``num_groups`` M; a group pruned in the fit
            keeps its place with ``α_m = 0``.
        group_confusions_: (M, K, K) ``β``, rows = true class (a pruned group's: its
            smoothing alone).
        memberships_: (annotators, M) ``p(g|a)``.
        active_annotators_: (annotators,) bool: labelled in fit (their memberships are kept
            by ``predict_proba(new)``).
        global_confusion_: (K, K) ``Σ_m α_m β_m``.
        scenario_: the scenario fitted (``"individual"`` or ``"global"``).
        objective_: the best restart's objective (log-likelihood, global, or mean-field
            bound, individual).
        log_likelihood_: its history per annotation.
        n_iter_: its EM iterations.
        restart_objectives_: (restarts,) each restart's objective.
        restart_n_iter_: (restarts,) each restart's EM iterations (the fit's work is
            ``restart_n_iter_.sum()`` iterations).
        posteriors_: (items, K).
        class_priors_: (K,).
        confusion_matrices_: (annotators, K, K) ``Σ_m p(g=m|a) β_m``.
    """

    em_name = "EM"
    needs_annotator_keys = True

    def __init__(self, num_groups: int = 3, scenario: str = "individual", max_iter: int = 100,
                 tol: float = 1e-6, smoothing: float = 1.0, restarts: int = 3,
                 prune_groups: bool = True, seed: Optional[int] = 0,
                 progress: Any = False, labeling_functions: str = "auto") -> None:
        self.num_groups = num_groups
        self.scenario = scenario
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.restarts = restarts
        self.prune_groups = prune_groups
        self.seed = seed
        self.progress = progress
        self.labeling_functions = labeling_functions

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        check_settings(self)   # also the global scenario's, which runs no protocol loop
        # 2.5 restarts are not truncated to 2, nor NaN groups left to int()'s message
        check_count(self.num_groups, "MixtureOfGroupsModel num_groups", 1)
        if self.scenario not in SCENARIOS:
            raise ValueError(f"scenario must be one of {SCENARIOS}, got {self.scenario!r}")
        check_count(self.restarts, "MixtureOfGroupsModel restarts", 1)
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be non-negative, got {self.smoothing!r}")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be at least 1, got {self.max_iter!r}")
        if self.progress not in (True, False, "auto"):
            raise ValueError(f"progress must be True, False or 'auto', got {self.progress!r}")

    def restart_seed(self, restart: int) -> Optional[int]:
        """The K-means seed of restart ``restart`` (``seed + restart``; None: unseeded)."""
        return None if self.seed is None else int(self.seed) + int(restart)

    # ------------------------------------------------------------------ the EM-step protocol
    def init_state(self, summary: Summary) -> "MixtureOfGroupsRestarts":
        """Hand over to every restart side by side (:class:`MixtureOfGroupsRestarts`);
        the individual scenario only (the global one starts from all annotations at once)."""
        self._check_params()
        if self.scenario != "individual":
            raise ValueError("only scenario='individual' runs as EM steps over blocks of items "
                             "(the global scenario starts from a K-means over all annotations "
                             "at once); fit it in memory")
        if summary.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        return MixtureOfGroupsRestarts(self, summary, range(int(self.restarts)))

    # ------------------------------------------------------------------ fitting
    _LF_SETTINGS = ("max_iter",)

    def _fit_crowd(self, ann: Annotations) -> "MixtureOfGroupsModel":
        return self._fit(ann, self.scenario)

    def fit_counts(self, counts: Any, classes: Optional[Sequence] = None) -> "MixtureOfGroupsModel":
        """Fit the global scenario on label counts per item (items × classes).

        Without annotator identity the ``k``-th label of an item is credited to a
        pseudo-annotator ``"slot-k"``, so ``annotations_`` and ``annotator_quality_`` still
        have the common shape (each pseudo-annotator gets the crowd's matrix).
        """
        self._check_params()
        self.regime_, self.labeling_function_model_ = "crowd", None
        return self._fit(Annotations.from_counts(counts, classes), "global")

    def _fit(self, ann: Annotations, scenario: str) -> "MixtureOfGroupsModel":
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        if scenario == "individual":
            # one protocol loop per restart (each with its own progress), on one block
            block = Block.from_annotations(ann)
            summary = block.summary(ann.n_classes, fingerprints=True)
            fits, posts = [], []
            for r in range(int(self.restarts)):
                run = run_em(MixtureOfGroupsRestarts(self, summary, [r]), [block], summary)
                fits.append(run.state.fits[0])
                posts.append(run.runner.class_posteriors(run.latents[0]))
            best = choose_restart(fits)
            self.adopt_restarts(ann, fits, best)
            self.posteriors_ = posts[best]
            return self
        # items keyed by their label counts, not their ids: renamed items start alike
        counts = ann.label_counts()
        em = GlobalEM(counts, self.num_groups, self.smoothing, label_profile_keys(counts))
        runs = [self._fit_global(em, self.restart_seed(r), r) for r in range(int(self.restarts))]
        best = choose_restart(runs)
        self.adopt_restarts(ann, runs, best)
        self.posteriors_ = runs[best].post
        return self

    def adopt_restarts(self, ann: Annotations, fits: Sequence["RestartFit"], best: int,
                       active: Optional[np.ndarray] = None) -> None:
        """Set the fitted parameters from each restart's fit and the winner ``best`` (the
        item posteriors ``posteriors_`` are set by the caller). ``active``: (annotators,) bool,
        who labelled in fit, when ``ann`` does not hold the annotations (a block template)."""
        fit = fits[best]
        self.active_annotators_ = (ann.annotations_per_annotator() > 0 if active is None
                                   else np.asarray(active, dtype=bool))
        self.restart_objectives_ = np.array([f.objective for f in fits])
        self.restart_n_iter_ = np.array([len(f.history) for f in fits])
        self.annotations_ = ann
        self.scenario_ = "global" if fit.groups is None else "individual"
        self.class_priors_ = fit.rho
        self.mixing_coefficients_ = fit.alpha
        self.group_confusions_ = fit.beta
        self.global_confusion_ = np.einsum("m,mkj->kj", fit.alpha, fit.beta)
        self.objective_ = fit.objective
        self.log_likelihood_ = np.asarray(fit.history)
        self.n_iter_ = len(fit.history)
        self.memberships_ = (self._section34(ann, fit.post) if fit.groups is None
                             else fit.groups)
        self.confusion_matrices_ = np.einsum("am,mkj->akj", self.memberships_,
                                             self.group_confusions_)

    def _loop(self, restart: int) -> Convergence:
        """The EM loop of one restart, with the progress of every label model's EM."""
        return Convergence(self.max_iter, self.tol, restart_name(restart), self.progress)

    def _rho(self, post: np.ndarray) -> np.ndarray:
        return class_prior(column_sums(post), self.smoothing)

    def _fit_global(self, em: GlobalEM, seed: Optional[int], restart: int) -> "RestartFit":
        n_annotations = em.pair_counts.sum()
        post = soft_vote(em.counts)
        q = em.kmeans_groups(post, seed)[:, :, None] * post[em.pair_items][:, None, :]
        loop = self._loop(restart)
        for _ in loop:
            alpha, beta, _ = em.m_step(q)                                   # Eq. 6
            rho = self._rho(post)
            with np.errstate(divide="ignore"):   # smoothing=0: an unlabelled class, ρ = 0
                post, ll = em.item_posteriors(np.log(rho), alpha, beta)    # E-step (z)
            q = em.latent_class_joint(post, alpha, beta)                   # E-step (m, k)
            # safe_log: with smoothing=0 a class without labels has ρ = 0, and 0 · log 0 was NaN
            loop.record((ll + self.smoothing * (safe_log(beta).sum() + safe_log(rho).sum()))
                        / n_annotations)
        history = list(loop.history)
        return RestartFit(rho, alpha, beta, None, history[-1], history, post)

    # ------------------------------------------------------------------ section 3.4
    def _section34(self, ann: Annotations, truth: np.ndarray) -> np.ndarray:
        return group_probabilities(ann, truth, self.mixing_coefficients_, self.group_confusions_)

    def _infer(self, new: Annotations, n_iter: int = 50) -> tuple[np.ndarray, np.ndarray]:
        """Item posteriors and memberships for new annotations (unknown annotators allowed).

        Annotators labelled in fit keep their fitted membership; the others (unknown ids,
        or ids without labels in fit) start at ``α`` and are updated by mean-field steps
        with the fitted ``α, β, ρ`` held fixed.
        """
        self._check_classes(new)
        with np.errstate(divide="ignore"):   # smoothing=0: an unlabelled class, ρ = 0
            log_rho = np.log(self.class_priors_)
        beta, alpha = self.group_confusions_, self.mixing_coefficients_
        if self.scenario_ == "global":
            em = GlobalEM(new.label_counts(), beta.shape[0], 0.0)
            post, _ = em.item_posteriors(log_rho, alpha, beta)
            return post, self._section34(new, post)
        codes = self._known_codes(new)
        self._check_annotator_types(new, codes)   # "7" against 7: not new annotators to place
        # "known": labelled in fit; annotators listed but silent in fit are placed like new ones
        fitted_active = getattr(self, "active_annotators_", None)
        if fitted_active is None:   # a model from before this attribute
            fitted_active = self.annotations_.annotations_per_annotator() > 0
        known = (codes >= 0) & fitted_active[np.maximum(codes, 0)]
        groups = np.tile(alpha, (new.n_annotators, 1))
        groups[known] = self.memberships_[codes[known]]
        em = IndividualEM(new, beta.shape[0], 0.0)
        lb = em.label_log_beta(beta)
        post, _ = em.item_step(log_rho, groups, beta, lb)
        if known.all():
            return post, groups
        for _ in range(int(n_iter)):
            fresh = em.group_step(post, alpha, beta, lb)
            change = np.abs(fresh[~known] - groups[~known]).max()
            groups[~known] = fresh[~known]
            post, _ = em.item_step(log_rho, groups, beta, lb)
            if change < 1e-6:
                break
        return post, groups

    def _known_codes(self, new: Annotations) -> np.ndarray:
        return pd.Index(self.annotations_.annotator_ids).get_indexer(new.annotator_ids)

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        """``predict_proba(new)``: new annotations may come from unseen annotators.

        Unseen annotators are placed in the groups by their labels (section 3.4, mean-field
        with the fitted parameters fixed), so they count as much as their group deserves.
        """
        if getattr(self, "labeling_function_model_", None) is not None:
            return super()._posteriors_for_new(new)
        return self._infer(new)[0]

    def group_probabilities(self, annotations: Any = None,
                            item_posteriors: Optional[np.ndarray] = None) -> np.ndarray:
        """``p(g | a)`` for the annotators of ``annotations``: (annotators, M) (section 3.4).

        Args:
            annotations: any annotations with the fitted classes; annotators may be new.
                ``None``: the fitted annotators (``memberships_``).
            item_posteriors: optional (items, K) truth distribution of ``annotations``' items
                (e.g. a classifier's ``p(z|x)``); then ``p(g=m|a) ∝ α_m Π Σ_k t_ik β_m[k, y]``
                exactly as in section 3.4. Default: the model's own item posteriors.

        Rows follow ``annotations.annotator_ids``; annotators without labels get ``α``.
        """
        self._check_fitted()
        self._require_crowd_regime("there are no groups")
        if annotations is None:
            return self.memberships_.copy()
        new = self._read_new(annotations)
        if item_posteriors is not None:
            self._check_classes(new)
            t = np.asarray(item_posteriors, dtype=np.float64)
            if t.shape != (new.n_items, new.n_classes):
                raise CrowdDataError(f"item_posteriors must be (items={new.n_items}, classes="
                                     f"{new.n_classes}), got {t.shape}")
            # a NaN or negative row made its annotators' memberships NaN, silently
            bad = ~np.isfinite(t).all(axis=1) | (t < 0).any(axis=1)
            if bad.any():
                i = int(np.argmax(bad))
                raise CrowdDataError(f"item_posteriors row {i} (item {show(new.item_ids[i])}) "
                                     f"is not finite and non-negative: {t[i].tolist()} "
                                     f"({int(bad.sum())} such rows)")
            return self._section34(new, t)
        return self._infer(new)[1]

    def annotator_confusions(self, annotations: Any = None,
                             item_posteriors: Optional[np.ndarray] = None) -> np.ndarray:
        """Each annotator's implied matrix ``Σ_m p(g=m|a) β_m``: (annotators, K, K)."""
        return np.einsum("am,mkj->akj", self.group_probabilities(annotations, item_posteriors),
                         self.group_confusions_)


# ---------------------------------------------------------------------------- restarts
def restart_name(restart: int) -> str:
    """Name of restart ``restart``'s EM loop in progress bars."""
    return f"MixtureOfGroups EM #{restart + 1}"


def class_prior(mass: np.ndarray, smoothing: float) -> np.ndarray:
    """``ρ`` (K,): the items' class mass ``Σ_i q(z_i)`` plus ``smoothing``, normalised."""
    rho = mass + smoothing
    return rho / rho.sum()


def choose_restart(fits: Sequence["RestartFit"]) -> int:
    """The restart with the highest objective (the first on ties)."""
    return max(range(len(fits)), key=lambda r: fits[r].objective)


@dataclass
class RestartFit:
    """What one finished restart leaves.

    Attributes:
        rho (K,), alpha (M,), beta (M, K, K): the parameters after its last E-step;
        groups: (A, M) memberships q(g_a) (individual scenario; None: global);
        objective: its last objective per annotation; history: one per EM iteration;
        post: (I, K) its item posteriors (global scenario in memory; None otherwise: the
        protocol's E-step reports them per block).
    """

    rho: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    groups: Optional[np.ndarray]
    objective: float
    history: List[float]
    post: Optional[np.ndarray] = None


@dataclass
class GroupsState:
    """Where every restart of the individual scenario stands (one entry per restart).

    Attributes:
        groups: (A, M) memberships q(g_a) of the E-step; carried to the next M-step, which
            starts from them (they are the annotators', not sums over items).
        alpha (M,), beta (M, K, K), rho (K,): the E-step's parameters.
        log_conf: (A, K, K) ``Σ_m q(g_a=m) log β_m``, the E-step's annotator matrices.
        previous: last objective per annotation (``-inf`` at the start and after a group
            was dropped). history: objectives so far.
        fits: a :class:`RestartFit` once the restart is done, else None.
        best: the winning restart once every restart is done (-1 before).
        step: number of M-steps so far (the loop's objective, see
            :class:`MixtureOfGroupsRestarts`).
    """

    groups: List[np.ndarray]
    alpha: List[np.ndarray]
    beta: List[np.ndarray]
    rho: List[np.ndarray]
    log_conf: List[np.ndarray]
    previous: List[float]
    history: List[List[float]]
    fits: List[Optional[RestartFit]]
    best: int = -1
    step: int = 0


@dataclass
class GroupsStatistics:
    """Sums over items of one E-step of every restart, with the state it ran under (which
    every block carries alike: the sum keeps one; None: the starting statistics).

    Attributes:
        counts: per restart (A, K, K) expected votes ``N[a, k, y] = Σ_i q(z_i=k) [a said y
            on i]`` (None: not running; at the start one entry, the soft vote's, for all).
        mass: per restart (K,) ``Σ_i q(z_i)``. lse: per restart ``Σ_i log`` normaliser of
            the item E-step.
    """

    counts: List[Optional[np.ndarray]]
    mass: List[Optional[np.ndarray]]
    lse: List[float]
    state: Optional[GroupsState]

    def __add__(self, other: "GroupsStatistics") -> "GroupsStatistics":
        return GroupsStatistics(
            [None if a is None else a + b for a, b in zip(self.counts, other.counts)],
            [None if a is None else a + b for a, b in zip(self.mass, other.mass)],
            [a + b for a, b in zip(self.lse, other.lse)], self.state)


class MixtureOfGroupsRestarts(EMLabelModel):
    """The individual scenario's restarts side by side, as one EM-step protocol.

    Statistics are Dawid-Skene's: the expected votes ``N[a, k, y]``, the class mass and the
    item E-step's summed log normaliser, sums over items. Everything at the annotators'
    level runs in the M-step on those sums: the K-means start (on the soft vote's counts),
    ``α``, ``β`` and ``ρ``, the mean-field memberships q(g_a) (which the state carries from
    one M-step to the next), the objective (the mean-field bound, its annotator terms from
    the state), the stopping rule and the removal of a surplus group (collapsed Dirichlet
    evidence). The E-step per block is the item posteriors under each annotator's matrices
    ``Σ_m q(g_a=m) log β_m``. Each restart follows its own EM, as if run alone: when its
    objective settles it drops a group and goes on, or is done; once all are, the one with
    the highest objective wins and the next E-step gives its posteriors.

    The loop's objective is the number of M-steps (in steps larger than ``tol``), which stops
    moving only once the winner is chosen, so the loop (in memory or on Dask) runs until
    then: at most ``max_iter + 1`` iterations (its ``max_iter``).

    Args:
        model: the :class:`MixtureOfGroupsModel` (settings; its ``finish`` target).
        summary: sums over all items. restarts: the restarts to run (their numbers seed
            K-means: ``model.restart_seed``).
    """

    em_name = "EM"
    needs_annotator_keys = True

    def __init__(self, model: MixtureOfGroupsModel, summary: Summary,
                 restarts: Sequence[int]) -> None:
        self.model = model
        self.summary = summary
        self.restarts_ = [int(r) for r in restarts]
        self.max_iter = int(model.max_iter) + 1
        self.tol = float(model.tol)
        self.progress = model.progress
        super().init_state(summary)
        self.n_annotators_ = summary.votes.shape[0]
        self.per_annotator_ = summary.votes.sum(axis=1)
        self.active_ = self.per_annotator_ > 0
        self.smoothing_ = float(model.smoothing)
        self.objective_step_ = max(1.0, 2.0 * self.tol) if np.isfinite(self.tol) else 1.0

    @property
    def progress_name(self) -> str:
        """One restart: ``"MixtureOfGroups EM #r"``; several: their loop."""
        if len(self.restarts_) == 1:
            return restart_name(self.restarts_[0])
        return f"MixtureOfGroups EM ({len(self.restarts_)} restarts)"

    # ------------------------------------------------------------------ the protocol
    def initial_statistics(self, block: Block) -> GroupsStatistics:
        """The soft majority vote's counts (one entry: every restart starts from them)."""
        post = self.initial_posteriors(block)
        return GroupsStatistics([class_vote_counts(block.XT, post, self.n_annotators_)],
                                [column_sums(post)], [0.0], None)

    def m_step(self, stats: GroupsStatistics) -> GroupsState:
        old = stats.state
        if old is None:
            return self._start(stats)
        if old.best >= 0:
            return old
        n = len(self.restarts_)
        new = replace(old, groups=list(old.groups), alpha=list(old.alpha),
                      beta=list(old.beta), rho=list(old.rho), log_conf=list(old.log_conf),
                      previous=list(old.previous), history=list(old.history),
                      fits=list(old.fits), step=old.step + 1)
        for r in range(n):
            if old.fits[r] is None:
                self._advance(new, r, stats.counts[r], stats.mass[r], stats.lse[r])
        if all(fit is not None for fit in new.fits):
            new.best = choose_restart(new.fits)
            new.step = old.step        # the objective stops moving: the loop ends
        return new

    def _start(self, stats: GroupsStatistics) -> GroupsState:
        """Each restart's K-means memberships on the soft vote's counts, then its first
        parameters."""
        n = len(self.restarts_)
        state = GroupsState([None] * n, [None] * n, [None] * n, [None] * n, [None] * n,
                            [-np.inf] * n, [[] for _ in range(n)], [None] * n, step=1)
        counts, mass = stats.counts[0], stats.mass[0]
        for r, restart in enumerate(self.restarts_):
            groups = kmeans_memberships(counts, self.per_annotator_, self.model.num_groups,
                                        self.model.restart_seed(restart),
                                        keys=self.summary.annotator_keys())
            self._parameters(state, r, counts, mass, groups)
        return state

    def _parameters(self, state: GroupsState, r: int, counts: np.ndarray, mass: np.ndarray,
                    groups: np.ndarray) -> None:
        """Restart r's M-step from memberships ``groups``: ``α``, ``β``, ``ρ``, then the
        new memberships q(g_a) and the annotator matrices of the E-step."""
        alpha, beta, _ = groups_m_step(counts, groups, self.active_, self.smoothing_)
        rho = class_prior(mass, self.smoothing_)
        lb = safe_log(beta)
        groups = group_posteriors(counts, lb, alpha, self.active_)
        state.groups[r], state.alpha[r], state.beta[r], state.rho[r] = groups, alpha, beta, rho
        state.log_conf[r] = annotator_log_confusions(groups, lb)

    def _advance(self, state: GroupsState, r: int, counts: np.ndarray, mass: np.ndarray,
                 lse: float) -> None:
        """Restart r after its E-step: its objective; settled: drop a group or be done;
        then its next parameters (running) or its fit (done)."""
        groups, alpha, beta, rho = state.groups[r], state.alpha[r], state.beta[r], state.rho[r]
        prior = self.smoothing_ * (safe_log(beta).sum() + safe_log(rho).sum())   # 0 · log 0: 0
        elbo = float(lse + annotator_bound(groups, alpha, self.active_))
        obj = (elbo + prior) / self.summary.n_annotations
        state.history[r] = state.history[r] + [float(obj)]
        done, previous = False, obj
        if abs(obj - state.previous[r]) < self.tol:
            fewer = fewer_groups(counts, alpha, beta, self.active_) \
                if self.model.prune_groups else None
            if fewer is None:
                done = True
            else:   # settled with a surplus group: drop it and go on from a new start
                groups, previous = fewer, -np.inf
        state.previous[r] = previous
        if done or len(state.history[r]) >= self.model.max_iter:
            # the parameters of the last E-step, which gives the reported posteriors: new
            # annotations are scored as the fitted ones (a further M-step moved them apart)
            history = state.history[r]
            state.fits[r] = RestartFit(state.rho[r], state.alpha[r], state.beta[r],
                                       state.groups[r], history[-1], history)
            return
        self._parameters(state, r, counts, mass, groups)

    def e_step(self, block: Block, state: GroupsState) -> tuple:
        """Per restart running, its item posteriors (I, K) and summed log normaliser; once a
        winner is chosen, its posteriors (the report)."""
        n = len(self.restarts_)
        posts: List[Optional[np.ndarray]] = [None] * n
        lse = [0.0] * n
        report = None
        for r in range(n):
            if state.best >= 0 and r != state.best:
                continue
            if state.best < 0 and state.fits[r] is not None:
                continue
            with np.errstate(divide="ignore"):   # smoothing=0: an unlabelled class, ρ = 0
                log_prior = np.atleast_2d(np.log(state.rho[r]))
            if block.item_log_prior is not None:
                log_prior = log_prior + block.item_log_prior
            post, log_norm = confusion_posteriors(block.X, state.log_conf[r], log_prior)
            if state.best >= 0:
                report = post
            else:
                posts[r], lse[r] = post, log_norm.sum()
        objective = block.n_items * state.step * self.objective_step_
        return (posts, lse, report, state), float(objective)

    def sufficient_statistics(self, block: Block, latent: tuple) -> GroupsStatistics:
        posts, lse, _report, state = latent
        counts = [None if post is None else class_vote_counts(block.XT, post, self.n_annotators_)
                  for post in posts]
        mass = [None if post is None else column_sums(post) for post in posts]
        return GroupsStatistics(counts, mass, list(lse), state)

    def objective_scale(self, summary: Summary) -> float:
        return float(max(summary.n_items, 1))

    def class_posteriors(self, latent: tuple) -> np.ndarray:
        report = latent[2]
        if report is None:
            raise RuntimeError("the mixture of groups' restarts stopped before a winner was "
                               "chosen")
        return report

    def finish(self, state: GroupsState, summary: Summary, template: Annotations,
               history: Sequence[float]) -> MixtureOfGroupsModel:
        if state.best < 0:
            raise RuntimeError("the mixture of groups' restarts stopped before a winner was "
                               "chosen")
        model = self.model
        votes = summary.votes.sum(axis=1)
        model.adopt_restarts(template, state.fits, state.best,
                             active=votes > 0 if len(votes) == template.n_annotators else None)
        return model
