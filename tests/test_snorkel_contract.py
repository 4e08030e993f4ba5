"""Snorkel's public contract beyond its own tests (issue #18): the same exception types for
bad train settings, a clear refusal of Snorkel's pickles, abstention per class for labeling
functions only, the registry behind ``method=``, and one label-matrix conversion per call."""
import numpy as np
import pytest

from conftest import require_data
from crowd_keras import CrowdDataError
from crowd_keras.aggregation import DawidSkene
from crowd_keras.annotations import Annotations
from crowd_keras.datasets import load_truth_inference, load_wrench
from crowd_keras.integrations.snorkel import CrowdLabelModel
from test_snorkel_upstream import simple_label_matrix

from snorkel.labeling.model import LabelModel

L3 = np.array([[0, -1, 0], [0, 1, 0], [1, 1, -1], [-1, 0, 1]])


def one_class_matrix(n, m, rng):
    """Conditionally independent one-class functions (precision 0.6-0.95), binary truth."""
    y = rng.integers(0, 2, n)
    target = np.arange(m) % 2
    coverage, precision = rng.uniform(0.05, 0.3, m), rng.uniform(0.6, 0.95, m)
    p = np.where(y[:, None] == target, coverage * precision / 0.5, coverage * (1 - precision) / 0.5)
    return np.where(rng.random((n, m)) < p, target, -1), y


@pytest.mark.parametrize("kwargs", [
    {"lr": -1.0}, {"l2": -0.5}, {"n_epoch": 5}, {"seed": -1}, {"seed": 2 ** 32},
    {"optimizer": "bad_opt"},
    {"lr_scheduler": "bad_scheduler"}, {"prec_init": "0.7"}, {"prec_init": [0.7, 0.7]},
    {"optimizer_config": {"sgd_config": {"momentom": 0.9}}},
    # the values torch checks when Snorkel builds the optimizer
    {"optimizer_config": {"sgd_config": {"momentum": -0.5}}},
    {"optimizer": "adam", "optimizer_config": {"adam_config": {"betas": (0.9, 1.0)}}},
    {"optimizer": "adam", "optimizer_config": {"adam_config": {"betas": 0.9}}},
    {"optimizer": "adamax", "optimizer_config": {"adamax_config": {"eps": -1e-8}}},
    {"lr_scheduler_config": {"warmup_steps": -2, "warmup_unit": "epochs"}},
    {"lr_scheduler_config": {"warmup_steps": 1, "warmup_unit": "batches"}},
], ids=lambda kw: next(iter(kw)) + "=" + repr(next(iter(kw.values())))[:20] +
    ("" if len(kw) == 1 else "+" + repr(list(kw.values())[-1])[:40]))
def test_bad_train_settings_raise_snorkels_exception_type(kwargs):
    with pytest.raises(Exception) as theirs:
        LabelModel(verbose=False).fit(L3, progress_bar=False, **kwargs)
    with pytest.raises(Exception) as ours:
        CrowdLabelModel().fit(L3, progress_bar=False, **kwargs)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)


def test_ignored_settings_are_still_checked_and_mu_eps_is_honoured():
    model = CrowdLabelModel().fit(L3, progress_bar=False, mu_eps=0.05, l2=0.1, lr=0.5,
                                  optimizer="adam", lr_scheduler="step", prec_init=[0.9] * 3,
                                  log_freq=5, optimizer_config={"adam_config": {"amsgrad": True}})
    votes = model.get_conditional_probs()[:, 1:, :]
    assert votes.min() >= 0.05 - 1e-12 and votes.max() <= 0.95 + 1e-12
    assert model.train_config_["optimizer"] == "adam"
    for bad, error in (({"mu_eps": 0.7}, ValueError), ({"log_freq": 0}, ValueError),
                       ({"n_epochs": 1.5}, TypeError), ({"seed": "a"}, TypeError)):
        with pytest.raises(error):
            CrowdLabelModel().fit(L3, progress_bar=False, **bad)


def test_n_epochs_zero_names_n_epochs_where_the_model_iterates():
    with pytest.raises(ValueError, match=r"^n_epochs=0: DawidSkene needs at least one"):
        CrowdLabelModel(method="dawid_skene").fit(L3, n_epochs=0, progress_bar=False)
    voted = CrowdLabelModel(method="majority_vote").fit(L3, n_epochs=0, progress_bar=False)
    assert voted.predict(L3).shape == (len(L3),)   # voting has no iterations: as Snorkel, fine


def test_a_file_saved_by_snorkel_is_refused_with_a_message_that_says_so(tmp_path):
    path = tmp_path / "snorkel_label_model.pkl"
    theirs = LabelModel(verbose=False)
    theirs.fit(L3, n_epochs=5, progress_bar=False)
    theirs.save(str(path))
    with pytest.raises(CrowdDataError, match="pickle, as Snorkel's LabelModel.save writes"):
        CrowdLabelModel().load(path)
    text = tmp_path / "notes.txt"
    text.write_text("not a model")
    with pytest.raises(CrowdDataError, match="not a saved CrowdLabelModel"):
        CrowdLabelModel().load(text)


