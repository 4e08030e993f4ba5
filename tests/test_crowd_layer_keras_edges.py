"""The crowd layer, its losses, metric, regularizer and callback as a Keras user adding a crowd
layer to an existing model meets them: mixed precision, float annotator ids, a fresh process
loading a compiled model, scalar and misshapen sample weights, bad arguments. The checks that
differ by backend also run on JAX and torch, each in a fresh process."""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import require_module, run_parts, subprocess_env

keras = pytest.importorskip("keras")

from crowd_keras.callbacks import TruthValidation  # noqa: E402
from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.lia.losses import ExpectedCompleteNLL, MarginalNLL  # noqa: E402
from crowd_keras.losses import (LabelCountCrossEntropy, MaskedMultiCrossEntropy,  # noqa: E402
                                MaskedMultiMSE)
from crowd_keras.metrics import MaskedMultiAccuracy  # noqa: E402
from crowd_keras.regularizers import CauchyShrinkage  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
A, K, D = 4, 3, 5


def _run(script: str, *args, **env) -> str:
    proc = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=ROOT,
                          env=subprocess_env(**env), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    return proc.stdout


# ----------------------------------------------------------------------------- per backend
MIXED = textwrap.dedent('''
    import numpy as np
    import keras
    from keras import ops
    from crowd_keras._keras_utils import with_keras_mask
    from crowd_keras.layers import CrowdLayer, CrowdRegressionLayer, DifficultyCompetence
    from crowd_keras.lia.layers import InstanceEmbedding
    from crowd_keras.losses import MaskedMultiMSE

    backend = keras.backend.backend()
    # 1. float annotator ids (keras.Input's default dtype) under a mixed policy: Keras cast
    # them to bfloat16 with the probabilities, 257 -> 256 and 599 -> 600 (JAX read other
    # annotators' weights silently; TensorFlow and torch gathered past the table)
    n = 600
    ids = np.array([[257, 301], [513, 599]])
    marks = (np.arange(n) % 7).astype("float32")       # annotator r's mark: r mod 7
    for layer, first in ((CrowdLayer(n, "VB", dtype="mixed_bfloat16"), np.zeros((2, 3))),
                         (CrowdRegressionLayer(n, "B", dtype="mixed_bfloat16"),
                          np.zeros((2, 1)))):
        first = first.astype("float32")
        layer(first)
        table = np.zeros(tuple(layer.weights[0].shape), "float32")   # (n, 3) or (n,)
        table.reshape(n, -1)[:, 0] = marks
        layer.set_weights([table])
        x_in, ids_in = keras.Input(first.shape[1:]), keras.Input((2,))     # float ids
        model = keras.Model([x_in, ids_in], layer([x_in, ids_in]))
        for out in (layer([first, ids.astype("float32")]),
                    model.predict([first, ids.astype("float32")], verbose=0)):
            got = ops.convert_to_numpy(ops.cast(out, "float32"))
            got = got[..., 0] if got.ndim == 3 else got
            np.testing.assert_array_equal(got, ids % 7, err_msg=type(layer).__name__)

    # float instance indices (LIA's feature-free input) met the same cast: row 256 for 257
    # (JAX, silently) or a gather past the table (TensorFlow); Keras' Embedding reads 257
    index = np.array([257, 301, 513, 599])
    emb = InstanceEmbedding(n, 1, dtype="mixed_bfloat16")
    emb(index)
    emb.set_weights([marks[:, None]])
    index_in = keras.Input((1,))                                            # float indices
    for out in (emb(index.astype("float32")),
                keras.Model(index_in, emb(index_in)).predict(index[:, None].astype("float32"),
                                                              verbose=0)):
        got = ops.convert_to_numpy(ops.cast(out, "float32")).ravel()
        np.testing.assert_array_equal(got, index % 7, err_msg="InstanceEmbedding")
    lia = DifficultyCompetence(3, num_annotators=2, num_instances=n, dtype="mixed_bfloat16")
    slots = np.zeros((4, 1), "int32")
    as_float, as_int = (ops.convert_to_numpy(ops.cast(lia([i, slots]), "float32"))
                        for i in (index.astype("float32"), index.astype("int32")))
    np.testing.assert_array_equal(as_float, as_int, err_msg="DifficultyCompetence")

    # 2. regression targets under a Keras mask and float16 predictions: the targets were cast
    # to float16 (1000.3 -> 1000, 70000 -> inf) before the loss's float32
    mask = ops.convert_to_tensor(np.array([[True, False]]))
    for target, pred in ((1000.3, 1000.0), (70000.0, 60000.0)):
        y = np.full((1, 2, 4), target, "float32")
        p = ops.convert_to_tensor(np.full((1, 2, 4), pred, "float16"))
        masked = float(MaskedMultiMSE()(y, with_keras_mask(p, mask)))
        np.testing.assert_allclose(masked, float(MaskedMultiMSE()(y[:, :1], p[:, :1])),
                                   rtol=1e-6)
        np.testing.assert_allclose(masked, (target - pred) ** 2, rtol=1e-3)
    print("OK mixed", backend)
''')


