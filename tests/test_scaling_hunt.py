"""The scaling hunt of 29 November: paths that were quadratic in the number of annotators,
documents or rows now group by one sort or one hash lookup, and readers of padded and dense
matrices no longer sort or copy every entry to check a few. These tests check what the
paths return on large inputs (timings are in the hunt's report, not here)."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.aggregation import DawidSkene
from crowd_keras.sequences.formats import spans_to_token_tags, token_tags_to_spans


def _many_annotators(n_annotators: int, ids) -> Annotations:
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(n_annotators), 2)
    annotators = np.concatenate([np.arange(n_annotators), np.roll(np.arange(n_annotators), 1)])
    annotators = annotators.reshape(2, -1).T.ravel()
    return Annotations(items, annotators, rng.integers(0, 3, len(items)),
                       annotator_ids=ids, classes=["a", "b", "c"])


def test_all_new_annotators_written_like_fitted_ones_name_the_first_of_them():
    """Among 3000 new annotators, the first (in the new ids' order) whose id is spelt like a
    fitted one is named, with that fitted id (was a set of the fitted ids rebuilt per new id:
    O(new × fitted))."""
    n = 3000
    # a model of the annotators (a vote counts every label, whoever gave it)
    model = DawidSkene(max_iter=2).fit(_many_annotators(n, np.arange(n)))
    ids = np.array([f"new{a}" for a in range(n)], dtype=object)
    ids[2500], ids[2900] = "2900", "17"      # both spelt like fitted ints; 2500 comes first
    with pytest.raises(CrowdDataError, match=r"annotator '2900' is written like the fitted "
                                             r"annotator 2900: give the ids"):
        model.predict_proba(_many_annotators(n, ids))
    # none spelt alike: every annotation is left out and counted, the posteriors the prior's
    fresh = np.array([f"new{a}" for a in range(n)], dtype=object)
    with pytest.warns(UserWarning, match=f"none of the {2 * n} new annotations"):
        post = model.predict_proba(_many_annotators(n, fresh))
    assert model.n_unknown_annotations_ == 2 * n
    np.testing.assert_allclose(post, np.broadcast_to(post[0], post.shape))


def test_token_tags_of_many_documents_and_annotators_hold_each_rows_spans():
    """3000 documents × 3 annotators with spans in shuffled order: each (document,
    annotator) row holds exactly its own spans, read back exactly (the rows' spans were
    found by a scan of every span per row: O(rows × spans))."""
    rng = np.random.default_rng(0)
    n_docs = 3000
    texts = {f"d{d}": "alpha beta gamma delta epsilon" for d in range(n_docs)}
    # token offsets: alpha [0,5) beta [6,10) gamma [11,16) delta [17,22) epsilon [23,30)
    choices = [(0, 5), (6, 16), (17, 22), (23, 30)]
    rows = []
    for d in range(n_docs):
        for a in ("ann", "bob", 7):
            for k in np.flatnonzero(rng.random(4) < 0.5):
                rows.append((f"d{d}", *choices[k], ["PER", "LOC"][int(rng.integers(2))], a))
    spans = pd.DataFrame(rows, columns=["doc", "start", "end", "label", "annotator"])
    shuffled = spans.sample(frac=1, random_state=1).reset_index(drop=True)
    out = spans_to_token_tags(texts, shuffled, scheme="BIO")
    pairs = spans[["doc", "annotator"]].drop_duplicates()
    nobody = set(texts) - set(pairs["doc"])      # a document nobody saw: one row, no annotator
    assert len(out) == len(pairs) + len(nobody)
    back_texts, back = token_tags_to_spans(out, scheme="BIO")
    assert back_texts == texts
    key = ["doc", "annotator", "start", "end"]
    want = spans.assign(annotator=spans["annotator"].astype(str))
    got = back.assign(annotator=back["annotator"].astype(str))
    pd.testing.assert_frame_equal(
        got[key + ["label"]].sort_values(key).reset_index(drop=True),
        want[key + ["label"]].sort_values(key).reset_index(drop=True), check_dtype=False)


def test_from_dense_of_a_mostly_empty_matrix_reads_the_present_entries_and_names_bad_ones():
    """A 2000-by-300 matrix with one entry in 20: the present entries become the annotations,
    and a bad entry is still named by its (row, column) (only the present entries are
    converted now, not two more copies of the whole matrix)."""
    from crowd_keras.datasets import simulate_crowd

    ann = simulate_crowd(n_items=2000, n_annotators=300, annotations_per_item=15, seed=0
                         ).annotations
    dense = ann.to_dense()
    assert Annotations.from_dense(dense) == ann
    with_nan = np.where(dense >= 0, dense, np.nan)
    assert Annotations.from_dense(with_nan, missing=np.nan) == ann
    bad = dense.copy()
    bad[1500, 7], bad[1900, 3] = -4, -2
    with pytest.raises(CrowdDataError, match=r"negative code -4 at row 1500, column 7; only "
                                             r"the missing marker -1"):
        Annotations.from_dense(bad)
    odd = with_nan.copy()
    odd[1700, 250], odd[1800, 0] = 2.5, np.inf
    with pytest.raises(CrowdDataError, match=r"non-finite code inf at \(row, column\) "
                                             r"\(1800, 0\)"):
        Annotations.from_dense(odd, missing=np.nan)
    odd[1800, 0] = 1.0
    with pytest.raises(CrowdDataError, match=r"non-integer code 2.5 at \(row, column\) "
                                             r"\(1700, 250\)"):
        Annotations.from_dense(odd, missing=np.nan)


def test_from_padded_of_many_items_round_trips_and_names_a_late_repeat():
    """20000 items × 4 slots: the padded layout reads back to the same annotations, and an
    annotator in two slots of one late row is named with its row and both slots (the
    three-key sort of every entry that locates it now runs only when a row repeats one)."""
    from crowd_keras.datasets import simulate_crowd

    ann = simulate_crowd(n_items=20000, n_annotators=50, annotations_per_item=4, seed=0
                         ).annotations
    who, labels = ann.to_padded()
    assert Annotations.from_padded(who, labels, n_annotators=50) == ann
    who = who.copy()
    who[19000, 3] = who[19000, 1]
    who[19500, 2] = who[19500, 0]
    with pytest.raises(CrowdDataError, match=rf"^padded row 19000: annotator {who[19000, 1]} "
                                             r"is in slots 1 and 3; an annotator labels an "
                                             r"item once"):
        Annotations.from_padded(who, labels, n_annotators=50)
