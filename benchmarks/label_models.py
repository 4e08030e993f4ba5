"""Every label model against majority vote and the peers, on every set in ``../shared/data``.

    python benchmarks/label_models.py            # every model, LIA included (a few minutes)
    python benchmarks/label_models.py --quick    # without LIA

One run, the same annotations for every model: majority vote (ties to the lowest class code,
the library's default, and ties split at random, in expectation), each label model of the
library, ``auto`` (the default) and ``auto`` with ``target_prior="learned"`` (its labels
decided under the chosen model's learned class prior, the default before step 24 of
``results/default_label_model.md``), and the peers: crowd-kit's MajorityVote, DawidSkene and GLAD,
Snorkel's LabelModel (its defaults, ``seed=0``) and the authors' EBCC (one seed,
``empirical_prior=True``) and BWA (``../shared/reference/truth_inference``). Accuracy of the aggregated labels against
the gold labels of the same items (WRENCH sms: F1 of the spam class); crowd answers are the
truth-inference sets, LabelMe and Music; WRENCH sets are Snorkel label matrices. The last
row is the mean over the sets (sms's F1 included).

Items nobody labelled (WRENCH: youtube 180, sms 2,719, trec 242) get the most voted class
from the peers that see only labelled items (crowd-kit, the authors' code), and their own
prior from ours and Snorkel. Our models run as they do for a user, so on the WRENCH label
matrices IBCC, EBCC, BWA (and the others with ``labeling_functions="auto"``) switch to their
labeling-function handling, which the authors' code of the same name does not have: those
columns compare the modes, not the implementations (``bayesian.py`` compares the
implementations, ``labeling_functions="ignore"``). crowd-kit's MajorityVote breaks ties by
its own count order, not the lowest class code: it is not the "majority vote" column.

Duplicated answers (the same worker twice on one item; adult_content has 2,922): every model,
crowd-kit's and Snorkel's included, gets the same annotations with ``duplicates="last"`` (the
latest answer kept, the others counted and dropped), since ``Annotations`` holds one answer
per (item, annotator); the table says how many were dropped.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA  # noqa: E402

from crowd_keras import Annotations  # noqa: E402
from crowd_keras.aggregation import MajorityVote, get_label_model  # noqa: E402
from crowd_keras.datasets import (load_labelme, load_music, load_truth_inference,  # noqa: E402
                                  load_wrench)

CROWD_SETS = ("bluebirds", "product", "dog", "adult_content", "weather_sentiment")
PEERS = ("crowd-kit MV", "crowd-kit DS", "crowd-kit GLAD", "crowd-kit MACE", "Snorkel LabelModel",
         "authors' EBCC", "authors' BWA")
#: the authors' code of EBCC, BWA and IBCC (a peer, imported from beside the checkout)
REFERENCE = ROOT.parent / "shared" / "reference" / "truth_inference"


# ------------------------------------------------------------------ data
def _truth_inference(folder: Path) -> tuple:
    """A truth-inference set, repeated (item, worker) answers reduced to the latest."""
    answers = pd.read_csv(folder / "answer.csv")
    truth = pd.read_csv(folder / "truth.csv")
    if not answers.duplicated(["question", "worker"]).any():
        ann, y = load_truth_inference(folder)
        return ann, y, 0
    items = np.sort(pd.unique(pd.concat([answers["question"], truth["question"]])))
    k = int(max(answers["answer"].max(), truth["truth"].max())) + 1
    ann = Annotations.from_frame(answers, item="question", annotator="worker", label="answer",
                                 classes=list(range(k)), item_ids=list(items),
                                 duplicates="last")
    y = np.full(ann.n_items, -1, dtype=np.int64)
    y[ann.item_index(truth["question"])] = truth["truth"].to_numpy(np.int64)
    return ann, y, ann.n_duplicates


def label_sets(data: Path, names: Optional[list] = None) -> Dict[str, tuple]:
    """name → (Annotations, gold codes aligned with the items, metric, duplicates dropped)."""
    sets = {}
    for name in CROWD_SETS:
        if (data / "truth_inference" / name).exists():
            ann, y, dups = _truth_inference(data / "truth_inference" / name)
            sets[name] = (ann, y, "accuracy", dups)
    lm = load_labelme(data)
    sets["labelme-train"] = (lm.annotations, lm.y_train, "accuracy", 0)
    mu = load_music(data)
    sets["music-train"] = (mu.annotations, mu.y_train, "accuracy", 0)
    for name in ("youtube", "sms", "trec"):
        w = load_wrench(data / "wrench" / name, "train")
        ann = Annotations.from_label_matrix(w.L, cardinality=len(w.classes))
        sets[f"wrench-{name}"] = (ann, w.y, "f1" if name == "sms" else "accuracy", 0)
    return {n: s for n, s in sets.items() if not names or n in names}


def score(pred: np.ndarray, truth: np.ndarray, metric: str) -> float:
    known = truth >= 0
    pred, truth = np.asarray(pred)[known], truth[known]
    if metric == "f1":
        tp = np.sum((pred == 1) & (truth == 1))
        denom = np.sum(pred == 1) + np.sum(truth == 1)
        return float(2 * tp / denom) if denom else 0.0
    return float(np.mean(pred == truth))


# ------------------------------------------------------------------ methods
def ours(name: str, **params) -> Callable:
    def fit(ann: Annotations) -> np.ndarray:
        return get_label_model(name, **params).fit(ann).predict()
    return fit


def majority_vote_expected(ann: Annotations, truth: np.ndarray, metric: str) -> float:
    """Majority vote's score with ties split at random, in expectation (no luck either way)."""
    proba = MajorityVote(tie_break="uniform").fit(ann).predict_proba()
    known = truth >= 0
    if metric == "f1":   # not linear in the picks: the mean F1 of 20 random tie draws
        rng = np.random.default_rng(0)
        top = proba == proba.max(axis=1, keepdims=True)
        return float(np.mean([score(np.argmax(np.where(top, rng.random(top.shape), -1), axis=1),
                                    truth, metric) for _ in range(20)]))
    return float(proba[known][np.arange(known.sum()), truth[known]].mean())


