"""Quality scores of label models: calibration, per-annotation quality, label issues and
what to label next (crowd_keras.aggregation.quality, the LabelModel methods)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowd_keras.aggregation import AutoLabelModel, DawidSkene, MajorityVote, MixtureOfGroupsModel
from crowd_keras.aggregation import quality
from crowd_keras.aggregation.quality import expected_calibration_error
from crowd_keras.annotations import Annotations
from crowd_keras.datasets.failure_kinds import simulate_failure_kind
from crowd_keras.datasets.simulate import simulate_crowd
from crowd_keras.errors import CrowdDataError


def _crowd(kind: str, seed: int):
    """(annotations, truth) of three kinds of simulated crowds."""
    if kind == "uniform":     # 30 annotators of accuracy U(.5, .9), 3 labels per item
        c = simulate_crowd(n_items=1000, n_classes=4, n_annotators=30, annotations_per_item=3,
                           seed=seed)
    elif kind == "zipf":      # heavy-tailed activity: many annotators with a label or two
        c = simulate_crowd(n_items=1000, n_classes=3, n_annotators=60, annotations_per_item=4,
                           activity=1.0, seed=seed)
    else:                     # few workers, most of them class-biased
        c = simulate_failure_kind("biased_experts", seed=seed, scale=0.5)
    return c.annotations, c.y


@pytest.mark.parametrize("kind", ["uniform", "zipf", "biased_experts"])
@pytest.mark.parametrize("make,seeds", [(DawidSkene, (0, 1, 2)), (AutoLabelModel, (0, 1))],
                         ids=["dawid_skene", "auto"])
def test_consensus_quality_is_calibrated(kind, make, seeds):
    for seed in seeds:
        ann, y = _crowd(kind, seed)
        model = make().fit(ann)
        score = model.consensus_quality()
        right = model.predict() == y
        assert score.shape == (ann.n_items,)
        assert ((score >= 0) & (score <= 1)).all()
        ece = expected_calibration_error(score, right)
        assert ece < 0.05, (kind, seed, ece)
        # and it ranks: the items it scores low are wrong more often
        low = score < np.quantile(score, 0.2)
        assert right[low].mean() < right[~low].mean()


def test_expected_calibration_error_by_hand():
    conf = np.array([0.05, 0.15, 0.95, 0.95])
    hit = np.array([0, 1, 1, 0])
    # bins 0, 1 and 9: |0.05 - 0| + |0.15 - 1| + |1.9 - 1|, over 4
    assert expected_calibration_error(conf, hit) == pytest.approx((0.05 + 0.85 + 0.9) / 4)
    with pytest.raises(ValueError):
        expected_calibration_error(conf, hit[:3])


def test_annotation_quality_follows_the_truth():
    ann, y = _crowd("uniform", 3)
    model = DawidSkene().fit(ann)
    q = model.annotation_quality()
    assert q.shape == (ann.n_annotations,)
    right = ann.labels == y[ann.items]
    assert q[right].mean() > q[~right].mean() + 0.4
    assert expected_calibration_error(q, right) < 0.05
    # the same values through the pure function, in the stored annotation order
    np.testing.assert_allclose(q, quality.annotation_quality(model.posteriors_, ann))


def test_label_issues_ranks_the_wrong_consensus_first():
    ann, y = _crowd("uniform", 4)
    model = DawidSkene().fit(ann)
    issues = model.label_issues()
    assert list(issues.columns) == ["item", "consensus_label", "consensus_quality",
                                    "n_annotations"]
    assert len(issues) == ann.n_items
    assert issues["consensus_quality"].is_monotonic_increasing
    codes = ann.item_index(issues["item"])
    np.testing.assert_array_equal(issues["consensus_label"], ann.classes[model.predict()[codes]])
    np.testing.assert_array_equal(issues["n_annotations"], ann.annotations_per_item()[codes])
    wrong = model.predict()[codes] != y[codes]
    top = len(issues) // 10
    assert wrong[:top].mean() > 3 * wrong.mean()


def test_scores_on_new_annotations_and_string_ids():
    frame = pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2", "t3", "t3", "t3"],
                          "worker": ["a", "b", "c", "a", "b", "a", "b", "c"],
                          "label": ["x", "x", "y", "y", "y", "x", "y", "y"]})
    model = DawidSkene().fit(frame)
    issues = model.label_issues()
    assert set(issues["item"]) == {"t1", "t2", "t3"}
    new = frame[frame["task"] != "t2"]
    score = model.consensus_quality(Annotations.from_frame(new, classes=["x", "y"]))
    assert score.shape == (2,)
    nxt = model.next_to_label(5)
    # t2 has two labels; c is the only annotator who has not labelled it
    assert set(nxt["item"]) == {"t2"} and set(nxt["annotator"]) == {"c"}
    assert list(nxt.columns) == ["item", "annotator", "expected_gain"]


def test_next_to_label_never_asks_for_a_label_already_given():
    ann, _ = _crowd("uniform", 5)
    model = DawidSkene().fit(ann)
    picks = model.next_to_label(200)
    assert len(picks) == 200 and picks["item"].is_unique
    assert (np.diff(picks["expected_gain"].to_numpy()) <= 1e-12).all()
    assert (picks["expected_gain"] >= -1e-12).all()
    given = set(zip(ann.item_ids[ann.items], ann.annotator_ids[ann.annotators]))
    assert not given & set(zip(picks["item"], picks["annotator"]))
    chosen = model.next_to_label(50, annotators=[3, 7])
    assert set(chosen["annotator"]) <= {3, 7}
    with pytest.raises(CrowdDataError, match="unknown annotator id 'nobody'$"):
        model.next_to_label(5, annotators=["nobody"])
    # an id of another type (a CSV's "7") said only "unknown annotator id '7'"
    with pytest.raises(CrowdDataError, match=r"unknown annotator id '7' \(the annotator ids "
                                             r"include 7: give the ids in the type they were "
                                             r"read with\)$"):
        model.next_to_label(5, annotators=["7"])


@pytest.mark.parametrize("cells", [None, 30 * 4 * 50], ids=["one_block", "blocks_of_50"])
def test_next_to_label_is_the_exhaustive_top_k(cells, monkeypatch):
    # with small blocks it stops early: the same answer as scoring every pair
    if cells is not None:
        monkeypatch.setattr(quality, "_CELLS", cells)
    ann, _ = _crowd("uniform", 8)
    model = DawidSkene().fit(ann)
    picks = model.next_to_label(40)
    belief = quality.held_out_posteriors(model.posteriors_, ann)
    pi = quality.annotator_confusions(belief, ann, model.confusion_matrices_)
    gains = quality.expected_gains(belief, pi, exclude=ann)
    best = gains.max(axis=1)
    top = np.argsort(-best, kind="stable")[:40]
    np.testing.assert_allclose(picks["expected_gain"], best[top])
    np.testing.assert_array_equal(picks["item"], ann.item_ids[top])
    np.testing.assert_array_equal(picks["annotator"], ann.annotator_ids[gains[top].argmax(1)])


def test_expected_gain_matches_its_definition():
    rng = np.random.default_rng(0)
    belief = rng.dirichlet(np.ones(3), size=5)
    pi = rng.dirichlet(np.ones(3), size=(4, 3))
    gains = quality.expected_gains(belief, pi)
    for i in range(5):
        for a in range(4):
            p_label = belief[i] @ pi[a]
            after = [np.max(belief[i] * pi[a][:, l] / p_label[l]) for l in range(3)]
            assert gains[i, a] == pytest.approx(p_label @ after - belief[i].max())


def test_without_annotator_quality_the_annotator_is_left_open():
    ann, _ = _crowd("uniform", 6)
    post = DawidSkene().fit(ann).posteriors_
    picks = quality.next_to_label(10, post, ann)
    assert picks["annotator"].isna().all() and len(picks) == 10
    by_acc = quality.next_to_label(10, post, ann, accuracies=np.linspace(.5, .9, 30))
    assert by_acc["annotator"].notna().all()


def test_majority_vote_gets_graded_scores():
    # majority vote's posterior is 0/1: the held-out posterior still grades its items
    ann, y = _crowd("uniform", 7)
    model = MajorityVote().fit(ann)
    score = model.consensus_quality()
    assert len(np.unique(np.round(score, 3))) > 20
    assert expected_calibration_error(score, model.predict() == y) < 0.08


def test_bad_input_is_named():
    ann, _ = _crowd("uniform", 0)
    with pytest.raises(CrowdDataError, match="posteriors must have shape"):
        quality.consensus_quality(np.ones((3, 4)) / 4, ann)
    post = np.full((ann.n_items, ann.n_classes), 0.25)
    post[2, 0] = np.nan
    with pytest.raises(CrowdDataError, match="item 2"):
        quality.consensus_quality(post, ann)
    with pytest.raises(ValueError, match="rounds"):
        quality.held_out_posteriors(np.full((ann.n_items, 4), .25), ann, rounds=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        DawidSkene().consensus_quality()


def _add(ann, items, annotators, labels):
    return Annotations(np.r_[ann.items, items], np.r_[ann.annotators, annotators],
                       np.r_[ann.labels, labels], n_items=ann.n_items,
                       n_annotators=ann.n_annotators, n_classes=ann.n_classes)


def _answers(crowd, items, annotators, rng):
    """The chosen annotators' answers drawn from their true confusion rows."""
    probs = crowd.confusion_matrices[annotators, crowd.y[items]]
    u = rng.random((len(items), 1))
    return np.minimum((probs.cumsum(axis=1) < u).sum(axis=1), probs.shape[1] - 1)


