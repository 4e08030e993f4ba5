"""Is the target project the export's project? Checked before a push writes anything.

Label Studio's import endpoint takes any prediction whose ``task`` id exists in the project:
pushed to a project that is not the export's (another server, a re-created project), the
predictions would land on whatever tasks carry those ids. :func:`check_tasks` compares every
task of the export with the project's task of the same id: the id must exist there, the
task's ``data`` must be the same (a SHA-256 of its canonical JSON for full JSON exports; the
project's data fields against the row's columns for JSON_MIN, CSV and TSV, which hold the
data fields at the top level of each row), and a full JSON export's ``project`` id must be
the target's. One listing of the project's tasks (``id`` and ``data`` only, pages of 1,000).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from crowd_keras.errors import Argument, CrowdDataError, Message

from ._records import _integer_id, check_flag, load_export, task_id
from .client import _NO_RETRY, _base_url, _call, _secrets_of, check_retries

__all__ = ["TaskCheck", "check_tasks", "check_against_config", "data_hash", "export_tasks"]

#: Columns a JSON_MIN/CSV/TSV row has besides the task's data fields.
_ROW_KEYS = frozenset({"id", "annotator", "annotation_id", "created_at", "updated_at",
                       "lead_time", "__line__"})
_PAGE = 1000


def data_hash(data: Any) -> str:
    """SHA-256 (hex) of a task's ``data`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _ExportTasks:
    format: str
    origin: str
    data: dict          # task id -> data (full JSON) or the task's first row (flat formats)
    projects: frozenset  # the ``project`` ids the tasks name (full JSON only)


def export_tasks(source: Any, format: Optional[str] = None) -> _ExportTasks:
    """The tasks of an export (path, file object, bytes or loaded JSON, as
    :func:`~.reader.read_export` takes): their ids, data and the project they name."""
    fmt, payload, origin = load_export(source, format.upper() if format else None)
    data, projects = {}, set()
    for n, row in enumerate(payload):
        where = f"{origin}, {'task' if fmt == 'JSON' else 'row'} {n}"
        if "id" not in row:
            raise CrowdDataError(f"{where}: no task 'id'")
        task = task_id(row["id"], where)
        if fmt == "JSON":
            data[task] = row.get("data")
            if row.get("project") is not None:
                projects.add(row["project"])
        else:
            data.setdefault(task, row)
    return _ExportTasks(fmt, origin, data, frozenset(projects))


@dataclass(frozen=True)
class TaskCheck:
    """What :func:`check_tasks` found: ``n_tasks`` of the export, ``n_missing`` not in the
    project, ``n_changed`` whose data differ; ``first`` describes the first such task;
    ``tasks``: the ids of the tasks checked (the export's; without it, ``task_ids``), the
    tasks a push of it is for (``push_predictions(tasks=...)``)."""

    n_tasks: int
    n_missing: int
    n_changed: int
    first: Optional[str] = None
    tasks: frozenset = field(default=frozenset(), repr=False)


def _cell_equal(cell: Any, value: Any, fmt: str) -> bool:
    """A row's column equals a data field: JSON_MIN holds JSON values; CSV/TSV hold text
    (``True``, ``1.5``, compact JSON for objects and lists; empty for null and '')."""
    if fmt == "JSON_MIN":
        return data_hash(cell) == data_hash(value)
    if value is None or value == "":
        return cell is None
    if cell is None:
        return False
    if isinstance(value, str):
        return cell == value
    if cell == str(value):
        return True
    try:
        return data_hash(json.loads(cell)) == data_hash(value)
    except ValueError:
        return False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _difference(mine: Any, theirs: Any, fmt: str) -> Optional[str]:
    """None when the export's task matches the project's data, else what differs."""
    if not isinstance(theirs, dict):
        theirs = {"": theirs}
    if fmt == "JSON":
        if data_hash(mine) == data_hash(theirs):
            return None
        keys = sorted(set(mine or {}) | set(theirs), key=str) if isinstance(mine, dict) else []
        key = next((k for k in keys if not isinstance(mine, dict) or k not in mine
                    or k not in theirs or data_hash(mine[k]) != data_hash(theirs[k])), None)
        detail = (f"; field {key!r}: export {_short(mine.get(key, '(absent)'))}, project "
                  f"{_short(theirs.get(key, '(absent)'))}" if key is not None else "")
        return (f"its data differ (SHA-256 {data_hash(mine)[:12]} in the export, "
                f"{data_hash(theirs)[:12]} in the project){detail}")
    for key, value in theirs.items():
        if key in _ROW_KEYS:
            continue
        # CSV/TSV: a data field named like a control is written as the column _data_<name>
        # (the column <name> holds the control's labels)
        column = f"_data_{key}" if (fmt in ("CSV", "TSV") and f"_data_{key}" in mine
                                    and f"_data_{key}" not in theirs) else key
        if column not in mine:
            return f"the project's data field {key!r} is not a column of the export"
        if not _cell_equal(mine[column], value, fmt):
            return (f"its data field {key!r} differs: export {_short(mine[column])}, project "
                    f"{_short(value)}")
    return None


def _project_data(client: Any, project_id: int, retries: int, backoff: float) -> dict:
    def fetch() -> dict:
        pages = client.tasks.list(project=project_id, fields="task_only", include="id,data",
                                  resolve_uri=False, page_size=_PAGE, request_options=_NO_RETRY)
        return {int(t.id): t.data for t in pages}

    return _call(fetch, f"listing the tasks of project {project_id} at {_base_url(client)}",
                 _secrets_of(client), retries, backoff)


