"""Does abstaining say something about the class? Labeling functions or crowd answers.

A labeling function is a program run on every data point: where its pattern does not match
it abstains, and whether it matches depends on the content, hence on the class (Snorkel's
model and the abstain-aware Dawid-Skene model abstaining per class). A crowd worker abstains
on the items it was not given or did not pick: modelling that per class makes the latent
"class" explain who worked on what instead of what they answered (on the shared crowd
sets the per-class abstain model scores 0.21-0.80 where Dawid-Skene scores 0.77-0.94).

:func:`abstaining_is_informative` decides from the data, without gold: it holds out whole
data points, fits both models on the rest, and compares how well each predicts the held-out
points' vote values *given which functions voted*: ``log p(votes | who voted)``. Both models
predict the same thing, so the comparison is fair; the abstain model wins only when knowing
who abstained sharpens the class, as it does for labeling functions.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import scipy.sparse as sp

from crowd_keras.aggregation import AbstainAwareDawidSkene, DawidSkene
from crowd_keras.aggregation.auto import item_offsets
from crowd_keras.aggregation.vote_fit import (conditional_vote_log_likelihood,
                                              vote_log_likelihood)
from crowd_keras.annotations import Annotations

__all__ = ["abstaining_is_informative", "conditional_vote_log_likelihood", "vote_log_likelihood",
           "abstention_models", "held_out_gain", "too_few_rows", "row_folds", "check_sample",
           "sample_fraction", "FOLDS", "MAX_CHECK_VOTES"]

FOLDS = 5
#: Fewer data points than this per held-out fold cannot tell the two models apart: the label
#: matrix is then taken for labeling functions, as Snorkel takes every label matrix.
_MIN_ROWS_PER_FOLD = 20
#: The check runs on a sample of data points holding about this many votes (all of them in a
#: smaller matrix): it compares two models' held-out fit, and ~20,000 held-out votes per fold
#: settle that long before the sample does (the fit of the chosen model still uses every row).
#: Without it the check cost ten fits, several times the model's own fit at 1,000,000 rows.
MAX_CHECK_VOTES = 100_000
_SAMPLE_SALT = np.uint64(0x2545F4914F6CDD1D)   # the sample is drawn apart from the folds


def abstention_models() -> tuple:
    """The two unfitted models compared: the per-class abstain model and Dawid-Skene."""
    return (AbstainAwareDawidSkene(abstain="response", anchor="none", class_prior="learn"),
            DawidSkene(labeling_functions="ignore"))


def held_out_gain(abstain: object, crowd: object, X: sp.csr_matrix) -> float:
    """How much better the fitted abstain model predicts the votes of the held-out items
    ``X`` than the fitted crowd model (conditional vote log-likelihoods)."""
    return vote_log_likelihood(abstain, X) - vote_log_likelihood(crowd, X)


def too_few_rows(n_voted: int) -> bool:
    """Too few data points with a vote to cross-validate (then: labeling functions)."""
    return n_voted < FOLDS * _MIN_ROWS_PER_FOLD


def row_folds(item_ids: np.ndarray, seed: int) -> np.ndarray:
    """The held-out fold of each data point, from a seeded hash of its row id."""
    return item_offsets(item_ids, FOLDS, seed)


def check_sample(item_ids: np.ndarray, n_votes: int) -> Optional[np.ndarray]:
    """The data points the check uses, (rows,) bool, or None for all of them: each row kept
    with probability ``MAX_CHECK_VOTES / n_votes`` by a hash of its row id, so a block of rows
    (a partitioned ``L``) draws its share exactly as the whole matrix does."""
    fraction = sample_fraction(n_votes)
    if fraction >= 1.0:
        return None
    ids = np.asarray(item_ids).astype(np.uint64)
    h = pd.util.hash_array(ids ^ _SAMPLE_SALT, categorize=False)
    return h < np.uint64(int(fraction * 2.0 ** 64))


def sample_fraction(n_votes: int) -> float:
    """The share of rows :func:`check_sample` keeps from a matrix of ``n_votes`` votes."""
    return min(1.0, MAX_CHECK_VOTES / max(int(n_votes), 1))


def abstaining_is_informative(ann: Annotations, seed: int = 0) -> bool:
    """True when the per-class abstain model predicts held-out data points' votes better than
    Dawid-Skene (``FOLDS``-fold cross-validation over data points, folds from a seeded hash
    of the row ids); ties go to Dawid-Skene, the model with fewer parameters. A matrix too
    small to cross-validate is taken for labeling functions (True). On a large matrix it runs
    on the rows of :func:`check_sample`. The partitioned check of
    a Dask ``L`` (``partitioned.py``) is the same, block by block."""
    keep = check_sample(ann.item_ids, ann.n_annotations)
    if keep is not None:
        ann = ann.subset(np.flatnonzero(keep))
    if too_few_rows(int((ann.annotations_per_item() > 0).sum())):
        return True
    folds = row_folds(ann.item_ids, seed)
    gain = 0.0
    for fold in range(FOLDS):
        test = np.flatnonzero(folds == fold)
        train = np.flatnonzero(folds != fold)
        if not len(test) or not len(train):
            continue
        fit_on = ann.subset(train)
        abstain, crowd = (model.fit(fit_on) for model in abstention_models())
        gain += held_out_gain(abstain, crowd, ann.subset(test).vote_incidence())
    return gain > 0
