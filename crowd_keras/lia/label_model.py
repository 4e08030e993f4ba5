"""LIA as a label model: per-(item, annotator) confusions from difficulty and competence.

A thin label-model surface over :class:`crowd_keras.lia.trainer.LIATrainer` (the LIA
paper's EM + marginal fine-tuning, Eqs. 1, 4, 7, 8, 9). Without item features the items are
learned embeddings (the paper's LIA-E) and the truth model ``h_θ`` is strongly regularised
towards a class prior; with ``fit(annotations, features=X)`` ``h_θ`` is a (L2-regularised)
softmax regression on the standardised features, so similar items inform each other, which
is what helps most at low redundancy.

Feature-free fits without marginal fine-tuning run the same EM in numpy
(:class:`~crowd_keras.lia.em.FeatureFreeLIA`: the trainer's model, objective, optimiser and
batches with the gradients written out), which skips Keras' tracing and graph overheads;
``engine="keras"`` runs the trainer instead, and ``trainer_`` builds it from the numpy
weights when asked for.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..aggregation.base import LabelModel, as_annotations, check_settings, without_evidence
from ..aggregation.dawid_skene import DawidSkene
from ..aggregation.labeling_functions import LabelingFunctionFallback
from ..annotations import Annotations
from ..codes import show
from ..errors import CrowdDataError
from ..features import by_item_id
from ..numerics import normalize_rows, summing_matrix
from .em import FeatureFreeLIA, check_model_settings
from .model import confusions as _confusions
from .trainer import LIATrainer

__all__ = ["LIA"]

_SUMMARY_CHUNK = 2 ** 20   # annotations (or item-annotator pairs) per block of the summary
_SUMMARY_PAIRS = 2 ** 22   # items × annotators of the expected accuracy computed exactly
_SUMMARY_MIN_ITEMS = 256   # the smallest item sample beyond that


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
            disagreement away and drifts hard items to the majority class, which the
            strong default penalty prevents (``benchmarks/PERFORMANCE.md``).
        annotator_scale: ``None``: plain L2 on the competence deviations; a number: the
            scale of the heavy-tailed Cauchy shrinkage instead (see
            :class:`~crowd_keras.lia.trainer.LIATrainer`).
        em_iterations, m_steps, marginal_steps, marginal, batch_size, learning_rate: see
            :class:`~crowd_keras.lia.trainer.LIATrainer` (``marginal_steps=0`` skips the
            marginal-likelihood fine-tuning).
        marginal_learning_rate, tol: see :class:`~crowd_keras.lia.trainer.LIATrainer`.
        init: the first E-step's posteriors: ``"ds"`` (Dawid-Skene's, default), ``"mv"``
            (the trainer's majority vote, Eq. 8) or an (items, K) array.
        standardize: z-score the item features (column-wise) and divide them by ``√f``
            (unit mean row norm, so the L2 strengths do not depend on ``f``) before use.
        seed: random seed of the trainer's weights and batch order (no global state); the
            per-item and per-annotator draws follow what each item was told and what each
            annotator said, so renaming or reordering items or annotators gives the same fit.
        progress: progress bar over EM iterations.
        labeling_functions: ``"auto"`` (default) or ``"ignore"``: with ``"auto"``, votes that
            look like Snorkel labeling functions are fitted by the abstain-aware model
            instead (``regime_`` says which ran; see :class:`LabelingFunctionFallback`).
        engine: ``"auto"`` (default): numpy (:class:`~crowd_keras.lia.em.FeatureFreeLIA`)
            when fitted without features, with ``hidden_units=()`` and ``marginal_steps=0``
            (the same EM, results equal to float32 rounding from the same start, several
            times faster), else the Keras trainer; ``"numpy"`` (an error where it does not
            apply) or ``"keras"`` to choose.

    Attributes:
        posteriors_em_: (items, K) the E-step posteriors before marginal fine-tuning.
        competence_: (annotations,) ``Σ_k ŷ_ik [Q_ij]_kk`` per annotation (aligned with
            ``annotations_.items``), the predicted chance that it is correct.
        expected_accuracy_: (annotators,) ``mean_i Σ_k ŷ_ik [Q_ij]_kk`` over all items (over
            an evenly spaced sample of them when items × annotators exceeds
            ``max(2²², 4 · annotations)``, so that the summary stays linear in the
            annotations).
        expected_accuracy_items_: the number of items ``expected_accuracy_`` averages over.
        engine_: what was fitted (``FeatureFreeLIA`` or ``LIATrainer``).
        uses_features_: whether ``fit`` was given item features.
        feature_mean_: (f,) the features' column means (a fit with features and
            ``standardize``).
        feature_scale_: (f,) their column standard deviations (plus 1e-6).
        n_iter_: EM iterations run.
        posteriors_: (items, K) E-step posteriors (Eq. 4) with the final parameters.
        confusion_matrices_: (annotators, K, K) the average of ``Q_ij`` over each
            annotator's items (rows = true class).
        class_priors_: (K,) mean posterior.
        trainer_: the fitted ``LIATrainer`` (``trainer_.predict_competence``,
            ``trainer_.model_`` etc.); after a numpy fit it is built from the fitted weights
            on first access.
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
                 labeling_functions: str = "auto", engine: str = "auto") -> None:
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
        self.engine = engine

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

    def fit(self, annotations: Any, features: Any = None, gold: Any = None,
            pred_probs: Any = None, **kwargs: Any) -> "LIA":
        """Fit on the annotations (and optional item features ``(items, f)``, row = item code;
        a ``DataFrame`` indexed by the item ids is aligned by id, any row order).
        ``gold`` and ``pred_probs`` are taken as ``None`` only, as by every label model that
        does not use them (``accepts_gold``, ``accepts_pred_probs``)."""
        check_settings(self)
        check_model_settings(self)   # named as LIA's, not as the engine's it hands them to
        for name, value, what in (("gold", gold, "gold labels"), ("pred_probs", pred_probs,
                                                                    "pred_probs")):
            if value is not None:   # else read as a frame reader's keyword argument
                raise TypeError(f"{type(self).__name__}.fit() does not take {what}")
        ann = as_annotations(annotations, **kwargs)
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        if self._fit_labeling_functions(ann):
            self.uses_features_ = False
            return self
        if ann.n_classes < 2:   # else refused by the engine, under the engine's name
            raise CrowdDataError(f"{type(self).__name__} needs two classes or more; these "
                                 f"annotations have one, {show(ann.classes[0])} (pass "
                                 "classes=[...] to name the others)")
        features = by_item_id(features, ann, "features")   # a frame indexed by item id: by id
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
        settings = dict(
            num_classes=ann.n_classes, latent_dim=self.latent_dim,
            annotator_l2=self.annotator_l2, annotator_scale=self.annotator_scale,
            instance_l2=il2, classifier_l2=cl2,
            em_iterations=self.em_iterations, m_steps=self.m_steps,
            batch_size=self.batch_size, learning_rate=self.learning_rate, tol=self.tol,
            seed=self.seed, progress=self.progress)
        self._trainer_settings = dict(
            settings, hidden_units=self.hidden_units, marginal_steps=self.marginal_steps,
            marginal=self.marginal, marginal_learning_rate=self.marginal_learning_rate)
        initial = self._initial_posteriors(ann)
        self.__dict__.pop("_trainer", None)
        if self._numpy_engine(x):
            engine = FeatureFreeLIA(**settings).fit(ann, initial_posteriors=initial)
        else:
            engine = LIATrainer(**self._trainer_settings).fit(x, ann, initial_posteriors=initial)
            self._trainer = engine
        self.engine_ = engine
        self.n_iter_ = engine.n_iter_
        self.uses_features_ = x is not None
        if x is None or not self.standardize:   # this fit scaled nothing: drop an earlier scaling
            for name in ("feature_mean_", "feature_scale_"):
                self.__dict__.pop(name, None)
        self.annotations_ = ann
        self.posteriors_ = engine.posteriors_
        self.posteriors_em_ = engine.posteriors_em_
        self.class_priors_ = self.posteriors_.mean(axis=0)
        self._summarise_annotators(x)
        return self

    def _numpy_engine(self, x: Optional[np.ndarray]) -> bool:
        """Whether this fit runs :class:`FeatureFreeLIA` (see ``engine``)."""
        if self.engine not in ("auto", "numpy", "keras"):
            raise ValueError(f"engine must be 'auto', 'numpy' or 'keras', got {self.engine!r}")
        applies = x is None and not tuple(self.hidden_units) and not self.marginal_steps
        if self.engine == "numpy" and not applies:
            raise ValueError("engine='numpy' fits LIA-E only: no features, hidden_units=() "
                             "and marginal_steps=0; use engine='keras' or 'auto'")
        return applies and self.engine != "keras"

    @property
    def trainer_(self) -> LIATrainer:
        """The fitted Keras :class:`LIATrainer` (built from the numpy weights on first access
        after a numpy fit: the same model, ready for ``predict_competence``, ``model_``...)."""
        if "_trainer" not in self.__dict__:
            self._check_fitted()   # NotFittedError, an AttributeError too
            if not hasattr(self, "engine_"):
                raise AttributeError("trainer_: this LIA's labeling-function fallback ran; "
                                     "it has no LIA network")
            self._trainer = LIATrainer(**self._trainer_settings).restore(self.engine_)
        return self._trainer

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
        """confusion_matrices_ = mean of Q_ij over each annotator's items; competence_;
        expected_accuracy_. O(annotations) plus a bounded sample of items × annotators."""
        ann, trainer = self.annotations_, self.engine_
        a, k = ann.n_annotators, ann.n_classes
        comp = trainer.competence_tensors()                             # (A, K, K, L)
        sums = np.zeros((a, k * k))
        self.competence_ = np.empty(ann.n_annotations)
        ptr = ann.item_starts()
        step = max(1, _SUMMARY_CHUNK // max(int(ann.annotations_per_item().max()), 1))
        for s in range(0, ann.n_items, step):   # annotations are sorted by item
            e = min(s + step, ann.n_items)
            rows = slice(ptr[s], ptr[e])
            items, who = ann.items[rows], ann.annotators[rows]
            d = trainer.difficulty_tensors(np.arange(s, e) if x is None else x[s:e])
            q = _confusions(d[items - s], comp[who])                   # (n, K, K) Eq. 1
            sums += np.asarray(summing_matrix(who, a) @ q.reshape(len(q), k * k))
            self.competence_[rows] = np.einsum("nkk,nk->n", q, self.posteriors_[items])
        counts = ann.annotations_per_annotator().astype(float)
        mean_all = sums.sum(axis=0) / max(ann.n_annotations, 1)
        self.confusion_matrices_ = np.where(counts[:, None] > 0,
                                            sums / np.maximum(counts, 1)[:, None],
                                            mean_all).reshape(a, k, k)
        self.expected_accuracy_ = self._expected_accuracy(x, comp)

    def _expected_accuracy(self, x: Optional[np.ndarray], comp: np.ndarray) -> np.ndarray:
        """``mean_i Σ_k ŷ_ik [Q_ij]_kk`` for every annotator ``j`` over the fitted items.

        Every item when items × annotators is at most ``max(2²², 4 · annotations)``, else an
        evenly spaced sample of that many pairs' worth of items (at least 256): the cost
        stays linear in the annotations. Eq. 1's diagonal is a ratio of inner products along
        the latent and label axes, ``[Q_ij]_kk = Σ_m e^{D_ikkm} e^{C_jkkm} /
        Σ_lm e^{D_iklm} e^{C_jklm}``, so each class is two matrix products.
        """
        ann = self.annotations_
        n, a, k = ann.n_items, ann.n_annotators, ann.n_classes
        budget = max(_SUMMARY_PAIRS, 4 * ann.n_annotations)
        if n * a <= budget:
            items = np.arange(n)
        else:
            items = np.unique(np.linspace(0, n - 1, max(_SUMMARY_MIN_ITEMS, budget // a))
                              .round().astype(int))
        self.expected_accuracy_items_ = len(items)
        d = self.engine_.difficulty_tensors(items if x is None else x[items]).astype("float64")
        comp = comp.astype("float64")
        post = self.posteriors_[items]
        # shift each (item, class) and (annotator, class) block to a maximum of 0: exp ≤ 1
        e_d = np.exp(d - d.max(axis=(2, 3), keepdims=True))
        e_c = np.exp(comp - comp.max(axis=(2, 3), keepdims=True))
        total = np.zeros(a)
        width = max(1, _SUMMARY_CHUNK // max(len(items), 1))
        for s in range(0, a, width):
            c = e_c[s:s + width]
            for t in range(k):
                num = e_d[:, t, t, :] @ c[:, t, t, :].T                      # (S, a)
                den = e_d[:, t].reshape(len(items), -1) @ c[:, t].reshape(len(c), -1).T
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = num / den
                bad = ~np.isfinite(ratio)
                if bad.any():   # both blocks' mass in different cells: exact log form
                    r, j = np.nonzero(bad)
                    z = (d[r, t] + comp[s + j, t]).reshape(len(r), -1)     # (m, K·L)
                    top = z.max(axis=1, keepdims=True)
                    lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
                    diag = d[r, t, t] + comp[s + j, t, t]                   # (m, L)
                    dt = diag.max(axis=1, keepdims=True)
                    ratio[r, j] = np.exp(dt[:, 0] + np.log(np.exp(diag - dt).sum(axis=1)) - lse)
                total[s:s + width] += post[:, t] @ ratio
        return total / len(items)

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: id, number of annotations and predicted accuracy.

        ``accuracy`` is the annotator's expected accuracy on *every* fitted item,
        ``mean_i Σ_k ŷ_ik [Q_ij]_kk`` (Eq. 1's confusions, Eq. 4's posteriors), so annotators
        are compared on the same items, not flattered by having labelled only easy ones
        (on a large fit, the same evenly spaced sample of items for everyone, see
        ``expected_accuracy_``); ``accuracy_own_items`` is the same mean over the annotator's own annotations.
        Both are NaN for an annotator without annotations (the fit saw none of its labels).
        """
        self._check_fitted()
        if getattr(self, "labeling_function_model_", None) is not None:
            return self.labeling_function_model_.annotator_quality_
        ann = self.annotations_
        counts = ann.annotations_per_annotator()
        sums = np.bincount(ann.annotators, weights=self.competence_, minlength=ann.n_annotators)
        own = np.divide(sums, counts, out=np.full(ann.n_annotators, np.nan), where=counts > 0)
        return pd.DataFrame({"annotator": ann.annotator_ids, "n_annotations": counts,
                             "accuracy": without_evidence(self.expected_accuracy_, counts),
                             "accuracy_own_items": own})

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
            return self.engine_.predict_competence(None, codes, class_probs=self.posteriors_)
        if not self.uses_features_:
            raise CrowdDataError("this LIA was fitted without features: call "
                                 "predict_competence() for its fitted items")
        x = self._features(features, len(np.asarray(features)), "predict_competence")
        return self.engine_.predict_competence(x, codes)

    # ------------------------------------------------------------------ predict
    def predict_proba(self, annotations: Any = None, features: Any = None) -> np.ndarray:
        """Items × classes posteriors.

        Without arguments: the fitted items. With new ``annotations`` (fitted annotator ids
        and classes; unknown annotators are ignored and counted in ``n_unknown_annotations_``):
        their items are new items described by ``features`` when the model was fitted with
        features, or fitted items (any of them, in any order: matched by id) when it was not.
        """
        self._check_fitted()
        if annotations is None:
            return self.posteriors_.copy()
        if getattr(self, "labeling_function_model_", None) is not None:
            return self._handed_over(self.labeling_function_model_, annotations)
        given = self._read_new(annotations)
        new = self._align(given)
        self._say_if_all_left_out(given)
        if self.uses_features_:
            if features is None:
                raise CrowdDataError("this LIA was fitted with item features: give features "
                                     "for the new items")
            x = self._features(by_item_id(features, new, "features"), new.n_items,
                               "predict_proba")
        else:
            if features is not None:
                raise CrowdDataError("this LIA was fitted without features")
            # its items' latent terms are the fitted items': matched by id, not by position
            # (the same items in another order, or as many other items, took others' terms)
            fitted = self.annotations_.item_ids
            pos = pd.Index(fitted).get_indexer(new.item_ids)
            if (pos < 0).any():
                other = new.item_ids[np.argmax(pos < 0)]
                raise CrowdDataError(f"a feature-free LIA scores only its {len(fitted)} fitted "
                                     f"items; item {show(other)} is not one of them")
            onto = Annotations(pos[new.items], new.annotators, new.labels, item_ids=fitted,
                               annotator_ids=new.annotator_ids, classes=new.classes)
            return self.engine_.posteriors(None, onto)[pos]
        return self.engine_.posteriors(x, new)

    def predict(self, annotations: Any = None, features: Any = None) -> np.ndarray:
        """Most probable class code per item (ties to the lowest code); ``annotations`` and
        ``features`` as in :meth:`predict_proba` (new items of a fit with features need
        theirs)."""
        return np.argmax(self.predict_proba(annotations, features), axis=1)

    def predict_labels(self, annotations: Any = None, features: Any = None) -> np.ndarray:
        """Most probable class name per item (``annotations``, ``features``: as
        :meth:`predict`)."""
        self._check_fitted()
        return self.annotations_.classes[self.predict(annotations, features)]
