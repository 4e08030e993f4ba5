"""Every registered label model on edge-case crowds: the shared contract of
``aggregation/base.py`` (a posterior per item, finite, rows summing to 1, or a clear
``CrowdDataError``; never a raw numpy error) on small data."""
import numpy as np
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import available_label_models, get_label_model
from crowd_keras.datasets import simulate_crowd

MODELS = available_label_models(aliases=False)
FAST = {"lia": {"em_iterations": 1, "m_steps": 5}}


def model_of(name):
    return get_label_model(name, **FAST.get(name, {}))


def assert_posterior(post, n_items, n_classes):
    assert post.shape == (n_items, n_classes)
    assert np.isfinite(post).all()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(n_items=40, n_classes=3, n_annotators=6, annotations_per_item=3,
                          seed=0).annotations


@pytest.mark.parametrize("name", MODELS)
def test_items_without_any_annotation_get_a_posterior_or_a_clear_error(name):
    """A crowd whose items are all listed but none labelled: each item's posterior (the
    prior), or a ``CrowdDataError`` saying there is nothing to fit."""
    empty = Annotations(np.array([], int), np.array([], int), np.array([], int), n_items=3,
                        n_annotators=2, n_classes=2)
    try:
        post = model_of(name).fit(empty).predict_proba()
    except CrowdDataError as err:
        assert "no annotations" in str(err) or "no votes" in str(err)
        return
    assert_posterior(post, 3, 2)
