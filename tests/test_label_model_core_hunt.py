"""The label models' core surface as a user meets it: new annotations given as a frame or a
matrix, parameter checks that name the parameter, and the like."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import DawidSkene, MajorityVote, MixtureOfGroupsModel


@pytest.fixture(scope="module")
def frame():
    return pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t3", "t3"],
                         "worker": ["a", "b", "c", "a", "b", "a", "c"],
                         "label": ["cat", "cat", "dog", "dog", "dog", "owl", "owl"]})


@pytest.mark.parametrize("model", [DawidSkene(), MajorityVote()], ids=type)
def test_a_new_frame_with_a_few_of_the_classes_is_read_with_the_fitted_classes(model, frame):
    """Read alone, a batch labelled 'cat' only has the one class ['cat']: predict_proba and
    the quality scores read a frame with the fitted classes instead of refusing it."""
    model.fit(frame)
    new = frame[frame.task == "t1"].assign(label="cat")
    expected = model.predict_proba(Annotations.from_frame(new, classes=["cat", "dog", "owl"]))
    np.testing.assert_array_equal(model.predict_proba(new), expected)
    assert model.predict_labels(new).tolist() == ["cat"]
    assert model.consensus_quality(new).shape == (1,)
    assert model.annotation_quality(new).shape == (3,)
    with pytest.raises(CrowdDataError, match="'emu'.*not one of the classes"):
        model.predict_proba(new.assign(label="emu"))


def test_a_new_matrix_is_read_as_codes_of_the_fitted_classes():
    L = np.array([[0, 1, 2], [1, 1, 1], [2, 2, 0], [0, 0, 0]])
    model = DawidSkene().fit(L)
    new = np.array([[0, 0, -1], [1, 1, 0]])   # code 2 absent: still three classes
    assert model.predict_proba(new).shape == (2, 3)
    with pytest.raises(CrowdDataError, match="outside the 3 classes"):
        model.predict_proba(np.array([[3, 0, 0]]))


def test_mixture_of_groups_group_probabilities_of_a_new_frame(frame):
    model = MixtureOfGroupsModel(num_groups=2, restarts=1).fit(frame)
    new = frame[frame.task == "t1"].assign(label="cat")
    assert model.group_probabilities(new).shape == (3, model.memberships_.shape[1])


SMALL = np.array([[0, 1, 1], [1, 1, 0], [0, 0, 0], [1, -1, 1]])


@pytest.mark.parametrize("name,setting", [
    ("dawid_skene", "max_iter"), ("dawid_skene", "tol"), ("dawid_skene", "smoothing"),
    ("glad", "max_iter"), ("mace", "tol"), ("ibcc", "max_iter"), ("bwa", "tol"),
    ("calibrated_vote", "smoothing"), ("tie_broken_vote", "max_iter"),
    ("abstain_dawid_skene", "smoothing")])
def test_a_setting_of_none_is_a_type_error_naming_it(name, setting):
    """None is no iteration count or tolerance: int()'s and float()'s messages named nothing."""
    from crowd_keras.aggregation import get_label_model
    with pytest.raises(TypeError, match=rf"{setting} must be .*NoneType None"):
        get_label_model(name, **{setting: None}).fit(SMALL)


def test_mace_smoothing_none_is_its_default():
    from crowd_keras.aggregation import MACE
    assert MACE(smoothing=None, restarts=1).fit(SMALL).predict_proba().shape == (4, 2)


@pytest.mark.parametrize("name,setting,value,error", [
    ("dawid_skene", "prior_strength", "x", TypeError),
    ("dawid_skene", "prior_strength", None, TypeError),
    ("dawid_skene", "prior_strength", float("nan"), ValueError),
    ("one_coin_dawid_skene", "prior_strength", "1", TypeError),
    ("ebcc", "num_groups", True, TypeError),
    ("ebcc", "num_groups", 2.0, TypeError),
    ("ebcc", "num_groups", 0, ValueError),
    ("ebcc", "prune_below", "x", TypeError),
    ("ebcc", "prune_below", None, TypeError),
    ("abstain_dawid_skene", "abstain_weight", None, TypeError),
    ("abstain_dawid_skene", "abstain_weight", [0.5], TypeError)])
def test_a_setting_of_a_wrong_type_is_named(name, setting, value, error):
    from crowd_keras.aggregation import get_label_model
    with pytest.raises(error, match=setting):
        get_label_model(name, **{setting: value}).fit(SMALL)


def test_dawid_skene_prior_strength_inf_is_one_matrix_for_the_crowd():
    model = DawidSkene(prior_strength=float("inf")).fit(SMALL)
    np.testing.assert_allclose(model.confusion_matrices_, model.confusion_matrices_[:1]
                               .repeat(3, axis=0))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"n_items": -1}, ValueError, r"n_items must be an integer >= 0, got -1"),
    ({"n_items": 2.5}, TypeError, r"n_items must be an integer"),
    ({"n_annotators": "3"}, TypeError, r"n_annotators must be an integer"),
    ({"n_classes": 2.0}, TypeError, r"n_classes must be an integer"),
    ({"classes": ["a", "b"], "n_classes": 3}, CrowdDataError,
     r"n_classes=3 disagrees with 2 class ids")])
def test_annotations_sizes_are_counts_named_as_given(kwargs, error, match):
    """-1 items made none and 2.5 made two, silently; 'n_classs' was misspelt."""
    with pytest.raises(error, match=match):
        Annotations([0], [0], [0], **kwargs)


def test_item_index_of_one_string_is_refused_not_read_as_characters():
    """item_index("zx") looked up 'z' and 'x': the codes of two other items."""
    ann = Annotations.from_frame(pd.DataFrame({"task": ["x", "z", "zx"], "worker": ["a"] * 3,
                                               "label": [0, 1, 0]}))
    with pytest.raises(TypeError, match=r"got the string 'zx' \(one id: \['zx'\]\)"):
        ann.item_index("zx")
    with pytest.raises(TypeError, match="got the string 'a'"):
        ann.annotator_index("a")
    assert ann.item_index(["zx", "x"]).tolist() == [2, 0]


@pytest.mark.parametrize("data", ["frame", "annotations"])
def test_majority_vote_refuses_pred_probs_as_the_other_models_do(frame, data):
    """The message blamed the frame reader ('from_frame() got an unexpected keyword') or
    said the annotations were already read."""
    given = frame if data == "frame" else Annotations.from_frame(frame)
    with pytest.raises(TypeError, match=r"^MajorityVote.fit\(\) does not take pred_probs$"):
        MajorityVote().fit(given, pred_probs=np.full((3, 3), 1 / 3))


@pytest.mark.parametrize("setting", [{"class_prior": [0.9, 0.1]}, {"smoothing": 0.5},
                                     {"class_prior": "x"}])
def test_tie_broken_vote_refuses_a_setting_its_tie_model_does_not_take(setting):
    """IBCC takes no class_prior and no smoothing: they were set and silently unused (a
    class_prior of 'x' was accepted)."""
    from crowd_keras.aggregation import TieBrokenVote
    name = next(iter(setting))
    with pytest.raises(ValueError, match=rf"{name}=.* is not a setting of tie_model='ibcc'"):
        TieBrokenVote(**setting).fit(SMALL)


@pytest.mark.parametrize("tie_model", ["mace", "mixture_of_groups"])
def test_tie_broken_vote_refuses_a_tie_model_that_runs_restarts(tie_model):
    """MACE and the mixture of groups hand their fit to restarts run side by side, which need
    more iterations than the tie-breaking loop ran: 'restarts stopped before a winner was
    chosen' (a RuntimeError), or a fit that depended on how fast the restarts converged."""
    from crowd_keras.aggregation import TieBrokenVote
    with pytest.raises(ValueError, match=rf"tie_model='{tie_model}' .* runs restarts side by "
                                         "side"):
        TieBrokenVote(tie_model=tie_model, max_iter=3).fit(SMALL)


