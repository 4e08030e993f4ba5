"""Lazy registries of factories by name: the one helper behind every ``get_*(name)`` lookup.

A :class:`LazyRegistry` maps names (and aliases) to factories: a class or callable, or a lazy
``"package.module:Attribute"`` path imported on first use, so a registry imports none of
the modules it lists (no Keras, no import cycle with the models it names).

Layering: a registry names only modules of its own layer or below. A family whose factory
lives in a higher layer registers itself from a module of that layer, ``registration.py``
in the family's package (for example ``crowd_keras/lia/registration.py`` registers LIA, a
layer-4 model, into the layer-2 label-model registry). Registries made with
``discover=True`` import every ``crowd_keras/<package>/registration.py`` once, before their
first lookup or listing, so ``get_label_model("lia")`` works for a user who imported only
``crowd_keras.aggregation``. Registration modules must stay cheap: they import a registry
and register lazy paths, nothing else.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Union

__all__ = ["LazyRegistry", "Factory", "normalize_name", "resolve_factory",
           "discover_registrations", "REGISTRATION_MODULE"]

#: A class or callable, or a lazy ``"package.module:Attribute"`` path.
Factory = Union[str, Callable[..., Any]]

#: The module name a package registers its factories from (see the module docstring).
REGISTRATION_MODULE = "registration"

_discovered = False
_discovering = False   # True while discover_registrations imports the registration modules


def normalize_name(name: str) -> str:
    """Registry key of a name: stripped, lower case, ``-`` as ``_``."""
    return str(name).strip().lower().replace("-", "_")


def resolve_factory(factory: Factory, entry: str = "") -> Callable[..., Any]:
    """The callable of a factory: imports ``"module:Attribute"`` paths, returns others as given.

    A path whose module or attribute does not exist raises ``ImportError`` naming the path and
    ``entry`` (what is registered under it, e.g. ``"label model 'mine'"``); an error raised
    while the module itself imports (a missing dependency of it) passes unchanged."""
    if not isinstance(factory, str):
        return factory
    module, _, attr = factory.partition(":")
    where = f"{entry} is registered as {factory!r}" if entry else f"lazy factory {factory!r}"
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
            raise
        raise ModuleNotFoundError(f"{where}, but there is no module {exc.name!r}",
                                  name=exc.name) from None
    if not hasattr(loaded, attr):
        raise ImportError(f"{where}, but module {module!r} has no attribute {attr!r}",
                          name=module)
    return getattr(loaded, attr)


def discover_registrations() -> None:
    """Import ``crowd_keras.<package>.registration`` for every direct sub-package that has one,
    in name order, once per process (the registry entries of higher layers). A name that was
    registered before discovery keeps its entry (see :meth:`LazyRegistry.register`)."""
    global _discovered, _discovering
    if _discovered:
        return
    _discovered = True   # first: a registration module may itself look a name up
    root = Path(__file__).resolve().parent
    _discovering = True
    try:
        for package in pkgutil.iter_modules([str(root)]):
            if not package.ispkg:
                continue
            found = pkgutil.iter_modules([str(root / package.name)])
            if any(m.name == REGISTRATION_MODULE and not m.ispkg for m in found):
                importlib.import_module(f"{__package__}.{package.name}.{REGISTRATION_MODULE}")
    finally:
        _discovering = False


class LazyRegistry:
    """Names (and aliases) to lazy factories, in registration order.

    Args:
        kind: what is registered, for error messages (``"label model"``).
        discover: run :func:`discover_registrations` before the first lookup or listing.

    ``register(name, factory, *aliases)`` (a name registered again is replaced), then
    ``resolve(name)`` (the factory, imported), ``create(name, **kwargs)``, ``primary(name)``
    (the primary name of a name or alias; ``ValueError`` naming the registered ones when
    unknown), ``names()`` (also ``iter`` and ``len``), ``aliases_of(name)``, ``name in registry``,
    ``registry.normalize(name)``, and ``snapshot()`` / ``restore(snapshot)``.
    """

    def __init__(self, kind: str, *, discover: bool = False) -> None:
        self.kind = kind
        self.discover = bool(discover)
        self._factories: Dict[str, Factory] = {}   # primary name -> factory
        self._aliases: Dict[str, str] = {}         # any name (primary or alias) -> primary

    normalize = staticmethod(normalize_name)

    def register(self, name: str, factory: Factory, *aliases: str) -> None:
        """Register ``factory`` under ``name`` and ``aliases`` (lazy paths are checked for
        their ``"module:Attribute"`` form here, imported only when resolved). Names are
        non-empty strings; a name registered again is replaced, an alias that is another
        entry's name is refused. During :func:`discover_registrations` names registered
        before it are left as they are (a user's ``"lia"`` is not replaced by LIA's)."""
        if isinstance(factory, str) and (":" not in factory or factory.startswith(":")
                                         or factory.endswith(":")):
            raise ValueError(f"a lazy factory is 'module:Attribute', got {factory!r}")
        if not isinstance(factory, str) and not callable(factory):
            raise TypeError(f"factory for {self.kind} {name!r} must be callable or a "
                            f"'module:Attribute' string, got {type(factory).__name__}")
        for given in (name, *aliases):
            if not isinstance(given, str):
                raise TypeError(f"{self.kind} names must be strings, got "
                                f"{type(given).__name__} {given!r}")
            if not normalize_name(given):
                raise ValueError(f"{self.kind} names must not be empty, got {given!r}")
        key = normalize_name(name)
        if _discovering:
            # found on disk after a user registered this name first (discovery runs at the
            # first lookup): the user's entry stays, as if registered after the family's
            if key in self._aliases:
                if key in self._factories:
                    for alias in aliases:
                        self._aliases.setdefault(normalize_name(alias), key)
                return
            aliases = tuple(a for a in aliases if normalize_name(a) not in self._aliases)
        for alias in aliases:
            # the other entry would stay listed by names() but answer as this one
            other = normalize_name(alias)
            if other != key and other in self._factories:
                raise ValueError(f"alias {alias!r} of {self.kind} {name!r} is the name of "
                                 f"another {self.kind}; register {alias!r} itself to "
                                 "replace that one")
        self._factories[key] = factory
        for alias in (name, *aliases):
            self._aliases[normalize_name(alias)] = key

    def _ready(self) -> None:
        if self.discover:
            discover_registrations()

    def __contains__(self, name: object) -> bool:
        self._ready()
        return isinstance(name, str) and normalize_name(name) in self._aliases

    def __iter__(self):
        """The primary names, in registration order (as :meth:`names`)."""
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def primary(self, name: str) -> str:
        """The primary name of ``name`` (itself or an alias)."""
        self._ready()
        key = normalize_name(name)
        if key not in self._aliases:
            raise ValueError(f"unknown {self.kind} {name!r}; available: {self.names()}")
        return self._aliases[key]

    def factory(self, name: str) -> Factory:
        """The factory as registered (a lazy path stays a string)."""
        return self._factories[self.primary(name)]

    def resolve(self, name: str) -> Callable[..., Any]:
        """The factory registered under ``name``, imported if it is a lazy path."""
        return resolve_factory(self.factory(name), f"{self.kind} {self.primary(name)!r}")

    def create(self, name: str, **kwargs: Any) -> Any:
        """``resolve(name)(**kwargs)``."""
        return self.resolve(name)(**kwargs)

    def names(self, aliases: bool = False) -> List[str]:
        """Primary names in registration order; ``aliases=True``: every name, sorted."""
        self._ready()
        return sorted(self._aliases) if aliases else list(self._factories)

    def aliases_of(self, name: str) -> List[str]:
        """The other names of ``name``'s entry, sorted (its primary name excluded)."""
        key = self.primary(name)
        return sorted(a for a, p in self._aliases.items() if p == key and a != key)

    def snapshot(self) -> tuple:
        """The entries as they are now, for :meth:`restore` (tests that register)."""
        return dict(self._factories), dict(self._aliases)

    def restore(self, snapshot: tuple) -> None:
        """Put back the entries of a :meth:`snapshot`."""
        factories, aliases = snapshot
        self._factories.clear()
        self._factories.update(factories)
        self._aliases.clear()
        self._aliases.update(aliases)

    def items(self) -> List[tuple]:
        """``(primary name, factory as registered)`` pairs in registration order."""
        self._ready()
        return list(self._factories.items())
