"""``crowd-keras label-studio ...``: aggregate a Label Studio export and push the result back.

``crowd_keras.cli`` calls :func:`register` with its sub-parsers; each sub-command sets
``func(args) -> int`` (the exit code). Heavy imports (the integration, the label model)
happen inside the handler; ``--method`` takes any name of the label-model registry.

With ``--url``/``--project`` the server is checked first (URL, token, project: one request,
before the export is read or anything written), then the export's tasks against the
project's (ids, data, project id: ``check_tasks``, before the fit; a mismatch is bad input),
and the project's labeling config is used when ``--label-config`` is not given (it names the
classes and the object the predictions label). With a push, the files are written once it is
not refused: a refused push leaves them as they were. Exit codes: 0 done, 2 bad input (the
export, the config, the options), 1 the server failed (the message says how far the push got
and, for transient failures only, that a re-run with the same ``--model-version`` completes
it without duplicates). The API token is
read from ``LABEL_STUDIO_API_KEY`` only: it never appears on the command line, in the
output or in error messages.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Optional, Sequence

from crowd_keras.aggregation.registry import DEFAULT_LABEL_MODEL, get_label_model
from crowd_keras.files import standard_stream
from crowd_keras.progress import Heartbeat
from crowd_keras.sequences.registry import (DEFAULT_SEQUENCE_MODEL, SEQUENCE_MODELS,
                                           available_sequence_models, get_sequence_model)

from ._checks import (check_output_kinds, check_paths, dash_stream, int_at_least, not_dash,
                      report_files)
from ._common import (Given, HelpFormatter, gold_held, gold_mix_note, plain_values, add_method_option, add_target_prior_option,
                      cli_words, common_options, given_options, registry_name,
                      target_prior_problem)

__all__ = ["register", "aggregate_command", "report_command"]

#: ``--sequence-model``'s type: any name or alias of the sequence registry, as ``--method``
SEQUENCE_MODEL_NAME = registry_name(SEQUENCE_MODELS, "sequence model")

_TO_NAME_HELP = ("pass --to-name NAME (the name= of the object tag the control's toName points "
                 "to, e.g. text for <Text name=\"text\" value=\"$text\"/>), or --label-config "
                 "FILE, or push with --url and --project (the project's config is then used)")


#: --no-gold of aggregate and report: both fit the label model the same way (fit_label_model)
_NO_GOLD_HELP = ("fit without the ground-truth annotations' labels (by default a model that "
                 "takes gold holds those tasks at their label, and the default model chooses "
                 "by them when there are 20 or more)")

#: Fewer ground-truth tasks than this give counts, not a score: one task scores 0 or 1.
MIN_GOLD_FOR_SCORE = 10


#: Defaults of the push-only flags (given only with --url; see _push_flags)
_PUSH_DEFAULTS = {"on_existing": "update", "batch_size": 100, "retries": 3}


def _gold_line(n_gold: int, score: str, what: str, counts: str = "") -> str:
    """The comparison with the ground-truth tasks, or why there is none."""
    if n_gold == 0:
        return (f"no ground-truth annotations in the export: nothing to score the aggregate "
                f"{what} against (mark some tasks' annotations as ground truth to get one)")
    tasks = f"{n_gold} ground-truth task{'s' if n_gold != 1 else ''}"
    if n_gold < MIN_GOLD_FOR_SCORE:
        return (f"{tasks}: too few to score the aggregate {what} (at least "
                f"{MIN_GOLD_FOR_SCORE} needed){'; ' + counts if counts else ''}")
    return f"aggregate {what} on {tasks}: {score}"


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
            "else, then that every task of the export is in the project with the same data "
            "(--allow-data-mismatch accepts edited data), and the predictions are pushed "
            "idempotently (a re-run with the same "
            "--model-version neither duplicates nor loses predictions; an interrupted push "
            "takes from no task the prediction it had, and a re-run completes it: tasks "
            "not reached before the stop get theirs then). A task of the export that holds "
            "a prediction of the model version from an earlier push but gets none from this "
            "run keeps it, and a warning names it; --prune-stale deletes those. The files "
            "are written once the push is not refused (a refused push leaves them as they "
            "were). The API token is read from the "
            "LABEL_STUDIO_API_KEY environment variable.\n\n"
            "Span controls (Labels, ParagraphLabels) are aggregated per token "
            "by --sequence-model (tokens: whitespace runs of the task text, tags --scheme); "
            "the predictions hold the aggregate spans (start, end, text, labels, score) and "
            "the report span and token precision/recall/F1 per annotator. HyperTextLabels "
            "controls are reported by 'label-studio report' (their predictions would need "
            "XPath offsets)."))
    agg.add_argument("export", type=dash_stream("stdin"),
                     help="export file (JSON, JSON_MIN, CSV or TSV; -: the standard input)")
    add_method_option(agg)
    add_target_prior_option(agg, "the default --method of Choices/Rating controls only")
    agg.add_argument("--sequence-model", default=DEFAULT_SEQUENCE_MODEL, action=Given,
                     type=SEQUENCE_MODEL_NAME,
                     choices=available_sequence_models(), metavar="NAME",
                     help="label model for span controls (--method is for Choices/Rating): "
                          + ", ".join(available_sequence_models()))
    agg.add_argument("--scheme", default="IO", choices=["IO", "BIO"], action=Given,
                     help="span controls: tags per token (IO, or BIO to tell adjacent spans "
                          "apart)")
    agg.add_argument("--text-mismatch", default="count", choices=["count", "error"],
                     help="span controls: a span whose text differs from the task's characters "
                          "at its offsets is counted (and the first one named), or an error")
    agg.add_argument("--text-key", default=None, metavar="KEY",
                     help="span controls: the task data field holding the text (default: from "
                          "the config's object, else the field named like the object, else the one "
                          "the spans' texts fit)")
    agg.add_argument("--out", default="predictions.json", type=dash_stream("stdout"),
                     help="predictions file to write (-: the standard output)")
    agg.add_argument("--annotators", default=None, metavar="CSV",
                     type=not_dash("the CSV report and the JSON report beside it"),
                     help="annotator quality report (CSV) to write, a .json report beside it "
                          "(default: no report)")
    agg.add_argument("--annotators-json", default=None, metavar="JSON", type=dash_stream("stdout"),
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
                     action=Given,
                     help="annotations with several choices: error, combination (each set of "
                          "choices is one class) or skip (left out, counted)")
    agg.add_argument("--separator", default="|", metavar="TEXT", action=Given,
                     help="joins the choices of a set into its class name (--multiple "
                          "combination)")
    agg.add_argument("--no-gold", action="store_true", help=_NO_GOLD_HELP)
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
    agg.add_argument("--project", type=int_at_least(1), default=None,
                     help="project id to push to (with --url)")
    agg.add_argument("--on-existing", default=None, choices=["update", "skip", "replace"],
                     help="a task already holding a prediction of this model version: update it "
                          "when different, skip it, or replace (write it again even when "
                          "identical) (default: update)")
    agg.add_argument("--allow-data-mismatch", action="store_true",
                     help="push even where a task's data in the project differ from the "
                          "export's (task data edited on purpose); tasks missing from the "
                          "project, or an export of another project, are always refused")
    agg.add_argument("--prune-stale", action="store_true",
                     help="delete this model version's predictions on the export's tasks that "
                          "this run does not predict (their annotations were removed since an "
                          "earlier push, say); without it they are kept and a warning names "
                          "them. Other model versions, other controls' predictions and tasks "
                          "outside the export are never touched")
    agg.add_argument("--batch-size", type=int_at_least(1), default=None,
                     help="predictions per import request of new predictions (a bulk "
                          "update of changed ones sends larger requests: see the push docs) "
                          f"(default: {_PUSH_DEFAULTS['batch_size']})")
    agg.add_argument("--retries", type=int_at_least(0), default=None,
                     help="retries, with backoff, of a request that failed transiently "
                          f"(default: {_PUSH_DEFAULTS['retries']})")
    agg.set_defaults(func=aggregate_command)
    _register_report(sub, parents)
    return ls


def _register_report(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser(
        "report", parents=parents, formatter_class=HelpFormatter,
        help="agreement and quality report of an export: one HTML page and a JSON",
        description=(
            "Read every Choices, Rating and span control of a Label Studio export and write "
            "DIR/report.html (one self-contained page: no network needed to view it) and "
            "DIR/report.json (the same numbers): per control and overall (the mean over the "
            "controls), Krippendorff's alpha, Fleiss' kappa and percent agreement with "
            "bootstrap intervals over tasks, Cohen's kappa for every pair of annotators (heat "
            "map), one-vs-rest agreement per class, each annotator's agreement with the others "
            "and the label model's estimated accuracy and confusion matrices, and for span "
            "controls the pairwise span F1 (exact, overlap, token-proportional) and the "
            "boundary disagreements. The label model is fitted as 'label-studio aggregate' "
            "fits it: tasks with a ground-truth annotation held at their label when the "
            "model takes gold (--no-gold: without), so both give the same consensus and "
            "annotator quality. The pictures need matplotlib (crowd-keras[plot]); without "
            "it the page has the tables and says how to get them."))
    rep.add_argument("export", type=dash_stream("stdin"),
                     help="export file (JSON, JSON_MIN, CSV or TSV; -: the standard input)")
    rep.add_argument("--out", required=True, metavar="DIR",
                     type=not_dash("a folder of report.html and report.json"),
                     help="folder to write report.html and report.json into (required)")
    rep.add_argument("--control", action="append", default=None, metavar="NAME",
                     help="a control to report, repeatable (default: every readable control of "
                          "the config or of a full JSON export; needed for JSON_MIN/CSV/TSV "
                          "without --label-config)")
    rep.add_argument("--label-config", default=None, metavar="FILE",
                     help="the project's labeling config (XML; needs crowd-keras[label-studio])")
    rep.add_argument("--format", default=None, choices=["JSON", "JSON_MIN", "CSV", "TSV"],
                     help="export format (default: detected from the content and suffix)")
    add_method_option(rep, " (for the per-annotator quality and confusion matrices)")
    rep.add_argument("--sequence-model", default=DEFAULT_SEQUENCE_MODEL,
                     type=SEQUENCE_MODEL_NAME,
                     choices=available_sequence_models(), metavar="NAME",
                     help="label model for span controls: " + ", ".join(available_sequence_models()))
    rep.add_argument("--level", default=None, choices=["nominal", "ordinal", "interval", "ratio"],
                     help="level of Krippendorff's alpha for Rating controls and Choices whose "
                          "choices are all numbers (default: interval for Rating controls, "
                          "nominal otherwise); text choices and span tags stay nominal")
    rep.add_argument("--multiple", default="combination", choices=["error", "combination", "skip"],
                     help="annotations with several choices: each set one class (combination), "
                          "left out (skip) or an error")
    rep.add_argument("--separator", default="|", metavar="TEXT",
                     help="joins the choices of a set into its class name (--multiple "
                          "combination)")
    rep.add_argument("--include-gold", action="store_true",
                     help="also use ground_truth annotations as ordinary annotations")
    rep.add_argument("--no-gold", action="store_true", help=_NO_GOLD_HELP)
    rep.add_argument("--scheme", default="IO", choices=["IO", "BIO"], help="span controls: tags")
    rep.add_argument("--text-key", default=None, metavar="KEY",
                     help="span controls: the task data field holding the text")
    rep.add_argument("--bootstrap", type=int_at_least(0), default=1000, metavar="N",
                     help="bootstrap replicates over tasks for the intervals (0: none)")
    rep.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the bootstrap")
    rep.add_argument("--no-plots", action="store_true",
                     help="tables only, even when matplotlib is installed")
    rep.set_defaults(func=report_command)


def report_command(args: argparse.Namespace) -> int:
    """Handler of ``label-studio report``; returns the exit code (2: bad input)."""
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.integrations import label_studio as ls

    try:  # before any work: the report folder must not be the export nor an existing file
        check_paths([("the export", args.export), ("--label-config", args.label_config)],
                    [("--out", args.out)] + report_files(args.out))
        check_output_kinds(files=report_files(args.out), folders=[("--out", args.out)])
    except CrowdDataError as exc:
        _err(exc)
        return 2
    source = args.export
    if os.path.exists(source) and not os.path.isfile(source) and not os.path.isdir(source):
        # a pipe (<(...), /dev/stdin) is read once: the report reads its export per control
        with open(source, "rb") as fh:
            source = fh.read()
    try:
        with Heartbeat("computing agreement", disable=getattr(args, "quiet", False)):
            out = ls.quality_report(
                source, args.out, controls=args.control, label_config=args.label_config,
                format=args.format,
                # the defaults as None: a setting the controls do not read is then an error
                method=None if args.method == DEFAULT_LABEL_MODEL else args.method,
                sequence_model=None if args.sequence_model == DEFAULT_SEQUENCE_MODEL
                else args.sequence_model, level=args.level, multiple=args.multiple,
                separator=args.separator, include_gold=args.include_gold,
                scheme=args.scheme, text_key=args.text_key, n_bootstrap=args.bootstrap,
                seed=args.seed, plots=not args.no_plots, use_gold=not args.no_gold)
    except ImportError as exc:
        _err(exc)
        return 2
    except (CrowdDataError, ValueError) as exc:
        _err(exc)
        return 2
    doc = out["report"]
    for name, control in doc["controls"].items():
        if control["error"] is not None:
            print(f"control '{name}': not reported: {cli_words(control['error'])}")
            continue
        summary = {r["statistic"]: r["value"] for r in control["agreement"]["summary"]}
        spans = "span_f1_overlap" in summary      # span controls: the items are tokens
        shown = ("krippendorff_alpha", "fleiss_kappa", "percent_agreement",
                 "mean_pairwise_kappa") + (("span_f1_exact", "span_f1_overlap",
                                            "span_f1_token") if spans else ())
        print(f"control '{name}' ({control['type']}{', token level' if spans else ''}): "
              + ", ".join(f"{k} {_fmt(summary.get(k))}" for k in shown)
              + f"; {'tokens' if spans else 'tasks'} with one annotation (left out): "
              f"{int(summary['n_items_single'])}")
    print("overall (mean over controls): " + ", ".join(
        f"{r['statistic']} {_fmt(r['value'])}" for r in doc["overall"]))
    print(f"wrote {out['html']} and {out['json']}")
    return 0


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _err(msg: Any) -> None:
    print(f"crowd-keras label-studio: error: {cli_words(msg)}", file=sys.stderr)


def _prediction_scores(model: Any, gold: Any) -> Any:
    """Each prediction's score: the label model's consensus quality, 1 on the ground-truth
    tasks the fit held at their label."""
    import numpy as np
    scores = model.consensus_quality()
    return scores if gold is None else np.where(np.asarray(gold) >= 0, 1.0, scores)


def _server(args: argparse.Namespace, ls: Any) -> tuple[Any, Any]:
    """(client, project) after the pre-flight check; raises LabelStudioError/ImportError."""
    client = ls.connect(args.url)
    return client, ls.check_project(client, args.project, retries=args.retries)


def _push_flags(args: argparse.Namespace) -> Optional[str]:
    """The push-only flags given without ``--url`` (an error: they would be ignored), else
    None after filling in their defaults."""
    given = [flag for flag, dest in (("--on-existing", "on_existing"),
                                     ("--batch-size", "batch_size"), ("--retries", "retries"),
                                     ("--allow-data-mismatch", "allow_data_mismatch"),
                                     ("--prune-stale", "prune_stale"))
             if getattr(args, dest) not in (None, False)]
    if args.url is None and given:
        return (f"{', '.join(given)} only appl{'y' if len(given) > 1 else 'ies'} to a push: "
                f"add --url and --project, or drop {'them' if len(given) > 1 else 'it'}")
    for dest, value in _PUSH_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, value)
    return None


def _nothing_left(summary: Any) -> str:
    """Why an export left no annotation to aggregate, from its summary's counts."""
    reasons = [(summary.n_cancelled, "skipped or cancelled"),
               (summary.n_without_label, f"without a label for control '{summary.control}'"),
               (summary.n_gold, "ground truth (gold, not an annotator's label: --include-gold "
                                "counts them)"),
               (summary.n_multiple_skipped, "with several choices (skipped: see --multiple)")]
    given = "; ".join(f"{n} {why}" for n, why in reasons if n)
    return (f"no annotation left to aggregate: {summary.n_annotations_read} annotations read"
            + (f", {given}" if given else "") + " (see the summary"
            + (" and notes" if summary.notes else "") + " above)")


