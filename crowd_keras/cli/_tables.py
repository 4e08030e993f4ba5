"""How ``aggregate`` and ``agree`` read a CSV/TSV a user made: once (a pipe too), ids as
written, only an empty field missing, and every fault named by the file's line and the flag of
its column (``--item``, ``--annotator``, ``--label``)."""
from __future__ import annotations

import argparse
import io
import os
import re
from typing import Any, Iterator, Sequence

from ..errors import CrowdDataError
from ._common import cli_words, closest

__all__ = ["read_table", "line_of", "check_columns", "check_spacing", "frame_error",
           "each_plain_integer", "each_number", "COLUMN_FLAGS"]


#: the bytes of inputs that are not plain files (a pipe, ``<(...)``, /dev/stdin): they can be
#: read once only, and line numbers, the header and words read as missing read them again
_PIPED: dict = {}


def _keep_piped(path: str) -> None:
    """Read an input that is not a plain file into :data:`_PIPED` (a plain file: dropped from
    it, so a name used again is read again)."""
    _PIPED.pop(str(path), None)
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        with open(path, "rb") as fh:
            _PIPED[str(path)] = fh.read()


def _open(path: str, mode: str = "r") -> Any:
    """``path`` opened for reading: text (UTF-8, a byte-order mark skipped, line ends kept
    for the csv module) or bytes (``mode="rb"``), from :data:`_PIPED` for a pipe."""
    data = _PIPED.get(str(path))
    if data is None:
        return open(path, "rb") if mode == "rb" else \
            open(path, newline="", encoding="utf-8-sig")
    stream = io.BytesIO(data)
    return stream if mode == "rb" else io.TextIOWrapper(stream, encoding="utf-8-sig",
                                                        newline="")


def read_table(path: str, label: str, string_labels: bool, ids: Sequence[str] = (),
                int_ids: bool = True):
    """The table at ``path``; the ``ids`` columns are read as text (:func:`_plain_integers`
    when ``int_ids``), the ``label`` column too with ``string_labels``."""
    import warnings

    import pandas as pd

    dtype = {**{c: str for c in ids}, **({label: str} if string_labels else {})}
    try:
        # index_col=False: a row with one field too many must not turn the first column into
        # the index (every value would shift one column left, silently); low_memory=False:
        # a column's type is inferred from all its rows, not chunk by chunk (a big file's
        # labels were numbers up to row 262144 and text after one word further down)
        _keep_piped(path)
        sep = _separator(path)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(_open(path), sep=sep, dtype=dtype or None, index_col=False,
                             low_memory=False)
    except FileNotFoundError:
        raise CrowdDataError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise CrowdDataError(f"{path}: is a folder, not a file") from None
    except pd.errors.EmptyDataError:
        raise CrowdDataError(f"{path}: the file is empty (no header line)") from None
    except UnicodeDecodeError:
        raise CrowdDataError(f"{path}: {_not_utf8(path)}") from None
    except pd.errors.ParserWarning:
        raise CrowdDataError(f"{path}: {_long_row(path, sep)}") from None
    except pd.errors.ParserError as exc:   # a long row after the first: the same words
        if "EOF inside string" in str(exc):   # pandas' "row N" counted from the header
            raise CrowdDataError(f"{path}: {_open_quote(path, sep)}") from None
        long_row = _long_row(path, sep)
        raise CrowdDataError(f"{path}: {long_row}" if long_row != _NO_LONG_ROW
                             else f"cannot read {path}: {str(exc).strip()}") from None
    except (OSError, ValueError) as exc:
        raise CrowdDataError(f"cannot read {path}: {str(exc).strip()}") from None
    _words_as_written(path, sep, df, label, [*ids, *([label] if string_labels else [])])
    for column in ids if int_ids else ():
        if column in df.columns and df.columns.tolist().count(column) == 1:
            df[column] = _plain_integers(df[column])
    return df


