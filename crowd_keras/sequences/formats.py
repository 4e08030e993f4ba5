"""Span formats in and out: token tag lists (IO, BIO/IOB2, BILOU/BIOES), character-offset
JSON lines and spaCy ``Doc.spans`` / ``Doc.ents``.

The common currency is the one :class:`~.annotations.SequenceAnnotations.from_spans` reads
and :meth:`~.base.SequenceLabelModel.predict_spans` writes: the texts (``{doc_id: text}``)
and a frame of character spans with columns ``doc, start, end, label`` (end exclusive) and,
for a crowd, ``annotator``. Every reader returns ``(texts, spans)``; every writer takes them.
For a crowd, the (document, annotator) pairs who saw a document travel too: every writer
takes ``seen=`` (as ``from_spans`` does) and every reader gives it back with
``return_seen=True``. Without it, an annotator who saw a document and marked nothing has no
span there, and ``from_spans`` reads them as one who never saw it.

* **Token tags** (Hugging Face token classification: ``{"tokens": [...], "ner_tags":
  [...]}``): :func:`spans_to_token_tags` / :func:`token_tags_to_spans`. A tag list holds one
  tag per token, so it cannot hold two spans that share a token (overlapping or nested):
  writing them raises a :class:`~crowd_keras.CrowdDataError` naming the document (and
  annotator) and both spans' offsets; so is a span whose edges are not token edges (its tags
  would read back as other offsets), unless ``alignment="expand"`` or ``"contract"`` says how
  to move them, as spaCy's ``char_span`` does (and, in ``IO``, two touching spans of one
  label, which would read back as one). Reading is lenient as CoNLL's ``conlleval`` is: an
  ``I-x`` (BILOU: ``I-x``/``L-x``) that does not continue a span of ``x`` starts one.
* **Character offsets, JSON lines** (:func:`write_spans_jsonl` / :func:`read_spans_jsonl`):
  one document per line, ``{"doc", "text", "spans": [{"start", "end", "label"[,
  "annotator"]}][, "annotators": [...]]}``; holds anything, overlaps and nesting included.
* **spaCy** (optional: ``pip install crowd-keras[spacy]``; imported when called):
  :func:`spans_to_spacy` / :func:`spacy_to_spans`. ``Doc.spans`` groups hold overlapping
  spans; ``Doc.ents`` cannot (an error names the document and offsets).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, List, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..codes import check_unique_ids, ids_array, show
from ..errors import CrowdDataError
from ..files import atomic_write_text
from .annotations import seen_pairs
from .spans import span_token_ranges, trim_blank_edges
from .tokens import Tokenizer, check_offsets, token_strings, tokenize

__all__ = ["TAG_SCHEMES", "spans_to_token_tags", "token_tags_to_spans", "write_spans_jsonl",
           "read_spans_jsonl", "spans_to_spacy", "spacy_to_spans"]

#: Tag schemes of token tag lists (``IOB2`` is ``BIO``; ``BIOES`` is ``BILOU`` with E, S).
TAG_SCHEMES = ("IO", "BIO", "IOB2", "BILOU", "BIOES")
_PREFIXES = {"IO": "OI", "BIO": "OBI", "BILOU": "OBILU"}
_ALIGNMENTS = ("strict", "expand", "contract")


def _scheme(scheme: str) -> tuple[str, bool]:
    s = str(scheme).upper()
    if s not in TAG_SCHEMES:
        raise ValueError(f"scheme must be one of {TAG_SCHEMES}, got {scheme!r}")
    return {"IOB2": "BIO", "BIOES": "BILOU"}.get(s, s), s == "BIOES"


def _texts(texts: Any) -> dict:
    """``{doc_id: text}`` of a mapping, a Series or a sequence (ids ``0..D-1``); every text a
    string."""
    if isinstance(texts, pd.Series):
        check_unique_ids(ids_array(texts.index), "document")   # dict() keeps the last only
        out = dict(texts.items())
    elif isinstance(texts, Mapping):
        out = dict(texts)
    elif isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a list of strings, a {{doc_id: text}} mapping or a "
                        f"Series, got {type(texts).__name__}")
    else:
        out = dict(enumerate(texts))
    odd = [d for d, t in out.items() if not isinstance(t, str)]
    if odd:
        raise CrowdDataError(f"document {show(odd[0])}: text must be a string, got "
                             f"{type(out[odd[0]]).__name__}")
    return out


def _span_offsets(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The frame's checked (start, end) offsets (:func:`.tokens.check_offsets`)."""
    return check_offsets(frame["start"], frame["end"], lambda r: _row(frame, r))


def _check_in_text(frame: pd.DataFrame, start: np.ndarray, end: np.ndarray,
                   text_of: dict) -> None:
    """Raise for a span row that ends past its document's text (``read_spans_jsonl``
    refuses such a span; a tag list would silently cut it)."""
    lengths = np.array([len(t) for t in text_of.values()], np.int64)
    length = lengths[pd.Index(list(text_of)).get_indexer(frame["doc"])]
    past = end > length
    if past.any():
        r = int(np.argmax(past))
        raise CrowdDataError(f"{_row(frame, r)}: [{start[r]}, {end[r]}) is outside the text of "
                             f"document {show(frame['doc'].iloc[r])} ({length[r]} characters)")


def _labels(frame: pd.DataFrame, default_label: str) -> np.ndarray:
    """(S,) labels of the span rows; a missing one is an error, not the label 'None'."""
    if "label" not in frame.columns:
        return np.full(len(frame), default_label, dtype=object)
    return _present(frame, "label")


def _annotators(frame: pd.DataFrame) -> Optional[np.ndarray]:
    """(S,) annotators of the span rows (None without the column); a missing one is an
    error, not a tag row or ``Doc.spans`` group of the annotator 'nan'."""
    return _present(frame, "annotator") if "annotator" in frame.columns else None


def _present(frame: pd.DataFrame, column: str) -> np.ndarray:
    """``frame[column]`` as an object array, or an error naming the first row missing it."""
    values = frame[column].astype(object)
    missing = values.isna().to_numpy()
    if missing.any():
        r = int(np.argmax(missing))
        raise CrowdDataError(f"{_row(frame, r)}: missing {column} ({show(values.iloc[r])})")
    return values.to_numpy()


def _frame(spans: Any) -> pd.DataFrame:
    if not isinstance(spans, pd.DataFrame):
        raise CrowdDataError(f"spans must be a DataFrame with columns doc, start, end[, label, "
                             f"annotator], got {type(spans).__name__}")
    missing = [c for c in ("doc", "start", "end") if c not in spans.columns]
    if missing:
        raise CrowdDataError(f"spans frame has no column(s) {missing}; columns are "
                             f"{list(spans.columns)}")
    return spans      # its index names the rows in errors (as in from_spans); access by position


def _row(frame: pd.DataFrame, r: int) -> str:
    """The span row at position ``r``, named by its index label (a filtered frame's labels
    are not its positions)."""
    return f"span row {frame.index[r]}"


