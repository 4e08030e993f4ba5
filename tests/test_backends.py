"""The Keras training path on other backends and under tf.distribute, each in a fresh process.

``KERAS_BACKEND`` is read when Keras is imported and logical devices must be configured
before TensorFlow initialises them, so every check here runs a small script in a subprocess.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import require_module, run_parts, subprocess_env

ROOT = Path(__file__).resolve().parents[1]

SMOKE = textwrap.dedent('''
    import sys
    import numpy as np
    import keras
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.layers import CrowdLayer
    from crowd_keras.losses import MaskedMultiCrossEntropy
    from crowd_keras.models import CrowdModel, LazyAdam

    backend, saved = sys.argv[1], sys.argv[2]
    assert keras.backend.backend() == backend, keras.backend.backend()
    as_np = keras.ops.convert_to_numpy

    # 1. a .keras file written by the TensorFlow backend loads and predicts the same here
    ref = np.load(saved + ".npz")
    loaded = keras.models.load_model(saved + ".keras")
    np.testing.assert_allclose(as_np(loaded.classifier(ref["x"])), ref["probs"], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(loaded.confusion_matrices(), ref["cm"], rtol=1e-4, atol=1e-6)

    # 2. training from Annotations (indexed) and from a dense matrix
    sim = simulate_crowd(n_items=400, n_classes=3, n_annotators=10, annotations_per_item=3,
                         annotator_accuracy=(0.55, 0.9), seed=1)
    for y, opt in ((sim.annotations, LazyAdam(1e-2)), (sim.annotations.to_dense(), "adam")):
        keras.utils.set_random_seed(0)
        clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                                keras.layers.Dense(3, activation="softmax")])
        model = CrowdModel(clf, CrowdLayer(10, "MW"))
        model.compile(opt if opt != "adam" else keras.optimizers.Adam(1e-2))
        hist = model.fit(sim.x, y, epochs=8, batch_size=64, verbose=0)
        assert hist.history["loss"][-1] < hist.history["loss"][0], hist.history["loss"]
        acc = float(np.mean(np.argmax(as_np(clf(sim.x)), -1) == sim.y))
        assert acc >= 0.85, acc

    # 3. dense and indexed forms: same loss and gradients (one SGD step, lr = 1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 4)).astype("float32")
    ids = np.array([[0, 2], [1, -1], [3, 0], [-1, -1], [2, 1], [0, 3]], dtype="int32")
    labels = np.where(ids >= 0, rng.integers(0, 3, ids.shape), -1).astype("int32")
    dense = -np.ones((6, 4), "int32")
    for i, j in zip(*np.nonzero(ids >= 0)):
        dense[i, ids[i, j]] = labels[i, j]
    deltas, losses = [], []
    for indexed in (False, True):
        keras.utils.set_random_seed(0)
        x_in = keras.Input((4,))
        p = keras.layers.Dense(3, activation="softmax")(x_in)
        layer = CrowdLayer(4, "MW")
        if indexed:
            ids_in = keras.Input((2,), dtype="int32")
            model = keras.Model([x_in, ids_in], layer([p, ids_in]))
        else:
            model = keras.Model(x_in, layer(p))
        model.compile(keras.optimizers.SGD(1.0), loss=MaskedMultiCrossEntropy())
        before = [as_np(w).copy() for w in model.trainable_weights]
        losses.append(float(model.train_on_batch([x, ids] if indexed else x,
                                                 labels if indexed else dense)))
        deltas.append([b - as_np(w) for b, w in zip(before, model.trainable_weights)])
    assert abs(losses[0] - losses[1]) < 1e-5, losses
    for a, b in zip(*deltas):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)

    # 4. sequence form
    seq = CrowdLayer(4, "VW+B")
    probs = np.full((2, 5, 3), 1 / 3, "float32")
    assert tuple(seq(probs).shape) == (2, 5, 4, 3)
    assert tuple(seq([probs, ids[:2]]).shape) == (2, 5, 2, 3)
    print("OK", backend)
''')


def _run(script: str, args=(), timeout=300, **env):
    proc = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=ROOT,
                          env=subprocess_env(**env), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def saved_by_tensorflow(tmp_path_factory):
    """A trained CrowdModel saved by this (TensorFlow) process, with its outputs."""
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the reference file is written by the tensorflow backend")
    from crowd_keras.layers import CrowdLayer
    from crowd_keras.models import CrowdModel

    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 5)).astype("float32")
    clf = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="softmax")])
    model = CrowdModel(clf, CrowdLayer(4, "MW"))
    model.compile(keras.optimizers.Adam(0.05))
    model.fit(x, rng.integers(-1, 3, size=(20, 4)), epochs=2, verbose=0)
    base = str(tmp_path_factory.mktemp("saved") / "crowd")
    model.save(base + ".keras")
    np.savez(base + ".npz", x=x, probs=keras.ops.convert_to_numpy(clf(x)),
             cm=model.confusion_matrices())
    return base


@pytest.mark.xdist_group("keras_backends")
def test_torch_backend(backend_runs):
    require_module("torch")
    out = backend_runs("torch")["smoke"]
    assert "OK torch" in out, out


@pytest.mark.xdist_group("keras_backends")
def test_jax_backend(backend_runs):
    require_module("jax")
    out = backend_runs("jax")["smoke"]
    assert "OK jax" in out, out


# Host copies of a torch training step. On a GPU each tensor made from a host value (a Python
# constant, a shape) is a copy that makes the host wait for the device: the counts here are
# what CUDA's sync debug mode counted on an H100 (benchmarks/results/gpu_torch.md), measured on
# the CPU by intercepting torch.as_tensor / torch.tensor on host data.
HOST_COPIES = textwrap.dedent('''
    import collections, os, traceback
    import numpy as np
    import keras, torch
    from torch.overrides import TorchFunctionMode
    from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, CrowdLayer,
                                    MixtureOfGroups)
    from crowd_keras.models import CrowdModel, LazyAdam

    class HostCopies(TorchFunctionMode):
        """Tensors made from host data, by the code that called the op making them: the
        crowd_keras function (``path:name``) or None (Keras' own: its data feed, its loss
        reduction, its fused Adam)."""
        def __init__(self):
            super().__init__()
            self.by = collections.Counter()

        @staticmethod
        def op_layer(path):   # Keras' ops and backend (not its optimizers), torch itself
            return ("/torch/" in path or "/keras/src/ops/" in path
                    or "/keras/src/backend/" in path) and "/optimizers/" not in path

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if (getattr(func, "__name__", "") in ("as_tensor", "tensor") and args
                    and not isinstance(args[0], torch.Tensor)):
                stack = [(f.filename.replace(os.sep, "/"), f.name)
                         for f in traceback.extract_stack()[:-1]]
                i = len(stack)
                while i > 0 and self.op_layer(stack[i - 1][0]):
                    i -= 1
                path, name = stack[i - 1] if i else ("", "")
                self.by[path.split("/crowd_keras/")[1] + ":" + name
                        if "/crowd_keras/" in path else None] += 1
            return func(*args, **(kwargs or {}))

    def mlp(depth):
        return keras.Sequential([keras.Input((8,))]
                                + [keras.layers.Dense(16, activation="relu") for _ in range(depth)]
                                + [keras.layers.Dense(4, activation="softmax")])

    rng = np.random.default_rng(0)
    grads = None
    # 1. LazyAdam (Adam off TensorFlow) is Keras' multi-tensor Adam here: its host copies per
    #    step do not grow with the variables (the per-variable loop made 6 per variable), and
    #    its updates are Adam's
    copies = {}
    for depth in (1, 5):
        model, twin = mlp(depth), mlp(depth)
        twin.set_weights(model.get_weights())
        lazy, adam = LazyAdam(1e-2), keras.optimizers.Adam(1e-2)
        lazy.build(model.trainable_variables)
        adam.build(twin.trainable_variables)
        for step in range(3):
            grads = [rng.normal(size=tuple(v.shape)).astype("float32")
                     for v in model.trainable_variables]
            # on the variables' device (a GPU where there is one), before the probe starts
            device_grads = [keras.ops.convert_to_tensor(g) for g in grads]
            probe = HostCopies()
            with probe:
                lazy.apply(device_grads, model.trainable_variables)
            copies[depth] = sum(probe.by.values())
            adam.apply([keras.ops.convert_to_tensor(g) for g in grads], twin.trainable_variables)
        for a, b in zip(model.get_weights(), twin.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert copies[1] == copies[5], copies

    # 2. a CrowdModel step of each noise layer, with the warm-up blend traced: no copy is
    #    made by our code (the layers' padding masks, epsilons and normalisations, the loss's
    #    observed mean, the blend's log); the rest are Keras' (its data feed, loss reduction,
    #    and the fused Adam's scalars of part 1) and the warm-up callback's, once per epoch
    x = rng.normal(size=(128, 8)).astype("float32")
    ids = rng.integers(-1, 20, size=(128, 3)).astype("int32")
    labels = np.where(ids >= 0, rng.integers(0, 4, size=ids.shape), -1).astype("int32")
    per_epoch = (":on_epoch_begin", ":on_epoch_end", ":on_train_end")
    SUMMARY_PASS = {"models.py:_item_terms", "models.py:_item_pass",
                    "models.py:summarize_annotators"}
    layers = {"CrowdLayer MW": lambda: CrowdLayer(20, "MW"),
              "CoNAL": lambda: CommonNoiseAdaptation(20, 4, gate=AnnotatorGate(20, 5)),
              "MixtureOfGroups": lambda: MixtureOfGroups(2, 4, num_annotators=20)}
    found = {}
    for name, make in layers.items():
        for warmup in (0, 1):
            model = CrowdModel(mlp(1), make(), warmup_epochs=warmup)
            model.compile(LazyAdam(1e-3))
            model.fit(x, (ids, labels), batch_size=32, epochs=1, verbose=0)
            probe = HostCopies()
            with probe:
                model.fit(x, (ids, labels), batch_size=32, epochs=1, verbose=0)
            # after training, fit summarises the annotators in one host pass by design
            mine = {where: n for where, n in probe.by.items()
                    if where and not where.endswith(per_epoch) and where not in SUMMARY_PASS}
            if mine:
                found[name, warmup] = mine
    assert not found, found

    # 3. the probability forms of the losses and of LIA's log-likelihood layer
    from crowd_keras.lia.layers import AnnotationLogLikelihoods
    from crowd_keras.losses import LabelCountCrossEntropy, MaskedMultiCrossEntropy
    probs = keras.ops.softmax(keras.ops.convert_to_tensor(rng.normal(size=(8, 3, 4)), "float32"))
    item_probs = probs[:, 0]
    crowd = keras.ops.convert_to_tensor(labels[:8])
    counts = keras.ops.convert_to_tensor(rng.integers(0, 3, size=(8, 4)), "float32")
    log_q = keras.ops.log(keras.ops.softmax(keras.ops.convert_to_tensor(
        rng.normal(size=(8, 3, 4, 4)), "float32")))
    from crowd_keras.lia.layers import DifficultyCompetence, InstanceEmbedding
    lia = DifficultyCompetence(4, latent_dim=2, num_annotators=20, num_instances=13,
                               instance_regularizer="l2")
    embed = InstanceEmbedding(13, 4, embeddings_regularizer="l2")
    idx = keras.ops.convert_to_tensor(np.arange(8) % 13, "int32")
    lia([idx, crowd])
    embed(idx)
    probe = HostCopies()
    with probe:
        MaskedMultiCrossEntropy(from_logits=False)(crowd, probs)
        LabelCountCrossEntropy(from_logits=False)(counts, item_probs)
        AnnotationLogLikelihoods()([item_probs, log_q, crowd])
        lia([idx, crowd])
        embed(idx)
    mine = {where: n for where, n in probe.by.items() if where}
    assert not mine, mine
    print("OK host copies", copies)
''')


@pytest.mark.slow
def test_torch_training_step_makes_no_host_copies_of_its_own():
    """On torch, LazyAdam runs Keras' fused Adam (same updates, host copies independent of the
    number of variables) and the crowd layer's step copies no host value of its own."""
    require_module("torch")
    out = _run(HOST_COPIES, KERAS_BACKEND="torch")
    assert "OK host copies" in out, out
    print(out)


