"""PICO through Label Studio: the command line's span aggregate against the Python path's.

A new user's path, walked end to end on the 191 acl17-test abstracts:

1. the shared PICO crowd files become a Label Studio 1.x full JSON export (one task per
   abstract, ``data.text``; one annotation per worker who marked spans, ``completed_by`` a
   user id, ``labels`` results with ``value.start/end/text/labels`` over a ``<Labels
   name="label" toName="text">`` control);
2. ``crowd-keras label-studio aggregate EXPORT --control label --out PREDICTIONS`` runs with
   every other setting at its default (a child process, as typed in a shell);
3. the predictions' spans are scored in token P/R/F1 on the even gold half with
   ``benchmarks/spans.py``'s scoring (a token is a run of non-space characters, positive when
   a span overlaps it), beside the Python path's: the registry's default sequence model
   fitted on the same 191 abstracts, read with ``load_pico`` as ``spans.py`` reads them.

Both paths should give the same tags: each row counts the tokens where the command's spans
differ from the Python path's tags. Further rows with the same annotations (any change is
the model's, not the export's): the export's tasks in other orders (``--orders``: reversed,
sorted by docid, seeded shuffles), the export made by a real Label Studio server from the
same tasks (``--server``; needs the ``label-studio`` executable), and all 4,740 abstracts
(``--all``). One row as a warning: the export Label Studio makes of annotations imported
without ``completed_by`` (every worker under the importing user, so one annotation per task
is used). The gold is read only to score.

    python benchmarks/pico_label_studio_path.py [--data ../shared/data] [--orders 3]
                                                [--server] [--all] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA  # noqa: E402

CONTROL, OBJECT, LABEL = "label", "text", "Participants"
CONFIG = (f'<View><Labels name="{CONTROL}" toName="{OBJECT}"><Label value="{LABEL}"/></Labels>'
          f'<Text name="{OBJECT}" value="${OBJECT}"/></View>')
STAMP = "2017-07-30T12:00:00.000000Z"


def _jsonl(path: Path) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build_export(pico_dir: Path, splits=("acl17-test",)) -> list:
    """A Label Studio 1.x full JSON export (a list of tasks) of ``crowd_<split>.jsonl``:
    tasks in the files' order with ids 1, 2, ... and ``data`` ``{"text", "docid"}``; one
    annotation per worker who marked spans, workers as users 1, 2, ... in order of first
    appearance."""
    texts = {r["docid"]: r["text"] for r in _jsonl(pico_dir / "docs.jsonl")}
    users: dict = {}
    tasks, n_ann = [], 0
    for split in splits:
        for rec in _jsonl(pico_dir / f"crowd_{split}.jsonl"):
            t, text = len(tasks) + 1, texts[rec["docid"]]
            annotations = []
            for worker, marks in rec["spans"].items():
                n_ann += 1
                result = [{"id": f"r{n_ann}_{i}", "from_name": CONTROL, "to_name": OBJECT,
                           "type": "labels", "origin": "manual",
                           "value": {"start": int(s), "end": int(e), "text": text[s:e],
                                     "labels": [LABEL]}}
                          for i, (s, e) in enumerate(marks)]
                annotations.append({
                    "id": n_ann, "completed_by": users.setdefault(worker, len(users) + 1),
                    "result": result, "was_cancelled": False, "ground_truth": False,
                    "created_at": STAMP, "updated_at": STAMP, "lead_time": 60.0,
                    "prediction": {}, "result_count": len(result), "task": t, "project": 1,
                    "parent_prediction": None, "parent_annotation": None})
            tasks.append({"id": t, "annotations": annotations, "drafts": [], "predictions": [],
                          "data": {"text": text, "docid": rec["docid"]}, "meta": {},
                          "created_at": STAMP, "updated_at": STAMP, "inner_id": t,
                          "total_annotations": len(annotations), "cancelled_annotations": 0,
                          "total_predictions": 0, "comment_count": 0, "project": 1,
                          "updated_by": None, "file_upload": "pico.json"})
    return tasks


def aggregate_command(export: Path, out: Path) -> list:
    """What a new user types, with every setting but the control at its default."""
    return [sys.executable, "-m", "crowd_keras", "label-studio", "aggregate", str(export),
            "--control", CONTROL, "--out", str(out)]


def run_cli(export: Path, out: Path) -> tuple:
    """Run :func:`aggregate_command` in a child process; (its standard output, seconds)."""
    start = time.perf_counter()
    res = subprocess.run(aggregate_command(export, out), capture_output=True, text=True,
                         cwd=ROOT)
    seconds = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"the command failed (exit {res.returncode}):\n{res.stdout}\n"
                         f"{res.stderr}")
    return res.stdout.strip(), seconds


def prediction_spans(predictions: list, docids: dict) -> dict:
    """{docid: [[start, end], ...]} of the predictions' ``labels`` regions; ``docids``:
    {task id: docid} (every task, none when a task has no prediction)."""
    spans = {d: [] for d in docids.values()}
    for p in predictions:
        for r in p["result"]:
            if r["type"] == "labels":
                spans[docids[p["task"]]].append([r["value"]["start"], r["value"]["end"]])
    return spans


def region_text_mismatches(predictions: list, texts: dict, docids: dict) -> int:
    """Predicted regions whose ``value.text`` is not the task's text at their offsets."""
    return sum(r["value"]["text"] != texts[docids[p["task"]]][r["value"]["start"]:
                                                             r["value"]["end"]]
               for p in predictions for r in p["result"] if r["type"] == "labels")


