"""Layer inputs of the wrong shape refused by name (a review found two that passed): the
representation CoNAL's own gate turns into ω, and the LIA likelihood terms' three inputs."""
from __future__ import annotations

import keras
import numpy as np
import pytest

import crowd_keras.layers as layers
from crowd_keras.lia.layers import AnnotationLogLikelihoods


def test_common_noise_checks_the_representation_its_gate_reads():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=1).astype("float32")
    per_step = rng.normal(size=(1, 5, 6)).astype("float32")
    noise = layers.CommonNoiseAdaptation(4, 3, gate=layers.AnnotatorGate(4, 3))
    # flat probabilities with a per-step representation: ω (1, 5, 4) made a (1, 5, 4, 3)
    # output where compute_output_shape says (1, 4, 3)
    with pytest.raises(ValueError, match=r"omega of shape \(1, 5, 4\) does not match "
                                         r"probabilities of shape \(1, 3\)"):
        noise([probs, per_step])
    assert tuple(noise([probs, per_step[:, 0]]).shape) == (1, 4, 3)
    built = layers.AnnotatorGate(4, 3)
    built.build((None, 5))
    symbolic = layers.CommonNoiseAdaptation(4, 3, gate=built)
    with pytest.raises(ValueError, match=r"built for 5 features"):   # was refused in predict
        symbolic([keras.Input((3,)), keras.Input((4,))])


@pytest.mark.parametrize("labels_shape, h_width", [((2, 1), 3), ((2, 3), 3), ((2, 2), 4)])
def test_annotation_log_likelihoods_refuses_inputs_of_other_shapes(labels_shape, h_width):
    """Labels (2, 1) for two slots were broadcast over both on JAX and torch (no error)."""
    h = np.full((2, h_width), 1.0 / h_width, "float32")
    log_q = np.log(np.full((2, 2, 3, 3), 1 / 3, "float32"))
    labels = np.zeros(labels_shape, "int32")
    with pytest.raises(ValueError, match=r"AnnotationLogLikelihoods takes h \(batch, C\), log_q "
                                         r"\(batch, k, C, C\) and labels \(batch, k\)"):
        AnnotationLogLikelihoods()([h, log_q, labels])
    good = AnnotationLogLikelihoods()([np.full((2, 3), 1 / 3, "float32"), log_q,
                                       np.zeros((2, 2), "int32")])
    assert tuple(good.shape) == (2, 3, 3)
    with pytest.raises(ValueError, match="labels"):
        AnnotationLogLikelihoods().compute_output_shape([(None, 3), (None, 2, 3, 3), (None, 4)])


def test_new_annotators_features_are_checked_as_the_constructors_are():
    from crowd_keras.layers import DifficultyCompetence

    layer = DifficultyCompetence(num_classes=2, latent_dim=2,
                                 annotator_features=np.eye(3, 2, dtype="float32"))
    x = np.zeros((4, 5), "float32")
    layer(x)
    assert tuple(layer.confusions_for_features(x, np.ones((2, 2), "float32")).shape) == \
        (4, 2, 2, 2)
    # a NaN feature gave NaN confusions, a 1-d row one annotator, another width numpy's error
    for features, words in (([[0.5, np.nan]], r"must be finite, got nan at \(annotator 0, "
                                               r"feature 1\)"),
                            ([0.5, 0.5], r"must be \(annotators, features\)"),
                            ([[0.5, 0.5, 0.5]], r"3 features per annotator, the layer was "
                                                r"built with 2")):
        with pytest.raises(ValueError, match=words):
            layer.confusions_for_features(x, features)


def test_loss_weights_of_other_rows_or_per_slot_on_per_item_losses_are_named():
    """A weight of another row count was a backend's broadcast error in every loss; per-slot
    weights on the per-item LIA and mixture losses were broadcast by Keras' reduction."""
    from crowd_keras.lia.losses import ExpectedCompleteNLL, MarginalNLL
    from crowd_keras.losses import (LabelCountCrossEntropy, MaskedMultiCrossEntropy,
                                    MaskedMultiMSE)

    probs = np.full((2, 2, 3), 1 / 3, "float32")
    log_terms = np.log(np.full((2, 3, 3), 1 / 3, "float32"))
    cases = [(MaskedMultiCrossEntropy(from_logits=False), np.zeros((2, 2), "int32"), probs),
             (MaskedMultiMSE(), np.zeros((2, 2), "float32"), np.zeros((2, 2), "float32")),
             (LabelCountCrossEntropy(), np.ones((2, 3), "float32"),
              np.full((2, 3), 1 / 3, "float32")),
             (MarginalNLL(), np.zeros((2, 2), "int32"), log_terms),
             (ExpectedCompleteNLL(), np.full((2, 3), 1 / 3, "float32"), log_terms)]
    for loss, y_true, y_pred in cases:
        with pytest.raises(ValueError, match=r"sample_weight of shape \(3,\) does not have the "
                                             r"targets' 2 rows"):
            loss(y_true, y_pred, sample_weight=np.ones(3, "float32"))
        assert np.isfinite(float(loss(y_true, y_pred, sample_weight=np.ones(2, "float32"))))
    for loss, y_true, y_pred in cases[2:]:
        with pytest.raises(ValueError, match=r"sample_weight of shape \(2, \d\) is not per item"):
            loss(y_true, y_pred, sample_weight=np.ones((2, y_true.shape[1]), "float32"))


def test_mse_targets_that_are_not_numbers_are_named():
    from crowd_keras import CrowdDataError
    from crowd_keras.losses import MaskedMultiMSE

    with pytest.raises(CrowdDataError, match=r"masked_multi_mse y_true: answers must be numbers "
                                             r"with NaN where missing, got object values"):
        MaskedMultiMSE()(np.array([[1.0, None], [2.0, 3.0]], dtype=object),
                         np.zeros((2, 2), "float32"))
