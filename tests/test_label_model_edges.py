"""Every registered label model on edge-case crowds: the shared contract of
``aggregation/base.py`` (a posterior per item, finite, rows summing to 1, or a clear
``CrowdDataError``; never a raw numpy error) on small data."""
import warnings

import numpy as np
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import (CalibratedVote, DawidSkene, MajorityVote,
                                     available_label_models, get_label_model)
from crowd_keras.datasets import simulate_crowd
from test_aggregation import labeling_function_votes

MODELS = available_label_models(aliases=False)
FAST = {"lia": {"em_iterations": 1, "m_steps": 5}}


def model_of(name):
    return get_label_model(name, **FAST.get(name, {}))


def assert_posterior(post, n_items, n_classes):
    assert post.shape == (n_items, n_classes)
    assert np.isfinite(post).all()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)


def scored(model, new):
    """``model.predict_proba(new)``, or None for a model that scores only its fitted items
    (it must say so)."""
    try:
        return model.predict_proba(new)
    except CrowdDataError as err:
        assert "fitted items" in str(err)
        return None


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(n_items=40, n_classes=3, n_annotators=6, annotations_per_item=3,
                          seed=0).annotations


@pytest.mark.parametrize("name", MODELS)
def test_new_annotations_of_unseen_annotators_only_get_a_posterior(name, crowd):
    """New items labelled only by annotators the fit never saw: every annotation is left out
    (``n_unknown_annotations_``), so each item is scored with no vote at all."""
    model = model_of(name).fit(crowd)
    new = Annotations([0, 1], [0, 0], [0, 1], item_ids=["n1", "n2"], annotator_ids=[999],
                      classes=crowd.classes)
    post = scored(model, new)
    if post is None:
        return
    assert_posterior(post, 2, crowd.n_classes)
    np.testing.assert_array_equal(model.predict(new), post.argmax(axis=1))


@pytest.mark.parametrize("name", MODELS)
def test_items_without_any_annotation_get_a_posterior_or_a_clear_error(name):
    """A crowd whose items are all listed but none labelled: each item's posterior (the
    prior), or a ``CrowdDataError`` saying there is nothing to fit."""
    empty = Annotations(np.array([], int), np.array([], int), np.array([], int), n_items=3,
                        n_annotators=2, n_classes=2)
    try:
        post = model_of(name).fit(empty).predict_proba()
    except CrowdDataError as err:
        assert "no annotations" in str(err) or "no votes" in str(err)
        return
    assert_posterior(post, 3, 2)


@pytest.mark.parametrize("name", MODELS)
def test_the_fitted_annotations_given_again_are_scored_as_in_the_fit(name, crowd):
    """``predict_proba(annotations_)`` as new annotations: the fitted model's posterior of
    the same items, the fit's labels (up to the last half-step of a mean-field fit)."""
    model = model_of(name).fit(crowd)
    again = Annotations(crowd.items, crowd.annotators, crowd.labels, item_ids=crowd.item_ids,
                        annotator_ids=crowd.annotator_ids, classes=crowd.classes)
    post = model.predict_proba(again)
    assert_posterior(post, crowd.n_items, crowd.n_classes)
    np.testing.assert_allclose(post, model.predict_proba(), atol=1e-2)
    np.testing.assert_array_equal(model.predict(again), model.predict())


SEEDED = [(name, key) for name in MODELS for key in ("seed", "random_state")
          if key in get_label_model(name).get_params()]


@pytest.mark.parametrize("name, key", SEEDED)
@pytest.mark.parametrize("value, error", [(1.5, TypeError), (-1, ValueError),
                                          (np.random.default_rng(0), TypeError)])
def test_a_seed_that_is_no_integer_from_zero_up_is_refused_by_name(name, key, value, error,
                                                                   crowd):
    """A seed of ``1.5`` is not truncated to 1, and ``-1`` or a generator get a message
    naming the model's argument (not numpy's, which names none)."""
    with pytest.raises(error, match=f"{key} must be an integer"):
        get_label_model(name, **FAST.get(name, {}), **{key: value}).fit(crowd)