def _seen(seen: Any, text_of: dict, frame: pd.DataFrame) -> pd.DataFrame:
    """The (document, annotator) pairs of ``seen`` (a frame with columns ``doc`` and
    ``annotator``, or a list of pairs, as ``SequenceAnnotations.from_spans`` takes) as a
    frame; an unknown document or a missing annotator is an error naming the seen row (a
    frame's by its index, as ``from_spans`` names it), and so are spans (``frame``) without
    annotators beside it."""
    if len(frame) and "annotator" not in frame.columns:
        raise CrowdDataError("seen is given but the spans have no annotator column")
    out = seen_pairs(seen)     # a frame keeps its index: errors name its rows by it
    bad = ~out["doc"].isin(list(text_of)).to_numpy() | out["annotator"].isna().to_numpy()
    if bad.any():
        r = int(np.argmax(bad))
        what = ("has no annotator" if pd.isna(out["annotator"].iloc[r]) else
                _no_text(out["doc"].iloc[r], text_of))
        raise CrowdDataError(f"seen row {out.index[r]}: {what}")
    return out


def _no_text(doc: Any, text_of: dict) -> str:
    """``document <doc> has no text``, and which text's id prints alike when one does (a
    CSV's 7 against a JSON file's "7": the same id written in another type)."""
    alike = [d for d in text_of if str(d) == str(doc)]
    return f"document {show(doc)} has no text" + (
        f" (document {show(alike[0])} has: give the document ids one type)" if alike else "")


def _where(doc: Any, annotator: Any = None) -> str:
    return f"document {show(doc)}" + ("" if annotator is None else
                                      f", annotator {show(annotator)}")


# ---------------------------------------------------------------------------- token tags
def spans_to_token_tags(texts: Any, spans: pd.DataFrame, scheme: str = "BIO",
                        tokenizer: Tokenizer = None, default_label: str = "span",
                        alignment: str = "strict", seen: Any = None,
                        label_names: Optional[Sequence[str]] = None) -> List[dict]:
    """Character spans → one tag list per document (per document and annotator when
    ``spans`` has an ``annotator`` column).

    Args:
        texts: ``{doc_id: text}`` (or a list: ids ``0..D-1``, or a Series).
        spans: frame ``doc, start, end[, label][, annotator]``.
        scheme: ``"IO"``, ``"BIO"``/``"IOB2"``, ``"BILOU"`` or ``"BIOES"``.
        tokenizer: see :func:`.tokens.tokenize` (default: runs of non-space characters).
        default_label: the label of spans without a ``label`` column.
        alignment: as spaCy's ``char_span``: ``"strict"`` (a span whose edges are not token
            edges is an error: its tags would read back as other offsets), ``"expand"`` (it
            tags every token it overlaps) or ``"contract"`` (the tokens wholly inside it).
        seen: for a crowd, the (document, annotator) pairs who saw a document, as
            ``SequenceAnnotations.from_spans`` takes them: a pair without spans gets a row of
            ``O`` tags (an annotation that marks nothing is not a missing one).
        label_names: write tag ids, the positions of the tags in this list (the Hugging
            Face ``ClassLabel`` names, as :func:`token_tags_to_spans` reads them), instead
            of tag strings; a tag not in it is an error naming the document and tag.

    Returns:
        list of ``{"doc", ["annotator",] "text", "tokens", "offsets", "tags"}`` (offsets
        ``[start, end]`` per token: :func:`token_tags_to_spans` reads them back exactly, and
        the spans too but for whitespace-only tokens at a span's edge, which it trims).
        Every document of ``texts`` has a row. Without an annotator column, one per document
        (all ``O`` without spans); with one, one per (document, annotator) pair that has
        spans or is in ``seen``, and a document no pair names (nobody saw it) one row with
        ``"annotator": None`` and all ``O`` tags, which :func:`token_tags_to_spans` reads back
        as a text without annotations.

    Raises:
        CrowdDataError: a span of an unknown document, a span that covers no token, a span
            whose edges are not token edges (``alignment="strict"``), two touching spans of
            one label in ``IO`` (read back as one), or two
            spans of one row that share a token (tag lists cannot hold overlapping or nested
            spans), naming the document, annotator and offsets.
    """
    base, bioes = _scheme(scheme)
    if isinstance(label_names, (str, bytes)):
        raise TypeError(f"label_names must be a list of tag names, got the string "
                        f"{label_names!r}")
    tag_id = None if label_names is None else {str(n): k for k, n in enumerate(label_names)}
    text_of = _texts(texts)
    ids = list(text_of)
    frame = _frame(spans)
    doc_code = pd.Index(ids).get_indexer(frame["doc"])
    if (doc_code < 0).any():
        r = int(np.argmax(doc_code < 0))
        raise CrowdDataError(f"{_row(frame, r)}: {_no_text(frame['doc'].iloc[r], text_of)}")
    start, end = _span_offsets(frame)
    _check_in_text(frame, start, end, text_of)
    label = _labels(frame, default_label)
    blank = pd.Series(label, dtype=object).astype(str).eq("").to_numpy()
    if blank.any():   # "B-" names no label: token_tags_to_spans refuses it
        r = int(np.argmax(blank))
        raise CrowdDataError(f"{_row(frame, r)}: the empty label '' cannot be a tag")
    tokens = tokenize([text_of[d] for d in ids], tokenizer, doc_ids=ids)   # errors name ids
    if alignment not in _ALIGNMENTS:
        raise ValueError(f"alignment must be one of {_ALIGNMENTS}, got {alignment!r}")
    a, b = span_token_ranges(tokens, doc_code, start, end)
    has_ann = "annotator" in frame.columns
    if seen is not None:
        seen = _seen(seen, text_of, frame)
        has_ann = True
    annotator = _annotators(frame)
    annotator = np.zeros(len(frame), object) if annotator is None else annotator
    hit = b > a                       # edges inside a token (or in the space around tokens)
    cut_start = hit & (start != tokens.start[np.where(hit, a, 0)])
    cut_end = hit & (end != tokens.end[np.where(hit, b - 1, 0)])
    if alignment == "strict" and (cut_start | cut_end).any():
        r = int(np.argmax(cut_start | cut_end))
        raise CrowdDataError(
            f"{_where(ids[doc_code[r]], annotator[r] if has_ann else None)}: span "
            f"[{start[r]}, {end[r]}) does not align with the tokens (those it overlaps span "
            f"[{tokens.start[a[r]]}, {tokens.end[b[r] - 1]})); alignment='expand' tags them, "
            "'contract' only those wholly inside it")
    if alignment == "contract":
        a = a + (cut_start & (start > tokens.start[np.where(hit, a, 0)]))
        b = b - (cut_end & (end < tokens.end[np.where(hit, b - 1, 0)]))
    empty = b <= a
    if empty.any():
        r = int(np.argmax(empty))
        raise CrowdDataError(f"{_where(ids[doc_code[r]], annotator[r] if has_ann else None)}: "
                             f"span [{start[r]}, {end[r]}) covers no token")
    # rows: (document, annotator) groups; overlap = a span starting before the previous ends
    keys = pd.Series(list(zip(doc_code.tolist(), annotator.tolist())) if has_ann
                     else doc_code.tolist(), dtype=object)
    group, uniq = pd.factorize(keys)
    order = np.lexsort((b, a, group))
    g, aa, bb = group[order], a[order], b[order]
    # the furthest end so far within each row (rows are sorted: a row offset resets it)
    big = int(tokens.n_tokens) + 1
    reach = (np.maximum.accumulate(bb + g * big) - g * big) if len(bb) else bb
    clash = np.flatnonzero((g[1:] == g[:-1]) & (aa[1:] < reach[:-1]))
    if len(clash):
        j = order[clash[0] + 1]           # the span that meets an earlier one of its row
        same = np.flatnonzero((group == group[j]) & (a < b[j]) & (b > a[j]))
        i = int(same[same != j][0])
        raise CrowdDataError(
            f"{_where(ids[doc_code[j]], annotator[j] if has_ann else None)}: spans "
            f"[{start[i]}, {end[i]}) and [{start[j]}, {end[j]}) share a token; {scheme} tags "
            "cannot hold overlapping or nested spans (write them to JSON lines or spaCy "
            "Doc.spans instead)")
    if base == "IO":    # no B: two touching spans of one label read back as one
        lab = label[order]
        touch = np.flatnonzero((g[1:] == g[:-1]) & (aa[1:] == bb[:-1]) & (lab[1:] == lab[:-1]))
        if len(touch):
            i, j = order[touch[0]], order[touch[0] + 1]
            raise CrowdDataError(
                f"{_where(ids[doc_code[j]], annotator[j] if has_ann else None)}: spans "
                f"[{start[i]}, {end[i]}) and [{start[j]}, {end[j]}) of label {show(label[j])} "
                "touch; IO tags would read them back as one span (use BIO or BILOU)")
    strings = token_strings([text_of[d] for d in ids], tokens)
    tags = np.full(tokens.n_tokens, "O", dtype=object)
    rows: List[dict] = []
    # each row's spans in input order, by one stable sort (a scan of every span per row was
    # O(rows × spans))
    by_row = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[by_row], np.arange(len(uniq) + 1))
    per_row = {key: by_row[bounds[c]:bounds[c + 1]] for c, key in enumerate(uniq)}
    pairs = set(per_row)
    if seen is not None:
        pairs |= set(zip(pd.Index(ids).get_indexer(seen["doc"]).tolist(),
                         seen["annotator"].tolist()))
    if has_ann:   # a document nobody saw keeps a row: its text, annotator None, all O
        pairs |= {(d, None) for d in set(range(len(ids))) - {k[0] for k in pairs}}
    row_keys = (sorted(pairs, key=lambda k: (k[0], str(k[1]))) if has_ann
                else list(range(len(ids))))
    for key in row_keys:
        d, ann = key if has_ann else (key, None)
        lo, hi = int(tokens.doc_ptr[d]), int(tokens.doc_ptr[d + 1])
        row_tags = tags[lo:hi].copy()
        for r in per_row.get(key, []):
            s, e, lab = int(a[r]) - lo, int(b[r]) - lo, str(label[r])
            if base == "IO":
                row_tags[s:e] = f"I-{lab}"
            elif base == "BIO" or e - s > 1:
                row_tags[s:e] = f"I-{lab}"
                row_tags[s] = f"B-{lab}"
                if base == "BILOU":
                    row_tags[e - 1] = f"{'E' if bioes else 'L'}-{lab}"
            else:
                row_tags[s] = f"{'S' if bioes else 'U'}-{lab}"
        # Python scalars, not numpy ones (a SequenceAnnotations' ids): json.dumps takes the row
        out = {"doc": ids[d].item() if isinstance(ids[d], np.generic) else ids[d]}
        if has_ann:
            out["annotator"] = ann.item() if isinstance(ann, np.generic) else ann
        row_tags = row_tags.tolist()
        if tag_id is not None:
            odd = [t for t in row_tags if t not in tag_id]
            if odd:
                raise CrowdDataError(f"{_where(ids[d], ann)}: tag {odd[0]!r} is not among "
                                     f"the {len(tag_id)} label_names")
            row_tags = [tag_id[t] for t in row_tags]
        out.update(text=text_of[ids[d]], tokens=strings[lo:hi].tolist(),
                   offsets=np.stack([tokens.start[lo:hi], tokens.end[lo:hi]], 1).tolist(),
                   tags=row_tags)
        rows.append(out)
    return rows


