"""The default-model candidates of issue 49: calibrated threshold, BSC-seq's worker model,
token Dawid-Skene with a cross-fitted word-window prior."""
import numpy as np
import pandas as pd
import pytest

from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.base import decode_marginals
from crowd_keras.sequences.batches import Vocabulary, token_forms
from crowd_keras.sequences.bsc import SequentialAnnotatorHMM, previous_tags
from crowd_keras.sequences.calibration import CalibratedThreshold, agreement_counts
from crowd_keras.sequences.length_prior import SpanLengthPrior
from crowd_keras.sequences.models import TokenDawidSkene
from crowd_keras.sequences.quality import token_prf
from crowd_keras.sequences.registry import DEFAULT_SEQUENCE_MODEL, get_sequence_model
from crowd_keras.sequences.selection import heldout_annotations
from crowd_keras.sequences.text_prior import (WindowPriorDawidSkene, document_folds,
                                              window_features, word_texts)

from sequence_data import simulated_spans


@pytest.fixture(scope="module")
def crowd():
    return simulated_spans(n_docs=60, per_doc=4, seed=3)


def test_threshold_decoding_and_agreement_counts(crowd):
    seq, _ = crowd
    post = np.array([[0.7, 0.3], [0.4, 0.6], [0.5, 0.5]])
    assert decode_marginals(post).tolist() == [0, 1, 0]
    assert decode_marginals(post, threshold=0.25).tolist() == [1, 1, 1]
    assert decode_marginals(post, ties_positive=True).tolist() == [0, 1, 1]
    hidden = heldout_annotations(seq, seed=0)
    model = TokenDawidSkene().fit(seq.drop_annotations(hidden))
    c = agreement_counts(model.predict_proba(), seq, hidden, [0.01, 0.5, 0.99])
    obs = hidden[seq.obs_assign]
    theirs = seq.obs_tag[obs] > 0
    mine = model.predict_proba()[seq.obs_token[obs], 1] > 0.5
    assert c[1].tolist() == [(mine & theirs).sum(), mine.sum(), theirs.sum()]
    assert c[0, 1] >= c[1, 1] >= c[2, 1]          # a lower threshold tags more


def test_calibrated_threshold_is_chosen_from_the_crowd_and_used_to_decode(crowd):
    seq, truth = crowd
    model = CalibratedThreshold("dawid_skene", n_draws=2).fit(seq)
    table = model.threshold_table_
    assert model.threshold_ in table["threshold"].tolist()
    assert table.loc[table["agreement_f1"].idxmax(), "agreement_f1"] == pytest.approx(
        table.set_index("threshold").loc[model.threshold_, "agreement_f1"])
    p_in = 1 - model.predict_proba()[:, 0]
    assert ((model.predict() > 0) == (p_in > model.threshold_)).all()
    assert token_prf(model.predict() > 0, truth > 0)[2] > 0.85
    bio = CalibratedThreshold(TokenDawidSkene(prior_strength=1.0), scheme="BIO",
                              n_draws=1).fit(seq)
    assert bio.sequences_.scheme == "BIO" and bio.model_.prior_strength == 1.0
    # IO sequences given to a BIO-calibrated model are re-tagged
    assert bio.predict(seq).shape == (seq.n_tokens,)
    assert set(bio.predict_spans(seq).columns) >= {"doc", "start", "end", "score"}
    with pytest.raises(ValueError, match="grid"):
        CalibratedThreshold(grid=[0.0, 0.5]).fit(seq)
    with pytest.raises(TypeError, match="sequence model name or a SequenceLabelModel"):
        CalibratedThreshold(model=3).fit(seq)


def _reordered(seq):
    """The same crowd with the documents, annotators and span rows in other orders, some spans
    given twice and the annotators renamed (to ints, in the reverse order of their names);
    and the renaming."""
    rows = seq.spans_frame()
    rows = pd.concat([rows, rows.iloc[::5]]).sample(frac=1.0, random_state=7)  # some twice
    names = sorted(seq.annotator_ids.tolist())
    rename = {a: len(names) - k for k, a in enumerate(names)}
    seen = pd.DataFrame({"doc": seq.doc_ids[seq.assign_doc],
                         "annotator": seq.annotator_ids[seq.assign_annotator]}).sample(
        frac=1.0, random_state=8)
    docs = seq.doc_ids[::-1]
    texts = {d: seq.texts[int(np.flatnonzero(seq.doc_ids == d)[0])] for d in docs}
    return SequenceAnnotations.from_spans(
        texts, rows.assign(annotator=rows["annotator"].map(rename)),
        seen=seen.assign(annotator=seen["annotator"].map(rename)), scheme=seq.scheme), rename


