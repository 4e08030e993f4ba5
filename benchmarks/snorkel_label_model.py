"""CrowdLabelModel against Snorkel's LabelModel and majority vote, on real and large label matrices.

Same ``L``, same run. Two tables.

1. Real label matrices: accuracy (F1 of the spam class for sms) and fit time of

   - majority vote (Snorkel's ``MajorityLabelVoter``),
   - Snorkel 0.10's ``LabelModel`` (defaults: ``n_epochs=100``; ``seed=123`` as in its tutorial),
   - ``CrowdLabelModel()`` (default: abstain-aware Dawid-Skene), and for reference WRENCH's
     Dawid-Skene (abstention as a response, full likelihood, no anchor to the votes) and plain
     Dawid-Skene (abstentions dropped, as crowd-kit),

   on the WRENCH sets (fit on ``train.json`` weak labels, score on ``test.json`` gold), the
   YouTube labeling functions of ``examples/youtube_spam_lfs.py`` (fit on videos 1-4, score on
   video 5), and the truth-inference sets and LabelMe answers read as label matrices (-1 where a
   worker did not label; fit and score on the same items).

2. Scale: fit + predict on 1,000,000 × 20 and 100,000 × 100 simulated label matrices (binary,
   balanced classes, functions conditionally independent given the class), two kinds:
   one-class functions (each votes one class, with precision 0.6-0.95 and coverage 3-25 %) and
   both-class functions (accuracy 0.55-0.9, class-dependent coverage 5-50 %), and rare
   functions (both-class, coverage 0.2-2 %: 0.2 and 1.1 votes per row, many rows without
   one, as in Snorkel's own ``test_label_model_sparse``). Times are the best
   of ``--repeat`` runs of ``fit(L)`` then ``predict(L)``, and of ``fit(L)`` alone within
   them (Snorkel's ``predict`` breaks ties in a Python loop over the rows, so the two ratios
   differ); each ratio is Snorkel's time over ours in the same run. ``--quick`` runs the
   scale table at a tenth of the rows, once.

Every model predicts with ``tie_break_policy="random"`` (Snorkel's deterministic choice), so a
tie counts once, the same way, for everyone::

    python benchmarks/snorkel_label_model.py [--data ../shared/data] [--repeat 3] [--quick]
        [--only real|scale]
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from benchmarks.common import DATA  # noqa: E402

from common import count, timed  # noqa: E402

from crowd_keras.datasets import load_labelme, load_truth_inference, load_wrench  # noqa: E402
from crowd_keras.integrations.snorkel import CrowdLabelModel, probs_to_preds  # noqa: E402

REFERENCES = {
    "WRENCH DS": dict(method="abstain_dawid_skene", abstain="response", anchor="none",
                      abstain_weight=1.0, class_prior="learn"),
    "plain DS": dict(method="abstain_dawid_skene", abstain="ignore", anchor="none"),
}


def label_sets(data: Path):
    """(name, cardinality, L_fit, L_score, y_score, metric) for every benchmark set."""
    for name, k in (("youtube", 2), ("sms", 2), ("trec", 6)):
        train = load_wrench(data / "wrench" / name, "train")
        test = load_wrench(data / "wrench" / name, "test")
        yield f"wrench {name}", k, train.L, test.L, test.y, "f1" if name == "sms" else "accuracy"
    from youtube_spam_lfs import apply_lfs, load_youtube_spam
    df_train, df_test = load_youtube_spam(data / "youtube_spam")
    yield ("youtube LFs (example)", 2, apply_lfs(df_train), apply_lfs(df_test),
           df_test.label.to_numpy(), "accuracy")
    for name in ("bluebirds", "product", "dog"):
        ann, truth = load_truth_inference(data / "truth_inference" / name)
        L = ann.to_label_matrix()
        yield name, ann.n_classes, L, L, truth, "accuracy"
    lm = load_labelme(data / "labelme")
    L = lm.annotations.to_label_matrix()
    yield "labelme answers", lm.annotations.n_classes, L, L, lm.y_train, "accuracy"


def metric_value(y: np.ndarray, pred: np.ndarray, metric: str) -> float:
    known = y >= 0
    y, pred = y[known], pred[known]
    if metric == "f1":
        tp = np.sum((pred == 1) & (y == 1))
        return float(2 * tp / max(np.sum(pred == 1) + np.sum(y == 1), 1))
    return float(np.mean(pred == y))


def warm_up() -> None:
    """One untimed fit and predict of each model on a small matrix: the first fit in a
    process pays one-time set-up (Snorkel's torch start), which a single timed run
    (``--quick``) would otherwise count against whichever model runs first."""
    from snorkel.labeling.model import LabelModel

    L, _ = simulated(2000, 10, "both-class", np.random.default_rng(1))
    model = LabelModel(cardinality=2, verbose=False)
    model.fit(L, progress_bar=False, seed=123)
    model.predict(L, tie_break_policy="random")
    CrowdLabelModel(cardinality=2).fit(L, progress_bar=False).predict(
        L, tie_break_policy="random")


def run(data: Path, repeat: int) -> list:
    from snorkel.labeling.model import LabelModel, MajorityLabelVoter

    warm_up()
    rows = []
    for name, k, L_fit, L_score, y, metric in label_sets(data):
        row = {"set": name, "n": L_fit.shape[0], "m": L_fit.shape[1], "k": k, "metric": metric}
        mv = MajorityLabelVoter(cardinality=k)
        row["MV"] = metric_value(y, mv.predict(L_score, tie_break_policy="random"), metric)

        def fit_snorkel():
            model = LabelModel(cardinality=k, verbose=False)
            model.fit(L_fit, progress_bar=False, seed=123)
            return model

        row["t_snorkel"], snorkel = timed(fit_snorkel, repeat)
        row["Snorkel"] = metric_value(y, snorkel.predict(L_score, tie_break_policy="random"),
                                      metric)
        row["t_crowd"], crowd = timed(
            lambda: CrowdLabelModel(cardinality=k).fit(L_fit, progress_bar=False), repeat)
        row["Crowd"] = metric_value(y, crowd.predict(L_score, tie_break_policy="random"), metric)
        row["regime"] = crowd.label_model_.regime_
        for ref, kwargs in REFERENCES.items():
            model = CrowdLabelModel(cardinality=k, **kwargs).fit(L_fit, progress_bar=False)
            row[ref] = metric_value(y, probs_to_preds(model.predict_proba(L_score), "random"),
                                    metric)
        rows.append(row)
        print(f"  {name}: done", file=sys.stderr, flush=True)
    return rows


def simulated(n: int, m: int, kind: str, rng: np.random.Generator):
    """(L, y): n × m binary label matrix of conditionally independent functions."""
    y = rng.integers(0, 2, n)
    if kind == "one-class":
        target = np.arange(m) % 2
        coverage = rng.uniform(0.03, 0.25, m)
        precision = rng.uniform(0.6, 0.95, m)
        hit = np.minimum(coverage * precision / 0.5, 1.0)  # P(vote | y == target)
        miss = coverage * (1 - precision) / 0.5             # P(vote | y != target)
        p = np.where(y[:, None] == target[None, :], hit[None, :], miss[None, :])
        L = np.where(rng.random((n, m)) < p, target[None, :], -1)
    else:
        low, high = (0.002, 0.02) if kind == "rare" else (0.05, 0.5)
        coverage = rng.uniform(low, high, (m, 2))           # depends on the class
        accuracy = rng.uniform(0.55, 0.9, m)
        vote = rng.random((n, m)) < coverage.T[y]
        right = rng.random((n, m)) < accuracy[None, :]
        L = np.where(vote, np.where(right, y[:, None], 1 - y[:, None]), -1)
    return L.astype(np.int64), y


def run_scale(repeat: int, quick: bool) -> list:
    from snorkel.labeling.model import LabelModel

    scale = 10 if quick else 1
    warm_up()
    rows = []
    for n, m in ((1_000_000 // scale, 20), (100_000 // scale, 100)):
        for kind in ("one-class", "both-class", "rare"):
            L, y = simulated(n, m, kind, np.random.default_rng(0))

            def fit_snorkel_model():
                model = LabelModel(cardinality=2, verbose=False)
                model.fit(L, progress_bar=False, seed=123)
                return model

            def snorkel():
                fit_s, model = timed(fit_snorkel_model)
                return fit_s, model.predict(L, tie_break_policy="random")

            def crowd():
                fit_s, model = timed(
                    lambda: CrowdLabelModel(cardinality=2).fit(L, progress_bar=False))
                return fit_s, model.predict(L, tie_break_policy="random")

            t_snorkel = t_crowd = fit_snorkel = fit_crowd = np.inf
            for _ in range(repeat):  # alternate, so that both see the same machine state
                t, (fit_t, pred_snorkel) = timed(snorkel)
                t_snorkel, fit_snorkel = min(t_snorkel, t), min(fit_snorkel, fit_t)
                t, (fit_t, pred_crowd) = timed(crowd)
                t_crowd, fit_crowd = min(t_crowd, t), min(fit_crowd, fit_t)
            rows.append({"kind": kind, "n": n, "m": m, "votes": float((L >= 0).sum(1).mean()),
                         "t_snorkel": t_snorkel, "t_crowd": t_crowd,
                         "fit_snorkel": fit_snorkel, "fit_crowd": fit_crowd,
                         "Snorkel": float(np.mean(pred_snorkel == y)),
                         "Crowd": float(np.mean(pred_crowd == y))})
            print(f"  {kind} {n} x {m}: done", file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeat", type=count, default=3, help="fit-time repeats (best kept)")
    parser.add_argument("--quick", action="store_true",
                        help="one fit per model; scale table at a tenth of the rows")
    parser.add_argument("--only", choices=("real", "scale"), help="one of the two tables")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger().setLevel(logging.ERROR)

    if args.only != "scale":
        print_real(run(args.data, args.repeat))
    if args.only != "real":
        print_scale(run_scale(args.repeat, args.quick), args.quick)
    return 0


def print_real(rows: list) -> None:
    print("## CrowdLabelModel vs Snorkel LabelModel vs majority vote (same L, same run)\n")
    print("accuracy, or F1 of the spam class for sms; ties broken by Snorkel's 'random' policy\n")
    print("| set | n × m, k | regime | MV | Snorkel | CrowdLabelModel | − MV | − Snorkel "
          "| WRENCH DS | plain DS | Snorkel fit | Crowd fit | speed-up |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        metric = " (F1)" if r["metric"] == "f1" else ""
        print(f"| {r['set']}{metric} | {r['n']} × {r['m']}, {r['k']} | {r['regime']} "
              f"| {r['MV']:.3f} | {r['Snorkel']:.3f} | {r['Crowd']:.3f} "
              f"| {r['Crowd'] - r['MV']:+.3f} | {r['Crowd'] - r['Snorkel']:+.3f} "
              f"| {r['WRENCH DS']:.3f} | {r['plain DS']:.3f} "
              f"| {r['t_snorkel'] * 1e3:.0f} ms | {r['t_crowd'] * 1e3:.0f} ms "
              f"| {r['t_snorkel'] / r['t_crowd']:.1f}× |")
    worse = [r["set"] for r in rows if r["Crowd"] < max(r["MV"], r["Snorkel"]) - 1e-12]
    slow = [r["set"] for r in rows if r["t_snorkel"] / r["t_crowd"] < 5]
    print(f"\nCrowdLabelModel below MV or Snorkel on: {worse or 'none'}; "
          f"less than 5× faster on: {slow or 'none'}\n")


def print_scale(rows: list, quick: bool) -> None:
    note = " (--quick: a tenth of the rows, one run)" if quick else ""
    print(f"## Scale: fit + predict on simulated label matrices{note}\n")
    print("accuracy on every row; ties (rows without votes) broken by Snorkel's 'random' "
          "policy for both; best of the runs, same process\n")
    print("| functions | n × m | votes / row | Snorkel | CrowdLabelModel | − Snorkel "
          "| Snorkel fit + predict | Crowd fit + predict | speed-up "
          "| Snorkel fit | Crowd fit | fit speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['kind']} | {r['n']:,} × {r['m']} | {r['votes']:.1f} | {r['Snorkel']:.4f} "
              f"| {r['Crowd']:.4f} | {r['Crowd'] - r['Snorkel']:+.4f} | {r['t_snorkel']:.2f} s "
              f"| {r['t_crowd']:.2f} s | {r['t_snorkel'] / r['t_crowd']:.1f}× "
              f"| {r['fit_snorkel']:.2f} s | {r['fit_crowd']:.2f} s "
              f"| {r['fit_snorkel'] / r['fit_crowd']:.1f}× |")
    worse = [f"{r['kind']} {r['n']}×{r['m']}" for r in rows if r["Crowd"] < r["Snorkel"] - 0.005]
    slow = [f"{r['kind']} {r['n']}×{r['m']}" for r in rows if r["t_snorkel"] / r["t_crowd"] < 5]
    print(f"\nmore than 0.005 below Snorkel on: {worse or 'none'}; less than 5× faster on: "
          f"{slow or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
