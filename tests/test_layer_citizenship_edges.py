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

from crowd_keras.layers import (AnnotatorGate, CommonNoiseAdaptation, CrowdLayer,
                                DifficultyCompetence, MixtureOfGroups)
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
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": "tensorflow"}
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
