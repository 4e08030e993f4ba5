"""Push predictions to a Label Studio project: idempotent, and safe to interrupt.

Plan (after one listing of the project's predictions of the model version): a task without
one gets it created (``import_predictions`` in batches); a task whose prediction differs is
updated in place (``PATCH /api/predictions/<id>``, the SDK's ``predictions.update``), so it
holds the old prediction or the new one at every instant, never none and never two; extra
copies of the version on one task are deleted, one of them always kept. Killing the client
or the server at any point therefore leaves every task that had a prediction with exactly
one, and a re-run with the same model version completes the push without duplicates.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from crowd_keras.errors import CrowdDataError

from .client import _NO_RETRY, LabelStudioError, _call, _secrets_of, check_project
from .target import check_tasks

_ON_EXISTING = ("update", "skip", "replace")


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_predictions` did.

    ``n_created``: predictions this push wrote (``n_new`` created on tasks without one, plus
    ``n_replaced`` updated because they differed, plus ``n_rewritten`` identical ones written
    again under ``on_existing="replace"``); ``n_unchanged``: left as they were;
    ``n_deleted``: extra copies of the version removed; ``n_batches``: import requests.
    """

    model_version: str
    n_created: int
    n_unchanged: int
    n_replaced: int
    n_batches: int
    n_new: int = 0
    n_rewritten: int = 0
    n_deleted: int = 0


def _result_key(result: Any) -> str:
    items = [{k: r.get(k) for k in ("from_name", "to_name", "type", "value")}
             for r in (result or []) if isinstance(r, dict)]
    return json.dumps(items, sort_keys=True)


def _same(old: Any, new: dict) -> bool:
    a, b = getattr(old, "score", None), new.get("score")
    close = (a is None and b is None) if a is None or b is None else \
        math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return close and _result_key(old.result) == _result_key(new["result"])


def _checked_predictions(predictions: Sequence[dict], model_version: Optional[str]) -> tuple:
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
    return preds, model_version


def _plan(preds: list, have: dict, on_existing: str) -> tuple[list, list, list, int]:
    """(updates [(prediction id, new, identical)], deletes [ids], creates [new], unchanged)."""
    updates, deletes, creates, unchanged = [], [], [], 0
    for p in preds:
        olds = sorted(have.get(p["task"], []), key=lambda pr: pr.id)
        if not olds:
            creates.append(p)
            continue
        keep = next((o for o in olds if _same(o, p)), olds[0])  # keep an identical copy
        deletes += [o.id for o in olds if o is not keep]
        identical = _same(keep, p)
        if on_existing == "skip" or (on_existing == "update" and identical):
            unchanged += 1
        else:
            updates.append((keep.id, p, identical))
    return updates, deletes, creates, unchanged


