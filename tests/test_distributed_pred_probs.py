"""distributed.aggregate(..., pred_probs=...): a classifier's probabilities joined to each
partition's items give the in-memory fit(annotations, pred_probs=...), on Dask's threaded
scheduler; the partitioned annotator report's expected_accuracy equals the in-memory one."""
import re

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import (BWA, EBCC, IBCC, AutoLabelModel, DawidSkene,  # noqa: E402
                                     OneCoinDawidSkene)
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.distributed import aggregate  # noqa: E402

from test_distributed import assert_same_labels, lf_matrix  # noqa: E402
from test_distributed_auto import assert_same_choice  # noqa: E402

TOL = 1e-10
CLASSES = np.array(["cat", "dog", "emu"])


pytestmark = pytest.mark.usefixtures("dask_threads")


@pytest.fixture(scope="module")
def crowd():
    """A sparse crowd (three 40-80 % annotators per item) as a shuffled long frame with
    string ids and labels, its ``Annotations``, and an 80 %-accurate classifier's
    probabilities as a frame indexed by item id (columns the class names)."""
    sim = simulate_crowd(n_items=600, n_classes=3, n_annotators=25, annotations_per_item=3,
                         annotator_accuracy=(0.4, 0.8), seed=4)
    df = sim.annotations.to_frame()
    df["task"] = "t" + df["task"].astype(str).str.zfill(4)
    df["worker"] = "w" + df["worker"].astype(str)
    df["label"] = CLASSES[df["label"]]
    df = df.sample(frac=1, random_state=0).reset_index(drop=True)
    ann = Annotations.from_frame(df)
    rng = np.random.default_rng(5)
    y = sim.y          # item codes of sim are the sorted "t0000"... ids of ann
    top = np.where(rng.random(len(y)) < 0.8, y, (y + rng.integers(1, 3, len(y))) % 3)
    p = np.full((len(y), 3), 0.1)
    p[np.arange(len(y)), top] = 0.8
    probs = pd.DataFrame(p, index=pd.Index(ann.item_ids, name="task"), columns=CLASSES)
    return df, ann, probs


def as_given(probs, form):
    """The probabilities as the caller passes them: rows and columns in another order."""
    shuffled = probs.sample(frac=1, random_state=1)[["emu", "cat", "dog"]]
    return shuffled if form == "pandas" else dd.from_pandas(shuffled, npartitions=4)


def assert_same_classifier(model, reference):
    assert model.classifier_weight_ == pytest.approx(reference.classifier_weight_, abs=TOL)
    np.testing.assert_allclose(model.classifier_marginal_, reference.classifier_marginal_,
                               atol=TOL)
    assert model.classifier_quality_ == pytest.approx(reference.classifier_quality_, abs=TOL)


@pytest.mark.parametrize("method, reference, form", [
    ("dawid_skene", DawidSkene(), "pandas"), ("dawid_skene", DawidSkene(), "dask"),
    ("ibcc", IBCC(), "pandas"), ("ibcc", IBCC(), "dask"),
    ("one_coin_dawid_skene", OneCoinDawidSkene(), "pandas"), ("ebcc", EBCC(), "dask"),
    ("bwa", BWA(), "pandas")])
def test_equals_the_in_memory_fit_with_the_classifier(crowd, method, reference, form):
    df, ann, probs = crowd
    result = aggregate(dd.from_pandas(df, npartitions=5), method=method,
                       pred_probs=as_given(probs, form))
    reference.fit(ann, pred_probs=probs)
    assert_same_labels(result, reference, ann)           # labels, posteriors, annotator report
    labels = result.labels.compute().loc[ann.item_ids]
    proba = labels[list(result.probability_columns.values())].to_numpy()
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=TOL)
    assert_same_classifier(result.model, reference)
    assert result.n_iter == reference.n_iter_
    np.testing.assert_allclose(result.model.confusion_matrices_, reference.confusion_matrices_,
                               atol=TOL)
    # the classifier moved the fit: without it the posteriors are others
    alone = type(reference)().fit(ann).predict_proba()
    assert np.abs(alone - reference.predict_proba()).max() > 0.1


@pytest.mark.parametrize("form", ["pandas", "dask"])
def test_auto_passes_the_classifier_to_its_candidates_as_in_memory(crowd, form):
    df, ann, probs = crowd
    result = aggregate(dd.from_pandas(df, npartitions=4), min_heldout=600,
                       pred_probs=as_given(probs, form))
    reference = AutoLabelModel(min_heldout=600).fit(ann, pred_probs=probs)
    assert_same_choice(result, reference)
    assert_same_labels(result, reference, ann)
    labels = result.labels.compute().loc[ann.item_ids]
    proba = labels[list(result.probability_columns.values())].to_numpy()
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=TOL)
    if reference.chosen_ != "majority_vote":      # majority vote takes no classifier
        assert_same_classifier(result.model, reference)



def test_auto_lets_the_classifier_speak_for_a_class_no_annotator_chose_as_in_memory(crowd):
    """A class no annotation names is in the target prior when the classifier ranks it first
    for some item (``named_classes_``), partitioned as in memory."""
    df, _, probs = crowd
    classes = [*CLASSES, "fox"]
    ann = Annotations.from_frame(df, classes=classes)
    p = np.c_[probs.to_numpy(), np.zeros(len(probs))]
    p[:30] = [0.02, 0.02, 0.02, 0.94]
    four = pd.DataFrame(p, index=probs.index, columns=classes)
    model = AutoLabelModel(candidates=[("ibcc", IBCC())])
    result = aggregate(dd.from_pandas(df, npartitions=3), method=model, classes=classes,
                       pred_probs=four)
    reference = AutoLabelModel(candidates=[("ibcc", IBCC())]).fit(ann, pred_probs=four)
    assert reference.named_classes_.tolist() == [True] * 4
    assert result.model.named_classes_.tolist() == [True] * 4
    assert_same_labels(result, reference, ann)

