"""What both command lines share: the help formatter (every default shown), the ``--method``
option fed by the one registry, ``--quiet``/``--debug``, and library messages in CLI words
(``--to-name``, not ``to_name=``): the one table :data:`FLAGS` renders the
:class:`~crowd_keras.errors.Argument` fields of a :class:`~crowd_keras.errors.Message`."""
from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sys
import traceback
from typing import Any, Callable, Optional, Sequence

from ..aggregation.auto import TARGET_PRIORS
from ..aggregation.registry import DEFAULT_LABEL_MODEL, LABEL_MODELS, available_label_models
from ..errors import Argument, CrowdDataError, Message
from ..files import standard_stream

__all__ = ["CommandParser", "HelpFormatter", "add_method_option", "common_options", "cli_words",
           "run_handler", "method_choices", "closest", "label_model_name", "registry_name",
           "UsageError", "FLAGS"]


class UsageError(CrowdDataError):
    """Flags that cannot go together (found after parsing): exit code 2, as argparse's own."""


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose commands refuse an unknown option themselves: with their own
    usage and name and the closest option (argparse left it to the top parser, which printed
    ``usage: crowd-keras [-h] [--version] COMMAND ...``, none of the command's options)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:   # a command: nothing after it to take them
            # compared without the dashes, which every option shares
            options = {o.lstrip("-"): o for a in self._actions for o in a.option_strings
                       if o.startswith("--")}
            near = [closest(e.lstrip("-"), options) if e.startswith("-") else None
                    for e in extras]
            hints = [f"{e} (did you mean {options[n]}?)" if n else e
                     for e, n in zip(extras, near)]
            self.error(f"unrecognized arguments: {' '.join(hints)}")
        return parsed, extras


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows ``(default: X)`` after every option that has a default other than None/False."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" not in text and "default:" not in text and action.option_strings
                and default is not None and default is not False   # 0 == False: a seed 0 shows
                and default != argparse.SUPPRESS and not isinstance(
                    action, (argparse._HelpAction, argparse._VersionAction))):
            text += " (default: %(default)s)"
        return text


def method_choices() -> str:
    """The registry's label models, one per line of help: ``name (aliases: a, b)``."""
    primary = available_label_models(aliases=False)
    parts = []
    for name in primary:
        aliases = LABEL_MODELS.aliases_of(name)
        parts.append(name + (f" (alias {', '.join(aliases)})" if aliases else ""))
    return "; ".join(parts)


def closest(name: Any, names: Any) -> Optional[str]:
    """The one of ``names`` closest to a mistyped ``name`` (case and '-'/'_' ignored), or None
    when none is close."""
    def key(text: Any) -> str:
        return str(text).strip().lower().replace("-", "_")

    names = [str(n) for n in names]
    by_key = {key(n): n for n in reversed(names)}   # the first of names with one key wins
    found = difflib.get_close_matches(key(name), list(by_key), n=1, cutoff=0.6)
    return by_key[found[0]] if found else None


def registry_name(registry: Any, what: str) -> Callable[[str], str]:
    """An argparse ``type=`` for a name of ``registry``: any alias (case and '-' ignored) as
    its primary name; a typo names the closest."""
    def name(value: str) -> str:
        if value not in registry:
            primary = registry.names()
            aliases = [a for a in registry.names(aliases=True) if a not in primary]
            near = closest(value, primary + aliases)
            raise argparse.ArgumentTypeError(
                f"unknown {what} {value!r}{f' (did you mean {near!r}?)' if near else ''}; "
                f"choose from {', '.join(primary)} (aliases: {', '.join(aliases)})")
        return registry.primary(value)
    name.__name__ = what.replace(" ", "_") + "_name"
    return name


#: ``--method``'s type: a registered label model as its primary name
label_model_name = registry_name(LABEL_MODELS, "label model")


