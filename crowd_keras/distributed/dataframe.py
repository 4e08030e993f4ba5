"""``aggregate``: a label model fitted on a Dask DataFrame of annotations, results back as Dask.

    import dask.dataframe as dd
    from crowd_keras.distributed import aggregate

    ddf = dd.read_parquet("answers/")                     # task, worker, label
    result = aggregate(ddf, item="task", annotator="worker", label="label")   # method="auto"
    result.labels                 # Dask DataFrame indexed by task: label, p_<class>...
    result.annotator_quality      # pandas: annotator, n_annotations, accuracy, expected_accuracy
    result.to_parquet("out/")     # out/labels/*.parquet, out/annotator_quality.parquet
"""
from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np
import pandas as pd

from ..aggregation.base import PARTITIONED, LabelModel, check_settings
from ..aggregation.registry import DEFAULT_LABEL_MODEL
from ..codes import check_unique_ids, ids_array
from ..errors import CrowdDataError
from ..files import atomic_write_bytes, remove_staged_folder, replace_folder
from .engine import PartitionedAnnotations
from .methods import Fit, method_for
from .pred_probs import check_frame

__all__ = ["aggregate", "AggregationResult", "to_parquet"]


class AggregationResult:
    """A label model fitted partition by partition.

    Attributes:
        labels: Dask DataFrame indexed by item id (sorted within each partition; with known
            divisions when the input was indexed by item with known divisions): ``label`` (the
            most probable class, ties to the lowest code) and one probability column per class,
            ``p_<class>`` (:attr:`probability_columns`). Lazy: computing it runs one E-step
            per partition on the workers that hold the partitions.
        annotator_quality: pandas, the in-memory model's ``annotator_quality_`` columns.
        model: the fitted in-memory label model: its parameters (``confusion_matrices_``,
            ``class_priors_``, ...; ``n_iter_``, ``log_likelihood_``), its
            ``annotator_quality_`` (:attr:`annotator_quality`) and
            ``predict_proba(new_annotations)`` for new items; its ``posteriors_`` are empty
            (the per-item posteriors are :attr:`labels`): ``predict()`` and the quality
            scores without annotations raise, saying so.
        classes: the classes in code order (as ``Annotations.from_frame`` codes the data).
        annotator_ids: the annotator ids in code order.
        n_items: the number of items.
        n_annotations: the number of annotations.
        fit_info: the EM record (log-likelihood and seconds per iteration, the last
            statistics).

    The blocks of items stay in the workers' memory while the result lives (``labels`` is
    computed from them); drop the result to free them. They live on the cluster that fitted
    them: compute or write ``labels`` before its client closes (after, Dask reports a
    "Missing dependency _frame_block-..."); ``model`` and ``annotator_quality`` stay.
    """

    def __init__(self, data: PartitionedAnnotations, fit: Fit, quality: pd.DataFrame) -> None:
        self.data = data
        self.fit_info = fit
        self.model: LabelModel = fit.model
        self.annotator_quality = quality
        self.labels = data.labels(fit)
        self.classes = data.classes
        self.annotator_ids = data.annotator_ids
        self.n_items = fit.summary.n_items
        self.n_annotations = fit.summary.n_annotations

    @property
    def probability_columns(self) -> dict:
        """Class → its probability column in :attr:`labels`."""
        return dict(zip(self.classes.tolist(), self.labels.columns[1:]))

    @property
    def n_iter(self) -> int:
        """EM iterations: the fitted model's ``n_iter_`` as in memory (MACE: its winning
        restart's, not the steps of its restarts run side by side), else the partitioned
        loop's (0 for majority vote)."""
        n_iter = getattr(self.model, "n_iter_", None)
        return len(self.fit_info.history) if n_iter is None else int(n_iter)

    @property
    def log_likelihood(self) -> np.ndarray:
        return np.asarray(self.fit_info.history)

    def to_parquet(self, path: Union[str, Path], **kwargs: Any) -> Path:
        """See :func:`to_parquet`."""
        return to_parquet(self, path, **kwargs)

    def __repr__(self) -> str:
        return (f"AggregationResult({type(self.model).__name__}, n_items={self.n_items}, "
                f"n_annotations={self.n_annotations}, n_annotators={len(self.annotator_ids)}, "
                f"classes={self.classes.tolist()}, n_iter={self.n_iter})")


