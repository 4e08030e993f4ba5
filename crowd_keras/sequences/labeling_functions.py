"""Span labeling functions: weak supervision for spans, alone or beside human annotators.

A labeling function (LF) reads one document and votes on some of its tokens, abstaining on
the rest. It is a Python callable ``fn(doc) -> output`` wrapped by :func:`span_lf` or
:func:`tag_lf`, where ``doc`` is a :class:`Document` (``id``, ``text``, ``tokens`` (strings),
``offsets`` (n, 2) character offsets):

* :func:`span_lf`: the output is character spans ``(start, end)`` or ``(start, end, label)``
  (a dictionary match, a regular expression, a model's predicted entities), ``re.Match``
  objects (``re.finditer(pattern, doc.text)``: the whole match's offsets) or spaCy ``Span``
  objects (``start_char``, ``end_char``, and ``label_`` unless the function has a fixed
  ``label``), in a list or any iterator (a generator), or one Match or Span alone (found in
  ``doc.text`` or a string of its length, ``doc.text.lower()``: one found in a sentence
  or a slice counts other characters and is an error); the tokens a
  span overlaps get a vote for its label (overlapping or nested spans of one function are
  one span), every other token an **abstain** (the function says nothing there, which is
  not the same as saying "outside"). None or no span abstains on the whole document; a span
  label None (or NaN) is no label (the function's ``label``). A span that covers no token
  (empty, or only whitespace between tokens) votes nothing and is counted
  (:func:`lf_summary`'s ``empty_dropped`` and ``whitespace_only_dropped``);
* :func:`tag_lf`: the output is one entry per token: an abstain, ``"O"`` (a vote for
  outside: e.g. "a sentence about outcomes holds no participants"), or a label
  (``"label"``, ``"I-label"``; ``"B-label"`` starts a new span). The abstain values are
  :data:`ABSTAIN` (``-1``, a numpy integer ``-1`` too), the string ``"-1"`` (what ``-1``
  becomes in a numpy string array, ``np.array(["PER", ABSTAIN])``), None and NaN (a
  pandas missing value: ``pd.NA``, a float NaN); a function may also return None for the
  whole document. Tags are read as their text (a label ``1`` is the tag ``1`` or ``"1"``);
  any other entry (``-1.0``, ``"nan"``, ``"U-label"``, an unknown label) is an error naming
  the function, the document and the token.

:func:`apply_lfs` runs the functions over a corpus (a progress bar over the documents; an
exception or a malformed output is re-raised naming the function and the document) and
returns :class:`TokenVotes`: the votes as flat token-level arrays, bound to the documents'
:class:`~.annotations.SequenceAnnotations` (human annotations on the same documents, when
given, stay there). :func:`lf_summary` is the per-function table in the manner of Snorkel's
``LFAnalysis`` (coverage, overlaps, conflicts; with gold spans, empirical accuracy and token
precision / recall). :class:`~.weak.AbstainDawidSkene` fits functions and annotators together.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Iterable, List, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..codes import show
from ..errors import CrowdDataError
from ..progress import progress_bar
from .annotations import SequenceAnnotations
from .quality import spans_token_mask
from .spans import check_scheme, span_token_ranges, token_coverage
from .tokens import Tokenizer, check_offsets, token_strings

__all__ = ["ABSTAIN", "Document", "SpanLabelingFunction", "span_lf", "tag_lf", "TokenVotes",
           "apply_lfs", "lf_summary"]

#: A tag function's "no opinion on this token"; ``"-1"``, None and NaN abstain too.
ABSTAIN = -1
_ABSTAINS = "ABSTAIN (-1), '-1', None and NaN abstain"
_OUTSIDE = -1        # label code of an explicit "O" vote in TokenVotes


@dataclass(frozen=True)
class Document:
    """What a labeling function reads: ``id``, ``text``, ``tokens`` (n,) strings (a list of
    its own per function) and ``offsets`` (n, 2) character offsets (end exclusive;
    read-only)."""

    id: Any
    text: str
    tokens: List[str]
    offsets: np.ndarray


@dataclass(frozen=True)
class SpanLabelingFunction:
    """A named labeling function (see the module docstring); ``returns`` is ``"spans"`` or
    ``"tags"``; ``label``: the label of spans given without one (default: the first label)."""

    name: str
    fn: Callable[[Document], Any]
    returns: str = "spans"
    label: Optional[str] = None

    def __post_init__(self) -> None:
        if self.returns not in ("spans", "tags"):
            raise ValueError(f"returns must be 'spans' or 'tags', got {self.returns!r}")
        if not callable(self.fn):
            raise TypeError(f"labeling function {self.name!r}: fn is not callable")
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a labeling function's name must be a non-empty string, got "
                            f"{type(self.name).__name__} {show(self.name)}")
        if not isinstance(self.label, Hashable):
            raise TypeError(f"labeling function {self.name!r}: label must be one span label "
                            f"(a function votes one label; a span can name its own: (start, "
                            f"end, label)), got {type(self.label).__name__} {show(self.label)}")

    def __call__(self, doc: Document) -> Any:
        return self.fn(doc)


def span_lf(name: Optional[str] = None, label: Optional[str] = None) -> Callable:
    """Decorator: ``fn(doc) -> iterable of (start, end[, label])`` character spans,
    ``re.Match`` or spaCy ``Span`` objects (see the module docstring; ``@span_lf`` without
    parentheses is ``@span_lf()``)."""
    if callable(name):      # @span_lf without parentheses: name is the function
        return SpanLabelingFunction(_name_of(name, "span_lf"), name, "spans", label)

    def wrap(fn: Callable) -> SpanLabelingFunction:
        return SpanLabelingFunction(name or _name_of(fn, "span_lf"), fn, "spans", label)
    return wrap


def tag_lf(name: Optional[str] = None, label: Optional[str] = None) -> Callable:
    """Decorator: ``fn(doc) -> one tag per token``: ``"O"``, a label (``"label"``,
    ``"I-label"``, ``"B-label"``) or an abstain, one of :data:`ABSTAIN` (``-1``), ``"-1"``,
    None and NaN; any other entry is an error naming the function, document and token (see
    the module docstring; ``@tag_lf`` without parentheses is ``@tag_lf()``)."""
    if callable(name):      # @tag_lf without parentheses: name is the function
        return SpanLabelingFunction(_name_of(name, "tag_lf"), name, "tags", label)

    def wrap(fn: Callable) -> SpanLabelingFunction:
        return SpanLabelingFunction(name or _name_of(fn, "tag_lf"), fn, "tags", label)
    return wrap


def _name_of(fn: Callable, maker: str) -> str:
    """``fn.__name__``; a callable without one (a ``functools.partial``, a matcher object)
    must be named."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"a {type(fn).__name__} has no __name__ to name the labeling function "
                        f"by: name it, {maker}(name=...)(fn)")
    return name


