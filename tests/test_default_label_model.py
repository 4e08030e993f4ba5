"""The default label model (`auto`) on the simulated failure kinds, its selection score, and gold.

The failure kinds (``crowd_keras.datasets.simulate_failure_kind``) reproduce the statistics of
the real crowds where the previous default fell below majority vote: copying cliques among
the busiest workers, repeated answers, skewed and rare classes, hundreds of workers with a
label or two, graded answers with ambiguous items; and crowds where annotator models should
win (biased experts, a skewed crowd of class-biased workers, lenient and strict graders of
relevance, a dense crowd of class-biased workers).
"""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import (AutoLabelModel, DawidSkene, MajorityVote, TieBrokenVote,
                                     get_label_model)
from crowd_keras.aggregation.auto import (agreement_bounds, agreement_scores, agreement_sums,
                                          annotator_weights, copy_weights, copying_pairs,
                                          item_offsets, pair_sums, paired_gains, tied_with_best)
from crowd_keras.aggregation.em import Block
from crowd_keras.numerics import label_profile_keys
from crowd_keras.datasets import (FAILURE_KINDS, load_truth_inference, simulate_crowd,
                                  simulate_failure_kind)

from conftest import require_data

SEEDS = range(3)

def accuracy(model, y):
    return float((model.predict() == y).mean())


def mean_recall(labels, y, k):
    """The mean over classes of the share of their items labelled right: the accuracy expected
    on gold items balanced over the classes."""
    return float(np.mean([(labels[y == c] == c).mean() for c in range(k) if (y == c).any()]))


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FAILURE_KINDS))
def test_default_is_at_least_majority_vote_on_every_seed_of_every_failure_kind(kind):
    """Scored as gold drawn at random (accuracy on all items) and as class-balanced gold (mean
    recall over classes): step 24 of benchmarks/results/default_label_model.md."""
    gains, recall_gains, over_learned = [], [], []
    for seed in SEEDS:
        crowd = simulate_failure_kind(kind, seed=seed, scale=0.5)
        ann, y, k = crowd.annotations, np.asarray(crowd.y), crowd.annotations.n_classes
        vote = MajorityVote().fit(ann).predict()    # ties to the lowest class, as reported
        auto = AutoLabelModel().fit(ann)
        labels = auto.predict()
        learned = auto.model_.predict_proba().argmax(axis=1)    # the chosen model's own prior
        gains.append(float((labels == y).mean() - (vote == y).mean()))
        recall_gains.append(mean_recall(labels, y, k) - mean_recall(vote, y, k))
        over_learned.append(mean_recall(labels, y, k) - mean_recall(learned, y, k))
        # at most 3 items in 1,000 below voting (one item on the small crowds); step 30
        # removed the fold-draw exception of step 29 (cliques_moderate seed 2: IBCC, 33 below)
        floor = max(1, 0.003 * len(y)) / len(y)
        assert gains[-1] >= -floor - 1e-12, (kind, seed, auto.chosen_, auto.heldout_agreement_)
    assert np.mean(gains) >= -1e-12, gains      # the kind's mean as well
    if kind in ("skewed_prolific", "biased_experts", "lenient_strict", "dense_biased"):
        assert np.mean(gains) > 0.015, gains    # where annotator models should win, they do
    # class-balanced gold: the uniform target never lowers the mean recall of the chosen
    # model's labels, and keeps it at voting's or above on average, except on the 3/92/5 crowd
    # where EBCC folds rare-class items into subtypes of the common class (-0.025 on seeds
    # 0-2 with the annotator-coded folds, -0.038 with step 29's: the measured limit, kept
    # visible)
    # and on the clique kind, where EBCC on seed 0 gains 0.028 in accuracy and loses 0.005
    # in mean recall (step 28: 6 of 16 full-size crowds below voting in mean recall; seeds
    # 0-2 here sat at or above it only while a fold draw took EBCC on seed 2: step 29)
    assert min(over_learned) >= -1e-12, over_learned
    # many_sparse: -0.0003 on seeds 0-2 after step 31's draw (items keyed on content), a
    # hundredth of one item of its 3 % class (1 / (K n_min) = 0.04, step 24's unit)
    floor = {"skewed_prolific": -0.04, "prolific_cliques": -0.01,
             "many_sparse": -0.001}.get(kind, 0)
    assert np.mean(recall_gains) >= floor, recall_gains


