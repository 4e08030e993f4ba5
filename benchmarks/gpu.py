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
        --batch-size 64 --alternate 16             # the CPU run of issue 21
    KERAS_BACKEND=jax python benchmarks/gpu.py ...   # also torch; TensorFlow is not needed

On a machine without a GPU it says so and runs on the CPU (use the smaller sizes there).
``--alternate ROUNDS`` builds each model once and trains the bare classifier and the crowd
models one epoch each in turn, ROUNDS times; the table then gives median epochs, and × bare
is the median of the rounds' ratios, each between two epochs run one after the other. On a
machine whose speed drifts from minute to minute (this project's CPU machines: 20-50%
between runs) that ratio holds still where the best epoch of separate runs does not.
The GPU records (``results/gpu.md`` on JAX, ``results/gpu_torch.md`` on torch) were made on a
machine with CUDA builds of jax and torch and no TensorFlow, the project on ``PYTHONPATH``::

    KERAS_BACKEND=jax python benchmarks/record.py gpu.py --alternate 8
    KERAS_BACKEND=torch python benchmarks/record.py --as gpu_torch gpu.py --annotators 10000 \
        --alternate 3

On a GPU the table also counts the host round trips of a training epoch: after the timed
epochs each model trains one more epoch under the backend's guard (torch: CUDA's
synchronisation debug mode, every call that makes the host wait for the GPU; JAX: the
device-to-host transfer guard; TensorFlow: not counted), and the list under the table names
the code that made them (the innermost crowd_keras frame that Keras called, else Keras').
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import os
import platform
import re
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

if os.environ.get("KERAS_BACKEND") == "jax":
    # JAX's transfer guard logs through the C++ log, whose level jax sets to 1 (warnings) when
    # unset: the host-sync count needs 0. The 2026-11-27 08:46 record ran without it and
    # counted 0 transfers where the "disallow" guard then found our warm-up callback's.
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"

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


def compiled_model(make_model, loss, optimizer) -> keras.Model:
    """``make_model()`` seeded (the same start for every run) and compiled with
    ``optimizer(1e-3)``."""
    keras.utils.set_random_seed(0)
    model = make_model()
    model.compile(optimizer(1e-3), loss=loss)
    return model


def keras_epoch(x, y, make_model, loss, epochs: int, batch: int, optimizer,
                syncs: "SyncCount | None" = None) -> float:
    """Steady epoch time; with ``syncs``, one more epoch of the compiled model is counted."""
    model = compiled_model(make_model, loss, optimizer)
    timer = EpochTimer()
    model.fit(x, y, epochs=epochs, batch_size=batch, verbose=0, callbacks=[timer])
    if syncs is not None:
        with syncs:
            model.fit(x, y, epochs=1, batch_size=batch, verbose=0)
        syncs.locate_first(lambda: model.fit(x, y, epochs=1, batch_size=batch, verbose=0))
    return steady(timer.times)


def alternating_epochs(fits: dict, rounds: int) -> dict:
    """Epoch times of several models trained in turn: each ``fits[key]()`` trains its model
    one epoch; the first call of each compiles and is not counted, then ``rounds`` rounds of
    one epoch of every model, in the same order. ``{key: [seconds per round]}``."""
    for fit in fits.values():
        fit()
    times = {key: [] for key in fits}
    for _ in range(rounds):
        for key, fit in fits.items():
            start = time.perf_counter()
            fit()
            times[key].append(time.perf_counter() - start)
    return times


def median_ratio(times: list, base: list) -> float:
    """Median over rounds of ``times[r] / base[r]``: each ratio compares two epochs run one
    after the other, in the same state of the machine (the ratio of the medians would
    compare epochs of different rounds)."""
    return float(np.median(np.asarray(times) / np.asarray(base)))


class StepTimer(keras.callbacks.Callback):
    """The median wall time of a training step in each epoch (``medians``, one per epoch):
    from one step's end to the next's, the first from its start. A burst of other work on a
    shared machine slows some steps of an epoch, which the median leaves out and the epoch's
    total keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.medians = []

    def on_epoch_begin(self, epoch, logs=None):
        self._steps, self._last = [], None

    def on_train_batch_begin(self, batch, logs=None):
        if self._last is None:
            self._last = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        self._steps.append(now - self._last)
        self._last = now

    def on_epoch_end(self, epoch, logs=None):
        self.medians.append(float(np.median(self._steps)))


def epoch_fit(x, y, make_model, loss, batch: int, optimizer, step_times: bool = False):
    """A compiled model's ``fit`` of one epoch, as a function. With ``step_times`` its
    ``step_medians`` lists the median step time of each epoch it ran (:class:`StepTimer`).
    CPU only: a batch-end callback makes Keras read the step's logs back at every step, a
    host sync per step on a GPU."""
    model = compiled_model(make_model, loss, optimizer)
    timer = StepTimer() if step_times else None

    def fit():
        model.fit(x, y, epochs=1, batch_size=batch, verbose=0,
                  callbacks=[timer] if timer else None)

    fit.step_medians = timer.medians if timer else None
    return fit


def _where(stack) -> str:
    """Who made a host sync: the innermost crowd_keras frame that Keras called (a layer, loss
    or optimizer of ours), else the innermost Keras frame (Keras' own: its data feed, loss
    scaling), else the innermost frame. ``CrowdModel.fit`` around Keras' loop is not blamed."""
    def inside(frame, part):
        return part in frame.filename.replace(os.sep, "/")

    def name(frame, part):
        rest = frame.filename.replace(os.sep, "/").split(part, 1)[1]
        return f"{part.strip('/')}/{rest}:{frame.lineno} ({frame.name})"

    first_keras = next((i for i, f in enumerate(stack) if inside(f, "/keras/")), len(stack))
    ours = [f for f in stack[first_keras:] if inside(f, "/crowd_keras/")]
    if ours:
        return name(ours[-1], "/crowd_keras/")
    theirs = [f for f in stack if inside(f, "/keras/")]
    if theirs:
        return name(theirs[-1], "/keras/")
    return f"{stack[-1].filename}:{stack[-1].lineno}" if stack else "?"


class SyncCount:
    """Counts the host round trips of the code run inside ``with`` on a GPU backend.

    torch: ``torch.cuda.set_sync_debug_mode("warn")`` warns at every call that makes the
    host wait for the GPU (``.item()``, ``nonzero``, a copy to the host); each warning is
    attributed to its Python frame. JAX: ``transfer_guard_device_to_host("log")`` logs every
    device-to-host transfer on stderr (read back from the file descriptor); the places are
    then found by one more run under ``"disallow"``, which raises at the first. ``count``
    is None where the backend has no such guard (TensorFlow, or no GPU).
    """

    def __init__(self, backend: str) -> None:
        self.backend, self.count, self.where = backend, None, collections.Counter()

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        if self.backend == "torch":
            import torch

            self.count = 0

            def record(message, category, *args, **kwargs):
                if "synchronizing" in str(message).lower():
                    self.count += 1
                    self.where[_where(traceback.extract_stack()[:-1])] += 1

            self._stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("always")
            warnings.showwarning = record
            torch.cuda.set_sync_debug_mode("warn")
            self._stack.callback(torch.cuda.set_sync_debug_mode, 0)
        elif self.backend == "jax":
            import jax

            self._log = tempfile.TemporaryFile()
            sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(self._log.fileno(), 2)
            self._stack.callback(os.close, saved)
            self._stack.callback(os.dup2, saved, 2)
            self._stack.enter_context(jax.transfer_guard_device_to_host("log"))
        return self

    def __exit__(self, *exc):
        self._stack.close()
        if self.backend == "jax":
            self._log.seek(0)
            text = self._log.read().decode(errors="replace")
            self._log.close()
            self.count = len(re.findall(r"device-to-host transfer:", text))
        return False

    def locate_first(self, run) -> None:
        """JAX: run ``run()`` under ``"disallow"`` and keep where the first transfer is (the
        log's count is 0 where the C++ log level hides it: then the count reads "≥1")."""
        if self.backend != "jax":
            return
        import jax

        try:
            with jax.transfer_guard_device_to_host("disallow"):
                run()
        except Exception as exc:  # noqa: BLE001 - the guard's error is the finding
            if "transfer" not in str(exc).lower():
                raise
            self.where[_where(traceback.extract_tb(exc.__traceback__)) + " (the first)"] += 1
            if not self.count:
                self.count = "≥1"


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


def alternated_run(sim, targets, first, annotators: int, precision: str, args, gpu: bool,
                   counted: bool) -> tuple:
    """``--alternate``: ``(median epoch by model, median crowd / bare ratio by layer, host
    sync counts)``; crowd-kit's layers are timed as without it (their own loop)."""
    step_times = not gpu   # median step times on the CPU only (see epoch_fit)
    fits = {"bare": epoch_fit(sim.x, first, classifier, "sparse_categorical_crossentropy",
                              args.batch_size, keras.optimizers.Adam, step_times),
            # the same classifier under the crowd models' optimizer: shows how much of a
            # crowd / bare ratio is the optimizer's rather than the noise layer's
            "bare LazyAdam": epoch_fit(sim.x, first, classifier,
                                       "sparse_categorical_crossentropy", args.batch_size,
                                       LazyAdam, step_times)}
    for layer in args.layers:
        fits[layer] = epoch_fit(
            sim.x, targets,
            lambda layer=layer: CrowdModel(classifier(), noise_layer(layer, annotators)),
            None, args.batch_size, LazyAdam, step_times)
    times = alternating_epochs(fits, args.alternate)
    best = {key: float(np.median(t)) for key, t in times.items()}
    ratio = {layer: median_ratio(times[layer], times["bare"]) for layer in args.layers}
    ratio["bare LazyAdam"] = median_ratio(times["bare LazyAdam"], times["bare"])
    if step_times:   # the same from each epoch's median step (compiling epoch left out)
        medians = {key: fit.step_medians[1:1 + args.alternate] for key, fit in fits.items()}
        ratio.update({"step " + key: median_ratio(medians[key], medians["bare"])
                      for key in fits if key != "bare"})
    syncs = {}
    for key, fit in fits.items() if counted else ():   # one more epoch, counted
        syncs[key] = SyncCount(keras.backend.backend())
        with syncs[key]:
            fit()
        syncs[key].locate_first(fit)
    if not args.no_peer and precision == "float32":
        for layer in (layer for layer in args.layers if layer in PEERS):
            best["peer " + layer] = min(peer_epoch(layer, sim, args.epochs, args.batch_size, gpu)
                                        for _ in range(max(args.repeat, 1)))
    return best, ratio, syncs


def step_cell(ratio: dict, key: str) -> str:
    """The table's median-step ratio of ``key`` (``--alternate`` only), else n/a."""
    value = ratio.get("step " + key)
    return "n/a" if value is None else f"{value:.2f}"


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
    parser.add_argument("--alternate", type=int, default=0, metavar="ROUNDS",
                        help="instead of --epochs/--repeat: build each model once and train "
                        "the bare classifier and the crowd models one epoch each in turn, "
                        "ROUNDS times (after a compiling epoch); report median epochs and the "
                        "median of the rounds' crowd / bare ratios (crowd-kit: --epochs as "
                        "before)")
    parser.add_argument("--data", type=Path, help="unused: the crowds are simulated "
                        "(accepted as every benchmark script takes it)")
    parser.add_argument("--no-peer", action="store_true", help="skip crowd-kit's layers")
    args = parser.parse_args(argv)
    if torch_peer.available():
        torch_peer.torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    name, gpu = device_name()
    how = (f"median epoch over {args.alternate} rounds of one epoch of each model in turn, "
           "after a compiling epoch (× bare: the median of the rounds' crowd / bare ratios; "
           "median step (CPU): the same from each epoch's median step time, which leaves "
           "out bursts of other work; "
           f"crowd-kit: best epoch after the first over {max(args.repeat, 1)} run(s))"
           if args.alternate else
           f"best epoch after the first over {max(args.repeat, 1)} interleaved run(s)")
    print(f"## Crowd layers per epoch on {name} (Keras backend {keras.backend.backend()})\n")
    if not gpu:
        print("No GPU found: this run is on the CPU.\n")
    print(f"{args.items:,} items, {PER_ITEM} annotations per item, {CLASSES} classes, "
          f"{FEATURES} features; batch {args.batch_size}; {how}; "
          "Adam for the bare classifier, LazyAdam (Adam off TensorFlow) for the crowd models; "
          "crowd-kit in its PyTorch loop on the same device\n")
    counted = gpu and keras.backend.backend() in ("torch", "jax")
    print("| precision | layer | annotators | bare classifier | crowd model | × bare | "
          "× bare, median step | crowd-kit | ours / crowd-kit | "
          "host syncs / epoch (bare, crowd) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    places = {}
    for annotators in args.annotators:
        sim = simulate_crowd(n_items=args.items, n_classes=CLASSES, n_annotators=annotators,
                             annotations_per_item=PER_ITEM, n_features=FEATURES, seed=0)
        ids, labels = sim.annotations.to_padded()
        first = labels[:, 0].astype("int32")   # one label per item for the bare classifier
        for precision in args.precisions:
            keras.mixed_precision.set_global_policy(precision)
            try:
                best, syncs, ratio = {}, {}, {}
                if args.alternate:
                    best, ratio, syncs = alternated_run(sim, (ids, labels), first, annotators,
                                                        precision, args, gpu, counted)
                else:
                    for repeat in range(max(args.repeat, 1)):   # interleaved: the same state
                        def counter(key):   # the first repeat counts the host round trips
                            if counted and repeat == 0:
                                syncs[key] = SyncCount(keras.backend.backend())
                                return syncs[key]
                            return None

                        runs = {"bare": lambda: keras_epoch(
                            sim.x, first, classifier, "sparse_categorical_crossentropy",
                            args.epochs, args.batch_size, keras.optimizers.Adam,
                            counter("bare"))}
                        for layer in args.layers:
                            runs[layer] = lambda layer=layer: keras_epoch(
                                sim.x, (ids, labels),
                                lambda: CrowdModel(classifier(), noise_layer(layer, annotators)),
                                None, args.epochs, args.batch_size, LazyAdam, counter(layer))
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
                    sync_cell = (f"{syncs['bare'].count}, {syncs[layer].count}" if counted
                                 else "n/a")
                    print(f"| {precision} | {layer} | {annotators:,} | {bare * 1e3:.0f} ms | "
                          f"{crowd * 1e3:.0f} ms | {ratio.get(layer, crowd / bare):.2f} | "
                          f"{step_cell(ratio, layer)} | {peer_cells} | "
                          f"{sync_cell} |", flush=True)
                if "bare LazyAdam" in best:   # --alternate: the optimizer's share
                    print(f"| {precision} | none (bare classifier, LazyAdam) | {annotators:,} | "
                          f"{bare * 1e3:.0f} ms | {best['bare LazyAdam'] * 1e3:.0f} ms | "
                          f"{ratio['bare LazyAdam']:.2f} | {step_cell(ratio, 'bare LazyAdam')} | "
                          "n/a | n/a | n/a |", flush=True)
                for key, count in syncs.items():
                    for where, n in count.where.items():
                        places.setdefault((key, where), []).append(
                            f"{precision}, {annotators:,}: {n}")
            finally:
                keras.mixed_precision.set_global_policy("float32")
    steps = -(-args.items // args.batch_size)
    if counted:
        print(f"\nHost syncs: in one more epoch ({steps} steps) of each model after the timed "
              "ones" + (" (torch: CUDA sync debug mode)" if keras.backend.backend() == "torch"
                        else " (JAX: device-to-host transfer guard)") + "; where they come from:")
        for (key, where), counts in places.items():
            print(f"- {key}: {where}: {'; '.join(counts)}")
        if not places:
            print("- none")
    elif not gpu:
        print("\nHost syncs are counted on a GPU only (torch and JAX backends).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
