"""Read a Label Studio export into a :class:`LabelStudioExport`: crowd annotations plus what was
read, used and left out. No SDK import here (only ``label_config=`` needs it, lazily).

How tasks, users and choices map to items, annotators and classes, and what each export
format carries, is described in the package docstring (``integrations/label_studio/__init__``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Union

import numpy as np
import pandas as pd

from crowd_keras.annotations import Annotations
from crowd_keras.errors import Argument, CrowdDataError, Message

from ._controls import (SPAN_TAGS, parse_config, pick_control_full, pick_control_rows,
                        region_answers, selection_full, selection_min, to_name_note)
from ._records import (FORMATS, ExportSummary, check_latest_is_known, check_spaced_values,
                       load_export, parse_times, records_from_rows, superseded_note)
from ._spans import LabelStudioSpans, looks_like_spans, read_spans

_MULTIPLE = ("error", "combination", "skip")
_TEXT_MISMATCH = ("count", "error")


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
        control: the control read.
        control_type: its type, ``"choices"`` or ``"rating"``.
        to_name: the object it labels (``None`` when the export does not say).
        summary: :class:`ExportSummary`.
        annotator_stats: per user: ``annotator, email, n_used, n_cancelled, n_superseded,
            n_gold``.

    ``task_ids``, ``annotator_ids`` and ``classes`` are read from ``annotations`` (its
    ``item_ids``, ``annotator_ids`` and ``classes``), not stored a second time.
    """

    annotations: Annotations
    annotator_emails: np.ndarray
    class_choices: tuple
    gold: pd.Series
    control: str
    control_type: str
    to_name: Optional[str]
    format: str
    summary: ExportSummary
    annotator_stats: pd.DataFrame = field(repr=False)

    task_ids = property(lambda self: self.annotations.item_ids,
                        doc="(n_tasks,) task ids: ``annotations.item_ids``.")
    annotator_ids = property(lambda self: self.annotations.annotator_ids,
                             doc="(n_annotators,) user ids: ``annotations.annotator_ids``.")
    classes = property(lambda self: self.annotations.classes,
                       doc="(n_classes,) class names: ``annotations.classes``.")

    def gold_codes(self) -> np.ndarray:
        """(n_tasks,) int64 class code of the gold label, -1 where a task has none."""
        codes = np.full(len(self.task_ids), -1, dtype=np.int64)
        if len(self.gold):
            rows = pd.Index(self.task_ids).get_indexer(self.gold.index)
            codes[rows] = pd.Index(self.classes).get_indexer(self.gold.to_numpy())
        return codes


