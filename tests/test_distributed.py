"""crowd_keras.distributed on Dask's threaded scheduler: equal to the in-memory label models.

The same fits on a dask.distributed LocalCluster are in test_distributed_cluster.py.
"""
import os
import stat

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import AbstainAwareDawidSkene, DawidSkene, MajorityVote  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.distributed import aggregate, supported_methods  # noqa: E402

TOL = 1e-6


pytestmark = pytest.mark.usefixtures("dask_threads")


def crowd_frame(n_items=1500, seed=1):
    """A simulated crowd as a long frame with string ids and labels, rows shuffled."""
    sim = simulate_crowd(n_items=n_items, n_classes=3, n_annotators=30, annotations_per_item=4,
                         seed=seed)
    df = sim.annotations.to_frame()
    df["task"] = "t" + df["task"].astype(str).str.zfill(5)
    df["worker"] = "w" + df["worker"].astype(str)
    df["label"] = np.array(["cat", "dog", "emu"])[df["label"]]
    return df.sample(frac=1, random_state=seed).reset_index(drop=True)


def lf_matrix(n=6000, m=8, seed=0):
    """A Snorkel-style label matrix of one-class functions (conditionally independent), with
    some rows where every function abstains."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    target = np.arange(m) % 2
    coverage, precision = rng.uniform(0.05, 0.3, m), rng.uniform(0.6, 0.95, m)
    p = np.where(y[:, None] == target, np.minimum(coverage * precision / 0.5, 1.0),
                 coverage * (1 - precision) / 0.5)
    L = np.where(rng.random((n, m)) < p, target, -1)
    L[:40] = -1
    return L


def assert_same_labels(result, model, ann):
    labels = result.labels.compute()
    assert labels.index.is_unique and len(labels) == ann.n_items
    labels = labels.loc[ann.item_ids]
    proba = labels[list(result.probability_columns.values())].to_numpy()
    delta = float(np.abs(proba - model.predict_proba()).max())
    assert delta < TOL, delta
    np.testing.assert_array_equal(labels["label"].to_numpy(), ann.classes[model.predict()])
    expected = model.annotator_quality_
    got = result.annotator_quality
    assert list(got.columns) == list(expected.columns)
    np.testing.assert_array_equal(got["annotator"].to_numpy(), expected["annotator"].to_numpy())
    np.testing.assert_array_equal(got["n_annotations"], expected["n_annotations"])
    np.testing.assert_allclose(got["accuracy"], expected["accuracy"], atol=TOL)
    if "expected_accuracy" in expected.columns:   # sums over blocks, as over all annotations
        np.testing.assert_allclose(got["expected_accuracy"], expected["expected_accuracy"],
                                   atol=TOL)
    return delta


@pytest.mark.parametrize("method, reference", [
    ("dawid_skene", DawidSkene()), ("ds", DawidSkene(smoothing=0.1, max_iter=30)),
    ("majority_vote", MajorityVote()), ("mv", MajorityVote(soft=True)),
    ("majority_vote", MajorityVote(tie_break="uniform")),
    # its draws follow the item ids, so every partition draws the whole frame's
    ("majority_vote", MajorityVote(tie_break="random", random_state=3)),
    ("abstain_dawid_skene", AbstainAwareDawidSkene())])
def test_equals_the_in_memory_model_on_a_shuffled_frame(method, reference):
    df = crowd_frame()
    ann = Annotations.from_frame(df)
    params = {k: v for k, v in reference.get_params().items()
              if v != type(reference)().get_params()[k]}
    result = aggregate(dd.from_pandas(df, npartitions=9), method=method, **params)
    reference.fit(ann)
    assert_same_labels(result, reference, ann)
    np.testing.assert_array_equal(result.classes, ann.classes)
    np.testing.assert_array_equal(result.annotator_ids, ann.annotator_ids)
    np.testing.assert_allclose(result.model.confusion_matrices_, reference.confusion_matrices_,
                               atol=TOL)
    if hasattr(reference, "n_iter_"):
        assert result.model.n_iter_ == reference.n_iter_ == result.n_iter
    if hasattr(reference, "vote_prior_"):   # what new unlabelled items get
        np.testing.assert_allclose(result.model.vote_prior_, reference.vote_prior_, atol=TOL)


def test_a_label_model_instance_is_copied_and_fitted():
    df = crowd_frame(600)
    model = DawidSkene(tol=1e-7)
    result = aggregate(dd.from_pandas(df, npartitions=3), method=model)
    assert not hasattr(model, "posteriors_")           # the caller's model is left alone
    assert result.model is not model and result.model.tol == 1e-7
    ann = Annotations.from_frame(df)
    # the fitted parameters score new annotations as the in-memory model does
    np.testing.assert_allclose(result.model.predict_proba(ann),
                               DawidSkene(tol=1e-7).fit(ann).predict_proba(), atol=TOL)


def test_labeling_function_votes_switch_to_the_abstain_aware_model_as_in_memory():
    L = lf_matrix()
    ann = Annotations.from_label_matrix(L, cardinality=2)
    df = ann.to_frame()
    result = aggregate(dd.from_pandas(df.sample(frac=1, random_state=0), npartitions=7),
                       classes=[0, 1], annotator_ids=list(range(L.shape[1])))
    reference = DawidSkene().fit(ann)
    assert reference.regime_ == result.model.regime_ == "labeling_functions"
    ann_voted = Annotations.from_frame(df, classes=[0, 1])   # rows with votes only
    reference = DawidSkene().fit(ann_voted)
    assert_same_labels(result, reference, ann_voted)
    assert "coverage" in result.annotator_quality.columns


def test_integer_labels_and_an_item_indexed_frame_need_no_shuffle():
    sim = simulate_crowd(n_items=800, n_classes=4, n_annotators=20, annotations_per_item=3,
                         seed=3)
    df = sim.annotations.to_frame()
    df = df[df["label"] != 1]                             # class 1 unused: classes stay 0..3
    ann = Annotations.from_frame(df)
    ddf = dd.from_pandas(df, npartitions=5).set_index("task")
    assert ddf.known_divisions
    result = aggregate(ddf, method="dawid_skene")
    assert result.labels.known_divisions and result.labels.npartitions == ddf.npartitions
    assert list(result.probability_columns) == [0, 1, 2, 3]
    assert_same_labels(result, DawidSkene().fit(ann), ann)


def test_unsupported_methods_raise_and_name_the_supported_ones():
    ddf = dd.from_pandas(crowd_frame(100), npartitions=2)
    for method in ("lia", "no_such_model"):
        with pytest.raises(ValueError, match="supported methods") as info:
            aggregate(ddf, method=method)
        for name in ("majority_vote", "dawid_skene"):
            assert name in str(info.value)
    assert {"auto", "majority_vote", "dawid_skene"} <= set(supported_methods())
    with pytest.raises(ValueError, match="random_state"):
        aggregate(ddf, method="majority_vote", tie_break="random")
    with pytest.raises(ValueError, match="tie_break must be one of"):
        aggregate(ddf, method="majority_vote", tie_break="bogus")
    with pytest.raises(ValueError, match="init"):
        aggregate(ddf, method="dawid_skene", init=np.ones((100, 3)) / 3)


def test_bad_frames_raise_crowd_data_errors():
    df = crowd_frame(200)
    with pytest.raises(CrowdDataError, match="no column"):
        aggregate(dd.from_pandas(df, npartitions=2), item="item")
    dup = pd.concat([df, df.iloc[:1]])
    with pytest.raises(CrowdDataError, match="duplicate"):
        aggregate(dd.from_pandas(dup, npartitions=3))
    bad = df.assign(label=df["label"].where(df.index != 7, None))
    with pytest.raises(CrowdDataError, match="missing value"):
        aggregate(dd.from_pandas(bad, npartitions=3))
    num = df.assign(label=np.where(df.index == 5, 1.5, 1.0))
    with pytest.raises(CrowdDataError, match="1.5"):
        aggregate(dd.from_pandas(num, npartitions=3))


def test_categorical_columns_are_read_by_their_values_as_in_memory():
    df = crowd_frame(150).astype({"task": "category", "worker": "category", "label": "category"})
    ann = Annotations.from_frame(df)
    result = aggregate(dd.from_pandas(df, npartitions=3), method="dawid_skene")
    assert list(result.annotator_ids) == list(ann.annotator_ids)
    assert_same_labels(result, DawidSkene().fit(ann), ann)


@pytest.mark.parametrize("duplicates", ["last", "first"])
def test_duplicates_keep_the_last_or_first_row_of_the_frame_as_in_memory(duplicates):
    """The duplicate error's advice (``duplicates='last'``) is an argument of aggregate."""
    df = crowd_frame(200)
    rep = df.iloc[:40].assign(label=df["label"].iloc[:40].map({"cat": "dog", "dog": "emu",
                                                                "emu": "cat"}))
    both = pd.concat([df, rep], ignore_index=True)
    with pytest.raises(CrowdDataError, match="Pass duplicates='last'"):
        aggregate(dd.from_pandas(both, npartitions=3), method="dawid_skene")
    ann = Annotations.from_frame(both, duplicates=duplicates)
    result = aggregate(dd.from_pandas(both, npartitions=3), method="dawid_skene",
                       duplicates=duplicates)
    assert_same_labels(result, DawidSkene().fit(ann), ann)
    with pytest.raises(ValueError, match="duplicates must be one of"):
        aggregate(dd.from_pandas(both, npartitions=3), duplicates="lats")