def test_the_clique_kind_defeats_independent_models_and_the_old_rule():
    """The simulator reproduces the failure: conditionally independent models follow the
    busy copying cliques far below voting; the default does not."""
    crowd = simulate_failure_kind("prolific_cliques", seed=0, scale=0.5)
    ann, y = crowd.annotations, crowd.y
    vote = accuracy(MajorityVote().fit(ann), y)
    assert accuracy(DawidSkene().fit(ann), y) < vote - 0.05
    assert accuracy(get_label_model("ibcc").fit(ann), y) < vote - 0.05
    assert accuracy(AutoLabelModel().fit(ann), y) >= vote


def test_counting_every_label_alike_lets_the_prolific_cliques_decide():
    """Without copy weights, exponent 0 (every held-out label counts once) follows the busy
    cliques; the default n_a^-1/2 does not (the reason for the weights, decided before the
    copy weights were added)."""
    crowd = simulate_failure_kind("prolific_cliques", seed=0, scale=0.5)
    ann, y = crowd.annotations, crowd.y
    flat = AutoLabelModel(selection_exponent=0.0, confidence=0.0, copy_confidence=None).fit(ann)
    weighted = AutoLabelModel(confidence=0.0, copy_confidence=None).fit(ann)
    assert accuracy(weighted, y) > accuracy(flat, y) + 0.02, (flat.chosen_, weighted.chosen_)


@pytest.mark.slow
def test_copying_annotators_count_once_and_the_clique_kind_gets_ebccs_gain():
    """On the entity-linking-like clique kind EBCC is 0.02-0.06 above voting on every seed,
    but the copiers' hidden labels reward reproducing their mates: without copy weights the
    gate keeps voting on most seeds; with them the default takes EBCC's gain where its
    margin is clear of the gate's noise (labels under the chosen model's learned prior, as
    when step 16 was measured)."""
    plain, weighted = [], []
    for seed in SEEDS:
        crowd = simulate_failure_kind("prolific_cliques", seed=seed, scale=0.5)
        ann, y = crowd.annotations, crowd.y
        vote = accuracy(MajorityVote().fit(ann), y)
        assert accuracy(get_label_model("ebcc").fit(ann), y) > vote + 0.01
        old = AutoLabelModel(copy_confidence=None, target_prior="learned").fit(ann)
        new = AutoLabelModel(target_prior="learned").fit(ann)
        assert len(old.copy_pairs_) == 0 and len(new.copy_pairs_) >= 3
        plain.append(accuracy(old, y) - vote)
        weighted.append(accuracy(new, y) - vote)
        assert weighted[-1] >= plain[-1], (seed, new.chosen_)
    # without copy weights the gate kept voting on all three seeds with the annotator-coded
    # folds; with step 29's it takes EBCC on seed 0 as well (a draw, not the mechanism)
    assert sum(gain == 0 for gain in plain) >= 2, plain
    # the copy weights turn a kept vote into EBCC's gain (seed 0, under every fold draw of
    # random_state 0-5); seed 2's EBCC margin is within the gate's noise (annotator-coded
    # folds took it on 2 of 6 draws, content-keyed folds on none: step 29)
    assert max(weighted) > 0.02, weighted


def copying_crowd(seed=0, copy=0.8):
    """Independent annotators, except that annotator 1 copies annotator 0's label on the
    items both labelled with probability ``copy``."""
    sim = simulate_crowd(n_items=1500, n_classes=3, n_annotators=30, annotations_per_item=5,
                         annotator_accuracy=(0.55, 0.9), seed=seed)
    df = sim.annotations.to_frame()
    rng = np.random.default_rng(seed)
    workers = sim.annotations.annotator_ids
    source = df[df["worker"] == workers[0]].set_index("task")["label"]
    copier = (df["worker"] == workers[1]) & df["task"].isin(source.index) & \
        (rng.random(len(df)) < copy)
    df.loc[copier, "label"] = source.loc[df.loc[copier, "task"]].to_numpy()
    return Annotations.from_frame(df), workers


