"""Label Studio push on a real server (loopback): creates against updates of every prediction.

For each size ``n``: a project with ``n`` tasks, then

1. **create**: ``push_predictions`` of ``n`` predictions to tasks without one, in requests
   of ``--batch-size`` (the default of the function and of the command line);
2. **update**: the same tasks, every prediction changed (same model version): the push picks
   the bulk swap (import under a staging version, one version delete, import, delete), its
   imports in requests of ``--bulk-batch-size``;
3. **create in large requests** (reference): ``n`` predictions on a second project of ``n``
   tasks, in requests of ``--bulk-batch-size``: what a create costs when it is not bound by
   Label Studio's recount of the project after every import request;
4. at the first size only, **in place**: ``--in-place`` changed predictions out of ``n``, which
   the push updates with one PATCH each; their time per prediction times ``n`` estimates
   the in-place route for all ``n`` (the route before issue 45).

The ratio update / create is the issue's figure (its aim: 3x at 1,000). All pushes skip the
pre-flight checks (``preflight=False``): the check of the tasks is timed on its own, as it is
the same for all. One run; the server is a fresh ``label-studio start`` (SQLite) on a copy of
a template data folder, on this machine, sharing its cores with the client.

    python benchmarks/label_studio_push.py [--sizes 1000] [--batch-size 100]
        [--bulk-batch-size 5000] [--in-place 100]

``--sizes 1000 10000`` adds the 10,000 row; its create in requests of 100 is the longest step
(results/label_studio_push.md has the times).

Without the ``label-studio`` executable it prints why and exits 0.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from label_studio_server import (DEMO_CONFIG, build_template, demo_result,  # noqa: E402
                                 find_executable, new_token, start_copy)

CLASSES = ("positive", "negative", "neutral")


def _predictions(tasks: list, shift: int, version: str, score: float) -> list:
    return [{"task": t, "model_version": version, "score": score,
             "result": demo_result(CLASSES[(i + shift) % 3])} for i, t in enumerate(tasks)]


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _project(client, n: int, title: str) -> tuple:
    project = client.projects.create(title=title, label_config=DEMO_CONFIG).id
    tasks = []
    for i in range(0, n, 5000):  # the task import is not what is measured
        tasks += client.projects.import_tasks(
            project, request=[{"text": f"task {j}"} for j in range(i, min(n, i + 5000))],
            return_task_ids=True).task_ids
    return project, tasks


def run_size(client, ls, n: int, batch_size: int, bulk_batch_size: int, in_place: int) -> dict:
    project, tasks = _project(client, n, f"push {n}")
    version = "bench-v1"
    check, t_check = _timed(lambda: ls.check_tasks(client, project, task_ids=tasks))
    assert check.n_missing == 0
    push = dict(batch_size=batch_size, bulk_batch_size=bulk_batch_size, preflight=False)
    created, t_create = _timed(lambda: ls.push_predictions(
        client, project, _predictions(tasks, 0, version, 0.5), **push))
    assert created.n_new == n and not created.bulk
    updated, t_update = _timed(lambda: ls.push_predictions(
        client, project, _predictions(tasks, 1, version, 0.75), **push))
    assert updated.n_replaced == n and updated.bulk
    row = dict(n=n, t_check=t_check, t_create=t_create, create_requests=created.n_requests,
               t_update=t_update, update_requests=updated.n_requests, t_patch=None)
    other, other_tasks = _project(client, n, f"push {n}, large requests")
    large, row["t_create_large"] = _timed(lambda: ls.push_predictions(
        client, other, _predictions(other_tasks, 0, version, 0.5),
        **dict(push, batch_size=bulk_batch_size)))
    assert large.n_new == n
    row["create_large_requests"] = large.n_requests
    if in_place:
        changed = _predictions(tasks, 1, version, 0.75)
        changed[:in_place] = _predictions(tasks[:in_place], 2, version, 0.75)
        patched, t_patch = _timed(lambda: ls.push_predictions(client, project, changed, **push))
        assert patched.n_replaced == in_place and not patched.bulk
        row.update(t_patch=t_patch, n_patch=in_place)
    held = [p for p in client.predictions.list(project=project) if p.model_version == version]
    assert sorted(p.task for p in held) == sorted(tasks)  # one each, nothing lost
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None, help="(unused: the data are generated)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--bulk-batch-size", type=int, default=5000)
    parser.add_argument("--in-place", type=int, default=100,
                        help="changed predictions pushed in place at the first size (0: none)")
    args = parser.parse_args(argv)
    exe = find_executable()
    if exe is None:
        print("skipped: no label-studio executable (pip install label-studio==1.23.2)")
        return 0
    from label_studio_sdk import LabelStudio

    from crowd_keras.integrations import label_studio as ls

    token = new_token()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        template = build_template(exe, Path(tmp) / "template", token)
        server = start_copy(exe, template, Path(tmp) / "data", token)
        print(f"server: label-studio {server.url} (SQLite), ready in "
              f"{time.perf_counter() - start:.0f} s; batch size {args.batch_size}, bulk batch "
              f"size {args.bulk_batch_size}", flush=True)
        try:
            client = LabelStudio(base_url=server.url, api_key=token, timeout=600)
            print("\n| predictions | task check | create | update (bulk) | update / create | "
                  "requests create / update | create in large requests (reference) | "
                  "in place (one PATCH each) |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
            for k, n in enumerate(args.sizes):
                r = run_size(client, ls, n, args.batch_size, args.bulk_batch_size,
                             args.in_place if k == 0 else 0)
                patch = ("" if r["t_patch"] is None else
                         f"{r['n_patch']} in {r['t_patch']:.1f} s: {n} ≈ "
                         f"{r['t_patch'] / r['n_patch'] * n:.0f} s "
                         f"({r['t_patch'] / r['n_patch'] * n / r['t_create']:.1f}x create)")
                print(f"| {n:,} | {r['t_check']:.1f} s | {r['t_create']:.1f} s | "
                      f"{r['t_update']:.1f} s | **{r['t_update'] / r['t_create']:.2f}x** | "
                      f"{r['create_requests']} / {r['update_requests']} | "
                      f"{r['t_create_large']:.1f} s in {r['create_large_requests']} requests "
                      f"(update {r['t_update'] / r['t_create_large']:.1f}x) | {patch} |",
                      flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
