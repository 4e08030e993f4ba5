"""CrowdModel: training from raw crowd labels, checked against the simulator's ground truth."""
import numpy as np
import pytest

keras = pytest.importorskip("keras")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import MajorityVote  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.layers import CrowdLayer, CrowdRegressionLayer  # noqa: E402
from crowd_keras.models import CrowdModel, LazyAdam, TruthValidation  # noqa: E402

K, A = 4, 20


@pytest.fixture(scope="module")
def sim():
    # MV label accuracy ≈ 0.72: annotators of accuracy 0.3-0.9 with asymmetric confusions
    return simulate_crowd(n_items=800, n_classes=K, n_annotators=A, annotations_per_item=3,
                          individual_noise="asymmetric", annotator_accuracy=(0.3, 0.9), seed=0)


def mlp(n_features=10, k=K, seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((n_features,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(k, activation="softmax")])


def accuracy(clf, x, y):
    return float(np.mean(np.argmax(clf.predict(x, verbose=0), -1) == y))


@pytest.fixture(scope="module")
def mv_trained_accuracy(sim):
    clf = mlp()
    clf.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    clf.fit(sim.x, MajorityVote().fit(sim.annotations).predict(), epochs=15, batch_size=64,
            verbose=0)
    return accuracy(clf, sim.x, sim.y)


@pytest.mark.parametrize("form", ["annotations", "dense"])
def test_learns_truth_and_annotators_better_than_majority_vote(sim, mv_trained_accuracy, form):
    clf = mlp()
    model = CrowdModel(clf, CrowdLayer(A, "MW"))
    model.compile(keras.optimizers.Adam(1e-2))
    y = sim.annotations if form == "annotations" else sim.annotations.to_dense()
    hist = model.fit(sim.x, y, epochs=15, batch_size=64, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    acc = accuracy(clf, sim.x, sim.y)           # the plain classifier is the truth estimate
    assert acc >= 0.88
    assert acc >= mv_trained_accuracy + 0.03
    cm = model.confusion_matrices()
    assert cm.shape == (A, K, K)
    np.testing.assert_allclose(cm.sum(-1), 1.0, rtol=1e-5)
    learned = np.einsum("akk->a", cm) / K
    assert np.corrcoef(learned, sim.annotator_accuracy())[0, 1] > 0.9


def test_tf_data_input_path_from_annotations(sim):
    """annotation_dataset: the indexed form as a tf.data pipeline (no Python generator),
    every item once per epoch, reshuffled; CrowdModel trains on it like on the arrays."""
    tf = pytest.importorskip("tensorflow")
    from crowd_keras.inputs import annotation_dataset

    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.data input path: TensorFlow backend")
    ann = sim.annotations
    ds = annotation_dataset(sim.x, ann, batch_size=128, seed=0)
    assert isinstance(ds, tf.data.Dataset)
    ids, labels = ann.to_padded()
    epochs = []
    for _ in range(2):
        rows = []
        for inputs, y in ds:
            x = inputs["x"].numpy()
            row = np.argmin(np.abs(sim.x[None] - x[:, None]).sum(-1), axis=1)   # item of each x
            np.testing.assert_array_equal(inputs["annotator_ids"].numpy(), ids[row])
            np.testing.assert_array_equal(y.numpy(), labels[row])
            rows.append(row)
        epochs.append(np.concatenate(rows))
    assert sorted(epochs[0]) == list(range(ann.n_items)) and (epochs[0] != epochs[1]).any()
    model = CrowdModel(mlp(), CrowdLayer(A, "MW"))
    model.compile(keras.optimizers.Adam(1e-2))
    history = model.fit(ds, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.parametrize("container", [dict, list])
def test_tf_data_input_path_takes_the_inputs_of_a_multi_input_classifier(sim, container):
    """A dict of arrays was counted by its keys ("x has 2 rows"); a list of arrays would be
    stacked into one tensor by tf.data. A bad batch size was a TensorFlow op error (0) or
    truncated (2.5)."""
    pytest.importorskip("tensorflow")
    from crowd_keras.inputs import annotation_dataset

    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.data input path: TensorFlow backend")
    parts = (sim.x[:, :6], sim.x[:, 6:])
    a, b = keras.Input((6,), name="a"), keras.Input((4,), name="b")
    hidden = keras.layers.Concatenate()([a, b])
    x = {"a": parts[0], "b": parts[1]} if container is dict else list(parts)
    clf = keras.Model({"a": a, "b": b} if container is dict else [a, b],
                      keras.layers.Dense(K, activation="softmax")(hidden))
    ds = annotation_dataset(x, sim.annotations, batch_size=64, shuffle=False)
    inputs, _ = next(iter(ds))
    first = inputs["x"]["a"] if container is dict else inputs["x"][0]
    np.testing.assert_array_equal(first.numpy(), parts[0][:64])
    model = CrowdModel(clf, CrowdLayer(A))
    model.compile(keras.optimizers.Adam(1e-2))
    history = model.fit(ds, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    short = {"a": parts[0][:-1], "b": parts[1][:-1]} if container is dict else \
        [p[:-1] for p in parts]
    first = "'a'" if container is dict else "0"
    with pytest.raises(CrowdDataError, match=rf"x\[{first}\] has {len(sim.x) - 1} rows"):
        annotation_dataset(short, sim.annotations)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        annotation_dataset(x, sim.annotations, batch_size=0)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        annotation_dataset(x, sim.annotations, batch_size=2.5)

def test_save_load_round_trip_keeps_training(sim, tmp_path):
    clf = mlp()
    model = CrowdModel(clf, CrowdLayer(A, "VW+B"), name="crowd")
    model.compile(keras.optimizers.Adam(1e-2))
    model.fit(sim.x, sim.annotations, epochs=2, batch_size=128, verbose=0)
    path = tmp_path / "crowd.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, CrowdModel) and loaded.noise_layer.conn_type == "VW+B"
    np.testing.assert_allclose(loaded.classifier.predict(sim.x[:50], verbose=0),
                               clf.predict(sim.x[:50], verbose=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded.confusion_matrices(), model.confusion_matrices(), rtol=1e-5)
    assert loaded.compiled
    before = loaded.evaluate(sim.x, sim.annotations, verbose=0)
    loaded.fit(sim.x, sim.annotations, epochs=2, batch_size=128, verbose=0)
    assert loaded.evaluate(sim.x, sim.annotations, verbose=0) < before


def test_bad_targets_raise_crowd_data_error(sim):
    model = CrowdModel(mlp(), CrowdLayer(A))
    model.compile()
    dense = sim.annotations.to_dense()
    with pytest.raises(CrowdDataError, match="items but x has"):
        model.fit(sim.x[:10], sim.annotations)
    with pytest.raises(CrowdDataError, match="annotators=20"):
        model.fit(sim.x, dense[:, :5])
    with pytest.raises(CrowdDataError, match=r"got shape \(800,\) \(true labels.*"
                                             r"model.classifier.evaluate"):
        model.evaluate(sim.x, sim.y, verbose=0)
    bad = dense.copy()
    bad[7, 3] = K
    with pytest.raises(CrowdDataError, match=r"label 4 at \(7, 3\)"):
        model.fit(sim.x, bad)
    ids, labels = sim.annotations.to_padded()
    ids = ids.copy()
    ids[2, 1] = A + 5
    with pytest.raises(CrowdDataError, match=r"annotator id 25 at \(2, 1\) is outside 0..19"):
        model.fit(sim.x, (ids, labels))
    other = Annotations.from_dense(np.array([[0, 1], [2, -1]]), classes=["a", "b", "c"])
    with pytest.raises(CrowdDataError, match="3 classes"):
        model.fit(sim.x[:2], other)
    half = dense.astype(float)
    half[0, 0] = 0.5
    with pytest.raises(CrowdDataError, match="not an integer"):
        model.fit(sim.x, half)


class SubclassedClassifier(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.out = keras.layers.Dense(K, activation="softmax")

    def call(self, x):
        return self.out(x)


@pytest.mark.parametrize("classifier", [lambda: keras.layers.Dense(K, activation="softmax"),
                                        SubclassedClassifier])
def test_labels_past_a_layer_or_subclassed_classifiers_classes_are_refused_before_training(
        sim, classifier):
    # such a classifier has no output_shape before its first call: the labels went
    # unchecked into training (TensorFlow: a raw graph error in the loss; JAX: a NaN loss)
    model = CrowdModel(classifier(), CrowdLayer(A))
    model.compile()
    bad = sim.annotations.to_dense()
    bad[7, 3] = K
    with pytest.raises(CrowdDataError, match=r"label 4 at \(7, 3\) is outside 0..3"):
        model.fit(sim.x, bad, epochs=1, verbose=0)
    ids, labels = sim.annotations.to_padded()
    labels = labels.copy()
    labels[2, 0] = K
    with pytest.raises(CrowdDataError, match=r"label 4 at \(2, 0\)"):
        model.fit(sim.x, (ids, labels), epochs=1, verbose=0)
    model.fit(sim.x[:64], sim.annotations.to_dense()[:64], epochs=1, verbose=0)   # trains


def test_validation_data_and_split_take_annotations(sim):
    """fit converted the validation targets, then Keras' validation pass called the overridden
    evaluate, which converted them again and read the padded labels as dense targets:
    'dense targets must be (items, [time,] annotators=20) ... got shape (60, 3)'."""
    x, ann = sim.x[:60], sim.annotations.subset(np.arange(60))
    model = CrowdModel(mlp(), CrowdLayer(A), warmup_epochs=0)   # val_loss of the final model
    model.compile()
    hist = model.fit(x, ann, validation_data=(x, ann), epochs=1, batch_size=32, verbose=0)
    np.testing.assert_allclose(hist.history["val_loss"][0], model.evaluate(x, ann, verbose=0),
                               rtol=1e-5)
    hist = model.fit(x, ann, validation_split=0.25, epochs=1, batch_size=32, verbose=0)
    assert np.isfinite(hist.history["val_loss"][0])


def test_a_dataset_or_generator_x_with_separate_targets_is_a_type_error(sim):
    """x given as a dataset or generator with y=annotations failed in row counting with
    'IndexError: tuple index out of range'."""
    tf = pytest.importorskip("tensorflow")
    model = CrowdModel(mlp(), CrowdLayer(A))
    model.compile()
    gen = (sim.x[:8] for _ in range(2))
    for x in (tf.data.Dataset.from_tensor_slices(sim.x).batch(8), gen):
        with pytest.raises(TypeError, match=f"got {type(x).__name__}.*y=None"):
            model.fit(x, sim.annotations, epochs=1, verbose=0)


def test_class_weight_is_refused_and_truth_validation_checks_its_labels(sim):
    """class_weight ran and weighted each item by the argmax of its target row, i.e. by the
    slot or annotator position of its largest label code, not by a class; TruthValidation
    with fewer labels than rows scored only the first rows (a wrong accuracy)."""
    model = CrowdModel(mlp(), CrowdLayer(A))
    model.compile()
    with pytest.raises(ValueError, match="class_weight is not supported.*sample_weight"):
        model.fit(sim.x[:40], sim.annotations.subset(np.arange(40)),
                  class_weight={0: 1.0, 1: 2.0}, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"\(40 rows\), got shape \(30,\)"):
        TruthValidation(sim.x[:40], sim.y[:30])


def test_a_noise_layer_without_annotators_is_refused_at_construction():
    """The global MixtureOfGroups (num_annotators=None) was accepted and failed in fit with
    'dense targets must be (items, [time,] annotators=None)' or deep inside its call."""
    from crowd_keras.layers import MixtureOfGroups

    with pytest.raises(TypeError, match="MixtureOfGroups has num_annotators=None"):
        CrowdModel(mlp(), MixtureOfGroups(2, K))
    with pytest.raises(TypeError, match="must expose num_annotators"):
        CrowdModel(mlp(), keras.layers.Dense(K))
    model = CrowdModel(mlp(), MixtureOfGroups(2, K, num_annotators=A))
    assert model.noise_layer.num_annotators == A



@pytest.mark.parametrize("kwargs,error", [
    ({"from_logits": "False"}, r"`from_logits`, expected True or False"),
    ({"warmup_epochs": None}, r"`warmup_epochs`, expected an integer of at least 0"),
    ({"warmup_epochs": float("nan")}, r"`warmup_epochs`, expected an integer of at least 0"),
    ({"warmup_epochs": True}, r"`warmup_epochs`, expected an integer of at least 0")])
def test_constructor_arguments_are_checked_as_keras_checks_its_layers(kwargs, error):
    """bool("False") made a probability classifier be read as logits, silently; None or NaN
    warm-up epochs failed in int() without naming the argument."""
    with pytest.raises(ValueError, match=error):
        CrowdModel(mlp(), CrowdLayer(A), **kwargs)
    model = CrowdModel(mlp(), CrowdLayer(A), from_logits=np.bool_(False),
                       warmup_epochs=np.int64(2))
    assert model.from_logits is False and model.warmup_epochs == 2


def test_from_logits_is_refused_for_a_regression_noise_layer():
    # the softmax of the (batch, 1) output is 1: the layer saw a constant, the classifier got
    # no gradient and every prediction was the same, silently
    clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="from_logits=True applies a softmax.*"
                                         "CrowdRegressionLayer"):
        CrowdModel(clf, CrowdRegressionLayer(A), from_logits=True)
    assert not CrowdModel(clf, CrowdRegressionLayer(A)).from_logits

def test_a_classifier_that_cannot_be_called_is_refused_at_construction():
    # a string was kept and failed at the first call with "'str' object is not callable"
    with pytest.raises(TypeError, match="classifier must be a Keras model or layer.*got str"):
        CrowdModel("mlp", CrowdLayer(A))

def test_truth_validation_restores_best_epoch(sim):
    clf = mlp()
    model = CrowdModel(clf, CrowdLayer(A))
    model.compile(keras.optimizers.Adam(3e-2))
    x_val, y_val = sim.x[:200], sim.y[:200]
    check = TruthValidation(x_val, y_val)
    hist = model.fit(sim.x[200:], sim.annotations.subset(np.arange(200, 800)), epochs=6,
                     batch_size=64, verbose=0, callbacks=[check])
    assert len(check.history_) == 6 and hist.history["val_truth_accuracy"] == check.history_
    assert check.best_ == max(check.history_)
    assert accuracy(clf, x_val, y_val) == pytest.approx(check.best_)


def test_sequence_labelling_recovers_a_swapping_annotator():
    rng = np.random.default_rng(0)
    n, t, f, k, a = 300, 6, 6, 3, 6
    means = rng.normal(scale=2.0, size=(k, f))
    y = rng.integers(0, k, size=(n, t))
    x = (means[y] + rng.normal(size=(n, t, f))).astype("float32")
    ids = np.stack([rng.choice(a, 2, replace=False) for _ in range(n)]).astype("int32")
    swap = np.array([1, 0, 2])                      # annotators 4 and 5 swap classes 0 and 1
    noisy = np.where(rng.random((n, t)) < 0.8, y, rng.integers(0, k, (n, t)))
    labels = np.stack([np.where(ids[:, j, None] >= 4, swap[noisy], noisy) for j in range(2)], -1)
    labels[:50, 4:, :] = -1                          # padded tokens of short sentences
    keras.utils.set_random_seed(0)
    clf = keras.Sequential([keras.Input((t, f)), keras.layers.Dense(16, activation="relu"),
                            keras.layers.Dense(k, activation="softmax")])
    model = CrowdModel(clf, CrowdLayer(a, "MW"))
    model.compile(keras.optimizers.Adam(2e-2))
    model.fit(x, (ids, labels), epochs=12, batch_size=32, verbose=0)
    pred = np.argmax(clf.predict(x, verbose=0), -1)
    assert np.mean(pred == y) >= 0.85
    cm = model.confusion_matrices()
    assert cm[4, 0].argmax() == 1 and cm[5, 1].argmax() == 0
    assert cm[0, 0].argmax() == 0 and cm[1, 1].argmax() == 1


def test_regression_learns_annotator_biases():
    rng = np.random.default_rng(1)
    n, f, a = 600, 4, 10
    x = rng.normal(size=(n, f)).astype("float32")
    truth = x @ rng.normal(size=f)
    bias = rng.normal(size=a)
    bias -= bias.mean()                   # a shared offset is not identifiable from labels
    answers = np.full((n, a), np.nan, "float32")
    for i in range(n):
        who = rng.choice(a, 3, replace=False)
        answers[i, who] = truth[i] + bias[who] + rng.normal(scale=0.2, size=3)
    keras.utils.set_random_seed(0)
    reg = keras.Sequential([keras.Input((f,)), keras.layers.Dense(1)])
    model = CrowdModel(reg, CrowdRegressionLayer(a, "B"))
    model.compile(keras.optimizers.Adam(5e-2))
    model.fit(x, answers, epochs=25, batch_size=32, verbose=0)
    learned = keras.ops.convert_to_numpy(model.noise_layer.bias)
    assert np.corrcoef(learned, bias)[0, 1] > 0.95
    est = reg.predict(x, verbose=0)[:, 0]
    naive = np.nanmean(answers, axis=1)
    rmse = lambda e: float(np.sqrt(np.mean((e - truth) ** 2)))  # noqa: E731
    assert rmse(est) < 0.6 * rmse(naive)


@keras.saving.register_keras_serializable(package="crowd_keras_tests")
class GatedNoise(keras.layers.Layer):
    """A feature-gated noise layer (the shape of CoNAL's): mixes a crowd layer and identity."""

    uses_features = True

    def __init__(self, num_annotators, **kwargs):
        super().__init__(**kwargs)
        self.num_annotators = num_annotators
        self.crowd = CrowdLayer(num_annotators)
        self.gate = keras.layers.Dense(1, activation="sigmoid")
        self.seen = []

    def call(self, inputs):
        probs, ids, x = inputs
        self.seen.append(tuple(ids.shape))
        g = keras.ops.expand_dims(self.gate(x), -1)                   # (batch, 1, 1)
        shared = keras.ops.expand_dims(keras.ops.log(probs + 1e-7), 1)  # (batch, 1, K)
        return g * self.crowd([probs, ids]) + (1 - g) * shared


def test_feature_gated_noise_layer_plugs_in(sim):
    layer = GatedNoise(A)
    model = CrowdModel(mlp(), layer)
    model.compile(keras.optimizers.Adam(1e-2))
    h1 = model.fit(sim.x, sim.annotations, epochs=3, batch_size=128, verbose=0)
    assert h1.history["loss"][-1] < h1.history["loss"][0]
    k = sim.annotations.to_padded()[0].shape[1]
    assert (None, k) in layer.seen or any(s[1] == k for s in layer.seen)
    model.fit(sim.x, sim.annotations.to_dense(), epochs=1, batch_size=128, verbose=0)
    assert any(s[-1] == A for s in layer.seen)   # dense data: every annotator listed
    out = model(sim.x[:5])
    assert tuple(out.shape) == (5, A, K)


def test_a_gated_noise_layer_names_a_classifier_of_several_inputs():
    # the gate got the dict of inputs and fit failed in Keras' shape inference with
    # "invalid literal for int() with base 10: 'b'"
    from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation

    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    clf = keras.Model({"a": a, "b": b}, keras.layers.Dense(K, activation="softmax")(
        keras.layers.Concatenate()([a, b])))
    model = CrowdModel(clf, CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A, 3)))
    model.compile()
    x = {"a": np.zeros((8, 3), "float32"), "b": np.zeros((8, 2), "float32")}
    with pytest.raises(ValueError, match="with a gate takes the classifier's input as one "
                                         "tensor.*got a dict of inputs"):
        model.fit(x, np.zeros((8, A), "int32"), verbose=0)

def test_lazy_adam_updates_only_the_annotators_in_the_batch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 5)).astype("float32")
    ids = np.array([[0, 1], [1, -1], [2, 1]] * 5 + [[0, 2]], "int32")  # repeated annotators
    labels = np.where(ids >= 0, rng.integers(0, 3, ids.shape), -1).astype("int32")
    dense = -np.ones((16, 6), "int32")
    for i, j in zip(*np.nonzero(ids >= 0)):
        dense[i, ids[i, j]] = labels[i, j]

    def weights_after(optimizer, steps, indexed):
        keras.utils.set_random_seed(0)
        clf = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="softmax")])
        model = CrowdModel(clf, CrowdLayer(6))
        model.compile(optimizer)
        for _ in range(steps):
            model.train_on_batch({"x": x, "annotator_ids": ids} if indexed else x,
                                 labels if indexed else dense)
        return ([keras.ops.convert_to_numpy(w) for w in model.weights],
                keras.ops.convert_to_numpy(model.noise_layer.kernel))

    # annotators 0-2 are in every batch: LazyAdam on the indexed form is Adam on the dense one
    ref, _ = weights_after(keras.optimizers.Adam(0.1), 3, indexed=False)
    lazy, kernel = weights_after(LazyAdam(0.1), 3, indexed=True)
    for a, b in zip(ref, lazy):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert np.abs(kernel[:3] - np.eye(3)).max() > 0.1          # they moved
    np.testing.assert_array_equal(kernel[3:], np.broadcast_to(np.eye(3), (3, 3, 3)))  # 3-5 not
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(LazyAdam(0.1)))
    assert isinstance(restored, LazyAdam)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="LazyAdam's sparse "
                    "update is TensorFlow's (elsewhere it is Adam)")
