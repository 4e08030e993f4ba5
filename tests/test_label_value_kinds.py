"""One reading of label values across the readers: booleans, nullable dtypes, unsigned ints.

The same small crowd, given as each value kind, reaches ``Annotations.from_frame``,
``from_wide``, ``from_dense``, ``from_label_matrix`` and the features path
(``features.training_labels``); they agree on the classes and codes, or refuse naming the
cell and the value.
"""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.features import training_labels

ITEMS = ["i0", "i0", "i1", "i1", "i2", "i2"]
WORKERS = ["a", "b", "a", "b", "a", "b"]
BOOLS = [True, False, True, True, False, False]


def long(labels):
    return pd.DataFrame({"task": ITEMS, "worker": WORKERS, "label": labels})


@pytest.mark.parametrize("labels", [
    pd.Series(BOOLS), pd.Series(BOOLS, dtype="boolean"), pd.Series(BOOLS, dtype=object),
    pd.Series(pd.Categorical(BOOLS))], ids=["bool", "boolean", "object", "categorical"])
def test_booleans_are_codes_0_and_1_in_every_reader(labels):
    frame = Annotations.from_frame(long(labels))
    assert frame.classes.tolist() == [0, 1] and frame.labels.tolist() == [1, 0, 1, 1, 0, 0]
    wide = long(labels).pivot(index="task", columns="worker", values="label")
    for read in (Annotations.from_wide(wide), Annotations.from_dense(wide),
                 Annotations.from_label_matrix(wide)):
        assert read.classes.tolist() == [0, 1]
        assert read.labels.tolist() == frame.labels.tolist()
    # the features path read them as the classes [False, True]
    codes, classes = training_labels(labels, len(labels))
    assert list(classes) == [0, 1] and [type(c) for c in classes] != [bool, bool]
    assert codes.tolist() == frame.labels.tolist()
    codes, classes = training_labels(labels, len(labels), classes=[0, 1])   # was refused
    assert codes.tolist() == frame.labels.tolist()
    codes, classes = training_labels(labels, len(labels), classes=[False, True])
    assert codes.tolist() == frame.labels.tolist()


def test_a_boolean_wide_frame_with_a_missing_cell():
    # pandas makes a bool column with a missing cell an object column: it was refused
    df = long(BOOLS).iloc[:-1]
    wide = df.pivot(index="task", columns="worker", values="label")
    assert wide.dtypes.tolist() == [object, object]
    read = Annotations.from_wide(wide)
    assert read.classes.tolist() == [0, 1] and read.labels.tolist() == [1, 0, 1, 1, 0]
    assert read.annotations_per_item().tolist() == [2, 2, 1]
    dense = Annotations.from_dense(wide, missing=np.nan)
    assert dense.labels.tolist() == read.labels.tolist()
    assert Annotations.from_frame(df).labels.tolist() == read.labels.tolist()
    codes, classes = training_labels(pd.Series([True, None, False], dtype=object), 3)
    assert codes.tolist() == [1, -1, 0] and list(classes) == [0, 1]


def test_nullable_frames_in_the_matrix_readers():
    # pd.NA is missing, as NaN; a nullable boolean frame reads as a bool one
    ints = pd.DataFrame([[1, pd.NA], [0, 1]], dtype="Int64")
    read = Annotations.from_dense(ints, missing=np.nan)
    assert read.labels.tolist() == [1, 0, 1] and read.classes.tolist() == [0, 1]
    assert Annotations.from_wide(ints).labels.tolist() == [1, 0, 1]
    flags = pd.DataFrame([[True, False], [False, True]], dtype="boolean")
    for reader in (Annotations.from_dense, Annotations.from_label_matrix, Annotations.from_wide):
        assert reader(flags).labels.tolist() == [1, 0, 0, 1]


def test_booleans_beside_numbers_are_refused_naming_both_cells():
    with pytest.raises(CrowdDataError, match=r"labels mix types: bool True at row 0 .* and int 2 "
                                             r"at row 1"):
        Annotations.from_frame(long(pd.Series([True, 2, 0, 1, 1, 0], dtype=object)))
    with pytest.raises(CrowdDataError, match=r"labels mix types: bool True at item 0 and int 2 at "
                                             r"item 1"):
        training_labels(pd.Series([True, 2, None], dtype=object), 3)   # was classes [0, True, 2]
    cells = np.array([[True, 2], [False, None]], dtype=object)
    with pytest.raises(CrowdDataError, match=r"bool True at row 0, column 0 beside int 2 at row 0, "
                                             r"column 1"):
        Annotations.from_dense(cells, missing=np.nan)
    wide = pd.DataFrame(cells, index=["i0", "i1"], columns=["a", "b"])
    with pytest.raises(CrowdDataError, match=r"label True of item 'i0' \(row 0\), annotator 'a' "
                                             r"\(column 0\) is not a class code.*beside numbers "
                                             r"\(label 2 of item 'i0', annotator 'b'\)"):
        Annotations.from_wide(wide)