# Two logical CPUs, configured before TensorFlow initialises its devices.
TWO_CPUS = textwrap.dedent('''
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
''')

MIRRORED = TWO_CPUS + textwrap.dedent('''
    import numpy as np
    import keras
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, CrowdLayer,
                                    MixtureOfGroups)
    from crowd_keras.models import CrowdModel, LazyAdam

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    sim = simulate_crowd(n_items=400, n_classes=3, n_annotators=10, annotations_per_item=3,
                         annotator_accuracy=(0.55, 0.9), seed=1)
    for make_opt in (lambda: keras.optimizers.Adam(1e-2), lambda: LazyAdam(1e-2)):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            clf = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                                    keras.layers.Dense(3, activation="softmax")])
            model = CrowdModel(clf, CrowdLayer(10, "MW"))
            model.compile(make_opt())
        hist = model.fit(sim.x, sim.annotations, epochs=8, batch_size=64, verbose=0)
        assert "Mirrored" in type(model.noise_layer.kernel.value).__name__
        assert hist.history["loss"][-1] < hist.history["loss"][0], hist.history["loss"]
        acc = float(np.mean(np.argmax(clf.predict(sim.x, verbose=0), -1) == sim.y))
        assert acc >= 0.85, acc
        cm = model.confusion_matrices()
        np.testing.assert_allclose(cm.sum(-1), 1.0, rtol=1e-5)
    # the masked loss is scaled by 1 / replicas as Keras scales its reduced losses (the
    # replicas' gradients are summed), by its own default reduction as by Keras' one
    from crowd_keras.losses import MaskedMultiCrossEntropy
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 3, 3)).astype("float32")
    labels = rng.integers(-1, 3, (4, 3)).astype("int32")
    loss = MaskedMultiCrossEntropy()
    alone = float(loss(labels, logits))
    with strategy.scope():
        own = float(loss(labels, logits))
        keras_way = float(loss(labels, logits, sample_weight=np.ones(4, "float32")))
    assert abs(own - alone / 2) < 1e-6 and abs(keras_way - own) < 1e-6, (alone, own, keras_way)
    # Keras' Adam takes one process's steps on the same batch: tf.distribute concatenates
    # the replicas' sparse gradients, and Keras' Adam squared the slices of annotators 0 and
    # 1 (in both halves) separately. Each half (replica) has 6 labels: the same mean.
    x = rng.normal(size=(8, 10)).astype("float32")
    ids = np.array([[0, 1], [0, 2], [1, -1], [3, 0]] * 2, dtype="int32")
    labels = np.where(ids >= 0, rng.integers(0, 3, ids.shape), -1).astype("int32")
    kernels = []
    for scope in (strategy.scope(), tf.distribute.get_strategy().scope()):
        keras.utils.set_random_seed(0)
        with scope:
            clf = keras.Sequential([keras.Input((10,)),
                                    keras.layers.Dense(3, activation="softmax")])
            model = CrowdModel(clf, CrowdLayer(4, "MW"), warmup_epochs=0)
            model.compile(keras.optimizers.Adam(0.1))
        for _ in range(3):
            model.fit({"x": x, "annotator_ids": ids}, labels, batch_size=8, shuffle=False,
                      verbose=0)
        kernels.append(keras.ops.convert_to_numpy(model.noise_layer.kernel))
    np.testing.assert_allclose(kernels[0], kernels[1], rtol=1e-4, atol=1e-5)
    print("OK mirrored")
''')




