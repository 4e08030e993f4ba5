"""LIA (issue 6): DifficultyCompetence layer, EM trainer and label model.

The paper's sanity check (an "always correct" and an "always wrong" annotator added to a real
set get the highest and lowest competence), harder instances getting lower competence on the
simulator (also for unseen instances), unseen annotators scored from their features, and the
layer's formula and Keras citizenship. Small step counts keep the file fast.
"""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

from conftest import require_data  # noqa: E402
from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.lia.label_model import LIA  # noqa: E402
from crowd_keras.aggregation.dawid_skene import DawidSkene  # noqa: E402
from crowd_keras.aggregation.majority_vote import MajorityVote  # noqa: E402
from crowd_keras.datasets import load_truth_inference, simulate_crowd  # noqa: E402
from crowd_keras.lia.layers import DifficultyCompetence  # noqa: E402
from crowd_keras.lia.trainer import LIATrainer  # noqa: E402

FAST = dict(em_iterations=4, m_steps=60, marginal_steps=120)


def as_np(t):
    return keras.ops.convert_to_numpy(t)


def randomize(layer, seed=1):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(scale=0.7, size=w.shape).astype("float32"))


def reference_q(layer, x, ids):
    """Eq. 1 in numpy: softmax_l(logsumexp_m(D_i + C_j)), D and C from the layer's weights."""
    c, lat = layer.num_classes, layer.latent_dim

    def mlp(h, layers, table_ids=None):
        for n, (k, b) in enumerate(layers):
            k, b = as_np(k), as_np(b)
            h = (k[table_ids] + b) if (n == 0 and table_ids is not None) else h @ k + b
            if n < len(layers) - 1:
                h = as_np(keras.activations.selu(h))
        return h

    d = mlp(x, layer.instance_layers).reshape(len(x), c, c, lat)
    comp = mlp(None, layer.annotator_layers, np.arange(layer.num_annotators))
    comp = comp.reshape(-1, c, c, lat)[np.maximum(ids, 0)]                  # (b, k, C, C, L)
    z = d[:, None] + comp
    logits = np.log(np.exp(z).sum(-1))
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---------------------------------------------------------------------------- layer
@pytest.mark.parametrize("hidden", [(), (5,)])
def test_layer_matches_eq1_and_rows_are_distributions(hidden):
    layer = DifficultyCompetence(3, latent_dim=2, num_annotators=5, instance_hidden=hidden,
                                 annotator_hidden=hidden)
    x = np.random.default_rng(0).normal(size=(4, 7)).astype("float32")
    ids = np.array([[0, 3, -1], [4, -1, -1], [2, 1, 0], [1, 1, 1]], dtype="int32")
    layer([x, ids])
    randomize(layer)
    q = as_np(layer([x, ids]))
    assert q.shape == (4, 3, 3, 3)
    np.testing.assert_allclose(q.sum(-1), 1.0, atol=1e-5)
    assert (q > 0).all()
    np.testing.assert_allclose(q, reference_q(layer, x, ids), rtol=1e-4, atol=1e-6)
    dense = as_np(layer(x))                                                  # (4, A, C, C)
    assert dense.shape == (4, 5, 3, 3)
    for b, row in enumerate(ids):
        for slot, a in enumerate(row):
            if a >= 0:
                np.testing.assert_allclose(q[b, slot], dense[b, a], rtol=1e-5, atol=1e-6)


def test_layer_depends_on_instance_and_annotator():
    layer = DifficultyCompetence(2, latent_dim=3, num_annotators=4)
    x = np.random.default_rng(1).normal(size=(3, 5)).astype("float32")
    layer(x)
    randomize(layer, 2)
    q = as_np(layer(x))
    assert np.abs(q[0] - q[1]).max() > 1e-3          # difficulty: per instance
    assert np.abs(q[:, 0] - q[:, 1]).max() > 1e-3    # competence: per annotator