def test_three_functions_as_snorkel_except_for_majority_vote():
    L2 = L3[:, :2]
    with pytest.raises(ValueError, match="at least 3 labeling functions"):
        CrowdLabelModel().fit(L2, progress_bar=False)
    mv = CrowdLabelModel(method="majority_vote").fit(L2, progress_bar=False)
    assert mv.predict(L2).tolist() == [0, -1, 1, 0]  # a tie in row 1


@pytest.mark.slow
def test_rows_without_votes_get_the_class_balance_in_every_regime():
    # both-class functions with a skewed truth: the model learns a prior far from uniform
    rng = np.random.default_rng(3)
    y = (rng.random(3000) < 0.8).astype(int)
    right = rng.random((3000, 6)) < 0.8
    L = np.where(rng.random((3000, 6)) < 0.4, np.where(right, y[:, None], 1 - y[:, None]), -1)
    L[:50] = -1
    empty = ~(L >= 0).any(axis=1)
    model = CrowdLabelModel().fit(L, progress_bar=False)
    assert abs(model.label_model_.class_priors_[1] - 0.8) < 0.1  # learned, not uniform
    np.testing.assert_allclose(model.predict_proba(L)[empty], 0.5)
    pred = model.predict(L)
    assert (pred[empty] == -1).all() and (pred[~empty] != -1).all()
    assert model.score(L, y, metrics=["coverage"])["coverage"] == pytest.approx(1 - empty.mean())
    given = CrowdLabelModel().fit(L, class_balance=[0.3, 0.7], progress_bar=False)
    np.testing.assert_allclose(given.predict_proba(L)[empty], [[0.3, 0.7]] * int(empty.sum()))


def test_abstaining_is_modelled_per_class_for_labeling_functions_not_for_crowd_assignment():
    _, _, L = simple_label_matrix(5000, 8, 2, np.random.default_rng(0))
    assert CrowdLabelModel().fit(L, progress_bar=False).label_model_.abstain_ == "response"
    # a crowd: every item labelled by exactly 3 of 30 workers, skipping unrelated to the class
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 3000)
    workers = np.argsort(rng.random((3000, 30)), axis=1)[:, :3]
    crowd = -np.ones((3000, 30), dtype=int)
    answers = np.where(rng.random((3000, 3)) < 0.8, y[:, None], 1 - y[:, None])
    np.put_along_axis(crowd, workers, answers, axis=1)
    model = CrowdLabelModel().fit(crowd, progress_bar=False)
    # crowd answers: a crowd model that does not model abstaining (the default resolves to auto)
    assert model.label_model_.regime_ == "crowd"
    assert getattr(model.label_model_, "abstain_", "ignore") == "ignore"
    assert type(model.label_model_).__name__ == "AutoLabelModel"
    assert (model.predict(crowd, tie_break_policy="random") == y).mean() > 0.85


def test_one_class_functions_use_the_full_model_only_when_they_are_independent():
    L, y = one_class_matrix(20000, 10, np.random.default_rng(0))
    model = CrowdLabelModel().fit(L, progress_bar=False)
    assert model.covote_misfit_ < 0.1 and model.label_model_.anchor_ == "none"
    folder = require_data("wrench", "youtube")
    wrench = CrowdLabelModel().fit(load_wrench(folder, "train").L, progress_bar=False)
    assert wrench.covote_misfit_ > 0.1 and wrench.label_model_.anchor_ == "votes"


def test_dawid_skene_method_is_the_librarys_dawid_skene():
    ann, _ = load_truth_inference(require_data("truth_inference", "dog"))
    L = ann.to_label_matrix()
    ours = CrowdLabelModel(cardinality=ann.n_classes, method="dawid_skene").fit(
        L, progress_bar=False)
    library = DawidSkene().fit(Annotations.from_label_matrix(L, ann.n_classes))
    np.testing.assert_array_equal(ours.predict_proba(L).argmax(axis=1), library.predict())


def test_a_label_matrix_becomes_annotations_once_per_call(monkeypatch, tmp_path):
    calls = []
    original = Annotations.from_label_matrix.__func__

    def counting(cls, L, *args, **kwargs):
        calls.append(np.shape(L))
        return original(cls, L, *args, **kwargs)

    monkeypatch.setattr(Annotations, "from_label_matrix", classmethod(counting))
    L, _ = one_class_matrix(3000, 6, np.random.default_rng(2))
    model = CrowdLabelModel().fit(L, progress_bar=False)
    assert len(calls) == 1
    probs = model.predict_proba(L)  # the training matrix: answered from the fit
    assert len(calls) == 1
    other = L.copy()
    other[0] = [0, 1, 0, 1, 0, 1]
    fresh = model.predict_proba(other)
    assert len(calls) == 2
    np.testing.assert_array_equal(fresh[1:], probs[1:])
    # the cached answer is the model's answer: a loaded model (no cache) gives the same
    model.save(tmp_path / "m.npz")
    np.testing.assert_allclose(CrowdLabelModel().load(tmp_path / "m.npz").predict_proba(L), probs,
                               atol=1e-12)
