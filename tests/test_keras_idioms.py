"""Keras idioms a user reaches for with a model that holds a crowd layer: callbacks that
monitor the masked metric, progress under steps_per_execution, build before load_weights."""
import warnings

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.losses import MaskedMultiCrossEntropy  # noqa: E402
from crowd_keras.metrics import MaskedMultiAccuracy  # noqa: E402

N, D, K, A = 32, 5, 3, 4


def data():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(N, D)).astype("float32"), rng.integers(-1, K, size=(N, A)))


def crowd_model(metric_name="masked_multi_accuracy"):
    """Dense classifier + CrowdLayer, compiled with the masked loss and metric."""
    inp = keras.Input((D,))
    out = CrowdLayer(A)(keras.layers.Dense(K, activation="softmax")(inp))
    model = keras.Model(inp, out)
    model.compile("adam", MaskedMultiCrossEntropy(),
                  metrics=[MaskedMultiAccuracy(name=metric_name)])
    return model


@pytest.mark.parametrize("callback", ["checkpoint", "early_stopping", "reduce_lr"])
def test_monitor_callbacks_maximise_the_masked_accuracy_in_auto_mode(callback, tmp_path):
    # Keras' monitor callbacks read a metric's direction when mode="auto" (the default) and
    # raised "isn't able to automatically determine" for MaskedMultiAccuracy
    x, y = data()
    model = crowd_model()
    monitor = "val_masked_multi_accuracy"
    cb = {"checkpoint": lambda: keras.callbacks.ModelCheckpoint(
              str(tmp_path / "best.keras"), monitor=monitor, save_best_only=True),
          "early_stopping": lambda: keras.callbacks.EarlyStopping(monitor=monitor, patience=5),
          "reduce_lr": lambda: keras.callbacks.ReduceLROnPlateau(monitor=monitor)}[callback]()
    model.fit(x, y, validation_split=0.25, epochs=2, verbose=0, callbacks=[cb])
    assert cb.monitor_op is keras.ops.greater
    if callback == "checkpoint":
        assert (tmp_path / "best.keras").exists()


def test_renamed_metric_keeps_its_direction():
    x, y = data()
    model = crowd_model(metric_name="crowd_acc")
    stop = keras.callbacks.EarlyStopping(monitor="val_crowd_acc", patience=5)
    model.fit(x, y, validation_data=(x, y), epochs=1, verbose=0, callbacks=[stop])
    assert stop.monitor_op is keras.ops.greater


@pytest.mark.skipif(keras.backend.backend() == "torch",
                    reason="steps_per_execution must be 1 on torch")
def test_fit_progress_counts_batches_under_steps_per_execution():
    # Keras calls on_train_batch_end once per execution of 3 batches: the bar counted the
    # calls and ended at '8/20 batch (40%), stopped' for a fit that ran all its batches
    import io

    from crowd_keras.callbacks import FitProgress

    x, y = data()   # 8 batches of 4 per epoch: executions end at batches 3, 6, 8
    model = crowd_model()
    model.compile("adam", MaskedMultiCrossEntropy(), steps_per_execution=3)
    stream = io.StringIO()
    progress = FitProgress(interval=1e9, stream=stream, use_tqdm=False)
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[progress])
    last = stream.getvalue().strip().splitlines()[-1]
    assert last.startswith("training: 16/16 batch (100%)") and "done, epoch 2" in last


@pytest.mark.parametrize("kwargs,error,match", [
    ({"interval": "5"}, TypeError, "`interval`, expected a number"),
    ({"interval": None}, TypeError, "`interval`, expected a number"),
    ({"interval": -1}, ValueError, "`interval`, expected seconds >= 0"),
    ({"disable": "no"}, ValueError, "`disable`, expected True or False"),
    ({"use_tqdm": "no"}, ValueError, "`use_tqdm`, expected True or False")])
def test_fit_progress_checks_its_arguments_before_training(kwargs, error, match):
    # a string or None interval failed at the end of the first batch of training; the truthy
    # strings "no" hid the progress (disable) or drew a bar into a log file (use_tqdm)
    from crowd_keras.callbacks import FitProgress

    with pytest.raises(error, match=match):
        FitProgress(**kwargs)

@pytest.mark.parametrize("indexed", [False, True])
def test_crowd_model_build_then_load_weights(indexed, tmp_path):
    # model.build(shape), what Keras asks for before load_weights, marked a CrowdModel built
    # with its noise layer unbuilt: load_weights skipped the crowd layer's weights (an
    # identity crowd layer, other predictions) and count_params() left them out
    from crowd_keras.layers import CommonNoiseAdaptation, AnnotatorGate
    from crowd_keras.models import CrowdModel

    def model():
        clf = keras.Sequential([keras.Input((D,)), keras.layers.Dense(K, activation="softmax")])
        return CrowdModel(clf, CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A)))

    x, y = data()
    trained = model()
    trained.compile()
    trained.fit(x, y, epochs=2, verbose=0)
    trained.save_weights(tmp_path / "crowd.weights.h5")
    fresh = model()
    with warnings.catch_warnings():   # Keras warned of a build that left state unbuilt
        warnings.simplefilter("error")
        fresh.build({"x": (None, D), "annotator_ids": (None, 2)} if indexed else (None, D))
    assert fresh.noise_layer.built and fresh.count_params() == trained.count_params()
    fresh.load_weights(tmp_path / "crowd.weights.h5")
    np.testing.assert_allclose(fresh.predict(x, verbose=0), trained.predict(x, verbose=0),
                               rtol=1e-6, atol=1e-7)


def test_crowd_model_saved_after_build_loads(tmp_path):
    # saved after model.build(shape), a CrowdModel did not load ("2 objects could not be
    # loaded": the noise layer's and its gate's variables were never made)
    from crowd_keras.layers import CommonNoiseAdaptation, AnnotatorGate
    from crowd_keras.models import CrowdModel

    clf = keras.Sequential([keras.Input((D,)), keras.layers.Dense(K, activation="softmax")])
    model = CrowdModel(clf, CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A)))
    model.build((None, D))
    model.save(tmp_path / "built.keras")
    loaded = keras.saving.load_model(tmp_path / "built.keras")
    x, _ = data()
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6, atol=1e-7)
