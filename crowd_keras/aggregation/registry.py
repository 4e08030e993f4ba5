"""Label models by name, for the CLI and the integrations (``method="dawid_skene"``)."""
from __future__ import annotations

from typing import Any, Callable, Dict

from .base import LabelModel

__all__ = ["register_label_model", "get_label_model", "available_label_models"]

_REGISTRY: Dict[str, Callable[..., LabelModel]] = {}
_PRIMARY: Dict[str, None] = {}  # names given first, in registration order (no aliases)


def register_label_model(name: str, factory: Callable[..., LabelModel], *aliases: str) -> None:
    """Make ``factory(**kwargs)`` available as ``get_label_model(name, **kwargs)``."""
    for key in (name, *aliases):
        _REGISTRY[key.lower().replace("-", "_")] = factory
    _PRIMARY[name.lower().replace("-", "_")] = None


def get_label_model(name: str, **kwargs: Any) -> LabelModel:
    """A new, unfitted label model; ``name`` as in :func:`available_label_models`."""
    key = name.lower().replace("-", "_")
    if key not in _REGISTRY:
        raise ValueError(f"unknown label model {name!r}; available: {available_label_models()}")
    return _REGISTRY[key](**kwargs)


def available_label_models(aliases: bool = True) -> list:
    """Registered names, sorted; ``aliases=False``: one name per model, in registration order."""
    return sorted(_REGISTRY) if aliases else list(_PRIMARY)
