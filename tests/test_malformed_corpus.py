"""The malformed-input corpus (issue 19): one table of cases, each either a typed, located error
or an input rightly accepted and counted.

Families: Label Studio full JSON, JSON_MIN, CSV and TSV exports (mutations of the committed
fixtures, each written to a file whose name the message must carry), long frames
(``Annotations.from_frame``), dense matrices (``from_dense``), Snorkel label matrices
(``from_label_matrix`` and ``CrowdLabelModel.fit``) and the ``crowd-keras aggregate`` command.
An error case asserts ``CrowdDataError`` (a ``ValueError``) and a regex that names the
position (task and annotation, line, row, row and column) and the offending value; an
accepted case asserts what was read and counted. Outcomes are tallied in
``test_corpus_size_and_tally``.
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError

DATA = Path(__file__).parent / "data" / "label_studio"
CONFIG = DATA / "config.xml"
CASES: dict = {}  # id -> (family, run(tmp_path) -> result, expectation)


def error(pattern: str) -> tuple:
    return ("error", pattern)


def accept(check) -> tuple:
    return ("accept", check)


def case(family: str, name: str, run, expect) -> None:
    key = f"{family}-{name}"
    assert key not in CASES, key
    CASES[key] = (family, run, expect)


def shown(value) -> str:
    """The regex of a value as messages print it (repr; big ints in e-notation)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 24:
        return re.escape(f"{value:.3e}")
    return re.escape(repr(value))


# ---------------------------------------------------------------------------- Label Studio
def _load(name):
    return json.loads((DATA / name).read_text())


def _read_json(data, suffix=".json", **kwargs):
    def run(tmp_path, _name=[None]):
        from crowd_keras.integrations import label_studio as ls
        path = tmp_path / f"export{suffix}"
        path.write_text(json.dumps(data))
        return ls.read_export(path, **kwargs)
    return run


def full(mutate, **kwargs):
    data = _load("demo.json")
    mutate(data)
    return _read_json(data, control=kwargs.pop("control", "sentiment"), **kwargs)


def minimal(mutate, **kwargs):
    data = _load("demo_min.json")
    mutate(data)
    return _read_json(data, control=kwargs.pop("control", "sentiment"), **kwargs)


def flat(row: int, column: str, value: str, fmt: str = "CSV", **kwargs):
    """The CSV/TSV fixture with one cell changed (row = data row, line row + 2)."""
    name = "demo.csv" if fmt == "CSV" else "demo.tsv"
    delim = "," if fmt == "CSV" else "\t"
    rows = list(csv.reader(io.StringIO((DATA / name).read_text(), newline=""), delimiter=delim))
    header = rows[0]
    rows[row + 1][header.index(column)] = value
    out = io.StringIO()
    csv.writer(out, delimiter=delim, lineterminator="\n").writerows(rows)
    text = out.getvalue()

    def run(tmp_path):
        from crowd_keras.integrations import label_studio as ls
        path = tmp_path / f"export.{fmt.lower()}"
        path.write_text(text)
        return ls.read_export(path, control=kwargs.get("control", "sentiment"),
                              **{k: v for k, v in kwargs.items() if k != "control"})
    return run


def _set(path, value):
    """A mutation setting data[path...] = value."""
    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


BAD_IDS = ["abc", "", "1e3", 1.5, True, [], {}, -1, 10 ** 30, 2 ** 63]
for v in BAD_IDS:
    what = (r"outside Label Studio's id range" if isinstance(v, int) and not isinstance(v, bool)
            else r"must be an integer, got " + (shown(v) if isinstance(v, bool) else
                                                f"{type(v).__name__} {shown(v)}"))
    case("json", f"task-id-{v!r}", full(_set([1, "id"], v)),
         error(r"task at position 1: task id " + (shown(v) if "range" in what else "") + ".*" + what))
    case("json", f"annotation-id-{v!r}", full(_set([1, "annotations", 1, "id"], v)),
         error(r"task 2, annotation at position 1: annotation id " + ".*" + what))
    case("json_min", f"task-id-{v!r}", minimal(_set([4, "id"], v)),
         error(r"row 4: task id .*" + what))
    case("json_min", f"annotation-id-{v!r}", minimal(_set([4, "annotation_id"], v)),
         error(r"row 4 \(task 2\): annotation_id .*" + what))

