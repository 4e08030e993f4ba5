"""CrowdLayer and CrowdRegressionLayer: formulas, identity init, call forms, Keras citizenship."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

from crowd_keras.layers import CrowdLayer, CrowdRegressionLayer  # noqa: E402
from crowd_keras.losses import MaskedMultiCrossEntropy  # noqa: E402

A, K = 5, 3
VARIANTS = ["MW", "VW", "VB", "VW+B", "S"]


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def probs(shape, seed=0):
    return softmax(np.random.default_rng(seed).normal(size=shape)).astype("float32")


def randomize(layer, seed=1):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))


def reference(layer, p):
    """The paper's f_r(σ) in numpy: (batch, [time,] A, K)."""
    w = {v.name: keras.ops.convert_to_numpy(v) for v in layer.weights}
    h = p[..., None, :]
    if layer.conn_type == "MW":
        return np.einsum("...i,aij->...aj", p, w["kernel"])
    out = h * w["scale"] if "scale" in w else h
    return out + w["bias"] if "bias" in w else out


def as_np(t):
    return keras.ops.convert_to_numpy(t)


@pytest.mark.parametrize("conn_type", VARIANTS)
def test_identity_init_passes_probabilities_through(conn_type):
    p = probs((4, K))
    out = as_np(CrowdLayer(A, conn_type)(p))
    assert out.shape == (4, A, K)
    np.testing.assert_allclose(out, np.broadcast_to(p[:, None, :], out.shape), atol=1e-6)


@pytest.mark.parametrize("conn_type", VARIANTS)
def test_dense_form_matches_paper_formula(conn_type):
    layer = CrowdLayer(A, conn_type)
    p = probs((4, K))
    layer(p)
    randomize(layer)
    np.testing.assert_allclose(as_np(layer(p)), reference(layer, p), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("conn_type", VARIANTS)
@pytest.mark.parametrize("seq", [False, True])
def test_indexed_form_gathers_the_same_weights(conn_type, seq):
    layer = CrowdLayer(A, conn_type)
    p = probs((4, 6, K) if seq else (4, K))
    ids = np.array([[0, 3, -1], [4, -1, -1], [2, 1, 0], [-1, -1, -1]], dtype="int32")
    layer(p)  # build
    randomize(layer)
    dense = as_np(layer(p))
    out = as_np(layer([p, ids]))
    assert out.shape == ((4, 6, 3, K) if seq else (4, 3, K))
    for b, row in enumerate(ids):
        for slot, a in enumerate(row):
            if a >= 0:
                np.testing.assert_allclose(out[b, ..., slot, :], dense[b, ..., a, :], rtol=1e-5,
                                           atol=1e-6)


def test_sequence_dense_shape_and_formula():
    layer = CrowdLayer(A, "MW")
    p = probs((2, 7, K))
    layer(p)
    randomize(layer)
    out = as_np(layer(p))
    assert out.shape == (2, 7, A, K)
    np.testing.assert_allclose(out, reference(layer, p), rtol=1e-5, atol=1e-5)


def test_confusion_matrices_are_row_stochastic_and_start_at_the_paper_identity():
    layer = CrowdLayer(A, "MW")
    layer(probs((2, K)))
    cm = layer.confusion_matrices()
    assert cm.shape == (A, K, K)
    np.testing.assert_allclose(cm.sum(-1), 1.0, rtol=1e-5)
    e = np.e / (np.e + K - 1)  # softmax of a one-hot row: identity init
    np.testing.assert_allclose(np.einsum("akk->ak", cm), e, rtol=1e-5)
    # a learned matrix that prefers label 2 for true class 0 shows up in row 0
    w = as_np(layer.kernel)
    w[1, 0] = [0.0, 0.0, 5.0]
    layer.kernel.assign(w)
    assert layer.confusion_matrices()[1, 0].argmax() == 2


@pytest.mark.parametrize("conn_type", ["MW", "VW+B"])
def test_confusion_matrices_are_float32_numbers_under_a_mixed_policy(conn_type):
    # they were made from logits in the compute dtype: under mixed_bfloat16 the reported
    # probabilities were off by up to 1e-2 (CoNAL's and the mixture's are made in float32)
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        layer = CrowdLayer(A, conn_type, learning_rate_multiplier=3.0)
        layer(probs((1, K)))
    finally:
        keras.config.set_dtype_policy("float32")
    rng = np.random.default_rng(0)
    for w in layer.weights:
        w.assign(rng.normal(scale=2.0, size=tuple(w.shape)).astype("float32"))
    eff = layer.effective_weights()
    if conn_type == "MW":
        logits = eff["kernel"]                                  # (A, K, K): row i = e_i W
    else:
        logits = np.eye(K)[None] * eff["scale"][:, None, :] + eff["bias"][:, None, :]
    np.testing.assert_allclose(layer.confusion_matrices(), softmax(logits), rtol=1e-5,
                               atol=1e-6)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="conn_type"):
        CrowdLayer(A, "XYZ")
    with pytest.raises(ValueError, match="num_annotators"):
        CrowdLayer(0)
    with pytest.raises(ValueError, match="probabilities"):
        CrowdLayer(A)(np.zeros((2, 3, 4, K), "float32"))
    with pytest.raises(ValueError, match="not built"):
        CrowdLayer(A).confusion_matrices()


@pytest.mark.parametrize("conn_type", VARIANTS)
def test_get_config_round_trip(conn_type):
    layer = CrowdLayer(A, conn_type.lower(), name="crowd")
    clone = CrowdLayer.from_config(layer.get_config())
    assert (clone.num_annotators, clone.conn_type, clone.name) == (A, conn_type, "crowd")
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert isinstance(restored, CrowdLayer) and restored.conn_type == conn_type