def _ignored_flags(args: argparse.Namespace, export: Any, spans: bool,
                   config: Any = None) -> Optional[str]:
    """Flags the export (or the labeling ``config`` it was read with) makes meaningless or
    contradicts (an error rather than silently ignored), given with any value, its default
    included."""
    given = given_options(args)
    if args.model_version is not None and not args.model_version.strip():
        return "--model-version is empty: give a name, or drop it for crowd-keras-<method>"
    if not spans and (args.text_key is not None or {"scheme", "sequence_model"} & given):
        flag = "--text-key" if args.text_key is not None else f"--scheme {args.scheme}" \
            if "scheme" in given else f"--sequence-model {args.sequence_model}"
        return (f"{flag} applies to span controls; control '{export.control}' is not one "
                "(drop it" + ("; --method chooses its label model)" if "model" in flag
                              else ")"))
    if spans and "method" in given:   # it was ignored, silently
        return (f"--method {args.method} applies to Choices/Rating controls; span control "
                f"'{export.control}' is fitted by --sequence-model (drop --method, or pass "
                "--sequence-model NAME)")
    if spans and "multiple" in given:   # a region's labels each make a span
        return (f"--multiple {args.multiple} applies to Choices controls; span control "
                f"'{export.control}' reads each label of a region as a span (drop --multiple)")
    if "separator" in given and args.multiple != "combination":
        return (f"--separator {args.separator!r} joins the choices of a set with --multiple "
                f"combination, not --multiple {args.multiple} (drop it, or add --multiple "
                "combination)")
    if args.to_name and export.format == "JSON" and export.to_name and \
            args.to_name != export.to_name:
        return (f"--to-name {args.to_name!r} differs from the object {export.to_name!r} that "
                f"the export's results of control '{export.control}' label (drop --to-name)")
    if args.to_name and config is not None and export.to_name and \
            args.to_name != export.to_name:
        # Label Studio drops predictions for an object its config does not declare
        where = "--label-config" if args.label_config else "the project's labeling config"
        return (f"--to-name {args.to_name!r} differs from the object {export.to_name!r} that "
                f"control '{export.control}' labels in {where} (drop --to-name)")
    return None


