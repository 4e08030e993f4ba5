"""Answers that do not depend on how items are named: the same crowd with its items renamed
(a Label Studio project re-imported under new task ids, a label matrix whose rows are
shuffled) gets the same folds, the same choice and the same labels from the default, and the
same start and labels from EBCC, MACE, the mixture of groups and LIA, in memory and on Dask:
their draws are keyed on what each item was told (``Block.item_content_keys``,
``Block.content_fingerprints``), not on its id."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import AutoLabelModel, get_label_model
from crowd_keras.aggregation.auto import heldout_folds
from crowd_keras.aggregation.em import Block
from crowd_keras.datasets import simulate_failure_kind
from crowd_keras.numerics import label_profile_keys


def as_frame(ann: Annotations) -> pd.DataFrame:
    return pd.DataFrame({"task": ann.item_ids[ann.items],
                         "worker": ann.annotator_ids[ann.annotators],
                         "label": np.asarray(ann.classes)[ann.labels]})


def renamed_items(df: pd.DataFrame, seed: int = 0) -> tuple:
    """The items under new names that sort in another order, the rows shuffled: (frame,
    {old id: new id})."""
    rng = np.random.default_rng(seed)
    old = df["task"].unique()
    new = {t: f"task-{code:06d}" for t, code in zip(old, rng.permutation(len(old)))}
    return df.assign(task=df["task"].map(new)).sample(frac=1, random_state=seed), new


def by_old_id(values: np.ndarray, ann: Annotations, names: dict) -> pd.DataFrame:
    """Rows of ``values`` (one per item of ``ann``) indexed by the items' old ids."""
    back = {v: k for k, v in names.items()}
    return pd.DataFrame(values, index=[back[i] for i in ann.item_ids]).sort_index()


@pytest.fixture(scope="module")
def crowd():
    # the clique kind: EBCC's start decides between local optima there (its labels moved on
    # 295 of 1,020 items with the ids re-drawn before its draws were keyed on content)
    return simulate_failure_kind("cliques_moderate", seed=2, scale=0.5).annotations


def test_item_content_keys_depend_on_what_the_items_were_told(crowd):
    k = crowd.n_classes
    profiles = label_profile_keys(crowd.annotator_label_counts())
    keys = Block.from_annotations(crowd).item_content_keys(k, profiles)
    df, names = renamed_items(as_frame(crowd))
    other = Annotations.from_frame(df)
    assert not np.array_equal(other.item_ids, crowd.item_ids)
    again = Block.from_annotations(other).item_content_keys(
        k, label_profile_keys(other.annotator_label_counts()))
    # annotator codes may move with the rows: profiles are per annotator, keys per item
    np.testing.assert_array_equal(by_old_id(again, other, names).to_numpy().ravel(),
                                  pd.Series(keys, index=crowd.item_ids).sort_index().to_numpy())
    # distinct items (by their annotations) get distinct keys here
    assert len(np.unique(keys)) == len({tuple(sorted(zip(g["worker"], g["label"])))
                                        for _, g in as_frame(crowd).groupby("task")})
    # one label changed: the keys of the items that annotator labelled change (its label
    # profile moved), no other's
    labels = np.asarray(crowd.labels).copy()
    labels[0] = (labels[0] + 1) % k
    changed = Annotations(crowd.items, crowd.annotators, labels, item_ids=crowd.item_ids,
                          annotator_ids=crowd.annotator_ids, classes=crowd.classes)
    after = Block.from_annotations(changed).item_content_keys(
        k, label_profile_keys(changed.annotator_label_counts()))
    touched = np.unique(crowd.items[crowd.annotators == crowd.annotators[0]])
    assert set(np.flatnonzero(after != keys)) == set(touched)


