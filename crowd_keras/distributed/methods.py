"""Label models fitted block by block: each a small strategy of numpy steps.

A :class:`Method` wraps an unfitted in-memory label model (it holds the settings and, at the
end, the fitted parameters) and gives the engine (:mod:`crowd_keras.distributed.engine`)
the steps it maps over blocks of items (:class:`~crowd_keras.distributed.blocks.Block`):

- ``prepare(summary)``: resolve the settings from sums over all items; may hand over to
  another method (Dawid-Skene on labeling-function votes fits the abstain-aware model, as the
  in-memory ``DawidSkene`` does);
- ``choose(data)``: a method that picks its model by fitting on the data (``"auto"``,
  :mod:`crowd_keras.distributed.auto`: held-out fits of its candidates) does so here, with
  the :class:`~crowd_keras.distributed.PartitionedAnnotations`; the others return themselves;
- ``initial(block)``: per block, the sufficient statistics of the initial posteriors;
- ``update(stats, summary)``: the M-step on the statistics summed over the blocks (a tree
  reduction), run once in the client: the in-memory model's own M-step function;
- ``step(block, params)``: per block, the E-step, the statistics of its posteriors and its
  summed log-likelihood; EM stops when the mean log-likelihood (``normalizer``) changes by
  less than the model's ``tol``, as in memory;
- ``posteriors(block, params)``: the reported posteriors of a block's items;
- ``finish(fit, template)`` and ``quality(model, fit, report)``: the fitted in-memory model
  (parameters; the per-item posteriors stay partitioned) and its ``annotator_quality_``
  (``expected_accuracy``, a sum over annotations, comes from one more pass over the blocks
  when ``reports_expected_accuracy``).

Blocks that carry a classifier's probabilities (``Block.pred_probs``; the summary counts
them, ``Summary.n_pred_probs``) are fitted with the classifier as a learned per-item prior by
every model that ``accepts_pred_probs``
(:class:`~crowd_keras.aggregation.em.ClassifierAnnotator`, as ``fit(annotations,
pred_probs=...)`` in memory); the others fit the annotations alone.

Because the statistics are sums over items and every step is the in-memory model's function,
a partitioned fit equals the in-memory fit however the items are split (up to the order of
floating-point sums). **Adding a method**: write its strategy (here, or in its own module as
``"auto"``) and ``register_method(registry_name, factory)``; ``aggregate`` and the Snorkel
adapter's Dask path then accept it by its registry name or an instance.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, List, Optional, Union

import numpy as np
import pandas as pd

from ..aggregation.abstain_dawid_skene import AbstainAwareDawidSkene
from ..aggregation.base import LabelModel
from ..aggregation.em import ClassifierAnnotator, EMLabelModel
from ..aggregation.majority_vote import MajorityVote
from ..aggregation.dawid_skene import sufficient_statistics
from ..aggregation.regime import LABELING_FUNCTION_SHARE, one_class_share
from ..aggregation.registry import LABEL_MODELS, get_label_model, label_model_class
from ..annotations import Annotations
from ..registry import LazyRegistry
from .blocks import Block, Summary

__all__ = ["Method", "Fit", "MajorityVoteMethod", "AbstainDawidSkeneMethod",
           "ProtocolMethod",
           "METHODS", "register_method", "supported_methods", "method_for",
           "labeling_function_method"]


@dataclass
class Fit:
    """What a partitioned fit leaves: the prepared method, the last parameters, the statistics
    of the last posteriors, the log-likelihood and wall time (s) per EM iteration, and the
    fitted model."""

    method: "Method"
    params: Any
    stats: tuple
    summary: Summary
    history: List[float] = field(default_factory=list)
    seconds: List[float] = field(default_factory=list)
    model: Optional[LabelModel] = None


class Method:
    """One label model fitted block by block (see the module docstring for the protocol)."""

    #: False: ``initial`` + ``update`` is the whole fit (majority vote).
    iterative = True
    #: True: ``quality`` needs the statistics of the reported posteriors (one more pass).
    needs_report = False
    #: True: the annotator report gets ``expected_accuracy`` from the reported posteriors and
    #: the fitted confusion matrices (one more pass), as the in-memory model's report has it.
    reports_expected_accuracy = True
    #: The label models (a class and its subclasses) this strategy fits: a registry name
    #: given to another model (``register_label_model`` replaces a built-in one) is not
    #: fitted by the strategy kept under that name. None: any.
    model_class: Optional[type] = None

    def __init__(self, model: LabelModel) -> None:
        self.model = model

    @property
    def max_iter(self) -> int:
        return int(self.model.max_iter)

    @property
    def tol(self) -> float:
        return float(self.model.tol)

    @property
    def relative_tol(self) -> bool:
        """True: EM stops when the objective moves by less than ``tol`` times its size (the
        model's ``relative_tol``, as its in-memory loop)."""
        return bool(getattr(self.model, "relative_tol", False))

    def prepare(self, summary: Summary) -> "Method":
        self.k = summary.votes.shape[1]
        return self

    def choose(self, data: Any) -> "Method":
        """The method to run on ``data`` (a ``PartitionedAnnotations``), after ``prepare``:
        itself, unless the method picks its model by fitting on the data."""
        return self

    def initial(self, block: Block) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, stats: tuple, summary: Summary) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def step(self, block: Block, params: Any) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def normalizer(self, summary: Summary) -> float:
        """What the summed log-likelihood is divided by for the stopping rule."""
        return max(summary.n_annotations, 1)

    def posteriors(self, block: Block, params: Any) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def report_posteriors(self, block: Block, params: Any) -> np.ndarray:
        """(items, K) the posteriors an annotator report is summed from
        (:meth:`~crowd_keras.distributed.engine.PartitionedAnnotations.statistics`):
        :meth:`posteriors`."""
        return self.posteriors(block, params)

    def label_posteriors(self, block: Block, params: Any, model: LabelModel) -> np.ndarray:
        """(items, K) the posteriors the returned labels are read from, given the finished
        ``model``: :meth:`posteriors` (``AutoLabelModel`` may re-express them under its
        ``target_prior``)."""
        return self.posteriors(block, params)

    def finish(self, fit: Fit, template: Annotations) -> LabelModel:  # pragma: no cover
        raise NotImplementedError

    def quality(self, model: LabelModel, fit: Fit, report: Optional[tuple]) -> pd.DataFrame:
        """The model's ``annotator_quality_`` (crowd models: Σ_k prior_k π_kk)."""
        return model.annotator_quality(fit.summary.votes.sum(axis=1))

    def _check_iterations(self) -> None:
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be at least 1, got {self.max_iter}")


