"""Find a public data set on disk, or download it once into a user cache.

Every loader of :mod:`crowd_keras.datasets` looks for its files, in this order:

1. the folder given to the loader (nothing else is tried);
2. ``$CROWD_KERAS_DATA/<set>`` (a folder with one sub-folder per set, as the project's
   shared data);
3. the user cache, ``$CROWD_KERAS_CACHE/<set>`` (default ``$XDG_CACHE_HOME/crowd-keras``,
   else ``~/.cache/crowd-keras``);
4. a download into that cache from the set's public source (:mod:`.sources`), or from
   ``$CROWD_KERAS_MIRROR/<set>/<file>`` when that base URL is set (a local or institutional
   copy of the same layout).

A download shows its progress (:class:`crowd_keras.progress.Progress`), goes to a ``.part``
file that a later call resumes with an HTTP ``Range`` request, is checked against the pinned
sha256 and only then renamed into place, so the cache never holds a partial or altered file;
a cached file is checked again before use (one that was truncated or altered since is
removed, and the error names it). Processes that load one set at once fetch it once: the
others wait on a lock of the set's cache folder (POSIX systems; none on Windows).
Without network the error names the URL and the environment variables.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence, Union

try:
    import fcntl
except ImportError:  # Windows: no lock (two processes must not fetch one set at once)
    fcntl = None

from ..arguments import check_switch
from ..errors import CrowdDataError, DownloadError, warn
from ..files import atomic_write_bytes, publish_file
from ..progress import Progress
from .sources import SOURCES, DataSource, source

__all__ = ["DATA_ENV", "CACHE_ENV", "MIRROR_ENV", "cache_dir", "locate", "download_file",
           "sha256_of"]

DATA_ENV = "CROWD_KERAS_DATA"
CACHE_ENV = "CROWD_KERAS_CACHE"
MIRROR_ENV = "CROWD_KERAS_MIRROR"
_CHUNK = 1 << 20
_TIMEOUT = 60.0
_SHOWN_FROM = 1 << 18  # bytes: smaller downloads get no progress of their own

PathLike = Union[str, os.PathLike]


def cache_dir() -> Path:
    """The download cache: ``$CROWD_KERAS_CACHE``, else ``$XDG_CACHE_HOME/crowd-keras``,
    else ``~/.cache/crowd-keras``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "crowd-keras"  # as CROWD_KERAS_CACHE: a quoted "~/..."