def test_tie_broken_vote_passes_the_settings_a_tie_model_takes():
    from crowd_keras.aggregation import TieBrokenVote
    model = TieBrokenVote(tie_model="dawid_skene", class_prior=[0.9, 0.1], smoothing=0.5)
    assert model.fit(SMALL).tie_model_.class_prior == [0.9, 0.1]
    assert model.tie_model_.smoothing == 0.5
    assert TieBrokenVote(smoothing=0.01).fit(SMALL).n_iter_ >= 1   # the default is no setting
    with pytest.raises(CrowdDataError, match="class prior"):
        TieBrokenVote(tie_model="dawid_skene", class_prior="x").fit(SMALL)


@pytest.mark.parametrize("setting,value,error", [
    ("num_groups", float("nan"), TypeError), ("num_groups", float("inf"), TypeError),
    ("num_groups", None, TypeError), ("num_groups", True, TypeError),
    ("num_groups", 0, ValueError), ("restarts", 2.5, TypeError), ("restarts", "3", TypeError),
    ("restarts", 0, ValueError)])
def test_mixture_of_groups_counts_are_checked_and_named(setting, value, error):
    """restarts=2.5 ran two restarts; NaN, inf and None groups raised int()'s messages."""
    with pytest.raises(error, match=rf"MixtureOfGroupsModel {setting} must be an integer >= 1"):
        MixtureOfGroupsModel(**{setting: value}).fit(SMALL)


