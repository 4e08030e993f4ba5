"""The lazy-registry helper (``crowd_keras.registry``) and the messages that name Python
arguments (``crowd_keras.errors.Message``), which the command lines render as flags."""
from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from crowd_keras.cli._common import FLAGS, cli_words
from crowd_keras.errors import Argument, CrowdDataError, Message
from crowd_keras.registry import LazyRegistry

ROOT = Path(__file__).resolve().parents[1]


def test_lazy_entries_resolve_on_first_use_with_aliases():
    reg = LazyRegistry("widget")
    reg.register("Fraction-Type", "fractions:Fraction", "frac", "F")
    reg.register("dict", dict)
    assert reg.names() == ["fraction_type", "dict"]
    assert list(reg) == reg.names() and len(reg) == 2
    assert reg.names(aliases=True) == ["dict", "f", "frac", "fraction_type"]
    assert reg.factory("FRAC") == "fractions:Fraction"   # still a string: nothing imported
    assert reg.create("f", numerator=3, denominator=6) == 0.5
    assert reg.primary(" Fraction-type ") == "fraction_type" and "frac" in reg
    assert reg.aliases_of("fraction_type") == ["f", "frac"] and reg.aliases_of("dict") == []
    with pytest.raises(ValueError, match=r"unknown widget 'nope'; available: \['fraction_type'"):
        reg.resolve("nope")


@pytest.mark.parametrize("factory, error", [("fractions.Fraction", ValueError),
                                            (":Fraction", ValueError), (3, TypeError)])
def test_bad_factories_are_refused_when_registered(factory, error):
    with pytest.raises(error):
        LazyRegistry("widget").register("x", factory)


def test_snapshot_and_restore_undo_registrations():
    reg = LazyRegistry("widget")
    reg.register("a", dict)
    saved = reg.snapshot()
    reg.register("b", list, "bee")
    reg.register("a", set)
    reg.restore(saved)
    assert reg.items() == [("a", dict)] and "bee" not in reg


def test_dask_strategies_are_a_lazy_registry_the_fixture_restores():
    """``distributed.methods.METHODS`` is a LazyRegistry: a lazy path is checked for its
    form and not imported when registered; conftest's fixture undoes the registration."""
    pytest.importorskip("dask")
    from crowd_keras.distributed.methods import METHODS, register_method, supported_methods

    assert isinstance(METHODS, LazyRegistry) and "dawid_skene" in supported_methods()
    register_method("Toy-Strategy", "no_such_package.toy:ToyMethod")
    assert supported_methods()[-1] == "toy_strategy"
    assert METHODS.factory("toy-strategy") == "no_such_package.toy:ToyMethod"
    with pytest.raises(ValueError, match="module:Attribute"):
        register_method("broken", "no_colon_here")


def test_the_fixture_removed_the_toy_strategy():
    pytest.importorskip("dask")
    from crowd_keras.distributed.methods import supported_methods

    assert "toy_strategy" not in supported_methods()


def test_discovery_finds_the_families_registrations_without_naming_them():
    """A fresh process that imports only the label-model registry lists LIA (registered by
    crowd_keras/lia/registration.py) without importing LIA's module or Keras."""
    code = ("import sys\nfrom crowd_keras.aggregation.registry import LABEL_MODELS\n"
            "print(LABEL_MODELS.names()[-1], 'crowd_keras.lia.registration' in sys.modules,"
            " 'crowd_keras.lia.label_model' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["lia", "True", "False", "False"]


def test_messages_read_as_python_and_render_as_flags():
    msg = Message("{where}: pass {fix} (or {other}), or {flag} or {name}; not {keep}",
                  where="row {3}", fix=Argument("duplicates", "last"),
                  other=Argument("multiple", "skip"), flag=Argument("include_gold", True),
                  name=Argument("to_name"), keep=Argument("api_key"))
    assert msg == ("row {3}: pass duplicates='last' (or multiple='skip'), or include_gold=True "
                   "or to_name=; not api_key=")
    exc = CrowdDataError(msg)
    assert cli_words(exc) == ("row {3}: pass --duplicates last (or --multiple skip), or "
                              "--include-gold or --to-name; not api_key=")
    assert cli_words(pickle.loads(pickle.dumps(exc))) == cli_words(exc)
    assert cli_words("multiple='skip' in plain text stays") == "multiple='skip' in plain text stays"
    assert set(FLAGS.values()) >= {"--multiple", "--duplicates", "--to-name", "--control"}


@pytest.mark.parametrize("name, aliases, error, message", [
    (None, (), TypeError, "widget names must be strings, got NoneType None"),
    (" ", (), ValueError, "widget names must not be empty, got ' '"),
    ("x", ("",), ValueError, "must not be empty"),
    ("x", ("Dict",), ValueError, "alias 'Dict' of widget 'x' is the name of another widget")])
def test_bad_names_are_refused_when_registered(name, aliases, error, message):
    """No entry under ``"none"`` or ``""``; an alias may not take another entry's name (that
    entry would stay listed but answer as the new one)."""
    reg = LazyRegistry("widget")
    reg.register("dict", dict, "d")
    with pytest.raises(error, match=message):
        reg.register(name, list, *aliases)
    assert reg.items() == [("dict", dict)] and reg.create("dict") == {}
    reg.register("x", list, "d")                  # another entry's alias is replaced
    reg.register("dict", set)                     # and so is a name registered again
    assert reg.resolve("d") is list and reg.resolve("dict") is set


def test_a_lazy_path_that_does_not_import_names_the_entry():
    reg = LazyRegistry("widget")
    reg.register("gone", "no_such_package.sub:Thing", "g")
    reg.register("typo", "fractions:Fractoin")
    with pytest.raises(ModuleNotFoundError, match=r"^widget 'gone' is registered as "
                                                  r"'no_such_package.sub:Thing', but there is "
                                                  r"no module 'no_such_package'$"):
        reg.resolve("g")
    with pytest.raises(ImportError, match=r"^widget 'typo' is registered as "
                                          r"'fractions:Fractoin', but module 'fractions' has "
                                          r"no attribute 'Fractoin'$"):
        reg.create("typo")


def test_a_name_registered_before_discovery_is_not_replaced_by_it():
    """Discovery runs at the first lookup: a user's ``register_label_model("lia", ...)``
    made before it was silently replaced by LIA's own registration (found on disk)."""
    code = ("from crowd_keras.aggregation.registry import register_label_model, "
            "label_model_class\n"
            "register_label_model('lia', dict)\n"
            "print(label_model_class('lia') is dict, label_model_class('difficulty_competence')"
            " is dict)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
