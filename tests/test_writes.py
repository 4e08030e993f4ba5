"""Every writer of the library: atomic (an interrupted write leaves the previous file as it
was and no temporary file beside it), its folder made or a clear error naming the path, and
the same files from a second run with the same arguments."""
from __future__ import annotations

import numpy as np
import pytest

from crowd_keras import CrowdDataError


def _listing(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# ------------------------------------------------------------------ Snorkel adapter save
def _fitted_label_model():
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    votes = np.array([[0, 1, -1], [1, 1, 0], [0, 0, 0], [1, -1, 1]] * 5)
    return CrowdLabelModel(cardinality=2, method="majority_vote").fit(votes)


def test_snorkel_save_interrupted_keeps_the_previous_file(tmp_path, monkeypatch):
    model = _fitted_label_model()
    path = tmp_path / "label_model.npz"
    model.save(path)
    good = path.read_bytes()

    def interrupted(target, *args, **kwargs):   # half the archive written, then a Ctrl-C
        target.write(good[:len(good) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.save(path)
    assert path.read_bytes() == good
    assert _listing(tmp_path) == ["label_model.npz"]


def test_snorkel_save_makes_its_folder_and_names_a_file_in_the_way(tmp_path):
    model = _fitted_label_model()
    path = tmp_path / "models" / "v1" / "label_model.npz"
    model.save(path)
    first = path.read_bytes()
    model.save(path)
    assert path.read_bytes() == first
    again = type(model)(cardinality=2).load(path)
    np.testing.assert_array_equal(again.predict_proba(np.array([[0, 1, 0]])),
                                  model.predict_proba(np.array([[0, 1, 0]])))
    (tmp_path / "blocker").write_text("x")
    with pytest.raises(CrowdDataError, match="blocker"):
        model.save(tmp_path / "blocker" / "label_model.npz")


# ------------------------------------------------------------------ report folders (--out DIR)
def _answers(folder, shift=0):
    path = folder / "answers.csv"
    rows = ["task,worker,label"] + [f"{t},w{w},{(t * w + shift) % 3}" for t in range(12)
                                    for w in range(3)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("command", ["agree", "label-studio report"])
def test_a_folder_in_place_of_a_report_file_is_refused_before_anything_is_written(
        tmp_path, capsys, command):
    """``report.json`` a folder: refused before the work, not after ``report.html`` was
    replaced (which left a report of two runs)."""
    from conftest import ROOT
    from crowd_keras.cli import main

    source = (_answers(tmp_path) if command == "agree"
              else ROOT / "tests" / "data" / "label_studio" / "demo.json")
    out = tmp_path / "report"
    (out / "report.json").mkdir(parents=True)
    assert main(command.split() + [str(source), "--out", str(out), "--no-plots"]) != 0
    assert "report.json' is a folder" in capsys.readouterr().err
    assert _listing(out) == ["report.json"]


# ------------------------------------------------------------------ outputs written as one
def _demo_export():
    from conftest import ROOT
    from crowd_keras.integrations import label_studio as ls

    data = ROOT / "tests" / "data" / "label_studio"
    return ls, data / "demo.json", ls.read_export(data / "demo.json", control="sentiment",
                                                  label_config=data / "config.xml")


def _full_disk_on_call(n, monkeypatch):
    """``os.fsync`` fails with ENOSPC on its ``n``-th call: the disk fills while a file of
    the output is written (a real full disk cannot be made in a test)."""
    import errno
    import os

    fsync, calls = os.fsync, []

    def fsync_or_full(fd):
        calls.append(fd)
        if len(calls) == n:
            raise OSError(errno.ENOSPC, "No space left on device")
        fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_or_full)


def test_quality_report_replaces_both_files_or_neither(tmp_path, monkeypatch):
    ls, source, _ = _demo_export()
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.json").mkdir()   # refused before the work
    with pytest.raises(CrowdDataError, match="report.json is a folder"):
        ls.quality_report(source, out, plots=False, n_bootstrap=0)
    (out / "report.json").rmdir()
    for name in ("report.html", "report.json"):
        (out / name).write_text(f"previous {name}")
    _full_disk_on_call(2, monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        ls.quality_report(source, out, plots=False, n_bootstrap=0)
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "report.html": "previous report.html", "report.json": "previous report.json"}


def test_annotator_report_replaces_both_files_or_neither(tmp_path):
    from crowd_keras.aggregation import MajorityVote

    ls, _, export = _demo_export()
    model = MajorityVote().fit(export.annotations)
    (tmp_path / "a.csv").write_text("previous report")
    (tmp_path / "a.json").mkdir()
    with pytest.raises(CrowdDataError, match="a.json is a folder"):
        ls.annotator_report(export, model, csv_path=tmp_path / "a.csv",
                            json_path=tmp_path / "a.json")
    assert (tmp_path / "a.csv").read_text() == "previous report"
    assert _listing(tmp_path) == ["a.csv", "a.json"]


def test_aggregate_with_a_full_disk_keeps_both_previous_outputs(tmp_path, monkeypatch, capsys):
    """The disk fills while the second output is written: the labels and the annotator
    report stay those of the previous run (not new labels beside an old report)."""
    from crowd_keras.cli import main

    answers = _answers(tmp_path)
    out, quality = tmp_path / "out" / "labels.csv", tmp_path / "out" / "annotators.csv"
    argv = ["aggregate", str(answers), "--method", "majority_vote", "--out", str(out),
            "--annotators", str(quality)]
    assert main(argv) == 0
    before = {p: p.read_bytes() for p in (out, quality)}
    _answers(tmp_path, shift=1)   # a new run's input: other labels
    _full_disk_on_call(2, monkeypatch)
    assert main(argv) != 0
    assert "No space left on device" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in (out, quality)} == before
    assert _listing(tmp_path / "out") == ["annotators.csv", "labels.csv"]
    monkeypatch.undo()
    assert main(argv) == 0   # the same run again: complete, and the same files twice
    after = {p: p.read_bytes() for p in (out, quality)}
    assert after != before
    assert main(argv) == 0
    assert {p: p.read_bytes() for p in (out, quality)} == after


# ------------------------------------------------------------------ training shards
def test_write_shards_interrupted_leaves_nothing_and_runs_again(tmp_path, monkeypatch):
    """Ctrl-C after the first shard: no part file is left (the next call refused the folder
    as already holding shards), and the same call then writes the same files twice."""
    pq = pytest.importorskip("pyarrow.parquet")
    from crowd_keras import Annotations
    from crowd_keras.distributed.shards import read_shards, write_shards

    ann = Annotations(np.repeat(np.arange(8), 2), np.tile([0, 1], 8), np.arange(16) % 2)
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    folder = tmp_path / "shards"
    write_table, calls = pq.write_table, []

    def interrupted(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return write_table(*args, **kwargs)

    monkeypatch.setattr(pq, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_shards(ann, x, folder, n_shards=4)
    assert _listing(folder) == []
    monkeypatch.setattr(pq, "write_table", write_table)
    meta = write_shards(ann, x, folder, n_shards=4)
    assert read_shards(folder)["rows"] == meta["rows"] == [2, 2, 2, 2]
    first = {p: (folder / p).read_bytes() for p in _listing(folder)}
    again = tmp_path / "again"
    write_shards(ann, x, again, n_shards=4)
    assert {p: (again / p).read_bytes() for p in _listing(again)} == first


def test_write_shards_names_a_file_where_its_folder_goes(tmp_path):
    pytest.importorskip("pyarrow")
    from crowd_keras import Annotations
    from crowd_keras.distributed.shards import write_shards

    ann = Annotations(np.arange(4), np.zeros(4, int), np.arange(4) % 2)
    (tmp_path / "a-file").write_text("x")
    for folder, why in ((tmp_path / "a-file", "a-file is a file"),
                        (tmp_path / "a-file" / "shards", "a file is in the way")):
        with pytest.raises(CrowdDataError, match=why):
            write_shards(ann, np.zeros((4, 1)), folder, n_shards=2)


def test_annotator_report_files_have_the_format_of_their_argument_not_their_suffix(tmp_path):
    """``csv_path`` is CSV and ``json_path`` JSON whatever their names end with (a JSON
    report named ``.txt`` was written as CSV, without its metadata)."""
    import json

    import pandas as pd

    from crowd_keras.aggregation import MajorityVote

    ls, _, export = _demo_export()
    model = MajorityVote().fit(export.annotations)
    frame = ls.annotator_report(export, model, csv_path=tmp_path / "quality.json",
                                json_path=tmp_path / "quality.txt", model_version="mv")
    doc = json.loads((tmp_path / "quality.txt").read_text())
    assert doc["model_version"] == "mv" and len(doc["annotators"]) == len(frame)
    table = pd.read_csv(tmp_path / "quality.json")
    assert table["annotator"].tolist() == frame["annotator"].tolist()


def test_quality_report_refuses_a_folder_where_the_export_is_report_json(tmp_path):
    """The library call, as the command line does: an export saved as ``report.json`` in
    the report folder is not overwritten by the report."""
    ls, source, _ = _demo_export()
    export = tmp_path / "report.json"
    export.write_bytes(source.read_bytes())
    with pytest.raises(CrowdDataError, match="would destroy it"):
        ls.quality_report(export, tmp_path, plots=False, n_bootstrap=0)
    assert export.read_bytes() == source.read_bytes()
    assert _listing(tmp_path) == ["report.json"]