def test_every_exported_label_model_is_in_the_aggregation_reference():
    """TieBrokenVote, IBCC, EBCC and BWA were exported but had no reference entry."""
    import re
    from pathlib import Path

    import crowd_keras.aggregation as aggregation
    page = (Path(__file__).resolve().parents[1] / "docs/reference/aggregation.md").read_text(
        encoding="utf-8")
    listed = set(re.findall(r"^\s+- (\w+)$", page, re.M)) | \
        set(re.findall(r"^::: [\w.]+\.(\w+)$", page, re.M))
    assert set(aggregation.__all__) - listed == set()


@pytest.mark.parametrize("dtype", [bool, object, "boolean"])
def test_boolean_labels_with_integer_classes_are_the_labels_0_and_1(dtype):
    """Without classes True/False are the classes 1 and 0; with classes=[0, 1] they were
    'not one of the classes', so a model fitted on them refused its own frame as new
    annotations (read with the fitted classes)."""
    df = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                       "label": pd.array([True, False, True, True], dtype=dtype)})
    plain = Annotations.from_frame(df)
    assert plain.classes.tolist() == [0, 1]
    assert Annotations.from_frame(df, classes=[0, 1]) == plain
    assert Annotations.from_frame(df, classes=[False, True]).labels.tolist() == \
        plain.labels.tolist()
    model = DawidSkene().fit(df)
    np.testing.assert_allclose(model.predict_proba(df), model.predict_proba(), atol=1e-12)


def test_a_label_outside_integer_classes_names_them_as_plain_numbers():
    df = pd.DataFrame({"task": [1], "worker": ["a"], "label": [7]})
    with pytest.raises(CrowdDataError, match=r"is not one of the classes \[0, 1\]$"):
        Annotations.from_frame(df, classes=np.arange(2))


@pytest.mark.parametrize("name", ["dawid_skene", "ibcc", "bwa"])
def test_a_bad_setting_is_named_as_the_users_model_on_labeling_function_votes(name):
    """On votes of labeling functions the fit hands its settings to the abstain-aware model,
    whose name the error carried."""
    from crowd_keras.aggregation import get_label_model
    votes = np.array([[0, -1, -1], [-1, 1, -1], [0, -1, 1], [-1, -1, 1]] * 5)
    model = get_label_model(name, max_iter="10")
    with pytest.raises(TypeError, match=rf"^{type(model).__name__} max_iter must be an integer"):
        model.fit(votes)


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_an_explicit_start_with_nan_or_negative_weights_is_refused(bad):
    """DawidSkene returned NaN posteriors for every item (predict: class 0); EBCC failed in a
    reshape of an empty array."""
    from crowd_keras.aggregation import EBCC
    start = np.full((4, 2), 0.5)
    start[3, 1] = bad
    with pytest.raises(ValueError, match=r"init posteriors must be finite and non-negative, "
                                         r"got .* at item row 3"):
        DawidSkene(init=start).fit(SMALL)
    sub = np.full((4, 2, 3), 1 / 6)
    sub[1, 0, 2] = bad
    with pytest.raises(ValueError, match=r"EBCC init must be finite and non-negative.* row 1"):
        EBCC(num_groups=3, init=sub).fit(SMALL)


