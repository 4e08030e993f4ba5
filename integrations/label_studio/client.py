"""Talk to a Label Studio server through ``label-studio-sdk`` (imported lazily): connect, list
users' e-mails and push predictions idempotently, with retries of transient failures and
error messages without response headers or the API token."""
from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

from crowd_keras.errors import CrowdDataError

from ._controls import _INSTALL_HINT

API_KEY_ENV = "LABEL_STUDIO_API_KEY"
# The SDK retries connection errors itself, also for POST: a lost reply would then duplicate a
# batch. push_predictions retries on its own, after checking what the server already holds.
_NO_RETRY = {"max_retries": 0}


class LabelStudioError(RuntimeError):
    """A call to a Label Studio server failed (message scrubbed of the API token)."""


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_predictions` did: predictions created, left as they were, replaced."""

    model_version: str
    n_created: int
    n_unchanged: int
    n_replaced: int
    n_batches: int


_TOKEN_PATTERN = re.compile(r"(?i)\b(token|bearer)(\s+|=)([A-Za-z0-9._\-]{16,})")


def _secrets_of(client: Any = None, api_key: Optional[str] = None) -> list:
    found = [api_key, os.environ.get(API_KEY_ENV)]
    wrapper = getattr(client, "_client_wrapper", None)
    tokens = getattr(wrapper, "_tokens_client", None)
    for obj, attr in ((tokens, "_api_key"), (tokens, "_access_token"), (wrapper, "api_key")):
        value = getattr(obj, attr, None) if obj is not None else None
        found.append(value if isinstance(value, str) else None)
    return sorted({s for s in found if s and len(s) >= 4}, key=len, reverse=True)


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return _TOKEN_PATTERN.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)


def _describe(exc: BaseException) -> str:
    """An exception as text without response headers (they carry session cookies)."""
    status = getattr(exc, "status_code", None)
    if status is not None and hasattr(exc, "body"):
        body = exc.body
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k in ("detail", "validation_errors")} or body
        return f"HTTP {status}: {str(body)[:500]}"
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def describe_error(exc: BaseException, client: Any = None) -> str:
    """An exception from the SDK as one line: no response headers, the API token scrubbed."""
    return _scrub(_describe(exc), _secrets_of(client))


def _transient(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    if status is not None:
        return status in (408, 425, 429) or status >= 500
    try:
        import httpx
        if isinstance(exc, httpx.TransportError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, (ConnectionError, TimeoutError))


def _call(fn: Callable[[], Any], what: str, secrets: list, retries: int, backoff: float,
          before_retry: Optional[Callable[[], None]] = None) -> Any:
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised scrubbed
            if not _transient(exc) or attempt == retries:
                raise LabelStudioError(_scrub(f"{what} failed after {attempt + 1} attempt(s): "
                                              f"{_describe(exc)}", secrets)) from None
            time.sleep(backoff * 2 ** attempt)
            if before_retry is not None:
                before_retry()


def connect(url: str, api_key: Optional[str] = None, *, timeout: float = 60.0) -> Any:
    """A ``label_studio_sdk.LabelStudio`` client (no SDK-side retries: ours are idempotent).

    The token comes from ``api_key`` or ``$LABEL_STUDIO_API_KEY``; it is never printed.
    """
    try:
        from label_studio_sdk import LabelStudio
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"talking to Label Studio needs label-studio-sdk; "
                          f"{_INSTALL_HINT}") from None
    key = api_key or os.environ.get(API_KEY_ENV)
    if not key:
        raise LabelStudioError(f"no Label Studio API token: pass api_key= or set {API_KEY_ENV}")
    try:
        return LabelStudio(base_url=url, api_key=key, timeout=timeout, max_retries=0)
    except Exception as exc:  # noqa: BLE001
        raise LabelStudioError(_scrub(f"cannot create a client for {url}: {_describe(exc)}",
                                      [key])) from None


def fetch_user_emails(client: Any, *, retries: int = 3, backoff: float = 0.5) -> dict:
    """{user id: e-mail} of the organisation's users (to fill the report's e-mails)."""
    users = _call(lambda: client.users.list(request_options=_NO_RETRY), "listing users",
                  _secrets_of(client), retries, backoff)
    return {int(u.id): u.email for u in users if getattr(u, "id", None) is not None}


def _result_key(result: Any) -> str:
    items = [{k: r.get(k) for k in ("from_name", "to_name", "type", "value")}
             for r in (result or []) if isinstance(r, dict)]
    return json.dumps(items, sort_keys=True)


def push_predictions(client: Any, project_id: int, predictions: Sequence[dict], *,
                     model_version: Optional[str] = None, batch_size: int = 100,
                     retries: int = 3, backoff: float = 0.5, on_existing: str = "update",
                     progress: bool = False) -> PushResult:
    """Send predictions to a project, idempotently, in batches with retries.

    Before sending, the project's predictions of ``model_version`` are listed. A task that
    already has one: ``on_existing="update"`` (default) leaves it when its result and score
    are the same and replaces it otherwise; ``"skip"`` always leaves it; ``"replace"``
    always deletes and re-creates it. Extra copies of one version on one task are deleted.
    So a re-run with the same ``model_version`` neither duplicates nor loses predictions,
    and a run stopped half-way (killed client or server) completes when run again.

    Transient failures (connection errors, timeouts, HTTP 408/429/5xx) are retried
    ``retries`` times with exponential ``backoff``; before a batch is sent again the
    project's predictions are listed again, so a batch whose reply was lost is not sent
    twice. Other failures raise :class:`LabelStudioError` with the API token scrubbed.
    """
    from crowd_keras.progress import progress_bar

    if on_existing not in ("update", "skip", "replace"):
        raise ValueError(f"on_existing must be 'update', 'skip' or 'replace', got {on_existing!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
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
    secrets = _secrets_of(client)
    wanted = set(tasks)

    def existing() -> dict:
        listed = _call(lambda: client.predictions.list(project=project_id,
                                                       request_options=_NO_RETRY),
                       f"listing predictions of project {project_id}", secrets, retries, backoff)
        out: dict = {}
        for pr in listed:
            if getattr(pr, "model_version", None) == model_version and pr.task in wanted:
                out.setdefault(pr.task, []).append(pr)
        return out

    def delete(pred_id: int) -> None:
        _call(lambda: client.predictions.delete(id=pred_id, request_options=_NO_RETRY),
              f"deleting prediction {pred_id}",
              secrets, retries, backoff)

    state = {"created": 0, "batches": 0, "unchanged": 0, "replaced": 0, "n_batches": None}
    try:
        todo = _plan(preds, existing(), on_existing, delete, state)
        batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
        state["n_batches"] = len(batches)
        for batch in progress_bar(batches, desc="pushing predictions", disable=not progress):
            pending = list(batch)

            def refresh() -> None:  # the failed attempt may have been stored, its reply lost
                present = existing()
                pending[:] = [p for p in pending if p["task"] not in present]

            def send() -> Any:
                if not pending:
                    return None
                return client.projects.import_predictions(project_id, request=pending,
                                                          request_options=_NO_RETRY)

            _call(send, f"importing batch {state['batches'] + 1} of {len(batches)}", secrets,
                  retries, backoff, before_retry=refresh)
            state["created"] += len(batch)
            state["batches"] += 1
    except LabelStudioError as exc:
        where = (f"batch {state['batches'] + 1} of {state['n_batches']}"
                 if state["n_batches"] is not None else "checking existing predictions")
        raise LabelStudioError(
            f"push of model_version {model_version!r} to project {project_id} stopped at {where} "
            f"({state['created']} created so far): {exc}. Re-run with the same model_version to "
            "complete: nothing is duplicated") from None
    return PushResult(model_version=model_version, n_created=state["created"],
                      n_unchanged=state["unchanged"], n_replaced=state["replaced"],
                      n_batches=state["batches"])


def _plan(preds: list, have: dict, on_existing: str, delete: Callable[[int], None],
          state: dict) -> list:
    """Predictions still to send; deletes extra copies and those to be replaced."""
    todo = []
    for p in preds:
        olds = sorted(have.get(p["task"], []), key=lambda pr: pr.id)
        for extra in olds[1:]:
            delete(extra.id)
        if olds:
            old = olds[0]
            same = (_result_key(old.result) == _result_key(p["result"])
                    and _close(getattr(old, "score", None), p.get("score")))
            if on_existing == "skip" or (on_existing == "update" and same):
                state["unchanged"] += 1
                continue
            delete(old.id)
            state["replaced"] += 1
        todo.append(p)
    return todo


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
