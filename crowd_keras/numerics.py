"""Numpy kernels shared by every label model: one softmax, one row normalisation, one sparse sum.

The bottom layer of the library (see ``ARCHITECTURE.md``): numpy and scipy only, no crowd
concepts beyond integer codes. Shapes use ``n`` for annotations, ``I`` for items, ``A`` for
annotators and ``K`` for classes.
"""
from __future__ import annotations

import functools
import os
import re
import threading
from typing import Callable, List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["MISSING", "LOG_TINY", "softmax_rows", "normalize_rows", "shift_class_prior",
           "safe_log",
           "incidence_matrix", "summing_matrix", "pair_index", "dense_ranks", "soft_vote",
           "top_classes",
           "class_vote_counts", "confusion_posteriors", "row_order", "distinct_keys", "GOLDEN64",
           "mix64",
           "id_keys", "annotation_hashes", "label_profile_keys", "group_fingerprints",
           "ranks_within", "draw_seed", "keyed_uniforms", "keyed_choice", "thread_count",
           "in_row_blocks", "sparse_dot", "sparse_row_blocks", "sparse_dot_of_blocks",
           "elementwise", "value_blocks", "column_sums"]

#: Marker of an absent annotation in dense matrices and padded per-item arrays, and of an
#: abstaining labeling function in Snorkel's label matrices.
MISSING = -1

#: log of the smallest positive double: stands in for log(0) so that 0 · log 0 stays 0.
LOG_TINY = -745.0

#: SplitMix64's increment, 2^64 / φ: a counter times it spreads consecutive words apart.
GOLDEN64 = np.uint64(0x9E3779B97F4A7C15)

_SOFTMAX_BLOCK = 1 << 16   # values per block of softmax_rows (its arrays stay in the L2 cache)
#: below this many values (softmax) or multiply-adds (sparse products) a call stays on one
#: thread: starting threads costs more than it saves
_PARALLEL_WORK = 1 << 22
#: special functions (digamma: tens of ns a value) go on threads from this many values
_PARALLEL_VALUES = 1 << 16
_MAX_THREADS = 8
#: marks the threads of in_row_blocks: a kernel called inside a block runs on one thread
_IN_BLOCK = threading.local()


def thread_count() -> int:
    """Threads of the parallel kernels (:func:`softmax_rows`, :func:`sparse_dot`,
    :func:`elementwise`): ``CROWD_KERAS_THREADS`` when set (1: one thread); else
    ``OMP_NUM_THREADS`` when its first entry is a positive integer (as numexpr and BLAS read it:
    Dask's workers set it to 1, so that their threads do not each start more); else the cores
    this process may use, at most 8. Inside a block of :func:`in_row_blocks` it is 1: the
    blocks already use the threads."""
    if getattr(_IN_BLOCK, "active", False):
        return 1
    value = os.environ.get("CROWD_KERAS_THREADS", "").strip()
    if value:
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise ValueError(f"CROWD_KERAS_THREADS must be a positive integer, got {value!r}")
        return count
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if re.fullmatch(r"[0-9]+", omp) and int(omp) > 0:   # another library's setting: never an error
        return int(omp)
    return _usable_cores()


