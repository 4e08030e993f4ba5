"""The default label model (`auto`) on Dask's threaded scheduler: the same held-out choice,
labels and probabilities as `AutoLabelModel` in memory; the Snorkel adapter's Dask path
decides labeling functions versus crowd answers as in memory (issue #22).

The same fit on a dask.distributed LocalCluster is in test_distributed_cluster.py.
"""
import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from crowd_keras import Annotations, CrowdDataError  # noqa: E402
from crowd_keras.aggregation import AutoLabelModel, DawidSkene  # noqa: E402
from crowd_keras.aggregation.base import LabelModel  # noqa: E402
from crowd_keras.aggregation.em import Block  # noqa: E402
from crowd_keras.aggregation.auto import (block_folds, content_fingerprints,  # noqa: E402
                                          heldout_folds)
from crowd_keras.numerics import label_profile_keys  # noqa: E402
from crowd_keras.aggregation import auto as auto_module  # noqa: E402
from crowd_keras.datasets import (load_truth_inference, simulate_crowd,  # noqa: E402
                                  simulate_failure_kind)
from crowd_keras.distributed import aggregate, supported_methods  # noqa: E402
from crowd_keras.distributed.engine import PartitionedAnnotations  # noqa: E402

from conftest import require_data  # noqa: E402
from test_distributed import TOL, assert_same_labels, crowd_frame, lf_matrix  # noqa: E402

SPAMMY = [{"name": "workers", "probability": 0.7, "accuracy": 0.75},
          {"name": "spammers", "probability": 0.3, "accuracy": None}]


pytestmark = pytest.mark.usefixtures("dask_threads")


def assert_same_choice(result, reference, rel=1e-9):
    """Same winner, same number of held-out annotations, same held-out agreements."""
    model = result.model
    assert isinstance(model, AutoLabelModel) and model.chosen_ == reference.chosen_
    assert model.n_heldout_ == reference.n_heldout_ > 0
    assert model.heldout_agreement_.keys() == reference.heldout_agreement_.keys()
    for name, value in reference.heldout_agreement_.items():
        assert model.heldout_agreement_[name] == pytest.approx(value, rel=rel), name
    assert model.selection_scores_.keys() == reference.selection_scores_.keys()
    assert type(model.model_) is type(reference.model_)
    assert model.n_iter_ == reference.n_iter_ == result.n_iter
    np.testing.assert_allclose(model.confusion_matrices_, reference.confusion_matrices_, atol=TOL)


def sparse_frame(seed=0):
    """Few labels per worker, 30 % spammers, some items with one annotation (never held out)."""
    sim = simulate_crowd(n_items=500, n_classes=3, n_annotators=150, annotations_per_item=3,
                         groups=SPAMMY, activity=1.0, seed=seed)
    df = sim.annotations.to_frame()
    first = df.groupby("task")["worker"].transform("first")
    return df[(df["task"] >= 60) | (df["worker"] == first)].sample(frac=1, random_state=seed)


@pytest.mark.parametrize("ids", ["integers", "strings"])
def test_the_blocks_draw_the_in_memory_folds(ids):
    df = sparse_frame() if ids == "integers" else crowd_frame(400)
    ann = Annotations.from_frame(df)
    data = PartitionedAnnotations.from_frame(dd.from_pandas(df, npartitions=6))
    blocks = dask.compute(*data.blocks)
    order = np.argsort(np.concatenate([b.item_ids for b in blocks]), kind="stable")
    k = len(data.classes)
    # the annotators' fingerprints, block by block, add up (wrapping) to the whole set's
    fingerprints = sum(b.annotator_fingerprints(k) for b in blocks)
    np.testing.assert_array_equal(fingerprints,
                                  Block.from_annotations(ann).annotator_fingerprints(k))
    # and so do the content fingerprints (the folds' and the per-annotator starts'), from
    # the summed votes' profiles
    profiles = label_profile_keys(data.summary.votes)
    np.testing.assert_array_equal(profiles, label_profile_keys(ann.annotator_label_counts()))
    content = sum(content_fingerprints(b, k, profiles) for b in blocks)
    np.testing.assert_array_equal(data.annotator_keys(), content)
    np.testing.assert_array_equal(content, content_fingerprints(Block.from_annotations(ann), k,
                                                                profiles))
    np.testing.assert_array_equal(
        content, Block.from_annotations(ann).summary(k, fingerprints=True).fingerprints)
    for seed in (0, 3):
        per_block = [block_folds(b, k, profiles, content, 5, seed) for b in blocks]
        sizes = [b.annotations_per_item() for b in blocks]
        # back to the in-memory order (items sorted): split per item, reorder, join
        per_item = [np.split(f, np.cumsum(s)[:-1]) for f, s in zip(per_block, sizes)]
        flat = [part for parts in per_item for part in parts]
        np.testing.assert_array_equal(np.concatenate([flat[i] for i in order]),
                                      heldout_folds(ann, 5, seed))


