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


def test_min_heldout_zero_still_scores_a_fold_that_held_something():
    import pandas as pd

    from crowd_keras import Annotations
    from crowd_keras.aggregation.auto import selection_done

    assert not selection_done((0, 0), 5, 0, 0)          # nothing held out yet: go on
    assert selection_done((0, 1), 5, 1, 0)
    # the tutorial's two items: with random_state 0, fold 0 holds none of the 5 labels
    ann = Annotations.from_frame(pd.DataFrame({"task": ["t1", "t1", "t1", "t2", "t2"],
                                               "worker": ["ann", "bob", "cy", "ann", "bob"],
                                               "label": ["cat", "cat", "dog", "dog", "dog"]}))
    assert not (heldout_folds(ann, 5, 0) == 0).any()
    model = AutoLabelModel(min_heldout=0, random_state=0).fit(ann)
    # was selection_ 'single' ("nothing to compare on") with heldout_agreement_ {}
    assert model.selection_ == "agreement" and model.n_heldout_ >= 1
    assert set(model.heldout_agreement_) == {name for name, _ in model.ladder(2)}
