"""The surface shared by every label model of the library (scikit-learn style).

A label model infers each item's true label from the annotations alone (optionally with
item features). ``fit(annotations) -> self``; learned state ends in ``_``; nothing is
computed in ``__init__``; constructor arguments are parameters (``get_params`` /
``set_params``, so ``sklearn.base.clone`` works).

One meaning of ``predict_proba`` for every label model: **the posterior distribution of
each item's true class given its annotations** (items × classes, rows in
``annotations.item_ids`` order). Without argument it is the fitted items' (so is it for the
fitted ``annotations_`` object itself after a fit with gold or ``pred_probs``); with new
annotations (the fitted annotator ids and classes) it is the posterior under the fitted
model, without the gold or classifier of the fit. Feature-aware label models also take
``features=`` for those items. (Trainers in :mod:`crowd_keras.training` differ on purpose:
their ``predict_proba(x)`` is the trained classifier's output for inputs ``x``, without any
annotation.)
"""
from __future__ import annotations

import inspect
from functools import partial
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..codes import booleans_as_codes, is_dask_frame, show
from ..errors import CrowdDataError, NotFittedError, warn
from ..numerics import top_classes
from ..params import Params

__all__ = ["LabelModel", "PARTITIONED", "partitioned_report", "as_annotations", "wide_hint",
           "WIDE_HINT", "CROWD_KIT_FIT_ARGUMENTS", "crowd_kit_hint", "check_prior", "gold_codes",
           "gold_mapping", "written_alike", "more_unknown", "check_settings", "check_flags",
           "check_start"]


def as_annotations(data: Any, **kwargs: Any) -> Annotations:
    """Accept an `Annotations`, a dense items × annotators matrix (-1 = missing) or a long frame.

    Keyword arguments go to :meth:`Annotations.from_frame` for a frame (column names,
    ``classes``, ``duplicates``) or to :meth:`Annotations.from_dense` for a matrix.
    """
    if isinstance(data, Annotations):
        if kwargs:
            raise TypeError(f"unexpected keyword argument(s) {sorted(kwargs)}: they read a frame "
                            f"or a matrix, and these annotations are already read"
                            f"{crowd_kit_hint(kwargs)}")
        return data
    if data is None:
        raise CrowdDataError("no annotations given")
    if is_dask_frame(data):   # np.asarray would compute it and read its columns as annotators
        raise TypeError(f"annotations given as a Dask {type(data).__name__}: fit them partition "
                        "by partition with crowd_keras.distributed.aggregate(ddf, method=...); "
                        "to read them here (new annotations to score), pass ddf.compute(), a "
                        "pandas frame")
    frame = isinstance(data, pd.DataFrame)
    reader = Annotations.from_frame if frame else Annotations.from_dense
    takes = list(inspect.signature(reader).parameters)[1:]
    unknown = sorted(set(kwargs) - set(takes))
    if unknown:   # Python's message named the reader ("from_frame() got an unexpected ...")
        raise TypeError(f"unexpected keyword argument(s) {unknown} (the keyword arguments given "
                        f"with a {'frame' if frame else 'matrix'} read it: "
                        f"Annotations.{reader.__name__} takes {', '.join(takes)})"
                        f"{crowd_kit_hint(unknown)}")
    try:
        return reader(data, **kwargs)
    except CrowdDataError as err:
        hint = wide_hint(data, kwargs)
        if not hint:
            raise
        raise CrowdDataError(f"{err}{hint}") from err


#: arguments of crowd-kit's ``fit`` (``crowdkit.aggregation``) and where their job is done here
CROWD_KIT_FIT_ARGUMENTS = {
    "true_labels": "is gold= here (a mapping item -> label), for a model that takes gold",
    "skills": "has no counterpart: the label models learn each annotator's quality "
              "(annotator_quality_)",
    "initial_error": "has no counterpart: DawidSkene(init=...) starts from items × classes "
                     "posteriors",
}


def crowd_kit_hint(names: Any) -> str:
    """``" (crowd-kit's true_labels is gold= here ...)"`` for the ``names`` that are arguments of
    crowd-kit's ``fit`` (:data:`CROWD_KIT_FIT_ARGUMENTS`), else ``""``."""
    said = [f"crowd-kit's {name} {CROWD_KIT_FIT_ARGUMENTS[name]}" for name in sorted(names)
            if name in CROWD_KIT_FIT_ARGUMENTS]
    return f" ({'; '.join(said)})" if said else ""


#: how cleanlab's ``labels_multiannotator`` is read, said where it was read as another layout
WIDE_HINT = (" (cleanlab's wide layout, items × annotators with NaN where missing, is read "
             "by Annotations.from_wide(labels, n_classes=K))")


