"""The README: short, true set-up commands that CI runs, the three quick starts, no lab notes.

Its code blocks run in tests/test_docs.py (with the tutorials').
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# hand-written pages (the benchmark records under benchmarks/ keep their dates: they are records)
PAGES = {"README.md": README, **{p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
                                 for p in sorted((ROOT / "docs").rglob("*.md"))}}


def run(args, timeout=600):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    res = subprocess.run(args, cwd=ROOT, env=env, timeout=timeout, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res.stdout


def setup_commands():
    block = re.search(r"## Set-up: two commands.*?```bash\n(.*?)```", README, flags=re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_is_short():
    assert len(README.encode("utf-8")) <= 8192


def test_readme_has_the_three_quick_starts_and_links_to_the_docs():
    for title in ("Quick start 1: a crowd layer", "Quick start 2: aggregate a CSV",
                  "Quick start 3: replace Snorkel's LabelModel", "## Results, as measured"):
        assert title in README
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), f"README links to a missing file: {link}"


def _pip_args_and_commands(script: str):
    """What a shell script pip-installs (its arguments, quiet flags aside) and its commands
    other than pip's, in order."""
    script = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", script)  # ${TORCH_INSTALL:-torch==...}
    commands = [c.strip() for line in script.splitlines() if not line.lstrip().startswith("#")
                for c in line.split("&&") if c.strip()]
    pip = [arg for c in commands if c.startswith("pip install")
           for arg in shlex.split(c)[2:] if arg not in ("-q", "--quiet")]
    return sorted(pip), [c for c in commands if not c.startswith("pip install")]


def test_two_setup_commands_and_ci_runs_the_second():
    first, second = setup_commands()
    assert first == "pip install -e . && crowd-keras demo"
    readme_pip, readme_runs = _pip_args_and_commands(second)
    assert readme_runs == ["python -m pytest"] and "torch==2.13.0" in readme_pip
    # .ci/run installs what the README's test command installs, runs the same tests, then
    # the tests marked slow that the default run leaves out (tox.ini)
    ci_pip, ci_runs = _pip_args_and_commands((ROOT / ".ci/run").read_text(encoding="utf-8"))
    ci_runs = [c for c in ci_runs if c.startswith("python -m pytest")]
    assert (ci_pip, ci_runs) == (readme_pip, ["python -m pytest", "python -m pytest -m slow"]), (
        f".ci/run does not run the README's test command and then the slow tests: {second}")
    assert 'addopts = -ra -n 2 --dist loadgroup -m "not slow"' in (ROOT / "tox.ini").read_text(
        encoding="utf-8")


def test_no_dates_clock_times_or_scratch_paths_in_the_pages():
    bad = {"a date": r"\b20\d\d-\d\d-\d\d\b", "a clock time": r"(?<![\w:])\d{1,2}:\d\d(?![\w:])",
           "a shared or scratch path": r"\.\./shared|/work/|scratch",
           "a load average": r"load average", "lab notes": r"[Cc]hronology|the issue's"}
    found = [f"{name}: {what} ({m.group(0)!r})" for name, text in PAGES.items()
             for what, pattern in bad.items() for m in [re.search(pattern, text)] if m]
    assert not found, found


def test_setup_py_long_description_is_the_readme():
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert re.search(r'long_description=\(HERE / "README.md"\)\.read_text', setup)


def test_readme_cli_lines_run(tmp_path):
    line = re.search(r"^crowd-keras label-studio aggregate .*?--annotators \S+", README,
                     flags=re.S | re.M).group(0).replace("\\\n", " ")
    args = shlex.split(line)
    out = run([sys.executable, "-m", "crowd_keras", *args[1:]])
    assert "wrote" in out and "predictions" in out
