"""PICO (Nguyen et al., ACL 2017): "Participants" spans of medical abstracts by AMT workers.

Reads the project's JSON-lines layout of the PICO-data files (:func:`load_pico`):
``docs.jsonl`` (texts), ``crowd_{split}.jsonl`` (``{docid, spans: {worker: [[start, end],
...]}}``), the gold spans of half the ``acl17-test`` abstracts and the authors' own
aggregates. Every worker listed for an abstract saw it (unmarked tokens are O); unlisted
workers did not (missing).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from ..errors import CrowdDataError
from ..files import read_json_text
from ..sequences.annotations import SequenceAnnotations
from ..sequences.tokens import Tokenizer
from .fetch import locate
from .loaders import CrowdDataset

__all__ = ["load_pico", "PICO_SPLITS", "PICO_LABEL"]

PICO_SPLITS = ("train", "dev", "test", "acl17-test")
PICO_LABEL = "Participants"
_AUTHORS = ("HMMCrowd", "DawidSkene", "MajorityVote")


def _jsonl(path: Path, keys: Sequence[str] = ("docid",)) -> list:
    """The records of a JSON-lines file, each an object holding ``keys``; a file without
    any (empty, or cut short to nothing) is an error: every PICO file has records."""
    if not path.exists():
        raise CrowdDataError(f"no PICO file at {path}")
    records = []
    n = -1
    try:
        with path.open(encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not a record
            for n, line in enumerate(f):
                if line.strip():
                    rec = read_json_text(line, f"{path}, line {n + 1}", "the record")
                    if not isinstance(rec, dict) or any(k not in rec for k in keys):
                        raise CrowdDataError(f"{path}, line {n + 1}: a record is an object "
                                             f"with {list(keys)}")
                    records.append(rec)
    except UnicodeDecodeError as exc:   # a file cut inside a character ends in a partial one
        raise CrowdDataError(f"{path}, line {n + 2}: not UTF-8 text, perhaps a truncated file "
                             f"({exc}); fetch it again") from None
    if not records:
        raise CrowdDataError(f"{path} holds no record (an empty or truncated file; fetch it "
                             "again)")
    return records


def _by_docid(path: Path, key: Union[str, Sequence[str]]) -> dict:
    """``{docid: record[key]}`` of a JSON-lines file (``key`` a tuple of keys: the whole
    record); a repeated docid raises (a later record would silently replace the first)."""
    keys = (key,) if isinstance(key, str) else tuple(key)
    out = {}
    for rec in _jsonl(path, ("docid",) + keys):
        if rec["docid"] in out:
            raise CrowdDataError(f"{path}: docid {rec['docid']!r} has two records")
        out[rec["docid"]] = rec[key] if isinstance(key, str) else rec
    return out


def load_pico(root: Optional[Union[str, Path]] = None, splits: Sequence[str] = PICO_SPLITS,
              scheme: str = "IO", tokenizer: Tokenizer = None, *,
              download: bool = True) -> CrowdDataset:
    """The PICO crowd annotations of ``splits`` as one :class:`SequenceAnnotations`.

    Args:
        root: the ``pico`` folder or a data folder that contains it; ``None``:
            ``$CROWD_KERAS_DATA``, the cache, or a mirror (``$CROWD_KERAS_MIRROR``).
        splits: crowd splits to read, in order (documents keep that order).
        scheme, tokenizer: see :class:`SequenceAnnotations` (default: whitespace tokens, IO).
        download: ``False``: never download.

    Source: the PICO-data repository (github.com/yinfeiy/PICO-data; abstracts of the
    EBM-NLP corpus), rewritten to JSON lines with contents unchanged. The original serves
    another layout (one JSON file per split, one text file per abstract), so these files come
    from ``$CROWD_KERAS_DATA`` or a mirror of this layout, not from its URL. Licence: as
    distributed by the authors for research (see the repository). Cite: A. T. Nguyen,
    B. C. Wallace, J. J. Li, A. Nenkova, M. Lease, "Aggregating and predicting sequence labels
    from crowd annotations", ACL 2017.

    Returns:
        :class:`CrowdDataset` with ``sequences`` (span label ``"Participants"``), ``split``
        (D,) split name of each document, ``gold`` ``{docid: [[start, end], ...]}`` (the
        medical student's spans, even docids of acl17-test) and ``authors``
        ``{"HMMCrowd" | "DawidSkene" | "MajorityVote": {docid: spans}}``.

    Raises:
        CrowdDataError: a file that is missing, holds no record (empty, or truncated to
            nothing) or is cut inside a line or a character, naming the file (and line).
    """
    if isinstance(splits, str):  # else read letter by letter: "unknown split(s) ['d', 'e', 'v']"
        raise TypeError(f"splits is a sequence of split names; for one split write "
                        f"splits=({splits!r},)")
    if not len(splits):   # else an empty SequenceAnnotations, without a word
        raise ValueError(f"splits names no split; splits are {PICO_SPLITS}")
    unknown = [s for s in splits if s not in PICO_SPLITS]
    if unknown:
        raise ValueError(f"unknown PICO split(s) {unknown}; splits are {PICO_SPLITS}")
    if len(set(splits)) != len(splits):  # one document twice would misalign ``split``
        raise ValueError(f"PICO splits {list(splits)} name a split twice")
    files = ["docs.jsonl", *(f"crowd_{s}.jsonl" for s in splits), "gold_acl17_even.jsonl",
             "authors_aggregates_acl17.jsonl"]
    d = locate("pico", root, files=files, download=download)
    texts = _by_docid(d / "docs.jsonl", "text")
    spans, split, seen = {}, [], {}
    for name in splits:
        for rec in _jsonl(d / f"crowd_{name}.jsonl", ("docid", "spans")):
            if rec["docid"] not in texts:
                raise CrowdDataError(f"{d / f'crowd_{name}.jsonl'}: docid {rec['docid']!r} has "
                                     f"no text in {d / 'docs.jsonl'}")
            if rec["docid"] in spans:
                raise CrowdDataError(f"{d / f'crowd_{name}.jsonl'}: docid {rec['docid']!r} "
                                     f"has a second record (first in crowd_"
                                     f"{split[seen[rec['docid']]]}.jsonl)")
            seen[rec["docid"]] = len(split)
            spans[rec["docid"]] = rec["spans"]
            split.append(name)
    read = (f"crowd_{splits[0]}.jsonl" if len(splits) == 1
            else "crowd_{" + ",".join(splits) + "}.jsonl")
    try:   # its messages name the document and worker; this names the file(s) they came from
        seq = SequenceAnnotations.from_dict({k: texts[k] for k in spans}, spans,
                                            labels=[PICO_LABEL], default_label=PICO_LABEL,
                                            scheme=scheme, tokenizer=tokenizer)
    except CrowdDataError as exc:
        raise CrowdDataError(f"{d / read}: {exc}") from None
    gold = _by_docid(d / "gold_acl17_even.jsonl", "spans")
    authors_rows = _by_docid(d / "authors_aggregates_acl17.jsonl", _AUTHORS)
    authors = {k: {docid: r[k] for docid, r in authors_rows.items()} for k in _AUTHORS}
    return CrowdDataset(sequences=seq, split=np.asarray(split, dtype=object), gold=gold,
                        authors=authors)
