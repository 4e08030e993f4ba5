"""Inter-annotator agreement at scale: Krippendorff's alpha and every pairwise Cohen's kappa
on a simulated crowd, beside the ``krippendorff`` package on the same data, in one run.

    python benchmarks/agreement.py [--annotations 10000000] [--annotators 10000]
                                   [--per-item 5] [--classes 4] [--quick]

The crowd: ``annotations / per-item`` items, each labelled by ``per-item`` distinct
annotators drawn uniformly from ``annotators`` (``crowd_keras.datasets.simulate_crowd``).
Rows:

* alpha (nominal, ordinal, interval) with ``crowd_keras.agreement.krippendorff_alpha`` and
  with ``krippendorff.alpha(value_counts=...)`` (the package's fastest entry point: it is
  handed the item × class counts, whose construction is timed apart, as it would have to be
  done by a caller); the ratio is the package's time over ours, on the same counts' data;
* ``krippendorff.alpha(reliability_data=...)``, the package's documented input (a dense
  annotators × items matrix with NaN for missing), at the largest size that fits here
  (``--dense-annotations``), beside ours on that same crowd;
* ``pairwise_kappas``: Cohen's kappa of every pair of annotators sharing an item (sparse
  products, memory for the overlapping pairs only), with the number of pairs, and scikit-learn's
  ``cohen_kappa_score`` over a sample of those pairs (extrapolated to all of them: a loop
  over millions of pairs is not run);
* Fleiss' kappa, and the per-annotator table.

Peak memory is the process' resident peak after each step (``ru_maxrss``).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras.agreement import (annotator_agreement, fleiss_kappa,  # noqa: E402
                                   krippendorff_alpha, pairwise_kappas)
from crowd_keras.datasets import simulate_crowd  # noqa: E402

try:
    import krippendorff
except ImportError:   # the peer is optional (test extra)
    krippendorff = None


def rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def crowd(annotations: int, annotators: int, per_item: int, classes: int, seed: int):
    sim = simulate_crowd(n_items=annotations // per_item, n_classes=classes,
                         n_annotators=annotators, annotations_per_item=per_item,
                         annotator_accuracy=(0.4, 0.9), n_features=2, seed=seed)
    return sim.annotations


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=None, help="unused (the crowd is simulated)")
    p.add_argument("--annotations", type=int, default=10_000_000)
    p.add_argument("--annotators", type=int, default=10_000)
    p.add_argument("--per-item", type=int, default=5)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--dense-annotations", type=int, default=200_000,
                   help="size of the crowd for the package's dense reliability_data input")
    p.add_argument("--dense-annotators", type=int, default=1_000)
    p.add_argument("--kappa-sample", type=int, default=2_000,
                   help="pairs scored by scikit-learn to extrapolate its time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="1M annotations, 1,000 annotators")
    args = p.parse_args(argv)
    if args.quick:
        args.annotations, args.annotators = 1_000_000, 1_000
        args.dense_annotations, args.dense_annotators, args.kappa_sample = 50_000, 200, 500

    t_sim, ann = timed(lambda: crowd(args.annotations, args.annotators, args.per_item,
                                     args.classes, args.seed))
    print(f"crowd: {ann.n_annotations:,} annotations, {ann.n_items:,} items, "
          f"{ann.n_annotators:,} annotators, {ann.n_classes} classes, {args.per_item} per item "
          f"(simulated in {t_sim:.1f} s); {os.cpu_count()} CPU cores, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, load average at start "
          f"{os.getloadavg()[0]:.1f} (other processes share the cores)\n")
    print("| step | crowd-keras | krippendorff package | package / crowd-keras | value "
          "(ours; package) | peak RSS |")
    print("|---|---:|---:|---:|---|---:|")
    t_counts, counts = timed(ann.label_counts)
    print(f"| item × class counts (the package's input) | {t_counts:.2f} s | | | | "
          f"{rss_gib():.1f} GiB |")
    for level in ("nominal", "ordinal", "interval"):
        # nominal first, on a copy without cached views (it pays for its counts)
        fresh = ann.select(np.ones(ann.n_annotations, bool)) if level == "nominal" else ann
        t_ours, ours = timed(lambda: krippendorff_alpha(fresh, level))
        if krippendorff is not None:
            domain = np.asarray(ann.classes, float) if level == "interval" else None
            t_pkg, theirs = timed(lambda: krippendorff.alpha(
                value_counts=counts, value_domain=domain, level_of_measurement=level))
            ratio = f"{t_pkg / t_ours:.1f}x"
            pkg = f"{t_pkg:.2f} s"
            val = f"{ours:.6f}; {theirs:.6f}"
        else:
            ratio, pkg, val = "n/a", "n/a", f"{ours:.6f}"
        print(f"| alpha, {level} (value_counts) | {t_ours:.2f} s | {pkg} | {ratio} | {val} | "
              f"{rss_gib():.1f} GiB |")
        if level == "nominal":
            del fresh

    # the package's documented input: the dense annotators × items matrix
    small = crowd(args.dense_annotations, args.dense_annotators, args.per_item, args.classes,
                  args.seed + 1)
    t_ours, ours = timed(lambda: krippendorff_alpha(small))
    if krippendorff is not None:
        dense = small.to_dense().T.astype(np.float64)
        dense[dense < 0] = np.nan
        t_pkg, theirs = timed(lambda: krippendorff.alpha(reliability_data=dense,
                                                         level_of_measurement="nominal"))
        print(f"| alpha, nominal, {small.n_annotations:,} annotations × "
              f"{small.n_annotators:,} annotators (reliability_data, dense "
              f"{dense.nbytes / 2 ** 20:.0f} MiB) | {t_ours:.3f} s | {t_pkg:.2f} s | "
              f"{t_pkg / t_ours:.0f}x | {ours:.6f}; {theirs:.6f} | {rss_gib():.1f} GiB |")
        del dense

    t_pairs, pairs = timed(lambda: pairwise_kappas(ann))
    print(f"| Cohen's kappa of all {len(pairs):,} overlapping pairs (of "
          f"{ann.n_annotators * (ann.n_annotators - 1) // 2:,}) | {t_pairs:.1f} s | | | "
          f"mean {np.nanmean(pairs['kappa']):.4f} | {rss_gib():.1f} GiB |")
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError:
        cohen_kappa_score = None
    if cohen_kappa_score is not None:
        rng = np.random.default_rng(args.seed)
        pick = rng.choice(len(pairs), min(args.kappa_sample, len(pairs)), replace=False)
        codes = ann.annotator_index(pairs["annotator_a"].to_numpy()[pick]), \
            ann.annotator_index(pairs["annotator_b"].to_numpy()[pick])
        # each annotator's (item -> label) as sorted arrays: the peer only scores the pairs
        order = np.lexsort((ann.items, ann.annotators))
        starts = np.searchsorted(ann.annotators[order], np.arange(ann.n_annotators + 1))

        def labels_of(a):
            rows = order[starts[a]:starts[a + 1]]
            return ann.items[rows], ann.labels[rows]

        start = time.perf_counter()
        worst = 0.0
        for a, b, want in zip(*codes, pairs["kappa"].to_numpy()[pick]):
            ia, la = labels_of(a)
            ib, lb = labels_of(b)
            _, pa, pb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
            with warnings.catch_warnings():    # pairs with one label in common: NaN, warned
                warnings.simplefilter("ignore")
                k = cohen_kappa_score(la[pa], lb[pb], labels=np.arange(ann.n_classes))
            if np.isfinite(k) and np.isfinite(want):
                worst = max(worst, abs(k - want))
        per_pair = (time.perf_counter() - start) / len(pick)
        total = per_pair * len(pairs)
        print(f"| scikit-learn cohen_kappa_score, {len(pick):,} sampled pairs "
              f"(common items found with numpy) | | {per_pair * 1e3:.2f} ms per pair; "
              f"all pairs ≈ {total / 60:.0f} min (extrapolated) | ≈ {total / t_pairs:.0f}x | "
              f"max |Δκ| {worst:.1e} | |")
    t_fleiss, fk = timed(lambda: fleiss_kappa(ann))
    print(f"| Fleiss' kappa | {t_fleiss:.2f} s | | | {fk:.6f} | {rss_gib():.1f} GiB |")
    t_ann, table = timed(lambda: annotator_agreement(ann, pairs))
    print(f"| per-annotator agreement and kappa with the rest | {t_ann:.2f} s | | | "
          f"median kappa {np.nanmedian(table['kappa']):.4f} | {rss_gib():.1f} GiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
