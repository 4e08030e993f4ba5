"""The default label model (`auto`): never clearly below voting where plain Dawid-Skene
overfits, as good as Dawid-Skene where it wins, chosen without gold. The failure kinds of
real crowds are in test_default_label_model.py."""
import numpy as np
import pandas as pd
import pytest

from conftest import require_data

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import (AutoLabelModel, DawidSkene, MajorityVote, get_label_model)
from crowd_keras.aggregation.auto import default_candidates, heldout_folds
from crowd_keras.aggregation.registry import DEFAULT_LABEL_MODEL
from crowd_keras.datasets import load_truth_inference, load_wrench, simulate_crowd

# a worker population with 30 % spammers; few labels per worker, a few busy accounts
SPAMMY = [{"name": "workers", "probability": 0.7, "accuracy": 0.75},
          {"name": "spammers", "probability": 0.3, "accuracy": None}]


def expected_vote_accuracy(ann, y):
    """Majority vote's accuracy with ties split at random (in expectation): neither the
    lowest-code rule's luck nor its bad luck."""
    proba = MajorityVote(tie_break="uniform").fit(ann).predict_proba()
    return float(proba[np.arange(len(y)), y].mean())


def test_auto_is_the_default_everywhere():
    assert DEFAULT_LABEL_MODEL == "auto"
    assert isinstance(get_label_model("auto"), AutoLabelModel)
    from crowd_keras.integrations.snorkel import DEFAULT_METHOD
    assert DEFAULT_METHOD == "auto"


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 4])
def test_auto_about_voting_or_above_on_sparse_crowds_with_spammers(n_classes):
    """Three labels per item: the held-out fits see two, where voting ties often, so the
    selection flatters the annotator models: a measured limit (before step 30 one seed of the
    four-class crowd chose BWA two points below voting; since, the lowest of seeds 0-5 of
    both crowds is 14 of 2,000 items below, failure_kinds.md)."""
    below_ds, gains = 0, []
    for seed in range(4):
        sim = simulate_crowd(n_items=2000, n_classes=n_classes, n_annotators=800,
                             annotations_per_item=3, groups=SPAMMY, activity=1.0, seed=seed)
        ann, y = sim.annotations, sim.y
        assert np.median(ann.annotations_per_annotator()) <= 5       # few labels per worker
        mv = (MajorityVote().fit(ann).predict() == y).mean()
        auto = AutoLabelModel().fit(ann)
        gains.append((auto.predict() == y).mean() - mv)
        assert gains[-1] >= -0.025, (seed, auto.chosen_)
        below_ds += (DawidSkene().fit(ann).predict() == y).mean() < mv
    assert np.mean(gains) > 0
    assert below_ds >= 2   # the crowds are the failure mode: plain Dawid-Skene loses to voting


def test_auto_keeps_dawid_skenes_win_on_dense_biased_crowds():
    # every annotator labels many items and confuses classes in its own way: DS's home ground
    sim = simulate_crowd(n_items=1500, n_classes=4, n_annotators=30, annotations_per_item=5,
                         annotator_accuracy=(0.45, 0.9), individual_noise="asymmetric", seed=5)
    ann, y = sim.annotations, sim.y
    auto = AutoLabelModel().fit(ann)
    ds = (DawidSkene().fit(ann).predict() == y).mean()
    assert auto.chosen_ != "majority_vote"
    assert (auto.predict() == y).mean() >= ds - 0.005
    assert ds > expected_vote_accuracy(ann, y) + 0.02


