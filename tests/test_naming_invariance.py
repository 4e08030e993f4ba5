"""Every registered label model answers the same whatever the annotators are called and in
whatever order the items and annotators come.

Users export one crowd in several ways: Label Studio's JSON names annotators by user id, its
JSON_MIN by e-mail; a Snorkel label matrix lists its columns in any order; a reader may code
the items in the order it met them. A fit must give the same labels (exactly), the same
posteriors aligned by item id (up to floating-point summation order) and the same
per-annotator quality aligned by annotator name, under

* ``renamed``: the annotators under new names that sort in the reverse order (their codes
  reverse too);
* ``permuted``: the item and annotator codes permuted (the ids unchanged). ``from_frame``
  sorts ids, so shuffling a frame's rows changes nothing by construction; the codes are what
  a reader's order can change, and with them the stored order of the annotations.

Not covered, on purpose: renaming classes (it may reorder the class codes, and ties go to the
lowest class code by documented rule), and which of an annotator's repeated answers
``duplicates="last"`` keeps (the rows' order is the policy's input).
"""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import available_label_models, get_label_model, label_model_class
from crowd_keras.datasets import simulate_crowd, simulate_failure_kind

# Extra settings whose code paths draw or break ties differently from the defaults.
SETTINGS = {"majority_vote": [{"tie_break": "random", "random_state": 3},
                              {"tie_break": "prior"}, {"soft": True}],
            "tie_broken_vote": [{"tie_model": "ds"}],
            "mace": [{"method": "em"}],
            "mixture_of_groups": [{"scenario": "global"}],
            # batches of items (the default batch holds every item up to 1024); the Keras
            # engine (about 2.5 s a fit)
            "lia": [{"batch_size": 64}, {"engine": "keras"}]}
SLOW = {("lia", "engine")}
# float32 models: their sums over an item's annotations run in annotator-code order, so a
# renaming moves posteriors by float32 rounding (about 1e-6 after EM), not by 1e-9
FLOAT32 = {"lia": 2e-5}


def cases():
    names = available_label_models(aliases=False)
    # every alias resolves to a class that one primary name covers
    assert {label_model_class(n) for n in available_label_models()} == \
        {label_model_class(n) for n in names}
    for name in names:
        yield pytest.param(name, {}, id=name)
        for i, kw in enumerate(SETTINGS.get(name, [])):
            marks = [pytest.mark.slow] if any((name, k) in SLOW for k in kw) else []
            yield pytest.param(name, kw, id=f"{name}-{i}", marks=marks)


def as_frame(ann: Annotations) -> pd.DataFrame:
    return pd.DataFrame({"task": ann.item_ids[ann.items],
                         "worker": ann.annotator_ids[ann.annotators],
                         "label": np.asarray(ann.classes)[ann.labels]})


def renamed(ann: Annotations):
    """The crowd under names that sort in reverse; and new name → old name."""
    df = as_frame(ann)
    names = sorted(df["worker"].unique())
    new = {old: f"w{len(names) - i:05d}" for i, old in enumerate(names)}
    return Annotations.from_frame(df.assign(worker=df["worker"].map(new))), \
        {v: k for k, v in new.items()}


def permuted(ann: Annotations, seed: int = 5) -> Annotations:
    """The same annotations with item and annotator codes permuted (ids unchanged)."""
    rng = np.random.default_rng(seed)
    pi, pa = rng.permutation(ann.n_items), rng.permutation(ann.n_annotators)
    item_code, ann_code = np.argsort(pi), np.argsort(pa)       # old code → new code
    return Annotations(item_code[ann.items], ann_code[ann.annotators], ann.labels,
                       item_ids=np.asarray(ann.item_ids)[pi],
                       annotator_ids=np.asarray(ann.annotator_ids)[pa], classes=ann.classes)


@pytest.fixture(scope="module", params=["three_classes", "repeated_answers"])
def crowd(request):
    if request.param == "three_classes":
        ann = simulate_crowd(n_items=300, n_classes=3, n_annotators=25, annotations_per_item=3,
                             seed=3).annotations
    else:
        # binary, 6 answers per item (ties), 8 % of answers given twice (the last kept)
        ann = simulate_failure_kind("prolific_repeated", seed=1, scale=0.15).annotations
    other, back = renamed(ann)
    assert not np.array_equal(other.annotators, ann.annotators)        # the codes did move
    return {"original": ann, "renamed": (other, back), "permuted": (permuted(ann), None)}


