"""The labeling control: parse the labeling config, pick the control (a Choices/Rating control,
or a span control: Labels, HyperTextLabels, ParagraphLabels) and read a Choices/Rating value
(the selection) from each record (span values are read by ``_spans``)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Optional

from crowd_keras.errors import Argument, CrowdDataError, Message

from ._records import Record

__all__ = ["SPAN_TAGS", "MIN_META", "INSTALL_HINT", "Control", "parse_config", "object_fields",
           "to_name_note", "region_answers",
           "pick_control_full", "pick_control_rows", "selection_full", "selection_min"]

_SUPPORTED_TAGS = frozenset({"choices", "rating"})  # config tag = result type, lower case
#: Span controls (config tag = result type, lower case) and the key of their labels in a value.
SPAN_TAGS = {"labels": "labels", "hypertextlabels": "htmllabels",
             "paragraphlabels": "paragraphlabels"}
READABLE = _SUPPORTED_TAGS | set(SPAN_TAGS)
_NOT_READABLE = ("; only Choices and Rating controls (one class per task) and Labels, "
                 "HyperTextLabels and ParagraphLabels controls (spans) can be read")
#: The columns of a JSON_MIN/CSV row that are about the annotation, not task data (Label
#: Studio's CSV writes ``history``, the annotation's review history, when it has one).
MIN_META = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time",
            "agreement", "draft_created_at", "history"}
INSTALL_HINT = "install the optional extra: pip install 'crowd-keras[label-studio]'"


def _interface(label_config: Any) -> Any:
    """The SDK's ``LabelInterface`` of a config given as XML text, a path or an interface."""
    try:
        from label_studio_sdk.label_interface import LabelInterface
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(Message("{arg} needs label-studio-sdk; {hint}",
                                  arg=Argument("label_config"), hint=INSTALL_HINT)) from None
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
    return li


def object_fields(label_config: Any) -> dict:
    """{object name: (tag, data key of its ``value="$key"`` or None, attributes)}."""
    out = {}
    for obj in _interface(label_config).objects:
        value = obj.value or ""
        out[obj.name] = (obj.tag.lower(), value[1:] if value.startswith("$") else None,
                         dict(obj.attr))
    return out


class Control(NamedTuple):
    """One control tag of a labeling config, as :func:`parse_config` reads it."""

    kind: str                     # the tag in lower case, as the results' ``type``
    labels: Optional[list]        # None: a Rating, or dynamic choices/labels (value="$field")
    to_name: Optional[str]
    max_rating: Optional[int]
    per_region: bool = False      # perRegion="true": answered once per region, not per task


def parse_config(label_config: Any) -> dict:
    """{control name: :class:`Control`} from a labeling config (type, labels or None,
    to_name, max_rating, per_region); labels are ``None`` for a Rating control and for
    dynamic choices or labels (``value="$field"``)."""
    li = _interface(label_config)
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
        labels = list(ctl.labels) if kind == "choices" or kind in SPAN_TAGS else None
        if not labels and str(ctl.attr.get("value", "")).startswith("$"):
            # dynamic choices/labels (value="$field"): each task's data lists them, the
            # config does not, so any value is allowed (as without a config)
            labels = None
        # Label Studio reads tag attributes case-insensitively (perRegion, perregion)
        per_region = any(k.lower() == "perregion" and str(v).strip().lower() == "true"
                         for k, v in ctl.attr.items())
        out[ctl.name] = Control(kind, labels, ctl.to_name[0] if ctl.to_name else None,
                                max_rating, per_region)
    if not out:
        raise CrowdDataError("label_config declares no control tags")
    return out


def _pick_from(candidates: list, what: str, origin: str, spans: Optional[list] = None,
               per_region: Iterable[str] = ()) -> str:
    """The one candidate control; the span controls are candidates only when no Choices or
    Rating control is. ``per_region``: the controls left out as answered per region (named
    when nothing is left)."""
    if not candidates and spans:
        candidates = spans
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        left_out = sorted(per_region)
        raise CrowdDataError(f"{origin}: no Choices, Rating or span (Labels) control found in "
                             f"{what}" + (f" besides the per-region controls {left_out} (one "
                                          "answer per region, not per task)" if left_out
                                          else "") + _NOT_READABLE)
    raise CrowdDataError(Message("{origin}: several controls in {what}: {candidates}; pass "
                                 "{control} to pick one", origin=origin, what=what,
                                 candidates=candidates, control=Argument("control")))


def region_answers(records: Iterable[Record]) -> set:
    """The controls whose answers (a choice or a rating), in the records not cancelled, are
    placed on a region (a per-region Choices or Rating: a question about one span or box,
    not about the task); a span region merely mistyped ``choices`` holds no answer."""
    return {item["from_name"] for rec in records if not rec.cancelled
            for item in rec.result or ()
            if str(item["type"]).lower() in _SUPPORTED_TAGS
            and any(k in item["value"] for k in ("choices", "rating"))
            and any(k in item["value"] for k in _PLACE_KEYS)}


