"""sha256 digests of the sequence label models' decoded labels, on fixed fits.

Each case fits one model on the simulated crowd of :mod:`sequence_data` or on a PICO slice
and records the digest of its decoded tags (``predict()``, as int64) and its number of EM
iterations. ``tests/data/sequence_label_digests.json`` holds the values recorded before the
models moved onto the EM-step protocol; ``tests/test_sequence_em_protocol.py`` checks that
every case still gives them, so a change that alters any label fails.

Rewrite the record (only when a change of labels is intended, and say why in the commit)::

    PYTHONPATH=. python tests/sequence_label_digests.py [--pico /work/shared/data/pico]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from crowd_keras.sequences.hmm import HMMCrowd  # noqa: E402
from crowd_keras.sequences.models import TokenDawidSkene  # noqa: E402
from crowd_keras.sequences.text_prior import WindowPriorDawidSkene  # noqa: E402
from sequence_data import simulated_spans  # noqa: E402

RECORD = Path(__file__).parent / "data" / "sequence_label_digests.json"


def digest(labels: np.ndarray) -> str:
    """sha256 of the (T,) labels as contiguous little-endian int64."""
    return hashlib.sha256(np.ascontiguousarray(labels, dtype="<i8").tobytes()).hexdigest()


def _simulated(scheme: str) -> Any:
    return simulated_spans(n_docs=80, seed=1, scheme=scheme)[0]


def _text_prior(seq: Any) -> np.ndarray:
    """A fixed (T, K) token prior with NaN rows (tokens without one): a deterministic stand-in
    for a tagger's output."""
    rng = np.random.default_rng(5)
    q = rng.dirichlet(np.ones(seq.n_tags), size=seq.n_tokens)
    q[rng.random(seq.n_tokens) < 0.3] = np.nan
    return q


def _pico(root: Path, split: str, scheme: str) -> Any:
    """One split of PICO, or all four (``"all"``)."""
    from crowd_keras.datasets import PICO_SPLITS, load_pico
    splits = PICO_SPLITS if split == "all" else (split,)
    return load_pico(root, splits=splits, scheme=scheme).sequences


#: name -> (data: "simulated" or "pico", scheme, split, model factory, uses a token prior)
CASES: Dict[str, Tuple[str, str, str, Callable[[], Any], bool]] = {
    "sim-IO/token_ds": ("simulated", "IO", "", lambda: TokenDawidSkene(progress=False), False),
    "sim-IO/token_ds_tempered": ("simulated", "IO", "", lambda: TokenDawidSkene(
        prior_strength=1.0, temperature=0.5, progress=False), False),
    "sim-IO/token_ds_token_prior": ("simulated", "IO", "", lambda: TokenDawidSkene(
        progress=False), True),
    "sim-IO/window_prior_ds": ("simulated", "IO", "", lambda: WindowPriorDawidSkene(), False),
    "sim-IO/hmm": ("simulated", "IO", "", lambda: HMMCrowd(progress=False), False),
    "sim-BIO/token_ds": ("simulated", "BIO", "", lambda: TokenDawidSkene(progress=False), False),
    "sim-BIO/hmm": ("simulated", "BIO", "", lambda: HMMCrowd(progress=False), False),
    "sim-BIO/hmm_viterbi": ("simulated", "BIO", "", lambda: HMMCrowd(
        decode="viterbi", progress=False), False),
    "sim-BIO/hmm_unconstrained": ("simulated", "BIO", "", lambda: HMMCrowd(
        constrain_bio=False, prior_strength=0.0, progress=False), False),
    "pico-acl17-IO/token_ds": ("pico", "IO", "acl17-test", lambda: TokenDawidSkene(
        progress=False), False),
    "pico-acl17-BIO/token_ds": ("pico", "BIO", "acl17-test", lambda: TokenDawidSkene(
        progress=False), False),
    "pico-acl17-BIO/hmm": ("pico", "BIO", "acl17-test", lambda: HMMCrowd(progress=False), False),
    "pico-acl17-BIO/hmm_viterbi": ("pico", "BIO", "acl17-test", lambda: HMMCrowd(
        decode="viterbi", progress=False), False),
    "pico-dev-IO/token_ds": ("pico", "IO", "dev", lambda: TokenDawidSkene(progress=False),
                             False),
    "pico-dev-BIO/hmm": ("pico", "BIO", "dev", lambda: HMMCrowd(progress=False), False),
    "pico-all-IO/token_ds": ("pico", "IO", "all", lambda: TokenDawidSkene(progress=False),
                             False),
}

#: the cases that take more than a few seconds (marked slow in the test)
SLOW = ("pico-acl17-BIO/hmm_viterbi", "pico-dev-BIO/hmm", "pico-all-IO/token_ds")


def sequences_of(name: str, pico_root: Any = None) -> Any:
    data, scheme, split, _, _ = CASES[name]
    return _simulated(scheme) if data == "simulated" else _pico(pico_root, split, scheme)


def run_case(name: str, pico_root: Any = None) -> dict:
    """``{"labels": digest, "n_iter": iterations}`` of one case."""
    _, _, _, make, with_prior = CASES[name]
    seq = sequences_of(name, pico_root)
    kwargs = {"token_prior": _text_prior(seq)} if with_prior else {}
    model = make().fit(seq, **kwargs)
    return {"labels": digest(model.predict()), "n_iter": int(model.n_iter_)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pico", default=str(Path(__file__).resolve().parents[2] / "shared"
                                              / "data" / "pico"))
    args = parser.parse_args()
    record = {name: run_case(name, Path(args.pico)) for name in CASES}
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(record)} digests to {RECORD}")


if __name__ == "__main__":
    main()
