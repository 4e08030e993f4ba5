"""The requests a push is made of, each retried on transient failures (:func:`.client._call`)
and safe to repeat: list a project's predictions, import predictions of one model version in
batches (a batch sent again after a lost reply first drops the tasks that already hold that
version), update or delete one prediction, delete every prediction of a model version in the
project (one request), read and set the project's selected model version."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .client import _NO_RETRY, LabelStudioError, _call, _secrets_of


class PushOps:
    """The requests of one push to ``project_id`` through ``client`` (a ``LabelStudio``)."""

    def __init__(self, client: Any, project_id: int, retries: int, backoff: float) -> None:
        self.client, self.project_id = client, project_id
        self.retries, self.backoff = retries, backoff
        self.secrets = _secrets_of(client)
        self.n_requests = 0

    def call(self, fn: Callable[[], Any], what: str, before_retry=None) -> Any:
        def counted() -> Any:
            self.n_requests += 1
            return fn()

        return _call(counted, what, self.secrets, self.retries, self.backoff,
                     before_retry=before_retry)

    def listing(self) -> list:
        """Every prediction of the project (all model versions)."""
        return self.call(lambda: self.client.predictions.list(project=self.project_id,
                                                              request_options=_NO_RETRY),
                         f"listing predictions of project {self.project_id}")

    def held(self, version: str, tasks: Optional[set] = None) -> dict:
        """{task: [predictions of ``version``, oldest first]}, restricted to ``tasks``."""
        out: dict = {}
        for pr in sorted(self.listing(), key=lambda p: p.id):
            if getattr(pr, "model_version", None) == version and (tasks is None
                                                                  or pr.task in tasks):
                out.setdefault(pr.task, []).append(pr)
        return out

    def import_batches(self, items: Sequence[dict], version: str, batch_size: int,
                       state: dict, label: str, done: Callable[[int], None]) -> int:
        """Import ``items`` (dicts with ``task``, ``result``, ``score``) as ``version`` in
        batches of at most ``batch_size`` (more only for one task's copies, which are never
        split); returns the number of batches. Before each, ``state["stage"]`` becomes
        ``f"{label}batch i of n"``; after each, ``done(its size)``."""
        # a task's copies go in one request (in the order the tasks first come): a retry
        # skips the tasks that hold the version already, and a stopped swap is completed per
        # task (push._complete_swap), so a task must never hold part of its copies
        groups: dict = {}
        for p in items:
            groups.setdefault(p["task"], []).append(dict(p, model_version=version))
        batches: list = []
        for group in groups.values():
            if not batches or len(batches[-1]) + len(group) > batch_size:
                batches.append([])
            batches[-1].extend(group)
        for n, batch in enumerate(batches):
            pending = list(batch)

            def refresh() -> None:  # the failed attempt may have been stored, its reply lost
                present = self.held(version, {p["task"] for p in pending})
                pending[:] = [p for p in pending if p["task"] not in present]

            sent: list = []

            def send() -> Any:
                sent[:] = list(pending)
                if not pending:
                    return None
                return self.client.projects.import_predictions(
                    self.project_id, request=pending, request_options=_NO_RETRY)

            state["stage"] = f"{label}batch {n + 1} of {len(batches)}"
            reply = self.call(send, f"importing batch {n + 1} of {len(batches)}",
                              before_retry=refresh)
            created = getattr(reply, "created", None)
            if sent and isinstance(created, int) and created < len(sent):
                # Label Studio answers 201 and stores only the predictions its labeling
                # config accepts: the others would be reported pushed, and pushed again
                raise LabelStudioError(
                    f"importing batch {n + 1} of {len(batches)}: the server stored {created} "
                    f"of its {len(sent)} predictions and dropped the others, which the "
                    f"project's labeling config does not accept{self._first_refused(sent)} "
                    "(a permanent error: not retried)")
            done(len(batch))
        return len(batches)

    def _first_refused(self, items: Sequence[dict]) -> str:
        """Why the project's labeling config refuses the first of ``items`` it refuses
        (checked here with the SDK's ``LabelInterface``), or "" when that cannot be told."""
        try:
            from label_studio_sdk.label_interface import LabelInterface

            config = self.client.projects.get(id=self.project_id,
                                              request_options=_NO_RETRY).label_config
            interface = LabelInterface(config)
            for p in items:
                errors = interface.validate_prediction(p, return_errors=True)
                if errors:
                    return f" (first: task {p['task']}: {'; '.join(map(str, errors))[:300]})"
        except Exception:  # noqa: BLE001 - only a better message is lost
            pass
        return ""

    def update(self, pred_id: int, p: dict, version: str) -> None:
        self.call(lambda: self.client.predictions.update(
            id=pred_id, result=p["result"], score=p.get("score"), model_version=version,
            request_options=_NO_RETRY), f"updating prediction {pred_id} (task {p['task']})")

    def delete(self, pred_id: int) -> None:
        """Delete one prediction; a 404 on a retry means the lost first attempt did it."""
        tries = []

        def fn() -> None:
            tries.append(1)
            try:
                self.client.predictions.delete(id=pred_id, request_options=_NO_RETRY)
            except Exception as exc:  # noqa: BLE001 - re-raised unless it is that 404
                if len(tries) > 1 and getattr(exc, "status_code", None) == 404:
                    return
                raise

        self.call(fn, f"deleting prediction {pred_id}")

    def delete_version(self, version: str) -> None:
        """``DELETE /api/projects/<id>/model-versions/``: every prediction of ``version`` in
        the project, in one transaction (repeating it deletes nothing more)."""
        from label_studio_sdk.core.api_error import ApiError

        def fn() -> Any:
            # label-studio-sdk 2.1.2 has no method for this endpoint: its HTTP client sends it
            wrapper = self.client._client_wrapper
            resp = wrapper.httpx_client.request(
                f"api/projects/{self.project_id}/model-versions/", method="DELETE",
                json={"model_version": version}, request_options=_NO_RETRY)
            if not 200 <= resp.status_code < 300:
                try:
                    body = resp.json()
                except ValueError:
                    body = resp.text[:500]
                raise ApiError(status_code=resp.status_code, body=body)
            return resp

        self.call(fn, f"deleting the predictions of model version {version!r}")

    def selected_version(self) -> Optional[str]:
        """The project's selected model version (its ``model_version`` setting)."""
        project = self.call(lambda: self.client.projects.get(id=self.project_id,
                                                             request_options=_NO_RETRY),
                            f"reading project {self.project_id}")
        return getattr(project, "model_version", None) or None

    def select_version(self, version: str) -> None:
        self.call(lambda: self.client.projects.update(id=self.project_id, model_version=version,
                                                      request_options=_NO_RETRY),
                  f"selecting model version {version!r} in project {self.project_id}")