def read_export(source: Any, control: Optional[str] = None, label_config: Any = None, *,
                format: Optional[str] = None, multiple: str = "error", separator: str = "|",
                include_gold: bool = False, scheme: str = "IO", tokenizer: Any = None,
                text_key: Optional[str] = None,
                text_mismatch: str = "count") -> Union[LabelStudioExport, LabelStudioSpans]:
    """Read a Label Studio export into crowd annotations.

    A Choices or Rating control gives a :class:`LabelStudioExport` (one class per task); a span
    control (Labels, HyperTextLabels, ParagraphLabels) gives a
    :class:`~._spans.LabelStudioSpans` (per task and annotator the spans, and their
    :class:`~crowd_keras.sequences.annotations.SequenceAnnotations`).

    Args:
        source: a path, a file object (text or binary), ``bytes``, or loaded JSON (a list of
            tasks or JSON_MIN rows). Full JSON, JSON_MIN, CSV and TSV are told apart by content
            (CSV and TSV by the header line's separator, the ``.tsv``/``.csv`` suffix only
            where it holds both: Label Studio names its TSV download ``.csv``); ``format``
            forces one of ``FORMATS``.
        control: the ``name`` of the control to read. Optional for full JSON when one
            Choices/Rating control is used (or declared in ``label_config``), or else one span
            control.
        label_config: the project's labeling config (XML text, a path to it, or a
            ``LabelInterface``); gives the classes in config order and validates values.
        format: ``"JSON"``, ``"JSON_MIN"``, ``"CSV"`` or ``"TSV"`` (any case), instead of
            telling the format by content (default None).
        multiple: what an annotation with several choices means: ``"error"`` (default),
            ``"combination"`` (the set is one class) or ``"skip"`` (left out, counted).
        separator: joins the choices of a set into a class name (``multiple="combination"``).
        include_gold: also use ``ground_truth`` annotations as ordinary annotations (they
            are always returned in ``gold`` too).
        scheme, tokenizer: span controls only: the tag scheme (``"IO"``/``"BIO"``) and the
            tokenizer (default whitespace runs; see :mod:`crowd_keras.sequences.tokens`).
        text_key: span controls only: the task data field holding the text (default: from
            the config's object, else the field named like ``to_name``, else the only text
            field, else the one whose characters every ``Labels`` span's ``text`` matches).
        text_mismatch: span controls only: a span ``text`` that differs from the task's
            characters is counted (``"count"``, default) or an error (``"error"``).

    Returns:
        :class:`LabelStudioExport` or :class:`~._spans.LabelStudioSpans`.

    Raises:
        CrowdDataError: malformed export (the message names the task, annotation and value).
    """
    if multiple not in _MULTIPLE:
        raise ValueError(f"multiple must be one of {_MULTIPLE}, got {multiple!r}")
    if format is not None and format.upper() not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if not isinstance(separator, str):
        raise TypeError(f"separator must be a string, got {type(separator).__name__} "
                        f"{separator!r}")
    if not separator:
        raise ValueError("separator must be a non-empty string, got ''")
    if not isinstance(include_gold, (bool, np.bool_)):
        # a truthy "no" or "false" would silently fit on the ground-truth annotations
        raise TypeError(f"include_gold must be True or False, got {include_gold!r}")
    if text_mismatch not in _TEXT_MISMATCH:
        raise ValueError(f"text_mismatch must be one of {_TEXT_MISMATCH}, got "
                         f"{text_mismatch!r}")
    config = parse_config(label_config) if label_config is not None else None
    loaded = load_export(source, format.upper() if format else None)
    fmt, payload, origin = loaded
    notes: list = []
    spans = dict(label_config=label_config, config=config, include_gold=include_gold,
                 scheme=scheme, tokenizer=tokenizer, text_key=text_key,
                 text_mismatch=text_mismatch, origin=origin, notes=notes)
    if fmt == "JSON":
        tasks, records, seen = loaded.full_records()
        if config is None and not records:
            # else "no control found in the annotation results", as if the results were odd
            raise CrowdDataError(f"{origin}: its {len(tasks)} task(s) hold no annotation: "
                                 "nothing to read")
        if config is None and not seen and records and all(r.cancelled for r in records):
            # else the control is said to appear in no result, though cancelled ones name it
            raise CrowdDataError(f"{origin}: all {len(records)} annotations are cancelled "
                                 "(was_cancelled): none holds a label to read")
        name, kind, to_name = pick_control_full(
            control, config, seen, origin,
            per_region=region_answers(records) if control is None else ())
        if kind in SPAN_TAGS:
            return read_spans(fmt, payload, tasks, records, name, kind, to_name, **spans)
    else:
        tasks, records, columns, bare = records_from_rows(payload, origin)
        name, kind, to_name = pick_control_rows(control, config, columns, fmt, origin)
        notes += _row_format_notes(fmt, name, to_name, config, bare)
        if kind in SPAN_TAGS or (not kind and looks_like_spans(records, name)):
            return read_spans(fmt, payload, tasks, records, name, kind or "labels", to_name,
                              **spans)
    selections = _select(records, fmt, name, kind)
    if fmt != "JSON" and not kind:
        kind = _value_kind(records, selections, name)
    reading = _Reading(fmt=fmt, control=name, kind=kind, to_name=to_name,
                       allowed=_allowed_values(config, name, kind), multiple=multiple,
                       separator=separator, include_gold=include_gold)
    return _export(reading, tasks, records, selections, notes)


