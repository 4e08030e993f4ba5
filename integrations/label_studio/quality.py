"""The agreement and quality report of a whole export: every control, and overall.

Label Studio's community edition has no agreement statistics (its agreement views are an
Enterprise feature). :func:`quality_report` reads each Choices, Rating and span control of an
export, fits a label model on it (for the per-annotator quality and confusion matrices),
computes :func:`crowd_keras.agreement.agreement_report` on it, and writes one self-contained
HTML page and a JSON with the same numbers. Following Label Studio's convention, statistics
are given per control and ``overall`` as the mean over the controls where they are defined.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

import html
import os

import numpy as np
import pandas as pd

from crowd_keras.agreement import agreement_report
from crowd_keras.agreement.report import nested, plain, records
from crowd_keras.aggregation.registry import DEFAULT_LABEL_MODEL
from crowd_keras.codes import spelled_number
from crowd_keras.errors import Argument, CrowdDataError, Message
from crowd_keras.files import atomic_write_files, indented_json
from crowd_keras.quality_page import agreement_section, join_path, page_html, table_html

from ._controls import READABLE, SPAN_TAGS, parse_config, region_answers
from ._model import fit_label_model
from ._records import FORMATS, check_flag, load_export
from ._span_results import fitted_sequence_model
from ._spans import LabelStudioSpans
from .reader import read_export
from .report import annotator_report

__all__ = ["export_controls", "quality_report", "OVERALL_STATISTICS"]

#: Statistics averaged over the controls for the ``overall`` table.
OVERALL_STATISTICS = ("krippendorff_alpha", "fleiss_kappa", "percent_agreement",
                      "mean_pairwise_kappa", "span_f1_exact", "span_f1_overlap", "span_f1_token")
#: Tasks listed per control under "Items to review first" (the label model's label_issues).
REVIEW_ITEMS = 25


def export_controls(source: Any, label_config: Any = None,
                    format: Optional[str] = None) -> list:
    """The readable controls of an export, ``[(name, type)]``: from the labeling config when
    given (those it declares), else from the annotation results of a full JSON export.
    JSON_MIN, CSV and TSV do not say which columns are controls: pass ``label_config``."""
    if label_config is not None:
        config = parse_config(label_config)
        # a per-region control answers about one region, not the task (read_export refuses it)
        return [(n, c.kind) for n, c in config.items() if c.kind in READABLE and not c.per_region]
    loaded = load_export(source, format.upper() if format else None)
    fmt, payload, origin = loaded
    if fmt != "JSON":
        raise CrowdDataError(Message(
            "{origin}: {fmt} exports do not say which columns are labeling controls; pass "
            "{controls} (one name per control) or {config}", origin=origin, fmt=fmt,
            controls=Argument("controls"), config=Argument("label_config")))
    _, records, seen = loaded.full_records()
    per_region = region_answers(records)
    found = sorted((n, t) for n, (t, _) in seen.items() if t in READABLE and n not in per_region)
    if not found:
        raise CrowdDataError(f"{origin}: no Choices, Rating or span (Labels) control in the "
                             "annotation results")
    return found


def _unused_settings(kinds: dict, *, method: Optional[str], sequence_model: Optional[str],
                     scheme: str, text_key: Optional[str], multiple: str) -> Optional[Message]:
    """The first setting that none of the reported controls ``kinds`` ({name: type}) reads,
    as a message (an error rather than a setting ignored in silence), else None."""
    listed = ", ".join(f"'{n}' ({t})" for n, t in kinds.items())
    spans = [n for n, t in kinds.items() if t in SPAN_TAGS]
    for name, value, default in (("sequence_model", sequence_model, None),
                                 ("scheme", scheme, "IO"), ("text_key", text_key, None)):
        if value != default and not spans:
            return Message("{setting} applies to span controls; the controls reported, "
                           "{listed}, are none (drop it)", setting=Argument(name, value),
                           listed=listed)
    for name, value, default, kind in (("method", method, None, "Choices or Rating"),
                                       ("multiple", multiple, "combination", "Choices")):
        wanted = ("choices",) if kind == "Choices" else ("choices", "rating")
        if value != default and not any(t in wanted for t in kinds.values()):
            return Message("{setting} applies to " + kind + " controls; the controls "
                           "reported, {listed}, are none (drop it)",
                           setting=Argument(name, value), listed=listed)
    return None


def _level(export: Any, level: Optional[str]) -> str:
    """The alpha level of a Choices or Rating control: ``level`` where the values have an
    order (a Rating, choices that are all numbers); text choices stay nominal (an order of
    names, or an interval between them, would be made up)."""
    numeric = all(isinstance(plain(c), (int, float)) and not isinstance(plain(c), bool)
                  for c in export.classes)
    spelled = [spelled_number(plain(c)) for c in export.classes]   # choices "1".."10" too
    if level is not None and (export.control_type == "rating" or all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
            for v in spelled)):
        return level
    return "interval" if export.control_type == "rating" and numeric else "nominal"


def _one_control(source: Any, name: str, *, method: Optional[str],
                 sequence_model: Optional[str], level: Optional[str], n_bootstrap: int,
                 seed: Any, read: dict, use_gold: bool) -> tuple[dict, Any]:
    """(the control's JSON, what the page needs to draw it) for one control."""
    export = read_export(source, control=name, **read)
    spans = isinstance(export, LabelStudioSpans)
    if spans and not len(export.spans):
        # every annotation read as "all O": a perfect agreement on a control nobody used
        raise CrowdDataError("no annotation marks a span with this control: no agreement "
                             "to measure (nothing to learn from)")
    if spans:
        model = fitted_sequence_model(export, sequence_model)
        data, classes = export.sequences, list(export.sequences.tags)
        lvl = "nominal"   # tags have no order: --level is for Rating and numeric choices
    else:
        model = fit_label_model(export, method or DEFAULT_LABEL_MODEL, use_gold=use_gold)
        data, classes = export.annotations, list(export.classes)
        lvl = _level(export, level)
    quality = annotator_report(export, model)
    report = agreement_report(data, level=lvl, n_bootstrap=n_bootstrap, seed=seed)
    # the tasks whose consensus is most likely wrong (a sequence model's label_issues ranks
    # tokens, not tasks); a task nobody labelled for this control has no consensus, only the
    # class prior
    review = None
    if not spans:
        issues = model.label_issues()
        review = issues[issues["n_annotations"] > 0].head(REVIEW_ITEMS) \
            .reset_index(drop=True).rename(columns={"item": "task"})
    doc = {"control": name, "type": export.control_type, "level": lvl,
           "model": type(model).__name__, "summary_of_export": str(export.summary),
           "agreement": report.to_dict(), "annotators": records(quality),
           "confusion_matrices": nested(model.confusion_matrices_),
           "classes": [plain(c) for c in classes], "items_to_review": records(review),
           "error": None}
    return doc, (report, quality, np.asarray(model.confusion_matrices_), classes, review)


def _overall(controls: dict) -> pd.DataFrame:
    rows = []
    for stat in OVERALL_STATISTICS:
        values = [r["value"] for doc in controls.values() if doc["error"] is None
                  for r in doc["agreement"]["summary"] if r["statistic"] == stat]
        defined = [v for v in values if v is not None]
        if values:
            rows.append({"statistic": stat, "value": float(np.mean(defined)) if defined
                         else float("nan"), "n_controls": len(defined)})
    return pd.DataFrame(rows, columns=["statistic", "value", "n_controls"])


def _check_outputs(source: Any, out: Path) -> None:
    """Before any work: a report file that is a folder, or the export itself (an export
    saved as ``report.json``: writing the report would destroy it), is refused."""
    for name in ("report.html", "report.json"):
        if (out / name).is_dir():
            raise CrowdDataError(f"{out / name} is a folder; the report file goes there "
                                 "(remove it or choose another folder)")
        if not isinstance(source, (str, os.PathLike)):
            continue
        try:
            same = os.path.samefile(source, out / name)   # links and hard links too
        except OSError:   # either is missing: not one file
            continue
        if same:
            raise CrowdDataError(f"{out / name} is the export {source}: writing the report "
                                 "would destroy it; choose another folder")


def quality_report(source: Any, out_dir: Any, *, controls: Optional[Sequence[str]] = None,
                   label_config: Any = None, format: Optional[str] = None,
                   method: Optional[str] = None, sequence_model: Optional[str] = None,
                   level: Optional[str] = None, multiple: str = "combination",
                   separator: str = "|", include_gold: bool = False, scheme: str = "IO",
                   text_key: Optional[str] = None, n_bootstrap: int = 1000, seed: Any = 0,
                   plots: bool = True, title: Optional[str] = None,
                   use_gold: bool = True) -> dict:
    """Write ``report.html`` and ``report.json`` (atomically) into ``out_dir``.

    Args:
        source: the export (path, file, bytes or loaded JSON; see :func:`read_export`).
        out_dir: the folder the two files are written into.
        controls: the controls to report (default: :func:`export_controls`).
        label_config, format, multiple, separator, include_gold, scheme, text_key: as in
            :func:`read_export` (``multiple`` defaults to ``"combination"``: a set of choices
            is one class, so a multiple-choice control does not stop the report).
        method, sequence_model: label models for the quality columns and the confusion
            matrices (default: the registries' defaults).
        use_gold: a label model that takes gold is fitted with the tasks that have a
            ground-truth annotation held at its class, as ``crowd-keras label-studio
            aggregate`` fits it (:func:`~._model.fit_label_model`), so both give the same
            consensus and annotator quality; ``False`` fits without them (``--no-gold``).
            Span controls' sequence models take no gold.
        level: the alpha level of the Rating controls and of the Choices controls whose
            choices are all numbers (default: ``"interval"`` for Rating controls with
            numeric values, else ``"nominal"``); text choices and span tags, which have no
            order, are always nominal.
        n_bootstrap, seed: bootstrap intervals over tasks.
        plots: draw the pictures (needs matplotlib; without it the page says how to get them).
        title: the page's title (default: ``"Annotator agreement and quality: "`` and the
            export's file name).

    Returns:
        ``{"html": Path, "json": Path, "report": the JSON document}``.

    Raises:
        CrowdDataError: a bad export, or no control with anything to agree on (the first
            control's error); a control that fails while others work is reported in its
            section and in the JSON (``error``).
    """
    if isinstance(controls, (str, bytes)):   # else each character would be a control
        raise TypeError(f"controls must be a list of control names, got the string "
                        f"{controls!r}; pass [{controls!r}]")
    check_flag("use_gold", use_gold)
    if separator != "|" and multiple != "combination":
        raise ValueError(Message("{separator} joins the choices of a set into a class with "
                                 "{combination}, not {multiple} (drop it)",
                                 separator=Argument("separator", separator),
                                 combination=Argument("multiple", "combination"),
                                 multiple=Argument("multiple", multiple)))
    _check_outputs(source, Path(out_dir))
    if isinstance(source, (str, Path)) and Path(source).suffix.lower() == ".json" and not format:
        origin = str(source)
    else:
        origin = "export" if not isinstance(source, (str, Path)) else str(source)
    if format is None or (isinstance(format, str) and format.upper() in FORMATS):
        # read and decoded once for every control (else read_export's own error names it)
        source = load_export(source, format.upper() if format else None)
    names = list(controls) if controls else [n for n, _ in export_controls(source, label_config,
                                                                           format)]
    read = dict(label_config=label_config, format=format, multiple=multiple,
                separator=separator, include_gold=include_gold, scheme=scheme, text_key=text_key)
    docs, drawn, errors = {}, {}, []
    for name in names:
        try:
            docs[name], drawn[name] = _one_control(source, name, method=method,
                                                   sequence_model=sequence_model, level=level,
                                                   n_bootstrap=n_bootstrap, seed=seed, read=read,
                                                   use_gold=use_gold)
        except CrowdDataError as exc:
            errors.append(exc)
            # a Message stays one (a str): the command line renders its arguments as flags
            text = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)
            docs[name] = {"control": name, "error": text}
    if not drawn:
        raise errors[0]
    unused = _unused_settings({n: d["type"] for n, d in docs.items() if d["error"] is None},
                              method=method, sequence_model=sequence_model, scheme=scheme,
                              text_key=text_key, multiple=multiple)
    if unused:
        raise ValueError(unused)
    overall = _overall(docs)
    title = title or f"Annotator agreement and quality: {Path(origin).name}"
    document = {"title": title, "source": origin, "controls": docs,
                "overall": records(overall)}
    body = ["<h2>Overall</h2>",
            "<p class='note'>Mean over the controls where the statistic is defined (Label "
            "Studio's convention: agreement per control, overall as their mean).</p>",
            table_html(overall, "overall")]
    for name, doc in docs.items():
        body.append(f"<h2>Control <code>{html.escape(str(name))}</code></h2>")
        if doc["error"] is not None:
            body.append(f"<p class='hint'>not reported: {html.escape(doc['error'])}</p>")
            continue
        report, quality, confusion, classes, review = drawn[name]
        body.append(f"<p class='note'>{html.escape(doc['type'])} control; label model "
                    f"{html.escape(doc['model'])}; {html.escape(doc['summary_of_export'])}</p>")
        body.append(agreement_section(report, join_path("controls", name, "agreement"),
                                      quality=quality,
                                      quality_path=join_path("controls", name, "annotators"),
                                      confusion=confusion, classes=classes, plots=plots))
        if review is not None:
            body.append("<h3>Items to review first</h3><p class='note'>The tasks whose "
                        "consensus label is most likely wrong: lowest consensus quality (the "
                        "label model's calibrated chance that the consensus is right) first; tasks "
                        "without an annotation of this control are left out.</p>")
            body.append(table_html(review, join_path("controls", name, "items_to_review")))
    out = Path(out_dir)
    # one output: neither file is replaced unless both can be
    html_path, json_path = atomic_write_files({
        out / "report.html": page_html(title, "\n".join(body), plots),
        out / "report.json": indented_json(document) + "\n"})
    return {"html": html_path, "json": json_path, "report": document}
