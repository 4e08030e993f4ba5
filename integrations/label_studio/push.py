"""Push predictions to a Label Studio project: idempotent, in as few requests as the API
allows, and safe to interrupt.

Plan (after one listing of the project's predictions): a task without a prediction of the
model version gets one created (``import_predictions`` in batches); a task whose prediction
differs gets the new one by the cheaper of two routes (estimated from the number of
requests and of predictions each moves; see ``_swap_cost``):

* **in place**: one ``PATCH /api/predictions/<id>`` per changed prediction (and one
  ``DELETE`` per extra copy of the version on a task). A task holds the old prediction or the
  new one at every instant, never none and never two.
* **bulk swap** (Label Studio has no bulk update, nor a bulk delete by prediction id): every
  prediction the version is to hold in the project is imported under a staging version
  (:func:`staging_version`), all predictions of the version are deleted in one request
  (``DELETE /api/projects/<id>/model-versions/``, one transaction), the same predictions are
  imported under the version, and the staging version is deleted: ``2 * ceil(n /
  bulk_batch_size) + 2`` requests for ``n`` predictions, whatever number changed (but the
  server deletes ``2 * n`` rows one by one). The project's selected model version, when it is
  this one, points at the staging copies meanwhile.

Import requests are few and large in the swap: after each one, Label Studio recounts the
predictions of every task of the project that holds a prediction or an annotation, so a
request costs in proportion to the project, not to the batch. New predictions on tasks
without one go in ``batch_size`` requests (a stopped first push resumes batch by batch); the
swap, which moves every prediction of the version twice and is resumed as a whole, sends each
move in requests of up to ``bulk_batch_size``.

The data manager's "delete predictions" action (``POST /api/dm/actions``) is not used: it
deletes every prediction of the selected tasks, of every model version, so between it and
the import a task would hold none.

A task of the project that holds a prediction of the version (filling this push's controls)
but gets none from this push (its annotations removed since an earlier push, or left out of
this one) is *stale*: it is counted and named (:attr:`PushResult.stale_tasks`, a
:class:`StalePredictionsWarning`) and keeps its prediction, unless ``prune_stale=True``
deletes it (one ``DELETE`` each in place; the bulk swap leaves it out of what it imports
again). Pruning deletes only on the tasks the push is for (the export's when it is given):
a stale task outside them is named, never deleted.

A stopped push loses nothing: every task that had a prediction of the version holds its old
or its new content (a stale one: its old one or none, when pruned), at most one copy of
each content per version (a task the push does not write keeps every copy it held); after a
stopped bulk swap some hold it under the staging version, beside the old one or in its
place. The next push of the same model version first completes the stopped
swap (staging copies of tasks without the version are imported as the version, the staging
version is deleted), then pushes: a re-run completes without duplicates.
"""
from __future__ import annotations

import json
import math
import os
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from crowd_keras.errors import Argument, CrowdDataError, Message

from ._push_ops import PushOps
from ._records import _integer_id, check_flag, task_id
from .client import (LabelStudioError, PushInterrupted, _base_url, _scrub, check_project,
                     check_retries)
from .target import check_against_config, check_tasks, export_tasks

_ON_EXISTING = ("update", "skip", "replace")
#: Stale tasks named in the warning (all of them are in ``PushResult.stale_tasks``).
_SHOWN = 5