def _relabel_budget(make, seed, budget=150, rounds=3):
    """Accuracy after ``budget`` extra labels chosen by next_to_label vs at random."""
    crowd = simulate_crowd(n_items=300, n_classes=3, n_annotators=15, annotations_per_item=2,
                           annotator_accuracy=(0.35, 0.95), seed=seed)
    rng = np.random.default_rng(100 + seed)
    ann, model = crowd.annotations, make().fit(crowd.annotations)
    for _ in range(rounds):
        picks = model.next_to_label(budget // rounds)
        items, who = ann.item_index(picks["item"]), ann.annotator_index(picks["annotator"])
        ann = _add(ann, items, who, _answers(crowd, items, who, rng))
        model = make().fit(ann)
    chosen = np.mean(model.predict() == crowd.y)
    free = np.argwhere(crowd.annotations.to_dense() < 0)      # pairs not yet labelled
    pick = free[rng.choice(len(free), budget, replace=False)]
    rand = _add(crowd.annotations, pick[:, 0], pick[:, 1],
                _answers(crowd, pick[:, 0], pick[:, 1], rng))
    return chosen, np.mean(make().fit(rand).predict() == crowd.y)


def test_next_to_label_beats_random_relabelling():
    results = np.array([_relabel_budget(DawidSkene, seed) for seed in range(4)])
    assert results[:, 0].mean() > results[:, 1].mean() + 0.03, results
    assert (results[:, 0] > results[:, 1]).sum() >= 3, results


@pytest.mark.slow
def test_next_to_label_beats_random_relabelling_with_the_default_model():
    results = np.array([_relabel_budget(AutoLabelModel, seed) for seed in range(3)])
    assert results[:, 0].mean() > results[:, 1].mean() + 0.03, results
    assert (results[:, 0] > results[:, 1]).sum() >= 2, results


# ------------------------------------------------------------------ Label Studio: score, report
LS_DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "label_studio"


def test_label_studio_predictions_carry_the_consensus_quality():
    from crowd_keras.integrations import label_studio as ls
    export = ls.read_export(LS_DATA / "demo.json", control="sentiment",
                            label_config=LS_DATA / "config.xml")
    model = DawidSkene().fit(export.annotations)
    preds = ls.predictions_from_model(export, model, "ds-q")
    quality_of = dict(zip(export.task_ids.tolist(), model.consensus_quality()))
    assert preds and all(p["score"] == pytest.approx(quality_of[p["task"]]) for p in preds)
    # raw probabilities keep their own score; a bad score vector is refused
    raw = ls.to_predictions(export, model.predict_proba(), "ds-raw")
    assert [p["score"] for p in raw] != [p["score"] for p in preds]
    with pytest.raises(CrowdDataError, match="scores must be"):
        ls.to_predictions(export, model.predict_proba(), "ds-q", scores=[0.5])


def test_label_studio_cli_scores_and_gold(tmp_path):
    import json
    from crowd_keras.cli import main
    from crowd_keras.integrations import label_studio as ls
    out = tmp_path / "p.json"
    assert main(["label-studio", "aggregate", str(LS_DATA / "demo.json"), "--control",
                 "sentiment", "--label-config", str(LS_DATA / "config.xml"), "--method",
                 "dawid_skene", "--out", str(out), "--quiet"]) == 0
    export = ls.read_export(LS_DATA / "demo.json", control="sentiment",
                            label_config=LS_DATA / "config.xml")
    gold = export.gold_codes()
    model = DawidSkene().fit(export.annotations, gold=gold)
    expected = np.where(gold >= 0, 1.0, model.consensus_quality())
    by_task = dict(zip(export.task_ids.tolist(), expected))
    preds = json.loads(out.read_text())
    assert all(p["score"] == pytest.approx(by_task[p["task"]]) for p in preds)


def test_label_studio_report_lists_the_items_to_review_first(tmp_path):
    import json
    from crowd_keras.integrations import label_studio as ls
    from crowd_keras.integrations.label_studio.quality import REVIEW_ITEMS
    result = ls.quality_report(LS_DATA / "demo.json", tmp_path, controls=["sentiment"],
                               method="dawid_skene", n_bootstrap=0, plots=False)
    doc = json.loads((tmp_path / "report.json").read_text())
    review = pd.DataFrame(doc["controls"]["sentiment"]["items_to_review"])
    export = ls.read_export(LS_DATA / "demo.json", control="sentiment")
    # fitted as 'label-studio aggregate' fits it: task 4 held at its ground truth
    issues = DawidSkene().fit(export.annotations, gold=export.gold_codes()).label_issues()
    # tasks 5 and 6 have no sentiment annotation: no consensus to review, left out
    assert set(issues["item"][issues["n_annotations"] == 0]) == {5, 6}
    issues = issues[issues["n_annotations"] > 0].head(REVIEW_ITEMS)
    assert review["task"].tolist() == issues["item"].tolist()
    assert (review["n_annotations"] > 0).all()
    np.testing.assert_allclose(review["consensus_quality"], issues["consensus_quality"])
    page = result["html"].read_text()
    assert "Items to review first" in page
    assert "controls/sentiment/items_to_review/0/consensus_quality" in page


def test_annotator_accuracy_divides_out_the_annotators_own_vote():
    # item 0: annotators 0 and 1; item 1: annotator 0 alone
    ann = Annotations(items=[0, 0, 1], annotators=[0, 1, 0], labels=[0, 1, 1],
                      n_items=2, n_annotators=2, n_classes=2)
    post = np.array([[0.8, 0.2], [0.3, 0.7]])
    pi = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.6, 0.4], [0.4, 0.6]]])
    got = quality.annotator_accuracy(post, ann, pi)
    # annotator 0, item 0 label 0: 0.8/0.9 vs 0.2/0.2; item 1 label 1: 0.3/0.1 vs 0.7/0.8
    first = (0.8 / 0.9) / (0.8 / 0.9 + 1.0)
    second = (0.7 / 0.8) / (3.0 + 0.7 / 0.8)
    np.testing.assert_allclose(got, [(first + second) / 2,
                                     (0.2 / 0.6) / (0.8 / 0.4 + 0.2 / 0.6)])


