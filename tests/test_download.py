"""Data sets that fetch themselves, against a real HTTP server on loopback (no network).

The server serves a small fixture (and, where the shared data is present, real files as a
mirror of ``CROWD_KERAS_DATA``'s layout) and honours ``Range`` like a static file server.
"""
import hashlib
import io
import os
import socket
import stat
import sys
import tarfile
import warnings
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crowd_keras.datasets import fetch, load_truth_inference, load_wrench, locate
from crowd_keras.datasets.sources import SOURCES, Archive, DataSource, RemoteFile
from crowd_keras.errors import CrowdDataError, DownloadError

from conftest import require_data

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB: more than one read chunk is not needed
SMALL = b"question,worker,answer\n1,a,0\n1,b,1\n2,a,1\n"


class _Server(ThreadingHTTPServer):
    """Request threads that :meth:`server_close` waits for (not daemons): a reply still being
    written when a test ends must not print into a later test's captured stderr; a client
    that hangs up mid-body (the tests' aborted downloads) is no server error to print."""

    daemon_threads = False

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):   # BrokenPipe, reset
            super().handle_error(request, client_address)


class Server:
    """A static file server on 127.0.0.1 with Range support and a request log."""

    def __init__(self):
        self.files, self.requests, self.ignore_range, self.threads = {}, [], False, []
        self.cut_after = None  # bytes of the body sent before the connection drops
        self.gate = None  # a threading.Event every reply waits for, when set here
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30   # a client that neither reads nor hangs up cannot hold close() forever

            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.threads.append(threading.current_thread())
                outer.requests.append((self.path, self.headers.get("Range")))
                if outer.gate is not None:
                    outer.gate.wait(30)
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                rng = self.headers.get("Range")
                if rng and not outer.ignore_range:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                    body = body[start:]
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if outer.cut_after is not None:
                    body, outer.cut_after = body[:outer.cut_after], None
                    self.close_connection = True
                self.wfile.write(body)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = Server()
    yield srv
    srv.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache, no CROWD_KERAS_DATA and no mirror."""
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(fetch.DATA_ENV, raising=False)
    monkeypatch.delenv(fetch.MIRROR_ENV, raising=False)
    return tmp_path / "cache"


@pytest.fixture
def tiny(server, monkeypatch):
    """A set "tiny" of two files served by the loopback server."""
    server.files = {"/tiny/payload.bin": PAYLOAD, "/tiny/answer.csv": SMALL}
    src = DataSource("tiny", {
        "payload.bin": RemoteFile(hashlib.sha256(PAYLOAD).hexdigest(),
                                  f"{server.url}/tiny/payload.bin"),
        "answer.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest(),
                                 f"{server.url}/tiny/answer.csv")}, "http://example.org/tiny")
    monkeypatch.setitem(SOURCES, "tiny", src)
    return src


def test_a_reply_the_client_cut_ends_with_the_server_and_prints_nothing(capsys):
    """A client that hangs up mid-body (as the aborted downloads below do): the test server
    prints no BrokenPipeError traceback and its request thread is over once it is closed (a
    CI log showed the traceback printed after its test had ended, where it could land in a
    later test's captured stderr)."""
    srv = Server()
    srv.files = {"/big.bin": PAYLOAD * 16}   # 16 MiB: more than the socket buffers hold
    try:
        with socket.create_connection(srv.httpd.server_address) as conn:
            conn.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.0 200")
        # closed with unread data: a reset, and the server's write fails
    finally:
        srv.close()
    assert len(srv.threads) == 1 and not srv.threads[0].is_alive()
    assert capsys.readouterr().err == ""


def test_download_into_the_cache_then_a_cache_hit_asks_nothing(server, cache, tiny):
    folder = locate("tiny", progress=False)
    assert folder == cache / "tiny"
    assert (folder / "payload.bin").read_bytes() == PAYLOAD
    assert (folder / "answer.csv").read_bytes() == SMALL
    assert sorted(p.name for p in folder.iterdir()) == ["answer.csv", "payload.bin"]  # no .part
    mode = stat.S_IMODE((folder / "payload.bin").stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask
    n = len(server.requests)
    assert n == 2
    assert locate("tiny", progress=False) == folder
    assert len(server.requests) == n  # cache hit: no request


def test_two_loads_of_one_set_at_once_download_it_once(server, cache, tiny):
    """Two processes that load one set at once (pytest-xdist workers, two notebooks): the
    second waits for the first and downloads nothing. Both wrote into one .part file: one
    died on the .part the other had renamed, or appended to the file it had just checked.
    (Threads here: each opens the folder itself, so the lock holds between them too.)"""
    server.gate = threading.Event()
    got = []

    def load():
        try:
            got.append(locate("tiny", progress=False))
        except Exception as exc:  # noqa: BLE001 - shown by the assertion below
            got.append(exc)

    first, second = threading.Thread(target=load), threading.Thread(target=load)
    first.start()
    for _ in range(1000):   # the first is inside its download, its reply held at the server
        if server.requests:
            break
        threading.Event().wait(0.01)
    second.start()
    second.join(1.0)        # without the lock it asked the server at once
    asked = list(server.requests)
    server.gate.set()
    first.join(30)
    second.join(30)
    assert len(asked) == 1, asked
    assert got == [cache / "tiny"] * 2
    assert sorted(path for path, _ in server.requests) == ["/tiny/answer.csv",
                                                           "/tiny/payload.bin"]
    assert sorted(os.listdir(cache / "tiny")) == ["answer.csv", "payload.bin"]


def test_data_env_set_to_the_sets_own_folder_says_to_set_the_folder_above(server, cache, tiny,
                                                                         tmp_path, monkeypatch,
                                                                         capsys):
    """CROWD_KERAS_DATA=.../tiny (the set's folder, not the one above): the loaders look in
    .../tiny/tiny; the download notice and the error now say so (they did not say why the
    files beside them were not read)."""
    own = tmp_path / "data" / "tiny"
    own.mkdir(parents=True)
    (own / "payload.bin").write_bytes(PAYLOAD)
    (own / "answer.csv").write_bytes(SMALL)
    monkeypatch.setenv(fetch.DATA_ENV, str(own))
    hint = (f"({own} itself holds them: CROWD_KERAS_DATA names the folder that holds the sets' "
            f"folders; set it to {tmp_path / 'data'})")
    assert locate("tiny") == cache / "tiny"
    assert hint in capsys.readouterr().err   # the download notice
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "other-cache"))
    server.files = {}   # the source is gone: the error says it too
    with pytest.raises(DownloadError) as info:
        locate("tiny", progress=False)
    assert hint in str(info.value)


