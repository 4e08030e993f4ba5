"""The EM-step protocol over blocks of whole documents: how the sequence models are fitted.

Token Dawid-Skene (:class:`~.models.TokenDawidSkene`) and HMM-Crowd (:class:`~.hmm.HMMCrowd`)
are :class:`~crowd_keras.aggregation.em.EMLabelModel`\\ s: their fit is
:func:`~crowd_keras.aggregation.em.run_em` over blocks, as for every label model. A block is a
:class:`DocumentBlock`: a :class:`~crowd_keras.aggregation.em.Block` whose items are the
tokens of whole documents, with those documents' token layout (HMM-Crowd's E-step is
forward-backward over each document, so a block never cuts one), the tag scheme and the
tokens' tag prior. Both models' statistics are sums (over tokens: the expected confusion
counts and tag counts; over documents: the expected transitions and first tags), so a fit over
any partition of the documents into blocks (:func:`document_blocks`) is the fit over one
block, up to the rounding of the sums; ``fit(sequences)`` is the fit over one block.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from ..aggregation.em import Block, EMLabelModel, Summary, add, run_em
from ..errors import CrowdDataError
from .annotations import SequenceAnnotations
from .base import SequenceLabelModel, token_log_prior
from .chains import Chains
from .tokens import Tokens

__all__ = ["DocumentBlock", "SequenceSummary", "document_blocks", "SequenceEMModel"]


@dataclass
class SequenceSummary(Summary):
    """:class:`~crowd_keras.aggregation.em.Summary` with the tag scheme (``"IO"``,
    ``"BIO"``, ...), which HMM-Crowd's allowed transitions depend on."""

    scheme: str = "IO"

    def __add__(self, other: "Summary") -> "SequenceSummary":
        scheme = getattr(other, "scheme", self.scheme)
        if scheme != self.scheme:
            raise ValueError(f"blocks of tag schemes {self.scheme!r} and {scheme!r} cannot be "
                             "fitted together")
        total = super().__add__(other)
        return SequenceSummary(total.n_items, total.n_annotations, total.sum_squared_votes,
                               total.votes, self.scheme, n_pred_probs=total.n_pred_probs,
                               fingerprints=total.fingerprints)


@dataclass
class DocumentBlock(Block):
    """The tokens of some whole documents, as the sequence models' EM steps read them.

    Attributes (besides :class:`~crowd_keras.aggregation.em.Block`'s ``item_ids`` (T_b,),
    the corpus index of each of the block's tokens, ``X`` (T_b, W·K) their vote incidence and
    ``item_log_prior`` (T_b, K) or None):
        tokens: the block's documents' :class:`~.tokens.Tokens`; token ``j`` of it is row
            ``j`` of ``X``.
        scheme: the tag scheme.
        token_prior: ``(log q (T', K), rows (T',))``: the log tag prior of the block's tokens
            that have one (``rows`` index the block's tokens), or None
            (:func:`~.base.token_log_prior`).
    """

    tokens: Optional[Tokens] = None
    scheme: str = "IO"
    token_prior: Optional[tuple] = None

    @cached_property
    def chains(self) -> Chains:
        """Forward-backward layout of the block's documents that have an annotated token."""
        annotated = self.annotations_per_item() > 0
        return Chains(self.tokens, np.unique(self.tokens.doc[annotated]))

    def summary(self, k: int, fingerprints: bool = False) -> SequenceSummary:
        total = super().summary(k, fingerprints)
        return SequenceSummary(total.n_items, total.n_annotations, total.sum_squared_votes,
                               total.votes, self.scheme, n_pred_probs=total.n_pred_probs,
                               fingerprints=total.fingerprints)


def _document_groups(sequences: SequenceAnnotations, blocks: Any) -> List[np.ndarray]:
    """The documents of each block: ``blocks`` contiguous runs, or the given groups (each
    document in exactly one)."""
    n_docs = sequences.n_docs
    if isinstance(blocks, (int, np.integer)) and not isinstance(blocks, bool):
        if blocks < 1:
            raise ValueError(f"blocks must be at least 1, got {blocks}")
        return np.array_split(np.arange(n_docs), int(blocks))
    try:
        groups = [np.asarray(g, dtype=np.int64).ravel() for g in blocks]
    except (TypeError, ValueError):
        raise TypeError(f"blocks must be a number of blocks or a list of arrays of document "
                        f"codes, got {blocks!r:.80}") from None
    every = np.concatenate(groups) if groups else np.zeros(0, np.int64)
    if len(every) and (every.min() < 0 or every.max() >= n_docs):
        raise ValueError(f"blocks name document codes outside 0..{n_docs - 1}")
    times = np.bincount(every, minlength=n_docs)
    if (times != 1).any():
        d = int(np.flatnonzero(times != 1)[0])
        raise ValueError(f"document {d} is in {int(times[d])} blocks; each document must be "
                         "in exactly one")
    return groups