def _refuse_per_region_control(control: str, config: Optional[dict]) -> None:
    """CrowdDataError when the config says ``control`` is answered per region: its values
    are one region's answer each, which JSON_MIN and CSV exports write like a task's choice."""
    if config is not None and control in config and config[control].per_region:
        others = sorted(n for n, c in config.items() if c.kind in READABLE and not c.per_region)
        raise CrowdDataError(Message(
            "control '{control}' is placed on a region: perRegion=\"true\" in the labeling "
            "config, so each value is one region's answer, not the task's class; per-region "
            "controls are not supported (one class per task is needed)" + (
                "; pass {arg} with one of {others}" if others else ""),
            control=control, arg=Argument("control"), others=others))


def pick_control_full(control: Optional[str], config: Optional[dict], seen: dict, origin: str,
                      per_region: Iterable[str] = ()) -> tuple[str, str, Optional[str]]:
    """(name, type, to_name) of the control to read from a full JSON export: ``control``, or
    the one Choices/Rating control the results use (else the one span control used, else the
    one declared); ``seen``: {control: (type, to_name)} of the results; ``per_region``: the
    controls whose results are placed on a region (:func:`region_answers`), never picked."""
    if control is None:
        placed = set(per_region) | {n for n, c in (config or {}).items() if c.per_region}
        if config is not None:
            declared = [n for n, c in config.items()
                        if c.kind in _SUPPORTED_TAGS and n not in placed]
            used = [n for n in declared if n in seen]
            spans = [n for n, c in config.items() if c.kind in SPAN_TAGS]
            spans_used = [n for n in spans if n in seen]
            # a Choices control no one answered is not read over a span control they used
            control = _pick_from(used or ([] if spans_used else declared),
                                 "the labeling config" + (
                                     " used in the annotation results" if used else ""),
                                 origin, spans_used or spans, placed & set(seen))
        else:
            control = _pick_from(sorted(n for n, (t, _) in seen.items()
                                        if t in _SUPPORTED_TAGS and n not in placed),
                                 "the annotation results", origin,
                                 sorted(n for n, (t, _) in seen.items() if t in SPAN_TAGS),
                                 placed)
    _refuse_per_region_control(control, config)
    if config is not None:
        if control not in config:
            raise CrowdDataError(f"control '{control}' is not in the labeling config; its controls "
                                 f"are {sorted(config)}")
        unknown = sorted(set(seen) - set(config))
        if control not in seen and unknown:  # e.g. the config of another project
            raise CrowdDataError(
                f"{origin}: no annotation result names control '{control}'; the results name "
                f"{unknown}, which the labeling config does not declare (its controls: "
                f"{sorted(config)}): is it this project's config?")
        kind, to_name = config[control].kind, config[control].to_name
        if control in seen and seen[control][0] != kind:
            raise CrowdDataError(f"{origin}: results of control '{control}' have type "
                                 f"'{seen[control][0]}' but the config declares '{kind}'")
    elif control in seen:
        kind, to_name = seen[control]
    else:
        raise CrowdDataError(f"{origin}: control '{control}' appears in no annotation result; "
                             f"controls seen: {sorted(seen)}")
    if kind not in READABLE:
        raise CrowdDataError(f"control '{control}' is a {kind} control{_NOT_READABLE}")
    if control in seen and seen[control][1] is not None:
        to_name = seen[control][1]
    return control, kind, to_name


def to_name_note(name: str) -> Message:
    """The note of a JSON_MIN/CSV export whose object is taken to be its one data column."""
    return Message("to_name '{name}' (the object the control labels) is the export's only data "
                   "column; pass {arg} if the object tag is named otherwise", name=name,
                   arg=Argument("to_name"))


def pick_control_rows(control: Optional[str], config: Optional[dict], columns: list, fmt: str,
                       origin: str) -> tuple[str, str, Optional[str]]:
    data_cols = [c for c in columns if c not in MIN_META]
    if control is None:
        if config is None:
            raise CrowdDataError(Message(
                "{origin}: {fmt} exports do not say which columns are labeling controls; pass "
                "{control} (one of {data_cols}) or {config}", origin=origin, fmt=fmt,
                data_cols=data_cols, control=Argument("control"),
                config=Argument("label_config")))
        # a per-region choice is written like a task's choice there: only the config tells
        control = _pick_from([n for n, c in config.items()
                              if c.kind in _SUPPORTED_TAGS and not c.per_region and n in columns],
                             "both the labeling config and the export columns", origin,
                             [n for n, c in config.items() if c.kind in SPAN_TAGS and n in columns],
                             [n for n, c in config.items() if c.per_region and n in columns])
    _refuse_per_region_control(control, config)
    if control not in columns:
        raise CrowdDataError(f"{origin}: no column '{control}' for the control; columns are "
                             f"{data_cols}")
    if config is None:  # the kind is inferred from the values; the object only when unique
        others = [c for c in data_cols if c != control]
        return control, "", others[0] if len(others) == 1 else None
    if control not in config:
        raise CrowdDataError(f"control '{control}' is not in the labeling config; its controls are "
                             f"{sorted(config)}")
    kind, to_name = config[control].kind, config[control].to_name
    if kind not in READABLE:
        raise CrowdDataError(f"control '{control}' is a {kind} control{_NOT_READABLE}")
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


