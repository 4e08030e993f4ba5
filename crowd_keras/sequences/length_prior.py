"""A span-length prior from the annotators' own tag sequences, combined with any token model.

A token model (Dawid-Skene, with or without a text prior) scores every token on its own:
``q_t(z) ∝ ρ_t(z) · p(labels at t | z)``, with ``ρ_t`` a per-token prior. Spans are runs of
tokens, and how long they are is a property of the task (PICO's participant phrases run to
several tokens, its gaps to dozens) that a per-token prior cannot express.
:class:`SpanLengthPrior` replaces the per-token prior's class frequencies by a first-order
chain over the tags whose transitions are the crowd's own:

* ``A[a, b]`` ∝ 1 + the number of adjacent token pairs tagged ``(a, b)`` in the same
  annotation, pooled over every annotation; ``π`` is its stationary distribution (the crowd's
  tag frequencies), ``p0`` the share of annotations starting with each tag (+1). Run and gap
  lengths are then geometric with the crowd's mean lengths.
* The posterior of the tags of a document is
  ``p(z_1..z_n) ∝ p0(z_1) Π_t A[z_{t-1}, z_t] · Π_t q_t(z_t) / π(z_t)``: dividing by ``π``
  takes out the class frequency already inside ``q_t``, so each token's evidence (its labels,
  its text) counts once and the chain supplies the prior. The marginals come from one
  forward-backward over all documents (:mod:`.chains`; Rabiner 1989, Eq. 91-93) and are
  decoded like any token model's (:func:`~.base.decode_marginals`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import check_number
from ..numerics import normalize_rows
from .annotations import SequenceAnnotations
from .base import SequenceLabelModel, decode_marginals
from .chains import Chains, forward_backward

__all__ = ["SpanLengthPrior", "annotation_transitions"]

#: Floor on a token model's posterior before its log is taken (a one-hot row stays finite).
_FLOOR = 1e-12


def annotation_transitions(sequences: SequenceAnnotations, smoothing: float = 1.0
                           ) -> tuple[np.ndarray, np.ndarray]:
    """``(A (K, K), p0 (K,))``: the tag chain of the annotators' own tag sequences.

    ``A[a, b]`` ∝ ``smoothing`` + the number of token pairs ``(t, t + 1)`` of the same
    annotation tagged ``(a, b)``; ``p0[a]`` ∝ ``smoothing`` + the number of annotations whose
    first observed token is tagged ``a``. Observations are in annotation, then token, order.
    """
    k = sequences.n_tags
    assign, token, tag = sequences.obs_assign, sequences.obs_token, sequences.obs_tag
    same = (assign[1:] == assign[:-1]) & (token[1:] == token[:-1] + 1)
    counts = np.bincount(tag[:-1][same] * k + tag[1:][same], minlength=k * k).reshape(k, k)
    first = (np.concatenate([[True], assign[1:] != assign[:-1]]) if len(assign)
             else np.zeros(0, bool))
    starts = np.bincount(tag[first], minlength=k)
    return (normalize_rows(counts + float(smoothing)),
            (starts + float(smoothing)) / (starts.sum() + k * float(smoothing)))


def stationary(A: np.ndarray) -> np.ndarray:
    """(K,) the stationary distribution of the row-stochastic ``A`` (its left eigenvector of
    eigenvalue 1)."""
    w, v = np.linalg.eig(A.T)
    pi = np.abs(np.real(v[:, np.argmin(np.abs(w - 1.0))]))
    return pi / pi.sum()


class SpanLengthPrior(SequenceLabelModel):
    """A token model's posteriors combined with the crowd's tag chain (module docstring).

    Args:
        model: a registered sequence model name (:mod:`.registry`) or an unfitted sequence
            model (cloned from its ``get_params``); default ``"text_prior_dawid_skene"``.
        smoothing: pseudo-count added to every transition and start count.

    Attributes:
        model_: the token model, fitted on all annotations.
        transitions_: (K, K) ``A``, rows = the previous tag.
        initial_: (K,) ``p0``.
        tag_frequencies_: (K,) ``π``, the stationary distribution of ``A``.
        posteriors_: (T, K) the chain's marginals.
        confusion_matrices_: (W, K, K) those of ``model_``.
        class_priors_: (K,) those of ``model_``.
    """

    def __init__(self, model: Any = "text_prior_dawid_skene", smoothing: float = 1.0) -> None:
        self.model = model
        self.smoothing = smoothing

    def _new_model(self) -> SequenceLabelModel:
        from .registry import new_sequence_model   # lazy: the registry lists this module
        return new_sequence_model(self.model)

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None) -> "SpanLengthPrior":
        seq = self._check_fit_sequences(sequences)
        if check_number(self.smoothing, f"{type(self).__name__} smoothing") == 0:
            raise ValueError(f"smoothing must be positive, got {self.smoothing!r}")
        extra = {} if token_prior is None else {"token_prior": token_prior}
        from .calibration import CalibratedThreshold   # lazy, as the registry's models
        inner = self._new_model()
        if isinstance(inner, CalibratedThreshold):
            # it decodes at its own θ, chosen for its own posteriors (not the chain's), and
            # may fit in another tag scheme than the chain's
            raise ValueError(f"SpanLengthPrior cannot wrap {type(inner).__name__}: wrap the "
                             "other way, CalibratedThreshold(SpanLengthPrior(...)), whose θ is "
                             "then chosen for the chain's marginals")
        self.model_ = inner.fit(seq, **extra)
        if self.model_.sequences_.scheme != seq.scheme:
            raise ValueError(f"SpanLengthPrior: {type(inner).__name__} fitted the sequences in "
                             f"{self.model_.sequences_.scheme}, the chain reads them in "
                             f"{seq.scheme}; give it sequences in one scheme")
        self.transitions_, self.initial_ = annotation_transitions(seq, self.smoothing)
        self.tag_frequencies_ = stationary(self.transitions_)
        self._set_fitted(seq, self._combine(self.model_.posteriors_, seq),
                         np.log(self.model_.confusion_matrices_), self.model_.class_priors_)
        return self

    def _combine(self, q: np.ndarray, seq: SequenceAnnotations) -> np.ndarray:
        """(T, K) chain marginals from the token model's (T, K) posteriors ``q``."""
        log_em = np.log(np.maximum(q, _FLOOR)) - np.log(self.tag_frequencies_)
        chains = Chains(seq.tokens)
        gamma = forward_backward(chains, log_em, self.transitions_, self.initial_)[0]
        post = q.copy()             # tokens of empty documents (none in a chain) keep q
        post[chains.tok] = gamma
        return post

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        return self._combine(self._handed_over(self.model_, sequences, token_prior), sequences)

    def _decode(self, post: np.ndarray, sequences: SequenceAnnotations) -> np.ndarray:
        return decode_marginals(post, self.model_._ties_positive)
