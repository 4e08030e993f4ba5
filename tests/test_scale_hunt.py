"""The scale hunt's fixes: no Python call per row or per value on the user paths that read
a million annotations or a 50,000-task export, and the same results as before.

Untimed: each test counts Python function calls (``sys.setprofile``) or garbage
collections (``gc.callbacks``) against the number of rows, and checks the output against the
reference (``json.dumps``, the per-cell ``plain``, the per-row ``isinstance``).
"""
from __future__ import annotations

import gc
import json
import sys

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.agreement import agreement_report
from crowd_keras.agreement.report import plain, records
from crowd_keras.cli import main
from crowd_keras.cli._tables import _is_text, check_spacing
from crowd_keras.files import decode_json, indented_json, read_json_text


def python_calls(fn, *args, **kwargs):
    """(result, number of Python-level function calls, generator steps included, while
    ``fn`` ran)."""
    count = [0]

    def profile(frame, event, arg):
        if event == "call":
            count[0] += 1

    sys.setprofile(profile)
    try:
        out = fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return out, count[0]


def collections_during(fn, *args):
    """(result, garbage collections started while ``fn`` ran)."""
    started = []

    def callback(phase, info):
        if phase == "start":
            started.append(info["generation"])

    gc.collect()          # allocation counts at zero: none due before fn starts
    gc.callbacks.append(callback)
    try:
        out = fn(*args)
    finally:
        gc.callbacks.remove(callback)
    return out, len(started)


def _export(n_tasks: int) -> bytes:
    """A full-JSON Label Studio export: n_tasks tasks, three choices annotations each."""
    tasks = [{"id": t, "data": {"text": f"task {t}"},
              "annotations": [{"id": 3 * t + u, "completed_by": u + 1, "was_cancelled": False,
                               "result": [{"from_name": "sentiment", "to_name": "text",
                                           "type": "choices",
                                           "value": {"choices": ["positive"]}}]}
                              for u in range(3)]}
             for t in range(1, n_tasks + 1)]
    return json.dumps(tasks).encode()


# ---------------------------------------------------------------- JSON decoding: gc paused
def test_decoding_json_runs_no_garbage_collection_and_gives_json_loads():
    text = _export(2000).decode()
    loaded, n = collections_during(decode_json, text)
    assert n <= 1      # the young generation's, when the collector is back on
    assert collections_during(json.loads, text)[1] > 5   # one per ~700 containers built
    assert loaded == json.loads(text)
    assert gc.isenabled()
    _, n = collections_during(read_json_text, text, "x.json", "an export")
    assert n <= 1


def test_decoding_json_restores_a_disabled_collector_as_it_was():
    gc.disable()
    try:
        decode_json("[1]")
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(json.JSONDecodeError):
        decode_json("[1")
    assert gc.isenabled()


def test_a_label_studio_export_is_decoded_without_garbage_collection():
    pytest.importorskip("label_studio_sdk")
    from crowd_keras.integrations.label_studio._records import load_export

    data = _export(2000)
    (fmt, payload, _), n = collections_during(load_export, data, None)
    assert n <= 1 and fmt == "JSON" and payload == json.loads(data)


# ---------------------------------------------------------------- indented JSON
TRICKY = [
    {}, [], 1, -0.0, "x", None, True, [1, 2.5, "a"], {"a": {}}, {"a": []}, [{}], [[]],
    [{"a": 1}, {}], [{"a": 1}, {"b": [1]}], [{"a": 1}, {"a": {"b": 2}}], (1, 2),
    {"t": 'a},\n {"b"', "rows": [{"k": "v},\n  {", "x": 1.5, "y": None, "z": True},
                                 {"k": "é\u2028\"", "x": 1e-300, "y": 10 ** 30, "z": False}],
     "m": [[1, 2], [3, [4, {"q": ()}]]], "n": {1: "a", "b": [1]}, "f": [[{}]]},
    [[{"a": 1}], {"b": {"c": [{"d": 1, "e": "x"}, {"d": 2, "e": "y"}]}}],
    {"a": [{"x": 1, "y": 2}, {"y": 3, "x": 4, "z": "w"}], "b": [{"p": [1]}]},
    # long lists and dicts of nested containers (Label Studio predictions), matrices
    [{"task": i, "score": 0.5, "result": [{"value": {"choices": ["a"]}}]} for i in range(100)],
    {f"k{i}": {"a": [i, {"b": None}]} for i in range(100)},
    {"m": [[1.5, 2], (3, "x")] * 50, "c": [[[1, 2], [3, 4]]] * 70, "e": [[1], []] * 40},
]


