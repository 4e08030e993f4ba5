"""CoNAL (common noise adaptation): LabelMe and Music accuracy, and the synthetic sweep.

Same run, same data, same network as ``benchmarks/crowd_layer.py`` (MLP 128 + dropout 0.5,
torch-style initialisation, Adam 1e-3, batch 64), mean ± std over seeds, for:

* ``CoNAL``: ``CrowdModel(mlp, CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A, 20)))``;
* ``CoNAL fast`` / ``CL-MW fast``: the same layers starting at 3·I and learning 10× faster
  (``init_scale=3, learning_rate_multiplier=10``);
* ``CL-MW``: our crowd layer; ``MV`` / ``DS``: the MLP trained on aggregated labels;
* ``crowd-kit CoNAL``: crowd-kit's PyTorch CoNAL on the same MLP in torch.

Protocol (no test labels in model selection): LabelMe keeps the epoch with the best gold
*validation* accuracy; Music has no validation split and trains a fixed number of epochs.

The synthetic sweep follows the paper's Figure 4 (asymmetric common noise, 6 classes, 3
labels per item from 100 annotators with individual asymmetric noise of strength 0.3):
test accuracy against common-noise strength (proportion 0.5) and against the proportion of
common noise (strength 0.4), written as a table and ``benchmarks/out/conal_sweep.png``.

    python benchmarks/conal.py [--seeds 5] [--epochs 60] [--sweep-seeds 2]
    python benchmarks/conal.py --quick
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from benchmarks.common import DATA  # noqa: E402

import keras  # noqa: E402
from crowd_layer import (FAST, accuracy, callbacks, load_sets, mlp, run_aggregated,  # noqa: E402
                         run_crowd_layer, steady)

import torch_peer  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation  # noqa: E402
from crowd_keras.models import CrowdModel  # noqa: E402


def run_conal(data: dict, seed: int, epochs: int, **layer_kwargs) -> tuple[float, float]:
    keras.utils.set_random_seed(seed)
    ann = data["annotations"]
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    layer = CommonNoiseAdaptation(ann.n_annotators, ann.n_classes,
                                  gate=AnnotatorGate(ann.n_annotators, 20), **layer_kwargs)
    model = CrowdModel(clf, layer)
    model.compile(keras.optimizers.Adam(1e-3))
    timer, cbs = callbacks(data)
    model.fit(data["x_train"], ann, epochs=epochs, batch_size=64, verbose=0, callbacks=cbs)
    return accuracy(clf, data["x_test"], data["y_test"]), steady(timer.times)


def run(method: str, data: dict, seed: int, epochs: int) -> float:
    if method == "CoNAL":
        return run_conal(data, seed, epochs)[0]
    if method == "CoNAL fast":
        return run_conal(data, seed, epochs, **FAST)[0]
    if method == "CL-MW":
        return run_crowd_layer(data, "MW", seed, epochs)[0]
    if method == "CL-MW fast":
        return run_crowd_layer(data, "MW", seed, epochs, **FAST)[0]
    if method == "crowd-kit CoNAL":
        return torch_peer.crowdkit_conal(data, seed, epochs)[0] if torch_peer.available() \
            else float("nan")
    return run_aggregated(data, method.lower(), seed, epochs)[0]


def accuracy_rows(sets: dict, methods: list, seeds: int, epochs: int) -> list:
    rows = []
    for name, data in sets.items():
        for method in methods:
            accs = [run(method, data, seed, epochs) for seed in range(seeds)]
            rows.append((name, method, float(np.mean(accs)), float(np.std(accs)), accs))
            print(f"  {name:8s} {method:16s} {np.mean(accs):.3f} ± {np.std(accs):.3f}", flush=True)
    return rows


def sweep(seeds: int, epochs: int, quick: bool) -> tuple[list, list]:
    """Held-out accuracy of CoNAL, CL-MW and MV across the paper's Figure 4 settings."""
    strengths = (0.4, 0.6, 0.8) if quick else (0.4, 0.5, 0.6, 0.7, 0.8)
    proportions = (0.0, 0.5) if quick else (0.0, 0.3, 0.5, 0.7)
    settings = [("strength", s, s, 0.5) for s in strengths] + \
               [("proportion", p, 0.4, p) for p in proportions]
    rows = []
    for axis, value, strength, proportion in settings:
        scores = {"CoNAL": [], "CL-MW": [], "MV": []}
        for seed in range(seeds):
            sim = simulate_crowd(n_items=4000, n_classes=6, n_annotators=100,
                                 annotations_per_item=3, n_features=20,
                                 individual_noise="asymmetric", annotator_accuracy=0.7,
                                 common_noise="asymmetric" if proportion > 0 else None,
                                 common_strength=strength, common_proportion=proportion,
                                 seed=seed)
            train, test = np.arange(3000), np.arange(3000, 4000)
            data = {"x_train": sim.x[train], "annotations": sim.annotations.subset(train),
                    "x_test": sim.x[test], "y_test": sim.y[test]}
            for method in scores:
                scores[method].append(run(method, data, seed, epochs))
        rows.append((axis, value, {m: float(np.mean(v)) for m, v in scores.items()}))
        print(f"  {axis} {value}: " + ", ".join(f"{m} {np.mean(v):.3f}" for m, v in scores.items()),
              flush=True)
    return rows, list(scores)


def plot_sweep(rows: list, methods: list, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, axis in zip(axes, ("strength", "proportion")):
        sel = [r for r in rows if r[0] == axis]
        for method in methods:
            ax.plot([r[1] for r in sel], [r[2][method] for r in sel], marker="o", label=method)
        ax.set_xlabel(f"common noise {axis}")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("Asymmetric common noise (simulated, paper Figure 4 protocol)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--sweep-seeds", type=int, default=2)
    parser.add_argument("--sweep-epochs", type=int, default=30)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--quick", action="store_true", help="1 seed, few epochs, small sweep")
    parser.add_argument("--skip-sweep", action="store_true", help="real sets only")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.epochs, args.sweep_seeds, args.sweep_epochs = 1, 3, 1, 3

    sets = load_sets(args.data)   # Music standardised on its train split, as in crowd_layer.py
    methods = ["CoNAL", "CoNAL fast", "CL-MW", "CL-MW fast", "MV", "DS", "crowd-kit CoNAL"]
    rows = accuracy_rows(sets, methods, args.seeds, args.epochs)
    print(f"\n## Test accuracy ({args.seeds} seeds, {args.epochs} epochs; LabelMe selected on its "
          "validation split, Music at the last epoch)\n")
    print("| set | " + " | ".join(methods) + " |")
    print("|---|" + "---:|" * len(methods))
    for name in sets:
        cells = {m: (mu, sd) for n, m, mu, sd, _ in rows if n == name}
        print(f"| {name} | " + " | ".join(f"{cells[m][0]:.3f} ± {cells[m][1]:.3f}" for m in methods)
              + " |")

    if args.skip_sweep:
        return 0
    sweep_rows, sweep_methods = sweep(args.sweep_seeds, args.sweep_epochs, args.quick)
    print(f"\n## Synthetic sweep ({args.sweep_seeds} seeds; held-out accuracy)\n")
    print("| varied | value | " + " | ".join(sweep_methods) + " |")
    print("|---|---:|" + "---:|" * len(sweep_methods))
    for axis, value, scores in sweep_rows:
        print(f"| {axis} | {value} | " + " | ".join(f"{scores[m]:.3f}" for m in sweep_methods) + " |")
    plot_sweep(sweep_rows, sweep_methods, args.out / "conal_sweep.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
