"""Masked multi-annotator losses: values, missing entries, sequences, dense vs indexed."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.losses import MaskedMultiCrossEntropy, MaskedMultiMSE  # noqa: E402


def as_np(t):
    return keras.ops.convert_to_numpy(t)


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def expected_ce(labels, logits):
    mask = labels >= 0
    lp = log_softmax(logits)
    nll = -np.take_along_axis(lp, np.where(mask, labels, 0)[..., None], -1)[..., 0]
    return nll[mask].mean()


def test_cross_entropy_is_mean_over_observed_labels():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 5, 3)).astype("float32")
    labels = np.array([[0, -1, 2, -1, -1], [-1, -1, -1, -1, -1], [1, 1, 1, 1, 1],
                       [2, -1, -1, -1, 0]])
    got = float(as_np(MaskedMultiCrossEntropy()(labels, logits)))
    assert got == pytest.approx(expected_ce(labels, logits), rel=1e-5)
    # not the mean of per-item means (items have 2, 0, 5, 2 labels)
    lp = -log_softmax(logits)
    assert got != pytest.approx(np.mean([lp[0, [0, 2], [0, 2]].mean(), lp[2, range(5), 1].mean()]))


def test_probabilities_and_logits_agree():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 4, 3)).astype("float32")
    p = np.exp(log_softmax(logits)).astype("float32")
    labels = rng.integers(-1, 3, size=(3, 4))
    a = float(as_np(MaskedMultiCrossEntropy(from_logits=True)(labels, logits)))
    b = float(as_np(MaskedMultiCrossEntropy(from_logits=False)(labels, p)))
    assert a == pytest.approx(b, rel=1e-4)


def test_all_missing_batch_gives_zero_not_nan():
    logits = np.zeros((2, 3, 4), "float32")
    labels = -np.ones((2, 3))
    assert float(as_np(MaskedMultiCrossEntropy()(labels, logits))) == 0.0
    y = np.full((2, 3), np.nan, "float32")
    assert float(as_np(MaskedMultiMSE()(y, logits[..., 0]))) == 0.0


def test_sequence_form():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 6, 3, 4)).astype("float32")   # (batch, time, annotators, K)
    labels = rng.integers(0, 4, size=(2, 6, 3))
    labels[0, :, 1] = -1        # annotator 1 did not label sentence 0
    labels[1, 4:, :] = -1       # sentence 1 is padded after 4 tokens
    got = float(as_np(MaskedMultiCrossEntropy()(labels, logits)))
    assert got == pytest.approx(expected_ce(labels, logits), rel=1e-5)


def test_mse_ignores_nan_answers():
    pred = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], "float32")
    true = np.array([[2.0, np.nan, 1.0], [np.nan, np.nan, 3.0]], "float32")
    got = float(as_np(MaskedMultiMSE()(true, pred)))
    assert got == pytest.approx((1.0 + 4.0 + 9.0) / 3)


def test_sample_weight_scales_item_losses():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 3, 3)).astype("float32")
    labels = np.array([[0, 1, -1], [2, -1, -1]])
    lp = -log_softmax(logits)
    weights = np.array([1.0, 0.0])
    got = float(as_np(MaskedMultiCrossEntropy()(labels, logits, sample_weight=weights)))
    assert got == pytest.approx((lp[0, 0, 0] + lp[0, 1, 1]) / 3, rel=1e-5)


def test_shape_mismatch_is_reported():
    with pytest.raises(ValueError, match="do not match"):
        MaskedMultiCrossEntropy()(np.zeros((2, 4)), np.zeros((2, 3, 5), "float32"))
    with pytest.raises(ValueError, match="do not match"):
        MaskedMultiMSE()(np.zeros((2, 4)), np.zeros((2, 3), "float32"))


def test_losses_serialize():
    for loss in (MaskedMultiCrossEntropy(from_logits=False), MaskedMultiMSE()):
        clone = keras.losses.deserialize(keras.losses.serialize(loss))
        assert type(clone) is type(loss)
    assert keras.losses.deserialize(keras.losses.serialize(
        MaskedMultiCrossEntropy(from_logits=False))).from_logits is False


def _one_sgd_step(model, inputs, targets):
    """Loss and weight change of one SGD(lr=1) step: the change is minus the gradient."""
    before = [as_np(w).copy() for w in model.trainable_weights]
    loss = model.train_on_batch(inputs, targets)
    return float(loss), [b - as_np(w) for b, w in zip(before, model.trainable_weights)]


@pytest.mark.parametrize("conn_type", ["MW", "VW+B"])
def test_dense_and_indexed_forms_give_same_loss_and_gradients(conn_type):
    rng = np.random.default_rng(4)
    n, f, k, a = 8, 5, 3, 6
    x = rng.normal(size=(n, f)).astype("float32")
    dense = np.where(rng.random((n, a)) < 0.4, rng.integers(0, k, (n, a)), -1)
    dense[3] = -1                                        # an item nobody labelled
    dense[:, a - 1] = -1                                 # an annotator with no label here
    # padded (indexed) view of the same annotations
    width = int((dense >= 0).sum(1).max())
    ids = -np.ones((n, width), "int32")
    labels = -np.ones((n, width), "int32")
    for i in range(n):
        who = np.flatnonzero(dense[i] >= 0)
        ids[i, :len(who)], labels[i, :len(who)] = who, dense[i, who]

    def build(indexed):
        keras.utils.set_random_seed(0)
        x_in = keras.Input((f,))
        p = keras.layers.Dense(k, activation="softmax")(x_in)
        layer = CrowdLayer(a, conn_type)
        if indexed:
            ids_in = keras.Input((width,), dtype="int32")
            model = keras.Model([x_in, ids_in], layer([p, ids_in]))
        else:
            model = keras.Model(x_in, layer(p))
        model.compile(keras.optimizers.SGD(1.0), loss=MaskedMultiCrossEntropy())
        return model

    m_dense, m_idx = build(False), build(True)
    for w1, w2 in zip(m_dense.trainable_weights, m_idx.trainable_weights):  # same start
        w2.assign(as_np(w1) + rng.normal(scale=0.3, size=w1.shape).astype("float32"))
        w1.assign(as_np(w2))
    loss_d, grad_d = _one_sgd_step(m_dense, x, dense)
    loss_i, grad_i = _one_sgd_step(m_idx, [x, ids], labels)
    assert loss_d == pytest.approx(loss_i, rel=1e-5)
    assert loss_d > 0
    for gd, gi in zip(grad_d, grad_i):
        np.testing.assert_allclose(gd, gi, rtol=1e-4, atol=1e-6)
    # the annotators with no label in the batch get no gradient
    silent = np.flatnonzero((dense >= 0).sum(0) == 0)
    assert a - 1 in silent
    for g in grad_d[2:]:
        assert np.all(g[silent] == 0)
    assert any(np.abs(g).max() > 0 for g in grad_d)


def _value_and_gradient(loss, y_true, y_pred, **kwargs):
    """The loss and its gradient with respect to ``y_pred`` (on any backend)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        p = tf.Variable(y_pred)
        with tf.GradientTape() as tape:
            value = loss(y_true, p, **kwargs)
        return float(value), tape.gradient(value, p).numpy()
    if backend == "torch":
        import torch

        p = torch.tensor(y_pred, requires_grad=True)
        value = loss(y_true, p, **kwargs)
        value.backward()
        return float(value), p.grad.numpy()
    import jax

    value, grad = jax.value_and_grad(lambda p: loss(y_true, p, **kwargs))(y_pred)
    return float(value), np.asarray(grad)


