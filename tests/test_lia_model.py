"""LIA-E's one definition (``crowd_keras.lia.model``): its hand-written gradients of Eq. 7
against finite differences of the same function, and against automatic differentiation of
the Keras trainer's network (the same equations through Keras layers) on the same weights.
"""
from __future__ import annotations

import keras
import numpy as np
import pytest

import crowd_keras.lia.model as lia_model
from crowd_keras.datasets import simulate_crowd
from crowd_keras.lia.em import FeatureFreeLIA
from crowd_keras.lia.model import WEIGHT_SHAPES, annotator_penalty, objective

_DENSE = ("truth_kernel", "truth_bias", "difficulty_kernel", "difficulty_bias",
          "competence_bias")


def _problem(n_items=7, n_annotators=5, k=3, seed=0):
    ann = simulate_crowd(n_items=n_items, n_classes=k, n_annotators=n_annotators,
                         annotations_per_item=3, seed=seed).annotations
    target = np.random.default_rng(seed).dirichlet(np.ones(k), size=ann.n_items)
    return ann, target


def _weights(ann, k, e, lat, dtype, seed=1):
    rng = np.random.default_rng(seed)
    width = k * k * lat
    shapes = {"truth_embedding": (ann.n_items, e), "truth_kernel": (e, k), "truth_bias": (k,),
              "difficulty_embedding": (ann.n_items, e), "difficulty_kernel": (e, width),
              "difficulty_bias": (width,), "competence_table": (ann.n_annotators, width),
              "competence_bias": (width,)}
    assert set(shapes) == set(WEIGHT_SHAPES)
    return {name: rng.normal(scale=0.7, size=shape).astype(dtype)
            for name, shape in shapes.items()}


def _loss_and_gradients(p, ann, target, lat, l2s):
    """The whole-batch loss (every item one batch) and its gradient by weight name, as the
    numpy engine computes them: :func:`objective` plus :func:`annotator_penalty`."""
    classifier_l2, instance_l2, annotator_l2, scale = l2s
    n, a = ann.n_items, ann.n_annotators
    who, loc, labels = ann.annotators, ann.items, ann.labels.astype(np.intp)

    def scatter(g):   # per batch row, then per annotator sums
        out = np.zeros((n + a, g.shape[1]), dtype=g.dtype)
        np.add.at(out, loc, g)
        np.add.at(out, n + who, g)
        return out

    grads = {name: np.empty_like(p[name]) for name in _DENSE}
    items_w = np.concatenate([p["truth_embedding"], p["difficulty_embedding"]], axis=1)
    loss, g_items, sums = objective(p, items_w, np.ascontiguousarray(target.T.astype(
        items_w.dtype)), who, loc, labels, scatter, grads, n_items=n, latent_dim=lat,
        classifier_l2=classifier_l2, instance_l2=instance_l2)
    e = items_w.shape[1] // 2
    grads["truth_embedding"], grads["difficulty_embedding"] = g_items[:, :e], g_items[:, e:]
    grads["competence_table"] = np.array(sums[n:])
    if annotator_l2:
        dtype = p["competence_table"].dtype.type
        loss += annotator_penalty(p["competence_table"], dtype(annotator_l2) / dtype(n), scale,
                                  grads["competence_table"])
    return loss, grads


PENALTIES = {"none": (0.0, 0.0, 0.0, None), "L2": (0.5, 2.0, 1.5, None),
             "Cauchy": (0.5, 2.0, 1.5, 0.8)}


