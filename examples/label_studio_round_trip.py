"""Label Studio round trip: export, aggregate, push predictions, write annotator quality.

1. Connect to a Label Studio server with the token from ``LABEL_STUDIO_API_KEY``.
2. With ``--project ID`` use that project; without, create a demo project: 60 texts,
   labelled (3 per text) by 5 demo users of known accuracy (created if missing).
3. Export the project (full JSON), read it with ``read_export`` (tasks = items, users =
   annotators), fit Dawid-Skene (or ``--method majority_vote``).
4. Write the predictions (Label Studio's import format) and push them: one per task with
   ``model_version``, the label's probability as ``score``, in the control's format. Run it
   again: nothing is duplicated (unchanged predictions are left alone).
5. Write the per-annotator quality report (CSV and JSON): Label Studio has no place for it.

Start a local server (docs/guides/label-studio-server.md), then from the repository root::

    export LABEL_STUDIO_API_KEY=...   # Account & Settings > Access Token (never printed)
    python examples/label_studio_round_trip.py --url http://localhost:8080
    python examples/label_studio_round_trip.py --url http://localhost:8080 --project 3 \\
        --control sentiment --out-dir ls-out
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.aggregation import DawidSkene, MajorityVote  # noqa: E402
from crowd_keras.integrations import label_studio as ls  # noqa: E402

CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="positive"/><Choice value="negative"/><Choice value="neutral"/>
  </Choices>
</View>
"""
CLASSES = ("positive", "negative", "neutral")
DEMO_ACCURACY = {"demo-ann1@example.com": 0.9, "demo-ann2@example.com": 0.85,
                 "demo-ann3@example.com": 0.8, "demo-ann4@example.com": 0.6,
                 "demo-ann5@example.com": 0.45}


def create_demo_project(client, n_tasks: int = 60, seed: int = 0) -> tuple[int, dict]:
    """A project whose tasks carry a hidden truth, labelled by demo users of known accuracy."""
    rng = np.random.default_rng(seed)
    have = {u.email: u.id for u in client.users.list()}
    users = []
    for email in DEMO_ACCURACY:
        if email not in have:
            name = email.split("@")[0]
            have[email] = client.users.create(username=name, email=email, first_name=name).id
        users.append(have[email])
    accuracy = list(DEMO_ACCURACY.values())
    truth = rng.integers(0, 3, n_tasks)
    tasks = []
    for i, y in enumerate(truth):
        anns = []
        for k in rng.choice(len(users), 3, replace=False):
            label = y if rng.random() < accuracy[k] else rng.choice([c for c in range(3) if c != y])
            anns.append({"completed_by": users[k], "ground_truth": False,  # imported ones default to true
                         "result": [{"from_name": "sentiment", "to_name": "text", "type": "choices",
                                     "value": {"choices": [CLASSES[label]]}}]})
        tasks.append({"data": {"text": f"demo text {i}", "truth": CLASSES[y]}, "annotations": anns})
    project = client.projects.create(title="crowd-keras round trip demo", label_config=CONFIG)
    ids = client.projects.import_tasks(project.id, request=tasks, return_task_ids=True).task_ids
    return project.id, dict(zip(ids, truth))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://localhost:8080",
                        help="Label Studio URL (default: http://localhost:8080)")
    parser.add_argument("--project", type=int, default=None,
                        help="project id (default: create a demo project)")
    parser.add_argument("--control", default=None,
                        help="Choices/Rating control to read (default: the one in the export)")
    parser.add_argument("--method", default="dawid_skene", choices=["dawid_skene", "majority_vote"],
                        help="label model (default: dawid_skene)")
    parser.add_argument("--model-version", default=None,
                        help="model_version of the pushed predictions (default: "
                             "crowd-keras-METHOD)")
    parser.add_argument("--out-dir", default="label-studio-out", type=Path,
                        help="folder for predictions.json, annotators.csv and annotators.json, "
                             "made when missing (default: label-studio-out)")
    args = parser.parse_args(argv)

    try:
        client = ls.connect(args.url)  # token from LABEL_STUDIO_API_KEY
        truth = None
        if args.project is None:
            args.project, truth = create_demo_project(client)
            print(f"created demo project {args.project} at {args.url}")
        label_config = client.projects.get(id=args.project).label_config
        raw = client.projects.exports.as_binary(args.project, export_type="JSON")
    except ls.LabelStudioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - SDK errors; print without headers or token
        print(f"error: Label Studio at {args.url}: {ls.describe_error(exc)}", file=sys.stderr)
        return 1
    try:
        export = ls.read_export(raw, control=args.control, label_config=label_config)
    except CrowdDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(export.summary)

    model = DawidSkene() if args.method == "dawid_skene" else MajorityVote()
    model.fit(export.annotations)
    if truth is not None:
        y = np.array([truth[t] for t in export.task_ids])
        mv = (MajorityVote().fit(export.annotations).predict() == y).mean()
        print(f"accuracy against the hidden truth: {args.method} "
              f"{(model.predict() == y).mean():.3f}, majority vote {mv:.3f}")

    version = args.model_version or f"crowd-keras-{args.method}"
    predictions = ls.predictions_from_model(export, model, version)
    out = ls.write_predictions(args.out_dir / "predictions.json", predictions)
    result = ls.push_predictions(client, args.project, predictions)
    print(f"{len(predictions)} predictions written to {out}; pushed: {result.n_created} created, "
          f"{result.n_unchanged} unchanged ({result.n_replaced} replaced)")

    report = ls.annotator_report(export, model, csv_path=args.out_dir / "annotators.csv",
                                 json_path=args.out_dir / "annotators.json",
                                 emails=ls.fetch_user_emails(client), model_version=version)
    columns = ["annotator", "email", "n_annotations", "accuracy", "agreement"]
    print(report[columns].to_string(index=False, float_format="%.3f"))
    print(f"annotator report: {args.out_dir / 'annotators.csv'} and .json (Label Studio has no "
          "slot for annotator quality)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
