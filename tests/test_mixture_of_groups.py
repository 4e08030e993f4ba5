"""Mixture of annotator groups (Mena & Ñanculef 2019): label model, Keras layer, loss and EM."""
import re

import keras
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score

from conftest import require_data
from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import DawidSkene, MajorityVote
from crowd_keras.mixture_of_groups.em import kmeans
from crowd_keras.mixture_of_groups.label_model import MixtureOfGroupsModel
from crowd_keras.datasets import load_labelme, load_truth_inference, simulate_crowd
from crowd_keras.mixture_of_groups.layers import MixtureOfGroups
from crowd_keras.losses import MaskedMultiCrossEntropy
from crowd_keras.mixture_of_groups.losses import LabelCountCrossEntropy
from crowd_keras.models import CrowdModel
from crowd_keras.mixture_of_groups.trainer import MixtureOfGroupsEM


@pytest.fixture(scope="module")
def crowd():
    """Experts (0.9), non-experts (0.6) and spammers, 60 annotators, ~125 labels each."""
    return simulate_crowd(n_items=1500, n_classes=4, n_annotators=60, annotations_per_item=5,
                          groups="default", seed=3)


def accuracy(pred, truth):
    return float(np.mean(np.asarray(pred) == truth))


def match_groups(found, truth, n_found):
    """Found group index → true group index (Hungarian matching on the contingency table)."""
    table = np.zeros((n_found, truth.max() + 1))
    np.add.at(table, (found, truth), 1)
    rows, cols = linear_sum_assignment(-table)
    return dict(zip(rows, cols))


# ---------------------------------------------------------------------------- label model
def test_individual_recovers_groups_and_mixing(crowd):
    model = MixtureOfGroupsModel(num_groups=3).fit(crowd.annotations)
    found = model.memberships_.argmax(axis=1)
    assert adjusted_rand_score(crowd.annotator_groups, found) >= 0.9
    true_alpha = np.bincount(crowd.annotator_groups, minlength=3) / len(crowd.annotator_groups)
    mapping = match_groups(found, crowd.annotator_groups, 3)
    for m, g in mapping.items():
        assert abs(model.mixing_coefficients_[m] - true_alpha[g]) <= 0.05
        assert np.abs(model.group_confusions_[m] - crowd.group_confusions[g]).max() <= 0.1
    mv = accuracy(MajorityVote().fit(crowd.annotations).predict(), crowd.y)
    assert accuracy(model.predict(), crowd.y) >= mv + 0.03
    assert model.confusion_matrices_.shape == (60, 4, 4)
    np.testing.assert_allclose(model.confusion_matrices_.sum(axis=2), 1.0, atol=1e-9)
    quality = model.annotator_quality_
    experts = crowd.annotator_groups == 0
    assert quality["accuracy"][experts].mean() > quality["accuracy"][~experts].mean() + 0.2


def test_individual_em_steps_equal_their_per_annotation_form(crowd):
    """The mean-field steps run on Dawid-Skene's vote counts: the same numbers as the
    per-annotation sums they replace (q(g), q(z), α, β)."""
    from crowd_keras.mixture_of_groups.em import IndividualEM

    ann = crowd.annotations
    it, ia, y = ann.items, ann.annotators, ann.labels
    em = IndividualEM(ann, 3, 1.0)
    rng = np.random.default_rng(0)
    post = rng.dirichlet(np.ones(4), ann.n_items)
    groups = rng.dirichlet(np.ones(3), ann.n_annotators)
    alpha, beta, raw = em.m_step(post, groups)
    ref = np.zeros((3, 4, 4))
    np.add.at(ref.transpose(2, 0, 1), y, groups[ia][:, :, None] * post[it][:, None, :])
    np.testing.assert_allclose(raw, ref, rtol=1e-12)
    lb = np.log(beta).transpose(2, 0, 1)[y]                                   # (n, M, K)
    per = np.einsum("nk,nmk->nm", post[it], lb)
    logits = np.stack([np.bincount(ia, per[:, m], ann.n_annotators) for m in range(3)], 1)
    logits += np.log(alpha)
    want = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(em.group_step(post, alpha, beta), want / want.sum(1, keepdims=True),
                               rtol=1e-9)
    per = np.einsum("nm,nmk->nk", groups[ia], lb)
    logits = np.stack([np.bincount(it, per[:, c], ann.n_items) for c in range(4)], 1)
    want = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(em.item_step(np.zeros(4), groups, beta)[0],
                               want / want.sum(1, keepdims=True), rtol=1e-9)


