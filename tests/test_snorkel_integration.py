"""CrowdLabelModel against the real Snorkel package: same surface, outputs that plug into
Snorkel's utilities, bad label matrices, persistence, and accuracy against voting."""
import inspect
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, require_data
from crowd_keras import CrowdDataError
from crowd_keras.aggregation import LabelModel as CrowdKerasLabelModel
from crowd_keras.datasets import load_labelme, load_truth_inference, load_wrench
from crowd_keras.integrations.snorkel import (CrowdLabelModel, check_label_matrix, lf_quality,
                                              probs_to_preds, register_method)

from snorkel.analysis import Scorer
from snorkel.labeling import LFAnalysis, filter_unlabeled_dataframe
from snorkel.labeling.model import LabelModel, MajorityLabelVoter
from snorkel.utils import probs_to_preds as snorkel_probs_to_preds

sys.path.insert(0, str(ROOT / "examples"))


def lf_matrix(n=400, seed=0):
    """Binary truth and six one-class labeling functions; row 5 and 9 abstain everywhere."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    target = np.array([1, 1, 1, 0, 0, 0])
    p = np.where(y[:, None] == target[None, :], 0.5, 0.08)
    L = np.where(rng.random((n, 6)) < p, target[None, :], -1)
    L[[5, 9]] = -1
    return L, y


@pytest.fixture(scope="module")
def fitted():
    L, y = lf_matrix()
    return L, y, CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)


# ----------------------------------------------------------------------------- surface
@pytest.mark.parametrize("name", ["fit", "predict", "predict_proba", "score", "get_weights",
                                  "get_conditional_probs", "save", "load"])
def test_same_arguments_and_defaults_as_snorkel(name):
    theirs = inspect.signature(getattr(LabelModel, name)).parameters
    ours = inspect.signature(getattr(CrowdLabelModel, name)).parameters
    for arg, param in theirs.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD or arg == "self":
            continue
        assert arg in ours, f"{name}() lacks {arg}"
        assert ours[arg].default == param.default, f"{name}({arg}=...) default differs"
    ctor = inspect.signature(CrowdLabelModel).parameters
    assert ctor["cardinality"].default == 2


def test_accepts_every_snorkel_train_setting():
    L, y = lf_matrix(200)
    model = CrowdLabelModel(cardinality=2, verbose=True, device="cpu").fit(
        L_train=L, Y_dev=None, class_balance=None, progress_bar=False, n_epochs=20, lr=0.01,
        l2=0.0, optimizer="sgd", optimizer_config=None, lr_scheduler="constant",
        lr_scheduler_config=None, prec_init=0.7, seed=123, log_freq=10, mu_eps=None)
    assert model.label_model_.max_iter == 20  # n_epochs bounds the EM iterations
    with pytest.raises(TypeError, match="n_epoch"):
        CrowdLabelModel().fit(L, n_epoch=5)


def test_outputs_have_snorkels_shapes_and_types(fitted):
    L, y, model = fitted
    probs = model.predict_proba(L)
    assert probs.shape == (len(L), 2) and np.allclose(probs.sum(axis=1), 1)
    preds, probs2 = model.predict(L, return_probs=True)
    assert preds.shape == (len(L),) and preds.dtype.kind == "i"
    np.testing.assert_array_equal(probs, probs2)
    cp = model.get_conditional_probs()
    assert cp.shape == (6, 3, 2)
    np.testing.assert_allclose(cp.sum(axis=1), 1.0)
    weights = model.get_weights()
    assert weights.shape == (6,) and np.all((weights > 0) & (weights <= 1))
    # weights follow the true accuracy of each function when it votes
    emp = np.array([(L[L[:, j] >= 0, j] == y[L[:, j] >= 0]).mean() for j in range(6)])
    assert np.abs(weights - emp).max() < 0.1
    # a function voting 1 fires far more often when the truth is 1 (abstain is row 0)
    assert cp[0, 2, 1] > 3 * cp[0, 2, 0]


def test_outputs_plug_into_snorkel_utilities(fitted):
    L, y, model = fitted
    df = pd.DataFrame({"text": [f"comment {i}" for i in range(len(L))]})
    probs = model.predict_proba(L)
    df_f, probs_f = filter_unlabeled_dataframe(df, probs, L)
    covered = (L != -1).any(axis=1)
    assert len(df_f) == covered.sum() == len(probs_f)
    assert "comment 5" not in set(df_f.text)  # the all-abstain rows are the ones dropped
    for policy in ("abstain", "random"):
        np.testing.assert_array_equal(model.predict(L, tie_break_policy=policy),
                                      snorkel_probs_to_preds(probs, policy))


def test_probs_to_preds_resolves_ties_exactly_like_snorkel():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=500)
    probs[::3, :2] = probs[::3, :2].mean(axis=1, keepdims=True)  # two-way ties
    probs[::7] = 0.25  # four-way ties
    for policy in ("abstain", "random"):
        np.testing.assert_array_equal(probs_to_preds(probs, policy),
                                      snorkel_probs_to_preds(probs, policy))
    picks = probs_to_preds(probs, "true-random", seed=1)
    assert np.all(probs[np.arange(500), picks] >= probs.max(axis=1) - 1e-5)
    # without a seed, NumPy's global generator as in Snorkel: np.random.seed gives its picks
    # (they came from a fresh generator, which np.random.seed did not reach)
    state = np.random.get_state()
    try:
        for s in (0, 7):
            np.random.seed(s)
            expected = snorkel_probs_to_preds(probs, "true-random")
            np.random.seed(s)
            np.testing.assert_array_equal(probs_to_preds(probs, "true-random"), expected)
    finally:
        np.random.set_state(state)
    with pytest.raises(ValueError, match="tie_break_policy"):
        probs_to_preds(probs, "coin")


@pytest.mark.parametrize("policy", ["abstain", "random"])
def test_score_matches_snorkels_scorer(fitted, policy):
    L, y, model = fitted
    metrics = ["accuracy", "coverage", "precision", "recall", "f1", "f1_macro", "roc_auc",
               "matthews_corrcoef"]
    ours = model.score(L, y, metrics=metrics, tie_break_policy=policy)
    preds, probs = model.predict(L, return_probs=True, tie_break_policy=policy)
    theirs = Scorer(metrics=metrics).score(y, preds, probs)
    assert ours.keys() == theirs.keys()
    for name in metrics:
        assert ours[name] == pytest.approx(theirs[name]), name
    if policy == "abstain":  # all-abstain rows are ties: left out, as in Snorkel
        assert ours["coverage"] == pytest.approx((L != -1).any(axis=1).mean())
    with pytest.raises(ValueError, match="Unrecognized metric"):
        model.score(L, y, metrics=["accuracy", "speed"])


def test_majority_vote_method_is_snorkels_majority_label_voter():
    rng = np.random.default_rng(1)
    L = np.where(rng.random((300, 7)) < 0.3, rng.integers(0, 3, size=(300, 7)), -1)
    ours = CrowdLabelModel(cardinality=3, method="majority_vote").fit(L, progress_bar=False)
    theirs = MajorityLabelVoter(cardinality=3)
    np.testing.assert_allclose(ours.predict_proba(L), theirs.predict_proba(L))
    np.testing.assert_array_equal(ours.predict(L, tie_break_policy="random"),
                                  theirs.predict(L, tie_break_policy="random"))


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("L, message", [
    (np.array([[0, -2], [1, 0]]), r"-2 at row 0, column 1: below -1"),
    (np.array([[0, 1], [2, 0]]), r"2 at row 1, column 0 but cardinality=2"),
    (np.array([[0.0, 0.5], [1.0, 0.0]]), r"non-integer value 0.5 at row 0, column 1"),
    (np.array([[0.0, 1.0], [np.nan, 0.0]]), r"nan at row 1, column 0"),
    (np.array([[0.0, np.inf]]), r"inf at row 0, column 1"),
    (np.array([0, 1, -1]), r"must be 2-d.*reshape\(-1, 1\)"),
    (np.zeros((2, 2, 2), int), r"must be 2-d"),
    (np.array([["a", "b"]]), r"non-numeric"),
    (np.array([[0, None]], dtype=object), r"nan at row 0, column 1; Snorkel marks an abstain"),
    (np.array([[1e20, 0.0]]), r"1e\+20 at row 0, column 0 but cardinality=2"),
    (np.array([[True, False]]), r"dtype bool"),
    (np.zeros((3, 0), int), r"no labeling functions"),
])
def test_bad_label_matrices_raise_a_clear_error(L, message):
    with pytest.raises(CrowdDataError, match=message):
        CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)


def test_other_bad_input(fitted):
    L, y, model = fitted
    import scipy.sparse as sp
    with pytest.raises(CrowdDataError, match="sparse"):
        check_label_matrix(sp.csr_matrix(L + 1), 2)
    with pytest.raises(CrowdDataError, match="has 5 labeling functions but .* fitted with 6"):
        model.predict_proba(L[:, :5])
    with pytest.raises(CrowdDataError, match="no votes"):
        CrowdLabelModel().fit(-np.ones((4, 3), int))
    with pytest.raises(CrowdDataError, match="class_balance"):
        CrowdLabelModel().fit(L, class_balance=[0.7, 0.7])
    with pytest.raises(CrowdDataError, match="Y has 3 labels"):
        model.score(L, y[:3])
    with pytest.raises(RuntimeError, match="not fitted"):
        CrowdLabelModel().predict(L)
    with pytest.raises(ValueError, match="unknown method"):
        CrowdLabelModel(method="oracle").fit(L)
    assert model.predict_proba(np.zeros((0, 6), int)).shape == (0, 2)


def test_integral_floats_and_frames_are_read_as_labels(fitted):
    L, y, model = fitted
    np.testing.assert_array_equal(model.predict_proba(L.astype(float)), model.predict_proba(L))
    np.testing.assert_array_equal(model.predict_proba(pd.DataFrame(L)), model.predict_proba(L))


def test_all_abstain_rows_keep_their_place_and_follow_the_class_balance():
    L, y = lf_matrix()
    model = CrowdLabelModel().fit(L, progress_bar=False)
    probs = model.predict_proba(L)
    np.testing.assert_allclose(probs[[5, 9]], 0.5)  # uniform: a tie, as in Snorkel
    assert list(model.predict(L)[[5, 9]]) == [-1, -1]
    balanced = CrowdLabelModel().fit(L, class_balance=[0.7, 0.3], progress_bar=False)
    np.testing.assert_allclose(balanced.predict_proba(L)[[5, 9]], [[0.7, 0.3], [0.7, 0.3]])
    dev = CrowdLabelModel().fit(L, Y_dev=np.array([0, 0, 0, 1]), progress_bar=False)
    np.testing.assert_allclose(dev.predict_proba(L)[5], [0.75, 0.25])


def test_a_function_that_never_votes_has_no_influence_and_no_weight():
    L, y = lf_matrix()
    silent = np.hstack([L, -np.ones((len(L), 1), int)])
    base = CrowdLabelModel().fit(L, progress_bar=False)
    more = CrowdLabelModel().fit(silent, progress_bar=False)
    np.testing.assert_allclose(more.predict_proba(silent), base.predict_proba(L), atol=1e-10)
    assert np.isnan(more.get_weights()[-1])
    assert more.get_conditional_probs()[-1, 0].min() > 0.99  # it abstains, whatever the class


# ----------------------------------------------------------------------------- persistence
@pytest.mark.parametrize("method", ["dawid_skene", "majority_vote"])
def test_save_and_load_round_trip_without_pickle(tmp_path, method):
    L, y = lf_matrix()
    model = CrowdLabelModel(cardinality=2, method=method, smoothing=0.05) if method == \
        "dawid_skene" else CrowdLabelModel(cardinality=2, method=method)
    model.fit(L, class_balance=[0.6, 0.4], progress_bar=False)
    path = tmp_path / "label_model.npz"
    model.save(path)
    assert path.read_bytes()[:2] == b"PK"  # a zip of .npy arrays
    with np.load(path, allow_pickle=False) as npz:  # no pickled object inside
        assert "__meta__" in npz.files
    loaded = CrowdLabelModel().load(path)
    assert loaded.method == method and loaded.cardinality == 2
    np.testing.assert_array_equal(loaded.predict_proba(L), model.predict_proba(L))
    np.testing.assert_array_equal(loaded.get_weights(), model.get_weights())
    np.testing.assert_array_equal(loaded.get_conditional_probs(), model.get_conditional_probs())
    bad = tmp_path / "other.npz"
    np.savez(bad, x=np.zeros(2))
    with pytest.raises(CrowdDataError, match="not a saved CrowdLabelModel"):
        CrowdLabelModel().load(bad)


@pytest.mark.parametrize("method", ["ibcc", "ebcc", "bwa", "mixture_of_groups"])
def test_save_and_load_keep_what_crowd_models_predict_new_rows_with(tmp_path, method):
    """The Bayesian models answer new rows from their last EM state (a tuple of arrays), the
    mixture of groups from who labelled in fit: both survive save/load."""
    from crowd_keras.datasets import simulate_crowd

    ann = simulate_crowd(n_items=150, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=1).annotations
    L = -np.ones((ann.n_items, ann.n_annotators), int)
    L[ann.items, ann.annotators] = ann.labels
    model = CrowdLabelModel(cardinality=3, method=method).fit(L, progress_bar=False)
    model.save(tmp_path / "m.npz")
    loaded = CrowdLabelModel().load(tmp_path / "m.npz")
    np.testing.assert_allclose(loaded.predict_proba(L[:40]), model.predict_proba(L[:40]),
                               atol=1e-12)
    np.testing.assert_array_equal(loaded.predict(L), model.predict(L))


# ----------------------------------------------------------------------------- features
class _FeatureVote(CrowdKerasLabelModel):
    """Toy feature-aware model: votes, plus one extra vote for class 1 where feature 0 > 0."""

    def fit(self, annotations, features=None):
        self.annotations_ = annotations
        self.seen_features_ = features
        self.posteriors_ = self._posteriors_for(annotations, features)
        self.confusion_matrices_ = np.tile(np.eye(annotations.n_classes),
                                           (annotations.n_annotators, 1, 1))
        self.class_priors_ = np.full(annotations.n_classes, 1 / annotations.n_classes)
        return self

    def predict_proba(self, annotations=None, features=None):
        if annotations is None:
            return self.posteriors_.copy()
        return self._posteriors_for(annotations, features)

    def _posteriors_for(self, ann, features):
        counts = ann.label_counts() + 0.5
        counts[:, 1] += features[:, 0] > 0
        return counts / counts.sum(axis=1, keepdims=True)


def test_features_reach_feature_aware_methods_only():
    L, y = lf_matrix(100)
    X = np.where(y[:, None] == 1, 1.0, -1.0) * np.ones((100, 3))
    with pytest.raises(ValueError, match="does not use item features"):
        CrowdLabelModel().fit(L, features=X, progress_bar=False)
    register_method("toy_feature_vote", _FeatureVote)
    model = CrowdLabelModel(method="toy_feature_vote").fit(L, features=X, progress_bar=False)
    assert model.label_model_.seen_features_ is not None
    assert (model.predict(L, features=X, tie_break_policy="random") == y).mean() > 0.9
    with pytest.raises(CrowdDataError, match="one row per row of L"):
        CrowdLabelModel(method="toy_feature_vote").fit(L, features=X[:10])


# ----------------------------------------------------------------------------- analysis
@pytest.mark.filterwarnings("ignore::FutureWarning")  # scipy, inside LFAnalysis
def test_lf_quality_matches_lf_summary_and_estimates_accuracy_without_gold():
    from youtube_spam_lfs import LFS, apply_lfs, load_youtube_spam
    df_train, _ = load_youtube_spam(require_data("youtube_spam"))
    L = apply_lfs(df_train)
    y = df_train.label.to_numpy()
    ours = lf_quality(L, Y=y, lfs=LFS)
    theirs = LFAnalysis(L, LFS).lf_summary(y)
    assert list(ours.index) == list(theirs.index)
    for col in ("j", "Coverage", "Overlaps", "Conflicts", "Correct", "Incorrect", "Emp. Acc."):
        np.testing.assert_allclose(ours[col].to_numpy(float), theirs[col].to_numpy(float),
                                   err_msg=col)
    assert [list(p) for p in ours["Polarity"]] == [list(p) for p in theirs["Polarity"]]
    # no gold needed for the estimate, and it tracks the measured accuracy
    blind = lf_quality(L, lfs=LFS)
    assert "Emp. Acc." not in blind
    assert np.abs(blind["Est. Acc."] - theirs["Emp. Acc."]).mean() < 0.1
    confusion = np.array(blind["Est. Confusion"].tolist())
    assert confusion.shape == (len(LFS), 2, 3)
    np.testing.assert_allclose(confusion.sum(axis=2), 1.0, atol=1e-3)


# ----------------------------------------------------------------------------- real data
def test_youtube_spam_functions_beat_voting_and_snorkel():
    from youtube_spam_lfs import apply_lfs, load_youtube_spam
    df_train, df_test = load_youtube_spam(require_data("youtube_spam"))
    L_train, L_test = apply_lfs(df_train), apply_lfs(df_test)
    y = df_test.label.to_numpy()
    ours = CrowdLabelModel().fit(L_train, progress_bar=False)
    acc = ours.score(L_test, y, tie_break_policy="random")["accuracy"]
    mv = MajorityLabelVoter().score(L_test, y, tie_break_policy="random")["accuracy"]
    theirs = LabelModel(verbose=False)
    theirs.fit(L_train, progress_bar=False, seed=123)
    snorkel_acc = theirs.score(L_test, y, tie_break_policy="random")["accuracy"]
    assert acc >= max(mv, snorkel_acc, 0.89), (acc, mv, snorkel_acc)


REAL_SETS = [pytest.param(lambda: _wrench("sms", 2), "f1", id="wrench-sms"),
             pytest.param(lambda: _truth("dog"), "accuracy", id="dog"),
             pytest.param(lambda: _labelme(), "accuracy", id="labelme")]


def _wrench(name, k):
    folder = require_data("wrench", name)
    train, test = load_wrench(folder, "train"), load_wrench(folder, "test")
    return k, train.L, test.L, test.y


def _truth(name):
    ann, truth = load_truth_inference(require_data("truth_inference", name))
    L = ann.to_label_matrix()
    return ann.n_classes, L, L, truth


def _labelme():
    data = load_labelme(require_data("labelme"))
    L = data.annotations.to_label_matrix()
    return data.annotations.n_classes, L, L, data.y_train


@pytest.mark.parametrize("load, metric", REAL_SETS)
def test_never_below_majority_vote_on_real_label_matrices(load, metric):
    k, L_fit, L_score, y = load()
    known = y >= 0
    ours = CrowdLabelModel(cardinality=k).fit(L_fit, progress_bar=False)
    got = ours.score(L_score[known], y[known], metrics=[metric], tie_break_policy="random")
    mv = MajorityLabelVoter(cardinality=k).score(L_score[known], y[known], metrics=[metric],
                                                 tie_break_policy="random")
    assert got[metric] >= mv[metric], (got, mv)


def test_works_without_snorkel_installed():
    code = (
        "import json, sys; sys.modules['snorkel'] = None\n"
        "import numpy as np\n"
        "from crowd_keras.integrations.snorkel import CrowdLabelModel\n"
        "L = np.array([[1, -1, -1], [-1, 0, -1], [1, -1, 0], [-1, -1, -1]] * 5)\n"
        "m = CrowdLabelModel().fit(L, progress_bar=False)\n"
        "print(json.dumps([m.predict(L).tolist(), m.score(L, np.array([1, 0, 1, 1] * 5))]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(ROOT), timeout=120)
    assert out.returncode == 0, out.stderr
    preds, score = json.loads(out.stdout)
    assert preds[:4] == [1, 0, 1, -1]  # all-abstain row: a tie, abstained under the default
    assert score == {"accuracy": 1.0}


@pytest.mark.slow
def test_the_youtube_spam_example_runs(capsys):
    import snorkel_youtube_spam
    assert snorkel_youtube_spam.main(["--data", str(require_data())]) == 0
    out = capsys.readouterr().out
    acc = {name: float(line.split("accuracy")[1].split()[0]) for line in out.splitlines()
           for name in ("majority vote", "Snorkel LabelModel", "CrowdLabelModel")
           if line.strip().startswith(name) and " accuracy " in line}
    assert acc["CrowdLabelModel"] >= max(acc["majority vote"], acc["Snorkel LabelModel"])
    assert "test accuracy" in out and "Est. Acc." in out