def _as_span(item: Any, fixed_label: Any) -> Optional[tuple]:
    """One returned span as ``(start, end[, label])``, or None if it is not one: a tuple,
    list or array as given; a ``re.Match``, its whole match's character offsets; a spaCy
    ``Span``, ``start_char``, ``end_char`` and ``label_`` (unless the function has a fixed
    ``label``, or the span has none). spaCy is never imported here: a Span exists only if
    spaCy is loaded already."""
    if isinstance(item, (tuple, list, np.ndarray)):
        return tuple(item)
    if isinstance(item, re.Match):
        return item.span()
    if _is_spacy_span(item):
        if fixed_label is None and item.label_:
            return item.start_char, item.end_char, item.label_
        return item.start_char, item.end_char
    return None


def _is_spacy_span(item: Any) -> bool:
    spacy_tokens = sys.modules.get("spacy.tokens")
    return spacy_tokens is not None and isinstance(item, spacy_tokens.Span)


def _source_length(item: Any) -> Optional[int]:
    """The length of the string a ``re.Match`` or spaCy ``Span`` was found in (its offsets
    count that string's characters), None for a plain ``(start, end)``."""
    if isinstance(item, re.Match):
        return len(item.string)
    if _is_spacy_span(item):
        return len(item.doc.text)
    return None


def _check_source(item: Any, text: str, where: str) -> None:
    """Raise when a Match or Span was found in a string of another length than ``text`` (a
    sentence, a slice, another document): its offsets are not the text's. A string of the
    same length (``text.lower()``) keeps the offsets and is accepted."""
    n = _source_length(item)
    if n is not None and n != len(text):
        kind = "re.Match" if isinstance(item, re.Match) else "spaCy Span"
        raise CrowdDataError(f"{where} is a {kind} ({show(item)}) found in a string of {n} "
                             f"characters, not in the document's text ({len(text)}): its "
                             "offsets count that string's characters; match on doc.text "
                             "(or nlp(doc.text))")