def aggregate(ddf: Any, method: Any = DEFAULT_LABEL_MODEL, item: str = "task",
              annotator: str = "worker", label: str = "label", *,
              classes: Optional[Sequence] = None, annotator_ids: Optional[Sequence] = None,
              item_partitioned: bool = False, gold: Any = None, pred_probs: Any = None,
              duplicates: str = "error", **params: Any) -> AggregationResult:
    """Fit a label model on a Dask DataFrame of annotations, partition by partition.

    The E-step runs per partition of items on the workers and the M-step on a tree reduction
    of the partitions' sufficient statistics, with the in-memory model's own step functions,
    start and stopping rule: labels equal the in-memory fit's on the same data and
    probabilities agree to floating-point summation order (well within 1e-6). Works with the
    threaded scheduler and with a ``dask.distributed`` client (whichever is active).

    Args:
        ddf: ``dask.dataframe`` with one row per annotation (any partitioning: a frame not
            indexed by ``item`` with known divisions is shuffled on ``item`` so that each
            item's annotations share a partition).
        method: the library's default label model (``DEFAULT_LABEL_MODEL``, ``"auto"``:
            :class:`~crowd_keras.aggregation.AutoLabelModel`, the candidate with the best
            held-out agreement, each held-out fit a partitioned fit), every EM-protocol
            model (``"ibcc"``, ``"ebcc"``, ``"bwa"``, ...),
            ``"dawid_skene"``, ``"one_coin_dawid_skene"``, ``"majority_vote"``,
            ``"abstain_dawid_skene"`` (registry names and aliases; on labeling-function votes
            ``"auto"`` and the Dawid-Skene models fit the abstain-aware model, as in memory),
            an unfitted label model of those kinds, or a
            :class:`~crowd_keras.distributed.Method`. Others raise ``ValueError`` listing the
            supported ones (:func:`supported_methods`).
        item, annotator, label: column names (crowd-kit's layout by default).
        classes, annotator_ids: the coding, when known (fixes the class and annotator
            order; the data are still read twice, once to check and number the rows and
            once to build the blocks); default as :meth:`crowd_keras.Annotations.from_frame`.
        item_partitioned: the caller guarantees that each item's annotations share a
            partition (e.g. files written per item range): no shuffle.
        gold: known classes of some items (a dict or ``pandas.Series`` from item id to class
            label), held fixed in every fit as in memory (``fit(annotations, gold=...)``); the
            default model chooses by them when there are ``min_gold`` or more.
        pred_probs: a classifier's out-of-fold class probabilities of the items: a pandas or
            Dask DataFrame indexed by item id with one column per class (named by the
            classes), every item once and no other; joined to each partition's items and
            taken as a learned per-item prior by the models that accept it (Dawid-Skene,
            one-coin Dawid-Skene, IBCC, EBCC, BWA, ``"auto"``), as ``fit(annotations,
            pred_probs=...)`` in memory: the same posteriors, the same classifier weight
            (``result.model.classifier_weight_``). Missing, extra or repeated items, unknown
            columns and rows that are not probabilities raise
            :class:`~crowd_keras.CrowdDataError` naming them.
        duplicates: a repeated (item, annotator) pair raises (``"error"``), or the last
            (``"last"``) or first (``"first"``) of its rows in frame order is kept, as
            :meth:`crowd_keras.Annotations.from_frame`'s ``duplicates``.
        **params: constructor arguments of the named model (``max_iter``, ``tol``, ...).

    Returns:
        :class:`AggregationResult` (``labels``, ``annotator_quality``, ``model``).
    """
    try:
        strategy = method_for(method, **params)
    except TypeError as error:
        if "unexpected keyword argument" not in str(error):
            raise
        # a reader argument misspelled (items=) was blamed on the model's constructor alone
        raise TypeError(f"aggregate: {error}; aggregate reads the frame with item, annotator, "
                        "label, classes, annotator_ids, item_partitioned, gold, pred_probs "
                        "and duplicates, and passes the other keyword arguments to the "
                        "model's constructor") from None
    check_settings(strategy.model)
    if not isinstance(item_partitioned, (bool, np.bool_)):
        raise TypeError(f"item_partitioned must be True or False, got "
                        f"{type(item_partitioned).__name__} {item_partitioned!r}")
    if duplicates not in ("error", "last", "first"):
        raise ValueError(f"duplicates must be one of ('error', 'last', 'first'), got "
                         f"{duplicates!r}")
    for ids, what in ((classes, "class"), (annotator_ids, "annotator")):
        if ids is not None:
            check_unique_ids(ids_array(ids), what)
    if pred_probs is not None:
        if not getattr(strategy.model, "accepts_pred_probs", False):
            raise TypeError(f"{type(strategy.model).__name__} does not take pred_probs")
        check_frame(pred_probs)
    data = PartitionedAnnotations.from_frame(ddf, item=item, annotator=annotator, label=label,
                                             classes=classes, annotator_ids=annotator_ids,
                                             item_partitioned=item_partitioned,
                                             duplicates=duplicates)
    if gold is not None:
        if not getattr(strategy.model, "accepts_gold", False):
            raise TypeError(f"{type(strategy.model).__name__} does not take gold labels")
        data = data.with_gold(gold)
    if pred_probs is not None:
        data = data.with_pred_probs(pred_probs)
    fit = data.fit(strategy)
    report = data.statistics(fit) if fit.method.needs_report else None
    quality = _annotator_report(data, fit, report)
    _hold_report(fit.model, quality)
    return AggregationResult(data, fit, quality)


