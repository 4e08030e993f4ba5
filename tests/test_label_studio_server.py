"""Round trip against a real Label Studio server on 127.0.0.1 (marker ``server``).

One template data folder is initialised per session (45-60 s); servers start on copies of
it (about 7 s each): one for the round-trip tests, one for the kill-and-re-run test. Skipped
when the ``label-studio`` executable is missing, a failure under ``CI=true``.
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

pytestmark = pytest.mark.server

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


@pytest.fixture(scope="module")
def ls_server(tmp_path_factory, ls_executable, ls_template, ls_token):
    server = start_copy(ls_executable, ls_template, tmp_path_factory.mktemp("ls-main") / "data",
                        ls_token)
    yield server
    server.stop()
    assert ls_token not in server.log_text()


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
    proba = model.predict_proba()
    row = {t: i for i, t in enumerate(export.task_ids)}
    for p in held:
        k = int(np.argmax(proba[row[p.task]]))
        assert p.result[0]["value"]["choices"] == [export.classes[k]]
        assert p.score == pytest.approx(proba[row[p.task], k])
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


class _KillDuringImport:
    """Client proxy: on the n-th import call, kill the server while the request is in flight."""

    def __init__(self, client, server, at_call: int, delay: float):
        self.predictions = client.predictions
        self._client_wrapper = client._client_wrapper
        outer = self
        self.calls = 0

        class Projects:
            def get(self, id, **kwargs):  # the pre-flight check
                return client.projects.get(id=id, **kwargs)

            def import_predictions(self, id, **kwargs):
                outer.calls += 1
                if outer.calls == at_call:
                    threading.Timer(delay, server.kill).start()
                return client.projects.import_predictions(id, **kwargs)

        self.projects = Projects()


def test_server_killed_during_push_then_rerun_completes(tmp_path, ls_executable, ls_template,
                                                        ls_token, delay=0.02):
    from label_studio_sdk import LabelStudio
    ls = ls_module()
    server = start_copy(ls_executable, ls_template, tmp_path / "data", ls_token)
    try:
        client = LabelStudio(base_url=server.url, api_key=ls_token)
        project = client.projects.create(title="kill test", label_config=DEMO_CONFIG).id
        tasks = client.projects.import_tasks(project, request=[{"text": f"k{i}"} for i in range(300)],
                                             return_task_ids=True).task_ids
        preds = [{"task": t, "model_version": "kill-v1", "score": 0.5 + (t % 7) / 20,
                  "result": demo_result(CLASSES[t % 3])} for t in tasks]
        proxy = _KillDuringImport(client, server, at_call=4, delay=delay)
        with pytest.raises(ls.LabelStudioError, match=r"stopped at batch \d of 15.*Re-run with the same model_version") as info:
            ls.push_predictions(proxy, project, preds, batch_size=20, retries=1, backoff=0.05)
        assert ls_token not in str(info.value)
        assert server.process is None  # it was killed
        server.start()  # same data folder, maybe another port
        client = LabelStudio(base_url=server.url, api_key=ls_token)
        before = len(client.predictions.list(project=project))
        assert 3 * 20 <= before <= 4 * 20  # three batches in, the fourth maybe
        result = ls.push_predictions(client, project, preds, batch_size=20)
        assert result.n_created + result.n_unchanged == len(tasks)
        assert result.n_unchanged == before
        held = client.predictions.list(project=project)
        assert sorted(p.task for p in held) == sorted(tasks)  # each task exactly once
        assert all(p.model_version == "kill-v1" for p in held)
        by_task = {p.task: p for p in held}
        assert all(by_task[p["task"]].result == p["result"] for p in preds)
    finally:
        server.stop()
    assert ls_token not in server.log_text()


def test_example_round_trip_runs(ls_server, ls_token, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "LABEL_STUDIO_API_KEY": ls_token}
    cmd = [sys.executable, str(root / "examples" / "label_studio_round_trip.py"),
           "--url", ls_server.url, "--out-dir", str(tmp_path)]
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
    assert (tmp_path / "annotators.csv").exists() and (tmp_path / "predictions.json").exists()
