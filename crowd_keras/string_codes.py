"""Factorising arrow-backed string columns on integer keys: word by word, or by hashing each
string's words.

``pandas.factorize`` of an arrow string column hashes every string into a table of strings;
with millions of distinct ids the table spills the caches. This
module reads each string's 8-byte words (zero past its end) straight from the column's
arrow buffers as integers and works on integer hash tables, by one of two routes, chosen on
an evenly spaced sample of 2**16 rows:

- word by word, for ids made of a prefix and a counter (``"task-123456"``,
  ``"img_0042.jpg"``), where each word takes few distinct values: it factorises one word at
  a time, ranks each word's values in byte order (the order of the strings) and combines the
  running codes with each word's (a bincount where the product of the two counts is small,
  an integer factorisation otherwise); the distinct strings are rebuilt from their words,
  carried through the combinations (no pass over the rows to find one of each);
- hash then check, for random ids (hashes, UUIDs), where more than one word has many values
  (word by word, every word and every combination would be a large hash table): each row's
  words and length are mixed into one 64-bit hash (multiply and xor-shift per word,
  splitmix64's finaliser), the hashes factorised on pandas' integer hash table, every row
  compared with its group's first row (words and length), and the groups sorted as their
  strings (big-endian words, then shorter first) and renumbered. Two strings sharing a hash
  fail the check: the route then declines, so its codes are exact or not given.

The codes and the sorted distinct values are those of ``pandas.factorize(column, sort=True)``.

It declines (returns ``None``: the caller uses ``pandas.factorize``) where it would not be
exact or not pay: a column that is not arrow ``string``/``large_string``, shorter than 2**16
rows, with a null or longer than 64 bytes; on the word route, a NUL byte (a string would not
be told from its zero padding; the hash route compares lengths too); few distinct strings in
the sample (pandas' table of strings then fits the caches, and declining is cheap); a hash
collision. Timings against ``pandas.factorize`` are in ``benchmarks/PERFORMANCE.md``.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from .numerics import GOLDEN64, dense_ranks, mix64, pair_index

__all__ = ["column_codes", "factorize_strings"]

_MAX_WORDS = 8            # strings of up to 64 bytes
_SAMPLE = 1 << 16         # rows of the sample that judges each word's number of values
_FEW_PER_WORD = 1 << 12   # more distinct values of a word in the sample: a "many" word
_MIN_ROWS = 1 << 16       # shorter columns: pandas is as fast, and the sample is the column
# the first k bytes of a little-endian word, for k = 0..8
_KEEP = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _arrow(column: pd.Series) -> Any:
    """The column as one arrow ``string``/``large_string`` array without nulls, or None."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pandas without pyarrow: no arrow columns
        return None
    array = column.array
    if not isinstance(array, pd.arrays.ArrowExtensionArray):   # held in arrow, no conversion
        return None
    chunks = array.__arrow_array__()
    if not (pa.types.is_string(chunks.type) or pa.types.is_large_string(chunks.type)):
        return None
    if isinstance(chunks, pa.ChunkedArray):   # one chunk: no copy
        chunks = chunks.chunk(0) if chunks.num_chunks == 1 else chunks.combine_chunks()
    arr = chunks
    return None if arr.null_count else arr