def crowd_label_model(ann: Annotations) -> np.ndarray:
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L = ann.to_label_matrix()
    model = CrowdLabelModel(cardinality=ann.n_classes).fit(L, progress_bar=False)
    return model.predict_proba(L).argmax(axis=1)   # ties: the lowest code, as every row


def crowdkit(name: str) -> Callable:
    def fit(ann: Annotations) -> np.ndarray:
        from crowdkit import aggregation

        labels = getattr(aggregation, name)().fit_predict(ann.to_frame())
        pred = pd.Index(ann.classes).get_indexer(labels.reindex(ann.item_ids))
        # crowd-kit sees only items with answers: the others get the most voted class, as
        # the authors' code's do (scored -1, they counted as wrong: 180 of youtube's items)
        return np.where(pred < 0, int(np.argmax(np.bincount(ann.labels,
                                                            minlength=ann.n_classes))), pred)
    return fit


def authors(name: str, **settings) -> Callable:
    """The authors' code of EBCC, BWA or IBCC (``../shared/reference/truth_inference``, a peer),
    with their settings of the issue's table (EBCC: one seed, ``empirical_prior=True``),
    on the items with labels (codes without gaps, as it needs; an item without labels gets
    the most voted class), ``argmax`` with ties to the lowest class."""
    def fit(ann: Annotations) -> np.ndarray:
        if not REFERENCE.exists():
            raise ImportError(f"the authors' code is not at {REFERENCE}")
        sys.path.insert(0, str(REFERENCE))
        try:
            module = __import__(name)
        finally:
            sys.path.pop(0)
        labelled = np.flatnonzero(ann.annotations_per_item() > 0)
        sub = ann.subset(labelled)
        workers = np.unique(sub.annotators, return_inverse=True)[1]
        tuples = np.stack([sub.items, workers, sub.labels], axis=1).astype(np.int64)
        z = module.ebcc_vb(tuples, **settings)[0] if name == "ebcc" else \
            getattr(module, name)(tuples, **settings)
        pred = np.full(ann.n_items, int(np.argmax(np.bincount(ann.labels,
                                                              minlength=ann.n_classes))))
        pred[labelled] = np.argmax(z, axis=1)
        return pred
    return fit


