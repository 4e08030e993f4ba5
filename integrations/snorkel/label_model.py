"""`CrowdLabelModel`: Snorkel's ``LabelModel`` surface over the label models of crowd-keras.

About 500 lines because Snorkel's surface is one class (fit, predict, score, weights,
conditional probabilities, save/load); its parts live beside it: validation, metrics, votes,
abstention and the partitioned (Dask) fit.
"""
from __future__ import annotations

import copy
import inspect
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from crowd_keras.aggregation import (LabelModel, MajorityVote, available_label_models,
                                     get_label_model, register_label_model)
from crowd_keras.aggregation.regime import (LABELING_FUNCTION_SHARE, one_class_share)
from crowd_keras.aggregation.registry import LABEL_MODELS
from crowd_keras.annotations import Annotations
from crowd_keras.distributed import is_dask_array
from crowd_keras.errors import CrowdDataError, NotFittedError
from crowd_keras.files import atomic_write_bytes, read_json_text, read_npz
from crowd_keras.params import Params

from .metrics import probs_to_preds, score as _score
from .abstention import abstaining_is_informative
from .validation import (UnexpectedArgumentError, check_class_balance, check_dev_set,
                         check_gold_labels, check_label_matrix, check_train_config)
from .votes import (COVOTE_MISFIT, DEFAULT_METHOD, LABELING_FUNCTION_METHOD,
                    covote_misfit_from, covote_step, function_summary, votes_fixed_by_design)

__all__ = ["CrowdLabelModel", "DEFAULT_METHOD", "LABELING_FUNCTION_METHOD", "register_method",
           "available_methods", "covote_misfit"]


# fit() arguments of Snorkel's LabelModel and the constructor arguments they set when the
# chosen label model has one of these names (first match wins).
_TRAIN_ARGS = {
    "n_epochs": ("max_iter", "epochs", "n_epochs"),
    "lr": ("lr", "learning_rate"),
    "seed": ("seed", "random_state"),
    "progress_bar": ("progress", "progress_bar"),
}
# Snorkel's semantics, set when the label model takes a constructor argument of that name and
# the user did not: a tie of majority votes is split evenly (MajorityLabelVoter); the default
# model keeps voting's one-hot posterior, since a LabelModel predicts wherever a function
# votes (Snorkel #1422) and a calibrated vote's exact ties would be -1 under "abstain".
_SNORKEL_SETTINGS = {"tie_break": "uniform", "vote_posterior": "one_hot"}
_FORMAT = "crowd-keras/snorkel-label-model"
# Fitted attributes save() leaves out: reports (e.g. AutoLabelModel's held-out scores), the
# training data, and label models held inside (saved under their own prefix).
_NOT_STORED = (dict, list, tuple, np.ndarray, pd.DataFrame, pd.Series, Annotations, LabelModel)


def _holds_gold(method: str, kwargs: Dict[str, Any], votes: np.ndarray) -> bool:
    """Whether the fit of ``method`` (a registry name, with ``kwargs``) holds the dev rows at
    their gold class, in memory and on Dask alike: the model takes gold and is not the
    abstain-aware model in its labeling-function regime (decided from the (functions, K)
    ``votes`` as its fit decides), whose dev rows are fitted on their votes alone, as the
    crowd models' labeling-function fallback fits them."""
    model = get_label_model(method, **kwargs)
    if not getattr(model, "accepts_gold", False):
        return False
    if hasattr(model, "resolve_settings"):   # the abstain-aware model picks its regime
        model.resolve_settings(np.asarray(votes))
        return model.regime_ == "crowd"
    return True


def register_method(name: str, factory: Callable[..., LabelModel]) -> None:
    """Make ``CrowdLabelModel(method=name, **kwargs)`` build its model as ``factory(**kwargs)``.

    The same as :func:`crowd_keras.aggregation.register_label_model` (the adapter builds every
    model through the library registry). The factory returns a
    :class:`crowd_keras.aggregation.LabelModel`; one whose ``fit`` and ``predict_proba`` take a
    ``features`` argument receives ``CrowdLabelModel.fit(..., features=X)``.
    """
    register_label_model(name, factory)


def available_methods() -> List[str]:
    """Names accepted by ``CrowdLabelModel(method=...)``: the library's label models."""
    return available_label_models()


def _key(method: str) -> str:
    """The registry's primary name of ``method`` (an alias of ``"auto"`` is ``"auto"``)."""
    if not isinstance(method, str) or method not in LABEL_MODELS:
        raise ValueError(f"unknown method {method!r}; available: {available_methods()}")
    return LABEL_MODELS.primary(method)


def _takes(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


def _constructor_params(name: str) -> Optional[List[str]]:
    """The constructor arguments of the label model registered as ``name``; None: any (a
    factory taking ``**kwargs``)."""
    params = inspect.signature(LABEL_MODELS.resolve(name)).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.name != "self"]


def _passes_on(model_type: type, kwargs: Dict[str, Any], name: str) -> bool:
    """Whether a ``model_type(**kwargs)`` uses the setting ``name`` it takes: a model that hands
    it to an inner model (``TieBrokenVote`` to its ``tie_model``, IBCC by default, which
    takes no class prior) says so with ``takes_setting``; a setting it would not use is an
    error there, so the class balance is then only the answer of rows without a vote."""
    takes = getattr(model_type, "takes_setting", None)
    return takes is None or model_type(**kwargs).takes_setting(name)


def _votes_fixed_by_design(ann: Annotations) -> bool:
    """:func:`.votes.votes_fixed_by_design` of the votes in ``ann``."""
    q = ann.annotations_per_annotator() / max(ann.n_items, 1)
    return votes_fixed_by_design(float(ann.annotations_per_item().var()), q)