class MajorityVoteMethod(Method):
    """:class:`~crowd_keras.aggregation.MajorityVote`: one pass (posteriors, then the
    confusion counts of each annotator against the winners)."""

    iterative = False
    model_class = MajorityVote

    def prepare(self, summary: Summary) -> Method:
        self.model.check_tie_break()
        if self.model.tie_break == "random" and self.model.random_state is None:
            # each block would draw its own seed, and its labels another than its counts
            raise ValueError("tie_break='random' needs a random_state in a partitioned fit "
                             "(its ties are drawn from the item ids and that seed)")
        self.vote_prior = summary.vote_shares
        return super().prepare(summary)

    def posteriors(self, block: Block, params: Any = None) -> np.ndarray:
        post = self.model.posteriors_from_counts(block.label_counts(self.k), self.vote_prior,
                                                   block.item_ids)
        if block.item_log_prior is not None:   # gold items: their known class
            known = np.isfinite(block.item_log_prior)
            clamped = known.sum(axis=1) == 1
            post[clamped] = known[clamped]
        return post

    def initial(self, block: Block) -> tuple:
        winners = np.argmax(self.posteriors(block), axis=1)
        won = np.eye(self.k)[winners] * (block.annotations_per_item() > 0)[:, None]
        return sufficient_statistics(block.XT, won)

    def update(self, stats: tuple, summary: Summary) -> Any:
        counts, winners = stats   # counts[a·K + label, winner]
        return counts.reshape(-1, self.k, self.k).transpose(0, 2, 1), winners

    def finish(self, fit: Fit, template: Annotations) -> LabelModel:
        model = self.model
        model.annotations_ = template
        model.posteriors_ = np.zeros((0, self.k))
        model.vote_prior_ = self.vote_prior
        model.set_fitted_counts(*fit.params)
        return model


