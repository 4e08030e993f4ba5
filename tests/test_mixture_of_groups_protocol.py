"""The feature-free mixture of groups (individual scenario) on the public EM-step protocol:
a fit split into blocks of items is the one-block fit, the restarts side by side are the
restarts one after the other, and it runs on Dask with no strategy of its own."""
import numpy as np
import pytest

from crowd_keras.datasets import simulate_crowd
from crowd_keras.mixture_of_groups.label_model import MixtureOfGroupsModel

from protocol_blocks import dask_posteriors, shared_set, split_fit

ATTRIBUTES = ("class_priors_", "mixing_coefficients_", "group_confusions_", "memberships_",
              "confusion_matrices_", "global_confusion_", "restart_objectives_")


@pytest.fixture(scope="module")
def crowd():
    # two clearly different groups of annotators, and more groups asked for than there are,
    # so that the fit drops a surplus group inside the EM steps
    return simulate_crowd(n_items=400, n_classes=3, n_annotators=12, annotations_per_item=4,
                          common_noise="asymmetric", seed=5).annotations


@pytest.mark.parametrize("source", ["simulated", "labelme", "music"])
def test_a_fit_over_several_blocks_is_the_one_block_fit(crowd, source):
    if source != "simulated":
        crowd = shared_set(source)
    settings = dict(num_groups=4, labeling_functions="ignore")
    whole = MixtureOfGroupsModel(**settings).fit(crowd)
    # in memory the restarts run one after the other; here side by side, over 4 blocks
    _, fitted, post = split_fit(MixtureOfGroupsModel(**settings), crowd, 4)
    np.testing.assert_array_equal(fitted.restart_n_iter_, whole.restart_n_iter_)
    assert fitted.n_iter_ == whole.n_iter_
    np.testing.assert_allclose(fitted.log_likelihood_, whole.log_likelihood_, atol=1e-8)
    for name in ATTRIBUTES:
        np.testing.assert_allclose(getattr(fitted, name), getattr(whole, name), atol=1e-8,
                                   err_msg=name)
    np.testing.assert_allclose(post, whole.posteriors_, atol=1e-8)


def test_a_surplus_group_is_dropped_inside_the_em_steps(crowd):
    pruned = MixtureOfGroupsModel(num_groups=4, restarts=1).fit(crowd)
    kept = MixtureOfGroupsModel(num_groups=4, restarts=1, prune_groups=False).fit(crowd)
    assert (pruned.mixing_coefficients_ < 1e-9).any()      # a group emptied, the fit went on
    assert (kept.mixing_coefficients_ > 1e-3).all()
    assert pruned.n_iter_ > kept.n_iter_
    _, fitted, post = split_fit(MixtureOfGroupsModel(num_groups=4, restarts=1), crowd, 3)
    np.testing.assert_allclose(fitted.mixing_coefficients_, pruned.mixing_coefficients_,
                               atol=1e-8)
    np.testing.assert_allclose(post, pruned.posteriors_, atol=1e-8)


def test_max_iter_bounds_each_restart(crowd):
    model = MixtureOfGroupsModel(max_iter=3, restarts=2).fit(crowd)
    np.testing.assert_array_equal(model.restart_n_iter_, [3, 3])
    with pytest.raises(ValueError, match="max_iter must be at least 1"):
        MixtureOfGroupsModel(max_iter=0).fit(crowd)


def test_the_global_scenario_is_refused_on_blocks_with_a_reason(crowd):
    with pytest.raises(ValueError, match="scenario='individual'.*in memory"):
        split_fit(MixtureOfGroupsModel(scenario="global"), crowd, 2)
    assert MixtureOfGroupsModel(scenario="global").fit(crowd).scenario_ == "global"


def test_it_runs_on_dask_with_the_labels_in_memory(crowd):
    pytest.importorskip("dask.dataframe")
    reference = MixtureOfGroupsModel().fit(crowd)
    proba, result, _ = dask_posteriors(crowd, "mixture_of_groups", 3)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), reference.predict())
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-8)
    np.testing.assert_allclose(result.model.mixing_coefficients_,
                               reference.mixing_coefficients_, atol=1e-8)
    # new items: the fitted annotators keep their memberships, as in memory (the Dask model
    # holds no annotations, so who labelled in fit is a fitted attribute)
    np.testing.assert_array_equal(result.model.active_annotators_, reference.active_annotators_)
    new = crowd.subset(np.arange(60))
    np.testing.assert_allclose(result.model.predict_proba(new), reference.predict_proba(new),
                               atol=1e-8)


@pytest.mark.parametrize("max_iter", [3, 100])
def test_the_fitted_annotations_read_again_score_as_fitted(max_iter):
    """The fitted α, β, ρ were one M-step past the E-step that gave the posteriors: a copy
    of the training annotations scored up to 0.055 away from them (3 iterations)."""
    from scipy.special import softmax

    from crowd_keras import Annotations

    ann = simulate_crowd(n_items=200, n_classes=3, n_annotators=10, annotations_per_item=4,
                         seed=0).annotations
    model = MixtureOfGroupsModel(max_iter=max_iter).fit(ann)
    copy = Annotations.from_frame(ann.to_frame())
    np.testing.assert_allclose(model.predict_proba(copy), model.posteriors_, atol=1e-12)
    # and from the fitted attributes by hand: ρ_k Π_a Σ_m q(m|a) β_m[k, y]
    log_conf = np.einsum("am,mky->aky", model.memberships_, np.log(model.group_confusions_))
    logits = np.tile(np.log(model.class_priors_), (ann.n_items, 1))
    np.add.at(logits, ann.items, log_conf[ann.annotators, :, ann.labels])
    np.testing.assert_allclose(softmax(logits, axis=1), model.posteriors_, atol=1e-12)