def test_selection_uses_held_out_annotations_and_no_gold():
    sim = simulate_crowd(n_items=600, n_classes=3, n_annotators=40, annotations_per_item=4,
                         seed=1)
    auto = AutoLabelModel().fit(sim.annotations)
    names = [name for name, _ in default_candidates(3)]
    assert list(auto.heldout_agreement_) == names and auto.selection_ == "agreement"
    eligible = auto.selection_scores_
    assert names[0] in eligible and set(eligible) <= set(names)
    assert auto.chosen_ == max(eligible, key=eligible.get)
    assert auto.n_heldout_ > 0
    # the fitted state is the chosen model refitted on every annotation
    assert auto.model_.annotations_ is sim.annotations
    np.testing.assert_allclose(auto.predict_proba(), auto.model_.predict_proba())
    np.testing.assert_allclose(auto.predict_proba(sim.annotations), auto.predict_proba(),
                               atol=1e-9)
    # deterministic for a seed; another seed draws other folds
    again = AutoLabelModel().fit(sim.annotations)
    assert again.heldout_agreement_ == auto.heldout_agreement_


def test_folds_hide_part_of_each_item_and_never_single_annotations():
    ann = Annotations.from_frame(pd.DataFrame({
        "task": [0, 0, 0, 0, 1, 1, 2], "worker": [0, 1, 2, 3, 0, 1, 2], "label": [0, 1, 0, 0, 1, 1, 0]}))
    folds = heldout_folds(ann, 5, seed=0)
    assert folds[ann.items == 2].tolist() == [-1]                  # alone on its item
    first = folds[ann.items == 0]
    assert len(set(first.tolist())) == 4                            # one per fold: none emptied
    # the fold of an annotation depends on what its item was told, not on where the item is
    # stored nor on its id
    moved = ann.subset([2, 1, 0])
    of_first = moved.item_ids[moved.items] == 0
    np.testing.assert_array_equal(np.sort(heldout_folds(moved, 5, 0)[of_first]), np.sort(first))
    renamed = Annotations.from_frame(pd.DataFrame({
        "task": ["c", "c", "c", "c", "b", "b", "a"], "worker": [0, 1, 2, 3, 0, 1, 2],
        "label": [0, 1, 0, 0, 1, 1, 0]}))
    np.testing.assert_array_equal(
        np.sort(heldout_folds(renamed, 5, 0)[renamed.item_ids[renamed.items] == "c"]),
        np.sort(first))


@pytest.mark.parametrize("ids", [np.arange(2000), np.arange(2000).astype(str).astype(object)],
                         ids=["integer ids", "string ids"])
def test_each_seed_draws_its_own_folds_whatever_the_id_type(ids):
    # pandas' hash key seeds only strings: integer ids must get the seed too, or every
    # repeated pass of AutoLabelModel would score the same folds again
    from crowd_keras.aggregation.auto import item_offsets
    draws = [item_offsets(ids, 5, seed) for seed in range(3)]
    for a in range(3):
        assert set(np.unique(draws[a])) == set(range(5))
        for b in range(a + 1, 3):
            assert (draws[a] != draws[b]).mean() > 0.5     # independent draws: about 0.8
    np.testing.assert_array_equal(item_offsets(ids, 5, 1), draws[1])   # deterministic


def test_auto_on_labeling_functions_is_the_abstain_aware_model():
    w = load_wrench(require_data("wrench", "youtube"), "train")
    ann = Annotations.from_label_matrix(w.L, cardinality=2)
    auto = AutoLabelModel().fit(simulate_crowd(n_items=100, n_classes=3, n_annotators=10,
                                               seed=0).annotations)
    auto.fit(ann)       # a refit on labeling functions keeps nothing of the crowd fit
    assert auto.named_classes_.tolist() == [True, True]
    assert auto.regime_ == auto.selection_ == "labeling_functions"
    assert auto.chosen_ == "abstain_dawid_skene" and auto.model_ is auto.labeling_function_model_
    assert auto.heldout_agreement_ == {} and auto.copy_pairs_.shape == (0, 2)
    assert "chose 'abstain_dawid_skene' by labeling_functions" in repr(auto)
    assert (auto.predict() == w.y).mean() >= (MajorityVote().fit(ann).predict() == w.y).mean()


