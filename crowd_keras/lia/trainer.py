"""The LIA paper's learning: EM over a classifier and difficulty/competence confusions.

"Learning from Imperfect Annotations: An End-to-End Approach" (ICLR 2020 submission).
The generative model draws the true class ``y_i ~ Cat(h_θ(x_i))`` and every annotation
``y_ij ~ Cat([Q_ij]_{y_i,:})`` with ``Q_ij`` from
:class:`~crowd_keras.lia.layers.DifficultyCompetence` (Eq. 1). :class:`LIATrainer` learns
``θ`` (any Keras classifier), ``φ`` (difficulty) and ``ψ`` (competence):

1. first E-step replaced by a (soft) majority vote, ``ŷ_ik = |{j: y_ij = k}| / |M_i|``
   (Eq. 8, symmetry breaking: most annotators are right most of the time);
2. M-step (Eq. 7): maximise ``Σ_i Σ_k ŷ_ik [log h_θ(x_i)_k + Σ_j log [Q_ij]_{k,y_ij}]`` with
   a few hundred Adam (AMSGrad) steps, warm-started from the previous M-step;
3. E-step (Eq. 4): ``ŷ_ik ∝ h_θ(x_i)_k Π_j [Q_ij]_{k,y_ij}``; repeat 2-3;
4. marginal likelihood fine-tuning (Eq. 9): maximise
   ``Σ_i Σ_j log Σ_k h_θ(x_i)_k [Q_ij]_{k,y_ij}`` from the EM solution (``marginal="item"``
   maximises the exact marginal ``Σ_i log Σ_k h_k Π_j Q_{k,y_ij}`` instead).

Feature-free use (``x=None``): the instances are their indices, ``h_θ`` is a learned instance
embedding followed by a softmax layer and ``d_φ`` uses its own instance embeddings (the
paper's LIA-E). Everything runs through ``keras.Model.fit`` / ``predict`` on a functional
model, so any Keras 3 backend works.

This module is over 500 lines because the trainer is one EM with its M-step, E-step,
marginal fine-tuning and annotator summary sharing state; the layers, losses and the
label-model wrapper are in their own modules.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from ..annotations import Annotations
from ..arguments import check_count
from ..errors import CrowdDataError, NotFittedError
from ..features import by_item_id
from .._keras_utils import check_finite_rows, seeded_construction
from ..inputs import RowBatches, tensorflow_backend
from ..item_consensus import (CrowdConsensus, mean_confusions, onto_fitted,
                              summary_from_posteriors, with_expected_accuracy)
from ..numerics import softmax_rows
from ..optimizers import LazyAdam
from ..params import Params
from ..progress import Progress
from ..regularizers import CauchyShrinkage
from .inputs import by_annotator_id, numeric_rows
from .em import (FeatureFreeLIA, check_step_settings, checked_initial_posteriors,
                 lia_batch_size, run_em)
from .model import (competence_start, initial_biases, item_keys, item_tables_start,
                    vote_fractions)
from .layers import AnnotationLogLikelihoods, DifficultyCompetence, InstanceEmbedding
from .losses import ExpectedCompleteNLL, MarginalNLL

__all__ = ["LIATrainer", "default_classifier"]

_E_STEP_BATCH = 2 ** 14  # items per forward pass of the E-step (larger ones spill the caches)
# From this many annotations the steps are compiled by XLA (below, compiling costs more
# than it saves; benchmarks/scaling.py).
_XLA_MIN_ANNOTATIONS = 500_000


# ---------------------------------------------------------------------------- model pieces
def default_classifier(num_classes: int, input_shape: Optional[Sequence[int]] = None,
                       num_instances: Optional[int] = None, hidden_units: Sequence[int] = (16,),
                       embedding_dim: int = 16, activation: str = "selu",
                       l2: float = 0.0) -> keras.Model:
    """``h_θ``: an MLP with softmax output on features, or on a learned instance embedding.

    Give ``input_shape`` (features) or ``num_instances`` (feature-free: the input is the
    instance index and the first layer an ``Embedding(num_instances, embedding_dim)``).
    ``l2`` is the L2 factor on every kernel (and the embedding).
    """
    reg = keras.regularizers.L2(l2) if l2 else None
    if num_instances is not None:
        inp = keras.Input(shape=(), dtype="int32", name="instance")
        # charged on the rows of each batch: a step costs O(batch), not O(items)
        h = InstanceEmbedding(num_instances, embedding_dim, embeddings_regularizer=reg,
                              name="instance_embedding")(inp)
    else:
        inp = keras.Input(shape=tuple(input_shape), name="x")
        h = keras.layers.Flatten()(inp) if len(input_shape) > 1 else inp
    for n, units in enumerate(hidden_units):
        h = keras.layers.Dense(units, activation=activation, kernel_regularizer=reg,
                               name=f"hidden_{n}")(h)
    out = keras.layers.Dense(num_classes, activation="softmax", kernel_regularizer=reg,
                             name="truth")(h)
    return keras.Model(inp, out, name="h_theta")


# ---------------------------------------------------------------------------- trainer
class LIATrainer(CrowdConsensus, Params):
    """Train ``h_θ``, ``d_φ`` and ``c_ψ`` with the LIA paper's EM (Eqs. 4, 7, 8, 9).

    Args:
        classifier: any Keras model mapping ``x`` to class probabilities ``(batch, C)`` (or
            logits with ``from_logits=True``); ``None``: :func:`default_classifier` (an MLP on
            features, or an instance embedding when ``x`` is ``None``).
        num_classes: ``C``; default: the annotations' number of classes.
        from_logits: the classifier outputs logits, not probabilities (a given
            ``classifier`` only: the default one ends in a softmax).
        latent_dim: ``L`` of the difficulty/competence tensors.
        representation: optional Keras layer/model giving ``d_φ``'s input from ``x`` (e.g.
            a frozen feature extractor); default ``x`` itself (flattened).
        annotator_features: optional ``(A, f)`` description of the annotators (row = annotator
            code; a ``DataFrame`` indexed by annotator id is aligned by id); lets
            :meth:`predict_competence` score annotators never seen in training.
        hidden_units: hidden layers of the default classifier.
        difficulty_hidden, competence_hidden: hidden layers of ``d_φ`` and ``c_ψ``.
        instance_embedding_dim: size of learned instance embeddings (feature-free).
        annotator_l2, instance_l2, classifier_l2: L2 strengths on the competence kernels (the
            per-annotator deviations from the shared bias), the difficulty kernels, and the
            default classifier, in units of the summed negative log-likelihood (the Keras
            regulariser gets ``l2 / n_items``, as the loss is a mean over items).
        annotator_scale: ``None``: plain L2 on the competence kernels; a number ``s``: the
            heavy-tailed :class:`CauchyShrinkage` with that scale (L2 of ``annotator_l2`` for
            deviations well below ``s``, logarithmic beyond).
        em_iterations: maximum number of M-steps (each followed by an E-step); the paper
            uses 10.
        m_steps: optimiser steps per M-step (paper: 1000), warm-started.
        marginal_steps: steps of marginal-likelihood fine-tuning (0: none; the authors' code
            uses 2000).
        marginal: ``"annotation"`` (Eq. 9 as printed) or ``"item"`` (exact marginal).
        batch_size: items per optimiser step; ``None`` (default): full batch (every step sees
            every item, deterministic) up to 1024 items, else ``max(1024, ⌈items / m_steps⌉)``
            (the paper's 1024, grown so that each M-step passes over every item: a per-item
            parameter, LIA-E's embeddings, is only updated on the steps that see its item;
            with 1024 rows and 100 steps an M-step on 2M items would see one in twenty).
        learning_rate: AMSGrad learning rate. Default 0.05: with full batches and a few
            hundred steps per M-step, the paper's 1e-3 leaves the confusion logits (which
            need magnitudes of 3-4 for a reliable annotator) near their start.
        marginal_learning_rate: learning rate of the fine-tuning (Eq. 9), which starts from
            the EM solution; ``None``: ``learning_rate / 10`` (a fresh Adam moves every
            parameter by about the learning rate in its first steps).
        tol: stop EM early when no posterior moves by more than this between E-steps.
        init_biases: start the shared competence bias at the log of the confusion matrix
            pooled over all annotators under the first E-step, and the default classifier's
            output bias at the log class prior (the first M-step then refines a sensible
            model instead of leaving uniform confusions); the per-annotator table starts
            near 0 (``c_ψ`` is then "the crowd's average" until the data say otherwise).
        seed: seeds the weights this trainer creates (default classifier, difficulty and
            competence maps) and the batch order, without touching global random state;
            ``None``: not seeded. A given ``classifier`` keeps its own weights.
        progress: progress bars over the EM iterations and the fine-tuning steps.

    After :meth:`fit`, the label-model surface (:mod:`crowd_keras.item_consensus`):
    ``class_priors_`` (mean of ``posteriors_``), ``confusion_matrices_`` (each annotator's
    ``Q_ij`` averaged over its items) and ``annotator_quality_``; :meth:`predict_proba_items`
    is :meth:`posteriors`.

    Attributes:
        posteriors_: (items, C) E-step ``ŷ`` with the final parameters (Eq. 4).
        posteriors_em_: (items, C) the same before marginal fine-tuning.
        classifier_: the classifier trained (``classifier`` itself when given).
        layer_: the :class:`DifficultyCompetence` layer.
        model_: the training model.
        joint_model_: the E-step's model: ``log h_θ(x)_k + Σ_j log [Q_ij]_{k, y_ij}``,
            (items, C).
        feature_free_: whether the trainer was fitted without features (``x`` None).
        num_classes_: C.
        batch_size_: the items per optimiser step used.
        history_: one dict per M-step / phase with its final loss.
        n_iter_: EM iterations run.
        annotations_: the annotations fitted.
        crowd_summary_: the :class:`~crowd_keras.item_consensus.CrowdSummary` behind the
            label-model surface.
    """

    def __init__(self, classifier: Any = None, num_classes: Optional[int] = None, *,
                 latent_dim: int = 1, representation: Any = None,
                 annotator_features: Any = None, from_logits: bool = False,
                 hidden_units: Sequence[int] = (16,), difficulty_hidden: Sequence[int] = (),
                 competence_hidden: Sequence[int] = (), instance_embedding_dim: int = 16,
                 annotator_l2: float = 1.0, annotator_scale: Optional[float] = None,
                 instance_l2: float = 1.0, classifier_l2: float = 0.0,
                 em_iterations: int = 10, m_steps: int = 200, marginal_steps: int = 400,
                 marginal: str = "annotation", batch_size: Optional[int] = None,
                 learning_rate: float = 0.05, marginal_learning_rate: Optional[float] = None,
                 tol: float = 1e-3, init_biases: bool = True,
                 seed: Optional[int] = None, progress: bool = True) -> None:
        self.classifier = classifier
        self.num_classes = num_classes
        self.latent_dim = latent_dim
        self.representation = representation
        self.annotator_features = annotator_features
        self.from_logits = from_logits
        self.hidden_units = hidden_units
        self.difficulty_hidden = difficulty_hidden
        self.competence_hidden = competence_hidden
        self.instance_embedding_dim = instance_embedding_dim
        self.annotator_l2 = annotator_l2
        self.annotator_scale = annotator_scale
        self.instance_l2 = instance_l2
        self.classifier_l2 = classifier_l2
        self.em_iterations = em_iterations
        self.m_steps = m_steps
        self.marginal_steps = marginal_steps
        self.marginal = marginal
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.marginal_learning_rate = marginal_learning_rate
        self.tol = tol
        self.init_biases = init_biases
        self.seed = seed
        self.progress = progress

    # ------------------------------------------------------------------ checks
    def _check_inputs(self, x: Any, annotations: Any) -> tuple:
        if not isinstance(annotations, Annotations):
            raise CrowdDataError(f"annotations must be a crowd_keras.Annotations, got "
                                 f"{type(annotations).__name__}")
        n = annotations.n_items
        if self.from_logits and self.classifier is None:
            # the default classifier ends in a softmax: its probabilities were read as logits
            # (a second softmax), squeezing every prediction towards uniform, silently
            raise ValueError("from_logits=True says the classifier outputs logits, but the "
                             "default classifier (classifier=None) outputs probabilities "
                             "(a softmax); give a classifier= that outputs logits, or leave "
                             "from_logits=False")
        if x is not None:
            x = numeric_rows(np.asarray(by_item_id(x, annotations)))   # a frame: by item id
            if x.ndim < 2 or len(x) != n:
                raise CrowdDataError(f"x must have one row per annotated item ({n} items), got "
                                     f"shape {x.shape}")
            check_finite_rows(x)
        k = self.num_classes or annotations.n_classes
        if k < 2:   # DifficultyCompetence's own message would name a num_classes never given
            raise CrowdDataError(f"the model has {k} class (num_classes={self.num_classes}, "
                                 f"annotations have {annotations.n_classes}); LIATrainer needs "
                                 "at least 2 (give n_classes= or classes= to Annotations "
                                 "when a class has no label)")
        if annotations.n_classes > k:
            raise CrowdDataError(f"annotations have {annotations.n_classes} classes but "
                                 f"num_classes={k}")
        try:
            out_k = self.classifier.output_shape[-1] if self.classifier is not None else None
        except (AttributeError, ValueError, TypeError, IndexError):
            out_k = None   # a layer or subclassed model not yet built: its call will tell
        if out_k is not None and int(out_k) != k:
            raise CrowdDataError(f"the classifier outputs {out_k} classes but the model has {k} "
                                 f"(num_classes={self.num_classes}, annotations have "
                                 f"{annotations.n_classes})")
        self._annotator_rows = None
        if self.annotator_features is not None:
            feats = np.asarray(by_annotator_id(self.annotator_features, annotations),
                               dtype="float32")
            if feats.ndim != 2 or len(feats) != annotations.n_annotators:
                raise CrowdDataError(f"annotator_features must be (annotators="
                                     f"{annotations.n_annotators}, f), got shape {feats.shape}")
            self._annotator_rows = feats
        if self.marginal not in ("annotation", "item"):
            raise ValueError(f"marginal must be 'annotation' or 'item', got {self.marginal!r}")
        check_step_settings(self)
        return x, int(k)

    # ------------------------------------------------------------------ building
    def _build(self, x: Optional[np.ndarray], annotations: Annotations, k: int) -> None:
        n = annotations.n_items
        feature_free = x is None
        self.feature_free_ = feature_free
        if self.classifier is not None:
            classifier = self.classifier
        elif feature_free:
            classifier = default_classifier(k, num_instances=n, hidden_units=self.hidden_units,
                                            embedding_dim=self.instance_embedding_dim,
                                            l2=self.classifier_l2 / n)
        else:
            classifier = default_classifier(k, input_shape=x.shape[1:],
                                            hidden_units=self.hidden_units,
                                            l2=self.classifier_l2 / n)
        reg = lambda lam: keras.regularizers.L2(lam / n) if lam else None  # noqa: E731
        annotator_reg = reg(self.annotator_l2)
        if self.annotator_l2 and self.annotator_scale is not None:
            annotator_reg = CauchyShrinkage(self.annotator_l2 / n, self.annotator_scale)
        layer = DifficultyCompetence(
            k, latent_dim=self.latent_dim,
            num_annotators=annotations.n_annotators,
            annotator_features=self._annotator_rows,
            num_instances=n if feature_free else None,
            instance_embedding_dim=self.instance_embedding_dim,
            instance_hidden=self.difficulty_hidden, annotator_hidden=self.competence_hidden,
            instance_regularizer=reg(self.instance_l2),
            annotator_regularizer=annotator_reg, output_mode="log_probs",
            name="difficulty_competence")
        if feature_free:
            x_in = keras.Input(shape=(), dtype="int32", name="x")
        else:
            x_in = keras.Input(shape=x.shape[1:], dtype=str(x.dtype) if x.dtype.kind != "f"
                               else "float32", name="x")
        ids_in = keras.Input(shape=(None,), dtype="int32", name="annotator_ids")
        labels_in = keras.Input(shape=(None,), dtype="int32", name="labels")
        h = classifier(x_in)
        if feature_free:
            rep = x_in
        elif self.representation is not None:
            rep = self.representation(x_in)
        else:
            rep = keras.layers.Flatten()(x_in) if len(x.shape) > 2 else x_in
        log_q = layer([rep, ids_in])
        out = AnnotationLogLikelihoods(self.from_logits, name="log_likelihoods")(
            [h, log_q, labels_in])
        self.classifier_ = classifier
        self.layer_ = layer
        inputs = {"x": x_in, "annotator_ids": ids_in, "labels": labels_in}
        self.model_ = keras.Model(inputs, out, name="lia")
        # the E-step's log h_θ(x_i)_k + Σ_j log [Q_ij]_{k, y_ij}: (items, C), the sum of the
        # model's rows (a smaller transfer than the (items, 1 + k, C) terms)
        self.joint_model_ = keras.Model(inputs, ops.sum(out, axis=1), name="lia_joint")
        jit = self._jit()
        if jit != "auto":   # not compile(): its default RMSprop, never built, warned on unpickling
            self.joint_model_.jit_compile = jit
        self.num_classes_ = k

    def _seeded_build(self, x: Optional[np.ndarray], annotations: Annotations, k: int) -> None:
        """:meth:`_build` with the weights drawn from ``seed`` (fit, ``initial_weights`` and
        ``restore`` build the same network)."""
        self._n_annotations = annotations.n_annotations
        with seeded_construction(self.seed):
            self._build(x, annotations, k)

    @staticmethod
    def _steps_per_execution(steps: int, most: int = 50) -> int:
        """Largest divisor of ``steps`` up to ``most``: optimiser steps per compiled call (1 on
        PyTorch, which runs one step per call)."""
        if keras.backend.backend() == "torch":
            return 1
        return max(d for d in range(1, min(int(steps), most) + 1) if int(steps) % d == 0)

    def _jit(self) -> Any:
        """XLA on TensorFlow, also on CPU, where Keras' ``"auto"`` turns it off: the LIA steps
        are many small ops, and fused they run faster on large fits (from 500,000
        annotations; below, compiling costs more than it saves). Not under a
        ``tf.distribute`` strategy, with op determinism, or with a layer that does not
        support XLA (Keras' own conditions); elsewhere Keras' choice."""
        if not tensorflow_backend():
            return "auto"
        if self._n_annotations < _XLA_MIN_ANNOTATIONS:   # compiling costs more than it saves
            return False
        import tensorflow as tf

        def layers(layer: Any) -> Any:
            yield layer
            for sub in getattr(layer, "layers", ()):
                yield from layers(sub)

        from tensorflow.python.framework.config import is_op_determinism_enabled

        if tf.distribute.has_strategy() or is_op_determinism_enabled():
            return False
        return all(getattr(layer, "supports_jit", True) for layer in layers(self.model_))

    def _optimizer(self, learning_rate: Optional[float] = None) -> keras.optimizers.Optimizer:
        # lazy on the per-item tables' sparse gradients: a step costs O(batch), not O(items)
        return LazyAdam(self.learning_rate if learning_rate is None else learning_rate,
                        amsgrad=True)

    # ------------------------------------------------------------------ EM
    def fit(self, x: Any, annotations: Annotations,
            initial_posteriors: Any = None) -> "LIATrainer":
        """Run EM (Eqs. 8, 7, 4) then marginal fine-tuning (Eq. 9).

        Args:
            x: ``(items, ...)`` classifier inputs, row ``i`` = item code ``i`` (a ``DataFrame``
                indexed by the annotations' item ids is aligned by id, any row order);
                ``None`` for feature-free training on learned instance embeddings.
            annotations: the crowd labels (item codes index the rows of ``x``).
            initial_posteriors: optional ``(items, C)`` replacing the majority-vote first
                E-step (e.g. another label model's posteriors).
        """
        x, k = self._check_inputs(x, annotations)
        rng = np.random.default_rng(self.seed)
        n = annotations.n_items
        self._seeded_build(x, annotations, k)
        if annotations.n_annotations == 0:
            raise CrowdDataError("no annotations to learn from")
        ids, labels = annotations.to_padded()
        self._data = {"x": np.arange(n, dtype="int32") if x is None else x,
                      "annotator_ids": ids.astype("int32"), "labels": labels.astype("int32")}
        if initial_posteriors is None:
            post = self._majority_vote(annotations, k)                     # Eq. 8
        else:
            post = checked_initial_posteriors(initial_posteriors, n, k)
        if self.init_biases:
            self._initialise(post, annotations)
        self.batch_size_ = self._batch_size(n)
        # the batch order follows the items' content keys, not their rows or ids (the numpy
        # engine's order)
        self._batches = RowBatches(self._data, self.batch_size_, keys=item_keys(annotations))
        self.history_ = []
        self.model_.compile(optimizer=self._optimizer(), loss=ExpectedCompleteNLL(),
                            jit_compile=self._jit(),
                            steps_per_execution=self._steps_per_execution(self.m_steps))
        post = run_em(self, post, lambda target: self._train(target, self.m_steps, rng),
                      self._e_step)
        self.posteriors_em_ = post
        if self.marginal_steps:
            lr = self.marginal_learning_rate
            lr = self.learning_rate / 10 if lr is None else lr
            self.model_.compile(optimizer=self._optimizer(lr), loss=MarginalNLL(self.marginal),
                                jit_compile=self._jit(),
                                steps_per_execution=self._steps_per_execution(self.marginal_steps))
            with Progress(self.marginal_steps, "LIA marginal fine-tuning", unit="step",
                          disable=not self.progress) as bar:
                loss = self._train(self._data["labels"], self.marginal_steps, rng,
                                   [_StepProgress(bar)])                       # Eq. 9
            post = self._e_step()
            self.history_.append({"phase": "marginal", "iteration": 1, "loss": loss})
        self.posteriors_ = post
        self.annotations_ = annotations
        del self._data, self._batches
        self.crowd_summary_ = self._summary(x, annotations)
        return self

    def _summary(self, x: Optional[np.ndarray], annotations: Annotations,
                 batch_size: int = 1024) -> Any:
        """The annotators' ``Q_ij`` averaged over their training items, with ``ρ`` the mean
        of ``posteriors_`` (:class:`~crowd_keras.item_consensus.CrowdSummary`)."""
        ids, labels = annotations.to_padded()
        a, k = annotations.n_annotators, self.num_classes_
        sums, counts = np.zeros((a, k, k)), np.zeros(a)
        rows = np.arange(annotations.n_items, dtype="int32") if x is None else x
        for lo in range(0, annotations.n_items, batch_size):
            ib = ids[lo:lo + batch_size]
            q = self.confusions(rows[lo:lo + batch_size], ib, batch_size=batch_size)
            valid = ib >= 0
            s, c = mean_confusions(ib[valid], q[valid], a)
            sums, counts = sums + s, counts + c
        return with_expected_accuracy(
            summary_from_posteriors(self.posteriors_, sums, counts, annotations.annotator_ids),
            self.posteriors_, annotations)

    def _batch_size(self, n: int) -> int:
        return lia_batch_size(self.batch_size, n, self.m_steps)

    def _initialise(self, post: np.ndarray, annotations: Annotations) -> None:
        """Start ``c_ψ`` and ``h_θ`` at the model that the first E-step ``post`` implies.

        Shared competence bias ``b[k, l, :] = log π_kl − log L`` with ``π`` the confusion
        matrix pooled over all annotations, ``π_kl ∝ 0.5 + Σ_{(i,j): y_ij = l} ŷ_ik`` (so
        ``Q_ij = π`` while the kernels are 0); the one-hot competence table starts at
        ``N(0, 0.01²)`` (near the shared tensor, the symmetry across the ``L`` latent
        components broken; each row from its annotator's fingerprint,
        :func:`~.model.competence_start`); feature-free, the item embedding tables' rows from
        the items' content keys (:func:`~.model.item_tables_start`); the default classifier's output
        bias ``log ρ`` with ``ρ`` the mean posterior. Shapes: ``post (items, C)``; vectorised,
        no loop over annotations.
        """
        bias, truth_bias = initial_biases(post, annotations, self.layer_.latent_dim)
        kernel, last_bias = self.layer_.annotator_layers[-1]
        last_bias.assign(bias)
        if not self.layer_.uses_annotator_features:
            table = self.layer_.annotator_layers[0][0]
            table.assign(competence_start(annotations, table.shape[1], self.seed))
        if self.feature_free_:   # item rows from the items' content keys, as the numpy engine's
            truth, difficulty = item_tables_start(annotations, self.instance_embedding_dim,
                                                  self.seed)
            if self.classifier is None:
                self.classifier_.get_layer("instance_embedding").embeddings.assign(truth)
            self.layer_.instance_embedding.assign(difficulty)
        if self.classifier is None and not self.from_logits:
            self.classifier_.get_layer("truth").bias.assign(truth_bias)

    @staticmethod
    def _majority_vote(annotations: Annotations, k: int) -> np.ndarray:
        """Eq. 8: vote fractions ``(items, k)``; unlabelled items uniform."""
        return vote_fractions(annotations, k)

    def _variables(self) -> dict:
        """The feature-free default network's variables by :data:`~.model.WEIGHT_SHAPES` name."""
        layer, clf = self.layer_, self.classifier_
        return {"truth_embedding": clf.get_layer("instance_embedding").embeddings,
                "truth_kernel": clf.get_layer("truth").kernel,
                "truth_bias": clf.get_layer("truth").bias,
                "difficulty_embedding": layer.instance_embedding,
                "difficulty_kernel": layer.instance_layers[0][0],
                "difficulty_bias": layer.instance_layers[0][1],
                "competence_table": layer.annotator_layers[0][0],
                "competence_bias": layer.annotator_layers[0][1]}

    def initial_weights(self, annotations: Annotations, initial_posteriors: Any = None) -> dict:
        """The starting weights that :meth:`fit` would use (built from ``seed``), as numpy
        arrays by :data:`~.model.WEIGHT_SHAPES` name: feature-free, default network only. With
        them, :class:`~.em.FeatureFreeLIA` and this trainer run the same fit."""
        self._check_restorable()
        _, k = self._check_inputs(None, annotations)
        self._seeded_build(None, annotations, k)
        post = (self._majority_vote(annotations, k) if initial_posteriors is None
                else checked_initial_posteriors(initial_posteriors, annotations.n_items, k))
        if self.init_biases:
            self._initialise(post, annotations)
        return {name: ops.convert_to_numpy(v) for name, v in self._variables().items()}

    def _check_restorable(self) -> None:
        if self.classifier is not None or tuple(self.hidden_units) or self.difficulty_hidden \
                or self.competence_hidden or self.annotator_features is not None \
                or self.representation is not None:
            raise ValueError("only the default feature-free network (no classifier, hidden "
                             "layers, representation or annotator features) has the weights "
                             "of FeatureFreeLIA")

    def restore(self, fitted: FeatureFreeLIA) -> "LIATrainer":
        """This trainer, fitted: the default feature-free network built for ``fitted``'s
        annotations and given its weights, posteriors and history (no training). Returns
        self."""
        self._check_restorable()
        ann = fitted.annotations_
        _, k = self._check_inputs(None, ann)
        if fitted.num_classes_ != k or fitted.latent_dim != self.latent_dim or \
                fitted.embedding_dim != self.instance_embedding_dim:
            raise ValueError("the fitted FeatureFreeLIA has another number of classes, "
                             "latent_dim or embedding size than this trainer")
        self._seeded_build(None, ann, k)
        for name, variable in self._variables().items():
            variable.assign(fitted.weights_[name])
        self.batch_size_ = fitted.batch_size_
        self.history_ = [dict(h) for h in fitted.history_]
        self.n_iter_ = fitted.n_iter_
        self.posteriors_em_ = fitted.posteriors_em_
        self.posteriors_ = fitted.posteriors_
        self.annotations_ = ann
        self.crowd_summary_ = self._summary(None, ann)
        return self

    def _train(self, target: np.ndarray, steps: int, rng: np.random.Generator,
               callbacks: Optional[list] = None) -> float:
        batches = self._batches.epoch(target, steps, rng)
        hist = self.model_.fit(batches, epochs=1, verbose=0, shuffle=False, callbacks=callbacks)
        return float(hist.history["loss"][-1])

    def _e_step(self, data: Optional[dict] = None) -> np.ndarray:
        """Eq. 4: ``ŷ_ik ∝ h_θ(x_i)_k Π_j [Q_ij]_{k, y_ij}``, from the joint log terms."""
        data = self._data if data is None else data
        n = len(data["labels"])
        batch = min(n, _E_STEP_BATCH)
        pad = -n % batch   # every batch the same shape: the compiled step is traced once
        if pad:
            data = {key: np.concatenate([v, np.repeat(v[-1:], pad, axis=0)])
                    for key, v in data.items()}
        model = self.joint_model_
        joint = np.concatenate([    # one compiled call per batch, no input pipeline
            ops.convert_to_numpy(model.predict_on_batch({k: v[s:s + batch] for k, v in data.items()}))
            for s in range(0, n + pad, batch)])[:n]
        return softmax_rows(joint)[0]

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        if not hasattr(self, "posteriors_"):
            raise NotFittedError("this LIATrainer is not fitted yet; call fit() first")

    def _instances(self, x: Any) -> np.ndarray:
        if self.feature_free_:
            n = self.annotations_.n_items
            idx = np.arange(n, dtype="int32") if x is None else np.asarray(x)
            if idx.ndim != 1 or idx.dtype.kind not in "iu" or ((idx < 0) | (idx >= n)).any():
                raise CrowdDataError(f"feature-free model: x must be item codes in 0..{n - 1}")
            return idx.astype("int32")
        if x is None:
            raise CrowdDataError("this model was trained on features: give x")
        x = numeric_rows(np.asarray(x))
        if x.shape[1:] != tuple(self.model_.input["x"].shape[1:]):
            raise CrowdDataError(f"x rows must have shape {tuple(self.model_.input['x'].shape[1:])}"
                                 f", got {x.shape[1:]}")
        check_finite_rows(x)   # a NaN row was predicted as class 0
        return x

    def posteriors(self, x: Any, annotations: Annotations) -> np.ndarray:
        """E-step (Eq. 4) for given items and annotations under the fitted model: ``(n, C)``.

        ``x``: the items' inputs (feature-free: their item codes, or ``None`` for the fitted
        items); ``annotations``: their labels, item codes indexing the rows of ``x``;
        annotators and classes matched to the fit's by id and by class (codes of the fit when
        the ids are the default ``0..n-1``). Items without annotations get ``h_θ(x)``.
        """
        self._check_fitted()
        x = self._instances(x if self.feature_free_ else by_item_id(x, annotations))
        if not isinstance(annotations, Annotations) or annotations.n_items != len(x):
            raise CrowdDataError(f"annotations must be an Annotations over the {len(x)} rows "
                                 "of x")
        annotations = onto_fitted(annotations, self.annotations_, "LIATrainer")   # by id
        if annotations.n_annotators > self.layer_.num_annotators:
            raise CrowdDataError(f"annotations name {annotations.n_annotators} annotators; the "
                                 f"model knows {self.layer_.num_annotators}")
        if annotations.n_classes > self.num_classes_:   # the E-step would skip such labels
            raise CrowdDataError(f"annotations have {annotations.n_classes} classes; the model "
                                 f"has {self.num_classes_}")
        if annotations.n_annotations == 0:
            return self.predict_proba(x)
        ids, labels = annotations.to_padded()
        return self._e_step({"x": x, "annotator_ids": ids.astype("int32"),
                             "labels": labels.astype("int32")})

    def predict_proba_items(self, x: Any, annotations: Annotations) -> np.ndarray:
        """Posterior of each item's true class given its features and its annotations,
        ``p(z_i = k | x_i, y_i) ∝ h_θ(x_i)_k Π_j [Q_ij]_{k, y_ij}`` (Eq. 4), ``(n, C)``:
        :meth:`posteriors` under the label-model name."""
        return self.posteriors(x, annotations)

    def predict_proba(self, x: Any = None) -> np.ndarray:
        """``h_θ(x)``: ``(n, C)`` class probabilities (feature-free: ``x`` = item codes or None)."""
        self._check_fitted()
        out = self.classifier_.predict(self._instances(x), batch_size=256, verbose=0)
        out = np.asarray(out, dtype="float64")
        return softmax_rows(out)[0] if self.from_logits else out

    def predict(self, x: Any = None) -> np.ndarray:
        """The classifier's most probable class, ``argmax_k h_θ(x)_k``: ``(n,)`` class codes
        (feature-free: ``x`` = item codes or None), as ``MixtureOfGroupsEM.predict``."""
        return self.predict_proba(x).argmax(axis=1)

    def _representation(self, x: np.ndarray) -> Any:
        if self.feature_free_:
            return x
        if self.representation is not None:
            return self.representation(x)
        return x.reshape(len(x), -1).astype("float32")

    def difficulty_tensors(self, x: Any = None, batch_size: int = _E_STEP_BATCH) -> np.ndarray:
        """``D_i = d_φ(x_i)`` of Eq. 1 as an array ``(n, C, C, L)`` (feature-free: ``x`` =
        item codes, ``None`` for every fitted item)."""
        self._check_fitted()
        batch_size = check_count(batch_size, "batch_size", 1)
        x = self._instances(x)
        layer, rep = self.layer_, self._representation
        return np.concatenate([ops.convert_to_numpy(layer.difficulty(rep(x[s:s + batch_size])))
                               for s in range(0, len(x), batch_size)])

    def competence_tensors(self) -> np.ndarray:
        """``C_j = c_ψ(r_j)`` of Eq. 1 for the fitted annotators, ``(A, C, C, L)``."""
        self._check_fitted()
        return ops.convert_to_numpy(self.layer_.competence())

    def confusions(self, x: Any = None, annotator_ids: Any = None,
                   annotator_features: Any = None, batch_size: int = 1024) -> np.ndarray:
        """``Q_ij`` as probabilities, rows = true class.

        ``annotator_ids``: ``None`` (every annotator) or ``(m,)`` codes → ``(n, m, C, C)``
        for every instance × annotator; ``(n, k)`` codes padded with -1 → ``(n, k, C, C)``
        (padding slots NaN). ``annotator_features (m, f)`` (instead of ids) describes
        annotators, possibly unseen, when the model was built with annotator features.
        """
        self._check_fitted()
        batch_size = check_count(batch_size, "batch_size", 1)
        x = self._instances(x)
        n = len(x)
        layer = self.layer_
        if annotator_features is not None:
            feats = np.asarray(annotator_features, dtype="float32")
            if feats.ndim != 2 or layer.annotator_features is None or \
                    feats.shape[1] != layer.annotator_features.shape[1]:
                raise CrowdDataError("annotator_features need a model built with annotator "
                                     "features of the same width")
            fn = lambda xb, _: layer.confusions_for_features(self._representation(xb), feats)  # noqa: E731
            ids = None
        else:
            a = layer.num_annotators
            ids = np.arange(a) if annotator_ids is None else np.asarray(annotator_ids)
            if ids.dtype.kind not in "iu" or ids.ndim not in (1, 2) or (ids >= a).any() or \
                    (ids < -1).any() or (ids.ndim == 1 and (ids < 0).any()):
                raise CrowdDataError(f"annotator_ids must be codes in 0..{a - 1} ((n, k) may "
                                     "be padded with -1)")
            if ids.ndim == 2 and len(ids) != n:
                raise CrowdDataError(f"annotator_ids (n, k) must have one row per instance "
                                     f"({n}), got {len(ids)}")
            ids = np.broadcast_to(ids, (n, len(ids))) if ids.ndim == 1 else ids
            fn = lambda xb, ib: layer([self._representation(xb), ib.astype("int32")])  # noqa: E731
        out = []
        for s in range(0, n, batch_size):
            ib = None if ids is None else np.ascontiguousarray(ids[s:s + batch_size])
            out.append(np.exp(ops.convert_to_numpy(fn(x[s:s + batch_size], ib))))
        q = np.concatenate(out).astype("float64")
        if ids is not None:
            q[ids < 0] = np.nan
        return q

    def predict_competence(self, x: Any = None, annotator_ids: Any = None,
                           annotator_features: Any = None,
                           class_probs: Any = None) -> np.ndarray:
        """Probability that each annotator labels each instance correctly.

        ``Σ_k p(y_i = k) [Q_ij]_kk`` with ``p = h_θ(x_i)`` (or ``class_probs (n, C)``, e.g.
        the posteriors of the training items). Annotators as in :meth:`confusions`; works
        for unseen instances (features) and unseen annotators (``annotator_features``).
        Returns ``(n, m)`` (or ``(n, k)`` with NaN at padding).
        """
        q = self.confusions(x, annotator_ids, annotator_features)
        p = self.predict_proba(x) if class_probs is None else np.asarray(class_probs, "float64")
        if p.shape != (q.shape[0], q.shape[-1]):
            raise CrowdDataError(f"class_probs must be ({q.shape[0]}, {q.shape[-1]}), got {p.shape}")
        diag = np.diagonal(q, axis1=-2, axis2=-1)                       # (n, m, C)
        return np.einsum("nmc,nc->nm", diag, p)


class _StepProgress(keras.callbacks.Callback):
    """Advance a :class:`~crowd_keras.progress.Progress` by the optimiser steps run (Keras
    reports a batch per compiled call of ``steps_per_execution`` steps)."""

    def __init__(self, bar: Progress) -> None:
        super().__init__()
        self._bar, self._done = bar, 0

    def on_train_batch_end(self, batch: int, logs: Optional[dict] = None) -> None:
        self._bar.update(batch + 1 - self._done)
        self._done = batch + 1
        if logs and "loss" in logs:
            self._bar.set_postfix(loss=f"{float(logs['loss']):.4f}")