def _hold_report(model: LabelModel, quality: pd.DataFrame) -> None:
    """The fitted model (and the model it answers through) keeps the annotator report of the
    partitions as its ``annotator_quality_``, which it cannot count from its annotations
    (it holds none: every annotator read as without annotations, NaN), and refuses to
    predict its fitted items, which the result's ``labels`` hold (an empty array before)."""
    for held in (model, getattr(model, "model_", None),
                 getattr(model, "labeling_function_model_", None)):
        if isinstance(held, LabelModel):
            setattr(held, PARTITIONED, quality.copy())


def _annotator_report(data: PartitionedAnnotations, fit: Fit, report: Any = None
                     ) -> pd.DataFrame:
    """The fitted model's annotator report (``Method.quality``), with ``expected_accuracy``
    after ``accuracy`` when the method reports it (one more pass over the blocks:
    :meth:`PartitionedAnnotations.annotator_accuracy`), as the in-memory report has it."""
    quality = fit.method.quality(fit.model, fit, report)
    if fit.method.reports_expected_accuracy and "accuracy" in quality.columns and \
            "expected_accuracy" not in quality.columns and \
            hasattr(fit.model, "confusion_matrices_"):
        quality.insert(quality.columns.get_loc("accuracy") + 1, "expected_accuracy",
                       data.annotator_accuracy(fit))
    return quality


def _write_labels(frame: Any, folder: Union[str, Path], kwargs: dict) -> None:
    """``frame.to_parquet(folder, write_index=True, **kwargs)``; a keyword neither Dask nor
    pyarrow takes is named as an argument of ``to_parquet`` (pyarrow's message was
    "__cinit__() got an unexpected keyword argument")."""
    try:
        frame.to_parquet(folder, write_index=True, **kwargs)
    except TypeError as err:
        if "unexpected keyword argument" not in str(err):
            raise
        raise TypeError(f"to_parquet: {err}; its keyword arguments go to "
                        "dask.dataframe.to_parquet and the pyarrow writer") from None