def assert_same_fit(a, b, back, tol):
    """Labels exact, posteriors by item id, quality by annotator name (``back``: new → old)."""
    pa = pd.DataFrame(a.posteriors_, index=a.annotations_.item_ids)
    pb = pd.DataFrame(b.posteriors_, index=b.annotations_.item_ids).loc[pa.index]
    np.testing.assert_allclose(pb.to_numpy(), pa.to_numpy(), rtol=0, atol=tol)
    la = pd.Series(a.predict_labels(), index=a.annotations_.item_ids)
    lb = pd.Series(b.predict_labels(), index=b.annotations_.item_ids).loc[la.index]
    assert (la.to_numpy() == lb.to_numpy()).all(), "labels differ"
    qa = a.annotator_quality_.set_index("annotator")
    qb = b.annotator_quality_
    if back is not None:
        qb = qb.assign(annotator=qb["annotator"].map(back))
    qb = qb.set_index("annotator").loc[qa.index]
    assert list(qa.columns) == list(qb.columns)
    for column in qa.columns:
        np.testing.assert_allclose(qb[column].to_numpy(float), qa[column].to_numpy(float),
                                   rtol=0, atol=tol, err_msg=column)


@pytest.mark.parametrize("name, settings", list(cases()))
@pytest.mark.parametrize("variant", ["renamed", "permuted"])
def test_fit_ignores_annotator_names_and_order(crowd, name, settings, variant):
    tol = FLOAT32.get(name, 1e-9)
    other, back = crowd[variant]
    a = get_label_model(name, **settings).fit(crowd["original"])
    b = get_label_model(name, **settings).fit(other)
    assert_same_fit(a, b, back, tol)


@pytest.mark.parametrize("name", [n for n in available_label_models(aliases=False)
                                  if getattr(label_model_class(n), "accepts_gold", False)])
def test_gold_fits_ignore_annotator_names_and_order(crowd, name):
    # gold items held at their class (the default's gold folds choose among its candidates)
    ann = crowd["original"]
    items = np.random.default_rng(0).choice(ann.n_items, 80, replace=False)
    gold = {ann.item_ids[i]: ann.classes[ann.labels[ann.item_starts()[i]]] for i in items
            if ann.annotations_per_item()[i] > 0}
    a = get_label_model(name).fit(ann, gold=gold)
    for variant in ("renamed", "permuted"):
        other, back = crowd[variant]
        assert_same_fit(a, get_label_model(name).fit(other, gold=gold), back,
                        FLOAT32.get(name, 1e-9))


def test_lia_item_tables_follow_item_ids():
    from crowd_keras.lia.model import item_tables_start
    ann = simulate_crowd(n_items=50, n_classes=2, n_annotators=5, seed=1).annotations
    other = permuted(ann)
    truth, difficulty = item_tables_start(ann, 3, 7)
    assert truth.shape == difficulty.shape == (50, 3) and truth.dtype == np.float32
    assert np.abs(truth).max() < 0.05 and 0.05 < difficulty.std() < 0.2
    moved = pd.Index(other.item_ids).get_indexer(ann.item_ids)
    for table, again in zip((truth, difficulty), item_tables_start(other, 3, 7)):
        np.testing.assert_array_equal(again[moved], table)
    assert not np.array_equal(item_tables_start(ann, 3, 8)[0], truth)   # the seed matters


def test_keyed_row_order_follows_the_keys():
    from crowd_keras.numerics import id_keys, row_order
    keys = id_keys(np.arange(100), 0)
    perm = np.random.default_rng(2).permutation(100)
    a = row_order(100, 30, 7, np.random.default_rng(1), keys)
    b = row_order(100, 30, 7, np.random.default_rng(1), keys[perm])
    np.testing.assert_array_equal(perm[b], a)              # each row keeps its place
    assert len(a) == 210 and sorted(a[:100].tolist()) == list(range(100))   # whole epochs
    assert not np.array_equal(a[:100], a[100:200])         # each epoch its own order


def label_matrix(ann: Annotations) -> np.ndarray:
    """(items, annotators) class codes, -1 where an annotator gave none."""
    L = -np.ones((ann.n_items, ann.n_annotators), dtype=np.int64)
    L[ann.items, ann.annotators] = ann.labels
    return L


@pytest.fixture(scope="module")
def label_matrices():
    from conftest import require_data
    from crowd_keras.datasets import load_wrench
    crowd = simulate_crowd(n_items=300, n_classes=3, n_annotators=25, annotations_per_item=3,
                           seed=3).annotations
    youtube = load_wrench(require_data("wrench", "youtube"), "train")
    # crowd answers, and labeling functions (the abstain-aware path)
    return {"crowd": (label_matrix(crowd), 3),
            "labeling_functions": (np.asarray(youtube.L)[:600], len(youtube.classes))}


@pytest.mark.parametrize("matrix", ["crowd", "labeling_functions"])
@pytest.mark.parametrize("method", [
    pytest.param(n, marks=[pytest.mark.slow] if n == "lia" else [])
    for n in available_label_models(aliases=False)])
