"""The command line: the demo, CSV aggregation and its errors."""
import subprocess
import sys

import pandas as pd
import pytest

from crowd_keras.cli import main


def test_demo_prints_an_accuracy_table(capsys):
    assert main(["demo", "--items", "600", "--annotators", "20", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Simulated crowd (seed 1): 600 items, 20 annotators" in out
    rows = {line.split()[0]: float(line.split()[1]) for line in out.splitlines()
            if line.startswith(("majority_vote", "dawid_skene"))}
    assert set(rows) == {"majority_vote", "dawid_skene"}
    assert rows["dawid_skene"] >= rows["majority_vote"] > 0.5


def test_console_entry_point_runs_as_module():
    res = subprocess.run([sys.executable, "-m", "crowd_keras", "demo", "--items", "200"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "dawid_skene" in res.stdout


def test_aggregate_csv(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    pd.DataFrame({"task": ["a", "a", "a", "b", "b"], "worker": ["u", "v", "w", "u", "v"],
                  "label": ["cat", "cat", "dog", "dog", "dog"]}).to_csv(src, index=False)
    out, report = tmp_path / "labels.csv", tmp_path / "annotators.csv"
    assert main(["aggregate", str(src), "--method", "majority_vote", "--out", str(out),
                 "--annotators", str(report)]) == 0
    labels = pd.read_csv(out)
    assert labels["label"].tolist() == ["cat", "dog"]
    assert labels["n_annotations"].tolist() == [3, 2]
    assert pd.read_csv(report)["annotator"].tolist() == ["u", "v", "w"]
    assert "read 5 rows: 5 annotations of 2 items by 3 annotators" in capsys.readouterr().out


def test_aggregate_reports_ties_and_gives_an_exact_tie_the_lowest_code(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    pd.DataFrame({"task": ["a", "a", "b", "b"], "worker": ["u", "v", "u", "v"],
                  "label": ["dog", "cat", "dog", "dog"]}).to_csv(src, index=False)
    out = tmp_path / "labels.csv"
    assert main(["aggregate", str(src), "--method", "majority_vote", "--out", str(out)]) == 0
    labels = pd.read_csv(out)
    assert labels["label"].tolist() == ["cat", "dog"] and labels["tied"].tolist() == [True, False]
    # a vote's tie is a shared top count: its one-hot posterior reads 1.0 for the winner
    assert labels["probability"].tolist() == [1.0, 1.0]
    assert ("1 tied item (top vote counts shared; exact ties get the lowest class code"
            in capsys.readouterr().out)
    assert main(["aggregate", str(src), "--method", "calibrated_vote", "--out", str(out)]) == 0
    assert pd.read_csv(out)["probability"].tolist()[0] == 0.5
    assert ("1 tied item (top posteriors within 1e-9; exact ties get the lowest class code"
            in capsys.readouterr().out)


def test_aggregate_reports_bad_rows(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    pd.DataFrame({"task": ["a", "a"], "worker": ["u", "u"], "label": [1, 0]}).to_csv(src, index=False)
    assert main(["aggregate", str(src), "--out", str(tmp_path / "x.csv")]) == 1
    err = capsys.readouterr().err
    assert "duplicate" in err and "item 'a', annotator 'u'" in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.slow
def test_aggregate_target_priors_give_the_python_labels(tmp_path, capsys):
    import numpy as np

    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.datasets import simulate_failure_kind

    ann = simulate_failure_kind("skewed_prolific", 0, scale=0.25).annotations
    src, out = tmp_path / "answers.csv", tmp_path / "labels.csv"
    frame = ann.to_frame()
    frame.to_csv(src, index=False)
    uniform = AutoLabelModel(target_prior="uniform").fit(ann)
    learned = AutoLabelModel(target_prior="learned").fit(ann)
    assert uniform.target_prior_applied_ and not learned.target_prior_applied_
    assert (uniform.predict() != learned.predict()).any()
    for flags, expected in (([], uniform), (["--target-prior", "uniform"], uniform),
                            (["--target-prior", "learned"], learned)):
        assert main(["aggregate", str(src), *flags, "--out", str(out)]) == 0
        labels = pd.read_csv(out).set_index("task").loc[ann.item_ids]
        np.testing.assert_array_equal(labels["label"].to_numpy(),
                                      ann.classes[expected.predict()])
    assert main(["aggregate", str(src), "--method", "dawid_skene", "--target-prior", "uniform",
                 "--out", str(out)]) != 0
    assert "--target-prior applies to --method auto" in capsys.readouterr().err


def test_aggregate_reads_ratings_one_to_five_as_five_classes(tmp_path, capsys):
    """Numbers are the classes given: read as codes, ratings 1..5 were the classes 0..5, and
    every candidate was fitted with a class 0 that no one chose (its Dirichlet pseudo-counts
    moved the fits): the labels are those of the crowd coded 0..4."""
    import numpy as np

    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.cli import describe_choice
    from crowd_keras.datasets import simulate_failure_kind

    ann = simulate_failure_kind("biased_experts", 0, scale=0.5).annotations
    frame = ann.to_frame()
    frame["label"] = frame["label"].astype(np.int64) + 1
    src, out = tmp_path / "ratings.csv", tmp_path / "labels.csv"
    frame.to_csv(src, index=False)
    assert main(["aggregate", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{ann.n_classes} classes {list(range(1, ann.n_classes + 1))}" in printed
    expected = AutoLabelModel().fit(ann)                      # the same crowd coded 0..K-1
    labels = pd.read_csv(out).set_index("task").loc[ann.item_ids]
    np.testing.assert_array_equal(labels["label"].to_numpy(), expected.predict() + 1)
    assert f"(chose {describe_choice(expected.chosen_)};" in printed


def test_aggregate_keeps_ids_as_written(tmp_path, capsys):
    # '001', '01' and '1' are three items and '007', '7' two annotators (read as numbers
    # they merged silently); plain integer ids stay integers, ordered as numbers
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\n001,007,1\n001,7,0\n1,007,0\n01,7,1\n")
    out, report = tmp_path / "labels.csv", tmp_path / "annotators.csv"
    gold = tmp_path / "gold.csv"
    gold.write_text("task,label\n001,1\n")
    assert main(["aggregate", str(src), "--method", "dawid_skene", "--out", str(out),
                 "--annotators", str(report), "--gold", str(gold)]) == 0
    labels = pd.read_csv(out, dtype={"task": str})
    assert labels["task"].tolist() == ["001", "01", "1"]
    assert labels["n_annotations"].tolist() == [2, 1, 1]
    assert labels["label"].tolist()[0] == 1     # the gold label, held fixed
    assert pd.read_csv(report, dtype={"annotator": str})["annotator"].tolist() == ["007", "7"]
    printed = capsys.readouterr().out
    assert "4 annotations of 3 items by 2 annotators" in printed
    assert f"1 gold label from {gold} held fixed in the fit" in printed
    src.write_text("task,worker,label\n10,1,1\n2,1,0\n10,2,1\n")
    gold.write_text("task,label\n2,0\n")
    assert main(["aggregate", str(src), "--method", "dawid_skene", "--out", str(out),
                 "--gold", str(gold)]) == 0
    assert pd.read_csv(out)["task"].tolist() == [2, 10]


def test_a_closed_output_pipe_ends_the_command_quietly(tmp_path, monkeypatch, capsys):
    # `crowd-keras agree answers.csv | head -1`: the reader goes away before the output ends
    import os

    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\n1,a,x\n1,b,y\n2,a,x\n2,b,x\n3,a,y\n3,b,y\n")
    read_end, write_end = os.pipe()
    os.close(read_end)
    monkeypatch.setattr(sys, "stdout", os.fdopen(write_end, "w"))
    assert main(["agree", str(answers), "--bootstrap", "0", "--quiet"]) == 1
    assert capsys.readouterr().err == ""        # no "BrokenPipeError" line
    print("after")                              # stdout now goes nowhere, without an error
    sys.stdout.flush()


@pytest.mark.parametrize("command", [["aggregate"], ["agree"]])
def test_an_infinite_label_is_named_as_not_finite(command, tmp_path, capsys):
    # "inf" was read as infinity and refused as "not one of the classes [1.0]"
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\nt1,a,1\nt1,b,-inf\nt2,a,1\n")
    extra = ["--out", str(tmp_path / "labels.csv")] if command == ["aggregate"] else []
    assert main([*command, str(src), *extra]) == 1
    err = capsys.readouterr().err
    assert "line 3: label -inf (item 't1', annotator 'b'; column 'label', --label) is not a " \
           "finite number" in err and "--string-labels" in err
    assert main([*command, str(src), "--string-labels", *extra]) == 0   # a word, as written


def test_boolean_labels_are_said_to_be_read_as_the_classes_0_and_1(tmp_path, capsys):
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\nt1,a,TRUE\nt1,b,TRUE\nt1,c,FALSE\nt2,a,FALSE\n")
    out = tmp_path / "labels.csv"
    assert main(["aggregate", str(src), "--out", str(out)]) == 0
    assert "labels were read as booleans" in capsys.readouterr().out
    assert pd.read_csv(out)["label"].tolist() == [1, 0]
    assert main(["aggregate", str(src), "--out", str(out), "--string-labels"]) == 0
    assert "booleans" not in capsys.readouterr().out
    assert pd.read_csv(out, dtype=str)["label"].tolist() == ["TRUE", "FALSE"]


def test_ordinal_alpha_on_text_classes_names_the_order_it_used(tmp_path, capsys):
    # high < low < medium was used silently (alpha 0.83 where low < medium < high gives -0.5)
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\nt1,a,low\nt1,b,high\nt2,a,medium\nt2,b,medium\n")
    assert main(["agree", str(src), "--level", "ordinal", "--bootstrap", "0"]) == 0
    assert "orders the text classes alphabetically: high < low < medium; --classes" in \
        capsys.readouterr().out
    for flags in (["--classes", "low,medium,high"], []):
        level = ["--level", "ordinal"] if flags else []
        assert main(["agree", str(src), "--bootstrap", "0", *level, *flags]) == 0
        assert "alphabetically" not in capsys.readouterr().out


@pytest.mark.parametrize("flags, named", [(["--method", "dawid_skene"], "--method shapes"),
                                          (["--method", "auto"], "--method shapes"),
                                          (["--no-plots"], "--no-plots shapes"),
                                          (["--no-plots", "--method", "ds"],
                                           "--method and --no-plots shape")])
def test_agree_report_options_without_out_are_refused(flags, named, tmp_path, capsys):
    # accepted and without any effect: the report they shape is written with --out only
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\nt1,a,x\nt1,b,y\nt2,a,y\nt2,b,y\n")
    assert main(["agree", str(src), "--bootstrap", "0", *flags]) == 2
    assert f"{named} the report, which only --out DIR writes" in capsys.readouterr().err
    assert main(["agree", str(src), "--bootstrap", "0", "--out", str(tmp_path / "r"),
                 *flags]) == 0
