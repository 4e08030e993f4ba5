"""Every registered label model answers as recorded in ``tests/data/label_digests.json``.

The file holds, per (model, shared set), the sha256 of the labels (argmax of
``predict_proba()``) and a weighted-sum checksum of the posteriors
(``benchmarks/label_digests.py`` writes it and says how). A refactor must leave the labels
identical and the posteriors equal up to the reordering of floating-point sums. A change
of a model's answers on purpose regenerates the file with
``python benchmarks/label_digests.py`` in the same commit.
"""
import json
import sys
from pathlib import Path

import pytest

from conftest import require_data

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import label_digests  # noqa: E402

STORED = json.loads(label_digests.DIGESTS.read_text(encoding="utf-8"))
#: models whose fits on all sets take most of a minute here (run with the slow tests)
SLOW = {"auto", "lia"}


@pytest.fixture(scope="module")
def crowd_sets():
    data = require_data()
    return label_digests.label_sets(data)


def test_every_registered_model_is_recorded_or_skipped_with_a_reason():
    recorded = set(STORED["digests"]) | set(STORED["skipped"])
    assert set(label_digests.model_names()) <= recorded


def test_the_digest_detects_a_changed_label_and_a_moved_posterior():
    import numpy as np

    post = np.array([[0.7, 0.3], [0.4, 0.6], [0.5, 0.5]])
    entry = label_digests.fingerprint(post)
    flipped = label_digests.fingerprint(post[:, ::-1])
    nudged = post + np.array([[1e-4, -1e-4], [0, 0], [0, 0]])
    rounding = post + 1e-13
    assert label_digests.differences({"s": entry}, {"s": flipped}) != []
    assert any("posterior" in line for line in
               label_digests.differences({"s": entry}, {"s": label_digests.fingerprint(nudged)}))
    assert label_digests.differences({"s": entry},
                                     {"s": label_digests.fingerprint(rounding)}) == []
    # a float32 fit's tolerance takes float32 rounding on another CPU, not a moved posterior
    float32 = label_digests.fingerprint(post + np.array([[2e-6, -2e-6], [0, 0], [0, 0]]))
    loose = label_digests.posterior_tolerance("lia")
    assert label_digests.differences({"s": entry}, {"s": float32}) != []
    assert label_digests.differences({"s": entry}, {"s": float32}, loose) == []
    moved = label_digests.fingerprint(post + np.array([[1e-2, -1e-2], [0, 0], [0, 0]]))
    assert label_digests.differences({"s": entry}, {"s": moved}, loose) != []


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
    for name in sorted(STORED["digests"])])
def test_labels_and_posteriors_unchanged(name, crowd_sets):
    expected = STORED["digests"][name]
    actual = {set_name: label_digests.fingerprint(label_digests.fit_posteriors(name, ann))
              for set_name, (ann, *_rest) in crowd_sets.items() if set_name in expected}
    assert set(actual) == set(expected), "a recorded shared set did not load"
    assert label_digests.differences(expected, actual,
                                     label_digests.posterior_tolerance(name)) == []