def test_auto_refuses_bad_settings_and_accepts_its_own_candidates():
    sim = simulate_crowd(n_items=200, n_classes=2, n_annotators=10, seed=0)
    with pytest.raises(ValueError, match="n_folds"):
        AutoLabelModel(n_folds=1).fit(sim.annotations)
    with pytest.raises(ValueError, match="distinct names"):
        AutoLabelModel(candidates=[("a", DawidSkene()), ("a", MajorityVote())]).fit(sim.annotations)
    mine = AutoLabelModel(candidates=[("flat", DawidSkene()), ("strong", DawidSkene(prior_strength=50))])
    assert mine.fit(sim.annotations).chosen_ in ("flat", "strong")
    # one annotation per item: nothing to hold out, the simplest candidate is used
    single = Annotations.from_frame(pd.DataFrame({"task": [0, 1, 2, 3], "worker": [0, 1, 0, 1],
                                                  "label": [0, 1, 1, 0]}))
    assert AutoLabelModel().fit(single).chosen_ == "majority_vote"


def test_duplicated_answers_are_an_error_naming_the_argument_or_kept_as_documented():
    df = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "a", "a", "b"], "label": [0, 1, 1, 1]})
    with pytest.raises(CrowdDataError, match="duplicates='last'"):
        AutoLabelModel().fit(df)
    ann = Annotations.from_frame(df, duplicates="last")
    assert ann.n_duplicates == 1 and ann.n_annotations == 3
    assert AutoLabelModel().fit(ann).predict_proba().shape == (2, 2)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bluebirds", "product", "dog", "weather_sentiment"])
def test_auto_at_least_voting_and_near_dawid_skene_on_real_crowds(name):
    """At least voting on these crowds; near Dawid-Skene except on bluebirds, where the
    held-out agreement rule keeps voting (0.759 against Dawid-Skene's 0.898: most bluebirds
    annotators answer one class whatever the truth), and on product, where the labels are
    decided under a uniform class prior (step 24) and its gold covers every item of a skewed
    crowd: the learned prior's accuracy, about Dawid-Skene's, is what that costs
    (benchmarks/results/default_label_model.md)."""
    ann, truth = load_truth_inference(require_data("truth_inference", name))
    known = truth >= 0
    auto = (AutoLabelModel().fit(ann).predict()[known] == truth[known]).mean()
    assert auto >= expected_vote_accuracy(ann.subset(np.flatnonzero(known)), truth[known])
    ds = (DawidSkene().fit(ann).predict()[known] == truth[known]).mean()
    if name == "bluebirds":
        assert auto < ds - 0.1     # the measured limit, kept visible: a fix must update this
    elif name == "product":        # the same, for the uniform target prior
        learned = AutoLabelModel(target_prior="learned").fit(ann).predict()
        assert (learned[known] == truth[known]).mean() >= ds - 0.005 > auto + 0.01
    else:
        assert auto >= ds - 0.005


@pytest.mark.parametrize("setting", [{"class_prior": [0.3, 0.3, 0.4]}, {"smoothing": 0.5}])
def test_settings_reach_a_tie_broken_vote_candidate_only_where_its_tie_model_takes_them(
        setting):
    # the default model gave its class_prior / smoothing to every candidate that has the
    # parameter; TieBrokenVote has them for its tie model, and IBCC (its default) refuses them
    from crowd_keras.aggregation import TieBrokenVote

    sim = simulate_crowd(n_items=80, n_classes=3, n_annotators=8, seed=3)
    (name, value), = setting.items()
    for tie_model, given in (("ibcc", False), ("dawid_skene", True)):
        model = AutoLabelModel(candidates=[("mv", MajorityVote()),
                                           ("tbv", TieBrokenVote(tie_model=tie_model))],
                               **setting)
        assert (getattr(dict(model.ladder(3))["tbv"], name) == value) is given
        assert model.fit(sim.annotations).chosen_ in ("mv", "tbv")
