"""The malformed-input corpus (issue 19): one table of cases, each either a typed, located error
or an input rightly accepted and counted.

Families: Label Studio full JSON, JSON_MIN, CSV and TSV exports (mutations of the committed
fixtures, each written to a file whose name the message must carry), long frames
(``Annotations.from_frame``), dense matrices (``from_dense``), Snorkel label matrices
(``from_label_matrix`` and ``CrowdLabelModel.fit``), the ``crowd-keras aggregate`` command,
and (issue 45) the Dask reader (``distributed.aggregate``: the in-memory message, the
frame's row, stable across runs), the Keras layers, losses and ``CrowdModel`` data path,
saved files (``CrowdLabelModel.load``) and spans (``SequenceAnnotations``, tokenizers,
Label Studio span regions); then (issue 45, round three) the label models' ``fit``
arguments (``pred_probs``, ``gold``, settings), ``features.out_of_fold``, wide frames,
quality scores, ``to_cleanlab``, the readers' and agreement functions' arguments, the
Snorkel adapter's ``score``/``save``/``load``, the span converters and labeling functions,
and the command lines' input files, outputs and flags they would ignore (``cli_input``).
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
from crowd_keras.errors import NotFittedError

DATA = Path(__file__).parent / "data" / "label_studio"
CONFIG = DATA / "config.xml"
CASES: dict = {}  # id -> (family, run(tmp_path) -> result, expectation)


def error(pattern: str, exc: type = CrowdDataError) -> tuple:
    """An error case: ``exc`` exactly (CrowdDataError, or ValueError/TypeError where Keras'
    own layers raise those) and a message matching ``pattern``."""
    return ("error", pattern, exc)


def accept(check) -> tuple:
    return ("accept", check, None)


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
             error(rf"task 2, annotation 4 \(user [^)]+\): '{key}' must be true or false, got {shown(v)}"))

for key, v in (("updated_at", 17), ("updated_at", "yesterday"), ("updated_at", "2024-13-45"),
               ("created_at", ["2024-01-01"])):
    def drop_updated(data, key=key, v=v):
        if key == "created_at":
            for a in data[1]["annotations"]:
                a.pop("updated_at", None)
        data[1]["annotations"][0][key] = v
    pattern = (rf"'{key}' must be a date-time string" if not isinstance(v, str)
               else rf"unreadable date-time {shown(v)}")
    case("json", f"{key}-{v!r}", full(drop_updated), error(r"task 2, annotation 4 \(user [^)]+\): " + pattern))

for v in ("positive", [1], [["positive"]], None, {"a": 1}):
    case("json", f"choices-{v!r}",
         full(_set([0, "annotations", 0, "result", 0, "value", "choices"], v)),
         error(r"task 1, annotation 1 \(user [^)]+\): control 'sentiment' value.choices must be a list of "
               r"strings, got " + shown(v)))
for v in ("five", 2.5, None, [3], True):
    case("json", f"rating-{v!r}",
         full(_set([0, "annotations", 0, "result", 2, "value", "rating"], v), control="quality"),
         error(r"task 1, annotation 1 \(user [^)]+\): control 'quality' value.rating must be an integer, got "
               + shown(v)))
for v in (0, 6, 99):
    case("json", f"rating-out-of-range-{v}",
         full(_set([0, "annotations", 0, "result", 2, "value", "rating"], v), control="quality",
              label_config=CONFIG),
         error(rf"task 1, annotation 1 \(user [^)]+\): rating {v} is outside 1..5"))

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
         error(r"task 1, annotation 1 \(user [^)]+\), result item 0:? " + pattern))
case("json", "result-item-not-object", full(_set([0, "annotations", 0, "result", 0], "positive")),
     error(r"task 1, annotation 1 \(user [^)]+\), result item 0 is not an object \(got str\)"))
case("json", "result-not-list", full(_set([0, "annotations", 0, "result"], {"a": 1})),
     error(r"task 1, annotation 1 \(user [^)]+\): 'result' must be a list, got dict"))
case("json", "annotations-not-list", full(_set([2, "annotations"], "none")),
     error(r"task 3: 'annotations' must be a list, got str"))
case("json", "annotation-not-object", full(_set([2, "annotations", 1], 5)),
     error(r"task 3, annotation at position 1 is not an object \(got int\)"))
case("json", "value-not-in-config",
     full(_set([0, "annotations", 0, "result", 0, "value", "choices"], ["great"]),
          label_config=CONFIG),
     error(r"task 1, annotation 1 \(user [^)]+\): value 'great' of control 'sentiment' is not in the "
           r"labeling config"))
case("json", "type-differs-in-one-result",
     full(_set([1, "annotations", 0, "result", 0, "type"], "rating")),
     error(r"task 2, annotation 4 \(user [^)]+\): a result of control 'sentiment' has type 'rating', "
           r"expected 'choices'"))
case("json", "several-choices", full(lambda d: None, control="topics"),
     error(r"task 1, annotation 2 \(user [^)]+\): 2 choices \['sports', 'tech'\] for control 'topics'"))


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
     error(r"item 'q' at row 2 \(annotator 'u'\) is not in item_ids"))
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


# ---------------------------------------------------------------------------- frames (issue 45)
case("frame", "two-label-columns",
     lambda tmp_path: Annotations.from_frame(pd.DataFrame(
         [["a", "u", 0, 1], ["b", "v", 1, 0]], columns=["task", "worker", "label", "label"])),
     error(r"frame has 2 columns named 'label' \(the label column\)"))
case("frame", "item-column-is-annotator-column",
     lambda tmp_path: Annotations.from_frame(pd.DataFrame(
         {"task": ["a", "b", "a"], "label": [0, 1, 0]}), annotator="task"),
     error(r"column 'task' is given as both the item and the annotator column"))


# ---------------------------------------------------------------------------- Dask frames
def _crowd(n_items=10, per_item=4):
    """Items 0..9, each annotated by annotators 0..3: row 4 i + a is (item i, annotator a)."""
    return pd.DataFrame({"task": np.repeat(np.arange(n_items), per_item),
                         "worker": np.tile(np.arange(per_item), n_items),
                         "label": np.tile([0, 1, 2, 1], n_items)})


def dask_frame(mutate=None, npartitions=3, compare=True, **kwargs):
    """``distributed.aggregate`` (threaded scheduler) on ``dd.from_pandas`` of a mutated
    frame: run twice (the message must not change between runs) and, with ``compare``,
    the message must equal ``Annotations.from_frame``'s on the same pandas frame."""
    def run(tmp_path):
        dask = pytest.importorskip("dask")
        dd = pytest.importorskip("dask.dataframe")
        from crowd_keras.distributed import aggregate
        df = _crowd()
        if mutate is not None:
            df = mutate(df)
        messages = []
        with dask.config.set(scheduler="threads"):
            for _ in range(2):
                try:
                    result = aggregate(dd.from_pandas(df, npartitions=npartitions),
                                       method="majority_vote", **kwargs)
                except CrowdDataError as exc:
                    messages.append(str(exc))
                else:
                    return result
        assert messages[0] == messages[1], messages
        if compare:
            with pytest.raises(CrowdDataError) as memory:
                Annotations.from_frame(df)
            assert str(memory.value) == messages[0], (str(memory.value), messages[0])
        raise CrowdDataError(messages[0])
    return run


def _set_cell(column, row, value):
    def mutate(df):
        df = df.astype({column: object})
        df.loc[row, column] = value
        return df
    return mutate


for column, row, value, pattern in (
        ("label", 7, 1.5, r"non-integer label 1.5 at row 7 \(item 1, annotator 3\)"),
        ("label", 37, "x", r"labels mix types: int 0 at row 0 .* and str 'x' at row 37"),
        ("label", 29, -1, r"negative label -1 at row 29 \(item 7, annotator 1\)"),
        ("label", 33, 10 ** 30, r"label 10+ at row 33 .* too large"),
        ("label", 17, None, r"missing value \(NaN/None\) in column 'label' at row 17 "
                            r"\(item 4, annotator 1\)"),
        ("label", 18, [1], r"label \[1\] at row 18 \(item 4, annotator 2\) is a list"),
        ("worker", 17, None, r"missing value \(NaN/None\) in column 'worker' at row 17 "
                             r"\(item 4\)"),
        ("worker", 37, "1", r"annotators mix types: int 0 at row 0 \(item 0\) and str '1' at "
                            r"row 37 \(item 9\)"),
        ("task", 17, np.nan, r"missing value \(NaN/None\) in column 'task' at row 17 "
                             r"\(annotator 1\)"),
        ("task", 25, "6", r"items mix types: int 0 at row 0 .* and str '6' at row 25")):
    case("dask", f"{column}-{value!r}-row-{row}", dask_frame(_set_cell(column, row, value)),
         error(pattern))
case("dask", "label-x-in-its-own-partition",
     dask_frame(lambda df: df.assign(label=pd.Series([0] * 36 + ["x"] * 4, dtype=object))),
     error(r"labels mix types: int 0 at row 0 \(item 0, annotator 0\) and str 'x' at row 36 "
           r"\(item 9, annotator 0\)"))
case("dask", "duplicate-across-partitions",
     dask_frame(lambda df: df.assign(task=np.where(df.index == 37, 0, df["task"]))),
     error(r"1 duplicate \(item, annotator\) annotation\(s\); first: item 0, annotator 1 at row "
           r"1 and row 37"))
case("dask", "no-rows", dask_frame(lambda df: df.iloc[:0]), error(r"^frame has no annotations$"))
case("dask", "two-label-columns",
     dask_frame(lambda df: pd.concat([df, df[["label"]]], axis=1)),
     error(r"frame has 2 columns named 'label'"))
case("dask", "item-column-is-annotator-column", dask_frame(annotator="task", compare=False),
     error(r"column 'task' is given as both the item and the annotator column"))
case("dask", "item-partitioned-claim-false",
     dask_frame(lambda df: df.sample(frac=1, random_state=1).reset_index(drop=True),
                compare=False, item_partitioned=True),
     error(r"item_partitioned=True, but the annotations of item \d+ lie in partitions "
           r"\[\d+, \d+(, \d+)?\] \(\d+ item\(s\) split over partitions\)"))
case("dask", "pandas-frame-given",
     lambda tmp_path: __import__("crowd_keras.distributed", fromlist=["aggregate"]).aggregate(
         _crowd()),
     error(r"expected a Dask DataFrame, got pandas.*DataFrame", TypeError))
case("dask", "item-partitioned-claim-true",
     dask_frame(npartitions=2, item_partitioned=True),   # rows by item: 20 | 20
     accept(lambda r: (r.n_items, r.n_annotations) == (10, 40)))
case("dask", "object-integer-labels-stay-integers",
     dask_frame(lambda df: df.astype({"label": object})),
     accept(lambda r: r.classes.tolist() == [0, 1, 2] and r.n_items == 10))


for name, kwargs, pattern, exc in (
        ("gold-item-twice", {"gold": pd.Series([0, 1], index=[1, 1])},
         r"^gold item 1 is given more than once \(1 repeat\(s\)\)", CrowdDataError),
        ("gold-a-frame", {"gold": pd.DataFrame({"task": [1], "label": [0]})},
         r"gold must be a mapping item -> label .*got DataFrame \(a frame of item and label "
         r"columns", CrowdDataError),
        ("gold-a-list-label", {"gold": {1: [0]}},
         r"^gold label \[0\] of item 1 is not one of the classes \[0, 1, 2\]$", CrowdDataError),
        ("gold-codes-array", {"gold": np.full(10, -1)},
         r"gold must be a mapping .* got ndarray \(class codes aligned with the items need the "
         r"annotations in memory\)", CrowdDataError),
        ("gold-unknown-item-named-plainly", {"gold": {99: 1}},
         r"^gold item 99 is not an item of the annotations$", CrowdDataError),
        ("max_iter-2.5", {"max_iter": 2.5},
         r"^DawidSkene max_iter must be an integer >= 0 .* got float 2.5$", TypeError),
        ("item_partitioned-a-string", {"item_partitioned": "no"},
         r"item_partitioned must be True or False, got str 'no'", TypeError),
        ("classes-twice", {"classes": [0, 1, 1]},
         r"class ids must be unique; class id 1 at position 2 repeats position 1",
         CrowdDataError)):
    method = {"method": "dawid_skene"} if name.startswith(("gold", "max_iter")) else {}

    def run(tmp_path, kwargs=kwargs, method=method):
        dask = pytest.importorskip("dask")
        dd = pytest.importorskip("dask.dataframe")
        from crowd_keras.distributed import aggregate
        with dask.config.set(scheduler="threads"):
            return aggregate(dd.from_pandas(_crowd(), npartitions=3),
                             **{"method": "majority_vote", **method}, **kwargs)
    case("dask", name, run, error(pattern, exc))


# ---------------------------------------------------------------------------- Keras
def keras_call(build):
    """``build(layers, losses, np)`` makes and calls a layer, loss or model on tiny arrays."""
    def run(tmp_path):
        pytest.importorskip("keras")
        import crowd_keras.layers as layers
        import crowd_keras.losses as losses
        return build(layers, losses)
    return run


P3 = np.full((2, 3), 1 / 3, "float32")       # (batch, K=3) class probabilities
IDS = {"-2": [[0, -2], [1, 2]], "1.7": [[0, 1.7], [1, 2]], "4": [[0, 3], [4, 2]],
       "nan": [[0, np.nan], [1, 2]]}
IDS_PATTERN = {"-2": r"annotator id -2 at \(0, 1\) is below -1",
               "1.7": r"annotator id 1.7 at \(0, 1\) is not an integer code",
               "4": r"annotator id 4 at \(1, 0\) is outside 0..3 \(num_annotators=4",
               "nan": r"annotator id nan at \(0, 1\) is not an integer code"}
