"""Label Studio: read exports, aggregate, push predictions and write annotator quality.

Reading (:func:`read_export`) needs only the standard library, numpy and pandas; a
labeling config (``label_config=``) is parsed offline by ``label-studio-sdk``'s
``LabelInterface``, and pushing (:func:`push_predictions`) uses its ``LabelStudio``
client. The SDK is an optional extra (``pip install crowd-keras[label-studio]``), imported
only by the functions that need it.

Mapping
-------
* items = Label Studio tasks (every task of the export, also those without annotation, in
  export order), annotators = users (their integer id; the e-mail when the export carries
  only e-mails), classes = the choices of one ``Choices`` control (or the values of one
  ``Rating`` control), from the labeling config when given, else the sorted values seen.
* One annotation of a user on a task = one crowd annotation. Skipped (``was_cancelled``)
  annotations are counted, not used. Several annotations of one user on one task: the
  latest (``updated_at``, then ``created_at``, then annotation id) wins, the others are
  counted as superseded. ``ground_truth`` annotations are kept apart in
  :attr:`LabelStudioExport.gold` (for evaluation) unless ``include_gold=True``. Note that
  Label Studio flags annotations imported together with tasks as ground truth unless the
  import says ``"ground_truth": false``: for such projects pass ``include_gold=True``.
* Multiple choice: a single-label model needs exactly one class per annotation, so an
  annotation with several choices raises :class:`~crowd_keras.CrowdDataError` unless
  ``multiple="combination"`` (each distinct *set* of choices becomes one class, named by
  joining the choices with ``separator``; predictions write the set back) or
  ``multiple="skip"`` (such annotations are left out and counted). One annotation per
  chosen label is never produced: it would make one user vote twice on one task.

Formats
-------
Full JSON (list of tasks; ``completed_by`` an int or an object), JSON_MIN and CSV/TSV (one
row per annotation). JSON_MIN, CSV and TSV leave out skipped annotations, ``ground_truth``
flags, the ``to_name`` of controls and tasks whose annotations were all skipped; they do not
say which columns are controls, so pass ``control=`` or ``label_config=`` for them.

Annotator quality has no slot in Label Studio: :func:`annotator_report` writes it as CSV and
JSON keyed by user id and e-mail. The API token is read from an argument or the
``LABEL_STUDIO_API_KEY`` environment variable and is scrubbed from every error message.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from crowd_keras.annotations import Annotations
from crowd_keras.errors import CrowdDataError
from crowd_keras.files import atomic_write_text

__all__ = [
    "LabelStudioExport", "ExportSummary", "PushResult", "LabelStudioError", "read_export",
    "to_predictions", "predictions_from_model", "write_predictions", "push_predictions",
    "annotator_report", "write_report", "gold_accuracy", "connect", "fetch_user_emails",
    "describe_error", "API_KEY_ENV",
]

API_KEY_ENV = "LABEL_STUDIO_API_KEY"
FORMATS = ("JSON", "JSON_MIN", "CSV", "TSV")
_MULTIPLE = ("error", "combination", "skip")
_SUPPORTED_TAGS = frozenset({"choices", "rating"})  # config tag = result type, lower case
_MIN_META = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time",
             "agreement", "draft_created_at"}
# The SDK retries connection errors itself, also for POST: a lost reply would then duplicate a
# batch. push_predictions retries on its own, after checking what the server already holds.
_NO_RETRY = {"max_retries": 0}
_INSTALL_HINT = "install the optional extra: pip install 'crowd-keras[label-studio]'"


class LabelStudioError(RuntimeError):
    """A call to a Label Studio server failed (message scrubbed of the API token)."""


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ExportSummary:
    """What :func:`read_export` read, used and left out (counts of annotations)."""

    format: str
    control: str
    control_type: str
    n_tasks: int
    n_tasks_unannotated: int
    n_annotations_read: int
    n_used: int
    n_cancelled: int
    n_without_label: int
    n_superseded: int
    n_gold: int
    n_gold_conflicts: int
    n_multiple_skipped: int
    n_annotators: int
    notes: tuple = ()

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["notes"] = list(self.notes)
        return out

    def __str__(self) -> str:
        parts = [f"{self.format} export, control '{self.control}' ({self.control_type}):",
                 f"{self.n_tasks} tasks ({self.n_tasks_unannotated} without a used annotation),",
                 f"{self.n_annotators} annotators, {self.n_annotations_read} annotations read,",
                 f"{self.n_used} used, {self.n_cancelled} skipped/cancelled,",
                 f"{self.n_without_label} without a label for the control,",
                 f"{self.n_superseded} superseded by a later one of the same user,",
                 f"{self.n_gold} ground truth"]
        if self.n_gold_conflicts:
            parts.append(f"({self.n_gold_conflicts} conflicting)")
        if self.n_multiple_skipped:
            parts.append(f", {self.n_multiple_skipped} multi-choice skipped")
        return " ".join(parts)


@dataclass(frozen=True, eq=False)
class LabelStudioExport:
    """A Label Studio export read for crowd learning.

    Attributes:
        annotations: :class:`~crowd_keras.Annotations`; items = tasks (``task_ids``),
            annotators = users (``annotator_ids``), classes = ``classes``.
        task_ids: (n_tasks,) task ids in export order (tasks without annotation included).
        annotator_ids: (n_annotators,) user ids (or e-mails where the export has only those).
        annotator_emails: (n_annotators,) object array, ``None`` where the export has no e-mail.
        classes: (n_classes,) class names; ``class_choices[k]`` is the tuple of choice
            values class ``k`` stands for (one value, or a set with ``multiple="combination"``).
        gold: ground-truth label per task (class names, indexed by task id) from
            ``ground_truth`` annotations; empty when there are none.
        control, control_type, to_name: the control read (``"choices"`` or ``"rating"``)
            and the object it labels (``None`` when the export does not say).
        summary: :class:`ExportSummary`.
        annotator_stats: per user: ``annotator, email, n_used, n_cancelled, n_superseded,
            n_gold``.
    """

    annotations: Annotations
    task_ids: np.ndarray
    annotator_ids: np.ndarray
    annotator_emails: np.ndarray
    classes: np.ndarray
    class_choices: tuple
    gold: pd.Series
    control: str
    control_type: str
    to_name: Optional[str]
    format: str
    summary: ExportSummary
    annotator_stats: pd.DataFrame = field(repr=False)

    def gold_codes(self) -> np.ndarray:
        """(n_tasks,) int64 class code of the gold label, -1 where a task has none."""
        codes = np.full(len(self.task_ids), -1, dtype=np.int64)
        if len(self.gold):
            rows = pd.Index(self.task_ids).get_indexer(self.gold.index)
            codes[rows] = pd.Index(self.classes).get_indexer(self.gold.to_numpy())
        return codes


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_predictions` did: predictions created, left as they were, replaced."""

    model_version: str
    n_created: int
    n_unchanged: int
    n_replaced: int
    n_batches: int


