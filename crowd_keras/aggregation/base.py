"""The surface shared by every label model of the library (scikit-learn style).

``fit(annotations) -> self``; ``predict_proba()`` gives items × classes posteriors in
``annotations.item_ids`` order; ``predict()`` the class codes; ``annotator_quality_`` and
``confusion_matrices_`` describe the annotators. Learned state ends in ``_``; nothing is
computed in ``__init__``.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..annotations import Annotations
from ..errors import CrowdDataError

__all__ = ["LabelModel", "as_annotations", "one_class_vote_share", "vote_incidence"]

# Share of votes cast by one-class annotators above which the data are labeling functions.
LABELING_FUNCTION_SHARE = 0.5


def vote_incidence(ann: Annotations) -> sp.csr_matrix:
    """(items, annotators × classes) 0/1 matrix: item i got label l from annotator a.

    The E- and M-steps of the Dawid-Skene family are products with this matrix and its
    transpose: O(annotations × classes), no Python loop over annotations or annotators.
    """
    cols = ann.annotators * ann.n_classes + ann.labels
    # annotations are sorted by (item, annotator): the CSR arrays directly, no COO sort
    indptr = np.zeros(ann.n_items + 1, dtype=np.int64)
    np.cumsum(np.bincount(ann.items, minlength=ann.n_items), out=indptr[1:])
    return sp.csr_matrix((np.ones(ann.n_annotations), cols, indptr),
                         shape=(ann.n_items, ann.n_annotators * ann.n_classes))


def one_class_vote_share(ann: Annotations) -> float:
    """Share of all votes cast by annotators that only ever vote one class.

    High for Snorkel labeling functions ("spam if it says 'check out'"), low for crowds.
    Models that ignore abstentions learn nothing about such annotators and fall below
    majority vote, so the label models switch regime on this number.
    """
    k = ann.n_classes
    votes = np.bincount(ann.annotators * k + ann.labels,
                        minlength=ann.n_annotators * k).reshape(ann.n_annotators, k)
    n_votes = votes.sum(axis=1)
    one_class = (votes > 0).sum(axis=1) == 1
    return float(n_votes[one_class].sum() / max(n_votes.sum(), 1))


def as_annotations(data: Any, **kwargs: Any) -> Annotations:
    """Accept an `Annotations`, a dense items × annotators matrix (-1 = missing) or a long frame.

    Keyword arguments go to :meth:`Annotations.from_frame` for a frame (column names,
    ``classes``) or to :meth:`Annotations.from_dense` for a matrix.
    """
    if isinstance(data, Annotations):
        return data
    if isinstance(data, pd.DataFrame):
        return Annotations.from_frame(data, **kwargs)
    if data is None:
        raise CrowdDataError("no annotations given")
    return Annotations.from_dense(data, **kwargs)


class LabelModel:
    """Base class: a model of annotators that infers each item's true label."""

    # Subclasses set these in fit().
    annotations_: Annotations
    posteriors_: np.ndarray
    confusion_matrices_: np.ndarray
    class_priors_: np.ndarray

    def fit(self, annotations: Any, **kwargs: Any) -> "LabelModel":  # pragma: no cover - abstract
        raise NotImplementedError

    def fit_predict_proba(self, annotations: Any, **kwargs: Any) -> np.ndarray:
        return self.fit(annotations, **kwargs).predict_proba()

    def _fit_labeling_functions(self, ann: Annotations, **params: Any) -> bool:
        """Delegate to the abstain-aware Dawid-Skene when `ann` looks like labeling functions.

        Called by models whose ``labeling_functions="auto"`` setting asks for it: a model that
        ignores abstentions collapses on one-class labeling functions (plain Dawid-Skene: 0.48
        on WRENCH youtube where voting gets 0.79), so in that regime the fitted state is the
        abstain-aware model's (never worse than voting). Returns True when it delegated.
        """
        mode = getattr(self, "labeling_functions", "ignore")
        if mode not in ("auto", "ignore"):
            raise ValueError(f"labeling_functions must be 'auto' or 'ignore', got {mode!r}")
        self.regime_ = "crowd"
        self.delegate_ = None
        if mode == "ignore" or one_class_vote_share(ann) < LABELING_FUNCTION_SHARE:
            return False
        from .abstain_dawid_skene import AbstainAwareDawidSkene

        inner = AbstainAwareDawidSkene(abstain="response", **params).fit(ann)
        self.regime_ = "labeling_functions"
        self.delegate_ = inner
        self.annotations_ = ann
        self.posteriors_ = inner.posteriors_
        self.class_priors_ = inner.class_priors_
        self.confusion_matrices_ = inner.confusion_matrices_
        self.n_iter_ = inner.n_iter_
        return True

    def _check_fitted(self) -> None:
        if not hasattr(self, "posteriors_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def _refuse_if_delegated(self, missing: str) -> None:
        """Raise for a model-specific query after :meth:`_fit_labeling_functions` delegated."""
        if getattr(self, "delegate_", None) is not None:
            raise RuntimeError("this fit delegated to AbstainAwareDawidSkene (labeling-function "
                               f"data): {missing}; use labeling_functions='ignore'")

    def predict_proba(self, annotations: Any = None) -> np.ndarray:
        """Items × classes label distribution.

        Without argument: the fitted items. With new annotations (same annotator ids and
        classes as in ``fit``, annotators not seen in fit are ignored and counted in
        ``n_unknown_annotations_``): the posterior under the fitted model.
        """
        self._check_fitted()
        if annotations is None:
            return self.posteriors_.copy()
        if getattr(self, "delegate_", None) is not None:
            return self.delegate_.predict_proba(annotations)
        return self._posteriors_for(self._align(as_annotations(annotations)))

    def predict(self, annotations: Any = None) -> np.ndarray:
        """Most probable class code per item (ties to the lowest code)."""
        return np.argmax(self.predict_proba(annotations), axis=1)

    def predict_labels(self, annotations: Any = None) -> np.ndarray:
        """Most probable class name per item."""
        return self.annotations_.classes[self.predict(annotations)]

    def _posteriors_for(self, annotations: Annotations) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} cannot score new annotations")

    def _align(self, new: Annotations) -> Annotations:
        """Re-code `new` onto the fitted annotator ids and classes."""
        ref = self.annotations_
        if not np.array_equal(new.classes, ref.classes):
            raise CrowdDataError(f"classes {list(new.classes)} differ from the fitted classes "
                                 f"{list(ref.classes)}")
        if np.array_equal(new.annotator_ids, ref.annotator_ids):  # same coding: nothing to do
            self.n_unknown_annotations_ = 0
            return new
        codes = pd.Index(ref.annotator_ids).get_indexer(new.annotator_ids)
        known = codes[new.annotators] >= 0
        self.n_unknown_annotations_ = int((~known).sum())
        return Annotations(new.items[known], codes[new.annotators[known]], new.labels[known],
                           item_ids=new.item_ids, annotator_ids=ref.annotator_ids,
                           classes=ref.classes)

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: id, number of annotations and estimated accuracy.

        Estimated accuracy is Σ_k prior_k π_kk: the chance that the annotator's label equals
        the truth under the fitted model.
        """
        self._check_fitted()
        ann = self.annotations_
        acc = np.einsum("k,akk->a", self.class_priors_, self.confusion_matrices_)
        return pd.DataFrame({"annotator": ann.annotator_ids,
                             "n_annotations": ann.annotations_per_annotator(),
                             "accuracy": acc})

    @staticmethod
    def _normalize_rows(counts: np.ndarray) -> np.ndarray:
        total = counts.sum(axis=-1, keepdims=True)
        k = counts.shape[-1]
        return np.divide(counts, total, out=np.full_like(counts, 1.0 / k), where=total > 0)


def check_prior(prior: Optional[Any], n_classes: int) -> Optional[np.ndarray]:
    if prior is None:
        return None
    p = np.asarray(prior, dtype=np.float64)
    if p.shape != (n_classes,) or (p < 0).any() or not np.isclose(p.sum(), 1.0):
        raise CrowdDataError(f"class prior must be {n_classes} non-negative numbers summing to 1, "
                             f"got {prior!r}")
    return p