def test_snorkel_adapter_ignores_the_column_order(label_matrices, matrix, method):
    """Snorkel's label matrix with its columns permuted: the same probabilities and
    predictions, and the weights and conditional probabilities permuted alike."""
    from crowd_keras.integrations.snorkel import CrowdLabelModel
    L, k = label_matrices[matrix]
    perm = np.random.default_rng(5).permutation(L.shape[1])
    tol = FLOAT32.get(method, 1e-9)
    a = CrowdLabelModel(cardinality=k, method=method).fit(L, progress_bar=False)
    b = CrowdLabelModel(cardinality=k, method=method).fit(L[:, perm], progress_bar=False)
    np.testing.assert_allclose(b.predict_proba(L[:, perm]), a.predict_proba(L), rtol=0, atol=tol)
    np.testing.assert_array_equal(b.predict(L[:, perm]), a.predict(L))
    np.testing.assert_allclose(b.get_weights(), a.get_weights()[perm], rtol=0, atol=tol)
    np.testing.assert_allclose(b.get_conditional_probs(), a.get_conditional_probs()[perm],
                               rtol=0, atol=tol)


# -- sequence (span) label models: annotators renamed, documents and span rows reordered
# their L-BFGS word-window prior stops at its own tolerance, so the fits' rounding
# differences (annotator or document order in a sum) come back at about 1e-8
SEQUENCE_TOL = {"text_prior_dawid_skene": 1e-7, "span_length_prior": 1e-7}


def rebuilt_spans(seq, rename=None, doc_order=None):
    """``seq`` read again from its spans, annotators under ``rename`` (old → new), the
    documents in ``doc_order`` and the span and seen rows shuffled."""
    from crowd_keras.sequences.annotations import SequenceAnnotations
    frame = seq.spans_frame()[["doc", "annotator", "start", "end", "label"]]
    seen = pd.DataFrame({"doc": seq.doc_ids[seq.assign_doc],
                         "annotator": seq.annotator_ids[seq.assign_annotator]})
    texts, ids = list(seq.texts), np.asarray(seq.doc_ids)
    if rename is not None:
        frame["annotator"], seen["annotator"] = (frame["annotator"].map(rename),
                                                 seen["annotator"].map(rename))
    if doc_order is not None:
        texts, ids = [texts[i] for i in doc_order], ids[doc_order]
        frame, seen = frame.sample(frac=1.0, random_state=1), seen.sample(frac=1.0, random_state=2)
    return SequenceAnnotations.from_spans(texts, frame, seen=seen, doc_ids=ids, scheme=seq.scheme)


def token_index(seq) -> pd.MultiIndex:
    """(document id, token position in it) of each token."""
    lengths = np.diff(seq.tokens.doc_ptr)
    return pd.MultiIndex.from_arrays([np.repeat(seq.doc_ids, lengths),
                                      np.concatenate([np.arange(n) for n in lengths])])


@pytest.fixture(scope="module")
def span_crowds():
    from sequence_data import simulated_spans
    seq, _ = simulated_spans(n_docs=60, n_workers=8, per_doc=4, seed=0)
    names = sorted(seq.annotator_ids.tolist())
    new = {old: f"z{len(names) - i:03d}" for i, old in enumerate(names)}
    renamed_seq = rebuilt_spans(seq, rename=new)
    assert renamed_seq.annotator_ids.tolist() != [new[n] for n in seq.annotator_ids]
    order = np.random.default_rng(3).permutation(seq.n_docs)
    return {"original": seq, "renamed": (renamed_seq, {v: k for k, v in new.items()}),
            "documents": (rebuilt_spans(seq, doc_order=order), None)}


def sequence_models():
    from crowd_keras.sequences.registry import available_sequence_models
    return available_sequence_models()


@pytest.mark.parametrize("name", sequence_models())
@pytest.mark.parametrize("variant", ["renamed", "documents"])
def test_sequence_models_ignore_annotator_names_and_document_order(span_crowds, name, variant):
    from crowd_keras.sequences.registry import get_sequence_model
    seq = span_crowds["original"]
    other, back = span_crowds[variant]
    tol = SEQUENCE_TOL.get(name, 1e-9)
    a, b = get_sequence_model(name).fit(seq), get_sequence_model(name).fit(other)
    ia, ib = token_index(seq), token_index(other)
    pa = pd.DataFrame(a.posteriors_, index=ia)
    np.testing.assert_allclose(pd.DataFrame(b.posteriors_, index=ib).loc[ia].to_numpy(),
                               pa.to_numpy(), rtol=0, atol=tol)
    np.testing.assert_array_equal(pd.Series(b.predict(), index=ib).loc[ia].to_numpy(),
                                  a.predict())
    qa = a.annotator_quality_.set_index("annotator")
    qb = b.annotator_quality_
    if back is not None:
        qb = qb.assign(annotator=qb["annotator"].map(back))
    qb = qb.set_index("annotator").loc[qa.index]
    for column in qa.columns:
        if qa[column].dtype.kind in "fiu":
            np.testing.assert_allclose(qb[column].to_numpy(float), qa[column].to_numpy(float),
                                       rtol=0, atol=tol, err_msg=column)
