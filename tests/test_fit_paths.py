"""CrowdModel's fit / evaluate / predict input paths and callbacks, against what a plain
keras.Model does with the same arguments."""
import io

import numpy as np
import pytest

keras = pytest.importorskip("keras")

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
