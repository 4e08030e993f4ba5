"""The core works without Keras; the Keras parts say in one line which extra to install.

Each check runs in a fresh interpreter in which Keras (or its backend) cannot be imported:
``sys.modules[name] = None`` makes ``import name`` fail as it does when it is not installed,
and Keras' own import of a missing backend is the real one.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, *block: str, env: dict = None, cwd: Path = ROOT):
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, env=full_env, cwd=cwd, timeout=120)


def test_keras_parts_without_keras_name_the_extra():
    res = _run("import crowd_keras.layers", "keras")
    assert res.returncode == 1
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("crowd_keras.errors.MissingExtraError: "), res.stderr
    assert "pip install 'crowd-keras[tensorflow]'" in last and "missing: keras" in last
    # one error, not a chain of tracebacks
    assert res.stderr.count("Traceback") == 1, res.stderr
    # every public Keras entry point says the same (a failed import is retried each time)
    res = _run("""
        from crowd_keras.errors import MissingExtraError
        for name in ("crowd_keras.losses", "crowd_keras.models", "crowd_keras.training",
                     "crowd_keras.callbacks", "crowd_keras.optimizers"):
            try:
                __import__(name)
            except MissingExtraError as exc:
                assert "crowd-keras[tensorflow]" in str(exc), (name, exc)
            else:
                raise AssertionError(name + " imported without Keras")
        print("ALL SAY IT")
    """, "keras")
    assert "ALL SAY IT" in res.stdout, res.stderr


def test_missing_backend_names_its_own_extra():
    res = _run("import crowd_keras.layers", "jax", env={"KERAS_BACKEND": "jax"})
    last = res.stderr.strip().splitlines()[-1]
    assert "MissingExtraError" in last and "pip install 'crowd-keras[jax]'" in last, res.stderr
    assert "missing: jax" in last


def test_missing_extra_error_is_an_import_error():
    from crowd_keras.errors import MissingExtraError

    assert issubclass(MissingExtraError, ImportError)


BLOCKED = ("keras", "tensorflow", "torch", "jax")


def test_core_and_both_command_lines_run_without_any_framework(tmp_path):
    (tmp_path / "votes.csv").write_text(
        "task,worker,label\n1,a,cat\n1,b,cat\n1,c,dog\n2,a,dog\n2,b,dog\n2,c,dog\n"
        "3,a,cat\n3,b,dog\n3,c,cat\n")
    res = _run("""
        from crowd_keras import Annotations
        from crowd_keras.aggregation import available_label_models, get_label_model
        from crowd_keras.cli import main
        from crowd_keras.cli import label_studio  # the Label Studio reader's command line
        from crowd_keras.integrations.label_studio import read_export  # noqa: F401
        assert main(["demo", "--items", "200", "--annotators", "10", "--quiet"]) == 0
        assert main(["aggregate", "votes.csv", "--out", "labels.csv", "--quiet"]) == 0
        for name in available_label_models(aliases=False):
            if name != "lia":  # LIA's default numpy engine; its Keras engine needs an extra
                get_label_model(name)
        bad = [m for m in sys.modules if m.split(".")[0] in %r and sys.modules[m] is not None]
        assert not bad, bad
        print("CORE OK")
    """ % (BLOCKED,), *BLOCKED, cwd=tmp_path)
    assert "CORE OK" in res.stdout, res.stderr[-3000:]
    assert (tmp_path / "labels.csv").read_text().startswith("task,label,probability")


def _setup_kwargs() -> dict:
    import runpy
    from unittest import mock

    with mock.patch("setuptools.setup") as setup:  # read setup.py's arguments, build nothing
        runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    return setup.call_args.kwargs


def test_install_requires_is_the_light_core_and_each_backend_extra_brings_keras():
    kwargs = _setup_kwargs()
    names = {req.split(">")[0].split("=")[0].split("<")[0].strip()
             for req in kwargs["install_requires"]}
    assert names == {"numpy", "pandas", "scipy"}
    extras = kwargs["extras_require"]
    for extra, backend in (("tensorflow", "tensorflow"), ("tensorflow-cpu", "tensorflow-cpu"),
                           ("torch", "torch"), ("jax", "jax")):
        assert any(r.startswith("keras") for r in extras[extra]), extra
        assert any(r.startswith(backend) for r in extras[extra]), extra
    # the suite's Keras tests need TensorFlow (models saved there load on torch and jax)
    assert any(r.startswith("tensorflow>") for r in extras["test"])
    assert not any(r.startswith("tensorflow-cpu") for r in extras["test"] + extras["all"])