def test_renamed_items_draw_the_same_folds(crowd):
    df, names = renamed_items(as_frame(crowd))
    other = Annotations.from_frame(df)

    def folds_by_content(ann, folds, back=None):
        frame = as_frame(ann)
        if back is not None:
            frame["task"] = frame["task"].map(back)
        frame["fold"] = folds
        return frame.groupby(["task", "worker", "label"])["fold"].apply(
            lambda f: tuple(sorted(f))).sort_index()

    back = {v: k for k, v in names.items()}
    for seed in (0, 4):
        pd.testing.assert_series_equal(folds_by_content(crowd, heldout_folds(crowd, 5, seed)),
                                       folds_by_content(other, heldout_folds(other, 5, seed),
                                                        back))


@pytest.mark.parametrize("model", ["ebcc", "auto"])
def test_renamed_items_get_the_same_labels(crowd, model):
    df, names = renamed_items(as_frame(crowd), seed=3)
    other = Annotations.from_frame(df)
    a = get_label_model(model).fit(crowd)
    b = get_label_model(model).fit(other)
    pa = pd.DataFrame(a.predict_proba(), index=crowd.item_ids).sort_index()
    pb = by_old_id(b.predict_proba(), other, names)
    np.testing.assert_allclose(pa.to_numpy(), pb.to_numpy(), atol=1e-9)
    if model == "auto":
        assert a.chosen_ == b.chosen_ and a.tied_ == b.tied_
        for name, score in a.heldout_agreement_.items():
            assert b.heldout_agreement_[name] == pytest.approx(score, abs=1e-12), name


def test_renamed_items_with_gold_choose_alike():
    crowd = simulate_failure_kind("biased_experts", seed=1, scale=0.5)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    gold = {item: int(y[i]) for i, item in enumerate(ann.item_ids) if i % 10 == 0}
    df, names = renamed_items(as_frame(ann), seed=5)
    other = Annotations.from_frame(df)
    a = AutoLabelModel().fit(ann, gold=gold)
    b = AutoLabelModel().fit(other, gold={names[item]: c for item, c in gold.items()})
    assert a.n_gold_ == b.n_gold_ >= 20
    assert a.chosen_ == b.chosen_
    for name, acc in a.gold_accuracy_.items():
        assert b.gold_accuracy_[name] == pytest.approx(acc, abs=1e-12), name


@pytest.mark.parametrize("model, settings", [
    ("mace", {}), ("mixture_of_groups", {"restarts": 2}),
    ("lia", {"em_iterations": 3, "m_steps": 5})])
def test_renamed_items_start_the_per_annotator_draws_alike(model, settings):
    # MACE's restarts, the groups' K-means start and LIA's tables are drawn per annotator
    # from fingerprints over the items: keyed on content, renamed items draw the same start
    ann = simulate_failure_kind("prolific_cliques", seed=1, scale=0.25).annotations
    df, names = renamed_items(as_frame(ann), seed=7)
    other = Annotations.from_frame(df)
    a = get_label_model(model, **settings).fit(ann)
    b = get_label_model(model, **settings).fit(other)
    pa = pd.DataFrame(a.predict_proba(), index=ann.item_ids).sort_index()
    np.testing.assert_allclose(pa.to_numpy(), by_old_id(b.predict_proba(), other, names),
                               atol=1e-6)


def test_renamed_items_start_the_global_mixture_alike():
    # the global scenario's K-means draws each (item, label) pair from its item's key; a
    # count matrix's items are its rows, so shuffled rows are renamed items (their draws
    # moved the posteriors by up to 0.03 here when keyed on the row)
    counts = simulate_failure_kind("lenient_strict", seed=0, scale=0.25).annotations.label_counts()
    perm = np.random.default_rng(2).permutation(len(counts))
    a = get_label_model("mixture_of_groups").fit_counts(counts)
    b = get_label_model("mixture_of_groups").fit_counts(counts[perm])
    np.testing.assert_allclose(a.predict_proba(), b.predict_proba()[np.argsort(perm)],
                               atol=1e-9)