def test_expected_accuracy_ranks_sparse_annotators_better_than_the_models_accuracy():
    """Annotators with few labels: their confusion rows are mostly prior, so Σ ρ_k π_kk is
    noisy; scoring their own labels by the others' posterior is not."""
    corr_model, corr_expected = [], []
    for seed in range(3):
        sim = simulate_crowd(n_items=600, n_classes=5, n_annotators=80, annotations_per_item=3,
                             annotator_accuracy=(0.3, 0.95), seed=seed)
        ann = sim.annotations
        model = DawidSkene().fit(ann)
        frame = model.annotator_quality_
        hit = ann.labels == sim.y[ann.items]
        truth = pd.Series(np.bincount(ann.annotators, hit, ann.n_annotators)
                          / np.bincount(ann.annotators, minlength=ann.n_annotators))
        corr_model.append(frame["accuracy"].rank().corr(truth.rank()))
        corr_expected.append(frame["expected_accuracy"].rank().corr(truth.rank()))
    assert np.mean(corr_expected) > 0.8, corr_expected
    assert np.mean(corr_expected) > np.mean(corr_model), (corr_expected, corr_model)


@pytest.mark.parametrize("cells", [None, 10 * 3 * 20], ids=["one_block", "blocks_of_20"])
def test_labels_that_change_nothing_gain_exactly_zero_and_keep_the_item_order(cells,
                                                                              monkeypatch):
    # About half of these items cannot change consensus with one more label from anyone.
    # By the definition their gain is 0: they tie, so they come in item order, each with the
    # first annotator (in code order) who has not labelled it. The reference below computes
    # each gain from the posterior after the label, as in test_expected_gain_matches_its_definition.
    if cells is not None:        # small blocks: the early stop must not cut a tie either
        monkeypatch.setattr(quality, "_CELLS", cells)
    ann = simulate_crowd(n_items=200, n_classes=3, n_annotators=10, annotations_per_item=4,
                         seed=0).annotations
    model = DawidSkene().fit(ann)
    picks = model.next_to_label(ann.n_items)
    belief = quality.held_out_posteriors(model.posteriors_, ann)
    pi = quality.annotator_confusions(belief, ann, model.confusion_matrices_)
    given = set(zip(ann.items.tolist(), ann.annotators.tolist()))
    rows = []
    for i in range(ann.n_items):
        best = None
        for a in range(ann.n_annotators):
            if (i, a) in given:
                continue
            gain = sum(np.max(belief[i] * pi[a][:, l]) for l in range(3)) - belief[i].max()
            if abs(gain) < 1e-12:        # tied with doing nothing: 0 by the definition
                gain = 0.0
            assert gain >= 0
            if best is None or gain > best[1] + 1e-12:
                best = (a, gain)
        rows.append((i, best[0], best[1]))
    rows.sort(key=lambda r: (-r[2], r[0]))
    n_zero = sum(r[2] == 0 for r in rows)
    assert n_zero > 50
    gain = picks["expected_gain"].to_numpy()
    assert (gain >= 0).all() and (gain == 0).sum() == n_zero
    np.testing.assert_allclose(gain, [r[2] for r in rows], atol=1e-12)
    np.testing.assert_array_equal(picks["item"], ann.item_ids[[r[0] for r in rows]])
    np.testing.assert_array_equal(picks["annotator"], ann.annotator_ids[[r[1] for r in rows]])


