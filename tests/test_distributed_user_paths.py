"""Label models on Dask along a user's paths: frames sliced with ``.loc``, results written
and read back, new annotations scored, gold held where the frame is; each compared with the
in-memory fit or error of the same rows (defect hunt of 29 November)."""
import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.distributed import aggregate  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402

pytestmark = pytest.mark.usefixtures("dask_threads")


def small_crowd(n_items=60, seed=2):
    sim = simulate_crowd(n_items=n_items, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=seed)
    return sim.annotations.to_frame()


def test_an_error_in_a_loc_slice_names_the_frame_row_as_in_memory():
    # Dask's `ddf.partitions[p]` of a `.loc` slice is not the slice's partition p: the
    # recheck that words the error read another partition and the message was the
    # placeholder "partition 1 (from frame row 45) failed the in-memory checks"
    df = small_crowd().astype({"label": float})
    df.loc[100, "label"] = np.nan
    ddf = dd.from_pandas(df, npartitions=4).loc[45:]
    memory = ddf.compute().reset_index(drop=True)
    with pytest.raises(CrowdDataError) as expected:
        Annotations.from_frame(memory)
    assert "missing value (NaN/None) in column 'label' at row 55" in str(expected.value)
    with pytest.raises(CrowdDataError) as got:
        aggregate(ddf, method="majority_vote")
    assert str(got.value) == str(expected.value)


def test_to_parquet_refuses_compute_false_before_it_empties_the_labels(tmp_path):
    # compute=False staged no file and put the empty staging folder in place of path/labels:
    # a rewrite left no labels, silently
    result = aggregate(dd.from_pandas(small_crowd(), npartitions=2), method="dawid_skene")
    result.to_parquet(tmp_path / "out")
    with pytest.raises(TypeError, match=r"to_parquet: compute=False cannot be given"):
        result.to_parquet(tmp_path / "out", compute=False)
    labels = dd.read_parquet(tmp_path / "out" / "labels").compute()
    pd.testing.assert_frame_equal(labels, result.labels.compute())   # the first write is kept
    result.to_parquet(tmp_path / "again", compute=True)
    assert len(dd.read_parquet(tmp_path / "again" / "labels").compute()) == 60


@pytest.mark.parametrize("name", ["dawid_skene", "auto", "mixture_of_groups"])
def test_a_dask_frame_given_to_an_in_memory_model_is_refused_pointing_to_aggregate(name):
    # np.asarray computed the Dask frame and read it as a dense matrix: fit() took the long
    # frame's columns as three annotators, silently, and predict_proba(ddf) misread them
    from crowd_keras.aggregation.registry import get_label_model

    df = small_crowd()
    ddf = dd.from_pandas(df, npartitions=2)
    refusal = r"annotations given as a Dask DataFrame: fit them partition by partition with " \
        r"crowd_keras.distributed.aggregate\(ddf, method=...\); to read them here .* pass " \
        r"ddf.compute\(\)"
    with pytest.raises(TypeError, match=refusal):
        get_label_model(name).fit(ddf)
    model = get_label_model(name).fit(df)
    for score in (model.predict_proba, model.predict, model.consensus_quality,
                  model.label_issues):
        with pytest.raises(TypeError, match=refusal):
            score(ddf)
    fitted = aggregate(ddf, method=name).model       # the partitioned fit scores new items
    with pytest.raises(TypeError, match=refusal):
        fitted.predict_proba(ddf)
    np.testing.assert_allclose(fitted.predict_proba(ddf.compute()), model.predict_proba(df),
                               atol=1e-6)
    with pytest.raises(CrowdDataError, match=r"expected a pandas DataFrame, got a Dask "
                                             r"DataFrame: fit it partition by partition"):
        Annotations.from_frame(ddf)


def test_gold_as_a_dask_series_says_to_compute_it():
    # it was "got Series" on Dask (a pandas Series is what it asks for) and, in memory, computed
    # and refused as "an array of shape (4,) and dtype object"
    from crowd_keras.aggregation import DawidSkene

    df = small_crowd()
    gold = dd.from_pandas(pd.Series({0: 1, 1: 0, 2: 2, 3: 1}), npartitions=2)
    refusal = r"gold must be a mapping item -> label \(a dict or a pandas Series\); got a " \
        r"Dask Series: pass gold.compute\(\)"
    with pytest.raises(CrowdDataError, match=refusal):
        aggregate(dd.from_pandas(df, npartitions=2), method="ibcc", gold=gold)
    with pytest.raises(CrowdDataError, match=refusal):
        DawidSkene().fit(Annotations.from_frame(df), gold=gold)
    result = aggregate(dd.from_pandas(df, npartitions=2), method="ibcc", gold=gold.compute())
    assert result.labels.compute().loc[[0, 1, 2, 3], "label"].tolist() == [1, 0, 2, 1]


