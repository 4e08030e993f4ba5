"""A trained crowd model as a label model: item posteriors and annotator quality (numpy).

A crowd model (``CrowdModel`` with a crowd layer or CoNAL, the mixture-of-groups and LIA
trainers) holds a classifier ``p(z | x)`` and a model of each annotator's labels given the
true class. Together they give the posterior of a training item's true class given its
features *and* its annotations (Bayes' rule, as the E-step of Dawid & Skene 1979 with the
classifier in place of the class prior)::

    p(z_i = k | x_i, y_i) ∝ p(k | x_i) · Π_{a labelled i} π_ia[k, y_ia]

with ``π_ia`` annotator ``a``'s confusion matrix for item ``i`` (rows = true class; the same
for every item in a crowd layer, ``softmax(ω_ia W_g + (1-ω_ia) W_a)`` per item in CoNAL).
Computed in log space. The helpers here are the shared numpy part; the Keras models
compute the per-item terms. :class:`CrowdConsensus` gives every model the same surface as
the label models of :mod:`crowd_keras.aggregation.base`: ``consensus_labels``,
``class_priors_``, ``confusion_matrices_`` and ``annotator_quality_`` (accuracy
``Σ_k ρ_k π_a[k, k]`` with ``ρ`` the mean posterior of the training items).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
import pandas as pd

from .aggregation.base import without_evidence
from .aggregation.quality import annotator_accuracy
from .annotations import Annotations
from .codes import show
from .errors import CrowdDataError, NotFittedError
from .numerics import softmax_rows, summing_matrix

__all__ = ["CrowdSummary", "CrowdConsensus", "confusion_log_likelihood", "item_posteriors",
           "onto_fitted",
           "padded_log_likelihood", "mean_confusions", "posterior_label_counts",
           "summary_from_posteriors", "summary_from_label_counts"]


def item_posteriors(log_prior: np.ndarray, log_likelihood: np.ndarray) -> np.ndarray:
    """``softmax(log p(k|x_i) + log p(y_i|k))`` row by row: ``(items, K)`` posteriors."""
    return softmax_rows(np.asarray(log_prior, np.float64)
                        + np.asarray(log_likelihood, np.float64))[0]


def confusion_log_likelihood(annotations: Annotations, log_confusions: np.ndarray) -> np.ndarray:
    """``Σ_a log π_a[k, y_ia]`` per item and class, ``(items, K)``, with one matrix per
    annotator, ``log_confusions (A, K, K)`` (rows = true class); items without annotations
    get 0 (their posterior is the classifier's)."""
    log_conf = np.asarray(log_confusions, np.float64)
    terms = log_conf[annotations.annotators, :, annotations.labels]     # (annotations, K)
    return summing_matrix(annotations.items, annotations.n_items) @ terms


def padded_log_likelihood(log_confusions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``Σ_slots log π[k, y]`` per item and class from per-slot matrices.

    Args:
        log_confusions: ``(items, slots, K, K)`` log confusion of each annotation slot (rows
            = true class), e.g. a noise layer evaluated at each class's one-hot vector.
        labels: ``(items, slots)`` label codes, -1 where there is no annotation (ignored).

    Returns:
        ``(items, K)``.
    """
    labels = np.asarray(labels)
    valid = labels >= 0
    safe = np.where(valid, labels, 0)
    picked = np.take_along_axis(log_confusions, safe[:, :, None, None], axis=-1)[..., 0]
    return np.where(valid[:, :, None], picked, 0.0).sum(axis=1)


def mean_confusions(annotators: np.ndarray, confusions: np.ndarray,
                    n_annotators: int) -> tuple[np.ndarray, np.ndarray]:
    """Per annotator, the mean of the per-annotation matrices and the number of them.

    Args:
        annotators: ``(m,)`` annotator code of each annotation.
        confusions: ``(m, K, K)`` the matrix in effect for that annotation.
        n_annotators: ``A``.

    Returns:
        ``(sums (A, K, K), counts (A,))``: sums, not means, so that batches add up; divide by
        ``counts`` (annotators without annotations have 0).
    """
    m, k = confusions.shape[0], confusions.shape[-1]
    total = summing_matrix(np.asarray(annotators), n_annotators) @ confusions.reshape(m, k * k)
    counts = np.bincount(np.asarray(annotators), minlength=n_annotators).astype(np.float64)
    return np.asarray(total).reshape(n_annotators, k, k), counts


def posterior_label_counts(annotators: np.ndarray, labels: np.ndarray,
                           posteriors: np.ndarray, n_annotators: int) -> np.ndarray:
    """``C[a, k, j] = Σ_{i: y_ia = j} p(z_i = k | ...)``: each annotator's labels tabulated
    against the posteriors of the items they labelled (Dawid & Skene's M-step counts).

    Args:
        annotators, labels: ``(m,)`` codes of each annotation.
        posteriors: ``(m, K)`` the posterior of each annotation's item.
        n_annotators: ``A``.

    Returns:
        ``(A, K, K)``, rows = true class.
    """
    k = posteriors.shape[1]
    rows = np.asarray(annotators) * k + np.asarray(labels)
    counts = summing_matrix(rows, n_annotators * k) @ np.asarray(posteriors, np.float64)
    return np.asarray(counts).reshape(n_annotators, k, k).transpose(0, 2, 1)


@dataclass(frozen=True)
class CrowdSummary:
    """What a crowd model learned about its training items' annotators.

    Attributes:
        class_priors: ``(K,)`` ρ, the mean posterior of the training items.
        confusion_matrices: ``(A, K, K)`` each annotator's confusion (rows = true class),
            averaged over that annotator's training annotations where it varies by item;
            NaN for annotators without any where it does.
        n_annotations: ``(A,)`` training annotations per annotator.
        annotator_ids: ``(A,)`` the annotators' ids (codes when none were given).
        expected_accuracy: ``(A,)`` or None: each annotator's labels scored by their items'
            posteriors without its own vote
            (:func:`crowd_keras.aggregation.quality.annotator_accuracy`), when the
            annotations were at hand.
    """

    class_priors: np.ndarray
    confusion_matrices: np.ndarray
    n_annotations: np.ndarray
    annotator_ids: np.ndarray
    expected_accuracy: Optional[np.ndarray] = None

    def annotator_quality(self) -> pd.DataFrame:
        """``annotator``, ``n_annotations``, ``accuracy = Σ_k ρ_k π_a[k, k]`` and, when
        known, ``expected_accuracy``."""
        acc = np.einsum("k,akk->a", self.class_priors, self.confusion_matrices)
        frame = pd.DataFrame({"annotator": self.annotator_ids,
                              "n_annotations": self.n_annotations.astype(np.int64),
                              "accuracy": without_evidence(acc, self.n_annotations)})
        if self.expected_accuracy is not None:
            frame["expected_accuracy"] = self.expected_accuracy
        return frame

    def to_arrays(self) -> dict:
        """The fields as arrays (annotator ids as text when they are not numbers or text)."""
        ids = np.asarray(self.annotator_ids)
        if ids.dtype.kind not in "iuUS":
            ids = ids.astype(str)
        out = {"class_priors": self.class_priors, "confusion_matrices": self.confusion_matrices,
               "n_annotations": self.n_annotations, "annotator_ids": ids}
        if self.expected_accuracy is not None:
            out["expected_accuracy"] = self.expected_accuracy
        return out

    @classmethod
    def from_arrays(cls, arrays: Any) -> "CrowdSummary":
        fields = {name: np.asarray(arrays[name]) for name in
                  ("class_priors", "confusion_matrices", "n_annotations", "annotator_ids")}
        if "expected_accuracy" in arrays:
            fields["expected_accuracy"] = np.asarray(arrays["expected_accuracy"])
        return cls(**fields)


def with_expected_accuracy(summary: CrowdSummary, posteriors: np.ndarray,
                           annotations: Optional[Annotations]) -> CrowdSummary:
    """``summary`` with its ``expected_accuracy`` from the training ``posteriors (I, K)`` and
    ``annotations`` (unchanged when they are not :class:`Annotations`)."""
    if not isinstance(annotations, Annotations) or annotations.n_annotations == 0:
        return summary
    a = annotations.n_annotators
    conf = np.nan_to_num(summary.confusion_matrices[:a], nan=1.0 / posteriors.shape[1])
    acc = annotator_accuracy(posteriors, annotations, conf)
    return replace(summary, expected_accuracy=acc)


def summary_from_posteriors(posteriors: np.ndarray, confusion_sums: np.ndarray,
                            counts: np.ndarray, annotator_ids: Optional[Any] = None,
                            fallback: Optional[np.ndarray] = None) -> CrowdSummary:
    """A :class:`CrowdSummary` from the training posteriors ``(items, K)`` and the
    per-annotator sums and counts of :func:`mean_confusions`; ``fallback (A, K, K)``: the
    matrices of annotators without annotations (NaN without it)."""
    posteriors = np.asarray(posteriors, np.float64)
    a = len(counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = confusion_sums / counts[:, None, None]
    if fallback is not None:
        conf = np.where((counts > 0)[:, None, None], conf, fallback)
    ids = np.arange(a) if annotator_ids is None else np.asarray(annotator_ids)
    return CrowdSummary(class_priors=posteriors.mean(axis=0), confusion_matrices=conf,
                        n_annotations=counts, annotator_ids=ids)


def summary_from_label_counts(posteriors: np.ndarray, counts: np.ndarray,
                              annotator_ids: Optional[Any] = None,
                              smoothing: float = 0.01) -> CrowdSummary:
    """A :class:`CrowdSummary` whose matrices are the :func:`posterior_label_counts`
    ``counts (A, K, K)`` normalised per row after adding ``smoothing`` to every cell (as
    :class:`~crowd_keras.aggregation.DawidSkene`'s M-step)."""
    counts = np.asarray(counts, np.float64)
    conf = (counts + smoothing) / (counts.sum(-1, keepdims=True) + counts.shape[-1] * smoothing)
    ids = np.arange(len(counts)) if annotator_ids is None else np.asarray(annotator_ids)
    return CrowdSummary(class_priors=np.asarray(posteriors, np.float64).mean(axis=0),
                        confusion_matrices=conf, n_annotations=np.rint(counts.sum((1, 2))),
                        annotator_ids=ids)


def onto_fitted(new: Annotations, fitted: Annotations, who: str) -> Annotations:
    """``new`` coded as ``fitted``: annotators matched by id and labels by class, not by code.

    Annotations built from a frame of new items code their own annotators and classes (a
    subset of the workers, or of the classes, gets the codes 0, 1, ...), which a trained
    model would read as the fitted annotators and classes of those codes. Annotations whose
    ids (or classes) are the default codes ``0..n-1`` are taken as codes of the fit, as
    documented. An annotator or a class the fit did not see raises, naming it (``who``: the
    model, for the message).
    """
    def codes(given: np.ndarray, known: np.ndarray, used: np.ndarray, what: str) -> Any:
        if np.array_equal(given, known[:len(given)]) or \
                np.array_equal(given, np.arange(len(given))):
            return None
        found = pd.Index(known).get_indexer(given)
        unknown = used[found[used] < 0]
        if len(unknown):
            raise CrowdDataError(f"{who}: {what} {show(given[unknown[0]])} is not one of the "
                                 f"fitted {what}s ({len(unknown)} such)")
        return found

    a = codes(new.annotator_ids, fitted.annotator_ids, np.unique(new.annotators), "annotator")
    c = codes(new.classes, fitted.classes, np.unique(new.labels), "class")
    if a is None and c is None:
        return new
    # the side without ids of its own keeps its codes (and its size) as given
    return Annotations(new.items, new.annotators if a is None else a[new.annotators],
                       new.labels if c is None else c[new.labels], item_ids=new.item_ids,
                       annotator_ids=None if a is None else fitted.annotator_ids,
                       n_annotators=new.n_annotators if a is None else None,
                       classes=None if c is None else fitted.classes,
                       n_classes=new.n_classes if c is None else None)


class CrowdConsensus:
    """The label-model surface of a trained crowd model.

    A subclass implements ``predict_proba_items(x, annotations)`` and sets
    ``crowd_summary_`` (a :class:`CrowdSummary`) when it learns one.
    """

    def consensus_labels(self, x: Any, annotations: Any) -> np.ndarray:
        """The most probable true class code of each item (``argmax`` of
        ``predict_proba_items``; ties to the lowest code), ``(items,)``."""
        return np.argmax(self.predict_proba_items(x, annotations), axis=1)

    def predict_proba_items(self, x: Any, annotations: Any) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        # Keras' torch models are torch Modules, whose __getattr__ answers a property that
        # raised AttributeError (the summary's NotFittedError is one) with a bare "'CrowdModel'
        # object has no attribute 'annotator_quality_'": the reason is raised again here
        if name in ("class_priors_", "confusion_matrices_", "annotator_quality_"):
            self._crowd_summary()
        fallback = getattr(super(), "__getattr__", None)
        if fallback is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return fallback(name)

    def _crowd_summary(self) -> CrowdSummary:
        summary = getattr(self, "crowd_summary_", None)
        if summary is None:   # as a label model's before fit: also an AttributeError, so
            # hasattr(trainer, "annotator_quality_") is False, not raising
            raise NotFittedError(self._no_summary_reason())
        return summary

    def _no_summary_reason(self) -> str:
        """Why there is no annotator summary (a subclass may know better)."""
        return (f"this {type(self).__name__} has no annotator summary yet: it is learned by "
                "fit on arrays of one class label per item (not a tagger's per-step labels, "
                "nor a dataset), or by summarize_annotators(x, annotations) where offered")

    @property
    def class_priors_(self) -> np.ndarray:
        """``(K,)`` ρ: the mean posterior of the training items."""
        return self._crowd_summary().class_priors

    @property
    def confusion_matrices_(self) -> np.ndarray:
        """``(A, K, K)`` each annotator's confusion over its training items (rows = truth)."""
        return self._crowd_summary().confusion_matrices

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: ``annotator``, ``n_annotations``, ``accuracy = Σ_k ρ_k
        π_a[k, k]``, the chance that its label is the true class, and, when the training
        annotations were at hand, ``expected_accuracy`` (as a label model's)."""
        return self._crowd_summary().annotator_quality()