def aggregate_command(args: argparse.Namespace) -> int:
    """Handler of ``label-studio aggregate``; returns the exit code."""
    from crowd_keras.errors import CrowdDataError

    quiet = getattr(args, "quiet", False)
    if (args.url is None) != (args.project is None):
        _err("--url and --project go together")
        return 2
    problem = _push_flags(args)
    if problem:
        _err(problem)
        return 2
    if args.annotators_json is not None and args.annotators is None:
        # the report is written as CSV and JSON together: alone it wrote nothing, silently
        _err("--annotators-json names where the JSON annotator report goes beside the CSV "
             "report of --annotators CSV: add --annotators, or drop --annotators-json")
        return 2
    csv_path, json_path = _report_paths(args)
    if csv_path is not None and not args.annotators_json and (
            csv_path.absolute().parts[1:2] == ("dev",) or standard_stream(csv_path)):
        # the JSON beside /dev/stdout or /dev/null was a new file /dev/stdout.json
        _err(f"--annotators {str(csv_path)!r} is a stream, not a file: the JSON report would "
             f"go beside it to {str(json_path)!r}; give --annotators-json PATH (or -) too")
        return 2
    try:  # before any work: an output must not overwrite the export or another output
        check_paths([("the export", args.export), ("--label-config", args.label_config)],
                    [("--out", args.out), ("--annotators", csv_path),
                     ("--annotators-json" if args.annotators_json else "the JSON report",
                      json_path)])
        check_output_kinds(files=[("--out", args.out), ("--annotators", csv_path),
                                  ("--annotators-json" if args.annotators_json else
                                   "the JSON report", json_path)])
    except CrowdDataError as exc:
        _err(exc)
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
    source = _export_source(args.export)
    try:
        export = ls.read_export(source(), control=args.control, label_config=config,
                                format=args.format, multiple=args.multiple,
                                separator=args.separator,
                                include_gold=args.include_gold, scheme=args.scheme,
                                text_key=args.text_key, text_mismatch=args.text_mismatch)
    except ImportError as exc:
        _err(exc)
        return 2
    except (CrowdDataError, ValueError) as exc:
        _err(exc)
        return 2
    if client is not None:
        try:  # the export's tasks must be the project's, before anything is fitted or written
            check = ls.check_tasks(client, args.project, source(), format=args.format,
                                   allow_data_mismatch=args.allow_data_mismatch,
                                   retries=args.retries)
        except CrowdDataError as exc:
            _err(exc)
            return 2
        except ls.LabelStudioError as exc:
            _err(exc)
            return 1
        if check.n_changed:
            print(f"note: {check.n_changed} of {check.n_tasks} tasks hold other data in project "
                  f"{args.project} than in the export (first: {check.first}); pushing anyway "
                  "(--allow-data-mismatch)")
    print(export.summary)
    for note in export.summary.notes:
        print(f"note: {cli_words(note)}")
    spans = isinstance(export, ls.LabelStudioSpans)
    problem = _ignored_flags(args, export, spans, config)
    if problem:
        _err(problem)
        return 2
    if spans and export.control_type == "hypertextlabels":   # known before the fit
        _err(f"control '{export.control}' is a HyperTextLabels control: its predictions would "
             "need XPath offsets, which the export's character offsets do not give, so "
             "aggregate cannot write them; 'crowd-keras label-studio report' gives its "
             "agreement and each annotator's span quality")
        return 2
    if (export.sequences.annotations if spans else export.annotations).n_annotations == 0:
        _err(_nothing_left(export.summary))
        return 2
    if not (args.to_name or export.to_name):
        _err(f"the {export.format} export does not name the object that control "
             f"'{export.control}' labels, which predictions need: {_TO_NAME_HELP}")
        return 2
    name = args.sequence_model if spans else args.method
    problem = target_prior_problem(args.target_prior, name, " on Choices/Rating controls",
                                   "a span control's sequence model" if spans else "")
    if problem:
        _err(problem)
        return 2
    model = get_sequence_model(name) if spans else get_label_model(name)
    if args.target_prior:
        model.set_params(target_prior=args.target_prior)
    if "progress" in model.get_params():  # the Heartbeat below is this command's one progress
        model.set_params(progress=False)
    # the one fit of the integration (report, predictions_from_model do the same)
    gold = ls.gold_for_fit(export, model, use_gold=not args.no_gold)
    with Heartbeat(f"fitting {name}", disable=quiet):
        ls.fit_label_model(export, model, use_gold=not args.no_gold)
    version = args.model_version or f"crowd-keras-{name}"
    try:
        predictions = (ls.predictions_from_model(export, model, version,
                                                 include_unannotated=args.include_unannotated,
                                                 to_name=args.to_name) if spans else
                       ls.to_predictions(export, model.predict_proba(), version,
                                         include_unannotated=args.include_unannotated,
                                         to_name=args.to_name,
                                         scores=_prediction_scores(model, gold)))
    except CrowdDataError as exc:
        _err(exc)
        return 2

    def write_file() -> None:
        out = ls.write_predictions(args.out, predictions)
        print(f"wrote {len(predictions)} predictions (model_version {version!r}) to {out}")

    def write_outputs() -> None:
        write_file()
        if args.annotators is not None:
            _report(args, ls, export, model, client, version)

    if client is None:
        write_file()
    if args.include_gold and (spans or gold is None) and export.summary.n_gold:
        # scored against its own votes: a circular score
        print("the ground-truth annotations entered the aggregate as votes (--include-gold): "
              "it is not scored against them")
    elif spans:
        n_gold, (p, r, f1) = ls.gold_span_scores(export, model.predict())
        print(_gold_line(n_gold, f"token precision {p:.3f}, recall {r:.3f}, F1 {f1:.3f}",
                         "spans"))
    elif gold is not None:
        n_known = int((gold >= 0).sum())
        held = "held at their label in the fit" if gold_held(model) else \
            ("kept at their label (labeling-function votes: --method abstain_dawid_skene "
             "holds gold in the fit)")
        print(f"{n_known} ground-truth task{'s' if n_known != 1 else ''} {held} (--no-gold "
              "fits without them and scores the aggregate against them)")
        note = gold_mix_note(model, plain_values(export.annotations.classes))
        if note:
            print(note)
    else:
        n_gold, acc = ls.gold_accuracy(export, model.predict_proba())
        right = round(acc * n_gold) if n_gold else 0
        print(_gold_line(n_gold, f"accuracy {acc:.3f} ({right} of {n_gold} right)",
                         "labels", f"the aggregate is right on {right} of {n_gold}"))
        if not args.no_gold and (export.gold_codes() >= 0).any():
            print(f"note: --method {name} does not take gold labels: the ground-truth tasks "
                  "score the aggregate instead of entering the fit")
        unscored = int((export.gold_codes() >= 0).sum()) - n_gold
        if unscored:
            print(f"note: {unscored} ground-truth task{'s' if unscored != 1 else ''} without "
                  "a used annotation not scored (no aggregate label to compare)")
    if client is None:
        if args.annotators is not None:
            _report(args, ls, export, model, client, version)
        return 0
    # the files are written once the push is not refused: a refused push (bad input) leaves
    # the previous files as they were; one the server stopped still gets them
    try:
        ls.check_against_config(predictions, getattr(project, "label_config", None),
                                args.project)
    except CrowdDataError as exc:
        _err(exc)
        return 2
    try:
        with warnings.catch_warnings():   # said below, in this command's words
            warnings.simplefilter("ignore", ls.StalePredictionsWarning)
            result = ls.push_predictions(client, args.project, predictions, model_version=version,
                                         batch_size=args.batch_size, retries=args.retries,
                                         on_existing=args.on_existing, progress=not quiet,
                                         preflight=False, prune_stale=args.prune_stale,
                                         tasks=check.tasks)
    except CrowdDataError as exc:   # refused before any write: bad input
        _err(exc)
        return 2
    except ls.LabelStudioError as exc:
        write_outputs()
        _err(exc)
        return 1
    except ls.PushInterrupted as exc:   # Ctrl-C: the files and the account, as a stopped push
        write_outputs()
        print(f"crowd-keras label-studio: interrupted: {exc}", file=sys.stderr)
        return 130
    write_outputs()
    print(f"pushed to project {args.project}: {result.n_created} created or updated "
          f"({result.n_new} new, {result.n_replaced} replacing a different prediction, "
          f"{result.n_rewritten} rewritten though identical), {result.n_unchanged} unchanged"
          + (f", {result.n_deleted} extra copies removed" if result.n_deleted else "")
          + (f", {result.n_pruned} stale predictions deleted (--prune-stale)"
             if result.n_pruned else ""))
    stale = _stale_line(result, version, args.project, args.prune_stale)
    if stale:
        print(f"warning: {stale}", file=sys.stderr)
    return 0


