"""Krippendorff's alpha from the coincidence matrix (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability", eqs. for o_ck, n_c, D_o, D_e).

For item ``i`` with ``m_i >= 2`` annotations and class counts ``n_i`` (K,), the coincidence
matrix is ``o = Σ_i (n_i n_iᵀ - diag(n_i)) / (m_i - 1)`` (K × K), one sparse product
``Cᵀ diag(w) C`` with ``w_i = 1 / (m_i - 1)``; ``n_c = Σ_k o_ck`` and ``n = Σ_c n_c``.
``alpha = 1 - (n - 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck``. Items with one annotation pair with
nothing: they are left out (and counted by :func:`crowd_keras.agreement.item_counts`).
Missing values are simply absent annotations.

Distances δ²: nominal ``[c ≠ k]``; ordinal (classes in code order)
``(Σ_{g=c..k} n_g - (n_c + n_k)/2)²``; interval ``(v_c - v_k)²`` and ratio
``((v_c - v_k) / (v_c + v_k))²`` (0 where ``v_c = v_k = 0``) on the numeric class values.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._counts import (as_annotations, check_agreement_input, class_values, dense_counts_fit,
                      label_count_matrix)

__all__ = ["LEVELS", "NUMERIC_LEVELS", "krippendorff_alpha", "coincidence_matrix",
           "per_class_alpha", "alpha_from_coincidences", "item_coincidences"]

LEVELS = ("nominal", "ordinal", "interval", "ratio")
#: The levels whose distances are on the classes' numeric values.
NUMERIC_LEVELS = ("interval", "ratio")


def _check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    return level


def coincidence_matrix(annotations: Any) -> np.ndarray:
    """(K, K) float64 coincidence matrix ``o`` of the annotations (see the module docstring)."""
    ann = as_annotations(annotations)
    m = check_agreement_input(ann)
    w = np.divide(1.0, m - 1.0, out=np.zeros(len(m)), where=m >= 2)
    if dense_counts_fit(ann):          # items × K dense: one small matrix product
        counts = ann.label_counts()
        weighted = counts * w[:, None]
        o = counts.T @ weighted
        o[np.diag_indices_from(o)] -= weighted.sum(axis=0)
        return o
    counts = label_count_matrix(ann)
    weighted = sp.diags(w) @ counts
    o = (counts.T @ weighted).toarray()
    o[np.diag_indices_from(o)] -= np.asarray(weighted.sum(axis=0)).ravel()
    return o


def _distances(n_v: np.ndarray, level: str, values: Optional[np.ndarray]) -> np.ndarray:
    """δ² (..., K, K) for marginals ``n_v`` (..., K) (ordinal depends on them)."""
    k = n_v.shape[-1]
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), n_v.shape[:-1] + (k, k))
    if level in NUMERIC_LEVELS:
        d = values[:, None] - values[None, :]
        if level == "ratio":
            total = values[:, None] + values[None, :]
            d = np.divide(d, total, out=np.zeros_like(d), where=total != 0)
        return np.broadcast_to(d ** 2, n_v.shape[:-1] + (k, k))
    cum = np.concatenate([np.zeros(n_v.shape[:-1] + (1,)), np.cumsum(n_v, axis=-1)], axis=-1)
    g = np.arange(k)
    lo, hi = np.minimum(g[:, None], g[None, :]), np.maximum(g[:, None], g[None, :])
    between = cum[..., hi + 1] - cum[..., lo]
    return (between - (n_v[..., :, None] + n_v[..., None, :]) / 2.0) ** 2


def alpha_from_coincidences(o: np.ndarray, level: str = "nominal",
                            values: Optional[np.ndarray] = None) -> np.ndarray:
    """Alpha of coincidence matrices ``o`` (..., K, K); NaN where the expected disagreement
    is 0 (every pairable value in one class)."""
    o = np.asarray(o, dtype=np.float64)
    n_v = o.sum(axis=-1)
    n = n_v.sum(axis=-1)
    d = _distances(n_v, level, values)
    observed = (o * d).sum(axis=(-2, -1))
    expected = np.einsum("...c,...ck,...k->...", n_v, d, n_v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1.0) * observed / expected, np.nan)


def krippendorff_alpha(annotations: Any, level: str = "nominal") -> float:
    """Krippendorff's alpha of all annotations.

    Args:
        annotations: :class:`~crowd_keras.Annotations`, or a
            :class:`~crowd_keras.sequences.annotations.SequenceAnnotations` (token level:
            items = tokens, classes = tags).
        level: ``"nominal"``, ``"ordinal"`` (classes in code order, ``annotations.classes``),
            ``"interval"`` (numeric classes, or texts that spell numbers such as a Label
            Studio ``<Choices>`` scale's ``"1"``..``"5"``; else
            :class:`~crowd_keras.CrowdDataError`) or
            ``"ratio"`` (non-negative numeric classes).

    Returns:
        alpha (float; 1 = perfect agreement, 0 = chance; NaN when every pairable label is the
        same class). Items with a single annotation are left out.

    Raises:
        CrowdDataError: fewer than two annotators, no item with two annotations, or
            ``level="interval"`` or ``"ratio"`` on non-numeric classes (``"ratio"``: or a
            negative one).
    """
    level = _check_level(level)
    ann = as_annotations(annotations)
    values = class_values(ann, level) if level in NUMERIC_LEVELS else None
    return float(alpha_from_coincidences(coincidence_matrix(ann), level, values))


def item_coincidences(annotations: Any) -> tuple[sp.csr_matrix, np.ndarray]:
    """Per pairable item, its contribution to ``o`` flattened: ``(P, items)`` with ``P``
    (n_pairable, K²) CSR and ``items`` (n_pairable,) their codes. ``o = P.sum(0)``; a bootstrap
    replicate is ``counts @ P`` (used by :func:`crowd_keras.agreement.bootstrap_ci`)."""
    ann = as_annotations(annotations)
    m = check_agreement_input(ann)
    items = np.flatnonzero(m >= 2)
    counts = label_count_matrix(ann)[items]
    k = ann.n_classes
    nnz = np.diff(counts.indptr)
    row = np.repeat(np.arange(len(items)), nnz * nnz)
    # all (c, l) pairs of non-zero classes within each row, without a loop over rows
    starts = np.repeat(counts.indptr[:-1], nnz * nnz)
    within = np.arange(len(row)) - np.repeat(np.cumsum(nnz * nnz) - nnz * nnz, nnz * nnz)
    width = np.repeat(nnz, nnz * nnz)
    first, second = starts + within // np.maximum(width, 1), starts + within % np.maximum(width, 1)
    c, cl = counts.indices[first], counts.indices[second]
    v = counts.data[first] * counts.data[second] - np.where(c == cl, counts.data[first], 0.0)
    v = v / (m[items][row] - 1.0)
    out = sp.csr_matrix((v, (row, c * k + cl)), shape=(len(items), k * k))
    return out, items


def per_class_alpha(annotations: Any) -> pd.DataFrame:
    """One-vs-rest nominal alpha per class: the labels recoded to "class k" / "not k".

    For class ``k`` the 2 × 2 coincidences are sums over items of ``w_i n_ik (m_i - n_ik)``
    etc. (``w_i = 1/(m_i - 1)``), so ``alpha_k = 1 - (n - 1) o_k,¬k / (n_k n_¬k)`` for all
    classes at once. Also ``specific_agreement`` = ``o_kk / n_k`` (of the pairable labels
    ``k``, the share whose pair partner is also ``k``) and ``n_pairable`` = ``n_k``.

    Returns:
        DataFrame with one row per class: ``class, n_pairable, specific_agreement, alpha``
        (NaN where the class was never or always used).
    """
    ann = as_annotations(annotations)
    m = check_agreement_input(ann).astype(np.float64)
    counts = label_count_matrix(ann)
    w = np.divide(1.0, m - 1.0, out=np.zeros(len(m)), where=m >= 2)
    weighted = sp.diags(w) @ counts
    # o_k,¬k = Σ_i w_i n_ik (m_i - n_ik); o_kk = Σ_i w_i n_ik (n_ik - 1)
    wn = np.asarray(weighted.sum(axis=0)).ravel()                  # Σ w n_ik
    wnm = np.asarray((sp.diags(w * m) @ counts).sum(axis=0)).ravel()  # Σ w m_i n_ik
    wnn = np.asarray(weighted.multiply(counts).sum(axis=0)).ravel()   # Σ w n_ik²
    o_cross = wnm - wnn
    o_kk = wnn - wn
    # n_k = o_kk + o_cross = Σ_i n_ik over pairable items, counted exactly: the weighted sums
    # leave a rounding residue, and n_¬k = 1e-16 for a class everybody used gave alpha 1
    pairable = np.asarray(counts[m >= 2].sum(axis=0)).ravel().round().astype(np.int64)
    n_k = pairable.astype(np.float64)
    n = float(m[m >= 2].sum())                                        # Σ_i m_i, pairable items
    n_not = n - n_k
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = np.where((n_k > 0) & (n_not > 0), 1.0 - (n - 1.0) * o_cross / (n_k * n_not),
                         np.nan)
        specific = np.where(n_k > 0, o_kk / n_k, np.nan)
    return pd.DataFrame({"class": pd.Series(list(ann.classes), dtype=object),
                         "n_pairable": pairable,
                         "specific_agreement": specific, "alpha": alpha})
