"""Annotations partitioned by Dask: blocks of items built once, EM steps mapped over them.

:class:`PartitionedAnnotations` turns a Dask DataFrame of annotations (or a Dask array of a
label matrix) into one :class:`~crowd_keras.distributed.blocks.Block` per partition,
persisted where it was built: on the workers of a ``dask.distributed`` cluster, or in this
process under the threaded scheduler (the collections API, ``dask.persist`` and
``dask.compute``, picks whichever scheduler is active). :meth:`~PartitionedAnnotations.fit`
runs a :class:`~crowd_keras.distributed.methods.Method`: per EM iteration one task per
block (E-step and statistics) and a tree of sums, so the client receives one set of
statistics per iteration and no block ever leaves its worker.
"""
from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from typing import Any, Callable, List, Optional, Sequence

import dask
import numpy as np
import pandas as pd
from dask import delayed

from ..aggregation.base import LabelModel, gold_mapping, more_unknown, written_alike
from ..aggregation.dawid_skene import sufficient_statistics
from ..aggregation.quality import annotator_accuracy_sums
from ..annotation_readers import check_frame_columns, frame_codes
from ..annotations import Annotations
from ..codes import show
from ..errors import CrowdDataError
from ..numerics import label_profile_keys
from ..progress import progress_bar
from .blocks import Block, Summary, add, frame_block, matrix_block
from .methods import Fit, Method
from .pred_probs import join_pred_probs
from .reading import (Coding, coding_of, first_failure, first_repeated_item, number_rows,
                      object_kinds, row_column, scan_partition, split_items, unconverted)

__all__ = ["PartitionedAnnotations", "fit_together", "tree_sum"]

#: Partial sums combined per task in the reduction tree.
SPLIT_EVERY = 8