def test_held_out_draws_and_the_calibrated_threshold_ignore_order_and_names(crowd):
    """The hidden annotation of each document (and so the threshold) was drawn by position:
    another order of the documents, or other annotator names, chose other thresholds."""
    seq, _ = crowd
    other, rename = _reordered(seq)
    assert other.doc_ids.tolist() != seq.doc_ids.tolist()
    back = {new: old for old, new in rename.items()}

    def hidden_pairs(s, seed, name=lambda w: w):
        h = heldout_annotations(s, seed=seed)
        return {(s.doc_ids[d], name(s.annotator_ids[w]))
                for d, w in zip(s.assign_doc[h], s.assign_annotator[h])}

    for seed in range(3):
        assert hidden_pairs(seq, seed) == hidden_pairs(other, seed, lambda w: back[w])
    fits = [CalibratedThreshold("dawid_skene", n_draws=3).fit(s) for s in (seq, other)]
    pd.testing.assert_frame_equal(*(f.threshold_table_ for f in fits))
    spans = [f.predict_spans()[["doc", "start", "end"]] for f in fits]
    pd.testing.assert_frame_equal(*(s.sort_values(["doc", "start"]).reset_index(drop=True)
                                    for s in spans), check_dtype=False)


def test_the_threshold_table_scores_the_tags_the_model_decodes_with_its_tie_rule():
    """Majority vote's shares (k/4 with one of five hidden) fall on the grid and it decodes
    "at least θ": the table scored "more than θ", so each row described the next θ up."""
    seq, _ = simulated_spans(n_docs=60, per_doc=5, seed=3)
    grid = (0.25, 0.5, 0.75)
    cal = CalibratedThreshold("majority_vote", grid=grid, n_draws=2).fit(seq)
    counts = np.zeros((len(grid), 3))
    for draw in range(2):
        hidden = heldout_annotations(seq, None, draw)
        vote = get_sequence_model("majority_vote").fit(seq.drop_annotations(hidden))
        obs = hidden[seq.obs_assign]
        theirs = seq.obs_tag[obs] > 0
        for g, theta in enumerate(grid):
            mine = decode_marginals(vote.predict_proba(), True, theta)[seq.obs_token[obs]] > 0
            counts[g] += [(mine & theirs).sum(), mine.sum(), theirs.sum()]
    f1 = 2 * counts[:, 0] / (counts[:, 1] + counts[:, 2])
    np.testing.assert_allclose(cal.threshold_table_["agreement_f1"], f1)
    assert len(set(np.round(f1, 12))) == len(grid)     # the tie rule matters on this crowd
    assert cal.threshold_ == grid[int(np.argmax(f1))]


@pytest.mark.parametrize("spans", [{0: {"x": [[2, 5]]}},                       # one document
                                   {d: {"x": [[0, 3]]} for d in range(3)}])    # one annotator
def test_calibrated_threshold_with_nothing_to_hold_out_keeps_one_half(spans):
    """No document has two annotations: no draw can hide one, so the plain rule θ = ½."""
    seq = SequenceAnnotations.from_dict({d: "a b c d e f" for d in spans}, spans)
    assert not heldout_annotations(seq).any()
    model = CalibratedThreshold().fit(seq)
    assert model.threshold_ == 0.5
    np.testing.assert_array_equal(model.predict(), model.model_.predict())


def test_previous_tags_restart_at_each_annotation():
    seq = SequenceAnnotations.from_dict(["a b c", "d e"], {0: {"u": [[0, 3]], "v": [[4, 5]]},
                                                           1: {"u": [[0, 1]]}}, scheme="BIO")
    assert seq.obs_tag.tolist() == [1, 2, 0, 0, 0, 1, 1, 0]
    assert previous_tags(seq).tolist() == [0, 1, 2, 0, 0, 0, 0, 1]


