"""CalibratedVote: majority vote's labels with the posterior of one accuracy shared by the
crowd; the default label model answers through it when it keeps voting."""
import numpy as np
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import AutoLabelModel, CalibratedVote, MajorityVote, get_label_model
from crowd_keras.aggregation.quality import expected_calibration_error
from crowd_keras.datasets import simulate_crowd, simulate_failure_kind

from protocol_blocks import dask_posteriors, split_fit


def symmetric_crowd(accuracy=0.7, k=3, per_item=4, n_items=3000, seed=1):
    return simulate_crowd(n_items=n_items, n_classes=k, n_annotators=60,
                          annotations_per_item=per_item, annotator_accuracy=accuracy, seed=seed)


def with_gaps(ann, every=7):
    """``ann`` with every ``every``-th item's annotations removed (items without votes)."""
    df = ann.to_frame()
    keep = df["task"].astype(int) % every != 0
    return Annotations.from_frame(df[keep], item_ids=ann.item_ids, classes=ann.classes)


@pytest.mark.parametrize("k, per_item, accuracy", [(2, 2, 0.75), (2, 4, 0.6), (3, 3, 0.7),
                                                   (5, 3, (0.1, 0.3))])
def test_the_labels_are_majority_votes_ties_and_empty_items_included(k, per_item, accuracy):
    # (5, 3, (0.1, 0.3)): a crowd worse than chance, where p < 1/K
    ann = with_gaps(symmetric_crowd(accuracy, k, per_item, n_items=800).annotations)
    vote, calibrated = MajorityVote().fit(ann), CalibratedVote().fit(ann)
    assert vote.tied_items_.any() or per_item == 3
    assert (ann.annotations_per_item() == 0).any()
    np.testing.assert_array_equal(calibrated.predict(), vote.predict())
    np.testing.assert_allclose(calibrated.posteriors_.sum(axis=1), 1.0)
    assert calibrated.posteriors_.max(axis=1).min() < 1.0           # not one-hot
    empty = ann.annotations_per_item() == 0
    np.testing.assert_allclose(calibrated.posteriors_[empty], vote.posteriors_[empty])


def test_gold_items_are_held_at_their_class_and_the_rest_is_the_vote():
    sim = symmetric_crowd(0.65, 3, 3, n_items=600)
    gold = np.full(600, -1)
    gold[:50] = (sim.y[:50] + 1) % 3                                # against the votes
    calibrated = CalibratedVote().fit(sim.annotations, gold=gold)
    vote = MajorityVote().fit(sim.annotations, gold=gold)
    np.testing.assert_array_equal(calibrated.predict(), vote.predict())
    np.testing.assert_allclose(calibrated.posteriors_[:50], np.eye(3)[gold[:50]])


@pytest.mark.parametrize("accuracy, k", [(0.7, 3), (0.85, 2), (0.5, 4)])
def test_the_shared_accuracy_is_recovered_and_the_posterior_is_calibrated(accuracy, k):
    sim = symmetric_crowd(accuracy, k)
    model = CalibratedVote().fit(sim.annotations)
    assert model.accuracy_ == pytest.approx(accuracy, abs=0.02)
    post, y = model.posteriors_, np.asarray(sim.y)
    hit = (post.argmax(axis=1) == y).astype(float)
    ece = expected_calibration_error(post.max(axis=1), hit)
    one_hot = expected_calibration_error(np.ones(len(y)), hit)
    assert ece < 0.03 and ece < one_hot / 3
    # the log-likelihood never decreases along EM
    assert np.all(np.diff(model.log_likelihood_) > -1e-9)


def test_new_annotations_are_scored_as_in_the_fit_and_unknown_settings_fail():
    ann = with_gaps(symmetric_crowd(n_items=500).annotations)
    model = get_label_model("calibrated_vote").fit(ann)
    np.testing.assert_allclose(model.predict_proba(ann), model.posteriors_, atol=1e-12)
    with pytest.raises(TypeError):
        CalibratedVote(tie_break="lowest")


def test_split_into_blocks_and_on_dask_as_in_memory():
    ann = with_gaps(symmetric_crowd(0.6, 3, 3, n_items=900).annotations)
    whole = CalibratedVote().fit(ann)
    _, split, post = split_fit(CalibratedVote(), ann, 4)
    np.testing.assert_allclose(post, whole.posteriors_, atol=1e-9)
    assert split.accuracy_ == pytest.approx(whole.accuracy_, rel=1e-9)
    full = symmetric_crowd(0.6, 3, 3, n_items=900).annotations    # a frame has no empty item
    probs, result, _ = dask_posteriors(full, "calibrated_vote", 5)
    whole = CalibratedVote().fit(full)
    np.testing.assert_allclose(probs, whole.posteriors_, atol=1e-9)
    np.testing.assert_allclose(result.model.confusion_matrices_, whole.confusion_matrices_,
                               atol=1e-9)


def test_the_default_keeps_the_votes_labels_with_a_calibrated_posterior():
    crowd = simulate_failure_kind("ambiguous_sparse", seed=0, scale=0.5)   # voting is kept
    ann = crowd.annotations
    calibrated = AutoLabelModel().fit(ann)
    one_hot = AutoLabelModel(vote_posterior="one_hot").fit(ann)
    assert calibrated.chosen_ == one_hot.chosen_ == "majority_vote"
    assert isinstance(calibrated.model_, CalibratedVote)
    np.testing.assert_array_equal(calibrated.predict(), one_hot.predict())
    np.testing.assert_array_equal(one_hot.posteriors_.max(axis=1), 1.0)
    assert calibrated.posteriors_.max(axis=1).min() < 0.9
    with pytest.raises(ValueError, match="vote_posterior"):
        AutoLabelModel(vote_posterior="soft").fit(ann)


def test_a_vote_with_another_tie_rule_is_not_replaced():
    ann = symmetric_crowd(0.6, 2, 2, n_items=300).annotations
    ladder = [("vote", MajorityVote(tie_break="prior"))]
    model = AutoLabelModel(candidates=ladder).fit(ann)
    assert type(model.model_) is MajorityVote
    np.testing.assert_array_equal(model.predict(), MajorityVote(tie_break="prior").fit(ann).predict())


def test_the_snorkel_adapter_keeps_predicting_wherever_a_function_votes():
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    sim = simulate_crowd(n_items=600, n_classes=2, n_annotators=6, annotations_per_item=2,
                         annotator_accuracy=0.7, seed=0)
    wide = sim.annotations.to_wide().to_numpy(dtype=float)
    L = np.where(np.isnan(wide), -1, wide).astype(int)
    default = CrowdLabelModel().fit(L, progress_bar=False)
    assert default.label_model_.chosen_ == "majority_vote"      # two equal votes per item
    assert (default.predict(L) != -1).all()                       # Snorkel #1422
    calibrated = CrowdLabelModel(vote_posterior="calibrated").fit(L, progress_bar=False)
    assert isinstance(calibrated.label_model_.model_, CalibratedVote)
    tied = MajorityVote().fit(sim.annotations).tied_items_
    np.testing.assert_array_equal(calibrated.predict(L) == -1, tied)
