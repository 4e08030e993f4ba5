"""Span controls of a Label Studio export (Labels, HyperTextLabels, ParagraphLabels): per task,
per annotator, the spans (start, end, label, text), and a :class:`SequenceAnnotations`.

Mapping: documents = tasks (their text is the task data field the control's object shows),
annotators = users; one used annotation of a user on a task = that user saw the task, and
its spans for the control are the user's spans (an annotation with none says "no span
here": every token O); a user without an annotation on a task did not see it. Skipped,
superseded and ground-truth annotations are handled as for choices (``reader``).

Offsets: ``Labels`` on ``Text`` give character offsets (``value.start``/``value.end``);
``HyperTextLabels`` give character offsets in ``value.globalOffsets`` (used as offsets into
the task's data value: right for plain text shown as HyperText; the ``text`` check counts
the spans where that is not so); ``ParagraphLabels`` give a paragraph index and an offset in
it, turned into offsets in the paragraphs' texts joined with ``"\\n"``. Bad span input
(negative or reversed offsets, a label outside the config, a span without label) raises a
located :class:`~crowd_keras.CrowdDataError`; a ``text`` that differs from the document
(other than in whitespace, which Label Studio's region text collapses) is counted
(``text_mismatch="error"`` makes it an error), with a note when such spans match their
text as UTF-16 code-unit offsets (JavaScript string indices; an emoji counts twice).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from crowd_keras.errors import Argument, CrowdDataError, Message
from crowd_keras.sequences.annotations import SequenceAnnotations, SpanSummary
from crowd_keras.sequences.tokens import MAX_OFFSET

from ._controls import MIN_META, SPAN_TAGS, object_fields, to_name_note
from ._records import (ExportSummary, check_latest_is_known, check_spaced_values, is_decimal,
                       parse_times, superseded_note, task_id)

__all__ = ["LabelStudioSpans", "SpanExportSummary", "read_spans", "looks_like_spans"]


@dataclass(frozen=True)
class SpanExportSummary(ExportSummary):
    """:class:`~._records.ExportSummary` of a span control (``n_without_label``: used
    annotations without a span, i.e. all O) and what became of the spans (``spans``)."""

    spans: Optional[SpanSummary] = None

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["spans"] = self.spans.to_dict() if self.spans is not None else None
        return out

    def __str__(self) -> str:
        return (f"{self.format} export, span control '{self.control}' ({self.control_type}): "
                f"{self.n_tasks} tasks ({self.n_tasks_unannotated} without a used annotation), "
                f"{self.n_annotators} annotators, {self.n_annotations_read} annotations read, "
                f"{self.n_used} used ({self.n_without_label} without spans: all O), "
                f"{self.n_cancelled} skipped/cancelled, {self.n_superseded} superseded, "
                f"{self.n_gold} ground truth"
                + (f" ({self.n_gold_conflicts} conflicting)" if self.n_gold_conflicts else "")
                + f"; spans: {self.spans}")


@dataclass(frozen=True, eq=False)
class LabelStudioSpans:
    """A Label Studio export of a span control, read for crowd learning.

    Attributes:
        sequences: :class:`~crowd_keras.sequences.annotations.SequenceAnnotations`; documents
            = tasks (``doc_ids`` = task ids, in export order), annotators = users.
        spans: the spans of the used annotations: ``task, annotator, annotation_id, start,
            end, label, text`` (character offsets into the task's text).
        gold: spans of the latest ``ground_truth`` annotation of each task (same columns,
            without ``annotator``); empty when there is none.
        gold_tasks: (n_gold_tasks,) ids of the tasks with a ``ground_truth`` annotation,
            including those whose latest one holds no span (gold: every token O).
        control: the control read.
        control_type: its type (``"labels"``, ``"hypertextlabels"``,
            ``"paragraphlabels"``).
        to_name: the object it labels.
        text_key: the task data field holding the text.
        format: the export format.
        summary: its :class:`SpanExportSummary`.
        annotator_emails: the users' e-mails.
        annotator_stats: per user, ``annotator, email, n_used, n_cancelled, n_superseded,
            n_gold``.
    """

    sequences: SequenceAnnotations
    spans: pd.DataFrame = field(repr=False)
    gold: pd.DataFrame = field(repr=False)
    annotator_emails: np.ndarray
    control: str
    control_type: str
    to_name: Optional[str]
    text_key: str
    format: str
    summary: SpanExportSummary
    annotator_stats: pd.DataFrame = field(repr=False)
    paragraph_starts: dict = field(default_factory=dict, repr=False)
    gold_tasks: np.ndarray = field(default_factory=lambda: np.array([], dtype=object),
                                   repr=False)

    task_ids = property(lambda self: self.sequences.doc_ids, doc="(n_tasks,) task ids.")
    annotator_ids = property(lambda self: self.sequences.annotator_ids,
                             doc="(n_annotators,) user ids.")
    labels = property(lambda self: self.sequences.labels, doc="span labels in code order.")


def _regions(raw: Any) -> Optional[bool]:
    """A JSON_MIN/CSV cell: span regions (True), something else (False), empty (None)."""
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return False
    if isinstance(raw, list) and raw and isinstance(raw[0], dict):
        # a region names its labels; paragraphs synced to audio have start/end too
        return ("start" in raw[0] or "globalOffsets" in raw[0]) and any(
            k in raw[0] for k in ("labels", *SPAN_TAGS.values()))
    return None if raw in (None, "", []) else False


def looks_like_spans(records: list, control: str) -> bool:
    """JSON_MIN/CSV without a config: does the control's column hold span regions?"""
    for rec in records:
        found = _regions(rec.raw.get(control))
        if found is not None:
            return found
    return False


def _text_key(text_key: Optional[str], to_name: Optional[str], objects: dict,
              data_fields: dict, origin: str, fits: Any = None) -> str:
    """The task data field holding the text; ``fits(key)``: do the spans' ``text`` values
    match that field's characters (used only to choose among several text fields)."""
    if text_key is not None:
        return text_key
    if to_name in objects and objects[to_name][1]:
        return objects[to_name][1]
    if to_name in data_fields:
        return to_name
    # another span control's column (JSON_MIN/CSV) holds regions, not the text
    texts = [k for k, v in data_fields.items()
             if isinstance(v, (str, list)) and not _regions(v)]
    if len(texts) > 1 and fits is not None:
        texts = [k for k in texts if fits(k)] or texts
    if len(texts) == 1:
        return texts[0]
    raise CrowdDataError(Message(
        "{origin}: cannot tell which task data field holds the text the spans are in (fields: "
        "{fields}); pass {text_key} or {config}", origin=origin, fields=sorted(data_fields)[:10],
        text_key=Argument("text_key"), config=Argument("label_config")))


def _texts_fit(records: list, data: dict, key: str, control: str, kind: str) -> bool:
    """Does every ``Labels`` region with a ``text`` equal the characters of data field
    ``key`` at its offsets, up to whitespace (and is there one)? Regions that cannot be read
    count as misfits; the reading proper reports them."""
    if kind != "labels":
        return False
    n = 0
    for rec in records:
        if rec.cancelled:
            continue
        value = data.get(rec.task, {}).get(key)
        try:
            regions = _values(rec, control, kind)
        except CrowdDataError:
            return False
        for v in regions:
            if not isinstance(v, dict) or not isinstance(v.get("text"), str):
                continue
            start, end = v.get("start"), v.get("end")
            # whitespace aside: Label Studio's region text may collapse runs of spaces
            if not (isinstance(value, str) and isinstance(start, int) and isinstance(end, int)
                    and value[start:end].split() == v["text"].split()):
                return False
            n += 1
    return n > 0


def _check_inline_text(attrs: dict, to_name: Optional[str], key: str, origin: str) -> None:
    """Raise when the object shows another text than its data value: one loaded from a URL
    (``valueType="url"``) or decoded (``encoding="base64"``); the spans' offsets index that
    text, which the export does not hold (read as the data value, they were clipped or
    dropped, and the predictions made on the URL's characters)."""
    odd = {k: attrs[k] for k in ("valueType", "encoding")
           if str(attrs.get(k, "")).lower() not in ("", "text", "json", "none")}
    if odd:
        shown = ", ".join(f'{k}="{v}"' for k, v in odd.items())
        raise CrowdDataError(
            f"{origin}: object '{to_name}' ({shown}) shows a text loaded or decoded from its "
            f"data field '{key}', and the span offsets index that text, which the export does "
            f"not hold: put each task's text itself in '{key}' (and drop {shown} from the "
            "config) to read the spans")


def _document(value: Any, kind: str, where: str, text_key: str,
              paragraph_key: str) -> tuple[str, Optional[np.ndarray]]:
    """(text, paragraph start offsets or None) of a task's data value."""
    if kind == "paragraphlabels":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise CrowdDataError(f"{where}: data field '{text_key}' is not a JSON list of "
                                     "paragraphs") from None
        if not isinstance(value, list) or not all(isinstance(p, dict) and isinstance(
                p.get(paragraph_key), str) for p in value):
            raise CrowdDataError(f"{where}: data field '{text_key}' must be a list of paragraphs "
                                 f"with a '{paragraph_key}' text each")
        parts = [p[paragraph_key] for p in value]
        lens = np.fromiter((len(t) + 1 for t in parts), np.int64, len(parts))
        return "\n".join(parts), np.concatenate([[0], np.cumsum(lens)[:-1]])
    if not isinstance(value, str):
        raise CrowdDataError(f"{where}: data field '{text_key}' must be text, got "
                             f"{type(value).__name__}")
    return value, None


def _offset(value: Any, where: str, what: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and is_decimal(value.strip()) and "-" not in value:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise CrowdDataError(f"{where}: {what} must be an integer character offset, got "
                             f"{value!r}")
    if abs(int(value)) > MAX_OFFSET:   # before any arithmetic: no int64 wrap-around
        shown = f"{int(value)}" if abs(int(value)) < 10 ** 24 else f"{int(value):.3e}"
        raise CrowdDataError(f"{where}: {what} {shown} is too large for a character offset "
                             "(beyond 2**53)")
    return int(value)


def _span_rows(values: list, kind: str, where: str, bases: Optional[np.ndarray],
               sizes: Optional[np.ndarray] = None) -> list:
    """(start, end, label, text, where) per label of each region value; ``bases`` and
    ``sizes``: the start offset and length of each paragraph (ParagraphLabels)."""
    rows = []
    for j, v in enumerate(values):
        at = f"{where}, span {j}"
        if not isinstance(v, dict):
            raise CrowdDataError(f"{at}: a region must be an object, got {type(v).__name__}")
        if kind == "hypertextlabels" and isinstance(v.get("globalOffsets"), dict):
            start = _offset(v["globalOffsets"].get("start"), at, "globalOffsets.start")
            end = _offset(v["globalOffsets"].get("end"), at, "globalOffsets.end")
        elif kind == "hypertextlabels" and isinstance(v.get("start"), str) \
                and not is_decimal(v["start"].strip()):
            # else "start must be an integer character offset", as if the value were bad
            raise CrowdDataError(f"{at}: a HyperTextLabels region without value.globalOffsets "
                                 f"(its start {v['start']!r} is an XPath into the page): only "
                                 "its character offsets, value.globalOffsets, can be read")
        elif kind == "paragraphlabels":
            if bases is None:
                raise CrowdDataError(f"{at}: the task has no paragraphs")
            p0, p1 = (_offset(v.get(k), at, k) for k in ("start", "end"))
            if not (0 <= p0 < len(bases) and 0 <= p1 < len(bases)):
                raise CrowdDataError(f"{at}: paragraph {max(p0, p1)} is outside the task's "
                                     f"{len(bases)} paragraphs")
            offsets = [_offset(v.get(k), at, k) for k in ("startOffset", "endOffset")]
            for k, p, o in zip(("startOffset", "endOffset"), (p0, p1), offsets):
                # outside its paragraph, the offset would land in another one's text
                if o < 0:
                    raise CrowdDataError(f"{at}: negative {k} {o}")
                if sizes is not None and o > sizes[p]:
                    raise CrowdDataError(f"{at}: {k} {o} is past the end of paragraph {p} "
                                         f"({int(sizes[p])} characters)")
            start, end = int(bases[p0]) + offsets[0], int(bases[p1]) + offsets[1]
        else:
            start = _offset(v.get("start"), at, "start")
            end = _offset(v.get("end"), at, "end")
        if start < 0:
            raise CrowdDataError(f"{at}: negative start offset {start}")
        if end < start:
            raise CrowdDataError(f"{at}: end {end} before start {start}")
        labels = v.get(SPAN_TAGS[kind], v.get("labels"))
        if not isinstance(labels, list) or not labels or not all(isinstance(x, str)
                                                                 for x in labels):
            raise CrowdDataError(f"{at}: value.{SPAN_TAGS[kind]} must be a non-empty list of "
                                 f"label names, got {labels!r}")
        text = v.get("text")
        rows += [(start, end, lab, text if isinstance(text, str) else None, at)
                 for lab in dict.fromkeys(labels)]
    return rows


def _values(rec: Any, control: str, kind: str) -> list:
    if rec.result is not None:                                    # full JSON
        items = [r for r in rec.result if r["from_name"] == control]
        for item in items:
            if str(item["type"]).lower() != kind:
                raise CrowdDataError(f"{rec.where}: a result of control '{control}' has type "
                                     f"'{item['type']}', expected '{kind}'")
        return [item["value"] for item in items]
    raw = rec.raw.get(control)                                    # JSON_MIN / CSV
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CrowdDataError(f"{rec.where}: column '{control}' holds invalid JSON text "
                                 f"({exc.msg}): {raw[:80]!r}") from None
    if raw is None:
        return []
    if isinstance(raw, dict):
        return [raw]
    if not isinstance(raw, list):
        raise CrowdDataError(f"{rec.where}: column '{control}' holds {type(raw).__name__} "
                             f"{raw!r}; expected a list of span regions")
    return raw


def read_spans(fmt: str, payload: list, tasks: list, records: list, control: str, kind: str,
               to_name: Optional[str], label_config: Any, config: Optional[dict], *,
               include_gold: bool, scheme: str, tokenizer: Any, text_key: Optional[str],
               text_mismatch: str, origin: str, notes: list) -> LabelStudioSpans:
    """The span reading behind :func:`~.reader.read_export` (after the control is picked)."""
    objects = object_fields(label_config) if label_config is not None else {}
    paragraph_key = objects.get(to_name, (None, None, {}))[2].get("textKey", "text")
    if fmt == "JSON":
        data = {tid: (t.get("data") or {}) for tid, t in zip(tasks, payload)}
    else:
        data = {}
        for i, row in enumerate(payload):
            tid = task_id(row.get("id"), f"{origin}: row {i}")
            data.setdefault(tid, {k: v for k, v in row.items()
                                  if k not in MIN_META and k != control and k != "__line__"})
    key = _text_key(text_key, to_name, objects,
                    next((d for d in data.values() if d), {}), origin,
                    fits=lambda k: _texts_fit(records, data, k, control, kind))
    _check_inline_text(objects.get(to_name, (None, None, {}))[2], to_name, key, origin)
    if to_name is None and config is None and fmt != "JSON":
        # the export's one data column is its object; other span controls' columns aside
        fields = {k for d in data.values() for k, v in d.items() if _regions(v) is False}
        if fields == {key}:
            to_name = key
            notes = [*notes, to_name_note(key)]
    texts, bases = {}, {}
    for tid in tasks:
        if key not in data.get(tid, {}):
            raise CrowdDataError(f"{origin}: task {tid!r} has no data field '{key}' (the text "
                                 f"the spans of '{control}' are in)")
        value = data[tid][key]
        if value is None and fmt in ("CSV", "TSV") and kind != "paragraphlabels":
            value = ""   # the CSV reader makes empty cells None; an empty text cell is ""
        texts[tid], bases[tid] = _document(value, kind, f"{origin}: task {tid!r}", key,
                                           paragraph_key)
    # each paragraph's length: its start to the next one's, less the joining "\n"
    sizes = {t: np.diff(np.append(b, len(texts[t]) + 1)) - 1 for t, b in bases.items()
             if b is not None}
    live = [r for r in records if not r.cancelled]
    frame = pd.DataFrame({
        "task": pd.Series([r.task for r in live], dtype=object),
        "annotator": pd.Series([r.annotator for r in live], dtype=object),
        "gold": np.array([r.gold for r in live], dtype=bool),
        "aid": np.array([r.annotation_id if isinstance(r.annotation_id, int) else -1
                         for r in live], dtype=np.int64),
        "row": np.arange(len(live))})
    frame["time"] = parse_times([r.time for r in live], [r.where for r in live])
    frame = frame.sort_values(["time", "aid", "row"], na_position="first", kind="stable")
    gold_rows = frame[frame["gold"]]
    used = frame if include_gold else frame[~frame["gold"]]
    superseded = used.duplicated(["task", "annotator"], keep="last")
    kept = used[~superseded].sort_values("row")
    gold_kept = gold_rows.drop_duplicates("task", keep="last").sort_values("row")

    def spans_of(rows: pd.DataFrame) -> pd.DataFrame:
        out = []
        for r in rows["row"]:
            rec = live[r]
            for start, end, lab, text, at in _span_rows(_values(rec, control, kind), kind,
                                                        rec.where, bases[rec.task],
                                                        sizes.get(rec.task)):
                out.append((rec.task, rec.annotator, rec.annotation_id, start, end, lab, text, at))
        return pd.DataFrame(out, columns=["task", "annotator", "annotation_id", "start", "end",
                                          "label", "text", "where"])

    spans, gold = spans_of(kept), spans_of(gold_kept)

    def span_set(rec: Any) -> frozenset:
        return frozenset((start, end, lab) for start, end, lab, _, _ in _span_rows(
            _values(rec, control, kind), kind, rec.where, bases[rec.task], sizes.get(rec.task)))

    in_pairs = used.duplicated(["task", "annotator"], keep=False)   # who has several: compare
    check_latest_is_known(used, superseded, pd.Series(
        [span_set(live[r]) if d else None for r, d in zip(used["row"], in_pairs)],
        index=used.index, dtype=object), [rec.where for rec in live])
    # tasks whose ground-truth annotations hold different spans (the latest is the gold)
    n_gold_conflicts = sum(len({span_set(live[r]) for r in rows}) > 1
                           for _, rows in gold_rows.groupby("task")["row"])
    allowed = config[control][1] if config is not None and control in config else None
    both = pd.concat([spans[["label", "where"]], gold[["label", "where"]]])
    check_spaced_values(both["label"], both["where"], f"span label of control '{control}'")
    for frame_, what in ((spans, "span"), (gold, "ground-truth span")):
        if allowed is not None and len(frame_):
            bad = ~frame_["label"].isin(allowed).to_numpy()
            if bad.any():
                r = int(np.argmax(bad))
                raise CrowdDataError(f"{frame_['where'].iloc[r]}: label {frame_['label'].iloc[r]!r} "
                                     f"of control '{control}' is not in the labeling config "
                                     f"(labels: {allowed})")
    labels = allowed if allowed is not None else sorted(set(spans["label"]) | set(gold["label"]))
    if not labels:
        raise CrowdDataError(Message(
            "{origin}: no annotation holds a span for control '{control}' and no labeling "
            "config names its labels; pass {config}", origin=origin, control=control,
            config=Argument("label_config")))
    # users are ints or emails (the records' rules), ints first as in the choices reader
    users = sorted(set(kept["annotator"]), key=lambda a: (isinstance(a, str), a))
    seq = SequenceAnnotations.from_spans(
        texts, spans.assign(text=_checked_text(spans, texts)).rename(columns={"task": "doc"}),
        seen=kept[["task", "annotator"]].rename(columns={"task": "doc"}), labels=labels,
        scheme=scheme, tokenizer=tokenizer, annotator_ids=users)
    if text_mismatch == "error" and seq.span_mismatch.any():
        r = int(np.argmax(seq.span_mismatch))
        raise CrowdDataError(f"{spans['where'].iloc[r]}: text {spans['text'].iloc[r]!r} differs "
                             f"from the task's characters {spans['start'].iloc[r]}:"
                             f"{spans['end'].iloc[r]}")
    if seq.span_mismatch.any():          # counted in the summary: say where the first one is
        r = int(np.argmax(seq.span_mismatch))
        notes = [*notes, f"{int(seq.span_mismatch.sum())} span(s) whose text differs from the "
                 f"task's characters at its offsets, the first at {spans['where'].iloc[r]}: "
                 f"text {spans['text'].iloc[r]!r}, characters {spans['start'].iloc[r]}:"
                 f"{spans['end'].iloc[r]} read {_span_chars(spans, texts, r)!r} (the offsets "
                 "are kept; text_mismatch='error' refuses them)"]
    n_utf16 = _utf16_mismatches(spans, texts, seq.span_mismatch)
    if n_utf16:
        notes = [*notes, f"{n_utf16} span(s) whose text differs from the task's characters "
                 "match it when their offsets count UTF-16 code units (JavaScript string "
                 "indices, in which emoji and other characters beyond U+FFFF count twice); "
                 "offsets are read as characters (code points, as Python indexes text), so "
                 "these spans are shifted"]
    merged = superseded_note(int(superseded.sum()), len(kept), kept["annotator"].nunique())
    if merged:
        notes = [*notes, merged]
    return _assemble(seq, spans, gold, records, frame, used, superseded, gold_rows, fmt, control,
                     kind, to_name, key, notes, bases, n_gold_conflicts)


def _checked_text(spans: pd.DataFrame, texts: dict) -> list:
    """The spans' ``text`` for the mismatch check: a region text that differs from the task's
    characters only in whitespace is theirs (Label Studio's region text collapses runs of
    spaces and line breaks while its offsets count every character)."""
    out = spans["text"].tolist()
    for r, (task, start, end, given) in enumerate(zip(spans["task"], spans["start"],
                                                     spans["end"], out)):
        if isinstance(given, str):
            actual = texts[task][start:end]
            if actual != given and actual.split() == given.split():
                out[r] = actual
    return out


def _span_chars(spans: pd.DataFrame, texts: dict, r: int) -> str:
    """The task's characters at span ``r``'s offsets."""
    return texts[spans["task"].iloc[r]][int(spans["start"].iloc[r]):int(spans["end"].iloc[r])]


def _utf16_mismatches(spans: pd.DataFrame, texts: dict, mismatch: np.ndarray) -> int:
    """How many spans with a mismatched ``text`` match it as UTF-16 code-unit offsets (an
    export of a Label Studio that measured offsets as JavaScript does)."""
    n = 0
    for r in np.flatnonzero(mismatch):
        text, start, end = texts[spans["task"].iat[r]], spans["start"].iat[r], spans["end"].iat[r]
        units = text.encode("utf-16-le")
        if isinstance(spans["text"].iat[r], str) and end * 2 <= len(units) and \
                units[2 * start:2 * end].decode("utf-16-le", "replace") == spans["text"].iat[r]:
            n += 1
    return n


def _assemble(seq: SequenceAnnotations, spans: pd.DataFrame, gold: pd.DataFrame, records: list,
              frame: pd.DataFrame, used: pd.DataFrame, superseded: pd.Series,
              gold_rows: pd.DataFrame, fmt: str, control: str, kind: str,
              to_name: Optional[str], key: str, notes: list, bases: dict,
              n_gold_conflicts: int) -> LabelStudioSpans:
    users = pd.Index(seq.annotator_ids)
    everyone = sorted({r.annotator for r in records}, key=lambda a: (isinstance(a, str), a))
    missing = [a for a in everyone if a not in users]
    if missing:     # users with only skipped/gold annotations still get a row in the stats
        users = pd.Index(list(seq.annotator_ids) + missing)
    emails = {}
    for rec in records:
        if rec.email and rec.annotator not in emails:
            emails[rec.annotator] = rec.email

    def per_user(values: Any) -> np.ndarray:
        return np.bincount(users.get_indexer(list(values)), minlength=len(users))

    n_used = per_user(used.loc[~superseded, "annotator"])
    stats = pd.DataFrame({"annotator": pd.Series(list(users), dtype=object),
                          "email": np.array([emails.get(a) for a in users], dtype=object),
                          "n_used": n_used,
                          "n_cancelled": per_user(r.annotator for r in records if r.cancelled),
                          "n_superseded": per_user(used.loc[superseded, "annotator"]),
                          "n_gold": per_user(gold_rows["annotator"])})
    per_doc = np.bincount(seq.assign_doc, minlength=seq.n_docs)
    summary = SpanExportSummary(
        format=fmt, control=control, control_type=kind, n_tasks=seq.n_docs,
        n_tasks_unannotated=int((per_doc == 0).sum()), n_annotations_read=len(records),
        n_used=len(seq.assign_doc), n_cancelled=sum(r.cancelled for r in records),
        n_without_label=seq.summary.annotations_without_spans,
        n_superseded=int(superseded.sum()), n_gold=int(len(gold_rows)),
        n_gold_conflicts=n_gold_conflicts,
        # every user read, as a Choices control's summary counts them (skips, gold only too)
        n_multiple_skipped=0, n_annotators=len(users), notes=tuple(notes),
        spans=seq.summary)
    return LabelStudioSpans(
        sequences=seq, spans=spans.drop(columns="where"),
        gold=gold.drop(columns=["where", "annotator"]),
        annotator_emails=np.array([emails.get(a) for a in seq.annotator_ids], dtype=object),
        control=control, control_type=kind, to_name=to_name, text_key=key, format=fmt,
        summary=summary, annotator_stats=stats,
        paragraph_starts={t: b for t, b in bases.items() if b is not None},
        gold_tasks=np.array(list(dict.fromkeys(gold_rows.sort_values("row")["task"])),
                            dtype=object))