def _gold_class_counts(block: Block, k: int) -> np.ndarray:
    """(K,) the block's gold items (one class left by its item log-prior) per class."""
    if block.item_log_prior is None:
        return np.zeros(k, dtype=np.int64)
    known = np.isfinite(block.item_log_prior)
    return known[known.sum(axis=1) == 1].sum(axis=0).astype(np.int64)


def labeling_function_method(model: Any, summary: Summary) -> Optional[Method]:
    """The prepared abstain-aware method that a crowd ``model`` with
    ``labeling_functions="auto"`` hands over to on labeling-function votes (as its in-memory
    ``fit`` does), or None; checks ``labeling_functions``."""
    mode = model.labeling_functions
    if mode not in ("auto", "ignore"):
        raise ValueError(f"labeling_functions must be one of ('auto', 'ignore'), got {mode!r}")
    model.regime_, model.labeling_function_model_ = "crowd", None
    if mode == "auto" and one_class_share(summary.votes) >= LABELING_FUNCTION_SHARE:
        if summary.n_pred_probs:    # as the in-memory fit (LabelingFunctionFallback.fit)
            raise ValueError(f"{type(model).__name__}: these votes look like labeling "
                             "functions and the abstain-aware model that fits them takes "
                             "no pred_probs; pass labeling_functions='ignore' to fit this "
                             "model with the classifier")
        return AbstainDawidSkeneMethod(model.labeling_function_model(), owner=model) \
            .prepare(summary)
    return None


class ProtocolMethod(Method):
    """Any :class:`~crowd_keras.aggregation.em.EMLabelModel`, through its public EM-step
    protocol: ``init_state`` on the summed votes, ``initial_statistics`` and ``e_step`` +
    ``sufficient_statistics`` per block, ``m_step`` on the summed statistics, ``finish`` at
    the end. A new EM label model runs on Dask with no strategy of its own. On blocks with a
    classifier's probabilities a model that ``accepts_pred_probs`` runs inside
    :class:`~crowd_keras.aggregation.em.ClassifierAnnotator` (its weight learned in the
    M-step from summed statistics, as in memory)."""

    model_class = EMLabelModel

    def prepare(self, summary: Summary) -> Method:
        model = self.model
        if getattr(model, "labeling_functions", None) is not None:
            lf_method = labeling_function_method(model, summary)
            if lf_method is not None:
                return lf_method
        if summary.n_pred_probs and getattr(model, "accepts_pred_probs", False):
            if summary.n_pred_probs != summary.n_items:
                raise ValueError(f"pred_probs on {summary.n_pred_probs} of "
                                 f"{summary.n_items} items: every block needs them")
            model = ClassifierAnnotator(model)
        self.runner = model.init_state(summary)
        self._check_iterations()
        return super().prepare(summary)

    # the model that runs (a hand-over has its own settings), as in memory
    @property
    def max_iter(self) -> int:
        return int(self.runner.max_iter)

    @property
    def tol(self) -> float:
        return float(self.runner.tol)

    @property
    def relative_tol(self) -> bool:
        return bool(self.runner.relative_tol)

    def initial(self, block: Block) -> Any:
        return self.runner.initial_statistics(self.runner.fitting_block(block))

    def update(self, stats: Any, summary: Summary) -> Any:
        return self.runner.m_step(stats)

    def step(self, block: Block, params: Any) -> tuple:
        block = self.runner.fitting_block(block)       # as run_em: the items EM learns from
        latent, objective = self.runner.e_step(block, params)
        return self.runner.sufficient_statistics(block, latent), float(objective)

    def normalizer(self, summary: Summary) -> float:
        return self.runner.objective_scale(summary)

    def posteriors(self, block: Block, params: Any) -> np.ndarray:
        return self.runner.class_posteriors(self.runner.e_step(block, params)[0])

    def finish(self, fit: Fit, template: Annotations) -> LabelModel:
        model = self.runner.finish(fit.params, fit.summary, template, fit.history)
        model.annotations_ = template
        model.posteriors_ = np.zeros((0, self.k))
        return model


