"""Fit time and peak memory of every label model from 100,000 to 10,000,000 annotations.

One simulated crowd per size (``crowd_keras.datasets.simulate_crowd``: 4 classes, 5
annotations per item, one annotator per 100 annotations, accuracies uniform in 0.5-0.9, seed
0), fitted by majority vote, Dawid-Skene, CoNAL and mixture of groups without features, and
LIA-E (LIA without item features), each with its defaults. Each fit runs in a fresh process
that loads the crowd from a file (the imports, TensorFlow's included, before the clock
starts), so its peak memory is its own: the peak resident set during the fit above the
resident set before it (Linux ``VmHWM`` after resetting it). Times are the best of
``--repeat`` fits (fewer when a fit takes over a minute); the ratio is to Dawid-Skene's fit on
the same crowd in the same run, µs / annotation is the fit time divided by the annotations,
and µs / annotation / iteration divides that by the EM iterations the fit ran (for the mixture
of groups, those of all its restarts: ``restart_n_iter_``), the cost of one pass of the
model's EM, which a linear model keeps constant across sizes::

    python benchmarks/scaling.py [--sizes 100000 1000000 10000000] [--models ...]
        [--repeat 3]

The 10M rows take minutes (LIA-E most); ``--sizes 100000 1000000`` is the short run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("majority_vote", "dawid_skene", "conal", "mixture_of_groups", "lia", "auto", "ibcc",
          "ebcc", "bwa")
NAMES = {"majority_vote": "majority vote", "dawid_skene": "Dawid-Skene", "conal": "CoNAL",
         "mixture_of_groups": "mixture of groups", "lia": "LIA-E", "auto": "auto (default)",
         "ibcc": "IBCC", "ebcc": "EBCC", "bwa": "BWA"}
PER_ITEM, PER_ANNOTATOR, CLASSES = 5, 100, 4
SLOW_S = 60.0    # after a fit this long, no more repeats


def simulate(n_annotations: int, folder: Path) -> Path:
    """Simulate the crowd of one size and save it (codes and truth) for the child processes."""
    from crowd_keras.datasets import simulate_crowd

    sim = simulate_crowd(n_items=n_annotations // PER_ITEM, n_classes=CLASSES,
                         n_annotators=max(n_annotations // PER_ANNOTATOR, PER_ITEM),
                         annotations_per_item=PER_ITEM, seed=0)
    ann = sim.annotations
    path = folder / f"crowd_{n_annotations}.npz"
    np.savez(path, items=ann.items, annotators=ann.annotators, labels=ann.labels,
             truth=sim.y, shape=np.array([ann.n_items, ann.n_annotators, ann.n_classes]))
    return path


def _rss_kib(field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process in KiB (0 where /proc is not available)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak() -> bool:
    """Reset the peak resident set (Linux: write 5 to ``clear_refs``)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def child(model_name: str, path: Path, repeat: int) -> dict:
    """Load the crowd, fit one model ``repeat`` times; time, peak memory, accuracy."""
    from crowd_keras import Annotations
    from crowd_keras.aggregation import get_label_model

    if model_name == "lia":
        import crowd_keras.lia.label_model  # noqa: F401 - TensorFlow's import off the clock
    data = np.load(path)
    n_items, n_annotators, n_classes = (int(v) for v in data["shape"])
    times, peaks, model = [], [], None
    for _ in range(max(int(repeat), 1)):
        # a fresh Annotations per fit: cached views (incidence, padding) count as fit work
        ann = Annotations(data["items"], data["annotators"], data["labels"], n_items=n_items,
                          n_annotators=n_annotators, n_classes=n_classes)
        model = get_label_model(model_name)
        reset = _reset_peak()
        before = _rss_kib("VmRSS")
        max_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        model.fit(ann)
        times.append(time.perf_counter() - start)
        peak = _rss_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peaks.append(max(peak - before, 0) if reset or peak > max_before else float("nan"))
        if times[-1] > SLOW_S:
            break
    truth = data["truth"]
    n_iter = int(getattr(model, "n_iter_", 0) or 0)
    restarts = getattr(model, "restart_n_iter_", None)   # the mixture of groups' restarts
    return {"time": min(times), "fits": len(times), "peak_mib": float(np.nanmax(peaks)) / 1024,
            "accuracy": float((model.predict() == truth).mean()), "n_iter": n_iter,
            "all_iter": n_iter if restarts is None else int(np.sum(restarts))}


def run_child(model_name: str, path: Path, repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--child", model_name, str(path), "--repeat", str(repeat)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if out.returncode != 0:
        raise RuntimeError(f"{model_name} on {path.name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, help="unused: the crowds are simulated "
                        "(accepted as every benchmark script takes it)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.repeat)))
        return 0
    models = [m for m in MODELS if m in args.models or m == "dawid_skene"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = simulate(size, Path(tmp))
            results = {}
            for name in models:
                results[name] = run_child(name, path, args.repeat)
                print(f"  {size:,} {name}: {results[name]['time']:.2f} s", file=sys.stderr,
                      flush=True)
            path.unlink()
            rows.append((size, results))
    print_table(rows, models)
    return 0


def _seconds(t: float) -> str:
    return f"{t * 1e3:.0f} ms" if t < 1 else f"{t:.2f} s"


def print_table(rows: list, models: list) -> None:
    print("## Label model fit time and peak memory by size (simulated crowds, one run)\n")
    print(f"{CLASSES} classes, {PER_ITEM} annotations per item, one annotator per "
          f"{PER_ANNOTATOR} annotations; each fit in a fresh process, best of the fits; "
          "ratio = fit time / Dawid-Skene's on the same crowd; peak = resident memory above "
          "the crowd's during the fit\n")
    print("| annotations | items × annotators | model | fit | × DS | µs / annotation | "
          "µs / annotation / iteration | peak MiB | EM iterations | accuracy |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for size, results in rows:
        ds = results["dawid_skene"]["time"]
        shape = f"{size // PER_ITEM:,} × {max(size // PER_ANNOTATOR, PER_ITEM):,}"
        for name in models:
            r = results[name]
            every = r["all_iter"]
            per_iter = f"{r['time'] / size / every * 1e6:.3f}" if every else "–"
            iters = f"{r['n_iter']}" if every == r["n_iter"] else \
                f"{r['n_iter']} ({every} with restarts)"
            print(f"| {size:,} | {shape} | {NAMES[name]} | {_seconds(r['time'])} | "
                  f"{r['time'] / ds:.1f}× | {r['time'] / size * 1e6:.2f} | {per_iter} | "
                  f"{r['peak_mib']:.0f} | {iters} | {r['accuracy']:.4f} |")
    limits = {"conal": 10.0, "mixture_of_groups": 10.0, "lia": 20.0}
    over = [f"{NAMES[name]} at {size:,} ({results[name]['time'] / results['dawid_skene']['time']:.0f}×)"
            for size, results in rows for name, limit in limits.items()
            if name in results and results[name]["time"] > limit * results["dawid_skene"]["time"]]
    print(f"\nabove the issue's bound (CoNAL, mixture of groups ≤ 10× DS; LIA-E ≤ 20×): "
          f"{', '.join(over) if over else 'none'}")


if __name__ == "__main__":
    sys.exit(main())