# ---------------------------------------------------------------------------- other noise layers
# CoNAL (gate + common/individual matrices), both MixtureOfGroups forms and DifficultyCompetence
# in one functional model: same outputs after a .keras round trip across backends, and training
# (loss goes down) on the torch backend and under MirroredStrategy.
NOISE_MODEL = textwrap.dedent('''
    import numpy as np
    import keras
    from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, DifficultyCompetence,
                                    MixtureOfGroups)
    from crowd_keras.losses import LabelCountCrossEntropy, MaskedMultiCrossEntropy

    def build_noise_model():
        x_in = keras.Input((5,), name="x")
        ids_in = keras.Input((3,), dtype="int32", name="ids")
        p = keras.layers.Dense(3, activation="softmax", name="clf")(x_in)
        conal = CommonNoiseAdaptation(4, 3, gate=AnnotatorGate(4, embedding_dim=4),
                                      name="conal")([p, ids_in, x_in])
        mog = MixtureOfGroups(2, 3, name="mog")(p)
        mog_ind = MixtureOfGroups(2, 3, num_annotators=4, name="mog_ind")([p, ids_in])
        dc = DifficultyCompetence(3, latent_dim=2, num_annotators=4, name="dc")([x_in, ids_in])
        return keras.Model({"x": x_in, "ids": ids_in}, [conal, mog, mog_ind, dc])

    def noise_data(n=256, seed=0):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, 5)).astype("float32")
        y = (x[:, 0] > 0).astype("int32") + (x[:, 1] > 1).astype("int32")
        ids = np.stack([rng.permutation(4)[:3] for _ in range(n)]).astype("int32")
        ids[::5, 2] = -1
        flip = rng.random(ids.shape) < 0.2
        labels = np.where(flip, rng.integers(0, 3, ids.shape), y[:, None])
        labels = np.where(ids >= 0, labels, -1).astype("int32")
        counts = np.stack([(labels == c).sum(1) for c in range(3)], 1).astype("float32")
        return {"x": x, "ids": ids}, labels, counts

    def train_noise_model(model, epochs=6):
        inputs, labels, counts = noise_data()
        model.compile(keras.optimizers.Adam(0.05),
                      loss=[MaskedMultiCrossEntropy(), LabelCountCrossEntropy(),
                            MaskedMultiCrossEntropy(), None])
        hist = model.fit(inputs, [labels, counts, labels, np.zeros((len(labels), 3, 3, 3))],
                         epochs=epochs, batch_size=32, verbose=0)
        loss = hist.history["loss"]
        assert loss[-1] < loss[0], loss
        return loss
''')

