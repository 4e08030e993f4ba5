"""A trained crowd model as a label model: item posteriors, consensus and annotator quality.

On simulated crowds with learnable features (``simulate_crowd``: Gaussian class clusters,
annotators of accuracy 0.35-0.9 with asymmetric confusions), the posterior given features
*and* annotations must beat both the classifier alone and majority vote on the training
items, and the estimated annotator accuracies must rank the annotators as their true
accuracies do.
"""
import numpy as np
import pytest

keras = pytest.importorskip("keras")
from scipy.stats import spearmanr  # noqa: E402

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import MajorityVote  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.layers import CrowdLayer, CrowdRegressionLayer  # noqa: E402
from crowd_keras.conal.layers import AnnotatorGate, CommonNoiseAdaptation  # noqa: E402
from crowd_keras.models import CrowdModel  # noqa: E402
from crowd_keras.training import LIATrainer, MixtureOfGroupsEM  # noqa: E402

K, A = 3, 15


def crowd(seed, **kw):
    args = dict(n_items=400, n_classes=K, n_annotators=A, annotations_per_item=3, class_sep=2.0,
                annotator_accuracy=(0.35, 0.9), individual_noise="asymmetric", seed=seed)
    args.update(kw)
    return simulate_crowd(**args)


def mlp(seed, k=K):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(k, activation="softmax")])


def accuracy(pred, y):
    return float(np.mean(np.asarray(pred) == y))


def majority_accuracy(sim):
    return accuracy(MajorityVote().fit(sim.annotations).predict(), sim.y)


def rank_correlation(quality, sim, column="accuracy"):
    return spearmanr(quality[column], sim.annotator_accuracy())[0]


def crowd_model(sim, seed, kind="MW"):
    clf = mlp(seed)
    layer = (CrowdLayer(A, "MW") if kind == "MW" else
             CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A, embedding_dim=4)))
    model = CrowdModel(clf, layer)
    model.compile(keras.optimizers.Adam(1e-2))
    model.fit(sim.x, sim.annotations, epochs=12, batch_size=64, verbose=0)
    return model


_FITTED = {}


def fitted(kind, seed):
    """One fit per (kind, seed), shared by the tests of this module."""
    if (kind, seed) not in _FITTED:
        sim = crowd(seed)
        _FITTED[kind, seed] = sim, crowd_model(sim, seed, kind)
    return _FITTED[kind, seed]


def check_label_model(sim, post, classifier_probs, quality, n_annotators=A, min_rank=0.7):
    """Consensus ≥ classifier alone and ≥ majority vote; quality ranks the annotators."""
    assert post.shape == (len(sim.y), K)
    np.testing.assert_allclose(post.sum(1), 1.0, rtol=1e-9)
    consensus = accuracy(post.argmax(1), sim.y)
    assert consensus >= accuracy(classifier_probs.argmax(1), sim.y)
    assert consensus >= majority_accuracy(sim)
    assert list(quality.columns) == ["annotator", "n_annotations", "accuracy",
                                     "expected_accuracy"]
    assert len(quality) == n_annotators
    np.testing.assert_array_equal(quality["n_annotations"],
                                  sim.annotations.annotations_per_annotator())
    assert rank_correlation(quality, sim) > min_rank
    assert rank_correlation(quality, sim, "expected_accuracy") > min_rank