def test_sequential_annotator_hmm_fits_and_scores_new_sequences(crowd):
    seq, truth = crowd
    bio = seq.with_scheme("BIO")
    model = SequentialAnnotatorHMM(max_iter=30).fit(bio)
    assert model.sequential_confusions_.shape == (len(seq.annotator_ids), 3, 3, 3)
    np.testing.assert_allclose(model.sequential_confusions_.sum(-1), 1.0)
    np.testing.assert_allclose(model.confusion_matrices_.sum(-1), 1.0)
    assert np.isfinite(model.log_likelihood_).all()
    assert token_prf(model.predict() > 0, truth > 0)[2] > 0.8
    np.testing.assert_allclose(model.predict_proba(bio), model.predict_proba(), atol=1e-8)
    with pytest.raises(ValueError, match="token_prior"):
        SequentialAnnotatorHMM().fit(bio, token_prior=np.zeros(bio.n_tokens))


def _worded_crowd(seed=0, n_docs=120):
    """Documents of random filler words where a span is always the word "pat" and the next
    word; a weak crowd of two workers per document who each find a span with probability
    0.6 and add false spans on filler often: the words say more than the crowd."""
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(40)]
    texts, rows, seen, truth = [], [], [], []
    for d in range(n_docs):
        words, tags = [], []
        for _ in range(int(rng.integers(15, 30))):
            if rng.random() < 0.12:
                words += ["pat", str(rng.choice(filler))]
                tags += [1, 1]
            else:
                words.append(str(rng.choice(filler)))
                tags.append(0)
        text = " ".join(words)
        starts = np.concatenate([[0], np.cumsum([len(w) + 1 for w in words])[:-1]])
        texts.append(text)
        truth += tags
        for w in rng.choice(6, 2, replace=False):
            seen.append((d, f"a{w}"))
            for i, t in enumerate(tags):
                begins = t and (i == 0 or not tags[i - 1])
                if begins and rng.random() < 0.6:
                    rows.append((d, f"a{w}", starts[i], starts[i + 1] + len(words[i + 1])))
                elif not t and rng.random() < 0.05:
                    rows.append((d, f"a{w}", starts[i], starts[i] + len(words[i])))
    frame = pd.DataFrame(rows, columns=["doc", "annotator", "start", "end"])
    return SequenceAnnotations.from_spans(texts, frame, seen=seen), np.array(truth)


def test_window_features_are_one_hot_per_offset_with_a_boundary_id():
    seq = SequenceAnnotations.from_dict(["a b", "c"], {0: {"u": []}})
    X = window_features(np.array([0, 1, 2]), seq, window=1, n_words=3).toarray()
    width = 4                                  # 3 words + the boundary id
    assert X.shape == (3, 3 * width + 1)
    assert np.flatnonzero(X[0]).tolist() == [3, width + 0, 2 * width + 1, 3 * width]
    assert np.flatnonzero(X[2]).tolist() == [3, width + 2, 2 * width + 3, 3 * width]


def test_window_prior_beats_plain_dawid_skene_when_the_words_tell():
    seq, truth = _worded_crowd()
    plain = TokenDawidSkene().fit(seq)
    model = WindowPriorDawidSkene(n_rounds=2, text_max_iter=50).fit(seq)
    f_plain = token_prf(plain.predict() > 0, truth > 0)[2]
    f_text = token_prf(model.predict() > 0, truth > 0)[2]
    assert f_text > f_plain + 0.05, (f_text, f_plain)
    # the cross-fitted prior comes from the other fold's model: it is not the posterior
    assert np.isfinite(model.token_prior_).all()
    assert model.text_proba(seq).shape == (seq.n_tokens, 2)
    new = model.predict(seq)
    assert token_prf(new > 0, truth > 0)[2] > f_plain
    with pytest.raises(ValueError, match="n_folds"):
        WindowPriorDawidSkene(n_folds=1).fit(seq)
    # a given prior: the error names the call that takes one, and that call works
    with pytest.raises(ValueError, match=r"TokenDawidSkene\(\)\.fit\(sequences, token_prior="):
        WindowPriorDawidSkene().fit(seq, token_prior=model.token_prior_)
    assert TokenDawidSkene().fit(seq, token_prior=model.token_prior_).predict().shape == new.shape


