"""CrowdLabelModel against Snorkel's LabelModel and majority vote on real label matrices.

Same ``L``, same run: accuracy (F1 of the spam class for sms) and fit time of

- majority vote (Snorkel's ``MajorityLabelVoter``),
- Snorkel 0.10's ``LabelModel`` (defaults: ``n_epochs=100``; ``seed=123`` as in its tutorial),
- ``CrowdLabelModel()`` (default: abstain-aware Dawid-Skene), and for reference WRENCH's
  Dawid-Skene (abstention as a response, full likelihood, no anchor to the votes) and plain
  Dawid-Skene (abstentions dropped, as crowd-kit),

on the WRENCH sets (fit on ``train.json`` weak labels, score on ``test.json`` gold), the YouTube
labeling functions of ``examples/youtube_spam_lfs.py`` (fit on videos 1-4, score on video 5),
and the truth-inference sets and LabelMe answers read as label matrices (-1 where a worker did
not label; fit and score on the same items). Every model predicts with
``tie_break_policy="random"`` (Snorkel's deterministic choice), so a tie counts once, the same
way, for everyone. Fit times are the best of ``--repeat`` runs::

    python benchmarks/snorkel_label_model.py [--data ../shared/data] [--repeat 3]
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

from common import timed  # noqa: E402

from crowd_keras.datasets import load_labelme, load_truth_inference, load_wrench  # noqa: E402
from integrations.snorkel import CrowdLabelModel, probs_to_preds  # noqa: E402

REFERENCES = {
    "WRENCH DS": dict(abstain="response", anchor="none", abstain_weight=1.0, class_prior="learn"),
    "plain DS": dict(abstain="ignore", anchor="none"),
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


def run(data: Path, repeat: int) -> list:
    from snorkel.labeling.model import LabelModel, MajorityLabelVoter

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3, help="fit-time repeats (best kept)")
    parser.add_argument("--quick", action="store_true", help="one fit per model (smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger().setLevel(logging.ERROR)

    rows = run(args.data, args.repeat)
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
          f"less than 5× faster on: {slow or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
