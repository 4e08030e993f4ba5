"""Inputs for Keras taggers: a vocabulary from training text and fixed-length windows.

A tagger reads documents as windows of ``length`` tokens (a long document is cut into
several; the last window of each is padded). :class:`Windows` holds, per window, the global
token index of each position (``-1`` = padding), the annotators who saw the document (the
slots of :class:`crowd_keras.layers.CrowdLayer`'s indexed form, ``-1`` = empty slot) and their
tag at each position (``-1`` where missing or padded): the targets of
:class:`crowd_keras.losses.MaskedMultiCrossEntropy`. Word ids are 0 at padding, so
``Embedding(mask_zero=True)`` gives the Keras mask that the crowd layer and the loss honour.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..errors import NotFittedError
from ..numerics import MISSING
from .annotations import SequenceAnnotations, checked_doc_codes
from .tokens import token_strings

__all__ = ["Vocabulary", "Windows", "windows", "token_forms", "FORMS"]

PAD, OOV = 0, 1


def _word_form(ch: str) -> str:
    return "0" if ch.isdigit() else ch.lower()


def _shape_form(ch: str) -> str:
    if ch.isdigit():
        return "0"
    return "X" if ch.isupper() else "x" if ch.islower() else ch


#: what a vocabulary reads of each token
FORMS = ("word", "suffix", "shape")


def token_forms(seq: SequenceAnnotations, form: str = "word") -> np.ndarray:
    """(T,) object array, one string per token of ``seq``: ``"word"`` its text in lower case
    with every digit read as ``0``; ``"suffix"`` the last three characters of that;
    ``"shape"`` upper-case letters as ``X``, lower-case as ``x``, digits as ``0``, other
    characters as themselves, each run of one symbol written once (``Xx``, ``0.0``, ``X-0``).
    The suffix and shape are computed once per distinct token."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    strings = token_strings(seq.texts, seq.tokens,
                            normalize=_shape_form if form == "shape" else _word_form)
    if form == "word" or not len(strings):
        return strings
    codes, uniq = pd.factorize(strings)
    uniq = pd.Series(np.asarray(uniq, dtype=object), dtype=object)
    mapped = uniq.str[-3:] if form == "suffix" else uniq.str.replace(r"(.)\1+", r"\1",
                                                                      regex=True)
    return np.asarray(mapped, dtype=object)[codes]


class Vocabulary:
    """Word ids learned from training text: lower case, every digit read as ``0``.

    Args:
        min_count: words seen fewer times in the training documents are out of vocabulary.
        form: what is read of each token (:func:`token_forms`): ``"word"`` (the default),
            ``"suffix"`` or ``"shape"``.

    Ids: 0 = padding, 1 = out of vocabulary, then the kept words (sorted).
    """

    def __init__(self, min_count: int = 2, form: str = "word") -> None:
        self.min_count = min_count
        self.form = form

    def fit(self, seq: SequenceAnnotations, docs: Optional[Sequence[int]] = None) -> "Vocabulary":
        """Learn the words of the documents ``docs`` (codes; default all) of ``seq``."""
        if isinstance(self.min_count, (bool, np.bool_)) or \
                not isinstance(self.min_count, (int, np.integer)) or self.min_count < 0:
            raise ValueError(f"min_count must be a non-negative integer, got {self.min_count!r}")
        words = self._words(seq)
        if docs is not None:
            docs = checked_doc_codes(docs, seq.n_docs, "Vocabulary.fit")
            words = words[np.isin(seq.tokens.doc, docs)]
        codes, uniq = pd.factorize(words)
        counts = np.bincount(codes, minlength=len(uniq))
        self.words_ = np.sort(np.asarray(uniq, dtype=object)[counts >= self.min_count])
        return self

    def _words(self, seq: SequenceAnnotations) -> np.ndarray:
        return token_forms(seq, self.form)

    @property
    def size(self) -> int:
        """Number of ids (the ``input_dim`` of the embedding)."""
        return len(self.words_) + 2

    def encode(self, seq: SequenceAnnotations) -> np.ndarray:
        """(T,) int32 word id of every token of ``seq``."""
        if not hasattr(self, "words_"):
            raise NotFittedError("this Vocabulary is not fitted yet: call fit(seq, docs) on the "
                                 "training documents first")
        words = self._words(seq)
        if not len(self.words_):
            return np.full(len(words), OOV, np.int32)
        pos = pd.Index(self.words_).get_indexer(words)
        return np.where(pos >= 0, pos + 2, OOV).astype(np.int32)


