"""Mixture of annotator groups (CMM, Mena & Ñanculef 2019): scaling in annotators and LabelMe.

1. The paper's Table 2 shape on the simulator: experts / non-experts / spammers
   (``simulate_crowd(groups="default")``, 3 classes, 10 features, class_sep 3: a classifier
   on the truth reaches ≈ 0.95), ``--items`` training items × ``--per-item`` labels (a fixed
   number of annotations) spread over T ∈ {100, 500, 1500, 3500, 6000, 10000} annotators;
   test accuracy of the classifier on as many held-out items, wall time of the whole
   training and peak memory. Every (method, T, seed) runs in its own subprocess; memory is
   the process's peak RSS (``resource.getrusage``, TensorFlow included) and its growth
   during training (peak after − peak before). Methods, same MLP (Dense 128 relu,
   Dropout 0.5, softmax; torch-style uniform init) everywhere:

   * ``CMM``: :class:`crowd_keras.mixture_of_groups.trainer.MixtureOfGroupsEM`, the paper's EM on
     label counts with Eq. 4 as written (``likelihood="annotation"``; global; 3 groups, one
     epoch per M-step, tol 3e-2, ≤ ``--max-iter``);
   * ``CMM-item``: the same with ``likelihood="item"`` (the trainer's default: an item's
     labels share its true class, instead of Eq. 4's independent per-label marginals);
   * ``CMM-ind``: the same trainer, ``scenario="individual"`` (one group per annotator);
   * ``MoG-LM``: feature-free :class:`MixtureOfGroupsModel` posteriors → MLP;
   * ``DS`` / ``MV``: Dawid-Skene / soft majority vote posteriors → MLP (two stages);
   * ``CL-MW``: ``CrowdModel(mlp, CrowdLayer(T, "MW"))`` on the indexed annotations
     (``LazyAdam`` on TensorFlow).

   Epoch-trained methods run ``--epochs`` epochs (no validation split in the simulator).

2. LabelMe (512-d VGG features, 1000 train / 500 valid / 1188 test), test accuracy, mean ±
   std over ``--seeds`` seeds, in the paper's two settings: *individual* (annotator ids
   known) and *global* (no ids: every annotation is its own annotator, so per-annotator
   models see one label each, the paper's Table 3). Epoch-trained methods keep the epoch
   with the best accuracy on the gold *validation* split (as ``benchmarks/crowd_layer.py``);
   the EM trainers stop on their tolerance and never see gold labels.

    python benchmarks/mixture_of_groups.py [--seeds 5] [--sim-seeds 3] [--json out.json]
    python benchmarks/mixture_of_groups.py --quick      # smoke run (fewer rows, 1 seed)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA  # noqa: E402

import keras  # noqa: E402

from crowd_keras import Annotations  # noqa: E402
from crowd_keras.aggregation import DawidSkene, MajorityVote  # noqa: E402
from crowd_keras.mixture_of_groups.label_model import MixtureOfGroupsModel  # noqa: E402
from crowd_keras.datasets import load_labelme, simulate_crowd  # noqa: E402
from crowd_keras.mixture_of_groups.layers import MixtureOfGroups  # noqa: E402
from crowd_keras.mixture_of_groups.losses import LabelCountCrossEntropy  # noqa: E402
from crowd_keras.models import CrowdModel, LazyAdam, TruthValidation  # noqa: E402
from crowd_keras.mixture_of_groups.trainer import MixtureOfGroupsEM  # noqa: E402

try:
    from crowd_keras.layers import CrowdLayer
except ImportError:  # the CrowdLayer issue is not merged
    CrowdLayer = None

BATCH = 64
SIM_METHODS = ("MV", "DS", "CL-MW", "MoG-LM", "CMM", "CMM-item", "CMM-ind")
T_VALUES = (100, 500, 1500, 3500, 6000, 10000)


# ---------------------------------------------------------------------------- pieces
def dense(units: int, fan_in: int, activation: str) -> keras.layers.Dense:
    init = keras.initializers.RandomUniform(-1 / fan_in ** 0.5, 1 / fan_in ** 0.5)
    return keras.layers.Dense(units, activation=activation, kernel_initializer=init,
                              bias_initializer=init)


def mlp(n_features: int, n_classes: int) -> keras.Model:
    return keras.Sequential([keras.Input((n_features,)), dense(128, n_features, "relu"),
                             keras.layers.Dropout(0.5), dense(n_classes, 128, "softmax")])


def test_accuracy(clf: keras.Model, data: dict) -> float:
    pred = np.argmax(clf.predict(data["x_test"], batch_size=2048, verbose=0), axis=-1)
    return float(np.mean(pred == data["y_test"]))


def validation(data: dict, clf: keras.Model) -> list:
    return [TruthValidation(data["x_valid"], data["y_valid"], classifier=clf)] \
        if "x_valid" in data else []


def anonymous(ann: Annotations) -> Annotations:
    """The global setting: every annotation is its own annotator."""
    return Annotations(ann.items, np.arange(ann.n_annotations), ann.labels,
                       item_ids=ann.item_ids, classes=ann.classes)


def two_stage(data: dict, ann: Annotations, label_model, epochs: int) -> dict:
    """Label-model posteriors as soft targets for the MLP."""
    post = label_model.fit(ann).predict_proba()
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    clf.compile(keras.optimizers.Adam(1e-3), loss="categorical_crossentropy")
    clf.fit(data["x_train"], post.astype("float32"), epochs=epochs, batch_size=BATCH, verbose=0,
            callbacks=validation(data, clf))
    return {"acc": test_accuracy(clf, data)}


def crowd_layer(data: dict, ann: Annotations, epochs: int) -> dict:
    if CrowdLayer is None:
        return {"acc": float("nan"), "note": "CrowdLayer not available"}
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    model = CrowdModel(clf, CrowdLayer(ann.n_annotators, "MW"))
    opt = LazyAdam(1e-3) if keras.backend.backend() == "tensorflow" else keras.optimizers.Adam(1e-3)
    model.compile(opt)
    model.fit(data["x_train"], ann, epochs=epochs, batch_size=BATCH, verbose=0,
              callbacks=validation(data, clf))
    return {"acc": test_accuracy(clf, data)}


def cmm(data: dict, ann: Annotations, scenario: str, max_iter: int, restarts: int,
        seed: int, likelihood: str = "annotation") -> dict:
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    trainer = MixtureOfGroupsEM(clf, 3, scenario=scenario, max_iter=max_iter, restarts=restarts,
                                batch_size=BATCH, likelihood=likelihood, seed=seed,
                                progress=False)
    if scenario == "global":
        trainer.fit(data["x_train"], counts=ann.label_counts())
    else:
        trainer.fit(data["x_train"], ann)
    return {"acc": test_accuracy(clf, data), "n_iter": trainer.n_iter_,
            "alpha": [round(float(a), 3) for a in trainer.mixing_coefficients_]}


def layer_global(data: dict, ann: Annotations, epochs: int) -> dict:
    """The ``MixtureOfGroups`` layer trained on label counts with Eq. 4 by backprop."""
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    x_in = keras.Input((data["x_train"].shape[1],))
    layer = MixtureOfGroups(3, ann.n_classes)
    model = keras.Model(x_in, layer(clf(x_in)))
    model.compile(keras.optimizers.Adam(1e-3), LabelCountCrossEntropy())
    model.fit(data["x_train"], ann.label_counts().astype("float32"), epochs=epochs,
              batch_size=BATCH, verbose=0, callbacks=validation(data, clf))
    return {"acc": test_accuracy(clf, data),
            "alpha": [round(float(a), 3) for a in layer.mixing_coefficients()]}


def layer_individual(data: dict, ann: Annotations, epochs: int) -> dict:
    """``CrowdModel(mlp, MixtureOfGroups(3, K, num_annotators=A))`` (C-MoA-style layer)."""
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    model = CrowdModel(clf, MixtureOfGroups(3, ann.n_classes, num_annotators=ann.n_annotators))
    model.compile(keras.optimizers.Adam(1e-3))
    model.fit(data["x_train"], ann, epochs=epochs, batch_size=BATCH, verbose=0,
              callbacks=validation(data, clf))
    return {"acc": test_accuracy(clf, data)}


def run(method: str, data: dict, ann: Annotations, seed: int, epochs: int, max_iter: int,
        restarts: int) -> dict:
    keras.utils.set_random_seed(seed)
    if method == "MV":
        return two_stage(data, ann, MajorityVote(soft=True), epochs)
    if method == "DS":
        return two_stage(data, ann, DawidSkene(), epochs)
    if method == "MoG-LM":
        return two_stage(data, ann, MixtureOfGroupsModel(seed=seed), epochs)
    if method == "MoG-LM-global":
        label_model = MixtureOfGroupsModel(scenario="global", seed=seed)
        return two_stage(data, ann, label_model, epochs)
    if method == "CL-MW":
        return crowd_layer(data, ann, epochs)
    if method == "CMM":
        return cmm(data, ann, "global", max_iter, restarts, seed)
    if method == "CMM-item":
        return cmm(data, ann, "global", max_iter, restarts, seed, likelihood="item")
    if method == "CMM-ind":
        return cmm(data, ann, "individual", max_iter, restarts, seed)
    if method == "MoG-layer":
        return layer_global(data, ann, epochs)
    if method == "MoG-layer-ind":
        return layer_individual(data, ann, epochs)
    raise ValueError(method)


# ---------------------------------------------------------------------------- simulator
def simulated(n_annotators: int, seed: int, n_items: int, per_item: int, noise: str) -> dict:
    s = simulate_crowd(n_items=2 * n_items, n_classes=3, n_features=10, class_sep=3.0,
                       n_annotators=n_annotators, annotations_per_item=per_item,
                       groups="default", individual_noise=noise, seed=seed)
    train = np.arange(n_items)
    return {"x_train": s.x[:n_items], "y_train": s.y[:n_items], "x_test": s.x[n_items:],
            "y_test": s.y[n_items:], "annotations": s.annotations.subset(train)}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def worker(args: argparse.Namespace) -> None:
    """One (method, T, seed) in this process; prints one JSON line."""
    data = simulated(args.T, args.seed, args.items, args.per_item, args.noise)
    ann = data["annotations"]
    before = _peak_rss_mb()
    start = time.perf_counter()
    out = run(args.method, data, ann, args.seed, args.epochs, args.max_iter, args.restarts)
    out.update(seconds=time.perf_counter() - start, peak_rss_mb=_peak_rss_mb(),
               growth_mb=_peak_rss_mb() - before, method=args.method, T=args.T, seed=args.seed,
               labels_per_annotator=ann.n_annotations / args.T)
    print("RESULT " + json.dumps(out), flush=True)


def scaling_table(args: argparse.Namespace) -> dict:
    results: dict = {}
    for t in args.T:
        for method in args.methods:
            for seed in range(args.sim_seeds):
                cmd = [sys.executable, __file__, "--worker", "--method", method, "--T", str(t),
                       "--seed", str(seed), "--items", str(args.items), "--per-item",
                       str(args.per_item), "--epochs", str(args.sim_epochs), "--max-iter",
                       str(args.max_iter), "--restarts", str(args.restarts), "--noise", args.noise]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
                if proc.returncode != 0 or not line:
                    res = {"acc": float("nan"), "seconds": float("nan"),
                           "peak_rss_mb": float("nan"), "growth_mb": float("nan"),
                           "error": (proc.stderr or "")[-400:]}
                else:
                    res = json.loads(line[-1][7:])
                results.setdefault(method, {}).setdefault(t, []).append(res)
                print(f"  T={t:6d} {method:8s} seed {seed}: acc {res['acc']:.4f}  "
                      f"{res['seconds']:.1f} s  peak {res['peak_rss_mb']:.0f} MB "
                      f"(+{res['growth_mb']:.0f})" + (f"  iters {res['n_iter']}" if "n_iter" in res
                                                      else "")
                      + (f"  ERROR {res['error'][-200:]}" if "error" in res else ""), flush=True)
    return results


def print_scaling(results: dict, ts: list) -> None:
    def mean(method, t, key):
        vals = [r.get(key, float("nan")) for r in results[method][t]]
        return float(np.mean(vals))

    head = "| method | " + " | ".join(f"T={t}" for t in ts) + " |"
    rule = "|---" * (len(ts) + 1) + "|"
    for key, title, fmt in (("acc", "Test accuracy (mean over seeds)", "{:.3f}"),
                            ("seconds", "Training time, s (whole pipeline)", "{:.1f}"),
                            ("peak_rss_mb", "Peak RSS, MB (process, TensorFlow included)",
                             "{:.0f}"),
                            ("growth_mb", "Peak RSS growth during training, MB", "{:.0f}")):
        print(f"\n{title}\n{head}\n{rule}")
        for method in results:
            cells = " | ".join(fmt.format(mean(method, t, key)) for t in ts)
            print(f"| {method} | {cells} |")
    if "CMM" in results and len(ts) > 1:
        lo, hi = ts[0], ts[-1]
        ratio = mean("CMM", hi, "seconds") / mean("CMM", lo, "seconds")
        per_iter = [mean("CMM", t, "seconds") / mean("CMM", t, "n_iter") for t in (lo, hi)]
        print(f"\nCMM time T={hi} / T={lo}: {ratio:.2f} (per EM iteration "
              f"{per_iter[0]:.2f} s vs {per_iter[1]:.2f} s, ratio {per_iter[1] / per_iter[0]:.2f})")
    ours = [m for m in ("CMM", "CMM-item", "CMM-ind", "MoG-LM") if m in results]
    peers = [m for m in ("DS", "CL-MW") if m in results]
    if len(ts) > 1:
        hi = ts[-1]
        for m in ours:
            gaps = ", ".join(f"{mean(m, hi, 'acc') - mean(o, hi, 'acc'):+.3f} vs {o}"
                             for o in peers)
            print(f"{m} accuracy at T={hi}: {gaps}")


# ---------------------------------------------------------------------------- LabelMe
LABELME_SETTINGS = {
    "individual": ("MV", "DS", "CL-MW", "MoG-LM", "MoG-layer-ind", "CMM", "CMM-item", "CMM-ind"),
    "global": ("MV", "DS", "CL-MW", "MoG-LM-global", "MoG-layer", "CMM", "CMM-item"),
}


def labelme_table(args: argparse.Namespace) -> dict:
    data = dict(load_labelme(args.data / "labelme"))
    report: dict = {}
    for setting, methods in LABELME_SETTINGS.items():
        if args.labelme_methods:
            methods = [m for m in methods if m in args.labelme_methods]
        ann = data["annotations"] if setting == "individual" else anonymous(data["annotations"])
        for method in methods:
            accs, secs, extra = [], [], {}
            for seed in range(args.seeds):
                keras.backend.clear_session()
                start = time.perf_counter()
                res = run(method, data, ann, seed, args.epochs, args.max_iter, args.restarts)
                secs.append(time.perf_counter() - start)
                accs.append(res["acc"])
                extra = res
            report.setdefault(setting, {})[method] = {"acc": accs, "seconds": float(np.mean(secs))}
            note = (f"  iters {extra['n_iter']}" if "n_iter" in extra else "") + \
                (f"  α {extra['alpha']}" if "alpha" in extra else "")
            print(f"  LabelMe {setting:10s} {method:14s} {np.mean(accs):.4f} ± {np.std(accs):.4f}"
                  f"  ({', '.join(f'{a:.3f}' for a in accs)})  {np.mean(secs):.1f} s{note}",
                  flush=True)
    print("\n| LabelMe test accuracy | individual setting | global setting |\n|---|---|---|")
    names = dict.fromkeys(LABELME_SETTINGS["individual"] + LABELME_SETTINGS["global"])
    for m in names:
        cells = []
        for setting in ("individual", "global"):
            r = report.get(setting, {}).get(m)
            cells.append("—" if r is None else
                         f"{np.mean(r['acc']):.3f} ± {np.std(r['acc']):.3f}")
        print(f"| {m} | {cells[0]} | {cells[1]} |")
    return report


# ---------------------------------------------------------------------------- main
def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--seeds", type=int, default=5, help="LabelMe seeds")
    p.add_argument("--sim-seeds", type=int, default=3, help="simulator seeds per T")
    p.add_argument("--T", type=int, nargs="+", default=list(T_VALUES))
    p.add_argument("--methods", nargs="+", default=list(SIM_METHODS))
    p.add_argument("--labelme-methods", nargs="+", help="only these LabelMe rows")
    p.add_argument("--items", type=int, default=3000, help="simulated training items")
    p.add_argument("--per-item", type=int, default=5)
    p.add_argument("--noise", default="asymmetric", choices=("uniform", "asymmetric"),
                   help="how each group's errors spread: to one other class per row "
                        "(systematic confusions) or uniformly")
    p.add_argument("--epochs", type=int, default=50, help="LabelMe epochs (best on valid)")
    p.add_argument("--sim-epochs", type=int, default=30)
    p.add_argument("--max-iter", type=int, default=50, help="EM iterations (paper: 50)")
    p.add_argument("--restarts", type=int, default=1)
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--skip-labelme", action="store_true")
    p.add_argument("--json", type=Path)
    p.add_argument("--quick", action="store_true", help="smoke run: T 100 and 10000, 1 seed")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.T = args.T[0]
        worker(args)
        return {}
    if args.quick:
        args.seeds, args.sim_seeds, args.T = 1, 1, [100, 10000]
        args.epochs, args.sim_epochs, args.max_iter, args.items = 5, 5, 5, 1000
        if args.methods == list(SIM_METHODS):   # one process per row: keep the smoke run short
            args.methods = ["MV", "DS", "CL-MW", "CMM"]
        if not args.labelme_methods:
            args.labelme_methods = ["MV", "DS", "CL-MW", "CMM", "CMM-ind", "MoG-layer"]
    report = {"backend": keras.backend.backend(),
              "args": {k: str(v) for k, v in vars(args).items()}}
    if CrowdLayer is None:
        print("crowd_keras.layers.CrowdLayer is not available: CL-MW rows are NaN")
    if not args.skip_scaling:
        print(f"Simulator: {args.items} train items × {args.per_item} labels, 3 classes, "
              f"experts / non-experts / spammers; test on {args.items} held-out items")
        report["scaling"] = scaling_table(args)
        print_scaling(report["scaling"], args.T)
    if not args.skip_labelme:
        print(f"\nLabelMe, {args.seeds} seeds (backend {keras.backend.backend()})")
        report["labelme"] = labelme_table(args)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    return report


if __name__ == "__main__":
    main()
