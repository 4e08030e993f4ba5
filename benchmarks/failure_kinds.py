"""The default label model on the simulated failure kinds: its accuracy gain over majority
vote, crowd by crowd, against each of its candidates alone and a per-crowd oracle.

Every crowd of ``crowd_keras.datasets.simulate_failure_kind`` (each kind, each seed, at each
``--scale``) and the two sparse crowds with 30 % spammers (``--spammy-seeds``) is fitted by
``AutoLabelModel()`` and by each candidate of its ladder alone (majority vote with ties to the
lowest code is the reference). Per kind: the mean gain over voting of the default, of each
candidate alone (its labels under its own learned class prior) and of the best candidate per
crowd (oracle), the crowds where the default is more than one item below voting, and what it
chose. A second table scores each crowd as class-balanced gold would: the mean recall over
classes of voting, of the default (labels under a uniform class prior) and of
``AutoLabelModel(target_prior="learned")`` (the same choice, labels under the chosen model's
learned prior), with the latter's accuracy gain over voting; then the (crowd, design) pairs
below voting of both (step 24 of the decision record: more than one item below, in accuracy
``1/n``, in mean recall ``1/(K n_min)``, one item of the smallest class).
``benchmarks/results/default_label_model.md`` reads these tables; no decision there is taken
on the shared sets::

    python benchmarks/failure_kinds.py [--seeds 0 1 2] [--scales 0.5 1.0] [--spammy-seeds 0 1 2]
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crowd_keras.aggregation import AutoLabelModel  # noqa: E402
from crowd_keras.datasets import FAILURE_KINDS, simulate_crowd, simulate_failure_kind  # noqa: E402

#: the sparse crowds with 30 % spammers of tests/test_auto.py
SPAMMY = [{"name": "workers", "probability": 0.7, "accuracy": 0.75},
          {"name": "spammers", "probability": 0.3, "accuracy": None}]


def make_crowd(kind: str, seed: int, scale: float):
    if kind.startswith("spammy"):
        return simulate_crowd(n_items=2000, n_classes=int(kind[len("spammy"):]), n_annotators=800,
                              annotations_per_item=3, groups=SPAMMY, activity=1.0, seed=seed)
    return simulate_failure_kind(kind, seed, scale)


def evaluate(job: tuple) -> dict:
    """One crowd: the default's choice and every candidate's accuracy minus voting's."""
    kind, seed, scale = job
    crowd = make_crowd(kind, seed, scale)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    auto = AutoLabelModel().fit(ann)
    learned = auto.model_.predict()             # the chosen model alone: its learned prior
    predicted = {name.split("@")[0]:                        # dawid_skene@K: one column
                 learned if name == auto.chosen_ else model.fit(ann).predict()
                 for name, model in auto.ladder(ann.n_classes)}
    acc = {name: float((labels == y).mean()) for name, labels in predicted.items()}
    vote = next(iter(acc.values()))
    voted = next(iter(predicted.values()))                     # majority vote, the reference
    recall = {key: mean_recall(labels, y, ann.n_classes)
              for key, labels in (("vote", voted), ("default", auto.predict()),
                                  ("learned", learned))}
    counts = np.bincount(y, minlength=ann.n_classes)
    return {"kind": kind, "seed": seed, "scale": scale, "n": len(y), "chosen": auto.chosen_,
            "default": float((auto.predict() == y).mean()) - vote,
            "gains": {name: a - vote for name, a in acc.items()},
            "recall": recall, "learned_gain": float((learned == y).mean()) - vote,
            "recall_item": 1.0 / ((counts > 0).sum() * counts[counts > 0].min())}


def mean_recall(labels: np.ndarray, y: np.ndarray, k: int) -> float:
    """Mean over the classes present of the share of their items labelled right."""
    return float(np.mean([(labels[y == c] == c).mean() for c in range(k) if (y == c).any()]))


def by_kind(results: list) -> dict:
    """``{(kind, scale): [result, ...]}`` in the order the kinds first appear."""
    groups: dict = {}
    for r in results:
        groups.setdefault((r["kind"], r["scale"]), []).append(r)
    return groups


