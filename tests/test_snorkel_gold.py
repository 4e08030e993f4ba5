"""CrowdLabelModel.fit(L_train, Y_dev=..., L_dev=...): Snorkel's class balance from Y_dev, and
the dev split's rows as gold (held at their class, and the default model's choice by gold)."""
import numpy as np
import pytest

from crowd_keras.aggregation import DawidSkene
from crowd_keras.annotations import Annotations
from crowd_keras.datasets import simulate_crowd
from crowd_keras.errors import CrowdDataError
from crowd_keras.integrations.snorkel import CrowdLabelModel

K = 3


@pytest.fixture(scope="module")
def crowd():
    """Crowd answers as a label matrix: 600 training rows and a dev split of 100."""
    sim = simulate_crowd(n_items=700, n_classes=K, n_annotators=10, annotations_per_item=4,
                         seed=1)
    L = sim.annotations.to_dense()
    return L[:600], L[600:], sim.y[:600], sim.y[600:]


def labeling_functions(n, m=6, seed=0):
    """Snorkel-style functions: each votes one class on a share of the rows, else abstains."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    L = np.full((n, m), -1)
    for j in range(m):
        target = j % 2
        fires = rng.random(n) < np.where(y == target, 0.5, 0.1)
        L[fires, j] = target
    return L, y


def test_y_dev_alone_is_snorkels_class_balance():
    # Snorkel 0.10: Y_dev only sets the class balance; the answer on a row where every
    # function abstains is that balance, in both models
    from snorkel.labeling.model import LabelModel

    L, _ = labeling_functions(300)
    L = np.vstack([L, np.full((1, L.shape[1]), -1)])
    y_dev = np.array([0, 0, 0, 1, 1, 0, 1, 0])
    snorkel = LabelModel(cardinality=2, verbose=False)
    snorkel.fit(L, Y_dev=y_dev, n_epochs=20, seed=0, progress_bar=False)
    ours = CrowdLabelModel(cardinality=2).fit(L, Y_dev=y_dev, progress_bar=False)
    np.testing.assert_allclose(ours.class_balance_, snorkel.p)
    np.testing.assert_allclose(ours.predict_proba(L)[-1], snorkel.predict_proba(L)[-1],
                               atol=1e-6)
    assert ours.n_gold_ == 0 and not ours.gold_in_fit_
    # the same errors as Snorkel where Y_dev cannot give a balance
    for model in (LabelModel(cardinality=2, verbose=False), CrowdLabelModel(cardinality=2)):
        with pytest.raises(ValueError, match="Does not match LabelModel cardinality"):
            model.fit(L, Y_dev=np.zeros(5, int), progress_bar=False)


def test_dev_rows_are_held_at_their_gold_class_by_the_default_model(crowd):
    L, L_dev, y, y_dev = crowd
    wrong = (y_dev + 1) % K      # gold that contradicts the votes: only clamping gives it
    model = CrowdLabelModel(cardinality=K).fit(L, Y_dev=wrong, L_dev=L_dev, progress_bar=False)
    inner = model.label_model_
    assert model.gold_in_fit_ and model.n_gold_ == len(y_dev)
    assert inner.n_gold_ == len(y_dev)           # the default saw them as gold
    np.testing.assert_array_equal(inner.predict()[len(L):], wrong)
    assert model.predict_proba(L).shape == (len(L), K)


def test_enough_dev_gold_lets_the_default_choose_by_it(crowd):
    L, L_dev, y, y_dev = crowd
    model = CrowdLabelModel(cardinality=K).fit(L, Y_dev=y_dev, L_dev=L_dev, progress_bar=False)
    inner = model.label_model_
    assert len(y_dev) >= inner.min_gold
    assert len(inner.gold_accuracy_) > 1         # every candidate scored on hidden gold rows
    assert all(0 <= acc <= 1 for acc in inner.gold_accuracy_.values())
    without = CrowdLabelModel(cardinality=K).fit(L, progress_bar=False)
    assert without.label_model_.gold_accuracy_ == {}


def test_dev_gold_is_the_label_models_own_gold_fit(crowd):
    L, L_dev, y, y_dev = crowd
    model = CrowdLabelModel(cardinality=K, method="dawid_skene").fit(
        L, Y_dev=y_dev, L_dev=L_dev, progress_bar=False)
    inner = model.label_model_
    np.testing.assert_allclose(inner.class_priors_, np.bincount(y_dev) / len(y_dev))
    ann = Annotations.from_label_matrix(np.vstack([L, L_dev]), cardinality=K)
    gold = np.concatenate([np.full(len(L), -1), y_dev])
    reference = DawidSkene(**inner.get_params()).fit(ann, gold=gold)
    np.testing.assert_allclose(model.predict_proba(L), reference.predict_proba()[:len(L)],
                               atol=1e-12)
    # and gold moves the fit: the same model without the dev rows differs
    plain = CrowdLabelModel(cardinality=K, method="dawid_skene").fit(L, Y_dev=y_dev,
                                                                     progress_bar=False)
    assert np.abs(plain.predict_proba(L) - model.predict_proba(L)).max() > 1e-6


def test_labeling_functions_fit_the_dev_rows_without_holding_them():
    L, y = labeling_functions(500)
    model = CrowdLabelModel(cardinality=2).fit(L[:400], Y_dev=y[400:], L_dev=L[400:],
                                               progress_bar=False)
    assert type(model.label_model_).__name__ == "AbstainAwareDawidSkene"
    assert not model.gold_in_fit_ and model.n_gold_ == 100
    assert model.predict_proba(L[:400]).shape == (400, 2)
    assert np.isfinite(model.get_conditional_probs()).all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(L_dev="dev"), "L_dev needs Y_dev"),
    (dict(L_dev="dev", Y_dev="short"), "Y_dev has 99 labels but L_dev has 100 rows"),
    (dict(L_dev="dev", Y_dev="outside"), r"Y_dev has 3 at position 7; labels are 0..2"),
    (dict(L_dev="dev", Y_dev="abstain"), r"Y_dev has -1 at position 0"),
    (dict(L_dev="narrow", Y_dev="dev"), "L_dev has 9 labeling functions but L_train has 10"),
    (dict(L_dev="bad", Y_dev="dev"), "L_dev"),
])
def test_dev_errors_name_the_argument(crowd, kwargs, message):
    L, L_dev, y, y_dev = crowd
    outside = y_dev.copy()
    outside[7] = 3
    abstain = y_dev.copy()
    abstain[0] = -1
    bad = L_dev.copy()
    bad[2, 3] = 5
    values = {"dev": {"L_dev": L_dev, "Y_dev": y_dev}, "short": y_dev[:-1], "outside": outside,
              "abstain": abstain, "narrow": L_dev[:, 1:], "bad": bad}
    args = {name: (values[v][name] if v == "dev" else values[v]) for name, v in kwargs.items()}
    with pytest.raises(CrowdDataError, match=message):
        CrowdLabelModel(cardinality=K).fit(L, progress_bar=False, **args)


@pytest.mark.parametrize("method", ["dawid_skene", pytest.param("auto", marks=pytest.mark.slow)])
def test_dev_gold_on_a_dask_l_train_equals_the_in_memory_fit(crowd, method):
    da = pytest.importorskip("dask.array")
    import dask

    L, L_dev, y, y_dev = crowd
    wrong = (y_dev + 1) % K
    memory = CrowdLabelModel(cardinality=K, method=method).fit(
        L, Y_dev=wrong, L_dev=L_dev, progress_bar=False)
    with dask.config.set(scheduler="sync"):
        chunked = CrowdLabelModel(cardinality=K, method=method).fit(
            da.from_array(L, chunks=250), Y_dev=wrong, L_dev=L_dev, progress_bar=False)
        proba = chunked.predict_proba(da.from_array(L, chunks=250)).compute()
    assert chunked.gold_in_fit_ and chunked.n_gold_ == len(y_dev)
    np.testing.assert_allclose(proba, memory.predict_proba(L), atol=1e-8)
    np.testing.assert_allclose(chunked.get_weights(), memory.get_weights(), atol=1e-8)
    np.testing.assert_allclose(chunked.get_conditional_probs(), memory.get_conditional_probs(),
                               atol=1e-8)


@pytest.mark.slow
def test_crowd_answers_are_labelled_for_the_given_class_balance():
    # Snorkel's class_balance is P(Y): the default model of crowd answers decides its labels
    # under it (the default target when none is given: without Y_dev uniform, Snorkel's own)
    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.datasets import simulate_failure_kind

    ann = simulate_failure_kind("skewed_prolific", 0, scale=0.25).annotations
    L = ann.to_dense()
    balance = np.array([0.2, 0.6, 0.2])
    answers = []
    for given, target in ((None, "gold"), (balance, balance)):
        ours = CrowdLabelModel(cardinality=K).fit(L, class_balance=given, progress_bar=False)
        inner = ours.label_model_
        assert isinstance(inner, AutoLabelModel) and inner.target_prior_applied_
        np.testing.assert_array_equal(np.asarray(inner.target_prior), np.asarray(target))
        np.testing.assert_allclose(inner.target_prior_, np.full(K, 1 / K) if given is None
                                   else balance)
        expected = AutoLabelModel(class_prior=given, target_prior=target,
                                  vote_posterior="one_hot").fit(Annotations.from_label_matrix(
                                      L, cardinality=K))
        np.testing.assert_allclose(ours.predict_proba(L), expected.predict_proba(), atol=1e-9)
        answers.append(ours.predict(L))
    assert (answers[0] != answers[1]).any()


def test_tie_broken_vote_takes_y_dev_and_class_balance(crowd):
    # the balance goes to TieBrokenVote's class_prior only where its tie model takes one:
    # IBCC (the default) takes none and refuses it, so Y_dev or class_balance failed the fit
    L, L_dev, _, y_dev = crowd
    rows = np.vstack([L, np.full((1, L.shape[1]), -1)])      # a row where every function abstains
    plain = CrowdLabelModel(cardinality=K, method="tie_broken_vote")
    plain.fit(rows, Y_dev=y_dev, L_dev=L_dev, progress_bar=False)
    assert plain.gold_in_fit_ and plain.label_model_.class_prior is None
    np.testing.assert_allclose(plain.predict_proba(rows)[-1], plain.class_balance_)
    balance = np.array([0.2, 0.3, 0.5])
    ds = CrowdLabelModel(cardinality=K, method="tie_broken_vote", tie_model="dawid_skene")
    ds.fit(L, class_balance=balance, progress_bar=False)
    np.testing.assert_allclose(ds.label_model_.class_prior, balance)


def test_save_and_load_keep_the_dev_rows_record(crowd, tmp_path):
    # n_gold_ / gold_in_fit_ were not saved: a loaded model had neither, and one loaded into
    # an object fitted before kept that fit's (here: 100 dev rows held, for a model without)
    L, L_dev, _, y_dev = crowd
    with_dev = CrowdLabelModel(cardinality=K, method="dawid_skene")
    with_dev.fit(L, Y_dev=y_dev, L_dev=L_dev, progress_bar=False)
    with_dev.save(tmp_path / "dev.npz")
    without = CrowdLabelModel(cardinality=K, method="dawid_skene").fit(L, progress_bar=False)
    without.save(tmp_path / "plain.npz")
    loaded = CrowdLabelModel(cardinality=K).load(tmp_path / "dev.npz")
    assert (loaded.n_gold_, loaded.gold_in_fit_) == (100, True)
    assert (with_dev.load(tmp_path / "plain.npz").n_gold_, with_dev.gold_in_fit_) == (0, False)
    np.testing.assert_allclose(with_dev.predict_proba(L), without.predict_proba(L))


@pytest.mark.parametrize("kwargs", [dict(Y_dev=np.int64(1)), dict(Y_dev=1, L_dev="one row")])
def test_a_scalar_y_dev_is_no_labels(crowd, kwargs):
    # a scalar was read as one data point's label: 'Y_dev has 1 class(es). Does not match
    # LabelModel cardinality 3', and beside a one-row L_dev it was taken as that row's gold
    L, L_dev, _, _ = crowd
    if "L_dev" in kwargs:
        kwargs = dict(kwargs, L_dev=L_dev[:1], class_balance=[0.2, 0.3, 0.5])
    with pytest.raises(CrowdDataError, match=r"^Y_dev must be one label per data point \(an "
                                             r"array or a list\), got the scalar 1$"):
        CrowdLabelModel(cardinality=K, method="dawid_skene").fit(L, progress_bar=False,
                                                                 **kwargs)


def test_a_class_balance_the_fitted_model_cannot_use_is_said():
    """The default may choose majority vote or BWA, which have no class prior: the class
    balance then moved only the rows where every function abstains, without a word, where
    Snorkel's moves every row."""
    import warnings
    rng = np.random.default_rng(1)
    n, y = 400, rng.integers(0, 2, 400)
    L = np.full((n, 6), -1)
    for j in range(6):
        covered = rng.random(n) < 0.5
        right = rng.random(n) < rng.uniform(0.55, 0.95)
        L[covered, j] = np.where(right[covered], y[covered], 1 - y[covered])
    for method, said in (("majority_vote", True), ("glad", True), ("dawid_skene", False)):
        for given in ({"class_balance": [0.1, 0.9]}, {"Y_dev": np.array([0] * 9 + [1])}):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                CrowdLabelModel(cardinality=2, method=method).fit(L, progress_bar=False,
                                                                  **given)
            notes = [w for w in caught if "did not enter the fitted model" in str(w.message)]
            assert bool(notes) == said, (method, given)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                         # no balance: nothing to say
        CrowdLabelModel(cardinality=2, method="majority_vote").fit(L, progress_bar=False)
