"""LIA as a label model: per-(item, annotator) confusions from difficulty and competence.

A thin label-model surface over :class:`crowd_keras.lia.trainer.LIATrainer` (the LIA
paper's EM + marginal fine-tuning, Eqs. 1, 4, 7, 8, 9). Without item features the items are
learned embeddings (the paper's LIA-E) and the truth model ``h_θ`` is strongly regularised
towards a class prior; with ``fit(annotations, features=X)`` ``h_θ`` is a (L2-regularised)
softmax regression on the standardised features, so similar items inform each other, which
is what helps most at low redundancy.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..aggregation.base import LabelModel, as_annotations
from ..aggregation.dawid_skene import DawidSkene
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..errors import CrowdDataError
from ..numerics import normalize_rows
from .trainer import LIATrainer

__all__ = ["LIA"]


class LIA(LabelingFunctionFallback, LabelModel):
    """Learning from Imperfect Annotations (difficulty × competence confusions, EM).

    Args:
        latent_dim: ``L`` of the difficulty/competence tensors (Eq. 1).
        hidden_units: hidden layers of ``h_θ`` on features (default none: softmax regression).
        classifier_l2: L2 on ``h_θ`` (per summed log-likelihood); feature-free it pulls every
            item's prior towards the shared class prior.
        annotator_l2: L2 on each annotator's competence deviation from the shared tensor
            (shrinkage: annotators with few labels stay close to the crowd's average).
        instance_l2: L2 on the difficulty map (item embeddings or feature kernels); ``None``:
            100 without features, 1 with features. Without features each item's difficulty
            is a free embedding fitted to that item's own few labels: it explains their
            disagreement away and drifts hard items to the majority class (at full
            redundancy, instance_l2=10: dog 0.832 and product 0.918 against Dawid-Skene's
            0.844 and 0.939; 100: 0.841 and 0.939; identical at redundancy 2 and 5).
        em_iterations, m_steps, marginal_steps, marginal, batch_size, learning_rate: see
            :class:`~crowd_keras.lia.trainer.LIATrainer` (``marginal_steps=0`` skips the
            marginal-likelihood fine-tuning).
        standardize: z-score the item features (column-wise) before use.
        seed: random seed of the trainer's weights and batch order (no global state).
        progress: progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).

    Attributes (after fit):
        posteriors_ (items, K): E-step posteriors (Eq. 4) with the final parameters;
        posteriors_em_ (items, K): before marginal fine-tuning;
        confusion_matrices_ (annotators, K, K): the average of ``Q_ij`` over each annotator's
            items (rows = true class); class_priors_ (K,): mean posterior;
        competence_ (annotations,): ``Σ_k ŷ_ik [Q_ij]_kk`` per annotation (aligned with
            ``annotations_.items``), the predicted chance that it is correct;
        expected_accuracy_ (annotators,): ``mean_i Σ_k ŷ_ik [Q_ij]_kk`` over all items;
        trainer_: the fitted ``LIATrainer`` (``trainer_.predict_competence`` etc.).
    """

    def __init__(self, latent_dim: int = 1, hidden_units: Sequence[int] = (),
                 classifier_l2: Optional[float] = None, annotator_l2: float = 0.3,
                 annotator_scale: Optional[float] = 1.0,
                 instance_l2: Optional[float] = None, em_iterations: int = 10, m_steps: int = 100,
                 marginal_steps: int = 0, marginal: str = "item",
                 batch_size: Optional[int] = None, learning_rate: float = 0.05,
                 marginal_learning_rate: Optional[float] = None,
                 tol: float = 1e-3, init: Any = "ds", standardize: bool = True,
                 seed: Optional[int] = 0, progress: bool = False,
                 labeling_functions: str = "auto") -> None:
        self.latent_dim = latent_dim
        self.hidden_units = hidden_units
        self.classifier_l2 = classifier_l2
        self.annotator_l2 = annotator_l2
        self.annotator_scale = annotator_scale
        self.instance_l2 = instance_l2
        self.em_iterations = em_iterations
        self.m_steps = m_steps
        self.marginal_steps = marginal_steps
        self.marginal = marginal
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.marginal_learning_rate = marginal_learning_rate
        self.tol = tol
        self.init = init
        self.standardize = standardize
        self.seed = seed
        self.progress = progress
        self.labeling_functions = labeling_functions

    # ------------------------------------------------------------------ fit
    def _features(self, features: Any, n_items: int, where: str) -> Optional[np.ndarray]:
        if features is None:
            return None
        x = np.asarray(features, dtype="float32")
        if x.ndim != 2 or len(x) != n_items:
            raise CrowdDataError(f"{where}: features must be (items={n_items}, f) aligned with "
                                 f"the annotations' item codes, got shape {x.shape}")
        bad = ~np.isfinite(x)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise CrowdDataError(f"{where}: features[{r}, {c}] is not finite")
        if self.standardize:
            # z-scores scaled to unit mean row norm: the L2 strengths then do not depend on f.
            x = (x - self.feature_mean_) / self.feature_scale_ / np.float32(np.sqrt(x.shape[1]))
        return x

    _LF_SETTINGS = ()   # LIA's EM settings mean other things; the fallback keeps its defaults

    def fit(self, annotations: Any, features: Any = None, **kwargs: Any) -> "LIA":
        """Fit on the annotations (and optional item features ``(items, f)``, row = item code)."""
        ann = as_annotations(annotations, **kwargs)
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        if self._fit_labeling_functions(ann):
            self.uses_features_ = False
            return self
        if features is not None and self.standardize:
            raw = np.asarray(features, dtype="float32")
            if raw.ndim == 2:
                self.feature_mean_ = raw.mean(axis=0)
                self.feature_scale_ = raw.std(axis=0) + 1e-6
        x = self._features(features, ann.n_items, "fit")
        cl2 = self.classifier_l2
        if cl2 is None:   # feature-free: h_θ ≈ the class prior; features: a real classifier
            cl2 = 100.0 if x is None else 1.0
        il2 = self.instance_l2
        if il2 is None:   # feature-free: a free difficulty per item overfits its own labels
            il2 = 100.0 if x is None else 1.0
        trainer = LIATrainer(
            num_classes=ann.n_classes, latent_dim=self.latent_dim,
            hidden_units=self.hidden_units, classifier_l2=cl2,
            annotator_l2=self.annotator_l2, annotator_scale=self.annotator_scale,
            instance_l2=il2,
            em_iterations=self.em_iterations, m_steps=self.m_steps,
            marginal_steps=self.marginal_steps, marginal=self.marginal,
            batch_size=self.batch_size, learning_rate=self.learning_rate,
            marginal_learning_rate=self.marginal_learning_rate, tol=self.tol,
            seed=self.seed, progress=self.progress)
        trainer.fit(x, ann, initial_posteriors=self._initial_posteriors(ann))
        self.trainer_ = trainer
        self.uses_features_ = x is not None
        self.annotations_ = ann
        self.posteriors_ = trainer.posteriors_
        self.posteriors_em_ = trainer.posteriors_em_
        self.class_priors_ = self.posteriors_.mean(axis=0)
        self._summarise_annotators(x)
        return self

    def _initial_posteriors(self, ann: Annotations) -> Optional[np.ndarray]:
        """The first E-step: ``None`` (the trainer's majority vote, Eq. 8) or (items, K)."""
        init = self.init
        if isinstance(init, str):
            if init == "mv":
                return None
            if init == "ds":
                return DawidSkene(labeling_functions="ignore").fit(ann).posteriors_
            raise ValueError(f"init must be 'ds', 'mv' or an (items, classes) array, got {init!r}")
        post = np.asarray(init, dtype="float64")
        if post.shape != (ann.n_items, ann.n_classes) or not np.isfinite(post).all() \
                or (post < 0).any():
            raise CrowdDataError(f"init posteriors must be a finite non-negative "
                                 f"({ann.n_items}, {ann.n_classes}) array, got shape {post.shape}")
        return normalize_rows(post)

    def _summarise_annotators(self, x: Optional[np.ndarray]) -> None:
        """confusion_matrices_ = mean of Q_ij over each annotator's items; competence_."""
        ann = self.annotations_
        ids, _ = ann.to_padded()
        q = self.trainer_.confusions(x, ids)                          # (items, k, K, K)
        q_ann = q[ids >= 0]        # row-major slots = the annotations' (item, annotator) order
        a, k = ann.n_annotators, ann.n_classes
        sums = np.zeros((a, k, k))
        np.add.at(sums, ann.annotators, q_ann)
        counts = ann.annotations_per_annotator().astype(float)
        mean_all = q_ann.mean(axis=0)
        self.confusion_matrices_ = np.where(counts[:, None, None] > 0,
                                            sums / np.maximum(counts, 1)[:, None, None],
                                            mean_all)
        diag = np.diagonal(q_ann, axis1=-2, axis2=-1)                 # (annotations, K)
        self.competence_ = np.einsum("nk,nk->n", diag, self.posteriors_[ann.items])
        # Expected accuracy of every annotator on every fitted item, averaged over the items
        # (in item batches: never an items × annotators × K × K array of the whole set).
        total = np.zeros(a)
        step = max(1, 2 ** 22 // max(a * k * k, 1))
        for s in range(0, ann.n_items, step):
            rows = np.arange(s, min(s + step, ann.n_items))
            xb = None if x is None else x[rows]
            qb = self.trainer_.confusions(rows if x is None else xb)   # (b, A, K, K)
            total += np.einsum("bak,bk->a", np.diagonal(qb, axis1=-2, axis2=-1),
                               self.posteriors_[rows])
        self.expected_accuracy_ = total / max(ann.n_items, 1)

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: id, number of annotations and predicted accuracy.

        ``accuracy`` is the annotator's expected accuracy on *every* fitted item,
        ``mean_i Σ_k ŷ_ik [Q_ij]_kk`` (Eq. 1's confusions, Eq. 4's posteriors), so annotators
        are compared on the same items, not flattered by having labelled only easy ones;
        ``accuracy_own_items`` is the same mean over the annotator's own annotations (NaN
        for an annotator without annotations).
        """
        self._check_fitted()
        if getattr(self, "labeling_function_model_", None) is not None:
            return self.labeling_function_model_.annotator_quality_
        ann = self.annotations_
        counts = ann.annotations_per_annotator()
        sums = np.bincount(ann.annotators, weights=self.competence_, minlength=ann.n_annotators)
        own = np.divide(sums, counts, out=np.full(ann.n_annotators, np.nan), where=counts > 0)
        return pd.DataFrame({"annotator": ann.annotator_ids, "n_annotations": counts,
                             "accuracy": self.expected_accuracy_, "accuracy_own_items": own})

    # ------------------------------------------------------------------ competence
    def predict_competence(self, features: Any = None, annotators: Any = None) -> np.ndarray:
        """Probability that each annotator labels each item correctly, ``(items, annotators)``.

        ``Σ_k p(y_i = k) [Q_ij]_kk`` (Eq. 1's confusions). ``features=None``: the fitted items
        of a feature-free fit, weighted by their posteriors (Eq. 4); ``features (n, f)``:
        items described by raw features, fitted or new (standardised as in :meth:`fit`),
        weighted by ``h_θ(x)``. ``annotators``: ``None`` (every fitted annotator, in
        ``annotations_.annotator_ids`` order) or a list of fitted annotator ids.
        """
        self._check_fitted()
        self._require_crowd_regime("no competence model")
        ids = list(self.annotations_.annotator_ids)
        if annotators is None:
            codes = np.arange(len(ids))
        else:
            wanted = list(annotators)
            codes = pd.Index(ids).get_indexer(wanted)
            if (codes < 0).any():
                raise CrowdDataError(f"annotator {wanted[int(np.argmax(codes < 0))]!r} was not "
                                     "in the fitted annotations")
        if features is None:
            if self.uses_features_:
                raise CrowdDataError("this LIA was fitted with item features: give features")
            return self.trainer_.predict_competence(None, codes, class_probs=self.posteriors_)
        if not self.uses_features_:
            raise CrowdDataError("this LIA was fitted without features: call "
                                 "predict_competence() for its fitted items")
        x = self._features(features, len(np.asarray(features)), "predict_competence")
        return self.trainer_.predict_competence(x, codes)

    # ------------------------------------------------------------------ predict
    def predict_proba(self, annotations: Any = None, features: Any = None) -> np.ndarray:
        """Items × classes posteriors.

        Without arguments: the fitted items. With new ``annotations`` (fitted annotator ids
        and classes; unknown annotators are ignored and counted in ``n_unknown_annotations_``):
        their items are new items described by ``features`` when the model was fitted with
        features, or the fitted items themselves (same number of items) when it was not.
        """
        self._check_fitted()
        if annotations is None:
            return self.posteriors_.copy()
        if getattr(self, "labeling_function_model_", None) is not None:
            return self.labeling_function_model_.predict_proba(annotations)
        new = self._align(as_annotations(annotations))
        if self.uses_features_:
            if features is None:
                raise CrowdDataError("this LIA was fitted with item features: give features "
                                     "for the new items")
            x = self._features(features, new.n_items, "predict_proba")
        else:
            if features is not None:
                raise CrowdDataError("this LIA was fitted without features")
            if new.n_items != self.annotations_.n_items:
                raise CrowdDataError(f"a feature-free LIA scores only its {self.annotations_.n_items}"
                                     f" fitted items; got {new.n_items} items")
            x = None
        return self.trainer_.posteriors(x, new)
