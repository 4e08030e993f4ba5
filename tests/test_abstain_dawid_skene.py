"""Abstain-aware Dawid-Skene: a loop-by-loop reference EM, one-class functions, the two
regimes, the vote anchor, and accuracy against voting on real label matrices."""
import numpy as np
import pytest

from conftest import require_data
from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import (AbstainAwareDawidSkene, DawidSkene, get_label_model)
from crowd_keras.datasets import load_truth_inference, load_wrench, simulate_crowd
from crowd_keras.integrations.snorkel import probs_to_preds

WRENCH = dict(abstain="response", anchor="none", abstain_weight=1.0, class_prior="learn")


def one_class_functions(n=3000, seed=0):
    """Binary truth; 3 functions vote only 1, 3 only 0, each fires mostly on its own class."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    fire_own = np.array([0.5, 0.3, 0.6, 0.4, 0.5, 0.3])
    fire_other = np.array([0.05, 0.1, 0.02, 0.08, 0.05, 0.1])
    target = np.array([1, 1, 1, 0, 0, 0])
    p = np.where(y[:, None] == target[None, :], fire_own, fire_other)
    L = np.where(rng.random((n, 6)) < p, target[None, :], -1)
    return L, y, fire_own, fire_other, target


def hash_majority_vote(L, k):
    """Snorkel's MajorityLabelVoter with tie_break_policy='random' (hash of the row index)."""
    counts = Annotations.from_label_matrix(L, k).label_counts()
    top = counts == counts.max(axis=1, keepdims=True)
    return probs_to_preds(top / top.sum(axis=1, keepdims=True), "random")


def reference_em(L, k, n_iter, s=0.01):
    """WRENCH's Dawid-Skene written out with loops: abstain is response k."""
    n, m = L.shape
    post = np.zeros((n, k))
    for i in range(n):
        votes = [L[i, a] for a in range(m) if L[i, a] >= 0]
        for v in votes:
            post[i, v] += 1.0 / len(votes)
        if not votes:
            post[i] = 1.0 / k
    for _ in range(n_iter):
        R = np.full((m, k, k + 1), s)
        for i in range(n):
            for a in range(m):
                col = L[i, a] if L[i, a] >= 0 else k
                R[a, :, col] += post[i]
        R /= R.sum(axis=2, keepdims=True)
        prior = post.sum(axis=0) + s
        prior /= prior.sum()
        logp = np.tile(np.log(prior), (n, 1))
        for i in range(n):
            for a in range(m):
                col = L[i, a] if L[i, a] >= 0 else k
                logp[i] += np.log(R[a, :, col])
        logp -= logp.max(axis=1, keepdims=True)
        post = np.exp(logp) / np.exp(logp).sum(axis=1, keepdims=True)
    return post, R, prior


def test_matches_a_reference_em_written_with_loops():
    rng = np.random.default_rng(3)
    L = rng.integers(-1, 3, size=(40, 5))
    L[7] = -1  # an all-abstain row keeps its place
    ann = Annotations.from_label_matrix(L, 3)
    model = AbstainAwareDawidSkene(max_iter=6, tol=0, **WRENCH).fit(ann)
    post, R, prior = reference_em(L, 3, 6)
    np.testing.assert_allclose(model.posteriors_, post, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.response_matrices_, R, rtol=1e-9)
    np.testing.assert_allclose(model.class_priors_, prior, rtol=1e-9)
    assert model.posteriors_.shape == (40, 3)


def test_two_classes_take_the_one_vector_path_with_the_same_numbers():
    """K = 2 runs the E-step on p(class 1) alone (σ of a logit difference): the reference
    EM's numbers, and no overflow when one item's margin is beyond exp's range."""
    rng = np.random.default_rng(4)
    L = rng.integers(-1, 2, size=(60, 6))
    L[5] = -1
    model = AbstainAwareDawidSkene(max_iter=6, tol=0, **WRENCH).fit(
        Annotations.from_label_matrix(L, 2))
    post, R, prior = reference_em(L, 2, 6)
    np.testing.assert_allclose(model.posteriors_, post, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.response_matrices_, R, rtol=1e-9)
    np.testing.assert_allclose(model.predict_proba(L), model.posteriors_, atol=1e-15)
    # 400 agreeing functions: logit margins of thousands (e^-d overflows), still finite
    y = rng.integers(0, 2, 300)
    big = np.where(rng.random((300, 400)) < 0.9, y[:, None], 1 - y[:, None])
    huge = AbstainAwareDawidSkene(**WRENCH).fit(Annotations.from_label_matrix(big, 2))
    assert np.isfinite(huge.log_likelihood_).all() and np.isfinite(huge.posteriors_).all()
    assert (huge.predict() == y).all()
    np.testing.assert_allclose(huge.posteriors_.sum(axis=1), 1.0)