def document_blocks(sequences: SequenceAnnotations, blocks: Union[int, Sequence[Any]] = 1,
                    token_prior: Any = None) -> List[DocumentBlock]:
    """The corpus as :class:`DocumentBlock`\\ s of whole documents.

    Args:
        sequences: the corpus.
        blocks: the number of blocks (contiguous runs of documents, ``np.array_split`` of the
            document codes), or a list of arrays of document codes, each document in exactly
            one. Blocks without tokens are left out.
        token_prior: (T, K) tag probabilities with NaN rows where there is none, or (T,)
            ``P(tagged)`` for two tags (:func:`~.base.token_log_prior`); None: none.

    Returns:
        The blocks, in the order of ``blocks``; one block of the whole corpus (its tokens in
        corpus order) for ``blocks=1``.
    """
    ann = sequences.annotations
    X = ann.vote_incidence()
    prior = token_log_prior(token_prior, ann.n_items, sequences.n_tags)
    lengths = sequences.tokens.lengths
    groups = [g for g in _document_groups(sequences, blocks) if lengths[g].sum() > 0]
    if len(groups) <= 1:   # the whole corpus (a block of documents without tokens is none)
        return [DocumentBlock(np.arange(sequences.n_tokens), X, tokens=sequences.tokens,
                              scheme=sequences.scheme, token_prior=prior)]
    # token -> its row in the prior (-1: none), to cut the prior with the documents
    prior_row = None
    if prior is not None:
        prior_row = np.full(sequences.n_tokens, -1)
        prior_row[prior[1]] = np.arange(len(prior[1]))
    out = []
    for docs in groups:
        tokens, idx = sequences.tokens.subset(docs)
        local = None
        if prior_row is not None:
            rows = np.flatnonzero(prior_row[idx] >= 0)
            local = (prior[0][prior_row[idx[rows]]], rows)
        out.append(DocumentBlock(idx, X[idx], tokens=tokens, scheme=sequences.scheme,
                                 token_prior=local))
    return out


class SequenceEMModel(SequenceLabelModel, EMLabelModel):
    """A sequence label model written as the EM-step protocol over :class:`DocumentBlock`\\ s.

    Subclasses implement the protocol's steps (:class:`~crowd_keras.aggregation.em.EMLabelModel`)
    for document blocks, and ``_fit_tokens(sequences, blocks, posteriors)``: the fitted
    per-token state (``posteriors_``, ...) from the parameters that ``finish`` set and the
    (T, K) class posteriors of the last E-step. EM stops on the relative change of the
    log-likelihood per token-label.
    """

    relative_tol = True

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None) -> "SequenceEMModel":
        """Fit by EM over the whole corpus as one block (:meth:`fit_blocks`)."""
        seq = self._check_sequences(sequences)
        return self.fit_blocks(seq, document_blocks(seq, 1, token_prior))

    def fit_blocks(self, sequences: SequenceAnnotations,
                   blocks: Sequence[DocumentBlock]) -> "SequenceEMModel":
        """Fit by :func:`~crowd_keras.aggregation.em.run_em` over ``blocks``
        (:func:`document_blocks` of ``sequences``, every token in exactly one): the same fit
        for any partition of the documents, up to rounding."""
        self._check_settings()
        seq = self._check_fit_sequences(sequences)
        blocks = list(blocks)
        if not blocks or not all(isinstance(b, DocumentBlock) for b in blocks):
            raise TypeError(f"{type(self).__name__}.fit_blocks takes a non-empty list of "
                            "DocumentBlock (document_blocks(sequences, ...))")
        seen = np.bincount(np.concatenate([b.item_ids for b in blocks]),
                           minlength=seq.n_tokens)
        if len(seen) != seq.n_tokens or (seen != 1).any():
            raise CrowdDataError(f"the blocks must hold each of the {seq.n_tokens} tokens of "
                                 "the sequences exactly once (document_blocks(sequences, ...))")
        summary = add(*[b.summary(seq.n_tags) for b in blocks])
        run = run_em(self, blocks, summary)
        post = np.zeros((seq.n_tokens, seq.n_tags))
        for block, latent in zip(blocks, run.latents):
            post[block.item_ids] = run.runner.class_posteriors(latent)
        model = run.runner.finish(run.state, run.summary, seq.annotations, run.history)
        model._fit_tokens(seq, blocks, post)
        return model

    def fit_block(self, ann: Any, item_log_prior: Optional[np.ndarray] = None) -> Any:
        raise TypeError(f"{type(self).__name__} fits SequenceAnnotations: use fit(sequences) "
                        "or fit_blocks(sequences, document_blocks(sequences, ...))")

    def _fit_tokens(self, sequences: SequenceAnnotations, blocks: List[DocumentBlock],
                    posteriors: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
