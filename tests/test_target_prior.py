"""AutoLabelModel(target_prior=...): labels decided for another class balance (a prior
shift of the winner's posteriors, Saerens et al. 2002), in memory and on Dask."""
import numpy as np
import pytest

from crowd_keras.aggregation import AutoLabelModel, DawidSkene, MajorityVote
from crowd_keras.datasets import simulate_failure_kind
from crowd_keras.numerics import shift_class_prior


@pytest.fixture(scope="module")
def skewed():
    """3/92/5 classes, class-biased prolific workers: the winner learns a skewed prior."""
    return simulate_failure_kind("skewed_prolific", 0, scale=0.25)


def mean_recall(pred, y, k):
    return np.mean([(pred[y == c] == c).mean() for c in range(k)])


def test_shift_class_prior_is_bayes_rule_with_the_prior_swapped(skewed):
    ann = skewed.annotations
    ds = DawidSkene().fit(ann)
    post, prior = ds.predict_proba(), ds.class_priors_
    likelihood = post / prior                      # ∝ p(labels | z): the prior divided out
    target = np.array([0.5, 0.2, 0.3])
    expected = likelihood * target / (likelihood * target).sum(1, keepdims=True)
    np.testing.assert_allclose(shift_class_prior(post, prior, target), expected, rtol=1e-10)
    np.testing.assert_allclose(shift_class_prior(post, prior, prior), post, rtol=1e-10)
    back = shift_class_prior(shift_class_prior(post, prior, target), target, prior)
    np.testing.assert_allclose(back, post, rtol=1e-9)
    one_hot = np.eye(3)[[0, 2, 1]]
    np.testing.assert_array_equal(shift_class_prior(one_hot, prior, target), one_hot)


def test_uniform_target_raises_the_mean_recall_and_keeps_the_choice(skewed):
    ann, y, k = skewed.annotations, np.asarray(skewed.y), skewed.annotations.n_classes
    plain = AutoLabelModel(target_prior="learned").fit(ann)
    uniform = AutoLabelModel().fit(ann)                     # the default (step 24)
    assert uniform.chosen_ == plain.chosen_ != "majority_vote"
    assert uniform.target_prior_applied_ and not plain.target_prior_applied_
    np.testing.assert_allclose(
        uniform.predict_proba(),
        shift_class_prior(plain.predict_proba(), plain.class_priors_, np.full(k, 1 / k)),
        rtol=1e-9)
    np.testing.assert_allclose(uniform.predict_proba(ann), uniform.predict_proba(), atol=1e-9)
    vote = MajorityVote().fit(ann).predict()
    assert mean_recall(uniform.predict(), y, k) > mean_recall(plain.predict(), y, k)
    assert mean_recall(uniform.predict(), y, k) >= mean_recall(vote, y, k)
    assert (uniform.predict() == y).mean() > (vote == y).mean()
    assert uniform.get_params()["target_prior"] == "uniform"
    # None is the learned prior too
    none = AutoLabelModel(target_prior=None).fit(ann)
    assert not none.target_prior_applied_
    np.testing.assert_array_equal(none.predict_proba(), plain.predict_proba())
    # a vector: the same as "uniform" when it is uniform
    same = AutoLabelModel(target_prior=np.full(k, 1 / k)).fit(ann)
    np.testing.assert_allclose(same.predict_proba(), uniform.predict_proba(), atol=1e-12)


def test_voting_carries_no_class_prior_and_is_returned_as_it_is():
    crowd = simulate_failure_kind("many_sparse", 0, scale=0.25)
    model = AutoLabelModel(target_prior="uniform").fit(crowd.annotations)
    reference = AutoLabelModel(target_prior="learned").fit(crowd.annotations)
    assert model.chosen_ == reference.chosen_ == "majority_vote"
    assert not model.model_.posterior_has_class_prior and not model.target_prior_applied_
    np.testing.assert_array_equal(model.predict_proba(), reference.predict_proba())


@pytest.mark.parametrize("target, match", [
    ("balanced", "target_prior must be 'uniform', 'learned'"),
    ([0.5, 0.5], "3 positive class probabilities"),
    ([0.2, 0.2, 0.2], "summing to 1"),
    ([1.2, -0.1, -0.1], "positive"),
    ([[0.3, 0.3, 0.4]], "target_prior must be 'uniform', 'learned'"),
])
def test_a_wrong_target_is_an_error_before_any_fit(skewed, target, match):
    with pytest.raises(ValueError, match=match):
        AutoLabelModel(target_prior=target).fit(skewed.annotations)


def test_dask_gives_the_in_memory_labels_under_the_default_target():
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    from crowd_keras.distributed import aggregate
    crowd = simulate_failure_kind("skewed_prolific", 1, scale=0.25)
    ann = crowd.annotations
    df = ann.to_frame()
    memory = AutoLabelModel(min_heldout=2000).fit(ann)          # uniform: the default
    with dask.config.set(scheduler="threads"):
        result = aggregate(dd.from_pandas(df, npartitions=4), min_heldout=2000)
    labels = result.labels.compute().loc[ann.item_ids]
    assert result.model.chosen_ == memory.chosen_ and result.model.target_prior_applied_
    proba = labels[list(result.probability_columns.values())].to_numpy()
    np.testing.assert_allclose(proba, memory.predict_proba(), atol=1e-6)
    np.testing.assert_array_equal(labels["label"].to_numpy(), ann.classes[memory.predict()])
