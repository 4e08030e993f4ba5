"""Span labeling functions returning what users naturally return (re.Match, spaCy Span,
generators), tag readers at whitespace tokens, load_pico on empty files, and odd but valid
text along labeling functions → summary → token label model → spans (one test per defect)."""
import re

import numpy as np
import pytest

from crowd_keras import CrowdDataError
from crowd_keras.sequences.labeling_functions import apply_lfs, lf_summary, span_lf

TEXT = {"a": "40 adults with asthma got placebo tablets", "b": "12 children"}
PEOPLE = re.compile(r"\d+ (?:adults|children)")


def _votes(lfs, texts=TEXT, labels=("P",)):
    return apply_lfs(texts, lfs, labels=list(labels), progress=False)


def _same_votes(x, y):
    return all(np.array_equal(getattr(x, f), getattr(y, f))
               for f in ("token", "lf", "label", "begin"))


@pytest.mark.parametrize("form", ["finditer", "generator", "list", "search"])
def test_span_lf_takes_regex_matches_as_their_character_offsets(form):
    returns = {"finditer": lambda doc: PEOPLE.finditer(doc.text),
               "generator": lambda doc: (m for m in PEOPLE.finditer(doc.text)),
               "list": lambda doc: list(PEOPLE.finditer(doc.text)),
               "search": lambda doc: PEOPLE.search(doc.text)}[form]
    got = _votes([span_lf(name="people", label="P")(returns)])
    want = _votes([span_lf(name="people", label="P")(
        lambda doc: [m.span() for m in PEOPLE.finditer(doc.text)])])
    assert len(want.token) == 4 and _same_votes(got, want)


def test_span_lf_takes_spacy_spans_with_their_labels_unless_the_function_has_one():
    spacy = pytest.importorskip("spacy", reason="spaCy Span returns need spaCy")
    nlp = spacy.blank("en")

    def ents(doc):
        sdoc = nlp(doc.text)
        return iter([sdoc.char_span(m.start(), m.end(), label="P" if doc.id == "a" else "Q")
                     for m in PEOPLE.finditer(doc.text)])
    by_label = _votes([span_lf(name="ents")(ents)], labels=("Q", "P"))
    assert by_label.label.tolist() == [1, 1, 0, 0]          # P on a, Q on b, by label_
    fixed = _votes([span_lf(name="ents", label="Q")(ents)], labels=("Q", "P"))
    assert fixed.label.tolist() == [0, 0, 0, 0]             # the function's label wins
    one = _votes([span_lf(name="one", label="P")(lambda doc: nlp(doc.text)[0:2])])
    assert one.token.tolist() == [0, 1, 7, 8]               # one Span alone: one span
    unlabelled = _votes([span_lf(name="chunk")(lambda doc: [nlp(doc.text)[0:2]])],
                        labels=("Q", "P"))
    assert unlabelled.label.tolist() == [0, 0, 0, 0]        # label_ '': the first label


def test_a_span_of_an_unknown_label_or_a_bad_item_names_function_document_and_value():
    spacy = pytest.importorskip("spacy", reason="spaCy Span returns need spaCy")
    nlp = spacy.blank("en")
    gpe = span_lf(name="gpe")(lambda doc: [nlp(doc.text).char_span(0, 2, label="GPE")])
    with pytest.raises(CrowdDataError, match=r"'gpe' on document 'a'.*'GPE'"):
        _votes([gpe])
    tokens = span_lf(name="toks", label="P")(lambda doc: list(nlp(doc.text)))
    with pytest.raises(CrowdDataError, match=r"'toks' on document 'a': span 0 must be .*"
                                             r"Token 40"):
        _votes([tokens])
    with pytest.raises(CrowdDataError, match=r"'num' on document 'a' returned int 3"):
        _votes([span_lf(name="num", label="P")(lambda doc: 3)])


def _fake_pico(folder):
    """A tiny copy of PICO's layout: one abstract, one worker, gold and authors."""
    import json
    pico = folder / "pico"
    pico.mkdir()
    rows = {"docs.jsonl": [{"docid": "1", "text": "Twelve adults with asthma."}],
            "crowd_acl17-test.jsonl": [{"docid": "1", "spans": {"w1": [[0, 13]]}}],
            "gold_acl17_even.jsonl": [{"docid": "1", "spans": [[0, 13]]}],
            "authors_aggregates_acl17.jsonl": [{"docid": "1", "HMMCrowd": [], "DawidSkene": [],
                                                "MajorityVote": [[0, 13]]}]}
    for name, recs in rows.items():
        (pico / name).write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return pico