def test_download_shows_progress_on_stderr(server, cache, tiny, capsys):
    locate("tiny", files=["payload.bin"])
    err = capsys.readouterr().err
    assert "downloading tiny/payload.bin" in err


def test_a_partial_file_is_resumed_with_a_range_request(server, cache, tiny):
    part = cache / "tiny" / "payload.bin.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(PAYLOAD[:300_000])
    locate("tiny", files=["payload.bin"], progress=False)
    assert (cache / "tiny" / "payload.bin").read_bytes() == PAYLOAD
    assert server.requests == [("/tiny/payload.bin", "bytes=300000-")]
    assert not part.exists()


def test_a_dropped_connection_keeps_the_part_and_the_next_call_resumes(server, cache, tiny):
    server.cut_after = 400_000
    with pytest.raises(DownloadError, match="interrupted"):
        locate("tiny", files=["payload.bin"], progress=False)
    part = cache / "tiny" / "payload.bin.part"
    assert part.stat().st_size == 400_000 and not (cache / "tiny" / "payload.bin").exists()
    locate("tiny", files=["payload.bin"], progress=False)
    assert (cache / "tiny" / "payload.bin").read_bytes() == PAYLOAD
    assert server.requests[-1] == ("/tiny/payload.bin", "bytes=400000-")


def test_a_server_that_ignores_range_gives_the_whole_file_again(server, cache, tiny):
    server.ignore_range = True
    part = cache / "tiny" / "payload.bin.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 1000)  # not even a prefix of the file: must be overwritten
    locate("tiny", files=["payload.bin"], progress=False)
    assert (cache / "tiny" / "payload.bin").read_bytes() == PAYLOAD


def test_checksum_mismatch_is_an_error_and_leaves_nothing(server, cache, tiny):
    server.files["/tiny/answer.csv"] = SMALL.replace(b"1,b,1", b"1,b,0")
    with pytest.raises(DownloadError, match="checksum mismatch") as err:
        locate("tiny", files=["answer.csv"], progress=False)
    assert f"{server.url}/tiny/answer.csv" in str(err.value)
    assert not (cache / "tiny" / "answer.csv").exists()
    assert not (cache / "tiny" / "answer.csv.part").exists()