def test_unsigned_labels_beyond_int64_are_named_not_wrapped_negative():
    big = np.uint64(2 ** 63)
    labels = pd.Series([big, 1, 1, big, 1, 1], dtype="uint64")
    with pytest.raises(CrowdDataError, match=r"label 9223372036854775808 at row 0 \(item 'i0', "
                                             r"annotator 'a'\), too large"):
        Annotations.from_frame(long(labels))   # was "negative label -9223372036854775808"
    with pytest.raises(CrowdDataError, match=r"code 9223372036854775808 at \(row, column\) "
                                             r"\(1, 0\), too large"):
        Annotations.from_dense(np.array([[0, 1], [big, 1]], dtype=np.uint64))
    # within int64 an unsigned column reads as a signed one
    small = Annotations.from_frame(long(pd.Series([2, 1, 1, 2, 1, 1], dtype="uint64")))
    assert small.classes.tolist() == [0, 1, 2] and small.labels.tolist() == [2, 1, 1, 2, 1, 1]


def test_a_csv_label_beyond_int64_is_read_as_written_not_as_minus_1(tmp_path, capsys):
    from crowd_keras.cli import main

    # pandas reads 2**64 - 1 as uint64; it wrapped to the "negative label -1"; aggregate's
    # classes are the numbers given, so it is a class of its own, exactly
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\ni0,a,18446744073709551615\ni0,b,1\ni1,b,18446744073709551615"
                   "\ni1,c,18446744073709551615\n")
    assert main(["aggregate", str(src), "--out", str(tmp_path / "x.csv")]) == 0
    out = capsys.readouterr().out
    assert "2 classes [1, 18446744073709551615]" in out
    labels = pd.read_csv(tmp_path / "x.csv", dtype=str).set_index("task")["label"]
    assert labels.to_dict() == {"i0": "1", "i1": "18446744073709551615"}


def test_pred_probs_columns_true_false_are_the_classes_1_and_0():
    from crowd_keras.aggregation import get_label_model

    ann = Annotations.from_frame(long(BOOLS))   # classes [0, 1]
    p = np.array([[0.2, 0.8], [0.9, 0.1], [0.4, 0.6]])
    ids = ["i0", "i1", "i2"]
    by_code = get_label_model("ibcc").fit(ann, pred_probs=pd.DataFrame(p, index=ids))
    for columns, values in (([False, True], p), ([True, False], p[:, ::-1])):
        # [True, False] was read by position: the True column as class 0
        frame = pd.DataFrame(values, index=ids, columns=columns)
        fitted = get_label_model("ibcc").fit(ann, pred_probs=frame)
        np.testing.assert_allclose(fitted.predict_proba(), by_code.predict_proba())


def test_a_negative_feature_label_names_its_item():
    # as from_frame names the row of a negative label (it named the smallest value only)
    with pytest.raises(CrowdDataError, match=r"label code -2 of item 2 is negative"):
        training_labels(np.array([0, -1, -2, -3, 1]), 5)


@pytest.mark.parametrize("listed, classes, labels", [
    ("False,True", "[False, True]", ["False", "True"]),    # was: True not in ['False', 'True']
    ("0,1", "[0, 1]", ["0", "1"])])                        # was: True not in ['0', '1']
def test_cli_classes_of_a_true_false_column(tmp_path, capsys, listed, classes, labels):
    from crowd_keras.cli import main

    src, out = tmp_path / "answers.csv", tmp_path / "out.csv"
    src.write_text("task,worker,label\ni0,a,False\ni0,b,False\ni1,a,True\ni1,b,True\n")
    assert main(["aggregate", str(src), "--method", "majority_vote", f"--classes={listed}",
                 "--out", str(out)]) == 0
    assert f"2 classes {classes}" in capsys.readouterr().out
    assert pd.read_csv(out, dtype=str)["label"].tolist() == labels
    # as in memory: classes=[False, True] or [0, 1] with the labels True/False
    frame = long(BOOLS)
    for given in ([False, True], [0, 1]):
        assert Annotations.from_frame(frame, classes=given).labels.tolist() == \
            Annotations.from_frame(frame).labels.tolist()
    assert main(["aggregate", str(src), "--classes=yes,no", "--out", str(out)]) == 1
    assert "--classes: 'yes' is neither True/False nor a number, but the labels are booleans" \
        in capsys.readouterr().err


def test_labels_0_and_1_meet_boolean_classes_alike_in_every_reader():
    from crowd_keras.aggregation.base import gold_mapping
    from crowd_keras.aggregation.pred_probs import class_columns

    # 1 is True against the classes [False, True], as scikit-learn's encoders match it; a
    # dict gold {item: 1} matched (pandas' object lookup), an int64 Series and from_frame
    # refused
    frame = long([1, 0, 1, 1, 0, 0])
    for classes in ([False, True], [True, False]):
        read = Annotations.from_frame(frame, classes=classes)
        assert read.labels.tolist() == Annotations.from_frame(long(BOOLS), classes=classes) \
            .labels.tolist()
    for gold in ({"i0": 1}, pd.Series([1], index=["i0"]), pd.Series([1], index=["i0"],
                                                                      dtype="Int64")):
        assert gold_mapping(gold, np.array([False, True]))[1].tolist() == [1]
    assert class_columns([1, 0], [False, True]).tolist() == [1, 0]
    codes, _ = training_labels(np.array([1, 0, -1]), 3, classes=[False, True])
    assert codes.tolist() == [1, 0, -1]
    with pytest.raises(CrowdDataError, match=r"label 2 at row 1 .* is not one of the classes "
                                             r"\[False, True\]"):
        Annotations.from_frame(long([1, 2, 0, 1, 1, 0]), classes=[False, True])
    with pytest.raises(CrowdDataError, match=r"gold label 2 of item 'i0' is not one of"):
        gold_mapping(pd.Series([2], index=["i0"]), np.array([False, True]))
