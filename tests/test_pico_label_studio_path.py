"""A span export through ``crowd-keras label-studio aggregate`` with its defaults gives the
Python path's tags (``benchmarks/pico_label_studio_path.py`` walks it on PICO)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_data
from crowd_keras.cli import build_parser, main
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.quality import spans_token_mask
from crowd_keras.sequences.registry import DEFAULT_SEQUENCE_MODEL, get_sequence_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.pico_label_studio_path import (build_export,  # noqa: E402
                                               prediction_spans)

#: texts with what PICO's abstracts hold: line breaks, no-break and thin spaces, a tab
TEXTS = {
    "d1": "Patients with\nchronic pain were randomised.\nAdults aged 18\u00a0to 65 took part.",
    "d2": "We enrolled 40 children\u2009with asthma and their parents in two clinics.",
    "d3": "Elderly women (n = 120) with osteoporosis were\tassigned to the drug.",
    "d4": "Smokers with COPD, aged over 40, received the inhaler or placebo.",
    "d5": "Patients with chronic pain and adults with asthma were compared.",
    "d6": "Children with asthma in rural clinics were followed for a year.",
}
#: per document, per worker: spans, some starting or ending inside a token, one worker
#: with two overlapping spans of their own
SPANS = {
    "d1": {"w1": [[0, 26]], "w2": [[0, 13], [44, 61]], "w3": [[3, 26], [44, 75]]},
    "d2": {"w1": [[12, 53]], "w2": [[15, 36]], "w4": [[12, 41], [30, 53]]},
    "d3": {"w2": [[0, 43]], "w3": [[0, 20]], "w4": [[8, 41]], "w5": [[0, 5]]},
    "d4": {"w1": [[0, 30]], "w3": [[0, 17]], "w5": [[0, 31]]},
    "d5": {"w1": [[0, 26], [31, 49]], "w2": [[0, 26]], "w4": [[31, 50]]},
    "d6": {"w3": [[0, 20]], "w4": [[0, 39]], "w5": [[0, 21]]},
}


def export_of(texts: dict, spans: dict) -> tuple:
    """(tasks, {task id: doc id}): a Label Studio 1.x full JSON export, one annotation per
    worker, workers as users 1, 2, ... (as ``build_export`` writes PICO)."""
    users, tasks = {}, []
    for t, (doc, by_worker) in enumerate(spans.items(), 1):
        text = texts[doc]
        tasks.append({"id": t, "data": {"text": text}, "annotations": [
            {"id": 100 * t + k, "completed_by": users.setdefault(w, len(users) + 1),
             "was_cancelled": False, "ground_truth": False, "result": [
                 {"id": f"{t}-{k}-{i}", "from_name": "label", "to_name": "text",
                  "type": "labels", "value": {"start": s, "end": e, "text": text[s:e],
                                              "labels": ["Participants"]}}
                 for i, (s, e) in enumerate(marks)]}
            for k, (w, marks) in enumerate(by_worker.items())]})
    return tasks, {t["id"]: doc for t, doc in zip(tasks, spans)}


def run_aggregate(tmp_path: Path, tasks: list) -> list:
    """``crowd-keras label-studio aggregate EXPORT --control label --out OUT`` (defaults)."""
    src, out = tmp_path / "export.json", tmp_path / "predictions.json"
    src.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    assert main(["label-studio", "aggregate", str(src), "--control", "label", "--out",
                 str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_commands_span_model_is_the_registrys_default():
    args = build_parser().parse_args(["label-studio", "aggregate", "export.json"])
    assert args.sequence_model == DEFAULT_SEQUENCE_MODEL == "text_prior_dawid_skene"
    assert args.scheme == "IO"


def test_an_export_aggregates_to_the_python_paths_tags(tmp_path, capsys):
    tasks, docids = export_of(TEXTS, SPANS)
    predictions = run_aggregate(tmp_path, tasks)
    assert "5 annotators" in capsys.readouterr().out           # workers neither merged nor split
    assert {p["model_version"] for p in predictions} == {f"crowd-keras-{DEFAULT_SEQUENCE_MODEL}"}
    assert sorted(p["task"] for p in predictions) == sorted(docids)
    seq = SequenceAnnotations.from_dict(TEXTS, SPANS, labels=["Participants"],
                                        default_label="Participants")
    python = get_sequence_model().fit(seq)
    spans = prediction_spans(predictions, docids)
    np.testing.assert_array_equal(spans_token_mask(seq, spans), python.predict() > 0)
    # the regions are the Python path's spans: token-aligned, with the task's text
    expect = python.predict_spans()
    got = [(docids[p["task"]], r["value"]["start"], r["value"]["end"], r["value"]["text"])
           for p in predictions for r in p["result"]]
    assert got == list(expect[["doc", "start", "end", "text"]].itertuples(index=False,
                                                                           name=None))
    assert got and all(TEXTS[d][s:e] == text for d, s, e, text in got)


@pytest.mark.slow
def test_pico_acl17_test_through_the_command_gives_the_python_paths_tags(tmp_path):
    from crowd_keras.datasets import load_pico

    root = require_data("pico")
    seq = load_pico(root, splits=("acl17-test",)).sequences
    tasks = build_export(root)
    assert [t["data"]["docid"] for t in tasks] == list(seq.doc_ids)
    predictions = run_aggregate(tmp_path, tasks)
    spans = prediction_spans(predictions, {t["id"]: t["data"]["docid"] for t in tasks})
    python = get_sequence_model().fit(seq).predict() > 0
    np.testing.assert_array_equal(spans_token_mask(seq, spans), python)


# ------------------------------------------------------------------ workers merged into one user
def merged(tasks: list) -> list:
    """The export Label Studio makes of annotations imported without ``completed_by``: all of
    them the importing user's (user 1), one task's annotations a second apart."""
    out = json.loads(json.dumps(tasks))
    for t in out:
        for k, a in enumerate(t["annotations"]):
            a["completed_by"], a["updated_at"] = 1, f"2024-01-01T00:00:{k:02d}Z"
    return out


def test_workers_merged_into_one_user_get_a_note(tmp_path, capsys):
    from crowd_keras.integrations import label_studio as ls

    tasks, _ = export_of(TEXTS, SPANS)
    n = sum(len(t["annotations"]) for t in tasks)
    # the fit used one annotation per task; the summary's "N superseded" was the only trace
    e = ls.read_export(merged(tasks))
    assert e.summary.n_superseded == n - len(tasks) and e.summary.n_annotators == 1
    assert any(f"{n - len(tasks)} of {n} annotations were replaced" in str(note)
               and "completed_by" in str(note) for note in e.summary.notes)
    capsys.readouterr()
    run_aggregate(tmp_path, merged(tasks))
    printed = capsys.readouterr().out
    assert "note: " in printed and "imported without completed_by" in printed
    # the same for a Choices control
    choices = [{"id": t, "data": {"text": f"t{t}"}, "annotations": [
        {"id": 10 * t + k, "completed_by": 1, "updated_at": f"2024-01-01T00:00:0{k}Z",
         "result": [{"from_name": "c", "to_name": "text", "type": "choices",
                     "value": {"choices": [c]}}]} for k, c in enumerate("aab")]}
        for t in (1, 2)]
    notes = ls.read_export(choices).summary.notes
    assert any("4 of 6 annotations were replaced" in str(note) for note in notes)


def test_a_user_who_annotated_a_task_again_gets_no_note():
    from crowd_keras.integrations import label_studio as ls

    tasks, _ = export_of(TEXTS, SPANS)
    again = json.loads(json.dumps(tasks[0]["annotations"][0]))
    again["id"], again["updated_at"] = 999, "2024-02-01T00:00:00Z"
    tasks[0]["annotations"].append(again)
    e = ls.read_export(tasks)
    assert e.summary.n_superseded == 1
    assert not any("were replaced" in str(note) for note in e.summary.notes)
    assert not any("were replaced" in str(note) for note in ls.read_export(
        export_of(TEXTS, SPANS)[0]).summary.notes)
