"""Label Studio export reader, predictions, annotator report, push logic and CLI (no server).

The fixtures in tests/data/label_studio/ were exported by a real Label Studio 1.23.2 server
from the demo project of tests/label_studio_server.py (regenerate them with
``python tests/label_studio_server.py``). Users: 1 admin, 2 ann1, 3 ann2, 4 ann3. Tasks 1-8:
task 2 has a skipped annotation, task 3 two annotations of user 2 (the later says positive),
task 4 a ground-truth annotation of user 3 (negative), task 5 only skipped annotations,
task 6 none, task 7 one annotation without sentiment, task 1 a multi-choice topics answer.
"""
from __future__ import annotations

import argparse
import copy
import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("label_studio_sdk")

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.aggregation import DawidSkene, MajorityVote  # noqa: E402
from crowd_keras.integrations import label_studio as ls  # noqa: E402

DATA = Path(__file__).parent / "data" / "label_studio"
CONFIG = DATA / "config.xml"
FLAT = ["demo_min.json", "demo.csv", "demo.tsv"]


def load(name: str):
    return json.loads((DATA / name).read_text())


def triples(export) -> set:
    return set(map(tuple, export.annotations.to_frame().itertuples(index=False)))


# ---------------------------------------------------------------------------- point 1: reading
def test_full_json_counts_and_mapping():
    e = ls.read_export(DATA / "demo.json", control="sentiment")
    s = e.summary
    assert (s.format, s.n_tasks, s.n_annotators) == ("JSON", 8, 4)
    assert (s.n_annotations_read, s.n_used, s.n_cancelled) == (18, 12, 3)
    assert (s.n_without_label, s.n_superseded, s.n_gold, s.n_tasks_unannotated) == (1, 1, 1, 2)
    assert list(e.task_ids) == [1, 2, 3, 4, 5, 6, 7, 8]  # tasks without annotation are kept
    assert list(e.annotator_ids) == [1, 2, 3, 4]
    assert list(e.classes) == ["negative", "neutral", "positive"]  # values seen, sorted
    assert e.to_name == "text" and e.control_type == "choices"
    per_task = e.annotations.annotations_per_item()
    assert per_task[4] == 0 and per_task[5] == 0  # task 5 (all skipped) and task 6 (none)
    assert e.annotations.n_annotations == 12


def test_latest_annotation_of_a_user_wins():
    e = ls.read_export(DATA / "demo.json", control="sentiment")
    frame = e.annotations.to_frame()
    mine = frame[(frame.task == 3) & (frame.worker == 2)]
    assert mine.label.tolist() == ["positive"]  # neutral first, positive later
    stats = e.annotator_stats.set_index("annotator")
    assert stats.loc[2, "n_superseded"] == 1 and stats.loc[4, "n_cancelled"] == 2


def test_ground_truth_kept_apart_as_gold():
    e = ls.read_export(DATA / "demo.json", control="sentiment")
    assert e.gold.to_dict() == {4: "negative"}
    assert (4, 3, "negative") not in triples(e)
    assert e.gold_codes().tolist() == [-1, -1, -1, 0, -1, -1, -1, -1]
    with_gold = ls.read_export(DATA / "demo.json", control="sentiment", include_gold=True)
    assert (4, 3, "negative") in triples(with_gold)
    assert with_gold.summary.n_used == 13 and with_gold.gold.to_dict() == {4: "negative"}


def test_conflicting_ground_truth_latest_wins_and_is_counted():
    data = load("demo.json")
    data[3]["annotations"][2]["ground_truth"] = True  # user 4 said positive, after user 3
    e = ls.read_export(data, control="sentiment")
    assert e.gold.to_dict() == {4: "positive"}
    assert (e.summary.n_gold, e.summary.n_gold_conflicts) == (2, 1)
    assert json.loads(json.dumps(e.summary.to_dict()))["n_gold_conflicts"] == 1


def test_all_gold_export_says_how_to_use_it():
    data = load("demo.json")
    for task in data:
        for ann in task["annotations"]:
            ann["ground_truth"] = True  # what Label Studio does to annotations imported with tasks
    e = ls.read_export(data, control="sentiment")
    assert e.annotations.n_annotations == 0
    assert any("include_gold=True" in note for note in e.summary.notes)
    assert ls.read_export(data, control="sentiment", include_gold=True).summary.n_used == 13


def test_completed_by_object_gives_emails_and_same_annotations():
    ids_only = ls.read_export(DATA / "demo.json", control="sentiment")
    objects = ls.read_export(DATA / "demo_users.json", control="sentiment")
    assert objects.annotations == ids_only.annotations
    assert list(objects.annotator_emails) == ["admin@example.com", "ann1@example.com",
                                              "ann2@example.com", "ann3@example.com"]
    assert list(ids_only.annotator_emails) == [None] * 4


@pytest.mark.parametrize("name", FLAT)
def test_flat_formats_agree_with_full_json(name):
    flat = ls.read_export(DATA / name, control="sentiment")
    assert flat.format == {"demo_min.json": "JSON_MIN", "demo.csv": "CSV", "demo.tsv": "TSV"}[name]
    # flat exports drop skipped annotations, ground-truth flags and all-skipped task 5
    full = ls.read_export(DATA / "demo.json", control="sentiment", include_gold=True)
    assert triples(flat) == triples(full)
    assert list(flat.task_ids) == [1, 2, 3, 4, 6, 7, 8]
    s = flat.summary
    assert (s.n_annotations_read, s.n_used, s.n_without_label, s.n_superseded) == (15, 13, 1, 1)
    assert s.n_cancelled == 0 and len(flat.gold) == 0 and s.notes
    assert flat.to_name is None


def test_flat_formats_are_identical_and_emails_as_annotators():
    a, b, c = (ls.read_export(DATA / n, control="sentiment", label_config=CONFIG) for n in FLAT)
    assert a.annotations == b.annotations == c.annotations and a.to_name == "text"
    users = ls.read_export(DATA / "demo_users_min.json", control="sentiment")
    assert list(users.annotator_ids) == ["admin@example.com", "ann1@example.com",
                                         "ann2@example.com", "ann3@example.com"]
    assert list(users.annotator_emails) == list(users.annotator_ids)
    email_to_id = {"admin@example.com": 1, "ann1@example.com": 2, "ann2@example.com": 3,
                   "ann3@example.com": 4}
    assert {(t, email_to_id[w], lab) for t, w, lab in triples(users)} == triples(a)


