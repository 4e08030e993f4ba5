"""Files: atomic writes (a reader never sees a half-written labels file, report or
download) and checked reads (a corrupt or partial file is one
:class:`~crowd_keras.CrowdDataError` naming the file and what is wrong, never a raw
``BadZipFile``, ``JSONDecodeError`` or an allocation of a size the file merely claims).

A file is written beside its target under a temporary name, flushed to disk and renamed over
the target. ``tempfile.mkstemp`` creates it ``-rw-------``; before the rename it gets the mode
a plain ``open`` would give: the target's own when it exists (a report kept private stays
private), else ``0o666`` less the process umask. A path that is a stream (a named pipe, a
device, ``/dev/stdout``) is written into instead: a rename would put a file in its place.
"""
from __future__ import annotations

import contextlib
import csv
import gc
import json
import math
import os
import shutil
import stat
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np

from .errors import CrowdDataError

__all__ = ["csv_text", "atomic_write_text", "atomic_write_bytes", "atomic_write_files", "default_file_mode",
           "publish_file", "standard_stream", "replace_folder", "remove_staged_folder",
           "read_npz", "read_npy", "read_json_text", "decode_json", "gc_paused", "indented_json",
           "MAX_DEFLATE_RATIO"]

#: Deflate expands at most about 1032:1; a member claiming more is corrupt or a zip bomb.
MAX_DEFLATE_RATIO = 1032


def default_file_mode() -> int:
    """``0o666 & ~umask``: the mode ``open(path, "w")`` gives a new file."""
    return 0o666 & ~_umask()


def _umask() -> int:
    umask = os.umask(0)  # the only portable way to read the umask is to set it
    os.umask(umask)
    return umask


def publish_file(tmp: os.PathLike, path: os.PathLike) -> Path:
    """Give the finished temporary file ``tmp`` the mode of the file ``path`` it replaces
    (the default mode for a new one) and rename it to ``path``."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:   # no file there yet
        mode = default_file_mode()
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return Path(path)


def csv_text(frame: Any) -> str:
    """A ``DataFrame`` as CSV text (no index, ``\n`` line ends) that reads back as written.

    The csv writer quotes a field holding the separator, the quote or a character of the line
    terminator, so a lone carriage return in an id went out unquoted under ``\n`` line ends
    and readers split the row there; a frame holding one is written with every field quoted.
    """
    text = frame.to_csv(index=False)
    return frame.to_csv(index=False, quoting=csv.QUOTE_ALL) if "\r" in text else text


def atomic_write_text(path: os.PathLike, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder, fsync and rename."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` through a temporary file in the same folder, fsync and rename.

    The folders above `path` are made when missing; a folder at `path` or a file where a
    folder above must be is a :class:`CrowdDataError` naming the path. An interrupted write
    leaves the previous `path` as it was and no temporary file behind.
    """
    return atomic_write_files({path: data})[0]


def atomic_write_files(contents: Mapping[Any, Union[str, bytes]]) -> List[Path]:
    """Write several files that make one output (a report's HTML and JSON): ``{path: text
    (UTF-8) or bytes}``. Every path is checked and every file written to its temporary file
    before the first rename, so a failure on any (a folder in the way, a full disk, Ctrl-C)
    leaves all the previous files as they were and no temporary file behind. A path that is
    a stream (a named pipe, ``/dev/stdout``: :func:`_is_stream`) is written into, last."""
    paths = [Path(p) for p in contents]
    data = [d.encode("utf-8") if isinstance(d, str) else d for d in contents.values()]
    streams = [_is_stream(path) for path in paths]
    for path, stream in zip(paths, streams):
        if not stream:
            _ready(path)
    staged: List[str] = []
    try:
        for path, payload, stream in zip(paths, data, streams):
            if not stream:
                staged.append(_staged(path, payload))
        for tmp, path in zip(staged, [p for p, s in zip(paths, streams) if not s]):
            publish_file(tmp, path)
    except BaseException:
        for tmp in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for path, payload, stream in zip(paths, data, streams):
        if stream:   # after the files: a reader of the stream sees a finished output
            _write_stream(path, payload)
    return paths


