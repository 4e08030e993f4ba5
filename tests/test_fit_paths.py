"""CrowdModel's fit / evaluate / predict input paths and callbacks, against what a plain
keras.Model does with the same arguments."""
import io

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.callbacks import FitProgress  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.models import CrowdModel  # noqa: E402

K, A = 3, 6


@pytest.fixture(scope="module")
def sim():
    return simulate_crowd(n_items=64, n_classes=K, n_annotators=A, annotations_per_item=2,
                          n_features=5, seed=0)


def crowd_model(seed=0):
    keras.utils.set_random_seed(seed)
    clf = keras.Sequential([keras.Input((5,)), keras.layers.Dense(K, activation="softmax")])
    model = CrowdModel(clf, CrowdLayer(A, "MW"))
    model.compile()
    return model


def progress_lines(model, x, y=None, **fit_kwargs):
    err = io.StringIO()
    model.fit(x, y, verbose=0, callbacks=[FitProgress(interval=0.0, stream=err, use_tqdm=False)],
              **fit_kwargs)
    return err.getvalue().strip().splitlines()


def test_fit_progress_counts_the_epochs_a_fit_runs_and_a_dataset_of_unknown_length(sim):
    """With initial_epoch=2, epochs=3 the bar counted 3 epochs of batches and ended 'stopped'
    at 33% though the fit ran its one epoch; over a dataset of unknown length it counted one
    batch per epoch and ended at '8/2 batch (400%)'."""
    model = crowd_model()
    lines = progress_lines(model, sim.x, sim.annotations, epochs=3, initial_epoch=2,
                           batch_size=16)
    assert lines[0].startswith("training: 0/4 batch (0%)")
    assert lines[-1].startswith("training: 4/4 batch (100%)") and "done, epoch 3" in lines[-1]
    tf = pytest.importorskip("tensorflow")
    unknown = (tf.data.Dataset.from_tensor_slices((sim.x, sim.annotations.to_dense()))
               .batch(16).filter(lambda x, y: True))
    assert unknown.cardinality() == tf.data.UNKNOWN_CARDINALITY
    lines = progress_lines(model, unknown, epochs=2)
    assert lines[-1].startswith("training: 8/8 batch (100%)") and "done, epoch 2" in lines[-1]


def test_batch_methods_take_the_targets_fit_takes(sim):
    """train_on_batch / test_on_batch with Annotations (or padded targets) failed in
    TensorFlow's tracing ('Could not generate a generic TraceType for Annotations'), and
    predict_on_batch with an unknown annotator id failed in a Gather op of the graph."""
    x, ann = sim.x[:16], sim.annotations.subset(np.arange(16))
    ids, labels = ann.to_padded()
    model, twin = crowd_model(), crowd_model()
    model.warmup_epochs = twin.warmup_epochs = 0     # evaluate the noise layer as fit leaves it
    first = model.train_on_batch(x, ann)
    assert first == pytest.approx(twin.train_on_batch(x, ann.to_dense()), rel=1e-5)
    logs = model.test_on_batch(x, (ids, labels), sample_weight=np.ones(16), return_dict=True)
    assert logs["loss"] == pytest.approx(model.evaluate(x, ann, verbose=0), rel=1e-5)
    np.testing.assert_allclose(model.predict_on_batch({"x": x, "annotator_ids": ids}),
                               model.predict({"x": x, "annotator_ids": ids}, verbose=0),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="annotator id 6 .* outside 0..5"):
        model.predict_on_batch({"x": x, "annotator_ids": ids + A})
    with pytest.raises(ValueError, match="class_weight is not supported by "
                                         "CrowdModel.train_on_batch"):
        model.train_on_batch(x, ann, class_weight={0: 2.0})


class Batches(keras.utils.PyDataset):
    def __init__(self, x, y=None, size=16):
        super().__init__()
        self.x, self.y, self.size = x, y, size

    def __len__(self):
        return -(-len(self.x) // self.size)

    def __getitem__(self, i):
        part = slice(i * self.size, (i + 1) * self.size)
        return self.x[part] if self.y is None else (self.x[part], self.y[part])


def test_a_py_dataset_x_with_separate_targets_is_the_type_error_of_a_dataset(sim):
    """A keras.utils.PyDataset as x with y=annotations was read by numpy as an array of its
    batches: 'Annotations have 64 items but x has 4 rows' (or numpy's 'inhomogeneous
    shape' when the last batch is short), after reading every batch. Keras refuses y with a
    PyDataset; the PyDataset's batches carry the targets and train."""
    model = crowd_model()
    with pytest.raises(TypeError, match="got Batches.*y=None.*PyDataset"):
        model.fit(Batches(sim.x), sim.annotations, epochs=1, verbose=0)
    with pytest.raises(TypeError, match="got Batches"):
        model.evaluate(Batches(sim.x[:60]), sim.annotations.subset(np.arange(60)), verbose=0)
    hist = model.fit(Batches(sim.x, sim.annotations.to_dense()), epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])


