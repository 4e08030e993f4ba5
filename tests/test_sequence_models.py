"""Sequence label models: forward-backward, token MV / DS / HMM-Crowd, quality, selection."""
import itertools

import numpy as np
import pandas as pd
import pytest

from crowd_keras import CrowdDataError
from crowd_keras.aggregation import available_label_models
from crowd_keras.aggregation.dawid_skene import m_step, sufficient_statistics
from crowd_keras.errors import NotFittedError
from crowd_keras.numerics import softmax_rows
from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.base import decode_marginals, shrunk_m_step
from crowd_keras.sequences.chains import Chains, forward_backward, forward_loglik, viterbi
from crowd_keras.sequences.hmm import HMMCrowd, allowed_moves
from crowd_keras.sequences.models import TokenDawidSkene, TokenMajorityVote
from crowd_keras.sequences.quality import spans_token_mask, token_confusions, token_prf
from crowd_keras.sequences.registry import available_sequence_models, get_sequence_model
from crowd_keras.sequences.selection import (choose_temperature, heldout_annotations,
                                             heldout_log_likelihood, heldout_scores)
from crowd_keras.sequences.tokens import tokenize
from sequence_data import simulated_spans


@pytest.fixture(scope="module")
def crowd():
    return simulated_spans(n_docs=80, seed=1)


# ---------------------------------------------------------------------------- chains
def test_forward_backward_and_viterbi_match_brute_force_enumeration():
    rng = np.random.default_rng(0)
    tok = tokenize([" ".join(["w"] * int(rng.integers(0, 6))) for _ in range(9)])
    k = 3
    norm = lambda x: x / x.sum(-1, keepdims=True)        # noqa: E731
    em, A, p0 = rng.normal(size=(tok.n_tokens, k)), norm(rng.random((k, k))), norm(rng.random(k))
    ch = Chains(tok)
    gamma, xi, init, ll = forward_backward(ch, em, A, p0)
    path = viterbi(ch, em, np.log(A), np.log(p0))
    G, XI, LL, VT = np.zeros((tok.n_tokens, k)), np.zeros((k, k)), np.zeros(tok.n_docs), \
        np.zeros(tok.n_tokens, int)
    for d in range(tok.n_docs):
        a, n = tok.doc_ptr[d], tok.lengths[d]
        if n == 0:
            continue
        z, best, xd = 0.0, (-np.inf, None), np.zeros((k, k))
        for p in itertools.product(range(k), repeat=n):
            lp = np.log(p0[p[0]]) + sum(em[a + i, p[i]] for i in range(n)) + sum(
                np.log(A[p[i - 1], p[i]]) for i in range(1, n))
            w = np.exp(lp)
            z += w
            best = max(best, (lp, p))
            for i in range(n):
                G[a + i, p[i]] += w
            for i in range(1, n):
                xd[p[i - 1], p[i]] += w
        G[a:a + n] /= z
        XI += xd / z
        LL[d] = np.log(z)
        VT[a:a + n] = best[1]
    got = np.zeros((tok.n_tokens, k))
    got[ch.tok] = gamma
    np.testing.assert_allclose(got, G, atol=1e-10)
    lls = np.zeros(tok.n_docs)
    lls[ch.docs] = ll
    np.testing.assert_allclose(lls, LL, atol=1e-10)
    lls[ch.docs] = forward_loglik(ch, em, A, p0)
    np.testing.assert_allclose(lls, LL, atol=1e-10)
    v = np.zeros(tok.n_tokens, int)
    v[ch.tok] = path
    assert (v == VT).all()
    np.testing.assert_allclose(xi, XI, atol=1e-10)
    np.testing.assert_allclose(init, G[tok.doc_ptr[:-1][tok.lengths > 0]].sum(0), atol=1e-10)


def test_bio_constraint_forbids_entering_inside_from_outside():
    allowed, start = allowed_moves("BIO", 5, True)       # O, B-a, I-a, B-b, I-b
    assert not allowed[0, 2] and not allowed[3, 2] and allowed[1, 2] and allowed[2, 2]
    assert not allowed[1, 4] and allowed[3, 4] and start.tolist() == [1, 1, 0, 1, 0]
    assert allowed_moves("IO", 2, True)[0].all()