# ---------------------------------------------------------------------------- reading
@dataclass
class _Record:
    """One annotation as read, before the control's value is turned into a class."""

    task: Any
    annotation_id: Any
    annotator: Any
    email: Optional[str]
    cancelled: bool
    gold: bool
    time: Optional[str]
    where: str
    result: Any = None  # full JSON: the result list
    raw: Any = None  # JSON_MIN/CSV: the control column's value
    selection: Optional[tuple] = None


def read_export(source: Any, control: Optional[str] = None, label_config: Any = None, *,
                format: Optional[str] = None, multiple: str = "error", separator: str = "|",
                include_gold: bool = False) -> LabelStudioExport:
    """Read a Label Studio export into crowd annotations.

    Args:
        source: a path, a file object (text or binary), ``bytes``, or loaded JSON (a list of
            tasks or JSON_MIN rows). Full JSON, JSON_MIN, CSV and TSV are told apart by content
            (and the ``.tsv``/``.csv`` suffix); ``format`` forces one of ``FORMATS``.
        control: the ``name`` of the Choices/Rating control to read. Optional for full JSON
            when one such control is used (or declared in ``label_config``).
        label_config: the project's labeling config (XML text, a path to it, or a
            ``LabelInterface``); gives the classes in config order and validates values.
        multiple: what an annotation with several choices means: ``"error"`` (default),
            ``"combination"`` (the set is one class) or ``"skip"`` (left out, counted).
        separator: joins the choices of a set into a class name (``multiple="combination"``).
        include_gold: also use ``ground_truth`` annotations as ordinary annotations (they
            are always returned in ``gold`` too).

    Returns:
        :class:`LabelStudioExport`.

    Raises:
        CrowdDataError: malformed export (the message names the task, annotation and value).
    """
    if multiple not in _MULTIPLE:
        raise ValueError(f"multiple must be one of {_MULTIPLE}, got {multiple!r}")
    if format is not None and format.upper() not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    config = _parse_config(label_config) if label_config is not None else None
    fmt, payload, origin = _load(source, format.upper() if format else None)
    notes = []
    if fmt == "JSON":
        tasks, records, seen = _records_from_full(payload, origin)
        name, kind, to_name = _pick_control_full(control, config, seen, origin)
        for rec in records:
            if not rec.cancelled:
                rec.selection = _selection_full(rec, name, kind)
    else:
        tasks, records, columns, bare = _records_from_rows(payload, origin)
        name, kind, to_name = _pick_control_rows(control, config, columns, fmt, origin)
        for where, row in bare:
            if row.get(name) not in (None, ""):
                raise CrowdDataError(f"{where}: a value {row[name]!r} for control '{name}' but no "
                                     "annotator nor annotation_id")
        for rec in records:
            rec.selection = _selection_min(rec, name, kind)
        notes.append(f"{fmt} exports leave out skipped annotations, ground_truth flags and "
                     "tasks whose annotations were all skipped")
    return _build(tasks, records, fmt, name, kind, to_name, config, multiple, separator,
                  include_gold, notes)


def _load(source: Any, fmt: Optional[str]) -> tuple[str, Any, str]:
    """(format, payload, description): payload is a list of dicts (JSON) or of CSV rows."""
    origin = "export"
    if isinstance(source, (list, dict)):
        return _json_kind(source, fmt, origin), _as_task_list(source, origin), origin
    suffix = ""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        origin = f"export {str(path)!r}"
        suffix = path.suffix.lower()
        try:
            data = path.read_bytes()
        except OSError as exc:
            if isinstance(source, str) and ("\n" in source or source.lstrip()[:1] in ("[", "{")):
                raise CrowdDataError(
                    "a str source is read as a path, and this looks like export text: pass it "
                    "as bytes or a file object (io.StringIO)") from None
            what = "file not found" if isinstance(exc, FileNotFoundError) else \
                f"cannot read it ({type(exc).__name__})"
            raise CrowdDataError(f"{origin}: {what}") from None
    elif hasattr(source, "read"):
        name = getattr(source, "name", None)
        if isinstance(name, str):
            origin = f"export {name!r}"
            suffix = Path(name).suffix.lower()
        data = source.read()
    elif isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        raise CrowdDataError(f"cannot read a Label Studio export from a {type(source).__name__}; "
                             "pass a path, a file object, bytes or loaded JSON")
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CrowdDataError(f"{origin}: not UTF-8 text (byte {exc.start})") from None
    elif isinstance(data, str):
        text = data.lstrip("\ufeff")
    else:
        raise CrowdDataError(f"{origin}: the file object returned {type(data).__name__}")
    stripped = text.lstrip()
    if not stripped:
        raise CrowdDataError(f"{origin} is empty")
    if fmt in (None, "JSON", "JSON_MIN") and stripped[0] in "[{":
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CrowdDataError(
                f"{origin}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
                "(truncated or not a JSON export?)") from None
        return _json_kind(loaded, fmt, origin), _as_task_list(loaded, origin), origin
    if fmt in ("JSON", "JSON_MIN"):
        raise CrowdDataError(f"{origin}: a {fmt} export must start with '[' or '{{'")
    if fmt is None:
        first = stripped.splitlines()[0]
        fmt = ("TSV" if suffix == ".tsv" else "CSV" if suffix == ".csv"
               else "TSV" if first.count("\t") > first.count(",") else "CSV")
    return fmt, _csv_rows(text, "\t" if fmt == "TSV" else ",", origin), origin


def _as_task_list(loaded: Any, origin: str) -> list:
    if isinstance(loaded, dict):
        loaded = [loaded]
    if not isinstance(loaded, list):
        raise CrowdDataError(f"{origin}: expected a list of tasks, got a JSON "
                             f"{type(loaded).__name__}")
    if not loaded:
        raise CrowdDataError(f"{origin} holds no tasks (an empty list)")
    for i, row in enumerate(loaded):
        if not isinstance(row, dict):
            raise CrowdDataError(f"{origin}: entry {i} is not a JSON object "
                                 f"(got {type(row).__name__})")
    return loaded


