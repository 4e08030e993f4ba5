"""One call for every agreement table: :func:`agreement_report`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..arguments import check_count
from ..sequences.annotations import SequenceAnnotations
from ._counts import as_annotations, check_agreement_input
from .alpha import _check_level, coincidence_matrix, per_class_alpha
from .bootstrap import bootstrap_ci
from .alpha import krippendorff_alpha
from .kappa import (_kappa_table, annotator_agreement, cohen_kappa_matrix, fleiss_kappa,
                    percent_agreement)
from .spans import span_agreement, span_pairs, span_pairwise_f1

__all__ = ["AgreementReport", "agreement_report", "item_counts", "plain", "records", "nested"]

_ESTIMATES = {"alpha": krippendorff_alpha, "fleiss_kappa": lambda ann, level: fleiss_kappa(ann),
              "percent_agreement": lambda ann, level: percent_agreement(ann)}


def item_counts(annotations: Any) -> dict:
    """How many items the statistics use: ``n_items``, ``n_items_pairable`` (two or more
    annotations), ``n_items_single`` (one annotation: left out by alpha and kappa),
    ``n_items_unannotated``, ``n_annotations``, ``n_annotations_pairable``,
    ``n_annotators`` (with at least one annotation)."""
    ann = as_annotations(annotations)
    m = ann.annotations_per_item()
    return {"n_items": int(ann.n_items), "n_items_pairable": int((m >= 2).sum()),
            "n_items_single": int((m == 1).sum()), "n_items_unannotated": int((m == 0).sum()),
            "n_annotations": int(ann.n_annotations),
            "n_annotations_pairable": int(m[m >= 2].sum()),
            "n_annotators": int((ann.annotations_per_annotator() > 0).sum())}


def plain(value: Any) -> Any:
    """A JSON-ready Python value: numpy scalars unwrapped, NaN and inf as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def nested(array: Any) -> list:
    """An array as nested lists of plain values (NaN and inf as None)."""
    a = np.asarray(array)
    if a.ndim == 0:
        return plain(a[()])
    return [nested(x) for x in a] if a.ndim > 1 else [plain(v) for v in a.tolist()]


def records(frame: Optional[pd.DataFrame]) -> Optional[list]:
    """A frame as a list of dicts of plain values (full float precision, NaN as None)."""
    if frame is None:
        return None
    if not frame.shape[1]:
        return [{} for _ in range(len(frame))]
    # column by column (a report's pairwise table has a row per overlapping pair of
    # annotators: a call of plain() per cell took most of writing report.json)
    columns = [_plain_column(frame.iloc[:, j]) for j in range(frame.shape[1])]
    names = [str(c) for c in frame.columns]
    return [dict(zip(names, row)) for row in zip(*columns)]


def _plain_column(column: pd.Series) -> list:
    """``[plain(v) for v in column]``: numpy numbers as Python ones, NaN and inf as None."""
    values = column.to_numpy()
    # numpy dtypes only: a nullable Int64 column converts to floats (1 became 1.0)
    if isinstance(column.dtype, np.dtype) and values.dtype.kind in "biuf":
        out = values.tolist()
        if values.dtype.kind == "f":
            for i in np.flatnonzero(~np.isfinite(values)).tolist():
                out[i] = None
        return out
    if not column.hasnans and pd.api.types.infer_dtype(column, skipna=False) == "string":
        return column.tolist()            # Python strings already
    return [plain(v) for v in column]


def _seed_value(seed: Any) -> Any:
    """The seed for JSON: an int or None as itself, anything else ``default_rng`` takes (a
    ``Generator``, a ``SeedSequence``, a list of ints) as its text."""
    if seed is None or isinstance(seed, Integral):
        return plain(seed)
    return str(seed)


@dataclass(frozen=True, eq=False)
class AgreementReport:
    """The tables of :func:`agreement_report`.

    Attributes:
        summary: one row per statistic: ``statistic, value, low, high`` (the bootstrap
            interval; NaN where none is computed, or with fewer than two items (documents) to
            resample).
        counts: :func:`item_counts` (items left out because they have one annotation, ...).
        pairwise: :func:`~.kappa.pairwise_kappas` (overlapping pairs only).
        kappa_matrix: :func:`~.kappa.cohen_kappa_matrix`, or None above ``max_matrix``
            annotators.
        per_class: :func:`~.alpha.per_class_alpha`.
        per_annotator: :func:`~.kappa.annotator_agreement`.
        coincidences: the (K, K) coincidence matrix.
        spans: for a ``SequenceAnnotations``, :func:`~.spans.span_agreement`; else None.
        span_pairs: for a ``SequenceAnnotations``, :func:`~.spans.span_pairwise_f1`
            (overlap matching); else None.
        level: the level of Krippendorff's alpha.
        confidence: the intervals' coverage.
        n_bootstrap: the bootstrap replicates (0: no intervals).
        seed: the bootstrap's seed.
    """

    summary: pd.DataFrame
    counts: dict
    pairwise: pd.DataFrame = field(repr=False)
    kappa_matrix: Optional[pd.DataFrame] = field(repr=False)
    per_class: pd.DataFrame = field(repr=False)
    per_annotator: pd.DataFrame = field(repr=False)
    coincidences: pd.DataFrame = field(repr=False)
    spans: Optional[pd.DataFrame] = field(repr=False, default=None)
    span_pairs: Optional[pd.DataFrame] = field(repr=False, default=None)
    level: str = "nominal"
    confidence: float = 0.95
    n_bootstrap: int = 0
    seed: Any = 0

    def value(self, statistic: str) -> float:
        """The value of one summary statistic, e.g. ``report.value("krippendorff_alpha")``."""
        row = self.summary.loc[self.summary["statistic"] == statistic, "value"]
        if not len(row):
            raise KeyError(f"no statistic {statistic!r}; the summary has "
                           f"{self.summary['statistic'].tolist()}")
        return float(row.iloc[0])

    def to_dict(self) -> dict:
        """Everything as JSON-ready Python values (NaN as None)."""
        matrix = None
        if self.kappa_matrix is not None:
            matrix = {"annotators": [plain(a) for a in self.kappa_matrix.index],
                      "kappa": [[plain(v) for v in row] for row in self.kappa_matrix.to_numpy()]}
        return {"level": self.level, "confidence": self.confidence,
                "n_bootstrap": self.n_bootstrap, "seed": _seed_value(self.seed),
                "counts": dict(self.counts), "summary": records(self.summary),
                "per_class": records(self.per_class), "per_annotator": records(self.per_annotator),
                "pairwise": records(self.pairwise), "kappa_matrix": matrix,
                "coincidences": {"classes": [plain(c) for c in self.coincidences.index],
                                 "values": nested(self.coincidences.to_numpy())},
                "spans": records(self.spans), "span_pairs": records(self.span_pairs)}


