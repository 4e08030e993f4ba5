"""Label Studio integration: arguments of the wrong type are refused before any work or
request, naming what was given (found by the Label Studio user-path defect hunt; no server
needed: each call fails before it would reach one)."""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("label_studio_sdk")

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.integrations import label_studio as ls  # noqa: E402

_NO_SERVER = object()  # any request through it would fail with an AttributeError


@pytest.mark.parametrize("given, error, match", [
    # a dict or a path was read item by item: "dictionary update sequence element #0 ..."
    ({"task": 1, "result": []}, TypeError, "predictions must be a list of prediction dicts, "
                                           "got dict$"),
    ("predictions.json", TypeError, r"got str \(a file\? load it first: json.load\)"),
    ([{"task": 1, "result": []}, "x"], CrowdDataError, "prediction 1 is not a dict "
                                                       r"\(got str 'x'\)"),
])
def test_push_refuses_predictions_that_are_not_a_list_of_dicts(given, error, match):
    with pytest.raises(error, match=match):
        ls.push_predictions(_NO_SERVER, 1, given, model_version="v", preflight=False)


def test_quality_report_refuses_one_control_name_given_as_a_string(tmp_path):
    # each character was read as a control: "control 's' appears in no annotation result"
    export = [{"id": 1, "data": {"text": "a"}, "annotations": []}]
    with pytest.raises(TypeError, match=r"controls must be a list of control names, got the "
                                        r"string 'sentiment'; pass \['sentiment'\]"):
        ls.quality_report(export, tmp_path, controls="sentiment")
    assert not list(tmp_path.iterdir())


def test_check_tasks_refuses_task_ids_given_as_a_string():
    # "12" was checked as the tasks 1 and 2
    with pytest.raises(TypeError, match="task_ids must be a list of task ids, got the string "
                                        "'12'"):
        ls.check_tasks(_NO_SERVER, 1, task_ids="12")


@pytest.mark.parametrize("bad, shown", [
    # 1.5 and True were checked as task 1, "x" and None were a bare ValueError/TypeError
    (1.5, "float 1.5"), (True, "True"), ("x", "str 'x'"), (None, "None")])
def test_check_tasks_names_a_task_id_that_is_not_an_integer(bad, shown):
    with pytest.raises(CrowdDataError, match=rf"check_tasks: task_ids\[1\]: task id must be an "
                                             rf"integer, got {re.escape(shown)}$"):
        ls.check_tasks(_NO_SERVER, 1, task_ids=[3, bad])


def test_annotator_report_refuses_emails_that_are_not_a_mapping():
    # an AttributeError ('list' object has no attribute 'get') after the fit before
    export = ls.read_export([{"id": 1, "data": {"text": "a"}, "annotations": [
        {"id": 5, "completed_by": 2, "result": [{"from_name": "s", "to_name": "text",
                                                 "type": "choices",
                                                 "value": {"choices": ["x"]}}]}]}])
    with pytest.raises(TypeError, match="emails must be a mapping of user id to e-mail "
                                        r"\(as fetch_user_emails returns\), got list"):
        ls.annotator_report(export, emails=["a@example.com"])


def test_a_label_model_named_by_its_registry_name_is_fitted_on_a_choices_export():
    # a span export takes a sequence model's name; a choices export raised
    # AttributeError: 'str' object has no attribute 'fit'
    export = ls.read_export([{"id": t, "data": {"text": "a"}, "annotations": [
        {"id": 10 * t + u, "completed_by": u, "result": [
            {"from_name": "s", "to_name": "text", "type": "choices",
             "value": {"choices": ["x" if (t + u) % 3 else "y"]}}]} for u in (1, 2, 3)]}
        for t in range(1, 7)])
    preds = ls.predictions_from_model(export, "majority_vote")
    assert len(preds) == 6 and preds[0]["model_version"] == "crowd-keras-MajorityVote"
    assert ls.annotator_report(export, "dawid_skene")["annotator"].tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="unknown label model 'dawid_skeen'"):
        ls.predictions_from_model(export, "dawid_skeen")


