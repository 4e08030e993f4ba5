"""The layers beyond the plain crowd layer (LIA's DifficultyCompetence, MixtureOfGroups,
CoNAL) and their trainers, as a Keras user adding them to a model meets them: the errors a
wrong combination or input gets, and what the trainers accept."""
import keras
import numpy as np
import pytest

from crowd_keras.layers import DifficultyCompetence
from crowd_keras.models import CrowdModel

N, D, K, A = 24, 5, 3, 4


def _classifier(k: int = K):
    return keras.Sequential([keras.Input((D,)), keras.layers.Dense(k, activation="softmax")])


def test_crowd_model_refuses_difficulty_competence_naming_the_trainer():
    """It is not a noise layer (it maps a representation to (batch, k, C, C) matrices): the
    model was made and then failed in the loss (TensorFlow), the call (JAX) or could not be
    built at all (torch)."""
    with pytest.raises(TypeError, match=r"DifficultyCompetence is not a CrowdModel noise "
                                         r"layer.*LIATrainer"):
        CrowdModel(_classifier(), DifficultyCompetence(K, num_annotators=A))
