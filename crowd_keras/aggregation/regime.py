"""Which regime a set of votes is in: Snorkel labeling functions or a crowd.

Labeling functions mostly vote for one class only and abstain otherwise; crowd annotators
answer any class. Models that ignore abstentions learn nothing about a one-class function,
so the label models switch regime on :func:`one_class_vote_share` (see
:mod:`crowd_keras.aggregation.labeling_functions`).
"""
from __future__ import annotations

import numpy as np

from ..annotations import Annotations

__all__ = ["LABELING_FUNCTION_SHARE", "one_class_vote_share", "one_class_share",
           "is_labeling_function_data"]

#: Share of votes cast by one-class annotators from which the data are labeling functions.
LABELING_FUNCTION_SHARE = 0.5


def one_class_vote_share(ann: Annotations) -> float:
    """Share of all votes cast by annotators that only ever vote one class.

    High for Snorkel labeling functions, low for crowds (an annotator answering any class).
    """
    return one_class_share(ann.annotator_label_counts())


def one_class_share(votes: np.ndarray) -> float:
    """:func:`one_class_vote_share` from the (annotators, K) vote counts (sums over items, as a
    partitioned fit has them)."""
    n_votes = votes.sum(axis=1)
    one_class = (votes > 0).sum(axis=1) == 1
    return float(n_votes[one_class].sum() / max(n_votes.sum(), 1))


def is_labeling_function_data(ann: Annotations, share: float = LABELING_FUNCTION_SHARE) -> bool:
    """True when at least ``share`` of the votes come from one-class annotators."""
    return one_class_vote_share(ann) >= share
