"""The one registry of label models by name (``method="dawid_skene"``).

Used by :func:`get_label_model`, both command lines (their ``--method`` choices) and the
Snorkel adapter. A :class:`~crowd_keras.registry.LazyRegistry`: entries are lazy
``"module:Class"`` paths, so looking a name up imports only that model's module and the
registry imports no model (and no Keras). It names models of layer 2 only; a family whose
label model lives higher registers it from its own ``registration.py`` (LIA:
``crowd_keras/lia/registration.py``), found before the first lookup. Users add their own
with :func:`register_label_model`.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ..registry import Factory, LazyRegistry, normalize_name

__all__ = ["register_label_model", "get_label_model", "label_model_class",
           "available_label_models", "normalize_name", "DEFAULT_LABEL_MODEL", "LABEL_MODELS"]

#: The label model used when none is named: the command lines' ``--method`` default and the
#: Label Studio integration's model. The one place that names it.
DEFAULT_LABEL_MODEL = "auto"

#: Every label model by name (higher families add theirs from their ``registration.py``).
LABEL_MODELS = LazyRegistry("label model", discover=True)

# name: (factory, aliases), in the order the command lines list them.
_BUILTIN: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "auto": ("crowd_keras.aggregation.auto:AutoLabelModel", ("default",)),
    "majority_vote": ("crowd_keras.aggregation.majority_vote:MajorityVote", ("mv",)),
    "tie_broken_vote": ("crowd_keras.aggregation.majority_vote:TieBrokenVote", ()),
    "calibrated_vote": ("crowd_keras.aggregation.majority_vote:CalibratedVote", ()),
    "dawid_skene": ("crowd_keras.aggregation.dawid_skene:DawidSkene", ("ds",)),
    "one_coin_dawid_skene": ("crowd_keras.aggregation.dawid_skene:OneCoinDawidSkene",
                             ("one_coin", "one_coin_ds")),
    "glad": ("crowd_keras.aggregation.glad:GLAD", ()),
    "mace": ("crowd_keras.aggregation.mace:MACE", ()),
    "abstain_dawid_skene": ("crowd_keras.aggregation.abstain_dawid_skene:AbstainAwareDawidSkene",
                            ("abstain_ds",)),
    "conal": ("crowd_keras.conal.label_model:CommonNoiseModel", ("common_noise",)),
    "mixture_of_groups": ("crowd_keras.mixture_of_groups.label_model:MixtureOfGroupsModel",
                          ("mog", "cmm")),
    "ibcc": ("crowd_keras.aggregation.bayesian.ibcc:IBCC", ()),
    "ebcc": ("crowd_keras.aggregation.bayesian.ebcc:EBCC", ()),
    "bwa": ("crowd_keras.aggregation.bayesian.bwa:BWA", ()),
}


def register_label_model(name: str, factory: Factory, *aliases: str) -> None:
    """Make ``get_label_model(name, **kwargs)`` build ``factory(**kwargs)``.

    Args:
        name: the primary name (listed by :func:`available_label_models`).
        factory: a class or callable returning an unfitted label model, or a lazy
            ``"package.module:Class"`` path imported on first use.
        aliases: other names for the same model.
    """
    LABEL_MODELS.register(name, factory, *aliases)


def label_model_class(name: str) -> Callable[..., Any]:
    """The class (or factory) registered under ``name``, imported if needed."""
    return LABEL_MODELS.resolve(name)


def get_label_model(name: str, **kwargs: Any) -> Any:
    """A new, unfitted label model; ``name`` as in :func:`available_label_models`."""
    return LABEL_MODELS.create(name, **kwargs)


def available_label_models(aliases: bool = True) -> List[str]:
    """Registered names: sorted, with aliases; ``aliases=False``: one per model, in order."""
    return LABEL_MODELS.names(aliases=aliases)


for _name, (_path, _aliases) in _BUILTIN.items():
    register_label_model(_name, _path, *_aliases)
