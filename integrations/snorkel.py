"""A drop-in replacement for Snorkel's ``LabelModel`` backed by the label models of crowd-keras.

Snorkel users apply labeling functions to get a label matrix ``L`` (data points × functions,
-1 = abstain) and fit a label model to it. :class:`CrowdLabelModel` has the surface of
``snorkel.labeling.model.LabelModel`` (``fit``, ``predict``, ``predict_proba``, ``score``,
``get_weights``, ``get_conditional_probs``, ``save``, ``load``) with the same argument names
and defaults, and any label model of the library behind it (``method=``)::

    from crowd_keras.integrations.snorkel import CrowdLabelModel
    label_model = CrowdLabelModel(cardinality=2)          # was: LabelModel(cardinality=2)
    label_model.fit(L_train, n_epochs=500, seed=123)
    probs_train = label_model.predict_proba(L_train)
    df_train_filtered, probs_filtered = filter_unlabeled_dataframe(df_train, probs_train, L_train)

It needs only ``L`` and numpy: Snorkel itself is not imported. :func:`lf_quality` is
``LFAnalysis.lf_summary`` with an estimated accuracy and confusion matrix per function, no gold
labels needed.

Conventions (documented results for unusual ``L``):

- ``L`` holds integers in ``-1..cardinality-1``; floats are accepted when integral, anything
  else (NaN, inf, 0.5, -2, a value ≥ cardinality, a 1-d or 3-d array, strings) raises
  :class:`crowd_keras.CrowdDataError` naming the row and column.
- Rows where every function abstains keep their place: ``predict_proba`` returns one row per
  row of ``L``. For labeling functions (the default model's labeling-function regime, and
  ``method="majority_vote"``) they get the class balance: uniform unless ``class_balance`` or
  ``Y_dev`` was given, so ``tie_break_policy`` decides them, as in Snorkel. In the crowd
  regime they get the learned class prior.
- A function that never votes has no influence on the predictions; its weight is NaN.
"""
from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from crowd_keras.annotations import Annotations
from crowd_keras.aggregation import (AbstainAwareDawidSkene, LabelModel, MajorityVote,
                                     available_label_models, get_label_model)
from crowd_keras.errors import CrowdDataError

__all__ = ["CrowdLabelModel", "lf_quality", "check_label_matrix", "probs_to_preds",
           "register_method", "available_methods"]

# ``method`` names of CrowdLabelModel that differ from the library registry: on label
# matrices "dawid_skene" is the abstain-aware model (plain Dawid-Skene in the crowd regime).
_METHODS: Dict[str, Callable[..., LabelModel]] = {
    "dawid_skene": AbstainAwareDawidSkene,
    "ds": AbstainAwareDawidSkene,
    "majority_vote": lambda **kw: MajorityVote(**{"tie_break": "uniform", **kw}),
    "mv": lambda **kw: MajorityVote(**{"tie_break": "uniform", **kw}),
}

# fit() arguments of Snorkel's LabelModel and the constructor arguments they set when the
# chosen label model has one of these names (first match wins).
_TRAIN_ARGS = {
    "n_epochs": ("max_iter", "epochs", "n_epochs"),
    "lr": ("lr", "learning_rate"),
    "seed": ("seed", "random_state"),
    "progress_bar": ("progress", "progress_bar"),
}
# The rest of Snorkel's TrainConfig: accepted for drop-in use, passed on when the label model
# takes an argument of that name, otherwise without effect (EM models have no optimizer).
_SNORKEL_ONLY = ("l2", "optimizer", "optimizer_config", "lr_scheduler", "lr_scheduler_config",
                 "prec_init", "log_freq", "mu_eps")
_TIE_POLICIES = ("abstain", "random", "true-random")
_FORMAT = "crowd-keras/snorkel-label-model"


def register_method(name: str, factory: Callable[..., LabelModel]) -> None:
    """Make ``CrowdLabelModel(method=name, **kwargs)`` build its model as ``factory(**kwargs)``.

    The factory returns a :class:`crowd_keras.aggregation.LabelModel`. Methods registered in
    the library with :func:`crowd_keras.aggregation.register_label_model` are found without
    this; use it to override a name for label matrices only. A model whose ``fit`` and
    ``predict_proba`` take a ``features`` argument receives ``CrowdLabelModel.fit(...,
    features=X)`` (items × features).
    """
    _METHODS[name.lower().replace("-", "_")] = factory


