"""Edges of the sequence models' user surface: the corpus encoding, the arguments a user
hands the models and the quality functions (each a clear error, never a silent drop)."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.errors import CrowdDataError
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.tokens import tokenize


def spans(rows):
    return pd.DataFrame(rows, columns=["doc", "annotator", "start", "end", "label"])


def test_tokens_made_for_other_texts_are_refused():
    """``tokens=`` of documents in another order: a token past its text is an error naming
    the document (it decoded to the span (0, 13) of the one-character text "x")."""
    first = SequenceAnnotations.from_spans(["Alice met Bob", "x"],
                                           spans([(0, "a", 0, 5, "P"), (0, "b", 0, 5, "P")]))
    with pytest.raises(CrowdDataError, match="tokens do not fit the texts: document 'd0'"):
        SequenceAnnotations.from_spans({"d0": "x", "d1": "Alice met Bob"},
                                       spans([("d1", "a", 0, 5, "P")]), tokens=first.tokens)
    with pytest.raises(TypeError, match="tokens must be a Tokens table"):
        SequenceAnnotations.from_spans(["a b"], spans([]), tokens=[(0, 1), (2, 3)])
    # the texts' own tokens (another corpus' of the same texts) are fine
    same = SequenceAnnotations.from_spans(["Alice met Bob", "x"], spans([(1, "c", 0, 1, "P")]),
                                          tokens=tokenize(["Alice met Bob", "x"]))
    assert same.decode(np.array([0, 0, 0, 1])).values.tolist() == [[1, 0, 1, "P", "x"]]


TEXTS = {"d0": "Alice met Bob in Paris today", "d1": "Bob went home", "d2": "Paris is big"}
ROWS = [("d0", "a", 0, 5, "PER"), ("d0", "b", 0, 5, "PER"), ("d0", "b", 10, 13, "PER"),
        ("d0", "c", 17, 22, "LOC"), ("d1", "a", 0, 3, "PER"), ("d1", "c", 0, 3, "PER"),
        ("d2", "b", 0, 5, "LOC"), ("d2", "a", 0, 5, "LOC")]


@pytest.mark.parametrize("name", ["majority_vote", "dawid_skene", "calibrated"])
def test_a_token_prior_is_never_silently_ignored(name):
    """``predict_proba(token_prior=p)`` without sequences returned the fitted posteriors
    whatever ``p``; majority vote, which refuses a prior in ``fit``, ignored one for new
    sequences."""
    from crowd_keras.sequences.registry import get_sequence_model
    seq = SequenceAnnotations.from_spans(TEXTS, spans(ROWS))
    model = get_sequence_model(name).fit(seq)
    prior = np.full((seq.n_tokens, seq.n_tags), 1.0 / seq.n_tags)
    for call in (model.predict_proba, model.predict, model.predict_spans):
        with pytest.raises(ValueError, match="token_prior"):
            call(token_prior=prior)
    if name == "majority_vote":
        with pytest.raises(ValueError, match="takes no token_prior"):
            model.predict_proba(seq, token_prior=prior)
    else:   # a prior for new sequences is used
        assert not np.allclose(model.predict_proba(seq, token_prior=prior),
                               model.predict_proba(seq))


def test_quality_functions_check_their_inputs():
    """Gold spans with NaN, reversed or fractional offsets covered no token (or the wrong
    ones) silently; a tag array of the wrong length was numpy's broadcast message."""
    from crowd_keras.sequences.quality import (annotator_quality, spans_token_mask,
                                               token_confusions, token_prf)
    seq = SequenceAnnotations.from_spans({"a": "Alice met Bob", "b": "x y z"},
                                         spans([("a", "w", 0, 5, "P")]))

    def gold(start, end, doc="a", index=None):
        return pd.DataFrame({"doc": [doc], "start": [start], "end": [end]}, index=index)

    assert spans_token_mask(seq, gold(0, 5)).tolist() == [True] + [False] * 5
    assert spans_token_mask(seq, {"a": [[10, 13]], "b": []}).tolist() == \
        [False, False, True, False, False, False]
    for start, end, what in [(np.nan, 5, "start must be an integer"), (6, 2, "end before start"),
                             (-5, 2, "negative start"), (0.5, 2, "start must be an integer")]:
        with pytest.raises(CrowdDataError, match=f"span row 7: {what}"):
            spans_token_mask(seq, gold(start, end, index=[7]))
    with pytest.raises(CrowdDataError, match="span row 7: document 'zz' is not in the sequences"):
        spans_token_mask(seq, gold(0, 1, doc="zz", index=[7]))
    with pytest.raises(CrowdDataError, match=r"document 'a': a span is \[start, end\] or"):
        spans_token_mask(seq, {"a": [[0, 5], [7]]})
    with pytest.raises(CrowdDataError, match=r"no column\(s\) \['start'\]"):
        spans_token_mask(seq, gold(0, 5).rename(columns={"start": "begin"}))
    for score in (annotator_quality, token_confusions):
        with pytest.raises(ValueError, match=r"tags must have shape \(6,\), got \(2,\)"):
            score(seq, np.array([1, 0]))
        with pytest.raises(CrowdDataError, match="tag code 2 of token 0 is outside 0..1"):
            score(seq, np.array([2, 0, 0, 0, 0, 0]))
    assert annotator_quality(seq, np.array([1, 0, 0, 0, 0, 0]))["token_f1"].tolist() == [1.0]
    with pytest.raises(ValueError, match="same tokens"):
        token_prf([True, False, True], [False, False])


