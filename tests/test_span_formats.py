"""Span formats in and out (crowd_keras.sequences.formats): token tags, JSON lines, spaCy."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import CrowdDataError
from crowd_keras.sequences.formats import (read_spans_jsonl, spacy_to_spans, spans_to_spacy,
                                           spans_to_token_tags, token_tags_to_spans,
                                           write_spans_jsonl)

from conftest import require_data

TEXTS = {"d1": "Forty adults with asthma were enrolled .", "d2": "No spans here", "d3": "a b c d"}


def frame(rows, cols=("doc", "start", "end", "label")):
    return pd.DataFrame(rows, columns=list(cols))


def canon(df):
    cols = [c for c in ("doc", "annotator", "start", "end", "label") if c in df.columns]
    return sorted(map(tuple, df[cols].astype(str).to_numpy().tolist()))


def random_spans(rng, texts, n, nested=True, with_annotator=False):
    """Word-aligned random spans; with ``nested`` some share words (overlap or nest)."""
    rows = []
    for d, text in texts.items():
        starts = [0] + [i + 1 for i, c in enumerate(text) if c == " "]
        ends = [i for i, c in enumerate(text) if c == " "] + [len(text)]
        used = np.zeros(len(starts), bool)
        for _ in range(n):
            i = int(rng.integers(len(starts)))
            j = min(len(starts), i + int(rng.integers(1, 4)))
            if not nested and used[i:j].any():
                continue
            used[i:j] = True
            row = [d, starts[i], ends[j - 1], str(rng.choice(["P", "I"]))]
            if with_annotator:
                row.append(f"w{int(rng.integers(2))}")
            rows.append(row)
    cols = ["doc", "start", "end", "label"] + (["annotator"] if with_annotator else [])
    return frame(rows, cols).drop_duplicates(ignore_index=True)


@pytest.mark.parametrize("scheme", ["IO", "BIO", "IOB2", "BILOU", "BIOES"])
def test_token_tags_round_trip_on_generated_spans(scheme):
    rng = np.random.default_rng(1)
    texts = {f"t{i}": " ".join(f"w{k}" for k in range(int(rng.integers(3, 15))))
             for i in range(30)}
    # IO cannot tell two touching spans of one label apart: one span per text there
    spans = random_spans(rng, texts, 1 if scheme == "IO" else 3, nested=False)
    rows = spans_to_token_tags(texts, spans, scheme=scheme)
    assert [r["doc"] for r in rows] == list(texts)
    back_texts, back = token_tags_to_spans(rows, scheme=scheme)
    assert back_texts == texts
    assert canon(back) == canon(spans)


def test_token_tags_by_annotator_and_the_tag_strings():
    spans = frame([("d1", 0, 12, "P", "a"), ("d1", 18, 24, "C", "a"), ("d3", 2, 3, "P", "b")],
                  ("doc", "start", "end", "label", "annotator"))
    rows = spans_to_token_tags(TEXTS, spans, scheme="BILOU")
    # d2, which nobody saw, keeps its text in a row without an annotator
    assert [(r["doc"], r["annotator"]) for r in rows] == [("d1", "a"), ("d2", None),
                                                          ("d3", "b")]
    assert rows[0]["tags"] == ["B-P", "L-P", "O", "U-C", "O", "O", "O"]
    assert rows[0]["offsets"][:2] == [[0, 5], [6, 12]]
    assert rows[2]["tags"] == ["O", "U-P", "O", "O"]
    texts, back = token_tags_to_spans(rows, scheme="BILOU")
    assert canon(back) == canon(spans) and texts == TEXTS


def test_token_tag_rows_of_numpy_ids_are_json_rows():
    # a SequenceAnnotations' ids are numpy scalars; a row is saved with json.dumps
    import json
    texts = {np.int64(3): "x y", np.int64(5): "z"}
    spans = frame([(np.int64(3), 0, 1, "X", np.int64(7))],
                  ("doc", "start", "end", "label", "annotator"))
    rows = spans_to_token_tags(texts, spans, seen=[(np.int64(5), np.int64(8))])
    assert [json.loads(json.dumps(r)) for r in rows] == [
        {"doc": 3, "annotator": 7, "text": "x y", "tokens": ["x", "y"],
         "offsets": [[0, 1], [2, 3]], "tags": ["B-X", "O"]},
        {"doc": 5, "annotator": 8, "text": "z", "tokens": ["z"], "offsets": [[0, 1]],
         "tags": ["O"]}]


def test_token_tags_refuse_spans_off_token_edges_unless_told_how_to_align():
    # "Forty adults": a span [1, 12) would read back as [0, 12), changed without a word
    off = frame([("d1", 1, 12, "P", "u")], ("doc", "start", "end", "label", "annotator"))
    with pytest.raises(CrowdDataError, match=r"document 'd1', annotator 'u': span \[1, 12\) "
                                             r"does not align with the tokens \(those it "
                                             r"overlaps span \[0, 12\)\)"):
        spans_to_token_tags(TEXTS, off)
    wide = spans_to_token_tags(TEXTS, off, alignment="expand")
    assert wide[0]["tags"][:3] == ["B-P", "I-P", "O"]
    narrow = spans_to_token_tags(TEXTS, off, alignment="contract")
    assert narrow[0]["tags"][:3] == ["O", "B-P", "O"]
    _, back = token_tags_to_spans(narrow)
    assert canon(back) == [("d1", "u", "6", "12", "P")]
    with pytest.raises(ValueError, match="alignment must be one of"):
        spans_to_token_tags(TEXTS, off, alignment="exact")


def test_errors_name_a_filtered_frames_rows_by_their_index(tmp_path):
    # as from_spans names them: mine.loc[2] is the row, its position is 1
    crowd = frame([("d3", 0, 1, "P", "v"), ("d3", 0, 1, "P", "u"), ("d3", 5, 9, "P", "u")],
                  ("doc", "start", "end", "label", "annotator"))
    mine = crowd[crowd.annotator == "u"]
    writers = [spans_to_token_tags, lambda t, s: write_spans_jsonl(tmp_path / "s.jsonl", t, s)]
    if __import__("importlib").util.find_spec("spacy"):
        writers.append(spans_to_spacy)
    for write in writers:
        with pytest.raises(CrowdDataError, match=r"^span row 2: \[5, 9\) is outside the text"):
            write(TEXTS, mine)


def test_writers_refuse_a_span_without_its_annotator():
    # written as a tag row or a Doc.spans group of the annotator nan (JSON lines refused it)
    crowd = frame([("d3", 0, 1, "P", "u"), ("d3", 2, 3, "P", None)],
                  ("doc", "start", "end", "label", "annotator"))
    writers = [spans_to_token_tags]
    if __import__("importlib").util.find_spec("spacy"):
        writers.append(spans_to_spacy)
    for write in writers:
        with pytest.raises(CrowdDataError, match=r"span row 1: missing annotator \((None|nan)\)"):
            write(TEXTS, crowd)


def test_overlapping_spans_cannot_be_tags_and_the_error_names_them():
    nested = frame([("d1", 0, 24, "P"), ("d1", 6, 12, "P")])
    with pytest.raises(CrowdDataError, match=r"document 'd1': spans \[0, 24\) and \[6, 12\) "
                                             r"share a token; BIO tags cannot hold"):
        spans_to_token_tags(TEXTS, nested)
    mid = frame([("d3", 0, 3, "P", "u"), ("d3", 2, 7, "P", "u")],
                ("doc", "start", "end", "label", "annotator"))
    with pytest.raises(CrowdDataError, match=r"document 'd3', annotator 'u': spans \[0, 3\) "
                                             r"and \[2, 7\)"):
        spans_to_token_tags(TEXTS, mid, scheme="BILOU")
    # two annotators' overlapping spans are two rows: no clash
    two = frame([("d3", 0, 3, "P", "u"), ("d3", 2, 7, "P", "v")],
                ("doc", "start", "end", "label", "annotator"))
    rows = spans_to_token_tags(TEXTS, two)
    assert [r["annotator"] for r in rows if r["doc"] == "d3"] == ["u", "v"]
    touching = frame([("d3", 0, 1, "P"), ("d3", 2, 3, "P"), ("d3", 4, 5, "Q")])
    with pytest.raises(CrowdDataError, match=r"document 'd3': spans \[0, 1\) and \[2, 3\) of "
                                             r"label 'P' touch; IO tags would read them back"):
        spans_to_token_tags(TEXTS, touching, scheme="IO")
    assert spans_to_token_tags(TEXTS, touching.iloc[1:], scheme="IO")[2]["tags"] == [
        "O", "I-P", "I-Q", "O"]        # touching spans of two labels stay two
    with pytest.raises(CrowdDataError, match=r"span row 0: the empty label '' cannot be a tag"):
        spans_to_token_tags(TEXTS, frame([("d3", 0, 1, "")]))   # "B-", which no reader takes
    with pytest.raises(CrowdDataError, match=r"span \[13, 13\) covers no token"):
        spans_to_token_tags(TEXTS, frame([("d2", 13, 13, "P")]))


def test_token_tags_round_trip_keeps_empty_and_blank_documents():
    # a document without tokens is a row with empty lists, read back as that document
    texts = {"e": "", "blank": " \n ", "x": "x y"}
    rows = spans_to_token_tags(texts, frame([("x", 2, 3, "P")]), scheme="BILOU")
    assert [r["tags"] for r in rows] == [[], [], ["O", "U-P"]]
    back_texts, back = token_tags_to_spans(rows, scheme="BILOU")
    assert back_texts == texts and canon(back) == [("x", "2", "3", "P")]
    texts, back = token_tags_to_spans([{"tokens": [], "tags": []},
                                       {"tokens": ["a"], "tags": ["B-X"]}])
    assert texts == {0: "", 1: "a"} and canon(back) == [("1", "0", "1", "X")]


def test_empty_tokens_at_a_spans_edges_leave_the_joining_spaces_out():
    # a Hugging Face token list may hold "" tokens: joined by spaces, they sit after a space,
    # and a span that began or ended on one took that space in ("Rome " at [1, 6)), which
    # the tags could not be written back to (no token edge there)
    names = ["O", "B-LOC", "I-LOC"]
    rows = [{"doc": "d1", "tokens": ["", "Rome", ""], "tags": [1, 2, 2]},
            {"doc": "d2", "text": "ab  cd", "offsets": [[0, 2], [3, 3], [4, 6], [6, 6]],
             "tags": [1, 2, 2, 0]}]
    texts, spans = token_tags_to_spans(rows, label_names=names)
    assert texts["d1"] == " Rome "
    assert spans[["doc", "start", "end"]].values.tolist() == [["d1", 1, 5], ["d2", 0, 6]]
    back = spans_to_token_tags(texts, spans, label_names=names)
    assert [r["tags"] for r in back] == [[1], [1, 2]]


def test_tag_list_errors_name_the_rows_document():
    # a Hugging Face split names its documents ("id"): the row number alone sent the user
    # counting rows of a shuffled or filtered split
    names = ["O", "B-LOC", "I-LOC"]
    good = {"id": "s0", "tokens": ["in", "Rome"], "ner_tags": [0, 1]}
    cases = [({"id": "s7", "tokens": ["a", "b"], "ner_tags": [0, 9]},
              r"row 1: tag id 9 is not among the 3 label names \(ids 0..2\) \(document 's7'\)"),
             ({"id": "s7", "tokens": ["a", "b"], "ner_tags": [0]},
              r"row 1: 1 tags for 2 tokens \(document 's7'\)"),
             ({"id": "s7", "tokens": ["a", "b"], "ner_tags": ["O", "X-LOC"]},
              r"row 1, token 1: tag 'X-LOC' is not a BIO tag .* \(document 's7'\)$"),
             ({"id": "s7", "text": "ab", "offsets": [[0, 1], [1, 3]], "ner_tags": [0, 0]},
              r"row 1, token 1: offsets \[1, 3\) end past the text \(2 characters\) "
              r"\(document 's7'\)")]
    for bad, message in cases:
        with pytest.raises(CrowdDataError, match=message):
            token_tags_to_spans([good, bad], label_names=names, tags_key="ner_tags",
                                doc_key="id")
    with pytest.raises(CrowdDataError, match=r"row 1: 1 tags for 2 tokens$"):   # no id: row
        token_tags_to_spans([{"tokens": ["a"], "tags": ["O"]}, {"tokens": ["a", "b"],
                                                                 "tags": ["O"]}])


def test_tag_rows_with_offsets_but_no_text_are_refused_not_read_off_the_joined_tokens():
    # the offsets [11, 15] place "Mary" in a text with double spaces: the span came back at
    # [9, 13), in the tokens joined by single spaces, the offsets dropped silently
    row = {"doc": "d", "tokens": ["John", "met", "Mary"], "offsets": [[0, 4], [6, 9], [11, 15]],
           "tags": ["O", "O", "B-PER"]}
    with pytest.raises(CrowdDataError, match=r"row 0: 'offsets' without 'text': they index a "
                                             r"text the row does not give .*\(document 'd'\)"):
        token_tags_to_spans([row])
    texts, spans = token_tags_to_spans([dict(row, text="John  met  Mary")])
    assert spans[["start", "end"]].values.tolist() == [[11, 15]]
    # a frame's row without offsets (NaN there) is read from its tokens
    frame_rows = pd.DataFrame([{"doc": "e", "tokens": ["Ann"], "tags": ["B-PER"]}, row])
    texts, spans = token_tags_to_spans(frame_rows[:1])
    assert texts == {"e": "Ann"} and spans["end"].tolist() == [3]
    with pytest.raises(CrowdDataError, match=r"row 1: 'offsets' without 'text'"):
        token_tags_to_spans(frame_rows)


def test_io_tags_without_a_prefix_are_told_how_to_read():
    # Few-NERD's IO tags are bare labels ("person"): the error listed the prefixes only
    rows = [{"id": "f0", "tokens": ["Ann", "sings"], "ner_tags": [1, 0]}]
    names = ["O", "person"]
    with pytest.raises(CrowdDataError, match=r"row 0, token 0: tag 'person' is not a IO tag "
                                             r"\(prefixes O, I\) \(document 'f0'\); IO tags "
                                             r"without a prefix .* are 'I-person' here"):
        token_tags_to_spans(rows, scheme="IO", label_names=names, tags_key="ner_tags",
                            doc_key="id")
    mapped = [n if n == "O" else "I-" + n for n in names]
    _, spans = token_tags_to_spans(rows, scheme="IO", label_names=mapped, tags_key="ner_tags",
                                   doc_key="id")
    assert spans[["start", "end", "label"]].values.tolist() == [[0, 3, "person"]]


def test_reading_tags_is_lenient_like_conlleval_and_strict_about_unknown_tags():
    rows = [{"tokens": ["a", "b", "c", "d", "e"], "tags": ["I-X", "I-X", "O", "I-Y", "B-Y"]}]
    texts, spans = token_tags_to_spans(rows)
    assert texts == {0: "a b c d e"}
    assert spans[["start", "end", "label"]].values.tolist() == [[0, 3, "X"], [6, 7, "Y"],
                                                                [8, 9, "Y"]]
    hf = [{"id": "s1", "tokens": ["EU", "rejects", "German"], "ner_tags": [3, 0, 7]}]
    names = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    _, spans = token_tags_to_spans(hf, label_names=names, tags_key="ner_tags", doc_key="id")
    assert spans.values.tolist() == [["s1", 0, 2, "ORG"], ["s1", 11, 17, "MISC"]]
    ids = spans_to_token_tags({"s1": "EU rejects German"}, spans, label_names=names)
    assert ids[0]["tags"] == [3, 0, 7]                # written back as the dataset's ids
    with pytest.raises(CrowdDataError, match="document 's1': tag 'B-MISC' is not among the 7 "
                                             "label_names"):
        spans_to_token_tags({"s1": "EU rejects German"}, spans, label_names=names[:7])
    as_frame = pd.DataFrame({"id": ["s1"], "tokens": [np.array(hf[0]["tokens"], object)],
                             "ner_tags": [np.array(hf[0]["ner_tags"])]})   # to_pandas()
    _, from_frame = token_tags_to_spans(as_frame, label_names=names, tags_key="ner_tags",
                                        doc_key="id")
    assert from_frame.equals(spans)
    with pytest.raises(CrowdDataError, match=r"row 0, token 1: tag 'L-X' is not a BIO tag"):
        token_tags_to_spans([{"tokens": ["a", "b"], "tags": ["B-X", "L-X"]}])
    # BIOES tags are read with BILOU's too: the message lists what the reader takes
    with pytest.raises(CrowdDataError, match=r"tag 'X-Y' is not a BIOES tag \(prefixes O, B, I, "
                                             r"L, U, E, S\)"):
        token_tags_to_spans([{"tokens": ["a"], "tags": ["X-Y"]}], scheme="BIOES")
    with pytest.raises(CrowdDataError, match="row 0: tag id 9 is not among the 9 label names"):
        token_tags_to_spans([{"tokens": ["a"], "tags": [9]}], label_names=names)
    with pytest.raises(TypeError, match="label_names must be a list of tag names, got the "
                                        "string 'O B-X I-X'"):
        token_tags_to_spans([{"tokens": ["a"], "tags": [1]}], label_names="O B-X I-X")
    with pytest.raises(CrowdDataError, match="row 1: no 'annotator' entry, while row 0 has one"):
        token_tags_to_spans([{"tokens": ["a"], "tags": ["B-X"], "annotator": "u"},
                             {"tokens": ["a"], "tags": ["B-X"]}])
    # a DataFrame's gap is NaN (pandas stores a None there as NaN too): no annotator either
    gap = pd.DataFrame({"doc": ["d", "d"], "annotator": ["u", None], "tokens": [["a"]] * 2,
                        "tags": [["B-X"], ["O"]]})
    for rows in (gap, [{"doc": "d", "annotator": "u", "tokens": ["a"], "tags": ["B-X"]},
                       {"doc": "d", "annotator": np.nan, "tokens": ["a"], "tags": ["O"]}]):
        with pytest.raises(CrowdDataError, match="row 1: no 'annotator' entry, while row 0 "
                                                 "has one"):
            token_tags_to_spans(rows)
    _, back, back_seen = token_tags_to_spans(gap.assign(annotator=None, doc=["d", "e"]),
                                             return_seen=True)
    assert "annotator" not in back.columns and back_seen.empty
    edited = spans_to_token_tags(TEXTS, frame([]))[0]    # text, offsets and tokens agree
    edited["text"] = edited["text"].replace("Forty", "Fifty")
    with pytest.raises(CrowdDataError, match=r"row 0, token 0: 'tokens' has 'Forty' but the "
                                             r"text at its offsets \[0, 5\] is 'Fifty'"):
        token_tags_to_spans([edited])
    # a text beside tokens without offsets: the spans were placed in the tokens joined by
    # spaces, and the given text was dropped without a word
    plain = {"text": "EU rejects German.", "tokens": ["EU", "rejects", "German", "."],
             "tags": ["B-ORG", "O", "B-MISC", "O"]}
    with pytest.raises(CrowdDataError, match=r"row 0: 'text' 'EU rejects German.' is not the "
                                             r"'tokens' joined by single spaces \('EU rejects "
                                             r"German .'\), and there are no 'offsets'"):
        token_tags_to_spans([plain])
    texts, _ = token_tags_to_spans([dict(plain, text="EU rejects German .")])
    assert texts == {0: "EU rejects German ."}
    # an empty token (a tokenizer's [CLS] at [0, 0]) may be 'O'; a span of only empty tokens
    # covers no character (from_spans dropped it)
    cls = {"text": "ab cd", "offsets": [[0, 0], [0, 2], [3, 5], [5, 5]]}
    _, back = token_tags_to_spans([dict(cls, tags=["O", "B-X", "I-X", "I-X"])])
    assert back[["start", "end"]].values.tolist() == [[0, 5]]
    with pytest.raises(CrowdDataError, match=r"row 1, token 3: tag 'B-Y' starts a span of no "
                                             r"character \(its tokens are empty: \[5, 5\]\)"):
        token_tags_to_spans([dict(cls, tags=["O"] * 4), dict(cls, tags=["B-X", "I-X", "O",
                                                                        "B-Y"], doc=1)])
    with pytest.raises(CrowdDataError, match=r"row 0: 3 'tokens' for 7 offsets"):
        token_tags_to_spans([dict(edited, tokens=["Fifty", "adults", "with"])])
    with pytest.raises(CrowdDataError, match="row 1: document 's1' has another tag list in "
                                             "row 0 \\(rows of one document need an 'annotator' "
                                             "each\\)"):
        token_tags_to_spans(hf + hf, label_names=names, tags_key="ner_tags", doc_key="id")
    with pytest.raises(CrowdDataError, match="row 2: document 0, annotator 'u' has another tag "
                                             "list in row 0"):
        token_tags_to_spans([{"tokens": ["a"], "tags": ["B-X"], "annotator": a, "doc": 0}
                             for a in ("u", "v", "u")])
    with pytest.raises(CrowdDataError, match="row 1: 1 tags for 2 tokens"):
        token_tags_to_spans([{"tokens": ["a"], "tags": ["O"]}, {"tokens": ["a", "b"],
                                                                "tags": ["O"]}])


def test_jsonl_round_trip_holds_nested_spans_and_checks_offsets(tmp_path):
    rng = np.random.default_rng(2)
    spans = random_spans(rng, TEXTS, 6, nested=True, with_annotator=True)
    path = write_spans_jsonl(tmp_path / "spans.jsonl", TEXTS, spans)
    texts, back = read_spans_jsonl(path)
    assert texts == TEXTS
    assert canon(back) == canon(spans)
    (tmp_path / "bad.jsonl").write_text('{"doc": 1, "text": "abc", "spans": []}\n'
                                        '{"doc": 2, "text": "ab", "spans": [{"start": 1, '
                                        '"end": 5}]}\n', encoding="utf-8")
    with pytest.raises(CrowdDataError, match=r"bad.jsonl:2: span 0 \[1, 5\) is outside the text "
                                             r"of document 2"):
        read_spans_jsonl(tmp_path / "bad.jsonl")


def test_jsonl_reader_names_the_line_of_a_span_without_label(tmp_path):
    # read as NaN, it was refused later (from_spans, every writer) naming a frame row
    path = tmp_path / "nolabel.jsonl"
    path.write_text('{"doc": "a", "text": "x y", "spans": [{"start": 0, "end": 1, "label": '
                    '"X"}]}\n\n{"doc": "b", "text": "x y", "spans": [{"start": 2, "end": 3}]}',
                    encoding="utf-8")
    with pytest.raises(CrowdDataError, match=r"nolabel.jsonl:3: span 0 has no 'label'"):
        read_spans_jsonl(path)


def test_jsonl_reader_names_the_line_of_a_crowd_span_without_annotator(tmp_path):
    # read as NaN, it was refused later by from_spans naming a frame row, not the line
    path = tmp_path / "holes.jsonl"
    one = '{"doc": "a", "text": "x y", "spans": [%s]%s}\n'
    cases = {one % ('{"start": 0, "end": 1, "label": "X"}', ', "annotators": []'):
                 r"holes.jsonl:1: span 0 has no 'annotator', while the file names annotators "
                 r"\(.*holes.jsonl:1: 'annotators'\)",
             one % ('{"start": 0, "end": 1, "label": "X"}', "")
             + one.replace('"a"', '"b"') % ('{"start": 0, "end": 1, "label": "X", '
                                            '"annotator": "u"}', ""):
                 r"holes.jsonl:1: span 0 has no 'annotator', while the file names annotators "
                 r"\(.*holes.jsonl:2: span 0\)"}
    for content, message in cases.items():
        path.write_text(content, encoding="utf-8")
        with pytest.raises(CrowdDataError, match=message):
            read_spans_jsonl(path)


def test_jsonl_writes_numpy_ids_and_refuses_what_it_could_not_read_back(tmp_path):
    # document ids as a SequenceAnnotations holds them (numpy integers) are written as JSON ints
    texts = {np.int64(0): "a b", np.int64(7): "c"}
    spans = frame([(np.int64(7), 0, 1, np.int64(2))])
    texts_back, back = read_spans_jsonl(write_spans_jsonl(tmp_path / "ids.jsonl", texts, spans))
    assert texts_back == {0: "a b", 7: "c"} and back.values.tolist() == [[7, 0, 1, 2]]
    # a missing annotator was written as NaN (not JSON) and refused on reading
    crowd = frame([(0, 0, 1, "P", "u"), (0, 2, 3, "P", None)],
                  ("doc", "start", "end", "label", "annotator"))
    with pytest.raises(CrowdDataError, match="span row 1: annotator must be a string or an "
                                             "integer, got (None|nan)"):
        write_spans_jsonl(tmp_path / "nan.jsonl", texts, crowd)
    with pytest.raises(CrowdDataError, match=r"text 0: doc must be a string or an integer, "
                                             r"got \('a', 1\)"):
        write_spans_jsonl(tmp_path / "tuple.jsonl", {("a", 1): "x"}, frame([]))
    assert not (tmp_path / "nan.jsonl").exists()
    # no label column: "span", as the tag and spaCy writers say, not a label read back as NaN
    _, back = read_spans_jsonl(write_spans_jsonl(tmp_path / "nolabel.jsonl", texts,
                                                 spans[["doc", "start", "end"]]))
    assert back.values.tolist() == [[7, 0, 1, "span"]]


def test_jsonl_round_trip_of_texts_with_unicode_line_separators(tmp_path):
    # JSON keeps U+2028, U+2029 and NEL raw inside strings; only "\n" ends a JSON line
    texts = {"a": "first\u2028second\x85third\u2029x 😀", "b": "tab\tand\r\nCRLF"}
    spans = frame([("a", 6, 12, "X"), ("a", 21, 22, "E"), ("b", 9, 13, "Y")])
    path = write_spans_jsonl(tmp_path / "u.jsonl", texts, spans)
    back_texts, back = read_spans_jsonl(path)
    assert back_texts == texts and canon(back) == canon(spans)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))     # CRLF line ends
    assert read_spans_jsonl(path)[0] == texts


def test_jsonl_round_trip_of_a_text_cut_inside_an_emoji(tmp_path):
    # a lone surrogate cannot be UTF-8: written as a \uXXXX escape, read back as itself
    texts = {"a": "cut \ud83d here", "b": "\ude00"}
    spans = frame([("a", 4, 5, "X"), ("a", 6, 10, "Y"), ("b", 0, 1, "Z")])
    path = write_spans_jsonl(tmp_path / "cut.jsonl", texts, spans)
    back_texts, back = read_spans_jsonl(path)
    assert back_texts == texts and canon(back) == canon(spans)
    # a high surrogate then a low one would come back as one character: said, not shifted
    with pytest.raises(CrowdDataError, match=r"document 'p': the surrogates U\+D83D U\+DE00 "
                                             r"would read back from JSON as one character"):
        write_spans_jsonl(tmp_path / "pair.jsonl", {"p": "x \ud83d\ude00 y"}, frame([]))


def test_token_tags_round_trip_of_tokens_ending_in_a_nul_character():
    # numpy's fixed-width strings drop trailing NULs: the rows' tokens were "ab", not the
    # "ab\x00" at their offsets, and reading them back was an error
    texts = {"a": "ab\x00 \x00 cd"}
    spans = frame([("a", 0, 3, "X"), ("a", 4, 5, "Y")])
    rows = spans_to_token_tags(texts, spans)
    assert rows[0]["tokens"] == ["ab\x00", "\x00", "cd"]
    back_texts, back = token_tags_to_spans(rows)
    assert back_texts == texts and canon(back) == canon(spans)


def test_spacy_round_trip_of_nested_spans_and_ents():
    pytest.importorskip("spacy", reason="spaCy is in the test extra; not installed here")
    rng = np.random.default_rng(3)
    spans = random_spans(rng, TEXTS, 6, nested=True)
    docs = spans_to_spacy(TEXTS, spans)
    assert [d.text for d in docs] == list(TEXTS.values())
    texts, back = spacy_to_spans(docs, doc_ids=list(TEXTS))
    assert texts == TEXTS and canon(back) == canon(spans)
    crowd = random_spans(rng, TEXTS, 4, nested=True, with_annotator=True)
    _, back = spacy_to_spans(spans_to_spacy(TEXTS, crowd), spans_key=None, doc_ids=list(TEXTS))
    assert canon(back) == canon(crowd)
    flat = random_spans(rng, TEXTS, 3, nested=False)
    _, back = spacy_to_spans(spans_to_spacy(TEXTS, flat, ents=True), ents=True,
                             doc_ids=list(TEXTS))
    assert canon(back) == canon(flat)
    with pytest.raises(CrowdDataError, match=r"document 'd1': spans \[0, 24\) and \[6, 12\) "
                                             r"overlap; Doc.ents cannot hold"):
        spans_to_spacy(TEXTS, frame([("d1", 0, 24, "P"), ("d1", 6, 12, "P")]), ents=True)
    with pytest.raises(CrowdDataError, match=r"document 'd1': span \[1, 12\) does not align"):
        spans_to_spacy(TEXTS, frame([("d1", 1, 12, "P")]))


def test_spacy_converters_name_what_they_cannot_hold_or_find():
    pytest.importorskip("spacy", reason="spaCy is in the test extra; not installed here")
    crowd = frame([("d3", 0, 1, "P", "u"), ("d3", 0, 3, "P", "v"), ("d1", 0, 5, "P", "u")],
                  ("doc", "start", "end", "label", "annotator"))
    # entities are one set: two annotators' spans were merged into it (or met as an overlap)
    with pytest.raises(CrowdDataError, match=r"Doc.ents holds one set of spans, these are by "
                                             r"2 annotators \('u', 'v'\)"):
        spans_to_spacy(TEXTS, crowd, ents=True)
    one = spans_to_spacy(TEXTS, crowd[crowd.annotator == "u"], ents=True)
    assert [(e.start_char, e.end_char) for e in one[0].ents] == [(0, 5)]
    # past the text: said so, not "does not align"
    with pytest.raises(CrowdDataError, match=r"span row 0: \[0, 9\) is outside the text of "
                                             r"document 'd3' \(7 characters\)"):
        spans_to_spacy(TEXTS, frame([("d3", 0, 9, "P")]))
    # reading a group no document has, while the docs hold others: not an empty frame
    docs = spans_to_spacy(TEXTS, crowd)
    with pytest.raises(CrowdDataError, match=r"no document has the span group 'sc'; the docs "
                                             r"hold groups \['u', 'v'\]"):
        spacy_to_spans(docs)
    with pytest.raises(CrowdDataError, match=r"the docs hold 2 entities \(ents=True\)"):
        spacy_to_spans(one)
    with pytest.raises(CrowdDataError, match="document ids must be unique; document id 'd1' at "
                                             "position 1 repeats position 0"):
        spacy_to_spans(docs[:2], spans_key=None, doc_ids=["d1", "d1"])
    with pytest.raises(TypeError, match="identifiers must be a list, got the string"):
        spacy_to_spans(docs[:2], spans_key=None, doc_ids="d1")
    # a span of no document (a missing id) is named, not left out
    for doc in ("d9", None, np.nan):
        with pytest.raises(CrowdDataError, match=r"span row 1: document (.d9.|None|nan) has no "
                                                 r"text"):
            spans_to_spacy(TEXTS, frame([("d3", 0, 1, "P"), (doc, 0, 1, "P")]))
    # spaCy's group keys are strings: two annotators' spans were merged into one group
    mixed = frame([("d3", 0, 1, "P", 1), ("d3", 2, 3, "P", "1")],
                  ("doc", "start", "end", "label", "annotator"))
    with pytest.raises(CrowdDataError, match="annotators 1 and '1' would share the Doc.spans "
                                             "group '1'"):
        spans_to_spacy(TEXTS, mixed)
    with pytest.raises(CrowdDataError, match="annotators 1 and '1' would share"):
        spans_to_spacy(TEXTS, mixed.iloc[:1], seen=[("d3", 1), ("d1", "1")])
    _, none = spacy_to_spans(spans_to_spacy(TEXTS, frame([])))
    assert none.empty      # no spans anywhere: nothing to miss
    with pytest.raises(ValueError, match="alignment must be one of"):
        spans_to_spacy(TEXTS, frame([]), alignment="exact")
    with pytest.raises(CrowdDataError, match=r"document 'c': spaCy cannot hold its text: "
                                             r"character 2 is a lone surrogate"):
        spans_to_spacy({"c": "x \ud83d y"}, frame([]))    # spaCy's UnicodeEncodeError
    for key in (None, 3):    # None wrote a group keyed None; 3 was spaCy's bare TypeError
        with pytest.raises(TypeError, match="spans_key must be the name of a Doc.spans group"):
            spans_to_spacy(TEXTS, frame([("d3", 0, 1, "P")]), spans_key=key)


def test_spacy_reader_given_one_doc_says_to_pass_a_list():
    spacy = pytest.importorskip("spacy", reason="spaCy is in the test extra; not installed here")
    doc = spacy.blank("en")("John met Mary")
    # iterating a Doc gives its Tokens: the error said "docs[0] is a Token"
    with pytest.raises(TypeError, match=r"got one Doc \(one document: \[doc\]\)"):
        spacy_to_spans(doc)
    assert spacy_to_spans([doc])[0] == {0: "John met Mary"}


def test_spacy_ents_overlap_after_alignment_names_the_spans_as_given():
    pytest.importorskip("spacy", reason="spaCy is in the test extra; not installed here")
    # "Forty adult" and "s with" do not overlap; expanded to spaCy's tokens they share
    # "adults": the error named [0, 12) and [6, 17), offsets of no span of the frame
    spans = frame([("d1", 0, 11, "P"), ("d1", 11, 17, "P")])
    with pytest.raises(CrowdDataError, match=r"document 'd1': spans \[0, 11\) and \[11, 17\) "
                                             r"overlap \(aligned to spaCy's tokens: \[0, 12\) "
                                             r"and \[6, 17\)\); Doc.ents cannot hold"):
        spans_to_spacy(TEXTS, spans, ents=True, alignment="expand")


def test_spacy_writer_says_where_spacys_tokens_are_and_how_to_align():
    # a span inside a token (a tagger on subwords, "Pari" of "Paris"): the error gave the
    # offsets only, not the text, spaCy's token edges or the way on
    pytest.importorskip("spacy")
    texts = {"d1": "John met Mary in Paris."}
    spans = frame([("d1", 17, 21, "LOC")])
    with pytest.raises(CrowdDataError, match=r"document 'd1': span \[17, 21\) does not align "
                                             r"with spaCy's tokens \(alignment='strict'; its "
                                             r"text 'Pari', the tokens it overlaps span "
                                             r"\[17, 22\)\); alignment='expand' takes"):
        spans_to_spacy(texts, spans)
    docs = spans_to_spacy(texts, spans, alignment="expand", ents=True)
    assert [(e.start_char, e.end_char) for e in docs[0].ents] == [(17, 22)]


def test_annotators_who_marked_nothing_survive_every_format(tmp_path):
    # w2 saw d1 and d2 and marked nothing; w3 saw only d3 and marked nothing: "O", not
    # "missing"
    from crowd_keras.sequences.annotations import SequenceAnnotations
    spans = frame([("d1", 0, 12, "P", "w1"), ("d3", 2, 3, "P", "w1")],
                  ("doc", "start", "end", "label", "annotator"))
    seen = frame([("d1", "w1"), ("d1", "w2"), ("d2", "w2"), ("d3", "w1"), ("d3", "w3")],
                 ("doc", "annotator"))
    want = SequenceAnnotations.from_spans(TEXTS, spans, seen=seen).summary
    assert (want.annotations, want.annotations_without_spans, want.annotators) == (5, 3, 3)
    rows = spans_to_token_tags(TEXTS, spans, seen=seen)
    assert [(r["doc"], r["annotator"], set(r["tags"])) for r in rows][1] == ("d1", "w2", {"O"})
    got = {"tags": token_tags_to_spans(rows, return_seen=True),
           "jsonl": read_spans_jsonl(write_spans_jsonl(tmp_path / "s.jsonl", TEXTS, spans,
                                                       seen=seen), return_seen=True)}
    if __import__("importlib").util.find_spec("spacy"):
        got["spacy"] = spacy_to_spans(spans_to_spacy(TEXTS, spans, seen=seen), spans_key=None,
                                      doc_ids=list(TEXTS), return_seen=True)
    for name, (texts, back, back_seen) in got.items():
        assert canon(back) == canon(spans), name
        assert canon(back_seen) == canon(seen), name
        assert SequenceAnnotations.from_spans(texts, back, seen=back_seen).summary == want, name
    with pytest.raises(ValueError, match="return_seen reads the annotators' groups"):
        spacy_to_spans([], return_seen=True)
    with pytest.raises(CrowdDataError, match="seen row 0: document 'd9' has no text"):
        spans_to_token_tags(TEXTS, spans, seen=[("d9", "w1")])
    writers = [spans_to_token_tags, lambda t, s, seen: write_spans_jsonl(tmp_path / "x.jsonl",
                                                                          t, s, seen=seen)]
    if "spacy" in got:
        writers.append(spans_to_spacy)
    for write in writers:   # whose spans are these?
        with pytest.raises(CrowdDataError, match="seen is given but the spans have no "
                                                 "annotator column"):
            write(TEXTS, spans.drop(columns="annotator"), seen=seen)



def test_a_document_nobody_saw_keeps_its_tag_row_and_reads_back(tmp_path):
    # spans_to_token_tags dropped a crowd's document that no annotator saw: its text was lost
    # (the JSON lines and spaCy writers keep every document)
    from crowd_keras.sequences.annotations import SequenceAnnotations
    spans = frame([("d1", 0, 5, "P", "w1")], ("doc", "start", "end", "label", "annotator"))
    for seen in (None, [("d1", "w1"), ("d3", "w2")]):
        rows = spans_to_token_tags(TEXTS, spans, seen=seen)
        assert {r["doc"] for r in rows} == set(TEXTS)
        nobody = [r for r in rows if r["annotator"] is None]
        assert [r["doc"] for r in nobody] == (["d2", "d3"] if seen is None else ["d2"])
        assert all(set(r["tags"]) == {"O"} and r["tokens"] for r in nobody)
        texts, back, back_seen = token_tags_to_spans(rows, return_seen=True)
        assert texts == TEXTS and canon(back) == canon(spans)
        assert back_seen["annotator"].notna().all()
        want = SequenceAnnotations.from_spans(TEXTS, spans, seen=seen).summary
        assert SequenceAnnotations.from_spans(texts, back, seen=back_seen).summary == want
    # a row without an annotator that holds a span is still an error, naming row and document
    nobody[0]["tags"][0] = "B-P"
    with pytest.raises(CrowdDataError, match=r"row 1: no 'annotator' entry, while row 0 has "
                                             r"one .*nobody annotated.* \(document 'd2'\)"):
        token_tags_to_spans(rows)


def test_the_writers_name_a_seen_frames_rows_by_their_index(tmp_path):
    # they named its positions ("seen row 1" for the row labelled 11), where from_spans and
    # the span rows' errors name the index
    spans = frame([("d1", 0, 5, "P", "w1")], ("doc", "start", "end", "label", "annotator"))
    cases = [(("d1", None), "seen row 11: has no annotator"),
             (("d9", "w2"), "seen row 11: document 'd9' has no text")]
    writers = [spans_to_token_tags, lambda t, s, seen: write_spans_jsonl(tmp_path / "s.jsonl",
                                                                          t, s, seen=seen)]
    if __import__("importlib").util.find_spec("spacy"):
        writers.append(spans_to_spacy)
    for pair, msg in cases:
        seen = pd.DataFrame([("d1", "w1"), pair], columns=["doc", "annotator"], index=[10, 11])
        for write in writers:
            with pytest.raises(CrowdDataError, match=f"^{msg}"):
                write(TEXTS, spans, seen=seen)
    seen = pd.DataFrame([("d1", "w1"), ("d2", 1.5)], columns=["doc", "annotator"],
                        index=[10, 11])
    with pytest.raises(CrowdDataError, match=r"^seen row 11: annotator must be a string"):
        write_spans_jsonl(tmp_path / "s.jsonl", TEXTS, spans, seen=seen)

@pytest.mark.slow
def test_pico_spans_round_trip_through_every_format(tmp_path):
    from crowd_keras.datasets import load_pico
    from crowd_keras.sequences.models import TokenDawidSkene
    pico = load_pico(require_data("pico"), splits=("acl17-test",))
    seq = pico.sequences
    texts = dict(zip(seq.doc_ids, seq.texts))
    # the workers' own spans (overlaps of one worker included) through JSON lines
    crowd = seq.spans_frame()[["doc", "annotator", "start", "end", "label"]]
    _, back = read_spans_jsonl(write_spans_jsonl(tmp_path / "pico.jsonl", texts, crowd))
    assert canon(back) == canon(crowd)
    # the aggregate (token-aligned, never overlapping) through BIO, BILOU and spaCy
    agg = TokenDawidSkene().fit(seq).predict_spans()[["doc", "start", "end", "label"]]
    for scheme in ("BIO", "BILOU"):
        _, back = token_tags_to_spans(spans_to_token_tags(texts, agg, scheme=scheme),
                                      scheme=scheme)
        assert canon(back) == canon(agg)
    pytest.importorskip("spacy", reason="spaCy is in the test extra; not installed here")
    _, back = spacy_to_spans(spans_to_spacy(texts, agg, ents=True), ents=True,
                             doc_ids=list(texts))
    assert canon(back) == canon(agg)
    # one worker's overlapping spans: BIO says where (workers' edges are not all token edges)
    own = crowd.groupby(["doc", "annotator"]).filter(lambda g: len(g) > 1)
    with pytest.raises(CrowdDataError, match="does not align with the tokens"):
        spans_to_token_tags(texts, own)
    with pytest.raises(CrowdDataError, match="share a token; BIO tags cannot hold"):
        spans_to_token_tags(texts, own, alignment="expand")


def test_hugging_face_crowd_tags_through_the_label_model_and_the_crowd_layer_tagger():
    """A crowd's BIO tag ids in, the default label model and a CrowdLayer tagger trained on
    them, their spans out as BIO tag lists: each tags the entity words the crowd tags."""
    keras = pytest.importorskip("keras")
    from crowd_keras.layers import CrowdLayer
    from crowd_keras.losses import MaskedMultiCrossEntropy
    from crowd_keras.sequences.annotations import SequenceAnnotations
    from crowd_keras.sequences.batches import Vocabulary, windows
    from crowd_keras.sequences.registry import get_sequence_model
    rng = np.random.default_rng(0)
    words = ["the", "patients", "with", "asthma", "children", "were", "given", "drug"]
    names = ["O", "B-P", "I-P"]
    rows = []
    for d in range(30):
        toks = [str(w) for w in rng.choice(words, int(rng.integers(4, 9)))]
        truth = [1 if t in ("patients", "children") else 0 for t in toks]
        for w in ("w0", "w1") + (("w2",) if d == 0 else ()):    # w2 saw one document
            miss = 0.3 if w == "w0" else 0.0                        # w0 misses entities
            rows.append({"id": f"doc{d}", "annotator": w, "tokens": toks,
                         "ner_tags": [t if rng.random() >= miss else 0 for t in truth]})
    texts, spans, seen = token_tags_to_spans(rows, label_names=names, tags_key="ner_tags",
                                             doc_key="id", return_seen=True)
    seq = SequenceAnnotations.from_spans(texts, spans, seen=seen, scheme="BIO")
    assert seq.summary.annotations == len(rows)      # the all-O tag lists are annotations
    entity = {"patients", "children"}

    def tagged_words(found):
        out = spans_to_token_tags(texts, found[["doc", "start", "end", "label"]])
        return {(tok, tag != "O") for r in out for tok, tag in zip(r["tokens"], r["tags"])}

    model = get_sequence_model().fit(seq)
    assert tagged_words(model.predict_spans()) == {(w, w in entity) for w in words}

    keras.utils.set_random_seed(0)
    vocab = Vocabulary(min_count=1).fit(seq)
    win = windows(seq, np.arange(seq.n_docs), 8)
    words_in = keras.Input((8,), dtype="int32")
    probs = keras.layers.Dense(seq.n_tags, activation="softmax")(
        keras.layers.Embedding(vocab.size, 8, mask_zero=True)(words_in))
    ann_in = keras.Input((win.annotators.shape[1],), dtype="int32")
    logits = CrowdLayer(len(seq.annotator_ids), "MW", init_scale=3.0)([probs, ann_in])
    crowd = keras.Model([words_in, ann_in], logits)
    crowd.compile(keras.optimizers.Adam(0.05), loss=MaskedMultiCrossEntropy(from_logits=True))
    x = win.gather(vocab.encode(seq), 0)
    crowd.fit([x, win.annotators], win.labels, epochs=40, batch_size=16, verbose=0)
    tok = win.scatter(keras.Model(words_in, probs).predict(x, verbose=0), seq.n_tokens)
    found = seq.decode(np.argmax(tok, axis=1))
    assert tagged_words(found) == {(w, w in entity) for w in words}


def test_integer_tags_without_label_names_say_to_pass_them():
    # a Hugging Face dataset's ner_tags are ClassLabel ids: read without label_names, the
    # error said only that '3' is not a BIO tag
    hf = [{"id": "s1", "tokens": ["EU", "rejects", "German"], "ner_tags": [3, 0, 7]}]
    with pytest.raises(CrowdDataError, match=r"row 0, token 0: tag '3' is not a BIO tag .*"
                                             r"\(document 's1'\); integer tags are tag ids: "
                                             r"pass label_names"):
        token_tags_to_spans(hf, tags_key="ner_tags", doc_key="id")
    with pytest.raises(CrowdDataError, match=r"tag 'X-Y' is not a BIO tag \(prefixes O, B, "
                                             r"I\)$"):
        token_tags_to_spans([{"tokens": ["a"], "tags": ["X-Y"]}])


def test_tag_writer_names_a_tokenizer_failure_by_document_id():
    # the tag writer named the document by its position ("document 1"), from_spans by its id
    def tokenizer(text):
        if "?" in text:
            raise ValueError("cannot read '?'")
        return [(0, len(text))]
    texts = {"pmid-7": "fine", "pmid-9": "odd?"}
    spans = frame([("pmid-7", 0, 4, "P")])
    with pytest.raises(CrowdDataError, match=r"tokenizer tokenizer on document 'pmid-9' raised "
                                             r"ValueError: cannot read '\?'"):
        spans_to_token_tags(texts, spans, tokenizer=tokenizer)
    with pytest.raises(CrowdDataError, match=r"document 'pmid-7', token 0: the tokenizer's "
                                             r"token \(0, 5\) runs past the end of the text"):
        spans_to_token_tags(texts, spans, tokenizer=lambda text: [(0, len(text) + 1)])


def test_writers_say_when_a_spans_document_id_is_a_texts_id_of_another_type(tmp_path):
    # texts keyed 7 (a CSV's ids) and spans naming "7" (a JSON file's keys): "document '7'
    # has no text" did not say that text 7 was there, as from_spans does
    texts = {7: "Forty adults", 8: "none"}
    spans = frame([("7", 0, 5, "P")]).assign(annotator="u")
    hint = (r"span row 0: document '7' has no text \(document 7 has: give the document ids "
            r"one type\)")
    with pytest.raises(CrowdDataError, match=hint):
        spans_to_token_tags(texts, spans)
    with pytest.raises(CrowdDataError, match=hint):
        write_spans_jsonl(tmp_path / "x.jsonl", texts, spans)
    with pytest.raises(CrowdDataError, match=r"seen row 0: document '8' has no text \(document 8 "
                                             r"has: give the document ids one type\)"):
        spans_to_token_tags(texts, spans.assign(doc=7), seen=[("8", "u")])
    pytest.importorskip("spacy")
    with pytest.raises(CrowdDataError, match=hint):
        spans_to_spacy(texts, spans)
    with pytest.raises(CrowdDataError, match=r"span row 0: document 'x' has no text$"):
        spans_to_token_tags(texts, spans.assign(doc="x"))


def test_tag_rows_of_an_arrow_frame_read_their_offsets():
    # Arrow's to_pandas() (a Hugging Face dataset's) holds each row's offsets as an array
    # of per-token arrays: "'offsets' must be one [start, end] pair per token, got shape (7,)"
    pa = pytest.importorskip("pyarrow")
    rows = spans_to_token_tags(TEXTS, frame([("d1", 0, 12, "P"), ("d3", 4, 5, "I")]))
    table = pa.Table.from_pylist(rows).to_pandas()
    assert table["offsets"].iloc[0].shape == (7,)             # not (7, 2)
    texts, spans = token_tags_to_spans(table)
    assert texts == TEXTS
    assert spans.values.tolist() == [["d1", 0, 12, "P"], ["d3", 4, 5, "I"]]


def test_jsonl_crowd_that_marked_nothing_keeps_its_annotator_column(tmp_path):
    # every annotator saw a document and none marked a span: the file names them only in
    # "annotators"; the spans read back must still have an annotator column, or
    # from_spans(texts, spans, seen=seen) refuses the frame
    from crowd_keras.sequences.annotations import SequenceAnnotations
    spans = frame([], ("doc", "start", "end", "label", "annotator"))
    seen = [("d1", "w1"), ("d2", "w2")]
    texts, back, back_seen = read_spans_jsonl(
        write_spans_jsonl(tmp_path / "none.jsonl", TEXTS, spans, seen=seen), return_seen=True)
    assert list(back.columns) == ["doc", "start", "end", "label", "annotator"] and not len(back)
    assert canon(back_seen) == canon(frame(seen, ("doc", "annotator")))
    seq = SequenceAnnotations.from_spans(texts, back, seen=back_seen, labels=["P"])
    assert (seq.summary.annotations, seq.summary.annotations_without_spans) == (2, 2)
    # a file without annotators still reads back without the column
    _, plain = read_spans_jsonl(write_spans_jsonl(tmp_path / "plain.jsonl", TEXTS,
                                                  frame([])))
    assert list(plain.columns) == ["doc", "start", "end", "label"]


def test_spacy_reader_of_every_group_names_entities_it_would_drop():
    # spans_key=None on docs with entities and no Doc.spans group (nlp(text).ents, or
    # spans_to_spacy(..., ents=True)) gave an empty frame: the entities were dropped unseen
    pytest.importorskip("spacy", reason="spaCy is in the test extra; not installed here")
    docs = spans_to_spacy(TEXTS, frame([("d1", 0, 5, "P"), ("d3", 2, 3, "P")]), ents=True)
    with pytest.raises(CrowdDataError, match=r"spans_key=None reads the Doc.spans groups and "
                                             r"no document has one; the docs hold 2 entities "
                                             r"\(ents=True\)"):
        spacy_to_spans(docs, spans_key=None)
    assert len(spacy_to_spans(docs, ents=True)[1]) == 2
    # docs with no span at all, or with groups (empty ones too), read as before
    assert spacy_to_spans(spans_to_spacy(TEXTS, frame([])), spans_key=None)[1].empty
    seen = [("d2", "w1")]
    empty = frame([], ("doc", "start", "end", "label", "annotator"))
    _, back, back_seen = spacy_to_spans(spans_to_spacy(TEXTS, empty, seen=seen),
                                        spans_key=None, doc_ids=list(TEXTS), return_seen=True)
    assert back.empty and canon(back_seen) == canon(frame(seen, ("doc", "annotator")))