def snorkel(ann: Annotations) -> np.ndarray:
    from snorkel.labeling.model import LabelModel

    L = ann.to_label_matrix()
    model = LabelModel(cardinality=ann.n_classes, verbose=False)
    model.fit(L, seed=0, progress_bar=False)
    return model.predict_proba(L).argmax(axis=1)


#: columns whose import failed in this process: {label: "ImportError: ..."}
NOT_RUN: Dict[str, str] = {}


def methods(quick: bool) -> Dict[str, Callable]:
    table = {"auto (default)": ours("auto"),
             "auto, learned prior": ours("auto", target_prior="learned"),
             "Dawid-Skene": ours("dawid_skene"),
             "one-coin DS": ours("one_coin_dawid_skene"), "IBCC": ours("ibcc"),
             "EBCC": ours("ebcc"), "BWA": ours("bwa"), "GLAD": ours("glad"),
             "MACE": ours("mace"), "abstain-aware DS": ours("abstain_dawid_skene"),
             "CoNAL (no features)": ours("conal"), "mixture of groups": ours("mixture_of_groups"),
             "CrowdLabelModel (default)": crowd_label_model}
    if not quick:
        table["LIA (no features)"] = ours("lia")
    table.update({"crowd-kit MV": crowdkit("MajorityVote"), "crowd-kit DS": crowdkit("DawidSkene"),
                  "crowd-kit GLAD": crowdkit("GLAD"), "crowd-kit MACE": crowdkit("MACE"),
                  "Snorkel LabelModel": snorkel,
                  "authors' EBCC": authors("ebcc", empirical_prior=True),
                  "authors' BWA": authors("bwa"), "authors' IBCC": authors("ibcc")})
    return table


# ------------------------------------------------------------------ the table
def run(data: Path, quick: bool, names: Optional[list] = None, verbose: bool = True) -> tuple:
    """Scores and fit times: ``({set: {method: score}}, {set: {method: seconds}}, sets)``."""
    sets = label_sets(data, names)
    table = methods(quick)
    scores: Dict[str, Dict[str, float]] = {}
    times: Dict[str, Dict[str, float]] = {}
    for set_name, (ann, truth, metric, _) in sets.items():
        row = scores.setdefault(set_name, {})
        row["majority vote"] = score(MajorityVote().fit(ann).predict(), truth, metric)
        row["majority vote (random ties)"] = majority_vote_expected(ann, truth, metric)
        for label, fn in table.items():
            start = time.perf_counter()
            try:
                pred = fn(ann)
            except ImportError as exc:
                # an optional peer that is not installed: the column is left out, and said so
                if label not in NOT_RUN:
                    NOT_RUN[label] = f"{type(exc).__name__}: {exc}"
                    print(f"  {label}: not run ({NOT_RUN[label]})", file=sys.stderr, flush=True)
                continue
            times.setdefault(set_name, {})[label] = time.perf_counter() - start
            row[label] = score(pred, truth, metric)
            if verbose:
                print(f"  {set_name:18s} {label:28s} {row[label]:.3f}", flush=True)
    return scores, times, sets


