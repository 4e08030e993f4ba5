"""The label-model surface extended to sequences, and the steps the sequence models share.

A sequence label model is a :class:`crowd_keras.aggregation.LabelModel` whose items are the
tokens of a :class:`~.annotations.SequenceAnnotations` and whose classes are its tags:

* ``fit(sequences, token_prior=None) -> self``;
* ``predict_proba()`` (T, K): per-token tag distribution; ``predict()`` (T,): decoded tags
  (not an argmax over tags: see :func:`decode_marginals`); ``predict_spans()``: the decoded
  spans (``doc, start, end, label, text, score``);
* ``annotator_quality_``: per annotator, span precision/recall/F1 and token
  precision/recall/F1 against the aggregate, and the model's estimated token accuracy;
  ``confusion_matrices_`` (W, K, K): token confusion matrices, rows = true tag;
* with new ``SequenceAnnotations`` (the fitted annotators and tags), ``predict_proba``,
  ``predict`` and ``predict_spans`` score them under the fitted model.

They are not in :func:`crowd_keras.aggregation.get_label_model`'s registry: their ``fit``
needs the documents' token order (HMM-Crowd's transitions) and texts (spans), which an
:class:`~crowd_keras.Annotations` does not carry; :mod:`.registry` lists them by name.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..aggregation.base import LabelModel, check_settings
from ..aggregation.dawid_skene import m_step, sufficient_statistics
from ..arguments import check_count, check_number
from ..errors import CrowdDataError
from ..numerics import normalize_rows, sparse_dot
from .annotations import SequenceAnnotations
from .quality import annotator_quality

__all__ = ["SequenceLabelModel", "decode_marginals", "shrunk_m_step", "pooled_m_step",
           "emission_loglik", "token_log_prior"]


def decode_marginals(post: np.ndarray, ties_positive: bool = False,
                     threshold: float = 0.5) -> np.ndarray:
    """(T,) tags from per-token marginals (T, K).

    A token is tagged when the tags other than ``O`` have more than ``threshold`` of its mass
    (default half; at least that with ``ties_positive``: majority vote's "at least half of the
    annotators" rule), and then gets the most probable of them; otherwise it is ``O``. For one
    span label in IO this is ``P(I) > θ``; in BIO, ``P(B) + P(I) > θ`` and then the likelier of
    B and I.
    """
    p_out = post[:, 0]
    cut = 1.0 - threshold
    tagged = p_out <= cut if ties_positive else p_out < cut
    best = 1 + np.argmax(post[:, 1:], axis=1)
    return np.where(tagged, best, 0)


def shrunk_m_step(XT: sp.spmatrix, post: np.ndarray, strength: float, smoothing: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dawid-Skene M-step with every annotator shrunk toward the pooled annotator, from the
    (W·K, T) transposed vote incidence ``XT`` and the (T, K) token posteriors: the
    statistics of :func:`~crowd_keras.aggregation.dawid_skene.sufficient_statistics`, then
    :func:`pooled_m_step`."""
    return pooled_m_step(*sufficient_statistics(XT, post), strength, smoothing)


def pooled_m_step(counts: np.ndarray, class_mass: np.ndarray, strength: float,
                  smoothing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dawid-Skene M-step with every annotator shrunk toward the pooled annotator.

    ``π_w[t, l] ∝ E#_w(z=t, y=l) + s·π̄[t, l] + smoothing`` with ``π̄`` the row-normalised sum
    of all annotators' expected counts (an empirical-Bayes Dirichlet prior of strength ``s``
    centred on the pooled confusion): the expected counts plus ``s·π̄`` go to
    :func:`~crowd_keras.aggregation.dawid_skene.m_step` (Dawid & Skene 1979, Eq. 2.3-2.4).
    The arguments are sums over tokens, so the statistics of blocks of documents add up.

    Args:
        counts: (W·K, K) expected counts, ``counts[w·K + l, t]`` = expected number of tokens of
            true tag t that annotator w tagged l (the first statistic of
            :func:`~crowd_keras.aggregation.dawid_skene.sufficient_statistics`).
        class_mass: (K,) expected number of tokens of each true tag.
        strength: ``s``, the pseudo-count of the pooled confusion added to each annotator's
            counts (0: plain Dawid-Skene).
        smoothing: the pseudo-count added to every cell of ``π̄``, of each ``π_w`` and of the
            class prior.

    Returns:
        ``(class_prior (K,), log_pi (W, K, K), pooled (K, K))``; rows = true tag.
    """
    k = class_mass.shape[0]
    pooled = normalize_rows(counts.reshape(-1, k, k).sum(0).T + smoothing)   # (t, l)
    if strength:
        counts = counts + strength * np.tile(pooled.T, (counts.shape[0] // k, 1))
    prior, log_pi = m_step(counts, class_mass, smoothing)
    return prior, log_pi, pooled


def emission_loglik(X: sp.csr_matrix, log_pi: np.ndarray) -> np.ndarray:
    """(T, K): ``e_t(z) = Σ_{annotations (t, w, l)} log π_w[z, l]``, one sparse product with
    the (T, W·K) vote incidence ``X`` (the log-likelihood of a token's labels given its tag)."""
    k = log_pi.shape[1]
    return sparse_dot(X, log_pi.transpose(0, 2, 1).reshape(-1, k))


def token_log_prior(token_prior: Any, n_tokens: int, k: int) -> Optional[tuple]:
    """Validate a per-token tag prior: ``(log q (T', K), rows (T',))`` of the tokens that have
    one, or None. ``token_prior`` is (T, K) probabilities with NaN rows where there is none,
    or (T,) ``P(tagged)`` for two tags."""
    if token_prior is None:
        return None
    q = np.asarray(token_prior, np.float64)
    if q.ndim == 1 and k == 2:
        q = np.stack([1.0 - q, q], axis=1)
    if q.shape != (n_tokens, k):
        raise CrowdDataError(f"token_prior must have shape ({n_tokens}, {k}) (or ({n_tokens},) "
                             f"for two tags), got {np.shape(token_prior)}")
    nan = np.isnan(q)
    partial = nan.any(axis=1) & ~nan.all(axis=1)
    if partial.any():   # NaN marks a token without a prior: the whole row, not one entry
        t = int(np.argmax(partial))
        raise CrowdDataError(f"token_prior row {t} mixes NaN and numbers: {q[t].tolist()} "
                             "(a row of NaN: no prior for that token)")
    rows = np.flatnonzero(~nan.any(axis=1))
    q = q[rows]
    if ((q < 0) | (q > 1)).any() or not np.allclose(q.sum(1), 1.0, atol=1e-4):
        raise CrowdDataError("token_prior rows must be probabilities summing to 1 (NaN = none)")
    return np.log(np.clip(q, 1e-6, 1.0)), rows


def prior_logits(prior: np.ndarray, rows: Optional[tuple], n: int) -> np.ndarray:
    """(T, K) log prior of every token: ``log ρ`` of the (K,) ``prior``, or the token prior
    where there is one (``rows``: :func:`token_log_prior`'s ``(log q, token rows)``)."""
    out = np.tile(np.log(np.maximum(prior, 1e-300)), (n, 1))
    if rows is not None:
        out[rows[1]] = rows[0]
    return out


class SequenceLabelModel(LabelModel):
    """Base class of the sequence label models (see the module docstring).

    Subclasses implement ``fit`` (setting ``sequences_``, ``annotations_``, ``posteriors_``,
    ``confusion_matrices_``, ``class_priors_``) and ``_sequence_posteriors(sequences,
    token_prior)`` for new sequences; ``_decode`` may be overridden (Viterbi).
    """

    _ties_positive = False
    sequences_: SequenceAnnotations

    def _check_sequences(self, sequences: Any) -> SequenceAnnotations:
        if not isinstance(sequences, SequenceAnnotations):
            if type(sequences).__name__ == "TokenVotes":   # not the ones it was fitted on
                raise CrowdDataError(
                    f"{type(self).__name__} scores the labeling-function votes it was fitted "
                    "on (predict() or predict(votes) with those votes); for other votes, fit "
                    "a model on them")
            raise CrowdDataError(f"{type(self).__name__} fits SequenceAnnotations (documents, "
                                 f"spans), got {type(sequences).__name__}")
        return sequences

    def _resolved(self, sequences: Any) -> tuple:
        """``(documents, fitted)``: the fitted documents and True when ``sequences`` is them
        (None: the fitted ones; the labeling-function votes fitted; or documents equal to the
        fitted ones, given again, unpickled or rebuilt: their posteriors are the fit's, with
        its cross-fitted prior and its votes), else the checked ``sequences`` and False."""
        if sequences is None or sequences is self.sequences_ or \
                sequences is getattr(self, "votes_", None):
            return self.sequences_, True
        checked = self._check_sequences(sequences)
        if checked.equals(self.sequences_):
            return self.sequences_, True
        return checked, False

    def _check_settings(self) -> None:
        """The shared settings, checked before any work:
        :func:`~crowd_keras.aggregation.base.check_settings` (``max_iter``, ``tol``,
        ``smoothing``, ``seed``), ``max_iter`` at least 1 (the EM loops run one iteration at
        least) and ``prior_strength`` a finite number >= 0 (a negative pseudo-count makes NaN
        posteriors)."""
        check_settings(self)
        name, params = type(self).__name__, vars(self)
        if params.get("max_iter") is not None:
            check_count(params["max_iter"], f"{name} max_iter", 1)
        if params.get("prior_strength") is not None:
            check_number(params["prior_strength"], f"{name} prior_strength")

    def _check_fit_sequences(self, sequences: Any) -> SequenceAnnotations:
        """The sequences to fit: at least one annotation (without any, every token's
        posterior is a tie that would decode as a guess)."""
        seq = self._check_sequences(sequences)
        if seq.annotations.n_annotations == 0:
            why = (f"the {seq.n_docs} documents have no tokens" if seq.n_tokens == 0 else
                   f"none of the {seq.n_docs} documents has an annotation" if not
                   len(seq.assign_doc) else "no document with a token has an annotation")
            raise CrowdDataError(f"{type(self).__name__}: nothing to fit, {why}")
        return seq

    def _aligned(self, sequences: SequenceAnnotations):
        if list(sequences.tags) != list(self.sequences_.tags):
            raise CrowdDataError(f"tags {list(sequences.tags)} differ from the fitted tags "
                                 f"{list(self.sequences_.tags)}")
        return self._align(sequences.annotations)

    def predict_proba(self, sequences: Optional[SequenceAnnotations] = None,
                      token_prior: Any = None) -> np.ndarray:
        """(T, K) tag distribution of every token (of ``sequences`` under the fitted model)."""
        self._check_fitted()
        if sequences is None:
            if token_prior is not None:   # the fitted tokens' posteriors are already made
                raise ValueError(f"{type(self).__name__}: token_prior scores new sequences "
                                 "(predict_proba(sequences, token_prior=...)); the fitted "
                                 "tokens' prior is given to fit(sequences, token_prior=...)")
            return self.posteriors_.copy()
        documents, fitted = self._resolved(sequences)
        if fitted and token_prior is None:
            # the fitted documents: their fitted posteriors (a cross-fitted text prior or
            # labeling-function votes are part of the fit, not of the sequences)
            return self.posteriors_.copy()
        return self._sequence_posteriors(documents, token_prior)

    def _sequence_posteriors(self, sequences: SequenceAnnotations,
                             token_prior: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _decode(self, post: np.ndarray, sequences: SequenceAnnotations) -> np.ndarray:
        return decode_marginals(post, self._ties_positive)

    def predict(self, sequences: Optional[SequenceAnnotations] = None,
                token_prior: Any = None) -> np.ndarray:
        """(T,) decoded tag codes (classes: ``sequences.tags``)."""
        self._check_fitted()
        return self._decode(self.predict_proba(sequences, token_prior),
                            self._resolved(sequences)[0])

    def predict_spans(self, sequences: Optional[SequenceAnnotations] = None,
                      token_prior: Any = None) -> pd.DataFrame:
        """Decoded spans: ``doc, start, end, label, text, score`` (score: the mean over the
        span's tokens of the probability that the token is in a span of that label).

        A document nobody annotated is kept: its tokens are scored by the fitted prior alone
        (tag frequencies, or the chain's start and transitions), so where the prior favours a
        span label it decodes to spans nobody marked. To keep only annotated documents:
        ``spans[spans["doc"].isin(seq.doc_ids[seq.assign_doc])]``."""
        self._check_fitted()
        seq = self._resolved(sequences)[0]
        post = self.predict_proba(sequences, token_prior)
        tags = self._decode(post, seq)      # predict's tags, without scoring the tokens twice
        return seq.decode(tags, scores=_label_mass(post, tags, seq))

    def _scored(self, annotations: Any) -> tuple:
        """The quality scores' inputs (``consensus_quality``, ``label_issues``,
        ``next_to_label``, ``annotation_quality``); new documents come as
        :class:`~.annotations.SequenceAnnotations` (their tokens are the items), scored by
        ``predict_proba`` and coded with the fitted annotators (others left out, counted in
        ``n_unknown_annotations_``)."""
        if not isinstance(annotations, SequenceAnnotations):
            return super()._scored(annotations)
        post = self.predict_proba(annotations)
        return self._aligned(self._check_sequences(annotations)), post, None

    def annotation_quality(self, annotations: Any = None) -> np.ndarray:
        """(annotations,) chance that each token label is its token's true tag, in the stored
        order of the token annotations (``annotations.annotations.to_frame()`` rows for new
        :class:`~.annotations.SequenceAnnotations`)."""
        if not isinstance(annotations, SequenceAnnotations):
            return super().annotation_quality(annotations)
        from ..aggregation.quality import held_out_posteriors
        ann, post, _ = self._scored(annotations)
        given = self._check_sequences(annotations).annotations   # unknown annotators too
        held = held_out_posteriors(post, ann, reference=self._quality_reference(ann))
        return held[given.items, given.labels]

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: ``annotator, n_documents, n_spans, accuracy`` (the model's token
        accuracy, Σ_k ρ_k π_kk), ``span_precision, span_recall, span_f1`` and
        ``token_precision, token_recall, token_f1`` against the aggregate (decoded) spans."""
        self._check_fitted()
        return annotator_quality(self.sequences_, self.predict(), self.confusion_matrices_,
                                 self.class_priors_)

    def _set_fitted(self, seq: SequenceAnnotations, post: np.ndarray, log_pi: np.ndarray,
                    prior: np.ndarray) -> None:
        self.sequences_ = seq
        self.annotations_ = seq.annotations
        self.posteriors_ = post
        self.confusion_matrices_ = np.exp(log_pi)
        self.class_priors_ = prior


def _label_mass(post: np.ndarray, tags: np.ndarray, seq: SequenceAnnotations) -> np.ndarray:
    """(T,) probability that each token carries its decoded tag's span label (B + I mass)."""
    if seq.scheme == "IO":
        return post[np.arange(len(tags)), tags]
    lab = np.maximum((tags - 1) // 2, 0)
    rows = np.arange(len(tags))
    return np.where(tags > 0, post[rows, 1 + 2 * lab] + post[rows, 2 + 2 * lab], post[:, 0])
