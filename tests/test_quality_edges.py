"""Edges of the path that tells users which labels and which annotators to trust: the
annotator quality of every label model, the report pages and files, with odd names and
annotators who labelled little or nothing."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crowd_keras.aggregation.registry import available_label_models
from crowd_keras.cli import main

matplotlib = pytest.importorskip("matplotlib")


# matplotlib reads text between two '$' as mathtext; this one it cannot parse
BAD_MATH = "$\\nosuchsymbol$"


def _answers(tmp_path, classes, workers, n_items=12, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        truth = rng.integers(len(classes))
        for w in workers:
            label = truth if rng.random() < 0.8 else rng.integers(len(classes))
            rows.append({"task": f"t{i}", "worker": w, "label": classes[label]})
    path = tmp_path / "answers.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_names_with_dollar_signs_are_drawn_as_they_are(tmp_path):
    # an annotator or a class named like mathtext stopped the whole report (a matplotlib
    # ParseFatalException) or was drawn as a formula
    from crowd_keras import plot

    fig = plot.confusion_matrices(np.tile(np.eye(2)[None], (2, 1, 1)),
                                  names=[BAD_MATH, "$x_1$ paid $5"], classes=[BAD_MATH, "b"])
    fig.canvas.draw()
    shown = [t._preprocess_math(t.get_text()) for ax in fig.axes
             for t in [ax.title, *ax.get_xticklabels(), *ax.get_yticklabels()]]
    assert (BAD_MATH, False) in shown and ("$x_1$ paid $5", False) in shown
    kappa = pd.DataFrame(np.eye(2), index=[BAD_MATH, "a"], columns=[BAD_MATH, "a"])
    plot.kappa_matrix(kappa).figure.canvas.draw()
    plot.class_agreement(pd.DataFrame({"class": [BAD_MATH], "alpha": [0.5]})).figure \
        .canvas.draw()
    matplotlib.pyplot.close("all")
    answers = _answers(tmp_path, [BAD_MATH, "b & <c>"], [BAD_MATH, "w2", "w3"])
    out = tmp_path / "out"
    assert main(["agree", str(answers), "--bootstrap", "0", "--out", str(out), "--quiet",
                 "--method", "majority_vote"]) == 0
    page = (out / "report.html").read_text()
    assert "<img" in page and "b &amp; &lt;c&gt;" in page
    assert json.loads((out / "report.json").read_text())["annotators"][0]["annotator"] == \
        BAD_MATH


def _crowd_with_a_silent_annotator():
    """A simulated crowd plus ``"one"`` (a single label) and ``"silent"`` (none: a column of
    NaN in cleanlab's wide layout, read by ``Annotations.from_wide``)."""
    from crowd_keras import Annotations
    from crowd_keras.datasets import simulate_crowd

    crowd = simulate_crowd(n_items=40, n_classes=3, n_annotators=6, annotations_per_item=3,
                           seed=1)
    wide = crowd.annotations.to_wide()
    wide.columns = [f"w{a}" for a in wide.columns]
    wide["one"] = np.nan
    wide.iloc[0, wide.columns.get_loc("one")] = 1.0
    wide["silent"] = np.nan
    return Annotations.from_wide(wide)


QUALITY_MODELS = [m for m in available_label_models(aliases=False) if m != "lia"]


@pytest.mark.parametrize("name", QUALITY_MODELS)
def test_annotator_without_labels_has_no_quality(name):
    # the annotator who labelled nothing got its prior as its quality (GLAD's ability prior
    # read as an accuracy above the whole crowd's), where expected_accuracy said NaN
    from crowd_keras.aggregation import get_label_model

    ann = _crowd_with_a_silent_annotator()
    quality = get_label_model(name).fit(ann).annotator_quality_.set_index("annotator")
    assert quality.loc["silent", "n_annotations"] == 0
    assert quality.loc["one", "n_annotations"] == 1
    scores = quality.drop(columns=["n_annotations", "coverage"], errors="ignore")
    assert scores.loc["silent"].isna().all(), scores.loc["silent"]
    assert np.isfinite(scores.drop(index="silent").to_numpy(dtype=float)).all()


def _cancelled_only(tasks, user):
    tasks[0]["annotations"].append({"id": 999, "completed_by": {"id": user, "email": "s@x.org"},
                                    "was_cancelled": True, "result": []})
    return tasks


def _three_users_choices():
    """Eight tasks, each answered yes/no by users 1, 2 and 3 (a Choices export)."""
    return [{"id": t, "data": {"text": str(t)}, "annotations": [
        {"id": 10 * t + u, "completed_by": u, "result": [
            {"from_name": "c", "to_name": "text", "type": "choices",
             "value": {"choices": ["yes" if (t + u * (t % 3 == 0)) % 2 else "no"]}}]}
        for u in (1, 2, 3)]} for t in range(1, 9)]


def test_label_studio_report_lists_users_who_only_skipped_for_spans_as_for_choices(tmp_path):
    # the span report left out a user whose annotations were all skipped (the choices report
    # lists such a user, with its n_cancelled): one row per user, as documented
    from test_agreement_report import span_export

    from crowd_keras.integrations import label_studio as ls

    for tasks in (_three_users_choices(), span_export()):
        export = ls.read_export(_cancelled_only(tasks, 7))
        frame = ls.annotator_report(export, csv_path=tmp_path / "a.csv",
                                    json_path=tmp_path / "a.json")
        assert frame["annotator"].tolist() == [1, 2, 3, 7]
        silent = frame.set_index("annotator").loc[7]
        assert (silent["n_annotations"], silent["n_cancelled"], silent["email"]) == \
            (0, 1, "s@x.org")
        quality = [c for c in frame.columns if c.startswith(("accuracy", "span_", "token_",
                                                             "agreement", "kappa", "mean_"))]
        assert silent[quality].isna().all() and frame.loc[:2, quality[0]].notna().all()
        assert len(pd.read_csv(tmp_path / "a.csv")) == 4
        rows = json.loads((tmp_path / "a.json").read_text())["annotators"]
        assert rows[-1]["annotator"] == 7 and rows[-1][quality[0]] is None


def test_a_large_crowd_page_shows_the_busiest_annotators_not_the_first_ids():
    # with more annotators than the page shows, the tables showed the first ones by id (w0,
    # w1, w10, w100, ...): now the busiest, most first, each cell still pointing at its row of
    # the JSON report
    import re

    from crowd_keras import Annotations
    from crowd_keras.agreement import agreement_report
    from crowd_keras.aggregation import MajorityVote
    from crowd_keras.quality_page import agreement_section

    rng = np.random.default_rng(0)
    volume = {"a": 2, "b": 6, "c": 3, "d": 6, "e": 9, "f": 2}     # 6 annotators, 3 shown
    rows = [(f"t{i}", w, int(rng.integers(2))) for w, n in volume.items() for i in range(n)]
    ann = Annotations.from_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    report = agreement_report(ann, n_bootstrap=0)
    quality = MajorityVote().fit(ann).annotator_quality_
    page = agreement_section(report, "agreement", quality=quality, quality_path="annotators",
                             plots=False, max_rows=3)
    tables = page.split("<h3>")
    for head, frame, where in (("Each annotator", report.per_annotator, "agreement/per_annotator"),
                               ("Annotator quality", quality, "annotators")):
        table = next(t for t in tables if t.startswith(head))
        shown = re.findall(r"<tr><td class='t'>(\w)</td><td data-path='([^']*)'>", table)
        assert [name for name, _ in shown] == ["e", "b", "d"], head
        for name, data_path in shown:
            assert data_path.startswith(where + "/")
            assert frame["annotator"].iloc[int(data_path.split("/")[-2])] == name
        assert "the 3 annotators with the most annotations, most first, of 6 rows" in table
    small = agreement_section(report, "agreement", quality=quality, quality_path="annotators",
                              plots=False)
    table = next(t for t in small.split("<h3>") if t.startswith("Annotator quality"))
    assert re.findall(r"<tr><td class='t'>(\w)</td>", table) == list("abcdef")


def test_aggregate_writes_each_labels_consensus_quality_as_the_python_api(tmp_path):
    # the command line gave only the largest posterior ("probability": 1 on every item of a
    # majority vote), not the calibrated chance that a label is right of consensus_quality
    from crowd_keras import Annotations
    from crowd_keras.aggregation import get_label_model

    answers = _answers(tmp_path, ["no", "yes", "a, \"quoted\"\nclass"],
                       ["u,1", "v\"2", "w\n3", "x"], n_items=30, seed=3)
    frame = pd.read_csv(answers, dtype=str)
    ann = Annotations.from_frame(frame)
    gold = tmp_path / "gold.csv"
    pd.DataFrame({"task": ["t0", "t1"], "label": ["no", "yes"]}).to_csv(gold, index=False)
    for method, extra in (("majority_vote", []), ("dawid_skene", ["--gold", str(gold)])):
        out, report = tmp_path / f"{method}.csv", tmp_path / f"{method}-annotators.csv"
        assert main(["aggregate", str(answers), "--method", method, "--out", str(out),
                     "--annotators", str(report), "--quiet", *extra]) == 0
        labels = pd.read_csv(out, dtype={"task": str, "label": str})
        model = get_label_model(method)
        model = model.fit(ann, gold={"t0": "no", "t1": "yes"}) if extra else model.fit(ann)
        np.testing.assert_array_equal(labels["task"], ann.item_ids)
        np.testing.assert_array_equal(labels["label"], model.predict_labels())
        np.testing.assert_allclose(labels["consensus_quality"], model.consensus_quality(),
                                   rtol=1e-12)
        assert labels["consensus_quality"].between(0, 1).all()
        pd.testing.assert_frame_equal(pd.read_csv(report, dtype={"annotator": str}),
                                      model.annotator_quality_.astype({"annotator": str}),
                                      rtol=1e-12)
    vote = pd.read_csv(tmp_path / "majority_vote.csv")
    assert (vote["probability"] == 1).all() and (vote["consensus_quality"] < 0.99).any()
    held = pd.read_csv(tmp_path / "dawid_skene.csv", dtype={"task": str}).set_index("task")
    np.testing.assert_allclose(held.loc[["t0", "t1"], "consensus_quality"], 1.0)


def test_expected_accuracy_reads_below_the_accuracy_on_sparse_crowds_as_documented():
    # docs/quality.md: a ranking score that reads below the true accuracy where items have
    # few other labels, the less so the more labels each item has
    from crowd_keras.aggregation import DawidSkene
    from crowd_keras.datasets import simulate_crowd

    gaps = []
    for per_item in (2, 8):
        crowd = simulate_crowd(n_items=800, n_classes=3, n_annotators=20,
                               annotations_per_item=per_item, annotator_accuracy=(0.35, 0.9),
                               seed=5)
        quality = DawidSkene().fit(crowd.annotations).annotator_quality_
        truth = crowd.annotator_accuracy()
        gaps.append(float(np.mean(quality["expected_accuracy"] - truth)))
        assert abs(np.mean(quality["accuracy"] - truth)) < 0.05
        assert np.corrcoef(quality["expected_accuracy"], truth)[0, 1] > 0.8
    assert gaps[0] < -0.05 and gaps[0] < gaps[1] < 0.0


@pytest.mark.parametrize("name", ["majority_vote", "dawid_skene", "hmm_crowd"])
def test_span_annotator_without_documents_has_no_accuracy(name):
    # a sequence model's annotator_quality_ gave an annotator named in annotator_ids but
    # without any document its prior's token accuracy (above two annotators who worked)
    from crowd_keras.sequences.annotations import SequenceAnnotations
    from crowd_keras.sequences.registry import get_sequence_model

    texts = ["John met Mary in Paris", "Anna flew to Rome"]
    spans = pd.DataFrame([(0, "a", 0, 4, "PER"), (0, "b", 0, 4, "PER"), (1, "a", 0, 4, "PER"),
                          (1, "b", 13, 17, "LOC"), (0, "c", 9, 13, "PER")],
                         columns=["doc", "annotator", "start", "end", "label"])
    seq = SequenceAnnotations.from_spans(texts, spans, annotator_ids=["a", "b", "c", "none"])
    quality = get_sequence_model(name).fit(seq).annotator_quality_.set_index("annotator")
    assert quality.loc["none", "n_documents"] == 0 and np.isnan(quality.loc["none", "accuracy"])
    assert quality.loc[["a", "b", "c"], "accuracy"].between(0, 1).all()


def test_crowd_model_summary_gives_an_annotator_without_training_annotations_no_accuracy():
    # the trained crowd models' annotator_quality_ (CrowdSummary) read the prior as a quality
    from crowd_keras.item_consensus import CrowdSummary

    confusion = np.array([np.eye(2) * 0.8 + 0.1, np.full((2, 2), 0.5), np.eye(2) * 0.9 + 0.05])
    summary = CrowdSummary(np.array([0.5, 0.5]), confusion, np.array([4, 3, 0]),
                           np.array(["a", "b", "none"], dtype=object))
    quality = summary.annotator_quality()
    np.testing.assert_allclose(quality["accuracy"], [0.9, 0.5, np.nan])


@pytest.mark.slow
def test_lia_annotator_without_labels_has_no_accuracy():
    # LIA predicted an accuracy for an annotator the fit saw no label of (its untrained
    # parameters' prediction, ranked among the others)
    from crowd_keras.aggregation import get_label_model

    ann = _crowd_with_a_silent_annotator()
    quality = get_label_model("lia", em_iterations=1, m_steps=5).fit(ann) \
        .annotator_quality_.set_index("annotator")
    assert quality.loc["silent", ["accuracy", "accuracy_own_items"]].isna().all()
    assert quality.drop(index="silent")["accuracy"].between(0, 1).all()


def test_span_control_report_lists_no_tokens_as_tasks_to_review(tmp_path):
    # a span control's "items to review" were the sequence model's label_issues: token
    # indices shown as task ids (tasks 13, 1, 9, ... of a three-task export) with tags as
    # consensus labels
    from test_agreement_report import span_export

    from crowd_keras.integrations import label_studio as ls

    out = ls.quality_report(span_export(), tmp_path, n_bootstrap=0, plots=False)
    assert out["report"]["controls"]["label"]["items_to_review"] is None
    assert "Items to review first" not in out["html"].read_text()


def test_confusion_pictures_are_left_out_beyond_the_class_limit():
    # the busiest annotators' confusion matrices grow with the square of the classes (memory,
    # drawing time, the page's size): beyond the limit a note replaces them
    from crowd_keras import Annotations
    from crowd_keras.agreement import agreement_report
    from crowd_keras.aggregation import MajorityVote
    from crowd_keras.quality_page import MAX_CONFUSION_CLASSES, agreement_section

    k = MAX_CONFUSION_CLASSES + 1
    ann = Annotations(np.repeat(np.arange(3 * k), 2), np.tile([0, 1], 3 * k),
                      np.repeat(np.arange(3 * k) % k, 2), n_classes=k)
    report = agreement_report(ann, n_bootstrap=0)
    model = MajorityVote().fit(ann)
    page = agreement_section(report, "agreement", quality=model.annotator_quality_,
                             quality_path="annotators", confusion=model.confusion_matrices_,
                             classes=list(ann.classes))
    assert f"drawn for up to {MAX_CONFUSION_CLASSES} classes; here there are {k}" in page
    assert "alt='confusion matrices'" not in page and "alt='quality vs volume'" in page


def test_label_studio_annotator_json_has_the_numbers_of_the_csv_and_the_frame(tmp_path):
    # the JSON annotator report was written by DataFrame.to_json, which rounds to 10
    # significant digits: its accuracy 0.7225898699 where the CSV and the frame have
    # 0.722589869931678
    from test_agreement_report import span_export

    from crowd_keras.integrations import label_studio as ls

    for tasks in (_three_users_choices(), span_export()):
        export = ls.read_export(_cancelled_only(tasks, 7))
        frame = ls.annotator_report(export, csv_path=tmp_path / "a.csv",
                                    json_path=tmp_path / "a.json")
        rows = json.loads((tmp_path / "a.json").read_text(), parse_constant=_no_constant)
        from_json = pd.DataFrame(rows["annotators"], columns=frame.columns)
        from_csv = pd.read_csv(tmp_path / "a.csv")
        numbers = [c for c in frame.columns if c not in ("annotator", "email")]
        values = frame[numbers].to_numpy(np.float64)
        finite = values[np.isfinite(values)]
        assert (finite != np.round(finite, 10)).any()    # digits beyond the 10th to keep
        np.testing.assert_array_equal(from_json[numbers].to_numpy(np.float64), values)
        np.testing.assert_array_equal(from_csv[numbers].to_numpy(np.float64), values)


def _no_constant(name):
    raise AssertionError(f"{name} in a JSON report: strict parsers refuse it")


@pytest.mark.parametrize("users", [(1,), (1, 2)])
def test_label_studio_annotator_report_counts_no_partner_when_nobody_shares_a_task(tmp_path,
                                                                                  users):
    # with one user, or no task annotated twice, n_partners (a count) was NaN: an empty
    # CSV field, where a user who shares no task has 0 partners
    from crowd_keras.integrations import label_studio as ls

    tasks = [{"id": t, "data": {"text": str(t)}, "annotations": [
        {"id": t, "completed_by": users[t % len(users)], "result": [
            {"from_name": "c", "to_name": "text", "type": "choices",
             "value": {"choices": ["yes" if t % 3 else "no"]}}]}]} for t in range(1, 9)]
    frame = ls.annotator_report(ls.read_export(tasks), csv_path=tmp_path / "a.csv",
                                json_path=tmp_path / "a.json")
    assert frame["n_partners"].tolist() == [0] * len(users)
    assert pd.read_csv(tmp_path / "a.csv")["n_partners"].tolist() == [0] * len(users)
    doc = json.loads((tmp_path / "a.json").read_text())
    assert [r["n_partners"] for r in doc["annotators"]] == [0] * len(users)
    assert doc["agreement"] is None and frame["kappa_with_others"].isna().all()