def test_extra_group_gets_zero_weight(crowd):
    model = MixtureOfGroupsModel(num_groups=4).fit(crowd.annotations)
    alpha = np.sort(model.mixing_coefficients_)
    assert alpha[0] <= 0.01
    assert alpha[1] >= 0.1
    assert adjusted_rand_score(crowd.annotator_groups, model.memberships_.argmax(1)) >= 0.9


def test_restart_iterations_are_each_restarts_own():
    """``restart_n_iter_`` counts each restart's EM iterations (the fit's work): restart ``r``
    is the one-restart fit seeded ``seed + r``, and ``n_iter_`` is the kept restart's."""
    ann = simulate_crowd(n_items=800, n_classes=4, n_annotators=40, annotations_per_item=3,
                         seed=1).annotations
    model = MixtureOfGroupsModel(restarts=3, seed=5).fit(ann)
    assert model.restart_n_iter_.shape == (3,)
    assert len(set(model.restart_n_iter_.tolist())) > 1   # the restarts differ here
    for r in range(3):
        alone = MixtureOfGroupsModel(restarts=1, seed=5 + r).fit(ann)
        assert model.restart_n_iter_[r] == alone.n_iter_ == len(alone.log_likelihood_)
        assert model.restart_objectives_[r] == alone.objective_
    assert model.n_iter_ == model.restart_n_iter_[model.restart_objectives_.argmax()]


def test_global_scenario_from_counts(crowd):
    counts = crowd.annotations.label_counts()
    model = MixtureOfGroupsModel(num_groups=3).fit_counts(counts)
    assert model.scenario_ == "global"
    assert model.predict_proba().shape == (1500, 4)
    mv = accuracy(MajorityVote().fit(crowd.annotations).predict(), crowd.y)
    assert accuracy(model.predict(), crowd.y) >= mv - 0.01
    # the crowd's matrix is identifiable from counts alone (the split into groups is not)
    share = np.bincount(crowd.annotations.annotators, minlength=60)
    truth = np.einsum("a,akj->kj", share / share.sum(), crowd.confusion_matrices)
    assert np.abs(model.global_confusion_ - truth).max() <= 0.05
    # pseudo-annotators "slot-k" keep the common surface
    assert list(model.annotations_.annotator_ids) == [f"slot-{s}" for s in range(5)]
    assert model.confusion_matrices_.shape == (5, 4, 4)
    np.testing.assert_allclose(model.mixing_coefficients_.sum(), 1.0)


def test_unseen_annotators_are_placed_in_groups(crowd):
    ann = crowd.annotations
    rng = np.random.default_rng(0)
    held_out = rng.choice(60, size=15, replace=False)
    seen = ~np.isin(ann.annotators, held_out)
    model = MixtureOfGroupsModel(num_groups=3).fit(ann.select(seen))
    probs = model.group_probabilities(ann)                         # all 60, 15 never seen
    assert probs.shape == (60, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert adjusted_rand_score(crowd.annotator_groups[held_out],
                               probs[held_out].argmax(1)) >= 0.8
    conf = model.annotator_confusions(ann)
    assert conf.shape == (60, 4, 4)
    # using the unseen annotators' labels helps compared with dropping them
    without = accuracy(model.predict(), crowd.y)
    with_new = accuracy(model.predict(ann), crowd.y)
    assert with_new > without + 0.02
    # given item posteriors (e.g. a classifier's p(z|x)), section 3.4 exactly
    exact = model.group_probabilities(ann, item_posteriors=np.eye(4)[crowd.y])
    assert adjusted_rand_score(crowd.annotator_groups, exact.argmax(1)) >= 0.9


def test_group_probabilities_refuse_item_posteriors_that_are_not_probabilities():
    # a NaN or negative row of item_posteriors made its annotators' memberships NaN, silently
    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=4)
    ann = sim.annotations
    model = MixtureOfGroupsModel(num_groups=2, restarts=1, labeling_functions="ignore").fit(ann)
    t = np.eye(3)[sim.y]
    np.testing.assert_allclose(model.group_probabilities(ann, item_posteriors=t).sum(axis=1),
                               1.0)
    for value in (np.nan, -0.5):
        bad = t.copy()
        bad[7, 0] = value
        with pytest.raises(CrowdDataError, match=r"item_posteriors row 7 \(item 7\) is not "
                                                 r"finite and non-negative"):
            model.group_probabilities(ann, item_posteriors=bad)
        with pytest.raises(CrowdDataError, match="item_posteriors row 7"):
            model.annotator_confusions(ann, item_posteriors=bad)