class _Words:
    """The 8-byte words of every string of an arrow string array as native uint64 (zero
    past each string's end): ``words(w)`` is word ``w`` (bytes ``8w..8w+7``) of every row,
    ``words(w, lo, hi)`` of rows ``lo..hi-1``; ``n_words`` (default: the longest string's)
    words are read."""

    def __init__(self, arr: Any, n_words: Optional[int] = None) -> None:
        import pyarrow as pa

        n = len(arr)
        self.arr = arr
        _, offsets, data = arr.buffers()
        width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
        offsets = np.frombuffer(offsets, dtype=width)[arr.offset:arr.offset + n + 1]
        lo, hi = int(offsets[0]), int(offsets[-1])
        self.raw = np.frombuffer(data, dtype=np.uint8)[lo:hi] if data is not None and hi > lo \
            else np.zeros(0, np.uint8)
        self._offsets = offsets
        self.lengths = np.diff(offsets)
        self._view = None   # made by prepare()
        self.n_words = n_words if n_words is not None else \
            -(-int(self.lengths.max()) // 8) if n else 0

    def prepare(self) -> None:
        """Make the word views: of the bytes in place, and of a padded copy of the last
        strings' bytes (their words would read past the buffer)."""
        self.starts = self._offsets[:-1].astype(np.int64) - int(self._offsets[0])
        # rows whose n_words words lie in the buffer: all but the last few
        self._safe = int(np.searchsorted(self.starts, len(self.raw) - 8 * self.n_words, "right"))
        self._tail = int(self.starts[self._safe]) if self._safe < len(self.starts) \
            else len(self.raw)
        tail = np.zeros(len(self.raw) - self._tail + 8 * self.n_words + 8, np.uint8)
        tail[:len(self.raw) - self._tail] = self.raw[self._tail:]
        # words starting at every byte (strided views, no copy), read little-endian: the
        # bytes that vary are the low ones, which pandas' integer hash spreads (read
        # big-endian, short strings leave the low bytes 0 and its hash table collides)
        self._view, self._tail_view = (
            np.ndarray(shape=(max(len(b) - 7, 0),), dtype="<u8", buffer=b, strides=(1,))
            for b in (self.raw, tail))
        # keep[w][length]: the mask of the bytes of word w that a string of that length has
        cut = np.arange(8 * self.n_words + 1)[None, :] - 8 * np.arange(self.n_words)[:, None]
        self._keep = _KEEP[np.clip(cut, 0, 8)]

    def __call__(self, w: int, lo: int = 0, hi: Optional[int] = None) -> np.ndarray:
        starts = self.starts[lo:hi]
        safe = min(max(self._safe - lo, 0), len(starts))
        key = self._view[starts[:safe] + 8 * w]
        if safe < len(starts):   # the last rows: from the padded copy of the tail
            key = np.concatenate([key, self._tail_view[starts[safe:] + (8 * w - self._tail)]])
        key &= self._keep[w][self.lengths[lo:hi]]
        return key


def _combine(code: np.ndarray, m: int, word_code: np.ndarray,
             m_word: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the pairs (code, word_code) in their lexicographic order (both are ranks, of
    ``m`` and ``m_word`` values), and the distinct pairs ``code · m_word + word_code`` in
    that order."""
    pair = pair_index(code, word_code, m_word)
    if m * m_word <= 4 * len(pair) + 64:   # as factorize_ids: a bincount, no hash table
        return dense_ranks(pair, m * m_word)
    codes, values = pd.factorize(pair, sort=True)
    return codes.astype(np.int64), values


def _codes(words: _Words) -> tuple[np.ndarray, np.ndarray]:
    """``(codes (n,), words of each distinct string (m, n_words) uint64)`` of the strings:
    each word factorised, the codes combined in order. The distinct strings' words are
    carried through the combinations (the table's rows follow the codes), so that their
    strings are rebuilt without going back to the rows (:func:`_strings`)."""
    code, table = None, np.zeros((1, 0), np.uint64)
    for w in range(words.n_words):
        word_code, word_values = pd.factorize(words(w))
        word_values = np.asarray(word_values, dtype=np.uint64)
        if len(word_values) == 1:   # a word every string shares (a common prefix)
            table = np.concatenate([table, np.full((len(table), 1), word_values[0])], axis=1)
            continue
        # rank the values in byte order (their big-endian integer order): string order
        order = np.argsort(word_values.byteswap())
        rank = np.empty(len(word_values), np.int64)
        rank[order] = np.arange(len(word_values))
        if code is None:
            code, values = rank[word_code], np.arange(len(word_values))
        else:
            code, values = _combine(code, len(table), rank[word_code], len(word_values))
        before, this = np.divmod(values, len(word_values))
        table = np.concatenate([table[before], word_values[order][this][:, None]], axis=1)
    return (np.zeros(len(words.lengths), np.int64) if code is None else code), table


def _strings(table: np.ndarray) -> np.ndarray:
    """The strings (m,) object whose 8-byte words (zero past each end; no NUL byte inside,
    so a string's length is its count of non-zero bytes) are the rows of ``table``."""
    import pyarrow as pa

    # (m, 8 · n_words): each string's bytes (the words were read little-endian)
    raw = table.astype("<u8", copy=False).view(np.uint8)
    kept = raw != 0
    offsets = np.zeros(len(raw) + 1, np.int64)
    np.cumsum(kept.sum(axis=1), out=offsets[1:])
    strings = pa.Array.from_buffers(pa.large_string(), len(raw), [
        None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(raw[kept]))])
    return strings.to_numpy(zero_copy_only=False)


# --------------------------------------------------------------- hash then verify
_BLOCK = 1 << 16          # rows per block of the hash route: a block's words stay in the caches
_S32 = np.uint64(32)


def _word_blocks(words: _Words, width: Optional[int], block: int = _BLOCK):
    """``(lo, hi, block (hi - lo, n_words) uint64, lengths (hi - lo,))`` for consecutive row
    blocks of ``words``' strings: each row's 8-byte words, zero past its end (as
    ``words(w)``), made one block at a time (no copy of the column is held). ``width``: the
    length of every string where they have one (hashes, UUIDs: rows side by side in the
    buffer, read with no gather), else None."""
    n, n_words = len(words.lengths), words.n_words
    rows = min(n, max(len(words.raw) - 8 * n_words, -width) // width + 1) if width else 0
    # rows side by side: word w of row i at byte width * i + 8 * w of the buffer
    side = np.ndarray(shape=(rows, n_words), dtype="<u8", buffer=words.raw,
                      strides=(width or 8, 8)) if rows else None
    whole = rows == n and width == 8 * n_words and words.raw.ctypes.data % 8 == 0
    last = _KEEP[width - 8 * (n_words - 1)] if width else None
    if rows < n and words._view is None:
        words.prepare()   # several widths, or the last rows: gathered
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        if whole:   # the arrow buffer itself (aligned: numpy's loops read it in place)
            yield lo, hi, side[lo:hi], words.lengths[lo:hi]
            continue
        out = np.empty((hi - lo, n_words), "<u8")
        if hi <= rows:   # one width: a strided copy (one 2-d copy: twice as fast as by words)
            out[...] = side[lo:hi]
            out[:, -1] &= last   # less the next string's first bytes
        else:
            for w in range(n_words):
                out[:, w] = words(w, lo, hi)
        yield lo, hi, out, words.lengths[lo:hi]


def _mix(h: np.ndarray) -> np.ndarray:
    """:func:`~crowd_keras.numerics.mix64` in place on uint64 ``h``: every input bit reaches
    every output bit. pandas' int64 hash table hashes weakly (``k >> 33 ^ k ^ k << 11``,
    masked to the table's size): hashes with structured low bits would crowd its slots."""
    return mix64(h, np.empty_like(h))


def _hash_rows(words: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(rows,) uint64 hash of each row's words (rows, n_words) and length (rows,). The
    length enters too: "a" and "a\\0" have the same zero-padded words."""
    h = lengths.astype(np.uint64)
    for w in range(words.shape[1]):
        h ^= words[:, w]
        h *= GOLDEN64
        h ^= h >> _S32   # not linear: words differing only in high bits do not cancel out
    return _mix(h)


def _string_order(words: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(m,) order of m distinct strings given by their words (m, n_words) and lengths (m,).

    Byte order is the big-endian order of the words; of two strings with equal zero-padded
    words the shorter is a prefix of the other and sorts first. Sorted by the first varying
    word, then only the runs of equal keys by the next (random ids: by one argsort, with a
    few hundred ties among 1M UUIDs; a lexsort of every key takes five times as long)."""
    keys = [words[:, w].byteswap() for w in range(words.shape[1])] + [lengths]
    keys = [k for k in keys if (k != k[0]).any()] or [np.zeros(len(lengths), np.uint64)]
    order = np.argsort(keys[0])
    top = keys[0][order]
    start = np.r_[True, top[1:] != top[:-1]]   # where each run of equal keys so far starts
    for key in keys[1:]:
        tied = ~start
        tied[:-1] |= ~start[1:]
        at = np.flatnonzero(tied)   # the runs of more than one, each sorted in place
        if not len(at):
            break
        rows = order[at]
        rows = rows[np.lexsort((key[rows], np.cumsum(start)[at]))]
        order[at] = rows
        start[at[1:]] |= key[rows[1:]] != key[rows[:-1]]
    return order


def _first_rows(group: np.ndarray, block: int = _BLOCK) -> np.ndarray:
    """(m,) the first row of each group, for codes (n,) numbered 0..m-1 as they first appear:
    the rows above the running maximum (block by block: no (n,) temporaries)."""
    firsts, top = [], -1
    for lo in range(0, len(group), block):
        code = group[lo:lo + block]
        seen = np.maximum.accumulate(code)
        firsts.append(np.flatnonzero(code > np.maximum(np.r_[top, seen[:-1]], top)) + lo)
        top = max(top, int(seen[-1]))
    return np.concatenate(firsts)


def _hash_codes(words: _Words) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """``(codes (n,) int64, sorted distinct strings (m,) object)`` of the strings of ``words``
    (n >= 1 rows), or None where two strings share a hash.

    Each row's words and length are hashed, the hashes factorised on pandas' integer hash
    table, and every row is then compared with its group's first row (words and length):
    the codes are exact, or not given.
    """
    n_words = words.n_words
    width: Optional[int] = int(words.lengths[0])
    if not (words.lengths == width).all():
        width = None
    hashes = np.empty(len(words.lengths), np.uint64)
    for lo, hi, block, lengths in _word_blocks(words, width):
        hashes[lo:hi] = _hash_rows(block, lengths)
    group = pd.factorize(hashes.view(np.int64))[0].astype(np.int64, copy=False)
    del hashes
    first = _first_rows(group)
    # the groups' first rows, from a small arrow array: their words (m, n_words) side by
    # side, so that checking a row gathers one row of 8 * n_words bytes (a wider row, with
    # the rank or the length, is slower to gather: more of the table misses the caches)
    reps = words.arr.take(first)
    table = np.empty((len(first), n_words), np.uint64)
    group_lengths = np.empty(len(first), words.lengths.dtype)
    for lo, hi, block, lengths in _word_blocks(_Words(reps, n_words), width):
        table[lo:hi] = block
        group_lengths[lo:hi] = lengths
    order = _string_order(table, group_lengths)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    for lo, hi, block, lengths in _word_blocks(words, width):
        at = group[lo:hi]
        same = np.array_equal(np.take(table, at, axis=0), block)   # words: exact
        if width is None:   # (one width: every row and every group has that length)
            same = same and np.array_equal(group_lengths[at], lengths)
        if not same:
            return None   # a hash collision: two strings in one group
        group[lo:hi] = rank[at]   # the codes, in place of the groups (no second (n,) array)
    return group, reps.take(order).to_numpy(zero_copy_only=False)   # from the small array


def _distinct(sample: _Words, random_ids: bool) -> int:
    """The number of distinct strings of a prepared sample: counted word by word, or for
    random ids (where that builds a table per word) as distinct hashes, a judgement only."""
    if not random_ids:
        return len(_codes(sample)[1])
    words = np.stack([sample(w) for w in range(sample.n_words)], axis=1)
    return len(np.unique(_hash_rows(words, sample.lengths)))


def factorize_strings(column: pd.Series) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """``pandas.factorize(column, sort=True)`` of an arrow string column, word by word or by
    hashing each row's words (random ids).

    Returns ``(codes (n,) int64, sorted distinct values (m,) object)`` or ``None`` where this
    module declines (see its docstring; the caller then uses ``pandas.factorize``).
    """
    if len(column) < _MIN_ROWS:
        return None
    arr = _arrow(column)
    if arr is None:
        return None
    # judged on an evenly spaced sample (its own small copy): declining costs little
    sample = _Words(arr.take(np.linspace(0, len(arr) - 1, _SAMPLE).astype(np.int64)))
    if sample.n_words > _MAX_WORDS:
        return None
    sample.prepare()
    # random ids: word by word, every word and every combination would be a large hash
    # table; one hash of all the words is one table (exact: the rows are checked)
    random_ids = sum(len(np.unique(sample(w))) > _FEW_PER_WORD
                     for w in range(sample.n_words)) > 1
    if _distinct(sample, random_ids) < _SAMPLE // 2:
        return None   # few distinct strings: pandas' table of strings fits the caches
    words = _Words(arr)
    if words.n_words > _MAX_WORDS:
        return None
    if random_ids:
        return _hash_codes(words)   # None on a hash collision: pandas' route
    if not words.raw.all():   # a NUL byte: "a" and "a\0" would share their words
        return None
    words.prepare()
    code, table = _codes(words)
    return code, _strings(table)


def column_codes(column: pd.Series) -> tuple[np.ndarray, Any]:
    """``(codes, uniques)`` of ``pandas.factorize(column, sort=True)``, through
    :func:`factorize_strings` where it applies."""
    fast = factorize_strings(column)
    if fast is not None:
        return fast
    codes, uniques = pd.factorize(column, sort=True)
    return codes.astype(np.int64), uniques