def wide_hint(data: Any, kwargs: Any = None) -> str:
    """:data:`WIDE_HINT` when ``data``, which failed to read as a long frame or as a dense
    matrix coded -1 where missing, looks like cleanlab's wide layout: a frame without any of
    the long layout's columns, or a matrix with NaN; else ``""``."""
    kwargs = kwargs or {}
    if isinstance(data, pd.DataFrame):
        long = {kwargs.get("item", "task"), kwargs.get("annotator", "worker"),
                kwargs.get("label", "label")}
        return "" if long & set(data.columns) else WIDE_HINT
    try:
        values = np.asarray(data)
    except (TypeError, ValueError):         # ragged rows: not a matrix at all
        return ""
    if values.ndim != 2 or values.dtype.kind not in "fO":
        return ""
    return WIDE_HINT if bool(pd.isna(values).any()) else ""


def without_evidence(values: Any, n_annotations: Any) -> np.ndarray:
    """(A,) per-annotator ``values`` with NaN for the annotators without annotations: an
    annotator-quality column says nothing of an annotator the fit never saw label."""
    return np.where(np.asarray(n_annotations) > 0, np.asarray(values, dtype=np.float64), np.nan)


def check_prior(prior: Optional[Any], n_classes: int) -> Optional[np.ndarray]:
    """A user's fixed class prior as (K,) probabilities, or None; raises when it is not one."""
    if prior is None:
        return None
    if isinstance(prior, pd.Series) and not prior.index.equals(pd.RangeIndex(len(prior))):
        # a Series keyed by class would be read by position, whatever its index says
        raise CrowdDataError(f"class prior must be a vector in the classes' order (a Series "
                             f"indexed by class names is read by position: pass "
                             f"prior.reindex(classes).to_numpy()), got the Series {prior.to_dict()!r}")
    try:
        p = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError):   # a string, a ragged list: numpy's message names no prior
        p = np.full(n_classes, np.nan)
    if p.shape != (n_classes,) or (p < 0).any() or not np.isclose(p.sum(), 1.0):
        raise CrowdDataError(f"class prior must be {n_classes} non-negative numbers summing to 1, "
                             f"got {prior!r}")
    return p


def check_start(values: np.ndarray, what: str) -> np.ndarray:
    """An explicit EM start ``values`` (items, ...) of finite, non-negative weights (rows
    need not sum to 1: the first M-step reads them as weights), else a ValueError naming
    ``what`` and the first bad entry by its row (a NaN or a negative made every posterior
    NaN)."""
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{what} must be finite and non-negative, got {values[at]} at item row "
                         f"{at[0]} (index {at})")
    return values


def check_settings(model: Any) -> None:
    """The iteration settings the label models share, checked before any work as
    scikit-learn checks its parameters (``2.5`` or ``"10"`` iterations are not truncated or
    compared with ints): ``max_iter`` an integer >= 0, ``tol`` a number that is not NaN (a
    negative ``tol`` runs every iteration), ``smoothing`` (when set) a finite number >= 0,
    ``seed`` / ``random_state`` (when set) an integer >= 0 (``1.5`` is not truncated, ``-1``
    is not left to numpy's message that names no argument), and every switch (a parameter
    whose default is ``True`` or ``False``) a bool: ``progress`` also ``"auto"``
    (:func:`check_flags`)."""
    settings = vars(model)
    name = type(model).__name__
    # None is "unset" only where the constructor's default is None (MACE's smoothing):
    # elsewhere it is a wrong type, named here rather than by int()'s or float()'s message
    unset = {p.name for p in inspect.signature(type(model).__init__).parameters.values()
             if p.default is None}
    check_flags(model)

    def given(setting: str) -> bool:
        return setting in settings and (settings[setting] is not None or setting not in unset)

    for seed in ("seed", "random_state"):
        if settings.get(seed) is not None:
            check_count(settings[seed], f"{name} {seed}", 0)
    if given("max_iter"):
        check_count(settings["max_iter"], f"{name} max_iter", 0)
    if given("tol"):
        check_number(settings["tol"], f"{name} tol", low=-np.inf)
    if given("smoothing"):
        check_number(settings["smoothing"], f"{name} smoothing")


def check_flags(model: Any) -> None:
    """Each switch of ``model`` (a constructor parameter whose default is ``True`` or
    ``False``) is a bool, ``progress`` also ``"auto"``; else a ValueError naming it and the
    value (``soft="no"`` or ``prune_groups=0.5`` were read by truth value, without a word)."""
    name = type(model).__name__
    for param in inspect.signature(type(model).__init__).parameters.values():
        if not isinstance(param.default, bool) or not hasattr(model, param.name):
            continue
        value = getattr(model, param.name)
        auto = param.name == "progress"
        if isinstance(value, (bool, np.bool_)) or (auto and isinstance(value, str)
                                                    and value == "auto"):
            continue
        allowed = "True, False or 'auto'" if auto else "True or False"
        raise ValueError(f"{name} {param.name} must be {allowed}, got {value!r}")