class AbstainDawidSkeneMethod(ProtocolMethod):
    """:class:`~crowd_keras.aggregation.AbstainAwareDawidSkene` through its EM-step protocol,
    with its own ``annotator_quality_`` (from the reported posteriors) and class balance.

    ``owner``: a crowd model (``DawidSkene``) that answers through this model, as its
    in-memory ``labeling_functions="auto"`` fit does.
    """

    model_class = AbstainAwareDawidSkene

    needs_report = True
    reports_expected_accuracy = False   # its in-memory report has coverage instead

    def __init__(self, model: AbstainAwareDawidSkene, owner: Any = None) -> None:
        super().__init__(model)
        self.owner = owner

    # An owner's hand-over is fitted on the votes alone, its gold items reported at their
    # class, as in memory (LabelingFunctionFallback.fit): the gold clamps enter the labels only.
    def _votes_only(self, block: Block) -> Block:
        if self.owner is None or block.item_log_prior is None:
            return block
        return replace(block, item_log_prior=None)

    def choose(self, data: Any) -> Method:
        if self.owner is not None:
            self.gold_counts = data.reduce(_gold_class_counts, self.k)
        return self

    def initial(self, block: Block) -> Any:
        return super().initial(self._votes_only(block))

    def step(self, block: Block, params: Any) -> tuple:
        return super().step(self._votes_only(block), params)

    def posteriors(self, block: Block, params: Any) -> np.ndarray:
        return super().posteriors(self._votes_only(block), params)

    def label_posteriors(self, block: Block, params: Any, model: LabelModel) -> np.ndarray:
        return super().posteriors(block, params)

    def report_posteriors(self, block: Block, params: Any) -> np.ndarray:
        # the functions' accuracy is read off the reported labels, gold items at their class
        return super().posteriors(block, params)

    def finish(self, fit: Fit, template: Annotations) -> LabelModel:
        model = super().finish(fit, template)
        model.class_balance_ = model.class_mass(fit.stats) / max(fit.summary.n_items, 1)
        if self.owner is None:
            return model
        self.owner.adopt_labeling_function_model(model, template)
        if hasattr(self.owner, "named_classes_"):   # the template holds no annotation
            self.owner.named_classes_ = fit.summary.votes.sum(axis=0) > 0
        if hasattr(self.owner, "count_gold"):
            self.owner.count_gold(self.gold_counts)
        return self.owner

    def quality(self, model: LabelModel, fit: Fit, report: Optional[tuple]) -> pd.DataFrame:
        """Per function: votes, coverage and the mean reported posterior of the labels it
        voted (``AbstainAwareDawidSkene.annotator_quality_``)."""
        n = fit.summary.votes.sum(axis=1)
        agree = np.trace(report[0].reshape(-1, self.k, self.k), axis1=1, axis2=2)
        return pd.DataFrame({"annotator": model.annotations_.annotator_ids, "n_annotations": n,
                             "coverage": n / max(fit.summary.n_items, 1),
                             "accuracy": np.where(n > 0, agree / np.maximum(n, 1), np.nan)})


#: Registry name → strategy factory (called with the unfitted in-memory model), or its lazy
#: ``"module:Class"`` path (imported on first use, as the label model registry's entries).
METHODS = LazyRegistry("partitioned method")

for _name, _factory in (("majority_vote", MajorityVoteMethod), ("dawid_skene", ProtocolMethod),
                        ("one_coin_dawid_skene", ProtocolMethod),
                        ("abstain_dawid_skene", AbstainDawidSkeneMethod),
                        ("ibcc", ProtocolMethod), ("ebcc", ProtocolMethod),
                        ("bwa", ProtocolMethod), ("tie_broken_vote", ProtocolMethod),
                        ("calibrated_vote", ProtocolMethod),
                        ("glad", ProtocolMethod), ("mace", ProtocolMethod)):
    METHODS.register(_name, _factory)