def _export(reading: "_Reading", tasks: list, records: list, selections: list,
            notes: list) -> LabelStudioExport:
    """The steps after select (:func:`_select`) for a Choices or Rating control: validate,
    one class per annotation, resolve duplicates, encode; then the counts."""
    _validate(reading, records, selections)
    key = _value_key(reading, [s for r, s in zip(records, selections)
                               if s is not None and not r.cancelled])
    labelled, n_multiple_skipped = _one_class_each(reading, records, selections, key)
    class_choices = _class_keys(reading, [s for _, s in labelled], key, n_multiple_skipped)
    classes = [k[0] if len(k) == 1 else reading.separator.join(str(v) for v in k)
               for k in class_choices]
    _check_class_names(reading, class_choices, classes)
    frame = _annotation_frame(labelled, {k: n for n, k in enumerate(class_choices)})
    resolved = _resolve_duplicates(frame, tasks, classes, reading.include_gold,
                                   [rec.where for rec, _ in labelled])
    annotators = sorted({r.annotator for r in records}, key=lambda a: (isinstance(a, str), a))
    annotations = _encode(resolved.kept, tasks, annotators, classes)
    if annotations.n_annotations == 0 and len(resolved.gold_rows) and not reading.include_gold:
        notes = notes + [Message(
            "all {n} labelled annotations are ground_truth (Label Studio flags annotations "
            "imported with tasks so): pass {gold} to use them", n=len(resolved.gold_rows),
            gold=Argument("include_gold", True))]
    merged = superseded_note(int(resolved.superseded.sum()), len(resolved.kept),
                             resolved.kept["annotator"].nunique())
    if merged:
        notes = notes + [merged]
    emails = _emails(records, annotators)
    summary = ExportSummary(
        format=reading.fmt, control=reading.control, control_type=reading.kind,
        n_tasks=len(tasks),
        n_tasks_unannotated=int((annotations.annotations_per_item() == 0).sum()),
        n_annotations_read=len(records), n_used=annotations.n_annotations,
        n_cancelled=sum(r.cancelled for r in records),
        n_without_label=sum(1 for r, s in zip(records, selections)
                            if not r.cancelled and s is None),
        n_superseded=int(resolved.superseded.sum()), n_gold=int(len(resolved.gold_rows)),
        n_gold_conflicts=resolved.n_gold_conflicts, n_multiple_skipped=n_multiple_skipped,
        n_annotators=len(annotators), notes=tuple(notes))
    return LabelStudioExport(
        annotations=annotations, annotator_emails=emails, class_choices=class_choices,
        gold=resolved.gold, control=reading.control, control_type=reading.kind,
        to_name=reading.to_name, format=reading.fmt, summary=summary,
        annotator_stats=_annotator_stats(records, annotators, emails, annotations, resolved))


@dataclass(frozen=True)
class _Reading:
    """What the steps read the selections for: the control, its value kind (``"choices"``
    or ``"rating"``), the values the labeling config allows (``None``: any) and the caller's
    choices."""

    fmt: str
    control: str
    kind: str
    to_name: Optional[str]
    allowed: Optional[list]
    multiple: str
    separator: str
    include_gold: bool

    @property
    def order(self) -> Optional[dict]:
        """Each allowed value's position in the config (``None`` without a config)."""
        return None if self.allowed is None else {v: n for n, v in enumerate(self.allowed)}


@dataclass(frozen=True)
class _Resolved:
    """The annotation frame after duplicates: ``kept`` (latest per task and annotator),
    ``used`` (the rows that compete: without gold unless ``include_gold``), ``superseded``
    (bool over ``used``), the gold rows, the latest gold label per task and the number of
    tasks whose gold annotations disagree."""

    kept: pd.DataFrame
    used: pd.DataFrame
    superseded: pd.Series
    gold_rows: pd.DataFrame
    gold: pd.Series
    n_gold_conflicts: int