def agreement_report(annotations: Any, *, level: str = "nominal", n_bootstrap: int = 1000,
                     confidence: float = 0.95, seed: Any = 0,
                     max_matrix: int = 200) -> AgreementReport:
    """All agreement tables of ``annotations`` at once.

    Args:
        annotations: :class:`~crowd_keras.Annotations`, or a ``SequenceAnnotations`` (token
            level statistics plus the span tables).
        level: the level of Krippendorff's alpha (``"nominal"``, ``"ordinal"``, ``"interval"``,
            ``"ratio"``).
        n_bootstrap: bootstrap replicates over items (documents for a
            ``SequenceAnnotations``) for the intervals of alpha, Fleiss' kappa and percent
            agreement (0: no intervals; NaN bounds with fewer than two items or
            documents).
        confidence: the intervals' coverage, in (0, 1), e.g. 0.95.
        seed: the seed of the bootstrap draws (see :func:`bootstrap_ci`).
        max_matrix: largest number of annotators for which the dense kappa matrix is built.

    Returns:
        :class:`AgreementReport`. The summary's statistics: ``krippendorff_alpha``,
        ``fleiss_kappa``, ``percent_agreement``, ``mean_pairwise_kappa`` (Cohen's kappas
        averaged over pairs, weighted by shared items), ``n_items_single`` (items left out);
        for spans also ``span_f1_exact``, ``span_f1_overlap``, ``span_f1_token``.
    """
    level = _check_level(level)
    n_bootstrap = check_count(n_bootstrap, "n_bootstrap", 0)     # 0: no intervals
    if not 0 < confidence < 1:       # checked without intervals too: the report records it
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    max_matrix = check_count(max_matrix, "max_matrix", 0)
    ann = as_annotations(annotations)
    check_agreement_input(ann)
    rows = []
    for name, stat in (("krippendorff_alpha", "alpha"), ("fleiss_kappa", "fleiss_kappa"),
                       ("percent_agreement", "percent_agreement")):
        if n_bootstrap:
            value, low, high = bootstrap_ci(annotations, stat, level=level,
                                            n_bootstrap=n_bootstrap,
                                            confidence=confidence, seed=seed)
        else:
            value, low, high = _ESTIMATES[stat](ann, level), np.nan, np.nan
        rows.append((name, value, low, high))
    kappa_table = _kappa_table(ann)
    pairs = kappa_table[0]
    ok = np.isfinite(pairs["kappa"].to_numpy())
    weights = pairs["n_items"].to_numpy(np.float64)[ok]
    mean_kappa = (float(np.average(pairs["kappa"].to_numpy()[ok], weights=weights))
                  if ok.any() else float("nan"))
    rows.append(("mean_pairwise_kappa", mean_kappa, np.nan, np.nan))
    counts = item_counts(ann)
    rows.append(("n_items_single", float(counts["n_items_single"]), np.nan, np.nan))
    spans = span_f1 = None
    if isinstance(annotations, SequenceAnnotations):
        raw = span_pairs(annotations)
        spans = span_agreement(annotations, raw)
        span_f1 = span_pairwise_f1(annotations, "overlap", raw)
        every = spans.iloc[-1]
        rows += [(f"span_f1_{m}", float(every[f"f1_{m}"]), np.nan, np.nan)
                 for m in ("exact", "overlap", "token")]
    classes = pd.Index([plain(c) for c in ann.classes], name="class")
    return AgreementReport(
        summary=pd.DataFrame(rows, columns=["statistic", "value", "low", "high"]),
        counts=counts, pairwise=pairs,
        kappa_matrix=(cohen_kappa_matrix(ann, kappa_table) if ann.n_annotators <= max_matrix
                      else None),
        per_class=per_class_alpha(ann), per_annotator=annotator_agreement(ann, kappa_table),
        coincidences=pd.DataFrame(coincidence_matrix(ann), index=classes,
                                  columns=classes.rename(None)),
        spans=spans, span_pairs=span_f1, level=level, confidence=confidence,
        n_bootstrap=int(n_bootstrap), seed=seed)