@pytest.mark.parametrize("name", ["docs.jsonl", "crowd_acl17-test.jsonl",
                                  "gold_acl17_even.jsonl", "authors_aggregates_acl17.jsonl"])
def test_load_pico_refuses_an_empty_file_naming_it(tmp_path, name):
    from crowd_keras.datasets import load_pico
    pico = _fake_pico(tmp_path)
    assert load_pico(pico, splits=("acl17-test",), download=False).sequences.n_docs == 1
    (pico / name).write_text("\n", encoding="utf-8")
    with pytest.raises(CrowdDataError, match=rf"{re.escape(str(pico / name))} holds no record"):
        load_pico(pico, splits=("acl17-test",), download=False)


def test_load_pico_refuses_a_file_cut_inside_a_character_naming_it(tmp_path):
    from crowd_keras.datasets import load_pico
    pico = _fake_pico(tmp_path)
    docs = pico / "docs.jsonl"
    docs.write_bytes(docs.read_bytes() + '{"docid": "2", "text": "café'.encode()[:-1])
    with pytest.raises(CrowdDataError, match=rf"{re.escape(str(docs))}, line 2: not UTF-8 "
                                             r"text, perhaps a truncated file"):
        load_pico(pico, splits=("acl17-test",), download=False)


# "the patient John Smith \n met Dr Ann" with a tokenizer that keeps whitespace tokens
WS_TEXT = "John Smith \n met  Ann"
WS_OFFSETS = [[0, 4], [5, 10], [10, 11], [11, 12], [13, 16], [16, 17], [18, 21]]   # " ", "\n", " "


def test_spans_read_from_tags_do_not_start_or_end_on_whitespace_tokens():
    from crowd_keras.sequences.formats import token_tags_to_spans
    tags = ["B-PER", "I-PER", "I-PER", "I-PER", "O", "B-PER", "I-PER"]
    _, spans = token_tags_to_spans([{"doc": "d", "text": WS_TEXT, "offsets": WS_OFFSETS,
                                     "tags": tags}])
    assert [WS_TEXT[s:e] for s, e in zip(spans["start"], spans["end"])] == ["John Smith", "Ann"]
    # a span of whitespace only is left as it is (from_spans drops and counts it)
    _, spans = token_tags_to_spans([{"doc": "d", "text": WS_TEXT, "offsets": WS_OFFSETS,
                                     "tags": ["O", "O", "B-PER", "I-PER", "O", "O", "O"]}])
    assert spans[["start", "end"]].values.tolist() == [[10, 12]]


def test_spacy_whitespace_tokens_at_span_edges_are_trimmed_as_spacy_entities_are():
    spacy = pytest.importorskip("spacy", reason="spaCy's whitespace tokens need spaCy")
    from crowd_keras.sequences.formats import token_tags_to_spans
    sdoc = spacy.blank("en")("met  Ann Lee  today")      # tokens: met, " ", Ann, Lee, " ", today
    assert [t.text for t in sdoc] == ["met", " ", "Ann", "Lee", " ", "today"]
    row = {"doc": 0, "text": sdoc.text, "offsets": [[t.idx, t.idx + len(t)] for t in sdoc],
           "tags": ["O", "B-PER", "I-PER", "I-PER", "I-PER", "O"]}
    _, spans = token_tags_to_spans([row])
    ent = sdoc.char_span(int(spans["start"][0]), int(spans["end"][0]), label="PER")
    assert ent is not None and ent.text == "Ann Lee"


def test_predicted_spans_do_not_start_or_end_on_whitespace_tokens():
    import pandas as pd
    from crowd_keras.sequences.annotations import SequenceAnnotations
    seq = SequenceAnnotations.from_spans(
        {"d": WS_TEXT}, pd.DataFrame({"doc": ["d"], "annotator": ["a"], "start": [0],
                                      "end": [21], "label": ["PER"]}),
        tokenizer=lambda text: WS_OFFSETS)                   # " ", "\n", " " are tokens
    tags = np.array([1, 1, 1, 1, 0, 1, 1])                  # I on John Smith " " "\n"; " " Ann
    spans = seq.decode(tags, scores=np.arange(7.0))
    assert spans["text"].tolist() == ["John Smith", "Ann"]
    assert spans["score"].tolist() == [0.5, 6.0]             # the mean over its own tokens
    # a run of whitespace alone stays a span
    assert seq.decode(np.array([0, 0, 1, 1, 0, 0, 0]))["text"].tolist() == [" \n"]


