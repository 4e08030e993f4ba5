"""The command lines on files a user made by hand (defect hunt of 29 November): words pandas
reads as missing, repeated header names, big files, the demo on few items, usage errors found
before the files are read, and the annotator report paths of ``label-studio aggregate``."""
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import get_label_model
from crowd_keras.cli import main

EXPORT = Path(__file__).resolve().parent / "data" / "label_studio" / "demo.json"


def _run(argv, capsys, code=0):
    assert main(argv) == code, capsys.readouterr()
    return capsys.readouterr()


def _refused(command, tmp_path, capsys, text):
    """The error ``command`` prints for an answers.csv holding ``text`` (exit 1, no output)."""
    src, out = tmp_path / "answers.csv", tmp_path / "out"
    src.write_text(text)
    err = _run([command, str(src), "--out", str(out), "--quiet"], capsys, code=1).err
    assert not out.exists()
    return err


def test_words_pandas_reads_as_missing_are_ids_and_labels_as_written(tmp_path, capsys):
    # an annotator with the initials NA, an item 'null' and a class 'None' (of the above)
    src, out = tmp_path / "answers.csv", tmp_path / "labels.csv"
    src.write_text("task,worker,label\nnull,NA,None\nnull,bo,None\nnull,cy,cat\n"
                   "t2,NA,cat\nt2,bo,cat\nt2,cy,N/A\nt3,NA,dog\nt3,bo,None\n")
    _run(["aggregate", str(src), "--method", "dawid_skene", "--out", str(out),
          "--annotators", str(tmp_path / "q.csv"), "--quiet"], capsys)
    labels = pd.read_csv(out, keep_default_na=False)
    assert labels["task"].tolist() == ["null", "t2", "t3"]
    frame = pd.read_csv(src, keep_default_na=False)      # the Python API on the same text
    ann = Annotations.from_frame(frame, item="task", annotator="worker", label="label")
    model = get_label_model("dawid_skene").fit(ann)
    assert labels["label"].tolist() == ann.classes[model.predict()].tolist()
    np.testing.assert_allclose(labels["probability"], model.predict_proba().max(1))
    assert pd.read_csv(tmp_path / "q.csv", keep_default_na=False)["annotator"].tolist() == \
        ["NA", "bo", "cy"]
    # agree reads them alike; an empty field is still missing, named by its line
    out_text = _run(["agree", str(src), "--bootstrap", "0", "--quiet"], capsys).out
    assert "4 classes ['N/A', 'None', 'cat', 'dog']" in out_text
    src.write_text("task,worker,label\nt1,NA,cat\nt1,,cat\n")
    err = _run(["agree", str(src), "--quiet"], capsys, code=1).err
    assert "missing value (NaN/None) in column 'worker' (--annotator) at line 3" in err


def test_a_word_read_as_missing_among_numeric_labels_is_named_with_its_line(tmp_path, capsys):
    src, out = tmp_path / "ratings.csv", tmp_path / "labels.csv"
    src.write_text("task,worker,label\n1,a,1\n1,b,2\n\n2,a,NA\n2,b,2\n")
    err = _run(["aggregate", str(src), "--out", str(out), "--quiet"], capsys, code=1).err
    assert ("ratings.csv: line 5: the label 'NA' (column 'label', --label) would be read as a "
            "missing value among numeric labels; leave the field empty for none, or "
            "--string-labels reads every label as text") in err
    assert not out.exists()
    # --string-labels: 'NA' is a class beside '1' and '2'
    printed = _run(["aggregate", str(src), "--string-labels", "--out", str(out), "--quiet"],
                   capsys).out
    assert "3 classes ['1', '2', 'NA']" in printed


def test_gold_labels_written_as_words_pandas_reads_as_missing(tmp_path, capsys):
    src, gold, out = tmp_path / "answers.csv", tmp_path / "gold.csv", tmp_path / "labels.csv"
    src.write_text("task,worker,label\n1,a,None\n1,b,cat\n2,a,cat\n2,b,cat\n")
    gold.write_text("task,label\n1,None\n")
    printed = _run(["aggregate", str(src), "--method", "majority_vote", "--gold", str(gold),
                    "--out", str(out), "--quiet"], capsys).out
    assert "1 gold label from" in printed
    assert pd.read_csv(out, keep_default_na=False)["label"].tolist() == ["None", "cat"]


