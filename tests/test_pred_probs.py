"""fit(annotations, pred_probs=...): a classifier's probabilities as a learned per-item prior
(aggregation.em.ClassifierAnnotator) on the Dawid-Skene family and the Bayesian models."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.aggregation import (BWA, EBCC, IBCC, DawidSkene, GLAD, MajorityVote,
                                     OneCoinDawidSkene)
from crowd_keras.aggregation.em import Block, ClassifierAnnotator, run_em
from crowd_keras.datasets import simulate_crowd
from crowd_keras.errors import CrowdDataError

MODELS = [DawidSkene, OneCoinDawidSkene, IBCC, EBCC, BWA]
SEEDS = range(3)


def classifier(y, k, accuracy, confidence, rng):
    """Probabilities of a classifier whose top class is right with chance ``accuracy`` and
    that puts ``confidence`` on it."""
    n = len(y)
    top = np.where(rng.random(n) < accuracy, y, (y + rng.integers(1, k, n)) % k)
    p = np.full((n, k), (1 - confidence) / (k - 1))
    p[np.arange(n), top] = confidence
    return p


def crowd(seed, n_items=500):
    return simulate_crowd(n_items=n_items, n_classes=4, n_annotators=30, annotations_per_item=3,
                          annotator_accuracy=(0.4, 0.8), seed=seed)


@pytest.fixture(scope="module")
def crowds():
    out = []
    for seed in SEEDS:
        sim = crowd(seed)
        rng = np.random.default_rng(100 + seed)
        good = classifier(sim.y, 4, 0.8, 0.8, rng)
        random = rng.dirichlet(np.ones(4), len(sim.y))
        out.append((sim, good, random))
    return out


def accuracy(model, y):
    return float((model.predict() == y).mean())


@pytest.mark.parametrize("model_class", MODELS)
def test_a_good_classifier_raises_accuracy_and_a_random_one_costs_little(model_class, crowds):
    gains, losses = [], []
    for sim, good, random in crowds:
        alone = accuracy(model_class().fit(sim.annotations), sim.y)
        gains.append(accuracy(model_class().fit(sim.annotations, pred_probs=good), sim.y) - alone)
        losses.append(alone - accuracy(model_class().fit(sim.annotations, pred_probs=random),
                                       sim.y))
    # an 80%-accurate classifier beside three 40-80% annotators: a clear gain on every seed
    assert min(gains) > 0.03, gains
    # a classifier that ignores the truth gets (almost) no say
    # (plain Dawid-Skene has local optima: any nudge moves single seeds by a point or two)
    assert np.mean(losses) < 0.01 and max(losses) < 0.03, losses


def test_the_weight_is_learned_from_agreement_with_the_crowd(crowds):
    sim, _, random = crowds[0]
    rng = np.random.default_rng(7)
    fitted = {}
    for name, confidence in (("under", 0.5), ("calibrated", 0.8), ("over", 0.99)):
        p = classifier(sim.y, 4, 0.8 if name != "over" else 0.7, confidence, rng)
        fitted[name] = DawidSkene().fit(sim.annotations, pred_probs=p)
    fitted["random"] = DawidSkene().fit(sim.annotations, pred_probs=random)
    w = {name: m.classifier_weight_ for name, m in fitted.items()}
    # an under-confident classifier is sharpened, an over-confident one flattened, noise off
    assert w["under"] > w["calibrated"] > w["over"] > w["random"], w
    assert w["random"] < 0.1 and 0.5 < w["calibrated"] < 2.0, w
    q = {name: m.classifier_quality_ for name, m in fitted.items()}
    assert q["calibrated"] > 0.6 and q["random"] < 0.4, q


@pytest.mark.parametrize("model_class", [DawidSkene, IBCC, EBCC, BWA])
def test_a_split_fit_is_the_one_block_fit(model_class, crowds):
    sim, good, _ = crowds[0]
    ann = sim.annotations
    whole = model_class(max_iter=30, tol=0).fit(ann, pred_probs=good)
    parts = [np.flatnonzero(np.arange(ann.n_items) % 3 == r) for r in range(3)]
    blocks = [Block.from_annotations(ann.subset(rows), pred_probs=good[rows]) for rows in parts]
    run = run_em(ClassifierAnnotator(model_class(max_iter=30, tol=0)), blocks,
                 Block.from_annotations(ann).summary(4))
    post = np.zeros((ann.n_items, 4))
    for rows, latent in zip(parts, run.latents):
        post[rows] = run.runner.class_posteriors(latent)
    np.testing.assert_allclose(post, whole.posteriors_, atol=1e-8)
    assert run.state[1].weight == pytest.approx(whole.classifier_weight_, abs=1e-9)


@pytest.mark.parametrize("model_class", [DawidSkene, IBCC])
def test_a_classifier_biased_to_one_class_does_not_drag_the_class_prior(model_class, crowds):
    # the classifier's own class prior is divided out (p / p̄): the model's prior counts once
    for sim, good, _ in crowds:
        biased = good * np.array([4.0, 1.0, 1.0, 1.0])
        biased /= biased.sum(axis=1, keepdims=True)
        alone = model_class().fit(sim.annotations)
        model = model_class().fit(sim.annotations, pred_probs=biased)
        assert accuracy(model, sim.y) > accuracy(alone, sim.y) + 0.03
        shares = np.bincount(sim.y, minlength=4) / len(sim.y)
        assert np.abs(model.class_priors_ - shares).max() < 0.1, model.class_priors_


def test_gold_clamps_win_over_the_classifier(crowds):
    sim, good, _ = crowds[0]
    wrong = (sim.y + 1) % 4
    confident_wrong = np.eye(4)[wrong] * 0.96 + 0.01
    gold = np.full(len(sim.y), -1)
    gold[:50] = sim.y[:50]
    model = IBCC().fit(sim.annotations, gold=gold, pred_probs=confident_wrong)
    np.testing.assert_array_equal(model.predict()[:50], sim.y[:50])
    np.testing.assert_allclose(model.posteriors_[:50].max(axis=1), 1.0)


def test_items_without_annotations_follow_the_classifier():
    sim = crowd(0, n_items=300)
    ann = sim.annotations
    kept = ann.select(ann.items >= 20)          # items 0..19 keep no annotation
    p = classifier(sim.y, 4, 1.0, 0.9, np.random.default_rng(0))
    model = DawidSkene().fit(kept, pred_probs=p)
    np.testing.assert_array_equal(model.predict()[:20], sim.y[:20])


@pytest.mark.parametrize("k", [10, 20])
@pytest.mark.parametrize("model_class", [DawidSkene, OneCoinDawidSkene])
def test_a_confident_classifier_over_many_classes_gets_a_converged_weight(model_class, k):
    # a one-hot classifier, right on 80% of the items: one Newton step in w overshot where the
    # curvature collapses, and w went 1.0, 0, 1.2, 0, ... until max_iter (the labels then
    # depended on whether max_iter was even or odd)
    for seed in (3, 4):
        sim = simulate_crowd(n_items=600, n_classes=k, n_annotators=15, annotations_per_item=3,
                             seed=seed)
        rng = np.random.default_rng(k + seed)
        pred = np.where(rng.random(600) < 0.8, sim.y, rng.integers(k, size=600))
        alone = model_class().fit(sim.annotations)
        model = model_class().fit(sim.annotations, pred_probs=np.eye(k)[pred])
        assert model.n_iter_ < model.max_iter, (seed, model.classifier_weight_)
        # one-hot at 80%: the likelihood ratio of a right top class is about 0.8 / (0.2 / K)
        assert 0.1 < model.classifier_weight_ < 1.0, (seed, model.classifier_weight_)
        assert accuracy(model, sim.y) > accuracy(alone, sim.y), seed


@pytest.mark.parametrize("model_class", [DawidSkene, OneCoinDawidSkene])
def test_a_weak_confident_classifier_does_not_drag_the_crowd_down(model_class):
    # a shallow tree's out-of-fold probabilities (45% accurate on 3 classes, many rows 0/1):
    # taken at w = 1 before the first M-step, their log-ratios (about ±14 at the floor)
    # decided the first consensus, which then kept the tree's weight up (0.83 -> 0.63)
    from sklearn.tree import DecisionTreeClassifier

    from crowd_keras.features import out_of_fold

    sim = simulate_crowd(n_items=800, n_classes=3, n_annotators=20, annotations_per_item=3,
                         class_sep=1.0, seed=11)
    probs = out_of_fold(DecisionTreeClassifier(max_depth=8, random_state=0), sim.x,
                        sim.annotations)
    alone = accuracy(model_class().fit(sim.annotations), sim.y)
    model = model_class().fit(sim.annotations, pred_probs=probs)
    assert accuracy(model, sim.y) > alone - 0.01
    assert model.classifier_weight_ < 0.2


def test_a_classifier_without_evidence_keeps_its_weight():
    # rows all alike: log-ratios of 0, a flat objective in w; the weight took a unit step along
    # the sign of rounding noise every iteration (24 after 50 iterations)
    from crowd_keras.aggregation.classifier_prior import INITIAL_CLASSIFIER_WEIGHT

    sim = crowd(0, n_items=200)
    same = np.tile([0.1, 0.2, 0.3, 0.4], (200, 1))     # every row the classifier's mean
    alone = DawidSkene(max_iter=50, tol=0).fit(sim.annotations)
    model = DawidSkene(max_iter=50, tol=0).fit(sim.annotations, pred_probs=same)
    assert model.classifier_weight_ == INITIAL_CLASSIFIER_WEIGHT
    np.testing.assert_allclose(model.posteriors_, alone.posteriors_, atol=1e-12)


def test_a_frame_is_aligned_by_item_id(crowds):
    sim, good, _ = crowds[0]
    ann = sim.annotations
    frame = pd.DataFrame(good, index=ann.item_ids, columns=list(ann.classes))
    shuffled = frame.sample(frac=1.0, random_state=0)[list(ann.classes)[::-1]]
    a = DawidSkene().fit(ann, pred_probs=good)
    b = DawidSkene().fit(ann, pred_probs=shuffled)
    np.testing.assert_allclose(a.posteriors_, b.posteriors_, atol=1e-12)


def test_columns_written_as_text_are_read_by_class_name(crowds, tmp_path):
    # a frame read back from CSV names the class 2 "2": read by position, its reversed
    # columns were other classes' silently
    sim, good, _ = crowds[0]
    ann = sim.annotations
    frame = pd.DataFrame(good, index=ann.item_ids, columns=list(ann.classes))
    frame[list(ann.classes)[::-1]].to_csv(tmp_path / "p.csv")
    read = pd.read_csv(tmp_path / "p.csv", index_col=0)
    assert list(read.columns) == ["3", "2", "1", "0"]
    a = DawidSkene().fit(ann, pred_probs=frame)
    b = DawidSkene().fit(ann, pred_probs=read)
    np.testing.assert_allclose(a.posteriors_, b.posteriors_, atol=1e-12)


def test_a_refit_without_the_classifier_forgets_it(crowds):
    sim, good, _ = crowds[0]
    model = DawidSkene().fit(sim.annotations, pred_probs=good)
    assert hasattr(model, "classifier_weight_")
    model.fit(sim.annotations)
    assert not hasattr(model, "classifier_weight_") and not hasattr(model, "classifier_quality_")


@pytest.mark.parametrize("bad, match", [
    (lambda p, ann: p[:-1], r"shape \(items, classes\)"),
    # not "a class nobody chose needs n_classes=500"
    (lambda p, ann: p.T, r"got \(4, 500\) \(transposed: pass pred_probs\.T, one row per item\)$"),
    (lambda p, ann: np.where(np.arange(p.size).reshape(p.shape) == 5, np.nan, p), "NaN"),
    (lambda p, ann: p - np.eye(4)[np.arange(len(p)) % 4] * 2, "negative"),
    (lambda p, ann: p * 2, "sum to 2"),
    (lambda p, ann: pd.DataFrame(p, index=ann.item_ids).iloc[1:], r"no row for 1 item"),
    (lambda p, ann: pd.concat([pd.DataFrame(p, index=ann.item_ids),
                               pd.DataFrame(p[:2], index=[10_001, 10_002])]), "10001"),
    (lambda p, ann: pd.DataFrame(p[:, :3], index=ann.item_ids), "3 columns"),
])
def test_bad_pred_probs_are_named(bad, match, crowds):
    sim, good, _ = crowds[0]
    with pytest.raises(CrowdDataError, match=match):
        DawidSkene().fit(sim.annotations, pred_probs=bad(good, sim.annotations))


def test_a_frame_indexed_otherwise_than_by_item_id_says_how():
    # "no row for 4 items: 0, 1, 2, 3" beside a frame with rows "0".."3" said nothing of why
    from crowd_keras import Annotations

    wide = pd.DataFrame({"a": [0, 1, 1, 0], "b": [0, 1, np.nan, 0]}, index=list("wxyz"))
    p = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    with pytest.raises(CrowdDataError, match=r"'w', 'x', 'y', 'z' \(the frame's index is "
                                             r"0\.\.3, not the item ids: .*to_numpy\(\)"):
        DawidSkene().fit(Annotations.from_wide(wide), pred_probs=pd.DataFrame(p))
    numbered = Annotations.from_wide(wide.reset_index(drop=True))
    with pytest.raises(CrowdDataError, match=r"0, 1, 2, 3 \(the frame's index has '0': "
                                             r"the ids .* must be of one type\)"):
        DawidSkene().fit(numbered, pred_probs=pd.DataFrame(p, index=["0", "1", "2", "3"]))
    with pytest.raises(CrowdDataError, match=r"no row for 1 item\(s\) of the annotations: "
                                             r"'z'$"):
        DawidSkene().fit(Annotations.from_wide(wide), pred_probs=pd.DataFrame(
            p[:3], index=list("wxy")))



def test_columns_that_are_not_the_classes_are_named():
    """An extra or a missing column named the column count only; columns written as text of
    which only some are class names (classes 1..3 in a CSV against 0..2) were read by
    position, each class's probabilities under the next class."""
    from crowd_keras import Annotations

    wide = pd.DataFrame({"a": [0, 1, 2, 0], "b": [0, 1, np.nan, 2]}, index=list("wxyz"))
    ann = Annotations.from_wide(wide)
    p = pd.DataFrame(np.tile([0.6, 0.3, 0.1], (4, 1)), index=list("wxyz"))
    with pytest.raises(CrowdDataError, match=r"4 columns, expected one per class .*: "
                                             r"column\(s\) 'source' are not classes$"):
        DawidSkene().fit(ann, pred_probs=p.assign(source=0.0))
    with pytest.raises(CrowdDataError, match=r"2 columns, .*: no column for the class\(es\) 1$"):
        DawidSkene().fit(ann, pred_probs=p[[0, 2]])
    with pytest.raises(CrowdDataError, match=r"4 columns, .*Annotations\.from_wide\(frame, "
                                             r"n_classes=4\)\)$"):
        DawidSkene().fit(ann, pred_probs=pd.DataFrame(np.full((4, 4), 0.25), index=p.index))
    shifted = p.set_axis(["1", "2", "3"], axis=1)
    with pytest.raises(CrowdDataError, match=r"column\(s\) '3' are not classes of the "
                                             r"annotations \[0, 1, 2\] \(no column for 0\)"):
        DawidSkene().fit(ann, pred_probs=shifted)
    with pytest.raises(CrowdDataError, match=r"column\(s\) 3 are not classes"):
        DawidSkene().fit(ann, pred_probs=shifted.rename(columns=int))   # as before