def test_lazy_adam_sums_repeated_rows_alike_with_and_without_xla():
    # LIA compiles its steps with XLA from 500k annotations: the sparse update (tf.unique
    # of the rows, a segment sum) must compile there and give the graph's numbers.
    items = 300   # 600 slots on 6 annotators: every row repeated many times
    rng = np.random.default_rng(1)
    x = rng.normal(size=(items, 5)).astype("float32")
    ids = rng.integers(0, 6, (items, 2)).astype("int32")
    ids[::3, 1] = -1
    labels = np.where(ids >= 0, rng.integers(0, 3, ids.shape), -1).astype("int32")

    def kernel_after(jit_compile):
        keras.utils.set_random_seed(0)
        clf = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="softmax")])
        model = CrowdModel(clf, CrowdLayer(8))
        model.compile(LazyAdam(0.1), jit_compile=jit_compile)
        for _ in range(3):
            model.train_on_batch({"x": x, "annotator_ids": ids}, labels)
        return keras.ops.convert_to_numpy(model.noise_layer.kernel)

    graph, xla = kernel_after(False), kernel_after(True)
    np.testing.assert_allclose(graph, xla, rtol=1e-4, atol=1e-5)
    assert np.abs(graph[:6] - np.eye(3)).max() > 0.1            # the annotators in use moved
    np.testing.assert_array_equal(graph[6:], np.broadcast_to(np.eye(3), (2, 3, 3)))