def report(scores: dict, times: dict, sets: dict) -> list:
    labels = list(dict.fromkeys(m for row in scores.values() for m in row))
    lines = ["| set | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for name, row in scores.items():
        mv = row["majority vote"]
        unit = " (F1)" if sets[name][2] == "f1" else ""
        lines.append(f"| {name}{unit} | " + " | ".join(
            f"{row[m]:.3f}" if m in row else "n/a" for m in labels) + " |")
        lines.append("| − MV | " + " | ".join(
            f"{row[m] - mv:+.3f}" if m in row else "" for m in labels) + " |")
    lines.append("| mean | " + " | ".join(
        f"{np.mean([row[m] for row in scores.values()]):.3f}"
        if all(m in row for row in scores.values()) else "n/a" for m in labels) + " |")
    auto = "auto (default)"
    worst = min(row[auto] - max(row["majority vote"], row["majority vote (random ties)"])
                for row in scores.values())
    near, below = [], []
    for name, row in scores.items():
        peers = [row[p] for p in PEERS if p in row]
        if peers and row[auto] >= max(peers) - 0.005:
            near.append(name)
        if row[auto] < max(row["majority vote"], row["majority vote (random ties)"]):
            below.append(name)
    dups = {n: s[3] for n, s in sets.items() if s[3]}
    lines += ["", f"Worst auto − majority vote over all sets (the better of the two tie rules): "
                  f"{worst:+.3f}; auto below majority vote on: {below or 'none'}.",
              f"auto within 0.005 of the best of {', '.join(PEERS)}: {len(near)} of "
              f"{len(scores)} sets" + (f" (not on {sorted(set(scores) - set(near))})"
                                       if len(near) < len(scores) else "") + ".",
              "Duplicated (item, annotator) answers: the latest kept for every model"
              + ("".join(f"; {n}: {d} dropped" for n, d in dups.items()) if dups else "; none")
              + "."]
    lines += [f"Not run (import failed): {label} ({why})." for label, why in NOT_RUN.items()]
    ds = {n: t["Dawid-Skene"] for n, t in times.items() if "Dawid-Skene" in t}
    if ds:
        ratios = [times[n][auto] / ds[n] for n in ds if auto in times[n]]
        lines.append(f"auto fit time / Dawid-Skene fit time on these sets: "
                     f"{min(ratios):.0f}× to {max(ratios):.0f}× (small sets: the held-out "
                     "passes dominate; at 10M annotations see benchmarks/scaling.py).")
    return lines


def gold_curve(data: Path, sizes=(0, 10, 20, 50, 100, 200), names: Optional[list] = None,
               draws: int = 3) -> list:
    """Accuracy of the default on the items without gold, against the number of gold items
    given (``fit(ann, gold=...)``), ``draws`` random gold draws per size (sizes above half of
    a set's gold items: n/a): markdown lines."""
    sets = label_sets(data, names)
    lines = ["| set | " + " | ".join(f"{n} gold" for n in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for set_name, (ann, truth, metric, _) in sets.items():
        known = np.flatnonzero(truth >= 0)
        if metric != "accuracy":
            continue
        cells = []
        for n in sizes:
            if 2 * n > len(known):     # keep at least half of the gold items to score on
                cells.append("n/a")
                continue
            accs = []
            for draw in range(draws if n else 1):
                rng = np.random.default_rng(draw)
                gold = np.full(ann.n_items, -1, dtype=np.int64)
                chosen = rng.choice(known, n, replace=False) if n else np.zeros(0, int)
                gold[chosen] = truth[chosen]
                model = get_label_model("auto")
                model = model.fit(ann, gold=gold) if n else model.fit(ann)
                rest = (truth >= 0) & (gold < 0)
                accs.append(float((model.predict()[rest] == truth[rest]).mean()))
            cells.append(f"{np.mean(accs):.3f}")
        lines.append(f"| {set_name} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--quick", action="store_true", help="skip LIA (Keras training)")
    parser.add_argument("--sets", nargs="*", help="only these sets")
    parser.add_argument("--gold-curve", action="store_true",
                        help="the default's accuracy against the number of gold items instead")
    args = parser.parse_args(argv)
    if args.gold_curve:
        print("\n## The default with gold items (accuracy on the items without gold)\n")
        print("\n".join(gold_curve(args.data, names=args.sets)))
        return 0
    scores, times, sets = run(args.data, args.quick, args.sets)
    print("\n## Label models on the shared sets (accuracy; WRENCH sms: F1 of the spam class)\n")
    print("\n".join(report(scores, times, sets)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