@pytest.mark.parametrize("case", ["dense", "sparse", "passes"])
def test_auto_equals_the_in_memory_auto(case):
    if case == "dense":     # every worker labels many items, each its own way: Dawid-Skene wins
        sim = simulate_crowd(n_items=1200, n_classes=4, n_annotators=30, annotations_per_item=5,
                             annotator_accuracy=(0.45, 0.9), individual_noise="asymmetric",
                             seed=5)
        df, settings = sim.annotations.to_frame(), {"min_heldout": 2000}
    elif case == "sparse":  # few labels per worker: a shrunk model wins
        df, settings = sparse_frame(), {"min_heldout": 1000}
    else:                   # string ids; several passes, the last one stopped half-way
        df, settings = crowd_frame(300), {"min_heldout": 1700, "max_repeats": 3, "n_folds": 4,
                                          "random_state": 7}
    ann = Annotations.from_frame(df)
    reference = AutoLabelModel(**settings).fit(ann)
    if case == "passes":
        assert ann.n_annotations < settings["min_heldout"] < 1.5 * ann.n_annotations
    result = aggregate(dd.from_pandas(df, npartitions=5), **settings)   # the default method
    assert_same_choice(result, reference)
    if case == "dense":
        assert reference.chosen_ != "majority_vote"
    delta = assert_same_labels(result, reference, ann)
    print(f"auto ({case}): chose {reference.chosen_}, max |dp| = {delta:.1e}")


def test_held_out_fits_run_in_lock_step_and_choose_as_one_at_a_time(monkeypatch):
    """The folds' training sets are fitted together, one round of Dask tasks per EM iteration
    for all of them (a round costs tens of milliseconds on a cluster): the same held-out
    agreements to the last bit as fitting one set at a time, in far fewer rounds."""
    from crowd_keras.distributed import auto as dask_auto
    df = crowd_frame(300)
    settings = {"min_heldout": 1700, "max_repeats": 3, "n_folds": 4, "random_state": 7}
    compute, rounds = dask.compute, []

    def counted(*args, **kwargs):
        rounds[-1] += 1
        return compute(*args, **kwargs)

    monkeypatch.setattr(dask, "compute", counted)
    results = []
    for budget in (dask_auto.LOCKSTEP_ANNOTATIONS, 1):      # 1: every set its own group
        monkeypatch.setattr(dask_auto, "LOCKSTEP_ANNOTATIONS", budget)
        rounds.append(0)
        results.append(aggregate(dd.from_pandas(df, npartitions=3), **settings))
    together, alone = (result.model for result in results)
    assert together.n_heldout_ == alone.n_heldout_ > 0
    assert together.heldout_agreement_ == alone.heldout_agreement_
    assert together.chosen_ == alone.chosen_
    pd_testing = pytest.importorskip("pandas.testing")
    pd_testing.assert_frame_equal(results[0].labels.compute(), results[1].labels.compute())
    assert rounds[0] < rounds[1] / 3, rounds