@pytest.mark.parametrize("name, setting, value, match", [
    ("span_length_prior", "smoothing", "abc", "SpanLengthPrior smoothing must be a number"),
    ("span_length_prior", "smoothing", None, "SpanLengthPrior smoothing must be a number"),
    ("span_length_prior", "smoothing", float("inf"), "SpanLengthPrior smoothing must be a finite"),
    ("span_length_prior", "smoothing", 0.0, "smoothing must be positive"),
    ("calibrated", "grid", ["a"], "grid must be thresholds in"),
    ("calibrated", "grid", [0.3, float("nan")], "grid must be thresholds in"),
    ("dawid_skene", "init", "nan", "init posteriors must be probabilities summing to 1; row 0"),
    ("dawid_skene", "init", "negative", "init posteriors must be probabilities"),
    ("hmm_crowd", "constrain_bio", "no", "constrain_bio must be True or False, got 'no'"),
])
def test_settings_that_made_nan_or_an_unnamed_error(name, setting, value, match):
    """An infinite smoothing or NaN / negative initial posteriors made NaN posteriors; a text
    smoothing or grid was float()'s message, which names no setting; a NaN threshold in the
    grid was tried; ``constrain_bio="no"`` read as True."""
    from crowd_keras.sequences.registry import get_sequence_model
    seq = SequenceAnnotations.from_spans(TEXTS, spans(ROWS))
    if value in ("nan", "negative"):
        value = np.full((seq.n_tokens, seq.n_tags), np.nan if value == "nan" else -1.0)
    with pytest.raises((TypeError, ValueError), match=match):
        get_sequence_model(name, **{setting: value}).fit(seq)


def test_a_lone_surrogate_in_a_text_is_a_character():
    """A text cut inside an emoji (JSON's "\\ud83d" reads as a lone surrogate) was
    UnicodeEncodeError from tokenising, the text check and the default model's words."""
    import json
    from crowd_keras.sequences.registry import get_sequence_model
    from crowd_keras.sequences.tokens import token_strings
    text = json.loads('"caf\\ud83d patients here"')
    rows = [(0, w, 5, 13, "P", "patients") for w in "ab"]
    seq = SequenceAnnotations.from_spans([text], pd.DataFrame(
        rows, columns=["doc", "annotator", "start", "end", "label", "text"]))
    assert seq.tokens.start.tolist() == [0, 5, 14] and seq.summary.text_mismatch == 0
    assert token_strings(seq.texts, seq.tokens).tolist() == [text[:4], "patients", "here"]
    found = get_sequence_model().fit(seq).predict_spans()
    assert found[["start", "end", "text"]].values.tolist() == [[5, 13, "patients"]]


