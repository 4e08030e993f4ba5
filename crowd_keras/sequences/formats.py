"""Span formats in and out: token tag lists (IO, BIO/IOB2, BILOU/BIOES), character-offset
JSON lines and spaCy ``Doc.spans`` / ``Doc.ents``.

The common currency is the one :class:`~.annotations.SequenceAnnotations.from_spans` reads
and :meth:`~.base.SequenceLabelModel.predict_spans` writes: the texts (``{doc_id: text}``)
and a frame of character spans with columns ``doc, start, end, label`` (end exclusive) and,
for a crowd, ``annotator``. Every reader returns ``(texts, spans)``; every writer takes them.

* **Token tags** (Hugging Face token classification: ``{"tokens": [...], "ner_tags":
  [...]}``): :func:`spans_to_token_tags` / :func:`token_tags_to_spans`. A tag list holds one
  tag per token, so it cannot hold two spans that share a token (overlapping or nested):
  writing them raises a :class:`~crowd_keras.CrowdDataError` naming the document (and
  annotator) and both spans' offsets. Reading is lenient as CoNLL's ``conlleval`` is: an
  ``I-x`` (BILOU: ``I-x``/``L-x``) that does not continue a span of ``x`` starts one.
* **Character offsets, JSON lines** (:func:`write_spans_jsonl` / :func:`read_spans_jsonl`):
  one document per line, ``{"doc", "text", "spans": [{"start", "end", "label"[,
  "annotator"]}]}``; holds anything, overlaps and nesting included.
* **spaCy** (optional: ``pip install crowd-keras[spacy]``; imported when called):
  :func:`spans_to_spacy` / :func:`spacy_to_spans`. ``Doc.spans`` groups hold overlapping
  spans; ``Doc.ents`` cannot (an error names the document and offsets).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, List, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..codes import show
from ..errors import CrowdDataError
from ..files import atomic_write_text
from .spans import span_token_ranges
from .tokens import Tokenizer, token_strings, tokenize

__all__ = ["TAG_SCHEMES", "spans_to_token_tags", "token_tags_to_spans", "write_spans_jsonl",
           "read_spans_jsonl", "spans_to_spacy", "spacy_to_spans"]

#: Tag schemes of token tag lists (``IOB2`` is ``BIO``; ``BIOES`` is ``BILOU`` with E, S).
TAG_SCHEMES = ("IO", "BIO", "IOB2", "BILOU", "BIOES")
_PREFIXES = {"IO": "OI", "BIO": "OBI", "BILOU": "OBILU"}


def _scheme(scheme: str) -> tuple[str, bool]:
    s = str(scheme).upper()
    if s not in TAG_SCHEMES:
        raise ValueError(f"scheme must be one of {TAG_SCHEMES}, got {scheme!r}")
    return {"IOB2": "BIO", "BIOES": "BILOU"}.get(s, s), s == "BIOES"


def _texts(texts: Any) -> dict:
    if isinstance(texts, pd.Series):
        return dict(texts.items())
    if isinstance(texts, Mapping):
        return dict(texts)
    return dict(enumerate(texts))


def _frame(spans: Any) -> pd.DataFrame:
    if not isinstance(spans, pd.DataFrame):
        raise CrowdDataError(f"spans must be a DataFrame with columns doc, start, end[, label, "
                             f"annotator], got {type(spans).__name__}")
    missing = [c for c in ("doc", "start", "end") if c not in spans.columns]
    if missing:
        raise CrowdDataError(f"spans frame has no column(s) {missing}; columns are "
                             f"{list(spans.columns)}")
    return spans.reset_index(drop=True)


def _where(doc: Any, annotator: Any = None) -> str:
    return f"document {show(doc)}" + ("" if annotator is None else
                                      f", annotator {show(annotator)}")


# ---------------------------------------------------------------------------- token tags
def spans_to_token_tags(texts: Any, spans: pd.DataFrame, scheme: str = "BIO",
                        tokenizer: Tokenizer = None,
                        default_label: str = "span") -> List[dict]:
    """Character spans → one tag list per document (per document and annotator when
    ``spans`` has an ``annotator`` column).

    Args:
        texts: ``{doc_id: text}`` (or a list: ids ``0..D-1``, or a Series).
        spans: frame ``doc, start, end[, label][, annotator]``.
        scheme: ``"IO"``, ``"BIO"``/``"IOB2"``, ``"BILOU"`` or ``"BIOES"``.
        tokenizer: see :func:`.tokens.tokenize` (default: runs of non-space characters).
        default_label: the label of spans without a ``label`` column.

    Returns:
        list of ``{"doc", ["annotator",] "text", "tokens", "offsets", "tags"}`` (offsets
        ``[start, end]`` per token: :func:`token_tags_to_spans` reads them back exactly). Without an annotator column every document has a row
        (all ``O`` without spans); with one, every (document, annotator) pair that has spans.

    Raises:
        CrowdDataError: a span of an unknown document, a span that covers no token, or two
            spans of one row that share a token (tag lists cannot hold overlapping or nested
            spans), naming the document, annotator and offsets.
    """
    base, bioes = _scheme(scheme)
    text_of = _texts(texts)
    ids = list(text_of)
    frame = _frame(spans)
    doc_code = pd.Index(ids).get_indexer(frame["doc"])
    if (doc_code < 0).any():
        r = int(np.argmax(doc_code < 0))
        raise CrowdDataError(f"span row {r}: document {show(frame['doc'].iloc[r])} is not "
                             f"among the {len(ids)} texts")
    tokens = tokenize([text_of[d] for d in ids], tokenizer)
    start = frame["start"].to_numpy(np.int64)
    end = frame["end"].to_numpy(np.int64)
    a, b = span_token_ranges(tokens, doc_code, start, end)
    label = (frame["label"].astype(object).to_numpy() if "label" in frame.columns
             else np.full(len(frame), default_label, dtype=object))
    has_ann = "annotator" in frame.columns
    annotator = frame["annotator"].to_numpy(object) if has_ann else np.zeros(len(frame), object)
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
    strings = token_strings([text_of[d] for d in ids], tokens)
    tags = np.full(tokens.n_tokens, "O", dtype=object)
    rows: List[dict] = []
    per_row = {uniq[c]: np.flatnonzero(group == c) for c in range(len(uniq))}
    row_keys = (sorted(per_row, key=lambda k: (k[0], str(k[1]))) if has_ann
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
        out = {"doc": ids[d]}
        if has_ann:
            out["annotator"] = ann
        out.update(text=text_of[ids[d]], tokens=strings[lo:hi].tolist(),
                   offsets=np.stack([tokens.start[lo:hi], tokens.end[lo:hi]], 1).tolist(),
                   tags=row_tags.tolist())
        rows.append(out)
    return rows


def token_tags_to_spans(rows: Iterable[Mapping], scheme: str = "BIO",
                        label_names: Optional[Sequence[str]] = None, tags_key: str = "tags",
                        tokens_key: str = "tokens", doc_key: str = "doc",
                        annotator_key: str = "annotator") -> tuple[dict, pd.DataFrame]:
    """Tag lists → ``(texts, spans)``.

    Args:
        rows: dicts with ``tags_key`` (tag strings, or integer ids with ``label_names``, the
            Hugging Face ``ClassLabel`` names) and either ``"text"`` and ``"offsets"``
            (``[start, end]`` per token) or ``tokens_key`` (the text is then the tokens joined
            by single spaces). Optional ``doc_key`` (default: the row number) and
            ``annotator_key`` (rows of one document by several annotators; their texts must
            agree).
        scheme: of the tags (see :data:`TAG_SCHEMES`).

    Returns:
        ``({doc: text}, frame doc, start, end, label[, annotator])``.

    Raises:
        CrowdDataError: a tag outside the scheme, a tag id outside ``label_names``, a length
            mismatch, a row without tokens or offsets, or two rows of one document with
            different texts, naming the row and position.
    """
    base, _ = _scheme(scheme)
    allowed = _PREFIXES[base]
    texts: dict = {}
    parts = []
    for i, row in enumerate(rows):
        if tags_key not in row:
            raise CrowdDataError(f"row {i}: no {tags_key!r} entry (keys: {sorted(row)})")
        tags = list(row[tags_key])
        if label_names is not None:
            try:
                tags = [label_names[int(t)] if not isinstance(t, str) else t for t in tags]
            except IndexError:
                bad = next(t for t in tags if not isinstance(t, str) and
                           not 0 <= int(t) < len(label_names))
                raise CrowdDataError(f"row {i}: tag id {bad} is not among the "
                                     f"{len(label_names)} label names") from None
        if "offsets" in row and "text" in row:
            text, offsets = str(row["text"]), np.asarray(row["offsets"], np.int64).reshape(-1, 2)
        elif tokens_key in row:
            toks = [str(t) for t in row[tokens_key]]
            lens = np.fromiter((len(t) for t in toks), np.int64, len(toks))
            starts = np.concatenate([[0], np.cumsum(lens + 1)[:-1]]).astype(np.int64)
            text, offsets = " ".join(toks), np.stack([starts, starts + lens], 1)
        else:
            raise CrowdDataError(f"row {i}: needs 'text' and 'offsets', or {tokens_key!r}")
        if len(offsets) != len(tags):
            raise CrowdDataError(f"row {i}: {len(tags)} tags for {len(offsets)} tokens")
        doc = row.get(doc_key, i)
        if doc in texts and texts[doc] != text:
            raise CrowdDataError(f"row {i}: document {show(doc)} has another text in an "
                                 "earlier row")
        texts[doc] = text
        parts.append((i, doc, row.get(annotator_key), tags, offsets))
    cols = ["doc", "start", "end", "label"]
    has_ann = any(p[2] is not None for p in parts)
    if not parts:
        return texts, pd.DataFrame(columns=cols + (["annotator"] if has_ann else []))
    lens = np.array([len(p[3]) for p in parts])
    flat = pd.Series([t for p in parts for t in p[3]], dtype=object).astype(str)
    row_of = np.repeat(np.arange(len(parts)), lens)
    prefix = flat.str[0].str.upper().to_numpy()
    if base == "BILOU":
        prefix = np.where(prefix == "E", "L", np.where(prefix == "S", "U", prefix))
    label = flat.str[2:].to_numpy(object)
    bad = ~np.isin(prefix, list(allowed)) | ((prefix != "O") & ~flat.str[1:2].eq("-")
                                               .to_numpy()) | ((prefix == "O") & (flat.str.len()
                                                                                 .to_numpy() > 1))
    if bad.any():
        k = int(np.argmax(bad))
        pos = k - int(np.concatenate([[0], np.cumsum(lens)])[row_of[k]])
        raise CrowdDataError(f"row {parts[row_of[k]][0]}, token {pos}: tag {flat.iloc[k]!r} is "
                             f"not a {scheme} tag (prefixes {', '.join(allowed)})")
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
    out = pd.DataFrame({"doc": [parts[r][1] for r in row_of[bi]], "start": offsets[bi, 0],
                        "end": offsets[li, 1], "label": label[bi]})
    if has_ann:
        out["annotator"] = [parts[r][2] for r in row_of[bi]]
    return texts, out


# ---------------------------------------------------------------------------- JSON lines
def write_spans_jsonl(path: Any, texts: Any, spans: pd.DataFrame) -> Path:
    """One line per document: ``{"doc", "text", "spans": [{"start", "end", "label"[,
    "annotator"]}, ...]}`` (atomic write). Documents without spans get ``"spans": []``."""
    text_of = _texts(texts)
    frame = _frame(spans)
    unknown = ~frame["doc"].isin(list(text_of))
    if unknown.any():
        r = int(np.argmax(unknown.to_numpy()))
        raise CrowdDataError(f"span row {r}: document {show(frame['doc'].iloc[r])} has no text")
    keep = [c for c in ("start", "end", "label", "annotator") if c in frame.columns]
    records = frame[keep].astype(object).to_dict("records")
    for rec in records:
        rec["start"], rec["end"] = int(rec["start"]), int(rec["end"])
    by_doc: dict = {d: [] for d in text_of}
    for d, rec in zip(frame["doc"].tolist(), records):
        by_doc[d].append(rec)
    lines = [json.dumps({"doc": d, "text": text_of[d], "spans": by_doc[d]}, ensure_ascii=False)
             for d in text_of]
    return atomic_write_text(path, "".join(line + "\n" for line in lines))


def read_spans_jsonl(path: Any) -> tuple[dict, pd.DataFrame]:
    """``(texts, spans)`` from :func:`write_spans_jsonl`'s layout (offsets checked against
    each text; errors name the file, line and span)."""
    path = Path(path)
    texts: dict = {}
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise CrowdDataError(f"{where}: not JSON ({err.msg})") from None
            if not isinstance(rec, dict) or "text" not in rec or "doc" not in rec:
                raise CrowdDataError(f"{where}: needs 'doc' and 'text'")
            doc, text = rec["doc"], rec["text"]
            if doc in texts:
                raise CrowdDataError(f"{where}: document {show(doc)} appears twice")
            texts[doc] = text
            for k, s in enumerate(rec.get("spans", [])):
                try:
                    start, end = int(s["start"]), int(s["end"])
                except (KeyError, TypeError, ValueError):
                    raise CrowdDataError(f"{where}: span {k} needs integer 'start' and "
                                         f"'end', got {show(s)}") from None
                if not 0 <= start <= end <= len(text):
                    raise CrowdDataError(f"{where}: span {k} [{start}, {end}) is outside the "
                                         f"text of document {show(doc)} ({len(text)} "
                                         "characters)")
                rows.append({"doc": doc, "start": start, "end": end,
                             **{c: s[c] for c in ("label", "annotator") if c in s}})
    cols = ["doc", "start", "end", "label"] + (["annotator"] if any("annotator" in r for r in rows)
                                                else [])
    return texts, pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------------------- spaCy
def _spacy() -> Any:
    try:
        import spacy
    except ImportError:
        raise ImportError("the spaCy converters need spaCy: pip install crowd-keras[spacy] "
                          "(a blank pipeline is enough: no model download)") from None
    return spacy


def spans_to_spacy(texts: Any, spans: pd.DataFrame, nlp: Any = None, spans_key: str = "sc",
                   ents: bool = False, alignment: str = "strict") -> List[Any]:
    """Character spans → one spaCy ``Doc`` per text (in the order of ``texts``).

    Args:
        nlp: a spaCy pipeline whose tokenizer makes the docs (default ``spacy.blank("en")``).
        spans_key: the ``Doc.spans`` group; with an ``annotator`` column each annotator's
            spans go to a group of that name instead.
        ents: write ``Doc.ents`` (non-overlapping) instead of ``Doc.spans``.
        alignment: spaCy's ``char_span`` mode: ``"strict"`` (a span whose edges are not
            token edges is an error), ``"expand"`` or ``"contract"``.

    Raises:
        CrowdDataError: a span that does not align with the tokens (``strict``), or two
            spans that share a token with ``ents=True``, naming the document and offsets.
    """
    spacy = _spacy()
    nlp = spacy.blank("en") if nlp is None else nlp
    text_of = _texts(texts)
    frame = _frame(spans)
    has_ann = "annotator" in frame.columns
    groups = frame.groupby("doc", sort=False).indices if len(frame) else {}
    unknown = set(groups) - set(text_of)
    if unknown:
        raise CrowdDataError(f"spans of document {show(sorted(unknown, key=str)[0])}, which has "
                             "no text")
    docs = []
    for d, text in text_of.items():
        doc = nlp.make_doc(text)
        made: dict = {}
        for r in groups.get(d, []):
            s, e = int(frame["start"].iloc[r]), int(frame["end"].iloc[r])
            lab = str(frame["label"].iloc[r]) if "label" in frame.columns else "span"
            span = doc.char_span(s, e, label=lab, alignment_mode=alignment)
            if span is None or len(span) == 0:
                raise CrowdDataError(f"document {show(d)}: span [{s}, {e}) does not align with "
                                     f"spaCy's tokens (alignment={alignment!r})")
            key = str(frame["annotator"].iloc[r]) if has_ann and not ents else spans_key
            made.setdefault(key, []).append(span)
        if ents:
            chosen = sorted(made.get(spans_key, []), key=lambda sp: (sp.start, sp.end))
            for x, y in zip(chosen, chosen[1:]):
                if y.start < x.end:
                    raise CrowdDataError(
                        f"document {show(d)}: spans [{x.start_char}, {x.end_char}) and "
                        f"[{y.start_char}, {y.end_char}) overlap; Doc.ents cannot hold "
                        "overlapping or nested spans (use Doc.spans)")
            doc.ents = chosen
        else:
            for key, group in made.items():
                doc.spans[key] = group
        docs.append(doc)
    return docs


def spacy_to_spans(docs: Sequence[Any], spans_key: Optional[str] = "sc", ents: bool = False,
                   doc_ids: Optional[Sequence] = None) -> tuple[dict, pd.DataFrame]:
    """spaCy docs → ``(texts, spans)``.

    Args:
        spans_key: the ``Doc.spans`` group to read; None: every group, its key as the
            ``annotator`` column.
        ents: read ``Doc.ents`` instead.
        doc_ids: the documents' ids (default ``0..len(docs)-1``).
    """
    docs = list(docs)
    ids = list(range(len(docs))) if doc_ids is None else list(doc_ids)
    if len(ids) != len(docs):
        raise ValueError(f"{len(ids)} doc_ids for {len(docs)} docs")
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
    return texts, pd.DataFrame(rows, columns=cols)
