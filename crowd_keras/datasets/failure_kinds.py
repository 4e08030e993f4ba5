"""Simulated crowds of the kinds that defeat label models: the failure statistics of real crowds.

Each kind reproduces statistics that made label models fall below majority vote on real
crowds (heavy-tailed worker activity, repeated answers, copying cliques among the busiest
workers, rare classes, skewed class balance, hundreds of workers with a label or two, graded
answers with ambiguous items), or the opposite case where per-annotator confusions should win
(biased experts). The default label model is tested on every kind over seeds
(``tests/test_default_label_model.py``); :data:`FAILURE_KINDS` lists the settings.

Worker types (confusion rows = true class):

- ``"good"``: accuracy U(0.6, 0.92), errors spread evenly;
- ``"weak"``: accuracy U(1/K + 0.05, 0.6), errors spread evenly;
- ``"biased"``: a share b ~ U(0.3, 0.7) of answers is a favourite class whatever the truth;
- ``"spammer"``: one fixed answer distribution whatever the truth;
- ``"adjacent"``: graded answers, errors to the neighbouring grades;
- ``"shifted"``: a lenient or strict grader: accuracy U(0.3, 0.7), the other answers one
  grade above (lenient) or below (strict) the truth, each worker one way.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError
from .simulate import check_seed

__all__ = ["FAILURE_KINDS", "FailureCrowd", "simulate_failure_kind", "simulate_hard_crowd"]

WORKER_TYPES = ("good", "weak", "biased", "spammer", "adjacent", "shifted")

#: kind -> settings of :func:`simulate_hard_crowd` (sizes at ``scale=1``)
FAILURE_KINDS: Dict[str, Dict[str, Any]] = {
    # a few busy workers copy each other's shared wrong answers (entity-linking-like crowds)
    "prolific_cliques": dict(n_items=2000, prior=(.78, .22), n_workers=74, per_item=6,
                             activity=1.0, types={"good": .7, "weak": .3},
                             cliques=(2, 4, 0.85, 0.6), duplicate_rate=0.08),
    "cliques_moderate": dict(n_items=2040, prior=(.78, .22), n_workers=74, per_item=6,
                             activity=1.0, types={"good": .7, "weak": .3},
                             cliques=(2, 4, 0.6, 0.7), duplicate_rate=0.08),
    # heavy-tailed activity, 8 % repeated answers, the busiest workers biased to the majority
    "prolific_repeated": dict(n_items=2040, prior=(.78, .22), n_workers=74, per_item=6,
                              activity=1.1, types={"good": .6, "weak": .25, "biased": .15},
                              duplicate_rate=0.08, prolific_bias=0.4),
    # 3/92/5 classes, prolific workers, a third of them class-biased
    "skewed_prolific": dict(n_items=8000, prior=(.03, .92, .05), n_workers=57, per_item=5,
                            activity=0.8, types={"good": .5, "weak": .2, "biased": .3}),
    # 20 labels per item from 110 workers, five classes one of them 3 %
    "rare_class_dense": dict(n_items=300, prior=(.3, .25, .22, .2, .03), n_workers=110,
                             per_item=20,
                             types={"good": .5, "weak": .3, "spammer": .1, "biased": .1}),
    # the same with 461 workers, most of whom give a few labels
    "many_sparse": dict(n_items=300, prior=(.3, .25, .22, .2, .03), n_workers=461, per_item=20,
                        activity=1.0,
                        types={"good": .5, "weak": .3, "spammer": .1, "biased": .1}),
    # graded answers (5 grades), 40 % of items ambiguous between two neighbouring grades
    "ambiguous_sparse": dict(n_items=300, prior=(.1, .25, .3, .25, .1), n_workers=461,
                             per_item=20, activity=1.0,
                             types={"adjacent": .6, "weak": .25, "spammer": .15},
                             ambiguity=(0.4, 0.45)),
    # graded relevance: half the graders lenient or strict, moderately sparse, busy graders
    "lenient_strict": dict(n_items=2000, prior=(.35, .3, .2, .1, .05), n_workers=150,
                           per_item=5, activity=0.8,
                           types={"shifted": .5, "good": .3, "weak": .2}),
    # every worker labels every item; most answer a favourite class whatever the truth
    "dense_biased": dict(n_items=108, prior=(.5, .5), n_workers=39, per_item=39,
                         types={"biased": .6, "good": .2, "weak": .2}),
    # where per-annotator confusions should win: few workers, most of them class-biased
    "biased_experts": dict(n_items=1000, prior=(.25, .25, .25, .25), n_workers=20, per_item=4,
                           types={"biased": .6, "good": .2, "weak": .2}),
}


@dataclass
class FailureCrowd:
    """A simulated crowd: ``annotations`` (duplicates resolved as ``"last"``), true classes
    ``y`` (items,), the workers' ``confusions`` (workers, K, K), ``worker_types`` (workers,)
    and ``n_duplicates`` (repeated answers dropped)."""

    annotations: Annotations
    y: np.ndarray
    confusions: np.ndarray
    worker_types: np.ndarray
    n_duplicates: int


def _even_rows(acc: np.ndarray, k: int) -> np.ndarray:
    """(n, K, K) confusions with accuracies ``acc`` (n,) and errors spread evenly."""
    off = ((1 - acc) / (k - 1))[:, None, None]
    eye = np.eye(k)[None]
    return eye * acc[:, None, None] + (1 - eye) * off


def _confusions(types: np.ndarray, k: int, prior: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
    """(workers, K, K) confusion of each worker by its type code (:data:`WORKER_TYPES`)."""
    n = len(types)
    good = _even_rows(rng.uniform(0.6, 0.92, n), k)
    weak = _even_rows(rng.uniform(1.0 / k + 0.05, 0.6, n), k)
    favourite = rng.choice(k, n, p=prior)
    share = rng.uniform(0.3, 0.7, n)[:, None, None]
    biased = (1 - share) * _even_rows(rng.uniform(0.6, 0.9, n), k)
    biased[np.arange(n), :, favourite] += share[:, :, 0]
    spammer = np.repeat(rng.dirichlet(np.ones(k), n)[:, None, :], k, axis=1)
    acc = rng.uniform(0.45, 0.85, n)
    grades = np.arange(k)
    near = (np.abs(grades[:, None] - grades[None, :]) == 1).astype(float)
    near /= near.sum(axis=1, keepdims=True)
    adjacent = np.eye(k)[None] * acc[:, None, None] + (1 - acc)[:, None, None] * near[None]
    shifted = np.zeros((n, k, k))
    if (types == WORKER_TYPES.index("shifted")).any():
        # drawn only when asked for, so the other kinds keep their random streams
        hit = rng.uniform(0.3, 0.7, n)
        up = rng.random(n) < 0.5
        target = np.clip(grades[None, :] + np.where(up, 1, -1)[:, None], 0, k - 1)   # (n, K)
        shifted[np.arange(n)[:, None], grades[None, :], target] += (1 - hit)[:, None]
        shifted[:, grades, grades] += hit[:, None]
    table = np.stack([good, weak, biased, spammer, adjacent, shifted])  # (types, n, K, K)
    return table[types, np.arange(n)]


def simulate_hard_crowd(n_items: int, prior: Sequence[float], n_workers: int, per_item: int,
                        activity: Optional[float] = None, types: Optional[Dict[str, float]] = None,
                        cliques: Optional[Tuple[int, int, float, float]] = None,
                        duplicate_rate: float = 0.0, prolific_bias: float = 0.0,
                        ambiguity: Optional[Tuple[float, float]] = None,
                        seed: Optional[int] = 0) -> FailureCrowd:
    """A crowd with the given failure statistics.

    Args:
        n_items, n_workers, per_item: sizes (distinct workers per item).
        prior: class balance (K,), assigned to the class codes in a random order.
        activity: None (every worker equally likely per item) or a Zipf exponent s (worker of
            rank r chosen ``∝ r^-s``: a few busy accounts, many with a label or two).
        types: ``{worker type: share}`` (see the module docstring).
        cliques: ``(groups, size, copy, accuracy)``: the ``groups × size`` busiest workers form
            cliques; on each item a clique has one shared answer, the truth with probability
            ``accuracy`` and otherwise a wrong class of its own, which each member gives with
            probability ``copy`` instead of its own answer.
        duplicate_rate: share of answers given a second time (re-drawn at random in 30 % of
            cases); ``Annotations`` keeps the last.
        prolific_bias: the busiest 5 % of workers give the majority class with this
            probability whatever the truth.
        ambiguity: ``(share, q)``: that share of items is ambiguous, and on them every
            answer is a neighbouring grade with probability q.
        seed: the random seed.
    """
    n_items = check_count(n_items, "n_items", 1)
    n_workers = check_count(n_workers, "n_workers", 1)
    per_item = check_count(per_item, "per_item", 1)
    check_number(duplicate_rate, "duplicate_rate", 0.0, 1.0)
    # out of range, these made negative "probabilities" and sampling went on
    check_number(prolific_bias, "prolific_bias", 0.0, 1.0)
    if activity is not None:
        check_number(activity, "activity")
    if ambiguity is not None:
        if np.ndim(ambiguity) != 1 or len(ambiguity) != 2:
            raise CrowdDataError(f"ambiguity must be (share, q), got {ambiguity!r}")
        for name, value in zip(("share", "q"), ambiguity):
            check_number(value, f"ambiguity {name}", 0.0, 1.0)
    if cliques is not None:
        if np.ndim(cliques) != 1 or len(cliques) != 4:
            raise CrowdDataError(f"cliques must be (groups, size, copy, accuracy), got "
                                 f"{cliques!r}")
        check_count(cliques[0], "cliques groups", 1)
        check_count(cliques[1], "cliques size", 1)
        check_number(cliques[2], "cliques copy", 0.0, 1.0)
        check_number(cliques[3], "cliques accuracy", 0.0, 1.0)
    seed = check_seed(seed)
    if cliques is not None and cliques[0] * cliques[1] > n_workers:
        raise CrowdDataError(f"cliques of {cliques[0]} × {cliques[1]} workers exceed n_workers "
                             f"({n_workers})")
    rng = np.random.default_rng(seed)
    given = prior
    try:
        prior = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError):
        prior = np.array(np.nan)
    if prior.ndim != 1 or len(prior) < 2 or not np.isfinite(prior).all() or (prior < 0).any() \
            or prior.sum() <= 0:
        raise CrowdDataError(f"prior must be two or more non-negative shares, got {given!r}")
    if per_item > n_workers:
        raise CrowdDataError(f"per_item ({per_item}) exceeds n_workers ({n_workers})")
    # class codes in a random order of frequency, as sorted class names are: a rule that
    # favours low codes (ties to the lowest) gains nothing by construction
    prior = rng.permutation(prior / prior.sum())
    k = len(prior)
    y = rng.choice(k, n_items, p=prior)
    rank_weight = np.ones(n_workers) if activity is None else \
        1.0 / np.arange(1, n_workers + 1) ** float(activity)
    by_rank = rng.permutation(n_workers)          # by_rank[r]: the worker of activity rank r
    weight = np.empty(n_workers)
    weight[by_rank] = rank_weight / rank_weight.sum()
    types = {"good": 1.0} if types is None or (isinstance(types, dict) and not types) else types
    if not isinstance(types, dict):
        # a string was read as its letters, each an unknown worker type
        raise CrowdDataError(f"types must be a dict {{worker type: share}}, got {types!r}")
    unknown = set(types) - set(WORKER_TYPES)
    if unknown:
        raise CrowdDataError(f"unknown worker types {sorted(unknown)}; known: {WORKER_TYPES}")
    shares = np.array([types.get(t, 0.0) if isinstance(types.get(t, 0.0), Real) and
                       not isinstance(types.get(t, 0.0), bool) else np.nan
                       for t in WORKER_TYPES], dtype=float)
    if not np.isfinite(shares).all() or (shares < 0).any() or not shares.sum() > 0:
        raise CrowdDataError(f"types must give shares >= 0, not all 0, got {types!r}")
    worker_type = rng.choice(len(WORKER_TYPES), n_workers, p=shares / shares.sum())
    conf = _confusions(worker_type, k, prior, rng)
    if prolific_bias > 0:
        busiest = by_rank[:max(1, n_workers // 20)]
        conf[busiest] *= 1 - prolific_bias
        conf[busiest, :, int(np.argmax(prior))] += prolific_bias
    # distinct workers per item, weighted without replacement (Gumbel top-k)
    keys = np.log(weight)[None, :] - np.log(-np.log(rng.random((n_items, n_workers))))
    picks = np.argpartition(-keys, per_item - 1, axis=1)[:, :per_item]
    items = np.repeat(np.arange(n_items), per_item)
    workers = picks.ravel()
    cum = conf[workers, y[items]].cumsum(axis=1)
    labels = np.minimum((rng.random((len(workers), 1)) > cum).sum(axis=1), k - 1)
    if ambiguity is not None:
        share, q = ambiguity
        ambiguous = rng.random(n_items) < share
        step = rng.choice([-1, 1], n_items)
        other = np.clip(y + step, 0, k - 1)
        # at the lowest or highest grade the only neighbour is on the other side
        other = np.where(other == y, np.clip(y - step, 0, k - 1), other)
        flip = ambiguous[items] & (rng.random(len(workers)) < q)
        labels = np.where(flip, other[items], labels)
    if cliques is not None:
        groups, size, copy, accuracy = cliques
        clique_of = np.full(n_workers, -1)
        clique_of[by_rank[:groups * size]] = np.repeat(np.arange(groups), size)
        wrong = rng.integers(0, k, groups)
        wrong_for = np.where(wrong[:, None] == y[None, :], (wrong[:, None] + 1) % k,
                             wrong[:, None])
        shared = np.where(rng.random((groups, n_items)) < accuracy, y[None, :], wrong_for)
        group = clique_of[workers]
        copied = (group >= 0) & (rng.random(len(workers)) < copy)
        labels = np.where(copied, shared[np.maximum(group, 0), items], labels)
    frame = pd.DataFrame({"item": items, "worker": workers, "label": labels})
    if duplicate_rate > 0:
        again = frame.sample(frac=duplicate_rate, random_state=rng.integers(2**31))
        redo = rng.random(len(again)) < 0.3
        again.loc[redo, "label"] = rng.integers(0, k, int(redo.sum()))
        frame = pd.concat([frame, again], ignore_index=True)
    ann = Annotations.from_frame(frame, item="item", annotator="worker", label="label",
                                 classes=list(range(k)), item_ids=list(range(n_items)),
                                 annotator_ids=list(range(n_workers)), duplicates="last")
    return FailureCrowd(ann, y, conf, np.asarray(WORKER_TYPES)[worker_type], ann.n_duplicates)


def simulate_failure_kind(kind: str, seed: Optional[int] = 0, scale: float = 1.0) -> FailureCrowd:
    """The crowd of :data:`FAILURE_KINDS` ``kind`` with ``seed``; ``scale`` multiplies the
    number of items (at least 100)."""
    if not isinstance(kind, str) or kind not in FAILURE_KINDS:
        raise CrowdDataError(f"unknown failure kind {kind!r}; known: {sorted(FAILURE_KINDS)}")
    scale = check_number(scale, "scale", 0.0)
    if scale == 0:
        raise ValueError("scale must be > 0, got 0")
    seed = check_seed(seed)
    settings = dict(FAILURE_KINDS[kind])
    settings["n_items"] = max(100, int(round(settings["n_items"] * float(scale))))
    return simulate_hard_crowd(**settings, seed=seed)
