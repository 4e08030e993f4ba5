"""Forward-backward and Viterbi for many first-order chains at once.

A hidden Markov chain over the tokens of each document: ``z_1 ~ Cat(p0)``,
``z_t | z_{t-1} ~ Cat(A[z_{t-1}])``, with per-token emission log-likelihoods
``e_t(k) = log p(observations at t | z_t = k)`` (K states).

Layout (:class:`Chains`): documents are sorted by decreasing length, so the documents still
running at position ``t`` are a prefix ``[:n_active[t]]`` of that order, and position ``t`` of
all of them is one contiguous block ``off[t]:off[t] + n_active[t]`` of a flat (tokens, K)
array: no padding, and each step of the loop over positions is a few vectorised operations on
two contiguous blocks (the loop is over positions, never over documents or tokens).

The recursions are the scaled ones (Rabiner 1989, Eq. 91-93; Bishop 2006, §13.2.4):
``α̂_t = (α̂_{t-1} A) ⊙ b_t / c_t`` with ``b_t = exp(e_t - max_k e_t)`` and ``c_t`` the
normaliser, ``β̂_t = A (b_{t+1} ⊙ β̂_{t+1}) / c_{t+1}``; ``γ_t = α̂_t ⊙ β̂_t`` (Eq. 13.64),
``ξ = Σ_t α̂_{t-1}ᵀ (b_t ⊙ β̂_t / c_t) ⊙ A`` (Eq. 13.65) and
``log p(document) = Σ_t (log c_t + max_k e_t)`` (Eq. 13.63).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .tokens import Tokens

__all__ = ["Chains", "forward_backward", "forward_loglik", "viterbi"]


class Chains:
    """Compact time-major layout of the documents ``docs`` (default: all non-empty ones).

    Attributes:
        docs: (D',) document codes in layout order (decreasing length).
        lens: (D',) their lengths.
        n_docs: D'.
        max_len: Lmax, the longest length (0 without documents).
        n_active: (Lmax,) documents still running at each position.
        off: (Lmax + 1,) start of each position's block.
        tok: (S,) global token index of each slot.
        row: (S,) layout row (document) of each slot.
        nonfirst: the slots with a predecessor.
        prev: the slot before each of ``nonfirst``.
        last: (D',) last slot of each document.
        n_slots: S, the tokens laid out.
    """

    def __init__(self, tokens: Tokens, docs: Optional[Sequence[int]] = None) -> None:
        docs = np.flatnonzero(tokens.lengths > 0) if docs is None else np.asarray(docs, np.int64)
        docs = docs[tokens.lengths[docs] > 0]
        lens = tokens.lengths[docs]
        order = np.argsort(-lens, kind="stable")
        self.docs, self.lens = docs[order], lens[order]
        self.n_docs = len(self.docs)
        self.max_len = int(self.lens.max()) if self.n_docs else 0
        self.n_active = np.bincount(self.lens, minlength=self.max_len + 1)[::-1].cumsum()[::-1][1:]
        self.off = np.concatenate([[0], np.cumsum(self.n_active)]).astype(np.int64)
        row = np.full(tokens.n_docs, -1)
        row[self.docs] = np.arange(self.n_docs)
        tok_doc = tokens.doc
        sel = np.flatnonzero(row[tok_doc] >= 0)
        r = row[tok_doc[sel]]
        p = sel - tokens.doc_ptr[tok_doc[sel]]
        slot = self.off[p] + r
        n = len(sel)
        self.tok = np.empty(n, np.int64)
        self.row = np.empty(n, np.int64)
        pos = np.empty(n, np.int64)
        self.tok[slot], self.row[slot], pos[slot] = sel, r, p
        nonfirst = pos > 0
        self.nonfirst = np.flatnonzero(nonfirst)
        self.prev = self.off[pos[nonfirst] - 1] + self.row[nonfirst]
        self.last = self.off[self.lens - 1] + np.arange(self.n_docs)
        self.n_slots = n


def _scaled_emissions(ch: Chains, log_em: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = log_em[ch.tok]
    top = x.max(axis=1)
    return np.exp(x - top[:, None]), top


def forward_backward(ch: Chains, log_em: np.ndarray, A: np.ndarray,
                     p0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Posterior marginals and expected transitions (module docstring equations).

    Args:
        ch: the layout.
        log_em: (T, K) emission log-likelihoods, global token order.
        A: (K, K) transition matrix (rows sum to 1).
        p0: (K,) initial distribution.

    Returns:
        ``(gamma, xi, init, loglik)``: gamma (S, K) marginals in slot order (``ch.tok``
        gives their tokens), xi (K, K) expected transition counts, init (K,) expected
        initial-state counts, loglik (D',) per-document log-likelihood (layout order).
    """
    k = log_em.shape[1]
    b, top = _scaled_emissions(ch, log_em)
    alpha = np.empty((ch.n_slots, k))
    c = np.empty(ch.n_slots)
    off, na = ch.off, ch.n_active
    if ch.n_slots == 0:
        return alpha, np.zeros((k, k)), np.zeros(k), np.zeros(0)
    a = p0[None] * b[:na[0]]
    c[:na[0]] = a.sum(1)
    alpha[:na[0]] = a / c[:na[0], None]
    for t in range(1, ch.max_len):
        n, o0, o1 = na[t], off[t - 1], off[t]
        a = (alpha[o0:o0 + n] @ A) * b[o1:o1 + n]
        c[o1:o1 + n] = a.sum(1)
        alpha[o1:o1 + n] = a / c[o1:o1 + n, None]
    beta = np.empty((ch.n_slots, k))
    beta[ch.last] = 1.0
    eb = np.empty((ch.n_slots, k))
    at = np.ascontiguousarray(A.T)
    for t in range(ch.max_len - 1, 0, -1):
        n, o0, o1 = na[t], off[t - 1], off[t]
        eb[o1:o1 + n] = b[o1:o1 + n] * beta[o1:o1 + n] / c[o1:o1 + n, None]
        beta[o0:o0 + n] = eb[o1:o1 + n] @ at
    gamma = alpha * beta
    gamma /= gamma.sum(1, keepdims=True)
    xi = (alpha[ch.prev].T @ eb[ch.nonfirst]) * A
    init = gamma[:na[0]].sum(0)
    loglik = np.bincount(ch.row, weights=np.log(c) + top, minlength=ch.n_docs)
    return gamma, xi, init, loglik


def forward_loglik(ch: Chains, log_em: np.ndarray, A: np.ndarray, p0: np.ndarray) -> np.ndarray:
    """(D',) per-document log-likelihood ``log p(observations)`` by the forward pass alone."""
    b, top = _scaled_emissions(ch, log_em)
    c = np.empty(ch.n_slots)
    off, na = ch.off, ch.n_active
    if ch.n_slots:
        a = p0[None] * b[:na[0]]
        c[:na[0]] = a.sum(1)
        a = a / c[:na[0], None]
        for t in range(1, ch.max_len):
            n, o1 = na[t], off[t]
            a = (a[:n] @ A) * b[o1:o1 + n]
            c[o1:o1 + n] = a.sum(1)
            a = a / c[o1:o1 + n, None]
    return np.bincount(ch.row, weights=np.log(c) + top, minlength=ch.n_docs)


def viterbi(ch: Chains, log_em: np.ndarray, log_A: np.ndarray, log_p0: np.ndarray) -> np.ndarray:
    """Most probable state path of every document (Rabiner 1989, Eq. 104-105); returns the
    (S,) states in slot order (``-inf`` entries of ``log_A``/``log_p0`` forbid moves)."""
    k = log_em.shape[1]
    x = log_em[ch.tok]
    back = np.zeros((ch.n_slots, k), np.int64)
    off, na = ch.off, ch.n_active
    path = np.zeros(ch.n_slots, np.int64)
    if ch.n_slots == 0:
        return path
    delta = log_p0[None] + x[:na[0]]
    final = delta.copy()                    # each document's delta at its last position
    for t in range(1, ch.max_len):
        n, o1 = na[t], off[t]
        score = delta[:n, :, None] + log_A[None]
        best = score.argmax(1)
        delta = np.take_along_axis(score, best[:, None, :], 1)[:, 0] + x[o1:o1 + n]
        back[o1:o1 + n] = best
        final[:n] = delta
    path[ch.last] = final.argmax(1)
    for t in range(ch.max_len - 1, 0, -1):
        n, o0, o1 = na[t], off[t - 1], off[t]
        path[o0:o0 + n] = back[np.arange(o1, o1 + n), path[o1:o1 + n]]
    return path
