"""A seeded crowd simulator with known truth.

Features are Gaussian class clusters; annotators label through individual confusion
matrices, optionally replaced per annotation by one common confusion matrix with
probability ω (the CoNAL paper's synthetic protocol, Chu et al. 2021, "Synthesizing
annotations"), or drawn from a few annotator groups (the mixture-of-groups paper's
simulated scenario, Mena & Ñanculef 2019, section 4).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError

__all__ = ["SimulatedCrowd", "simulate_crowd", "DEFAULT_GROUPS", "check_seed"]

#: the keys of a group of ``simulate_crowd(groups=...)``
_GROUP_KEYS = ("name", "probability", "accuracy")

#: the confusion patterns :func:`_noise_matrix` draws
NOISE_PATTERNS = ("uniform", "asymmetric", "symmetric")

# Mena & Ñanculef, setup (1): experts, non-experts and spammers with p(g) = (0.25, 0.55, 0.20).
DEFAULT_GROUPS = (
    {"name": "experts", "probability": 0.25, "accuracy": 0.9},
    {"name": "non-experts", "probability": 0.55, "accuracy": 0.6},
    {"name": "spammers", "probability": 0.20, "accuracy": None},  # None: uniform at random
)


@dataclass(frozen=True)
class SimulatedCrowd:
    """What :func:`simulate_crowd` returns.

    Attributes:
        x: (items, features) float32 features.
        y: (items,) int64 true classes.
        annotations: the crowd's labels.
        confusion_matrices: (annotators, classes, classes) individual matrices, rows = truth.
        common_confusion: (classes, classes) shared matrix, or None.
        omega: (annotations,) probability that each annotation used the common matrix
            (aligned with ``annotations.items``), or None.
        used_common: (annotations,) bool, whether it actually did, or None.
        annotator_groups: (annotators,) group index, or None.
        group_confusions: (groups, classes, classes), or None.
        group_names: names of the groups, or None.
        class_means: (classes, features) cluster centres.
    """

    x: np.ndarray
    y: np.ndarray
    annotations: Annotations
    confusion_matrices: np.ndarray
    common_confusion: Optional[np.ndarray] = None
    omega: Optional[np.ndarray] = None
    used_common: Optional[np.ndarray] = None
    annotator_groups: Optional[np.ndarray] = None
    group_confusions: Optional[np.ndarray] = None
    group_names: Optional[tuple] = None
    class_means: Optional[np.ndarray] = None

    def annotator_accuracy(self) -> np.ndarray:
        """Each annotator's empirical accuracy against the truth, (annotators,)."""
        ann = self.annotations
        hits = np.bincount(ann.annotators, weights=ann.labels == self.y[ann.items],
                           minlength=ann.n_annotators)
        return hits / np.maximum(ann.annotations_per_annotator(), 1)


def _noise_matrix(k: int, accuracy: float, pattern: str, rng: np.random.Generator) -> np.ndarray:
    """Row-stochastic K×K matrix with `accuracy` on the diagonal.

    ``"uniform"`` spreads the error evenly over the other classes; ``"asymmetric"`` sends it
    to one other class chosen per row (CoNAL's asymmetric confusion); ``"symmetric"`` pairs
    classes at random and flips each pair into each other (CoNAL's symmetric confusion).
    """
    err = 1.0 - accuracy
    m = np.eye(k) * accuracy
    if pattern == "uniform":
        m += (1 - np.eye(k)) * err / (k - 1)
    elif pattern == "asymmetric":
        target = (np.arange(k) + rng.integers(1, k, size=k)) % k  # never the class itself
        m[np.arange(k), target] += err
    elif pattern == "symmetric":
        perm = rng.permutation(k)
        partner = np.arange(k)
        partner[perm[0:k - 1:2]] = perm[1:k:2]
        partner[perm[1:k:2]] = perm[0:k - 1:2]
        alone = partner == np.arange(k)  # odd K: the unpaired class keeps its labels
        m[np.arange(k), partner] += err
        m[alone] = np.eye(k)[alone]
    else:
        raise ValueError(f"unknown noise pattern {pattern!r}")
    return m


