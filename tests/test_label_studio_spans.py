"""Label Studio span controls: read (JSON, JSON_MIN, CSV), aggregate, predictions, report, CLI."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import require_data
from crowd_keras import CrowdDataError
from crowd_keras.cli import build_parser
from crowd_keras.integrations import label_studio as ls
from crowd_keras.sequences.models import TokenDawidSkene

CONFIG = ('<View><Text name="text" value="$text"/><Labels name="label" toName="text">'
          '<Label value="PER"/><Label value="LOC"/></Labels></View>')
TEXT = "John met Mary in Paris"


def region(start, end, text=None, label="PER", control="label", kind="labels", key="labels"):
    value = {"start": start, "end": end, "text": TEXT[start:end] if text is None else text,
             key: [label]}
    return {"from_name": control, "to_name": "text", "type": kind, "value": value}


def export(extra=()):
    """Task 1 marked by users 1-3 (3: no span), user 4 skipped, user 1 twice (the later
    annotation wins); task 2 seen by nobody."""
    return [{"id": 1, "data": {"text": TEXT}, "annotations": [
        {"id": 10, "completed_by": 1, "result": [region(0, 4)], "updated_at": "2024-01-01T00:00:00Z"},
        {"id": 11, "completed_by": 1, "result": [region(0, 4), region(9, 13)],
         "updated_at": "2024-01-02T00:00:00Z"},
        {"id": 12, "completed_by": 2, "result": [region(0, 4), region(17, 22, label="LOC")]},
        {"id": 13, "completed_by": 3, "result": []},
        {"id": 14, "completed_by": 4, "result": [], "was_cancelled": True},
        *extra]},
        {"id": 2, "data": {"text": "Nobody here"}, "annotations": []}]


def test_full_json_spans_per_task_and_annotator():
    e = ls.read_export(export(), label_config=CONFIG)
    assert isinstance(e, ls.LabelStudioSpans) and e.control == "label" and e.text_key == "text"
    assert e.spans[["task", "annotator", "start", "end", "label", "text"]].values.tolist() == [
        [1, 1, 0, 4, "PER", "John"], [1, 1, 9, 13, "PER", "Mary"],
        [1, 2, 0, 4, "PER", "John"], [1, 2, 17, 22, "LOC", "Paris"]]
    s = e.summary
    assert (s.n_used, s.n_superseded, s.n_cancelled, s.n_without_label) == (3, 1, 1, 1)
    assert (s.n_tasks, s.n_tasks_unannotated) == (2, 1)
    dense = e.sequences.annotations.to_dense()          # tokens × users 1, 2, 3
    tags = list(e.sequences.tags)
    assert tags == ["O", "I-PER", "I-LOC"]
    assert dense[:5].tolist() == [[1, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 2, 0]]
    assert (dense[5:] == -1).all()                        # task 2: seen by nobody
    assert e.annotator_stats.set_index("annotator").loc[4, "n_cancelled"] == 1
    # without a config: the labels seen, and the one span control is found by itself
    assert list(ls.read_export(export()).labels) == ["LOC", "PER"]


@pytest.fixture()
def converted(tmp_path):
    """The same export as JSON_MIN and CSV, written by the SDK's offline converter."""
    converter = pytest.importorskip("label_studio_sdk.converter").Converter
    src = tmp_path / "export.json"
    src.write_text(json.dumps(export()))
    conv = converter(config=CONFIG, project_dir=None, download_resources=False)
    conv.convert_to_json_min(str(src), str(tmp_path / "min"), is_dir=False)
    conv.convert_to_csv(str(src), str(tmp_path / "csv"), is_dir=False, sep=",")
    return src, tmp_path / "min" / "result.json", tmp_path / "csv" / "result.csv"


def test_json_min_and_csv_read_to_the_same_spans(converted):
    full_path, min_path, csv_path = converted
    full = ls.read_export(full_path, control="label", label_config=CONFIG)
    for path, fmt in ((min_path, "JSON_MIN"), (csv_path, "CSV")):
        got = ls.read_export(path, control="label", label_config=CONFIG)
        assert got.format == fmt and isinstance(got, ls.LabelStudioSpans)
        assert got.sequences.annotations == full.sequences.annotations, fmt
        cols = ["task", "annotator", "start", "end", "label", "text"]
        assert got.spans[cols].values.tolist() == full.spans[cols].values.tolist()
    # without a config the span column is recognised from its values
    rows = json.loads(min_path.read_text())
    assert isinstance(ls.read_export(rows, control="label"), ls.LabelStudioSpans)