def _local_folder(path: Union[str, Path]) -> Path:
    """``path`` as a folder of this file system, ``~`` expanded (Dask expands it: the parts
    went to the home folder and an empty ``./~/.../labels`` was put in place); a ``file://``
    URL is its path, any other URL is refused (a local folder named ``s3:`` was written)."""
    text = os.fsdecode(os.fspath(path))
    url = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if url and url.group(1).lower() != "file":
        raise CrowdDataError(f"to_parquet writes to a folder of this machine (shared with the "
                             f"workers on a cluster), got the URL {text!r}: to write to a "
                             "remote store, use result.labels.to_parquet(url, "
                             "write_index=True) and result.annotator_quality.to_parquet(...)")
    return Path(text[len(url.group(0)):] if url else text).expanduser()


def to_parquet(result: AggregationResult, path: Union[str, Path], **kwargs: Any) -> Path:
    """Write ``result.labels`` to ``path/labels/`` (one parquet file per partition, item id
    as the index) and ``result.annotator_quality`` to ``path/annotator_quality.parquet``.

    ``kwargs`` go to ``dask.dataframe.to_parquet`` (not ``write_index``, nor ``compute=False``:
    the write is done when this returns). Returns ``path``. The labels are written
    into a temporary folder beside ``path/labels`` and put in its place when complete: a
    rewrite replaces the previous files (none of a run with more partitions is left to be
    read again), and a failed one leaves them as they were and removes the temporary folder
    (a refused keyword included). ``append=True`` adds to them.
    ``path`` is a folder of this machine (``~`` expanded, ``file://`` read as its path; on a
    cluster, one the workers share): other URLs are refused.
    """
    if "write_index" in kwargs:   # the item id is the labels' index: their files hold it
        raise TypeError("to_parquet: write_index cannot be given: the labels are written with "
                        "the item id as their index")
    if "compute" in kwargs:   # compute=False would stage nothing and put an empty folder in place
        if not (isinstance(kwargs["compute"], (bool, np.bool_)) and kwargs["compute"]):
            raise TypeError(f"to_parquet: compute={kwargs['compute']!r} cannot be given: the "
                            "labels are written now, into a folder that replaces path/labels "
                            "once complete (for a lazy write: result.labels.to_parquet(..., "
                            "compute=False))")
        del kwargs["compute"]
    frame = result.labels
    if not isinstance(frame.index.name, str):   # an item column named 0 (a CSV without a
        frame = frame.rename_axis(str(frame.index.name))   # header): parquet names are text
    if frame.index.name in frame.columns:   # pandas: "cannot insert label, already exists"
        raise CrowdDataError(f"to_parquet: the item column is named {frame.index.name!r}, as a "
                             f"column of the labels {list(frame.columns)}, and a parquet file "
                             "holds one column of a name: rename the labels' index first "
                             "(result.labels = result.labels.rename_axis('item'))")
    path = _local_folder(path)
    if path.exists() and not path.is_dir():
        raise CrowdDataError(f"{path} is a file; give a folder (it is created when missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):   # a file where a folder above must be
        raise CrowdDataError(f"{path}: cannot make the folder: a file is in the way") from None
    if (path / "annotator_quality.parquet").is_dir():   # before the labels are replaced
        raise CrowdDataError(f"{path / 'annotator_quality.parquet'} is a folder; it is where "
                             "the annotator report goes")
    quality = result.annotator_quality.copy()
    if quality["annotator"].dtype == object:  # mixed ids: parquet needs one type per column
        quality["annotator"] = quality["annotator"].map(str)
    table = io.BytesIO()
    quality.to_parquet(table, index=False)
    labels = path / "labels"
    if kwargs.get("append"):
        _write_labels(frame, labels, kwargs)
    else:
        if labels.exists() and not labels.is_dir():
            raise CrowdDataError(f"{labels} is a file; it is where the labels' folder goes")
        staged = tempfile.mkdtemp(dir=path, prefix=".labels.", suffix=".tmp")
        try:
            _write_labels(frame, staged, kwargs)
            replace_folder(staged, labels)
        except BaseException:
            remove_staged_folder(staged)
            raise
    atomic_write_bytes(path / "annotator_quality.parquet", table.getvalue())
    return path
