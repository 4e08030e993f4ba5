"""``crowd-keras label-studio ...``: aggregate a Label Studio export and push the result back.

``crowd_keras.cli`` calls :func:`register` with its sub-parsers; each sub-command sets
``func(args) -> int`` (the exit code). Heavy imports (the integration, the label model)
happen inside the handler; ``--method`` takes any name of the label-model registry.

With ``--url``/``--project`` the server is checked first (URL, token, project: one request,
before the export is read or anything written), and the project's labeling config is used
when ``--label-config`` is not given (it names the classes and the object the predictions
label). Exit codes: 0 done, 2 bad input (the export, the config, the options), 1 the server
failed (the message says how far the push got and, for transient failures only, that a
re-run with the same ``--model-version`` completes it without duplicates). The API token is
read from ``LABEL_STUDIO_API_KEY`` only: it never appears on the command line, in the
output or in error messages.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from crowd_keras.aggregation.registry import get_label_model
from crowd_keras.progress import Heartbeat
from crowd_keras.sequences.registry import (DEFAULT_SEQUENCE_MODEL, available_sequence_models,
                                           get_sequence_model)

from ._common import HelpFormatter, add_method_option, cli_words, common_options

__all__ = ["register", "aggregate_command"]

_TO_NAME_HELP = ("pass --to-name NAME (the name= of the object tag the control's toName points "
                 "to, e.g. text for <Text name=\"text\" value=\"$text\"/>), or --label-config "
                 "FILE, or push with --url and --project (the project's config is then used)")


def register(subparsers: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> argparse.ArgumentParser:
    """Add ``label-studio`` (with its ``aggregate`` sub-command) to ``subparsers``."""
    parents = list(parents) or [common_options()]
    ls = subparsers.add_parser(
        "label-studio", help="aggregate Label Studio exports and push predictions back",
        description="Work with Label Studio exports and servers.", formatter_class=HelpFormatter)
    sub = ls.add_subparsers(dest="label_studio_command", metavar="COMMAND")
    sub.required = True
    agg = sub.add_parser(
        "aggregate", parents=parents, formatter_class=HelpFormatter,
        help="aggregate an export into predictions and an annotator report",
        description=(
            "Read a Label Studio export (full JSON, JSON_MIN, CSV or TSV), fit a label model on "
            "the annotators' labels, write one prediction per annotated task (Label Studio's "
            "import format) and a per-annotator quality report (CSV, plus JSON beside it).\n\n"
            "Which options an export needs: full JSON names its controls and objects, so "
            "nothing (or --control when several controls are used). JSON_MIN, CSV and TSV do "
            "not say which columns are controls: give --control; their predictions also need "
            "the object the control labels, taken from --label-config, from the project when "
            "pushing, from --to-name, or from the export's only data column.\n\n"
            "With --url and --project the URL, token and project are checked before anything "
            "else, and the predictions are pushed idempotently (a re-run with the same "
            "--model-version neither duplicates nor loses predictions; an interrupted push "
            "leaves every task with a prediction). The API token is read from the "
            "LABEL_STUDIO_API_KEY environment variable.\n\n"
            "Span controls (Labels, HyperTextLabels, ParagraphLabels) are aggregated per token "
            "by --sequence-model (tokens: whitespace runs of the task text, tags --scheme); "
            "the predictions hold the aggregate spans (start, end, text, labels, score) and "
            "the report span and token precision/recall/F1 per annotator."))
    agg.add_argument("export", help="export file (JSON, JSON_MIN, CSV or TSV)")
    add_method_option(agg)
    agg.add_argument("--sequence-model", default=DEFAULT_SEQUENCE_MODEL,
                     choices=available_sequence_models(), metavar="NAME",
                     help="label model for span controls (--method is for Choices/Rating): "
                          + ", ".join(available_sequence_models()))
    agg.add_argument("--scheme", default="IO", choices=["IO", "BIO"],
                     help="span controls: tags per token (IO, or BIO to tell adjacent spans "
                          "apart)")
    agg.add_argument("--text-key", default=None, metavar="KEY",
                     help="span controls: the task data field holding the text (default: from "
                          "the config's object, else the field named like the object)")
    agg.add_argument("--out", default="predictions.json", help="predictions file to write")
    agg.add_argument("--annotators", default=None, metavar="CSV",
                     help="annotator quality report (CSV) to write, a .json report beside it "
                          "(default: no report)")
    agg.add_argument("--annotators-json", default=None, metavar="JSON",
                     help="where to write the JSON report (default: the CSV path with .json)")
    agg.add_argument("--control", default=None, metavar="NAME",
                     help="name of the control to read: Choices, Rating or a span control "
                          "(default: the one such control used, full JSON only; needed for "
                          "JSON_MIN/CSV/TSV without a config)")
    agg.add_argument("--label-config", default=None, metavar="FILE",
                     help="the project's labeling config (XML): classes in config order, values "
                          "checked against it (default: the project's when pushing, else none; "
                          "needs crowd-keras[label-studio])")
    agg.add_argument("--format", default=None, choices=["JSON", "JSON_MIN", "CSV", "TSV"],
                     help="export format (default: detected from the content and suffix)")
    agg.add_argument("--multiple", default="error", choices=["error", "combination", "skip"],
                     help="annotations with several choices: error, combination (each set of "
                          "choices is one class) or skip (left out, counted)")
    agg.add_argument("--include-gold", action="store_true",
                     help="also use ground_truth annotations as ordinary votes")
    agg.add_argument("--include-unannotated", action="store_true",
                     help="also predict tasks without annotation (they get the class prior)")
    agg.add_argument("--to-name", default=None, metavar="NAME",
                     help="object name the control labels, for JSON_MIN/CSV/TSV exports "
                          "(default: from the config or the export)")
    agg.add_argument("--model-version", default=None,
                     help="model_version of the predictions (default: crowd-keras-<method>)")
    agg.add_argument("--url", default=None,
                     help="Label Studio URL to push to, with http:// or https:// (default: no "
                          "push)")
    agg.add_argument("--project", type=int, default=None, help="project id to push to (with --url)")
    agg.add_argument("--on-existing", default="update", choices=["update", "skip", "replace"],
                     help="a task already holding a prediction of this model version: update it "
                          "when different, skip it, or replace (write it again even when "
                          "identical)")
    agg.add_argument("--batch-size", type=int, default=100, help="new predictions per request")
    agg.add_argument("--retries", type=int, default=3,
                     help="retries, with backoff, of a request that failed transiently")
    agg.set_defaults(func=aggregate_command)
    return ls


def _err(msg: Any) -> None:
    print(f"crowd-keras label-studio: error: {cli_words(msg)}", file=sys.stderr)


def _server(args: argparse.Namespace, ls: Any) -> tuple[Any, Any]:
    """(client, project) after the pre-flight check; raises LabelStudioError/ImportError."""
    client = ls.connect(args.url)
    return client, ls.check_project(client, args.project, retries=args.retries)


def aggregate_command(args: argparse.Namespace) -> int:
    """Handler of ``label-studio aggregate``; returns the exit code."""
    from crowd_keras.errors import CrowdDataError

    quiet = getattr(args, "quiet", False)
    if (args.url is None) != (args.project is None):
        _err("--url and --project go together")
        return 2
    try:
        from crowd_keras.integrations import label_studio as ls
    except ImportError as exc:  # pragma: no cover - the integration ships with the package
        _err(exc)
        return 2
    client = project = None
    if args.url is not None:
        try:
            client, project = _server(args, ls)
        except ImportError as exc:
            _err(exc)
            return 2
        except ls.LabelStudioError as exc:
            _err(exc)
            return 1
    config = args.label_config
    if config is None and project is not None and getattr(project, "label_config", None):
        config = project.label_config
    try:
        export = ls.read_export(args.export, control=args.control, label_config=config,
                                format=args.format, multiple=args.multiple,
                                include_gold=args.include_gold, scheme=args.scheme,
                                text_key=args.text_key)
    except ImportError as exc:
        _err(exc)
        return 2
    except (CrowdDataError, ValueError) as exc:
        _err(exc)
        return 2
    print(export.summary)
    for note in export.summary.notes:
        print(f"note: {cli_words(note)}")
    spans = isinstance(export, ls.LabelStudioSpans)
    if (export.sequences.annotations if spans else export.annotations).n_annotations == 0:
        _err("no annotation left to aggregate (see the notes above)")
        return 2
    if not (args.to_name or export.to_name):
        _err(f"the {export.format} export does not name the object that control "
             f"'{export.control}' labels, which predictions need: {_TO_NAME_HELP}")
        return 2
    name = args.sequence_model if spans else args.method
    model = get_sequence_model(name) if spans else get_label_model(name)
    with Heartbeat(f"fitting {name}", disable=quiet):
        model.fit(export.sequences if spans else export.annotations)
    version = args.model_version or f"crowd-keras-{name}"
    try:
        predictions = (ls.predictions_from_model(export, model, version,
                                                 include_unannotated=args.include_unannotated,
                                                 to_name=args.to_name) if spans else
                       ls.to_predictions(export, model.predict_proba(), version,
                                         include_unannotated=args.include_unannotated,
                                         to_name=args.to_name))
    except CrowdDataError as exc:
        _err(exc)
        return 2
    out = ls.write_predictions(args.out, predictions)
    print(f"wrote {len(predictions)} predictions (model_version {version!r}) to {out}")
    if spans:
        n_gold, (p, r, f1) = ls.gold_span_scores(export, model.predict())
        if n_gold:
            print(f"aggregate spans on {n_gold} ground-truth tasks: token precision {p:.3f}, "
                  f"recall {r:.3f}, F1 {f1:.3f}")
    else:
        n_gold, acc = ls.gold_accuracy(export, model.predict_proba())
        if n_gold:
            print(f"aggregate accuracy on {n_gold} ground-truth tasks: {acc:.3f}")
    if args.annotators is not None:
        _report(args, ls, export, model, client, version)
    if client is not None:
        try:
            result = ls.push_predictions(client, args.project, predictions, model_version=version,
                                         batch_size=args.batch_size, retries=args.retries,
                                         on_existing=args.on_existing, progress=not quiet,
                                         preflight=False)
        except (ls.LabelStudioError, CrowdDataError) as exc:
            _err(f"{exc}")
            return 1
        print(f"pushed to project {args.project}: {result.n_created} created or updated "
              f"({result.n_new} new, {result.n_replaced} replacing a different prediction, "
              f"{result.n_rewritten} rewritten though identical), {result.n_unchanged} unchanged"
              + (f", {result.n_deleted} extra copies removed" if result.n_deleted else ""))
    return 0


def _report(args: argparse.Namespace, ls: Any, export: Any, model: Any, client: Any,
            version: str) -> None:
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
    print(f"wrote the annotator report for {len(export.annotator_ids)} annotators to "
          f"{csv_path} and {json_path}")
