"""Every registered sequence model on degenerate and extreme corpora (empty, whitespace-only,
one-token and 20,000-token documents, documents nobody annotated, all ``O``, every token in a
span, 30 labels, touching and nested spans, one annotator, annotators who never meet, one
annotator with nearly all spans, emoji / combining marks / CRLF / tabs / no-break spaces,
int and mixed ids), in IO and BIO: finite posteriors whose rows sum to 1, decoded spans inside
their document on token edges, the same result twice, no RuntimeWarning, and the agreement
report on the same corpora."""
import warnings

import numpy as np
import pandas as pd
import pytest

from crowd_keras.agreement import agreement_report, bootstrap_ci
from crowd_keras.errors import CrowdDataError
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.registry import available_sequence_models, get_sequence_model

MODELS = available_sequence_models()
#: scores only the votes it was fitted on (weak.py: fit it on new TokenVotes instead)
FITTED_ONLY = {"abstain_dawid_skene"}

_WORDS = " ".join(f"w{i}" for i in range(60))
_W = [_WORDS.index(f"w{i} ") if i < 59 else _WORDS.rindex("w59") for i in range(60)]
_LABELS = [f"L{i}" for i in range(30)]

CORPORA = {
    "empty_document": (["", "a b c"], {0: {"x": []},
                                       1: {"x": [[0, 1, "P"]], "y": [[0, 3, "P"]]}}),
    "whitespace_document": ([" \r\n\t\u00a0 ", "a b c"],
                            {0: {"x": [], "y": []},
                             1: {"x": [[0, 1, "P"]], "y": [[0, 3, "P"]]}}),
    "one_token": (["word"], {0: {"x": [[0, 4, "P"]], "y": []}}),
    "unannotated_document": (["a b", "c d"], {0: {"x": [[0, 1, "P"]], "y": [[0, 1, "P"]]}}),
    "one_annotator_on_a_document": (["a b", "c d"], {0: {"x": [[0, 1, "P"]], "y": [[0, 1, "P"]]},
                                                     1: {"x": [[2, 3, "P"]]}}),
    "all_outside": (["a b c", "d e"], {0: {"x": [], "y": []}, 1: {"x": [], "y": []}}),
    "all_inside": (["a b c", "d e"], {0: {"x": [[0, 5, "P"]], "y": [[0, 5, "P"]]},
                                      1: {"x": [[0, 3, "P"]], "y": [[0, 3, "P"]]}}),
    "thirty_labels": ([_WORDS], {0: {a: [[_W[2 * i], _W[2 * i] + len(f"w{2 * i}"),
                                          _LABELS[(i + k) % 30]] for i in range(30)]
                                     for k, a in enumerate("xyz")}}),
    "touching_spans": (["a b c d"], {0: {"x": [[0, 1, "P"], [2, 3, "P"]],
                                         "y": [[0, 1, "P"], [2, 3, "P"]]}}),
    "nested_own_spans": (["a b c d"], {0: {"x": [[0, 5, "P"], [2, 3, "P"]], "y": [[0, 3, "P"]]}}),
    "nested_own_two_labels": (["a b c d"], {0: {"x": [[0, 5, "P"], [2, 3, "Q"]],
                                                "y": [[0, 3, "P"]]}}),
    "single_annotator": (["a b c", "d e f"], {0: {"x": [[0, 1, "P"]]}, 1: {"x": [[2, 3, "P"]]}}),
    "annotators_never_meet": (["a b c", "d e f"], {0: {"x": [[0, 1, "P"]]},
                                                   1: {"y": [[2, 3, "P"]]}}),
    "one_annotator_95_percent": (["a b c d e f g h i j"] * 5, {
        d: {"x": [[0, 1, "P"], [2, 3, "P"], [4, 5, "P"], [6, 7, "P"]],
            "y": [[8, 9, "P"]] if d == 0 else []} for d in range(5)}),
    "unicode": (["héllo 😀 wörld\r\nfoo\tbar\u00a0baz e\u0301x"],
                {0: {"x": [[0, 5, "P"], [8, 13, "P"]], "y": [[6, 7, "P"], [15, 18, "P"]],
                     "z": [[26, 29, "P"]]}}),
    "mixed_document_ids": ({1: "a b", "1": "c d", "z": "e"},
                           {1: {"x": [[0, 1, "P"]], "2": [[2, 3, "P"]]},
                            "1": {"x": [], "2": [[0, 1, "P"]]}, "z": {"x": [[0, 1, "P"]]}}),
    "int_annotator_ids": (["a b", "c d"], {0: {1: [[0, 1, "P"]], 2: [[0, 1, "P"]]},
                                           1: {1: [], 2: [[2, 3, "P"]]}}),
    "span_is_whole_document": (["a b c"], {0: {"x": [[0, 5, "P"]], "y": [[0, 5, "P"]], "z": []}}),
}


