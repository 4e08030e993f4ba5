"""The crowd-keras command line.

``crowd-keras demo`` simulates a crowd with known truth, fits the label models and prints
their accuracy; ``crowd-keras aggregate`` turns a long CSV of annotations into labels and an
annotator report; ``crowd-keras label-studio ...`` works on Label Studio exports (when that
integration is installed). Heavy libraries (Keras, TensorFlow) are never imported here.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Optional, Sequence

import numpy as np

from ..aggregation.registry import available_label_models
from ..errors import CrowdDataError
from ..files import atomic_write_text
from ..progress import Heartbeat
from ._common import HelpFormatter, add_method_option, cli_words, common_options, run_handler

__all__ = ["main", "build_parser", "atomic_write_text", "SLOW_METHODS"]


def _demo(args: argparse.Namespace) -> int:
    from ..aggregation import get_label_model
    from ..datasets import simulate_crowd

    sim = simulate_crowd(n_items=args.items, n_classes=args.classes, n_annotators=args.annotators,
                         annotations_per_item=args.per_item, annotator_accuracy=(0.35, 0.9),
                         common_noise=args.common_noise, seed=args.seed)
    ann = sim.annotations
    print(f"Simulated crowd (seed {args.seed}): {ann.n_items} items, {ann.n_annotators} "
          f"annotators, {ann.n_annotations} annotations, {ann.n_classes} classes, "
          f"mean annotator accuracy {sim.annotator_accuracy().mean():.3f}")
    true_acc = np.einsum("akk->a", sim.confusion_matrices) / ann.n_classes
    rows = []
    for name in args.methods or _default_methods(available_label_models(aliases=False)):
        model = get_label_model(name)
        start = time.perf_counter()
        with Heartbeat(f"fitting {name}", disable=args.quiet):
            model.fit(ann)
        seconds = time.perf_counter() - start
        acc = float((model.predict() == sim.y).mean())
        est = model.annotator_quality_["accuracy"].to_numpy()
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


def _read_table(path: str, label: str, string_labels: bool):
    import pandas as pd

    sep = "\t" if str(path).endswith((".tsv", ".tab")) else ","
    try:
        df = pd.read_csv(path, sep=sep, dtype={label: str} if string_labels else None)
    except FileNotFoundError:
        raise CrowdDataError(f"{path}: file not found") from None
    except (OSError, ValueError) as exc:
        raise CrowdDataError(f"cannot read {path}: {exc}") from None
    return df


_ROW = re.compile(r"\brow (\d+)\b")
_COLUMN_FLAGS = {"item": "--item", "annotator": "--annotator", "label": "--label"}


def _frame_error(exc: CrowdDataError, path: str, args: argparse.Namespace) -> CrowdDataError:
    """A frame error in the file's terms: rows as line numbers, columns with their flag."""
    text = _ROW.sub(lambda m: f"line {int(m.group(1)) + 2}", cli_words(exc))
    for role, flag in _COLUMN_FLAGS.items():
        name = getattr(args, role)
        text = text.replace(f"column {name!r}", f"column {name!r} ({flag})")
    text = text.replace("frame has no column(s)", "no column(s)")
    return CrowdDataError(f"{path}: {text}")


def _aggregate(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..aggregation import get_label_model
    from ..annotations import Annotations

    df = _read_table(args.input, args.label, args.string_labels)
    missing = [f"{c!r} ({flag})" for role, flag in _COLUMN_FLAGS.items()
               if (c := getattr(args, role)) not in df.columns]
    if missing:
        raise CrowdDataError(f"{args.input}: no column {', '.join(missing)}; its columns are "
                             f"{list(df.columns)}")
    try:
        ann = Annotations.from_frame(df, item=args.item, annotator=args.annotator,
                                     label=args.label, duplicates=args.duplicates)
    except CrowdDataError as exc:
        raise _frame_error(exc, args.input, args) from None
    with Heartbeat(f"fitting {args.method}", disable=args.quiet):
        model = get_label_model(args.method).fit(ann)
    proba = model.predict_proba()
    out = pd.DataFrame({args.item: ann.item_ids, "label": ann.classes[proba.argmax(axis=1)],
                        "probability": proba.max(axis=1),
                        "n_annotations": ann.annotations_per_item(),
                        "tied": model.tied_items_})
    atomic_write_text(args.out, out.to_csv(index=False))
    shown = [c.item() if hasattr(c, "item") else c for c in ann.classes[:10]]
    print(f"read {len(df)} rows: {ann.n_annotations} annotations of {ann.n_items} items by "
          f"{ann.n_annotators} annotators ({ann.n_duplicates} duplicates dropped), "
          f"{ann.n_classes} classes {shown}{' ...' if ann.n_classes > 10 else ''}; "
          f"wrote {len(out)} labels to {args.out}")
    chosen = f" (chose {model.chosen_})" if getattr(model, "chosen_", None) else ""
    print(f"{args.method}{chosen}: {model.n_tied_items_} tied items (the lowest class code "
          "given; column 'tied')")
    if args.annotators:
        atomic_write_text(args.annotators, model.annotator_quality_.to_csv(index=False))
        print(f"wrote the annotator report to {args.annotators}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
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
    demo.add_argument("--items", type=int, default=2000, help="items to simulate")
    demo.add_argument("--annotators", type=int, default=50, help="annotators to simulate")
    demo.add_argument("--classes", type=int, default=4, help="classes")
    demo.add_argument("--per-item", type=int, default=5, help="annotations per item")
    demo.add_argument("--common-noise", choices=["asymmetric", "symmetric"], default=None,
                      help="confusions shared by annotators (default: none): asymmetric or "
                           "symmetric")
    default_methods = _default_methods(available_label_models(aliases=False))
    demo.add_argument("--methods", nargs="*", metavar="NAME",
                      choices=available_label_models(),
                      help=f"label models to compare (default: {' '.join(default_methods)}; "
                           f"{', '.join(SLOW_METHODS)} trains neural networks and runs only "
                           "when named)")
    demo.add_argument("--seed", type=int, default=0, help="random seed of the simulation")
    demo.set_defaults(func=_demo)

    agg = sub.add_parser("aggregate", parents=[common], formatter_class=HelpFormatter,
                         help="aggregate a long CSV of annotations into labels",
                         description="Read a CSV/TSV with one row per annotation (item, "
                                     "annotator, label), fit a label model and write one label "
                                     "per item with its probability. Errors name the line of "
                                     "the file.")
    agg.add_argument("input", help="CSV/TSV file with one row per annotation (.tsv/.tab: tabs)")
    agg.add_argument("--item", default="task", help="column of the item ids")
    agg.add_argument("--annotator", default="worker", help="column of the annotator ids")
    agg.add_argument("--label", default="label", help="column of the labels")
    agg.add_argument("--string-labels", action="store_true",
                     help="read labels as text (e.g. '01' and '1' stay two classes)")
    add_method_option(agg)
    agg.add_argument("--duplicates", choices=["error", "last", "first"], default="error",
                     help="several rows of one annotator on one item: error, or keep the last "
                          "or the first (the others are counted)")
    agg.add_argument("--out", required=True, help="CSV of aggregated labels to write (required)")
    agg.add_argument("--annotators", help="CSV of the annotator quality report to write "
                                          "(default: none)")
    agg.set_defaults(func=_aggregate)

    from . import label_studio

    label_studio.register(sub, parents=[common])
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code: 0 done, 1 failed (bad data or a server
    error: one line on stderr), 2 bad usage (and bad input of ``label-studio aggregate``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run_handler(args.func, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
