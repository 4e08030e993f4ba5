"""What users of crowd-kit (``crowdkit.aggregation``) meet: the same long frame (task, worker,
label) in, crowd-kit's arguments refused with where their job is done, and the same
posteriors where the model, the start and the iterations are crowd-kit's."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import DawidSkene, MajorityVote, OneCoinDawidSkene
from crowd_keras.datasets import simulate_crowd

ck = pytest.importorskip("crowdkit.aggregation")
# crowd-kit 1.4 on pandas 3 warns of its own deprecated calls
pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")

FRAME = pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t3"],
                      "worker": ["w1", "w2", "w3", "w1", "w2", "w3"],
                      "label": ["cat", "dog", "cat", "dog", "dog", "cat"]})


@pytest.mark.parametrize("model", [DawidSkene, MajorityVote])
@pytest.mark.parametrize("layout", ["frame", "annotations", "matrix"])
def test_crowd_kit_fit_arguments_say_where_their_job_is_done(model, layout):
    # fit(df, true_labels=...) said "AnnotationReaders.from_frame() got an unexpected keyword
    # argument 'true_labels'", a reader the user never called, and nothing of gold=
    gold = pd.Series({"t1": "cat"})
    ck.DawidSkene(n_iter=5).fit(FRAME, true_labels=gold)          # crowd-kit takes it
    data = {"frame": FRAME, "annotations": Annotations.from_frame(FRAME),
            "matrix": Annotations.from_frame(FRAME).to_dense()}[layout]
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['true_labels'\]"
                                        r".*\(crowd-kit's true_labels is gold= here"):
        model().fit(data, true_labels=gold)
    with pytest.raises(TypeError, match=r"crowd-kit's skills has no counterpart"):
        model().fit_predict(data, skills=pd.Series({"w1": 0.9}))
    if layout != "annotations":
        reader = "from_frame" if layout == "frame" else "from_dense"
        with pytest.raises(TypeError, match=rf"^unexpected keyword argument\(s\) \['colour'\] "
                                            rf"\(.*Annotations\.{reader} takes .*\)$"):
            model().fit(data, colour="red")
    gold_fit = model().fit(FRAME, gold={"t1": "cat"})               # what it points to
    assert gold_fit.predict_labels()[0] == "cat"


def test_the_readers_own_arguments_still_pass_through_fit():
    renamed = FRAME.rename(columns={"worker": "annotator"})       # cleanlab's long layout
    labels = MajorityVote().fit(renamed, annotator="annotator").predict_labels()
    np.testing.assert_array_equal(labels, MajorityVote().fit(FRAME).predict_labels())
    twice = pd.concat([FRAME, FRAME.iloc[[0]]], ignore_index=True)
    assert MajorityVote().fit(twice, duplicates="last").annotations_.n_duplicates == 1


@pytest.mark.parametrize("ours, theirs", [(DawidSkene, "DawidSkene"),
                                          (OneCoinDawidSkene, "OneCoinDawidSkene")])
def test_crowd_kits_model_with_its_start_and_iterations_gives_its_posteriors(ours, theirs):
    # smoothing=0 is crowd-kit's M-step; both start from the soft majority vote
    sim = simulate_crowd(n_items=150, n_classes=3, n_annotators=8, annotations_per_item=4,
                         seed=1)
    frame = sim.annotations.to_frame()
    for n_iter in (1, 5):
        kit = getattr(ck, theirs)(n_iter=n_iter, tol=0).fit(frame)
        model = ours(max_iter=n_iter, tol=-1, smoothing=0,
                     labeling_functions="ignore").fit(frame)
        probas = kit.probas_.reindex(index=sim.annotations.item_ids,
                                     columns=sim.annotations.classes).to_numpy()
        np.testing.assert_allclose(model.predict_proba(), probas, atol=1e-9)


def test_labels_of_another_type_than_the_fitted_classes_say_so():
    # a frame from a CSV ("1") scored under a model fitted on ints (1), or the reverse: the
    # message listed the classes, and "'1' is not one of [0, 1]" read as a missing class
    model = MajorityVote().fit(FRAME.assign(label=[0, 1, 0, 1, 1, 0]))
    new = FRAME.assign(label=["0", "1", "0", "1", "1", "0"])
    with pytest.raises(ValueError, match=r"label '0' at row 0 .* is not one of the classes "
                                         r"\[0, 1\] \(class 0 is written alike: give the labels "
                                         r"in the classes' type, e.g. frame\['label'\]"
                                         r"\.astype\(int\)\)$"):
        model.predict(new)
    with pytest.raises(ValueError, match=r"\(class '1' is written alike: .*astype\(str\)\)$"):
        Annotations.from_frame(FRAME.assign(label=[1, 1, 1, 1, 1, 1]), classes=["0", "1"])
    with pytest.raises(ValueError, match=r"is not one of the classes \['cat', 'dog'\]$"):
        MajorityVote().fit(FRAME).predict(FRAME.assign(label="emu"))     # no likeness
    np.testing.assert_array_equal(model.predict(new.assign(label=new["label"].astype(int))),
                                  model.predict())


def test_a_row_without_a_label_says_how_to_leave_it_out():
    # crowd-kit's aggregators skip it; here it is an error, which said what but not how
    gaps = FRAME.assign(label=["cat", None, "cat", "dog", np.nan, "cat"])
    assert ck.MajorityVote().fit_predict(gaps).to_dict() == {"t1": "cat", "t2": "dog",
                                                             "t3": "cat"}
    with pytest.raises(ValueError, match=r"column 'label' at row 1 \(item 't1', annotator "
                                         r"'w2'\): .* \(a row without a label is no annotation: "
                                         r"leave those rows out\)$"):
        MajorityVote().fit(gaps)
    labels = MajorityVote().fit(gaps.dropna(subset=["label"])).predict_labels()
    assert labels.tolist() == ["cat", "dog", "cat"]


def test_cleanlabs_long_layout_is_told_which_keyword_reads_it():
    # cleanlab's convert_long_to_wide_dataset takes task, annotator, label: the message named
    # the absent 'worker' column only
    multiannotator = pytest.importorskip("cleanlab.multiannotator")
    renamed = FRAME.rename(columns={"worker": "annotator"}).assign(
        label=[0, 1, 0, 1, 1, 0])
    multiannotator.convert_long_to_wide_dataset(renamed)            # cleanlab reads it
    with pytest.raises(ValueError, match=r"no column\(s\) \['worker'\]; columns are \['task', "
                                         r"'annotator', 'label'\] \(a column is named by its role: "
                                         r"read it with annotator='annotator', e\.g\. "
                                         r"Annotations\.from_frame\(frame, "
                                         r"annotator='annotator'\)\)$"):
        DawidSkene().fit(renamed)
    with pytest.raises(ValueError, match=r"\['task', 'worker'\]; .* read it with item='item', "
                                         r"annotator='annotator', e\.g\."):
        Annotations.from_frame(renamed.rename(columns={"task": "item"}))
    with pytest.raises(ValueError, match=r"columns are \['task', 'who', 'label'\]$"):
        Annotations.from_frame(FRAME.rename(columns={"worker": "who"}))
    model = DawidSkene().fit(renamed, annotator="annotator")
    assert model.annotations_.n_annotators == 3
    with pytest.raises(ValueError, match=r"Annotations\.from_frame\(frame, annotator="):
        model.predict_proba(renamed)                     # no keywords here: the reader's
    read = Annotations.from_frame(renamed, annotator="annotator")
    np.testing.assert_allclose(model.predict_proba(read), model.predict_proba())


def test_soft_majority_vote_is_crowd_kits_vote_shares():
    sim = simulate_crowd(n_items=100, n_classes=3, n_annotators=8, annotations_per_item=4,
                         seed=1)
    frame = sim.annotations.to_frame()
    shares = ck.MajorityVote().fit(frame).probas_.reindex(
        index=sim.annotations.item_ids, columns=sim.annotations.classes).fillna(0.0)
    np.testing.assert_allclose(MajorityVote(soft=True).fit(frame).predict_proba(),
                               shares.to_numpy(), atol=1e-12)