@pytest.mark.parametrize("command", ["aggregate", "agree"])
def test_a_column_named_twice_in_the_header_is_refused(command, tmp_path, capsys):
    # pandas renames the second 'label' to 'label.1': the first was used, silently
    src, out = tmp_path / "answers.csv", tmp_path / "out"
    src.write_text("task,worker,label,label\n1,a,x,y\n1,b,x,x\n2,a,y,y\n2,b,y,x\n")
    err = _run([command, str(src), "--out", str(out), "--quiet"], capsys, code=1).err
    assert ("answers.csv: column 'label' (--label) is named 2 times in the header (columns 3, "
            "4); rename all but one") in err
    assert not out.exists()
    # a column of another name repeated, and 'label.1' written as such, are read
    src.write_text("task,worker,label,note,note\n1,a,x,,\n1,b,x,,\n")
    _run([command, str(src), "--out", str(out), "--quiet"], capsys)


def test_a_gold_column_named_twice_is_refused(tmp_path, capsys):
    src, gold = tmp_path / "answers.csv", tmp_path / "gold.csv"
    src.write_text("task,worker,label\n1,a,x\n1,b,y\n2,a,y\n2,b,y\n")
    gold.write_text("\ufefftask,task,label\r\n1,2,x\r\n")
    err = _run(["aggregate", str(src), "--gold", str(gold), "--out", str(tmp_path / "o.csv")],
               capsys, code=1).err
    assert "gold.csv: column 'task' (--item) is named 2 times in the header (columns 1, 2)" in err


