"""Encoding speed: ``Annotations.from_frame`` / ``from_dense`` / ``from_label_matrix`` at 1M and
10M rows on one core, with the peak memory of each call.

Run ``python benchmarks/encoding.py`` (``--quick``: 1M rows only). Each row of the table is
measured in fresh subprocesses (so that peak RSS is the call's own: the process's peak
resident memory after the call minus before it, and tracemalloc's peak of numpy/pandas
allocations), ``--repeat`` of them (default 3), interleaved over the cases: the seconds are
the fastest process's first call (as in ``scaling.py``: this machine's timings vary by
20-50% from one run to the next), the memory the largest. Frames hold shuffled rows (the
worst case for the (item, annotator) sort): 10 annotations per item, 10,000 annotators,
5 classes; string ids are ``"task-N"`` / ``"user-N"`` (a prefix and a counter, the common
case) or 32 random hex digits (hashed ids, where no word of the string has few values: the
items hashed and checked, the 10,000 annotators factorised by pandas). Matrices have
``rows`` entries (rows/20 items × 20 annotators or labeling functions), half of them
missing (-1). Two more rows time the hex
frame's two id columns alone, through ``crowd_keras.string_codes.column_codes`` (what
``from_frame`` uses) and through the peer, ``pandas.factorize(sort=True)``, and the line
under the table gives their ratio in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CASES = ("from_frame int labels", "from_frame string labels", "from_frame string ids",
         "from_frame random hex ids", "from_dense", "from_label_matrix")
# the hex frame's two id columns factorised alone, ours against the peer (same run)
PEER_CASES = ("hex id columns: column_codes", "hex id columns: pandas.factorize")


def _data(case: str, rows: int):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    n_items, n_annotators = rows // 10, 10_000
    if case in ("from_dense", "from_label_matrix"):  # rows = entries: (rows/20) × 20, half set
        m = rng.integers(0, 5, (rows // 20, 20))
        m[rng.random(m.shape) < 0.5] = -1
        return m
    items = np.repeat(np.arange(n_items), 10)
    annotators = (items * 7919 + np.tile(np.arange(10) * 997, n_items)) % n_annotators
    order = rng.permutation(rows)
    frame = pd.DataFrame({"task": items[order], "worker": annotators[order],
                          "label": rng.integers(0, 5, rows)})
    if case == "from_frame string labels":
        frame["label"] = np.array(["cat", "dog", "eel", "fox", "gnu"], dtype=object)[frame["label"]]
    if case == "from_frame string ids":
        frame["task"] = "task-" + frame["task"].astype(str)
        frame["worker"] = "user-" + frame["worker"].astype(str)
    if case == "from_frame random hex ids" or case in PEER_CASES:   # 32 hex digits (hashes)
        def hex_ids(n: int) -> pd.Series:
            words = rng.integers(0, 2 ** 63, (n, 2), dtype=np.int64)
            return pd.Series([f"{a:016x}{b:016x}" for a, b in words.tolist()], dtype="str")

        frame["task"] = hex_ids(n_items).to_numpy()[frame["task"].to_numpy()]
        frame["worker"] = hex_ids(n_annotators).to_numpy()[frame["worker"].to_numpy()]
        frame = frame.astype({"task": "str", "worker": "str"})
    return frame


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(case: str, rows: int) -> dict:
    """Seconds, peak RSS growth and tracemalloc peak (MB) of one call in this process."""
    import time
    import tracemalloc

    import pandas as pd

    from crowd_keras import Annotations
    from crowd_keras.string_codes import column_codes

    data = _data(case, rows)
    call = {"from_dense": lambda: Annotations.from_dense(data),
            "from_label_matrix": lambda: Annotations.from_label_matrix(data, cardinality=5),
            PEER_CASES[0]: lambda: [column_codes(data[c]) for c in ("task", "worker")],
            PEER_CASES[1]: lambda: [pd.factorize(data[c], sort=True) for c in ("task", "worker")],
            }.get(case, lambda: Annotations.from_frame(data))
    rss0 = _peak_rss_mb()
    start = time.perf_counter()
    ann = call()
    seconds = time.perf_counter() - start
    rss = _peak_rss_mb() - rss0
    tracemalloc.start()
    call()
    traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
    tracemalloc.stop()
    return {"case": case, "rows": rows, "seconds": seconds,
            "annotations": ann.n_annotations if isinstance(ann, Annotations) else rows,
            "peak_rss_mb": rss, "tracemalloc_mb": traced}


def _measure_in_subprocess(case: str, rows: int, env: dict) -> dict:
    """:func:`measure` in a fresh process (pinned to one core on Linux)."""
    script = ("import sys; sys.argv[0] = 'encoding';"
              "from benchmarks.encoding import main; main(sys.argv[1:])")
    cmd = [sys.executable, "-c", script, "--one", case, str(rows)]
    if os.uname().sysname == "Linux":  # one core, as in the target
        cmd = ["taskset", "-c", "0"] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M rows only")
    parser.add_argument("--one", nargs=2, metavar=("CASE", "ROWS"), help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3,
                        help="fresh processes per row, interleaved; the fastest is reported")
    parser.add_argument("--data", help="unused: the frames are generated (accepted as every "
                        "benchmark script takes it)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]))))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print(f"Best of {args.repeat} fresh process(es) per row, interleaved; one core\n")
    print("| call | rows (annotations) | seconds | slowest run | peak RSS growth (MB) | "
          "tracemalloc peak (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    peer = {}
    for rows in (1_000_000,) if args.quick else (1_000_000, 10_000_000):
        runs = {case: [] for case in CASES + PEER_CASES}
        for _ in range(args.repeat):   # interleaved: a slow spell of the machine hits every case
            for case, results in runs.items():
                results.append(_measure_in_subprocess(case, rows, env))
        for case, results in runs.items():
            best = min(results, key=lambda r: r["seconds"])
            slowest = max(r["seconds"] for r in results)
            print(f"| {case} | {rows:,} ({best['annotations']:,}) | {best['seconds']:.2f} | "
                  f"{slowest:.2f} | {max(r['peak_rss_mb'] for r in results):.0f} | "
                  f"{max(r['tracemalloc_mb'] for r in results):.0f} |", flush=True)
            if case in PEER_CASES:
                peer[rows, case] = best["seconds"]
    print()
    for rows in sorted({rows for rows, _ in peer}):
        ours, theirs = (peer[rows, case] for case in PEER_CASES)
        print(f"Same run, {rows:,} rows: the hex frame's two id columns factorised in {ours:.2f} s "
              f"by column_codes against {theirs:.2f} s by pandas.factorize(sort=True) "
              f"({ours / theirs:.2f}x the peer's time)")


if __name__ == "__main__":
    main()
