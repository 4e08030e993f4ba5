"""The default label model (``auto``) on a Dask LocalCluster against the same fit in memory.

Simulated crowds (3 classes, 100 annotators, 3 annotations per item, as the Dask tutorial's),
each fitted three ways in the same run: ``AutoLabelModel().fit`` in one process; and
``crowd_keras.distributed.aggregate`` on a 2-worker ``LocalCluster`` (127.0.0.1, one thread
each, 2 partitions) twice, with the folds' held-out fits in lock-step (the library's
behaviour: ``LOCKSTEP_ANNOTATIONS``) and one fold's training set at a time
(``LOCKSTEP_ANNOTATIONS = 1``, the behaviour before lock-step). Per fit: wall seconds, rounds
of Dask tasks (``dask.compute`` calls) and the time as a multiple of the in-memory fit's. The
three must choose alike (checked: same ``chosen_``, held-out agreements equal to the last bit
between the two Dask runs)::

    python benchmarks/dask_default.py [--items 5000 20000 100000] [--workers 2]

``--quick``: 2,000 items only.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from crowd_keras import Annotations  # noqa: E402
from crowd_keras.aggregation import AutoLabelModel  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.distributed import aggregate  # noqa: E402
from crowd_keras.distributed import auto as dask_auto  # noqa: E402

LOCKSTEP = dask_auto.LOCKSTEP_ANNOTATIONS


def timed_aggregate(ddf, budget: int) -> tuple:
    """``(result, seconds, rounds)`` of ``aggregate(ddf)`` with ``LOCKSTEP_ANNOTATIONS =
    budget``; rounds counts ``dask.compute`` calls."""
    compute, rounds = dask.compute, [0]

    def counted(*args, **kwargs):
        rounds[0] += 1
        return compute(*args, **kwargs)

    dask.compute, dask_auto.LOCKSTEP_ANNOTATIONS = counted, budget
    try:
        start = time.perf_counter()
        result = aggregate(ddf, item="task", annotator="worker", label="label")
        return result, time.perf_counter() - start, rounds[0]
    finally:
        dask.compute, dask_auto.LOCKSTEP_ANNOTATIONS = compute, LOCKSTEP


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[5000, 20000, 100000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--data", help="unused (the runner passes it to every script)")
    args = parser.parse_args(argv)
    sizes = [2000] if args.quick else args.items
    from distributed import Client, LocalCluster

    print(f"auto on a Dask LocalCluster ({args.workers} workers x 1 thread, 127.0.0.1, "
          f"2 partitions) against AutoLabelModel().fit in one process; 3 classes, "
          f"100 annotators, 3 per item; lock-step groups up to {LOCKSTEP:,} annotations\n")
    print("| items | annotations | fit | chosen | seconds | Dask rounds | / in memory |")
    print("|---:|---:|---|---|---:|---:|---:|")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster):
        for n in sizes:
            df = simulate_crowd(n_items=n, n_classes=3, n_annotators=100, seed=0) \
                .annotations.to_frame()
            start = time.perf_counter()
            memory = AutoLabelModel().fit(Annotations.from_frame(df))
            base = time.perf_counter() - start
            ddf = dd.from_pandas(df, npartitions=2)
            together, t_together, r_together = timed_aggregate(ddf, LOCKSTEP)
            alone, t_alone, r_alone = timed_aggregate(ddf, 1)
            if not (together.model.chosen_ == alone.model.chosen_ == memory.chosen_
                    and together.model.heldout_agreement_ == alone.model.heldout_agreement_):
                raise SystemExit(f"{n} items: the fits chose differently")
            rows = [("in memory", base, ""), ("Dask, folds in lock-step", t_together, r_together),
                    ("Dask, one fold at a time (before)", t_alone, r_alone)]
            for name, seconds, rounds in rows:
                print(f"| {n:,} | {len(df):,} | {name} | {memory.chosen_} | {seconds:.1f} | "
                      f"{rounds} | {seconds / base:.1f}x |")


if __name__ == "__main__":
    main()
