"""A real Label Studio server on loopback for tests (facts: ../shared/notes/label-studio.md).

The first start on a new data folder sets up the database (45-60 s); a start on a copy of a
stopped, initialised folder takes about 7 s. Tests therefore build one template folder per
session (:func:`build_template`) and start servers on copies of it (:func:`start_copy`).

The executable is found from ``$LABEL_STUDIO_BIN``, then ``.ls-venv/bin/label-studio`` in the
repository, then ``PATH``. The server binds 127.0.0.1 only, makes no outbound calls, and
writes its log to a file of the data folder's parent (read it with :meth:`log_text`).
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
ADMIN_EMAIL = "admin@example.com"
ADMIN_PASSWORD = "Adm1n-pass-123"
_BOUND = re.compile(r"Starting development server at http://127\.0\.0\.1:(\d+)/")
# Bare variables the server reads as its own settings, and our own secret.
_UNSET = ("HOST", "PORT", "USERNAME", "PASSWORD", "LABEL_STUDIO_API_KEY")


def find_executable() -> Optional[str]:
    """Path of the ``label-studio`` executable, or None."""
    env = os.environ.get("LABEL_STUDIO_BIN")
    if env:
        return env if Path(env).exists() else shutil.which(env)
    venv = ROOT / ".ls-venv" / "bin" / "label-studio"
    if venv.exists():
        return str(venv)
    return shutil.which("label-studio")


def new_token() -> str:
    """A random legacy API token (40 hex characters, like Label Studio's own)."""
    return secrets.token_hex(20)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabelStudioServer:
    """One ``label-studio start`` process on a data folder, bound to 127.0.0.1."""

    def __init__(self, executable: str, data_dir: Path, token: str,
                 log_path: Optional[Path] = None) -> None:
        self.executable = executable
        self.data_dir = Path(data_dir)
        self.token = token
        self.log_path = Path(log_path) if log_path else self.data_dir.with_name(
            self.data_dir.name + ".log")
        self.port: Optional[int] = None
        self.process: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in _UNSET}
        env.update(LABEL_STUDIO_BASE_DATA_DIR=str(self.data_dir), LATEST_VERSION_CHECK="false",
                   COLLECT_ANALYTICS="false", SENTRY_DSN="", FRONTEND_SENTRY_DSN="",
                   PYTHONUNBUFFERED="1")
        return env

    def start(self, timeout: float = 240.0) -> "LabelStudioServer":
        """Start and wait until ``GET /health`` answers UP (raises with the log tail if not)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        cmd = [self.executable, "start", "--no-browser", "--internal-host", "127.0.0.1",
               "--port", str(self.port), "--data-dir", str(self.data_dir),
               "--username", ADMIN_EMAIL, "--password", ADMIN_PASSWORD,
               "--user-token", self.token, "--enable-legacy-api-token"]
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self._env(),
                                            start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"label-studio exited with code {self.process.returncode}:\n"
                                   f"{self.log_tail()}")
            bound = _BOUND.findall(self.log_text())
            if bound:  # it moves to port+1 silently when the port was taken meanwhile
                self.port = int(bound[-1])
            if self.healthy():
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"label-studio did not answer /health within {timeout:.0f} s:\n"
                           f"{self.log_tail()}")

    def healthy(self) -> bool:
        if self.port is None:
            return False
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                return resp.status == 200 and b"UP" in resp.read()
        except (urllib.error.URLError, OSError):
            return False

    def _signal(self, sig: int, process: Optional[subprocess.Popen] = None) -> None:
        process = self.process if process is None else process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, sig)  # the session this helper started
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 15.0) -> None:
        """Stop gracefully (SIGTERM, then SIGKILL after ``timeout``)."""
        if self.process is None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def kill(self) -> None:
        """Kill at once (SIGKILL), as a crash would. The kill tests call it from a timer
        thread while the test goes on: it kills the process it found and forgets it only if
        no restart has replaced it meanwhile."""
        process = self.process
        if process is None:
            return
        self._signal(signal.SIGKILL, process)
        process.wait(10)
        if self.process is process:
            self.process = None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:]).replace(self.token, "***")


def build_template(executable: str, data_dir: Path, token: str) -> Path:
    """Initialise a data folder (admin user + token) once, then stop the server."""
    server = LabelStudioServer(executable, data_dir, token)
    server.start()
    server.stop()
    return Path(data_dir)


def start_copy(executable: str, template: Path, data_dir: Path, token: str) -> LabelStudioServer:
    """Copy a stopped template folder to ``data_dir`` and start a server on the copy."""
    shutil.copytree(template, data_dir, symlinks=True)
    return LabelStudioServer(executable, data_dir, token).start()


# ---------------------------------------------------------------------------- demo project
DEMO_CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="positive"/><Choice value="negative"/><Choice value="neutral"/>
  </Choices>
  <Choices name="topics" toName="text" choice="multiple">
    <Choice value="sports"/><Choice value="politics"/><Choice value="tech"/>
  </Choices>
  <Rating name="quality" toName="text" maxRating="5"/>
</View>
"""
DEMO_USERS = ("ann1@example.com", "ann2@example.com", "ann3@example.com")
# task text -> annotations as (user, sentiment, topics, quality, flags); user 0 is the admin.
DEMO_ANNOTATIONS = {
    "t1": [(1, "positive", ["sports"], 4, ""), (2, "positive", ["sports", "tech"], 5, ""),
           (3, "negative", ["tech"], 2, "")],
    "t2": [(1, "negative", None, None, ""), (2, "negative", ["politics"], None, ""),
           (3, None, None, None, "cancelled")],
    "t3": [(1, "neutral", None, None, ""), (2, "positive", None, None, ""),
           (1, "positive", None, None, "")],  # user 1 twice: the later one wins
    "t4": [(2, "negative", None, None, "ground_truth"), (1, "negative", None, None, ""),
           (3, "positive", None, None, "")],
    "t5": [(3, None, None, None, "cancelled"), (1, None, None, None, "cancelled")],
    "t6": [],
    "t7": [(1, None, ["politics"], None, ""), (2, "neutral", None, 3, "")],
    "t8": [(0, "positive", ["sports"], 5, ""), (3, "positive", None, None, "")],
}