def test_annotator_ids_given_are_a_list_of_distinct_ids():
    """A repeated id was pandas' InvalidIndexError, a missing one an annotator None and a
    string its characters."""
    rows = spans([(0, "a", 0, 1, "P"), (0, "b", 0, 1, "P")])
    with pytest.raises(CrowdDataError, match="annotator id 'a' at position 2 repeats"):
        SequenceAnnotations.from_spans(["a b"], rows, annotator_ids=["a", "b", "a"])
    with pytest.raises(CrowdDataError, match=r"missing annotator id \(None\) at annotator_ids\[2\]"):
        SequenceAnnotations.from_spans(["a b"], rows, annotator_ids=["a", "b", None])
    with pytest.raises(TypeError, match="got the string 'ab'"):
        SequenceAnnotations.from_spans(["a b"], rows, annotator_ids="ab")
    # ints and emails together (Label Studio's users), in the order given
    seq = SequenceAnnotations.from_spans(["a b"], spans([(0, 7, 0, 1, "P")]),
                                         annotator_ids=[7, "x@y.org"])
    assert seq.annotator_ids.tolist() == [7, "x@y.org"]


def test_decode_checks_docs_and_scores():
    """``decode(tags, docs=["d0"])`` (ids, not codes) or a code out of range kept no span,
    silently; scores of the wrong length were an IndexError."""
    seq = SequenceAnnotations.from_spans({"d0": "Alice met Bob", "d1": "x y"},
                                         spans([("d0", "a", 0, 5, "P")]))
    tags = np.array([1, 0, 1, 1, 0])
    assert seq.decode(tags, docs=[1])[["doc", "text"]].values.tolist() == [["d1", "x"]]
    with pytest.raises(CrowdDataError, match=r"for document ids give pd.Index\(sequences.doc_ids\)"):
        seq.decode(tags, docs=["d0"])
    with pytest.raises(CrowdDataError, match="document code 5 at position 0 is outside 0..1"):
        seq.decode(tags, docs=[5])
    with pytest.raises(ValueError, match=r"scores must have shape \(5,\), got \(2,\)"):
        seq.decode(tags, scores=[1.0, 2.0])
    assert seq.decode(tags, scores=np.arange(5.0))["score"].tolist() == [0.0, 2.0, 3.0]


def test_held_out_documents_are_checked_codes():
    """``choose_temperature(seq, docs=["d0"])`` (ids, not codes) said that no document of
    docs has two annotations; a code out of range was ignored."""
    from crowd_keras.sequences.selection import choose_temperature, heldout_annotations
    seq = SequenceAnnotations.from_spans(TEXTS, spans(ROWS))
    with pytest.raises(CrowdDataError, match="heldout_annotations takes document codes"):
        choose_temperature(seq, docs=["d0"], n_draws=1)
    with pytest.raises(CrowdDataError, match="document code 7 at position 1 is outside 0..2"):
        heldout_annotations(seq, docs=[0, 7])
    hidden = heldout_annotations(seq, docs=[1])
    assert seq.doc_ids[seq.assign_doc[hidden]].tolist() == ["d1"]


def test_nothing_to_fit_says_why():
    """Annotations of empty or whitespace-only documents only: the error said that no
    document has an annotation."""
    from crowd_keras.sequences.models import TokenDawidSkene
    empty = SequenceAnnotations.from_spans(["", "  "], spans([]), seen=[(0, "y"), (1, "y")],
                                           labels=["P"])
    with pytest.raises(CrowdDataError, match="nothing to fit, the 2 documents have no tokens"):
        TokenDawidSkene().fit(empty)
    some = SequenceAnnotations.from_spans(["", "a b"], spans([]), seen=[(0, "y")], labels=["P"])
    with pytest.raises(CrowdDataError, match="no document with a token has an annotation"):
        TokenDawidSkene().fit(some)