for v in ([2], {"id": None}, True, None, 1.5, -4, 10 ** 30, "  "):
    pattern = {True: r"got True", None: r"got None", 1.5: r"must be an integer, got float 1.5",
               -4: r"-4 is outside", 10 ** 30: r"1.000e\+30 is outside", "  ": r"got str '  '"}
    case("json", f"completed-by-{v!r}", full(_set([1, "annotations", 0, "completed_by"], v)),
         error(r"task 2, annotation 4: .*(annotator|completed_by).*" +
               (r"list \[2\]" if isinstance(v, list) else r"neither 'id' nor 'email'"
                if isinstance(v, dict) else pattern[v])))

for v in ("abc", 2.5, False, [3]):
    case("json", f"completed-by-id-{v!r}",
         full(_set([1, "annotations", 0, "completed_by"], {"id": v, "email": "a@b.org"})),
         error(r"task 2, annotation 4: completed_by.id must be an integer"))
case("json", "completed-by-email-int",
     full(_set([1, "annotations", 0, "completed_by"], {"id": 2, "email": 7})),
     error(r"task 2, annotation 4: completed_by.email must be a string, got 7"))

for key in ("was_cancelled", "ground_truth"):
    for v in ("yes", 2, [True]):
        case("json", f"{key}-{v!r}", full(_set([1, "annotations", 0, key], v)),
             error(rf"task 2, annotation 4: '{key}' must be true or false, got {shown(v)}"))

for key, v in (("updated_at", 17), ("updated_at", "yesterday"), ("updated_at", "2024-13-45"),
               ("created_at", ["2024-01-01"])):
    def drop_updated(data, key=key, v=v):
        if key == "created_at":
            for a in data[1]["annotations"]:
                a.pop("updated_at", None)
        data[1]["annotations"][0][key] = v
    pattern = (rf"'{key}' must be a date-time string" if not isinstance(v, str)
               else rf"unreadable date-time {shown(v)}")
    case("json", f"{key}-{v!r}", full(drop_updated), error(r"task 2, annotation 4: " + pattern))

for v in ("positive", [1], [["positive"]], None, {"a": 1}):
    case("json", f"choices-{v!r}",
         full(_set([0, "annotations", 0, "result", 0, "value", "choices"], v)),
         error(r"task 1, annotation 1: control 'sentiment' value.choices must be a list of "
               r"strings, got " + shown(v)))
for v in ("five", 2.5, None, [3], True):
    case("json", f"rating-{v!r}",
         full(_set([0, "annotations", 0, "result", 2, "value", "rating"], v), control="quality"),
         error(r"task 1, annotation 1: control 'quality' value.rating must be an integer, got "
               + shown(v)))
for v in (0, 6, 99):
    case("json", f"rating-out-of-range-{v}",
         full(_set([0, "annotations", 0, "result", 2, "value", "rating"], v), control="quality",
              label_config=CONFIG),
         error(rf"task 1, annotation 1: rating {v} is outside 1..5"))

for key, v, pattern in (("from_name", None, r"has no 'from_name'"),
                        ("from_name", 3, r"'from_name' must be a str, got int 3"),
                        ("type", ["choices"], r"'type' must be a str, got list"),
                        ("value", "positive", r"'value' must be a dict, got str 'positive'"),
                        ("value", None, r"has no 'value'")):
    def mutate(data, key=key, v=v):
        item = data[0]["annotations"][0]["result"][0]
        if v is None:
            item.pop(key)
        else:
            item[key] = v
    case("json", f"result-{key}-{v!r}", full(mutate),
         error(r"task 1, annotation 1, result item 0:? " + pattern))
case("json", "result-item-not-object", full(_set([0, "annotations", 0, "result", 0], "positive")),
     error(r"task 1, annotation 1, result item 0 is not an object \(got str\)"))
case("json", "result-not-list", full(_set([0, "annotations", 0, "result"], {"a": 1})),
     error(r"task 1, annotation 1: 'result' must be a list, got dict"))
case("json", "annotations-not-list", full(_set([2, "annotations"], "none")),
     error(r"task 3: 'annotations' must be a list, got str"))
case("json", "annotation-not-object", full(_set([2, "annotations", 1], 5)),
     error(r"task 3, annotation at position 1 is not an object \(got int\)"))
