"""Round trip against a real Label Studio server on 127.0.0.1 (marker ``server``).

One template data folder is initialised per session (45-60 s); servers start on copies of
it (about 7 s each): one for the round-trip tests, one that the three kill tests share (they
kill and restart it). Skipped when the ``label-studio`` executable is missing, a failure
under ``CI=true``.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import threading

import numpy as np
import pytest

from conftest import IN_CI
from label_studio_server import (DEMO_CONFIG, build_demo_project, build_template, demo_result,
                                 ensure_users, export_bytes, find_executable, new_token,
                                 start_copy)

# one xdist worker runs this file (tox.ini: --dist loadgroup): the session template (the
# server's migrations) is then built once, not once per worker
pytestmark = [pytest.mark.server, pytest.mark.xdist_group("label_studio_server")]

FORMATS = ("JSON", "JSON_MIN", "CSV", "TSV")


@pytest.fixture(scope="session")
def ls_executable() -> str:
    exe = find_executable()
    if exe is None:
        msg = ("label-studio executable not found (set LABEL_STUDIO_BIN, or pip install "
               "label-studio==1.23.2)")
        if IN_CI:
            pytest.fail(msg + "; CI must have it")
        pytest.skip(msg)
    pytest.importorskip("label_studio_sdk")
    return exe


@pytest.fixture(scope="session")
def ls_token() -> str:
    return new_token()


@pytest.fixture(scope="session")
def ls_template(tmp_path_factory, ls_executable, ls_token):
    return build_template(ls_executable, tmp_path_factory.mktemp("ls-template") / "data", ls_token)


def _served(tmp_path_factory, name, ls_executable, ls_template, ls_token):
    """A copy of the template server in a folder of its own, stopped at the end; the token
    must never reach its log."""
    server = start_copy(ls_executable, ls_template, tmp_path_factory.mktemp(name) / "data",
                        ls_token)
    yield server
    server.stop()
    assert ls_token not in server.log_text()


@pytest.fixture(scope="module")
def ls_server(tmp_path_factory, ls_executable, ls_template, ls_token):
    yield from _served(tmp_path_factory, "ls-main", ls_executable, ls_template, ls_token)


@pytest.fixture()
def client(ls_server, ls_token):
    from label_studio_sdk import LabelStudio
    return LabelStudio(base_url=ls_server.url, api_key=ls_token)


@pytest.fixture(autouse=True)
def no_token_in_output(request, caplog, capsys):
    """Every test: the token appears in no log record and no captured output."""
    caplog.set_level(logging.DEBUG)
    yield
    token = request.getfixturevalue("ls_token")
    out = capsys.readouterr()
    assert token not in caplog.text
    assert token not in out.out and token not in out.err


def ls_module():
    from crowd_keras.integrations import label_studio
    return label_studio


# ---------------------------------------------------------------------------- simulated project
ACCURACY = (0.9, 0.85, 0.8, 0.6, 0.45)
CLASSES = ("positive", "negative", "neutral")


def build_simulated_project(client, n_tasks=150, seed=0):
    """Tasks with a known truth, annotated (3 per task) by 5 users of known accuracy."""
    rng = np.random.default_rng(seed)
    users = ensure_users(client, [f"sim{k}@example.com" for k in range(len(ACCURACY))])
    truth = rng.integers(0, 3, n_tasks)
    project = client.projects.create(title="simulated crowd", label_config=DEMO_CONFIG)
    tasks = []
    for i, y in enumerate(truth):
        anns = []
        for k in rng.choice(len(users), 3, replace=False):
            label = y if rng.random() < ACCURACY[k] else rng.choice([c for c in range(3) if c != y])
            # Label Studio flags imported annotations as ground truth unless told otherwise
            anns.append({"completed_by": users[k], "result": demo_result(CLASSES[label]),
                         "ground_truth": False})
        tasks.append({"data": {"text": f"s{i}"}, "annotations": anns})
    ids = client.projects.import_tasks(project.id, request=tasks, return_task_ids=True).task_ids
    return project.id, dict(zip(ids, truth)), users


@pytest.fixture(scope="module")
def simulated(ls_server, ls_token):
    from label_studio_sdk import LabelStudio
    client = LabelStudio(base_url=ls_server.url, api_key=ls_token)
    return build_simulated_project(client)


def test_every_export_format_reads_to_the_same_annotations(client, simulated, tmp_path):
    ls = ls_module()
    project, truth, users = simulated
    exports = {}
    for fmt in FORMATS:
        path = tmp_path / f"export.{fmt.lower()}"
        path.write_bytes(export_bytes(client, project, fmt))
        exports[fmt] = ls.read_export(path, control="sentiment", label_config=DEMO_CONFIG)
        assert exports[fmt].format == fmt
    ref = exports["JSON"]
    assert sorted(ref.task_ids) == sorted(truth) and ref.annotations.n_annotations == 3 * len(truth)
    assert sorted(ref.annotator_ids) == sorted(users)
    for fmt in FORMATS[1:]:
        assert exports[fmt].annotations == ref.annotations, fmt
    # JSON without a control name: only 'sentiment' is used
    assert ls.read_export(tmp_path / "export.json").control == "sentiment"


def test_aggregate_push_and_read_back(client, simulated):
    from crowd_keras.aggregation import DawidSkene, MajorityVote
    ls = ls_module()
    project, truth, _ = simulated
    export = ls.read_export(export_bytes(client, project, "JSON"), label_config=DEMO_CONFIG)
    y = np.array([truth[t] for t in export.task_ids])
    model = DawidSkene().fit(export.annotations)
    ds_acc = (model.predict() == y).mean()
    mv_acc = (MajorityVote().fit(export.annotations).predict() == y).mean()
    assert ds_acc >= mv_acc and ds_acc > 0.8, (ds_acc, mv_acc)  # 0.853 vs 0.847 offline

    preds = ls.predictions_from_model(export, model, "crowd-keras-ds-test")
    first = ls.push_predictions(client, project, preds, batch_size=25)
    assert (first.n_created, first.n_batches) == (len(truth), 6)
    held = [p for p in client.predictions.list(project=project)
            if p.model_version == "crowd-keras-ds-test"]
    assert sorted(p.task for p in held) == sorted(truth)  # one per task
    proba, quality = model.predict_proba(), model.consensus_quality()
    row = {t: i for i, t in enumerate(export.task_ids)}
    for p in held:
        k = int(np.argmax(proba[row[p.task]]))
        assert p.result[0]["value"]["choices"] == [export.classes[k]]
        assert p.score == pytest.approx(quality[row[p.task]])   # the consensus quality
    again = ls.push_predictions(client, project, preds, batch_size=25)
    assert (again.n_created, again.n_unchanged) == (0, len(truth))
    assert len([p for p in client.predictions.list(project=project)
                if p.model_version == "crowd-keras-ds-test"]) == len(truth)


def test_prediction_file_imports_into_label_studio(client, simulated, tmp_path):
    ls = ls_module()
    project, truth, _ = simulated
    export = ls.read_export(export_bytes(client, project, "CSV"), control="sentiment",
                            label_config=DEMO_CONFIG)
    preds = ls.predictions_from_model(export, None, "from-file")
    path = ls.write_predictions(tmp_path / "predictions.json", preds)
    reply = client.projects.import_predictions(project, request=json.loads(path.read_text()))
    assert reply.created == len(truth)
    assert len(client.predictions.list(task=int(export.task_ids[0]))) >= 1


def test_demo_project_matches_the_parser_fixtures(client):
    """The server still exports what the committed fixtures hold (every case of point 1)."""
    from pathlib import Path
    ls = ls_module()
    demo = build_demo_project(client, title="demo again")
    fixtures = Path(__file__).parent / "data" / "label_studio"
    for fmt, name, expand in (("JSON", "demo.json", False), ("JSON", "demo_users.json", True),
                              ("JSON_MIN", "demo_min.json", False), ("CSV", "demo.csv", False),
                              ("TSV", "demo.tsv", False)):
        live = ls.read_export(export_bytes(client, demo["project"], fmt, expand),
                              control="sentiment", label_config=DEMO_CONFIG)
        saved = ls.read_export(fixtures / name, control="sentiment", label_config=DEMO_CONFIG)
        assert live.summary.to_dict() == saved.summary.to_dict(), name
        assert np.array_equal(live.annotations.labels, saved.annotations.labels), name
        assert np.array_equal(live.annotations.annotations_per_item(),
                              saved.annotations.annotations_per_item()), name
        assert live.gold.tolist() == saved.gold.tolist()
        if expand:
            assert None not in list(live.annotator_emails)


def test_cli_aggregate_pushes_without_showing_the_token(ls_server, client, simulated, tmp_path,
                                                        monkeypatch, capsys, ls_token):
    from crowd_keras.cli import label_studio as cli_label_studio
    project, truth, users = simulated
    export = tmp_path / "export.json"
    export.write_bytes(export_bytes(client, project, "JSON"))
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    parser = argparse.ArgumentParser(prog="crowd-keras")
    cli_label_studio.register(parser.add_subparsers(dest="command"))
    argv = ["label-studio", "aggregate", str(export), "--method", "majority_vote",
            "--out", str(tmp_path / "p.json"), "--annotators", str(tmp_path / "a.csv"),
            "--url", ls_server.url, "--project", str(project), "--model-version", "cli-mv"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    args = parser.parse_args(argv)
    assert args.func(args) == 0  # a re-run changes nothing
    out = capsys.readouterr().out
    assert f"{len(truth)} created" in out and f"{len(truth)} unchanged" in out
    assert ls_token not in out
    held = [p for p in client.predictions.list(project=project) if p.model_version == "cli-mv"]
    assert len(held) == len(truth)
    report = json.loads((tmp_path / "a.json").read_text())["annotators"]
    emails = {r["annotator"]: r["email"] for r in report}
    assert emails[users[0]] == "sim0@example.com"  # filled from the server's user list
    for name in ("p.json", "a.csv", "a.json"):
        assert ls_token not in (tmp_path / name).read_text()


@pytest.fixture(scope="module")
def _kill_server(tmp_path_factory, ls_executable, ls_template, ls_token):
    """The kill tests' server, started once for the three of them (a start costs about 7 s
    of CPU): they kill and restart it, the round-trip tests' ``ls_server`` never."""
    yield from _served(tmp_path_factory, "ls-kill", ls_executable, ls_template, ls_token)


