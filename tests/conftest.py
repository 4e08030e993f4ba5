"""Shared test fixtures: quiet TensorFlow, one torch thread, and the shared data folder."""
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")  # torch on 2 cores runs 25x slower with 2 threads
# JAX multiplies float32 matrices in TF32 on recent NVIDIA GPUs unless told otherwise (an H100
# run failed three dense-vs-indexed checks by 7e-4 to 2e-3 relative): the tests compare the
# math, in full float32, on every device (read when jax is imported, in subprocesses too)
os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CROWD_KERAS_DATA", ROOT.parent / "shared" / "data"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
if DATA.exists():  # the loaders and the examples' subprocesses read it without a path
    os.environ.setdefault("CROWD_KERAS_DATA", str(DATA))

try:   # property tests: no per-example deadline on a loaded 2-core machine, and in CI the
    # same examples on every run (a rare example found there would fail one run in many)
    from hypothesis import settings as hypothesis_settings

    hypothesis_settings.register_profile("crowd-keras", deadline=None, derandomize=IN_CI,
                                         print_blob=True)
    hypothesis_settings.load_profile("crowd-keras")
except ImportError:   # hypothesis is in the test extra; without it those tests fail on import
    pass


def require_data(*parts: str) -> Path:
    """The path under the shared data folder; skip if absent (a failure under CI=true)."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        msg = f"shared data not found at {path} (tests read ../shared/data beside the clone)"
        if IN_CI:
            pytest.fail(msg + "; CI must have it")
        pytest.skip(msg)
    return path


def subprocess_env(**extra: str) -> dict:
    """The environment of a test's child Python process: this checkout first on the path,
    one thread, TensorFlow quiet; ``extra`` (e.g. ``KERAS_BACKEND``) on top."""
    env = dict(os.environ, OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3",
               TF_ENABLE_ONEDNN_OPTS="0", PYTHONPATH=str(ROOT) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    env.update(extra)
    return env


# Scripts that need another Keras backend run in a fresh process; several checks share one
# process (each script in a namespace of its own) so that Keras, the backend and TensorFlow
# are imported once, not once per check (5-8 s of CPU each time). A check's failure fails its
# own test only (its traceback is its output); a crash of the process fails them all.
PARTS = """
import contextlib, io, json, sys, traceback
for name, script, args in json.loads(sys.argv[1]):
    sys.argv = ["-c", *args]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(script, name, "exec"), {"__name__": "__main__"})
    except BaseException:
        out.write(traceback.format_exc())
    print("PART " + json.dumps([name, out.getvalue()]), flush=True)
"""


def run_parts(parts, timeout: float = 600, **env) -> dict:
    """Run ``[(name, script, args)]`` in one fresh process (``PARTS``), ``env`` on top of
    :func:`subprocess_env`: ``name -> output`` (its printed lines, then its traceback if it
    raised)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", PARTS, json.dumps(parts)], cwd=ROOT,
                          env=subprocess_env(**env), capture_output=True, text=True,
                          timeout=timeout)
    found = dict(json.loads(line[5:]) for line in proc.stdout.splitlines()
                 if line.startswith("PART "))
    assert proc.returncode == 0 and len(found) == len(parts), (
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}")
    return found


def require_module(name: str) -> None:
    """Skip when ``name`` is not installed (a failure under CI=true: the test extra has it)."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        msg = f"{name} is not installed (it is in the test extra)"
        if IN_CI:
            pytest.fail(msg + "; CI must have it")
        pytest.skip(msg)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return require_data()


@pytest.fixture(autouse=True)
def _registry_restored():
    """A test that registers a label model (``register_label_model``, Snorkel's
    ``register_method``) must not leak it into later tests of the same process."""
    from crowd_keras.aggregation.registry import LABEL_MODELS
    from crowd_keras.distributed.methods import METHODS

    LABEL_MODELS.names()   # registrations found on disk first, so a restore keeps them
    saved = [(r, r.snapshot()) for r in (LABEL_MODELS, METHODS)]
    yield
    for registry, snapshot in saved:
        registry.restore(snapshot)


@pytest.fixture
def dask_threads():
    """Dask's threaded scheduler for the test (the Dask test modules use it for every test:
    ``pytestmark = pytest.mark.usefixtures("dask_threads")``)."""
    import dask

    with dask.config.set(scheduler="threads"):
        yield