def test_token_ranges_checks_its_spans():
    """A negative or reversed offset gave a token range silently; one document id as a string
    was read as one document per character."""
    seq = SequenceAnnotations.from_spans({"d0": "Alice met Bob", "d1": "x y"},
                                         spans([("d0", "a", 0, 5, "P")]))
    a, b = seq.token_ranges(np.array(["d0", "d1"]), np.array([6, 2]), [13, 3])
    assert a.tolist() == [1, 4] and b.tolist() == [3, 5]
    with pytest.raises(CrowdDataError, match=r"span 0: negative start \(start -3, end 2\)"):
        seq.token_ranges(["d0"], [-3], [2])
    with pytest.raises(CrowdDataError, match="span 1: end before start"):
        seq.token_ranges(["d0", "d0"], [0, 6], [5, 2])
    with pytest.raises(TypeError, match=r"one span: \[doc\], \[start\], \[end\]"):
        seq.token_ranges("d0", 0, 5)
    with pytest.raises(ValueError, match="lengths 2, 1 and 1"):
        seq.token_ranges(["d0", "d1"], [0], [1])


def test_a_tokenizer_that_raises_is_named_with_the_document():
    """The exception of a user tokenizer (at its call or, for a generator, while it runs)
    came out alone, without the document it failed on."""
    def picky(text):
        if "§" in text:
            raise ValueError("cannot read §")
        return [(0, len(text))]

    def lazy(text):
        for k, word in enumerate(text.split()):
            if word == "§":
                raise KeyError(k)
            yield (text.index(word), text.index(word) + len(word))

    for tokenizer, raised in ((picky, "ValueError: cannot read §"), (lazy, "KeyError: 1")):
        with pytest.raises(CrowdDataError, match=f"tokenizer {tokenizer.__name__} on document "
                                                 f"'b' raised {raised}"):
            tokenize(["ok", "x §"], tokenizer, doc_ids=["a", "b"])
    assert tokenize(["x y"], lazy).start.tolist() == [0, 2]


def test_spans_without_labels_and_labels_given_say_to_pass_default_label():
    """PICO's layout (``[start, end]``) with ``labels=["Participants"]`` said that label
    'span' of span row 0 is not among the labels, a label no row holds."""
    texts, marks = {"d": "Alice met Bob"}, {"d": {"a": [[0, 5]]}}
    with pytest.raises(CrowdDataError, match="default_label 'span' is not among labels "
                                             r"\['Participants'\]; pass default_label="):
        SequenceAnnotations.from_dict(texts, marks, labels=["Participants"])
    seq = SequenceAnnotations.from_dict(texts, marks, labels=["Participants"],
                                        default_label="Participants")
    assert seq.spans_frame()["label"].tolist() == ["Participants"]
    # no span at all: nothing takes the default label
    assert SequenceAnnotations.from_dict(texts, {"d": {"a": []}}, labels=["P"]).tags.tolist() \
        == ["O", "I-P"]


def test_held_out_scores_take_a_mask_of_the_annotations():
    """Positions of the hidden annotations (``np.flatnonzero(hidden)``) or a mask of the
    wrong length indexed the wrong annotations (an IndexError at best)."""
    from crowd_keras.sequences.calibration import agreement_counts
    from crowd_keras.sequences.models import TokenDawidSkene
    from crowd_keras.sequences.selection import (agreement_f1, heldout_annotations,
                                                 heldout_log_likelihood)
    seq = SequenceAnnotations.from_spans(TEXTS, spans(ROWS))
    hidden = heldout_annotations(seq)
    model = TokenDawidSkene().fit(seq.drop_annotations(hidden))
    assert np.isfinite(heldout_log_likelihood(model, seq, hidden))
    assert 0 <= agreement_f1(model.predict(), seq, hidden) <= 1
    assert agreement_counts(model.predict_proba(), seq, hidden, [0.5]).shape == (1, 3)
    shape = rf"boolean mask of shape \({len(hidden)},\) over the annotations"
    for bad in (np.flatnonzero(hidden), hidden[:3]):
        with pytest.raises(ValueError, match="heldout_log_likelihood takes a " + shape):
            heldout_log_likelihood(model, seq, bad)
        with pytest.raises(ValueError, match="agreement_f1 takes a " + shape):
            agreement_f1(model.predict(), seq, bad)
        with pytest.raises(ValueError, match="agreement_counts takes a " + shape):
            agreement_counts(model.predict_proba(), seq, bad, [0.5])
    # the tags and posteriors are those of the full corpus' tokens
    with pytest.raises(ValueError, match=r"tags must have shape \(12,\)"):
        agreement_f1(model.predict()[:5], seq, hidden)
    with pytest.raises(ValueError, match=r"post must have shape \(12, 3\)"):
        agreement_counts(model.predict_proba()[:5], seq, hidden, [0.5])


