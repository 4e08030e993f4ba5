"""The command lines read cleanly: every option documented with its default and choices, the
method list from the one registry, errors in CLI words without a traceback (unless --debug),
progress on long work unless --quiet, and --control alone where the export allows it."""
from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from crowd_keras.aggregation import available_label_models
from crowd_keras.cli import SLOW_METHODS, build_parser, main
from crowd_keras.progress import Heartbeat, Progress

DATA = Path(__file__).parent / "data" / "label_studio"


def leaf_parsers(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from leaf_parsers(child, path + (name,))


LEAVES = dict(leaf_parsers(build_parser()))


def test_top_help_reads_cleanly():
    text = build_parser().format_help()
    assert "``" not in text and ":class:" not in text and ":func:" not in text
    assert "crowd-keras: label models" in text and "demo" in text and "label-studio" in text


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_option_has_help_default_and_choices(path):
    parser = LEAVES[path]
    text = parser.format_help()
    assert "``" not in text
    flat = " ".join(text.split())
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"{path}: {action.dest} has no help"
        # identity, not ``in``: 0 == False, and a default of 0 (the seeds) is shown too
        if action.option_strings and action.default is not None and action.default is not False:
            assert f"default: {action.default}" in flat, (path, action.dest)
        if action.choices and action.dest not in ("method", "methods"):
            assert all(str(c) in flat for c in action.choices), (path, action.dest)
    for method in available_label_models(aliases=False):
        if any(a.dest == "method" for a in parser._actions):
            assert method in flat


def test_demo_methods_help_matches_what_runs(capsys):
    help_text = " ".join(LEAVES[("demo",)].format_help().split())
    listed = re.search(r"\(default: ([a-z_ ]+);", help_text).group(1).split()
    assert main(["demo", "--items", "200", "--annotators", "10", "--quiet"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[3:] if line.strip()]
    assert rows == listed
    assert set(listed) | set(SLOW_METHODS) == set(available_label_models(aliases=False))


def test_unknown_method_is_one_line_with_the_registry(capsys):
    with pytest.raises(SystemExit) as info:
        main(["aggregate", "x.csv", "--out", "y.csv", "--method", "nope"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert "unknown label model 'nope'" in err and "dawid_skene" in err
    # any alias, any case
    args = build_parser().parse_args(["aggregate", "x.csv", "--out", "y", "--method", "Dawid-Skene"])
    assert args.method == "dawid_skene"


def test_failure_without_traceback_unless_debug(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    pd.DataFrame({"task": ["a"], "worker": ["u"], "label": ["x"]}).to_csv(src, index=False)
    # a name longer than the file system allows: the write fails with an OSError no check
    # foresees (an output under a file is now refused before the fit)
    argv = ["aggregate", str(src), "--out", str(tmp_path / ("x" * 300 + ".csv")), "--method",
            "mv", "--quiet"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    # the file given, as Unix tools name a refusal of the system (it was "OSError: [Errno 36]
    # File name too long: '.xxx...csv.x1y2.tmp'", a temporary file, with the --debug hint)
    assert err == f"crowd-keras: error: {tmp_path / ('x' * 300 + '.csv')}: File name too long\n"
    assert main(argv + ["--debug"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_label_config_without_the_sdk_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['label_studio_sdk'] = None\n"
            "from crowd_keras.cli import main\n"
            f"sys.exit(main(['label-studio', 'aggregate', {str(DATA / 'demo.json')!r}, "
            f"'--label-config', {str(DATA / 'config.xml')!r}, '--out', "
            f"{str(tmp_path / 'p.json')!r}]))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "crowd-keras[label-studio]" in run.stderr


PYTHON_ARGS = re.compile(r"\b(control|label_config|to_name|include_gold|multiple|duplicates)=")


@pytest.mark.parametrize("source, flags, words", [
    ("demo_min.json", [], "pass --control (one of"),
    ("demo.json", ["--control", "topics"], "Pass --multiple combination"),
    ("demo.csv", ["--control", "sentiment"], "pass --to-name NAME"),
    ("demo.json", ["--control", "mood", "--label-config", str(DATA / "config.xml")],
     "control 'mood' is not in the labeling config"),
])
def test_cli_errors_name_flags_not_python_arguments(source, flags, words, tmp_path, capsys):
    argv = ["label-studio", "aggregate", str(DATA / source), "--out", str(tmp_path / "p.json"),
            "--quiet", *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and not PYTHON_ARGS.search(err), err
    assert "Traceback" not in err and not (tmp_path / "p.json").exists()


def test_plain_aggregate_errors_name_the_file_line_and_flag(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\na,u,x\na,u,y\n")
    assert main(["aggregate", str(src), "--out", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err
    assert f"{src}:" in err and "at line 2 and line 3" in err and "--duplicates last" in err
    assert not PYTHON_ARGS.search(err)


@pytest.mark.parametrize("fmt", ["JSON_MIN", "CSV"])
def test_control_alone_works_when_the_export_has_one_data_column(fmt, tmp_path, capsys):
    rows = json.loads((DATA / "demo_min.json").read_text())
    keep = ("id", "text", "annotator", "annotation_id", "created_at", "updated_at", "sentiment")
    rows = [{k: r.get(k) for k in keep if k in r} for r in rows]
    path = tmp_path / ("export.json" if fmt == "JSON_MIN" else "export.csv")
    if fmt == "JSON_MIN":
        path.write_text(json.dumps(rows))
    else:
        frame = pd.DataFrame(rows)
        for col in ("annotator", "annotation_id"):  # integers, blank where absent, as Label Studio
            frame[col] = frame[col].astype("Int64")
        frame.to_csv(path, index=False)
    out = tmp_path / "p.json"
    assert main(["label-studio", "aggregate", str(path), "--control", "sentiment", "--out",
                 str(out), "--method", "mv", "--quiet"]) == 0
    preds = json.loads(out.read_text())
    assert preds and all(p["result"][0]["to_name"] == "text" for p in preds)
    printed = capsys.readouterr().out
    assert "to_name 'text'" in printed and "pass --to-name" in printed


def test_fit_progress_shows_after_the_delay_unless_quiet(tmp_path, capsys, monkeypatch):
    import crowd_keras.progress as progress
    monkeypatch.setattr(progress, "HEARTBEAT_DELAY", 0.0)
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the fallback: lines on stderr
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    src = tmp_path / "answers.csv"
    pd.DataFrame({"task": list("aabb"), "worker": list("uvuv"), "label": list("xxyx")}).to_csv(
        src, index=False)
    assert main(["aggregate", str(src), "--out", str(tmp_path / "o.csv"), "--method", "ds"]) == 0
    assert "fitting dawid_skene: done in" in capsys.readouterr().err
    assert main(["aggregate", str(src), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 0
    assert "fitting" not in capsys.readouterr().err


def test_progress_lines_without_tqdm_and_silence_when_disabled(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    out = io.StringIO()
    with Progress(5, "pushing predictions", stream=out, interval=0.0) as bar:
        for _ in range(5):
            bar.update()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("pushing predictions: 0/5") and "started" in lines[0]
    assert lines[-1].startswith("pushing predictions: 5/5") and lines[-1].endswith("done")
    assert len(lines) == 7
    quiet = io.StringIO()
    with Progress(5, "x", stream=quiet, disable=True) as bar:
        bar.update(5)
    assert quiet.getvalue() == ""


def test_heartbeat_is_silent_for_short_work_and_ticks_for_long_work():
    import time
    short = io.StringIO()
    with Heartbeat("fitting", stream=short, delay=5.0):
        pass
    assert short.getvalue() == ""
    long = io.StringIO()
    # work that lasts until two ticks are out (a fixed 0.3 s sleep saw one tick when a loaded
    # machine woke the heartbeat's thread late); 60 s is a hang, not a slow machine
    give_up = time.monotonic() + 60
    with Heartbeat("fitting", stream=long, delay=0.05, every=0.05, use_tqdm=False):
        while long.getvalue().count("still running") < 2 and time.monotonic() < give_up:
            time.sleep(0.01)
    lines = long.getvalue().splitlines()
    assert len(lines) >= 3 and "still running" in lines[0] and "done in" in lines[-1], lines
    assert all("still running" in line for line in lines[:-1])
