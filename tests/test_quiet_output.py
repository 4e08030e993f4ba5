"""Progress on long fits, quiet TensorFlow, and output that does not mislead."""
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowd_keras.cli import describe_choice, main
from crowd_keras.cli.label_studio import MIN_GOLD_FOR_SCORE, _gold_line
from crowd_keras.progress import Convergence, Progress
from crowd_keras.quiet import QUIET_ENV, quiet_import, quiet_tensorflow
from crowd_keras.tables import SummaryTable

ROOT = Path(__file__).resolve().parents[1]
LS_DATA = ROOT / "tests" / "data" / "label_studio"


def _loop(progress, n=6, **kwargs):
    out = io.StringIO()
    loop = Convergence(n, 1e-12, "toy EM", progress, stream=out, **kwargs)
    for i in loop:
        loop.record(float(i))
    return out.getvalue()


def test_auto_progress_is_silent_on_a_short_fit_and_speaks_on_a_long_one():
    assert _loop("auto") == ""                       # done within the delay
    text = _loop("auto", delay=0.0, every=0.0)       # as a fit past the delay
    assert "toy EM: iteration 1/6, objective 0" in text
    assert text.strip().splitlines()[-1].startswith("toy EM: stopped after 6 iterations in ")
    assert _loop(False, delay=0.0, every=0.0) == ""
    with pytest.raises(ValueError, match="progress must be"):
        Convergence(3, 1e-3, progress="yes")


def test_sequence_models_show_progress_by_default():
    from crowd_keras.sequences.hmm import HMMCrowd
    from crowd_keras.sequences.models import TokenDawidSkene

    assert HMMCrowd().get_params()["progress"] == "auto"
    assert TokenDawidSkene().get_params()["progress"] == "auto"


def test_progress_lines_carry_the_postfix():
    out = io.StringIO()
    with Progress(4, "training", stream=out, use_tqdm=False, interval=0.0, unit="batch") as bar:
        bar.update(2)
        bar.set_postfix(epoch=1, loss="0.5000")
        bar.update(2)
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("training: 4/4 batch (100%)")
    assert last.endswith("done, epoch 1, loss 0.5000")


@pytest.mark.slow  # imports TensorFlow
def test_fit_progress_callback_reports_a_keras_fit():
    keras = pytest.importorskip("keras")
    from crowd_keras.callbacks import FitProgress

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    x, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    err = io.StringIO()
    stop = keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=1e9)
    model.fit(x, y, epochs=3, batch_size=10, verbose=0,
              callbacks=[FitProgress("toy fit", interval=0.0, stream=err, use_tqdm=False)])
    lines = err.getvalue().strip().splitlines()
    assert lines[0].startswith("toy fit: 0/12 batch (0%)") and lines[0].endswith("started")
    assert lines[-1].startswith("toy fit: 12/12 batch (100%)")
    assert "done, epoch 3, loss" in lines[-1]
    err = io.StringIO()  # early stopping ends the bar short of its total
    model.fit(x, y, epochs=3, batch_size=10, verbose=0,
              callbacks=[stop, FitProgress("toy fit", stream=err, use_tqdm=False)])
    assert err.getvalue().strip().splitlines()[-1].startswith("toy fit: 8/12 batch (67%)")


def test_quiet_tensorflow_sets_defaults_only_and_verbose_leaves_them(monkeypatch):
    for key in QUIET_ENV:
        monkeypatch.delenv(key, raising=False)
    quiet_tensorflow(verbose=True)
    assert not any(key in os.environ for key in QUIET_ENV)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")  # the user's own choice wins
    quiet_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1" and os.environ["TF_ENABLE_ONEDNN_OPTS"] == "0"


NOTICES = (b"WARNING: All log messages before absl::InitializeLog() is called are written to "
           b"STDERR\n",
           b"I0000 00:00:1795877505.835470   11756 cudart_stub.cc:31] Could not find cuda "
           b"drivers on your machine, GPU will not be used.\n")


def test_quiet_import_drops_tensorflow_notices_and_keeps_the_rest(capfd):
    with quiet_import():
        for line in NOTICES:
            os.write(2, line)
        os.write(2, b"UserWarning: something real\n")
    assert capfd.readouterr().err == "UserWarning: something real\n"
    with quiet_import(verbose=True):
        os.write(2, NOTICES[1])
    assert capfd.readouterr().err == NOTICES[1].decode()


