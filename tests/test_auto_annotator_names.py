"""The default's held-out folds follow what the annotators said, not their names: renaming or
reordering the annotators (users by id in one Label Studio export, by e-mail in another)
hides the same annotations together and so makes the same choice."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import AutoLabelModel
from crowd_keras.aggregation.auto import heldout_folds
from crowd_keras.aggregation.em import Block
from crowd_keras.datasets import simulate_failure_kind


def as_frame(ann: Annotations) -> pd.DataFrame:
    return pd.DataFrame({"task": ann.item_ids[ann.items],
                         "worker": ann.annotator_ids[ann.annotators],
                         "label": np.asarray(ann.classes)[ann.labels]})


def renamed(df: pd.DataFrame) -> pd.DataFrame:
    """The annotators under names that sort in the reverse order of the old ones."""
    names = sorted(df["worker"].unique())
    new = {old: f"w{len(names) - i:05d}" for i, old in enumerate(names)}
    return df.assign(worker=df["worker"].map(new)), new


def folds_by_content(ann: Annotations, folds: np.ndarray, names=None) -> pd.Series:
    """The fold of each (item, annotator, label), annotators under ``names`` (old → new)."""
    frame = as_frame(ann)
    if names is not None:
        back = {v: k for k, v in names.items()}
        frame["worker"] = frame["worker"].map(back)
    frame["fold"] = folds
    # repeated answers of one annotator on an item: the folds of equal annotations, sorted
    return frame.groupby(["task", "worker", "label"])["fold"].apply(
        lambda f: tuple(sorted(f))).sort_index()


@pytest.fixture(scope="module")
def crowd():
    # the repeated-answers kind: 8 % of (item, worker) pairs answered twice
    return simulate_failure_kind("prolific_repeated", seed=1, scale=0.5).annotations


def test_renamed_annotators_draw_the_same_folds(crowd):
    df, names = renamed(as_frame(crowd))
    other = Annotations.from_frame(df)
    assert not np.array_equal(other.annotators, crowd.annotators)     # the codes did move
    for seed in (0, 7):
        np.testing.assert_array_equal(
            folds_by_content(crowd, heldout_folds(crowd, 5, seed)),
            folds_by_content(other, heldout_folds(other, 5, seed), names))


def test_fingerprints_depend_on_content_only(crowd):
    k = crowd.n_classes
    prints = Block.from_annotations(crowd).annotator_fingerprints(k)
    df, names = renamed(as_frame(crowd))
    other = Annotations.from_frame(df)
    moved = Block.from_annotations(other).annotator_fingerprints(k)
    code = {name: i for i, name in enumerate(other.annotator_ids)}
    np.testing.assert_array_equal(
        prints, moved[[code[names[old]] for old in crowd.annotator_ids]])
    # one label changed: that annotator's fingerprint changes, no other's
    labels = np.asarray(crowd.labels).copy()
    labels[0] = (labels[0] + 1) % k
    changed = Annotations(crowd.items, crowd.annotators, labels, item_ids=crowd.item_ids,
                          annotator_ids=crowd.annotator_ids, classes=crowd.classes)
    after = Block.from_annotations(changed).annotator_fingerprints(k)
    assert np.flatnonzero(after != prints).tolist() == [int(crowd.annotators[0])]


def test_renamed_annotators_get_the_same_choice_and_labels(crowd):
    df, _ = renamed(as_frame(crowd))
    other = Annotations.from_frame(df)
    a = AutoLabelModel().fit(crowd)
    b = AutoLabelModel().fit(other)
    assert a.chosen_ == b.chosen_
    assert a.heldout_agreement_.keys() == b.heldout_agreement_.keys()
    for name, score in a.heldout_agreement_.items():
        assert b.heldout_agreement_[name] == pytest.approx(score, abs=1e-12), name
    pa = pd.DataFrame(a.predict_proba(), index=crowd.item_ids).sort_index()
    pb = pd.DataFrame(b.predict_proba(), index=other.item_ids).sort_index()
    np.testing.assert_allclose(pa.to_numpy(), pb.to_numpy(), atol=1e-9)


def test_ranks_within_groups_follow_the_keys_and_storage_order_on_ties():
    from crowd_keras.numerics import ranks_within

    rng = np.random.default_rng(3)
    per = rng.integers(0, 9, 5000)
    keys = rng.integers(0, 2**63, per.sum(), dtype=np.uint64)
    # ties: each row whose position is a multiple of 7 takes the next row's key (often
    # the same item's)
    tied = np.arange(0, len(keys) - 1, 7)
    keys[tied] = keys[tied + 1]
    group = np.repeat(np.arange(len(per)), per)
    order = np.lexsort((np.arange(len(keys)), keys, group))
    expected = np.empty(len(keys), dtype=np.int64)
    starts = np.cumsum(per) - per
    expected[order] = np.arange(len(keys)) - starts[group[order]]
    np.testing.assert_array_equal(ranks_within(per, keys), expected)
    np.testing.assert_array_equal(ranks_within(np.array([4]),
                                               np.array([5, 1, 9, 1], dtype=np.uint64)),
                                  [2, 0, 3, 1])


def test_annotators_of_one_label_are_ranked_by_what_they_said():
    # most workers of a large crowd give one label or a few; an annotator of one label has
    # that label's hash as its fingerprint, and fingerprint XOR hash gave every such
    # annotation one key, so their ranks within an item fell back to annotator codes
    rng = np.random.default_rng(0)
    rows = [(f"t{i}", f"u{i}_{j}", str(rng.integers(3))) for i in range(200) for j in range(6)]
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    ann = Annotations.from_frame(df)
    other = Annotations.from_frame(renamed(df)[0])

    def folds_of_labels(a):
        # two annotators of one label each, alike on an item, are interchangeable: compare
        # the folds of each (item, label), not of each name
        frame = as_frame(a).assign(fold=heldout_folds(a, 3, seed))
        return frame.groupby(["task", "label"])["fold"].apply(lambda f: tuple(sorted(f)))

    for seed in (0, 5):
        pd.testing.assert_series_equal(folds_of_labels(ann), folds_of_labels(other))