@pytest.mark.parametrize("version", ["", "  "])
def test_predictions_from_model_refuses_a_blank_model_version(version):
    # "" became crowd-keras-MajorityVote in silence; "  " was written, refused only by the push
    export = ls.read_export([{"id": t, "data": {"text": "a"}, "annotations": [
        {"id": 10 * t + u, "completed_by": u, "result": [
            {"from_name": "s", "to_name": "text", "type": "choices",
             "value": {"choices": ["x" if (t + u) % 3 else "y"]}}]} for u in (1, 2, 3)]}
        for t in range(1, 4)])
    with pytest.raises(CrowdDataError, match=rf"model_version must be a non-empty string, got "
                                             rf"'{version}'"):
        ls.predictions_from_model(export, "majority_vote", version)
    with pytest.raises(CrowdDataError, match="model_version must be a non-empty string"):
        ls.to_predictions(export, np.full((3, 2), 0.5), version)


@pytest.mark.parametrize("call", [
    lambda: ls.push_predictions(_NO_SERVER, 1, [], model_version="v",
                                allow_data_mismatch="false"),
    lambda: ls.check_tasks(_NO_SERVER, 1, task_ids=[1], allow_data_mismatch="false"),
])
def test_allow_data_mismatch_must_be_a_bool(call):
    # "false" is truthy: it pushed onto tasks whose data differ from the export's
    with pytest.raises(TypeError, match="allow_data_mismatch must be True or False, got "
                                        "'false'"):
        call()


def test_preflight_must_be_a_bool():
    with pytest.raises(TypeError, match="preflight must be True or False, got 'no'"):
        ls.push_predictions(_NO_SERVER, 1, [], model_version="v", preflight="no")


@pytest.mark.parametrize("version, carried, error, match", [
    # Label Studio stores 7 as "7", which never equals 7: every push created them again
    (7, None, TypeError, r"model_version must be a string, got int 7 .*pass '7'"),
    (None, 7, TypeError, r"model_version must be a string, got int 7"),
    # "" is the version of predictions made without one: a push replaced or deleted them
    ("", None, ValueError, r"model_version '' is empty"),
    (None, " ", ValueError, r"model_version ' ' is empty"),
])
def test_model_version_must_be_a_name_label_studio_keeps(version, carried, error, match):
    pred = {"task": 1, "result": []} if carried is None else \
        {"task": 1, "result": [], "model_version": carried}
    with pytest.raises(error, match=match):
        ls.push_predictions(_NO_SERVER, 1, [pred], model_version=version, preflight=False)


def test_predictions_of_model_versions_of_several_types_are_named():
    # sorting 7 with "a" for the message raised "'<' not supported between 'str' and 'int'"
    preds = [{"task": 1, "result": [], "model_version": 7},
             {"task": 2, "result": [], "model_version": "a"}]
    with pytest.raises(CrowdDataError, match=r"model versions \['a', 7\] \(first 7, then "
                                             r"prediction 1, task 2, model_version 'a'\); "
                                             r"pass one"):
        ls.push_predictions(_NO_SERVER, 1, preds, preflight=False)


def test_include_unannotated_must_be_a_bool():
    # "no" is truthy: every task without an annotation got a prediction of the class prior
    export = ls.read_export([{"id": 1, "data": {"text": "a"}, "annotations": [
        {"id": 5, "completed_by": 2, "result": [{"from_name": "s", "to_name": "text",
                                                 "type": "choices",
                                                 "value": {"choices": ["x"]}}]}]},
        {"id": 2, "data": {"text": "b"}, "annotations": []}])
    with pytest.raises(TypeError, match="include_unannotated must be True or False, got 'no'"):
        ls.to_predictions(export, [[1.0], [1.0]], "v", include_unannotated="no")
    spans = ls.read_export([{"id": 1, "data": {"text": "John"}, "annotations": [
        {"id": 5, "completed_by": 2, "result": [{"from_name": "n", "to_name": "text",
                                                 "type": "labels", "value": {
                                                     "start": 0, "end": 4, "labels": ["P"]}}]}]}])
    with pytest.raises(TypeError, match="include_unannotated must be True or False, got 'no'"):
        ls.span_predictions(spans, spans.spans.rename(columns={"task": "doc"}), "v",
                            include_unannotated="no")


