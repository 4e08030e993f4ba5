"""Character spans ↔ per-token tags, vectorised, with every odd case counted.

Tag coding, for span labels ``0..L-1``:

* ``"IO"``: ``0 = O``, ``1 + l = I-l``.
* ``"BIO"``: ``0 = O``, ``1 + 2l = B-l``, ``2 + 2l = I-l``.

Spans → tags (:func:`spans_to_tags`). An annotation is one annotator's spans on one document;
it labels *every* token of that document. A token is covered by a span when they share at
least one character (the PICO metric's rule); so a span that starts or ends inside a token
covers the whole token (counted as ``start_mid_token`` / ``end_mid_token``). A span past the
end of the text is clipped (``past_text_clipped``), an empty span or one that covers only
whitespace covers no token and is left out (``empty_dropped``, ``whitespace_only_dropped``).
Spans of one annotator that share a token with another of their spans of the same label are
merged into one region (``overlapping_own``); a token that one annotator covered with spans of
two labels takes the lower label code (``tokens_two_labels_own``). BIO: ``B-l`` where a span
of label ``l`` starts and no span of that annotation covers both this token and the previous
one, or the previous token is not tagged ``l``; ``I-l`` otherwise (so the tags always form
valid BIO). Different annotators' spans never interact (each annotation is its own row of
tags); spans that overlap another annotator's span without being identical to it are counted
(``overlapping_others_differently``), since that disagreement is what the label models weigh.

All of it is done on one flat (annotation × token of its document) array with difference
arrays and ``searchsorted``: no Python loop over spans, tokens or annotators.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .tokens import Tokens

__all__ = ["SCHEMES", "n_tags", "tag_names", "tag_labels", "span_token_ranges",
           "spans_to_tags", "tags_to_spans", "trim_blank_edges", "token_coverage",
           "COUNT_KEYS"]

SCHEMES = ("IO", "BIO")

#: Keys of the counts returned by :func:`spans_to_tags` (see the module docstring).
COUNT_KEYS = ("past_text_clipped", "empty_dropped", "whitespace_only_dropped", "start_mid_token",
              "end_mid_token", "overlapping_own", "tokens_two_labels_own",
              "overlapping_others_differently")


def check_scheme(scheme: str) -> str:
    s = str(scheme).upper()
    if s not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    return s


def n_tags(n_labels: int, scheme: str) -> int:
    """Number of tags: ``1 + L`` (IO) or ``1 + 2L`` (BIO)."""
    return 1 + n_labels * (2 if check_scheme(scheme) == "BIO" else 1)


def tag_names(labels: Sequence, scheme: str) -> list:
    """Tag names in code order, e.g. ``["O", "B-Participants", "I-Participants"]``."""
    if check_scheme(scheme) == "IO":
        return ["O"] + [f"I-{lab}" for lab in labels]
    return ["O"] + [f"{p}-{lab}" for lab in labels for p in ("B", "I")]


def tag_labels(tags: np.ndarray, scheme: str) -> np.ndarray:
    """Span label code of each tag (-1 for O)."""
    tags = np.asarray(tags, np.int64)
    lab = tags - 1 if check_scheme(scheme) == "IO" else (tags - 1) // 2
    return np.where(tags > 0, lab, -1)


def span_token_ranges(tokens: Tokens, doc: np.ndarray, start: np.ndarray,
                      end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Global token range ``[a, b)`` of the tokens each character span ``[start, end)`` of
    document ``doc`` overlaps (``b <= a``: none). Vectorised with ``searchsorted`` on the
    corpus-wide (document, offset) order."""
    doc = np.asarray(doc, np.int64)
    if tokens.n_tokens == 0 or len(doc) == 0:
        return np.zeros(len(doc), np.int64), np.zeros(len(doc), np.int64)
    # offsets past every token compare alike; clipped, one offset near 2**53 (from_spans
    # clips such a span later) cannot overflow the int64 keys of every other span
    limit = int(tokens.end.max()) + 1
    start = np.minimum(np.asarray(start, np.int64), limit)
    end = np.minimum(np.asarray(end, np.int64), limit)
    big = limit + 2
    tdoc = tokens.doc * big
    a = np.searchsorted(tdoc + tokens.end, doc * big + start, side="right")
    b = np.searchsorted(tdoc + tokens.start, doc * big + end, side="left")
    a = np.maximum(a, tokens.doc_ptr[doc])
    b = np.minimum(b, tokens.doc_ptr[doc + 1])
    return a, b