def _row_format_notes(fmt: str, control: str, to_name: Optional[str], config: Optional[dict],
                      bare: list) -> list:
    """Check the rows without annotator (no value allowed there) and the notes a JSON_MIN,
    CSV or TSV export always gets."""
    for where, row in bare:
        if row.get(control) not in (None, ""):
            raise CrowdDataError(
                f"{where}: a value {row[control]!r} for control '{control}' but no annotator "
                "nor annotation_id" + (
                    f"; is it a task data field named '{control}' like the control? A "
                    f"{fmt} export writes both in one column (the control's labels over the "
                    "data): use the full JSON export (or CSV, which names the data column "
                    f"_data_{control})" if fmt == "JSON_MIN" else ""))
    notes: list = []
    if to_name is not None and config is None:
        notes.append(to_name_note(to_name))
    notes.append(f"{fmt} exports leave out skipped annotations, ground_truth flags and "
                 "tasks whose annotations were all skipped")
    return notes


def _select(records: list, fmt: str, control: str, kind: str) -> list:
    """Step 1, select: the control's values in each record, ``(values...)`` or ``None``
    (cancelled, or no value for the control); the records are not changed."""
    if fmt == "JSON":
        return [None if r.cancelled else selection_full(r, control, kind) for r in records]
    return [selection_min(r, control, kind) for r in records]


def _value_kind(records: list, selections: list, control: str) -> str:
    """The kind of a row export's control, not declared anywhere: ``"rating"`` where its
    values are integers, else ``"choices"``; raises where one control holds both."""
    first: dict = {}  # kind -> (first record holding it, its selection)
    for rec, sel in zip(records, selections):
        if sel:
            first.setdefault("rating" if isinstance(sel[0], int) else "choices", (rec, sel))
    if len(first) > 1:
        (c, c_sel), (r, r_sel) = first["choices"], first["rating"]
        raise CrowdDataError(f"{r.where}: control '{control}' holds the rating {r_sel[0]!r}, "
                             f"but a choice {c_sel[0]!r} at {c.where}: one control holds one "
                             "kind")
    return next(iter(first), "choices")


def _allowed_values(config: Optional[dict], control: str, kind: str) -> Optional[list]:
    """The values the labeling config allows for the control, in config order (``None``
    without a config): its choices, or ratings ``1..max``."""
    if config is None:
        return None
    spec = config[control]
    return spec.labels if kind == "choices" else list(range(1, spec.max_rating + 1))


def _validate(reading: _Reading, records: list, selections: list) -> None:
    """Step 2, validate: ratings are integers, values are in the labeling config, no two
    values differ only in spaces around them."""
    order, allowed = reading.order, reading.allowed
    used = [(value, rec.where) for rec, sel in zip(records, selections)
            if sel is not None and not rec.cancelled for value in sel]
    check_spaced_values([v for v, _ in used], [w for _, w in used],
                        f"value of control '{reading.control}'")
    for rec, sel in zip(records, selections):
        if sel is None or rec.cancelled:
            continue
        for value in sel:
            if reading.kind == "rating" and not isinstance(value, int):
                raise CrowdDataError(f"{rec.where}: rating {value!r} is not an integer")
            if reading.kind == "rating" and order is None and value < 1:
                raise CrowdDataError(f"{rec.where}: rating {value!r} is below 1 (Label Studio "
                                     "ratings run from 1 to the Rating tag's maxRating)")
            if order is not None and value not in order:
                what = (f"rating {value!r} is outside 1..{len(allowed)}" if reading.kind == "rating"
                        else f"value {value!r} of control '{reading.control}' is not in the "
                             "labeling config")
                raise CrowdDataError(f"{rec.where}: {what} (classes: {allowed})")


