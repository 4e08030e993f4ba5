"""AutoLabelModel(target_prior=...) keyed by class (a pandas Series or a dict) is read by its
keys: a Series was read by position, so one written in another order than the annotations'
classes silently decided the labels for another class mix."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import AutoLabelModel, DawidSkene
from crowd_keras.datasets import simulate_failure_kind

NAMES = np.array(["cat", "dog", "eel"])


@pytest.fixture(scope="module")
def ann():
    a = simulate_failure_kind("skewed_prolific", seed=0, scale=0.02).annotations
    return Annotations.from_frame(pd.DataFrame({
        "task": a.item_ids[a.items], "worker": a.annotator_ids[a.annotators],
        "label": NAMES[a.labels]}))


def fit(ann, target):
    # one candidate whose posteriors carry a class prior, so the target applies
    return AutoLabelModel(candidates=[("ds", DawidSkene())], target_prior=target,
                          max_repeats=1).fit(ann)


def test_a_target_keyed_by_class_is_read_by_key(ann):
    assert list(ann.classes) == list(NAMES)
    vector = fit(ann, [0.6, 0.3, 0.1])
    assert vector.target_prior_applied_
    for keyed in (pd.Series({"eel": 0.1, "dog": 0.3, "cat": 0.6}),
                  {"dog": 0.3, "eel": 0.1, "cat": 0.6}):
        model = fit(ann, keyed)
        assert np.allclose(model.target_prior_, [0.6, 0.3, 0.1])
        assert np.allclose(model.posteriors_, vector.posteriors_)
    # a Series of the default index is a vector, read by position as before
    assert np.allclose(fit(ann, pd.Series([0.6, 0.3, 0.1])).target_prior_, [0.6, 0.3, 0.1])


def test_a_keyed_target_of_other_keys_names_integer_classes_as_values():
    # the classes were shown as [np.int64(0), np.int64(1), np.int64(2)]
    coded = Annotations.from_dense([[0, 1, 2], [2, 1, 0], [1, 1, 2]])
    with pytest.raises(ValueError, match=r"the keys must be the classes \[0, 1, 2\]\), got"):
        AutoLabelModel(target_prior={"a": 0.5, "b": 0.5}).fit(coded)


@pytest.mark.parametrize("target, match", [
    (pd.Series({"cat": 0.5, "dog": 0.3, "fox": 0.2}), "the keys must be the classes"),
    ({"cat": 0.5, "dog": 0.5}, "the keys must be the classes"),
    (["a", "b", "c"], "3 positive class probabilities"),     # numpy's 'could not convert'
])
def test_a_wrong_keyed_target_is_an_error_before_any_fit(ann, target, match):
    with pytest.raises(ValueError, match=match):
        AutoLabelModel(target_prior=target).fit(ann)
