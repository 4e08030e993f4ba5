"""Per-annotator quality from a label model fitted on an export (Label Studio has no slot for
it: written as CSV and JSON), and accuracy on the ground-truth tasks."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from crowd_keras.aggregation.pred_probs import check_probability_matrix
from crowd_keras.agreement import agreement_report, annotator_agreement
from crowd_keras.agreement.report import records
from crowd_keras.errors import CrowdDataError
from crowd_keras.files import atomic_write_files, atomic_write_text, csv_text, indented_json

from ._model import ensure_fitted
from ._span_results import fitted_sequence_model, span_report
from ._spans import LabelStudioSpans
from ._records import check_flag, python_scalar
from .reader import LabelStudioExport


def annotator_report(export: LabelStudioExport, model: Any = None, *, csv_path: Any = None,
                     json_path: Any = None, emails: Optional[Mapping[Any, str]] = None,
                     model_version: Optional[str] = None,
                     use_gold: bool = True) -> pd.DataFrame:
    """Per-annotator quality, one row per user.

    Columns: ``annotator`` (user id), ``email``, ``n_annotations`` (used), ``n_cancelled``,
    ``n_superseded``, ``accuracy`` (the model's estimate Σ_k ρ_k π_a[k, k]),
    ``expected_accuracy`` (where the model reports it: the share of the user's labels
    expected right, each judged by its task's posterior without the user's vote, as in
    ``model.annotator_quality_``),
    ``agreement`` (share of the user's labels equal to the aggregate label), ``n_gold`` and
    ``gold_accuracy`` (on tasks with a ground-truth annotation; NaN when none), and
    ``recall[<class>]`` (π_a[k, k]: the estimated chance the user gives class k when it is
    the truth). Label Studio has no place for these numbers: they are written to
    ``csv_path`` and ``json_path`` (atomically) when given.

    Agreement with the other annotators (:func:`crowd_keras.agreement.annotator_agreement`,
    for spans on the token tags): ``agreement_with_others`` (share of the pairs of the user's
    label and another user's label on the same task that agree), ``kappa_with_others`` (the
    same, chance-corrected), ``mean_pairwise_kappa`` (Cohen's kappa with each other user,
    averaged weighted by shared tasks) and ``n_partners``; NaN when no task is shared. The
    JSON's ``agreement`` holds the control's summary (Krippendorff's alpha, Fleiss' kappa,
    percent agreement, mean pairwise kappa, the tasks with one annotation).

    A span export (:class:`~._spans.LabelStudioSpans`, with a sequence label model) gets the
    span columns of :func:`~._span_results.span_report` instead: span and token
    precision/recall/F1 against the aggregate and against the ground-truth spans. A user
    whose annotations were all skipped (or ground truth) is listed in both kinds with
    ``n_annotations`` 0, its counts and NaN quality.

    Args:
        export: a :class:`LabelStudioExport` or :class:`~._spans.LabelStudioSpans` from
            :func:`read_export`.
        model: a label model fitted on ``export.annotations`` or unfitted (it is fitted), or
            a registry name; default: a new model of the package's default
            (``_model.DEFAULT_LABEL_MODEL``). A model fitted here is fitted as
            ``crowd-keras label-studio aggregate`` fits it (:func:`~._model.fit_label_model`).
        use_gold: when this function fits a model that takes gold, hold the tasks with a
            ground-truth annotation at its class (default, as ``aggregate`` and ``report``
            do); ``False`` fits without them (``--no-gold``). A fitted model is used as it is;
            span exports take no gold.
        csv_path: where to write the table as CSV (None: not written).
        json_path: where to write the table and its metadata as JSON (None: not written).
        emails: user id -> e-mail, filling e-mails the export lacks (see
            :func:`fetch_user_emails`).
        model_version: recorded in the JSON's metadata (``model_version``).
    """
    if emails is not None and not isinstance(emails, Mapping):
        raise TypeError(f"emails must be a mapping of user id to e-mail (as "
                        f"fetch_user_emails returns), got {type(emails).__name__}")
    check_flag("use_gold", use_gold)
    if isinstance(export, LabelStudioSpans):
        model = fitted_sequence_model(export, model)
        frame = span_report(export, model, emails)
        meta = {"model": type(model).__name__, "model_version": model_version,
                "control": export.control, "labels": [python_scalar(c) for c in export.labels]}
        frame, meta["agreement"] = _with_agreement(frame, export.sequences)
        return _written(_with_silent_users(frame, export, emails), csv_path, json_path, meta)
    model = ensure_fitted(export, model, use_gold=use_gold)
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
    quality = model.annotator_quality_
    email = export.annotator_emails.copy()
    if emails:
        for n, uid in enumerate(export.annotator_ids):
            if email[n] is None:
                email[n] = emails.get(python_scalar(uid))
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame({
            "annotator": pd.Series([python_scalar(a) for a in export.annotator_ids], dtype=object),
            "email": email,
            "n_annotations": per_user,
            "n_cancelled": export.annotator_stats["n_cancelled"].to_numpy(),
            "n_superseded": export.annotator_stats["n_superseded"].to_numpy(),
            "accuracy": quality["accuracy"].to_numpy(),
            "agreement": np.where(per_user > 0, agree / per_user, np.nan),
            "n_gold": n_gold,
            "gold_accuracy": np.where(n_gold > 0, gold_hits / n_gold, np.nan),
        })
    if "expected_accuracy" in quality.columns:   # as the aggregate command's report
        frame.insert(frame.columns.get_loc("accuracy") + 1, "expected_accuracy",
                     quality["expected_accuracy"].to_numpy())
    recall = np.diagonal(np.asarray(model.confusion_matrices_), axis1=1, axis2=2)
    for k, name in enumerate(export.classes):
        frame[f"recall[{name}]"] = recall[:, k]
    frame.loc[per_user == 0, [c for c in ("accuracy", "expected_accuracy") if c in frame]
              + [f"recall[{c}]" for c in export.classes]] = np.nan
    meta = {"model": type(model).__name__, "model_version": model_version,
            "control": export.control, "classes": [python_scalar(c) for c in export.classes]}
    frame, meta["agreement"] = _with_agreement(frame, ann)
    return _written(frame, csv_path, json_path, meta)


def _with_silent_users(frame: pd.DataFrame, export: LabelStudioSpans,
                       emails: Optional[Mapping[Any, str]]) -> pd.DataFrame:
    """The span report with a row for each user whose annotations were all skipped or ground
    truth (the span model never sees them; the choices report lists them from the export's
    annotators): their counts, NaN quality, no partner."""
    stats = export.annotator_stats
    silent = stats[~stats["annotator"].isin(frame["annotator"])]
    if silent.empty:
        return frame
    extra = pd.DataFrame({
        "annotator": pd.Series(list(silent["annotator"]), dtype=object),
        "email": pd.Series([(emails or {}).get(python_scalar(a)) or e for a, e in
                            zip(silent["annotator"], silent["email"])], dtype=object),
        "n_annotations": 0, "n_cancelled": silent["n_cancelled"].to_numpy(),
        "n_superseded": silent["n_superseded"].to_numpy()}).reindex(columns=frame.columns)
    counts = [c for c in ("n_spans", "n_gold", "n_partners") if c in frame]
    extra[counts] = 0
    return pd.concat([frame, extra.astype({c: frame[c].dtype for c in counts + [
        "n_annotations", "n_cancelled", "n_superseded"]})], ignore_index=True)


AGREEMENT_COLUMNS = {"agreement": "agreement_with_others", "kappa": "kappa_with_others",
                     "mean_pairwise_kappa": "mean_pairwise_kappa", "n_partners": "n_partners"}


def _with_agreement(frame: pd.DataFrame, data: Any) -> tuple[pd.DataFrame, Optional[list]]:
    """The report with the agreement columns (rows are the export's users in code order) and
    the control's agreement summary (None, with NaN columns and no partner, when there is
    nothing to agree on: one user, or no task annotated twice)."""
    frame = frame.copy()
    try:
        per_user = annotator_agreement(data)
        summary = records(agreement_report(data, n_bootstrap=0).summary)
    except CrowdDataError:
        for src, col in AGREEMENT_COLUMNS.items():
            # a count: nobody shares a task with anybody (as for a user without annotations)
            frame[col] = 0 if src == "n_partners" else np.nan
        return frame, None
    for src, col in AGREEMENT_COLUMNS.items():
        frame[col] = per_user[src].to_numpy()
    return frame, summary


def _written(frame: pd.DataFrame, csv_path: Any, json_path: Any, meta: dict) -> pd.DataFrame:
    if csv_path is not None and json_path is not None and \
            Path(csv_path).resolve() == Path(json_path).resolve():
        # else the JSON replaces the CSV, silently
        raise ValueError(f"csv_path and json_path are one file ({str(csv_path)!r}): give two "
                         "paths, or one of them")
    texts = {}   # both files replaced together or neither: one run's report
    if csv_path is not None:   # each in its own format, whatever its name ends with
        texts[csv_path] = _report_text(frame, as_json=False)
    if json_path is not None:
        texts[json_path] = _report_text(frame, as_json=True, meta=meta)
    atomic_write_files(texts)
    return frame


def write_report(frame: pd.DataFrame, path: Any, meta: Optional[dict] = None) -> Path:
    """Write an annotator report atomically: ``.json`` as ``{**meta, "annotators": [rows]}``
    (NaN as null), anything else as CSV."""
    return atomic_write_text(path, _report_text(frame, Path(path).suffix.lower() == ".json",
                                                meta))


def _report_text(frame: pd.DataFrame, as_json: bool, meta: Optional[dict] = None) -> str:
    if as_json:
        # records(), not DataFrame.to_json: that rounds to 10 significant digits, so the
        # JSON's numbers differed from the CSV's and from the frame returned
        return indented_json({**(meta or {}), "annotators": records(frame)}) + "\n"
    return csv_text(frame)


def gold_accuracy(export: LabelStudioExport, proba: Any) -> tuple[int, float]:
    """(number of gold tasks with an annotation used, accuracy of the argmax of ``proba`` on
    them; NaN when none). A gold task that no annotation aggregates has no aggregate label to
    score (its row of ``proba`` is the model's guess without labels)."""
    shape = (len(export.task_ids), len(export.classes))
    proba = check_probability_matrix(proba, shape, "probabilities",
                                     f"{shape} (tasks × classes)",
                                     lambda i: f"task {python_scalar(export.task_ids[i])}")
    gold = export.gold_codes()
    has = (gold >= 0) & (export.annotations.annotations_per_item() > 0)
    if not has.any():
        return 0, float("nan")
    pred = np.argmax(proba, axis=1)
    return int(has.sum()), float((pred[has] == gold[has]).mean())