case("json", "value-not-in-config",
     full(_set([0, "annotations", 0, "result", 0, "value", "choices"], ["great"]),
          label_config=CONFIG),
     error(r"task 1, annotation 1: value 'great' of control 'sentiment' is not in the "
           r"labeling config"))
case("json", "type-differs-in-one-result",
     full(_set([1, "annotations", 0, "result", 0, "type"], "rating")),
     error(r"task 2, annotation 4: a result of control 'sentiment' has type 'rating', "
           r"expected 'choices'"))
case("json", "several-choices", full(lambda d: None, control="topics"),
     error(r"task 1, annotation 2: 2 choices \['sports', 'tech'\] for control 'topics'"))


def _rename_controls(data):
    for task in data:
        for ann in task["annotations"]:
            for item in ann["result"]:
                item["from_name"] = "old_" + item["from_name"]


case("json", "every-result-names-an-unknown-control", full(_rename_controls, control=None,
                                                            label_config=CONFIG),
     error(r"no annotation result names control '(sentiment|topics|quality)'|several controls"))
_one_control = CONFIG.read_text().split('<Choices name="topics"')[0] + "</View>"
case("json", "every-result-names-an-unknown-control-one-declared",
     full(_rename_controls, control=None, label_config=_one_control),
     error(r"no annotation result names control 'sentiment'; the results name "
           r"\['old_quality', 'old_sentiment', 'old_topics'\]"))
case("json", "task-id-twice", full(_set([5, "id"], 3)),
     error(r"task at position 5: task id 3 appears twice \(also at position 2\)"))
case("json", "annotation-id-twice", full(_set([6, "annotations", 0, "id"], 9)),
     error(r"task 7, annotation 9: annotation id 9 appears twice \(also at task 3\)"))

# JSON_MIN: annotators and control cells
for v, pattern in ((True, r"got True"), (1.5, r"must be an integer, got float 1.5"),
                   ([3], r"got list \[3\]"), (10 ** 30, r"1.000e\+30 is outside"),
                   ("-2", r"-2 is outside")):
    case("json_min", f"annotator-{v!r}", minimal(_set([4, "annotator"], v)),
         error(r"row 4 \(task 2, annotation 4\): .*annotator.*" + pattern))
for v, pattern in ((3, r"holds int 3"), (2.5, r"holds float 2.5"),
                   ({"rating": 2}, r"holds the rating 2, but a choice 'negative' at .*row 0 "
                                   r"\(task 1, annotation 3\)"),
                   ({"choices": "x"}, r"value.choices must be a list of strings, got 'x'"),
                   ([{"choices": ["a"]}, {"choices": ["b"]}], r"2 results for control"),
                   (True, r"holds bool True")):
    case("json_min", f"control-cell-{v!r}", minimal(_set([4, "sentiment"], v)),
         error(r"row 4 \(task 2, annotation 4\): .*" + pattern))
case("json_min", "rating-text", minimal(_set([0, "quality"], "great"), control="quality",
                                        label_config=CONFIG),
     error(r"row 0 \(task 1, annotation 3\): control 'quality' is a Rating control but holds "
           r"the text 'great'"))
case("json_min", "annotation-id-twice", minimal(_set([5, "annotation_id"], 5)),
     error(r"row 5 \(task 3, annotation 5\): annotation id 5 appears twice \(also at row 3\)"))
case("json_min", "value-without-annotator", minimal(_set([11, "sentiment"], "positive")),
     error(r"row 11 \(task 6\): a value 'positive' for control 'sentiment' but no annotator"))

