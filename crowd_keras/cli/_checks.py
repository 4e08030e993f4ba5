"""Checks the command lines make before any work: numeric flags in range (argparse ``type=``
functions, so a bad value stops the parse with the flag's name) and output paths that are
neither an input nor another output (so a command never overwrites what it reads or writes
twice)."""
from __future__ import annotations

import argparse
import os
from typing import Callable, Iterable, Optional

from ..errors import CrowdDataError

__all__ = ["int_at_least", "dash_stream", "not_dash", "class_list", "check_paths",
           "one_reader_per_stream", "check_output_kinds", "report_files"]

#: The files a report command writes into its ``--out`` folder.
REPORT_FILES = ("report.html", "report.json")


def int_at_least(low: int, what: str = "") -> Callable[[str], int]:
    """An argparse ``type=``: an integer ``>= low``; argparse prefixes the flag to the message
    (``argument --retries: must be an integer >= 0, got '-1'``)."""

    def parse(text: str) -> int:
        try:
            value = int(str(text).strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer >= {low}{what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}{what}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {low}"  # argparse names the type in some messages
    return parse


def dash_stream(stream: str) -> Callable[[str], str]:
    """An argparse ``type=`` for a file: ``-`` as ``/dev/stdin`` or ``/dev/stdout``
    (``stream``), as Unix tools read it (``--out -`` wrote a file named ``-``, which a later
    ``-`` input then read in place of the pipe); any other path as given."""

    def parse(text: str) -> str:
        if text != "-":
            return text
        path = f"/dev/{stream}"
        if not os.path.exists(path):   # Windows
            raise argparse.ArgumentTypeError(
                f"'-' stands for the standard {'input' if stream == 'stdin' else 'output'}, "
                "which has no path on this system; give a file")
        return path

    parse.__name__ = "path"   # argparse names the type in some messages
    return parse


def not_dash(what: str) -> Callable[[str], str]:
    """An argparse ``type=`` for an output that cannot be a stream (a folder, two files):
    ``-`` is refused (it made a folder or file named ``-``), and an empty path."""

    def parse(text: str) -> str:
        if text == "-":
            raise argparse.ArgumentTypeError(f"'-' (the standard output) cannot take {what}; "
                                             "give a path")
        if not text.strip():   # else read as no output at all: nothing written, silently
            raise argparse.ArgumentTypeError(f"an empty path cannot take {what}; give a path")
        return text

    parse.__name__ = "path"
    return parse


def class_list(text: str) -> str:
    """An argparse ``type=`` for ``--classes A,B,...``: the text as given, once no name is
    empty or listed twice (a usage error, exit 2, before the file is read); the names are
    matched to the labels' type later."""
    names = [name.strip() for name in str(text).split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"an empty class name in {text!r}; give the classes separated by commas (e.g. "
            "--classes low,medium,high)")
    twice = next((name for n, name in enumerate(names) if name in names[:n]), None)
    if twice is not None:
        raise argparse.ArgumentTypeError(f"class {twice!r} is listed twice in {text!r}")
    return text


class_list.__name__ = "class list"   # argparse names the type in some messages


def _key(path: str) -> str:
    return os.path.normcase(os.path.realpath(os.path.abspath(os.path.expanduser(path))))


def _same(a: str, b: str) -> bool:
    if _key(a) == _key(b):  # one file after links are resolved (or not there yet)
        return True
    try:
        return os.path.samefile(a, b)  # hard links: two names, one file
    except OSError:
        return False


def check_paths(inputs: Iterable[tuple[str, Optional[str]]],
                outputs: Iterable[tuple[str, Optional[str]]]) -> None:
    """Raise :class:`~crowd_keras.errors.CrowdDataError` when an output path is an input path
    or another output path (after resolving symbolic links; hard links compared with
    ``os.path.samefile``). ``inputs``/``outputs``: ``(flag or argument name, path or None)``;
    ``None`` entries are skipped."""
    ins = [(name, str(p)) for name, p in inputs if p is not None]
    seen: list[tuple[str, str]] = []
    for name, path in ((n, str(p)) for n, p in outputs if p is not None):
        for in_name, in_path in ins:
            if _same(path, in_path):
                raise CrowdDataError(
                    f"{name} {path!r} is the same file as {in_name} {in_path!r}"
                    + ("" if path == in_path else f" (both are {_key(in_path)!r})")
                    + ": writing it would destroy the input; choose another path")
        for out_name, out_path in seen:
            if _same(path, out_path):
                raise CrowdDataError(f"{name} {path!r} and {out_name} {out_path!r} are the same "
                                     "file: one output would overwrite the other; choose two "
                                     "paths")
        seen.append((name, path))


def one_reader_per_stream(inputs: Iterable[tuple[str, Optional[str]]]) -> str:
    """The problem (``""`` for none) when two of ``inputs`` (``(flag or argument name, path
    or None)``) read one stream that is not a plain file (``-``: the standard input, a pipe):
    it can be read once, so the second read found it empty ("the file is empty")."""
    seen: list[tuple[str, str]] = []
    for name, path in ((n, str(p)) for n, p in inputs if p is not None):
        stream = os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)
        for other, other_path in seen if stream else ():
            if _same(path, other_path):
                return (f"{other} and {name} both read {other_path!r}, which can be read once; "
                        "give one of them a file")
        seen.append((name, path))
    return ""


def report_files(folder: Optional[str]) -> list[tuple[str, Optional[str]]]:
    """``(name, path)`` of the files a report writes into ``folder`` (none without a folder),
    for :func:`check_paths`: an input saved there as ``report.json`` must not be overwritten."""
    if folder is None:
        return []
    return [("the report file (in --out)", os.path.join(str(folder), name))
            for name in REPORT_FILES]


def check_output_kinds(files: Iterable[tuple[str, Optional[str]]] = (),
                       folders: Iterable[tuple[str, Optional[str]]] = ()) -> None:
    """Raise :class:`~crowd_keras.errors.CrowdDataError` before any work when an output file
    path is an existing folder or ends with a separator, an output folder path an existing
    file, or a file stands where a folder above either would be made (the write would
    otherwise fail only after the fit, perhaps after another output was written). ``(flag, path or None)`` pairs; None is
    skipped."""
    files, folders = list(files), list(folders)
    for name, path in files:
        if path is not None and os.path.isdir(path):
            raise CrowdDataError(f"{name} {str(path)!r} is a folder; give the path of a file "
                                 "to write")
        if path is not None and str(path).endswith(("/", os.sep)):   # a file would lose it
            raise CrowdDataError(f"{name} {str(path)!r} ends with a separator, so it names a "
                                 "folder; give the path of a file to write (in that folder: "
                                 "it is made when missing)")
    for name, path in folders:
        if path is not None and os.path.exists(path) and not os.path.isdir(path):
            raise CrowdDataError(f"{name} {str(path)!r} is a file; give a folder (it is "
                                 "created when missing)")
    for name, path in folders + files:   # a folder first: its flag is what the user typed
        blocker = None if path is None else _file_above(path)
        if blocker is not None:
            raise CrowdDataError(f"{name} {str(path)!r}: {blocker!r} is a file, so no folder "
                                 "can be made there; choose another path")


def _file_above(path: str) -> Optional[str]:
    """The nearest existing path above ``path`` when it is a file, not a folder, else None."""
    parent = os.path.dirname(os.path.abspath(os.path.expanduser(str(path))))
    while not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            return None
        parent = up
    return None if os.path.isdir(parent) else parent