@pytest.mark.slow  # a fresh TensorFlow import
@pytest.mark.skipif(sys.platform != "linux", reason="TensorFlow's banners as on Linux")
def test_keras_import_under_quiet_import_prints_nothing():
    pytest.importorskip("tensorflow")
    env = {k: v for k, v in os.environ.items() if k not in QUIET_ENV and k != "KERAS_BACKEND"}
    res = subprocess.run([sys.executable, "-c", "from crowd_keras.quiet import quiet_import\n"
                          "with quiet_import():\n    import keras\n"
                          "keras.ops.convert_to_numpy(keras.ops.ones(2) + 1)"],
                         capture_output=True, text=True,
                         env={**env, "PYTHONPATH": str(ROOT)}, timeout=180)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", res.stderr


def test_every_command_accepts_verbose(capsys):
    assert main(["demo", "--items", "150", "--annotators", "8", "--methods", "majority_vote",
                 "--verbose", "--quiet"]) == 0
    assert "majority_vote" in capsys.readouterr().out


def test_gold_comparison_says_why_there_is_no_score():
    none = _gold_line(0, "accuracy 0.000", "labels")
    assert "no ground-truth annotations" in none and "0.000" not in none
    few = _gold_line(1, "accuracy 0.000 (0 of 1 right)", "labels",
                     "the aggregate is right on 0 of 1")
    assert few.startswith("1 ground-truth task: too few") and "0.000" not in few
    enough = _gold_line(MIN_GOLD_FOR_SCORE, "accuracy 0.900 (9 of 10 right)", "labels")
    assert enough == (f"aggregate labels on {MIN_GOLD_FOR_SCORE} ground-truth tasks: "
                      "accuracy 0.900 (9 of 10 right)")


def test_story_two_prints_no_score_from_one_gold_task(tmp_path, capsys):
    code = main(["label-studio", "aggregate", str(LS_DATA / "demo.json"), "--control",
                 "sentiment", "--label-config", str(LS_DATA / "config.xml"), "--out",
                 str(tmp_path / "p.json"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "1 ground-truth task held at their label" in out
    assert "0.000" not in out
    code = main(["label-studio", "aggregate", str(LS_DATA / "demo.json"), "--control",
                 "sentiment", "--label-config", str(LS_DATA / "config.xml"), "--out",
                 str(tmp_path / "q.json"), "--quiet", "--no-gold"])
    out = capsys.readouterr().out
    assert code == 0 and "1 ground-truth task: too few to score" in out


def test_auto_choice_names_are_explained():
    assert describe_choice("dawid_skene@32") == (
        "dawid_skene@32: a confusion matrix per annotator, shrunk toward the crowd's by 32 "
        "pseudo-labels per row")
    assert describe_choice("ebcc").startswith("ebcc: confusions as mixtures of subtypes")
    assert describe_choice("majority_vote").startswith("majority_vote: no candidate agreed")
    assert describe_choice("my_model") == "my_model"


def test_summary_tables_print_whole():
    cols = [f"a rather long column name {i}" for i in range(25)]
    table = SummaryTable(pd.DataFrame(np.arange(80 * 25).reshape(80, 25), columns=cols))
    text = repr(table)
    assert "..." not in text and all(c in text for c in cols)
    assert len(text.splitlines()) == 81
    assert isinstance(table.round(1), SummaryTable) and isinstance(table, pd.DataFrame)
    assert "..." in repr(pd.DataFrame(table))  # a plain frame is cut: the difference is real


@pytest.mark.slow  # a fresh TensorFlow import and a LIA fit
@pytest.mark.skipif(sys.platform != "linux", reason="TensorFlow's banners as on Linux")
def test_cli_with_a_keras_label_model_prints_no_tensorflow_start_up_lines(tmp_path):
    """``crowd-keras aggregate --method lia``: LIA's module imports TensorFlow, whose full
    wheel writes its CUDA probe from C++ while loading; the command's stderr has none of it
    (nor any other line)."""
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 40)
    rows = [(f"i{i}", f"a{a}", int(y if rng.random() < 0.8 else rng.integers(0, 3)))
            for i, y in enumerate(truth) for a in rng.choice(5, 3, replace=False)]
    csv = tmp_path / "answers.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(csv, index=False)
    env = {k: v for k, v in os.environ.items() if k not in QUIET_ENV and k != "KERAS_BACKEND"}

    res = subprocess.run(
        [sys.executable, "-c", "import sys; from crowd_keras.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "aggregate", str(csv), "--method", "lia",
         "--quiet", "--out", str(tmp_path / "labels.csv")],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", res.stderr
    assert "wrote 40 labels" in res.stdout
