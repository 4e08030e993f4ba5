"""The Label Studio quality report's per-control settings: ``level`` (``--level``) reaches
only the controls whose values have an order, and a span control nobody used is not
reported (its all-O reading was a perfect agreement that entered the overall mean)."""
from __future__ import annotations

import itertools

import pytest

from crowd_keras.integrations import label_studio as ls

CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text"><Choice value="pos"/><Choice value="neg"/></Choices>
  <Rating name="quality" toName="text" maxRating="5"/>
  <Labels name="ner" toName="text"><Label value="PER"/><Label value="LOC"/></Labels>
  <Labels name="unused" toName="text"><Label value="X"/></Labels>
</View>"""
TEXTS = ["Alice met Bob in Paris", "Carol went to Rome", "Dave likes Berlin", "Eve saw Oslo"]
# per task, per user: (choice, rating, [(word, tag), ...])
ANSWERS = [[("pos", 4, [("Alice", "PER"), ("Paris", "LOC")]), ("pos", 5, [("Alice", "PER")]),
            ("neg", 2, [("Paris", "PER")])],
           [("neg", 3, [("Rome", "LOC")]), ("neg", 3, [("Carol", "PER"), ("Rome", "LOC")]),
            ("pos", 1, [])],
           [("pos", 5, [("Dave", "PER")]), ("neg", 4, [("Dave", "PER"), ("Berlin", "LOC")]),
            ("pos", 5, [("Berlin", "LOC")])],
           [("neg", 1, [("Eve", "PER")]), ("neg", 2, [("Oslo", "LOC")]),
            ("neg", 1, [("Eve", "PER"), ("Oslo", "LOC")])]]


def _export() -> list:
    ids = itertools.count(100)
    tasks = []
    for t, (text, answers) in enumerate(zip(TEXTS, ANSWERS)):
        anns = []
        for user, (choice, rating, spans) in enumerate(answers, start=1):
            result = [{"from_name": "sentiment", "to_name": "text", "type": "choices",
                       "value": {"choices": [choice]}},
                      {"from_name": "quality", "to_name": "text", "type": "rating",
                       "value": {"rating": rating}}]
            result += [{"from_name": "ner", "to_name": "text", "type": "labels",
                        "value": {"start": text.index(w), "end": text.index(w) + len(w),
                                  "text": w, "labels": [tag]}} for w, tag in spans]
            anns.append({"id": next(ids), "completed_by": user, "result": result})
        tasks.append({"id": t + 1, "data": {"text": text}, "annotations": anns})
    return tasks


def _report(tmp_path, **kwargs) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.xml").write_text(CONFIG)
    return ls.quality_report(_export(), tmp_path / "out", label_config=tmp_path / "config.xml",
                             n_bootstrap=0, plots=False, **kwargs)["report"]


def _alpha(doc: dict) -> float:
    return next(r["value"] for r in doc["agreement"]["summary"]
                if r["statistic"] == "krippendorff_alpha")


@pytest.mark.parametrize("level", ["ordinal", "interval", "ratio"])
def test_level_reaches_the_rating_only_and_tags_and_text_choices_stay_nominal(tmp_path, level):
    plain = _report(tmp_path / "a")["controls"]
    given = _report(tmp_path / "b", level=level)["controls"]
    assert given["quality"]["level"] == level and plain["quality"]["level"] == "interval"
    for name in ("sentiment", "ner"):     # was ordinal alpha over the tag codes' order, or
        assert given[name]["error"] is None, given[name]["error"]     # "not reported"
        assert given[name]["level"] == "nominal"
        assert _alpha(given[name]) == pytest.approx(_alpha(plain[name]))


def test_a_span_control_nobody_used_is_not_reported_nor_averaged(tmp_path):
    report = _report(tmp_path)
    unused = report["controls"]["unused"]
    assert unused["error"] and "no annotation marks a span" in unused["error"]
    reported = [d for d in report["controls"].values() if d["error"] is None]
    assert {d["control"] for d in reported} == {"sentiment", "quality", "ner"}
    overall = {r["statistic"]: r for r in report["overall"]}["percent_agreement"]
    each = [next(r["value"] for r in d["agreement"]["summary"]
                 if r["statistic"] == "percent_agreement") for d in reported]
    assert overall["n_controls"] == 3 and overall["value"] == pytest.approx(sum(each) / 3)