# CSV and TSV: one cell each
for fmt in ("CSV", "TSV"):
    for v, pattern in (("not-a-number", r"must be an integer, got str 'not-a-number'"),
                       ("1.5", r"must be an integer, got str '1.5'"),
                       ("-3", r"-3 is outside"),
                       ("99999999999999999999999", r"99999999999999999999999 is outside"),
                       ("0x10", r"got str '0x10'")):
        case(fmt.lower(), f"task-id-{v}", flat(3, "id", v, fmt),
             error(r"line 5: task id .*" + pattern))
    for v, pattern in (("x7", r"annotation_id must be an integer, got str 'x7'"),
                       ("-1", r"annotation_id -1 is outside")):
        case(fmt.lower(), f"annotation-id-{v}", flat(3, "annotation_id", v, fmt),
             error(r"line 5 \(task 2\): " + pattern))
    case(fmt.lower(), "annotator-negative", flat(3, "annotator", "-7", fmt),
         error(r"line 5 \(task 2, annotation 5\): annotator \(completed_by\) id -7 is outside"))
    case(fmt.lower(), "topics-invalid-json", flat(1, "topics", '{"choices": [', fmt, control="topics",
                                                  multiple="combination"),
         error(r"line 3 \(task 1, annotation 2\): column 'topics' holds invalid JSON text"))
    case(fmt.lower(), "rating-not-int", flat(0, "quality", '[{"rating": "x"}]', fmt,
                                             control="quality"),
         error(r"line 2 \(task 1, annotation 3\): control 'quality' value.rating must be an "
               r"integer, got 'x'"))
    case(fmt.lower(), "unreadable-date", flat(2, "updated_at", "soon", fmt),
         error(r"line 4 \(task 1, annotation 1\): unreadable date-time 'soon'"))


# accepted and counted
def _summary(**want):
    def check(export):
        got = {k: getattr(export.summary, k) for k in want}
        assert got == want, got
        return True
    return check


case("json", "string-digit-task-id", full(_set([1, "id"], "2")),
     accept(lambda e: list(e.task_ids)[:2] == [1, 2] and _summary(n_used=12, n_tasks=8)(e)))
case("json", "email-annotator", full(_set([1, "annotations", 0, "completed_by"], "x@y.org")),
     accept(lambda e: "x@y.org" in list(e.annotator_ids) and _summary(n_annotators=5)(e)))
case("json", "annotations-null", full(_set([0, "annotations"], None)),
     accept(_summary(n_tasks=8, n_tasks_unannotated=3, n_annotations_read=15)))
case("json", "empty-result", full(_set([1, "annotations", 0, "result"], [])),
     accept(_summary(n_without_label=2, n_used=11)))
case("json", "cancelled-with-a-result", full(_set([0, "annotations", 0, "was_cancelled"], True)),
     accept(_summary(n_cancelled=4, n_used=11)))
case("json", "extra-unknown-control-besides-the-known-one",
     full(lambda d: d[0]["annotations"][0]["result"].append(
         {"from_name": "mood", "to_name": "text", "type": "choices",
          "value": {"choices": ["x"]}})),
     accept(_summary(n_used=12)))
case("csv", "annotator-name", flat(3, "annotator", "reviewer-b", "CSV"),
     accept(lambda e: "reviewer-b" in list(e.annotator_ids) and _summary(n_annotators=5)(e)))
case("csv", "integral-float-task-id", flat(3, "id", "2", "CSV"), accept(_summary(n_tasks=7)))


# ---------------------------------------------------------------------------- frames
def frame_with(column: str, values: list, **kwargs):
    base = {"task": ["a", "b", "c", "d"], "worker": ["u", "v", "u", "w"], "label": [0, 1, 1, 0]}
    base[column] = values

    def run(tmp_path):
        df = pd.DataFrame({k: pd.Series(v, dtype=object) if k == column else v
                           for k, v in base.items()})
        return Annotations.from_frame(df, **kwargs)
    return run


WHERE = {"task": r"row 2 \(annotator 'u'\)", "worker": r"row 2 \(item 'c'\)",
         "label": r"row 2 \(item 'c', annotator 'u'\)"}
for column in ("label", "task", "worker"):
    role = {"label": "label", "task": "item", "worker": "annotator"}[column]
    base = {"label": [0, 1, 1, 0], "task": ["a", "b", "c", "d"], "worker": ["u", "v", "u", "w"]}[column]
    for v, pattern in ((["x"], rf"{role} \['x'\] at {WHERE[column]} is a list"),
                       ({"k": 1}, rf"{role} \{{'k': 1\}} at {WHERE[column]} is a dict"),
                       ((1, 2), rf"{role} \(1, 2\) at {WHERE[column]} is a tuple"),
                       ({1, 2}, rf"{role} \{{1, 2\}} at {WHERE[column]} is a set"),
                       (None, rf"missing value \(NaN/None\) in column '{column}' at {WHERE[column]}"),
                       (np.nan, rf"missing value \(NaN/None\) in column '{column}' at {WHERE[column]}")):
        values = list(base)
        values[2] = v
        case("frame", f"{column}-{v!r}", frame_with(column, values), error(pattern))
    other = "1" if not isinstance(base[0], str) else 7
    values = list(base)
    values[2] = other
    first = "int 0 at row 0" if not isinstance(base[0], str) else f"str {base[0]!r} at row 0"
    case("frame", f"{column}-mixed-types", frame_with(column, values),
         error(rf"{role}s mix types: {first}.* and {type(other).__name__} {other!r} at "
               rf"{WHERE[column]}"))
