"""Labeling functions versus crowds: telling the two regimes apart, and the fallback model.

Snorkel labeling functions ("spam if it says 'check out'", else abstain) mostly vote for
one class only. A model that ignores abstentions learns nothing about such a function (its
confusion matrix says "spam" whatever the truth) and falls below majority vote: plain
Dawid-Skene gets 0.48 on WRENCH youtube where voting gets 0.79. The abstain-aware
Dawid-Skene (:class:`~crowd_keras.aggregation.AbstainAwareDawidSkene`), which treats
abstaining as a response, is the model for that regime.

:class:`LabelingFunctionFallback` is how the crowd models (Dawid-Skene, CoNAL, mixture of
groups, LIA) offer ``labeling_functions="auto"``: on labeling-function votes the fit is
that abstain-aware model, held in ``labeling_function_model_`` (an explicit model object,
not state copied into the crowd model's own parameters), and ``regime_`` says which ran.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..annotations import Annotations
from .abstain_dawid_skene import AbstainAwareDawidSkene
from .base import as_annotations, check_settings, gold_codes, partitioned_report
from .em import gold_log_prior
from .pred_probs import check_pred_probs
from .regime import is_labeling_function_data

__all__ = ["LabelingFunctionFallback"]

_MODES = ("auto", "ignore")


class LabelingFunctionFallback:
    """Mixin for crowd label models with a ``labeling_functions="auto"|"ignore"`` parameter.

    ``"auto"``: when :func:`is_labeling_function_data`, :meth:`_fit_labeling_functions`
    fits an :class:`AbstainAwareDawidSkene` (abstention as a response, the most-voted class
    wins, the model breaks ties: never below voting on the WRENCH sets) and the crowd
    model answers through it: ``posteriors_``, ``confusion_matrices_`` and
    ``class_priors_`` are that model's, ``predict_proba(new)`` and ``annotator_quality_``
    are delegated, and queries that only the crowd model can answer raise.
    """

    labeling_functions: str
    #: the crowd model's settings that carry over to the labeling-function model
    _LF_SETTINGS: tuple = ("max_iter", "tol", "smoothing")

    def fit(self, annotations: Any, gold: Any = None, pred_probs: Any = None,
            **kwargs: Any) -> Any:
        """Fit on annotations (an ``Annotations``, a dense items × annotators matrix with -1
        where missing, or a long frame: ``kwargs`` go to its reader). Returns self.

        ``gold``: known true classes of some items (see :func:`~crowd_keras.aggregation.base.
        gold_codes`), for models with ``accepts_gold``: their class is fixed in every E-step
        (semi-supervised EM). On labeling-function votes the abstain-aware model is fitted
        without them and the gold items' posteriors are set to their known class (the
        quality scores and the functions' ``annotator_quality_`` read them so).

        ``pred_probs``: a classifier's out-of-fold class probabilities of the items (I, K), or
        a frame indexed by item id (:func:`~crowd_keras.aggregation.pred_probs.
        check_pred_probs`), for models with ``accepts_pred_probs``: each item's prior is the
        class prior times the classifier's ``(p / p̄)^w``, w learned by its agreement with
        the consensus (:class:`~crowd_keras.aggregation.em.ClassifierAnnotator`;
        ``classifier_weight_``, ``classifier_quality_``, ``classifier_marginal_``).
        """
        self._check_params()
        check_settings(self)   # named as this model's, not as the labeling-function model's
        ann = as_annotations(annotations, **kwargs)
        if gold is not None and not self.accepts_gold:
            raise TypeError(f"{type(self).__name__}.fit() does not take gold labels")
        if pred_probs is not None and not getattr(self, "accepts_pred_probs", False):
            raise TypeError(f"{type(self).__name__}.fit() does not take pred_probs")
        for name in ("classifier_quality_", "classifier_weight_", "classifier_marginal_"):
            self.__dict__.pop(name, None)                      # from an earlier fit
        probs = None if pred_probs is None else check_pred_probs(pred_probs, ann)
        known = None if gold is None else gold_codes(ann, gold, annotations)
        if self._fit_labeling_functions(ann):
            if probs is not None:
                raise ValueError(f"{type(self).__name__}: these votes look like labeling "
                                 "functions and the abstain-aware model that fits them takes "
                                 "no pred_probs; pass labeling_functions='ignore' to fit this "
                                 "model with the classifier")
            if known is not None:
                self.hold_gold(known[0], known[1], ann.n_classes)
            return self
        prior = None if known is None else gold_log_prior(ann.n_items, ann.n_classes, *known)
        if probs is not None:
            return self._fit_crowd(ann, prior, pred_probs=probs)
        if prior is None:
            return self._fit_crowd(ann)
        return self._fit_crowd(ann, prior)

    def hold_gold(self, items: np.ndarray, classes: np.ndarray, n_classes: int) -> None:
        """After a labeling-function fit: the gold ``items`` (G,) answer their known
        ``classes`` (G,) (the abstain-aware model is fitted without them)."""
        self.posteriors_ = self.posteriors_.copy()
        self.posteriors_[items] = np.eye(n_classes)[classes]
        # the quality scores read the gold items at their class too
        self.item_log_prior_ = gold_log_prior(len(self.posteriors_), n_classes, items, classes)

    def _check_params(self) -> None:
        """Validate the constructor arguments before any work (subclasses extend it)."""

    def _fit_crowd(self, ann: Annotations) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_labeling_functions(self, ann: Annotations) -> bool:
        """Fit the labeling-function model when the regime applies; True when it did."""
        mode = self.labeling_functions
        if mode not in _MODES:
            raise ValueError(f"labeling_functions must be one of {_MODES}, got {mode!r}")
        self.regime_ = "crowd"
        self.labeling_function_model_ = None
        if mode == "ignore" or not is_labeling_function_data(ann):
            return False
        # the fallback sets the common attributes only: the crowd model's own from an earlier
        # fit (its item_log_prior_ of gold, a log-likelihood, LIA's networks) would outlive it
        params = set(self.get_params(deep=False))   # type: ignore[attr-defined]
        for name in [name for name in vars(self) if name not in params]:
            delattr(self, name)
        self.adopt_labeling_function_model(self.labeling_function_model().fit(ann), ann)
        return True

    def labeling_function_model(self) -> AbstainAwareDawidSkene:
        """The unfitted labeling-function model, with this model's settings."""
        settings = {name: getattr(self, name) for name in self._LF_SETTINGS}
        return AbstainAwareDawidSkene(abstain="response", **settings)

    def adopt_labeling_function_model(self, model: AbstainAwareDawidSkene,
                                      ann: Annotations) -> None:
        """Answer through the fitted labeling-function ``model`` (fitted on ``ann``)."""
        self.regime_ = "labeling_functions"
        self.labeling_function_model_ = model
        self.annotations_ = ann
        self.posteriors_ = model.posteriors_
        self.class_priors_ = model.class_priors_
        self.confusion_matrices_ = model.confusion_matrices_
        self.n_iter_ = model.n_iter_

    def _require_crowd_regime(self, missing: str) -> None:
        """Raise for a crowd-model query after the labeling-function model was fitted."""
        if getattr(self, "labeling_function_model_", None) is not None:
            raise RuntimeError("this fit used the labeling-function model (AbstainAwareDawidSkene,"
                               f" regime_='labeling_functions'): {missing}; pass "
                               "labeling_functions='ignore' to fit this model as is")

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        if getattr(self, "labeling_function_model_", None) is not None:
            return self._handed_over(self.labeling_function_model_, new)
        return super()._posteriors_for_new(new)   # type: ignore[misc]

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        report = partitioned_report(self)
        if report is not None:
            return report
        if getattr(self, "labeling_function_model_", None) is not None:
            return self.labeling_function_quality()
        return super().annotator_quality_   # type: ignore[misc]

    def labeling_function_quality(self) -> pd.DataFrame:
        """The labeling-function model's ``annotator_quality_`` under this model's
        posteriors: its own, except that gold items count at their class (:meth:`hold_gold`;
        read off the model's unclamped posteriors, the report ignored the gold)."""
        return self.labeling_function_model_.annotator_quality_under(self.posteriors_)