def sha256_of(path: PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _where_else(name: str, wanted: Optional[Sequence[str]] = None) -> str:
    """Where else the files ``wanted`` (default: the set's files but its optional ones) can
    come from, and what the data folder in use lacks of them."""
    data = os.environ.get(DATA_ENV)
    looked = ""
    if data and name in SOURCES:  # say where it looked: the usual cause is a wrong folder
        folder = Path(data).expanduser() / name
        if wanted is None:
            wanted = [n for n in SOURCES[name].files if n not in SOURCES[name].optional]
        lacks = _missing(folder, wanted)
        looked = (f"{DATA_ENV} is {data}, and {folder} lacks {lacks}"
                  f"{_own_folder(name)}. " if lacks else "")
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:  # the mirror in use is the one to check, not one to set
        return (f"{looked}{MIRROR_ENV} is {mirror}: it must serve {mirror.rstrip('/')}/{name}/"
                f"<file> (unset it to download from the set's own source). To use local files "
                f"instead, set {DATA_ENV} to a folder that holds {name}/ (or pass that folder to "
                f"the loader).")
    return (f"{looked}To use local files instead, set {DATA_ENV} to a folder that holds "
            f"{name}/ (or pass that folder to the loader), or set {MIRROR_ENV} to the URL of a "
            f"server that mirrors <set>/<file>.")


def _own_folder(name: str) -> str:
    """``" (... set it to the folder above)"`` when ``$CROWD_KERAS_DATA`` is set to the own
    folder of set ``name`` (``.../labelme``, ``.../truth_inference/dog``) and that holds its
    files: the layout is one folder per set under it, so the loaders looked in
    ``.../labelme/labelme``; else ``""``."""
    data = Path(os.environ.get(DATA_ENV, "")).expanduser()
    parts = tuple(name.split("/"))
    required = [n for n in SOURCES[name].files if n not in SOURCES[name].optional]
    if data.parts[-len(parts):] != parts or _missing(data, required):
        return ""
    return (f" ({data} itself holds them: {DATA_ENV} names the folder that holds the sets' "
            f"folders; set it to {data.parents[len(parts) - 1]})")


def download_file(url: str, dest: PathLike, sha256: Optional[str], *, progress: bool = True,
                  what: Optional[str] = None, dataset: Optional[str] = None) -> Path:
    """Download ``url`` to ``dest`` atomically, resuming ``dest.part`` and checking ``sha256``
    (``None``: an archive whose members are checked once extracted).

    Raises:
        DownloadError: the server cannot be reached or answers an error (the message names
            ``url`` and the environment variables), or the finished file's sha256 is not
            ``sha256`` (the partial file is removed, so the next call starts afresh).
    """
    dest = Path(dest)
    _make_folder(dest.parent)
    if dest.is_dir():   # checked before the download: the rename at its end would fail
        raise DownloadError(f"{dest} is a folder; the downloaded file {dest.name} goes there "
                            f"(remove the folder, or set {CACHE_ENV} to another cache)")
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "crowd-keras"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    what = what or dest.name
    hint = _where_else(dataset or dest.parent.name)
    try:
        response = urllib.request.urlopen(request, timeout=_TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing left to send: the .part file is whole
            response = None
        else:
            raise DownloadError(f"downloading {what} from {url} failed: HTTP {exc.code} "
                                f"{exc.reason}. {hint}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        cause = "the mirror down?" if os.environ.get(MIRROR_ENV) else "no network?"
        raise DownloadError(f"cannot download {what} from {url} ({reason}): {cause} "
                            f"{hint}") from None
    if response is not None:
        with response:
            if have and response.status != 206:  # the server ignored Range: start again
                have = 0
            length = response.headers.get("Content-Length")
            total = have + int(length) if length else 0
            show = progress and (not total or total - have >= _SHOWN_FROM)
            bar = Progress(total, f"downloading {what}", disable=not show,
                           unit="B", interval=5.0)
            bar.update(have)
            got_bytes = have
            try:
                with _writing(part, have) as fh:
                    while True:
                        try:
                            block = response.read(_CHUNK)
                        except (OSError, http.client.HTTPException) as exc:  # connection lost
                            raise DownloadError(f"download of {what} from {url} was interrupted "
                                                f"({exc}); run again to resume") from None
                        if not block:
                            break
                        _write(fh, part, block)
                        got_bytes += len(block)
                        bar.update(len(block))
                    _write(fh, part, b"", sync=True)
            finally:
                bar.close()
            if total and got_bytes < total:  # the body ended early: keep .part to resume
                raise DownloadError(f"download of {what} from {url} was interrupted after "
                                    f"{got_bytes} of {total} bytes; run again to resume")
    got = sha256_of(part) if sha256 is not None else None
    if got != sha256:
        part.unlink(missing_ok=True)
        raise DownloadError(f"checksum mismatch for {what} from {url}: sha256 {got}, expected "
                            f"{sha256} (the pinned file as distributed); the download was "
                            f"removed. {hint}")
    return publish_file(part, dest)


def _cannot_write(part: Path, exc: OSError) -> DownloadError:
    """A local write failure (not the network's): rerunning does not help, another cache
    does."""
    return DownloadError(f"cannot write the download to {part} ({exc.strerror or exc}); free "
                         f"or fix that place, or set {CACHE_ENV} to a writable folder")


def _writing(part: Path, have: int):
    """``part`` opened to append (``have`` bytes kept) or afresh, or a :class:`DownloadError`
    naming it (a read-only cache, a folder named like the ``.part`` file)."""
    try:
        return open(part, "ab" if have else "wb")
    except OSError as exc:
        raise _cannot_write(part, exc) from None


def _write(fh, part: Path, block: bytes, sync: bool = False) -> None:
    try:
        fh.write(block)
        if sync:
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:  # a full disk, say
        raise _cannot_write(part, exc) from None


def _make_folder(folder: Path) -> None:
    """``folder`` and those above it, or a :class:`DownloadError` naming the file in the way
    (a cache path set to a file)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise DownloadError(f"cannot make the folder {folder}: a file is in the way (the cache "
                            f"is {cache_dir()}; set {CACHE_ENV} to a folder)") from None
    except OSError as exc:  # a read-only or foreign cache
        raise DownloadError(f"cannot make the folder {folder} ({exc.strerror or exc}); set "
                            f"{CACHE_ENV} to a writable folder") from None


def _missing(folder: Path, names: Iterable[str]) -> list:
    return [n for n in names if not (folder / n).is_file()]


def _url(src: DataSource, name: str) -> Optional[str]:
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        return f"{mirror.rstrip('/')}/{src.name}/{name}"
    return src.files[name].url


def _extract(src: DataSource, archive: Path, folder: Path, wanted: Sequence[str]) -> None:
    """Copy the ``wanted`` members of ``archive`` into ``folder``, each checked and atomic."""
    by_file = {v: k for k, v in src.archive.members.items()}
    opened = (zipfile.ZipFile(archive) if zipfile.is_zipfile(archive)
              else tarfile.open(archive, "r:*"))
    with opened:
        for name in wanted:
            member = by_file[name]
            try:
                data = (opened.read(member) if isinstance(opened, zipfile.ZipFile)
                        else opened.extractfile(member).read())
            except (KeyError, AttributeError):
                raise DownloadError(f"{src.archive.url} has no member {member!r} (for "
                                    f"{src.name}/{name}). {_where_else(src.name)}") from None
            got = hashlib.sha256(data).hexdigest()
            if got != src.files[name].sha256:
                raise DownloadError(
                    f"checksum mismatch for {member} of {src.archive.url}: sha256 {got}, "
                    f"expected {src.files[name].sha256} (the pinned file as distributed). "
                    f"{_where_else(src.name)}")
            atomic_write_bytes(folder / name, data)


def _no_public_source(src: DataSource, names: Sequence[str]) -> str:
    """What to do for files no public URL serves as the loader reads them."""
    data = os.environ.get(DATA_ENV)
    looked = (f"{DATA_ENV} is {data}, and {Path(data).expanduser() / src.name} lacks them"
              if data else f"{DATA_ENV} is not set")
    return (f"{src.name}: {', '.join(names)} cannot be downloaded: no public source serves "
            f"them in the layout this loader reads (the original, {src.homepage}, publishes "
            f"the data in another layout) and {looked}. To use them, put them in a folder "
            f"DIR/{src.name}/ and set {DATA_ENV}=DIR (or pass DIR/{src.name} to the loader), "
            f"or set {MIRROR_ENV} to a server that serves {src.name}/<file>. The files expected "
            f"are pinned by sha256 in crowd_keras.datasets.sources.SOURCES[{src.name!r}].")


def _check_mirror(mirror: str) -> None:
    """A mirror is a URL: a bare folder reached urllib as 'unknown url type' (a ValueError)."""
    if urllib.parse.urlsplit(mirror).scheme.lower() not in ("http", "https", "file", "ftp"):
        local = Path(mirror).expanduser()
        raise DownloadError(f"{MIRROR_ENV} is {mirror!r}, not a URL (http://, https:// or "
                            f"file://): for a local folder set {DATA_ENV}={mirror} (read in "
                            f"place), or {MIRROR_ENV}={local.absolute().as_uri()} (copied into "
                            f"the cache)")


@contextmanager
def _fetching(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on the set's cache ``folder`` itself (no lock file is left
    there): two processes that load one set at once (pytest-xdist workers, two notebooks)
    download it once, the second after the first, instead of writing into one ``.part`` file
    together (the later one died on the ``.part`` the first had renamed, or appended to the
    file the first had just checked). The system drops the lock of a process that dies."""
    try:
        fd = os.open(folder, os.O_RDONLY) if fcntl is not None else None
    except OSError:  # no lock where the folder cannot be opened: the download names it
        fd = None
    if fd is None:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without locks (some network mounts): as before
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def _download(src: DataSource, folder: Path, names: Sequence[str], progress: bool) -> None:
    mirror = bool(os.environ.get(MIRROR_ENV))
    if mirror:
        _check_mirror(os.environ[MIRROR_ENV])
    archived = set(src.archive.members.values()) if src.archive is not None and not mirror \
        else set()
    unserved = [n for n in names if n not in archived and _url(src, n) is None]
    if unserved:  # before any download: no set half fetched
        raise DownloadError(_no_public_source(src, unserved))
    _make_folder(folder)
    with _fetching(folder):
        names = _missing(folder, names)  # another process may have fetched them meanwhile
        if names:
            _fetch(src, folder, names, progress, mirror)


def _fetch(src: DataSource, folder: Path, names: Sequence[str], progress: bool,
           mirror: bool) -> None:
    """Download ``names`` of ``src`` into ``folder`` (the archive first, where it serves
    them and no mirror is set)."""
    if progress:
        origin = (os.environ[MIRROR_ENV] if mirror else src.archive.url if src.archive
                  else src.homepage)
        slip = _own_folder(src.name) if os.environ.get(DATA_ENV) else ""
        print(f"{src.name}: downloading {len(names)} file(s) from {origin} into {folder} "
              f"(once; checked against pinned sha256){slip}", file=sys.stderr, flush=True)
    if src.archive is not None and not mirror:
        from_archive = [n for n in names if n in src.archive.members.values()]
        if from_archive:
            archive = cache_dir() / "downloads" / src.archive.url.rsplit("/", 1)[-1]
            download_file(src.archive.url, archive, None, progress=progress, what=src.name,
                          dataset=src.name)
            try:
                _extract(src, archive, folder, from_archive)
            except (tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
                raise DownloadError(f"{src.archive.url} is not a readable archive ({exc}); it "
                                    f"was removed. {_where_else(src.name)}") from None
            finally:  # extracted, or useless: the next call downloads it again
                archive.unlink(missing_ok=True)
        names = [n for n in names if n not in from_archive]
    for name in names:
        download_file(_url(src, name), folder / name, src.files[name].sha256, progress=progress,
                      what=f"{src.name}/{name}", dataset=src.name)


def _check_cached(src: DataSource, folder: Path, names: Sequence[str]) -> None:
    """Raise naming each cached file of ``names`` whose sha256 is not the pinned one, after
    removing it: a truncated or altered copy is never read, and the next call downloads it."""
    bad, kept = [], []
    for name in names:
        path = folder / name
        if path.is_file():
            got = sha256_of(path)
            if got != src.files[name].sha256:
                bad.append(f"{path} (sha256 {got}, expected {src.files[name].sha256})")
                try:
                    path.unlink()
                except OSError as exc:  # a read-only cache: say so, not a bare PermissionError
                    kept.append(f"{path} ({exc.strerror or exc})")
    if kept:
        raise DownloadError(f"corrupt or truncated file(s) in the cache: {'; '.join(bad)}, "
                            f"not the pinned file(s) as distributed, and they cannot be removed: "
                            f"{'; '.join(kept)}. Remove them, or set {CACHE_ENV} to a writable "
                            f"folder. {_where_else(src.name)}")
    if bad:
        raise DownloadError(f"corrupt or truncated file(s) in the cache: {'; '.join(bad)}, "
                            f"not the pinned file(s) as distributed; removed, so the next call "
                            f"downloads them again. {_where_else(src.name)}")


#: (path, size, mtime) -> sha256 of the data folder's files: each hashed once per process
_LOCAL_HASHES: dict = {}


def _check_local(src: DataSource, folder: Path, names: Sequence[str]) -> None:
    """Warn naming each file of ``names`` in the ``$CROWD_KERAS_DATA`` folder whose sha256 is
    not the pinned one: a copy cut at a row boundary reads as a smaller set without an error
    (a cached copy is removed and fetched again; a local one may be edited on purpose)."""
    bad = []
    for name in names:
        pinned = src.files[name].sha256
        path = folder / name
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if pinned and key not in _LOCAL_HASHES:
            _LOCAL_HASHES[key] = sha256_of(path)
        if pinned and _LOCAL_HASHES[key] != pinned:
            bad.append(f"{path} (sha256 {_LOCAL_HASHES[key]}, expected {pinned})")
    if bad:
        warn(f"{DATA_ENV}: {'; '.join(bad)}: not the file(s) as distributed (a truncated or "
             f"edited copy is read as it is); copy them again, or unset {DATA_ENV} to "
             f"download the pinned files")


def locate(name: str, root: Optional[PathLike] = None, files: Optional[Sequence[str]] = None,
           *, download: bool = True, progress: bool = True) -> Path:
    """The folder of data set ``name`` holding ``files`` (default: all but its optional ones).

    Args:
        name: the set's folder name, a key of :data:`crowd_keras.datasets.sources.SOURCES`.
        root: a folder given by the caller: the set's own folder or a data root that holds
            ``name``; when given, nothing else is tried.
        files: the file names the caller reads.
        download: ``False``: raise instead of downloading.
        progress: show download progress on stderr.

    Raises:
        CrowdDataError: ``root`` lacks the files.
        DownloadError: the files are not on disk and cannot be downloaded, or a cached file's
            sha256 is not the pinned one (the file is removed).
    """
    download, progress = check_switch(download, "download"), check_switch(progress, "progress")
    src = source(name)
    wanted = list(files) if files is not None else [n for n in src.files
                                                   if n not in src.optional]
    unknown = [n for n in wanted if n not in src.files]
    if unknown:
        raise ValueError(f"{name} has no file(s) {unknown}; its files are {list(src.files)}")
    if root is not None:
        root = Path(root).expanduser()  # '~/data' as the variables: pandas reads it so too
        for cand in (root, root / name):
            if not _missing(cand, wanted):
                return cand
        # say both places looked: a data root given for the set's folder is the usual slip
        nested = root / name
        raise CrowdDataError(f"no {name} data at {root}: missing {_missing(root, wanted)}"
                             + (f", and {nested} lacks {_missing(nested, wanted)}"
                                if nested.is_dir() else f" (nor is there a folder {nested})"))
    if os.environ.get(DATA_ENV):
        folder = Path(os.environ[DATA_ENV]).expanduser() / name
        if not _missing(folder, wanted):
            _check_local(src, folder, wanted)
            return folder
    folder = cache_dir() / name
    _check_cached(src, folder, wanted)
    missing = _missing(folder, wanted)
    if missing:
        if not download:
            archived = set(src.archive.members.values()) if src.archive is not None \
                else set()
            unserved = [n for n in missing if n not in archived and src.files[n].url is None]
            raise DownloadError(f"{name} is not in {folder} (missing {missing}). "
                                + (f"No public source serves {unserved}: only a data folder or "
                                   f"a mirror can. " if unserved else
                                   "download=True fetches it from its source. ")
                                + _where_else(name, wanted))
        _download(src, folder, missing, progress)
    return folder