# ---------------------------------------------------------------------------- CrowdModel
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_crowd_layer_consensus_beats_classifier_and_vote(seed):
    sim, model = fitted("MW", seed)
    post = model.predict_proba_items(sim.x, sim.annotations)
    check_label_model(sim, post, model.classifier.predict(sim.x, verbose=0),
                      model.annotator_quality_)
    np.testing.assert_array_equal(model.consensus_labels(sim.x, sim.annotations), post.argmax(1))
    # the crowd layer's matrices do not depend on the item: the summary is the layer's
    np.testing.assert_allclose(model.confusion_matrices_, model.confusion_matrices(), atol=1e-5)
    np.testing.assert_allclose(model.class_priors_, post.mean(0), rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_conal_consensus_beats_classifier_and_vote(seed):
    sim, model = fitted("CoNAL", seed)
    post = model.predict_proba_items(sim.x, sim.annotations)
    check_label_model(sim, post, model.classifier.predict(sim.x, verbose=0),
                      model.annotator_quality_)


def test_conal_effective_confusion_mixes_common_matrix_by_omega():
    """CoNAL's per-annotator matrix is the mean over its items of
    softmax(ω W_g + (1 − ω) W_a), ω from the gate: computed here from the layer's parts."""
    sim, model = fitted("CoNAL", 0)
    layer = model.noise_layer
    ids, _ = sim.annotations.to_padded()
    omega = layer.omega_for(sim.x, ids)                                   # (items, k)
    wg = keras.ops.convert_to_numpy(layer.common_kernel) * layer.learning_rate_multiplier
    wa = keras.ops.convert_to_numpy(layer.kernel) * layer.learning_rate_multiplier
    ann = sim.annotations
    slot = np.argmax(ids[ann.items] == ann.annotators[:, None], axis=1)
    w = omega[ann.items, slot][:, None, None]
    logits = w * wg[None] + (1 - w) * wa[ann.annotators]
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    expected = np.stack([probs[ann.annotators == a].mean(0) for a in range(A)])
    np.testing.assert_allclose(model.confusion_matrices_, expected, atol=1e-5)
    acc = np.einsum("k,akk->a", model.class_priors_, expected)
    np.testing.assert_allclose(model.annotator_quality_["accuracy"], acc, atol=1e-5)


def test_posterior_confusions_tabulate_labels_against_the_consensus():
    """confusions="posterior": annotator a's row k is Σ over its items of p(z_i = k) on the
    label given (+ 0.01 per cell), normalised: checked with a plain loop."""
    sim, model = fitted("MW", 0)
    ann = sim.annotations
    post = model.predict_proba_items(sim.x, ann)
    by_model = model.annotator_quality_
    try:
        model.summarize_annotators(sim.x, ann, confusions="posterior")
        counts = np.zeros((A, K, K))
        for i, a, label in zip(ann.items, ann.annotators, ann.labels):
            counts[a, :, label] += post[i]
        expected = (counts + 0.01) / (counts.sum(-1, keepdims=True) + K * 0.01)
        np.testing.assert_allclose(model.confusion_matrices_, expected, atol=1e-9)
        quality = model.annotator_quality_
        np.testing.assert_array_equal(quality["n_annotations"], ann.annotations_per_annotator())
        assert rank_correlation(quality, sim) > 0.7
        with pytest.raises(ValueError, match="confusions"):
            model.summarize_annotators(sim.x, ann, confusions="layer")
    finally:
        model.summarize_annotators(sim.x, ann)                   # back to the default
    assert model.annotator_quality_.equals(by_model)


def test_forms_agree_and_missing_annotations_are_ignored():
    sim, model = fitted("MW", 0)
    ann = sim.annotations
    post = model.predict_proba_items(sim.x, ann)
    np.testing.assert_allclose(model.predict_proba_items(sim.x, ann.to_dense()), post, atol=1e-6)
    np.testing.assert_allclose(model.predict_proba_items(sim.x, ann.to_padded()), post,
                               atol=1e-6)
    # drop item 0's annotations: its posterior is the classifier's, the others' unchanged
    kept = ann.items != 0
    fewer = Annotations(ann.items[kept], ann.annotators[kept], ann.labels[kept],
                        n_items=ann.n_items, n_annotators=A, n_classes=K)
    other = model.predict_proba_items(sim.x, fewer)
    np.testing.assert_allclose(other[0], model.classifier.predict(sim.x[:1], verbose=0)[0],
                               atol=1e-5)
    np.testing.assert_allclose(other[1:], post[1:], atol=1e-9)
    # one more annotation moves its item towards the label given
    item, label = 1, int(np.argmin(post[1]))
    new = next(a for a in range(A) if a not in set(ann.annotators[ann.items == item]))
    extra = Annotations(np.r_[ann.items, item], np.r_[ann.annotators, new],
                        np.r_[ann.labels, label], n_items=ann.n_items, n_annotators=A,
                        n_classes=K)
    assert model.predict_proba_items(sim.x, extra)[item, label] > post[item, label]


def test_save_and_load_keep_the_label_model(tmp_path):
    sim, model = fitted("MW", 0)
    path = tmp_path / "crowd.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict_proba_items(sim.x, sim.annotations),
                               model.predict_proba_items(sim.x, sim.annotations), atol=1e-6)
    np.testing.assert_array_equal(loaded.consensus_labels(sim.x, sim.annotations),
                                  model.consensus_labels(sim.x, sim.annotations))
    assert loaded.annotator_quality_.equals(model.annotator_quality_)
    np.testing.assert_array_equal(loaded.class_priors_, model.class_priors_)