def test_gold_accuracy_checks_the_shape_of_the_probabilities():
    # (tasks + 5) rows raised an IndexError; rows of another export's tasks would be scored
    export = ls.read_export([{"id": t, "data": {"text": "a"}, "annotations": [
        {"id": 10 * t + u, "completed_by": u, "ground_truth": u == 1, "result": [
            {"from_name": "s", "to_name": "text", "type": "choices",
             "value": {"choices": ["x" if t % 2 else "y"]}}]} for u in (1, 2)]}
        for t in range(1, 5)])
    assert ls.gold_accuracy(export, [[1.0, 0.0], [0.0, 1.0]] * 2) == (4, 1.0)
    with pytest.raises(CrowdDataError, match=r"probabilities must have shape \(4, 2\) "
                                             r"\(tasks × classes\), got \(9, 2\)"):
        ls.gold_accuracy(export, [[0.5, 0.5]] * 9)


def test_annotator_report_refuses_one_path_for_both_files(tmp_path):
    # the JSON report replaced the CSV one, silently
    export = ls.read_export([{"id": 1, "data": {"text": "a"}, "annotations": [
        {"id": 5, "completed_by": 2, "result": [{"from_name": "s", "to_name": "text",
                                                 "type": "choices",
                                                 "value": {"choices": ["x"]}}]}]}])
    path = tmp_path / "report.csv"
    with pytest.raises(ValueError, match="csv_path and json_path are one file"):
        ls.annotator_report(export, "majority_vote", csv_path=path,
                            json_path=tmp_path / "." / "report.csv")
    assert not path.exists()


def test_check_tasks_refuses_predictions_for_tasks_outside_the_export():
    # with export=, a prediction for another task was checked for existence only: a push
    # could write into a task the export (the user's target) does not hold
    export = "tests/data/label_studio/demo.json"
    import json
    with open(export, encoding="utf-8") as fh:
        ids = [t["id"] for t in json.load(fh)]
    stray = max(ids) + 1000
    with pytest.raises(CrowdDataError, match=rf"1 of the tasks to write are not in .*demo.json' "
                                             rf"\(first: task {stray}\).*Nothing was written"):
        ls.check_tasks(_NO_SERVER, 1, export, task_ids=ids[:2] + [stray])


@pytest.mark.parametrize("flags, named", [
    (["--scheme", "BIO"], "--scheme BIO applies to span controls"),
    (["--text-key", "body"], "--text-key body applies to span controls"),
    (["--sequence-model", "majority_vote"], "--sequence-model majority_vote applies to span"),
    (["--multiple", "skip", "--separator", "+"], "--separator + joins the choices"),
])
def test_report_refuses_settings_no_reported_control_reads(tmp_path, capsys, flags, named):
    # demo.json has Choices and Rating controls only: the span settings (and a separator
    # without --multiple combination) were ignored in silence; aggregate refused them already
    from pathlib import Path

    from crowd_keras.cli import main
    demo = Path(__file__).parent / "data" / "label_studio" / "demo.json"
    out = tmp_path / "rep"
    assert main(["label-studio", "report", str(demo), "--out", str(out), "--quiet",
                 "--bootstrap", "0", "--no-plots"] + flags) == 2
    assert named in capsys.readouterr().err
    assert not out.exists()


def test_quality_report_names_the_python_setting_no_control_reads(tmp_path):
    export = [{"id": 1, "data": {"text": "a"}, "annotations": [
        {"id": i, "completed_by": i, "result": [{"from_name": "s", "to_name": "text",
                                                 "type": "choices", "value": {"choices": [c]}}]}
        for i, c in ((1, "x"), (2, "y"))]}]
    with pytest.raises(ValueError, match=r"scheme='BIO' applies to span controls; the controls "
                                         r"reported, 's' \(choices\), are none"):
        ls.quality_report(export, tmp_path / "r", scheme="BIO", n_bootstrap=0, plots=False)
    assert not (tmp_path / "r").exists()
    ls.quality_report(export, tmp_path / "r", n_bootstrap=0, plots=False)   # the defaults read