def test_bad_input_is_reported(crowd):
    with pytest.raises(CrowdDataError, match="non-negative integers"):
        MixtureOfGroupsModel().fit_counts(np.array([[1, -1], [0, 2]]))
    with pytest.raises(CrowdDataError, match="2-D"):
        MixtureOfGroupsModel().fit_counts(np.array([1, 2]))
    with pytest.raises(ValueError, match="num_groups"):
        MixtureOfGroupsModel(num_groups=0).fit(crowd.annotations)
    with pytest.raises(ValueError, match="scenario"):
        MixtureOfGroupsModel(scenario="both").fit(crowd.annotations)
    with pytest.raises(CrowdDataError, match="no annotations"):
        MixtureOfGroupsModel().fit(Annotations([], [], [], n_items=3, n_annotators=2, n_classes=2))
    model = MixtureOfGroupsModel().fit(crowd.annotations)
    other = Annotations([0], [0], [0], classes=["a", "b", "c", "d"])
    with pytest.raises(CrowdDataError, match="classes"):
        model.predict_proba(other)


def test_kmeans_separates_clusters():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [5, 5], [0, 8]])
    truth = rng.integers(0, 3, 300)
    points = centres[truth] + rng.normal(scale=0.5, size=(300, 2))
    assert adjusted_rand_score(truth, kmeans(points, 3, seed=1)) == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bluebirds", "product", "dog", "labelme"])
def test_default_not_worse_than_majority_vote_on_real_sets(name):
    if name == "labelme":
        data = load_labelme(require_data("labelme"))
        ann, truth = data["annotations"], data["y_train"]
    else:
        ann, truth = load_truth_inference(require_data("truth_inference", name))
    known = truth >= 0
    mv = accuracy(MajorityVote().fit(ann).predict()[known], truth[known])
    mog = accuracy(MixtureOfGroupsModel().fit(ann).predict()[known], truth[known])
    assert mog >= mv + 0.01, (name, mog, mv)


# ---------------------------------------------------------------------------- loss
def test_label_count_cross_entropy_is_eq4_mean_over_labelled_items():
    counts = np.array([[2, 1, 0], [0, 0, 0], [0, 3, 1]], dtype="float32")
    probs = np.array([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.1, 0.6, 0.3]], dtype="float32")
    expected = -(2 * np.log(0.7) + np.log(0.2) + 3 * np.log(0.6) + np.log(0.3)) / 2
    loss = LabelCountCrossEntropy()
    np.testing.assert_allclose(float(loss(counts, probs)), expected, rtol=1e-5)
    normalized = -((2 * np.log(0.7) + np.log(0.2)) / 3 + (3 * np.log(0.6) + np.log(0.3)) / 4) / 2
    np.testing.assert_allclose(float(LabelCountCrossEntropy(normalize=True)(counts, probs)),
                               normalized, rtol=1e-5)
    logits = np.log(probs)
    np.testing.assert_allclose(float(LabelCountCrossEntropy(from_logits=True)(counts, logits)),
                               expected, rtol=1e-5)
    empty = LabelCountCrossEntropy()(np.zeros((2, 3), "float32"), probs[:2])
    assert float(empty) == 0.0
    with pytest.raises(ValueError, match="do not match"):
        loss(counts[:, :2], probs)
    clone = LabelCountCrossEntropy.from_config(LabelCountCrossEntropy(normalize=True).get_config())
    assert clone.normalize and not clone.from_logits



