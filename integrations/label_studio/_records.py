"""Export text to records: load full JSON, JSON_MIN, CSV or TSV and read one record per
annotation, checking ids, flags and dates (what a control's value means is ``_controls``' job).
"""
from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from crowd_keras.codes import show
from crowd_keras.errors import CrowdDataError
from crowd_keras.files import decode_json

__all__ = ["FORMATS", "ExportSummary", "check_latest_is_known", "Record", "LoadedExport",
           "load_export", "records_from_full", "records_from_rows", "task_id", "parse_times",
           "python_scalar", "check_flag", "superseded_note"]


#: The export formats read (Label Studio's export types of that name).
FORMATS = ("JSON", "JSON_MIN", "CSV", "TSV")


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
            parts[-1] += f", {self.n_multiple_skipped} multi-choice skipped"
        return " ".join(parts)


@dataclass(frozen=True)
class Record:
    """One annotation as read, before the control's value is turned into a class (the
    reading steps never change it)."""

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


@dataclass(frozen=True, eq=False)
class LoadedExport:
    """An export as :func:`load_export` read and decoded it; unpacks as ``(fmt, payload,
    origin)``. Given back to it (to ``read_export``) as the source, it is taken as it is, with
    its annotations' records (:meth:`full_records`) made once: a report of several controls
    reads a 50,000-task export once, not once to list the controls and once per control."""

    fmt: str
    payload: Any
    origin: str
    _cache: dict = field(default_factory=dict, repr=False)

    def __iter__(self):
        return iter((self.fmt, self.payload, self.origin))

    def full_records(self) -> tuple[list, list, dict]:
        """:func:`records_from_full` of the payload, made on the first call (the reading
        steps never change its lists, dict or frozen records)."""
        if "full" not in self._cache:
            self._cache["full"] = records_from_full(self.payload, self.origin)
        return self._cache["full"]


def load_export(source: Any, fmt: Optional[str]) -> LoadedExport:
    """(format, payload, description): payload is a list of dicts (JSON) or of CSV rows."""
    if fmt is not None and fmt not in FORMATS:   # else read as CSV, whatever it names
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if isinstance(source, LoadedExport):
        if fmt is not None and fmt != source.fmt:
            raise ValueError(f"this export was read as {source.fmt}, not {fmt}")
        return source
    origin = "export"
    if isinstance(source, (list, dict)):
        return LoadedExport(_json_kind(source, fmt, origin), _as_task_list(source, origin),
                            origin)
    suffix = ""
    translated = False     # newline translation by a text-mode file object (below)
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
                "is a folder, not a file" if isinstance(exc, IsADirectoryError) else \
                f"cannot read it ({type(exc).__name__})"
            raise CrowdDataError(f"{origin}: {what}") from None
    elif hasattr(source, "read"):
        name = getattr(source, "name", None)
        if isinstance(name, str):
            origin = f"export {name!r}"
            suffix = Path(name).suffix.lower()
        data = source.read()
        # a text-mode file opened without newline='' hands "\r\n" over as "\n": inside a
        # CSV's quoted task text that moves every later span offset (JSON escapes it)
        seen_newlines = getattr(source, "newlines", None)
        seen_newlines = (seen_newlines,) if isinstance(seen_newlines, str) else \
            seen_newlines if isinstance(seen_newlines, tuple) else ()
        translated = (isinstance(data, str) and "\r" not in data
                      and any("\r" in n for n in seen_newlines))
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
            loaded = decode_json(text)
        except json.JSONDecodeError as exc:
            raise CrowdDataError(
                f"{origin}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
                "(truncated or not a JSON export?)") from None
        return LoadedExport(_json_kind(loaded, fmt, origin), _as_task_list(loaded, origin),
                            origin)
    if fmt in ("JSON", "JSON_MIN") or (fmt is None and suffix == ".json"):
        # a .json file is not read as CSV (whose error would be about missing columns)
        raise CrowdDataError(f"{origin}: a {fmt or 'JSON'} export must start with '[' or "
                             f"'{{', got {stripped[:20]!r}")
    if fmt is None:
        # the header line decides when it holds one of the two separators only: Label
        # Studio's TSV export downloads as a ".csv" file (its converter writes result.csv)
        first = stripped.splitlines()[0]
        tabs, commas = first.count("\t"), first.count(",")
        fmt = ("TSV" if tabs and not commas else "CSV" if commas and not tabs
               else "TSV" if suffix == ".tsv" else "CSV" if suffix == ".csv"
               else "TSV" if tabs > commas else "CSV")
    if translated:
        raise CrowdDataError(
            f"{origin}: this text-mode file object turned the {fmt} export's '\\r\\n' line "
            "ends into '\\n', inside quoted task texts too (which moves the span offsets "
            "after them and changes the task data): open it with newline='' (as the csv "
            "module asks) or in binary mode ('rb'), or pass the path")
    return LoadedExport(fmt, _csv_rows(text, "\t" if fmt == "TSV" else ",", origin), origin)


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
    rows = [loaded] if isinstance(loaded, dict) else loaded if isinstance(loaded, list) else []
    rows = [r for r in rows if isinstance(r, dict)]
    first = rows[0] if rows else {}
    annotated = any(k in r for r in rows for k in ("annotator", "annotation_id"))
    # a JSON_MIN row holds a task's data fields, one of which may be named "data"
    full = any(k in first for k in ("annotations", "completions")) or (
        "data" in first and not annotated)
    # a JSON_MIN row of a task without annotation may hold only the id and the data fields
    minimal = not full and annotated
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