def _number(value: Any) -> Optional[float]:
    """The finite number a choice such as ``"10"`` or ``"2.5"`` spells, else ``None``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def _value_key(reading: _Reading, selections: list) -> Any:
    """The sort key of one value, which orders the classes and the choices of a set: the
    config's order; without a config a rating itself, and choices by number when every
    choice spells one (a 1..10 scale of ``<Choices>`` keeps 1..10, not "1", "10", "2"),
    else by text."""
    if reading.order is not None:
        return reading.order.__getitem__
    if reading.kind != "choices":
        return lambda v: v
    numbers = [_number(v) for sel in selections for v in sel]
    if numbers and all(n is not None for n in numbers):
        return lambda v: (_number(v), str(v))
    return str


def _one_class_each(reading: _Reading, records: list, selections: list,
                    key: Any) -> tuple[list, int]:
    """Step 3a: ``[(record, its values in class order)]`` of the labelled annotations
    (``key``: :func:`_value_key`), and how many multi-choice annotations
    ``multiple="skip"`` left out."""
    labelled, n_skipped = [], 0
    for rec, sel in zip(records, selections):
        if rec.cancelled or sel is None:
            continue
        if len(sel) > 1:
            if reading.multiple == "error":
                raise CrowdDataError(Message(
                    "{where}: {n} choices {values} for control '{control}'; single-label "
                    "models need one class per annotation. Pass {combination} to treat each "
                    "set of choices as one class, or {skip} to leave these annotations out, "
                    "counted", where=rec.where, n=len(sel), values=list(sel),
                    control=reading.control, combination=Argument("multiple", "combination"),
                    skip=Argument("multiple", "skip")))
            if reading.multiple == "skip":
                n_skipped += 1
                continue
        labelled.append((rec, tuple(sorted(sel, key=key))))
    return labelled, n_skipped


def _class_keys(reading: _Reading, selections: list, key: Any, n_skipped: int = 0) -> tuple:
    """Step 3b: the classes as tuples of values: the config's values in its order (and, with
    ``multiple="combination"``, the sets seen), else the values seen, shorter sets first,
    each in ``key`` order (:func:`_value_key`); ``n_skipped``: the annotations with several
    choices ``multiple="skip"`` left out (the reason when none is left)."""
    keys = sorted(set(selections), key=lambda s: (len(s), tuple(key(v) for v in s)))
    if reading.allowed is not None:
        combined = [k for k in keys if len(k) > 1] if reading.multiple == "combination" else []
        keys = [(v,) for v in reading.allowed] + combined
    if not keys and n_skipped:
        # else "are the control name and the export right?", though both are
        raise CrowdDataError(Message(
            "control '{control}': all {n} labelled annotations have several choices, and "
            "{skip} left them out: nothing to learn from; pass {combination} to treat each "
            "set of choices as one class", control=reading.control, n=n_skipped,
            skip=Argument("multiple", "skip"),
            combination=Argument("multiple", "combination")))
    if not keys:
        raise CrowdDataError(f"no annotation holds a value for control '{reading.control}'; "
                             "nothing to learn from (are the control name and the export "
                             "right?)")
    return tuple(keys)


def _check_class_names(reading: _Reading, class_choices: tuple, classes: list) -> None:
    """A set of choices joined by ``separator`` must not spell another class's name."""
    first: dict = {}
    for key, name in zip(class_choices, classes):
        if name in first:
            raise CrowdDataError(Message(
                "control '{control}': the choices {a} and {b} both give the class name "
                "{name!r} (a set of choices is named by joining them with {sep!r}); pass "
                "another {separator}", control=reading.control, a=list(first[name]),
                b=list(key), name=name, sep=reading.separator,
                separator=Argument("separator")))
        first[name] = key


