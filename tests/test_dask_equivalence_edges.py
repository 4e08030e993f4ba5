"""Label models on Dask at the edges of the input: partitionings, readers, dtypes and outputs
that a data pipeline produces, each fit compared with the in-memory fit of the same rows."""
import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import DawidSkene  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.distributed import aggregate  # noqa: E402

TOL = 1e-6


pytestmark = pytest.mark.usefixtures("dask_threads")


def small_crowd(n_items=80, seed=0):
    sim = simulate_crowd(n_items=n_items, n_classes=3, n_annotators=12, annotations_per_item=3,
                         seed=seed)
    return sim.annotations.to_frame()


def assert_in_memory(result, model, ann):
    labels = result.labels.compute()
    assert labels.index.is_unique and len(labels) == ann.n_items
    labels = labels.loc[ann.item_ids]
    proba = labels[list(result.probability_columns.values())].to_numpy()
    np.testing.assert_allclose(proba, model.predict_proba(), atol=TOL)
    np.testing.assert_array_equal(labels["label"].to_numpy(), ann.classes[model.predict()])
    np.testing.assert_allclose(result.annotator_quality["accuracy"],
                               model.annotator_quality_["accuracy"], atol=TOL)


def test_parquet_files_sharing_an_item_are_fitted_as_one_frame(tmp_path):
    # divisions from the files' statistics overlap at the item whose rows both files hold:
    # Dask calls them known, but that item must still be one item
    df = small_crowd().sort_values("task", kind="stable").reset_index(drop=True)
    cut = int(np.flatnonzero(df["task"].to_numpy() == 40)[1])
    (tmp_path / "answers").mkdir()
    df.iloc[:cut].set_index("task").to_parquet(tmp_path / "answers" / "part.0.parquet")
    df.iloc[cut:].set_index("task").to_parquet(tmp_path / "answers" / "part.1.parquet")
    ddf = dd.read_parquet(tmp_path / "answers", index="task", calculate_divisions=True)
    assert ddf.known_divisions
    ann = Annotations.from_frame(df)
    assert_in_memory(aggregate(ddf, method="dawid_skene"), DawidSkene().fit(ann), ann)
    with pytest.raises(CrowdDataError, match="item 40 lie in partitions"):
        aggregate(ddf, method="dawid_skene", item_partitioned=True)


@pytest.mark.parametrize("prefix", ["", "t"])
def test_the_duplicates_error_is_the_in_memory_one_whatever_the_partitions(prefix):
    # every partition's pairs counted, the first pair that of the smallest item, as in memory
    df = small_crowd().sample(frac=1, random_state=0).reset_index(drop=True)
    if prefix:
        df["task"] = prefix + df["task"].astype(str)
    repeated = df.iloc[[5, 100, 200]].assign(label=lambda d: (d["label"] + 1) % 3)
    df = pd.concat([df, repeated], ignore_index=True)
    with pytest.raises(CrowdDataError, match=r"^3 duplicate \(item, annotator\)") as memory:
        Annotations.from_frame(df)
    for npartitions in (1, 9):   # 9: the shuffle puts the pairs' items in different partitions
        with pytest.raises(CrowdDataError) as dask_error:
            aggregate(dd.from_pandas(df, npartitions=npartitions), method="majority_vote")
        assert str(dask_error.value) == str(memory.value)


@pytest.mark.parametrize("prefix", ["", "t"])
def test_a_categorical_item_column_read_from_parquet_keeps_its_item_ids(tmp_path, prefix):
    # parquet gives Dask categoricals with categories it does not know yet
    df = small_crowd().sample(frac=1, random_state=0).reset_index(drop=True)
    if prefix:
        df["task"] = prefix + df["task"].astype(str)
    df["task"] = df["task"].astype("category")
    dd.from_pandas(df, npartitions=3).to_parquet(tmp_path / "answers")
    ddf = dd.read_parquet(tmp_path / "answers")
    assert not ddf["task"].cat.known
    ann = Annotations.from_frame(df)
    result = aggregate(ddf, method="dawid_skene")
    assert_in_memory(result, DawidSkene().fit(ann), ann)
    assert sorted(result.labels.compute().index.tolist()) == sorted(ann.item_ids.tolist())
    result.to_parquet(tmp_path / "out")
    back = dd.read_parquet(tmp_path / "out" / "labels").compute()
    assert sorted(back.index.tolist()) == sorted(ann.item_ids.tolist())