def test_selection_checks_its_grid_and_draws():
    """``temperatures=(0.0, 1.0)`` could choose τ = 0 (the prior alone), which TokenDawidSkene
    refuses, and a negative τ inverted the crowd's evidence; no temperature or no draw was
    pandas' KeyError; a list of models was an AttributeError."""
    from crowd_keras.sequences.models import TokenDawidSkene
    from crowd_keras.sequences.selection import choose_temperature, heldout_scores
    seq = SequenceAnnotations.from_spans(TEXTS, spans(ROWS))
    for temperatures, error, match in [
            ((0.0, 1.0), ValueError, "one or more positive numbers"),
            ((-1.0, 1.0), ValueError, "choose_temperature temperatures must be a finite"),
            ((), ValueError, "one or more positive numbers"),
            ("0.5", TypeError, "temperatures must be a list of numbers")]:
        with pytest.raises(error, match=match):
            choose_temperature(seq, temperatures=temperatures, n_draws=1)
    with pytest.raises(ValueError, match="choose_temperature n_draws must be an integer >= 1"):
        choose_temperature(seq, n_draws=0)
    with pytest.raises(ValueError, match="heldout_scores seed must be an integer >= 0"):
        heldout_scores(seq, {"ds": TokenDawidSkene()}, n_draws=1, seed=-1)
    with pytest.raises(TypeError, match=r"non-empty \{name: model\} mapping, got list"):
        heldout_scores(seq, [TokenDawidSkene()], n_draws=1)
    best, table = choose_temperature(seq, temperatures=(0.5, 1.0), n_draws=1)
    assert best in (0.5, 1.0) and table["temperature"].tolist() == [0.5, 1.0]


def test_an_id_written_in_another_type_is_named():
    """Spans read from a CSV name document 7 where the texts' keys are "7": the error said
    only that document 7 is not among the documents."""
    with pytest.raises(CrowdDataError, match="span row 0: document 7 is not among the 1 "
                                             "documents given \\(document '7' is: give"):
        SequenceAnnotations.from_spans({"7": "a b"}, spans([(7, "a", 0, 1, "P")]))
    with pytest.raises(CrowdDataError, match="label 1 is not among .* \\(label '1' is"):
        SequenceAnnotations.from_spans({7: "a b"}, spans([(7, "a", 0, 1, 1)]), labels=["1"])
    with pytest.raises(CrowdDataError, match="document 8 is not among the 1 documents given$"):
        SequenceAnnotations.from_spans({7: "a b"}, spans([(8, "a", 0, 1, "P")]))


def test_doc_ids_that_differ_from_a_mappings_keys_are_refused():
    """``from_spans({"p": text}, spans, doc_ids=["q"])`` named the document "q", silently:
    the mapping's keys were dropped."""
    empty = spans([])
    with pytest.raises(CrowdDataError, match=r"doc_ids differ from the keys .* \['p'\]"):
        SequenceAnnotations.from_spans({"p": "a"}, empty, doc_ids=["q"])
    with pytest.raises(CrowdDataError, match="doc_ids differ"):
        SequenceAnnotations.from_spans({7: "a"}, empty, doc_ids=["7"])
    assert SequenceAnnotations.from_spans({"p": "a"}, empty, doc_ids=["p"]).doc_ids.tolist() \
        == ["p"]
    # a list or a Series (e.g. a frame's column with its RangeIndex) takes doc_ids
    assert SequenceAnnotations.from_spans(pd.Series(["a", "b"]), empty,
                                          doc_ids=["x", "y"]).doc_ids.tolist() == ["x", "y"]