@pytest.mark.parametrize("indent", [1, 2])
@pytest.mark.parametrize("doc", TRICKY, ids=range(len(TRICKY)))
def test_indented_json_is_json_dumps_text(doc, indent):
    assert indented_json(doc, indent) == json.dumps(doc, indent=indent, ensure_ascii=False,
                                                    allow_nan=False)


def test_indented_json_refuses_and_allows_nan_as_json_dumps_does():
    for bad in ([float("nan")], {"a": [{"x": float("inf")}]}, {"a": {"b": float("nan")}}):
        with pytest.raises(ValueError, match="Out of range float"):
            indented_json(bad)
        assert indented_json(bad, allow_nan=True) == json.dumps(bad, indent=1,
                                                                ensure_ascii=False)
    with pytest.raises(TypeError):
        indented_json({"a": [np.int64(1)]})


def _crowd(n_items: int = 400, per_item: int = 3, n_annotators: int = 60) -> Annotations:
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(n_items), per_item)
    annotators = np.concatenate([rng.choice(n_annotators, per_item, replace=False)
                                 for _ in range(n_items)])
    return Annotations(items, annotators, rng.integers(0, 3, len(items)), n_classes=3)


def test_an_agreement_report_is_written_as_json_dumps_writes_it_with_no_call_per_pair():
    calls, pairs = [], []
    for n_items in (150, 600):
        doc = agreement_report(_crowd(n_items), n_bootstrap=0).to_dict()
        text, n = python_calls(indented_json, doc)
        assert text == json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False)
        calls.append(n)
        pairs.append(len(doc["pairwise"]))
    assert pairs[1] - pairs[0] > 500
    # json.dumps(indent=1) steps a generator per value (7 per pair); here a few calls per
    # container of containers, whatever the number of pairs
    assert calls[1] - calls[0] < (pairs[1] - pairs[0]) / 20


def test_the_agree_command_writes_the_report_json_as_before(tmp_path):
    ann = _crowd(120)
    frame = ann.to_frame()
    frame.columns = ["task", "worker", "label"]
    src = tmp_path / "crowd.csv"
    frame.to_csv(src, index=False)
    assert main(["agree", str(src), "--out", str(tmp_path / "rep"), "--bootstrap", "20",
                 "--method", "dawid_skene", "--no-plots", "--quiet"]) == 0
    text = (tmp_path / "rep" / "report.json").read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"
    assert len(json.loads(text)["agreement"]["pairwise"]) > 50


# ---------------------------------------------------------------- records
def _reference_records(frame):
    """The per-cell records() the column-wise one replaced."""
    return [{str(c): plain(v) for c, v in zip(frame.columns, row)}
            for row in frame.itertuples(index=False, name=None)]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert list(x) == list(y)
        for k in x:
            assert type(x[k]) is type(y[k]), k
            assert x[k] is y[k] or x[k] == y[k] or (x[k] != x[k] and y[k] != y[k]), k


def test_records_are_the_per_cell_plain_values_for_every_kind_of_column():
    frame = pd.DataFrame({
        "i": np.arange(4), "f": [1.5, np.nan, np.inf, -np.inf],
        "f32": np.array([0.1, 2, np.nan, 3], np.float32), "b": [True, False, True, False],
        "u8": np.arange(4, dtype=np.uint8), "s": ["x", "y", "z", "w"],
        "o": ["a", np.float64(2.5), np.int64(3), None],
        "on": np.array([float("nan"), "a", "b", "c"], dtype=object),
        "S": pd.array(["a", None, "c", "d"], dtype="string"),
        "I": pd.array([1, None, 3, 4], dtype="Int64"),
        "d": pd.to_datetime(["2020-01-01"] * 4), "c": pd.Categorical(["u", "v", "u", "v"])})
    frame[3] = 7
    _same(records(frame), _reference_records(frame))
    _same(records(frame.iloc[:0]), _reference_records(frame.iloc[:0]))
    empty = pd.DataFrame(index=range(2))
    assert records(empty) == _reference_records(empty) == [{}, {}]
    assert records(None) is None