def test_an_explicit_start_of_weights_need_not_be_normalised():
    """Counts (zeros included) are weights the first M-step reads: still accepted."""
    counts = np.array([[3, 0], [0, 2], [1, 0], [2, 1]])
    post = DawidSkene(init=counts).fit(SMALL).predict_proba()
    assert np.isfinite(post).all()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)


def test_from_label_matrix_refuses_a_cardinality_that_disagrees_with_the_classes():
    """cardinality=3 with two class names made two classes, silently."""
    L = np.array([[0, 1], [1, -1]])
    with pytest.raises(CrowdDataError, match=r"cardinality=3 disagrees with the 2 classes "
                                             r"\['a', 'b'\]"):
        Annotations.from_label_matrix(L, 3, classes=["a", "b"])
    with pytest.raises(TypeError, match="cardinality must be an integer"):
        Annotations.from_label_matrix(L, "2", classes=["a", "b"])
    assert Annotations.from_label_matrix(L, 2, classes=["a", "b"]).classes.tolist() == ["a", "b"]


@pytest.mark.parametrize("reader", ["from_label_matrix", "from_dense", "fit"])
def test_a_scipy_sparse_matrix_is_refused_saying_why(reader):
    """numpy read it as one object: 'must be 2-d (items × annotators), got shape ()'."""
    import scipy.sparse as sp
    L = sp.csr_matrix(np.array([[0, 1], [1, 0]]))
    read = (lambda m: DawidSkene().fit(m)) if reader == "fit" else getattr(Annotations, reader)
    with pytest.raises(CrowdDataError, match=r"got a scipy sparse csr_matrix of shape \(2, 2\)"
                                             r": its absent entries would read as 0, a class code"):
        read(L)


def test_sparse_pred_probs_are_refused_as_not_dense():
    import scipy.sparse as sp
    with pytest.raises(CrowdDataError, match=r"pred_probs must be a dense array, got a scipy "
                                             r"sparse csr_matrix of shape \(4, 2\)$"):
        DawidSkene().fit(SMALL, pred_probs=sp.csr_matrix(np.full((4, 2), 0.5)))


