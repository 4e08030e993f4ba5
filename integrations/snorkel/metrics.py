"""Snorkel's ``probs_to_preds`` and ``Scorer`` for the adapter, without importing Snorkel."""
from __future__ import annotations

import hashlib
from typing import Dict, Optional, Sequence

import numpy as np

from crowd_keras.errors import CrowdDataError

__all__ = ["probs_to_preds", "score", "TIE_POLICIES"]

TIE_POLICIES = ("abstain", "random", "true-random")


def _snorkel_hash(i: int) -> int:
    """Snorkel's deterministic hash for tie-breaking (``snorkel.utils.core._hash``)."""
    return int(hashlib.sha1(str(i).encode("utf-8")).hexdigest(), 16)


def probs_to_preds(probs: np.ndarray, tie_break_policy: str = "random", tol: float = 1e-5,
                   seed: Optional[int] = None) -> np.ndarray:
    """Class per row of ``probs`` (n, k); ties within ``tol`` as in Snorkel's ``probs_to_preds``.

    ``"abstain"``: -1; ``"random"``: Snorkel's deterministic choice (a hash of the row index),
    so a tie resolves as it would in Snorkel; ``"true-random"``: a random choice (``seed``).
    """
    if tie_break_policy not in TIE_POLICIES:
        raise ValueError(f"tie_break_policy={tie_break_policy!r} not recognized; use one of "
                         f"{TIE_POLICIES}")
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[1] < 2:
        raise ValueError(f"probs must be (n, k) with k >= 2, got shape {probs.shape}")
    top = np.abs(probs - probs.max(axis=1, keepdims=True)) < tol
    n_top = top.sum(axis=1)
    preds = np.argmax(top, axis=1).astype(np.int64)
    tied = np.flatnonzero(n_top > 1)
    if len(tied) == 0:
        return preds
    if tie_break_policy == "abstain":
        preds[tied] = -1
        return preds
    if tie_break_policy == "random":
        # only the tied rows are hashed (Snorkel hashes the row index)
        pick = np.array([_snorkel_hash(int(i)) for i in tied], dtype=object) % n_top[tied]
        pick = pick.astype(np.int64)
    else:
        pick = np.random.default_rng(seed).integers(0, n_top[tied])
    # position of the pick-th tied class in each tied row
    rank = np.cumsum(top[tied], axis=1) - 1
    preds[tied] = np.argmax(top[tied] & (rank == pick[:, None]), axis=1)
    return preds


def score(golds: np.ndarray, preds: np.ndarray, probs: np.ndarray,
          metrics: Sequence[str]) -> Dict[str, float]:
    """Snorkel's Scorer: rows with gold -1 or prediction -1 are left out (not for coverage)."""
    golds = np.asarray(golds).ravel()
    if len(golds) != len(preds):
        raise CrowdDataError(f"Y has {len(golds)} labels but L has {len(preds)} rows")
    if len(golds) == 0:
        raise ValueError("Cannot score empty labels")
    keep = (golds != -1) & (preds != -1)
    g, p, pr = golds[keep], preds[keep], probs[keep]
    out: Dict[str, float] = {}
    for metric in metrics:
        if metric == "coverage":
            out[metric] = float(np.mean(preds != -1))
        elif metric == "accuracy":
            out[metric] = float(np.mean(g == p)) if len(g) else float("nan")
        else:
            out[metric] = _sklearn_metric(metric, g, p, pr)
    return out


def _sklearn_metric(metric: str, g: np.ndarray, p: np.ndarray, pr: np.ndarray) -> float:
    names = ("precision", "recall", "f1", "f1_micro", "f1_macro", "fbeta", "matthews_corrcoef",
             "roc_auc")
    if metric not in names:
        raise ValueError(f"Unrecognized metric: {metric}; use accuracy, coverage or one of {names}")
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