def test_records_make_no_python_call_per_cell():
    calls = []
    for n in (1000, 5000):
        rng = np.random.default_rng(0)
        frame = pd.DataFrame({"annotator_a": np.array([f"w{i}" for i in range(n)], dtype=object),
                              "annotator_b": [f"v{i}" for i in range(n)],
                              "n_items": rng.integers(1, 9, n),
                              "kappa": np.where(rng.random(n) < 0.2, np.nan, rng.random(n))})
        out, count = python_calls(records, frame)
        _same(out, _reference_records(frame))
        calls.append(count)
    assert calls[1] - calls[0] < 4000 / 20      # per cell: 4 calls of plain() per row


# ---------------------------------------------------------------- check_spacing
def test_text_cells_are_told_apart_per_distinct_value_not_per_row():
    n = 20000
    column = pd.Series(np.array(["a", 1, 1.0, True, None, np.nan, " a", "b"] * (n // 8),
                                dtype=object))
    mask, calls = python_calls(_is_text, column)
    assert np.array_equal(mask, column.map(lambda v: isinstance(v, str)).to_numpy(bool))
    assert calls < n / 20
    strings = pd.Series(["a", None, "b"] * 100, dtype="string")
    assert np.array_equal(_is_text(strings), strings.notna().to_numpy())


def test_check_spacing_makes_no_python_call_per_row_and_still_finds_spaced_twins(tmp_path):
    import argparse

    args = argparse.Namespace(item="task", annotator="worker", label="label")
    path = tmp_path / "a.csv"
    calls = []
    for n in (4000, 20000):
        frame = pd.DataFrame({"task": np.array([f"t{i}" for i in range(n)], dtype=object),
                              "worker": np.array([f"w{i % 50}" for i in range(n)], dtype=object),
                              "label": ["cat", "dog"] * (n // 2)})
        calls.append(python_calls(check_spacing, str(path), frame, args)[1])
    assert calls[1] - calls[0] < 16000 / 20      # a lambda per row and column: 3 per row
    frame.loc[7, "label"] = " cat"
    frame.to_csv(path, index=False)
    with pytest.raises(CrowdDataError, match=r"' cat' at line 9 and 'cat' at line 2"):
        check_spacing(str(path), frame, args)


# ---------------------------------------------------------------- Label Studio report
def _two_control_export() -> list:
    """12 tasks, three annotators, a Choices and a Rating control in every annotation."""
    tasks = []
    for t in range(1, 13):
        anns = [{"id": 10 * t + u, "completed_by": u + 1, "result": [
            {"from_name": "sentiment", "to_name": "text", "type": "choices",
             "value": {"choices": [["pos", "neg"][(t + (u == 2)) % 2]]}},
            {"from_name": "stars", "to_name": "text", "type": "rating",
             "value": {"rating": 1 + (t + u) % 5}}]} for u in range(3)]
        tasks.append({"id": t, "data": {"text": f"task {t}"}, "annotations": anns})
    return tasks


@pytest.mark.parametrize("as_file", [False, True])
def test_a_report_of_several_controls_decodes_the_export_once(tmp_path, monkeypatch, as_file):
    pytest.importorskip("label_studio_sdk")
    import io

    from crowd_keras.integrations import label_studio as ls
    from crowd_keras.integrations.label_studio import _records

    data = json.dumps(_two_control_export()).encode()
    decoded, parsed = [], []
    real, real_records = _records.decode_json, _records.records_from_full
    monkeypatch.setattr(_records, "decode_json", lambda text: decoded.append(1) or real(text))
    monkeypatch.setattr(_records, "records_from_full",
                        lambda *a: parsed.append(1) or real_records(*a))
    path = tmp_path / "export.json"
    path.write_bytes(data)
    source = io.BytesIO(data) if as_file else path
    out = ls.quality_report(source, tmp_path / "rep", n_bootstrap=0, plots=False,
                            method="dawid_skene")
    # were once to list the controls, then once per control
    assert len(decoded) == 1 and len(parsed) == 1
    controls = out["report"]["controls"]
    assert sorted(controls) == ["sentiment", "stars"]
    assert all(doc["error"] is None for doc in controls.values())
    monkeypatch.undo()
    alone = ls.quality_report(path, tmp_path / "alone", controls=["stars"], n_bootstrap=0,
                              plots=False, method="dawid_skene")["report"]["controls"]["stars"]
    assert json.dumps(alone, sort_keys=True) == json.dumps(controls["stars"], sort_keys=True)