def token_tags_to_spans(rows: Iterable[Mapping], scheme: str = "BIO",
                        label_names: Optional[Sequence[str]] = None, tags_key: str = "tags",
                        tokens_key: str = "tokens", doc_key: str = "doc",
                        annotator_key: str = "annotator", return_seen: bool = False) -> tuple:
    """Tag lists → ``(texts, spans)`` (``(texts, spans, seen)`` with ``return_seen``).

    Args:
        rows: dicts (or the rows of a DataFrame, e.g. a Hugging Face dataset's
            ``to_pandas()``; row ``i`` in errors is the ``i``-th) with ``tags_key`` (tag
            strings, or integer ids with ``label_names``, the Hugging Face ``ClassLabel``
            names) and either ``"text"`` and ``"offsets"`` (``[start, end]`` per token;
            ``tokens_key`` too, if given, must be the text at those offsets) or
            ``tokens_key`` (the text is then the tokens joined by single spaces; a
            ``"text"`` beside them without ``"offsets"`` must be that text). Optional
            ``doc_key`` (default: the row number) and ``annotator_key`` (rows of one
            document by several annotators; their texts must agree).
        scheme: of the tags (see :data:`TAG_SCHEMES`).
        label_names: the tag names of integer tag ids (id ``k`` is ``label_names[k]``, as a
            Hugging Face ``ClassLabel``); None: the tags are strings.
        tags_key: the key of each row's tags.
        tokens_key: the key of each row's tokens.
        doc_key: the key of each row's document id (default, when rows lack it: the row
            number).
        annotator_key: the key of each row's annotator (when no row has it, the spans
            have no ``annotator`` column). Among rows with one, a row whose annotator is
            None (or NaN), whose tags are all ``O`` and whose document has no other row is
            a document nobody annotated, as :func:`spans_to_token_tags` writes it: its text
            is kept, with no span and no ``seen`` pair.
        return_seen: also return ``seen``, the (document, annotator) pairs of the rows, a
            frame ``doc, annotator`` for ``SequenceAnnotations.from_spans(texts, spans,
            seen=seen)``: an annotator's row of ``O`` tags has no span, and without ``seen``
            it reads as "did not see the document" instead of "marked nothing".

    Returns:
        ``({doc: text}, frame doc, start, end, label[, annotator][, seen])``; a span starts
        and ends on its first and last token that is neither empty nor whitespace only (a
        tokenizer's ``" "`` or ``"\\n"``, as spaCy's entities never start or end on one; a
        span of whitespace tokens only is kept whole).

    Raises:
        CrowdDataError: a tag outside the scheme, a tag id outside ``label_names``, a length
            mismatch, a row without tokens or offsets, ``"offsets"`` without a ``"text"``,
            a ``"text"`` that is not its tokens joined by spaces (without offsets), a span of
            only empty tokens, a row without an annotator (None or NaN) among rows with
            one, unless it is all ``O`` and its document's only row, or two rows of one document with
            different texts, naming the row (its document too, where it names one) and
            position.
    """
    base, _ = _scheme(scheme)
    allowed = _PREFIXES[base]
    if isinstance(label_names, (str, bytes)):      # "O B-X I-X"[1] would be the tag " "
        raise TypeError(f"label_names must be a list of tag names, got the string "
                        f"{label_names!r}")
    if isinstance(rows, pd.DataFrame):   # iterating one gives its column names
        rows = rows.to_dict("records")
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
        raise TypeError(f"rows must be an iterable of dicts (one per tag list), got "
                        f"{type(rows).__name__}")
    texts: dict = {}
    parts = []
    given_offsets = []     # (row, raw offsets, text length): checked together below
    given_tokens = {}      # row -> (text, tokens) of rows with offsets and tokens: must agree
    first_row: dict = {}   # (document, annotator) -> its row
    named: dict = {}       # row -> its document, where the row names one

    def of(i: int) -> str:   # errors name the row (a dataset's index) and its document
        return f" (document {show(named[i])})" if i in named else ""

    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise CrowdDataError(f"row {i}: expected a dict with {tags_key!r}, got "
                                 f"{type(row).__name__}")
        if doc_key in row:
            named[i] = row[doc_key]
        if tags_key not in row:
            raise CrowdDataError(f"row {i}: no {tags_key!r} entry (keys: {sorted(row)})")
        if isinstance(row[tags_key], (str, bytes, Mapping)) or \
                not isinstance(row[tags_key], Iterable):
            raise CrowdDataError(f"row {i}: {tags_key!r} must be a list of tags, got "
                                 f"{type(row[tags_key]).__name__} {show(row[tags_key])}")
        tags = list(row[tags_key])
        if label_names is not None:
            ids = [t for t in tags if not isinstance(t, str)]
            odd = [t for t in ids if isinstance(t, (bool, np.bool_)) or
                   not isinstance(t, (int, np.integer)) or not 0 <= int(t) < len(label_names)]
            if odd:
                raise CrowdDataError(f"row {i}: tag id {show(odd[0])} is not among the "
                                     f"{len(label_names)} label names (ids 0.."
                                     f"{len(label_names) - 1}){of(i)}")
            tags = [label_names[int(t)] if not isinstance(t, str) else t for t in tags]
        if "offsets" in row and "text" in row:
            if not isinstance(row["text"], str):
                raise CrowdDataError(f"row {i}: 'text' must be a string, got "
                                     f"{type(row['text']).__name__}")
            text = row["text"]
            raw = np.asarray(row["offsets"], dtype=object) if np.ndim(row["offsets"]) else None
            if raw is not None and raw.ndim == 1 and raw.size and all(
                    np.ndim(x) == 1 and len(x) == 2 for x in raw):
                # an array of per-token pairs, as Arrow's to_pandas() (a Hugging Face
                # dataset's) gives a list-of-lists column
                raw = np.array([list(x) for x in raw], dtype=object)
            if raw is not None and raw.size == 0:   # an empty document: no token, no pair
                raw = raw.reshape(0, 2)
            if raw is None or raw.ndim != 2 or raw.shape[1] != 2:
                shape = "a scalar" if raw is None else f"shape {raw.shape}"
                raise CrowdDataError(f"row {i}: 'offsets' must be one [start, end] pair per "
                                     f"token, got {shape}")
            given_offsets.append((i, raw, len(text)))
            if tokens_key in row and isinstance(row[tokens_key], Iterable) and \
                    not isinstance(row[tokens_key], (str, bytes, Mapping)):
                given_tokens[i] = (text, [str(t) for t in row[tokens_key]])
            offsets = np.zeros(raw.shape, np.int64)     # read below, after the checks
        elif tokens_key in row:
            off = row.get("offsets")    # a frame's rows without offsets hold NaN there
            if off is not None and not (pd.api.types.is_scalar(off) and pd.isna(off)):
                raise CrowdDataError(f"row {i}: 'offsets' without 'text': they index a text "
                                     f"the row does not give (add its 'text', or leave "
                                     f"'offsets' out: the text is then the {tokens_key!r} "
                                     f"joined by single spaces){of(i)}")
            if isinstance(row[tokens_key], (str, bytes, Mapping)) or \
                    not isinstance(row[tokens_key], Iterable):   # a string: one per character
                raise CrowdDataError(f"row {i}: {tokens_key!r} must be a list of tokens, got "
                                     f"{type(row[tokens_key]).__name__} "
                                     f"{show(row[tokens_key])}")
            toks = [str(t) for t in row[tokens_key]]
            lens = np.fromiter((len(t) for t in toks), np.int64, len(toks))
            starts = (np.cumsum(lens + 1) - (lens + 1)).astype(np.int64)   # [] for no token
            text, offsets = " ".join(toks), np.stack([starts, starts + lens], 1)
            given = row.get("text")     # a frame's rows without a text hold NaN there
            if isinstance(given, str) and given != text:   # the spans' offsets index `text`
                raise CrowdDataError(
                    f"row {i}: 'text' {show(row['text'])} is not the {tokens_key!r} joined by "
                    f"single spaces ({show(text)}), and there are no 'offsets' to place the "
                    "tokens in it: give each token's [start, end] as 'offsets', or leave "
                    "'text' out")
        else:
            raise CrowdDataError(f"row {i}: needs 'text' and 'offsets', or {tokens_key!r}")
        if len(offsets) != len(tags):
            raise CrowdDataError(f"row {i}: {len(tags)} tags for {len(offsets)} tokens{of(i)}")
        doc = row.get(doc_key, i)
        if doc is None or isinstance(doc, (list, dict, set, np.ndarray)) or (
                isinstance(doc, (float, np.floating)) and np.isnan(doc)):
            raise CrowdDataError(f"row {i}: {doc_key!r} must be a document id (a string or an "
                                 f"integer), got {show(doc)}")
        if doc in texts and texts[doc] != text:
            raise CrowdDataError(f"row {i}: document {show(doc)} has another text in an "
                                 "earlier row")
        texts[doc] = text
        ann = row.get(annotator_key)
        if ann is not None and pd.api.types.is_scalar(ann) and pd.isna(ann):
            ann = None    # a frame's gap (pandas stores None as NaN): no annotator, not "nan"
        pair = (doc, ann)
        if pair in first_row:     # a tag list per (document, annotator): two would merge
            raise CrowdDataError(
                f"row {i}: document {show(doc)}"
                + (f", annotator {show(pair[1])}" if pair[1] is not None else "")
                + f" has another tag list in row {first_row[pair]}"
                + ("" if pair[1] is not None else f" (rows of one document need an "
                   f"{annotator_key!r} each)"))
        first_row[pair] = i
        parts.append((i, doc, ann, tags, offsets))
    if given_offsets:   # every token offset of every row, checked in one pass
        pos = np.concatenate([np.arange(len(raw)) for _, raw, _ in given_offsets])
        row_no = np.concatenate([np.full(len(raw), i) for i, raw, _ in given_offsets])
        flat = np.concatenate([raw for _, raw, _ in given_offsets]) if pos.size else \
            np.zeros((0, 2), object)
        start, end = check_offsets(list(flat[:, 0]), list(flat[:, 1]),
                                   lambda k: f"row {row_no[k]}, token {pos[k]}")
        length = np.concatenate([np.full(len(raw), n) for _, raw, n in given_offsets])
        past = end > length
        if past.any():
            k = int(np.argmax(past))
            raise CrowdDataError(f"row {row_no[k]}, token {pos[k]}: offsets [{start[k]}, "
                                 f"{end[k]}) end past the text ({int(length[k])} characters)"
                                 f"{of(row_no[k])}")
        # tokens in text order without overlap: else a span could end before it starts
        back = (row_no[1:] == row_no[:-1]) & (start[1:] < end[:-1])
        if back.any():
            k = int(np.argmax(back)) + 1
            raise CrowdDataError(f"row {row_no[k]}, token {pos[k]}: offsets [{start[k]}, "
                                 f"{end[k]}) begin before the end of token {pos[k] - 1} "
                                 f"({end[k - 1]}); tokens must be in text order, not "
                                 f"overlapping{of(row_no[k])}")
        pieces = np.split(np.stack([start, end], 1), np.cumsum(
            [len(raw) for _, raw, _ in given_offsets])[:-1])
        by_row = {i: piece for (i, _, _), piece in zip(given_offsets, pieces)}
        for i, (text, toks) in given_tokens.items():   # the offsets must be those tokens'
            at = [text[a:b] for a, b in by_row[i].tolist()]
            if len(toks) != len(at):
                raise CrowdDataError(f"row {i}: {len(toks)} {tokens_key!r} for {len(at)} "
                                     f"offsets{of(i)}")
            k = next((k for k, (x, y) in enumerate(zip(at, toks)) if x != y), None)
            if k is not None:
                raise CrowdDataError(f"row {i}, token {k}: {tokens_key!r} has {show(toks[k])} "
                                     f"but the text at its offsets {by_row[i][k].tolist()} is "
                                     f"{show(at[k])}{of(i)}")
        parts = [(i, doc, ann, tags, by_row.get(i, offsets))
                 for i, doc, ann, tags, offsets in parts]
    cols = ["doc", "start", "end", "label"]
    has_ann = any(p[2] is not None for p in parts)
    # among a crowd's rows, one without an annotator is a document nobody saw (as
    # spans_to_token_tags writes it): all O, no other row of it; a span there would have no
    # annotator
    annotated = {p[1] for p in parts if p[2] is not None}
    odd = [p[0] for p in parts if p[2] is None and (p[1] in annotated or not all(
        isinstance(t, str) and t.upper() == "O" for t in p[3]))] if has_ann else []
    if odd:
        j = next(p[0] for p in parts if p[2] is not None)
        raise CrowdDataError(f"row {odd[0]}: no {annotator_key!r} entry, while row {j} has one "
                             "(give every row of a crowd its annotator; a row without one "
                             "stands for a document nobody annotated: only 'O' tags, and no "
                             f"other row of that document){of(odd[0])}")
    seen = pd.DataFrame([(p[1], p[2]) for p in parts if p[2] is not None],
                        columns=["doc", "annotator"]).drop_duplicates(ignore_index=True)

    def result(spans: pd.DataFrame) -> tuple:
        return (texts, spans, seen) if return_seen else (texts, spans)

    if not parts:
        return result(pd.DataFrame(columns=cols + (["annotator"] if has_ann else [])))
    lens = np.array([len(p[3]) for p in parts])
    flat = pd.Series([t for p in parts for t in p[3]], dtype=object)
    missing = flat.isna().to_numpy()
    if missing.any():   # None is no tag (a missing one is not the tag 'None' nor 'nan')
        k = int(np.argmax(missing))
        r = int(np.searchsorted(np.cumsum(lens), k, side="right"))
        raise CrowdDataError(f"row {parts[r][0]}, token {k - int(np.sum(lens[:r]))}: tag "
                             f"{show(flat.iloc[k])} is missing (every token needs a tag, 'O' "
                             f"outside spans){of(parts[r][0])}")
    raw_tags = flat      # as given: an integer tag is an id, which the message tells
    flat = flat.astype(str)
    row_of = np.repeat(np.arange(len(parts)), lens)
    prefix = flat.str[0].str.upper().to_numpy()
    if base == "BILOU":
        prefix = np.where(prefix == "E", "L", np.where(prefix == "S", "U", prefix))
    label = flat.str[2:].to_numpy(object)
    bad = ~np.isin(prefix, list(allowed)) | ((prefix != "O") & ~flat.str[1:2].eq("-")
                                               .to_numpy()) | ((prefix == "O") & (flat.str.len()
                                                                                 .to_numpy() > 1))
    bad |= (prefix != "O") & (flat.str.len().to_numpy() <= 2)     # "B-" names no label
    if bad.any():
        k = int(np.argmax(bad))
        pos = k - int(np.concatenate([[0], np.cumsum(lens)])[row_of[k]])
        tag = raw_tags.iloc[k]      # an integer is a ClassLabel's id: it needs the names
        hint = ("; integer tags are tag ids: pass label_names, the tag names in id order "
                "(a Hugging Face dataset's features[...].feature.names)"
                if isinstance(tag, (int, np.integer)) and not isinstance(tag, (bool, np.bool_))
                else "; IO tags without a prefix (Few-NERD's 'person') are 'I-person' here: "
                "map each tag t to t if t == 'O' else 'I-' + t (with ids, each of label_names)"
                if base == "IO" and len(flat.iloc[k]) > 1 and flat.iloc[k][1:2] != "-" else "")
        raise CrowdDataError(f"row {parts[row_of[k]][0]}, token {pos}: tag {flat.iloc[k]!r} is "
                             f"not a {scheme} tag (prefixes "
                             f"{', '.join(allowed + ('ES' if base == 'BILOU' else ''))})"
                             f"{of(parts[row_of[k]][0])}{hint}")
    inside = prefix != "O"
    first = np.zeros(len(flat), bool)
    first[np.concatenate([[0], np.cumsum(lens)[:-1]])[lens > 0]] = True
    prev_label = np.concatenate([[None], label[:-1]])
    prev_prefix = np.concatenate([["O"], prefix[:-1]])
    closed = np.isin(prev_prefix, ["O", "L", "U"]) if base == "BILOU" else prev_prefix == "O"
    begin = inside & (first | closed | (prev_label != label) | np.isin(prefix, ["B", "U"]))
    nxt_begin = np.concatenate([begin[1:], [True]])
    nxt_first = np.concatenate([first[1:], [True]])
    nxt_inside = np.concatenate([inside[1:], [False]])
    last = inside & (nxt_first | nxt_begin | ~nxt_inside)
    bi, li = np.flatnonzero(begin), np.flatnonzero(last)
    offsets = np.concatenate([p[4] for p in parts]) if len(parts) else np.zeros((0, 2), int)
    # a span's edges are those of its first and last non-empty tokens: an empty token ("" in
    # a token list sits after a joining space) would put that space into the span
    solid = offsets[:, 1] > offsets[:, 0]
    fb, fl = trim_blank_edges(bi, li, lambda k: ~solid[k])
    empty = ~solid[fb]    # only empty tokens ([k, k], as [CLS] has)
    if empty.any():     # a span of no character: from_spans drops it, no writer takes it
        k = int(bi[np.argmax(empty)])
        pos = k - int(np.concatenate([[0], np.cumsum(lens)])[row_of[k]])
        raise CrowdDataError(f"row {parts[row_of[k]][0]}, token {pos}: tag {flat.iloc[k]!r} "
                             f"starts a span of no character (its tokens are empty: "
                             f"{offsets[k].tolist()}){of(parts[row_of[k]][0])}")
    # nor of whitespace-only ones ("\n", " " tokens of spaCy and many tokenizers), as spaCy's
    # entities never start or end on one; a span of whitespace only is kept as it is
    fb, fl = trim_blank_edges(fb, fl, lambda k: ~solid[k] | np.array(
        [texts[parts[row_of[t]][1]][offsets[t, 0]:offsets[t, 1]].isspace() for t in k.tolist()],
        bool).reshape(-1))
    out = pd.DataFrame({"doc": [parts[r][1] for r in row_of[bi]],
                        "start": offsets[fb, 0], "end": offsets[fl, 1], "label": label[bi]})
    if has_ann:
        out["annotator"] = [parts[r][2] for r in row_of[bi]]
    return result(out)


