"""Span labeling functions, their summary, and the abstain-aware token label model."""
import re

import numpy as np
import pandas as pd
import pytest

from crowd_keras import CrowdDataError
from crowd_keras.sequences.labeling_functions import (ABSTAIN, apply_lfs, lf_summary, span_lf,
                                                      tag_lf)
from crowd_keras.sequences.models import TokenDawidSkene
from crowd_keras.sequences.quality import token_prf
from crowd_keras.sequences.weak import AbstainDawidSkene

from sequence_data import simulated_spans


@span_lf(label="P")
def adults(doc):
    return [m.span() for m in re.finditer(r"\d+ adults", doc.text)]


@tag_lf()
def not_after_placebo(doc):
    return ["O" if i and doc.tokens[i - 1] == "placebo" else ABSTAIN
            for i in range(len(doc.tokens))]


@span_lf()
def with_x(doc):
    return [(m.start(), m.end(), "P") for m in re.finditer(r"with \w+", doc.text)]


TEXTS = {"a": "40 adults with asthma got placebo tablets", "b": "no match here", "c": "12 adults"}


def test_apply_gives_votes_with_abstains_and_begins():
    votes = apply_lfs(TEXTS, [adults, not_after_placebo, with_x], progress=False)
    seq = votes.sequences
    assert list(votes.names) == ["adults", "not_after_placebo", "with_x"]
    m = votes.matrix()                         # label code, -1 = O, -2 = abstain
    assert m[:7, 0].tolist() == [0, 0, -2, -2, -2, -2, -2]
    assert m[:7, 1].tolist() == [-2, -2, -2, -2, -2, -2, -1]
    assert m[:7, 2].tolist() == [-2, -2, 0, 0, -2, -2, -2]
    assert m[7:10].max() == -2                 # document b: every function abstains
    bio = votes.tags("BIO")[votes.lf == 0]
    assert bio.tolist() == [1, 2, 1, 2]        # B I in a, B I in c
    assert seq.n_docs == 3 and seq.annotations.n_annotations == 0
    # texts as a Series keep its index as the document ids (were 0, 1, 2)
    series = apply_lfs(pd.Series(TEXTS), [adults], progress=False)
    assert series.sequences.doc_ids.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(series.matrix()[:, 0], m[:, 0])


def test_summary_counts_coverage_overlaps_conflicts_and_accuracy_against_gold():
    votes = apply_lfs(TEXTS, [adults, not_after_placebo, with_x], progress=False)
    gold = {"a": [[0, 21]], "b": [], "c": [[0, 9]]}
    s = lf_summary(votes, gold).set_index("lf")
    T = votes.sequences.n_tokens                # 7 + 3 + 2
    assert T == 12
    assert s.loc["adults", "coverage"] == pytest.approx(4 / T)
    assert s.loc["with_x", "overlaps"] == 0 and s.loc["adults", "conflicts"] == 0
    assert s.loc["adults", "n_spans"] == 2 and s.loc["not_after_placebo", "polarity"] == ["O"]
    assert s.loc["adults", "emp_accuracy"] == 1.0
    assert s.loc["not_after_placebo", "correct"] == 1    # "tablets" is outside the gold
    assert s.loc["with_x", "token_precision"] == 1.0
    assert s.loc["adults", "token_recall"] == pytest.approx(4 / 6)
    # two functions voting differently on one token conflict
    @tag_lf(label="P")
    def all_out(doc):
        return ["O"] * len(doc.tokens)
    s = lf_summary(apply_lfs(TEXTS, [adults, all_out], progress=False)).set_index("lf")
    assert s.loc["adults", "conflicts"] == pytest.approx(4 / T)
    assert s.loc["all_out", "overlaps"] == pytest.approx(4 / T)