@pytest.mark.parametrize("call", [
    lambda **kw: ls.check_project(_NO_SERVER, 1, **kw),
    lambda **kw: ls.check_tasks(_NO_SERVER, 1, task_ids=[1], **kw),
    lambda **kw: ls.fetch_user_emails(_NO_SERVER, **kw),
    lambda **kw: ls.push_predictions(_NO_SERVER, 1, [{"task": 1, "result": []}],
                                     model_version="v", **kw),
])
@pytest.mark.parametrize("given, error, match", [
    # retries=-1 ran no request and check_project passed; a string backoff failed in
    # time.sleep in the middle of a push, naming nothing
    ({"retries": -1}, ValueError, "retries must be an integer >= 0, got -1"),
    ({"retries": "2"}, TypeError, "retries must be an integer >= 0, got str '2'"),
    ({"backoff": -1}, ValueError, r"backoff must be a finite number >= 0, got -1"),
    ({"backoff": "0.1"}, TypeError, "backoff must be a number, got str '0.1'"),
    ({"backoff": None}, TypeError, "backoff must be a number, got NoneType None"),
])
def test_retry_settings_are_checked_before_any_request(call, given, error, match):
    with pytest.raises(error, match=match):
        call(**given)


@pytest.mark.parametrize("project", [True, 1.5, None, "abc"])
def test_check_project_names_a_project_id_that_is_not_an_id(project):
    # the request went to /api/projects/True and the URL was blamed
    with pytest.raises(CrowdDataError, match="check_project: project_id must be an integer"):
        ls.check_project(_NO_SERVER, project)


def test_push_refuses_no_predictions_and_a_progress_word():
    with pytest.raises(TypeError, match="predictions must be a list of prediction dicts, got "
                                        "NoneType"):
        ls.push_predictions(_NO_SERVER, 1, None, model_version="v", preflight=False)
    with pytest.raises(TypeError, match="progress must be True or False, got 'no'"):
        ls.push_predictions(_NO_SERVER, 1, [{"task": 1, "result": []}], model_version="v",
                            progress="no")


def test_connect_names_a_timeout_that_is_not_a_number(monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "token123")
    with pytest.raises(TypeError, match="timeout must be a number, got str 'x'"):
        ls.connect("http://127.0.0.1:9", timeout="x")


@pytest.mark.parametrize("given, error, match", [
    ({"prune_stale": "yes"}, TypeError, "prune_stale must be True or False, got 'yes'"),
    # each character was read as a task id
    ({"tasks": "12"}, TypeError, "tasks must be a list of task ids, got str '12'"),
    ({"tasks": [1, 2], "export": [{"id": 1, "data": {}}]}, ValueError,
     "give export= or tasks=.*not both"),
    ({"tasks": [2, 3]}, CrowdDataError, r"prediction 0 is for task 1, which is not among "
                                        r"tasks= .*Nothing was written"),
])
def test_push_checks_prune_stale_and_the_tasks_it_is_for_before_any_request(given, error,
                                                                             match):
    with pytest.raises(error, match=match):
        ls.push_predictions(_NO_SERVER, 1, [{"task": 1, "result": []}], model_version="v",
                            **given)


def _span_export(path, labels=("PER", "PER")):
    """Two annotators mark "John" in one task; the second's label is ``labels[1]``."""
    import json
    result = [[{"from_name": "label", "to_name": "text", "type": "labels",
                "value": {"start": 0, "end": 4, "text": "John", "labels": [lab]}}]
              for lab in labels]
    tasks = [{"id": 1, "data": {"text": "John met Mary"},
              "annotations": [{"id": a + 1, "completed_by": a + 1, "result": result[a]}
                              for a in range(2)]}]
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path