def _not_a_mapping(gold: Any, alternative: str) -> None:
    """Raise for a gold value of no accepted kind (a frame, a set, a string, a scalar)."""
    if is_dask_frame(gold):   # np.ndim would compute it, to refuse it as an array
        raise CrowdDataError(f"gold must be a mapping item -> label (a dict or a pandas "
                             f"Series); got a Dask {type(gold).__name__}: pass gold.compute()")
    if isinstance(gold, (pd.DataFrame, set, frozenset, str, bytes)) or np.ndim(gold) == 0:
        hint = " (a frame of item and label columns: frame.set_index(ITEM)[LABEL])" \
            if isinstance(gold, pd.DataFrame) else ""
        raise CrowdDataError(f"gold must be a mapping item -> label (a dict or a pandas "
                             f"Series){', ' + alternative if alternative else ''}; got "
                             f"{type(gold).__name__}{hint}")


def written_alike(item: Any, items: np.ndarray, what: str = "item") -> str:
    """Error hint for an ``item`` id not among ``items`` (``what="class"``: a gold label not
    among the classes): the one of another type that is written the same (``1`` for
    ``"1"``), else ``""``."""
    ids = np.asarray(items)
    alike = ids[pd.Index(ids).astype(str) == str(item)] if len(ids) else ids
    if not len(alike):
        return ""
    if what == "class":
        return f" (class {show(alike[0])} is: gold labels must be of the classes' type)"
    return f" (item {show(alike[0])} is: the ids of gold and annotations must be of one type)"


def more_unknown(others: Any) -> str:
    """The rest of an unknown-gold-item error: how many ``others`` (ids) are not items
    either, the first five named (``""`` when none), so one run lists what to fix."""
    others = list(others)
    if not others:
        return ""
    shown = ", ".join(show(i) for i in others[:5]) + (", ..." if len(others) > 5 else "")
    return f"; nor {'is' if len(others) == 1 else 'are'} {len(others)} more: {shown}"


def _code_hint(value: Any, classes: np.ndarray) -> str:
    """Error hint for a gold label ``value`` that is a class code of ``classes`` that are not
    numbers (``1`` for ``'dog'``), else ``""``: a mapping takes the class labels."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "iufb" or isinstance(value, (bool, np.bool_)) or \
            not isinstance(value, (int, np.integer)) or not 0 <= value < len(classes):
        return ""
    return f" (class code {value} is {show(classes[value])}: a mapping takes class labels)"


def gold_mapping(gold: Any, classes: np.ndarray, items: Optional[np.ndarray] = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(item ids (G,), class codes (G,))`` of a mapping item id -> class label (a dict or a
    ``pandas.Series``). An item given twice, an unknown item (with ``items``: the
    annotations' item ids) and a label outside ``classes`` (NaN, a list, another type) are
    errors naming the item and the value. True/False labels are the classes 1 and 0 (and 0/1
    are False/True against boolean classes), as the readers read them
    (:func:`crowd_keras.codes.booleans_as_codes`). Shared by the in-memory fit
    (:func:`gold_codes`) and the partitioned one (``crowd_keras.distributed``)."""
    if not isinstance(gold, (dict, pd.Series)):
        _not_a_mapping(gold, "")
        raise CrowdDataError(f"gold must be a mapping item -> label (a dict or a pandas "
                             f"Series), got {type(gold).__name__} (class codes aligned with "
                             "the items need the annotations in memory)")
    series = pd.Series(gold, dtype=object) if isinstance(gold, dict) else gold
    if series.index.has_duplicates:
        dup = series.index[series.index.duplicated()][0]
        raise CrowdDataError(f"gold item {show(dup)} is given more than once "
                             f"({int(series.index.duplicated().sum())} repeat(s)): one known "
                             "label per item")
    if items is not None:
        pos = pd.Index(items).get_indexer(series.index)
        if (pos < 0).any():
            bad = series.index[pos < 0]
            raise CrowdDataError(f"gold item {show(bad[0])} is not an item of the annotations"
                                 f"{written_alike(bad[0], items)}{more_unknown(bad[1:])}")
    # a gold True is class 1, as the readers read a True label
    values = booleans_as_codes(series.to_numpy(), classes)
    try:
        cls = pd.Index(classes).get_indexer(values)
    except TypeError:   # an unhashable label (a list, a dict): find it to name it
        cls = np.array([-1 if isinstance(v, (list, dict, set, np.ndarray)) else 0
                        for v in values])
    if (cls < 0).any():
        j = int(np.argmax(cls < 0))
        value = series.iloc[j]
        # a mapping has no 'unknown' value (-1 is for codes aligned with the items)
        unknown = (np.ndim(value) == 0 and pd.isna(value)) or \
            (isinstance(value, (int, np.integer)) and value == -1)
        hint = "; leave the items without a known class out of the mapping (e.g. " \
            "gold.dropna())" if unknown else \
            (written_alike(value, classes, "class") or _code_hint(value, classes)
             if np.ndim(value) == 0 else "")
        raise CrowdDataError(f"gold label {show(value)} of item {show(series.index[j])} is not "
                             f"one of the classes {np.asarray(classes).tolist()}{hint}")
    return series.index.to_numpy(), cls.astype(np.int64)