def test_bad_functions_are_named_with_the_document():
    @span_lf(label="P")
    def past_end(doc):
        return [(0, len(doc.text) + 3)]

    @tag_lf(label="P")
    def short(doc):
        return ["O"]

    @span_lf(label="P")
    def broken(doc):
        raise KeyError("x")

    @span_lf()
    def unknown(doc):
        return [(0, 1, "Q")]
    with pytest.raises(CrowdDataError, match=r"'past_end' on document 'a': span \[0, 44\) is "
                                             r"outside"):
        apply_lfs(TEXTS, [past_end], progress=False)
    with pytest.raises(CrowdDataError, match="'short' on document 'a': 1 tags for 7 tokens"):
        apply_lfs(TEXTS, [short], progress=False)
    with pytest.raises(CrowdDataError, match="'broken' on document 'a' raised KeyError"):
        apply_lfs(TEXTS, [broken], progress=False)
    # the span is named: a dictionary's many matches in a long document need the offsets
    with pytest.raises(CrowdDataError, match=r"'unknown' on document 'a', span \[0, 1\): "
                                             r"label 'Q' is not among the labels"):
        apply_lfs(TEXTS, [adults, unknown], progress=False)
    with pytest.raises(CrowdDataError, match=r"label 'P' is not among the labels \['span'\] "
                                             r"\(the labels default to the functions' label="):
        apply_lfs(TEXTS, [with_x], progress=False)
    with pytest.raises(ValueError, match="unique"):
        apply_lfs(TEXTS, [adults, adults], progress=False)


def test_decorators_without_parentheses():
    @span_lf
    def bare(doc):
        return [(0, 2)]

    @tag_lf
    def bare_tags(doc):
        return ["O"] * len(doc.tokens)
    assert (bare.name, bare.returns, bare_tags.name, bare_tags.returns) == \
        ("bare", "spans", "bare_tags", "tags")
    m = apply_lfs(TEXTS, [bare, bare_tags], labels=["P"], progress=False).matrix()
    assert m[0].tolist() == [0, -1] and m[1].tolist() == [-2, -1]


def test_empty_and_whitespace_spans_vote_on_no_token():
    @span_lf(label="P")
    def empty(doc):          # inside "40", between tokens, on a space
        return [(1, 1), (2, 2), (2, 3)]
    assert apply_lfs(TEXTS, [empty], progress=False).matrix().max() == -2


def test_tags_vote_integer_labels():
    @tag_lf()
    def ints(doc):                 # labels 1 and 2: a tag is the label or "B-"/"I-" + label
        return [1, "O", "B-2", ABSTAIN] + [ABSTAIN] * (len(doc.tokens) - 4)
    votes = apply_lfs({"a": TEXTS["a"]}, [ints], labels=[1, 2], progress=False)
    assert votes.matrix()[:4, 0].tolist() == [0, -1, 1, -2]
    assert votes.tags("BIO").tolist() == [1, 0, 3]


def test_a_tag_generator_failing_part_way_is_named_with_the_document():
    @tag_lf(label="P")
    def stops(doc):
        yield "O"
        raise KeyError("boom")
    with pytest.raises(CrowdDataError, match="'stops' on document 'a' raised KeyError"):
        apply_lfs(TEXTS, [stops], progress=False)


def test_summary_scores_every_gold_document_named_and_checks_the_gold():
    @tag_lf(label="P")
    def all_p(doc):
        return ["P"] * len(doc.tokens)
    votes = apply_lfs(TEXTS, [all_p], progress=False)
    # b (3 tokens) named with no spans is all outside: 2 right of a's 7, none of b's 3
    s = lf_summary(votes, {"a": [[0, 9]], "b": []}).iloc[0]
    assert (s["correct"], s["incorrect"]) == (2, 8)
    assert s["token_precision"] == pytest.approx(2 / 10) and s["token_recall"] == 1.0
    s = lf_summary(votes, {"b": []}).iloc[0]      # no gold token inside: recall undefined
    assert (s["correct"], s["incorrect"]) == (0, 3) and np.isnan(s["token_recall"])
    for gold, pattern in (({"b": [[0, 20]]}, r"gold span 0 \(document 'b'\): \[0, 20\) is "
                                              r"outside the text \(13 characters\)"),
                          ({"b": [[-1, 2]]}, r"gold span 0 \(document 'b'\): negative start"),
                          (pd.DataFrame({"doc": ["b"], "start": ["0"], "end": ["2"]}),
                           r"gold span 0 \(document 'b'\): start must be an integer"),
                          (pd.DataFrame({"doc": ["b"], "begin": [0], "end": [2]}),
                           r"gold has no column 'start'"),
                          ({"b": [0, 2]}, r"gold document 'b': spans must be a list of \[start, "
                                          r"end\[, label\]\], got \[0, 2\]"),
                          ({"b": [{"start": 0, "end": 2}]}, r"gold document 'b': spans must be")):
        with pytest.raises(CrowdDataError, match=pattern):
            lf_summary(votes, gold)
    with pytest.raises(TypeError, match="gold must be a frame"):
        lf_summary(votes, [("b", 0, 2)])


