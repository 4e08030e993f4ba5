"""Random starts follow what the annotators said, not their names: renaming the annotators
(users by id in one Label Studio export, by e-mail in another) or reordering their columns
and the rows draws the same starts, so MACE's restarts and the mixture of groups' K-means
give the same labels, posteriors and per-annotator quality."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import MACE
from crowd_keras.datasets import simulate_crowd
from crowd_keras.mixture_of_groups.label_model import MixtureOfGroupsModel
from crowd_keras.numerics import keyed_choice, keyed_uniforms


def as_frame(ann: Annotations) -> pd.DataFrame:
    return pd.DataFrame({"task": ann.item_ids[ann.items],
                         "worker": ann.annotator_ids[ann.annotators],
                         "label": np.asarray(ann.classes)[ann.labels]})


@pytest.fixture(scope="module")
def crowds():
    """The crowd, and the same under names that sort in reverse, rows shuffled; new → old."""
    ann = simulate_crowd(n_items=400, n_classes=3, n_annotators=25, annotations_per_item=3,
                         groups="default", seed=3).annotations
    df = as_frame(ann)
    names = sorted(df["worker"].unique())
    new = {old: f"w{len(names) - i:05d}" for i, old in enumerate(names)}
    df = df.assign(worker=df["worker"].map(new)).sample(frac=1.0, random_state=5)
    other = Annotations.from_frame(df)
    assert not np.array_equal(np.asarray(other.annotator_ids)[other.annotators],
                              np.asarray(ann.annotator_ids)[ann.annotators])
    return ann, other, {v: k for k, v in new.items()}


def assert_same_fit(a, b, back, quality_columns):
    """Labels and posteriors aligned by item id, quality aligned by annotator name."""
    pa = pd.DataFrame(a.posteriors_, index=a.annotations_.item_ids)
    pb = pd.DataFrame(b.posteriors_, index=b.annotations_.item_ids).loc[pa.index]
    np.testing.assert_allclose(pa.to_numpy(), pb.to_numpy(), atol=1e-9)
    np.testing.assert_array_equal(pa.to_numpy().argmax(1), pb.to_numpy().argmax(1))
    qa = a.annotator_quality_.set_index("annotator")
    qb = b.annotator_quality_.assign(annotator=lambda q: q["annotator"].map(back))
    qb = qb.set_index("annotator").loc[qa.index]
    for column in quality_columns:
        np.testing.assert_allclose(qa[column].to_numpy(float), qb[column].to_numpy(float),
                                   atol=1e-9, err_msg=column)


@pytest.mark.parametrize("method", ["vb", "em"])
def test_mace_restarts_ignore_annotator_names(crowds, method):
    ann, other, back = crowds
    a = MACE(method=method, restarts=5, random_state=2).fit(ann)
    b = MACE(method=method, restarts=5, random_state=2).fit(other)
    assert a.restart_ == b.restart_
    assert a.log_marginal_likelihood_ == pytest.approx(b.log_marginal_likelihood_, abs=1e-9)
    assert_same_fit(a, b, back, ["accuracy", "trustworthiness"])


def test_mixture_of_groups_kmeans_ignores_annotator_names(crowds):
    ann, other, back = crowds
    a = MixtureOfGroupsModel(num_groups=3, restarts=2, seed=4).fit(ann)
    b = MixtureOfGroupsModel(num_groups=3, restarts=2, seed=4).fit(other)
    np.testing.assert_allclose(a.restart_objectives_, b.restart_objectives_, atol=1e-9)
    assert_same_fit(a, b, back, ["accuracy"])


def test_keyed_draws_follow_keys_not_positions():
    keys = np.array([11, 22, 33, 44], dtype=np.uint64)
    u = keyed_uniforms(keys, 3, 5)
    assert u.shape == (4, 5) and ((u > 0) & (u < 1)).all()
    np.testing.assert_array_equal(keyed_uniforms(keys[::-1], 3, 5), u[::-1])
    assert not np.array_equal(keyed_uniforms(keys, 4, 5), u)          # the seed matters
    w = np.array([0.0, 1.0, 2.0, 3.0])
    picks = [keyed_choice(keys, w, 3, d) for d in range(2000)]
    assert [keyed_choice(keys[::-1], w[::-1], 3, d) for d in range(2000)] == \
        [3 - p for p in picks]
    share = np.bincount(picks, minlength=4) / len(picks)
    assert share[0] == 0                                                 # weight 0: never
    np.testing.assert_allclose(share[1:], [1 / 6, 2 / 6, 3 / 6], atol=0.04)


def test_mace_on_dask_draws_the_in_memory_start_under_new_names(crowds):
    # the partitions' fingerprints add up to the whole set's: the renamed, shuffled crowd
    # on Dask wins with the in-memory restart and its labels
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    from crowd_keras.distributed import aggregate
    ann, other, back = crowds
    memory = MACE(restarts=4, random_state=1).fit(ann)
    with dask.config.set(scheduler="threads"):
        result = aggregate(dd.from_pandas(as_frame(other), npartitions=3),
                           method=MACE(restarts=4, random_state=1))
    assert result.model.restart_ == memory.restart_
    qa = memory.annotator_quality_.set_index("annotator")["trustworthiness"]
    qb = result.model.annotator_quality_.assign(
        annotator=lambda q: q["annotator"].map(back)).set_index("annotator")["trustworthiness"]
    np.testing.assert_allclose(qb.loc[qa.index].to_numpy(float), qa.to_numpy(float), atol=1e-6)



def test_lia_competence_start_ignores_annotator_names(crowds):
    # each annotator's row of the competence table is drawn from what it said: the fits
    # differ only by float32 summation order (an item's annotations are summed in annotator
    # code order), about 1e-6, where the table drawn by code moved posteriors by 3e-4
    from crowd_keras.lia.label_model import LIA
    ann, other, back = crowds
    a, b = LIA(seed=3).fit(ann), LIA(seed=3).fit(other)
    pa = pd.DataFrame(a.posteriors_, index=a.annotations_.item_ids)
    pb = pd.DataFrame(b.posteriors_, index=b.annotations_.item_ids).loc[pa.index]
    np.testing.assert_allclose(pa.to_numpy(), pb.to_numpy(), atol=2e-5)
    np.testing.assert_array_equal(pa.to_numpy().argmax(1), pb.to_numpy().argmax(1))
    qa = a.annotator_quality_.set_index("annotator")["accuracy"]
    qb = b.annotator_quality_.assign(annotator=lambda q: q["annotator"].map(back))
    np.testing.assert_allclose(qb.set_index("annotator")["accuracy"].loc[qa.index].to_numpy(float),
                               qa.to_numpy(float), atol=2e-5)
