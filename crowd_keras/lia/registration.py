"""LIA's entry in the label-model registry, registered from LIA's own layer.

LIA trains Keras networks (layer 4), so the layer-2 registry
(:mod:`crowd_keras.aggregation.registry`) does not name it; this module does, and the
registry imports it before its first lookup (:func:`crowd_keras.registry.discover_registrations`).
Importing it imports the registry only, never Keras.
"""
from __future__ import annotations

from ..aggregation.registry import register_label_model

__all__: list = []

register_label_model("lia", "crowd_keras.lia.label_model:LIA", "difficulty_competence")
