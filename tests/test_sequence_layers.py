"""The sequence form of the crowd layers with Keras masks: padding never trains."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
from conftest import require_module

from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, CrowdLayer,
                                CrowdRegressionLayer, MixtureOfGroups)
from crowd_keras.losses import LabelCountCrossEntropy, MaskedMultiCrossEntropy, MaskedMultiMSE

ROOT = Path(__file__).resolve().parents[1]
V, K, A, T, S = 20, 3, 6, 7, 3


def tagger_with_crowd_layer(mask_zero=True, seed=0):
    keras.utils.set_random_seed(seed)
    words = keras.Input((T,), dtype="int32")
    ids = keras.Input((S,), dtype="int32")
    h = keras.layers.Embedding(V, 8, mask_zero=mask_zero)(words)
    h = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))(h)
    probs = keras.layers.Dense(K, activation="softmax")(h)
    return keras.Model([words, ids], CrowdLayer(A, init_scale=2)([probs, ids]))


def batch():
    rng = np.random.default_rng(0)
    words = np.array([[3, 4, 5, 0, 0, 0, 0], [6, 7, 8, 9, 1, 2, 0]], "int32")   # 0 = padding
    ids = np.array([[0, 1, -1], [2, 3, 4]], "int32")
    y = rng.integers(0, K, (2, T, S)).astype("int32")
    y[np.broadcast_to(ids[:, None, :] < 0, y.shape)] = -1
    pad = np.broadcast_to((words == 0)[..., None], y.shape)
    y_other = np.where(pad, (y + 1) % K, y)          # different real labels on the padding
    y_missing = np.where(pad, -1, y)                 # padding marked missing by hand
    return words, ids, y, y_other, y_missing


# the gradients are taken with TensorFlow's tape (the torch and jax backends' case runs below,
# in its own process): elsewhere, and without TensorFlow, the case is skipped at collection
TF_BACKEND = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="the gradient check uses TensorFlow's GradientTape")


def loss_and_grads(model, x, y, loss=None):
    import tensorflow as tf

    loss = loss or MaskedMultiCrossEntropy()
    with tf.GradientTape() as tape:
        value = loss(y, model(x))
    grads = tape.gradient(value, model.trainable_weights)
    return float(value), [tf.convert_to_tensor(g).numpy() for g in grads]


@TF_BACKEND
def test_masked_steps_do_not_train_even_with_real_labels_on_them():
    words, ids, y, y_other, y_missing = batch()
    model = tagger_with_crowd_layer()
    out = model([words, ids])
    mask = keras.ops.convert_to_numpy(out._keras_mask)
    assert mask.shape == (2, T) and (mask == (words > 0)).all()
    ref = loss_and_grads(model, [words, ids], y_missing)
    for labels in (y, y_other):
        got = loss_and_grads(model, [words, ids], labels)
        assert np.isclose(got[0], ref[0])
        for g, r in zip(got[1], ref[1]):
            np.testing.assert_allclose(g, r, atol=1e-7)
    # the test can fail: without the Keras mask the padding's labels change the loss
    plain = tagger_with_crowd_layer(mask_zero=False)
    assert not np.isclose(loss_and_grads(plain, [words, ids], y)[0],
                          loss_and_grads(plain, [words, ids], y_other)[0])


def test_fit_on_a_padded_batch_equals_fit_with_padding_marked_missing():
    words, ids, y, y_other, y_missing = batch()
    weights = []
    for labels in (y_other, y_missing):
        model = tagger_with_crowd_layer(seed=1)
        model.compile(keras.optimizers.SGD(0.5), loss=MaskedMultiCrossEntropy())
        model.fit([words, ids], labels, epochs=3, batch_size=2, verbose=0, shuffle=False)
        weights.append([w.numpy() for w in model.weights])
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_dense_form_and_regression_layer_keep_the_mask():
    words, ids, y, _, y_missing = batch()
    keras.utils.set_random_seed(0)
    inp = keras.Input((T,), dtype="int32")
    h = keras.layers.Embedding(V, 4, mask_zero=True)(inp)
    probs = keras.layers.Dense(K, activation="softmax")(h)
    dense = keras.Model(inp, CrowdLayer(A)(probs))               # (batch, T, A, K)
    out = dense(words)
    assert tuple(out.shape) == (2, T, A, K) and out._keras_mask.shape == (2, T)
    full = np.full((2, T, A), -1, "int32")
    full[:, :, 0] = np.where(words > 0, 1, 2)                    # padding labelled 2
    masked_by_hand = np.where(words[..., None] > 0, full, -1)
    loss = MaskedMultiCrossEntropy()
    assert np.isclose(float(loss(full, out)), float(loss(masked_by_hand, out)))

    mu = keras.layers.Dense(1)(h)
    ids_in = keras.Input((S,), dtype="int32")
    reg = keras.Model([inp, ids_in], CrowdRegressionLayer(A, "S+B")([mu, ids_in]))
    r = reg([words, ids])
    assert tuple(r.shape) == (2, T, S) and r._keras_mask.shape == (2, T)
    target = np.where(ids[:, None, :] >= 0, 1.0, np.nan).repeat(T, 1).astype("float32")
    real = (words > 0)[..., None]
    padded = np.where(real, target, 1e6).astype("float32")        # huge answers on padding
    by_hand = np.where(real, target, np.nan).astype("float32")
    mse = MaskedMultiMSE()
    assert np.isclose(float(mse(padded, r)), float(mse(by_hand, r)))


def test_masked_sequence_crowd_model_round_trips_through_a_keras_file(tmp_path):
    words, ids, y, _, _ = batch()
    model = tagger_with_crowd_layer()
    model.compile(keras.optimizers.Adam(1e-2), loss=MaskedMultiCrossEntropy())
    model.fit([words, ids], y, epochs=1, verbose=0)
    path = tmp_path / "tagger.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict([words, ids], verbose=0),
                               model.predict([words, ids], verbose=0), atol=1e-6)
    assert loaded.layers[-1].supports_masking
    assert np.isclose(loaded.evaluate([words, ids], y, verbose=0),
                      model.evaluate([words, ids], y, verbose=0), atol=1e-6)



@pytest.mark.parametrize("noise, form", [
    (lambda: CommonNoiseAdaptation(A, K, omega=0.4), "ids"),
    (lambda: CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A, 4)), "gate"),
    (lambda: MixtureOfGroups(2, K, num_annotators=A), "ids"),
    (lambda: MixtureOfGroups(2, K, num_annotators=A), "dense"),
    (lambda: MixtureOfGroups(2, K), "counts"),
], ids=["conal-omega", "conal-gate", "groups-ids", "groups-dense", "groups-global"])
def test_conal_and_mixture_of_groups_keep_the_mask(noise, form):
    """The sequence forms of CoNAL and the mixture of groups keep the time-step mask (they
    dropped it, with Keras' "does not support masking" warning, and the padding trained)."""
    words, ids, y, y_other, y_missing = batch()
    keras.utils.set_random_seed(0)
    w_in, ids_in = keras.Input((T,), dtype="int32"), keras.Input((S,), dtype="int32")
    h = keras.layers.Embedding(V, 4, mask_zero=True)(w_in)
    probs = keras.layers.Dense(K, activation="softmax")(h)
    layer = noise()
    out = {"ids": lambda: layer([probs, ids_in]), "gate": lambda: layer([probs, ids_in, h]),
           "dense": lambda: layer(probs), "counts": lambda: layer(probs)}[form]()
    model = keras.Model([w_in, ids_in], out)
    pred = model([words, ids])
    assert (keras.ops.convert_to_numpy(pred._keras_mask) == (words > 0)).all()
    loss = MaskedMultiCrossEntropy()
    if form == "dense":
        y_other = np.full((2, T, A), 1, "int32")
        y_missing = np.where(words[..., None] > 0, y_other, -1)
    elif form == "counts":
        loss = LabelCountCrossEntropy()
        y_other = np.random.default_rng(1).integers(0, 3, (2, T, K)).astype("float32")
        y_missing = np.where(words[..., None] > 0, y_other, 0.0).astype("float32")
    assert np.isclose(float(loss(y_other, pred)), float(loss(y_missing, pred)), rtol=1e-6)


BACKEND_SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np, keras
    from crowd_keras.layers import CrowdLayer
    from crowd_keras.losses import MaskedMultiCrossEntropy
    assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
    keras.utils.set_random_seed(0)
    words = keras.Input((5,), dtype="int32"); ids = keras.Input((2,), dtype="int32")
    h = keras.layers.Embedding(10, 4, mask_zero=True)(words)
    probs = keras.layers.Dense(2, activation="softmax")(h)
    model = keras.Model([words, ids], CrowdLayer(3)([probs, ids]))
    x = [np.array([[1, 2, 0, 0, 0]], "int32"), np.array([[0, 1]], "int32")]
    loss = MaskedMultiCrossEntropy()
    a = float(loss(np.array([[[1, 0]] * 2 + [[1, 1]] * 3]), model(x)))
    b = float(loss(np.array([[[1, 0]] * 2 + [[-1, -1]] * 3]), model(x)))
    assert np.isclose(a, b), (a, b)
    print("ok")
''')


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_mask_is_honoured_on_other_backends(backend):
    require_module(backend)
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    res = subprocess.run([sys.executable, "-c", BACKEND_SCRIPT, backend], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr[-3000:]
