"""Label Studio's ground truth enters every fit on an export the same way: ``label-studio
aggregate``, ``label-studio report``, ``predictions_from_model``, ``annotator_report`` and
``quality_report`` hold the ground-truth tasks at their class when the label model takes
gold (``--no-gold`` / ``use_gold=False``: without), so on one export they give one consensus
and one annotator quality. ``report`` and the Python functions used to fit without it."""
import json

import numpy as np
import pandas as pd
import pytest

from crowd_keras.aggregation import get_label_model
from crowd_keras.cli import main
from crowd_keras.integrations import label_studio as ls

CLASSES = ("positive", "negative", "neutral")
#: the task whose ground truth contradicts the two annotators who agree on it
AGAINST = 3


def _annotation(aid, task, user, choice, gold=False):
    return {"id": aid, "completed_by": user, "task": task, "was_cancelled": False,
            "ground_truth": gold, "created_at": "2026-11-23T01:00:00Z",
            "updated_at": "2026-11-23T01:00:00Z",
            "result": [{"from_name": "sentiment", "to_name": "text", "type": "choices",
                        "value": {"choices": [choice]}}]}


@pytest.fixture
def export_path(tmp_path):
    """A full JSON export of 12 tasks labelled by users 11-13 (11 always right, 12 says
    negative on every third task, 13 positive on every fourth) and a ground-truth annotation
    (user 99) on tasks 3, 6 and 8; task 3's says neutral where 11 and 13 say positive."""
    tasks, aid = [], 0
    for t in range(1, 13):
        truth = CLASSES[t % 3]
        votes = {11: truth, 12: "negative" if t % 3 == 0 else truth,
                 13: "positive" if t % 4 == 0 else truth}
        anns = []
        for user, choice in votes.items():
            aid += 1
            anns.append(_annotation(aid, t, user, choice))
        if t in (AGAINST, 6, 8):
            aid += 1
            anns.append(_annotation(aid, t, 99, "neutral" if t == AGAINST else truth, True))
        tasks.append({"id": t, "data": {"text": f"task {t}"}, "annotations": anns})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    return path


def _direct(export, gold):
    """The default label model fitted directly: with the export's ground truth or without."""
    model = get_label_model("auto")
    return model.fit(export.annotations, gold=export.gold_codes()) if gold else \
        model.fit(export.annotations)


def _consensus(model, export):
    return dict(zip(export.task_ids.tolist(), model.predict_labels().tolist()))


def _accuracy(frame):
    """Each annotator's model accuracy, by user id (NaN for user 99: ground truth only)."""
    return pd.Series(frame["accuracy"].astype(float).to_numpy(),
                     index=frame["annotator"].astype(int).to_numpy()).sort_index()


@pytest.mark.parametrize("flags", [[], ["--no-gold"]], ids=["gold", "no-gold"])
def test_aggregate_and_report_fit_the_ground_truth_alike(export_path, tmp_path, capsys, flags):
    export = ls.read_export(export_path)
    assert export.gold.to_dict() == {AGAINST: "neutral", 6: "positive", 8: "neutral"}
    pred, csv = tmp_path / "pred.json", tmp_path / "annotators.csv"
    assert main(["label-studio", "aggregate", str(export_path), "--out", str(pred),
                 "--annotators", str(csv), "--quiet", *flags]) == 0
    assert main(["label-studio", "report", str(export_path), "--out", str(tmp_path / "rep"),
                 "--bootstrap", "0", "--no-plots", "--quiet", *flags]) == 0
    capsys.readouterr()
    aggregated = {p["task"]: p["result"][0]["value"]["choices"][0]
                  for p in json.loads(pred.read_text())}
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())["controls"]["sentiment"]
    reported = {r["task"]: r["consensus_label"] for r in doc["items_to_review"]}
    expected = _direct(export, gold=not flags)
    assert aggregated == reported == _consensus(expected, export)
    # the ground truth was held (or not): the task whose truth the votes contradict shows it
    assert aggregated[AGAINST] == ("positive" if flags else "neutral")
    from_report = _accuracy(pd.DataFrame(doc["annotators"]))
    from_aggregate = _accuracy(pd.read_csv(csv))
    pd.testing.assert_series_equal(from_report, from_aggregate, check_dtype=False)
    pd.testing.assert_series_equal(
        from_report, _accuracy(ls.annotator_report(export, expected)), check_dtype=False)


