"""AutoLabelModel(target_prior=...): labels decided for another class balance (a prior
shift of the winner's posteriors, Saerens et al. 2002), in memory and on Dask."""
import sys
from pathlib import Path

import numpy as np
import pytest

from crowd_keras.aggregation import AutoLabelModel, DawidSkene, MajorityVote
from crowd_keras.aggregation.auto import default_candidates, gold_target, under_target
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


@pytest.mark.slow
def test_uniform_target_raises_the_mean_recall_and_keeps_the_choice(skewed):
    ann, y, k = skewed.annotations, np.asarray(skewed.y), skewed.annotations.n_classes
    plain = AutoLabelModel(target_prior="learned").fit(ann)
    uniform = AutoLabelModel().fit(ann)         # the default: without gold, uniform (24-25)
    assert uniform.chosen_ == plain.chosen_ != "majority_vote"
    assert uniform.target_prior_applied_ and not plain.target_prior_applied_
    np.testing.assert_allclose(
        uniform.predict_proba(),
        shift_class_prior(plain.predict_proba(), np.exp(plain.model_.posterior_log_prior_),
                          np.full(k, 1 / k)),
        rtol=1e-9)
    np.testing.assert_allclose(uniform.predict_proba(ann), uniform.predict_proba(), atol=1e-9)
    vote = MajorityVote().fit(ann).predict()
    assert mean_recall(uniform.predict(), y, k) > mean_recall(plain.predict(), y, k)
    assert mean_recall(uniform.predict(), y, k) >= mean_recall(vote, y, k)
    assert (uniform.predict() == y).mean() > (vote == y).mean()
    assert uniform.get_params()["target_prior"] == "gold"
    np.testing.assert_allclose(uniform.target_prior_, np.full(k, 1 / k))
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


def test_gold_target_is_the_posterior_mean_of_the_gold_mix():
    np.testing.assert_allclose(gold_target(np.zeros(4)), np.full(4, 0.25))
    np.testing.assert_allclose(gold_target(np.array([3, 0, 1])), np.array([4, 1, 2]) / 7)
    many = gold_target(np.array([9000, 1000]))
    np.testing.assert_allclose(many, [0.9, 0.1], atol=1e-3)