def test_a_big_file_reads_its_labels_with_one_type(tmp_path, capsys):
    # pandas read a big file in chunks of 262144 rows, each with its own type: numbers first,
    # text after the chunk holding one word ('labels mix types: int 2 ... and str 1')
    n = 270_000
    labels = np.repeat(np.tile(["0", "1", "2"], n // 9 + 1)[:n // 3], 3).astype(object)
    labels[-1] = "other"
    src, out = tmp_path / "answers.csv", tmp_path / "labels.csv"
    pd.DataFrame({"task": np.arange(n) // 3, "worker": np.tile(["a", "b", "c"], n // 3),
                  "label": labels}).to_csv(src, index=False)
    done = _run(["aggregate", str(src), "--method", "majority_vote", "--out", str(out),
                 "--quiet"], capsys)
    assert "4 classes ['0', '1', '2', 'other']" in done.out
    assert "DtypeWarning" not in done.err


def test_the_demo_leaves_out_annotators_without_an_item(capsys):
    # 20 items of 5 labels among 50 annotators: 3 annotators get none; their accuracy 0 was
    # in the mean and their NaN estimate made every correlation NaN
    out = _run(["demo", "--items", "20", "--methods", "mv", "glad", "--quiet"], capsys).out
    head = re.search(r"50 annotators \((\d+) with annotations\), .* mean annotator accuracy "
                     r"([0-9.]+)", out)
    assert head and int(head.group(1)) < 50
    from crowd_keras.datasets import simulate_crowd
    sim = simulate_crowd(n_items=20, n_classes=4, n_annotators=50, annotations_per_item=5,
                         annotator_accuracy=(0.35, 0.9), seed=0)
    active = sim.annotations.annotations_per_annotator() > 0
    assert int(head.group(1)) == active.sum()
    assert float(head.group(2)) == pytest.approx(sim.annotator_accuracy()[active].mean(),
                                                 abs=5e-4)
    rows = [line.split() for line in out.splitlines() if line.startswith(("majority", "glad"))]
    assert len(rows) == 2 and all(np.isfinite(float(row[2])) for row in rows)


@pytest.mark.parametrize("flags, words", [
    (["--method", "mixture_of_groups", "--gold", "gold.csv"],
     "--method mixture_of_groups does not take gold labels (--gold)"),
    (["--method", "dawid_skene", "--target-prior", "learned"],
     "--target-prior applies to --method auto"),
])
def test_flags_that_cannot_go_together_are_said_before_the_file_is_read(flags, words, tmp_path,
                                                                        capsys):
    # the file is missing: the usage error came second, after the file's error (exit 1)
    err = _run(["aggregate", str(tmp_path / "missing.csv"), *flags, "--out",
                str(tmp_path / "o.csv")], capsys, code=2).err
    assert words in err and "file not found" not in err


@pytest.mark.parametrize("classes, words", [
    ("cat,,dog", "argument --classes: an empty class name in 'cat,,dog'"),
    ("cat, dog,cat", "argument --classes: class 'cat' is listed twice in 'cat, dog,cat'"),
])
def test_a_malformed_class_list_is_a_usage_error(classes, words, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["aggregate", str(tmp_path / "missing.csv"), "--classes", classes, "--out",
              str(tmp_path / "o.csv")])
    assert stop.value.code == 2 and words in capsys.readouterr().err


def test_annotators_json_alone_is_refused(tmp_path, capsys):
    # it was ignored: no report written, exit 0
    out, report = tmp_path / "p.json", tmp_path / "a.json"
    err = _run(["label-studio", "aggregate", str(EXPORT), "--control", "sentiment", "--out",
                str(out), "--annotators-json", str(report), "--quiet"], capsys, code=2).err
    assert "--annotators-json names where the JSON annotator report goes" in err
    assert not out.exists() and not report.exists()


def test_annotators_json_given_as_the_csv_path_is_refused(tmp_path, capsys):
    # it was written to 'a.csv.json', a path nobody named
    report = tmp_path / "a.csv"
    err = _run(["label-studio", "aggregate", str(EXPORT), "--control", "sentiment", "--out",
                str(tmp_path / "p.json"), "--annotators", str(report), "--annotators-json",
                str(report), "--quiet"], capsys, code=2).err
    assert "are the same file: one output would overwrite the other" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # derived from the CSV path, a report named .json still gets its own JSON path
    _run(["label-studio", "aggregate", str(EXPORT), "--control", "sentiment", "--out",
          str(tmp_path / "p.json"), "--annotators", str(tmp_path / "r.json"), "--quiet"], capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "r.json", "r.json.json"]


@pytest.mark.parametrize("command", ["aggregate", "agree"])
def test_values_of_only_spaces_are_refused(command, tmp_path, capsys):
    # ' , , ' became an item ' ', an annotator ' ' and a class ' ', silently
    err = _refused(command, tmp_path, capsys,
                   "task,worker,label\n1,a,x\n , , \n1,b,x\n2,a,y\n2,b,y\n")
    assert "answers.csv: the item at line 3 (column 'task', --item) is only spaces, ' '" in err
    err = _refused(command, tmp_path, capsys, "task,worker,label\n1,a,x\n1,b,  \n2,a,y\n2,b,y\n")
    assert "the label at line 3 (column 'label', --label) is only spaces, '  '" in err


@pytest.mark.parametrize("command", ["aggregate", "agree"])
def test_values_that_differ_only_in_spaces_around_them_are_refused(command, tmp_path, capsys):
    # 't2,b, cat' after 't1,a,cat': 'cat' and ' cat' were two classes, silently
    src, out = tmp_path / "answers.csv", tmp_path / "out"
    src.write_text("task,worker,label\nt1,a,cat\nt1,b,cat\nt2,a,dog\nt2,b, cat\n")
    err = _run([command, str(src), "--out", str(out), "--quiet"], capsys, code=1).err
    assert ("answers.csv: the label ' cat' at line 5 and 'cat' at line 2 (column 'label', "
            "--label) differ only in spaces around them, so they would be two") in err
    src.write_text("task,worker,label\nt1,a,cat\nt1,b,cat\nt2, a,dog\nt2,b,dog\n")
    err = _run([command, str(src), "--out", str(out), "--quiet"], capsys, code=1).err
    assert "the annotator ' a' at line 4 and 'a' at line 2 (column 'worker', --annotator)" in err
    assert not out.exists()
    # spaces that make no second value are read as written
    src.write_text("task,worker,label\nt1, a,cat\nt1,b,cat\nt2, a,dog\nt2,b,dog\n")
    _run([command, str(src), "--out", str(out), "--quiet"], capsys)


@pytest.mark.parametrize("command", ["aggregate", "agree"])
def test_two_spaced_values_without_the_bare_one_are_refused(command, tmp_path, capsys):
    # ' cat' and 'cat ' with no 'cat' were two classes (' a' and 'a ' two annotators), silently
    err = _refused(command, tmp_path, capsys,
                   "task,worker,label\nt1,a, cat\nt1,b,cat \nt2,a,dog\nt2,b, cat\n")
    assert ("answers.csv: the label ' cat' at line 2 and 'cat ' at line 3 (column 'label', "
            "--label) differ only in spaces around them, so they would be two") in err
    err = _refused(command, tmp_path, capsys,
                   "task,worker,label\nt1, a,cat\nt1,a ,dog\nt2, a,dog\nt2,b,dog\n")
    assert "the annotator ' a' at line 2 and 'a ' at line 3 (column 'worker', --annotator)" \
        in err


def _span_export(tmp_path):
    import json
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_label_studio_spans import export
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(export()))
    return path


@pytest.mark.parametrize("span, flags, words", [
    (True, ["--method", "dawid_skene"], "--method dawid_skene applies to Choices/Rating "
                                        "controls; span control 'label' is fitted by "
                                        "--sequence-model"),
    (False, ["--sequence-model", "hmm_crowd"], "--sequence-model hmm_crowd applies to span "
                                               "controls; control 'sentiment' is not one"),
    (False, ["--separator", "+"], "--separator '+' joins the choices of a set with --multiple "
                                  "combination, not --multiple error"),
    (True, ["--multiple", "combination"], "--multiple combination applies to Choices controls; "
                                          "span control 'label' reads each label of a region "
                                          "as a span"),
])
def test_label_studio_aggregate_refuses_a_model_flag_it_would_ignore(span, flags, words,
                                                                     tmp_path, capsys):
    # each was ignored silently: the default model fitted, exit 0
    export = _span_export(tmp_path) if span else EXPORT
    out = tmp_path / "p.json"
    control = [] if span else ["--control", "sentiment"]
    err = _run(["label-studio", "aggregate", str(export), *control, *flags, "--out", str(out),
                "--quiet"], capsys, code=2).err
    assert words in err and not out.exists()
    # where it applies, it is taken
    if "--separator" in flags:
        _run(["label-studio", "aggregate", str(EXPORT), "--control", "topics", "--multiple",
              "combination", *flags, "--out", str(out), "--quiet"], capsys)
    elif "--sequence-model" in flags:
        printed = _run(["label-studio", "aggregate", str(_span_export(tmp_path)), *flags,
                        "--out", str(out), "--quiet"], capsys).out
        assert "model_version 'crowd-keras-hmm_crowd'" in printed


@pytest.mark.parametrize("command, flags, words", [
    ("aggregate", ["--annotator", "task"], "--item and --annotator both name column 'task'"),
    ("agree", ["--label", "worker"], "--annotator and --label both name column 'worker'"),
])
def test_two_roles_on_one_column_are_a_usage_error(command, flags, words, tmp_path, capsys):
    # it was a data error (exit 1) after the file was read, naming both flags in a row:
    # "column 'task' (--annotator) (--item) is given as both ..."
    err = _run([command, str(tmp_path / "missing.csv"), *flags, "--out",
                str(tmp_path / "o.csv")], capsys, code=2).err
    assert words in err and "file not found" not in err


def test_no_command_prints_the_help_on_stderr(capsys):
    # exit 2 with the help on stdout: a script's `crowd-keras > log` kept the failure's text
    # out of its error stream ('crowd-keras label-studio' alone was on stderr already)
    assert main([]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and "demo" in printed.err and "aggregate" in printed.err


def _pipe(text):
    """``/dev/fd/N`` of a pipe holding ``text``, as bash's `<(...)` gives: the data can be
    read once (a second open finds the pipe empty)."""
    import os
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    return read, f"/dev/fd/{read}"


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd")
def test_a_piped_input_is_read_once_and_its_lines_are_still_named(tmp_path, capsys):
    # the reads after the first (words pandas reads as missing, line numbers, the header)
    # found the pipe empty: "EmptyDataError: No columns to parse from file"
    import os
    out = tmp_path / "labels.csv"
    fd, src = _pipe("task,worker,label\nt1,NA,cat\nt1,b,cat\nt2,NA,dog\nt2,b,dog\n")
    try:
        printed = _run(["aggregate", src, "--out", str(out), "--quiet"], capsys).out
    finally:
        os.close(fd)
    assert "4 annotations of 2 items by 2 annotators" in printed
    fd, src = _pipe("task,worker,label\nt1,a,cat\n\nt1,b, cat\n")
    try:
        err = _run(["agree", src, "--quiet"], capsys, code=1).err
    finally:
        os.close(fd)
    assert "the label ' cat' at line 4 and 'cat' at line 2" in err


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_with_a_bad_row_is_named_not_waited_on(tmp_path):
    # the error path opened the pipe again to count lines: it waited for a writer forever
    import os
    import subprocess
    import sys
    import threading
    path = tmp_path / "answers.csv"
    os.mkfifo(path)

    def write():
        with open(path, "w") as fh:
            fh.write("task,worker,label\nt1,a,cat\nt1,b,\n")
    threading.Thread(target=write, daemon=True).start()
    run = subprocess.run([sys.executable, "-m", "crowd_keras", "aggregate", str(path), "--out",
                          str(tmp_path / "o.csv"), "--quiet"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1
    assert "missing value (NaN/None) in column 'label' (--label) at line 3" in run.stderr


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd")
def test_label_studio_report_reads_a_piped_export_once(tmp_path, capsys):
    # it read the export once per control: the second found the pipe empty ("is empty")
    import os
    fd, src = _pipe(EXPORT.read_text())
    try:
        printed = _run(["label-studio", "report", src, "--out", str(tmp_path / "r"),
                        "--bootstrap", "0", "--no-plots", "--quiet"], capsys).out
    finally:
        os.close(fd)
    assert "control 'sentiment' (choices)" in printed and "control 'topics'" in printed
    assert (tmp_path / "r" / "report.json").exists()


@pytest.mark.parametrize("rows, words", [
    ("t1,a,-1\nt1,b,-2\nt2,a,0\nt2,b,-1\n",
     "line 2: label -1 (item 't1', annotator 'a'; column 'label', --label) is not a whole "
     "number 0, 1, 2, ...: numeric "
     "labels are read as whole-number classes; for a rating scale list its classes in order "
     "(--classes=-2,-1,0) or read the labels as text (--string-labels)"),
    ("t1,a,1\nt1,b,1.5\nt2,a,2\nt2,b,2\n", "line 3: label 1.5 (item 't1', annotator 'b'; "
                                            "column 'label', --label)"),
])
def test_aggregate_names_the_flags_for_a_rating_scale(rows, words, tmp_path, capsys):
    # agree reads such a scale; aggregate refused it in the library's words ("drop missing
    # annotations from a long frame instead of coding them"), naming no flag
    src, out = tmp_path / "ratings.csv", tmp_path / "labels.csv"
    src.write_text("task,worker,label\n" + rows)
    err = _run(["aggregate", str(src), "--out", str(out), "--quiet"], capsys, code=1).err
    assert words in err
    # the flag it names reads the file, with the labels agree reads
    listed = re.search(r"--classes=([-0-9.,]+)", err).group(1)
    printed = _run(["aggregate", str(src), f"--classes={listed}", "--method", "majority_vote",
                    "--out", str(out), "--quiet"], capsys).out
    agreed = _run(["agree", str(src), "--bootstrap", "0", "--quiet"], capsys).out
    classes = re.search(r"\d+ classes \[[^]]*\]", agreed).group(0)
    assert classes in printed


@pytest.mark.parametrize("command", ["agree", "aggregate"])
def test_an_id_holding_the_word_row_is_not_rewritten_as_a_line(command, tmp_path, capsys):
    # every "row N" of the message became "line M", the quoted item id 'row 2' too
    src = tmp_path / "dup.csv"
    src.write_text("task,worker,label\nrow 1,w1,1\nrow 1,w2,1\nrow 2,w1,0\nrow 2,w1,1\n")
    argv = [command, str(src)] + (["--bootstrap", "0"] if command == "agree" else
                                  ["--out", str(tmp_path / "out.csv"), "--quiet"])
    err = _run(argv, capsys, code=1).err
    assert "first: item 'row 2', annotator 'w1' at line 4 and line 5" in err


@pytest.mark.parametrize("blank", ['""', '"   "'])
def test_a_line_of_one_quoted_empty_field_is_a_row_and_named_by_its_line(blank, tmp_path,
                                                                          capsys):
    # pandas reads it as a row of missing fields (only unquoted white space is a blank line
    # it skips): the error named the next, valid line
    src = tmp_path / "q.csv"
    src.write_text(f"task,worker,label\nt1,w1,1\n{blank}\n\n   \nt1,w2,1\nt2,w1,0\nt2,w2,1\n")
    err = _run(["agree", str(src), "--bootstrap", "0"], capsys, code=1).err
    # (quoted spaces: the item is only spaces, refused as such, on its line too)
    assert re.search(r"in column '(task|worker)' \(--(item|annotator)\) at line 3 |the item at "
                     r"line 3 \(column 'task', --item\) is only spaces", err), err


@pytest.mark.parametrize("text, line", [
    # a quoted field over two lines, then the long row on line 5
    ('task,worker,label\n"multi\nline",w1,1\nt1,w2,1\nt2,w1,1,extra\n', 5),
    # a blank line before the header (pandas skips it): it is not the header
    ('\ntask,worker,label\nt1,w1,1\nt1,w2,1\nt2,w1,1,extra\n', 5),
])
def test_the_line_with_more_fields_than_the_header_is_named_by_its_line(text, line, tmp_path,
                                                                         capsys):
    src = tmp_path / "long.csv"
    src.write_text(text)
    err = _run(["agree", str(src), "--bootstrap", "0"], capsys, code=1).err
    assert f"line {line} has 4 fields but the header has 3" in err, err


def test_an_id_holding_a_carriage_return_reads_back_from_the_outputs(tmp_path, capsys):
    # a lone \r went out unquoted under \n line ends: readers split the row there, and the
    # labels file given back as --gold named an item 'a'
    src, out, who = tmp_path / "in.csv", tmp_path / "labels.csv", tmp_path / "ann.csv"
    src.write_bytes(b'task,worker,label\n"a\rb","w\r1",x\n"a\rb",w2,x\nc,"w\r1",y\nc,w2,y\n')
    _run(["aggregate", str(src), "--out", str(out), "--annotators", str(who), "--method",
          "majority_vote", "--quiet"], capsys)
    labels = pd.read_csv(out, dtype=str)
    assert labels["task"].tolist() == ["a\rb", "c"] and labels["label"].tolist() == ["x", "y"]
    assert sorted(pd.read_csv(who, dtype=str)["annotator"]) == sorted(["w2", "w\r1"])
    # plain files stay as they were: quoted only where needed
    plain = tmp_path / "plain.csv"
    plain.write_text("task,worker,label\nt1,a,x\nt1,b,x\n")
    _run(["aggregate", str(plain), "--out", str(out), "--method", "majority_vote", "--quiet"],
         capsys)
    assert out.read_text().startswith("task,label,probability,")


@pytest.mark.parametrize("item", ["label", "probability", "tied", "consensus_quality"])
def test_an_item_column_named_like_a_column_of_the_labels_file_is_refused(item, tmp_path,
                                                                          capsys):
    # the output frame was built from a dict: the item ids were overwritten by that column
    src, out = tmp_path / "in.csv", tmp_path / "labels.csv"
    label = "answer" if item == "label" else "label"
    src.write_text(f"{item},worker,{label}\nt1,a,x\nt1,b,x\nt2,a,y\n")
    err = _run(["aggregate", str(src), "--item", item, "--label", label, "--out", str(out),
                "--method", "majority_vote", "--quiet"], capsys, code=2).err
    assert f"--item '{item}' is also a column the labels file writes" in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["aggregate", "agree"])
def test_a_quote_never_closed_is_named_by_its_line(command, tmp_path, capsys):
    # a label '"big' opened a quote that ran to the end of the file: the error was pandas'
    # "C error: EOF inside string starting at row 4", a count that is no line of the file
    err = _refused(command, tmp_path, capsys,
                   'task,worker,label\n1,a,cat\n\n\n1,b,"big\n2,a,dog\n2,b,cat\n')
    assert "answers.csv: line 5: a field starts with a quote (\") that is never closed" in err
    assert "row 4" not in err


@pytest.mark.parametrize("text, flags, words", [
    ("task,worker,label\n1,a,0\n2,b,1\n3,a,1\n", [],
     "no item has two annotations (3 items, 3 annotations)"),
    ("task,worker,label\n1,a,-1\n1,b,2\n2,a,1\n2,b,1\n", ["--level", "ratio"],
     "--level ratio needs non-negative classes"),
])
def test_agree_names_the_file_whose_annotations_it_cannot_measure(text, flags, words, tmp_path,
                                                                  capsys):
    # the one error of agree that named no file: "crowd-keras: error: no item has two ..."
    src = tmp_path / "answers.csv"
    src.write_text(text)
    err = _run(["agree", str(src), "--bootstrap", "0", "--quiet", *flags], capsys, code=1).err
    assert f"crowd-keras: error: {src}: {words}" in err
