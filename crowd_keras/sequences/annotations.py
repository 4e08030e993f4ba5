"""`SequenceAnnotations`: which annotator marked which spans in which document.

The container keeps the documents (ids, texts, :class:`~.tokens.Tokens`), the *annotations*
(one annotator on one document: the annotator saw the document) and their character spans
with a label each. For the label models it encodes them as a token-level
:class:`crowd_keras.Annotations` (:attr:`SequenceAnnotations.annotations`):

* items = the tokens of all documents (item ``t`` is token ``t`` of :attr:`tokens`);
* annotators = the annotators; classes = the tags (``"O"``, ``"I-label"`` / ``"B-label"``);
* an annotator who saw a document labels *every* token of it: unmarked tokens are ``O``
  (an annotation without spans says "no span here"); an annotator who did not see a document
  has no annotation on its tokens (missing, not ``O``).

Bad input raises a located :class:`~crowd_keras.CrowdDataError` (unknown document, negative or
reversed offsets, a label outside ``labels``, a span whose ``text`` differs from the document
with ``text_mismatch="error"``); odd but usable spans are handled and counted in
:attr:`SequenceAnnotations.summary` (see :mod:`.spans`), never dropped silently.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..codes import (check_id_values, check_unique_ids, factorize_ids, frozen, ids_array,
                     integer_codes, position_codes, show)
from ..errors import CrowdDataError
from .spans import (COUNT_KEYS, check_scheme, n_tags, span_token_ranges, spans_to_tags,
                    tag_names, tags_to_spans, trim_blank_edges)
from .tokens import Tokenizer, Tokens, _check_tokens, _code_points, check_offsets, tokenize

__all__ = ["SequenceAnnotations", "SpanSummary"]

_MISMATCH = ("count", "error")


@dataclass(frozen=True)
class SpanSummary:
    """What became of the spans (counts); see :mod:`.spans` for each odd case."""

    documents: int
    annotators: int
    annotations: int
    annotations_without_spans: int
    spans: int
    spans_used: int
    text_mismatch: int
    past_text_clipped: int
    empty_dropped: int
    whitespace_only_dropped: int
    start_mid_token: int
    end_mid_token: int
    overlapping_own: int
    tokens_two_labels_own: int
    overlapping_others_differently: int

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def __str__(self) -> str:
        d = self.to_dict()
        head = (f"{d.pop('documents')} documents, {d.pop('annotators')} annotators, "
                f"{d.pop('annotations')} annotations ({d.pop('annotations_without_spans')} "
                f"without spans), {d.pop('spans')} spans ({d.pop('spans_used')} used)")
        odd = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in d.items() if v)
        return head + (f"; {odd}" if odd else "")


def _texts_and_ids(texts: Any, doc_ids: Any) -> tuple[list, np.ndarray]:
    if isinstance(texts, pd.Series):
        return texts.astype(object).tolist(), ids_array(texts.index if doc_ids is None else doc_ids)
    if isinstance(texts, Mapping):
        keys = ids_array(list(texts.keys()))
        if doc_ids is not None:   # two sets of ids: which would name the documents?
            given = ids_array(doc_ids)
            if given.shape != keys.shape or not all(a == b and type(a) is type(b)
                                                    for a, b in zip(given, keys)):
                raise CrowdDataError(f"doc_ids differ from the keys of the texts' mapping "
                                     f"{show(keys[:3].tolist())}...; a mapping names its "
                                     "documents: leave doc_ids out")
        return list(texts.values()), keys
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):   # 'abc': 3 docs
        raise TypeError(f"texts must be a list of strings, a {{doc_id: text}} mapping or a "
                        f"Series, got {type(texts).__name__}"
                        + (" (one string: pass [text] for one document)"
                           if isinstance(texts, (str, bytes)) else ""))
    texts = list(texts)
    return texts, ids_array(range(len(texts)) if doc_ids is None else doc_ids)


def _codes(values: pd.Series, table: pd.Index, what: str, row_ids: np.ndarray,
           row: str = "span row") -> np.ndarray:
    codes = table.get_indexer(values)
    if (codes < 0).any():
        r = int(np.argmax(codes < 0))
        value = values.iloc[r]
        # a CSV's 7 against the texts' "7": the same id written in another type
        alike = [v for v in table if str(v) == str(value)]
        hint = (f" ({what} {show(alike[0])} is: give the {what} ids one type)" if alike
                else "")
        raise CrowdDataError(f"{row} {row_ids[r]}: {what} {show(value)} is not among "
                             f"the {len(table)} {what}s given{hint}")
    return codes.astype(np.int64)


def _check_no_missing(doc_ids: Any, where: Callable[[int], str]) -> None:
    """Raise on a missing document id (None, NaN), naming ``where(n)``: it would match
    another missing id or none (pandas' lookups treat them alike), as annotator ids would."""
    ids = np.asarray(doc_ids, dtype=object)
    missing = pd.isna(ids)
    if missing.any():
        n = int(np.argmax(missing))
        raise CrowdDataError(f"{where(n)}: missing document id ({show(ids[n])})")


def _offsets(frame: pd.DataFrame, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S,) int64 start and end offsets of the span rows (:func:`.tokens.check_offsets`)."""
    return check_offsets(frame["start"], frame["end"], lambda r: f"span row {row_ids[r]}")


def _text_mismatch(texts: list, doc: np.ndarray, start: np.ndarray, end: np.ndarray,
                   given: pd.Series) -> np.ndarray:
    """(S,) bool: the span's ``text`` differs from ``texts[doc][start:end]`` (vectorised over
    code points; spans without a text are not checked)."""
    has = given.notna().to_numpy()
    given_text = given.where(has, "").astype(str).tolist()
    glen = np.fromiter((len(t) for t in given_text), np.int64, len(given_text))
    bad = has & (glen != end - start)
    check = np.flatnonzero(has & ~bad)
    if len(check):
        cp, base = _code_points(texts)
        span_cp, span_base = _code_points([given_text[i] for i in check])
        lens = glen[check]
        owner = np.repeat(np.arange(len(check)), lens)
        within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        src = base[doc[check]][owner] + start[check][owner] + within
        dst = span_base[owner] + within
        src = np.minimum(src, len(cp) - 1)      # spans past the text mismatch anyway
        differs = np.bincount(owner, weights=cp[src] != span_cp[dst], minlength=len(check))
        bad[check] = differs > 0
    return bad


def _by_values(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its categorical id and label columns read by their values, as
    :meth:`Annotations.from_frame <crowd_keras.Annotations.from_frame>` reads them."""
    cat = [c for c in ("doc", "annotator", "label") if c in frame.columns
           and isinstance(frame[c].dtype, pd.CategoricalDtype)]
    return frame.assign(**{c: np.asarray(frame[c], dtype=object) for c in cat}) if cat else frame