def skewed_gold(crowd, design, n=60, seed=0):
    """Gold on ``n`` items of ``crowd``: a random sample, or an equal number per class."""
    y, rng = np.asarray(crowd.y), np.random.default_rng(seed)
    if design == "random":
        rows = rng.choice(len(y), n, replace=False)
    else:
        rows = np.concatenate([rng.choice(np.flatnonzero(y == c), n // 3, replace=False)
                               for c in range(3)])
    ann = crowd.annotations
    return rows, {ann.item_ids[i]: ann.classes[y[i]] for i in rows}


@pytest.mark.slow
def test_gold_target_without_gold_is_the_uniform_one(skewed):
    ann = skewed.annotations
    uniform = AutoLabelModel(target_prior="uniform").fit(ann)
    gold = AutoLabelModel(target_prior="gold").fit(ann)
    assert gold.chosen_ == uniform.chosen_ and gold.target_prior_applied_
    np.testing.assert_array_equal(gold.gold_class_counts_, [0, 0, 0])
    np.testing.assert_allclose(gold.target_prior_, np.full(3, 1 / 3))
    np.testing.assert_allclose(gold.predict_proba(), uniform.predict_proba(), atol=1e-12)


@pytest.mark.parametrize("design", ["random", "balanced"])
def test_gold_target_decides_for_the_gold_mix(skewed, design):
    """Random gold of a 3/92/5 crowd moves the target to the common class; class-balanced
    gold keeps it near uniform; either way the labels are the winner's posteriors under it."""
    ann, y = skewed.annotations, np.asarray(skewed.y)
    rows, gold = skewed_gold(skewed, design)
    model = AutoLabelModel(target_prior="gold").fit(ann, gold=gold)
    counts = np.bincount(y[rows], minlength=3)
    np.testing.assert_array_equal(model.gold_class_counts_, counts)
    np.testing.assert_allclose(model.target_prior_, (counts + 1) / (len(rows) + 3))
    if design == "random":
        common = np.argmax(np.bincount(y))
        assert model.target_prior_[common] > 0.8
    else:
        np.testing.assert_allclose(model.target_prior_, np.full(3, 1 / 3))
    expected = under_target(model.model_.posteriors_,
                            np.exp(model.model_.posterior_log_prior_), model.target_prior_,
                            model.model_.posterior_has_class_prior)
    np.testing.assert_allclose(model.predict_proba(), expected, atol=1e-12)
    assert (model.predict()[rows] == y[rows]).all()          # gold items keep their class


@pytest.mark.slow
def test_gold_scores_the_labels_that_would_be_returned(skewed):
    """Choice by gold scores each candidate under the target: with the learned prior the
    gold accuracies are those of the learned-prior labels, under the uniform target they
    differ where the prior shift changes labels of hidden gold items."""
    ann = skewed.annotations
    _, gold = skewed_gold(skewed, "balanced")
    learned = AutoLabelModel(target_prior="learned").fit(ann, gold=gold)
    uniform = AutoLabelModel(target_prior="uniform").fit(ann, gold=gold)
    assert set(learned.gold_accuracy_) == set(uniform.gold_accuracy_)
    assert learned.gold_accuracy_["majority_vote"] == uniform.gold_accuracy_["majority_vote"]
    changed = [name for name in learned.gold_accuracy_
               if learned.gold_accuracy_[name] != uniform.gold_accuracy_[name]]
    assert changed                                          # a class-prior model moved
    # balanced gold: the uniform target's labels score at least as well on it
    assert all(uniform.gold_accuracy_[name] >= learned.gold_accuracy_[name] for name in changed)


@pytest.mark.parametrize("target, match", [
    ("balanced", "target_prior must be 'uniform', 'learned' \\(or None\\), 'gold'"),
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


@pytest.mark.parametrize("kind, seed, scale, design", [
    ("cliques_moderate", 0, 1.0, "random"),
    ("skewed_prolific", 5, 1.0, "random"),
    ("skewed_prolific", 1, 0.5, "balanced"),
])
def test_gold_target_keeps_the_default_at_voting_where_the_uniform_one_fell(kind, seed, scale,
                                                                            design):
    """Crowds of step 25 where gold on 50 items left the uniform target (with gold scoring
    learned-prior labels) more than one item below voting: the gold target is not."""
    import zlib

    sys_path = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    from gold_designs import draw_gold
    from failure_kinds import mean_recall as recall

    crowd = simulate_failure_kind(kind, seed, scale)
    ann, y, k = crowd.annotations, np.asarray(crowd.y), crowd.annotations.n_classes
    rows = draw_gold(y, design, 50, [zlib.crc32(kind.encode()), seed, int(scale * 100),
                                     0 if design == "random" else 1])
    gold = {ann.item_ids[i]: ann.classes[y[i]] for i in rows}
    rest = np.setdiff1d(np.arange(len(y)), rows)
    labels = AutoLabelModel().fit(ann, gold=gold).predict()
    vote = MajorityVote().fit(ann).predict()
    if design == "random":
        assert (labels[rest] == y[rest]).mean() >= (vote[rest] == y[rest]).mean() - 1 / len(rest)
    else:
        counts = np.bincount(y[rest], minlength=k)
        item = 1 / ((counts > 0).sum() * counts[counts > 0].min())
        assert recall(labels[rest], y[rest], k) >= recall(vote[rest], y[rest], k) - item


def _codes_from_one(kind="biased_experts", seed=0):
    """The crowd with every label one higher: read as codes, class 0 is a class no annotation
    names (ratings 1..K given to ``from_frame``)."""
    from crowd_keras import Annotations

    crowd = simulate_failure_kind(kind, seed, scale=0.5)
    df = crowd.annotations.to_frame()
    label = df.columns[2]
    df[label] = df[label].astype(np.int64) + 1
    ann = Annotations.from_frame(df, item=df.columns[0], annotator=df.columns[1], label=label)
    assert ann.n_classes == crowd.annotations.n_classes + 1
    return ann, df


@pytest.mark.parametrize("target", ["gold", "uniform"])
def test_a_class_no_annotation_names_is_never_the_label(target):
    """Under the uniform target a class no one named had a share of 1/K against a learned
    prior near 0, which multiplied its posterior by thousands: contested items were given
    class 0, a label no annotator gave (2 items of this crowd)."""
    ann, _ = _codes_from_one()
    # the candidates with a class prior (BWA has none, and on this crowd it ties with them
    # within the fold draw's noise): the shift under test is applied whichever wins
    candidates = [(name, model) for name, model in default_candidates(ann.n_classes)
                  if name != "bwa"]
    model = AutoLabelModel(target_prior=target, candidates=candidates).fit(ann)
    assert model.target_prior_applied_               # an annotator model with a class prior
    assert model.named_classes_.tolist() == [False] + [True] * (ann.n_classes - 1)
    assert model.target_prior_[0] == 0.0
    np.testing.assert_allclose(model.target_prior_[1:], 1 / (ann.n_classes - 1))
    assert (model.predict() != 0).all()
    assert (model.predict_proba()[:, 0] == 0).all()
    # the other classes' labels are those of the uniform target over the named classes
    learned = model.model_.posteriors_
    expected = shift_class_prior(learned[:, 1:], np.exp(model.model_.posterior_log_prior_[1:]),
                                 np.full(ann.n_classes - 1, 1 / (ann.n_classes - 1)))
    np.testing.assert_allclose(model.predict_proba()[:, 1:], expected, atol=1e-12)


def test_a_gold_item_names_its_class():
    ann, _ = _codes_from_one()
    first = ann.item_ids[0]
    model = AutoLabelModel().fit(ann, gold={first: 0})
    target = model.target_prior_
    counts = np.zeros(ann.n_classes)
    counts[0] = 1
    np.testing.assert_allclose(target, (counts + 1) / (1 + ann.n_classes))
    assert model.predict()[0] == 0
    assert AutoLabelModel(target_prior="uniform").fit(ann, gold={first: 0}).target_prior_[0] > 0


@pytest.mark.slow
def test_dask_leaves_out_the_class_no_annotation_names_as_in_memory():
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    from crowd_keras.distributed import aggregate
    ann, df = _codes_from_one()
    memory = AutoLabelModel().fit(ann)
    with dask.config.set(scheduler="threads"):
        result = aggregate(dd.from_pandas(df, npartitions=3))
    labels = result.labels.compute().loc[ann.item_ids]
    assert result.model.chosen_ == memory.chosen_
    assert result.model.named_classes_.tolist() == memory.named_classes_.tolist()
    np.testing.assert_array_equal(labels["label"].to_numpy(), ann.classes[memory.predict()])
    assert (labels["label"] != 0).all()


def test_a_target_keyed_by_class_is_read_by_key_whatever_the_keys():
    """Keys 0..K-1 sent a dict down the by-position path: with the classes in the order
    [1, 0], {0: 0.9, 1: 0.1} gave class 1 the 0.9; against string classes the same dict was
    read by position without a word. (A Series on pandas' default index is a vector.)"""
    import pandas as pd

    from crowd_keras import Annotations
    frame = pd.DataFrame({"task": [1, 1, 2, 2, 3], "worker": ["a", "b", "a", "b", "a"],
                          "label": [1, 0, 0, 0, 1]})
    ann = Annotations.from_frame(frame, classes=[1, 0])
    for given in ({0: 0.9, 1: 0.1}, {1: 0.1, 0: 0.9}, pd.Series({1: 0.1, 0: 0.9})):
        target = AutoLabelModel(target_prior=given).target_prior_vector(2, classes=ann.classes)
        np.testing.assert_allclose(target, [0.1, 0.9])        # in the classes' order [1, 0]
    np.testing.assert_allclose(AutoLabelModel(target_prior=[0.9, 0.1]).target_prior_vector(
        2, classes=ann.classes), [0.9, 0.1])                  # a vector: the classes' order
    named = np.array(["neg", "pos"], dtype=object)
    with pytest.raises(ValueError, match=r"keyed by class, the keys must be the classes "
                                         r"\['neg', 'pos'\]"):
        AutoLabelModel(target_prior={0: 0.9, 1: 0.1}).target_prior_vector(2, classes=named)
