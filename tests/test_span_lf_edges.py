"""Edge cases of span labeling functions, their summary and the abstain-aware model, as a
Snorkel / skweak user meets them (one test per defect found; fast, numpy only)."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras import CrowdDataError
from crowd_keras.sequences.labeling_functions import (ABSTAIN, apply_lfs, lf_summary, span_lf,
                                                      tag_lf)
from crowd_keras.sequences.quality import spans_token_mask
from crowd_keras.sequences.weak import AbstainDawidSkene

TEXT = {"a": "40 adults with asthma got placebo tablets"}     # tokens at 0 3 10 15 22 26 34


@pytest.mark.parametrize("spans", [[(0, 21), (3, 9)], [(3, 9), (0, 21)],      # nested
                                   [(0, 9), (3, 14)], [(3, 14), (0, 9)]])     # overlapping
def test_overlapping_or_nested_spans_of_one_function_are_one_span_in_any_order(spans):
    @span_lf(label="P")
    def spans_lf(doc):
        return spans
    votes = apply_lfs(TEXT, [spans_lf], progress=False)
    n = len(votes.token)
    assert votes.tags("BIO").tolist() == [1] + [2] * (n - 1)       # B I I ...: one span
    assert lf_summary(votes)["n_spans"].tolist() == [1]


def test_touching_spans_of_one_function_stay_two_spans():
    @span_lf(label="P")
    def two(doc):
        return [(3, 9), (0, 2)]
    votes = apply_lfs(TEXT, [two], progress=False)
    assert votes.tags("BIO").tolist() == [1, 1]
    assert lf_summary(votes)["n_spans"].tolist() == [2]


ML = {"a": "John works at Acme Corp today", "b": "Mary met Bob"}     # a: 6 tokens, b: 3
GOLD = pd.DataFrame({"doc": ["a", "a", "b", "b"], "start": [0, 14, 0, 9],
                     "end": [4, 23, 4, 12], "label": ["PER", "ORG", "PER", "PER"]})


@span_lf(label="PER")
def capitalised(doc):           # every capitalised word a person: Acme Corp is wrong
    return [(s, e) for s, e in doc.offsets.tolist() if doc.text[s].isupper()]


@span_lf(label="ORG")
def corp(doc):
    return [(14, 23)] if doc.id == "a" else []


def test_gold_labels_count_in_the_accuracy_of_a_vote_for_another_label():
    votes = apply_lfs(ML, [capitalised, corp], labels=["PER", "ORG"], progress=False)
    s = lf_summary(votes, GOLD).set_index("lf")
    # capitalised: John, Mary, Bob right; Acme, Corp are ORG in the gold: wrong
    assert (s.loc["capitalised", "correct"], s.loc["capitalised", "incorrect"]) == (3, 2)
    assert s.loc["capitalised", "token_precision"] == pytest.approx(3 / 5)
    # recall of the gold tokens of its own label: 3 PER tokens (of 5 gold tokens)
    assert s.loc["capitalised", "token_recall"] == 1.0
    assert (s.loc["corp", "correct"], s.loc["corp", "incorrect"]) == (2, 0)
    assert s.loc["corp", "token_recall"] == 1.0
    # the same gold as {doc: [[start, end, label]]}; without labels: inside/outside only
    as_dict = {d: g[["start", "end", "label"]].values.tolist() for d, g in GOLD.groupby("doc")}
    pd.testing.assert_frame_equal(lf_summary(votes, as_dict), lf_summary(votes, GOLD))
    unlabelled = lf_summary(votes, GOLD.drop(columns="label")).set_index("lf")
    assert unlabelled.loc["capitalised", "correct"] == 5
    assert unlabelled.loc["corp", "token_recall"] == pytest.approx(2 / 5)
    with pytest.raises(CrowdDataError, match=r"gold span 1 \(document 'a'\): label 'Org' is "
                                             r"not among the labels \['PER', 'ORG'\]"):
        lf_summary(votes, GOLD.replace({"ORG": "Org"}))


def test_summary_matches_snorkels_lf_analysis_on_the_token_label_matrix():
    snorkel = pytest.importorskip("snorkel.labeling")

    @tag_lf(label="PER")
    def lower_outside(doc):
        return ["O" if t.islower() else ABSTAIN for t in doc.tokens]

    @tag_lf(label="PER")
    def never(doc):
        return [ABSTAIN] * len(doc.tokens)
    votes = apply_lfs(ML, [capitalised, corp, lower_outside, never], labels=["PER", "ORG"],
                      progress=False)
    ours = lf_summary(votes, GOLD)
    m = votes.matrix()                           # Snorkel's codes: abstain -1, O 0, label + 1
    L = np.where(m == -2, -1, m + 1)
    y = np.zeros(len(L), np.int64)
    seq = votes.sequences
    for code, label in enumerate(["PER", "ORG"]):
        y[spans_token_mask(seq, GOLD[GOLD["label"] == label])] = code + 1
    theirs = snorkel.LFAnalysis(L).lf_summary(Y=y)
    np.testing.assert_allclose(ours[["coverage", "overlaps", "conflicts"]].to_numpy(float),
                               theirs[["Coverage", "Overlaps", "Conflicts"]].to_numpy(float))
    np.testing.assert_array_equal(ours[["correct", "incorrect"]].to_numpy(),
                                  theirs[["Correct", "Incorrect"]].to_numpy())
    # Snorkel writes 0 for a function with no votes; its accuracy is undefined here: NaN
    voted = (ours["correct"] + ours["incorrect"] > 0).to_numpy()
    np.testing.assert_allclose(ours["emp_accuracy"].to_numpy(float)[voted],
                               theirs["Emp. Acc."].to_numpy(float)[voted])
    assert np.isnan(ours["emp_accuracy"].iloc[3]) and ours["coverage"].iloc[3] == 0


def test_an_unhashable_span_label_is_named_with_the_function_and_document():
    @span_lf(label="P")
    def listed(doc):
        return [(0, 2, ["P"])]
    with pytest.raises(CrowdDataError, match=r"'listed' on document 'a': span 0's label must "
                                             r"be one label, got list \['P'\]"):
        apply_lfs(TEXT, [listed], progress=False)


def test_one_function_not_in_a_list_and_unnamed_lambdas_get_a_hint():
    with pytest.raises(TypeError, match=r"got the function 'capitalised' alone \(one "
                                        r"function: \[capitalised\]\)"):
        apply_lfs(ML, capitalised, labels=["PER"], progress=False)
    lambdas = [span_lf(label="P")(lambda doc: []), span_lf(label="P")(lambda doc: [(0, 2)])]
    with pytest.raises(ValueError, match=r"must be unique, got \['<lambda>', '<lambda>'\] "
                                         r"\(name each: @span_lf\(name=\.\.\.\)"):
        apply_lfs(TEXT, lambdas, progress=False)
    named = [span_lf(name=f"lf{i}", label="P")(f.fn) for i, f in enumerate(lambdas)]
    assert apply_lfs(TEXT, named, progress=False).names.tolist() == ["lf0", "lf1"]


def test_summary_and_model_say_what_they_read():
    votes = apply_lfs(ML, [capitalised], labels=["PER"], progress=False)
    with pytest.raises(TypeError, match="lf_summary reads the TokenVotes of apply_lfs"):
        lf_summary(votes.sequences)
    with pytest.raises(CrowdDataError, match="fits the TokenVotes of apply_lfs"):
        AbstainDawidSkene().fit([capitalised])
    # gold documents outside the corpus: all of them (ids of another type?) or some
    with pytest.raises(CrowdDataError, match=r"gold document 0 is not among the labelled "
                                             r"documents \(none of the 1 gold documents is: "
                                             r"are the ids of another type \(e\.g\. 'a'\)\?\)"):
        lf_summary(votes, {0: [[0, 4]]})
    with pytest.raises(CrowdDataError, match=r"document 'z' is not among the labelled documents "
                                             r"\(1 of the 2 gold documents are not"):
        lf_summary(votes, {"a": [[0, 4]], "z": []})


@pytest.mark.parametrize("reverse", [False, True])
def test_spans_of_two_labels_from_one_function_do_not_depend_on_their_order(reverse):
    # "New York Times" an ORG, "New" and "York" two LOCs: a token keeps the lower label
    # code (LOC), as one annotator's spans in from_spans; the two LOC spans stay apart
    text = {"a": "the New York Times"}          # tokens at 0 4 8 13

    @span_lf()
    def places(doc):
        spans = [(4, 18, "ORG"), (4, 7, "LOC"), (8, 12, "LOC")]
        return spans[::-1] if reverse else spans
    votes = apply_lfs(text, [places], labels=["LOC", "ORG"], progress=False)
    # BIO codes: 1 B-LOC, 3 B-ORG
    assert votes.tags("BIO").tolist() == [1, 1, 3]


def test_a_function_with_a_list_of_labels_or_a_name_not_a_string_is_refused_when_made():
    with pytest.raises(TypeError, match=r"labeling function 'two': label must be one span "
                                        r"label .* got list \['P', 'Q'\]"):
        span_lf(name="two", label=["P", "Q"])(lambda doc: [])
    with pytest.raises(TypeError, match="name must be a non-empty string, got int 3"):
        tag_lf(name=3)(lambda doc: [])


def test_votes_in_a_scheme_they_cannot_write_are_refused():
    votes = apply_lfs(TEXT, [span_lf(label="P")(lambda doc: [(0, 9)])], progress=False)
    assert votes.tags("bio").tolist() == [1, 2] and votes.tags("IO").tolist() == [1, 1]
    with pytest.raises(ValueError, match=r"scheme must be one of \('IO', 'BIO'\), got 'BILOU'"):
        votes.tags("BILOU")


def test_nothing_to_fit_says_why():
    some = span_lf(label="P")(lambda doc: [(0, len(doc.text))])
    with pytest.raises(CrowdDataError, match="nothing to fit: the 2 documents have no tokens"):
        AbstainDawidSkene().fit(apply_lfs({"x": "", "y": " "}, [some], progress=False))
    with pytest.raises(CrowdDataError, match="nothing to fit: no annotations and no labeling"):
        AbstainDawidSkene().fit(apply_lfs(TEXT, [], progress=False))
    # an empty corpus has an (empty) summary, and one for no functions
    assert len(lf_summary(apply_lfs({}, [some], progress=False))) == 1
    assert len(lf_summary(apply_lfs(TEXT, [], progress=False), {"a": []})) == 0


def test_a_dataframe_of_documents_is_not_read_as_its_column_names():
    df = pd.DataFrame({"id": ["a"], "text": [TEXT["a"]]})
    with pytest.raises(TypeError, match=r"documents is a DataFrame \(columns \['id', 'text'\]\): "
                                        r"pass its text column"):
        apply_lfs(df, [capitalised], labels=["PER"], progress=False)
    votes = apply_lfs(df.set_index("id")["text"], [capitalised], labels=["PER"], progress=False)
    assert votes.sequences.doc_ids.tolist() == ["a"]


def test_an_empty_gold_span_covers_no_token_as_an_empty_function_span():
    # [5, 5) falls inside "adults": as in from_spans and apply_lfs it covers nothing, so a
    # gold of only that span leaves every token outside (it marked "adults" a gold token)
    @span_lf(label="P")
    def adults(doc):
        return [(3, 9)]

    @tag_lf()
    def outside(doc):
        return ["O"] * len(doc.tokens)
    votes = apply_lfs(TEXT, [adults, outside], progress=False)
    s = lf_summary(votes, {"a": [[5, 5, "P"]]}).set_index("lf")
    assert s.loc["adults", ["correct", "incorrect"]].tolist() == [0, 1]
    assert s.loc["outside", ["correct", "incorrect"]].tolist() == [7, 0]
    assert not spans_token_mask(votes.sequences, {"a": [[5, 5]]}).any()


def test_a_bilou_tag_of_a_known_label_names_its_prefix():
    @tag_lf(label="PER")
    def bilou(doc):
        return ["U-PER"] + [ABSTAIN] * (len(doc.tokens) - 1)
    # the error said "label 'U-PER' is not among the labels ['PER']"
    with pytest.raises(CrowdDataError, match=r"'bilou' on document 'a', token 0: tag 'U-PER' "
                                             r"has the prefix 'U-'; a tag function's tags are "
                                             r"'B-label'"):
        apply_lfs(ML, [bilou], progress=False)


def test_a_tag_functions_abstain_values_are_these_and_any_other_entry_is_named():
    # ABSTAIN, "-1" (ABSTAIN in a numpy string array), None and NaN abstain; an entry that
    # looks like one (-1.0, "nan") was refused without saying what abstains
    def tagger(value):
        @tag_lf(name="t", label="P")
        def t(doc):
            return ["P", value] + ["O"] * (len(doc.tokens) - 2)
        return t
    for value in (ABSTAIN, np.int64(-1), "-1", None, np.nan, pd.NA):
        votes = apply_lfs(TEXT, [tagger(value)], progress=False)
        assert votes.matrix()[:3, 0].tolist() == [0, -2, -1], repr(value)
    as_numpy = np.array([ABSTAIN, "P"] + [ABSTAIN] * 5)      # strings: ["-1", "P", "-1", ...]
    votes = apply_lfs(TEXT, [tag_lf(name="n", label="P")(lambda doc: as_numpy)], progress=False)
    assert votes.matrix()[:, 0].tolist() == [-2, 0, -2, -2, -2, -2, -2]
    for value, shown in ((-1.0, "-1.0"), ("nan", "'nan'"), (True, "True"), ("", "''"),
                         ("I-Q", "'I-Q'")):
        with pytest.raises(CrowdDataError, match=(
                rf"^labeling function 't' on document 'a', token 1: tag {shown} is neither a "
                r"label among \['P'\] nor an abstain \(.*ABSTAIN \(-1\), '-1', None and NaN "
                r"abstain\)")):
            apply_lfs(TEXT, [tagger(value)], progress=False)


def test_spans_that_cover_no_token_are_counted_per_function_in_the_summary():
    # an empty span or one of whitespace between tokens votes nothing; they were dropped
    # unseen (from_spans counts a crowd's in its summary)
    @span_lf(label="P")
    def odd(doc):      # "40 adults": [2, 3) is the space; "asthma" [15, 21) votes
        return [(2, 3), (5, 5), (2, 3), (15, 21), (0, 0)]

    @span_lf(label="P")
    def fine(doc):
        return [(3, 9)]

    @tag_lf(label="P")
    def tags(doc):
        return ["O"] * len(doc.tokens)
    votes = apply_lfs(TEXT, [odd, fine, tags], progress=False)
    assert votes.whitespace_only_dropped.tolist() == [2, 0, 0]
    assert votes.empty_dropped.tolist() == [2, 0, 0]
    for s in (lf_summary(votes), lf_summary(votes, {"a": [(15, 21, "P")]})):
        s = s.set_index("lf")
        assert s["empty_dropped"].tolist() == [2, 0, 0]
        assert s["whitespace_only_dropped"].tolist() == [2, 0, 0]
        assert s.loc["odd", "n_spans"] == 1      # the one span that covers a token


def test_a_span_function_named_after_a_label_but_without_label_is_told():
    @span_lf("ORG")              # the name, not the label: its spans would be PER's
    def acme(doc):
        return [(14, 23)] if doc.id == "a" else []
    with pytest.raises(CrowdDataError, match=r"'ORG' on document 'a', span \[14, 23\): a span "
                                             r"without a label "
                                             r"gets the function's label=, and it has none: "
                                             r"the first label 'PER', not 'ORG'"):
        apply_lfs(ML, [acme], labels=["PER", "ORG"], progress=False)
    # named after the first label, or giving each span its label, it votes as meant
    assert apply_lfs(ML, [span_lf("PER")(acme.fn)], labels=["PER", "ORG"],
                     progress=False).label.tolist() == [0, 0]
    labelled = span_lf("ORG")(lambda doc: [(14, 23, "ORG")] if doc.id == "a" else [])
    assert apply_lfs(ML, [labelled], labels=["PER", "ORG"],
                     progress=False).label.tolist() == [1, 1]


def test_a_callable_without_a_name_is_told_to_name_the_function():
    import functools

    def words(doc, word):
        return [m for m in ((int(s), int(e)) for s, e in doc.offsets)
                if doc.text[m[0]:m[1]] == word]
    # a partial (or a matcher object) has no __name__: a bare AttributeError before
    for make in (span_lf(label="PER"), span_lf, tag_lf):
        with pytest.raises(TypeError, match=r"a partial has no __name__ to name the labeling "
                                            r"function by: name it, (span|tag)_lf\(name=\.\.\.\)"):
            make(functools.partial(words, word="Mary"))
    mary = span_lf(name="mary", label="PER")(functools.partial(words, word="Mary"))
    assert apply_lfs(ML, [mary], progress=False).token.tolist() == [6]


def test_a_function_editing_its_document_does_not_change_what_the_next_one_reads():
    @tag_lf(label="PER")
    def lowers(doc):           # edits the token list it was given, in place
        for i, tok in enumerate(doc.tokens):
            doc.tokens[i] = tok.lower()
        return None

    @tag_lf(label="PER")
    def titled(doc):
        return ["PER" if tok.istitle() else ABSTAIN for tok in doc.tokens]
    # titled read the lowered tokens: no vote at all
    votes = apply_lfs(ML, [lowers, titled], progress=False)
    assert votes.token.tolist() == [0, 3, 4, 6, 8]        # John Acme Corp Mary Bob

    @span_lf(label="PER")
    def shifts(doc):
        doc.offsets[:, 0] += 1
        return []
    with pytest.raises(CrowdDataError, match=r"'shifts' on document 'a' raised ValueError: "
                                             r"output array is read-only"):
        apply_lfs(ML, [shifts], progress=False)
