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
from crowd_keras.errors import CrowdDataError

from ._controls import (SPAN_TAGS, _parse_config, _pick_control_full, _pick_control_rows,
                        _selection_full, _selection_min)
from ._records import (ExportSummary, _load, _parse_times, _records_from_full,
                       _records_from_rows)
from ._spans import LabelStudioSpans, looks_like_spans, read_spans

FORMATS = ("JSON", "JSON_MIN", "CSV", "TSV")
_MULTIPLE = ("error", "combination", "skip")


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
            (and the ``.tsv``/``.csv`` suffix); ``format`` forces one of ``FORMATS``.
        control: the ``name`` of the control to read. Optional for full JSON when one
            Choices/Rating control is used (or declared in ``label_config``), or else one span
            control.
        label_config: the project's labeling config (XML text, a path to it, or a
            ``LabelInterface``); gives the classes in config order and validates values.
        multiple: what an annotation with several choices means: ``"error"`` (default),
            ``"combination"`` (the set is one class) or ``"skip"`` (left out, counted).
        separator: joins the choices of a set into a class name (``multiple="combination"``).
        include_gold: also use ``ground_truth`` annotations as ordinary annotations (they
            are always returned in ``gold`` too).
        scheme, tokenizer: span controls only: the tag scheme (``"IO"``/``"BIO"``) and the
            tokenizer (default whitespace runs; see :mod:`crowd_keras.sequences.tokens`).
        text_key: span controls only: the task data field holding the text (default: from
            the config's object, else the field named like ``to_name``, else the only one).
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
    config = _parse_config(label_config) if label_config is not None else None
    fmt, payload, origin = _load(source, format.upper() if format else None)
    notes = []
    spans = dict(label_config=label_config, config=config, include_gold=include_gold,
                 scheme=scheme, tokenizer=tokenizer, text_key=text_key,
                 text_mismatch=text_mismatch, origin=origin, notes=notes)
    if fmt == "JSON":
        tasks, records, seen = _records_from_full(payload, origin)
        name, kind, to_name = _pick_control_full(control, config, seen, origin)
        if kind in SPAN_TAGS:
            return read_spans(fmt, payload, tasks, records, name, kind, to_name, **spans)
        for rec in records:
            if not rec.cancelled:
                rec.selection = _selection_full(rec, name, kind)
    else:
        tasks, records, columns, bare = _records_from_rows(payload, origin)
        name, kind, to_name = _pick_control_rows(control, config, columns, fmt, origin)
        if to_name is not None and config is None:
            notes.append(f"to_name '{to_name}' (the object the control labels) is the export's "
                         "only data column; pass to_name= if the object tag is named otherwise")
        for where, row in bare:
            if row.get(name) not in (None, ""):
                raise CrowdDataError(f"{where}: a value {row[name]!r} for control '{name}' but no "
                                     "annotator nor annotation_id")
        notes.append(f"{fmt} exports leave out skipped annotations, ground_truth flags and "
                     "tasks whose annotations were all skipped")
        if kind in SPAN_TAGS or (not kind and looks_like_spans(records, name)):
            return read_spans(fmt, payload, tasks, records, name, kind or "labels", to_name,
                              **spans)
        for rec in records:
            rec.selection = _selection_min(rec, name, kind)
    return _build(tasks, records, fmt, name, kind, to_name, config, multiple, separator,
                  include_gold, notes)


def _build(tasks: list, records: list, fmt: str, control: str, kind: str, to_name: Optional[str],
           config: Optional[dict], multiple: str, separator: str, include_gold: bool,
           notes: list) -> LabelStudioExport:
    if fmt != "JSON" and not kind:
        first: dict = {}  # kind -> first record holding it
        for r in records:
            if r.selection:
                first.setdefault("rating" if isinstance(r.selection[0], int) else "choices", r)
        kinds = set(first)
        if len(kinds) > 1:
            c, r = first["choices"], first["rating"]
            raise CrowdDataError(f"{r.where}: control '{control}' holds the rating "
                                 f"{r.selection[0]!r}, but a choice {c.selection[0]!r} at "
                                 f"{c.where}: one control holds one kind")
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
        annotations=annotations, annotator_emails=email_arr, class_choices=class_choices,
        gold=gold, control=control, control_type=kind, to_name=to_name, format=fmt,
        summary=summary, annotator_stats=stats)





def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
