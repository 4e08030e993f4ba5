"""The default's choice over fold draws: the rule of steps 1-29 against step 30's, replayed.

Every crowd of ``failure_kinds.py`` (each kind, seed and ``--scale``, and the sparse crowds
with 30 % spammers) gets every candidate fitted once per fold of ``--passes`` passes, the
pass ``p`` drawn with seed ``p`` exactly as ``AutoLabelModel`` draws it. A fold draw ``d``
(``random_state=d``) is then the passes ``d, d+1, ...``, so each rule is replayed on
``--draws`` draws without refitting (:func:`crowd_keras.aggregation.auto.agreement_sums` and
``AutoLabelModel.eligible_scores`` / ``choose`` on the fits of those passes):

- *steps 1-29*: three passes, the best eligible candidate (an exact tie to the earlier);
- *step 30*: passes until ``min_heldout`` annotations were held out, at most ten, and the
  eligible candidates tied with the best (``confidence`` paired standard errors) go to the
  latest in the ladder;
- each half of step 30 alone.

Per rule: the mean accuracy gain over majority vote (ties to the lowest code; each
candidate's labels as the default returns them), the (crowd, draw) pairs more than one item
below voting, the crowds below voting on some draw, and the crowds whose choice changes with
the draw; then, per pair of candidates, what the band's switches did (three passes). Draw 0 of
step 30 is checked against ``AutoLabelModel().fit`` itself. ``benchmarks/results/
default_label_model.md`` (step 30) reads it::

    python benchmarks/fold_draws.py [--draws 10] [--seeds 0 1 2 3 4 5] [--scales 0.5 1.0]
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from crowd_keras.aggregation import AutoLabelModel  # noqa: E402
from crowd_keras.aggregation.auto import (agreement_sums, annotator_weights,  # noqa: E402
                                          block_folds, content_fingerprints, copy_weights,
                                          pair_buckets, pair_sums, selection_done,
                                          selection_steps)
from crowd_keras.aggregation.em import Block  # noqa: E402
from crowd_keras.numerics import label_profile_keys  # noqa: E402
from failure_kinds import add_crowd_arguments, make_crowd, map_crowds  # noqa: E402

#: (label, passes at most, tie band): the rules replayed
RULES = [("steps 1-29", 3, False), ("step 30", 10, True), ("ten passes only", 10, False),
         ("band only", 3, True)]


def replay(job: tuple) -> dict:
    """One crowd: per rule and draw, the candidate chosen and its gain over voting (items)."""
    kind, seed, scale, n_draws = job
    crowd = make_crowd(kind, seed, scale)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    auto = AutoLabelModel()
    ladder = auto.ladder(ann.n_classes)
    k, n_folds = ann.n_classes, int(auto.n_folds)
    block = Block.from_annotations(ann)
    profiles = label_profile_keys(ann.annotator_label_counts())
    fingerprints = content_fingerprints(block, k, profiles)
    n_passes = n_draws - 1 + max(p for _, p, _ in RULES)
    fits = []                   # per pass: {fold: (test mask, [posterior per candidate])}
    for p in range(n_passes):
        folds = block_folds(block, k, profiles, fingerprints, n_folds, p)
        fits.append({f: (folds == f, [type(model)(**model.get_params()).fit(
                         ann.select(folds != f)).posteriors_ for _, model in ladder])
                     for f in range(n_folds) if (folds == f).any()})
    held = np.logical_or.reduce([t for t, _ in fits[0].values()])
    weights = annotator_weights(ann.annotations_per_annotator(), ann.annotators,
                                auto.selection_exponent)
    pairs = auto.find_copying_pairs(
        pair_sums(block, k, pair_buckets(ann.n_annotations), int(auto.max_repeats), profiles),
        ann.annotator_ids)
    weights = weights * copy_weights(block, pairs, k, held)
    names = [name for name, _ in ladder]
    labels = [AutoLabelModel(candidates=[entry]).fit(ann).predict() for entry in ladder]
    gains = [int((lab == y).sum() - (labels[0] == y).sum()) for lab in labels]
    out = {"kind": kind, "seed": seed, "scale": scale, "n": len(y), "names": names,
           "gains": gains, "rules": {}}
    for label, max_repeats, band in RULES:
        chosen = []
        for d in range(n_draws):
            used, scored = [], 0       # the fits AutoLabelModel(random_state=d) scores
            for repeat, fold in selection_steps(n_folds, max_repeats):
                if fold in fits[d + repeat]:
                    used.append(fits[d + repeat][fold])
                    scored += int(used[-1][0].sum())
                if selection_done((repeat, fold), n_folds, scored, int(auto.min_heldout)):
                    break
            sums = agreement_sums(block, [t for t, _ in used], [post for _, post in used],
                                  weights)
            scores = auto.eligible_scores(ladder, sums)
            chosen.append(names.index(auto.choose(ladder, scores, auto.tied_ if band else ())))
        out["rules"][label] = chosen
    fitted = AutoLabelModel().fit(ann).chosen_
    if fitted != names[out["rules"]["step 30"][0]]:
        raise AssertionError(f"{kind} seed {seed}: the replay of step 30 chose "
                             f"{names[out['rules']['step 30'][0]]}, AutoLabelModel {fitted}")
    return out


def summary(results: list, label: str) -> str:
    gain = np.mean([np.mean([r["gains"][c] for c in r["rules"][label]]) / r["n"]
                    for r in results])
    pairs = sum(sum(r["gains"][c] < -1 for c in r["rules"][label]) for r in results)
    crowds = sum(any(r["gains"][c] < -1 for c in r["rules"][label]) for r in results)
    varies = sum(len(set(r["rules"][label])) > 1 for r in results)
    n_draws = len(results[0]["rules"][label])
    return (f"| {label} | {gain:+.4f} | {pairs} of {len(results) * n_draws} | {crowds} | "
            f"{varies} |")


def switches(results: list, before: str, after: str) -> list:
    """Per (from, to) candidate: crowd-draws switched, better / worse / same, items net."""
    moved = defaultdict(list)
    for r in results:
        for a, b in zip(r["rules"][before], r["rules"][after]):
            if a != b:
                key = (r["names"][a].split("@")[0], r["names"][b].split("@")[0])
                moved[key].append(r["gains"][b] - r["gains"][a])
    lines = ["| from | to | crowd-draws | better | worse | same | items, net | worst |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (a, b), d in sorted(moved.items(), key=lambda kv: -len(kv[1])):
        d = np.array(d)
        lines.append(f"| {a} | {b} | {len(d)} | {(d > 0).sum()} | {(d < 0).sum()} | "
                     f"{(d == 0).sum()} | {d.sum():+d} | {d.min():+d} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_crowd_arguments(parser)
    parser.add_argument("--draws", type=int, default=10, help="fold draws (random_state 0..)")
    args = parser.parse_args(argv)
    if args.quick:
        args.draws = 2
    results = map_crowds(replay, args, args.draws)
    print(f"seeds {args.seeds} of every kind at scales {args.scales}; the sparse spammy crowds "
          f"seeds {args.spammy_seeds}; fold draws (random_state) 0-{args.draws - 1}. Gain: "
          "accuracy over majority vote (ties to the lowest code), mean over draws, then "
          "over crowds; below: more than one item below voting.\n")
    print("| rule | mean gain | (crowd, draw) pairs below | crowds below on some draw | "
          "crowds whose choice varies |")
    print("|---|---:|---:|---:|---:|")
    for label, _, _ in RULES:
        print(summary(results, label))
    print("\nWhat the band changes at three passes (band only against steps 1-29), per "
          "switch of candidate; items: the gain over voting after minus before:\n")
    print("\n".join(switches(results, "steps 1-29", "band only")))
    print("\nCrowds below voting on draw 0 under step 30 (kind, seed, scale: chosen, items; "
          "every candidate's items):\n")
    for r in results:
        c = r["rules"]["step 30"][0]
        if r["gains"][c] < -1:
            print(f"- {r['kind']} seed {r['seed']} scale {r['scale']}: {r['names'][c]} "
                  f"{r['gains'][c]:+d}; " + ", ".join(f"{n} {g:+d}"
                                                     for n, g in zip(r["names"], r["gains"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
