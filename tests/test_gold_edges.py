"""Gold labels at their edges: every place they enter (fit(gold=...), --gold, the Snorkel
adapter's Y_dev, Dask) names a bad gold row and holds every good one."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.cli import main


@pytest.fixture
def answers(tmp_path):
    """A CSV of 3 annotations on each of 6 items with integer ids and integer labels."""
    src = tmp_path / "answers.csv"
    rows = [(item, worker, (item + (worker == 2)) % 2) for item in range(1, 7)
            for worker in range(3)]
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(src, index=False)
    return src


def _aggregate(answers, gold, text):
    gold.write_text(text)
    return main(["aggregate", str(answers), "--method", "dawid_skene", "--gold", str(gold),
                 "--out", str(answers.parent / "labels.csv")])


def test_cli_gold_names_the_row_whose_item_id_is_not_plain(answers, tmp_path, capsys):
    # '003' is not item 3; the other ids, written plainly, are still the annotations' items
    assert _aggregate(answers, tmp_path / "gold.csv", "task,label\n1,1\n2,0\n003,1\n") == 1
    assert "gold.csv: line 4: item '003' is not an item of" in capsys.readouterr().err


def test_cli_gold_names_the_row_whose_label_is_no_class(answers, tmp_path, capsys):
    # 'yes' makes pandas read the column as text; the numbers above it are still classes
    assert _aggregate(answers, tmp_path / "gold.csv", "task,label\n1,1\n2,0\n3,yes\n") == 1
    assert "gold.csv: line 4: label 'yes' of item 3 is not one of the classes [0, 1]" in \
        capsys.readouterr().err


def test_cli_gold_repeated_item_is_named_as_written(answers, tmp_path, capsys):
    assert _aggregate(answers, tmp_path / "gold.csv", "task,label\n1,1\n1,1\n") == 1
    assert "item 1 has more than one gold label (line 3)" in capsys.readouterr().err