def test_fits_together_need_sets_of_as_many_blocks_and_equal_fits_of_their_own():
    from crowd_keras.distributed.engine import fit_together
    from crowd_keras.distributed.methods import method_for
    from crowd_keras.aggregation import EBCC
    df = crowd_frame(200)
    two = PartitionedAnnotations.from_frame(dd.from_pandas(df, npartitions=2))
    three = PartitionedAnnotations.from_frame(dd.from_pandas(df, npartitions=3))
    with pytest.raises(ValueError, match=r"as many blocks each, got \[2, 3\]"):
        fit_together([(two, [method_for(DawidSkene())]), (three, [method_for(DawidSkene())])])
    half = PartitionedAnnotations.from_frame(dd.from_pandas(df.iloc[::2], npartitions=2))
    models = (DawidSkene, EBCC)     # EBCC iterates longer: DS's fit stops first
    together = fit_together([(two, [method_for(m()) for m in models]),
                             (half, [method_for(m()) for m in models])])
    for data, fits in zip((two, half), together):
        for model, fit in zip(models, fits):
            alone = data.fit(method_for(model()))
            assert fit.history == alone.history
            np.testing.assert_array_equal(fit.model.confusion_matrices_,
                                          alone.model.confusion_matrices_)


def test_copying_pairs_and_their_weights_on_dask_are_those_in_memory(monkeypatch):
    """Copying cliques found from pairwise sums over blocks, on a hashed sample of the items
    (a smaller sample size than the default, so that the sample is drawn), as in memory."""
    monkeypatch.setattr(auto_module, "PAIR_ANNOTATIONS", 7000)
    ann = simulate_failure_kind("prolific_cliques", seed=0, scale=1.0).annotations
    settings = {"min_heldout": 3000}
    reference = AutoLabelModel(**settings).fit(ann)
    assert auto_module.pair_buckets(ann.n_annotations) > 1 and len(reference.copy_pairs_) > 0
    result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=4), **settings)
    np.testing.assert_array_equal(np.sort(result.model.copy_pairs_, axis=0),
                                  np.sort(reference.copy_pairs_, axis=0))
    assert_same_choice(result, reference)


def test_auto_equals_the_in_memory_auto_on_a_real_crowd():
    ann, _ = load_truth_inference(require_data("truth_inference", "weather_sentiment"))
    reference = AutoLabelModel(min_heldout=5000).fit(ann)
    result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=4), min_heldout=5000)
    assert_same_choice(result, reference)
    assert_same_labels(result, reference, ann)


def test_auto_on_labeling_function_votes_is_the_abstain_aware_model_as_in_memory():
    L = lf_matrix(n=3000)
    ann = Annotations.from_frame(Annotations.from_label_matrix(L, cardinality=2).to_frame(),
                                 classes=[0, 1])
    result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=4), method="auto")
    reference = AutoLabelModel().fit(ann)
    assert result.model.regime_ == reference.regime_ == "labeling_functions"
    assert result.model.chosen_ == reference.chosen_ == "abstain_dawid_skene"
    assert result.model.selection_ == reference.selection_ == "labeling_functions"
    assert result.model.named_classes_.tolist() == reference.named_classes_.tolist() == \
        [True, True]
    assert_same_labels(result, reference, ann)


class NoStrategy(LabelModel):
    """A label model with neither a Dask strategy nor the EM-step protocol."""


def test_auto_is_supported_and_refuses_candidates_without_a_strategy():
    assert "auto" in supported_methods()
    ddf = dd.from_pandas(crowd_frame(100), npartitions=2)
    with pytest.raises(ValueError, match="supported methods"):
        aggregate(ddf, method=AutoLabelModel(candidates=[("ds", DawidSkene()),
                                                         ("other", NoStrategy())]))
    with pytest.raises(ValueError, match="n_folds"):
        aggregate(ddf, n_folds=1)
    with pytest.raises(CrowdDataError, match="no annotations"):
        aggregate(ddf[ddf["task"] == "none"], classes=["cat", "dog"],
                  annotator_ids=["w0"], item_partitioned=True)


# ---------------------------------------------------------------------------- Snorkel adapter
def crowd_matrix(seed=0):
    """Crowd answers as a label matrix, votes per row not fixed (each answer kept with
    probability 0.4): abstaining says nothing about the class."""
    sim = simulate_crowd(n_items=700, n_classes=3, n_annotators=20, annotations_per_item=8,
                         seed=seed)
    L = sim.annotations.to_label_matrix()
    return np.where(np.random.default_rng(seed).random(L.shape) < 0.4, L, -1)


