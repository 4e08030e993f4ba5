"""Tokenisation with character offsets, explicit and pluggable.

Every token of every document lives in one flat table (:class:`Tokens`): token ``t`` of the
corpus covers characters ``start[t]:end[t]`` (end exclusive) of document ``doc[t]``, and the
tokens of document ``d`` are ``doc_ptr[d]:doc_ptr[d + 1]``. The label models see a corpus as
one long array of tokens (the items of a token-level :class:`crowd_keras.Annotations`).

The default tokenizer splits on whitespace the way the PICO reference figures do: a token
is a maximal run of characters that are not ``str.isspace`` (so NO-BREAK SPACE, THIN SPACE and
the other Unicode spaces separate tokens too), found for the whole corpus at once with numpy.
A user tokenizer is any callable ``text -> iterable of (start, end)`` character offsets
(:func:`regex_tokenizer` builds one from a regular expression); its output is validated
(located :class:`~crowd_keras.CrowdDataError` on an empty, overlapping, unordered or
out-of-text token).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from ..codes import MAX_CODE, frozen, show
from ..errors import CrowdDataError

__all__ = ["Tokens", "tokenize", "whitespace_tokenize", "regex_tokenizer", "token_strings",
           "Tokenizer", "TOKENIZER_CONTRACT", "MAX_OFFSET", "check_offsets"]

Tokenizer = Union[None, str, Callable[[str], Any]]

#: Largest character offset read (2**53: exact in float64, far beyond any text).
MAX_OFFSET = MAX_CODE


def check_offsets(start: Any, end: Any, where: Callable[[int], str]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(n,) int64 start and end character offsets of n spans, each checked to be an integer
    in ``0..2**53`` before any arithmetic (``10**30`` would wrap to a negative int64; ``2.5``
    would be truncated), with ``start >= 0`` and ``end >= start``. Booleans and text are not
    offsets. ``where(i)`` names span ``i`` in the message. Vectorised: object values are
    looked at one by one only when the column is not numeric."""
    out = []
    for col, values in (("start", start), ("end", end)):
        raw = values if isinstance(values, pd.Series) else pd.Series(
            np.asarray(values) if not isinstance(values, list) else values,
            dtype=None if not isinstance(values, list) else object)
        raw = raw.reset_index(drop=True)
        odd = raw.map(lambda v: isinstance(v, (bool, np.bool_, str, bytes))).to_numpy(bool) \
            if raw.dtype.kind in "bSUO" else np.zeros(len(raw), bool)   # "O": pandas' str too
        v = pd.to_numeric(raw.where(~odd, None) if odd.any() else raw,
                          errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(v) | (v != np.round(v)) | odd
        if bad.any():
            r = int(np.argmax(bad))
            raise CrowdDataError(f"{where(r)}: {col} must be an integer character offset, got "
                                 f"{show(raw.iloc[r])}")
        huge = np.abs(v) > MAX_OFFSET
        if huge.any():
            r = int(np.argmax(huge))
            raise CrowdDataError(f"{where(r)}: {col} {show(raw.iloc[r])} is too large for a "
                                 "character offset (beyond 2**53)")
        out.append(v.astype(np.int64))
    start, end = out
    for bad, what in ((start < 0, "negative start"), (end < start, "end before start")):
        if bad.any():
            r = int(np.argmax(bad))
            raise CrowdDataError(f"{where(r)}: {what} (start {start[r]}, end {end[r]})")
    return start, end


@dataclass(frozen=True, eq=False)
class Tokens:
    """The tokens of a corpus, flat.

    Attributes:
        doc_ptr: (D + 1,) int64, document ``d``'s tokens are ``doc_ptr[d]:doc_ptr[d+1]``.
        start: (T,) int64 character offset of each token's start in its document.
        end: (T,) int64 character offset of its end (exclusive).
    """

    doc_ptr: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def from_arrays(cls, doc_of_token: np.ndarray, start: np.ndarray, end: np.ndarray,
                    n_docs: int) -> "Tokens":
        """From per-token document codes (non-decreasing) and offsets."""
        counts = np.bincount(np.asarray(doc_of_token, np.int64), minlength=n_docs)
        ptr = np.zeros(n_docs + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        return cls(frozen(ptr), frozen(np.asarray(start, np.int64)),
                   frozen(np.asarray(end, np.int64)))

    @property
    def n_tokens(self) -> int:
        return len(self.start)

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    @property
    def lengths(self) -> np.ndarray:
        """(D,) number of tokens per document."""
        return np.diff(self.doc_ptr)

    @property
    def doc(self) -> np.ndarray:
        """(T,) document code of each token."""
        return np.repeat(np.arange(self.n_docs), self.lengths)

    @property
    def position(self) -> np.ndarray:
        """(T,) position of each token in its document (0-based)."""
        return np.arange(self.n_tokens) - np.repeat(self.doc_ptr[:-1], self.lengths)

    def subset(self, docs: Sequence[int]) -> tuple["Tokens", np.ndarray]:
        """The tokens of ``docs`` (in that order) and the (T',) global indices they came from."""
        docs = np.asarray(docs, np.int64)
        lens = self.lengths[docs]
        idx = (np.repeat(self.doc_ptr[docs] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
               + np.arange(int(lens.sum())))
        return Tokens.from_arrays(np.repeat(np.arange(len(docs)), lens), self.start[idx],
                                  self.end[idx], len(docs)), idx


def _per_code_point(code_points: np.ndarray, fn: Callable[[int], Any], dtype: Any) -> np.ndarray:
    """``fn`` of each code point, evaluated once per distinct code point (a lookup table
    indexed by code point: no sort, no loop over characters)."""
    if len(code_points) == 0:
        return np.zeros(0, dtype)
    present = np.zeros(int(code_points.max()) + 1, bool)
    present[code_points] = True
    distinct = np.flatnonzero(present)
    table = np.zeros(len(present), dtype)
    table[distinct] = np.fromiter((fn(int(c)) for c in distinct), dtype=dtype, count=len(distinct))
    return table[code_points]


def _space_flags(code_points: np.ndarray) -> np.ndarray:
    """``str.isspace`` of each code point."""
    return _per_code_point(code_points, lambda c: chr(c).isspace(), bool)


def _code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The corpus as one (N,) uint32 array of code points, documents joined by one space,
    and the (D,) offset of each document in it."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    joined = " ".join(texts) + " "
    # a lone surrogate (a text cut inside an emoji) is one character, as str indexes it
    cp = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    base = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    return cp, base


def whitespace_tokenize(texts: Sequence[str]) -> Tokens:
    """Maximal runs of non-space characters (``str.isspace``), for the whole corpus at once.

    The texts are joined with one space and decoded to code points; a token starts where a
    non-space character follows a space and ends where a space follows a non-space: two
    ``diff``\\ s of the non-space mask, no loop over characters or tokens.
    """
    texts = list(texts)
    if not texts:
        return Tokens.from_arrays(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), 0)
    cp, base = _code_points(texts)
    nonspace = ~_space_flags(cp)
    edge = np.diff(np.concatenate([[False], nonspace, [False]]).astype(np.int8))
    g_start = np.flatnonzero(edge == 1)
    g_end = np.flatnonzero(edge == -1)
    doc = np.searchsorted(base, g_start, side="right") - 1
    return Tokens.from_arrays(doc, g_start - base[doc], g_end - base[doc], len(texts))


def regex_tokenizer(pattern: str = r"\w+|[^\w\s]") -> Callable[[str], list]:
    """A tokenizer from a regular expression: each match is a token (default: words and
    single punctuation marks, e.g. ``"(n=12)"`` → ``( n = 12 )``)."""
    rx = re.compile(pattern)

    def tokenizer(text: str) -> list:
        return [m.span() for m in rx.finditer(text)]

    tokenizer.__name__ = f"regex_tokenizer({pattern!r})"
    return tokenizer


def tokenize(texts: Sequence[str], tokenizer: Tokenizer = None, *,
             doc_ids: Optional[Sequence] = None) -> Tokens:
    """Tokenise every text.

    Args:
        texts: (D,) document texts.
        tokenizer: ``None`` or ``"whitespace"`` (the default, :func:`whitespace_tokenize`), or a
            callable ``text -> iterable of (start, end)`` called once per document.
        doc_ids: (D,) the documents' ids, which error messages name (default positions).

    Raises:
        CrowdDataError: a user tokenizer raised, or returned an empty token, a token outside
            the text, or tokens out of order or overlapping (naming the document and token).
        TypeError: ``texts`` is one string (it would be one document per character).
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"texts must be a list of document texts, got one {type(texts).__name__}"
                        " (pass [text] for one document)")
    texts = list(texts)

    def named(i: int) -> str:   # a document as messages name it: its id when given
        return show(doc_ids[i]) if doc_ids is not None else str(i)

    not_text = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if not_text:
        i = not_text[0]
        raise CrowdDataError(f"document {named(i)}: text must be a string, got "
                             f"{type(texts[i]).__name__}")
    if tokenizer is None or tokenizer == "whitespace":
        return whitespace_tokenize(texts)
    if not callable(tokenizer):
        raise ValueError(f"tokenizer must be None, 'whitespace' or a callable, got {tokenizer!r}")
    def tokens_of(i: int, text: str) -> np.ndarray:
        try:
            result = tokenizer(text)
            if not isinstance(result, (str, bytes)) and hasattr(result, "__iter__"):
                result = list(result)   # a generator runs here
        except Exception as err:   # which of thousands of documents it failed on
            name = getattr(tokenizer, "__name__", type(tokenizer).__name__)
            raise CrowdDataError(f"tokenizer {name} on document {named(i)} raised "
                                 f"{type(err).__name__}: {err}") from err
        return _token_pairs(result, named(i), tokenizer)

    per_doc = [tokens_of(i, t) for i, t in enumerate(texts)]
    lens = np.fromiter((len(p) for p in per_doc), dtype=np.int64, count=len(per_doc))
    pairs = np.concatenate(per_doc) if per_doc else np.zeros((0, 2), np.int64)
    doc = np.repeat(np.arange(len(texts)), lens)
    tokens = Tokens.from_arrays(doc, pairs[:, 0], pairs[:, 1], len(texts))
    _check_tokens(tokens, doc, np.fromiter((len(t) for t in texts), np.int64, len(texts)),
                  named)
    return tokens


#: What a tokenizer must return, as error messages state it.
TOKENIZER_CONTRACT = ("a tokenizer is a callable text -> iterable of (start, end) character "
                      "offset pairs, e.g. [(0, 5), (6, 11)] (regex_tokenizer(pattern) builds one)")


def _token_pairs(result: Any, doc: Any, tokenizer: Any) -> np.ndarray:
    """(n, 2) int64 offsets of one document's tokens, or :class:`CrowdDataError` stating the
    tokenizer contract and the first token that breaks it (a string, as ``str.split`` gives;
    a ``(start, end, text)`` triple; a float, a bool, an offset beyond 2**53)."""
    name = getattr(tokenizer, "__name__", type(tokenizer).__name__)
    if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        raise CrowdDataError(f"document {doc}: tokenizer {name} returned {type(result).__name__} "
                             f"{result!r:.60}; {TOKENIZER_CONTRACT}")
    items = list(result)
    if not items:
        return np.zeros((0, 2), np.int64)
    try:
        pairs = np.asarray(items)
    except (ValueError, TypeError):   # ragged: pairs mixed with triples or scalars
        pairs = np.zeros(0)
    if pairs.ndim == 2 and pairs.shape[1] == 2 and pairs.dtype.kind in "iu" \
            and (pairs.dtype.kind == "i" or pairs.max() <= MAX_OFFSET):
        return pairs.astype(np.int64)

    def fine(item: Any) -> bool:
        return (isinstance(item, (tuple, list, np.ndarray)) and len(item) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            and 0 <= v <= MAX_OFFSET for v in item))

    n = next((k for k, item in enumerate(items) if not fine(item)), 0)
    item = items[n]
    hint = ""
    if isinstance(item, str):
        hint = " (strings, as str.split gives: return their offsets instead)"
    elif isinstance(item, (tuple, list)) and len(item) == 3:
        hint = " (a (start, end, text) triple: return (start, end) only)"
    elif isinstance(item, (tuple, list)) and len(item) == 2:
        hint = " (offsets must be non-negative integers below 2**53)"
    raise CrowdDataError(f"document {doc}, token {n}: tokenizer {name} gave "
                         f"{type(item).__name__} {item!r:.60}{hint}; {TOKENIZER_CONTRACT}")


def _check_tokens(tokens: Tokens, doc: np.ndarray, text_len: np.ndarray,
                  named: Callable[[int], Any] = str) -> None:
    start, end = tokens.start, tokens.end
    first = np.zeros(len(start), bool)
    first[tokens.doc_ptr[:-1][tokens.lengths > 0]] = True
    prev_end = np.concatenate([[0], end[:-1]])
    problems = [(start < 0, "starts before the text"), (end <= start, "is empty or reversed"),
                (end > text_len[doc], "runs past the end of the text"),
                (~first & (start < prev_end), "overlaps or precedes the previous token")]
    for bad, what in problems:
        if bad.any():
            t = int(np.argmax(bad))
            raise CrowdDataError(f"document {named(int(doc[t]))}, token {int(t - tokens.doc_ptr[doc[t]])}: "
                                 f"the tokenizer's token ({int(start[t])}, {int(end[t])}) {what}")


def token_strings(texts: Sequence[str], tokens: Tokens,
                  normalize: Optional[Callable[[str], str]] = None) -> np.ndarray:
    """(T,) object array of the tokens' text.

    Vectorised by token length: the tokens of each length ℓ are gathered from the corpus'
    code points as one (n_ℓ, ℓ) block and viewed as a fixed-width string array (a loop over
    the distinct lengths, not over tokens). ``normalize`` maps each *character* (applied to
    the distinct code points once; a mapping must return one character), e.g. lower case.
    """
    texts = list(texts)
    out = np.empty(tokens.n_tokens, dtype=object)
    if tokens.n_tokens == 0:
        return out
    cp, base = _code_points(texts)
    if normalize is not None:
        def one(c: int) -> int:
            m = normalize(chr(c))
            return ord(m) if len(m) == 1 else c
        cp = _per_code_point(cp, one, np.uint32)
    gstart = base[tokens.doc] + tokens.start
    length = tokens.end - tokens.start
    for ell in np.unique(length):
        sel = np.flatnonzero(length == ell)
        block = cp[gstart[sel, None] + np.arange(ell)[None, :]].astype("<u4")
        out[sel] = block.view(f"<U{int(ell)}").ravel()
    # numpy's fixed-width strings drop trailing NULs ("ab\x00" came out "ab"): put them back
    # on the (rare) tokens that end in one
    for t in np.flatnonzero((length > 0) & (cp[gstart + np.maximum(length, 1) - 1] == 0)):
        out[t] += "\x00" * int(length[t] - len(out[t]))
    return out