for v, pattern in ((np.inf, r"non-finite label inf at row 2"),
                   (-np.inf, r"non-finite label -inf at row 2"),
                   (1e30, r"label 1e\+30 at row 2 .* too large"),
                   (10 ** 30, r"label 1000000000000000000000000000000 at row 2 .* too large"),
                   (-1, r"negative label -1 at row 2"),
                   (-3.0, r"negative label -3 at row 2"),
                   (1.5, r"non-integer label 1.5 at row 2"),
                   ("1", r"labels mix types: int 0 at row 0 .* and str '1' at row 2"),
                   (True, r"labels mix types: int 0 at row 0 .* and bool True at row 2"),
                   (b"x", r"labels mix types: int 0 at row 0 .* and bytes b'x' at row 2"),
                   (pd.Timestamp(0), r"labels mix types: int 0 at row 0 .* Timestamp"),
                   (complex(1, 1), r"labels mix types: int 0 at row 0 .* complex")):
    case("frame", f"label-value-{v!r}", frame_with("label", [0, 1, v, 0]), error(pattern + ".*"))
case("frame", "label-not-in-classes", frame_with("label", ["x", "y", "z", "x"], classes=["x", "y"]),
     error(r"label 'z' at row 2 \(item 'c', annotator 'u'\) is not one of the classes"))
case("frame", "item-not-in-item-ids", frame_with("task", ["a", "b", "q", "d"], item_ids=list("abcd")),
     error(r"item 'q' at row 2 is not in item_ids"))
case("frame", "duplicate-pair", frame_with("task", ["a", "b", "a", "d"]),
     error(r"1 duplicate \(item, annotator\) annotation\(s\); first: item 'a', annotator 'u'"))
case("frame", "label-10**9", frame_with("label", [0, 1, 10 ** 9, 0]),
     accept(lambda a: list(a.classes) == [0, 1, 10 ** 9] and a.n_annotations == 4))
case("frame", "integral-floats", frame_with("label", [0.0, 1.0, 2.0, 1.0]),
     accept(lambda a: list(a.classes) == [0, 1, 2] and a.n_annotations == 4))
case("frame", "numeric-item-ids-with-gap", frame_with("task", [10, 20, 10 ** 12, 30]),
     accept(lambda a: list(a.item_ids) == [10, 20, 30, 10 ** 12]))


# ---------------------------------------------------------------------------- dense matrices
def dense(matrix, **kwargs):
    return lambda tmp_path: Annotations.from_dense(matrix, **kwargs)


for v, pattern in ((np.inf, r"non-finite code inf at \(row, column\) \(1, 2\)"),
                   (-np.inf, r"non-finite code -inf at \(row, column\) \(1, 2\)"),
                   (np.nan, r"NaN at \(row, column\) \(1, 2\)"),
                   (None, r"NaN at \(row, column\) \(1, 2\) \(NaN or None\)"),
                   (1e30, r"code 1e\+30 at \(row, column\) \(1, 2\), too large"),
                   (10 ** 30, r"code 1e\+30 at \(row, column\) \(1, 2\), too large"),
                   (-2, r"negative code -2 at row 1, column 2"),
                   (2.5, r"non-integer code 2.5 at \(row, column\) \(1, 2\)"),
                   ("1", r"must be numeric codes: str '1' at row 1, column 2"),
                   ("cat", r"must be numeric codes: str 'cat' at row 1, column 2"),
                   ([1], r"the entry at row 1, column 2 is a list \[1\], not a code"),
                   (True, r"must be numeric codes: bool True at row 1, column 2")):
    rows = [[0, 1, -1], [1, -1, 0], [2, 2, 1]]
    rows[1][2] = v
    obj = np.empty((3, 3), dtype=object)
    for r in range(3):
        for c in range(3):
            obj[r, c] = rows[r][c]
    case("dense", f"value-{v!r}", dense(obj if not isinstance(v, list) else rows), error(pattern))