@pytest.mark.parametrize("use_gold", [True, False])
def test_python_functions_fit_the_ground_truth_as_aggregate(export_path, tmp_path, use_gold):
    export = ls.read_export(export_path)
    expected = _direct(export, use_gold)
    kw = {} if use_gold else {"use_gold": False}   # the default uses the ground truth
    for model in (None, "auto"):
        predicted = {p["task"]: p["result"][0]["value"]["choices"][0]
                     for p in ls.predictions_from_model(export, model, "v", **kw)}
        assert predicted == _consensus(expected, export)
        pd.testing.assert_series_equal(_accuracy(ls.annotator_report(export, model, **kw)),
                                       _accuracy(ls.annotator_report(export, expected)))
    doc = ls.quality_report(export_path, tmp_path / "rep", n_bootstrap=0, plots=False,
                            **kw)["report"]["controls"]["sentiment"]
    assert {r["task"]: r["consensus_label"] for r in doc["items_to_review"]} == \
        _consensus(expected, export)
    np.testing.assert_allclose(_accuracy(pd.DataFrame(doc["annotators"])),
                               _accuracy(ls.annotator_report(export, expected)))
    fitted = ls.fit_label_model(export, use_gold=use_gold)
    assert _consensus(fitted, export) == _consensus(expected, export)


def test_a_fitted_model_is_never_refitted(export_path):
    # fitted without the ground truth, it stays so whatever use_gold says
    export = ls.read_export(export_path)
    model = _direct(export, gold=False)
    posteriors = model.posteriors_.copy()
    for kw in ({}, {"use_gold": True}):
        predicted = {p["task"]: p["result"][0]["value"]["choices"][0]
                     for p in ls.predictions_from_model(export, model, "v", **kw)}
        assert predicted[AGAINST] == "positive"
        ls.annotator_report(export, model, **kw)
        np.testing.assert_array_equal(model.posteriors_, posteriors)


def test_use_gold_must_be_a_flag_and_unknown_keywords_are_errors(export_path, tmp_path):
    export = ls.read_export(export_path)
    with pytest.raises(TypeError, match="use_gold must be True or False, got 'no'"):
        ls.predictions_from_model(export, use_gold="no")
    with pytest.raises(TypeError, match="use_gold must be True or False"):
        ls.annotator_report(export, use_gold=0)
    with pytest.raises(TypeError, match="use_gold must be True or False"):
        ls.quality_report(export_path, tmp_path / "rep", use_gold="false")
    with pytest.raises(TypeError, match="gold"):
        ls.predictions_from_model(export, gold=False)
    with pytest.raises(TypeError, match="no_gold"):
        ls.annotator_report(export, no_gold=True)


def test_span_exports_take_no_gold(tmp_path):
    # sequence models take no gold: use_gold changes nothing on a span control
    tasks = [{"id": t, "data": {"text": "alpha beta gamma"}, "annotations": [
        {"id": 10 * t + u, "completed_by": u, "task": t, "was_cancelled": False,
         "ground_truth": u == 3, "result": [{"from_name": "ner", "to_name": "text",
                                               "type": "labels",
                                               "value": {"start": 0, "end": 5, "text": "alpha",
                                                         "labels": ["X"]}}]}
        for u in (1, 2, 3)]} for t in (1, 2)]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(tasks))
    export = ls.read_export(path)
    assert isinstance(export, ls.LabelStudioSpans)
    assert ls.gold_for_fit(export, ls.fit_label_model(export)) is None
    assert ls.predictions_from_model(export, None, "v") == \
        ls.predictions_from_model(export, None, "v", use_gold=False)