def seen_pairs(seen: Any) -> pd.DataFrame:
    """The (document, annotator) pairs a crowd saw, as a frame with columns ``doc`` and
    ``annotator`` (a given frame keeps its index, which errors name as the seen row).

    ``seen``: a frame with those columns, or an iterable of ``(document, annotator)`` pairs;
    anything else is an error naming the seen row or the missing columns."""
    if isinstance(seen, pd.DataFrame):
        missing = [c for c in ("doc", "annotator") if c not in seen.columns]
        if missing:
            raise CrowdDataError(f"seen frame has no column(s) {missing}; columns are "
                                 f"{list(seen.columns)}")
        return _by_values(seen[["doc", "annotator"]])
    pairs = list(seen)
    odd = [k for k, p in enumerate(pairs) if isinstance(p, (str, bytes)) or
           np.ndim(p) != 1 or len(p) != 2]
    if odd:
        raise CrowdDataError(f"seen row {odd[0]}: expected a (document, annotator) pair, "
                             f"got {show(pairs[odd[0]])}")
    return pd.DataFrame(pairs, columns=["doc", "annotator"])


def checked_doc_codes(docs: Any, n_docs: int, taker: str = "docs",
                      unique: bool = False) -> np.ndarray:
    """``docs`` as (n,) int64 document codes in ``0..n_docs-1`` (positions in ``doc_ids``)
    (:func:`~crowd_keras.codes.position_codes`)."""
    return position_codes(docs, n_docs, "document", taker, unique,
                          from_ids="pd.Index(sequences.doc_ids).get_indexer(ids)")