for name, ids in IDS.items():
    a = np.array(ids)
    case("keras", f"crowd-layer-ids-{name}",
         keras_call(lambda L, _, a=a: L.CrowdLayer(4)([P3, a])),
         error(r"CrowdLayer annotator_ids: " + IDS_PATTERN[name]))
    case("keras", f"common-noise-ids-{name}",
         keras_call(lambda L, _, a=a: L.CommonNoiseAdaptation(4, 3, omega=0.5)([P3, a])),
         error(r"CommonNoiseAdaptation annotator_ids: " + IDS_PATTERN[name]))
    case("keras", f"mixture-of-groups-ids-{name}",
         keras_call(lambda L, _, a=a: L.MixtureOfGroups(2, 3, num_annotators=4)([P3, a])),
         error(r"MixtureOfGroups annotator_ids: " + IDS_PATTERN[name]))
case("keras", "crowd-layer-ids-list",
     keras_call(lambda L, _: L.CrowdLayer(4)([P3, [[0, 1], [9, -1]]])),
     error(r"annotator id 9 at \(1, 0\) is outside 0..3"))
case("keras", "crowd-layer-ids-eager-tensor",
     keras_call(lambda L, _: L.CrowdLayer(4)([P3, __import__("keras").ops.convert_to_tensor(
         np.array([[0, 1], [-2, -1]]))])),
     error(r"annotator id -2 at \(1, 0\) is below -1"))
case("keras", "regression-layer-ids-3",
     keras_call(lambda L, _: L.CrowdRegressionLayer(3)([np.zeros((2, 1), "float32"),
                                                        np.array([[0, 3], [1, 1]])])),
     error(r"CrowdRegressionLayer annotator_ids: annotator id 3 at \(0, 1\) is outside 0..2"))
case("keras", "annotator-gate-ids",
     keras_call(lambda L, _: L.AnnotatorGate(3)([P3, np.array([[0, 5]])])),
     error(r"AnnotatorGate annotator_ids: annotator id 5 at \(0, 1\) is outside 0..2"))
case("keras", "padding-accepted",
     keras_call(lambda L, _: L.CrowdLayer(4)([P3, np.array([[0, -1], [3, 2]])])),
     accept(lambda out: tuple(out.shape) == (2, 2, 3)))


def _lia(build):
    def run(tmp_path):
        pytest.importorskip("keras")
        from crowd_keras.lia import layers, losses
        return build(layers, losses)
    return run


case("keras", "lia-competence-ids",
     _lia(lambda L, _: L.DifficultyCompetence(3, num_annotators=2)(
         [np.zeros((2, 4), "float32"), np.array([[0, 2], [1, -1]])])),
     error(r"DifficultyCompetence annotator_ids: annotator id 2 at \(0, 1\) is outside 0..1"))
case("keras", "lia-instance-index",
     _lia(lambda L, _: L.InstanceEmbedding(10, 2)(np.array([1, 10]))),
     error(r"InstanceEmbedding inputs: instance index 10 at \(1,\) is outside 0..9"))
case("keras", "lia-labels--2",
     _lia(lambda L, _: L.AnnotationLogLikelihoods()(
         [P3, np.zeros((2, 2, 3, 3), "float32"), np.array([[0, -2], [1, 1]])])),
     error(r"AnnotationLogLikelihoods labels: label -2 at \(0, 1\) is below -1"))
case("keras", "lia-marginal-nll-labels--2",
     _lia(lambda _, losses: losses.MarginalNLL()(np.array([[0, -2], [1, 1]]),
                                                 np.zeros((2, 3, 3), "float32"))),
     error(r"lia_marginal_nll y_true: label -2 at \(0, 1\) is below -1"))
for value, pattern in ((-2, r"label -2 at \(0, 1\) is below -1 .* the only code for a missing"),
                       (3, r"label 3 at \(0, 1\) is outside 0..2 \(3 classes"),
                       (1.5, r"label 1.5 at \(0, 1\) is not an integer code")):
    case("keras", f"masked-cross-entropy-label-{value}",
         keras_call(lambda _, losses, v=value: losses.MaskedMultiCrossEntropy()(
             np.array([[0, v]]), np.zeros((1, 2, 3), "float32"))),
         error(r"masked_multi_cross_entropy y_true: " + pattern))
case("keras", "masked-cross-entropy-missing-accepted",
     keras_call(lambda _, losses: losses.MaskedMultiCrossEntropy()(
         np.array([[0, -1]]), np.zeros((1, 2, 3), "float32"))),
     accept(lambda loss: bool(abs(float(loss) - np.log(3)) < 1e-5)))

for name, make, argument in (
        ("crowd-layer-2.5", lambda L: L.CrowdLayer(2.5), "num_annotators=2.5"),
        ("crowd-layer-True", lambda L: L.CrowdLayer(True), "num_annotators=True"),
        ("crowd-layer-2.0", lambda L: L.CrowdLayer(2.0), "num_annotators=2.0"),
        ("crowd-layer-0", lambda L: L.CrowdLayer(0), "num_annotators=0"),
        ("regression-layer-1.5", lambda L: L.CrowdRegressionLayer(1.5), "num_annotators=1.5"),
        ("common-noise-classes-2.5", lambda L: L.CommonNoiseAdaptation(3, 2.5), "num_classes=2.5"),
        ("common-noise-annotators-'3'", lambda L: L.CommonNoiseAdaptation("3", 2),
         "num_annotators='3'"),
        ("gate-2.5", lambda L: L.AnnotatorGate(2.5), "num_annotators=2.5"),
        ("gate-embedding-0", lambda L: L.AnnotatorGate(3, embedding_dim=0), "embedding_dim=0"),
        ("mixture-groups-2.5", lambda L: L.MixtureOfGroups(2.5, 3), "num_groups=2.5"),
        ("mixture-annotators-1.5", lambda L: L.MixtureOfGroups(2, 3, num_annotators=1.5),
         "num_annotators=1.5"),
        ("loss-from-logits-'yes'", lambda L: __import__("crowd_keras.losses", fromlist=["x"])
         .MaskedMultiCrossEntropy(from_logits="yes"), "from_logits='yes'")):
    case("keras", f"argument-{name}", keras_call(lambda L, _, make=make: make(L)),
         error(r"Received an invalid value for `\w+`, expected .* Received: " +
               re.escape(argument) + "$", ValueError))
for name, make, argument in (
        ("lia-annotators-2.5", lambda L: L.DifficultyCompetence(3, num_annotators=2.5),
         "num_annotators=2.5"),
        ("lia-latent-1.5", lambda L: L.DifficultyCompetence(3, 1.5, num_annotators=2),
         "latent_dim=1.5"),
        ("lia-embedding-2.5", lambda L: L.InstanceEmbedding(2.5, 2), "input_dim=2.5")):
    case("keras", f"argument-{name}", _lia(lambda L, _, make=make: make(L)),
         error(r"Received an invalid value for `\w+`.* Received: " + re.escape(argument) + "$",
               ValueError))
case("keras", "argument-numpy-int-accepted",
     keras_call(lambda L, _: L.CrowdLayer(np.int64(3))),
     accept(lambda layer: layer.num_annotators == 3 and type(layer.num_annotators) is int))


def crowd_model_fit(ids, labels, method="fit"):
    """``CrowdModel.fit`` (or ``predict``) on 2 items, 4 annotators, 3 classes: the targets
    are checked before any training step."""
    def run(tmp_path):
        keras = pytest.importorskip("keras")
        from crowd_keras.layers import CrowdLayer
        from crowd_keras.models import CrowdModel
        clf = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, activation="softmax")])
        model = CrowdModel(clf, CrowdLayer(4))
        model.compile()
        x = np.zeros((2, 3), "float32")
        if method == "predict":
            return model.predict({"x": x, "annotator_ids": np.array(ids)}, verbose=0)
        if method == "dataset":
            from crowd_keras.inputs import annotation_dataset
            return annotation_dataset(x, (np.array(ids), np.array(labels)), num_annotators=4,
                                      num_classes=3)
        return model.fit(x, (np.array(ids), np.array(labels)), epochs=1, verbose=0)
    return run


GOOD_IDS, GOOD_LABELS = [[0, 1], [2, -1]], [[0, 2], [1, -1]]
for name, ids, labels, pattern in (
        ("ids--2", [[0, -2], [2, -1]], GOOD_LABELS,
         r"annotator_ids: annotator id -2 at \(0, 1\) is below -1"),
        ("ids-1.7", [[0, 1.7], [2, -1]], GOOD_LABELS,
         r"annotator_ids: annotator id 1.7 at \(0, 1\) is not an integer code"),
        ("ids-4", [[0, 4], [2, -1]], GOOD_LABELS,
         r"annotator_ids: annotator id 4 at \(0, 1\) is outside 0..3 \(num_annotators=4"),
        ("labels-3", GOOD_IDS, [[0, 3], [1, -1]], r"labels: label 3 at \(0, 1\) is outside 0..2"),
        ("labels--2", GOOD_IDS, [[0, -2], [1, -1]], r"labels: label -2 at \(0, 1\) is below -1"),
        ("labels-0.5", GOOD_IDS, [[0, 0.5], [1, -1]],
         r"labels: label 0.5 at \(0, 1\) is not an integer code"),
        # text in an object array: astype(float) read "2" as the code 2, silently
        ("labels-text", GOOD_IDS, np.array([[0, "2"], [1, -1]], dtype=object),
         r"labels: labels must be integer codes, got str '2' at \(0, 1\)$"),
        ("ids-None", np.array([[0, None], [2, -1]], dtype=object), GOOD_LABELS,
         r"annotator_ids: annotator id nan at \(0, 1\) is not an integer code")):
    case("keras", f"crowd-model-fit-{name}", crowd_model_fit(ids, labels),
         error(r"^padded targets " + pattern))
    case("keras", f"annotation-dataset-{name}", crowd_model_fit(ids, labels, "dataset"),
         error(r"^annotation_dataset " + pattern))
case("keras", "crowd-model-predict-ids-7", crowd_model_fit([[0, 1], [7, -1]], None, "predict"),
     error(r"inputs annotator_ids: annotator id 7 at \(1, 0\) is outside 0..3"))
case("keras", "crowd-model-fit-accepted", crowd_model_fit(GOOD_IDS, GOOD_LABELS),
     accept(lambda history: len(history.history["loss"]) == 1))


# ---------------------------------------------------------------------------- saved files
def _saved_model(tmp_path):
    from crowd_keras.integrations.snorkel import CrowdLabelModel
    L = np.array([[0, 1, -1], [1, 1, 0], [0, -1, 0], [1, 0, 1]] * 5)
    path = tmp_path / "model.npz"
    CrowdLabelModel(cardinality=2).fit(L, progress_bar=False).save(path)
    return path


