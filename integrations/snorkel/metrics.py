"""Snorkel's ``probs_to_preds`` and ``Scorer`` for the adapter, without importing Snorkel."""
from __future__ import annotations

import hashlib
from typing import Dict, Optional, Sequence

import numpy as np

from crowd_keras.errors import CrowdDataError

__all__ = ["probs_to_preds", "score", "TIE_POLICIES", "METRICS"]

TIE_POLICIES = ("abstain", "random", "true-random")
#: the metric names of Snorkel's ``metric_score`` (``snorkel.analysis.metrics.METRICS``)
METRICS = ("accuracy", "coverage", "precision", "recall", "f1", "f1_micro", "f1_macro", "fbeta",
           "matthews_corrcoef", "roc_auc")


def probs_to_preds(probs: np.ndarray, tie_break_policy: str = "random", tol: float = 1e-5,
                   seed: Optional[int] = None) -> np.ndarray:
    """Class per row of ``probs`` (n, k); ties within ``tol`` as in Snorkel's ``probs_to_preds``.

    ``"abstain"``: -1; ``"random"``: Snorkel's deterministic choice (a hash of the row index),
    so a tie resolves as it would in Snorkel; ``"true-random"``: a random choice, from
    ``numpy.random.default_rng(seed)``, or without ``seed`` from NumPy's global generator as
    Snorkel draws it (``np.random.seed(s)`` then gives Snorkel's very choices). A NaN or
    infinite probability raises ``ValueError`` naming its row (Snorkel's gives -1 there under
    ``"abstain"`` and fails inside its tie-breaking under the others).
    """
    if tie_break_policy not in TIE_POLICIES:
        raise ValueError(f"tie_break_policy={tie_break_policy!r} not recognized; use one of "
                         f"{TIE_POLICIES}")
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[1] < 2:
        raise ValueError(f"probs must be (n, k) with k >= 2, got shape {probs.shape}")
    # (classes, rows) layout: reductions over the long axis are several times faster
    by_class = np.ascontiguousarray(probs.T)
    if not np.isfinite(by_class).all():   # NaN is no maximum: it would read as class 0
        r, c = np.argwhere(~np.isfinite(probs))[0]
        raise ValueError(f"probs has {probs[r, c]} at row {r}, column {c}: probabilities must "
                         "be finite")
    top_t = np.abs(by_class - by_class.max(axis=0)) < tol
    n_top = top_t.sum(axis=0)
    preds = np.argmax(top_t, axis=0).astype(np.int64)
    tied = np.flatnonzero(n_top > 1)
    if len(tied) == 0:
        return preds
    if tie_break_policy == "abstain":
        preds[tied] = -1
        return preds
    top = top_t[:, tied].T
    if tie_break_policy == "random":
        # Snorkel hashes the row index: sha1(str(i)) as an integer, modulo the tied classes
        sha1, counts = hashlib.sha1, n_top[tied].tolist()
        pick = np.array([int.from_bytes(sha1(b"%d" % i).digest(), "big") % c
                         for i, c in zip(tied.tolist(), counts)], dtype=np.int64)
    elif seed is None:   # Snorkel's np.random.choice per tied row, in one draw of the same numbers
        pick = np.random.randint(0, n_top[tied])
    else:
        pick = np.random.default_rng(seed).integers(0, n_top[tied])
    # position of the pick-th tied class in each tied row
    rank = np.cumsum(top, axis=1) - 1
    preds[tied] = np.argmax(top & (rank == pick[:, None]), axis=1)
    return preds


def score(golds: np.ndarray, preds: np.ndarray, probs: np.ndarray,
          metrics: Sequence[str]) -> Dict[str, float]:
    """Snorkel's Scorer: rows with gold -1 or prediction -1 are left out (not for coverage)."""
    golds = np.asarray(golds).ravel()
    if len(golds) != len(preds):
        raise CrowdDataError(f"Y has {len(golds)} labels but L has {len(preds)} rows")
    if len(golds) == 0:
        raise ValueError("Cannot score empty labels")
    metrics = list(metrics)
    unknown = [metric for metric in metrics if metric not in METRICS]
    if unknown:   # checked first, as Snorkel's Scorer does
        raise ValueError(f"Unrecognized metric: {unknown[0]}; use one of {METRICS}")
    keep = (golds != -1) & (preds != -1)
    if not keep.any() and any(metric != "coverage" for metric in metrics):
        # Snorkel's metrics raise here too (scikit-learn's empty input), accuracy among them
        raise ValueError(f"no data point to score: all {len(golds)} have gold label -1 or "
                         "prediction -1 (a tie under tie_break_policy='abstain', e.g. every "
                         "function abstains); only 'coverage' is defined there")
    g, p, pr = golds[keep], preds[keep], probs[keep]
    out: Dict[str, float] = {}
    for metric in metrics:
        if metric == "coverage":
            out[metric] = float(np.mean(preds != -1))
        elif metric == "accuracy":
            out[metric] = float(np.mean(g == p))
        else:
            out[metric] = _sklearn_metric(metric, g, p, pr)
    return out


def _sklearn_metric(metric: str, g: np.ndarray, p: np.ndarray, pr: np.ndarray) -> float:
    try:
        from sklearn import metrics as skm
    except ImportError:  # pragma: no cover - scikit-learn comes with snorkel
        raise ImportError(f"metric {metric!r} needs scikit-learn") from None
    if metric == "f1":
        if len(g) and g.max() > 1:
            raise ValueError("f1 not supported for multiclass. Try f1_micro or f1_macro instead.")
        return float(skm.f1_score(g, p))
    if metric == "roc_auc":
        if pr.shape[1] != 2:
            raise ValueError("Metric roc_auc is currently only defined for binary problems.")
        return float(skm.roc_auc_score(g, pr[:, 1]))
    fn = {"precision": skm.precision_score, "recall": skm.recall_score,
          "f1_micro": lambda a, b: skm.f1_score(a, b, average="micro"),
          "f1_macro": lambda a, b: skm.f1_score(a, b, average="macro"),
          "fbeta": lambda a, b: skm.fbeta_score(a, b, beta=1.0),
          "matthews_corrcoef": skm.matthews_corrcoef}[metric]
    return float(fn(g, p))