def register_method(name: str, factory: Union[str, Callable[[Any], Method]]) -> None:
    """Fit the label model registered as ``name`` (``crowd_keras.aggregation`` registry)
    partition by partition with ``factory(model)``, a :class:`Method` (or a lazy
    ``"module:Class"`` path to it)."""
    METHODS.register(name, factory)


# the default label model: held-out selection among its candidates, each fitted by the
# strategies above (its module imports this one)
register_method("auto", "crowd_keras.distributed.auto:AutoMethod")


def supported_methods() -> List[str]:
    """Registry names with a partitioned strategy of their own (:data:`METHODS`).
    ``aggregate`` and the Snorkel adapter's Dask path also take every other EM-protocol
    label model (CoNAL's, the mixture of groups', a user's), run as :class:`ProtocolMethod`."""
    return METHODS.names()


def _serves(name: str, cls: type) -> bool:
    """Whether the strategy registered as ``name`` fits ``cls`` (its ``model_class``)."""
    served = getattr(METHODS.resolve(name), "model_class", None)
    return served is None or (isinstance(cls, type) and issubclass(cls, served))


def _supported_name(method: Any) -> Optional[str]:
    """The :data:`METHODS` key of a registry name, alias or label model class (of its nearest
    registered ancestor for a subclass of an EM-protocol model); None for an EM-protocol model
    without a strategy of its own (it runs as :class:`ProtocolMethod`)."""
    try:
        cls = method if isinstance(method, type) else label_model_class(method)
    except (ValueError, KeyError):
        cls = None
    registered = {}
    for name in METHODS:
        try:
            registered[name] = label_model_class(name)
        except ValueError:  # a strategy registered before its label model
            continue
    for name, known in registered.items():
        if cls is not None and known is cls and _serves(name, cls):
            return name
    if isinstance(cls, type) and issubclass(cls, EMLabelModel):
        # a subclass runs its nearest registered EM ancestor's strategy (built on the protocol
        # steps, which are the subclass's own methods), as in memory it has that ancestor's
        # fitted attributes and annotator report
        for ancestor in cls.__mro__[1:]:
            for name, known in registered.items():
                if known is ancestor and issubclass(known, EMLabelModel) and \
                        _serves(name, cls):
                    return name
        return None
    shown = method.__name__ if isinstance(method, type) else repr(method)
    if isinstance(method, str) and method in METHODS and method not in registered:
        raise ValueError(f"a partitioned strategy is registered as {method!r}, but no label "
                         "model is: register it with crowd_keras.aggregation."
                         "register_label_model first")
    raise ValueError(f"{shown} cannot be fitted partition by partition; supported methods: "
                     f"{supported_methods()} and every EM-protocol label model "
                     "(crowd_keras.distributed.register_method adds one)")


def method_for(method: Any, **params: Any) -> Method:
    """The strategy for ``method``: a registry name (``params`` go to the model's constructor),
    an unfitted label model (copied with its parameters), or a :class:`Method`."""
    if isinstance(method, Method):
        model = None
    elif isinstance(method, LabelModel):
        name = _supported_name(type(method))
        model = type(method)(**method.get_params(deep=False))
    elif isinstance(method, str) and method in LABEL_MODELS and \
            not isinstance(label_model_class(method), type):
        # registered as a function that builds the model: the strategy of what it builds
        return method_for(get_label_model(method, **params))
    else:
        name = _supported_name(method)   # a subclass's name is its ancestor's: build `method`
        model = method(**params) if isinstance(method, type) else \
            get_label_model(method, **params)
    if params and not isinstance(method, str):
        raise TypeError(f"settings {sorted(params)} go with a method name; pass them to the "
                        "model's constructor instead")
    if model is None:
        return method
    if name is None:
        return ProtocolMethod(model)
    return METHODS.resolve(name)(model)
