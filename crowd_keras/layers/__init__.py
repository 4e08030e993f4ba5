"""Keras layers that model annotators on top of a classifier (this package imports Keras)."""
from .conal import AnnotatorGate, CommonNoiseAdaptation
from .crowd_layer import CrowdLayer
from .crowd_regression import CrowdRegressionLayer

__all__ = ["CrowdLayer", "CrowdRegressionLayer", "AnnotatorGate", "CommonNoiseAdaptation"]