def one_user(tasks: list) -> list:
    """The export Label Studio makes when the annotations are imported without
    ``completed_by``: all of them the importing user's (user 1), a second apart."""
    out = json.loads(json.dumps(tasks))
    for t in out:
        for k, a in enumerate(t["annotations"]):
            a["completed_by"], a["updated_at"] = 1, f"2017-07-30T12:00:{k:02d}.000000Z"
    return out


def server_export(tasks: list, folder: Path) -> list:
    """The same tasks and annotations imported into a new project of a real Label Studio
    server on loopback (one user per worker) and exported as its full JSON."""
    sys.path.insert(0, str(ROOT / "tests"))
    from label_studio_server import (build_template, ensure_users, export_bytes,
                                     find_executable, new_token, start_copy)
    from label_studio_sdk import LabelStudio

    exe, token = find_executable(), new_token()
    if exe is None:
        raise FileNotFoundError("no label-studio executable")
    server = start_copy(exe, build_template(exe, folder / "template", token), folder / "data",
                        token)
    try:
        client = LabelStudio(base_url=server.url, api_key=token, timeout=600)
        n_users = max(a["completed_by"] for t in tasks for a in t["annotations"])
        uids = ensure_users(client, [f"worker{u}@example.com" for u in range(1, n_users + 1)])
        project = client.projects.create(title="PICO acl17-test", label_config=CONFIG)
        client.projects.import_tasks(project.id, return_task_ids=True, request=[
            {"data": t["data"], "annotations": [
                {"completed_by": uids[a["completed_by"] - 1], "result": a["result"],
                 "was_cancelled": False, "ground_truth": False} for a in t["annotations"]]}
            for t in tasks])
        return json.loads(export_bytes(client, project.id, "JSON"))
    finally:
        server.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--orders", type=int, default=3,
                   help="seeded shuffles of the tasks (besides reversed and sorted by docid; "
                        "0: no other order)")
    p.add_argument("--server", action="store_true",
                   help="also through a real Label Studio server's export")
    p.add_argument("--all", action="store_true", help="also all 4,740 abstracts")
    p.add_argument("--keep", type=Path, default=None,
                   help="folder to keep the exports and predictions in (default: a temporary "
                        "one)")
    args = p.parse_args(argv)
    # heavy imports here: build_export and prediction_spans are imported by the tests
    from benchmarks.spans import GoldHalf
    from crowd_keras.cli import build_parser
    from crowd_keras.datasets import load_pico
    from crowd_keras.sequences.quality import spans_token_mask
    from crowd_keras.sequences.registry import DEFAULT_SEQUENCE_MODEL, get_sequence_model

    pico_dir = args.data / "pico" if (args.data / "pico").is_dir() else args.data
    pico = load_pico(args.data)                      # as benchmarks/spans.py reads it
    cli_default = build_parser().parse_args(["label-studio", "aggregate", "x.json"])
    print(f"default sequence model: registry {DEFAULT_SEQUENCE_MODEL!r}, 'label-studio "
          f"aggregate' {cli_default.sequence_model!r} (scheme {cli_default.scheme})")
    print("command: crowd-keras label-studio aggregate EXPORT --control label --out "
          "PREDICTIONS")
    rows = ["| path | abstracts | P | R | F1 | tokens unlike Python | time |",
            "|---|---:|---:|---:|---:|---:|---:|"]

    def row(name, n, prf, diff, seconds):
        rows.append(f"| {name} | {n} | {prf[0]:.3f} | {prf[1]:.3f} | **{prf[2]:.3f}** | "
                    f"{diff} | {seconds:.1f} s |")

    sets = [("acl17-test", ("acl17-test",), np.flatnonzero(pico.split == "acl17-test"))]
    if args.all:
        sets.append(("all", ("train", "dev", "test", "acl17-test"), np.arange(len(pico.split))))
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for label, splits, docs in sets:
            seq = pico.sequences.subset(docs)
            gold = GoldHalf(seq, pico.gold)
            texts = dict(zip(seq.doc_ids, seq.texts))
            start = time.perf_counter()
            model = get_sequence_model().fit(seq)
            t_py = time.perf_counter() - start
            py_tags = model.predict() > 0
            row(f"Python: `get_sequence_model().fit(load_pico(...))` ({label})", seq.n_docs,
                gold.score(model.predict()), 0, t_py)
            tasks = build_export(pico_dir, splits)
            n_ann = sum(len(t["annotations"]) for t in tasks)
            print(f"\n{label} export: {len(tasks)} tasks, {n_ann} annotations, "
                  f"{sum(len(a['result']) for t in tasks for a in t['annotations'])} labels "
                  f"regions, {len({a['completed_by'] for t in tasks for a in t['annotations']})}"
                  " users")
            variants = [("export (file order)", tasks)]
            if label == "acl17-test":
                if args.orders:
                    variants += [("tasks reversed", tasks[::-1]),
                                 ("tasks sorted by docid", sorted(
                                     tasks, key=lambda t: int(t["data"]["docid"])))]
                variants += [(f"tasks shuffled (seed {s})", random.Random(s).sample(
                    tasks, len(tasks))) for s in range(args.orders)]
                variants.append(("every worker under one user (imported without "
                                 "completed_by)", one_user(tasks)))
                if args.server:
                    try:
                        start = time.perf_counter()
                        made = server_export(tasks, folder / "server")
                        print(f"Label Studio server: imported and exported in "
                              f"{time.perf_counter() - start:.0f} s")
                        variants.insert(1, ("a Label Studio server's export", made))
                    except (ImportError, FileNotFoundError) as exc:
                        print(f"Label Studio server: skipped ({exc})")
            for name, variant in variants:
                export = folder / f"{label}_{len(rows)}.json"
                out = export.with_name(export.stem + "_predictions.json")
                export.write_text(json.dumps(variant, ensure_ascii=False), encoding="utf-8")
                log, seconds = run_cli(export, out)
                if name.startswith("export") or "one user" in name:
                    log = log.replace(str(out), "PREDICTIONS")
                    print("\n".join("  " + line for line in log.splitlines()))
                predictions = json.loads(out.read_text(encoding="utf-8"))
                docids = {t["id"]: t["data"]["docid"] for t in variant}
                spans = prediction_spans(predictions, docids)
                bad = region_text_mismatches(predictions, texts, docids)
                if len(predictions) != len(variant) or bad:
                    print(f"  {name}: {len(predictions)} predictions for {len(variant)} tasks, "
                          f"{bad} regions with a text unlike the task's")
                diff = int((spans_token_mask(seq, spans) != py_tags).sum())
                row(f"command line: {name}", seq.n_docs, gold.spans(spans), diff, seconds)
    print("\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