# ---------------------------------------------------------------------------- JSON lines
def _json_ids(values: list, what: str, where: Any) -> list:
    """``values`` as JSON strings or integers (numpy integers as Python ones); anything
    else (a missing value, a float, a tuple) is an error naming ``where(k)``: the JSON
    written would not be what :func:`read_spans_jsonl` reads back."""
    out = [v.item() if isinstance(v, np.generic) else v for v in values]
    odd = [k for k, v in enumerate(out) if isinstance(v, bool) or not isinstance(v, (str, int))]
    if odd:
        k = odd[0]
        raise CrowdDataError(f"{where(k)}: {what} must be a string or an integer, got "
                             f"{show(out[k])}")
    return out


def write_spans_jsonl(path: Any, texts: Any, spans: pd.DataFrame, seen: Any = None) -> Path:
    """One line per document: ``{"doc", "text", "spans": [{"start", "end", "label"[,
    "annotator"]}, ...][, "annotators": [...]]}`` (atomic write). Documents without spans get
    ``"spans": []``; spans without a ``label`` column are labelled ``"span"`` (as
    :func:`spans_to_spacy` labels them). For a crowd (an ``annotator`` column, or ``seen``:
    the (document, annotator) pairs who saw a document, as ``SequenceAnnotations.from_spans``
    takes them) ``"annotators"`` lists who saw the document, those who marked nothing
    included."""
    text_of = _texts(texts)
    frame = _frame(spans)
    crowd = "annotator" in frame.columns or seen is not None
    seen = _seen([], text_of, frame[:0]) if seen is None else _seen(seen, text_of, frame)
    unknown = ~frame["doc"].isin(list(text_of))
    if unknown.any():
        r = int(np.argmax(unknown.to_numpy()))
        raise CrowdDataError(f"{_row(frame, r)}: {_no_text(frame['doc'].iloc[r], text_of)}")
    start, end = _span_offsets(frame)
    _check_in_text(frame, start, end, text_of)
    frame = frame.assign(label=_labels(frame, "span"))   # as the other writers label them
    keep = [c for c in ("start", "end", "label", "annotator") if c in frame.columns]
    for c in keep[2:]:      # what read_spans_jsonl reads back: a string or an integer
        _json_ids(frame[c].tolist(), c, lambda r: _row(frame, r))
    doc_ids = _json_ids(list(text_of), "doc", lambda k: f"text {k}")
    _json_ids(seen["annotator"].tolist(), "annotator", lambda r: f"seen row {seen.index[r]}")
    records = frame[keep].astype(object).to_dict("records")
    for rec, s, e in zip(records, start.tolist(), end.tolist()):
        rec["start"], rec["end"] = s, e
    by_doc: dict = {d: [] for d in text_of}
    for d, rec in zip(frame["doc"].tolist(), records):
        by_doc[d].append(rec)
    who: dict = {d: [] for d in text_of}      # who saw each document, in order of mention
    pairs = zip(frame["doc"].tolist() + seen["doc"].tolist(),
                (frame["annotator"].tolist() if "annotator" in frame.columns else [])
                + seen["annotator"].tolist())
    for d, ann in dict.fromkeys(pairs):
        who[d].append(ann.item() if isinstance(ann, np.generic) else ann)
    lines = [_escape_surrogates(json.dumps(
        {"doc": j, "text": text_of[d], "spans": by_doc[d],
         **({"annotators": who[d]} if crowd else {})}, ensure_ascii=False, allow_nan=False), d)
        for d, j in zip(text_of, doc_ids)]
    return atomic_write_text(path, "".join(line + "\n" for line in lines))


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _escape_surrogates(line: str, doc: Any) -> str:
    """``line`` with each lone UTF-16 surrogate (a text cut inside an emoji) written as a
    ``\\uXXXX`` escape, which UTF-8 cannot encode raw and ``json.loads`` reads back as the
    same one character. A high surrogate followed by a low one would read back as one
    character (the offsets after it would move): an error naming the document."""
    pair = _SURROGATE_PAIR.search(line)
    if pair:
        raise CrowdDataError(
            f"document {show(doc)}: the surrogates "
            f"{' '.join(f'U+{ord(c):04X}' for c in pair.group())} would read back from JSON "
            "as one character, moving the offsets after them; join them first "
            "(text.encode('utf-16', 'surrogatepass').decode('utf-16'))")
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