def check_seed(seed: Any, name: str = "seed") -> Any:
    """A simulator's ``seed``: None, a numpy ``SeedSequence`` / ``BitGenerator`` /
    ``Generator``, or an integer >= 0 (a float, a bool, a negative number are errors naming
    ``name``, not numpy's message that names none)."""
    if seed is None or isinstance(seed, (np.random.SeedSequence, np.random.BitGenerator,
                                         np.random.Generator)):
        return seed
    return check_count(seed, name, 0)


def _activity_weights(n_annotators: int, activity: Any,
                      rng: np.random.Generator) -> Optional[np.ndarray]:
    """Selection probability per annotator: None (uniform) or Zipf ``∝ 1 / rank^s`` over a
    random order of the annotators (a few busy accounts, many with a label or two)."""
    if isinstance(activity, str) and activity == "uniform":
        return None
    s = float(activity) if isinstance(activity, (int, float, np.number)) and \
        not isinstance(activity, bool) else float("nan")
    if not (s > 0 and np.isfinite(s)):
        raise CrowdDataError(f"activity must be 'uniform' or a Zipf exponent > 0, got {activity!r}")
    w = 1.0 / np.arange(1, n_annotators + 1) ** s
    return rng.permutation(w / w.sum())


def _pick_annotators(n_items: int, n_annotators: int, k: int, rng: np.random.Generator,
                     weights: Optional[np.ndarray] = None) -> np.ndarray:
    """(n_items, k) distinct annotator codes per row, without an items × annotators matrix
    (sparse regime); ``weights``: selection probabilities (None: uniform)."""
    if weights is None and k > n_annotators / 2:  # dense: a permutation per row is cheap
        return np.argsort(rng.random((n_items, n_annotators)), axis=1)[:, :k]

    def draw(n: int) -> np.ndarray:
        if weights is None:   # uniform: the same crowd for the same seed as without weights
            return rng.integers(0, n_annotators, size=(n, k))
        return rng.choice(n_annotators, size=(n, k), p=weights)

    picks = draw(n_items)
    for _ in range(200):  # redraw the repeated slots; converges in a few rounds
        s = np.sort(picks, axis=1)
        dup_rows = (s[:, 1:] == s[:, :-1]).any(axis=1)
        if not dup_rows.any():
            return picks
        picks[dup_rows] = draw(int(dup_rows.sum()))
    # heavy weights: the rest by Gumbel top-k (sampling without replacement), row by chunk
    rows = np.flatnonzero((np.diff(np.sort(picks, axis=1), axis=1) == 0).any(axis=1))
    logw = np.log(np.full(n_annotators, 1.0 / n_annotators) if weights is None else weights)
    for start in range(0, len(rows), 1024):
        chunk = rows[start:start + 1024]
        keys = logw - np.log(-np.log(rng.random((len(chunk), n_annotators))))
        picks[chunk] = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    return picks