#: Label Studio's ids (tasks, annotations, users) are positive 64-bit database keys.
_MAX_ID = 2 ** 63 - 1


def is_decimal(text: str) -> bool:
    """True for a string of ASCII digits 0-9 with an optional leading ``-``: ``str.isdigit``
    also accepts ``"²"`` (which ``int`` refuses) and ``"١"`` (which ``int`` reads as 1, so an
    annotator of that name would merge with user 1)."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdigit()


def _integer_id(value: Any, where: str, what: str) -> int:
    """An id as an int: an int, an integral float or a string of digits, within 0..2**63-1.

    Anything else (text such as ``"abc"``, ``True``, a list, ``10**30``) raises
    :class:`CrowdDataError` naming ``where`` and the value, never becomes an id of its own.
    """
    number = None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and is_decimal(value.strip()):
        number = int(value.strip())
    if number is None:
        shown = repr(value) if isinstance(value, bool) else f"{type(value).__name__} {value!r}"
        raise CrowdDataError(f"{where}: {what} must be an integer, got {shown}")
    if not 0 <= number <= _MAX_ID:
        shown = f"{number}" if abs(number) < 10 ** 24 else f"{number:.3e}"
        raise CrowdDataError(f"{where}: {what} {shown} is outside Label Studio's id range "
                             "(0 to 2**63-1)")
    return number


def task_id(value: Any, where: str) -> int:
    if value is None:
        raise CrowdDataError(f"{where}: task id must be an integer, got None")
    return _integer_id(value, where, "task id")


def _opt_id(value: Any, where: str, what: str) -> Optional[int]:
    return None if value is None else _integer_id(value, where, what)


def _claim_once(seen: dict, key: Any, owner: str, where: str, what: str) -> None:
    """Record that ``key`` (an annotation id) belongs to ``owner``; raise if it was seen."""
    if key in seen:
        raise CrowdDataError(f"{where}: {what} {key} appears twice (also at {seen[key]})")
    seen[key] = owner


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
    if value is None or (isinstance(value, str) and value.strip() == "None"):
        # JSON_MIN and CSV write a null user as the text "None": read as a user of that
        # name, every deleted user's annotations would be one annotator's, the later
        # replacing the earlier on each task
        raise CrowdDataError(
            f"{where}: annotator (completed_by) must be a user id or e-mail, got {value!r}: "
            "Label Studio exports the annotations of a deleted user with completed_by null "
            "(JSON_MIN and CSV write it as 'None'), and nothing tells such users apart; remove "
            "these annotations from the export (or give them their users) to read it")
    if isinstance(value, bool):
        raise CrowdDataError(f"{where}: annotator (completed_by) must be a user id or e-mail, "
                             f"got {value!r}")
    if isinstance(value, (int, np.integer, float)):
        return _integer_id(value, where, "annotator (completed_by) id"), None
    if isinstance(value, str) and value.strip():
        value = value.strip()
        if is_decimal(value):
            return _integer_id(value, where, "annotator (completed_by) id"), None
        return value, (value if "@" in value else None)
    raise CrowdDataError(f"{where}: annotator (completed_by) must be a user id or e-mail, "
                         f"got {type(value).__name__} {value!r}")


def records_from_full(tasks: list, origin: str) -> tuple[list, list, dict]:
    """Task ids, one Record per annotation, and {control: (type, to_name)} seen in results."""
    task_ids, records, seen, ann_ids, task_at = [], [], {}, {}, {}
    for i, task in enumerate(tasks):
        if "id" not in task:
            raise CrowdDataError(f"{origin}: task at position {i} has no 'id'")
        tid = task_id(task["id"], f"{origin}: task at position {i}")
        _claim_once(task_at, tid, f"position {i}", f"{origin}: task at position {i}", "task id")
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
                _claim_once(ann_ids, aid, f"task {tid!r}", where, "annotation id")
            if "completed_by" not in ann:
                raise CrowdDataError(f"{where} has no 'completed_by'")
            key_, email = _annotator(ann["completed_by"], where)
            where = f"{where} (user {show(key_)})"   # the later errors name whose it is
            result = ann.get("result")
            if result is None:
                result = []
            if not isinstance(result, list):
                raise CrowdDataError(f"{where}: 'result' must be a list, got "
                                     f"{type(result).__name__}")
            cancelled = _flag(ann, ("was_cancelled", "skipped"), where)
            for r_pos, item in enumerate(result):
                if _is_relation(item):
                    continue
                _check_result_item(item, f"{where}, result item {r_pos}")
                if not cancelled and item["from_name"] not in seen:
                    seen[item["from_name"]] = (str(item["type"]).lower(), item.get("to_name"))
            records.append(Record(tid, aid, key_, email, cancelled,
                                   _flag(ann, ("ground_truth",), where), _timestamp(ann, where),
                                   where, result=[r for r in result if not _is_relation(r)]))
    return task_ids, _one_key_per_user(records), seen


def _is_relation(item: Any) -> bool:
    """A ``relation`` result (``from_id``, ``to_id``, ``direction``): no control's value."""
    return (isinstance(item, dict) and "from_name" not in item
            and str(item.get("type", "")).lower() == "relation")