def test_label_count_cross_entropy_takes_temporal_sample_weights_as_keras_losses_do():
    # (batch, time) weights of a tagger (Keras' temporal sample weights, which its own
    # losses take) failed in a backend multiply against the per-item values
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 3, size=(3, 4, 3)).astype("float32")
    counts[0, 1] = 0                                                 # an unlabelled step
    probs = rng.dirichlet(np.ones(3), size=(3, 4)).astype("float32")
    weights = rng.random((3, 4)).astype("float32")
    nll = -(counts * np.log(probs)).sum(-1)
    labelled = counts.sum(-1) > 0
    by_hand = (weights * nll)[labelled].sum() / labelled.sum()
    loss = LabelCountCrossEntropy()
    np.testing.assert_allclose(float(loss(counts, probs, sample_weight=weights)), by_hand,
                               rtol=1e-5)
    # one weight per item, spread over its steps: the per-item value
    per_item = rng.random(3).astype("float32")
    np.testing.assert_allclose(
        float(loss(counts, probs, sample_weight=np.repeat(per_item[:, None], 4, 1))),
        float(loss(counts, probs, sample_weight=per_item)), rtol=1e-5)
    np.testing.assert_allclose(float(LabelCountCrossEntropy(reduction="sum")(
        counts, probs, sample_weight=weights)), by_hand * 3, rtol=1e-5)
    with pytest.raises(ValueError, match=r"sample_weight of shape \(3, 5\)"):
        loss(counts, probs, sample_weight=np.ones((3, 5), "float32"))
    # in fit and evaluate of a tagger ending in the global layer
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4, 2)), keras.layers.Dense(3, activation="softmax"),
                              MixtureOfGroups(2, 3)])
    model.compile("adam", LabelCountCrossEntropy())
    x = rng.normal(size=(3, 4, 2)).astype("float32")
    model.fit(x, counts, sample_weight=weights, epochs=1, verbose=0)
    assert np.isfinite(model.evaluate(x, counts, sample_weight=weights, verbose=0))

# ---------------------------------------------------------------------------- layer
def test_global_layer_is_eq3():
    layer = MixtureOfGroups(3, 4)
    probs = np.random.default_rng(0).dirichlet(np.ones(4), size=5).astype("float32")
    out = keras.ops.convert_to_numpy(layer(probs))
    alpha, beta = layer.mixing_coefficients(), layer.group_confusions()
    np.testing.assert_allclose(alpha, 1 / 3, rtol=1e-6)
    np.testing.assert_allclose(np.diagonal(beta, axis1=1, axis2=2)[:, 0], [0.9, 0.575, 0.25],
                               rtol=1e-5)
    np.testing.assert_allclose(out, np.einsum("bk,m,mkj->bj", probs, alpha, beta), rtol=1e-5)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    new_beta = np.stack([np.eye(4) * 0.7 + 0.075, np.full((4, 4), 0.25), np.eye(4)])
    layer.set_parameters(confusions=new_beta, mixing=[0.5, 0.5, 0.0])
    np.testing.assert_allclose(layer.global_confusion(), 0.5 * new_beta[0] + 0.5 * new_beta[1],
                               atol=1e-5)
    with pytest.raises(ValueError, match="sum to 1"):
        layer.set_parameters(mixing=[0.5, 0.6, 0.0])
    with pytest.raises(ValueError, match="classes"):
        MixtureOfGroups(3, 5)(probs)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="sparse gradients of a gather are TensorFlow's")
