"""Keras layers that model annotators on top of a classifier (this package imports Keras)."""
from .conal import AnnotatorGate, CommonNoiseAdaptation
from .crowd_layer import CrowdLayer
from .crowd_regression import CrowdRegressionLayer
from .difficulty_competence import DifficultyCompetence
from .mixture_of_groups import MixtureOfGroups

__all__ = ["CrowdLayer", "CrowdRegressionLayer", "AnnotatorGate", "CommonNoiseAdaptation",
           "MixtureOfGroups", "DifficultyCompetence"]
