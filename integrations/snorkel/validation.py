"""Argument checks of the Snorkel adapter: the same exception types as Snorkel 0.10's
``LabelModel`` for every argument it accepts, with messages that say what and where.

Snorkel's messages are kept word for word where code may match them (``"L_train has
cardinality"``, ``"Unrecognized optimizer option"``, ``"prec_init must have shape"``, ...);
ours add the position or the allowed values. Bad label matrices and class balances raise
:class:`crowd_keras.CrowdDataError`, a ``ValueError`` as Snorkel's.
"""
from __future__ import annotations

import numbers
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from crowd_keras.codes import as_matrix, label_matrix_problem, numeric_matrix
from crowd_keras.errors import CrowdDataError

__all__ = ["check_label_matrix", "check_class_balance", "check_gold_labels", "check_dev_set",
           "check_train_config", "TRAIN_DEFAULTS", "UnexpectedArgumentError"]


class UnexpectedArgumentError(TypeError, ValueError):
    """An argument ``fit`` does not know: a ``TypeError`` as Python's, a ``ValueError`` as
    Snorkel's (its ``merge_config`` raises ``ValueError: Got unexpected field names``)."""


# Snorkel 0.10's TrainConfig (labeling/model/label_model.py) and its nested configs
# (utils/optimizers.py, utils/lr_schedulers.py): field names and defaults.
TRAIN_DEFAULTS: Dict[str, Any] = {
    "n_epochs": 100, "lr": 0.01, "l2": 0.0, "optimizer": "sgd", "optimizer_config": None,
    "lr_scheduler": "constant", "lr_scheduler_config": None, "prec_init": 0.7, "seed": None,
    "log_freq": 10, "mu_eps": None,
}
_OPTIMIZERS = ("sgd", "adam", "adamax")
_SCHEDULERS = ("constant", "linear", "exponential", "step")
_OPTIMIZER_FIELDS = {"sgd_config": {"momentum"}, "adam_config": {"amsgrad", "betas"},
                     "adamax_config": {"betas", "eps"}}
_SCHEDULER_FIELDS = {"warmup_steps": None, "warmup_unit": None, "warmup_percentage": None,
                     "min_lr": None, "exponential_config": {"gamma"},
                     "step_config": {"gamma", "step_size"}}


# ----------------------------------------------------------------------------- label matrix
def check_label_matrix(L: Any, cardinality: int, name: str = "L",
                       n_functions: Optional[int] = None) -> np.ndarray:
    """Validate a Snorkel label matrix and return it as an int64 array (data points × functions).

    Raises :class:`crowd_keras.CrowdDataError` naming the row and column of the first bad
    entry: NaN or inf, a non-integer, a value below -1 or ≥ ``cardinality``; or a wrong
    shape (not 2-d, no functions, a number of functions other than ``n_functions``). The
    entries are checked by :func:`crowd_keras.codes.label_matrix_problem`, the check of
    ``Annotations.from_label_matrix``; this function words the error in Snorkel's terms.
    An int64 array is returned as is (no copy).
    """
    if hasattr(L, "toarray") and not isinstance(L, np.ndarray):
        raise CrowdDataError(f"{name} is a sparse matrix: pass a dense array (sparse zeros would "
                             "read as votes for class 0; abstain is -1)")
    arr = as_matrix(L, name)  # ragged rows: located, not numpy's "inhomogeneous shape"
    if arr.ndim != 2:
        hint = " (one function: L.reshape(-1, 1))" if arr.ndim == 1 else ""
        raise CrowdDataError(f"{name} must be 2-d (data points × labeling functions), got shape "
                             f"{arr.shape}{hint}")
    if arr.shape[1] == 0:
        raise CrowdDataError(f"{name} has no labeling functions (shape {arr.shape})")
    if n_functions is not None and arr.shape[1] != n_functions:
        raise CrowdDataError(f"{name} has {arr.shape[1]} labeling functions but the model was "
                             f"fitted with {n_functions}")
    if arr.dtype.kind == "O":  # e.g. a frame with mixed columns: a non-number is located
        arr = numeric_matrix(arr, name)
    if arr.dtype.kind not in "iuf":
        what = "non-numeric values" if arr.dtype.kind in "OUS" else f"dtype {arr.dtype}"
        raise CrowdDataError(f"{name} must hold integer labels (-1 = abstain), got {what}")
    bad = label_matrix_problem(arr, int(cardinality))
    if bad is not None:
        reason, r, c, value = bad
        if reason in ("nan", "inf"):
            raise CrowdDataError(f"{name} has {value} at row {r}, column {c}; "
                                 "Snorkel marks an abstain with -1")
        if reason == "fraction":
            raise CrowdDataError(f"{name} has the non-integer value {value} at row {r}, column "
                                 f"{c}; labels are 0..{cardinality - 1}, -1 = abstain")
        # an integer exactly (2**40, not 1.09951e+12), a float as written (1e+20)
        value = value if isinstance(value, int) else f"{value:g}"
        if reason == "below":
            raise CrowdDataError(f"{name} has {value} at row {r}, column {c}: below -1 (abstain)")
        if arr.dtype.kind == "u" and value == np.iinfo(arr.dtype).max:
            # Snorkel's L + 1 wraps this back to abstain; read as a label it is out of range
            raise CrowdDataError(
                f"{name} has dtype {arr.dtype}, which cannot hold -1 (abstain): {value} at row "
                f"{r}, column {c} is likely a -1 wrapped around. Pass a signed array (e.g. "
                f"{name}.astype(np.int{arr.dtype.itemsize * 8}) turns it back into -1)")
        top = np.max(arr).item() + 1
        top = top if isinstance(top, int) else f"{top:g}"
        raise CrowdDataError(f"{name} has cardinality {top}, cardinality={cardinality} "
                             f"passed in: {value} at row {r}, column {c} but cardinality="
                             f"{cardinality} (labels 0..{cardinality - 1}, -1 = abstain)")
    return arr.astype(np.int64, copy=False)