def _check_result_item(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise CrowdDataError(f"{where} is not an object (got {type(item).__name__})")
    for key, kind in (("from_name", str), ("type", str), ("value", dict)):
        if key not in item:
            raise CrowdDataError(f"{where} has no '{key}'")
        if not isinstance(item[key], kind):
            raise CrowdDataError(f"{where}: '{key}' must be a {kind.__name__}, got "
                                 f"{type(item[key]).__name__} {item[key]!r}")


def records_from_rows(rows: list, origin: str) -> tuple[list, list, list, list]:
    """JSON_MIN / CSV rows: task ids, one Record per annotation row, the column names and the
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
        tid = task_id(row["id"], f"{origin}: {at}")
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
            _claim_once(ann_ids, aid, at, where, "annotation id")
        if annotator is None:
            raise CrowdDataError(f"{where}: no 'annotator'")
        key_, email = _annotator(annotator, where)
        records.append(Record(tid, aid, key_, email, False, False, _timestamp(row, where), where,
                               raw=row))
    return task_ids, _one_key_per_user(records), columns, bare


def _one_key_per_user(records: list) -> list:
    """The records with a user read by e-mail alone keyed by the id that other annotations
    give that e-mail, so that one user is one annotator (not two voting on one task)."""
    ids: dict = {}
    for rec in records:
        if rec.email and not isinstance(rec.annotator, str):
            ids.setdefault(rec.email, set()).add(rec.annotator)
    out = []
    for rec in records:
        found = ids.get(rec.email) if isinstance(rec.annotator, str) else None
        if found and len(found) > 1:
            raise CrowdDataError(f"{rec.where}: annotator {rec.email!r} is given by e-mail "
                                 f"alone, and the export gives that e-mail to several user ids "
                                 f"{sorted(found)}")
        out.append(replace(rec, annotator=next(iter(found))) if found else rec)
    return out


def check_latest_is_known(used: pd.DataFrame, superseded: pd.Series, content: pd.Series,
                          wheres: list) -> None:
    """CrowdDataError when a user's annotations of a task say different things (``content``,
    aligned with ``used``) and nothing orders them: no annotation id and no distinct
    ``updated_at``/``created_at``. "The latest wins" would then be the order of the export.

    ``used``: the frame sorted by (time, aid, row), its ``row`` indexing ``wheres``;
    ``superseded``: its rows that a later one of the same (task, annotator) replaces."""
    if not superseded.any():
        return
    key = ["task", "annotator"]
    last = used[~superseded].assign(content=content[~superseded]).set_index(key)
    lost = used[superseded].assign(content=content[superseded]).join(
        last[["time", "aid", "content", "row"]].add_suffix("_last"), on=key)
    same_time = (lost["time"] == lost["time_last"]) | (lost["time"].isna()
                                                        & lost["time_last"].isna())
    tied = lost[same_time & (lost["aid"] == lost["aid_last"])
                & (lost["content"] != lost["content_last"])]
    if len(tied):
        first = tied.iloc[0]
        raise CrowdDataError(
            f"{wheres[int(first['row'])]}: user {first['annotator']!r} annotated task "
            f"{first['task']!r} again with another result (also {wheres[int(first['row_last'])]}"
            "), and neither an annotation id nor a distinct updated_at/created_at says which "
            f"is the latest ({len(tied)} such pair{'s' if len(tied) > 1 else ''}): keep one, or "
            "export from Label Studio, which gives every annotation an id")


def superseded_note(n_superseded: int, n_kept: int, n_users: int) -> Optional[str]:
    """The note of an export whose users' later annotations of a task replaced at least as
    many as were kept (or where one user holds them all): one account holding several
    people's work, as when annotations are imported without ``completed_by`` (Label Studio
    gives them all to the importing user). Without it the fit quietly used one annotation
    per task, the summary's count the only trace. ``None``: nothing to say."""
    if n_superseded == 0 or (n_superseded < n_kept and n_users > 1):
        return None
    return (f"{n_superseded} of {n_superseded + n_kept} annotations were replaced by a later "
            f"one of the same user on the same task, leaving {n_kept} from {n_users} "
            f"user{'s' if n_users != 1 else ''}: if several people annotated under one account, "
            "or the annotations were imported without completed_by (Label Studio then gives "
            "them all to the importing user), give each annotator a user of their own and "
            "export again")