def test_checkpoints_and_restored_best_weights_of_a_warm_up_epoch_keep_the_noise_layer_on(
        sim, tmp_path):
    """The warm-up switch (noise_on, a weight) was still 0 when a warm-up epoch's callbacks
    ran: ModelCheckpoint saved a model whose predictions bypassed its noise layer, and
    EarlyStopping(restore_best_weights=True) with the best epoch in the warm-up left the
    trained model bypassing it."""
    model = crowd_model()
    path = str(tmp_path / "warm.keras")
    model.fit(sim.x, sim.annotations, epochs=1, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(path)])
    loaded = keras.saving.load_model(path)
    assert float(keras.ops.convert_to_numpy(loaded.noise_on)) == 1.0
    np.testing.assert_allclose(loaded.predict(sim.x, verbose=0),
                               model.predict(sim.x, verbose=0), rtol=1e-5, atol=1e-5)
    model = crowd_model()
    stop = keras.callbacks.EarlyStopping("loss", patience=1, min_delta=1e9,
                                         restore_best_weights=True)
    model.fit(sim.x, sim.annotations, epochs=4, verbose=0, callbacks=[stop])
    assert stop.best_epoch == 0 < model.warmup_epochs
    assert float(keras.ops.convert_to_numpy(model.noise_on)) == 1.0


def test_fit_on_a_data_frame_or_tensors_summarises_the_annotators(sim):
    """fit took x as a pandas DataFrame or a backend tensor (Keras does) but then skipped the
    annotator summary silently (annotator_quality_ missing), and predict_proba_items refused
    them as 'not a dataset or generator; got DataFrame'."""
    pd = pytest.importorskip("pandas")
    x, ann = sim.x[:48], sim.annotations.subset(np.arange(48))
    model = crowd_model()
    model.fit(x, ann, epochs=1, verbose=0)
    expected = model.predict_proba_items(x, ann)
    for given in (pd.DataFrame(x), keras.ops.convert_to_tensor(x)):
        np.testing.assert_allclose(model.predict_proba_items(given, ann), expected, rtol=1e-6)
        np.testing.assert_allclose(model.predict_proba_items(given, pd.DataFrame(ann.to_dense())),
                                   expected, rtol=1e-5)
    for given_x, given_y in ((pd.DataFrame(x), ann), (keras.ops.convert_to_tensor(x), ann),
                             (x, pd.DataFrame(ann.to_dense()))):
        model = crowd_model()
        model.fit(given_x, given_y, epochs=1, verbose=0)
        assert model.annotator_quality_.shape[0] == A
        np.testing.assert_allclose(model.class_priors_, model.predict_proba_items(x, ann).mean(0),
                                   rtol=1e-5)


def test_bad_validation_targets_are_named_validation_data(sim):
    """A misaligned validation set or a label out of range raised the message of bad
    training targets ('Annotations have 64 items but x has 10 rows'), so the user looked
    for the fault in fit's x and y."""
    model = crowd_model()
    with pytest.raises(CrowdDataError,
                       match="^validation_data: Annotations have 64 items but x has 10 rows"):
        model.fit(sim.x, sim.annotations, validation_data=(sim.x[:10], sim.annotations),
                  epochs=1, verbose=0)
    dense = sim.annotations.to_dense()
    dense[3, 0] = K
    with pytest.raises(CrowdDataError, match=f"^validation_data: dense targets labels: label {K} "):
        model.fit(sim.x, sim.annotations, validation_data=(sim.x, dense, np.ones(64)),
                  epochs=1, verbose=0)


def test_indexed_inputs_with_their_labels_are_the_padded_targets(sim):
    """x = {"x", "annotator_ids"} (what a dataset yields and predict takes) with y the labels
    of those slots was read as dense targets: 'dense targets must be (items, [time,]
    annotators=6) ... got shape (64, 2)' (and its annotator ids were never checked)."""
    ids, labels = sim.annotations.to_padded()
    model, twin = crowd_model(), crowd_model()
    hist = model.fit({"x": sim.x, "annotator_ids": ids}, labels, epochs=1, shuffle=False,
                     verbose=0)
    expected = twin.fit(sim.x, (ids, labels), epochs=1, shuffle=False, verbose=0)
    assert hist.history["loss"] == pytest.approx(expected.history["loss"], rel=1e-6)
    assert model.evaluate({"x": sim.x, "annotator_ids": ids}, labels, verbose=0) == \
        pytest.approx(model.evaluate(sim.x, sim.annotations, verbose=0), rel=1e-6)
    with pytest.raises(CrowdDataError, match="annotator id 6 .* outside 0..5"):
        model.fit({"x": sim.x, "annotator_ids": ids + A}, labels, epochs=1, verbose=0)


def test_one_callback_not_in_a_list_is_taken_as_keras_takes_it(sim):
    """fit(..., callbacks=EarlyStopping(...)) (Keras flattens it into its CallbackList) failed
    with 'Value after * must be an iterable, not EarlyStopping'."""
    stop = keras.callbacks.EarlyStopping("loss", patience=0, min_delta=1e9)
    hist = crowd_model().fit(sim.x, sim.annotations, epochs=3, verbose=0, callbacks=stop)
    assert len(hist.history["loss"]) == 2 and stop.stopped_epoch == 1


def test_item_passes_check_their_batch_size(sim):
    # batch_size=0 failed with range()'s "arg 3 must not be zero"; 2.5 was truncated to 2
    x, ann = sim.x[:16], sim.annotations.subset(np.arange(16))
    model = crowd_model()
    model.fit(x, ann, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"batch_size must be an integer >= 1, got 0"):
        model.predict_proba_items(x, ann, batch_size=0)
    with pytest.raises(TypeError, match=r"batch_size must be an integer >= 1 \(a whole number"):
        model.summarize_annotators(x, ann, batch_size=2.5)
    np.testing.assert_allclose(model.predict_proba_items(x, ann, batch_size=5),
                               model.predict_proba_items(x, ann), rtol=1e-6)
