"""``LFAnalysis``-style quality of labeling functions from a fitted label model, no gold needed."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from crowd_keras.codes import as_matrix, compact_codes, numeric_matrix
from crowd_keras.errors import CrowdDataError
from crowd_keras.tables import SummaryTable

from .label_model import DEFAULT_METHOD, CrowdLabelModel
from .validation import check_gold_labels, check_label_matrix

__all__ = ["lf_quality"]


def lf_quality(L: Any, Y: Any = None, model: Optional[CrowdLabelModel] = None,
               lfs: Optional[Sequence[Any]] = None, cardinality: Optional[int] = None,
               method: Optional[str] = None) -> pd.DataFrame:
    """Per labeling function: Snorkel's ``lf_summary`` columns plus estimated accuracy.

    Args:
        L: (n, m) label matrix, -1 = abstain.
        Y: optional gold labels (n,) for the empirical columns (``Correct``, ``Incorrect``,
            ``Emp. Acc.``, counted where the function votes and ``Y != -1``), checked as
            ``CrowdLabelModel.score``'s ``Y``: a non-integer or a label outside
            ``-1..cardinality-1`` raises :class:`crowd_keras.CrowdDataError` naming it.
        model: a fitted :class:`CrowdLabelModel`; default: fit ``CrowdLabelModel(method)``
            to ``L`` (so no gold is needed; the fit's rules hold, e.g. at least 3 functions
            and one vote, and its refusal is a :class:`crowd_keras.CrowdDataError` naming
            ``lf_quality``).
        method: the label model fitted without ``model`` (default the adapter's
            ``DEFAULT_METHOD``); with ``model`` it is a ``TypeError`` (the model's own
            method is the one reported).
        lfs: the labeling functions (their ``name`` is used) or names, for the index.
        cardinality: number of classes (with ``model``: its own, or left out); default the
            model's, else ``max(L) + 1`` (at least 2; a ``Y`` class no function votes
            raises, saying to pass ``cardinality``;
            a stray large label that would make more than 64 classes, mostly unseen, raises
            :class:`crowd_keras.CrowdDataError`: pass ``cardinality``).

    Returns:
        DataFrame (a :class:`~crowd_keras.tables.SummaryTable`: it prints whole) indexed by
        function name with ``j``, ``Polarity`` (classes it votes),
        ``Coverage``, ``Overlaps``, ``Conflicts`` (as in Snorkel), ``Est. Acc.`` (the model's
        accuracy of the function when it votes, NaN if it never votes), ``Est. Confusion``
        (nested list, rows = true class, columns = vote then abstain: ``p(response | class)``)
        and, with ``Y``, ``Correct``, ``Incorrect``, ``Emp. Acc.`` (``Correct / (Correct +
        Incorrect)``, NaN where that is 0/0: Snorkel's is 0 there, and it counts votes on
        rows with ``Y == -1`` as incorrect in ``Emp. Acc.`` only). ``j`` is there with or
        without ``lfs`` (Snorkel's only with them).
    """
    if model is not None:
        if not isinstance(model, CrowdLabelModel):
            raise TypeError(f"model must be a fitted CrowdLabelModel, got "
                            f"{type(model).__name__}")
        if method is not None:
            raise TypeError(f"lf_quality takes model= or method=, not both: the fitted model's "
                            f"method ({model.method!r}) is the one reported")
        model._check_fitted()
        if cardinality is not None and cardinality != model.cardinality:
            raise ValueError(f"cardinality={cardinality!r} but the model was fitted with "
                             f"cardinality {model.cardinality}; leave cardinality out")
        cardinality = int(model.cardinality)
    inferred = model is None and cardinality is None
    if inferred:
        cardinality = _inferred_cardinality(L)
    k = int(cardinality)
    L = check_label_matrix(L, k, n_functions=None if model is None else model.n_functions_)
    n, m = L.shape
    y = None if Y is None else _gold(Y, k, n, inferred)   # checked before any fit
    if model is None:
        method = method or DEFAULT_METHOD
        try:
            model = CrowdLabelModel(cardinality=k, method=method).fit(L, progress_bar=False)
        except CrowdDataError as e:   # fit's words name L_train, which this caller never passed
            raise CrowdDataError(f"lf_quality fits CrowdLabelModel(method={method!r}) to L for "
                                 f"Est. Acc. and Est. Confusion, and the fit refused L: {e}; "
                                 "or pass model= fitted elsewhere") from e
    names = [getattr(f, "name", f) for f in lfs] if lfs is not None else list(range(m))
    if len(names) != m:
        raise CrowdDataError(f"{len(names)} function names for {m} columns of L")
    voted = L >= 0
    n_votes = voted.sum(axis=1)
    rows, cols = np.nonzero(voted)
    counts = np.bincount(rows * k + L[rows, cols], minlength=n * k).reshape(n, k)
    # conflicted: an item with at least two different votes
    conflicted = (counts > 0).sum(axis=1) > 1
    vote_class = np.zeros((m, k), dtype=bool)
    vote_class[cols, L[rows, cols]] = True
    cp = model.get_conditional_probs()  # (m, k+1, k), abstain first
    confusion = np.concatenate([cp[:, 1:, :], cp[:, :1, :]], axis=1).transpose(0, 2, 1)
    frame = pd.DataFrame({
        "j": np.arange(m),
        "Polarity": [list(np.flatnonzero(v)) for v in vote_class],
        "Coverage": voted.mean(axis=0),
        "Overlaps": (voted & (n_votes > 1)[:, None]).mean(axis=0),
        "Conflicts": (voted & conflicted[:, None]).mean(axis=0),
        "Est. Acc.": model.get_weights(),
        "Est. Confusion": [np.round(c, 4).tolist() for c in confusion],
    }, index=names)
    if y is not None:
        known = voted & (y >= 0)[:, None]
        correct = (known & (L == y[:, None])).sum(axis=0)
        incorrect = known.sum(axis=0) - correct
        frame["Correct"] = correct
        frame["Incorrect"] = incorrect
        with np.errstate(invalid="ignore", divide="ignore"):
            frame["Emp. Acc."] = correct / (correct + incorrect)
    return SummaryTable(frame)  # prints whole: every promised column shows


def _gold(Y: Any, k: int, n: int, inferred: bool) -> np.ndarray:
    """``Y`` checked as score's: (n,) labels ``0..k-1``, -1 = no gold. With ``k`` inferred
    from ``L``, a gold class no function votes gets the hint to pass ``cardinality``."""
    try:
        y = check_gold_labels(Y, k, "Y", allow_missing=True)
    except CrowdDataError as e:
        arr = np.asarray(Y)
        if inferred and arr.dtype.kind in "iu" and arr.size and arr.max() >= k:
            raise CrowdDataError(f"{e}: the cardinality {k} was inferred from L as max(L) + 1 "
                                 f"(no function votes class {int(arr.max())}); pass "
                                 "cardinality=") from e
        raise
    if len(y) != n:
        raise CrowdDataError(f"Y has {len(y)} labels but L has {n} rows")
    return y


def _inferred_cardinality(L: Any) -> int:
    """``max(L) + 1``, at least 2, from the labels ``>= 0`` (the bad entries are left to
    :func:`check_label_matrix`, which names them). An unsigned ``L``'s largest value is a
    wrapped -1, not a class; a label that would make more than 64 classes, mostly unseen
    (:func:`crowd_keras.codes.compact_codes`, the library's rule), raises naming it."""
    arr = as_matrix(L, "L")
    if arr.dtype.kind == "O":
        arr = numeric_matrix(arr, "L")
    if arr.ndim != 2 or arr.dtype.kind not in "iuf":
        return 2
    labels = arr[np.isfinite(arr) & (arr >= 0)] if arr.dtype.kind == "f" else arr[arr >= 0]
    if arr.dtype.kind == "u":
        labels = labels[labels != np.iinfo(arr.dtype).max]
    if not len(labels):
        return 2
    top = int(labels.max())
    distinct = len(np.unique(labels))
    if top + 1 > 64 and not compact_codes(distinct, top):
        r, c = np.argwhere(arr == labels.max())[0]
        raise CrowdDataError(f"L has the label {top} at row {r}, column {c}: max(L) + 1 would "
                             f"make {top + 1} classes for {distinct} distinct labels; pass "
                             "cardinality= (labels 0..cardinality-1, -1 = abstain)")
    return max(top + 1, 2)