def snorkel_matrix(seed=0):
    from test_snorkel_upstream import simple_label_matrix

    return simple_label_matrix(2000, 10, 2, np.random.default_rng(seed))[2]


@pytest.mark.parametrize("kind", ["crowd", "labeling_functions"])
def test_snorkel_dask_path_decides_and_fits_as_in_memory(kind):
    from crowd_keras.integrations.snorkel import CrowdLabelModel
    from crowd_keras.integrations.snorkel.abstention import abstaining_is_informative
    from crowd_keras.integrations.snorkel.label_model import _votes_fixed_by_design

    L, k = (crowd_matrix(), 3) if kind == "crowd" else (snorkel_matrix(), 2)
    ann = Annotations.from_label_matrix(L, cardinality=k)
    # neither matrix is decided by the one-class share; votes per row vary in both
    assert not _votes_fixed_by_design(ann)
    assert abstaining_is_informative(ann) == (kind == "labeling_functions")
    settings = {"min_heldout": 1500} if kind == "crowd" else {}
    memory = CrowdLabelModel(cardinality=k, **settings).fit(L, progress_bar=False)
    chunked = CrowdLabelModel(cardinality=k, **settings).fit(da.from_array(L, chunks=(300, -1)),
                                                             progress_bar=False)
    assert type(chunked.label_model_) is type(memory.label_model_)
    if kind == "crowd":
        assert isinstance(memory.label_model_, AutoLabelModel)
        assert chunked.label_model_.chosen_ == memory.label_model_.chosen_
    probs = chunked.predict_proba(da.from_array(L, chunks=500)).compute()
    delta = float(np.abs(probs - memory.predict_proba(L)).max())
    assert delta < TOL, delta
    np.testing.assert_array_equal(chunked.predict(L), memory.predict(L))
    np.testing.assert_allclose(chunked.get_weights(), memory.get_weights(), atol=TOL)
    np.testing.assert_allclose(chunked.get_conditional_probs(), memory.get_conditional_probs(),
                               atol=TOL)