def test_label_config_gives_classes_in_config_order():
    e = ls.read_export(DATA / "demo.json", control="sentiment", label_config=CONFIG)
    assert list(e.classes) == ["positive", "negative", "neutral"]
    xml = CONFIG.read_text()
    assert list(ls.read_export(DATA / "demo.json", control="sentiment",
                               label_config=xml).classes) == list(e.classes)
    rating = ls.read_export(DATA / "demo.json", control="quality", label_config=CONFIG)
    assert list(rating.classes) == [1, 2, 3, 4, 5] and rating.control_type == "rating"
    assert sorted(rating.annotations.to_frame().label.tolist()) == [2, 3, 4, 5, 5]


def test_several_controls_need_a_name():
    with pytest.raises(CrowdDataError, match=r"several controls.*quality.*sentiment.*topics"):
        ls.read_export(DATA / "demo.json")


@pytest.mark.parametrize("name", ["demo.json", "demo_min.json", "demo.csv"])
def test_multiple_choice_policies(name):
    with pytest.raises(CrowdDataError, match=r"task 1.*annotation 2.*2 choices \['sports', 'tech'\]"):
        ls.read_export(DATA / name, control="topics")
    combo = ls.read_export(DATA / name, control="topics", multiple="combination",
                           label_config=CONFIG)
    assert list(combo.classes) == ["sports", "politics", "tech", "sports|tech"]
    assert combo.class_choices[3] == ("sports", "tech")
    assert (1, 3, "sports|tech") in triples(combo) and combo.summary.n_used == 6
    skip = ls.read_export(DATA / name, control="topics", multiple="skip")
    assert skip.summary.n_multiple_skipped == 1 and skip.summary.n_used == 5
    assert list(skip.classes) == ["politics", "sports", "tech"]


def test_unknown_value_without_config_becomes_a_class():
    e = ls.read_export(DATA / "unknown_label.json")
    assert list(e.classes) == ["bogus"]


@pytest.mark.parametrize("kind", ["path", "str", "text_file", "binary_file", "bytes", "loaded"])
def test_source_kinds(kind):
    path = DATA / "demo.json"
    source = {"path": path, "str": str(path), "text_file": io.StringIO(path.read_text()),
              "binary_file": io.BytesIO(path.read_bytes()), "bytes": path.read_bytes(),
              "loaded": load("demo.json")}[kind]
    e = ls.read_export(source, control="sentiment")
    assert e.annotations == ls.read_export(path, control="sentiment").annotations


def test_tsv_and_csv_from_file_objects_are_sniffed():
    for name in ("demo.csv", "demo.tsv"):
        e = ls.read_export(io.StringIO((DATA / name).read_text()), control="sentiment")
        assert e.format == name[-3:].upper() and e.summary.n_used == 13


# ---------------------------------------------------------------------------- malformed corpus
def _full():
    return load("demo.json")


def _mut(fn):
    data = _full()
    fn(data)
    return data


def _min_mut(fn):
    data = load("demo_min.json")
    fn(data)
    return data


def _csv_text(name="demo.csv"):
    return (DATA / name).read_text()


def _bad_result(value_fn):
    def fn(d):
        d[0]["annotations"][0]["result"][0] = value_fn(d[0]["annotations"][0]["result"][0])
    return _mut(fn)