def test_one_probability_per_item_of_two_classes_says_to_give_both():
    # a sigmoid's P(class 1), the usual binary output, met a bare shape or count error
    from crowd_keras import Annotations

    ann = Annotations.from_wide(pd.DataFrame({"a": [0, 1, 1, 0], "b": [0, 1, np.nan, 1]},
                                             index=list("wxyz")))
    p = np.array([0.1, 0.9, 0.8, 0.3])
    hint = r" \(one probability per item: with two classes give both, e\.g\. numpy\.c_\[1 - p, p\]"
    for given in (p, p[:, None], pd.Series(p, index=ann.item_ids),
                  pd.DataFrame({"p": p}, index=ann.item_ids)):
        with pytest.raises(CrowdDataError, match=hint):
            DawidSkene().fit(ann, pred_probs=given)
    model = DawidSkene().fit(ann, pred_probs=np.c_[1 - p, p])
    assert model.classifier_marginal_[1] == pytest.approx(p.mean())

def test_a_bad_cell_of_a_frame_is_named_by_its_item_column_and_frame_row():
    """In a frame aligned by id, a bad row was shown at its row in the annotations' item
    order (another item's row of the frame), and text at a (row, column) of the frame with
    its columns put in class order."""
    from crowd_keras import Annotations

    wide = pd.DataFrame({"a": [0, 1, 2, 0], "b": [0, 1, np.nan, 2]}, index=list("wxyz"))
    ann = Annotations.from_wide(wide)
    p = pd.DataFrame(np.tile([0.6, 0.3, 0.1], (4, 1)), index=list("zyxw"), columns=[2, 0, 1])
    bad = p.copy()
    bad.loc["x", 1] = np.nan
    with pytest.raises(CrowdDataError, match=r"item 'x' \(row 2\) is NaN"):
        DawidSkene().fit(ann, pred_probs=bad)
    text = p.astype(object)
    text.loc["x", 1] = "0.3"
    with pytest.raises(CrowdDataError, match=r"^pred_probs of item 'x', column 1, must be a "
                                             r"probability \(a number\), got str '0\.3'$"):
        DawidSkene().fit(ann, pred_probs=text)
    with pytest.raises(CrowdDataError, match=r"item 'x' \(row 1\) sum to 1\.5"):
        DawidSkene().fit(ann, pred_probs=np.where(np.arange(4)[:, None] == 1, 0.5,
                                                  p.to_numpy()))        # an array: its row

