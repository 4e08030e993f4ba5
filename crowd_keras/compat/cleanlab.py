"""A fitted label model's results as cleanlab's multi-annotator output dictionary.

:func:`to_cleanlab` gives what ``cleanlab.multiannotator.get_label_quality_multiannotator``
returns (cleanlab 2.x: the keys, the column names and order, the dtypes, the index values
(not a wide frame's index and column names, which ``Annotations`` does not keep) and the
annotator table's order), with crowd-keras's model behind every number, for users who move
code written against cleanlab. cleanlab itself is not imported.

The scores are the label model's (they are not CROWDLAB's weighted averages):

- ``consensus_quality_score``: the calibrated chance that the consensus is right
  (``LabelModel.consensus_quality``: the held-out posterior of the consensus class);
- ``detailed_label_quality``: the calibrated chance that each annotator's label is the true
  class (``LabelModel.annotation_quality``: the held-out posterior of the label; NaN where
  the annotator gave none), so that, as in cleanlab, a label equal to the consensus scores
  the item's ``consensus_quality_score``;
- ``annotator_quality``: the annotator's expected accuracy on the items it labelled, each
  label scored by its item's posterior without the annotator's own vote
  (``annotator_quality_["expected_accuracy"]``; the model's ``Σ_k ρ_k π_a[k, k]``,
  ``"accuracy"``, where that column is absent);
- ``worst_class``: the true class on which the annotator's labels are most often wrong
  under the posteriors, ``argmax_k Σ_i q_ik [y_ia ≠ k] / Σ_i q_ik`` over the classes of the
  items it labelled (cleanlab groups by the annotator's given label instead).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np
import pandas as pd

from ..aggregation.base import LabelModel, as_annotations
from ..annotations import Annotations

__all__ = ["to_cleanlab", "LABEL_QUALITY_COLUMNS", "ANNOTATOR_STATS_COLUMNS",
           "DETAILED_PREFIX", "CLEANLAB_ONLY_ARGUMENTS"]

#: cleanlab's ``label_quality`` columns, in its order
LABEL_QUALITY_COLUMNS = ("consensus_label", "consensus_quality_score", "annotator_agreement",
                         "num_annotations")
#: cleanlab's ``annotator_stats`` columns, in its order
ANNOTATOR_STATS_COLUMNS = ("annotator_quality", "agreement_with_consensus", "worst_class",
                           "num_examples_labeled")
#: prefix of cleanlab's ``detailed_label_quality`` columns (then the annotator id)
DETAILED_PREFIX = "quality_annotator_"
#: arguments of cleanlab's ``get_label_quality_multiannotator`` without a counterpart here,
#: and where their job is done instead (named in the TypeError of :func:`to_cleanlab`)
CLEANLAB_ONLY_ARGUMENTS = {
    "labels_multiannotator": "fit the label model on Annotations.from_wide(labels_multiannotator)",
    "pred_probs": "pass them to the label model's fit(annotations, pred_probs=...)",
    "consensus_method": "the consensus is the label model's (fit another model for another)",
    "quality_method": "the scores are the label model's consensus_quality and "
                      "annotation_quality",
    "calibrate_probs": "fit(annotations, pred_probs=...) learns the classifier's weight "
                       "(classifier_weight_)",
    "return_weights": "the classifier's weight is the model's classifier_weight_ and the "
                      "annotators' quality its annotator_quality_",
    "verbose": "to_cleanlab prints nothing",
    "label_quality_score_kwargs": "the scores are the label model's, not "
                                  "cleanlab.rank.get_label_quality_scores'",
}


def _fraction(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0 (no label: no agreement)."""
    out = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def worst_classes(ann: Annotations, posteriors: np.ndarray) -> np.ndarray:
    """(A,) int64 the true class with the highest expected error rate of each annotator,
    ``Σ_i q_ik [y_ia ≠ k] / Σ_i q_ik`` over its labels, among the classes that are the
    consensus of at least one of its items, as cleanlab's worst class is among the consensus
    classes of its items (-1 for an annotator without labels). A class that only holds a
    posterior's rounding dust on its items (1e-9 in all) has a rate of about 1: not a class
    it met."""
    k = ann.n_classes
    q = posteriors[ann.items]                                   # (n, K)
    mass = np.zeros((ann.n_annotators, k))
    np.add.at(mass, ann.annotators, q)
    wrong = mass.copy()
    np.add.at(wrong, (ann.annotators, ann.labels), -q[np.arange(len(q)), ann.labels])
    met = np.zeros((ann.n_annotators, k), dtype=bool)
    met[ann.annotators, np.argmax(q, axis=1)] = True
    rate = np.where(met & (mass > 1e-12), wrong / np.maximum(mass, 1e-12), -np.inf)
    worst = np.argmax(rate, axis=1).astype(np.int64)
    worst[ann.annotations_per_annotator() == 0] = -1
    return worst