def _sample_rows(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of `probs` (inverse CDF, vectorized)."""
    u = rng.random((probs.shape[0], 1))
    return np.minimum((np.cumsum(probs, axis=1) < u).sum(axis=1), probs.shape[1] - 1)


def simulate_crowd(n_items: int = 1000, n_classes: int = 4, n_annotators: int = 30,
                   annotations_per_item: int = 3, n_features: int = 10, class_sep: float = 3.0,
                   annotator_accuracy: Union[float, Sequence[float]] = (0.5, 0.9),
                   individual_noise: str = "uniform", common_noise: Optional[str] = None,
                   common_strength: float = 0.6, common_proportion: float = 0.5,
                   groups: Any = None, activity: Any = "uniform",
                   seed: Optional[int] = 0) -> SimulatedCrowd:
    """Simulate a crowd labelling Gaussian class clusters, with known truth.

    Args:
        n_items, n_classes, n_annotators: sizes.
        annotations_per_item: distinct annotators per item (chosen uniformly).
        n_features, class_sep: cluster centres are N(0, class_sep²/n_features) per feature,
            so centres lie about ``class_sep·√2`` apart, with unit-variance noise around them.
        annotator_accuracy: an accuracy, or a (low, high) range sampled uniformly per
            annotator, for the individual matrices.
        individual_noise: ``"uniform"``, ``"asymmetric"`` or ``"symmetric"`` (see
            :func:`_noise_matrix`).
        common_noise: None, ``"asymmetric"`` or ``"symmetric"``: a common confusion matrix
            with off-diagonal mass ``common_strength`` per row, used for annotation (i, r)
            with probability ω_ri = σ(û_r·v̂_i·4 + b), from hidden annotator and instance
            embeddings, with b set so that the mean ω over the annotations equals
            ``common_proportion``.
        common_strength: the common matrix's off-diagonal mass per row, in [0, 1] (CoNAL's
            noise strength).
        common_proportion: the mean share ω of annotations drawn from the common matrix, in
            [0, 1].
        groups: None; ``"default"`` for experts / non-experts / spammers; or a sequence of
            dicts ``{"name", "probability", "accuracy"}`` (accuracy None = a spammer answering
            uniformly at random). Annotators are assigned a group with those probabilities
            and label with the group's matrix (overrides ``annotator_accuracy``).
        activity: who labels how much: ``"uniform"`` (every annotator equally likely per item)
            or a Zipf exponent ``s > 0``: annotator selection ∝ ``1 / rank^s`` over a random
            order (``1.0``: a few busy accounts and a long tail with one or two labels, as on
            real crowdsourcing platforms).
        seed: the random seed; the same seed gives the same crowd.
    """
    # types first: a float size or a string fraction failed later with numpy's message
    for name, value, low in (("n_items", n_items, 1), ("n_classes", n_classes, 2),
                             ("n_annotators", n_annotators, 1),
                             ("annotations_per_item", annotations_per_item, 1)):
        if isinstance(value, bool) or not isinstance(value, Integral):
            check_count(value, name, low)          # the TypeError naming it
    check_number(class_sep, "class_sep")
    for name, value in (("common_strength", common_strength),
                        ("common_proportion", common_proportion)):
        check_number(value, name, -np.inf)
    for name, value in (("individual_noise", individual_noise), ("common_noise", common_noise)):
        if not (value is None and name == "common_noise") and value not in NOISE_PATTERNS:
            raise CrowdDataError(f"{name} must be one of {NOISE_PATTERNS}"
                                 f"{' or None' if name == 'common_noise' else ''}, got {value!r}")
    seed = check_seed(seed)
    if n_classes < 2:
        raise CrowdDataError(f"n_classes must be at least 2, got {n_classes}")
    if n_items < 1 or n_annotators < 1:
        raise CrowdDataError(f"need at least one item and one annotator, got {n_items}, {n_annotators}")
    if not 1 <= annotations_per_item <= n_annotators:
        raise CrowdDataError(f"annotations_per_item must be in 1..{n_annotators}, got "
                             f"{annotations_per_item}")
    if not 0.0 <= common_proportion <= 1.0 or not 0.0 <= common_strength <= 1.0:
        raise CrowdDataError("common_proportion and common_strength must be in [0, 1]")
    check_count(n_features, "n_features", 1)   # 0 features: every x would be empty
    acc_arg = np.asarray(annotator_accuracy, dtype=float)
    if acc_arg.shape not in ((), (2,)) or not ((acc_arg >= 0) & (acc_arg <= 1)).all() or \
            (acc_arg.shape == (2,) and acc_arg[0] > acc_arg[1]):
        # outside [0, 1] the confusion rows would hold negative "probabilities"
        raise CrowdDataError(f"annotator_accuracy must be an accuracy or a (low, high) range "
                             f"in [0, 1] with low <= high, got {annotator_accuracy!r}")
    rng = np.random.default_rng(seed)
    k = n_classes

    means = rng.standard_normal((k, n_features)) * class_sep / np.sqrt(n_features)
    y = rng.integers(0, k, size=n_items)
    x = (means[y] + rng.standard_normal((n_items, n_features))).astype(np.float32)

    group_of = group_conf = names = None
    if groups is not None:
        if isinstance(groups, str) and groups != "default":
            raise CrowdDataError(f"groups must be None, 'default' or a sequence of dicts, got "
                                 f"{groups!r}")
        spec = DEFAULT_GROUPS if isinstance(groups, str) else tuple(groups)
        bad = [g for g in spec if not (isinstance(g, Mapping) and "probability" in g and all(
            isinstance(g.get(key, 0), Real) and not isinstance(g.get(key, 0), bool)
            for key in ("probability", "accuracy") if g.get(key, 0) is not None))]
        if bad or isinstance(groups, Mapping):
            # a dict of one group was read as its keys; a missing probability was a KeyError
            raise CrowdDataError(f"groups must be a sequence of dicts with a number "
                                 f"'probability' and 'accuracy' a number or None, got "
                                 f"{bad[0] if bad else groups!r}")
        odd = next((g for g in spec if set(g) - set(_GROUP_KEYS)), None)
        if odd is not None:   # a misspelt 'accuracy' made the group spammers (accuracy None)
            raise CrowdDataError(f"groups: unknown key(s) "
                                 f"{sorted(set(odd) - set(_GROUP_KEYS), key=str)} in group "
                                 f"{odd!r}; a group has the keys {_GROUP_KEYS}")
        p = np.array([g["probability"] for g in spec], dtype=float)
        accs = [g.get("accuracy") for g in spec]
        if not len(p) or not np.isfinite(p).all() or (p < 0).any() or not p.sum() > 0 or any(
                a is not None and not 0.0 <= a <= 1.0 for a in accs):
            raise CrowdDataError(f"groups need finite probabilities >= 0 (not all 0) and accuracies "
                                 f"in [0, 1] or None, got {list(spec)!r}")
        names = tuple(g.get("name", f"group{m}") for m, g in enumerate(spec))
        group_conf = np.stack([np.full((k, k), 1.0 / k) if g.get("accuracy") is None
                               else _noise_matrix(k, g["accuracy"], individual_noise, rng)
                               for g in spec])
        group_of = rng.choice(len(spec), size=n_annotators, p=p / p.sum())
        conf = group_conf[group_of]
    else:
        acc = np.asarray(annotator_accuracy, dtype=float)
        accs = (rng.uniform(acc[0], acc[1], size=n_annotators) if acc.ndim else
                np.full(n_annotators, float(acc)))
        conf = np.stack([_noise_matrix(k, a, individual_noise, rng) for a in accs])

    who = _pick_annotators(n_items, n_annotators, annotations_per_item, rng,
                           _activity_weights(n_annotators, activity, rng))
    items = np.repeat(np.arange(n_items), annotations_per_item)
    annotators = who.ravel()
    probs = conf[annotators, y[items]]

    common = omega = used = None
    if common_noise is not None:
        common = _noise_matrix(k, 1.0 - common_strength, common_noise, rng)
        dim = 8
        u = rng.standard_normal((n_annotators, dim))
        v = x @ rng.standard_normal((n_features, dim))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        v /= np.linalg.norm(v, axis=1, keepdims=True) + 1e-12
        logits = 4.0 * np.einsum("nd,nd->n", u[annotators], v[items])
        omega = _sigmoid(logits + _bias_for_mean(logits, common_proportion))
        used = rng.random(len(omega)) < omega
        probs = np.where(used[:, None], common[y[items]], probs)

    labels = _sample_rows(probs, rng)
    ann = Annotations(items, annotators, labels, n_items=n_items, n_annotators=n_annotators,
                      n_classes=k)
    # Annotations sorts by (item, annotator): put per-annotation extras in the same order
    # (the sort only where there are extras: seconds at 10M annotations).
    order = np.lexsort((annotators, items)) if omega is not None or used is not None else None
    return SimulatedCrowd(
        x=x, y=y.astype(np.int64), annotations=ann, confusion_matrices=conf,
        common_confusion=common, omega=None if omega is None else omega[order],
        used_common=None if used is None else used[order], annotator_groups=group_of,
        group_confusions=group_conf, group_names=names, class_means=means)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # ±inf bias gives exactly 0 or 1
        return 1.0 / (1.0 + np.exp(-z))


def _bias_for_mean(logits: np.ndarray, target: float) -> float:
    """The bias b with mean σ(logits + b) = target (bisection; ±inf at the ends)."""
    if target <= 0.0:
        return -np.inf
    if target >= 1.0:
        return np.inf
    lo, hi = -50.0, 50.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if _sigmoid(logits + mid).mean() < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