def test_the_early_stop_keeps_ties_with_certain_items(monkeypatch):
    # Items 0-9 get 20 more labels of their true class: held-out posteriors of exactly 1
    # (chance of error 0, scored last), gain 0. Asking for more items than gain anything,
    # the k-th gain is 0 and ties with them: in item order they come first among the zeros.
    # Blocks of 8 items end where the certain items begin; the stop must not cut them off.
    c = simulate_crowd(n_items=200, n_classes=3, n_annotators=30, annotations_per_item=4,
                       seed=0)
    ann, y = c.annotations, c.y
    items, who = np.repeat(np.arange(10), 20), np.tile(np.arange(30, 50), 10)
    ann = Annotations(np.concatenate([ann.items, items]), np.concatenate([ann.annotators, who]),
                      np.concatenate([ann.labels, y[items]]), n_items=200, n_annotators=50,
                      n_classes=3)
    model = DawidSkene().fit(ann)
    belief = quality.held_out_posteriors(model.posteriors_, ann)
    assert (belief.max(axis=1) == 1.0).sum() >= 5
    pi = quality.annotator_confusions(belief, ann, model.confusion_matrices_)
    best = quality.expected_gains(belief, pi, exclude=ann).max(axis=1)
    assert 0 < (best > 0).sum() < 100
    top = np.argsort(-best, kind="stable")[:100]       # every pair scored, ties in item order
    monkeypatch.setattr(quality, "_CELLS", 50 * 3 * 8)
    picks = model.next_to_label(100)
    np.testing.assert_array_equal(picks["item"], ann.item_ids[top])
    np.testing.assert_allclose(picks["expected_gain"], best[top])