def standard_stream(path: os.PathLike) -> Optional[int]:
    """1 or 2 when ``path`` is this process's standard output or error (``/dev/stdout``,
    ``/dev/fd/1``, or the file or pipe they lead to), else None. Only a path: ``os.stat``
    reads an int as a file descriptor (a command's ``--annotators 8`` is a count)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        return None
    try:
        target = os.stat(path)
    except (OSError, ValueError):
        return None
    for fd in (1, 2):
        try:
            if os.path.samestat(target, os.fstat(fd)):
                return fd
        except OSError:   # a closed descriptor
            continue
    return None


def _write_stream(path: Path, data: bytes) -> None:
    """Write ``data`` into a stream: through the descriptor when it is the standard output
    or error (a new ``open`` of ``/dev/stdout`` redirected to a file would start at its
    beginning, over what the process has printed there), else through ``open``."""
    fd = standard_stream(path)
    if fd is None:
        with open(path, "wb") as fh:
            fh.write(data)
        return
    for stream in (sys.__stdout__, sys.__stderr__, sys.stdout, sys.stderr):
        if stream is not None:   # what was printed comes first
            stream.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _is_stream(path: Path) -> bool:
    """Whether ``path`` is no file to replace but a stream to write into: a named pipe, a
    device, ``/dev/stdout`` (a rename there would put a regular file in place of the pipe or
    of the link, and the reader would get nothing)."""
    parts = path.absolute().parts
    # /dev/stdout (a link) as a file: a shell's `> out.csv`; a plain file under /dev
    # (/dev/shm/labels.csv, a memory-backed folder) is replaced as any other file
    if len(parts) > 1 and parts[1] == "dev" and path.is_symlink():
        return True
    return path.exists() and not path.is_file() and not path.is_dir()


def _ready(path: Path) -> None:
    """Check ``path`` can be written and make its folder."""
    if path.is_dir():   # checked first: the rename would fail naming the temporary file
        raise CrowdDataError(f"{path} is a folder; give the path of a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):   # a file where a folder above must be
        raise CrowdDataError(f"{path}: cannot make its folder {path.parent}: a file is in "
                             "the way") from None


def _staged(path: Path, data: bytes) -> str:
    """``data`` written and fsynced to a new temporary file beside ``path``; its name."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:   # a read-only or foreign folder
        raise _naming_target(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):   # a full disk
            raise _naming_target(exc, path) from None
        raise
    return tmp


def _naming_target(exc: OSError, path: Path) -> OSError:
    """``exc`` (its type and errno kept) naming ``path``, the file the caller asked for: the
    temporary file's name (``.labels.csv.x1y2.tmp``) meant nothing to them."""
    return type(exc)(exc.errno, exc.strerror, str(path)) if exc.errno is not None else exc