class StalePredictionsWarning(UserWarning):
    """A push left predictions of its model version on tasks it did not write (see
    :attr:`PushResult.stale_tasks`; ``prune_stale=True`` deletes them)."""


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_predictions` did.

    ``n_created``: predictions this push wrote (``n_new`` created on tasks without one, plus
    ``n_replaced`` updated because they differed, plus ``n_rewritten`` identical ones written
    again under ``on_existing="replace"``); ``n_unchanged``: left as they were (content;
    a bulk swap re-creates them with new ids); ``n_deleted``: extra copies of the version
    removed; ``n_batches``: import requests; ``n_requests``: all requests sent;
    ``bulk``: True when changed predictions went through the bulk swap (module docstring).
    ``stale_tasks``: the tasks (ids, ascending) that held a prediction of the version this
    push did not write (module docstring); ``stale_outside``: those of them that are not among
    the tasks the push is for (``tasks``, the export's), which keep it whatever
    ``prune_stale``; ``n_pruned``: predictions of the others deleted (``prune_stale=True``; 0
    otherwise, and they keep them).
    """

    model_version: str
    n_created: int
    n_unchanged: int
    n_replaced: int
    n_batches: int
    n_new: int = 0
    n_rewritten: int = 0
    n_deleted: int = 0
    n_requests: int = 0
    bulk: bool = False
    stale_tasks: tuple = ()
    stale_outside: tuple = ()
    n_pruned: int = 0

    @property
    def n_stale(self) -> int:
        """How many tasks held a prediction of the version that this push did not write."""
        return len(self.stale_tasks)


def staging_version(model_version: str) -> str:
    """The model version a bulk swap of ``model_version`` stages the new predictions under."""
    return f"{model_version}::crowd-keras-staging"


def _result_key(result: Any) -> str:
    items = [{k: r.get(k) for k in ("from_name", "to_name", "type", "value")}
             for r in (result or []) if isinstance(r, dict)]
    return json.dumps(items, sort_keys=True)


def _same(old: Any, new: dict) -> bool:
    a, b = getattr(old, "score", None), new.get("score")
    close = (a is None and b is None) if a is None or b is None else \
        math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return close and _result_key(old.result) == _result_key(new["result"])


def _check_version(version: Any) -> None:
    """A model version the push can find again: text (Label Studio stores ``7`` as ``"7"``,
    which never equals 7: every push created the predictions again) and not empty (``""`` is
    the version of predictions made without one, by hand or by an ML backend: not this
    push's to replace or delete)."""
    if not isinstance(version, str):
        raise TypeError(f"model_version must be a string, got {type(version).__name__} "
                        f"{version!r} (Label Studio stores it as text: pass {str(version)!r})")
    if not version.strip():
        raise ValueError(f"model_version {version!r} is empty: it is the version of "
                         "predictions made without one, which a push would replace or delete; "
                         "give the predictions a name")


def _checked_predictions(predictions: Sequence[dict], model_version: Optional[str]) -> tuple:
    if isinstance(predictions, (dict, str, bytes, os.PathLike)) or \
            not isinstance(predictions, Iterable):
        hint = (" (a file? load it first: json.load)"
                if isinstance(predictions, (str, os.PathLike)) else "")
        raise TypeError(f"predictions must be a list of prediction dicts, got "
                        f"{type(predictions).__name__}{hint}")
    preds = list(predictions)
    odd = next((n for n, p in enumerate(preds) if not isinstance(p, dict)), None)
    if odd is not None:
        raise CrowdDataError(f"prediction {odd} is not a dict (got {type(preds[odd]).__name__} "
                             f"{str(preds[odd])[:80]!r})")
    preds = [dict(p) for p in preds]
    versions = {p.get("model_version") for p in preds} - {None}
    if model_version is None:
        if not versions:
            # Label Studio's import format leaves it out: "model versions []" named nothing
            which = (f"none of the {len(preds)} predictions names its model_version" if preds
                     else "no predictions and no model_version given")
            raise CrowdDataError(Message(
                "{which}; pass {version} (the name a re-push finds them by)",
                which=which, version=Argument("model_version")))
        if len(versions) != 1:
            ref = next(p["model_version"] for p in preds if p.get("model_version") is not None)
            raise CrowdDataError(Message(
                "predictions carry model versions {versions} (first {ref!r}, then "
                "{other}); pass one {version}", versions=sorted(versions, key=repr), ref=ref,
                other=_first_other(preds, ref), version=Argument("model_version")))
        model_version = versions.pop()
    elif versions - {model_version}:
        raise CrowdDataError(f"predictions carry model versions {sorted(versions, key=repr)}, "
                             f"not {model_version!r} "
                             f"(first: {_first_other(preds, model_version)})")
    _check_version(model_version)
    tasks = []
    for n, p in enumerate(preds):
        if "task" not in p or not isinstance(p.get("result"), list):
            raise CrowdDataError(f"prediction {n} needs a 'task' and a 'result' list")
        # as given, task "7" passes the pre-flight (ids as numbers) and the server refuses it
        # ("task ID 7 not found"); np.int64 is no JSON
        p["task"] = task_id(p["task"], f"prediction {n}")
        p["model_version"] = model_version
        tasks.append(p["task"])
    if len(set(tasks)) != len(tasks):
        seen: dict = {}
        n, first = next((n, seen[t]) for n, t in enumerate(tasks)
                        if seen.setdefault(t, n) != n)
        n_tasks = sum(1 for c in Counter(tasks).values() if c > 1)
        raise CrowdDataError(f"predictions {first} and {n} are both for task {tasks[n]} "
                             f"({n_tasks} task(s) with several predictions); Label Studio "
                             f"keeps one per model version and task: push one per task. "
                             "Nothing was written")
    return preds, model_version


def _first_other(preds: list, version: Any) -> str:
    """The first prediction that names a model version other than ``version``, as text."""
    n = next(n for n, p in enumerate(preds) if p.get("model_version") not in (None, version))
    return (f"prediction {n}, task {preds[n].get('task')!r}, model_version "
            f"{preds[n]['model_version']!r}")


def _controls(result: Any) -> set:
    """The controls (``from_name``) a prediction's result fills."""
    return {r.get("from_name") for r in (result or []) if isinstance(r, dict)} - {None}


def _check_other_controls(preds: list, have: dict, version: str) -> None:
    """Refuse a push that would replace or delete, on some task, a prediction of ``version``
    that fills other controls than this push's (each control's aggregate pushed under one
    version, as the CLI's default ``crowd-keras-<method>`` does, replaced the one before)."""
    mine = set().union(*(_controls(p["result"]) for p in preds))
    if not mine:   # nothing predicted anywhere (empty span results): no control to compare
        return
    clash = sorted((t, sorted(map(str, _controls(o.result) - mine))) for t, olds in have.items()
                   for o in olds if _controls(o.result) - mine)
    if clash:
        task, others = clash[0]
        ours = "', '".join(sorted(map(str, mine)))
        raise CrowdDataError(Message(
            "model_version {version!r} already holds predictions of control '{others}' on "
            "{n} of the tasks to write (first: task {task}); these predictions fill control "
            "'{ours}' and would replace them. Give each control its own {arg} (e.g. "
            "{example!r}), or pass {replace} to overwrite them. Nothing was written",
            version=version, others="', '".join(others), n=len({t for t, _ in clash}),
            task=task, ours=ours, arg=Argument("model_version"),
            example=f"{version}-{sorted(map(str, mine))[0]}",
            replace=Argument("on_existing", "replace")))


def _stale(preds: list, have: dict) -> dict:
    """{task: [its predictions of the version that this push makes stale]}: tasks the push
    does not write, predictions filling only this push's controls (another control's
    aggregate under the same version is not this push's to count or delete; a push naming
    no control counts them all)."""
    wanted = {p["task"] for p in preds}
    mine = set().union(*(_controls(p["result"]) for p in preds))
    out = {}
    for task, olds in have.items():
        if task in wanted:
            continue
        ours = [o for o in olds if not mine or not _controls(o.result) - mine]
        if ours:
            out[task] = ours
    return out


def stale_words(kept: Sequence[int], version: str, project_id: int,
                done: str = "this push did not write") -> str:
    """The stale tasks ``kept`` (ids, ascending) that keep their prediction of ``version``:
    how many and the first ones, in words. What to do about them is the caller's to say
    (the warning and the command line name the pruning each in its own words)."""
    shown = ", ".join(map(str, kept[:_SHOWN])) + (", ..." if len(kept) > _SHOWN else "")
    one = len(kept) == 1
    return (f"{len(kept)} task{'' if one else 's'} of project {project_id} "
            f"hold{'s' if one else ''} a prediction of model_version {version!r} from an "
            f"earlier push that {done} (first: task{'' if one else 's'} {shown}): kept")


def _stale_warning(kept: list, n_outside: int, version: str, project_id: int,
                   where: str) -> Message:
    """The warning for the stale tasks ``kept`` (``n_outside`` of them not among the tasks
    the push is for, which ``where`` names)."""
    them = "it" if len(kept) == 1 else "them"
    n_inside = len(kept) - n_outside
    advice = ("pass {prune} to delete {them}" if not n_outside else
              "{prune} deletes the {inside} among the tasks the push is for ({where}), not "
              "the {outside} outside them" if n_inside else
              "not among the tasks the push is for ({where}): {prune} leaves {them} alone")
    return Message("{head}; " + advice, head=stale_words(kept, version, project_id),
                   prune=Argument("prune_stale", True), them=them, inside=n_inside,
                   outside=n_outside, where=where)


def _checked_scope(tasks: Any, export: Any, preds: list) -> Optional[frozenset]:
    """The ids of ``tasks=`` (every prediction's task among them), or None."""
    if tasks is None:
        return None
    if export is not None:
        raise ValueError("give export= or tasks= (the tasks the push is for), not both: the "
                         "export's tasks are its tasks")
    if isinstance(tasks, (str, bytes, dict)) or not isinstance(tasks, Iterable):
        raise TypeError(f"tasks must be a list of task ids, got {type(tasks).__name__} "
                        f"{str(tasks)[:80]!r}")
    scope = frozenset(task_id(t, f"tasks[{n}]") for n, t in enumerate(tasks))
    stray = next((n for n, p in enumerate(preds) if p["task"] not in scope), None)
    if stray is not None:
        raise CrowdDataError(f"prediction {stray} is for task {preds[stray]['task']}, which is "
                             "not among tasks= (the tasks the push is for). Nothing was written")
    return scope


def _plan(preds: list, have: dict, on_existing: str) -> tuple:
    """(updates [(prediction id, new, identical)], deletes [ids], creates [new], kept
    {task: the old prediction left in place})."""
    updates, deletes, creates, kept = [], [], [], {}
    for p in preds:
        olds = have.get(p["task"], [])
        if not olds:
            creates.append(p)
            continue
        keep = next((o for o in olds if _same(o, p)), olds[0])  # keep an identical copy
        deletes += [o.id for o in olds if o is not keep]
        identical = _same(keep, p)
        if on_existing == "skip" or (on_existing == "update" and identical):
            kept[p["task"]] = keep
        else:
            updates.append((keep.id, p, identical))
    return updates, deletes, creates, kept


# Relative costs of a push's parts, in units of one single-prediction request (a PATCH or a
# DELETE): an import request, plus its recount of each task that holds a prediction (module
# docstring), each prediction it carries, and each prediction row a version delete removes
# (Label Studio saves the row's task in a pre_delete signal). Measured on a real server:
# benchmarks/label_studio_push.py, benchmarks/results/label_studio_push.md.
_COST_IMPORT_REQUEST, _COST_RECOUNTED_TASK = 1.0, 0.01
_COST_IMPORT_ROW, _COST_DELETED_ROW = 0.01, 0.1


def _import_cost(n: int, batch_size: int, n_holding: int) -> float:
    """``n`` predictions in requests of ``batch_size``, ``n_holding`` tasks holding one."""
    per_request = _COST_IMPORT_REQUEST + n_holding * _COST_RECOUNTED_TASK
    return -(-n // batch_size) * per_request + n * _COST_IMPORT_ROW


def _in_place_cost(n_updates: int, n_deletes: int, n_creates: int, batch_size: int,
                   n_holding: int) -> float:
    return n_updates + n_deletes + _import_cost(n_creates, batch_size, n_holding + n_creates)


def _swap_cost(n_final: int, bulk_batch_size: int, n_holding: int) -> float:
    """Two imports of every prediction, two version deletes, reading the project."""
    return (2 * _import_cost(n_final, bulk_batch_size, n_holding + n_final)
            + 2 * n_final * _COST_DELETED_ROW + 3)


def _content(task: int, old: Any) -> dict:
    return {"task": task, "result": old.result, "score": getattr(old, "score", None)}


def push_predictions(client: Any, project_id: int, predictions: Sequence[dict], *,
                     model_version: Optional[str] = None, batch_size: int = 100,
                     retries: int = 3, backoff: float = 0.5, on_existing: str = "update",
                     progress: bool = False, preflight: bool = True, export: Any = None,
                     allow_data_mismatch: bool = False,
                     bulk_batch_size: int = 5000, prune_stale: bool = False,
                     tasks: Optional[Iterable[int]] = None) -> PushResult:
    """Send predictions to a project, idempotently, in batches with retries.

    First (``preflight=True``) the URL, token and project are checked once
    (:func:`check_project`): a bad token, an unknown project or a malformed URL fails before
    anything is written. The predictions must fit the project's labeling config
    (:func:`~.target.check_against_config`). Then the target's tasks are checked
    (:func:`~.target.check_tasks`):
    with ``export`` (the export the predictions were made from: a path, file object, bytes
    or loaded JSON) every task of it must be in the project with the same ``data`` (and a
    full JSON export's project id must be ``project_id``); without it, the predictions'
    tasks must be in the project. A mismatch raises :class:`~crowd_keras.CrowdDataError`
    before anything is written; ``allow_data_mismatch=True`` accepts tasks whose data were
    edited on purpose. ``preflight=False`` skips these checks (the caller made them).

    Then the project's predictions are listed. A task that already has one of
    ``model_version``: ``on_existing="update"`` (default) leaves it when its result and
    score are the same and replaces it otherwise; ``"skip"`` always leaves it; ``"replace"``
    writes it again even when identical (counted as ``n_rewritten``, not as replacing a
    different one). Under ``"update"``, a push whose predictions would replace a prediction
    of ``model_version`` that fills another control (pushing a second control's aggregate
    under the first one's version) is refused before anything is written: give each control
    its own version, or pass ``"replace"``. Extra copies of one version on one task are
    deleted. Changed predictions are updated in place or by a bulk swap, whichever takes
    fewer requests; see the module docstring for both and for why a stopped push never loses
    a prediction. ``model_version`` must be a non-empty string (TypeError, ValueError).
    ``batch_size``: predictions per import request of new predictions (in place);
    ``bulk_batch_size``: per import request of a bulk swap, which moves every prediction of
    the version and is resumed as a whole (larger requests: each one costs the server a
    recount of the project).

    A task the push is for that holds a prediction of ``model_version`` (filling this push's
    controls) and gets none from this push is stale: its id is in the result's
    ``stale_tasks`` and a :class:`StalePredictionsWarning` names how many and the first
    ones; it keeps its prediction, unless ``prune_stale=True`` deletes it, on the tasks the
    push is for only (predictions of other versions and other controls are never touched).
    The tasks the push is for: ``tasks`` (ids: every prediction's task must be among them;
    not with ``export``), else the export's tasks, else every task of the project.

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
    for name, value in (("batch_size", batch_size), ("bulk_batch_size", bulk_batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    retries, backoff = check_retries(retries, backoff)
    check_flag("allow_data_mismatch", allow_data_mismatch)
    check_flag("preflight", preflight)
    check_flag("progress", progress)
    check_flag("prune_stale", prune_stale)
    project_id = _integer_id(project_id, "push_predictions", "project_id")
    preds, model_version = _checked_predictions(predictions, model_version)
    scope = _checked_scope(tasks, export, preds)
    scope_words = "those of export=" if export is not None else "tasks="
    if preflight:
        project = check_project(client, project_id, retries=retries, backoff=backoff)
        check_against_config(preds, getattr(project, "label_config", None), project_id)
        check = check_tasks(client, project_id, export, task_ids=[p["task"] for p in preds],
                            allow_data_mismatch=allow_data_mismatch, retries=retries,
                            backoff=backoff)
        if export is not None:
            scope = check.tasks
    elif export is not None:
        scope = frozenset(export_tasks(export).data)
    ops = PushOps(client, project_id, retries, backoff)
    staging = staging_version(model_version)
    counts = dict(new=0, replaced=0, rewritten=0, deleted=0, batches=0, to_create=0,
                  pruned=0, to_prune=0)
    state = {"stage": "checking existing predictions", "bulk": False}
    bar = None
    try:
        listing = ops.listing()
        if any(getattr(p, "model_version", None) == staging for p in listing):
            state["stage"] = f"completing a stopped bulk update (staging version {staging!r})"
            _complete_swap(ops, listing, model_version, staging, bulk_batch_size)
            listing = ops.listing()
        have: dict = {}
        for pr in sorted(listing, key=lambda p: p.id):
            if getattr(pr, "model_version", None) == model_version:
                have.setdefault(pr.task, []).append(pr)
        wanted = {p["task"] for p in preds}
        if on_existing in ("update", "skip"):   # skip kept them and called them unchanged
            _check_other_controls(preds, {t: v for t, v in have.items() if t in wanted},
                                  model_version)
        updates, deletes, creates, kept = _plan(preds, {t: v for t, v in have.items()
                                                       if t in wanted}, on_existing)
        stale = _stale(preds, have)
        outside = sorted(t for t in stale if scope is not None and t not in scope)
        prunes = sorted(o.id for t, v in stale.items() if t not in outside
                        for o in v) if prune_stale else []
        counts["to_create"], counts["to_prune"] = len(creates), len(prunes)
        pruned = set(prunes)
        untouched = {t: [o for o in v if o.id not in pruned] for t, v in have.items()
                     if t not in wanted}
        # a task the push does not write keeps every copy it holds (another control's
        # prediction under this version is not this push's to drop)
        final = ([_content(t, o) for t, o in kept.items()] + [p for _, p, _ in updates]
                 + creates + [_content(t, o) for t, v in untouched.items() for o in v])
        n_holding = len({p.task for p in listing})
        if (updates or prunes) and _swap_cost(len(final), bulk_batch_size, n_holding) < \
                _in_place_cost(len(updates), len(deletes) + len(prunes), len(creates),
                               batch_size, n_holding):
            state["bulk"] = True
            bar = Progress(2 * len(final), "pushing predictions (bulk update)",
                           disable=not progress, unit="predictions")
            counts["batches"] = _swap(ops, final, model_version, staging, bulk_batch_size,
                                      bar, state)
            counts["new"], counts["pruned"] = len(creates), len(prunes)
            counts["deleted"] = sum(len(v) - 1 for t, v in have.items() if t in wanted)
            for _, _, identical in updates:
                counts["rewritten" if identical else "replaced"] += 1
        else:
            bar = Progress(len(updates) + len(deletes) + len(creates) + len(prunes),
                           "pushing predictions", disable=not progress, unit="predictions")
            _in_place(ops, updates, deletes, creates, model_version, batch_size, bar, state,
                      counts)
            _prune(ops, prunes, bar, state, counts)
    except LabelStudioError as exc:
        where = f"project {project_id} at {_base_url(client)}"
        raise LabelStudioError(_scrub(_stopped(exc, model_version, where, staging, state, counts),
                                      ops.secrets),
                               transient=exc.transient) from None
    except KeyboardInterrupt:   # Ctrl-C: the same account as a stop by the server
        where = f"project {project_id} at {_base_url(client)}"
        stop = LabelStudioError("interrupted (Ctrl-C; a request already sent may still be "
                                "carried out by the server)", transient=True)
        raise PushInterrupted(_scrub(_stopped(stop, model_version, where, staging, state,
                                              counts), ops.secrets)) from None
    finally:
        if bar is not None:
            bar.close()
    written = counts["new"] + counts["replaced"] + counts["rewritten"]
    kept_stale = sorted(stale) if not prune_stale else outside
    if kept_stale:
        warnings.warn(_stale_warning(kept_stale, len(outside), model_version, project_id,
                                     scope_words), StalePredictionsWarning, stacklevel=2)
    return PushResult(model_version=model_version, n_created=written,
                      n_unchanged=len(kept), n_replaced=counts["replaced"],
                      n_batches=counts["batches"], n_new=counts["new"],
                      n_rewritten=counts["rewritten"], n_deleted=counts["deleted"],
                      n_requests=ops.n_requests, bulk=state["bulk"],
                      stale_tasks=tuple(sorted(stale)), stale_outside=tuple(outside),
                      n_pruned=counts["pruned"])


def _in_place(ops: PushOps, updates: list, deletes: list, creates: list, version: str,
              batch_size: int, bar: Any, state: dict, counts: dict) -> None:
    """Update changed predictions one request each, delete extra copies, import new ones."""
    for n, (pred_id, p, identical) in enumerate(updates):
        state["stage"] = f"update {n + 1} of {len(updates)}"
        ops.update(pred_id, p, version)
        counts["rewritten" if identical else "replaced"] += 1
        bar.update()
    for n, pred_id in enumerate(deletes):
        state["stage"] = f"removing extra copy {n + 1} of {len(deletes)}"
        ops.delete(pred_id)
        counts["deleted"] += 1
        bar.update()
    def done(n: int) -> None:
        counts["new"] += n
        counts["batches"] += 1
        bar.update(n)

    ops.import_batches(creates, version, batch_size, state, "", done)


def _prune(ops: PushOps, prunes: list, bar: Any, state: dict, counts: dict) -> None:
    """Delete the stale predictions (``prune_stale``), after the new ones are written."""
    for n, pred_id in enumerate(prunes):
        state["stage"] = f"deleting stale prediction {n + 1} of {len(prunes)}"
        ops.delete(pred_id)
        counts["pruned"] += 1
        bar.update()


def _swap(ops: PushOps, final: list, version: str, staging: str, batch_size: int, bar: Any,
          state: dict) -> int:
    """The bulk swap (module docstring); returns the number of import requests."""
    n = ops.import_batches(final, staging, batch_size, state, "staging the predictions, ",
                           bar.update)
    selected = ops.selected_version()
    if selected == version:  # deleting the selected version would clear the setting
        ops.select_version(staging)
    state["stage"] = f"deleting the old predictions of {version!r}"
    ops.delete_version(version)
    n += ops.import_batches(final, version, batch_size, state,
                            f"importing the predictions as {version!r}, ", bar.update)
    if selected == version:
        ops.select_version(version)
    state["stage"] = f"deleting the staging version {staging!r}"
    ops.delete_version(staging)
    if selected not in (None, version) and ops.selected_version() != selected:
        ops.select_version(selected)  # Label Studio clears an ML backend's selection too
    return n


def _complete_swap(ops: PushOps, listing: list, version: str, staging: str,
                   batch_size: int) -> None:
    """Finish a stopped bulk swap: a task with staging copies and no copy of ``version``
    gets their contents as ``version`` (each distinct content once: a retried import request
    may have staged one twice); then the staging version is deleted."""
    holding = {p.task for p in listing if getattr(p, "model_version", None) == version}
    staged: dict = {}
    for p in sorted(listing, key=lambda p: p.id):
        if getattr(p, "model_version", None) == staging and p.task not in holding:
            content = _content(p.task, p)
            staged.setdefault(json.dumps(content, sort_keys=True, default=str), content)
    lacking = list(staged.values())
    ops.import_batches(lacking, version, batch_size, {}, "completing a stopped bulk update, ",
                       lambda n: None)
    if ops.selected_version() == staging:
        ops.select_version(version)
    ops.delete_version(staging)


def _stopped(exc: LabelStudioError, version: str, where: str, staging: str, state: dict,
             counts: dict) -> str:
    """The message of a stopped push: how far it got, what every task holds, what to do."""
    head = f"push of model_version {version!r} to {where} stopped at {state['stage']}"
    if state["bulk"]:
        done = "(a bulk update)"
        holds = ("no task lost its prediction" + (" (but the stale ones, pruned)"
                                                  if counts["to_prune"] else "")
                 + f"; some hold the new one as model version {staging!r}, beside the old one "
                 "or in its place")
        advice = ("Re-run with the same model_version to complete: it finishes the swap, "
                  "nothing is duplicated" if exc.transient else
                  "Nothing more was sent; the next push of this model_version finishes the swap")
        return f"{head} {done}: {exc}. {advice}; {holds}"
    missing = counts["to_create"] - counts["new"]
    done = (f"({counts['new']} of {counts['to_create']} new predictions created, "
            f"{counts['replaced']} changed and {counts['rewritten']} identical updated in place)")
    holds = "no task lost a prediction it had" + (
        f" but the {counts['pruned']} stale ones deleted on purpose (of "
        f"{counts['to_prune']}: prune_stale)" if counts["pruned"] else "") + (
        f"; {missing} tasks without a prediction of this version still have none"
        if missing else "")
    advice = ("Re-run with the same model_version to complete: nothing is duplicated"
              if exc.transient else "Nothing more was sent")
    return f"{head} {done}: {exc}. {advice}; {holds}"
