"""EBCC's random start on the simulated crowds: one start, the best ELBO of several, or their
posteriors averaged.

Every crowd of ``failure_kinds.py`` (each kind, seed and ``--scale``, and the sparse crowds
with 30 % spammers) is fitted by EBCC (the registry's settings, the default's candidate) from
``--starts`` seeds ``1234, 1235, ...``. Li, Rubinstein & Cohn (ICML 2019) keep the best
evidence lower bound of 40 seeds; the default fits one. Per kind and overall, against majority
vote (ties to the lowest code): the mean accuracy gain of the first seed alone, of the best
ELBO among the first ``n`` seeds and of the first ``n`` posteriors averaged (``n`` in
``--keep``), and the crowds more than one item below voting. Then, per ``n``, the paired
difference in items against the first seed alone (wins, losses, mean, standard error over the
crowds) and how far two independent picks land apart (seeds ``0..n-1`` against ``n..2n-1``,
mean absolute difference in items). Step 32 of ``benchmarks/results/default_label_model.md``
reads it::

    python benchmarks/ebcc_restarts.py [--starts 10] [--keep 3 5] [--seeds 0 1 2 3 4 5]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from crowd_keras.aggregation import MajorityVote, get_label_model  # noqa: E402
from failure_kinds import add_crowd_arguments, by_kind, make_crowd, map_crowds  # noqa: E402

SEED = 1234   # EBCC's default seed: start r is seed SEED + r


def fit_starts(job: tuple) -> dict:
    """One crowd: per start, the ELBO and the items labelled right; voting's."""
    kind, seed, scale, starts = job
    crowd = make_crowd(kind, seed, scale)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    vote = int((MajorityVote().fit(ann).predict() == y).sum())
    elbo, posteriors = [], []
    for r in range(starts):
        model = get_label_model("ebcc", seed=SEED + r).fit(ann)
        elbo.append(model.elbo_)
        posteriors.append(model.predict_proba())
    return {"kind": kind, "seed": seed, "scale": scale, "n": len(y), "vote": vote,
            "elbo": elbo, "right": [int((p.argmax(1) == y).sum()) for p in posteriors],
            "mean_right": {n: int((np.mean(posteriors[:n], axis=0).argmax(1) == y).sum())
                           for n in range(1, starts + 1)}}


def best_elbo(r: dict, first: int, n: int) -> int:
    """Items right of the best ELBO among starts ``first..first+n-1`` (the first on ties)."""
    window = r["elbo"][first:first + n]
    return r["right"][first + int(np.argmax(window))]


def picks(r: dict, keep: list) -> dict:
    """``{label: items right}`` of the rules compared."""
    out = {"one start": r["right"][0]}
    for n in keep:
        out[f"best ELBO of {n}"] = best_elbo(r, 0, n)
        out[f"mean of {n}"] = r["mean_right"][n]
    return out


def table(results: list, keep: list) -> list:
    """Per (kind, scale) and over all crowds: the mean gain over voting of each rule; then
    the crowds more than one item below voting under each."""
    labels = list(picks(results[0], keep))
    lines = ["| kind | scale | crowds | " + " | ".join(labels) + " |",
             "|---|---:|---:|" + "---:|" * len(labels)]
    for (kind, scale), rows in list(by_kind(results).items()) + [(("all", None), results)]:
        gains = np.array([[(v - r["vote"]) / r["n"] for v in picks(r, keep).values()]
                          for r in rows]).mean(axis=0)
        scale_text = "-" if scale is None or kind.startswith("spammy") else f"{scale:g}"
        lines.append(f"| {kind} | {scale_text} | {len(rows)} | "
                     + " | ".join(f"{g:+.4f}" for g in gains) + " |")
    below = (np.array([[v - r["vote"] for v in picks(r, keep).values()] for r in results])
             < -1).sum(axis=0)
    lines.append("\ncrowds more than one item below voting: "
                 + ", ".join(f"{label} {b}" for label, b in zip(labels, below)))
    return lines


def paired(results: list, keep: list) -> list:
    """Per ``n``: the best ELBO of ``n`` and the mean of ``n`` against one start, in items
    (wins, losses, mean ± standard error), and two independent picks' mean distance."""
    lines = ["| rule | wins | losses | mean items (± se) | two independent picks apart (items) |",
             "|---|---:|---:|---:|---:|"]
    starts = len(results[0]["elbo"])
    one = np.array([r["right"][0] for r in results])
    apart_one = np.mean([abs(r["right"][0] - r["right"][1]) for r in results])
    lines.append(f"| one start | | | | {apart_one:.2f} |")
    for n in keep:
        for label, rule in ((f"best ELBO of {n}", lambda r: best_elbo(r, 0, n)),
                            (f"mean of {n}", lambda r: r["mean_right"][n])):
            d = np.array([rule(r) for r in results]) - one
            apart = ""
            if label.startswith("best") and 2 * n <= starts:
                gaps = [abs(best_elbo(r, 0, n) - best_elbo(r, n, n)) for r in results]
                apart = f"{np.mean(gaps):.2f}"
            lines.append(f"| {label} | {(d > 0).sum()} | {(d < 0).sum()} | "
                         f"{d.mean():+.2f} (± {d.std() / np.sqrt(len(d)):.2f}) | {apart} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_crowd_arguments(parser)
    parser.add_argument("--starts", type=int, default=10, help="seeds fitted per crowd")
    parser.add_argument("--keep", nargs="*", type=int, default=[3, 5])
    args = parser.parse_args(argv)
    keep = [n for n in args.keep if n <= args.starts]
    results = map_crowds(fit_starts, args, args.starts)
    print(f"EBCC (registry settings) from seeds {SEED}..{SEED + args.starts - 1} on "
          f"{len(results)} simulated crowds; accuracy gain over majority vote (ties to the "
          "lowest code), per crowd then averaged\n")
    print("\n".join(table(results, keep)))
    print("\npaired against one start (items per crowd), over all crowds\n")
    print("\n".join(paired(results, keep)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