NOISE_SMOKE = NOISE_MODEL + textwrap.dedent('''
    import sys
    backend, saved = sys.argv[1], sys.argv[2]
    assert keras.backend.backend() == backend, keras.backend.backend()
    ref = np.load(saved + ".npz")
    loaded = keras.models.load_model(saved + ".keras")
    inputs = {"x": ref["x"], "ids": ref["ids"]}
    for out, want in zip(loaded.predict(inputs, verbose=0), ("conal", "mog", "mog_ind", "dc")):
        np.testing.assert_allclose(out, ref[want], rtol=1e-4, atol=1e-5, err_msg=want)
    keras.utils.set_random_seed(0)
    train_noise_model(build_noise_model())

    # ids and indices given as data to the layers' public methods are checked here too (a
    # gather past a table is NaN on JAX, an IndexError on torch; -1 wraps to the last row)
    from crowd_keras.errors import CrowdDataError
    conal, dc = loaded.get_layer("conal"), loaded.get_layer("dc")
    dc_free = DifficultyCompetence(3, num_annotators=4, num_instances=5)
    dc_free([np.arange(2, dtype="int32"), np.zeros((2, 2), "int32")])
    bad_calls = {"omega_for": lambda: conal.omega_for(ref["x"][:1], [[0, 9]]),
                 "annotator_embeddings": lambda: conal.gate.annotator_embeddings(np.array([[9]])),
                 "competence": lambda: dc.competence(np.array([[0, 9]])),
                 "difficulty": lambda: dc_free.difficulty(np.array([-1]))}
    for what, bad_call in bad_calls.items():
        try:
            bad_call()
        except CrowdDataError:
            continue
        raise AssertionError(f"{what}: no CrowdDataError")
    print("OK noise", backend)
''')


