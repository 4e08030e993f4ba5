"""The feature-free CoNAL model on the public EM-step protocol (split fits, Dask, gold), and
the progress of the mixture of groups' EM."""
import numpy as np
import pytest

from crowd_keras.aggregation import get_label_model
from crowd_keras.conal.label_model import CommonNoiseModel
from crowd_keras.datasets import simulate_crowd
from crowd_keras.mixture_of_groups.label_model import MixtureOfGroupsModel

from protocol_blocks import dask_posteriors, shared_set, split_fit


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(n_items=500, n_classes=3, n_annotators=15, annotations_per_item=4,
                          common_noise="asymmetric", seed=2).annotations


@pytest.mark.parametrize("source", ["simulated", "labelme", "music"])
def test_a_fit_over_several_blocks_is_the_one_block_fit(crowd, source):
    if source != "simulated":
        crowd = shared_set(source)
    whole = CommonNoiseModel(labeling_functions="ignore").fit(crowd)
    model = CommonNoiseModel(labeling_functions="ignore")
    run, fitted, post = split_fit(model, crowd, 4)
    assert len(run.history) == whole.n_iter_
    np.testing.assert_allclose(run.history, whole.log_likelihood_, atol=1e-10)
    for name in ("omega_", "common_confusion_", "individual_confusions_", "class_priors_",
                 "confusion_matrices_"):
        np.testing.assert_allclose(getattr(fitted, name), getattr(whole, name), atol=1e-10,
                                   err_msg=name)
    # each block's posteriors are the whole fit's for its items
    np.testing.assert_allclose(post, whole.posteriors_, atol=1e-10)


def test_it_runs_on_dask_with_no_strategy_of_its_own(crowd):
    pytest.importorskip("dask.dataframe")
    reference = get_label_model("conal").fit(crowd)
    proba, *_ = dask_posteriors(crowd, "conal", 3)
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-8)


def test_gold_items_are_held_at_their_class(crowd):
    votes = CommonNoiseModel().fit(crowd).predict()
    gold = np.full(crowd.n_items, -1)
    gold[:25] = (votes[:25] + 1) % 3                       # deliberately not the fitted label
    model = CommonNoiseModel().fit(crowd, gold=gold)
    np.testing.assert_array_equal(model.predict()[:25], gold[:25])
    np.testing.assert_allclose(model.predict_proba()[:25], np.eye(3)[gold[:25]])


def test_mixture_of_groups_shows_progress_only_when_asked(crowd, capsys):
    MixtureOfGroupsModel(restarts=1).fit(crowd)
    assert capsys.readouterr().err == ""                   # off by default, as every model
    model = MixtureOfGroupsModel(restarts=1, progress="auto")
    model.fit(crowd)                                      # "auto": silent on a short fit
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress must be True, False or 'auto'"):
        MixtureOfGroupsModel(restarts=1, progress="yes").fit(crowd)


def test_mixture_of_groups_progress_names_each_restart(crowd, capsys):
    MixtureOfGroupsModel(restarts=2, progress=True).fit(crowd)
    err = capsys.readouterr().err                          # a tqdm bar, or lines without it
    assert "MixtureOfGroups EM #1" in err and "MixtureOfGroups EM #2" in err
