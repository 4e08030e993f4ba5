"""Token-level sequence label models: majority vote and Dawid-Skene (with a text prior and
tempered decoding). Each token is an item; the document order is used only to turn tags into
spans. The sequence-aware model is :class:`~.hmm.HMMCrowd`.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ..aggregation.dawid_skene import sufficient_statistics
from ..aggregation.em import Block, Summary
from ..arguments import check_number
from ..numerics import normalize_rows, soft_vote, softmax_rows
from .annotations import SequenceAnnotations
from .base import (SequenceLabelModel, emission_loglik, pooled_m_step, prior_logits,
                   token_log_prior)
from .em import DocumentBlock, SequenceEMModel

__all__ = ["TokenMajorityVote", "TokenDawidSkene"]


class TokenMajorityVote(SequenceLabelModel):
    """Token majority vote among the annotators who saw the document.

    ``predict_proba`` is the share of those annotators giving each tag; a token is tagged when
    at least half of them tagged it (the PICO README's "token majority"), with the most
    voted tag. Tokens nobody saw get the overall tag frequencies of the fitted votes,
    ``tag_frequencies_`` (K,) (no vote at all: ``O``), in new sequences too. Confusion matrices
    count each annotator's tags against the decoded tags (+ 0.01, row-normalised).
    """

    _ties_positive = True

    def __init__(self) -> None:
        pass

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None) -> "TokenMajorityVote":
        seq = self._check_fit_sequences(sequences)
        if token_prior is not None:
            raise ValueError("TokenMajorityVote takes no token_prior")
        ann = seq.annotations
        k = seq.n_tags
        votes = ann.label_counts().sum(0)
        # uniform shares would tie at one half and tag every unseen token (ties_positive)
        self.tag_frequencies_ = votes / votes.sum() if votes.sum() > 0 else np.eye(k)[0]
        post = _vote_shares(ann.label_counts(), self.tag_frequencies_)
        tags = self._decode(post, seq)
        cell = (ann.annotators * k + tags[ann.items]) * k + ann.labels
        counts = np.bincount(cell, minlength=ann.n_annotators * k * k).reshape(-1, k, k)
        seen = ann.annotations_per_item() > 0
        prior = normalize_rows(np.bincount(tags[seen], minlength=k) + 1e-2)
        self._set_fitted(seq, post, np.log(normalize_rows(counts + 1e-2)), prior)
        return self

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        if token_prior is not None:
            raise ValueError("TokenMajorityVote takes no token_prior")
        return _vote_shares(self._aligned(sequences).label_counts(), self.tag_frequencies_)


def _vote_shares(counts: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """(T, K) share of the annotators giving each tag; ``frequencies`` (K,) where none did."""
    post = soft_vote(counts)
    post[counts.sum(axis=1) == 0] = frequencies
    return post


class TokenDawidSkene(SequenceEMModel):
    """Token Dawid-Skene with shrinkage, an optional per-token text prior and tempering.

    Model (tokens independent): ``z_t ~ Cat(q_t)`` with ``q_t`` the given ``token_prior[t]``
    (e.g. a text tagger's ``p(tag | text)``; Raykar et al. 2010 with the classifier held
    fixed) where there is one and the learned tag prior ``ρ`` elsewhere; each annotator ``w``
    who saw the document labels the token ``y_tw | z_t ~ Cat(π_w[z_t])`` (Dawid & Skene 1979).

    EM: E-step ``p(z_t | y) ∝ q_t(z) Π_w π_w[z, y_tw]``; M-step :func:`~.base.pooled_m_step`,
    which adds ``prior_strength · π̄`` (the pooled annotator's confusion) to each annotator's
    expected counts: annotators with few tokens are pulled toward the crowd's behaviour.
    Stops when the log-likelihood changes by less than ``tol`` (relative). The steps are the
    EM-step protocol (:mod:`crowd_keras.aggregation.em`) over blocks of documents
    (:mod:`.em`): the statistics are Dawid-Skene's
    (:func:`~crowd_keras.aggregation.dawid_skene.sufficient_statistics`), sums over tokens, so
    :meth:`fit_blocks` over any split of the documents is the same fit.

    Decoding (``predict_proba``): the tempered marginal
    ``p_τ(z_t) ∝ q_t(z) · exp(τ Σ_w log π_w[z, y_tw])`` (``temperature`` τ; the fitted π, ρ are
    unchanged). The model treats annotators as conditionally independent given the tag, but
    on spans their errors are correlated, so with τ = 1 its posteriors are over-confident;
    τ < 1 discounts the crowd's evidence against the prior. Choose τ without gold with
    :func:`~.selection.choose_temperature` (held-out annotator likelihood).

    Args:
        prior_strength: pseudo-count ``s`` of the shrinkage toward the pooled confusion.
        temperature: τ of the decoding (1 = the plain posterior).
        smoothing: Dirichlet pseudo-count on every confusion cell and on ρ.
        max_iter, tol: EM iterations and relative log-likelihood tolerance.
        init: ``"mv"`` (vote shares) or a (T, K) array of initial posteriors.
        progress: ``"auto"`` (default): a line on stderr every few seconds once the fit has
            run a few seconds (a long fit is never silent); ``True``: a progress bar from the
            start; ``False``: nothing.

    Attributes (besides the common ones): em_posteriors_ (T, K) untempered posteriors,
    emission_loglik_ (T, K) ``Σ_w log π_w[z, y_tw]``, pooled_confusion_ (K, K),
    log_likelihood_ (per EM iteration, per token-label), n_iter_.
    """

    def __init__(self, prior_strength: float = 3.0, temperature: float = 1.0,
                 smoothing: float = 0.01, max_iter: int = 100, tol: float = 1e-7,
                 init: Any = "mv", progress: Any = "auto") -> None:
        self.prior_strength = prior_strength
        self.temperature = temperature
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.progress = progress

    # the EM-step protocol (crowd_keras.aggregation.em) over blocks of documents (.em)
    def init_state(self, summary: Summary) -> "TokenDawidSkene":
        if check_number(self.temperature, f"{type(self).__name__} temperature") == 0:
            raise ValueError(f"{type(self).__name__} temperature must be positive, got "
                             f"{self.temperature!r}")
        super().init_state(summary)
        if isinstance(self.init, str):
            if self.init != "mv":
                raise ValueError(f"init must be 'mv' or an array, got {self.init!r}")
        else:
            post = np.asarray(self.init, np.float64)
            shape = (summary.n_items, summary.n_classes)
            if post.shape != shape:
                raise ValueError(f"init posteriors must have shape {shape}, got {post.shape}")
            ok = (np.isfinite(post) & (post >= 0)).all(1) & np.isclose(post.sum(1), 1.0,
                                                                         atol=1e-4)
            if not ok.all():   # NaN or negative rows made NaN posteriors
                t = int(np.argmin(ok))
                raise ValueError(f"init posteriors must be probabilities summing to 1; row {t} "
                                 f"is {post[t].tolist()}")
        return self

    def initial_posteriors(self, block: Block) -> np.ndarray:
        """The soft majority vote (tokens without labels: the crowd's tag shares), or the
        block's rows of ``init``."""
        if isinstance(self.init, str):
            return super().initial_posteriors(block)
        return np.asarray(self.init, np.float64)[block.item_ids]

    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        return sufficient_statistics(block.XT, latent)

    def m_step(self, stats: tuple) -> tuple:
        """``(prior, log_pi, pooled)`` of :func:`~.base.pooled_m_step`."""
        return pooled_m_step(*stats, self.prior_strength, self.smoothing)

    def e_step(self, block: Block, state: tuple) -> tuple:
        """Untempered posteriors ``p(z_t | y) ∝ q_t(z) Π_w π_w[z, y_tw]`` (T_b, K) and the
        block's summed log-likelihood (the tokens are independent: any block of tokens, a
        :class:`~.em.DocumentBlock` with its token prior or a plain one)."""
        prior, log_pi, _ = state
        em = emission_loglik(block.X, log_pi)
        token_prior = getattr(block, "token_prior", None)
        logits = block.with_log_prior(em + prior_logits(prior, token_prior, block.n_items))
        post, log_norm = softmax_rows(logits)
        return post, float(log_norm.sum())

    def finish(self, state: tuple, summary: Summary, template: Any,
               history: Sequence[float]) -> "TokenDawidSkene":
        prior, log_pi, pooled = state
        self._log_pi = log_pi
        self.pooled_confusion_ = pooled
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        self.annotations_ = template
        self.class_priors_ = prior
        self.confusion_matrices_ = np.exp(log_pi)
        return self

    def _fit_tokens(self, sequences: SequenceAnnotations, blocks: List[DocumentBlock],
                    posteriors: np.ndarray) -> None:
        self.em_posteriors_ = posteriors
        self.emission_loglik_ = np.zeros_like(posteriors)
        for block in blocks:
            self.emission_loglik_[block.item_ids] = emission_loglik(block.X, self._log_pi)
        priors = [(b.token_prior[0], b.item_ids[b.token_prior[1]]) for b in blocks
                  if b.token_prior is not None]
        self._prior_rows = None if not priors else (
            np.concatenate([q for q, _ in priors]), np.concatenate([r for _, r in priors]))
        self._set_fitted(sequences, self.tempered_proba(self.temperature), self._log_pi,
                         self.class_priors_)

    def tempered_proba(self, temperature: float) -> np.ndarray:
        """(T, K) ``p_τ(z_t) ∝ q_t(z) exp(τ e_t(z))`` of the fitted tokens for any τ (the same
        fit; this is how :func:`~.selection.choose_temperature` scores a grid of τ)."""
        if not hasattr(self, "emission_loglik_"):   # fit calls this before posteriors_ is set
            self._check_fitted()
        temperature = check_number(temperature, "temperature")   # τ = 0: the prior alone
        logits = temperature * self.emission_loglik_ + prior_logits(
            self.class_priors_, self._prior_rows, len(self.emission_loglik_))
        return softmax_rows(logits)[0]

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        ann = self._aligned(sequences)
        em = emission_loglik(ann.vote_incidence(), np.log(self.confusion_matrices_))
        rows = token_log_prior(token_prior, ann.n_items, sequences.n_tags)
        return softmax_rows(self.temperature * em + prior_logits(self.class_priors_, rows,
                                                               ann.n_items))[0]