def _fitted_annotators(ann: Annotations, fitted_ids: np.ndarray
                       ) -> Tuple[Annotations, np.ndarray]:
    """``ann`` without its annotators that are not among ``fitted_ids``, nor their labels,
    and the (n_annotations,) mask of the annotations kept."""
    known = pd.Index(ann.annotator_ids).isin(fitted_ids)
    keep = known[ann.annotators]
    if known.all():
        return ann, keep
    code = np.cumsum(known) - 1
    return Annotations(ann.items[keep], code[ann.annotators[keep]], ann.labels[keep],
                       item_ids=ann.item_ids, annotator_ids=ann.annotator_ids[known],
                       classes=ann.classes), keep


def _read(annotations: Any, classes: np.ndarray) -> Annotations:
    """``as_annotations(annotations)`` with the fitted ``classes`` (as ``predict_proba`` reads
    a new frame or matrix: read alone, a batch that uses a few of the classes would have only
    those); its error on cleanlab's wide layout (items × annotators, NaN where missing), the
    likely input here, says to read it with ``Annotations.from_wide``."""
    if isinstance(annotations, Annotations):
        return annotations
    return as_annotations(annotations, classes=classes)


def _check_model(label_model: Any) -> None:
    """Raise a TypeError unless ``label_model`` is a label model; cleanlab's own first
    arguments (its labels, ``pred_probs``) in its place are told where they go."""
    if isinstance(label_model, LabelModel):
        return
    if label_model is None:
        what = "nothing"
    elif isinstance(label_model, type):
        what = f"the class {label_model.__name__}"
    else:
        what = type(label_model).__name__
    hint = ""
    if label_model is None or isinstance(label_model, (pd.DataFrame, np.ndarray)):
        # get_label_quality_multiannotator(labels_multiannotator, pred_probs) moved over
        hint = (" (cleanlab's labels_multiannotator and pred_probs go to a label model: "
                "model = DawidSkene().fit(Annotations.from_wide(labels_multiannotator, "
                "n_classes=K), pred_probs=pred_probs); then to_cleanlab(model))")
    raise TypeError(f"to_cleanlab needs a fitted label model (crowd_keras.aggregation), "
                    f"got {what}{hint}")


