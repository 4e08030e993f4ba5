"""CrowdModel defects found by review: new Annotations matched by id after a reload and in
evaluate; warm-up validation scored as saved; the annotator count, sample weights and the
dataset's padding slots checked before training."""
from __future__ import annotations

import os

import keras
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.datasets import simulate_crowd
from crowd_keras.inputs import annotation_dataset
from crowd_keras.layers import CrowdLayer
from crowd_keras.models import CrowdModel


def _classifier(k=3):
    return keras.Sequential([keras.Input((10,)), keras.layers.Dense(k, activation="softmax")])


@pytest.fixture(scope="module")
def named():
    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, seed=1)
    a = sim.annotations
    frame = pd.DataFrame({"item": a.items, "worker": [f"w{c}" for c in a.annotators],
                          "label": a.labels})
    return sim.x, frame, Annotations.from_frame(frame, item="item", annotator="worker",
                                                label="label")


def test_new_annotations_match_by_id_after_a_reload_and_in_evaluate(named, tmp_path):
    x, frame, ann = named
    keras.utils.set_random_seed(0)
    model = CrowdModel(_classifier(), CrowdLayer(6, "MW", init_scale=3.0))
    model.compile(keras.optimizers.Adam(5e-2))
    model.fit(x, ann, epochs=2, batch_size=16, verbose=0)
    new = Annotations.from_frame(frame[frame.worker.isin(["w3", "w4", "w5"])], item="item",
                                 annotator="worker", label="label")
    rows = np.searchsorted(ann.item_ids, new.item_ids)
    ids, labels = new.to_padded()
    by_id = (np.where(ids >= 0, ids + 3, -1), labels)      # w3..w5 are the fit's codes 3..5
    expected = model.predict_proba_items(x[rows], by_id)
    np.testing.assert_allclose(model.predict_proba_items(x[rows], new), expected, atol=1e-6)
    # evaluate read them by their own codes (w3..w5 as w0..w2)
    assert model.evaluate(x[rows], new, verbose=0) == pytest.approx(
        model.evaluate(x[rows], by_id, verbose=0), rel=1e-6)
    path = os.path.join(tmp_path, "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    # after loading, the fit's ids were lost and the codes read as given
    np.testing.assert_allclose(loaded.predict_proba_items(x[rows], new), expected, atol=1e-6)
    with pytest.raises(CrowdDataError, match="annotator 'w9' is not one of the fitted"):
        loaded.predict_proba_items(x[:1], Annotations.from_frame(pd.DataFrame(
            {"task": [0], "worker": ["w9"], "label": [0]})))


def test_warmup_validation_scores_the_model_as_it_is_saved(tmp_path):
    keras.utils.set_random_seed(0)
    sim = simulate_crowd(n_items=150, n_classes=3, n_annotators=6, seed=1)
    ann = sim.annotations
    train, valid = ann.subset(np.arange(100)), ann.subset(np.arange(100, 150))
    model = CrowdModel(_classifier(), CrowdLayer(6, "MW"), warmup_epochs=2)
    model.compile(keras.optimizers.Adam(1e-2))
    save = keras.callbacks.ModelCheckpoint(os.path.join(tmp_path, "e{epoch}.keras"))
    history = model.fit(sim.x[:100], train, validation_data=(sim.x[100:], valid), epochs=3,
                        batch_size=32, verbose=0, callbacks=[save])
    for epoch in range(3):     # the warm-up epochs' val_loss was the bypassed model's
        saved = keras.saving.load_model(os.path.join(tmp_path, f"e{epoch + 1}.keras"))
        assert history.history["val_loss"][epoch] == pytest.approx(
            saved.evaluate(sim.x[100:], valid, verbose=0), rel=1e-5), epoch


def test_more_annotators_than_the_layer_and_bad_sample_weights_are_refused_before_training():
    sim = simulate_crowd(n_items=40, n_classes=3, n_annotators=5, seed=2)
    a = sim.annotations
    wide = Annotations(a.items, a.annotators, a.labels, annotator_ids=list(range(7)),
                       classes=a.classes)
    model = CrowdModel(_classifier(), CrowdLayer(5, "MW"))
    model.compile("adam")
    with pytest.raises(CrowdDataError, match="annotations have 7 annotators but the noise layer "
                                             "has num_annotators=5"):
        model.fit(sim.x, wide, epochs=1, verbose=0)   # trained, then failed in the summary
    assert float(keras.ops.convert_to_numpy(model.epochs_trained)) == 0
    weights = np.ones(40)
    weights[7] = np.nan
    for call in (lambda: model.fit(sim.x, a, sample_weight=weights, epochs=1, verbose=0),
                 lambda: model.evaluate(sim.x, a, sample_weight=weights, verbose=0)):
        with pytest.raises(CrowdDataError, match=r"sample_weight nan at row 7 is not a finite "
                                                 r"number >= 0"):
            call()                                    # NaN weights, then "posteriors" blamed
    with pytest.raises(CrowdDataError, match=r"sample_weight -1.0 at row 0"):
        model.train_on_batch(sim.x[:4], a.subset(np.arange(4)), sample_weight=-np.ones(4))


def test_annotation_dataset_refuses_a_label_in_a_padding_slot_and_other_widths():
    pytest.importorskip("tensorflow")
    x = np.zeros((3, 10), np.float32)
    ids = np.array([[0, 1, -1]] * 3)
    labels = np.array([[0, 1, 2]] * 3)
    with pytest.raises(CrowdDataError, match=r"annotation_dataset: label 2 at \(0, 2\) is in a "
                                             r"padding slot"):
        annotation_dataset(x, (ids, labels), batch_size=2, num_annotators=2, num_classes=3)
    with pytest.raises(CrowdDataError, match=r"annotator_ids must be \(items, k\) and labels "
                                             r"\(items, \[time,\] k\)"):
        annotation_dataset(x, (ids, labels[:, :2]), batch_size=2, num_annotators=2,
                           num_classes=3)