@pytest.fixture()
def kill_server(_kill_server):
    """The kill tests' server, running (a kill test that failed may have left it down)."""
    if _kill_server.process is not None and _kill_server.process.poll() is not None:
        _kill_server.process = None
    if _kill_server.process is None:
        _kill_server.start()
    return _kill_server


def _project_of(client, title, n_tasks):
    """A new project of the demo config with ``n_tasks`` texts: its id and its task ids."""
    project = client.projects.create(title=title, label_config=DEMO_CONFIG).id
    tasks = client.projects.import_tasks(project, request=[{"text": f"{title} {i}"}
                                                           for i in range(n_tasks)],
                                         return_task_ids=True).task_ids
    return project, tasks


def _own_project(server, token, title, n_tasks):
    """A client of the kill tests' server (each test a project of its own), the project and
    its ``n_tasks`` task ids."""
    from label_studio_sdk import LabelStudio
    client = LabelStudio(base_url=server.url, api_key=token)
    return (client, *_project_of(client, title, n_tasks))


class _KillDuringImport:
    """Client proxy: on the n-th import call, kill the server while the request is in flight."""

    def __init__(self, client, server, at_call: int, delay: float):
        self.predictions = client.predictions
        self.tasks = client.tasks  # the pre-flight check of the tasks
        self._client_wrapper = client._client_wrapper
        outer = self
        self.calls, self.timer = 0, None

        class Projects:
            def get(self, id, **kwargs):  # the pre-flight check
                return client.projects.get(id=id, **kwargs)

            def import_predictions(self, id, **kwargs):
                outer.calls += 1
                if outer.calls == at_call:
                    outer.timer = threading.Timer(delay, server.kill)
                    outer.timer.start()
                elif outer.timer is not None:
                    # a kill that lands late (a loaded machine) lands before the next call:
                    # the killed call is the at_call-th or, when it was answered first, the next
                    outer.timer.join()
                return client.projects.import_predictions(id, **kwargs)

        self.projects = Projects()


def test_server_killed_during_push_then_rerun_completes(kill_server, ls_token, delay=0.02):
    from label_studio_sdk import LabelStudio
    ls = ls_module()
    server = kill_server
    client, project, tasks = _own_project(server, ls_token, "kill test", 300)
    preds = [{"task": t, "model_version": "kill-v1", "score": 0.5 + (t % 7) / 20,
              "result": demo_result(CLASSES[t % 3])} for t in tasks]
    proxy = _KillDuringImport(client, server, at_call=4, delay=delay)
    with pytest.raises(ls.LabelStudioError, match=r"stopped at batch \d of 15.*Re-run with the same model_version") as info:
        ls.push_predictions(proxy, project, preds, batch_size=20, retries=1, backoff=0.05)
    assert ls_token not in str(info.value)
    # a first push: the tasks not reached never had a prediction, and the message says so
    missing = re.search(r"; (\d+) tasks without a prediction of this version still have none",
                        str(info.value))
    assert missing and "every task keeps" not in str(info.value), str(info.value)
    proxy.timer.join()   # the timer thread forgets the process once it is dead
    assert server.process is None  # it was killed
    server.start()  # same data folder, maybe another port
    client = LabelStudio(base_url=server.url, api_key=ls_token)
    before = len(client.predictions.list(project=project))
    assert 3 * 20 <= before <= 4 * 20  # three batches in, the fourth maybe
    assert int(missing.group(1)) in (len(tasks) - before, len(tasks) - 3 * 20)
    result = ls.push_predictions(client, project, preds, batch_size=20)
    assert result.n_created + result.n_unchanged == len(tasks)
    assert result.n_unchanged == before
    held = client.predictions.list(project=project)
    assert sorted(p.task for p in held) == sorted(tasks)  # each task exactly once
    assert all(p.model_version == "kill-v1" for p in held)
    by_task = {p.task: p for p in held}
    assert all(by_task[p["task"]].result == p["result"] for p in preds)
    assert ls_token not in server.log_text()