def available_methods() -> List[str]:
    """Names accepted by ``CrowdLabelModel(method=...)``."""
    return sorted(set(_METHODS) | set(available_label_models()))


def _build(method: str, kwargs: Dict[str, Any]) -> LabelModel:
    key = method.lower().replace("-", "_")
    if key in _METHODS:
        return _METHODS[key](**kwargs)
    if key in available_label_models():
        return get_label_model(key, **kwargs)
    raise ValueError(f"unknown method {method!r}; available: {available_methods()}")


def _takes(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


# ---------------------------------------------------------------------------- validation
def check_label_matrix(L: Any, cardinality: int, name: str = "L",
                       n_functions: Optional[int] = None) -> np.ndarray:
    """Validate a Snorkel label matrix and return it as int64 (data points × functions).

    Raises :class:`crowd_keras.CrowdDataError` naming the row and column of the first bad
    entry: NaN or inf, a non-integer, a value below -1 or ≥ ``cardinality``; or a wrong
    shape (not 2-d, no functions, a number of functions other than ``n_functions``).
    """
    if hasattr(L, "toarray") and not isinstance(L, np.ndarray):
        raise CrowdDataError(f"{name} is a sparse matrix: pass a dense array (sparse zeros would "
                             "read as votes for class 0; abstain is -1)")
    arr = L.to_numpy() if isinstance(L, (pd.DataFrame, pd.Series)) else np.asarray(L)
    if arr.ndim != 2:
        hint = " (one function: L.reshape(-1, 1))" if arr.ndim == 1 else ""
        raise CrowdDataError(f"{name} must be 2-d (data points × labeling functions), got shape "
                             f"{arr.shape}{hint}")
    if arr.shape[1] == 0:
        raise CrowdDataError(f"{name} has no labeling functions (shape {arr.shape})")
    if n_functions is not None and arr.shape[1] != n_functions:
        raise CrowdDataError(f"{name} has {arr.shape[1]} labeling functions but the model was "
                             f"fitted with {n_functions}")
    if arr.dtype.kind == "O":  # e.g. a frame with mixed columns
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            pass
    if arr.dtype.kind not in "iuf":
        what = "non-numeric values" if arr.dtype.kind in "OUS" else f"dtype {arr.dtype}"
        raise CrowdDataError(f"{name} must hold integer labels (-1 = abstain), got {what}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise CrowdDataError(f"{name} has {float(arr[r, c])} at row {r}, column {c}; "
                                 "Snorkel marks an abstain with -1")
        frac = arr != np.round(arr)
        if frac.any():
            r, c = np.argwhere(frac)[0]
            raise CrowdDataError(f"{name} has the non-integer value {float(arr[r, c])} at row "
                                 f"{r}, column {c}; labels are 0..{cardinality - 1}, -1 = abstain")
    low = arr < -1
    if low.any():
        r, c = np.argwhere(low)[0]
        raise CrowdDataError(f"{name} has {arr[r, c]:g} at row {r}, column {c}: below -1 (abstain)")
    high = arr >= cardinality
    if high.any():
        r, c = np.argwhere(high)[0]
        raise CrowdDataError(f"{name} has {arr[r, c]:g} at row {r}, column {c} but cardinality="
                             f"{cardinality}: labels must be 0..{cardinality - 1} (-1 = abstain)")
    out = arr.astype(np.int64)
    return out


def _annotations(L: np.ndarray, cardinality: int) -> Annotations:
    """A validated label matrix as `Annotations` (function j = annotator j, class c = code c)."""
    rows, cols = np.nonzero(L >= 0)
    return Annotations(rows, cols, L[rows, cols], item_ids=np.arange(L.shape[0]),
                       annotator_ids=np.arange(L.shape[1]), classes=np.arange(cardinality))


def _check_balance(class_balance: Any, Y_dev: Any, cardinality: int) -> Optional[np.ndarray]:
    """Class balance from ``class_balance`` or the gold ``Y_dev`` (Snorkel's precedence)."""
    if class_balance is not None:
        p = np.asarray(class_balance, dtype=np.float64)
        if p.shape != (cardinality,) or not np.isfinite(p).all() or (p < 0).any() \
                or not np.isclose(p.sum(), 1.0):
            raise CrowdDataError(f"class_balance must be {cardinality} non-negative numbers "
                                 f"summing to 1, got {class_balance!r}")
        return p
    if Y_dev is None:
        return None
    y = np.asarray(Y_dev).ravel()
    if y.dtype.kind not in "iu" or (y < 0).any() or (y >= cardinality).any():
        raise CrowdDataError(f"Y_dev must hold integer labels 0..{cardinality - 1}")
    if len(y) == 0:
        raise CrowdDataError("Y_dev is empty")
    return np.bincount(y, minlength=cardinality) / len(y)


# ---------------------------------------------------------------------------- predictions
def _snorkel_hash(i: int) -> int:
    """Snorkel's deterministic hash for tie-breaking (``snorkel.utils.core._hash``)."""
    return int(hashlib.sha1(str(i).encode("utf-8")).hexdigest(), 16)


def probs_to_preds(probs: np.ndarray, tie_break_policy: str = "random", tol: float = 1e-5,
                   seed: Optional[int] = None) -> np.ndarray:
    """Class per row of ``probs`` (n, k); ties within ``tol`` as in Snorkel's ``probs_to_preds``.

    ``"abstain"``: -1; ``"random"``: Snorkel's deterministic choice (a hash of the row index),
    so a tie resolves as it would in Snorkel; ``"true-random"``: a random choice (``seed``).
    """
    if tie_break_policy not in _TIE_POLICIES:
        raise ValueError(f"tie_break_policy={tie_break_policy!r} not recognized; use one of "
                         f"{_TIE_POLICIES}")
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


def _score(golds: np.ndarray, preds: np.ndarray, probs: np.ndarray,
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


# ---------------------------------------------------------------------------- the model
class CrowdLabelModel:
    """Snorkel's ``LabelModel`` surface over any label model of crowd-keras.

    Args:
        cardinality: number of classes ``k``; ``L`` holds ``-1..k-1``.
        method: a name of :func:`available_methods`: ``"dawid_skene"`` (default: the
            abstain-aware Dawid-Skene, :class:`crowd_keras.aggregation.AbstainAwareDawidSkene`,
            never below majority vote on the benchmark sets), ``"majority_vote"`` (Snorkel's
            ``MajorityLabelVoter``), or any label model registered in the library
            (feature-aware models take ``fit(..., features=X)``).
        verbose, device: accepted for drop-in use (Snorkel's constructor); no effect.
        **method_kwargs: constructor arguments of the label model (e.g. ``smoothing=0.1``).

    Fitted attributes: ``label_model_`` (the crowd-keras model), ``n_functions_``,
    ``class_balance_`` (given or None), ``weights_`` and ``conditional_probs_``.
    """

    def __init__(self, cardinality: int = 2, method: str = "dawid_skene", verbose: bool = False,
                 device: str = "cpu", **method_kwargs: Any) -> None:
        self.cardinality = cardinality
        self.method = method
        self.verbose = verbose
        self.device = device
        self.method_kwargs = method_kwargs

    # --------------------------------------------------------------------- fitting
    def fit(self, L_train: Any, Y_dev: Any = None, class_balance: Any = None,
            progress_bar: bool = True, *, features: Any = None, n_epochs: Optional[int] = None,
            lr: Optional[float] = None, seed: Optional[int] = None,
            **train_config: Any) -> "CrowdLabelModel":
        """Fit the label model to ``L_train`` (n × m, -1 = abstain). Returns self.

        Args:
            Y_dev: gold labels of some data points, used only for the class balance (Snorkel).
            class_balance: (cardinality,) class proportions; fixes the model's class prior.
            progress_bar: show a progress bar over EM iterations / epochs.
            features: (n, d) item features for feature-aware methods (end to end).
            n_epochs: maximum EM iterations (or epochs); default the model's own (100).
            lr, seed: learning rate and seed of gradient-trained or randomized methods.
            **train_config: the rest of Snorkel's train config (``l2``, ``optimizer``,
                ``log_freq``, ``prec_init``, ``mu_eps``, ...): used by a model that takes an
                argument of that name, otherwise accepted without effect.
        """
        unknown = sorted(set(train_config) - set(_SNORKEL_ONLY))
        if unknown:
            raise TypeError(f"fit() got unexpected keyword argument(s) {unknown}")
        if not isinstance(self.cardinality, (int, np.integer)) or self.cardinality < 2:
            raise ValueError(f"cardinality must be an integer >= 2, got {self.cardinality!r}")
        k = int(self.cardinality)
        L = check_label_matrix(L_train, k, name="L_train")
        if L.shape[0] == 0:
            raise CrowdDataError("L_train has no data points")
        if not (L >= 0).any():
            raise CrowdDataError("L_train has no votes: every entry is -1 (abstain)")
        balance = _check_balance(class_balance, Y_dev, k)

        model = self._new_model(balance, {"n_epochs": n_epochs, "lr": lr, "seed": seed,
                                          "progress_bar": progress_bar, **train_config})
        ann = _annotations(L, k)
        if features is not None:
            model.fit(ann, features=self._check_features(model, features, L.shape[0]))
        else:
            model.fit(ann)
        self.label_model_ = model
        self.n_functions_ = L.shape[1]
        self.class_balance_ = balance
        self._summarize(L, self._finish(model.predict_proba(), L))
        return self

    def _new_model(self, balance: Optional[np.ndarray], train: Dict[str, Any]) -> LabelModel:
        kwargs = dict(self.method_kwargs)
        probe = _build(self.method, dict(kwargs))
        init = type(probe).__init__
        for arg, value in train.items():
            if value is None:
                continue
            for target in _TRAIN_ARGS.get(arg, (arg,)):
                if _takes(init, target) and target not in kwargs:
                    kwargs[target] = bool(value) if arg == "progress_bar" else value
                    break
        if balance is not None and _takes(init, "class_prior"):
            kwargs["class_prior"] = balance
        return _build(self.method, kwargs)

    @staticmethod
    def _check_features(model: LabelModel, features: Any, n: int) -> np.ndarray:
        if not _takes(model.fit, "features"):
            raise ValueError(f"{type(model).__name__} does not use item features; drop "
                             "features= or pick a feature-aware method")
        X = np.asarray(features)
        if X.ndim < 2 or X.shape[0] != n:
            raise CrowdDataError(f"features must have one row per row of L ({n}), got shape "
                                 f"{X.shape}")
        return X

    def _summarize(self, L: np.ndarray, probs: np.ndarray) -> None:
        """Per-function weights and Snorkel's conditional probability table.

        ``probs``: the model's (n, k) output on the training rows ``L``.
        """
        model = self.label_model_
        k = int(self.cardinality)
        # accuracy of a function = mean posterior of the labels it voted (NaN: never voted)
        rows, cols = np.nonzero(L >= 0)
        n_votes = np.bincount(cols, minlength=L.shape[1])
        agree = np.bincount(cols, weights=probs[rows, L[rows, cols]], minlength=L.shape[1])
        self.weights_ = np.where(n_votes > 0, agree / np.maximum(n_votes, 1), np.nan)
        R = getattr(model, "response_matrices_", None)
        if R is None:  # abstention not modelled: p(abstain | y) is the coverage gap
            coverage = n_votes / L.shape[0]
            R = np.concatenate([coverage[:, None, None] * model.confusion_matrices_,
                                np.broadcast_to((1 - coverage)[:, None, None],
                                                (L.shape[1], k, 1))], axis=2)
        # Snorkel's layout: cprobs[i, j, y] = P(lf_i = j - 1 | Y = y), abstain first
        self.conditional_probs_ = np.concatenate([R[:, :, k:], R[:, :, :k]],
                                                 axis=2).transpose(0, 2, 1).copy()

    def _check_fitted(self) -> None:
        if not hasattr(self, "label_model_"):
            raise RuntimeError("this CrowdLabelModel is not fitted yet; call fit() or load()")

    # --------------------------------------------------------------------- predicting
    def predict_proba(self, L: Any, features: Any = None) -> np.ndarray:
        """(n, cardinality) label distribution per row of ``L``; all-abstain rows stay in place."""
        self._check_fitted()
        k = int(self.cardinality)
        L = check_label_matrix(L, k, n_functions=self.n_functions_)
        if L.shape[0] == 0:
            return np.zeros((0, k))
        model = self.label_model_
        ann = _annotations(L, k)
        if features is not None:
            probs = model.predict_proba(ann, features=self._check_features(model, features,
                                                                             L.shape[0]))
        else:
            probs = model.predict_proba(ann)
        return self._finish(probs, L)

    def _finish(self, probs: np.ndarray, L: np.ndarray) -> np.ndarray:
        """Majority vote as Snorkel's ``MajorityLabelVoter``: a row without votes is a tie
        (or the given class balance), not the vote frequencies of the library's model."""
        if isinstance(self.label_model_, MajorityVote):
            empty = ~(L >= 0).any(axis=1)
            probs = probs.copy()
            k = int(self.cardinality)
            probs[empty] = self.class_balance_ if self.class_balance_ is not None else 1.0 / k
        return probs

    def predict(self, L: Any, return_probs: bool = False, tie_break_policy: str = "abstain",
                features: Any = None) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """Class per row of ``L`` (-1 for a tie under ``tie_break_policy="abstain"``).

        ``tie_break_policy``: ``"abstain"`` (Snorkel's default), ``"random"`` (Snorkel's
        deterministic hash of the row index: a tie resolves exactly as in Snorkel) or
        ``"true-random"``.
        """
        probs = self.predict_proba(L, features=features)
        preds = probs_to_preds(probs, tie_break_policy)
        return (preds, probs) if return_probs else preds

    def score(self, L: Any, Y: Any, metrics: Optional[List[str]] = ["accuracy"],  # noqa: B006
              tie_break_policy: str = "abstain", features: Any = None) -> Dict[str, float]:
        """Metrics of the predictions against gold ``Y``, as Snorkel's ``LabelModel.score``.

        As in Snorkel, rows whose gold label or prediction is -1 are left out of every metric
        but ``coverage``: under ``tie_break_policy="abstain"`` ties are not counted as errors.
        """
        preds, probs = self.predict(L, return_probs=True, tie_break_policy=tie_break_policy,
                                    features=features)
        return _score(np.asarray(Y), preds, probs, metrics or [])

    # --------------------------------------------------------------------- inspecting
    def get_weights(self) -> np.ndarray:
        """(m,) estimated accuracy of each function when it votes (NaN: it never voted).

        The mean, over the function's votes on the training data, of the probability the
        model gives the voted class (Snorkel: accuracy given a vote, from its parameters).
        """
        self._check_fitted()
        return self.weights_.copy()

    def get_conditional_probs(self) -> np.ndarray:
        """(m, cardinality + 1, cardinality): ``[i, j, y] = P(lf_i = j - 1 | Y = y)``.

        Snorkel's layout: ``j = 0`` is abstain. Columns sum to 1.
        """
        self._check_fitted()
        return self.conditional_probs_.copy()

    # --------------------------------------------------------------------- persistence
    def save(self, destination: Union[str, Path]) -> None:
        """Write the fitted model to ``destination`` (a ``.npz`` of arrays plus JSON; no pickle).

        The label model's fitted numeric arrays and plain settings are stored; training-set
        posteriors are not (predict with ``predict_proba(L)``).
        """
        self._check_fitted()
        model = self.label_model_
        arrays: Dict[str, np.ndarray] = {"weights": self.weights_,
                                         "conditional_probs": self.conditional_probs_}
        state: Dict[str, Any] = {}
        for attr, value in vars(model).items():
            if not attr.endswith("_") or attr.startswith("_") or attr in ("annotations_",
                                                                         "posteriors_"):
                continue
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                arrays[f"model/{attr}"] = value
            elif isinstance(value, (str, bool, int, float, type(None), np.integer, np.floating)):
                state[attr] = value.item() if isinstance(value, np.generic) else value
        meta = {"format": _FORMAT, "version": 1, "method": self.method,
                "cardinality": int(self.cardinality), "n_functions": int(self.n_functions_),
                "method_kwargs": self.method_kwargs,
                "model_params": _json_params(model),
                "class_balance": (None if self.class_balance_ is None
                                  else self.class_balance_.tolist()),
                "model_class": type(model).__name__, "model_state": state}
        try:
            meta_json = json.dumps(meta)
        except TypeError as exc:
            raise TypeError(f"cannot save {type(model).__name__}: a setting is not plain JSON "
                            f"({exc})") from None
        with open(destination, "wb") as fh:
            np.savez(fh, __meta__=np.array(meta_json), **arrays)

    def load(self, source: Union[str, Path]) -> "CrowdLabelModel":
        """Load a model written by :meth:`save` into this object (as Snorkel does); returns self."""
        with np.load(source, allow_pickle=False) as npz:
            if "__meta__" not in npz.files:
                raise CrowdDataError(f"{source} is not a saved CrowdLabelModel")
            meta = json.loads(str(npz["__meta__"]))
            arrays = {name: npz[name] for name in npz.files if name != "__meta__"}
        if meta.get("format") != _FORMAT:
            raise CrowdDataError(f"{source} is not a saved CrowdLabelModel")
        self.cardinality = meta["cardinality"]
        self.method = meta["method"]
        self.method_kwargs = meta["method_kwargs"]
        model = _build(self.method, dict(meta["model_params"]))
        for attr, value in meta["model_state"].items():
            setattr(model, attr, value)
        for name, value in arrays.items():
            if name.startswith("model/"):
                setattr(model, name[len("model/"):], value)
        k, m = int(meta["cardinality"]), int(meta["n_functions"])
        # predict_proba(new L) aligns on the function ids and classes of the fitted data
        model.annotations_ = Annotations(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                         np.zeros(0, np.int64), item_ids=[],
                                         annotator_ids=np.arange(m), classes=np.arange(k))
        model.posteriors_ = np.zeros((0, k))
        self.label_model_ = model
        self.n_functions_ = m
        balance = meta["class_balance"]
        self.class_balance_ = None if balance is None else np.asarray(balance)
        self.weights_ = arrays["weights"]
        self.conditional_probs_ = arrays["conditional_probs"]
        return self


def _json_params(model: LabelModel) -> Dict[str, Any]:
    """The model's constructor arguments (the names of ``__init__``), for rebuilding it."""
    out = {}
    for name in inspect.signature(type(model).__init__).parameters:
        if name != "self" and hasattr(model, name):
            value = getattr(model, name)
            out[name] = value.tolist() if isinstance(value, np.ndarray) else value
    return out


# ---------------------------------------------------------------------------- analysis
def lf_quality(L: Any, Y: Any = None, model: Optional[CrowdLabelModel] = None,
               lfs: Optional[Sequence[Any]] = None, cardinality: Optional[int] = None,
               method: str = "dawid_skene") -> pd.DataFrame:
    """Per labeling function: Snorkel's ``lf_summary`` columns plus estimated accuracy.

    Args:
        L: (n, m) label matrix, -1 = abstain.
        Y: optional gold labels (n,) for the empirical columns (``Correct``, ``Incorrect``,
            ``Emp. Acc.``, counted where the function votes and ``Y != -1``).
        model: a fitted :class:`CrowdLabelModel`; default: fit ``CrowdLabelModel(method)``
            to ``L`` (so no gold is needed).
        lfs: the labeling functions (their ``name`` is used) or names, for the index.
        cardinality: number of classes; default the model's, else ``max(L) + 1`` (at least 2).

    Returns:
        DataFrame indexed by function name with ``j``, ``Polarity`` (classes it votes),
        ``Coverage``, ``Overlaps``, ``Conflicts`` (as in Snorkel), ``Est. Acc.`` (the model's
        accuracy of the function when it votes, NaN if it never votes), ``Est. Confusion``
        (nested list, rows = true class, columns = vote then abstain: ``p(response | class)``)
        and, with ``Y``, ``Correct``, ``Incorrect``, ``Emp. Acc.``.
    """
    if cardinality is None:
        if model is not None:
            cardinality = int(model.cardinality)
        else:
            raw = np.asarray(L)
            top = int(np.nanmax(raw)) if raw.size and raw.dtype.kind in "iuf" else 1
            cardinality = max(top + 1, 2)
    k = int(cardinality)
    L = check_label_matrix(L, k, n_functions=None if model is None else model.n_functions_)
    n, m = L.shape
    if model is None:
        model = CrowdLabelModel(cardinality=k, method=method).fit(L, progress_bar=False)
    names = [getattr(f, "name", f) for f in lfs] if lfs is not None else list(range(m))
    if len(names) != m:
        raise CrowdDataError(f"{len(names)} function names for {m} columns of L")
    voted = L >= 0
    n_votes = voted.sum(axis=1)
    counts = np.zeros((n, k))
    rows, cols = np.nonzero(voted)
    np.add.at(counts, (rows, L[rows, cols]), 1.0)
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
    if Y is not None:
        y = np.asarray(Y).ravel()
        if len(y) != n:
            raise CrowdDataError(f"Y has {len(y)} labels but L has {n} rows")
        known = voted & (y >= 0)[:, None]
        correct = (known & (L == y[:, None])).sum(axis=0)
        incorrect = known.sum(axis=0) - correct
        frame["Correct"] = correct
        frame["Incorrect"] = incorrect
        with np.errstate(invalid="ignore", divide="ignore"):
            frame["Emp. Acc."] = correct / (correct + incorrect)
    return frame
