"""The default's posterior when it keeps voting: one-hot (H), vote shares (S) or
``CalibratedVote`` (C), against the truth of the simulated failure kinds.

Each crowd is fitted by ``AutoLabelModel(vote_posterior="one_hot")`` to see whether it keeps
voting; H, S and C are computed from the same votes (their labels are the vote's, checked on
every crowd). Per kind, over the seeds where voting is kept: expected calibration error
(10 bins, confidence the top posterior), Brier score, log loss; then the means over all
voting-kept crowds and, as a check, over every crowd. The decision rule these numbers were
read against is step 18 of ``benchmarks/results/default_label_model.md``::

    python benchmarks/vote_posterior.py [--seeds 0 1 2 3 4 5] [--scale 0.5] [--spammy-seeds 0 1 2 3]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crowd_keras.aggregation import AutoLabelModel, CalibratedVote, MajorityVote  # noqa: E402
from crowd_keras.aggregation.quality import expected_calibration_error  # noqa: E402
from crowd_keras.datasets import FAILURE_KINDS, simulate_crowd, simulate_failure_kind  # noqa: E402

#: the sparse crowds with 30 % spammers of tests/test_auto.py
SPAMMY = [{"name": "workers", "probability": 0.7, "accuracy": 0.75},
          {"name": "spammers", "probability": 0.3, "accuracy": None}]
POSTERIORS = ("H", "S", "C")


def spammy(n_classes: int, seed: int):
    return simulate_crowd(n_items=2000, n_classes=n_classes, n_annotators=800,
                          annotations_per_item=3, groups=SPAMMY, activity=1.0, seed=seed)


def scores(post: np.ndarray, y: np.ndarray) -> tuple:
    """(ECE, Brier, log loss) of posteriors (I, K) against the true codes (I,)."""
    hit = (post.argmax(axis=1) == y).astype(float)
    brier = ((post - np.eye(post.shape[1])[y]) ** 2).sum(axis=1).mean()
    log_loss = -np.log(np.clip(post[np.arange(len(y)), y], 1e-12, 1.0)).mean()
    return expected_calibration_error(post.max(axis=1), hit), float(brier), float(log_loss)


def evaluate(name: str, crowd) -> dict:
    ann, y = crowd.annotations, np.asarray(crowd.y)
    kept = AutoLabelModel(vote_posterior="one_hot").fit(ann).chosen_ == "majority_vote"
    vote = MajorityVote().fit(ann)
    calibrated = CalibratedVote().fit(ann)
    posts = {"H": vote.posteriors_, "S": MajorityVote(soft=True).fit(ann).posteriors_,
             "C": calibrated.posteriors_}
    for key, post in posts.items():
        if not np.array_equal(post.argmax(axis=1), vote.predict()):
            raise AssertionError(f"{name}: the labels of {key} are not the vote's")
    return {"kind": name, "kept": kept, "p": calibrated.accuracy_,
            **{key: scores(post, y) for key, post in posts.items()}}


def row(label: str, rows: list, seeds: str) -> str:
    mean = {k: np.mean([r[k] for r in rows], axis=0) for k in POSTERIORS}
    cells = [" / ".join(f"{mean[k][i]:.3f}" for k in POSTERIORS) for i in range(3)]
    p = f"{np.mean([r['p'] for r in rows]):.3f}"
    return f"| {label} | {seeds} | {cells[0]} | {cells[1]} | {cells[2]} | {p} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--spammy-seeds", nargs="*", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--quick", action="store_true", help="seed 0 at scale 0.25")
    parser.add_argument("--data", type=Path, help="unused: the crowds are simulated (accepted "
                        "as every benchmark's)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.scale, args.spammy_seeds = [0], 0.25, [0]
    crowds = [(kind, seed, lambda k=kind, s=seed: simulate_failure_kind(k, s, args.scale))
              for kind in sorted(FAILURE_KINDS) for seed in args.seeds]
    crowds += [(f"spammy, {k} classes", seed, lambda k=k, s=seed: spammy(k, s))
               for k in (2, 4) for seed in args.spammy_seeds]
    results = []
    for name, seed, make in crowds:
        result = evaluate(name, make())
        result["seed"] = seed
        results.append(result)
        print(f"{name} seed {seed}: voting kept {result['kept']}", file=sys.stderr, flush=True)
    print(f"seeds {args.seeds} at scale {args.scale}; spammy seeds {args.spammy_seeds}\n")
    print("| kind | voting kept (seeds) | ECE H / S / C | Brier H / S / C | "
          "log loss H / S / C | fitted p |")
    print("|---|---|---|---|---|---|")
    kept = [r for r in results if r["kept"]]
    for name in dict.fromkeys(r["kind"] for r in kept):
        mine = [r for r in kept if r["kind"] == name]
        print(row(name, mine, f"{len(mine)} ({', '.join(str(r['seed']) for r in mine)})"))
    if kept:
        print(row("**voting kept, all**", kept, str(len(kept))))
        worst = max(r["C"][0] - r["H"][0] for r in kept)
        print(f"\nlargest ECE of C above H's on a voting-kept crowd: {worst:+.4f}")
    print(row("every crowd (check)", results, str(len(results))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
