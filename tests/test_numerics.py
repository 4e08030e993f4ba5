"""The shared numpy kernels (``crowd_keras.numerics``) against plain references."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from crowd_keras import numerics
from crowd_keras.numerics import softmax_rows


def _unblocked(logits: np.ndarray) -> tuple:
    """softmax_rows' arithmetic on the whole (K, I) array at once (its form before blocks)."""
    z = np.array(np.asarray(logits).T, dtype=np.float64, order="C", copy=True)
    top = z.max(axis=0)
    z -= top
    np.exp(z, out=z)
    total = z.sum(axis=0)
    z /= total
    return z.T, top + np.log(total)


@pytest.mark.parametrize("n, k", [(0, 3), (1, 1), (5000, 4), (70_001, 3), (3000, 40)])
def test_softmax_rows_blocks_change_no_bit(monkeypatch, n, k):
    """Rows in blocks (a block of 1024 rows here: several, the last one short) give the
    whole-array softmax bit for bit, and scipy's within rounding; ``out`` may be the input;
    rows of -inf but one entry, float32 and transposed inputs are taken."""
    monkeypatch.setattr(numerics, "_SOFTMAX_BLOCK", 1024 * k)
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=30.0, size=(n, k))
    if n and k > 1:
        logits[::7, 1:] = -np.inf               # one finite entry in every seventh row
    probs, lse = softmax_rows(logits)
    ref_probs, ref_lse = _unblocked(logits)
    assert np.array_equal(probs, ref_probs) and np.array_equal(lse, ref_lse)
    np.testing.assert_allclose(lse, logsumexp(logits, axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
    same = logits.copy()
    assert softmax_rows(same, out=same)[0] is same and np.array_equal(same, ref_probs)
    as_columns = np.ascontiguousarray(logits.T)          # (K, I): a transposed view in
    assert np.array_equal(softmax_rows(as_columns.T)[0], ref_probs)
    single = logits.astype(np.float32)
    assert np.array_equal(softmax_rows(single)[0], _unblocked(single)[0])


@pytest.mark.parametrize("n, k", [(0, 40), (1, 1), (5000, 40), (3001, 7)])
def test_softmax_rows_unshifted_equals_the_shifted_form(monkeypatch, n, k):
    """``shift=False`` (no row maximum) gives the shifted softmax to rounding, with and
    without ``offset`` and ``out``, across blocks; rows whose total would underflow or
    overflow unshifted (all entries near -800, one near +800), rows of -inf but one entry
    and a row of only -inf (NaN, as shifted) are redone with the shift."""
    monkeypatch.setattr(numerics, "_SOFTMAX_BLOCK", 1024 * k)
    rng = np.random.default_rng(1)
    logits = -np.abs(rng.normal(scale=30.0, size=(n, k)))
    offset = -rng.random(k) * 3
    if n > 10:
        logits[3] -= 800.0                       # underflows without the shift
        logits[5, 0] = 800.0                     # overflows without the shift
        logits[::7, 1:] = -np.inf               # one finite entry in every seventh row
        logits[9] = -np.inf                      # nothing finite: NaN either way
    for off in (None, offset):
        with np.errstate(invalid="ignore"):
            ref_probs, ref_lse = softmax_rows(logits, offset=off)
            probs, lse = softmax_rows(logits, offset=off, shift=False)
        finite = np.isfinite(ref_lse)
        assert np.array_equal(finite, np.isfinite(lse))
        assert np.isnan(probs[~finite]).all()
        np.testing.assert_allclose(probs[finite], ref_probs[finite], rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(lse[finite], ref_lse[finite], rtol=1e-13, atol=1e-13)
    same = logits.copy()
    with np.errstate(invalid="ignore"):
        assert softmax_rows(same, out=same, offset=offset, shift=False)[0] is same
        ref_probs = softmax_rows(logits, offset=offset)[0]
    rows = np.isfinite(ref_probs).all(axis=1)
    np.testing.assert_allclose(same[rows], ref_probs[rows], rtol=1e-13, atol=1e-300)


def test_class_vote_counts_from_the_csc_view():
    """The counts' product with the CSC view ``X.T`` (the models' form) is the CSR copy's
    bit for bit and the dense definition N[a, k, l] = Σ_{i: a said l on i} post[i, k]."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.numerics import class_vote_counts

    ann = simulate_crowd(n_items=3000, n_classes=3, n_annotators=40, annotations_per_item=4,
                         seed=2).annotations
    post = np.random.default_rng(0).dirichlet(np.ones(3), size=ann.n_items)
    X = ann.vote_incidence()
    counts = class_vote_counts(X.T, post, ann.n_annotators)
    assert np.array_equal(counts, class_vote_counts(X.T.tocsr(), post, ann.n_annotators))
    dense = np.zeros((ann.n_annotators, 3, 3))
    np.add.at(dense, (ann.annotators, slice(None), ann.labels), post[ann.items])
    np.testing.assert_allclose(counts, dense, rtol=1e-12, atol=1e-12)


def test_distinct_keys_tell_repeated_keys_apart_and_keep_single_ones():
    from crowd_keras.numerics import distinct_keys
    keys = np.array([5, 3, 5, 5, 3, 9, 0, 0], dtype=np.uint64)
    out = distinct_keys(keys)
    assert len(np.unique(out)) == len(keys)
    # the first row of each key and a key held once keep their value
    np.testing.assert_array_equal(out[[0, 1, 5, 6]], keys[[0, 1, 5, 6]])
    # a repeated key's later rows depend on their rank among the rows of that key only
    np.testing.assert_array_equal(distinct_keys(keys[[5, 0, 2, 1, 3]])[[1, 2, 4]], out[[0, 2, 3]])


def test_row_order_mixes_rows_of_one_key_into_every_batch():
    # 200 rows told nothing (one key) among 100 others: before, they filled whole batches
    keys = np.r_[np.zeros(200, dtype=np.uint64), np.arange(1, 101, dtype=np.uint64)]
    order = numerics.row_order(300, 30, 10, np.random.default_rng(0), keys).reshape(10, 30)
    assert ((order >= 200).sum(axis=1) > 0).all()


def test_stored_rows_names_the_row_of_each_stored_entry_empty_rows_included():
    import scipy.sparse as sp
    dense = np.array([[0, 1, 1], [0, 0, 0], [1, 0, 0], [0, 0, 0], [1, 1, 1]])
    matrix = sp.csr_matrix(dense)
    rows_of_entries = np.nonzero(dense)[0]                     # row-major, as CSR stores
    np.testing.assert_array_equal(numerics.stored_rows(matrix, 0, matrix.nnz), rows_of_entries)
    np.testing.assert_array_equal(numerics.stored_rows(matrix, 2, 4), rows_of_entries[2:4])
    assert numerics.stored_rows(matrix, 3, 3).shape == (0,)


# ------------------------------------------------------------------ row-parallel kernels
def test_thread_count_reads_its_variable_and_refuses_nonsense(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("CROWD_KERAS_THREADS", "3")
    assert numerics.thread_count() == 3                  # ours first
    monkeypatch.delenv("CROWD_KERAS_THREADS")
    assert numerics.thread_count() == 1                  # then OpenMP's (Dask's workers: 1)
    monkeypatch.setenv("OMP_NUM_THREADS", "5,2")         # nested levels: the outer one
    assert numerics.thread_count() == 5
    for other in ("", "junk", "0", "\u00b2", "2.5"):      # not ours to refuse: the cores
        monkeypatch.setenv("OMP_NUM_THREADS", other)
        assert 1 <= numerics.thread_count() <= 8
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv("CROWD_KERAS_THREADS", bad)
        with pytest.raises(ValueError, match=f"CROWD_KERAS_THREADS.*{bad!r}"):
            numerics.thread_count()


def test_in_row_blocks_runs_every_block_once_and_raises_a_blocks_error():
    seen = []
    numerics.in_row_blocks(np.array([0, 3, 3, 7, 10]), lambda lo, hi: seen.append((lo, hi)))
    assert sorted(seen) == [(0, 3), (3, 7), (7, 10)]               # the empty block skipped

    def task(lo, hi):
        if lo == 0:
            raise KeyError("block 0")

    with pytest.raises(KeyError, match="block 0"):
        numerics.in_row_blocks(np.array([0, 5, 10]), task)


def _incidence(n_rows: int, n_cols: int, per_row: int, seed: int = 0):
    """Rows 100-199 hold nothing."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.r_[0:100, 200:n_rows], per_row)
    return numerics.incidence_matrix(rows, rng.integers(0, n_cols, len(rows)),
                                     (n_rows, n_cols), rng.random(len(rows)))


@pytest.mark.parametrize("threads", [2, 3])
def test_sparse_dot_on_threads_equals_one_thread(monkeypatch, threads):
    """Rows of a CSR product on threads: the same bits; a CSC product's column blocks add
    up to the same sums within rounding; vectors, empty rows and other formats are taken."""
    monkeypatch.setattr(numerics, "_PARALLEL_WORK", 1)
    X = _incidence(5000, 300, 4)
    dense = np.random.default_rng(1).normal(size=(300, 7))
    serial = np.asarray(X @ dense)
    monkeypatch.setenv("CROWD_KERAS_THREADS", str(threads))
    assert np.array_equal(numerics.sparse_dot(X, dense), serial)
    assert np.array_equal(numerics.sparse_dot(X, dense[:, 0]), np.asarray(X @ dense[:, 0]))
    items = np.random.default_rng(2).normal(size=(5000, 7))
    np.testing.assert_allclose(numerics.sparse_dot(X.T, items), np.asarray(X.T @ items),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(numerics.sparse_dot(X.tocoo(), dense), serial, rtol=0, atol=0)
    monkeypatch.setenv("CROWD_KERAS_THREADS", "1")
    assert np.array_equal(numerics.sparse_dot(X, dense), serial)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_sparse_row_blocks_are_the_products_rows(monkeypatch, threads):
    """The blocks stack to the one-thread product bit for bit, one block per thread (none
    empty); ``then`` sees each block with its rows, on the block's thread, where kernels
    run on one thread; their column-block products add up to the transposed product."""
    monkeypatch.setattr(numerics, "_PARALLEL_WORK", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", str(threads))
    X = _incidence(5000, 300, 4)
    dense = np.random.default_rng(1).normal(size=(300, 7))
    seen = []

    def then(part, lo, hi):
        seen.append((lo, hi, numerics.thread_count()))
        part *= 2.0

    blocks = numerics.sparse_row_blocks(X, dense, then=then)
    assert len(blocks) == threads and all(len(b) for b in blocks)
    assert np.array_equal(np.concatenate(blocks), 2.0 * np.asarray(X @ dense))
    spans = sorted(seen)
    assert [lo for lo, _, _ in spans] == np.cumsum([0] + [len(b) for b in blocks])[:-1].tolist()
    assert spans[-1][1] == 5000
    assert {count for _, _, count in spans} == {1}
    np.testing.assert_allclose(numerics.sparse_dot_of_blocks(X.T, blocks),
                               2.0 * np.asarray(X.T @ (X @ dense)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(numerics.sparse_dot_of_blocks(X.T.tocsr(), blocks),
                               2.0 * np.asarray(X.T @ (X @ dense)), rtol=1e-12, atol=1e-12)
    empty = numerics.sparse_row_blocks(X[:0], dense)
    assert [b.shape for b in empty] == [(0, 7)]
    assert numerics.sparse_dot_of_blocks(X[:0].T, empty).shape == (300, 7)


def test_row_block_products_refuse_what_they_cannot_take():
    X = _incidence(500, 30, 2)
    with pytest.raises(TypeError, match="CSR.*'csc'"):
        numerics.sparse_row_blocks(X.tocsc(), np.ones((30, 2)))
    with pytest.raises(ValueError, match="blocks hold 400 rows, the matrix has 500 columns"):
        numerics.sparse_dot_of_blocks(X.T, [np.ones((200, 2)), np.ones((200, 2))])


def test_kernels_inside_a_block_stay_on_one_thread(monkeypatch):
    monkeypatch.setenv("CROWD_KERAS_THREADS", "3")
    counts = {}

    def task(lo, hi):
        counts[lo] = numerics.thread_count()

    numerics.in_row_blocks(np.array([0, 1, 2, 3]), task)
    assert counts == {0: 1, 1: 1, 2: 1}
    assert numerics.thread_count() == 3                    # the caller's own count again


@pytest.mark.parametrize("shift", [True, False])
@pytest.mark.parametrize("k", [6, 9, 40])
def test_softmax_rows_on_threads_changes_no_bit(monkeypatch, shift, k):
    """Also wide rows unshifted (EBCC's E-step): a row's total must not depend on where its
    block starts (BLAS's matrix-vector kernel summed a block's last rows in another order)."""
    monkeypatch.setattr(numerics, "_PARALLEL_WORK", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", "1")
    logits = np.random.default_rng(3).normal(scale=20.0 if shift else 2.0, size=(9001, k))
    logits[::5, 2:] = -np.inf
    offset = np.linspace(-1.0, 1.0, k)
    serial = softmax_rows(logits, offset=offset, shift=shift)
    for threads in ("2", "3", "7"):
        monkeypatch.setenv("CROWD_KERAS_THREADS", threads)
        parallel = softmax_rows(logits, offset=offset, shift=shift)
        assert all(np.array_equal(a, b) for a, b in zip(serial, parallel)), threads
    same = logits.copy()
    assert softmax_rows(same, out=same, offset=offset, shift=shift)[0] is same
    assert np.array_equal(same, serial[0])


def test_elementwise_on_threads_changes_no_bit(monkeypatch):
    """Blocks of values on threads give the ufunc's own bits, in the input's shape (a
    transposed view in); other dtypes and small inputs are the ufunc's call as it is."""
    from scipy.special import digamma
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", "3")
    values = np.random.default_rng(4).gamma(0.5, 4.0, size=(301, 7, 5)) + 1e-3
    expected = digamma(values)
    got = numerics.elementwise(digamma, values)
    assert got.shape == values.shape and np.array_equal(got, expected)
    view = values.transpose(2, 0, 1)
    assert np.array_equal(numerics.elementwise(digamma, view), digamma(view))
    single = values.astype(np.float32)
    assert numerics.elementwise(digamma, single).dtype == digamma(single).dtype
    assert numerics.elementwise(digamma, values[:0]).shape == (0, 7, 5)


def test_value_blocks_split_large_work_only(monkeypatch):
    monkeypatch.setenv("CROWD_KERAS_THREADS", "3")
    assert numerics.value_blocks(10, 2).tolist() == [0, 10]              # too little work
    assert numerics.value_blocks(0, 2).tolist() == [0]
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    assert numerics.value_blocks(10, 2).tolist() == [0, 3, 6, 10]
    assert numerics.value_blocks(2, 2).tolist() == [0, 1, 2]             # no empty block


def test_column_sums_are_the_sums_over_rows():
    values = np.random.default_rng(6).random((10007, 5))
    np.testing.assert_allclose(numerics.column_sums(values), values.sum(axis=0), rtol=1e-13)
    counts = np.arange(12).reshape(4, 3)
    assert numerics.column_sums(counts).tolist() == [18.0, 22.0, 26.0]
    assert numerics.column_sums(np.zeros((0, 3))).tolist() == [0.0, 0.0, 0.0]


def test_softmax_rows_refuses_rows_without_a_class():
    with pytest.raises(ValueError, match=r"at least one column.*\(2, 0\)"):
        softmax_rows(np.empty((2, 0)))


@pytest.mark.parametrize("threads", ["1", "3"])
def test_sparse_dot_refuses_a_dense_argument_of_another_length(monkeypatch, threads):
    """The column blocks of a CSC product read only the rows they need: extra rows were
    ignored on threads, and missing ones named an inner function."""
    import scipy.sparse as sp
    monkeypatch.setattr(numerics, "_PARALLEL_WORK", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", threads)
    matrix = sp.random(400, 30, density=0.2, format="csc", random_state=0)
    for rows in (35, 25):
        with pytest.raises(ValueError, match="the dense argument needs 30 rows"):
            numerics.sparse_dot(matrix, np.ones((rows, 2)))
        with pytest.raises(ValueError, match="the dense argument needs 30 rows"):
            numerics.sparse_dot(matrix.tocsr(), np.ones((rows, 2)))


def test_sparse_dot_of_blocks_keeps_to_the_thread_count(monkeypatch):
    """Ten blocks on one thread are one run (the calling thread); on three, three runs of
    consecutive blocks; the sums equal one product to rounding."""
    import scipy.sparse as sp
    matrix = sp.random(6, 10, density=0.5, format="csc", random_state=1)
    dense = np.random.default_rng(2).normal(size=(10, 3))
    blocks = [dense[i:i + 1] for i in range(10)]
    runs = []
    original = numerics.in_row_blocks

    def spy(bounds, task):
        runs.append(np.diff(bounds).tolist())
        return original(bounds, task)

    monkeypatch.setattr(numerics, "in_row_blocks", spy)
    for threads, expected in (("1", [10]), ("3", [4, 3, 3])):
        monkeypatch.setenv("CROWD_KERAS_THREADS", threads)
        runs.clear()
        got = numerics.sparse_dot_of_blocks(matrix, blocks)
        assert np.allclose(got, matrix @ dense, rtol=1e-13, atol=1e-13)
        assert runs == [expected]
    with pytest.raises(ValueError, match="at least one block"):
        numerics.sparse_dot_of_blocks(matrix, [])


def test_elementwise_keeps_the_ufuncs_dtype_and_the_callers_errstate(monkeypatch):
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", "3")
    values = np.random.default_rng(5).random(3000)
    values[-1] = -1.0                                     # in the calling thread's block
    values[0] = -1.0                                      # in a worker's block
    assert numerics.elementwise(np.isnan, values).dtype == np.bool_
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            numerics.elementwise(np.log, values[:1000])   # the bad value in a worker's block
    with np.errstate(invalid="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.isnan(numerics.elementwise(np.log, values)).sum() == 2
