"""SpanLengthPrior: the crowd's tag chain combined with a token model's posteriors."""
import itertools

import numpy as np
import pandas as pd
import pytest

from crowd_keras.sequences.annotations import SequenceAnnotations
from crowd_keras.sequences.length_prior import (SpanLengthPrior, annotation_transitions,
                                                stationary)
from crowd_keras.sequences.models import TokenDawidSkene
from crowd_keras.sequences.quality import token_prf
from crowd_keras.sequences.registry import get_sequence_model, sequence_model_class

from sequence_data import simulated_spans


@pytest.fixture(scope="module")
def crowd():
    return simulated_spans(n_docs=60, per_doc=4, seed=5)


def test_transitions_count_each_annotations_adjacent_tags(crowd):
    seq, _ = crowd
    k = seq.n_tags
    counts, starts = np.zeros((k, k)), np.zeros(k)
    for a in np.unique(seq.obs_assign):          # one annotation at a time, by hand
        rows = np.flatnonzero(seq.obs_assign == a)
        tok, tag = seq.obs_token[rows], seq.obs_tag[rows]
        starts[tag[0]] += 1
        for i in range(1, len(rows)):
            if tok[i] == tok[i - 1] + 1:
                counts[tag[i - 1], tag[i]] += 1
    A, p0 = annotation_transitions(seq, smoothing=0.5)
    np.testing.assert_allclose(A, (counts + 0.5) / (counts + 0.5).sum(1, keepdims=True))
    np.testing.assert_allclose(p0, (starts + 0.5) / (starts + 0.5).sum())
    pi = stationary(A)
    np.testing.assert_allclose(pi @ A, pi, atol=1e-12)
    assert pi.sum() == pytest.approx(1.0)


def _brute_force(q, pi, A, p0):
    """Marginals of p(z) ∝ p0(z1) Π A[z_{t-1}, z_t] Π q_t(z_t) / π(z_t), by enumeration."""
    n, k = q.shape
    marg = np.zeros((n, k))
    for z in itertools.product(range(k), repeat=n):
        w = p0[z[0]] * np.prod([A[z[t - 1], z[t]] for t in range(1, n)])
        w *= np.prod([q[t, z[t]] / pi[z[t]] for t in range(n)])
        marg[np.arange(n), z] += w
    return marg / marg.sum(1, keepdims=True)


def _tiny_crowd():
    """Six short documents (5-9 one-letter tokens), three annotators each."""
    rng = np.random.default_rng(0)
    texts, rows, seen = [], [], []
    for d in range(6):
        n = 5 + d % 5
        texts.append(" ".join("abcdefghi"[:n]))
        for w in range(3):
            seen.append((d, f"w{w}"))
            s = int(rng.integers(0, n - 2))
            e = s + int(rng.integers(1, 3))
            rows.append((d, f"w{w}", 2 * s, 2 * e - 1))
    frame = pd.DataFrame(rows, columns=["doc", "annotator", "start", "end"])
    return SequenceAnnotations.from_spans(texts, frame, seen=seen, scheme="IO")


def test_combination_is_the_chain_posterior_of_every_document():
    seq = _tiny_crowd()
    model = SpanLengthPrior(TokenDawidSkene()).fit(seq)
    q = model.model_.posteriors_
    for d in range(seq.n_docs):                  # every tag sequence of every document
        lo, hi = seq.tokens.doc_ptr[d], seq.tokens.doc_ptr[d + 1]
        np.testing.assert_allclose(
            model.posteriors_[lo:hi],
            _brute_force(q[lo:hi], model.tag_frequencies_, model.transitions_, model.initial_),
            atol=1e-10)
    np.testing.assert_allclose(model.predict_proba(seq), model.posteriors_, atol=1e-12)


def test_a_chain_without_memory_leaves_the_token_posteriors(crowd):
    seq, _ = crowd
    model = SpanLengthPrior(TokenDawidSkene()).fit(seq)
    q = model.model_.posteriors_
    pi = model.tag_frequencies_
    model.transitions_, model.initial_ = np.tile(pi, (seq.n_tags, 1)), pi
    # the documents in another order: the fitted ones would return the fitted posteriors
    order = seq.doc_ids[::-1]
    rows = np.concatenate([np.arange(seq.tokens.doc_ptr[d], seq.tokens.doc_ptr[d + 1])
                           for d in range(seq.n_docs)[::-1]])
    np.testing.assert_allclose(model.predict_proba(seq.subset(order)), q[rows], atol=1e-10)


def test_fits_the_simulated_crowd_and_decodes_at_one_half(crowd):
    seq, truth = crowd
    model = get_sequence_model("span_length_prior", model="dawid_skene").fit(seq)
    assert sequence_model_class("chain") is SpanLengthPrior
    assert ((model.predict() > 0) == (model.posteriors_[:, 1] > 0.5)).all()
    assert token_prf(model.predict() > 0, truth > 0)[2] > 0.85
    spans = model.predict_spans()
    assert len(spans) and set(spans.columns) >= {"doc", "start", "end", "score"}
    assert model.get_params() == {"model": "dawid_skene", "smoothing": 1.0}
    with pytest.raises(ValueError, match="smoothing"):
        SpanLengthPrior(smoothing=0).fit(seq)
    with pytest.raises(TypeError, match="sequence model name or a SequenceLabelModel"):
        SpanLengthPrior(model=3).fit(seq)