def test_to_parquet_writes_labels_and_annotator_quality(tmp_path):
    df = crowd_frame(300)
    result = aggregate(dd.from_pandas(df, npartitions=3), min_heldout=300)   # the default: auto
    out = result.to_parquet(tmp_path / "out")
    labels = pd.read_parquet(out / "labels")
    quality = pd.read_parquet(out / "annotator_quality.parquet")
    expected = result.labels.compute()
    pd.testing.assert_frame_equal(labels.sort_index(), expected.sort_index(), check_dtype=False,
                                  check_index_type=False)
    pd.testing.assert_frame_equal(quality, result.annotator_quality, check_dtype=False)


def test_to_parquet_again_replaces_the_labels_and_a_failed_write_keeps_them(tmp_path):
    """A rewrite with fewer partitions leaves no file of the previous one (read back, the
    folder would give items twice); a failed write leaves the previous files and no
    temporary folder."""
    df = crowd_frame(300)
    out = tmp_path / "out"
    aggregate(dd.from_pandas(df, npartitions=4), method="majority_vote").to_parquet(out)
    result = aggregate(dd.from_pandas(df, npartitions=2), method="majority_vote")
    result.to_parquet(out)
    labels = pd.read_parquet(out / "labels")
    assert len(labels) == result.n_items and labels.index.is_unique
    assert sorted(p.name for p in out.iterdir()) == ["annotator_quality.parquet", "labels"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((out / "labels").stat().st_mode) == 0o777 & ~umask   # as mkdir makes it
    before = {p.name: p.read_bytes() for p in (out / "labels").iterdir()}
    with pytest.raises(Exception, match="(?i)compression"):
        result.to_parquet(out, compression="no-such-codec")
    assert {p.name: p.read_bytes() for p in (out / "labels").iterdir()} == before
    assert sorted(p.name for p in out.iterdir()) == ["annotator_quality.parquet", "labels"]
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(CrowdDataError, match="a-file is a file"):
        result.to_parquet(tmp_path / "a-file")


# ---------------------------------------------------------------------------- Snorkel adapter
def adapters(L, method, **fit_kwargs):
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    memory = CrowdLabelModel(cardinality=2, method=method).fit(L, progress_bar=False, **fit_kwargs)
    chunked = CrowdLabelModel(cardinality=2, method=method).fit(
        da.from_array(L, chunks=(1100, 3)), progress_bar=False, **fit_kwargs)
    return memory, chunked


@pytest.mark.parametrize("method", ["abstain_dawid_skene", "dawid_skene", "majority_vote"])
def test_crowd_label_model_on_a_dask_array_equals_the_in_memory_adapter(method):
    L = lf_matrix()
    memory, chunked = adapters(L, method)
    probs = chunked.predict_proba(da.from_array(L, chunks=1000))
    assert isinstance(probs, da.Array)
    delta = float(np.abs(probs.compute() - memory.predict_proba(L)).max())
    assert delta < TOL, delta
    np.testing.assert_array_equal(chunked.predict(L), memory.predict(L))
    np.testing.assert_allclose(chunked.get_weights(), memory.get_weights(), atol=TOL)
    np.testing.assert_allclose(chunked.get_conditional_probs(), memory.get_conditional_probs(),
                               atol=TOL)
    assert chunked.covote_misfit_ == pytest.approx(memory.covote_misfit_, abs=TOL) \
        if memory.covote_misfit_ is not None else chunked.covote_misfit_ is None
    assert type(chunked.label_model_) is type(memory.label_model_)


def test_crowd_label_model_on_a_dask_array_with_a_class_balance():
    L = lf_matrix(seed=4)
    memory, chunked = adapters(L, "abstain_dawid_skene", class_balance=[0.3, 0.7])
    np.testing.assert_allclose(chunked.predict_proba(L), memory.predict_proba(L), atol=TOL)
    np.testing.assert_allclose(chunked.predict_proba(L)[:40], [[0.3, 0.7]] * 40)


def test_crowd_label_model_on_a_dask_array_refuses_what_it_cannot_fit():
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L = lf_matrix(n=500)
    chunks = da.from_array(L, chunks=100)
    with pytest.raises(ValueError, match="dawid_skene"):
        CrowdLabelModel(cardinality=2, method="lia").fit(chunks, progress_bar=False)
    with pytest.raises(ValueError, match="features"):
        CrowdLabelModel(cardinality=2).fit(chunks, features=np.zeros((500, 2)))
    bad = L.copy()
    bad[321, 2] = 7
    with pytest.raises(CrowdDataError, match="starting at row 300"):
        CrowdLabelModel(cardinality=2).fit(da.from_array(bad, chunks=100), progress_bar=False)
    with pytest.raises(CrowdDataError, match="2-d"):
        CrowdLabelModel(cardinality=2).fit(da.from_array(L[:, 0], chunks=100))


def test_crowd_label_model_predict_on_a_dask_array_names_the_chunk_and_l():
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L = lf_matrix(n=500)
    model = CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)
    bad = L.copy()
    bad[321, 2] = 7
    for answer in (lambda x: model.predict_proba(x).compute(), model.predict):
        with pytest.raises(CrowdDataError, match=r"^L has .* at row 21, column 2 .*starting at "
                                                 r"row 300 of the Dask array"):
            answer(da.from_array(bad, chunks=100))
    with pytest.raises(CrowdDataError, match=r"^L has 7 labeling functions but the model was "
                                             r"fitted with 8"):
        model.predict_proba(da.from_array(L[:, :7], chunks=100))