def test_indexed_layer_reads_only_the_listed_annotators_memberships():
    # the listed rows are gathered before the (row-wise) softmax: a gradient on those rows
    # only, so LazyAdam updates them alone (a step costs O(batch), not O(annotators))
    import tensorflow as tf

    layer = MixtureOfGroups(2, 3, num_annotators=50)
    probs = np.random.default_rng(1).dirichlet(np.ones(3), size=4).astype("float32")
    ids = np.array([[7, 3], [3, -1], [49, 7], [-1, -1]], "int32")
    layer([probs, ids])
    with tf.GradientTape() as tape:
        out = layer([probs, ids])
    grad = tape.gradient(out, layer.membership_logits.value)
    assert isinstance(grad, tf.IndexedSlices)
    assert set(np.unique(grad.indices.numpy())) <= {0, 3, 7, 49}


def test_individual_layer_dense_and_indexed_agree():
    layer = MixtureOfGroups(2, 3, num_annotators=4)
    probs = np.random.default_rng(1).dirichlet(np.ones(3), size=6).astype("float32")
    dense = keras.ops.convert_to_numpy(layer(probs))
    assert dense.shape == (6, 4, 3)
    memberships = np.array([[1, 0], [0, 1], [0.5, 0.5], [0.2, 0.8]])
    layer.set_parameters(memberships=memberships)
    dense = keras.ops.convert_to_numpy(layer(probs))
    ids = np.array([[2, 0, -1]] * 6, dtype="int32")
    indexed = keras.ops.convert_to_numpy(layer([probs, ids]))
    np.testing.assert_allclose(indexed[:, :2], dense[:, [2, 0]], rtol=1e-5)
    expected = np.einsum("bk,am,mkj->baj", probs, np.maximum(memberships, 1e-7),
                         layer.group_confusions())
    np.testing.assert_allclose(np.exp(dense), expected, rtol=1e-4, atol=1e-6)
    assert layer.confusion_matrices().shape == (4, 3, 3)
    with pytest.raises(ValueError, match="num_annotators"):
        MixtureOfGroups(2, 3)([probs, ids])


def test_individual_layer_indexed_form_on_sequences_matches_the_dense_form():
    # (batch, time, K) probabilities: the listed annotators' outputs at every step are the
    # dense form's, and both are Eq. 3 per annotator
    layer = MixtureOfGroups(2, 3, num_annotators=4)
    probs = np.random.default_rng(3).dirichlet(np.ones(3), size=(5, 7)).astype("float32")
    layer(probs)
    memberships = np.array([[1, 0], [0, 1], [0.5, 0.5], [0.2, 0.8]])
    layer.set_parameters(memberships=memberships)
    dense = keras.ops.convert_to_numpy(layer(probs))
    assert dense.shape == (5, 7, 4, 3)
    ids = np.array([[3, 1, -1], [0, 2, 1], [2, -1, -1], [1, 3, 0], [0, 0, 2]], dtype="int32")
    indexed = keras.ops.convert_to_numpy(layer([probs, ids]))
    assert indexed.shape == (5, 7, 3, 3)
    expected = np.einsum("btk,am,mkj->btaj", probs, np.maximum(memberships, 1e-7),
                         layer.group_confusions())
    np.testing.assert_allclose(np.exp(dense), expected, rtol=1e-4, atol=1e-6)
    for b, row in enumerate(ids):
        for slot, a in enumerate(row):
            if a >= 0:
                np.testing.assert_allclose(indexed[b, :, slot], dense[b, :, a], rtol=1e-5,
                                           atol=1e-6)


