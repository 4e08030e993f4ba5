"""A decoding threshold chosen by the crowd's own held-out agreement (no gold).

A token model's posterior ``P(token in a span)`` is decoded by a threshold θ; ½ is the
Bayes rule for token accuracy, but neither token F1 is what θ = ½ maximises nor are the
posteriors calibrated: the annotators' errors on spans are correlated (a worker who
stretches a span stretches it over several tokens), which the models treat as independent
evidence, so their posteriors are over-confident. :class:`CalibratedThreshold` wraps any
sequence model and picks θ from the crowd alone:

1. in each of ``n_draws`` draws, hide one annotation in every document with at least two
   (:func:`~.selection.heldout_annotations`) and fit the model on the rest;
2. for every θ of ``grid``, decode the refitted posteriors at θ and count the tokens where
   decoded and hidden tags agree on a span label, the decoded span tokens and the hidden span
   tokens (pooled over draws);
3. θ = the grid value with the highest micro token F1 against the hidden annotators
   (ties: the value closest to ½); the model is then fitted on all annotations and decoded
   at θ.

For two tags without a text prior, a threshold on the posterior is the same decision as
:class:`~.models.TokenDawidSkene`'s tempered decoding at some τ (both move the cut on the
token's log-likelihood ratio), so this also chooses τ; it differs in the criterion
(agreement F1 rather than held-out likelihood) and applies to any model.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..arguments import check_count
from .annotations import SequenceAnnotations, checked_annotation_mask
from .base import SequenceLabelModel, decode_marginals
from .spans import tag_labels

__all__ = ["CalibratedThreshold", "agreement_counts", "DEFAULT_GRID"]

#: θ grid: 0.05, 0.10, ..., 0.95.
DEFAULT_GRID = tuple(np.round(np.arange(0.05, 0.951, 0.05), 2).tolist())


def agreement_counts(post: np.ndarray, full: SequenceAnnotations, hidden: np.ndarray,
                     grid: Sequence[float], ties_positive: bool = False) -> np.ndarray:
    """(G, 3) counts per threshold: tokens where the decoded and hidden tags share a span
    label, decoded span tokens, hidden span tokens, over the hidden annotations' tokens.

    Args:
        post: (T, K) posteriors of a model fitted without the hidden annotations.
        full: all annotations.
        hidden: (A,) bool over ``full``'s annotations (document, annotator pairs): the
            hidden ones.
        grid: (G,) the thresholds θ.
        ties_positive: a token whose span mass equals θ is tagged, as the model decodes it
            (:func:`~.base.decode_marginals`; majority vote's shares fall on the grid).
    """
    hidden = checked_annotation_mask(hidden, len(full.assign_doc), "agreement_counts")
    if np.shape(post) != (full.n_tokens, full.n_tags):
        raise ValueError(f"post must have shape ({full.n_tokens}, {full.n_tags}), got "
                         f"{np.shape(post)}")
    obs = np.flatnonzero(hidden[full.obs_assign])
    tok = full.obs_token[obs]
    theirs = tag_labels(full.obs_tag[obs], full.scheme)
    p = post[tok]
    mine_label = tag_labels(decode_marginals(p, threshold=0.0), full.scheme)   # best non-O
    cut = 1.0 - np.asarray(grid, np.float64)[None, :]      # decode_marginals' test, per θ
    tagged = p[:, :1] <= cut if ties_positive else p[:, :1] < cut              # (n, G)
    same = (mine_label == theirs) & (theirs >= 0)
    return np.stack([(tagged & same[:, None]).sum(0), tagged.sum(0),
                     np.full(len(grid), (theirs >= 0).sum())], axis=1).astype(np.float64)


def _f1(counts: np.ndarray) -> np.ndarray:
    tp, pred, ref = counts.T
    den = pred + ref
    return np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0)


class CalibratedThreshold(SequenceLabelModel):
    """A sequence model decoded at a threshold chosen by held-out agreement (module docstring).

    Args:
        model: a registered sequence model name (:mod:`.registry`) or an unfitted sequence
            model (cloned from its ``get_params``); default ``"dawid_skene"``.
        scheme: ``"IO"``, ``"BIO"`` or None (fit the sequences' own scheme); with another
            scheme the sequences are re-tagged before fitting and the fitted posteriors,
            tags and spans are in that scheme.
        grid: thresholds θ to try.
        n_draws: held-out draws.
        seed: seed of the first draw (draw ``d`` uses ``seed + d``).

    Attributes: model_ (the fitted model, on all annotations), threshold_ (θ),
    threshold_table_ (frame ``threshold, agreement_f1, precision, recall``), and the common
    ones (those of ``model_``).
    """

    def __init__(self, model: Any = "dawid_skene", scheme: Optional[str] = None,
                 grid: Sequence[float] = DEFAULT_GRID, n_draws: int = 3, seed: int = 0) -> None:
        self.model = model
        self.scheme = scheme
        self.grid = grid
        self.n_draws = n_draws
        self.seed = seed

    def _new_model(self) -> SequenceLabelModel:
        from .registry import new_sequence_model   # lazy: the registry lists this module
        return new_sequence_model(self.model)

    def fit(self, sequences: SequenceAnnotations, token_prior: Any = None
            ) -> "CalibratedThreshold":
        from .selection import heldout_annotations   # selection imports the model modules
        seq = self._check_fit_sequences(sequences)
        try:
            grid = np.asarray(self.grid, np.float64)
        except (TypeError, ValueError):   # text, a ragged list: numpy's message names no grid
            grid = np.full(1, np.nan)
        if grid.ndim != 1 or not len(grid) or not ((grid > 0) & (grid < 1)).all():   # NaN too
            raise ValueError(f"grid must be thresholds in (0, 1), got {self.grid!r}")
        check_count(self.n_draws, f"{type(self).__name__} n_draws", 1)
        check_count(self.seed, f"{type(self).__name__} seed")
        extra = {} if token_prior is None else {"token_prior": token_prior}
        counts = np.zeros((len(grid), 3))
        for draw in range(int(self.n_draws)):
            hidden = heldout_annotations(seq, None, self.seed + draw)
            if not hidden.any():
                break
            model = self._new_model().fit(seq.drop_annotations(hidden), **extra)
            counts += agreement_counts(model.predict_proba(), seq, hidden, grid,
                                       model._ties_positive)
        f1 = _f1(counts)
        if counts[:, 2].sum() == 0:          # nothing to hold out: the plain rule
            best = 0.5
        else:
            top = np.flatnonzero(f1 >= f1.max() - 1e-12)
            best = float(grid[top[np.argmin(np.abs(grid[top] - 0.5))]])
        tp, pred, ref = counts.T
        self.threshold_table_ = pd.DataFrame({
            "threshold": grid, "agreement_f1": f1,
            "precision": np.divide(tp, pred, out=np.full(len(tp), np.nan), where=pred > 0),
            "recall": np.divide(tp, ref, out=np.full(len(tp), np.nan), where=ref > 0)})
        self.threshold_ = best
        self.model_ = self._new_model().fit(seq, **extra)
        self._set_fitted(seq, self.model_.posteriors_, np.log(self.model_.confusion_matrices_),
                         self.model_.class_priors_)
        return self

    def _check_sequences(self, sequences: Any) -> SequenceAnnotations:
        seq = super()._check_sequences(sequences)
        if self.scheme is not None and seq.scheme != str(self.scheme).upper():
            seq = seq.with_scheme(self.scheme)
        return seq

    def _sequence_posteriors(self, sequences: SequenceAnnotations, token_prior: Any) -> np.ndarray:
        return self._handed_over(self.model_, sequences, token_prior)

    def _decode(self, post: np.ndarray, sequences: SequenceAnnotations) -> np.ndarray:
        return decode_marginals(post, self.model_._ties_positive, self.threshold_)