@pytest.mark.parametrize("noise", ["CrowdLayer MW", "CrowdLayer VW+B", "CoNAL with gate",
                                   "MixtureOfGroups", "CrowdRegressionLayer S+B"])
def test_keras_adam_trains_the_indexed_form_as_the_dense_one(noise):
    """Keras' own Adam (``compile()``'s default) takes the same steps from the padded
    annotator ids as from the dense matrix of the same labels. On TensorFlow the gathered
    tables' gradients are sparse, and Keras' Adam squares each repeated row of a sparse
    gradient separately (Σ g² for (Σ g)²): an annotator in several items of a batch got a
    smaller step than from the dense matrix (kernel rows 0.17 apart after 4 steps)."""
    from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation, MixtureOfGroups

    n, a = 9, 4
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 5)).astype("float32")
    ids = np.array([[0, 1, -1], [0, 2, 3], [1, 0, -1], [3, -1, -1], [-1, -1, -1], [2, 0, 1],
                    [0, 3, -1], [1, 2, -1], [0, -1, -1]], dtype="int32")
    regression = noise.startswith("CrowdRegression")
    values = rng.normal(size=ids.shape) if regression else rng.integers(0, K, ids.shape)
    labels = np.where(ids >= 0, values, np.nan if regression else -1)
    labels = labels.astype("float32" if regression else "int32")
    dense = np.full((n, a), np.nan if regression else -1, labels.dtype)
    for i, j in zip(*np.nonzero(ids >= 0)):
        dense[i, ids[i, j]] = labels[i, j]
    layers = {"CrowdLayer MW": lambda: CrowdLayer(a, "MW"),
              "CrowdLayer VW+B": lambda: CrowdLayer(a, "VW+B"),
              "CoNAL with gate": lambda: CommonNoiseAdaptation(
                  a, K, gate=AnnotatorGate(a, embedding_dim=3)),
              "MixtureOfGroups": lambda: MixtureOfGroups(2, K, num_annotators=a),
              "CrowdRegressionLayer S+B": lambda: CrowdRegressionLayer(a, "S+B")}

    def weights_after(y, indexed, optimizer, steps):
        keras.utils.set_random_seed(0)
        clf = keras.Sequential([keras.Input((5,)), keras.layers.Dense(
            1 if regression else K, activation=None if regression else "softmax")])
        model = CrowdModel(clf, layers[noise]())
        model.compile(optimizer)
        model.build({"x": (None, 5), "annotator_ids": (None, 3)} if indexed else (None, 5))
        start = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
        for _ in range(steps):
            model.train_on_batch({"x": x, "annotator_ids": ids} if indexed else x, y)
        return start, [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]

    _, indexed = weights_after(labels, True, keras.optimizers.Adam(0.1), 4)
    _, from_dense = weights_after(dense, False, keras.optimizers.Adam(0.1), 4)
    for got, want in zip(indexed, from_dense):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # Adam's first step on the gradient (an SGD step of rate 1, linear in the gradient):
    # CoNAL's dense form gathers every annotator too, so only this tells it
    start, after_sgd = weights_after(labels, True, keras.optimizers.SGD(1.0), 1)
    _, after_adam = weights_after(labels, True, keras.optimizers.Adam(0.1), 1)
    for w0, w_sgd, w_adam in zip(start, after_sgd, after_adam):
        g = w0 - w_sgd
        step = 0.1 * np.sqrt(1e-3) * g / (np.sqrt(1e-3) * np.abs(g) + 1e-7)
        np.testing.assert_allclose(w0 - w_adam, step, rtol=1e-3, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TensorFlow's sparse gradients: the other backends' are dense")
@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_gathered_tables_sparse_gradient_sums_each_rows_repeats_into_one_slice(jit_compile):
    """Each row's gradient summed into the slice of its first entry (0 at its repeats), so
    that Keras' optimizers, which square a sparse gradient slice by slice, see the row's
    sum; also for an empty batch (a replica's share of a short last batch)."""
    import tensorflow as tf

    from crowd_keras._keras_utils import gather_rows

    table = keras.Variable(np.zeros((4, 2, 3), "float32"))

    @tf.function(jit_compile=jit_compile)
    def gradient(ids, weights):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(gather_rows(table, ids) * weights)
        grad = tape.gradient(loss, table.value)
        return grad.indices, grad.values

    ids = np.array([[2, 0, 2], [2, 1, 2]], "int32")
    weights = np.arange(1, 7, dtype="float32").reshape(2, 3, 1, 1) * np.ones((1, 1, 2, 3))
    indices, values = (v.numpy() for v in gradient(tf.constant(ids), tf.constant(weights,
                                                                                 "float32")))
    np.testing.assert_array_equal(indices, ids.ravel())
    # row 2 at entries 0, 2, 3 and 5 (weights 1 + 3 + 4 + 6), rows 0 and 1 once
    np.testing.assert_array_equal(values[:, 0, 0], [14, 2, 0, 0, 5, 0])
    indices, values = gradient(tf.zeros((0, 3), "int32"), tf.zeros((0, 3, 2, 3)))
    assert indices.shape == (0,) and values.shape == (0, 2, 3)


def test_warmup_bypasses_the_noise_layer_then_switches_it_on(tmp_path):
    sim = simulate_crowd(n_items=300, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=4)

    def fresh(warmup):
        keras.utils.set_random_seed(0)
        clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(3, activation="softmax")])
        model = CrowdModel(clf, CrowdLayer(8, "MW"), warmup_epochs=warmup)
        model.compile(keras.optimizers.Adam(0.05))
        return model, clf

    def kernel(model):
        return keras.ops.convert_to_numpy(model.noise_layer.kernel)

    identity = np.broadcast_to(np.eye(3), (8, 3, 3))
    model, clf = fresh(2)
    before = clf.get_weights()[0].copy()
    model.fit(sim.x, sim.annotations, epochs=1, batch_size=32, verbose=0)
    np.testing.assert_array_equal(kernel(model), identity)        # bypassed: no gradient
    assert np.abs(clf.get_weights()[0] - before).max() > 1e-3      # the classifier learned
    # Warm-up counts epochs over fit() calls, survives a save/load, then the layer trains.
    path = tmp_path / "warm.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.warmup_epochs == 2
    assert float(keras.ops.convert_to_numpy(loaded.epochs_trained)) == 1.0
    model.fit(sim.x, sim.annotations, epochs=1, batch_size=32, verbose=0)
    np.testing.assert_array_equal(kernel(model), identity)
    model.fit(sim.x, sim.annotations, epochs=1, batch_size=32, verbose=0)
    assert np.abs(kernel(model) - identity).max() > 1e-3
    # Without warm-up the layer moves in the first epoch.
    model, _ = fresh(0)
    model.fit(sim.x, sim.annotations, epochs=1, batch_size=32, verbose=0)
    assert np.abs(kernel(model) - identity).max() > 1e-3
    with pytest.raises(ValueError, match="warmup_epochs"):
        CrowdModel(clf, CrowdLayer(8), warmup_epochs=-1)


