"""CrowdLabelModel as a drop-in for Snorkel 0.10's LabelModel: inputs Snorkel accepts that a
user hands over as they are (a dense ``np.matrix``, boolean gold labels, ...)."""
import numpy as np
import pytest
import scipy.sparse as sp

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.integrations.snorkel import CrowdLabelModel, check_dev_set

from snorkel.labeling.model import LabelModel


def both_class_functions(n=240, m=5, seed=0):
    """Binary truth; ``m`` functions voting either class (80% right) on 60% of the rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    vote = rng.random((n, m)) < 0.6
    right = rng.random((n, m)) < 0.8
    L = np.where(vote, np.where(right, y[:, None], 1 - y[:, None]), -1)
    return L, y


@pytest.fixture(scope="module")
def data():
    L, y = both_class_functions()
    return L, y, CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)


def test_a_dense_np_matrix_is_read_as_the_array_it_holds(data):
    # scipy.sparse's todense() returns np.matrix, whose rows index as 2-d; Snorkel takes it
    L, y, fitted = data
    dense = sp.csr_matrix(L).todense()
    assert isinstance(dense, np.matrix)
    LabelModel(cardinality=2, verbose=False).fit(dense, progress_bar=False, n_epochs=5)
    np.testing.assert_array_equal(fitted.predict(dense), fitted.predict(L))
    refit = CrowdLabelModel(cardinality=2).fit(dense, progress_bar=False)
    np.testing.assert_array_equal(refit.predict_proba(L), fitted.predict_proba(L))
    L_dev, _ = check_dev_set(np.asmatrix(L[:40]), y[:40], 2, L.shape[1])   # fit's check
    np.testing.assert_array_equal(L_dev, L[:40])
    assert Annotations.from_label_matrix(dense).n_annotations == (L >= 0).sum()


def test_boolean_gold_labels_are_classes_0_and_1_as_in_snorkel(data):
    # e.g. Y = df.label == "spam"; Snorkel's score and class balance read False/True as 0/1
    L, y, fitted = data
    gold = y.astype(bool)
    assert fitted.score(L, gold, metrics=["accuracy", "f1"]) == \
        fitted.score(L, y, metrics=["accuracy", "f1"])
    theirs = LabelModel(cardinality=2, verbose=False)
    theirs.fit(L, Y_dev=gold[:60], progress_bar=False, n_epochs=5)
    ours = CrowdLabelModel(cardinality=2).fit(L, Y_dev=gold[:60], progress_bar=False)
    np.testing.assert_allclose(ours.class_balance_, theirs.p)
    dev = CrowdLabelModel(cardinality=2).fit(L, Y_dev=gold[:60], L_dev=L[:60],
                                             progress_bar=False)
    assert dev.n_gold_ == 60
    with pytest.raises(CrowdDataError, match="1 class"):   # still needs every class
        CrowdLabelModel(cardinality=2).fit(L, Y_dev=np.ones(10, bool), progress_bar=False)


@pytest.mark.parametrize("dtype, signed", [(np.uint8, "int8"), (np.uint16, "int16")])
def test_an_unsigned_label_matrix_names_the_wrapped_abstain(data, dtype, signed):
    # -1 stored unsigned is the dtype's largest value (Snorkel's L + 1 wraps it back)
    L, _, fitted = data
    r, c = np.argwhere(L == -1)[0]
    wrapped = np.iinfo(dtype).max
    for call, name in ((lambda X: CrowdLabelModel().fit(X, progress_bar=False), "L_train"),
                       (fitted.predict, "L")):
        with pytest.raises(CrowdDataError, match=(
                rf"{name} has dtype {np.dtype(dtype)}, which cannot hold -1 .*{wrapped} at row "
                rf"{r}, column {c} .*{name}\.astype\(np\.{signed}\)")):
            call(L.astype(dtype))
    np.testing.assert_array_equal(L.astype(dtype).astype(signed), L)   # the advice works


def test_an_out_of_range_label_is_shown_exactly(data):
    L, _, fitted = data
    bad = L.copy()
    bad[7, 3] = 2 ** 40
    with pytest.raises(CrowdDataError, match=r"cardinality 1099511627777, .*1099511627776 at "
                                             r"row 7, column 3"):
        fitted.predict(bad)


@pytest.mark.slow   # LIA imports Keras
def test_save_refuses_a_model_whose_fitted_state_it_cannot_store(data, tmp_path):
    # feature-free LIA keeps its networks' weights in engine_: a file without them loaded
    # into a model that could not predict ("scores only its 0 fitted items")
    L, _, _ = data
    lia = CrowdLabelModel(cardinality=2, method="lia").fit(L, n_epochs=2, progress_bar=False)
    assert lia.label_model_.regime_ == "crowd"
    path = tmp_path / "lia.npz"
    with pytest.raises(TypeError, match=r"cannot save LIA: its fitted engine_ .*could not "
                                        r"predict"):
        lia.save(path)
    assert not path.exists()



@pytest.mark.parametrize("bad, message", [
    (lambda y: y + 0.5, r"Y must hold integer labels 0\.\.1, got dtype float64 \(\d\.5 at "
                        r"position 0\)"),
    (lambda y: np.where(np.arange(len(y)) == 7, 5, y), r"Y has 5 at position 7"),
    (lambda y: np.array(["spam"] * len(y)), r"Y must hold integer labels"),
])
def test_lf_quality_checks_gold_labels_as_score_does(data, bad, message):
    # a non-integer gold label was counted as wrong everywhere ("Emp. Acc." 0), silently
    from crowd_keras.integrations.snorkel import lf_quality
    L, y, fitted = data
    with pytest.raises(CrowdDataError, match=message):
        lf_quality(L, bad(y), model=fitted)
    with pytest.raises(CrowdDataError, match=message):
        fitted.score(L, bad(y))
    table = lf_quality(L, np.where(np.arange(len(y)) < 20, -1, y), model=fitted)  # -1: no gold
    assert table["Correct"].iloc[0] + table["Incorrect"].iloc[0] == (L[20:, 0] >= 0).sum()


def test_lf_quality_infers_the_cardinality_only_from_labels(data):
    # inferred from max(L) + 1: a uint8 L's 255 (a wrapped -1) made 256 classes and read
    # every abstain as a vote (Coverage 1.0), inf raised OverflowError, a stray 1000 fitted
    # 1001 classes for a minute
    from crowd_keras.integrations.snorkel import lf_quality
    L, _, _ = data
    with pytest.raises(CrowdDataError, match=r"L has dtype uint8, which cannot hold -1"):
        lf_quality(L.astype(np.uint8))
    with pytest.raises(CrowdDataError, match=r"L has inf at row 0, column 0"):
        lf_quality(np.where(np.arange(L.size).reshape(L.shape) == 0, np.inf, L))
    stray = L.copy()
    stray[3, 2] = 1000
    with pytest.raises(CrowdDataError, match=r"label 1000 at row 3, column 2: .*1001 classes "
                                             r"for 3 distinct labels; pass cardinality="):
        lf_quality(stray)
    table = lf_quality(L.astype(np.int16))
    assert len(table["Est. Confusion"].iloc[0]) == 2     # two classes inferred
    np.testing.assert_allclose(table["Coverage"], (L >= 0).mean(axis=0))


def test_lf_quality_refuses_a_method_beside_a_fitted_model(data):
    # method= was ignored silently when model= was given: the table reported the model's
    # own method, not the one asked for
    from crowd_keras.integrations.snorkel import lf_quality
    L, _, _ = data
    fitted = CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)
    with pytest.raises(TypeError, match=r"lf_quality takes model= or method=, not both"):
        lf_quality(L, model=fitted, method="majority_vote")
    alone = lf_quality(L, method="dawid_skene")         # without a model, method is used
    assert len(alone) == L.shape[1]


def test_the_tutorial_example_uses_the_public_import_path(monkeypatch):
    # docs/tutorials/snorkel.md sends readers to this example: it imported the adapter as
    # integrations.snorkel, a path only a repository checkout has (a second copy of the
    # module: its CrowdLabelModel was not crowd_keras.integrations.snorkel's)
    import importlib
    import sys

    from conftest import ROOT
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    sys.modules.pop("snorkel_youtube_spam", None)
    example = importlib.import_module("snorkel_youtube_spam")
    assert example.CrowdLabelModel is CrowdLabelModel


def test_settings_given_as_numpy_values_are_saved(data, tmp_path):
    # e.g. a class prior as an array or max_iter from a numpy grid: the fit worked, save
    # raised "a setting is not plain JSON (Object of type ndarray ...)"
    L, _, _ = data
    model = CrowdLabelModel(cardinality=2, method="dawid_skene", class_prior=np.array([0.4, 0.6]),
                            max_iter=np.int64(20), smoothing=np.float32(0.05))
    model.fit(L, progress_bar=False)
    model.save(tmp_path / "model.npz")
    loaded = CrowdLabelModel().load(tmp_path / "model.npz")
    assert loaded.method_kwargs == {"class_prior": [0.4, 0.6], "max_iter": 20,
                                    "smoothing": pytest.approx(0.05)}
    assert loaded.label_model_.max_iter == 20
    np.testing.assert_allclose(loaded.predict_proba(L[::-1]), model.predict_proba(L[::-1]))


def test_lf_quality_checks_the_model_it_is_given(data):
    # an unfitted model raised AttributeError ('n_functions_'), another cardinality than the
    # model's mixed k-class vote counts with the model's own tables, silently
    from crowd_keras.errors import NotFittedError
    from crowd_keras.integrations.snorkel import lf_quality
    L, _, fitted = data
    with pytest.raises(NotFittedError, match="not fitted"):
        lf_quality(L, model=CrowdLabelModel())
    with pytest.raises(TypeError, match="model must be a fitted CrowdLabelModel, got LabelModel"):
        lf_quality(L, model=LabelModel(cardinality=2, verbose=False))
    with pytest.raises(ValueError, match="cardinality=3 but the model was fitted with "
                                         "cardinality 2"):
        lf_quality(L, model=fitted, cardinality=3)
    assert len(lf_quality(L, model=fitted, cardinality=2)["Est. Confusion"].iloc[0]) == 2


def test_lf_quality_says_its_own_fit_refused_l():
    # LFAnalysis summarises 2 functions or an all-abstain L; lf_quality fits a label model for
    # Est. Acc. and raised fit's "L_train should have ...", a name its caller never used
    from crowd_keras.integrations.snorkel import lf_quality
    L, y = both_class_functions(m=2)
    with pytest.raises(CrowdDataError, match=r"lf_quality fits CrowdLabelModel\(method='auto'\) "
                                             r"to L for Est\. Acc\..*at least 3 labeling "
                                             r"functions \(got 2.*pass model="):
        lf_quality(L, y)
    with pytest.raises(CrowdDataError, match=r"lf_quality fits .* every entry is -1"):
        lf_quality(np.full((4, 3), -1), cardinality=2)
    assert len(lf_quality(L, y, method="majority_vote")) == 2     # the way out it names


@pytest.mark.parametrize("k", [2, 3, 5])
def test_lf_quality_is_lf_analysis_but_for_the_documented_emp_acc(k):
    # Snorkel's LFAnalysis is the oracle: a function that never votes, rows where all
    # abstain, Y with -1; the differences are those docs/tutorials/snorkel.md states
    from snorkel.labeling import LFAnalysis
    from crowd_keras.integrations.snorkel import lf_quality
    rng = np.random.default_rng(k)
    L = np.where(rng.random((60, 5)) < 0.5, rng.integers(0, k, (60, 5)), -1)
    L[:, 1], L[:6] = -1, -1                        # never votes; all abstain
    L[6, 3], L[7:, 3] = 0, -1                      # votes once, where Y is -1
    y = rng.integers(0, k, 60)
    y[[6, 8, 9]] = -1
    ours = lf_quality(L, y, cardinality=k, method="majority_vote")
    theirs = LFAnalysis(L).lf_summary(y)
    assert ours["Polarity"].tolist() == theirs["Polarity"].tolist()
    for col in ["Coverage", "Overlaps", "Conflicts", "Correct", "Incorrect"]:
        np.testing.assert_allclose(ours[col].to_numpy(float), theirs[col].to_numpy(float))
    known = (L >= 0) & (y >= 0)[:, None]
    right = ((L == y[:, None]) & known).sum(0)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(ours["Emp. Acc."], right / known.sum(0))   # NaN: 0/0
    assert np.isnan(ours["Emp. Acc."].iloc[[1, 3]]).all()
    assert (theirs["Emp. Acc."].iloc[[1, 3]] == 0).all()                     # Snorkel's 0
    assert np.isnan(ours["Est. Acc."].iloc[1])                                # never votes


def test_lf_quality_with_a_gold_class_no_function_votes_says_to_pass_cardinality():
    # LFAnalysis counts Y's classes whatever L votes; lf_quality inferred max(L) + 1 = 2
    # classes and refused Y's 2 as "labels are 0..1", after a whole fit, with no way out named
    from crowd_keras.integrations.snorkel import lf_quality
    L, y = both_class_functions()
    y3 = np.where(np.arange(len(y)) % 7 == 0, 2, y)
    with pytest.raises(CrowdDataError, match=r"Y has 2 at position 0; labels are 0\.\.1.*"
                                             r"inferred from L as max\(L\) \+ 1 \(no function "
                                             r"votes class 2\); pass cardinality="):
        lf_quality(L, y3)
    table = lf_quality(L, y3, cardinality=3)
    assert (table["Correct"] + table["Incorrect"]).tolist() == (L >= 0).sum(0).tolist()


def test_score_with_no_data_point_left_raises_for_accuracy_too_as_snorkel(data):
    # Every row a tie under "abstain" (here: every function abstains): Snorkel's accuracy
    # raises as its other metrics do; ours gave NaN for accuracy and raised for the rest
    from snorkel.labeling.model import MajorityLabelVoter
    L, y, fitted = data
    silent, gold = np.full((4, L.shape[1]), -1), np.array([0, 1, 1, 0])
    with pytest.raises(ValueError):
        MajorityLabelVoter(cardinality=2).score(silent, gold, metrics=["accuracy"])
    for metric in ["accuracy", "f1", "roc_auc"]:
        with pytest.raises(ValueError, match=r"no data point to score: all 4 have gold label "
                                             r"-1 or prediction -1"):
            fitted.score(silent, gold, metrics=["coverage", metric])
    assert fitted.score(silent, gold, metrics=["coverage"]) == {"coverage": 0.0}
    assert fitted.score(silent, gold, tie_break_policy="random")["accuracy"] >= 0
    with pytest.raises(ValueError, match="Unrecognized metric: speed"):   # named first
        fitted.score(silent, gold, metrics=["accuracy", "speed"])
    assert fitted.score(L, y, metrics=iter(["accuracy"])).keys() == {"accuracy"}


def test_an_unknown_constructor_argument_is_refused_naming_crowd_label_model(data):
    # Snorkel refuses LabelModel(foo=1) at once; ours failed deep in the fit (after the
    # abstention check), naming AbstainAwareDawidSkene or AutoLabelModel, picked for the user
    from crowd_keras.integrations.snorkel import UnexpectedArgumentError
    L, _, _ = data
    with pytest.raises(TypeError):
        LabelModel(cardinality=2, foo=1)
    for model in (CrowdLabelModel(foo=1), CrowdLabelModel(method="glad", smoothing=0.1)):
        with pytest.raises(UnexpectedArgumentError, match=r"CrowdLabelModel got an unexpected "
                                                          r"keyword argument '(foo|smoothing)'"
                                                          r".*method='(auto|glad)'.*max_iter"):
            model.fit(L, progress_bar=False)
    assert CrowdLabelModel(method="glad", max_iter=3).fit(L, progress_bar=False).label_model_ \
        .max_iter == 3


@pytest.mark.parametrize("policy", ["abstain", "random", "true-random"])
def test_probs_to_preds_refuses_a_probability_that_is_not_finite(policy):
    # NaN is no row maximum: the row read as class 0 under every policy (Snorkel's gives -1
    # under "abstain" and fails inside its tie code under the others)
    from crowd_keras.integrations.snorkel import probs_to_preds
    from snorkel.utils import probs_to_preds as snorkel_probs_to_preds
    probs = np.array([[0.2, 0.8], [0.5, 0.5], [np.nan, 0.5], [np.inf, 0.1]])
    if policy == "abstain":
        assert snorkel_probs_to_preds(probs, policy)[2:].tolist() == [-1, -1]
    with pytest.raises(ValueError, match=r"probs has nan at row 2, column 0: probabilities "
                                         r"must be finite"):
        probs_to_preds(probs, policy)
    np.testing.assert_array_equal(probs_to_preds(probs[:2], policy, seed=0)[0], 1)


def test_load_leaves_no_fitted_attribute_of_an_earlier_fit(data, tmp_path):
    # Snorkel's load replaces the saved attributes; ours kept this object's own train_config_
    # and covote_misfit_ from its earlier fit beside the loaded model's weights
    L, _, _ = data
    # one-class functions (the co-vote misfit is checked): three vote 1, three vote 0
    rng = np.random.default_rng(1)
    y, target = rng.integers(0, 2, 1000), np.array([1, 1, 1, 0, 0, 0])
    hit = rng.random((len(y), 6)) < np.where(y[:, None] == target, 0.5, 0.08)
    one_class = np.where(hit, target, -1)
    saved = CrowdLabelModel().fit(L, progress_bar=False, n_epochs=7, mu_eps=0.2)
    assert saved.covote_misfit_ is None
    saved.save(tmp_path / "a.npz")
    other = CrowdLabelModel().fit(one_class, progress_bar=False, n_epochs=50)
    assert other.covote_misfit_ is not None and other.train_config_["n_epochs"] == 50
    other.load(tmp_path / "a.npz")
    assert other.covote_misfit_ is None and not hasattr(other, "train_config_")
    checked = CrowdLabelModel().fit(one_class, progress_bar=False)
    checked.save(tmp_path / "b.npz")
    assert CrowdLabelModel().load(tmp_path / "b.npz").covote_misfit_ == \
        pytest.approx(checked.covote_misfit_)


def test_a_cardinality_changed_after_fit_is_refused_until_the_next_fit(data, tmp_path):
    # Snorkel's predict_proba fails once cardinality no longer fits its parameters; ours
    # answered L_train from the fit's cache with the old classes, and save wrote a file
    # that load refused (conditional_probs of the old shape under the new cardinality)
    from crowd_keras.integrations.snorkel import lf_quality
    L, _, _ = data
    model = CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)
    model.set_params(cardinality=3)
    refit = r"cardinality is 3 but the model was fitted with cardinality 2: fit it again"
    for call in (lambda: model.predict_proba(L), lambda: model.predict(L[:5]),
                 lambda: model.save(tmp_path / "m.npz"), lambda: lf_quality(L, model=model)):
        with pytest.raises(ValueError, match=refit):
            call()
    assert not (tmp_path / "m.npz").exists()
    assert model.fit(L, progress_bar=False).predict_proba(L).shape == (len(L), 3)


def test_conditional_probabilities_are_never_negative_and_keep_mu_eps():
    # Snorkel's own test_conditional_probs asks min >= 0; where the clipped vote
    # probabilities of a column overfilled it they were rescaled, to 0.0099 < mu_eps, and
    # abstain was 1 minus their sum: -2e-16 here, which np.random.choice(p=...) refuses
    L = np.array([[0, 2, 1, 0, 0], [1, 1, 2, 2, 1], [2, 2, 1, 2, 0], [1, 0, 0, 2, 2],
                  [-1, 2, 0, 2, 2], [2, 2, 0, 1, 2], [2, 0, 1, 2, 0]])
    for mu_eps, floor in ((None, 0.01), (0.05, 0.05)):   # default: min(0.01, 10^-ceil(log10 7))
        model = CrowdLabelModel(cardinality=3).fit(L, progress_bar=False, mu_eps=mu_eps)
        cprobs = model.get_conditional_probs()
        assert cprobs.min() >= 0.0
        votes = cprobs[:, 1:]
        assert votes.min() >= floor - 1e-12 and votes.max() <= 1 - floor + 1e-12
        np.testing.assert_allclose(cprobs.sum(axis=1), 1.0)
        np.random.default_rng(0).choice(4, p=cprobs[1, :, 2])


def test_an_argument_of_the_model_auto_did_not_fit_names_both_models(data):
    # method="auto" accepts the arguments of the crowd model and of the labeling-function
    # model; one the model fitted to this L does not take failed inside its constructor
    # ("AbstainAwareDawidSkene.__init__() got an unexpected keyword argument"), in memory
    # and on Dask after the partitioned abstention check
    from crowd_keras.integrations.snorkel import UnexpectedArgumentError
    da = pytest.importorskip("dask.array")
    L, _, fitted = data
    # the fixture's functions vote both classes, abstaining at random: crowd answers
    assert type(fitted.label_model_).__name__ == "AutoLabelModel"
    rng = np.random.default_rng(1)
    y, target = rng.integers(0, 2, 600), np.array([1, 1, 1, 0, 0, 0])
    one_class = np.where(rng.random((600, 6)) < np.where(y[:, None] == target, 0.5, 0.08),
                         target, -1)
    cases = [(one_class, {"min_heldout": 10}, r"fits 'abstain_dawid_skene' to this L \(its "
              r"votes read as labeling functions\), which takes no argument 'min_heldout': "
              r"that is an argument of 'auto' \(AutoLabelModel\).*leave 'min_heldout' out"),
             (L, {"anchor": "votes"}, r"fits 'auto' to this L \(its votes read as crowd "
              r"answers\), which takes no argument 'anchor': that is an argument of "
              r"'abstain_dawid_skene'.*pass method='abstain_dawid_skene'")]
    for matrix, kwargs, message in cases:
        for given in (matrix, da.from_array(matrix, chunks=200)):
            with pytest.raises(UnexpectedArgumentError, match=message):
                CrowdLabelModel(**kwargs).fit(given, progress_bar=False)
    named = CrowdLabelModel(method="abstain_dawid_skene", anchor="votes").fit(
        L, progress_bar=False)
    assert named.label_model_.anchor == "votes"


@pytest.mark.parametrize("method", ["auto", "dawid_skene", "majority_vote"])
def test_a_function_that_never_voted_in_the_fit_does_not_move_new_predictions(method, tmp_path):
    # Snorkel's LabelModel ignores a function without a vote in L_train when it votes in a
    # new L (its parameters carry no information); the adapter read its votes through the
    # model's prior guess of it, and the default model flipped rows on those votes alone
    L, y = both_class_functions()
    L[:, 4] = -1                                   # never votes in the fit
    new = L.copy()
    new[:, 4] = 1 - y                              # votes, always wrong, on new rows
    snorkel = LabelModel(cardinality=2, verbose=False)
    snorkel.fit(L, progress_bar=False, seed=0, n_epochs=200)
    np.testing.assert_allclose(snorkel.predict_proba(new), snorkel.predict_proba(L), atol=1e-9)
    fitted = CrowdLabelModel(cardinality=2, method=method).fit(L, progress_bar=False)
    assert np.isnan(fitted.get_weights()[4])
    np.testing.assert_array_equal(fitted.predict_proba(new), fitted.predict_proba(L))
    np.testing.assert_array_equal(fitted.predict(new), fitted.predict(L))
    fitted.save(tmp_path / "m.npz")
    loaded = CrowdLabelModel().load(tmp_path / "m.npz")
    np.testing.assert_allclose(loaded.predict_proba(new), fitted.predict_proba(L), atol=1e-12)
    assert (new[:, 4] != -1).all()                 # the caller's array is left as it was
