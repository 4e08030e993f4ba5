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
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..aggregation.base import LabelModel, as_annotations
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import safe_log, soft_vote
from ..progress import Convergence
from .em import GlobalEM, IndividualEM, best_removal, group_probabilities

__all__ = ["MixtureOfGroupsModel", "counts_to_annotations", "SCENARIOS"]

SCENARIOS = ("individual", "global")

#: Former name of :meth:`Annotations.from_counts` (kept for existing code).
counts_to_annotations = Annotations.from_counts


# ---------------------------------------------------------------------------- label model
class MixtureOfGroupsModel(LabelingFunctionFallback, LabelModel):
    """Feature-free mixture of annotator groups (CMM label model, paper Eqs. 1-6, section 3.4).

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
        seed: seeds K-means.
        progress: progress over EM iterations (``True``: a bar, or lines without tqdm;
            ``"auto"``: lines only on a long fit; default off, as every label model).
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    Attributes (after fit):
        posteriors_ (items, K); class_priors_ (K,); mixing_coefficients_ ``α`` (M,);
        group_confusions_ ``β`` (M, K, K), rows = true class; memberships_ ``p(g|a)``
        (annotators, M); confusion_matrices_ ``Σ_m p(g=m|a) β_m`` (annotators, K, K);
        global_confusion_ ``Σ_m α_m β_m`` (K, K); scenario_; objective_ (best restart:
        log-likelihood, global, or mean-field bound, individual); log_likelihood_ (its
        history per annotation); n_iter_ (its EM iterations); restart_objectives_ and
        restart_n_iter_ ``(restarts,)`` (each restart's objective and EM iterations; the
        fit's work is ``restart_n_iter_.sum()`` iterations).
    """

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
        if int(self.num_groups) != self.num_groups or self.num_groups < 1:
            raise ValueError(f"num_groups must be a positive integer, got {self.num_groups!r}")
        if self.scenario not in SCENARIOS:
            raise ValueError(f"scenario must be one of {SCENARIOS}, got {self.scenario!r}")
        if int(self.restarts) < 1:
            raise ValueError(f"restarts must be at least 1, got {self.restarts!r}")
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be non-negative, got {self.smoothing!r}")

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
        runs = []
        # the restarts share the data's sparse matrices (and differ in their K-means seed)
        em = IndividualEM(ann, self.num_groups, self.smoothing) if scenario == "individual" \
            else GlobalEM(ann.label_counts(), self.num_groups, self.smoothing)
        for r in range(int(self.restarts)):
            seed = None if self.seed is None else int(self.seed) + r
            run = (self._fit_individual(em, seed, r) if scenario == "individual"
                   else self._fit_global(em, seed, r))
            runs.append(run)
        best = max(runs, key=lambda run: run["objective"])
        self.restart_objectives_ = np.array([run["objective"] for run in runs])
        self.restart_n_iter_ = np.array([len(run["history"]) for run in runs])
        self.annotations_ = ann
        self.scenario_ = scenario
        self.posteriors_ = best["post"]
        self.class_priors_ = best["rho"]
        self.mixing_coefficients_ = best["alpha"]
        self.group_confusions_ = best["beta"]
        self.global_confusion_ = np.einsum("m,mkj->kj", best["alpha"], best["beta"])
        self.objective_ = best["objective"]
        self.log_likelihood_ = np.asarray(best["history"])
        self.n_iter_ = len(best["history"])
        if scenario == "individual":
            self.memberships_ = best["groups"]
        else:
            self.memberships_ = self._section34(ann, self.posteriors_)
        self.confusion_matrices_ = np.einsum("am,mkj->akj", self.memberships_,
                                             self.group_confusions_)
        return self

    def _loop(self, restart: int) -> Convergence:
        """The EM loop of one restart, with the progress of every label model's EM."""
        return Convergence(self.max_iter, self.tol, f"MixtureOfGroups EM #{restart + 1}",
                           self.progress)

    def _rho(self, post: np.ndarray) -> np.ndarray:
        rho = post.sum(axis=0) + self.smoothing
        return rho / rho.sum()

    def _fit_global(self, em: GlobalEM, seed: Optional[int], restart: int) -> dict:
        n_annotations = em.pair_counts.sum()
        post = soft_vote(em.counts)
        q = em.kmeans_groups(post, seed)[:, :, None] * post[em.pair_items][:, None, :]
        loop = self._loop(restart)
        for _ in loop:
            alpha, beta, _ = em.m_step(q)                                   # Eq. 6
            rho = self._rho(post)
            post, ll = em.item_posteriors(np.log(rho), alpha, beta)        # E-step (z)
            q = em.latent_class_joint(post, alpha, beta)                   # E-step (m, k)
            loop.record((ll + self.smoothing * (safe_log(beta).sum() + np.log(rho).sum()))
                        / n_annotations)
        history = list(loop.history)
        return dict(post=post, rho=rho, alpha=alpha, beta=beta, objective=history[-1],
                    history=history)

    def _fit_individual(self, em: IndividualEM, seed: Optional[int], restart: int) -> dict:
        ann = em.ann
        post = soft_vote(ann.label_counts())
        groups = em.kmeans_groups(post, seed)
        prev = -np.inf
        loop = self._loop(restart)
        for _ in loop:
            counts = em.counts(post)                                        # one pass
            alpha, beta, _ = em.m_step(post, groups, counts)
            rho = self._rho(post)
            lb = em.label_log_beta(beta)
            groups = em.group_step(post, alpha, beta, lb, counts=counts)
            post, lse = em.item_step(np.log(rho), groups, beta, lb)
            prior = self.smoothing * (safe_log(beta).sum() + np.log(rho).sum())
            obj = (em.elbo(lse, groups, alpha) + prior) / ann.n_annotations
            loop.record(obj)
            # settled: drop a surplus group and go on, counting from the new start
            loop.converged = False
            if abs(obj - prev) < self.tol:
                fewer = best_removal(em, post, alpha, beta) if self.prune_groups else None
                if fewer is None:
                    loop.converged = True
                    continue
                groups, prev = fewer, -np.inf
                continue
            prev = obj
        history = list(loop.history)
        alpha, beta, _ = em.m_step(post, groups)
        return dict(post=post, rho=self._rho(post), alpha=alpha, beta=beta, groups=groups,
                    objective=history[-1], history=history)

    # ------------------------------------------------------------------ section 3.4
    def _section34(self, ann: Annotations, truth: np.ndarray) -> np.ndarray:
        return group_probabilities(ann, truth, self.mixing_coefficients_, self.group_confusions_)

    def _check_classes(self, new: Annotations) -> None:
        if not np.array_equal(new.classes, self.annotations_.classes):
            raise CrowdDataError(f"classes {list(new.classes)} differ from the fitted classes "
                                 f"{list(self.annotations_.classes)}")

    def _infer(self, new: Annotations, n_iter: int = 50) -> tuple[np.ndarray, np.ndarray]:
        """Item posteriors and memberships for new annotations (unknown annotators allowed).

        Annotators labelled in fit keep their fitted membership; the others (unknown ids,
        or ids without labels in fit) start at ``α`` and are updated by mean-field steps
        with the fitted ``α, β, ρ`` held fixed.
        """
        self._check_classes(new)
        log_rho = np.log(self.class_priors_)
        beta, alpha = self.group_confusions_, self.mixing_coefficients_
        if self.scenario_ == "global":
            em = GlobalEM(new.label_counts(), beta.shape[0], 0.0)
            post, _ = em.item_posteriors(log_rho, alpha, beta)
            return post, self._section34(new, post)
        codes = self._known_codes(new)
        # "known": labelled in fit; annotators listed but silent in fit are placed like new ones
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
        new = as_annotations(annotations)
        if item_posteriors is not None:
            self._check_classes(new)
            t = np.asarray(item_posteriors, dtype=np.float64)
            if t.shape != (new.n_items, new.n_classes):
                raise CrowdDataError(f"item_posteriors must be (items={new.n_items}, classes="
                                     f"{new.n_classes}), got {t.shape}")
            return self._section34(new, t)
        return self._infer(new)[1]

    def annotator_confusions(self, annotations: Any = None,
                             item_posteriors: Optional[np.ndarray] = None) -> np.ndarray:
        """Each annotator's implied matrix ``Σ_m p(g=m|a) β_m``: (annotators, K, K)."""
        return np.einsum("am,mkj->akj", self.group_probabilities(annotations, item_posteriors),
                         self.group_confusions_)