def demo_result(sentiment=None, topics=None, quality=None) -> list:
    out = []
    if sentiment is not None:
        out.append({"from_name": "sentiment", "to_name": "text", "type": "choices",
                    "value": {"choices": [sentiment]}})
    if topics is not None:
        out.append({"from_name": "topics", "to_name": "text", "type": "choices",
                    "value": {"choices": list(topics)}})
    if quality is not None:
        out.append({"from_name": "quality", "to_name": "text", "type": "rating",
                    "value": {"rating": quality}})
    return out


def ensure_users(client, emails) -> list:
    """User ids of ``emails`` (created when missing), in that order."""
    have = {u.email: u.id for u in client.users.list()}
    ids = []
    for email in emails:
        if email not in have:
            name = email.split("@")[0]
            have[email] = client.users.create(username=name, email=email, first_name=name,
                                              last_name="Tester").id
        ids.append(have[email])
    return ids


def build_demo_project(client, title: str = "crowd-keras demo") -> dict:
    """Create the demo project through the API; returns its id, task ids and user ids."""
    users = [client.users.whoami().id] + ensure_users(client, DEMO_USERS)
    project = client.projects.create(title=title, label_config=DEMO_CONFIG)
    texts = list(DEMO_ANNOTATIONS)
    imported = client.projects.import_tasks(project.id, request=[{"text": t} for t in texts],
                                            return_task_ids=True)
    task_ids = dict(zip(texts, imported.task_ids))
    for text, anns in DEMO_ANNOTATIONS.items():
        for user, sentiment, topics, quality, flags in anns:
            cancelled = flags == "cancelled"
            client.annotations.create(id=task_ids[text], completed_by=users[user],
                                      result=[] if cancelled else demo_result(sentiment, topics,
                                                                              quality),
                                      was_cancelled=cancelled,
                                      ground_truth=flags == "ground_truth")
            time.sleep(0.01)  # distinct created_at, so "latest" is well defined
    return {"project": project.id, "tasks": task_ids, "users": users}


def export_bytes(client, project_id: int, export_type: str, expand_users: bool = False) -> bytes:
    """An export as the server makes it; ``expand_users`` gives ``completed_by`` objects
    (a snapshot export with ``annotations__completed_by.only_id = false``)."""
    if not expand_users:
        data = client.projects.exports.as_binary(project_id, export_type=export_type)
        return data if isinstance(data, bytes) else b"".join(data)
    snap = client.projects.exports.create(
        project_id, title="crowd-keras test",
        serialization_options={"annotations__completed_by": {"only_id": False}})
    for _ in range(120):
        snap = client.projects.exports.get(project_id, export_pk=snap.id)
        if snap.status == "completed":
            break
        if snap.status == "failed":
            raise RuntimeError("snapshot export failed")
        time.sleep(0.25)
    data = client.projects.exports.download(project_id, export_pk=snap.id, export_type=export_type)
    return data if isinstance(data, bytes) else b"".join(data)


FIXTURES = ROOT / "tests" / "data" / "label_studio"


def write_fixtures(out: Path = FIXTURES) -> None:
    """Regenerate the parser-test fixtures from a fresh server (about 1 minute)."""
    import tempfile

    from label_studio_sdk import LabelStudio

    exe = find_executable()
    if exe is None:
        raise SystemExit("label-studio executable not found")
    token = new_token()
    with tempfile.TemporaryDirectory() as tmp:
        server = LabelStudioServer(exe, Path(tmp) / "data", token).start()
        try:
            client = LabelStudio(base_url=server.url, api_key=token)
            demo = build_demo_project(client)
            pid = demo["project"]
            out.mkdir(parents=True, exist_ok=True)
            (out / "config.xml").write_text(DEMO_CONFIG)
            files = {"demo.json": ("JSON", False), "demo_min.json": ("JSON_MIN", False),
                     "demo.csv": ("CSV", False), "demo.tsv": ("TSV", False),
                     "demo_users.json": ("JSON", True), "demo_users_min.json": ("JSON_MIN", True)}
            for name, (kind, expand) in files.items():
                (out / name).write_bytes(export_bytes(client, pid, kind, expand))
            # Label Studio stores values that are not in the config: the reader must refuse them.
            bad = client.projects.create(title="unknown label", label_config=DEMO_CONFIG)
            task = client.projects.import_tasks(bad.id, request=[{"text": "u1"}],
                                                return_task_ids=True).task_ids[0]
            client.annotations.create(id=task, completed_by=demo["users"][1],
                                      result=demo_result("bogus"))
            (out / "unknown_label.json").write_bytes(export_bytes(client, bad.id, "JSON"))
        finally:
            server.stop()
        assert token not in server.log_text()


if __name__ == "__main__":
    write_fixtures()
    print(f"wrote fixtures to {FIXTURES}")