def test_summary_needs_arrays_and_class_labels():
    sim = crowd(0, n_items=60)
    model = CrowdModel(mlp(0), CrowdLayer(A, "MW"))
    with pytest.raises(RuntimeError, match="summarize_annotators"):
        model.annotator_quality_
    model.compile()
    model.summarize_annotators(sim.x, sim.annotations)           # without training: allowed
    assert model.annotator_quality_.shape == (A, 4)
    with pytest.raises(TypeError, match="arrays"):
        model.predict_proba_items(iter([sim.x]), sim.annotations)
    with pytest.raises(CrowdDataError):
        model.predict_proba_items(sim.x[:10], sim.annotations)
    reg = CrowdModel(keras.Sequential([keras.Input((10,)), keras.layers.Dense(1)]),
                     CrowdRegressionLayer(A))
    with pytest.raises(ValueError, match="class labels"):
        reg.predict_proba_items(sim.x, np.full((60, A), np.nan, "float32"))


# ---------------------------------------------------------------------------- trainers
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_lia_trainer_is_a_label_model(seed):
    sim = crowd(seed)
    trainer = LIATrainer(mlp(seed), em_iterations=3, m_steps=50, marginal_steps=50, seed=seed,
                         progress=False).fit(sim.x, sim.annotations)
    post = trainer.predict_proba_items(sim.x, sim.annotations)
    np.testing.assert_allclose(post, trainer.posteriors_, atol=1e-6)
    check_label_model(sim, post, trainer.predict_proba(sim.x), trainer.annotator_quality_)
    np.testing.assert_allclose(trainer.class_priors_, trainer.posteriors_.mean(0))
    # each annotator's matrix: its Q_ij averaged over its items
    q = trainer.confusions(sim.x, np.arange(A))                           # (items, A, K, K)
    ann = sim.annotations
    a = 3
    np.testing.assert_allclose(trainer.confusion_matrices_[a],
                               q[ann.items[ann.annotators == a], a].mean(0), atol=1e-6)


@pytest.mark.parametrize("scenario", ["individual", pytest.param("global",
                                                                 marks=pytest.mark.slow)])
def test_mixture_of_groups_is_a_label_model(scenario):
    # the paper's scenario: experts, non-experts and spammers
    sim = crowd(0, groups="default")
    trainer = MixtureOfGroupsEM(mlp(0), 3, scenario=scenario, max_iter=10, seed=0,
                                optimizer=keras.optimizers.Adam(1e-2), pretrain_epochs=5,
                                progress=False).fit(sim.x, sim.annotations)
    post = trainer.predict_proba_items(sim.x, sim.annotations)
    # the global scenario has no annotator in its model: an annotator's matrix is the mix of
    # the M group matrices by section 3.4's p(g | a), which separates the groups less sharply
    check_label_model(sim, post, trainer.predict_proba(sim.x), trainer.annotator_quality_,
                      min_rank=0.7 if scenario == "individual" else 0.5)
    np.testing.assert_allclose(trainer.confusion_matrices_,
                               trainer.annotator_confusions(sim.x, sim.annotations)
                               if scenario == "global" else
                               np.einsum("am,mkj->akj", trainer.memberships_,
                                         trainer.group_confusions_), atol=1e-9)


def test_lia_trainer_shows_progress_by_default(capsys):
    sim = crowd(0, n_items=80)
    trainer = LIATrainer(mlp(0), em_iterations=1, m_steps=5, marginal_steps=5, seed=0)
    assert trainer.progress is True
    trainer.fit(sim.x, sim.annotations)
    err = capsys.readouterr().err
    assert "LIA EM" in err and "LIA marginal fine-tuning" in err


def test_crowd_model_reads_new_annotations_by_annotator_id_and_class():
    # a frame of a few workers' labels read on its own codes its annotators 0, 1, 2: the
    # fitted model read them as the fit's first three annotators (posteriors off by 0.1)
    sim = crowd(0)
    ann = sim.annotations
    model = CrowdModel(mlp(0), CrowdLayer(ann.n_annotators, conn_type="MW"))
    model.compile(keras.optimizers.Adam(1e-2))
    model.fit(sim.x, ann, epochs=2, verbose=0)
    frame = ann.to_frame()
    some = frame[frame.iloc[:, 1].isin(ann.annotator_ids[3:])]
    kw = dict(item=frame.columns[0], annotator=frame.columns[1], label=frame.columns[2],
              item_ids=ann.item_ids)
    own = Annotations.from_frame(some, **kw)
    assert own.annotator_ids.tolist() != ann.annotator_ids[:own.n_annotators].tolist()
    expected = model.predict_proba_items(
        sim.x, Annotations.from_frame(some, annotator_ids=ann.annotator_ids,
                                      classes=ann.classes, **kw))
    np.testing.assert_allclose(model.predict_proba_items(sim.x, own), expected, atol=1e-6)
    stranger = Annotations.from_frame(some.iloc[:1].assign(**{frame.columns[1]: "nobody"}),
                                      **kw)
    with pytest.raises(CrowdDataError, match="annotator 'nobody' is not one of the fitted"):
        model.predict_proba_items(sim.x, stranger)