def _sequences(name, scheme):
    texts, spans = CORPORA[name]
    return SequenceAnnotations.from_dict(texts, spans, scheme=scheme)


def _check_fit(model_name, seq, **params):
    """Fit, then the invariants every model owes on any corpus it accepts."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # divide by zero, invalid, overflow
        model = get_sequence_model(model_name, **params).fit(seq)
        post = model.predict_proba()
        spans = model.predict_spans()
        quality = model.annotator_quality_
        model.label_issues()
    assert post.shape == (seq.n_tokens, seq.n_tags)
    assert np.isfinite(post).all() and np.allclose(post.sum(1), 1.0)
    assert set(quality["annotator"]) == set(seq.annotator_ids)
    # every decoded span inside its document, on the edges of its tokens
    doc = np.array([{d: i for i, d in enumerate(seq.doc_ids.tolist())}[d]
                    for d in spans["doc"]], np.int64)
    start, end = spans["start"].to_numpy(np.int64), spans["end"].to_numpy(np.int64)
    assert ((0 <= start) & (start < end) & (end <= seq.text_len[doc])).all()
    width = int(seq.text_len.max()) + 1 if seq.n_docs else 1
    assert np.isin(doc * width + start, seq.tokens.doc * width + seq.tokens.start).all()
    assert np.isin(doc * width + end, seq.tokens.doc * width + seq.tokens.end).all()
    assert spans["text"].tolist() == [seq.texts[d][a:b] for d, a, b in zip(doc, start, end)]
    again = get_sequence_model(model_name, **params).fit(seq)
    np.testing.assert_array_equal(again.predict_proba(), post)
    return model


@pytest.mark.parametrize("scheme", ["IO", "BIO"])
@pytest.mark.parametrize("model_name", MODELS)
def test_every_model_on_every_degenerate_corpus(model_name, scheme):
    for name in CORPORA:
        seq = _sequences(name, scheme)
        model = _check_fit(model_name, seq)
        if model_name in FITTED_ONLY:
            continue
        for docs in ([0], [seq.n_docs - 1]):        # documents of the fitted corpus scored anew
            sub = seq.subset(docs)
            post = model.predict_proba(sub)
            assert post.shape == (sub.n_tokens, sub.n_tags)
            assert np.isfinite(post).all() and np.allclose(post.sum(1), 1.0)
            model.predict_spans(sub)


@pytest.mark.parametrize("model_name", MODELS)
def test_long_document(model_name):
    """One 20,000-token document beside a short one. The chain models' forward-backward loops
    over positions (chains.py), ~0.25 s an iteration here: two iterations bound the time."""
    n = 20000
    text = " ".join(["tok"] * n)
    seq = SequenceAnnotations.from_dict([text, "a b"], {
        0: {"x": [[4 * i, 4 * i + 3, "P"] for i in range(0, n, 7)],
            "y": [[4 * i, 4 * i + 3, "P"] for i in range(0, n, 5)], "z": []},
        1: {"x": [[0, 1, "P"]]}}, scheme="BIO")
    params = {"max_iter": 2} if model_name in ("hmm_crowd", "bsc_seq") else {}
    _check_fit(model_name, seq, **params)


def test_touching_spans_kept_apart_in_bio_and_joined_in_io():
    """BIO keeps two touching spans of one label apart; IO has no B, so they are one run
    (docs/spans.md)."""
    texts, spans = CORPORA["touching_spans"]
    for scheme, expected in (("BIO", [[0, 1], [2, 3]]), ("IO", [[0, 3]])):
        seq = SequenceAnnotations.from_dict(texts, spans, scheme=scheme)
        for model_name in MODELS:
            found = get_sequence_model(model_name).fit(seq).predict_spans()
            assert found[["start", "end"]].values.tolist() == expected, (model_name, scheme)


@pytest.mark.parametrize("scheme", ["IO", "BIO"])
def test_agreement_report_on_degenerate_corpora(scheme):
    """The report runs without RuntimeWarning, or refuses with a CrowdDataError saying why
    (one annotator; annotators who never share a document)."""
    refused = {"single_annotator": "at least two annotators",
               "annotators_never_meet": "no item has two annotations"}
    for name in CORPORA:
        seq = _sequences(name, scheme)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            if name in refused:
                with pytest.raises(CrowdDataError, match=refused[name]):
                    agreement_report(seq, n_bootstrap=20)
                continue
            report = agreement_report(seq, n_bootstrap=20)
        assert set(report.summary["statistic"]) >= {"krippendorff_alpha", "span_f1_token"}


def test_bootstrap_interval_of_one_document_is_undefined():
    """A crowd whose agreement rests on one document (the other has one annotator) has no
    sampling variability to measure: every cluster resample is that document, so the old
    interval was the estimate itself, (v, v), claiming certainty. Now (v, nan, nan)."""
    seq = SequenceAnnotations.from_dict(["a b c", "d e"], {0: {"x": [[0, 1]], "y": [[0, 3]]},
                                                           1: {"x": [[0, 1]]}})
    for stat in ("alpha", "fleiss_kappa", "percent_agreement"):
        estimate, low, high = bootstrap_ci(seq, stat, n_bootstrap=50)
        assert np.isfinite(estimate) and np.isnan(low) and np.isnan(high), stat
    summary = agreement_report(seq, n_bootstrap=50).summary.set_index("statistic")
    assert summary.loc["krippendorff_alpha", ["low", "high"]].isna().all()
    # two documents that disagree differently: a real interval, wider than a point
    two = SequenceAnnotations.from_dict(["a b c", "d e"], {0: {"x": [[0, 1]], "y": [[0, 3]]},
                                                           1: {"x": [[0, 1]], "y": [[0, 1]]}})
    estimate, low, high = bootstrap_ci(two, "percent_agreement", n_bootstrap=200)
    assert low < high and low <= estimate <= high


@pytest.mark.parametrize("texts, spans, kwargs, where", [
    ({np.nan: "a b"}, {np.nan: {"x": [[0, 1]]}}, {},
     r"missing document id \(nan\) at position 0"),
    ({None: "a b", "k": "c"}, {None: {"x": [[0, 1]]}}, {},
     r"missing document id \(None\) at position 0"),
    (["a b", "c"], {"j": {"x": [[0, 1]]}}, {"doc_ids": ["j", None]},
     r"missing document id \(None\) at position 1"),
    ({"j": "a b", "k": "c"}, {"j": {"x": [[0, 1]]}, None: {"x": [[0, 1]]}}, {},
     r"span row \(nan, 'x', 0\): missing document id"),
])
def test_a_missing_document_id_is_refused_where_it_is(texts, spans, kwargs, where):
    """None / NaN as a document id was matched to another missing id (a NaN document was
    accepted) or reported as "document None is not among the documents given" when it was;
    now refused as annotator ids are, naming where."""
    with pytest.raises(CrowdDataError, match=where):
        SequenceAnnotations.from_dict(texts, spans, **kwargs)


def test_a_missing_document_id_in_seen_is_refused():
    spans = pd.DataFrame({"doc": ["j"], "annotator": ["x"], "start": [0], "end": [1]})
    seen = pd.DataFrame({"doc": ["j", None], "annotator": ["y", "z"]}, index=[10, 11])
    with pytest.raises(CrowdDataError, match="seen row 11: missing document id"):
        SequenceAnnotations.from_spans({"j": "a b"}, spans, seen=seen)
