"""Out-of-fold class probabilities from any classifier, for ``fit(annotations, pred_probs=...)``.

:func:`out_of_fold` trains a fresh classifier on all folds but one and predicts the held-out
fold, for every fold: each item's probabilities come from a model that never saw its label,
so they carry the features' evidence without echoing the (noisy) training label. This is
the input that label models take as ``pred_probs`` (and that cleanlab's CROWDLAB takes).

Any classifier works: a scikit-learn-style estimator (``fit(x, y)``, ``predict_proba(x)``,
``classes_``) or a compiled Keras model (``fit(x, y, verbose=0)``, ``predict(x)``
returning probabilities). Neither library is imported here: the core stays light.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .aggregation.base import LabelModel
from .aggregation.registry import get_label_model
from .annotations import Annotations
from .arguments import check_count, check_number
from .codes import (MAX_CODE, booleans_as_codes, check_unique_ids, compact_codes,
                    factorize_labels, ids_array, rows_by_id, show)
from .errors import CrowdDataError
from .numerics import MISSING

__all__ = ["by_item_id", "out_of_fold", "stratified_folds", "training_labels"]


def stratified_folds(codes: np.ndarray, n_splits: int, random_state: Optional[int] = 0
                     ) -> np.ndarray:
    """(I,) fold of each item, 0..n_splits-1: each class's items (and the unlabelled ones,
    code -1) shuffled and dealt round the folds from a random first fold, so every fold gets
    its share of every class (a class with fewer items than folds is missing from some)."""
    n_splits = check_count(n_splits, "n_splits", 1)
    codes = np.asarray(codes)
    if codes.ndim != 1:
        raise CrowdDataError(f"codes must be one label per item (1-d), got shape {codes.shape}")
    try:
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise ValueError(f"random_state must be a non-negative int or None, got "
                         f"{random_state!r}") from None
    fold = np.empty(len(codes), dtype=np.int64)
    # groups by the inverse of np.unique, so that NaN codes (equal there) are one group too
    group = np.unique(codes, return_inverse=True)[1].reshape(-1)
    for code in range(int(group.max()) + 1 if len(group) else 0):    # classes, not items
        members = rng.permutation(np.flatnonzero(group == code))
        fold[members] = (np.arange(len(members)) + rng.integers(n_splits)) % n_splits
    return fold


def _consensus_codes(model: LabelModel) -> np.ndarray:
    """(I,) the fitted model's consensus codes, -1 on items without any annotation nor gold
    label: their consensus is the class prior (or the classifier), no label to train on."""
    codes = model.predict().astype(np.int64)
    evidence = model.annotations_.annotations_per_item() > 0
    prior = getattr(model, "item_log_prior_", None)
    if prior is not None and np.shape(prior) == (len(codes), model.annotations_.n_classes):
        evidence |= np.isneginf(prior).any(axis=1)          # a gold clamp
    return np.where(evidence, codes, MISSING)


def _check_classes(classes: Optional[Sequence], labels: Any) -> None:
    """``classes`` given with ``labels`` the Annotations or a label model must be theirs, in
    their order: they were ignored, the columns in the annotations' order whatever was
    asked (the order in which ``fit(annotations, pred_probs=...)`` reads an array)."""
    if classes is None:
        return
    if isinstance(labels, LabelModel):
        if not hasattr(labels, "annotations_"):
            return                      # not fitted: its predict() says so
        labels = labels.annotations_
    if not np.array_equal(ids_array(classes), np.asarray(labels.classes)):
        raise CrowdDataError(f"classes {show(ids_array(classes).tolist())} are not the "
                             f"annotations' classes {show(np.asarray(labels.classes).tolist())}"
                             ": with labels from annotations or a label model the columns are "
                             "those, in their order (as fit(annotations, pred_probs=...) reads "
                             "an array); leave classes= out")


def training_labels(labels: Any, n_items: int, classes: Optional[Sequence] = None,
                    label_model: Any = "majority_vote") -> Tuple[np.ndarray, np.ndarray]:
    """``(codes (I,), classes (K,))`` of the training targets.

    ``labels``: (I,) class labels (codes ``0..K-1`` or names; -1 or None/NaN: no label, the
    item is predicted but not trained on; integer labels, and whole-number floats with NaN,
    give the classes ``0..max`` as ``Annotations.from_frame`` reads them, True/False the
    classes 0 and 1, text its sorted distinct values); a fitted label
    model (its ``predict()``; -1 for the items without any annotation nor gold label, whose
    consensus is only the prior); or :class:`Annotations` (fitted with ``label_model``, a
    name or an unfitted model).
    """
    if isinstance(labels, (Annotations, LabelModel)):
        _check_classes(classes, labels)
    if isinstance(labels, Annotations):
        model = get_label_model(label_model) if isinstance(label_model, str) else label_model
        if not isinstance(model, LabelModel):
            raise TypeError(f"label_model must be a label model's name or an unfitted label "
                            f"model, got {type(model).__name__} {model!r}")
        labels = model.fit(labels)
    if isinstance(labels, LabelModel):
        return _consensus_codes(labels), np.asarray(labels.annotations_.classes)
    values = labels.to_numpy() if isinstance(labels, (pd.Series, pd.Index)) else \
        np.asarray(labels)
    if values.ndim != 1 or len(values) != n_items:
        raise CrowdDataError(f"labels must be one per item of x ({n_items}), got shape "
                             f"{values.shape}")
    if classes is not None:
        check_unique_ids(ids_array(classes), "class")
    known = ~pd.isna(values)
    if values.dtype.kind == "O" and known.any() and pd.api.types.infer_dtype(
            values[known], skipna=False) in ("integer", "floating", "mixed-integer-float"):
        values = np.where(known, values, np.nan).astype(np.float64)   # numbers with None
    if values.dtype.kind == "f":
        # a classifier's classes are labels, not measurements (scikit-learn refuses a
        # "continuous" target): a fractional label is a mistake, not a class named 0.5
        frac = known & ~(np.isfinite(values) & (values == np.round(values)))
        if frac.any():
            i = int(np.argmax(frac))
            raise CrowdDataError(f"label {show(values[i])} of item {i} is not a whole number: "
                                 "labels are class codes or names (NaN: no label)")
        big = known & (np.abs(values) > MAX_CODE)
        if big.any():
            i = int(np.argmax(big))
            raise CrowdDataError(f"label {show(values[i])} of item {i} is too large for a class "
                                 f"code (at most 2**53)")
        # whole numbers with NaN where missing: read as the integer labels they stand for
        values = np.where(known, values, MISSING).astype(np.int64)
    if values.dtype.kind in "iu":
        known = values != MISSING
        if classes is None:
            negative = known & (values < 0)
            if negative.any():   # named by item, as every other bad label
                i = int(np.argmax(negative))
                raise CrowdDataError(f"label code {show(values[i])} of item {i} is negative "
                                     "(-1: no label)")
            distinct = np.unique(values[known])
            top = int(distinct[-1]) if len(distinct) else 0
            # as Annotations.from_frame reads integer labels: codes 0..max, or their
            # distinct values when a stray large code would make that many classes
            classes = np.arange(top + 1) if compact_codes(len(distinct), top) else distinct
            codes = np.full(len(values), MISSING, dtype=np.int64)
            codes[known] = np.searchsorted(classes, values[known])
            return codes, classes
    at = np.flatnonzero(known)
    if classes is None and len(at):
        # the readers' rule (Annotations.from_frame): booleans are the codes 0 and 1, text
        # the sorted distinct values, and a mix of types (True and 2, 1 and "a") an error
        codes = np.full(len(values), MISSING, dtype=np.int64)
        codes[known], classes = factorize_labels(pd.Series(values[known], dtype=object),
                                                 lambda n: f"item {at[n]}")
        return codes, classes
    classes = np.asarray(classes) if classes is not None else np.unique(values[known])
    codes = np.full(len(values), MISSING, dtype=np.int64)
    # a True label is class 1 unless the classes are booleans (booleans_as_codes)
    codes[known] = pd.Index(classes).get_indexer(booleans_as_codes(values[known], classes))
    bad = known & (codes < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"label {show(values[i])} of item {i} is not one of the classes "
                             f"{np.asarray(classes).tolist()}")
    return codes, classes


def _is_sparse(x: Any) -> bool:
    """A scipy sparse matrix or array (scikit-learn's text features), without importing
    scipy."""
    return hasattr(x, "tocsr") and hasattr(x, "nnz") and hasattr(x, "shape")


def _take(x: Any, rows: np.ndarray) -> Any:
    """Rows of features: an array, a sparse matrix (as CSR, the format that selects rows), a
    frame (by position) or a dict of arrays (Keras inputs)."""
    if isinstance(x, (pd.DataFrame, pd.Series)):
        return x.iloc[rows]
    if _is_sparse(x):
        return x.tocsr()[rows]
    if isinstance(x, dict):
        return {name: _take(value, rows) for name, value in x.items()}
    if isinstance(x, (list, tuple)) and len(x) and hasattr(x[0], "shape"):
        return type(x)(_take(value, rows) for value in x)
    return np.asarray(x)[rows]


def _n_rows(x: Any) -> int:
    """Rows of features ``x``; the inputs of a dict or a list of arrays must agree."""
    if isinstance(x, dict) or (isinstance(x, (list, tuple)) and len(x) and
                               hasattr(x[0], "shape")):
        parts = list(x.items()) if isinstance(x, dict) else list(enumerate(x))
        if not parts:
            raise CrowdDataError("x is an empty dict: no features")
        sizes = {name: _n_rows(value) for name, value in parts}
        first = parts[0][0]
        for name, size in sizes.items():
            if size != sizes[first]:
                raise CrowdDataError(f"x's inputs differ in rows: {first!r} has "
                                     f"{sizes[first]}, {name!r} has {size}")
        return sizes[first]
    if _is_sparse(x):
        return int(x.shape[0])
    if x is None or np.ndim(x) == 0:
        raise TypeError(f"x must be the features of the items (an array, a DataFrame or a dict "
                        f"of arrays), got {type(x).__name__}")
    return len(x)


def by_item_id(x: Any, labels: Any, what: str = "x") -> Any:
    """Features ``x`` in the item order of ``labels`` when both know the items: a frame
    indexed by the item ids of :class:`Annotations` or of a fitted label model is aligned by
    id (any row order), as ``pred_probs`` frames are; other features are taken by position.
    ``what`` names ``x`` in the errors (``"features"`` for a label model's argument)."""
    if isinstance(labels, LabelModel) and hasattr(labels, "annotations_"):
        labels = labels.annotations_
    if not isinstance(labels, Annotations) or not isinstance(x, (pd.DataFrame, pd.Series)):
        return x
    rows, problem, values = rows_by_id(x.index, np.asarray(labels.item_ids))
    if problem == "types":   # else read by position, silently: another item's row each
        raise CrowdDataError(f"{what}'s index holds {show(values[0])} "
                             f"({type(values[0]).__name__}) where the item ids hold "
                             f"{show(values[1])} ({type(values[1]).__name__}): ids must be "
                             "of one type")
    if problem == "repeats":
        raise CrowdDataError(f"{what}'s index repeats item ids: {show(values[0])}")
    if problem == "missing":
        raise CrowdDataError(f"{what} is indexed by item id but has no row for {len(values)} "
                             f"item(s) of the annotations: "
                             f"{', '.join(show(v) for v in values[:5])}"
                             f"{' and more' if len(values) > 5 else ''} (rows in the "
                             f"annotations' item order: {what}.reset_index(drop=True))")
    if problem == "extra":
        raise CrowdDataError(f"{what} has {len(values)} row(s) for items that are not in the "
                             f"annotations: {', '.join(show(v) for v in values[:5])}"
                             f"{' and more' if len(values) > 5 else ''}")
    return x if rows is None else x.iloc[rows]


def _labels_by_index(labels: Any, x: Any) -> Any:
    """A Series of labels in the row order of a frame ``x`` indexed by the same ids in
    another order (both indexes unique, neither pandas' default 0..n-1); other labels as
    they are (by position)."""
    if not isinstance(labels, pd.Series) or not isinstance(x, (pd.DataFrame, pd.Series)):
        return labels
    index, rows = labels.index, x.index
    if index.equals(rows) or len(index) != len(rows) or index.has_duplicates or \
            rows.has_duplicates or index.equals(pd.RangeIndex(len(index))) or \
            rows.equals(pd.RangeIndex(len(rows))) or not rows.isin(index).all():
        return labels
    return labels.reindex(rows)


def _is_keras(model: Any) -> bool:
    return not hasattr(model, "predict_proba") and hasattr(model, "compile") \
        and hasattr(model, "predict")


def _new_model(model_fn: Any) -> Any:
    if isinstance(model_fn, type):      # a class (LogisticRegression): calling it makes one
        return model_fn()
    if _is_keras(model_fn) and hasattr(model_fn, "layers"):    # a model, not a function
        raise TypeError(f"model_fn is a Keras model ({type(model_fn).__name__}); pass a "
                        "function that builds and compiles a fresh one (every fold trains its "
                        "own), e.g. lambda: make_model()")
    if hasattr(model_fn, "get_params") and hasattr(model_fn, "fit"):   # an estimator: clone it
        from sklearn.base import clone
        return clone(model_fn)
    if not callable(model_fn):
        raise TypeError(f"model_fn must be a function returning a fresh classifier, got "
                        f"{type(model_fn).__name__}")
    return model_fn()


def _sample_weights(weights: Any, given: Any, x: Any, n: int, labels: Any = None) -> np.ndarray:
    """(n,) float weights in the row order of ``x`` (the features after alignment by item
    id): a Series indexed by ids is aligned with a frame ``x`` (with an array ``x``, with the
    item ids of ``labels``: :func:`by_item_id`); an array follows the rows of ``given`` (the
    features as passed)."""
    framed = isinstance(x, (pd.DataFrame, pd.Series))
    keyed = isinstance(weights, pd.Series) and \
        not weights.index.equals(pd.RangeIndex(len(weights)))
    if keyed and not framed:   # else read by position: each item another item's weight
        aligned = by_item_id(weights, labels, "sample_weight")
        if aligned is weights and not (isinstance(labels, Annotations) or isinstance(
                labels, LabelModel) and hasattr(labels, "annotations_")):
            raise CrowdDataError("sample_weight is a Series indexed by its own ids, but x is "
                                 "an array and labels name no items: give an array in x's "
                                 "row order, or x as a frame indexed like it")
        weights = aligned
    by_id = keyed and framed
    if by_id:
        if weights.index.has_duplicates:
            raise CrowdDataError(f"sample_weight's index repeats "
                                 f"{show(weights.index[weights.index.duplicated()][0])}")
        missing = ~x.index.isin(weights.index)
        if missing.any():
            raise CrowdDataError(f"sample_weight has no weight for {int(missing.sum())} "
                                 f"row(s) of x, e.g. {show(x.index[missing][0])}")
        weights = weights.reindex(x.index)
    try:
        values = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise CrowdDataError("sample_weight must be numbers, one per row of x") from None
    if values.shape != (n,):
        raise CrowdDataError(f"sample_weight has shape {values.shape}, expected ({n},): one "
                             "weight per row of x")
    if x is not given and not by_id:
        values = values[given.index.get_indexer(x.index)]     # rows moved to item order
    return values


def _fold_probabilities(model: Any, x_train: Any, y_train: np.ndarray, x_test: Any, k: int,
                        one_hot: Optional[bool], fit_kwargs: Dict[str, Any]) -> np.ndarray:
    """(n_test, K) probabilities of one fold, every class a column."""
    if _is_keras(model):
        try:
            width = model.output_shape[-1]
        except (AttributeError, ValueError, TypeError, IndexError):  # not built yet
            width = None
        if isinstance(width, int) and width != k:
            raise CrowdDataError(f"the Keras model outputs {width} value(s) per item, expected "
                                 f"{k}: one soft-max output per class")
        loss = str(getattr(model, "loss", ""))
        dense = ("sparse" not in loss) if one_hot is None else bool(one_hot)
        target = np.eye(k, dtype=np.float32)[y_train] if dense else y_train
        model.fit(x_train, target, **{"verbose": 0, **fit_kwargs})
        proba = np.asarray(model.predict(x_test, verbose=0), dtype=np.float64)
        if proba.ndim != 2 or proba.shape[1] != k:
            raise CrowdDataError(f"the Keras model predicts shape {proba.shape}, expected "
                                 f"(items, {k}): one soft-max output per class")
        sums = proba.sum(axis=1)
        off = np.abs(sums - 1.0)
        if len(sums) and off.max() > 1e-3:
            raise CrowdDataError(f"the Keras model's outputs sum to {sums[np.argmax(off)]:.4g}"
                                 ", not 1: end it with a soft-max activation (probabilities, "
                                 "not logits)")
        return proba
    if not hasattr(model, "predict_proba"):
        raise TypeError(f"{type(model).__name__} has no predict_proba (scikit-learn style) "
                        "nor compile/predict (Keras)")
    model.fit(x_train, y_train, **fit_kwargs)
    part = np.asarray(model.predict_proba(x_test), dtype=np.float64)
    seen = np.asarray(getattr(model, "classes_", np.arange(part.shape[1])))
    if part.shape[1] != len(seen) or (seen < 0).any() or (seen >= k).any():
        raise CrowdDataError(f"{type(model).__name__}.predict_proba gives {part.shape[1]} "
                             f"columns for classes {seen.tolist()}; expected codes 0..{k - 1}")
    proba = np.zeros((part.shape[0], k))
    proba[:, seen.astype(np.int64)] = part              # a class the fold lacked: 0
    return proba


def out_of_fold(model_fn: Callable[[], Any], x: Any, labels: Any, n_splits: int = 5, *,
                random_state: Optional[int] = 0, classes: Optional[Sequence] = None,
                label_model: Any = "majority_vote", one_hot: Optional[bool] = None,
                fit_kwargs: Optional[Dict[str, Any]] = None, min_probability: float = 1e-6,
                return_folds: bool = False) -> Any:
    """Out-of-fold class probabilities (I, K) of every item from a fresh model per fold.

    Args:
        model_fn: ``model_fn()`` returns a fresh, unfitted classifier: a scikit-learn-style
            estimator (``fit``/``predict_proba``/``classes_``; an estimator instance is
            cloned instead) or a compiled Keras model whose ``predict`` gives K soft-max
            probabilities.
        x: features of the I items (array, scipy sparse matrix, ``pandas.DataFrame`` or a
            dict of arrays), rows in item order; with ``labels`` :class:`Annotations` or a
            fitted label model, a frame indexed by their item ids is aligned by id (any row
            order; the result follows ``item_ids``).
        labels: the training targets per item (codes ``0..K-1``, names, -1/NaN for none), a
            fitted label model, or :class:`Annotations` (fitted with ``label_model``; items
            without any annotation nor gold label are predicted, not trained on). A Series
            indexed by the ids of a frame ``x`` in another order is aligned with its rows.
        n_splits: folds (at least 2); stratified by label, seeded by ``random_state``
            (the folds only: a model's own randomness, a Keras network's initial weights
            and shuffling, is seeded by ``model_fn``, e.g. ``keras.utils.set_random_seed``
            inside it, or a scikit-learn model's ``random_state``).
        classes: the classes in column order (default: from ``labels``; with ``labels``
            the Annotations or a label model, their classes, and others raise
            ``CrowdDataError``).
        one_hot: Keras targets one-hot (True) or class codes (False); default: codes when
            the model's loss names ``sparse``, else one-hot.
        fit_kwargs: extra arguments of every ``fit`` (Keras: ``epochs``, ``batch_size``, ...).
            ``sample_weight`` is per item: an array with one weight per row of ``x`` (or a
            Series indexed like a frame ``x``, or by item id beside an array ``x`` and
            ``labels`` that name the items), of which each fold's fit gets its training
            rows.
        min_probability: each probability is at least this, rows renormalised (a classifier's
            0 is never certain).
        return_folds: also return the (I,) fold of each item.

    Returns:
        (I, K) float64 probabilities, rows summing to 1, columns in class order (a class
        missing from a fold's training items gets 0 there, then ``min_probability``);
        with ``return_folds``, ``(probabilities, folds)``.
    """
    n = _n_rows(x)
    given, x = x, by_item_id(x, labels)
    labels = _labels_by_index(labels, x)
    n_splits = check_count(n_splits, "n_splits", 2)
    if fit_kwargs is not None and not isinstance(fit_kwargs, dict):
        raise TypeError(f"fit_kwargs must be a dict of fit()'s arguments, got "
                        f"{type(fit_kwargs).__name__}")
    fit_kwargs = dict(fit_kwargs or {})
    weights = fit_kwargs.pop("sample_weight", None)
    if weights is not None:
        weights = _sample_weights(weights, given, x, n, labels)
    codes, classes = training_labels(labels, n, classes, label_model)
    if len(codes) != n:
        raise CrowdDataError(f"labels are for {len(codes)} items, x has {n}")
    k = len(classes)
    # below 1/K: a floor of 1/K or more would make every row uniform
    min_probability = check_number(min_probability, "min_probability", 0.0, 1.0 / k,
                                   high_inclusive=False)
    folds = stratified_folds(codes, n_splits, random_state)
    proba = np.zeros((n, k))
    for fold in range(n_splits):
        test = folds == fold
        train = ~test & (codes >= 0)
        if not test.any():
            continue
        if not train.any():
            raise CrowdDataError(f"fold {fold} has no labelled training item")
        model = _new_model(model_fn)
        kwargs = dict(fit_kwargs)
        if weights is not None:
            kwargs["sample_weight"] = weights[train]
        proba[test] = _fold_probabilities(model, _take(x, np.flatnonzero(train)), codes[train],
                                          _take(x, np.flatnonzero(test)), k, one_hot, kwargs)
    if not np.isfinite(proba).all() or (proba < 0).any():
        raise CrowdDataError("the classifier's probabilities have NaN, infinite or negative "
                             "values")
    proba = np.maximum(proba, min_probability)
    proba /= proba.sum(axis=1, keepdims=True)
    return (proba, folds) if return_folds else proba