# ---------------------------------------------------------------------------- M-step
def test_shrunk_m_step_adds_the_pooled_confusion_to_the_counts_before_m_step(crowd):
    seq, _ = crowd
    ann = seq.annotations
    XT = ann.vote_incidence().T.tocsr()
    post = softmax_rows(np.random.default_rng(0).normal(size=(ann.n_items, 2)))[0]
    prior, log_pi, pooled = shrunk_m_step(XT, post, 3.0, 0.01)
    counts, mass = sufficient_statistics(XT, post)
    c = counts.reshape(-1, 2, 2).transpose(0, 2, 1)                 # (w, true, label)
    expect = c + 3.0 * pooled + 0.01
    np.testing.assert_allclose(np.exp(log_pi), expect / expect.sum(2, keepdims=True))
    np.testing.assert_allclose(pooled, (c.sum(0) + 0.01) / (c.sum(0) + 0.01).sum(1, keepdims=True))
    np.testing.assert_allclose(prior, m_step(counts, mass, 0.01)[0])
    _, plain, _ = shrunk_m_step(XT, post, 0.0, 0.01)
    np.testing.assert_allclose(plain, m_step(counts, mass, 0.01)[1])


# ---------------------------------------------------------------------------- models
def test_dawid_skene_and_hmm_beat_majority_vote_on_a_crowd_with_spammers(crowd):
    seq, truth = crowd
    f1 = {}
    for name in available_sequence_models():
        model = get_sequence_model(name).fit(seq)
        tags = model.predict()
        f1[name] = token_prf(tags > 0, truth > 0)[2]
        # the decoded spans are exactly the tagged tokens
        mask = spans_token_mask(seq, model.predict_spans())
        assert (mask == (tags > 0)).all(), name
        assert model.predict_proba().shape == (seq.n_tokens, 2)
        np.testing.assert_allclose(model.predict_proba().sum(1), 1.0)
    assert f1["dawid_skene"] > f1["majority_vote"] + 0.05, f1
    assert f1["hmm_crowd"] > f1["majority_vote"], f1
    assert f1["dawid_skene"] > 0.9, f1


def test_majority_vote_tags_at_least_half():
    seq, _ = simulated_spans(n_docs=5, per_doc=2, seed=3)
    mv = TokenMajorityVote().fit(seq)
    share = seq.annotations.label_counts(normalize=True)[:, 1]
    seen = seq.annotations.annotations_per_item() > 0
    assert ((mv.predict() == 1)[seen] == (share >= 0.5)[seen]).all()
    assert decode_marginals(np.array([[0.5, 0.5]]), ties_positive=True).tolist() == [1]
    assert decode_marginals(np.array([[0.5, 0.5]])).tolist() == [0]
    with pytest.raises(ValueError, match="no token_prior"):
        TokenMajorityVote().fit(seq, token_prior=np.full(seq.n_tokens, 0.5))


def test_tempering_and_token_prior_change_only_the_decoding_formula(crowd):
    seq, truth = crowd
    rng = np.random.default_rng(0)
    p = np.where(rng.random(seq.n_tokens) < 0.3, np.nan, rng.random(seq.n_tokens))
    ds = TokenDawidSkene(temperature=0.5).fit(seq, token_prior=p)
    rho = ds.class_priors_
    log_prior = np.tile(np.log(rho), (seq.n_tokens, 1))
    has = ~np.isnan(p)
    log_prior[has] = np.log(np.clip(np.stack([1 - p, p], 1)[has], 1e-6, 1))
    np.testing.assert_allclose(ds.predict_proba(),
                               softmax_rows(0.5 * ds.emission_loglik_ + log_prior)[0])
    np.testing.assert_allclose(ds.tempered_proba(1.0), ds.em_posteriors_, atol=1e-10)
    np.testing.assert_allclose(ds.predict_proba(seq, token_prior=p), ds.predict_proba(),
                               atol=1e-10)
    with pytest.raises(CrowdDataError, match="token_prior must have shape"):
        TokenDawidSkene().fit(seq, token_prior=np.ones((3, 2)))
    with pytest.raises(CrowdDataError, match="probabilities"):
        TokenDawidSkene().fit(seq, token_prior=np.full(seq.n_tokens, 2.0))