@pytest.mark.parametrize("conf,hit,n_bins,what", [
    ([0.5, np.nan], [1, 0], 10, "confidence"),      # NaN cast to a negative bin
    ([0.5, 1.5], [1, 0], 10, "confidence"),         # silently the last bin
    ([0.5, 0.2], [1, np.nan], 10, "correct"),
    ([0.5, 0.2], [1, 2], 10, "correct"),
    ([0.5, 0.2], [1, 0], 0, "n_bins"),              # bin -1
])
def test_expected_calibration_error_names_a_bad_input(conf, hit, n_bins, what):
    with pytest.raises(ValueError, match=what):
        expected_calibration_error(conf, hit, n_bins=n_bins)


@pytest.mark.parametrize("kwargs,error,what", [
    ({"pseudo_labels": np.nan}, ValueError, "pseudo_labels"),     # NaN matrices
    ({"pseudo_labels": -5.0}, ValueError, "pseudo_labels"),
    ({"confusions": np.full((2, 2, 2), np.nan)}, CrowdDataError, "annotator 'x'"),
    ({"confusions": -np.ones((2, 2, 2))}, CrowdDataError, "annotator 'x'"),
])
def test_annotator_confusions_names_a_bad_input(kwargs, error, what):
    ann = Annotations(items=[0, 1, 2, 3], annotators=[0, 0, 1, 1], labels=[0, 1, 1, 0],
                      annotator_ids=["x", "y"], n_classes=2)
    post = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    with pytest.raises(error, match=what):
        quality.annotator_confusions(post, ann, **kwargs)


