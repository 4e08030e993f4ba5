"""Factorisation of arrow string columns (crowd_keras.string_codes), word by word or by
hashing each row's words: the same codes and sorted distinct values as
pandas.factorize(sort=True), or a decline."""
import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from crowd_keras import Annotations, string_codes
from crowd_keras.string_codes import (_arrow, _codes, _string_order, _Words, column_codes,
                                      factorize_strings)

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
    codes, table = _codes(words)
    expected, uniques = _pandas(column)
    np.testing.assert_array_equal(codes, expected)
    assert list(string_codes._strings(table)) == list(uniques)   # rebuilt from their words


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


@pytest.mark.parametrize("case", ["few distinct", "few distinct random ids", "NUL byte",
                                  "over 64 bytes", "object dtype", "python strings",
                                  "short column"])
def test_declines_where_it_would_not_pay_or_not_be_exact(case):
    rng = np.random.default_rng(3)
    values = _prefixed_ids(rng)
    dtype = "str"
    if case == "few distinct":         # pandas' table of strings is small
        values = np.array([f"worker-{i}" for i in rng.integers(0, 500, ROWS)], dtype=object)
    elif case == "few distinct random ids":   # the hash route's judgement of the sample
        values = _hex_ids(rng, 5000)[rng.integers(0, 5000, ROWS)]
    elif case == "NUL byte":          # the word route: "a" and "a\0" would share their words
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


# ----------------------------------------------------------------- the hash route
def _hex_ids(rng, k: int) -> np.ndarray:
    """k random 32-digit hex ids (hashes): 4 words, each with many values."""
    return np.array([f"{a:016x}{b:016x}" for a, b in rng.integers(0, 2 ** 63, (k, 2))],
                    dtype=object)


def _random_ids(case: str, rng) -> np.ndarray:
    """A pool of distinct random ids of one kind (about 60k, so that the evenly spaced sample
    of a 70k-row column has over 2**15 distinct strings and several many-valued words)."""
    if case == "hex":             # one width, a multiple of 8: words read in the arrow buffer
        return _hex_ids(rng, 60_000)
    if case == "uuid":            # 36 bytes, one width: a strided copy, the last word masked
        return np.array([str(uuid.UUID(bytes=rng.bytes(16))) for _ in range(60_000)],
                        dtype=object)
    if case == "mixed lengths":   # 12-40 bytes, on both sides of word boundaries: gathered
        return np.array(sorted({h[:n] for h, n in zip(_hex_ids(rng, 60_000),
                                                      rng.integers(12, 41, 60_000))}),
                        dtype=object)
    if case == "non-ASCII":       # 2-, 3- and 4-byte characters: byte order is code point order
        alphabet = np.array(list("0123456789abcdef") + list("éßñ中文🙂\x7f"))
        return np.array(sorted({"".join(alphabet[rng.integers(0, len(alphabet), n)])
                                for n in rng.integers(9, 15, 60_000)}), dtype=object)
    if case == "last byte":       # groups of ids that differ in their last character only
        return np.array([b + c for b in _hex_ids(rng, 15_000) for c in "09aé"], dtype=object)
    if case == "length":          # an id, its prefix, and the id with one or two NUL bytes
        return np.array([v for b in _hex_ids(rng, 15_000)
                         for v in (b[:20], b[:19], b[:20] + "\0", b[:20] + "\0\0")],
                        dtype=object)
    if case == "shared first word":   # 50 first words: ties broken by the later words
        return np.array([f"{p:08x}" + h[8:] for p, h in zip(rng.integers(0, 50, 60_000),
                                                             _hex_ids(rng, 60_000))],
                        dtype=object)
    raise ValueError(case)


@pytest.fixture
def hash_route(monkeypatch):
    """The results of the hash route's calls in this test (True: codes given)."""
    calls = []
    real = string_codes._hash_codes

    def spy(words):
        out = real(words)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(string_codes, "_hash_codes", spy)
    return calls


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("case", ["hex", "uuid", "mixed lengths", "non-ASCII", "last byte",
                                  "length", "shared first word"])
def test_random_ids_take_the_hash_route_with_pandas_results(case, arrow_type, hash_route):
    rng = np.random.default_rng(5)
    pool = _random_ids(case, rng)
    values = pool[rng.integers(0, len(pool), ROWS)]
    column = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, type=arrow_type)))
    got = factorize_strings(column)
    assert hash_route == [True], "random ids are the hash route's case"
    _same_as_pandas(column, got)