def test_layer_save_and_load(tmp_path):
    clf = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="softmax")])
    x = np.random.default_rng(2).normal(size=(8, 5)).astype("float32")
    x_in = keras.Input((5,))
    glob = keras.Model(x_in, MixtureOfGroups(2, 3, name="groups")(clf(x_in)))
    glob.compile("adam", LabelCountCrossEntropy())
    glob.fit(x, np.ones((8, 3), "float32"), epochs=1, verbose=0)
    glob.save(tmp_path / "global.keras")
    loaded = keras.models.load_model(tmp_path / "global.keras")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), glob.predict(x, verbose=0),
                               rtol=1e-6)
    assert isinstance(loaded.get_layer("groups"), MixtureOfGroups)

    crowd_model = CrowdModel(keras.models.clone_model(clf), MixtureOfGroups(2, 3, num_annotators=4))
    crowd_model.compile("adam", MaskedMultiCrossEntropy(from_logits=True))
    crowd_model.fit(x, np.array([[0, 1, -1, 2]] * 8), epochs=1, verbose=0)
    crowd_model.save(tmp_path / "individual.keras")
    again = keras.models.load_model(tmp_path / "individual.keras")
    np.testing.assert_allclose(again.noise_layer.confusion_matrices(),
                               crowd_model.noise_layer.confusion_matrices(), rtol=1e-6)
    config = MixtureOfGroups(2, 3, num_annotators=4, confusion_initializer="zeros").get_config()
    clone = MixtureOfGroups.from_config(config)
    assert (clone.num_groups, clone.num_classes, clone.num_annotators) == (2, 3, 4)



@pytest.mark.parametrize("num_annotators", [None, 2])
def test_layer_rejects_probabilities_of_another_rank_naming_the_shapes(num_annotators):
    """(batch, [time,] K) only: a vector or an image-shaped input was silently mixed over its
    last axis (global form, indexed form: a 5-D output) or an Einsum rank error."""
    for shape in [(3,), (2, 2, 2, 3)]:
        probs = np.full(shape, 1 / 3, "float32")
        expected = r"expects probabilities of shape \(batch, \[time,\] 3\), got "
        with pytest.raises(ValueError, match=expected + re.escape(str(shape))):
            MixtureOfGroups(2, 3, num_annotators=num_annotators)(probs)
    if num_annotators:
        with pytest.raises(ValueError, match=r"annotator_ids must be \(batch, k\), got shape "
                                             r"\(2, 2, 1\)"):
            MixtureOfGroups(2, 3, num_annotators=2)([np.full((2, 3), 1 / 3, "float32"),
                                                     np.zeros((2, 2, 1), "int32")])


