"""Choosing sequence models and their settings from the crowd alone (no gold).

The criterion: hide one annotation in each of some documents (drawn among those with at
least two annotations by a hash of the text and the annotators' work, so in any order and
under any names; several draws), fit the model on everything else, and
score the hidden annotator's tags by their predictive log-likelihood under the fitted model,

    log p(y_hidden | other annotations[, text]) / (number of hidden token-labels),

a proper scoring rule for the model's prediction of a new annotator: for token models
``Σ_t log Σ_z p(z_t | others) π_w[z, y_tw]``; for HMM-Crowd ``log p(all) - log p(others)``
per document (two forward passes). Higher is better. The agreement F1 of the decoded tags
with the hidden annotator's tags is reported beside it as a second check.

It compares settings within one model family well (temperature, shrinkage, a text prior);
across families that define the truth differently it can mislead (a model whose "truth" is
the union of spans predicts each annotator's spans well), so read it with the agreement F1.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..arguments import check_count, check_number
from ..errors import CrowdDataError, NotFittedError
from ..numerics import GOLDEN64, id_keys, mix64
from .annotations import SequenceAnnotations, checked_annotation_mask, checked_doc_codes
from .base import SequenceLabelModel, decode_marginals
from .hmm import HMMCrowd
from .models import TokenDawidSkene
from .spans import tag_labels

__all__ = ["heldout_annotations", "annotation_keys", "heldout_log_likelihood", "heldout_scores",
           "choose_temperature", "agreement_f1"]


def annotation_keys(seq: SequenceAnnotations, seed: int = 0) -> np.ndarray:
    """(A,) uint64 key of each annotation that depends only on what was annotated, not on
    the order or the names of the documents and annotators: a mix of the document's text
    (:func:`~crowd_keras.numerics.id_keys`, with ``seed``) and of its annotator's
    fingerprint, an order-free sum over all of the annotator's annotations of their
    document's text and each token's span label (what the models read: a span given twice,
    or in another order, leaves it as it is; labels, not tags, so the IO and BIO views of a
    crowd hide the same annotations and their candidates are scored on the same labels).
    Annotators with the same fingerprint labelled the same tokens of the same texts, so
    either's key serves."""
    text = np.asarray(seq.texts, dtype=object)
    text_key = id_keys(text, 0)
    doc = seq.assign_doc[seq.obs_assign]
    position = (seq.obs_token - seq.tokens.doc_ptr[doc]).astype(np.uint64)
    with np.errstate(over="ignore"):
        label = (tag_labels(seq.obs_tag, seq.scheme) + 1).astype(np.uint64)   # 0: outside
        tag_key = mix64(text_key[doc] + mix64(position * np.uint64(len(seq.labels) + 1)
                                              + label + GOLDEN64))
        work = mix64(text_key[seq.assign_doc] + GOLDEN64)     # the document seen, tokens or not
        np.add.at(work, seq.obs_assign, tag_key)              # order-free, wrapping
        fingerprint = np.zeros(len(seq.annotator_ids), np.uint64)
        np.add.at(fingerprint, seq.assign_annotator, mix64(work))
        return mix64(mix64(fingerprint[seq.assign_annotator])
                     ^ id_keys(text, seed)[seq.assign_doc])


def heldout_annotations(seq: SequenceAnnotations, docs: Optional[Sequence[int]] = None,
                        seed: int = 0) -> np.ndarray:
    """(A,) bool: one random annotation per document of ``docs`` (codes; default all) among
    the documents with at least two annotations and a token (a hidden annotation of an
    empty document has no token-label to score).

    The draw is the annotation of least :func:`annotation_keys`: the same in any order of
    the documents, annotators and spans and under any renaming of them."""
    if docs is not None:   # ids (or codes out of range) would match no document
        docs = checked_doc_codes(docs, seq.n_docs, "heldout_annotations")
    seed = check_count(seed, "heldout_annotations seed")
    per_doc = np.bincount(seq.assign_doc, minlength=seq.n_docs) * (seq.tokens.lengths > 0)
    in_docs = np.ones(len(seq.assign_doc), bool) if docs is None else np.isin(seq.assign_doc, docs)
    cand = np.flatnonzero(in_docs & (per_doc[seq.assign_doc] >= 2))
    order = np.lexsort((annotation_keys(seq, seed)[cand], seq.assign_doc[cand]))
    c = cand[order]
    # the first candidate of each document (none when no document has two annotations)
    first = np.diff(seq.assign_doc[c], prepend=-1) != 0
    hidden = np.zeros(len(seq.assign_doc), bool)
    hidden[c[first]] = True
    return hidden