@pytest.mark.parametrize("copy", [0.0, 0.8])
def test_copying_pairs_are_found_without_truth(copy):
    ann, workers = copying_crowd(copy=copy)
    block = Block.from_annotations(ann)
    pairs = copying_pairs(*pair_sums(block, ann.n_classes), z=4.0)
    found = {tuple(sorted(ann.annotator_ids[[a, b]])) for a, b in zip(*pairs.nonzero())}
    assert found == ({tuple(sorted(workers[:2]))} if copy else set())
    # the pair's annotations on shared items weigh a half; every other annotation one
    factor = copy_weights(block, pairs, ann.n_classes)
    by_pair = np.isin(ann.annotator_ids[ann.annotators], workers[:2])
    both = np.bincount(ann.items, weights=by_pair, minlength=ann.n_items)[ann.items] == 2
    np.testing.assert_array_equal(factor, np.where(by_pair & both & (copy > 0), 0.5, 1.0))


def test_pair_sums_add_over_blocks_and_sample_items_by_content():
    ann, _ = copying_crowd()
    block = Block.from_annotations(ann)
    cut = np.arange(ann.n_items) < 600
    whole = pair_sums(block, ann.n_classes)
    parts = [pair_sums(block.subset(rows), ann.n_classes) for rows in (cut, ~cut)]
    for total, a, b in zip(whole, *parts):
        np.testing.assert_array_equal(_dense(total), _dense(a) + _dense(b))
    profiles = label_profile_keys(ann.annotator_label_counts())
    sampled = pair_sums(block, ann.n_classes, 3, 5, profiles)
    chosen = item_offsets(block.item_content_keys(ann.n_classes, profiles), 3, 5) == 0
    with pytest.raises(ValueError, match="label profiles"):
        pair_sums(block, ann.n_classes, 3, 5)
    assert 0.2 < chosen.mean() < 0.45
    for a, b in zip(sampled, pair_sums(block.subset(chosen), ann.n_classes)):
        np.testing.assert_array_equal(_dense(a), _dense(b))


def _dense(x):
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


def test_agreement_sums_add_over_blocks():
    sim = simulate_crowd(n_items=300, n_classes=3, n_annotators=20, annotations_per_item=4,
                         seed=2)
    ann = sim.annotations
    rng = np.random.default_rng(0)
    tests = [rng.random(ann.n_annotations) < 0.2 for _ in range(2)]
    posts = [[rng.dirichlet(np.ones(3), ann.n_items) for _ in range(3)] for _ in tests]
    weights = annotator_weights(ann.annotations_per_annotator(), ann.annotators)
    whole = agreement_sums(Block.from_annotations(ann), tests, posts, weights)
    cut = np.array([0, 90, 200, ann.n_items])
    per_item = ann.annotations_per_item()
    starts = np.concatenate([[0], np.cumsum(per_item)])
    parts = []
    for lo, hi in zip(cut[:-1], cut[1:]):
        rows = np.zeros(ann.n_items, bool)
        rows[lo:hi] = True
        span = slice(starts[lo], starts[hi])
        parts.append(agreement_sums(Block.from_annotations(ann).subset(rows),
                                    [t[span] for t in tests],
                                    [[p[lo:hi] for p in ps] for ps in posts], weights[span]))
    np.testing.assert_allclose(sum(parts), whole, rtol=1e-10, atol=1e-12)
    means, bounds = agreement_bounds(whole, 1.64)
    assert bounds[0] == 0 and np.all(bounds[1:] < means[1:] - means[0] + 1e-12)


def test_paired_gains_are_the_clustered_standard_errors_of_two_candidates():
    """paired_gains(sums, b): each candidate's weighted agreement minus b's and the standard
    error of that difference clustered by item, computed here from the per-item sums
    directly."""
    sim = simulate_crowd(n_items=200, n_classes=3, n_annotators=15, annotations_per_item=4,
                         seed=5)
    ann = sim.annotations
    rng = np.random.default_rng(1)
    tests = [rng.random(ann.n_annotations) < 0.3]
    posts = [[rng.dirichlet(np.ones(3), ann.n_items) for _ in range(4)]]
    weights = rng.uniform(0.2, 1.0, ann.n_annotations)
    sums = agreement_sums(Block.from_annotations(ann), tests, posts, weights)
    items = np.repeat(np.arange(ann.n_items), ann.annotations_per_item())
    labels = Block.from_annotations(ann).X.indices % 3
    t = tests[0]
    agree = np.zeros((4, ann.n_annotations))
    for c in range(4):
        agree[c, t] = agreement_scores(posts[0][c], items[t], labels[t])
    w = np.where(t, weights, 0.0)
    w_item = np.bincount(items, weights=w, minlength=ann.n_items)
    for b in range(4):
        gain, se = paired_gains(sums, b)
        for c in range(4):
            d = np.bincount(items, weights=w * (agree[c] - agree[b]), minlength=ann.n_items)
            g = d.sum() / w.sum()
            assert gain[c] == pytest.approx(g, abs=1e-12)
            assert se[c] == pytest.approx(np.sqrt(((d - g * w_item) ** 2).sum()) / w.sum(),
                                          abs=1e-12)
    means, bounds = agreement_bounds(sums, 1.64)
    gain, se = paired_gains(sums, 0)
    np.testing.assert_allclose(bounds[1:], (gain - 1.64 * se)[1:])


