"""The Annotations container: constructors, views, round trips and every bad input."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from crowd_keras import Annotations, CrowdDataError


def small_frame():
    return pd.DataFrame({"task": ["t1", "t1", "t2", "t3", "t3", "t3"],
                         "worker": ["w1", "w2", "w1", "w1", "w2", "w3"],
                         "label": ["cat", "dog", "dog", "cat", "cat", "dog"]})


def test_from_frame_codes_ids_and_classes():
    ann = Annotations.from_frame(small_frame())
    assert list(ann.item_ids) == ["t1", "t2", "t3"]
    assert list(ann.annotator_ids) == ["w1", "w2", "w3"]
    assert list(ann.classes) == ["cat", "dog"]
    assert (ann.n_items, ann.n_annotators, ann.n_classes, ann.n_annotations) == (3, 3, 2, 6)
    dense = ann.to_dense()
    assert dense.tolist() == [[0, 1, -1], [1, -1, -1], [0, 0, 1]]
    assert ann.label_counts().tolist() == [[1, 1], [0, 1], [2, 1]]


def test_integer_labels_give_range_classes_and_keep_unseen_items():
    df = pd.DataFrame({"task": [1, 1, 3], "worker": [7, 8, 7], "label": [0, 2, 2]})
    ann = Annotations.from_frame(df, item_ids=[1, 2, 3])
    assert list(ann.classes) == [0, 1, 2]
    assert ann.n_items == 3 and ann.annotations_per_item().tolist() == [2, 0, 1]


def test_annotations_are_immutable():
    ann = Annotations.from_frame(small_frame())
    with pytest.raises(ValueError):
        ann.labels[0] = 1
    with pytest.raises(AttributeError):
        ann.foo = 1


@pytest.mark.parametrize("copied", ["pickle", "deepcopy"])
def test_a_pickled_or_copied_container_stays_immutable(copied):
    # unpickled arrays came back writeable: an in-place edit of a copy's codes or of its
    # cached counts went through, and its cached views no longer matched its codes
    import copy
    import pickle

    ann = Annotations.from_frame(small_frame())
    ann.label_counts()
    again = pickle.loads(pickle.dumps(ann)) if copied == "pickle" else copy.deepcopy(ann)
    assert again == ann
    for view in (again.labels, again.item_ids, again.classes, again.label_counts()):
        with pytest.raises(ValueError, match="read-only"):
            view[0] = view[1]


def test_to_padded_and_back():
    ann = Annotations.from_frame(small_frame())
    ids, labels = ann.to_padded()
    assert ids.shape == (3, 3)
    assert ids.tolist() == [[0, 1, -1], [0, -1, -1], [0, 1, 2]]
    assert labels.tolist() == [[0, 1, -1], [1, -1, -1], [0, 0, 1]]
    back = Annotations.from_padded(ids, labels, classes=ann.classes, item_ids=ann.item_ids,
                                   annotator_ids=ann.annotator_ids)
    assert back == ann
    assert ann.to_padded(max_annotations=5)[0].shape == (3, 5)


def test_label_matrix_from_snorkel():
    L = np.array([[-1, 1, 0], [-1, -1, -1], [1, 1, 1]])
    ann = Annotations.from_label_matrix(L, cardinality=3)
    assert ann.n_items == 3 and ann.n_classes == 3 and ann.n_annotations == 5
    assert ann.annotations_per_item().tolist() == [2, 0, 3]  # all-abstain row kept
    np.testing.assert_array_equal(ann.to_label_matrix(), L)


def test_duplicates_error_by_default_and_counted_with_last():
    df = pd.DataFrame({"task": ["a", "a", "b"], "worker": ["u", "u", "u"], "label": ["x", "y", "x"]})
    with pytest.raises(CrowdDataError, match=r"duplicate .*item 'a', annotator 'u'"):
        Annotations.from_frame(df)
    last = Annotations.from_frame(df, duplicates="last")
    assert last.n_duplicates == 1 and last.n_annotations == 2
    assert last.to_frame().iloc[0]["label"] == "y"
    first = Annotations.from_frame(df, duplicates="first")
    assert first.to_frame().iloc[0]["label"] == "x"


@pytest.mark.parametrize("matrix, message", [
    ([[0, 1], [2, 5]], r"label code 5 at row 1, column 1 is outside the 3 classes"),
    ([[0.0, np.nan]], r"NaN at \(row, column\) \(0, 1\)"),
    ([[0, 1.5]], r"non-integer code 1.5 at \(row, column\) \(0, 1\)"),
    ([[0, -3]], r"negative code -3 at row 0, column 1"),
    ([0, 1, 2], r"must be 2-d"),
    (np.zeros((0, 3)), r"empty"),
    ([["a", "b"]], r"numeric codes"),
])
def test_bad_dense_input(matrix, message):
    with pytest.raises(CrowdDataError, match=message):
        Annotations.from_dense(np.asarray(matrix) if not isinstance(matrix, np.ndarray) else matrix,
                               classes=["a", "b", "c"])


def test_bad_label_matrix_values():
    with pytest.raises(CrowdDataError, match=r"negative code -2 at row 0, column 0"):
        Annotations.from_label_matrix([[-2, 0]], cardinality=2)
    with pytest.raises(CrowdDataError, match=r"label code 2 at row 0, column 1 is outside the 2"):
        Annotations.from_label_matrix([[-1, 2]], cardinality=2)


@pytest.mark.parametrize("frame, kwargs, message", [
    ({"task": ["a"], "worker": ["u"], "label": ["zebra"]}, {"classes": ["cat", "dog"]},
     r"label 'zebra' at row 0 \(item 'a', annotator 'u'\) is not one of the classes"),
    ({"task": ["a", "b"], "worker": ["u", "v"], "label": [0, None]}, {},
     r"missing value .* column 'label' at row 1 \(item 'b', annotator 'v'\)"),
    ({"task": ["a"], "worker": ["u"], "label": [1.5]}, {}, r"non-integer label 1.5 at row 0"),
    ({"task": ["a"], "worker": ["u"], "label": [-1]}, {}, r"negative label -1 at row 0"),
    ({"task": ["a"], "worker": ["u"]}, {}, r"no column\(s\) \['label'\]"),
    ({"task": [], "worker": [], "label": []}, {}, r"no annotations"),
    ({"task": ["a"], "worker": ["u"], "label": [0]}, {"item_ids": ["b"]},
     r"item 'a' at row 0 \(annotator 'u'\) is not in item_ids"),
])
def test_bad_frame_input(frame, kwargs, message):
    with pytest.raises(CrowdDataError, match=message):
        Annotations.from_frame(pd.DataFrame(frame), **kwargs)


def test_bad_constructor_shapes_and_ranges():
    with pytest.raises(CrowdDataError, match="same length"):
        Annotations([0, 1], [0], [0, 1])
    with pytest.raises(CrowdDataError, match=r"annotator code 4 out of range 0..1 at annotation 0"):
        Annotations([0], [4], [0], n_annotators=2, n_classes=2)
    with pytest.raises(CrowdDataError, match="padding mismatch at row 0, slot 1"):
        Annotations.from_padded([[0, 1]], [[1, -1]])
    # one annotator twice in a row: named by its padded row and slots (from_padded takes no
    # duplicates= to suggest)
    with pytest.raises(CrowdDataError, match=r"^padded row 1: annotator 2 is in slots 0 and 3; "
                                             r"an annotator labels an item once$"):
        Annotations.from_padded([[0, 1, -1, -1], [2, 0, 1, 2]], [[0, 1, -1, -1], [1, 1, 0, 0]])
    with pytest.raises(CrowdDataError, match="item ids must be unique"):
        Annotations([0], [0], [0], item_ids=["a", "a"], n_classes=1)
    with pytest.raises(CrowdDataError, match="not a pandas DataFrame|expected a pandas DataFrame"):
        Annotations.from_frame([[1, 2, 3]])
    with pytest.raises(CrowdDataError, match="max_annotations=1 but an item has 3"):
        Annotations.from_frame(small_frame()).to_padded(max_annotations=1)


def test_is_a_value_error():
    assert issubclass(CrowdDataError, ValueError)


def test_subset_select_and_lookup():
    ann = Annotations.from_frame(small_frame())
    sub = ann.subset([2, 0])
    assert list(sub.item_ids) == ["t3", "t1"] and sub.n_annotations == 5
    sel = ann.select(ann.labels == 0)
    assert sel.n_items == 3 and sel.n_annotations == 3
    assert ann.item_index(["t3", "t1"]).tolist() == [2, 0]
    with pytest.raises(CrowdDataError, match="unknown annotator id 'nobody'"):
        ann.annotator_index(["nobody"])


@pytest.mark.parametrize("items, match", [
    # a mask of two items read as codes 1, 0 reordered them silently
    (np.array([True, False, True]), r"Annotations.subset takes item codes \(0..2\), got a "
                                    r"boolean array; for a mask give np.flatnonzero\(mask\)"),
    ([0, 0], r"item code 0 is given 2 times to Annotations.subset: give each item once"),
    (["t1"], r"got <U2 values; for item ids give subset\(annotations.item_index\(ids\)\)"),
    ([-1], r"item code -1 at position 0 is outside 0..2"),
])
def test_subset_refuses_what_is_not_item_codes(items, match):
    with pytest.raises(CrowdDataError, match=match):
        Annotations.from_frame(small_frame()).subset(items)


# ---------------------------------------------------------------- property-based round trips
dense_matrices = hnp.arrays(
    np.int64, st.tuples(st.integers(1, 12), st.integers(1, 8)),
    elements=st.integers(-1, 4))


@settings(max_examples=150, deadline=None)
@given(dense_matrices)
def test_dense_frame_labelmatrix_padded_round_trips(m):
    ann = Annotations.from_dense(m, classes=list(range(5)))
    np.testing.assert_array_equal(ann.to_dense(), m)
    # frame: keep every item and annotator even when they have no annotation
    via_frame = Annotations.from_frame(ann.to_frame(), classes=list(ann.classes),
                                       item_ids=list(ann.item_ids),
                                       annotator_ids=list(ann.annotator_ids))
    assert via_frame == ann
    via_lm = Annotations.from_label_matrix(ann.to_label_matrix(), cardinality=5)
    assert via_lm == ann
    ids, labels = ann.to_padded()
    via_padded = Annotations.from_padded(ids, labels, n_annotators=ann.n_annotators,
                                         classes=list(range(5)))
    assert via_padded == ann
    assert ann.n_annotations == int((m >= 0).sum())
    np.testing.assert_array_equal(ann.label_counts().sum(axis=1), (m >= 0).sum(axis=1))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from(["u1", "u2", "u3"]),
                          st.sampled_from(["x", "y", "z"])), min_size=1, max_size=30,
                unique_by=lambda r: (r[0], r[1])))
def test_string_frame_round_trip(rows):
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    ann = Annotations.from_frame(df)
    back = ann.to_frame()
    key = ["task", "worker"]
    pd.testing.assert_frame_equal(back.sort_values(key).reset_index(drop=True),
                                  df.sort_values(key).reset_index(drop=True), check_dtype=False)


def test_a_categorical_label_column_is_read_by_its_values_and_classes_keep_its_categories():
    df = pd.DataFrame({"task": [1, 1, 2], "worker": ["a", "b", "a"],
                       "label": pd.Categorical(["pos", "neg", "pos"],
                                               categories=["pos", "neu", "neg"])})
    plain = Annotations.from_frame(df)
    assert plain.classes.tolist() == ["neg", "pos"]
    kept = Annotations.from_frame(df, classes=list(df["label"].cat.categories))
    assert kept.classes.tolist() == ["pos", "neu", "neg"]
    assert kept.classes[kept.labels].tolist() == plain.classes[plain.labels].tolist()


@pytest.mark.parametrize("build, message", [
    (lambda: Annotations.from_frame(small_frame().iloc[:0], item_ids=["t1"]),
     r"at least one class is needed; pass classes= \(a frame without rows"),
    (lambda: Annotations.from_frame(small_frame().iloc[:0], item_ids=["t1"], classes=[]),
     r"at least one class is needed; classes= is empty"),
    (lambda: Annotations.from_label_matrix([[-1, -1]], classes=[]),
     r"at least one class is needed; classes= is empty"),
])
def test_readers_refuse_annotations_of_no_class_as_the_constructor_does(build, message):
    # they built a container of 0 classes, which Annotations(...) refuses: majority vote then
    # failed with ZeroDivisionError and Dawid-Skene with a reshape error
    with pytest.raises(CrowdDataError, match=message):
        build()
    with pytest.raises(CrowdDataError, match="at least one class is needed"):
        Annotations([], [], [], n_items=1)
    kept = Annotations.from_frame(small_frame().iloc[:0], item_ids=["t1"], classes=["cat"])
    assert (kept.n_items, kept.n_classes, kept.n_annotations) == (1, 1, 0)


@pytest.mark.parametrize("index", [["task"], ["task", "worker"], ["worker", "task", "label"]])
def test_a_frame_indexed_by_its_columns_reads_as_its_reset_index(index):
    # a frame indexed by item (set_index, a groupby) raised "no column 'task'", which
    # crowd_keras.distributed reads from a Dask frame's index
    df = small_frame()
    assert Annotations.from_frame(df.set_index(index)) == Annotations.from_frame(df)


def test_a_frame_indexed_by_item_keeps_the_checks_and_names_its_index_levels():
    df = small_frame()
    with pytest.raises(CrowdDataError, match=r"no column\(s\) \['task'\]; columns are "
                                             r"\['worker', 'label'\]; index level\(s\) are "
                                             r"\['item'\]"):
        Annotations.from_frame(df.set_index("task").rename_axis("item"))
    with pytest.raises(CrowdDataError, match=r"missing value \(NaN/None\) in column 'task' at "
                                             r"row 1 \(annotator 'w2'\)"):
        Annotations.from_frame(df.assign(task=["t1", None] + list(df.task[2:]))
                               .set_index("task"))
    with pytest.raises(CrowdDataError, match=r"item 't1', annotator 'w1' at row 0 and row 6"):
        Annotations.from_frame(pd.concat([df, df.iloc[[0]]]).set_index("task"))
    # a column of the name is read before an index level of it
    assert Annotations.from_frame(df.set_index(pd.Index([9] * 6, name="task"))) == \
        Annotations.from_frame(df)


def test_from_dense_of_a_frame_keeps_its_index_and_columns_as_ids():
    # they became 0..n-1: every result (label_issues' items, annotator_quality_'s
    # annotators) named positions instead of the frame's ids
    frame = pd.DataFrame({"lf_a": [1, -1, 0], "lf_b": [0, 1, -1]}, index=["x", "y", "z"])
    ann = Annotations.from_dense(frame)
    assert ann.item_ids.tolist() == ["x", "y", "z"]
    assert ann.annotator_ids.tolist() == ["lf_a", "lf_b"]
    assert ann == Annotations.from_dense(frame.to_numpy(), item_ids=["x", "y", "z"],
                                         annotator_ids=["lf_a", "lf_b"])
    assert Annotations.from_dense(frame, item_ids=[7, 8, 9]).item_ids.tolist() == [7, 8, 9]
    assert Annotations.from_dense(pd.DataFrame(frame.to_numpy())) == \
        Annotations.from_dense(frame.to_numpy())   # pandas' default axes: the same 0..n-1
    with pytest.raises(CrowdDataError, match=r"items mix types: int 1 at row 0 of the frame's "
                                             r"index and str '1' at row 1"):
        Annotations.from_dense(frame.set_axis([1, "1", 2]))
    with pytest.raises(CrowdDataError, match=r"item id 'x' at position 1 repeats position 0"):
        Annotations.from_dense(frame.set_axis(["x", "x", "z"]))


@pytest.mark.parametrize("kwargs, message", [
    ({"classes": ["0", "1"]}, r"^label 0 at row 0 \(item 1, annotator 7\) is not one of the "
                              r"classes \['0', '1'\] \(class '0' is written alike: give the labels "
                              r"in the classes' type, e.g. frame\['label'\].astype\(str\)\)$"),
    ({"item_ids": ["1", "2"]}, r"^item 1 at row 0 \(annotator 7\) is not in item_ids \(the item "
                               r"ids include '1': give the ids in the type they were read with\)$"),
    ({"annotator_ids": ["7", "8"]}, r"^annotator 7 at row 0 \(item 1\) is not in annotator_ids "
                                    r"\(the annotator ids include '7'"),
    ({"item_ids": [2, 3]}, r"^item 1 at row 0 \(annotator 7\) is not in item_ids$"),
])
def test_a_value_not_among_the_given_ids_or_classes_names_its_row_and_one_written_alike(
        kwargs, message):
    # the ids or classes of a config (text) against a CSV's integers: the message named
    # neither the row's annotator nor the id written alike, as item_index does
    df = pd.DataFrame({"task": [1, 1, 2], "worker": [7, 8, 7], "label": [0, 1, 1]})
    with pytest.raises(CrowdDataError, match=message):
        Annotations.from_frame(df, **kwargs)


def test_padded_ids_and_codes_out_of_range_are_named_by_row_and_slot():
    # named "n_items=2 disagrees with 1 item ids" (an n_items never given) and "annotator
    # code 1 out of range 0..0 at annotation 1" (a position after sorting)
    ids, labels = [[0, 1], [1, -1]], [[0, 1], [1, -1]]
    with pytest.raises(CrowdDataError, match=r"^item_ids has 1 ids for the padded arrays' 2 "
                                             r"rows \(shape \(2, 2\)\)$"):
        Annotations.from_padded(ids, labels, item_ids=["x"])
    with pytest.raises(CrowdDataError, match=r"^annotator code 1 at row 0, slot 1 is outside "
                                             r"the 1 annotators of annotator_ids \(codes 0..0\)$"):
        Annotations.from_padded(ids, labels, annotator_ids=["u"])
    with pytest.raises(CrowdDataError, match=r"^annotator code 1 at row 0, slot 1 is outside "
                                             r"the 1 annotators of n_annotators=1"):
        Annotations.from_padded(ids, labels, n_annotators=1)
    assert Annotations.from_padded(ids, labels, item_ids=["x", "y"],
                                   annotator_ids=["u", "v"]).item_ids.tolist() == ["x", "y"]


def test_ids_given_as_codes_to_the_constructor_point_to_the_frame_reader():
    # "item codes must hold integer class codes": items are not classes, and ids are read
    # by from_frame
    with pytest.raises(CrowdDataError, match=r"^item codes must hold integer codes, got dtype "
                                             r"<U1; ids \(not codes\) are read by "
                                             r"Annotations\.from_frame$"):
        Annotations(["a", "b"], [0, 1], [0, 0])
    with pytest.raises(CrowdDataError, match=r"^labels must hold integer class codes, got "
                                             r"dtype <U1$"):
        Annotations([0, 1], [0, 1], ["x", "y"])


def test_to_frame_refuses_one_name_for_two_columns():
    # to_frame("label") (the item column named as the label's) returned two columns: the
    # item ids were overwritten by the labels, silently
    ann = Annotations.from_frame(small_frame())
    with pytest.raises(ValueError, match=r"^to_frame: 'label' is given as both the item and "
                                         r"the label column name"):
        ann.to_frame("label")
    with pytest.raises(ValueError, match=r"'id' is given as both the item and the annotator"):
        ann.to_frame(item="id", annotator="id")
    assert ann.to_frame("item", "who", "what").columns.tolist() == ["item", "who", "what"]


def test_from_counts_of_a_crosstab_keeps_its_items_and_classes():
    # a frame of counts (pd.crosstab) became items 0..n-1 and classes 0..K-1
    df = small_frame()
    counts = pd.crosstab(df["task"], df["label"])
    ann = Annotations.from_counts(counts)
    assert ann.item_ids.tolist() == ["t1", "t2", "t3"] and ann.classes.tolist() == ["cat", "dog"]
    np.testing.assert_array_equal(ann.label_counts(), counts.to_numpy())
    assert Annotations.from_counts(counts, classes=["c", "d"]).classes.tolist() == ["c", "d"]
    assert Annotations.from_counts(counts.astype("Int64")) == ann   # nullable counts read
    assert Annotations.from_counts(counts.to_numpy()).item_ids.tolist() == [0, 1, 2]


def test_from_label_matrix_of_a_frame_keeps_its_index_and_function_names():
    # as from_dense: the functions' names were lost (annotator ids 0..m-1)
    L = pd.DataFrame({"lf_spam": [1, -1, 0], "lf_ham": [0, 0, -1]}, index=[10, 20, 30])
    ann = Annotations.from_label_matrix(L)
    assert ann.item_ids.tolist() == [10, 20, 30]
    assert ann.annotator_ids.tolist() == ["lf_spam", "lf_ham"]
    assert ann == Annotations.from_dense(L)
    assert Annotations.from_label_matrix(L.to_numpy()).annotator_ids.tolist() == [0, 1]
    with pytest.raises(CrowdDataError, match=r"annotator id 'lf' at position 1 repeats"):
        Annotations.from_label_matrix(L.set_axis(["lf", "lf"], axis=1))


def test_numpy_string_dtype_ids_are_named_as_ids_and_text():
    # numpy 2's StringDType (kind "T") slipped past the text checks: subset(ids) was told
    # that ids are read by from_frame instead of item_index, and a matrix was "dtype
    # StringDType()" instead of text
    ann = Annotations.from_frame(small_frame())
    text = np.dtypes.StringDType()
    with pytest.raises(CrowdDataError, match=r"subset takes item codes \(0..2\), got "
                                             r"StringDType\(\) values; for item ids give "
                                             r"subset\(annotations\.item_index\(ids\)\)"):
        ann.subset(np.array(["t1"], dtype=text))
    assert ann.subset(ann.item_index(np.array(["t3", "t1"], dtype=text))).item_ids.tolist() \
        == ["t3", "t1"]
    with pytest.raises(CrowdDataError, match=r"must be numeric codes, got text \(e\.g\. '1'"):
        Annotations.from_dense(np.array([["1", "0"]], dtype=text))


def test_arrow_dictionary_columns_are_read_by_their_values_as_categoricals():
    # pd.read_parquet(..., dtype_backend="pyarrow") gives a categorical column as an arrow
    # dictionary: "labels must be strings or integers, got unknown-array values"
    pa = pytest.importorskip("pyarrow")
    df = small_frame()
    dictionary = pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))
    assert Annotations.from_frame(df.astype(dictionary)) == Annotations.from_frame(df)
    missing = df.astype(object)
    missing.loc[2, "label"] = None
    with pytest.raises(CrowdDataError, match=r"missing value \(NaN/None\) in column 'label' at "
                                             r"row 2 \(item 't2', annotator 'w1'\)"):
        Annotations.from_frame(missing.astype(dictionary))


def test_ids_and_classes_given_as_generators_are_read_once():
    # the uniqueness check consumed them: "label 'cat' ... is not one of the classes []"
    df = small_frame()
    ann = Annotations.from_frame(df, classes=(c for c in ["dog", "cat"]),
                                 item_ids=iter(["t3", "t2", "t1", "t0"]),
                                 annotator_ids=(a for a in ["w3", "w2", "w1"]))
    assert ann == Annotations.from_frame(df, classes=["dog", "cat"],
                                         item_ids=["t3", "t2", "t1", "t0"],
                                         annotator_ids=["w3", "w2", "w1"])


def test_to_wide_with_numeric_class_names_is_refused_not_shifted():
    """Ratings [1, 2, 3] written as names were read back by from_wide as codes: every label
    one class up, silently."""
    ann = Annotations.from_frame(pd.DataFrame({"task": ["i1", "i1", "i2"],
                                               "worker": ["u", "v", "v"], "label": [1, 2, 2]}),
                                 classes=[1, 2, 3])
    with pytest.raises(ValueError, match=r"to_wide\(class_names=True\): the classes \[1, 2, 3\] "
                                         r"are numbers"):
        ann.to_wide(class_names=True)
    back = Annotations.from_wide(ann.to_wide(), classes=ann.classes)
    assert back.to_frame().values.tolist() == ann.to_frame().values.tolist()
    text = Annotations.from_frame(pd.DataFrame({"task": [1, 2], "worker": ["u", "u"],
                                                "label": ["a", "b"]}))
    assert Annotations.from_wide(text.to_wide(class_names=True), classes=text.classes) == text


def test_padded_codes_below_the_padding_marker_are_refused():
    with pytest.raises(CrowdDataError, match=r"padded annotator id -5 at row 0, slot 1: only the "
                                             r"padding marker -1 may be negative"):
        Annotations.from_padded([[0, -5]], [[1, -7]])    # was read as padding, dropped


def test_a_missing_id_beside_another_missing_one_says_missing_not_nan():
    frame = pd.DataFrame({"task": [1, None], "worker": ["a", None], "label": [0, 1]})
    with pytest.raises(CrowdDataError, match=r"column 'task' at row 1 \(annotator missing too\)"):
        Annotations.from_frame(frame)                    # was "(annotator nan)"
    frame = pd.DataFrame({"task": [1, None], "worker": ["a", "nan"], "label": [0, 1]})
    with pytest.raises(CrowdDataError, match=r"at row 1 \(annotator 'nan'\)"):
        Annotations.from_frame(frame)                    # an annotator named "nan" is one