def test_new_sequences_are_scored_under_the_fitted_model(crowd):
    seq, _ = crowd
    for model in (TokenDawidSkene(), HMMCrowd(), HMMCrowd(decode="viterbi"), TokenMajorityVote()):
        model.fit(seq)
        np.testing.assert_allclose(model.predict_proba(seq), model.predict_proba(), atol=1e-8)
        sub = seq.subset([3, 1])
        _, idx = seq.tokens.subset([3, 1])
        np.testing.assert_allclose(model.predict_proba(sub), model.predict_proba()[idx],
                                   atol=1e-8)
        assert (model.predict(sub) == model.predict()[idx]).all()
    bio = seq.with_scheme("BIO")
    with pytest.raises(CrowdDataError, match="tags"):
        TokenDawidSkene().fit(seq).predict_proba(bio)
    with pytest.raises(CrowdDataError, match="SequenceAnnotations"):
        TokenDawidSkene().fit(seq.annotations)


def test_hmm_bio_viterbi_paths_are_valid_bio(crowd):
    seq, truth = crowd
    bio = seq.with_scheme("BIO")
    hmm = HMMCrowd(decode="viterbi").fit(bio)
    tags = hmm.predict()
    first = bio.tokens.position == 0
    prev = np.r_[0, tags[:-1]]
    assert not ((tags == 2) & (first | (prev == 0))).any()      # no O → I, no start in I
    assert hmm.transitions_[0, 2] == 0 and hmm.initial_[2] == 0
    assert token_prf(tags > 0, truth > 0)[2] > 0.85
    assert np.all(np.diff(hmm.log_likelihood_) > -1e-9)           # EM never goes down


def test_annotator_quality_counts_exact_spans_and_tokens():
    texts = ["a b c d e f"]
    rows = [(0, "x", 0, 3), (0, "x", 8, 11), (0, "y", 0, 1), (0, "z", 0, 3)]
    seq = SequenceAnnotations.from_spans(texts, pd.DataFrame(
        rows, columns=["doc", "annotator", "start", "end"]))
    model = TokenMajorityVote().fit(seq)            # aggregate: tokens a, b
    q = model.annotator_quality_.set_index("annotator")
    assert model.predict().tolist() == [1, 1, 0, 0, 0, 0]
    assert q.loc["x", "n_spans"] == 2 and q.loc["x", "span_precision"] == 0.5
    assert q.loc["x", "span_recall"] == 1.0 and q.loc["y", "span_precision"] == 0.0
    assert q.loc["y", "token_precision"] == 1.0 and q.loc["y", "token_recall"] == 0.5
    assert q.loc["x", "token_precision"] == 0.5
    conf = token_confusions(seq, model.predict())
    assert conf[:, 1, 1].tolist() == [2, 1, 2] and conf[0, 0, 1] == 2
    assert np.isfinite(q["accuracy"]).all()


def test_sequence_models_have_their_own_registry_and_the_estimator_protocol():
    sklearn_base = pytest.importorskip("sklearn.base")
    assert available_sequence_models() == ["majority_vote", "dawid_skene", "hmm_crowd",
                                           "text_prior_dawid_skene", "bsc_seq", "calibrated",
                                           "span_length_prior", "abstain_dawid_skene"]
    assert type(get_sequence_model("hmm")) is HMMCrowd
    assert type(get_sequence_model("DS", temperature=0.3)).__name__ == "TokenDawidSkene"
    with pytest.raises(ValueError, match="unknown sequence model"):
        get_sequence_model("nope")
    assert "hmm_crowd" not in available_label_models()
    model = TokenDawidSkene(temperature=0.3)
    clone = sklearn_base.clone(model)
    assert clone.get_params() == model.get_params() and clone is not model


@pytest.mark.parametrize("name", available_sequence_models())
def test_every_sequence_model_says_when_it_is_not_fitted(name):
    model = get_sequence_model(name)
    for use in (model.predict_proba, model.predict, model.predict_spans,
                lambda: model.annotator_quality_):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            use()
    if isinstance(model, HMMCrowd):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            model.log_likelihood()


