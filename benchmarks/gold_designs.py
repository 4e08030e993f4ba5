"""The default label model with gold on some items, drawn two ways, on the simulated failure
kinds: against majority vote and against the other targets (step 25 of the decision record).

Every crowd of ``failure_kinds.py`` (each kind and seed at each ``--scale``, and the sparse
spammy crowds) gets gold on ``--n-gold`` items drawn (seeded) in two designs: a random sample
of the items, scored by accuracy on the other items; and a class-balanced sample (an equal
share per class, as far as a class has items), scored by mean recall over classes on the
other items. ``AutoLabelModel(target_prior=...)`` is fitted with that gold for the default
(``"gold"``: the gold's class mix), ``"uniform"`` and ``"learned"``. Per kind and design: the
mean gain over majority vote; then the (crowd, design) pairs more than one item below voting
(``1/n`` in accuracy, ``1/(K n_min)`` in mean recall, on the items scored)::

    python benchmarks/gold_designs.py [--seeds 0 1 2] [--scales 0.5 1.0] [--n-gold 50]
"""
from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from crowd_keras.aggregation import AutoLabelModel, MajorityVote  # noqa: E402
from failure_kinds import (add_crowd_arguments, by_kind, make_crowd, map_crowds,  # noqa: E402
                           mean_recall)

TARGETS = ("gold", "uniform", "learned")
DESIGNS = ("random", "balanced")


def draw_gold(y: np.ndarray, design: str, n_gold: int, key: list) -> np.ndarray:
    """Sorted item rows of the gold: ``n_gold`` at random, or ``n_gold // K`` of each class
    present (all of a class with fewer)."""
    rng = np.random.default_rng(key)
    if design == "random":
        return np.sort(rng.choice(len(y), n_gold, replace=False))
    present = np.flatnonzero(np.bincount(y) > 0)
    quota = n_gold // len(present)
    return np.sort(np.concatenate([
        rng.choice(np.flatnonzero(y == c), min(quota, int((y == c).sum())), replace=False)
        for c in present]))


def evaluate(job: tuple) -> dict:
    """One crowd: each target's gain over voting in each design, on the items without gold."""
    kind, seed, scale, n_gold = job
    crowd = make_crowd(kind, seed, scale)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    k, ids, classes = ann.n_classes, np.asarray(ann.item_ids), np.asarray(ann.classes)
    vote = MajorityVote().fit(ann).predict()
    out = {"kind": kind, "seed": seed, "scale": scale, "n": len(y)}
    for d, design in enumerate(DESIGNS):
        rows = draw_gold(y, design, n_gold, [zlib.crc32(kind.encode()), seed,
                                             int(scale * 100), d])
        gold = dict(zip(ids[rows].tolist(), classes[y[rows]].tolist()))
        rest = np.setdiff1d(np.arange(len(y)), rows)
        counts = np.bincount(y[rest], minlength=k)

        def score(labels: np.ndarray) -> float:
            if design == "random":
                return float((labels[rest] == y[rest]).mean())
            return mean_recall(labels[rest], y[rest], k)

        item = 1.0 / len(rest) if design == "random" else \
            1.0 / ((counts > 0).sum() * counts[counts > 0].min())
        gains = {target: score(AutoLabelModel(target_prior=target).fit(ann, gold=gold)
                               .predict()) - score(vote) for target in TARGETS}
        out[design] = {"gains": gains, "item": item}
    return out


def below(r: dict, design: str, target: str) -> bool:
    return r[design]["gains"][target] < -r[design]["item"] - 1e-12


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_crowd_arguments(parser)
    parser.add_argument("--n-gold", type=int, default=50)
    args = parser.parse_args(argv)
    results = map_crowds(evaluate, args, args.n_gold)
    print(f"Gold on {args.n_gold} items per crowd; seeds {args.seeds} of every kind at scales "
          f"{args.scales}, the sparse spammy crowds seeds {args.spammy_seeds}. Mean gain over "
          "majority vote on the items without gold: accuracy (random gold), mean recall over "
          "classes (class-balanced gold).\n")
    head = " | ".join(f"{d}: {t}" for d in DESIGNS for t in TARGETS)
    print(f"| kind | scale | crowds | {head} |")
    print("|---|---:|---:|" + "---:|" * (len(DESIGNS) * len(TARGETS)))
    for (kind, scale), rows in by_kind(results).items():
        cells = " | ".join(f"{np.mean([r[d]['gains'][t] for r in rows]):+.4f}"
                           for d in DESIGNS for t in TARGETS)
        print(f"| {kind} | {scale if not kind.startswith('spammy') else '-'} | {len(rows)} | "
              f"{cells} |")
    print()
    for target in TARGETS:
        flags = {d: [f"{r['kind']} {r['seed']} {r['scale']}" for r in results
                     if below(r, d, target)] for d in DESIGNS}
        two = np.mean([np.mean([r[d]["gains"][target] for d in DESIGNS]) for r in results])
        print(f"- target_prior={target!r}: more than one item below voting on "
              f"{len(flags['random'])} crowds with random gold and {len(flags['balanced'])} "
              f"with class-balanced gold; mean of the two designs' gains {two:+.4f}; below: "
              + "; ".join(f"{d}: {', '.join(f) or 'none'}" for d, f in flags.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
