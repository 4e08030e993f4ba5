"""GLAD, MACE and the abstain-aware Dawid-Skene as EM-step protocols: split into blocks, on
Dask and with gold labels, each fit is the in-memory fit."""
import numpy as np
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import GLAD, MACE, AbstainAwareDawidSkene
from crowd_keras.datasets import simulate_crowd

from protocol_blocks import dask_posteriors, split_fit

pytest.importorskip("dask.dataframe")

TOL = 1e-6


def crowd():
    return simulate_crowd(n_items=300, n_classes=3, n_annotators=15, annotations_per_item=4,
                          annotator_accuracy=(0.4, 0.9), seed=5).annotations


def labeling_functions(n=600, seed=0):
    """Binary truth; six functions that each vote one class only, mostly on their own class."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    target = np.array([1, 1, 1, 0, 0, 0])
    fire = np.where(y[:, None] == target[None, :], 0.5, 0.08)
    L = np.where(rng.random((n, 6)) < fire, target[None, :], -1)
    return Annotations.from_label_matrix(L, cardinality=2)


MODELS = {
    "glad": (GLAD, crowd),
    "mace": (lambda: MACE(restarts=3), crowd),
    "mace_em": (lambda: MACE(method="em", restarts=2, max_iter=5), crowd),
    "abstain_crowd": (AbstainAwareDawidSkene, crowd),
    "abstain_labeling_functions": (AbstainAwareDawidSkene, labeling_functions),
    "abstain_three_classes": (lambda: AbstainAwareDawidSkene(abstain="response", anchor="votes"),
                              crowd),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_fit_split_into_blocks_is_the_one_block_fit(name):
    make, data = MODELS[name]
    ann = data()
    whole = make().fit(ann)
    _, split, post = split_fit(make(), ann, 3)
    np.testing.assert_allclose(post, whole.posteriors_, atol=TOL)
    np.testing.assert_allclose(split.confusion_matrices_, whole.confusion_matrices_, atol=TOL)
    np.testing.assert_allclose(split.class_priors_, whole.class_priors_, atol=TOL)
    assert split.n_iter_ == whole.n_iter_


@pytest.mark.parametrize("name", ["glad", "mace"])
def test_on_dask_by_registry_name_as_in_memory(name):
    from crowd_keras.distributed import supported_methods

    assert name in supported_methods()
    ann = crowd()
    reference = MODELS[name][0]().fit(ann)
    params = {"restarts": 3} if name == "mace" else {}
    proba, result, _ = dask_posteriors(ann, name, 4, **params)
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=TOL)
    expected, got = reference.annotator_quality_, result.annotator_quality
    assert list(got.columns) == list(expected.columns)
    for column in got.columns[2:]:
        np.testing.assert_allclose(got[column], expected[column], atol=TOL)


@pytest.mark.parametrize("data", [crowd, labeling_functions])
def test_abstain_aware_model_on_dask_through_the_protocol(data):
    from crowd_keras.distributed.methods import ProtocolMethod

    ann = data()
    ann = ann.subset(np.flatnonzero(ann.annotations_per_item() > 0))   # a frame's items vote
    reference = AbstainAwareDawidSkene().fit(ann)
    proba, result, _ = dask_posteriors(ann, ProtocolMethod(AbstainAwareDawidSkene()), 3)
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=TOL)
    assert result.model.regime_ == reference.regime_


def gold_against_the_votes(ann, n=25):
    """Codes of the first ``n`` items set to a class other than the vote's winner."""
    winner = np.argmax(ann.label_counts(), axis=1)
    gold = np.full(ann.n_items, -1)
    gold[:n] = (winner[:n] + 1) % ann.n_classes
    return gold


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gold_items_are_held_at_their_class(name):
    make, data = MODELS[name]
    ann = data()
    gold = gold_against_the_votes(ann)
    model = make()
    assert model.accepts_gold
    fitted = model.fit(ann, gold=gold)
    np.testing.assert_array_equal(fitted.predict()[:25], gold[:25])
    assert np.isfinite(fitted.predict_proba()).all()
    # gold as a mapping from item id to label is the same
    mapping = {ann.item_ids[i]: ann.classes[gold[i]] for i in range(25)}
    np.testing.assert_allclose(make().fit(ann, gold=mapping).predict_proba(),
                               fitted.predict_proba(), atol=1e-12)


@pytest.mark.parametrize("name, make", [("glad", GLAD), ("mace", lambda: MACE(restarts=10)),
                                        ("abstain_dawid_skene", AbstainAwareDawidSkene)])
def test_gold_on_dask_as_in_memory(name, make):
    ann = crowd()
    gold = gold_against_the_votes(ann)
    mapping = {ann.item_ids[i]: ann.classes[gold[i]] for i in range(25)}
    reference = make().fit(ann, gold=mapping)
    proba, _, labels = dask_posteriors(ann, name, 3, gold=mapping)
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=TOL)
    assert (labels["label"].to_numpy()[:25] == ann.classes[gold[:25]]).all()


def test_predict_proba_of_the_fitted_annotations_is_the_fit():
    ann = crowd()
    for model in (GLAD().fit(ann), MACE(restarts=2).fit(ann),
                  AbstainAwareDawidSkene().fit(ann)):
        np.testing.assert_allclose(model.predict_proba(ann), model.predict_proba(), atol=1e-9)


def test_mace_restarts_each_stop_by_their_own_rule():
    """A restart that has settled stops while the others go on: the winner's iterations are
    those of its own EM, and more restarts never lower the winner's marginal likelihood."""
    ann = crowd()
    one = MACE(restarts=1).fit(ann)
    many = MACE(restarts=4).fit(ann)
    assert one.restart_ == 0 and 1 <= one.n_iter_ <= 50
    assert many.log_marginal_likelihood_ >= one.log_marginal_likelihood_
    capped = MACE(restarts=3, max_iter=2, tol=0.0).fit(ann)
    assert capped.n_iter_ == 2
    assert MACE(restarts=2, max_iter=0).fit(ann).n_iter_ == 0