def test_offline_names_the_url_and_the_environment_variable(cache, monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/tiny/answer.csv"
    monkeypatch.setitem(SOURCES, "tiny", DataSource(
        "tiny", {"answer.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest(), url)}, "x"))
    with pytest.raises(DownloadError) as err:
        locate("tiny", progress=False)
    msg = str(err.value)
    assert url in msg and "CROWD_KERAS_DATA" in msg and "no network" in msg


def test_http_error_names_the_url(server, cache, tiny):
    del server.files["/tiny/answer.csv"]
    with pytest.raises(DownloadError, match="HTTP 404") as err:
        locate("tiny", files=["answer.csv"], progress=False)
    assert f"{server.url}/tiny/answer.csv" in str(err.value)


def test_download_false_raises_instead(cache, tiny, server):
    with pytest.raises(DownloadError, match="CROWD_KERAS_DATA"):
        locate("tiny", download=False)
    assert server.requests == []


def test_order_explicit_folder_then_data_env_then_cache(server, cache, tiny, tmp_path,
                                                         monkeypatch):
    own = tmp_path / "own" / "tiny"
    own.mkdir(parents=True)
    for name in tiny.files:
        (own / name).write_bytes(b"mine")
    assert locate("tiny", root=own) == own
    assert locate("tiny", root=own.parent) == own
    with pytest.raises(CrowdDataError, match="no tiny data"):
        locate("tiny", root=tmp_path / "nowhere")
    monkeypatch.setenv(fetch.DATA_ENV, str(own.parent))
    assert locate("tiny") == own
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path / "empty"))  # lacks the set: the cache
    assert locate("tiny", progress=False) == cache / "tiny"
    assert server.requests  # it was downloaded


def test_archive_members_are_extracted_and_checked(server, cache, monkeypatch):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (("set/answers.csv", SMALL), ("set/other.txt", b"not wanted")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    server.files = {"/sets.tar.gz": buf.getvalue()}
    src = DataSource("arch", {"answer.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest())},
                     "x", archive=Archive(f"{server.url}/sets.tar.gz",
                                          {"set/answers.csv": "answer.csv"}))
    monkeypatch.setitem(SOURCES, "arch", src)
    folder = locate("arch", progress=False)
    assert (folder / "answer.csv").read_bytes() == SMALL
    assert not (folder / "other.txt").exists()
    assert not list((cache / "downloads").iterdir())  # the archive is not kept
    # a member that differs from the pinned file
    monkeypatch.setitem(SOURCES, "arch2", DataSource(
        "arch2", {"answer.csv": RemoteFile("0" * 64)}, "x",
        archive=Archive(f"{server.url}/sets.tar.gz", {"set/answers.csv": "answer.csv"})))
    with pytest.raises(DownloadError, match="checksum mismatch for set/answers.csv"):
        locate("arch2", progress=False)
    (folder / "answer.csv").unlink()
    server.files["/sets.tar.gz"] = b"not an archive at all"
    with pytest.raises(DownloadError, match="not a readable archive"):
        locate("arch", progress=False)
    assert not list((cache / "downloads").iterdir())  # removed: the next call tries again


def test_zip_archive_members_are_extracted(server, cache, monkeypatch):
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("Youtube01-Psy.csv", SMALL)
        zf.writestr("__MACOSX/._Youtube01-Psy.csv", b"resource fork")
    server.files = {"/spam.zip": buf.getvalue()}
    monkeypatch.setitem(SOURCES, "zipped", DataSource(
        "zipped", {"Youtube01-Psy.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest())}, "x",
        archive=Archive(f"{server.url}/spam.zip", {"Youtube01-Psy.csv": "Youtube01-Psy.csv"})))
    folder = locate("zipped", progress=False)
    assert [p.name for p in folder.iterdir()] == ["Youtube01-Psy.csv"]
    assert (folder / "Youtube01-Psy.csv").read_bytes() == SMALL


def test_a_file_without_public_url_says_where_to_get_it(cache, monkeypatch, tmp_path):
    with pytest.raises(DownloadError, match="CROWD_KERAS_MIRROR") as err:
        locate("pico", files=["docs.jsonl"], progress=False)
    msg = str(err.value)
    assert "github.com/yinfeiy/PICO-data" in msg and "CROWD_KERAS_DATA is not set" in msg
    assert "pico: docs.jsonl cannot be downloaded" in msg
    assert "DIR/pico/ and set CROWD_KERAS_DATA=DIR" in msg and "SOURCES['pico']" in msg
    monkeypatch.setenv("CROWD_KERAS_DATA", str(tmp_path))  # set, but without the set
    with pytest.raises(DownloadError) as err:
        load_truth_inference("adult_content")
    msg = str(err.value)
    assert "answer.csv, truth.csv cannot be downloaded" in msg
    assert f"CROWD_KERAS_DATA is {tmp_path}, and {tmp_path / 'truth_inference/adult_content'}" \
           f" lacks them" in msg


def test_a_set_with_a_file_no_source_serves_downloads_nothing(server, cache, monkeypatch):
    """One file served, one without a public URL: the error comes before any request."""
    monkeypatch.setitem(SOURCES, "half", DataSource("half", {
        "answer.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest(), f"{server.url}/half/a.csv"),
        "truth.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest())}, "https://example.org"))
    server.files["/half/a.csv"] = SMALL
    with pytest.raises(DownloadError, match="half: truth.csv cannot be downloaded"):
        locate("half", progress=False)
    assert server.requests == [] and not (cache / "half").exists()


def test_pinned_checksums_are_those_of_the_shared_files():
    root = require_data()
    for name, src in SOURCES.items():
        for file, remote in src.files.items():
            path = root / name / file
            assert fetch.sha256_of(path) == remote.sha256, path


def test_loaders_download_real_sets_from_a_mirror(server, cache, monkeypatch):
    """The real files, served by a loopback mirror, through the loaders' set names."""
    root = require_data()
    for name in ("truth_inference/dog", "wrench/youtube"):
        for file in SOURCES[name].files:
            server.files[f"/mirror/{name}/{file}"] = (root / name / file).read_bytes()
    monkeypatch.setenv(fetch.MIRROR_ENV, f"{server.url}/mirror/")
    ann, truth = load_truth_inference("dog")
    ref, ref_truth = load_truth_inference(root / "truth_inference" / "dog")
    assert ann.n_annotations == ref.n_annotations == 8070 and (truth == ref_truth).all()
    wr = load_wrench("youtube", "test")
    assert wr.L.shape == (250, 10)
    asked = len(server.requests)
    load_truth_inference("dog")
    assert len(server.requests) == asked  # cached
    assert {p for p, _ in server.requests} == {"/mirror/truth_inference/dog/answer.csv",
                                               "/mirror/truth_inference/dog/truth.csv",
                                               "/mirror/wrench/youtube/test.json",
                                               "/mirror/wrench/youtube/label.json"}


def test_labelme_without_classes_file_uses_the_built_in_names(tmp_path):
    from crowd_keras.datasets import LABELME_CLASSES, load_labelme

    src = require_data("labelme")
    for name in SOURCES["labelme"].files:
        if name != "classes.txt":
            (tmp_path / name).write_bytes((src / name).read_bytes())
    data = load_labelme(tmp_path)
    assert data.classes == list(LABELME_CLASSES) == (src / "classes.txt").read_text().split()
    assert data.annotations.n_annotations == load_labelme(src).annotations.n_annotations


def test_a_corrupt_cached_file_is_named_removed_and_fetched_again(server, cache, tiny):
    folder = locate("tiny", progress=False)
    (folder / "payload.bin").write_bytes(PAYLOAD[:1000])           # truncated in the cache
    with pytest.raises(DownloadError, match="corrupt or truncated") as err:
        locate("tiny", progress=False)
    msg = str(err.value)
    assert str(folder / "payload.bin") in msg and hashlib.sha256(PAYLOAD[:1000]).hexdigest() in msg
    assert tiny.files["payload.bin"].sha256 in msg and "answer.csv" not in msg
    assert not (folder / "payload.bin").exists() and (folder / "answer.csv").exists()
    assert locate("tiny", progress=False) == folder
    assert (folder / "payload.bin").read_bytes() == PAYLOAD


def test_data_env_without_the_set_is_named_with_the_files_it_lacks(cache, tiny, server,
                                                                     tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    (empty / "tiny").mkdir(parents=True)
    (empty / "tiny" / "answer.csv").write_bytes(SMALL)
    monkeypatch.setenv(fetch.DATA_ENV, str(empty))
    with pytest.raises(DownloadError) as err:
        locate("tiny", download=False)
    msg = str(err.value)
    assert f"CROWD_KERAS_DATA is {empty}, and {empty / 'tiny'} lacks ['payload.bin']" in msg
    del server.files["/tiny/payload.bin"]          # the download fails too: same words
    with pytest.raises(DownloadError, match="HTTP 404") as err:
        locate("tiny", progress=False)
    assert f"{empty / 'tiny'} lacks ['payload.bin']" in str(err.value)


def test_an_archive_member_that_cannot_be_written_leaves_no_temporary_file(server, cache,
                                                                            monkeypatch):
    """A folder where an extracted file goes: an error naming it, and nothing half-written or
    temporary left in the cache."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("set/answers.csv")
        info.size = len(SMALL)
        tar.addfile(info, io.BytesIO(SMALL))
    server.files = {"/sets.tar.gz": buf.getvalue()}
    monkeypatch.setitem(SOURCES, "arch", DataSource(
        "arch", {"answer.csv": RemoteFile(hashlib.sha256(SMALL).hexdigest())}, "x",
        archive=Archive(f"{server.url}/sets.tar.gz", {"set/answers.csv": "answer.csv"})))
    in_the_way = cache / "arch" / "answer.csv"
    in_the_way.mkdir(parents=True)
    with pytest.raises(CrowdDataError, match="answer.csv is a folder"):
        locate("arch", progress=False)
    assert [p.name for p in (cache / "arch").iterdir()] == ["answer.csv"]
    assert not list((cache / "downloads").iterdir())


def test_a_cache_path_that_is_a_file_is_named_before_any_download(server, cache, tiny,
                                                                   monkeypatch, tmp_path):
    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("x")
    monkeypatch.setenv(fetch.CACHE_ENV, str(not_a_folder))
    with pytest.raises(DownloadError, match=r"cache-file.*a file is in the way.*CROWD_KERAS_CACHE"):
        locate("tiny", progress=False)
    assert not server.requests
    monkeypatch.setenv(fetch.CACHE_ENV, str(cache))
    (cache / "tiny" / "payload.bin").mkdir(parents=True)
    with pytest.raises(DownloadError, match=r"payload.bin is a folder"):
        locate("tiny", progress=False)
    assert not [p for p in (cache / "tiny").iterdir() if p.name != "payload.bin"]


def test_a_part_file_that_cannot_be_written_is_named_not_called_an_interruption(server, cache,
                                                                                tiny):
    (cache / "tiny" / "payload.bin.part").mkdir(parents=True)
    for _ in range(2):  # "interrupted; run again to resume" failed the same way each run
        with pytest.raises(DownloadError, match=r"cannot write the download to \S+payload.bin"
                                                r".part \(Is a directory\).*CROWD_KERAS_CACHE"):
            locate("tiny", progress=False)
    assert not (cache / "tiny" / "payload.bin").exists()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="permissions do not bind root")
def test_a_read_only_cache_is_named(server, cache, tiny):
    cache.mkdir()
    cache.chmod(0o555)
    try:
        with pytest.raises(DownloadError, match=r"cannot make the folder \S+tiny .*"
                                                r"CROWD_KERAS_CACHE to a writable folder"):
            locate("tiny", progress=False)   # was a bare PermissionError
    finally:
        cache.chmod(0o755)


def test_a_mirror_that_is_a_folder_path_says_how_to_name_it(cache, tiny, tmp_path, monkeypatch):
    local = tmp_path / "mirror"
    (local / "tiny").mkdir(parents=True)
    (local / "tiny" / "payload.bin").write_bytes(PAYLOAD)
    (local / "tiny" / "answer.csv").write_bytes(SMALL)
    monkeypatch.setenv(fetch.MIRROR_ENV, str(local))
    with pytest.raises(DownloadError, match=r"CROWD_KERAS_MIRROR is '\S+mirror', not a URL .*"
                                            r"CROWD_KERAS_DATA=\S+mirror .*file://"):
        locate("tiny", progress=False)   # was ValueError: unknown url type
    assert not cache.exists()
    monkeypatch.setenv(fetch.MIRROR_ENV, local.as_uri())   # the advice works
    assert (locate("tiny", progress=False) / "payload.bin").read_bytes() == PAYLOAD


def test_a_given_folder_without_the_files_names_both_places_looked(tmp_path):
    with pytest.raises(CrowdDataError, match=r"no truth_inference/dog data at \S+: missing "
                                             r"\['answer.csv', 'truth.csv'\] \(nor is there a "
                                             r"folder \S+truth_inference/dog\)"):
        locate("truth_inference/dog", tmp_path)
    (tmp_path / "truth_inference" / "dog").mkdir(parents=True)
    (tmp_path / "truth_inference" / "dog" / "answer.csv").write_bytes(SMALL)
    with pytest.raises(CrowdDataError, match=r"missing \['answer.csv', 'truth.csv'\], and "
                                             r"\S+truth_inference/dog lacks \['truth.csv'\]"):
        locate("truth_inference/dog", tmp_path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="permissions do not bind root")
def test_a_corrupt_file_in_a_read_only_cache_is_named_with_the_way_out(server, cache, tiny):
    folder = locate("tiny", progress=False)
    (folder / "payload.bin").write_bytes(PAYLOAD[:1000])
    folder.chmod(0o555)
    try:
        with pytest.raises(DownloadError, match=r"cannot be removed: \S+payload.bin .*Remove them, "
                                                r"or set CROWD_KERAS_CACHE"):
            locate("tiny", progress=False)   # was a bare PermissionError
    finally:
        folder.chmod(0o755)


def test_the_cache_folder_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(fetch.CACHE_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "~/xdg")   # a quoted ~ the shell left as it is
    assert fetch.cache_dir() == tmp_path / "xdg" / "crowd-keras"   # was ./~/xdg/crowd-keras
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert fetch.cache_dir() == tmp_path / ".cache" / "crowd-keras"
    monkeypatch.setenv(fetch.CACHE_ENV, "~/mine")
    assert fetch.cache_dir() == tmp_path / "mine"


def test_a_mirror_without_the_file_is_named_as_the_place_to_fix(cache, tiny, tmp_path,
                                                                 monkeypatch):
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv(fetch.MIRROR_ENV, (tmp_path / "mirror").as_uri())
    with pytest.raises(DownloadError) as err:
        locate("tiny", progress=False)
    msg = str(err.value)
    # it said "no network? ... or set CROWD_KERAS_MIRROR to the URL of a server", while set
    assert "the mirror down?" in msg and "no network" not in msg
    assert f"CROWD_KERAS_MIRROR is {(tmp_path / 'mirror').as_uri()}: it must serve " in msg
    assert "or set CROWD_KERAS_MIRROR" not in msg


@pytest.mark.parametrize("given", ["no", "false", 0, None])
def test_download_given_as_a_word_or_number_is_refused_before_any_request(server, cache, tiny,
                                                                          given):
    # download="no" is true by its truth value: it downloaded
    with pytest.raises(ValueError, match=r"download must be True or False, got "):
        locate("tiny", download=given, progress=False)
    with pytest.raises(ValueError, match=r"progress must be True or False"):
        locate("tiny", progress="no")
    assert server.requests == [] and not (cache / "tiny").exists()


def test_a_data_folder_file_that_is_not_the_pinned_one_is_said(cache, tiny, tmp_path,
                                                                monkeypatch):
    """A copy in CROWD_KERAS_DATA cut at a row boundary read as a smaller set without a word
    (a cached copy is checked, removed and fetched again); a local one is read, and said."""
    own = tmp_path / "data" / "tiny"
    own.mkdir(parents=True)
    (own / "payload.bin").write_bytes(PAYLOAD)
    (own / "answer.csv").write_bytes(SMALL[: len(SMALL) // 2])
    monkeypatch.setenv(fetch.DATA_ENV, str(own.parent))
    with pytest.warns(UserWarning, match=r"CROWD_KERAS_DATA: .*answer\.csv \(sha256 [0-9a-f]{64}, "
                                         r"expected [0-9a-f]{64}\): not the file\(s\) as "
                                         r"distributed") as said:
        assert locate("tiny", download=False) == own
    assert said[0].filename == __file__ and "payload.bin" not in str(said[0].message)
    (own / "answer.csv").write_bytes(SMALL)                 # the pinned file: nothing said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert locate("tiny", download=False) == own


def test_a_missing_file_without_public_source_says_so_and_what_the_data_folder_lacks(
        cache, monkeypatch, tmp_path):
    """The error named the set's required files (not the one wanted) and told the user to set
    CROWD_KERAS_DATA to the folder already set; with download=False it did not say that no
    public source serves the file."""
    src = tmp_path / "data" / "truth_inference" / "bluebirds"
    src.mkdir(parents=True)
    for name in ("answer.csv", "truth.csv"):
        (src / name).write_bytes(b"x")
    monkeypatch.setenv(fetch.DATA_ENV, str(tmp_path / "data"))
    with pytest.raises(DownloadError) as err:
        locate("truth_inference/bluebirds", files=["vgg16_features.npz"], download=False)
    msg = str(err.value)
    assert "No public source serves ['vgg16_features.npz']" in msg
    assert f"{src} lacks ['vgg16_features.npz']" in msg