def _words_as_written(path: str, sep: str, df: Any, label: str, text: Sequence[str]) -> None:
    """Put back, in place, the fields pandas read as missing that are words, not empty: an
    annotator ``NA`` or a class ``None`` is an id or label as written in the ``text`` columns
    and in a label column of text; in a numeric label column such a word is an error naming
    its line (only an empty field is missing in a file the command reads)."""
    import pandas as pd

    text_label = label in df.columns and not pd.api.types.is_numeric_dtype(df[label])
    columns = [c for c in dict.fromkeys([*text, label]) if c in df.columns
               and df[c].isna().any()]
    if not columns:
        return
    raw = pd.read_csv(_open(path), sep=sep, usecols=columns, dtype=str, keep_default_na=False,
                      na_values=[""], index_col=False)
    if len(raw) != len(df):   # pragma: no cover - one parser, one file: the same rows
        return
    for column in columns:
        words = df[column].isna().to_numpy() & raw[column].notna().to_numpy()
        if not words.any():
            continue
        if column in text or (column == label and text_label):
            df[column] = df[column].where(~words, raw[column])
        else:
            r = int(words.argmax())
            raise CrowdDataError(
                f"{path}: line {line_of(path)(r)}: the label {raw[column].iloc[r]!r} (column "
                f"{label!r}, --label) would be read as a missing value among numeric labels; "
                "leave the field empty for none, or --string-labels reads every label as text")


#: an integer written plainly: ``012``, ``12.0``, ``+12`` and ``-0`` would merge with another id
_PLAIN_INTEGER = r"0|-?[1-9][0-9]{0,17}"


def _plain_integers(column: Any) -> Any:
    """An id column read as text, as integers when every id is an integer written plainly
    (:data:`_PLAIN_INTEGER`), else the text."""
    given = column.dropna()
    if not given.str.fullmatch(_PLAIN_INTEGER).all():
        return column
    return column.astype("int64") if len(given) == len(column) else each_plain_integer(column)


def each_plain_integer(column: Any) -> Any:
    """An id column read as text with each id written plainly as an integer made an integer,
    the others (and missing ones) left as they are."""
    import pandas as pd

    plain = column.str.fullmatch(_PLAIN_INTEGER).fillna(False).to_numpy(dtype=bool)
    return pd.Series([int(v) if ok else v for v, ok in zip(column, plain)], index=column.index,
                     dtype=object)


def each_number(column: Any) -> Any:
    """A label column read as text because of some value: each value that reads as a number
    made that number, the others left as they are."""
    import pandas as pd

    numbers = pd.to_numeric(column, errors="coerce")
    return column.where(numbers.isna() | column.isna(), numbers).astype(object)


#: the first bytes of files that are no text table, and what to do with them
_NOT_TEXT = ((b"\x1f\x8b", "a gzip-compressed file", "decompress it first (gunzip)"),
             (b"PK\x03\x04", "a zip archive (as an Excel .xlsx workbook is)",
              "save the sheet as 'CSV UTF-8', or unzip the archive"),
             (b"\xd0\xcf\x11\xe0", "an Excel .xls workbook", "save the sheet as 'CSV UTF-8'"))