def test_tempered_proba_and_held_out_likelihood_check_their_inputs():
    """``tempered_proba`` of an unfitted model was an AttributeError and a text τ numpy's
    ufunc message; a held-out likelihood of a model fitted on other documents (or a proba of
    other tokens) scored the wrong tokens."""
    from crowd_keras.errors import NotFittedError
    from crowd_keras.sequences.models import TokenDawidSkene
    from crowd_keras.sequences.selection import heldout_annotations, heldout_log_likelihood
    seq = SequenceAnnotations.from_spans(TEXTS, spans(ROWS))
    with pytest.raises(NotFittedError):
        TokenDawidSkene().tempered_proba(0.5)
    hidden = heldout_annotations(seq)
    model = TokenDawidSkene().fit(seq.drop_annotations(hidden))
    with pytest.raises(TypeError, match="temperature must be a number"):
        model.tempered_proba("0.5")
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        model.tempered_proba(-1.0)
    np.testing.assert_allclose(model.tempered_proba(1.0), model.predict_proba())
    with pytest.raises(ValueError, match=r"proba must have shape \(12, 3\)"):
        heldout_log_likelihood(model, seq, hidden, proba=np.ones((3, 3)) / 3)
    other = SequenceAnnotations.from_spans({"x": "a b"}, spans([("x", "a", 0, 1, "PER"),
                                                                ("x", "b", 0, 1, "PER")]))
    with pytest.raises(CrowdDataError, match="fitted on other documents"):
        heldout_log_likelihood(model, other, np.array([True, False]))
    with pytest.raises(NotFittedError):
        heldout_log_likelihood(TokenDawidSkene(), seq, hidden)


def test_categorical_columns_are_read_by_their_values():
    """A categorical annotator column (pandas' ``read_csv(dtype="category")``) was refused
    as "categorical values", though ``Annotations.from_frame`` reads one by its values."""
    rows = spans([("d0", "a", 0, 5, "PER"), ("d0", "b", 0, 5, "PER"), ("d1", "a", 0, 4, "LOC")])
    texts = {"d0": "Alice met Bob", "d1": "Rome is big"}
    cat = rows.astype({"doc": "category", "annotator": "category", "label": "category"})
    for seen in (None, pd.DataFrame({"doc": ["d1"], "annotator": ["c"]}).astype("category")):
        plain = SequenceAnnotations.from_spans(texts, rows, seen=seen)
        coded = SequenceAnnotations.from_spans(texts, cat, seen=seen)
        assert coded.annotator_ids.tolist() == plain.annotator_ids.tolist()
        assert coded.labels.tolist() == ["LOC", "PER"]
        np.testing.assert_array_equal(coded.obs_tag, plain.obs_tag)
    assert coded.annotator_ids.tolist() == ["a", "b", "c"]


def test_from_dict_names_a_spans_argument_that_is_not_a_mapping():
    """A list of span rows (or None) was "'list' object has no attribute 'items'"."""
    for given in ([("d", "a", 0, 5)], None):
        with pytest.raises(CrowdDataError, match="spans must be a mapping .* from_spans"):
            SequenceAnnotations.from_dict({"d": "Alice met"}, given)


def test_from_dict_names_a_bad_span_by_its_document_annotator_and_position():
    """from_dict's spans were named by the row of a frame the user never made ("span row 1:
    missing label"), not by the document, annotator and place in their list."""
    texts = {"d": "Alice met Bob"}
    with pytest.raises(CrowdDataError, match=r"span row \('d', 'b', 0\): missing label"):
        SequenceAnnotations.from_dict(texts, {"d": {"a": [[0, 5, "P"]], "b": [[10, 13]]}})
    with pytest.raises(CrowdDataError, match=r"span row \('d', 'a', 1\): negative start"):
        SequenceAnnotations.from_dict(texts, {"d": {"a": [[0, 5], [-1, 3]]}})
    seq = SequenceAnnotations.from_dict(texts, {"d": {"a": [[0, 5]], "b": []}})
    assert seq.spans_frame()[["doc", "annotator", "start", "end"]].values.tolist() == [
        ["d", "a", 0, 5]]
    assert len(seq.assign_doc) == 2
