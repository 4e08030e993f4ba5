"""The documentation site builds with --strict, and the code of every page runs as written."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, IN_CI, require_data
from docs_blocks import README, ROOT, all_blocks, blocks, blocks_to_run, documented_files

DOCS = ROOT / "docs"
BLOCKS = all_blocks()
TESTED = blocks_to_run(BLOCKS)  # a block that a later one continues runs as part of that one


def _needs(module: str) -> None:
    """Skip when a docs tool is missing (a failure under CI=true: the test extra has it)."""
    try:
        __import__(module)
    except ImportError:
        if IN_CI:
            pytest.fail(f"{module} is not installed; CI installs the test extra, which has it")
        pytest.skip(f"{module} is not installed (pip install -e '.[docs]')")


def test_mkdocs_build_is_strict_clean(tmp_path):
    """Broken links, missing anchors, unknown API references and docstring errors fail."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        _needs(module)
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    site = tmp_path / "site"
    # the API reference was rendered from the docstrings, and the hook published the records
    assert "crowd_keras.aggregation.DawidSkene" in (site / "reference/aggregation/index.html"
                                                    ).read_text(encoding="utf-8")
    records = sorted(p.stem for p in (ROOT / "benchmarks/results").glob("*.md"))
    assert records and all((site / "benchmarks/results" / r / "index.html").exists()
                           for r in records)


def test_every_record_is_listed_on_the_results_page():
    page = (DOCS / "results.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((ROOT / "benchmarks/results").glob("*.md"))
               if f"(benchmarks/results/{p.name})" not in page]
    assert not missing, f"docs/results.md does not link these records: {missing}"


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")]
    missing = [p for p in pages if not re.search(rf"^\s*- .*: {re.escape(p)}\s*$", nav, re.M)]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_the_reference_covers_the_public_modules():
    text = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "reference").glob("*.md"))
    for module in ("crowd_keras.annotations", "crowd_keras.aggregation", "crowd_keras.layers",
                   "crowd_keras.losses", "crowd_keras.models", "crowd_keras.sequences",
                   "crowd_keras.datasets", "crowd_keras.distributed",
                   # crowd_keras.integrations lives in the top-level integrations/ folder,
                   # which is what mkdocstrings finds from the checkout
                   "integrations.snorkel", "integrations.label_studio"):
        assert f"::: {module}" in text, module


def test_skipped_blocks_are_few_and_say_why():
    skipped = [b for b in BLOCKS if b.no_run is not None]
    # the README and tutorials skip at most 3; the other pages a few more (a signature, a
    # Keras model trained on every fold)
    tutorials = [b for b in skipped if b.path.parent.name == "tutorials" or b.path == README]
    assert len(tutorials) <= 3 and len(skipped) <= 5, [b.name for b in skipped]
    assert all(len(b.no_run) >= 10 for b in skipped), [b.name for b in skipped]
    assert len(BLOCKS) - len(skipped) >= 40
    assert {p.relative_to(ROOT).as_posix() for p in documented_files()} >= {
        "README.md", "docs/tutorials/crowd-layer.md", "docs/tutorials/label-studio.md",
        "docs/tutorials/snorkel.md", "docs/features.md", "docs/spans.md",
        "docs/guides/label-studio-server.md"}


def test_a_continuing_block_runs_after_the_previous_block_that_runs(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\na = 1\n```\n\n<!-- no-run: needs a live server -->\n"
                    "```python\nb = 2\n```\n\n<!-- continues -->\n```python\nprint(a)\n```\n"
                    "<!-- continues -->\n```python\nprint(a + 1)\n```\n", encoding="utf-8")
    found = blocks(page)
    first, skipped, second, third = found
    assert skipped.no_run == "needs a live server" and first.continues is None
    assert second.continues == first.line and second.no_run is None
    assert second.code == "a = 1\n\nprint(a)\n"
    assert third.continues == second.line
    assert third.code == "a = 1\n\nprint(a)\n\nprint(a + 1)\n"
    assert blocks_to_run(found) == [skipped, third]
    page.write_text("<!-- continues -->\n```python\nprint(a)\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="continues"):
        blocks(page)


@pytest.mark.slow
@pytest.mark.parametrize("block", TESTED, ids=[b.name for b in TESTED])
def test_python_block_runs(block, tmp_path):
    if block.no_run is not None:
        pytest.skip(f"no-run: {block.no_run}")
    if "load_" in block.code:
        require_data()
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1", MPLBACKEND="Agg",
               CROWD_KERAS_DATA=str(DATA))
    # run from the repository root: the Label Studio blocks read tests/data/label_studio
    res = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, timeout=600,
                         capture_output=True, text=True)
    joined = " (run joined after the blocks it continues)" if block.continues else ""
    assert res.returncode == 0, (f"{block.name}{joined}\n" + res.stdout[-2000:]
                                 + res.stderr[-4000:])
    assert res.stdout.strip(), f"{block.name}: each block prints what it shows"