def to_cleanlab(label_model: Optional[LabelModel] = None, annotations: Any = None, *,
                class_names: bool = False, return_detailed_quality: bool = True,
                return_annotator_stats: bool = True, **cleanlab_only: Any) -> Dict[str, Any]:
    """The dictionary of ``cleanlab.multiannotator.get_label_quality_multiannotator``.

    Args:
        label_model: a fitted label model (any of :mod:`crowd_keras.aggregation`, fitted with
            or without ``pred_probs``, in memory or partition by partition by
            ``crowd_keras.distributed.aggregate``: then give ``annotations``). Required: the
            default None is a TypeError, there so that cleanlab's call moved over as it was
            (its labels and ``pred_probs``, by position or by name) is told where they go.
        annotations: None (the fitted annotations) or other annotations with the fitted
            annotators and classes (a frame or a matrix is read with the fitted classes, so a
            batch may use a few of them), scored with ``label_model.predict_proba(annotations)``
            (the labels of annotators not in the fit are left out of every table when
            ``predict_proba`` leaves them out, counted in the model's
            ``n_unknown_annotations_``; a model that places them, the mixture of groups,
            keeps them, with a NaN ``annotator_quality``: it has no fitted one).
        class_names: False (cleanlab's layout: class codes 0..K-1 in ``consensus_label`` and
            ``worst_class``) or True (the class names of ``annotations.classes``).
        return_detailed_quality, return_annotator_stats: include those tables (as cleanlab's
            arguments of the same names). These switches and ``class_names`` are True or
            False (another value is a TypeError).
        cleanlab_only: none; cleanlab's other arguments (:data:`CLEANLAB_ONLY_ARGUMENTS`)
            are a TypeError saying where their job is done.

    Returns:
        ``{"label_quality": DataFrame (items; consensus_label, consensus_quality_score,
        annotator_agreement, num_annotations), "detailed_label_quality": DataFrame (items ×
        quality_annotator_<id>), "annotator_stats": DataFrame (annotators, sorted by
        annotator_quality then agreement_with_consensus; annotator_quality,
        agreement_with_consensus, worst_class, num_examples_labeled)}``, indexed by the
        item ids and the annotator ids. The scores are the label model's (module docstring).
        The detailed table is dense (items × annotators).
    """
    if cleanlab_only:
        said = [f"{name} ({CLEANLAB_ONLY_ARGUMENTS[name]})" if name in CLEANLAB_ONLY_ARGUMENTS
                else name for name in sorted(cleanlab_only)]
        raise TypeError(f"to_cleanlab got unexpected keyword argument(s): {'; '.join(said)}")
    _check_model(label_model)
    for name, value in (("class_names", class_names),
                        ("return_detailed_quality", return_detailed_quality),
                        ("return_annotator_stats", return_annotator_stats)):
        if not isinstance(value, (bool, np.bool_)):   # "no" was read as True
            raise TypeError(f"to_cleanlab {name} must be True or False, got "
                            f"{type(value).__name__} {value!r}")
    if annotations is None:
        label_model.predict_proba()          # raises when not fitted or fitted by partition
    elif not label_model.__sklearn_is_fitted__():
        label_model.predict_proba(annotations)               # raises NotFittedError
    given = None if annotations is None else _read(annotations,
                                                   label_model.annotations_.classes)
    consensus_score = label_model.consensus_quality(given)
    label_score = label_model.annotation_quality(given) if return_detailed_quality else None
    post = label_model.predict_proba(given)
    ann = label_model.annotations_ if given is None else given
    if given is not None and hasattr(label_model, "n_unknown_annotations_"):
        # predict_proba left the labels of annotators not in the fit out (and counted
        # them): so do the tables (a model that places them keeps them)
        ann, kept = _fitted_annotators(given, label_model.annotations_.annotator_ids)
        label_score = None if label_score is None else label_score[kept]
    consensus = np.argmax(post, axis=1)
    per_item = ann.annotations_per_item()
    agrees = ann.labels == consensus[ann.items]
    names = ann.classes if class_names else np.arange(ann.n_classes)

    label_quality = pd.DataFrame({
        "consensus_label": names[consensus],
        "consensus_quality_score": np.asarray(consensus_score, dtype=np.float64),
        "annotator_agreement": _fraction(np.bincount(ann.items, agrees, ann.n_items), per_item),
        "num_annotations": per_item.astype(np.int64),
    }, index=pd.Index(ann.item_ids))
    out: Dict[str, Any] = {"label_quality": label_quality}

    if return_detailed_quality:
        detailed = np.full((ann.n_items, ann.n_annotators), np.nan)
        detailed[ann.items, ann.annotators] = label_score
        out["detailed_label_quality"] = pd.DataFrame(
            detailed, index=pd.Index(ann.item_ids),
            columns=[f"{DETAILED_PREFIX}{a}" for a in ann.annotator_ids])

    if return_annotator_stats:
        per_annotator = ann.annotations_per_annotator()
        fitted = label_model.annotator_quality_                # by id: new annotations may
        column = "expected_accuracy" if "expected_accuracy" in fitted else "accuracy"
        quality = pd.Series(fitted[column].to_numpy(dtype=np.float64),       # code them apart
                            index=pd.Index(fitted["annotator"])).reindex(ann.annotator_ids)
        worst = worst_classes(ann, post)
        if class_names:
            worst = np.where(worst >= 0, names[np.maximum(worst, 0)].astype(object), None)
        stats = pd.DataFrame({
            "annotator_quality": quality.to_numpy(),
            "agreement_with_consensus": _fraction(
                np.bincount(ann.annotators, agrees, ann.n_annotators), per_annotator),
            "worst_class": worst,
            "num_examples_labeled": per_annotator.astype(np.int64),
        }, index=pd.Index(ann.annotator_ids))
        out["annotator_stats"] = stats.sort_values(by=["annotator_quality",
                                                       "agreement_with_consensus"])
    return out
