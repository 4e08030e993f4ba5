"""IBCC, EBCC and BWA (``crowd_keras.aggregation.bayesian``) against Dawid-Skene and against
their authors' code (``../shared/reference/truth_inference``, imported as a peer).

Part 1, the shared crowd sets: each model's whole fit with its defaults beside the authors'
code with the same settings (their own stopping rules: ours on the objective, ``tol=1e-6``
per annotation; theirs when no posterior moves by 1e-3), the iterations, the accuracy of both
against the gold labels, the share of items whose label differs and the largest difference
of the posteriors (BWA: of the raw scores). EBCC: ours draws its start from the seed and the
item ids, theirs from ``np.random.seed``; the column "same start" gives ours theirs.

Part 2, simulated crowds (``simulate_crowd``: 4 classes, 5 annotations per item, one annotator
per 100 annotations, seed 0) of each ``--sizes``: seconds per EM/VB iteration of ours and of
our Dawid-Skene in the same run (``run_em`` with ``tol=-1``: the mean of the ``--iters``
iterations after the first ``--after``, each timed from its M-step to the next, best of
``--repeat`` runs; records made before ``--after`` existed took the time of ``1 + --iters``
iterations less that of 1), their ratio, and the authors' code per iteration (its loop
stopped after 1 and after ``1 + --iters`` iterations, the difference) at the sizes of
``--reference-sizes``.
EBCC's first iterations carry all ``K·M`` subtypes (its worst case); "whole fit" is the
default fit's time per iteration once dead subtypes are dropped (``--whole-sizes``). The row
"EBCC float32" is ``EBCC(dtype="float32")`` (its posteriors and products in float32)::

    python benchmarks/bayesian.py [--sizes 1000000 10000000] [--iters 5] [--repeat 2]
        [--after 1] [--reference-sizes 1000000] [--whole-sizes 1000000] [--sets ...]

``--after N`` times the iterations after the first N (EBCC once its dead subtypes are
dropped: ``--sets`` with no name skips part 1).
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA  # noqa: E402

from crowd_keras import Annotations  # noqa: E402
from crowd_keras.aggregation import BWA, EBCC, IBCC, DawidSkene  # noqa: E402
from crowd_keras.aggregation.em import Block, run_em  # noqa: E402
from crowd_keras.datasets import load_labelme, load_music, simulate_crowd  # noqa: E402

SETS = ("bluebirds", "dog", "product", "weather_sentiment", "adult_content", "labelme", "music")
PER_ITEM, PER_ANNOTATOR, CLASSES = 5, 100, 4
OURS = {"IBCC": lambda: IBCC(labeling_functions="ignore"),
        "EBCC": lambda: EBCC(labeling_functions="ignore"),
        "BWA": lambda: BWA(labeling_functions="ignore")}
#: part 2 only: EBCC with its (items, subtypes) posteriors and products in float32
SINGLE = {"EBCC float32": lambda: EBCC(labeling_functions="ignore", dtype="float32")}


# ------------------------------------------------------------------ the authors' code
class Reference:
    """The authors' modules, each with an ``np`` whose ``allclose`` can stop the loop after
    a given number of calls (``stop_after``) and counts them (``calls``)."""

    def __init__(self, folder: Path) -> None:
        sys.path.insert(0, str(folder))
        try:
            import bwa
            import ebcc
            import ibcc
        finally:
            sys.path.pop(0)
        self.calls, self.stop_after = 0, None
        patched = types.SimpleNamespace(**{n: getattr(np, n) for n in dir(np)
                                           if not n.startswith("__")})
        patched.allclose = self._allclose
        for module in (ibcc, ebcc, bwa):
            module.np = patched
        self.ibcc, self.ebcc, self.bwa = ibcc.ibcc, ebcc.ebcc_vb, bwa.bwa

    def _allclose(self, a, b, **kwargs) -> bool:
        self.calls += 1
        if self.stop_after is not None:
            return self.calls % self.stop_after == 0
        return bool(np.allclose(a, b, **kwargs))

    def run(self, name: str, tuples: np.ndarray, **kwargs):
        self.calls = 0
        if name == "IBCC":
            return self.ibcc(tuples), self.calls
        if name == "BWA":
            return self.bwa(tuples), self.calls
        return self.ebcc(tuples, **kwargs)[0], self.calls


def tuples_of(ann: Annotations) -> np.ndarray:
    return np.stack([ann.items, ann.annotators, ann.labels], axis=1).astype(np.int64)


def reference_start(ann: Annotations, seed: int = 1234, groups: int = 10) -> np.ndarray:
    vote = ann.label_counts() / ann.annotations_per_item()[:, None]
    np.random.seed(seed)
    return np.random.dirichlet(np.ones(groups), vote.shape) * vote[:, :, None]


# ------------------------------------------------------------------ part 1: shared sets
def load_set(data: Path, name: str):
    if name == "labelme":
        d = load_labelme(data)
        return d.annotations, d.y_train
    if name == "music":
        d = load_music(data)
        return d.annotations, d.y_train
    folder = data / "truth_inference" / name
    answers = pd.read_csv(folder / "answer.csv")
    truth = pd.read_csv(folder / "truth.csv")
    k = int(max(answers["answer"].max(), truth["truth"].max())) + 1
    ann = Annotations.from_frame(answers, item="question", annotator="worker", label="answer",
                                 classes=list(range(k)), duplicates="last")
    y = np.full(ann.n_items, -1)
    known = np.isin(truth["question"], ann.item_ids)
    y[ann.item_index(truth["question"][known])] = truth["truth"][known].to_numpy()
    return ann, y


def accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    known = y >= 0
    return float(np.mean(pred[known] == y[known]))


def part1(data: Path, ref: Reference, names) -> None:
    print("## Part 1: whole fits on the shared sets, defaults, each its own stopping rule\n")
    print("| set | model | ours s | theirs s | theirs / ours | ours iters | theirs iters "
          "| acc ours | acc theirs | labels differ | max abs diff |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        ann, y = load_set(data, name)
        tuples = tuples_of(ann)
        runs = [("IBCC", OURS["IBCC"], {}), ("BWA", OURS["BWA"], {}),
                ("EBCC", OURS["EBCC"], {}),
                ("EBCC same start", lambda: EBCC(init=reference_start(ann),
                                                 labeling_functions="ignore"), {})]
        for label, make, kwargs in runs:
            t = time.perf_counter()
            model = make().fit(ann)
            ours_s = time.perf_counter() - t
            t = time.perf_counter()
            theirs, calls = ref.run(label.split()[0], tuples, **kwargs)
            theirs_s = time.perf_counter() - t
            mine = model.scores_ if label == "BWA" else model.posteriors_
            iters = calls // ann.n_classes if label == "BWA" else calls
            print(f"| {name} | {label} | {ours_s:.3f} | {theirs_s:.3f} | "
                  f"{theirs_s / ours_s:.1f} | {model.n_iter_} | "
                  f"{iters}{' (sum over classes: ' + str(calls) + ')' if label == 'BWA' else ''}"
                  f" | {accuracy(model.predict(), y):.4f} | "
                  f"{accuracy(theirs.argmax(axis=1), y):.4f} | "
                  f"{np.mean(model.predict() != theirs.argmax(axis=1)):.4f} | "
                  f"{np.abs(mine - theirs).max():.1e} |", flush=True)
    print()


# ------------------------------------------------------------------ part 2: per iteration
def simulate(n_annotations: int) -> Annotations:
    return simulate_crowd(n_items=n_annotations // PER_ITEM, n_classes=CLASSES,
                          n_annotators=max(n_annotations // PER_ANNOTATOR, PER_ITEM),
                          annotations_per_item=PER_ITEM, seed=0).annotations


def per_iteration(model, block: Block, summary, iters: int, repeat: int,
                  after: int = 1) -> tuple:
    """Seconds per iteration: the mean of iterations ``after + 1 .. after + iters`` of one
    ``run_em`` (each timed from its M-step to the next; the last to the end of the run), the
    best of ``repeat`` runs; and the last run's state."""
    best, state = np.inf, None
    model.set_params(max_iter=after + iters, tol=-1.0)
    original = model.m_step
    for _ in range(repeat):
        stamps = []

        def m_step(stats, _original=original, _stamps=stamps):
            _stamps.append(time.perf_counter())
            return _original(stats)

        model.m_step = m_step              # the runner's M-step, timed (init_state: the model)
        gc.collect()
        try:
            state = run_em(model, [block], summary).state
        finally:
            del model.m_step
        stamps.append(time.perf_counter())
        best = min(best, float(np.mean(np.diff(stamps)[after:])))
    return best, state