def test_gold_and_the_classifier_together(crowd):
    df, ann, probs = crowd
    codes = np.full(ann.n_items, -1)
    codes[:40] = (np.argmax(ann.label_counts()[:40], axis=1) + 1) % 3   # against the votes
    gold = pd.Series(CLASSES[codes[:40]], index=ann.item_ids[:40])
    result = aggregate(dd.from_pandas(df, npartitions=3), method="dawid_skene", gold=gold,
                       pred_probs=as_given(probs, "dask"))
    reference = DawidSkene().fit(ann, gold=codes, pred_probs=probs)
    assert_same_labels(result, reference, ann)
    assert_same_classifier(result.model, reference)
    labels = result.labels.compute().loc[ann.item_ids[:40], "label"].to_numpy()
    np.testing.assert_array_equal(labels, CLASSES[codes[:40]])


def test_expected_accuracy_is_the_in_memory_one(crowd):
    df, ann, _ = crowd
    result = aggregate(dd.from_pandas(df, npartitions=6), method="dawid_skene")
    expected = DawidSkene().fit(ann).annotator_quality_
    got = result.annotator_quality
    assert list(got.columns) == ["annotator", "n_annotations", "accuracy", "expected_accuracy"]
    np.testing.assert_allclose(got["expected_accuracy"], expected["expected_accuracy"],
                               atol=TOL)
    # not the model's accuracy under another name: the own vote is divided out
    assert np.abs(got["expected_accuracy"] - got["accuracy"]).max() > 0.01


def in_memory_error(ann, probs):
    with pytest.raises(CrowdDataError) as err:
        DawidSkene().fit(ann, pred_probs=probs)
    return str(err.value)


def broken(probs, case):
    """``probs`` with one thing wrong, and what the message must name."""
    p = probs.copy()
    if case == "missing item":
        return p.drop(index=["t0007", "t0300"]), r"no row for 2 item\(s\).*'t0007', 't0300'"
    if case == "extra item":
        extra = pd.DataFrame([[0.2, 0.3, 0.5]], index=pd.Index(["x9"], name="task"),
                             columns=CLASSES)
        return pd.concat([p, extra]), r"1 row\(s\) for items that are not in .*'x9'"
    if case == "repeated item":
        return pd.concat([p, p.iloc[[3]]]), r"repeated.*'t0003'"
    if case == "NaN row":
        p.iloc[11, 1] = np.nan
        return p, r"item 't0011'.* NaN"
    if case == "row sum":
        p.iloc[5] = [0.5, 0.5, 0.5]
        return p, r"item 't0005'.* sum to 1.5"
    if case == "unknown column":
        return p.rename(columns={"emu": "fox"}), r"'fox' are not classes.*no column for 'emu'"
    if case == "too few columns":
        return p[["cat", "dog"]], "2 columns, expected one per class"
    raise AssertionError(case)


CASES = ["missing item", "extra item", "repeated item", "NaN row", "row sum", "unknown column",
         "too few columns"]


@pytest.mark.parametrize("case", CASES)
def test_bad_probabilities_are_named_as_in_memory(crowd, case):
    df, ann, probs = crowd
    bad, match = broken(probs, case)
    ddf = dd.from_pandas(df, npartitions=3)
    message = in_memory_error(ann, bad)
    assert re.search(match, message), message
    with pytest.raises(CrowdDataError) as pandas_err:
        aggregate(ddf, method="dawid_skene", pred_probs=bad)
    # a pandas frame is checked on all items at once: the in-memory message itself
    assert str(pandas_err.value) == message
    with pytest.raises(CrowdDataError, match=match):
        aggregate(ddf, method="dawid_skene", pred_probs=dd.from_pandas(bad, npartitions=2))


def test_what_cannot_take_a_classifier_refuses_it(crowd):
    df, ann, probs = crowd
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(TypeError, match="MajorityVote does not take pred_probs"):
        aggregate(ddf, method="majority_vote", pred_probs=probs)
    with pytest.raises(TypeError, match="DataFrame indexed by item id"):
        aggregate(ddf, method="dawid_skene", pred_probs=probs.to_numpy())
    # labeling-function votes: the abstain-aware model takes no classifier, as in memory
    L = lf_matrix(n=1200)
    lf = Annotations.from_label_matrix(L, cardinality=2)
    lf_probs = pd.DataFrame(np.full((lf.n_items, 2), 0.5), index=lf.item_ids)
    with pytest.raises(ValueError, match="labeling functions.*no pred_probs") as memory:
        DawidSkene().fit(lf, pred_probs=lf_probs)
    frame = lf.to_frame()
    voted = lf_probs.loc[np.unique(frame["task"])]
    for method in ("dawid_skene", "auto"):
        with pytest.raises(ValueError, match="labeling functions.*no pred_probs") as partitioned:
            aggregate(dd.from_pandas(frame, npartitions=3), method=method, pred_probs=voted)
        if method == "dawid_skene":
            assert str(partitioned.value) == str(memory.value)