def _some_held_out(seq: SequenceAnnotations, docs: Optional[Sequence[int]],
                   seed: int) -> np.ndarray:
    """:func:`heldout_annotations`, or a clear error when nothing can be hidden (no held-out
    token-label to score)."""
    hidden = heldout_annotations(seq, docs, seed)
    if not hidden.any():
        raise CrowdDataError("no document" + ("" if docs is None else " of docs") + " has two "
                             "annotations and a token: there is no annotation to hold out "
                             "and score")
    return hidden


def _draws(n_draws: Any, seed: Any, taker: str) -> tuple[int, int]:
    """``(n_draws, seed)`` checked: at least one draw (none would score nothing), a seed
    >= 0."""
    return check_count(n_draws, f"{taker} n_draws", 1), check_count(seed, f"{taker} seed")


def _hidden_obs(full: SequenceAnnotations, model: SequenceLabelModel,
                hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obs = np.flatnonzero(hidden[full.obs_assign])
    fitted = pd.Index(model.sequences_.annotator_ids)
    who = fitted.get_indexer(full.annotator_ids[full.assign_annotator[full.obs_assign[obs]]])
    return full.obs_token[obs], who, full.obs_tag[obs].astype(np.int64)


def heldout_log_likelihood(model: SequenceLabelModel, full: SequenceAnnotations,
                           hidden: np.ndarray, proba: Optional[np.ndarray] = None) -> float:
    """Mean log-likelihood per hidden token-label (module docstring).

    Args:
        model: fitted on ``full.drop_annotations(hidden)``.
        full: all annotations.
        hidden: (A,) bool mask over ``full``'s annotations (document, annotator pairs): the
            hidden ones.
        proba: (T, K) predictive tag distribution to use for a token model (default
            ``model.predict_proba()``; e.g. ``model.tempered_proba(τ)``).
    """
    hidden = checked_annotation_mask(hidden, len(full.assign_doc), "heldout_log_likelihood")
    fitted = getattr(model, "sequences_", None)
    if fitted is None:
        raise NotFittedError(f"this {type(model).__name__} is not fitted yet: fit it on "
                             "full.drop_annotations(hidden) first")
    if fitted.n_tokens != full.n_tokens or not np.array_equal(fitted.doc_ids, full.doc_ids):
        raise CrowdDataError(f"the model was fitted on other documents ({fitted.n_docs} "
                             f"documents, {fitted.n_tokens} tokens; full has {full.n_docs}, "
                             f"{full.n_tokens}): fit it on full.drop_annotations(hidden)")
    tok, who, tag = _hidden_obs(full, model, hidden)
    if isinstance(model, HMMCrowd):
        docs = np.unique(full.assign_doc[hidden])
        diff = model.log_likelihood(full) - model.log_likelihood()
        return float(diff[docs].sum() / max(len(tok), 1))
    p = model.predict_proba() if proba is None else np.asarray(proba, np.float64)
    if p.shape != (full.n_tokens, full.n_tags):
        raise ValueError(f"proba must have shape ({full.n_tokens}, {full.n_tags}), got {p.shape}")
    pi_y = model.confusion_matrices_[who, :, tag]            # (n, K): π_w[z, y]
    return float(np.log(np.einsum("nk,nk->n", p[tok], pi_y)).mean())


def agreement_f1(tags: np.ndarray, full: SequenceAnnotations, hidden: np.ndarray) -> float:
    """Micro token F1 of decoded ``tags`` (T,) against the hidden annotations' tags (a span
    token agrees when both give it the same span label)."""
    hidden = checked_annotation_mask(hidden, len(full.assign_doc), "agreement_f1")
    obs = np.flatnonzero(hidden[full.obs_assign])
    theirs = tag_labels(full.obs_tag[obs], full.scheme)
    mine = tag_labels(full.tag_codes(tags)[full.obs_token[obs]], full.scheme)
    tp = (mine >= 0) & (mine == theirs)
    p = tp.sum() / max((mine >= 0).sum(), 1)
    r = tp.sum() / max((theirs >= 0).sum(), 1)
    return float(2 * p * r / (p + r)) if p + r else 0.0


def heldout_scores(seq: SequenceAnnotations, models: Dict[str, Any], docs: Optional[Sequence[int]]
                   = None, n_draws: int = 5, seed: int = 0,
                   token_priors: Optional[Dict[str, Any]] = None) -> pd.DataFrame:
    """Held-out log-likelihood and agreement F1 of several models, per draw.

    Args:
        seq: the annotations; each draw hides one annotation per document
            (:func:`heldout_annotations`).
        models: ``{name: model}``; a fresh copy with the same parameters is fitted per draw.
        docs: document codes whose annotations may be hidden (e.g. a dev split).
        n_draws: held-out draws.
        seed: seed of the first draw (draw ``d`` uses ``seed + d``).
        token_priors: ``{name: token_prior}`` for the models that take one.

    Returns:
        frame ``model, draw, heldout_loglik, agreement_f1``.
    """
    if not isinstance(models, Mapping) or not models:
        raise TypeError(f"models must be a non-empty {{name: model}} mapping, got "
                        f"{type(models).__name__}")
    n_draws, seed = _draws(n_draws, seed, "heldout_scores")
    rows = []
    for draw in range(n_draws):
        hidden = _some_held_out(seq, docs, seed + draw)
        rest = seq.drop_annotations(hidden)
        for name, template in models.items():
            model = type(template)(**template.get_params(deep=False))
            prior = (token_priors or {}).get(name)
            model.fit(rest, **({"token_prior": prior} if prior is not None else {}))
            rows.append({"model": name, "draw": draw,
                         "heldout_loglik": heldout_log_likelihood(model, seq, hidden),
                         "agreement_f1": agreement_f1(model.predict(), seq, hidden)})
    return pd.DataFrame(rows)


def choose_temperature(seq: SequenceAnnotations, docs: Optional[Sequence[int]] = None,
                       temperatures: Sequence[float] = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9,
                                                        1.0),
                       n_draws: int = 5, seed: int = 0, token_prior: Any = None,
                       **params: Any) -> tuple[float, pd.DataFrame]:
    """τ of :class:`~.models.TokenDawidSkene` with the best mean held-out log-likelihood.

    One fit per draw (τ changes the decoding only, :meth:`TokenDawidSkene.tempered_proba`).

    Returns:
        ``(best τ, frame)``, the frame with ``temperature, heldout_loglik, agreement_f1``
        (means over the draws), one row per τ.
    """
    n_draws, seed = _draws(n_draws, seed, "choose_temperature")
    try:
        taus = [check_number(tau, "choose_temperature temperatures") for tau in temperatures]
    except TypeError:   # one number or a string: not a grid
        raise TypeError(f"temperatures must be a list of numbers, got {temperatures!r}") from None
    if not taus or min(taus) == 0:   # τ = 0 is the prior alone, which TokenDawidSkene refuses
        raise ValueError(f"temperatures must be one or more positive numbers, got "
                         f"{list(temperatures)}")
    rows = []
    for draw in range(n_draws):
        hidden = _some_held_out(seq, docs, seed + draw)
        model = TokenDawidSkene(**{**params, "temperature": 1.0})
        model.fit(seq.drop_annotations(hidden), token_prior=token_prior)
        for tau in taus:
            p = model.tempered_proba(tau)
            rows.append({"temperature": float(tau), "draw": draw,
                         "heldout_loglik": heldout_log_likelihood(model, seq, hidden, p),
                         "agreement_f1": agreement_f1(decode_marginals(p), seq, hidden)})
    table = (pd.DataFrame(rows).groupby("temperature", as_index=False)
             [["heldout_loglik", "agreement_f1"]].mean())
    best = float(table.loc[table["heldout_loglik"].idxmax(), "temperature"])
    return best, table
