"""Bootstrap confidence intervals over items for alpha, Fleiss' kappa and percent agreement.

Items (those with at least two annotations: the others contribute nothing) are resampled with
replacement; a replicate is a vector of item multiplicities ``c`` (n,), and every statistic
here is a function of sums ``Σ_i c_i s_i`` of per-item parts (the item's coincidences for
alpha, :func:`.kappa.fleiss_parts` for kappa), so a block of replicates is one product of a
(replicates × items) count matrix with the (items × parts) matrix: no loop over items.
The interval is the percentile interval (Efron & Tibshirani 1993, §13.3).

For a ``SequenceAnnotations`` the items are tokens, but tokens of one document are not
independent draws: the documents are resampled (a cluster bootstrap, Davison & Hinkley 1997,
§3.8), each with the summed parts of its tokens, so the statistic's sums are those of the
tokens and only the unit of resampling changes.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..arguments import check_count
from ..sequences.annotations import SequenceAnnotations
from ._counts import as_annotations, class_values
from .alpha import (NUMERIC_LEVELS, _check_level, alpha_from_coincidences, item_coincidences,
                    krippendorff_alpha)
from .kappa import (fleiss_kappa, fleiss_parts, item_agreement, kappa_from_sums,
                    percent_agreement)

__all__ = ["bootstrap_ci", "STATISTICS"]

STATISTICS = ("alpha", "fleiss_kappa", "percent_agreement")
_BLOCK = 64
_BLOCK_DRAWS = 1 << 23     # draws per block (replicates × items): bounds the block's memory


def _parts(ann: Any, statistic: str, level: str) -> tuple[sp.csr_matrix, Any]:
    """(items × parts) CSR and a function of the summed parts (replicates × parts) giving the
    statistic per replicate."""
    if statistic == "alpha":
        parts, _ = item_coincidences(ann)
        k = ann.n_classes
        values = class_values(ann, level) if level in NUMERIC_LEVELS else None
        return parts, lambda s: alpha_from_coincidences(s.reshape(-1, k, k), level, values)
    if statistic == "fleiss_kappa":
        a, m, counts = fleiss_parts(ann)
        parts = sp.hstack([sp.csr_matrix(np.stack([a, m, np.ones_like(m)], 1)),
                           sp.csr_matrix(counts)]).tocsr()
        return parts, lambda s: kappa_from_sums(s[:, 0], s[:, 1], s[:, 2], s[:, 3:])
    share = item_agreement(ann)
    share = share[np.isfinite(share)]
    parts = sp.csr_matrix(np.stack([share, np.ones_like(share)], 1))
    return parts, lambda s: s[:, 0] / s[:, 1]


def _per_document(parts: sp.csr_matrix, sequences: SequenceAnnotations,
                  ann: Any) -> sp.csr_matrix:
    """(documents × parts): the rows of ``parts`` (one per pairable token, in token order)
    summed per document, for documents with a pairable token."""
    tokens = np.flatnonzero(ann.annotations_per_item() >= 2)
    _, doc = np.unique(sequences.tokens.doc[tokens], return_inverse=True)
    group = sp.csr_matrix((np.ones(len(doc)), (doc, np.arange(len(doc)))),
                          shape=(int(doc.max()) + 1 if len(doc) else 0, len(doc)))
    return (group @ parts).tocsr()


def bootstrap_ci(annotations: Any, statistic: str = "alpha", *, level: str = "nominal",
                 n_bootstrap: int = 1000, confidence: float = 0.95,
                 seed: Any = 0) -> tuple[float, float, float]:
    """Estimate and percentile bootstrap interval over items.

    Args:
        annotations: :class:`~crowd_keras.Annotations` (items resampled) or
            ``SequenceAnnotations`` (token statistics, documents resampled).
        statistic: ``"alpha"`` (Krippendorff's, at ``level``), ``"fleiss_kappa"`` or
            ``"percent_agreement"``.
        level: the measurement level of ``"alpha"``: ``"nominal"``, ``"ordinal"``,
            ``"interval"`` or ``"ratio"`` (:data:`~crowd_keras.agreement.LEVELS`).
        n_bootstrap: replicates.
        confidence: the interval's coverage, in (0, 1), e.g. 0.95.
        seed: for ``numpy.random.default_rng`` (the same seed gives the same interval).

    Returns:
        ``(estimate, low, high)``; replicates where the statistic is undefined (NaN) are left
        out of the quantiles. With fewer than two units to resample (items, or documents for
        a ``SequenceAnnotations``) ``low`` and ``high`` are NaN: every replicate would be the
        estimate, a zero-width interval that no sampling variability was measured for.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n_bootstrap = check_count(n_bootstrap, "n_bootstrap", 1)
    try:
        if isinstance(seed, (bool, np.bool_)):   # numpy takes True for the seed 1
            raise TypeError
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError):
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}") from None
    level = _check_level(level)
    ann = as_annotations(annotations)
    parts, stat = _parts(ann, statistic, level)
    if isinstance(annotations, SequenceAnnotations):
        parts = _per_document(parts, annotations, ann)
    n = parts.shape[0]
    estimate = {"alpha": lambda: krippendorff_alpha(ann, level),
                "fleiss_kappa": lambda: fleiss_kappa(ann),
                "percent_agreement": lambda: percent_agreement(ann)}[statistic]()
    if n < 2:      # one unit: every resample is the sample itself
        return estimate, float("nan"), float("nan")
    reps = []
    block = max(1, min(_BLOCK, _BLOCK_DRAWS // max(n, 1)))
    for start in range(0, int(n_bootstrap), block):      # blocks of replicates bound memory
        b = min(block, int(n_bootstrap) - start)
        draws = rng.integers(0, n, size=(b, n))
        mult = np.bincount((draws + (np.arange(b) * n)[:, None]).ravel(),
                           minlength=b * n).reshape(b, n).astype(np.float64)
        reps.append(stat(np.asarray((parts.T @ mult.T).T)))
    reps = np.concatenate(reps)
    reps = reps[np.isfinite(reps)]
    if not len(reps):
        return estimate, float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(reps, [tail, 1.0 - tail])
    return estimate, float(low), float(high)