def test_example_round_trip_runs(ls_server, ls_token, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls_token}
    cmd = [sys.executable, str(root / "examples" / "label_studio_round_trip.py"),
           "--url", ls_server.url, "--out-dir", str(tmp_path / "out")]   # made when missing
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    project = re.search(r"created demo project (\d+)", first.stdout).group(1)
    again = subprocess.run(cmd + ["--project", project], env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    for run in (first, again):
        assert ls_token not in run.stdout + run.stderr
    assert "60 created, 0 unchanged" in first.stdout
    assert "accuracy against the hidden truth" in first.stdout
    assert "0 created, 60 unchanged" in again.stdout  # the re-run duplicates nothing
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["annotators.csv", "annotators.json",
                                                     "predictions.json"]


# ---------------------------------------------------------------------------- kill and resume
class _KillAt:
    """An httpx request hook (the real SDK and server; only the timing is ours): when the
    ``at``-th request of ``kind`` goes out, kill the server at once (``"before"``: the request
    meets a dead server) or ``delay`` seconds later (``"during"``: it may or may not be
    committed, its reply is lost)."""

    KINDS = {"update": ("PATCH", "/api/predictions/"), "delete": ("DELETE", "/api/predictions/"),
             "import": ("POST", "/import/predictions"), "list": ("GET", "/api/predictions"),
             "version": ("DELETE", "/model-versions/")}

    def __init__(self, server, kind: str, at: int, when: str, delay: float = 0.03):
        self.server, self.kind, self.at, self.when, self.delay = server, kind, at, when, delay
        self.seen, self.fired, self.timer = 0, False, None

    def __call__(self, request) -> None:
        if self.timer is not None:
            self.timer.join()   # a "during" kill that lands late lands before the next request
        method, path = self.KINDS[self.kind]
        if self.fired or request.method != method or path not in request.url.path:
            return
        self.seen += 1
        if self.seen == self.at:
            self.fired = True
            if self.when == "before":
                self.server.kill()
            else:
                self.timer = threading.Timer(self.delay, self.server.kill)
                self.timer.start()

    def wait(self) -> None:
        """Until a "during" kill is done (its thread forgets the process it killed)."""
        if self.timer is not None:
            self.timer.join()


class _InterruptAfter:
    """An httpx response hook (the real SDK and server; only the timing is ours): Ctrl-C as
    the ``at``-th import's reply comes in, the batch written but not yet counted."""

    def __init__(self, at: int):
        self.at, self.seen = at, 0

    def __call__(self, response) -> None:
        if response.request.method == "POST" and "/import/predictions" in response.request.url.path:
            self.seen += 1
            if self.seen == self.at:
                raise KeyboardInterrupt


def test_ctrl_c_during_a_push_gives_its_account_and_the_files_and_a_rerun_completes(
        client, ls_server, ls_token, simulated, tmp_path, monkeypatch, capsys):
    """Ctrl-C, the usual way a long push is stopped, gave "interrupted" and nothing else: no
    account of what was written (the batch in flight had landed) and no --out file, where a
    push the server stops gives both."""
    import httpx
    from label_studio_sdk import LabelStudio
    ls = ls_module()
    project, tasks = _project_of(client, "interrupted push", 60)
    preds = [{"task": t, "score": 0.5, "result": demo_result(CLASSES[t % 3])} for t in tasks]
    hooked = LabelStudio(base_url=ls_server.url, api_key=ls_token,
                         httpx_client=httpx.Client(event_hooks={"response": [_InterruptAfter(2)]},
                                                   timeout=30))
    with pytest.raises(ls.PushInterrupted, match=r"stopped at batch 2 of 6 \(10 of 60 new "
                                                 r"predictions created.*interrupted \(Ctrl-C; "
                                                 r"a request already sent.*Re-run with the same "
                                                 r"model_version to complete") as info:
        ls.push_predictions(hooked, project, preds, model_version="ctrl-c", batch_size=10)
    assert isinstance(info.value, KeyboardInterrupt) and ls_token not in str(info.value)
    assert len(_held(client, project, "ctrl-c")) == 20       # the second batch had landed
    again = ls.push_predictions(client, project, preds, model_version="ctrl-c")
    assert (again.n_unchanged, again.n_new) == (20, 40)
    assert all(len(v) == 1 for v in _held(client, project, "ctrl-c").values())
    # the command line: the files written, the account said, exit 130
    from crowd_keras.cli import main
    annotated = simulated[0]
    export = tmp_path / "export.json"
    export.write_bytes(export_bytes(client, annotated, "JSON"))
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    push = ls.push_predictions

    def interrupted(cl, *args, **kwargs):
        return push(LabelStudio(base_url=ls_server.url, api_key=ls_token,
                                httpx_client=httpx.Client(
                                    event_hooks={"response": [_InterruptAfter(1)]},
                                    timeout=30)), *args, **kwargs)

    monkeypatch.setattr(ls, "push_predictions", interrupted)
    out = tmp_path / "p.json"
    code = main(["label-studio", "aggregate", str(export), "--control", "sentiment", "--quiet",
                 "--method", "majority_vote", "--out", str(out), "--url", ls_server.url,
                 "--project", str(annotated), "--model-version", "ctrl-c-cli",
                 "--batch-size", "50"])
    err = capsys.readouterr().err
    assert code == 130 and out.exists()
    assert "crowd-keras label-studio: interrupted: push of model_version 'ctrl-c-cli'" in err


def _held(client, project, version):
    out = {}
    for p in client.predictions.list(project=project):
        if p.model_version == version:
            out.setdefault(p.task, []).append(p)
    return out


def _content(p) -> tuple:
    result = p["result"] if isinstance(p, dict) else p.result
    score = p["score"] if isinstance(p, dict) else p.score
    return json.dumps(result, sort_keys=True), round(float(score), 9)


# (kind of request, which one of this run, kill before it is sent or while it is in flight)
KILL_POINTS = [("list", 1, "before"), ("update", 1, "before"), ("update", 4, "during"),
               ("update", 3, "during"), ("delete", 1, "during"), ("import", 1, "during"),
               ("import", 1, "before")]


@pytest.mark.slow
def test_killed_at_every_stage_of_an_update_push_no_task_loses_its_prediction(
        kill_server, ls_token):
    """Update push (same model_version, new labels) of 36 tasks: 15 predictions to update in
    place, 9 identical, 12 new, 2 extra copies to remove. The server is killed at seven points
    (listing, updates, deletes, imports; before a request or while it is in flight); after each
    kill it restarts and the state is checked: every task that had a prediction has one,
    none has more copies than before, each copy is the old or the new one. A last re-run
    completes: every task holds exactly the new prediction."""
    import httpx
    from label_studio_sdk import LabelStudio
    ls = ls_module()
    server = kill_server
    client, project, tasks = _own_project(server, ls_token, "kill and resume", 36)
    version = "resume-v1"
    old = [{"task": t, "model_version": version, "score": 0.6,
            "result": demo_result(CLASSES[i % 3])} for i, t in enumerate(tasks[:24])]
    client.projects.import_predictions(project, request=old)
    # two extra copies, as an older tool might have left: one identical, one different
    client.projects.import_predictions(project, request=[old[0], dict(old[1], score=0.1)])
    new = [{"task": t, "model_version": version,
            "score": 0.6 if i % 8 < 3 else 0.9,   # 9 of the 24 old ones stay identical
            "result": demo_result(CLASSES[i % 3] if i % 8 < 3 else CLASSES[(i + 1) % 3])}
           for i, t in enumerate(tasks)]
    contents = {p["task"]: {_content(p)} for p in old}
    contents[old[1]["task"]].add(_content(dict(old[1], score=0.1)))
    for p in new:
        contents.setdefault(p["task"], set()).add(_content(p))
    before = {t: len(v) for t, v in _held(client, project, version).items()}
    assert len(before) == 24 and sum(before.values()) == 26

    for kind, at, when in KILL_POINTS:
        hook = _KillAt(server, kind, at, when)
        killable = LabelStudio(base_url=server.url, api_key=ls_token,
                               httpx_client=httpx.Client(event_hooks={"request": [hook]},
                                                         timeout=30))
        # bulk imports as small as the batches keep the in-place route, whose requests
        # this test kills (with the default bulk_batch_size the swap is cheaper here)
        with pytest.raises(ls.LabelStudioError, match="Re-run with the same model_version") as info:
            ls.push_predictions(killable, project, new, batch_size=5, retries=1, backoff=0.05,
                                bulk_batch_size=5)
        assert "bulk update" not in str(info.value), info.value
        assert hook.fired and info.value.transient, (kind, at, when)
        assert ls_token not in str(info.value)
        hook.wait()
        if server.process is not None:  # a kill "during" may land after the failure
            server.process.wait(10)
            server.process = None
        server.start()
        client = LabelStudio(base_url=server.url, api_key=ls_token)
        held = _held(client, project, version)
        lost = sorted(set(before) - set(held))
        assert not lost, f"killed at {kind} {at} ({when}): tasks {lost} lost their prediction"
        grown = {t: len(v) for t, v in held.items() if len(v) > before.get(t, 1)}
        assert not grown, f"killed at {kind} {at} ({when}): more copies {grown}"
        strange = [p.task for v in held.values() for p in v if _content(p) not in contents[p.task]]
        assert not strange, f"killed at {kind} {at} ({when}): unknown content on {strange}"
    final = ls.push_predictions(client, project, new, batch_size=5)
    held = _held(client, project, version)
    assert sorted(held) == sorted(tasks) and all(len(v) == 1 for v in held.values())
    want = {p["task"]: _content(p) for p in new}
    assert all(_content(v[0]) == want[t] for t, v in held.items())
    again = ls.push_predictions(client, project, new, batch_size=5)
    assert (again.n_created, again.n_unchanged, again.n_deleted) == (0, len(tasks), 0)
    assert final.n_created + final.n_unchanged == len(tasks)
    assert ls_token not in server.log_text()


# ---------------------------------------------------------------------------- pre-flight, error classes
def _sdk(url, token):
    from label_studio_sdk import LabelStudio
    return LabelStudio(base_url=url, api_key=token, max_retries=0)


def _count_version(client, project, version):
    return sum(p.model_version == version for p in client.predictions.list(project=project))


@pytest.mark.parametrize("case", ["bad_token", "unknown_project", "wrong_path"])
def test_permanent_errors_fail_fast_before_any_write_without_rerun_advice(
        case, ls_server, client, simulated, ls_token):
    import time
    ls = ls_module()
    project, truth, _ = simulated
    target = {"bad_token": (ls_server.url, "f" * 40, project),
              "unknown_project": (ls_server.url, ls_token, 987654),
              "wrong_path": (ls_server.url + "/not-the-api", ls_token, project)}[case]
    preds = [{"task": t, "model_version": f"never-{case}", "score": 0.5,
              "result": demo_result("positive")} for t in truth]
    start = time.monotonic()
    with pytest.raises(ls.LabelStudioError) as info:
        ls.push_predictions(_sdk(target[0], target[1]), target[2], preds, retries=3, backoff=20)
    assert time.monotonic() - start < 10  # not retried (a retry would sleep 20 s)
    text = str(info.value)
    assert not info.value.transient and "re-run" not in text.lower() and "not retried" in text
    expected = {"bad_token": "refused the API token (HTTP 401", "unknown_project":
                "project 987654 does not exist", "wrong_path": "does not answer as a Label Studio API"}
    assert expected[case] in text, text
    assert "f" * 40 not in text and ls_token not in text
    assert _count_version(client, project, f"never-{case}") == 0  # nothing was written


def test_transient_errors_are_retried_with_backoff_and_say_so(ls_token):
    """Connection refused (nothing listens) and HTTP 503 (a real HTTP server that answers
    503): each call is tried 1 + retries times, then fails as transient with re-run advice."""
    import http.server
    import time
    from label_studio_server import free_port
    ls = ls_module()

    hits = []

    class Busy(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            hits.append(self.path)
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"detail": "overloaded"}')

        def log_message(self, *args):
            pass

    busy = http.server.HTTPServer(("127.0.0.1", 0), Busy)
    thread = threading.Thread(target=busy.serve_forever, daemon=True)
    thread.start()
    try:
        for url in (f"http://127.0.0.1:{busy.server_address[1]}", f"http://127.0.0.1:{free_port()}"):
            start = time.monotonic()
            with pytest.raises(ls.LabelStudioError) as info:
                ls.push_predictions(_sdk(url, "t" * 40), 1, [{"task": 1, "model_version": "v",
                                                             "result": []}],
                                    retries=2, backoff=0.2)
            assert time.monotonic() - start >= 0.2 + 0.4  # backoff 0.2 s, then 0.4 s
            assert info.value.transient and "after 3 attempt(s), retried with backoff" in str(info.value)
    finally:
        busy.shutdown()
    assert len(hits) == 3  # the 503 server saw the first try and two retries


def test_a_kill_from_a_timer_thread_keeps_a_server_restarted_meanwhile(tmp_path):
    """The kill tests kill from a timer thread while the test goes on: a kill whose thread
    was still reaping the old process when the test restarted the server set the new process
    to None (the next kill then killed nothing and ``pytest.raises`` saw no error; the module's
    teardown left that server running). Here the reaping thread is slowed down, as a loaded
    machine can."""
    import subprocess
    import time
    from label_studio_server import LabelStudioServer

    class SlowReaping(subprocess.Popen):
        def wait(self, timeout=None):
            code = super().wait(timeout)
            time.sleep(0.3)
            return code

    server = LabelStudioServer("label-studio", tmp_path / "data", "t" * 40)
    old = server.process = SlowReaping(["sleep", "60"], start_new_session=True)
    killer = threading.Thread(target=server.kill)
    killer.start()
    while old.returncode is None:   # killed and reaped; the thread has not yet returned
        time.sleep(0.01)
    new = server.process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    killer.join()
    try:
        assert old.returncode == -9 and server.process is new and new.poll() is None
    finally:
        new.kill()
        new.wait()


def test_url_without_scheme_is_refused_at_once(monkeypatch, ls_token):
    ls = ls_module()
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    with pytest.raises(ls.LabelStudioError, match=r"has no scheme: use 'http://localhost:8080'"):
        ls.connect("localhost:8080")


def test_cli_permanent_error_writes_nothing_and_prints_no_traceback(ls_server, simulated,
                                                                     tmp_path, ls_token):
    import os
    import subprocess
    import sys
    project, _, _ = simulated
    from pathlib import Path
    export = Path(__file__).parent / "data" / "label_studio" / "demo.json"
    for url, proj, token, words in (
            (ls_server.url, project, "0" * 40, "refused the API token"),
            (ls_server.url, 987654, ls_token, "project 987654 does not exist"),
            (ls_server.url.replace("http://", ""), project, ls_token, "has no scheme")):
        env = {**os.environ, "LABEL_STUDIO_API_KEY": token}
        run = subprocess.run([sys.executable, "-m", "crowd_keras", "label-studio", "aggregate",
                              str(export), "--control", "sentiment", "--out",
                              str(tmp_path / "p.json"), "--url", url, "--project", str(proj)],
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 1, run.stderr
        assert words in run.stderr and "Traceback" not in run.stderr
        assert "re-run" not in run.stderr.lower() and token not in run.stderr + run.stdout
        assert not (tmp_path / "p.json").exists()  # checked before anything is written


def test_cli_pushes_an_export_read_from_a_pipe(ls_server, client, simulated, ls_token,
                                               tmp_path):
    """A push reads the export twice (and the tasks against the project's): from a pipe
    (``/dev/stdin``, ``<(...)``) the second read found it "empty"."""
    import os
    import subprocess
    import sys
    project, truth, _ = simulated
    run = subprocess.run([sys.executable, "-m", "crowd_keras", "label-studio", "aggregate",
                          "/dev/stdin", "--method", "majority_vote", "--out", str(tmp_path / "p.json"),
                          "--quiet", "--url", ls_server.url, "--project", str(project),
                          "--model-version", "from-a-pipe"],
                         input=export_bytes(client, project, "JSON"), capture_output=True,
                         env={**os.environ, "LABEL_STUDIO_API_KEY": ls_token}, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    assert _count_version(client, project, "from-a-pipe") == len(truth)


def test_cli_push_shows_progress_unless_quiet(ls_server, client, simulated, tmp_path,
                                              monkeypatch, capsys, ls_token):
    from crowd_keras.cli import main
    project, truth, _ = simulated
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    # CSV alone with --control: the object name comes from the project's config
    (tmp_path / "export.csv").write_bytes(export_bytes(client, project, "CSV"))
    argv = ["label-studio", "aggregate", str(tmp_path / "export.csv"), "--control", "sentiment",
            "--out", str(tmp_path / "p.json"), "--url", ls_server.url, "--project", str(project),
            "--method", "mv", "--model-version", "progress-v1", "--batch-size", "50"]
    assert main(argv) == 0
    first = capsys.readouterr()
    assert "pushing predictions" in first.err and f"{len(truth)} created" in first.out
    held = [p for p in client.predictions.list(project=project) if p.model_version == "progress-v1"]
    assert len(held) == len(truth) and held[0].result[0]["to_name"] == "text"
    assert main(argv + ["--quiet", "--on-existing", "replace"]) == 0
    second = capsys.readouterr()
    assert "pushing predictions" not in second.err
    # identical predictions written again are not "replacing a different one"
    assert f"0 replacing a different prediction, {len(truth)} rewritten though identical" in second.out


# ---------------------------------------------------------------------------- span controls
SPAN_CONFIG = ('<View><Text name="text" value="$text"/><Labels name="label" toName="text">'
               '<Label value="PER"/><Label value="LOC"/></Labels></View>')
SPAN_TASKS = {  # text: the spans each of four users marked (user 3 saw the first two only)
    "John met Mary in Paris": [[(0, 4, "PER"), (9, 13, "PER"), (17, 22, "LOC")],
                               [(0, 4, "PER"), (9, 13, "PER"), (17, 22, "LOC")],
                               [(0, 4, "PER"), (17, 22, "PER")],
                               [(0, 8, "PER")]],
    "Anna flew to Rome with Bob": [[(0, 4, "PER"), (13, 17, "LOC"), (23, 26, "PER")],
                                   [(0, 4, "PER"), (13, 17, "LOC")],
                                   [(0, 4, "PER"), (13, 17, "LOC"), (23, 26, "PER")],
                                   []],
    "No names at all here": [[], [], [(0, 2, "LOC")]],
}


def _span_region(text, start, end, label):
    return {"from_name": "label", "to_name": "text", "type": "labels",
            "value": {"start": start, "end": end, "text": text[start:end], "labels": [label]}}


def test_span_project_exported_aggregated_pushed_and_read_back(ls_server, client, tmp_path,
                                                               monkeypatch, capsys, ls_token):
    """A Labels project made through the API: several users' span annotations, exported in
    three formats, aggregated, pushed back (API and CLI) and read again."""
    from crowd_keras.cli import label_studio as cli_label_studio
    from crowd_keras.sequences.models import TokenDawidSkene

    ls = ls_module()
    users = ensure_users(client, [f"spans{k}@example.com" for k in range(4)])
    project = client.projects.create(title="spans", label_config=SPAN_CONFIG).id
    texts = list(SPAN_TASKS)
    ids = client.projects.import_tasks(project, request=[{"text": t} for t in texts],
                                       return_task_ids=True).task_ids
    for task, text in zip(ids, texts):
        for user, marks in zip(users, SPAN_TASKS[text]):
            client.annotations.create(id=task, completed_by=user, ground_truth=False,
                                      result=[_span_region(text, *m) for m in marks])
    reads = {fmt: ls.read_export(export_bytes(client, project, fmt), control="label",
                                 label_config=SPAN_CONFIG) for fmt in ("JSON", "JSON_MIN", "CSV")}
    ref = reads["JSON"]
    assert isinstance(ref, ls.LabelStudioSpans) and sorted(ref.task_ids) == sorted(ids)
    assert ref.summary.n_used == 11 and ref.summary.n_without_label == 3
    assert ref.summary.spans.spans == 18 and ref.summary.spans.text_mismatch == 0
    for fmt in ("JSON_MIN", "CSV"):
        assert reads[fmt].sequences.annotations == ref.sequences.annotations, fmt
    model = TokenDawidSkene().fit(ref.sequences)
    spans = model.predict_spans()
    assert set(spans.loc[spans["doc"] == ids[0], "text"]) == {"John", "Mary", "Paris"}
    preds = ls.predictions_from_model(ref, model, "crowd-keras-spans")
    first = ls.push_predictions(client, project, preds)
    assert first.n_created == len(ids)
    held = {p.task: p for p in client.predictions.list(project=project)
            if p.model_version == "crowd-keras-spans"}
    assert sorted(held) == sorted(ids)
    for task in ids:
        got = sorted((r["value"]["start"], r["value"]["end"], r["value"]["labels"][0],
                      r["value"]["text"]) for r in held[task].result)
        want = sorted(spans.loc[spans["doc"] == task, ["start", "end", "label", "text"]]
                      .itertuples(index=False, name=None))
        assert got == want, task
    again = ls.push_predictions(client, project, preds)
    assert (again.n_created, again.n_unchanged) == (0, len(ids))
    # read again: the export after the push holds the same annotations
    after = ls.read_export(export_bytes(client, project, "JSON"), label_config=SPAN_CONFIG)
    assert after.sequences.annotations == ref.sequences.annotations
    # the command line, pushing a second model version
    path = tmp_path / "spans.json"
    path.write_bytes(export_bytes(client, project, "JSON"))
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    parser = argparse.ArgumentParser(prog="crowd-keras")
    cli_label_studio.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["label-studio", "aggregate", str(path), "--control", "label",
                              "--out", str(tmp_path / "p.json"), "--annotators",
                              str(tmp_path / "a.csv"), "--url", ls_server.url, "--project",
                              str(project), "--model-version", "cli-spans"])
    assert args.func(args) == 0
    assert f"{len(ids)} created" in capsys.readouterr().out
    held = [p for p in client.predictions.list(project=project) if p.model_version == "cli-spans"]
    assert len(held) == len(ids) and all(p.result[0]["type"] == "labels" for p in held
                                         if p.result)
    report = json.loads((tmp_path / "a.json").read_text())["annotators"]
    assert {r["email"] for r in report} == {f"spans{k}@example.com" for k in range(4)}



# ---------------------------------------------------------------------------- target project check
def _demo_export_for(client, title, n_tasks=8):
    """A project whose task ids are those of a full JSON export made elsewhere (another
    server's project: the committed fixture ``demo.json``), but whose tasks hold other texts:
    the README's Story 2 pushed to the wrong project. Returns (project, export tasks)."""
    from pathlib import Path
    project = client.projects.create(title=title, label_config=DEMO_CONFIG).id
    ids = client.projects.import_tasks(project, request=[{"text": f"demo text {i}"}
                                                        for i in range(n_tasks)],
                                       return_task_ids=True).task_ids
    fixture = json.loads((Path(__file__).parent / "data" / "label_studio" / "demo.json")
                         .read_text())
    assert len(fixture) == n_tasks
    for task, new_id in zip(fixture, ids):
        task["id"] = new_id
        task["project"] = project
        for ann in task["annotations"]:
            ann["task"] = new_id
    return project, fixture


def test_push_to_a_project_whose_tasks_are_not_the_exports_is_refused_before_any_write(
        ls_server, client, tmp_path, monkeypatch, capsys, ls_token):
    from crowd_keras import CrowdDataError
    from crowd_keras.cli import main
    ls = ls_module()
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    project, fixture = _demo_export_for(client, "not the export's")
    export = tmp_path / "export.json"
    export.write_text(json.dumps(fixture))
    argv = ["label-studio", "aggregate", str(export), "--control", "sentiment", "--out",
            str(tmp_path / "p.json"), "--url", ls_server.url, "--project", str(project),
            "--model-version", "wrong-target", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    first = fixture[0]["id"]
    assert (f"does not match project {project}: 8 of 8 tasks hold other data there (first: "
            f"task {first}: its data differ") in err, err
    assert "export 't1', project 'demo text 0'" in err and "--allow-data-mismatch" in err
    assert "allow_data_mismatch" not in err and "Traceback" not in err
    assert not (tmp_path / "p.json").exists()  # refused before the fit and any write
    assert _count_version(client, project, "wrong-target") == 0
    # the Python API, with a JSON_MIN export (data fields are columns there)
    preds = [{"task": t["id"], "model_version": "wrong-target", "score": 0.5,
              "result": demo_result("positive")} for t in fixture]
    minimal = [{"id": t["id"], "text": t["data"]["text"], "annotator": 1, "annotation_id": n}
               for n, t in enumerate(fixture)]
    with pytest.raises(CrowdDataError, match=r"8 of 8 tasks hold other data .* field 'text' "
                                             r"differs: export 't1', project 'demo text 0'"):
        ls.push_predictions(client, project, preds, export=minimal)
    assert _count_version(client, project, "wrong-target") == 0
    # edited on purpose: --allow-data-mismatch pushes, and says how many differ
    assert main(argv + ["--allow-data-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "note: 8 of 8 tasks hold other data" in out and "created or updated" in out
    assert _count_version(client, project, "wrong-target") > 0


def test_a_task_deleted_since_the_export_is_named_as_such(client):
    """A project whose tasks the export holds but one, deleted since: the refusal asked "is
    this the export of that project?"; it says to export the project again."""
    from crowd_keras import CrowdDataError
    ls = ls_module()
    project = client.projects.create(title="deleted since", label_config=DEMO_CONFIG).id
    tasks = client.projects.import_tasks(project, request=[{"text": f"d{i}"} for i in range(3)],
                                         return_task_ids=True).task_ids
    export = export_bytes(client, project, "JSON")
    client.tasks.delete(id=str(tasks[1]))
    client.projects.import_tasks(project, request=[{"text": "added since"}])
    with pytest.raises(CrowdDataError, match=rf"1 of 3 tasks are not in it \(first: task "
                                             rf"{tasks[1]} is not in project {project}\); "
                                             r"deleted since the export\? Export the project "
                                             r"again and aggregate that\. Nothing was written"):
        ls.check_tasks(client, project, export)


def test_push_checks_ids_and_the_exports_project(client, simulated):
    from crowd_keras import CrowdDataError
    ls = ls_module()
    project, truth, _ = simulated
    other = client.projects.create(title="another project", label_config=DEMO_CONFIG).id
    client.projects.import_tasks(other, request=[{"text": "x"}])
    full = export_bytes(client, project, "JSON")
    preds = [{"task": t, "model_version": "never-here", "score": 0.5,
              "result": demo_result("positive")} for t in truth]
    with pytest.raises(CrowdDataError, match=rf"comes from project {project}, not project {other}"):
        ls.push_predictions(client, other, preds, export=full)
    # JSON_MIN and CSV name no project: the ids are checked
    for fmt in ("JSON_MIN", "CSV"):
        n = len(truth)
        with pytest.raises(CrowdDataError, match=rf"{n} of {n} tasks are not in it \(first: "
                                                 rf"task \d+ is not in project {other}"):
            ls.push_predictions(client, other, preds, export=export_bytes(client, project, fmt),
                                allow_data_mismatch=True)  # never lets missing tasks through
    # without an export the predictions' tasks must be the project's
    with pytest.raises(CrowdDataError, match=rf"the predictions do not match project {other}: "
                                             rf"{len(truth)} of {len(truth)} tasks are not in"):
        ls.push_predictions(client, other, preds)
    assert _count_version(client, other, "never-here") == 0
    # the export's own project, in every format: accepted (nothing to write twice)
    for fmt in ("JSON", "JSON_MIN", "CSV", "TSV"):
        check = ls.check_tasks(client, project, export_bytes(client, project, fmt))
        assert (check.n_tasks, check.n_missing, check.n_changed) == (len(truth), 0, 0), fmt


def test_a_data_field_named_like_a_control_is_its_projects_in_csv(client, ls_server):
    """Label Studio writes a data field named like a control as the CSV/TSV column
    ``_data_<name>`` (``<name>`` holds the labels): the project's own export was refused as
    "its data field 'sentiment' differs"."""
    ls = ls_module()
    project = client.projects.create(title="data named like a control",
                                     label_config=DEMO_CONFIG).id
    client.projects.import_tasks(project, request=[
        {"data": {"text": f"c{i}", "sentiment": "prefilled"}, "annotations": [
            {"result": demo_result("positive"), "ground_truth": False}]} for i in range(3)])
    for fmt in ("CSV", "TSV"):
        export = export_bytes(client, project, fmt)
        assert b"_data_sentiment" in export, fmt   # the layout this test is about
        check = ls.check_tasks(client, project, export, format=fmt)
        assert (check.n_tasks, check.n_missing, check.n_changed) == (3, 0, 0), fmt
    # the column is still compared: an edited data field is found
    first = min(t.id for t in client.tasks.list(project=project))
    client.tasks.update(id=first, data={"text": "c0", "sentiment": "edited"})
    check = ls.check_tasks(client, project, export, format="TSV", allow_data_mismatch=True)
    assert check.n_changed == 1 and "'sentiment' differs" in check.first, check


def test_predictions_the_labeling_config_refuses_are_not_reported_pushed(client, simulated):
    """Label Studio answers 201 to an import and drops the predictions its labeling config
    does not accept (here a to_name it does not declare), but stores an update as sent: the
    push said "2 new" (again on every re-run), and an update made the prediction unusable.
    The pre-flight check refuses them before any write; without it, the dropped import
    stops the push, naming the first refused prediction."""
    from crowd_keras import CrowdDataError
    ls = ls_module()
    project, truth, _ = simulated
    tasks = sorted(truth)[:2]
    bad = [{"task": t, "score": 0.5, "result": [dict(demo_result("positive")[0],
                                                     to_name="txt")]} for t in tasks]
    with pytest.raises(CrowdDataError, match=rf"prediction 0 \(task {tasks[0]}\) does not fit "
                                             rf"the labeling config of project {project}: "
                                             r".*'txt'.*Nothing was written"):
        ls.push_predictions(client, project, bad, model_version="refused-to-name")
    for _ in range(2):   # the import itself, as a caller that made its own checks sends it
        with pytest.raises(ls.LabelStudioError) as info:
            ls.push_predictions(client, project, bad, model_version="refused-to-name",
                                preflight=False)
        text = str(info.value)
        assert not info.value.transient and "the server stored 0 of its 2" in text, text
        assert "'txt'" in text and "Re-run" not in text, text
    assert _count_version(client, project, "refused-to-name") == 0
    # an update of a stored prediction is refused before it is sent
    good = [{"task": tasks[0], "score": 0.5, "result": demo_result("positive")}]
    assert ls.push_predictions(client, project, good, model_version="refused-update").n_new == 1
    with pytest.raises(CrowdDataError, match="does not fit the labeling config"):
        ls.push_predictions(client, project, bad[:1], model_version="refused-update")
    held = [p.result for p in client.predictions.list(project=project)
            if p.model_version == "refused-update"]
    assert held == [good[0]["result"]]


def test_a_second_controls_push_under_one_version_does_not_replace_the_first(
        client, ls_server, simulated, tmp_path, monkeypatch, capsys, ls_token):
    """A project with several controls: the aggregate of each pushed under one model version
    (the CLI's default ``crowd-keras-<method>``) replaced the predictions of the control
    pushed before, silently. Refused before any write; ``on_existing="replace"`` overwrites,
    and the command line exits 2 naming its flags, its output files as they were (it wrote
    them before the push was refused)."""
    from crowd_keras import CrowdDataError
    from crowd_keras.cli import label_studio as cli_label_studio
    ls = ls_module()
    project, truth, _ = simulated
    tasks = sorted(truth)[:3]
    sentiment = [{"task": t, "score": 0.5, "result": demo_result("positive")} for t in tasks]
    quality = [{"task": t, "score": 0.25, "result": demo_result(quality=4)} for t in tasks[1:]]
    assert ls.push_predictions(client, project, sentiment, model_version="mc").n_new == 3
    with pytest.raises(CrowdDataError, match=r"model_version 'mc' already holds predictions of "
                                             r"control 'sentiment' on 2 of the tasks .*first: "
                                             rf"task {tasks[1]}.*'quality'.*model_version=.*"
                                             r"on_existing='replace'.*Nothing was written"):
        ls.push_predictions(client, project, quality, model_version="mc")
    # skip kept them, called them unchanged and wrote no quality aggregate anywhere
    with pytest.raises(CrowdDataError, match=r"already holds predictions of control "
                                             r"'sentiment'.*Nothing was written"):
        ls.push_predictions(client, project, quality, model_version="mc", on_existing="skip")
    assert [_content(v[0]) for _, v in sorted(_held(client, project, "mc").items())] == \
        [_content(p) for p in sentiment]
    # a control's own update still goes through, and replace overwrites on purpose
    with pytest.warns(ls.StalePredictionsWarning, match="2 tasks"):   # the two left out
        again = ls.push_predictions(client, project, [dict(sentiment[0], score=0.75)],
                                    model_version="mc")
    assert again.n_replaced == 1
    assert ls.push_predictions(client, project, quality, model_version="mc",
                               on_existing="replace").n_replaced == 2
    # the command line: bad input (2), in its own words
    export = tmp_path / "export.json"
    export.write_bytes(export_bytes(client, project, "JSON"))
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)
    parser = argparse.ArgumentParser(prog="crowd-keras")
    cli_label_studio.register(parser.add_subparsers(dest="command"))
    (tmp_path / "p.json").write_text("[]\n")   # an earlier run's
    args = parser.parse_args(["label-studio", "aggregate", str(export), "--method",
                              "majority_vote", "--out", str(tmp_path / "p.json"), "--quiet",
                              "--annotators", str(tmp_path / "a.csv"),
                              "--url", ls_server.url, "--project", str(project),
                              "--model-version", "mc"])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "--model-version" in err and "--on-existing replace" in err, err
    assert len(_held(client, project, "mc")) == 3
    assert (tmp_path / "p.json").read_text() == "[]\n"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["export.json", "p.json"]


# ---------------------------------------------------------------------------- bulk updates
def test_update_of_most_predictions_goes_in_bulk(client):
    """All 40 predictions of a version changed: a bulk swap (a handful of requests, not 40
    PATCHes); every task holds exactly the new one, other versions untouched, no staging copy
    left, the project's selected version still this one; a re-run changes nothing."""
    ls = ls_module()
    project, tasks = _project_of(client, "bulk update", 40)
    client.projects.import_predictions(project, request=[
        {"task": t, "model_version": "other", "score": 0.1, "result": demo_result("neutral")}
        for t in tasks[:3]])
    old = [{"task": t, "model_version": "bulk-v1", "score": 0.5,
            "result": demo_result(CLASSES[i % 3])} for i, t in enumerate(tasks[:30])]
    assert ls.push_predictions(client, project, old, batch_size=20).n_new == 30
    client.projects.update(id=project, model_version="bulk-v1")
    new = [{"task": t, "model_version": "bulk-v1", "score": 0.75,
            "result": demo_result(CLASSES[(i + 1) % 3])} for i, t in enumerate(tasks)]
    result = ls.push_predictions(client, project, new, batch_size=20)
    assert result.bulk and (result.n_replaced, result.n_new, result.n_unchanged) == (30, 10, 0)
    # the swap's two imports go in requests of bulk_batch_size, not batch_size
    assert result.n_batches == 2
    assert result.n_requests <= 2 + 6 + 2  # imports, deletes, project, listings, checks
    held = _held(client, project, "bulk-v1")
    assert sorted(held) == sorted(tasks) and all(len(v) == 1 for v in held.values())
    want = {p["task"]: _content(p) for p in new}
    assert all(_content(v[0]) == want[t] for t, v in held.items())
    assert len(_held(client, project, "other")) == 3
    assert not _held(client, project, ls.push.staging_version("bulk-v1"))
    assert client.projects.get(id=project).model_version == "bulk-v1"
    again = ls.push_predictions(client, project, new, batch_size=20)
    assert (again.n_created, again.n_unchanged, again.bulk) == (0, 40, False)
    # a few changed among many: in place (one PATCH each is cheaper than moving all 40)
    few = [dict(p, score=0.9) if i < 2 else p for i, p in enumerate(new)]
    small = ls.push_predictions(client, project, few, batch_size=20)
    assert (small.bulk, small.n_replaced, small.n_unchanged) == (False, 2, 38)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="bulk_batch_size must be an integer >= 1"):
            ls.push_predictions(client, project, few, bulk_batch_size=bad)


# ---------------------------------------------------------------------------- stale predictions
def test_a_push_names_the_stale_predictions_it_leaves_and_prunes_them_on_request(client):
    """A task holding a prediction of the version from an earlier push but absent from this
    one kept it, silently. It is named (``stale_tasks``, a warning) and kept, the same on a
    re-run; ``prune_stale=True`` deletes it, among the tasks the push is for only, never
    another version's prediction nor another control's; in place and in a bulk swap."""
    ls = ls_module()
    project, tasks = _project_of(client, "stale", 10)
    v1 = [{"task": t, "score": 0.5, "result": demo_result(CLASSES[i % 3])}
          for i, t in enumerate(tasks[:8])]
    assert ls.push_predictions(client, project, v1, model_version="st").n_new == 8
    client.projects.import_predictions(project, request=[
        {"task": tasks[7], "model_version": "other", "score": 0.1,
         "result": demo_result("neutral")},
        {"task": tasks[8], "model_version": "st", "score": 0.1, "result": demo_result(quality=3)}])
    for _ in range(2):
        with pytest.warns(ls.StalePredictionsWarning) as caught:
            kept = ls.push_predictions(client, project, v1[:5], model_version="st",
                                       preflight=False)
        assert [str(w.message) for w in caught
                if w.category is ls.StalePredictionsWarning] == [
            f"3 tasks of project {project} hold a prediction of model_version 'st' from an "
            f"earlier push that this push did not write (first: tasks {tasks[5]}, {tasks[6]}, "
            f"{tasks[7]}): kept; pass prune_stale=True to delete them"]
        assert (kept.stale_tasks, kept.n_pruned, kept.n_created) == (tuple(tasks[5:8]), 0, 0)
    assert sorted(_held(client, project, "st")) == sorted(tasks[:9])
    with pytest.warns(ls.StalePredictionsWarning, match=r"2 tasks .*: kept; not among the "
                      r"tasks the push is for \(tasks=\): prune_stale=True leaves them alone"):
        scoped = ls.push_predictions(client, project, v1[:5], model_version="st",
                                     prune_stale=True, tasks=tasks[:6], preflight=False)
    assert (scoped.stale_tasks, scoped.stale_outside) == (tuple(tasks[5:8]), tuple(tasks[6:8]))
    assert (scoped.n_pruned, scoped.bulk) == (1, False)
    assert sorted(_held(client, project, "st")) == sorted(tasks[:5] + tasks[6:9])
    whole = ls.push_predictions(client, project, v1[:5], model_version="st", prune_stale=True,
                                preflight=False)
    assert (whole.stale_tasks, whole.n_pruned) == (tuple(tasks[6:8]), 2)
    # the other control's prediction under "st" and the other version's stay
    assert sorted(_held(client, project, "st")) == sorted(tasks[:5] + [tasks[8]])
    assert sorted(_held(client, project, "other")) == [tasks[7]]
    assert ls.push_predictions(client, project, v1[:5], model_version="st",
                               preflight=False).stale_tasks == ()
    # most predictions changed: the bulk swap leaves the stale ones out of what it imports
    many = [{"task": t, "score": 0.75, "result": demo_result(CLASSES[i % 3])}
            for i, t in enumerate(tasks)]
    ls.push_predictions(client, project, many, model_version="bulk-st", preflight=False)
    swap = ls.push_predictions(client, project, [dict(p, score=0.25) for p in many[:8]],
                               model_version="bulk-st", prune_stale=True, preflight=False)
    assert swap.bulk and (swap.n_replaced, swap.n_pruned) == (8, 2)
    assert swap.stale_tasks == tuple(tasks[8:])
    held = _held(client, project, "bulk-st")
    assert sorted(held) == sorted(tasks[:8]) and all(len(v) == 1 for v in held.values())


@pytest.mark.slow
def test_a_bulk_swap_keeps_every_copy_on_the_tasks_it_does_not_write(ls_server, client,
                                                                     ls_token):
    """A task the push does not write that holds two predictions of the version (another
    control's rating beside a stale choice) kept only the first through a bulk swap, which
    re-imports every prediction of the version: both stay, as in place, and go in one import
    request (a retry or a stopped swap's completion works task by task). Completing a stopped
    swap restores every distinct staging copy of a task, once."""
    import httpx
    from label_studio_sdk import LabelStudio
    ls = ls_module()
    project, tasks = _project_of(client, "bulk keeps copies", 33)
    old = [{"task": t, "score": 0.5, "result": demo_result(CLASSES[i % 3])}
           for i, t in enumerate(tasks[:30])]
    ls.push_predictions(client, project, old, model_version="bk", preflight=False)
    others = [{"task": tasks[30], "model_version": "bk", "score": 0.2,
               "result": demo_result("neutral")},
              {"task": tasks[30], "model_version": "bk", "score": 0.3,
               "result": demo_result(quality=4)},
              {"task": tasks[31], "model_version": "bk", "score": 0.3,
               "result": demo_result(quality=2)}]
    client.projects.import_predictions(project, request=others)
    before = {t: sorted(map(_content, v)) for t, v in _held(client, project, "bk").items()}
    assert len(before[tasks[30]]) == 2
    new = [dict(p, score=0.75) for p in old]
    # 31 a request: the two copies of tasks[30] (items 31 and 32) would straddle two
    imports = []

    def record(request):
        if request.method == "POST" and request.url.path.endswith("/import/predictions"):
            imports.append([p["task"] for p in json.loads(request.content)])

    recording = LabelStudio(base_url=ls_server.url, api_key=ls_token, httpx_client=httpx.Client(
        event_hooks={"request": [record]}, timeout=30))
    with pytest.warns(ls.StalePredictionsWarning, match="1 task of project"):
        result = ls.push_predictions(recording, project, new, model_version="bk",
                                     preflight=False, bulk_batch_size=31)
    assert result.bulk and (result.n_replaced, result.n_deleted) == (30, 0)
    held = {t: sorted(map(_content, v)) for t, v in _held(client, project, "bk").items()}
    assert held[tasks[30]] == before[tasks[30]] and held[tasks[31]] == before[tasks[31]]
    assert all(held[p["task"]] == [_content(p)] for p in new)
    assert not _held(client, project, ls.push.staging_version("bk"))
    assert len(imports) == 4 and all(len(b) <= 31 for b in imports)
    assert [sum(b.count(tasks[30]) for b in part) for part in (imports[:2], imports[2:])] \
        == [2, 2] and all(b.count(tasks[30]) in (0, 2) for b in imports)
    # a stopped swap left tasks[32] with staging copies only (two contents, one of them twice,
    # as a retried request may leave it): the next push restores each content once
    staging = ls.push.staging_version("bk")
    client.projects.import_predictions(project, request=[
        {"task": tasks[32], "model_version": staging, "score": s, "result": r}
        for s, r in ((0.4, demo_result("positive")), (0.4, demo_result("positive")),
                     (0.6, demo_result(quality=5)))])
    with pytest.warns(ls.StalePredictionsWarning):
        again = ls.push_predictions(client, project, new, model_version="bk", preflight=False)
    assert (again.n_unchanged, again.n_created) == (30, 0)
    held = _held(client, project, "bk")
    assert sorted(map(_content, held[tasks[32]])) == sorted(
        [_content({"score": 0.4, "result": demo_result("positive")}),
         _content({"score": 0.6, "result": demo_result(quality=5)})])
    assert not _held(client, project, staging)


def test_cli_names_stale_predictions_and_prune_stale_deletes_them(ls_server, client, tmp_path,
                                                                  monkeypatch, capsys, ls_token):
    """A task whose annotations were deleted since an earlier push gets no prediction from
    the next run: it kept the old one and nothing said so."""
    from crowd_keras.cli import main
    ls = ls_module()
    project = client.projects.create(title="stale cli", label_config=DEMO_CONFIG).id
    tasks = client.projects.import_tasks(project, request=[
        {"data": {"text": f"sc{i}"}, "annotations": [
            {"result": demo_result(CLASSES[i % 3]), "ground_truth": False}] if i != 1 else []}
        for i in range(4)], return_task_ids=True).task_ids
    export = tmp_path / "export.json"
    export.write_bytes(export_bytes(client, project, "JSON"))
    late = client.projects.import_tasks(project, request=[{"text": "after the export"}],
                                        return_task_ids=True).task_ids[0]
    gone = tasks[1]   # the earlier push predicted it, and the task added since the export
    ls.push_predictions(client, project, [{"task": t, "score": 0.5,
                                           "result": demo_result("neutral")}
                                          for t in tasks + [late]],
                        model_version="cli-stale", preflight=False)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_token)

    def run(*flags):
        return main(["label-studio", "aggregate", str(export), "--method", "mv", "--out",
                     str(tmp_path / "p.json"), "--quiet", "--url", ls_server.url, "--project",
                     str(project), "--model-version", "cli-stale", *flags])

    assert run() == 0
    err = capsys.readouterr().err
    assert (f"warning: 2 tasks of project {project} hold a prediction of model_version "
            f"'cli-stale' from an earlier push that this run did not write (first: tasks "
            f"{gone}, {late}): kept; --prune-stale deletes the 1 in the export, not the 1 not "
            "in it") in err, err
    assert sorted(_held(client, project, "cli-stale")) == sorted(tasks + [late])
    assert run("--prune-stale") == 0
    out = capsys.readouterr()
    assert "1 stale predictions deleted (--prune-stale)" in out.out
    assert (f"warning: 1 task of project {project} holds a prediction of model_version "
            f"'cli-stale' from an earlier push that this run did not write (first: task "
            f"{late}): kept; not in the export: --prune-stale leaves it alone") in out.err
    assert sorted(_held(client, project, "cli-stale")) == sorted(set(tasks + [late]) - {gone})


# Each run first completes what the run before it stopped, so the points fall on: staging the
# new predictions; completing that stopped swap (deleting the staging copies, reply lost);
# the next swap's import as the version after the old ones were deleted (only the staging
# copies left); completing that one (its staging copies deleted after the version's restored).
BULK_KILL_POINTS = [("import", 2, "during"), ("version", 1, "during"), ("import", 3, "before"),
                    ("version", 1, "before")]


@pytest.mark.slow
def test_killed_during_a_bulk_update_no_task_loses_its_prediction(kill_server, ls_token):
    """A bulk update (36 tasks: 24 with an old prediction, all changed, the version selected in
    the project) killed at four points of the swap. After each kill: every task that had a
    prediction holds its old or new content (as the version or the staging version), never
    two copies of one version; the selected version is the version or the staging one. The
    next push completes the stopped swap, then pushes: every task holds exactly the new one."""
    import httpx
    from label_studio_sdk import LabelStudio
    ls = ls_module()
    server = kill_server
    client, project, tasks = _own_project(server, ls_token, "bulk kill", 36)
    version = "bulk-resume"
    staging = ls.push.staging_version(version)
    old = [{"task": t, "model_version": version, "score": 0.6,
            "result": demo_result(CLASSES[i % 3])} for i, t in enumerate(tasks[:24])]
    client.projects.import_predictions(project, request=old)
    client.projects.update(id=project, model_version=version)
    new = [{"task": t, "model_version": version, "score": 0.9,
            "result": demo_result(CLASSES[(i + 1) % 3])} for i, t in enumerate(tasks)]
    contents = {p["task"]: {_content(p)} for p in old}
    for p in new:
        contents.setdefault(p["task"], set()).add(_content(p))
    had = set(contents) & {p["task"] for p in old}
    for kind, at, when in BULK_KILL_POINTS:
        hook = _KillAt(server, kind, at, when)
        killable = LabelStudio(base_url=server.url, api_key=ls_token,
                               httpx_client=httpx.Client(event_hooks={"request": [hook]},
                                                         timeout=30))
        with pytest.raises(ls.LabelStudioError,
                           match="Re-run with the same model_version") as info:
            ls.push_predictions(killable, project, new, batch_size=20, retries=1,
                                backoff=0.05, bulk_batch_size=20)
        assert hook.fired and info.value.transient, (kind, at, when)
        assert "bulk update" in str(info.value) and ls_token not in str(info.value)
        hook.wait()
        if server.process is not None:  # a kill "during" may land after the failure
            server.process.wait(10)
            server.process = None
        server.start()
        client = LabelStudio(base_url=server.url, api_key=ls_token)
        main, staged = _held(client, project, version), _held(client, project, staging)
        lost = sorted(t for t in had if t not in main and t not in staged)
        assert not lost, f"killed at {kind} {at} ({when}): tasks {lost} lost their prediction"
        two = {t: len(v) for held in (main, staged) for t, v in held.items() if len(v) > 1}
        assert not two, f"killed at {kind} {at} ({when}): two copies of a version {two}"
        strange = [p.task for held in (main, staged) for v in held.values() for p in v
                   if _content(p) not in contents[p.task]]
        assert not strange, f"killed at {kind} {at} ({when}): unknown content on {strange}"
        assert client.projects.get(id=project).model_version in (version, staging)
    final = ls.push_predictions(client, project, new, batch_size=20, bulk_batch_size=20)
    held = _held(client, project, version)
    assert sorted(held) == sorted(tasks) and all(len(v) == 1 for v in held.values())
    want = {p["task"]: _content(p) for p in new}
    assert all(_content(v[0]) == want[t] for t, v in held.items())
    assert not _held(client, project, staging)
    assert client.projects.get(id=project).model_version == version
    again = ls.push_predictions(client, project, new, batch_size=20)
    assert (again.n_created, again.n_unchanged) == (0, len(tasks)) and final is not None
    assert ls_token not in server.log_text()