BAD = {
    "negative_start": (lambda t: t[0]["annotations"][2]["result"][0]["value"].update(start=-1),
                       {}, r"task 1, annotation 12 \(user [^)]+\), span 0: negative start offset -1"),
    "reversed": (lambda t: t[0]["annotations"][2]["result"][1]["value"].update(start=20, end=18),
                 {}, r"task 1, annotation 12 \(user [^)]+\), span 1: end 18 before start 20"),
    "unknown_label": (lambda t: t[0]["annotations"][2]["result"][1]["value"].update(labels=["ORG"]),
                      {"label_config": CONFIG},
                      r"task 1, annotation 12 \(user [^)]+\), span 1: label 'ORG' of control 'label' is not in"),
    "no_label": (lambda t: t[0]["annotations"][2]["result"][1]["value"].update(labels=[]), {},
                 r"task 1, annotation 12 \(user [^)]+\), span 1: value.labels must be a non-empty list"),
    "xpath_offsets": (lambda t: t[0]["annotations"][2]["result"][1]["value"].update(start="/p[1]"),
                      {}, r"annotation 12 \(user [^)]+\), span 1: start must be an integer character offset"),
    "text_mismatch": (lambda t: t[0]["annotations"][2]["result"][0]["value"].update(text="Jon"),
                      {"text_mismatch": "error"},
                      r"task 1, annotation 12 \(user [^)]+\), span 0: text 'Jon' differs from the task's "
                      r"characters 0:4"),
    "no_text_field": (lambda t: t[1]["data"].pop("text"), {"label_config": CONFIG},
                      r"task 2 has no data field 'text'"),
    "wrong_type": (lambda t: t[0]["annotations"][2]["result"][0].update(type="choices"),
                   {"control": "label"}, r"annotation 12 \(user [^)]+\): a result of control 'label' has type"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_span_input_gets_a_located_error(case):
    change, kwargs, message = BAD[case]
    tasks = export()
    change(tasks)
    with pytest.raises(CrowdDataError, match=message):
        ls.read_export(tasks, **kwargs)


def test_text_mismatch_is_counted_by_default():
    tasks = export()
    tasks[0]["annotations"][2]["result"][0]["value"]["text"] = "Jon"
    assert ls.read_export(tasks).summary.spans.text_mismatch == 1


def test_hypertext_global_offsets_and_paragraph_offsets_are_character_offsets():
    html = [{"id": 1, "data": {"html": TEXT}, "annotations": [{"id": 1, "completed_by": 1, "result": [
        {"from_name": "h", "to_name": "html", "type": "hypertextlabels",
         "value": {"start": "/text()[1]", "end": "/text()[1]", "startOffset": 9,
                   "endOffset": 13, "globalOffsets": {"start": 9, "end": 13}, "text": "Mary",
                   "htmllabels": ["PER"]}}]}]}]
    e = ls.read_export(html)
    assert e.spans[["start", "end", "label"]].values.tolist() == [[9, 13, "PER"]]
    with pytest.raises(CrowdDataError, match="XPath offsets"):
        ls.predictions_from_model(e, None, "v")
    dialog = [{"id": 1, "data": {"dialog": [{"author": "a", "text": "hi there"},
                                            {"author": "b", "text": "John here"}]},
               "annotations": [{"id": 1, "completed_by": 1, "result": [
                   {"from_name": "p", "to_name": "dialog", "type": "paragraphlabels",
                    "value": {"start": "1", "end": "1", "startOffset": 0, "endOffset": 4,
                              "text": "John", "paragraphlabels": ["PER"]}}]}]}]
    e = ls.read_export(dialog)
    assert e.sequences.texts == ["hi there\nJohn here"]
    assert e.spans[["start", "end", "text"]].values.tolist() == [[9, 13, "John"]]
    assert e.summary.spans.text_mismatch == 0
    value = ls.predictions_from_model(e, None, "v")[0]["result"][0]["value"]
    assert value == {"start": "1", "end": "1", "startOffset": 0, "endOffset": 4, "text": "John",
                     "paragraphlabels": ["PER"]}


def test_predictions_report_and_gold():
    gold = {"id": 20, "completed_by": 9, "ground_truth": True,
            "result": [region(0, 4), region(9, 13)]}
    e = ls.read_export(export([gold]), label_config=CONFIG)
    assert len(e.gold) == 2 and e.summary.n_gold == 1
    model = TokenDawidSkene().fit(e.sequences)
    preds = ls.predictions_from_model(e, model, "v1")
    assert [p["task"] for p in preds] == [1]               # annotated tasks only
    spans = model.predict_spans()
    got = [(r["value"]["start"], r["value"]["end"], r["value"]["text"], r["value"]["labels"][0])
           for r in preds[0]["result"]]
    assert got == list(spans[["start", "end", "text", "label"]].itertuples(index=False, name=None))
    assert all(r["type"] == "labels" and r["to_name"] == "text" for r in preds[0]["result"])
    assert 0.5 < preds[0]["score"] <= 1
    report = ls.annotator_report(e, model).set_index("annotator")
    assert report.loc[3, "n_spans"] == 0 and report.loc[1, "n_annotations"] == 1
    assert report.loc[1, "n_gold"] == 1 and report.loc[1, "gold_span_f1"] == 1.0
    # no span where the gold has two: precision undefined, recall 0, F1 0 (was NaN)
    assert report.loc[3, "gold_span_f1"] == 0.0 and report.loc[3, "gold_token_f1"] == 0.0
    assert np.isnan(report.loc[3, "span_precision"])
    assert ls.gold_span_scores(e, model.predict())[0] == 1
    with pytest.raises(CrowdDataError, match="spans, not class probabilities"):
        ls.to_predictions(e, np.zeros((2, 3)), "v")
    other = TokenDawidSkene().fit(ls.read_export(export(), label_config=CONFIG.replace(
        '<Label value="LOC"/>', '<Label value="LOC"/><Label value="ORG"/>')).sequences)
    with pytest.raises(CrowdDataError, match="fitted on other annotations"):
        ls.predictions_from_model(e, other, "v")


def cli(argv):
    args = build_parser().parse_args(argv)
    return args.func(args)


def test_cli_aggregates_a_span_control(tmp_path, capsys):
    src = tmp_path / "export.json"
    src.write_text(json.dumps(export()))
    out, rep = tmp_path / "pred.json", tmp_path / "annotators.csv"
    assert cli(["label-studio", "aggregate", str(src), "--control", "label", "--out", str(out),
                "--annotators", str(rep), "--sequence-model", "hmm_crowd", "--scheme",
                "BIO"]) == 0
    preds = json.loads(out.read_text())
    assert preds[0]["model_version"] == "crowd-keras-hmm_crowd"
    assert {r["value"]["text"] for r in preds[0]["result"]} >= {"John"}
    report = pd.read_csv(rep)
    # user 4 only skipped: listed with its count and no quality, as in a choices report
    assert report["annotator"].tolist() == [1, 2, 3, 4] and "span_f1" in report.columns
    assert report.loc[3, ["n_annotations", "n_cancelled"]].tolist() == [0, 1]
    assert report.loc[3, "span_f1":].drop(["n_gold", "n_partners"]).isna().all()
    printed = capsys.readouterr().out
    assert "span control 'label'" in printed and "1 without spans: all O" in printed




def test_conflicting_ground_truth_spans_are_counted_as_for_choices():
    # two ground-truth annotations of task 1 with other spans: the latest is its gold, and
    # the summary says they conflict (it said 0, while a choices export counts them)
    gold = [{"id": 20, "completed_by": 5, "ground_truth": True, "result": [region(0, 4)],
             "updated_at": "2024-01-01T00:00:00Z"},
            {"id": 21, "completed_by": 6, "ground_truth": True,
             "result": [region(17, 22, label="LOC")], "updated_at": "2024-01-03T00:00:00Z"}]
    e = ls.read_export(export(gold))
    assert e.summary.n_gold == 2 and e.summary.n_gold_conflicts == 1
    assert "2 ground truth (1 conflicting)" in str(e.summary)
    assert e.gold[["annotation_id", "label"]].values.tolist() == [[21, "LOC"]]
    # the same spans twice (in another order) do not conflict
    gold[1]["result"] = [region(0, 4)]
    assert ls.read_export(export(gold)).summary.n_gold_conflicts == 0

def test_cli_refuses_a_hypertext_control_before_the_fit(tmp_path, capsys):
    # its predictions cannot be written (XPath offsets): the command fitted, then failed
    # with advice for Python (model.predict_spans()); it now says so at once, naming the
    # command that reports on the control
    html = [{"id": t, "data": {"html": TEXT}, "annotations": [
        {"id": 10 * t + u, "completed_by": u, "result": [
            {"from_name": "h", "to_name": "html", "type": "hypertextlabels",
             "value": {"start": "/text()[1]", "end": "/text()[1]", "startOffset": 0,
                       "endOffset": 4, "globalOffsets": {"start": 0, "end": 4},
                       "text": "John", "htmllabels": ["PER"]}}]} for u in (1, 2)]}
        for t in (1, 2)]
    src = tmp_path / "export.json"
    src.write_text(json.dumps(html))
    out = tmp_path / "pred.json"
    assert cli(["label-studio", "aggregate", str(src), "--out", str(out), "--annotators",
                str(tmp_path / "a.csv")]) == 2
    captured = capsys.readouterr()
    assert "control 'h' is a HyperTextLabels control" in captured.err
    assert "'crowd-keras label-studio report'" in captured.err
    assert "predict_spans" not in captured.err and "fitting" not in captured.err
    assert not out.exists()

# ---------------------------------------------------------------------------- PICO round trip
def test_a_pico_abstract_round_trips_through_a_label_studio_export(tmp_path):
    from crowd_keras.datasets import load_pico

    pico = load_pico(require_data("pico"), splits=("acl17-test",))
    seq = pico.sequences.subset([0])
    doc, text = seq.doc_ids[0], seq.texts[0]
    frame = seq.spans_frame()
    users = {w: n + 1 for n, w in enumerate(seq.annotator_ids[seq.assign_annotator])}
    annotations = []
    for w, uid in users.items():
        mine = frame[frame["annotator"] == w]
        annotations.append({"id": uid, "completed_by": uid, "result": [
            {"from_name": "participants", "to_name": "text", "type": "labels",
             "value": {"start": int(r.start), "end": int(r.end), "text": r.text,
                       "labels": ["Participants"]}} for r in mine.itertuples()]})
    path = tmp_path / "pico_export.json"
    path.write_text(json.dumps([{"id": 7, "data": {"text": text, "docid": doc},
                                 "annotations": annotations}]))
    e = ls.read_export(path)
    assert e.summary.n_used == len(users) and e.summary.spans.spans == len(frame)
    model = TokenDawidSkene().fit(e.sequences)
    out = ls.write_predictions(tmp_path / "predictions.json",
                               ls.predictions_from_model(e, model, "pico-ds"))
    preds = json.loads(Path(out).read_text())
    got = [(r["value"]["start"], r["value"]["end"], r["value"]["text"]) for r in preds[0]["result"]]
    expect = model.predict_spans()[["start", "end", "text"]].itertuples(index=False, name=None)
    assert got == list(expect) and got
    # the same abstract aggregated straight from the PICO files gives the same spans
    direct = TokenDawidSkene().fit(seq).predict_spans()
    assert got == list(direct[["start", "end", "text"]].itertuples(index=False, name=None))
    assert all(text[s:e] == t for s, e, t in got)


def test_span_predictions_refuse_spans_of_other_tasks_or_labels():
    # a span of a task not in the export ("1" for 1, another export's) was left out
    # silently: the task got an empty prediction, which a push writes over its old one
    e = ls.read_export(export(), label_config=CONFIG)
    spans = pd.DataFrame({"doc": [1], "start": [0], "end": [4], "label": ["PER"],
                          "text": ["John"]})
    assert ls.span_predictions(e, spans, "v")[0]["result"][0]["value"]["text"] == "John"
    for bad, match in ((spans.assign(doc="1"), r"span row 0: doc '1' is not a task of the "
                                               r"export \(of 2: \[1, 2\]\)"),
                       (spans.assign(doc=7), "doc 7 is not a task of the export"),
                       (spans.assign(label="ORG"), "label 'ORG' is not a label of 'label'"),
                       (spans.rename(columns={"doc": "task"}),
                        r"spans lack the column\(s\) \['doc'\]")):
        with pytest.raises(CrowdDataError, match=match):
            ls.span_predictions(e, bad, "v")


def test_an_empty_task_text_in_a_csv_export_is_an_empty_document(tmp_path):
    # the CSV reader turns empty cells into None; an empty text raised "data field 'text'
    # must be text, got NoneType" while the same task in JSON is an empty document
    rows = [["text", "id", "label", "annotator", "annotation_id"],
            [TEXT, "1", json.dumps([region(0, 4)["value"]]), "1", "10"],
            [TEXT, "1", json.dumps([region(0, 4)["value"]]), "2", "11"],
            ["", "2", "", "1", "12"]]
    path = tmp_path / "export.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    e = ls.read_export(path, control="label", label_config=CONFIG)
    assert e.format == "CSV" and list(e.sequences.texts) == [TEXT, ""]
    preds = ls.predictions_from_model(e, "majority_vote", "v1")
    assert [(p["task"], len(p["result"])) for p in preds] == [(1, 1), (2, 0)]


def test_a_ground_truth_annotation_without_spans_is_gold_all_o():
    # a reviewer's ground truth "no entity here" was dropped from the gold (only tasks with
    # a gold span were scored), so spans the crowd marked there never counted against it
    gold = {"id": 20, "completed_by": 9, "ground_truth": True, "result": []}
    e = ls.read_export(export([gold]), label_config=CONFIG)
    model = TokenDawidSkene().fit(e.sequences)
    assert model.predict().any()                           # the crowd's aggregate has spans
    n, (p, r, f1) = ls.gold_span_scores(e, model.predict())
    assert n == 1 and p == 0.0
    assert e.summary.n_gold == 1 and len(e.gold) == 0 and list(e.gold_tasks) == [1]
    report = ls.annotator_report(e, model).set_index("annotator")
    assert report.loc[[1, 2, 3], "n_gold"].tolist() == [1, 1, 1]


@pytest.mark.parametrize("fmt", ["JSON_MIN", "CSV"])
def test_another_span_controls_column_is_not_taken_for_the_text(tmp_path, fmt):
    # two Labels controls in a JSON_MIN/CSV export: the other control's column of regions
    # was a candidate for the text field (reading either control asked for text_key) and
    # for the object (aggregate asked for --to-name)
    regions = json.dumps([region(0, 4)["value"]])
    other = json.dumps([region(17, 22, label="LOC")["value"]])
    rows = [{"text": TEXT, "id": 1, "label": regions, "kind": other, "annotator": a,
             "annotation_id": 10 + a} for a in (1, 2)]
    if fmt == "JSON_MIN":
        rows = [{**r, "label": json.loads(r["label"]), "kind": json.loads(r["kind"])}
                for r in rows]
        source = rows
    else:
        source = tmp_path / "export.csv"
        with source.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    for control, span in (("label", [0, 4, "PER"]), ("kind", [17, 22, "LOC"])):
        e = ls.read_export(source, control=control)
        assert e.format == fmt and e.text_key == "text"
        assert e.spans[["start", "end", "label"]].values.tolist() == [span, span]
        # the one data column besides the span controls' is the object, as with one control
        assert e.to_name == "text" and "to_name 'text'" in " ".join(map(str, e.summary.notes))


def test_offsets_in_utf16_code_units_are_pointed_out():
    # offsets counted in UTF-16 code units (an emoji counts twice) shift every later span by
    # one character; only a "text mismatch" count said so, nothing said why
    text = "Hi 😀 John met Mary"
    def utf16(i):
        return len(text[:i].encode("utf-16-le")) // 2
    john, mary = text.index("John"), text.index("Mary")
    def ann(aid, offsets):
        return {"id": aid, "completed_by": aid, "result": [
            {"from_name": "label", "to_name": "text", "type": "labels",
             "value": {"start": s, "end": e, "text": t, "labels": ["PER"]}}
            for s, e, t in offsets]}
    tasks = [{"id": 1, "data": {"text": text}, "annotations": [
        ann(1, [(utf16(john), utf16(john + 4), "John")]),
        ann(2, [(utf16(mary), utf16(mary + 4), "Mary"), (john, john + 4, "John")])]}]
    e = ls.read_export(tasks, label_config=CONFIG)
    assert e.summary.spans.text_mismatch == 2
    notes = " ".join(str(n) for n in e.summary.notes)
    assert "2 span(s) whose text differs" in notes and "UTF-16 code units" in notes
    # code-point offsets (what the reader expects) get no such note
    tasks[0]["annotations"] = [ann(1, [(john, john + 4, "John")])]
    assert not any("UTF-16" in str(n) for n in ls.read_export(tasks).summary.notes)


def test_the_text_field_is_the_one_the_spans_texts_fit():
    # no config, the object named otherwise than its data field, and several text fields:
    # the reader asked for text_key although only one field holds the spans' texts
    tasks = export()
    for t in tasks:
        t["data"] = {"body": t["data"]["text"], "title": "A title", "source": "news"}
        for a in t["annotations"]:
            a["result"] = [dict(r, to_name="doc") for r in a["result"]]
    e = ls.read_export(tasks, control="label")
    assert (e.text_key, e.to_name) == ("body", "doc")
    assert e.spans["text"].tolist() == ["John", "Mary", "John", "Paris"]
    # Label Studio's region text may collapse a run of spaces: still a fit
    tasks[0]["data"]["body"] = TEXT.replace("Mary in", "Mary  in")
    tasks[0]["annotations"][2]["result"][1]["value"].update(start=18, end=23)
    tasks[0]["annotations"][1]["result"][1]["value"].update(start=9, end=17, text="Mary in")
    assert ls.read_export(tasks, control="label").text_key == "body"
    # no field fits every span's text: still the located question
    tasks[0]["annotations"][2]["result"][0]["value"]["text"] = "Jon"
    with pytest.raises(CrowdDataError, match="cannot tell which task data field"):
        ls.read_export(tasks, control="label")



def test_a_region_text_with_collapsed_whitespace_is_no_mismatch():
    # Label Studio's region text collapses a run of spaces while its offsets count each
    # one: right offsets were counted as text mismatches, and text_mismatch="error" refused
    tasks = export()
    tasks[0]["data"]["text"] = TEXT.replace("John met", "John  met")
    for ann in tasks[0]["annotations"]:
        for r in ann["result"]:
            if r["value"]["start"] > 0:
                r["value"].update(start=r["value"]["start"] + 1, end=r["value"]["end"] + 1)
    tasks[0]["annotations"][3]["result"] = [region(0, 9, text="John met")]
    e = ls.read_export(tasks, label_config=CONFIG, text_mismatch="error")
    assert e.summary.spans.text_mismatch == 0
    assert e.spans["text"].tolist()[-1] == "John met"        # the export's text, as given
    tasks[0]["annotations"][3]["result"] = [region(0, 9, text="John mat")]
    with pytest.raises(CrowdDataError, match="text 'John mat' differs"):
        ls.read_export(tasks, label_config=CONFIG, text_mismatch="error")


def test_a_csv_export_read_through_newline_translation_is_refused(tmp_path):
    # a CSV export opened in text mode without newline='' came in with each "\r\n" of a
    # task text turned into "\n": every span after it was read one character off, counted
    # only as a text mismatch (silently, for spans without their text)
    text = "Line one\r\nJohn met Mary"
    value = {"start": text.index("John"), "end": text.index("John") + 4, "text": "John",
             "labels": ["PER"]}
    path = tmp_path / "export.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text", "id", "label", "annotator", "annotation_id"],
                                 [text, "1", json.dumps([value]), "1", "10"]])
    with path.open(encoding="utf-8") as f:
        with pytest.raises(CrowdDataError, match="newline=''"):
            ls.read_export(f, control="label", label_config=CONFIG)
    for opened in (path.open(encoding="utf-8", newline=""), path.open("rb")):
        with opened as f:
            e = ls.read_export(f, control="label", label_config=CONFIG)
        assert e.spans[["start", "end", "text"]].values.tolist() == [[10, 14, "John"]]
        assert e.sequences.summary.text_mismatch == 0


