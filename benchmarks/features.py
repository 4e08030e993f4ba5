"""With features: crowd-keras against cleanlab's CROWDLAB, the same classifier and seeds.

    python benchmarks/features.py                  # LabelMe, Music, BlueBirds, 3 seeds
    python benchmarks/features.py --sets music --seeds 1

One run per set and seed. The classifier is the same for everyone: a 128-unit MLP
(scikit-learn's ``MLPClassifier``, standardised features); its out-of-fold probabilities on
the training items (5 folds, trained on majority-vote labels: cleanlab's recipe, made with
``crowd_keras.features.out_of_fold``) feed

- **CROWDLAB**: ``cleanlab.multiannotator.get_label_quality_multiannotator(labels, pred_probs)``
  on cleanlab's wide items × annotators layout;
- **ours**: a label model fitted with ``fit(annotations, pred_probs=...)`` (the classifier as
  a learned per-item prior), for the default ``auto`` and Dawid-Skene; and the label models
  without the classifier, for reference.

Columns: consensus accuracy on the training items (against their gold); test accuracy of the
same MLP retrained on each consensus (LabelMe and Music have test splits; BlueBirds has none);
Spearman rank correlation of each method's annotator quality (ours: ``annotator_quality_``'s
``expected_accuracy``; CROWDLAB's ``annotator_quality``) with the annotators' accuracy against
gold on the items they labelled (annotators with at least 5 labels); and the expected
calibration error (10 equal-width bins) of each method's per-item consensus quality score
against whether its consensus label is right. Means over seeds.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Dict, List

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA, count  # noqa: E402

from crowd_keras.aggregation import DawidSkene, MajorityVote, get_label_model  # noqa: E402
from crowd_keras.aggregation.quality import expected_calibration_error  # noqa: E402
from crowd_keras.datasets import (load_labelme, load_music, load_truth_inference,  # noqa: E402
                                  load_truth_inference_features)

SETS = ("labelme", "music", "bluebirds")
MIN_LABELS = 5


def load(name: str, data: Path) -> Dict:
    if name == "labelme":
        d = load_labelme(data / "labelme", download=False)
        return dict(x=d.x_train, ann=d.annotations, y=d.y_train, x_test=d.x_test, y_test=d.y_test)
    if name == "music":
        d = load_music(data / "music", download=False)
        return dict(x=d.x_train, ann=d.annotations, y=d.y_train, x_test=d.x_test, y_test=d.y_test)
    folder = data / "truth_inference" / name
    ann, y = load_truth_inference(folder, download=False)
    x = load_truth_inference_features(folder, ann.item_ids, download=False)
    return dict(x=x, ann=ann, y=y, x_test=None, y_test=None)


def mlp(seed: int):
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(128,), max_iter=300,
                                                         early_stopping=False, random_state=seed))


def test_accuracy(x, labels, x_test, y_test, seed: int) -> float:
    if x_test is None:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mlp(seed).fit(x, labels)
    return float((model.predict(x_test) == y_test).mean())


def annotator_truth(ann, y) -> pd.Series:
    """Each annotator's accuracy against gold on the items it labelled (gold known)."""
    known = y[ann.items] >= 0
    hit = (ann.labels == y[ann.items]) & known
    n = np.bincount(ann.annotators, weights=known, minlength=ann.n_annotators)
    acc = np.bincount(ann.annotators, weights=hit, minlength=ann.n_annotators) / np.maximum(n, 1)
    return pd.Series(np.where(n >= MIN_LABELS, acc, np.nan), index=list(ann.annotator_ids))


def rank_corr(estimate: pd.Series, truth: pd.Series) -> float:
    both = pd.concat([estimate.rename("e"), truth.rename("t")], axis=1).dropna()
    return float(both["e"].rank().corr(both["t"].rank()))


def run_crowdlab(ann, pred_probs: np.ndarray):
    from cleanlab.multiannotator import get_label_quality_multiannotator
    wide = ann.to_wide()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = get_label_quality_multiannotator(wide, pred_probs, verbose=False)
    lq = out["label_quality"]
    stats = out["annotator_stats"]["annotator_quality"]
    return (lq["consensus_label"].to_numpy(), lq["consensus_quality_score"].to_numpy(),
            pd.Series(stats.to_numpy(), index=list(stats.index)))


def run_ours(model, ann, pred_probs=None):
    model.fit(ann, pred_probs=pred_probs) if pred_probs is not None else model.fit(ann)
    quality = model.annotator_quality_
    return (model.predict(), np.asarray(model.consensus_quality(ann)),
            pd.Series(quality["expected_accuracy"].to_numpy(), index=list(quality["annotator"])))


def one(name: str, d: Dict, seed: int) -> List[Dict]:
    from crowd_keras.features import out_of_fold
    ann, y = d["ann"], d["y"]
    gold = y >= 0
    vote = MajorityVote().fit(ann).predict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred_probs = out_of_fold(lambda: mlp(seed), d["x"], vote, n_splits=5, random_state=seed)
    truth = annotator_truth(ann, y)
    rows = []
    methods = {
        "majority vote": None,
        "CROWDLAB (cleanlab)": lambda: run_crowdlab(ann, pred_probs),
        "ours: auto + classifier": lambda: run_ours(get_label_model("auto", random_state=seed),
                                                    ann, pred_probs),
        "ours: Dawid-Skene + classifier": lambda: run_ours(DawidSkene(), ann, pred_probs),
        "ours: auto (no classifier)": lambda: run_ours(get_label_model("auto", random_state=seed),
                                                       ann),
        "ours: Dawid-Skene (no classifier)": lambda: run_ours(DawidSkene(), ann),
    }
    for method, fn in methods.items():
        if fn is None:
            labels, score, quality = vote, None, None
        else:
            labels, score, quality = fn()
        labels = np.asarray(labels)
        right = (labels == y)[gold]
        rows.append(dict(set=name, seed=seed, method=method,
                         consensus=float(right.mean()),
                         test=test_accuracy(d["x"], labels, d["x_test"], d["y_test"], seed),
                         rank=rank_corr(quality, truth) if quality is not None else np.nan,
                         ece=expected_calibration_error(score[gold], right) if score is not None else np.nan))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--seeds", type=count, default=3)
    args = parser.parse_args(argv)
    rows = []
    for name in args.sets:
        d = load(name, args.data)
        for seed in range(args.seeds):
            rows += one(name, d, seed)
    table = pd.DataFrame(rows).groupby(["set", "method"], sort=False)[
        ["consensus", "test", "rank", "ece"]].mean().round(3)
    print(f"{args.seeds} seeds; consensus: accuracy of the consensus on the training items; "
          "test: the MLP retrained on it; rank: Spearman correlation of annotator quality with "
          f"true annotator accuracy (annotators with >= {MIN_LABELS} labels); ece: calibration "
          "error of the consensus quality score")
    print("| set | method | consensus | test | rank | ece |\n|---|---|---:|---:|---:|---:|")
    for (name, method), row in table.iterrows():
        cells = " | ".join("—" if np.isnan(v) else f"{v:.3f}" for v in row)
        print(f"| {name} | {method} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