@pytest.mark.parametrize("latent_dim", [1, 2])
@pytest.mark.parametrize("penalty", sorted(PENALTIES))
@pytest.mark.parametrize("shifted", [False, True])   # Eq. 1 with or without the max shift
def test_gradients_are_the_finite_differences_of_eq7(latent_dim, penalty, shifted,
                                                      monkeypatch):
    if shifted:
        monkeypatch.setattr(lia_model, "_EXP_SAFE", 0.0)
    ann, target = _problem()
    p = _weights(ann, 3, 2, latent_dim, "float64")
    l2s = PENALTIES[penalty]
    _, grads = _loss_and_gradients(p, ann, target, latent_dim, l2s)
    h = 1e-6
    for name, w in p.items():
        numeric = np.empty_like(w)
        for idx in np.ndindex(w.shape):
            old = w[idx]
            w[idx] = old + h
            up = _loss_and_gradients(p, ann, target, latent_dim, l2s)[0]
            w[idx] = old - h
            down = _loss_and_gradients(p, ann, target, latent_dim, l2s)[0]
            w[idx] = old
            numeric[idx] = (up - down) / (2 * h)
        # a float32 table of the observed labels' columns rounds one term of the unshifted
        # form: float32 precision there, float64 elsewhere
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-7, err_msg=name)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="GradientTape: the TensorFlow backend's automatic differentiation")
@pytest.mark.parametrize("latent_dim, scale", [(1, 0.8), (2, None)])
def test_gradients_are_the_keras_networks_autodiff(latent_dim, scale):
    """The trainer's default feature-free network given the numpy weights: its loss
    (ExpectedCompleteNLL plus its regularisers, every item one batch) and TensorFlow's
    gradients of it are the numpy model's, to float32 rounding."""
    import tensorflow as tf

    from crowd_keras.lia.losses import ExpectedCompleteNLL
    from crowd_keras.lia.trainer import LIATrainer

    ann, target = _problem(n_items=40, n_annotators=6, seed=3)
    l2s = (0.5, 2.0, 1.5, scale)
    common = dict(num_classes=3, latent_dim=latent_dim, classifier_l2=l2s[0],
                  instance_l2=l2s[1], annotator_l2=l2s[2], annotator_scale=scale, seed=0)
    fitted = FeatureFreeLIA(embedding_dim=4, em_iterations=1, m_steps=3, **common).fit(ann)
    p = {name: np.ascontiguousarray(w) for name, w in fitted.weights_.items()}
    trainer = LIATrainer(instance_embedding_dim=4, hidden_units=(), marginal_steps=0,
                         **common).restore(fitted)
    ids, labels = ann.to_padded()
    data = {"x": np.arange(ann.n_items, dtype="int32"), "annotator_ids": ids.astype("int32"),
            "labels": labels.astype("int32")}
    variables = trainer._variables()
    with tf.GradientTape() as tape:
        out = trainer.model_(data, training=True)
        loss = ExpectedCompleteNLL()(target.astype("float32"), out) + tf.add_n(
            trainer.model_.losses)
    auto = tape.gradient(loss, [v.value for v in variables.values()])
    numpy_loss, grads = _loss_and_gradients(p, ann, target, latent_dim, l2s)
    np.testing.assert_allclose(numpy_loss, float(loss), rtol=1e-5)
    for name, g in zip(variables, auto):
        g = tf.convert_to_tensor(g).numpy()   # the embeddings' gradients are sparse
        scale_of = np.abs(g).max()
        np.testing.assert_allclose(grads[name], g, rtol=1e-4, atol=1e-5 * scale_of,
                                   err_msg=name)


@pytest.mark.parametrize("latent_dim", [1, 2])
def test_eq1_is_one_function_for_numpy_and_keras(latent_dim):
    """``eq1`` with keras.ops (what the Keras layer runs) and with scipy
    (``log_confusions``) give the numpy engine's ``confusions``."""
    from keras import ops

    from crowd_keras.lia.model import confusions, eq1, log_confusions

    rng = np.random.default_rng(2)
    d = rng.normal(scale=2.0, size=(4, 1, 3, 3, latent_dim)).astype("float32")
    c = rng.normal(scale=2.0, size=(1, 5, 3, 3, latent_dim)).astype("float32")
    z = d + c
    q = confusions(d, c)
    np.testing.assert_allclose(np.exp(log_confusions(z.astype("float64"))), q, atol=1e-6)
    keras_log = ops.convert_to_numpy(eq1(ops.convert_to_tensor(z), ops.logsumexp,
                                         ops.log_softmax))
    keras_probs = ops.convert_to_numpy(eq1(ops.convert_to_tensor(z), ops.logsumexp,
                                           ops.softmax))
    np.testing.assert_allclose(np.exp(keras_log), q, atol=1e-6)
    np.testing.assert_allclose(keras_probs, q, atol=1e-6)