@dataclass(frozen=True)
class TokenVotes:
    """Labeling-function votes on the tokens of ``sequences``, flat (N votes).

    Attributes:
        sequences: the documents (and any human annotations on them).
        names: (J,) function names.
        token: (N,) global token of each vote.
        lf: (N,) function code.
        label: (N,) span label code, or -1 for an explicit ``O`` vote.
        begin: (N,) bool, the vote starts a span (BIO's ``B``).
        applied: (J, D) bool, the function was run on the document (abstains elsewhere).
        empty_dropped: (J,) int, the function's spans ``[s, s)`` (no character, so no token
            and no vote), as ``SequenceAnnotations.summary`` counts a crowd's; None when
            not counted (a TokenVotes not made by :func:`apply_lfs`).
        whitespace_only_dropped: (J,) int, its spans that cover characters but no token
            (only whitespace between tokens): no vote either.
    """

    sequences: SequenceAnnotations
    names: np.ndarray
    token: np.ndarray
    lf: np.ndarray
    label: np.ndarray
    begin: np.ndarray
    applied: np.ndarray
    empty_dropped: Optional[np.ndarray] = None
    whitespace_only_dropped: Optional[np.ndarray] = None

    @property
    def n_lfs(self) -> int:
        return len(self.names)

    def tags(self, scheme: Optional[str] = None) -> np.ndarray:
        """(N,) tag code of each vote in ``scheme`` (default the sequences' scheme)."""
        scheme = check_scheme(scheme or self.sequences.scheme)
        out = self.label + 1 if scheme == "IO" else 1 + 2 * self.label + (~self.begin)
        return np.where(self.label >= 0, out, 0).astype(np.int64)

    def matrix(self) -> np.ndarray:
        """(T, J) int: each token's vote per function, span label code, -1 = ``O``,
        -2 = abstain (Snorkel's label matrix with abstain -2 here, since -1 is ``O``)."""
        out = np.full((self.sequences.n_tokens, self.n_lfs), -2, np.int64)
        out[self.token, self.lf] = self.label
        return out


def _documents(seq: SequenceAnnotations) -> Iterable[Document]:
    strings = token_strings(seq.texts, seq.tokens)
    ptr = seq.tokens.doc_ptr
    for d in range(seq.n_docs):
        lo, hi = ptr[d], ptr[d + 1]
        offsets = np.stack([seq.tokens.start[lo:hi], seq.tokens.end[lo:hi]], 1)
        offsets.flags.writeable = False     # shared by the functions: not theirs to change
        yield Document(seq.doc_ids[d], seq.texts[d], strings[lo:hi].tolist(), offsets)


def _label_code(value: Any, labels: Mapping, where: str) -> int:
    if value not in labels:
        raise CrowdDataError(f"{where}: label {show(value)} is not among the labels "
                             f"{list(labels)}")
    return labels[value]