def _annotation_frame(labelled: list, code_of: dict) -> pd.DataFrame:
    """The labelled annotations as a frame (task, annotator, class code, gold flag,
    annotation id, time), in the order they win: by time, then annotation id, then as read
    (two that differ and tie on both are refused: :func:`~._records.check_latest_is_known`)."""
    records = [rec for rec, _ in labelled]
    frame = pd.DataFrame({
        "task": pd.Series([r.task for r in records], dtype=object),
        "annotator": pd.Series([r.annotator for r in records], dtype=object),
        "code": np.array([code_of[sel] for _, sel in labelled], dtype=np.int64),
        "gold": np.array([r.gold for r in records], dtype=bool),
        "aid": pd.Series([r.annotation_id if isinstance(r.annotation_id, int) else -1
                          for r in records], dtype=np.int64),
        "row": np.arange(len(records)),
    })
    frame["time"] = parse_times([r.time for r in records], [r.where for r in records])
    return frame.sort_values(["time", "aid", "row"], na_position="first", kind="stable")


def _resolve_duplicates(frame: pd.DataFrame, tasks: list, classes: list,
                        include_gold: bool, wheres: list) -> _Resolved:
    """Step 4, resolve duplicates: the latest annotation per (task, annotator) wins (an error
    where two differ and nothing orders them), and the latest gold annotation per task is its
    gold label. ``wheres``: each record's place in the export, by ``row``."""
    gold_rows = frame[frame["gold"]]
    gold_last = gold_rows.drop_duplicates("task", keep="last")
    n_conflicts = int((gold_rows.groupby("task")["code"].nunique() > 1).sum())
    gold = pd.Series(np.asarray(classes, dtype=object)[gold_last["code"].to_numpy()],
                     index=pd.Index(gold_last["task"].tolist(), name="task"), name="gold",
                     dtype=object)
    has_gold = set(gold.index)
    gold = gold.reindex(pd.Index([t for t in tasks if t in has_gold], name="task"))
    used = frame if include_gold else frame[~frame["gold"]]
    superseded = used.duplicated(["task", "annotator"], keep="last")
    check_latest_is_known(used, superseded, used["code"], wheres)
    return _Resolved(kept=used[~superseded], used=used, superseded=superseded,
                     gold_rows=gold_rows, gold=gold, n_gold_conflicts=n_conflicts)


def _encode(kept: pd.DataFrame, tasks: list, annotators: list, classes: list) -> Annotations:
    """Step 5, encode: tasks -> items, users -> annotators (every one read, in id order)."""
    return Annotations(pd.Index(tasks).get_indexer(kept["task"]),
                       pd.Index(annotators).get_indexer(kept["annotator"]),
                       kept["code"].to_numpy(), item_ids=tasks, annotator_ids=annotators,
                       classes=classes)


def _emails(records: list, annotators: list) -> np.ndarray:
    """(n_annotators,) object array: each user's first e-mail read, ``None`` without one."""
    emails: dict = {}
    for rec in records:
        if rec.email and rec.annotator not in emails:
            emails[rec.annotator] = rec.email
    return np.array([emails.get(a) for a in annotators], dtype=object)


def _annotator_stats(records: list, annotators: list, emails: np.ndarray,
                     annotations: Annotations, resolved: _Resolved) -> pd.DataFrame:
    """Per user: annotations used, cancelled, superseded and gold."""
    index = pd.Index(annotators)

    def per_user(values: Iterable[Any]) -> np.ndarray:
        codes = index.get_indexer(list(values))
        return np.bincount(codes, minlength=len(index)).astype(np.int64)

    return pd.DataFrame({
        "annotator": pd.Series(annotators, dtype=object),
        "email": emails,
        "n_used": annotations.annotations_per_annotator(),
        "n_cancelled": per_user(r.annotator for r in records if r.cancelled),
        "n_superseded": per_user(resolved.used.loc[resolved.superseded, "annotator"]),
        "n_gold": per_user(resolved.gold_rows["annotator"]),
    })