@dataclass(frozen=True)
class Windows:
    """Fixed-length windows over some documents (see the module docstring).

    Attributes:
        doc: (N,) document code of each window.
        token_index: (N, L) global token index, -1 = padding.
        annotators: (N, S) annotator codes of the document's annotations, -1 = empty slot.
        labels: (N, L, S) tag of each slot at each position, -1 = missing/padding.
        n_tokens: T, the tokens of the documents the windows were cut from (None: unknown),
            the length :meth:`gather` and :meth:`scatter` check per-token arrays against.
    """

    doc: np.ndarray
    token_index: np.ndarray
    annotators: np.ndarray
    labels: np.ndarray
    n_tokens: Optional[int] = None

    @property
    def valid(self) -> np.ndarray:
        """(N, L) bool: real positions."""
        return self.token_index >= 0

    def gather(self, values: np.ndarray, fill: float = 0) -> np.ndarray:
        """Per-token ``values`` (T, ...) laid out as windows (N, L, ...), ``fill`` at padding."""
        values = np.asarray(values)
        # word ids of another corpus (all documents, windows of a subset) were read at these
        # windows' token indices: other tokens' words, silently, when there were more of them
        if self.n_tokens is not None and (values.ndim == 0 or len(values) != self.n_tokens):
            raise ValueError(f"gather takes one value per token of the documents the windows "
                             f"were cut from, ({self.n_tokens}, ...), got shape {values.shape}")
        out = values[np.maximum(self.token_index, 0)]
        mask = self.valid.reshape(self.valid.shape + (1,) * (values.ndim - 1))
        return np.where(mask, out, np.asarray(fill, dtype=out.dtype))

    def scatter(self, values: np.ndarray, n_tokens: int, fill: float = np.nan) -> np.ndarray:
        """Window outputs (N, L, ...) back to per-token (T, ...), ``fill`` for tokens in no
        window."""
        values = np.asarray(values)
        if values.shape[:2] != self.token_index.shape:   # a bare IndexError of numpy's
            n, length = self.token_index.shape
            raise ValueError(f"scatter takes one output per window and position, "
                             f"({n}, {length}, ...), got shape {values.shape}")
        if self.n_tokens is not None and n_tokens != self.n_tokens:
            raise ValueError(f"n_tokens is {n_tokens!r}, but the windows were cut from documents "
                             f"of {self.n_tokens} tokens")
        out = np.full((n_tokens,) + values.shape[2:], fill, dtype=np.float64)
        out[self.token_index[self.valid]] = values[self.valid]
        return out


def windows(seq: SequenceAnnotations, docs: Sequence[int], length: int = 128) -> Windows:
    """Cut the documents ``docs`` (codes) of ``seq`` into windows of ``length`` tokens."""
    if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)) \
            or length < 1:
        raise ValueError(f"length must be a positive integer (tokens per window), got {length!r}")
    docs = checked_doc_codes(docs, seq.n_docs, "windows")
    tok = seq.tokens
    n_win = -(-tok.lengths[docs] // length)
    wdoc = np.repeat(docs, n_win)
    k = np.arange(int(n_win.sum())) - np.repeat(np.cumsum(n_win) - n_win, n_win)
    start = tok.doc_ptr[wdoc] + k * length
    idx = start[:, None] + np.arange(length)[None, :]
    idx = np.where(idx < tok.doc_ptr[wdoc + 1][:, None], idx, MISSING)
    # slot of each annotation among its document's (annotations are sorted by document)
    first = np.searchsorted(seq.assign_doc, seq.assign_doc)
    slot = np.arange(len(seq.assign_doc)) - first
    n_slots = max(int(slot.max()) + 1 if len(slot) else 1, 1)
    doc_annotators = np.full((seq.n_docs, n_slots), MISSING, np.int32)
    doc_annotators[seq.assign_doc, slot] = seq.assign_annotator
    token_labels = np.full((seq.n_tokens, n_slots), MISSING, np.int16)
    token_labels[seq.obs_token, slot[seq.obs_assign]] = seq.obs_tag
    labels = np.where((idx >= 0)[..., None], token_labels[np.maximum(idx, 0)], MISSING)
    return Windows(wdoc, idx, doc_annotators[wdoc], labels.astype(np.int32),
                   seq.n_tokens)
