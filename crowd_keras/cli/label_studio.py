"""``crowd-keras label-studio ...``: aggregate a Label Studio export and push the result back.

``crowd_keras.cli`` calls :func:`register` with its sub-parsers; each sub-command sets
``func(args) -> int`` (the exit code). Heavy imports (the integration, the label model)
happen inside the handler; ``--method`` takes any name of the label-model registry.

Exit codes: 0 done, 2 bad input (the export, the config, the options), 1 the server failed
(the message says how far the push got; a re-run with the same ``--model-version``
completes it without duplicates). The API token is read from ``LABEL_STUDIO_API_KEY``
only: it never appears on the command line, in the output or in error messages.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from crowd_keras.aggregation.registry import (DEFAULT_LABEL_MODEL, available_label_models,
                                              get_label_model)

__all__ = ["register", "aggregate_command"]


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``label-studio`` (with its ``aggregate`` sub-command) to ``subparsers``."""
    ls = subparsers.add_parser(
        "label-studio", help="aggregate Label Studio exports and push predictions back",
        description="Work with Label Studio exports and servers.")
    sub = ls.add_subparsers(dest="label_studio_command", metavar="COMMAND")
    sub.required = True
    agg = sub.add_parser(
        "aggregate", help="aggregate an export into predictions and an annotator report",
        description=(
            "Read a Label Studio export (full JSON, JSON_MIN, CSV or TSV), fit a label model on "
            "the annotators' labels, write one prediction per annotated task (Label Studio's "
            "import format) and a per-annotator quality report (CSV, plus JSON beside it). "
            "With --url and --project the predictions are also pushed (idempotently: a re-run "
            "with the same --model-version neither duplicates nor loses predictions). The API "
            "token is read from the LABEL_STUDIO_API_KEY environment variable."))
    agg.add_argument("export", help="export file (JSON, JSON_MIN, CSV or TSV)")
    agg.add_argument("--method", default=DEFAULT_LABEL_MODEL, choices=available_label_models(),
                     help=f"label model (default: {DEFAULT_LABEL_MODEL})")
    agg.add_argument("--out", default="predictions.json",
                     help="predictions file to write (default: predictions.json)")
    agg.add_argument("--annotators", default=None, metavar="CSV",
                     help="annotator quality report (CSV); a .json report is written beside it")
    agg.add_argument("--annotators-json", default=None, metavar="JSON",
                     help="where to write the JSON report (default: the CSV path with .json)")
    agg.add_argument("--control", default=None,
                     help="name of the Choices/Rating control to read (needed for JSON_MIN/CSV/TSV "
                          "without --label-config, or when several controls are used)")
    agg.add_argument("--label-config", default=None, metavar="FILE",
                     help="the project's labeling config (XML): classes in config order, values "
                          "checked against it")
    agg.add_argument("--format", default=None, choices=["JSON", "JSON_MIN", "CSV", "TSV"],
                     help="export format (default: detected)")
    agg.add_argument("--multiple", default="error", choices=["error", "combination", "skip"],
                     help="annotations with several choices: error (default), combination "
                          "(each set of choices is one class) or skip (left out, counted)")
    agg.add_argument("--include-gold", action="store_true",
                     help="also use ground_truth annotations as ordinary votes")
    agg.add_argument("--include-unannotated", action="store_true",
                     help="also predict tasks without annotation (they get the class prior)")
    agg.add_argument("--to-name", default=None,
                     help="object name the control labels (JSON_MIN/CSV/TSV exports lack it)")
    agg.add_argument("--model-version", default=None,
                     help="model_version of the predictions (default: crowd-keras-<method>)")
    agg.add_argument("--url", default=None, help="Label Studio URL to push predictions to")
    agg.add_argument("--project", type=int, default=None, help="project id to push to")
    agg.add_argument("--on-existing", default="update", choices=["update", "skip", "replace"],
                     help="predictions of the same model version already there: update (default: "
                          "replace only when different), skip or replace")
    agg.add_argument("--batch-size", type=int, default=100, help="predictions per request")
    agg.add_argument("--retries", type=int, default=3, help="retries of a failed request")
    agg.set_defaults(func=aggregate_command)
    return ls


def _err(msg: str) -> None:
    print(f"crowd-keras label-studio: error: {msg}", file=sys.stderr)


def aggregate_command(args: argparse.Namespace) -> int:
    """Handler of ``label-studio aggregate``; returns the exit code."""
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.integrations import label_studio as ls

    if (args.url is None) != (args.project is None):
        _err("--url and --project go together")
        return 2
    try:
        export = ls.read_export(args.export, control=args.control, label_config=args.label_config,
                                format=args.format, multiple=args.multiple,
                                include_gold=args.include_gold)
    except (CrowdDataError, ValueError) as exc:
        _err(str(exc))
        return 2
    print(export.summary)
    for note in export.summary.notes:
        print(f"note: {note}")
    if export.annotations.n_annotations == 0:
        _err("no annotation left to aggregate (see the notes above)")
        return 2
    model = get_label_model(args.method)
    model.fit(export.annotations)
    version = args.model_version or f"crowd-keras-{args.method}"
    try:
        predictions = ls.to_predictions(export, model.predict_proba(), version,
                                        include_unannotated=args.include_unannotated,
                                        to_name=args.to_name)
    except CrowdDataError as exc:
        _err(str(exc))
        return 2
    out = ls.write_predictions(args.out, predictions)
    print(f"wrote {len(predictions)} predictions (model_version {version!r}) to {out}")
    n_gold, acc = ls.gold_accuracy(export, model.predict_proba())
    if n_gold:
        print(f"aggregate accuracy on {n_gold} ground-truth tasks: {acc:.3f}")

    client = None
    if args.url is not None:
        try:
            client = ls.connect(args.url)
        except (ls.LabelStudioError, ImportError) as exc:
            _err(str(exc))
            return 1
    if args.annotators is not None:
        emails = None
        if client is not None:
            try:
                emails = ls.fetch_user_emails(client, retries=args.retries)
            except ls.LabelStudioError as exc:
                print(f"warning: could not read user e-mails: {exc}", file=sys.stderr)
        csv_path = Path(args.annotators)
        json_path = Path(args.annotators_json) if args.annotators_json else \
            csv_path.with_suffix(".json")
        if json_path == csv_path:
            json_path = csv_path.with_name(csv_path.name + ".json")
        ls.annotator_report(export, model, csv_path=csv_path, json_path=json_path, emails=emails,
                            model_version=version)
        print(f"wrote the annotator report for {export.annotations.n_annotators} annotators to "
              f"{csv_path} and {json_path}")
    if client is not None:
        try:
            result = ls.push_predictions(client, args.project, predictions, model_version=version,
                                         batch_size=args.batch_size, retries=args.retries,
                                         on_existing=args.on_existing)
        except (ls.LabelStudioError, CrowdDataError) as exc:
            _err(f"{exc}")
            return 1
        print(f"pushed to project {args.project}: {result.n_created} created "
              f"({result.n_replaced} replacing a different one), {result.n_unchanged} unchanged")
    return 0
