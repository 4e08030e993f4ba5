"""crowd_keras.compat.cleanlab.to_cleanlab against real cleanlab output (same keys, columns,
order, dtypes and indexes, and the same counts and agreements where the consensus agrees)."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import DawidSkene, IBCC, MajorityVote, MixtureOfGroupsModel
from crowd_keras.compat.cleanlab import CLEANLAB_ONLY_ARGUMENTS, to_cleanlab, worst_classes
from crowd_keras.datasets import simulate_crowd
from crowd_keras.errors import CrowdDataError, NotFittedError

multiannotator = pytest.importorskip("cleanlab.multiannotator")


@pytest.fixture(scope="module")
def case():
    sim = simulate_crowd(n_items=120, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=4)
    dense = sim.annotations.to_dense().astype(float)
    dense[dense < 0] = np.nan
    wide = pd.DataFrame(dense, index=[f"item{i}" for i in range(len(dense))],
                        columns=[f"w{a}" for a in range(dense.shape[1])])
    ann = Annotations.from_wide(wide, n_classes=3)
    rng = np.random.default_rng(0)
    pred_probs = normalize(np.eye(3)[sim.y] + rng.random((len(sim.y), 3)))
    reference = multiannotator.get_label_quality_multiannotator(wide, pred_probs, verbose=False)
    return sim, wide, ann, pred_probs, reference


def normalize(p):
    return p / p.sum(axis=1, keepdims=True)


def test_the_layout_is_cleanlabs(case):
    sim, wide, ann, pred_probs, reference = case
    model = DawidSkene().fit(ann, pred_probs=pd.DataFrame(pred_probs, index=wide.index))
    ours = to_cleanlab(model)
    assert list(ours) == list(reference)
    for key in reference:
        assert list(ours[key].columns) == list(reference[key].columns), key
        assert ours[key].dtypes.to_dict() == reference[key].dtypes.to_dict(), key
    for key in ("label_quality", "detailed_label_quality"):
        assert list(ours[key].index) == list(reference[key].index)
    assert set(ours["annotator_stats"].index) == set(reference["annotator_stats"].index)
    stats = ours["annotator_stats"]
    assert stats["annotator_quality"].is_monotonic_increasing
    np.testing.assert_array_equal(ours["detailed_label_quality"].isna().to_numpy(),
                                  reference["detailed_label_quality"].isna().to_numpy())


def test_counts_and_agreements_match_where_the_consensus_does(case):
    sim, wide, ann, pred_probs, reference = case
    ours = to_cleanlab(IBCC().fit(ann, pred_probs=pred_probs))
    mine, theirs = ours["label_quality"], reference["label_quality"]
    np.testing.assert_array_equal(mine["num_annotations"], theirs["num_annotations"])
    same = mine["consensus_label"] == theirs["consensus_label"]
    assert same.mean() > 0.8
    np.testing.assert_allclose(mine.loc[same, "annotator_agreement"],
                               theirs.loc[same, "annotator_agreement"])
    a = ours["annotator_stats"].sort_index()
    b = reference["annotator_stats"].sort_index()
    np.testing.assert_array_equal(a["num_examples_labeled"], b["num_examples_labeled"])
    if same.all():
        np.testing.assert_allclose(a["agreement_with_consensus"], b["agreement_with_consensus"])


def test_scores_are_the_models_quality_scores(case):
    sim, wide, ann, pred_probs, _ = case
    model = IBCC().fit(ann)
    out = to_cleanlab(model, class_names=True)
    post = model.predict_proba()
    np.testing.assert_allclose(out["label_quality"]["consensus_quality_score"],
                               model.consensus_quality())
    detailed = out["detailed_label_quality"].to_numpy()
    np.testing.assert_allclose(detailed[ann.items, ann.annotators], model.annotation_quality())
    # cleanlab's invariant: a label equal to the consensus scores the consensus quality (the
    # raw posterior of MajorityVote or an over-confident fit would not)
    agree = ann.labels == np.argmax(post, axis=1)[ann.items]
    np.testing.assert_allclose(detailed[ann.items, ann.annotators][agree],
                               model.consensus_quality()[ann.items][agree])
    quality = model.annotator_quality_.set_index("annotator")["expected_accuracy"]
    np.testing.assert_allclose(out["annotator_stats"]["annotator_quality"],
                               quality.loc[out["annotator_stats"].index])


def test_worst_class_is_where_an_annotator_errs_most():
    # annotator 0 is right on class 0 and always says 0 on class 1 items
    ann = Annotations(items=[0, 1, 2, 3], annotators=[0, 0, 0, 0], labels=[0, 0, 0, 0],
                      n_annotators=2, n_classes=2)
    post = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.2, 0.8]])
    np.testing.assert_array_equal(worst_classes(ann, post), [1, -1])


def test_other_annotations_are_scored_under_the_fitted_model(case):
    sim, wide, ann, pred_probs, _ = case
    model = IBCC().fit(ann)
    half = Annotations.from_wide(wide.iloc[:60], n_classes=3)
    out = to_cleanlab(model, half, return_detailed_quality=False)
    assert list(out) == ["label_quality", "annotator_stats"]
    np.testing.assert_allclose(out["label_quality"]["consensus_quality_score"],
                               model.consensus_quality(half))
    assert list(out["label_quality"].index) == list(wide.index[:60])


def test_annotators_not_in_the_fit_are_left_out_of_every_table(case):
    # as predict_proba leaves their labels out (they were counted in the tables, with a NaN
    # annotator_quality sorted last)
    sim, wide, ann, pred_probs, _ = case
    model = IBCC().fit(ann)
    part = wide.iloc[:20]
    more = part.assign(newcomer=[0.0, 1.0] * 10)
    out = to_cleanlab(model, Annotations.from_wide(more, n_classes=3))
    assert model.n_unknown_annotations_ == 20
    same = to_cleanlab(model, Annotations.from_wide(part, n_classes=3))
    for key in same:
        pd.testing.assert_frame_equal(out[key], same[key])
    fewer = Annotations.from_wide(wide[["w3", "w1"]], n_classes=3)   # a subset of the fit
    stats = to_cleanlab(model, fewer)["annotator_stats"]
    assert set(stats.index) == {"w3", "w1"} and stats["annotator_quality"].notna().all()


def test_a_class_nobody_chose_is_named_in_the_pred_probs_error():
    # cleanlab takes K = 3 from pred_probs; from_wide without n_classes= sees codes 0..1
    wide = pd.DataFrame({"a": [0, 1, np.nan], "b": [0, 1, 1]})
    pred_probs = np.full((3, 3), 1 / 3)
    multiannotator.get_label_quality_multiannotator(wide, pred_probs, verbose=False)
    with pytest.raises(CrowdDataError, match=r"n_classes=3"):
        DawidSkene().fit(Annotations.from_wide(wide), pred_probs=pred_probs)
    model = DawidSkene().fit(Annotations.from_wide(wide, n_classes=3), pred_probs=pred_probs)
    assert to_cleanlab(model)["label_quality"]["consensus_label"].max() <= 2


def test_an_agreeing_label_scores_the_consensus_quality_as_in_cleanlab(case):
    sim, wide, ann, pred_probs, reference = case
    theirs = reference["detailed_label_quality"].to_numpy()
    consensus = reference["label_quality"]["consensus_label"].to_numpy()
    agree = wide.to_numpy() == consensus[:, None]
    np.testing.assert_allclose(   # what cleanlab gives, checked on its own output
        theirs[agree], np.broadcast_to(
            reference["label_quality"]["consensus_quality_score"].to_numpy()[:, None],
            theirs.shape)[agree])
    out = to_cleanlab(MajorityVote().fit(ann))   # posteriors of 1: quality must not be 1
    mine = out["detailed_label_quality"].to_numpy()
    codes = out["label_quality"]["consensus_label"].to_numpy()
    agree = wide.to_numpy() == codes[:, None]
    score = out["label_quality"]["consensus_quality_score"].to_numpy()
    np.testing.assert_allclose(mine[agree], np.broadcast_to(score[:, None], mine.shape)[agree])
    assert (mine[agree] < 1).any()


def test_cleanlabs_other_arguments_say_where_their_job_is_done(case):
    # every argument of cleanlab's function is either to_cleanlab's or explained
    import inspect
    ours = set(inspect.signature(to_cleanlab).parameters)
    theirs = set(inspect.signature(multiannotator.get_label_quality_multiannotator).parameters)
    assert theirs - ours == set(CLEANLAB_ONLY_ARGUMENTS)
    model = MajorityVote().fit(case[2])
    for name in sorted(CLEANLAB_ONLY_ARGUMENTS):
        with pytest.raises(TypeError, match=rf"{name} \(.+\)"):
            to_cleanlab(model, **{name: None})
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\): colour$"):
        to_cleanlab(model, colour="red")


def test_cleanlabs_wide_labels_as_annotations_are_pointed_to_from_wide(case):
    # the frame was read as a long (task, worker, label) frame, the array as -1-coded codes
    sim, wide, ann, pred_probs, _ = case
    model = MajorityVote().fit(ann)
    for labels in (wide, wide.to_numpy()):
        with pytest.raises(CrowdDataError, match=r"Annotations\.from_wide\(labels"):
            to_cleanlab(model, labels)
    out = to_cleanlab(model, Annotations.from_wide(wide, n_classes=3))
    assert list(out["label_quality"].index) == list(wide.index)
    long = pd.DataFrame({"task": ["item0", "item0"], "worker": ["w0", "w0"], "label": [0, 1]})
    with pytest.raises(CrowdDataError, match=r"duplicate(?!.*from_wide)"):   # no wide hint
        to_cleanlab(model, long)


def test_a_model_that_places_unseen_annotators_keeps_them():
    # the mixture of groups reads their labels (predict_proba counts nothing left out)
    sim = simulate_crowd(n_items=90, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=3)
    model = MixtureOfGroupsModel().fit(sim.annotations)
    frame = pd.DataFrame({"task": [0, 0, 1, 2], "worker": [0, 99, 99, 1],
                          "label": [2, 2, 1, 0]})
    new = Annotations.from_frame(frame, classes=sim.annotations.classes)
    out = to_cleanlab(model, new)
    assert not hasattr(model, "n_unknown_annotations_")
    np.testing.assert_array_equal(out["label_quality"]["num_annotations"], [2, 1, 1])
    assert 99 in out["annotator_stats"].index
    detailed = out["detailed_label_quality"].to_numpy()
    np.testing.assert_allclose(detailed[new.items, new.annotators], model.annotation_quality(new))


def test_a_new_frame_with_a_few_of_the_classes_is_read_with_the_fitted_ones(case):
    # as predict_proba reads it: alone, a batch of labels 0 and 1 would have two classes
    sim, wide, ann, pred_probs, _ = case
    model = IBCC().fit(ann)
    frame = ann.to_frame()
    batch = frame[frame["label"] != 2]
    assert set(batch["label"]) == {0, 1}
    out = to_cleanlab(model, batch)
    read = Annotations.from_frame(batch, classes=ann.classes)
    np.testing.assert_allclose(out["label_quality"]["consensus_quality_score"],
                               model.consensus_quality(read))
    np.testing.assert_array_equal(out["label_quality"]["consensus_label"],
                                  model.predict(batch))


def test_a_label_model_given_cleanlabs_wide_labels_points_to_from_wide(case):
    # the first thing a CROWDLAB user tries: fit(labels_multiannotator)
    sim, wide, ann, pred_probs, _ = case
    for labels in (wide, wide.to_numpy()):
        with pytest.raises(CrowdDataError, match=r"read by Annotations\.from_wide\(labels"):
            DawidSkene().fit(labels, pred_probs=pred_probs)
    model = DawidSkene().fit(ann)
    with pytest.raises(CrowdDataError, match=r"Annotations\.from_wide"):
        model.predict_proba(wide)
    # a long frame's own error (a column missing) and a -1-coded matrix: no wide hint
    with pytest.raises(CrowdDataError, match=r"no column\(s\) \['label'\]; columns are "
                                             r"\['task', 'worker'\]$"):
        DawidSkene().fit(pd.DataFrame({"task": [0], "worker": [0]}))
    assert DawidSkene().fit(np.nan_to_num(wide.to_numpy(), nan=-1).astype(int)).posteriors_ \
        .shape == (len(wide), 3)


def test_the_switches_are_true_or_false(case):
    # class_names="no" was read as True, return_detailed_quality=None as False, silently
    model = MajorityVote().fit(case[2])
    for name, value in (("class_names", "no"), ("return_detailed_quality", None),
                        ("return_annotator_stats", 0)):
        with pytest.raises(TypeError, match=rf"to_cleanlab {name} must be True or False, "
                                            rf"got {type(value).__name__} {value!r}"):
            to_cleanlab(model, **{name: value})
    out = to_cleanlab(model, class_names=np.True_, return_annotator_stats=np.False_)
    assert list(out) == ["label_quality", "detailed_label_quality"]


def test_cleanlabs_call_moved_over_says_where_its_arguments_go(case):
    # to_cleanlab(labels_multiannotator=..., pred_probs=...) was Python's "missing 1 required
    # positional argument: 'label_model'", and cleanlab's order (labels, pred_probs) named
    # only the DataFrame: the explanations of CLEANLAB_ONLY_ARGUMENTS never showed
    sim, wide, ann, pred_probs, _ = case
    with pytest.raises(TypeError, match=r"labels_multiannotator \(fit the label model on "
                                        r"Annotations\.from_wide.*; pred_probs \(pass them"):
        to_cleanlab(labels_multiannotator=wide, pred_probs=pred_probs)
    for labels in (wide, wide.to_numpy(), None):
        with pytest.raises(TypeError, match=r"needs a fitted label model .*got \w+ \(cleanlab's "
                                            r"labels_multiannotator and pred_probs go to a label "
                                            r"model: .*from_wide"):
            to_cleanlab(labels) if labels is not None else to_cleanlab()
    with pytest.raises(TypeError, match=r"got the class DawidSkene$"):
        to_cleanlab(DawidSkene)


def test_a_model_fitted_partition_by_partition_scores_given_annotations():
    # its predict_proba(annotations), consensus_quality(annotations) and annotator_quality_
    # work, but to_cleanlab called predict_proba() first, which refuses (no items held)
    dd = pytest.importorskip("dask.dataframe")
    from crowd_keras.distributed import aggregate
    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=2)
    frame = sim.annotations.to_frame()
    model = aggregate(dd.from_pandas(frame, npartitions=2), method="dawid_skene").model
    with pytest.raises(ValueError, match="partition by partition"):
        to_cleanlab(model)                          # its items are the result's, not held
    out = to_cleanlab(model, frame)
    same = to_cleanlab(DawidSkene().fit(frame), frame)
    for key in same:
        pd.testing.assert_frame_equal(out[key], same[key], check_exact=False, atol=1e-9)
    with pytest.raises(NotFittedError):
        to_cleanlab(DawidSkene(), frame)


def test_worst_class_is_a_class_the_annotator_met_not_rounding_dust():
    """Annotator 0 labels class-0 and class-1 items only and errs on a third of the class-0
    ones; its items hold 1e-9 of class 2 in all, whose rate (about 1) won the argmax, and
    perfect annotators got that class too. A class counts once it is the consensus of one
    of the annotator's items, as in cleanlab."""
    truth = np.repeat([0, 1, 2], [15, 15, 10])
    post = np.full((40, 3), 1e-10)
    post[np.arange(40), truth] = 1.0
    post /= post.sum(axis=1, keepdims=True)
    items, who, labels = [], [], []
    for i, t in enumerate(truth):
        for a in (1, 2, 3):                                   # perfect on every item
            items.append(i), who.append(a), labels.append(t)
        if t < 2:                                             # annotator 0: classes 0 and 1
            items.append(i), who.append(0), labels.append(1 if (t == 0 and i % 3 == 0) else t)
            items.append(i), who.append(4), labels.append(t)  # 4: perfect, classes 0 and 1
    ann = Annotations(np.array(items), np.array(who), np.array(labels), n_classes=3)
    worst = worst_classes(ann, post)
    assert worst[0] == 0
    assert worst[4] in (0, 1)          # never class 2, which only dust on its items holds