def token_coverage(tokens: Tokens, doc: np.ndarray, start: np.ndarray,
                   end: np.ndarray) -> np.ndarray:
    """(T,) bool: the token overlaps at least one of the character spans (difference array).
    An empty span (``start == end``) covers no character, so no token (as in ``from_spans``)."""
    a, b = span_token_ranges(tokens, doc, start, end)
    ok = (b > a) & (np.asarray(end) > np.asarray(start))
    diff = np.bincount(a[ok], minlength=tokens.n_tokens + 1) - np.bincount(
        b[ok], minlength=tokens.n_tokens + 1)
    return np.cumsum(diff)[:-1] > 0


def _range_max(values: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max(values[a_i:b_i]) for non-empty ranges, with one ``reduceat``."""
    if len(a) == 0:
        return np.zeros(0, values.dtype)
    padded = np.append(values, values.dtype.type(0))
    idx = np.stack([a, b], 1).ravel()
    return np.maximum.reduceat(padded, idx)[::2]


def spans_to_tags(tokens: Tokens, text_len: np.ndarray, assign_doc: np.ndarray,
                  span_assign: np.ndarray, span_start: np.ndarray, span_end: np.ndarray,
                  span_label: np.ndarray, n_labels: int, scheme: str = "IO") -> dict:
    """Per-token tags of every annotation, flat.

    Args:
        tokens: the corpus' tokens.
        text_len: (D,) length of each document's text.
        assign_doc: (A,) document of each annotation (one annotator on one document).
        span_assign, span_start, span_end, span_label: (S,) annotation, character offsets
            (non-negative, ``start <= end``; checked by the caller) and label code of each span.
        n_labels: ``L``, the number of span labels.
        scheme: ``"IO"`` or ``"BIO"``.

    Returns:
        dict with ``obs_assign`` (N,), ``obs_token`` (N,) global token, ``obs_tag`` (N,) tag
        code, one entry per (annotation, token of its document) in annotation-major order;
        ``span_a``, ``span_b`` (S,) the global token range of each span (``-1`` for a span
        left out) and ``counts`` (dict of :data:`COUNT_KEYS`).
    """
    scheme = check_scheme(scheme)
    assign_doc = np.asarray(assign_doc, np.int64)
    s_assign = np.asarray(span_assign, np.int64)
    s_label = np.asarray(span_label, np.int64)
    s_doc = assign_doc[s_assign]
    s_start = np.asarray(span_start, np.int64)
    s_end_raw = np.asarray(span_end, np.int64)
    counts = dict.fromkeys(COUNT_KEYS, 0)
    past = s_end_raw > text_len[s_doc]
    counts["past_text_clipped"] = int(past.sum())
    s_end = np.minimum(s_end_raw, text_len[s_doc])
    empty = s_end <= s_start
    counts["empty_dropped"] = int(empty.sum())
    a, b = span_token_ranges(tokens, s_doc, s_start, s_end)
    blank = ~empty & (b <= a)
    counts["whitespace_only_dropped"] = int(blank.sum())
    used = ~empty & ~blank
    span_a = np.where(used, a, -1)
    span_b = np.where(used, b, -1)
    ua, ub = a[used], b[used]
    counts["start_mid_token"] = int((s_start[used] > tokens.start[ua]).sum())
    counts["end_mid_token"] = int((s_end[used] < tokens.end[ub - 1]).sum())

    # flat layout: annotation j occupies [base[j], base[j] + len(doc j))
    lens = tokens.lengths[assign_doc]
    base = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    n = int(lens.sum())
    obs_assign = np.repeat(np.arange(len(assign_doc)), lens)
    offset = np.arange(n) - base[obs_assign]
    obs_token = tokens.doc_ptr[assign_doc][obs_assign] + offset
    u_assign, u_label = s_assign[used], s_label[used]
    fa = base[u_assign] + (ua - tokens.doc_ptr[s_doc[used]])
    fb = base[u_assign] + (ub - tokens.doc_ptr[s_doc[used]])
    stride = n + 1
    size = n_labels * stride
    starts = np.bincount(u_label * stride + fa, minlength=size).reshape(n_labels, stride)
    cover = np.cumsum(starts - np.bincount(u_label * stride + fb, minlength=size)
                      .reshape(n_labels, stride), axis=1)
    starts, cover = starts[:, :n], cover[:, :n]            # (L, N)
    covered = cover > 0
    any_cover = covered.any(axis=0)
    label = np.where(any_cover, np.argmax(covered, axis=0), -1)     # lowest label wins
    counts["tokens_two_labels_own"] = int((covered.sum(axis=0) > 1).sum())
    # a span of one annotation overlapping another of its spans of the same label
    csum = np.concatenate([np.zeros((n_labels, 1), np.int64),
                           np.cumsum(cover >= 2, axis=1)], axis=1)
    counts["overlapping_own"] = int((csum[u_label, fb] - csum[u_label, fa] > 0).sum())
    if scheme == "IO":
        tag = label + 1
    else:
        lab0 = np.maximum(label, 0)
        own_start = (starts[lab0, np.arange(n)] > 0) & (cover[lab0, np.arange(n)] ==
                                                       starts[lab0, np.arange(n)])
        first = offset == 0
        prev_label = np.concatenate([[-1], label[:-1]])
        is_b = own_start | first | (prev_label != label)
        tag = np.where(any_cover, 1 + 2 * lab0 + (~is_b), 0)
    tag = np.where(any_cover, tag, 0).astype(np.int16)

    # spans that overlap another annotator's span without being identical to it
    n_cover = np.bincount(obs_token, weights=any_cover, minlength=tokens.n_tokens)
    key = (ua * (tokens.n_tokens + 1) + ub) * max(n_labels, 1) + u_label
    pair = np.unique(np.stack([u_assign, key], 1), axis=0)    # one per annotation
    uk, n_same = np.unique(pair[:, 1], return_counts=True)
    same = n_same[np.searchsorted(uk, key)]
    counts["overlapping_others_differently"] = int((_range_max(n_cover, ua, ub) > same).sum())
    return {"obs_assign": obs_assign, "obs_token": obs_token, "obs_tag": tag,
            "span_a": span_a, "span_b": span_b, "counts": counts}


def tags_to_spans(tags: np.ndarray, first: np.ndarray,
                  scheme: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spans of a flat tag array made of sequences.

    Args:
        tags: (N,) tag codes.
        first: (N,) bool, True at the first position of each sequence (document/annotation).
        scheme: ``"IO"`` (a span = a maximal run of one label) or ``"BIO"`` (``B`` starts a
            span; an ``I`` after ``O`` or after another label starts one too).

    Returns:
        ``(begin, last, label)``: (S,) first and last position (inclusive) and label code.
    """
    tags = np.asarray(tags, np.int64)
    first = np.asarray(first, bool)
    lab = tag_labels(tags, scheme)
    pos = lab >= 0
    prev = np.concatenate([[-1], lab[:-1]])
    begin = pos & (first | (prev != lab))
    if check_scheme(scheme) == "BIO":
        begin |= pos & (tags % 2 == 1)
    nxt_begin = np.concatenate([begin[1:], [True]])
    nxt_first = np.concatenate([first[1:], [True]])
    nxt_lab = np.concatenate([lab[1:], [-1]])
    last = pos & (nxt_first | nxt_begin | (nxt_lab != lab))
    b_idx = np.flatnonzero(begin)
    return b_idx, np.flatnonzero(last), lab[b_idx]


def trim_blank_edges(begin: np.ndarray, last: np.ndarray,
                     is_blank: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Spans' first and last positions (S,) (inclusive) moved inward past blank positions
    (whitespace-only tokens: a character span of tags should not start or end on one, as
    spaCy's entities do not); a span of blank positions only is kept whole.

    ``is_blank(positions)`` gives (k,) bool for (k,) positions; it is asked only about the
    edges, a few at a time, so a corpus pays for its spans' edges, not for all its tokens.
    """
    begin, last = np.asarray(begin, np.int64), np.asarray(last, np.int64)
    lo, hi = begin.copy(), last.copy()

    def blank(at: np.ndarray) -> np.ndarray:
        return np.asarray(is_blank(at), bool).reshape(-1) if len(at) else np.zeros(0, bool)

    live = np.flatnonzero(blank(lo))
    while live.size:    # one step per whitespace token at an edge, for all spans at once
        lo[live] += 1
        live = live[lo[live] <= last[live]]
        live = live[blank(lo[live])]
    whole = lo > last
    lo[whole] = begin[whole]
    live = np.flatnonzero(~whole)
    live = live[blank(hi[live])]
    while live.size:     # stops at lo at the latest: lo is not blank
        hi[live] -= 1
        live = live[blank(hi[live])]
    return lo, hi