@pytest.mark.parametrize("model", [MajorityVote(), GLAD()])
def test_models_without_the_prior_refuse_it(model, crowds):
    sim, good, _ = crowds[0]
    with pytest.raises(TypeError, match="pred_probs"):
        model.fit(sim.annotations, pred_probs=good)


@pytest.mark.slow
def test_auto_passes_the_classifier_to_its_candidates(crowds):
    from crowd_keras.aggregation import AutoLabelModel

    gains, losses = [], []
    for sim, good, random in crowds[:2]:
        alone = AutoLabelModel().fit(sim.annotations)
        with_good = AutoLabelModel().fit(sim.annotations, pred_probs=good)
        with_random = AutoLabelModel().fit(sim.annotations, pred_probs=random)
        gains.append(accuracy(with_good, sim.y) - accuracy(alone, sim.y))
        losses.append(accuracy(alone, sim.y) - accuracy(with_random, sim.y))
        if with_good.chosen_ != "majority_vote":
            assert with_good.classifier_weight_ == with_good.model_.classifier_weight_
    assert min(gains) > 0.03 and max(losses) < 0.02, (gains, losses)



def test_auto_lets_the_classifier_speak_for_a_class_no_annotator_chose():
    """The default target prior spreads over the classes something speaks for: with
    pred_probs, the classifier's top classes too. It left them out, so items that the chosen
    model gave a class no annotator chose (30 items without annotations, the classifier sure
    of it) got another label, with a consensus quality of 0."""
    from crowd_keras import Annotations
    from crowd_keras.aggregation import AutoLabelModel

    sim = simulate_crowd(n_items=150, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=2)
    dense = sim.annotations.to_dense().astype(float)
    dense[dense < 0] = np.nan
    ann = Annotations.from_wide(pd.DataFrame(np.vstack([dense, np.full((30, 8), np.nan)])),
                                n_classes=4)
    y = np.r_[sim.y, np.full(30, 3)]
    p = np.full((180, 4), 0.1 / 3)
    p[np.arange(180), y] = 0.9
    model = AutoLabelModel(candidates=[("ibcc", IBCC())]).fit(ann, pred_probs=p)
    assert model.named_classes_.tolist() == [True] * 4
    assert (model.predict()[150:] == 3).all()
    assert (model.consensus_quality()[150:] > 0.5).all()
    alone = AutoLabelModel(candidates=[("ibcc", IBCC())]).fit(ann)
    assert alone.named_classes_.tolist() == [True, True, True, False]
    # a row whose top is shared (uniform: no evidence) speaks for no class
    flat = np.where(np.arange(180)[:, None] < 150, p, 0.25)
    tied = AutoLabelModel(candidates=[("ibcc", IBCC())]).fit(ann, pred_probs=flat)
    assert tied.named_classes_.tolist() == [True, True, True, False]

def test_quality_scores_count_the_classifier_the_fit_used(crowds):
    """The held-out consensus quality adds the fit's item log-prior (``item_log_prior_``):
    without the classifier's share it is far from the chance that the consensus is right."""
    from crowd_keras.aggregation import quality
    with_prior, without = [], []
    for sim, good, _ in crowds:
        model = DawidSkene().fit(sim.annotations, pred_probs=good)
        right = model.predict() == sim.y
        assert model.item_log_prior_.shape == good.shape
        with_prior.append(quality.expected_calibration_error(model.consensus_quality(), right))
        bare = quality.consensus_quality(model.posteriors_, sim.annotations)
        without.append(quality.expected_calibration_error(bare, right))
    assert np.mean(with_prior) < 0.06, with_prior
    assert np.mean(with_prior) < np.mean(without), (with_prior, without)
    assert DawidSkene().fit(crowds[0][0].annotations).item_log_prior_ is None