def test_a_match_on_the_encoded_text_is_refused_its_offsets_count_bytes():
    # b"Zo\xc3\xab met Bob": Bob at bytes 8..11 but characters 7..10; was taken silently
    lf = span_lf(name="bytes", label="P")(
        lambda doc: re.finditer(rb"Bob", doc.text.encode("utf-8")))
    with pytest.raises(CrowdDataError, match=r"'bytes' on document 'z': span 0 is a match on "
                                             r"bytes .*count bytes, not the text's characters"):
        _votes([lf], texts={"z": "Zoë met Bob"})


def test_gold_spans_may_be_the_objects_a_span_function_returns():
    # {doc: nlp(text).ents} or matches as gold was "spans must be a list of [start, end]"
    spacy = pytest.importorskip("spacy", reason="spaCy Span gold needs spaCy")
    nlp = spacy.blank("en")
    lf = span_lf(name="people", label="P")(lambda doc: PEOPLE.finditer(doc.text))
    votes = _votes([lf], labels=("P", "Q"))
    as_pairs = lf_summary(votes, gold={"a": [(0, 9, "P")], "b": [(0, 11, "Q")]})
    sa, sb = nlp(TEXT["a"]), nlp(TEXT["b"])
    sa.ents = [sa.char_span(0, 9, label="P")]
    sb.ents = [sb.char_span(0, 11, label="Q")]
    as_spacy = lf_summary(votes, gold={"a": sa.ents, "b": sb.ents})
    assert as_pairs[["correct", "incorrect"]].values.tolist() == [[2, 2]]
    assert as_spacy.equals(as_pairs)
    unlabelled = lf_summary(votes, gold={"a": [(0, 9)], "b": [(0, 11, "Q")]})
    as_match = lf_summary(votes, gold={"a": [PEOPLE.search(TEXT["a"])], "b": [(0, 11, "Q")]})
    assert as_match.equals(unlabelled)


def test_a_match_or_span_found_in_another_string_is_refused_naming_the_function():
    # a match on one sentence counts the sentence's characters: "adults" of "Then 40 adults"
    # was voted at 5..14 of the document, silently
    text = {"s": "Nobody yet. Then 40 adults came."}
    per_sentence = span_lf(name="per_sentence", label="P")(
        lambda doc: [m for sent in doc.text.split(". ") for m in PEOPLE.finditer(sent)])
    with pytest.raises(CrowdDataError, match=r"'per_sentence' on document 's': span 0 is a "
                                             r"re.Match .* string of 20 characters, not in the "
                                             r"document's text \(32\)"):
        _votes([per_sentence], texts=text)
    # a string of the text's length keeps its offsets: doc.text.lower() is accepted
    lowered = span_lf(name="lowered", label="P")(
        lambda doc: re.finditer(r"\d+ adults", doc.text.lower()))
    same = span_lf(name="lowered", label="P")(lambda doc: re.finditer(r"\d+ adults", doc.text))
    assert _same_votes(_votes([lowered], texts=text), _votes([same], texts=text))
    # gold spans too
    votes = _votes([same], texts=text)
    with pytest.raises(CrowdDataError, match=r"gold span 0 \(document 's'\): a re.Match or "
                                             r"spaCy Span found in a string of 20 characters"):
        lf_summary(votes, gold={"s": [PEOPLE.search("Then 40 adults came.")]})


def test_a_spacy_span_of_another_doc_is_refused():
    spacy = pytest.importorskip("spacy", reason="spaCy Span returns need spaCy")
    nlp = spacy.blank("en")
    text = {"s": "Nobody yet. Then 40 adults came."}
    lf = span_lf(name="sentence_nlp", label="P")(
        lambda doc: [nlp(doc.text.split(". ")[1])[1:3]])
    with pytest.raises(CrowdDataError, match=r"'sentence_nlp' on document 's': span 0 is a "
                                             r"spaCy Span \(40 adults\) found in a string of 20"):
        _votes([lf], texts=text)
    ok = span_lf(name="sentence_nlp", label="P")(lambda doc: [nlp(doc.text)[4:6]])
    assert _votes([ok], texts=text).token.tolist() == [3, 4]
    with pytest.raises(CrowdDataError, match=r"gold span 0 \(document 's'\): a re.Match or "
                                             r"spaCy Span found in a string of 20"):
        lf_summary(_votes([ok], texts=text), gold={"s": [nlp("Then 40 adults came.")[1:3]]})