def _stale_line(result: Any, version: str, project: int, pruned: bool) -> Optional[str]:
    """The tasks that keep a prediction of ``version`` this run did not write, or None."""
    from crowd_keras.integrations.label_studio.push import stale_words

    kept = result.stale_outside if pruned else result.stale_tasks
    if not kept:
        return None
    n_out = len(result.stale_outside)
    them = "it" if len(kept) == 1 else "them"
    advice = (f"--prune-stale deletes {them}" if not n_out else
              f"--prune-stale deletes the {len(kept) - n_out} in the export, not the {n_out} "
              "not in it" if len(kept) > n_out else
              f"not in the export: --prune-stale leaves {them} alone")
    return f"{stale_words(kept, version, project, 'this run did not write')}; {advice}"


def _export_source(path: str) -> Any:
    """A function giving the export to read, as often as it is called: ``path``, or for a
    pipe (``/dev/stdin``, ``<(...)``: readable once) a fresh file object of its bytes, read
    once and named by ``path``. A push reads the export twice (the tasks are checked against
    the project's): the second read of a pipe found it "empty"."""
    if not os.path.exists(path) or os.path.isfile(path) or os.path.isdir(path):
        return lambda: path
    import io

    with open(path, "rb") as fh:
        data = fh.read()

    def fresh() -> Any:
        buffer = io.BytesIO(data)
        buffer.name = path   # messages and the format's suffix, as for the path
        return buffer

    return fresh


def _report_paths(args: argparse.Namespace) -> tuple:
    """(CSV, JSON) paths of the annotator report, (None, None) without ``--annotators``."""
    if args.annotators is None:
        return None, None
    csv_path = Path(args.annotators)
    json_path = Path(args.annotators_json) if args.annotators_json else \
        csv_path.with_suffix(".json")
    if json_path == csv_path and not args.annotators_json:   # given: refused as one file
        json_path = csv_path.with_name(csv_path.name + ".json")
    return csv_path, json_path


def _report(args: argparse.Namespace, ls: Any, export: Any, model: Any, client: Any,
            version: str) -> None:
    emails = None
    if client is not None:
        try:
            emails = ls.fetch_user_emails(client, retries=args.retries)
        except ls.LabelStudioError as exc:
            print(f"warning: could not read user e-mails: {exc}", file=sys.stderr)
    csv_path, json_path = _report_paths(args)
    frame = ls.annotator_report(export, model, csv_path=csv_path, json_path=json_path,
                                emails=emails, model_version=version)
    print(f"wrote the annotator report for {len(frame)} annotators to "
          f"{csv_path} and {json_path}")
