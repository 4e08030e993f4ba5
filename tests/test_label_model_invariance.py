"""A label model's answer for an item depends on the annotations, not on where the item or
its annotators stand: the order of the rows, the sort order of the ids, the other items."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import MajorityVote
from crowd_keras.datasets import simulate_crowd


def tied_crowd(seed=0):
    """A binary crowd of 400 items with two labels each (many ties), ids 0..399."""
    sim = simulate_crowd(n_items=400, n_classes=2, n_annotators=8, annotations_per_item=2,
                         seed=seed)
    return sim.annotations.to_frame()


def labels_by_item(model, frame, **read):
    ann = Annotations.from_frame(frame, **read)
    return dict(zip(ann.item_ids.tolist(), model.fit(ann).predict().tolist())), model


def test_random_tie_break_follows_the_item_not_its_position():
    df = tied_crowd()
    vote = MajorityVote(tie_break="random", random_state=7)
    base, fitted = labels_by_item(vote, df)
    assert fitted.n_tied_items_ > 50
    # the items in reverse order; every other item dropped moves the rest
    backwards, _ = labels_by_item(vote, df.sample(frac=1, random_state=1),
                                  item_ids=sorted(base, reverse=True))
    assert backwards == base
    half, _ = labels_by_item(vote, df[df["task"] % 2 == 1])
    assert half == {item: base[item] for item in half}
    # and a new batch (predict_proba(new)) breaks its ties as the fit did
    new = Annotations.from_frame(df[df["task"] >= 200], classes=fitted.annotations_.classes)
    picked = np.argmax(fitted.predict_proba(new), axis=1)
    assert dict(zip(new.item_ids.tolist(), picked.tolist())) == \
        {item: base[item] for item in new.item_ids.tolist()}


def test_random_tie_break_still_draws_every_tied_class():
    df = pd.DataFrame({"task": [0, 0], "worker": ["u", "v"], "label": [0, 1]})
    picks = {int(MajorityVote(tie_break="random", random_state=s).fit(df).predict()[0])
             for s in range(20)}
    assert picks == {0, 1}


def test_random_tie_break_names_a_seed_it_cannot_hash():
    df = pd.DataFrame({"task": [0, 0], "worker": ["u", "v"], "label": [0, 1]})
    with pytest.raises(ValueError, match="random_state must be below 2"):
        MajorityVote(tie_break="random", random_state=2 ** 64).fit(df)