def table(results: list) -> list:
    names = list(results[0]["gains"])[1:]
    lines = ["| kind | scale | items | crowds | default | " + " | ".join(names)
             + " | oracle | default > 1 item below voting (seed: items) | chosen |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(names) + "---:|---|---|"]
    for (kind, scale), rows in by_kind(results).items():
        below = [f"{r['seed']}: {round(r['default'] * r['n']):+d}" for r in rows
                 if round(r["default"] * r["n"]) < -1]
        chosen = Counter(r["chosen"] for r in rows)
        lines.append(
            f"| {kind} | {scale if not kind.startswith('spammy') else '-'} | {rows[0]['n']} | "
            f"{len(rows)} | **{np.mean([r['default'] for r in rows]):+.4f}** | "
            + " | ".join(f"{np.mean([r['gains'][n] for r in rows]):+.4f}" for n in names)
            + f" | {np.mean([max(r['gains'].values()) for r in rows]):+.4f} | "
            f"{', '.join(below) or 'none'} | "
            + ", ".join(f"{name} {count}" for name, count in chosen.most_common()) + " |")
    return lines


def accuracy_gain(r: dict, key: str) -> float:
    """The accuracy gain over voting of ``key`` (``"default"`` or ``"learned"``) on crowd r."""
    return r["default"] if key == "default" else r["learned_gain"]


def below_voting(r: dict, key: str) -> tuple:
    """Whether ``key`` (``"default"`` or ``"learned"``) is more than one item below voting on
    crowd ``r``: (in accuracy, in mean recall)."""
    return (accuracy_gain(r, key) < -1.0 / r["n"] - 1e-12,
            r["recall"][key] - r["recall"]["vote"] < -r["recall_item"] - 1e-12)


def recall_table(results: list) -> list:
    lines = ["| kind | scale | mean recall: voting | default | target_prior='learned' | "
             "accuracy gain over voting of target_prior='learned' |",
             "|---|---:|---:|---:|---:|---:|"]
    for (kind, scale), rows in by_kind(results).items():
        mean = {key: np.mean([r["recall"][key] for r in rows]) for key in rows[0]["recall"]}
        lines.append(f"| {kind} | {scale if not kind.startswith('spammy') else '-'} | "
                     f"{mean['vote']:.4f} | {mean['default']:.4f} | {mean['learned']:.4f} | "
                     f"{np.mean([r['learned_gain'] for r in rows]):+.4f} |")
    return lines


def add_crowd_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that pick the simulated crowds (and ``--jobs``, ``--quick``, ``--data``)."""
    parser.add_argument("--seeds", nargs="*", type=int, default=list(range(6)))
    parser.add_argument("--scales", nargs="*", type=float, default=[0.5, 1.0])
    parser.add_argument("--spammy-seeds", nargs="*", type=int, default=list(range(6)))
    parser.add_argument("--jobs", type=int, default=2, help="crowds fitted at once")
    parser.add_argument("--quick", action="store_true", help="seed 0 at scale 0.25")
    parser.add_argument("--data", type=Path, help="unused: the crowds are simulated (accepted "
                        "as every benchmark's)")


def crowd_jobs(args: argparse.Namespace) -> list:
    """``[(kind, seed, scale), ...]`` of the parsed :func:`add_crowd_arguments` (``--quick``
    applied to ``args``): every kind at every scale and seed, then the spammy crowds."""
    if args.quick:
        args.seeds, args.scales, args.spammy_seeds = [0], [0.25], [0]
    jobs = [(kind, seed, scale) for scale in args.scales for kind in sorted(FAILURE_KINDS)
            for seed in args.seeds]
    return jobs + [(f"spammy{k}", seed, 1.0) for k in (2, 4) for seed in args.spammy_seeds]


def map_crowds(fn, args: argparse.Namespace, *extra) -> list:
    """``fn`` over the crowds of :func:`crowd_jobs` (each job ``(kind, seed, scale)`` with
    ``extra`` appended), ``args.jobs`` crowds at once, in order."""
    jobs = [job + tuple(extra) for job in crowd_jobs(args)]
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        return list(pool.map(fn, jobs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_crowd_arguments(parser)
    args = parser.parse_args(argv)
    results = map_crowds(evaluate, args)
    print(f"seeds {args.seeds} of every kind at scales {args.scales}; the sparse spammy crowds "
          f"(2,000 items, 3 labels each, 2 or 4 classes) seeds {args.spammy_seeds}. Mean "
          "accuracy gain over majority vote (ties to the lowest code), per crowd then averaged.\n")
    print("\n".join(table(results)))
    gains = np.array([r["default"] for r in results])
    below = sum(round(r["default"] * r["n"]) < -1 for r in results)
    oracle = np.mean([max(r["gains"].values()) for r in results])
    print(f"\nall {len(results)} crowds: default {gains.mean():+.4f} (more than one item below "
          f"voting on {below}); oracle {oracle:+.4f}; each candidate alone: "
          + ", ".join(f"{n} {np.mean([r['gains'][n] for r in results]):+.4f}"
                      for n in list(results[0]["gains"])[1:]))
    print("\n" + "\n".join(recall_table(results)))
    print()
    for key, label in (("default", "default"), ("learned", "target_prior='learned'")):
        flags = np.array([below_voting(r, key) for r in results])
        two = np.mean([accuracy_gain(r, key) + r["recall"][key] - r["recall"]["vote"]
                       for r in results]) / 2
        print(f"{label}: more than one item below voting on {flags[:, 0].sum()} crowds in "
              f"accuracy and {flags[:, 1].sum()} in mean recall ({flags.sum()} of "
              f"{2 * len(results)} pairs); mean of the two designs' gains over voting "
              f"{two:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