@pytest.mark.xdist_group("crowd_layer_edges_backends")
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_float_ids_and_float_targets_keep_their_values_under_mixed_precision(
        backend, other_backend):
    """The layers' dtype policy, not the global one: this process's backend runs it here.
    Annotator ids and instance indices that come as floats are read as integers."""
    other_backend(backend, "mixed")


MASKED_DATA = textwrap.dedent("""
    import numpy as np
    import keras
    import pytest
    from keras import ops
    from crowd_keras import CrowdDataError
    from crowd_keras._keras_utils import with_keras_mask
    from crowd_keras.losses import LabelCountCrossEntropy, MaskedMultiCrossEntropy, MaskedMultiMSE
    from crowd_keras.metrics import MaskedMultiAccuracy

    backend = keras.backend.backend()
    # two sequences of 3 steps, the last step of the first one padding; 2 slots, 3 classes
    mask = ops.convert_to_tensor(np.array([[True, True, False], [True, True, True]]))
    logits = np.random.default_rng(0).normal(size=(2, 3, 2, 3)).astype("float32")
    pred = lambda: with_keras_mask(ops.convert_to_tensor(logits), mask)

    # 1. a padded step's labels are missing whatever they hold (a tagger's -100): the metric
    # refused them (checked before the mask), the loss took them
    y = np.array([[[0, 1], [2, -1], [-100, -100]], [[1, 1], [0, 2], [2, 0]]])
    missing = np.where(y == -100, -1, y)
    for loss_or_metric in (MaskedMultiCrossEntropy, MaskedMultiAccuracy):
        def value(labels):
            obj = loss_or_metric()
            if loss_or_metric is MaskedMultiAccuracy:
                obj.update_state(labels, pred())
                return float(obj.result())
            return float(obj(labels, pred()))
        assert value(y) == pytest.approx(value(missing)), loss_or_metric.__name__

    # 2. a bad target on a real step of a masked batch given as data: checked on every backend
    # (on JAX and torch it went unchecked: a wrong loss, NaN or a raw IndexError)
    bad = missing.copy(); bad[1, 2, 0] = 7
    for make in (MaskedMultiCrossEntropy, lambda: MaskedMultiCrossEntropy(from_logits=False)):
        with pytest.raises(CrowdDataError, match=r"label 7 at \\(1, 2, 0\\)"):
            make()(bad, pred())
    with pytest.raises(CrowdDataError, match=r"label 7 at \\(1, 2, 0\\)"):
        MaskedMultiAccuracy().update_state(bad, pred())
    answers = np.where(missing >= 0, missing, np.nan).astype("float32")
    answers[0, 2, 0] = np.inf                                   # padding: ignored
    masked_answers = with_keras_mask(ops.convert_to_tensor(logits[..., 0]), mask)
    assert np.isfinite(float(MaskedMultiMSE()(answers, masked_answers)))
    answers[1, 2, 1] = np.inf
    with pytest.raises(CrowdDataError, match=r"answer inf at \\(1, 2, 1\\)"):
        MaskedMultiMSE()(answers, masked_answers)
    counts = np.ones((2, 3, 3), "float32")
    counts[0, 2, 0] = -1.0                                      # padding: ignored
    probs = with_keras_mask(ops.softmax(ops.convert_to_tensor(logits[:, :, 0])), mask)
    assert np.isfinite(float(LabelCountCrossEntropy()(counts, probs)))
    counts[1, 0, 2] = -1.0
    with pytest.raises(CrowdDataError, match=r"label count -1.0 at \\(1, 0, 2\\)"):
        LabelCountCrossEntropy()(counts, probs)
    print("OK masked data", backend)
""")


