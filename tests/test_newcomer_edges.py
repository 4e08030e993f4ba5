"""A newcomer's first mistakes: each is answered in one line that says what to do."""
import argparse
import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_data
from crowd_keras.cli import main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

ROWS = "1,a,x\n1,b,y\n2,a,x\n2,b,x\n"


def _fail(argv, capsys, code=1):
    assert main(argv) == code
    return capsys.readouterr().err


def test_a_wrong_column_name_suggests_the_closest_column(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    src.write_text("task_id,Worker,label\n" + ROWS)
    err = _fail(["aggregate", str(src), "--out", str(tmp_path / "o.csv")], capsys)
    assert ("no column 'task' (--item; did you mean 'task_id'?), 'worker' (--annotator; did "
            "you mean 'Worker'?); its columns are ['task_id', 'Worker', 'label']") in err
    # nothing close: no guess
    err = _fail(["aggregate", str(src), "--item", "task_id", "--annotator", "Worker",
                 "--label", "zzz", "--out", str(tmp_path / "o.csv")], capsys)
    assert "no column 'zzz' (--label);" in err and "did you mean" not in err


@pytest.mark.parametrize("argv, words", [
    (["aggregate", "{src}", "--out", "{out}", "--gold-file", "g.csv"],
     "crowd-keras aggregate: error: unrecognized arguments: --gold-file (did you mean --gold?) "
     "g.csv\n"),
    (["agree", "{src}", "--bogus"], "crowd-keras agree: error: unrecognized arguments: --bogus\n"),
    (["label-studio", "report", "{src}", "--out", "{out}", "--contrl", "c"],
     "crowd-keras label-studio report: error: unrecognized arguments: --contrl (did you mean "
     "--control?) c\n"),
])
def test_an_unknown_option_is_refused_by_its_command(argv, words, tmp_path, capsys):
    """The command's usage and name, not the top parser's ('usage: crowd-keras [-h]
    [--version] COMMAND ...', which lists none of the command's options)."""
    src, out = tmp_path / "answers.csv", tmp_path / "out"
    src.write_text("task,worker,label\n" + ROWS)
    with pytest.raises(SystemExit) as info:
        main([a.format(src=src, out=out) for a in argv])
    err = capsys.readouterr().err
    command = words.split(":")[0]
    assert info.value.code == 2 and err.startswith(f"usage: {command} ") and words in err, err
    assert not out.exists()


def test_a_wrong_gold_column_suggests_the_closest_column(tmp_path, capsys):
    src, gold = tmp_path / "answers.csv", tmp_path / "gold.csv"
    src.write_text("task,worker,label\n" + ROWS)
    gold.write_text("Task,label\n1,x\n")
    err = _fail(["aggregate", str(src), "--gold", str(gold), "--out", str(tmp_path / "o.csv")],
                capsys)
    assert "gold.csv: no column 'task' (--item; did you mean 'Task'?)" in err


@pytest.mark.parametrize("name, text, hint", [
    ("tabs.csv", "task\tworker\tlabel\n1\ta\tx\n",
     "(the header is one column holding tabs: a .csv file is read with commas; name a "
     "tab-separated file .tsv)"),
    ("semicolons.csv", "task;worker;label\n1;a;x\n",
     "(the header is one column holding ';': a .csv file is read with commas; save it with "
     "commas)"),
    ("commas.tsv", "task,worker,label\n1,a,x\n",
     "(the header is one column holding commas: a .tsv/.tab file is read with tabs; name a "
     "comma-separated file .csv)"),
    ("export.json", '[{"task": 1, "worker": "a", "label": "x"}]\n',
     "(this looks like JSON, not a CSV/TSV table)"),
])
def test_a_file_that_is_not_this_kind_of_table_says_why(name, text, hint, tmp_path, capsys):
    src = tmp_path / name
    src.write_text(text)
    for command in ("aggregate", "agree"):
        err = _fail([command, str(src), "--out", str(tmp_path / "o.csv")], capsys)
        assert err.rstrip().endswith(hint), err
        assert "did you mean" not in err   # the columns are not the problem


def test_a_header_without_rows_is_named_in_the_files_terms(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\n")
    err = _fail(["aggregate", str(src), "--out", str(tmp_path / "o.csv")], capsys)
    assert "answers.csv: no annotations: the file has a header line and no rows" in err
    assert "frame" not in err


@pytest.mark.parametrize("argv", [["aggregate", "x.csv", "--out", "o.csv", "--method"],
                                  ["agree", "x.csv", "--method"],
                                  ["demo", "--methods", "mv"]])
def test_a_mistyped_label_model_suggests_the_closest(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv + ["dawid_skne"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "unknown label model 'dawid_skne' (did you mean 'dawid_skene'?); choose from" in err
    with pytest.raises(SystemExit):
        main(argv + ["zzz"])
    assert "did you mean" not in capsys.readouterr().err


def test_demo_methods_take_aliases_in_any_case_as_method_does(capsys):
    assert main(["demo", "--items", "100", "--annotators", "10", "--quiet",
                 "--methods", "MV", "Dawid-Skene", "ds"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[3:] if line.strip()]
    assert rows == ["majority_vote", "dawid_skene"]   # one row per model


# ---------------------------------------------------------------------------------- examples
def _usage_error(script, argv, capsys):
    with pytest.raises(SystemExit) as info:
        importlib.import_module(script).main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    return err


@pytest.mark.parametrize("script, argv, words", [
    ("keras_crowd_layer", ["--epochs", "0"], "--epochs must be at least 1, got 0"),
    ("keras_crowd_layer", ["--data", "{tmp}"], "no labelme data at {tmp}"),
    ("keras_conal", ["--epochs", "0"], "--epochs must be at least 1, got 0"),
    ("keras_conal", ["--data", "{tmp}"], "--data is read with --labelme only"),
    ("keras_conal", ["--labelme", "--data", "{tmp}"], "no labelme data at {tmp}"),
    ("pico_tagger", ["--quick", "--epochs", "0"], "--epochs must be at least 1, got 0"),
    ("pico_tagger", ["--data", "{tmp}"], "no pico data at {tmp}"),
    ("keras_crowd_layer", ["--seed", "-1"], "--seed must be an integer from 0 to 4294967295, "
                                            "got -1"),
    ("keras_conal", ["--seed", "-1"], "--seed must be an integer from 0 to 4294967295, got -1"),
    ("pico_tagger", ["--seed", str(2 ** 32)], "--seed must be an integer from 0 to 4294967295, "
                                              "got 4294967296"),
    ("pico_lfs", ["--splits", "tst"], "invalid choice: 'tst'"),
    ("pico_lfs", ["--data", "{tmp}"], "no pico data at {tmp}"),
    ("snorkel_youtube_spam", ["--data", "{tmp}"], "no youtube_spam data at {tmp}"),
])
def test_an_example_refuses_a_bad_flag_in_one_line(script, argv, words, tmp_path, capsys):
    err = _usage_error(script, [a.format(tmp=tmp_path) for a in argv], capsys)
    assert words.format(tmp=tmp_path) in err, err


@pytest.mark.parametrize("script, argv, url", [
    ("keras_crowd_layer", [], "labelme/answers.txt"),
    ("keras_conal", ["--labelme"], "labelme/answers.txt"),
    ("pico_tagger", [], "pico/docs.jsonl"),
    ("pico_lfs", [], "pico/docs.jsonl"),
    ("snorkel_youtube_spam", [], "youtube_spam/Youtube01-Psy.csv"),
])
def test_an_example_whose_data_cannot_be_downloaded_says_so_in_one_line(script, argv, url,
                                                                        tmp_path, monkeypatch,
                                                                        capsys):
    """No data on disk and a mirror that lacks it (as offline): the download error in one
    line and exit 1, not a traceback (the examples caught only CrowdDataError)."""
    monkeypatch.delenv("CROWD_KERAS_DATA", raising=False)
    monkeypatch.setenv("CROWD_KERAS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("CROWD_KERAS_MIRROR", (tmp_path / "mirror").as_uri())
    with pytest.raises(SystemExit) as info:
        importlib.import_module(script).main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 1, err
    assert f": error: cannot download {url} from " in err and "usage:" not in err


def test_pico_lfs_reads_the_data_where_the_other_examples_do(tmp_path, monkeypatch, capsys):
    pico_lfs = importlib.import_module("pico_lfs")
    monkeypatch.setenv("CROWD_KERAS_DATA", str(require_data("pico").parent))
    monkeypatch.setattr(pico_lfs, "ROOT", tmp_path / "clone")   # no ../shared/data beside it
    assert pico_lfs.main(["--splits", "acl17-test", "acl17-test"]) == 0   # a split read once
    assert "crowd + functions: token P" in capsys.readouterr().out


EXAMPLES = ["keras_crowd_layer", "keras_conal", "pico_tagger", "pico_lfs", "snorkel_youtube_spam",
            "label_studio_round_trip"]


class _Parsed(Exception):
    pass


def test_every_example_option_says_what_it_does(monkeypatch):
    def stop(parser, *args, **kwargs):   # the parser main built, before any work
        raise _Parsed(parser)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    for script in EXAMPLES:
        with pytest.raises(_Parsed) as info:
            importlib.import_module(script).main([])
        parser = info.value.args[0]
        bare = [a.option_strings[-1] for a in parser._actions if a.option_strings and not a.help]
        assert not bare, (script, bare)


def test_the_round_trip_example_names_the_server_it_cannot_reach(tmp_path):
    with socket.socket() as closed:   # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        env = {**os.environ, "LABEL_STUDIO_API_KEY": "secret-token-123"}
        res = subprocess.run([sys.executable, str(ROOT / "examples" / "label_studio_round_trip.py"),
                              "--url", url, "--out-dir", str(tmp_path / "out")], env=env,
                             capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert f"error: Label Studio at {url}: " in res.stderr and "Traceback" not in res.stderr
    assert "secret-token-123" not in res.stdout + res.stderr
    assert not (tmp_path / "out").exists()   # nothing written when nothing was read


@pytest.mark.parametrize("command", ["aggregate", "report"])
def test_a_folder_given_as_the_export_is_called_a_folder(command, tmp_path, capsys):
    err = _fail(["label-studio", command, str(tmp_path), "--out", str(tmp_path / "out")], capsys,
                code=2)
    assert f"export {str(tmp_path)!r}: is a folder, not a file" in err


@pytest.mark.parametrize("argv, words", [
    (["demo", "--per-item", "9", "--annotators", "3"], "--per-item 9 exceeds --annotators 3"),
    (["aggregate", "{src}", "--method", "dawid_skene", "--target-prior", "uniform", "--out",
      "{out}"], "--target-prior applies to --method auto"),
    (["aggregate", "{src}", "--method", "mixture_of_groups", "--gold", "{src}", "--out", "{out}"],
     "--method mixture_of_groups does not take gold labels (--gold)"),
])
def test_flags_that_cannot_go_together_are_a_usage_error(argv, words, tmp_path, capsys):
    src, out = tmp_path / "answers.csv", tmp_path / "labels.csv"
    src.write_text("task,worker,label\n" + ROWS)
    err = _fail([a.format(src=src, out=out) for a in argv], capsys, code=2)
    assert words in err and not out.exists()


def test_the_labeling_functions_module_run_as_a_script_points_to_the_example():
    res = subprocess.run([sys.executable, str(ROOT / "examples" / "youtube_spam_lfs.py"),
                          "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "python examples/snorkel_youtube_spam.py" in res.stdout


@pytest.mark.parametrize("argv, code", [
    (["aggregate", "{src}", "--out", "{tmp}/labels/"], 1),
    (["aggregate", "{src}", "--out", "{tmp}/labels.csv", "--annotators", "{tmp}/quality/"], 1),
    (["label-studio", "aggregate", "{export}", "--control", "sentiment", "--out", "{tmp}/p/"], 2),
])
def test_an_output_file_ending_with_a_separator_is_refused(argv, code, tmp_path, capsys):
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\n" + ROWS)
    export = ROOT / "tests" / "data" / "label_studio" / "demo.json"
    err = _fail([a.format(src=src, tmp=tmp_path, export=export) for a in argv], capsys, code)
    assert "ends with a separator, so it names a folder; give the path of a file" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.csv"]   # nothing written
