"""The README's code runs as written (each ```python block in its own process)."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_data

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def run(args, timeout=600):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    res = subprocess.run(args, cwd=ROOT, env=env, timeout=timeout, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res.stdout


def test_readme_has_the_stories():
    assert len(BLOCKS) >= 5
    for title in ("Story 1: add a crowd layer", "Story 2: process a Label Studio export",
                  "Story 3: replace Snorkel's LabelModel"):
        assert title in README


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_block_runs(index):
    require_data()
    out = run([sys.executable, "-c", BLOCKS[index]])
    assert out.strip(), "each README block prints what it shows"


def test_readme_cli_lines_run(tmp_path):
    line = re.search(r"^crowd-keras label-studio aggregate .*?--annotators \S+", README,
                     flags=re.S | re.M).group(0).replace("\\\n", " ")
    args = shlex.split(line)
    out = run([sys.executable, "-m", "crowd_keras", *args[1:]])
    assert "wrote" in out and "predictions" in out
