"""The adapter's decisions as functions of sums over the rows of ``L``.

:class:`~crowd_keras.integrations.snorkel.CrowdLabelModel` decides from the votes whether
abstaining is modelled (votes per row fixed by design or not) and whether one-class functions
are anchored to their votes (the co-vote misfit of the un-anchored model), and it reports
per-function weights and Snorkel's conditional probabilities. Each needs only sums over rows,
so the in-memory fit and the partitioned fit of a Dask ``L`` (:mod:`.partitioned`) decide
and report with the same functions.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from crowd_keras.aggregation.vote_fit import covote_misfit_from

__all__ = ["DEFAULT_METHOD", "LABELING_FUNCTION_METHOD", "COVOTE_MISFIT", "votes_fixed_by_design", "covote_step", "covote_misfit_from",
           "function_summary"]

# The label model behind CrowdLabelModel() (a name of the library registry): "auto" resolves
# per matrix (see CrowdLabelModel's docstring) to LABELING_FUNCTION_METHOD for labeling
# functions and to the library's "auto" model for crowd answers.
DEFAULT_METHOD = "auto"
LABELING_FUNCTION_METHOD = "abstain_dawid_skene"

# Votes per data point fixed by design (crowd assignment: var/expected below this) means
# abstaining says nothing about the class; otherwise it is modelled per class.
_FIXED_VOTES_RATIO = 0.5
# One-class labeling functions are anchored to their votes (the model only breaks ties)
# unless the un-anchored model explains the co-votes of every pair of functions to within
# this share (conditional independence holds; crowd_keras.aggregation.vote_fit measures it).
COVOTE_MISFIT = 0.1
_COVOTE_ROWS = 200_000


def votes_fixed_by_design(row_variance: float, coverage: np.ndarray) -> bool:
    """True when every data point gets (nearly) the same number of votes, as crowd work
    assigns each item to r workers; labeling functions vote independently of each other.

    Under independent abstention the variance of the votes per data point is about
    ``Σ_j q_j (1 - q_j)`` (``q_j``: coverage of function j): 0.9-1.2 times that on the WRENCH
    and Snorkel synthetic matrices, 0-0.14 times on the crowd sets (product, dog, LabelMe).

    Args:
        row_variance: variance of the number of votes per data point.
        coverage: (m,) share of the data points each function votes on.
    """
    expected = float((coverage * (1 - coverage)).sum())
    return expected <= 0 or row_variance < _FIXED_VOTES_RATIO * expected


def covote_step(model: Any, n_functions: int, n_classes: int, n_rows: int) -> Optional[int]:
    """Every how many rows the co-votes are counted (an evenly spread sample of rows is plenty
    for rates of this size), or None when the check does not apply: a model without response
    matrices, too many (function, class) pairs, or no rows."""
    if getattr(model, "response_matrices_", None) is None or \
            getattr(model, "class_balance_", None) is None or \
            n_functions * n_classes > 2000 or n_rows == 0:
        return None
    return max(-(-n_rows // _COVOTE_ROWS), 1)


def function_summary(joint: np.ndarray, n_votes: np.ndarray, mass: np.ndarray, n_rows: int,
                     mu_eps: Optional[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per-function weights (m,) and Snorkel's conditional probability table (m, k + 1, k).

    Args:
        joint: (m·k, k) ``Xᵀ probs``: ``[j·k + l, y] = Σ_i q_iy [L_ij = l]`` over the training
            rows (``probs``: the predictions on them). n_votes: (m,) votes per function.
        mass: (k,) ``Σ_i q_i``. n_rows: number of rows. mu_eps: the bound of Snorkel's
            ``fit(..., mu_eps=)`` or None for its default ``min(0.01, 10^-ceil(log10 n))``.

    The weight of a function is the mean posterior of the labels it voted (NaN: it never
    voted); ``P(lf_j = l | Y = y) = joint / mass`` (a class without mass: the function's vote
    rates), restricted to ``[mu_eps, 1 - mu_eps]`` (where the votes then fill the column, the
    excess is taken off the entries above ``mu_eps``), abstain the rest, in Snorkel's layout
    ``[j, l + 1, y]`` with abstain first.
    """
    m, k = n_votes.shape[0], mass.shape[0]
    joint = joint.reshape(m, k, k)  # [j, l, y]
    agree = np.trace(joint, axis1=1, axis2=2)
    weights = np.where(n_votes > 0, agree / np.maximum(n_votes, 1), np.nan)
    rates = joint.sum(axis=2, keepdims=True) / max(n_rows, 1)
    cond = np.where(mass > 0, joint / np.where(mass > 0, mass, 1.0), rates)
    eps = mu_eps if mu_eps is not None else min(0.01, 10.0 ** -np.ceil(np.log10(max(n_rows, 2))))
    cond = np.clip(cond, eps, 1.0 - eps)
    total = cond.sum(axis=1, keepdims=True)
    full = total > 1.0   # the votes fill the column: abstain 0, not 1 - (1 + rounding) < 0
    # the overflow comes off the entries above eps, in proportion, so that they stay in
    # [eps, 1 - eps]; only when k·eps > 1 (no such column exists) is the column rescaled
    room = cond - eps
    spare = room.sum(axis=1, keepdims=True)
    over = total - 1.0
    fits = full & (spare >= over)
    cond = np.where(fits, cond - over * room / np.where(fits, spare, 1.0),
                    np.where(full, cond / total, cond))
    return weights, np.concatenate([np.where(full, 0.0, 1.0 - total), cond], axis=1)