def _ce_case(seed, shape=(5, 4), k=3):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=shape + (k,)).astype("float32")
    labels = np.where(rng.random(shape) < 0.4, -1, rng.integers(0, k, shape)).astype("int32")
    return labels, logits


@pytest.mark.parametrize("case", ["logits", "probabilities", "sequence", "mse", "all missing"])
def test_default_reduction_equals_keras_reduction_of_call(case):
    """The default call (no sample weight) makes the observed mean directly; Keras' own
    reduction of ``call``'s per-item values (forced by a sample weight of ones) must give the
    same value and the same gradient."""
    if case == "mse":
        rng = np.random.default_rng(5)
        pred = rng.normal(size=(6, 4)).astype("float32")
        true = np.where(rng.random((6, 4)) < 0.4, np.nan, rng.normal(size=(6, 4)))
        loss, y_true, y_pred = MaskedMultiMSE(), true.astype("float32"), pred
    elif case == "sequence":
        y_true, y_pred = _ce_case(6, shape=(3, 5, 2), k=4)
        loss = MaskedMultiCrossEntropy()
    else:
        y_true, y_pred = _ce_case(7)
        if case == "all missing":
            y_true[:] = -1
        loss = MaskedMultiCrossEntropy(from_logits=case != "probabilities")
        if case == "probabilities":
            y_pred = np.exp(log_softmax(y_pred)).astype("float32")
    ones = np.ones(len(y_true), "float32")
    fast, fast_grad = _value_and_gradient(loss, y_true, y_pred)
    slow, slow_grad = _value_and_gradient(loss, y_true, y_pred, sample_weight=ones)
    assert np.isfinite(fast) and np.isfinite(fast_grad).all()
    assert fast == pytest.approx(slow, rel=1e-6, abs=1e-7)
    np.testing.assert_allclose(fast_grad, slow_grad, rtol=1e-5, atol=1e-7)
    if case == "all missing":
        assert fast == 0.0 and not fast_grad.any()