def checked_annotation_mask(mask: Any, n_annotations: int, taker: str) -> np.ndarray:
    """``mask`` as an (A,) bool array over the annotations, or an error naming ``taker``:
    annotation positions (``np.flatnonzero(mask)``) would index the wrong annotations."""
    arr = np.asarray(mask)
    if arr.dtype.kind != "b" or arr.shape != (n_annotations,):
        raise ValueError(f"{taker} takes a boolean mask of shape ({n_annotations},) over the "
                         f"annotations, got {arr.dtype} values of shape {arr.shape}")
    return arr


class SequenceAnnotations:
    """Span annotations of documents by several annotators (see the module docstring).

    Build with :meth:`from_spans` (a long frame, one row per span) or :meth:`from_dict`
    (``{doc: {annotator: [[start, end(, label)], ...]}}``, PICO's layout).

    Attributes:
        doc_ids: (D,) the documents' ids.
        texts: (D,) their texts.
        tokens: the :class:`Tokens` table.
        annotator_ids: (W,).
        labels: (L,) span labels.
        scheme: ``"IO"`` or ``"BIO"``.
        tags: (K,) tag names.
        assign_doc: (A,) the document of each annotation (annotator saw document).
        assign_annotator: (A,) its annotator.
        span_assign: (S,) the annotation of each span.
        span_start: (S,) its first character.
        span_end: (S,) its end character (exclusive).
        span_label: (S,) its label code.
        span_token_start: (S,) its first global token, -1 if left out.
        span_token_end: (S,) its global token end (exclusive), -1 if left out.
        summary: the :class:`SpanSummary`.
    """

    def __init__(self, texts: Sequence[str], doc_ids: np.ndarray, annotator_ids: np.ndarray,
                 labels: Sequence, assign_doc: np.ndarray, assign_annotator: np.ndarray,
                 span_assign: np.ndarray, span_start: np.ndarray, span_end: np.ndarray,
                 span_label: np.ndarray, *, scheme: str = "IO", tokens: Optional[Tokens] = None,
                 tokenizer: Tokenizer = None,
                 span_mismatch: Optional[np.ndarray] = None) -> None:
        self.texts = list(texts)
        self.doc_ids = ids_array(doc_ids)
        self.annotator_ids = ids_array(annotator_ids)
        self.labels = ids_array(labels)
        self.scheme = check_scheme(scheme)
        self.tags = np.array(tag_names(self.labels.tolist(), self.scheme), dtype=object)
        if tokens is not None and not isinstance(tokens, Tokens):
            raise TypeError(f"tokens must be a Tokens table (e.g. another SequenceAnnotations' "
                            f"tokens), got {type(tokens).__name__}")
        if tokens is not None and tokenizer is not None:   # one of them would go unused
            raise ValueError("give tokens (the texts' tokens already made) or tokenizer (to "
                             "make them), not both")
        self.tokens = tokens if tokens is not None else tokenize(self.texts, tokenizer,
                                                                 doc_ids=self.doc_ids)
        if self.tokens.n_docs != len(self.texts):
            raise CrowdDataError(f"{self.tokens.n_docs} tokenised documents for "
                                 f"{len(self.texts)} texts")
        self.text_len = frozen(np.fromiter((len(t) for t in self.texts), np.int64,
                                           len(self.texts)))
        if tokens is not None:   # made for other texts, they would decode to other characters
            try:
                _check_tokens(self.tokens, self.tokens.doc, self.text_len,
                              lambda d: show(self.doc_ids[d]))
            except CrowdDataError as err:
                raise CrowdDataError(f"tokens do not fit the texts: {err}") from None
        order = np.lexsort((assign_annotator, assign_doc))     # annotations by (doc, annotator)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        self.assign_doc = frozen(np.asarray(assign_doc, np.int64)[order])
        self.assign_annotator = frozen(np.asarray(assign_annotator, np.int64)[order])
        dup = (np.diff(self.assign_doc) == 0) & (np.diff(self.assign_annotator) == 0)
        if dup.any():
            i = int(np.argmax(dup))
            raise CrowdDataError(f"annotator {show(self.annotator_ids[self.assign_annotator[i]])} "
                                 f"has two annotations of document "
                                 f"{show(self.doc_ids[self.assign_doc[i]])}; give each "
                                 "(document, annotator) one annotation (all its spans)")
        self.span_assign = frozen(rank[np.asarray(span_assign, np.int64)])
        self.span_start = frozen(np.asarray(span_start, np.int64))
        self.span_end = frozen(np.asarray(span_end, np.int64))
        self.span_label = frozen(np.asarray(span_label, np.int64))
        self.span_mismatch = frozen(np.zeros(len(self.span_start), bool) if span_mismatch is None
                                    else np.asarray(span_mismatch, bool))
        flat = spans_to_tags(self.tokens, self.text_len, self.assign_doc, self.span_assign,
                             self.span_start, self.span_end, self.span_label, len(self.labels),
                             self.scheme)
        self.obs_assign = frozen(flat["obs_assign"])
        self.obs_token = frozen(flat["obs_token"])
        self.obs_tag = frozen(flat["obs_tag"])
        self.span_token_start = frozen(flat["span_a"])
        self.span_token_end = frozen(flat["span_b"])
        n_spans = np.bincount(self.span_assign, minlength=len(self.assign_doc))
        self.summary = SpanSummary(
            documents=len(self.texts), annotators=len(self.annotator_ids),
            annotations=len(self.assign_doc), annotations_without_spans=int((n_spans == 0).sum()),
            spans=len(self.span_start), spans_used=int((self.span_token_start >= 0).sum()),
            text_mismatch=int(self.span_mismatch.sum()), **{k: flat["counts"][k] for k in COUNT_KEYS})
        self._annotations: Optional[Annotations] = None

    def equals(self, other: Any) -> bool:
        """Whether ``other`` holds the same documents, tokens, annotators and tags in the same
        order (as pandas' ``DataFrame.equals``): another object built from the same data,
        an unpickled copy."""
        if other is self:
            return True
        if not isinstance(other, SequenceAnnotations) or self.scheme != other.scheme or \
                self.texts != other.texts:
            return False
        pairs = [(self.doc_ids, other.doc_ids), (self.annotator_ids, other.annotator_ids),
                 (self.labels, other.labels), (self.tokens.doc_ptr, other.tokens.doc_ptr),
                 (self.tokens.start, other.tokens.start), (self.tokens.end, other.tokens.end),
                 (self.assign_doc, other.assign_doc),
                 (self.assign_annotator, other.assign_annotator),
                 (self.obs_assign, other.obs_assign), (self.obs_token, other.obs_token),
                 (self.obs_tag, other.obs_tag)]
        return all(a.shape == b.shape and a.dtype.kind == b.dtype.kind and
                   bool(np.all(a == b)) for a, b in pairs)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_spans(cls, texts: Any, spans: pd.DataFrame, *, seen: Any = None,
                   doc_ids: Any = None, labels: Optional[Sequence] = None, scheme: str = "IO",
                   tokenizer: Tokenizer = None, text_mismatch: str = "count",
                   default_label: str = "span",
                   tokens: Optional[Tokens] = None,
                   annotator_ids: Optional[Sequence] = None) -> "SequenceAnnotations":
        """From one row per span.

        Args:
            texts: the documents: a sequence of strings (ids ``0..D-1`` or ``doc_ids``), a
                mapping ``{doc_id: text}`` or a Series indexed by doc id.
            spans: frame with columns ``doc``, ``annotator``, ``start``, ``end`` (character
                offsets, end exclusive) and optionally ``label`` (else ``default_label``) and
                ``text`` (checked against the document).
            seen: the (document, annotator) pairs who saw a document, as a frame with columns
                ``doc`` and ``annotator`` or a list of pairs; pairs with spans are always
                included. Default: only the pairs that have spans.
            doc_ids: the documents' ids, one per text of a sequence (default ``0..D-1``) or
                of a Series (default its index); a mapping's keys are its ids.
            labels: the span labels allowed (in code order); default the sorted labels seen.
            scheme: ``"IO"`` (default) or ``"BIO"``.
            tokenizer: see :func:`.tokens.tokenize`.
            text_mismatch: ``"count"`` (default: keep the offsets, count the span in
                ``summary.text_mismatch``) or ``"error"``.
            default_label: the label of every span when ``spans`` has no ``label`` column.
            tokens: the texts' tokens already made (e.g. another ``SequenceAnnotations``'
                ``tokens``), instead of ``tokenizer``.
            annotator_ids: the annotators in code order (every annotator of ``spans`` and
                ``seen`` among them); default their sorted distinct ids, by the rules of
                :meth:`Annotations.from_frame <crowd_keras.Annotations.from_frame>` (a column
                mixing ``1`` and ``"1"`` raises: two annotators printed alike).

        Offsets must be integers in ``0..2**53`` (checked before any arithmetic); an end
        past the text is clipped and counted.
        """
        if text_mismatch not in _MISMATCH:
            raise ValueError(f"text_mismatch must be one of {_MISMATCH}, got {text_mismatch!r}")
        text_list, ids = _texts_and_ids(texts, doc_ids)
        if len(ids) != len(text_list):
            raise CrowdDataError(f"{len(ids)} doc_ids for {len(text_list)} texts")
        check_unique_ids(ids, "document")
        _check_no_missing(ids, lambda n: f"position {n} of the document ids")
        if not isinstance(spans, pd.DataFrame):
            raise CrowdDataError(f"spans must be a DataFrame, got {type(spans).__name__}")
        missing = [c for c in ("doc", "annotator", "start", "end") if c not in spans.columns]
        if missing:
            raise CrowdDataError(f"spans frame has no column(s) {missing}; columns are "
                                 f"{list(spans.columns)}")
        frame = _by_values(spans.reset_index(drop=True))
        row_ids = spans.index.to_numpy()
        doc_index = pd.Index(ids)
        _check_no_missing(frame["doc"], lambda r: f"span row {row_ids[r]}")
        s_doc = _codes(frame["doc"], doc_index, "document", row_ids)
        start, end = _offsets(frame, row_ids)
        lab_col = (frame["label"] if "label" in frame.columns
                   else pd.Series([default_label] * len(frame), dtype=object))
        if lab_col.isna().any():
            r = int(np.argmax(lab_col.isna().to_numpy()))
            raise CrowdDataError(f"span row {row_ids[r]}: missing label")
        check_id_values(lab_col, "label", lambda r: f"span row {row_ids[r]}")
        if labels is None:
            labels = sorted(pd.unique(lab_col).tolist(), key=str) or [default_label]
        elif isinstance(labels, (str, bytes)):
            raise TypeError(f"labels must be a list of span labels, got the string {labels!r} "
                            f"(one label: [{labels!r}])")
        if not len(list(labels)):
            raise CrowdDataError("labels is empty: give at least one span label")
        check_id_values(list(labels), "label", lambda n: f"labels[{n}]")
        check_unique_ids(ids_array(list(labels)), "label")
        if "label" not in frame.columns and len(frame) and default_label not in list(labels):
            raise CrowdDataError(f"the spans have no label, and default_label "
                                 f"{show(default_label)} is not among labels "
                                 f"{list(labels)}; pass default_label= one of them")
        s_label = _codes(lab_col, pd.Index(list(labels)), "label", row_ids)
        mismatch = np.zeros(len(frame), bool)
        if "text" in frame.columns and len(frame):
            lens = np.fromiter((len(t) for t in text_list), np.int64, len(text_list))
            mismatch = bad = _text_mismatch(text_list, s_doc, start,
                                            np.minimum(end, lens[s_doc]), frame["text"])
            if bad.any() and text_mismatch == "error":
                r = int(np.argmax(bad))
                raise CrowdDataError(
                    f"span row {row_ids[r]}: text {show(frame['text'].iloc[r])} differs from "
                    f"the characters {int(start[r])}:{int(end[r])} of document "
                    f"{show(ids[s_doc[r]])}: {show(text_list[s_doc[r]][start[r]:end[r]])}")
        pair_doc, pair_annotator = [s_doc], [frame["annotator"]]
        seen_ids = np.zeros(0, object)    # a seen frame's index names its rows in errors
        if seen is not None:
            seen_frame = seen_pairs(seen)
            _check_no_missing(seen_frame["doc"],
                              lambda r: f"seen row {seen_frame.index.to_numpy()[r]}")
            pair_doc.append(_codes(seen_frame["doc"].reset_index(drop=True), doc_index,
                                   "document", seen_frame.index.to_numpy(), "seen row"))
            pair_annotator.append(seen_frame["annotator"])
            seen_ids = seen_frame.index.to_numpy()
        annotators = pd.concat(pair_annotator, ignore_index=True)

        def where(r: int) -> str:
            return (f"span row {row_ids[r]}" if r < len(frame)
                    else f"seen row {seen_ids[r - len(frame)]}")

        if annotators.isna().any():
            r = int(np.argmax(annotators.isna().to_numpy()))
            raise CrowdDataError(f"{where(r)}: missing annotator id")
        if annotator_ids is None:   # the rules of Annotations.from_frame: 1 and "1" raise
            ann_codes, ann_ids = factorize_ids(annotators, "annotator", where)
        else:   # a list of distinct ids, none missing (ints and emails may mix: Label Studio)
            ann_ids = list(ids_array(annotator_ids))
            missing = pd.isna(np.asarray(ann_ids, dtype=object))
            if missing.any():
                n = int(np.argmax(missing))
                raise CrowdDataError(f"missing annotator id ({show(ann_ids[n])}) at "
                                     f"annotator_ids[{n}]")
            check_unique_ids(ids_array(ann_ids), "annotator")
            known = pd.Index(ann_ids)
            ann_codes = np.concatenate([
                _codes(annotators[:len(frame)], known, "annotator", row_ids),
                _codes(annotators[len(frame):], known, "annotator", seen_ids, "seen row")])
        key = np.concatenate(pair_doc) * len(ann_ids) + ann_codes
        ukey, inverse = np.unique(key, return_inverse=True)
        return cls(text_list, ids, np.asarray(ann_ids, dtype=object), list(labels),
                   ukey // len(ann_ids), ukey % len(ann_ids), inverse[:len(frame)], start, end,
                   s_label, scheme=scheme, tokenizer=tokenizer, tokens=tokens,
                   span_mismatch=mismatch)

    @classmethod
    def from_dict(cls, texts: Any, spans: Mapping, **kwargs: Any) -> "SequenceAnnotations":
        """From ``{doc_id: {annotator: [[start, end], ...]}}`` (a third entry is the label).

        Every annotator listed for a document saw it (an empty list: no span there). Other
        keyword arguments as in :meth:`from_spans`.
        """
        if not isinstance(spans, Mapping):
            raise CrowdDataError(f"spans must be a mapping {{doc: {{annotator: [[start, end], "
                                 f"...]}}}}, got {type(spans).__name__} (a frame of span rows: "
                                 "from_spans)")
        rows, seen, where = [], [], []
        for doc, by_annotator in spans.items():
            if not isinstance(by_annotator, Mapping):
                raise CrowdDataError(f"document {show(doc)}: expected {{annotator: [[start, end]"
                                     f", ...]}}, got {type(by_annotator).__name__}")
            for annotator, marks in by_annotator.items():
                seen.append((doc, annotator))
                if not isinstance(marks, (list, tuple, np.ndarray)):
                    raise CrowdDataError(f"document {show(doc)}, annotator {show(annotator)}: "
                                         f"expected a list of [start, end(, label)] spans, got "
                                         f"{type(marks).__name__} {show(marks)}")
                for k, m in enumerate(marks):
                    if isinstance(m, (str, bytes, Mapping)) or not hasattr(m, "__len__") or \
                            len(m) not in (2, 3):
                        raise CrowdDataError(f"document {show(doc)}, annotator "
                                             f"{show(annotator)}: a span is [start, end] or "
                                             f"[start, end, label], got {show(m)}")
                    rows.append((doc, annotator, *m))
                    where.append((doc, annotator, k))
        width = max((len(r) for r in rows), default=4)
        cols = ["doc", "annotator", "start", "end", "label"][:width]
        # a span without a label among labelled ones: None, which from_spans names (pandas
        # pads ragged rows itself only with a deprecation warning)
        rows = [r + (None,) * (width - len(r)) for r in rows]
        # from_spans names a bad row by its index: (document, annotator, position in the list)
        index = pd.MultiIndex.from_tuples(where, names=["doc", "annotator", "span"]) \
            if where else None
        return cls.from_spans(texts, pd.DataFrame(rows, columns=cols, index=index), seen=seen,
                              **kwargs)

    # ------------------------------------------------------------------ sizes and views
    @property
    def n_docs(self) -> int:
        return len(self.texts)

    @property
    def n_tokens(self) -> int:
        return self.tokens.n_tokens

    @property
    def n_tags(self) -> int:
        return n_tags(len(self.labels), self.scheme)

    def __repr__(self) -> str:
        return (f"SequenceAnnotations(n_docs={self.n_docs}, n_tokens={self.n_tokens}, "
                f"n_annotators={len(self.annotator_ids)}, n_annotations={len(self.assign_doc)}, "
                f"scheme={self.scheme!r}, labels={self.labels.tolist()})")

    @property
    def annotations(self) -> Annotations:
        """Token-level :class:`crowd_keras.Annotations` (items = tokens, classes = tags)."""
        if self._annotations is None:
            self._annotations = Annotations(
                self.obs_token, self.assign_annotator[self.obs_assign], self.obs_tag,
                item_ids=np.arange(self.n_tokens), annotator_ids=self.annotator_ids,
                classes=self.tags)
        return self._annotations

    def spans_frame(self) -> pd.DataFrame:
        """The spans read: ``doc, annotator, start, end, label, text, used``."""
        doc = self.assign_doc[self.span_assign]
        return pd.DataFrame({
            "doc": self.doc_ids[doc], "annotator": self.annotator_ids[
                self.assign_annotator[self.span_assign]],
            "start": self.span_start, "end": self.span_end,
            "label": self.labels[self.span_label],
            "text": [self.texts[d][s:e] for d, s, e in zip(doc, self.span_start, self.span_end)],
            "used": self.span_token_start >= 0})

    def decode(self, tags: np.ndarray, scores: Optional[np.ndarray] = None,
               docs: Optional[np.ndarray] = None) -> pd.DataFrame:
        """Spans of per-token tags: frame ``doc, start, end, label, text`` (+ ``score``); a
        span starts and ends on a token that is not whitespace only (a run of whitespace
        tokens alone is kept whole).

        Args:
            tags: (T,) tag codes of all tokens.
            scores: optional (T,) per-token score; a span's score is the mean over its tokens.
            docs: optional document codes to keep.
        """
        tags = self.tag_codes(tags)
        if scores is not None:
            scores = np.asarray(scores, np.float64)
            if scores.shape != (self.n_tokens,):
                raise ValueError(f"scores must have shape ({self.n_tokens},), got {scores.shape}")
        if docs is not None:   # ids or codes out of range would keep no span, silently
            docs = checked_doc_codes(docs, self.n_docs, "decode")
        first = self.tokens.position == 0
        begin, last, label = tags_to_spans(tags, first, self.scheme)
        tok = self.tokens
        token_doc = tok.doc
        doc = token_doc[begin]
        keep = np.ones(len(begin), bool) if docs is None else np.isin(doc, docs)
        begin, last, label, doc = begin[keep], last[keep], label[keep], doc[keep]
        # a span does not start or end on a whitespace-only token (a tokenizer's "\n"), as
        # token_tags_to_spans reads tags
        begin, last = trim_blank_edges(begin, last, lambda t: np.array(
            [self.texts[d][s:e].isspace() for d, s, e in
             zip(token_doc[t].tolist(), tok.start[t].tolist(), tok.end[t].tolist())], bool))
        start, end = self.tokens.start[begin], self.tokens.end[last]
        out = pd.DataFrame({"doc": self.doc_ids[doc], "start": start, "end": end,
                            "label": self.labels[label],
                            "text": [self.texts[d][s:e] for d, s, e in zip(doc, start, end)]})
        if scores is not None:
            csum = np.concatenate([[0.0], np.cumsum(scores)])
            out["score"] = (csum[last + 1] - csum[begin]) / (last + 1 - begin)
        return out

    def tag_codes(self, tags: Any) -> np.ndarray:
        """``tags`` as (T,) int64 tag codes of these tokens, or an error naming the first
        token whose code is not one (shape, NaN, fraction, outside ``0..K-1``)."""
        tags = np.asarray(tags)
        if tags.shape != (self.n_tokens,):
            raise ValueError(f"tags must have shape ({self.n_tokens},), got {tags.shape}")
        tags = integer_codes(tags, "tags", "token ")
        bad = (tags < 0) | (tags >= self.n_tags)
        if bad.any():
            t = int(np.argmax(bad))
            raise CrowdDataError(f"tag code {int(tags[t])} of token {t} is outside "
                                 f"0..{self.n_tags - 1} ({self.scheme} tags of "
                                 f"{len(self.labels)} label(s))")
        return tags

    def token_ranges(self, doc: Any, start: Any, end: Any) -> tuple[np.ndarray, np.ndarray]:
        """Global token range ``[a, b)`` overlapped by character spans of document ids ``doc``
        (each span checked as :meth:`from_spans` checks offsets)."""
        if isinstance(doc, (str, bytes)) or np.ndim(doc) != 1:
            raise TypeError(f"doc, start and end are lists, one entry per span; got doc "
                            f"{show(doc)} (one span: [doc], [start], [end])")
        doc = list(doc)
        start, end = (list(v) if np.ndim(v) == 1 else v for v in (start, end))
        if not (np.ndim(start) == np.ndim(end) == 1 and len(start) == len(end) == len(doc)):
            raise ValueError(f"doc, start and end must be lists of one length, got lengths "
                             f"{len(doc)}, {np.size(start)} and {np.size(end)}")
        start, end = check_offsets(start, end, lambda r: f"span {r}")
        codes = pd.Index(self.doc_ids).get_indexer(doc)
        if (codes < 0).any():
            raise CrowdDataError(f"unknown document id {show(doc[int(np.argmax(codes < 0))])}")
        return span_token_ranges(self.tokens, codes, start, end)

    def annotation_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each annotation's spans after tagging, as token ranges: ``(assignment, first
        token, last token (inclusive), label)``; overlapping spans of one annotator are one."""
        first = np.concatenate([[True], self.obs_assign[1:] != self.obs_assign[:-1]])
        begin, last, label = tags_to_spans(self.obs_tag, first, self.scheme)
        return self.obs_assign[begin], self.obs_token[begin], self.obs_token[last], label

    def drop_annotations(self, drop: np.ndarray) -> "SequenceAnnotations":
        """A copy without the annotations where ``drop`` (A,) bool is True (same tokens,
        ids). Positions or codes are refused: cast to bool they would drop other annotations."""
        drop = checked_annotation_mask(drop, len(self.assign_doc), "drop_annotations")
        keep = np.flatnonzero(~drop)
        recode = np.full(len(drop), -1)
        recode[keep] = np.arange(len(keep))
        s = ~drop[self.span_assign]
        return SequenceAnnotations(
            self.texts, self.doc_ids, self.annotator_ids, self.labels, self.assign_doc[keep],
            self.assign_annotator[keep], recode[self.span_assign[s]], self.span_start[s],
            self.span_end[s], self.span_label[s], scheme=self.scheme, tokens=self.tokens,
            span_mismatch=self.span_mismatch[s])

    def subset(self, docs: Sequence[int]) -> "SequenceAnnotations":
        """The documents with codes ``docs`` (in that order, each once), their annotations
        and spans."""
        docs = checked_doc_codes(docs, self.n_docs, "subset", unique=True)
        tokens, _ = self.tokens.subset(docs)
        recode_doc = np.full(self.n_docs, -1)
        recode_doc[docs] = np.arange(len(docs))
        keep = np.flatnonzero(recode_doc[self.assign_doc] >= 0)
        recode = np.full(len(self.assign_doc), -1)
        recode[keep] = np.arange(len(keep))
        s = recode[self.span_assign] >= 0
        return SequenceAnnotations(
            [self.texts[d] for d in docs], self.doc_ids[docs], self.annotator_ids, self.labels,
            recode_doc[self.assign_doc[keep]], self.assign_annotator[keep],
            recode[self.span_assign[s]], self.span_start[s], self.span_end[s],
            self.span_label[s], scheme=self.scheme, tokens=tokens,
            span_mismatch=self.span_mismatch[s])

    def with_scheme(self, scheme: str) -> "SequenceAnnotations":
        """The same annotations tagged with another scheme (``"IO"`` or ``"BIO"``)."""
        return SequenceAnnotations(
            self.texts, self.doc_ids, self.annotator_ids, self.labels, self.assign_doc,
            self.assign_annotator, self.span_assign, self.span_start, self.span_end,
            self.span_label, scheme=scheme, tokens=self.tokens, span_mismatch=self.span_mismatch)