@pytest.mark.parametrize("name", ["dawid_skene", "majority_vote", "auto", "glad", "bwa",
                                  "abstain_dawid_skene"])
def test_the_fitted_model_reports_its_annotators_and_refuses_to_predict_items_it_lacks(name):
    # result.model holds no annotations: its annotator_quality_ read every annotator as
    # without annotations (n_annotations 0, accuracy NaN), and predict() / the quality scores
    # returned empty arrays, silently
    from crowd_keras.aggregation.registry import get_label_model

    df = small_crowd()
    result = aggregate(dd.from_pandas(df, npartitions=3), method=name)
    memory = get_label_model(name).fit(Annotations.from_frame(df))
    pd.testing.assert_frame_equal(result.model.annotator_quality_, result.annotator_quality)
    expected = memory.annotator_quality_
    np.testing.assert_array_equal(result.model.annotator_quality_["n_annotations"],
                                  expected["n_annotations"])
    np.testing.assert_allclose(result.model.annotator_quality_["accuracy"],
                               expected["accuracy"], atol=1e-6)
    if "expected_accuracy" in expected.columns:   # each vote's own factor divided out alike
        np.testing.assert_allclose(result.annotator_quality["expected_accuracy"],
                                   expected["expected_accuracy"], atol=1e-6)
    held = r"fitted partition by partition \(crowd_keras.distributed.aggregate\): its items' " \
        r"labels and posteriors are the result's labels"
    for ask in (lambda m: m.predict(), lambda m: m.predict_proba(), lambda m: m.predict_labels(),
                lambda m: m.consensus_quality(), lambda m: m.label_issues(),
                lambda m: m.annotation_quality(), lambda m: m.next_to_label(3),
                lambda m: m.tied_items_):
        with pytest.raises(ValueError, match=held):
            ask(result.model)
    # new annotations are scored as in memory, with their quality scores
    np.testing.assert_allclose(result.model.predict_proba(df), memory.predict_proba(df),
                               atol=1e-6)
    np.testing.assert_allclose(result.model.consensus_quality(df), memory.consensus_quality(df),
                               atol=1e-6)
    # a refit in memory answers for its own items again
    refit = result.model.fit(Annotations.from_frame(df))
    np.testing.assert_array_equal(refit.predict(), memory.predict())
    pd.testing.assert_frame_equal(refit.annotator_quality_, expected)


def test_labels_of_a_csv_read_without_a_header_are_written_to_parquet(tmp_path):
    # columns 0, 1, 2: the labels' index is named 0, which parquet cannot name ("name '0'
    # present in the specified schema is not found"); the file names it "0"
    df = small_crowd()
    df.to_csv(tmp_path / "answers.csv", header=False, index=False)
    ddf = dd.read_csv(tmp_path / "answers.csv", header=None, blocksize=400)
    result = aggregate(ddf, item=0, annotator=1, label=2, method="ibcc")
    result.to_parquet(tmp_path / "out")
    back = dd.read_parquet(tmp_path / "out" / "labels").compute()
    assert back.index.name == "0"
    pd.testing.assert_frame_equal(back.rename_axis(0), result.labels.compute())
    assert result.labels.compute().index.name == 0     # the result keeps the column's name


