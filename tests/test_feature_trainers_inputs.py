"""The feature-based trainers' inputs: LIA (trainer and label model), MixtureOfGroupsEM.

Frames indexed by item id are matched by id, as ``pred_probs`` and ``out_of_fold`` match
them; a NaN row is named at prediction as at fit. Tiny fits (a few optimiser steps).
"""
import pickle

import numpy as np
import pandas as pd
import pytest

keras = pytest.importorskip("keras")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.errors import NotFittedError  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.lia.label_model import LIA  # noqa: E402
from crowd_keras.lia.trainer import LIATrainer  # noqa: E402
from crowd_keras.mixture_of_groups.trainer import MixtureOfGroupsEM  # noqa: E402

LIA_FAST = dict(em_iterations=1, m_steps=5, progress=False, seed=0)


@pytest.fixture(scope="module")
def crowd():
    """60 items with text ids, their features as a frame indexed by id and the same frame
    shuffled."""
    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=0)
    a = sim.annotations
    ann = Annotations.from_frame(pd.DataFrame({
        "item": [f"it{i:02d}" for i in a.items], "annotator": a.annotators,
        "label": a.labels}), "item", "annotator", "label")
    frame = pd.DataFrame(sim.x, index=[f"it{i:02d}" for i in range(60)])
    assert list(ann.item_ids) == list(frame.index)
    return ann, frame, frame.sample(frac=1.0, random_state=0)


def classifier(seed=0):
    init = keras.initializers.GlorotUniform(seed=seed)
    return keras.Sequential([keras.Input((10,)),
                             keras.layers.Dense(3, activation="softmax", kernel_initializer=init)])


def test_lia_trainer_matches_a_frame_by_item_id(crowd):
    ann, frame, shuffled = crowd
    settings = dict(LIA_FAST, marginal_steps=0)
    ref = LIATrainer(**settings).fit(frame.to_numpy(), ann)
    fit = LIATrainer(**settings).fit(shuffled, ann)
    np.testing.assert_allclose(fit.posteriors_, ref.posteriors_, atol=1e-6)
    np.testing.assert_allclose(fit.posteriors(shuffled, ann), ref.posteriors_, atol=1e-5)


def test_lia_label_model_matches_features_by_item_id(crowd):
    ann, frame, shuffled = crowd
    ref = LIA(**LIA_FAST).fit(ann, features=frame.to_numpy())
    fit = LIA(**LIA_FAST).fit(ann, features=shuffled)
    np.testing.assert_allclose(fit.posteriors_, ref.posteriors_, atol=1e-6)
    np.testing.assert_allclose(fit.predict_proba(ann, features=shuffled), ref.posteriors_,
                               atol=1e-5)
    with pytest.raises(CrowdDataError, match=r"features is indexed by item id but has no row "
                                             r"for 1 item\(s\).*'it07'"):
        LIA(**LIA_FAST).fit(ann, features=shuffled.drop(index="it07"))


def test_mixture_of_groups_em_matches_a_frame_by_item_id(crowd):
    ann, frame, shuffled = crowd
    settings = dict(num_groups=2, max_iter=2, seed=0, progress=False)
    ref = MixtureOfGroupsEM(classifier(), **settings).fit(frame.to_numpy(), ann)
    fit = MixtureOfGroupsEM(classifier(), **settings).fit(shuffled, ann)
    np.testing.assert_allclose(fit.posteriors_, ref.posteriors_, atol=1e-5)
    np.testing.assert_allclose(fit.predict_proba_items(shuffled, ann),
                               ref.predict_proba_items(frame.to_numpy(), ann), atol=1e-5)
    np.testing.assert_allclose(fit.group_probabilities(shuffled, ann),
                               ref.group_probabilities(frame.to_numpy(), ann), atol=1e-5)


def test_prediction_names_a_nan_row_instead_of_predicting_class_0(crowd):
    ann, frame, _ = crowd
    x = frame.to_numpy()
    bad = x[:5].copy()
    bad[3, 1] = np.nan
    lia = LIATrainer(**dict(LIA_FAST, marginal_steps=0)).fit(x, ann)
    mog = MixtureOfGroupsEM(classifier(), num_groups=2, max_iter=1, progress=False).fit(x, ann)
    for fitted in (lia, mog):
        for method in (fitted.predict, fitted.predict_proba):
            with pytest.raises(CrowdDataError, match="x has a non-finite value in row 3"):
                method(bad)


def test_a_fitted_lia_unpickles_without_warnings_and_predicts_the_same(crowd, recwarn):
    ann, frame, _ = crowd
    x = frame.to_numpy()
    fitted = LIA(**LIA_FAST).fit(ann, features=x)
    recwarn.clear()
    back = pickle.loads(pickle.dumps(fitted))
    # was: "Skipping variable loading for optimizer 'rm_sprop'" (the E-step model's default
    # optimizer, never built); TensorFlow's own numpy deprecation notices are not ours
    assert [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)] == []
    np.testing.assert_allclose(back.predict_proba(ann, features=x),
                               fitted.predict_proba(ann, features=x), atol=1e-6)


def test_mixture_of_groups_em_says_how_to_give_x_as_a_list_of_rows(crowd):
    ann, frame, _ = crowd
    with pytest.raises(TypeError, match=r"x is a list of numbers \(rows\); give it as an "
                                        r"array, np.asarray\(x\)"):   # was: "got float"
        MixtureOfGroupsEM(classifier(), max_iter=1, progress=False).fit(
            frame.to_numpy().tolist(), ann)


