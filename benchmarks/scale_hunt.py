"""The scale hunt along the user paths: ours before vs after, in the same run, at two sizes.

    python benchmarks/scale_hunt.py [--annotations 100000 1000000] [--tasks 5000 50000]
        [--model-annotations 100000 1000000] [--no-models]
    python benchmarks/scale_hunt.py --quick        # 10,000 / 100,000; 500 / 5,000 tasks

Each row times one step of a user path with the code before the fix (kept here as the
reference it replaced, or the library call it replaced) and after it, on the same data in
the same process, and checks that both give the same result:

- ``crowd-keras aggregate`` / ``agree`` reading a CSV: ``check_spacing`` (text told apart per
  row by a Python ``isinstance`` vs per distinct value), on three string columns as
  ``read_table`` reads them (item, annotator, label; object dtype for the annotator so the
  distinct-value path is timed, not only the string-dtype one);
- ``crowd-keras agree --out``: the agreement report of a simulated crowd (5 annotations per
  item, annotators = annotations / 100, Zipf activity) as JSON records (``records``: a
  ``plain()`` per cell vs per column) and as ``report.json`` text (``json.dumps(indent=1)``,
  the pure-Python encoder, vs ``indented_json``, the C encoder; the texts are compared);
- ``read_export`` of a full-JSON Label Studio export (choices, rating and a span per
  annotation, 4 annotators per task out of 2,000): ``json.loads`` with the garbage collector
  on vs paused (``decode_json``), each followed by a full collection (the paused decode's
  objects are still walked once, later);
- ``crowd-keras label-studio report`` of that export (three controls): reading it, decoded
  and parsed into records once to list the controls and once per control vs once
  (``LoadedExport``).

Then every label model of the registry at the ``--model-annotations`` sizes, fit plus
``predict_proba``, as a multiple of Dawid-Skene's time in the same run (no fix: the check
that none grows faster than its annotations).
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras.agreement import agreement_report  # noqa: E402
from crowd_keras.agreement.report import plain, records  # noqa: E402
from crowd_keras.cli import _tables  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.files import decode_json, indented_json  # noqa: E402


def best(fn, repeat: int):
    """(best wall time of ``repeat`` calls, last result)."""
    out, times = None, []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


# ------------------------------------------------------------------ the code before the fixes
def records_per_cell(frame: pd.DataFrame) -> list:
    """records() before: ``plain()`` per cell."""
    cols = list(frame.columns)
    return [{str(c): plain(v) for c, v in zip(cols, row)}
            for row in frame.itertuples(index=False, name=None)]


def json_loads_gc_on(text: str):
    return json.loads(text)


# ------------------------------------------------------------------ data
def crowd(n_annotations: int):
    n_items = n_annotations // 5
    sim = simulate_crowd(n_items=n_items, n_classes=4, n_annotators=max(n_annotations // 100, 50),
                         annotations_per_item=5, n_features=2, seed=0, activity=1.0)
    return sim.annotations


def csv_frame(ann) -> pd.DataFrame:
    names = np.array(["cat", "dog", "bird", "fish"])
    return pd.DataFrame({"task": pd.array([f"t{i}" for i in ann.items], dtype="str"),
                         "worker": np.array([f"w{i}" for i in ann.annotators], dtype=object),
                         "label": pd.array(names[ann.labels], dtype="str")})


def label_studio_export(n_tasks: int, seed: int = 0) -> bytes:
    """A full-JSON export as Label Studio writes it: per annotation a choices, a rating and a
    labels (span) result."""
    rng = np.random.default_rng(seed)
    classes = ["positive", "negative", "neutral"]
    words = np.array(["alpha", "beta", "gamma", "delta", "eps"])
    tasks, aid = [], 0
    for t in range(1, n_tasks + 1):
        truth = int(rng.integers(3))
        text = " ".join(rng.choice(words, 12))
        anns = []
        for u in rng.choice(2000, 4, replace=False):
            aid += 1
            c = truth if rng.random() < 0.75 else int(rng.integers(3))
            start = int(rng.integers(0, 5)) * 6
            res = [{"id": f"r{aid}a", "from_name": "sentiment", "to_name": "text",
                    "type": "choices", "origin": "manual", "value": {"choices": [classes[c]]}},
                   {"id": f"r{aid}b", "from_name": "stars", "to_name": "text", "type": "rating",
                    "origin": "manual", "value": {"rating": int(rng.integers(1, 6))}},
                   {"id": f"r{aid}c", "from_name": "ner", "to_name": "text", "type": "labels",
                    "origin": "manual", "value": {"start": start, "end": start + 5,
                                                  "text": text[start:start + 5],
                                                  "labels": ["ORG"]}}]
            anns.append({"id": aid, "completed_by": int(u) + 1, "result": res,
                         "was_cancelled": False, "ground_truth": False,
                         "created_at": "2024-01-01T00:00:00.000000Z",
                         "updated_at": "2024-01-01T00:00:00.000000Z", "lead_time": 3.2,
                         "task": t, "project": 1})
        tasks.append({"id": t, "data": {"text": text}, "annotations": anns, "predictions": [],
                      "meta": {}, "project": 1})
    return json.dumps(tasks).encode()


# ------------------------------------------------------------------ rows
def row(table: list, path: str, size: str, before: float, after: float) -> None:
    table.append((path, size, before, after))
    print(f"  {path}, {size}: before {before:.3f} s, after {after:.3f} s, "
          f"{before / after:.1f}x", flush=True)


def csv_rows(table: list, n: int, repeat: int) -> None:
    frame = csv_frame(crowd(n))
    args = argparse.Namespace(item="task", annotator="worker", label="label")
    new = _tables._is_text
    try:
        _tables._is_text = lambda column: column.map(lambda v: isinstance(v, str)).to_numpy(bool)
        before, _ = best(lambda: _tables.check_spacing("crowd.csv", frame, args), repeat)
    finally:
        _tables._is_text = new
    after, _ = best(lambda: _tables.check_spacing("crowd.csv", frame, args), repeat)
    for name in frame:
        assert np.array_equal(new(frame[name]),
                              frame[name].map(lambda v: isinstance(v, str)).to_numpy(bool))
    row(table, "CSV read: check_spacing (3 columns)", f"{n:,} rows", before, after)


def agree_rows(table: list, n: int, repeat: int) -> None:
    ann = crowd(n)
    report = agreement_report(ann, n_bootstrap=0)
    frame = report.pairwise
    before, old = best(lambda: records_per_cell(frame), repeat)
    after, new = best(lambda: records(frame), repeat)
    assert json.dumps(old, allow_nan=True) == json.dumps(new, allow_nan=True)
    size = f"{n:,} annotations, {ann.n_annotators:,} annotators, {len(frame):,} pairs"
    row(table, "agree: records(pairwise)", size, before, after)
    doc = report.to_dict()
    before, old = best(lambda: json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False),
                       repeat)
    after, new = best(lambda: indented_json(doc), repeat)
    assert old == new
    row(table, f"agree: report.json text ({len(new) / 1e6:.0f} MB)", size, before, after)


def label_studio_rows(table: list, n_tasks: int, repeat: int) -> None:
    data = label_studio_export(n_tasks)
    text = data.decode()
    size = f"{n_tasks:,} tasks ({len(data) / 1e6:.0f} MB)"
    # each with a full collection after it: the one the paused decode puts off is counted
    before, old = best(lambda: (json_loads_gc_on(text), gc.collect())[0], repeat)
    after, new = best(lambda: (decode_json(text), gc.collect())[0], repeat)
    assert old == new
    del old, new
    row(table, "read_export: JSON decode (+ a full collection)", size, before, after)
    try:
        from crowd_keras.integrations.label_studio import read_export
        from crowd_keras.integrations.label_studio._records import load_export
        from crowd_keras.integrations.label_studio.quality import export_controls
    except ImportError:
        print("  (the Label Studio integration is not installed: no report row)")
        return

    def read_all(source):
        names = [n for n, _ in export_controls(source)]
        return [read_export(source, control=n, multiple="combination") for n in names]

    before, old = best(lambda: read_all(data), repeat)
    after, new = best(lambda: read_all(load_export(data, None)), repeat)
    assert [len(e.annotations.labels if hasattr(e, "annotations") else e.sequences.labels)
            for e in old] == \
        [len(e.annotations.labels if hasattr(e, "annotations") else e.sequences.labels)
         for e in new]
    row(table, "label-studio report: reading 3 controls (per control vs once)", size, before,
        after)


def model_rows(sizes: list) -> None:
    from crowd_keras.aggregation.registry import available_label_models, get_label_model

    names = ["dawid_skene"] + [n for n in available_label_models(False) if n != "dawid_skene"]
    times = {}
    for n in sizes:
        ann = crowd(n)
        for name in names:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                model = get_label_model(name)
                model.fit(ann)
                model.predict_proba()
                times[name, n] = (time.perf_counter() - start, getattr(model, "n_iter_", None))
            print(f"  {name}, {n:,}: {times[name, n][0]:.2f} s", flush=True)
    lo, hi = sizes[0], sizes[-1]
    print(f"\nEvery label model, fit + predict_proba, as a multiple of Dawid-Skene's time in "
          f"the same run (DS: {times['dawid_skene', lo][0]:.2f} s at {lo:,}, "
          f"{times['dawid_skene', hi][0]:.2f} s at {hi:,}); growth: time at {hi:,} over "
          f"time at {lo:,} ({hi // lo}x the annotations); per iteration where the model "
          "iterates.\n")
    print(f"| model | s at {lo:,} | s at {hi:,} | x DS at {hi:,} | growth | "
          "growth per iteration |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in names:
        (t0, i0), (t1, i1) = times[name, lo], times[name, hi]
        per = f"{(t1 / i1) / (t0 / i0):.1f}" if i0 and i1 else ""
        print(f"| {name} | {t0:.2f} | {t1:.2f} | {t1 / times['dawid_skene', hi][0]:.1f} | "
              f"{t1 / t0:.1f} | {per} |")


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotations", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--tasks", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--model-annotations", type=int, nargs="+",
                        default=[100_000, 1_000_000])
    parser.add_argument("--no-models", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--data", help="unused (record.py passes the data folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.annotations, args.tasks = [10_000, 100_000], [500, 5_000]
        args.model_annotations, args.repeat = [10_000, 100_000], 1
    table: list = []
    for n in args.annotations:
        csv_rows(table, n, args.repeat)
        agree_rows(table, n, args.repeat)
    for n in args.tasks:
        label_studio_rows(table, n, args.repeat)
    print("\nOurs before vs after each fix, same data, same run (best of "
          f"{args.repeat}); before/after is the speed-up.\n")
    print("| path | size | before (s) | after (s) | before/after |")
    print("|---|---|---:|---:|---:|")
    for path, size, before, after in sorted(table, key=lambda r: r[0]):
        print(f"| {path} | {size} | {before:.3f} | {after:.3f} | {before / after:.1f} |")
    if not args.no_models:
        model_rows(args.model_annotations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
