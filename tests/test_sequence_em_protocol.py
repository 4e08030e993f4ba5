"""Token Dawid-Skene and HMM-Crowd on the EM-step protocol: the fit split into blocks of whole
documents is the fit over one block, and the labels are those recorded before the move
(sha256 digests, ``tests/sequence_label_digests.py``)."""
import json

import numpy as np
import pytest

from conftest import require_data
from crowd_keras import CrowdDataError
from crowd_keras.aggregation.em import Block, Summary, add, run_em
from crowd_keras.sequences.em import (DocumentBlock, SequenceSummary, document_blocks)
from crowd_keras.sequences.hmm import HMMCrowd
from crowd_keras.sequences.models import TokenDawidSkene
from sequence_data import simulated_spans
from sequence_label_digests import CASES, RECORD, SLOW, _text_prior, run_case

FITTED = ("predict_proba", "confusion_matrices_", "class_priors_", "log_likelihood_")


@pytest.fixture(scope="module", params=["IO", "BIO"])
def crowd(request):
    return simulated_spans(n_docs=80, seed=1, scheme=request.param)[0]


def partitions(seq):
    """One block, four contiguous runs of documents, and three shuffled groups."""
    shuffled = np.random.default_rng(3).permutation(seq.n_docs)
    return {"one": 1, "runs": 4, "shuffled": np.array_split(shuffled, 3)}


def assert_same_fit(one, split, extra=()):
    assert split.n_iter_ == one.n_iter_
    for name in FITTED + tuple(extra):
        a, b = getattr(one, name), getattr(split, name)
        a, b = (a(), b()) if callable(a) else (a, b)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-8, err_msg=name)
    np.testing.assert_array_equal(split.predict(), one.predict())


@pytest.mark.parametrize("with_prior", [False, True])
def test_token_dawid_skene_over_blocks_of_documents_is_the_one_block_fit(crowd, with_prior):
    prior = _text_prior(crowd) if with_prior else None
    one = TokenDawidSkene(temperature=0.7, progress=False).fit(crowd, token_prior=prior)
    for name, blocks in partitions(crowd).items():
        parts = document_blocks(crowd, blocks, token_prior=prior)
        assert len(parts) == {"one": 1, "runs": 4, "shuffled": 3}[name]
        split = TokenDawidSkene(temperature=0.7, progress=False).fit_blocks(crowd, parts)
        assert_same_fit(one, split, ("em_posteriors_", "emission_loglik_",
                                     "pooled_confusion_"))
        np.testing.assert_allclose(split.tempered_proba(0.3), one.tempered_proba(0.3),
                                   rtol=0, atol=1e-8)


@pytest.mark.parametrize("decode", ["posterior", "viterbi"])
def test_hmm_crowd_over_blocks_of_whole_documents_is_the_one_block_fit(crowd, decode):
    one = HMMCrowd(decode=decode, progress=False).fit(crowd)
    for blocks in partitions(crowd).values():
        split = HMMCrowd(decode=decode, progress=False).fit_blocks(
            crowd, document_blocks(crowd, blocks))
        assert_same_fit(one, split, ("transitions_", "initial_"))
        np.testing.assert_allclose(split.log_likelihood(), one.log_likelihood(), atol=1e-8)


@pytest.mark.slow
def test_on_pico_five_blocks_of_abstracts_give_the_one_block_fit():
    from crowd_keras.datasets import load_pico

    seq = load_pico(require_data("pico"), splits=("acl17-test",), scheme="BIO").sequences
    for model in (TokenDawidSkene(progress=False), HMMCrowd(progress=False)):
        one = model.fit(seq)
        split = type(model)(progress=False).fit_blocks(seq, document_blocks(seq, 5))
        assert_same_fit(one, split)


def test_a_block_holds_whole_documents_and_their_chains(crowd):
    blocks = document_blocks(crowd, 3)
    ann = crowd.annotations
    for block in blocks:
        docs = np.unique(crowd.tokens.doc[block.item_ids])
        assert block.tokens.n_docs == len(docs)
        assert block.tokens.n_tokens == crowd.tokens.lengths[docs].sum() == block.n_items
        assert block.X.shape == (block.n_items, ann.n_annotators * crowd.n_tags)
        assert block.chains.n_slots == block.n_items       # every simulated document is seen
    summary = add(*[b.summary(crowd.n_tags) for b in blocks])
    assert isinstance(summary, SequenceSummary) and summary.scheme == crowd.scheme
    assert summary.n_items == crowd.n_tokens and summary.n_annotations == ann.n_annotations
    np.testing.assert_array_equal(summary.votes, ann.annotator_label_counts())