def test_an_interrupted_warm_up_does_not_leave_the_noise_layer_bypassed(tmp_path):
    """Ctrl-C (or a callback's error) during a warm-up epoch ended fit without on_train_end:
    noise_on stayed 0, so predict, evaluate and a saved model bypassed the noise layer."""
    class Interrupt(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            raise KeyboardInterrupt

    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 10)).astype("float32")
    y = rng.integers(-1, K, size=(32, A))
    model = CrowdModel(mlp(), CrowdLayer(A), warmup_epochs=2)
    model.compile()
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, epochs=3, verbose=0, callbacks=[Interrupt()])
    assert float(keras.ops.convert_to_numpy(model.noise_on)) == 1.0
    probs = keras.ops.convert_to_numpy(model.classifier(x[:4]))
    layer_out = keras.ops.convert_to_numpy(model.noise_layer(probs))
    np.testing.assert_allclose(model.predict(x[:4], verbose=0), layer_out, rtol=1e-5, atol=1e-6)
    # the interrupted epoch is not counted: the next fit still warms up
    assert float(keras.ops.convert_to_numpy(model.epochs_trained)) == 0.0


def test_a_checkpoint_saved_inside_a_warm_up_epoch_loads_with_the_noise_layer_on(tmp_path):
    """ModelCheckpoint(save_freq=2) saves every two batches: inside the warm-up epoch the
    file held noise_on = 0, and the loaded model's predict and evaluate skipped the noise
    layer. Loading switches it on; a fit resumed from the file still warms up."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 10)).astype("float32")
    y = rng.integers(-1, K, size=(64, A))
    model = CrowdModel(mlp(), CrowdLayer(A, init_scale=3.0), warmup_epochs=1)
    model.compile(keras.optimizers.Adam(1e-2))
    path = tmp_path / "inside.keras"
    model.fit(x, y, epochs=1, batch_size=16, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(path, save_freq=2)])
    loaded = keras.saving.load_model(path)
    assert float(keras.ops.convert_to_numpy(loaded.noise_on)) == 1.0
    probs = keras.ops.convert_to_numpy(loaded.classifier(x[:4]))
    layer_out = keras.ops.convert_to_numpy(loaded.noise_layer(probs))
    np.testing.assert_allclose(loaded.predict(x[:4], verbose=0), layer_out, rtol=1e-5,
                               atol=1e-6)
    assert float(keras.ops.convert_to_numpy(loaded.epochs_trained)) == 0.0   # mid-epoch

@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TensorFlow's resource variables: other backends gather tensors")
@pytest.mark.parametrize("noise", ["CrowdLayer MW", "CrowdLayer VW+B", "CoNAL with gate",
                                   "MixtureOfGroups", "CrowdRegressionLayer S+B"])
@pytest.mark.parametrize("precision", ["float32", "mixed_float16"])
def test_a_step_reads_only_the_batchs_rows_of_the_annotator_tables(noise, precision):
    """The per-annotator tables are gathered through their resource (the batch's rows), never
    read whole: a whole read alive at the step's sparse update makes TensorFlow copy the
    table each step, an O(annotators) cost (see ``gather_rows``). Under mixed precision too:
    Keras' autocast would cast the whole table to float16 at every step (the tables are not
    autocast; their rows are cast once gathered)."""
    keras.mixed_precision.set_global_policy(precision)
    try:
        _check_the_step_reads_only_the_batchs_rows(noise)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _check_the_step_reads_only_the_batchs_rows(noise):
    import tensorflow as tf

    from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation, MixtureOfGroups

    n_annotators = 11   # a first axis no other weight has
    layer = {"CrowdLayer MW": lambda: CrowdLayer(n_annotators, "MW"),
             "CrowdLayer VW+B": lambda: CrowdLayer(n_annotators, "VW+B"),
             "CoNAL with gate": lambda: CommonNoiseAdaptation(
                 n_annotators, K, gate=AnnotatorGate(n_annotators, embedding_dim=4)),
             "MixtureOfGroups": lambda: MixtureOfGroups(3, K, num_annotators=n_annotators),
             "CrowdRegressionLayer S+B": lambda: CrowdRegressionLayer(n_annotators, "S+B"),
             }[noise]()
    regression = isinstance(layer, CrowdRegressionLayer)
    clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(
        1 if regression else K, activation=None if regression else "softmax")])
    model = CrowdModel(clf, layer)
    x = np.zeros((4, 10), "float32")
    ids = np.array([[0, 3, -1], [4, 10, -1], [2, 1, 0], [5, -1, -1]], dtype="int32")
    model({"x": x, "annotator_ids": ids})   # build
    tables = [w for w in model.noise_layer.weights if w.shape[0] == n_annotators]
    assert tables

    step = tf.function(lambda x, ids: model({"x": x, "annotator_ids": ids}, training=True))
    graph = step.get_concrete_function(tf.TensorSpec((None, 10)),
                                       tf.TensorSpec((None, 3), tf.int32)).graph
    inside = {id(outer): inner for outer, inner in graph.captures}
    for table in tables:
        handle = inside[id(table.value.handle)]
        reads = sorted({op.type for op in handle.consumers()})
        assert reads == ["ResourceGather"], (table.path, reads)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TensorFlow's CPU kernels: the other backends compile their own")
@pytest.mark.parametrize("noise", ["CrowdLayer MW", "CoNAL", "MixtureOfGroups"])
@pytest.mark.parametrize("seq", [False, True])
def test_a_step_multiplies_the_annotator_slots_without_a_batched_matmul(noise, seq):
    """The per-slot vector × matrix products of the indexed layers (and their gradients) are
    broadcast products and sums: TensorFlow's batched matmul of such small matrices costs
    more per call than the arithmetic (see ``batched_vector_matrix``)."""
    from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation, MixtureOfGroups

    n_annotators = 11
    layer = {"CrowdLayer MW": lambda: CrowdLayer(n_annotators, "MW"),
             # the gate reads a representation per item: on sequences a fixed ω
             "CoNAL": lambda: CommonNoiseAdaptation(
                 n_annotators, K, **({"omega": 0.5} if seq else
                                     {"gate": AnnotatorGate(n_annotators, embedding_dim=4)})),
             "MixtureOfGroups": lambda: MixtureOfGroups(3, K, num_annotators=n_annotators),
             }[noise]()
    shape = (6, 10) if seq else (10,)
    clf = keras.Sequential([keras.Input(shape), keras.layers.Dense(K, activation="softmax")])
    model = CrowdModel(clf, layer)
    x = np.zeros((4,) + shape, "float32")
    ids = np.array([[0, 3, -1], [4, 10, -1], [2, 1, 0], [5, -1, -1]], dtype="int32")
    model({"x": x, "annotator_ids": ids})   # build
    graph = _training_step_graph(model, shape)
    types = {op.type for op in graph.get_operations()}
    assert "ResourceGather" in types   # the indexed form was traced
    assert not {t for t in types if t.startswith("BatchMatMul")}, sorted(types)


def _training_step_graph(model, x_shape):
    """The TensorFlow graph of a forward pass of ``model`` on ``{"x", "annotator_ids" (3
    slots)}`` and the gradient of a loss on its output."""
    import tensorflow as tf

    def forward_and_gradient(x, ids):
        with tf.GradientTape() as tape:
            out = model({"x": x, "annotator_ids": ids}, training=True)
            loss = tf.reduce_sum(out * out)
        return out, tape.gradient(loss, model.trainable_variables)

    return tf.function(forward_and_gradient).get_concrete_function(
        tf.TensorSpec((None,) + tuple(x_shape)), tf.TensorSpec((None, 3), tf.int32)).graph


def _noise_layer(noise, n_annotators):
    from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation, MixtureOfGroups

    return {"CrowdLayer MW": lambda: CrowdLayer(n_annotators, "MW"),
            "CoNAL with gate": lambda: CommonNoiseAdaptation(
                n_annotators, K, gate=AnnotatorGate(n_annotators, embedding_dim=4)),
            "MixtureOfGroups": lambda: MixtureOfGroups(3, K, num_annotators=n_annotators),
            }[noise]()


@pytest.mark.parametrize("noise", ["CrowdLayer MW", "CoNAL with gate", "MixtureOfGroups"])
def test_outputs_are_the_noise_layer_on_the_classifiers_softmax(noise):
    """On and off warm-up, CrowdModel's output is the noise layer on ``softmax(logits)`` and
    the identity ``log softmax(logits)``, computed here apart from the model (the model takes
    them from the logits; see ``softmax_logits``)."""
    ops = keras.ops
    keras.utils.set_random_seed(3)
    clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(K, activation="softmax")])
    model = CrowdModel(clf, _noise_layer(noise, 11))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 10)).astype("float32") * 3
    ids = np.array([[0, 3, -1], [4, 10, -1], [2, 1, 0], [5, -1, -1]], "int32")
    inputs = {"x": x, "annotator_ids": ids}
    model(inputs)                                            # build
    kernel, bias = (ops.convert_to_numpy(w) for w in clf.layers[-1].weights)
    logits = x @ kernel + bias
    probs = ops.softmax(ops.convert_to_tensor(logits))
    layer_in = [probs, ids, x] if model.uses_features else [probs, ids]
    noisy = ops.convert_to_numpy(model.noise_layer(layer_in))
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    for on, want in ((1.0, noisy), (0.0, np.broadcast_to(log_p[:, None, :], noisy.shape))):
        model.noise_on.assign(on)
        np.testing.assert_allclose(ops.convert_to_numpy(model(inputs)), want, atol=2e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TensorFlow's CPU kernels: oneDNN's Softmax op")
@pytest.mark.parametrize("noise", ["CrowdLayer MW", "CoNAL with gate", "MixtureOfGroups"])
def test_a_step_has_no_softmax_op(noise):
    """A training step computes its softmaxes as ``exp(log_softmax)``, the classifier's from
    its logits: TensorFlow's CPU ``Softmax`` (oneDNN) costs more per call than the
    arithmetic of such small tensors (see ``crowd_keras._keras_utils.softmax``)."""
    clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(K, activation="softmax")])
    model = CrowdModel(clf, _noise_layer(noise, 11))
    x = np.zeros((4, 10), "float32")
    ids = np.array([[0, 3, -1], [4, 10, -1], [2, 1, 0], [5, -1, -1]], "int32")
    model({"x": x, "annotator_ids": ids})   # build
    ops_by_type = {}
    graph = _training_step_graph(model, (10,))
    for op in graph.get_operations():
        ops_by_type.setdefault(op.type, []).append(op)
    assert "LogSoftmax" in ops_by_type
    # the classifier's own Softmax is traced, but nothing reads it (the run prunes it)
    used = [op.name for op in ops_by_type.get("Softmax", []) if op.outputs[0].consumers()]
    assert not used, used


@pytest.mark.parametrize("warmup", [0, 1])
def test_a_sequence_crowd_model_keeps_the_time_step_mask(warmup):
    """Padded time steps (``Embedding(mask_zero=True)``) carry no loss, warm-up or not: labels
    put on them change neither the loss nor the trained weights."""
    steps, annotators, k = 7, 6, 3
    words = np.array([[3, 4, 5, 0, 0, 0, 0], [6, 7, 8, 9, 1, 2, 0]], "int32")
    ids = np.array([[0, 1, -1], [2, 3, 4]], "int32")
    rng = np.random.default_rng(0)
    y = rng.integers(0, k, (2, steps, 3)).astype("int32")
    y[np.broadcast_to(ids[:, None, :] < 0, y.shape)] = -1
    pad = np.broadcast_to((words == 0)[..., None], y.shape) & (y >= 0)
    y_other = np.where(pad, (y + 1) % k, y)          # other real labels on the padding

    def trained(labels):
        keras.utils.set_random_seed(0)
        clf = keras.Sequential([keras.Input((steps,), dtype="int32"),
                                keras.layers.Embedding(20, 8, mask_zero=True),
                                keras.layers.LSTM(4, return_sequences=True),
                                keras.layers.Dense(k, activation="softmax")])
        model = CrowdModel(clf, CrowdLayer(annotators), warmup_epochs=warmup)
        model.compile(keras.optimizers.Adam(0.05))
        out = model({"x": words, "annotator_ids": ids})
        mask = keras.ops.convert_to_numpy(out._keras_mask)
        np.testing.assert_array_equal(mask, words > 0)
        loss = model.evaluate(words, (ids, labels), verbose=0)
        model.fit(words, (ids, labels), epochs=2, batch_size=2, verbose=0, shuffle=False)
        return loss, [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]

    (loss, weights), (loss_other, weights_other) = trained(y), trained(y_other)
    assert np.isclose(loss, loss_other)
    for a, b in zip(weights, weights_other):
        np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_lazy_adam_on_dense_weights_is_keras_adam(amsgrad):
    """LazyAdam's dense update (on TensorFlow its own, with the step size made once per
    step) gives Keras Adam's weights."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5)).astype("float32")
    y = rng.integers(0, 3, 64)

    def weights_after(optimizer):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="relu"),
                                  keras.layers.Dense(3)])
        model.compile(optimizer, loss=keras.losses.SparseCategoricalCrossentropy(True))
        model.fit(x, y, epochs=5, batch_size=8, verbose=0, shuffle=False)
        return [keras.ops.convert_to_numpy(w) for w in model.weights]

    ref = weights_after(keras.optimizers.Adam(0.01, amsgrad=amsgrad))
    got = weights_after(LazyAdam(0.01, amsgrad=amsgrad))
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    start = weights_after(keras.optimizers.SGD(0.0))
    assert max(np.abs(a - b).max() for a, b in zip(ref, start)) > 0.01   # they moved


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="the TensorFlow update's ops")
def test_lazy_adam_makes_the_steps_scalars_once_for_all_weights():
    """Keras' Adam makes β₁ᵗ and β₂ᵗ (two powers, casts, reads of the step counter) for each
    weight; LazyAdam once per step: two powers however many weights, dense or sparse."""
    import tensorflow as tf

    weights = [keras.Variable(np.ones((3, 2), "float32")) for _ in range(4)]
    opt = LazyAdam(0.1)
    opt.build(weights)
    grads = [tf.ones((3, 2)) for _ in range(3)]
    grads.append(tf.IndexedSlices(tf.ones((2, 2)), tf.constant([0, 2])))   # a sparse one

    graph = tf.function(lambda: opt.apply(grads, weights)).get_concrete_function().graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("Pow") == 2, sorted(types)
    # the sparse weight's rows: read, stepped and written back with its moments' (three
    # row copies; no ScatterSub, whose CPU kernel costs more per row)
    assert types.count("ResourceScatterUpdate") == 3 and "ResourceScatterSub" not in types
    assert types.count("AssignSubVariableOp") == 3       # the dense ones


def test_annotation_dataset_checks_the_rows_of_every_input():
    # only the first input of a dict was checked: a second of 25 rows for 10 items was
    # gathered silently, misaligned and cut
    from crowd_keras.inputs import annotation_dataset
    rng = np.random.default_rng(0)
    y = rng.integers(-1, K, size=(10, A))
    ids = np.where(y >= 0, np.arange(A)[None, :], -1)
    good = {"a": np.zeros((10, 3), "float32"), "b": np.zeros((10, 2), "float32")}
    annotation_dataset(good, (ids, y), num_annotators=A, num_classes=K, batch_size=4)
    for x in ({"a": np.zeros((10, 3), "float32"), "b": np.zeros((25, 2), "float32")},
              {"b": np.zeros((25, 2), "float32"), "a": np.zeros((10, 3), "float32")}):
        with pytest.raises(CrowdDataError, match=r"x\['b'\] has 25 rows, annotator_ids 10 and "
                                                 r"labels 10"):
            annotation_dataset(x, (ids, y), num_annotators=A, num_classes=K, batch_size=4)