def check_spaced_values(values: Iterable[Any], wheres: Iterable[str], what: str) -> None:
    """CrowdDataError when two text ``values`` differ only in spaces around them (``"neu"``
    and ``" neu "``): they would be two classes, silently. Names both places (``wheres``,
    one per value)."""
    frame = pd.DataFrame({"value": pd.Series(list(values), dtype=object),
                          "where": pd.Series(list(wheres), dtype=object)})
    frame = frame[frame["value"].map(type).eq(str)].drop_duplicates("value")
    first = dict(zip(frame["value"], frame["where"]))   # value -> where it was first seen
    by_stripped: dict = {}
    for value, where in first.items():
        other = by_stripped.setdefault(value.strip(), value)
        if other != value:
            spaced, plain = (value, other) if value != value.strip() else (other, value)
            raise CrowdDataError(
                f"{first[spaced]}: {what} {spaced!r} differs from {plain!r} "
                f"({first[plain]}) only in the spaces around it: they would be two classes; "
                "correct the export")


def parse_times(values: list, wheres: list) -> pd.Series:
    """``updated_at``/``created_at`` strings as UTC times (None stays NaT); located error on an
    unreadable one."""
    parsed = pd.to_datetime(pd.Series(values, dtype=object), utc=True, errors="coerce",
                            format="ISO8601")
    bad = parsed.isna().to_numpy() & pd.notna(pd.Series(values, dtype=object)).to_numpy()
    if bad.any():
        n = int(np.argmax(bad))
        raise CrowdDataError(f"{wheres[n]}: unreadable date-time {values[n]!r}")
    return parsed


def python_scalar(value: Any) -> Any:
    """A numpy scalar as the Python value (JSON-ready); anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value


def check_flag(name: str, value: Any) -> None:
    """A switch must be a bool: a truthy ``"no"`` or ``"false"`` would turn it on."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
