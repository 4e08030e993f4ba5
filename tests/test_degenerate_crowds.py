"""Degenerate and extreme crowds, for every registered label model that reads annotations
alone: the posteriors stay probabilities, ``predict`` is their argmax, a refused input is a
CrowdDataError, and the quality functions answer on the fitted model."""
import warnings

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import get_label_model

# the models of the registry that need neither item features nor a Keras network
MODELS = ["majority_vote", "tie_broken_vote", "calibrated_vote", "dawid_skene", "one_coin",
          "abstain_dawid_skene", "glad", "mace", "ibcc", "ebcc", "bwa", "auto"]
GOLD_MODELS = [name for name in MODELS if get_label_model(name).accepts_gold]


def _crowd(items, annotators, labels, **sizes):
    return Annotations(np.asarray(items), np.asarray(annotators), np.asarray(labels), **sizes)


def _crowds():
    """Small degenerate crowds (name -> Annotations)."""
    rng = np.random.default_rng(0)
    n = 12
    truth = rng.integers(0, 3, n)
    coin = rng.integers(0, 2, n)
    return {
        "one_class": _crowd(np.repeat(np.arange(n), 3), np.tile(np.arange(3), n),
                            np.zeros(3 * n, int)),
        "unused_class": _crowd(np.repeat(np.arange(n), 3), np.tile(np.arange(3), n),
                               coin.repeat(3), n_classes=3),
        "single_annotator": _crowd(np.arange(n), np.zeros(n, int), truth, n_classes=3),
        "always_disagree": _crowd(np.repeat(np.arange(n), 2), np.tile([0, 1], n),
                                  np.stack([coin, 1 - coin], 1).ravel()),
        "permuting_majority": _crowd(np.repeat(np.arange(n), 3), np.tile(np.arange(3), n),
                                     np.stack([truth, (truth + 1) % 3, (truth + 1) % 3],
                                              1).ravel()),
        "spammers": _crowd(np.repeat(np.arange(n), 4), np.tile(np.arange(4), n),
                           rng.integers(0, 3, 4 * n)),
        "one_label_each": _crowd(np.arange(n), np.arange(n) % 5, truth, n_annotators=5,
                                 n_classes=3),
        "one_item": _crowd([0, 0, 0], [0, 1, 2], [0, 1, 1]),
        "one_annotation": _crowd([0], [0], [1], n_classes=2),
        "unannotated_items": _crowd([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1], n_items=4,
                                    n_annotators=3, n_classes=3),
    }


CROWDS = _crowds()


def _fit(name, ann, **kwargs):
    """Fit ``name`` with its defaults (``random_state=0`` where it takes one)."""
    model = get_label_model(name)
    if "random_state" in model.get_params():
        model.set_params(random_state=0)
    return model.fit(ann, **kwargs)


@pytest.mark.parametrize("crowd", sorted(CROWDS))
@pytest.mark.parametrize("name", MODELS)
def test_degenerate_crowd_posteriors_are_probabilities(name, crowd):
    ann = CROWDS[crowd]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # divide by zero, invalid value, overflow
        try:
            model = _fit(name, ann)
        except ValueError as err:     # CrowdDataError is a ValueError: a refusal names its cause
            assert type(err).__name__ == "CrowdDataError", err
            return
        proba = model.predict_proba()
        assert proba.shape == (ann.n_items, ann.n_classes)
        assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(model.predict(), proba.argmax(axis=1))
        matrices = getattr(model, "confusion_matrices_", None)
        if matrices is not None:
            assert np.isfinite(matrices).all() and (matrices >= 0).all() and (matrices <= 1).all()
        for quality in (model.consensus_quality(), model.annotation_quality()):
            assert np.isfinite(quality).all()
            assert (quality >= 0).all() and (quality <= 1 + 1e-9).all()
        model.label_issues()
        model.next_to_label(5)
    np.testing.assert_array_equal(_fit(name, ann).predict_proba(), proba)


@pytest.mark.parametrize("name", GOLD_MODELS)
def test_boolean_gold_is_read_as_the_boolean_labels_are(name):
    # the readers read the labels True/False as the classes 1/0: a gold True is class 1, not
    # an unknown class
    frame = pd.DataFrame({"task": [0, 0, 1, 1, 2, 2, 3, 3],
                          "worker": ["a", "b"] * 4,
                          "label": [True, False, True, True, False, False, False, True]})
    model = _fit(name, frame, gold={0: False, 3: np.bool_(True)})
    assert model.annotations_.classes.tolist() == [0, 1]
    np.testing.assert_array_equal(model.predict_proba()[[0, 3]], [[1.0, 0.0], [0.0, 1.0]])


def test_cli_boolean_gold_file_is_read_as_the_boolean_labels_are(tmp_path):
    from crowd_keras.cli import main

    answers, gold, out = tmp_path / "answers.csv", tmp_path / "gold.csv", tmp_path / "labels.csv"
    answers.write_text("task,worker,label\n1,a,True\n1,b,False\n2,a,True\n2,b,True\n"
                       "3,a,False\n3,b,False\n")
    gold.write_text("task,label\n1,False\n")
    assert main(["aggregate", str(answers), "--method", "dawid_skene", "--gold", str(gold),
                 "--out", str(out)]) == 0
    labels = pd.read_csv(out).set_index("task")
    # the gold item (a tie in the answers) is held at its class: False, read as class 0 like
    # the answers' False
    assert labels.loc[1, "label"] == 0 and labels.loc[1, "probability"] == 1.0