def gold_codes(ann: Annotations, gold: Any,
               read_from: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Item codes and class codes of the known true classes in ``gold``.

    ``gold`` is a mapping (or ``pandas.Series``) from item id to class label, or an array of
    class *codes* aligned with ``ann.item_ids`` with -1 where the class is unknown (the
    ``truth`` arrays of the loaders). Unknown items, labels outside ``ann.classes`` and codes
    out of range are errors naming the item and the value. ``read_from``: what ``ann`` was
    read from; an array of codes beside a long frame is refused (the order it follows, the
    sorted item ids of the annotations read from the frame, is not the frame's).
    """
    if isinstance(gold, (dict, pd.Series)):
        ids, cls = gold_mapping(gold, ann.classes, items=ann.item_ids)
        return pd.Index(ann.item_ids).get_indexer(ids).astype(np.int64), cls
    _not_a_mapping(gold, f"or {ann.n_items} integer class codes aligned with the items "
                         "(-1 = unknown)")
    if isinstance(read_from, pd.DataFrame):
        raise CrowdDataError("gold given as an array of class codes beside a frame of "
                             "annotations: it would follow the item ids of the annotations "
                             "read from the frame (sorted), not the frame's rows; give gold as "
                             "a mapping {item id: label} or a pandas Series indexed by item id")
    codes = np.asarray(gold)
    if codes.shape != (ann.n_items,) or codes.dtype.kind not in "iu":
        raise CrowdDataError(f"gold must be a mapping item -> label, or {ann.n_items} integer "
                             f"class codes aligned with the items (-1 = unknown); got an array "
                             f"of shape {codes.shape} and dtype {codes.dtype}"
                             + ("; write -1, not NaN, where the class is unknown"
                                if codes.dtype.kind == "f" and np.isnan(codes).any() else ""))
    bad = (codes < -1) | (codes >= ann.n_classes)
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"gold code {codes[i]} of item {show(ann.item_ids[i])} is outside "
                             f"-1..{ann.n_classes - 1}")
    known = np.flatnonzero(codes >= 0)
    return known.astype(np.int64), codes[known].astype(np.int64)


#: The attribute holding the annotator report of a model fitted partition by partition.
PARTITIONED = "partitioned_annotator_quality_"


def partitioned_report(model: Any) -> Optional[pd.DataFrame]:
    """The ``annotator_quality_`` of a ``model`` fitted partition by partition, computed from
    its partitions (``crowd_keras.distributed.aggregate`` sets it; the model holds no
    annotations to count), or None for a model fitted in memory."""
    report = model.__dict__.get(PARTITIONED)
    return None if report is None else report.copy()


class LabelModel(Params):
    """Base class: a model of annotators that infers each item's true label.

    Subclasses implement :meth:`fit`, setting ``annotations_``, ``posteriors_`` (items, K),
    ``confusion_matrices_`` (annotators, K, K; rows = true class) and ``class_priors_``
    (K,), and :meth:`_posteriors_for` to score new annotations.

    Attributes:
        item_log_prior_: (I, K) what each item's posterior got besides its labels (the
            gold items' clamps, a classifier's ``pred_probs``), or None; models that take
            gold or ``pred_probs`` (``accepts_gold``, ``accepts_pred_probs``).
        n_classes_: K; models fitted by the EM-step protocol
            (:class:`~crowd_keras.aggregation.em.EMLabelModel`).
        vote_shares_: (K,) each class's share of all votes, the start of the items without
            votes; models fitted by the EM-step protocol.
        n_iter_: iterations run; models fitted by an iterative algorithm.
        regime_: ``"crowd"`` or ``"labeling_functions"``; models with a
            ``labeling_functions`` setting (:class:`~crowd_keras.aggregation.
            labeling_functions.LabelingFunctionFallback`).
        labeling_function_model_: the abstain-aware model that answers in the labeling
            functions regime, else None; models with a ``labeling_functions`` setting.
        classifier_weight_: the learned weight ``w`` of the classifier's ``pred_probs``;
            after ``fit(..., pred_probs=...)``.
        classifier_marginal_: (K,) the classifier's mean probabilities ``p̄``; after
            ``fit(..., pred_probs=...)``.
        classifier_quality_: the mean posterior of the classifier's top class (its
            accuracy against the consensus); after ``fit(..., pred_probs=...)``.
        n_unknown_annotations_: the annotations of annotators not seen in ``fit`` that the
            last ``predict_proba(new annotations)`` ignored.
        annotations_: the fitted :class:`~crowd_keras.Annotations` (I items, A annotators,
            K classes).
        posteriors_: (I, K) each item's posterior of its true class.
        confusion_matrices_: (A, K, K) each annotator's ``p(label | true class)``, rows =
            true class.
        class_priors_: (K,) the class prior.
        posterior_log_prior_: (K,) ``log ρ_k``, the class-prior factor that ``posteriors_``
            carry where ``posterior_has_class_prior`` (``q_ik ∝ ρ_k · p(labels_i | z_i = k)``):
            ``log class_priors_`` for Bayes' rule; a variational model's ``E[log τ_k]``.
    """

    #: True: ``fit(annotations, gold=...)`` fixes the true class of the gold items
    accepts_gold: bool = False
    #: True: ``fit(annotations, pred_probs=...)`` takes a classifier's probabilities of the items
    accepts_pred_probs: bool = False
    #: True: ``posteriors_`` are Bayes' rule with a class-prior factor, ``q_ik ∝ ρ_k ·
    #: p(labels_i | z_i = k)`` with ``log ρ = posterior_log_prior_``, so the prior can be
    #: swapped (:func:`~crowd_keras.numerics.shift_class_prior`;
    #: ``AutoLabelModel(target_prior=...)``)
    posterior_has_class_prior: bool = False

    annotations_: Annotations
    posteriors_: np.ndarray
    confusion_matrices_: np.ndarray
    class_priors_: np.ndarray

    def fit(self, annotations: Any, **kwargs: Any) -> "LabelModel":  # pragma: no cover - abstract
        raise NotImplementedError

    def fit_predict_proba(self, annotations: Any, **kwargs: Any) -> np.ndarray:
        """``fit(annotations, **kwargs)``, then the fitted items' posteriors (items, K),
        columns in ``annotations_.classes`` order (crowd-kit's ``fit_predict_proba`` is a
        frame indexed by task with a column per label)."""
        return self.fit(annotations, **kwargs).predict_proba()

    def fit_predict(self, annotations: Any, **kwargs: Any) -> np.ndarray:
        """``fit(annotations, **kwargs)``, then the fitted items' class codes (items,), as
        scikit-learn's ``fit_predict``. crowd-kit's returns the labels themselves, a Series
        indexed by task: here ``predict_labels()`` gives the labels (codes and labels agree
        for integer labels ``0..K-1``), in ``annotations_.item_ids`` order."""
        return self.fit(annotations, **kwargs).predict()

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "posteriors_":   # a new fit: a predict's count under the previous one is stale
            self.__dict__.pop("n_unknown_annotations_", None)
            self.__dict__.pop(PARTITIONED, None)   # and so is a partitioned fit's report
        super().__setattr__(name, value)

    def _check_items_held(self) -> None:
        """A model fitted partition by partition (``crowd_keras.distributed.aggregate``) holds
        its parameters but not its items' posteriors (``posteriors_`` is empty): asking for
        the fitted items' predictions or quality scores is an error saying where they are
        (an empty array before)."""
        if PARTITIONED in self.__dict__:
            raise ValueError(f"this {type(self).__name__} was fitted partition by partition "
                             "(crowd_keras.distributed.aggregate): its items' labels and "
                             "posteriors are the result's labels (a Dask DataFrame) and its "
                             "quality scores need the annotations; pass annotations to score "
                             "them here (predict_proba(new_annotations))")

    def __sklearn_is_fitted__(self) -> bool:
        """Fitted once ``fit`` has set ``posteriors_`` (scikit-learn's ``check_is_fitted``
        asks this, not for any ``_``-ending attribute: BWA's parameter ``lambda_`` ends so)."""
        return hasattr(self, "posteriors_")

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def predict_proba(self, annotations: Any = None) -> np.ndarray:
        """Items × classes posterior of the true class (see the module docstring).

        With new annotations, annotators not seen in fit are ignored and counted in
        ``n_unknown_annotations_`` (models that can place unseen annotators say so; the votes
        count every vote), with a ``UserWarning`` when that leaves out every one. A new
        frame or matrix is read with the fitted classes (a batch may use a few of them).
        The fitted ``annotations_`` object itself, of a fit that knew more of its items than
        their labels (gold held at its class, a classifier's ``pred_probs``:
        ``item_log_prior_``), gets the fitted posteriors, as the quality scores read it.
        """
        self._check_fitted()
        if annotations is None:
            self._check_items_held()
            return self.posteriors_.copy()
        if annotations is self.annotations_ and getattr(self, "item_log_prior_", None) is not None:
            # scored as new, its gold items would lose their class (predict(ann) against
            # label_issues(ann)); without a prior both ways agree and it is still re-scored
            self.n_unknown_annotations_ = 0    # as re-scoring them says: none left out
            return self.posteriors_.copy()
        return self._posteriors_for_new(self._read_new(annotations))

    def _read_new(self, annotations: Any) -> Annotations:
        """New annotations as ``Annotations``: a frame or a matrix is read with the fitted
        classes (read alone, a batch whose labels are a few of the classes would have only
        those, and differ from the fit's)."""
        if isinstance(annotations, Annotations):
            return annotations
        self._check_fitted()
        try:
            return as_annotations(annotations, classes=self.annotations_.classes)
        except CrowdDataError as err:
            text = str(err)
            if not (isinstance(annotations, pd.DataFrame) and "has no column(s)" in text):
                raise
            # the fit's reader arguments are not kept: say how to read other column names
            raise CrowdDataError(
                f"{text}. A frame of new annotations is read with the columns task, worker, "
                "label: rename its columns, or read it with Annotations.from_frame(frame, "
                "item=..., annotator=..., label=..., classes=model.annotations_.classes)"
            ) from None

    def predict(self, annotations: Any = None) -> np.ndarray:
        """Most probable class code per item (ties to the lowest code)."""
        return np.argmax(self.predict_proba(annotations), axis=1)

    def predict_labels(self, annotations: Any = None) -> np.ndarray:
        """Most probable class name per item."""
        self._check_fitted()
        return self.annotations_.classes[self.predict(annotations)]

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        aligned = self._align(new)
        self._say_if_all_left_out(new)
        return self._posteriors_for(aligned)

    def _say_if_all_left_out(self, new: Annotations) -> None:
        """Warn when :meth:`_align` left out every one of ``new``'s annotations: documented
        (left out and counted), but a batch that loses every label is more often misread ids
        (a matrix's positions against named annotators) than new annotators."""
        if new.n_annotations == 0 or self.n_unknown_annotations_ < new.n_annotations:
            return
        warn(
            f"{type(self).__name__}: none of the {new.n_annotations} new annotations is by an "
            f"annotator of the fit (new: {show(new.annotator_ids[0])}, ...; fitted: "
            f"{show(self.annotations_.annotator_ids[0])}, ...), so all are left out and every "
            "item gets the fitted class prior. A NumPy matrix's columns are the annotators "
            "0, 1, ...; give a frame or Annotations with the fitted ids, or refit with the new "
            "annotators")

    def _handed_over(self, model: "LabelModel", new: Any, *args: Any) -> np.ndarray:
        """``model.predict_proba(new, *args)`` for the model this one handed its fit to (the
        labeling-function model, the default model's choice, a wrapped sequence model), whose
        count of left-out annotations is reported here too (``n_unknown_annotations_``,
        absent when that model places unseen annotators)."""
        post = model.predict_proba(new, *args)
        self.__dict__.pop("n_unknown_annotations_", None)
        if hasattr(model, "n_unknown_annotations_"):
            self.n_unknown_annotations_ = model.n_unknown_annotations_
        return post

    def _posteriors_for(self, annotations: Annotations) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} cannot score new annotations")

    def _align(self, new: Annotations) -> Annotations:
        """Re-code `new` onto the fitted annotator ids and classes (unknown annotators dropped,
        counted in ``n_unknown_annotations_``)."""
        aligned, self.n_unknown_annotations_ = self._recoded(new)
        return aligned

    def _recoded(self, new: Annotations) -> tuple[Annotations, int]:
        """:meth:`_align` without setting anything: ``(new re-coded, annotations dropped)``."""
        ref = self.annotations_
        self._check_classes(new)
        if np.array_equal(new.annotator_ids, ref.annotator_ids):  # same coding: nothing to do
            return new, 0
        codes = pd.Index(ref.annotator_ids).get_indexer(new.annotator_ids)
        known = self._check_annotator_types(new, codes)
        return Annotations(new.items[known], codes[new.annotators[known]], new.labels[known],
                           item_ids=new.item_ids, annotator_ids=ref.annotator_ids,
                           classes=ref.classes), int((~known).sum())

    def _check_classes(self, new: Annotations) -> None:
        """Raise unless ``new`` has the fitted classes, in their order; for a batch built with
        a few of them (``from_wide`` of a batch without ``n_classes``) the error says how to
        read it with them."""
        fitted = self.annotations_.classes
        if np.array_equal(new.classes, fitted):
            return
        among = bool((pd.Index(fitted).get_indexer(new.classes) >= 0).all())
        hint = ""
        if among and len(new.classes) < len(fitted):
            hint = f" (a batch that uses {len(new.classes)} of them: build it with classes=" \
                f"{fitted.tolist()} or n_classes={len(fitted)}, or pass the frame or matrix, " \
                "which is read with the fitted classes)"
        elif among:   # codes follow the classes' order: a reordering would swap them
            hint = f" (the same classes in another order: build it with classes=" \
                f"{fitted.tolist()})"
        raise CrowdDataError(f"classes {new.classes.tolist()} differ from the fitted classes "
                             f"{fitted.tolist()}{hint}")

    def _check_annotator_types(self, new: Annotations, codes: np.ndarray) -> np.ndarray:
        """(n_annotations,) whether each annotation of ``new`` is by a fitted annotator, given
        ``codes`` (new annotators,) their fitted codes (-1: unknown). Raises when none is
        although one is written like a fitted annotator: ids of another type (a CSV's "7"
        against 7), not new annotators (left out, or placed, they lost their fitted quality)."""
        known = codes[new.annotators] >= 0
        if len(known) and not known.any():
            ref = self.annotations_
            # one hash lookup per new id (a set rebuilt per id was O(new × fitted) annotators)
            written = pd.Index(ref.annotator_ids).astype(str)
            once = np.flatnonzero(~written.duplicated())   # 7 and "7" fitted: the first
            match = written[once].get_indexer([str(a) for a in new.annotator_ids])
            alike = np.flatnonzero(match >= 0)
            if len(alike):
                first = new.annotator_ids[alike[0]]
                fitted = ref.annotator_ids[once[match[alike[0]]]]
                raise CrowdDataError(
                    f"none of the new annotations' annotators was fitted, but annotator "
                    f"{show(first)} is written like the fitted annotator {show(fitted)}: "
                    "give the ids in the type they had in fit")
        return known

    @property
    def tied_items_(self) -> np.ndarray:
        """Boolean (items,): the most probable class is not unique (posteriors within 1e-9).

        ``predict`` is the argmax: an exact tie goes to the lowest tied class code, a near tie
        to the class that rounding made larger. Both are reported here (and counted by
        ``n_tied_items_``) so that they are never decided silently.
        """
        self._check_fitted()
        self._check_items_held()
        return top_classes(self.posteriors_, tol=1e-9).sum(axis=1) > 1

    @property
    def n_tied_items_(self) -> int:
        """Number of items whose most probable class is tied (see ``tied_items_``)."""
        return int(self.tied_items_.sum())

    @property
    def posterior_log_prior_(self) -> np.ndarray:
        """(K,) ``log ρ``: the class-prior factor of ``posteriors_`` (and of
        ``predict_proba(new)``, scored with the same fitted state), what a prior shift
        divides out (:func:`~crowd_keras.aggregation.auto.under_target`); read where
        ``posterior_has_class_prior``. Here ``log class_priors_`` (floored at ``log 1e-300``
        as the Dawid-Skene E-step floors it); a model whose E-step weighs the classes by
        something else (a variational ``exp E[log τ]``) overrides it."""
        self._check_fitted()
        return np.log(np.maximum(np.asarray(self.class_priors_, np.float64), 1e-300))

    def own_vote_factors(self, votes: Any, start: int, stop: int) -> np.ndarray:
        """(stop - start, K) the factor by which each of the votes ``start:stop`` multiplied
        its item's class posterior, up to a constant per vote: what ``expected_accuracy``
        divides out of the posterior to score a label without its own vote.

        ``votes``: the (I, A·K) incidence of the scored items (a vote is a stored entry, in
        CSR order: by item, then annotator; column ``a·K + l``), the rows of the posteriors.
        Here ``π_a[k, l]``, the Dawid-Skene E-step's factor (Dawid & Skene 1979, Eq. 2.5);
        a model whose E-step weighs a vote by something else (a variational
        ``exp E[log v_akl]``, a mixture of subtypes) overrides it."""
        pi = np.asarray(self.confusion_matrices_, dtype=np.float64)
        cols = votes.indices[start:stop]
        k = pi.shape[1]
        return pi[cols // k, :, cols % k]

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        """Per annotator: id, number of annotations, estimated accuracy and expected accuracy.

        ``accuracy`` is Σ_k prior_k π_kk: the chance that the annotator's label equals the
        truth under the fitted model. ``expected_accuracy`` (when the fitted annotations are
        at hand) is the share of its own labels expected to be right, each scored by its
        item's posterior without the annotator's vote
        (:func:`crowd_keras.aggregation.quality.annotator_accuracy`, the vote's factor
        :meth:`own_vote_factors` divided out): it depends on no
        confusion row the annotator rarely met, so it ranks annotators with few labels better
        (a ranking score: where items have few other labels, the posterior without the
        annotator's vote is unsure of the truth and it reads below the accuracy).
        An annotator without annotations (a column of NaN in ``from_wide``'s layout) is listed
        with NaN in both: the fit learned nothing about it, and its prior matrix would rank it
        among the others.
        """
        self._check_fitted()
        report = partitioned_report(self)
        if report is not None:
            return report
        return self.annotator_quality(self.annotations_.annotations_per_annotator())

    def annotator_quality(self, n_annotations: np.ndarray) -> pd.DataFrame:
        """:attr:`annotator_quality_` given the (annotators,) annotations per annotator (a
        partitioned fit counts them over its partitions)."""
        acc = np.einsum("k,akk->a", self.class_priors_, self.confusion_matrices_)
        frame = pd.DataFrame({"annotator": self.annotations_.annotator_ids,
                              "n_annotations": n_annotations,
                              "accuracy": without_evidence(acc, n_annotations)})
        ann, post = self.annotations_, getattr(self, "posteriors_", None)
        if post is not None and post.shape[0] == ann.n_items and ann.n_annotations:
            from .quality import annotator_accuracy
            frame["expected_accuracy"] = annotator_accuracy(
                post, ann, self.confusion_matrices_,
                factors=partial(self.own_vote_factors, ann.vote_incidence()))
        return frame

    # Quality scores (crowd_keras.aggregation.quality): the fitted items' by default, or
    # those of new annotations scored by the fitted model.

    def _scored(self, annotations: Any) -> tuple[Annotations, np.ndarray, Optional[np.ndarray]]:
        """The annotations scored, the model's posteriors for their items and, for the fitted
        items, the item log-prior of the fit (``item_log_prior_``: gold, a classifier).

        New annotations come back without the labels of annotators not in the fit when
        ``predict_proba`` leaves those out (it counts them in ``n_unknown_annotations_``), so
        the held-out scores and the counts leave them out too; a model that places unseen
        annotators (the mixture of groups) scores them."""
        self._check_fitted()
        if annotations is None or annotations is self.annotations_:
            self._check_items_held()
            return self.annotations_, self.posteriors_, getattr(self, "item_log_prior_", None)
        ann = self._read_new(annotations)
        self.__dict__.pop("n_unknown_annotations_", None)   # set again by predict_proba when
        post = self.predict_proba(ann)                       # it leaves annotations out
        if hasattr(self, "n_unknown_annotations_") and \
                not np.array_equal(ann.annotator_ids, self.annotations_.annotator_ids):
            ann = self._align(ann)
        return ann, post, None

    def _known_confusions(self, ann: Annotations) -> Optional[np.ndarray]:
        """The fitted confusion matrices when ``ann`` is coded with the fitted annotators."""
        conf = getattr(self, "confusion_matrices_", None)
        if conf is None or not np.array_equal(ann.annotator_ids, self.annotations_.annotator_ids):
            return None
        conf = np.asarray(conf)
        return conf if conf.shape == (ann.n_annotators, ann.n_classes, ann.n_classes) else None

    def _quality_reference(self, ann: Annotations) -> Any:
        """None for the fitted annotations; for new ones the fit's
        :func:`~crowd_keras.aggregation.quality.reference` (computed once per fit): new
        items are scored under the fit's counts, each alone. A model fitted partition by
        partition holds no items: the annotations given are scored as its fitted ones."""
        from . import quality
        if ann is self.annotations_ or PARTITIONED in self.__dict__:
            return None
        # kept with the posteriors it was made from: a refit's new array is not it (an id
        # could be reused once the old array is freed)
        cached = self.__dict__.get("_reference_cache")
        if cached is None or cached[0] is not self.posteriors_:
            cached = (self.posteriors_, quality.reference(
                self.posteriors_, self.annotations_,
                item_log_prior=getattr(self, "item_log_prior_", None)))
            self.__dict__["_reference_cache"] = cached
        return cached[1]

    def consensus_quality(self, annotations: Any = None) -> np.ndarray:
        """(items,) calibrated chance in [0, 1] that each item's consensus (``predict``) is
        its true class: the held-out posterior of the consensus class (see
        :mod:`crowd_keras.aggregation.quality`). ``annotations``: default the fitted ones;
        new ones are scored under the fit (each item alone)."""
        from . import quality
        ann, post, prior = self._scored(annotations)
        return quality.consensus_quality(post, ann, item_log_prior=prior,
                                         reference=self._quality_reference(ann))

    def annotation_quality(self, annotations: Any = None) -> np.ndarray:
        """(annotations,) chance that each annotation's label is its item's true class, in the
        annotations' stored order (``annotations_.to_frame()`` rows)."""
        from . import quality
        given = None if annotations is None else self._read_new(annotations)
        ann, post, prior = self._scored(given)
        reference = self._quality_reference(ann)
        if given is None or ann is given:
            return quality.annotation_quality(post, ann, item_log_prior=prior,
                                              reference=reference)
        # every given annotation, a left-out annotator's too, read against the others
        held = quality.held_out_posteriors(post, ann, item_log_prior=prior,
                                           reference=reference)
        return held[given.items, given.labels]

    def label_issues(self, annotations: Any = None) -> pd.DataFrame:
        """Items ranked by likely error, lowest consensus quality first: a frame ``item,
        consensus_label, consensus_quality, n_annotations``."""
        from . import quality
        ann, post, prior = self._scored(annotations)
        return quality.label_issues(post, ann, item_log_prior=prior,
                                    reference=self._quality_reference(ann))

    def next_to_label(self, k: int, annotations: Any = None,
                      annotators: Optional[Any] = None) -> pd.DataFrame:
        """The ``k`` items whose one more annotation would most reduce the expected error, and
        by whom: a frame ``item, annotator, expected_gain`` (best first). ``annotators``: the
        ids to choose from (default every fitted annotator); each item gets the one with the
        highest expected gain among those who have not labelled it, under the fitted
        confusion matrices shrunk toward the crowd's (see
        :func:`crowd_keras.aggregation.quality.next_to_label`). New ``annotations`` are
        read with the fitted annotators' codes (others' labels are left out, as in
        ``predict_proba``). Gold items of the fit are never proposed (no answer changes
        them), so fewer than ``k`` rows may come back."""
        from . import quality
        ann, post, prior = self._scored(annotations)
        if not np.array_equal(ann.annotator_ids, self.annotations_.annotator_ids):
            # the fitted annotators' codes, to use their matrices; a model that placed the
            # unseen annotators (predict_proba counted none left out) is not told otherwise
            ann = self._recoded(ann)[0]
        return quality.next_to_label(k, post, ann, confusions=self._known_confusions(ann),
                                     annotators=annotators, item_log_prior=prior)