# ---------------------------------------------------------------------------- EM trainer
def small_mlp(n_features, n_classes):
    return keras.Sequential([keras.Input((n_features,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(n_classes, activation="softmax")])


def test_em_trainer_global_learns_from_counts(crowd, tmp_path):
    keras.utils.set_random_seed(0)
    clf = small_mlp(10, 4)
    trainer = MixtureOfGroupsEM(clf, 3, max_iter=10, restarts=2, batch_size=32, seed=0,
                                optimizer=keras.optimizers.Adam(1e-2), progress=False)
    trainer.fit(crowd.x, counts=crowd.annotations.label_counts())
    assert trainer.classifier_ is clf
    assert accuracy(trainer.predict(crowd.x), crowd.y) >= 0.9
    assert trainer.log_likelihood_[-1] == trainer.restart_log_likelihoods_.max()
    np.testing.assert_allclose(trainer.mixing_coefficients_.sum(), 1.0)
    np.testing.assert_allclose(trainer.group_confusions_.sum(axis=2), 1.0)
    # section 3.4 for annotators: the experts' implied matrices are the most diagonal
    conf = trainer.annotator_confusions(crowd.x, crowd.annotations)
    diag = np.trace(conf, axis1=1, axis2=2) / 4
    experts = crowd.annotator_groups == 0
    assert diag[experts].mean() > diag[~experts].mean()
    model = trainer.annotation_model()
    model.save(tmp_path / "cmm.keras")
    loaded = keras.models.load_model(tmp_path / "cmm.keras")
    np.testing.assert_allclose(loaded.predict(crowd.x[:20], verbose=0),
                               model.predict(crowd.x[:20], verbose=0), rtol=1e-5)


def test_em_trainer_item_likelihood_recovers_crowd_matrix(crowd):
    keras.utils.set_random_seed(2)
    trainer = MixtureOfGroupsEM(small_mlp(10, 4), 3, likelihood="item", max_iter=6,
                                batch_size=32, optimizer=keras.optimizers.Adam(1e-2), seed=2,
                                progress=False)
    trainer.fit(crowd.x, counts=crowd.annotations.label_counts())
    share = np.bincount(crowd.annotations.annotators, minlength=60)
    truth = np.einsum("a,akj->kj", share / share.sum(), crowd.confusion_matrices)
    found = np.einsum("m,mkj->kj", trainer.mixing_coefficients_, trainer.group_confusions_)
    assert np.abs(found - truth).max() <= 0.05
    assert accuracy(trainer.predict(crowd.x), crowd.y) >= 0.9
    with pytest.raises(ValueError, match="likelihood"):
        MixtureOfGroupsEM(small_mlp(10, 4), likelihood="pair", progress=False).fit(
            crowd.x, crowd.annotations)


def test_em_trainer_individual_recovers_groups(crowd):
    keras.utils.set_random_seed(1)
    trainer = MixtureOfGroupsEM(small_mlp(10, 4), 3, scenario="individual", max_iter=8,
                                batch_size=32, optimizer=keras.optimizers.Adam(1e-2), seed=1,
                                progress=False)
    trainer.fit(crowd.x, crowd.annotations)
    assert adjusted_rand_score(crowd.annotator_groups, trainer.memberships_.argmax(1)) >= 0.9
    ds = accuracy(DawidSkene().fit(crowd.annotations).predict(), crowd.y)
    assert accuracy(trainer.predict(crowd.x), crowd.y) >= ds
    assert trainer.layer_.confusion_matrices().shape == (60, 4, 4)


def test_em_trainer_rejects_bad_input(crowd):
    trainer = MixtureOfGroupsEM(small_mlp(10, 4), 3, progress=False)
    with pytest.raises(CrowdDataError, match="rows"):
        trainer.fit(crowd.x[:10], crowd.annotations)
    with pytest.raises(CrowdDataError, match="exactly one"):
        trainer.fit(crowd.x)
    with pytest.raises(CrowdDataError, match="classes"):
        MixtureOfGroupsEM(small_mlp(10, 3), progress=False).fit(crowd.x, crowd.annotations)
    with pytest.raises(CrowdDataError, match="individual"):
        MixtureOfGroupsEM(small_mlp(10, 4), scenario="individual", progress=False).fit(
            crowd.x, counts=crowd.annotations.label_counts())
    # a short y_val failed with a numpy broadcast error after the first M-step
    with pytest.raises(CrowdDataError, match=r"x_val \(10 rows\), got shape \(5,\)"):
        trainer.fit(crowd.x, crowd.annotations, validation_data=(crowd.x[:10], crowd.y[:5]))
    # a dataset has no rows to count: was "IndexError: tuple index out of range"
    tf = pytest.importorskip("tensorflow")
    with pytest.raises(TypeError, match="x must be arrays.*got _TensorSliceDataset"):
        trainer.fit(tf.data.Dataset.from_tensor_slices(crowd.x), crowd.annotations)


def test_kmeans_distances_and_nearest_are_the_row_forms():
    """K-means' clusters-first distances are bit for bit the (points, clusters) form, and
    the nearest cluster is numpy's argmin (the first of equal distances: repeated centres
    and points tie)."""
    from crowd_keras.mixture_of_groups.em import _distances, _nearest

    rng = np.random.default_rng(3)
    x = rng.dirichlet(np.ones(9), size=2000)
    x[::10] = x[1]
    centres = np.concatenate([x[[1, 5]], x[[1]], rng.dirichlet(np.ones(9), size=3)])
    sq = np.einsum("nd,nd->n", x, x)
    rows = sq[:, None] - 2.0 * x @ centres.T + np.einsum("cd,cd->c", centres, centres)[None]
    d = np.empty((len(centres), len(x)))
    _distances(x, sq, centres, out=d)
    assert np.array_equal(d, rows.T)
    assert (rows[:, 0] == rows[:, 2]).all()             # cluster 2 repeats cluster 0
    np.testing.assert_array_equal(_nearest(d), np.argmin(rows, axis=1))