def push_predictions(client: Any, project_id: int, predictions: Sequence[dict], *,
                     model_version: Optional[str] = None, batch_size: int = 100,
                     retries: int = 3, backoff: float = 0.5, on_existing: str = "update",
                     progress: bool = False, preflight: bool = True, export: Any = None,
                     allow_data_mismatch: bool = False) -> PushResult:
    """Send predictions to a project, idempotently, in batches with retries.

    First (``preflight=True``) the URL, token and project are checked once
    (:func:`check_project`): a bad token, an unknown project or a malformed URL fails before
    anything is written. Then the target's tasks are checked (:func:`~.target.check_tasks`):
    with ``export`` (the export the predictions were made from: a path, file object, bytes
    or loaded JSON) every task of it must be in the project with the same ``data`` (and a
    full JSON export's project id must be ``project_id``); without it, the predictions'
    tasks must be in the project. A mismatch raises :class:`~crowd_keras.CrowdDataError`
    before anything is written; ``allow_data_mismatch=True`` accepts tasks whose data were
    edited on purpose. ``preflight=False`` skips both checks (the caller made them). Then the project's predictions of ``model_version`` are listed. A
    task that already has one: ``on_existing="update"`` (default) leaves it when its result
    and score are the same and updates it in place otherwise; ``"skip"`` always leaves it;
    ``"replace"`` writes it again even when identical (counted as ``n_rewritten``, not as
    replacing a different one). Extra copies of one version on one task are deleted. See
    the module docstring for why an interrupted push never leaves a task without its
    prediction.

    Transient failures (connection errors, timeouts, HTTP 408/429/5xx) are retried
    ``retries`` times with exponential ``backoff``; before a batch is sent again the
    project's predictions are listed again, so a batch whose reply was lost is not sent
    twice. Permanent failures stop at once. Both raise :class:`LabelStudioError` (its
    ``transient`` flag set accordingly) saying how far the push got; only a transient one
    advises a re-run. ``progress=True`` shows a bar (tqdm) or lines on stderr.
    """
    from crowd_keras.progress import Progress

    if on_existing not in _ON_EXISTING:
        raise ValueError(f"on_existing must be 'update', 'skip' or 'replace', got {on_existing!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    preds, model_version = _checked_predictions(predictions, model_version)
    if preflight:
        check_project(client, project_id, retries=retries, backoff=backoff)
        check_tasks(client, project_id, export, task_ids=[p["task"] for p in preds],
                    allow_data_mismatch=allow_data_mismatch, retries=retries, backoff=backoff)
    secrets, wanted = _secrets_of(client), {p["task"] for p in preds}

    def existing() -> dict:
        listed = _call(lambda: client.predictions.list(project=project_id,
                                                       request_options=_NO_RETRY),
                       f"listing predictions of project {project_id}", secrets, retries, backoff)
        out: dict = {}
        for pr in listed:
            if getattr(pr, "model_version", None) == model_version and pr.task in wanted:
                out.setdefault(pr.task, []).append(pr)
        return out

    counts = dict(new=0, replaced=0, rewritten=0, deleted=0, batches=0)
    stage = "checking existing predictions"
    bar = None
    try:
        updates, deletes, creates, unchanged = _plan(preds, existing(), on_existing)
        batches = [creates[i:i + batch_size] for i in range(0, len(creates), batch_size)]
        bar = Progress(len(updates) + len(deletes) + len(creates), "pushing predictions",
                       disable=not progress, unit="predictions")
        for n, (pred_id, p, identical) in enumerate(updates):
            stage = f"update {n + 1} of {len(updates)}"
            _call(lambda: client.predictions.update(
                id=pred_id, result=p["result"], score=p.get("score"), model_version=model_version,
                request_options=_NO_RETRY), f"updating prediction {pred_id} (task {p['task']})",
                secrets, retries, backoff)
            counts["rewritten" if identical else "replaced"] += 1
            bar.update()
        for n, pred_id in enumerate(deletes):
            stage = f"removing extra copy {n + 1} of {len(deletes)}"
            _delete(client, pred_id, secrets, retries, backoff)
            counts["deleted"] += 1
            bar.update()
        for n, batch in enumerate(batches):
            stage = f"batch {n + 1} of {len(batches)}"
            pending = list(batch)

            def refresh() -> None:  # the failed attempt may have been stored, its reply lost
                present = existing()
                pending[:] = [p for p in pending if p["task"] not in present]

            def send() -> Any:
                if not pending:
                    return None
                return client.projects.import_predictions(project_id, request=pending,
                                                          request_options=_NO_RETRY)

            _call(send, f"importing batch {n + 1} of {len(batches)}", secrets, retries, backoff,
                  before_retry=refresh)
            counts["new"] += len(batch)
            counts["batches"] += 1
            bar.update(len(batch))
    except LabelStudioError as exc:
        done = (f"({counts['new']} created so far) after updating {counts['replaced']} changed "
                f"and {counts['rewritten']} identical predictions")
        advice = ("Re-run with the same model_version to complete: nothing is duplicated and "
                  "every task keeps a prediction" if exc.transient else
                  "Nothing more was sent; every task keeps the prediction it had")
        raise LabelStudioError(
            f"push of model_version {model_version!r} to project {project_id} stopped at {stage} "
            f"{done}: {exc}. {advice}", transient=exc.transient) from None
    finally:
        if bar is not None:
            bar.close()
    written = counts["new"] + counts["replaced"] + counts["rewritten"]
    return PushResult(model_version=model_version, n_created=written, n_unchanged=unchanged,
                      n_replaced=counts["replaced"], n_batches=counts["batches"],
                      n_new=counts["new"], n_rewritten=counts["rewritten"],
                      n_deleted=counts["deleted"])


def _delete(client: Any, pred_id: int, secrets: list, retries: int, backoff: float) -> None:
    """Delete an extra copy; a 404 on a retry means the lost first attempt did it."""
    tries = []

    def fn() -> None:
        tries.append(1)
        try:
            client.predictions.delete(id=pred_id, request_options=_NO_RETRY)
        except Exception as exc:  # noqa: BLE001 - re-raised unless it is that 404
            if len(tries) > 1 and getattr(exc, "status_code", None) == 404:
                return
            raise

    _call(fn, f"deleting extra prediction {pred_id}", secrets, retries, backoff)