# ----------------------------------------------------------------------------- class balance
def check_class_balance(class_balance: Any, Y_dev: Any, cardinality: int) -> Optional[np.ndarray]:
    """The class balance from ``class_balance`` or the gold ``Y_dev`` (Snorkel's precedence).

    As Snorkel: a ``class_balance`` whose length is not ``cardinality``, a ``Y_dev`` that does
    not hold every class, and a zero prior raise ``ValueError``. Stricter than Snorkel: a
    ``class_balance`` must be finite, non-negative and sum to 1 (Snorkel uses an unnormalized
    one as given), and ``Y_dev`` must hold integer labels ``0..cardinality-1`` (Snorkel
    counts -1 as a class). Returns None when neither is given (uniform, as Snorkel).
    """
    k = int(cardinality)
    if class_balance is not None:
        if isinstance(class_balance, (str, bytes)):
            raise CrowdDataError(f"class_balance must be {k} numbers (a list or an array), got "
                                 f"the string {class_balance!r}")
        try:
            p = np.asarray(class_balance, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise CrowdDataError(f"class_balance must be {k} numbers (a list or an array), got "
                                 f"{class_balance!r}") from None
        if len(p) != k:
            raise CrowdDataError(f"class_balance has {len(p)} entries. Does not match LabelModel "
                                 f"cardinality {k}.")
        if not np.isfinite(p).all() or (p < 0).any() or not np.isclose(p.sum(), 1.0):
            raise CrowdDataError(f"class_balance must be {k} non-negative numbers summing to 1, "
                                 f"got {class_balance!r}")
    elif Y_dev is not None:
        y = check_gold_labels(Y_dev, k)
        counts = np.bincount(y, minlength=k)
        present = int((counts > 0).sum())
        if present != k:
            raise CrowdDataError(f"Y_dev has {present} class(es). Does not match LabelModel "
                                 f"cardinality {k}.")
        p = counts / len(y)
    else:
        return None
    zero = np.flatnonzero(p == 0)
    if len(zero):
        raise CrowdDataError(f"Class balance prior is 0 for class(es) {zero.tolist()}.")
    return p


def check_gold_labels(Y_dev: Any, cardinality: int, name: str = "Y_dev",
                      allow_missing: bool = False) -> np.ndarray:
    """``Y_dev`` as an int64 array of class labels ``0..cardinality-1`` (integral floats
    accepted, and booleans as 0/1 as Snorkel reads them; with ``allow_missing``, -1 too: a row
    without gold, as ``score``'s ``Y``); an
    empty array, a matrix, another dtype or a label outside the range raises
    :class:`crowd_keras.CrowdDataError` naming the position and the value."""
    k = int(cardinality)
    y = np.asarray(Y_dev)
    if y.ndim > 1 and not (y.ndim == 2 and y.shape[1] == 1):
        raise CrowdDataError(f"{name} must be one label per data point, got shape {y.shape}")
    if y.ndim == 0:   # ravel made it one data point's label (Snorkel: 'not iterable')
        raise CrowdDataError(f"{name} must be one label per data point (an array or a list), "
                             f"got the scalar {y.item()!r}")
    y = y.ravel()
    if len(y) == 0:
        raise CrowdDataError(f"{name} is empty")
    if y.dtype.kind == "b":   # e.g. df.label == "spam": False/True are classes 0/1
        y = y.astype(np.int64)
    if y.dtype.kind == "f" and np.isfinite(y).all() and (y == np.round(y)).all():
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu":
        bad = ""
        if y.dtype.kind == "f":
            i = int(np.argmax(~np.isfinite(y) | (y != np.round(y))))
            bad = f" ({y[i].item()!r} at position {i})"
        raise CrowdDataError(f"{name} must hold integer labels 0..{k - 1}, got dtype "
                             f"{y.dtype}{bad}")
    low = -1 if allow_missing else 0
    outside = (y < low) | (y >= k)
    if outside.any():
        i = int(np.argmax(outside))
        raise CrowdDataError(f"{name} has {y[i]} at position {i}; labels are 0..{k - 1}" +
                             (", -1 = no gold label" if allow_missing else
                              " (leave out the data points without a gold label)"))
    if allow_missing and (y == -1).all():
        raise CrowdDataError(f"{name} has no gold label: every entry is -1")
    return y.astype(np.int64)


def check_dev_set(L_dev: Any, Y_dev: Any, cardinality: int,
                  n_functions: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """The dev split ``(L_dev (n_dev, m) int64, Y_dev (n_dev,) int64)``, or None without
    ``L_dev``.

    ``L_dev`` is checked as ``L_train`` is (:func:`check_label_matrix`, the same ``m``
    functions); ``Y_dev`` must give one label ``0..cardinality-1`` per row of ``L_dev``.
    ``L_dev`` without ``Y_dev``, or lengths that differ, raise
    :class:`crowd_keras.CrowdDataError`.
    """
    if L_dev is None:
        return None
    if Y_dev is None:
        raise CrowdDataError("L_dev needs Y_dev: the gold label of each row of L_dev (without "
                             "Y_dev, L_dev says nothing L_train does not)")
    shape = np.shape(L_dev)
    if len(shape) == 2 and shape[1] != n_functions:
        raise CrowdDataError(f"L_dev has {shape[1]} labeling functions but L_train has "
                             f"{n_functions}: the dev rows need the same functions")
    L = check_label_matrix(L_dev, cardinality, name="L_dev", n_functions=n_functions)
    y = check_gold_labels(Y_dev, cardinality)
    if len(y) != L.shape[0]:
        raise CrowdDataError(f"Y_dev has {len(y)} labels but L_dev has {L.shape[0]} rows: give "
                             "one gold label per row of L_dev")
    return L, y


# ----------------------------------------------------------------------------- train config
def _number(name: str, value: Any, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not np.isfinite(value) or value < low:
        raise ValueError(f"{name} must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def _integer(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return int(value)


def _sub_config(name: str, value: Any, fields: Mapping[str, Any]) -> Dict[str, Any]:
    """A nested Snorkel config given as a dict (or Snorkel's NamedTuple): known fields only."""
    if value is None:
        return {}
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    unknown = sorted(set(value) - set(fields))
    if unknown:  # Snorkel's merge_config -> NamedTuple._replace
        raise ValueError(f"Got unexpected field names: {unknown!r} in {name}; known: "
                         f"{sorted(fields)}")
    for key, inner in fields.items():
        if inner is not None and key in value:
            _sub_config(f"{name}[{key!r}]", value[key], dict.fromkeys(inner))
    return dict(value)


def _check_optimizer(name: str, config: Any) -> None:
    """The settings torch checks when Snorkel builds optimizer ``name`` from ``config`` (its
    ``{name}_config``, a dict or Snorkel's NamedTuple; the other optimizers' are unused):
    ``momentum`` >= 0, ``betas`` two numbers in [0, 1), ``eps`` >= 0, torch's words."""
    config = _sub_config(f"{name}_config", config,
                         dict.fromkeys(_OPTIMIZER_FIELDS[f"{name}_config"]))
    if "momentum" in config and _number("momentum", config["momentum"], -np.inf) < 0:
        raise ValueError(f"Invalid momentum value: {config['momentum']!r}")
    if "eps" in config and _number("eps", config["eps"], -np.inf) < 0:
        raise ValueError(f"Invalid epsilon value: {config['eps']!r}")
    if "betas" in config:
        betas = config["betas"]
        if isinstance(betas, (str, bytes)) or np.ndim(betas) != 1 or len(betas) != 2:
            raise TypeError(f"betas must be two numbers, got {betas!r}")
        for i, beta in enumerate(betas):
            if not 0.0 <= _number(f"betas[{i}]", beta, -np.inf) < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta!r}")


def check_train_config(config: Dict[str, Any], n_functions: Optional[int] = None) -> Dict[str, Any]:
    """Validate Snorkel's ``fit(**kwargs)`` train settings; returns them with defaults filled.

    Unknown names raise :class:`UnexpectedArgumentError` (a ``TypeError`` and a ``ValueError``).
    The rest as Snorkel: ``optimizer`` and ``lr_scheduler`` names (``ValueError:
    Unrecognized ... option``), ``lr_scheduler_config`` warm-up (``ValueError``, only
    ``warmup_unit="epochs"``), ``prec_init`` (a number, or one per labeling function:
    ``TypeError`` for another type, ``ValueError: prec_init must have shape m.``), nested
    config fields (``ValueError: Got unexpected field names``), the chosen optimizer's
    ``momentum``, ``betas`` and ``eps`` (as torch checks them) and ``seed`` (an integer
    ``0..2**32-1``, as NumPy's global seed takes). Numbers Snorkel hands to torch
    (``lr``, ``l2``) are checked as torch does (``ValueError`` when negative). ``prec_init`` is
    checked only when ``n_functions`` is given.
    """
    unknown = sorted(set(config) - set(TRAIN_DEFAULTS))
    if unknown:
        raise UnexpectedArgumentError(
            f"fit() got unexpected keyword argument(s) {unknown}; Snorkel's train settings are "
            f"{sorted(TRAIN_DEFAULTS)} (ValueError in Snorkel: Got unexpected field names)")
    out = {**TRAIN_DEFAULTS, **{key: v for key, v in config.items() if v is not None
                                or key in ("mu_eps", "seed")}}
    out["n_epochs"] = _integer("n_epochs", out["n_epochs"], 0)
    out["lr"] = _number("lr", out["lr"])
    if np.ndim(out["l2"]) == 0:
        _number("l2", out["l2"])
    else:
        l2 = np.asarray(out["l2"], dtype=np.float64)
        if not np.isfinite(l2).all() or (l2 < 0).any():
            raise ValueError(f"l2 must be finite and >= 0, got {out['l2']!r}")
    if out["optimizer"] not in _OPTIMIZERS:
        raise ValueError(f"Unrecognized optimizer option '{out['optimizer']}' (one of "
                         f"{list(_OPTIMIZERS)})")
    optimizer = _sub_config("optimizer_config", out["optimizer_config"], _OPTIMIZER_FIELDS)
    _check_optimizer(out["optimizer"], optimizer.get(f"{out['optimizer']}_config"))
    if out["lr_scheduler"] not in _SCHEDULERS:
        raise ValueError(f"Unrecognized lr scheduler option '{out['lr_scheduler']}' (one of "
                         f"{list(_SCHEDULERS)})")
    sched = _sub_config("lr_scheduler_config", out["lr_scheduler_config"], _SCHEDULER_FIELDS)
    warmup = sched.get("warmup_steps", 0)
    if warmup:
        if _number("warmup_steps", warmup, low=-np.inf) < 0:
            raise ValueError("warmup_steps much greater or equal than 0.")
        if sched.get("warmup_unit", "batches") != "epochs":
            raise ValueError("LabelModel does not support any warmup_unit other than 'epochs'.")
    if out["seed"] is not None and _integer("seed", out["seed"], 0) > 2 ** 32 - 1:
        # Snorkel seeds NumPy's global generator with it, which takes 32 bits
        raise ValueError(f"Seed must be between 0 and 2**32 - 1, got {out['seed']!r}")
    out["log_freq"] = _integer("log_freq", out["log_freq"], 1)
    if out["mu_eps"] is not None:
        eps = _number("mu_eps", out["mu_eps"])
        if eps >= 0.5:
            raise ValueError(f"mu_eps must be in [0, 0.5): the conditional probabilities are "
                             f"restricted to [mu_eps, 1 - mu_eps], got {eps!r}")
    prec = out["prec_init"]
    if n_functions is not None:
        if isinstance(prec, numbers.Real):
            pass
        elif isinstance(prec, (list, np.ndarray)) or type(prec).__name__ == "Tensor":
            shape = np.shape(np.asarray(prec, dtype=np.float64) if not hasattr(prec, "shape")
                             else prec)
            if len(shape) == 0 or shape[0] != n_functions:
                raise ValueError(f"prec_init must have shape {n_functions}.")
        else:
            raise TypeError(f"prec_init is of type {type(prec)} which is not supported "
                            "currently.")
    return out