@pytest.fixture(scope="module")
def noise_model_saved_by_tensorflow(tmp_path_factory):
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the reference file is written by the tensorflow backend")
    scope: dict = {}
    exec(NOISE_MODEL, scope)  # noqa: S102 - the same definitions the subprocesses run
    keras.utils.set_random_seed(3)
    model = scope["build_noise_model"]()
    rng = np.random.default_rng(3)
    for w in model.weights:  # away from the identity-like inits, so every weight matters
        w.assign(w.numpy() + rng.normal(scale=0.5, size=w.shape).astype("float32"))
    inputs, _, _ = scope["noise_data"](n=16, seed=1)
    outs = model.predict(inputs, verbose=0)
    base = str(tmp_path_factory.mktemp("noise") / "noise")
    model.save(base + ".keras")
    np.savez(base + ".npz", x=inputs["x"], ids=inputs["ids"],
             **dict(zip(("conal", "mog", "mog_ind", "dc"), outs)))
    return base


# Per backend, SMOKE and NOISE_SMOKE run in one fresh process (conftest.run_parts). (The two
# MirroredStrategy checks below cannot share a process: the second one's collective ops then
# fail.)
@pytest.fixture(scope="module")
def backend_runs(saved_by_tensorflow, noise_model_saved_by_tensorflow):
    """``backend -> {"smoke": output, "noise": output}``, run once per backend when first
    asked for (the tests that use it are one xdist group: one worker runs each backend once)."""
    done = {}

    def run(backend):
        if backend not in done:
            done[backend] = run_parts(
                [("smoke", SMOKE, [backend, saved_by_tensorflow]),
                 ("noise", NOISE_SMOKE, [backend, noise_model_saved_by_tensorflow])],
                KERAS_BACKEND=backend)
        return done[backend]
    return run


@pytest.mark.xdist_group("keras_backends")
def test_noise_layers_on_torch_backend(backend_runs):
    require_module("torch")
    out = backend_runs("torch")["noise"]
    assert "OK noise torch" in out, out


@pytest.mark.xdist_group("keras_backends")
def test_noise_layers_on_jax_backend(backend_runs):
    require_module("jax")
    out = backend_runs("jax")["noise"]
    assert "OK noise jax" in out, out


NOISE_MIRRORED = TWO_CPUS + NOISE_MODEL + textwrap.dedent('''
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = build_noise_model()
        train_noise_model(model)
    assert "Mirrored" in type(model.get_layer("mog").confusion_logits.value).__name__
    print("OK noise mirrored")
''')


@pytest.mark.slow
@pytest.mark.parametrize("script, done", [(MIRRORED, "OK mirrored"),
                                          (NOISE_MIRRORED, "OK noise mirrored")],
                         ids=["crowd_layer", "noise_layers"])
def test_mirrored_strategy_on_two_logical_cpus(script, done):
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.distribute needs the tensorflow backend")
    assert done in _run(script, KERAS_BACKEND="tensorflow")
