"""The command line as a Unix tool (defect hunt of 29 November): progress on a stderr that is
not a terminal (a log file, a pipe) is plain lines, not a bar redrawn with carriage returns;
Ctrl-C while the label model's libraries load is one line and exit 130, as during the fit."""
import importlib.util
import io
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from crowd_keras.progress import Heartbeat, Progress

ROOT = Path(__file__).resolve().parent.parent


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal (a bar is drawn on it)."""

    def isatty(self) -> bool:
        return True


def test_progress_on_a_stream_that_is_no_terminal_is_lines_without_carriage_returns():
    pytest.importorskip("tqdm")
    log = io.StringIO()   # stderr redirected to a file: `crowd-keras aggregate ... 2> log`
    with Progress(5, "pushing predictions", stream=log, interval=0.0) as bar:
        for _ in range(5):
            bar.update()
    beat = io.StringIO()
    with Heartbeat("fitting ebcc", stream=beat, delay=0.0, every=0.05):
        pass
    for text in (log.getvalue(), beat.getvalue()):
        assert "\r" not in text and "\x1b" not in text, repr(text)
    assert log.getvalue().splitlines()[-1].startswith("pushing predictions: 5/5")
    assert beat.getvalue().splitlines()[-1].startswith("fitting ebcc: done in")
    # on a terminal the bar is drawn, as before
    tty = _Terminal()
    with Progress(5, "pushing predictions", stream=tty) as bar:
        bar.update(5)
    assert "\r" in tty.getvalue() and "5/5" in tty.getvalue()
    # a notebook's stream (ipykernel's OutStream: no terminal) keeps tqdm.auto's widget
    notebook = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})()
    with Progress(5, "pushing predictions", stream=notebook) as bar:
        bar.update(5)
    assert "started" not in notebook.getvalue()   # no plain lines: a bar was asked of tqdm


#: runs ``python -m crowd_keras ARGS`` with the import of the Keras backend held for 60 s
#: after a line on stdout: the interrupt lands while the backend loads, on any machine (timing
#: it by the backend's own start-up messages let a loaded machine finish the whole run first)
SLOW_BACKEND = """
import os, runpy, signal, sys, time

# Ctrl-C as a terminal's process receives it: a parent that ignores SIGINT (a script's
# background job, nohup) hands SIG_IGN on, and Python then installs no KeyboardInterrupt
signal.signal(signal.SIGINT, signal.default_int_handler)

class SlowBackend:
    name = os.environ.get("KERAS_BACKEND", "tensorflow")

    def find_spec(self, name, path=None, target=None):
        if name == self.name:
            sys.meta_path.remove(self)
            os.write(1, b"test: the backend's import starts\\n")   # (stderr is filtered)
            time.sleep(60)
        return None

sys.meta_path.insert(0, SlowBackend())
sys.argv[0] = "crowd-keras"
runpy.run_module("crowd_keras", run_name="__main__", alter_sys=True)
"""


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None
                    and importlib.util.find_spec("keras") is None,
                    reason="--method lia needs Keras")
def test_ctrl_c_while_tensorflow_loads_is_one_line_and_exit_130(tmp_path):
    src, out = tmp_path / "answers.csv", tmp_path / "labels.csv"
    src.write_text("task,worker,label\n" + "".join(
        f"{i},w{w},{'ab'[(i + w) % 3 == 0]}\n" for i in range(40) for w in range(3)))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_BACKEND, "aggregate", str(src),
                             "--method", "lia", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=tmp_path)
    first = proc.stdout.readline().decode()
    assert first.startswith("test: the backend's import starts"), first
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == "crowd-keras: interrupted"
    assert not out.exists() and os.listdir(tmp_path) == ["answers.csv"]   # nothing half-written


def test_out_on_stdout_or_a_named_pipe_is_written_into_and_stdout_carries_the_data_only(
        tmp_path):
    # `--out /dev/stdout` (here /dev/fd/1, which no rename can replace even as root) or a named
    # pipe: the rename of an atomic write put a regular file in place of the pipe, or failed,
    # and the command's own lines were mixed into the data on stdout
    src, fifo, stdout = tmp_path / "answers.csv", tmp_path / "quality.fifo", tmp_path / "out"
    src.write_text("task,worker,label\n1,a,x\n1,b,x\n2,a,y\n2,b,y\n3,a,x\n3,b,x\n")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # before the writer, as a shell's
    try:
        env = {**os.environ,
               "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        with open(stdout, "wb") as out:   # `> out`: a file behind /dev/stdout
            done = subprocess.run([sys.executable, "-m", "crowd_keras", "aggregate", str(src),
                                   "--method", "majority_vote", "--out", "/dev/fd/1",
                                   "--annotators", str(fifo), "--quiet"],
                                  stdout=out, stderr=subprocess.PIPE, text=True, env=env,
                                  timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        report = os.read(reader, 1 << 16).decode()
    finally:
        os.close(reader)
    lines = stdout.read_text().splitlines()
    assert lines[0].startswith("task,label,probability") and len(lines) == 4, lines
    assert [line.split(",")[1] for line in lines[1:]] == ["x", "y", "x"]
    assert "read 6 rows" in done.stderr and "wrote 3 labels to /dev/fd/1" in done.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert report.splitlines()[0].startswith("annotator,"), report
    assert sorted(os.listdir(tmp_path)) == ["answers.csv", "out", "quality.fifo"]   # no .tmp


def test_a_dash_is_the_standard_input_and_output(tmp_path):
    """``aggregate - --out -`` reads the pipe and writes the labels to stdout, as Unix tools
    do: ``--out -`` wrote a file named '-', and a later ``-`` input read that stale file in
    place of the pipe."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "crowd_keras", "aggregate", "-", "--method",
                           "majority_vote", "--out", "-", "--quiet"],
                          input="task,worker,label\n1,a,x\n1,b,x\n2,a,y\n2,b,y\n",
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("task,label,probability") and len(lines) == 3, lines
    assert "read 4 rows" in done.stderr and os.listdir(tmp_path) == []


