"""The mixture-of-groups EM (Mena & Ñanculef 2019, section 3.3) around any Keras classifier.

The crowd's label distribution is ``p(y = j | x) = Σ_{m,k} α_m β_m[k, j] f_k(x; θ)`` (Eq. 3)
with ``f`` the classifier (softmax output). :class:`MixtureOfGroupsEM` maximises the
count log-likelihood (Eq. 4) by EM:

1. initialisation: soft majority vote for ``p(z|x)`` and a K-means clustering of the
   annotations into the ``M`` groups, ``q_ij(m, k) = [cluster(i, j) = m] · mv_ik``
   (the authors' code);
2. M-step (Eq. 6): ``α_m ∝ Σ_ij r_ij q_ij(m, ·)``, ``β_m[k, j] ∝ Σ_i q_ij(m, k) r_ij``
   (plus ``smoothing``, the authors' Laplace prior), and **one classifier epoch** on the
   cross-entropy with the consensus ``r̄_ik = Σ_j q_ij(·, k) r_ij`` (Eq. 7: targets
   ``r̄_i / T_i`` with sample weight ``T_i``);
3. E-step: ``q_ij(m, k) ∝ β_m[k, j] f_k(x_i) α_m``;

until the relative changes of the log-likelihood and of ``β`` are below ``tol`` (or
``max_iter``), from ``restarts`` starts (fresh classifier weights, another K-means
seeding), keeping the run with the best log-likelihood. Everything outside the classifier
is numpy over the observed ``(item, label)`` pairs, so an iteration does not depend on the
number of annotators.

By default (``likelihood="item"``) the global scenario uses the item-level likelihood (the
labels of an item share its true class; still label counts only), which pins the crowd's
matrix down better; ``likelihood="annotation"`` is Eq. 4 exactly as written.
``scenario="individual"`` instead gives each annotator one group (mean-field ``q(z_i) q(g_a)``, see :mod:`crowd_keras.mixture_of_groups.em`) with ``f(x_i)`` as
the prior of ``z_i``, and trains the classifier on ``q(z_i)``.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np

from .._keras_utils import check_finite_rows, checked_codes, n_rows, seeded_construction
from ..aggregation.base import check_flags
from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError, NotFittedError
from ..features import by_item_id
from ..item_consensus import (CrowdConsensus, confusion_log_likelihood, item_posteriors,
                              mean_confusions, onto_fitted, summary_from_posteriors,
                              with_expected_accuracy)
from ..numerics import normalize_rows, safe_log, soft_vote
from ..params import Params
from ..progress import progress_bar
from .em import GlobalEM, IndividualEM, group_probabilities
from .layers import MixtureOfGroups

__all__ = ["MixtureOfGroupsEM"]


class MixtureOfGroupsEM(CrowdConsensus, Params):
    """Train a classifier from crowd labels with the mixture-of-groups EM (section 3.3).

    Args:
        classifier: a Keras model mapping ``x`` to class probabilities (softmax output). It
            is compiled here (``optimizer``, categorical cross-entropy) and ends with the
            weights of the best restart.
        num_groups: ``M`` groups.
        scenario: ``"global"`` (the paper's CMM: label counts only) or ``"individual"``.
        max_iter: EM iterations per restart (paper: 50).
        tol: stop when both ``|ℓ_t − ℓ_{t−1}| / |ℓ_{t−1}|`` and the mean relative change
            of the ``β`` entries fall below it (the authors' criterion and default, 3e-2).
        restarts: EM runs; the one with the highest final log-likelihood is kept (paper: 20).
        epochs_per_step: classifier epochs per M-step (paper: 1).
        batch_size: classifier batch size.
        optimizer: Keras optimizer (name, config or instance; re-created per restart).
        smoothing: Dirichlet pseudo-count on every ``β`` cell (the authors use 1, Laplace).
        pretrain_epochs: epochs on the soft majority vote before EM (authors' ``pre_init_z``).
        likelihood: global scenario: ``"item"`` (default: an item's labels share its class,
            ``p(r_i | x_i) = Σ_k f_k(x_i) Π_j B_kj^{r_ij}`` with ``B = Σ_m α_m β_m``; E-step
            ``q(z_i) ∝ f_k(x_i) Π_j B_kj^{r_ij}``, classifier trained on ``q(z_i)``). Eq. 4
            is also fitted by ``f B`` equal to the labels' frequencies, so its EM tends to
            drift to ``B ≈ I`` (the classifier absorbs the noise); the item likelihood pins
            ``B`` down from ≥ 2 labels per item. ``"annotation"`` is the paper's Eq. 4 as
            written (every label marginalises its own true class); the comparison is
            recorded by ``benchmarks/mixture_of_groups.py``.
        seed: seeds K-means, the batch order and the fresh weights of restarts (and the
            dropout of those clones), without touching global random state; ``None``: not
            seeded. Restart 0 trains ``classifier`` from its current weights.
        progress: progress bar over EM iterations.

    After :meth:`fit` on ``annotations``, the label-model surface
    (:mod:`crowd_keras.item_consensus`): ``class_priors_``, ``confusion_matrices_`` (each
    annotator's ``Σ_m p(g=m|a) β_m``) and ``annotator_quality_``.

    Attributes:
        classifier_: the trained classifier (the same object as ``classifier``).
        mixing_coefficients_: (M,) ``α``.
        group_confusions_: (M, K, K) ``β``, rows = true class.
        posteriors_: (items, K) the consensus the classifier was last trained on.
        log_likelihood_: the log-likelihood per iteration of the kept run.
        n_iter_: its EM iterations.
        restart_log_likelihoods_: (restarts,) each run's last log-likelihood.
        memberships_: (annotators, M) ``q(g_a)`` (individual scenario only).
        annotations_: the annotations fitted (individual scenario only).
        layer_: a :class:`MixtureOfGroups` holding ``α, β``.
        history_: per iteration, the log-likelihood and, with ``validation_data``, the
            validation accuracy.
        num_classes_: K.
        crowd_summary_: the :class:`~crowd_keras.item_consensus.CrowdSummary` behind the
            label-model surface (None when fitted on label counts).
    """

    def __init__(self, classifier: keras.Model, num_groups: int = 3, *, scenario: str = "global",
                 max_iter: int = 50, tol: float = 3e-2, restarts: int = 1,
                 epochs_per_step: int = 1, batch_size: int = 64, optimizer: Any = "adam",
                 smoothing: float = 1.0, pretrain_epochs: int = 0, likelihood: str = "item",
                 seed: Optional[int] = None, progress: bool = True) -> None:
        self.classifier = classifier
        self.num_groups = num_groups
        self.scenario = scenario
        self.max_iter = max_iter
        self.tol = tol
        self.restarts = restarts
        self.epochs_per_step = epochs_per_step
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.smoothing = smoothing
        self.pretrain_epochs = pretrain_epochs
        self.likelihood = likelihood
        self.seed = seed
        self.progress = progress

    # ------------------------------------------------------------------ checks
    def _check_settings(self) -> None:
        """The counts and numbers, before any work: ``restarts=0`` ran one restart,
        ``batch_size=0`` Keras' default, ``2.5`` iterations were truncated and a negative
        ``smoothing`` failed after the whole EM."""
        name = type(self).__name__
        for setting, least in (("max_iter", 1), ("restarts", 1), ("epochs_per_step", 0),
                               ("batch_size", 1), ("pretrain_epochs", 0)):
            check_count(getattr(self, setting), f"{name} {setting}", least)
        check_number(self.tol, f"{name} tol", low=-np.inf)
        check_number(self.smoothing, f"{name} smoothing")
        if self.seed is not None:
            check_count(self.seed, f"{name} seed", 0)
        check_flags(self)   # progress="no" showed the bars

    def _check(self, x: Any, annotations: Any, counts: Any) -> tuple:
        if self.scenario not in ("global", "individual"):
            raise ValueError(f"scenario must be 'global' or 'individual', got {self.scenario!r}")
        check_count(self.num_groups, "MixtureOfGroupsEM num_groups", 1)   # 2.0 is not a count
        if self.likelihood not in ("annotation", "item"):
            raise ValueError(f"likelihood must be 'annotation' or 'item', got {self.likelihood!r}")
        self._check_settings()
        if (annotations is None) == (counts is None):
            raise CrowdDataError("give exactly one of annotations= (an Annotations) or counts= "
                                 "(items × classes label counts)")
        if annotations is not None:
            if not isinstance(annotations, Annotations):
                raise CrowdDataError(f"annotations must be a crowd_keras.Annotations, got "
                                     f"{type(annotations).__name__}")
            n, k = annotations.n_items, annotations.n_classes
            r = annotations.label_counts()
        else:
            if self.scenario == "individual":
                raise CrowdDataError("the individual scenario needs annotations with annotator "
                                     "ids; label counts only allow scenario='global'")
            r = Annotations.from_counts(counts).label_counts()   # validates the counts
            n, k = r.shape
        if k < 2:   # the layer_ built after EM needs two; refused before training, not after
            raise CrowdDataError(f"the annotations have {k} class; the mixture of groups "
                                 "needs at least 2 (a class without labels still counts: "
                                 "Annotations(..., n_classes=K), or a column of zero counts)")
        rows = n_rows(x)
        if rows != n:
            raise CrowdDataError(f"x has {rows} rows but the annotations have {n} items "
                                 "(row i of x must be item code i)")
        check_finite_rows(x)   # as LIATrainer: NaN weights and a late message
        if r.sum() == 0:
            raise CrowdDataError("no annotations to learn from")
        out_k = getattr(self.classifier, "output_shape", (None,))[-1]
        if out_k is not None and out_k != k:
            raise CrowdDataError(f"the classifier outputs {out_k} classes but the annotations "
                                 f"have {k}")
        return r, k

    def _check_outputs_probabilities(self, x: Any, rows: int = 8) -> None:
        """CrowdDataError unless the classifier maps the first ``rows`` items to class
        probabilities: logits gave NaN posteriors through the whole EM and then a message
        about the mixing coefficients."""
        f = self._predict(self.classifier, keras.tree.map_structure(
            lambda a: np.asarray(a)[:rows], x))
        bad = ~(np.isfinite(f).all(axis=1) & (f >= 0).all(axis=1)
                & (np.abs(f.sum(axis=1) - 1.0) < 1e-2))   # float16 outputs sum to 1 ± 1e-3
        if bad.any():
            row = int(np.argmax(bad))
            raise CrowdDataError(f"the classifier must output class probabilities (a softmax "
                                 f"output layer); for row {row} of x it gives "
                                 f"{np.round(f[row], 4).tolist()}, which is not a probability "
                                 "distribution")

    # ------------------------------------------------------------------ helpers
    def _optimizer(self) -> keras.optimizers.Optimizer:
        opt = self.optimizer
        if isinstance(opt, keras.optimizers.Optimizer):
            return opt.__class__.from_config(opt.get_config())
        return keras.optimizers.get(opt)

    def _fresh_model(self, restart: int) -> keras.Model:
        if restart == 0:
            return self.classifier
        seed = None if self.seed is None else int(self.seed) + restart
        try:
            with seeded_construction(seed):                           # new random weights
                return keras.models.clone_model(self.classifier)
        except Exception:  # subclassed models: same initial weights, another K-means seed
            self.classifier.set_weights(self._initial_weights)
            return self.classifier

    @staticmethod
    def _predict(model: keras.Model, x: Any, chunk: int = 4096) -> np.ndarray:
        """``f(x)`` (items, K); arrays go through direct calls (cheaper than ``predict``)."""
        if isinstance(x, np.ndarray):
            parts = [keras.ops.convert_to_numpy(model(x[i:i + chunk], training=False))
                     for i in range(0, len(x), chunk)]
            return np.concatenate(parts).astype(np.float64)
        return np.asarray(model.predict(x, batch_size=1024, verbose=0), dtype=np.float64)

    def _train(self, model: keras.Model, x: Any, target: np.ndarray, epochs: int) -> None:
        """Eq. 7: cross-entropy with ``r̄_i / T_i``, sample weight ``T_i`` (0 without labels)."""
        total = target.sum(axis=1)
        dist = (target / np.where(total > 0, total, 1.0)[:, None]).astype("float32")
        weight = (total / total[total > 0].mean()).astype("float32")
        for _ in range(int(epochs)):
            # the batch order comes from the trainer's own generator (seed), not Keras' global one
            order = self._rng.permutation(len(dist))
            xs = keras.tree.map_structure(lambda a: np.asarray(a)[order], x)
            model.fit(xs, dist[order], sample_weight=weight[order], epochs=1,
                      batch_size=int(self.batch_size), verbose=0, shuffle=False)

    # ------------------------------------------------------------------ EM
    def fit(self, x: Any, annotations: Optional[Annotations] = None, *, counts: Any = None,
            validation_data: Optional[tuple] = None) -> "MixtureOfGroupsEM":
        """Run EM with restarts.

        Args:
            x: classifier inputs, row ``i`` = item code ``i`` (a ``DataFrame`` indexed by the
                annotations' item ids is aligned by id, any row order).
            annotations: an :class:`Annotations` (either scenario), or
            counts: (items, K) label counts (global scenario only).
            validation_data: optional ``(x_val, y_val)`` with true class codes: accuracy is
                recorded per iteration in ``history_`` (model selection stays on the
                log-likelihood).
        """
        x = by_item_id(x, annotations)   # a frame indexed by item id: by id, as elsewhere
        r, k = self._check(x, annotations, counts)
        if validation_data is not None:   # checked before EM, not at its first iteration
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise CrowdDataError("validation_data must be (x_val, y_val)")
            vy = np.asarray(validation_data[1])
            if vy.ndim != 1 or len(vy) != n_rows(validation_data[0]):
                raise CrowdDataError(f"validation_data: y_val must be one class code per row "
                                     f"of x_val ({n_rows(validation_data[0])} rows), got shape "
                                     f"{vy.shape}")
            # true classes: a code outside 0..K-1 (or -1) counted as a wrong guess, silently
            vy = checked_codes(vy, k, "class", "validation_data y_val", "classes")
            if (vy < 0).any():
                raise CrowdDataError(f"validation_data: y_val holds true class codes; -1 at "
                                     f"position {int(np.argmax(vy < 0))} (leave unlabelled "
                                     "items out of the validation data)")
        self._check_outputs_probabilities(x)
        self._rng = np.random.default_rng(self.seed)
        self._initial_weights = self.classifier.get_weights()
        runs = []
        for restart in range(max(int(self.restarts), 1)):
            model = self._fresh_model(restart)
            model.compile(optimizer=self._optimizer(), loss="categorical_crossentropy")
            seed = None if self.seed is None else int(self.seed) + restart
            if self.scenario == "global":
                run = self._run_global(model, x, r, seed, restart, validation_data)
            else:
                run = self._run_individual(model, x, annotations, seed, restart, validation_data)
            run["weights"] = model.get_weights()
            runs.append(run)
        best = max(runs, key=lambda run: run["history"][-1]["log_likelihood"])
        self.classifier.set_weights(best["weights"])
        self.classifier_ = self.classifier
        self.restart_log_likelihoods_ = np.array([run["history"][-1]["log_likelihood"]
                                                  for run in runs])
        self.mixing_coefficients_ = best["alpha"]
        self.group_confusions_ = best["beta"]
        self.posteriors_ = best["post"]
        self.history_ = best["history"]
        self.log_likelihood_ = np.array([h["log_likelihood"] for h in self.history_])
        self.n_iter_ = len(self.history_)
        self.num_classes_ = k
        # x's structure, shapes and dtypes without its rows: annotation_model's inputs (a
        # subclassed classifier has no input_shape)
        self._x_template = keras.tree.map_structure(
            lambda a: np.zeros((0,) + np.shape(a)[1:], np.asarray(a).dtype), x)
        if self.scenario == "individual":
            self.memberships_ = best["groups"]
            self.annotations_ = annotations
        else:   # a global fit has neither: an earlier individual fit's would be left behind
            for name in ("memberships_", "annotations_"):
                self.__dict__.pop(name, None)
        self.layer_ = self._layer()
        self.crowd_summary_ = None
        if annotations is not None:   # label counts alone do not name the annotators
            conf = self._annotator_matrices(x, annotations)
            post = self._items_posteriors(x, annotations, conf)
            sums, n = mean_confusions(annotations.annotators,
                                      conf[annotations.annotators], annotations.n_annotators)
            # every annotation of an annotator has its one matrix: the mean is that matrix
            self.crowd_summary_ = with_expected_accuracy(
                summary_from_posteriors(post, sums, n, annotations.annotator_ids, conf),
                post, annotations)
        return self

    def _record(self, history: list, ll: float, beta: np.ndarray, model: keras.Model,
                validation: Any, bar: Any) -> bool:
        """Append an iteration; True when converged (the authors' criterion).

        Converged: the relative change of the log-likelihood and the mean relative change
        of the ``β`` entries are both below ``tol``.
        """
        entry = {"iteration": len(history) + 1, "log_likelihood": ll, "beta": beta}
        if validation is not None:
            vx, vy = validation
            entry["val_accuracy"] = float(np.mean(self._predict(model, vx).argmax(1)
                                                  == np.asarray(vy)))
        history.append(entry)
        bar.set_postfix(loglik=f"{ll:.2f}")
        if len(history) < 2:
            return False
        prev, prev_beta = history[-2]["log_likelihood"], history[-2].pop("beta")
        rel_ll = abs(ll - prev) / max(abs(prev), 1e-12)
        rel_beta = float(np.mean(np.abs(beta - prev_beta) / (prev_beta + 1e-7)))
        return rel_ll <= self.tol and rel_beta <= self.tol

    def _run_global(self, model: keras.Model, x: Any, r: np.ndarray, seed: Optional[int],
                    restart: int, validation: Any) -> dict:
        em = GlobalEM(r, self.num_groups, self.smoothing)
        mv = soft_vote(r)
        q = em.kmeans_groups(mv, seed)[:, :, None] * mv[em.pair_items][:, None, :]
        if self.pretrain_epochs:
            self._train(model, x, r.sum(axis=1, keepdims=True) * mv, self.pretrain_epochs)
        history: list = []
        bar = progress_bar(range(int(self.max_iter)), desc=f"MixtureOfGroups EM #{restart + 1}",
                           disable=not self.progress)
        labelled = (r.sum(axis=1) > 0)[:, None]
        post = mv
        for _ in bar:
            alpha, beta, _ = em.m_step(q)                                     # Eq. 6
            if self.likelihood == "annotation":
                target = em.consensus(q)                                      # r̄ (Eq. 7)
            else:
                target = post * labelled
            self._train(model, x, target, self.epochs_per_step)
            f = self._predict(model, x)
            if self.likelihood == "annotation":
                q, norm = em.joint(f, alpha, beta)                            # E-step
                ll = em.log_likelihood(norm)
            else:   # the item's labels share its class: q(z_i) ∝ f_k(x_i) Π_j B_kj^r_ij
                post, ll = em.item_posteriors(safe_log(f), alpha, beta)
                q = em.latent_class_joint(post, alpha, beta)
            if self._record(history, ll, beta, model, validation, bar):
                break
        bar.close()
        history[-1].pop("beta")
        if self.likelihood == "annotation":
            post = normalize_rows(em.consensus(q))
        return dict(alpha=alpha, beta=beta, post=post, history=history)

    def _run_individual(self, model: keras.Model, x: Any, ann: Annotations,
                        seed: Optional[int], restart: int, validation: Any) -> dict:
        em = IndividualEM(ann, self.num_groups, self.smoothing)
        post = soft_vote(ann.label_counts())
        groups = em.kmeans_groups(post, seed)
        labelled = ann.annotations_per_item() > 0
        if self.pretrain_epochs:
            self._train(model, x, post * labelled[:, None], self.pretrain_epochs)
        history: list = []
        bar = progress_bar(range(int(self.max_iter)), desc=f"MixtureOfGroups EM #{restart + 1}",
                           disable=not self.progress)
        for _ in bar:
            alpha, beta, _ = em.m_step(post, groups)
            self._train(model, x, post * labelled[:, None], self.epochs_per_step)
            log_f = safe_log(self._predict(model, x))
            lb = em.label_log_beta(beta)
            groups = em.group_step(post, alpha, beta, lb)
            post, lse = em.item_step(log_f, groups, beta, lb)
            if self._record(history, em.elbo(lse, groups, alpha), beta, model, validation, bar):
                break
        bar.close()
        history[-1].pop("beta")
        return dict(alpha=alpha, beta=beta, post=post, groups=groups, history=history)

    # ------------------------------------------------------------------ after fitting
    def _check_fitted(self) -> None:
        if not hasattr(self, "group_confusions_"):
            raise NotFittedError("this MixtureOfGroupsEM is not fitted yet; call fit() first")

    def _no_summary_reason(self) -> str:
        if "group_confusions_" not in self.__dict__:
            return super()._no_summary_reason()
        return ("this MixtureOfGroupsEM has no annotator summary: it was fitted on label "
                "counts (counts=), which name no annotators; fit(x, annotations) summarises "
                "them (the crowd's matrix here: annotation_model(), or Σ_m α_m β_m from "
                "mixing_coefficients_ and group_confusions_)")

    def _layer(self) -> MixtureOfGroups:
        m, k = self.group_confusions_.shape[:2]
        if self.scenario == "individual":
            layer = MixtureOfGroups(m, k, num_annotators=len(self.memberships_))
            layer.build((None, k))
            layer.set_parameters(confusions=self.group_confusions_, memberships=self.memberships_)
        else:
            layer = MixtureOfGroups(m, k)
            layer.build((None, k))
            layer.set_parameters(confusions=self.group_confusions_,
                                 mixing=self.mixing_coefficients_)
        return layer

    def annotation_model(self) -> keras.Model:
        """``x → p(y|x)`` (global) or ``[x, annotator_ids] → log p(y|x, a)`` (individual).

        A functional Keras model of the trained classifier followed by ``layer_``; it can be
        saved as ``.keras`` and fine-tuned with the layer's losses.
        """
        self._check_fitted()
        clf = self.classifier_
        x_in = keras.tree.map_structure(lambda a: keras.Input(shape=a.shape[1:], dtype=a.dtype),
                                        self._x_template)
        if not isinstance(x_in, (dict, list, tuple)):
            x_in = keras.Input(shape=self._x_template.shape[1:], dtype=self._x_template.dtype,
                               name="x")
        probs = clf(x_in)
        if self.scenario == "individual":
            ids = keras.Input(shape=(None,), dtype="int32", name="annotator_ids")
            return keras.Model({"x": x_in, "annotator_ids": ids}, self.layer_([probs, ids]))
        return keras.Model(x_in, self.layer_(probs))

    def predict_proba(self, x: Any) -> np.ndarray:
        """The classifier's ``p(z|x)`` (items, K)."""
        self._check_fitted()
        check_finite_rows(x)   # a NaN row was predicted as class 0
        return self._predict(self.classifier_, x)

    def predict(self, x: Any) -> np.ndarray:
        return self.predict_proba(x).argmax(axis=1)

    def group_probabilities(self, x: Any, annotations: Annotations) -> np.ndarray:
        """Section 3.4: ``p(g=m|a) ∝ α_m Π_{(i,a,y)} Σ_k f_k(x_i) β_m[k, y]`` (annotators, M).

        Works for any annotators (rows follow ``annotations.annotator_ids``; annotators
        without labels get ``α``); ``x`` row ``i`` is item code ``i`` of ``annotations``.
        """
        self._check_fitted()
        if not isinstance(annotations, Annotations):
            raise CrowdDataError("annotations must be a crowd_keras.Annotations")
        if annotations.n_classes != self.num_classes_:
            raise CrowdDataError(f"annotations have {annotations.n_classes} classes, the model "
                                 f"{self.num_classes_}")
        f = self.predict_proba(by_item_id(x, annotations))
        if len(f) != annotations.n_items:
            raise CrowdDataError(f"x has {len(f)} rows but the annotations have "
                                 f"{annotations.n_items} items")
        return group_probabilities(annotations, f, self.mixing_coefficients_,
                                   self.group_confusions_)

    def predict_proba_items(self, x: Any, annotations: Annotations) -> np.ndarray:
        """Posterior of each item's true class given its features and its annotations,
        ``p(z_i = k | x_i, y_i) ∝ f_k(x_i) Π_a π_a[k, y_ia]`` (items, K), in log space, with
        each annotator's matrix ``π_a = Σ_m p(g=m|a) β_m``: the fitted memberships
        (individual scenario) or section 3.4's group probabilities from these annotations
        (global). Items without annotations get ``f(x_i)``. Individual scenario: annotators
        and classes are matched to the fit's by id and by class (codes of the fit when the
        ids are the default ``0..n-1``)."""
        self._check_fitted()
        if self.scenario == "individual" and isinstance(annotations, Annotations):
            annotations = onto_fitted(annotations, self.annotations_, "MixtureOfGroupsEM")
        return self._items_posteriors(x, annotations, self._annotator_matrices(x, annotations))

    def _annotator_matrices(self, x: Any, annotations: Annotations) -> np.ndarray:
        """Each annotator's ``Σ_m p(g=m|a) β_m`` (annotators, K, K)."""
        if self.scenario == "global":
            return self.annotator_confusions(x, annotations)
        if not isinstance(annotations, Annotations):
            raise CrowdDataError("annotations must be a crowd_keras.Annotations")
        if annotations.n_annotators > len(self.memberships_):
            raise CrowdDataError(f"annotations name {annotations.n_annotators} annotators; the "
                                 f"model knows {len(self.memberships_)}")
        return np.einsum("am,mkj->akj", self.memberships_[:annotations.n_annotators],
                         self.group_confusions_)

    def _items_posteriors(self, x: Any, annotations: Annotations,
                          matrices: np.ndarray) -> np.ndarray:
        if annotations.n_classes != self.num_classes_:
            raise CrowdDataError(f"annotations have {annotations.n_classes} classes, the model "
                                 f"{self.num_classes_}")
        log_prior = safe_log(self.predict_proba(by_item_id(x, annotations)))
        if len(log_prior) != annotations.n_items:
            raise CrowdDataError(f"x has {len(log_prior)} rows but the annotations have "
                                 f"{annotations.n_items} items")
        return item_posteriors(log_prior, confusion_log_likelihood(annotations,
                                                                   safe_log(matrices)))

    def annotator_confusions(self, x: Any, annotations: Annotations) -> np.ndarray:
        """Each annotator's implied matrix ``Σ_m p(g=m|a) β_m`` (annotators, K, K)."""
        return np.einsum("am,mkj->akj", self.group_probabilities(x, annotations),
                         self.group_confusions_)