def test_an_item_in_two_partitions_is_seen_whatever_order_its_categories_have():
    # the partitions' item ranges are compared by value: an ordered categorical whose
    # categories run against the values must not hide item "b" in both partitions
    from crowd_keras.distributed.reading import disjoint, scan_partition

    kind = pd.CategoricalDtype(["b", "a"], ordered=True)
    parts = [pd.DataFrame({"task": pd.Categorical(items, dtype=kind),
                           "worker": range(len(items)), "label": 0})
             for items in (["b", "a"], ["b"])]
    scans = [scan_partition(p, "task", "worker", "label", None, None) for p in parts]
    assert not disjoint([s.span for s in scans], [len(p) for p in parts])
    scans = [scan_partition(p.assign(task=p["task"].astype(str)), "task", "worker", "label",
                            None, None) for p in parts[:1] + [parts[1].assign(task="c")]]
    assert disjoint([s.span for s in scans], [2, 1])


def test_auto_draws_the_in_memory_folds_for_a_categorical_item_column_read_from_parquet(
        tmp_path):
    # Dask's shuffle turns a categorical of unknown categories into its integer values; in
    # memory the ids are those integers as objects: both must draw the same held-out folds
    from crowd_keras.aggregation import AutoLabelModel

    df = small_crowd(150).sample(frac=1, random_state=0).reset_index(drop=True)
    df["task"] = df["task"].astype("category")
    dd.from_pandas(df, npartitions=3).to_parquet(tmp_path / "answers")
    ann = Annotations.from_frame(df)
    memory = AutoLabelModel(min_heldout=50).fit(ann)
    result = aggregate(dd.read_parquet(tmp_path / "answers"), min_heldout=50)
    assert result.model.chosen_ == memory.chosen_
    assert list(result.model.heldout_agreement_) == list(memory.heldout_agreement_)
    np.testing.assert_allclose(list(result.model.heldout_agreement_.values()),
                               list(memory.heldout_agreement_.values()), rtol=1e-12)
    assert_in_memory(result, memory, ann)


def test_object_columns_of_numbers_are_read_as_in_memory_after_a_repartition():
    # Dask makes text of object columns; a repartition or a column selection of the pandas
    # frame must not turn integer labels into the classes "0", "1", "2"
    df = small_crowd().sample(frac=1, random_state=0).reset_index(drop=True)
    df = df.astype({"task": object, "label": object})
    ann = Annotations.from_frame(df)
    base = dd.from_pandas(df, npartitions=2)
    for ddf in (base.repartition(npartitions=5), base[["task", "worker", "label"]]):
        result = aggregate(ddf, method="dawid_skene", gold={3: 1})
        assert result.classes.tolist() == [0, 1, 2]
        assert_in_memory(result, DawidSkene().fit(ann, gold={3: 1}), ann)
    df.loc[7, "label"] = "x"
    with pytest.raises(CrowdDataError, match="labels mix types"):
        aggregate(dd.from_pandas(df, npartitions=2).repartition(npartitions=3))


@pytest.mark.slow
def test_the_edges_on_a_local_cluster(tmp_path):
    # the same frames on two workers of a dask.distributed cluster (threads: light)
    distributed = pytest.importorskip("distributed")
    df = small_crowd().sample(frac=1, random_state=0).reset_index(drop=True)
    by_item = df.sort_values("task", kind="stable").reset_index(drop=True)
    cut = int(np.flatnonzero(by_item["task"].to_numpy() == 40)[1])
    (tmp_path / "shared").mkdir()
    by_item.iloc[:cut].set_index("task").to_parquet(tmp_path / "shared" / "part.0.parquet")
    by_item.iloc[cut:].set_index("task").to_parquet(tmp_path / "shared" / "part.1.parquet")
    categorical = df.astype({"task": "category"})
    dd.from_pandas(categorical, npartitions=3).to_parquet(tmp_path / "categorical")
    ann = Annotations.from_frame(df)
    memory = DawidSkene().fit(ann)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        for ddf in (dd.read_parquet(tmp_path / "shared", index="task", calculate_divisions=True),
                    dd.read_parquet(tmp_path / "categorical"),
                    dd.from_pandas(df.astype({"label": object}), npartitions=2)
                    .repartition(npartitions=5)):
            assert_in_memory(aggregate(ddf, method="dawid_skene"), memory, ann)


def test_to_parquet_refuses_write_index_naming_why(tmp_path):
    # Dask's own message was a generic "got multiple values for keyword argument"
    result = aggregate(dd.from_pandas(small_crowd(), npartitions=2), method="majority_vote")
    with pytest.raises(TypeError, match=r"to_parquet: write_index cannot be given: the labels "
                                        r"are written with the item id as their index"):
        result.to_parquet(tmp_path / "out", write_index=False)
    assert not (tmp_path / "out").exists()                     # refused before any write
    result.to_parquet(tmp_path / "out", compression="gzip")   # other Dask options still pass
    assert len(dd.read_parquet(tmp_path / "out" / "labels").compute()) == 80