def test_one_class_functions_are_learned_from_their_abstentions():
    L, y, fire_own, fire_other, target = one_class_functions()
    ann = Annotations.from_label_matrix(L, 2)
    model = AbstainAwareDawidSkene(**WRENCH).fit(ann)
    R = model.response_matrices_
    a = np.arange(6)
    # the firing rate of each function given the truth is recovered from the abstentions
    np.testing.assert_allclose(R[a, target, target], fire_own, atol=0.05)
    np.testing.assert_allclose(R[a, 1 - target, target], fire_other, atol=0.05)
    acc = (model.predict() == y).mean()
    plain = (DawidSkene(labeling_functions="ignore").fit(ann).predict() == y).mean()
    mv = (hash_majority_vote(L, 2) == y).mean()
    assert acc >= mv + 0.03, (acc, mv)  # silence is informative here: most items have no vote
    assert plain < 0.7 < acc  # dropping abstentions learns nothing from one-class functions
    q = model.annotator_quality_
    assert np.all(np.abs(q["accuracy"] - np.array([
        (y[L[:, j] >= 0] == target[j]).mean() for j in range(6)])) < 0.08)


def test_regimes_are_told_apart_and_crowd_regime_is_plain_dawid_skene():
    L, *_ = one_class_functions(500)
    lf = AbstainAwareDawidSkene().fit(Annotations.from_label_matrix(L, 2))
    assert (lf.regime_, lf.abstain_, lf.anchor_, lf.abstain_weight_) == (
        "labeling_functions", "response", "votes", 0.0)
    np.testing.assert_allclose(lf.class_priors_, [0.5, 0.5])  # Snorkel's default balance

    sim = simulate_crowd(n_items=400, n_classes=3, n_annotators=20, annotations_per_item=4, seed=1)
    crowd = AbstainAwareDawidSkene(max_iter=25, tol=0).fit(sim.annotations)
    assert (crowd.regime_, crowd.abstain_, crowd.anchor_) == ("crowd", "ignore", "none")
    plain = DawidSkene(max_iter=25, tol=0).fit(sim.annotations)
    np.testing.assert_allclose(crowd.posteriors_, plain.posteriors_, atol=1e-9)
    np.testing.assert_allclose(crowd.confusion_matrices_, plain.confusion_matrices_, atol=1e-9)


def test_vote_anchor_keeps_the_most_voted_class_and_breaks_ties_with_the_model():
    rng = np.random.default_rng(0)
    L = np.where(rng.random((300, 8)) < 0.3, rng.integers(0, 3, size=(300, 8)), -1)
    ann = Annotations.from_label_matrix(L, 3)
    model = AbstainAwareDawidSkene(abstain="response", anchor="votes").fit(ann)
    counts = ann.label_counts()
    top = counts == counts.max(axis=1, keepdims=True)
    post = model.predict_proba(ann)
    assert np.all(post[~top] == 0)  # no probability outside the most-voted classes
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    tied = top.sum(axis=1) > 1
    has_votes = counts.sum(axis=1) > 0
    # among tied classes the (un-anchored) model decides: not always the lowest code
    assert len(set(model.predict(ann)[tied & has_votes])) > 1
    empty = ~has_votes
    np.testing.assert_allclose(post[empty], 1 / 3)  # no votes, uniform prior: a tie


def test_a_function_that_never_votes_changes_nothing():
    L, *_ = one_class_functions(600, seed=2)
    silent = np.hstack([L[:, :3], -np.ones((600, 1), int), L[:, 3:]])
    for kwargs in ({}, WRENCH):
        base = AbstainAwareDawidSkene(**kwargs).fit(Annotations.from_label_matrix(L, 2))
        more = AbstainAwareDawidSkene(**kwargs).fit(Annotations.from_label_matrix(silent, 2))
        np.testing.assert_allclose(more.posteriors_, base.posteriors_, atol=1e-10)
        assert not more.abstain_modelled_[3]
        assert np.isnan(more.annotator_quality_["accuracy"][3])