# ---------------------------------------------------------------------------- selection
def test_heldout_criterion_hides_one_annotation_per_document_and_scores_it(crowd):
    seq, _ = crowd
    hidden = heldout_annotations(seq, docs=np.arange(40), seed=0)
    per_doc = np.bincount(seq.assign_doc[hidden], minlength=seq.n_docs)
    assert per_doc[:40].max() == 1 and per_doc[40:].sum() == 0 and hidden.sum() == 40
    rest = seq.drop_annotations(hidden)
    ds = TokenDawidSkene().fit(rest)
    ll = heldout_log_likelihood(ds, seq, hidden)
    # by hand: Σ over hidden token-labels of log Σ_z p(z | rest) π_w[z, y]
    obs = hidden[seq.obs_assign]
    w, y, t = seq.assign_annotator[seq.obs_assign[obs]], seq.obs_tag[obs], seq.obs_token[obs]
    manual = np.log((ds.predict_proba()[t] * ds.confusion_matrices_[w, :, y]).sum(1)).mean()
    assert np.isclose(ll, manual)
    hmm = HMMCrowd().fit(rest)
    assert np.isfinite(heldout_log_likelihood(hmm, seq, hidden))
    table = heldout_scores(seq, {"ds": TokenDawidSkene(), "mv": TokenMajorityVote()},
                           np.arange(40), n_draws=2)
    assert table.shape == (4, 4) and set(table["model"]) == {"ds", "mv"}


def test_choose_temperature_scores_every_tau_of_one_fit(crowd):
    seq, _ = crowd
    best, table = choose_temperature(seq, docs=np.arange(40), temperatures=(0.3, 1.0), n_draws=2)
    assert table["temperature"].tolist() == [0.3, 1.0] and best in (0.3, 1.0)
    assert best == table.loc[table["heldout_loglik"].idxmax(), "temperature"]


def test_the_heldout_criterion_says_when_there_is_nothing_to_hold_out():
    """One annotation per document: no draw can hide one, so there is no score (a clear
    error, not a NaN score or pandas' all-NA error)."""
    seq = SequenceAnnotations.from_dict({d: "a b c d" for d in range(3)},
                                        {d: {"x": [[0, 3]]} for d in range(3)})
    assert not heldout_annotations(seq).any()
    with pytest.raises(CrowdDataError, match="no annotation to hold out"):
        heldout_scores(seq, {"ds": TokenDawidSkene()}, n_draws=1)
    with pytest.raises(CrowdDataError, match="no annotation to hold out"):
        choose_temperature(seq, temperatures=(0.5, 1.0), n_draws=1)


def test_a_corpus_without_annotations_is_refused_and_unseen_tokens_stay_outside():
    texts = {"a": "40 adults with asthma", "b": "no match here"}
    none = SequenceAnnotations.from_spans(texts, pd.DataFrame(
        columns=["doc", "annotator", "start", "end"]))
    for name in available_sequence_models():
        if name != "abstain_dawid_skene":       # its own message: tests/test_span_labeling_...
            with pytest.raises(CrowdDataError, match="nothing to fit, none of the 2 documents "
                                                     "has an annotation"):
                get_sequence_model(name).fit(none)
    seq = SequenceAnnotations.from_spans(texts, pd.DataFrame(
        {"doc": ["a", "a", "b"], "annotator": ["x", "y", "x"], "start": [0, 0, 0],
         "end": [9, 2, 2]}))
    mv = TokenMajorityVote().fit(seq)
    np.testing.assert_allclose(mv.tag_frequencies_, [7 / 11, 4 / 11])   # 4 of 11 votes in
    # new documents marked only by an annotator the model never met: nobody it knows saw them,
    # so their tokens get the fitted frequencies (not a tie at one half tagging the document)
    new = SequenceAnnotations.from_spans({"n": "the adults got placebo"}, pd.DataFrame(
        {"doc": ["n"], "annotator": ["stranger"], "start": [4], "end": [10]}))
    np.testing.assert_allclose(mv.predict_proba(new), np.tile(mv.tag_frequencies_, (4, 1)))
    assert mv.predict_spans(new).empty