def reference_per_iteration(ref: Reference, name: str, tuples: np.ndarray, iters: int,
                            k: int) -> float:
    """The authors' code's seconds per iteration: its loop stopped after 1 and 1 + iters."""
    times = []
    for n in (1, 1 + iters):
        ref.stop_after = n
        t = time.perf_counter()
        if name == "EBCC":
            ref.ebcc(tuples, max_iter=n)
        else:
            ref.run(name, tuples)
        times.append(time.perf_counter() - t)
    ref.stop_after = None
    return (times[1] - times[0]) / iters


def part2(ref: Reference, sizes, reference_sizes, whole_sizes, iters: int, repeat: int,
          after: int = 1) -> None:
    print(f"## Part 2: seconds per iteration on simulated crowds ({CLASSES} classes, "
          f"{PER_ITEM} per item; {iters} iterations after the first {after}, best of "
          f"{repeat}; EBCC's live subtypes then in brackets)\n")
    print("| annotations | model | ours s/iter | DS s/iter | ours / DS | theirs s/iter "
          "| theirs / ours | whole fit: iters | whole fit s/iter | whole / DS iter |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        ann = simulate(size)
        block = Block.from_annotations(ann)
        summary = block.summary(ann.n_classes)
        ds, _ = per_iteration(DawidSkene(labeling_functions="ignore"), block, summary, iters,
                              repeat, after)
        print(f"| {size:,} | Dawid-Skene | {ds:.4f} | {ds:.4f} | 1.00 | | | | | |", flush=True)
        for name, make in {**OURS, **SINGLE}.items():
            ours, state = per_iteration(make(), block, summary, iters, repeat, after)
            live = f" ({len(state[2])} of {CLASSES * 10})" if name.startswith("EBCC") else ""
            theirs = whole = ""
            if size in reference_sizes and name in OURS:   # theirs: float64 only
                t = reference_per_iteration(ref, name, tuples_of(ann), iters, ann.n_classes)
                theirs = f"{t:.4f} | {t / ours:.1f}"
            else:
                theirs = " | "
            if size in whole_sizes:
                t = time.perf_counter()
                model = make().fit(ann)
                s = (time.perf_counter() - t) / model.n_iter_
                whole = f"{model.n_iter_} | {s:.4f} | {s / ds:.2f}"
            else:
                whole = " | | "
            print(f"| {size:,} | {name}{live} | {ours:.4f} | {ds:.4f} | {ours / ds:.2f} | {theirs} "
                  f"| {whole} |", flush=True)
        del ann, block
        gc.collect()
    print()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--reference", type=Path,
                        default=ROOT.parent / "shared" / "reference" / "truth_inference")
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--sizes", nargs="*", type=int, default=[1_000_000, 10_000_000])
    parser.add_argument("--reference-sizes", nargs="*", type=int, default=[1_000_000])
    parser.add_argument("--whole-sizes", nargs="*", type=int, default=[1_000_000])
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--after", type=int, default=1,
                        help="iterations run before the timed ones (EBCC's subtypes die)")
    args = parser.parse_args(argv)
    if not args.reference.exists():
        print(f"the authors' code is not at {args.reference}", file=sys.stderr)
        return 2
    ref = Reference(args.reference)
    if args.sets:
        part1(args.data, ref, args.sets)
    part2(ref, args.sizes, set(args.reference_sizes), set(args.whole_sizes), args.iters,
          args.repeat, args.after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