@pytest.mark.parametrize("conn_type", VARIANTS)
def test_init_scale_and_learning_rate_multiplier(conn_type):
    """``init_scale`` starts at s·I; the multiplier leaves the function alone and makes an
    Adam step move the weights in use m times further."""
    p = probs((4, K))
    ids = np.array([[0, 2, -1]] * 4, "int32")
    labels = np.array([[1, 0, -1]] * 4, "int32")
    plain = CrowdLayer(A, conn_type)
    scaled = CrowdLayer(A, conn_type, init_scale=3.0)
    fast = CrowdLayer(A, conn_type, init_scale=3.0, learning_rate_multiplier=10.0)
    out_plain, out_scaled, out_fast = (as_np(layer(p)) for layer in (plain, scaled, fast))
    if conn_type == "VB":   # additive only: init_scale has nothing to scale
        np.testing.assert_allclose(out_scaled, out_plain, atol=1e-6)
    else:
        np.testing.assert_allclose(out_scaled, 3.0 * out_plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_fast, out_scaled, rtol=1e-5, atol=1e-6)
    if conn_type == "MW":
        diag = np.einsum("akk->ak", scaled.confusion_matrices())
        np.testing.assert_allclose(diag, np.exp(3) / (np.exp(3) + K - 1), rtol=1e-5)
        np.testing.assert_allclose(fast.confusion_matrices(), scaled.confusion_matrices(),
                                   rtol=1e-5)

    def moved(layer):
        before = layer.effective_weights()
        x_in, ids_in = keras.Input((K,)), keras.Input((3,), dtype="int32")
        model = keras.Model([x_in, ids_in], layer([x_in, ids_in]))
        model.compile(keras.optimizers.Adam(1e-3), loss=MaskedMultiCrossEntropy(from_logits=True))
        model.train_on_batch([p, ids], labels)
        after = layer.effective_weights()
        return max(np.abs(after[n] - before[n]).max() for n in before)

    step_scaled, step_fast = moved(scaled), moved(fast)
    assert step_scaled > 0
    np.testing.assert_allclose(step_fast, 10.0 * step_scaled, rtol=1e-2)
    config = fast.get_config()
    assert (config["init_scale"], config["learning_rate_multiplier"]) == (3.0, 10.0)
    clone = CrowdLayer.from_config(config)
    np.testing.assert_allclose(as_np(clone(p)), out_fast, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="positive"):
        CrowdLayer(A, conn_type, learning_rate_multiplier=0)


# ---------------------------------------------------------------------- regression layer
@pytest.mark.parametrize("conn_type", ["S", "B", "S+B"])
@pytest.mark.parametrize("seq", [False, True])
def test_regression_layer_forms(conn_type, seq):
    layer = CrowdRegressionLayer(A, conn_type)
    mu = np.random.default_rng(0).normal(size=(3, 4, 1) if seq else (3, 1)).astype("float32")
    out0 = as_np(layer(mu))
    np.testing.assert_allclose(out0, np.broadcast_to(mu, out0.shape), atol=1e-6)  # identity
    randomize(layer)
    w = {v.name: as_np(v) for v in layer.weights}
    expect = mu * w.get("scale", 1.0) + w.get("bias", 0.0)
    dense = as_np(layer(mu))
    assert dense.shape == ((3, 4, A) if seq else (3, A))
    np.testing.assert_allclose(dense, expect, rtol=1e-5, atol=1e-6)
    ids = np.array([[1, -1], [4, 0], [2, 3]], dtype="int32")
    out = as_np(layer([mu, ids]))
    assert out.shape == ((3, 4, 2) if seq else (3, 2))
    for b, row in enumerate(ids):
        for slot, a in enumerate(row):
            if a >= 0:
                np.testing.assert_allclose(out[b, ..., slot], dense[b, ..., a], rtol=1e-5)


def test_regression_layer_rejects_vector_outputs():
    with pytest.raises(ValueError, match=r"\(batch, 1\)"):
        CrowdRegressionLayer(A)(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match="conn_type"):
        CrowdRegressionLayer(A, "MW")
    with pytest.raises(ValueError, match=r"takes mu or \[mu, annotator_ids\], got a list of 3"):
        CrowdRegressionLayer(A)([np.zeros((2, 1), "float32"), np.zeros((2, 2), "int32"),
                                 np.zeros((2, 2), "int32")])


# ---------------------------------------------------------------------- Keras citizenship
def test_sequential_and_functional_models_save_and_load(tmp_path):
    seq = keras.Sequential([keras.Input((4,)), keras.layers.Dense(K, activation="softmax"),
                            CrowdLayer(A, "VW+B")])
    x_in = keras.Input((4,))
    ids_in = keras.Input((2,), dtype="int32")
    p = keras.layers.Dense(K, activation="softmax")(x_in)
    func = keras.Model([x_in, ids_in], CrowdLayer(A, "MW")([p, ids_in]))
    x = np.random.default_rng(0).normal(size=(6, 4)).astype("float32")
    ids = np.array([[0, 1], [2, -1], [4, 3], [1, 0], [3, -1], [0, 2]], dtype="int32")
    for model, inputs in ((seq, x), (func, [x, ids])):
        for layer in model.layers:
            if isinstance(layer, CrowdLayer):
                randomize(layer)
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        np.testing.assert_allclose(as_np(loaded(inputs)), as_np(model(inputs)), rtol=1e-6)
    assert func.output_shape == (None, 2, K)
    assert seq.output_shape == (None, A, K)
