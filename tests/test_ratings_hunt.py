"""Ratings and numeric scales read from Label Studio: a ``<Choices>`` scale whose values are
numbers keeps their order, and its agreement at the ordinal and interval levels is the one
of the same labels as numbers (defect hunt, ratings / multi-choice)."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("label_studio_sdk")

from crowd_keras import Annotations  # noqa: E402
from crowd_keras.agreement import krippendorff_alpha  # noqa: E402
from crowd_keras.integrations import label_studio as ls  # noqa: E402

#: (task, user, value) of a 1..10 scale written as <Choices> (values are texts)
_VOTES = [(1, 1, 1), (1, 2, 2), (1, 3, 10), (2, 1, 9), (2, 2, 10), (2, 3, 10),
          (3, 1, 2), (3, 2, 1), (3, 3, 2), (4, 1, 10), (4, 2, 9), (4, 3, 1)]


def _choices_export(votes=_VOTES, control="score", multiple=False):
    tasks: dict = {}
    for n, (task, user, value) in enumerate(votes):
        choices = [str(v) for v in value] if multiple else [str(value)]
        tasks.setdefault(task, []).append({
            "id": n + 1, "completed_by": user,
            "result": [{"from_name": control, "to_name": "text", "type": "choices",
                        "value": {"choices": choices}}]})
    return [{"id": t, "data": {"text": f"t{t}"}, "annotations": a} for t, a in tasks.items()]


def _numeric_annotations():
    """The votes as numbers; the classes are the values seen, in numeric order."""
    task, user, value = np.array(_VOTES).T
    classes = np.unique(value)
    return Annotations(np.unique(task, return_inverse=True)[1],
                       np.unique(user, return_inverse=True)[1],
                       np.searchsorted(classes, value), classes=classes)


def test_numeric_choices_keep_numeric_class_order():
    export = ls.read_export(_choices_export())
    # was ['1', '10', '2', '9']: text order
    assert list(export.classes) == ["1", "2", "9", "10"]
    assert list(export.classes) == [str(c) for c in _numeric_annotations().classes]


def test_numeric_choice_sets_are_named_in_numeric_order():
    votes = [(1, 1, (10, 2)), (1, 2, (2,)), (2, 1, (10,)), (2, 2, (2, 10))]
    export = ls.read_export(_choices_export(votes, multiple=True), multiple="combination")
    assert list(export.classes) == ["2", "10", "2|10"]
    preds = ls.predictions_from_model(export, "majority_vote", "v")
    assert all(p["result"][0]["value"]["choices"] in (["2"], ["10"], ["2", "10"])
               for p in preds)


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_report_of_numeric_choices_matches_the_numbers(tmp_path, level):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(_choices_export()))
    out = ls.quality_report(path, tmp_path / "report", level=level, n_bootstrap=0,
                            plots=False)
    summary = {r["statistic"]: r["value"]
               for r in out["report"]["controls"]["score"]["agreement"]["summary"]}
    # ordinal was on the text order (10 between 1 and 2); interval refused "'1' is not a number"
    expected = krippendorff_alpha(_numeric_annotations(), level=level)
    assert np.isclose(summary["krippendorff_alpha"], expected)


def test_regression_refuses_an_infinite_answer():
    """An infinite answer (or one beyond float32) made the loss inf and the weights NaN after
    one step, silently; it is refused where it enters, naming where."""
    keras = pytest.importorskip("keras")
    from crowd_keras import CrowdDataError
    from crowd_keras.layers import CrowdRegressionLayer
    from crowd_keras.losses import MaskedMultiMSE
    from crowd_keras.models import CrowdModel

    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
    answers = np.full((8, 2), np.nan)
    answers[:, 0] = np.arange(8) % 5 + 1     # a 1..5 rating
    answers[3, 1] = 1e39                     # inf in float32
    model = CrowdModel(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]),
                       CrowdRegressionLayer(2))
    model.compile(keras.optimizers.Adam(0.01))
    with pytest.raises(CrowdDataError, match=r"dense targets: answer inf at \(3, 1\) is not a "
                                             r"finite number \(1 such value"):
        model.fit(x, answers, epochs=1, verbose=0)
    answers[3, 1] = -np.inf
    with pytest.raises(CrowdDataError, match=r"masked_multi_mse y_true: answer -inf at \(3, 1\)"):
        MaskedMultiMSE()(answers.astype(np.float32), np.zeros((8, 2), np.float32))
    answers[3, 1] = np.nan                   # NaN stays the missing marker
    assert np.isfinite(float(MaskedMultiMSE()(answers.astype(np.float32),
                                              np.zeros((8, 2), np.float32))))


def test_skip_leaving_nothing_says_why(tmp_path, capsys):
    """Every annotation with several choices and multiple="skip": the error said "are the
    control name and the export right?"; it says that skip left them all out."""
    from crowd_keras import CrowdDataError
    from crowd_keras.cli import main

    export = _choices_export([(1, 1, ("a", "b")), (1, 2, ("b", "a")), (2, 1, ("a", "c"))],
                             control="topic", multiple=True)
    with pytest.raises(CrowdDataError, match=r"all 3 labelled annotations have several "
                                             r"choices, and multiple='skip' left them out"):
        ls.read_export(export, multiple="skip")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    assert main(["label-studio", "aggregate", str(path), "--multiple", "skip",
                 "--out", str(tmp_path / "p.json")]) == 2
    assert "--multiple skip left them out" in capsys.readouterr().err