def test_document_folds_are_even_and_follow_the_texts_not_their_order():
    texts = np.array([f"abstract {i}" for i in range(101)], dtype=object)
    fold = document_folds(texts, 3, seed=0)
    assert sorted(np.bincount(fold).tolist()) == [33, 34, 34]
    order = np.random.default_rng(1).permutation(101)
    np.testing.assert_array_equal(document_folds(texts[order], 3, seed=0), fold[order])
    assert not np.array_equal(document_folds(texts, 3, seed=1), fold)


def _tokens_back(seq, order):
    """(T,) for each token of ``seq``, its position in ``seq.subset(order)``."""
    starts = np.r_[0, np.cumsum(seq.tokens.lengths)]
    back = np.concatenate([np.arange(starts[d], starts[d + 1]) for d in order])
    inverse = np.empty_like(back)
    inverse[back] = np.arange(len(back))
    return inverse


def test_the_text_prior_model_gives_the_same_tags_in_any_document_order():
    """A Label Studio export in another task order (or under task ids instead of document
    ids) is the same crowd: the cross-fitting folds came from the documents' positions, and
    the default span model's tags moved on 0.5 % of PICO's tokens with the order."""
    seq, _ = _worded_crowd(seed=3, n_docs=60)
    order = np.arange(seq.n_docs)[::-1]
    first = WindowPriorDawidSkene(text_max_iter=200).fit(seq)
    other = WindowPriorDawidSkene(text_max_iter=200).fit(seq.subset(order))
    # the reversed corpus' tokens, back in the first corpus' order
    inverse = _tokens_back(seq, order)
    np.testing.assert_array_equal(other.predict()[inverse], first.predict())
    np.testing.assert_allclose(other.posteriors_[inverse], first.posteriors_, atol=1e-4)


def test_documents_with_the_same_text_take_their_folds_in_any_order():
    """Two documents with one text (and other crowd work) tie on the text's key: their folds
    came from their positions, so reordering them moved one's prior by up to 0.5."""
    seq, _ = _worded_crowd(seed=3, n_docs=30)
    rows = seq.spans_frame()[["doc", "annotator", "start", "end"]]
    text = seq.texts[0]
    twin = pd.DataFrame({"doc": [30, 30], "annotator": ["a0", "a1"], "start": [0, 0],
                         "end": [len(text), text.index(" ")]})
    seen = list(zip(seq.doc_ids[seq.assign_doc], seq.annotator_ids[seq.assign_annotator]))
    seq = SequenceAnnotations.from_spans(seq.texts + [text], pd.concat([rows, twin]),
                                         seen=seen + [(30, "a0"), (30, "a1"), (30, "a2")])
    assert document_folds(seq.texts, 2, 0, seq.doc_ids)[[0, 30]].tolist() in ([0, 1], [1, 0])
    order = np.r_[30, 1:30, 0]           # the twins trade places
    np.testing.assert_array_equal(
        document_folds(np.asarray(seq.texts, dtype=object)[order], 2, 0, seq.doc_ids[order]),
        document_folds(seq.texts, 2, 0, seq.doc_ids)[order])
    first, other = (WindowPriorDawidSkene(n_folds=2, text_max_iter=200).fit(s)
                    for s in (seq, seq.subset(order)))
    inverse = _tokens_back(seq, order)
    np.testing.assert_array_equal(other.predict()[inverse], first.predict())
    np.testing.assert_allclose(other.posteriors_[inverse], first.posteriors_, atol=1e-6)


def test_the_text_prior_folds_follow_the_words_not_the_whitespace_between_them():
    """The same crowd on the same words with tabs and no-break spaces between them (or CRLF
    line ends, or given as token lists): the folds came from a hash of the raw text, so the
    default model's tags moved with the whitespace."""
    seq, _ = _worded_crowd(seed=3, n_docs=40)
    rows = seq.spans_frame()[["doc", "annotator", "start", "end"]]
    seen = list(zip(seq.doc_ids[seq.assign_doc], seq.annotator_ids[seq.assign_annotator]))
    # one character for another keeps every offset: a tab, a no-break space for a space
    odd = [t.replace(" ", "\t", 2).replace(" ", "\u00a0", 2) for t in seq.texts]
    other = SequenceAnnotations.from_spans(odd, rows, seen=seen)
    assert word_texts(other) == word_texts(seq) == seq.texts
    first, second = (WindowPriorDawidSkene(text_max_iter=200).fit(s) for s in (seq, other))
    np.testing.assert_array_equal(first.predict(), second.predict())
    np.testing.assert_allclose(first.posteriors_, second.posteriors_, atol=1e-6)


