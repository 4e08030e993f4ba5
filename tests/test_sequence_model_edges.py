"""Every registered sequence model on edge-case corpora: one document, a one-token or empty
document, a document nobody annotated, an annotator who saw a document and marked nothing,
one annotator, full agreement, labels nobody used; new documents; refits; ids."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.errors import NotFittedError
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.registry import available_sequence_models, get_sequence_model

MODELS = available_sequence_models()
#: scores only the votes it was fitted on (weak.py: fit it on new TokenVotes instead)
FITTED_ONLY = {"abstain_dawid_skene"}

TEXTS = {"d0": "Alice met Bob in Paris today", "d1": "Bob went home", "d2": "Paris is big"}
ROWS = [("d0", "a", 0, 5, "PER"), ("d0", "b", 0, 5, "PER"), ("d0", "b", 10, 13, "PER"),
        ("d0", "c", 17, 22, "LOC"), ("d1", "a", 0, 3, "PER"), ("d1", "c", 0, 3, "PER"),
        ("d2", "b", 0, 5, "LOC"), ("d2", "a", 0, 5, "LOC")]


def spans(rows):
    return pd.DataFrame(rows, columns=["doc", "annotator", "start", "end", "label"])


def _agree(scheme="IO"):
    rows = [(d, w, s, e, "PER") for d, s, e in [("d0", 0, 5), ("d1", 0, 3)] for w in "abc"]
    return dict(texts=TEXTS, spans=spans(rows), scheme=scheme)


CORPORA = {
    "io": dict(texts=TEXTS, spans=spans(ROWS)),
    "bio": dict(texts=TEXTS, spans=spans(ROWS), scheme="BIO"),
    "one_document": dict(texts={"d0": TEXTS["d0"]}, spans=spans(ROWS[:4])),
    "one_token": dict(texts={"x": "Alice"}, spans=spans([("x", "a", 0, 5, "PER")])),
    "one_token_bio": dict(texts={"x": "Alice"}, spans=spans([("x", "a", 0, 5, "PER")]),
                          scheme="BIO"),
    "empty_text_seen": dict(texts={"d0": TEXTS["d0"], "e": ""}, spans=spans(ROWS[:4]),
                            seen=[("e", "a")]),
    "empty_text": dict(texts={"e": "", "d0": TEXTS["d0"]}, spans=spans(ROWS[:4])),
    "unannotated_document": dict(texts=TEXTS, spans=spans(ROWS[:6])),
    "saw_and_marked_nothing": dict(texts=TEXTS, spans=spans(ROWS), seen=[("d1", "b"),
                                                                         ("d2", "z")]),
    "only_empty_annotations": dict(texts=TEXTS, spans=spans([]), seen=[("d0", "a")],
                                   labels=["PER"]),
    "one_annotator": dict(texts=TEXTS, spans=spans([r for r in ROWS if r[1] == "a"])),
    "all_agree": _agree(),
    "all_agree_bio": _agree("BIO"),
    "one_label": dict(texts=TEXTS, spans=spans([r[:4] + ("PER",) for r in ROWS])),
    "text_edges": dict(texts=TEXTS, spans=spans([("d0", "a", 23, 28, "LOC"),
                                                 ("d0", "b", 0, 28, "LOC"),
                                                 ("d1", "a", 9, 13, "LOC")])),
    "unused_label_bio": dict(texts=TEXTS, spans=spans(ROWS), labels=["PER", "LOC", "ORG"],
                             scheme="BIO"),
}
NEW_TEXTS = {"n0": "Zorg visited Xanadu", "n1": "", "n2": "Alice"}


def _check_proba(P, seq):
    assert P.shape == (seq.n_tokens, seq.n_tags)
    assert np.isfinite(P).all()
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-6)


@pytest.mark.parametrize("corpus", list(CORPORA))
@pytest.mark.parametrize("name", MODELS)
def test_every_model_fits_edge_corpora_and_scores_new_documents(name, corpus):
    seq = SequenceAnnotations.from_spans(**CORPORA[corpus])
    model = get_sequence_model(name).fit(seq)
    P = model.predict_proba()
    _check_proba(P, seq)
    tags = model.predict()
    assert tags.shape == (seq.n_tokens,)
    found = model.predict_spans()
    # the spans are the decoded tags' spans; a span's score is a probability
    expect = seq.decode(tags)
    assert found[["doc", "start", "end", "label"]].values.tolist() == \
        expect[["doc", "start", "end", "label"]].values.tolist()
    assert ((found["score"] >= 0) & (found["score"] <= 1 + 1e-9)).all()
    # no annotator dropped from the quality table
    assert model.annotator_quality_["annotator"].tolist() == seq.annotator_ids.tolist()
    if name in FITTED_ONLY:
        return
    labels, scheme = list(seq.labels), seq.scheme
    for rows in ([("n0", "stranger", 0, 4, labels[0])], []):   # an unseen annotator; none
        new = SequenceAnnotations.from_spans(NEW_TEXTS, spans(rows), labels=labels,
                                             scheme=scheme)
        _check_proba(model.predict_proba(new), new)
        # left out and counted, the wrappers (the default model among them) too
        assert model.n_unknown_annotations_ == new.annotations.n_annotations   # token labels
        assert model.predict(new).shape == (new.n_tokens,)
        assert set(model.predict_spans(new)["doc"]) <= set(NEW_TEXTS)


@pytest.mark.parametrize("name", MODELS)
def test_contract_not_fitted_unknown_kwargs_seed_and_refit(name):
    model = get_sequence_model(name)
    for call in (model.predict, model.predict_proba, model.predict_spans):
        with pytest.raises(NotFittedError):
            call()
    with pytest.raises(TypeError):
        get_sequence_model(name, no_such_option=1)
    a = SequenceAnnotations.from_spans(**CORPORA["io"])
    b = SequenceAnnotations.from_spans(
        {"x": "one two three four five six", "y": "seven eight"},
        spans([("x", "p", 0, 3, "PER"), ("x", "q", 0, 3, "PER"), ("y", "q", 0, 5, "ORG"),
               ("y", "r", 6, 11, "ORG"), ("x", "r", 4, 7, "LOC")]), scheme="BIO")
    np.testing.assert_array_equal(get_sequence_model(name).fit(a).predict_proba(),
                                  get_sequence_model(name).fit(a).predict_proba())
    model.fit(a)
    if name not in FITTED_ONLY:   # a count of the old fit's predict_proba does not stay
        model.predict_proba(SequenceAnnotations.from_spans(
            NEW_TEXTS, spans([("n0", "stranger", 0, 4, "PER")]), labels=list(a.labels)))
    model.fit(b)
    fresh = get_sequence_model(name).fit(b)
    np.testing.assert_allclose(model.predict_proba(), fresh.predict_proba())
    assert model.confusion_matrices_.shape == fresh.confusion_matrices_.shape
    assert sorted(vars(model)) == sorted(vars(fresh))
    assert len(model.annotator_quality_) == 3


def test_documents_with_integer_and_string_ids_keep_their_ids():
    """``{"e": ..., 7: ...}``: NumPy would turn 7 into "7", and the spans of document 7
    would then name a document that is not there."""
    seq = SequenceAnnotations.from_spans(
        {"e": "Alice met Bob", 7: "Bob left"},
        spans([("e", 1, 0, 5, "PER"), ("e", 2, 0, 5, "PER"), (7, 1, 0, 3, "PER")]))
    assert seq.doc_ids.tolist() == ["e", 7]
    found = get_sequence_model("majority_vote").fit(seq).predict_spans()
    assert found["doc"].tolist() == ["e", 7]
    # 7 and "7" are two documents (check_unique_ids compares by value and type)
    assert SequenceAnnotations.from_spans({7: "a", "7": "b"}, spans([])).n_docs == 2


@pytest.mark.parametrize("name", [n for n in MODELS if n not in FITTED_ONLY])
def test_quality_scores_of_new_documents(name):
    """``consensus_quality`` & co. score new documents as ``predict_proba`` does: given
    as SequenceAnnotations (tokens = items), annotators not in the fit left out."""
    seq = SequenceAnnotations.from_spans(**CORPORA["io"])
    model = get_sequence_model(name).fit(seq)
    new = SequenceAnnotations.from_spans(
        NEW_TEXTS, spans([("n0", "a", 0, 4, "PER"), ("n2", "stranger", 0, 5, "PER")]),
        labels=list(seq.labels))
    quality = model.consensus_quality(new)
    assert quality.shape == (new.n_tokens,) and np.isfinite(quality).all()
    assert model.n_unknown_annotations_ == 1
    assert model.annotation_quality(new).shape == (new.annotations.n_annotations,)
    assert len(model.label_issues(new)) == new.n_tokens
    assert set(model.next_to_label(2, new)["annotator"]) <= set(seq.annotator_ids)
    if name == "dawid_skene":   # the fitted documents given anew: the fitted scores
        np.testing.assert_allclose(model.consensus_quality(seq), model.consensus_quality())
        np.testing.assert_allclose(model.annotation_quality(seq), model.annotation_quality())


def test_held_out_draws_skip_documents_without_tokens():
    """Only the empty document has two annotations: hiding one leaves no token-label to
    score, so there is nothing to hold out (a clear error, not a NaN score or pandas'
    "Encountered all NA values"); with a document that has tokens, that one is hidden."""
    from crowd_keras import CrowdDataError
    from crowd_keras.sequences.selection import choose_temperature, heldout_annotations
    seq = SequenceAnnotations.from_spans({"e": "", "x": "a b c"}, spans([("x", "p", 0, 1, "L")]),
                                         seen=[("e", "p"), ("e", "q")])
    assert not heldout_annotations(seq).any()
    with pytest.raises(CrowdDataError, match="two annotations and a token"):
        choose_temperature(seq, n_draws=1)
    seq = SequenceAnnotations.from_spans({"e": "", "x": "a b c"}, spans([("x", "p", 0, 1, "L")]),
                                         seen=[("e", "p"), ("e", "q"), ("x", "q")])
    for seed in range(5):
        hidden = heldout_annotations(seq, seed=seed)
        assert seq.doc_ids[seq.assign_doc[hidden]].tolist() == ["x"]
    best, table = choose_temperature(seq, n_draws=2)
    assert np.isfinite(table["heldout_loglik"]).all()


BAD_SETTINGS = {"max_iter": [0, 2.5, "10"], "tol": [float("nan")], "smoothing": [-1.0, float("nan")],
                "prior_strength": [-1.0, float("nan"), "3"], "seed": [-1, 1.5], "n_draws": [1.5],
                "window": [1.5], "n_rounds": [-1], "text_max_iter": [-1], "l2": [-1.0]}


@pytest.mark.parametrize("name", MODELS)
def test_bad_settings_raise_a_named_error_before_any_work(name):
    """A setting out of range is a TypeError / ValueError naming it, not an
    UnboundLocalError (``max_iter=0``), NaN posteriors (a negative ``prior_strength``),
    numpy's seed message or a silent truncation (``max_iter=2.5``)."""
    seq = SequenceAnnotations.from_spans(**CORPORA["io"])
    params = get_sequence_model(name).get_params()
    for setting, values in BAD_SETTINGS.items():
        if setting not in params or (name == "span_length_prior" and setting == "smoothing"):
            continue
        for value in values:
            with pytest.raises((TypeError, ValueError), match=setting):
                get_sequence_model(name, **{setting: value}).fit(seq)
