"""Label models: infer true labels from the annotations alone (or with item features).

Every model here has the surface of :class:`LabelModel` and is found by name through the
registry (:func:`get_label_model`). The models of the layer families live with their
family and are re-exported here, imported on first use: :class:`CommonNoiseModel`
(``crowd_keras.conal``), :class:`MixtureOfGroupsModel` (``crowd_keras.mixture_of_groups``)
and :class:`LIA` (``crowd_keras.lia``; it trains Keras networks, and importing this package
never imports Keras).
"""
from __future__ import annotations

import importlib
from typing import Any

from .abstain_dawid_skene import AbstainAwareDawidSkene
from .auto import AutoLabelModel
from .base import LabelModel, as_annotations
from .bayesian import BWA, EBCC, IBCC
from .dawid_skene import DawidSkene, OneCoinDawidSkene
from .glad import GLAD
from .mace import MACE
from .majority_vote import CalibratedVote, MajorityVote, TieBrokenVote
from .registry import (available_label_models, get_label_model, label_model_class,
                       register_label_model)

__all__ = ["LabelModel", "as_annotations", "AutoLabelModel", "MajorityVote", "TieBrokenVote",
           "CalibratedVote", "DawidSkene", "OneCoinDawidSkene", "GLAD", "MACE",
           "AbstainAwareDawidSkene", "IBCC", "EBCC", "BWA",
           "CommonNoiseModel", "MixtureOfGroupsModel", "LIA", "counts_to_annotations",
           "register_label_model", "get_label_model", "label_model_class",
           "available_label_models"]

# The family models import this package's base module, so they are re-exported lazily
# (PEP 562): an eager import here would be an import cycle.
_LAZY = {"CommonNoiseModel": "crowd_keras.conal.label_model",
         "MixtureOfGroupsModel": "crowd_keras.mixture_of_groups.label_model",
         "counts_to_annotations": "crowd_keras.mixture_of_groups.label_model"}
# Models of higher layers, re-exported through the registry (which their own layer fills):
# this package names no module above it.
_FROM_REGISTRY = {"LIA": "lia"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _FROM_REGISTRY:
        return label_model_class(_FROM_REGISTRY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(__all__)
