"""CrowdLayer: test accuracy on LabelMe and Music, epoch times, and scaling in annotators.

Same run, same data, same network (MLP: Dense 128 relu, Dropout 0.5, Dense K softmax, initialised
like torch's ``nn.Linear`` everywhere), Adam 1e-3, batch 64, for every method:

* ``CL-<variant>``: crowd-keras ``CrowdModel(mlp, CrowdLayer(A, variant))`` fed the indexed
  (padded) annotations, the paper's identity start;
* ``CL-MW fast``: the same with ``init_scale=3, learning_rate_multiplier=10`` (the annotator
  matrices start at 3·I and move 10× faster under Adam; see ``CrowdLayer``);
* ``MV`` / ``DS``: the MLP trained on majority-vote / Dawid-Skene hard labels;
* ``crowd-kit``: crowd-kit's PyTorch ``CrowdLayer(K, A, "mw")`` on the same architecture
  written in torch, applied to the softmax output as in the paper, loss = mean cross-entropy
  over the annotations of the batch.

Protocol (no test labels in model selection): LabelMe keeps the epoch with the best accuracy
on its gold *validation* split; Music has no validation split, so it trains a fixed number of
epochs. Mean ± std over seeds.

Timing: mean epoch time (epochs 2..n) of the crowd model vs the bare classifier on LabelMe,
and of the indexed crowd layer with the same number of annotations spread over 100 vs 10,000
annotators (synthetic, 20,000 items × 3 annotations, 8 classes), with Keras' Adam (which
updates all A × K × K annotator weights every step) and with ``crowd_keras.models.LazyAdam``
(only the annotators in the batch; TensorFlow backend). Best of 2 interleaved repeats.

    python benchmarks/crowd_layer.py [--data ../shared/data] [--seeds 5] [--epochs 60]
    python benchmarks/crowd_layer.py --quick       # smoke run: 1 seed, 3 epochs, MW only
    python benchmarks/crowd_layer.py --seeds 20 --sets LabelMe --methods MV,crowd-kit,CL-MW \
        --skip-scaling                              # many seeds, the rows that matter
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import keras  # noqa: E402

from crowd_keras.aggregation import get_label_model  # noqa: E402
from crowd_keras.datasets import load_labelme, load_music  # noqa: E402
from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.crowd_layer.layers import CONN_TYPES  # noqa: E402
from crowd_keras.models import CrowdModel, LazyAdam, TruthValidation  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.common import DATA  # noqa: E402
import torch_peer  # noqa: E402

try:
    from crowdkit.learning import CrowdLayer as KitCrowdLayer
except ImportError:  # the peer is optional (bench extra)
    KitCrowdLayer = None

BATCH = 64
# ``CL-MW fast`` / ``CoNAL fast``: noise layers that start at 3·I and learn 10× faster
FAST = {"init_scale": 3.0, "learning_rate_multiplier": 10.0}
KNOWN_METHODS = ("MV", "DS", "crowd-kit", "CL-MW fast")   # and CL-<variant>


class EpochTimer(keras.callbacks.Callback):
    """Wall time of each epoch (list it first so later callbacks are not counted)."""

    def on_train_begin(self, logs=None):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)


def steady(times: list) -> float:
    """Mean epoch time without the first (compilation) epoch."""
    return float(np.mean(times[1:])) if len(times) > 1 else float(times[0])


def torch_dense(units: int, fan_in: int, activation: str) -> keras.layers.Dense:
    """``Dense`` initialised like torch's ``nn.Linear``: U(±1/√fan_in) for kernel and bias.

    The same initialisation for every method (and crowd-kit's torch network). It matters for
    the crowd layer: with Keras' default Glorot init, 2 of 5 LabelMe seeds of CL-MW ended
    near 0.75 (mean 0.817 ± 0.058) against 0.871 ± 0.005 with this one (measured here).
    """
    init = keras.initializers.RandomUniform(-1 / fan_in ** 0.5, 1 / fan_in ** 0.5)
    return keras.layers.Dense(units, activation=activation, kernel_initializer=init,
                              bias_initializer=init)


def mlp(n_features: int, n_classes: int) -> keras.Model:
    return keras.Sequential([keras.Input((n_features,)),
                             torch_dense(128, n_features, "relu"),
                             keras.layers.Dropout(0.5),
                             torch_dense(n_classes, 128, "softmax")])


def accuracy(model, x, y) -> float:
    return float(np.mean(np.argmax(model.predict(x, batch_size=1024, verbose=0), -1) == y))


def callbacks(data: dict) -> tuple[EpochTimer, list]:
    timer = EpochTimer()
    cbs = [timer]
    if "x_valid" in data:  # gold validation split: model selection on it, never on test
        cbs.append(TruthValidation(data["x_valid"], data["y_valid"]))
    return timer, cbs


def load_sets(data: Path) -> dict:
    """LabelMe (as shipped) and Music with features standardised on the train split only."""
    lm = dict(load_labelme(data / "labelme"))
    mu = load_music(data / "music")
    mean, std = mu.x_train.mean(0), mu.x_train.std(0) + 1e-8
    music = dict(mu, x_train=(mu.x_train - mean) / std, x_test=(mu.x_test - mean) / std)
    return {"LabelMe": lm, "Music": music}


def run_crowd_layer(data: dict, variant: str, seed: int, epochs: int,
                    **layer_kwargs) -> tuple[float, float]:
    keras.utils.set_random_seed(seed)
    ann = data["annotations"]
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    model = CrowdModel(clf, CrowdLayer(ann.n_annotators, variant, **layer_kwargs))
    model.compile(keras.optimizers.Adam(1e-3))
    timer, cbs = callbacks(data)
    model.fit(data["x_train"], ann, epochs=epochs, batch_size=BATCH, verbose=0, callbacks=cbs)
    return accuracy(clf, data["x_test"], data["y_test"]), steady(timer.times)


def run_aggregated(data: dict, method: str, seed: int, epochs: int) -> tuple[float, float]:
    ann = data["annotations"]
    labels = get_label_model(method).fit(ann).predict()
    keras.utils.set_random_seed(seed)
    clf = mlp(data["x_train"].shape[1], ann.n_classes)
    clf.compile(keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
    timer, cbs = callbacks(data)
    if len(cbs) > 1:
        cbs[1].classifier = clf
    clf.fit(data["x_train"], labels, epochs=epochs, batch_size=BATCH, verbose=0, callbacks=cbs)
    return accuracy(clf, data["x_test"], data["y_test"]), steady(timer.times)


def run_crowdkit(data: dict, seed: int, epochs: int) -> tuple[float, float]:
    """crowd-kit's CrowdLayer (MW) on the same MLP, written in torch (see torch_peer.py)."""
    if KitCrowdLayer is None:
        return float("nan"), float("nan")
    acc, times = torch_peer.crowdkit_crowd_layer(data, seed, epochs)
    return acc, steady(times)


def accuracy_table(name: str, data: dict, methods: list, seeds: int, epochs: int) -> dict:
    results = {}
    for method in methods:
        accs, times = [], []
        for seed in range(seeds):
            if method == "CL-MW fast":
                acc, t = run_crowd_layer(data, "MW", seed, epochs, **FAST)
            elif method.startswith("CL-"):
                acc, t = run_crowd_layer(data, method[3:], seed, epochs)
            elif method == "crowd-kit":
                acc, t = run_crowdkit(data, seed, epochs)
            else:
                acc, t = run_aggregated(data, method.lower(), seed, epochs)
            accs.append(acc)
            times.append(t)
        results[method] = {"acc": accs, "epoch_s": float(np.mean(times))}
        print(f"  {name:8s} {method:10s} {np.mean(accs):.3f} ± {np.std(accs):.3f}  "
              f"({', '.join(f'{a:.3f}' for a in accs)})  epoch {np.mean(times) * 1e3:.0f} ms",
              flush=True)
    return results


def scaling(n_items: int, per_item: int, annotators: tuple, epochs: int, repeats: int,
            optimizer) -> dict:
    """Epoch time of the indexed crowd layer, same annotations over few or many annotators."""
    rng = np.random.default_rng(0)
    k, n_feat = 8, 64
    x = rng.normal(size=(n_items, n_feat)).astype(np.float32)
    labels = rng.integers(0, k, size=(n_items, per_item)).astype(np.int32)
    out = {a: [] for a in annotators}
    for _ in range(repeats):  # interleave to share the machine's noise between the settings
        for a in annotators:
            ids = rng.integers(0, a, size=(n_items, per_item)).astype(np.int32)
            keras.utils.set_random_seed(0)
            model = CrowdModel(mlp(n_feat, k), CrowdLayer(a, "MW"))
            model.compile(optimizer(1e-3))
            timer = EpochTimer()
            model.fit(x, (ids, labels), epochs=epochs, batch_size=BATCH, verbose=0,
                      callbacks=[timer])
            out[a].append(steady(timer.times))
    return {a: float(np.min(t)) for a, t in out.items()}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=60, help="LabelMe epochs (best on validation)")
    p.add_argument("--music-epochs", type=int, default=60, help="Music epochs (fixed)")
    p.add_argument("--variants", default="MW,VW,VB,VW+B,S")
    p.add_argument("--methods", help="comma list of the rows to run (default: MV, DS, crowd-kit "
                   "and every variant), e.g. MV,crowd-kit,CL-MW for a many-seed comparison")
    p.add_argument("--sets", default="LabelMe,Music", help="comma list: LabelMe, Music")
    p.add_argument("--scaling-items", type=int, default=20000)
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 3 epochs, MW only")
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.epochs, args.music_epochs, args.variants = 1, 3, 3, "MW"
        args.scaling_items = 2000
    if torch_peer.available():
        torch_peer.torch.set_num_threads(1)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    methods = ["MV", "DS", "crowd-kit"] + [f"CL-{v}" for v in variants]
    if "MW" in variants:
        methods.insert(methods.index("CL-MW") + 1, "CL-MW fast")
    if args.methods:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in methods if m not in KNOWN_METHODS
                   and not (m.startswith("CL-") and m[3:] in CONN_TYPES)]
        if unknown:
            p.error(f"unknown method(s) {unknown}; known: {', '.join(KNOWN_METHODS)}, CL-<variant>")
    set_names = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not set_names or any(s not in ("LabelMe", "Music") for s in set_names):
        p.error(f"--sets takes LabelMe and/or Music, got {args.sets!r}")
    report = {"backend": keras.backend.backend(), "seeds": args.seeds}

    if not args.skip_accuracy:
        sets = load_sets(args.data)
        print(f"Test accuracy, mean ± std over {args.seeds} seeds "
              f"(backend {keras.backend.backend()})")
        heads = {"LabelMe": "LabelMe (best on valid)", "Music": "Music (fixed epochs)"}
        for name in set_names:
            epochs = args.epochs if name == "LabelMe" else args.music_epochs
            report[name.lower()] = accuracy_table(name, sets[name], methods, args.seeds, epochs)
        print("\n| method | " + " | ".join(heads[n] for n in set_names)
              + f" | {set_names[0]} epoch ms |")
        print("|---|" + "---|" * (len(set_names) + 1))
        for m in methods:
            cells = [report[n.lower()][m]["acc"] for n in set_names]
            print(f"| {m} | " + " | ".join(f"{np.mean(a):.3f} ± {np.std(a):.3f}" for a in cells)
                  + f" | {report[set_names[0].lower()][m]['epoch_s'] * 1e3:.0f} |")
        if "labelme" in report and {"CL-MW", "MV"} <= set(report["labelme"]):
            ratio = report["labelme"]["CL-MW"]["epoch_s"] / report["labelme"]["MV"]["epoch_s"]
            report["epoch_ratio_layer_vs_bare"] = ratio
            print(f"\nLabelMe epoch time, CrowdLayer MW / bare classifier: {ratio:.2f}")

    if not args.skip_scaling:
        print(f"\nIndexed CrowdLayer MW, {args.scaling_items} items × 3 annotations, 8 classes:")
        report["scaling"] = {}
        for name, opt in (("Adam", keras.optimizers.Adam), ("LazyAdam", LazyAdam)):
            t = scaling(args.scaling_items, 3, (100, 10000), epochs=4 if not args.quick else 2,
                        repeats=2 if not args.quick else 1, optimizer=opt)
            ratio = t[10000] / t[100]
            report["scaling"][name] = {"100": t[100], "10000": t[10000], "ratio": ratio}
            print(f"  {name:8s}  100 annotators {t[100] * 1e3:.0f} ms/epoch, "
                  f"10,000 annotators {t[10000] * 1e3:.0f} ms/epoch, ratio {ratio:.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    return report


if __name__ == "__main__":
    main()