class Given(argparse.Action):
    """Stores the option's value (as ``store``) and adds its dest to ``given_options`` on the
    namespace: a check can then refuse an option that the input makes meaningless even when
    it is given with its default value (:func:`given_options`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: Optional[str] = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.given_options = given_options(namespace) | {self.dest}


def given_options(args: argparse.Namespace) -> frozenset:
    """The dests of the :class:`Given` options on the command line."""
    return frozenset(getattr(args, "given_options", ()))


def add_method_option(parser: argparse.ArgumentParser, extra: str = "") -> None:
    """``--method NAME``: any name or alias of the registry (case and '-' ignored)."""
    parser.add_argument("--method", type=label_model_name, default=DEFAULT_LABEL_MODEL,
                        action=Given, metavar="NAME", choices=available_label_models(),
                        help=f"label model, from the registry: {method_choices()}{extra}")


def add_target_prior_option(parser: argparse.ArgumentParser, scope: str) -> None:
    """``--target-prior gold|uniform|learned``: ``AutoLabelModel(target_prior=...)`` (its own
    default when not given)."""
    parser.add_argument("--target-prior", choices=TARGET_PRIORS, default=None,
                        help="the class balance the labels are decided for: gold (the "
                             "default: the gold items' class mix, one extra item per class; "
                             "without gold every class alike, as voting decides), uniform "
                             "(every class alike) or learned (the crowd's own class balance, "
                             "for items drawn like the crowd's); " + scope)


def target_prior_problem(target_prior: Any, method: str, where: str = "",
                         other: str = "") -> str:
    """Why ``--target-prior`` cannot apply (it sets the default method's ``target_prior``),
    or "" when it can: given for ``--method method`` (or for ``other``, a thing named so)."""
    if not target_prior or (method == DEFAULT_LABEL_MODEL and not other):
        return ""
    return (f"--target-prior applies to --method {DEFAULT_LABEL_MODEL} (the default){where}, "
            f"not to {other or f'--method {method}'}")


def plain_values(values: Any) -> list:
    """``values`` as plain Python values (numpy scalars print as numbers, not np.int64(1))."""
    return [v.item() if hasattr(v, "item") else v for v in values]


def gold_held(model: Any) -> bool:
    """Whether ``model``'s fit held its gold items at their class in every E-step: not when a
    crowd model handed labeling-function votes over to the abstain-aware model, which it fits
    without the gold (the gold items are only reported at their class); the abstain-aware
    model fitted as the method holds them in either regime."""
    return getattr(model, "labeling_function_model_", None) is None


def gold_mix_note(model: Any, classes: Sequence) -> str:
    """A note when the labels were decided for the gold's class mix (``target_prior="gold"``)
    and a class has no gold item: gold that is not a sample of the items judged (e.g. checked
    positives only) then skews every label toward the gold's classes. ``""`` when the mix
    decided nothing: the winner's posteriors carry no class prior to replace (voting kept,
    ``target_prior_applied_`` False) and no choice by gold scored the candidates under it."""
    counts = getattr(model, "gold_class_counts_", None)
    target = getattr(model, "target_prior_", None)
    if counts is None or target is None or getattr(model, "target_prior", None) != "gold" \
            or not counts.sum() or counts.all():
        return ""
    # the labels are the same under any target then: --target-prior uniform would change none
    if not getattr(model, "target_prior_applied_", False) and \
            not getattr(model, "gold_accuracy_", None):
        return ""
    mix = ", ".join(f"{c!s} {n} ({t:.2f})" for c, n, t in zip(classes, counts, target))
    return (f"note: the labels are decided for the gold's class mix (gold items per class, "
            f"target share: {mix}), and some class has no gold item; if the gold is not a "
            "sample of the items the labels will be judged on (e.g. only checked items of one "
            "class), pass --target-prior uniform")


def common_options() -> argparse.ArgumentParser:
    """A parent parser with ``--quiet``, ``--debug`` and ``--verbose`` for every sub-command."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--quiet", action="store_true",
                        help="no progress output (bars or periodic lines on stderr)")
    parent.add_argument("--debug", action="store_true",
                        help="print the Python traceback when the command fails")
    parent.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up messages (hidden by default)")
    return parent


#: Python arguments of the library -> the command lines' flags (the one table).
FLAGS = {"control": "--control", "label_config": "--label-config", "to_name": "--to-name",
         "include_gold": "--include-gold", "multiple": "--multiple",
         "duplicates": "--duplicates", "format": "--format", "model_version": "--model-version",
         "on_existing": "--on-existing", "batch_size": "--batch-size", "text_key": "--text-key",
         "allow_data_mismatch": "--allow-data-mismatch", "controls": "--control NAME",
         "prune_stale": "--prune-stale",
         "level": "--level", "separator": "--separator", "scheme": "--scheme",
         "sequence_model": "--sequence-model", "method": "--method"}


def _flag(argument: Argument) -> str:
    flag = FLAGS.get(argument.name)
    if flag is None:   # an argument the command lines do not offer: Python's words
        return str(argument)
    if not argument.has_value or argument.value is True:
        return flag
    return f"{flag} {argument.value}"


def cli_words(message: Any) -> str:
    """A library message (a ``str``, or an exception) in command-line words: the
    :class:`~crowd_keras.errors.Argument` fields of a :class:`~crowd_keras.errors.Message`
    written as flags (``multiple='skip'`` -> ``--multiple skip``) from :data:`FLAGS`;
    any other text as it is."""
    if isinstance(message, BaseException):
        args = message.args
        message = args[0] if len(args) == 1 and isinstance(args[0], Message) else str(message)
    return message.render(_flag) if isinstance(message, Message) else str(message)


def run_handler(func: Callable[[argparse.Namespace], Any], args: argparse.Namespace,
                prog: str = "crowd-keras") -> int:
    """Run a sub-command; a failure prints one line (no traceback unless ``--debug``)."""
    # an output on the standard output (--out /dev/stdout, to pipe the labels on): the
    # command's own lines go to stderr, so that stdout carries the data only
    data_out = any(standard_stream(path) == 1 for path in
                   (getattr(args, "out", None), getattr(args, "annotators", None),
                    getattr(args, "annotators_json", None)) if path)
    try:
        with contextlib.redirect_stdout(sys.stderr) if data_out else contextlib.nullcontext():
            code = int(func(args) or 0)
        sys.stdout.flush()   # inside the try: a closed pipe surfaces here, not at exit
        return code
    except BrokenPipeError:
        # the reader of the output went away (`| head`): stop quietly, as Unix tools do; stdout
        # goes to the null device so that Python's own flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line
        if getattr(args, "debug", False):
            traceback.print_exc()
        if isinstance(exc, CrowdDataError):
            print(f"{prog}: error: {cli_words(exc)}", file=sys.stderr)
            if isinstance(exc, UsageError):
                return 2
        elif isinstance(exc, ImportError):
            print(f"{prog}: error: {cli_words(exc)}", file=sys.stderr)
            return 2
        elif isinstance(exc, OSError) and exc.filename and exc.strerror:
            # a file the system refused (a read-only folder, a full disk): as Unix tools say it
            print(f"{prog}: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        else:
            print(f"{prog}: error: {type(exc).__name__}: {cli_words(exc)}"
                  + ("" if getattr(args, "debug", False) else " (--debug shows the traceback)"),
                  file=sys.stderr)
        return 1
