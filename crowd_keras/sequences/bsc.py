"""Sequential-annotator HMM: BSC-seq's worker model (Simpson & Gurevych, ACL 2019).

"A Bayesian approach for sequence tagging with crowds" (BSC) models the true tags of a
document as a Markov chain and each annotator with a confusion that depends on the true tag
*and on that annotator's own previous tag* (their "seq" annotator model, §3.2): a worker
who has begun a span tends to continue it, whatever the truth, so runs of a worker's tags
are explained as one decision, not as independent token errors. Here it is fitted by EM
(maximum a posteriori with Dirichlet pseudo-counts) rather than by their variational Bayes,
with the same shrinkage toward the pooled worker as :class:`~.models.TokenDawidSkene`.

Model, per document of tokens ``1..n`` (K tags, IO or BIO):

* ``z_1 ~ Cat(p0)``, ``z_t | z_{t-1} ~ Cat(A[z_{t-1}])`` (BIO: no move into ``I-l`` from
  anything but ``B-l``/``I-l``);
* each annotator ``w`` who saw the document: ``y_tw | z_t, y_{t-1,w} ~ Cat(π_w[z_t, y_{t-1,w}])``
  with ``y_{0,w} = O`` (Simpson & Gurevych 2019, Eq. 6), so
  ``e_t(z) = Σ_w log π_w[z, y_{t-1,w}, y_tw]`` is the emission of the chain.

EM: E-step forward-backward (:mod:`.chains`) → marginals γ, expected transitions ξ; M-step
``π_w[z, p, ·] ∝ E#_w(z, prev = p, y = ·) + s·π̄[z, p, ·] + smoothing`` with ``π̄`` the pooled
(all workers) conditional of the same previous tag ``p``; ``A ∝ ξ + smoothing``,
``p0 ∝ γ_1 + smoothing``. Decoding: the marginal rule of :func:`~.base.decode_marginals`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..numerics import normalize_rows, soft_vote, sparse_dot
from ..progress import Convergence
from .annotations import SequenceAnnotations
from .base import SequenceLabelModel
from .chains import Chains, forward_backward
from .hmm import allowed_moves

__all__ = ["SequentialAnnotatorHMM", "previous_tags"]


def previous_tags(seq: SequenceAnnotations) -> np.ndarray:
    """(N,) each observation's annotator's tag on the previous token of the same document
    (``O`` = 0 on the first token); observations are annotation-major in token order."""
    prev = np.concatenate([[0], seq.obs_tag[:-1]]).astype(np.int64)
    first = np.concatenate([[True], seq.obs_assign[1:] != seq.obs_assign[:-1]])
    prev[first] = 0
    return prev


def _incidence(seq: SequenceAnnotations, annotator_codes: np.ndarray, n_annotators: int
               ) -> sp.csr_matrix:
    """(T, W·K·K) 0/1: token t got tag y from annotator w whose previous tag was p; column
    ``(w·K + p)·K + y``."""
    k = seq.n_tags
    who = annotator_codes[seq.assign_annotator[seq.obs_assign]]
    ok = who >= 0
    col = (who * k + previous_tags(seq)) * k + seq.obs_tag
    return sp.csr_matrix((np.ones(int(ok.sum())), (seq.obs_token[ok], col[ok])),
                         shape=(seq.n_tokens, n_annotators * k * k))


class SequentialAnnotatorHMM(SequenceLabelModel):
    """BSC-seq's model fitted by EM (see the module docstring).

    Args:
        prior_strength: pseudo-count ``s`` of the shrinkage toward the pooled worker.
        smoothing: pseudo-count on every confusion cell, transition and initial tag.
        max_iter, tol: EM iterations and relative log-likelihood tolerance.
        progress: show a progress bar.

    Attributes (besides the common ones): sequential_confusions_ (W, K, K, K)
    ``π_w[z, prev, y]``; confusion_matrices_ (W, K, K) the same marginalised over the
    previous tag with the worker's own previous-tag frequencies; transitions_ (K, K),
    initial_ (K,), log_likelihood_, n_iter_.
    """

    def __init__(self, prior_strength: float = 3.0, smoothing: float = 0.01,
                 max_iter: int = 100, tol: float = 1e-6, progress: bool = False) -> None:
        self.prior_strength = prior_strength
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress

    def _m_step(self, XT: sp.spmatrix, post: np.ndarray, k: int) -> tuple:
        counts = sparse_dot(XT, post).reshape(-1, k, k, k)        # (W, prev, y, z)
        counts = counts.transpose(0, 3, 1, 2)                      # (W, z, prev, y)
        pooled = normalize_rows(counts.sum(0) + self.smoothing)    # (z, prev, y)
        pi = normalize_rows(counts + self.prior_strength * pooled[None] + self.smoothing)
        return np.log(pi), pooled

    @staticmethod
    def _emission(X: sp.csr_matrix, log_pi: np.ndarray) -> np.ndarray:
        k = log_pi.shape[1]
        # column (w, prev, y) of X meets row (w, prev, y) of log π as (·, z)
        return sparse_dot(X, log_pi.transpose(0, 2, 3, 1).reshape(-1, k))

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None
            ) -> "SequentialAnnotatorHMM":
        self._check_settings()
        seq = self._check_fit_sequences(sequences)
        if token_prior is not None:
            raise ValueError("SequentialAnnotatorHMM takes no token_prior")
        ann = seq.annotations
        k, n_w = seq.n_tags, len(seq.annotator_ids)
        X = _incidence(seq, np.arange(n_w), n_w)
        XT = X.T.tocsr()
        has = ann.annotations_per_item() > 0
        chains = Chains(seq.tokens, np.unique(seq.tokens.doc[has]))
        allowed, start = allowed_moves(seq.scheme, k, True)
        post = soft_vote(ann.label_counts())
        xi = post[chains.tok[chains.prev]].T @ post[chains.tok[chains.nonfirst]]
        init = post[chains.tok[:chains.n_active[0]]].sum(0) if chains.n_slots else np.ones(k)
        loop = Convergence(self.max_iter, self.tol, "sequential-annotator HMM EM",
                           self.progress, relative=True)
        for _ in loop:
            log_pi, _ = self._m_step(XT, post, k)
            A = normalize_rows((xi + self.smoothing) * allowed)
            p0 = normalize_rows((init + self.smoothing) * start)
            em = self._emission(X, log_pi)
            gamma, xi, init, ll = forward_backward(chains, em, A, p0)
            post[chains.tok] = gamma
            loop.record(float(ll.sum()) / max(ann.n_annotations, 1))
        self.transitions_, self.initial_ = A, p0
        self.log_likelihood_ = np.asarray(loop.history)
        self.n_iter_ = len(loop.history)
        self.sequential_confusions_ = np.exp(log_pi)
        self._log_pi = log_pi
        post = self._chain_posteriors(seq, em)
        # the (W, K, K) token confusion: π_w[z, ·] = Σ_p P_w(prev = p) π_w[z, p, ·]
        prev_freq = normalize_rows(np.asarray(XT.sum(1)).reshape(n_w, k, k).sum(2)
                                   + self.smoothing)             # (W, prev)
        flat = np.einsum("wp,wzpy->wzy", prev_freq, self.sequential_confusions_)
        self._set_fitted(seq, post, np.log(flat),
                         normalize_rows(post[has].sum(0) + self.smoothing))
        return self

    def _chain_posteriors(self, seq: SequenceAnnotations, em: np.ndarray) -> np.ndarray:
        chains = Chains(seq.tokens)
        post = np.empty((seq.n_tokens, em.shape[1]))
        post[chains.tok] = forward_backward(chains, em, self.transitions_, self.initial_)[0]
        return post

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        if token_prior is not None:
            raise ValueError("SequentialAnnotatorHMM takes no token_prior")
        self._aligned(sequences)                     # same tags; annotators known
        fitted = self.sequences_.annotator_ids
        codes = pd.Index(fitted).get_indexer(sequences.annotator_ids)
        X = _incidence(sequences, codes, len(fitted))
        return self._chain_posteriors(sequences, self._emission(X, self._log_pi))
