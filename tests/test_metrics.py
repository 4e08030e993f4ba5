"""MaskedMultiAccuracy: accuracy over the annotations that exist (empty slots and padded steps
left out), in a model, serialized and under sample weights."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.losses import MaskedMultiCrossEntropy  # noqa: E402
from crowd_keras.metrics import MaskedMultiAccuracy  # noqa: E402


def accuracy(labels, scores, weights=None):
    """The metric by hand: hits over observed slots (weights broadcast over the slots)."""
    seen = labels >= 0
    w = np.ones(labels.shape) if weights is None else np.broadcast_to(
        np.reshape(weights, weights.shape + (1,) * (labels.ndim - weights.ndim)), labels.shape)
    hits = (scores.argmax(-1) == labels) & seen
    return (w * hits).sum() / (w * seen).sum()


def value(metric):
    return float(keras.ops.convert_to_numpy(metric.result()))


def test_counts_only_observed_annotations():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 4, 3)).astype("float32")
    labels = rng.integers(-1, 3, size=(5, 4))
    metric = MaskedMultiAccuracy()
    metric.update_state(labels, scores)
    assert value(metric) == pytest.approx(accuracy(labels, scores))
    # Keras' own accuracy counts the empty slots as misses
    plain = keras.metrics.SparseCategoricalAccuracy()
    plain.update_state(labels, scores)
    assert value(plain) < value(metric)
    # running sums over batches, and a reset
    metric.update_state(labels[:2], scores[:2])
    both = accuracy(np.concatenate([labels, labels[:2]]), np.concatenate([scores, scores[:2]]))
    assert value(metric) == pytest.approx(both)
    metric.reset_state()
    metric.update_state(-np.ones((2, 4), "int32"), scores[:2])
    assert value(metric) == 0.0


@pytest.mark.parametrize("shape", [(5,), (5, 4)])
def test_sample_weights_per_item_and_per_slot(shape):
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(5, 4, 3)).astype("float32")
    labels = rng.integers(-1, 3, size=(5, 4))
    weights = rng.uniform(0.5, 2.0, size=shape).astype("float32")
    metric = MaskedMultiAccuracy()
    metric.update_state(labels, scores, sample_weight=weights)
    assert value(metric) == pytest.approx(accuracy(labels, scores, weights), rel=1e-6)


def test_mismatched_targets_name_their_shape():
    with pytest.raises(ValueError, match=r"targets of shape \(2, 4, 3\) do not match "
                                         r"predictions of shape \(2, 4, 3\)"):
        MaskedMultiAccuracy().update_state(np.zeros((2, 4, 3), "int32"),
                                           np.zeros((2, 4, 3), "float32"))


def test_a_label_beyond_the_classes_is_named_as_the_loss_names_it():
    # a label >= K was counted as a miss (the loss raised on the same targets)
    from crowd_keras import CrowdDataError

    scores = np.zeros((2, 4, 3), "float32")
    labels = np.array([[0, -1, 2, 1], [1, 3, -1, 0]])
    with pytest.raises(CrowdDataError) as loss_error:
        MaskedMultiCrossEntropy()(labels, scores)
    metric = MaskedMultiAccuracy()
    with pytest.raises(CrowdDataError, match=r"masked_multi_accuracy y_true.*\b3\b") as error:
        metric.update_state(labels, scores)
    assert str(error.value).replace("masked_multi_accuracy", "masked_multi_cross_entropy") \
        == str(loss_error.value)
    assert value(metric) == 0.0 and float(keras.ops.convert_to_numpy(metric.observed)) == 0.0
    for bad in ([[0, -2, 1, 1]], [[0.5, 1, 1, 1]]):     # no missing marker, no class
        with pytest.raises(CrowdDataError):
            metric.update_state(np.array(bad), scores[:1])


def test_the_running_sums_are_kept_in_the_metric_dtype_as_keras_metrics_keep_them():
    # the sums were made in floatx whatever the dtype: a float64 metric stopped counting
    # once 2**24 annotations were seen (float32 cannot hold 2**24 + 1)
    metric = MaskedMultiAccuracy(dtype="float64")
    reference = keras.metrics.SparseCategoricalAccuracy(dtype="float64")
    assert [v.dtype for v in metric.variables] == [v.dtype for v in reference.variables] \
        == ["float64", "float64"]
    metric.hits.assign(2.0 ** 24)
    metric.observed.assign(2.0 ** 24)
    metric.update_state(np.array([[0, 1]]), np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32"))
    assert float(keras.ops.convert_to_numpy(metric.observed)) == 2.0 ** 24 + 2
    assert float(keras.ops.convert_to_numpy(metric.hits)) == 2.0 ** 24 + 2
    metric.reset_state()
    assert value(metric) == 0.0


def _tagger():
    keras.utils.set_random_seed(0)
    words, ids = keras.Input((6,), dtype="int32"), keras.Input((3,), dtype="int32")
    h = keras.layers.Embedding(20, 8, mask_zero=True)(words)
    probs = keras.layers.Dense(2, activation="softmax")(h)
    model = keras.Model([words, ids], CrowdLayer(5)([probs, ids]))
    model.compile("adam", loss=MaskedMultiCrossEntropy(), metrics=[MaskedMultiAccuracy()])
    return model


def test_in_a_tagger_padded_steps_and_empty_slots_do_not_count(tmp_path):
    rng = np.random.default_rng(2)
    words = np.array([[3, 4, 5, 0, 0, 0], [6, 7, 8, 9, 1, 0]], "int32")   # 0 = padding
    ids = np.array([[0, 1, -1], [2, 3, 4]], "int32")
    y = rng.integers(0, 2, (2, 6, 3)).astype("int32")
    y[np.broadcast_to(ids[:, None, :] < 0, y.shape)] = -1
    model = _tagger()
    model.fit([words, ids], y, epochs=1, verbose=0)
    scores = keras.ops.convert_to_numpy(model([words, ids]))
    expected = accuracy(np.where((words > 0)[..., None], y, -1), scores)
    logs = model.evaluate([words, ids], y, verbose=0, return_dict=True)
    assert logs["masked_multi_accuracy"] == pytest.approx(expected, abs=1e-6)
    # the labels of padded steps play no part
    padded = y.copy()
    padded[words == 0] = 1 - np.maximum(padded[words == 0], 0)
    assert model.evaluate([words, ids], padded, verbose=0, return_dict=True)[
        "masked_multi_accuracy"] == pytest.approx(expected, abs=1e-6)
    # saved and loaded with the model, and from its config
    path = tmp_path / "tagger.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.evaluate([words, ids], y, verbose=0, return_dict=True)[
        "masked_multi_accuracy"] == pytest.approx(expected, abs=1e-6)
    config = MaskedMultiAccuracy(name="crowd_acc").get_config()
    assert MaskedMultiAccuracy.from_config(config).name == "crowd_acc"