for name, matrix, pattern in (
        ("ragged-short", [[0, 1, 2], [1, 0], [2, 2, 1]], r"row 1 has 2 entries but row 0 has 3"),
        ("ragged-long", [[0, 1], [1, 0], [2, 2, 1]], r"row 2 has 3 entries but row 0 has 2"),
        ("ragged-scalar-row", [[0, 1], 3], r"row 1 is int 3, not a row"),
        ("one-d", [0, 1, 2], r"must be 2-d .* got shape \(3,\)"),
        ("three-d", np.zeros((2, 2, 2)), r"must be 2-d .* got shape \(2, 2, 2\)"),
        ("empty", np.zeros((0, 4)), r"empty \(shape \(0, 4\)\)"),
        ("outside-classes", [[0, 3]], r"label code 3 at row 0, column 1 is outside the 2 classes")):
    kwargs = {"classes": ["a", "b"]} if name == "outside-classes" else {}
    case("dense", name, dense(matrix, **kwargs), error(pattern))
case("dense", "code-10**9", dense([[0, 10 ** 9], [1, -1]]),
     accept(lambda a: list(a.classes) == [0, 1, 10 ** 9] and a.labels.tolist() == [0, 2, 1]))
case("dense", "nan-missing-marker", dense([[0.0, np.nan], [1.0, 2.0]], missing=np.nan),
     accept(lambda a: a.n_annotations == 3 and a.n_classes == 3))


# ---------------------------------------------------------------------------- label matrices
def label_matrix(matrix, **kwargs):
    return lambda tmp_path: Annotations.from_label_matrix(matrix, **kwargs)


def snorkel_fit(matrix):
    def run(tmp_path):
        from crowd_keras.integrations.snorkel import CrowdLabelModel
        return CrowdLabelModel(cardinality=2).fit(matrix, progress_bar=False)
    return run


for v, lm_pattern, sn_pattern in (
        (np.nan, r"NaN at \(row, column\) \(1, 2\)", r"L_train has nan at row 1, column 2"),
        (np.inf, r"non-finite code inf at \(row, column\) \(1, 2\)", r"has inf at row 1, column 2"),
        (-np.inf, r"non-finite code -inf at \(row, column\) \(1, 2\)", r"has -inf at row 1, column 2"),
        (1.5, r"non-integer code 1.5 at \(row, column\) \(1, 2\)", r"non-integer value 1.5 at row 1, column 2"),
        (-2, r"negative code -2 at row 1, column 2", r"has -2 at row 1, column 2: below -1"),
        (5, r"label code 5 at row 1, column 2 is outside the 2 classes", r"5 at row 1, column 2 but cardinality=2"),
        (1e30, r"label code 1e\+30 at row 1, column 2 is outside", r"1e\+30 at row 1, column 2"),
        ("a", r"numeric codes: str 'a' at row 1, column 2", r"numeric codes: str 'a' at row 1, column 2"),
        (None, r"NaN at \(row, column\) \(1, 2\)", r"has nan at row 1, column 2")):
    m = np.array([[0, 1, -1], [1, -1, 0], [1, 1, 0]], dtype=object)
    m[1, 2] = v
    case("label_matrix", f"value-{v!r}", label_matrix(m, cardinality=2), error(lm_pattern))
    case("snorkel", f"value-{v!r}", snorkel_fit(m), error(sn_pattern))
for name, matrix, lm_pattern in (
        ("ragged", [[0, 1, -1], [1, 0], [1, 1, 0]], r"row 1 has 2 entries but row 0 has 3"),
        ("ragged-scalar", [[0, 1], 1], r"row 1 is int 1, not a row")):
    case("label_matrix", name, label_matrix(matrix, cardinality=2), error(lm_pattern))
    case("snorkel", name, snorkel_fit(matrix), error(r"L_train: " + lm_pattern))
case("label_matrix", "code-10**9-without-cardinality", label_matrix([[0, 10 ** 9], [1, -1]]),
     error(r"label code 1000000000 at row 0, column 1 would make 1000000001 classes"))
case("snorkel", "one-d", snorkel_fit([0, 1, 1]), error(r"L_train must be 2-d .* shape \(3,\)"))