def read_spans_jsonl(path: Any, return_seen: bool = False) -> tuple:
    """``(texts, spans)`` from :func:`write_spans_jsonl`'s layout (UTF-8, a byte-order mark
    and CRLF line ends accepted; offsets checked as integers within each text; in a file that
    names annotators, every span needs its ``"annotator"``; every span needs its ``"label"``;
    errors name the file, line and span).

    With ``return_seen``, ``(texts, spans, seen)``: ``seen`` (frame ``doc, annotator``) holds
    the pairs of each line's ``"annotators"`` and of its spans, for
    ``SequenceAnnotations.from_spans(texts, spans, seen=seen)`` (an annotator who saw a
    document and marked nothing is not one who did not see it)."""
    path = Path(path)
    raw = path.read_bytes()
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise CrowdDataError(f"{path}:{line}: not UTF-8 text (byte {raw[err.start]:#04x} at "
                             f"offset {err.start})") from None
    texts: dict = {}
    rows, starts, ends, where, limit, seen = [], [], [], [], [], []
    crowd = None     # where the file first names an annotator: then every span needs one
    for n, line in enumerate(content.split("\n"), 1):   # not splitlines: U+2028 is text
        if not line.strip():
            continue
        at = f"{path}:{n}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise CrowdDataError(f"{at}: not JSON ({err.msg})") from None
        if not isinstance(rec, dict) or "text" not in rec or "doc" not in rec:
            raise CrowdDataError(f"{at}: needs 'doc' and 'text'")
        doc, text = rec["doc"], rec["text"]
        if isinstance(doc, bool) or not isinstance(doc, (str, int)):
            raise CrowdDataError(f"{at}: 'doc' must be a string or an integer id, got "
                                 f"{show(doc)}")
        if not isinstance(text, str):
            raise CrowdDataError(f"{at}: 'text' must be a string, got {type(text).__name__}")
        if doc in texts:
            raise CrowdDataError(f"{at}: document {show(doc)} appears twice")
        texts[doc] = text
        who = rec.get("annotators", [])
        if not isinstance(who, list) or any(isinstance(w, bool) or not isinstance(w, (str, int))
                                            for w in who):
            raise CrowdDataError(f"{at}: 'annotators' must be a list of annotator ids (strings "
                                 f"or integers), got {show(who)}")
        seen.extend((doc, w) for w in who)
        if "annotators" in rec and crowd is None:
            crowd = f"{at}: 'annotators'"
        spans = rec.get("spans", [])
        if not isinstance(spans, list):
            raise CrowdDataError(f"{at}: 'spans' must be a list of span objects, got "
                                 f"{type(spans).__name__}")
        for k, sp in enumerate(spans):
            if not isinstance(sp, dict) or "start" not in sp or "end" not in sp:
                raise CrowdDataError(f"{at}: span {k} needs integer 'start' and 'end', got "
                                     f"{show(sp)}")
            odd = [c for c in ("label", "annotator") if c in sp and (
                isinstance(sp[c], bool) or not isinstance(sp[c], (str, int)))]
            if odd:
                raise CrowdDataError(f"{at}: span {k}: {odd[0]} must be a string or an "
                                     f"integer, got {show(sp[odd[0]])}")
            if "annotator" in sp and crowd is None:
                crowd = f"{at}: span {k}"
            starts.append(sp["start"])
            ends.append(sp["end"])
            where.append(f"{at}: span {k}")
            limit.append(len(text))
            rows.append({"doc": doc, **{c: sp[c] for c in ("label", "annotator") if c in sp}})
    lost = [k for k, r in enumerate(rows) if "annotator" not in r] if crowd else []
    if lost:    # its spans would have a NaN annotator, which from_spans refuses unlocated
        raise CrowdDataError(f"{where[lost[0]]} has no 'annotator', while the file names "
                             f"annotators ({crowd}): give every span of a crowd its annotator")
    start, end = check_offsets(starts, ends, lambda k: where[k])
    past = end > np.asarray(limit, np.int64)
    if past.any():
        k = int(np.argmax(past))
        raise CrowdDataError(f"{where[k]} [{start[k]}, {end[k]}) is outside the text of "
                             f"document {show(rows[k]['doc'])} ({limit[k]} characters)")
    unlabelled = [k for k, r in enumerate(rows) if "label" not in r]
    if unlabelled:    # read as NaN, it was refused later naming a frame row, not the line
        raise CrowdDataError(f"{where[unlabelled[0]]} has no 'label'")
    for row, s, e in zip(rows, start.tolist(), end.tolist()):
        row["start"], row["end"] = s, e
    # a crowd's file keeps its annotator column when no annotator marked a span (every
    # line's "annotators" only): from_spans(texts, spans, seen=seen) needs it
    cols = ["doc", "start", "end", "label"] + (["annotator"] if crowd else [])
    if not return_seen:
        return texts, pd.DataFrame(rows, columns=cols)
    seen += [(r["doc"], r["annotator"]) for r in rows if "annotator" in r]
    return texts, pd.DataFrame(rows, columns=cols), pd.DataFrame(
        list(dict.fromkeys(seen)), columns=["doc", "annotator"])