@pytest.mark.xdist_group("crowd_layer_edges_backends")
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_targets_given_as_data_are_checked_on_the_real_steps_of_a_masked_batch(
        backend, other_backend):
    """Padded steps' targets are missing, whatever they hold; the real steps' are checked on
    every backend (the check read the masked targets' tensor, on TensorFlow only)."""
    other_backend(backend, "masked data")


EMPTY_BATCH = textwrap.dedent('''
    import numpy as np
    import keras
    from crowd_keras.losses import MaskedMultiCrossEntropy, MaskedMultiMSE

    backend = keras.backend.backend()
    T, S, K = 5, 3, 4
    for rows in (0, 2):
        labels = np.full((rows, T, S), -1, "int32")
        answers = np.full((rows, T, S), np.nan, "float32")
        logits = np.zeros((rows, T, S, K), "float32")
        for weights in (np.ones((rows, T), "float32"), np.ones((rows, T, S), "float32")):
            for reduction in ("sum_over_batch_size", "sum", "mean_with_sample_weight", "none"):
                for loss, y_true, y_pred in (
                        (MaskedMultiCrossEntropy(reduction=reduction), labels, logits),
                        (MaskedMultiMSE(reduction=reduction), answers, logits[..., 0])):
                    value = keras.ops.convert_to_numpy(loss(y_true, y_pred,
                                                            sample_weight=weights))
                    # nothing observed: 0 (per item: one 0 per row)
                    assert value.shape == ((rows,) if reduction == "none" else ()), value
                    assert not value.any(), value
    print("OK empty batch", backend)
''')


@pytest.mark.xdist_group("crowd_layer_edges_backends")
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_per_step_weights_on_a_batch_of_0_rows(backend, other_backend):
    """A batch of 0 rows with per-step or per-slot sample weights failed on JAX ("integer
    modulo by zero") and torch ("cannot reshape tensor of 0 elements"): a reshape to
    (batch, -1) cannot infer its width beside a 0."""
    other_backend(backend, "empty batch")


@pytest.fixture(scope="module")
def other_backend():
    """``check(backend, name)``: the script ``name`` of ``SCRIPTS`` runs in this process on
    its own backend; on another, the three scripts run in one fresh process per backend,
    when first asked for (the tests that use it are one xdist group, so one worker runs each
    backend once), and ``name``'s output must say it passed."""
    done = {}

    def check(backend, name):
        if backend == keras.backend.backend():
            exec(SCRIPTS[name], {})  # noqa: S102 - the script the other backends run
            return
        require_module(backend)
        if backend not in done:
            done[backend] = run_parts([(n, script, []) for n, script in SCRIPTS.items()],
                                      KERAS_BACKEND=backend)
        out = done[backend][name]
        assert f"OK {name} {backend}" in out, out
    return check


SCRIPTS = {"mixed": MIXED, "masked data": MASKED_DATA, "empty batch": EMPTY_BATCH}


# ----------------------------------------------------------------------------- saving
LOAD_WITH_METRIC = textwrap.dedent('''
    import sys
    import numpy as np
    import crowd_keras.layers
    import keras

    model = keras.saving.load_model(sys.argv[1])
    x, y = np.load(sys.argv[2]), np.load(sys.argv[3])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert "masked_multi_accuracy" in logs, logs
    print("loaded", logs["masked_multi_accuracy"])
''')


