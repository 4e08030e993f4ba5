"""The default model's public helpers check the counts they are given (the model checks its
own settings; these are called directly by users and by the partitioned fit)."""
import numpy as np
import pytest

from crowd_keras.aggregation.auto import (annotation_folds, copying_pairs, heldout_folds,
                                          item_offsets, pair_sums)
from crowd_keras.aggregation.em import Block
from crowd_keras.datasets import simulate_crowd


@pytest.fixture(scope="module")
def ann():
    return simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=4,
                          seed=0).annotations


def test_fold_counts(ann):
    # one fold hid every annotation of every item, against the docstring's "never all"
    for n_folds in (1, 0):
        with pytest.raises(ValueError, match="n_folds must be an integer >= 2"):
            heldout_folds(ann, n_folds, 0)
    with pytest.raises(ValueError, match="n_folds must be an integer >= 2"):
        annotation_folds(ann.item_ids, ann.annotations_per_item(), 1, 0)
    # 0 folds was a modulo by zero: every item in fold 0
    with pytest.raises(ValueError, match="item_offsets n_folds must be an integer >= 1"):
        item_offsets(ann.item_ids, 0, 0)
    assert (item_offsets(ann.item_ids, 1, 0) == 0).all()     # one gold fold: allowed
    folds = heldout_folds(ann, 2, 0)
    for item in range(ann.n_items):                      # never all of an item's labels
        assert len(set(folds[ann.items == item])) == 2


def test_copying_pairs_needs_a_round(ann):
    sums = pair_sums(Block.from_annotations(ann), ann.n_classes)
    with pytest.raises(ValueError, match="max_rounds must be an integer >= 1"):
        copying_pairs(*sums, z=4.0, min_common=1, max_rounds=0)   # was UnboundLocalError
    assert copying_pairs(*sums, z=4.0, min_common=1, max_rounds=1).shape == (6, 6)