# ---------------------------------------------------------------------------- spaCy
def _spacy() -> Any:
    try:
        import spacy
    except ImportError:
        raise ImportError("the spaCy converters need spaCy: pip install crowd-keras[spacy] "
                          "(a blank pipeline is enough: no model download)") from None
    return spacy


def spans_to_spacy(texts: Any, spans: pd.DataFrame, nlp: Any = None, spans_key: str = "sc",
                   ents: bool = False, alignment: str = "strict",
                   seen: Any = None) -> List[Any]:
    """Character spans → one spaCy ``Doc`` per text (in the order of ``texts``).

    Args:
        texts: the documents: a sequence of strings (ids ``0..D-1``), a mapping
            ``{doc_id: text}`` or a Series indexed by doc id.
        spans: frame with columns ``doc``, ``start``, ``end`` (character offsets, end
            exclusive) and optionally ``label`` and ``annotator``.
        nlp: a spaCy pipeline whose tokenizer makes the docs (default ``spacy.blank("en")``).
        spans_key: the ``Doc.spans`` group; with an ``annotator`` column each annotator's
            spans go to a group of that name instead.
        ents: write ``Doc.ents`` (non-overlapping) instead of ``Doc.spans``.
        alignment: spaCy's ``char_span`` mode: ``"strict"`` (a span whose edges are not
            token edges is an error), ``"expand"`` or ``"contract"``.
        seen: for a crowd, the (document, annotator) pairs who saw a document, as
            ``SequenceAnnotations.from_spans`` takes them: a pair without spans gets an
            empty group (``spacy_to_spans(..., return_seen=True)`` reads it back).

    Raises:
        CrowdDataError: a span that does not align with the tokens (``strict``) or ends past
            its text, two spans that share a token with ``ents=True``, naming the document
            and offsets, or spans of several annotators with ``ents=True``.
    """
    spacy = _spacy()
    nlp = spacy.blank("en") if nlp is None else nlp
    if not hasattr(nlp, "make_doc"):
        raise TypeError(f"nlp must be a spaCy pipeline (spacy.blank('en'), spacy.load(...)), "
                        f"got {type(nlp).__name__}")
    if alignment not in _ALIGNMENTS:
        raise ValueError(f"alignment must be one of {_ALIGNMENTS}, got {alignment!r}")
    if not isinstance(spans_key, str):   # None made a group keyed None (spacy_to_spans' "all")
        raise TypeError(f"spans_key must be the name of a Doc.spans group (a string), got "
                        f"{spans_key!r}")
    if ents and seen is not None:
        raise ValueError("seen names annotators' Doc.spans groups; Doc.ents (ents=True) has "
                         "no annotators")
    text_of = _texts(texts)
    frame = _frame(spans)
    seen_by = (_seen(seen, text_of, frame).groupby("doc", sort=False)["annotator"].agg(list)
               .to_dict() if seen is not None else {})
    starts, ends = _span_offsets(frame)
    labels = _labels(frame, "span")
    has_ann = "annotator" in frame.columns
    who = pd.unique(_annotators(frame)) if has_ann else []
    if ents and len(who) > 1:     # one set of entities: the annotators' spans would merge
        raise CrowdDataError(
            f"Doc.ents holds one set of spans, these are by {len(who)} annotators ("
            f"{', '.join(map(show, who[:3]))}{', ...' if len(who) > 3 else ''}): write "
            "Doc.spans (ents=False: a group per annotator) or aggregate them first")
    names = list(dict.fromkeys(list(who) + [a for v in seen_by.values() for a in v]))
    keys = [str(a) for a in names]     # spaCy keys groups by string: 1 and "1" would merge
    if len(set(keys)) < len(keys):
        k = next(k for k, key in enumerate(keys) if keys.index(key) < k)
        raise CrowdDataError(
            f"annotators {show(names[keys.index(keys[k])])} and {show(names[k])} would share "
            f"the Doc.spans group {keys[k]!r} (spaCy names groups by strings): give them "
            "distinct names")
    # checked row by row: groupby leaves out a missing document id (None, NaN) silently
    unknown = ~frame["doc"].isin(list(text_of)).to_numpy()
    if unknown.any():
        r = int(np.argmax(unknown))
        raise CrowdDataError(f"{_row(frame, r)}: {_no_text(frame['doc'].iloc[r], text_of)}")
    groups = frame.groupby("doc", sort=False).indices if len(frame) else {}
    _check_in_text(frame, starts, ends, text_of)
    docs = []
    for d, text in text_of.items():
        try:
            doc = nlp.make_doc(text)
        except UnicodeEncodeError:   # spaCy stores strings as UTF-8
            cut = _SURROGATE.search(text)
            if cut is None:
                raise
            raise CrowdDataError(
                f"document {show(d)}: spaCy cannot hold its text: character {cut.start()} is "
                f"a lone surrogate ({cut.group()!r}: a text cut inside an emoji); JSON lines "
                "and tag lists hold it") from None
        made: dict = {str(ann): [] for ann in seen_by.get(d, [])}
        given: dict = {}     # id of each spaCy span -> the offsets it was made from
        for r in groups.get(d, []):
            s, e, lab = int(starts[r]), int(ends[r]), str(labels[r])
            span = doc.char_span(s, e, label=lab, alignment_mode=alignment)
            if span is None or len(span) == 0:
                # say where spaCy's tokens are and how to go on: a tagger's spans on
                # whitespace tokens ("Paris.") rarely meet spaCy's ("Paris", ".")
                wide = doc.char_span(s, e, alignment_mode="expand")
                near = "" if wide is None or not len(wide) else \
                    f", the tokens it overlaps span [{wide.start_char}, {wide.end_char})"
                hint = "" if alignment != "strict" else \
                    ("; alignment='expand' takes every token it overlaps, 'contract' only "
                     "those wholly inside it")
                raise CrowdDataError(
                    f"{_where(d, frame['annotator'].iloc[r] if has_ann else None)}: span "
                    f"[{s}, {e}) does not align with spaCy's tokens (alignment={alignment!r}; "
                    f"its text {show(text[s:e])}{near}){hint}")
            key = str(frame["annotator"].iloc[r]) if has_ann and not ents else spans_key
            made.setdefault(key, []).append(span)
            given[id(span)] = (s, e)     # made holds the span: its id stays its own
        if ents:
            chosen = sorted(made.get(spans_key, []), key=lambda sp: (sp.start, sp.end))
            for x, y in zip(chosen, chosen[1:]):
                if y.start < x.end:
                    # the spans as given (expand / contract moved their edges to spaCy's)
                    (xs, xe), (ys, ye) = given[id(x)], given[id(y)]
                    moved = (xs, xe, ys, ye) != (x.start_char, x.end_char, y.start_char,
                                                 y.end_char)
                    raise CrowdDataError(
                        f"document {show(d)}: spans [{xs}, {xe}) and [{ys}, {ye}) overlap"
                        + (f" (aligned to spaCy's tokens: [{x.start_char}, {x.end_char}) and "
                           f"[{y.start_char}, {y.end_char}))" if moved else "")
                        + "; Doc.ents cannot hold overlapping or nested spans (use Doc.spans)")
            doc.ents = chosen
        else:
            for key, group in made.items():
                doc.spans[key] = group
        docs.append(doc)
    return docs