def test_the_default_is_registered():
    assert get_sequence_model(DEFAULT_SEQUENCE_MODEL) is not None


def test_the_io_and_bio_views_of_a_crowd_hide_the_same_annotations():
    """The selection tables compare IO and BIO candidates on the same hidden annotations:
    the keys fingerprint span labels, not the scheme's tags (B and I differ from IO's I)."""
    from crowd_keras.sequences.selection import annotation_keys
    seq, _ = simulated_spans(n_docs=50, seed=2)
    bio = seq.with_scheme("BIO")
    np.testing.assert_array_equal(annotation_keys(seq), annotation_keys(bio))
    for seed in (0, 1, 2):
        np.testing.assert_array_equal(heldout_annotations(seq, seed=seed),
                                      heldout_annotations(bio, seed=seed))


def test_an_annotator_whose_spans_all_miss_scores_f1_zero_not_nan():
    from crowd_keras.sequences.quality import annotator_quality

    spans = pd.DataFrame({"doc": "d1", "annotator": ["x", "y", "z", "w"], "start": [2, 2, 8, 2],
                          "end": [5, 5, 11, 5], "label": "P"})   # z marks "e f", the rest "b c"
    seq = SequenceAnnotations.from_spans({"d1": "a b c d e f", "d2": "g h"}, spans)
    q = get_sequence_model("majority_vote").fit(seq).annotator_quality_.set_index("annotator")
    assert q.loc["z", ["span_precision", "span_recall", "span_f1"]].tolist() == [0.0, 0.0, 0.0]
    assert q.loc["z", "token_f1"] == 0.0 and q.loc["x", "span_f1"] == 1.0
    # against an aggregate without spans, their spans all miss: F1 0, recall undefined
    empty = annotator_quality(seq, np.zeros(seq.n_tokens, np.int64)).set_index("annotator")
    assert empty["span_f1"].tolist() == [0.0] * 4 and empty["span_recall"].isna().all()


def test_the_fitted_documents_given_again_score_as_fitted_under_a_text_prior(crowd):
    """The cross-fitted prior is part of the fit: predict_spans(seq) on the fitted object
    re-scored it under the all-document text model (another prior, other spans)."""
    seq, _ = crowd
    model = WindowPriorDawidSkene(n_rounds=1).fit(seq)
    np.testing.assert_array_equal(model.predict_proba(seq), model.posteriors_)
    pd.testing.assert_frame_equal(model.predict_spans(seq), model.predict_spans())
    np.testing.assert_allclose(model.annotation_quality(seq), model.annotation_quality())


def test_abstain_aware_model_without_functions_scores_new_documents(crowd):
    """Without labeling functions it is token Dawid-Skene: new documents are scored (they
    were refused with "fit it on new TokenVotes")."""
    seq, _ = crowd
    model = get_sequence_model("abstain_dawid_skene").fit(seq)
    copy = seq.subset(seq.doc_ids)                     # the same documents, a new object
    assert copy is not seq
    np.testing.assert_allclose(model.predict_proba(copy), model.posteriors_, atol=1e-12)
    part = seq.subset(seq.doc_ids[:5])
    assert model.predict(part).shape == (part.n_tokens,)
    assert len(model.annotation_quality(part)) == part.annotations.n_annotations


@pytest.mark.parametrize("temperature, words", [(-2, "WindowPriorDawidSkene temperature must "
                                                     "be a finite number >= 0"),
                                                (0, "WindowPriorDawidSkene temperature must "
                                                    "be positive")])
def test_the_text_prior_model_names_itself_for_a_bad_temperature(crowd, temperature, words):
    with pytest.raises(ValueError, match=words):   # named TokenDawidSkene, or no model at all
        WindowPriorDawidSkene(temperature=temperature).fit(crowd[0])


