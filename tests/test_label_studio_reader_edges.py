"""Label Studio export reader: labeling configs and exports found by the reader defect hunt
(no server needed)."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

pytest.importorskip("label_studio_sdk")

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.integrations import label_studio as ls  # noqa: E402


def _task(tid: int, *annotations: tuple) -> dict:
    """A full JSON task; each annotation is (annotation id, user, choices)."""
    return {"id": tid, "data": {"text": f"t{tid}", "opts": [{"value": "x"}, {"value": "y"}]},
            "annotations": [{"id": aid, "completed_by": user, "result": [
                {"from_name": "s", "to_name": "text", "type": "choices",
                 "value": {"choices": list(choices)}}]}
                for aid, user, choices in annotations]}


DYNAMIC = ('<View><Text name="text" value="$text"/>'
           '<Choices name="s" toName="text" value="$opts"/></View>')


def test_dynamic_choices_config_allows_the_values_of_the_tasks():
    # <Choices value="$opts"> lists its choices in each task's data, not in the config: the
    # values read are the classes, as without a config (not "not in the labeling config")
    export = [_task(1, (1, 2, ["x"]), (2, 3, ["y"])), _task(2, (3, 2, ["y"]))]
    read = ls.read_export(export, label_config=DYNAMIC)
    assert list(read.classes) == ["x", "y"]
    assert read.annotations.n_annotations == 3


def test_static_choices_config_still_rejects_unknown_values():
    static = DYNAMIC.replace(' value="$opts"/>', '><Choice value="x"/></Choices>')
    with pytest.raises(CrowdDataError, match="'y' of control 's' is not in the labeling config"):
        ls.read_export([_task(1, (1, 2, ["x"]), (2, 3, ["y"]))], label_config=static)


def test_json_min_with_a_data_field_named_data_is_not_taken_for_full_json():
    # <Text name="text" value="$data"/>: JSON_MIN rows hold a "data" column beside the
    # annotator and annotation_id
    rows = [{"id": 1, "data": "first", "s": "a", "annotator": 2, "annotation_id": 1},
            {"id": 1, "data": "first", "s": "b", "annotator": 3, "annotation_id": 2},
            {"id": 2, "data": "second"}]
    read = ls.read_export(rows, control="s")
    assert read.format == "JSON_MIN"
    assert list(read.task_ids) == [1, 2] and read.annotations.n_annotations == 2
    assert read.summary.n_tasks_unannotated == 1


def test_full_json_task_without_annotations_key_still_says_so():
    with pytest.raises(CrowdDataError, match="task 1 has no 'annotations' list"):
        ls.read_export([{"id": 1, "data": {"text": "t"}}])


def test_combination_name_clashing_with_a_choice_names_the_separator():
    # the set {a, b} joined by "|" spells the choice "a|b": the error says so and how to
    # get out of it, not only that class ids repeat
    export = [_task(1, (1, 2, ["a|b"]), (2, 3, ["a", "b"]), (3, 4, ["a"]))]
    with pytest.raises(CrowdDataError, match=r"\['a\|b'\] and \['a', 'b'\] both give the "
                                             r"class name 'a\|b'.*separator="):
        ls.read_export(export, multiple="combination")
    read = ls.read_export(export, multiple="combination", separator=" + ")
    assert list(read.classes) == ["a", "a|b", "a + b"]


def test_user_given_by_email_alone_is_the_user_with_that_email():
    # completed_by {"email"} on one annotation and {"id", "email"} on another are one user:
    # one annotator, whose later annotation of task 1 supersedes the earlier one
    export = [_task(1, (1, 2, ["x"]), (2, 3, ["y"])), _task(2, (3, 3, ["x"]))]
    export[0]["annotations"][1]["completed_by"] = {"email": "u@x.org"}
    export[1]["annotations"][0]["completed_by"] = {"id": 7, "email": "u@x.org"}
    export[0]["annotations"].append(
        {"id": 4, "completed_by": {"id": 7, "email": "u@x.org"}, "result": [
            {"from_name": "s", "to_name": "text", "type": "choices",
             "value": {"choices": ["x"]}}]})
    read = ls.read_export(export)
    assert list(read.annotator_ids) == [2, 7]
    assert list(read.annotator_emails) == [None, "u@x.org"]
    assert read.summary.n_superseded == 1 and read.annotations.n_annotations == 3


def test_email_alone_given_to_several_ids_is_an_error():
    export = [_task(1, (1, 2, ["x"]), (2, 3, ["y"])), _task(2, (3, 3, ["x"]), (4, 4, ["y"]))]
    export[0]["annotations"][1]["completed_by"] = {"email": "u@x.org"}
    export[1]["annotations"][0]["completed_by"] = {"id": 7, "email": "u@x.org"}
    export[1]["annotations"][1]["completed_by"] = {"id": 8, "email": "u@x.org"}
    with pytest.raises(CrowdDataError, match=r"task 1, annotation 2 \(user [^)]+\): annotator 'u@x.org'.*"
                                             r"\[7, 8\]"):
        ls.read_export(export)


@pytest.mark.parametrize("fmt, sep", [("CSV", ","), ("TSV", "\t")])
def test_row_export_choice_starting_with_a_bracket_is_a_label(fmt, sep):
    # Label Studio writes a single choice as its text; only objects (multiple choices) and
    # lists of objects (ratings) are JSON
    rows = [["annotation_id", "annotator", "id", "s", "text"],
            ["1", "2", "1", "[Other]", "x"], ["2", "3", "1", "[1] yes", "x"],
            ["3", "4", "1", '{"choices": ["b"]}', "x"], ["4", "5", "1", "[]", "x"]]
    out = io.StringIO()
    csv.writer(out, delimiter=sep, lineterminator="\n").writerows(rows)
    text = out.getvalue()
    read = ls.read_export(text.encode(), control="s", format=fmt)
    assert list(read.classes) == ["[1] yes", "[Other]", "b"]
    assert read.summary.n_used == 3 and read.summary.n_without_label == 1


def test_row_export_truncated_json_cell_is_still_an_error():
    text = 'annotation_id,annotator,id,s,text\n1,2,1,"[{""rating"": 2",x\n'
    with pytest.raises(CrowdDataError, match="line 2 .*column 's' holds invalid JSON text"):
        ls.read_export(text.encode(), control="s", format="CSV")


def test_summary_line_of_skipped_multiple_choices_reads_as_a_list():
    read = ls.read_export([_task(1, (1, 2, ["x", "y"]), (2, 3, ["y"]))], multiple="skip")
    assert str(read.summary).endswith("0 ground truth, 1 multi-choice skipped")


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(include_gold="no"), TypeError, "include_gold must be True or False, got 'no'"),
    (dict(include_gold=None), TypeError, "include_gold must be True or False"),
    (dict(separator=""), ValueError, "separator must be a non-empty string"),
    (dict(separator=3), TypeError, "separator must be a string, got int 3"),
    (dict(text_mismatch="bogus"), ValueError, "text_mismatch must be one of"),
])
def test_bad_option_values_are_refused_before_reading(kwargs, error, match):
    with pytest.raises(error, match=match):
        ls.read_export([_task(1, (1, 2, ["x"]))], **kwargs)


def test_cli_separator_resolves_a_class_name_clash(tmp_path, capsys):
    from crowd_keras.cli import main

    export = tmp_path / "clash.json"
    export.write_text(json.dumps([_task(1, (1, 2, ["a|b"]), (2, 3, ["a", "b"]), (3, 4, ["a"])),
                                  _task(2, (4, 2, ["a"]), (5, 3, ["a"]))]))
    out = tmp_path / "pred.json"
    base = ["label-studio", "aggregate", str(export), "--multiple", "combination",
            "--method", "majority_vote", "--out", str(out), "--quiet"]
    assert main(base) == 2
    assert "pass another --separator" in capsys.readouterr().err
    assert main(base + ["--separator", " + "]) == 0
    assert len(json.loads(out.read_text())) == 2


@pytest.mark.parametrize("flag, expected", [
    ("ground_truth", "2 ground truth (gold, not an annotator's label: --include-gold counts them)"),
    ("other_control", "2 without a label for control 't'"),
])
def test_cli_says_why_no_annotation_is_left(tmp_path, capsys, flag, expected):
    from crowd_keras.cli import main

    tasks = [_task(1, (1, 2, ["x"])), _task(2, (2, 3, ["y"]))]
    config = tmp_path / "config.xml"
    config.write_text('<View><Text name="text" value="$text"/>'
                      '<Choices name="s" toName="text"><Choice value="x"/><Choice value="y"/>'
                      '</Choices><Choices name="t" toName="text"><Choice value="a"/>'
                      '</Choices></View>')
    args = []
    if flag == "ground_truth":
        for task in tasks:
            task["annotations"][0]["ground_truth"] = True
    else:
        args = ["--control", "t", "--label-config", str(config)]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks))
    assert main(["label-studio", "aggregate", str(export), "--out", str(tmp_path / "p.json"),
                 "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert f"no annotation left to aggregate: 2 annotations read, {expected}" in err
    assert not (tmp_path / "p.json").exists()


def test_cli_notes_ground_truth_of_one_class_only(tmp_path, capsys):
    from crowd_keras.cli import main
    from crowd_keras.datasets import simulate_failure_kind

    # a crowd where the default takes a model with a class prior (every worker labels every
    # item, most of them class-biased), so the gold's mix decides labels and the note is due
    # (with voting kept it decides nothing, and no note is printed)
    ann = simulate_failure_kind("dense_biased", seed=0, scale=0.5).annotations
    names = np.array(["x", "y"])[ann.labels]
    tasks = [_task(t + 1, *[(100 * (t + 1) + int(j), int(w) + 1, [str(names[j])])
                            for j, w in zip(np.flatnonzero(ann.items == t),
                                            ann.annotators[ann.items == t])])
             for t in range(ann.n_items)]
    tasks[0]["annotations"].append({"id": 99, "completed_by": 999, "ground_truth": True,
                                    "result": [{"from_name": "s", "to_name": "text",
                                                "type": "choices",
                                                "value": {"choices": ["x"]}}]})
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks))
    assert main(["label-studio", "aggregate", str(export), "--out", str(tmp_path / "p.json"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 ground-truth task held at their label in the fit" in out
    assert "note: the labels are decided for the gold's class mix (gold items per class, " \
           "target share: x 1 (0.67), y 0 (0.33))" in out, out


def test_json_min_data_field_named_like_the_control_says_why_it_cannot_be_read():
    # JSON_MIN writes a data field named like a control in the control's column: a task
    # without annotation then seems to hold a label of no annotator; the error says so
    rows = [{"id": 1, "text": "a", "s": "x", "annotator": 2, "annotation_id": 5},
            {"id": 2, "text": "b", "s": "prefilled", "annotator": None,
             "annotation_id": None}]
    with pytest.raises(CrowdDataError, match=r"row 1 \(task 2\): a value 'prefilled' for "
                                             r"control 's' but no annotator.*data field named "
                                             r"'s'.*full JSON export.*_data_s"):
        ls.read_export(rows, control="s")


def test_an_unknown_export_format_is_refused_by_every_reader_of_exports(tmp_path):
    # check_tasks and export_controls read an unknown format (a typo, "XML") as CSV
    path = tmp_path / "export.csv"
    path.write_text("id,annotator,annotation_id,s\n1,2,3,x\n")
    match = r"format must be one of \('JSON', 'JSON_MIN', 'CSV', 'TSV'\), got 'XML'"
    with pytest.raises(ValueError, match=match):
        ls.export_controls(path, format="xml")
    with pytest.raises(ValueError, match=match):   # before the server is asked anything
        ls.check_tasks(object(), 1, path, format="xml")


def test_relations_between_regions_do_not_stop_the_full_json_export():
    # a <Relations> result has no from_name/value (it links two regions): every full JSON
    # export of a project with relations was refused ("result item 2 has no 'from_name'")
    text = "Alice works at Acme"
    result = [{"id": "a1", "from_name": "ner", "to_name": "text", "type": "labels",
               "value": {"start": 0, "end": 5, "text": "Alice", "labels": ["PER"]}},
              {"id": "a2", "from_name": "ner", "to_name": "text", "type": "labels",
               "value": {"start": 15, "end": 19, "text": "Acme", "labels": ["ORG"]}},
              {"from_id": "a1", "to_id": "a2", "type": "relation", "direction": "right",
               "labels": ["works_at"]},
              {"from_name": "s", "to_name": "text", "type": "choices",
               "value": {"choices": ["x"]}}]
    export = [{"id": 1, "data": {"text": text}, "annotations": [
        {"id": 10 + u, "completed_by": u, "result": result} for u in (1, 2)]}]
    assert ls.export_controls(export) == [("ner", "labels"), ("s", "choices")]
    spans = ls.read_export(export, control="ner")
    assert list(spans.spans["label"]) == ["PER", "ORG"] * 2
    choices = ls.read_export(export, control="s")
    assert choices.annotations.n_annotations == 2 and list(choices.classes) == ["x"]
    # a result without from_name that is no relation is still refused
    export[0]["annotations"][0]["result"][2] = {"type": "choices", "value": {}}
    with pytest.raises(CrowdDataError, match="annotation 11 \\(user [^)]+\\), result item 2 has no 'from_name'"):
        ls.read_export(export, control="s")


@pytest.mark.parametrize("fmt", ["JSON_MIN", "CSV"])
def test_cli_to_name_contradicting_the_labeling_config_is_refused(tmp_path, capsys, fmt):
    # the predictions labelled an object the config does not declare, which Label Studio
    # drops; a --to-name that the config agrees with (or no config) still goes through
    from crowd_keras.cli import main

    rows = [{"id": t, "text": f"t{t}", "s": "x" if (t + u) % 3 else "y", "annotator": u,
             "annotation_id": 10 * t + u} for t in (1, 2, 3) for u in (1, 2)]
    export = tmp_path / ("export.json" if fmt == "JSON_MIN" else "export.csv")
    if fmt == "JSON_MIN":
        export.write_text(json.dumps(rows))
    else:
        with open(export, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    config = tmp_path / "config.xml"
    config.write_text('<View><Text name="text" value="$text"/><Choices name="s" toName="text">'
                      '<Choice value="x"/><Choice value="y"/></Choices></View>')
    out = tmp_path / "p.json"
    base = ["label-studio", "aggregate", str(export), "--control", "s", "--out", str(out),
            "--method", "majority_vote", "--quiet"]
    assert main(base + ["--label-config", str(config), "--to-name", "txt"]) == 2
    assert "--to-name 'txt' differs from the object 'text' that control 's' labels in " \
           "--label-config (drop --to-name)" in capsys.readouterr().err
    assert not out.exists()
    assert main(base + ["--label-config", str(config), "--to-name", "text"]) == 0
    assert main(base + ["--to-name", "txt"]) == 0    # no config: the flag names the object
    assert {r["to_name"] for p in json.loads(out.read_text()) for r in p["result"]} == {"txt"}


def test_full_json_export_without_any_annotation_says_so():
    # it said "no Choices, Rating or span (Labels) control found in the annotation results"
    # (or, with control=, that the control appears in no result)
    export = [{"id": t, "data": {"text": "a"}, "annotations": []} for t in (1, 2)]
    for control in (None, "s"):
        with pytest.raises(CrowdDataError, match="export: its 2 task\\(s\\) hold no annotation: "
                                                 "nothing to read"):
            ls.read_export(export, control=control)


@pytest.mark.parametrize("who", ["²", "①", "١", "٣٤"])
def test_ids_of_non_ascii_digits_are_names_not_user_ids(who):
    # str.isdigit() accepts them: int() refused "²" with a bare ValueError naming no task,
    # and read "١" as user 1, merging two people
    export = [_task(1, (1, who, ["x"]), (2, 1, ["y"])), _task(2, (3, who, ["x"]), (4, 1, ["x"]))]
    read = ls.read_export(export)
    assert sorted(map(str, read.annotator_ids)) == sorted(["1", who])
    assert read.annotations.n_annotations == 4 and read.summary.n_superseded == 0


@pytest.mark.parametrize("tid", ["²", "١"])
def test_task_ids_of_non_ascii_digits_are_an_error_naming_the_task(tid):
    export = [_task(1, (1, 2, ["x"]))]
    export[0]["id"] = tid
    with pytest.raises(CrowdDataError, match=r"task at position 0: task id must be an integer"):
        ls.read_export(export)


def test_span_offsets_of_non_ascii_digits_are_an_error():
    task = {"id": 1, "data": {"text": "John met Mary"}, "annotations": [
        {"id": 1, "completed_by": 2, "result": [
            {"from_name": "ent", "to_name": "text", "type": "labels",
             "value": {"start": "٠", "end": 4, "labels": ["PER"]}}]}]}
    with pytest.raises(CrowdDataError, match="integer character offset, got '٠'"):
        ls.read_export([task], control="ent")


def _per_region(tid: int, *answers: tuple) -> dict:
    """A task whose annotations each draw regions and answer a per-region <Choices> on them:
    (annotation id, user, [(start, end, choice), ...])."""
    def regions(spans):
        out = []
        for n, (start, end, choice) in enumerate(spans):
            place = {"start": start, "end": end, "text": "x"}
            out += [{"id": f"r{n}", "from_name": "ent", "to_name": "text", "type": "labels",
                     "value": {**place, "labels": ["PER"]}},
                    {"id": f"r{n}", "from_name": "conf", "to_name": "text", "type": "choices",
                     "value": {**place, "choices": [choice]}}]
        return out
    return {"id": tid, "data": {"text": "John and Mary"},
            "annotations": [{"id": aid, "completed_by": user, "result": regions(spans)}
                            for aid, user, spans in answers]}


PER_REGION = ('<View><Text name="text" value="$text"/><Labels name="ent" toName="text">'
              '<Label value="PER"/></Labels><Choices name="conf" toName="text" '
              'perRegion="true"><Choice value="sure"/><Choice value="unsure"/></Choices></View>')


@pytest.mark.parametrize("config", [None, PER_REGION])
def test_a_per_region_choice_is_never_read_as_the_tasks_class(config):
    # one region each: before, each region's answer became the task's class (two annotators
    # "disagreeing" about different names); two regions already gave this error
    one_each = [_per_region(1, (1, 2, [(0, 4, "sure")]), (2, 3, [(9, 13, "unsure")]))]
    with pytest.raises(CrowdDataError, match="control 'conf' is placed on a region"):
        ls.read_export(one_each, control="conf", label_config=config)
    two = [_per_region(1, (1, 2, [(0, 4, "sure"), (9, 13, "sure")]))]
    with pytest.raises(CrowdDataError, match="per-region controls are not supported"):
        ls.read_export(two, control="conf", label_config=config)
    # the span control of the same export still reads
    assert ls.read_export(one_each, control="ent").summary.n_used == 2


def test_a_per_region_choice_in_json_min_is_an_error_too():
    rows = [{"id": 1, "text": "John", "annotator": 2, "annotation_id": 1,
             "conf": [{"start": 0, "end": 4, "text": "John", "choices": ["sure"]}]}]
    with pytest.raises(CrowdDataError, match="control 'conf' is placed on a region"):
        ls.read_export(rows, control="conf")


def _flat(export: list, fmt: str) -> list:
    """The JSON_MIN rows (or CSV text) Label Studio's converter writes for ``_per_region``
    tasks: a Choices result holding one choice becomes that choice, region or not."""
    rows = []
    for task in export:
        for ann in task["annotations"]:
            row = {"id": task["id"], **task["data"], "annotator": ann["completed_by"],
                   "annotation_id": ann["id"]}
            ent = [{k: v for k, v in r["value"].items()} for r in ann["result"]
                   if r["from_name"] == "ent"]
            conf = [r["value"]["choices"][0] for r in ann["result"] if r["from_name"] == "conf"]
            row["ent"], row["conf"] = ent, conf[0] if len(conf) == 1 else conf
            rows.append(row)
    if fmt == "JSON_MIN":
        return rows
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=sorted(rows[0]), quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()
    writer.writerows({k: v if isinstance(v, (str, int)) else json.dumps(v)
                      for k, v in row.items()} for row in rows)
    return out.getvalue().encode()


@pytest.mark.parametrize("fmt", ["JSON_MIN", "CSV"])
def test_a_per_region_control_of_the_config_is_never_read_from_a_flat_export(fmt):
    # JSON_MIN and CSV write a per-region choice on one region like a task's choice: before,
    # the config's per-region Choices was picked over the Labels control and each region's
    # answer read as the task's class; only the config's perRegion="true" tells them apart
    flat = _flat([_per_region(1, (1, 2, [(0, 4, "sure")]), (2, 3, [(9, 13, "unsure")]))], fmt)
    read = ls.read_export(flat, label_config=PER_REGION)
    assert isinstance(read, ls.LabelStudioSpans) and read.control == "ent"
    assert read.summary.n_used == 2
    with pytest.raises(CrowdDataError, match=r"perRegion=\"true\".*one of \['ent'\]"):
        ls.read_export(flat, control="conf", label_config=PER_REGION)


@pytest.mark.parametrize("config", [None, PER_REGION])
def test_without_control_a_per_region_choice_is_not_picked_over_the_span_control(config):
    # before: the per-region Choices was the one Choices control used, so it was picked and
    # the export refused, though its span control reads
    export = [_per_region(1, (1, 2, [(0, 4, "sure")]), (2, 3, [(9, 13, "unsure")]))]
    read = ls.read_export(export, label_config=config)
    assert isinstance(read, ls.LabelStudioSpans) and read.control == "ent"
    assert [n for n, _ in ls.export_controls(export, label_config=config)] == ["ent"]
    only_conf = [{**task, "annotations": [
        {**ann, "result": [r for r in ann["result"] if r["from_name"] == "conf"]}
        for ann in task["annotations"]]} for task in export]
    with pytest.raises(CrowdDataError, match=r"besides the per-region controls \['conf'\]"):
        ls.read_export(only_conf)


def test_a_choices_control_nobody_answered_is_not_picked_over_a_span_control_used():
    # before: with the config, the declared Choices 'lang' (in no result) was read, giving an
    # export of 0 annotations, and the spans every annotator marked were left unread
    config = ('<View><Text name="text" value="$text"/><Labels name="ent" toName="text">'
              '<Label value="PER"/></Labels><Choices name="lang" toName="text">'
              '<Choice value="en"/><Choice value="fr"/></Choices></View>')
    export = [_per_region(1, (1, 2, [(0, 4, "sure")]), (2, 3, [(9, 13, "unsure")]))]
    for task in export:
        for ann in task["annotations"]:
            ann["result"] = [r for r in ann["result"] if r["from_name"] == "ent"]
    read = ls.read_export(export, label_config=config)
    assert isinstance(read, ls.LabelStudioSpans) and read.control == "ent"
    assert len(read.spans) == 2
    # asked for by name, the unanswered control is still read (nothing to learn from it)
    assert ls.read_export(export, control="lang", label_config=config).summary.n_used == 0


def _twice(first: str, second: str, **stamps) -> list:
    """One task that user 1 annotated twice (no annotation ids), user 2 once."""
    def one(choice, time=None):
        ann = {"completed_by": 1, "result": [{"from_name": "s", "to_name": "text",
                                              "type": "choices", "value": {"choices": [choice]}}]}
        return ann if time is None else {**ann, "updated_at": time}
    anns = [one(first, stamps.get("t1")), one(second, stamps.get("t2")),
            {**one("x"), "completed_by": 2}]
    return [{"id": 1, "data": {"text": "t"}, "annotations": anns}]


@pytest.mark.parametrize("stamps", [{}, {"t1": "2024-01-01T00:00:00Z",
                                         "t2": "2024-01-01T00:00:00Z"}])
def test_two_different_annotations_that_nothing_orders_are_an_error(stamps):
    # "the latest wins" fell back to the export's order: reversing it changed the label
    for a, b in (("x", "y"), ("y", "x")):
        with pytest.raises(CrowdDataError, match=r"position 0 \(user 1\): user 1 annotated task "
                                                 r"1 again with another result \(also .*position "
                                                 r"1 \(user 1\)\)"):
            ls.read_export(_twice(a, b, **stamps))


def test_repeated_annotations_that_agree_or_are_ordered_by_time_are_read():
    same = ls.read_export(_twice("y", "y"))
    assert same.summary.n_superseded == 1 and same.annotations.n_annotations == 2
    for first, second in (("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"),
                          ("2024-01-02T00:00:00Z", "2024-01-01T00:00:00Z")):
        read = ls.read_export(_twice("x", "y", t1=first, t2=second))
        latest = "y" if second > first else "x"
        labels = read.annotations.to_frame()
        assert read.summary.n_superseded == 1
        assert labels[labels.iloc[:, 1] == 1].iloc[0, 2] == latest


def test_two_different_span_annotations_that_nothing_orders_are_an_error():
    def spans(*regions):
        return {"completed_by": 1, "result": [
            {"from_name": "ent", "to_name": "text", "type": "labels",
             "value": {"start": s, "end": e, "labels": ["PER"]}} for s, e in regions]}
    task = {"id": 1, "data": {"text": "John and Mary"},
            "annotations": [spans((0, 4)), spans((9, 13))]}
    with pytest.raises(CrowdDataError, match="user 1 annotated task 1 again with another"):
        ls.read_export([task], control="ent")
    task["annotations"] = [spans((0, 4)), spans((0, 4))]   # the same spans twice: one kept
    assert ls.read_export([task], control="ent").summary.n_superseded == 1


def test_the_history_column_of_a_csv_export_is_not_task_data():
    # Label Studio's CSV writes an annotation's review history in a 'history' column: before,
    # it was read as a second data column, so the text was no longer the export's one data
    # column (to_name unknown: aggregate asked for --to-name) and was listed as a control
    rows = [{"id": 1, "text": "t1", "annotator": "2", "annotation_id": 1, "s": "a",
             "history": json.dumps([{"action": "submitted", "created_by": 2}])},
            {"id": 1, "text": "t1", "annotator": "3", "annotation_id": 2, "s": "b",
             "history": ""}]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=sorted(rows[0]), quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()
    writer.writerows(rows)
    read = ls.read_export(out.getvalue().encode(), control="s")
    assert read.format == "CSV" and read.to_name == "text"
    assert read.annotations.n_annotations == 2
    with pytest.raises(CrowdDataError, match=r"one of \['s', 'text'\]"):
        ls.read_export(out.getvalue().encode())


@pytest.mark.parametrize("fmt", ["JSON", "JSON_MIN", "CSV"])
def test_annotations_of_deleted_users_are_never_merged_into_one_annotator(fmt):
    # Label Studio sets completed_by to null when a user is deleted, and its converter
    # writes that null as the text "None" in JSON_MIN and CSV: before, those formats read
    # every deleted user's annotations as one annotator 'None' (on task 1 the later of two
    # people's labels silently replaced the other)
    task = _task(1, (1, 2, ["a"]), (2, None, ["b"]), (3, None, ["c"]))
    if fmt == "JSON":
        source = [task]
    else:
        rows = [{"id": 1, "text": "t1", "annotator": str(ann["completed_by"]),
                 "annotation_id": ann["id"], "s": ann["result"][0]["value"]["choices"][0]}
                for ann in task["annotations"]]
        source = rows
        if fmt == "CSV":
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=sorted(rows[0]),
                                    quoting=csv.QUOTE_NONNUMERIC)
            writer.writeheader()
            writer.writerows(rows)
            source = out.getvalue().encode()
    with pytest.raises(CrowdDataError, match=r"annotation 2\b.*deleted user"):
        ls.read_export(source, control="s")


def test_a_tsv_export_downloaded_as_a_csv_file_is_read_as_tsv(tmp_path):
    # Label Studio's converter writes its TSV export to result.csv, and the server names the
    # download after that file: before, the ".csv" suffix made the reader parse the tab
    # separated text as CSV ("malformed CSV near line 1: ',' expected after '\"'")
    converter = pytest.importorskip("label_studio_sdk.converter").Converter
    export = [_task(1, (1, 2, ["a"]), (2, 3, ["b"])), _task(2, (3, 2, ["b"]))]
    src = tmp_path / "export.json"
    src.write_text(json.dumps(export))
    config = ('<View><Text name="text" value="$text"/><Choices name="s" toName="text">'
              '<Choice value="a"/><Choice value="b"/></Choices></View>')
    converter(config=config, project_dir=None, download_resources=False).convert(
        str(src), str(tmp_path / "out"), "TSV", is_dir=False)
    written = list((tmp_path / "out").iterdir())
    assert [p.suffix for p in written] == [".csv"]
    downloaded = tmp_path / "project-1-at-2024-01-01-00-00-0123abcd.csv"
    written[0].rename(downloaded)
    read = ls.read_export(downloaded, control="s")
    full = ls.read_export(export, control="s")
    assert read.format == "TSV" and read.annotations == full.annotations
    # a CSV export named .tsv is read as the CSV it is
    comma = tmp_path / "comma.tsv"
    converter(config=config, project_dir=None, download_resources=False).convert(
        str(src), str(tmp_path / "out2"), "CSV", is_dir=False)
    (tmp_path / "out2" / "result.csv").rename(comma)
    assert ls.read_export(comma, control="s").format == "CSV"


def test_a_hypertext_region_without_global_offsets_says_what_is_missing():
    # a HyperText region's start/end are XPaths; its character offsets are in globalOffsets:
    # before, a region without them was "start must be an integer character offset, got
    # '/p[1]/text()[1]'", as if the value were corrupt
    value = {"start": "/p[1]/text()[1]", "end": "/p[1]/text()[1]", "startOffset": 0,
             "endOffset": 4, "text": "John", "htmllabels": ["PER"]}
    export = [{"id": 1, "data": {"html": "<p>John met Mary</p>"}, "annotations": [
        {"id": 7, "completed_by": 1, "result": [
            {"from_name": "ner", "to_name": "doc", "type": "hypertextlabels", "value": value}]}]}]
    with pytest.raises(CrowdDataError, match=r"annotation 7 \(user 1\), span 0: a HyperTextLabels "
                                             r"region without value.globalOffsets.*'/p\[1\]"):
        ls.read_export(export)
    value["globalOffsets"] = {"start": 3, "end": 7}
    assert ls.read_export(export).spans[["start", "end"]].values.tolist() == [[3, 7]]