@pytest.mark.parametrize("attribute", ['valueType="url"', 'encoding="base64unicode"'])
def test_a_text_loaded_from_a_url_or_decoded_is_refused(attribute):
    # the task data hold a URL (or base64), the span offsets index the text Label Studio
    # loaded (or decoded) from it: the spans were clipped or dropped against the URL's
    # characters and counted, and the predictions made on the URL
    config = CONFIG.replace('value="$text"', f'value="$text" {attribute}')
    tasks = [{"id": 1, "data": {"text": "s3://bucket/abstract-1.txt"}, "annotations": [
        {"id": 10, "completed_by": 1, "result": [region(40, 44, text="John")]}]}]
    with pytest.raises(CrowdDataError, match=f"object 'text' \\({attribute}\\).*put each "
                                             "task's text itself in 'text'"):
        ls.read_export(tasks, label_config=config)
    plain = CONFIG.replace('value="$text"', 'value="$text" valueType="text"')
    assert ls.read_export(export(), label_config=plain).spans.equals(
        ls.read_export(export(), label_config=CONFIG).spans)


def test_a_paragraph_offset_past_its_paragraph_is_a_located_error():
    # startOffset 12 in the 8-character paragraph 0 was read as character 12 of the joined
    # text, inside paragraph 1 ("John"): a span of another paragraph, without a word
    def dialog(start_offset, end_offset, p1="0", p0="0"):
        return [{"id": 1, "data": {"dialog": [{"author": "a", "text": "hi there"},
                                              {"author": "b", "text": "John here"}]},
                 "annotations": [{"id": 1, "completed_by": 1, "result": [
                     {"from_name": "p", "to_name": "dialog", "type": "paragraphlabels",
                      "value": {"start": p0, "end": p1, "startOffset": start_offset,
                                "endOffset": end_offset, "paragraphlabels": ["PER"]}}]}]}]
    with pytest.raises(CrowdDataError, match=r"task 1, annotation 1 \(user [^)]+\), span 0: startOffset 12 is "
                                             r"past the end of paragraph 0 \(8 characters\)"):
        ls.read_export(dialog(12, 13))
    with pytest.raises(CrowdDataError, match=r"span 0: endOffset 10 is past the end of "
                                             r"paragraph 1 \(9 characters\)"):
        ls.read_export(dialog(3, 10, p1="1"))
    with pytest.raises(CrowdDataError, match=r"span 0: negative startOffset -1"):
        ls.read_export(dialog(-1, 4, p1="1", p0="1"))   # the "\n" before paragraph 1
    # a span to the very end of a paragraph, and across paragraphs, are fine
    assert ls.read_export(dialog(3, 8)).spans[["start", "end"]].values.tolist() == [[3, 8]]
    assert ls.read_export(dialog(3, 9, p1="1")).spans[["start", "end"]].values.tolist() == [
        [3, 18]]


