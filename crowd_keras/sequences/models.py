"""Token-level sequence label models: majority vote and Dawid-Skene (with a text prior and
tempered decoding). Each token is an item; the document order is used only to turn tags into
spans. The sequence-aware model is :class:`~.hmm.HMMCrowd`.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..numerics import normalize_rows, soft_vote, softmax_rows
from ..progress import Convergence
from .annotations import SequenceAnnotations
from .base import (SequenceLabelModel, emission_loglik, shrunk_m_step, token_log_prior)

__all__ = ["TokenMajorityVote", "TokenDawidSkene"]


class TokenMajorityVote(SequenceLabelModel):
    """Token majority vote among the annotators who saw the document.

    ``predict_proba`` is the share of those annotators giving each tag; a token is tagged when
    at least half of them tagged it (the PICO README's "token majority"), with the most
    voted tag. Tokens nobody saw get the overall tag frequencies. Confusion matrices count
    each annotator's tags against the decoded tags (+ 0.01, row-normalised).
    """

    _ties_positive = True

    def __init__(self) -> None:
        pass

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None) -> "TokenMajorityVote":
        seq = self._check_sequences(sequences)
        if token_prior is not None:
            raise ValueError("TokenMajorityVote takes no token_prior")
        ann = seq.annotations
        post = soft_vote(ann.label_counts())
        tags = self._decode(post, seq)
        k = seq.n_tags
        cell = (ann.annotators * k + tags[ann.items]) * k + ann.labels
        counts = np.bincount(cell, minlength=ann.n_annotators * k * k).reshape(-1, k, k)
        seen = ann.annotations_per_item() > 0
        prior = normalize_rows(np.bincount(tags[seen], minlength=k) + 1e-2)
        self._set_fitted(seq, post, np.log(normalize_rows(counts + 1e-2)), prior)
        return self

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        return soft_vote(self._aligned(sequences).label_counts())


class TokenDawidSkene(SequenceLabelModel):
    """Token Dawid-Skene with shrinkage, an optional per-token text prior and tempering.

    Model (tokens independent): ``z_t ~ Cat(q_t)`` with ``q_t`` the given ``token_prior[t]``
    (e.g. a text tagger's ``p(tag | text)``; Raykar et al. 2010 with the classifier held
    fixed) where there is one and the learned tag prior ``ρ`` elsewhere; each annotator ``w``
    who saw the document labels the token ``y_tw | z_t ~ Cat(π_w[z_t])`` (Dawid & Skene 1979).

    EM: E-step ``p(z_t | y) ∝ q_t(z) Π_w π_w[z, y_tw]``; M-step :func:`~.base.shrunk_m_step`,
    which adds ``prior_strength · π̄`` (the pooled annotator's confusion) to each annotator's
    expected counts: annotators with few tokens are pulled toward the crowd's behaviour.
    Stops when the log-likelihood changes by less than ``tol`` (relative).

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

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None) -> "TokenDawidSkene":
        """Fit by EM; ``token_prior`` (T, K) or (T,) optional text prior (NaN rows: none)."""
        seq = self._check_sequences(sequences)
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature!r}")
        ann = seq.annotations
        k = seq.n_tags
        X = ann.vote_incidence()
        XT = X.T   # a CSC view: its products stream through the items (no transposed copy)
        prior_rows = token_log_prior(token_prior, ann.n_items, k)
        post = self._initial(ann)
        loop = Convergence(self.max_iter, self.tol, "token Dawid-Skene EM", self.progress,
                           relative=True)
        for _ in loop:
            prior, log_pi, pooled = shrunk_m_step(XT, post, self.prior_strength, self.smoothing)
            em = emission_loglik(X, log_pi)
            post, log_norm = softmax_rows(em + _log_prior(prior, prior_rows, ann.n_items))
            loop.record(float(log_norm.sum()) / max(ann.n_annotations, 1))
        history = loop.history
        self.em_posteriors_ = post
        self.emission_loglik_ = em
        self.pooled_confusion_ = pooled
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        self._prior_rows = prior_rows
        self.class_priors_ = prior
        self._set_fitted(seq, self.tempered_proba(self.temperature), log_pi, prior)
        return self

    def _initial(self, ann: Any) -> np.ndarray:
        if isinstance(self.init, str):
            if self.init != "mv":
                raise ValueError(f"init must be 'mv' or an array, got {self.init!r}")
            return soft_vote(ann.label_counts())
        post = np.asarray(self.init, np.float64)
        if post.shape != (ann.n_items, ann.n_classes):
            raise ValueError(f"init posteriors must have shape {(ann.n_items, ann.n_classes)}, "
                             f"got {post.shape}")
        return post

    def tempered_proba(self, temperature: float) -> np.ndarray:
        """(T, K) ``p_τ(z_t) ∝ q_t(z) exp(τ e_t(z))`` of the fitted tokens for any τ (the same
        fit; this is how :func:`~.selection.choose_temperature` scores a grid of τ)."""
        logits = temperature * self.emission_loglik_ + _log_prior(
            self.class_priors_, self._prior_rows, len(self.emission_loglik_))
        return softmax_rows(logits)[0]

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        ann = self._aligned(sequences)
        em = emission_loglik(ann.vote_incidence(), np.log(self.confusion_matrices_))
        rows = token_log_prior(token_prior, ann.n_items, sequences.n_tags)
        return softmax_rows(self.temperature * em + _log_prior(self.class_priors_, rows,
                                                               ann.n_items))[0]


def _log_prior(prior: np.ndarray, rows: Optional[tuple], n: int) -> np.ndarray:
    """(T, K) log prior of every token: ``log ρ``, or the token prior where there is one."""
    out = np.tile(np.log(np.maximum(prior, 1e-300)), (n, 1))
    if rows is not None:
        out[rows[1]] = rows[0]
    return out