def _rare_word_crowd(n_docs=80, seed=0):
    """Spans are single words ending in "itis", each seen once (out of vocabulary to the
    words' channel); as many rare words ending in "ment" lie outside. Two of six workers per
    document mark a span with probability 0.5 and any other token with 0.1."""
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(30)]
    texts, rows, seen, truth = [], [], [], []
    uid = 0
    for d in range(n_docs):
        words, tags = [], []
        for _ in range(int(rng.integers(15, 30))):
            u = rng.random()
            uid += 1
            stem = "".join(chr(97 + int(c)) for c in str(uid))   # digits would read as 0
            words.append(f"{stem}itis" if u < 0.1 else f"{stem}ment" if u < 0.25
                         else str(rng.choice(filler)))
            tags.append(int(u < 0.1))
        starts = np.concatenate([[0], np.cumsum([len(w) + 1 for w in words])[:-1]])
        texts.append(" ".join(words))
        truth += tags
        for w in rng.choice(6, 2, replace=False):
            seen.append((d, f"a{w}"))
            for i, t in enumerate(tags):
                if rng.random() < (0.5 if t else 0.1):
                    rows.append((d, f"a{w}", starts[i], starts[i] + len(words[i])))
    frame = pd.DataFrame(rows, columns=["doc", "annotator", "start", "end"])
    return SequenceAnnotations.from_spans(texts, frame, seen=seen), np.array(truth)


def test_word_forms_give_rare_words_a_prior_from_their_suffix():
    seq, truth = _rare_word_crowd()
    words = WindowPriorDawidSkene().fit(seq)
    forms = WindowPriorDawidSkene(word_forms=True).fit(seq)
    f_words = token_prf(words.predict() > 0, truth > 0)[2]
    f_forms = token_prf(forms.predict() > 0, truth > 0)[2]
    assert f_forms > f_words + 0.05, (f_forms, f_words)
    assert words.form_vocabularies_ == ()
    suffixes, shapes = forms.form_vocabularies_
    assert {"tis", "ent"} <= set(suffixes.words_) and "x" in set(shapes.words_)
    width = 5 * (words.vocabulary_.size + 1)
    assert words.text_weights_.shape == (width + 1, 2)
    assert forms.text_weights_.shape == (width + 5 * (suffixes.size + shapes.size + 2) + 1, 2)
    assert forms.predict(seq).shape == (seq.n_tokens,)           # new documents: same features
    with pytest.raises(ValueError, match="word_forms must be True or False"):
        WindowPriorDawidSkene(word_forms="yes").fit(seq)


def test_token_forms_read_suffixes_and_shapes():
    seq = SequenceAnnotations.from_dict(["Aged 45-60, with COVID-19 arthritis ok"],
                                        {0: {"u": []}})
    assert token_forms(seq, "word").tolist() == ["aged", "00-00,", "with", "covid-00",
                                                 "arthritis", "ok"]
    assert token_forms(seq, "suffix").tolist() == ["ged", "00,", "ith", "-00", "tis", "ok"]
    assert token_forms(seq, "shape").tolist() == ["Xx", "0-0,", "x", "X-0", "x", "x"]
    with pytest.raises(ValueError, match="form must be one of"):
        Vocabulary(form="lemma").fit(seq)
    vocab = Vocabulary(min_count=1, form="shape").fit(seq)
    assert vocab.words_.tolist() == ["0-0,", "X-0", "Xx", "x"]
    assert vocab.encode(seq).tolist() == [4, 2, 5, 3, 5, 5]


def test_window_features_extra_channels_follow_the_words():
    seq = SequenceAnnotations.from_dict(["a b", "c"], {0: {"u": []}})
    X = window_features(np.array([0, 1, 2]), seq, window=1, n_words=3,
                        extra=[(np.array([1, 0, 1]), 2)]).toarray()
    words, forms = 3 * 4, 3 * 3               # (n + 1) ids per offset, 3 offsets
    assert X.shape == (3, words + forms + 1)
    assert np.flatnonzero(X[0]).tolist() == [3, 4 + 0, 8 + 1, words + 2, words + 3 + 1,
                                             words + 6 + 0, words + forms]
    assert np.flatnonzero(X[2]).tolist() == [3, 4 + 2, 8 + 3, words + 2, words + 3 + 1,
                                             words + 6 + 2, words + forms]