@pytest.mark.parametrize("regime", ["crowd", "labeling_functions"])
@pytest.mark.parametrize("name", MODELS)
def test_left_out_annotations_of_unseen_annotators_are_counted_by_every_model(name, regime,
                                                                               crowd):
    """``predict_proba(new)`` leaves out the annotations of annotators unseen in fit and
    counts them in ``n_unknown_annotations_`` (base.LabelModel), also when the model handed
    its fit to another one (the default model's choice, the labeling-function model), and says
    so when that leaves out all of them. The mixture of groups places unseen annotators
    instead, and the votes (majority, calibrated) count every vote whoever gave it: no
    annotation is left out."""
    data = crowd if regime == "crowd" else labeling_function_votes()
    model = model_of(name).fit(data)
    new = Annotations(np.arange(data.n_items), np.zeros(data.n_items, int),
                      np.zeros(data.n_items, int), item_ids=data.item_ids, annotator_ids=[999],
                      classes=data.classes)
    chosen = getattr(model, "model_", model)   # the default model fits its choice
    if type(chosen).__name__ == "MixtureOfGroupsModel" and chosen.regime_ == "crowd" or \
            isinstance(chosen, (MajorityVote, CalibratedVote)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model.predict_proba(new)
        assert not hasattr(model, "n_unknown_annotations_")
    else:
        with pytest.warns(UserWarning, match=f"none of the {data.n_items} new annotations is "
                                             "by an annotator of the fit") as said:
            model.predict_proba(new)
        assert said[0].filename == __file__        # the caller's line, not the library's
        assert model.n_unknown_annotations_ == data.n_items


@pytest.mark.parametrize("name", MODELS)
def test_a_new_item_without_labels_gets_what_the_fit_learned_not_its_batchs_votes(name,
                                                                                   crowd):
    """``predict_proba(new)``: an item of the new annotations that nobody labelled gets the
    fitted model's answer for an unlabelled item, the same whatever the other new items'
    labels (majority vote gave it the vote shares of the new batch: one vote made it
    certain)."""
    model = model_of(name).fit(crowd)
    unlabelled = []
    for label in range(crowd.n_classes):
        new = Annotations([1], [0], [label], item_ids=["n1", "n2"],
                          annotator_ids=crowd.annotator_ids, classes=crowd.classes)
        post = scored(model, new)
        if post is None:
            return
        assert_posterior(post, 2, crowd.n_classes)
        unlabelled.append(post[0])
    np.testing.assert_allclose(unlabelled, np.tile(unlabelled[0], (crowd.n_classes, 1)),
                               atol=1e-12)
    assert unlabelled[0].max() < 1.0


def edge_crowds():
    rng = np.random.default_rng(1)
    items, annotators = np.repeat(np.arange(40), 3), np.tile(np.arange(3), 40)
    return {
        "one annotator": Annotations([0, 1, 2, 3], [0, 0, 0, 0], [0, 1, 1, 0]),
        "one class seen of three": Annotations([0, 1, 2], [0, 1, 0], [0, 0, 0], n_classes=3),
        "one annotation": Annotations([0], [0], [1], n_classes=2),
        "all agree": Annotations([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 0, 0]),
        "all disagree": Annotations([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [0, 1, 2, 2, 0, 1]),
        "30 classes": Annotations(items, annotators, rng.integers(0, 30, 120), n_classes=30),
        "unlabelled items and annotators": Annotations([0, 0, 2, 2], [0, 1, 0, 1], [0, 1, 1, 1],
                                                       n_items=5, n_annotators=4),
    }


@pytest.mark.parametrize("crowd_name", list(edge_crowds()))
@pytest.mark.parametrize("name", MODELS)
def test_edge_crowds_get_one_posterior_per_item_in_class_order(name, crowd_name):
    """Every registered model on small odd crowds: one finite posterior row per item (the
    unlabelled ones too), ``predict`` its argmax, fitted shapes that follow the crowd."""
    ann = edge_crowds()[crowd_name]
    model = model_of(name).fit(ann)
    post = model.predict_proba()
    assert_posterior(post, ann.n_items, ann.n_classes)
    np.testing.assert_array_equal(model.predict(), post.argmax(axis=1))
    np.testing.assert_array_equal(model.predict_labels(), ann.classes[post.argmax(axis=1)])
    assert model.confusion_matrices_.shape == (ann.n_annotators, ann.n_classes, ann.n_classes)
    assert len(model.annotator_quality_) == ann.n_annotators


@pytest.mark.parametrize("model", [MajorityVote(), CalibratedVote()])
def test_votes_of_annotators_unseen_in_fit_count_in_a_vote(model):
    """A vote does not depend on who gave it: three unanimous "cat" votes by new workers made
    "dog" (the fitted vote shares), their labels left out as unknown annotators'."""
    import pandas as pd
    train = pd.DataFrame({"task": ["t1"] * 3 + ["t2"] * 3, "worker": ["w1", "w2", "w3"] * 2,
                          "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    new = pd.DataFrame({"task": ["n1", "n1", "n2", "n2", "n2"],
                        "worker": ["w1", "w2", "w7", "w8", "w9"], "label": ["cat"] * 5})
    model.fit(train)
    np.testing.assert_array_equal(model.predict_labels(new), ["cat", "cat"])
    assert not hasattr(model, "n_unknown_annotations_")
    renamed = new.assign(worker=["x1", "x2", "x3", "x4", "x5"])
    np.testing.assert_allclose(model.predict_proba(renamed), model.predict_proba(new))
    assert len(model.annotation_quality(new)) == len(new)      # every label scored


def test_a_batch_whose_every_annotator_is_unseen_is_said_not_only_counted():
    """A matrix whose columns are positions against string annotator ids: every label was
    left out and every item got the class prior, with only ``n_unknown_annotations_`` to
    show for it."""
    import pandas as pd
    train = pd.DataFrame({"task": ["t1"] * 3 + ["t2"] * 3, "worker": ["w1", "w2", "w3"] * 2,
                          "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    model = DawidSkene().fit(train)
    with pytest.warns(UserWarning, match=r"DawidSkene: none of the 3 new annotations is by an "
                                         r"annotator of the fit \(new: 0, \.\.\.; fitted: "
                                         r"'w1'.*NumPy matrix's columns"):
        model.predict_proba(np.array([[0, 0, 0]]))
    assert model.n_unknown_annotations_ == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # some fitted annotators: counted, not said
        model.predict_proba(train.assign(worker=["w1", "w2", "w9"] * 2))
    assert model.n_unknown_annotations_ == 2