def sums_of(means, se_scale, n_items=400, seed=0):
    """Summed agreement sums of len(means) candidates whose item-level agreement is ``means``
    plus independent noise of standard deviation ``se_scale`` per item, centred so that the
    candidates' mean agreements are ``means`` exactly."""
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((len(means), n_items))
    per_item = np.asarray(means)[:, None] + se_scale * (noise - noise.mean(axis=1, keepdims=True))
    per_item[0] = means[0]
    d = per_item - per_item[0]
    w = np.ones(n_items)
    out = np.zeros((len(means), 6 + len(means)))
    out[:, 0], out[:, 1] = per_item.sum(axis=1), n_items
    out[:, 2], out[:, 3], out[:, 4] = d.sum(axis=1), (d ** 2).sum(axis=1), d.sum(axis=1)
    out[0, 5] = (w ** 2).sum()
    out[:, 6:] = d @ d.T
    return out


def test_near_ties_go_to_the_latest_eligible_candidate_and_clear_leads_to_the_best():
    """Step 30: the eligible candidates within `confidence` paired standard errors of the best
    one are tied with it and the tie goes to the latest in the ladder; a lead clear of that
    band keeps the best; voting is never in the band of an eligible candidate."""
    ladder = [(name, None) for name in ("majority_vote", "bwa", "ibcc", "ebcc")]
    model = AutoLabelModel()
    near = sums_of([0.60, 0.601, 0.680, 0.677], 0.05)
    scores = model.eligible_scores(ladder, near)
    assert set(scores) == {"majority_vote", "ibcc", "ebcc"}, model.heldout_agreement_
    assert model.tied_ == ["ibcc", "ebcc"]
    assert model.choose(ladder, scores, model.tied_) == "ebcc"
    assert model.choose(ladder, scores) == "ibcc"          # without the band: the best
    clear = sums_of([0.60, 0.601, 0.700, 0.650], 0.05)
    scores = model.eligible_scores(ladder, clear)
    assert model.tied_ == ["ibcc"] and model.choose(ladder, scores, model.tied_) == "ibcc"
    # an exact tie of two identical candidates goes to the later as well
    same = sums_of([0.60, 0.61, 0.68, 0.68], 0.0)
    assert tied_with_best(same, [0, 2, 3], 1.64) == [2, 3]
    # voting alone eligible: it is chosen
    flat = sums_of([0.60, 0.60, 0.60, 0.60], 0.05)
    scores = model.eligible_scores(ladder, flat)
    assert model.tied_ == ["majority_vote"] and model.choose(ladder, scores, model.tied_) == \
        "majority_vote"


def test_a_small_clique_crowd_chooses_alike_over_fold_draws():
    """Step 30's reason: on cliques_moderate seed 2 (half size) IBCC and EBCC are 0.0003
    apart in held-out agreement and three passes picked IBCC (33 of 1,020 items below
    voting) on some fold draws, EBCC (3 below) on others. Ten passes and the band take EBCC
    on every draw tried, with IBCC tied to it (without the band IBCC, 0.0003 ahead, would be
    chosen on some of them)."""
    crowd = simulate_failure_kind("cliques_moderate", seed=2, scale=0.5)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    vote = accuracy(MajorityVote().fit(ann), y)
    best = []
    for state in (0, 1, 2):
        auto = AutoLabelModel(random_state=state).fit(ann)
        assert auto.chosen_ == "ebcc" and "ibcc" in auto.tied_, (state, auto.heldout_agreement_)
        assert accuracy(auto, y) >= vote - 3.5 / len(y)
        scores = auto.selection_scores_
        best.append(max(scores, key=scores.get))
    assert "ibcc" in best, best      # the band, not the draw, is what keeps EBCC