# ---------------------------------------------------------------------------- the command line
def cli_aggregate(text: str, *flags: str, expect_code: int = 1):
    def run(tmp_path):
        from crowd_keras.cli import main
        src = tmp_path / "answers.csv"
        src.write_text(text)
        code = main(["aggregate", str(src), "--out", str(tmp_path / "labels.csv"), "--quiet",
                     "--method", "mv", *flags])
        if code != 0:
            assert code == expect_code and not (tmp_path / "labels.csv").exists()
            raise CrowdDataError("exit code %d" % code)
        return pd.read_csv(tmp_path / "labels.csv")
    return run


case("cli", "label-10**9", cli_aggregate("task,worker,label\na,u,1\nb,u,1000000000\nc,v,0\n"),
     accept(lambda out: out["label"].tolist() == [1, 1000000000, 0]))
for name, text, flags in (("missing-annotator", "task,worker,label\na,u,1\nb,,1\n", ()),
                          ("duplicate", "task,worker,label\na,u,1\na,u,0\n", ()),
                          ("negative-label", "task,worker,label\na,u,1\nb,u,-1\n", ()),
                          ("fraction-label", "task,worker,label\na,u,1\nb,u,0.5\n", ()),
                          ("unknown-column", "task,worker,label\na,u,1\n", ("--label", "answer"))):
    case("cli", name, cli_aggregate(text, *flags), error(r"exit code 1"))


# ---------------------------------------------------------------------------- the tests
def test_corpus_size_and_tally():
    outcomes = {}
    for family, _, (kind, _) in CASES.values():
        outcomes.setdefault(kind, 0)
        outcomes[kind] += 1
    families = {family for family, _, _ in CASES.values()}
    assert len(CASES) >= 150, len(CASES)
    assert {"json", "json_min", "csv", "tsv", "frame", "dense", "label_matrix", "snorkel",
            "cli"} <= families
    assert outcomes["accept"] >= 10 and outcomes["error"] >= 140, outcomes


@pytest.mark.parametrize("key", sorted(CASES))
def test_malformed_input(key, tmp_path, capsys):
    family, run, (kind, expected) = CASES[key]
    if kind == "accept":
        assert expected(run(tmp_path)) is True
        return
    with pytest.raises(CrowdDataError) as info:
        run(tmp_path)
    text = str(info.value)
    assert type(info.value) is CrowdDataError and isinstance(info.value, ValueError)
    assert re.search(expected, text), f"{text!r} does not match {expected!r}"
    if family in ("json", "json_min", "csv", "tsv"):  # the file is named
        assert str(tmp_path / "export") in text, text
    if family == "cli":  # a located message on stderr, never a traceback
        err = capsys.readouterr().err
        assert "answers.csv" in err and "Traceback" not in err
        assert re.search(r"line \d|no column 'answer' \(--label\)", err), err