def _not_utf8(path: str) -> str:
    """Where a file stops being UTF-8 (error path: the file is read again as bytes)."""
    with _open(path, "rb") as fh:
        raw = fh.read()
    # a UTF-16 byte-order mark: "byte 0xff on line 1" named no cause the user could act on
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return ("UTF-16 text (Excel's 'Unicode Text'), not UTF-8: save it as 'CSV UTF-8' "
                "or convert it (iconv -f UTF-16 -t UTF-8)")
    # a workbook or a compressed file: "byte 0x8b on line 1 (save it as UTF-8)" named no cause
    for magic, kind, fix in _NOT_TEXT:
        if raw.startswith(magic):
            return f"{kind}, not CSV text: {fix}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        return f"not UTF-8 text: byte {raw[err.start]:#04x} on line {line} (save it as UTF-8)"
    return "not UTF-8 text"


def _separator(path: str) -> str:
    """Tabs for a .tsv/.tab name (ANSWERS.TSV too), commas for a .csv one; an input named
    without either (the standard input, a pipe, ``answers.txt``) has no name to go by, so
    its header line decides: tabs when it holds a tab and no comma. A pipe must be kept
    (:func:`_keep_piped`) before this reads its first line."""
    name = str(path).lower()
    if name.endswith((".tsv", ".tab")):
        return "\t"
    if name.endswith(".csv"):
        return ","
    try:
        with _open(path) as fh:
            head = fh.readline()
    except (OSError, UnicodeDecodeError):   # read_table names what is wrong with the file
        return ","
    return "\t" if "\t" in head and "," not in head else ","


def _records(path: str, sep: str) -> Iterator[tuple]:
    """``(first line, fields, blank)`` of each CSV record of the file; ``blank`` as pandas'
    ``skip_blank_lines``: an unquoted line of nothing but white space (``""`` is a row of
    empty fields, a record over several lines counts its lines)."""
    import csv

    with _open(path) as fh:
        raw: list = []

        def lines() -> Iterator[str]:
            for text in fh:
                raw.append(text)
                yield text

        reader, line = csv.reader(lines(), delimiter=sep), 0
        for row in reader:
            text = "".join(raw)
            raw.clear()
            yield line + 1, row, not text.strip()
            line = reader.line_num


def line_of(path: str) -> Any:
    """``row -> line``: the file line on which data row ``row`` starts (error path: the file
    is read again). Row r is line r + 2 only without blank lines (pandas skips them) and
    quoted line ends."""
    starts = [first for first, _, blank in _records(path, _separator(path)) if not blank]
    return lambda r: starts[r + 1] if r + 1 < len(starts) else r + 2


def _long_row(path: str, sep: str) -> str:
    """The first line with more fields than the header (error path)."""
    records = ((first, row) for first, row, blank in _records(path, sep) if not blank)
    width = len(next(records, (0, []))[1])
    for first, row in records:
        if len(row) > width:
            return f"line {first} has {len(row)} fields but the header has {width}"
    return _NO_LONG_ROW


_NO_LONG_ROW = "a line has more fields than the header"


def _open_quote(path: str, sep: str) -> str:
    """The line of the record whose quote is never closed (error path: the last record, which
    runs to the end of the file)."""
    first = None
    for first, _, _ in _records(path, sep):
        pass
    return (f"line {first}: a field starts with a quote (\") that is never closed, so the "
            "rest of the file would be one value; close the quote, or quote the whole value "
            "and double the quotes in it (\"\"\"big\" for \"big)")


#: "row N" of a library message, outside quoted values ('row 2' may be an item's id)
_ROW = re.compile(r"((?<!\w)'(?:[^'\\]|\\.)*'(?!\w)|(?<!\w)\"(?:[^\"\\]|\\.)*\"(?!\w))"
                  r"|\brow (\d+)\b")
COLUMN_FLAGS = {"item": "--item", "annotator": "--annotator", "label": "--label"}


def check_columns(path: str, df: Any, args: argparse.Namespace, roles: Sequence[str]) -> None:
    """Raise when a column named by ``--item``/``--annotator``/``--label`` (``roles``) is not
    in ``df``: each with its flag and the closest column, then the file's columns."""
    columns = [str(c) for c in df.columns]
    header = _header(path)
    for role in roles:
        name = getattr(args, role)
        where = [n for n, c in enumerate(header, 1) if c == name]
        if len(where) > 1:   # pandas reads the second as 'name.1': one of them would be lost
            raise CrowdDataError(f"{path}: column {name!r} ({COLUMN_FLAGS[role]}) is named "
                                 f"{len(where)} times in the header (columns "
                                 f"{', '.join(map(str, where))}); rename all but one")
    hint = _format_hint(path, columns)
    missing = []
    for role in roles:
        name = getattr(args, role)
        if name not in df.columns:
            near = None if hint else closest(name, columns)
            missing.append(f"{name!r} ({COLUMN_FLAGS[role]}"
                           f"{f'; did you mean {near!r}?' if near else ''})")
    if missing:
        raise CrowdDataError(f"{path}: no column {', '.join(missing)}; its columns are "
                             f"{list(df.columns)}{hint}")


def _is_text(column: Any) -> np.ndarray:
    """(rows,) bool: which values of ``column`` are ``str``. Tested once per distinct value,
    not per row (a Python call per annotation took a fifth of reading a million rows); a
    string dtype holds nothing else but missing values."""
    import numpy as np
    import pandas as pd

    if isinstance(column.dtype, pd.StringDtype):
        return column.notna().to_numpy()
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    if pd.api.types.infer_dtype(uniques, skipna=False) == "string":
        is_str = np.ones(len(uniques), bool)        # all str: no call per distinct value
    else:
        is_str = np.fromiter((isinstance(v, str) for v in uniques), bool, len(uniques))
    return np.append(is_str, False)[codes]      # code -1 (missing): the False appended


def check_spacing(path: str, df: Any, args: argparse.Namespace) -> None:
    """Raise when two values of an item, annotator or label column differ only in spaces
    around them (``cat`` and `` cat`` from ``t1, a, cat``): they would be two classes (two
    items, two annotators), silently."""
    import pandas as pd

    for role, flag in COLUMN_FLAGS.items():
        column = df[getattr(args, role)]
        if pd.api.types.is_numeric_dtype(column):
            continue
        text = column[_is_text(column)]
        if text.empty:
            continue
        stripped = text.str.strip()
        blank = (stripped == "").to_numpy()
        if blank.any():   # else "  " became an item (annotator, class) of its own, silently
            row = text.index[int(blank.argmax())]
            raise CrowdDataError(
                f"{path}: the {role} at line {line_of(path)(df.index.get_loc(row))} (column "
                f"{getattr(args, role)!r}, {flag}) is only spaces, {text[row]!r}: give it a "
                "value or remove the row")
        spaced = (stripped != text).to_numpy()
        if not spaced.any():
            continue
        first = pd.Series(text.index, index=text.to_numpy()).groupby(level=0).first()
        # a stripped value written two ways: ' cat' beside 'cat', or beside 'cat ' (no value
        # without spaces: they were two classes, silently)
        distinct = text.drop_duplicates()
        ways = distinct.str.strip().value_counts()
        clash = stripped[spaced].isin(ways.index[ways.to_numpy() > 1]).to_numpy()
        if clash.any():
            row = text.index[spaced][int(clash.argmax())]
            value = text[row]
            alike = distinct[(distinct.str.strip() == value.strip()).to_numpy()
                             & (distinct != value).to_numpy()]
            shown = value.strip() if value.strip() in first.index else alike.iloc[0]
            other = first[shown]
            line = line_of(path)
            raise CrowdDataError(
                f"{path}: the {role} {value!r} at line {line(df.index.get_loc(row))} and "
                f"{shown!r} at line {line(df.index.get_loc(other))} (column "
                f"{getattr(args, role)!r}, {flag}) differ only in spaces around them, so they "
                "would be two; remove the spaces (a CSV written 'a, b' keeps the space after "
                "the comma)")


def _header(path: str) -> list:
    """The column names of the file's header line, as written."""
    return next((row for _, row, blank in _records(path, _separator(path)) if not blank), [])


def _format_hint(path: str, columns: Sequence[str]) -> str:
    """Why a file's header may not be the table's (a JSON file, another separator), or ""."""
    if columns and columns[0].lstrip().startswith(("[", "{")):
        return " (this looks like JSON, not a CSV/TSV table)"
    sep = _separator(path)
    tsv = sep == "\t"
    named = str(path).lower().endswith((".csv", ".tsv", ".tab"))
    read = ("a .tsv/.tab file is read with tabs" if tsv else "a .csv file is read with commas"
            ) if named else f"read with {'tabs' if tsv else 'commas'} (its header line's)"
    fixes = {"\t": ("tabs", "name a tab-separated file .tsv"),
             ",": ("commas", "name a comma-separated file .csv"),
             ";": ("';'", "save it with " + ("tabs" if tsv else "commas")),
             "|": ("'|'", "save it with " + ("tabs" if tsv else "commas"))}
    for char, (name, fix) in fixes.items():
        if len(columns) == 1 and char != sep and char in columns[0]:
            return f" (the header is one column holding {name}: {read}; {fix})"
    return ""


def frame_error(exc: CrowdDataError, path: str, args: argparse.Namespace) -> CrowdDataError:
    """A frame error in the file's terms: rows as line numbers, columns with their flag."""
    line = line_of(path)
    text = _ROW.sub(lambda m: m.group(1) or f"line {line(int(m.group(2)))}", cli_words(exc))
    for role, flag in COLUMN_FLAGS.items():
        name = getattr(args, role)
        text = text.replace(f"column {name!r}", f"column {name!r} ({flag})")
    text = text.replace("frame has no column(s)", "no column(s)")
    text = text.replace("frame has no annotations", "no annotations: the file has a header line "
                                                    "and no rows")
    return CrowdDataError(f"{path}: {text}")