@pytest.mark.parametrize("settings", [{"smoothing": 0}, {"smoothing": 0, "prior_strength": 0}])
def test_dawid_skene_without_smoothing_gives_no_runtime_warning(settings):
    """smoothing=0 (crowd-kit's plain Dawid-Skene) leaked numpy's 'divide by zero
    encountered in log' for every label an annotator never gave (log π = -inf by design)."""
    import warnings

    import pandas as pd

    from crowd_keras import Annotations
    from crowd_keras.aggregation import DawidSkene

    df = pd.DataFrame({"task": ["a", "a", "b", "b", "c", "c"],
                       "worker": ["x", "y", "x", "y", "z", "y"], "label": [0, 0, 1, 1, 1, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = DawidSkene(**settings).fit(Annotations.from_frame(df), gold={"a": 0})
    np.testing.assert_array_equal(model.predict(), [0, 1, 0])
    assert np.isfinite(model.predict_proba()).all()


def test_new_annotations_whose_annotator_ids_are_of_another_type_are_named():
    """A CSV's "7" against the fitted 7: every annotation was left out as an unknown
    annotator and the posteriors were the class prior alone, silently."""
    df = pd.DataFrame({"task": [1, 1, 2, 2, 3, 3], "worker": [7, 8, 7, 8, 9, 8],
                       "label": ["a", "a", "b", "b", "b", "a"]})
    model = DawidSkene().fit(Annotations.from_frame(df))
    with pytest.raises(CrowdDataError, match=r"annotator '7' is written like the fitted "
                                             r"annotator 7: give the ids in the type"):
        model.predict_proba(df.assign(worker=df.worker.astype(str)))
    # annotators who are simply new are still left out and counted, as documented (and
    # said, when that is every one of them)
    with pytest.warns(UserWarning, match="none of the 6 new annotations"):
        prior_only = model.predict_proba(df.assign(worker=df.worker + 100))
    assert model.n_unknown_annotations_ == len(df)
    np.testing.assert_allclose(prior_only, np.broadcast_to(prior_only[0], prior_only.shape))


def test_the_mixture_of_groups_names_annotator_ids_of_another_type_as_the_others_do():
    """It places unseen annotators (memberships from their labels) where the other models
    leave them out: a CSV's "7" against the fitted 7 was placed as seven new annotators,
    their fitted groups unused and no word said, where every other model names the ids."""
    df = pd.DataFrame({"task": [1, 1, 2, 2, 3, 3, 4, 4], "worker": [7, 8, 7, 8, 9, 8, 7, 9],
                       "label": ["a", "a", "b", "b", "b", "a", "a", "b"]})
    model = MixtureOfGroupsModel(restarts=1).fit(Annotations.from_frame(df))
    as_text = df.assign(worker=df.worker.astype(str))
    for call in (model.predict_proba, model.group_probabilities):
        with pytest.raises(CrowdDataError, match=r"annotator '7' is written like the fitted "
                                                 r"annotator 7: give the ids in the type"):
            call(as_text)
    # annotators who are simply new are still placed
    assert model.predict_proba(df.assign(worker=df.worker + 100)).shape == (4, 2)


def test_the_mixture_of_groups_names_other_classes_as_the_other_models_do():
    """Its own check wrote the classes as numpy scalars ("[np.int64(0), np.int64(1)]") and
    said nothing of how to read a batch that uses a few of the classes."""
    model = MixtureOfGroupsModel(restarts=1).fit(Annotations.from_dense([[0, 1, 2], [2, 1, 0]]))
    few = Annotations.from_dense([[0, 1], [1, 0]])
    for call in (model.predict_proba, model.group_probabilities):
        with pytest.raises(CrowdDataError, match=r"^classes \[0, 1\] differ from the fitted "
                                                 r"classes \[0, 1, 2\] \(a batch that uses 2 of "
                                                 r"them: build it with classes=\[0, 1, 2\]"):
            call(few)
    reordered = Annotations.from_dense([[0, 1]], classes=[2, 1, 0])
    with pytest.raises(CrowdDataError, match=r"\(the same classes in another order: build it "
                                             r"with classes=\[0, 1, 2\]\)$"):
        model.predict_proba(reordered)


def test_a_class_prior_series_keyed_by_class_is_refused_not_read_by_position():
    """class_prior=pd.Series({"b": .9, "a": .1}) was read by position: .9 for class "a"."""
    from crowd_keras.datasets import simulate_crowd

    df = simulate_crowd(n_items=40, n_classes=2, n_annotators=6, seed=0).annotations.to_frame()
    ann = Annotations.from_frame(df.assign(label=df["label"].map({0: "a", 1: "b"})))
    keyed = pd.Series({"b": 0.9, "a": 0.1})
    with pytest.raises(CrowdDataError, match=r"class prior must be a vector in the classes' "
                                             r"order .*reindex\(classes\)"):
        DawidSkene(class_prior=keyed).fit(ann)
    by_order = DawidSkene(class_prior=keyed.reindex(ann.classes).to_numpy()).fit(ann)
    plain = DawidSkene(class_prior=pd.Series([0.1, 0.9])).fit(ann)   # default index: order
    np.testing.assert_allclose(by_order.predict_proba(), plain.predict_proba())
