"""Every example runs as written (small settings: a smoke test each)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_data

ROOT = Path(__file__).resolve().parents[1]


def run_example(*args, timeout=600):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, env=env, timeout=timeout,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res.stdout


@pytest.mark.slow
def test_keras_crowd_layer_example():
    data = require_data()
    out = run_example(ROOT / "examples" / "keras_crowd_layer.py", "--quick", "--data", data)
    assert "test accuracy" in out.lower()


@pytest.mark.slow
def test_keras_conal_example():
    out = run_example(ROOT / "examples" / "keras_conal.py", "--epochs", "2")
    assert "classifier test accuracy" in out and "learned common confusion" in out


@pytest.mark.slow
def test_keras_conal_example_on_labelme():
    data = require_data("labelme")
    out = run_example(ROOT / "examples" / "keras_conal.py", "--labelme", "--epochs", "1",
                      "--data", data.parent)
    assert "1000 items, 59 annotators, 2547 annotations" in out
    assert "classifier test accuracy" in out and "true common confusion" not in out


@pytest.mark.slow
def test_pico_tagger_example():
    data = require_data("pico")
    out = run_example(ROOT / "examples" / "pico_tagger.py", "--quick", "--epochs", "1",
                      "--data", data.parent)
    assert "tagger trained on crowd layer" in out and "tagger trained on majority-vote tags" in out
    assert out.count(": 1 epochs (best 1") == 2, out   # --epochs holds with --quick
    # --quick (2 epochs on a slice) may tag nothing: then it says so instead of "F1 0.000"
    assert (("spans predicted on the test abstracts" in out and "gold half token P" in out)
            or "predicts no span on the test abstracts" in out), out
    assert "0 spans predicted" not in out


@pytest.mark.slow
def test_pico_labeling_functions_example():
    data = require_data("pico")
    out = run_example(ROOT / "examples" / "pico_lfs.py", "--data", data.parent)
    for lf in ("people_phrase", "with_condition", "age_range", "n_equals", "statistics_outside"):
        assert lf in out
    assert "emp_accuracy" in out and "conflicts" in out
    for name in ("functions alone", "crowd alone", "crowd + functions"):
        assert f"{name}: token P" in out


def test_demo_command_is_the_readme_main_job():
    out = run_example("-m", "crowd_keras", "demo", "--items", "300")
    assert "majority_vote" in out and "dawid_skene" in out