@pytest.mark.parametrize("shape", [(500,), (500, 8, 1)])
def test_a_dask_array_that_is_not_2d_is_named_by_its_own_shape_as_in_memory(shape):
    # the check read a stand-in without rows, and the message said "got shape (0,)"
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L = lf_matrix(n=500)[:, :shape[1] if len(shape) > 1 else 1].reshape(shape)
    model = CrowdLabelModel(cardinality=2).fit(lf_matrix(n=500), progress_bar=False)
    for call, name in ((lambda x: CrowdLabelModel(cardinality=2).fit(x, progress_bar=False),
                        "L_train"), (model.predict_proba, "L")):
        with pytest.raises(CrowdDataError) as memory:
            call(L)
        with pytest.raises(CrowdDataError) as partitioned:
            call(da.from_array(L, chunks=100))
        assert str(partitioned.value) == str(memory.value)
        assert str(memory.value).startswith(f"{name} must be 2-d") and str(shape) in \
            str(memory.value)


def test_crowd_label_model_on_dask_chunks_of_unknown_length():
    """``ddf.to_dask_array()`` has chunks of unknown length: fit says how to give them (was an
    IndexError), predict names the chunk (was "row nan")."""
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L = lf_matrix(n=300)
    frame = dd.from_pandas(pd.DataFrame(L), npartitions=3)
    with pytest.raises(CrowdDataError, match=r"unknown length.*to_dask_array\(lengths=True\)"):
        CrowdLabelModel(cardinality=2).fit(frame.to_dask_array(), progress_bar=False)
    model = CrowdLabelModel(cardinality=2).fit(frame.to_dask_array(lengths=True),
                                               progress_bar=False)
    np.testing.assert_array_equal(model.predict(frame.to_dask_array()), model.predict(L))
    bad = L.copy()
    bad[250, 1] = 5
    unknown = dd.from_pandas(pd.DataFrame(bad), npartitions=3).to_dask_array()
    with pytest.raises(CrowdDataError, match=r"at row \d+, column 1 .*\(row within chunk 2 of"):
        model.predict(unknown)