def _json_kind(loaded: Any, fmt: Optional[str], origin: str) -> str:
    if isinstance(loaded, dict):
        first = loaded
    elif isinstance(loaded, list) and loaded and isinstance(loaded[0], dict):
        first = loaded[0]
    else:
        first = {}
    full = any(k in first for k in ("annotations", "completions", "data"))
    minimal = any(k in first for k in ("annotator", "annotation_id"))
    kind = "JSON" if full else "JSON_MIN" if minimal else None
    if fmt in ("JSON", "JSON_MIN"):
        return fmt
    if kind is None and first:
        raise CrowdDataError(
            f"{origin}: the first entry has neither 'annotations'/'data' (full JSON export) nor "
            f"'annotator'/'annotation_id' (JSON_MIN export); its keys are {sorted(first)[:10]}")
    return kind or "JSON"


def _csv_rows(text: str, delimiter: str, origin: str) -> list:
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    name = "TSV" if delimiter == "\t" else "CSV"
    try:
        header = next(reader)
        rows, lines = [], []
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(header):
                raise CrowdDataError(f"{origin}: line {reader.line_num} has {len(fields)} fields, "
                                     f"the header has {len(header)}")
            rows.append(dict(zip(header, fields)))
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise CrowdDataError(f"{origin}: malformed {name} near line {reader.line_num}: "
                             f"{exc}") from None
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise CrowdDataError(f"{origin}: repeated {name} column(s) {dupes}")
    missing = [c for c in ("id", "annotator", "annotation_id") if c not in header]
    if missing:
        raise CrowdDataError(f"{origin}: not a Label Studio {name} export: no column(s) {missing} "
                             f"(columns: {header[:12]})")
    if not rows:
        raise CrowdDataError(f"{origin} holds no tasks (only a header line)")
    out = []
    for line, row in zip(lines, rows):
        clean = {k: (None if v == "" else v) for k, v in row.items()}
        clean["__line__"] = line
        out.append(clean)
    return out