def _npz_members(path):
    import zipfile
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _write_npz(path, members):
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _npy(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def _meta_of(members):
    return json.loads(str(np.load(io.BytesIO(members["__meta__.npy"]))))


def corrupt_model(mutate):
    """``CrowdLabelModel.load`` of a saved model whose bytes or members ``mutate`` changes
    (``mutate(raw bytes, members) -> bytes or members``)."""
    def run(tmp_path):
        from crowd_keras.integrations.snorkel import CrowdLabelModel
        path = _saved_model(tmp_path)
        raw = path.read_bytes()
        out = mutate(raw, _npz_members(path))
        bad = tmp_path / "bad.npz"
        if isinstance(out, bytes):
            bad.write_bytes(out)
        else:
            _write_npz(bad, out)
        return CrowdLabelModel().load(bad)
    return run


def _with_meta(change):
    def mutate(raw, members):
        meta = _meta_of(members)
        change(meta)
        return {**members, "__meta__.npy": _npy(np.array(json.dumps(meta)))}
    return mutate


def _huge_header(raw, members):
    return {**members, "weights.npy": members["weights.npy"].replace(b"(3,)", b"(134217728,)")}


def _flip_weights_byte(raw, members):
    data = bytearray(raw)
    data[raw.index(b"weights.npy") + len("weights.npy") + 140] ^= 0xFF
    return bytes(data)


for name, mutate, pattern in (
        ("truncated-half", lambda raw, m: raw[:len(raw) // 2],
         r"bad.npz is not a saved CrowdLabelModel: not a readable zip archive, perhaps truncated"),
        ("truncated-tail", lambda raw, m: raw[:-10], r"not a readable zip archive"),
        ("empty", lambda raw, m: b"", r"bad.npz is not a saved CrowdLabelModel \(not an .npz"),
        ("pickle", lambda raw, m: b"\x80\x04" + raw, r"bad.npz is a pickle"),
        ("header-claims-1-GiB", _huge_header,
         r"member 'weights': its header claims shape \(134217728,\) of float64 \(1073741824 "
         r"bytes\) but \d+ bytes of data follow it"),
        ("crc-mismatch", _flip_weights_byte, r"member 'weights': unreadable \(BadZipFile: Bad "
                                             r"CRC-32"),
        ("object-array", lambda raw, m: {**m, "weights.npy": _npy(np.array([1, "a"], object))},
         r"member 'weights': holds Python objects"),
        ("broken-json", lambda raw, m: {**m, "__meta__.npy": _npy(np.array('{"format": '))},
         r"the metadata \(__meta__\) is not valid JSON \(Expecting value: line 1 column 12"),
        ("meta-not-object", lambda raw, m: {**m, "__meta__.npy": _npy(np.array("[1, 2]"))},
         r"the metadata must be a JSON object, got list"),
        ("meta-missing", lambda raw, m: {k: v for k, v in m.items() if k != "__meta__.npy"},
         r"is not a saved CrowdLabelModel \(no __meta__ entry\)"),
        ("weights-missing", lambda raw, m: {k: v for k, v in m.items() if k != "weights.npy"},
         r"the saved model has no 'weights' entry"),
        ("weights-wrong-shape", lambda raw, m: {**m, "weights.npy": _npy(np.zeros(5))},
         r"entry 'weights' has shape \(5,\) of float64, expected floats of shape \(3,\)"),
        ("cardinality-text", _with_meta(lambda d: d.update(cardinality="2")),
         r"metadata entry 'cardinality' must be an integer, got '2'"),
        ("models-missing", _with_meta(lambda d: d.pop("models")),
         r"metadata entry 'models' must be an object, got None"),
        ("unknown-model", _with_meta(lambda d: d["models"]["model"].update(name="nope")),
         r"metadata model 'model' \('nope'\) cannot be rebuilt: unknown label model 'nope'"),
        ("bad-model-param", _with_meta(lambda d: d["models"]["model"]["params"].update(bogus=1)),
         r"metadata model 'model' .* cannot be rebuilt"),
        ("class-balance-text", _with_meta(lambda d: d.update(class_balance="0.5,0.5")),
         r"metadata 'class_balance' must be null or 2 numbers, got '0.5,0.5'")):
    case("files", f"snorkel-load-{name}", corrupt_model(mutate), error(pattern))
case("files", "snorkel-load-round-trip", corrupt_model(lambda raw, m: raw),
     accept(lambda model: model.weights_.shape == (3,) and model.cardinality == 2))


def _snorkel_fit_balance(balance):
    def run(tmp_path):
        from crowd_keras.integrations.snorkel import CrowdLabelModel
        L = np.array([[0, 1, -1], [1, 1, 0]] * 5)
        return CrowdLabelModel(cardinality=2).fit(L, class_balance=balance, progress_bar=False)
    return run


case("snorkel", "class-balance-string", _snorkel_fit_balance("0.5,0.5"),
     error(r"class_balance must be 2 numbers \(a list or an array\), got the string '0.5,0.5'"))
case("snorkel", "class-balance-dict", _snorkel_fit_balance({"a": 0.5}),
     error(r"class_balance must be 2 numbers \(a list or an array\), got \{'a': 0.5\}"))


def _shards(text):
    def run(tmp_path):
        from crowd_keras.distributed.shards import SHARDS_FILE, read_shards
        (tmp_path / SHARDS_FILE).write_text(text)
        return read_shards(tmp_path)
    return run


case("files", "shards-broken-json", _shards('{"format": "crowd-keras'),
     error(r"the shard description is not valid JSON"))
case("files", "shards-rows-mismatch",
     _shards(json.dumps({"format": "crowd-keras/shards", "files": ["a.parquet"], "rows": []})),
     error(r"is not a crowd-keras shard description|'files' must list file names and 'rows'"))


def _wrench(text):
    def run(tmp_path):
        from crowd_keras.datasets import loaders
        (tmp_path / "train.json").write_text(text)
        return loaders.load_wrench(tmp_path)
    return run


case("files", "wrench-broken-json", _wrench('{"0": {"weak_labels": [0, -1], "label": 1'),
     error(r"train.json: a WRENCH split is not valid JSON"))
case("files", "wrench-no-records", _wrench('{}'),
     error(r"train.json: a WRENCH split with no records"))
case("files", "wrench-record-without-label", _wrench('{"0": {"weak_labels": [0, -1]}}'),
     error(r"train.json: a WRENCH split maps ids to records holding 'weak_labels' and 'label'"))
case("files", "wrench-ragged-votes",
     _wrench('{"0": {"weak_labels": [0, -1], "label": 1}, "1": {"weak_labels": [0], "label": 0}}'),
     error(r"train.json: record '1' has 1 weak_labels, record '0' has 2"))


def _npy_file(mutate):
    def run(tmp_path):
        from crowd_keras.files import read_npy
        path = tmp_path / "x.npy"
        path.write_bytes(mutate(_npy(np.arange(6.0).reshape(2, 3))))
        return read_npy(path)
    return run


case("files", "npy-header-claims-80-GB",
     _npy_file(lambda raw: raw.replace(b"(2, 3)", b"(99999, 99999)")),
     error(r"x.npy: its header claims shape \(99999, 99999\) of float64 \(79998400008 bytes\) "
           r"but 56 bytes of data follow it"))
case("files", "npy-truncated", _npy_file(lambda raw: raw[:-5]),
     error(r"x.npy: its header claims shape \(2, 3\) .* but 43 bytes of data follow it"))
case("files", "npy-not-npy", _npy_file(lambda raw: b"garbage"),
     error(r"x.npy: not a readable .npy file"))
case("files", "npy-object", _npy_file(lambda raw: _npy(np.array([1, "a"], dtype=object))),
     error(r"x.npy: holds Python objects"))
case("files", "npy-round-trip", _npy_file(lambda raw: raw),
     accept(lambda a: a.shape == (2, 3) and bool(a[1, 2] == 5.0)))


# ---------------------------------------------------------------------------- spans
SPAN_TEXTS = ["the cat sat", "a dog ran far"]


def sequence(spans, **kwargs):
    def run(tmp_path):
        from crowd_keras.sequences.annotations import SequenceAnnotations
        return SequenceAnnotations.from_spans(SPAN_TEXTS, pd.DataFrame(spans), **kwargs)
    return run


def _span_rows(**change):
    rows = {"doc": [0, 1, 1], "annotator": ["a", "a", "b"], "start": [4, 2, 0], "end": [7, 5, 1]}
    for key, (i, value) in change.items():
        rows[key] = pd.Series(rows[key], dtype=object)
        rows[key][i] = value
    return rows


for key, value, pattern in (
        ("end", 10 ** 30, r"span row 1: end 10+ is too large for a character offset \(beyond "
                          r"2\*\*53\)"),
        ("start", 2 ** 63, r"span row 1: start 9223372036854775808 is too large"),
        ("end", 1e300, r"span row 1: end 1e\+300 is too large"),
        ("start", -3, r"span row 1: negative start \(start -3, end 5\)"),
        ("start", 2.5, r"span row 1: start must be an integer character offset, got 2.5"),
        ("start", True, r"span row 1: start must be an integer character offset, got True"),
        ("end", "x", r"span row 1: end must be an integer character offset, got 'x'"),
        ("end", 1, r"span row 1: end before start \(start 2, end 1\)"),
        ("annotator", 1, r"annotators mix types: str 'a' at span row 0 and int 1 at span row 1"),
        ("annotator", None, r"span row 1: missing annotator id")):
    case("spans", f"{key}-{value!r}", sequence(_span_rows(**{key: (1, value)})), error(pattern))
case("spans", "annotators-1-and-'1'",
     sequence({"doc": [0, 1], "annotator": pd.Series([1, "1"], dtype=object), "start": [4, 2],
               "end": [7, 5]}),
     error(r"annotators mix types: int 1 at span row 0 and str '1' at span row 1"))
case("spans", "labels-empty", sequence(_span_rows(), labels=[]),
     error(r"labels is empty: give at least one span label"))
case("spans", "labels-None", sequence(_span_rows(), labels=["span", None]),
     error(r"missing label id \(None\) at labels\[1\]"))
case("spans", "start-a-column-of-strings",        # pandas' str dtype, not object
     sequence({"doc": [0, 1], "annotator": ["a", "a"], "start": ["4", "2"], "end": [7, 5]}),
     error(r"span row 0: start must be an integer character offset, got '4'"))
case("spans", "end-past-text-clipped", sequence(_span_rows(end=(1, 99))),
     accept(lambda s: s.summary.past_text_clipped == 1 and s.summary.spans_used == 3))
for name, tokenizer, pattern in (
        ("str.split", str.split, r"document 0, token 0: tokenizer split gave str 'the' \(strings, "
                                 r"as str.split gives"),
        ("triples", lambda t: [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", t)],
         r"document 0, token 0: tokenizer <lambda> gave tuple \(0, 3, 'the'\) \(a \(start, end, "
         r"text\) triple"),
        ("float-offsets", lambda t: [(float(a), b) for a, b in
                                     (m.span() for m in re.finditer(r"\S+", t))],
         r"gave tuple \(0.0, 3\) \(offsets must be non-negative integers"),
        ("huge-offsets", lambda t: [(0, 10 ** 30)], r"gave tuple \(0, 10+\)"),
        ("one-string", lambda t: t, r"document 0: tokenizer <lambda> returned str 'the cat sat'"),
        ("overlapping", lambda t: [(0, 3), (2, 5)],
         r"document 0, token 1: the tokenizer's token \(2, 5\) overlaps")):
    case("spans", f"tokenizer-{name}", sequence(_span_rows(), tokenizer=tokenizer),
         error(pattern + r".*(a tokenizer is a callable text -> iterable of \(start, end\)|$)"))
case("spans", "tokenizer-regex-accepted",
     sequence(_span_rows(), tokenizer=lambda t: [m.span() for m in re.finditer(r"\w+", t)]),
     accept(lambda s: s.n_tokens == 7))

LS_SPAN_CONFIG = ('<View><Text name="text" value="$text"/><Labels name="label" toName="text">'
                  '<Label value="PER"/><Label value="LOC"/></Labels></View>')
LS_TEXT = "John met Mary in Paris"


def ls_spans(mutate, **kwargs):
    def region(start, end, label="PER"):
        return {"from_name": "label", "to_name": "text", "type": "labels",
                "value": {"start": start, "end": end, "text": LS_TEXT[start:end],
                          "labels": [label]}}

    data = [{"id": 1, "data": {"text": LS_TEXT}, "annotations": [
        {"id": 10, "completed_by": 1, "result": [region(0, 4), region(9, 13)]},
        {"id": 11, "completed_by": 2, "result": [region(0, 4), region(17, 22, "LOC")]}]}]
    mutate(data)

    def run(tmp_path):
        from crowd_keras.integrations import label_studio as ls
        path = tmp_path / "export.json"
        path.write_text(json.dumps(data))
        return ls.read_export(path, **kwargs)
    return run


for key, value, pattern in (
        ("end", 10 ** 30, r"task 1, annotation 11 \(user [^)]+\), span 1: end 1.000e\+30 is too large for a "
                          r"character offset"),
        ("start", -(10 ** 30), r"task 1, annotation 11 \(user [^)]+\), span 1: start -1.000e\+30 is too large"),
        ("start", 2 ** 60, r"task 1, annotation 11 \(user [^)]+\), span 1: start 1152921504606846976 is too "
                           r"large"),
        ("end", 1e300, r"task 1, annotation 11 \(user [^)]+\), span 1: end must be an integer character offset, "
                       r"got 1e\+300|end 1.000e\+300 is too large")):
    case("spans", f"label-studio-{key}-{value!r}",
         ls_spans(_set([0, "annotations", 1, "result", 1, "value", key], value),
                  label_config=LS_SPAN_CONFIG),
         error(pattern))
case("spans", "label-studio-labels-typed-choices",
     ls_spans(_set([0, "annotations", 0, "result", 0, "type"], "choices")),
     error(r"task 1, annotation 10 \(user [^)]+\): a result of control 'label' has type 'choices' but its value "
           r"is a span region"))
case("spans", "label-studio-tokenizer-str.split",
     ls_spans(lambda d: None, label_config=LS_SPAN_CONFIG, tokenizer=str.split),
     error(r"tokenizer split gave str 'John'.*a tokenizer is a callable"))
case("spans", "label-studio-email-and-id-annotators",
     ls_spans(_set([0, "annotations", 1, "completed_by"], "x@y.org"), label_config=LS_SPAN_CONFIG),
     accept(lambda e: list(e.annotator_ids) == [1, "x@y.org"]))


# ---------------------------------------------------------------------------- label models' fit
# (issue 45, round three) ``fit(annotations, pred_probs=..., gold=...)`` of the EM models and
# the default model: a classifier's probabilities and known labels are read like annotations.
def _crowd_ann():
    """30 items 'it00'.. 'it29', 4 annotators, classes 'a', 'b', 'c' (seeded)."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 30)
    rows = [(f"it{i:02d}", f"w{a}", "abc"[truth[i] if rng.random() < .75 else rng.integers(3)])
            for i in range(30) for a in range(4)]
    return Annotations.from_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]))


CROWD = _crowd_ann()
UNIFORM = np.full((30, 3), 1 / 3)


def label_model_fit(name, **fit_kwargs):
    def run(tmp_path):
        from crowd_keras.aggregation import get_label_model
        return get_label_model(name).fit(CROWD, **fit_kwargs)
    return run


def _row(p, i, values):
    p = p.copy()
    p[i] = values
    return p


PRED_PROBS_CASES = (
    ("list-ragged", UNIFORM.tolist()[:5] + [[.5, .5]] + UNIFORM.tolist()[6:],
     r"pred_probs: row 5 has 2 entries but row 0 has 3"),
    ("strings", np.full((30, 3), "0.33"),
     r"pred_probs must be probabilities \(numbers\), got text \(e.g. '0.33' at row 0"),
    ("object-with-a-string", _row(UNIFORM.astype(object), 4, [.5, "0.25", .25]),
     r"pred_probs must be probabilities \(numbers\): str '0.25' at row 4, column 1"),
    ("frame-text-values", pd.DataFrame(UNIFORM.round(4).astype(str), index=CROWD.item_ids,
                                       columns=CROWD.classes),
     r"pred_probs of item 'it00', column 'a', must be a probability \(a number\), got str "
     r"'0.3333'$"),
    ("frame-some-columns-name-classes", pd.DataFrame(UNIFORM, index=CROWD.item_ids,
                                                     columns=["b", "a", "zz"]),
     r"column\(s\) 'zz' are not classes of the annotations \['a', 'b', 'c'\] "
     r"\(no column for 'c'\)"),
    ("frame-a-class-twice", pd.DataFrame(UNIFORM, index=CROWD.item_ids, columns=["a", "a", "c"]),
     r"pred_probs: columns repeated: 'a'$"),
    ("dict-of-rows", dict(zip(CROWD.item_ids, UNIFORM.tolist())),
     r"or a pandas DataFrame indexed by item id; got a dict \(a dict of rows: "
     r"pandas.DataFrame.from_dict\(d, orient='index'\)\)"),
    ("series-of-rows", pd.Series(list(UNIFORM), index=CROWD.item_ids),
     r"or a pandas DataFrame indexed by item id; got a Series$"),
    ("row-sums-to-2", _row(UNIFORM, 3, [1, .5, .5]),
     r"pred_probs of item 'it03' \(row 3\) sum to 2, not 1"),
    ("K-mismatch", np.full((30, 2), .5), r"shape \(items, classes\) = \(30, 3\) .* got \(30, 2\)"),
    ("frame-index-nan", pd.DataFrame(UNIFORM, index=list(CROWD.item_ids[:-1]) + [np.nan],
                                     columns=CROWD.classes),
     r"pred_probs: no row for 1 item\(s\) of the annotations: 'it29'"),
)
for model in ("dawid_skene", "ibcc", "ebcc", "bwa", "one_coin_dawid_skene", "auto"):
    for name, value, pattern in PRED_PROBS_CASES:
        if model not in ("dawid_skene", "auto") and name not in (
                "list-ragged", "frame-some-columns-name-classes", "strings"):
            continue
        case("label_model", f"{model}-pred_probs-{name}",
             label_model_fit(model, pred_probs=value), error(pattern))
    case("label_model", f"{model}-unknown-keyword",
         label_model_fit(model, pred_probs=UNIFORM, totally_bogus="x"),
         error(r"unexpected keyword argument\(s\) \['totally_bogus'\]", TypeError))
RANDOM_PROBS = np.random.default_rng(1).dirichlet(np.ones(3), 30)
case("label_model", "dawid_skene-pred_probs-frame-in-another-order",   # aligned by id and name
     label_model_fit("dawid_skene", pred_probs=pd.DataFrame(
         RANDOM_PROBS, index=CROWD.item_ids, columns=CROWD.classes).iloc[::-1, ::-1]),
     accept(lambda m: bool(np.allclose(m.predict_proba(), label_model_fit(
         "dawid_skene", pred_probs=RANDOM_PROBS)(None).predict_proba()))))
case("label_model", "dawid_skene-pred_probs-list-of-lists",
     label_model_fit("dawid_skene", pred_probs=UNIFORM.tolist()),
     accept(lambda m: m.predict_proba().shape == (30, 3)))
case("label_model", "dawid_skene-pred_probs-one-hot-bool",   # a hard prior is a distribution
     label_model_fit("dawid_skene", pred_probs=np.eye(3, dtype=bool)[np.arange(30) % 3]),
     accept(lambda m: m.predict_proba().shape == (30, 3)))
case("label_model", "dawid_skene-pred_probs-frame-columns-in-code-order",
     label_model_fit("dawid_skene", pred_probs=pd.DataFrame(UNIFORM, index=CROWD.item_ids,
                                                           columns=["p0", "p1", "p2"])),
     accept(lambda m: m.predict_proba().shape == (30, 3)))

GOLD_CASES = (
    ("series-item-twice", pd.Series(["a", "b"], index=["it01", "it01"]),
     r"gold item 'it01' is given more than once \(1 repeat\(s\)\)"),
    ("list-label", {"it01": ["a"]}, r"gold label \['a'\] of item 'it01' is not one of the "
                                    r"classes \['a', 'b', 'c'\]"),
    ("frame", pd.DataFrame({"task": ["it01"], "label": ["a"]}),
     r"gold must be a mapping item -> label .* got DataFrame \(a frame of item and label "
     r"columns: frame.set_index\(ITEM\)\[LABEL\]\)"),
    ("set", {"it01"}, r"gold must be a mapping .* got set$"),
    ("one-label", "a", r"gold must be a mapping .* got str$"),
    ("nan-label", {"it01": np.nan}, r"gold label nan of item 'it01' is not one of the classes"),
    ("code-for-string-classes", {"it02": 0},
     r"gold label 0 of item 'it02' is not one of the classes \['a', 'b', 'c'\]"),
    ("unknown-item", {"it99": "a"}, r"gold item 'it99' is not an item of the annotations"),
    ("codes-wrong-length", np.zeros(29, dtype=int),
     r"30 integer class codes .* got an array of shape \(29,\)"),
    ("codes-out-of-range", np.full(30, 3), r"gold code 3 of item 'it00' is outside -1..2"),
)
for model in ("dawid_skene", "ibcc", "auto", "majority_vote"):
    for name, value, pattern in GOLD_CASES:
        if model != "dawid_skene" and name not in ("series-item-twice", "list-label", "frame"):
            continue
        case("label_model", f"{model}-gold-{name}", label_model_fit(model, gold=value),
             error(pattern))
case("label_model", "dawid_skene-gold-empty-dict", label_model_fit("dawid_skene", gold={}),
     accept(lambda m: m.predict_proba().shape == (30, 3)))
case("label_model", "dawid_skene-gold-codes-as-list", label_model_fit(
    "dawid_skene", gold=[-1] * 29 + [2]), accept(lambda m: int(m.predict()[29]) == 2))


# ---------------------------------------------------------------------------- model settings
def settings_fit(name, **params):
    def run(tmp_path):
        from crowd_keras.aggregation import get_label_model
        return get_label_model(name, **params).fit(
            np.array([[0, 1, 1], [1, 1, -1], [0, 0, 1], [1, -1, 1]] * 5))
    return run


for model, cls in (("dawid_skene", "DawidSkene"), ("ibcc", "IBCC"), ("ebcc", "EBCC"),
                   ("bwa", "BWA"), ("glad", "GLAD"), ("mace", "MACE"),
                   ("one_coin_dawid_skene", "OneCoinDawidSkene")):
    for params, pattern, exc in (
            ({"max_iter": 2.5}, rf"{cls} max_iter must be an integer >= "
                                rf"{1 if model in ('ibcc', 'ebcc', 'bwa') else 0} \(a whole "
                                r"number, not a float\), got float 2.5", TypeError),
            ({"max_iter": "10"}, rf"{cls} max_iter must be an integer >= 0, got str '10'",
             TypeError),
            ({"tol": float("nan")}, rf"{cls} tol must be a finite number, got nan", ValueError)):
        if model not in ("dawid_skene", "mace") and "max_iter" in params and \
                params["max_iter"] == "10":
            continue
        key, value = next(iter(params.items()))
        case("label_model", f"{model}-{key}={value!r}", settings_fit(model, **params),
             error(pattern, exc))
for value, exc, pattern in ((-1, ValueError, r"must be a finite number >= 0, got -1"),
                            (float("inf"), ValueError, r"must be a finite number >= 0, got inf"),
                            ("0.1", TypeError, r"must be a number, got str '0.1'")):
    case("label_model", f"dawid_skene-smoothing={value!r}",
         settings_fit("dawid_skene", smoothing=value),
         error(r"DawidSkene smoothing " + pattern, exc))
case("label_model", "dawid_skene-negative-tol-runs-every-iteration",
     settings_fit("dawid_skene", tol=-1.0, max_iter=7), accept(lambda m: m.n_iter_ == 7))
case("label_model", "predict_labels-unfitted",
     lambda tmp_path: __import__("crowd_keras.aggregation", fromlist=["x"]).DawidSkene()
     .predict_labels(),
     error(r"this DawidSkene is not fitted yet",
           __import__("crowd_keras.errors", fromlist=["x"]).NotFittedError))


def auto_fit(**params):
    def run(tmp_path):
        from crowd_keras.aggregation import AutoLabelModel
        return AutoLabelModel(**params).fit(CROWD)
    return run


for params, exc, pattern in (
        ({"min_gold": -1}, ValueError, r"^AutoLabelModel min_gold must be an integer >= 0, got -1$"),
        ({"min_gold": 2.5}, TypeError, r"^AutoLabelModel min_gold must be an integer >= 0 \(a "
                                       r"whole number, not a float\), got float 2.5$"),
        ({"n_folds": 1}, ValueError, r"^AutoLabelModel n_folds must be an integer >= 2, got 1$"),
        ({"max_repeats": "3"}, TypeError, r"AutoLabelModel max_repeats must be an integer >= 1, "
                                          r"got str '3'$"),
        ({"min_heldout": 1e5}, TypeError, r"AutoLabelModel min_heldout .*got float 100000.0$"),
        ({"random_state": "a"}, TypeError, r"AutoLabelModel random_state must be an integer >= "
                                           r"0, got str 'a'$"),
        ({"confidence": float("nan")}, ValueError, r"AutoLabelModel confidence must be a finite "
                                                   r"number >= 0, got nan$"),
        ({"copy_confidence": 0}, ValueError, r"AutoLabelModel copy_confidence must be > 0 or "
                                             r"None, got 0$"),
        ({"candidates": "ds"}, TypeError, r"AutoLabelModel candidates must be a list of \(name, "
                                          r"unfitted label model\) pairs, got 'ds'$"),
        ({"candidates": ["nope"]}, TypeError, r"candidates must be a list .* got 'nope'$")):
    key, value = next(iter(params.items()))
    case("label_model", f"auto-{key}={value!r}", auto_fit(**params), error(pattern, exc))
case("label_model", "auto-random_state-None-and-copy_confidence-None",
     auto_fit(random_state=None, copy_confidence=None),
     accept(lambda m: m.chosen_ is not None and len(m.copy_pairs_) == 0))


# ---------------------------------------------------------------------------- out-of-fold features
def oof(x=None, labels=None, model_fn=None, **kwargs):
    """``features.out_of_fold`` with a scikit-learn logistic regression on 40 items, 3
    features (the label is the sign of the first)."""
    def run(tmp_path):
        from sklearn.linear_model import LogisticRegression

        from crowd_keras.features import out_of_fold
        rng = np.random.default_rng(0)
        xs = rng.normal(size=(40, 3))
        ys = (xs[:, 0] > 0).astype(int)
        return out_of_fold(model_fn or (lambda: LogisticRegression()),
                           xs if x is None else x(xs), ys if labels is None else labels(ys),
                           **kwargs)
    return run


for name, kwargs, pattern, exc in (
        ("n_splits-2.5", {"n_splits": 2.5}, r"n_splits must be an integer >= 2 \(a whole number, "
                                            r"not a float\), got float 2.5", TypeError),
        ("n_splits-'3'", {"n_splits": "3"}, r"n_splits must be an integer >= 2, got str '3'",
         TypeError),
        ("n_splits-nan", {"n_splits": float("nan")}, r"got float nan", TypeError),
        ("n_splits-None", {"n_splits": None}, r"got NoneType None", TypeError),
        ("min_probability-negative", {"min_probability": -1},
         r"min_probability must be a finite number in \[0, 0.5\), got -1", ValueError),
        ("min_probability-nan", {"min_probability": float("nan")}, r"got nan", ValueError),
        ("min_probability-1", {"min_probability": 1.0},
         r"min_probability must be a finite number in \[0, 0.5\), got 1.0", ValueError),
        ("min_probability-text", {"min_probability": "0.1"},
         r"min_probability must be a number, got str '0.1'", TypeError),
        ("fit_kwargs-list", {"fit_kwargs": [1]}, r"fit_kwargs must be a dict of fit\(\)'s "
                                                 r"arguments, got list", TypeError),
        ("random_state-text", {"random_state": "a"},
         r"random_state must be a non-negative int or None, got 'a'", ValueError),
        ("classes-twice", {"classes": [0, 0]}, r"class id 0 at position 1 repeats position 0",
         CrowdDataError),
        ("x-dict-of-unequal-inputs", {"x": lambda xs: {"a": xs, "b": xs[:-2]}},
         r"x's inputs differ in rows: 'a' has 40, 'b' has 38", CrowdDataError),
        ("x-None", {"x": lambda xs: None}, r"x must be the features of the items .* got NoneType",
         TypeError),
        ("labels-fractional", {"labels": lambda ys: ys + 0.5},
         r"label 1.5 of item 0 is not a whole number", CrowdDataError),
        ("labels-not-in-classes", {"labels": lambda ys: np.where(ys == 1, 5, 0),
                                   "classes": [0, 1]},
         r"label 5 of item 0 is not one of the classes \[0, 1\]$", CrowdDataError),
        ("label_model-not-a-model", {"labels": lambda ys: Annotations.from_dense(
            np.tile(ys[:, None], (1, 3))), "label_model": 3},
         r"label_model must be a label model's name or an unfitted label model, got int 3",
         TypeError),
        ("model_fn-a-transformer-class",
         {"model_fn": __import__("sklearn.preprocessing", fromlist=["x"]).StandardScaler},
         r"StandardScaler has no predict_proba \(scikit-learn style\) nor compile/predict",
         TypeError)):
    kwargs = dict(kwargs)
    case("features", f"out_of_fold-{name}",
         oof(kwargs.pop("x", None), kwargs.pop("labels", None), kwargs.pop("model_fn", None),
             **kwargs), error(pattern, exc))
case("features", "out_of_fold-estimator-class",     # a class is a function making a fresh one
     oof(model_fn=__import__("sklearn.linear_model", fromlist=["x"]).LogisticRegression),
     accept(lambda p: p.shape == (40, 2) and bool(np.allclose(p.sum(axis=1), 1))))
case("features", "out_of_fold-more-folds-than-items",     # leave-one-out: empty folds skipped
     oof(x=lambda xs: xs[:6], labels=lambda ys: ys[:6], n_splits=10),
     accept(lambda p: p.shape == (6, 2)))
case("features", "out_of_fold-unseen-class-gets-the-floor",
     oof(classes=[0, 1, 2]), accept(lambda p: p.shape == (40, 3) and bool((p[:, 2] < 1e-5).all())))


# ---------------------------------------------------------------------------- wide frames
WIDE = pd.DataFrame([[0, 1, np.nan], [1, np.nan, 1], [np.nan, 2, 2]], index=["i1", "i2", "i3"],
                    columns=["a", "b", "c"])


def wide(make, **kwargs):
    return lambda tmp_path: Annotations.from_wide(make(WIDE.copy()), **kwargs)


for name, make, kwargs, pattern, exc in (
        ("annotator-id-nan", lambda w: w.set_axis(["a", np.nan, "c"], axis=1), {},
         r"missing annotator id \(nan\) at column 1 of the wide frame", CrowdDataError),
        ("item-id-None", lambda w: w.set_axis(["i1", None, "i3"], axis=0), {},
         r"missing item id \((None|nan)\) at row 1 of the wide frame's index", CrowdDataError),
        ("annotators-1-and-'1'", lambda w: w.set_axis([1, "1", "c"], axis=1), {},
         r"annotators mix types: int 1 at column 0 of the wide frame and str '1' at column 1",
         CrowdDataError),
        ("annotator-tuples", lambda w: w.set_axis(pd.MultiIndex.from_tuples(
            [("x", 1), ("x", 2), ("y", 1)]), axis=1), {},
         r"annotator \('x', 1\) at column 0 of the wide frame is a tuple", CrowdDataError),
        ("digit-strings", lambda w: w.fillna(-1).astype(int).astype(str).replace("-1", np.nan),
         {}, r"label '0' of item 'i1' \(row 0\), annotator 'a' \(column 0\) is not a class code",
         CrowdDataError),
        ("a-bool-among-codes", lambda w: w.astype(object).where(w != 2, True), {},
         r"label True of item 'i3' \(row 2\), annotator 'b' \(column 1\) is not a class code",
         CrowdDataError),
        ("code-1e30", lambda w: w.replace(2, 1e30), {},
         r"label 1e\+30 of item 'i3' \(row 2\), annotator 'b' \(column 1\) is a code that would "
         r"make 1e\+30 classes from 3 distinct codes; pass n_classes= or classes=",
         CrowdDataError),
        ("code-10**9", lambda w: w.replace(2, 10 ** 9), {},
         r"would make 1e\+09 classes", CrowdDataError),
        ("n_classes-3.5", lambda w: w, {"n_classes": 3.5},
         r"n_classes must be an integer >= 1 \(a whole number, not a float\), got float 3.5",
         TypeError),
        ("n_classes-'3'", lambda w: w, {"n_classes": "3"}, r"got str '3'", TypeError),
        ("n_classes-0", lambda w: w, {"n_classes": 0}, r"n_classes must be an integer >= 1, "
                                                       r"got 0", ValueError),
        ("array-text", lambda w: np.array([["0", "1"], ["1", None]], dtype=object), {},
         r"wide annotations must be class codes \(numbers, NaN where missing\): str '0' at row 0, "
         r"column 0", CrowdDataError),
        ("array-ragged", lambda w: [[0, 1], [1]], {}, r"wide annotations: row 1 has 1 entries "
                                                      r"but row 0 has 2", CrowdDataError)):
    case("wide", name, wide(make, **kwargs), error(pattern, exc))
case("wide", "code-10**9-with-n_classes", wide(lambda w: w.replace(2, 10 ** 9), n_classes=3),
     error(r"label 1000000000.0 of item 'i3' \(row 2\), annotator 'b' \(column 1\) is outside "
           r"the 3 classes \(codes 0..2\)"))
case("wide", "bool-column", wide(lambda w: pd.DataFrame({"u": [True, False], "v": [False, True]})),
     accept(lambda a: a.classes.tolist() == [0, 1] and a.n_annotations == 4))   # as from_dense
case("wide", "nullable-Int64", wide(lambda w: w.astype("Int64")),
     accept(lambda a: a.n_annotations == 6 and a.annotations_per_item().tolist() == [2, 2, 2]))
case("wide", "all-missing-row-kept", wide(lambda w: pd.concat([w, pd.DataFrame(
    [[np.nan] * 3], index=["i4"], columns=w.columns)])),
     accept(lambda a: a.n_items == 4 and a.annotations_per_item().tolist() == [2, 2, 2, 0]))


# ---------------------------------------------------------------------------- quality scores
def _fitted():
    from crowd_keras.aggregation import DawidSkene
    return DawidSkene().fit(Annotations.from_wide(WIDE))


def quality(call):
    """``call(quality module, fitted model, posteriors, annotations)``."""
    def run(tmp_path):
        from crowd_keras.aggregation import quality as q
        model = _fitted()
        return call(q, model, model.predict_proba(), model.annotations_)
    return run


for name, call, pattern, exc in (
        ("posteriors-times-2", lambda q, m, p, a: q.consensus_quality(p * 2, a),
         r"posteriors of item 'i1' \(row 0\) are not probabilities \(finite, non-negative, "
         r"summing to 1\)", CrowdDataError),
        ("annotations-a-frame", lambda q, m, p, a: q.consensus_quality(p, WIDE),
         r"annotations must be an Annotations \(Annotations.from_frame, from_dense, ...\), "
         r"got DataFrame", TypeError),
        ("annotations-None", lambda q, m, p, a: q.annotation_quality(p, None), r"got NoneType",
         TypeError),
        ("rounds-2.5", lambda q, m, p, a: q.consensus_quality(p, a, rounds=2.5),
         r"rounds must be an integer >= 1 \(a whole number, not a float\), got float 2.5",
         TypeError),
        ("rounds-nan", lambda q, m, p, a: q.consensus_quality(p, a, rounds=float("nan")),
         r"rounds must be an integer >= 1 .* got float nan", TypeError),
        ("pseudo_labels-inf", lambda q, m, p, a: q.consensus_quality(p, a, pseudo_labels=np.inf),
         r"pseudo_labels must be a finite number >= 0, got inf", ValueError),
        ("item_log_prior-nan", lambda q, m, p, a: q.consensus_quality(
            p, a, item_log_prior=_row(np.zeros(p.shape), 1, np.nan)),
         r"item_log_prior of item 'i2' \(row 1\) is not a log-weight per class", CrowdDataError),
        ("label_issues-quality-short", lambda q, m, p, a: q.label_issues(p, a, quality=[.5]),
         r"quality must be one consensus quality per item \(3,\), got shape \(1,\)",
         CrowdDataError),
        ("next_to_label-accuracies-one", lambda q, m, p, a: q.next_to_label(2, p, a,
                                                                            accuracies=[.9]),
         r"accuracies must be one per annotator \(3,\), got shape \(1,\)", CrowdDataError),
        ("next_to_label-accuracy-nan", lambda q, m, p, a: q.next_to_label(
            2, p, a, accuracies=[np.nan, .9, .9]),
         r"accuracy nan of annotator 0 is not a probability in \[0, 1\]", CrowdDataError),
        ("next_to_label-accuracy-5", lambda q, m, p, a: q.next_to_label(
            2, p, a, accuracies=[.9, 5, .9]), r"accuracy 5.0 of annotator 1", CrowdDataError),
        ("model-next_to_label-annotators-a-string",
         lambda q, m, p, a: m.next_to_label(2, annotators="ab"),
         r"annotators must be a list of annotator ids, got the string 'ab' \(one annotator: "
         r"\['ab'\]\)", TypeError),
        ("model-next_to_label-annotators-an-int",      # was "'int' object is not iterable"
         lambda q, m, p, a: m.next_to_label(2, annotators=7),
         r"annotators must be a list of annotator ids, got int 7 \(one annotator: \[7\]\)",
         TypeError),
        ("unfitted", lambda q, m, p, a: type(m)().label_issues(),
         r"this DawidSkene is not fitted yet; call fit\(\) first", __import__(
             "crowd_keras.errors", fromlist=["x"]).NotFittedError)):
    case("quality", name, quality(call), error(pattern, exc))
for k, exc in ((2.5, TypeError), ("2", TypeError), (True, TypeError), (float("inf"), TypeError),
               (None, TypeError), (-1, ValueError)):
    case("quality", f"next_to_label-k={k!r}", quality(lambda q, m, p, a, k=k: m.next_to_label(k)),
         error(r"k \(items to choose\) must be an integer >= 0" +
               (r", got -1" if k == -1 else r".* got \w+ " + re.escape(repr(k))), exc))
case("quality", "next_to_label-k-beyond-the-items", quality(lambda q, m, p, a: m.next_to_label(
    10 ** 9)), accept(lambda frame: len(frame) == 3))     # "at most k rows"
case("quality", "next_to_label-k=0", quality(lambda q, m, p, a: m.next_to_label(0)),
     accept(lambda frame: len(frame) == 0))


def cleanlab(model, annotations=None):
    def run(tmp_path):
        from crowd_keras.compat.cleanlab import to_cleanlab
        return to_cleanlab(model() if callable(model) and not isinstance(model, type) else model,
                           annotations)
    return run


case("cleanlab", "a-name-not-a-model", cleanlab("dawid_skene"),
     error(r"to_cleanlab needs a fitted label model \(crowd_keras.aggregation\), got str",
           TypeError))
case("cleanlab", "the-class-not-a-model",
     cleanlab(__import__("crowd_keras.aggregation", fromlist=["x"]).DawidSkene),
     error(r"got the class DawidSkene", TypeError))
# a batch read alone with a few of the classes: the error says how to read it with them
case("cleanlab", "other-classes", cleanlab(_fitted, Annotations.from_dense([[0, 1], [1, 0]])),
     error(r"classes \[0, 1\] differ from the fitted classes \[0, 1, 2\] \(a batch that uses "
           r"2 of them: build it with classes=\[0, 1, 2\] or n_classes=3, or pass the frame or "
           r"matrix, which is read with the fitted classes\)$"))
case("cleanlab", "classes-not-of-the-fit",
     cleanlab(_fitted, Annotations.from_dense([[0, 1], [1, 0]], classes=["a", "b"])),
     error(r"classes \['a', 'b'\] differ from the fitted classes \[0, 1, 2\]$"))
case("cleanlab", "new-annotator-only",    # unknown annotators are left out, as predict_proba
     cleanlab(_fitted, Annotations.from_frame(pd.DataFrame(
         {"task": ["i1"], "worker": ["zzz"], "label": [1]}), classes=[0, 1, 2])),
     accept(lambda out: out["label_quality"].shape[0] == 1))


# ---------------------------------------------------------------------------- Snorkel: score, Y_dev
def snorkel_call(call):
    """``call(fitted CrowdLabelModel, L, Y)`` on 30 rows of 3 functions."""
    def run(tmp_path):
        from crowd_keras.integrations.snorkel import CrowdLabelModel
        L = np.array([[0, 1, -1], [1, 1, 0], [0, -1, 0], [1, 0, 1], [0, 0, 0], [1, 1, 1]] * 5)
        Y = np.array([0, 1, 0, 1, 0, 1] * 5)
        return call(CrowdLabelModel(cardinality=2).fit(L, progress_bar=False), L, Y)
    return run


for name, call, pattern, exc in (
        ("score-Y-5", lambda m, L, Y: m.score(L, np.full(30, 5)),
         r"^Y has 5 at position 0; labels are 0..1, -1 = no gold label$", CrowdDataError),
        ("score-Y-fractional", lambda m, L, Y: m.score(L, Y + 0.5),
         r"^Y must hold integer labels 0..1, got dtype float64 \(0.5 at position 0\)$",
         CrowdDataError),
        ("score-Y-text", lambda m, L, Y: m.score(L, np.array(["a"] * 30)),
         r"^Y must hold integer labels 0..1, got dtype <U1$", CrowdDataError),
        ("score-Y-nan", lambda m, L, Y: m.score(L, np.where(Y == 1, np.nan, 0)),
         r"\(nan at position 1\)", CrowdDataError),
        ("score-Y-all-abstain", lambda m, L, Y: m.score(L, np.full(30, -1)),
         r"^Y has no gold label: every entry is -1$", CrowdDataError),
        ("score-Y-matrix", lambda m, L, Y: m.score(L, Y.reshape(5, 6)),
         r"^Y must be one label per data point, got shape \(5, 6\)$", CrowdDataError),
        ("score-metrics-a-string", lambda m, L, Y: m.score(L, Y, metrics="accuracy"),
         r"metrics must be a list of metric names, got the string 'accuracy' \(one metric: "
         r"\['accuracy'\]\)", TypeError),
        ("fit-Y_dev-matrix", lambda m, L, Y: m.fit(L, Y_dev=Y.reshape(5, 6), progress_bar=False),
         r"^Y_dev must be one label per data point, got shape \(5, 6\)$", CrowdDataError),
        ("fit-Y_dev-nan", lambda m, L, Y: m.fit(L, Y_dev=np.where(Y == 1, np.nan, 0),
                                                progress_bar=False),
         r"^Y_dev must hold integer labels 0..1, got dtype float64 \(nan at position 1\)$",
         CrowdDataError),
        ("predict-unfitted", lambda m, L, Y: type(m)().predict(L),
         r"not fitted yet; call fit\(\) or load\(\)",
         __import__("crowd_keras.errors", fromlist=["x"]).NotFittedError)):
    case("snorkel", name, snorkel_call(call), error(pattern, exc))
case("snorkel", "score-Y-with-abstains",       # -1: no gold for the row, left out (Snorkel)
     snorkel_call(lambda m, L, Y: m.score(L, np.where(np.arange(30) < 6, -1, Y))),
     accept(lambda out: 0.0 <= out["accuracy"] <= 1.0))
case("snorkel", "score-Y-column-vector",       # (n, 1), as scikit-learn reads a column
     snorkel_call(lambda m, L, Y: m.score(L, Y[:, None])),
     accept(lambda out: out == {"accuracy": snorkel_call(
         lambda m, L, Y: m.score(L, Y))(None)["accuracy"]}))
case("snorkel", "Y_dev-without-L_dev-of-another-length",   # a dev split's class shares (Snorkel)
     snorkel_call(lambda m, L, Y: m.fit(L, Y_dev=Y[:5], progress_bar=False)),
     accept(lambda m: m.class_balance_ is None or len(m.class_balance_) == 2))


# ---------------------------------------------------------------------------- span converters
CONVERT_TEXTS = ["John met Mary", "in Paris today"]


def convert(call, **change):
    """``call(formats, texts, spans)`` with span row 1 of three changed."""
    def run(tmp_path):
        from crowd_keras.sequences import formats
        rows = {"doc": [0, 0, 1], "start": [0, 9, 3], "end": [4, 13, 8],
                "label": ["PER", "PER", "LOC"]}
        for key, value in change.items():
            rows[key] = pd.Series(rows[key], dtype=object)
            rows[key][1] = value
        return call(formats, CONVERT_TEXTS, pd.DataFrame(rows), tmp_path)
    return run


TO_TAGS = (lambda F, t, s, p: F.spans_to_token_tags(t, s))
TO_JSONL = (lambda F, t, s, p: F.write_spans_jsonl(p / "out.jsonl", t, s))
TO_SPACY = (lambda F, t, s, p: F.spans_to_spacy(t, s))
for target, call in (("tags", TO_TAGS), ("jsonl", TO_JSONL), ("spacy", TO_SPACY)):
    for key, value, pattern in (
            ("start", 9.5, r"span row 1: start must be an integer character offset, got 9.5"),
            ("start", np.nan, r"span row 1: start must be an integer character offset, got nan"),
            ("start", "9", r"span row 1: start must be an integer character offset, got '9'"),
            ("start", True, r"span row 1: start must be an integer character offset, got True"),
            ("end", 10 ** 30, r"span row 1: end 10+ is too large for a character offset"),
            ("start", -1, r"span row 1: negative start \(start -1, end 13\)"),
            ("end", 5, r"span row 1: end before start \(start 9, end 5\)")):
        if target != "tags" and key == "start" and value in ("9", True, -1):
            continue
        case("spans", f"{target}-{key}-{value!r}", convert(call, **{key: value}), error(pattern))
    case("spans", f"{target}-label-None", convert(call, label=None),
         error(r"span row 1: missing label \(None\)"))
for target, call in (("tags", TO_TAGS), ("jsonl", TO_JSONL)):   # a reader would refuse it
    case("spans", f"{target}-end-past-the-text", convert(call, end=20),
         error(r"span row 1: \[9, 20\) is outside the text of document 0 \(13 characters\)"))
case("spans", "tags-texts-series-with-a-repeated-id",
     lambda tmp_path: __import__("crowd_keras.sequences.formats", fromlist=["x"])
     .spans_to_token_tags(pd.Series(CONVERT_TEXTS, index=[0, 0]), pd.DataFrame(
         {"doc": [0], "start": [0], "end": [2]})),
     error(r"document ids must be unique; document id 0 at position 1 repeats position 0"))
case("spans", "tags-texts-None", lambda tmp_path: __import__(
    "crowd_keras.sequences.formats", fromlist=["x"]).spans_to_token_tags(None, pd.DataFrame(
        {"doc": [0], "start": [0], "end": [1]})),
     error(r"texts must be a list of strings, a \{doc_id: text\} mapping or a Series, got "
           r"NoneType", TypeError))
case("spans", "spacy-nlp-a-name", convert(lambda F, t, s, p: F.spans_to_spacy(t, s, nlp="en")),
     error(r"nlp must be a spaCy pipeline .* got str", TypeError))
case("spans", "spacy-to-spans-of-strings", lambda tmp_path: __import__(
    "crowd_keras.sequences.formats", fromlist=["x"]).spacy_to_spans(["John met"]),
     error(r"docs\[0\] is a str, not a spaCy Doc", TypeError))
case("spans", "spacy-integral-float-offset", convert(TO_SPACY, start=9.0),
     accept(lambda docs: [(s.start_char, s.end_char) for s in docs[0].spans["sc"]] ==
            [(0, 4), (9, 13)]))


def tag_rows(rows, **kwargs):
    def run(tmp_path):
        from crowd_keras.sequences.formats import token_tags_to_spans
        return token_tags_to_spans(rows, **kwargs)
    return run


NAMES = ["O", "B-PER", "I-PER"]
OFFSET_ROW = {"tags": ["B-PER", "O"], "text": "John met"}
for name, rows, kwargs, pattern in (
        ("tag-id--1", [{"tags": [-1, 0, 1], "tokens": ["a", "b", "c"]}], {"label_names": NAMES},
         r"row 0: tag id -1 is not among the 3 label names \(ids 0..2\)"),
        ("tag-id-1.7", [{"tags": [1.7, 0, 1], "tokens": ["a", "b", "c"]}],
         {"label_names": NAMES}, r"row 0: tag id 1.7 is not among the 3 label names"),
        ("tag-id-True", [{"tags": [True, 0, 1], "tokens": ["a", "b", "c"]}],
         {"label_names": NAMES}, r"row 0: tag id True is not among"),
        ("tags-a-string", [{"tags": "B-PER O", "tokens": ["a", "b"]}], {},
         r"row 0: 'tags' must be a list of tags, got str 'B-PER O'"),
        ("tag-None", [{"tags": ["B-PER", None], "tokens": ["a", "b"]}], {},
         r"row 0, token 1: tag None is missing \(every token needs a tag"),
        ("tag-B-without-label", [{"tags": ["B-", "O"], "tokens": ["a", "b"]}], {},
         r"row 0, token 0: tag 'B-' is not a BIO tag"),
        ("offsets-fractional", [{**OFFSET_ROW, "offsets": [[0, 4.5], [5, 8]]}], {},
         r"row 0, token 0: end must be an integer character offset, got 4.5"),
        ("offsets-three-numbers", [{**OFFSET_ROW, "offsets": [0, 4, 5]}], {},
         r"row 0: 'offsets' must be one \[start, end\] pair per token, got shape \(3,\)"),
        ("offsets-text", [{**OFFSET_ROW, "offsets": [["a", 4], [5, 8]]}], {},
         r"row 0, token 0: start must be an integer character offset, got 'a'"),
        ("offsets-past-the-text", [{**OFFSET_ROW, "offsets": [[0, 4], [5, 40]]}], {},
         r"row 0, token 1: offsets \[5, 40\) end past the text \(8 characters\)"),
        ("offsets-reversed", [{**OFFSET_ROW, "offsets": [[4, 0], [5, 8]]}], {},
         r"row 0, token 0: end before start \(start 4, end 0\)"),
        ("offsets-10**30", [{**OFFSET_ROW, "offsets": [[0, 10 ** 30], [5, 8]]}], {},
         r"row 0, token 0: end 10+ is too large"),
        ("text-a-number", [{"tags": ["O"], "text": 5, "offsets": [[0, 1]]}], {},
         r"row 0: 'text' must be a string, got int"),
        ("doc-a-list", [{"tags": ["O"], "tokens": ["a"], "doc": [1]}], {},
         r"row 0: 'doc' must be a document id \(a string or an integer\), got \[1\]"),
        ("row-a-list", [["B-PER"]], {}, r"row 0: expected a dict with 'tags', got list"),
        ("tokens-a-string", [{"tags": ["B-PER", "I-PER", "I-PER", "I-PER"], "tokens": "John"}],
         {}, r"row 0: 'tokens' must be a list of tokens, got str 'John'"),
        ("tokens-None", [{"tags": ["O"], "tokens": None}], {},
         r"row 0: 'tokens' must be a list of tokens, got NoneType None"),
        ("offsets-out-of-order", [{**OFFSET_ROW, "offsets": [[5, 8], [0, 4]]}], {},
         r"row 0, token 1: offsets \[0, 4\) begin before the end of token 0 \(8\)"),
        ("offsets-overlapping", [{"tags": ["B-X", "I-X"], "text": "abc",
                                  "offsets": [[0, 2], [1, 3]]}], {},
         r"row 0, token 1: offsets \[1, 3\) begin before the end of token 0 \(2\)"),
        ("doc-nan", [{"tags": ["O"], "tokens": ["a"], "doc": float("nan")}], {},
         r"row 0: 'doc' must be a document id \(a string or an integer\), got nan")):
    case("spans", f"tag-lists-{name}", tag_rows(rows, **kwargs), error(pattern))
case("spans", "tag-lists-None", tag_rows(None),
     error(r"rows must be an iterable of dicts \(one per tag list\), got NoneType", TypeError))
case("spans", "tag-lists-I-without-B",       # read as IOB1 readers do: an I after O begins a span
     tag_rows([{"tags": ["I-PER", "O", "I-PER"], "tokens": ["John", "met", "Mary"]}]),
     accept(lambda out: out[1][["start", "end"]].values.tolist() == [[0, 4], [9, 13]]))


def spans_jsonl(text, raw=None):
    def run(tmp_path):
        from crowd_keras.sequences.formats import read_spans_jsonl
        path = tmp_path / "spans.jsonl"
        path.write_bytes(raw if raw is not None else text.encode("utf-8"))
        return read_spans_jsonl(path)
    return run


def _line(spans='[{"start": 0, "end": 4, "label": "X"}]', doc="0", text='"John met"'):
    return f'{{"doc": {doc}, "text": {text}, "spans": {spans}}}\n'


for name, text, raw, pattern in (
        ("float-offset", _line('[{"start": 0, "end": 4.7}]'), None,
         r"spans.jsonl:1: span 0: end must be an integer character offset, got 4.7"),
        ("bool-offset", _line('[{"start": true, "end": 4}]'), None,
         r"spans.jsonl:1: span 0: start must be an integer character offset, got True"),
        ("text-offset", _line('[{"start": "0", "end": 4}]'), None,
         r"spans.jsonl:1: span 0: start must be an integer character offset, got '0'"),
        ("huge-offset", _line('[{"start": 0, "end": 1e400}]'), None,
         r"spans.jsonl:1: span 0: end must be an integer character offset, got inf"),
        ("offset-past-text", "\n" + _line('[{"start": 5, "end": 9}]'), None,
         r"spans.jsonl:2: span 0 \[5, 9\) is outside the text of document 0 \(8 characters\)"),
        ("text-a-number", _line(text="5"), None,
         r"spans.jsonl:1: 'text' must be a string, got int"),
        ("doc-a-list", _line(doc="[0]"), None,
         r"spans.jsonl:1: 'doc' must be a string or an integer id, got \[0\]"),
        ("doc-null", _line(doc="null"), None, r"'doc' must be a string or an integer id, got None"),
        ("spans-an-object", _line('{"start": 0, "end": 1}'), None,
         r"spans.jsonl:1: 'spans' must be a list of span objects, got dict"),
        ("spans-null", _line("null"), None,
         r"'spans' must be a list of span objects, got NoneType"),
        ("label-a-list", _line('[{"start": 0, "end": 4, "label": ["X"]}]'), None,
         r"spans.jsonl:1: span 0: label must be a string or an integer, got \['X'\]"),
        ("latin-1", None, _line(text='"caf\xe9"').encode("latin-1"),
         r"spans.jsonl:1: not UTF-8 text \(byte 0xe9 at offset 23\)")):
    case("spans", f"jsonl-{name}", spans_jsonl(text, raw), error(pattern))
case("spans", "jsonl-byte-order-mark-and-crlf",
     spans_jsonl(None, ("\ufeff" + _line() + _line(doc="1").replace("\n", "\r\n")).encode()),
     accept(lambda out: list(out[0]) == [0, 1] and len(out[1]) == 2))


def run_lfs(returned, returns="spans", texts=("John met Mary",), **kwargs):
    def run(tmp_path):
        from crowd_keras.sequences.labeling_functions import SpanLabelingFunction, apply_lfs
        lf = SpanLabelingFunction("f", lambda doc: returned, returns)
        return apply_lfs(list(texts) if isinstance(texts, tuple) else texts, [lf],
                         labels=["PER"], progress=False, **kwargs)
    return run


for name, returned, returns, pattern in (
        ("span-None", [None], "spans", r"labeling function 'f' on document 0: span 0 must be "
                                       r"\(start, end\[, label\]\), got NoneType None"),
        ("spans-an-int", 5, "spans",
         r"labeling function 'f' on document 0 returned int 5; it must return a list of spans "
         r"\(start, end\[, label\]\) \(or None\)"),
        ("span-a-dict", [{"start": 0, "end": 4}], "spans",
         r"span 0 must be \(start, end\[, label\]\), got dict"),
        ("span-text-offsets", [("a", "b")], "spans",
         r"labeling function 'f' on document 0: start must be an integer character offset, "
         r"got 'a'"),
        ("span-fractional", [(0.5, 4.2)], "spans",
         r"labeling function 'f' on document 0: start must be an integer character offset, "
         r"got 0.5"),
        ("span-10**30", [(0, 10 ** 30)], "spans", r"end 10+ is too large for a character offset"),
        ("span-True", [(True, 4)], "spans", r"start must be an integer character offset, got True"),
        ("span-nan", [(np.nan, 4)], "spans", r"start must be an integer character offset, got nan"),
        ("span-reversed", [(4, 0)], "spans",
         r"labeling function 'f' on document 0: end before start \(start 4, end 0\)"),
        ("tags-a-string", "OOO", "tags", r"returned str 'OOO'; it must return a list of one tag "
                                         r"per token \(or None\)")):
    case("spans", f"lf-{name}", run_lfs(returned, returns), error(pattern))
case("spans", "lf-documents-one-string", run_lfs([], texts="John met Mary"),
     error(r"documents must be a SequenceAnnotations or texts .* got one string", TypeError))
case("spans", "lf-a-plain-function", lambda tmp_path: __import__(
    "crowd_keras.sequences.labeling_functions", fromlist=["x"]).apply_lfs(
        ["John met Mary"], [lambda doc: []], labels=["PER"], progress=False),
     error(r"lfs\[0\] is a function, not a labeling function: decorate it with @span_lf\(\) or "
           r"@tag_lf\(\)", TypeError))
case("spans", "lf-numpy-integer-offsets", run_lfs([(np.int64(0), np.int64(4))]),
     accept(lambda votes: votes.matrix().ravel().tolist() == [0, -2, -2]))

for name, make, pattern in (
        ("doc_ids-twice", lambda S: S.from_spans(["a b", "c d"], pd.DataFrame(
            {"doc": [0], "annotator": ["u"], "start": [0], "end": [1]}), doc_ids=[0, 0]),
         r"document ids must be unique; document id 0 at position 1 repeats position 0"),
        ("labels-twice", lambda S: S.from_spans(["a b"], pd.DataFrame(
            {"doc": [0], "annotator": ["u"], "start": [0], "end": [1], "label": ["X"]}),
            labels=["X", "X"]), r"label ids must be unique; label id 'X' at position 1"),
        ("label-a-list", lambda S: S.from_spans(["a b"], pd.DataFrame(
            {"doc": [0, 0], "annotator": ["u", "v"], "start": [0, 2], "end": [1, 3],
             "label": pd.Series(["X", ["X"]], dtype=object)})),
         r"label \['X'\] at span row 1 is a list; each label must be one value"),
        ("seen-not-pairs", lambda S: S.from_spans(["a b"], pd.DataFrame(
            {"doc": [0], "annotator": ["u"], "start": [0], "end": [1]}), seen=[(0,)]),
         r"seen row 0: expected a \(document, annotator\) pair, got \(0,\)"),
        ("from_dict-marks-an-int", lambda S: S.from_dict(["a b"], {0: {"u": 5}}),
         r"document 0, annotator 'u': expected a list of \[start, end\(, label\)\] spans, got "
         r"int 5"),
        ("from_dict-a-one-number-span", lambda S: S.from_dict(["a b"], {0: {"u": [[0]]}}),
         r"document 0, annotator 'u': a span is \[start, end\] or \[start, end, label\], got "
         r"\[0\]")):
    case("spans", f"sequence-{name}",
         lambda tmp_path, make=make: make(__import__("crowd_keras.sequences.annotations",
                                                     fromlist=["x"]).SequenceAnnotations),
         error(pattern))
case("spans", "tokenize-one-string", lambda tmp_path: __import__(
    "crowd_keras.sequences.tokens", fromlist=["x"]).tokenize("John met"),
     error(r"^texts must be a list of document texts, got one str \(pass \[text\] for one "
           r"document\)$", TypeError))
for name, texts, pattern in (
        ("one-string", "abc", r"got str \(one string: pass \[text\] for one document\)$"),
        ("None", None, r"got NoneType$")):     # a string was read as one document per letter
    case("spans", f"sequence-texts-{name}",
         lambda tmp_path, texts=texts: __import__(
             "crowd_keras.sequences.annotations", fromlist=["x"]).SequenceAnnotations.from_spans(
             texts, pd.DataFrame({"doc": [0], "annotator": ["u"], "start": [0], "end": [1]})),
         error(r"^texts must be a list of strings, a \{doc_id: text\} mapping or a Series, "
               + pattern, TypeError))


# ---------------------------------------------------------------------------- CLI inputs, flags
# (issue 45, round three) ``crowd-keras aggregate --gold``, the input table, output paths and
# flags that would be ignored: a located message and an exit code, nothing written.
GOLD_ANSWERS = "task,worker,label\n" + "".join(f"t{i},w{a},{(i + (a == 2 and i % 3 == 0)) % 2}\n"
                                               for i in range(12) for a in range(3))


def cli_files(argv, files=None, code=1):
    """``main(argv)`` with ``{dir}`` the case's folder holding ``answers.csv``,
    ``export.json`` and ``files`` (name -> text or bytes); a non-zero exit raises
    CrowdDataError(stderr) after checking the code, that nothing was written and that no
    traceback was printed."""
    def run(tmp_path):
        import contextlib

        from crowd_keras.cli import main
        (tmp_path / "answers.csv").write_text(GOLD_ANSWERS)
        (tmp_path / "export.json").write_bytes(EXPORT.read_bytes())
        for name, content in (files or {}).items():
            target = tmp_path / name
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
        before = sorted(p.name for p in tmp_path.iterdir())
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                got = main([a.format(dir=tmp_path) for a in argv] + ["--quiet"])
        except SystemExit as exc:
            got = exc.code
        if got == 0:
            return tmp_path
        assert got == code, (got, err.getvalue())
        assert sorted(p.name for p in tmp_path.iterdir()) == before    # nothing written
        assert "Traceback" not in err.getvalue()
        raise CrowdDataError(err.getvalue().strip())
    return run


AGG = ["aggregate", "{dir}/answers.csv", "--out", "{dir}/out.csv", "--method", "ds"]
for name, gold, pattern in (
        ("unknown-item", "task,label\nzz,1\n",
         r"gold.csv: line 2: item 'zz' is not an item of .*answers.csv"),
        ("label-not-a-class", "task,label\nt1,1\nt2,7\n",
         r"gold.csv: line 3: label 7 of item 't2' is not one of the classes \[0, 1\]"),
        ("text-label", "task,label\nt1,yes\n",
         r"gold.csv: line 2: label 'yes' of item 't1' is not one of the classes"),
        ("fractional-label", "task,label\nt1,0.5\n",
         r"gold.csv: line 2: label 0.5 of item 't1' is not one of the classes \[0, 1\]"),
        ("empty-label", "task,label\nt1,1\nt2,\n",
         r"gold.csv: line 3: missing label \('label', --label\) of item 't2'"),
        ("missing-item", "task,label\n,1\n", r"gold.csv: line 2: missing item \('task', --item\)"),
        ("empty-file", "", r"gold.csv: the file is empty \(no header line\)"),
        ("latin-1", "task,label\nt\xe9,1\n".encode("latin-1"),
         r"gold.csv: not UTF-8 text: byte 0xe9 on line 2"),
        ("a-row-too-long", "task,label\nt1,1,0\n",
         r"gold.csv: line 2 has 3 fields but the header has 2"),
        ("after-blank-lines", "task,label\n\nt1,1\n \nzz,1\n",   # pandas skips blank lines
         r"gold.csv: line 5: item 'zz' is not an item of"),
        ("twice-after-a-quoted-line-end", 'task,label\n"t\n1",1\nt2,1\nt2,0\n',
         r"gold.csv: item 't2' is given more than once, on lines 4 and 5 \(labels 1 and 0\)")):
    case("cli_input", f"aggregate-gold-{name}",
         cli_files(AGG + ["--gold", "{dir}/gold.csv"], {"gold.csv": gold}), error(pattern))
case("cli_input", "aggregate-gold-a-folder", cli_files(AGG + ["--gold", "{dir}"]),
     error(r"pytest.*: is a folder, not a file"))
case("cli_input", "aggregate-gold-bom-crlf",     # Excel's UTF-8 CSV: accepted
     cli_files(AGG + ["--gold", "{dir}/gold.csv"], {"gold.csv": "\ufefftask,label\r\nt1,1\r\n"}),
     accept(lambda d: pd.read_csv(d / "out.csv").shape == (12, 6)))
case("cli_input", "aggregate-gold-float-codes",     # 1.0 of a column with a blank: class 1
     cli_files(AGG + ["--gold", "{dir}/gold.csv"], {"gold.csv": "task,label\nt1,1.0\nt2,0.0\n"}),
     accept(lambda d: pd.read_csv(d / "out.csv").shape == (12, 6)))
for name, text, pattern in (
        ("a-row-too-long", "task,worker,label\na,u,1,9\nb,v,0\n",
         r"answers.csv: line 2 has 4 fields but the header has 3"),
        ("latin-1", "task,worker,label\nt\xe9,u,1\n".encode("latin-1"),
         r"answers.csv: not UTF-8 text: byte 0xe9 on line 2"),
        ("empty", "", r"answers.csv: the file is empty \(no header line\)"),
        ("bad-row-after-blank-lines", "\ntask,worker,label\na,u,1\n\n\nb,v,-1\n",
         r"answers.csv: line 6: label -1 \(item 'b', annotator 'v'; column 'label', --label\) "
         r"is not a whole number 0, 1, 2, ...: .* \(--classes=-1,1\)")):
    case("cli_input", f"aggregate-input-{name}",
         cli_files(["aggregate", "{dir}/answers.csv", "--out", "{dir}/out.csv"],
                   {"answers.csv": text}), error(pattern))
for name, argv, pattern in (
        ("out-a-folder", ["aggregate", "{dir}/answers.csv", "--out", "{dir}"],
         r"--out '.*' is a folder; give the path of a file to write"),
        ("annotators-a-folder", AGG + ["--annotators", "{dir}"],
         r"--annotators '.*' is a folder; give the path of a file to write"),
        ("agree-out-a-file", ["agree", "{dir}/answers.csv", "--out", "{dir}/export.json",
                              "--bootstrap", "0"],
         r"--out '.*export.json' is a file; give a folder \(it is created when missing\)")):
    case("cli_input", name, cli_files(argv), error(pattern))
LS_AGG = ["label-studio", "aggregate", "{dir}/export.json", "--control", "sentiment", "--out",
          "{dir}/p.json"]
for name, flags, pattern in (
        ("on-existing-without-url", ["--on-existing", "replace"],
         r"--on-existing only applies to a push: add --url and --project, or drop it"),
        ("retries-and-batch-size-without-url", ["--retries", "2", "--batch-size", "5"],
         r"--batch-size, --retries only apply to a push"),
        ("allow-data-mismatch-without-url", ["--allow-data-mismatch"],
         r"--allow-data-mismatch only applies to a push"),
        ("prune-stale-without-url", ["--prune-stale"],
         r"--prune-stale only applies to a push"),
        ("text-key-for-choices", ["--text-key", "body"],
         r"--text-key applies to span controls; control 'sentiment' is not one"),
        ("scheme-for-choices", ["--scheme", "BIO"], r"--scheme BIO applies to span controls"),
        ("to-name-not-the-export's", ["--to-name", "nope"],
         r"--to-name 'nope' differs from the object 'text' that the export's results of control "
         r"'sentiment' label"),
        ("model-version-empty", ["--model-version", " "], r"--model-version is empty"),
        ("out-a-folder", ["--out", "{dir}"], r"--out '.*' is a folder")):
    case("cli_input", f"ls-{name}", cli_files(LS_AGG + flags, code=2), error(pattern))
for name, flags, pattern in (
        ("report-out-a-file", ["--out", "{dir}/answers.csv"],
         r"--out '.*answers.csv' is a file; give a folder"),
        ("report-bootstrap--1", ["--out", "{dir}/r", "--bootstrap", "-1"],
         r"argument --bootstrap: must be an integer >= 0, got '-1'"),
        ("report-seed-text", ["--out", "{dir}/r", "--seed", "x"],
         r"argument --seed: must be an integer >= 0, got 'x'")):
    case("cli_input", f"ls-{name}",
         cli_files(["label-studio", "report", "{dir}/export.json"] + flags, code=2),
         error(pattern))
for flag, value in (("--bootstrap", "-5"), ("--seed", "-1"), ("--bootstrap", "2.5")):
    case("cli_input", f"agree{flag}={value}",
         cli_files(["agree", "{dir}/answers.csv", flag, value], code=2),
         error(rf"argument {flag}: must be an integer >= 0, got '{re.escape(value)}'"))
case("cli_input", "ls-push-flags-with-url-are-not-refused-as-ignored",   # checked, then the token
     cli_files(LS_AGG + ["--url", "http://127.0.0.1:9", "--project", "1", "--retries", "0"]),
     error(r"no Label Studio API token|could not reach|Connection"))


def keras_oof(make, **kwargs):
    """``out_of_fold`` with Keras models made by ``make(keras)`` on 30 items, 3 features."""
    def run(tmp_path):
        keras = pytest.importorskip("keras")
        from crowd_keras.features import out_of_fold
        rng = np.random.default_rng(0)
        x = rng.normal(size=(30, 3)).astype("float32")
        return out_of_fold(make(keras), x, (x[:, 0] > 0).astype(int), n_splits=2,
                           fit_kwargs={"epochs": 1}, **kwargs)
    return run


def _dense(keras, units, activation="softmax", loss="categorical_crossentropy"):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(units,
                                                                    activation=activation)])
    model.compile(loss=loss, optimizer="adam")
    return model


case("features", "out_of_fold-keras-three-outputs-for-two-classes",
     keras_oof(lambda keras: lambda: _dense(keras, 3)),
     error(r"the Keras model outputs 3 value\(s\) per item, expected 2: one soft-max output "
           r"per class"))
case("features", "out_of_fold-keras-one-sigmoid",
     keras_oof(lambda keras: lambda: _dense(keras, 1, "sigmoid", "binary_crossentropy")),
     error(r"the Keras model outputs 1 value\(s\) per item, expected 2"))
case("features", "out_of_fold-keras-a-model-not-a-function",
     keras_oof(lambda keras: _dense(keras, 2)),
     error(r"model_fn is a Keras model \(Sequential\); pass a function that builds and "
           r"compiles a fresh one", TypeError))
case("features", "out_of_fold-keras-logits",
     keras_oof(lambda keras: lambda: _dense(keras, 2, None)),
     error(r"the Keras model's outputs sum to .*, not 1: end it with a soft-max activation"))
case("keras", "crowd-layer-ids-rows-differ",
     keras_call(lambda L, _: L.CrowdLayer(4)([P3, np.array([[0, 1], [1, 2], [2, 3]])])),
     error(r"CrowdLayer: annotator_ids have 3 rows but the first input has 2: one row of "
           r"annotator ids per item", ValueError))


def snorkel_path(call):
    def run(tmp_path):
        from crowd_keras.integrations.snorkel import CrowdLabelModel
        L = np.array([[0, 1, -1], [1, 1, 0], [0, -1, 0], [1, 0, 1]] * 5)
        return call(CrowdLabelModel().fit(L, progress_bar=False), CrowdLabelModel, tmp_path)
    return run


case("files", "snorkel-save-to-a-folder", snorkel_path(lambda m, M, d: m.save(d)),
     error(r"pytest.* is a folder; save to a file \(e.g. label_model.npz\)"))
case("files", "snorkel-load-a-folder", snorkel_path(lambda m, M, d: M().load(d)),
     error(r"pytest.* is a folder; load a file"))
case("snorkel", "save-to-an-int",     # open(3, "wb") would write to file descriptor 3
     snorkel_path(lambda m, M, d: m.save(3)),
     error(r"destination must be a file path \(str or pathlib.Path\), got int 3", TypeError))


# ---------------------------------------------------------------------------- readers' arguments
SMALL = pd.DataFrame({"task": [1, 1, 2], "worker": ["a", "b", "a"], "label": ["x", "y", "x"]})
for name, make, pattern, exc in (
        ("frame-classes-twice", lambda: Annotations.from_frame(SMALL, classes=["x", "x", "y"]),
         r"class ids must be unique; class id 'x' at position 1 repeats position 0",
         CrowdDataError),
        ("frame-item_ids-twice", lambda: Annotations.from_frame(SMALL, item_ids=[1, 2, 2]),
         r"item ids must be unique; item id 2 at position 2 repeats position 1", CrowdDataError),
        ("frame-classes-one-string", lambda: Annotations.from_frame(SMALL, classes="xy"),
         r"identifiers must be a list, got the string 'xy' \(one id: \['xy'\]\)", TypeError),
        ("dense-classes-one-string", lambda: Annotations.from_dense([[0, 1]], classes="ab"),
         r"identifiers must be a list, got the string 'ab'", TypeError),
        ("frame-item_ids-one-number", lambda: Annotations.from_frame(SMALL, item_ids=5),
         r"identifiers must be a list, got int 5 \(one id: \[5\]\)", TypeError),
        # a set's order is its hashes' (another per process for strings): the class codes
        # and the rows of every result followed it
        ("frame-classes-a-set", lambda: Annotations.from_frame(SMALL, classes={"x", "y"}),
         r"identifiers must be a list in code order, got a set, whose order is arbitrary "
         r"\(pass sorted\(ids\)", TypeError),
        ("ctor-item_ids-a-frozenset", lambda: Annotations([0], [0], [0], item_ids=frozenset([7])),
         r"identifiers must be a list in code order, got a frozenset", TypeError),
        # a NaN id, refused in a frame's columns and a wide frame's index, was kept as given:
        # a class None answered consensus labels None, which no reader takes back
        ("frame-item_ids-a-NaN", lambda: Annotations.from_frame(SMALL, item_ids=[1, 2, np.nan]),
         r"missing item id \(nan\) at position 2: every item needs an id", CrowdDataError),
        ("ctor-classes-a-None", lambda: Annotations([0], [0], [0], classes=["x", None]),
         r"missing class id \(None\) at position 1: every class needs an id", CrowdDataError),
        # named "n_items=2 disagrees with 1 item ids": an n_items the caller never gave
        ("dense-item_ids-too-few", lambda: Annotations.from_dense([[0, 1], [1, -1]],
                                                                  item_ids=["a"]),
         r"item_ids has 1 ids for the matrix's 2 rows \(shape \(2, 2\)\)", CrowdDataError),
        ("dense-annotator_ids-too-many", lambda: Annotations.from_dense(
            [[0, 1]], annotator_ids=["u", "v", "w"]),
         r"annotator_ids has 3 ids for the matrix's 2 columns", CrowdDataError),
        # a numpy array of classes was shown as [np.int64(0), np.int64(1)]
        ("dense-code-outside-numpy-classes", lambda: Annotations.from_dense(
            [[0, 2]], classes=np.array([0, 1])),
         r"label code 2 at row 0, column 1 is outside the 2 classes \[0, 1\]$", CrowdDataError),
        ("padded-code-outside-numpy-classes", lambda: Annotations.from_padded(
            [[0, 1]], [[0, 2]], classes=np.array(["a", "b"])),
         r"outside the 2 classes \['a', 'b'\]$", CrowdDataError),
        ("dense-missing-a-string", lambda: Annotations.from_dense([[0, 1]], missing="x"),
         r"missing must be a number \(the code of an absent annotation, e.g. -1\) or NaN, got "
         r"str 'x'", TypeError),
        ("label-matrix-cardinality-2.5",
         lambda: Annotations.from_label_matrix([[0, 1]], cardinality=2.5),
         r"cardinality must be an integer >= 1 \(a whole number, not a float\), got float 2.5",
         TypeError),
        ("label-matrix-cardinality-'2'",
         lambda: Annotations.from_label_matrix([[0, 1]], cardinality="2"),
         r"cardinality must be an integer >= 1, got str '2'", TypeError),
        ("label-matrix-cardinality-0",
         lambda: Annotations.from_label_matrix([[0, -1]], cardinality=0),
         r"cardinality must be an integer >= 1, got 0", ValueError),
        ("padded-n_annotators-2.5",
         lambda: Annotations.from_padded([[0, 1]], [[0, 1]], n_annotators=2.5),
         r"n_annotators must be an integer >= 0 \(a whole number, not a float\), got float 2.5",
         TypeError),
        ("counts-10**12", lambda: Annotations.from_counts([[10 ** 12, 0]]),
         r"label counts add up to 1e\+12 annotations, more than 2.15e\+09: too many to expand",
         CrowdDataError),
        # positions were read by their truth value: [0, 2, 1] kept the last two annotations
        ("select-positions", lambda: Annotations.from_frame(SMALL).select([0, 2, 1]),
         r"Annotations.select takes a boolean mask, one per annotation, got int64 values; for "
         r"positions give np.isin", CrowdDataError),
        ("subset-unknown-code", lambda: Annotations.from_frame(SMALL).subset([5]),
         r"item code 5 at position 0 is outside 0..1 \(Annotations.subset takes item codes", CrowdDataError)):
    case("frame", f"arguments-{name}", lambda tmp_path, make=make: make(), error(pattern, exc))


def agreement_call(call):
    def run(tmp_path):
        from crowd_keras import agreement
        from crowd_keras.agreement.report import agreement_report
        ann = Annotations.from_dense(np.array([[0, 1, 1], [1, 1, -1], [0, 0, 1], [1, -1, 1]] * 5))
        return call(agreement, agreement_report, ann)
    return run


for name, call, pattern, exc in (
        ("bootstrap-n-2.5", lambda ag, rep, ann: ag.bootstrap_ci(ann, n_bootstrap=2.5),
         r"n_bootstrap must be an integer >= 1 \(a whole number, not a float\), got float 2.5",
         TypeError),
        ("bootstrap-seed-text", lambda ag, rep, ann: ag.bootstrap_ci(ann, seed="a"),
         r"seed must be a non-negative int or None, got 'a'", ValueError),
        ("bootstrap-seed-bool", lambda ag, rep, ann: ag.bootstrap_ci(ann, seed=True),
         r"seed must be a non-negative int or None, got True", ValueError),
        ("cohen-pairs-without-kappa", lambda ag, rep, ann: ag.cohen_kappa_matrix(
            ann, pairs=ag.pairwise_kappas(ann).drop(columns="kappa")),
         r"pairs must be a pairwise_kappas\(\) frame .* got DataFrame without the column\(s\) "
         r"\['kappa'\]", TypeError),
        ("report-n_bootstrap-2.5", lambda ag, rep, ann: rep(ann, n_bootstrap=2.5),
         r"n_bootstrap must be an integer >= 0 .* got float 2.5", TypeError),
        ("cohen-pairs-a-list", lambda ag, rep, ann: ag.cohen_kappa_matrix(ann, pairs=[(0, 9)]),
         r"pairs must be a pairwise_kappas\(\) frame \(columns annotator_a, annotator_b, ...\), "
         r"got list", TypeError),
        ("cohen-pairs-unknown-annotator", lambda ag, rep, ann: ag.cohen_kappa_matrix(
            ann, pairs=ag.pairwise_kappas(ann).assign(annotator_b=9)),
         r"pairs row 0: annotator 9 is not an annotator of these annotations", CrowdDataError)):
    case("agreement", name, agreement_call(call), error(pattern, exc))
case("agreement", "report-without-intervals", agreement_call(
    lambda ag, rep, ann: rep(ann, n_bootstrap=0)),
     accept(lambda r: bool(np.isnan(r.summary["low"]).all())))


def sequence_call(call):
    def run(tmp_path):
        from crowd_keras.sequences.annotations import SequenceAnnotations
        from crowd_keras.sequences.registry import get_sequence_model
        seq = SequenceAnnotations.from_spans(["John met Mary", "in Paris today"], pd.DataFrame(
            {"doc": [0, 0, 1, 0, 1], "annotator": ["a", "a", "a", "b", "b"],
             "start": [0, 9, 3, 0, 3], "end": [4, 13, 8, 4, 8],
             "label": ["PER", "PER", "LOC", "PER", "LOC"]}))
        return call(seq, get_sequence_model)
    return run


for name, call, pattern, exc in (
        ("decode-code-9", lambda s, g: s.decode(np.full(s.n_tokens, 9)),
         r"tag code 9 of token 0 is outside 0..2 \(IO tags of 2 label\(s\)\)", CrowdDataError),
        ("decode-fraction", lambda s, g: s.decode(np.full(s.n_tokens, 0.5)),
         r"tags has a non-integer code 0.5 at token \(0,\)", CrowdDataError),
        ("subset-code-9", lambda s, g: s.subset([9]),
         r"document code 9 at position 0 is outside 0..1 \(subset takes document codes\)",
         CrowdDataError),
        ("token_prior-row-half-nan", lambda s, g: g("dawid_skene").fit(
            s, token_prior=_row(np.full((s.n_tokens, s.n_tags), 1 / 3), 2, [np.nan, .5, .5])),
         r"token_prior row 2 mixes NaN and numbers: \[nan, 0.5, 0.5\]", CrowdDataError),
        ("model-max_iter-2.5", lambda s, g: g("dawid_skene", max_iter=2.5).fit(s),
         r"TokenDawidSkene max_iter must be an integer >= 0 .* got float 2.5", TypeError),
        ("model-tol-nan", lambda s, g: g("hmm_crowd", tol=float("nan")).fit(s),
         r"HMMCrowd tol must be a finite number, got nan", ValueError)):
    case("spans", f"sequence-{name}", sequence_call(call), error(pattern, exc))
case("spans", "sequence-token_prior-all-nan-is-none",      # NaN rows: no prior (documented)
     sequence_call(lambda s, g: (g("dawid_skene").fit(s, token_prior=np.full(
         (s.n_tokens, s.n_tags), np.nan)).predict(), g("dawid_skene").fit(s).predict())),
     accept(lambda pair: bool(np.array_equal(*pair))))


def ls_predictions(call):
    """``call(label_studio module, export, uniform probabilities, tmp_path)`` on the demo
    export's sentiment control."""
    def run(tmp_path):
        from crowd_keras.integrations import label_studio as ls
        export = ls.read_export(EXPORT, control="sentiment")
        uniform = np.full((len(export.task_ids), len(export.classes)), 1 / len(export.classes))
        return call(ls, export, uniform, tmp_path)
    return run


for name, call, pattern, exc in (
        ("negative-probability", lambda ls, e, p, d: ls.to_predictions(
            e, _row(p, 1, [-1.0, 1.0, 1.0]), "v1"),
         r"probabilities of task 2 \(row 1\) are not probabilities \(finite, non-negative, "
         r"summing to 1\): \[-1.0, 1.0, 1.0\]", CrowdDataError),
        ("nan-probabilities", lambda ls, e, p, d: ls.to_predictions(
            e, _row(p, 1, np.nan), "v1"),
         r"probabilities of task 2 \(row 1\) are not probabilities", CrowdDataError),
        ("to_name-an-int", lambda ls, e, p, d: ls.to_predictions(e, p, "v1", to_name=5),
         r"to_name must be the name of the labeled object \(a non-empty string\), got 5",
         CrowdDataError),
        ("write-a-dict", lambda ls, e, p, d: ls.write_predictions(d / "p.json", {"task": 1}),
         r"predictions must be a list of prediction dicts, got dict", TypeError),
        ("write-entries-without-task", lambda ls, e, p, d: ls.write_predictions(
            d / "p.json", [{"result": []}]),
         r"prediction 0 is not a dict naming its 'task'", CrowdDataError),
        ("write-to-a-folder", lambda ls, e, p, d: ls.write_predictions(d, []),
         r"pytest.* is a folder; give the path of a file to write", CrowdDataError)):
    case("files" if name.startswith("write-to") else "label_studio", f"predictions-{name}",
         ls_predictions(call), error(pattern, exc))


# ---------------------------------------------------------------------------- the tests
def test_corpus_size_and_tally():
    outcomes = {}
    for family, _, (kind, _, _) in CASES.values():
        outcomes.setdefault(kind, 0)
        outcomes[kind] += 1
    families = {family for family, _, _ in CASES.values()}
    assert len(CASES) >= 680, len(CASES)
    assert {"json", "json_min", "csv", "tsv", "frame", "dense", "label_matrix", "snorkel",
            "cli", "dask", "keras", "files", "spans", "label_model", "features", "wide",
            "quality", "cleanlab", "cli_input", "agreement", "label_studio"} <= families
    assert outcomes["accept"] >= 53 and outcomes["error"] >= 627, outcomes


@pytest.mark.parametrize("key", sorted(CASES))
def test_malformed_input(key, tmp_path, capsys):
    family, run, (kind, expected, exc) = CASES[key]
    if kind == "accept":
        assert expected(run(tmp_path)) is True
        return
    with pytest.raises(exc) as info:
        run(tmp_path)
    text = str(info.value)
    raised = type(info.value)
    if exc is NotFittedError and raised is not exc:   # scikit-learn is loaded: raised as the
        raised = raised.__bases__[0]                   # subclass that is also its NotFittedError
    assert raised is exc, (type(info.value), text)
    assert re.search(expected, text), f"{text!r} does not match {expected!r}"
    if family in ("json", "json_min", "csv", "tsv"):  # the file is named
        assert str(tmp_path / "export") in text, text
    if family == "files":
        assert str(tmp_path) in text, text
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
# an output under a path that is a file: refused before the fit, not after --out is written
_UNDER = r"'.*answers\.csv' is a file, so no folder can be made there"
CLI_FILE_CASES += [
    ("aggregate-annotators-under-a-file",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/o.csv", "--annotators",
      "{dir}/answers.csv/a.csv"], 1, r"--annotators '.*answers\.csv/a\.csv': " + _UNDER),
    ("aggregate-out-two-folders-under-a-file",
     ["aggregate", "{dir}/answers.csv", "--out", "{dir}/answers.csv/x/o.csv"], 1,
     r"--out '.*answers\.csv/x/o\.csv': " + _UNDER),
    ("agree-out-under-a-file",
     ["agree", "{dir}/answers.csv", "--out", "{dir}/answers.csv/r", "--bootstrap", "0"], 1,
     r"--out '.*answers\.csv/r': " + _UNDER),
    ("ls-annotators-under-a-file",
     ["label-studio", "aggregate", "{dir}/export.json", "--out", "{dir}/p.json",
      "--annotators", "{dir}/answers.csv/a.csv"], 2, r"--annotators .*" + _UNDER),
    ("ls-report-out-under-a-file",
     ["label-studio", "report", "{dir}/export.json", "--out", "{dir}/answers.csv/r"], 2,
     r"--out '.*answers\.csv/r': " + _UNDER),
]
# a report command writes DIR/report.html and DIR/report.json: an input of that name there
_IN_OUT = r"the report file \(in --out\) '.*{}' "
CLI_FILE_CASES += [
    ("ls-report-json-over-export", ["label-studio", "report", "{dir}/report.json", "--out",
                                    "{dir}"], 2,
     _IN_OUT.format(r"report\.json") + _SAME.format("the export")),
    ("agree-report-html-over-input", ["agree", "{dir}/report.html", "--out", "{dir}/.",
                                      "--bootstrap", "0"], 1,
     _IN_OUT.format(r"report\.html") + _SAME.format("the input file")),
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
                       ["demo", "--per-item", "9", "--annotators", "3"], 2,
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
    (tmp_path / "report.json").write_bytes(EXPORT.read_bytes())   # inputs named as reports
    (tmp_path / "report.html").write_text(ANSWERS)
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