def test_the_text_window_is_the_fitted_one_whatever_set_params_does():
    seq, _ = simulated_spans(n_docs=40, seed=1)
    new, _ = simulated_spans(n_docs=5, seed=9)
    model = WindowPriorDawidSkene().fit(seq)
    before = model.predict_proba(new)
    model.set_params(window=1)              # takes effect at the next fit, as in scikit-learn
    assert model.window_ == 2 and np.array_equal(model.predict_proba(new), before)


def test_the_fitted_documents_are_known_by_their_content():
    """Given again as an equal object, through a scheme conversion, or to an unpickled model,
    the fitted documents get the fitted posteriors (their cross-fitted prior), not the
    all-documents text model's."""
    import pickle
    seq, _ = simulated_spans(n_docs=60, seed=1, good=1)
    calibrated = CalibratedThreshold("text_prior_dawid_skene", scheme="BIO").fit(seq)
    assert np.array_equal(calibrated.predict_proba(seq), calibrated.predict_proba())
    assert np.array_equal(calibrated.predict(seq), calibrated.predict())
    model = WindowPriorDawidSkene().fit(seq)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.sequences_ is not seq and copy.sequences_.equals(seq)
    assert np.array_equal(copy.predict_proba(seq), model.predict_proba())
    rebuilt, _ = simulated_spans(n_docs=60, seed=1, good=1)          # built again
    assert rebuilt is not seq and rebuilt.equals(seq)
    assert np.array_equal(model.predict(rebuilt), model.predict())
    other, _ = simulated_spans(n_docs=60, seed=2, good=1)
    assert not other.equals(seq) and not seq.equals(seq.with_scheme("BIO"))
    assert not np.array_equal(model.predict_proba(other)[:5], model.predict_proba()[:5])


def test_a_model_fitted_on_votes_scores_those_votes():
    import re
    from crowd_keras.sequences.labeling_functions import apply_lfs, span_lf

    @span_lf(name="letter_a")
    def letter_a(doc):
        return list(re.finditer(r"a", doc.text))

    seq, _ = simulated_spans(n_docs=40, seed=1)
    votes = apply_lfs(seq, [letter_a], progress=False)
    model = WindowPriorDawidSkene().fit(votes)
    assert np.array_equal(model.predict(votes), model.predict())
    assert len(model.predict_spans(votes)) == len(model.predict_spans())
    others = apply_lfs(seq, [letter_a], progress=False)
    with pytest.raises(Exception, match="scores the labeling-function votes it was fitted on"):
        model.predict(others)


def test_the_span_length_prior_refuses_a_calibrated_model_inside():
    seq, _ = simulated_spans(n_docs=30, seed=1)
    for inner in (CalibratedThreshold("dawid_skene"), CalibratedThreshold("dawid_skene",
                                                                          scheme="BIO")):
        with pytest.raises(ValueError, match=r"wrap the other way, CalibratedThreshold\("
                                             r"SpanLengthPrior"):
            SpanLengthPrior(inner).fit(seq)
    assert CalibratedThreshold(SpanLengthPrior("dawid_skene")).fit(seq).predict().shape == \
        (seq.n_tokens,)


def test_a_document_nobody_annotated_moves_no_other_documents_fold():
    """The folds were dealt by rank among every document, so an export's unannotated task
    shifted the folds, the priors (by up to 0.23 here) and the tags of annotated ones. What
    is left is the inner Dawid-Skene's class totals, which the unannotated tokens' posteriors
    (the prior) enter: within EM's tolerance."""
    seq, _ = simulated_spans(n_docs=40, seed=1)
    plus = SequenceAnnotations(
        seq.texts + ["k j i h g f e d c b a"], np.append(seq.doc_ids, 10_000),
        seq.annotator_ids, seq.labels, seq.assign_doc, seq.assign_annotator, seq.span_assign,
        seq.span_start, seq.span_end, seq.span_label, scheme=seq.scheme)
    alone = WindowPriorDawidSkene().fit(seq)
    with_extra = WindowPriorDawidSkene().fit(plus)
    n = seq.n_tokens
    np.testing.assert_allclose(with_extra.token_prior_[:n], alone.token_prior_, atol=1e-4)
    np.testing.assert_allclose(with_extra.predict_proba()[:n], alone.predict_proba(), atol=1e-4)
    assert np.array_equal(with_extra.predict()[:n], alone.predict())
    assert np.isfinite(with_extra.token_prior_[n:]).all()