@pytest.mark.parametrize("flags, named", [
    (["--scheme", "IO"], "--scheme IO applies to span controls"),
    (["--sequence-model", "text_prior_dawid_skene"],
     "--sequence-model text_prior_dawid_skene applies to span controls"),
    (["--separator", "|"], "--separator '|' joins the choices"),
])
def test_aggregate_refuses_span_settings_on_choices_even_at_their_default(tmp_path, capsys,
                                                                          flags, named):
    """They were compared with their defaults: given with the default value, they were
    ignored in silence, where docs/input-validation.md says they are refused."""
    from pathlib import Path

    from crowd_keras.cli import main
    demo = Path(__file__).parent / "data" / "label_studio" / "demo.json"
    out = tmp_path / "p.json"
    assert main(["label-studio", "aggregate", str(demo), "--control", "sentiment", "--out",
                 str(out), "--quiet"] + flags) == 2
    assert named in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("flags, named", [
    (["--method", "auto"], "--method auto applies to Choices/Rating controls"),
    (["--multiple", "error"], "--multiple error applies to Choices controls"),
])
def test_aggregate_refuses_choice_settings_on_spans_even_at_their_default(tmp_path, capsys,
                                                                          flags, named):
    from crowd_keras.cli import main
    out = tmp_path / "p.json"
    assert main(["label-studio", "aggregate", str(_span_export(tmp_path / "s.json")), "--out",
                 str(out), "--quiet"] + flags) == 2
    assert named in capsys.readouterr().err
    assert not out.exists()


def test_values_that_differ_only_in_spaces_are_refused_by_name(tmp_path):
    """" neu " beside "neu" (or " PER " beside "PER") became a class of its own."""
    import json
    from pathlib import Path
    with pytest.raises(CrowdDataError, match=r"task 1, annotation 2 \(user 2\), span 0: span "
                                             r"label of control 'label' ' PER ' differs from "
                                             r"'PER' \(.*task 1, annotation 1 \(user 1\).*\) only "
                                             r"in the spaces around it"):
        ls.read_export(_span_export(tmp_path / "s.json", ("PER", " PER ")))
    demo = Path(__file__).parent / "data" / "label_studio" / "demo.json"
    tasks = json.loads(demo.read_text(encoding="utf-8"))
    for task in tasks:
        for ann in task["annotations"]:
            for item in ann["result"]:
                if item["from_name"] == "sentiment":
                    spaced = [f" {v} " for v in item["value"]["choices"]]
                    item["value"]["choices"] = spaced
                    break
            else:
                continue
            break
        else:
            continue
        break
    path = tmp_path / "spaced.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(CrowdDataError, match=r"value of control 'sentiment' ' \w+ ' differs "
                                             r"from '\w+' .* only in the spaces around it"):
        ls.read_export(path, control="sentiment")


def test_span_text_mismatches_are_located_and_can_be_refused(tmp_path, capsys):
    """They were only counted in the summary: no place named, and no way to refuse them from
    the command line."""
    import json

    from crowd_keras.cli import main
    path = _span_export(tmp_path / "s.json")
    tasks = json.loads(path.read_text(encoding="utf-8"))
    tasks[0]["annotations"][1]["result"][0]["value"]["text"] = "Mary"   # at 0:4 ("John")
    path.write_text(json.dumps(tasks), encoding="utf-8")
    export = ls.read_export(path)
    assert any("1 span(s) whose text differs from the task's characters at its offsets, the "
               "first at" in n and "annotation 2 (user 2), span 0: text 'Mary', characters "
               "0:4 read 'John'" in n for n in export.summary.notes), export.summary.notes
    out = tmp_path / "p.json"
    assert main(["label-studio", "aggregate", str(path), "--out", str(out), "--quiet",
                 "--sequence-model", "dawid_skene", "--text-mismatch", "error"]) == 2
    assert "text 'Mary' differs from the task's characters 0:4" in capsys.readouterr().err
    assert not out.exists()
    assert main(["label-studio", "aggregate", str(path), "--out", str(out), "--quiet",
                 "--sequence-model", "dawid_skene"]) == 0 and out.exists()
