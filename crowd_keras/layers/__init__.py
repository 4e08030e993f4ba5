"""Keras layers that model annotators on top of a classifier (this package imports Keras).

Each layer lives with its model family and is re-exported here: ``crowd_keras.crowd_layer``
(:class:`CrowdLayer`, :class:`CrowdRegressionLayer`), ``crowd_keras.conal``
(:class:`AnnotatorGate`, :class:`CommonNoiseAdaptation`), ``crowd_keras.mixture_of_groups``
(:class:`MixtureOfGroups`) and ``crowd_keras.lia`` (:class:`DifficultyCompetence`).
"""
from ..conal.layers import AnnotatorGate, CommonNoiseAdaptation
from ..crowd_layer.layers import CrowdLayer
from ..crowd_layer.regression import CrowdRegressionLayer
from ..lia.layers import DifficultyCompetence
from ..mixture_of_groups.layers import MixtureOfGroups

__all__ = ["CrowdLayer", "CrowdRegressionLayer", "AnnotatorGate", "CommonNoiseAdaptation",
           "MixtureOfGroups", "DifficultyCompetence"]
