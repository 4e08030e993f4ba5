"""The simulators' arguments are checked before any draw, each error naming the argument
(they failed later with numpy's message naming none, or sampled from negative
"probabilities" and went on)."""
import numpy as np
import pytest

from crowd_keras.datasets import simulate_crowd, simulate_failure_kind, simulate_hard_crowd
from crowd_keras.errors import CrowdDataError


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(n_classes=2.5), TypeError, "n_classes must be an integer >= 2"),
    (dict(n_items=10.5), TypeError, "n_items must be an integer >= 1"),
    (dict(n_items=True), TypeError, "n_items must be an integer"),
    (dict(n_annotators="30"), TypeError, "n_annotators must be an integer"),
    (dict(annotations_per_item=2.0), TypeError, "annotations_per_item must be an integer"),
    (dict(class_sep=float("nan")), ValueError, "class_sep must be a finite number"),
    (dict(class_sep=-1), ValueError, "class_sep must be a finite number >= 0"),
    (dict(annotator_accuracy=(0.9, 0.5)), CrowdDataError, "low <= high"),
    (dict(individual_noise="bogus", groups=[{"probability": 1, "accuracy": None}]),
     CrowdDataError, "individual_noise must be one of"),
    (dict(common_noise="bogus"), CrowdDataError, "common_noise must be one of"),
    (dict(common_noise="asymmetric", common_proportion="0.5"), TypeError,
     "common_proportion must be a number"),
    (dict(groups={"probability": 1, "accuracy": 0.5}), CrowdDataError,
     "groups must be a sequence of dicts"),
    (dict(groups=[{"accuracy": 0.5}]), CrowdDataError, "groups must be a sequence of dicts"),
    (dict(activity="zipf"), CrowdDataError, "activity must be 'uniform' or a Zipf exponent"),
    (dict(activity=float("inf")), CrowdDataError, "activity must be 'uniform' or a Zipf"),
    (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
    (dict(seed=1.5), TypeError, "seed must be an integer >= 0"),
])
def test_simulate_crowd_names_the_bad_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        simulate_crowd(**{"n_items": 20, **kwargs})


def test_simulate_crowd_seeds_still_accepted():
    a = simulate_crowd(n_items=30, seed=np.int64(4))
    b = simulate_crowd(n_items=30, seed=np.random.SeedSequence(4))
    assert np.array_equal(a.annotations.labels, b.annotations.labels)
    assert simulate_crowd(n_items=5, seed=None).annotations.n_items == 5


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(prolific_bias=2), ValueError, r"prolific_bias must be a finite number in \[0, 1\]"),
    (dict(prolific_bias=-0.5), ValueError, "prolific_bias must be"),
    (dict(ambiguity=(0.5, 2)), ValueError, "ambiguity q must be"),
    (dict(ambiguity=0.5), CrowdDataError, r"ambiguity must be \(share, q\)"),
    (dict(cliques=(1, 2, 2.0, 0.5)), ValueError, "cliques copy must be"),
    (dict(cliques=(0, 2, 0.5, 0.5)), ValueError, "cliques groups must be an integer >= 1"),
    (dict(activity=-1), ValueError, "activity must be a finite number >= 0"),
    (dict(activity=float("nan")), ValueError, "activity must be a finite number"),
    (dict(prior=(float("nan"), 1)), CrowdDataError, "prior must be two or more"),
    (dict(prior=(float("inf"), 1)), CrowdDataError, "prior must be two or more"),
    (dict(prior="ab"), CrowdDataError, "prior must be two or more .* got 'ab'"),  # numpy's text
    (dict(prior=None), CrowdDataError, "prior must be two or more .* got None"),
    (dict(types="good"), CrowdDataError, "types must be a dict"),
    (dict(types={"good": "0.5"}), CrowdDataError, "types must give shares >= 0"),
    (dict(types={"good": float("nan")}), CrowdDataError, "types must give shares >= 0"),
    (dict(seed=-1), ValueError, "seed must be an integer >= 0"),
])
def test_hard_crowd_names_the_bad_argument(kwargs, error, match):
    args = {**dict(n_items=10, prior=(0.5, 0.5), n_workers=5, per_item=2), **kwargs}
    with pytest.raises(error, match=match):
        simulate_hard_crowd(**args)


def test_failure_kind_seed_and_kind_checked():
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        simulate_failure_kind("dense_biased", seed=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        simulate_failure_kind("dense_biased", seed="a")
    with pytest.raises(CrowdDataError, match="unknown failure kind"):
        simulate_failure_kind(["dense_biased"])             # was unhashable type: 'list'


def test_ambiguous_answers_are_a_neighbouring_grade_at_the_ends_too():
    """``ambiguity``: every answer on an ambiguous item is a neighbouring grade; at the top
    grade the fallback wrapped round to grade 0, the farthest one."""
    crowd = simulate_hard_crowd(n_items=400, prior=(.2, .2, .2, .2, .2), n_workers=30,
                                per_item=5, types={"good": 1.0}, ambiguity=(1.0, 1.0), seed=0)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    truth = y[ann.items]
    assert set(np.unique(truth)) == set(range(5))
    assert (np.abs(ann.labels - truth) == 1).all(), np.unique(ann.labels[truth == 4])


def test_simulated_crowd_needs_a_feature_and_finite_group_shares():
    with pytest.raises(ValueError, match="n_features must be an integer >= 1"):
        simulate_crowd(n_items=5, n_features=0)    # was x of shape (5, 0)
    groups = [{"probability": float("inf"), "accuracy": .5}, {"probability": 1, "accuracy": .9}]
    with pytest.raises(CrowdDataError, match="groups need finite probabilities"):
        simulate_crowd(n_items=5, groups=groups)   # was numpy's "Probabilities contain NaN"


def test_simulate_crowd_refuses_unknown_group_keys():
    # a misspelt 'accuracy' was ignored: the group had no accuracy and labelled as spammers
    groups = [{"name": "experts", "probability": 0.5, "acuracy": 0.9},
              {"name": "workers", "probability": 0.5, "accuracy": 0.7}]
    with pytest.raises(CrowdDataError, match=r"groups: unknown key\(s\) \['acuracy'\] in "
                                             r"group .*'experts'"):
        simulate_crowd(n_items=20, groups=groups)
    good = [{"name": "experts", "probability": 0.5, "accuracy": 0.9},
            {"name": "spammers", "probability": 0.5, "accuracy": None}]
    assert simulate_crowd(n_items=20, groups=good).group_names == ("experts", "spammers")
