"""Kappas and percent agreement: Fleiss' kappa for many raters (with its generalisation to
varying numbers of ratings per item), Cohen's kappa for every pair of annotators, and each
annotator's agreement with the rest.

Per pair of annotators ``a < b`` Cohen's kappa needs the items both labelled ``n_ab``, those
they agree on, and each one's label counts on them (``p_e = Σ_k c_a(k) c_b(k) / n_ab²``).
Two ways, same numbers (:func:`_pairs`): the within-item pairs of annotations, each packed
with its two labels into one int64 and sorted, so every count is a bincount over the groups
(O(Σ_i m_i²) memory); or, for items labelled by very many annotators, sparse co-occurrence
products over the item × annotator matrices of :mod:`._counts` (overlaps ``Yᵀ Y``, agreements
``Zᵀ Z`` and per class ``R_k = Yᵀ X_k``, ``R_k[b, a]`` = shared items on which ``a`` said
``k``). Either way the memory follows the pairs that share an item, never annotators².
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..codes import show
from ..errors import CrowdDataError
from ..numerics import pair_index
from ._counts import (agreement_matrix, as_annotations, check_agreement_input,
                      dense_counts_fit, label_count_matrix, own_label_counts, presence_matrix,
                      values_at)

__all__ = ["fleiss_kappa", "percent_agreement", "item_agreement", "pairwise_kappas",
           "cohen_kappa_matrix", "overlap_matrix", "annotator_agreement", "fleiss_parts",
           "kappa_from_sums"]


def item_agreement(annotations: Any) -> np.ndarray:
    """(n_items,) share of agreeing pairs among the pairs of annotations of each item,
    ``Σ_k n_ik (n_ik - 1) / (m_i (m_i - 1))``; NaN for items with fewer than two."""
    ann = as_annotations(annotations)
    m = ann.annotations_per_item().astype(np.float64)
    same = _squares(ann) - m
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m >= 2, same / (m * (m - 1.0)), np.nan)


def percent_agreement(annotations: Any) -> float:
    """Mean over items with at least two annotations of the share of agreeing pairs
    (Fleiss' ``P̄``, 1971 eq. 2-3; the observed agreement of :func:`fleiss_kappa` when every
    item has the same number of annotations, which weighs items otherwise)."""
    ann = as_annotations(annotations)
    check_agreement_input(ann)
    return float(np.nanmean(item_agreement(ann)))


def fleiss_parts(annotations: Any) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """Per pairable item (``m_i >= 2``): ``(a_i, m_i, x_i)`` with the within-item disagreement
    ``a_i = Σ_j x_ij (m_i - x_ij) / m_i`` (n,), the number of ratings ``m_i`` (n,) and the
    class counts ``x_i`` (n, K) (dense, or CSR when items × classes is large);
    :func:`fleiss_kappa` and its bootstrap use them."""
    ann = as_annotations(annotations)
    m = check_agreement_input(ann).astype(np.float64)
    keep = np.flatnonzero(m >= 2)
    counts = (ann.label_counts() if dense_counts_fit(ann) else label_count_matrix(ann))[keep]
    mk = m[keep]
    sq = _squares(ann)[keep]
    return (mk * mk - sq) / mk, mk, counts


def _squares(ann: Any) -> np.ndarray:
    """(n_items,) ``Σ_k n_ik²``."""
    if dense_counts_fit(ann):
        counts = ann.label_counts()
        return np.einsum("ik,ik->i", counts, counts)
    counts = label_count_matrix(ann)
    return np.asarray(counts.multiply(counts).sum(axis=1)).ravel()


def fleiss_kappa(annotations: Any) -> float:
    """Fleiss' kappa, generalised to a varying number of ratings per item.

    ``κ = 1 - Σ_i [Σ_j x_ij (m_i - x_ij) / m_i] / (N (m̄ - 1) Σ_j p_j q_j)`` with
    ``p_j = Σ_i x_ij / (N m̄)``, ``q_j = 1 - p_j`` over the ``N`` items with ``m_i >= 2``
    ratings, ``m̄`` their mean number of ratings (Fleiss, Levin & Paik 2003, *Statistical
    Methods for Rates and Proportions*, §18.2, unequal numbers of ratings per subject). With
    the same number of ratings on every item it is exactly Fleiss' (1971) kappa
    ``(P̄ - P̄_e) / (1 - P̄_e)`` (``statsmodels.stats.inter_rater.fleiss_kappa``, which
    requires equal numbers). Items with one rating are left out. NaN when every rating is
    the same class.
    """
    a, m, counts = fleiss_parts(annotations)
    return float(kappa_from_sums(a.sum(), m.sum(), float(len(m)),
                                 np.asarray(counts.sum(axis=0)).ravel()))


def kappa_from_sums(a_sum: Any, m_sum: Any, n_items: Any, class_sums: Any) -> np.ndarray:
    """Fleiss' κ from ``Σ a_i``, ``Σ m_i``, ``N`` and ``Σ_i x_ij`` (..., K); vectorised over
    leading axes (bootstrap replicates)."""
    a_sum, m_sum, n_items = (np.asarray(v, dtype=np.float64) for v in (a_sum, m_sum, n_items))
    p = np.asarray(class_sums, dtype=np.float64) / m_sum[..., None]
    spread = (p * (1.0 - p)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = n_items * (m_sum / n_items - 1.0) * spread
        return np.where(denom > 0, 1.0 - a_sum / denom, np.nan)


#: Largest number of within-item annotation pairs (times the annotations) for which the pairs
#: are enumerated; above it (items labelled by very many annotators) the sparse products run.
ENUMERATE_PAIRS_FACTOR = 8


def _pair_count(ann: Any) -> int:
    m = ann.annotations_per_item().astype(np.int64)
    return int((m * (m - 1) // 2).sum())


def _pairs(ann: Any, method: str = "auto") -> tuple:
    """Every pair ``a < b`` of annotators who share an item: ``(a, b, n_ab, agree_ab,
    chance_ab)`` with ``chance_ab = Σ_k c_a(k) c_b(k)`` (label counts of each on the shared
    items; divided by ``n_ab²`` it is Cohen's chance agreement).

    ``method``: ``"enumerate"`` lists the within-item pairs of annotations (O(Σ_i m_i²)
    memory, one sort of int64 keys), ``"sparse"`` uses co-occurrence products (memory
    O(overlapping pairs) whatever the items), ``"auto"`` enumerates unless the pairs outnumber
    the annotations ``ENUMERATE_PAIRS_FACTOR`` times (or a pair and its two labels do not fit
    in 62 bits).
    """
    bits = max(int(ann.n_classes - 1).bit_length(), 1)
    packable = float(ann.n_annotators) ** 2 * 4.0 ** bits < 2.0 ** 62
    if method == "auto":
        method = ("enumerate" if packable and _pair_count(ann) <= ENUMERATE_PAIRS_FACTOR * max(
            ann.n_annotations, 1 << 20) else "sparse")
    if method not in ("enumerate", "sparse"):
        raise ValueError(f"method must be 'auto', 'enumerate' or 'sparse', got {method!r}")
    return _pairs_enumerated(ann) if method == "enumerate" else _pairs_sparse(ann)


def _pairs_enumerated(ann: Any) -> tuple:
    # annotations are sorted by (item, annotator): the annotation d places after j on the
    # same item is by a later annotator, so (annotator[j], annotator[j + d]) has a < b
    m = ann.annotations_per_item()
    pos = np.arange(ann.n_annotations) - ann.item_starts()[ann.items]
    left = m[ann.items] - pos - 1                 # annotations after j on its item
    active = np.flatnonzero(left > 0)
    firsts, gaps = [], []
    d = 1
    while len(active):                            # a loop over within-item offsets
        firsts.append(active)
        gaps.append(np.full(len(active), d, dtype=np.int32))
        d += 1
        active = active[left[active] >= d]
    first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    second = first + (np.concatenate(gaps) if gaps else 0)
    del firsts, gaps
    # one int64 per pair holds (a, b, label of a, label of b): a plain sort groups the pairs
    # of annotators with their labels along, and every statistic is a bincount of the groups
    n_a, k = np.int64(ann.n_annotators), ann.n_classes
    bits = np.int64(max(int(k - 1).bit_length(), 1))
    packed = (((ann.annotators[first] * n_a + ann.annotators[second]) << (2 * bits))
              | (ann.labels[first] << bits) | ann.labels[second])
    del first, second
    packed.sort()
    pair = packed >> (2 * bits)
    new = np.concatenate([[True], pair[1:] != pair[:-1]])
    keys = pair[new]
    del pair
    group = np.cumsum(new) - 1
    del new
    mask = (np.int64(1) << bits) - 1
    la, lb = (packed >> bits) & mask, packed & mask
    del packed
    u = len(keys)
    n_ab = np.bincount(group, minlength=u).astype(np.float64)
    agree = np.bincount(group[la == lb], minlength=u).astype(np.float64)
    chance = (np.bincount(group * k + la, minlength=u * k).reshape(u, k)
              * np.bincount(group * k + lb, minlength=u * k).reshape(u, k)).sum(axis=1)
    chance = chance.astype(np.float64)
    return keys // n_a, keys % n_a, n_ab, agree, chance


def _pairs_sparse(ann: Any) -> tuple:
    presence = presence_matrix(ann)
    overlap = sp.triu(presence.T @ presence, k=1).tocsr()
    overlap.eliminate_zeros()
    overlap.sum_duplicates()
    a = np.repeat(np.arange(ann.n_annotators), np.diff(overlap.indptr))
    b = overlap.indices.astype(np.int64)
    n_ab = overlap.data
    z = agreement_matrix(ann)
    agree = values_at(z.T @ z, a, b)
    chance = sp.csr_matrix((ann.n_annotators, ann.n_annotators))
    by_column = presence.tocsc()
    for k in range(ann.n_classes):      # a loop over classes: each product is O(pairs)
        sel = ann.labels == k
        if not sel.any():
            continue
        xk = sp.csr_matrix((np.ones(int(sel.sum())), (ann.items[sel], ann.annotators[sel])),
                           shape=presence.shape)
        rk = (by_column.T @ xk).tocsr()            # rk[b, a]: items of both where a said k
        chance = chance + rk.multiply(rk.T.tocsr())
    return a, b, n_ab, agree, values_at(chance, a, b)


def _kappa_table(ann: Any) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The :func:`pairwise_kappas` frame and its rows' annotator codes ``(a, b)``."""
    check_agreement_input(ann)
    a, b, n_ab, agree, chance = _pairs(ann)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = agree / n_ab
        p_e = chance / (n_ab * n_ab)
        kappa = np.where(p_e < 1.0, (p_o - p_e) / (1.0 - p_e), np.nan)
    ids = ann.annotator_ids
    frame = pd.DataFrame({"annotator_a": ids[a], "annotator_b": ids[b],
                          "n_items": n_ab.astype(np.int64), "agreement": p_o, "expected": p_e,
                          "kappa": kappa})
    return frame, a, b


def pairwise_kappas(annotations: Any) -> pd.DataFrame:
    """Cohen's kappa of every pair of annotators who share at least one item.

    For the ``n_items`` items both labelled: ``agreement`` ``p_o`` = share with the same
    label, ``expected`` ``p_e = Σ_k p_a(k) p_b(k)`` from each one's label shares *on those
    items* (``sklearn.metrics.cohen_kappa_score`` on the pair's common items),
    ``kappa = (p_o - p_e) / (1 - p_e)`` (Cohen 1960), NaN where ``p_e = 1``.

    Returns:
        DataFrame, one row per pair ``a < b`` (codes in ``annotator_ids`` order):
        ``annotator_a, annotator_b, n_items, agreement, expected, kappa``. Its size is the
        number of overlapping pairs (no annotators × annotators table).
    """
    return _kappa_table(as_annotations(annotations))[0]


def _resolve_pairs(ann: Any, pairs: Any) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """``(table, a, b)``: computed (``pairs=None``), passed through (a ``_kappa_table``
    result), or a caller's :func:`pairwise_kappas` frame with its annotator ids looked up."""
    if pairs is None:
        return _kappa_table(ann)
    if isinstance(pairs, tuple):
        return pairs
    needed = ["annotator_a", "annotator_b", "kappa", "n_items"]   # the columns read here
    missing = [c for c in needed if c not in getattr(pairs, "columns", ())]
    if not isinstance(pairs, pd.DataFrame) or missing:
        raise TypeError(f"pairs must be a pairwise_kappas() frame (columns annotator_a, "
                        f"annotator_b, ...), got {type(pairs).__name__}"
                        + (f" without the column(s) {missing}"
                           if isinstance(pairs, pd.DataFrame) else ""))
    idx = pd.Index(list(ann.annotator_ids))
    a, b = idx.get_indexer(pairs["annotator_a"]), idx.get_indexer(pairs["annotator_b"])
    bad = (a < 0) | (b < 0)
    if bad.any():
        r = int(np.argmax(bad))
        who = pairs["annotator_a"].iloc[r] if a[r] < 0 else pairs["annotator_b"].iloc[r]
        raise CrowdDataError(f"pairs row {r}: annotator {show(who)} is not an annotator of "
                             "these annotations")
    return pairs, a, b


def _square(ann: Any, a: np.ndarray, b: np.ndarray, values: np.ndarray, fill: float,
            diagonal: Any) -> pd.DataFrame:
    n = ann.n_annotators
    out = np.full((n, n), fill, dtype=np.float64)
    out[a, b] = values
    out[b, a] = values
    out[np.diag_indices(n)] = diagonal
    ids = pd.Index(list(ann.annotator_ids), name="annotator")
    return pd.DataFrame(out, index=ids, columns=ids.rename(None))


def cohen_kappa_matrix(annotations: Any, pairs: Any = None) -> pd.DataFrame:
    """Annotators × annotators DataFrame of Cohen's kappa (:func:`pairwise_kappas`), NaN
    where two annotators share no item, where kappa is undefined (``p_e = 1``: both gave one
    and the same class on all their shared items) and on the diagonal. Dense: annotators² floats; for
    thousands of annotators use :func:`pairwise_kappas` (overlapping pairs only).

    ``pairs``: the :func:`pairwise_kappas` frame when already computed.
    """
    ann = as_annotations(annotations)
    table, a, b = _resolve_pairs(ann, pairs)
    return _square(ann, a, b, table["kappa"].to_numpy(), np.nan, np.nan)


def overlap_matrix(annotations: Any) -> pd.DataFrame:
    """Annotators × annotators DataFrame of the number of items both labelled (0 where none;
    the diagonal: each annotator's number of annotations)."""
    ann = as_annotations(annotations)
    presence = presence_matrix(ann)
    full = (presence.T @ presence).toarray()
    ids = pd.Index(list(ann.annotator_ids), name="annotator")
    return pd.DataFrame(full.astype(np.int64), index=ids, columns=ids.rename(None))


def annotator_agreement(annotations: Any, pairs: Any = None) -> pd.DataFrame:
    """Each annotator's agreement with the rest, one row per annotator.

    Over the pairs (their annotation, another annotator's annotation of the same item):
    ``n_pairs``, ``agreement`` (share of those pairs with the same label) and ``kappa``
    (chance-corrected: ``p_e = Σ_k p_a(k) p_rest(k)``, with the annotator's and the others'
    label shares over those pairs); ``n_partners`` (annotators they share an item with) and
    ``mean_pairwise_kappa`` (:func:`pairwise_kappas` averaged over partners, weighted by
    shared items; NaN pairs left out). NaN where an annotator shares no item.

    Args:
        annotations: :class:`~crowd_keras.Annotations`, or a ``SequenceAnnotations`` (token
            level: items = tokens, classes = tags).
        pairs: the :func:`pairwise_kappas` frame when already computed.
    """
    ann = as_annotations(annotations)
    m = check_agreement_input(ann).astype(np.float64)
    n_a, k = ann.n_annotators, ann.n_classes
    others = m[ann.items] - 1.0                                  # pair partners per annotation
    same = own_label_counts(ann) - 1.0
    n_pairs = np.bincount(ann.annotators, weights=others, minlength=n_a)
    agree = np.bincount(ann.annotators, weights=same, minlength=n_a)
    own = np.bincount(pair_index(ann.annotators, ann.labels, k), weights=others,
                      minlength=n_a * k).reshape(n_a, k)
    counts = ann.label_counts() if dense_counts_fit(ann) else label_count_matrix(ann)
    rest = presence_matrix(ann).T @ counts          # others' labels on each one's items
    rest = (rest.toarray() if sp.issparse(rest) else np.asarray(rest)) \
        - ann.annotator_label_counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = agree / n_pairs
        p_e = (own * rest).sum(axis=1) / (n_pairs * n_pairs)
        kappa = np.where((n_pairs > 0) & (p_e < 1.0), (p_o - p_e) / (1.0 - p_e), np.nan)
    table, pa, pb = _resolve_pairs(ann, pairs)
    kap, shared = table["kappa"].to_numpy(), table["n_items"].to_numpy(np.float64)
    ok = np.isfinite(kap)
    ends = np.concatenate([pa[ok], pb[ok]])
    wsum = np.bincount(ends, weights=np.tile(shared[ok], 2), minlength=n_a)
    ksum = np.bincount(ends, weights=np.tile(shared[ok] * kap[ok], 2), minlength=n_a)
    partners = np.bincount(np.concatenate([pa, pb]), minlength=n_a)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_kappa = np.where(wsum > 0, ksum / wsum, np.nan)
    return pd.DataFrame({"annotator": pd.Series(list(ann.annotator_ids), dtype=object),
                         "n_annotations": ann.annotations_per_annotator(),
                         "n_pairs": n_pairs.astype(np.int64), "n_partners": partners,
                         "agreement": p_o, "kappa": kappa, "mean_pairwise_kappa": mean_kappa})
