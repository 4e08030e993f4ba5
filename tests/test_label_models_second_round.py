"""The classic and Bayesian label models as estimators, second round of 1 December: each
test names what a user saw before its fix."""
import warnings

import numpy as np
import pandas as pd
import pytest

from crowd_keras.aggregation import DawidSkene, TieBrokenVote


@pytest.fixture(scope="module")
def no_label_two_from_x():
    """Three classes; annotator "x" never says class 2 in the fit."""
    rng = np.random.default_rng(0)
    rows = []
    for item in range(30):
        truth = item % 3
        for worker in ("x", "y", "z"):
            label = truth if rng.random() < 0.8 else (truth + 1) % 3
            if worker == "x" and label == 2:
                label = 0
            rows.append((item, worker, label))
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


@pytest.mark.parametrize("model", [DawidSkene(smoothing=0),
                                   TieBrokenVote(tie_model="dawid_skene", smoothing=0)],
                         ids=type)
def test_new_label_never_given_in_the_fit_without_smoothing_is_not_nan(model,
                                                                       no_label_two_from_x):
    """smoothing=0: "x" saying 2 on a new item was impossible under every class: Dawid-Skene's
    posterior was a NaN row (and numpy's 'divide by zero' warning), the tie-broken vote's
    uniform although 2 was the only class voted."""
    model.fit(no_label_two_from_x)
    new = pd.DataFrame({"task": [100, 100, 101], "worker": ["x", "y", "x"],
                        "label": [2, 2, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        proba = model.predict_proba(new)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.predict(new)[0] == 2      # y's 2 decides; x's label favours no class
    if isinstance(model, TieBrokenVote):   # 2 is the only class voted on either item
        assert model.predict(new).tolist() == [2, 2]
    assert np.isfinite(model.consensus_quality(new)).all()


@pytest.mark.parametrize("name,setting,value", [
    ("ibcc", "a_v", "4"), ("ibcc", "alpha", True), ("ebcc", "a_pi", "0.1"),
    ("ebcc", "b_v", True), ("bwa", "lambda_", "1"), ("bwa", "a_v", np.True_)])
def test_bayesian_pseudo_counts_of_another_type_are_named(name, setting, value):
    """float() read True as the pseudo-count 1 (fitted without a word) and "4" as 4, which
    then failed inside numpy ('unsupported operand type(s)'), naming no setting."""
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.datasets import simulate_crowd

    ann = simulate_crowd(n_items=30, n_classes=3, n_annotators=5, seed=0).annotations
    with pytest.raises(TypeError, match=rf"{setting} must be a positive number, got "):
        get_label_model(name, **{setting: value}).fit(ann)
    np.testing.assert_allclose(   # a number of the same value is taken as it is
        get_label_model(name, **{setting: float(value)}).fit(ann).predict_proba().sum(axis=1), 1)


@pytest.mark.parametrize("max_iter", [0, 1.5])
def test_auto_max_iter_is_named_as_its_own(max_iter):
    """AutoLabelModel(max_iter=0) failed in its first held-out fit with "BWA max_iter must
    be at least 1", a model the user never named."""
    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.datasets import simulate_crowd

    ann = simulate_crowd(n_items=30, n_classes=3, n_annotators=5, seed=0).annotations
    with pytest.raises((TypeError, ValueError), match=r"^AutoLabelModel max_iter must be an "
                                                      r"integer >= 1"):
        AutoLabelModel(max_iter=max_iter).fit(ann)
    assert AutoLabelModel(max_iter=1, max_repeats=1).fit(ann).n_iter_ == 1
