"""Span predictions (``labels`` results) and the annotator report of a span control, from a
sequence label model fitted on a :class:`~._spans.LabelStudioSpans`.

One prediction per task: its ``result`` holds one region per aggregate span
(``{"start", "end", "text", "labels": [label]}`` in the control's format, with the span's
``score``), and the prediction's ``score`` is the mean over the task's tokens of the
probability of the decoded tag (how sure the model is of the whole tagging; a task with no
span gets an empty result and still a score). They go through the same idempotent push as
class predictions.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from crowd_keras.errors import CrowdDataError
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.quality import annotator_quality, token_prf

from ._controls import SPAN_TAGS
from ._model import fit_label_model, prediction_target
from ._records import check_flag, python_scalar
from ._spans import LabelStudioSpans

__all__ = ["fitted_sequence_model", "span_predictions", "span_predictions_from_model",
           "span_report", "gold_span_scores"]


def fitted_sequence_model(export: LabelStudioSpans, model: Any = None) -> Any:
    """``model`` (default: a new ``DEFAULT_SEQUENCE_MODEL``; a name is looked up in the
    sequence registry), fitted on ``export.sequences`` unless it already is."""
    if model is None or isinstance(model, str) or not hasattr(model, "posteriors_"):
        model = fit_label_model(export, model)
    fitted = model.sequences_
    if not (fitted is export.sequences or (
            np.array_equal(fitted.doc_ids, export.task_ids)
            and np.array_equal(fitted.annotator_ids, export.annotator_ids)
            and list(fitted.tags) == list(export.sequences.tags))):
        raise CrowdDataError("the sequence model was fitted on other annotations than this "
                             "export's; fit it on export.sequences (or pass an unfitted model)")
    return model


def _region(export: LabelStudioSpans, task: Any, start: int, end: int, label: str,
            text: str) -> dict:
    key = SPAN_TAGS[export.control_type]
    if export.control_type == "labels":
        return {"start": int(start), "end": int(end), "text": text, key: [label]}
    if export.control_type == "paragraphlabels":
        bases = export.paragraph_starts[task]
        p0 = int(np.searchsorted(bases, start, side="right") - 1)
        p1 = int(np.searchsorted(bases, max(end - 1, start), side="right") - 1)
        return {"start": str(p0), "end": str(p1), "startOffset": int(start - bases[p0]),
                "endOffset": int(end - bases[p1]), "text": text, key: [label]}
    raise CrowdDataError(f"predictions for a {export.control_type} control would need XPath "
                         "offsets, which the export's character offsets do not give; use the "
                         "spans (model.predict_spans()) instead")


def span_predictions(export: LabelStudioSpans, spans: pd.DataFrame, model_version: str, *,
                     task_scores: Optional[np.ndarray] = None, include_unannotated: bool = False,
                     to_name: Optional[str] = None) -> list[dict]:
    """Predictions from spans ``doc, start, end, label, text[, score]`` (doc = task id).

    Args:
        export: the :class:`LabelStudioSpans` export the spans were fitted on.
        spans: a frame with columns ``doc, start, end, label, text`` and, optionally,
            ``score`` (as ``predict_spans()`` returns).
        model_version: a non-empty string: each prediction's ``model_version``.
        task_scores: (n_tasks,) prediction score per task (default: the mean span score,
            1.0 without spans).
        include_unannotated: also predict tasks without a used annotation.
        to_name: the object the control labels (default ``export.to_name``).
    """
    check_flag("include_unannotated", include_unannotated)
    to_name = prediction_target(export, model_version, to_name)
    _check_spans(export, spans)
    seq = export.sequences
    annotated = np.bincount(seq.assign_doc, minlength=seq.n_docs) > 0
    rows = np.arange(seq.n_docs) if include_unannotated else np.flatnonzero(annotated)
    by_task = {t: g for t, g in spans.groupby("doc", sort=False)} if len(spans) else {}
    out = []
    for i in rows:
        task = seq.doc_ids[i]
        regions = by_task.get(task, spans.iloc[:0])
        result = [{"id": f"{python_scalar(task)}-{k}", "from_name": export.control, "to_name": to_name,
                   "type": export.control_type,
                   "value": _region(export, task, r.start, r.end, r.label, r.text),
                   **({"score": float(r.score)} if "score" in regions.columns else {})}
                  for k, r in enumerate(regions.itertuples(index=False))]
        if task_scores is not None:
            score = float(task_scores[i])
        else:
            score = float(regions["score"].mean()) if "score" in regions and len(regions) else 1.0
        out.append({"task": python_scalar(task), "model_version": model_version, "score": score,
                    "result": result})
    return out


def _check_spans(export: LabelStudioSpans, spans: Any) -> None:
    """Every span names a task of the export (its ``doc``) and a label of the control: one
    naming another task (``"7"`` for 7, another export's) would be left out silently, and
    the task pushed an empty prediction."""
    if not isinstance(spans, pd.DataFrame):
        raise TypeError(f"spans must be a DataFrame (doc, start, end, label, text), got "
                        f"{type(spans).__name__}")
    missing = [c for c in ("doc", "start", "end", "label", "text") if c not in spans.columns]
    if missing:
        raise CrowdDataError(f"spans lack the column(s) {missing} (doc = task id, start, end, "
                             f"label, text; as model.predict_spans() gives); columns: "
                             f"{list(spans.columns)}")
    for column, known, what in (("doc", export.task_ids, "a task of the export"),
                                ("label", export.labels, f"a label of '{export.control}'")):
        bad = ~spans[column].isin(list(known)).to_numpy()
        if bad.any():
            n = int(np.argmax(bad))
            shown = [python_scalar(k) for k in list(known)[:5]]
            raise CrowdDataError(f"span row {n}: {column} "
                                 f"{python_scalar(spans[column].iloc[n])!r} is not {what} "
                                 f"(of {len(known)}: {shown}{'...' if len(known) > 5 else ''})")


def _task_confidence(seq: SequenceAnnotations, post: np.ndarray, tags: np.ndarray) -> np.ndarray:
    """(D,) mean over each document's tokens of the probability of the decoded tag."""
    p = post[np.arange(len(tags)), tags]
    total = np.bincount(seq.tokens.doc, weights=p, minlength=seq.n_docs)
    return np.divide(total, seq.tokens.lengths, out=np.ones(seq.n_docs),
                     where=seq.tokens.lengths > 0)


def span_predictions_from_model(export: LabelStudioSpans, model: Any = None,
                                model_version: Optional[str] = None, **kwargs: Any) -> list[dict]:
    """Fit ``model`` on the export if needed (see :func:`fitted_sequence_model`) and return
    its span predictions; ``model_version`` defaults to ``"crowd-keras-<ModelClass>"``."""
    model = fitted_sequence_model(export, model)
    # only None takes the default: "" was replaced by it in silence (checked as given below)
    version = f"crowd-keras-{type(model).__name__}" if model_version is None else model_version
    tags = model.predict()
    scores = _task_confidence(export.sequences, model.predict_proba(), tags)
    return span_predictions(export, model.predict_spans(), version, task_scores=scores, **kwargs)


def _gold_tags(export: LabelStudioSpans) -> tuple[np.ndarray, np.ndarray]:
    """(T,) tags of the ground-truth spans and the document codes that have them."""
    seq = export.sequences
    # every task with a ground-truth annotation, also one without a span (gold: all O)
    gold_docs = np.flatnonzero(np.isin(seq.doc_ids, list(export.gold_tasks)))
    tags = np.zeros(seq.n_tokens, np.int64)
    if len(export.gold):
        frame = export.gold.rename(columns={"task": "doc"}).assign(annotator="gold")
        g = SequenceAnnotations.from_spans(seq.texts, frame[["doc", "annotator", "start", "end",
                                                              "label"]],
                                           doc_ids=seq.doc_ids, labels=list(seq.labels),
                                           scheme=seq.scheme, tokens=seq.tokens)
        tags[g.obs_token] = g.obs_tag
    return tags, gold_docs


def gold_span_scores(export: LabelStudioSpans, tags: np.ndarray) -> tuple[int, tuple]:
    """(number of ground-truth tasks, token P/R/F1 of ``tags`` against their spans)."""
    gold, docs = _gold_tags(export)
    on = np.isin(export.sequences.tokens.doc, docs)
    return len(docs), token_prf(np.asarray(tags)[on] > 0, gold[on] > 0)


def span_report(export: LabelStudioSpans, model: Any = None,
                emails: Optional[Mapping[Any, str]] = None) -> pd.DataFrame:
    """Per annotator of a span control: ``annotator, email, n_annotations, n_cancelled,
    n_superseded, n_spans, accuracy`` (the model's token accuracy), ``span_precision,
    span_recall, span_f1, token_precision, token_recall, token_f1`` against the aggregate,
    and ``n_gold, gold_span_f1, gold_token_f1`` against the ground-truth spans (NaN without)."""
    model = fitted_sequence_model(export, model)
    seq = export.sequences
    q = model.annotator_quality_
    stats = export.annotator_stats.set_index("annotator")
    ids = [python_scalar(a) for a in seq.annotator_ids]
    email = np.array([(emails or {}).get(a) or stats["email"].get(a) for a in ids], dtype=object)
    frame = pd.DataFrame({"annotator": pd.Series(ids, dtype=object), "email": email,
                          "n_annotations": q["n_documents"].to_numpy(),
                          "n_cancelled": stats["n_cancelled"].reindex(ids).to_numpy(),
                          "n_superseded": stats["n_superseded"].reindex(ids).to_numpy()})
    for col in q.columns[2:]:
        frame[col] = q[col].to_numpy()
    gold, docs = _gold_tags(export)
    n_gold = np.zeros(len(ids), np.int64)
    span_f1 = token_f1 = np.full(len(ids), np.nan)
    if len(docs):
        sub = seq.subset(docs)
        _, rows = seq.tokens.subset(docs)
        gq = annotator_quality(sub, gold[rows])
        n_gold, span_f1, token_f1 = (gq["n_documents"].to_numpy(), gq["span_f1"].to_numpy(),
                                     gq["token_f1"].to_numpy())
    frame["n_gold"], frame["gold_span_f1"], frame["gold_token_f1"] = n_gold, span_f1, token_f1
    return frame
