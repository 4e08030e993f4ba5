"""Majority vote, hard and soft."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..annotations import Annotations
from ..numerics import normalize_rows, top_classes
from .base import LabelModel, as_annotations, gold_codes

__all__ = ["MajorityVote"]

_TIE_BREAKS = ("lowest", "random", "uniform")


class MajorityVote(LabelModel):
    """Majority vote over each item's annotations.

    Args:
        soft: if True, ``predict_proba`` is the fraction of votes per class; if False
            (default) it is one-hot on the winning class.
        tie_break: how hard votes resolve ties: ``"lowest"`` (default) gives the win to the
            lowest class code; ``"random"`` picks one of the tied classes with
            ``random_state``; ``"uniform"`` splits the probability evenly among them (then
            ``predict`` returns the lowest tied code).
        random_state: seed for ``tie_break="random"``.

    Items with no annotation get the class prior: the frequency of each class among all
    votes. Annotator quality is agreement with the majority label. ``tied_items_`` /
    ``n_tied_items_`` are the annotated items whose top vote count is shared, whatever
    ``tie_break`` did with them: on binary crowds with an even number of labels per item the
    lowest-code rule can move accuracy by several points, so the count is always reported.
    """

    def __init__(self, soft: bool = False, tie_break: str = "lowest",
                 random_state: Optional[int] = None) -> None:
        self.soft = soft
        self.tie_break = tie_break
        self.random_state = random_state

    accepts_gold = True

    def fit(self, annotations: Any, gold: Any = None, **kwargs: Any) -> "MajorityVote":
        """Vote on each item; ``gold`` (see :func:`~crowd_keras.aggregation.base.gold_codes`)
        fixes the gold items' labels, and the annotators' confusions are counted against
        them there."""
        if self.tie_break not in _TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {_TIE_BREAKS}, got {self.tie_break!r}")
        ann = as_annotations(annotations, **kwargs)
        self.annotations_ = ann
        self.posteriors_ = self._posteriors_for(ann)
        if gold is not None:
            items, classes = gold_codes(ann, gold)
            self.posteriors_[items] = np.eye(ann.n_classes)[classes]
        winners = np.argmax(self.posteriors_, axis=1)
        labelled = ann.annotations_per_item() > 0
        counts = np.zeros((ann.n_annotators, ann.n_classes, ann.n_classes))
        np.add.at(counts, (ann.annotators, winners[ann.items], ann.labels), 1.0)
        prior = np.bincount(winners[labelled], minlength=ann.n_classes).astype(float)
        self._set_parameters(counts, prior)
        return self

    @property
    def tied_items_(self) -> np.ndarray:
        """Boolean (items,): annotated items whose most-voted class is not unique."""
        self._check_fitted()
        counts = self.annotations_.label_counts()
        return (top_classes(counts).sum(axis=1) > 1) & (counts.sum(axis=1) > 0)

    def _set_parameters(self, counts: np.ndarray, winners: np.ndarray) -> None:
        """Confusion matrices and prior from the (annotators, winner, label) counts and the
        number of labelled items each class won (sums over items: a partitioned fit's too)."""
        self.confusion_matrices_ = normalize_rows(counts + 1e-2)
        self.class_priors_ = (winners + 1e-2) / (winners + 1e-2).sum()

    def _vote_prior(self, ann: Annotations) -> np.ndarray:
        """The frequency of each class among all votes (uniform without votes)."""
        return normalize_rows(np.bincount(ann.labels, minlength=ann.n_classes).astype(float))

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        return self._posteriors_from_counts(ann.label_counts(), self._vote_prior(ann))

    def _posteriors_from_counts(self, counts: np.ndarray, vote_prior: np.ndarray) -> np.ndarray:
        """Posteriors from (items, K) label counts; items without votes get ``vote_prior``."""
        empty = counts.sum(axis=1) == 0
        if self.soft:
            proba = counts / np.where(empty, 1.0, counts.sum(axis=1))[:, None]
        else:
            top = top_classes(counts)
            if self.tie_break == "uniform":
                proba = top / top.sum(axis=1, keepdims=True)
            else:
                if self.tie_break == "random":
                    noise = np.random.default_rng(self.random_state).random(counts.shape)
                    pick = np.argmax(np.where(top, noise, -1.0), axis=1)
                else:
                    pick = np.argmax(top, axis=1)
                proba = np.eye(counts.shape[1])[pick]
        proba[empty] = vote_prior
        return proba
