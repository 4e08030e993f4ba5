"""CoNAL: AnnotatorGate, CommonNoiseAdaptation, the feature-free CommonNoiseModel."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")
from keras import ops  # noqa: E402

from conftest import require_data  # noqa: E402
from crowd_keras import Annotations  # noqa: E402
from crowd_keras.aggregation import CommonNoiseModel, DawidSkene, MajorityVote  # noqa: E402
from crowd_keras.datasets import load_truth_inference, simulate_crowd  # noqa: E402
from crowd_keras.errors import CrowdDataError  # noqa: E402
from crowd_keras.conal.layers import AnnotatorGate, CommonNoiseAdaptation  # noqa: E402
from crowd_keras.models import CrowdModel  # noqa: E402


def np_normalize(a):
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def test_gate_is_sigmoid_of_normalized_embeddings_in_both_call_forms():
    gate = AnnotatorGate(num_annotators=5, embedding_dim=3)
    x = np.random.default_rng(0).normal(size=(4, 6)).astype("float32")
    dense = ops.convert_to_numpy(gate(x))
    assert dense.shape == (4, 5)
    v = np_normalize(x @ ops.convert_to_numpy(gate.instance_kernel)
                     + ops.convert_to_numpy(gate.instance_bias))
    u = np_normalize(ops.convert_to_numpy(gate.annotator_embedding))
    np.testing.assert_allclose(dense, 1 / (1 + np.exp(-(v @ u.T))), rtol=1e-5)
    ids = np.array([[4, 0, -1], [2, -1, -1], [1, 3, 0], [0, 0, 0]])
    indexed = ops.convert_to_numpy(gate([x, ids]))
    assert indexed.shape == (4, 3)
    real = ids >= 0
    np.testing.assert_allclose(indexed[real], np.take_along_axis(dense, np.maximum(ids, 0), 1)[real],
                               rtol=1e-5)


def test_gate_per_time_step_in_both_call_forms_and_under_a_sequence_crowd_model():
    # a representation per time step (batch, time, d): ω per step, the indexed form the
    # dense form's listed columns (it failed with a shape error)
    gate = AnnotatorGate(num_annotators=6, embedding_dim=3)
    x = np.random.default_rng(4).normal(size=(4, 5, 7)).astype("float32")
    ids = np.array([[4, 0, -1], [2, -1, -1], [1, 3, 0], [5, 5, 2]], "int32")
    dense = ops.convert_to_numpy(gate(x))
    assert dense.shape == (4, 5, 6)
    indexed = ops.convert_to_numpy(gate([x, ids]))
    assert indexed.shape == (4, 5, 3)
    for b, row in enumerate(ids):
        for slot, a in enumerate(row):
            if a >= 0:
                np.testing.assert_allclose(indexed[b, :, slot], dense[b, :, a], rtol=1e-5)

    from crowd_keras.models import CrowdModel

    clf = keras.Sequential([keras.Input((5, 7)), keras.layers.Dense(3, activation="softmax")])
    model = CrowdModel(clf, CommonNoiseAdaptation(6, 3, gate=AnnotatorGate(6, embedding_dim=3)))
    out = ops.convert_to_numpy(model({"x": x, "annotator_ids": ids}))
    assert out.shape == (4, 5, 3, 3)

    # symbolic calls give the eager shapes (the time axis was left out: (None, 6), (None, 3))
    x_in, ids_in = keras.Input((5, 7)), keras.Input((3,), dtype="int32")
    assert AnnotatorGate(6, 3)(x_in).shape == (None, 5, 6)
    assert AnnotatorGate(6, 3)([x_in, ids_in]).shape == (None, 5, 3)
    assert AnnotatorGate(6, 3)(keras.Input((7,))).shape == (None, 6)


@pytest.mark.parametrize("with_features", [False, True])
def test_gate_indexed_form_reads_only_the_listed_annotators(with_features):
    # ω for listed annotators gathers their rows before the (row-wise) map and normalisation:
    # the same values as the dense form, and on TensorFlow a gradient on those rows only
    # (sparse: LazyAdam then updates them alone, a step costs O(batch), not O(annotators)).
    feats = np.random.default_rng(2).normal(size=(6, 4)).astype("float32")
    gate = AnnotatorGate(num_annotators=6, embedding_dim=3,
                         annotator_features=feats if with_features else None)
    x = np.random.default_rng(3).normal(size=(5, 7)).astype("float32")
    ids = np.array([[5, 1], [1, -1], [0, 5], [1, 1], [-1, -1]], "int32")
    dense = ops.convert_to_numpy(gate(x))
    indexed = ops.convert_to_numpy(gate([x, ids]))
    real = ids >= 0
    gathered = np.take_along_axis(dense, np.maximum(ids, 0), 1)
    np.testing.assert_allclose(indexed[real], gathered[real], rtol=1e-5)
    if keras.backend.backend() != "tensorflow" or with_features:
        return
    import tensorflow as tf

    with tf.GradientTape() as tape:
        out = gate([x, ids])
    grad = tape.gradient(out, gate.annotator_embedding.value)
    assert isinstance(grad, tf.IndexedSlices)
    assert set(np.unique(grad.indices.numpy())) <= {0, 1, 5}


def test_gate_from_annotator_features():
    feats = np.eye(4, 2, dtype="float32") + 0.5
    gate = AnnotatorGate(embedding_dim=3, annotator_features=feats)
    assert gate.num_annotators == 4
    out = ops.convert_to_numpy(gate(np.ones((2, 5), "float32")))
    assert out.shape == (2, 4) and np.all((out > 0.26) & (out < 0.74))
    with pytest.raises(ValueError, match="num_annotators or annotator_features"):
        AnnotatorGate()


def test_mixture_of_common_and_individual_logits():
    layer = CommonNoiseAdaptation(3, 4)
    probs = np.random.default_rng(1).dirichlet(np.ones(4), size=5).astype("float32")
    omega = np.random.default_rng(2).random((5, 3)).astype("float32")
    out = ops.convert_to_numpy(layer([probs, omega]))
    assert out.shape == (5, 3, 4)
    layer.common_kernel.assign(np.random.default_rng(3).normal(size=(4, 4)).astype("float32"))
    layer.kernel.assign(np.random.default_rng(4).normal(size=(3, 4, 4)).astype("float32"))
    wg = ops.convert_to_numpy(layer.common_kernel)
    wr = ops.convert_to_numpy(layer.kernel)
    expected = (omega[..., None] * (probs @ wg)[:, None, :]
                + (1 - omega[..., None]) * np.einsum("bi,aij->baj", probs, wr))
    np.testing.assert_allclose(ops.convert_to_numpy(layer([probs, omega])), expected, rtol=1e-5)
    ids = np.array([[2, -1], [0, 1], [1, 1], [0, -1], [2, 0]])
    omega_k = np.take_along_axis(omega, np.maximum(ids, 0), 1)
    indexed = ops.convert_to_numpy(layer([probs, ids, omega_k]))
    gathered = np.take_along_axis(expected, np.maximum(ids, 0)[..., None], 1)
    np.testing.assert_allclose(indexed[ids >= 0], gathered[ids >= 0], rtol=1e-5)


def test_fixed_omega_ablation_and_sequence_input():
    probs = np.random.default_rng(0).dirichlet(np.ones(3), size=(2, 7)).astype("float32")
    only_common = CommonNoiseAdaptation(4, 3, omega=1.0)
    out = ops.convert_to_numpy(only_common(probs))
    assert out.shape == (2, 7, 4, 3)
    np.testing.assert_allclose(out[:, :, 0], out[:, :, 3])  # one matrix for everybody
    with pytest.raises(ValueError, match="fixed omega must be in"):
        CommonNoiseAdaptation(2, 3, omega=1.5)
    with pytest.raises(ValueError, match="either a gate or a fixed omega"):
        CommonNoiseAdaptation(2, 3, omega=0.5, gate=AnnotatorGate(2))


def test_difference_regulariser_pushes_matrices_apart():
    layer = CommonNoiseAdaptation(2, 3, difference_weight=0.1)
    probs = np.full((1, 3), 1 / 3, "float32")
    layer([probs, np.full((1, 2), 0.5, "float32")])
    assert float(ops.convert_to_numpy(sum(layer.losses))) == pytest.approx(0.0)  # equal at init
    layer.kernel.assign(layer.kernel + 1.0)
    layer.losses.clear() if hasattr(layer.losses, "clear") else None
    layer([probs, np.full((1, 2), 0.5, "float32")])
    # −λ Σ_r ‖W_g − W_r‖² = −0.1 · 2 annotators · 9 cells · 1² : negative, so it rewards distance
    assert float(ops.convert_to_numpy(layer.losses[-1])) == pytest.approx(-1.8, rel=1e-5)


def test_learning_rate_multiplier_keeps_the_function_and_scales_the_step():
    """Stored weights are W/m; the layer's output, confusions and regulariser use W; one Adam
    step moves W m times further."""
    probs = np.random.default_rng(1).dirichlet(np.ones(4), size=5).astype("float32")
    omega = np.random.default_rng(2).random((5, 3)).astype("float32")
    labels = np.random.default_rng(3).integers(0, 4, size=(5, 3)).astype("int32")
    base = CommonNoiseAdaptation(3, 4, init_scale=3.0, difference_weight=0.1)
    fast = CommonNoiseAdaptation(3, 4, init_scale=3.0, difference_weight=0.1,
                                 learning_rate_multiplier=10.0)
    np.testing.assert_allclose(ops.convert_to_numpy(fast([probs, omega])),
                               ops.convert_to_numpy(base([probs, omega])), rtol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(fast.kernel), 0.3 * np.eye(4)[None].repeat(3, 0),
                               rtol=1e-6)
    np.testing.assert_allclose(fast.common_confusion(), base.common_confusion(), rtol=1e-5)
    steps = []
    for layer in (base, fast):
        p_in, w_in = keras.Input((4,)), keras.Input((3,))
        model = keras.Model([p_in, w_in], layer([p_in, w_in]))
        model.compile(keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        before = layer.confusion_matrices()
        model.train_on_batch([probs, omega], labels)
        steps.append(np.abs(ops.convert_to_numpy(layer.kernel) * layer.learning_rate_multiplier
                            - 3.0 * np.eye(4)).max())
        assert not np.allclose(layer.confusion_matrices(), before)
    np.testing.assert_allclose(steps[1], 10 * steps[0], rtol=1e-2)
    clone = CommonNoiseAdaptation.from_config(fast.get_config())
    assert (clone.init_scale, clone.learning_rate_multiplier) == (3.0, 10.0)
    with pytest.raises(ValueError, match="positive"):
        CommonNoiseAdaptation(3, 4, learning_rate_multiplier=-1)


def make_model(a, k, d, seed=0):
    keras.utils.set_random_seed(seed)
    clf = keras.Sequential([keras.Input((d,)), keras.layers.Dense(32, activation="relu"),
                            keras.layers.Dense(k, activation="softmax")])
    return clf, CrowdModel(clf, CommonNoiseAdaptation(a, k, gate=AnnotatorGate(a, 8)))


def test_crowd_model_trains_and_round_trips_through_keras_file(tmp_path):
    sim = simulate_crowd(n_items=800, n_classes=3, n_annotators=12, n_features=6, seed=0)
    clf, model = make_model(12, 3, 6)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(sim.x, sim.annotations, epochs=8, batch_size=64, verbose=0)
    acc = (clf.predict(sim.x, verbose=0).argmax(1) == sim.y).mean()
    assert acc > 0.8
    common = model.noise_layer.common_confusion()
    np.testing.assert_allclose(common.sum(axis=1), 1.0, rtol=1e-5)
    assert model.confusion_matrices().shape == (12, 3, 3)
    omega = model.noise_layer.omega_for(sim.x[:4], [[0, 5, -1]] * 4)
    assert omega.shape == (4, 3)
    path = tmp_path / "conal.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.classifier.predict(sim.x[:10], verbose=0),
                               clf.predict(sim.x[:10], verbose=0), rtol=1e-5)
    np.testing.assert_allclose(loaded.noise_layer.omega_for(sim.x[:4], [[0, 5, -1]] * 4), omega,
                               rtol=1e-5)
    np.testing.assert_allclose(loaded.noise_layer.common_confusion(), common, rtol=1e-5)


def test_omega_for_checks_the_annotator_ids_it_is_given():
    # omega_for cast the ids to an int32 tensor before the gate's entry check: 1.7 was read
    # as annotator 1 (and off TensorFlow, where a tensor is not checked, 9 gave NaN or an
    # index error and -2 annotator 0's value)
    layer = CommonNoiseAdaptation(4, 3, gate=AnnotatorGate(4, 5))
    x = np.random.default_rng(0).normal(size=(2, 6)).astype("float32")
    layer([np.full((2, 3), 1 / 3, "float32"), np.zeros((2, 2), "int32"), x])
    for bad, what in (([[0, 1.7], [1, 2]], "1.7"), ([[0, 9], [1, 2]], "9"),
                      ([[0, -2], [1, 2]], "-2")):
        with pytest.raises(CrowdDataError, match=f"annotator id {what} at \\(0, 1\\)"):
            layer.omega_for(x, bad)
    np.testing.assert_allclose(layer.omega_for(x, [[0, 3], [1, -1]])[:, 0],
                               layer.omega_for(x)[:, [0, 1]].diagonal(), rtol=1e-6)
    # the gate's public annotator_embeddings(ids) skipped the check too
    gate = layer.gate
    for bad, what in (([[0, 1.7]], "1.7"), ([[0, 9]], "9"), ([[0, -2]], "-2")):
        with pytest.raises(CrowdDataError, match=f"annotator_embeddings annotator_ids: "
                                                 f"annotator id {what} at"):
            gate.annotator_embeddings(np.array(bad))
    listed = ops.convert_to_numpy(gate.annotator_embeddings(np.array([[3]])))
    np.testing.assert_allclose(listed[0, 0], ops.convert_to_numpy(gate.annotator_embeddings())[3],
                               rtol=1e-6)


def test_indexed_and_dense_forms_agree_on_loss():
    sim = simulate_crowd(n_items=64, n_classes=3, n_annotators=5, n_features=4, seed=1)
    _, model = make_model(5, 3, 4)
    model.compile()
    dense_loss = model.evaluate(sim.x, sim.annotations.to_dense(), verbose=0, batch_size=64)
    indexed_loss = model.evaluate(sim.x, sim.annotations, verbose=0, batch_size=64)
    assert dense_loss == pytest.approx(indexed_loss, rel=1e-5)


def test_difference_regulariser_trains_under_mixed_float16():
    """The paper's regulariser is summed in float32 from the float32 matrices: under
    mixed_float16 it joins the float32 loss (it stayed float16 and failed) and its A·K²
    squares cannot overflow float16."""
    sim = simulate_crowd(n_items=200, n_classes=3, n_annotators=10, annotations_per_item=3,
                         seed=0)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        classifier = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                                       keras.layers.Dense(3),
                                       keras.layers.Activation("softmax", dtype="float32")])
        noise = CommonNoiseAdaptation(10, 3, gate=AnnotatorGate(10, embedding_dim=4),
                                      difference_weight=1e-5)
        model = CrowdModel(classifier, noise, warmup_epochs=0)
        model.compile(keras.optimizers.Adam(1e-3))
        history = model.fit(sim.x, sim.annotations, epochs=2, batch_size=32, verbose=0)
        assert noise.compute_dtype == "float16" and noise.kernel.dtype == "float32"
        assert np.isfinite(history.history["loss"]).all()
        # matrices 100 apart: Σ of 90 squares of 100 is 9e5, beyond float16's 65504
        noise.common_kernel.assign(np.zeros((3, 3), "float32"))
        noise.kernel.assign(np.full((10, 3, 3), 100.0, "float32"))
        ids = sim.annotations.to_padded()[0][:8].astype("int32")
        model({"x": sim.x[:8], "annotator_ids": ids})                 # eager: read the loss
        (loss,) = model.losses
        assert keras.backend.standardize_dtype(loss.dtype) == "float32"
        np.testing.assert_allclose(float(ops.convert_to_numpy(loss)), -1e-5 * 9e5, rtol=1e-5)
    finally:
        keras.mixed_precision.set_global_policy(previous)



def test_gate_is_finite_under_mixed_float16_for_zero_and_large_representations():
    """û·v̂ is computed in float32: under mixed_float16 the 1e-12 floor under a squared norm
    was 0 in float16, so a zero representation (a padded step, an empty document: v = 0 at
    the start) gave ω = NaN and every training step a NaN loss; large rows overflowed."""
    x = np.random.default_rng(0).normal(size=(4, 5)).astype("float32")
    x[1] = 0.0
    ids = np.array([[0, 1], [2, -1], [1, 0], [2, 2]], "int32")
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        gate = AnnotatorGate(3, embedding_dim=4)
        zero_features = AnnotatorGate(annotator_features=np.zeros((3, 2)), embedding_dim=4)
        for layer, inputs in ((gate, x), (gate, [x, ids]), (zero_features, [x, ids])):
            omega = layer(inputs)
            assert keras.backend.standardize_dtype(omega.dtype) == "float16"
            omega = ops.convert_to_numpy(omega)
            assert np.isfinite(omega).all(), omega
        np.testing.assert_allclose(ops.convert_to_numpy(gate(x))[1], 0.5)   # v = 0: cosine 0
        gate.instance_kernel.assign(np.full((5, 4), 300.0, "float32"))     # ‖v‖² > 65504
        big = ops.convert_to_numpy(gate([x, ids])).astype("float64")
        keras.mixed_precision.set_global_policy("float32")
        ref = AnnotatorGate(3, embedding_dim=4)
        ref([x, ids])
        ref.set_weights(gate.get_weights())
        np.testing.assert_allclose(big, ops.convert_to_numpy(ref([x, ids])), atol=2e-3)
        keras.mixed_precision.set_global_policy("mixed_float16")
        classifier = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3),
                                       keras.layers.Activation("softmax", dtype="float32")])
        model = CrowdModel(classifier, CommonNoiseAdaptation(3, 3, gate=AnnotatorGate(3, 4)),
                           warmup_epochs=0)
        model.compile()
        history = model.fit(x, (ids, np.where(ids >= 0, 1, -1)), epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"]).all()
    finally:
        keras.mixed_precision.set_global_policy(previous)



def test_mismatched_classes_or_omega_width_name_the_layer_and_shapes():
    """Probabilities with another number of classes, or ω without one value per annotator
    slot: a ValueError naming the layer and the shapes, eager and symbolic (was a backend
    matmul/broadcast error, and a symbolic call silently gave a wrong output shape); the
    gate takes a (batch, [time,] d) representation and (batch, k) ids (a vector or an image
    was silently mixed over its last axis)."""
    probs = np.full((4, 3), 1 / 3, "float32")
    with pytest.raises(ValueError, match=r"num_classes=4.*got \(4, 3\)"):
        CommonNoiseAdaptation(3, 4, omega=0.5)(probs)
    with pytest.raises(ValueError, match=r"omega of shape \(4, 5\).*\(batch, \[time,\] 3\)"):
        CommonNoiseAdaptation(3, 3)([probs, np.zeros((4, 5), "float32")])
    ids = np.array([[0, 1]] * 4, "int32")
    with pytest.raises(ValueError, match=r"omega of shape \(4, 3\).*annotator_ids of shape"):
        CommonNoiseAdaptation(3, 3)([probs, ids, np.zeros((4, 3), "float32")])
    x_in = keras.Input((5,))
    p4 = keras.layers.Dense(4, activation="softmax")(x_in)
    with pytest.raises(ValueError, match=r"num_classes=3.*got \(None, 4\)"):
        CommonNoiseAdaptation(3, 3, gate=AnnotatorGate(3, 4))([p4, x_in])
    for bad in [np.zeros((3,), "float32"), np.zeros((2, 2, 2, 5), "float32")]:
        with pytest.raises(ValueError, match=r"AnnotatorGate expects an instance "
                                             r"representation of shape \(batch, \[time,\] "):
            AnnotatorGate(3, 4)(bad)
    with pytest.raises(ValueError, match=r"annotator_ids must be \(batch, k\), got shape "
                                         r"\(4, 2, 1\)"):
        AnnotatorGate(3, 4)([np.zeros((4, 5), "float32"), ids[..., None]])
    # the forms that fit still build
    assert CommonNoiseAdaptation(3, 3)([probs, ids, np.zeros((4, 2), "float32")]).shape == (4, 2, 3)


# ---------------------------------------------------------------- feature-free label model
def js_divergence(p, q):
    m = (p + q) / 2
    kl = lambda a, b: (a * np.log(np.maximum(a, 1e-12) / np.maximum(b, 1e-12))).sum(-1)  # noqa
    return float((0.5 * kl(p, m) + 0.5 * kl(q, m)).mean() / np.log(2))


def test_common_noise_model_recovers_the_common_matrix():
    sim = simulate_crowd(n_items=6000, n_classes=4, n_annotators=40, annotations_per_item=5,
                         common_noise="asymmetric", common_strength=0.6, common_proportion=0.5,
                         annotator_accuracy=(0.7, 0.9), seed=0)
    model = CommonNoiseModel().fit(sim.annotations)
    # Bound: a model that missed the common noise (identity) is ~0.4 bits per row away from the
    # true matrix; below 0.1 bits each 0.6 flip is matched within about 0.15.
    assert js_divergence(model.common_confusion_, sim.common_confusion) < 0.1
    assert js_divergence(np.eye(4), sim.common_confusion) > 0.35
    acc = (model.predict() == sim.y).mean()
    assert acc >= (MajorityVote().fit(sim.annotations).predict() == sim.y).mean()
    np.testing.assert_allclose(model.confusion_matrices_.sum(axis=2), 1.0)
    assert set(model.annotator_quality_.columns) >= {"annotator", "n_annotations", "accuracy"}
    assert np.all(np.diff(model.log_likelihood_) > -1e-9)


def test_common_noise_model_scores_a_label_nobody_gave_in_the_fit_without_nan():
    # smoothing=0: class 2 was never given in the fit, so π[:, 2] = 0 under every class; new
    # annotations giving it had no finite score under any class (a NaN row)
    fit = Annotations([0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1, 0, 1],
                      [0, 0, 1, 1, 0, 1, 1, 0], n_classes=3)
    model = CommonNoiseModel(smoothing=0.0, labeling_functions="ignore").fit(fit)
    new = Annotations([0, 0, 1, 1], [0, 1, 0, 1], [2, 2, 0, 2], n_classes=3)
    post = model.predict_proba(new)
    assert np.isfinite(post).all()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    # a label impossible under every class favours none: item 0 keeps the class prior
    np.testing.assert_allclose(post[0], model.class_priors_, atol=1e-12)


def test_common_noise_em_equals_its_per_annotation_form():
    """The EM runs on Dawid-Skene's vote counts; App. B's steps written per annotation (ω
    tied per annotator) give the same posteriors, matrices and ω."""
    sim = simulate_crowd(n_items=300, n_classes=3, n_annotators=12, annotations_per_item=4,
                         common_noise="asymmetric", seed=5)
    ann, k, s = sim.annotations, 3, 0.01
    it, ia, y = ann.items, ann.annotators, ann.labels

    def m_step(q_z, q_common, post):
        pi_g = np.full((k, k), s)
        pi_r = np.full((ann.n_annotators, k, k), s)
        np.add.at(pi_g.T, y, q_common)                      # pi_g[c, y] += q_common[t, c]
        np.add.at(pi_r.transpose(0, 2, 1), (ia, y), q_z - q_common)
        prior = post.sum(0) + s
        return (pi_g / pi_g.sum(1, keepdims=True), pi_r / pi_r.sum(2, keepdims=True),
                prior / prior.sum())

    counts = ann.label_counts()
    post = counts / counts.sum(1, keepdims=True)
    pi_g, pi_r, prior = m_step(post[it], 0.5 * post[it], post)
    omega = np.full(ann.n_annotators, 0.3)
    for _ in range(3):
        # the fitted parameters are those of the last E-step (the protocol's state)
        fitted = pi_g, pi_r, omega
        lg, lr, w = pi_g[:, y].T, pi_r[ia, :, y], omega[ia][:, None]
        mix = w * lg + (1 - w) * lr
        logp = np.log(prior) + np.array([np.log(mix[it == i]).sum(0) for i in range(ann.n_items)])
        post = np.exp(logp - logp.max(1, keepdims=True))
        post /= post.sum(1, keepdims=True)
        joint = post[it] * (w * lg / mix)
        pi_g, pi_r, prior = m_step(post[it], joint, post)
        omega = (np.bincount(ia, joint.sum(1), ann.n_annotators) + 1e-9) / \
            (np.bincount(ia, minlength=ann.n_annotators) + 2e-9)
    model = CommonNoiseModel(max_iter=3, tol=0).fit(ann)
    np.testing.assert_allclose(model.posteriors_, post, atol=1e-10)
    np.testing.assert_allclose(model.common_confusion_, fitted[0], atol=1e-10)
    np.testing.assert_allclose(model.individual_confusions_, fitted[1], atol=1e-10)
    np.testing.assert_allclose(model.omega_, fitted[2], atol=1e-10)
    # so the fitted model scores its own annotations as the fit did
    np.testing.assert_allclose(model.predict_proba(ann), model.posteriors_, atol=1e-10)


@pytest.mark.parametrize("name", ["bluebirds", "dog"])
def test_common_noise_model_not_worse_than_voting_on_real_sets(name):
    ann, truth = load_truth_inference(require_data("truth_inference", name))
    acc = (CommonNoiseModel().fit(ann).predict() == truth).mean()
    assert acc >= (MajorityVote().fit(ann).predict() == truth).mean()
    assert acc >= (DawidSkene().fit(ann).predict() == truth).mean() - 0.01