@pytest.mark.parametrize("name", ["hmm", "HMM-Crowd", "ds"])
def test_cli_sequence_model_takes_the_registry_aliases(tmp_path, name):
    """--sequence-model refused the aliases get_sequence_model takes ("invalid choice");
    --method took them already."""
    src = tmp_path / "export.json"
    src.write_text(json.dumps(export()))
    out = tmp_path / "pred.json"
    assert cli(["label-studio", "aggregate", str(src), "--control", "label", "--out", str(out),
                "--sequence-model", name, "--quiet"]) == 0
    primary = {"hmm": "hmm_crowd", "HMM-Crowd": "hmm_crowd", "ds": "dawid_skene"}[name]
    assert json.loads(out.read_text())[0]["model_version"] == f"crowd-keras-{primary}"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["label-studio", "aggregate", str(src), "--sequence-model",
                                   "hmm_crowed"])


def test_the_span_summary_counts_every_user_read_as_the_choices_summary_does():
    """User 4 only skipped and user 9 gave ground truth only: listed in both annotator
    tables, counted by a Choices control's summary, left out of the span summary's count."""
    gold = {"id": 20, "completed_by": 9, "ground_truth": True, "result": [region(0, 4)]}
    e = ls.read_export(export([gold]), label_config=CONFIG)
    assert e.summary.n_annotators == 5 == len(ls.annotator_report(e))
    assert "5 annotators" in str(e.summary)