# ---------------------------------------------------------------------------- CLI files, flags
# Issue 45 point 3: an output path that is an input or another output (after resolving links),
# and a numeric flag out of range, are refused before any work: nothing is written, no server is
# contacted, the input keeps its bytes. (name, argv with {dir} and the files below, exit code,
# message regex on stderr)
ANSWERS = "task,worker,label\na,u,1\nb,v,0\nb,u,1\n"
EXPORT = DATA / "demo.json"
_SAME = r"is the same file as {}"
_TWO = r"are the same file: one output would overwrite the other"
CLI_FILE_CASES = [
    ("aggregate-out-is-input", ["aggregate", "{dir}/answers.csv", "--out", "{dir}/answers.csv"],
     1, r"--out '.*answers\.csv' " + _SAME.format("the input file")),
    ("aggregate-out-is-symlink-to-input",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/link.csv"], 1,
     r"--out '.*link\.csv' " + _SAME.format(r"the input file '.*answers\.csv' \(both are")),
    ("aggregate-out-is-hard-link-to-input",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/hard.csv"], 1,
     r"--out '.*hard\.csv' " + _SAME.format("the input file")),
    ("aggregate-out-through-dot-dot",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/sub/../answers.csv"], 1,
     _SAME.format("the input file")),
    ("aggregate-annotators-is-out",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/o.csv", "--annotators", "{dir}/./o.csv"],
     1, r"--annotators '.*o\.csv' and --out '.*o\.csv' " + _TWO),
    ("aggregate-annotators-is-input",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/o.csv", "--annotators",
      "{dir}/link.csv"], 1, r"--annotators .*" + _SAME.format("the input file")),
    ("ls-out-is-export", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                          "{dir}/export.json"], 2,
     r"--out '.*export\.json' " + _SAME.format("the export")),
    ("ls-out-is-export-with-url", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                                   "{dir}/export.json", "--url", "http://127.0.0.1:9",
                                   "--project", "1", "--retries", "0"], 2,
     _SAME.format("the export")),
    ("ls-report-json-is-export", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                                  "{dir}/p.json", "--annotators", "{dir}/export.csv"], 2,
     r"the JSON report '.*export\.json' " + _SAME.format("the export")),
    ("ls-annotators-json-is-export", ["label-studio", "aggregate", "{dir}/export.json",
                                      "--out", "{dir}/p.json", "--annotators", "{dir}/a.csv",
                                      "--annotators-json", "{dir}/export-link.json"], 2,
     r"--annotators-json '.*export-link\.json' " + _SAME.format("the export")),
    ("ls-out-is-label-config", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                                "{dir}/config.xml", "--label-config", "{dir}/config.xml"], 2,
     r"--out '.*config\.xml' " + _SAME.format("--label-config")),
    ("ls-out-is-report-json", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                               "{dir}/r.json", "--annotators", "{dir}/r.csv"], 2,
     r"the JSON report '.*r\.json' and --out '.*r\.json' " + _TWO),
    ("ls-out-is-annotators", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                              "{dir}/r.csv", "--annotators", "{dir}/r.csv"], 2,
     r"--annotators '.*r\.csv' and --out '.*r\.csv' " + _TWO),
]
for _flag, _value, _low in (("--retries", "-1", 0), ("--retries", "two", 0),
                            ("--retries", "1.5", 0), ("--batch-size", "0", 1),
                            ("--batch-size", "-3", 1), ("--project", "0", 1),
                            ("--project", "-5", 1), ("--project", "1e3", 1)):
    CLI_FILE_CASES.append(
        (f"ls{_flag}={_value}", ["label-studio", "aggregate", "{dir}/export.json", "--out",
                                 "{dir}/p.json", "--url", "http://127.0.0.1:9", "--project", "1",
                                 _flag, _value], 2,
         rf"argument {_flag}: must be an integer >= {_low}, got '{re.escape(_value)}'"))
for _flag, _value, _low in (("--items", "0", 1), ("--annotators", "-1", 1), ("--classes", "1", 2),
                            ("--per-item", "0", 1), ("--seed", "-1", 0), ("--items", "2k", 1)):
    CLI_FILE_CASES.append((f"demo{_flag}={_value}", ["demo", _flag, _value], 2,
                           rf"argument {_flag}: must be an integer >= {_low}, got '{_value}'"))
CLI_FILE_CASES.append(("demo-per-item-above-annotators",
                       ["demo", "--per-item", "9", "--annotators", "3"], 1,
                       r"--per-item 9 exceeds --annotators 3"))


@pytest.mark.parametrize("name,argv,code,pattern", CLI_FILE_CASES,
                         ids=[c[0] for c in CLI_FILE_CASES])
def test_cli_refuses_clashing_paths_and_bad_numbers_before_any_work(name, argv, code, pattern,
                                                                    tmp_path, capsys):
    import os

    from crowd_keras.cli import main
    (tmp_path / "answers.csv").write_text(ANSWERS)
    (tmp_path / "link.csv").symlink_to(tmp_path / "answers.csv")
    os.link(tmp_path / "answers.csv", tmp_path / "hard.csv")
    (tmp_path / "sub").mkdir()
    (tmp_path / "export.json").write_bytes(EXPORT.read_bytes())
    (tmp_path / "export-link.json").symlink_to(tmp_path / "export.json")
    (tmp_path / "config.xml").write_bytes(CONFIG.read_bytes())
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    try:
        got = main([a.format(dir=tmp_path) for a in argv] + ["--quiet"])
    except SystemExit as exc:  # argparse: bad usage
        got = exc.code
    err = capsys.readouterr().err
    assert got == code, err
    assert re.search(pattern, err), f"{err!r} does not match {pattern!r}"
    assert "Traceback" not in err and "failed" not in err  # no server was contacted
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before  # nothing written, nothing overwritten