def replace_folder(staged: os.PathLike, target: os.PathLike) -> Path:
    """Put the finished folder ``staged`` (made beside ``target``) in place of ``target``:
    the previous folder is renamed aside, ``staged`` renamed in and the previous one removed,
    so ``target`` never holds the files of two writes (a rewrite with fewer files would
    leave the extra ones). A failed rename puts the previous folder back."""
    staged, target = Path(staged), Path(target)
    if target.exists() and not target.is_dir():
        raise CrowdDataError(f"{target} is a file; give a folder (it is created when missing)")
    try:   # mkdtemp made it drwx------: the mode of the folder it replaces, or mkdir's
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = 0o777 & ~_umask()
    os.chmod(staged, mode)
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
        os.replace(target, old)   # onto the empty folder just made: a rename, no copy
    try:
        os.replace(staged, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def remove_staged_folder(staged: os.PathLike, wait_s: float = 5.0) -> None:
    """Remove the staged folder of a failed write. Writers still running in other threads
    (Dask's scheduler raises the first task's error without waiting for the rest) can add a
    file while it is being removed, so the removal is repeated until the folder is gone; once
    it is, a late writer's open fails instead of leaving a file behind."""
    staged = Path(staged)
    deadline = time.monotonic() + wait_s
    while True:
        shutil.rmtree(staged, ignore_errors=True)
        if not os.path.lexists(staged) or time.monotonic() > deadline:
            return
        time.sleep(0.01)


@contextlib.contextmanager
def gc_paused():
    """Run the block with Python's cyclic garbage collector off (restored after, as it was).

    For blocks that build millions of objects none of which can be in a reference cycle
    (decoded JSON): each full collection the allocations trigger walks every object built
    so far, which made decoding a 145 MB Label Studio export 4x slower than the decode itself
    and grow faster than linearly with its size."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode_json(text: Any) -> Any:
    """``json.loads(text)`` with the garbage collector paused (:func:`gc_paused`): decoded
    JSON holds no cycles, so the collections its objects trigger would free nothing."""
    with gc_paused():
        return json.loads(text)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def indented_json(value: Any, indent: int = 1, allow_nan: bool = False) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=allow_nan)``, the same
    text, in a fraction of the time for large tables.

    ``json.dumps`` with an indent runs its pure-Python encoder (one generator step per value:
    most of writing the 125 MB agreement report of a million annotations). Here every list
    or dict of plain scalars, and every list of such dicts (a table's records), is one call
    of the C encoder whose separators carry the newline and indent, the brackets set around
    it; a list of such lists (a matrix) is one call per row, and the few dicts above them are
    walked in Python. Anything else (a long list or dict of nested containers, such as
    Label Studio predictions, where a call per element would cost more than it saves; keys
    that are not strings; values json does not know) goes to ``json.dumps`` itself, so the
    text and the errors are always its own."""
    pad = " " * indent

    def flat(obj: Any, depth: int) -> str:
        inner = "\n" + pad * (depth + 1)
        text = json.dumps(obj, ensure_ascii=False, allow_nan=allow_nan,
                          separators=("," + inner, ": "))
        return text[0] + inner + text[1:-1] + "\n" + pad * depth + text[-1]

    def is_flat(obj: Any) -> bool:
        if type(obj) is dict:
            return bool(obj) and {type(k) for k in obj} == {str} \
                and {type(v) for v in obj.values()} <= _SCALARS
        return type(obj) in (list, tuple) and bool(obj) and {type(v) for v in obj} <= _SCALARS

    def encode(obj: Any, depth: int) -> str:
        if type(obj) in _SCALARS:
            return json.dumps(obj, ensure_ascii=False, allow_nan=allow_nan)
        if is_flat(obj):
            return flat(obj, depth)
        inner = "\n" + pad * (depth + 1)
        if type(obj) is dict and obj and len(obj) <= _WALKED \
                and all(type(k) is str for k in obj):
            return "{" + inner + ("," + inner).join(
                json.dumps(k, ensure_ascii=False) + ": " + encode(v, depth + 1)
                for k, v in obj.items()) + "\n" + pad * depth + "}"
        if type(obj) in (list, tuple) and obj:
            # comprehensions, not is_flat per element: no Python call per row
            kinds = {type(v) for v in obj}
            if kinds == {dict} and all(obj) and {type(k) for r in obj for k in r} == {str} \
                    and {type(v) for r in obj for v in r.values()} <= _SCALARS:
                return _records_json(obj, depth, pad, allow_nan)
            rows = kinds <= {list, tuple} and all(obj) \
                and {type(v) for r in obj for v in r} <= _SCALARS
            if len(obj) <= _WALKED or rows:
                return "[" + inner + ("," + inner).join(encode(v, depth + 1) for v in obj) \
                    + "\n" + pad * depth + "]"
        return _indented_fallback(obj, indent, allow_nan, depth)

    return encode(value, 0)


#: Lists and dicts of nested containers up to this length are walked in Python; longer ones
#: (of flat rows excepted) are json.dumps's: a call per element would cost more than it saves.
_WALKED = 64


def _records_json(rows: list, depth: int, pad: str, allow_nan: bool) -> str:
    """A non-empty list of non-empty dicts of scalars with string keys, as indented JSON:
    one C-encoder call with the fields' separator, then the records' boundaries re-indented.
    ``},<newline>`` can only be a boundary: an encoded string holds no raw newline and a
    scalar never ends in ``}``."""
    field, record = "\n" + pad * (depth + 2), "\n" + pad * (depth + 1)
    text = json.dumps(rows, ensure_ascii=False, allow_nan=allow_nan,
                      separators=("," + field, ": "))
    text = text[2:-2].replace("}," + field + "{", record + "}," + record + "{" + field)
    return "[" + record + "{" + field + text + record + "}\n" + pad * depth + "]"


def _indented_fallback(obj: Any, indent: int, allow_nan: bool, depth: int) -> str:
    """``json.dumps`` of ``obj`` as it reads ``depth`` levels down an indented document."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=allow_nan)
    return text.replace("\n", "\n" + " " * (indent * depth)) if depth else text


def read_json_text(text: Any, source: Any, what: str) -> Any:
    """``json.loads(text)``, or :class:`CrowdDataError` naming ``source``, ``what`` it is and
    the line and column of the syntax error."""
    try:
        return decode_json(text)
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
        raise CrowdDataError(f"{source}: {what} is not valid JSON ({exc})") from None


def read_npz(source: os.PathLike, what: str = "an .npz file") -> Dict[str, np.ndarray]:
    """Every array of an ``.npz`` (``np.savez``) as ``{name: array}``, without pickles.

    Checked before anything is allocated: the zip directory (a truncated file has none),
    each member's size against the file's (``MAX_DEFLATE_RATIO`` times its compressed size
    when compressed), and each ``.npy`` header's shape and dtype against the member's size:
    a header claiming 1 GiB in a 300-byte member is refused, not allocated. A bad member,
    a truncated one or a CRC mismatch raises :class:`CrowdDataError` naming ``source`` and
    the member.
    """
    source = Path(source)
    try:
        size = source.stat().st_size
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as exc:
        raise CrowdDataError(f"{source} is not {what}: not a readable zip archive, perhaps "
                             f"truncated ({exc})") from None
    except OSError as exc:
        raise CrowdDataError(f"{source}: cannot read {what} ({exc.strerror or exc})") from None
    out: Dict[str, np.ndarray] = {}
    with archive:
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            where = f"{source}, member {name!r}"
            limit = size if info.compress_type == zipfile.ZIP_STORED \
                else MAX_DEFLATE_RATIO * max(info.compress_size, 1)
            if info.file_size > limit or info.compress_size > size:
                raise CrowdDataError(f"{where}: claims {info.file_size} bytes, more than the "
                                     f"file of {size} bytes can hold (corrupt or truncated)")
            try:
                with archive.open(info) as fh:
                    out[name] = _read_npy(fh, info.file_size, where)
            except CrowdDataError:
                raise
            except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError,
                    NotImplementedError) as exc:
                raise CrowdDataError(f"{where}: unreadable ({type(exc).__name__}: {exc}); the "
                                     "file is corrupt or truncated") from None
    return out


def read_npy(source: os.PathLike) -> np.ndarray:
    """The array of a ``.npy`` file (``np.save``), its header checked against the file's size
    before anything is allocated; no pickles. :class:`CrowdDataError` names the file."""
    source = Path(source)
    try:
        with source.open("rb") as fh:
            return _read_npy(fh, source.stat().st_size, str(source))
    except CrowdDataError:
        raise
    except (ValueError, EOFError, SyntaxError) as exc:
        raise CrowdDataError(f"{source}: not a readable .npy file ({exc})") from None


def _read_npy(fh: Any, member_size: int, where: str) -> np.ndarray:
    """One ``.npy`` member, its header checked against ``member_size`` before reading."""
    fmt = np.lib.format
    version = fmt.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(fh)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = fmt.read_array_header_2_0(fh)
    else:
        raise CrowdDataError(f"{where}: unknown .npy format version {version}")
    if dtype.hasobject:
        raise CrowdDataError(f"{where}: holds Python objects (a pickle); refused")
    claimed = math.prod(int(n) for n in shape) * dtype.itemsize   # Python ints: no overflow
    left = member_size - fh.tell()
    if claimed != left:
        raise CrowdDataError(f"{where}: its header claims shape {tuple(shape)} of {dtype} "
                             f"({claimed} bytes) but {max(left, 0)} bytes of data follow it "
                             "(corrupt or truncated)")
    data = fh.read(claimed)
    if len(data) != claimed:
        raise CrowdDataError(f"{where}: truncated ({len(data)} of {claimed} bytes)")
    fh.read(1)   # at the end of the member: the zip's CRC check runs here
    array = np.frombuffer(data, dtype=dtype)
    order = "F" if fortran else "C"
    return array.reshape(shape, order=order).copy(order=order)