def test_default_cross_entropy_graph_is_lean():
    """TensorFlow: the default reduction's graph has no run-time shape assertion (the rank-3
    path of ``tf.nn.sparse_softmax_cross_entropy_with_logits``) and under half the ops of
    Keras' reduction of the per-item values."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("graph ops are TensorFlow's")
    import tensorflow as tf

    loss = MaskedMultiCrossEntropy()
    spec = (tf.TensorSpec((None, 3), tf.int32), tf.TensorSpec((None, 3, 4), tf.float32))

    def ops_of(fn):
        graph = tf.function(fn).get_concrete_function(*spec).graph
        return [op.type for op in graph.get_operations()]

    fast = ops_of(lambda y, p: loss(y, p))
    slow = ops_of(lambda y, p: loss(y, p, sample_weight=tf.ones(tf.shape(y)[:1])))
    assert "Assert" not in fast and "SparseSoftmaxCrossEntropyWithLogits" in fast
    assert len(fast) < len(slow) / 2, (len(fast), len(slow))


@pytest.mark.parametrize("case", ["slots", "steps", "label counts"])
def test_weights_that_are_all_zero_give_zero_as_keras_reductions_do(case):
    """Per-slot or per-step weights all 0 (a batch of padding items) under
    "mean_with_sample_weight" divided 0 by 0: a NaN loss and NaN gradients, where Keras' own
    losses give 0 (divide_no_nan)."""
    from crowd_keras.losses import LabelCountCrossEntropy

    reduction = "mean_with_sample_weight"
    if case == "label counts":
        loss = LabelCountCrossEntropy(from_logits=True, reduction=reduction)
        y_true = np.ones((2, 3, 4), "float32")
        y_pred = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    else:
        y_true, y_pred = _ce_case(3, shape=(2, 3, 4) if case == "steps" else (2, 3))
        loss = MaskedMultiCrossEntropy(reduction=reduction)
    weights = np.zeros(y_true.shape[:2], "float32")
    value, grad = _value_and_gradient(loss, y_true, y_pred, sample_weight=weights)
    assert value == 0.0 and np.isfinite(grad).all() and not grad.any()
    reference = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                           reduction=reduction)
    assert float(reference(np.zeros((2, 3), "int32"), np.zeros((2, 3, 4), "float32"),
                           sample_weight=np.zeros((2, 3), "float32"))) == 0.0