def _task_id(value: Any, where: str) -> Any:
    if isinstance(value, bool) or value is None:
        raise CrowdDataError(f"{where}: task id must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, str) and value.strip():
        return int(value) if value.strip().lstrip("-").isdigit() else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise CrowdDataError(f"{where}: task id must be an integer, got {type(value).__name__} "
                         f"{value!r}")


def _opt_id(value: Any, where: str, what: str) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        raise CrowdDataError(f"{where}: {what} must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise CrowdDataError(f"{where}: {what} must be an integer, got {type(value).__name__} "
                         f"{value!r}")


def _flag(ann: dict, keys: Sequence[str], where: str) -> bool:
    for key in keys:
        value = ann.get(key)
        if value is None:
            continue
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise CrowdDataError(f"{where}: '{key}' must be true or false, got {value!r}")
        if value:
            return True
    return False


def _timestamp(ann: dict, where: str) -> Optional[str]:
    for key in ("updated_at", "created_at"):
        value = ann.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise CrowdDataError(f"{where}: '{key}' must be a date-time string, got {value!r}")
        return value
    return None


def _annotator(value: Any, where: str) -> tuple[Any, Optional[str]]:
    """(key, email) from ``completed_by`` (int, {"id", "email"}) or a JSON_MIN ``annotator``."""
    if isinstance(value, dict):
        uid, email = value.get("id"), value.get("email")
        if email is not None and not isinstance(email, str):
            raise CrowdDataError(f"{where}: completed_by.email must be a string, got {email!r}")
        if uid is None and not email:
            raise CrowdDataError(f"{where}: completed_by has neither 'id' nor 'email'")
        return (_opt_id(uid, where, "completed_by.id") if uid is not None else email), email
    if isinstance(value, bool) or value is None:
        raise CrowdDataError(f"{where}: annotator (completed_by) must be a user id or e-mail, "
                             f"got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value), None
    if isinstance(value, str) and value.strip():
        value = value.strip()
        if value.isdigit():
            return int(value), None
        return value, (value if "@" in value else None)
    raise CrowdDataError(f"{where}: annotator (completed_by) must be a user id or e-mail, "
                         f"got {type(value).__name__} {value!r}")


def _records_from_full(tasks: list, origin: str) -> tuple[list, list, dict]:
    """Task ids, one _Record per annotation, and {control: (type, to_name)} seen in results."""
    task_ids, records, seen, ann_ids = [], [], {}, {}
    seen_tasks = set()
    for i, task in enumerate(tasks):
        if "id" not in task:
            raise CrowdDataError(f"{origin}: task at position {i} has no 'id'")
        tid = _task_id(task["id"], f"{origin}: task at position {i}")
        if tid in seen_tasks:
            raise CrowdDataError(f"{origin}: task id {tid!r} appears twice (positions "
                                 f"{task_ids.index(tid)} and {i})")
        seen_tasks.add(tid)
        task_ids.append(tid)
        key = "annotations" if "annotations" in task else "completions"
        anns = task.get(key)
        if key not in task:
            raise CrowdDataError(f"{origin}: task {tid!r} has no 'annotations' list (keys: "
                                 f"{sorted(task)[:10]})")
        if anns is None:
            anns = []
        if not isinstance(anns, list):
            raise CrowdDataError(f"{origin}: task {tid!r}: 'annotations' must be a list, got "
                                 f"{type(anns).__name__}")
        for j, ann in enumerate(anns):
            where = f"{origin}: task {tid!r}, annotation at position {j}"
            if not isinstance(ann, dict):
                raise CrowdDataError(f"{where} is not an object (got {type(ann).__name__})")
            aid = _opt_id(ann.get("id"), where, "annotation id")
            if aid is not None:
                where = f"{origin}: task {tid!r}, annotation {aid}"
                if aid in ann_ids:
                    raise CrowdDataError(f"{where}: annotation id {aid} appears twice (also in "
                                         f"task {ann_ids[aid]!r})")
                ann_ids[aid] = tid
            if "completed_by" not in ann:
                raise CrowdDataError(f"{where} has no 'completed_by'")
            key_, email = _annotator(ann["completed_by"], where)
            result = ann.get("result")
            if result is None:
                result = []
            if not isinstance(result, list):
                raise CrowdDataError(f"{where}: 'result' must be a list, got "
                                     f"{type(result).__name__}")
            cancelled = _flag(ann, ("was_cancelled", "skipped"), where)
            for r_pos, item in enumerate(result):
                _check_result_item(item, f"{where}, result item {r_pos}")
                if not cancelled and item["from_name"] not in seen:
                    seen[item["from_name"]] = (str(item["type"]).lower(), item.get("to_name"))
            records.append(_Record(tid, aid, key_, email, cancelled,
                                   _flag(ann, ("ground_truth",), where), _timestamp(ann, where),
                                   where, result=result))
    return task_ids, records, seen


def _check_result_item(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise CrowdDataError(f"{where} is not an object (got {type(item).__name__})")
    for key, kind in (("from_name", str), ("type", str), ("value", dict)):
        if key not in item:
            raise CrowdDataError(f"{where} has no '{key}'")
        if not isinstance(item[key], kind):
            raise CrowdDataError(f"{where}: '{key}' must be a {kind.__name__}, got "
                                 f"{type(item[key]).__name__} {item[key]!r}")


def _records_from_rows(rows: list, origin: str) -> tuple[list, list, list, list]:
    """JSON_MIN / CSV rows: task ids, one _Record per annotation row, the column names and the
    rows of tasks without annotation as (where, row)."""
    task_ids, records, columns, bare = [], [], [], []
    seen_tasks, seen_cols, ann_ids = set(), set(), {}
    for i, row in enumerate(rows):
        at = f"line {row['__line__']}" if "__line__" in row else f"row {i}"
        for col in row:
            if col not in seen_cols and col != "__line__":
                seen_cols.add(col)
                columns.append(col)
        if row.get("id") is None:
            raise CrowdDataError(f"{origin}: {at} has no task 'id'")
        tid = _task_id(row["id"], f"{origin}: {at}")
        if tid not in seen_tasks:
            seen_tasks.add(tid)
            task_ids.append(tid)
        where = f"{origin}: {at} (task {tid!r})"
        aid = _opt_id(row.get("annotation_id"), where, "annotation_id")
        annotator = row.get("annotator")
        if aid is None and annotator is None:
            bare.append((f"{origin}: {at} (task {tid!r})", row))  # a task without annotations
            continue
        if aid is not None:
            where = f"{origin}: {at} (task {tid!r}, annotation {aid})"
            if aid in ann_ids:
                raise CrowdDataError(f"{where}: annotation id {aid} appears twice (also at "
                                     f"{ann_ids[aid]})")
            ann_ids[aid] = at
        if annotator is None:
            raise CrowdDataError(f"{where}: no 'annotator'")
        key_, email = _annotator(annotator, where)
        records.append(_Record(tid, aid, key_, email, False, False, _timestamp(row, where), where,
                               raw=row))
    return task_ids, records, columns, bare


def _parse_config(label_config: Any) -> dict:
    """{control name: (type, labels or None, to_name, max_rating)} from a labeling config."""
    try:
        from label_studio_sdk.label_interface import LabelInterface
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"label_config= needs label-studio-sdk; {_INSTALL_HINT}") from None
    if isinstance(label_config, LabelInterface):
        li = label_config
    else:
        text = label_config
        is_xml = isinstance(text, str) and text.lstrip().startswith("<")
        if isinstance(text, os.PathLike) or (isinstance(text, str) and not is_xml):
            try:
                text = Path(text).read_text(encoding="utf-8")
            except OSError as exc:
                raise CrowdDataError(f"label_config {str(label_config)!r}: cannot read it "
                                     f"({type(exc).__name__})") from None
        if not isinstance(text, str):
            raise CrowdDataError(f"label_config must be XML text, a path or a LabelInterface, got "
                                 f"{type(label_config).__name__}")
        try:
            li = LabelInterface(text)
        except Exception as exc:  # the SDK raises several unrelated exception types
            raise CrowdDataError(f"label_config could not be parsed: {exc}") from None
    out = {}
    for ctl in li.controls:
        kind = ctl.tag.lower()
        max_rating = None
        if kind == "rating":
            raw = ctl.attr.get("maxRating", 5)
            try:
                max_rating = int(raw)
            except (TypeError, ValueError):
                raise CrowdDataError(f"label_config: Rating '{ctl.name}' has "
                                     f"maxRating={raw!r}") from None
        out[ctl.name] = (kind, list(ctl.labels) if kind == "choices" else None,
                         ctl.to_name[0] if ctl.to_name else None, max_rating)
    if not out:
        raise CrowdDataError("label_config declares no control tags")
    return out


def _pick_from(candidates: list, what: str, origin: str) -> str:
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CrowdDataError(f"{origin}: no Choices or Rating control found in {what}; only those "
                             "give one class per task")
    raise CrowdDataError(f"{origin}: several controls in {what}: {candidates}; pass control= "
                         "(CLI: --control) to pick one")


def _pick_control_full(control: Optional[str], config: Optional[dict], seen: dict,
                       origin: str) -> tuple[str, str, Optional[str]]:
    if control is None:
        if config is not None:
            declared = [n for n, c in config.items() if c[0] in _SUPPORTED_TAGS]
            used = [n for n in declared if n in seen]
            control = _pick_from(used or declared, "the labeling config" + (
                " used in the annotation results" if used else ""), origin)
        else:
            control = _pick_from(sorted(n for n, (t, _) in seen.items() if t in _SUPPORTED_TAGS),
                                 "the annotation results", origin)
    if config is not None:
        if control not in config:
            raise CrowdDataError(f"control '{control}' is not in the labeling config; its controls "
                                 f"are {sorted(config)}")
        kind, _, to_name, _ = config[control]
        if control in seen and seen[control][0] != kind:
            raise CrowdDataError(f"{origin}: results of control '{control}' have type "
                                 f"'{seen[control][0]}' but the config declares '{kind}'")
    elif control in seen:
        kind, to_name = seen[control]
    else:
        raise CrowdDataError(f"{origin}: control '{control}' appears in no annotation result; "
                             f"controls seen: {sorted(seen)}")
    if kind not in _SUPPORTED_TAGS:
        raise CrowdDataError(f"control '{control}' is a {kind} control; only Choices and Rating "
                             "controls give one class per task")
    if control in seen and seen[control][1] is not None:
        to_name = seen[control][1]
    return control, kind, to_name


def _pick_control_rows(control: Optional[str], config: Optional[dict], columns: list, fmt: str,
                       origin: str) -> tuple[str, str, Optional[str]]:
    data_cols = [c for c in columns if c not in _MIN_META]
    if control is None:
        if config is None:
            raise CrowdDataError(f"{origin}: {fmt} exports do not say which columns are labeling "
                                 f"controls; pass control= (one of {data_cols}) or label_config= "
                                 "(CLI: --control, --label-config)")
        control = _pick_from([n for n, c in config.items()
                              if c[0] in _SUPPORTED_TAGS and n in columns],
                             "both the labeling config and the export columns", origin)
    if control not in columns:
        raise CrowdDataError(f"{origin}: no column '{control}' for the control; columns are "
                             f"{data_cols}")
    if config is None:
        return control, "", None  # the kind is inferred from the values
    if control not in config:
        raise CrowdDataError(f"control '{control}' is not in the labeling config; its controls are "
                             f"{sorted(config)}")
    kind, _, to_name, _ = config[control]
    if kind not in _SUPPORTED_TAGS:
        raise CrowdDataError(f"control '{control}' is a {kind} control; only Choices and Rating "
                             "controls give one class per task")
    return control, kind, to_name


def _selection_value(value: dict, kind: str, where: str, control: str) -> Optional[tuple]:
    """The choices (or the rating) in a result ``value``; ``None`` when it holds none."""
    if kind == "choices":
        choices = value.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise CrowdDataError(f"{where}: control '{control}' value.choices must be a list of "
                                 f"strings, got {choices!r}")
        return tuple(dict.fromkeys(choices)) or None
    rating = value.get("rating")
    if isinstance(rating, float) and rating.is_integer():
        rating = int(rating)
    if isinstance(rating, bool) or not isinstance(rating, int):
        raise CrowdDataError(f"{where}: control '{control}' value.rating must be an integer, got "
                             f"{rating!r}")
    return (rating,)


def _selection_full(rec: _Record, control: str, kind: str) -> Optional[tuple]:
    items = [r for r in rec.result if r["from_name"] == control]
    if not items:
        return None
    if len(items) > 1:
        raise CrowdDataError(f"{rec.where}: {len(items)} results for control '{control}' "
                             "(per-region controls are not supported: one class per task is "
                             "needed)")
    if str(items[0]["type"]).lower() != kind:
        raise CrowdDataError(f"{rec.where}: a result of control '{control}' has type "
                             f"'{items[0]['type']}', expected '{kind}'")
    return _selection_value(items[0]["value"], kind, rec.where, control)


def _selection_min(rec: _Record, control: str, kind: str) -> Optional[tuple]:
    """Selection from a JSON_MIN/CSV cell: 'a', {"choices": [...]}, [{"rating": 3}] or JSON text."""
    raw = rec.raw.get(control)
    if raw is None:
        return None
    if isinstance(raw, str) and "__line__" in rec.raw and raw.lstrip()[:1] in ("{", "["):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CrowdDataError(f"{rec.where}: column '{control}' holds invalid JSON text "
                                 f"({exc.msg}): {raw[:80]!r}") from None
    if isinstance(raw, list):
        if not raw:
            return None
        if len(raw) > 1:
            raise CrowdDataError(f"{rec.where}: {len(raw)} results for control '{control}' "
                                 "(per-region controls are not supported)")
        raw = raw[0]
    if isinstance(raw, str):
        if kind == "rating":
            raise CrowdDataError(f"{rec.where}: control '{control}' is a Rating control but holds "
                                 f"the text {raw!r}")
        return (raw,) if raw else None
    if isinstance(raw, dict):
        inner = "choices" if "choices" in raw else "rating" if "rating" in raw else None
        if inner is None or (kind and inner != kind):
            raise CrowdDataError(f"{rec.where}: column '{control}' holds {raw!r}; expected "
                                 f"{'a choice' if kind != 'rating' else 'a rating'}")
        return _selection_value(raw, inner, rec.where, control)
    raise CrowdDataError(f"{rec.where}: column '{control}' holds {type(raw).__name__} {raw!r}; "
                         "expected a choice, {'choices': [...]} or [{'rating': n}]")


def _build(tasks: list, records: list, fmt: str, control: str, kind: str, to_name: Optional[str],
           config: Optional[dict], multiple: str, separator: str, include_gold: bool,
           notes: list) -> LabelStudioExport:
    if fmt != "JSON" and not kind:
        kinds = {("rating" if isinstance(r.selection[0], int) else "choices")
                 for r in records if r.selection}
        if len(kinds) > 1:
            raise CrowdDataError(f"control '{control}' holds both choices and ratings")
        kind = kinds.pop() if kinds else "choices"
    # ---- validate values against the config
    allowed = None
    if config is not None:
        _, labels, _, max_rating = config[control]
        allowed = labels if kind == "choices" else list(range(1, max_rating + 1))
    order = {v: n for n, v in enumerate(allowed)} if allowed is not None else None
    for rec in records:
        if rec.selection is None or rec.cancelled:
            continue
        for value in rec.selection:
            if kind == "rating" and not isinstance(value, int):
                raise CrowdDataError(f"{rec.where}: rating {value!r} is not an integer")
            if order is not None and value not in order:
                what = f"rating {value!r} is outside 1..{len(allowed)}" if kind == "rating" else \
                    f"value {value!r} of control '{control}' is not in the labeling config"
                raise CrowdDataError(f"{rec.where}: {what} (classes: {allowed})")
    # ---- one class per annotation
    n_multi_skipped = 0
    labelled = []
    for rec in records:
        if rec.cancelled or rec.selection is None:
            continue
        if len(rec.selection) > 1:
            if multiple == "error":
                raise CrowdDataError(
                    f"{rec.where}: {len(rec.selection)} choices {list(rec.selection)} for control "
                    f"'{control}'; single-label models need one class per annotation. Pass "
                    "multiple='combination' to treat each set of choices as one class, or "
                    "multiple='skip' to leave these annotations out, counted (CLI: --multiple)")
            if multiple == "skip":
                n_multi_skipped += 1
                continue
        rec.selection = tuple(sorted(rec.selection,
                                     key=(order.__getitem__ if order is not None else str)))
        labelled.append(rec)
    keys = sorted({r.selection for r in labelled},
                  key=lambda s: (len(s), tuple(order[v] for v in s) if order is not None
                                 else tuple(str(v) for v in s) if kind == "choices" else s))
    if allowed is not None and multiple != "combination":
        keys = [(v,) for v in allowed]
    elif allowed is not None:
        keys = [(v,) for v in allowed] + [k for k in keys if len(k) > 1]
    if not keys:
        raise CrowdDataError(f"no annotation holds a value for control '{control}'; nothing to "
                             "learn from (are the control name and the export right?)")
    class_choices = tuple(keys)
    classes = [k[0] if len(k) == 1 else separator.join(str(v) for v in k) for k in keys]
    code_of = {k: n for n, k in enumerate(keys)}

    # ---- frame of labelled annotations; latest per (task, annotator) wins
    annotator_keys = sorted({r.annotator for r in records},
                            key=lambda a: (isinstance(a, str), a))
    emails = {}
    for rec in records:
        if rec.email and rec.annotator not in emails:
            emails[rec.annotator] = rec.email
    task_index = pd.Index(tasks)
    frame = pd.DataFrame({
        "task": pd.Series([r.task for r in labelled], dtype=object),
        "annotator": pd.Series([r.annotator for r in labelled], dtype=object),
        "code": np.array([code_of[r.selection] for r in labelled], dtype=np.int64),
        "gold": np.array([r.gold for r in labelled], dtype=bool),
        "aid": pd.Series([r.annotation_id if isinstance(r.annotation_id, int) else -1
                          for r in labelled], dtype=np.int64),
        "row": np.arange(len(labelled)),
    })
    frame["time"] = _parse_times([r.time for r in labelled], [r.where for r in labelled])
    frame = frame.sort_values(["time", "aid", "row"], na_position="first", kind="stable")
    gold_rows = frame[frame["gold"]]
    gold_last = gold_rows.drop_duplicates("task", keep="last")
    n_gold_conflicts = int((gold_rows.groupby("task")["code"].nunique() > 1).sum())
    gold = pd.Series(np.asarray(classes, dtype=object)[gold_last["code"].to_numpy()],
                     index=pd.Index(gold_last["task"].tolist(), name="task"), name="gold",
                     dtype=object)
    has_gold = set(gold.index)
    gold = gold.reindex(pd.Index([t for t in tasks if t in has_gold], name="task"))
    used = frame if include_gold else frame[~frame["gold"]]
    superseded = used.duplicated(["task", "annotator"], keep="last")
    kept = used[~superseded]
    ann_index = pd.Index(annotator_keys)
    annotations = Annotations(task_index.get_indexer(kept["task"]),
                              ann_index.get_indexer(kept["annotator"]),
                              kept["code"].to_numpy(), item_ids=tasks,
                              annotator_ids=annotator_keys, classes=classes)

    # ---- per-annotator counts
    def per_user(values: Iterable[Any]) -> np.ndarray:
        codes = ann_index.get_indexer(list(values))
        return np.bincount(codes, minlength=len(ann_index)).astype(np.int64)

    email_arr = np.array([emails.get(a) for a in annotator_keys], dtype=object)
    stats = pd.DataFrame({
        "annotator": pd.Series(annotator_keys, dtype=object),
        "email": email_arr,
        "n_used": annotations.annotations_per_annotator(),
        "n_cancelled": per_user(r.annotator for r in records if r.cancelled),
        "n_superseded": per_user(used.loc[superseded, "annotator"]),
        "n_gold": per_user(gold_rows["annotator"]),
    })
    n_without = sum(1 for r in records if not r.cancelled and r.selection is None)
    if annotations.n_annotations == 0 and len(gold_rows) and not include_gold:
        notes.append(f"all {len(gold_rows)} labelled annotations are ground_truth (Label Studio "
                     "flags annotations imported with tasks so): pass include_gold=True "
                     "(CLI: --include-gold) to use them")
    summary = ExportSummary(
        format=fmt, control=control, control_type=kind, n_tasks=len(tasks),
        n_tasks_unannotated=int((annotations.annotations_per_item() == 0).sum()),
        n_annotations_read=len(records), n_used=annotations.n_annotations,
        n_cancelled=sum(r.cancelled for r in records), n_without_label=n_without,
        n_superseded=int(superseded.sum()), n_gold=int(len(gold_rows)),
        n_gold_conflicts=n_gold_conflicts, n_multiple_skipped=n_multi_skipped,
        n_annotators=len(annotator_keys), notes=tuple(notes))
    return LabelStudioExport(
        annotations=annotations, task_ids=annotations.item_ids,
        annotator_ids=annotations.annotator_ids, annotator_emails=email_arr,
        classes=annotations.classes, class_choices=class_choices, gold=gold, control=control,
        control_type=kind, to_name=to_name, format=fmt, summary=summary, annotator_stats=stats)


def _parse_times(values: list, wheres: list) -> pd.Series:
    parsed = pd.to_datetime(pd.Series(values, dtype=object), utc=True, errors="coerce",
                            format="ISO8601")
    bad = parsed.isna().to_numpy() & pd.notna(pd.Series(values, dtype=object)).to_numpy()
    if bad.any():
        n = int(np.argmax(bad))
        raise CrowdDataError(f"{wheres[n]}: unreadable date-time {values[n]!r}")
    return parsed


# ---------------------------------------------------------------------------- predictions
def to_predictions(export: LabelStudioExport, proba: Any, model_version: str, *,
                   include_unannotated: bool = False,
                   to_name: Optional[str] = None) -> list[dict]:
    """Label Studio predictions from items × classes probabilities.

    One prediction per task (tasks without a used annotation only with
    ``include_unannotated=True``): ``{"task", "model_version", "score", "result"}`` where
    ``score`` is the probability of the predicted class and ``result`` holds one item in the
    control's format (``{"choices": [...]}`` or ``{"rating": n}``).

    Args:
        proba: (n_tasks, n_classes) rows in ``export.task_ids`` order.
        to_name: the object the control labels; default ``export.to_name`` (JSON_MIN/CSV
            exports do not carry it: pass it or read with ``label_config=``).
    """
    p = np.asarray(proba, dtype=np.float64)
    shape = (len(export.task_ids), len(export.classes))
    if p.shape != shape:
        raise CrowdDataError(f"probabilities must have shape {shape} (tasks × classes), got "
                             f"{p.shape}")
    if not isinstance(model_version, str) or not model_version:
        raise CrowdDataError(f"model_version must be a non-empty string, got {model_version!r}")
    to_name = to_name or export.to_name
    if not to_name:
        raise CrowdDataError(f"the {export.format} export does not name the object control "
                             f"'{export.control}' labels; pass to_name= or read it with "
                             "label_config=")
    best = np.argmax(p, axis=1)
    score = p[np.arange(len(p)), best]
    rows = np.arange(len(p)) if include_unannotated else \
        np.flatnonzero(export.annotations.annotations_per_item() > 0)
    out = []
    for i in rows:
        choice = export.class_choices[best[i]]
        value = {"rating": int(choice[0])} if export.control_type == "rating" else \
            {"choices": [str(c) for c in choice]}
        out.append({"task": _plain(export.task_ids[i]), "model_version": model_version,
                    "score": float(score[i]),
                    "result": [{"from_name": export.control, "to_name": to_name,
                                "type": export.control_type, "value": value}]})
    return out


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _ensure_fitted(export: LabelStudioExport, model: Any) -> Any:
    if model is None:
        from crowd_keras.aggregation import DawidSkene
        model = DawidSkene()
    if not hasattr(model, "posteriors_"):
        model.fit(export.annotations)
    fitted = model.annotations_
    if not (np.array_equal(fitted.item_ids, export.task_ids)
            and np.array_equal(fitted.annotator_ids, export.annotator_ids)
            and np.array_equal(fitted.classes, export.classes)):
        raise CrowdDataError("the label model was fitted on other annotations than this export's; "
                             "fit it on export.annotations (or pass an unfitted model)")
    return model


def predictions_from_model(export: LabelStudioExport, model: Any = None,
                           model_version: Optional[str] = None, **kwargs: Any) -> list[dict]:
    """Fit ``model`` (default ``DawidSkene()``) on the export if needed; return its predictions.

    ``model_version`` defaults to ``"crowd-keras-<ModelClass>"``; other keyword arguments go to
    :func:`to_predictions`.
    """
    model = _ensure_fitted(export, model)
    version = model_version or f"crowd-keras-{type(model).__name__}"
    return to_predictions(export, model.predict_proba(), version, **kwargs)


def write_predictions(path: Any, predictions: Sequence[dict]) -> Path:
    """Write predictions as a JSON list (atomically: temporary file then ``os.replace``).

    Each entry names its ``task``: the file is what ``POST /api/projects/<id>/import/predictions``
    (SDK: ``client.projects.import_predictions(id, request=...)``) takes for existing tasks.
    """
    return atomic_write_text(path, json.dumps(list(predictions), indent=1, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------- annotator quality
def annotator_report(export: LabelStudioExport, model: Any = None, *, csv_path: Any = None,
                     json_path: Any = None, emails: Optional[Mapping[Any, str]] = None,
                     model_version: Optional[str] = None) -> pd.DataFrame:
    """Per-annotator quality, one row per user.

    Columns: ``annotator`` (user id), ``email``, ``n_annotations`` (used), ``n_cancelled``,
    ``n_superseded``, ``accuracy`` (the model's estimate Σ_k ρ_k π_a[k, k]),
    ``agreement`` (share of the user's labels equal to the aggregate label), ``n_gold`` and
    ``gold_accuracy`` (on tasks with a ground-truth annotation; NaN when none), and
    ``recall[<class>]`` (π_a[k, k]: the estimated chance the user gives class k when it is
    the truth). Label Studio has no place for these numbers: they are written to
    ``csv_path`` and ``json_path`` (atomically) when given.

    Args:
        model: a label model fitted on ``export.annotations`` or unfitted (it is fitted);
            default ``DawidSkene()``.
        emails: user id -> e-mail, filling e-mails the export lacks (see
            :func:`fetch_user_emails`).
    """
    model = _ensure_fitted(export, model)
    ann = export.annotations
    n_users = ann.n_annotators
    per_user = ann.annotations_per_annotator()
    hard = np.asarray(model.predict())
    agree = np.bincount(ann.annotators, weights=(ann.labels == hard[ann.items]).astype(float),
                        minlength=n_users)
    gold = export.gold_codes()
    on_gold = gold[ann.items] >= 0
    n_gold = np.bincount(ann.annotators[on_gold], minlength=n_users)
    gold_hits = np.bincount(ann.annotators[on_gold],
                            weights=(ann.labels[on_gold] == gold[ann.items[on_gold]]).astype(float),
                            minlength=n_users)
    email = export.annotator_emails.copy()
    if emails:
        for n, uid in enumerate(export.annotator_ids):
            if email[n] is None:
                email[n] = emails.get(_plain(uid))
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame({
            "annotator": pd.Series([_plain(a) for a in export.annotator_ids], dtype=object),
            "email": email,
            "n_annotations": per_user,
            "n_cancelled": export.annotator_stats["n_cancelled"].to_numpy(),
            "n_superseded": export.annotator_stats["n_superseded"].to_numpy(),
            "accuracy": model.annotator_quality_["accuracy"].to_numpy(),
            "agreement": np.where(per_user > 0, agree / per_user, np.nan),
            "n_gold": n_gold,
            "gold_accuracy": np.where(n_gold > 0, gold_hits / n_gold, np.nan),
        })
    recall = np.diagonal(np.asarray(model.confusion_matrices_), axis1=1, axis2=2)
    for k, name in enumerate(export.classes):
        frame[f"recall[{name}]"] = recall[:, k]
    frame.loc[per_user == 0, ["accuracy"] + [f"recall[{c}]" for c in export.classes]] = np.nan
    meta = {"model": type(model).__name__, "model_version": model_version,
            "control": export.control, "classes": [_plain(c) for c in export.classes]}
    if csv_path is not None:
        write_report(frame, csv_path)
    if json_path is not None:
        write_report(frame, json_path, meta=meta)
    return frame


def write_report(frame: pd.DataFrame, path: Any, meta: Optional[dict] = None) -> Path:
    """Write an annotator report atomically: ``.json`` as ``{**meta, "annotators": [rows]}``
    (NaN as null), anything else as CSV."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        rows = json.loads(frame.to_json(orient="records", force_ascii=False))
        return atomic_write_text(path, json.dumps({**(meta or {}), "annotators": rows}, indent=1,
                                              ensure_ascii=False) + "\n")
    return atomic_write_text(path, frame.to_csv(index=False))


def gold_accuracy(export: LabelStudioExport, proba: Any) -> tuple[int, float]:
    """(number of gold tasks, accuracy of the argmax of ``proba`` on them; NaN when none)."""
    gold = export.gold_codes()
    has = gold >= 0
    if not has.any():
        return 0, float("nan")
    pred = np.argmax(np.asarray(proba), axis=1)
    return int(has.sum()), float((pred[has] == gold[has]).mean())


# ---------------------------------------------------------------------------- server
_TOKEN_PATTERN = re.compile(r"(?i)\b(token|bearer)(\s+|=)([A-Za-z0-9._\-]{16,})")


def _secrets_of(client: Any = None, api_key: Optional[str] = None) -> list:
    found = [api_key, os.environ.get(API_KEY_ENV)]
    wrapper = getattr(client, "_client_wrapper", None)
    tokens = getattr(wrapper, "_tokens_client", None)
    for obj, attr in ((tokens, "_api_key"), (tokens, "_access_token"), (wrapper, "api_key")):
        value = getattr(obj, attr, None) if obj is not None else None
        found.append(value if isinstance(value, str) else None)
    return sorted({s for s in found if s and len(s) >= 4}, key=len, reverse=True)


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return _TOKEN_PATTERN.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)


def _describe(exc: BaseException) -> str:
    """An exception as text without response headers (they carry session cookies)."""
    status = getattr(exc, "status_code", None)
    if status is not None and hasattr(exc, "body"):
        body = exc.body
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k in ("detail", "validation_errors")} or body
        return f"HTTP {status}: {str(body)[:500]}"
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def describe_error(exc: BaseException, client: Any = None) -> str:
    """An exception from the SDK as one line: no response headers, the API token scrubbed."""
    return _scrub(_describe(exc), _secrets_of(client))


def _transient(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    if status is not None:
        return status in (408, 425, 429) or status >= 500
    try:
        import httpx
        if isinstance(exc, httpx.TransportError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, (ConnectionError, TimeoutError))


def _call(fn: Callable[[], Any], what: str, secrets: list, retries: int, backoff: float,
          before_retry: Optional[Callable[[], None]] = None) -> Any:
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised scrubbed
            if not _transient(exc) or attempt == retries:
                raise LabelStudioError(_scrub(f"{what} failed after {attempt + 1} attempt(s): "
                                              f"{_describe(exc)}", secrets)) from None
            time.sleep(backoff * 2 ** attempt)
            if before_retry is not None:
                before_retry()


def connect(url: str, api_key: Optional[str] = None, *, timeout: float = 60.0) -> Any:
    """A ``label_studio_sdk.LabelStudio`` client (no SDK-side retries: ours are idempotent).

    The token comes from ``api_key`` or ``$LABEL_STUDIO_API_KEY``; it is never printed.
    """
    try:
        from label_studio_sdk import LabelStudio
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"talking to Label Studio needs label-studio-sdk; "
                          f"{_INSTALL_HINT}") from None
    key = api_key or os.environ.get(API_KEY_ENV)
    if not key:
        raise LabelStudioError(f"no Label Studio API token: pass api_key= or set {API_KEY_ENV}")
    try:
        return LabelStudio(base_url=url, api_key=key, timeout=timeout, max_retries=0)
    except Exception as exc:  # noqa: BLE001
        raise LabelStudioError(_scrub(f"cannot create a client for {url}: {_describe(exc)}",
                                      [key])) from None


def fetch_user_emails(client: Any, *, retries: int = 3, backoff: float = 0.5) -> dict:
    """{user id: e-mail} of the organisation's users (to fill the report's e-mails)."""
    users = _call(lambda: client.users.list(request_options=_NO_RETRY), "listing users",
                  _secrets_of(client), retries, backoff)
    return {int(u.id): u.email for u in users if getattr(u, "id", None) is not None}


def _result_key(result: Any) -> str:
    items = [{k: r.get(k) for k in ("from_name", "to_name", "type", "value")}
             for r in (result or []) if isinstance(r, dict)]
    return json.dumps(items, sort_keys=True)


def push_predictions(client: Any, project_id: int, predictions: Sequence[dict], *,
                     model_version: Optional[str] = None, batch_size: int = 100,
                     retries: int = 3, backoff: float = 0.5, on_existing: str = "update",
                     progress: bool = False) -> PushResult:
    """Send predictions to a project, idempotently, in batches with retries.

    Before sending, the project's predictions of ``model_version`` are listed. A task that
    already has one: ``on_existing="update"`` (default) leaves it when its result and score
    are the same and replaces it otherwise; ``"skip"`` always leaves it; ``"replace"``
    always deletes and re-creates it. Extra copies of one version on one task are deleted.
    So a re-run with the same ``model_version`` neither duplicates nor loses predictions,
    and a run stopped half-way (killed client or server) completes when run again.

    Transient failures (connection errors, timeouts, HTTP 408/429/5xx) are retried
    ``retries`` times with exponential ``backoff``; before a batch is sent again the
    project's predictions are listed again, so a batch whose reply was lost is not sent
    twice. Other failures raise :class:`LabelStudioError` with the API token scrubbed.
    """
    from crowd_keras.progress import progress_bar

    if on_existing not in ("update", "skip", "replace"):
        raise ValueError(f"on_existing must be 'update', 'skip' or 'replace', got {on_existing!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    preds = [dict(p) for p in predictions]
    versions = {p.get("model_version") for p in preds} - {None}
    if model_version is None:
        if len(versions) != 1:
            raise CrowdDataError(f"predictions carry model versions {sorted(versions)}; pass one "
                                 "model_version=")
        model_version = versions.pop()
    elif versions - {model_version}:
        raise CrowdDataError(f"predictions carry model versions {sorted(versions)}, not "
                             f"{model_version!r}")
    tasks = []
    for n, p in enumerate(preds):
        if "task" not in p or not isinstance(p.get("result"), list):
            raise CrowdDataError(f"prediction {n} needs a 'task' and a 'result' list")
        p["model_version"] = model_version
        tasks.append(p["task"])
    if len(set(tasks)) != len(tasks):
        raise CrowdDataError("several predictions for one task; Label Studio keeps one per "
                             "model version and task")
    secrets = _secrets_of(client)
    wanted = set(tasks)

    def existing() -> dict:
        listed = _call(lambda: client.predictions.list(project=project_id,
                                                       request_options=_NO_RETRY),
                       f"listing predictions of project {project_id}", secrets, retries, backoff)
        out: dict = {}
        for pr in listed:
            if getattr(pr, "model_version", None) == model_version and pr.task in wanted:
                out.setdefault(pr.task, []).append(pr)
        return out

    def delete(pred_id: int) -> None:
        _call(lambda: client.predictions.delete(id=pred_id, request_options=_NO_RETRY),
              f"deleting prediction {pred_id}",
              secrets, retries, backoff)

    state = {"created": 0, "batches": 0, "unchanged": 0, "replaced": 0, "n_batches": None}
    try:
        todo = _plan(preds, existing(), on_existing, delete, state)
        batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
        state["n_batches"] = len(batches)
        for batch in progress_bar(batches, desc="pushing predictions", disable=not progress):
            pending = list(batch)

            def refresh() -> None:  # the failed attempt may have been stored, its reply lost
                present = existing()
                pending[:] = [p for p in pending if p["task"] not in present]

            def send() -> Any:
                if not pending:
                    return None
                return client.projects.import_predictions(project_id, request=pending,
                                                          request_options=_NO_RETRY)

            _call(send, f"importing batch {state['batches'] + 1} of {len(batches)}", secrets,
                  retries, backoff, before_retry=refresh)
            state["created"] += len(batch)
            state["batches"] += 1
    except LabelStudioError as exc:
        where = (f"batch {state['batches'] + 1} of {state['n_batches']}"
                 if state["n_batches"] is not None else "checking existing predictions")
        raise LabelStudioError(
            f"push of model_version {model_version!r} to project {project_id} stopped at {where} "
            f"({state['created']} created so far): {exc}. Re-run with the same model_version to "
            "complete: nothing is duplicated") from None
    return PushResult(model_version=model_version, n_created=state["created"],
                      n_unchanged=state["unchanged"], n_replaced=state["replaced"],
                      n_batches=state["batches"])


def _plan(preds: list, have: dict, on_existing: str, delete: Callable[[int], None],
          state: dict) -> list:
    """Predictions still to send; deletes extra copies and those to be replaced."""
    todo = []
    for p in preds:
        olds = sorted(have.get(p["task"], []), key=lambda pr: pr.id)
        for extra in olds[1:]:
            delete(extra.id)
        if olds:
            old = olds[0]
            same = (_result_key(old.result) == _result_key(p["result"])
                    and _close(getattr(old, "score", None), p.get("score")))
            if on_existing == "skip" or (on_existing == "update" and same):
                state["unchanged"] += 1
                continue
            delete(old.id)
            state["replaced"] += 1
        todo.append(p)
    return todo


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