def apply_lfs(documents: Any, lfs: Sequence[SpanLabelingFunction],
              labels: Optional[Sequence[str]] = None, tokenizer: Tokenizer = None,
              progress: bool = True) -> TokenVotes:
    """Run every function on every document.

    Args:
        documents: a :class:`~.annotations.SequenceAnnotations` (its documents, tokens,
            labels and human annotations are kept), or texts (a list, ``{doc_id: text}``, a
            Series indexed by doc id).
        lfs: the functions (:func:`span_lf` / :func:`tag_lf`); names must be unique.
        labels: span labels (with texts; default: the functions' ``label`` values, in order).
        tokenizer: with texts, see :func:`.tokens.tokenize`.
        progress: a progress bar over the documents (tqdm, when installed).

    Raises:
        CrowdDataError: a function failed or returned something malformed (a span outside
            the text, a tag list of the wrong length, an unknown label, a tag that is neither
            a tag of the labels nor an abstain: ``ABSTAIN`` (-1), ``"-1"``, None, NaN),
            naming the function and the document (and the token, for a tag).
        ValueError: two functions share a name; with SequenceAnnotations, a function has an
            annotator's name, or ``labels`` differ from theirs, or a ``tokenizer`` is given.
    """
    if isinstance(lfs, SpanLabelingFunction):
        raise TypeError(f"lfs must be a list of labeling functions, got the function "
                        f"{lfs.name!r} alone (one function: [{lfs.name}])")
    lfs = list(lfs)
    odd = [j for j, lf in enumerate(lfs) if not isinstance(lf, SpanLabelingFunction)]
    if odd:
        raise TypeError(f"lfs[{odd[0]}] is a {type(lfs[odd[0]]).__name__}, not a labeling "
                        "function: decorate it with @span_lf() or @tag_lf()")
    if isinstance(documents, (str, bytes)):
        raise TypeError("documents must be a SequenceAnnotations or texts (a list of strings, "
                        "{doc_id: text}), got one string (one document: [text])")
    if isinstance(documents, pd.DataFrame):     # iterating one gives its column names
        raise TypeError(f"documents is a DataFrame (columns {list(documents.columns)}): pass its "
                        "text column, a Series indexed by document id (e.g. "
                        "df.set_index('id')['text']), or {doc_id: text}")
    if isinstance(labels, (str, bytes)):
        raise TypeError(f"labels must be a list of span labels, got the string {labels!r} (one "
                        f"label: [{labels!r}])")
    names = [lf.name for lf in lfs]
    hint = ""
    if len(set(names)) != len(names):
        raise ValueError(f"labeling function names must be unique, got {names} (name each: "
                         "@span_lf(name=...), span_lf(name=...)(lambda doc: ...))")
    if isinstance(documents, SequenceAnnotations):
        if labels is not None and list(labels) != documents.labels.tolist():
            raise ValueError(f"labels {list(labels)} differ from the sequences' labels "
                             f"{documents.labels.tolist()} (with SequenceAnnotations the labels "
                             "are theirs: leave labels out)")
        if tokenizer is not None:
            raise ValueError("tokenizer is for texts: SequenceAnnotations keep their own tokens "
                             "(give from_spans the tokenizer)")
        clash = [n for n in names if n in set(documents.annotator_ids.tolist())]
        if clash:   # a source's rows (abstain_rates_, source_ids_) would be ambiguous
            raise ValueError(f"labeling function {clash[0]!r} has the name of an annotator of "
                             "the sequences: rename the function")
    else:
        if labels is None:
            labels = list(dict.fromkeys(lf.label for lf in lfs if lf.label is not None)) or ["span"]
            hint = (" (the labels default to the functions' label= values, else ['span']: give "
                    "apply_lfs labels=[...])")
        empty = pd.DataFrame(columns=["doc", "annotator", "start", "end"])
        texts = documents if isinstance(documents, (Mapping, pd.Series)) else list(documents)
        documents = SequenceAnnotations.from_spans(texts, empty, labels=list(labels),
                                                   tokenizer=tokenizer)
    seq = documents
    codes = {lab: i for i, lab in enumerate(seq.labels.tolist())}
    default = {j: _label_code(lf.label, codes, f"labeling function {lf.name!r}")
               if lf.label is not None else 0 for j, lf in enumerate(lfs)}
    # the functions run per document (they are Python); their outputs are gathered raw and
    # checked and turned into token votes in one vectorised pass afterwards
    sp_doc, sp_lf, sp_se, sp_lab = [], [], [], []
    tg_doc, tg_lf, tg_vals = [], [], []
    for d, doc in enumerate(progress_bar(_documents(seq), desc="labeling functions",
                                         disable=not progress, total=seq.n_docs)):
        for j, lf in enumerate(lfs):
            try:
                # each function its own token list: one that edits it in place (lower-cases
                # it) would change what the next function reads
                out = lf(replace(doc, tokens=list(doc.tokens)))
            except Exception as err:
                raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                     f"{show(doc.id)} raised {type(err).__name__}: {err}") from err
            if out is None:
                continue
            if lf.returns == "spans" and (isinstance(out, re.Match) or _is_spacy_span(out)):
                out = [out]     # re.search's Match, one spaCy Span: one span
            if isinstance(out, (str, bytes, Mapping)) or not isinstance(out, Iterable):
                what = ("spans (start, end[, label]) (or None); re.Match and spaCy Span "
                        "objects are spans too, and an iterator of spans is a list"
                        if lf.returns == "spans" else "one tag per token (or None)")
                raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                     f"{show(doc.id)} returned {type(out).__name__} "
                                     f"{show(out)}; it must return a list of {what}")
            try:
                items = list(out)
            except Exception as err:    # a generator that fails part way
                raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                     f"{show(doc.id)} raised {type(err).__name__}: {err}"
                                     ) from err
            if lf.returns == "spans":
                for k, item in enumerate(items):
                    if isinstance(item, re.Match) and not isinstance(item.string, str):
                        # a bytes pattern on doc.text.encode(): offsets in bytes, not characters
                        raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                             f"{show(doc.id)}: span {k} is a match on bytes "
                                             f"({show(item)}): its offsets count bytes, not "
                                             "the text's characters; match a str pattern on "
                                             "doc.text")
                    _check_source(item, doc.text, f"labeling function {lf.name!r} on "
                                  f"document {show(doc.id)}: span {k}")
                    r = _as_span(item, lf.label)
                    if r is None or len(r) not in (2, 3):
                        shown = show(r) if r is not None else \
                            f"{type(item).__name__} {show(item)}"
                        # (5, 9) returned for [(5, 9)]: its items are the offsets
                        one = len(items) in (2, 3) and all(
                            isinstance(v, (int, np.integer)) for v in items[:2])
                        raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                             f"{show(doc.id)}: span {k} must be (start, end[, "
                                             f"label]), got {shown}"
                                             + (f"; it returned one span {show(tuple(items))}: "
                                                "return a list of spans, "
                                                f"[{show(tuple(items))}]" if one else ""))
                    if len(r) == 3 and not isinstance(r[2], Hashable):
                        raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                             f"{show(doc.id)}: span {k}'s label must be one "
                                             f"label, got {type(r[2]).__name__} {show(r[2])}")
                    sp_doc.append(d)
                    sp_lf.append(j)
                    sp_se.append(r[:2])
                    sp_lab.append(r[2] if len(r) == 3 else None)
            else:
                tags = items
                if len(tags) != len(doc.tokens):
                    raise CrowdDataError(f"labeling function {lf.name!r} on document "
                                         f"{show(doc.id)}: {len(tags)} tags for "
                                         f"{len(doc.tokens)} tokens")
                tg_doc.append(np.full(len(tags), d))
                tg_lf.append(np.full(len(tags), j))
                tg_vals.extend(tags)
    label_index = pd.Index(seq.labels.tolist())
    # tags are read as text ("I-" + label): matched to the labels' text (labels have one type)
    label_text = pd.Index([str(lab) for lab in seq.labels.tolist()])

    def where(k_doc: np.ndarray, k_lf: np.ndarray, i: int) -> str:
        return (f"labeling function {lfs[int(k_lf[i])].name!r} on document "
                f"{show(seq.doc_ids[int(k_doc[i])])}")

    def codes_of(names: pd.Series, k_doc: np.ndarray, k_lf: np.ndarray, pos: Any = None,
                 by_text: Optional[pd.Index] = None,
                 given: Optional[pd.Series] = None,
                 spans: Optional[np.ndarray] = None) -> np.ndarray:
        c = (label_index if by_text is None else by_text).get_indexer(names)
        if (c < 0).any():
            i = int(np.argmax(c < 0))
            at = (f", token {int(pos[i])}" if pos is not None else
                  f", span [{spans[i, 0]}, {spans[i, 1]})" if spans is not None else "")
            name = names.iloc[i]
            if by_text is not None and str(name)[1:2] == "-" and str(name)[2:] in by_text:
                # "L-PER" of a known label: the prefix is what is wrong (BILOU's, BIOES')
                raise CrowdDataError(f"{where(k_doc, k_lf, i)}{at}: tag {show(name)} has the "
                                     f"prefix {str(name)[:2]!r}; a tag function's tags are "
                                     "'B-label' (begins a span), 'I-label', a label, 'O' or "
                                     f"an abstain ({_ABSTAINS})")
            if by_text is not None:   # a tag: say what abstains (-1.0 and "nan" do not)
                raise CrowdDataError(
                    f"{where(k_doc, k_lf, i)}{at}: tag "
                    f"{show(name if given is None else given.iloc[i])} is neither a label among "
                    f"{label_index.tolist()} nor an abstain (a tag function's tags are "
                    f"'B-label', 'I-label', a label or 'O'; {_ABSTAINS}){hint}")
            raise CrowdDataError(f"{where(k_doc, k_lf, i)}{at}: label {show(name)} is "
                                 f"not among the labels {label_index.tolist()}{hint}")
        return c.astype(np.int64)

    # span outputs → covered tokens
    s_doc, s_lf = np.asarray(sp_doc, np.int64), np.asarray(sp_lf, np.int64)
    se = np.stack(check_offsets([r[0] for r in sp_se], [r[1] for r in sp_se],
                                lambda i: where(s_doc, s_lf, i)), 1).reshape(-1, 2)
    text_len = seq.text_len[s_doc]
    bad = se[:, 1] > text_len
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"{where(s_doc, s_lf, i)}: span [{se[i, 0]}, {se[i, 1]}) is "
                             f"outside the text ({int(text_len[i])} characters)")
    given = pd.Series(sp_lab, dtype=object)
    s_lab = np.array([default[j] for j in s_lf.tolist()], np.int64)
    has = given.notna().to_numpy()
    if has.any():
        s_lab[has] = codes_of(given[has].reset_index(drop=True), s_doc[has], s_lf[has],
                              spans=se[has])
    # @span_lf("ORG") names the function ORG: its spans without a label would be the first
    # label's (PER), silently
    misnamed = [j for j, lf in enumerate(lfs) if lf.label is None and lf.name in codes
                and codes[lf.name] != 0]
    odd = ~has & np.isin(s_lf, misnamed)
    if odd.any():
        i = int(np.argmax(odd))
        lf = lfs[int(s_lf[i])]
        raise CrowdDataError(f"{where(s_doc, s_lf, i)}, span [{se[i, 0]}, {se[i, 1]}): a "
                             f"span without a "
                             f"label gets the function's label=, and it has none: the "
                             f"first label {show(seq.labels[0])}, not {show(lf.name)}, its name "
                             f"(span_lf({lf.name!r}) names the function; span_lf(label="
                             f"{lf.name!r}) gives the label)")
    a, b = span_token_ranges(seq.tokens, s_doc, se[:, 0], se[:, 1])
    # an empty span (start == end) covers no character, so no token; one of whitespace
    # between tokens covers none either: no vote, counted per function (as from_spans counts
    # a crowd's) for lf_summary, not dropped unseen
    empty = se[:, 0] >= se[:, 1]
    blank = ~empty & (b <= a)
    n = np.where(empty, 0, np.maximum(b - a, 0))
    t_span = np.repeat(a, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    first = np.zeros(len(t_span), bool)
    first[(np.cumsum(n) - n)[n > 0]] = True
    # a token covered twice by one function keeps one vote, for the lower label code (as one
    # annotator's spans in from_spans); it begins a span only if none of the function's spans
    # of that label continues onto it from the previous token: overlapping or nested spans
    # are one span whatever order they are returned in
    r_lf, r_lab = np.repeat(s_lf, n), np.repeat(s_lab, n)
    key = r_lf * (seq.n_tokens + 1) + t_span
    order = np.lexsort((r_lab, key))
    key, t_span, r_lf, r_lab, first = (x[order] for x in (key, t_span, r_lf, r_lab, first))
    _, keep, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.ravel()
    continued = np.zeros(len(keep), bool)
    np.logical_or.at(continued, inv, ~first & (r_lab == r_lab[keep][inv]))
    span_votes = (t_span[keep], r_lf[keep], r_lab[keep], ~continued)

    # tag outputs → votes (ABSTAIN / None dropped, "O" = -1, "B-x" begins)
    t_doc = np.concatenate(tg_doc) if tg_doc else np.zeros(0, np.int64)
    t_lf = np.concatenate(tg_lf) if tg_lf else np.zeros(0, np.int64)
    vals = pd.Series(tg_vals, dtype=object)
    pos = np.arange(len(vals)) - np.repeat(np.cumsum([len(x) for x in tg_doc]) -
                                           np.array([len(x) for x in tg_doc], np.int64),
                                           [len(x) for x in tg_doc]) if tg_doc else np.zeros(0)
    text = vals.astype(str)
    vote = (vals.notna() & (text != str(ABSTAIN))).to_numpy()
    text, t_doc, t_lf, pos = text[vote].reset_index(drop=True), t_doc[vote], t_lf[vote], pos[vote]
    vals = vals[vote].reset_index(drop=True)    # as returned, for errors
    outside = (text == "O").to_numpy()
    prefixed = text.str[:2].isin(["B-", "I-"]).to_numpy()
    tag_label = text.where(~prefixed, text.str[2:])
    t_lab = np.full(len(text), _OUTSIDE, np.int64)
    if (~outside).any():
        t_lab[~outside] = codes_of(tag_label[~outside].reset_index(drop=True), t_doc[~outside],
                                   t_lf[~outside], pos[~outside], label_text,
                                   vals[~outside].reset_index(drop=True))
    tag_votes = (seq.tokens.doc_ptr[t_doc] + pos.astype(np.int64), t_lf, t_lab,
                 (text.str[:2] == "B-").to_numpy())
    token, lf_code, label, begin = (np.concatenate([x, y]) for x, y in zip(span_votes, tag_votes))
    token, lf_code, label = (x.astype(np.int64) for x in (token, lf_code, label))
    begin = begin.astype(bool)
    # BIO: a vote continuing no span of the same function and label begins one
    order = np.lexsort((token, lf_code))
    token, lf_code, label, begin = token[order], lf_code[order], label[order], begin[order]
    prev_same = np.concatenate([[False], (lf_code[1:] == lf_code[:-1]) &
                                (token[1:] == token[:-1] + 1) & (label[1:] == label[:-1]) &
                                (seq.tokens.doc[token[1:]] == seq.tokens.doc[token[:-1]])])
    begin = (begin | ~prev_same) & (label >= 0)
    applied = np.ones((len(lfs), seq.n_docs), bool)
    return TokenVotes(seq, np.asarray(names, dtype=object), token, lf_code, label, begin,
                      applied, np.bincount(s_lf[empty], minlength=len(lfs)),
                      np.bincount(s_lf[blank], minlength=len(lfs)))


def lf_summary(votes: TokenVotes, gold: Any = None) -> pd.DataFrame:
    """Per labeling function, as Snorkel's ``LFAnalysis.lf_summary`` for tokens.

    Columns: ``lf``, ``polarity`` (the labels it votes, ``O`` included), ``coverage``
    (share of the tokens it votes on), ``overlaps`` (share of the tokens where it and another
    function vote), ``conflicts`` (share where another function votes a different label),
    ``n_spans`` (its runs of span votes), ``empty_dropped`` and ``whitespace_only_dropped``
    (its returned spans that cover no token, so vote nothing: empty ones, and ones of only
    whitespace between tokens; as ``SequenceAnnotations.summary`` counts a crowd's; left out
    for a TokenVotes that :func:`apply_lfs` did not make); with ``gold`` spans (a frame ``doc, start, end[,
    label]`` or ``{doc: [[start, end[, label]], ...]}``, whose spans may be ``re.Match`` or
    spaCy ``Span`` objects, as a span function's: ``{doc_id: nlp(text).ents}``; scored on the
    documents it names,
    ``{doc: []}`` one with every token outside): ``correct``, ``incorrect``,
    ``emp_accuracy`` (its votes against the gold: a span vote is right on a token of a gold
    span of its label, or of any label where the gold gives none; an ``O`` vote outside
    every gold span), ``token_precision`` and ``token_recall`` of its span votes (recall
    of the gold tokens of the labels it votes, when the gold has labels; NaN where
    undefined).
    """
    if not isinstance(votes, TokenVotes):
        raise TypeError(f"lf_summary reads the TokenVotes of apply_lfs(documents, lfs), got "
                        f"{type(votes).__name__}")
    seq = votes.sequences
    T, J = seq.n_tokens, votes.n_lfs
    n_vote = np.bincount(votes.token, minlength=T)
    pos = votes.label >= 0
    # tokens with votes of two different labels (O = -1 counts as a label here)
    lo = np.full(T, np.iinfo(np.int64).max)
    hi = np.full(T, np.iinfo(np.int64).min)
    np.minimum.at(lo, votes.token, votes.label)
    np.maximum.at(hi, votes.token, votes.label)
    conflict_tok = (n_vote > 1) & (lo != hi)
    per = lambda w: np.bincount(votes.lf, weights=w, minlength=J)   # noqa: E731
    pol = [sorted({("O" if c < 0 else str(seq.labels[c])) for c in votes.label[votes.lf == j]})
           for j in range(J)]
    out = pd.DataFrame({
        "lf": votes.names, "polarity": pol,
        "coverage": per(np.ones(len(votes.token))) / max(T, 1),
        "overlaps": per(n_vote[votes.token] > 1) / max(T, 1),
        "conflicts": per(conflict_tok[votes.token]) / max(T, 1),
        "n_spans": per(votes.begin & pos).astype(np.int64)})
    for key in ("empty_dropped", "whitespace_only_dropped"):
        if getattr(votes, key) is not None:
            out[key] = np.asarray(getattr(votes, key), np.int64)
    if gold is not None:
        gold, named = _gold_frame(gold)
        docs = pd.Index(seq.doc_ids).get_indexer(named)
        if (docs < 0).any():
            n_out = int((docs < 0).sum())
            advice = (f"none of the {len(named)} gold documents is: are the ids of another type "
                      f"(e.g. {show(seq.doc_ids[0])})?" if n_out == len(named) else
                      f"{n_out} of the {len(named)} gold documents are not: keep the others")
            raise CrowdDataError(f"gold document {show(named[int(np.argmax(docs < 0))])} "
                                 f"is not among the labelled documents ({advice})")
        row_doc = pd.Index(seq.doc_ids).get_indexer(gold["doc"])
        at = lambda i: f"gold span {i} (document {show(gold['doc'].iloc[i])})"   # noqa: E731
        start, end = check_offsets(gold["start"], gold["end"], at)
        text_len = seq.text_len[row_doc]
        if "found_in" in gold.columns:
            found_in = gold["found_in"].to_numpy(np.float64, na_value=np.nan)
            other = ~np.isnan(found_in) & (found_in != text_len)
            if other.any():
                i = int(np.argmax(other))
                raise CrowdDataError(f"{at(i)}: a re.Match or spaCy Span found in a string of "
                                     f"{int(found_in[i])} characters, not in the "
                                     f"document's text ({int(text_len[i])}): its offsets count "
                                     "that string's characters")
        past = end > text_len
        if past.any():
            i = int(np.argmax(past))
            raise CrowdDataError(f"{at(i)}: [{start[i]}, {end[i]}) is outside the text "
                                 f"({int(text_len[i])} characters)")
        on = np.isin(seq.tokens.doc, docs)
        inside = spans_token_mask(seq, gold[["doc", "start", "end"]])
        # (T, L + 1): tokens of gold spans of each label, the last column those of spans
        # without one (they match a vote of any label), as Snorkel compares labels
        lab = gold["label"] if "label" in gold.columns else pd.Series([None] * len(gold))
        code = pd.Index(seq.labels.tolist()).get_indexer(lab)
        unknown = lab.notna().to_numpy() & (code < 0)
        if unknown.any():
            i = int(np.argmax(unknown))
            raise CrowdDataError(f"{at(i)}: label {show(lab.iloc[i])} is not among the labels "
                                 f"{seq.labels.tolist()}")
        code = np.where(lab.notna().to_numpy(), code, len(seq.labels))
        of_label = np.stack([token_coverage(seq.tokens, row_doc[code == c], start[code == c],
                                            end[code == c])
                             for c in range(len(seq.labels) + 1)], 1)
        scored = on[votes.token]
        right_label = of_label[votes.token, np.maximum(votes.label, 0)] | of_label[votes.token, -1]
        right = scored & np.where(pos, right_label, ~inside[votes.token])
        out["correct"] = per(right).astype(np.int64)
        out["incorrect"] = per(scored & ~right).astype(np.int64)
        n = out["correct"] + out["incorrect"]
        out["emp_accuracy"] = np.where(n > 0, out["correct"] / n.where(n > 0, 1), np.nan)
        tp = per(scored & pos & right)
        n_pos = per(scored & pos)
        out["token_precision"] = np.divide(tp, n_pos, out=np.full(J, np.nan), where=n_pos > 0)
        # recall of the gold tokens of the labels it votes (all of them for a function
        # with no span votes, or where the gold has no labels)
        votes_label = np.zeros((J, len(seq.labels)), bool)
        votes_label[votes.lf[pos], votes.label[pos]] = True
        votes_label[~votes_label.any(1)] = True
        gold_on = of_label[on]
        n_gold = ((gold_on[:, :-1].astype(np.int64) @ votes_label.T.astype(np.int64) > 0) |
                  gold_on[:, -1:]).sum(0)
        # no gold token inside: recall undefined
        out["token_recall"] = np.divide(tp, n_gold, out=np.full(J, np.nan), where=n_gold > 0)
    return out


def _gold_frame(gold: Any) -> tuple[pd.DataFrame, np.ndarray]:
    """Gold spans as a ``doc, start, end[, label]`` frame and the documents they score: a
    mapping names its documents (one with no spans is scored as all outside), a frame its
    rows'."""
    if isinstance(gold, Mapping):
        seq_types = (list, tuple, np.ndarray)
        spans = {}
        for d, marks in gold.items():
            # the spans a span function may return: re.Match and spaCy Span objects too
            # (spaCy's doc.ents), as (start, end[, label])
            got = [_as_span(m, None) for m in marks] if isinstance(marks, seq_types) else None
            if got is None or not all(m is not None and len(m) in (2, 3) for m in got):
                raise CrowdDataError(f"gold document {show(d)}: spans must be a list of [start, "
                                     f"end[, label]], got {show(marks)}")
            spans[d] = got
        rows = [(d, s[0], s[1], s[2] if len(s) == 3 else None)
                for d, marks in spans.items() for s in marks]
        frame = pd.DataFrame(rows, columns=["doc", "start", "end", "label"])
        if frame["label"].isna().all():
            frame = frame.drop(columns="label")
        # a Match's or Span's string length, checked against its document's text
        found_in = [_source_length(m) for marks in gold.values() for m in marks]
        if any(n is not None for n in found_in):
            frame["found_in"] = pd.array(found_in, dtype="Int64")
        return frame, pd.unique(pd.Series(list(gold), dtype=object))
    if not isinstance(gold, pd.DataFrame):
        raise TypeError(f"gold must be a frame with columns doc, start, end[, label] or {{doc: "
                        f"[[start, end[, label]], ...]}}, got {type(gold).__name__}")
    missing = [c for c in ("doc", "start", "end") if c not in gold.columns]
    if missing:
        raise CrowdDataError(f"gold has no column {missing[0]!r} (columns: doc, start, end; "
                             f"got {list(gold.columns)})")
    gold = gold[[c for c in ("doc", "start", "end", "label") if c in gold.columns]]
    gold = gold.reset_index(drop=True)
    return gold, pd.unique(gold["doc"])