def test_lia_trainer_names_a_cell_that_is_not_a_number(crowd):
    ann, frame, _ = crowd
    mixed = frame.astype(object)
    mixed.iloc[4, 2] = "n/a"
    with pytest.raises(CrowdDataError, match=r"x must hold numbers; row 4, column 2 holds "
                                             r"'n/a'"):   # was Keras' "Invalid dtype: object"
        LIATrainer(**LIA_FAST).fit(mixed, ann)
    # numbers in an object frame (a nullable-integer column) are numbers; pd.NA is named
    fitted = LIATrainer(**dict(LIA_FAST, marginal_steps=0)).fit(frame.astype(object), ann)
    assert fitted.predict(frame.iloc[:3].astype(object)).shape == (3,)
    holes = frame.astype(object)
    holes.iloc[6, 0] = pd.NA
    with pytest.raises(CrowdDataError, match="x has a non-finite value in row 6"):
        LIATrainer(**LIA_FAST).fit(holes, ann)


def test_lia_trainer_matches_annotator_features_by_annotator_id(crowd):
    ann, frame, _ = crowd
    ids = list(ann.annotator_ids)
    described = pd.DataFrame(np.random.default_rng(0).normal(size=(len(ids), 2)), index=ids)
    shuffled = described.iloc[::-1]
    settings = dict(LIA_FAST, marginal_steps=0)
    ref = LIATrainer(annotator_features=described.to_numpy(), **settings).fit(frame, ann)
    fit = LIATrainer(annotator_features=shuffled, **settings).fit(frame, ann)
    np.testing.assert_allclose(fit.posteriors_, ref.posteriors_, atol=1e-6)
    with pytest.raises(CrowdDataError, match=r"annotator_features is indexed by annotator id "
                                             r"but has no row for annotator 2"):
        LIATrainer(annotator_features=shuffled.drop(index=2), **settings).fit(frame, ann)


def test_lia_with_features_predicts_new_items_given_their_features(crowd):
    ann, frame, shuffled = crowd
    fitted = LIA(**LIA_FAST).fit(ann, features=frame)
    codes = fitted.predict_proba(ann, features=shuffled).argmax(axis=1)
    # was: TypeError, predict() took no features, and without them "give features"
    np.testing.assert_array_equal(fitted.predict(ann, features=shuffled), codes)
    np.testing.assert_array_equal(fitted.predict_labels(ann, features=shuffled),
                                  ann.classes[codes])
    np.testing.assert_array_equal(fitted.predict(), fitted.posteriors_.argmax(axis=1))


def test_mixture_of_groups_em_on_label_counts_says_why_it_has_no_annotator_summary(crowd):
    ann, frame, _ = crowd
    fitted = MixtureOfGroupsEM(classifier(), num_groups=2, max_iter=1, progress=False).fit(
        frame.to_numpy(), counts=ann.label_counts())
    # was: "no annotator summary yet: it is learned by fit on arrays of one class label per
    # item (not a tagger's per-step labels...)", as if the fit had not run
    for attr in ("annotator_quality_", "confusion_matrices_", "class_priors_"):
        with pytest.raises(NotFittedError, match=r"fitted on label counts \(counts=\), which "
                                                 r"name no annotators"):
            getattr(fitted, attr)


def new_batch_and_its_fitted_coding(ann, frame):
    """Annotations of some items by three of the workers, without one class, read from a
    frame (their own codes), and the same annotations in the fit's coding."""
    named = Annotations.from_frame(pd.DataFrame({
        "item": ann.item_ids[ann.items], "worker": [f"w{j}" for j in ann.annotators],
        "label": np.array(["cat", "dog", "emu"])[ann.labels]}), "item", "worker", "label")
    keep = (named.annotators >= 3) & (named.labels > 0)
    sub = named.select(keep)
    new = Annotations.from_frame(pd.DataFrame({
        "item": sub.item_ids[sub.items], "worker": sub.annotator_ids[sub.annotators],
        "label": sub.classes[sub.labels]}), "item", "worker", "label")
    assert list(new.annotator_ids) == ["w3", "w4", "w5"] and list(new.classes) == ["dog", "emu"]
    coded = Annotations(new.items, np.searchsorted(named.annotator_ids,
                                                   new.annotator_ids[new.annotators]),
                        np.searchsorted(named.classes, new.classes[new.labels]),
                        item_ids=new.item_ids, annotator_ids=named.annotator_ids,
                        classes=named.classes)
    return named, new, coded, frame.loc[new.item_ids].to_numpy()


@pytest.mark.parametrize("trainer", ["lia", "mixture_of_groups"])
def test_trainers_read_new_annotations_by_annotator_id_and_class(crowd, trainer):
    ann, frame, _ = crowd
    named, new, coded, x = new_batch_and_its_fitted_coding(ann, frame)
    if trainer == "lia":
        fitted = LIATrainer(**dict(LIA_FAST, marginal_steps=0)).fit(frame, named)
    else:
        fitted = MixtureOfGroupsEM(classifier(), num_groups=2, scenario="individual",
                                   max_iter=2, seed=0, progress=False).fit(frame, named)
    # was: w3..w5 read as the fitted w0..w2, and dog, emu as cat, dog
    np.testing.assert_allclose(fitted.predict_proba_items(x, new),
                               fitted.predict_proba_items(x, coded), atol=1e-6)
    stranger = Annotations(new.items, new.annotators, new.labels, item_ids=new.item_ids,
                           annotator_ids=["w3", "w4", "zed"], classes=new.classes)
    with pytest.raises(CrowdDataError, match="annotator 'zed' is not one of the fitted"):
        fitted.predict_proba_items(x, stranger)