def test_hash_route_on_str_dtype_sliced_and_unaligned_columns(hash_route):
    rng = np.random.default_rng(6)
    values = _hex_ids(rng, 60_000)[rng.integers(0, 60_000, ROWS + 5000)]
    whole = pd.Series(values, dtype="str")
    sliced = whole.iloc[4999:].reset_index(drop=True)          # an arrow offset
    # the same strings behind 3 bytes of another string: the words are not 8-byte aligned
    data = b"abc" + "".join(values).encode()
    offsets = np.arange(3, 3 + 32 * len(values) + 1, 32, dtype=np.int32)
    unaligned = pa.Array.from_buffers(pa.string(), len(values),
                                      [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    assert np.frombuffer(unaligned.buffers()[2], np.uint8)[3:].ctypes.data % 8 != 0
    columns = [whole, sliced, pd.Series(pd.arrays.ArrowExtensionArray(unaligned))]
    for column in columns:
        _same_as_pandas(column, factorize_strings(column))
    assert hash_route == [True] * len(columns)


def _weak_mix(h):
    """20 bits of the hash: the sample's 40k strings keep nearly 40k hashes (the route is
    taken), but 60k strings among 2**20 hashes share some (about 1700 pairs)."""
    h &= np.uint64(0xFFFFF)
    return h


def test_a_hash_collision_falls_back_to_pandas(monkeypatch, hash_route):
    rng = np.random.default_rng(7)
    column = pd.Series(_hex_ids(rng, 60_000)[rng.integers(0, 60_000, ROWS)], dtype="str")
    monkeypatch.setattr(string_codes, "_mix", _weak_mix)
    assert factorize_strings(column) is None   # the check saw two strings in one group
    assert hash_route == [False]
    _same_as_pandas(column, column_codes(column))


@pytest.mark.parametrize("case", ["all in one group", "8-bit hashes", "NUL twins"])
def test_hash_codes_check_every_row(monkeypatch, case):
    rng = np.random.default_rng(8)
    if case == "NUL twins":   # the same words, told apart by their lengths only
        values = np.array(["abcdefghi", "abcdefghi\0"], dtype=object)[rng.integers(0, 2, 500)]
    else:
        values = _hex_ids(rng, 2000)[rng.integers(0, 2000, 5000)]
    words = _Words(_arrow(pd.Series(values, dtype="str")))
    assert string_codes._hash_codes(words) is not None
    # at most 2**bits hashes for 2000 strings (or two strings in one hash): a group holds two
    bits = 8 if case == "8-bit hashes" else 0
    monkeypatch.setattr(string_codes, "_mix", lambda h: h & np.uint64((1 << bits) - 1))
    assert string_codes._hash_codes(words) is None


def test_string_order_is_python_order():
    rng = np.random.default_rng(9)
    values = sorted(set(_random_strings(rng, 3000) + [
        "", "\0", "a", "a\0", "a\0\0", "a\0b", "ab", "abcdefgh", "abcdefgh\0", "abcdefghi",
        "abcdefgg\xff", "abcdefgh" * 8, "abcdefgh" * 7 + "abcdefg", "é", "e\u0301", "中", "🙂",
        "\x7f", "\x80"]))
    shuffled = [values[i] for i in rng.permutation(len(values))]
    words = _Words(pa.array(shuffled))
    words.prepare()
    table = np.stack([words(w) for w in range(words.n_words)], axis=1)
    order = _string_order(table, words.lengths)
    assert [shuffled[i] for i in order] == values


def test_from_frame_random_ids_equal_object_ids(hash_route):
    rng = np.random.default_rng(10)
    items = _hex_ids(rng, 60_000)[rng.integers(0, 60_000, ROWS)]
    workers = _hex_ids(rng, 100)[rng.integers(0, 100, ROWS)]
    frame = pd.DataFrame({"task": items, "worker": workers,
                          "label": rng.integers(0, 3, ROWS)})
    frame = frame.drop_duplicates(["task", "worker"]).reset_index(drop=True)
    arrow = Annotations.from_frame(frame.astype({"task": "str", "worker": "str"}))
    plain = Annotations.from_frame(frame.astype({"task": object, "worker": object}))
    assert hash_route == [True]   # the items; the 100 workers are pandas' (few distinct)
    assert arrow == plain
    assert list(arrow.item_ids) == list(plain.item_ids)
    assert arrow.n_annotations == len(frame)
