"""Tokens, spans ↔ tags and the SequenceAnnotations container (crowd_keras.sequences)."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowd_keras import CrowdDataError
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.spans import tag_names, tags_to_spans
from crowd_keras.sequences.tokens import regex_tokenizer, token_strings, tokenize


def spans(rows, cols=("doc", "annotator", "start", "end")):
    return pd.DataFrame(rows, columns=list(cols))


# ---------------------------------------------------------------------------- tokens
def test_whitespace_tokens_are_runs_of_non_space_including_unicode_spaces():
    texts = ["ab cd\u00a0ef\u2009g\t\nh ", "", "   ", "x"]
    tok = tokenize(texts)
    assert tok.lengths.tolist() == [5, 0, 0, 1]
    assert list(zip(tok.start[:5], tok.end[:5])) == [(0, 2), (3, 5), (6, 8), (9, 10), (12, 13)]
    assert token_strings(texts, tok).tolist() == ["ab", "cd", "ef", "g", "h", "x"]
    assert tok.doc.tolist() == [0, 0, 0, 0, 0, 3]
    assert token_strings(["Ab 12"], tokenize(["Ab 12"]), normalize=str.lower).tolist() == \
        ["ab", "12"]


def test_user_tokenizers_are_called_per_text_and_checked():
    tok = tokenize(["(n=12) men"], regex_tokenizer())
    assert token_strings(["(n=12) men"], tok).tolist() == ["(", "n", "=", "12", ")", "men"]
    tok = tokenize(["ab cd"], lambda text: [(0, 1), (1, 2), (3, 5)])
    assert tok.n_tokens == 3
    for bad, msg in [([(0, 0)], "empty"), ([(0, 9)], "past the end"), ([(-1, 1)], "before"),
                     ([(0, 2), (1, 3)], "overlaps")]:
        with pytest.raises(CrowdDataError, match=f"document 1, token .*{msg}"):
            tokenize(["ok", "ab cd"], lambda text, bad=bad: [(0, 2)] if text == "ok" else bad)
    with pytest.raises(CrowdDataError, match="document 1: text must be a string"):
        tokenize(["a", None])


# ---------------------------------------------------------------------------- spans → tags
def test_spans_to_tags_io_and_bio_with_mid_token_edges():
    texts = ["ab cd ef gh", "xx yy"]
    marks = {0: {"w0": [[0, 4], [7, 11]], "w1": [[3, 5], [6, 8]]}, 1: {"w0": [[0, 2]], "w2": []}}
    io = SequenceAnnotations.from_dict(texts, marks)
    bio = io.with_scheme("BIO")
    assert io.obs_tag.tolist() == [1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0]
    assert bio.obs_tag.tolist() == [1, 2, 1, 2, 0, 1, 1, 0, 1, 0, 0, 0]
    s = io.summary
    assert (s.start_mid_token, s.end_mid_token, s.annotations_without_spans) == (1, 1, 1)
    assert s.overlapping_others_differently == 4     # w0 and w1 in document 0
    assert list(bio.tags) == tag_names(["span"], "BIO") == ["O", "B-span", "I-span"]


def test_saw_and_marked_nothing_is_all_o_and_not_seen_is_missing():
    seq = SequenceAnnotations.from_spans(["a b", "c d"], spans([(0, "u", 0, 1)]),
                                         seen=[(0, "v"), (1, "u")])
    dense = seq.annotations.to_dense()        # tokens × annotators (u, v)
    assert dense.tolist() == [[1, 0], [0, 0], [0, -1], [0, -1]]
    assert seq.summary.annotations == 3 and seq.summary.annotations_without_spans == 2


def test_every_odd_span_is_handled_and_counted():
    text = "alpha beta  gamma delta"
    rows = [(0, "a", 2, 8),          # starts and ends mid-token: alpha beta
            (0, "a", 6, 14),         # overlaps a's own span (merged), ends mid-token: beta gamma
            (0, "b", 18, 99),        # past the end: clipped to delta
            (0, "b", 3, 3),          # empty: dropped
            (0, "c", 10, 12),        # whitespace only: dropped
            (0, "c", 12, 17)]        # gamma, exact
    seq = SequenceAnnotations.from_spans([text], spans(rows))
    s = seq.summary.to_dict()
    assert s["spans"] == 6 and s["spans_used"] == 4
    assert (s["past_text_clipped"], s["empty_dropped"], s["whitespace_only_dropped"]) == (1, 1, 1)
    assert (s["start_mid_token"], s["end_mid_token"], s["overlapping_own"]) == (1, 2, 2)
    assert seq.obs_tag.tolist() == [1, 1, 1, 0,   0, 0, 0, 1,   0, 0, 1, 0]
    assert seq.spans_frame()["used"].tolist() == [True, True, True, False, False, True]
    assert "past text clipped: 1" in str(seq.summary)


def test_two_labels_of_one_annotator_on_a_token_take_the_lower_label():
    frame = spans([(0, "a", 0, 5, "PER"), (0, "a", 2, 9, "ORG"), (0, "b", 6, 9, "ORG")],
                  ("doc", "annotator", "start", "end", "label"))
    seq = SequenceAnnotations.from_spans(["ab cd ef"], frame, scheme="BIO")
    assert list(seq.labels) == ["ORG", "PER"]
    # a: ab PER, cd both (ORG wins: code 0), ef ORG; BIO stays valid: B-PER B-ORG I-ORG
    assert seq.tags[seq.obs_tag[:3]].tolist() == ["B-PER", "B-ORG", "I-ORG"]
    assert seq.summary.tokens_two_labels_own == 1


def test_bad_span_input_gets_located_errors():
    ok = dict(doc=0, annotator="a", start=0, end=2, label="PER")
    cases = [({"start": -1}, "span row 1: negative start"),
             ({"start": 3, "end": 1}, "span row 1: end before start"),
             ({"start": 0.5}, "span row 1: start must be an integer"),
             ({"end": None}, "span row 1: end must be an integer"),
             ({"doc": 7}, "span row 1: document 7 is not among"),
             ({"label": "ORG"}, "span row 1: label 'ORG' is not among"),
             ({"annotator": None}, "span row 1: missing annotator")]
    for change, msg in cases:
        frame = pd.DataFrame([ok, {**ok, **change}])
        with pytest.raises(CrowdDataError, match=msg):
            SequenceAnnotations.from_spans(["ab cd"], frame, labels=["PER"])
    with pytest.raises(CrowdDataError, match="seen row 0: document 'z'"):
        SequenceAnnotations.from_spans(["ab"], spans([(0, "a", 0, 1)]), seen=[("z", "b")])



def test_a_seen_rows_annotator_is_named_as_a_seen_row_by_its_index():
    # the seen row's position, or "span row" for a seen pair with annotator_ids, named another
    # row than the user's (their seen frame's index names its rows, as its documents' errors do)
    frame = spans([("d", "a", 0, 1)])
    seen = pd.DataFrame({"doc": ["d", "d"], "annotator": ["b", None]}, index=[10, 11])
    with pytest.raises(CrowdDataError, match=r"^seen row 11: missing annotator id"):
        SequenceAnnotations.from_spans({"d": "ab"}, frame, seen=seen)
    seen = pd.DataFrame({"doc": ["d", "d"], "annotator": ["b", "z"]}, index=[10, 11])
    with pytest.raises(CrowdDataError, match=r"^seen row 11: annotator 'z' is not among"):
        SequenceAnnotations.from_spans({"d": "ab"}, frame, seen=seen, annotator_ids=["a", "b"])
    with pytest.raises(CrowdDataError, match=r"^span row 0: annotator 'a' is not among"):
        SequenceAnnotations.from_spans({"d": "ab"}, frame, seen=seen, annotator_ids=["b", "z"])

def test_text_mismatch_is_counted_or_an_error():
    frame = pd.DataFrame({"doc": [0, 0, 0], "annotator": ["a", "b", "c"], "start": [0, 3, 3],
                          "end": [2, 5, 9], "text": ["ab", "xx", "cd"]})
    seq = SequenceAnnotations.from_spans(["ab cd"], frame)
    assert seq.summary.text_mismatch == 1          # "xx" differs
    assert seq.summary.past_text_clipped == 1      # "cd" runs past the text: clipped, counted
    assert seq.summary.spans_used == 3
    with pytest.raises(CrowdDataError,
                       match=r"span row 1: text 'xx' differs .* 3:5 of document 0: 'cd'"):
        SequenceAnnotations.from_spans(["ab cd"], frame, text_mismatch="error")
    # the error names the document (a frame's row number alone did not)
    with pytest.raises(CrowdDataError, match=r"span row 1: text 'xx' differs from the "
                                             r"characters 3:5 of document 'd2': 'cd'"):
        SequenceAnnotations.from_spans({"d1": "x", "d2": "ab cd"}, frame.assign(doc="d2"),
                                       text_mismatch="error")


def test_one_annotation_per_document_and_annotator():
    seq = SequenceAnnotations.from_spans(["ab cd"], spans([(0, "a", 0, 2), (0, "a", 3, 5)]))
    assert len(seq.assign_doc) == 1 and seq.obs_tag.tolist() == [1, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=12), min_size=1, max_size=5),
       st.sampled_from(["IO", "BIO"]))
def test_token_aligned_spans_round_trip(marks, scheme):
    """spans → tags → decode gives the spans back (IO: runs of marked tokens are the spans)."""
    texts = [" ".join(["w"] * len(m)) for m in marks]
    rows = []
    for d, m in enumerate(marks):
        run = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(m, int), [0]])))
        for s, e in zip(run[::2], run[1::2]):
            rows.append((d, "a", 2 * s, 2 * e - 1))
    frame = spans(rows) if rows else spans([], ("doc", "annotator", "start", "end"))
    seen = [(d, "a") for d in range(len(marks))]
    seq = SequenceAnnotations.from_spans(texts, frame, seen=seen, scheme=scheme,
                                         labels=["span"])
    tags = np.zeros(seq.n_tokens, np.int64)
    tags[seq.obs_token] = seq.obs_tag
    back = seq.decode(tags)
    cols = ["doc", "start", "end"]
    assert back[cols].values.tolist() == frame[cols].values.tolist()


def test_bio_decoding_starts_a_span_at_b_and_at_a_stray_i():
    first = np.array([1, 0, 0, 0, 0, 0, 1, 0], bool)
    tags = np.array([1, 2, 1, 0, 2, 2, 2, 0])      # B I B O I I | I O
    begin, last, label = tags_to_spans(tags, first, "BIO")
    assert begin.tolist() == [0, 2, 4, 6] and last.tolist() == [1, 2, 5, 6]
    assert label.tolist() == [0, 0, 0, 0]


def test_subset_and_drop_keep_the_rest():
    texts = ["a b", "c d", "e f"]
    seq = SequenceAnnotations.from_spans(texts, spans([(0, "u", 0, 1), (1, "v", 2, 3),
                                                       (2, "u", 0, 3)]))
    sub = seq.subset([2, 0])
    assert sub.doc_ids.tolist() == [2, 0] and sub.texts == ["e f", "a b"]
    assert sub.obs_tag.tolist() == [1, 1, 1, 0]
    dropped = seq.drop_annotations(np.array([False, True, False]))
    assert len(dropped.assign_doc) == 2 and dropped.summary.spans == 2


def test_tokens_and_a_tokenizer_together_are_refused_not_one_ignored():
    # tokens= won and the tokenizer was ignored silently: "a-b" stayed one token
    made = tokenize(["a-b c"])
    with pytest.raises(ValueError, match="give tokens .* or tokenizer .*, not both"):
        SequenceAnnotations.from_spans(["a-b c"], spans([(0, "u", 0, 1)]), tokens=made,
                                       tokenizer=regex_tokenizer())
    seq = SequenceAnnotations.from_spans(["a-b c"], spans([(0, "u", 0, 1)]), tokens=made)
    assert seq.n_tokens == 2

def test_drop_annotations_refuses_positions_that_would_be_read_as_a_mask():
    # [0, 2, 1] (annotations 0, 1 and 2 by position, or codes) was cast to the mask
    # [False, True, True]: two annotations dropped, not the ones meant, silently
    seq = SequenceAnnotations.from_spans(["a b", "c d", "e f"], spans(
        [(0, "u", 0, 1), (1, "v", 2, 3), (2, "u", 0, 3)]))
    for drop in (np.array([0, 2, 1]), [1, 0, 0], np.array([np.nan, 0.0, 0.0])):
        with pytest.raises(ValueError, match=r"drop_annotations takes a boolean mask of "
                                             r"shape \(3,\)"):
            seq.drop_annotations(drop)
    with pytest.raises(ValueError, match=r"shape \(3,\) over the annotations, got bool "
                                         r"values of shape \(2,\)"):
        seq.drop_annotations([True, False])
    assert len(seq.drop_annotations([True, False, False]).assign_doc) == 2


def test_an_offset_near_2_53_in_one_document_leaves_the_others_spans_alone():
    """A span past its text by ~2**53 (accepted, clipped and counted) overflowed the int64
    (document, offset) keys of every span: with 1100 documents 149 of the other
    documents' spans were read as covering no token ("whitespace only dropped")."""
    texts = {i: "alpha beta gamma" for i in range(1100)}
    rows = [(i, "u", 6, 10, "X") for i in range(1100)]
    far = rows + [(5, "u", 2 ** 53 - 5, 2 ** 53, "X")]
    cols = ["doc", "annotator", "start", "end", "label"]
    seq = SequenceAnnotations.from_spans(texts, pd.DataFrame(far, columns=cols))
    plain = SequenceAnnotations.from_spans(texts, pd.DataFrame(rows, columns=cols))
    assert seq.summary.spans_used == 1100 and seq.summary.whitespace_only_dropped == 0
    assert (seq.summary.past_text_clipped, seq.summary.empty_dropped) == (1, 1)
    assert np.array_equal(seq.annotations.to_dense(), plain.annotations.to_dense())
    a, b = seq.token_ranges([1099, 5], [6, 2 ** 53 - 5], [10, 2 ** 53])
    assert a.tolist() == [3298, 18] and b.tolist() == [3299, 18]