#: Keys of a span region's value (Labels, HyperTextLabels, ParagraphLabels).
_REGION_KEYS = ("start", "end", "labels", "hypertextlabels", "paragraphlabels", "globalOffsets",
                "startOffset")
#: Keys that place a result on a region (text offsets, an image's box or polygon): a choice
#: or rating with them answers a per-region control, a question about that region
_PLACE_KEYS = _REGION_KEYS + ("x", "y", "width", "height", "points")


def _refuse_per_region(value: Any, where: str, control: str) -> None:
    """CrowdDataError when a choice or rating ``value`` is placed on a region: one region's
    answer is not the task's class, however many regions the annotator drew."""
    placed = [k for k in _PLACE_KEYS if k in value] if isinstance(value, dict) else []
    if placed:
        raise CrowdDataError(f"{where}: the result of control '{control}' is placed on a "
                             f"region (keys {placed}): per-region controls are not supported "
                             "(one class per task is needed)")


def selection_full(rec: Record, control: str, kind: str) -> Optional[tuple]:
    items = [r for r in rec.result if r["from_name"] == control]
    if not items:
        return None
    for item in items:   # a span result mistyped: say so, not "per-region controls"
        region = [k for k in _REGION_KEYS if k in item["value"]]
        if region and not any(k in item["value"] for k in ("choices", "rating")):
            raise CrowdDataError(Message(
                "{where}: a result of control '{control}' has type '{type}' but its value is a "
                "span region (keys {region}); a <Labels> control's results have type 'labels': "
                "correct the result's type, or pass {config} so the control's kind comes from "
                "the config", where=rec.where, control=control, type=item["type"],
                region=region, config=Argument("label_config")))
    if len(items) > 1:
        raise CrowdDataError(f"{rec.where}: {len(items)} results for control '{control}' "
                             "(per-region controls are not supported: one class per task is "
                             "needed)")
    _refuse_per_region(items[0]["value"], rec.where, control)
    if str(items[0]["type"]).lower() != kind:
        raise CrowdDataError(f"{rec.where}: a result of control '{control}' has type "
                             f"'{items[0]['type']}', expected '{kind}'")
    return _selection_value(items[0]["value"], kind, rec.where, control)


def _cell_json(text: str, where: str, control: str) -> Any:
    """A CSV/TSV cell starting with ``{`` or ``[``: the JSON Label Studio writes there (an
    object, or a list of objects), else the text itself, a choice such as ``[Other]``."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        parsed = exc
    if isinstance(parsed, dict) or (isinstance(parsed, list)
                                    and all(isinstance(p, dict) for p in parsed)):
        return parsed
    if text.lstrip()[:1] == "{" or text.replace(" ", "").startswith("[{"):
        msg = parsed.msg if isinstance(parsed, json.JSONDecodeError) else "not an object"
        raise CrowdDataError(f"{where}: column '{control}' holds invalid JSON text "
                             f"({msg}): {text[:80]!r}")
    return text


def selection_min(rec: Record, control: str, kind: str) -> Optional[tuple]:
    """Selection from a JSON_MIN/CSV cell: 'a', {"choices": [...]}, [{"rating": 3}] or JSON text."""
    raw = rec.raw.get(control)
    if raw is None:
        return None
    if isinstance(raw, str) and "__line__" in rec.raw and raw.lstrip()[:1] in ("{", "["):
        raw = _cell_json(raw, rec.where, control)
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
        _refuse_per_region(raw, rec.where, control)
        inner = "choices" if "choices" in raw else "rating" if "rating" in raw else None
        if inner is None or (kind and inner != kind):
            raise CrowdDataError(f"{rec.where}: column '{control}' holds {raw!r}; expected "
                                 f"{'a choice' if kind != 'rating' else 'a rating'}")
        return _selection_value(raw, inner, rec.where, control)
    raise CrowdDataError(f"{rec.where}: column '{control}' holds {type(raw).__name__} {raw!r}; "
                         "expected a choice, {'choices': [...]} or [{'rating': n}]")