def covote_misfit(model: LabelModel, ann: Annotations) -> Optional[float]:
    """Share of the pairwise co-votes of distinct functions that the fitted model misses.

    ``Σ |O - O_model| / Σ O`` over pairs of distinct functions ``a, b`` and votes ``l, l'``,
    with ``O = XᵀX / n`` the observed co-vote rates and ``O_model = Σ_y π_y R_a[y, l]
    R_b[y, l']`` the rates the conditional-independence model implies (``R``: its response
    matrices, ``π``: its class balance): near 0 for conditionally independent functions,
    large for functions written from overlapping keywords. None when the model has no
    response matrices or there are too few co-votes to tell.
    """
    step = covote_step(model, ann.n_annotators, ann.n_classes, ann.n_items)
    if step is None:
        return None
    X = ann.vote_incidence()
    if step > 1:  # an evenly spread sample of rows
        X = X[::step]
    return covote_misfit_from(model, _covotes(X), X.shape[0])


def _covotes(X: Any, chunk: int = 2 ** 22) -> np.ndarray:
    """``XᵀX`` as a dense array: co-votes of every pair of (function, label) columns.

    The sparse product costs about the number of vote pairs in a row, summed over rows;
    with many votes per row, dense float32 products over the columns that hold a vote, in
    blocks of rows, are faster (the counts are integers below 2²⁴: float32 sums them
    exactly).
    """
    per_row = np.diff(X.indptr)
    if float(per_row @ per_row) < 0.5 * X.shape[0] * X.shape[1]:
        return (X.T @ X).toarray()
    used = np.flatnonzero(np.bincount(X.indices, minlength=X.shape[1]))
    out = np.zeros((X.shape[1], X.shape[1]))
    if len(used) == 0:
        return out
    rows = max(1, chunk // X.shape[1])
    block = np.zeros((len(used), len(used)))
    for start in range(0, X.shape[0], rows):   # a few blocks: memory stays bounded
        dense = X[start:start + rows].astype(np.float32).toarray()[:, used]
        block += dense.T @ dense
    out[np.ix_(used, used)] = block
    return out


def _models(model: LabelModel, prefix: str = "model") -> List[Tuple[str, LabelModel]]:
    """The model and the label models it holds (e.g. a delegate), with their save prefixes."""
    out = [(prefix, model)]
    for attr, value in vars(model).items():
        if attr.endswith("_") and isinstance(value, LabelModel):
            out += _models(value, f"{prefix}/{attr}")
    return out


def _check_path(path: Any, name: str, write: bool = False) -> None:
    """A file path for ``save``/``load``: a str or path (an int would be an open file
    descriptor), not a folder."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or pathlib.Path), got "
                        f"{type(path).__name__} {path!r}")
    if os.path.isdir(path):
        raise CrowdDataError(f"{path} is a folder; {'save to' if write else 'load'} a file "
                             "(e.g. label_model.npz)")



def _warn_balance_unused(model: LabelModel, kwargs: Dict[str, Any],
                         balance: Optional[np.ndarray]) -> None:
    """A UserWarning when ``class_balance`` (or ``Y_dev``'s shares) moved only the rows where
    every function abstains: the fitted model has no class prior to fix and decided its
    labels without it (the default choosing majority vote or BWA; GLAD, MACE ...), where
    Snorkel's would have moved every row."""
    if balance is None:
        return
    if "target_prior" in kwargs and hasattr(model, "target_prior_applied_"):
        used = bool(model.target_prior_applied_)
    else:
        used = "class_prior" in kwargs or "target_prior" in kwargs
    if not used:
        name = getattr(model, "chosen_", None) or type(model).__name__
        warnings.warn(f"class_balance (given, or the class shares of Y_dev) did not enter "
                      f"the fitted model, {name}, which has no class prior to fix: it answers "
                      "only the rows where every function abstains; pick a model with one "
                      "(e.g. method='dawid_skene') for Snorkel's behaviour", UserWarning,
                      stacklevel=3)

class CrowdLabelModel:
    """Snorkel's ``LabelModel`` surface over any label model of crowd-keras.

    Args:
        cardinality: number of classes ``k``; ``L`` holds ``-1..k-1``.
        method: a name of :func:`available_methods` (the library registry). Default
            :data:`DEFAULT_METHOD` (``"auto"``): for labeling functions (most votes from
            one-class functions, or abstaining that tells the class, measured on held-out rows:
            :func:`~.abstention.abstaining_is_informative`), the abstain-aware Dawid-Skene
            (:class:`crowd_keras.aggregation.AbstainAwareDawidSkene`) with abstaining modelled
            per class; for crowd answers in a label matrix, the library's default
            :class:`crowd_keras.aggregation.AutoLabelModel`. ``"abstain_dawid_skene"`` is the
            former without that switch; ``"majority_vote"`` is Snorkel's
            ``MajorityLabelVoter``; ``"dawid_skene"`` the library's Dawid-Skene;
            feature-aware models take ``fit(..., features=X)``.
        verbose, device: accepted for drop-in use (Snorkel's constructor); no effect.
        **method_kwargs: constructor arguments of the label model (e.g. ``smoothing=0.1``);
            with ``"auto"``, of either model it may fit: one that the model fitted to ``L``
            does not take raises :class:`~.validation.UnexpectedArgumentError` naming both.

    One-class labeling functions (most votes from functions that vote one class) get the
    default model's labeling-function setting, the most-voted class winning and the model
    breaking ties, unless the model without that anchor explains the co-votes of every pair
    of functions (:func:`covote_misfit` below 0.1: they are conditionally independent given
    the class, the model's assumption), in which case the full model decides.

    Fitted attributes: ``label_model_`` (the crowd-keras model), ``n_functions_``,
    ``class_balance_`` (given or None), ``weights_``, ``conditional_probs_``,
    ``train_config_`` (Snorkel's train settings, validated), ``covote_misfit_`` (None when
    not checked), ``n_gold_`` (rows of ``L_dev``; 0 without) and ``gold_in_fit_`` (the label
    model held them at their ``Y_dev`` class).
    """

    def __init__(self, cardinality: int = 2, method: str = DEFAULT_METHOD, verbose: bool = False,
                 device: str = "cpu", **method_kwargs: Any) -> None:
        self.cardinality = cardinality
        self.method = method
        self.verbose = verbose
        self.device = device
        self.method_kwargs = method_kwargs

    # --------------------------------------------------------------------- parameters
    #: the constructor's own arguments; the others are the label model's (``method_kwargs``)
    _OWN_PARAMS = ("cardinality", "method", "verbose", "device")

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """scikit-learn's parameters: the constructor's arguments as given, the label model's
        among them (``method_kwargs`` flattened, as they were passed), so that
        ``sklearn.base.clone`` builds an unfitted copy. ``deep`` has no nested estimators."""
        return {**{name: getattr(self, name) for name in self._OWN_PARAMS},
                **self.method_kwargs}

    def _method_params(self) -> Optional[List[str]]:
        """Constructor arguments of the label model(s) ``method`` may fit (``"auto"``: the
        library's default model or the labeling-function one); None: any (a factory taking
        ``**kwargs``)."""
        method = _key(self.method)
        names: List[str] = []
        for name in ((method, LABELING_FUNCTION_METHOD) if method == "auto" else (method,)):
            params = _constructor_params(name)
            if params is None:
                return None
            names += params
        return sorted(set(names))

    def _check_method_kwargs(self) -> None:
        """A constructor argument that neither this class nor the label model(s) of
        ``method`` takes is refused before any work, naming this class (Snorkel refuses it
        in ``LabelModel(...)``), not deep in the fit naming a model the user did not pick."""
        if not self.method_kwargs:
            return
        valid = self._method_params()
        unknown = [k for k in self.method_kwargs if valid is not None and k not in valid]
        if unknown:
            raise UnexpectedArgumentError(
                f"CrowdLabelModel got an unexpected keyword argument {unknown[0]!r}: not an "
                f"argument of CrowdLabelModel nor of the label model of method="
                f"{self.method!r}; valid: {sorted(set(self._OWN_PARAMS) | set(valid))}")

    def set_params(self, **params: Any) -> "CrowdLabelModel":
        """Set constructor arguments, the label model's too (as ``CrowdLabelModel(...,
        max_iter=50)`` passes them); returns self. A name that is neither this class's nor
        the label model's is a ValueError naming it."""
        for name in self._OWN_PARAMS:
            if name in params:
                setattr(self, name, params[name])
        others = {k: v for k, v in params.items() if k not in self._OWN_PARAMS}
        valid = self._method_params() if others else []
        unknown = [k for k in others if valid is not None and k not in valid]
        if unknown:
            raise ValueError(f"invalid parameter {unknown[0]!r} for CrowdLabelModel(method="
                             f"{self.method!r}); valid parameters: "
                             f"{sorted(set(self._OWN_PARAMS) | set(valid))}")
        self.method_kwargs = {**self.method_kwargs, **others}
        return self

    #: scikit-learn's tags (``check_is_fitted`` asks for them), as the library's estimators'
    __sklearn_tags__ = Params.__sklearn_tags__

    def __sklearn_is_fitted__(self) -> bool:
        """Fitted once ``fit`` or ``load`` has set ``label_model_``."""
        return hasattr(self, "label_model_")

    def __repr__(self) -> str:
        defaults = inspect.signature(CrowdLabelModel.__init__).parameters
        shown = [f"{name}={getattr(self, name)!r}" for name in self._OWN_PARAMS
                 if getattr(self, name) != defaults[name].default]
        shown += [f"{name}={value!r}" for name, value in self.method_kwargs.items()]
        return f"CrowdLabelModel({', '.join(shown)})"

    # --------------------------------------------------------------------- fitting
    def fit(self, L_train: Any, Y_dev: Any = None, class_balance: Any = None,
            progress_bar: bool = True, *, L_dev: Any = None, features: Any = None,
            n_epochs: Optional[int] = None, lr: Optional[float] = None,
            seed: Optional[int] = None, **train_config: Any) -> "CrowdLabelModel":
        """Fit the label model to ``L_train`` (n × m, -1 = abstain). Returns self.

        Args:
            L_train: (n, m) label matrix of class codes ``0..cardinality-1``, -1 where a
                labeling function abstains: a dense array (a sparse matrix is refused: its
                zeros would read as votes for class 0) or a Dask array (fitted by
                :mod:`crowd_keras.distributed`).
            Y_dev: gold labels (``0..cardinality-1``) of the data points of a dev split. As in
                Snorkel, without ``class_balance`` their class shares are the class balance.
            class_balance: (cardinality,) class proportions; fixes the class prior of a model
                that has one (``class_prior``: the Dawid-Skene family, the default; for crowd
                answers the default also decides its labels for it, ``target_prior``). Models
                without one (e.g. GLAD, MACE, IBCC, EBCC, BWA, voting, and the default when it
                chooses voting or BWA) keep their own; the class balance is then only the
                answer of rows where every function abstains, and a UserWarning says so.
            L_dev: (n_dev, m) the dev split's label matrix, one row per label of ``Y_dev``
                (not in Snorkel). With it the dev rows join the fit as gold: a label model
                that takes gold (``accepts_gold``: the default for crowd answers, the
                Dawid-Skene family, the Bayesian models, CoNAL, voting) holds each at its
                ``Y_dev`` class in every E-step, and the default ``"auto"`` model chooses
                among its candidates by their accuracy on hidden gold rows when there are
                enough (``AutoLabelModel(min_gold=...)``). A model that does not take gold
                (the abstain-aware model of labeling functions) is fitted on the dev rows'
                votes without holding them. ``gold_in_fit_`` says which; the weights and
                conditional probabilities count the dev rows at their gold class.
            progress_bar: show a progress bar over EM iterations / epochs.
            features: (n, d) item features for feature-aware methods (end to end).
            n_epochs: maximum EM iterations (or epochs); default the model's own (100).
            lr, seed: learning rate and seed of gradient-trained or randomized methods.
            **train_config: the rest of Snorkel's train config, validated as Snorkel does:
                ``mu_eps`` bounds the reported conditional probabilities; ``l2``,
                ``optimizer``, ``optimizer_config``, ``lr_scheduler``, ``lr_scheduler_config``,
                ``prec_init`` and ``log_freq`` go to a model that takes an argument of that
                name, and are otherwise without effect (EM has no optimizer).
        """
        given = {name: value for name, value in (("n_epochs", n_epochs), ("lr", lr),
                                                 ("seed", seed)) if value is not None}
        config = check_train_config({**given, **train_config})
        if not isinstance(self.cardinality, (int, np.integer)) or self.cardinality < 2:
            raise ValueError(f"cardinality must be an integer >= 2, got {self.cardinality!r}")
        k = int(self.cardinality)
        if is_dask_array(L_train):  # rows in chunks: fitted by crowd_keras.distributed
            return self._fit_partitioned(L_train, Y_dev, class_balance, L_dev, features,
                                         {**given, **train_config},
                                         {**given, "progress_bar": progress_bar,
                                          **train_config}, config["mu_eps"])
        L = check_label_matrix(L_train, k, name="L_train")
        dev = check_dev_set(L_dev, Y_dev, k, L.shape[1])
        if dev is not None and features is not None:
            raise ValueError("L_dev with features= is not supported: the dev rows have no "
                             "features; fit on L_train with features, or drop features=")
        model_type, balance = self._check_setup(L.shape, Y_dev, class_balance,
                                                {**given, **train_config})
        n_train = L.shape[0]
        gold = None
        if dev is not None:   # the dev rows follow the training rows, held at their class
            gold = np.concatenate([np.full(n_train, -1, dtype=np.int64), dev[1]])
            ann = Annotations.from_label_matrix(np.vstack([L, dev[0]]), cardinality=k)
        else:
            ann = Annotations.from_label_matrix(L, cardinality=k)
        if ann.n_annotations == 0:
            raise CrowdDataError("L_train has no votes: every entry is -1 (abstain)")
        method, kwargs, full_first = self._plan(
            ann.annotator_label_counts(), lambda: abstaining_is_informative(ann),
            _votes_fixed_by_design(ann), balance,
            {**given, "progress_bar": progress_bar, **train_config})
        model = None
        self.covote_misfit_ = None
        hold = gold is not None and _holds_gold(method, kwargs, ann.annotator_label_counts())
        if features is None and full_first:
            # one-class functions: the full model if it explains the co-votes, else anchored
            trial = get_label_model(method, **kwargs, anchor="none").fit(
                ann, **({"gold": gold} if hold else {}))
            self.covote_misfit_ = covote_misfit(trial, ann)
            if self.covote_misfit_ is not None and self.covote_misfit_ < COVOTE_MISFIT:
                model = trial
        if model is None:
            model = get_label_model(method, **kwargs)
            if features is not None:
                model.fit(ann, features=self._check_features(model, features, L.shape[0]))
            elif hold:
                model.fit(ann, gold=gold)
            else:
                model.fit(ann)
        self.label_model_ = model
        self.n_functions_ = L.shape[1]
        self.class_balance_ = balance
        _warn_balance_unused(model, kwargs, balance)
        self.n_gold_ = 0 if dev is None else len(dev[1])
        # a crowd model on labeling-function votes answers through a model without gold
        self.gold_in_fit_ = bool(hold and getattr(model, "regime_", "crowd") == "crowd")
        probs = model.predict_proba()
        self._train_cache = None
        if features is None:
            probs = self._finish(probs, ann)
            if dev is not None:   # the dev rows count at their gold class
                probs[n_train:] = np.eye(k)[dev[1]]
            # predict_proba(L_train) answers from here: L_train becomes Annotations once
            self._train_cache = (L.astype(np.int8 if k <= 127 else np.int32),
                                 probs[:n_train].copy())
        self._summarize(ann, probs, config["mu_eps"])
        return self

    def _fit_partitioned(self, L: Any, Y_dev: Any, class_balance: Any, L_dev: Any,
                         features: Any, given: Dict[str, Any], train: Dict[str, Any],
                         mu_eps: Optional[float]) -> "CrowdLabelModel":
        """:meth:`fit` of a Dask array ``L`` (chunks of rows): the same decisions from sums
        over rows, the label model fitted by :mod:`crowd_keras.distributed` (its public
        EM-step protocol over the blocks), the same fitted state (:mod:`.partitioned`)."""
        from crowd_keras.distributed.methods import method_for

        from . import partitioned

        partitioned.no_features(features)
        k = int(self.cardinality)
        partitioned.check_layout(L, k)
        dev = check_dev_set(L_dev, Y_dev, k, L.shape[1])
        _, balance = self._check_setup(L.shape, Y_dev, class_balance, given)
        if _key(self.method) != "auto":
            method_for(self.method)  # an unsupported method fails before any work
        data, with_gold = partitioned.partitioned_label_matrix(L, k, dev)
        method, kwargs, full_first = self._plan(
            data.summary.votes, lambda: partitioned.abstaining_is_informative_partitioned(data),
            partitioned.fixed_by_design(data), balance, train)
        takes_gold = with_gold is not None and _holds_gold(method, kwargs, data.summary.votes)
        fit, self.covote_misfit_ = partitioned.fit_method(
            with_gold if takes_gold else data, method, kwargs, full_first)
        self.label_model_ = fit.model
        self.n_functions_ = L.shape[1]
        self.class_balance_ = balance
        _warn_balance_unused(fit.model, kwargs, balance)
        self.n_gold_ = 0 if dev is None else len(dev[1])
        self.gold_in_fit_ = bool(takes_gold and getattr(fit.model, "regime_", "crowd") == "crowd")
        self._train_cache = None

        def report(post: np.ndarray, block: Any) -> np.ndarray:
            return partitioned.gold_rows(self._finish(post, block), block)

        # the labels' posteriors, as in memory (predict_proba: under the default's target prior)
        joint, mass = (with_gold or data).statistics(fit, transform=report, labels=True)
        summary = data.summary
        self.weights_, self.conditional_probs_ = function_summary(
            joint, summary.votes.sum(axis=1), mass, summary.n_items, mu_eps)
        return self

    def _plan(self, votes: np.ndarray, abstaining: Callable[[], bool], fixed_by_design: bool,
              balance: Optional[np.ndarray], train: Dict[str, Any]
              ) -> Tuple[str, Dict[str, Any], bool]:
        """What to fit, in memory or partitioned: the registry name (:meth:`_resolved_method`),
        its keyword arguments, and whether to try the full model before anchoring it to the
        votes (one-class functions, no ``anchor`` given: see :func:`covote_misfit`)."""
        method = self._resolved_method(votes, abstaining)
        self._check_resolved_kwargs(method)
        model_type = type(get_label_model(method))
        kwargs = self._model_kwargs(model_type, fixed_by_design, balance, train)
        full_first = (_takes(model_type.__init__, "anchor") and "anchor" not in kwargs
                      and one_class_share(votes) >= LABELING_FUNCTION_SHARE)
        return method, kwargs, full_first

    def _resolved_method(self, votes: np.ndarray, abstaining: Callable[[], bool]) -> str:
        """The registry name to fit: ``self.method``, with ``"auto"`` resolved (see the class
        docstring): labeling functions get :data:`LABELING_FUNCTION_METHOD`, crowd answers the
        library's ``"auto"`` model. Labeling functions: most votes from functions that vote one
        class (``votes``: (functions, K) vote counts), or abstaining that tells the class
        (``abstaining()``, asked only then: :func:`.abstention.abstaining_is_informative`, or
        its partitioned form for a Dask ``L``: held-out data points' votes are better
        predicted when abstaining is modelled)."""
        method = _key(self.method)
        if method == "auto" and (one_class_share(votes) >= LABELING_FUNCTION_SHARE
                                 or abstaining()):
            return LABELING_FUNCTION_METHOD
        return method

    def _check_resolved_kwargs(self, method: str) -> None:
        """With ``method="auto"``, constructor arguments of either model it may resolve to are
        accepted up front (:meth:`_check_method_kwargs`); one that the model resolved for this
        ``L`` (registry name ``method``) does not take is refused here, naming both models,
        not as that model's own ``TypeError`` (a model the user did not pick)."""
        if _key(self.method) != "auto" or not self.method_kwargs:
            return
        params = _constructor_params(method)
        if params is None:
            return
        unknown = [k for k in self.method_kwargs if k not in params]
        if unknown:
            name = unknown[0]
            if method == LABELING_FUNCTION_METHOD:   # no method= fits the crowd model here
                read = "labeling functions"
                other = "'auto' (AutoLabelModel), fitted to crowd answers"
                fix = f"leave {name!r} out"
            else:
                read, other = "crowd answers", (f"{LABELING_FUNCTION_METHOD!r}, fitted to "
                                                "labeling functions")
                fix = (f"pass method={LABELING_FUNCTION_METHOD!r} to fit that model, or leave "
                       f"{name!r} out")
            raise UnexpectedArgumentError(
                f"CrowdLabelModel(method={self.method!r}) fits {method!r} to this L (its votes "
                f"read as {read}), which takes no argument {name!r}: that is an argument of "
                f"{other}; {fix}")

    def _check_setup(self, shape: Tuple[int, int], Y_dev: Any, class_balance: Any,
                     train_config: Dict[str, Any]) -> Tuple[type, Optional[np.ndarray]]:
        """The label model's class and the class balance, after the checks of ``fit`` that
        need only the shape of ``L``; sets ``train_config_``."""
        if shape[0] == 0:
            raise CrowdDataError("L_train has no data points")
        model_type = type(get_label_model(_key(self.method)))
        self._check_method_kwargs()
        if shape[1] < 3 and not issubclass(model_type, MajorityVote):
            raise CrowdDataError(f"L_train should have at least 3 labeling functions (got "
                                 f"{shape[1]}; Snorkel's rule: fewer cannot be told apart "
                                 "from their accuracies). method='majority_vote' takes any number")
        balance = check_class_balance(class_balance, Y_dev, int(self.cardinality))
        self.train_config_ = check_train_config(train_config, shape[1])
        return model_type, balance

    def _model_kwargs(self, model_type: type, fixed_by_design: bool,
                      balance: Optional[np.ndarray], train: Dict[str, Any]) -> Dict[str, Any]:
        kwargs = dict(self.method_kwargs)
        init = model_type.__init__
        for arg, value in train.items():
            if value is None:
                continue
            for target in _TRAIN_ARGS.get(arg, (arg,)):
                if _takes(init, target) and target not in kwargs:
                    if arg == "n_epochs" and value < 1:   # Snorkel's 0: its initial parameters
                        raise ValueError(f"n_epochs=0: {model_type.__name__} needs at least one "
                                         "iteration (n_epochs >= 1)")
                    kwargs[target] = bool(value) if arg == "progress_bar" else value
                    break
        for arg, value in _SNORKEL_SETTINGS.items():
            if _takes(init, arg) and arg not in kwargs:
                kwargs[arg] = value
        if _takes(init, "abstain") and "abstain" not in kwargs and not fixed_by_design:
            kwargs["abstain"] = "response"  # labeling functions: abstaining depends on the class
        if balance is not None and _takes(init, "class_prior") and \
                _passes_on(model_type, kwargs, "class_prior"):
            kwargs["class_prior"] = balance
        if balance is not None and _takes(init, "target_prior") and "target_prior" not in kwargs:
            kwargs["target_prior"] = balance      # Snorkel's P(Y): the labels are decided for it
        return kwargs

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

    def _summarize(self, ann: Annotations, probs: np.ndarray, mu_eps: Optional[float]) -> None:
        """Per-function weights and Snorkel's conditional probability table
        (:func:`.votes.function_summary`) from ``probs``, the (n, k) predictions on the
        training rows."""
        X = ann.vote_incidence()  # (n, m·k): data point i got vote l from function j
        self.weights_, self.conditional_probs_ = function_summary(
            np.asarray(X.T @ probs), ann.annotations_per_annotator(), probs.sum(axis=0),
            ann.n_items, mu_eps)

    def _check_fitted(self) -> None:
        """Fitted, and with the cardinality it was fitted with: after ``cardinality`` changes
        (``set_params``, or the attribute) only a new fit holds that many classes; the old one
        would answer ``L_train`` with the old classes and save a file ``load`` refuses."""
        if not self.__sklearn_is_fitted__():
            raise NotFittedError("this CrowdLabelModel is not fitted yet; call fit() or load()")
        fitted = getattr(self, "conditional_probs_", None)
        if fitted is not None and self.cardinality != fitted.shape[2]:
            raise ValueError(f"cardinality is {self.cardinality!r} but the model was fitted with "
                             f"cardinality {fitted.shape[2]}: fit it again after changing "
                             "cardinality")

    # --------------------------------------------------------------------- predicting
    def predict_proba(self, L: Any, features: Any = None) -> np.ndarray:
        """(n, cardinality) label distribution per row of ``L``; all-abstain rows stay in place
        and get the class balance (uniform unless ``class_balance`` or ``Y_dev`` was given), as
        Snorkel's (with ``features``, the feature-aware model's answer). A function that
        never voted in the fitted data (weight NaN) is read as abstaining, as Snorkel ignores
        it."""
        self._check_fitted()
        k = int(self.cardinality)
        if is_dask_array(L):  # a Dask array in, a Dask array out, chunk by chunk
            from .partitioned import no_features, predict_proba_partitioned
            no_features(features)
            light = copy.copy(self)
            light._train_cache = None   # not shipped to the workers
            return predict_proba_partitioned(light.predict_proba, L, k, self.n_functions_)
        L = check_label_matrix(L, k, n_functions=self.n_functions_)
        if L.shape[0] == 0:
            return np.zeros((0, k))
        silent = np.isnan(self.weights_)
        if silent.any() and (L[:, silent] != -1).any():
            # a function without a vote in the fitted data has no influence (as in Snorkel):
            # its votes here are read as abstains, not through the model's prior guess of it
            L = np.where(silent[None, :], -1, L)
        model = self.label_model_
        if features is not None:  # features inform rows without votes too
            return model.predict_proba(Annotations.from_label_matrix(L, cardinality=k),
                                       features=self._check_features(model, features,
                                                                     L.shape[0]))
        cache = getattr(self, "_train_cache", None)
        if cache is not None and cache[0].shape == L.shape and np.array_equal(cache[0], L):
            return cache[1].copy()
        ann = Annotations.from_label_matrix(L, cardinality=k)
        return self._finish(model.predict_proba(ann), ann)

    def _finish(self, probs: np.ndarray, ann: Annotations) -> np.ndarray:
        """Snorkel's answer for a row without votes: the class balance (a tie by default).
        Not with features (a feature-aware model has more to go on than the votes)."""
        empty = ann.annotations_per_item() == 0
        if empty.any():
            k = int(self.cardinality)
            probs = np.array(probs, dtype=np.float64)
            probs[empty] = self.class_balance_ if self.class_balance_ is not None else 1.0 / k
        return probs

    def predict(self, L: Any, return_probs: bool = False, tie_break_policy: str = "abstain",
                features: Any = None) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
        """Class per row of ``L`` (-1 for a tie under ``tie_break_policy="abstain"``).

        ``tie_break_policy``: ``"abstain"`` (Snorkel's default), ``"random"`` (Snorkel's
        deterministic hash of the row index: a tie resolves exactly as in Snorkel) or
        ``"true-random"`` (NumPy's global generator, as Snorkel: ``np.random.seed`` fixes it).
        """
        probs = self.predict_proba(L, features=features)
        preds = probs_to_preds(probs, tie_break_policy)
        return (preds, probs) if return_probs else preds

    def score(self, L: Any, Y: Any, metrics: Optional[List[str]] = ["accuracy"],  # noqa: B006
              tie_break_policy: str = "abstain", features: Any = None) -> Dict[str, float]:
        """Metrics of the predictions against gold ``Y``, as Snorkel's ``LabelModel.score``.

        As in Snorkel, rows whose gold label or prediction is -1 are left out of every metric
        but ``coverage``: under ``tie_break_policy="abstain"`` ties are not counted as errors.
        ``metrics``: Snorkel's names (``accuracy``, ``coverage``, ``precision``, ``recall``,
        ``f1``, ``f1_micro``, ``f1_macro``, ``fbeta``, ``matthews_corrcoef``, ``roc_auc``);
        ``fbeta`` is F-beta with beta = 1, the F1 score (Snorkel's raises ``TypeError``: its
        ``score`` has no way to pass ``beta``).
        """
        if isinstance(metrics, str):
            raise TypeError(f"metrics must be a list of metric names, got the string "
                            f"{metrics!r} (one metric: [{metrics!r}])")
        preds, probs = self.predict(L, return_probs=True, tie_break_policy=tie_break_policy,
                                    features=features)
        gold = check_gold_labels(Y, int(self.cardinality), "Y", allow_missing=True)
        return _score(gold, preds, probs, metrics or [])

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

        Snorkel's layout: ``j = 0`` is abstain; columns sum to 1. Estimated from the model's
        posteriors on ``L_train``, each vote probability restricted to ``[mu_eps, 1 - mu_eps]``
        as Snorkel's (``fit(..., mu_eps=)``; default ``min(0.01, 10^-ceil(log10 n))``).
        """
        self._check_fitted()
        return self.conditional_probs_.copy()

    # --------------------------------------------------------------------- persistence
    def save(self, destination: Union[str, Path]) -> None:
        """Write the fitted model to ``destination`` (a ``.npz`` of arrays plus JSON; no pickle),
        atomically, making its folder when missing.

        The label model's fitted numeric arrays (alone or in a tuple, e.g. the last EM state
        of the Bayesian models) and plain settings are stored (and those of a label model it
        delegated to); training-set posteriors are not. A model whose fitted state is held in
        another object (LIA's networks, ``engine_``) raises ``TypeError`` before anything is
        written: a loaded copy could not predict.
        """
        self._check_fitted()
        _check_path(destination, "destination", write=True)
        arrays: Dict[str, np.ndarray] = {"weights": self.weights_,
                                         "conditional_probs": self.conditional_probs_}
        models = {}
        for prefix, model in _models(self.label_model_):
            state: Dict[str, Any] = {}
            tuples: Dict[str, int] = {}
            for attr, value in vars(model).items():
                if not attr.endswith("_") or attr.startswith("_") or attr in ("annotations_",
                                                                             "posteriors_"):
                    continue
                if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                    arrays[f"{prefix}/{attr}"] = value
                elif isinstance(value, tuple) and value and all(
                        isinstance(v, np.ndarray) and v.dtype.kind in "biuf" for v in value):
                    tuples[attr] = len(value)   # predict_proba(new) may need it (state_)
                    arrays.update({f"{prefix}/{attr}/{i}": v for i, v in enumerate(value)})
                elif isinstance(value, (str, bool, int, float, type(None), np.integer,
                                        np.floating)):
                    state[attr] = value.item() if isinstance(value, np.generic) else value
                elif not isinstance(value, _NOT_STORED):
                    # e.g. LIA's engine_ (its networks' weights): a loaded copy could not predict
                    raise TypeError(
                        f"cannot save {type(model).__name__}: its fitted {attr} "
                        f"({type(value).__name__}) is neither arrays nor plain settings, so a "
                        "loaded copy could not predict; keep this model in memory or refit it")
            models[prefix] = {"name": _registry_name(model), "params": _json_params(model),
                              "state": state, "tuples": tuples}
        meta = {"format": _FORMAT, "version": 2, "method": self.method,
                "cardinality": int(self.cardinality), "n_functions": int(self.n_functions_),
                "method_kwargs": _plain(self.method_kwargs), "models": models,
                "class_balance": (None if self.class_balance_ is None
                                  else self.class_balance_.tolist()),
                "n_gold": int(self.n_gold_), "gold_in_fit": bool(self.gold_in_fit_)}
        if hasattr(self, "covote_misfit_"):   # absent after loading a file without it
            misfit = self.covote_misfit_
            meta["covote_misfit"] = None if misfit is None else float(misfit)
        try:
            meta_json = json.dumps(meta)
        except TypeError as exc:
            raise TypeError(f"cannot save {type(self.label_model_).__name__}: a setting is not "
                            f"plain JSON ({exc})") from None
        buffer = io.BytesIO()   # written whole, then renamed: a previous file survives a failure
        np.savez(buffer, __meta__=np.array(meta_json), **arrays)
        atomic_write_bytes(destination, buffer.getvalue())

    def load(self, source: Union[str, Path]) -> "CrowdLabelModel":
        """Load a model written by :meth:`save` into this object (as Snorkel does); returns self.

        A file written by Snorkel's ``LabelModel.save`` (a pickle) is refused with a
        :class:`crowd_keras.CrowdDataError` that says so: unpickling runs code, and its
        parameters are not those of a crowd-keras model. Refit on ``L_train`` instead.
        Fitted attributes are the file's: one the file does not hold (``train_config_``, never
        saved; ``covote_misfit_`` in an older file) is removed, not left from an earlier fit.
        """
        _check_path(source, "source")
        with open(source, "rb") as fh:
            head = fh.read(4)
        if head[:1] == b"\x80" or head[:1] == b"(":
            raise CrowdDataError(
                f"{source} is a pickle, as Snorkel's LabelModel.save writes: CrowdLabelModel does "
                "not unpickle (it runs code) and Snorkel's parameters are not a crowd-keras "
                "model's. Fit CrowdLabelModel on L_train and save it, or load this file with "
                "snorkel.labeling.model.LabelModel")
        if head[:2] != b"PK":
            raise CrowdDataError(f"{source} is not a saved CrowdLabelModel (not an .npz file)")
        arrays = read_npz(source, "a saved CrowdLabelModel")
        meta = _checked_meta(arrays.pop("__meta__", None), arrays, source)
        k, m = meta["cardinality"], meta["n_functions"]
        # predict_proba(new L) aligns on the function ids and classes of the fitted data
        empty = Annotations(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                            item_ids=[], annotator_ids=np.arange(m), classes=np.arange(k))
        built: Dict[str, LabelModel] = {}
        for prefix in sorted(meta["models"], key=len):  # parents first
            spec = meta["models"][prefix]
            try:
                model = get_label_model(spec["name"], **spec["params"])
            except (TypeError, ValueError, KeyError) as exc:
                raise CrowdDataError(f"{source}: metadata model {prefix!r} ({spec['name']!r}) "
                                     f"cannot be rebuilt: {exc}") from None
            for attr, value in spec["state"].items():
                setattr(model, attr, value)
            for attr, n in spec.get("tuples", {}).items():
                names = [f"{prefix}/{attr}/{i}" for i in range(n)]
                missing = [name for name in names if name not in arrays]
                if missing:
                    raise CrowdDataError(f"{source}: the saved model has no {missing[0]!r} "
                                         f"entry (metadata model {prefix!r}: {attr} of {n})")
                setattr(model, attr, tuple(arrays.pop(name) for name in names))
            model.annotations_ = empty
            model.posteriors_ = np.zeros((0, k))
            built[prefix] = model
            parent, _, attr = prefix.rpartition("/")
            if parent:
                if parent not in built:
                    raise CrowdDataError(f"{source}: metadata model {prefix!r} has no parent "
                                         f"{parent!r}")
                setattr(built[parent], attr, model)
        for name, value in arrays.items():
            parent, _, attr = name.rpartition("/")
            if parent in built:
                setattr(built[parent], attr, value)
        self.cardinality = k
        self.method = meta["method"]
        self.method_kwargs = meta["method_kwargs"]
        self.label_model_ = built["model"]
        self.n_functions_ = m
        balance = meta["class_balance"]
        self.class_balance_ = None if balance is None else np.asarray(balance, dtype=np.float64)
        for attr, key in (("n_gold_", "n_gold"), ("gold_in_fit_", "gold_in_fit"),
                          ("covote_misfit_", "covote_misfit")):
            if key in meta:
                setattr(self, attr, meta[key])
            else:   # a file saved without it: unknown, not this object's earlier fit's
                self.__dict__.pop(attr, None)
        self.__dict__.pop("train_config_", None)   # not saved: not this object's earlier fit's
        self.weights_ = arrays["weights"]
        self.conditional_probs_ = arrays["conditional_probs"]
        self._train_cache = None
        return self


def _checked_meta(raw: Optional[np.ndarray], arrays: Dict[str, np.ndarray], source: Any) -> dict:
    """The metadata of a saved model, checked against the arrays beside it: the format and
    version, integer sizes, a model spec per prefix, ``weights`` (m,) and
    ``conditional_probs`` (m, k + 1, k) present with those shapes, a class balance of k
    numbers; else :class:`CrowdDataError` naming the file and the entry."""
    if raw is None:
        raise CrowdDataError(f"{source} is not a saved CrowdLabelModel (no __meta__ entry)")
    if raw.dtype.kind != "U" or raw.ndim != 0:
        raise CrowdDataError(f"{source}: __meta__ must be one JSON string, got {raw.dtype} of "
                             f"shape {raw.shape}")
    meta = read_json_text(str(raw), source, "the metadata (__meta__)")
    if not isinstance(meta, dict):
        raise CrowdDataError(f"{source}: the metadata must be a JSON object, got "
                             f"{type(meta).__name__}")
    if meta.get("format") != _FORMAT or meta.get("version") != 2:
        raise CrowdDataError(f"{source} is not a saved CrowdLabelModel (format "
                             f"{meta.get('format')!r} version {meta.get('version')!r})")
    kinds = {"cardinality": int, "n_functions": int, "method": str, "method_kwargs": dict,
             "models": dict}
    for key, kind in kinds.items():
        value = meta.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            noun = {int: "an integer", str: "a string", dict: "an object"}[kind]
            raise CrowdDataError(f"{source}: metadata entry {key!r} must be {noun}, got "
                                 f"{value!r}")
    k, m = meta["cardinality"], meta["n_functions"]
    if k < 2 or m < 0:
        raise CrowdDataError(f"{source}: metadata says cardinality {k} and {m} functions")
    if "model" not in meta["models"]:
        raise CrowdDataError(f"{source}: metadata 'models' has no entry 'model'")
    for prefix, spec in meta["models"].items():
        if not (isinstance(spec, dict) and isinstance(spec.get("name"), str)
                and isinstance(spec.get("params"), dict) and isinstance(spec.get("state"), dict)):
            raise CrowdDataError(f"{source}: metadata model {prefix!r} must hold a 'name' "
                                 f"string and 'params' and 'state' objects, got {spec!r}")
        tuples = spec.get("tuples", {})
        if not (isinstance(tuples, dict) and all(
                isinstance(n, int) and not isinstance(n, bool) and n > 0
                for n in tuples.values())):
            raise CrowdDataError(f"{source}: metadata model {prefix!r} 'tuples' must map "
                                 f"attribute names to positive lengths, got {tuples!r}")
    for name, shape in (("weights", (m,)), ("conditional_probs", (m, k + 1, k))):
        if name not in arrays:
            raise CrowdDataError(f"{source}: the saved model has no {name!r} entry (entries: "
                                 f"{sorted(arrays)})")
        if arrays[name].shape != shape or arrays[name].dtype.kind != "f":
            raise CrowdDataError(f"{source}: entry {name!r} has shape {arrays[name].shape} of "
                                 f"{arrays[name].dtype}, expected floats of shape {shape}")
    balance = meta.get("class_balance")
    if balance is not None and not (isinstance(balance, list) and len(balance) == k and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in balance)):
        raise CrowdDataError(f"{source}: metadata 'class_balance' must be null or {k} numbers, "
                             f"got {balance!r}")
    meta["class_balance"] = balance
    checks = {"n_gold": ("a count", lambda v: isinstance(v, int) and not isinstance(v, bool)
                         and v >= 0),
              "gold_in_fit": ("true or false", lambda v: isinstance(v, bool)),
              "covote_misfit": ("null or a number >= 0", lambda v: v is None or (
                  isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0))}
    for key, (noun, ok) in checks.items():
        if key in meta and not ok(meta[key]):
            raise CrowdDataError(f"{source}: metadata {key!r} must be {noun}, got "
                                 f"{meta[key]!r}")
    return meta


def _registry_name(model: LabelModel) -> str:
    """The registry name of ``model``'s class: an entry that is the class or its lazy
    ``"module:Class"`` path (nothing imported: the other entries' modules, LIA's Keras, stay
    unloaded), else the first entry whose factory builds one."""
    cls = type(model)
    path = f"{cls.__module__}:{cls.__qualname__}"
    entries = LABEL_MODELS.items()
    for name, factory in entries:
        if factory is cls or factory == path:
            return name
    for name, _ in entries:
        try:
            if type(get_label_model(name)) is cls:
                return name
        except (TypeError, ImportError):  # a factory that needs arguments, or cannot import
            continue
    raise TypeError(f"cannot save {type(model).__name__}: it is not a registered label model "
                    "(crowd_keras.aggregation.register_label_model)")


def _json_params(model: LabelModel) -> Dict[str, Any]:
    """The model's constructor arguments (the names of ``__init__``), for rebuilding it."""
    out = {}
    for name in inspect.signature(type(model).__init__).parameters:
        if name != "self" and hasattr(model, name):
            value = getattr(model, name)
            out[name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars as lists and Python numbers (inside lists,
    tuples and dicts too), so that settings given as numpy values are written as JSON."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    return value
