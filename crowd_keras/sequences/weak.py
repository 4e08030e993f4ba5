"""Token Dawid-Skene with abstains: labeling functions and human annotators together.

A human annotator who saw a document tags every token of it (an unmarked token is a vote for
``O``); a labeling function (:mod:`.labeling_functions`) votes on some tokens and abstains on
the others, and an abstain is not a vote for ``O``: a dictionary of participant phrases says
nothing about the tokens it does not match. Reading abstains as ``O`` would make every
function a very confident "outside" annotator; dropping them as missing would make a
function that only ever votes "inside" uninformative (its confusion row would be "inside"
whatever the truth). Here an abstain is an observed outcome of its own, as in Snorkel's
label model (Ratner et al. 2019, where the abstain rate is part of each function's
accuracy model) and as :class:`crowd_keras.aggregation.AbstainAwareDawidSkene` does for
classification ("abstain" a response); here on tokens, with human annotators (who never
abstain: an unmarked token is their ``O``) shrunk toward the pooled human beside them:

* true tag ``z_t ~ Cat(ρ)`` per token (K tags), tokens independent;
* annotator or function ``j`` on token t: ``λ_tj | z_t ~ Cat(π_j[z_t])`` over K + 1 outcomes,
  the last being *abstain* (humans never abstain: their last column stays at the smoothing
  pseudo-count);
* EM as :class:`~.models.TokenDawidSkene` (Dawid & Skene 1979, Eq. 2.3-2.5) with rectangular
  (K, K + 1) confusions; the humans are shrunk toward the pooled human (strength
  ``prior_strength``), the functions are not (each votes on a whole corpus).

Shapes: T tokens, K tags, W humans, J functions; ``confusion_matrices_`` is (W, K, K), the
humans' (the vote part, renormalised: the common surface, which ``annotator_quality_`` reads),
``abstain_rates_`` (W + J, K) ``π_j[z, abstain]`` (rows as ``source_ids_``: humans, then
functions).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from ..errors import CrowdDataError
from ..numerics import normalize_rows, softmax_rows, sparse_dot
from ..progress import Convergence
from .annotations import SequenceAnnotations
from .base import SequenceLabelModel, emission_loglik, prior_logits, token_log_prior
from .labeling_functions import TokenVotes

__all__ = ["AbstainDawidSkene"]


def _observations(seq: SequenceAnnotations, votes: Optional[TokenVotes]) -> tuple:
    """(token, source, outcome) of every human tag and every function's vote or abstain
    (outcome K) on the tokens of the documents it ran on."""
    ann = seq.annotations
    k = seq.n_tags
    tok, src, out = [ann.items], [ann.annotators], [ann.labels.astype(np.int64)]
    n_w = ann.n_annotators
    if votes is not None and votes.n_lfs:
        J = votes.n_lfs
        table = np.full((seq.n_tokens, J), k, np.int64)           # abstain everywhere ...
        table[votes.token, votes.lf] = votes.tags(seq.scheme)      # ... but where it voted
        ran = votes.applied[:, seq.tokens.doc].T                  # (T, J)
        t, j = np.nonzero(ran)
        tok.append(t)
        src.append(n_w + j)
        out.append(table[t, j])
    return np.concatenate(tok), np.concatenate(src), np.concatenate(out)


class AbstainDawidSkene(SequenceLabelModel):
    """Token Dawid-Skene over humans and labeling functions, abstain an outcome of its own.

    ``fit(votes)`` (a :class:`~.labeling_functions.TokenVotes`: its sequences' human
    annotations, if any, and the functions' votes) or ``fit(sequences)`` (humans only:
    the same as :class:`~.models.TokenDawidSkene`).

    Args:
        prior_strength: shrinkage of each human toward the pooled human.
        smoothing: pseudo-count on every confusion cell and on ρ.
        max_iter, tol: EM iterations and relative log-likelihood tolerance.
        progress: show a progress bar.

    Attributes (besides the common ones): source_ids_ (W + J,) annotators then function
    names, abstain_rates_ (W + J, K), log_likelihood_, n_iter_, votes_ (the
    :class:`~crowd_keras.sequences.labeling_functions.TokenVotes` fitted, or None for
    ``SequenceAnnotations``).
    """

    def __init__(self, prior_strength: float = 3.0, smoothing: float = 0.01,
                 max_iter: int = 100, tol: float = 1e-7, progress: bool = False) -> None:
        self.prior_strength = prior_strength
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress

    def fit(self, sequences: Any, token_prior: Any = None) -> "AbstainDawidSkene":
        self._check_settings()
        votes = sequences if isinstance(sequences, TokenVotes) else None
        if votes is None and not isinstance(sequences, SequenceAnnotations):
            raise CrowdDataError(f"AbstainDawidSkene fits the TokenVotes of apply_lfs (labeling "
                                 f"functions, with any human annotations) or SequenceAnnotations"
                                 f", got {type(sequences).__name__}")
        seq = self._check_sequences(votes.sequences if votes is not None else sequences)
        k = seq.n_tags
        ko = k + 1
        n_w = len(seq.annotator_ids)
        n_src = n_w + (votes.n_lfs if votes is not None else 0)
        tok, src, out = _observations(seq, votes)
        if not len(tok):
            raise CrowdDataError("nothing to fit: " + (
                f"the {seq.n_docs} documents have no tokens" if seq.n_tokens == 0 else
                "no annotations and no labeling-function runs"))
        X = sp.csr_matrix((np.ones(len(tok)), (tok, src * ko + out)),
                          shape=(seq.n_tokens, n_src * ko))
        XT = X.T.tocsr()
        prior_rows = token_log_prior(token_prior, seq.n_tokens, k)
        # start: the share of each tag among the votes (abstains aside); no vote: O
        votes_k = np.asarray(X @ np.tile(np.eye(ko, k), (n_src, 1)))
        post = np.where(votes_k.sum(1, keepdims=True) > 0, normalize_rows(votes_k),
                        np.eye(k)[0])
        human = np.arange(n_src) < n_w
        loop = Convergence(self.max_iter, self.tol, "abstain-aware Dawid-Skene EM",
                           self.progress, relative=True)
        for _ in loop:
            counts = sparse_dot(XT, post).reshape(n_src, ko, k).transpose(0, 2, 1)
            pooled = normalize_rows(counts[human].sum(0) + self.smoothing)      # (K, K+1)
            counts = counts + self.smoothing
            counts[human] += self.prior_strength * pooled
            log_pi = np.log(normalize_rows(counts))                              # (S, K, K+1)
            rho = normalize_rows(post.sum(0) + self.smoothing)
            em = sparse_dot(X, log_pi.transpose(0, 2, 1).reshape(-1, k))
            logits = em + np.log(rho)
            if prior_rows is not None:
                logits[prior_rows[1]] = em[prior_rows[1]] + prior_rows[0]
            post, log_norm = softmax_rows(logits)
            loop.record(float(log_norm.sum()) / max(len(tok), 1))
        pi = np.exp(log_pi)
        self.source_ids_ = np.concatenate([seq.annotator_ids.astype(object),
                                           votes.names if votes is not None else []])
        self.abstain_rates_ = pi[:, :, k]
        self.log_likelihood_ = np.asarray(loop.history)
        self.n_iter_ = len(loop.history)
        self._log_pi = log_pi
        self._rho = rho
        self.votes_ = votes
        # the common surface: the humans' (K, K) confusions (their abstain column is ~0)
        self._set_fitted(seq, post, np.log(normalize_rows(pi[:n_w, :, :k])), rho)
        return self

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        if self.votes_ is not None:
            raise CrowdDataError("AbstainDawidSkene fitted on labeling-function votes scores "
                                 "the documents it was fitted on; fit it on new TokenVotes "
                                 "to label new documents")
        # annotators alone: the fit's E-step over the new documents' tags (abstain unused)
        ann = self._aligned(sequences)
        k = sequences.n_tags
        em = emission_loglik(ann.vote_incidence(), self._log_pi[:, :, :k])
        rows = token_log_prior(token_prior, ann.n_items, k)
        return softmax_rows(em + prior_logits(self._rho, rows, ann.n_items))[0]
