"""Label models on Dask as a user with a big crowd meets them: the writer, the errors and the
result's record, each compared with the in-memory fit or error of the same rows (defect hunt
of the Dask path, 29 November)."""
import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import MACE, DawidSkene  # noqa: E402
from crowd_keras.distributed import aggregate  # noqa: E402
from test_distributed_user_paths import small_crowd as user_paths_crowd  # noqa: E402

pytestmark = pytest.mark.usefixtures("dask_threads")


def small_crowd(n_items=40, seed=5):
    return user_paths_crowd(n_items, seed)


@pytest.mark.parametrize("item", ["label", "p_1"])
def test_to_parquet_names_an_item_column_named_as_a_labels_column(tmp_path, item):
    # the labels' index took the item column's name: pandas said "cannot insert label,
    # already exists" from inside the writer
    df = small_crowd().rename(columns={"task": item, "label": "answer"})
    result = aggregate(dd.from_pandas(df, npartitions=3), method="majority_vote", item=item,
                       label="answer")
    with pytest.raises(CrowdDataError, match=rf"item column is named '{item}', as a column of "
                                             r"the labels .*rename_axis\('item'\)"):
        result.to_parquet(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    result.labels = result.labels.rename_axis("item")   # as the message says
    result.to_parquet(tmp_path / "out")
    pd.testing.assert_frame_equal(dd.read_parquet(tmp_path / "out" / "labels").compute(),
                                  result.labels.compute())


@pytest.mark.parametrize("prefix, gold", [("", {"0": 1, "1": 2, 99: 0}), ("t", {0: 1, 1: 2})])
def test_unknown_gold_items_are_named_as_in_memory(prefix, gold):
    # the hint was Dask's own: "(the annotations' item ids are int64: ...)" where memory names
    # the item written alike ("item 0 is: ..."), and given where no item is written alike
    df = small_crowd()
    if prefix:
        df["task"] = prefix + df["task"].astype(str)
    with pytest.raises(CrowdDataError) as memory:
        DawidSkene().fit(Annotations.from_frame(df), gold=gold)
    for npartitions in (1, 3):
        with pytest.raises(CrowdDataError) as partitioned:
            aggregate(dd.from_pandas(df, npartitions=npartitions), method="dawid_skene",
                      gold=gold)
        assert str(partitioned.value) == str(memory.value)


def probabilities(ann, seed=0):
    """A classifier's probabilities of the items: a frame indexed by item id."""
    p = np.random.default_rng(seed).dirichlet(np.ones(ann.n_classes), size=ann.n_items)
    return pd.DataFrame(p, index=pd.Index(ann.item_ids, name="task"), columns=ann.classes)


@pytest.mark.parametrize("prefix, index", [("", "written as text"), ("t", "positions")])
def test_a_dask_frame_of_probabilities_missing_items_gets_the_in_memory_hint(prefix, index):
    # the Dask frame's message had no hint: ids written as text ("0" for 0), or a frame made
    # from an array (index 0..n-1), were only "no row for 40 item(s)"
    df = small_crowd()
    if prefix:
        df["task"] = prefix + df["task"].astype(str)
    ann = Annotations.from_frame(df)
    probs = probabilities(ann)
    probs.index = probs.index.astype(str) if index == "written as text" else \
        pd.RangeIndex(ann.n_items)
    with pytest.raises(CrowdDataError) as memory:
        DawidSkene().fit(ann, pred_probs=probs)
    assert ("index has '0'" if index == "written as text" else "index is 0..39") in \
        str(memory.value)
    for npartitions in (1, 3):
        with pytest.raises(CrowdDataError) as partitioned:
            aggregate(dd.from_pandas(df, npartitions=3), method="dawid_skene",
                      pred_probs=dd.from_pandas(probs, npartitions=npartitions))
        assert str(partitioned.value) == str(memory.value)


def test_a_dask_frame_of_probabilities_with_extra_rows_names_them_as_in_memory():
    # the extra rows were named in the order the join left them (hash order: "2, 3, 5, 14,
    # 22" where memory named the frame's first, "0, 1, 2, 3, 4")
    df = small_crowd()
    ann = Annotations.from_frame(df)
    probs = probabilities(ann).sample(frac=1, random_state=3)
    kept = df[df["task"] >= 25]
    with pytest.raises(CrowdDataError) as memory:
        DawidSkene().fit(Annotations.from_frame(kept), pred_probs=probs)
    assert "25 row(s) for items that are not in the annotations: 16, 9" in str(memory.value)
    for npartitions in (1, 4):
        with pytest.raises(CrowdDataError) as partitioned:
            aggregate(dd.from_pandas(kept, npartitions=3), method="dawid_skene",
                      pred_probs=dd.from_pandas(probs, npartitions=npartitions, sort=False))
        assert str(partitioned.value) == str(memory.value)


def test_a_dask_frame_of_probabilities_with_repeated_items_names_them_as_in_memory():
    # named sorted ("3, 20, 30") where memory names them in the frame's order ("30, 3, 20")
    df = small_crowd()
    ann = Annotations.from_frame(df)
    probs = probabilities(ann)
    probs = pd.concat([probs, probs.iloc[[30, 3, 20]]])
    with pytest.raises(CrowdDataError) as memory:
        DawidSkene().fit(ann, pred_probs=probs)
    assert str(memory.value).endswith("frame's index: 30, 3, 20")
    for npartitions in (1, 4):
        with pytest.raises(CrowdDataError) as partitioned:
            aggregate(dd.from_pandas(df, npartitions=3), method="dawid_skene",
                      pred_probs=dd.from_pandas(probs, npartitions=npartitions, sort=False))
        assert str(partitioned.value) == str(memory.value)


@pytest.mark.parametrize("case", ["NaN", "sum"])
def test_a_dask_frame_of_rows_that_are_not_probabilities_is_named_as_in_memory(case):
    # every such message began "pred_probs must be numbers: " (a CrowdDataError is a
    # ValueError, caught as a value that is no number), a row summing to 1.5 included
    df = small_crowd()
    ann = Annotations.from_frame(df)
    probs = probabilities(ann)
    if case == "NaN":
        probs.iloc[11, 1] = np.nan
    else:
        probs.iloc[11] = [0.5, 0.5, 0.5]
    with pytest.raises(CrowdDataError) as memory:
        DawidSkene().fit(ann, pred_probs=probs)
    assert str(memory.value).startswith("pred_probs of item 11 (row 11) ")
    with pytest.raises(CrowdDataError) as partitioned:
        aggregate(dd.from_pandas(df, npartitions=3), method="dawid_skene",
                  pred_probs=dd.from_pandas(probs, npartitions=2))
    # each block checks its own rows: the item is named, its place among all items is not
    assert str(partitioned.value) == str(memory.value).replace(" (row 11)", "")


def test_the_result_counts_the_iterations_the_model_counts():
    # MACE runs its restarts side by side: the result said n_iter=52 (the loop's steps) where
    # its model and the in-memory fit say 50 (the winning restart's iterations)
    df = small_crowd()
    reference = MACE().fit(Annotations.from_frame(df))
    result = aggregate(dd.from_pandas(df, npartitions=3), method="mace")
    assert len(result.fit_info.history) > reference.n_iter_
    assert result.n_iter == result.model.n_iter_ == reference.n_iter_
    assert f"n_iter={reference.n_iter_})" in repr(result)
    assert aggregate(dd.from_pandas(df, npartitions=3), method="majority_vote").n_iter == 0
