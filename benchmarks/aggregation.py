"""Majority vote, Dawid-Skene and the default (auto): accuracy on real sets, speed on 1M.

Compares crowd-keras with crowd-kit's DawidSkene / MajorityVote in the same run, on the
same data, and prints the tables (ratios > 1 mean crowd-keras is faster)::

    python benchmarks/aggregation.py [--data ../shared/data] [--annotations 1000000]

Needs the ``bench`` extra (crowd-kit) for the peer columns; without it they read "n/a".
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from benchmarks.common import DATA  # noqa: E402

from common import timed  # noqa: E402

from crowd_keras.aggregation import AutoLabelModel, DawidSkene, MajorityVote  # noqa: E402
from crowd_keras.datasets import load_labelme, load_truth_inference, simulate_crowd  # noqa: E402

try:
    from crowdkit.aggregation import DawidSkene as KitDawidSkene
    from crowdkit.aggregation import MajorityVote as KitMajorityVote
except ImportError:  # the peer is optional
    KitDawidSkene = KitMajorityVote = None


def kit_accuracy(model_cls, ann, truth, **kwargs) -> float:
    if model_cls is None:
        return float("nan")
    df = ann.to_frame()
    labels = model_cls(**kwargs).fit_predict(df)
    # crowd-kit returns class names; items without annotations get none and count as wrong
    pred = pd.Index(ann.classes).get_indexer(labels.reindex(ann.item_ids))
    known = truth >= 0
    return float((pred[known] == truth[known]).mean())


def accuracy_table(data: Path) -> list:
    sets = []
    for name in ("bluebirds", "product", "dog"):
        ann, truth = load_truth_inference(data / "truth_inference" / name)
        sets.append((name, ann, truth))
    lm = load_labelme(data / "labelme")
    sets.append(("labelme-train", lm.annotations, lm.y_train))
    rows = []
    for name, ann, truth in sets:
        known = truth >= 0
        mv = (MajorityVote().fit(ann).predict()[known] == truth[known]).mean()
        ds = (DawidSkene().fit(ann).predict()[known] == truth[known]).mean()
        kit_mv = kit_accuracy(KitMajorityVote, ann, truth)
        kit_ds = kit_accuracy(KitDawidSkene, ann, truth, n_iter=100, tol=1e-5)
        rows.append((name, ann.n_annotations, mv, ds, kit_mv, kit_ds))
    return rows


def speed_table(n_annotations: int, per_item: int = 5) -> tuple:
    sim = simulate_crowd(n_items=n_annotations // per_item, n_classes=4, n_annotators=1000,
                         annotations_per_item=per_item, seed=0)
    ann = sim.annotations
    df = ann.to_frame()
    rows = []
    # per EM iteration: (time of 11 iterations - time of 1) / 10, which removes set-up cost
    t1, _ = timed(lambda: DawidSkene(max_iter=1, tol=0).fit(ann), repeat=3)
    t11, _ = timed(lambda: DawidSkene(max_iter=11, tol=0).fit(ann), repeat=3)
    ours_iter = (t11 - t1) / 10
    t_conv, ds = timed(lambda: DawidSkene(tol=1e-5).fit(ann), repeat=3)
    ours_acc = float((ds.predict() == sim.y).mean())
    kit_iter = kit_conv = kit_acc = float("nan")
    kit_n = 0
    if KitDawidSkene is not None:
        # crowd-kit stops when the per-annotation ELBO gains less than tol: the same criterion
        k1, _ = timed(lambda: KitDawidSkene(n_iter=1, tol=-np.inf).fit(df))
        k11, _ = timed(lambda: KitDawidSkene(n_iter=11, tol=-np.inf).fit(df))
        kit_iter = (k11 - k1) / 10
        kit_conv, kit = timed(lambda: KitDawidSkene(n_iter=100, tol=1e-5).fit(df))
        kit_n = len(kit.loss_history_)
        pred = pd.Index(ann.classes).get_indexer(kit.labels_.reindex(ann.item_ids))
        kit_acc = float((pred == sim.y).mean())
    rows.append(("per EM iteration", ours_iter, kit_iter))
    rows.append((f"to tol 1e-5 (ours {ds.n_iter_} it, crowd-kit {kit_n} it)", t_conv, kit_conv))
    t_auto, auto = timed(lambda: AutoLabelModel().fit(ann))
    default = (t_auto, t_conv, auto.chosen_, float((auto.predict() == sim.y).mean()))
    return ann, rows, ours_acc, kit_acc, default


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--annotations", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    print("## Accuracy against the truth (crowd-kit in the same run)\n")
    print("| set | annotations | MV | DS (ours) | crowd-kit MV | crowd-kit DS | DS − crowd-kit DS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, mv, ds, kmv, kds in accuracy_table(args.data):
        print(f"| {name} | {n} | {mv:.3f} | {ds:.3f} | {kmv:.3f} | {kds:.3f} | {ds - kds:+.3f} |")

    ann, rows, ours_acc, kit_acc, default = speed_table(args.annotations)
    print(f"\n## Dawid-Skene fit time on a simulated crowd ({ann.n_annotations:,} annotations, "
          f"{ann.n_items:,} items, {ann.n_annotators} annotators, {ann.n_classes} classes)\n")
    print("| measure | crowd-keras | crowd-kit | speed-up (crowd-kit / ours) |")
    print("|---|---:|---:|---:|")
    for what, ours, kit in rows:
        print(f"| {what} | {ours * 1e3:.1f} ms | {kit * 1e3:.1f} ms | {kit / ours:.1f}× |")
    print(f"\naccuracy on the simulated crowd: crowd-keras {ours_acc:.4f}, crowd-kit {kit_acc:.4f}")
    t_auto, t_ds, chosen, auto_acc = default
    print("\n## The default label model (auto) on the same crowd\n")
    print("| fit | auto | Dawid-Skene (to tol 1e-5) | auto / DS | auto's choice | accuracy |")
    print("|---|---:|---:|---:|---|---:|")
    print(f"| held-out selection + refit | {t_auto:.2f} s | {t_ds:.2f} s | {t_auto / t_ds:.1f}× | "
          f"{chosen} | {auto_acc:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