def _truth_lfs(truth, seq, outside_abstains=True):
    """Functions that see the simulated truth: ``precise`` votes inside on half the true
    span tokens (abstains elsewhere); ``outside`` votes O on 90 % of the outside tokens and
    abstains elsewhere (or, with ``outside_abstains=False``, votes O there too)."""
    ptr = seq.tokens.doc_ptr

    def truth_of(doc):
        d = int(doc.id)
        return truth[ptr[d]:ptr[d + 1]].astype(bool), np.random.default_rng([7, d])

    @span_lf(name="precise")
    def precise(doc):
        t, rng = truth_of(doc)
        on = (t & (rng.random(len(t)) < 0.5)) | (~t & (rng.random(len(t)) < 0.01))
        return [tuple(doc.offsets[i]) for i in np.flatnonzero(on)]

    @tag_lf(name="outside")
    def outside(doc):
        t, rng = truth_of(doc)
        rng.random(2 * len(t))
        say = ~t & (rng.random(len(t)) < 0.9)
        return ["O" if s or not outside_abstains else ABSTAIN for s in say]
    return [precise, outside]


def test_abstain_is_an_outcome_not_an_outside_vote():
    seq, truth = simulated_spans(n_docs=80, per_doc=2, seed=4)
    texts = dict(zip(seq.doc_ids, seq.texts))
    votes = apply_lfs(texts, _truth_lfs(truth, seq), labels=["span"], progress=False)
    model = AbstainDawidSkene().fit(votes)
    f_abstain = token_prf(model.predict() > 0, truth > 0)[2]
    as_o = apply_lfs(texts, _truth_lfs(truth, seq, outside_abstains=False), labels=["span"],
                     progress=False)
    f_as_o = token_prf(AbstainDawidSkene().fit(as_o).predict() > 0, truth > 0)[2]
    assert f_abstain > f_as_o + 0.05
    rates = pd.DataFrame(model.abstain_rates_, index=model.source_ids_, columns=["O", "I"])
    assert rates.loc["outside", "I"] > 0.9 > rates.loc["outside", "O"]
    assert rates.loc["precise", "O"] > rates.loc["precise", "I"]


def test_functions_and_a_crowd_together():
    seq, truth = simulated_spans(n_docs=80, per_doc=2, seed=4)
    votes = apply_lfs(seq, _truth_lfs(truth, seq), progress=False)
    crowd = TokenDawidSkene().fit(seq)
    mixed = AbstainDawidSkene().fit(votes)
    assert mixed.source_ids_.tolist()[-2:] == ["precise", "outside"]
    assert mixed.confusion_matrices_.shape == (len(seq.annotator_ids), 2, 2)
    f_crowd = token_prf(crowd.predict() > 0, truth > 0)[2]
    f_mixed = token_prf(mixed.predict() > 0, truth > 0)[2]
    assert f_mixed > f_crowd
    # humans only: token Dawid-Skene, up to the pseudo-count of the unused abstain column
    np.testing.assert_allclose(AbstainDawidSkene().fit(seq).predict_proba(),
                               crowd.predict_proba(), atol=5e-3)
    spans = mixed.predict_spans()
    assert {"doc", "start", "end", "label", "score"} <= set(spans.columns)