@pytest.mark.parametrize("bad", [np.nan, 1.5, -0.1])
def test_label_issues_names_a_given_quality_out_of_range(bad):
    ann = Annotations(items=[0, 1, 2], annotators=[0, 0, 1], labels=[0, 1, 1],
                      item_ids=["a", "b", "c"], n_classes=2)
    post = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7]])
    with pytest.raises(CrowdDataError, match="item 'b'"):
        quality.label_issues(post, ann, quality=[0.9, bad, 0.5])


@pytest.mark.parametrize("kwargs,what", [
    ({"annotators": ["nobody"]}, "annotators needs confusions or accuracies"),
    ({"annotators": ["y"]}, "annotators needs confusions or accuracies"),
    ({"confusions": np.tile(np.eye(2), (2, 1, 1)), "accuracies": [0.6, 0.7]}, "not both"),
])
def test_next_to_label_refuses_arguments_it_would_ignore(kwargs, what):
    # without any annotator quality the ranking is of items only: annotators were ignored,
    # unknown ids too; with both, the accuracies were
    ann = Annotations(items=[0, 0, 1, 1, 2], annotators=[0, 1, 0, 1, 0], labels=[0, 1, 1, 1, 0],
                      annotator_ids=["x", "y"], n_classes=2)
    post = np.array([[0.5, 0.5], [0.1, 0.9], [0.8, 0.2]])
    with pytest.raises(TypeError, match=what):
        quality.next_to_label(2, post, ann, **kwargs)


def test_new_annotations_of_unseen_annotators_are_left_out_as_predict_proba_does():
    # predict_proba ignores annotator 99; the held-out scores and counts counted its labels
    crowd = simulate_crowd(n_items=200, n_classes=3, n_annotators=6, annotations_per_item=3,
                           seed=3)
    model = DawidSkene().fit(crowd.annotations)
    frame = pd.DataFrame({"task": [0, 0, 1, 1, 2], "worker": [0, 99, 1, 99, 99],
                          "label": [2, 0, 1, 0, 0]})
    new = Annotations.from_frame(frame, classes=crowd.annotations.classes)
    known = Annotations.from_frame(frame[frame.worker != 99], classes=new.classes,
                                   item_ids=new.item_ids)
    expected = model.consensus_quality(known)
    np.testing.assert_allclose(model.consensus_quality(new), expected)
    assert model.n_unknown_annotations_ == 3
    issues = model.label_issues(new).set_index("item")
    np.testing.assert_array_equal(issues.loc[[0, 1, 2], "n_annotations"], [1, 1, 0])
    quality_of = model.annotation_quality(new)           # one per given annotation
    assert quality_of.shape == (new.n_annotations,)
    mine = new.annotators != new.annotator_index([99])[0]
    np.testing.assert_allclose(quality_of[mine], model.annotation_quality(known))


def test_next_to_label_leaves_no_count_of_left_out_labels_on_a_model_that_places_them():
    # the mixture of groups places unseen annotators (predict_proba keeps their labels and
    # sets no n_unknown_annotations_); next_to_label re-coded the new annotations onto the
    # fitted annotators through _align, which left a count of 3 that later predictions kept
    crowd = simulate_crowd(n_items=40, n_classes=3, n_annotators=6, annotations_per_item=3,
                           seed=1)
    model = MixtureOfGroupsModel(restarts=1).fit(crowd.annotations)
    frame = pd.concat([crowd.annotations.to_frame().query("task < 10"),
                       pd.DataFrame({"task": [0, 1, 2], "worker": [99] * 3, "label": [0, 1, 2]})])
    model.predict_proba(frame)
    assert not hasattr(model, "n_unknown_annotations_")
    assert len(model.next_to_label(3, frame)) == 3
    model.predict_proba(frame)
    assert not hasattr(model, "n_unknown_annotations_")