def test_layer_feature_free_and_annotator_features():
    feats = np.random.default_rng(3).normal(size=(6, 4)).astype("float32")
    layer = DifficultyCompetence(3, latent_dim=2, annotator_features=feats, num_instances=10,
                                 output_mode="log_probs")
    ids = np.array([[0, 5], [2, -1]], dtype="int32")
    logq = as_np(layer([np.array([3, 9]), ids]))
    assert logq.shape == (2, 2, 3, 3)
    np.testing.assert_allclose(np.exp(logq).sum(-1), 1.0, atol=1e-5)
    randomize(layer, 4)
    # A "new" annotator given by features equals the known one with the same features.
    new = as_np(layer.confusions_for_features(np.array([3, 9]), feats[[5, 2]]))
    known = as_np(layer([np.array([3, 9]), np.array([[5, 2], [5, 2]], "int32")]))
    np.testing.assert_allclose(new, known, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TensorFlow's resource variables: other backends gather tensors")
def test_layer_under_mixed_precision_gathers_its_tables_rows_and_computes_in_float16():
    """The per-instance and per-annotator tables are not autocast: under mixed_float16 their
    rows are gathered (never the whole table read and cast each step) and cast after."""
    import tensorflow as tf

    from crowd_keras.lia.layers import InstanceEmbedding

    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = DifficultyCompetence(3, latent_dim=2, num_annotators=11, num_instances=13)
        embed = InstanceEmbedding(13, 4)
        idx = np.array([3, 9, 0], dtype="int32")
        ids = np.array([[0, 5], [2, -1], [10, 1]], dtype="int32")
        out = layer([idx, ids])
        embed(idx)
        assert out.dtype == "float16" and embed(idx).dtype == "float16"
        tables = [layer.instance_embedding, layer.annotator_layers[0][0], embed.embeddings]
        assert [t.dtype for t in tables] == ["float32"] * 3
        step = tf.function(lambda i, a: (layer([i, a]), embed(i)))
        graph = step.get_concrete_function(tf.TensorSpec((None,), tf.int32),
                                           tf.TensorSpec((None, 2), tf.int32)).graph
        inside = {id(outer): inner for outer, inner in graph.captures}
        for table in tables:
            reads = sorted({op.type for op in inside[id(table.value.handle)].consumers()})
            assert reads == ["ResourceGather"], (table.path, reads)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_layer_config_round_trip_and_keras_save_load(tmp_path):
    layer = DifficultyCompetence(3, latent_dim=2, num_annotators=5, instance_hidden=(4,),
                                 instance_regularizer=keras.regularizers.L2(0.01),
                                 annotator_regularizer="l2", name="dc")
    clone = DifficultyCompetence.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()

    x_in = keras.Input((7,))
    ids_in = keras.Input((None,), dtype="int32")
    model = keras.Model([x_in, ids_in], layer([x_in, ids_in]))
    randomize(layer, 5)
    x = np.random.default_rng(6).normal(size=(4, 7)).astype("float32")
    ids = np.array([[0, 3, -1], [4, -1, -1], [2, 1, 0], [1, 1, 1]], dtype="int32")
    path = tmp_path / "dc.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.get_layer("dc"), DifficultyCompetence)
    np.testing.assert_allclose(loaded.predict([x, ids], verbose=0),
                               model.predict([x, ids], verbose=0), rtol=1e-6, atol=1e-7)


def test_layer_rejects_bad_configuration():
    with pytest.raises(ValueError, match="num_annotators or annotator_features"):
        DifficultyCompetence(3)
    with pytest.raises(ValueError, match="num_classes"):
        DifficultyCompetence(1, num_annotators=3)
    with pytest.raises(ValueError, match="annotator_features"):
        DifficultyCompetence(3, annotator_features=np.zeros(4))
    with pytest.raises(ValueError, match="output_mode"):
        DifficultyCompetence(3, num_annotators=2, output_mode="logits")


def test_feature_free_layer_checks_the_instance_indices_it_is_given():
    """An instance index outside 0..num_instances-1 is a CrowdDataError naming the layer,
    the position and the value (was TensorFlow's ResourceGather error, torch's 'index out of
    range in self'), in both call forms; -1 is no index."""
    layer = DifficultyCompetence(3, num_annotators=2, num_instances=4)
    ids = np.array([[0, 1], [1, -1]], "int32")
    with pytest.raises(CrowdDataError, match=r"DifficultyCompetence instance indices: "
                                             r"instance index 9 at \(1,\).*num_instances=4"):
        layer([np.array([0, 9]), ids])
    with pytest.raises(CrowdDataError, match="instance index -1 at"):
        layer(np.array([[2], [-1]]))
    assert tuple(layer([np.array([0, 3]), ids]).shape) == (2, 2, 3, 3)


def test_difficulty_and_competence_methods_check_the_indices_they_are_given():
    """The public difficulty() and competence() check indices given as data as a call does
    (they skipped the call's check: -2 and 1.7 read another annotator's rows, and a gather
    past the table is NaN on JAX and -1 its last row on JAX and torch)."""
    layer = DifficultyCompetence(3, num_annotators=4, num_instances=5)
    layer([np.arange(2, dtype="int32"), np.zeros((2, 2), "int32")])
    for bad, what in (([[0, 9]], "9"), ([[0, -2]], "-2"), ([[0, 1.7]], "1.7")):
        with pytest.raises(CrowdDataError, match=rf"DifficultyCompetence.competence "
                                                 rf"annotator_ids: annotator id {what} at"):
            layer.competence(np.array(bad))
    for bad in (7, -1):
        with pytest.raises(CrowdDataError, match=rf"instance index {bad} at \(0,\)"):
            layer.difficulty(np.array([bad]))
    listed = keras.ops.convert_to_numpy(layer.competence(np.array([[3, -1]])))
    np.testing.assert_allclose(listed[0, 0], keras.ops.convert_to_numpy(layer.competence())[3],
                               rtol=1e-6)
    assert tuple(layer.difficulty(np.array([4, 0])).shape) == (2, 3, 3, 1)


# ---------------------------------------------------------------------------- real data
def with_oracles(ann, truth):
    """The annotations plus an "always correct" and an "always wrong" annotator on every item."""
    n, k = ann.n_items, ann.n_classes
    items = np.arange(n)
    wrong = (truth + 1) % k
    a = ann.n_annotators
    return Annotations(
        np.concatenate([ann.items, items, items]),
        np.concatenate([ann.annotators, np.full(n, a), np.full(n, a + 1)]),
        np.concatenate([ann.labels, truth, wrong]),
        item_ids=ann.item_ids, annotator_ids=list(ann.annotator_ids) + ["right", "wrong"],
        classes=ann.classes)


@pytest.mark.parametrize("name", ["bluebirds", "dog"])
def test_oracle_annotators_get_highest_and_lowest_competence(name):
    """The paper's sanity check (Section 4.3) on a real truth-inference set."""
    ann, truth = load_truth_inference(require_data("truth_inference", name))
    keep = truth >= 0
    ann = ann.subset(np.flatnonzero(keep))
    truth = truth[keep]
    aug = with_oracles(ann, truth)
    # Per-item difficulty learned freely (instance_l2=1, the with-features default): with the
    # feature-free default (100: a free difficulty per item overfits its own few labels, so
    # it is held near the shared one) the crowd outvotes both oracles on about 10% of dog
    # items, as it does in Dawid-Skene (0.90 there), and the oracle's competence stays at
    # the posterior's agreement with it (0.896, below annotator 27's 0.938). With two
    # oracles on every item, the difficulty of each item is identifiable and the sanity
    # check is the paper's.
    model = LIA(seed=0, instance_l2=1.0, **FAST).fit(aug)
    quality = model.annotator_quality_.set_index("annotator")["accuracy"]
    assert quality.idxmax() == "right", quality.sort_values().tail(3)
    assert quality.idxmin() == "wrong", quality.sort_values().head(3)
    assert quality["right"] > 0.9 and quality["wrong"] < 0.1
    # Per item, too: the oracle is among the most competent annotators of every item. Competence is
    # averaged over the true classes (mean_k [Q_ij]_kk): on the items of one class, an
    # annotator who always answers that class is as "right" as the oracle, so the
    # posterior-weighted competence cannot tell them apart there.
    q = model.trainer_.confusions()                                   # (items, A, K, K)
    balanced = np.diagonal(q, axis1=-2, axis2=-1).mean(-1)             # (items, A)
    right = aug.n_annotators - 2
    above = (balanced < balanced[:, [right]]).sum(1) / (aug.n_annotators - 1)
    # every item: the oracle is above 85% of the annotators; it is the very top on most items
    # (on dog a few annotators with a handful of labels tie it on some items)
    assert above.min() > 0.85 and (balanced.argmax(1) == right).mean() > 0.5, \
        (above.min(), (balanced.argmax(1) == right).mean())
    assert (balanced.argmin(1) == aug.n_annotators - 1).mean() > 0.95
    # The oracles help: at least as accurate as Dawid-Skene and majority vote on the same data.
    acc = (model.predict() == truth).mean()
    ds = (DawidSkene().fit(aug).predict() == truth).mean()
    mv = (MajorityVote().fit(aug).predict() == truth).mean()
    assert acc >= max(ds, mv) and acc > 0.9, (acc, ds, mv)


def test_feature_free_difficulty_does_not_explain_labels_away_at_full_redundancy():
    """Product, every annotation (3 per item): a free difficulty per item, fitted to that
    item's own labels, flattened its annotators' confusions and sent hard items to the
    majority class (0.918 against Dawid-Skene's 0.939 with instance_l2=10). The feature-free
    default holds the difficulty near the shared one, so LIA-E matches Dawid-Skene here."""
    ann, truth = load_truth_inference(require_data("truth_inference", "product"))
    known = truth >= 0
    lia = (LIA(seed=0).fit(ann).predict()[known] == truth[known]).mean()
    ds = (DawidSkene().fit(ann).predict()[known] == truth[known]).mean()
    mv = (MajorityVote().fit(ann).predict()[known] == truth[known]).mean()
    assert lia >= ds - 0.001 and lia > mv + 0.03, (lia, ds, mv)


# ---------------------------------------------------------------------------- simulator
def test_confusable_instances_get_lower_competence_also_unseen():
    """Items in one region of feature space get random labels: LIA learns they are hard."""
    sim = simulate_crowd(n_items=900, n_classes=3, n_annotators=20, annotations_per_item=5,
                         n_features=4, class_sep=4.0, annotator_accuracy=(0.75, 0.95), seed=0)
    x, ann = sim.x, sim.annotations
    hard = x[:, 0] > np.quantile(x[:, 0], 0.65)
    rng = np.random.default_rng(0)
    noisy = hard[ann.items]
    labels = np.where(noisy, rng.integers(0, 3, ann.n_annotations), ann.labels)
    ann = Annotations(ann.items, ann.annotators, labels, n_items=ann.n_items,
                      n_annotators=ann.n_annotators, n_classes=3)
    train = np.arange(600)
    test = np.arange(600, 900)
    trainer = LIATrainer(hidden_units=(16,), difficulty_hidden=(8,), instance_l2=1.0,
                         seed=0, **FAST).fit(x[train], ann.subset(train))
    # Seen instances (posteriors as class probabilities) and unseen ones (h_θ).
    seen = trainer.predict_competence(x[train], class_probs=trainer.posteriors_).mean(1)
    unseen = trainer.predict_competence(x[test]).mean(1)
    for comp, h in ((seen, hard[train]), (unseen, hard[test])):
        assert comp[~h].mean() - comp[h].mean() > 0.15, (comp[~h].mean(), comp[h].mean())
        # ranks: a random hard item is below a random easy one most of the time (AUC).
        auc = (comp[~h][:, None] > comp[h][None, :]).mean()
        assert auc > 0.8
    # The truth model still classifies the easy region well.
    acc = (trainer.predict_proba(x[test]).argmax(1) == sim.y[test])[~hard[test]].mean()
    assert acc > 0.85


def test_unseen_annotators_scored_from_their_features():
    """Competence generalises to new annotators described by (group) features."""
    sim = simulate_crowd(n_items=500, n_classes=3, n_annotators=40, annotations_per_item=6,
                         n_features=4, class_sep=4.0, groups="default", seed=1)
    groups = sim.annotator_groups                            # experts, non-experts, spammers
    rng = np.random.default_rng(1)
    feats = np.concatenate([np.eye(3)[groups], rng.normal(size=(40, 2))], 1).astype("float32")
    seen = np.arange(30)
    ann = sim.annotations
    keep = ann.annotators < 30
    train = Annotations(ann.items[keep], ann.annotators[keep], ann.labels[keep],
                        n_items=ann.n_items, n_annotators=30, n_classes=3)
    trainer = LIATrainer(annotator_features=feats[seen], seed=0, **FAST).fit(sim.x, train)
    comp = trainer.predict_competence(sim.x, annotator_features=feats[30:]).mean(0)  # (10,)
    new_groups = groups[30:]
    by_group = {g: comp[new_groups == g].mean() for g in np.unique(new_groups)}
    assert len(by_group) >= 2
    present = sorted(by_group)
    assert all(by_group[a] > by_group[b] for a, b in zip(present, present[1:])), by_group


def test_label_model_beats_majority_vote_on_simulator_and_scores_new_annotations():
    sim = simulate_crowd(n_items=400, n_classes=3, n_annotators=15, annotations_per_item=3,
                         n_features=4, class_sep=3.0, annotator_accuracy=(0.35, 0.95), seed=2)
    model = LIA(seed=0, **FAST).fit(sim.annotations, features=sim.x)
    acc = (model.predict() == sim.y).mean()
    mv = (MajorityVote().fit(sim.annotations).predict() == sim.y).mean()
    assert acc >= mv + 0.02, (acc, mv)
    assert model.confusion_matrices_.shape == (15, 3, 3)
    np.testing.assert_allclose(model.confusion_matrices_.sum(-1), 1.0, atol=1e-6)
    # Estimated annotator accuracy tracks the truth.
    true_acc = sim.annotator_accuracy()
    est = model.annotator_quality_["accuracy"].to_numpy()
    assert np.corrcoef(true_acc, est)[0, 1] > 0.8
    # New items: posteriors from features and their annotations.
    new = model.predict_proba(sim.annotations.subset(np.arange(50)), features=sim.x[:50])
    assert new.shape == (50, 3)
    assert (new.argmax(1) == sim.y[:50]).mean() > 0.7
    with pytest.raises(CrowdDataError, match="features"):
        model.predict_proba(sim.annotations.subset(np.arange(50)))
    # Competence from raw features (standardised like fit): tracks the annotators' accuracy,
    # selected by id; unknown ids are named.
    comp = model.predict_competence(sim.x[:100])
    assert comp.shape == (100, 15) and ((comp >= 0) & (comp <= 1)).all()
    assert np.corrcoef(true_acc, comp.mean(0))[0, 1] > 0.8
    ids = list(sim.annotations.annotator_ids)
    np.testing.assert_allclose(model.predict_competence(sim.x[:100], [ids[3], ids[0]]),
                               comp[:, [3, 0]], rtol=1e-6)
    with pytest.raises(CrowdDataError, match="nobody"):
        model.predict_competence(sim.x[:5], ["nobody"])
    with pytest.raises(CrowdDataError, match="give features"):
        model.predict_competence()


@pytest.mark.parametrize("engine", ["numpy", "keras"])
def test_feature_free_label_model_scores_its_fitted_items_by_id(engine):
    # new annotations of the fitted items were matched to them by position: the same items
    # in another order took other items' latent terms, and as many other items were scored
    # as the fitted ones, without a word
    sim = simulate_crowd(n_items=30, n_classes=3, n_annotators=5, annotations_per_item=3, seed=3)
    ann = sim.annotations
    model = LIA(engine=engine, em_iterations=1, m_steps=2, marginal_steps=0).fit(ann)
    order = np.arange(ann.n_items)[::-1]
    code = np.argsort(order)                  # item i of the fit is item code[i] of the new
    reordered = Annotations(code[ann.items], ann.annotators, ann.labels,
                            item_ids=ann.item_ids[order], annotator_ids=ann.annotator_ids,
                            classes=ann.classes)
    np.testing.assert_allclose(model.predict_proba(reordered), model.predict_proba()[order],
                               atol=1e-6)
    few = ann.subset([4, 2])
    np.testing.assert_allclose(model.predict_proba(few), model.predict_proba()[[4, 2]],
                               atol=1e-6)
    others = Annotations(ann.items, ann.annotators, ann.labels,
                         item_ids=[f"new-{i}" for i in ann.item_ids],
                         annotator_ids=ann.annotator_ids, classes=ann.classes)
    with pytest.raises(CrowdDataError, match=r"scores only its 30 fitted items; item 'new-0' "
                                             r"is not one of them"):
        model.predict_proba(others)


def test_annotator_summary_without_items_times_annotators_work(monkeypatch):
    """expected_accuracy_ by two matrix products per class: the mean over every item of
    the layer's own confusions; exact when exp underflows (log-form fallback); an evenly
    spaced sample of items when items × annotators is over the budget."""
    import crowd_keras.lia.label_model as lia_label_model

    sim = simulate_crowd(n_items=120, n_classes=3, n_annotators=30, annotations_per_item=3,
                         seed=5)
    model = LIA(em_iterations=1, m_steps=3, latent_dim=2, seed=0).fit(sim.annotations)
    q = model.trainer_.confusions()                                   # (items, A, K, K)
    direct = np.einsum("iak,ik->a", np.diagonal(q, axis1=-2, axis2=-1), model.posteriors_) / 120
    np.testing.assert_allclose(model.expected_accuracy_, direct, atol=1e-6)
    assert model.expected_accuracy_items_ == 120
    # confusions_ / competence_ from the annotations that exist: the layer's Q_ij
    ids, _ = sim.annotations.to_padded()
    q_ann = model.trainer_.confusions(None, ids)[ids >= 0]
    np.testing.assert_allclose(model.competence_, np.einsum(
        "nkk,nk->n", q_ann, model.posteriors_[sim.annotations.items]), atol=1e-6)
    # mass in cells that do not meet: e^(D + C) underflows in the products, the log form
    d = model.trainer_.difficulty_tensors(np.arange(120)).astype(float)
    comp = model.trainer_.competence_tensors().astype(float)
    d[:, :, 1, 1] += 900.0
    comp[:3, :, 0, 0] += 900.0
    monkeypatch.setattr(model.engine_, "difficulty_tensors", lambda items, *a: d[items])
    z = d[:, None] + comp[None]                                       # (I, A, K, K, L)
    top = z.max(-1)
    lq = top + np.log(np.exp(z - top[..., None]).sum(-1))
    lq -= lq.max(-1, keepdims=True)
    qz = np.exp(lq) / np.exp(lq).sum(-1, keepdims=True)
    want = np.einsum("iak,ik->a", np.diagonal(qz, axis1=-2, axis2=-1), model.posteriors_) / 120
    np.testing.assert_allclose(model._expected_accuracy(None, comp), want, atol=1e-12)
    # over the budget: a sample of the items, the same for every annotator
    monkeypatch.setattr(lia_label_model, "_SUMMARY_PAIRS", 300)
    monkeypatch.setattr(lia_label_model, "_SUMMARY_MIN_ITEMS", 20)
    sampled = model._expected_accuracy(None, comp)
    assert model.expected_accuracy_items_ < 120
    np.testing.assert_allclose(sampled, want, atol=0.05)


@pytest.mark.parametrize("xla, batch_size", [(False, None), (False, 32), (True, 32)])
def test_em_steps_are_traced_once_whatever_the_number_of_iterations(monkeypatch, xla,
                                                                     batch_size):
    """The M-step's train step and the E-step's forward pass are compiled once per fit: an
    EM of 5 iterations traces them as often as one of 2 (full batch, minibatches, XLA)."""
    import crowd_keras.lia.trainer as lia_trainer

    if xla:   # the large-data path: XLA-compiled steps (on TensorFlow)
        monkeypatch.setattr(lia_trainer, "_XLA_MIN_ANNOTATIONS", 0)
    traces = {"train": 0, "predict": 0}
    train_step, predict_step = keras.Model.train_step, keras.Model.predict_step

    def counting_train(self, data):
        traces["train"] += 1
        return train_step(self, data)

    def counting_predict(self, data):
        traces["predict"] += 1
        return predict_step(self, data)

    monkeypatch.setattr(keras.Model, "train_step", counting_train)
    monkeypatch.setattr(keras.Model, "predict_step", counting_predict)
    sim = simulate_crowd(n_items=150, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=4)
    counts = []
    for iterations in (2, 5):
        traces.update(train=0, predict=0)
        LIA(em_iterations=iterations, m_steps=6, tol=0.0, batch_size=batch_size,
            seed=0).fit(sim.annotations)
        counts.append((traces["train"], traces["predict"]))
    assert counts[0] == counts[1], counts
    # Keras' multi-step loop traces the step for each of its two loop passes, no more
    assert counts[0][0] <= 2 and counts[0][1] <= 1, counts


@pytest.mark.parametrize("engine", ["numpy", "keras"])
def test_every_m_step_passes_over_every_item(monkeypatch, engine):
    """Default minibatches grow with the items (``max(1024, ⌈items / m_steps⌉)``, here with
    the bounds scaled down) so that each M-step's batches hold every item: a per-item
    embedding is only updated on the steps that see its item (both engines)."""
    import crowd_keras.inputs as inputs
    import crowd_keras.lia.em as lia_em

    monkeypatch.setattr(lia_em, "_MIN_BATCH", 8)
    orders = []
    row_order = inputs.row_order

    def recording(n, batch, steps, rng, keys=None):
        assert keys is not None                      # the order follows the items' ids
        out = row_order(n, batch, steps, rng, keys)
        orders.append((n, out))
        return out

    monkeypatch.setattr(inputs, "row_order", recording)
    monkeypatch.setattr(lia_em, "row_order", recording)
    sim = simulate_crowd(n_items=150, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=4)
    model = LIA(em_iterations=2, m_steps=6, tol=0.0, seed=0, engine=engine).fit(sim.annotations)
    assert model.trainer_.batch_size_ == 25          # ⌈150 / 6⌉ > 8
    assert len(orders) == 2                          # one draw per M-step
    for n, order in orders:
        assert n == 150 and len(order) == 150 and set(order.tolist()) == set(range(150))
    # a batch size given is kept
    assert LIA(em_iterations=1, m_steps=6, batch_size=8, seed=0, engine=engine).fit(
        sim.annotations).trainer_.batch_size_ == 8


def test_bad_inputs_raise_crowd_data_error():
    sim = simulate_crowd(n_items=30, n_classes=2, n_annotators=5, annotations_per_item=2, seed=3)
    with pytest.raises(CrowdDataError, match="features"):
        LIA(**FAST).fit(sim.annotations, features=sim.x[:10])
    bad = sim.x.copy()
    bad[4, 1] = np.nan
    with pytest.raises(CrowdDataError, match=r"features\[4, 1\]"):
        LIA(**FAST).fit(sim.annotations, features=bad)
    with pytest.raises(CrowdDataError, match="one row per annotated item"):
        LIATrainer(**FAST).fit(sim.x[:10], sim.annotations)
    with pytest.raises(CrowdDataError, match="annotator_features"):
        LIATrainer(annotator_features=np.zeros((3, 2)), **FAST).fit(sim.x, sim.annotations)
    # a classifier of 3 outputs for 2 classes failed deep in AnnotationLogLikelihoods' concat
    three = keras.Sequential([keras.Input((sim.x.shape[1],)),
                              keras.layers.Dense(3, activation="softmax")])
    with pytest.raises(CrowdDataError, match="classifier outputs 3 classes but the model has 2"):
        LIATrainer(three, **FAST).fit(sim.x, sim.annotations)


def test_trainer_refuses_from_logits_with_its_softmax_default_classifier():
    # the default classifier outputs probabilities: read as logits they went through a
    # second softmax (predict_proba never above e/(e+2) for 3 classes), silently
    sim = simulate_crowd(n_items=30, n_classes=3, n_annotators=5, annotations_per_item=2, seed=3)
    with pytest.raises(ValueError, match="default classifier.*outputs probabilities"):
        LIATrainer(from_logits=True, **FAST).fit(sim.x, sim.annotations)
    with pytest.raises(ValueError, match="default classifier.*outputs probabilities"):
        LIATrainer(from_logits=True, **FAST).fit(None, sim.annotations)


def test_label_model_takes_gold_and_pred_probs_as_none_only():
    # as every label model without accepts_gold / accepts_pred_probs: None is the default
    # (generic code passes it), a value says LIA does not take it (both were read as keyword
    # arguments of the frame reader: "these annotations are already read", or from_dense's)
    sim = simulate_crowd(n_items=30, n_classes=2, n_annotators=5, annotations_per_item=2, seed=3)
    fast = dict(em_iterations=1, m_steps=2, marginal_steps=0)
    plain = LIA(**fast).fit(sim.annotations).predict_proba()
    np.testing.assert_allclose(
        LIA(**fast).fit(sim.annotations, gold=None, pred_probs=None).predict_proba(), plain)
    assert not LIA.accepts_gold and not LIA.accepts_pred_probs
    for data in (sim.annotations, sim.annotations.to_dense()):
        with pytest.raises(TypeError, match=r"LIA.fit\(\) does not take gold labels"):
            LIA(**fast).fit(data, gold={0: 1})
        with pytest.raises(TypeError, match=r"LIA.fit\(\) does not take pred_probs"):
            LIA(**fast).fit(data, pred_probs=np.full((30, 2), 0.5))
