"""The ``crowd-keras`` command line.

``crowd-keras demo`` simulates a crowd with known truth, fits the label models and prints
their accuracy; ``crowd-keras aggregate`` turns a long CSV of annotations into labels and an
annotator report; ``crowd-keras label-studio ...`` works on Label Studio exports (when that
integration is installed). Heavy libraries (Keras, TensorFlow) are never imported here.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Optional, Sequence

import numpy as np

from ..aggregation.registry import DEFAULT_LABEL_MODEL, available_label_models
from ..errors import CrowdDataError
from ..files import atomic_write_text

__all__ = ["main", "build_parser", "atomic_write_text"]


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


def _default_methods(available: Sequence[str]) -> list:
    # LIA trains neural networks (seconds to minutes): run it when named with --methods
    slow = {"lia"}
    return [m for m in available if m not in slow]


def _aggregate(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..aggregation import get_label_model
    from ..annotations import Annotations

    sep = "\t" if str(args.input).endswith((".tsv", ".tab")) else ","
    try:
        df = pd.read_csv(args.input, sep=sep, dtype={args.label: str} if args.string_labels else None)
    except (OSError, ValueError) as exc:
        raise CrowdDataError(f"cannot read {args.input}: {exc}") from None
    ann = Annotations.from_frame(df, item=args.item, annotator=args.annotator, label=args.label,
                                 duplicates=args.duplicates)
    model = get_label_model(args.method).fit(ann)
    proba = model.predict_proba()
    out = pd.DataFrame({args.item: ann.item_ids, "label": ann.classes[proba.argmax(axis=1)],
                        "probability": proba.max(axis=1),
                        "n_annotations": ann.annotations_per_item()})
    atomic_write_text(args.out, out.to_csv(index=False))
    print(f"read {len(df)} rows: {ann.n_annotations} annotations of {ann.n_items} items by "
          f"{ann.n_annotators} annotators ({ann.n_duplicates} duplicates dropped); "
          f"wrote {len(out)} labels to {args.out}")
    if args.annotators:
        atomic_write_text(args.annotators, model.annotator_quality_.to_csv(index=False))
        print(f"wrote the annotator report to {args.annotators}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crowd-keras", description=__doc__.split("\n\n")[0])
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"crowd-keras {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="simulate a crowd and compare the label models")
    demo.add_argument("--items", type=int, default=2000)
    demo.add_argument("--annotators", type=int, default=50)
    demo.add_argument("--classes", type=int, default=4)
    demo.add_argument("--per-item", type=int, default=5, help="annotations per item")
    demo.add_argument("--common-noise", choices=["asymmetric", "symmetric"], default=None)
    demo.add_argument("--methods", nargs="*", help="label models to compare (default: all)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_demo)

    agg = sub.add_parser("aggregate", help="aggregate a long CSV of annotations into labels")
    agg.add_argument("input", help="CSV/TSV with one row per annotation")
    agg.add_argument("--item", default="task")
    agg.add_argument("--annotator", default="worker")
    agg.add_argument("--label", default="label")
    agg.add_argument("--string-labels", action="store_true", help="read labels as text")
    agg.add_argument("--method", default=DEFAULT_LABEL_MODEL, choices=available_label_models())
    agg.add_argument("--duplicates", choices=["error", "last", "first"], default="error")
    agg.add_argument("--out", required=True, help="CSV of aggregated labels")
    agg.add_argument("--annotators", help="CSV of the annotator quality report")
    agg.set_defaults(func=_aggregate)

    from . import label_studio

    label_studio.register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CrowdDataError as exc:
        print(f"crowd-keras: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