@pytest.mark.parametrize("call,error,what", [
    (lambda: quality.confusions_from_accuracies([0.9, 0.5], 0), ValueError, "n_classes"),
    (lambda: quality.confusions_from_accuracies([0.9, 0.5], 2.5), TypeError, "n_classes"),
    (lambda: quality.expected_gains(np.full((1, 2), 0.5), np.ones((2, 3, 3)) / 3),
     CrowdDataError, r"\(A, 2, 2\)"),
    (lambda: quality.expected_gains(np.full((1, 2), 0.5), np.ones((2, 2)) / 2),
     CrowdDataError, "confusions must have shape"),
    (lambda: quality.expected_gains(np.array([[np.nan, 1.0]]), np.ones((1, 2, 2)) / 2),
     CrowdDataError, "belief of item 0"),
])
def test_the_gain_helpers_name_a_bad_argument(call, error, what):
    # they returned empty matrices, truncated 2.5, broadcast errors or NaN gains
    with pytest.raises(error, match=what):
        call()


def test_new_annotations_are_scored_under_the_fit_whatever_is_scored_beside_them():
    """An item's score of new annotations depended on the rest of the batch (the held-out
    counts were re-estimated from the batch alone): alone it scored 1/K (0.335 for a 0.993
    posterior), in five 0.993, in twenty 0.959. Now each item is scored under the fit's
    counts; the fitted annotations given again (as a frame) score as the fit scores them."""
    import pandas as pd

    from crowd_keras.aggregation import DawidSkene
    from crowd_keras.datasets import simulate_crowd
    sim = simulate_crowd(n_items=1000, n_classes=3, n_annotators=25, annotations_per_item=3,
                         seed=4)
    frame = sim.annotations.to_frame()
    item = frame.columns[0]
    fit_items = sim.annotations.item_ids[:700]
    model = DawidSkene().fit(frame[frame[item].isin(fit_items)])
    fitted = pd.Series(model.consensus_quality(), index=model.annotations_.item_ids)
    # the fitted annotations again, whole, in a batch of five items, and one item alone
    again = model.consensus_quality(frame[frame[item].isin(fit_items)])
    np.testing.assert_allclose(again, fitted.to_numpy(), atol=1e-12)
    for ids in (fit_items[:5], fit_items[3:4]):
        part = model.consensus_quality(frame[frame[item].isin(ids)])
        np.testing.assert_allclose(part, fitted[list(ids)].to_numpy(), atol=1e-12)
    code = list(model.annotations_.item_ids).index(fit_items[3])
    np.testing.assert_allclose(model.annotation_quality(frame[frame[item] == fit_items[3]]),
                               model.annotation_quality()[model.annotations_.items == code],
                               atol=1e-12)
    # items the fit never saw: the same score alone or among others, and calibrated
    new_ids = sim.annotations.item_ids[700:]
    new = frame[frame[item].isin(new_ids)]
    together = model.consensus_quality(new)
    alone = np.concatenate([model.consensus_quality(new[new[item] == i]) for i in new_ids[:30]])
    np.testing.assert_allclose(alone, together[:30], atol=1e-12)
    right = model.predict(new) == sim.y[700:]
    assert abs(together.mean() - right.mean()) < 0.04, (together.mean(), right.mean())


def test_a_refit_scores_new_annotations_under_its_own_fit():
    from crowd_keras.aggregation import DawidSkene
    from crowd_keras.datasets import simulate_crowd
    first, second = (simulate_crowd(n_items=300, n_classes=3, n_annotators=12,
                                    annotations_per_item=3, seed=s).annotations for s in (1, 2))
    new = simulate_crowd(n_items=40, n_classes=3, n_annotators=12, annotations_per_item=3,
                         seed=3).annotations.to_frame()
    model = DawidSkene().fit(first)
    model.consensus_quality(new)                          # scored under the first fit
    model.fit(second)
    np.testing.assert_allclose(model.consensus_quality(new),
                               DawidSkene().fit(second).consensus_quality(new), atol=1e-12)
