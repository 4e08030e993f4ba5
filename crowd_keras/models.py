"""`CrowdModel`: train a plain classifier from raw crowd labels through a noise layer.

``CrowdModel(classifier, noise_layer)`` is a ``keras.Model`` whose forward pass is
``noise_layer(classifier(x))``. It is trained on the annotators' labels; afterwards
``classifier.predict(x)`` (the same, trained, object) is the truth estimate and the noise
layer holds what was learned about the annotators (``model.confusion_matrices()``).

Targets given to :meth:`CrowdModel.fit` / :meth:`CrowdModel.evaluate`:

* an :class:`crowd_keras.Annotations` (rows = items in code order, aligned with ``x``): fed in
  the *indexed* form, ``annotations.to_padded()``: per item the annotator codes and labels of
  its annotations, padded with -1; the cost per step is ∝ annotations, not annotators;
* a tuple ``(annotator_ids, labels)`` of that padded form (``labels`` may carry a time axis,
  ``(items, time, k)``, for sequence labelling, or be floats with NaN padding for regression);
* a dense array ``(items, annotators)`` (``(items, time, annotators)`` for sequences) with -1
  (classification) or NaN (regression) where an annotator gave no label: the *dense* form.
* ``x = {"x": inputs, "annotator_ids": ids}`` (the indexed inputs) with ``y`` the labels
  ``(items, [time,] k)`` of those slots: the padded tuple's form;
* ``y=None``: ``x`` is already ``(inputs, targets)`` data (e.g. a ``tf.data.Dataset``) whose
  inputs are either ``x`` (dense form) or ``{"x": x, "annotator_ids": ids}`` (indexed form).

Noise-layer protocol (what a layer must offer to plug in; ``CrowdLayer``,
``CrowdRegressionLayer`` and later layers such as a common-noise or mixture-of-groups layer):

* attribute ``num_annotators``;
* dense call ``layer(probs)`` → ``(batch, [time,] annotators, classes)`` logits;
* indexed call ``layer([probs, annotator_ids])`` with ``annotator_ids (batch, k)`` padded with
  -1 → ``(batch, [time,] k, classes)`` logits;
* optional attribute ``uses_features = True``: the layer also needs the instance features
  (e.g. a gate that depends on the input, as in CoNAL) and is always called as
  ``layer([probs, annotator_ids, x])`` with ``x`` the classifier's input; in the dense form
  ``annotator_ids`` then lists every annotator, ``(batch, A)``;
* optional ``confusion_matrices()`` → ``(A, K, K)`` row-stochastic, rows = true class.

``probs`` is the classifier's output, passed through a softmax first when the classifier
outputs logits (``from_logits=True``).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, NamedTuple, Optional

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from ._keras_utils import (check_no_label_at_padding, checked_answers, checked_bool,
                           checked_codes, checked_int, concrete_values, floor_at, floored_log,
                           keras_mask, n_rows, softmax_logits, with_keras_mask)
from .annotations import Annotations
from .arguments import check_count
from .callbacks import TruthValidation
from .crowd_layer.regression import CrowdRegressionLayer
from .errors import CrowdDataError
from .item_consensus import (CrowdConsensus, CrowdSummary, item_posteriors, mean_confusions,
                             onto_fitted,
                             padded_log_likelihood, posterior_label_counts,
                             summary_from_label_counts, summary_from_posteriors,
                             with_expected_accuracy)
from .losses import MaskedMultiCrossEntropy, MaskedMultiMSE
from .optimizers import LazyAdam, sum_repeated_rows_across_replicas
# every layer a saved CrowdModel may hold, registered for keras.saving.load_model (Keras
# imports no module of a custom object)
from . import layers  # noqa: F401,E402

# TruthValidation (callbacks) and LazyAdam (optimizers) are re-exported for existing imports.
__all__ = ["CrowdModel", "TruthValidation", "LazyAdam"]

X_KEY, IDS_KEY = "x", "annotator_ids"
_SUMMARY_FILE = "crowd_summary.npz"   # crowd_summary_ in a saved model's assets
_FITTED_FILE = "fitted_codes.npz"     # the fit's annotator ids and classes, the same


@keras.saving.register_keras_serializable(package="crowd_keras")
class CrowdModel(CrowdConsensus, keras.Model):
    """A classifier followed by a noise layer, trained on the annotators' raw labels.

    A trained model is also a label model (:mod:`crowd_keras.item_consensus`):
    :meth:`predict_proba_items` gives each training item's posterior given its features and
    its annotations, :meth:`consensus_labels` its argmax, and after ``fit`` on arrays (or
    :meth:`summarize_annotators`) ``annotator_quality_``, ``confusion_matrices_`` and
    ``class_priors_`` describe the crowd as the label models do (saved with the model).

    Args:
        classifier: any Keras model or layer mapping ``x`` to class probabilities
            ``(batch, [time,] K)`` (or logits with ``from_logits=True``; or a ``(batch, 1)``
            regression output for ``CrowdRegressionLayer``).
        noise_layer: a layer following the noise-layer protocol of this module, e.g.
            ``CrowdLayer(num_annotators, "MW")``.
        from_logits: whether the classifier outputs logits (a softmax is applied before the
            noise layer).
        warmup_epochs: for the first epochs of training the noise layer is bypassed (held at
            the identity: every annotation is a target of the classifier, i.e. a soft
            majority vote) and gets no gradient; then it is switched on. Starting the crowd
            layer from a classifier that already separates the classes avoids the collapse
            where two classes swap inside the annotator matrices (LabelMe, CL-MW, 10 seeds:
            0.870 ± 0.007 with 1 warm-up epoch; one seed in five fell to 0.78 without, as
            crowd-kit's does). 0 turns it off; ignored for regression noise layers. Counted
            over all ``fit`` calls (``epochs_trained``, saved with the model); training
            loops that bypass ``fit`` get no warm-up.

    ``compile()`` defaults to Adam and ``MaskedMultiCrossEntropy(from_logits=True)``
    (``MaskedMultiMSE`` for a ``CrowdRegressionLayer``).
    """

    def __init__(self, classifier: Any, noise_layer: Any, from_logits: bool = False,
                 warmup_epochs: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(classifier):
            # a string or an array was kept and failed at the first call ("not callable")
            raise TypeError("classifier must be a Keras model or layer mapping x to class "
                            f"probabilities, got {type(classifier).__name__}")
        if not hasattr(noise_layer, "num_annotators"):
            raise TypeError("noise_layer must expose num_annotators (see crowd_keras.models)")
        if isinstance(noise_layer, layers.DifficultyCompetence):
            # it maps an instance representation to confusion matrices (batch, k, C, C), not
            # the classifier's probabilities to label logits: a fit failed in the loss
            # (TensorFlow), in the call (JAX) or could not build the model (torch)
            raise TypeError("DifficultyCompetence is not a CrowdModel noise layer: it gives "
                            "confusion matrices (batch, k, C, C) from an instance "
                            "representation, not label logits from the classifier's "
                            "probabilities; train it with crowd_keras.training.LIATrainer")
        if noise_layer.num_annotators is None:   # the global MixtureOfGroups: no annotators
            raise TypeError(f"noise_layer {type(noise_layer).__name__} has num_annotators=None: "
                            "a CrowdModel needs a layer of per-annotator outputs (give "
                            "num_annotators=...; a global MixtureOfGroups is trained on label "
                            "counts with LabelCountCrossEntropy)")
        self.classifier = classifier
        self.noise_layer = noise_layer
        # checked as Keras checks its layers' arguments: bool("False") was True, and None or
        # NaN warm-up epochs failed in int() without naming the argument
        self.from_logits = checked_bool(from_logits, "from_logits")
        self.warmup_epochs = checked_int(warmup_epochs, "warmup_epochs", minimum=0)
        if self.from_logits and self.is_regression:
            # the softmax of a (batch, 1) output is 1 everywhere: the layer got a constant
            # and the classifier no gradient, silently
            raise ValueError("from_logits=True applies a softmax to class logits; a "
                             "CrowdRegressionLayer takes the classifier's (batch, [time,] 1) "
                             "output as it is: leave from_logits=False")
        # 1.0: noise layer on; 0.0: bypassed (warm-up). A variable, so that switching it does
        # not retrace the compiled train step.
        self.noise_on = self.add_weight(shape=(), initializer="ones", trainable=False,
                                        name="noise_on")
        # Epochs trained by fit() so far (saved with the model): repeated fit() calls and a
        # reloaded model do not warm up again.
        self.epochs_trained = self.add_weight(shape=(), initializer="zeros", trainable=False,
                                              name="epochs_trained")

    # ------------------------------------------------------------------ forward
    def build(self, input_shape: Any) -> None:
        """Build the classifier and the noise layer: ``input_shape`` is ``x``'s, or
        ``{"x": ..., "annotator_ids": (batch, k)}`` (the indexed inputs).

        Run by the first call, and by ``model.build(shape)`` (what Keras asks for before
        ``load_weights``): Keras' default ``build`` marked the model built with its noise
        layer unbuilt, and ``load_weights`` then skipped the noise layer's weights."""
        indexed = isinstance(input_shape, dict) and IDS_KEY in input_shape
        x_shape = input_shape[X_KEY] if indexed else input_shape
        # a symbolic run of call() builds every layer as the first call on data does (Keras'
        # own default), in the same order: the same initial weights; x in the dtype the
        # classifier's Input declares
        known = getattr(self.classifier, "inputs", None)
        dtype = (known[0].dtype if isinstance(known, list) and len(known) == 1
                 and not isinstance(x_shape, dict) else self.input_dtype)
        x = keras.tree.map_shape_structure(lambda s: keras.KerasTensor(s, dtype=dtype), x_shape)
        if indexed:
            x = {X_KEY: x, IDS_KEY: keras.KerasTensor(input_shape[IDS_KEY], dtype="int32")}
        self.compute_output_spec(x)

    @property
    def uses_features(self) -> bool:
        return bool(getattr(self.noise_layer, "uses_features", False))

    @property
    def is_regression(self) -> bool:
        return isinstance(self.noise_layer, CrowdRegressionLayer)

    def call(self, inputs: Any, training: Optional[bool] = None) -> Any:
        if isinstance(inputs, dict) and IDS_KEY in inputs:
            x, ids = inputs[X_KEY], inputs[IDS_KEY]
        else:
            x, ids = inputs, None
        out = self.classifier(x, training=training)
        # From the logits when they are known (from_logits, or a TensorFlow softmax output):
        # the probabilities and the warm-up's log-probabilities from one log_softmax.
        logits = out if self.from_logits else softmax_logits(out)
        log_p = None if logits is None else ops.log_softmax(logits, axis=-1)
        probs = out if log_p is None else with_keras_mask(ops.exp(log_p), keras_mask(out))
        if not self.uses_features:
            noisy = self.noise_layer(probs) if ids is None else self.noise_layer([probs, ids])
        else:
            if keras.tree.is_nested(x):
                # the gate maps one representation (batch, [time,] features): a dict of
                # inputs failed deep in Keras' shape inference ("invalid literal for int()")
                raise ValueError(f"{type(self.noise_layer).__name__} with a gate takes the "
                                 "classifier's input as one tensor (batch, [time,] features), "
                                 f"got a {type(x).__name__} of inputs; for a classifier of "
                                 "several inputs build a functional model with the gate on "
                                 "a hidden layer")
            if ids is None:  # dense data for a feature-gated layer: list every annotator
                n = self.noise_layer.num_annotators
                ids = ops.broadcast_to(ops.expand_dims(ops.arange(n, dtype="int32"), 0),
                                       (ops.shape(probs)[0], n))
            noisy = self.noise_layer([probs, ids, x])
        if self.is_regression or not self.warmup_epochs:
            return noisy
        # Warm-up: the identity noise model, log p(y|x) for every annotator slot; the
        # multiplication by 0 also gives the noise layer a zero gradient.
        if log_p is None:
            log_p = ops.log_softmax(floored_log(out, 1e-7), axis=-1)
        identity = ops.broadcast_to(ops.expand_dims(ops.cast(log_p, noisy.dtype), -2),
                                    ops.shape(noisy))
        on = ops.cast(self.noise_on, noisy.dtype)
        # the noise layer's time-step mask (a sequence model's padding) stays on the output
        return with_keras_mask(on * noisy + (1.0 - on) * identity, keras_mask(noisy))

    def load_own_variables(self, store: Any) -> None:
        """Keras' loading of the model's own variables, then the noise layer on: a file saved
        in the middle of a warm-up epoch (``ModelCheckpoint(save_freq=N)``, a callback's
        ``save``) holds the bypass, and the loaded model's predict and evaluate skipped its
        noise layer. A resumed fit sets it again from ``epochs_trained``."""
        super().load_own_variables(store)
        self.noise_on.assign(ops.ones_like(self.noise_on))

    # ------------------------------------------------------------------ training API
    def compile(self, optimizer: Any = "adam", loss: Any = None, **kwargs: Any) -> None:
        if loss is None:
            loss = MaskedMultiMSE() if self.is_regression else MaskedMultiCrossEntropy(True)
        super().compile(optimizer=optimizer, loss=loss, **kwargs)
        # the annotator tables' sparse gradients, summed over the replicas (tf.distribute)
        sum_repeated_rows_across_replicas(self.optimizer)

    def compile_from_config(self, config: dict) -> None:
        """Re-compile on ``load_model`` (Keras skips models that override ``compile``)."""
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def fit(self, x: Any = None, y: Any = None, **kwargs: Any) -> Any:
        """``keras.Model.fit`` on crowd targets (see the module doc for the accepted forms).

        With arrays of class labels, the annotators are then summarised
        (:meth:`summarize_annotators`: one more pass over the training items)."""
        _refuse_class_weight(kwargs.get("class_weight"), "fit")
        _check_sample_weight(kwargs.get("sample_weight"), "fit")
        given_x, given_y = x, y
        x, y = self.crowd_data(x, y)
        if kwargs.get("validation_data") is not None:
            kwargs["validation_data"] = self._validation(kwargs["validation_data"])
        if self.warmup_epochs and not self.is_regression:
            # flattened as Keras' CallbackList does: one callback or a list of them
            given = kwargs.get("callbacks")
            kwargs["callbacks"] = [_NoiseWarmup(self),
                                   *(keras.tree.flatten(given) if given else [])]
        if isinstance(given_y, Annotations):
            # the fit's annotator ids and classes: new annotations are read against them
            # (predict_proba_items), not by their own codes
            self.annotations_ = given_y
        try:
            history = super().fit(x, y, **kwargs)
        finally:
            # an interrupted fit (Ctrl-C in a notebook, a callback's error) ends without
            # on_train_end: the warm-up's bypass stayed on, and predict, evaluate and a saved
            # model went on bypassing the noise layer (ones made on the device: a Python 1.0
            # is a host-to-device copy under torch)
            self.noise_on.assign(ops.ones_like(self.noise_on))
        if self._summarizable(given_x, given_y):
            self.summarize_annotators(given_x, given_y)
        return history

    # -------------------------------------------- tf.distribute with several workers (Keras 3)
    # Keras 3's TensorFlow trainer fails under MultiWorkerMirroredStrategy with more than one
    # worker (keras-team/keras#20585, #20329): it averages a first batch across workers to read
    # its shapes, which tf.distribute cannot do for a nested batch, and it averages the logs of
    # every step along an axis 0 that scalar logs do not have. CrowdModel reads the shapes
    # from the local part of the batch and gives its logs that axis.
    def _maybe_symbolic_build(self, iterator: Any = None, data_batch: Any = None) -> None:
        strategy = getattr(self, "_distribute_strategy", None)
        if iterator is not None and strategy is not None:
            import tensorflow as tf

            for _, _, batches in iterator:
                data_batch = tf.nest.map_structure(
                    lambda v: (strategy.experimental_local_results(v)[0]
                               if isinstance(v, tf.distribute.DistributedValues) else v),
                    next(batches))
                break
            iterator = None
        super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        logs = super().compute_metrics(x, y, y_pred, sample_weight)
        if not _several_workers():
            return logs
        return {name: ops.expand_dims(value, 0) for name, value in logs.items()}

    def evaluate(self, x: Any = None, y: Any = None, **kwargs: Any) -> Any:
        # fit's validation pass (validation_data / validation_split) hands back the targets
        # fit already converted; converting them again would read padded labels as dense.
        if not kwargs.get("_use_cached_eval_dataset"):
            _check_sample_weight(kwargs.get("sample_weight"), "evaluate")
            x, y = self.crowd_data(x, y)
        return super().evaluate(x, y, **kwargs)

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: Any = None, return_dict: bool = False) -> Any:
        """``keras.Model.train_on_batch`` on crowd targets (the forms of :meth:`fit`); no
        warm-up and no annotator summary (a loop of its own, as for any loop that bypasses
        ``fit``)."""
        _refuse_class_weight(class_weight, "train_on_batch")
        _check_sample_weight(sample_weight, "train_on_batch")
        x, y = self.crowd_data(x, y)
        return super().train_on_batch(x, y, sample_weight=sample_weight,
                                      return_dict=return_dict)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      return_dict: bool = False) -> Any:
        """``keras.Model.test_on_batch`` on crowd targets (the forms of :meth:`fit`)."""
        _check_sample_weight(sample_weight, "test_on_batch")
        x, y = self.crowd_data(x, y)
        return super().test_on_batch(x, y, sample_weight=sample_weight,
                                     return_dict=return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """``keras.Model.predict_on_batch``; annotator ids given as arrays are checked."""
        return super().predict_on_batch(self._checked_inputs(x))

    def _validation(self, data: Any) -> Any:
        if isinstance(data, (tuple, list)) and len(data) in (2, 3):
            try:
                vx, vy = self.crowd_data(data[0], data[1])
            except CrowdDataError as error:   # say which data: the same checks as fit's y
                raise CrowdDataError(f"validation_data: {error}") from None
            return (vx, vy) + tuple(data[2:])
        return data

    def confusion_matrices(self) -> np.ndarray:
        """The noise layer's annotator confusion matrices ``(A, K, K)``, rows = true class."""
        if not hasattr(self.noise_layer, "confusion_matrices"):
            raise AttributeError(f"{type(self.noise_layer).__name__} has no confusion matrices")
        return self.noise_layer.confusion_matrices()

    # ------------------------------------------------------------------ as a label model
    def predict_proba_items(self, x: Any, annotations: Any, batch_size: int = 1024) -> np.ndarray:
        """Posterior of each item's true class given its features and its annotations.

        ``p(z_i = k | x_i, y_i) ∝ p(k | x_i) · Π_a p(y_ia | z = k, a, x_i)``: the classifier's
        output times the noise layer's label distribution for each annotation when the
        classifier is certain of class ``k`` (the layer at the one-hot vector ``e_k``: the
        crowd layer's matrices; for CoNAL the item's mix ``ω_ia W_g + (1-ω_ia) W_a`` with ω
        from the gate), summed in log space. Missing annotations (-1) are ignored: an item
        without any gets the classifier's ``p(z | x)``.

        Args:
            x: the items' inputs (arrays; row ``i`` = item ``i``).
            annotations: their labels in any target form of :meth:`fit` except a dataset
                (``Annotations``, padded ``(annotator_ids, labels)``, dense items ×
                annotators with -1). After a fit on ``Annotations``, new ``Annotations``
                are matched to its annotators and classes by id and by class (codes of the
                fit when their ids are the default ``0..n-1``); other forms are codes.
            batch_size: items per forward pass.

        Returns:
            ``(items, K)`` posteriors.
        """
        fitted = self._fit_reference()
        if isinstance(annotations, Annotations) and fitted is not None:
            annotations = onto_fitted(annotations, fitted, "CrowdModel")     # by id
        return self._item_pass(x, annotations, batch_size, summarize=False)[0]

    def summarize_annotators(self, x: Any, annotations: Any, batch_size: int = 1024,
                             confusions: str = "model") -> "CrowdModel":
        """Learn ``class_priors_`` (the mean of :meth:`predict_proba_items`),
        ``confusion_matrices_`` and ``annotator_quality_`` from training items; ``fit`` on
        arrays calls it with the defaults. Returns self.

        Args:
            x, annotations, batch_size: as in :meth:`predict_proba_items`.
            confusions: where each annotator's matrix comes from. ``"model"``: the noise
                layer's, averaged over the annotator's annotations (with CoNAL the common
                matrix mixed in by each item's ω). ``"posterior"``: the annotator's labels
                tabulated against the posteriors of the items labelled (one Dawid-Skene
                M-step from this model's consensus, smoothing 0.01), which does not rely
                on how far training moved the layer's weights from their start.
        """
        if confusions not in ("model", "posterior"):
            raise ValueError(f"confusions must be 'model' or 'posterior', got {confusions!r}")
        fitted = self._fit_reference()
        if isinstance(annotations, Annotations) and fitted is not None:
            annotations = onto_fitted(annotations, fitted, "CrowdModel")     # by id
        post, (sums, counts, fallback, label_counts) = self._item_pass(
            x, annotations, batch_size, summarize=True)
        ids = annotations.annotator_ids if isinstance(annotations, Annotations) else None
        if ids is not None:   # the annotations may know fewer annotators than the layer
            a = len(ids)
            sums, counts, label_counts = sums[:a], counts[:a], label_counts[:a]
            fallback = None if fallback is None else fallback[:a]
        if confusions == "posterior":
            summary = summary_from_label_counts(post, label_counts, ids)
        else:
            summary = summary_from_posteriors(post, sums, counts, ids, fallback)
        self.crowd_summary_ = with_expected_accuracy(summary, post, annotations)
        return self

    def _summarizable(self, x: Any, y: Any) -> bool:
        """Whether ``fit(x, y)`` can summarise the annotators afterwards: class labels of
        single items given as arrays, outside ``tf.distribute``."""
        if y is None or self.is_regression or getattr(self, "_distribute_strategy", None):
            return False
        if _several_workers():
            return False
        if _as_arrays(x) is None:
            return False
        if isinstance(y, Annotations):
            return True
        labels = y[1] if isinstance(y, (tuple, list)) and len(y) == 2 else y
        return _as_arrays(labels) is not None and np.ndim(labels) == 2

    def _item_pass(self, x: Any, annotations: Any, batch_size: int,
                   summarize: bool) -> tuple[np.ndarray, Any]:
        """The posteriors ``(items, K)`` and, with ``summarize``, per annotator the sums and
        counts of the matrices in effect for its annotations, the layer's own matrices for
        annotators without any (when they do not depend on the item), and its labels
        tabulated against the posteriors (:func:`posterior_label_counts`)."""
        if self.is_regression:
            raise ValueError("predict_proba_items needs class labels: a regression noise layer "
                             "has no true class to infer")
        batch_size = check_count(batch_size, "batch_size", 1)
        arrays = _as_arrays(x)
        if arrays is None:
            raise TypeError("predict_proba_items takes x as arrays (one row per item), not a "
                            f"dataset or generator; got {type(x).__name__}")
        inputs, labels = self.crowd_data(arrays, annotations)
        if isinstance(inputs, dict) and IDS_KEY in inputs:
            x, ids = inputs[X_KEY], inputs[IDS_KEY]
        else:
            x, a = inputs, self.noise_layer.num_annotators
            ids = np.broadcast_to(np.arange(a, dtype=np.int32), labels.shape[:1] + (a,))
        if labels.ndim != 2:
            raise ValueError("predict_proba_items infers one class per item: labels must be "
                             f"(items, annotations), got shape {labels.shape} (sequences?)")
        n, a = labels.shape[0], self.noise_layer.num_annotators
        ids = np.asarray(ids, dtype=np.int32)
        posts: list = []
        sums = counts = label_counts = None   # per annotator, summed over the batches
        for lo in range(0, n, batch_size):
            hi = min(lo + batch_size, n)
            xb = keras.tree.map_structure(lambda v: v[lo:hi], x)
            log_prior, log_conf = self._item_terms(xb, ids[lo:hi])
            lb = labels[lo:hi]
            posts.append(item_posteriors(log_prior, padded_log_likelihood(log_conf, lb)))
            if summarize:
                valid = (lb >= 0) & (ids[lo:hi] >= 0)
                who = ids[lo:hi][valid]
                s, c = mean_confusions(who, np.exp(log_conf[valid]), a)
                lc = posterior_label_counts(who, lb[valid], posts[-1][np.nonzero(valid)[0]], a)
                sums, counts, label_counts = ((s, c, lc) if sums is None else
                                              (sums + s, counts + c, label_counts + lc))
        k = self._num_classes() or (posts[0].shape[1] if posts else 0)
        post = np.concatenate(posts) if posts else np.zeros((0, k))
        if not summarize:
            return post, None
        if sums is None:
            sums, counts, label_counts = np.zeros((a, k, k)), np.zeros(a), np.zeros((a, k, k))
        fallback = None
        if not self.uses_features and hasattr(self.noise_layer, "confusion_matrices"):
            fallback = np.asarray(self.noise_layer.confusion_matrices(), np.float64)
        return post, (sums, counts, fallback, label_counts)

    def _item_terms(self, xb: Any, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``log p(k | x)`` ``(b, K)`` and the log label distribution of each annotation slot
        given each true class, ``(b, slots, K, K)`` (rows = true class)."""
        out = self.classifier(xb, training=False)
        if len(out.shape) != 2:
            raise ValueError("predict_proba_items infers one class per item: the classifier "
                             f"must output (batch, classes), got {tuple(out.shape)}")
        # eager outputs: the logits of probabilities are their logs (floored: a certain
        # classifier stays finite)
        logits = out if self.from_logits else ops.log(floor_at(ops.cast(out, "float32"), 1e-30))
        log_prior = ops.convert_to_numpy(ops.log_softmax(ops.cast(logits, "float32"), -1))
        b, k = log_prior.shape
        ids_t = ops.convert_to_tensor(ids, dtype="int32")
        rows = []
        for c in range(k):   # the layer at each class's one-hot vector (K calls, not A)
            onehot = ops.convert_to_tensor(np.tile(np.eye(k, dtype="float32")[c], (b, 1)))
            parts = [onehot, ids_t, xb] if self.uses_features else [onehot, ids_t]
            rows.append(ops.convert_to_numpy(ops.cast(self.noise_layer(parts), "float32")))
        noisy = np.stack(rows, axis=2).astype(np.float64)           # (b, slots, K, K)
        top = noisy.max(axis=-1, keepdims=True)
        log_conf = noisy - top - np.log(np.exp(noisy - top).sum(axis=-1, keepdims=True))
        return log_prior.astype(np.float64), log_conf

    def _fit_reference(self) -> Any:
        """What new ``Annotations`` are matched to by id (:func:`onto_fitted`): the fit's
        annotations, or after loading a saved model the annotator ids and classes saved with
        it; None before a fit on ``Annotations``."""
        fitted = getattr(self, "annotations_", None)
        return fitted if fitted is not None else getattr(self, "_fitted_codes", None)

    def save_assets(self, dir_path: str) -> None:
        """Save ``crowd_summary_`` (when learned) and the fit's annotator ids and classes
        (after a fit on ``Annotations``) with the model (``.keras``)."""
        summary = getattr(self, "crowd_summary_", None)
        if summary is not None:
            np.savez(os.path.join(dir_path, _SUMMARY_FILE), **summary.to_arrays())
        fitted = self._fit_reference()
        if fitted is not None:
            np.savez(os.path.join(dir_path, _FITTED_FILE),
                     annotator_ids=np.asarray(list(fitted.annotator_ids)),
                     classes=np.asarray(list(fitted.classes)))

    def load_assets(self, dir_path: str) -> None:
        path = os.path.join(dir_path, _SUMMARY_FILE)
        if os.path.exists(path):
            with np.load(path, allow_pickle=False) as arrays:
                self.crowd_summary_ = CrowdSummary.from_arrays(arrays)
        path = os.path.join(dir_path, _FITTED_FILE)
        if os.path.exists(path):   # else new Annotations were read by their own codes
            with np.load(path, allow_pickle=False) as arrays:
                self._fitted_codes = _FittedCodes(arrays["annotator_ids"].tolist(),
                                                  arrays["classes"].tolist())

    # ------------------------------------------------------------------ data
    def predict(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        """``keras.Model.predict``; annotator ids given as arrays in ``{"x", "annotator_ids"}``
        are checked first (one pass)."""
        return super().predict(self._checked_inputs(x), *args, **kwargs)

    def _checked_inputs(self, x: Any) -> Any:
        """``x`` with its ``annotator_ids`` checked when they are arrays (not a dataset)."""
        if isinstance(x, dict) and IDS_KEY in x and concrete_values(x[IDS_KEY]) is not None:
            return {**x, IDS_KEY: self._checked_ids(concrete_values(x[IDS_KEY]), "inputs")}
        return x

    def crowd_data(self, x: Any, y: Any) -> tuple[Any, Any]:
        """``(inputs, targets)`` as the model consumes them, after checking the targets.

        One vectorised pass over the arrays given (never an op in the training step):
        annotator ids must be integer codes in ``0..A-1`` (-1 = padding: ``-2`` or ``1.7``
        raise), labels integer codes in ``0..K-1`` (-1 = missing). A ``tf.data`` dataset or
        a generator is consumed as it is (``annotation_dataset`` checks what it is built
        from).

        Raises:
            CrowdDataError: misaligned rows, unknown annotators, labels out of range.
        """
        if y is None:
            return self._checked_inputs(x), y
        if (isinstance(x, dict) and set(x) == {X_KEY, IDS_KEY}
                and not isinstance(y, (Annotations, tuple, list))):
            # the indexed inputs that a dataset yields and predict takes, with their labels:
            # the padded targets (annotator_ids, labels)
            x, y = x[X_KEY], (x[IDS_KEY], y)
        try:
            n = n_rows(x)
        except TypeError:   # a dataset or generator: it has no rows to count
            raise TypeError(f"targets y are given, so x must be arrays (one row per item), got "
                            f"{type(x).__name__}; a tf.data.Dataset or generator yields "
                            "(inputs, targets) itself, with y=None, as does a "
                            "keras.utils.PyDataset's __getitem__ "
                            "(crowd_keras.inputs.annotation_dataset builds one)") from None
        if not self.is_regression and self._num_classes() is None:
            # a layer or a subclassed model has no output_shape before its first call: its
            # classes from a symbolic call on x's shapes, so that labels past them are refused
            # here (else a backend error in the loss, or a NaN loss on JAX and on GPUs)
            strategy = getattr(self, "_distribute_strategy", None)   # its variables' scope
            with contextlib.nullcontext() if strategy is None else strategy.scope():
                self._classifier_classes = _symbolic_classes(self.classifier, x)
        if isinstance(y, Annotations):
            if self.is_regression:
                raise CrowdDataError("Annotations hold class labels; a regression noise layer "
                                     "needs float targets (dense with NaN, or padded)")
            fitted = self._fit_reference()
            if fitted is not None:   # evaluate, validation, more fitting: by id, as predict
                y = onto_fitted(y, fitted, "CrowdModel")
            k = self._num_classes()
            if k is not None and y.n_classes != k:
                raise CrowdDataError(f"annotations have {y.n_classes} classes but the classifier "
                                     f"outputs {k}")
            a = self.noise_layer.num_annotators
            if y.n_annotators > a:   # else trained, then refused by the annotator summary
                raise CrowdDataError(f"annotations have {y.n_annotators} annotators but the noise "
                                     f"layer has num_annotators={a}")
            ids, labels = y.to_padded()
            y_kind = "Annotations"
        elif isinstance(y, (tuple, list)) and len(y) == 2:
            ids, labels = (np.asarray(v) for v in y)
            if ids.ndim != 2 or labels.shape[0] != ids.shape[0] or labels.shape[-1] != ids.shape[1]:
                raise CrowdDataError(f"padded targets: annotator_ids must be (items, k) and labels "
                                     f"(items, [time,] k); got {ids.shape} and {labels.shape}")
            y_kind = "padded targets"
        else:
            labels = np.asarray(y)
            a = self.noise_layer.num_annotators
            if labels.ndim < 2 or labels.shape[-1] != a:
                gold = (" (true labels, one per item, score the classifier: "
                        "model.classifier.evaluate)" if labels.ndim == 1 else "")
                raise CrowdDataError(f"dense targets must be (items, [time,] annotators={a}) with "
                                     "-1 (NaN for regression) where missing; got shape "
                                     f"{labels.shape}{gold}")
            ids, y_kind = None, "dense targets"
        if n is not None and labels.shape[0] != n:
            raise CrowdDataError(f"{y_kind} have {labels.shape[0]} items but x has {n} rows")
        labels = self._checked_labels(labels, y_kind)
        if ids is None:
            return x, labels
        ids = self._checked_ids(ids, y_kind)
        self._check_no_label_at_padding(ids, labels, y_kind)
        return {X_KEY: x, IDS_KEY: ids}, labels

    def _num_classes(self) -> Optional[int]:
        if getattr(self.noise_layer, "num_classes", None):
            return int(self.noise_layer.num_classes)
        try:
            return int(self.classifier.output_shape[-1])
        except (AttributeError, ValueError, TypeError, IndexError):
            return getattr(self, "_classifier_classes", None)

    def _checked_ids(self, ids: Any, where: str) -> np.ndarray:
        """(items, k) annotator codes in ``0..A-1``, -1 = padding (one vectorised pass)."""
        return checked_codes(ids, self.noise_layer.num_annotators, "annotator id",
                             f"{where} annotator_ids", "num_annotators")

    def _check_no_label_at_padding(self, ids: np.ndarray, labels: np.ndarray,
                                   where: str) -> None:
        check_no_label_at_padding(ids, labels, where)

    def _checked_labels(self, labels: np.ndarray, where: str) -> np.ndarray:
        if self.is_regression:
            if labels.dtype.kind not in "iuf":
                raise CrowdDataError(f"{where}: regression targets must be numbers, got "
                                     f"{labels.dtype}")
            with np.errstate(over="ignore"):   # beyond float32: inf, refused by name
                return checked_answers(labels.astype(np.float32), where)
        return checked_codes(labels, self._num_classes(), "label", f"{where} labels",
                             "classes")

    # ------------------------------------------------------------------ serialization
    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy),
                "from_logits": self.from_logits,
                "warmup_epochs": self.warmup_epochs,
                "classifier": keras.saving.serialize_keras_object(self.classifier),
                "noise_layer": keras.saving.serialize_keras_object(self.noise_layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: Any = None) -> "CrowdModel":
        config = dict(config)
        classifier = keras.saving.deserialize_keras_object(config.pop("classifier"),
                                                           custom_objects=custom_objects)
        noise_layer = keras.saving.deserialize_keras_object(config.pop("noise_layer"),
                                                            custom_objects=custom_objects)
        return cls(classifier, noise_layer, **config)


def _refuse_class_weight(class_weight: Any, method: str) -> None:
    if class_weight is not None:
        # Keras reads a target row as one class (its argmax): here a row holds several
        # annotators' labels, so the weights would fall on slot positions, not classes.
        raise ValueError(f"class_weight is not supported by CrowdModel.{method}: a target row "
                         "holds several annotators' labels, not one class; give "
                         "sample_weight (one weight per item) instead")


class _FittedCodes(NamedTuple):
    """The fit's annotator ids and classes, restored with a saved model."""
    annotator_ids: list
    classes: list


def _check_sample_weight(weights: Any, method: str) -> None:
    """A NaN weight made every weight NaN (the error then blamed the posteriors), a negative
    one trained against the labels: refused, naming the row."""
    if weights is None or not (isinstance(weights, (list, tuple)) or _array_like(weights)):
        return   # a dataset's weights come with its batches
    try:
        values = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise CrowdDataError(f"{method}: sample_weight must be numbers") from None
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f"row {at[0]}" if len(at) == 1 else f"{at}"
        raise CrowdDataError(f"{method}: sample_weight {float(values[at])!r} at {where} is not a "
                             f"finite number >= 0 ({int(bad.sum())} such)")


def _as_arrays(x: Any) -> Any:
    """``x`` as numpy arrays when it is arrays (numpy, a pandas frame, a backend tensor, or
    a dict/list of them, as ``keras.Model.fit`` takes), else None (a dataset, a generator)."""
    if isinstance(x, (dict, list, tuple)):
        leaves = keras.tree.flatten(x)
        if not leaves or not all(_array_like(v) for v in leaves):
            return None
        return keras.tree.map_structure(np.asarray, x)
    return np.asarray(x) if _array_like(x) else None


def _symbolic_classes(classifier: Any, x: Any) -> Optional[int]:
    """The last axis of ``classifier``'s output on inputs shaped as ``x``'s arrays (floats in
    ``floatx``, as ``fit`` feeds them), from a symbolic call (it builds an unbuilt layer, as
    the first call of ``fit`` would); None for a dataset, an unknown size or a failed call."""
    arrays = _as_arrays(x)
    if arrays is None:
        return None

    def spec(a: np.ndarray) -> Any:
        dtype = keras.backend.standardize_dtype(a.dtype)
        if keras.backend.is_float_dtype(dtype):
            dtype = keras.backend.floatx()
        return keras.KerasTensor((None,) + tuple(a.shape[1:]), dtype=dtype)

    try:
        return int(classifier(keras.tree.map_structure(spec, arrays)).shape[-1])
    except Exception:   # noqa: BLE001 - the call on data will say what is wrong
        return None


def _array_like(v: Any) -> bool:
    return hasattr(v, "shape") and hasattr(v, "__array__") and np.ndim(v) > 0


def _several_workers() -> bool:
    """True inside a ``MultiWorkerMirroredStrategy`` with more than one worker."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    strategy = tf.distribute.get_strategy()
    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode())


class _NoiseWarmup(keras.callbacks.Callback):
    """Bypass ``model.noise_layer`` during the first ``model.warmup_epochs`` epochs."""

    def __init__(self, model: "CrowdModel") -> None:
        super().__init__()
        self._crowd_model = model

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        model = self._crowd_model
        done = float(ops.convert_to_numpy(model.epochs_trained))
        model.noise_on.assign(0.0 if done < model.warmup_epochs else 1.0)

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        # the epoch's training and validation are done: switch the layer back on before the
        # callbacks that follow read the weights (ModelCheckpoint saving the model,
        # EarlyStopping keeping the best weights to restore), so that no saved or restored
        # model is left bypassing its noise layer
        self._crowd_model.epochs_trained.assign_add(1.0)
        self._crowd_model.noise_on.assign(1.0)

    def on_test_begin(self, logs: Optional[dict] = None) -> None:
        # validation scores the model as it is saved and restored (noise layer on), not the
        # bypassed one trained in a warm-up epoch: else val_loss compared two models
        model = self._crowd_model
        self._training_state = float(ops.convert_to_numpy(model.noise_on))
        model.noise_on.assign(1.0)

    def on_test_end(self, logs: Optional[dict] = None) -> None:
        self._crowd_model.noise_on.assign(getattr(self, "_training_state", 1.0))

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        self._crowd_model.noise_on.assign(1.0)
