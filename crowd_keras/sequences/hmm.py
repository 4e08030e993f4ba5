"""HMM-Crowd: a hidden Markov chain of true tags, each annotator a confusion matrix on it.

Nguyen, Wallace, Li, Nenkova & Lease (ACL 2017), "Aggregating and Predicting Sequence Labels
from Crowd Annotations", without their word emissions (the model below generates the crowd's
tags only; texts are used through a tagger's prior in :class:`~.models.TokenDawidSkene`).

Model, per document of tokens ``1..n``:

* ``z_1 ~ Cat(p0)``, ``z_t | z_{t-1} ~ Cat(A[z_{t-1}])`` (K tags; with BIO and
  ``constrain_bio`` the moves into ``I-l`` from anything but ``B-l``/``I-l``, and a start
  in ``I-l``, are forbidden);
* each annotator ``w`` who saw the document: ``y_tw | z_t ~ Cat(π_w[z_t])``, independent
  given the chain (the same confusion as Dawid-Skene, shrunk toward the pooled annotator).

EM: E-step = forward-backward on every annotated document of a block at once
(:mod:`.chains`; the loop is over positions, vectorised across documents), giving the
marginals γ and expected transitions ξ; M-step: ``π`` by :func:`~.base.pooled_m_step` on γ,
``A ∝ ξ + smoothing``, ``p0 ∝ γ_1 + smoothing`` (Rabiner 1989, Eq. 40; Bishop 2006,
Eq. 13.18-13.19). Decoding: the marginal rule of :func:`~.base.decode_marginals` or Viterbi.
The steps are the EM-step protocol (:mod:`crowd_keras.aggregation.em`) over blocks of whole
documents (:mod:`.em`): the statistics (expected confusion counts, transitions and first
tags) are sums over documents, so :meth:`HMMCrowd.fit_blocks` over any split of the
documents is the same fit.

Why it scores lower than token Dawid-Skene on PICO (``benchmarks/results/spans.md``): with
transitions, the latent "inside" state comes to mean "a region that some annotators marked":
runs of tokens where a minority marked a span are explained as one inside region with
annotators who missed it (the pooled annotator's miss rate P(y=O | z=I) is higher than under
Dawid-Skene), so it tags more tokens (high recall, low precision). The held-out annotator
likelihood flags this without gold (it is lower than Dawid-Skene's on the crowd dev split).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ..aggregation.dawid_skene import sufficient_statistics
from ..aggregation.em import Summary
from ..numerics import normalize_rows
from .annotations import SequenceAnnotations
from .base import emission_loglik, pooled_m_step
from .chains import Chains, forward_backward, forward_loglik, viterbi
from .em import DocumentBlock, SequenceEMModel, SequenceSummary

__all__ = ["HMMCrowd"]

_DECODES = ("posterior", "viterbi")


def allowed_moves(scheme: str, k: int, constrain: bool) -> tuple[np.ndarray, np.ndarray]:
    """(K, K) allowed transitions and (K,) allowed first tags (BIO: no ``O → I``)."""
    allowed, start = np.ones((k, k), bool), np.ones(k, bool)
    if scheme == "BIO" and constrain:
        inside = np.arange(2, k, 2)                 # I-l = 2 + 2l, B-l = 1 + 2l
        allowed[:, inside] = False
        allowed[inside - 1, inside] = True          # B-l → I-l
        allowed[inside, inside] = True              # I-l → I-l
        start[inside] = False
    return allowed, start


class HMMCrowd(SequenceEMModel):
    """HMM-Crowd (see the module docstring), fitted by EM with forward-backward.

    Args:
        prior_strength: pseudo-count of the shrinkage of each annotator toward the pooled one.
        smoothing: pseudo-count on every confusion cell, transition and initial tag.
        max_iter, tol: EM iterations and relative log-likelihood tolerance.
        decode: ``"posterior"`` (marginal rule) or ``"viterbi"`` (most probable tag path).
        constrain_bio: forbid ``O → I`` moves under BIO.
        progress: ``"auto"`` (default): a line on stderr every few seconds once the fit has
            run a few seconds (a long fit is never silent); ``True``: a progress bar from the
            start; ``False``: nothing.

    Attributes (besides the common ones): transitions_ (K, K), initial_ (K,),
    log_likelihood_ (per EM iteration, per token-label), n_iter_.
    """

    def __init__(self, prior_strength: float = 3.0, smoothing: float = 0.01,
                 max_iter: int = 200, tol: float = 1e-7, decode: str = "posterior",
                 constrain_bio: bool = True, progress: Any = "auto") -> None:
        self.prior_strength = prior_strength
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.decode = decode
        self.constrain_bio = constrain_bio
        self.progress = progress

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None) -> "HMMCrowd":
        if token_prior is not None:
            raise ValueError("HMMCrowd takes no token_prior (use TokenDawidSkene for a text prior)")
        return super().fit(sequences)

    def fit_blocks(self, sequences: SequenceAnnotations,
                   blocks: Sequence[DocumentBlock]) -> "HMMCrowd":
        blocks = list(blocks)
        if any(getattr(b, "token_prior", None) is not None for b in blocks):
            raise ValueError("HMMCrowd takes no token_prior (use TokenDawidSkene for a text prior)")
        return super().fit_blocks(sequences, blocks)

    # the EM-step protocol (crowd_keras.aggregation.em) over blocks of whole documents (.em)
    def init_state(self, summary: Summary) -> "HMMCrowd":
        if self.decode not in _DECODES:
            raise ValueError(f"decode must be one of {_DECODES}, got {self.decode!r}")
        if not isinstance(self.constrain_bio, (bool, np.bool_)):   # "no" would read as True
            raise TypeError(f"constrain_bio must be True or False, got {self.constrain_bio!r}")
        if not isinstance(summary, SequenceSummary):
            raise TypeError("HMMCrowd fits blocks of documents: its summary is a SequenceSummary "
                            f"(DocumentBlock.summary), got {type(summary).__name__}")
        super().init_state(summary)
        self._moves = allowed_moves(summary.scheme, summary.n_classes, self.constrain_bio)
        return self

    def initial_statistics(self, block: DocumentBlock) -> tuple:
        """The statistics of the soft majority vote: its confusion counts, and its products
        over consecutive tokens and first tokens as the transitions and first tags."""
        post = self.initial_posteriors(block)
        chains = block.chains
        xi = post[chains.tok[chains.prev]].T @ post[chains.tok[chains.nonfirst]]
        init = post[chains.tok[:chains.n_active[0]]].sum(0) if chains.n_slots else \
            np.zeros(self.n_classes_)
        return sufficient_statistics(block.XT, post) + (xi, init)

    def sufficient_statistics(self, block: DocumentBlock, latent: tuple) -> tuple:
        """``(counts (W·K, K), tag mass (K,), ξ (K, K), first tags (K,))``, sums over the
        block's tokens and documents."""
        post, xi, init = latent
        return sufficient_statistics(block.XT, post) + (xi, init)

    def m_step(self, stats: tuple) -> tuple:
        """``(log_pi (W, K, K), A (K, K), p0 (K,))``: :func:`~.base.pooled_m_step`,
        ``A ∝ ξ + smoothing`` and ``p0 ∝ γ_1 + smoothing`` on the allowed moves."""
        counts, mass, xi, init = stats
        allowed, start = self._moves
        _, log_pi, _ = pooled_m_step(counts, mass, self.prior_strength, self.smoothing)
        A = normalize_rows((xi + self.smoothing) * allowed)
        p0 = normalize_rows((init + self.smoothing) * start)
        return log_pi, A, p0

    def e_step(self, block: DocumentBlock, state: tuple) -> tuple:
        """Forward-backward over the block's annotated documents: ``(γ (T_b, K), ξ (K, K),
        first-tag marginals (K,))`` (γ = 0 on the tokens of documents nobody annotated) and
        the block's summed log-likelihood."""
        log_pi, A, p0 = state
        chains = block.chains
        em = block.with_log_prior(emission_loglik(block.X, log_pi))
        gamma, xi, init, ll = forward_backward(chains, em, A, p0)
        post = np.zeros((block.n_items, A.shape[0]))
        post[chains.tok] = gamma
        return (post, xi, init), float(ll.sum())

    def class_posteriors(self, latent: tuple) -> np.ndarray:
        return latent[0]

    def finish(self, state: tuple, summary: Summary, template: Any,
               history: Sequence[float]) -> "HMMCrowd":
        log_pi, A, p0 = state
        self.transitions_, self.initial_ = A, p0
        self._log_pi = log_pi
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        self.annotations_ = template
        self.confusion_matrices_ = np.exp(log_pi)
        return self

    def _fit_tokens(self, sequences: SequenceAnnotations, blocks: List[DocumentBlock],
                    posteriors: np.ndarray) -> None:
        # every document, the unannotated ones included, under the last M-step's parameters
        em = np.zeros_like(posteriors)
        for block in blocks:
            em[block.item_ids] = emission_loglik(block.X, self._log_pi)
        post = self._chain_posteriors(sequences, em)[0]
        has = sequences.annotations.annotations_per_item() > 0
        self._set_fitted(sequences, post, self._log_pi,
                         normalize_rows(post[has].sum(0) + self.smoothing))

    def _chain_posteriors(self, seq: SequenceAnnotations, em: np.ndarray
                          ) -> tuple[np.ndarray, Chains]:
        chains = Chains(seq.tokens)
        gamma = forward_backward(chains, em, self.transitions_, self.initial_)[0]
        post = np.empty((seq.n_tokens, em.shape[1]))
        post[chains.tok] = gamma
        return post, chains

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        if token_prior is not None:
            raise ValueError("HMMCrowd takes no token_prior")
        ann = self._aligned(sequences)
        return self._chain_posteriors(sequences, emission_loglik(ann.vote_incidence(),
                                                                 self._log_pi))[0]

    def _decode(self, post: np.ndarray, sequences: SequenceAnnotations) -> np.ndarray:
        if self.decode == "posterior":
            return super()._decode(post, sequences)
        ann = (sequences.annotations if sequences is self.sequences_
               else self._aligned(sequences))
        em = emission_loglik(ann.vote_incidence(), self._log_pi)
        chains = Chains(sequences.tokens)
        with np.errstate(divide="ignore"):
            path = viterbi(chains, em, np.log(self.transitions_), np.log(self.initial_))
        tags = np.zeros(sequences.n_tokens, np.int64)
        tags[chains.tok] = path
        return tags

    def log_likelihood(self, sequences: Optional[SequenceAnnotations] = None) -> np.ndarray:
        """(D,) per-document ``log p(annotations)`` under the fitted model (0 for documents
        without tokens)."""
        self._check_fitted()
        seq = self.sequences_ if sequences is None else self._check_sequences(sequences)
        ann = seq.annotations if sequences is None else self._aligned(seq)
        em = emission_loglik(ann.vote_incidence(), self._log_pi)
        chains = Chains(seq.tokens)
        out = np.zeros(seq.n_docs)
        out[chains.docs] = forward_loglik(chains, em, self.transitions_, self.initial_)
        return out
