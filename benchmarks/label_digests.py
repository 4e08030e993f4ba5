"""Digests of every registered label model's labels on every shared crowd set.

    python benchmarks/label_digests.py             # rewrite tests/data/label_digests.json
    python benchmarks/label_digests.py --check     # compare with it; exit 1 on a difference
    python benchmarks/label_digests.py --time      # also print each fit's wall time
    python benchmarks/label_digests.py --models glad   # rewrite these models' entries only

A refactor of a label model must leave what it answers unchanged. For each (model, set) the
file keeps the sha256 of the labels (argmax of ``predict_proba()``, int64 little-endian: a
refactor must leave them identical) and a posterior checksum: three sums ``Σ_ik P_ik W_ik``
with fixed pseudo-random weights ``W`` in [0, 1) (seeded by the set's shape), rounded to 1e-9.
The checksums are compared with an absolute tolerance (:data:`POSTERIOR_ATOL`): a
reordering of floating-point sums moves a posterior by about 1e-12 and the checksum by at most
that times the number of entries, while a change of the model moves it by far more. Models
that fit in float32 (:data:`FLOAT32_MODELS`) get :data:`FLOAT32_POSTERIOR_ATOL`: numpy's
float32 kernels round differently on another CPU (its vector width), which moves their
checksums by about 1e-6. Nothing of the data itself is stored.

Every model runs with its default settings. Models that need item features, or that take
longer than :data:`MAX_SECONDS` on a set, are listed under ``"skipped"`` with the reason. The
sets are those of ``benchmarks/label_models.py`` (the five truth-inference sets, LabelMe and
Music train, WRENCH youtube, sms and trec train as label matrices).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
from benchmarks.common import DATA  # noqa: E402

from benchmarks.label_models import label_sets  # noqa: E402
from crowd_keras.aggregation import available_label_models, get_label_model  # noqa: E402

#: the digests file the test compares with
DIGESTS = ROOT / "tests" / "data" / "label_digests.json"
#: a (model, set) fit slower than this is skipped (the test must stay short)
MAX_SECONDS = 30.0
#: models that cannot run from annotations alone (they need item features)
NEEDS_FEATURES: tuple = ()
#: tolerance of the posterior checksums
POSTERIOR_ATOL = 1e-6
#: models whose fits run in float32 (LIA's EM, as Keras trains it) and their tolerance
FLOAT32_MODELS = frozenset({"lia"})
FLOAT32_POSTERIOR_ATOL = 1e-4
#: number of weighted sums in a posterior checksum
N_SUMS = 3


def label_digest(labels: np.ndarray) -> str:
    """sha256 of the (items,) class codes as int64 little-endian."""
    return hashlib.sha256(np.asarray(labels, dtype="<i8").tobytes()).hexdigest()


def posterior_checksum(post: np.ndarray) -> list:
    """:data:`N_SUMS` weighted sums of the (items, K) posteriors (see the module docstring)."""
    post = np.asarray(post, dtype=np.float64)
    rng = np.random.default_rng(list(post.shape))
    weights = rng.random((N_SUMS,) + post.shape)
    return [round(float((post * w).sum()), 9) for w in weights]


def fingerprint(post: np.ndarray) -> dict:
    """The stored entry of one fit: label digest, posterior checksum, number of items."""
    return {"labels": label_digest(np.argmax(post, axis=1)),
            "posteriors": posterior_checksum(post), "items": int(post.shape[0])}


def model_names() -> list:
    """Every registered label model, one name per model, in registration order."""
    return available_label_models(aliases=False)


def fit_posteriors(name: str, ann) -> np.ndarray:
    """``predict_proba()`` of model ``name`` (default settings) fitted on ``ann``."""
    return get_label_model(name).fit(ann).predict_proba()


def compute(data: Path = DATA, models: Optional[Iterable[str]] = None,
            sets: Optional[Iterable[str]] = None, show_time: bool = False,
            max_seconds: float = MAX_SECONDS) -> dict:
    """``{"digests": {model: {set: entry}}, "skipped": {model: reason}}``."""
    crowd_sets = label_sets(data, list(sets) if sets else None)
    digests: Dict[str, dict] = {}
    skipped: Dict[str, str] = {}
    for name in models or model_names():
        if name in NEEDS_FEATURES:
            skipped[name] = "needs item features"
            continue
        entries = {}
        for set_name, (ann, *_rest) in crowd_sets.items():
            start = time.perf_counter()
            post = fit_posteriors(name, ann)
            seconds = time.perf_counter() - start
            if show_time:
                print(f"{name:24s} {set_name:20s} {seconds:8.2f} s", flush=True)
            if seconds > max_seconds:
                skipped[name] = f"slower than {max_seconds:g} s on {set_name}"
                break
            entries[set_name] = fingerprint(post)
        else:
            digests[name] = entries
    return {"digests": digests, "skipped": skipped}


def posterior_tolerance(name: str) -> float:
    """The checksum tolerance of the model ``name`` (float32 fits: a looser one)."""
    return FLOAT32_POSTERIOR_ATOL if name in FLOAT32_MODELS else POSTERIOR_ATOL


def differences(expected: dict, actual: dict, atol: float = POSTERIOR_ATOL) -> list:
    """Human-readable differences between two digest entries ``{set: entry}``, the
    posterior checksums within ``atol``."""
    out = []
    for set_name, want in expected.items():
        got = actual.get(set_name)
        if got is None:
            out.append(f"{set_name}: not computed")
            continue
        if got["items"] != want["items"]:
            out.append(f"{set_name}: {got['items']} items, expected {want['items']}")
        if got["labels"] != want["labels"]:
            out.append(f"{set_name}: labels differ")
        gap = np.max(np.abs(np.subtract(got["posteriors"], want["posteriors"])))
        if not gap <= atol:
            out.append(f"{set_name}: posterior checksum moved by {gap:.3g} "
                       f"(tolerance {atol:g})")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the stored file")
    parser.add_argument("--time", action="store_true", help="print each fit's wall time")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--models", nargs="*", help="only these models")
    args = parser.parse_args(argv)
    result = compute(args.data, args.models, show_time=args.time)
    if args.check:
        stored = json.loads(DIGESTS.read_text(encoding="utf-8"))["digests"]
        problems = [f"{name} {line}" for name, entries in result["digests"].items()
                    for line in differences(stored.get(name, {}), entries,
                                                     posterior_tolerance(name))]
        print("\n".join(problems) or "all labels and posterior checksums unchanged")
        return 1 if problems else 0
    if args.models and DIGESTS.exists():   # only these models' entries are rewritten
        stored = json.loads(DIGESTS.read_text(encoding="utf-8"))
        for key in ("digests", "skipped"):
            for name in args.models:
                stored[key].pop(name, None)
            stored[key].update(result[key])
        result = stored
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    DIGESTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {DIGESTS}: {sum(map(len, result['digests'].values()))} digests, "
          f"skipped {sorted(result['skipped'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
