"""The classification crowd layers and losses as Keras citizens: what a Keras user adding them
to an existing model relies on (saving and loading in a fresh process, clear errors on wrong
shapes, masked targets, distribution strategies)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
from conftest import require_module, run_parts, subprocess_env

from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, CrowdLayer,
                                CrowdRegressionLayer, DifficultyCompetence, MixtureOfGroups)
from crowd_keras.losses import LabelCountCrossEntropy, MaskedMultiCrossEntropy
from crowd_keras.models import CrowdModel

ROOT = Path(__file__).resolve().parents[1]
N, D, K, A = 24, 5, 3, 4


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, D)).astype("float32")
    y = rng.integers(-1, K, size=(N, A)).astype("int32")
    return x, y


def _classifier():
    return keras.Sequential([keras.Input((D,)), keras.layers.Dense(K, activation="softmax")])


# ----------------------------------------------------------------------------- saving
LOAD = textwrap.dedent('''
    import sys
    import numpy as np
    {imports}
    import keras

    path, expected, x = sys.argv[1], np.load(sys.argv[2]), np.load(sys.argv[3])
    model = keras.saving.load_model(path)      # compile=True: the losses come back too
    assert type(model.loss).__name__ == sys.argv[4], model.loss
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, atol=1e-6)
    print("loaded")
''')


def _load_in_fresh_process(tmp_path, model, x, imports, loss_name):
    path = tmp_path / f"{model.name}.keras"
    model.save(path)
    np.save(tmp_path / "expected.npy", model.predict(x, verbose=0))
    np.save(tmp_path / "x.npy", x)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": keras.backend.backend()}
    done = subprocess.run([sys.executable, "-c", LOAD.format(imports=imports), str(path),
                           str(tmp_path / "expected.npy"), str(tmp_path / "x.npy"), loss_name],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "loaded" in done.stdout, done.stderr[-3000:]


@pytest.mark.slow
def test_a_fresh_process_loads_saved_models_after_importing_one_public_module(tmp_path):
    """Keras imports no module of a custom object: ``import crowd_keras.layers`` must register
    the losses a compiled model was saved with, and ``import crowd_keras.models`` the noise
    layers a saved ``CrowdModel`` holds."""
    x, y = _data()
    inp = keras.Input((D,))
    probs = keras.layers.Dense(K, activation="softmax")(inp)
    noisy = CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A, 4))([probs, inp])
    functional = keras.Model(inp, noisy, name="conal")
    functional.compile("adam", MaskedMultiCrossEntropy())
    functional.fit(x, y, epochs=1, verbose=0)
    _load_in_fresh_process(tmp_path, functional, x, "import crowd_keras.layers",
                           "MaskedMultiCrossEntropy")

    crowd = CrowdModel(_classifier(), CrowdLayer(A, "VW+B"), name="crowd")
    crowd.compile()
    crowd.fit(x, y, epochs=1, verbose=0)
    _load_in_fresh_process(tmp_path, crowd, x, "import crowd_keras.models",
                           "MaskedMultiCrossEntropy")


# ----------------------------------------------------------------------------- shapes
BUILT_ON_4 = [
    ("CrowdLayer", lambda: CrowdLayer(A), "4 classes"),
    ("AnnotatorGate", lambda: AnnotatorGate(A, 3), "4 features"),
    ("DifficultyCompetence", lambda: DifficultyCompetence(K, num_annotators=A), "4 features"),
]


@pytest.mark.parametrize("name,make,built_for", BUILT_ON_4, ids=[b[0] for b in BUILT_ON_4])
def test_a_built_layer_called_on_another_width_names_the_shape_and_the_layer(name, make,
                                                                              built_for):
    """As Keras' own layers (input_spec): eagerly the error was a backend's matmul/einsum
    message, symbolically a model was built with a wrong output shape and failed in fit."""
    layer = make()
    layer(np.full((2, 4), 0.25, "float32"))
    for bad in [np.full((2, 5), 0.2, "float32"), keras.Input((5,))]:
        with pytest.raises(ValueError, match=rf"{name} expects .*got \(\w+, 5\) \(layer "
                                             rf"'{layer.name}' was built for {built_for}\)"):
            layer(bad)
    assert tuple(layer(keras.Input((4,))).shape)[:2] == (None, A)


def test_layers_with_fixed_sizes_check_every_call_not_only_the_first():
    """CommonNoiseAdaptation and MixtureOfGroups checked the classes in build only: a second
    call on another width gave a backend error or a wrong symbolic shape."""
    for layer in [CommonNoiseAdaptation(A, 4, omega=0.5), MixtureOfGroups(2, 4, num_annotators=A),
                  MixtureOfGroups(2, 4)]:
        layer(np.full((2, 4), 0.25, "float32"))
        with pytest.raises(ValueError, match=r"num_classes=4\) expects probabilities of shape "
                                             r"\(batch, \[time,\] 4\), got \(None, 5\)"):
            layer(keras.Input((5,)))


@pytest.mark.parametrize("make,width", [(lambda: CrowdLayer(A), K),
                                        (lambda: DifficultyCompetence(K, num_annotators=A), D),
                                        (lambda: CommonNoiseAdaptation(A, K, omega=0.5), K)],
                         ids=["CrowdLayer", "DifficultyCompetence", "CommonNoiseAdaptation"])
def test_symbolic_annotator_ids_of_another_rank_are_refused_when_the_model_is_built(make, width):
    """The eager call refused ids of shape (batch, k, 1) but a functional model accepted them
    (the output shape came from compute_output_shape) and failed later, in fit."""
    ids = keras.Input((2, 3), dtype="int32")
    with pytest.raises(ValueError, match=r"annotator_ids (must be|of shape) \(batch, k\).*got "
                                         r"(shape )?\(None, 2, 3\)"):
        make()([keras.Input((width,)), ids])


@pytest.mark.parametrize("make,width,forms", [
    (lambda: CrowdLayer(A), K, r"CrowdLayer takes probs or \[probs, annotator_ids\]"),
    (lambda: CrowdRegressionLayer(A), 1, r"takes mu or \[mu, annotator_ids\]"),
    (lambda: MixtureOfGroups(2, K, num_annotators=A), K,
     r"MixtureOfGroups takes probs or \[probs, annotator_ids\]"),
    (lambda: AnnotatorGate(A), D, r"AnnotatorGate takes x or \[x, annotator_ids\]"),
    (lambda: DifficultyCompetence(K, num_annotators=A), D,
     r"DifficultyCompetence takes instance or \[instance, annotator_ids\]")],
    ids=["CrowdLayer", "CrowdRegressionLayer", "MixtureOfGroups", "AnnotatorGate",
         "DifficultyCompetence"])
def test_a_symbolic_call_on_a_list_of_another_length_is_refused_as_the_call_refuses_it(
        make, width, forms):
    """A functional model built on [probs, ids, extra] (or [probs]) got the output shape of
    the dense form from compute_output_shape and failed only in fit (MixtureOfGroups: a raw
    unpacking error, DifficultyCompetence too); the gate ignored the extra input on every
    call."""
    first, ids = keras.Input((width,)), keras.Input((2,), dtype="int32")
    for inputs, n in (([first, ids, keras.Input((1,))], 3), ([first], 1)):
        with pytest.raises(ValueError, match=forms + f", got a list of {n} inputs"):
            make()(inputs)
    eager = make()
    with pytest.raises(ValueError, match=forms + ", got a list of 3 inputs"):
        eager([np.full((2, width), 0.5, "float32"), np.zeros((2, 2), "int32"),
               np.zeros((2, 1), "float32")])


def test_the_global_mixture_of_groups_refuses_annotator_ids_when_the_model_is_built():
    with pytest.raises(ValueError, match="the global MixtureOfGroups takes probs only"):
        MixtureOfGroups(2, K)([keras.Input((K,)), keras.Input((2,), dtype="int32")])

def test_a_built_layer_still_takes_an_unknown_width_and_its_other_call_form():
    layer = CrowdLayer(A)
    layer(np.full((2, K), 1 / K, "float32"))
    unknown = keras.layers.Lambda(lambda t: t, output_shape=(None,))(keras.Input((None,)))
    assert tuple(layer(unknown).shape) == (None, A, None)
    ids = np.array([[0, 3], [1, -1]], "int32")
    assert tuple(layer([np.full((2, K), 1 / K, "float32"), ids]).shape) == (2, 2, K)
    assert tuple(layer(np.full((2, 6, K), 1 / K, "float32")).shape) == (2, 6, A, K)


# ----------------------------------------------------------------------------- configs
def test_crowd_model_config_keeps_every_constructor_argument(tmp_path):
    """``dtype`` was dropped by ``get_config``: a reloaded model fell back to the global
    policy."""
    clf = keras.Sequential([keras.Input((D,)), keras.layers.Dense(K)])
    model = CrowdModel(clf, CrowdLayer(A, "S"), from_logits=True, warmup_epochs=3, name="cm",
                       trainable=False, dtype="mixed_bfloat16")
    clone = CrowdModel.from_config(model.get_config())
    assert (clone.from_logits, clone.warmup_epochs, clone.name, clone.trainable,
            clone.dtype_policy.name) == (True, 3, "cm", False, "mixed_bfloat16")
    model(np.zeros((2, D), "float32"))
    model.save(tmp_path / "cm.keras")
    assert keras.saving.load_model(tmp_path / "cm.keras").dtype_policy.name == "mixed_bfloat16"


CONFIGURED = [
    lambda: CrowdLayer(A, "VW+B", init_scale=2.0, learning_rate_multiplier=3.0, name="c",
                       dtype="float64", trainable=False),
    lambda: AnnotatorGate(embedding_dim=5, annotator_features=[[1.0, 2.0], [3.0, 4.0]],
                          scale=2.5),
    lambda: CommonNoiseAdaptation(A, K, gate=AnnotatorGate(A, 6, scale=3.0),
                                  difference_weight=1e-3, init_scale=2.0,
                                  learning_rate_multiplier=5.0),
    lambda: CommonNoiseAdaptation(A, K, omega=0.3),
    lambda: MixtureOfGroups(3, K, num_annotators=A, confusion_initializer="ones", epsilon=1e-5),
    lambda: DifficultyCompetence(K, latent_dim=2, num_annotators=A, num_instances=10,
                                 instance_embedding_dim=3, instance_hidden=(4,),
                                 annotator_hidden=(5,), activation="relu",
                                 instance_regularizer="l2",
                                 annotator_regularizer=keras.regularizers.L1(0.1),
                                 output_mode="log_probs"),
    lambda: MaskedMultiCrossEntropy(from_logits=False, reduction="sum", name="x",
                                    dtype="float64"),
    lambda: LabelCountCrossEntropy(from_logits=True, normalize=True, reduction="sum", name="z"),
]


@pytest.mark.parametrize("make", CONFIGURED, ids=lambda m: "")
def test_every_layer_and_loss_keeps_its_arguments_through_serialization(make):
    obj = make()
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(obj))
    assert type(again) is type(obj)
    assert str(again.get_config()) == str(obj.get_config())


# ----------------------------------------------------------------------------- targets
@pytest.mark.parametrize("regression", [False, True])
def test_a_label_in_a_padding_slot_is_refused_not_trained_as_annotator_0(regression):
    """Padded targets ``(annotator_ids, labels)`` with a label where the id is -1: the layers
    gather annotator 0's weights for a padding slot, so the label silently trained annotator
    0 (a missing label there is the padding the loss skips)."""
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.layers import CrowdRegressionLayer

    x, _ = _data()
    ids = np.tile(np.array([0, 2, -1], "int32"), (N, 1))
    labels = np.tile(np.array([1, 2, -1]), (N, 1))
    if regression:
        model = CrowdModel(keras.Sequential([keras.Input((D,)), keras.layers.Dense(1)]),
                           CrowdRegressionLayer(A))
        labels = np.where(labels < 0, np.nan, labels).astype("float32")
    else:
        model = CrowdModel(_classifier(), CrowdLayer(A))
    model.compile()
    model.fit(x, (ids, labels), epochs=1, verbose=0)   # padding slots with missing labels
    labels[5, 2] = 1
    with pytest.raises(CrowdDataError, match=r"label 1(\.0)? at \(5, 2\) is in a padding slot "
                                             r"\(annotator id -1; 1 such"):
        model.fit(x, (ids, labels), epochs=1, verbose=0)
    seq = np.repeat(np.where(np.isnan(labels), -1, labels).astype("int64")[:, None, :], 4, 1)
    seq[:, :, 2] = -1
    seq[3, 1, 2] = 0
    if not regression:
        with pytest.raises(CrowdDataError, match=r"label 0 at \(3, 1, 2\) is in a padding slot"):
            model.crowd_data(x, (ids, seq))


def test_sample_weights_per_slot_work_and_other_shapes_name_the_shape():
    """Weights of shape (batch, annotators) met the per-item values in a backend multiply
    (an InvalidArgumentError about [24] vs [24, 4]): per slot they weigh each annotation;
    a shape that is neither per item, per step nor per slot names itself."""
    from crowd_keras.losses import MaskedMultiMSE

    x, y = _data()

    def model():
        built = keras.Sequential([keras.Input((D,)),
                                  keras.layers.Dense(K, activation="softmax"), CrowdLayer(A)])
        built.compile("adam", MaskedMultiCrossEntropy())
        return built

    model().fit(x, y, sample_weight=np.ones((N, A)), epochs=1, verbose=0)
    model().fit(x, y, sample_weight=np.linspace(0, 1, N), epochs=1, verbose=0)
    logits = np.zeros((N, A, K), "float32")
    for weights in (np.ones((N, 1)), np.ones((N, A))):
        assert float(MaskedMultiCrossEntropy()(y, logits, sample_weight=weights)) == \
            pytest.approx(np.log(K))
    with pytest.raises(ValueError, match=r"masked_multi_cross_entropy: sample_weight of shape "
                                         r"\(24, 5\) is not per item"):
        MaskedMultiCrossEntropy()(y, logits, sample_weight=np.ones((N, A + 1)))
    with pytest.raises(ValueError, match=r"masked_multi_mse: sample_weight of shape \(24, 5\)"):
        MaskedMultiMSE()(np.zeros((N, A)), logits[..., 0], sample_weight=np.ones((N, A + 1)))


@pytest.mark.parametrize("conn_type", ["MW", "VW", "S"])
def test_a_crowd_layer_on_one_sigmoid_unit_is_refused_at_build(conn_type):
    """A binary classifier with one sigmoid unit: the softmax over one class is always 1, so
    JAX and torch trained on a loss of exactly 0 and TensorFlow failed in the graph with a
    label out of range."""
    head = keras.Sequential([keras.Input((D,)), keras.layers.Dense(1, activation="sigmoid")])
    with pytest.raises(ValueError, match=r"at least 2 classes .*got shape \(None, 1\); .*"
                                         r"Dense\(2, activation='softmax'\)"):
        keras.Sequential([head, CrowdLayer(A, conn_type)])


def test_an_annotator_gate_with_features_refuses_another_num_annotators():
    """num_annotators was silently replaced by the features' row count (DifficultyCompetence
    refuses the same contradiction)."""
    feats = np.eye(3, dtype="float32")
    with pytest.raises(ValueError, match=r"num_annotators=4 but annotator_features has 3 rows"):
        AnnotatorGate(4, annotator_features=feats)
    gate = AnnotatorGate(3, embedding_dim=2, annotator_features=feats)
    assert AnnotatorGate.from_config(gate.get_config()).num_annotators == 3


def test_constructor_arguments_that_would_fail_later_fail_at_construction():
    """An unknown activation failed at the first call (and only with hidden layers), as
    Keras' Dense refuses it at construction; MixtureOfGroups' epsilon floors the
    probabilities under a log: 0 or less gave -inf log-probabilities and NaN losses."""
    with pytest.raises(ValueError, match="selux"):
        DifficultyCompetence(K, num_annotators=A, activation="selux")
    for eps in (0, -1e-3, 1.0, 2.0):
        with pytest.raises(ValueError, match="epsilon must be positive and below 1"):
            MixtureOfGroups(2, K, num_annotators=A, epsilon=eps)



@pytest.mark.parametrize("make,error,match", [
    (lambda: MixtureOfGroups(2, K, epsilon=None), TypeError, "`epsilon`, expected a number"),
    (lambda: CommonNoiseAdaptation(A, K, omega="a"), TypeError, "`omega`, expected a number"),
    (lambda: CommonNoiseAdaptation(A, K, gate=keras.layers.Dense(3)), TypeError,
     "gate must be an AnnotatorGate.*got Dense"),
    (lambda: AnnotatorGate(annotator_features="abc"), TypeError,
     "AnnotatorGate: annotator_features must be a numeric"),
    (lambda: DifficultyCompetence(K, num_annotators=A, instance_hidden=5), TypeError,
     r"instance_hidden must be a list of layer sizes \(e.g. \[5\]")],
    ids=["epsilon None", "omega string", "gate Dense", "features string", "hidden int"])
def test_constructor_arguments_of_another_type_are_named_in_the_error(make, error, match):
    """They failed in float(), np.asarray() or iteration with a message naming no argument
    (a Dense gate: "'Dense' object has no attribute 'num_annotators'")."""
    with pytest.raises(error, match=match):
        make()

def test_label_counts_that_are_not_counts_are_refused_naming_the_first():
    """A -1 (the other losses' missing code) or a NaN entered Eq. 4 as a negative or NaN
    count: a wrong or NaN loss without a word."""
    from crowd_keras.errors import CrowdDataError

    probs = np.full((3, 2), 0.5, "float32")
    counts = np.array([[1, 0], [2, 1], [0, 0]])
    assert float(LabelCountCrossEntropy()(counts, probs)) == pytest.approx(2 * np.log(2))
    for bad, shown in [(-1, "-1.0"), (np.nan, "nan")]:
        wrong = counts.astype("float64")
        wrong[1, 0] = bad
        with pytest.raises(CrowdDataError, match=rf"label count {shown} at \(1, 0\) is not a "
                                                 r"count \(1 such"):
            LabelCountCrossEntropy()(wrong, probs)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="targets entering as eager TensorFlow tensors are checked")
def test_targets_of_masked_steps_may_hold_anything_as_documented():
    """The masked losses' doc: a Keras-masked step's targets count as missing whatever they
    hold; an eager call refused a padding value such as -100 there (the check ran before the
    mask)."""
    import tensorflow as tf

    from crowd_keras._keras_utils import with_keras_mask
    from crowd_keras.errors import CrowdDataError

    logits = np.random.default_rng(0).normal(size=(2, 3, A, K)).astype("float32")
    mask = np.array([[True, True, False], [True, False, False]])
    y = np.random.default_rng(1).integers(-1, K, size=(2, 3, A))

    def loss(pad):
        padded = y.copy()
        padded[~mask] = pad
        return float(MaskedMultiCrossEntropy()(padded, with_keras_mask(tf.constant(logits),
                                                                         tf.constant(mask))))

    assert loss(-100) == loss(-1) == loss(2)
    bad = y.copy()
    bad[0, 0, 0] = -100
    with pytest.raises(CrowdDataError, match=r"label -100 at \(0, 0, 0\) is below -1"):
        MaskedMultiCrossEntropy()(bad, with_keras_mask(tf.constant(logits), tf.constant(mask)))


# ----------------------------------------------------------------------------- mixed precision
FLOAT16_FLOORS = textwrap.dedent("""
    import numpy as np
    import keras
    from keras import ops
    from crowd_keras.layers import CrowdLayer, DifficultyCompetence, MixtureOfGroups
    from crowd_keras.lia.layers import AnnotationLogLikelihoods
    from crowd_keras.lia.losses import ExpectedCompleteNLL
    from crowd_keras.losses import MaskedMultiCrossEntropy
    from crowd_keras.models import CrowdModel

    backend = keras.backend.backend()
    K, F16 = 3, "mixed_float16"
    x = np.array([[30.0, 0.0, 0.0]], "float32")       # a sure classifier: class 0, p = (1, 0, 0)
    ids, y = np.array([[0, 1]], "int32"), np.array([[0, 2]], "int32")   # annotator 1 says 2
    sure = dict(kernel_initializer="identity", bias_initializer="zeros", dtype=F16)

    def finite_after_a_step(model, inputs, targets, loss):
        model.compile(keras.optimizers.SGD(0.1), loss)
        value = float(model.train_on_batch(inputs, targets))
        weights = [ops.convert_to_numpy(ops.cast(w, "float32")) for w in model.weights]
        return np.isfinite(value) and all(np.isfinite(w).all() for w in weights)

    # 1. mixture of groups: annotator 1's label has probability 0 in float16 (under the floor)
    x_in, ids_in = keras.Input((K,)), keras.Input((2,), dtype="int32")
    mog = MixtureOfGroups(1, K, num_annotators=2, dtype=F16)
    model = keras.Model([x_in, ids_in],
                        mog([keras.layers.Dense(K, activation="softmax", **sure)(x_in), ids_in]))
    mog.confusion_logits.assign(np.where(np.eye(K), 0.0, -30.0)[None].astype("float32"))
    assert finite_after_a_step(model, [x, ids], y, MaskedMultiCrossEntropy()), "mixture of groups"

    # 2. CrowdModel's warm-up: the classifier's probability of annotator 1's label is 0
    clf = keras.Sequential([keras.Input((K,)), keras.layers.Dense(K, activation="softmax", **sure)])
    model = CrowdModel(clf, CrowdLayer(2, dtype=F16))
    model({"x": x, "annotator_ids": ids})
    model.noise_on.assign(0.0)                                   # the warm-up's bypass
    assert finite_after_a_step(model, {"x": x, "annotator_ids": ids}, y, None), "warm-up"

    # 3. LIA: the classifier gives 0 to a class the E-step's posterior keeps
    x_in, ids_in, y_in = (keras.Input((K,)), keras.Input((2,), dtype="int32"),
                          keras.Input((2,), dtype="int32"))
    h = keras.layers.Dense(K, activation="softmax", **sure)(x_in)
    log_q = DifficultyCompetence(K, num_annotators=2, output_mode="log_probs",
                                 dtype=F16)([x_in, ids_in])
    model = keras.Model([x_in, ids_in, y_in], AnnotationLogLikelihoods(dtype=F16)([h, log_q, y_in]))
    posterior = np.array([[0.5, 0.0, 0.5]], "float32")
    assert finite_after_a_step(model, [x, ids, y], posterior, ExpectedCompleteNLL()), "LIA"
    print("OK float16 floors", backend)
""")


@pytest.fixture(scope="module")
def dtypes_on_other_backend():
    """``backend -> {"float16 floors"[, "float64 groups"]: output}``: this module's scripts
    for another backend in one fresh process each (conftest.run_parts), run when first asked
    for (the tests that use it are one xdist group)."""
    done = {}

    def run(backend):
        require_module(backend)
        if backend not in done:
            parts = [("float16 floors", FLOAT16_FLOORS, [])]
            if backend == "torch":
                parts.insert(0, ("float64 groups", FLOAT64_GROUPS, []))
            done[backend] = run_parts(parts, KERAS_BACKEND=backend)
        return done[backend]
    return run


@pytest.mark.xdist_group("layer_citizenship_backends")
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_a_probability_of_0_in_float16_trains_without_nan_weights(backend,
                                                                  dtypes_on_other_backend):
    """Under mixed_float16 a log's floor (1e-7) is a float16 subnormal and the log's gradient
    there (1 / 1e-7) infinite: where a label's probability was 0, JAX's max (a product with
    the floor's zero gradient, 0 · inf) made every weight NaN after one step. The logs are
    taken in float32, as Keras' losses take theirs."""
    if backend == keras.backend.backend():
        exec(FLOAT16_FLOORS, {})  # noqa: S102 - the script the other backends run
        return
    out = dtypes_on_other_backend(backend)["float16 floors"]
    assert f"OK float16 floors {backend}" in out, out


def test_targets_of_another_shape_are_named_by_the_metric_and_every_loss():
    """A target axis of size 1 broadcast silently (MaskedMultiAccuracy gave 3.0 on (batch, 1)
    labels; LabelCountCrossEntropy a value on one row of counts for four items; the LIA losses
    the value of the right shape), and other sizes failed in a backend op."""
    from crowd_keras.lia.losses import ExpectedCompleteNLL, MarginalNLL
    from crowd_keras.metrics import MaskedMultiAccuracy
    scores = np.zeros((4, 3, 2), "float32")
    for labels in (np.zeros((4, 1), "int32"), np.zeros((4, 4), "int32")):
        with pytest.raises(ValueError, match=rf"targets of shape \(4, {labels.shape[1]}\) do "
                                             r"not match predictions of shape \(4, 3, 2\)"):
            MaskedMultiAccuracy().update_state(labels, scores)
    probs = np.full((4, 3), 1 / 3, "float32")
    for counts in (np.ones((1, 3), "float32"), np.ones((5, 3), "float32")):
        with pytest.raises(ValueError, match=rf"counts of shape \({counts.shape[0]}, 3\) do "
                                             r"not match predictions \(4, 3\)"):
            LabelCountCrossEntropy()(counts, probs)
    log_q = np.log(np.full((4, 4, 3), 1 / 3, "float32"))       # 1 + k rows, k = 3 slots
    for labels in (np.zeros((4, 1)), np.zeros((4, 5))):
        with pytest.raises(ValueError, match=r"expected \(4, 3\) \(one label per item"):
            MarginalNLL()(labels, log_q)
    with pytest.raises(ValueError, match=r"expected \(4, 3\) \(the E-step's posterior"):
        ExpectedCompleteNLL()(np.ones((4, 1), "float32"), log_q)
    # the shapes that match still give the losses' values
    assert np.isfinite(float(MarginalNLL()(np.zeros((4, 3)), log_q)))
    assert np.isfinite(float(LabelCountCrossEntropy()(np.ones((4, 3), "float32"), probs)))


def test_a_per_step_omega_or_another_time_axis_is_refused_when_the_model_is_built():
    """ω (batch, 1, A) on (batch, K) probabilities built a model declaring (batch, A, K) whose
    predict returned (batch, batch, A, K); a sequence ω of another length failed only in a
    backend op at predict time."""
    for p_shape, w_shape, match in [((3,), (1, 4), r"omega of shape \(None, 1, 4\) does not "
                                                    r"match probabilities of shape \(None, 3\)"),
                                    ((5, 3), (4, 4), r"\(batch, time, 4\) with the "
                                                     "probabilities' batch and time")]:
        with pytest.raises(ValueError, match=match):
            CommonNoiseAdaptation(4, 3)([keras.Input(p_shape), keras.Input(w_shape)])
    # one ω per sequence, or per step of the same length: built and run
    for w_shape in [(4,), (5, 4)]:
        p_in, w_in = keras.Input((5, 3)), keras.Input(w_shape)
        model = keras.Model([p_in, w_in], CommonNoiseAdaptation(4, 3)([p_in, w_in]))
        out = model.predict([np.full((2, 5, 3), 1 / 3, "float32"),
                             np.full((2,) + w_shape, 0.5, "float32")], verbose=0)
        assert out.shape == (2, 5, 4, 3)


FLOAT64_GROUPS = textwrap.dedent("""
    import keras
    import numpy as np
    from crowd_keras.layers import MixtureOfGroups
    p, ids = np.full((2, 3), 1 / 3), np.array([[0, 1], [2, -1]])
    for layer, x in [(MixtureOfGroups(2, 3, num_annotators=4, dtype="float64"), p),
                     (MixtureOfGroups(2, 3, num_annotators=4, dtype="float64"), [p, ids]),
                     (MixtureOfGroups(2, 3, dtype="float64"), p)]:
        out = layer(x)
        assert "float64" in str(out.dtype), out.dtype
        assert np.isfinite(keras.ops.convert_to_numpy(out)).all()
    print("OK float64 groups")
""")


@pytest.mark.xdist_group("layer_citizenship_backends")
def test_a_float64_mixture_of_groups_runs_and_stays_float64_on_torch(dtypes_on_other_backend):
    # Keras' torch backend takes float64 tensordot/matmul results to float32: the einsum
    # that followed mixed the two dtypes (RuntimeError), the global form came back float32
    out = dtypes_on_other_backend("torch")["float64 groups"]
    assert "OK float64 groups" in out, out
