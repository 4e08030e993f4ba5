"""Epoch time of the crowd layers on the available device (GPU if any), against the bare
classifier and crowd-kit's PyTorch layers, in float32 and mixed_float16.

For each noise layer (CrowdLayer MW, CoNAL with its gate, MixtureOfGroups with a membership
per annotator), each number of annotators and each precision: the steady epoch time (the
best epoch after the first, which compiles) of ``CrowdModel(classifier, layer)`` trained on
the padded annotations, of the same classifier alone on one label per item (the bare
classifier: what the crowd layer costs on top), and of crowd-kit's layer in its PyTorch
loop on the same data (``torch_peer.py``: CrowdLayer, CoNAL; crowd-kit has no mixture of
groups) on the same device. The crowd is simulated (8 classes, 64 features, 3 annotations
per item); the classifier is the benchmarks' MLP (Dense 128, Dropout, softmax). The
device, the Keras backend and whether it is a GPU head the output::

    python benchmarks/gpu.py                       # 100,000 items, 1,000 and 10,000 annotators
    python benchmarks/gpu.py --items 20000 --annotators 10000 --precisions float32 \\
        --batch-size 64                            # the CPU run of issue 21
    KERAS_BACKEND=jax python benchmarks/gpu.py ...   # also torch; TensorFlow is not needed

On a machine without a GPU it says so and runs on the CPU (use the smaller sizes there).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import keras  # noqa: E402

import torch_peer  # noqa: E402
from crowd_layer import EpochTimer  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, CrowdLayer,  # noqa: E402
                                MixtureOfGroups)
from crowd_keras.models import CrowdModel, LazyAdam  # noqa: E402

LAYERS = ("CrowdLayer MW", "CoNAL", "MixtureOfGroups")
PEERS = ("CrowdLayer MW", "CoNAL")   # crowd-kit has no mixture of groups
CLASSES, FEATURES, PER_ITEM = 8, 64, 3


def device_name() -> tuple[str, bool]:
    """(what runs the Keras backend, whether it is a GPU)."""
    backend = keras.backend.backend()
    try:
        if backend == "tensorflow":
            import tensorflow as tf

            gpus = tf.config.list_physical_devices("GPU")
            if gpus:
                details = tf.config.experimental.get_device_details(gpus[0])
                return f"GPU {details.get('device_name', gpus[0].name)}", True
        elif backend == "jax":
            import jax

            dev = jax.devices()[0]
            if dev.platform != "cpu":
                return f"GPU {dev.device_kind}", True
        elif backend == "torch":
            import torch

            if torch.cuda.is_available():
                return f"GPU {torch.cuda.get_device_name(0)}", True
    except Exception as exc:  # noqa: BLE001 - a broken driver reads as "no GPU"
        return f"CPU ({platform.processor() or platform.machine()}; GPU query failed: {exc})", False
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)", False


def classifier() -> keras.Model:
    return keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(128, activation="relu"),
                             keras.layers.Dropout(0.5),
                             # the probabilities in float32 under mixed_float16
                             keras.layers.Dense(CLASSES),
                             keras.layers.Activation("softmax", dtype="float32")])


def noise_layer(name: str, annotators: int) -> keras.layers.Layer:
    if name == "CrowdLayer MW":
        return CrowdLayer(annotators, "MW")
    if name == "CoNAL":
        return CommonNoiseAdaptation(annotators, CLASSES,
                                     gate=AnnotatorGate(annotators, embedding_dim=20))
    return MixtureOfGroups(3, CLASSES, num_annotators=annotators)


def steady(times: list) -> float:
    """Best epoch after the first (which traces and compiles)."""
    return float(min(times[1:])) if len(times) > 1 else float(times[0])


def keras_epoch(x, y, make_model, loss, epochs: int, batch: int, optimizer) -> float:
    keras.utils.set_random_seed(0)
    model = make_model()
    model.compile(optimizer(1e-3), loss=loss)
    timer = EpochTimer()
    model.fit(x, y, epochs=epochs, batch_size=batch, verbose=0, callbacks=[timer])
    return steady(timer.times)


def peer_epoch(name: str, sim, epochs: int, batch: int, gpu: bool) -> float:
    """crowd-kit's layer in its PyTorch loop, on CUDA when there is one (else n/a)."""
    if name not in PEERS or not torch_peer.available():
        return float("nan")
    try:
        import crowdkit.learning  # noqa: F401
    except ImportError:
        return float("nan")
    torch = torch_peer.torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if gpu and device == "cpu":   # a GPU for Keras but a CPU torch: not comparable
        return float("nan")
    data = {"annotations": sim.annotations, "x_train": sim.x, "x_test": sim.x[:10],
            "y_test": sim.y[:10]}
    run = torch_peer.crowdkit_crowd_layer if name == "CrowdLayer MW" else torch_peer.crowdkit_conal
    _, times = run(data, 0, epochs, device=device, batch_size=batch)
    return steady(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--precisions", nargs="+", default=["float32", "mixed_float16"],
                        choices=("float32", "mixed_float16"))
    parser.add_argument("--layers", nargs="+", default=list(LAYERS), choices=LAYERS)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run (the first "
                        "compiles; the best of the others is reported)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each model, "
                        "interleaved (the best epoch over all of them is reported)")
    parser.add_argument("--data", type=Path, help="unused: the crowds are simulated "
                        "(accepted as every benchmark script takes it)")
    parser.add_argument("--no-peer", action="store_true", help="skip crowd-kit's layers")
    args = parser.parse_args(argv)
    if torch_peer.available():
        torch_peer.torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    name, gpu = device_name()
    print(f"## Crowd layers per epoch on {name} (Keras backend {keras.backend.backend()})\n")
    if not gpu:
        print("No GPU found: this run is on the CPU.\n")
    print(f"{args.items:,} items, {PER_ITEM} annotations per item, {CLASSES} classes, "
          f"{FEATURES} features; batch {args.batch_size}; best epoch after the first over "
          f"{max(args.repeat, 1)} interleaved run(s); "
          "Adam for the bare classifier, LazyAdam (Adam off TensorFlow) for the crowd models; "
          "crowd-kit in its PyTorch loop on the same device\n")
    print("| precision | layer | annotators | bare classifier | crowd model | × bare | "
          "crowd-kit | ours / crowd-kit |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for annotators in args.annotators:
        sim = simulate_crowd(n_items=args.items, n_classes=CLASSES, n_annotators=annotators,
                             annotations_per_item=PER_ITEM, n_features=FEATURES, seed=0)
        ids, labels = sim.annotations.to_padded()
        first = labels[:, 0].astype("int32")   # one label per item for the bare classifier
        for precision in args.precisions:
            keras.mixed_precision.set_global_policy(precision)
            try:
                best = {}
                for _ in range(max(args.repeat, 1)):   # interleaved: the same machine state
                    runs = {"bare": lambda: keras_epoch(
                        sim.x, first, classifier, "sparse_categorical_crossentropy",
                        args.epochs, args.batch_size, keras.optimizers.Adam)}
                    for layer in args.layers:
                        runs[layer] = lambda layer=layer: keras_epoch(
                            sim.x, (ids, labels),
                            lambda: CrowdModel(classifier(), noise_layer(layer, annotators)),
                            None, args.epochs, args.batch_size, LazyAdam)
                        if not args.no_peer and precision == "float32" and layer in PEERS:
                            runs["peer " + layer] = lambda layer=layer: peer_epoch(
                                layer, sim, args.epochs, args.batch_size, gpu)
                    for key, run in runs.items():
                        best[key] = min(best.get(key, np.inf), run())
                bare = best["bare"]
                for layer in args.layers:
                    crowd, peer = best[layer], best.get("peer " + layer, float("nan"))
                    peer_cells = ("n/a | n/a" if np.isnan(peer)
                                  else f"{peer * 1e3:.0f} ms | {crowd / peer:.2f}")
                    print(f"| {precision} | {layer} | {annotators:,} | {bare * 1e3:.0f} ms | "
                          f"{crowd * 1e3:.0f} ms | {crowd / bare:.2f} | {peer_cells} |",
                          flush=True)
            finally:
                keras.mixed_precision.set_global_policy("float32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
