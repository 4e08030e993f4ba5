"""Atomic writes leave no temporary file behind and give the mode a plain ``open`` gives."""
import os
import stat

import pytest

from crowd_keras import CrowdDataError
from crowd_keras.files import atomic_write_text, default_file_mode


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_write_honours_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = atomic_write_text(tmp_path / "labels.csv", "item,label\n1,a\n")
        with open(tmp_path / "plain.csv", "w") as fh:  # what the user expects
            fh.write("x")
    finally:
        os.umask(old)
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode == 0o666 & ~umask == stat.S_IMODE((tmp_path / "plain.csv").stat().st_mode)
    assert path.read_text() == "item,label\n1,a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.csv", "plain.csv"]


def test_default_file_mode_leaves_the_umask_as_it_was():
    old = os.umask(0o027)
    try:
        assert default_file_mode() == 0o640
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(old)


def test_atomic_write_under_a_file_names_the_path(tmp_path):
    (tmp_path / "labels.csv").write_text("x")
    with pytest.raises(CrowdDataError, match=r"out\.csv: cannot make its folder .*labels\.csv"
                                             r"/sub: a file is in the way"):
        atomic_write_text(tmp_path / "labels.csv" / "sub" / "out.csv", "a\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.csv"]


def test_a_rewrite_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    """As ``open(path, "w")`` does: a report made private (it may hold e-mails) stays so."""
    path = atomic_write_text(tmp_path / "annotators.csv", "annotator,email\n1,a@example.org\n")
    os.chmod(path, 0o600)
    atomic_write_text(path, "annotator,email\n1,b@example.org\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "annotator,email\n1,b@example.org\n"
