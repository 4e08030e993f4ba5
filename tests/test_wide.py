"""Annotations.from_wide / to_wide: cleanlab's items × annotators layout with NaN."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.datasets import simulate_crowd


def test_round_trip_keeps_ids_and_items_without_labels():
    frame = pd.DataFrame({"ann_a": [0, np.nan, 2, np.nan], "ann_b": [1, 1, np.nan, np.nan]},
                         index=["x", "y", "z", "w"])
    ann = Annotations.from_wide(frame)
    assert list(ann.item_ids) == ["x", "y", "z", "w"]
    assert list(ann.annotator_ids) == ["ann_a", "ann_b"]
    assert ann.n_classes == 3 and ann.n_annotations == 4
    np.testing.assert_array_equal(ann.annotations_per_item(), [2, 1, 1, 0])   # "w" kept
    pd.testing.assert_frame_equal(ann.to_wide(), frame.astype(float))


def test_a_simulated_crowd_round_trips():
    ann = simulate_crowd(n_items=50, n_classes=3, n_annotators=6, seed=1).annotations
    again = Annotations.from_wide(ann.to_wide(), n_classes=3)
    assert again == ann


def test_nullable_integers_and_arrays():
    frame = pd.DataFrame({"a": pd.array([0, None, 1], dtype="Int64")})
    assert Annotations.from_wide(frame).n_annotations == 2
    ann = Annotations.from_wide(np.array([[0, np.nan], [2, 1]]), classes=["no", "maybe", "yes"])
    assert list(ann.classes) == ["no", "maybe", "yes"] and ann.n_annotations == 3
    assert ann.to_wide(class_names=True).iloc[1, 0] == "yes"


def test_pd_na_in_object_columns_is_missing():
    # as cleanlab reads it (replace({pd.NA: np.nan})): a column of numbers and pd.NA/None
    frame = pd.DataFrame({"a": [0, 1, pd.NA, 1], "b": [0, None, 1, pd.NA]}, dtype=object,
                         index=list("pqrs"))
    ann = Annotations.from_wide(frame)
    assert ann.n_annotations == 5
    np.testing.assert_array_equal(ann.to_wide().to_numpy(),
                                  [[0, 0], [1, np.nan], [np.nan, 1], [1, np.nan]])


@pytest.mark.parametrize("cell, match", [
    (0.5, r"label 0.5 of item 'y' \(row 1\), annotator 'b' \(column 1\) is not a class code"),
    ("cat", r"label 'cat' of item 'y' \(row 1\), annotator 'b'"),
    (-1, r"label -1.0 of item 'y'"),
    (np.inf, r"label inf of item 'y'"),
    (3, r"label 3.0 of item 'y' \(row 1\), annotator 'b' \(column 1\) is outside the 3 classes"),
])
def test_bad_cells_are_named(cell, match):
    frame = pd.DataFrame({"a": [0, 1], "b": [2, np.nan]}, index=["x", "y"], dtype=object)
    frame.loc["y", "b"] = cell
    with pytest.raises(CrowdDataError, match=match):
        Annotations.from_wide(frame, n_classes=3)


def test_class_names_written_by_to_wide_are_read_back_with_the_classes():
    # to_wide(class_names=True) wrote a frame that from_wide refused even with the classes
    ann = Annotations.from_frame(pd.DataFrame({"task": ["a", "a", "b", "c"],
                                               "worker": ["u", "v", "u", "v"],
                                               "label": ["cat", "dog", "cat", "eel"]}),
                                 classes=["eel", "dog", "cat", "fox"])
    named = ann.to_wide(class_names=True)
    assert Annotations.from_wide(named, classes=ann.classes) == ann
    with pytest.raises(CrowdDataError, match=r"label 'eel' of item 'c' \(row 2\), annotator "
                                             r"'v' \(column 1\) is not one of the classes "
                                             r"\['cat', 'dog'\]"):
        Annotations.from_wide(named, classes=["cat", "dog"])
    with pytest.raises(CrowdDataError, match=r"label 'cat' of item 'a' .* is not a class code "
                                             r".*; cells of class names are read with classes="):
        Annotations.from_wide(named)
    listed = named.astype(object)
    listed.iat[1, 0] = [1]   # unhashable: named as no class, not a TypeError
    with pytest.raises(CrowdDataError, match=r"label \[1\] of item 'b' .* is not one of"):
        Annotations.from_wide(listed, classes=ann.classes)


def test_digit_text_cells_against_integer_classes_name_the_class_written_alike():
    frame = pd.DataFrame({"u": ["0", "1"], "v": ["1", None]}, index=["a", "b"])
    with pytest.raises(CrowdDataError, match=r"label '0' of item 'a' .* is not one of the "
                                             r"classes \[0, 1\] .* \(the classes include 0: "
                                             r"give the labels in the classes' type\)$"):
        Annotations.from_wide(frame, classes=[0, 1])
    assert Annotations.from_wide(frame, classes=["0", "1"]).labels.tolist() == [0, 1, 1]