def test_bad_settings_and_empty_input():
    ann = Annotations.from_label_matrix(np.array([[0, 1], [1, -1]]), 2)
    with pytest.raises(ValueError, match="abstain must be"):
        AbstainAwareDawidSkene(abstain="maybe").fit(ann)
    with pytest.raises(ValueError, match="anchor must be"):
        AbstainAwareDawidSkene(anchor="x").fit(ann)
    with pytest.raises(ValueError, match="smoothing"):
        AbstainAwareDawidSkene(smoothing=0).fit(ann)
    with pytest.raises(ValueError, match=r"abstain_weight must be in \[0, 1\]"):
        AbstainAwareDawidSkene(abstain_weight=2).fit(ann)
    with pytest.raises(CrowdDataError, match="class prior"):
        AbstainAwareDawidSkene(class_prior=[0.2, 0.2]).fit(ann)
    with pytest.raises(CrowdDataError, match="no votes"):
        AbstainAwareDawidSkene().fit(Annotations.from_label_matrix(-np.ones((3, 2), int), 2))
    assert isinstance(get_label_model("abstain_dawid_skene"), AbstainAwareDawidSkene)


@pytest.mark.parametrize("name, k, floor", [("youtube", 2, 0.84), ("trec", 6, 0.61)])
def test_at_least_as_good_as_voting_on_wrench(name, k, floor):
    folder = require_data("wrench", name)
    train, test = load_wrench(folder, "train"), load_wrench(folder, "test")
    model = AbstainAwareDawidSkene().fit(Annotations.from_label_matrix(train.L, k))
    pred = probs_to_preds(model.predict_proba(Annotations.from_label_matrix(test.L, k)), "random")
    acc = (pred == test.y).mean()
    mv = (hash_majority_vote(test.L, k) == test.y).mean()
    assert acc >= max(mv, floor), (acc, mv)
    wrench = AbstainAwareDawidSkene(**WRENCH).fit(Annotations.from_label_matrix(train.L, k))
    assert (wrench.predict(Annotations.from_label_matrix(test.L, k)) == test.y).mean() > 0.45


@pytest.mark.parametrize("name, floor", [("product", 0.93), ("bluebirds", 0.85)])
def test_crowd_answers_as_a_label_matrix(name, floor):
    ann, truth = load_truth_inference(require_data("truth_inference", name))
    L = ann.to_label_matrix()  # -1 where a worker did not label: not informative here
    model = AbstainAwareDawidSkene().fit(Annotations.from_label_matrix(L, ann.n_classes))
    known = truth >= 0
    acc = (model.predict()[known] == truth[known]).mean()
    mv = (hash_majority_vote(L, ann.n_classes)[known] == truth[known]).mean()
    assert model.regime_ == "crowd"
    assert acc >= max(mv, floor), (acc, mv)


def _two_class_votes(n, seed, functions=4):
    """Functions voting classes 0 and 1 only (any of them, 75 % right, 60 % coverage)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    L = np.full((n, functions), -1)
    for j in range(functions):
        vote = rng.random(n) < 0.6
        right = rng.random(n) < 0.75
        L[vote, j] = np.where(right[vote], y[vote], 1 - y[vote])
    return L


@pytest.mark.parametrize("n, seed", [(100, 0), (300, 1), (1000, 2)])
def test_a_class_no_function_votes_is_not_given_rows_with_votes(n, seed):
    """cardinality 3, functions voting 0 and 1: the rows without votes started uniform and
    seeded class 2, which the abstain model then made "the class of few votes" (10 of 97
    voted rows at 0.93 where one function voted 0). Snorkel's LabelModel gives it none."""
    from crowd_keras.integrations.snorkel import CrowdLabelModel
    L = _two_class_votes(n, seed)
    voted = (L >= 0).any(axis=1)
    model = AbstainAwareDawidSkene(abstain="response").fit(Annotations.from_label_matrix(L, 3))
    assert model.predict_proba()[voted, 2].max() < 0.01
    adapter = CrowdLabelModel(cardinality=3).fit(L, progress_bar=False)
    probs = adapter.predict_proba(L)
    assert not (probs[voted].argmax(axis=1) == 2).any()
    # a class that gold holds is still learned (the gold rows carry it)
    gold = np.full(n, -1)
    silent = np.flatnonzero(~voted)[:3] if (~voted).sum() >= 3 else np.arange(3)
    gold[silent] = 2
    fitted = AbstainAwareDawidSkene(abstain="response").fit(
        Annotations.from_label_matrix(L, 3), gold=gold)
    assert (fitted.predict()[silent] == 2).all()
