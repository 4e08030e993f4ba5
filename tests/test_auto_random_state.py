"""AutoLabelModel's fold draws (``item_offsets``): every seed draws its own folds, the same
ones every time, whatever array type holds the item ids."""
import numpy as np
import pytest

from crowd_keras.aggregation import AutoLabelModel
from crowd_keras.aggregation.auto import heldout_folds, item_offsets
from crowd_keras.datasets import simulate_crowd


@pytest.mark.parametrize("ids", [np.arange(400), np.array([f"item{i}" for i in range(400)],
                                                          dtype=object)])
def test_seeds_of_ten_to_the_five_and_more_draw_their_own_folds(ids):
    # the hash key holds five digits of the seed: 100000 drew the folds of 0, 123456 those of
    # 23456
    for low in (0, 1, 23456):
        for high in (1, 7, 10**9):
            assert not np.array_equal(item_offsets(ids, 5, low),
                                      item_offsets(ids, 5, low + high * 10**5))
    assert np.array_equal(item_offsets(ids, 5, 123456), item_offsets(ids, 5, 123456))


def test_numpy_string_ids_hash_as_the_same_strings():
    names = [f"item{i}" for i in range(50)]
    as_objects = item_offsets(np.array(names, dtype=object), 5, 3)
    # pandas' hashing refused numpy's fixed-width strings ('Does not understand character
    # buffer dtype format string')
    assert np.array_equal(item_offsets(np.array(names), 5, 3), as_objects)
    as_bytes = item_offsets(np.array([n.encode() for n in names]), 5, 3)
    assert np.array_equal(as_bytes, item_offsets(np.array([n.encode() for n in names],
                                                          dtype=object), 5, 3))


def test_a_large_random_state_is_its_own_seed():
    ann = simulate_crowd(n_items=150, n_classes=3, n_annotators=10, annotations_per_item=4,
                         seed=1).annotations
    assert not np.array_equal(heldout_folds(ann, 5, 0), heldout_folds(ann, 5, 100000))
    a = AutoLabelModel(random_state=100000, max_repeats=1).fit(ann)
    b = AutoLabelModel(random_state=100000, max_repeats=1).fit(ann)
    c = AutoLabelModel(random_state=0, max_repeats=1).fit(ann)
    assert a.heldout_agreement_ == b.heldout_agreement_
    assert a.heldout_agreement_ != c.heldout_agreement_