def test_tie_broken_vote_is_the_vote_except_on_ties():
    sim = simulate_crowd(n_items=600, n_classes=2, annotations_per_item=2, seed=0)
    ann = sim.annotations
    vote = MajorityVote().fit(ann)
    broken = TieBrokenVote().fit(ann)
    tied = vote.tied_items_
    assert tied.any() and (~tied).any()
    np.testing.assert_array_equal(broken.predict()[~tied], vote.predict()[~tied])
    counts = ann.label_counts()
    assert (counts[tied, broken.predict()[tied]] == counts[tied].max(axis=1)).all()


def gold_codes_of(y, n, seed=0):
    gold = np.full(len(y), -1, dtype=np.int64)
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    gold[idx] = y[idx]
    return gold


def test_enough_gold_is_scored_and_held_fixed():
    crowd = simulate_failure_kind("biased_experts", seed=1, scale=0.5)
    ann, y = crowd.annotations, crowd.y
    gold = gold_codes_of(y, 40)
    model = AutoLabelModel().fit(ann, gold=gold)
    assert model.n_gold_ == 40 and set(model.gold_accuracy_) == set(model.heldout_agreement_)
    known = gold >= 0
    np.testing.assert_array_equal(model.predict()[known], y[known])


@pytest.mark.slow
def test_gold_overrules_voting_on_bluebirds():
    """Held-out agreement keeps voting on bluebirds (annotators biased to one class); 40 gold
    items show that an annotator model is clearly better, and the choice switches."""
    ann, truth = load_truth_inference(require_data("truth_inference", "bluebirds"))
    gold = gold_codes_of(truth, 40)
    plain = AutoLabelModel().fit(ann)
    model = AutoLabelModel().fit(ann, gold=gold)
    assert plain.chosen_ == "majority_vote"
    assert model.selection_ == "gold" and model.chosen_ != "majority_vote"
    rest = gold < 0
    assert accuracy_on(model, truth, rest) > accuracy_on(plain, truth, rest) + 0.05


def accuracy_on(model, truth, rows):
    return float((model.predict()[rows] == truth[rows]).mean())


def test_a_little_gold_is_held_fixed_but_the_choice_stays_by_agreement():
    crowd = simulate_failure_kind("biased_experts", seed=1, scale=0.5)
    ann, y = crowd.annotations, crowd.y
    gold = gold_codes_of(y, 10)
    model = AutoLabelModel().fit(ann, gold=gold)
    assert model.selection_ == "agreement" and model.n_gold_ == 10
    np.testing.assert_array_equal(model.predict()[gold >= 0], y[gold >= 0])


def test_gold_as_a_mapping_of_item_ids_and_labels_and_its_errors():
    frame = pd.DataFrame({"task": ["a", "a", "b", "b", "c"], "worker": [1, 2, 1, 2, 1],
                          "label": ["x", "y", "y", "y", "x"]})
    ann = Annotations.from_frame(frame)
    model = DawidSkene().fit(ann, gold={"a": "y"})
    assert model.predict_labels()[0] == "y"
    with pytest.raises(CrowdDataError, match="gold item 'z'"):
        DawidSkene().fit(ann, gold={"z": "x"})
    with pytest.raises(CrowdDataError, match="gold label 'w' of item 'a'"):
        DawidSkene().fit(ann, gold={"a": "w"})
    with pytest.raises(CrowdDataError, match="3 integer class codes"):
        DawidSkene().fit(ann, gold=np.array([0, 1]))
    from crowd_keras.lia.label_model import LIA      # a model without gold

    with pytest.raises(TypeError):
        LIA().fit(ann, gold={"a": "y"})


@pytest.mark.parametrize("name", ["dawid_skene", "auto", "majority_vote", "ibcc"])
def test_unknown_keywords_are_type_errors(name):
    ann = simulate_crowd(n_items=50, seed=0).annotations
    with pytest.raises(TypeError):
        get_label_model(name).fit(ann, totally_bogus="x")