def test_write_shards_checks_its_counts_annotations_and_features(tmp_path):
    # n_shards=2.5 wrote 2 files and True one, row_group_size=2.5 was truncated, a long frame
    # failed on 'n_items', NaN features were written (and trained to NaN losses), silently
    from crowd_keras.distributed import read_shards, write_shards

    sim = simulate_crowd(n_items=40, n_classes=3, n_annotators=6, seed=0)
    ann = sim.annotations
    for setting, value in (("n_shards", 2.5), ("n_shards", True), ("n_shards", "2"),
                           ("row_group_size", 2.5), ("max_annotations", 3.5)):
        with pytest.raises(TypeError, match=rf"{setting} must be an integer >= 1"):
            write_shards(ann, sim.x, tmp_path / "a", **{setting: value})
    with pytest.raises(TypeError, match=r"write_shards takes Annotations, got DataFrame \(a "
                                        r"long frame: Annotations.from_frame\(df\)\)"):
        write_shards(ann.to_frame(), sim.x, tmp_path / "a")
    x = sim.x.copy()
    x[7, 1] = np.nan
    with pytest.raises(CrowdDataError, match=r"x has a NaN or infinite feature at row 7 "
                                             r"\(item 7\)"):
        write_shards(ann, x, tmp_path / "a")
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    meta = write_shards(ann, sim.x, tmp_path / "a", n_shards=np.int64(4), max_annotations=5)
    assert read_shards(tmp_path / "a")["rows"] == meta["rows"] == [10, 10, 10, 10]
    assert meta["max_annotations"] == 5


@pytest.mark.parametrize("target", [[0.5, 0.5], {"x": 1.0}])
def test_auto_refuses_a_wrong_target_prior_before_its_held_out_fits(monkeypatch, target):
    # in memory the target is checked before any fit; on Dask it was refused after every
    # held-out fit of every candidate (16 partitioned fits here; hours on a large crowd)
    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.distributed.engine import PartitionedAnnotations

    df = small_crowd()
    with pytest.raises(ValueError) as expected:
        AutoLabelModel(target_prior=target).fit(Annotations.from_frame(df))

    def no_fold(self, *args):   # each held-out fit runs on a fold's derived blocks
        raise AssertionError("a held-out fit ran before the target prior was checked")

    monkeypatch.setattr(PartitionedAnnotations, "derive", no_fold)
    with pytest.raises(ValueError) as got:
        aggregate(dd.from_pandas(df, npartitions=2), method="auto", target_prior=target)
    assert str(got.value) == str(expected.value)


def test_to_parquet_writes_where_the_path_says(tmp_path, monkeypatch):
    # "~/out": Dask wrote the parts under the home folder's ~/out/.labels.*.tmp and an empty
    # ./~/out/labels was put in place (no labels, silently); "file://..." likewise; another
    # URL made a local folder named "memory:" or "s3:"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = aggregate(dd.from_pandas(small_crowd(), npartitions=2), method="majority_vote")
    expected = result.labels.compute()
    for given, written in (("~/out", tmp_path / "home" / "out"),
                           (f"file://{tmp_path}/by_url", tmp_path / "by_url")):
        assert result.to_parquet(given) == written
        pd.testing.assert_frame_equal(dd.read_parquet(written / "labels").compute(), expected)
        assert (written / "annotator_quality.parquet").is_file()
    assert not (tmp_path / "~").exists() and not (tmp_path / "file:").exists()
    for url in ("memory://out", "s3://bucket/out"):
        with pytest.raises(CrowdDataError, match=r"to_parquet writes to a folder of this "
                                                 r"machine .* got the URL '[a-z0-9]+://"):
            result.to_parquet(url)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["by_url", "home"]


def test_to_parquet_names_an_unknown_keyword_and_keeps_the_labels(tmp_path):
    # a typo reached pyarrow: "__cinit__() got an unexpected keyword argument 'compresion'"
    # and the staged folder was left when a partition's writer, still running in another
    # thread, added a file while it was removed (a third of the tries): tried 20 times
    result = aggregate(dd.from_pandas(small_crowd(), npartitions=4), method="majority_vote")
    result.to_parquet(tmp_path)
    for _ in range(20):
        with pytest.raises(TypeError, match=r"to_parquet: .*unexpected keyword argument "
                                            r"'compresion'; its keyword arguments go to "
                                            r"dask.dataframe.to_parquet"):
            result.to_parquet(tmp_path, compresion="snappy")
    pd.testing.assert_frame_equal(dd.read_parquet(tmp_path / "labels").compute(),
                                  result.labels.compute())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_parquet_frame_of_arrow_dictionaries_is_read_as_in_memory():
    # read_parquet(dtype_backend="pyarrow") gives categorical columns as arrow dictionaries:
    # both readers refused them ("got unknown-array values")
    pa = pytest.importorskip("pyarrow")
    df = small_crowd().astype({"task": str, "worker": str})
    dictionary = pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))
    arrow = df.astype({"task": dictionary, "worker": dictionary})
    result = aggregate(dd.from_pandas(arrow, npartitions=3), method="majority_vote")
    model = aggregate(dd.from_pandas(df, npartitions=3), method="majority_vote")
    got, want = result.labels.compute(), model.labels.compute()
    got.index = pd.Index(np.asarray(got.index, dtype=object), name=got.index.name)
    assert got.sort_index().to_dict() == want.sort_index().to_dict()   # pandas cannot sort
    assert Annotations.from_frame(arrow) == Annotations.from_frame(df)   # the arrow index