@pytest.mark.parametrize("kind", ["crowd", "labeling_functions"])
def test_the_check_on_a_sample_of_a_large_matrix_is_the_same_in_memory_and_on_dask(
        kind, monkeypatch):
    """Above MAX_CHECK_VOTES votes the check runs on a hashed sample of rows: the same rows,
    hence the same held-out gains and decision, whole or block by block; and the sample
    still tells labeling functions from crowd answers."""
    from crowd_keras.integrations.snorkel import abstention, partitioned

    L, k = (crowd_matrix(), 3) if kind == "crowd" else (snorkel_matrix(), 2)
    ann = Annotations.from_label_matrix(L, cardinality=k)
    monkeypatch.setattr(abstention, "MAX_CHECK_VOTES", ann.n_annotations // 2)
    keep = abstention.check_sample(ann.item_ids, ann.n_annotations)
    assert keep is not None and 0.4 < keep.mean() < 0.6          # about half of the rows
    # a block of rows draws its share of the sample exactly as the whole matrix
    np.testing.assert_array_equal(abstention.check_sample(ann.item_ids[300:900],
                                                          ann.n_annotations), keep[300:900])
    gains = {"memory": [], "dask": []}
    original = abstention.held_out_gain

    def recorded(where):
        def gain(*args):
            gains[where].append(original(*args))
            return gains[where][-1]
        return gain

    monkeypatch.setattr(abstention, "held_out_gain", recorded("memory"))
    in_memory = abstention.abstaining_is_informative(ann)
    monkeypatch.setattr(partitioned, "held_out_gain", recorded("dask"))
    data = PartitionedAnnotations.from_label_matrix(da.from_array(L, chunks=(300, -1)), k)
    on_dask = partitioned.abstaining_is_informative_partitioned(data)
    assert in_memory == on_dask == (kind == "labeling_functions")
    assert len(gains["memory"]) == abstention.FOLDS
    assert sum(gains["dask"]) == pytest.approx(sum(gains["memory"]), rel=1e-9, abs=1e-9)
    # and the sample is what was checked: the whole matrix gives other gains
    monkeypatch.setattr(abstention, "MAX_CHECK_VOTES", ann.n_annotations)
    gains["memory"].clear()
    abstention.abstaining_is_informative(ann)
    assert sum(gains["memory"]) != pytest.approx(sum(gains["dask"]), rel=1e-6)


@pytest.mark.parametrize("n_gold, target", [(10, "uniform"), (40, "uniform"), (40, "gold")])
def test_gold_on_dask_is_gold_in_memory(n_gold, target):
    """Gold items held at their class on Dask as in memory; with 40 (>= min_gold) the default
    also scores the candidates on them, with 10 it does not; the same choice on both engines,
    and with ``target_prior="gold"`` the same target from the gold's classes."""
    sim = simulate_crowd(n_items=600, n_classes=3, n_annotators=30, annotations_per_item=4,
                         annotator_accuracy=(0.45, 0.9), individual_noise="asymmetric", seed=2)
    ann = sim.annotations
    rng = np.random.default_rng(0)
    idx = rng.choice(ann.n_items, n_gold, replace=False)
    gold = {ann.item_ids[i]: ann.classes[(sim.y[i] + 1) % 3] for i in idx}   # not the truth
    reference = AutoLabelModel(min_heldout=1000, target_prior=target).fit(ann, gold=gold)
    result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=4), gold=gold,
                       min_heldout=1000, target_prior=target)
    model = result.model
    np.testing.assert_array_equal(model.gold_class_counts_, reference.gold_class_counts_)
    np.testing.assert_allclose(model.target_prior_, reference.target_prior_, rtol=1e-12)
    assert model.selection_ == reference.selection_
    assert model.n_gold_ == reference.n_gold_ == n_gold
    assert model.chosen_ == reference.chosen_
    assert bool(reference.gold_accuracy_) == (n_gold >= 20)
    for name, value in reference.gold_accuracy_.items():
        assert model.gold_accuracy_[name] == pytest.approx(value, rel=1e-9), name
    for name, value in reference.selection_scores_.items():
        assert model.selection_scores_[name] == pytest.approx(value, rel=1e-9), name
    assert_same_labels(result, reference, ann)
    labels = result.labels.compute().loc[list(gold)]
    assert (labels["label"].to_numpy() == np.array(list(gold.values()))).all()


def test_gold_on_dask_names_unknown_items_and_labels():
    df = crowd_frame(200)
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(CrowdDataError, match="gold item 'nope'"):
        aggregate(ddf, method="dawid_skene", gold={"nope": "cat"})
    with pytest.raises(CrowdDataError, match="gold label 'yak'"):
        aggregate(ddf, method="dawid_skene", gold={df["task"].iloc[0]: "yak"})


def test_snorkel_dask_weights_are_read_off_the_labels_posteriors():
    # a choice whose posteriors the uniform target re-expresses (two candidates with a class
    # prior, the first the reference): the functions' weights and table are read off the labels' posteriors, as in
    # memory (they were read off the unshifted ones, 0.003 apart)
    from crowd_keras.aggregation.auto import default_candidates
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L, k = crowd_matrix(), 3
    settings = {"min_heldout": 1500,
                "candidates": [(name, model) for name, model in default_candidates(k)
                               if name in ("ibcc", "ebcc")]}
    memory = CrowdLabelModel(cardinality=k, **settings).fit(L, progress_bar=False)
    assert memory.label_model_.target_prior_applied_
    chunked = CrowdLabelModel(cardinality=k, **settings).fit(da.from_array(L, chunks=(300, -1)),
                                                             progress_bar=False)
    assert chunked.label_model_.chosen_ == memory.label_model_.chosen_
    np.testing.assert_allclose(chunked.get_weights(), memory.get_weights(), atol=TOL)
    np.testing.assert_allclose(chunked.get_conditional_probs(), memory.get_conditional_probs(),
                               atol=TOL)
