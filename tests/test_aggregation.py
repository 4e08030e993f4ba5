"""Majority vote and Dawid-Skene: hand computations, a reference EM, and real data."""
import numpy as np
import pandas as pd
import pytest

from conftest import require_data
from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import (LIA, AutoLabelModel, CommonNoiseModel, DawidSkene, MajorityVote,
                                     MixtureOfGroupsModel,
                                     available_label_models,
                                     get_label_model)
from crowd_keras.datasets import load_labelme, load_truth_inference, simulate_crowd


def hand_frame():
    # item a: x,x,y -> x ; item b: y,z -> tie (y, z) ; item c: z ; item d: none (listed only)
    return pd.DataFrame({"task": ["a", "a", "a", "b", "b", "c"],
                         "worker": ["u", "v", "w", "u", "v", "w"],
                         "label": ["x", "x", "y", "y", "z", "z"]})


def test_majority_vote_matches_hand_computation():
    ann = Annotations.from_frame(hand_frame(), item_ids=["a", "b", "c", "d"])
    mv = MajorityVote().fit(ann)
    assert list(mv.predict_labels()) == ["x", "y", "z", "x"]  # d: the prior, x, y, z have 2 votes each
    proba = mv.predict_proba()
    np.testing.assert_allclose(proba[0], [1, 0, 0])
    np.testing.assert_allclose(proba[1], [0, 1, 0])  # tie -> lowest class code
    np.testing.assert_allclose(proba[3], [2 / 6, 2 / 6, 2 / 6])  # vote frequencies
    soft = MajorityVote(soft=True).fit(ann).predict_proba()
    np.testing.assert_allclose(soft[0], [2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(soft[1], [0, 0.5, 0.5])
    uniform = MajorityVote(tie_break="uniform").fit(ann).predict_proba()
    np.testing.assert_allclose(uniform[1], [0, 0.5, 0.5])
    picks = {int(MajorityVote(tie_break="random", random_state=s).fit(ann).predict()[1])
             for s in range(20)}
    assert picks == {1, 2}
    q = mv.annotator_quality_.set_index("annotator")
    assert q.loc["w", "n_annotations"] == 2
    # u agrees with the vote on a (x) and b (y); w disagrees on a
    assert q.loc["u", "accuracy"] > q.loc["w", "accuracy"]


def test_accepts_dense_and_long_frame():
    dense = np.array([[0, 0, 1], [1, 1, -1]])
    assert MajorityVote().fit(dense).predict().tolist() == [0, 1]
    frame = Annotations.from_dense(dense).to_frame()
    assert DawidSkene().fit(frame).predict().tolist() == [0, 1]


def reference_dawid_skene(dense, k, n_iter, smoothing=0.01):
    """Direct loop transcription of Dawid & Skene's EM, for checking the vectorized one."""
    n, a = dense.shape
    post = np.zeros((n, k))
    for i in range(n):
        for j in range(a):
            if dense[i, j] >= 0:
                post[i, dense[i, j]] += 1
        post[i] = post[i] / post[i].sum() if post[i].sum() else 1.0 / k
    for _ in range(n_iter):
        pi = np.full((a, k, k), smoothing)
        for i in range(n):
            for j in range(a):
                if dense[i, j] >= 0:
                    pi[j, :, dense[i, j]] += post[i]
        pi /= pi.sum(axis=2, keepdims=True)
        prior = post.sum(0) + smoothing
        prior /= prior.sum()
        for i in range(n):
            lp = np.log(prior).copy()
            for j in range(a):
                if dense[i, j] >= 0:
                    lp += np.log(pi[j, :, dense[i, j]])
            post[i] = np.exp(lp - lp.max())
            post[i] /= post[i].sum()
    return post, pi, prior


def test_dawid_skene_matches_reference_em():
    sim = simulate_crowd(n_items=120, n_classes=3, n_annotators=7, annotations_per_item=3, seed=4)
    dense = sim.annotations.to_dense()
    ds = DawidSkene(max_iter=7, tol=0).fit(sim.annotations)
    post, pi, prior = reference_dawid_skene(dense, 3, n_iter=7)
    np.testing.assert_allclose(ds.predict_proba(), post, atol=1e-10)
    np.testing.assert_allclose(ds.confusion_matrices_, pi, atol=1e-10)
    np.testing.assert_allclose(ds.class_priors_, prior, atol=1e-10)
    assert ds.n_iter_ == 7


def test_dawid_skene_beats_voting_and_finds_good_annotators():
    sim = simulate_crowd(n_items=3000, n_classes=4, n_annotators=40, annotations_per_item=5,
                         annotator_accuracy=(0.3, 0.95), seed=1)
    ds = DawidSkene().fit(sim.annotations)
    mv = MajorityVote().fit(sim.annotations)
    acc_ds = (ds.predict() == sim.y).mean()
    acc_mv = (mv.predict() == sim.y).mean()
    assert acc_ds > acc_mv + 0.01
    est = ds.annotator_quality_["accuracy"].to_numpy()
    assert np.corrcoef(est, sim.annotator_accuracy())[0, 1] > 0.95
    assert ds.confusion_matrices_.shape == (40, 4, 4)
    np.testing.assert_allclose(ds.confusion_matrices_.sum(axis=2), 1.0)
    # the log-likelihood of EM never decreases
    assert np.all(np.diff(ds.log_likelihood_) > -1e-9)


def test_unannotated_items_get_the_prior_and_new_annotations_are_scored():
    sim = simulate_crowd(n_items=400, n_classes=3, n_annotators=10, seed=2)
    ann = sim.annotations
    extra = Annotations(ann.items, ann.annotators, ann.labels, n_items=ann.n_items + 2,
                        annotator_ids=ann.annotator_ids, classes=ann.classes)
    ds = DawidSkene().fit(extra)
    np.testing.assert_allclose(ds.predict_proba()[-1], ds.class_priors_)
    again = ds.predict_proba(ann)
    np.testing.assert_allclose(again, ds.predict_proba()[:ann.n_items], atol=1e-8)
    other = Annotations([0], [0], [0], annotator_ids=["stranger"], classes=ann.classes)
    proba = ds.predict_proba(other)
    np.testing.assert_allclose(proba[0], ds.class_priors_)
    assert ds.n_unknown_annotations_ == 1


def test_fixed_class_prior_and_bad_prior():
    sim = simulate_crowd(n_items=200, n_classes=2, n_annotators=5, seed=3)
    ds = DawidSkene(class_prior=[0.5, 0.5]).fit(sim.annotations)
    np.testing.assert_allclose(ds.class_priors_, [0.5, 0.5])
    with pytest.raises(CrowdDataError, match="class prior"):
        DawidSkene(class_prior=[0.9, 0.9]).fit(sim.annotations)


def test_unfitted_model_says_so():
    with pytest.raises(RuntimeError, match="not fitted"):
        DawidSkene().predict_proba()


def test_registry():
    assert {"majority_vote", "dawid_skene"} <= set(available_label_models())
    assert isinstance(get_label_model("DS", max_iter=3), DawidSkene)
    with pytest.raises(ValueError, match="unknown label model 'nope'"):
        get_label_model("nope")


@pytest.mark.parametrize("name, bar", [("bluebirds", 0.88), ("product", 0.93), ("dog", 0.83)])
def test_dawid_skene_accuracy_on_real_sets(name, bar):
    ann, truth = load_truth_inference(require_data("truth_inference", name))
    known = truth >= 0
    ds_acc = (DawidSkene().fit(ann).predict()[known] == truth[known]).mean()
    mv_acc = (MajorityVote().fit(ann).predict()[known] == truth[known]).mean()
    assert ds_acc >= bar
    assert ds_acc >= mv_acc


def test_majority_vote_on_labelme_matches_reference_figure():
    data = load_labelme(require_data("labelme"))
    acc = (MajorityVote().fit(data.annotations).predict() == data.y_train).mean()
    assert acc == pytest.approx(0.769, abs=1e-3)  # figure in the data README (ties to lowest)


@pytest.mark.parametrize("model_cls", [DawidSkene, CommonNoiseModel, MixtureOfGroupsModel, LIA])
def test_never_below_voting_on_labeling_functions(model_cls):
    from crowd_keras.datasets import load_wrench

    w = load_wrench(require_data("wrench", "youtube"), "train")
    ann = Annotations.from_label_matrix(w.L, cardinality=2)
    mv = (MajorityVote().fit(ann).predict() == w.y).mean()
    model = model_cls().fit(ann)
    assert model.regime_ == "labeling_functions"
    assert (model.predict() == w.y).mean() >= mv
    assert model.predict_proba(ann).shape == (ann.n_items, 2)
    plain = model_cls(labeling_functions="ignore").fit(ann)
    assert plain.regime_ == "crowd"
    assert (plain.predict() == w.y).mean() < mv  # why the guard exists: it collapses


def labeling_function_votes(n=200, seed=0):
    """Binary truth; six functions that each vote one class only (the labeling-function
    regime)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    target = np.array([1, 1, 1, 0, 0, 0])
    fire = np.where(y[:, None] == target[None, :], 0.5, 0.08)
    return Annotations.from_label_matrix(np.where(rng.random((n, 6)) < fire, target, -1),
                                         cardinality=2)


#: the registered models with the labeling-function fallback (``labeling_functions=``)
FALLBACK_MODELS = [name for name in available_label_models(aliases=False)
                   if "labeling_functions" in get_label_model(name).get_params()]
FAST = {"lia": {"em_iterations": 1, "m_steps": 5}}


@pytest.mark.parametrize("name", FALLBACK_MODELS)
def test_a_labeling_function_refit_keeps_nothing_of_an_earlier_crowd_fit(name):
    """A crowd fit (with gold where the model takes it) then a refit on labeling-function
    votes answers as a fresh model: no gold prior, log-likelihood or network of the first
    crowd is left behind."""
    crowd = simulate_crowd(n_items=60, n_classes=3, n_annotators=8, annotations_per_item=3,
                           seed=0).annotations
    votes = labeling_function_votes()
    model = get_label_model(name, **FAST.get(name, {}))
    gold = {"gold": {crowd.item_ids[0]: crowd.classes[1]}} if model.accepts_gold else {}
    assert model.fit(crowd, **gold).regime_ == "crowd"
    fresh = get_label_model(name, **FAST.get(name, {})).fit(votes)
    assert model.fit(votes).regime_ == "labeling_functions"
    assert sorted(vars(model)) == sorted(vars(fresh))
    np.testing.assert_array_equal(model.predict_proba(), fresh.predict_proba())
    np.testing.assert_allclose(model.consensus_quality(), fresh.consensus_quality())


def test_auto_on_labeling_functions_counts_its_gold_and_forgets_an_earlier_fit():
    """The labeling-function path of ``auto`` reports the gold it was given (``n_gold_``,
    ``gold_class_counts_``), as the crowd path does, and none of an earlier fit's."""
    votes = labeling_function_votes()
    crowd = simulate_crowd(n_items=60, n_classes=2, n_annotators=8, annotations_per_item=3,
                           seed=0).annotations
    model = AutoLabelModel().fit(crowd, gold={crowd.item_ids[i]: crowd.classes[1]
                                             for i in range(5)})
    np.testing.assert_array_equal(model.gold_class_counts_, [0, 5])
    model.fit(votes)
    assert model.regime_ == "labeling_functions" and model.n_gold_ == 0
    np.testing.assert_array_equal(model.gold_class_counts_, [0, 0])
    gold = {votes.item_ids[i]: votes.classes[c] for i, c in [(0, 0), (1, 0), (2, 1)]}
    model.fit(votes, gold=gold)
    assert model.n_gold_ == 3
    np.testing.assert_array_equal(model.gold_class_counts_, [2, 1])
    np.testing.assert_array_equal(model.predict()[:3], [0, 0, 1])


def test_new_frame_with_the_fits_own_column_names_is_told_how_to_read_it():
    """fit(frame, item=..., ...) takes other column names; predict_proba(new) reads the
    defaults and only pointed to cleanlab's wide layout."""
    from crowd_keras import CrowdDataError
    from crowd_keras.aggregation import DawidSkene

    frame = pd.DataFrame({"question": [1, 1, 2, 2], "rater": ["a", "b"] * 2,
                          "answer": [0, 0, 1, 1]})
    model = DawidSkene().fit(frame, item="question", annotator="rater", label="answer")
    with pytest.raises(CrowdDataError, match=r"read it with Annotations.from_frame\(frame, "
                                             r"item=\.\.\., annotator=\.\.\., label=\.\.\., "
                                             r"classes=model.annotations_.classes\)"):
        model.predict_proba(frame)
    from crowd_keras import Annotations
    new = Annotations.from_frame(frame, item="question", annotator="rater", label="answer",
                                 classes=model.annotations_.classes)
    np.testing.assert_allclose(model.predict_proba(new), model.posteriors_)