MALFORMED = {
    # id: (source, read_export kwargs, regex the message must match)
    "empty_file": (b"", {}, r"is empty"),
    "whitespace_only": (b"  \n\t ", {}, r"is empty"),
    "truncated_json": ((DATA / "demo.json").read_bytes()[:5000], {"control": "sentiment"},
                       r"invalid JSON at line 1, column \d+.*truncated"),
    "truncated_csv": (_csv_text()[:300], {"control": "sentiment"},
                      r"malformed CSV near line 3: unexpected end of data"),
    "not_utf8": (b"[\xff\xfe\xfa]", {}, r"not UTF-8"),
    "empty_list": (b"[]", {}, r"holds no tasks"),
    "header_only_csv": (_csv_text().splitlines()[0] + "\n", {"control": "sentiment"},
                        r"holds no tasks"),
    "list_of_numbers": (b"[1, 2]", {}, r"entry 0 is not a JSON object \(got int\)"),
    "not_an_export": (b'{"foo": 1}', {}, r"neither 'annotations'/'data'.*nor"),
    "task_without_id": (_mut(lambda d: d[2].pop("id")), {"control": "sentiment"},
                        r"task at position 2 has no 'id'"),
    "task_id_wrong_type": (_mut(lambda d: d[1].__setitem__("id", {"x": 1})),
                           {"control": "sentiment"}, r"task id must be an integer.*dict"),
    "task_id_bool": (_mut(lambda d: d[1].__setitem__("id", True)), {"control": "sentiment"},
                     r"task id must be an integer, got True"),
    "duplicate_task_id": (_mut(lambda d: d[3].__setitem__("id", 2)), {"control": "sentiment"},
                          r"task id 2 appears twice"),
    "task_without_annotations": (_mut(lambda d: d[0].pop("annotations")),
                                 {"control": "sentiment"}, r"task 1 has no 'annotations' list"),
    "annotations_not_a_list": (_mut(lambda d: d[0].__setitem__("annotations", {"a": 1})),
                               {"control": "sentiment"}, r"task 1: 'annotations' must be a list"),
    "annotation_not_an_object": (_mut(lambda d: d[0]["annotations"].append("oops")),
                                 {"control": "sentiment"}, r"task 1, annotation at position 3 is not an object \(got str\)"),
    "annotation_without_completed_by": (_mut(lambda d: d[1]["annotations"][0].pop("completed_by")),
                                        {"control": "sentiment"},
                                        r"task 2, annotation 4 has no 'completed_by'"),
    "completed_by_wrong_type": (_mut(lambda d: d[1]["annotations"][0].__setitem__("completed_by", [2])),
                                {"control": "sentiment"}, r"task 2, annotation 4: annotator.*list"),
    "completed_by_object_empty": (_mut(lambda d: d[1]["annotations"][0].__setitem__("completed_by", {})),
                                  {"control": "sentiment"}, r"task 2, annotation 4: completed_by has neither"),
    "duplicate_annotation_id": (_mut(lambda d: d[1]["annotations"][1].__setitem__("id", 1)),
                                {"control": "sentiment"}, r"task 2, annotation 1: annotation id 1 appears twice"),
    "annotation_id_wrong_type": (_mut(lambda d: d[1]["annotations"][1].__setitem__("id", "five")),
                                 {"control": "sentiment"}, r"task 2.*annotation id must be an integer"),
    "result_not_a_list": (_mut(lambda d: d[0]["annotations"][0].__setitem__("result", "positive")),
                          {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\): 'result' must be a list"),
    "result_item_without_value": (_bad_result(lambda r: {k: v for k, v in r.items() if k != "value"}),
                                  {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\), result item 0 has no 'value'"),
    "result_item_from_name_wrong_type": (_bad_result(lambda r: {**r, "from_name": 7}),
                                         {"control": "sentiment"}, r"'from_name' must be a str"),
    "choices_not_a_list": (_bad_result(lambda r: {**r, "value": {"choices": "positive"}}),
                           {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\): control 'sentiment' value.choices must be a list"),
    "was_cancelled_wrong_type": (_mut(lambda d: d[0]["annotations"][0].__setitem__("was_cancelled", "yes")),
                                 {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\): 'was_cancelled' must be true or false"),
    "created_at_wrong_type": (_mut(lambda d: [a.pop("updated_at") for a in d[0]["annotations"]]
                                   and d[0]["annotations"][0].__setitem__("created_at", 17)),
                              {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\): 'created_at' must be a date-time"),
    "unreadable_date": (_mut(lambda d: d[0]["annotations"][0].__setitem__("updated_at", "yesterday")),
                        {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\): unreadable date-time 'yesterday'"),
    "unknown_label_with_config": (DATA / "unknown_label.json",
                                  {"control": "sentiment", "label_config": CONFIG},
                                  r"task \d+, annotation \d+ \(user [^)]+\): value 'bogus' of control 'sentiment' is not in the labeling config"),
    "rating_out_of_range": (_mut(lambda d: d[0]["annotations"][0]["result"][2]["value"].__setitem__("rating", 9)),
                            {"control": "quality", "label_config": CONFIG},
                            r"task 1, annotation 1 \(user [^)]+\): rating 9 is outside 1..5"),
    "rating_below_one_without_config": (
        _mut(lambda d: d[0]["annotations"][0]["result"][2]["value"].__setitem__("rating", 0)),
        {"control": "quality"}, r"task 1, annotation 1 \(user [^)]+\): rating 0 is below 1"),
    "min_rating_negative_without_config": (_min_mut(lambda d: d[0].__setitem__(
        "quality", [{"rating": -3}])), {"control": "quality"},
        r"row 0 \(task 1, annotation 3\): rating -3 is below 1"),
    "every_annotation_cancelled": (_mut(lambda d: [a.__setitem__("was_cancelled", True)
                                                   for t in d for a in t["annotations"]]),
                                   {"control": "sentiment"},
                                   r"all 18 annotations are cancelled \(was_cancelled\): none "
                                   r"holds a label"),
    "rating_wrong_type": (_mut(lambda d: d[0]["annotations"][0]["result"][2]["value"].__setitem__("rating", "five")),
                          {"control": "quality"}, r"task 1, annotation 1 \(user [^)]+\): control 'quality' value.rating must be an integer"),
    "result_type_differs_from_config": (_mut(lambda d: d[0]["annotations"][0]["result"][0].__setitem__("type", "rating")),
                                        {"control": "sentiment", "label_config": CONFIG},
                                        r"type 'rating' but the config declares 'choices'"),
    "two_results_for_one_control": (_mut(lambda d: d[0]["annotations"][0]["result"].append(
                                        copy.deepcopy(d[0]["annotations"][0]["result"][0]))),
                                    {"control": "sentiment"}, r"task 1, annotation 1 \(user [^)]+\): 2 results for control 'sentiment'"),
    "textarea_control": (_mut(lambda d: d[0]["annotations"][0]["result"].append(
                             {"from_name": "notes", "to_name": "text", "type": "textarea",
                              "value": {"text": ["a note"]}})),
                         {"control": "notes"}, r"control 'notes' is a textarea control; only Choices and Rating"),
    "multiple_choice_without_option": (DATA / "demo.json", {"control": "topics"},
                                       r"task 1, annotation 2 \(user [^)]+\): 2 choices.*multiple='combination'"),
    "control_not_in_results": (DATA / "demo.json", {"control": "mood"},
                               r"control 'mood' appears in no annotation result; controls seen"),
    "control_not_in_config": (DATA / "demo.json", {"control": "mood", "label_config": CONFIG},
                              r"control 'mood' is not in the labeling config"),
    "bad_label_config": (DATA / "demo.json", {"control": "sentiment", "label_config": "<View><Choices"},
                         r"label_config could not be parsed"),
    "min_row_without_id": (_min_mut(lambda d: d[3].pop("id")), {"control": "sentiment"},
                           r"row 3 has no task 'id'"),
    "min_duplicate_annotation_id": (_min_mut(lambda d: d[4].__setitem__("annotation_id", 3)),
                                    {"control": "sentiment"}, r"row 4 \(task 2, annotation 3\): annotation id 3 appears twice"),
    "min_annotation_without_annotator": (_min_mut(lambda d: d[4].__setitem__("annotator", None)),
                                         {"control": "sentiment"}, r"row 4 \(task 2, annotation 4\): no 'annotator'"),
    "min_value_wrong_type": (_min_mut(lambda d: d[0].__setitem__("sentiment", 3)),
                             {"control": "sentiment"}, r"row 0 \(task 1, annotation 3\): column 'sentiment' holds int 3"),
    "min_without_control": (DATA / "demo_min.json", {},
                            r"JSON_MIN exports do not say which columns are labeling controls; pass control="),
    "min_control_column_missing": (DATA / "demo_min.json", {"control": "mood"},
                                   r"no column 'mood' for the control"),
    "csv_invalid_json_cell": (_csv_text().replace('"{""choices"":[""sports"",""tech""]}"', '"{""choices"":["'),
                              {"control": "topics", "multiple": "combination"},
                              r"line 3 \(task 1, annotation 2\): column 'topics' holds invalid JSON text"),
    "csv_missing_columns": ("id,text,sentiment\n1,t1,positive\n", {"control": "sentiment"},
                            r"not a Label Studio CSV export: no column\(s\) \['annotator', 'annotation_id'\]"),
    "csv_extra_field": (_csv_text().replace("\n2,", "\n2,extra,", 1), {"control": "sentiment"},
                        r"line \d+ has 11 fields, the header has 10"),
    "csv_label_without_annotator": (_csv_text().replace('"","","",6,"","","","t6"', '"","","",6,"","","positive","t6"'),
                                    {"control": "sentiment"},
                                    r"task 6\): a value 'positive' for control 'sentiment' but no annotator"),
    "tsv_bad_quoting": (_csv_text("demo.tsv").replace('"t1"', '"t1"x', 1), {"control": "sentiment"},
                        r"malformed TSV near line 2"),
    "missing_file": (DATA / "no_such_export.json", {}, r"file not found"),
    "text_passed_as_path": (Path("x"), {}, r"looks like export text"),
    "wrong_source_type": (3.5, {}, r"cannot read a Label Studio export from a float"),
}


def test_corpus_is_large_enough():
    assert len(MALFORMED) >= 20


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_export_gives_clear_error(case):
    source, kwargs, pattern = MALFORMED[case]
    if isinstance(source, str):
        source = source.encode()  # a str is a path; export text comes as bytes
    elif case == "text_passed_as_path":
        source = _csv_text()
    with pytest.raises(CrowdDataError) as info:
        ls.read_export(source, **kwargs)
    assert type(info.value) is CrowdDataError
    assert info.match(pattern), str(info.value)
    # no chained exception and no frame from inside json/csv/pandas/the SDK
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__ or info.value.__context__ is None
    outside = [str(entry.path) for entry in info.traceback
               if "crowd_keras" not in str(entry.path) and "integrations" not in str(entry.path)
               and "tests" not in str(entry.path)]
    assert outside == []


@pytest.mark.parametrize("text", ["null", "5", '"tasks"', "id,annotator\n"])
def test_a_json_file_that_holds_no_list_or_object_is_not_read_as_csv(text, tmp_path):
    path = tmp_path / "export.json"
    path.write_text(text)
    with pytest.raises(CrowdDataError, match=r"export\.json': a JSON export must start with "
                                             r"'\[' or '\{', got "):
        ls.read_export(path, control="sentiment")


def test_bad_options_raise_value_error():
    with pytest.raises(ValueError, match="multiple must be one of"):
        ls.read_export(DATA / "demo.json", multiple="first")
    with pytest.raises(ValueError, match="format must be one of"):
        ls.read_export(DATA / "demo.json", format="XML")


# ---------------------------------------------------------------------------- point 2: predictions
def test_predictions_in_the_controls_format():
    e = ls.read_export(DATA / "demo.json", control="sentiment", label_config=CONFIG)
    proba = MajorityVote(soft=True).fit(e.annotations).predict_proba()
    preds = ls.to_predictions(e, proba, "mv-1")
    assert [p["task"] for p in preds] == [1, 2, 3, 4, 7, 8]  # annotated tasks only
    by_task = {p["task"]: p for p in preds}
    assert by_task[2]["result"] == [{"from_name": "sentiment", "to_name": "text",
                                     "type": "choices", "value": {"choices": ["negative"]}}]
    assert by_task[1]["score"] == pytest.approx(2 / 3)
    assert all(p["model_version"] == "mv-1" for p in preds)
    assert len(ls.to_predictions(e, proba, "mv-1", include_unannotated=True)) == 8
    json.dumps(preds)  # plain JSON types only


def test_predictions_for_rating_and_combination():
    rating = ls.read_export(DATA / "demo.json", control="quality", label_config=CONFIG)
    preds = ls.predictions_from_model(rating, MajorityVote(), "r")
    by_task = {p["task"]: p for p in preds}
    assert by_task[7]["result"][0]["value"] == {"rating": 3}
    assert by_task[7]["result"][0]["type"] == "rating"
    combo = ls.read_export(DATA / "demo.json", control="topics", multiple="combination")
    proba = np.zeros((8, 4))
    proba[:, 3] = 1.0
    first = ls.to_predictions(combo, proba, "c")[0]
    assert first["result"][0]["value"] == {"choices": ["sports", "tech"]}


def test_predictions_need_to_name_for_flat_exports():
    e = ls.read_export(DATA / "demo.csv", control="sentiment")
    proba = np.full((7, 3), 1 / 3)
    with pytest.raises(CrowdDataError, match="pass to_name="):
        ls.to_predictions(e, proba, "v")
    assert ls.to_predictions(e, proba, "v", to_name="text")[0]["result"][0]["to_name"] == "text"
    with pytest.raises(CrowdDataError, match=r"shape \(7, 3\)"):
        ls.to_predictions(e, proba[:3], "v", to_name="text")


def test_model_fitted_elsewhere_is_refused():
    e = ls.read_export(DATA / "demo.json", control="sentiment")
    other = DawidSkene().fit(ls.read_export(DATA / "demo.csv", control="sentiment").annotations)
    with pytest.raises(CrowdDataError, match="fitted on other annotations"):
        ls.predictions_from_model(e, other)


def test_write_predictions_is_atomic(tmp_path, monkeypatch):
    e = ls.read_export(DATA / "demo.json", control="sentiment")
    preds = ls.predictions_from_model(e, DawidSkene(), "ds")
    out = ls.write_predictions(tmp_path / "p.json", preds)
    assert json.loads(out.read_text()) == preds
    monkeypatch.setattr(ls.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        ls.write_predictions(tmp_path / "p.json", preds[:1])
    assert json.loads(out.read_text()) == preds  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]  # no temporary file left


# ---------------------------------------------------------------------------- point 3: report
def test_annotator_report(tmp_path):
    e = ls.read_export(DATA / "demo.json", control="sentiment", label_config=CONFIG)
    model = MajorityVote().fit(e.annotations)
    report = ls.annotator_report(e, model, csv_path=tmp_path / "a.csv",
                                 json_path=tmp_path / "a.json", emails={2: "ann1@example.com"},
                                 model_version="mv")
    r = report.set_index("annotator")
    assert list(r.index) == [1, 2, 3, 4]
    assert r["n_annotations"].tolist() == [1, 4, 4, 3]
    assert r.loc[2, "email"] == "ann1@example.com" and pd.isna(r.loc[3, "email"])
    # agreement with the majority label, counted by hand
    frame = e.annotations.to_frame()
    winner = dict(zip(e.task_ids, model.predict_labels()))
    for user, rows in frame.groupby("worker"):
        expected = np.mean([winner[t] == lab for t, lab in zip(rows.task, rows.label)])
        assert r.loc[user, "agreement"] == pytest.approx(expected)
    # gold: task 4 is negative; user 2 said negative, user 4 positive, user 3 gave the gold
    assert (r.loc[2, "n_gold"], r.loc[2, "gold_accuracy"]) == (1, 1.0)
    assert (r.loc[4, "n_gold"], r.loc[4, "gold_accuracy"]) == (1, 0.0)
    assert r.loc[3, "n_gold"] == 0 and math.isnan(r.loc[3, "gold_accuracy"])
    assert r.loc[4, "n_cancelled"] == 2
    recall = r[[f"recall[{c}]" for c in e.classes]].to_numpy()
    assert np.allclose(recall, np.diagonal(model.confusion_matrices_, axis1=1, axis2=2))
    assert r["accuracy"].between(0, 1).all()
    # the aggregate command's report has the expected accuracy: so has this one, per user
    fitted = model.annotator_quality_.set_index("annotator")
    assert "expected_accuracy" in fitted.columns
    assert np.allclose(r["expected_accuracy"].to_numpy(),
                       fitted.loc[r.index, "expected_accuracy"].to_numpy(), equal_nan=True)
    on_disk = pd.read_csv(tmp_path / "a.csv")
    assert on_disk["n_annotations"].tolist() == [1, 4, 4, 3]
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["classes"] == ["positive", "negative", "neutral"] and doc["model_version"] == "mv"
    assert doc["annotators"][2]["gold_accuracy"] is None  # NaN written as null
    assert doc["annotators"][1]["email"] == "ann1@example.com"


def test_dawid_skene_quality_tracks_simulated_accuracy():
    """Real-format export built from simulated annotators: DS ranks annotators correctly."""
    rng = np.random.default_rng(0)
    classes = ["positive", "negative", "neutral"]
    truth = rng.integers(0, 3, 300)
    acc = {10: 0.95, 11: 0.8, 12: 0.65, 13: 0.45}
    template = load("demo.json")[0]
    tasks, aid = [], 0
    for t, y in enumerate(truth):
        task = copy.deepcopy(template)
        task["id"] = 1000 + t
        anns = []
        for user in rng.choice(list(acc), 3, replace=False):
            label = y if rng.random() < acc[user] else rng.choice([k for k in range(3) if k != y])
            ann = copy.deepcopy(template["annotations"][0])
            aid += 1
            ann.update(id=aid, completed_by=int(user),
                       result=[{"from_name": "sentiment", "to_name": "text", "type": "choices",
                                "value": {"choices": [classes[label]]}}])
            anns.append(ann)
        task["annotations"] = anns
        tasks.append(task)
    e = ls.read_export(tasks, label_config=CONFIG, control="sentiment")
    model = DawidSkene().fit(e.annotations)
    report = ls.annotator_report(e, model).set_index("annotator")
    est = report.loc[list(acc), "accuracy"].to_numpy()
    assert np.argsort(est).tolist() == np.argsort(list(acc.values())).tolist()
    assert np.abs(est - np.array(list(acc.values()))).max() < 0.1
    pred = model.predict()
    assert (pred == truth).mean() > (MajorityVote().fit(e.annotations).predict() == truth).mean()


# ---------------------------------------------------------------------------- push logic (fake server)
class _Pred:
    def __init__(self, id, task, model_version, score, result):
        self.id, self.task, self.model_version, self.score, self.result = (
            id, task, model_version, score, result)


class FakeLabelStudio:
    """In-memory stand-in for the SDK client's prediction calls, with injectable failures."""

    def __init__(self, api_key="fake-secret-token-0123456789abcdef"):
        self.store, self.next_id, self.failures, self.calls = {}, 1, [], []
        outer = self

        class Predictions:
            def list(self, project=None, request_options=None):
                outer.calls.append("list")
                outer._maybe_fail("list")
                return list(outer.store.values())

            def delete(self, id, request_options=None):
                outer.calls.append("delete")
                outer._maybe_fail("delete")
                outer.store.pop(id)

            def update(self, id, result, score, model_version, request_options=None):
                outer.calls.append("update")
                outer._maybe_fail("update")
                outer.store[id].result, outer.store[id].score = result, score

        class Projects:
            def get(self, id, request_options=None):  # the pre-flight check (not counted)
                return type("Project", (), {"id": id, "label_config": ""})()

            def import_predictions(self, id, request, request_options=None):
                outer.calls.append("import")
                mode = outer._maybe_fail("import", store=lambda: outer._add(request))
                if mode is None:
                    outer._add(request)

        class Tasks:
            def list(self, project=None, request_options=None, **kwargs):  # pre-flight, too
                return [type("Task", (), {"id": t, "data": {}})() for t in range(1, 9)]

        class Wrapper:
            class _tokens_client:
                _api_key = api_key

        self.predictions, self.projects, self._client_wrapper = Predictions(), Projects(), Wrapper()
        self.tasks = Tasks()

    def _add(self, request):
        for p in request:
            self.store[self.next_id] = _Pred(self.next_id, p["task"], p["model_version"],
                                             p.get("score"), p["result"])
            self.next_id += 1

    def _maybe_fail(self, call, store=None):
        if self.failures and self.failures[0][0] == call:
            _, kind = self.failures.pop(0)
            import httpx
            if kind == "lost_reply":  # stored, but the reply never came back
                store()
                raise httpx.ReadTimeout("timed out")
            if kind == "down":
                raise httpx.ConnectError("connection refused")
            if kind == "auth":
                from label_studio_sdk.core.api_error import ApiError
                raise ApiError(status_code=401, headers={"set-cookie": "sessionid=abc"},
                               body={"detail": "Invalid token fake-secret-token-0123456789abcdef"})
        return None

    def versions(self, version):
        out = {}
        for p in self.store.values():
            if p.model_version == version:
                out.setdefault(p.task, []).append(p)
        return out


def _demo_predictions(version="ds-1"):
    e = ls.read_export(DATA / "demo.json", control="sentiment")
    return ls.predictions_from_model(e, DawidSkene(), version)


def test_push_is_idempotent():
    client, preds = FakeLabelStudio(), _demo_predictions()
    first = ls.push_predictions(client, 1, preds, batch_size=4, backoff=0)
    assert (first.n_created, first.n_unchanged, first.n_batches) == (6, 0, 2)
    again = ls.push_predictions(client, 1, preds, batch_size=4, backoff=0)
    assert (again.n_created, again.n_unchanged, again.n_replaced) == (0, 6, 0)
    held = client.versions("ds-1")
    assert sorted(held) == [p["task"] for p in preds] and all(len(v) == 1 for v in held.values())
    changed = [dict(p, score=0.5) if p["task"] == 3 else p for p in preds]
    upd = ls.push_predictions(client, 1, changed, backoff=0)
    assert (upd.n_created, upd.n_replaced, upd.n_unchanged) == (1, 1, 5)
    assert client.versions("ds-1")[3][0].score == 0.5 and len(client.store) == 6
    skip = ls.push_predictions(client, 1, preds, on_existing="skip", backoff=0)
    assert skip.n_created == 0 and client.versions("ds-1")[3][0].score == 0.5
    # another model version lives beside it
    ls.push_predictions(client, 1, _demo_predictions("ds-2"), backoff=0)
    assert len(client.store) == 12


def test_push_removes_duplicate_copies():
    client, preds = FakeLabelStudio(), _demo_predictions()
    client._add(preds[:2])
    client._add(preds[:2])  # two copies on tasks 1 and 2 (e.g. an older tool)
    ls.push_predictions(client, 1, preds, backoff=0)
    held = client.versions("ds-1")
    assert len(held) == 6 and all(len(v) == 1 for v in held.values())


def test_push_retries_without_duplicating_a_lost_reply():
    client, preds = FakeLabelStudio(), _demo_predictions()
    client.failures = [("import", "lost_reply"), ("import", "down")]
    res = ls.push_predictions(client, 1, preds, batch_size=4, backoff=0, retries=3)
    held = client.versions("ds-1")
    assert len(held) == 6 and all(len(v) == 1 for v in held.values())
    assert res.n_created == 6


def test_push_stopped_half_way_completes_on_rerun(capsys):
    client, preds = FakeLabelStudio(), _demo_predictions()
    client.failures = [("import", None), ("import", "down"), ("import", "down")]
    with pytest.raises(ls.LabelStudioError, match=r"stopped at batch 2 of 3 \(2 of 6 new "
                       r"predictions created.*Re-run.*; 4 tasks without a prediction of this "
                       r"version still have none$") as info:
        ls.push_predictions(client, 1, preds, batch_size=2, backoff=0, retries=1)
    assert "every task keeps" not in str(info.value)  # 4 tasks never had one
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert len(client.versions("ds-1")) == 2  # the first batch got in
    res = ls.push_predictions(client, 1, preds, batch_size=2, backoff=0)
    assert (res.n_created, res.n_unchanged) == (4, 2)
    held = client.versions("ds-1")
    assert len(held) == 6 and all(len(v) == 1 for v in held.values())


def test_aggregate_help_says_what_a_stopped_first_push_leaves():
    """The help promised that an interrupted push "leaves every task with a prediction": a
    first push stopped half-way leaves the tasks not reached without one (the test above),
    until a re-run."""
    from crowd_keras.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    ls_sub = next(a for a in sub.choices["label-studio"]._actions
                  if isinstance(a, argparse._SubParsersAction))
    text = " ".join(ls_sub.choices["aggregate"].format_help().split())
    assert "leaves every task with a prediction" not in text
    assert "an interrupted push takes from no task the prediction it had, and a re-run " \
           "completes it" in text


def test_push_errors_never_show_the_token(monkeypatch):
    secret = "fake-secret-token-0123456789abcdef"
    monkeypatch.setenv(ls.API_KEY_ENV, secret)
    client = FakeLabelStudio(api_key=secret)
    client.failures = [("list", "auth")]
    with pytest.raises(ls.LabelStudioError) as info:
        ls.push_predictions(client, 1, _demo_predictions(), backoff=0)
    text = str(info.value)
    assert "HTTP 401" in text and secret not in text and "sessionid" not in text
    assert client.calls == ["list"]  # 401 is not retried
    assert ls._scrub("Authorization: Token abcdefabcdefabcdefabcdef", []) == \
        "Authorization: Token ***"


def test_push_checks_its_input():
    client = FakeLabelStudio()
    preds = _demo_predictions()
    with pytest.raises(CrowdDataError, match="model versions"):
        ls.push_predictions(client, 1, preds, model_version="other")
    with pytest.raises(CrowdDataError, match="several predictions"):
        ls.push_predictions(client, 1, preds + preds[:1])
    assert client.calls == []


def test_several_predictions_for_one_task_are_named():
    """The refusal names the two predictions and their task (one of hundreds was unfindable)."""
    client, preds = FakeLabelStudio(), _demo_predictions()
    twice = preds + [dict(preds[2]), dict(preds[4])]
    with pytest.raises(CrowdDataError) as info:
        ls.push_predictions(client, 1, twice, backoff=0)
    text = str(info.value)
    assert f"predictions 2 and {len(preds)} are both for task {preds[2]['task']}" in text, text
    assert "2 task(s) with several predictions" in text and "Nothing was written" in text
    assert client.calls == []


def test_push_names_the_predictions_whose_model_version_is_missing_or_another():
    """Predictions in Label Studio's import format, without model_version, were refused as
    carrying "model versions []"; a stray version named no prediction."""
    client, preds = FakeLabelStudio(), _demo_predictions()
    bare = [{k: v for k, v in p.items() if k != "model_version"} for p in preds]
    with pytest.raises(CrowdDataError, match=rf"^none of the {len(preds)} predictions names its "
                                             r"model_version; pass model_version="):
        ls.push_predictions(client, 1, bare, backoff=0)
    mixed = preds[:2] + [dict(p, model_version="b") for p in preds[2:]]
    with pytest.raises(CrowdDataError, match=r"\(first 'ds-1', then prediction 2, task "
                                             rf"{preds[2]['task']}, model_version 'b'\)"):
        ls.push_predictions(client, 1, mixed, backoff=0)
    with pytest.raises(CrowdDataError, match=r"not 'other' \(first: prediction 0, task "
                                             rf"{preds[0]['task']}, model_version 'ds-1'\)"):
        ls.push_predictions(client, 1, preds, model_version="other", backoff=0)
    assert client.calls == []
    assert ls.push_predictions(client, 1, bare, model_version="v", backoff=0).n_new == len(preds)


def test_push_takes_task_ids_as_text_or_numpy_integers():
    """Task ids are sent as JSON integers: the server looks "3" up as text and refuses it,
    and numpy integers are no JSON; compared as given they would not match the ints held."""
    client, preds = FakeLabelStudio(), _demo_predictions()
    ls.push_predictions(client, 1, preds, backoff=0)
    for cast in (str, np.int64):
        again = ls.push_predictions(client, 1, [dict(p, task=cast(p["task"])) for p in preds],
                                    backoff=0)
        assert (again.n_new, again.n_unchanged) == (0, len(preds)), cast
    assert len(client.store) == len(preds)
    assert all(type(p.task) is int for p in client.store.values())
    with pytest.raises(CrowdDataError, match="prediction 1: task id must be an integer, got "
                                             "str 'x'"):
        ls.push_predictions(client, 1, [preds[0], dict(preds[1], task="x")], backoff=0)


def test_http_error_pages_become_one_line():
    """A server's or a proxy's HTML error page is one line of its text, without tags."""
    from label_studio_sdk.core.api_error import ApiError
    page = ("<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center>nginx"
            "</center>\n</body>\n</html>\n")
    assert ls.describe_error(ApiError(status_code=502, body=page)) == \
        "HTTP 502: 502 Bad Gateway nginx"
    text = ls.describe_error(ApiError(status_code=400, body={"detail": "a\nb <int>"}))
    assert "\n" not in text and "<int>" in text


def test_a_refused_url_never_shows_the_token(monkeypatch):
    secret, other = "fake-secret-token-0123456789abcdef", "argument-token-0123456789abcdef"
    monkeypatch.setenv(ls.API_KEY_ENV, secret)
    for url, key in ((f"127.0.0.1:8080/?token={secret}", None), (f"ftp://u:{secret}@h", None),
                     (f"user:{other}@127.0.0.1:9", other)):
        with pytest.raises(ls.LabelStudioError, match="URL") as info:
            ls.connect(url, key)
        assert secret not in str(info.value) and other not in str(info.value), url
        assert "***" in str(info.value)


def test_an_unreachable_server_is_one_line_saying_whether_it_was_retried():
    client = ls.connect("http://127.0.0.1:9", "fake-secret-token-0123456789abcdef")
    for retries, said in ((0, "not retried"), (1, "after 2 attempt(s), retried with backoff")):
        with pytest.raises(ls.LabelStudioError) as info:
            ls.check_project(client, 1, retries=retries, backoff=0)
        text = str(info.value)
        assert info.value.transient and said in text and "127.0.0.1:9" in text, text
        if retries == 0:
            assert "retried with backoff" not in text, text
        assert "\n" not in text and "fake-secret" not in text


def test_a_stopped_push_names_the_project_and_the_url_without_the_token():
    secret = "fake-secret-token-0123456789abcdef"
    client = ls.connect(f"http://user:{secret}@127.0.0.1:9", secret)
    for push in (lambda: ls.push_predictions(client, 1, _demo_predictions(), retries=0,
                                             preflight=False),
                 lambda: ls.check_tasks(client, 1, task_ids=[1], retries=0)):
        with pytest.raises(ls.LabelStudioError) as info:
            push()
        text = str(info.value)
        assert "project 1 at http://user:***@127.0.0.1:9" in text and secret not in text, text



def test_a_password_in_the_url_is_blanked_like_the_token():
    """http://user:password@host (basic auth of a proxy in front of Label Studio) was printed
    whole in every error that names the server."""
    password, token = "S3cret-proxy-pass", "fake-secret-token-0123456789abcdef"
    client = ls.connect(f"http://alice:{password}@127.0.0.1:9", token)
    for call in (lambda: ls.check_project(client, 1, retries=0),
                 lambda: ls.push_predictions(client, 1, _demo_predictions(), retries=0,
                                             preflight=False),
                 lambda: ls.check_url(f"ftp://alice:{password}@host")):
        with pytest.raises(ls.LabelStudioError) as info:
            call()
        text = str(info.value)
        assert "alice:***@" in text and password not in text and token not in text, text

def test_a_project_id_given_as_text_is_that_project():
    """"1" (say from an environment variable) is project 1, the export's project: it was
    refused as "comes from project 1, not project 1"."""
    client, preds = FakeLabelStudio(), _demo_predictions()
    check = ls.check_tasks(client, "1", DATA / "demo.json", allow_data_mismatch=True)
    assert (check.n_tasks, check.n_missing) == (8, 0)
    pushed = ls.push_predictions(client, "1", preds, export=DATA / "demo.json",
                                 allow_data_mismatch=True, backoff=0)
    assert pushed.n_new == len(preds) == len(client.store)
    with pytest.raises(CrowdDataError, match="project_id must be an integer, got str 'one'"):
        ls.push_predictions(client, "one", preds, backoff=0)


def test_a_token_read_with_its_newline_is_sent_without_it(monkeypatch):
    """A token file's trailing newline made every request a permanent 'Illegal header value'
    error; stripped, the request goes out (to a socket that hangs up: a transient error)."""
    import socket
    import threading
    secret = "fake-secret-token-0123456789abcdef"
    server = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        while True:
            try:
                server.accept()[0].close()
            except OSError:  # closed at the end of the test
                return

    threading.Thread(target=hang_up, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    try:
        for key, env in ((secret + "\n", None), (None, f" {secret}\n")):
            if env is None:
                monkeypatch.delenv(ls.API_KEY_ENV, raising=False)
            else:
                monkeypatch.setenv(ls.API_KEY_ENV, env)
            with pytest.raises(ls.LabelStudioError) as info:
                ls.check_project(ls.connect(url, key), 1, retries=0)
            text = str(info.value)
            assert info.value.transient and "Illegal header" not in text, text
            assert secret not in text
    finally:
        server.close()
    monkeypatch.setenv(ls.API_KEY_ENV, " \n")
    with pytest.raises(ls.LabelStudioError, match="no Label Studio API token"):
        ls.connect("http://127.0.0.1:9")


def test_connect_needs_a_token(monkeypatch):
    monkeypatch.delenv(ls.API_KEY_ENV, raising=False)
    with pytest.raises(ls.LabelStudioError, match="LABEL_STUDIO_API_KEY"):
        ls.connect("http://127.0.0.1:9")


# ---------------------------------------------------------------------------- point 4: CLI
def _cli(argv):
    from crowd_keras.cli import label_studio as cli_label_studio

    parser = argparse.ArgumentParser(prog="crowd-keras")
    cli_label_studio.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_aggregate_writes_predictions_and_report(tmp_path, capsys):
    out, rep = tmp_path / "pred.json", tmp_path / "annotators.csv"
    code = _cli(["label-studio", "aggregate", str(DATA / "demo.json"), "--control", "sentiment",
                 "--label-config", str(CONFIG), "--method", "dawid_skene", "--out", str(out),
                 "--annotators", str(rep)])
    assert code == 0
    preds = json.loads(out.read_text())
    assert len(preds) == 6 and preds[0]["model_version"] == "crowd-keras-dawid_skene"
    assert pd.read_csv(rep)["annotator"].tolist() == [1, 2, 3, 4]
    assert json.loads((tmp_path / "annotators.json").read_text())["model"] == "DawidSkene"
    printed = capsys.readouterr().out
    # one ground-truth task: counts and the reason, not an accuracy of 0 or 1
    assert "12 used" in printed and "1 ground-truth task held at their label" in printed


def test_cli_reports_bad_input_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 1, "annotations": [')
    assert _cli(["label-studio", "aggregate", str(bad), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "invalid JSON" in err and "Traceback" not in err
    assert not (tmp_path / "p.json").exists()
    assert _cli(["label-studio", "aggregate", str(DATA / "demo.json"), "--url",
                 "http://127.0.0.1:9"]) == 2
    assert "--url and --project go together" in capsys.readouterr().err


def test_cli_push_without_token_fails_cleanly(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(ls.API_KEY_ENV, raising=False)
    code = _cli(["label-studio", "aggregate", str(DATA / "demo.json"), "--control", "sentiment",
                 "--out", str(tmp_path / "p.json"), "--url", "http://127.0.0.1:9",
                 "--project", "1", "--method", "majority_vote"])
    assert code == 1 and "LABEL_STUDIO_API_KEY" in capsys.readouterr().err


def test_reader_and_cli_do_not_need_the_sdk(tmp_path):
    """label-studio-sdk is an optional extra: reading without a config works without it."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['label_studio_sdk'] = None\n"
        "from crowd_keras.integrations import label_studio as ls\n"
        f"e = ls.read_export({str(DATA / 'demo.json')!r}, control='sentiment')\n"
        "assert e.summary.n_used == 12\n"
        "try:\n"
        f"    ls.read_export({str(DATA / 'demo.json')!r}, label_config={str(CONFIG)!r})\n"
        "except ImportError as exc:\n"
        "    assert 'crowd-keras[label-studio]' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_cli_aggregate_with_a_target_prior(tmp_path, capsys):
    out = tmp_path / "pred.json"
    argv = ["label-studio", "aggregate", str(DATA / "demo.json"), "--control", "sentiment",
            "--label-config", str(CONFIG), "--target-prior", "uniform", "--out", str(out)]
    assert _cli(argv) == 0
    assert len(json.loads(out.read_text())) == 6
    assert _cli(argv[:-4] + ["--target-prior", "learned", "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())) == 6
    assert _cli(argv[:-2] + ["--method", "dawid_skene", "--out", str(out)]) == 2
    assert "--target-prior applies to --method auto" in capsys.readouterr().err


@pytest.mark.parametrize("completed_by, named", [(7, r"\(user 7\)"),
                                                 ({"id": 8, "email": "a@b.org"}, r"\(user 8\)"),
                                                 ("u@x.org", r"\(user 'u@x.org'\)")])
def test_a_bad_value_names_the_user_whose_annotation_holds_it(completed_by, named):
    """The errors named the task and the annotation id, not whose annotation it was."""
    export = [{"id": 1, "data": {"text": "a"}, "annotations": [
        {"id": 5, "completed_by": completed_by, "result": [
            {"from_name": "quality", "to_name": "text", "type": "rating",
             "value": {"rating": "five"}}]}]}]
    with pytest.raises(CrowdDataError, match=rf"task 1, annotation 5 {named}: control 'quality' "
                                             r"value.rating must be an integer"):
        ls.read_export(export, control="quality")