def test_a_missing_column_is_named_as_in_memory():
    # item=None matched the frame's unnamed index: the message listed a column 'index'
    df = small_crowd()
    for roles in ({"item": None}, {"label": None}, {"item": "Task"}):
        with pytest.raises(CrowdDataError) as expected:
            Annotations.from_frame(df, **roles)
        with pytest.raises(CrowdDataError) as got:
            aggregate(dd.from_pandas(df, npartitions=2), **roles)
        assert str(got.value) == str(expected.value)
    # a frame indexed by item (which both read) without its annotator column: the index
    # level is named alike (the Dask message listed it among the columns)
    indexed = df.set_index("task").drop(columns="worker")
    with pytest.raises(CrowdDataError, match=r"index level\(s\) are \['task'\]") as expected:
        Annotations.from_frame(indexed)
    with pytest.raises(CrowdDataError) as got:
        aggregate(dd.from_pandas(indexed, npartitions=2))
    assert str(got.value) == str(expected.value)


def test_every_registered_model_on_awkward_partitions_is_the_in_memory_fit():
    # the promise, guarded for every registered model at once (LIA, a network, is refused
    # by name: test_distributed.py): text ids, rows shuffled so that items lie across
    # partitions, an empty partition
    from crowd_keras.aggregation.registry import LABEL_MODELS, get_label_model

    df = small_crowd(n_items=50, seed=4)
    df = df.assign(task="t" + df["task"].astype(str), worker="w" + df["worker"].astype(str))
    df = df.sample(frac=1, random_state=0).reset_index(drop=True)
    ann = Annotations.from_frame(df)
    ddf = dd.from_pandas(df, npartitions=2).repartition(npartitions=4)

    def emptied(part, partition_info=None):   # partition 2 left empty
        return part.iloc[:0] if partition_info["number"] == 2 else part

    ddf = ddf.map_partitions(emptied, meta=ddf._meta)
    kept = ddf.compute().reset_index(drop=True)
    assert 0 in [len(part) for part in dask.compute(*ddf.to_delayed())]
    ann = Annotations.from_frame(kept)
    for name in LABEL_MODELS.names():
        if name == "lia":
            continue
        memory = get_label_model(name).fit(ann)
        with dask.config.set(scheduler="synchronous"):   # small blocks: no thread hand-offs
            result = aggregate(ddf, method=name)
            labels = result.labels.compute().loc[ann.item_ids]
        np.testing.assert_array_equal(labels["label"].to_numpy(),
                                      ann.classes[memory.predict()], err_msg=name)
        np.testing.assert_allclose(labels[list(result.probability_columns.values())],
                                   memory.predict_proba(), atol=1e-6, err_msg=name)


def test_a_misspelled_reader_argument_names_aggregates_own_arguments():
    # items= was blamed on AutoLabelModel.__init__ alone
    frame = simulate_crowd(n_items=30, n_classes=3, n_annotators=5, seed=0).annotations.to_frame()
    with pytest.raises(TypeError, match=r"aggregate: .*unexpected keyword argument 'items'; "
                                        r"aggregate reads the frame with item, annotator"):
        aggregate(dd.from_pandas(frame, npartitions=2), items="task")


def test_a_strategy_without_a_label_model_says_which_is_missing(monkeypatch):
    # the name was refused as unsupported while the list of supported methods held it
    import copy

    from crowd_keras.distributed import methods
    monkeypatch.setattr(methods, "METHODS", copy.deepcopy(methods.METHODS))  # left as it was
    methods.register_method("my_model", "crowd_keras.distributed.methods:ProtocolMethod")
    assert "my_model" in methods.supported_methods()
    frame = simulate_crowd(n_items=30, n_classes=3, n_annotators=5, seed=0).annotations.to_frame()
    with pytest.raises(ValueError, match="registered as 'my_model', but no label model is: "
                                         "register it with"):
        aggregate(dd.from_pandas(frame, npartitions=2), "my_model")