def tree_sum(parts: Sequence[Any], split_every: int = SPLIT_EVERY) -> Any:
    """A Dask task tree adding ``parts`` (delayed statistics) ``split_every`` at a time."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [delayed(add, pure=True)(*parts[i:i + split_every])
                 for i in range(0, len(parts), split_every)]
    return parts[0]


def _covotes(block: Block, step: int) -> tuple:
    rows = np.flatnonzero(block.item_ids % step == 0)
    X = block.X[rows]
    return (X.T @ X).toarray(), len(rows)


def _moved(fit: Fit, previous: float) -> bool:
    """Whether the fit's last objective moved from ``previous`` by at least its method's
    ``tol`` (times ``|previous|`` with ``relative_tol``): the in-memory stopping rule
    (:class:`~crowd_keras.progress.Convergence`); the first iteration always moves."""
    if not np.isfinite(previous):
        return True
    limit = fit.method.tol * abs(previous) if fit.method.relative_tol else fit.method.tol
    return abs(fit.history[-1] - previous) >= limit


def _initial_together(blocks: List[Block], methods: List[List[Method]]) -> tuple:
    """Per annotation set, ``method.initial(block)`` of each of its methods on its block
    ``blocks[s]`` (the sets' blocks of one index)."""
    return tuple(tuple(method.initial(block) for method in ms)
                 for block, ms in zip(blocks, methods))


def _steps_together(blocks: List[Block], steps: List[List[tuple]]) -> tuple:
    """Per annotation set, ``method.step(block, params)`` of each of its
    ``[(method, params), ...]`` on its block ``blocks[s]``."""
    return tuple(tuple(method.step(block, params) for method, params in s)
                 for block, s in zip(blocks, steps))


def fit_together(jobs: Sequence[tuple]) -> List[List[Fit]]:
    """:meth:`PartitionedAnnotations.fit_many` of several annotation sets in lock-step.

    ``jobs``: ``[(data, methods), ...]``, annotation sets split into the same number of blocks
    (e.g. the training folds :meth:`~PartitionedAnnotations.derive` makes of one set). Each EM
    iteration is one round of tasks, one per block index, running the steps of every fit
    still iterating on that block of each set: a Dask round costs tens of milliseconds
    whatever it computes, and held-out fits of a small crowd iterate thousands of times.
    Every fit's arithmetic, start and stopping rule are those of a :meth:`fit` of its own.

    Returns:
        per job, its methods' :class:`Fit` in order.
    """
    jobs = [(data, list(methods)) for data, methods in jobs]
    n_blocks = {len(data.blocks) for data, _ in jobs}
    if len(n_blocks) != 1:
        raise ValueError(f"fit_together: the annotation sets must have as many blocks each, "
                         f"got {sorted(n_blocks)}")
    prepared = []
    for data, methods in jobs:
        if any(getattr(method.model, "needs_annotator_keys", False) for method in methods):
            data.annotator_keys()   # read in ``prepare``, which sees no blocks
        prepared.append([method.prepare(data.summary).choose(data) for method in methods])
    initial = _reduce_together(_initial_together, [data for data, _ in jobs], prepared)
    fits = [[Fit(method, None, stats, data.summary) for method, stats in zip(methods, first)]
            for (data, _), methods, first in zip(jobs, prepared, initial)]
    for fit in (fit for job_fits in fits for fit in job_fits):
        if not fit.method.iterative:
            fit.params = fit.method.update(fit.stats, fit.summary)
    _iterate([data for data, _ in jobs],
             [[fit for fit in job_fits if fit.method.iterative] for job_fits in fits])
    for (data, _), job_fits in zip(jobs, fits):
        for fit in job_fits:
            fit.model = fit.method.finish(fit, data.template())
    return fits


def _reduce_together(fn: Callable, sets: List["PartitionedAnnotations"], per_set: list
                     ) -> tuple:
    """The sums over block indices ``j`` of ``fn([set.blocks[j] for set in sets], per_set)``,
    computed (a tree of partial sums)."""
    parts = [delayed(fn)([data.blocks[j] for data in sets], delayed(per_set, traverse=False))
             for j in range(len(sets[0].blocks))]
    return dask.compute(tree_sum(parts))[0]


def _iterate(sets: List["PartitionedAnnotations"], fits: List[List[Fit]]) -> None:
    """EM as in memory, for each fit of each annotation set: M-step on the statistics of the
    last posteriors, E-step, stop when the mean log-likelihood changes by less than ``tol``
    or after ``max_iter`` iterations; the parameters kept are those of the last E-step."""
    every = [fit for job_fits in fits for fit in job_fits]
    if not every:
        return
    first = every[0].method
    show_bar = any(bool(getattr(fit.method.model, "progress", False)) for fit in every)
    bar = progress_bar(range(max(fit.method.max_iter for fit in every)),
                       desc=f"{type(first.model).__name__} EM (partitioned)"
                       + (f" and {len(every) - 1} more" if len(every) > 1 else ""),
                       disable=not show_bar)
    previous = {id(fit): -np.inf for fit in every}
    running = [list(job_fits) for job_fits in fits]
    for _ in bar:
        start = time.perf_counter()
        for fit in (fit for job_fits in running for fit in job_fits):
            fit.params = fit.method.update(fit.stats, fit.summary)
        active = [j for j, job_fits in enumerate(running) if job_fits]
        steps = [[(fit.method, fit.params) for fit in running[j]] for j in active]
        results = _reduce_together(_steps_together, [sets[j] for j in active], steps)
        seconds = time.perf_counter() - start
        for j, job_results in zip(active, results):
            for fit, (stats, loglik) in zip(running[j], job_results):
                fit.stats = stats
                fit.history.append(loglik / fit.method.normalizer(fit.summary))
                fit.seconds.append(seconds)
        if show_bar:
            bar.set_postfix(loglik=f"{running[active[0]][0].history[-1]:.6f}")
        running = [[fit for fit in job_fits if _moved(fit, previous[id(fit)])
                    and len(fit.history) < fit.method.max_iter] for job_fits in running]
        if not any(running):
            break
        for fit in (fit for job_fits in running for fit in job_fits):
            previous[id(fit)] = fit.history[-1]
    bar.close()


def _report_statistics(block: Block, method: Method, params: Any,
                       transform: Optional[Callable], model: Any = None) -> tuple:
    post = method.report_posteriors(block, params) if model is None else \
        method.label_posteriors(block, params, model)
    if transform is not None:
        post = transform(post, block)
    return sufficient_statistics(block.XT, post)


def _accuracy_sums(block: Block, method: Method, params: Any, model: LabelModel
                   ) -> np.ndarray:
    """(A,) :func:`annotator_accuracy_sums` of the block's annotations under its reported
    posteriors, each vote's factor (the fitted ``model``'s ``own_vote_factors``) divided
    out."""
    confusions = np.asarray(model.confusion_matrices_, dtype=np.float64)
    k = confusions.shape[1]
    items = np.repeat(np.arange(block.n_items), block.annotations_per_item())
    return annotator_accuracy_sums(method.posteriors(block, params), items,
                                   block.X.indices // k, block.X.indices % k, confusions,
                                   partial(model.own_vote_factors, block.X))


def _label_frame(block: Block, method: Method, params: Any, model: Any, classes: np.ndarray,
                 item: str, columns: List[str], index_dtype: Any, label_dtype: Any
                 ) -> pd.DataFrame:
    post = method.label_posteriors(block, params, model)
    index = pd.Index(block.item_ids, dtype=index_dtype, name=item)
    frame = pd.DataFrame(post, index=index, columns=columns)
    frame.insert(0, "label", pd.Series(classes[np.argmax(post, axis=1)], index=index,
                                       dtype=label_dtype))
    return frame


class PartitionedAnnotations:
    """Annotations held as blocks of items by Dask, coded as one ``Annotations`` would be.

    Build with :meth:`from_frame` (a long Dask DataFrame) or :meth:`from_label_matrix` (a Dask
    array ``L``). Annotator ids and classes are coded globally, by the rules of
    :meth:`Annotations.from_frame` (annotator ids sorted; integer labels give classes
    ``0..max``, other labels their distinct values sorted by ``str``), so codes and results
    line up with an in-memory fit of the same data.

    Attributes:
        blocks: one persisted ``dask.delayed`` :class:`Block` per partition.
        summary: :class:`Summary` (sums over all items).
        classes: (K,) the classes in code order.
        annotator_ids: (A,) the annotator ids in code order.
        item: name of the item column.
        divisions: the items' divisions when known, else None.
        index_dtype: the dtype of the item ids (the results' index).
    """

    def __init__(self, blocks: List[Any], classes: Sequence, annotator_ids: Sequence,
                 item: str = "item", divisions: Optional[tuple] = None,
                 index_dtype: Any = np.int64) -> None:
        self.blocks = blocks
        self.classes = np.asarray(classes)
        self.annotator_ids = np.asarray(annotator_ids)
        self.item = item
        self.divisions = divisions
        self.index_dtype = index_dtype
        self.summary: Summary = self.reduce(Block.summary, len(self.classes))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(cls, ddf: Any, item: str = "task", annotator: str = "worker",
                   label: str = "label", classes: Optional[Sequence] = None,
                   annotator_ids: Optional[Sequence] = None,
                   item_partitioned: bool = False,
                   duplicates: str = "error") -> "PartitionedAnnotations":
        """From a Dask DataFrame with one row per annotation, any partitioning.

        The annotations of an item must sit in one partition: a frame indexed by the item
        column with known divisions (``set_index(item)``) whose partitions' items do not
        overlap (divisions from files' statistics may: an item's rows in two files), or one
        the caller declares so (``item_partitioned=True``, checked: an item in two partitions
        raises), is used as it is; any other is shuffled on the item column first. ``classes`` and
        ``annotator_ids`` fix the coding and ``duplicates`` the rule for a repeated (item,
        annotator) pair (as in :meth:`Annotations.from_frame`, in frame order); without them
        the pass that checks the partitions finds them.

        Every partition is checked by the rules and with the messages of
        :meth:`Annotations.from_frame`, naming the frame's row (its position in
        ``ddf.compute()``; :mod:`crowd_keras.distributed.reading`); a frame with no rows
        raises :class:`~crowd_keras.CrowdDataError` as in memory.
        """
        if not all(hasattr(ddf, name) for name in ("to_delayed", "shuffle", "columns")):
            raise TypeError(f"expected a Dask DataFrame, got {type(ddf).__module__}."
                            f"{type(ddf).__name__}; a pandas frame: dd.from_pandas(df, "
                            "npartitions=...) or Annotations.from_frame(df)")
        raw = unconverted(ddf, (item, annotator, label))
        if raw is not None:   # Dask made text of object columns: keep it only if they were
            kinds = set().union(*dask.compute(*[delayed(object_kinds)(part, (item, annotator,
                                                                                label))
                                                for part in raw.to_delayed()]))
            if not kinds <= {"string", "empty"}:
                ddf = raw
        columns = list(ddf.columns)
        # an unnamed index is no item column (item=None read it as a column named 'index')
        indexed = item not in columns and item is not None and ddf.index.name == item
        check_frame_columns(columns, {"item": item, "annotator": annotator, "label": label},
                            [item] if indexed else [])   # named as from_frame names it
        coding = _coding(ddf, item, annotator, label, classes, annotator_ids)
        row = row_column(columns)
        ddf = ddf.map_partitions(number_rows, coding.offsets, row)
        divisions = None
        if indexed and ddf.known_divisions and coding.disjoint:
            divisions = ddf.divisions
        elif not item_partitioned:
            ddf = (ddf.reset_index() if indexed else ddf).shuffle(on=item)
        ids = ddf.index if item not in ddf.columns else ddf[item]
        index_dtype = ids.dtype
        shared = delayed((coding.classes, coding.annotator_ids), traverse=False)
        parts = list(dask.persist(*[
            delayed(_frame_block)(part, item, annotator, label, shared, coding.int_labels, row,
                                  duplicates)
            for part in ddf.to_delayed()]))
        failures = [f for f in dask.compute(*[delayed(_failure)(part) for part in parts])
                    if f is not None]
        if failures:
            raise CrowdDataError(first_failure(failures))
        if isinstance(index_dtype, pd.CategoricalDtype) and not ids.cat.known:
            # categories Dask does not know (e.g. read from parquet): an index of that dtype
            # would hold none of the ids; the ids' own dtype, as the blocks hold them
            found = set(dask.compute(*[delayed(_ids_dtype)(part) for part in parts])) - {None}
            index_dtype = found.pop() if len(found) == 1 else np.dtype(object)
        if item_partitioned and divisions is None:
            split = dask.compute(delayed(split_items)(*[delayed(_item_ids)(part)
                                                        for part in parts]))[0]
            if split is not None:
                raise CrowdDataError(
                    f"item_partitioned=True, but the annotations of item {show(split[0])} lie "
                    f"in partitions {split[1]} ({split[2]} item(s) split over partitions); "
                    "leave item_partitioned False to shuffle on the item column")
        return cls(parts, coding.classes, coding.annotator_ids, item, divisions, index_dtype)

    @classmethod
    def from_label_matrix(cls, L: Any, cardinality: int,
                          check: Optional[Callable[[np.ndarray, int], np.ndarray]] = None
                          ) -> "PartitionedAnnotations":
        """From a Dask array ``L`` (rows = items, columns = labeling functions, -1 = abstain)
        in chunks of rows; ``check(chunk, first_row)`` validates each chunk on its worker."""
        if L.ndim == 2 and len(L.chunks[1]) > 1:
            L = L.rechunk({1: -1})   # a block needs every function of its rows
        starts = np.concatenate([[0], np.cumsum(L.chunks[0])[:-1]]).astype(int)
        chunks = L.to_delayed().ravel()
        parts = [delayed(matrix_block)(chunk, int(cardinality), int(start), check)
                 for chunk, start, rows in zip(chunks, starts, L.chunks[0]) if rows > 0]
        n_functions = L.shape[1] if L.ndim == 2 else 0
        return cls(list(dask.persist(*parts)), np.arange(int(cardinality)),
                   np.arange(n_functions), item="row", divisions=None, index_dtype=np.int64)

    # ------------------------------------------------------------------ mapping
    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def template(self) -> Annotations:
        """Annotations with the coding and no items: the fitted models' ``annotations_``
        (they score new annotations by annotator id and class, as after ``load``)."""
        empty = np.zeros(0, dtype=np.int64)
        return Annotations(empty, empty, empty, item_ids=[], annotator_ids=self.annotator_ids,
                           classes=self.classes)

    def map(self, fn: Callable, *args: Any) -> List[Any]:
        """``fn(block, *args)`` per block, as delayed tasks."""
        return [delayed(fn)(block, *args) for block in self.blocks]

    def derive(self, fn: Callable, *args: Any) -> "PartitionedAnnotations":
        """Annotations of the blocks ``fn(block, *args) -> Block`` (e.g. a fold's training
        annotations), persisted where their blocks are and coded as these."""
        return PartitionedAnnotations(list(dask.persist(*self.map(fn, *args))), self.classes,
                                      self.annotator_ids, self.item, self.divisions,
                                      self.index_dtype)

    def with_gold(self, gold: Any) -> "PartitionedAnnotations":
        """These annotations with known classes of some items held fixed in every fit:
        ``gold`` maps item ids to class labels (a dict or ``pandas.Series``), as
        ``fit(annotations, gold=...)`` in memory. Unknown items or labels are errors naming
        them."""
        ids, codes = gold_mapping(gold, np.asarray(self.classes))
        found = self.reduce(_gold_found, ids)
        if (np.asarray(found) == 0).any():
            missing = ids[np.asarray(found) == 0]
            bad = missing[0]
            # the in-memory hint: an item of another type written alike ("1" for 1)
            hint = next((h for h in dask.compute(*self.map(_written_alike, bad)) if h), "")
            raise CrowdDataError(f"gold item {show(bad)} is not an item of the annotations"
                                 f"{hint}{more_unknown(missing[1:])}")
        return self.derive(_gold_block, ids, codes.astype(np.int64), len(self.classes))

    def with_pred_probs(self, pred_probs: Any) -> "PartitionedAnnotations":
        """These annotations with a classifier's probabilities of their items in every
        block (``Block.pred_probs``): a fit of a model that ``accepts_pred_probs`` then takes
        them as a learned per-item prior, as ``fit(annotations, pred_probs=...)`` in memory.
        ``pred_probs``: a pandas or Dask DataFrame indexed by item id, one column per class
        (:func:`~crowd_keras.distributed.pred_probs.join_pred_probs`; every item once, no
        other item, rows that are probabilities: errors name the item or column)."""
        blocks = join_pred_probs(self.blocks, self.classes, pred_probs, self.index_dtype)
        return PartitionedAnnotations(blocks, self.classes, self.annotator_ids, self.item,
                                      self.divisions, self.index_dtype)

    def reduce(self, fn: Callable, *args: Any) -> Any:
        """The sum over blocks of ``fn(block, *args)``, computed (a tree of partial sums)."""
        return dask.compute(tree_sum(self.map(fn, *args)))[0]

    # ------------------------------------------------------------------ fitting
    def annotator_keys(self) -> np.ndarray:
        """(A,) uint64 the annotators' fingerprints summed over the blocks
        (:meth:`Block.content_fingerprints <crowd_keras.aggregation.em.Block.content_fingerprints>`
        from the crowd's label profiles, wrapping sums): the keys of draws made per annotator
        (MACE's restarts, the mixture of groups' start). One pass over the blocks on first
        use, then kept in :attr:`summary` (only the models that draw per annotator pay for
        it)."""
        if self.summary.fingerprints is None:
            profiles = label_profile_keys(self.summary.votes)
            self.summary = replace(self.summary, fingerprints=self.reduce(
                Block.content_fingerprints, len(self.classes), profiles))
        return self.summary.annotator_keys()

    def fit(self, method: Method) -> Fit:
        """Run ``method`` over the blocks: its settings from :attr:`summary` (and, for a
        method that picks its model by fitting, its choice: ``Method.choose``), then EM as the
        in-memory model runs it (same start, same steps, same stopping rule)."""
        return self.fit_many([method])[0]

    def fit_many(self, methods: Sequence[Method]) -> List[Fit]:
        """:meth:`fit` of several methods in lock-step: one task per block per EM iteration
        runs the steps of every method still iterating (each stops by its own rule), so the
        fits are those of one :meth:`fit` each, with one round of tasks per iteration instead
        of one per method and iteration."""
        return fit_together([(self, methods)])[0]

    def statistics(self, fit: Fit, transform: Optional[Callable] = None,
                   labels: bool = False) -> tuple:
        """Summed ``(Xᵀ P, Σ P)`` of the reported posteriors ``P`` (after
        ``transform(P, block)``); ``labels``: of the posteriors the labels are read from
        instead (``predict_proba()`` in memory; the default's differ under its target prior)."""
        model = delayed(fit.model, traverse=False) if labels else None
        return self.reduce(_report_statistics, fit.method,
                           delayed(fit.params, traverse=False), transform, model)

    def annotator_accuracy(self, fit: Fit) -> np.ndarray:
        """(A,) each annotator's expected accuracy under the fit (NaN without labels): its
        labels scored by their items' reported posteriors with its own vote (the fitted
        model's ``own_vote_factors``) divided out,
        :func:`crowd_keras.aggregation.quality.annotator_accuracy` from sums over blocks."""
        sums = self.reduce(_accuracy_sums, fit.method, delayed(fit.params, traverse=False),
                           delayed(fit.model, traverse=False))
        n = fit.summary.votes.sum(axis=1)
        return np.where(n > 0, sums / np.maximum(n, 1), np.nan)

    def covotes(self, step: int) -> tuple:
        """``(XᵀX, rows)`` over the rows whose index is a multiple of ``step``."""
        return self.reduce(_covotes, step)

    def labels(self, fit: Fit, prefix: str = "p_") -> Any:
        """A Dask DataFrame indexed by item id: ``label`` and one probability column per class
        (``prefix + class``), computed from the blocks when asked for."""
        import dask.dataframe as dd

        columns = [f"{prefix}{c}" for c in self.classes]
        label_dtype = pd.Series(self.classes).dtype
        meta = pd.DataFrame({"label": pd.Series([], dtype=label_dtype),
                             **{c: pd.Series([], dtype=np.float64) for c in columns}},
                            index=pd.Index([], dtype=self.index_dtype, name=self.item))
        parts = self.map(_label_frame, fit.method, delayed(fit.params, traverse=False),
                         delayed(fit.model, traverse=False), self.classes, self.item, columns,
                         self.index_dtype, label_dtype)
        return dd.from_delayed(parts, meta=meta, divisions=self.divisions, verify_meta=False)


def _gold_found(block: Block, ids: np.ndarray) -> np.ndarray:
    """(gold items,) 1 where the gold item is one of the block's items."""
    return (pd.Index(block.item_ids).get_indexer(ids) >= 0).astype(np.int64)


def _written_alike(block: Block, item: Any) -> str:
    """:func:`~crowd_keras.aggregation.base.written_alike` of ``item`` among the block's
    items."""
    return written_alike(item, block.item_ids)


def _gold_block(block: Block, ids: np.ndarray, codes: np.ndarray, k: int) -> Block:
    """The block with its gold items clamped to their class (``item_log_prior``)."""
    pos = pd.Index(ids).get_indexer(block.item_ids)
    rows = np.flatnonzero(pos >= 0)
    if len(rows) == 0:
        return block
    prior = np.zeros((len(block.item_ids), k))
    prior[rows] = -np.inf
    prior[rows, codes[pos[rows]]] = 0.0
    return replace(block, item_log_prior=prior)


def _frame_block(df: pd.DataFrame, item: str, annotator: str, label: str, coding: tuple,
                 int_labels: bool, row: str, duplicates: str = "error") -> Any:
    """The partition's Block, or its error's message and its smallest repeated item (the
    client reports the one naming the first frame row, or the first repeated pair, whichever
    partition finished first: :func:`~crowd_keras.distributed.reading.first_failure`)."""
    try:
        return frame_block(df, item, annotator, label, coding[0], coding[1], int_labels, row,
                           duplicates)
    except CrowdDataError as exc:
        return str(exc), first_repeated_item(df, item, annotator)


def _failure(part: Any) -> Optional[tuple]:
    return part if isinstance(part, tuple) else None


def _item_ids(block: Block) -> np.ndarray:
    return block.item_ids


def _ids_dtype(block: Block) -> Any:
    """The dtype pandas gives the block's item ids (None for a block without items)."""
    if not len(block.item_ids):
        return None
    dtype = pd.Index(block.item_ids[:1]).dtype
    if dtype == object and isinstance(block.item_ids[0], str):   # pandas 2: Dask's text dtype
        dtype = pd.StringDtype("pyarrow")
    return dtype


def _coding(ddf: Any, item: str, annotator: str, label: str, classes: Optional[Sequence],
            annotator_ids: Optional[Sequence]) -> Coding:
    """Every partition checked by the in-memory rules and the global coding (classes and
    annotator ids, found in the same pass when not given); errors name the frame's rows."""
    parts = ddf.to_delayed()
    scans = dask.compute(*[delayed(scan_partition)(part, item, annotator, label, classes,
                                                   annotator_ids)
                           for part in parts])

    def part(p: int) -> pd.DataFrame:
        # the partition the scan read: Dask's ``ddf.partitions[p]`` of a ``.loc`` slice is
        # another one (the partition before it, or an empty frame)
        df = dask.compute(parts[p])[0]
        return df.reset_index() if item not in df.columns and df.index.name == item else df

    def recheck(p: int, first_row: int) -> None:
        # behind the frame's row 0, as in memory: a column mixing types names row 0's type
        df, rows = part(p), np.arange(first_row, first_row + scans[p].n_rows)
        if first_row:
            first = next(q for q, scan in enumerate(scans) if scan.n_rows)
            df, rows = pd.concat([part(first).iloc[:1], df]), np.concatenate([[0], rows])
        frame_codes(df, item, annotator, label, classes, annotator_ids=annotator_ids,
                    row_numbers=rows)

    return coding_of(list(scans), classes, annotator_ids, recheck)