def test_run_em_drives_the_sequence_models_through_any_block_mapper(crowd):
    """run_em only hands blocks to the model's own steps: a mapper that evaluates the blocks
    in reverse order (as a distributed engine may) gives the same parameters."""
    blocks = document_blocks(crowd, 4)
    summary = add(*[b.summary(crowd.n_tags) for b in blocks])

    def reversed_map(fn, bs):
        return [fn(b) for b in bs[::-1]][::-1]

    run = run_em(HMMCrowd(progress=False), blocks, summary, map_blocks=reversed_map)
    fitted = HMMCrowd(progress=False).fit(crowd)
    log_pi, A, p0 = run.state
    np.testing.assert_allclose(A, fitted.transitions_, atol=1e-8)
    np.testing.assert_allclose(p0, fitted.initial_, atol=1e-8)
    np.testing.assert_allclose(np.exp(log_pi), fitted.confusion_matrices_, atol=1e-8)
    assert len(run.history) == fitted.n_iter_


def test_token_dawid_skene_steps_run_on_plain_blocks_of_tokens(crowd):
    """Tokens are independent under token Dawid-Skene: its steps take any Block of tokens."""
    ann = crowd.annotations
    tokens = np.arange(ann.n_items)
    blocks = [Block.from_annotations(ann.subset(part)) for part in (tokens[:500], tokens[500:])]
    run = run_em(TokenDawidSkene(progress=False), blocks,
                 add(*[b.summary(crowd.n_tags) for b in blocks]))
    fitted = TokenDawidSkene(progress=False).fit(crowd)
    np.testing.assert_allclose(run.state[0], fitted.class_priors_, atol=1e-8)
    np.testing.assert_allclose(np.exp(run.state[1]), fitted.confusion_matrices_, atol=1e-8)
    assert len(run.history) == fitted.n_iter_


def test_blocks_must_cover_every_token_once_and_hmm_takes_no_token_prior(crowd):
    blocks = document_blocks(crowd, 3)
    with pytest.raises(CrowdDataError, match="exactly once"):
        TokenDawidSkene(progress=False).fit_blocks(crowd, blocks[:2])
    with pytest.raises(CrowdDataError, match="exactly once"):
        TokenDawidSkene(progress=False).fit_blocks(crowd, blocks + blocks[:1])
    with pytest.raises(TypeError, match="DocumentBlock"):
        TokenDawidSkene(progress=False).fit_blocks(crowd, [])
    with pytest.raises(ValueError, match="document 0 is in 2 blocks"):
        document_blocks(crowd, [[0, 1], [0, 2]])
    with pytest.raises(ValueError, match="at least 1"):
        document_blocks(crowd, 0)
    with pytest.raises(ValueError, match="outside"):
        document_blocks(crowd, [[crowd.n_docs]])
    with pytest.raises(ValueError, match="no token_prior"):
        HMMCrowd(progress=False).fit_blocks(crowd, document_blocks(crowd, 2, _text_prior(crowd)))
    with pytest.raises(TypeError, match="SequenceAnnotations"):
        TokenDawidSkene().fit_block(crowd.annotations)
    with pytest.raises(TypeError, match="SequenceSummary"):
        HMMCrowd().init_state(Summary(1, 1, 1, np.ones((1, crowd.n_tags), np.int64)))
    with pytest.raises(ValueError, match="init posteriors must have shape"):
        TokenDawidSkene(init=np.ones((3, crowd.n_tags))).fit(crowd)
    with pytest.raises(ValueError, match="temperature"):
        TokenDawidSkene(temperature=0).fit(crowd)


def test_an_init_array_is_cut_with_the_blocks(crowd):
    init = np.random.default_rng(2).dirichlet(np.ones(crowd.n_tags), size=crowd.n_tokens)
    one = TokenDawidSkene(init=init, max_iter=3, progress=False).fit(crowd)
    split = TokenDawidSkene(init=init, max_iter=3, progress=False).fit_blocks(
        crowd, document_blocks(crowd, partitions(crowd)["shuffled"]))
    assert_same_fit(one, split, ("em_posteriors_",))
    assert isinstance(document_blocks(crowd)[0], DocumentBlock)


def test_auto_progress_stays_silent_on_a_short_sequence_fit(crowd, capsys):
    """``progress="auto"`` reaches the loop as "auto" (lines only after a few seconds), not
    as a progress bar from the first iteration."""
    TokenDawidSkene().fit(crowd)
    HMMCrowd().fit(crowd)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- labels as recorded
def _case_params():
    for name in sorted(CASES):
        marks = [pytest.mark.slow] if name in SLOW else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", _case_params())
def test_labels_and_iterations_are_those_recorded(name):
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    root = require_data("pico") if CASES[name][0] == "pico" else None
    assert run_case(name, root) == record[name]