@pytest.mark.parametrize("command", ["aggregate", "agree"])
def test_a_tab_separated_standard_input_is_read_with_tabs(command, tmp_path):
    """A TSV piped in has no name to say so: it was read with commas, one column holding tabs,
    and the error's fix ("name a tab-separated file .tsv") cannot be done on a pipe. Its
    header line decides (tabs, no comma); a header holding both is still read with commas."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    extra = ["--method", "majority_vote", "--out", "-"] if command == "aggregate" else []
    rows = "1\ta\tx\n1\tb\tx\n2\ta\ty\n2\tb\ty\n"
    done = subprocess.run([sys.executable, "-m", "crowd_keras", command, "-", *extra,
                           "--quiet"], input="task\tworker\tlabel\n" + rows,
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "read 4 rows" in done.stderr + done.stdout, done.stderr   # agree: on stdout
    both = subprocess.run([sys.executable, "-m", "crowd_keras", command, "-", *extra,
                           "--quiet"], input="task\tworker,x\tlabel\n" + rows,
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert both.returncode != 0 and "no column 'task'" in both.stderr, both.stderr


def test_the_json_report_on_stdout_is_the_only_thing_there(tmp_path):
    """``label-studio aggregate --annotators-json -``: the command's own lines went to stdout
    before the JSON (only --out and --annotators sent them to stderr)."""
    import json

    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    export = ROOT / "tests" / "data" / "label_studio" / "demo.json"
    done = subprocess.run([sys.executable, "-m", "crowd_keras", "label-studio", "aggregate",
                           str(export), "--control", "sentiment", "--method", "majority_vote",
                           "--out", str(tmp_path / "p.json"), "--annotators",
                           str(tmp_path / "q.csv"), "--annotators-json", "-", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)   # the JSON and nothing else
    assert report and "wrote the annotator report" in done.stderr


def test_a_csv_report_to_a_device_needs_a_place_for_the_json_report(tmp_path, capsys):
    """``--annotators /dev/null`` (or /dev/stdout) without --annotators-json wrote the JSON
    report beside it: a new file /dev/null.json (as root)."""
    from crowd_keras.cli import main

    export = ROOT / "tests" / "data" / "label_studio" / "demo.json"
    beside = Path("/dev/null.json")
    existed = beside.exists()
    try:
        assert main(["label-studio", "aggregate", str(export), "--control", "sentiment",
                     "--annotators", "/dev/null", "--out", str(tmp_path / "p.json"),
                     "--quiet"]) == 2
        assert not beside.exists() or existed
    finally:
        if beside.exists() and not existed:
            beside.unlink()
    err = capsys.readouterr().err
    assert ("--annotators '/dev/null' is a stream, not a file: the JSON report would go beside "
            "it to '/dev/null.json'; give --annotators-json PATH (or -) too") in err, err
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv, words", [
    (["agree", "{src}", "--out", "-"], "agree: error: argument --out: '-' (the standard output) "
                                       "cannot take a folder of report.html and report.json"),
    (["label-studio", "aggregate", "{src}", "--annotators", "-"],
     "aggregate: error: argument --annotators: '-' (the standard output) cannot take the CSV "
     "report and the JSON report beside it"),
    (["agree", "{src}", "--out", ""], "agree: error: argument --out: an empty path cannot take "
                                      "a folder of report.html and report.json"),
])
def test_a_dash_for_an_output_that_is_no_stream_is_refused(argv, words, tmp_path, monkeypatch,
                                                           capsys):
    from crowd_keras.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main([a.format(src=tmp_path / "answers.csv") for a in argv])
    assert info.value.code == 2 and words in capsys.readouterr().err
    assert os.listdir(tmp_path) == []   # no folder or file named '-'


def test_a_utf16_file_is_named_as_utf16_and_latin1_by_its_byte_and_line(tmp_path, capsys):
    from crowd_keras.cli import main

    utf16, latin1 = tmp_path / "answers.tsv", tmp_path / "answers.csv"
    utf16.write_text("task\tworker\tlabel\n1\ta\tx\n1\tb\tx\n", encoding="utf-16")  # Excel's
    latin1.write_bytes(b"task,worker,label\n1,a,x\n1,b,caf\xe9\n")
    assert main(["aggregate", str(utf16), "--out", str(tmp_path / "l.csv"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{utf16}: UTF-16 text" in err and "iconv -f UTF-16 -t UTF-8" in err, err
    assert main(["aggregate", str(latin1), "--out", str(tmp_path / "l.csv"), "--quiet"]) == 1
    assert f"{latin1}: not UTF-8 text: byte 0xe9 on line 3" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["answers.csv", "answers.tsv"]


def test_a_compressed_file_or_a_workbook_is_named_as_such(tmp_path, capsys):
    """A .csv.gz or an Excel workbook given as the table read "not UTF-8 text: byte 0x8b on
    line 1 (save it as UTF-8)", naming no cause."""
    import gzip
    import zipfile

    from crowd_keras.cli import main

    rows = b"task,worker,label\n1,a,x\n1,b,x\n"
    (tmp_path / "answers.csv.gz").write_bytes(gzip.compress(rows))
    with zipfile.ZipFile(tmp_path / "answers.xlsx", "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("xl/worksheets/sheet1.xml", bytes(range(256)) * 8)
    for name, words in (("answers.csv.gz", "a gzip-compressed file, not CSV text: decompress "
                                           "it first (gunzip)"),
                        ("answers.xlsx", "a zip archive (as an Excel .xlsx workbook is), not "
                                         "CSV text: save the sheet as 'CSV UTF-8'")):
        assert main(["aggregate", str(tmp_path / name), "--out", str(tmp_path / "l.csv"),
                     "--quiet"]) == 1
        assert f"{tmp_path / name}: {words}" in capsys.readouterr().err
    assert not (tmp_path / "l.csv").exists()


@pytest.mark.skipif(not os.path.ismount("/sys"), reason="needs sysfs, where no one (root "
                                                       "included) can make a file")
def test_an_output_the_system_refuses_is_named_not_its_temporary_file(tmp_path, capsys):
    """A read-only or foreign folder: "PermissionError: [Errno 13] Permission denied:
    '/sys/.labels.csv.x1y2.tmp' (--debug shows the traceback)" named a file the user never
    gave, as if the command had failed."""
    from crowd_keras.cli import main

    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\n1,a,x\n1,b,x\n")
    assert main(["aggregate", str(src), "--method", "majority_vote", "--out",
                 "/sys/crowd-keras-labels.csv", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("crowd-keras: error: /sys/crowd-keras-labels.csv: "), err
    assert ".tmp" not in err and "--debug" not in err and len(err.splitlines()) == 1


def test_a_count_that_is_also_an_open_descriptor_is_no_output_path(capsys):
    # `demo --annotators 8` in a process whose descriptor 8 led where stdout does (a pytest
    # worker's) sent the table to stderr: os.stat(8) read the count as a descriptor
    from crowd_keras.cli import main
    from crowd_keras.files import standard_stream

    fd = os.dup(1)
    try:
        assert standard_stream(fd) is None and standard_stream(f"/dev/fd/{fd}") == 1
        assert main(["demo", "--items", "60", "--annotators", str(fd), "--methods",
                     "majority_vote", "--quiet"]) == 0
        assert "majority_vote" in capsys.readouterr().out
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK),
                    reason="no writable /dev/shm")
def test_a_plain_file_under_dev_shm_is_written_atomically(tmp_path, capsys):
    # every path under /dev was taken for a stream: a labels file in /dev/shm (a memory-backed
    # folder) was written in place, not replaced, and a missing folder there was not made
    # (the command failed after the fit: No such file or directory)
    import shutil
    import tempfile

    from crowd_keras.cli import main

    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\n1,a,x\n1,b,x\n2,a,y\n2,b,y\n")
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="crowd-keras-test-"))
    try:
        out = folder / "new" / "labels.csv"
        assert main(["aggregate", str(src), "--method", "majority_vote", "--out", str(out),
                     "--quiet"]) == 0, capsys.readouterr()
        assert out.read_text().splitlines()[0].startswith("task,label,probability")
        with open(out) as held:   # a reader of the old file keeps it whole: a rename
            before = out.stat().st_ino
            assert main(["aggregate", str(src), "--method", "majority_vote", "--out",
                         str(out), "--quiet"]) == 0
            assert out.stat().st_ino != before
            assert held.read().startswith("task,label,probability")
        assert os.listdir(out.parent) == ["labels.csv"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