def test_with_sequences_the_labels_and_annotator_names_are_theirs():
    from crowd_keras.sequences.annotations import SequenceAnnotations
    seq = SequenceAnnotations.from_spans(TEXTS, pd.DataFrame(
        {"doc": ["a"], "annotator": ["adults"], "start": [0], "end": [9], "label": ["P"]}))
    assert apply_lfs(seq, [with_x], labels=["P"], progress=False).n_lfs == 1
    with pytest.raises(ValueError, match=r"labels \['Q'\] differ from the sequences' labels "
                                         r"\['P'\]"):
        apply_lfs(seq, [with_x], labels=["Q"], progress=False)
    with pytest.raises(ValueError, match="tokenizer is for texts"):
        apply_lfs(seq, [with_x], tokenizer=str.split, progress=False)
    with pytest.raises(ValueError, match="function 'adults' has the name of an annotator"):
        apply_lfs(seq, [adults], progress=False)


def test_a_function_returning_one_span_instead_of_a_list_is_told_so():
    # re.search(...).span() returned as is: "span 0 must be (start, end[, label]), got int 3"
    # named the offsets as spans and did not say what to return
    @span_lf(label="P")
    def first_adults(doc):
        m = re.search(r"adults", doc.text)
        return m.span() if m else None
    with pytest.raises(CrowdDataError, match=r"'first_adults' on document 'a': span 0 must be "
                                             r"\(start, end\[, label\]\), got int 3; it returned "
                                             r"one span \(3, 9\): return a list of spans, "
                                             r"\[\(3, 9\)\]"):
        apply_lfs(TEXTS, [first_adults], progress=False)
    @span_lf(label="P")
    def words(doc):
        return doc.tokens[:2]        # strings: no hint about one span
    with pytest.raises(CrowdDataError, match=r"span 0 must be \(start, end\[, label\]\), got "
                                             r"str '40'$"):
        apply_lfs(TEXTS, [words], progress=False)


def test_the_default_text_prior_model_fits_functions_and_a_crowd_together():
    from crowd_keras.sequences.registry import get_sequence_model
    from crowd_keras.sequences.text_prior import WindowPriorDawidSkene
    seq, truth = simulated_spans(n_docs=80, per_doc=2, seed=4)
    lfs = _truth_lfs(truth, seq)
    votes = apply_lfs(seq, lfs, progress=False)
    crowd = WindowPriorDawidSkene().fit(seq)
    mixed = get_sequence_model().fit(votes)
    assert isinstance(mixed, WindowPriorDawidSkene)
    assert isinstance(mixed.model_, AbstainDawidSkene) and mixed.votes_ is votes
    assert crowd.votes_ is None and isinstance(crowd.model_, TokenDawidSkene)
    assert mixed.model_.source_ids_.tolist()[-2:] == ["precise", "outside"]
    f_crowd = token_prf(crowd.predict() > 0, truth > 0)[2]
    f_mixed = token_prf(mixed.predict() > 0, truth > 0)[2]
    assert f_mixed > f_crowd
    assert np.isfinite(mixed.token_prior_).all()
    # the functions alone (no human anywhere): the text model learns from the tokens the
    # functions ran on, so every token gets a prior
    texts = dict(zip(seq.doc_ids, seq.texts))
    alone = WindowPriorDawidSkene().fit(apply_lfs(texts, lfs, labels=["span"], progress=False))
    assert np.isfinite(alone.token_prior_).all()
    assert token_prf(alone.predict() > 0, truth > 0)[2] > 0.5
    with pytest.raises(ValueError, match="AbstainDawidSkene, which has no temperature"):
        WindowPriorDawidSkene(temperature=0.5).fit(votes)
    # the fitted documents score as fitted; other documents need their own function votes
    np.testing.assert_array_equal(mixed.predict(seq), mixed.predict())
    np.testing.assert_array_equal(mixed.predict(seq.subset(seq.doc_ids)), mixed.predict())
    with pytest.raises(CrowdDataError, match="fit it on their TokenVotes"):
        mixed.predict(seq.subset(seq.doc_ids[:3]))
