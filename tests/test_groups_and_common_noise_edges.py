"""Mixture of groups and CoNAL label models at their edges: ``smoothing=0`` beside a class
that no annotation gives (its prior and confusion rows are 0)."""
import numpy as np
import pytest

from crowd_keras import Annotations
from crowd_keras.conal.label_model import CommonNoiseModel
from crowd_keras.datasets import simulate_crowd
from crowd_keras.mixture_of_groups.label_model import MixtureOfGroupsModel


@pytest.fixture(scope="module")
def unused_class():
    """3 classes labelled, a 4th that no annotation gives."""
    a = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                       seed=4).annotations
    return Annotations(a.items, a.annotators, a.labels, n_classes=4)


def test_common_noise_model_without_smoothing_keeps_finite_posteriors(unused_class):
    fitted = CommonNoiseModel(smoothing=0).fit(unused_class)
    # was NaN from the second iteration on: q(s | c, y) = 0/0 where no one gives y for c
    assert np.isfinite(fitted.posteriors_).all()
    np.testing.assert_allclose(fitted.posteriors_.sum(axis=1), 1.0)
    assert np.isfinite(fitted.log_likelihood_).all() and np.isfinite(fitted.omega_).all()


@pytest.mark.parametrize("scenario", ["individual", "global"])
def test_mixture_of_groups_without_smoothing_has_a_finite_objective(unused_class, scenario):
    fitted = MixtureOfGroupsModel(2, scenario=scenario, smoothing=0, restarts=2).fit(
        unused_class)
    # was NaN (0 · log ρ with ρ = 0 for the unused class): every restart ran max_iter and
    # the best one was chosen among NaNs
    assert np.isfinite(fitted.restart_objectives_).all()
    assert np.isfinite(fitted.log_likelihood_).all()
    assert np.isfinite(fitted.posteriors_).all()


@pytest.mark.parametrize("name", ["CommonNoiseModel", "MixtureOfGroupsModel"])
def test_new_annotations_with_an_unlabelled_class_and_no_smoothing_score_quietly(name):
    """The fits silence log(ρ = 0) on purpose; scoring new annotations warned "divide by
    zero encountered in log"."""
    import warnings

    from crowd_keras import aggregation

    labels = np.random.default_rng(0).integers(0, 2, (40, 4))
    ann = Annotations.from_dense(labels, classes=[0, 1, 2])   # class 2 unused
    model = getattr(aggregation, name)(smoothing=0.0).fit(ann)
    copy = Annotations.from_frame(ann.to_frame(), classes=[0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        post = model.predict_proba(copy)
    assert np.isfinite(post).all() and (post[:, 2] == 0).all()
