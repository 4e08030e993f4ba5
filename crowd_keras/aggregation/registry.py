"""The one registry of label models by name (``method="dawid_skene"``).

Used by :func:`get_label_model`, both command lines (their ``--method`` choices) and the
Snorkel adapter. Entries are lazy ``"module:Class"`` paths: looking a name up imports only
that model's module, so the registry imports no model (and no Keras) and has no import
cycle with the models it lists. Users add their own with :func:`register_label_model`.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Tuple, Union

__all__ = ["register_label_model", "get_label_model", "label_model_class",
           "available_label_models", "normalize_name", "DEFAULT_LABEL_MODEL"]

Factory = Union[str, Callable[..., Any]]

#: The label model used when none is named: the command lines' ``--method`` default and the
#: Label Studio integration's model. The one place that names it.
DEFAULT_LABEL_MODEL = "auto"

# name: (factory, aliases), in the order the command lines list them.
_BUILTIN: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "auto": ("crowd_keras.aggregation.auto:AutoLabelModel", ("default",)),
    "majority_vote": ("crowd_keras.aggregation.majority_vote:MajorityVote", ("mv",)),
    "tie_broken_vote": ("crowd_keras.aggregation.majority_vote:TieBrokenVote", ()),
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
    "lia": ("crowd_keras.lia.label_model:LIA", ("difficulty_competence",)),
    "ibcc": ("crowd_keras.aggregation.bayesian.ibcc:IBCC", ()),
    "ebcc": ("crowd_keras.aggregation.bayesian.ebcc:EBCC", ()),
    "bwa": ("crowd_keras.aggregation.bayesian.bwa:BWA", ()),
}

_FACTORIES: Dict[str, Factory] = {}   # primary name -> factory
_ALIASES: Dict[str, str] = {}         # any name (primary or alias) -> primary name


def normalize_name(name: str) -> str:
    """Registry key of a name: lower case, ``-`` as ``_``."""
    return str(name).strip().lower().replace("-", "_")


def register_label_model(name: str, factory: Factory, *aliases: str) -> None:
    """Make ``get_label_model(name, **kwargs)`` build ``factory(**kwargs)``.

    Args:
        name: the primary name (listed by :func:`available_label_models`).
        factory: a class or callable returning an unfitted label model, or a lazy
            ``"package.module:Class"`` path imported on first use.
        aliases: other names for the same model.
    """
    if isinstance(factory, str) and ":" not in factory:
        raise ValueError(f"a lazy factory is 'module:Class', got {factory!r}")
    key = normalize_name(name)
    _FACTORIES[key] = factory
    for alias in (name, *aliases):
        _ALIASES[normalize_name(alias)] = key


def _resolve(factory: Factory) -> Callable[..., Any]:
    if not isinstance(factory, str):
        return factory
    module, _, attr = factory.partition(":")
    return getattr(importlib.import_module(module), attr)


def _primary(name: str) -> str:
    key = normalize_name(name)
    if key not in _ALIASES:
        raise ValueError(f"unknown label model {name!r}; available: "
                         f"{available_label_models(aliases=False)}")
    return _ALIASES[key]


def label_model_class(name: str) -> Callable[..., Any]:
    """The class (or factory) registered under ``name``, imported if needed."""
    return _resolve(_FACTORIES[_primary(name)])


def get_label_model(name: str, **kwargs: Any) -> Any:
    """A new, unfitted label model; ``name`` as in :func:`available_label_models`."""
    return label_model_class(name)(**kwargs)


def available_label_models(aliases: bool = True) -> List[str]:
    """Registered names: sorted, with aliases; ``aliases=False``: one per model, in order."""
    return sorted(_ALIASES) if aliases else list(_FACTORIES)


for _name, (_path, _aliases) in _BUILTIN.items():
    register_label_model(_name, _path, *_aliases)
