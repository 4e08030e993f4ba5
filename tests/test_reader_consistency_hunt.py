"""One crowd, every reader: the same ``Annotations`` (ids, their dtypes, classes, order).

Each small crowd is written in every layout a reader of :class:`Annotations` takes (a long
frame, a dense matrix, cleanlab's wide frame, a Snorkel label matrix, padded arrays, codes,
counts) and read back; all must agree, to the dtype of the ids. Items and annotators are
listed in sorted order, the order ``from_frame`` gives them (the matrix readers keep their
rows' and columns' order: the positions are the codes). Also: one-pass iterators are
accepted wherever a list is, whole-number float ids are read as the integers they stand for,
and a crosstab of labels gives the classes its long frame gives.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.features import by_item_id
from crowd_keras.lia.inputs import by_annotator_id

ID_KINDS = ("int", "int32", "str", "whole_float")


def _ids(n: int, kind: str, start: int) -> np.ndarray:
    values = np.arange(start, start + n) * 10
    if kind == "int32":
        return values.astype(np.int32)
    if kind == "whole_float":     # a CSV column of integers with a missing value elsewhere
        return values.astype(np.float64)
    if kind == "str":
        return np.array([f"id{v:04d}" for v in values], dtype=object)
    return values


def _crowd(seed: int, id_kind: str) -> dict:
    """A random crowd: (items, annotators) label codes, -1 where absent; class 1 never used
    (the classes stay 0..max, as integer labels are read)."""
    rng = np.random.default_rng(seed)
    n_items, n_ann, k = int(rng.integers(2, 7)), int(rng.integers(2, 5)), 4
    dense = rng.choice([0, 2, 3], size=(n_items, n_ann))
    dense[rng.random(dense.shape) < 0.35] = -1
    dense[:, 0] = np.where(dense[:, 0] < 0, 3, dense[:, 0])   # every item has a label
    dense[0, :] = np.where(dense[0, :] < 0, 0, dense[0, :])   # every annotator gives one
    dense[0, 0] = 3                                           # the largest class is used
    return {"dense": dense, "k": k, "items": _ids(n_items, id_kind, 1),
            "annotators": _ids(n_ann, id_kind, 50)}


def _layouts(c: dict) -> dict:
    """The crowd in every layout, as {name: a function reading it}."""
    dense, items, anns = c["dense"], c["items"], c["annotators"]
    rows, cols = np.nonzero(dense >= 0)
    labels = dense[rows, cols]
    long = pd.DataFrame({"task": items[rows], "worker": anns[cols], "label": labels})
    framed = pd.DataFrame(dense, index=pd.Index(items), columns=pd.Index(anns))
    padded_ann = np.where(dense >= 0, np.arange(dense.shape[1]), -1)   # slot = column
    return {
        "from_frame": lambda: Annotations.from_frame(long),
        "from_frame_shuffled": lambda: Annotations.from_frame(long.iloc[::-1]),
        "from_frame_indexed": lambda: Annotations.from_frame(long.set_index("task")),
        "from_dense_frame": lambda: Annotations.from_dense(framed),
        "from_dense_array": lambda: Annotations.from_dense(dense, item_ids=items,
                                                          annotator_ids=anns),
        "from_wide": lambda: Annotations.from_wide(framed.where(framed >= 0)),
        "from_label_matrix": lambda: Annotations.from_label_matrix(framed),
        "from_padded": lambda: Annotations.from_padded(padded_ann, dense, item_ids=items,
                                                       annotator_ids=anns),
        "codes": lambda: Annotations(rows, cols, labels, item_ids=items, annotator_ids=anns),
    }


def _assert_same(got: Annotations, want: Annotations, name: str) -> None:
    assert got == want, name
    for attr in ("item_ids", "annotator_ids", "classes"):   # == does not compare dtypes
        assert getattr(got, attr).dtype == getattr(want, attr).dtype, (name, attr)


@pytest.mark.parametrize("id_kind", ID_KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_every_reader_reads_one_crowd_alike(seed, id_kind):
    c = _crowd(seed, id_kind)
    read = {name: make() for name, make in _layouts(c).items()}
    want = read.pop("from_frame")
    assert want.classes.tolist() == list(range(c["k"]))
    for name, got in read.items():
        _assert_same(got, want, name)


@pytest.mark.parametrize("id_kind", ID_KINDS)
def test_the_ids_come_back_int64_or_object(id_kind):
    # whole-number float ids were an object array of floats (1.0, 2.0) and int32 ids stayed
    # int32 in the matrix readers, int64 in from_frame: now integers are int64 in all
    c = _crowd(0, id_kind)
    want = object if id_kind == "str" else np.int64
    for name, read in _layouts(c).items():
        ann = read()
        assert ann.item_ids.dtype == want and ann.annotator_ids.dtype == want, name
        assert ann.item_ids.tolist() == c["items"].tolist()
    assert Annotations.from_frame(pd.DataFrame({"task": [1.0, 2.0], "worker": [7.0, 7.0],
                                                "label": [0, 1]})).item_ids.dtype == np.int64
    # fractions and mixed ids stay the values given, in an object array
    fractions = Annotations([0, 1], [0, 0], [0, 1], item_ids=[0.5, 2.0])
    assert fractions.item_ids.dtype == object and fractions.item_ids.tolist() == [0.5, 2.0]


def test_every_reader_takes_an_iterator_where_it_takes_a_list():
    # from_frame took a generator of classes or ids; the others raised "object of type
    # 'generator' has no len()", or read a generator of rows as a 0-d array ("got shape ()")
    c = _crowd(1, "str")
    dense, items, anns = c["dense"], list(c["items"]), list(c["annotators"])
    names = ["a", "b", "c", "d"]
    rows, cols = np.nonzero(dense >= 0)
    calls = {
        "from_dense": (lambda it: Annotations.from_dense(it(dense), -1, it(names),
                                                         item_ids=it(items),
                                                         annotator_ids=it(anns))),
        "from_wide": (lambda it: Annotations.from_wide(
            it(np.where(dense >= 0, dense, np.nan)), it(names))),
        "from_label_matrix": (lambda it: Annotations.from_label_matrix(it(dense),
                                                                       classes=it(names))),
        "from_counts": (lambda it: Annotations.from_counts(it(np.eye(4, dtype=int)),
                                                           it(names))),
        "from_padded": (lambda it: Annotations.from_padded(
            it(np.where(dense >= 0, np.arange(dense.shape[1]), -1)), it(dense),
            classes=it(names), item_ids=it(items), annotator_ids=it(anns))),
        "codes": (lambda it: Annotations(it(rows), it(cols), it(dense[rows, cols]),
                                         item_ids=it(items), annotator_ids=it(anns),
                                         classes=it(names))),
        "from_frame": (lambda it: Annotations.from_frame(
            pd.DataFrame({"task": np.asarray(items)[rows], "worker": np.asarray(anns)[cols],
                          "label": np.asarray(names)[dense[rows, cols]]}),
            classes=it(names), item_ids=it(items), annotator_ids=it(anns))),
    }
    for name, call in calls.items():
        listed = call(lambda v: [list(r) if isinstance(r, np.ndarray) else r for r in v])
        _assert_same(call(lambda v: (r for r in v)), listed, name)   # a generator
        _assert_same(call(lambda v: iter(list(v))), listed, name)   # an iterator


@pytest.mark.parametrize("labels, classes", [
    ([1, 2, 3, 3, 2], [0, 1, 2, 3]),          # ratings 1..3: class 0 unseen, as from_frame
    ([True, False, True, True, False], [0, 1]),   # booleans: the codes 0 and 1
    ([0.0, 2.0, 2.0, 1.0, 0.0], [0, 1, 2]),   # whole-number floats: the integers
    (["dog", "cat", "cat", "dog", "cat"], ["cat", "dog"]),
])
def test_a_crosstab_gives_the_classes_of_its_long_frame(labels, classes):
    # from_counts read a crosstab's columns as the classes themselves: ratings 1..3 made 3
    # classes (from_frame: 4), booleans the classes [False, True], floats [0.0, 1.0, 2.0]
    # from_counts credits an item's labels to the pseudo-annotators slot-0, slot-1, ... in
    # class order (the labels' sorted order)
    long = pd.DataFrame({"task": [1.0, 1.0, 2.0, 3.0, 3.0], "label": labels}).sort_values(
        ["task", "label"], kind="stable")
    long["worker"] = long.groupby("task").cumcount().map(lambda s: f"slot-{s}")
    got = Annotations.from_counts(pd.crosstab(long["task"], long["label"]))
    assert got.classes.tolist() == classes
    _assert_same(got, Annotations.from_frame(long), "from_counts")
    # a frame of counts in another column order is read by its columns' names
    counts = pd.crosstab(long["task"], long["label"])
    _assert_same(Annotations.from_counts(counts.iloc[:, ::-1]), got, "reordered")


def test_counts_columns_of_one_class_are_refused():
    counts = pd.DataFrame([[1, 2]], columns=pd.Index([1, 1.0], dtype=object))
    with pytest.raises(CrowdDataError, match="class ids must be unique"):
        Annotations.from_counts(counts)
    counts = pd.DataFrame([[1, 2]], columns=pd.Index([True, 1], dtype=object))
    with pytest.raises(CrowdDataError, match="^classes mix types"):   # was "classs"
        Annotations.from_counts(counts)


def test_item_and_annotator_features_follow_one_alignment_rule():
    # by_item_id and by_annotator_id share codes.rows_by_id: a frame indexed by the ids in
    # another order is put in code order, pandas' default index is read by position, an
    # index of other values by position too, and a missing or repeated id is an error
    ann = Annotations.from_frame(pd.DataFrame({"task": ["a", "b", "c"], "worker": ["x", "y", "x"],
                                               "label": [0, 1, 1]}))
    for align, ids in ((lambda f: by_item_id(f, ann), ["c", "a", "b"]),
                       (lambda f: by_annotator_id(f, ann), ["y", "x"])):
        frame = pd.DataFrame({"f": np.arange(len(ids))}, index=ids)
        assert align(frame).index.tolist() == sorted(ids)
        default = frame.reset_index(drop=True)
        assert align(default) is default
        other = frame.set_axis([f"z{i}" for i in range(len(ids))])
        assert align(other) is other
        with pytest.raises(CrowdDataError, match="indexed by (item|annotator) id but has no"):
            align(frame.iloc[1:])
        with pytest.raises(CrowdDataError, match="index repeats"):
            align(pd.concat([frame, frame.iloc[:1]]))


def test_a_crowd_without_annotations_has_the_one_class_0_in_every_reader():
    # from_dense and from_padded raised "at least one class is needed; pass classes= or
    # n_classes=" (neither takes n_classes=) where from_wide, from_label_matrix and
    # from_frame read the same empty crowd of codes with the class 0
    want = Annotations.from_label_matrix(np.full((2, 3), -1))
    assert want.classes.tolist() == [0] and want.n_annotations == 0
    read = {"from_dense": Annotations.from_dense(np.full((2, 3), -1)),
            "from_wide": Annotations.from_wide(np.full((2, 3), np.nan)),
            "from_padded": Annotations.from_padded(np.full((2, 1), -1), np.full((2, 1), -1),
                                                   n_annotators=3)}
    for name, got in read.items():
        _assert_same(got, want, name)
    frame = pd.DataFrame({"task": np.array([], dtype=np.int64),
                          "worker": np.array([], dtype=np.int64),
                          "label": np.array([], dtype=np.int64)})
    assert Annotations.from_frame(frame, item_ids=[0, 1], annotator_ids=[0, 1, 2]) == want
