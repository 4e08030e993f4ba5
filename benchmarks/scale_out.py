"""Dawid-Skene on a Dask LocalCluster: seconds per EM iteration and bytes per annotation.

Simulated crowds of 10M and 100M annotations, generated partition by partition inside the
workers (no process ever holds them all), fitted by ``crowd_keras.distributed`` (E-step per
partition, M-step on a tree reduction of the statistics), then projected to 1B annotations
on N workers::

    python benchmarks/scale_out.py [--annotations 10000000 100000000] [--workers 2]
        [--memory-limit 6GiB] [--partition-annotations 2000000] [--iterations 5]

Per size: the time to generate and encode the partitions into blocks, the wall time per EM
iteration (mean over ``--iterations``, ``tol=0`` so that every run does them all), each
worker's peak resident memory (``ru_maxrss``) and, from it, bytes per annotation per worker,
net of the idle worker's memory (Python, numpy, pandas, Dask). The cluster listens on
127.0.0.1 only. ``--quick``: 1M annotations.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras.distributed.engine import PartitionedAnnotations  # noqa: E402
from crowd_keras.distributed.methods import method_for  # noqa: E402

PRIME_ANNOTATORS = 997   # a prime: item i's annotators (s_i + j·k_i) mod A are distinct


def simulate_partition(p: int, items_per_partition: int, per_item: int, n_classes: int,
                       seed: int) -> pd.DataFrame:
    """The annotations of items ``p·n .. (p+1)·n - 1``: each item gets ``per_item`` distinct
    annotators of ``PRIME_ANNOTATORS``, each right with its own accuracy (0.55-0.95, the same
    in every partition), else a uniformly wrong class. Indexed by item, sorted."""
    a, k = PRIME_ANNOTATORS, n_classes
    accuracy = np.random.default_rng(seed).uniform(0.55, 0.95, a)
    rng = np.random.default_rng([seed, p])
    n = items_per_partition
    truth = rng.integers(0, k, n)
    start, stride = rng.integers(0, a, n), rng.integers(1, a, n)
    annotators = (start[:, None] + np.arange(per_item)[None, :] * stride[:, None]) % a
    annotators = annotators.ravel().astype(np.int32)
    truth = np.repeat(truth, per_item)
    wrong = rng.random(len(annotators)) > accuracy[annotators]
    labels = np.where(wrong, (truth + rng.integers(1, k, len(truth))) % k, truth).astype(np.int8)
    items = np.repeat(np.arange(p * n, (p + 1) * n, dtype=np.int64), per_item)
    return pd.DataFrame({"worker": annotators, "label": labels},
                        index=pd.Index(items, name="task"))


def peak_rss() -> int:
    """Peak resident memory of this process, in bytes (Linux: ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def block_bytes(block) -> int:
    X = block.X
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + block.item_ids.nbytes


def in_memory(n_annotations: int, per_item: int, n_classes: int, iterations: int,
              seed: int) -> dict:
    """The same crowd fitted by the in-memory DawidSkene in this process (run in a fresh
    process): seconds per EM iteration and peak memory over the process after imports."""
    from crowd_keras import Annotations
    from crowd_keras.aggregation import DawidSkene

    base = current_rss()
    n_items = n_annotations // per_item
    df = simulate_partition(0, n_items, per_item, n_classes, seed).reset_index()
    ann = Annotations(df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy(),
                      n_items=n_items, n_annotators=PRIME_ANNOTATORS, n_classes=n_classes)
    del df
    start = time.perf_counter()
    model = DawidSkene(max_iter=iterations, tol=0.0, labeling_functions="ignore").fit(ann)
    seconds = (time.perf_counter() - start) / model.n_iter_
    return {"annotations": ann.n_annotations, "iter_s": seconds,
            "peak_per_ann": (peak_rss() - base) / ann.n_annotations}


def run_size(n_annotations: int, args) -> dict:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    per_item, k = args.per_item, args.classes
    items_per_partition = max(args.partition_annotations // per_item, 1)
    n_partitions = max(round(n_annotations / (items_per_partition * per_item)), 1)
    n_items = n_partitions * items_per_partition
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None,
                      memory_limit=args.memory_limit) as cluster, Client(cluster) as client:
        idle = client.run(current_rss)
        meta = simulate_partition(0, 1, per_item, k, args.seed).iloc[:0]
        divisions = tuple(range(0, n_items, items_per_partition)) + (n_items - 1,)
        ddf = dd.from_map(simulate_partition, range(n_partitions),
                          items_per_partition=items_per_partition, per_item=per_item,
                          n_classes=k, seed=args.seed, meta=meta, divisions=divisions,
                          enforce_metadata=False)
        start = time.perf_counter()
        data = PartitionedAnnotations.from_frame(ddf, classes=list(range(k)),
                                                 annotator_ids=list(range(PRIME_ANNOTATORS)))
        build = time.perf_counter() - start
        held = data.reduce(block_bytes)
        after_build = client.run(current_rss)
        fit = data.fit(method_for("dawid_skene", max_iter=args.iterations, tol=0.0))
        peaks = client.run(peak_rss)
        n, seconds = fit.summary.n_annotations, list(fit.seconds)
        del data, fit
    per_worker = n / args.workers
    net_peak = max(peaks[w] - idle[w] for w in peaks)
    net_held = max(after_build[w] - idle[w] for w in peaks)
    return {"annotations": n, "items": n_items, "partitions": n_partitions, "build_s": build,
            "iter_s": float(np.median(seconds)), "held_per_ann": held / n,
            "rss_per_ann": net_held / per_worker, "peak_per_ann": net_peak / per_worker,
            "peak_gib": max(peaks.values()) / 2 ** 30, "idle_gib": max(idle.values()) / 2 ** 30}


def report(rows: list, memory: list, args, load: tuple) -> list:
    lines = [f"Dawid-Skene on a Dask LocalCluster on 127.0.0.1: {args.workers} workers x 1 thread, "
             f"memory limit {args.memory_limit} each; {args.classes} classes, {PRIME_ANNOTATORS} "
             f"annotators, {args.per_item} annotations per item, "
             f"{args.partition_annotations:,} annotations per partition, generated in the workers; "
             f"median of {args.iterations} EM iterations. Load average of the (shared) machine "
             f"at start / end: {load[0]:.1f} / {load[1]:.1f} on {os.cpu_count()} cores.", "",
             "| annotations | partitions | generate + encode (s) | DS per iteration (s) | "
             "blocks (B/annotation) | worker RSS after encoding (B/annotation/worker) | "
             "worker peak RSS (GiB) | peak, net of idle worker (B/annotation/worker) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['annotations']:,} | {r['partitions']} | {r['build_s']:.1f} | "
                     f"{r['iter_s']:.2f} | {r['held_per_ann']:.1f} | {r['rss_per_ann']:.1f} | "
                     f"{r['peak_gib']:.2f} | {r['peak_per_ann']:.1f} |")
    for r in memory:
        lines.append(f"| {r['annotations']:,} in memory (DawidSkene, one process) | | | "
                     f"{r['iter_s']:.2f} | | | | {r['peak_per_ann']:.1f} (whole process) |")
    big = max(rows, key=lambda r: r["annotations"])
    rate = big["iter_s"] / (big["annotations"] / args.workers)   # s per annotation per worker
    lines += ["", f"Projection to 1B annotations from the {big['annotations']:,} run (per worker: "
              f"{big['peak_per_ann']:.0f} B/annotation at peak plus {big['idle_gib']:.2f} GiB "
              "idle; "
              f"time per iteration proportional to annotations per worker, {rate * 1e9:.1f} ns "
              "each; the reduction adds one set of A·K² statistics per partition):", "",
              "| workers | annotations per worker | peak memory per worker (GiB) | "
              "DS per iteration (s) |", "|---:|---:|---:|---:|"]
    for w in (8, 16, 32, 64):
        per = 1e9 / w
        lines.append(f"| {w} | {per / 1e6:.0f}M | "
                     f"{(per * big['peak_per_ann']) / 2 ** 30 + big['idle_gib']:.1f} | "
                     f"{per * rate:.1f} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotations", type=int, nargs="+", default=[10_000_000, 100_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="6GiB", help="per worker (Dask's limit)")
    parser.add_argument("--partition-annotations", type=int, default=2_000_000)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--per-item", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--in-memory-up-to", type=int, default=10_000_000,
                        help="also fit sizes up to this in one process, for comparison")
    parser.add_argument("--quick", action="store_true", help="1M annotations only")
    parser.add_argument("--data", help="unused (the runner passes it to every script)")
    args = parser.parse_args(argv)
    if args.quick:
        args.annotations = [1_000_000]
        args.partition_annotations = min(args.partition_annotations, 250_000)
    load = os.getloadavg()[0]
    rows, memory = [], []
    for n in args.annotations:
        rows.append(run_size(n, args))
        print(f"  {n:,} annotations: done", file=sys.stderr, flush=True)
    spawn = multiprocessing.get_context("spawn")
    for n in [n for n in args.annotations if n <= args.in_memory_up_to]:
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            memory.append(pool.submit(in_memory, n, args.per_item, args.classes,
                                      args.iterations, args.seed).result())
    print("\n".join(report(rows, memory, args, (load, os.getloadavg()[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