@functools.lru_cache(maxsize=1)
def _usable_cores() -> int:
    """The cores this process may use, at most 8 (a system call: read once, since every
    softmax asks)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:                       # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_THREADS))


def in_row_blocks(bounds: np.ndarray, task: Callable[[int, int], None]) -> None:
    """``task(bounds[t], bounds[t + 1])`` for every t, each on its own thread (the last on
    the calling one); the first error is raised once all have ended.

    The kernels' work is numpy and scipy calls that release the GIL, and each block writes
    its own rows, so the blocks run in parallel and change no bit of the result. Each block
    runs under the caller's ``np.errstate`` (new threads would start from numpy's defaults)."""
    spans = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
    if len(spans) <= 1:
        for lo, hi in spans:
            task(lo, hi)
        return
    errors: list = []
    caller = np.geterr()

    def run(lo: int, hi: int) -> None:
        outer = getattr(_IN_BLOCK, "active", False)
        _IN_BLOCK.active = True
        try:
            with np.errstate(**caller):
                task(lo, hi)
        except BaseException as error:           # re-raised in the calling thread
            errors.append(error)
        finally:
            _IN_BLOCK.active = outer

    threads = [threading.Thread(target=run, args=span, daemon=True) for span in spans[:-1]]
    for thread in threads:
        thread.start()
    run(*spans[-1])
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _balanced_bounds(pointers: np.ndarray, parts: int) -> np.ndarray:
    """Cuts of ``len(pointers) - 1`` rows into ``parts`` runs of about equal stored entries
    (``pointers``: a compressed matrix's indptr)."""
    targets = np.linspace(0, pointers[-1], parts + 1)[1:-1]
    cuts = np.searchsorted(pointers, targets)
    return np.unique(np.r_[0, cuts, len(pointers) - 1])


def _compressed_part(matrix: sp.spmatrix, lo: int, hi: int) -> sp.spmatrix:
    """Rows (CSR) or columns (CSC) ``lo:hi`` of ``matrix``, its arrays' views (no copy of
    the stored entries, which slicing makes)."""
    start, stop = matrix.indptr[lo], matrix.indptr[hi]
    arrays = (matrix.data[start:stop], matrix.indices[start:stop],
              matrix.indptr[lo:hi + 1] - start)
    if matrix.format == "csr":
        return sp.csr_matrix(arrays, shape=(hi - lo, matrix.shape[1]), copy=False)
    return sp.csc_matrix(arrays, shape=(matrix.shape[0], hi - lo), copy=False)


def sparse_dot(matrix: sp.spmatrix, dense: np.ndarray) -> np.ndarray:
    """``matrix @ dense`` as a dense array: (n, m) sparse times (m, c) dense, (n, c).

    Large products run on :func:`thread_count` threads: a CSR ``matrix`` in blocks of rows
    (each writes its own rows of the result: the same bits as one thread); a CSC one (the
    vote incidences' transposed views, which read ``dense`` row by row) in blocks of
    columns whose partial results are added (sums in another order: equal to rounding).
    Products under about four million multiply-adds, and other formats, stay on one thread.
    """
    dense = np.asarray(dense)
    if matrix.format not in ("csr", "csc"):
        return np.asarray(matrix @ dense)
    if dense.ndim not in (1, 2) or dense.shape[0] != matrix.shape[1]:
        # the column blocks below would read only the rows they need
        raise ValueError(f"sparse_dot: a {matrix.shape} matrix times a dense argument of shape "
                         f"{dense.shape}: the dense argument needs {matrix.shape[1]} rows")
    bounds = _product_bounds(matrix, 1 if dense.ndim == 1 else dense.shape[1])
    if len(bounds) <= 2:
        return np.asarray(matrix @ dense)
    if matrix.format == "csr":
        out = np.empty((matrix.shape[0],) + dense.shape[1:],
                       dtype=np.result_type(matrix.dtype, dense.dtype))

        def rows(lo: int, hi: int) -> None:
            out[lo:hi] = _compressed_part(matrix, lo, hi) @ dense

        in_row_blocks(bounds, rows)
        return out
    return sparse_dot_of_blocks(matrix, [dense[lo:hi] for lo, hi in zip(bounds[:-1],
                                                                        bounds[1:])])


def _product_bounds(matrix: sp.spmatrix, width: int) -> np.ndarray:
    """Cuts of a compressed ``matrix``'s rows (CSR) or columns (CSC) into :func:`thread_count`
    runs of about equal stored entries, or one run for a product of ``width`` columns under
    about four million multiply-adds."""
    n = len(matrix.indptr) - 1
    threads = thread_count()
    if threads == 1 or matrix.nnz * width < _PARALLEL_WORK or n == 0:
        return np.array([0, n])
    return _balanced_bounds(matrix.indptr, threads)


def sparse_row_blocks(matrix: sp.csr_matrix, dense: np.ndarray,
                      then: Optional[Callable[[np.ndarray, int, int], None]] = None
                      ) -> List[np.ndarray]:
    """``matrix @ dense`` ((n, m) CSR times (m, c) dense) as row blocks ``[matrix[lo:hi] @
    dense, …]`` in row order, the blocks of a large product on :func:`thread_count` threads
    (the blocks and bits of :func:`sparse_dot`'s CSR products); ``then(part, lo, hi)`` runs on
    each block in its thread, such as a softmax in place.

    No (n, c) result is assembled: a wide product's blocks are used where the threads wrote
    them (a copy into one array, on fresh memory, costs as much as the product; EBCC's
    E-step and :func:`sparse_dot_of_blocks` work on the blocks)."""
    dense = np.asarray(dense)
    if matrix.format != "csr":
        raise TypeError(f"sparse_row_blocks needs a CSR matrix, got {matrix.format!r}")
    bounds = _product_bounds(matrix, 1 if dense.ndim == 1 else dense.shape[1])
    parts: dict = {}                               # by first row

    def rows(lo: int, hi: int) -> None:
        part = np.asarray(_compressed_part(matrix, lo, hi) @ dense)
        if then is not None:
            then(part, lo, hi)
        parts[lo] = part

    if bounds[-1] == 0:                            # no rows: one empty block
        rows(0, 0)
    in_row_blocks(bounds, rows)
    return [parts[lo] for lo in sorted(parts)]


def sparse_dot_of_blocks(matrix: sp.spmatrix, blocks: Sequence[np.ndarray]) -> np.ndarray:
    """``matrix @ np.concatenate(blocks)`` without the concatenation: ``Σ_b matrix[:, lo_b:hi_b]
    @ blocks[b]`` for row blocks ``blocks`` (such as :func:`sparse_row_blocks`'), the blocks on
    threads for a CSC ``matrix`` (the vote incidences' transposed views: consecutive blocks
    grouped into :func:`thread_count` runs); the partial results are added in the blocks'
    order (equal to one product to rounding)."""
    given = [np.asarray(b) for b in blocks]
    if not given:
        raise ValueError("sparse_dot_of_blocks needs at least one block (for a matrix without "
                         "columns, an empty one of shape (0, c))")
    blocks = [b for b in given if len(b)]           # an empty block adds nothing
    if len(blocks) <= 1:
        return np.asarray(matrix @ (blocks[0] if blocks else np.concatenate(given)))
    cuts = np.cumsum([0] + [len(b) for b in blocks])
    if cuts[-1] != matrix.shape[1]:
        raise ValueError(f"sparse_dot_of_blocks: the blocks hold {cuts[-1]} rows, the matrix "
                         f"has {matrix.shape[1]} columns")
    if matrix.format != "csc":
        matrix = matrix.tocsc()
    runs = [run[0] for run in np.array_split(np.arange(len(blocks)),
                                             min(thread_count(), len(blocks)))]
    first = {int(cuts[r]): r for r in runs}         # a run's first column -> its first block
    parts: dict = {}                               # by first column

    def columns(lo: int, hi: int) -> None:
        b = first[lo]
        total = np.asarray(_compressed_part(matrix, lo, int(cuts[b + 1])) @ blocks[b])
        while cuts[b + 1] < hi:                    # the run's other blocks, in order
            b += 1
            total += np.asarray(_compressed_part(matrix, int(cuts[b]), int(cuts[b + 1]))
                                @ blocks[b])
        parts[lo] = total

    in_row_blocks(np.r_[cuts[runs], cuts[-1]], columns)
    starts = sorted(parts)
    out = parts[starts[0]]
    for lo in starts[1:]:                          # the blocks' order: the same sum each run
        out += parts[lo]
    return out


def elementwise(ufunc: Callable, values: np.ndarray) -> np.ndarray:
    """``ufunc(values)`` (a numpy ufunc, such as ``scipy.special.digamma``: the M-steps'
    costliest operation on large crowds), in blocks of values on :func:`thread_count`
    threads once there are more than about 65,000 of them: every value is computed alone,
    so the blocks change no bit. Returns a new array of ``values``' shape (float64 values
    only go on threads; others get ``ufunc(values)`` as it is)."""
    values = np.asarray(values)
    bounds = value_blocks(values.size, 1)
    if len(bounds) <= 2 or values.dtype != np.float64 or \
            ufunc(values.reshape(-1)[:1]).dtype != np.float64:   # e.g. isnan: plain call
        return ufunc(values)
    values = np.ascontiguousarray(values)
    out = np.empty_like(values)
    flat_in, flat_out = values.reshape(-1), out.reshape(-1)

    def block(lo: int, hi: int) -> None:
        ufunc(flat_in[lo:hi], out=flat_out[lo:hi])

    in_row_blocks(bounds, block)
    return out


def value_blocks(n_rows: int, values_per_row: int) -> np.ndarray:
    """Bounds of ``n_rows`` rows in :func:`thread_count` blocks of about equal size for
    :func:`in_row_blocks` when the rows hold about 65,000 values or more (values costing
    tens of ns each: special functions, hashes), else one block ``[0, n_rows]``."""
    parts = thread_count()
    return _even_bounds(n_rows, parts if n_rows * values_per_row >= _PARALLEL_VALUES else 1)


def _even_bounds(n_rows: int, parts: int) -> np.ndarray:
    """Cuts of ``n_rows`` rows into at most ``parts`` runs of about equal length (none empty)."""
    return np.unique(np.linspace(0, n_rows, parts + 1).astype(np.int64))


def softmax_rows(logits: np.ndarray, out: Optional[np.ndarray] = None,
                 offset: Optional[np.ndarray] = None, shift: bool = True
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise softmax of ``logits`` (I, K) and each row's log normaliser (I,).

    The work is done in (K, rows) layout, block by block: numpy reduces a long last axis
    several times faster than a 2-8 wide one, and a block of about 2^16 values stays in the
    L2 cache through the transposed copy in, the passes and the copy out (whole (K, I)
    copies go to memory at millions of items). Every row is computed alone, so the blocks
    change no bit. This is the E-step of every EM in the library. Rows of ``-inf`` except one finite entry are
    fine; a row of only ``-inf`` gives NaN (callers mask first).

    Args:
        logits: (I, K) unnormalised log probabilities (not modified, unless it is ``out``).
        out: optional (I, K) array to write the probabilities into (may be ``logits``).
        offset: optional (K,) log-weights added to every row first (a class prior), inside
            the blocks: no separate pass over the (I, K) array.
        shift: subtract each row's maximum before ``exp`` (the exact form above). False, for
            wide rows: rows are exponentiated as they are, in (rows, K) layout (no transposed
            copies, no maximum), and only a row whose total is not a normal number (every
            entry below about -667, or an overflow) is redone with the shift; the results
            equal the shifted ones to rounding.

    Returns:
        ``(probs, log_normalizer)``: probs (I, K) rows summing to 1; log_normalizer (I,)
        ``log Σ_k exp(logits_ik)``.
    """
    logits = np.asarray(logits)
    n, k = logits.shape
    if k == 0:
        raise ValueError(f"softmax_rows needs at least one column (class), got shape "
                         f"{logits.shape}")
    if out is None:
        out = np.empty((n, k))
    lse = np.empty(n)
    threads = thread_count()
    if threads > 1 and n * k >= _PARALLEL_WORK:
        # rows are computed alone: blocks of rows on threads change no bit
        def rows(lo: int, hi: int) -> None:
            _softmax_rows_serial(logits[lo:hi], out[lo:hi], offset, shift, lse[lo:hi])

        in_row_blocks(_even_bounds(n, threads), rows)
        return out, lse
    return _softmax_rows_serial(logits, out, offset, shift, lse)


def _softmax_rows_serial(logits: np.ndarray, out: np.ndarray, offset: Optional[np.ndarray],
                         shift: bool, lse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`softmax_rows` on one thread, into ``out`` and ``lse``."""
    n, k = logits.shape
    block = max(_SOFTMAX_BLOCK // max(k, 1), 1024)
    if not shift:
        return _softmax_rows_unshifted(logits, out, offset, lse, block)
    work = np.empty((k, min(block, n)))                          # (K, rows) of one block
    column = None if offset is None else np.asarray(offset, dtype=np.float64).reshape(k, 1)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        z = work[:, :hi - lo]
        z[...] = logits[lo:hi].T
        if offset is not None:
            z += column
        top = z.max(axis=0)
        z -= top
        np.exp(z, out=z)
        total = z.sum(axis=0)
        z /= total
        out[lo:hi] = z.T
        lse[lo:hi] = top + np.log(total)
    return out, lse


#: row totals of exp(logits) outside this range are redone with the maximum subtracted:
#: above it, no entry is subnormal enough to matter; below the upper end, nothing overflowed
_UNSHIFTED_RANGE = (1e-290, 1e290)


def _softmax_rows_unshifted(logits: np.ndarray, out: np.ndarray, offset: Optional[np.ndarray],
                            lse: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`softmax_rows` with ``shift=False``: block by block in a (rows, K) buffer, the
    logits of a block stay intact until its rows are known to be in range (those out of range
    are set aside before the block's probabilities overwrite them, when ``out`` is
    ``logits``). The row totals come from ``einsum`` (a row's sum does not depend on the
    rows around it, where BLAS's matrix-vector kernels sum a block's last rows in another
    order: the threads' blocks would change bits); the probabilities go straight into
    ``out``."""
    n, k = logits.shape
    work = np.empty(min(block, n) * k)
    row = None if offset is None else np.asarray(offset, dtype=np.float64)
    low, high = _UNSHIFTED_RANGE
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        z = work[:(hi - lo) * k].reshape(hi - lo, k)
        if row is None:
            z[...] = logits[lo:hi]
        else:
            np.add(logits[lo:hi], row, out=z)
        with np.errstate(over="ignore"):
            np.exp(z, out=z)
        total = np.einsum("ij->i", z)
        bad = ~((total >= low) & (total <= high))              # also NaN
        redo = np.flatnonzero(bad) if bad.any() else None
        kept = None if redo is None else logits[lo + redo]      # a copy: out may be logits
        total[bad] = 1.0
        np.log(total, out=lse[lo:hi])
        np.divide(1.0, total, out=total)
        np.multiply(z, total[:, None], out=out[lo:hi])
        if redo is not None:
            out[lo + redo], lse[lo + redo] = softmax_rows(kept, offset=offset)
    return out, lse


def column_sums(values: np.ndarray) -> np.ndarray:
    """(K,) ``Σ_i values[i]`` of an (n, K) array (the M-steps' class totals), as one
    matrix-vector product: one streaming pass, where a reduction over axis 0 of a narrow
    array steps row by row (several times slower at millions of rows; the sums are equal to
    rounding). A float32 array is summed in float64 (an ``einsum`` pass)."""
    values = np.asarray(values)
    if values.dtype == np.float32:   # summed in float64 without a float64 copy of the array
        return np.einsum("ij->j", values, dtype=np.float64)
    return np.ones(values.shape[0], dtype=np.result_type(values.dtype, np.float64)) @ values


def normalize_rows(counts: np.ndarray, axis: int = -1) -> np.ndarray:
    """Normalise ``counts`` to sum to 1 along ``axis``; all-zero slices become uniform."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=axis, keepdims=True)
    k = counts.shape[axis]
    return np.divide(counts, total, out=np.full_like(counts, 1.0 / k), where=total > 0)


def shift_class_prior(post: np.ndarray, prior: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(I, K) posteriors computed under the class prior ``prior`` (K,), re-expressed under
    ``target`` (K,): ``q'_ik ∝ q_ik · target_k / prior_k`` (Bayes' rule with the prior
    swapped; Saerens, Latinne & Decaestecker 2002, Eq. 2.4). Rows that are one-hot stay so."""
    ratio = np.asarray(target, np.float64) / np.maximum(np.asarray(prior, np.float64), 1e-300)
    return normalize_rows(np.asarray(post, np.float64) * ratio)


def safe_log(x: np.ndarray) -> np.ndarray:
    """``log x`` with ``log 0 = LOG_TINY`` instead of ``-inf``."""
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), LOG_TINY)


def incidence_matrix(rows: np.ndarray, cols: np.ndarray, shape: tuple,
                     weights: Optional[np.ndarray] = None) -> sp.csr_matrix:
    """Sparse ``shape`` matrix with ``weights[t]`` (default 1) at ``(rows[t], cols[t])``;
    repeated positions add up."""
    data = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
    return sp.csr_matrix((data, (rows, cols)), shape=shape)


def summing_matrix(rows: np.ndarray, n_rows: int,
                   weights: Optional[np.ndarray] = None) -> sp.csr_matrix:
    """(n_rows, n) sparse matrix ``S`` with ``S[rows[t], t] = weights[t]`` (default 1).

    ``S @ v`` sums per-annotation values ``v`` (n, ...) into their rows (items, annotators,
    (annotator, label) pairs): the scatter-add of every E- and M-step, with no Python loop.
    """
    n = len(rows)
    return incidence_matrix(rows, np.arange(n), (int(n_rows), n), weights)


def class_vote_counts(XT: sp.spmatrix, post: np.ndarray, n_annotators: int) -> np.ndarray:
    """Expected vote counts ``N[a, k, l] = Σ_{i: a said l on i} post[i, k]``, (A, K, K).

    ``XT`` is the transposed vote incidence (A·K, I) (column ``a·K + l`` of
    ``Annotations.vote_incidence()``): its CSC view ``X.T``, whose product reads ``post``
    item by item and adds into the (A·K, K) result (at 10M annotations twice as fast as a
    CSR copy, whose rows read ``post`` at random; the same sums in the same order).
    ``post`` (I, K) the item posteriors. The sufficient
    statistic of every M-step whose per-annotation terms depend on (annotator, label, true
    class) only: one sparse product, O(annotations × K). Rows = true class (a view).
    """
    k = post.shape[1]
    return sparse_dot(XT, post).reshape(int(n_annotators), k, k).transpose(0, 2, 1)


def confusion_posteriors(X: sp.csr_matrix, log_conf: np.ndarray, log_prior: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """E-step of a per-annotator confusion model: ``(posteriors (I, K), log normaliser (I,))``.

    ``log q_ik = log_prior_(i)k + Σ_{(i, a, l)} log_conf[a, k, l]`` with ``X`` the vote
    incidence (I, A·K), ``log_conf`` (A, K, K) rows = true class, ``log_prior`` (K,) or
    (I, K). One sparse product, O(annotations × K).
    """
    k = log_conf.shape[-1]
    logits = sparse_dot(X, log_conf.transpose(0, 2, 1).reshape(-1, k))
    logits += log_prior
    return softmax_rows(logits, out=logits)


def pair_index(first: np.ndarray, second: np.ndarray, n_second: int) -> np.ndarray:
    """Flat index ``first · n_second + second`` (e.g. annotator × K + label), int64."""
    return np.asarray(first, dtype=np.int64) * int(n_second) + np.asarray(second, dtype=np.int64)


def stored_rows(matrix: sp.csr_matrix, start: int, stop: int) -> np.ndarray:
    """(stop - start,) int64 the row of each stored entry ``start:stop`` of a CSR matrix
    (e.g. the item of each vote of ``Annotations.vote_incidence()``)."""
    return np.searchsorted(matrix.indptr, np.arange(start, stop), side="right") - 1


def dense_ranks(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes of non-negative integers below ``size`` in the order of their distinct values,
    by a bincount (no hash table, no sort): ``(codes (n,) int64, distinct values (m,))``."""
    seen = np.bincount(values, minlength=size) > 0
    return (np.cumsum(seen, dtype=np.int64) - 1)[values], np.flatnonzero(seen)


def row_order(n: int, batch: int, steps: int, rng: np.random.Generator,
              keys: Optional[np.ndarray] = None) -> np.ndarray:
    """``steps × batch`` row indices: shuffled epochs without replacement, concatenated.

    ``keys``: optional (n,) uint64 key of each row (e.g. :func:`id_keys` of the items' ids):
    each epoch then orders the rows by their :func:`keyed_uniforms` under a seed drawn from
    ``rng``, so a row keeps its place in the batches whatever the rows' order; None: the
    permutations of ``rng`` over the positions."""
    need = batch * steps
    reps = -(-need // n)
    if keys is None:
        return np.concatenate([rng.permutation(n) for _ in range(reps)])[:need]
    # rows of one key (items told the same) would otherwise sit side by side in every epoch
    keys = distinct_keys(keys)
    return np.concatenate([
        np.argsort(keyed_uniforms(keys, int(rng.integers(2 ** 63)), 1)[:, 0], kind="stable")
        for _ in range(reps)])[:need]


def distinct_keys(keys: np.ndarray) -> np.ndarray:
    """(n,) uint64 ``keys`` made distinct: the ``r``-th row (storage order) of a key shared
    by several rows gets ``mix64(key + r·γ)`` for ``r ≥ 1`` (:data:`GOLDEN64`); a key held by
    one row stays as it is. Rows of one key are told apart by their order among themselves
    only."""
    keys = np.asarray(keys, dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    rank = np.arange(len(keys)) - np.maximum.accumulate(np.where(first, np.arange(len(keys)), 0))
    out = keys.copy()
    repeated = order[rank > 0]
    with np.errstate(over="ignore"):
        out[repeated] = mix64(keys[repeated] + rank[rank > 0].astype(np.uint64) * GOLDEN64)
    return out


def soft_vote(counts: np.ndarray) -> np.ndarray:
    """Vote fractions (I, K) from label counts; items without votes get the overall frequencies.

    The usual first E-step of the Dawid-Skene family (Dawid & Skene 1979, section 3).
    """
    counts = np.asarray(counts, dtype=np.float64)
    votes = counts.sum(axis=0)
    k = counts.shape[1]
    fallback = votes / votes.sum() if votes.sum() > 0 else np.full(k, 1.0 / k)
    total = counts.sum(axis=1, keepdims=True)
    return np.where(total > 0, counts / np.maximum(total, 1e-300), fallback)


def top_classes(scores: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Boolean (I, K): the classes within ``tol`` of each row's maximum (ties share a row)."""
    scores = np.asarray(scores)
    return scores >= scores.max(axis=1, keepdims=True) - tol


def mix64(x: np.ndarray, scratch: Optional[np.ndarray] = None) -> np.ndarray:
    """SplitMix64's finaliser (Steele, Lea & Flood 2014) on uint64 ``x``, wrapping: a
    bijection in which every input bit reaches every output bit, so consecutive or structured
    inputs give words that pass as independent and uniform (a counter-based generator).
    With ``scratch`` (an array of ``x``'s shape and dtype), ``x`` is mixed in place."""
    if scratch is None:
        with np.errstate(over="ignore"):
            x = x ^ (x >> np.uint64(30))
            x = x * np.uint64(0xBF58476D1CE4E5B9)
            x = x ^ (x >> np.uint64(27))
            x = x * np.uint64(0x94D049BB133111EB)
            return x ^ (x >> np.uint64(31))
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
        np.right_shift(x, np.uint64(shift), out=scratch)
        np.bitwise_xor(x, scratch, out=x)
        if factor is not None:
            np.multiply(x, np.uint64(factor), out=x)
    return x


def id_keys(ids: np.ndarray, seed: int) -> np.ndarray:
    """(n,) uint64 key of each id that depends only on the id's value and ``seed``: pandas'
    stable hash of the value (the same in every process) plus the mixed seed, mixed. Draws
    made from these keys are the same in any order of the ids and in any block of them."""
    ids = np.asarray(ids)
    # local import: pandas is a dependency of every caller, not of these kernels
    from pandas.util import hash_array
    values = ids.astype(object) if ids.dtype.kind not in "iub" else ids
    try:
        key = hash_array(values)
    except UnicodeEncodeError:
        # a lone surrogate (text decoded with errors="surrogateescape"): hashed as its code
        # units' bytes; any other string hashes as its UTF-8 bytes, as before
        values = np.array([v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v
                           for v in values], dtype=object)
        key = hash_array(values)
    with np.errstate(over="ignore"):
        return mix64(key.astype(np.uint64) + mix64(np.array([seed], dtype=np.uint64)))


def annotation_hashes(item_keys: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(n,) uint64 hash of each annotation's content: its item's key ``item_keys`` (n,)
    (:func:`id_keys` of the item's id) and its label code ``labels`` (n,); the annotator's
    name plays no part."""
    with np.errstate(over="ignore"):
        return mix64(np.asarray(item_keys, dtype=np.uint64)
                     + (np.asarray(labels).astype(np.uint64) + np.uint64(1)) * GOLDEN64)


def label_profile_keys(votes: np.ndarray) -> np.ndarray:
    """(A,) uint64 key of each annotator from its votes per class ``votes`` (A, K) alone: the
    wrapping sum of the hashes of the labels it gave. No item id nor annotator name plays a
    part, so the keys are the same under any renaming of either; annotators with the same
    label counts share a key (the first round of :meth:`~crowd_keras.aggregation.em.Block.
    item_content_keys`)."""
    votes = np.asarray(votes)
    label_hashes = mix64((np.arange(votes.shape[1], dtype=np.uint64) + np.uint64(1)) * GOLDEN64)
    with np.errstate(over="ignore"):
        return (votes.astype(np.uint64) * label_hashes[None, :]).sum(axis=1, dtype=np.uint64)


def group_fingerprints(hashes: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups,) uint64 wrapping sum of ``hashes`` (n,) per code of ``groups`` (n,): a
    fingerprint of each group's content, the same in any order and any split of the rows
    (partial fingerprints add up, wrapping) and under any renaming of the groups."""
    out = np.zeros(int(n_groups), dtype=np.uint64)
    np.add.at(out, np.asarray(groups, dtype=np.int64), np.asarray(hashes, dtype=np.uint64))
    return out


def ranks_within(per_group: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(n,) rank of each row within its group by uint64 ``keys`` (n,), rows stored group by
    group (``per_group[g]`` consecutive rows of group g); equal keys keep their storage order.

    One stable sort of ``group · 2^(64-b) + key >> b`` (b bits hold the group codes): the
    composite is already sorted by group, so the sort's runs make it a merge of short pieces
    (a lexsort of the two keys took 40 times as long). Keys equal in their top ``64 - b``
    bits tie (for a million groups, 1 in 2^44 of the pairs of one group).
    """
    per_group = np.asarray(per_group, dtype=np.int64)
    group = np.repeat(np.arange(len(per_group), dtype=np.uint64), per_group)
    bits = max(int(len(per_group)).bit_length(), 1)
    composite = (group << np.uint64(64 - bits)) | (np.asarray(keys, dtype=np.uint64)
                                                   >> np.uint64(bits))
    order = np.argsort(composite, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    starts = np.cumsum(per_group) - per_group
    rank[order] = np.arange(len(order)) - starts[group[order].astype(np.int64)]
    return rank


def draw_seed(seed: Optional[int]) -> int:
    """``seed`` as an int; None: a fresh one from the operating system's entropy (unseeded
    draws, as ``np.random.default_rng(None)``)."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
    return int(seed)


def keyed_uniforms(keys: np.ndarray, seed: int, n_draws: int, start: int = 0) -> np.ndarray:
    """(n, n_draws) uniforms in (0, 1): draw ``j`` of row ``i`` depends only on ``keys[i]``
    (uint64, e.g. a :func:`group_fingerprints` of what an annotator said), ``seed`` and the
    counter ``start + j``: ``mix(mix(key + mix(seed)) + (start + j + 1)·γ)``
    (:func:`mix64`, counter-based), so the rows draw the same values in any order and under
    any names. Equal keys draw equal values."""
    keys = np.asarray(keys, dtype=np.uint64)
    with np.errstate(over="ignore"):
        base = mix64(keys + mix64(np.array([int(seed) % 2**64], dtype=np.uint64)))
        counter = np.arange(start + 1, start + n_draws + 1, dtype=np.uint64) * GOLDEN64
        words = mix64(base[:, None] + counter[None, :])
    return ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53   # exact, in (0, 1)


def keyed_choice(keys: np.ndarray, weights: np.ndarray, seed: int, draw: int) -> int:
    """Index of one row of ``keys`` (n,) drawn with probability ∝ ``weights`` (n,), ≥ 0 (all
    0: uniform), by an exponential race: the row with the smallest ``−log(u) / w``, ``u``
    its :func:`keyed_uniforms` number ``draw``. Which row wins depends on the keys, the
    weights and the seed, not on the rows' order (rows with equal keys and weights tie: the
    first wins; they are interchangeable)."""
    w = np.asarray(weights, dtype=np.float64)
    if not (w > 0).any():
        w = np.ones(len(w))
    race = -np.log(keyed_uniforms(keys, seed, 1, draw)[:, 0])
    with np.errstate(divide="ignore"):
        race /= w
    race[~(w > 0)] = np.inf
    return int(np.argmin(race))