def check_tasks(client: Any, project_id: int, export: Any = None, *, task_ids: Any = None,
                allow_data_mismatch: bool = False, format: Optional[str] = None,
                retries: int = 3, backoff: float = 0.5) -> TaskCheck:
    """Check that the export's tasks are the project's tasks before a push writes anything.

    ``export``: the export (a path, file object, bytes or loaded JSON, as ``read_export``
    takes); every task of it must exist in project ``project_id`` with the same ``data``,
    and a full JSON export's ``project`` id must be ``project_id``, and ``task_ids`` (those
    of the predictions) must be tasks of the export. Without ``export``, the ``task_ids``
    must exist in the project.
    ``allow_data_mismatch=True`` accepts tasks whose data differ (task data edited on
    purpose) and counts them; missing tasks and another project id are always refused.

    Raises:
        CrowdDataError: naming the project, how many tasks do not match and the first one.
        LabelStudioError: the listing failed (see :func:`~.client.check_project`).
    """
    if export is None and task_ids is None:
        raise TypeError("check_tasks needs export= or task_ids=")
    check_flag("allow_data_mismatch", allow_data_mismatch)
    if isinstance(task_ids, (str, bytes)):   # else each digit would be a task id
        raise TypeError(f"task_ids must be a list of task ids, got the string {task_ids!r}")
    # as text ("1", from an environment variable) it never equals the export's project 1
    project_id = _integer_id(project_id, "check_tasks", "project_id")
    retries, backoff = check_retries(retries, backoff)
    mine = export_tasks(export, format) if export is not None else None
    where = f"project {project_id}"
    if mine is not None:
        others = sorted(p for p in mine.projects if p != project_id)
        if others:
            raise CrowdDataError(
                f"{mine.origin} comes from project {others[0]}, not {where}: refusing to push "
                f"its predictions there (push to project {others[0]}, or export project "
                f"{project_id} and aggregate that)")
    # as the push reads a prediction's task: 1.5, True or "x" named, never read as another id
    ids = {task_id(t, f"check_tasks: task_ids[{n}]") for n, t in enumerate(task_ids or ())}
    extra = sorted(ids - set(mine.data if mine else ()))
    if mine is not None and extra:
        # predictions made from this export name its tasks only: another task is not the
        # export's target, and its data cannot be checked
        raise CrowdDataError(
            f"{len(extra)} of the tasks to write are not in {mine.origin} (first: task "
            f"{extra[0]}): refusing to write into tasks the export does not hold; push the "
            f"predictions of this export only, or leave export= out. Nothing was written")
    theirs = _project_data(client, project_id, retries, backoff)
    wanted = list(mine.data) if mine is not None else extra
    missing = [t for t in wanted if t not in theirs]
    changed = [] if mine is None else [
        (t, d) for t in mine.data if t in theirs
        if (d := _difference(mine.data[t], theirs[t], mine.format)) is not None]
    first = (f"task {missing[0]} is not in {where}" if missing else
             f"task {changed[0][0]}: {changed[0][1]}" if changed else None)
    result = TaskCheck(len(wanted), len(missing), len(changed), first, frozenset(wanted))
    source = f"{mine.origin} does" if mine is not None else "the predictions do"
    if missing:
        # some tasks there with the export's data: the others were deleted since the export
        matching = len(wanted) - len(missing) - len(changed)
        why = ("deleted since the export? Export the project again and aggregate that."
               if mine is not None and matching > 0 else "is this the export of that project?")
        raise CrowdDataError(
            f"{source} not match {where}: {len(missing)} of {len(wanted)} tasks are not in "
            f"it (first: {first}); {why} Nothing was written")
    if changed and not allow_data_mismatch:
        raise CrowdDataError(Message(
            "{source} not match {where}: {n} of {total} tasks hold other data there (first: "
            "{first}). Nothing was written. If the task data were edited on purpose, pass "
            "{allow}", source=source, where=where, n=len(changed), total=len(wanted),
            first=first, allow=Argument("allow_data_mismatch", True)))
    return result


def check_against_config(predictions: Any, label_config: Any, project_id: Any) -> None:
    """Raise :class:`~crowd_keras.CrowdDataError` naming the first prediction that the
    project's labeling config does not accept (a control, object, type or value it does not
    declare), checked with the SDK's ``LabelInterface`` as the server checks an import.

    Label Studio stores only the predictions its config accepts from an import (answering
    201 for the others too) but stores an update as sent: checked before anything is
    written. Nothing is checked when the SDK cannot read the config (the server decides).
    """
    if not label_config:
        return
    try:
        from label_studio_sdk.label_interface import LabelInterface
        interface = LabelInterface(label_config)
    except Exception:  # noqa: BLE001 - no SDK, or a config it cannot read
        return
    for n, p in enumerate(predictions):
        try:
            errors = interface.validate_prediction(p, return_errors=True)
        except Exception:  # noqa: BLE001 - a result the validator cannot handle
            continue
        if errors:
            raise CrowdDataError(
                f"prediction {n} (task {p.get('task')!r}) does not fit the labeling config of "
                f"project {project_id}: {'; '.join(map(str, errors))[:300]}; Label Studio "
                "would drop it. Nothing was written")
