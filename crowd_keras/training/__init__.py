"""Trainers: EM procedures around any Keras classifier, beyond a single ``fit``.

Each lives with its model family and is re-exported here: :class:`MixtureOfGroupsEM`
(``crowd_keras.mixture_of_groups.trainer``) and :class:`LIATrainer`
(``crowd_keras.lia.trainer``). Their ``predict_proba(x)`` is the trained classifier's class
distribution for inputs ``x`` (a label model's ``predict_proba`` is the posterior given
annotations instead; see :mod:`crowd_keras.aggregation.base`).
"""
from ..lia.trainer import LIATrainer
from ..mixture_of_groups.trainer import MixtureOfGroupsEM

__all__ = ["MixtureOfGroupsEM", "LIATrainer"]
