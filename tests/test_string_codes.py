"""Word-by-word factorisation of arrow string columns (crowd_keras.string_codes): the same
codes and sorted distinct values as pandas.factorize(sort=True), or a decline."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from crowd_keras import Annotations
from crowd_keras.string_codes import _Words, _arrow, _codes, column_codes, factorize_strings

ROWS = 70_000   # above the route's minimum (2**16 rows)


def _pandas(column: pd.Series):
    codes, uniques = pd.factorize(column, sort=True)
    return codes, np.asarray(uniques, dtype=object)


def _same_as_pandas(column: pd.Series, got) -> None:
    codes, uniques = _pandas(column)
    np.testing.assert_array_equal(got[0], codes)
    assert got[0].dtype == np.int64
    assert list(np.asarray(got[1], dtype=object)) == list(uniques)


def _random_strings(rng: np.random.Generator, n: int) -> list:
    """Strings of 0-64 bytes: shared prefixes, multi-byte characters, prefixes of each other
    ("ab" and "abc"), lengths on both sides of each 8-byte word boundary."""
    alphabet = list("ab-_09") + ["é", "ß", "中", "🙂"]
    prefixes = ["", "task-", "user_", "https://example.org/", "ab", "abc", "中文"]
    out = []
    for _ in range(n):
        body = "".join(rng.choice(alphabet, size=int(rng.integers(0, 12))))
        s = prefixes[rng.integers(len(prefixes))] + body
        while len(s.encode()) > 64:
            s = s[:-1]
        out.append(s)
    return out


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
def test_word_codes_are_pandas_sorted_codes(arrow_type):
    rng = np.random.default_rng(0)
    values = _random_strings(rng, 3000) + ["", "a", "ab", "abcdefgh", "abcdefghi", "abcdefg"]
    column = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, type=arrow_type)))
    words = _Words(_arrow(column))
    words.prepare()
    codes, m = _codes(words)
    expected, uniques = _pandas(column)
    np.testing.assert_array_equal(codes, expected)
    assert m == len(uniques)


def _prefixed_ids(rng: np.random.Generator, rows: int = ROWS) -> np.ndarray:
    ids = np.array([f"tâche-{i}" for i in range(60_000)], dtype=object)
    return ids[rng.permutation(np.concatenate([np.arange(60_000),
                                               rng.integers(0, 60_000, rows - 60_000)]))]


@pytest.mark.parametrize("dtype", ["str", "string[pyarrow]"])
def test_prefixed_ids_take_the_word_route_with_pandas_results(dtype):
    column = pd.Series(_prefixed_ids(np.random.default_rng(1)), dtype=dtype)
    got = factorize_strings(column)
    assert got is not None, "ids made of a prefix and a counter are the route's case"
    _same_as_pandas(column, got)


def test_sliced_and_chunked_columns():
    values = _prefixed_ids(np.random.default_rng(2), ROWS + 5000)
    whole = pd.Series(values, dtype="str")
    sliced = whole.iloc[4999:].reset_index(drop=True)          # an arrow offset
    chunked = pd.concat([whole.iloc[:40_000], whole.iloc[40_000:]], ignore_index=True)
    assert _arrow(sliced).offset > 0
    assert chunked.array.__arrow_array__().num_chunks == 2
    for column in (sliced, chunked):
        got = factorize_strings(column)
        assert got is not None
        _same_as_pandas(column, got)


def _uuids(rng, rows):
    pool = np.array([f"{a:016x}-{b:016x}" for a, b in rng.integers(0, 2 ** 62, (50_000, 2))],
                    dtype=object)
    return pool[rng.integers(0, len(pool), rows)]


@pytest.mark.parametrize("case", ["random hex ids", "few distinct", "NUL byte", "over 64 bytes",
                                  "object dtype", "python strings", "short column"])
def test_declines_where_it_would_not_pay_or_not_be_exact(case):
    rng = np.random.default_rng(3)
    values = _prefixed_ids(rng)
    dtype = "str"
    if case == "random hex ids":       # every word nearly unique
        values = _uuids(rng, ROWS)
    elif case == "few distinct":       # pandas' table of strings is small
        values = np.array([f"worker-{i}" for i in rng.integers(0, 500, ROWS)], dtype=object)
    elif case == "NUL byte":
        values = values.copy()
        values[123] = "tâche-1\x00"
    elif case == "over 64 bytes":
        values = values.copy()
        values[5] = "x" * 65
    elif case == "object dtype":
        dtype = object
    elif case == "python strings":     # not held in arrow: no conversion of the column
        dtype = "string[python]"
    elif case == "short column":
        values = values[:1000]
    column = pd.Series(values, dtype=dtype)
    assert factorize_strings(column) is None
    _same_as_pandas(column, column_codes(column))   # pandas' own route


def test_from_frame_string_ids_equal_object_ids():
    rng = np.random.default_rng(4)
    items = _prefixed_ids(rng)
    workers = np.array([f"w{i}" for i in rng.integers(0, 100, ROWS)], dtype=object)
    frame = pd.DataFrame({"task": items, "worker": workers,
                          "label": rng.integers(0, 3, ROWS)})
    frame = frame.drop_duplicates(["task", "worker"]).reset_index(drop=True)
    arrow = Annotations.from_frame(frame.astype({"task": "str", "worker": "str"}))
    plain = Annotations.from_frame(frame.astype({"task": object, "worker": object}))
    assert factorize_strings(frame["task"].astype("str")) is not None
    assert arrow == plain
    assert list(arrow.item_ids) == list(plain.item_ids)
    assert arrow.n_annotations == len(frame)