@pytest.mark.slow
def test_a_model_compiled_with_the_masked_accuracy_loads_after_importing_the_layers(tmp_path):
    """``import crowd_keras.layers`` is documented as all a fresh process needs to load a
    model built and compiled with the package's objects; it registered the losses but not
    MaskedMultiAccuracy: "Could not locate class 'MaskedMultiAccuracy'"."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, D)).astype("float32")
    y = rng.integers(-1, K, size=(16, A)).astype("int32")
    model = keras.Sequential([keras.Input((D,)), keras.layers.Dense(K, activation="softmax"),
                              CrowdLayer(A)])
    model.compile("adam", MaskedMultiCrossEntropy(), metrics=[MaskedMultiAccuracy()])
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    expected = model.evaluate(x, y, verbose=0, return_dict=True)["masked_multi_accuracy"]
    out = _run(LOAD_WITH_METRIC, tmp_path / "m.keras", tmp_path / "x.npy", tmp_path / "y.npy",
               KERAS_BACKEND=keras.backend.backend())
    assert float(out.split("loaded")[-1]) == pytest.approx(expected)


@pytest.mark.parametrize("make", [lambda d: MaskedMultiCrossEntropy(from_logits=False, dtype=d),
                                  lambda d: MaskedMultiMSE(reduction="sum", dtype=d),
                                  lambda d: LabelCountCrossEntropy(normalize=True, dtype=d),
                                  lambda d: ExpectedCompleteNLL(dtype=d),
                                  lambda d: MarginalNLL(per="item", dtype=d)],
                         ids=["cross_entropy", "mse", "label_counts", "lia_expected",
                              "lia_marginal"])
def test_the_losses_keep_their_dtype_through_their_config(make):
    """Keras' Loss.get_config leaves out dtype: a float64 loss came back in float32 from
    from_config and from a .keras file (the config comparison of both was equal, and blind)."""
    loss = make("float64")
    for again in (type(loss).from_config(loss.get_config()),
                  keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))):
        assert again.dtype == "float64" and again.get_config() == loss.get_config()
    assert make(None).get_config()["dtype"] == keras.config.floatx()


# ----------------------------------------------------------------------------- weights
def test_one_sample_weight_for_the_batch_scales_the_loss_as_keras_losses_do():
    """A scalar sample_weight (Keras' own losses take it) failed in a reshape."""
    rng = np.random.default_rng(0)
    y = np.array([[0, 1, -1, 2], [1, -1, -1, -1]])
    logits = rng.normal(size=(2, A, K)).astype("float32")
    for reduction in ("sum_over_batch_size", "sum", "none", "mean_with_sample_weight"):
        loss = MaskedMultiCrossEntropy(reduction=reduction)
        per_item = keras.ops.convert_to_numpy(loss(y, logits, sample_weight=np.full(2, 2.0)))
        for weight in (2.0, np.float32(2.0), keras.ops.convert_to_tensor(2.0)):
            np.testing.assert_allclose(
                keras.ops.convert_to_numpy(loss(y, logits, sample_weight=weight)), per_item,
                rtol=1e-6, err_msg=reduction)
    assert float(MaskedMultiMSE()(np.zeros((2, A)), np.ones((2, A), "float32"),
                                  sample_weight=3)) == pytest.approx(3.0)


def test_the_masked_accuracy_names_a_sample_weight_of_another_shape():
    """The losses name it; the metric failed in a backend multiply ([2,4] vs [2,5])."""
    labels, scores = np.zeros((2, A), "int32"), np.zeros((2, A, K), "float32")
    with pytest.raises(ValueError, match=r"masked_multi_accuracy: sample_weight of shape "
                                         r"\(2, 5\) is not per item"):
        MaskedMultiAccuracy().update_state(labels, scores, sample_weight=np.ones((2, A + 1)))
    metric = MaskedMultiAccuracy()
    for weights in (np.ones(2), np.ones((2, 1)), np.ones((2, A)), 2.0):
        metric.update_state(labels, scores, sample_weight=weights)
    assert float(metric.result()) == 1.0


# ----------------------------------------------------------------------------- arguments
def test_noise_scales_must_be_finite_numbers_named_in_the_error():
    """An infinite init_scale or learning_rate_multiplier made every output NaN; a string or
    None failed in float() without naming the argument ('2' was taken as 2.0)."""
    for name in ("init_scale", "learning_rate_multiplier"):
        with pytest.raises(ValueError, match=rf"`{name}`, expected a finite number"):
            CrowdLayer(A, **{name: float("inf")})
        for bad in ("2", None):
            with pytest.raises(TypeError, match=rf"`{name}`, expected a number"):
                CrowdLayer(A, **{name: bad})
    assert CrowdLayer(A, init_scale=np.float32(2), learning_rate_multiplier=3).init_scale == 2.0


def test_cauchy_shrinkage_refuses_settings_that_make_the_penalty_nan_or_a_reward():
    """scale=0 gave a NaN penalty (so a NaN loss), a negative strength rewarded large
    weights, a NaN one made every loss NaN."""
    weights = keras.ops.ones((3,))
    assert float(CauchyShrinkage(0.0, 1.0)(weights)) == 0.0
    for strength, scale in ((1.0, 0.0), (1.0, -2.0), (-1.0, 1.0)):
        with pytest.raises(ValueError, match=r"strength >= 0 and scale > 0"):
            CauchyShrinkage(strength, scale)
    with pytest.raises(ValueError, match=r"`strength`, expected a finite number"):
        CauchyShrinkage(float("nan"), 1.0)
    with pytest.raises(TypeError, match=r"`scale`, expected a number"):
        CauchyShrinkage(1.0, "1")


# ----------------------------------------------------------------------------- callback
def test_truth_validation_on_plain_keras_models_and_multi_input_classifiers():
    """On a plain model ending in a crowd layer it raised AttributeError 'Sequential' object
    has no attribute 'classifier'; batch_size=0 failed at the first epoch's end in range(),
    labels of shape (n, 1) or one-hot gave a wrong accuracy;
    a classifier with a list or dict of inputs was sliced as the list (a Keras error about
    0 input tensors) or failed on a dict."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(40, 2)).astype("float32"), rng.normal(size=(40, 3)).astype("float32")
    y, truth = rng.integers(-1, K, size=(40, A)), rng.integers(0, K, 40)
    with pytest.raises(ValueError, match=r"`batch_size`, expected an integer"):
        TruthValidation(a, truth, batch_size=0)
    # (n, 1) codes are read as (n,); one-hot labels are refused: either met the (n,)
    # predictions in a broadcast comparison (an accuracy over n x n pairs)
    assert TruthValidation(a, truth[:, None]).y.shape == (40,)
    with pytest.raises(ValueError, match=r"true class codes of each row of x \(40 rows\), got "
                                         r"shape \(40, 3\)"):
        TruthValidation(a, np.eye(K)[truth])
    plain = keras.Sequential([keras.Input((2,)), keras.layers.Dense(K, activation="softmax"),
                              CrowdLayer(A)])
    plain.compile("adam", MaskedMultiCrossEntropy())
    with pytest.raises(ValueError, match=r"model 'seq' \(Sequential\) has none: pass "
                                         r"classifier="):
        plain.name = "seq"
        plain.fit(a, y, epochs=1, verbose=0, callbacks=[TruthValidation(a, truth)])

    in_a, in_b = keras.Input((2,), name="a"), keras.Input((3,), name="b")
    clf = keras.Model([in_a, in_b], keras.layers.Dense(K, activation="softmax")(
        keras.layers.Concatenate()([in_a, in_b])))
    model = keras.Model([in_a, in_b], CrowdLayer(A)(clf([in_a, in_b])))
    model.compile("adam", MaskedMultiCrossEntropy())
    for x_val in ([a, b], {"a": a, "b": b}):
        check = TruthValidation(x_val, truth, classifier=clf, batch_size=16)
        model.fit([a, b], y, epochs=1, verbose=0, callbacks=[check])
        pred = keras.ops.convert_to_numpy(clf([a, b])).argmax(-1)
        assert check.history_ == [pytest.approx(float(np.mean(pred == truth)))]


def test_truth_validation_refuses_labels_that_are_no_class_codes():
    """Class names, -1, fractions or a code past the classifier's classes never equal an
    argmax: the callback logged an accuracy of 0 (or too low) every epoch, and
    restore_best_weights kept the first epoch's weights, without a word."""
    from crowd_keras.errors import CrowdDataError

    rng = np.random.default_rng(0)
    x, truth = rng.normal(size=(6, 2)).astype("float32"), np.array([0, 1, 2, 0, 1, 2])
    for y, message in ((np.array(["a", "b", "c", "a", "b", "c"]), r"got dtype <U1"),
                       (np.array([0, 1, -1, 0, 1, 2]), r"true class -1 at row 2"),
                       (np.array([0, 1.5, 2, 0, 1, 2]), r"true class 1.5 at \(1,\)")):
        with pytest.raises(CrowdDataError, match=r"TruthValidation y: .*" + message):
            TruthValidation(x, y)
    clf = keras.Sequential([keras.Input((2,)), keras.layers.Dense(K, activation="softmax")])
    model = keras.Sequential([clf, CrowdLayer(A)])
    model.compile("adam", MaskedMultiCrossEntropy())
    y = rng.integers(-1, K, size=(6, A))
    check = TruthValidation(x, np.where(truth == 2, K, truth), classifier=clf)
    with pytest.raises(CrowdDataError, match=rf"true class {K} at row 2 is outside 0..{K - 1}"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[check])
    check = TruthValidation(x, truth, classifier=clf)
    model.fit(x, y, epochs=1, verbose=0, callbacks=[check])
    assert len(check.history_) == 1
