"""The crowd-keras command line.

``crowd-keras demo`` simulates a crowd with known truth, fits the label models and prints
their accuracy; ``crowd-keras aggregate`` turns a long CSV of annotations into labels and an
annotator report; ``crowd-keras agree`` measures how much the annotators of such a CSV agree
(and writes the HTML/JSON report); ``crowd-keras label-studio ...`` works on Label Studio exports (when that
integration is installed). Heavy libraries (Keras, TensorFlow) are imported only for a label
model that needs them, and then with TensorFlow's start-up lines filtered.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

from ..aggregation.registry import LABEL_MODELS, available_label_models
from ..codes import booleans_as_codes, show
from ..errors import CrowdDataError
from ..files import atomic_write_files, atomic_write_text, csv_text, indented_json
from ..progress import Heartbeat
from ..quiet import quiet_import, quiet_tensorflow
from ._checks import (check_output_kinds, check_paths, class_list, dash_stream, int_at_least,
                      not_dash, one_reader_per_stream, report_files)
from ._common import (CommandParser, HelpFormatter, cli_words, gold_held, gold_mix_note, plain_values, add_method_option, add_target_prior_option,
                      UsageError, common_options, given_options, label_model_name,
                      run_handler, target_prior_problem)
from ._tables import (COLUMN_FLAGS, check_columns, check_spacing, each_number,
                      each_plain_integer, frame_error, line_of, read_table)

__all__ = ["main", "build_parser", "atomic_write_text", "SLOW_METHODS", "describe_choice"]


def _demo(args: argparse.Namespace) -> int:
    from ..aggregation import get_label_model
    from ..datasets import simulate_crowd

    if args.per_item > args.annotators:
        raise UsageError(f"--per-item {args.per_item} exceeds --annotators "
                             f"{args.annotators}: an annotator labels an item once")
    sim = simulate_crowd(n_items=args.items, n_classes=args.classes, n_annotators=args.annotators,
                         annotations_per_item=args.per_item, annotator_accuracy=(0.35, 0.9),
                         common_noise=args.common_noise, seed=args.seed)
    ann = sim.annotations
    # annotators the draw gave no item (few items, many annotators) have no accuracy: they
    # are left out of the mean and of the correlation (a NaN estimate made it NaN)
    active = ann.annotations_per_annotator() > 0
    print(f"Simulated crowd (seed {args.seed}): {ann.n_items} items, {ann.n_annotators} "
          f"annotators{f' ({int(active.sum())} with annotations)' if not active.all() else ''}"
          f", {ann.n_annotations} annotations, {ann.n_classes} classes, mean annotator "
          f"accuracy {sim.annotator_accuracy()[active].mean():.3f}")
    true_acc = (np.einsum("akk->a", sim.confusion_matrices) / ann.n_classes)[active]
    rows = []
    # names as primary names (an alias and its model are one row)
    for name in dict.fromkeys(args.methods or _default_methods(available_label_models(False))):
        model = get_label_model(name)
        start = time.perf_counter()
        with Heartbeat(f"fitting {name}", disable=args.quiet):
            model.fit(ann)
        seconds = time.perf_counter() - start
        acc = float((model.predict() == sim.y).mean())
        est = model.annotator_quality_["accuracy"].to_numpy()[active]
        corr = float(np.corrcoef(est, true_acc)[0, 1]) if np.std(est) > 0 else float("nan")
        rows.append((name, acc, corr, seconds))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'label model':<{width}}  accuracy  annotator-quality corr.  fit time")
    for name, acc, corr, seconds in rows:
        print(f"{name:<{width}}  {acc:8.3f}  {corr:23.3f}  {seconds * 1e3:6.1f} ms")
    return 0


#: Label models the demo leaves out unless named: LIA trains neural networks (minutes).
SLOW_METHODS = ("lia",)


def _default_methods(available: Sequence[str]) -> list:
    return [m for m in available if m not in SLOW_METHODS]


# The candidates of the "auto" label model, by the family part of their name ("family@m")
_CHOICES = {
    "majority_vote": "no candidate agreed with held-out labels clearly better than voting",
    "bwa": "one precision per annotator, Bayesian",
    "ibcc": "a confusion matrix per annotator with Dirichlet priors",
    "ebcc": "confusions as mixtures of subtypes shared by annotators (correlated workers)",
    "dawid_skene": "a confusion matrix per annotator, shrunk toward the crowd's by {m} "
                   "pseudo-labels per row",
}


def describe_choice(name: str) -> str:
    """``"dawid_skene@32"`` -> the name and what it means (``@m``: the prior strength)."""
    family, _, m = str(name).partition("@")
    template = _CHOICES.get(family)
    return f"{name}: {template.format(m=m)}" if template else str(name)


def _gold_check(model: Any) -> str:
    """What the default model's choice by gold did (``gold_accuracy_`` set: 20 or more gold
    items), said beside ``by agreement`` / ``by gold``: "by agreement" alone read as if the
    gold had not been used for the choice; ``""`` when it was not."""
    accuracy = getattr(model, "gold_accuracy_", None) or {}
    if model.chosen_ not in accuracy:
        return ""
    n = int(model.n_gold_)
    if model.selection_ == "gold":
        return f", accuracy {accuracy[model.chosen_]:.3f} on {n} gold items hidden from it"
    return f", kept on {n} gold items: no candidate clearly more accurate there"


def _read_gold(args: argparse.Namespace, ann: Any) -> Any:
    """The --gold file (columns --item and --label, one row per item) as item -> label."""
    import pandas as pd

    # the items as text (made integers one by one below); the labels as text where the
    # annotations' classes are text ('1' among 'yes', 'no')
    df = read_table(args.gold, args.label,
                     args.string_labels or ann.classes.dtype.kind not in "iufb",
                     ids=[args.item], int_ids=False)
    check_columns(args.gold, df, args, roles=("item", "label"))
    if df.empty:   # read as gold, it fitted without any and said "0 gold labels ... held"
        raise CrowdDataError(f"{args.gold}: no gold labels: the file has a header line and no "
                             "rows (leave out --gold to fit without gold)")
    if args.item in df.columns and ann.item_ids.dtype.kind in "iu":
        # one id such as '003' must not turn every other gold id into text that matches none
        df[args.item] = each_plain_integer(df[args.item])
    if args.label in df.columns and ann.classes.dtype.kind in "iuf" and \
            not pd.api.types.is_numeric_dtype(df[args.label]):
        # one label that is no number makes the column text: the numbers in it still count
        df[args.label] = each_number(df[args.label])
    dup = df[args.item].duplicated() & df[args.item].notna()   # a missing item: named below
    if dup.any():
        second = int(dup.to_numpy().argmax())
        item = df[args.item].iloc[second]
        first = int((df[args.item] == item).to_numpy().argmax())
        given = df[args.label].iloc[[first, second]].tolist()
        line = line_of(args.gold)
        what = "the same label" if given[0] == given[1] else \
            f"labels {show(given[0])} and {show(given[1])}"
        raise CrowdDataError(f"{args.gold}: item {show(item)} is given more than once, on lines "
                             f"{line(first)} and {line(second)} ({what}): one gold label per "
                             "item")
    # every row checked against the annotations here, so that errors name the gold file's line
    items, labels = df[args.item], df[args.label]
    pos = pd.Index(ann.item_ids).get_indexer(items)
    codes = pd.Index(ann.classes).get_indexer(booleans_as_codes(labels, ann.classes))
    for bad, what in ((items.isna().to_numpy(), lambda r: f"missing item ({args.item!r}, "
                                                          "--item)"),
                      (pos < 0, lambda r: f"item {show(items.iloc[r])} is not an item of "
                                          f"{args.input}"
                                          f"{_spaced(items.iloc[r], ann.item_ids, 'item')}"),
                      (labels.isna().to_numpy(), lambda r: f"missing label ({args.label!r}, "
                                                           "--label) of item "
                                                           f"{show(items.iloc[r])}"),
                      (codes < 0, lambda r: f"label {show(labels.iloc[r])} of item "
                                            f"{show(items.iloc[r])} is not one of the classes "
                                            f"{ann.classes.tolist()[:20]}"
                                            + (_spaced(labels.iloc[r], ann.classes, 'class')
                                               or " (a class no annotator chose: list every "
                                               "class with --classes)"))):
        if bad.any():
            r = int(np.argmax(bad))
            raise CrowdDataError(f"{args.gold}: line {line_of(args.gold)(r)}: {what(r)}")
    return pd.Series(ann.classes[codes], index=ann.item_ids[pos])


def _spaced(value: Any, known: Any, what: str) -> str:
    """Hint for a --gold ``value`` (an item or a label) that is none of ``known`` (the
    answers' items or classes) but one of them once the spaces around it are removed
    (``t1, cat`` keeps the space after the comma), else ``""``."""
    if not isinstance(value, str):
        return ""
    if value != value.strip():
        alike = [k for k in np.asarray(known).tolist() if str(k) == value.strip()]
        return f" ({what} {show(alike[0])} is: remove the spaces around it)" if alike else ""
    # the answers' values carry the spaces (``t1,a, cat`` everywhere)
    alike = [k for k in np.asarray(known).tolist() if isinstance(k, str) and k != k.strip()
             and k.strip() == value]
    return (f" ({what} {show(alike[0])} of the answers has spaces around it: remove them "
            "there)" if alike else "")


def _scale_classes(column: Any) -> Optional[list]:
    """The sorted distinct numbers of a numeric label column, else None: the classes of
    ``agree`` (agreement on the values themselves: a rating scale such as 1..5, -2..2 or 0.5
    steps) and of ``aggregate`` (whole numbers from 0). ``Annotations.from_frame``'s rule for
    label codes would make 1..5 the classes 0..5 (a class 0 nobody used in the summary, the
    per-class table and every model fitted) and refuse negative or fractional values."""
    if column.dtype.kind not in "iuf":
        return None
    values = column.to_numpy()
    values = values[np.isfinite(values)]     # a missing value is refused by from_frame
    return np.unique(values).tolist()


def _off_code_scale(column: Any) -> bool:
    """Whether a numeric label column holds a negative or fractional value (a rating scale
    such as -2..2 or 0.5 steps), which ``aggregate`` cannot read as class codes."""
    if column.dtype.kind not in "if":
        return False
    values = column.to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    return bool((values < 0).any() or (values != np.round(values)).any())


def _refuse_infinite(path: str, df: Any, args: argparse.Namespace) -> None:
    """Raise for the first infinite number of a numeric label column (a field ``inf`` or
    ``-Infinity``), naming its line: no scale of classes holds it (it was then "not one of
    the classes" of the finite numbers, a reason that named no cause)."""
    column = df[args.label]
    if column.dtype.kind != "f":
        return
    bad = np.isinf(column.to_numpy())
    if not bad.any():
        return
    r = int(bad.argmax())
    raise CrowdDataError(
        f"{path}: line {line_of(path)(r)}: label {show(column.iloc[r])} (item "
        f"{show(df[args.item].iloc[r])}, annotator {show(df[args.annotator].iloc[r])}; column "
        f"{args.label!r}, --label) is not a finite number, so it is no class of the numeric "
        "labels; read the labels as text (--string-labels) if it is a class")


def _refuse_scale(path: str, df: Any, args: argparse.Namespace) -> None:
    """Raise for the first negative or fractional number of a label column that ``aggregate``
    reads as whole-number classes, naming the flags that read a rating scale (the library's
    words spoke of frames, not of the command's flags; a -1 may mean "no label")."""
    column = df[args.label]
    values = column.to_numpy(dtype=float)
    bad = np.isfinite(values) & ((values < 0) | (values != np.round(values)))
    r = int(bad.argmax())
    scale = [show(v) for v in _scale_classes(column)]
    listed = ",".join(scale) if len(scale) <= 12 else None
    raise CrowdDataError(
        f"{path}: line {line_of(path)(r)}: label {show(column.iloc[r])} (item "
        f"{show(df[args.item].iloc[r])}, annotator {show(df[args.annotator].iloc[r])}; column "
        f"{args.label!r}, --label) is not a whole number 0, 1, 2, ...: numeric labels are read "
        "as whole-number classes; for a rating scale list its classes in order ("
        + (f"--classes={listed}" if listed else "--classes=A,B,...")
        + ") or read the labels as text (--string-labels); a -1 that means 'no label' is a "
          "row to leave out")


def _listed_classes(text: str, column: Any) -> list:
    """The classes of ``--classes A,B,C`` in that order, as numbers when the label column
    holds numbers (``--string-labels`` not given) so that they match its values."""
    names = [name.strip() for name in str(text).split(",")]   # none empty: class_list
    kind = column.dtype.kind
    if kind == "b" and all(name.lower() in ("true", "false") for name in names):
        # booleans, as pandas read the labels; numbers instead are the classes 0 and 1 that
        # True/False labels stand for (booleans_as_codes), as in Annotations.from_frame
        names, kind = [name.lower() == "true" for name in names], ""
    if kind and kind in "iufb":
        try:
            numbers = [float(name) for name in names]
        except ValueError:
            bad = next(n for n in names if not _is_number(n))
            what = ("neither True/False nor a number", "booleans") if kind == "b" else \
                ("not a number", "numbers")
            raise CrowdDataError(f"--classes: {bad!r} is {what[0]}, but the labels are "
                                 f"{what[1]} (--string-labels reads them as text)") from None
        if not all(np.isfinite(numbers)):
            raise CrowdDataError(f"--classes {text!r}: a class that is not a finite number")
        names = [int(v) if kind in "iub" and v.is_integer() else v for v in numbers]
    seen = set()
    for name in names:   # as numbers: 1 and 1.0 are one class
        if name in seen:
            raise CrowdDataError(f"--classes: class {name!r} is listed twice")
        seen.add(name)
    return names


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_annotations(args: argparse.Namespace, out_folder: bool = False, scale: bool = False):
    """(the table, its Annotations) of ``args.input`` with the ``--item/--annotator/--label``
    columns; errors name the file's lines and the flags. ``out_folder``: ``--out`` names a
    folder (``agree``), else a file (``aggregate``). ``scale``: numeric labels may be any
    numbers, ordered by value (:func:`_scale_classes`; ``agree``)."""
    from ..annotations import Annotations

    for one, two in (("item", "annotator"), ("item", "label"), ("annotator", "label")):
        if getattr(args, one) == getattr(args, two):   # flags that cannot go together
            raise UsageError(f"{COLUMN_FLAGS[one]} and {COLUMN_FLAGS[two]} both name column "
                             f"{getattr(args, one)!r}; give each its own column")
    check_paths([("the input file", args.input), ("--gold", getattr(args, "gold", None))],
                [("--out", getattr(args, "out", None)),
                 ("--annotators", getattr(args, "annotators", None))]
                + (report_files(args.out) if out_folder else []))
    outputs = [("--out", getattr(args, "out", None)),
               ("--annotators", getattr(args, "annotators", None))]
    check_output_kinds(files=report_files(args.out) if out_folder else outputs,
                       folders=outputs[:1] if out_folder else [])
    df = read_table(args.input, args.label, args.string_labels,
                     ids=[args.item, args.annotator])
    check_columns(args.input, df, args, roles=tuple(COLUMN_FLAGS))
    check_spacing(args.input, df, args)
    _refuse_infinite(args.input, df, args)
    classes = None
    if getattr(args, "classes", None) is not None:
        classes = _listed_classes(args.classes, df[args.label])
    elif scale and not args.string_labels:
        classes = _scale_classes(df[args.label])
    elif not args.string_labels and _off_code_scale(df[args.label]):
        _refuse_scale(args.input, df, args)
    elif not args.string_labels:
        # the numbers given are the classes: ratings 1..5 are five classes, not the codes
        # 0..5 with a class 0 that no one chose and every model fitted
        classes = _scale_classes(df[args.label])
    try:
        ann = Annotations.from_frame(df, item=args.item, annotator=args.annotator,
                                     label=args.label, classes=classes,
                                     duplicates=args.duplicates)
    except CrowdDataError as exc:
        raise frame_error(exc, args.input, args) from None
    if df[args.label].dtype.kind == "b":   # pandas' reading: said, the output holds 0 and 1
        print("note: the labels were read as booleans (TRUE/FALSE, True/False, true/false): "
              "the classes 0 (false) and 1 (true); --string-labels keeps them as written")
    return df, ann


#: The columns of the labels file besides the item's (``--item``).
LABEL_COLUMNS = ("label", "probability", "n_annotations", "tied", "consensus_quality")


def _aggregate(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..aggregation import MajorityVote, get_label_model

    problem = target_prior_problem(args.target_prior, args.method)
    if problem:   # flags that cannot go together: said before the files are read
        raise UsageError(problem)
    settings = {"target_prior": args.target_prior} if args.target_prior else {}
    model = get_label_model(args.method, **settings)
    if args.gold and not model.accepts_gold:
        raise UsageError(f"--method {args.method} does not take gold labels (--gold); "
                         "the default method does")
    problem = one_reader_per_stream([("the input", args.input), ("--gold", args.gold)])
    if problem:
        raise UsageError(problem)
    if args.item in LABEL_COLUMNS:   # the item ids would be overwritten by that column
        raise UsageError(f"--item {args.item!r} is also a column the labels file writes "
                         f"({', '.join(LABEL_COLUMNS)}): rename the input's item column")
    df, ann = _read_annotations(args)
    gold = _read_gold(args, ann) if args.gold else None
    with Heartbeat(f"fitting {args.method}", disable=args.quiet):
        model = model.fit(ann) if gold is None else model.fit(ann, gold=gold)
    proba = model.predict_proba()
    out = pd.DataFrame({args.item: ann.item_ids, "label": ann.classes[proba.argmax(axis=1)],
                        "probability": proba.max(axis=1),
                        "n_annotations": ann.annotations_per_item(),
                        "tied": model.tied_items_,
                        # the calibrated chance that the label is right, which the
                        # largest posterior ("probability") is not
                        "consensus_quality": model.consensus_quality()})
    texts = {args.out: csv_text(out)}
    if args.annotators:   # written with the labels or not at all: one run's outputs
        texts[args.annotators] = csv_text(model.annotator_quality_)
    atomic_write_files(texts)
    shown = plain_values(ann.classes)[:10]
    print(f"read {len(df)} rows: {ann.n_annotations} annotations of {ann.n_items} items by "
          f"{ann.n_annotators} annotators ({ann.n_duplicates} duplicates dropped), "
          f"{ann.n_classes} classes {shown}{' ...' if ann.n_classes > 10 else ''}; "
          f"wrote {len(out)} labels to {args.out}")
    chosen = (f" (chose {describe_choice(model.chosen_)}; by {model.selection_}"
              f"{_gold_check(model)})" if getattr(model, "chosen_", None) else "")
    # a vote's tie is a shared top count (its one-hot posterior shows 1.0 for the winner)
    how = "top vote counts shared" if isinstance(model, MajorityVote) else \
        "top posteriors within 1e-9"
    n_tied = model.n_tied_items_
    print(f"{args.method}{chosen}: {n_tied} tied item{'' if n_tied == 1 else 's'} ({how}; "
          "exact ties get the lowest class code; column 'tied')")
    if gold is not None:   # every gold row accounted for: each names a distinct item
        held = "held fixed in the fit" if gold_held(model) else \
            (f"kept as the label{'s' if len(gold) != 1 else ''} (labeling-function votes: "
             "--method abstain_dawid_skene holds gold in the fit)")
        print(f"{len(gold)} gold label{'s' if len(gold) != 1 else ''} from {args.gold} {held}")
        note = gold_mix_note(model, plain_values(ann.classes))
        if note:
            print(note)
    if args.annotators:
        print(f"wrote the annotator report to {args.annotators}")
    return 0


def _agree(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..agreement import agreement_report
    from ..agreement.report import nested, records

    report_only = [flag for flag, given in (("--method", "method" in given_options(args)),
                                            ("--no-plots", args.no_plots)) if given]
    if report_only and args.out is None:   # silently without effect before
        raise UsageError(f"{' and '.join(report_only)} shape{'' if len(report_only) > 1 else 's'}"
                         f" the report, which only --out DIR writes: give --out, or leave "
                         f"{'them' if len(report_only) > 1 else 'it'} out")
    if args.string_labels and args.level in ("interval", "ratio"):
        raise UsageError(f"--level {args.level} needs numeric labels (the distance between "
                         "two labels is computed from their values), but --string-labels "
                         "reads them as text; drop --string-labels (negative and "
                         "fractional numbers are read as they are)")
    df, ann = _read_annotations(args, out_folder=True, scale=True)
    # in code order: the order that ordinal alpha uses
    shown = plain_values(ann.classes)[:10]
    print(f"read {len(df)} rows: {ann.n_annotations} annotations of {ann.n_items} items by "
          f"{ann.n_annotators} annotators ({ann.n_duplicates} duplicates dropped), "
          f"{ann.n_classes} classes {shown}{' ...' if ann.n_classes > 10 else ''}")
    if args.level == "ordinal" and args.classes is None and ann.classes.dtype.kind not in "iufb":
        # text classes in alphabetical order are seldom the scale meant (high < low < medium)
        print(f"note: --level ordinal orders the text classes alphabetically: "
              f"{' < '.join(map(str, plain_values(ann.classes)[:10]))}"
              f"{' < ...' if ann.n_classes > 10 else ''}; --classes A,B,... gives the order")
    with Heartbeat("computing agreement", disable=args.quiet):
        try:
            report = agreement_report(ann, level=args.level, n_bootstrap=args.bootstrap,
                                      seed=args.seed)
        except CrowdDataError as exc:   # the file's fault (one annotation per item): named
            raise CrowdDataError(f"{args.input}: {cli_words(exc)}") from None
    print(f"items with two or more annotations: {report.counts['n_items_pairable']}; with one "
          f"(left out of alpha and kappa): {report.counts['n_items_single']}")
    width = max(len(s) for s in report.summary["statistic"])
    for row in report.summary.itertuples(index=False):
        if row.statistic == "n_items_single":
            continue
        ci = (f"  [{row.low:.3f}, {row.high:.3f}]" if np.isfinite(row.low) else "")
        name = f"{row.statistic} ({args.level})" if row.statistic == "krippendorff_alpha" \
            else row.statistic
        value = f"{row.value:8.4f}" if np.isfinite(row.value) else f"{'n/a':>8}"  # undefined
        print(f"{name:<{width + 11}}  {value}{ci}")
    if args.out:
        from ..aggregation import get_label_model
        from ..quality_page import agreement_section, page_html

        with Heartbeat(f"fitting {args.method}", disable=args.quiet):
            model = get_label_model(args.method).fit(ann)
        quality = model.annotator_quality_
        doc = {"title": f"Annotator agreement: {Path(args.input).name}", "source": args.input,
               "agreement": report.to_dict(), "annotators": records(quality),
               "model": type(model).__name__,
               "confusion_matrices": nested(model.confusion_matrices_)}
        body = agreement_section(report, "agreement", quality=quality,
                                 quality_path="annotators",
                                 confusion=np.asarray(model.confusion_matrices_),
                                 classes=list(ann.classes), plots=not args.no_plots)
        out = Path(args.out)
        atomic_write_files({out / "report.html": page_html(doc["title"], body, not args.no_plots),
                            out / "report.json": indented_json(doc) + "\n"})
        print(f"wrote {out / 'report.html'} and {out / 'report.json'}")
    return 0


def _add_table_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", type=dash_stream("stdin"),
                   help="CSV/TSV file with one row per annotation (.tsv/.tab: tabs, .csv: "
                        "commas; -: the standard input; without either name, tabs when the "
                        "header line has tabs and no comma)")
    p.add_argument("--item", default="task", help="column of the item ids")
    p.add_argument("--annotator", default="worker", help="column of the annotator ids")
    p.add_argument("--label", default="label", help="column of the labels")
    p.add_argument("--string-labels", action="store_true",
                   help="read labels as text (e.g. '01' and '1' stay two classes, TRUE "
                        "and FALSE stay words instead of the classes 1 and 0; NA, None and "
                        "null are labels, only an empty field is missing)")
    p.add_argument("--duplicates", choices=["error", "last", "first"], default="error",
                   help="several rows of one annotator on one item: error, or keep the last "
                        "or the first (the others are counted)")


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = CommandParser(
        prog="crowd-keras", formatter_class=HelpFormatter,
        description="crowd-keras: label models for many noisy annotators, from the shell. "
                    "'crowd-keras COMMAND --help' describes each command.")
    parser.add_argument("--version", action="version", version=f"crowd-keras {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = common_options()

    demo = sub.add_parser("demo", parents=[common], formatter_class=HelpFormatter,
                          help="simulate a crowd and compare the label models",
                          description="Simulate a crowd with known truth, fit label models and "
                                      "print their accuracy and how well they rank annotators.")
    demo.add_argument("--items", type=int_at_least(1), default=2000, help="items to simulate")
    demo.add_argument("--annotators", type=int_at_least(1), default=50,
                      help="annotators to simulate")
    demo.add_argument("--classes", type=int_at_least(2), default=4, help="classes")
    demo.add_argument("--per-item", type=int_at_least(1), default=5, help="annotations per item")
    demo.add_argument("--common-noise", choices=["asymmetric", "symmetric"], default=None,
                      help="confusions shared by annotators (default: none): asymmetric or "
                           "symmetric")
    default_methods = _default_methods(available_label_models(aliases=False))
    demo.add_argument("--methods", nargs="*", metavar="NAME", type=label_model_name,
                      choices=available_label_models(),
                      help=f"label models to compare (default: {' '.join(default_methods)}; "
                           f"{', '.join(SLOW_METHODS)} trains neural networks and runs only "
                           "when named)")
    demo.add_argument("--seed", type=int_at_least(0), default=0,
                      help="random seed of the simulation")
    demo.set_defaults(func=_demo)

    agg = sub.add_parser("aggregate", parents=[common], formatter_class=HelpFormatter,
                         help="aggregate a long CSV of annotations into labels",
                         description="Read a CSV/TSV with one row per annotation (item, "
                                     "annotator, label), fit a label model and write one label "
                                     "per item with its probability and its consensus_quality "
                                     "(the calibrated chance that the label is right: review "
                                     "the lowest first). Errors name the line of the file.")
    _add_table_options(agg)
    add_method_option(agg)
    agg.add_argument("--gold", metavar="FILE", type=dash_stream("stdin"),
                     help="CSV of known true labels of some items (columns --item and --label): "
                     "held fixed in the fit, and with 20 or more the default method chooses "
                     "its model by them (-: the standard input)")
    add_target_prior_option(agg, "the default method only")
    agg.add_argument("--classes", default=None, metavar="A,B,...", type=class_list,
                     help="every class, separated by commas (e.g. cat,dog,bird): a class no "
                          "annotator chose (one a --gold label names, say) is a class of the "
                          "model; a label not listed is an error naming its line (default: the "
                          "labels found; a list that starts with '-': --classes=-2,-1,0)")
    agg.add_argument("--out", required=True, type=dash_stream("stdout"),
                     help="CSV of aggregated labels to write (-: the standard output; "
                          "required)")
    agg.add_argument("--annotators", type=dash_stream("stdout"),
                     help="CSV of the annotator quality report to write (default: none)")
    agg.set_defaults(func=_aggregate)

    agree = sub.add_parser("agree", parents=[common], formatter_class=HelpFormatter,
                           help="inter-annotator agreement of a long CSV of annotations",
                           description="Read a CSV/TSV with one row per annotation (item, "
                                       "annotator, label) and print Krippendorff's alpha, "
                                       "Fleiss' kappa, percent agreement (with bootstrap "
                                       "intervals over items) and the mean pairwise Cohen's "
                                       "kappa; with --out DIR also write DIR/report.html (one "
                                       "self-contained page: kappa heat map, per-class "
                                       "agreement, each annotator against the others, the "
                                       "label model's quality and confusion matrices) and "
                                       "DIR/report.json with the same numbers. Items with one "
                                       "annotation are left out and counted.")
    _add_table_options(agree)
    agree.add_argument("--level", default="nominal",
                       choices=["nominal", "ordinal", "interval", "ratio"],
                       help="level of Krippendorff's alpha: ordinal takes the classes in "
                            "the order printed (numbers by value, text alphabetically), "
                            "interval needs numeric labels, ratio non-negative ones")
    agree.add_argument("--classes", default=None, metavar="A,B,...", type=class_list,
                       help="the classes in order, separated by commas (e.g. "
                            "low,medium,high): the order of --level ordinal; a label not "
                            "listed is an error naming its line (default: the labels in the "
                            "order printed; a list that starts with '-': --classes=-2,-1,0)")
    agree.add_argument("--bootstrap", type=int_at_least(0), default=1000, metavar="N",
                       help="bootstrap replicates over items for the intervals (0: none)")
    agree.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the bootstrap")
    agree.add_argument("--out", default=None, metavar="DIR",
                       type=not_dash("a folder of report.html and report.json"),
                       help="folder for report.html and report.json (default: print only)")
    add_method_option(agree, " (with --out: the report's annotator quality and confusion "
                             "matrices)")
    agree.add_argument("--no-plots", action="store_true",
                       help="with --out: tables only, even when matplotlib is installed")
    agree.set_defaults(func=_agree)

    from . import label_studio

    label_studio.register(sub, parents=[common])
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code: 0 done, 1 failed (bad data or a server
    error: one line on stderr), 2 bad usage (flags that cannot go together too, and bad input
    of ``label-studio aggregate``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)   # a usage error (exit 2): on stderr, as argparse's own
        return 2
    # inside run_handler: a Ctrl-C while TensorFlow loads (--method lia: seconds) is the one
    # line "interrupted" and exit 130, as during the fit, not a traceback
    return run_handler(_prepared, args)


def _prepared(args: argparse.Namespace) -> int:
    """The command, after TensorFlow's start-up lines are filtered and the label models it
    fits imported."""
    quiet_tensorflow(verbose=getattr(args, "verbose", False))  # before any Keras model runs
    import_methods_quietly(args)
    return args.func(args)


def import_methods_quietly(args: argparse.Namespace) -> None:
    """Import the label models a command will fit (``--method``, ``--methods``) with
    TensorFlow's load-time lines filtered (:func:`~crowd_keras.quiet.quiet_import`).

    A model built on Keras (LIA) imports TensorFlow with its module, and the full wheel then
    writes its CUDA probe from C++ before any logging setting applies: only a filter on
    descriptor 2 around that import hides it. ``--verbose`` filters nothing. A model that
    fails to import is left to the command, which reports it in its own words.
    """
    names = [getattr(args, "method", None), *(getattr(args, "methods", None) or [])]
    names = [n for n in names if isinstance(n, str) and n in LABEL_MODELS]
    if not names:
        return
    with quiet_import(verbose=getattr(args, "verbose", False)):
        for name in names:
            try:
                LABEL_MODELS.resolve(name)
            except Exception:  # noqa: BLE001 - the command imports it again and reports
                pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
