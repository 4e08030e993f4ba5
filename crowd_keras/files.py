"""Atomic file writes: a reader never sees a half-written labels file, report or download.

The file is written beside its target under a temporary name, flushed to disk and renamed
over the target. ``tempfile.mkstemp`` creates it ``-rw-------``; before the rename it gets
the mode a plain ``open`` would give (``0o666`` less the process umask), so a labels file
written for a team is readable by that team.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text", "default_file_mode", "publish_file"]


def default_file_mode() -> int:
    """``0o666 & ~umask``: the mode ``open(path, "w")`` gives a new file."""
    umask = os.umask(0)  # the only portable way to read the umask is to set it
    os.umask(umask)
    return 0o666 & ~umask


def publish_file(tmp: os.PathLike, path: os.PathLike) -> Path:
    """Give the finished temporary file ``tmp`` the default mode and rename it to ``path``."""
    os.chmod(tmp, default_file_mode())
    os.replace(tmp, path)
    return Path(path)


def atomic_write_text(path: os.PathLike, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder, fsync and rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        publish_file(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