def spacy_to_spans(docs: Sequence[Any], spans_key: Optional[str] = "sc", ents: bool = False,
                   doc_ids: Optional[Sequence] = None, return_seen: bool = False) -> tuple:
    """spaCy docs → ``(texts, spans)`` (``(texts, spans, seen)`` with ``return_seen``).

    spaCy keeps labels and group keys as strings: integer labels and annotators written by
    :func:`spans_to_spacy` come back as strings (``1`` as ``"1"``).

    Args:
        docs: a sequence of spaCy ``Doc`` objects.
        spans_key: the ``Doc.spans`` group to read (a document without it has no spans;
            no document with it, while the docs hold other groups or entities, is an
            error naming them); None: every group, its key as the ``annotator`` column
            (docs that hold entities and no group at all are an error: ``ents=True``).
        ents: read ``Doc.ents`` instead.
        doc_ids: the documents' ids (default ``0..len(docs)-1``).
        return_seen: with ``spans_key=None``, also return ``seen`` (frame ``doc,
            annotator``): every group of every document, empty ones included, for
            ``SequenceAnnotations.from_spans(texts, spans, seen=seen)`` (an annotator who
            saw a document and marked nothing is not one who did not see it).
    """
    if return_seen and (ents or spans_key is not None):
        raise ValueError("return_seen reads the annotators' groups: it needs spans_key=None "
                         "and ents=False")
    if all(hasattr(docs, a) for a in ("text", "spans", "ents")):   # iterating it gives Tokens
        raise TypeError("docs must be a list of spaCy Docs, got one Doc (one document: [doc])")
    docs = list(docs)
    odd = [k for k, doc in enumerate(docs) if not (hasattr(doc, "text") and hasattr(doc, "spans")
                                                   and hasattr(doc, "ents"))]
    if odd:
        raise TypeError(f"docs[{odd[0]}] is a {type(docs[odd[0]]).__name__}, not a spaCy Doc")
    ids = list(range(len(docs))) if doc_ids is None else ids_array(doc_ids).tolist()
    if len(ids) != len(docs):
        raise ValueError(f"{len(ids)} doc_ids for {len(docs)} docs")
    check_unique_ids(ids_array(ids), "document")   # a repeat would give one text two docs' spans
    if not ents and spans_key is not None and not any(spans_key in d.spans for d in docs):
        # a document without spans may lack the group; every document lacking it is a wrong key
        keys = sorted({k for d in docs for k, group in d.spans.items() if len(group)})
        n_ents = sum(len(d.ents) for d in docs)
        if keys or n_ents:
            raise CrowdDataError(
                f"no document has the span group {spans_key!r}; the docs hold "
                + (f"groups {keys} (spans_key=one of them, or None: every group)"
                   if keys else "") + (" and " if keys and n_ents else "")
                + (f"{n_ents} entities (ents=True)" if n_ents else ""))
    if not ents and spans_key is None and not any(len(d.spans) for d in docs):
        # every group of docs that hold none, only entities: an empty frame dropped them
        n_ents = sum(len(d.ents) for d in docs)
        if n_ents:
            raise CrowdDataError(f"spans_key=None reads the Doc.spans groups and no document "
                                 f"has one; the docs hold {n_ents} entities (ents=True)")
    texts, rows = {}, []
    for d, doc in zip(ids, docs):
        texts[d] = doc.text
        if ents:
            groups = {None: doc.ents}
        elif spans_key is None:
            groups = dict(doc.spans)
        else:
            groups = {None: doc.spans[spans_key] if spans_key in doc.spans else []}
        for key, group in groups.items():
            for sp in group:
                row = {"doc": d, "start": sp.start_char, "end": sp.end_char, "label": sp.label_}
                if spans_key is None and not ents:
                    row["annotator"] = key
                rows.append(row)
    cols = ["doc", "start", "end", "label"] + (["annotator"] if spans_key is None and not ents
                                                else [])
    if not return_seen:
        return texts, pd.DataFrame(rows, columns=cols)
    seen = [(d, key) for d, doc in zip(ids, docs) for key in doc.spans]
    return texts, pd.DataFrame(rows, columns=cols), pd.DataFrame(seen, columns=["doc",
                                                                             "annotator"])
