"""Keras layers that model annotators on top of a classifier (this package imports Keras).

Each layer lives with its model family and is re-exported here: ``crowd_keras.crowd_layer``
(:class:`CrowdLayer`, :class:`CrowdRegressionLayer`), ``crowd_keras.conal``
(:class:`AnnotatorGate`, :class:`CommonNoiseAdaptation`), ``crowd_keras.mixture_of_groups``
(:class:`MixtureOfGroups`) and ``crowd_keras.lia`` (:class:`DifficultyCompetence`).

Importing this package also registers the package's losses, metrics, optimizer and
regularizers with Keras' serialization: Keras imports no module of a custom object when it
loads a ``.keras`` file, so ``import crowd_keras.layers`` is all a fresh process needs before
``keras.saving.load_model`` of a model built from these layers (``crowd_keras.models`` for a
saved ``CrowdModel``).
"""
from ..conal.layers import AnnotatorGate, CommonNoiseAdaptation
from ..crowd_layer.layers import CrowdLayer
from ..crowd_layer.regression import CrowdRegressionLayer
from ..lia.layers import DifficultyCompetence
from ..mixture_of_groups.layers import MixtureOfGroups
# registered for keras.saving.load_model (a compiled model's losses, metrics, LazyAdam,
# regularizers)
from .. import losses, metrics, optimizers, regularizers  # noqa: F401,E402
from ..lia import losses as lia_losses  # noqa: F401,E402

__all__ = ["CrowdLayer", "CrowdRegressionLayer", "AnnotatorGate", "CommonNoiseAdaptation",
           "MixtureOfGroups", "DifficultyCompetence"]
