"""`Annotations`: who said what about which item.

One immutable container of sparse crowd annotations shared by every label model, layer
and integration of the library. An annotation is a triple of integer codes
``(item, annotator, label)``; ``item_ids``, ``annotator_ids`` and ``classes`` map the
codes back to the user's own identifiers. Items without any annotation stay in the
container (label models give them the prior), so no input item is dropped silently.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .codes import (check_unique_ids, dense_codes, factorize_ids, factorize_labels, frozen,
                    ids_array, integer_codes, label_matrix_codes, show, sort_order)
from .errors import CrowdDataError
from .numerics import MISSING, pair_index

__all__ = ["Annotations"]

_DUPLICATE_POLICIES = ("error", "last", "first")


class Annotations:
    """Immutable sparse crowd annotations.

    Codes are 0-based: ``items[n]`` indexes ``item_ids``, ``annotators[n]`` indexes
    ``annotator_ids`` and ``labels[n]`` indexes ``classes``. Annotations are stored sorted by
    (item, annotator) and every (item, annotator) pair appears at most once.

    Build one with :meth:`from_dense`, :meth:`from_frame`, :meth:`from_label_matrix`,
    :meth:`from_padded` or :meth:`from_counts`; bad input raises
    :class:`crowd_keras.CrowdDataError` naming the row, item and annotator at fault.

    It is the library's one encoding of annotations: the views every model needs
    (:meth:`label_counts`, :meth:`vote_incidence`, :meth:`to_padded`,
    :meth:`annotator_label_counts`, per-item and per-annotator counts) are computed once and
    cached; they are read-only.

    Attributes:
        items, annotators, labels: int64 arrays of shape ``(n_annotations,)``.
        item_ids: shape ``(n_items,)``; annotator_ids: ``(n_annotators,)``; classes: ``(n_classes,)``.
        n_duplicates: number of repeated (item, annotator) annotations that were dropped under
            ``duplicates="last"``/``"first"`` (0 otherwise).
    """

    __slots__ = ("_items", "_annotators", "_labels", "_item_ids", "_annotator_ids", "_classes",
                 "_n_duplicates", "_cache")

    def __init__(self, items: Any, annotators: Any, labels: Any, *, item_ids: Any = None,
                 annotator_ids: Any = None, classes: Any = None, n_items: Optional[int] = None,
                 n_annotators: Optional[int] = None, n_classes: Optional[int] = None,
                 duplicates: str = "error") -> None:
        if duplicates not in _DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {_DUPLICATE_POLICIES}, got {show(duplicates)}")
        items = integer_codes(np.asarray(items).ravel(), "item codes", "position ")
        annotators = integer_codes(np.asarray(annotators).ravel(), "annotator codes", "position ")
        labels = integer_codes(np.asarray(labels).ravel(), "labels", "position ")
        if not (len(items) == len(annotators) == len(labels)):
            raise CrowdDataError(
                f"items, annotators and labels must have the same length, got "
                f"{len(items)}, {len(annotators)}, {len(labels)}")

        n_items = self._size(item_ids, n_items, items, "item")
        n_annotators = self._size(annotator_ids, n_annotators, annotators, "annotator")
        n_classes = self._size(classes, n_classes, labels, "class")
        if n_classes < 1:
            raise CrowdDataError("at least one class is needed; pass classes= or n_classes=")
        for codes, size, what in ((items, n_items, "item"), (annotators, n_annotators, "annotator"),
                                  (labels, n_classes, "label")):
            bad = (codes < 0) | (codes >= size)
            if bad.any():
                n = int(np.argmax(bad))
                limit = f"0..{size - 1}" if size else "none (no codes declared)"
                raise CrowdDataError(
                    f"{what} code {int(codes[n])} out of range {limit} at annotation {n} "
                    f"(item code {int(items[n])}, annotator code {int(annotators[n])})")

        self._item_ids = self._ids(item_ids, n_items, "item")
        self._annotator_ids = self._ids(annotator_ids, n_annotators, "annotator")
        self._classes = self._ids(classes, n_classes, "class")
        self._store(items, annotators, labels, duplicates)

    @staticmethod
    def _ids(ids: Any, n: int, what: str) -> np.ndarray:
        if ids is None:
            return frozen(np.arange(n))
        out = ids_array(ids)
        check_unique_ids(out, what)
        return out

    def _store(self, items: np.ndarray, annotators: np.ndarray, labels: np.ndarray,
               duplicates: str) -> None:
        """Sort the (n,) int64 code arrays by (item, annotator), stably (later rows of a
        duplicate pair stay later), apply the duplicate policy and store them."""
        n_ann = max(len(self._annotator_ids), 1)
        fits = len(self._item_ids) * n_ann < 2 ** 62
        key = items * n_ann + annotators if fits else None  # one int64 sort key per annotation
        order = sort_order(items, annotators, len(self._item_ids), n_ann, key)
        if order is not None:
            labels = labels[order]
            if fits:
                key = key[order]
            else:
                items, annotators = items[order], annotators[order]
        same = np.zeros(len(items), dtype=bool)
        if len(items) > 1:
            same[1:] = (key[1:] == key[:-1]) if fits else \
                (items[1:] == items[:-1]) & (annotators[1:] == annotators[:-1])
        if fits:
            items, annotators = np.divmod(key, n_ann)
        n_dup = int(same.sum())
        if n_dup and duplicates == "error":
            n = int(np.argmax(same))
            rows = sorted(int(order[k]) if order is not None else k for k in (n - 1, n))
            raise CrowdDataError(
                f"{n_dup} duplicate (item, annotator) annotation(s); first: item "
                f"{show(self._item_ids[items[n]])}, annotator {show(self._annotator_ids[annotators[n]])} "
                f"at row {rows[0]} and row {rows[1]} (input order). Pass duplicates='last' (or "
                "duplicates='first') to keep one and count the rest")
        if n_dup:
            keep = ~same if duplicates == "first" else ~np.append(same[1:], False)
            items, annotators, labels = items[keep], annotators[keep], labels[keep]
        self._items = frozen(items)
        self._annotators = frozen(annotators)
        self._labels = frozen(labels)
        self._n_duplicates = n_dup
        self._cache: dict = {}   # derived views, computed once (the container is immutable)

    @staticmethod
    def _size(ids: Any, n: Optional[int], codes: np.ndarray, what: str) -> int:
        if ids is not None:
            size = len(ids)
            if n is not None and n != size:
                raise CrowdDataError(f"n_{what}s={n} disagrees with {size} {what} ids")
            return size
        if n is not None:
            return int(n)
        size = int(codes.max()) + 1 if len(codes) else 0
        if size > max(2 ** 20, 16 * len(codes)):  # a stray code, not a size: no huge id array
            k = int(np.argmax(codes))
            whats = "classes" if what == "class" else f"{what}s"
            raise CrowdDataError(
                f"{what} code {size - 1} at annotation {k} would make {size} {whats} for "
                f"{len(codes)} annotations; codes index {whats} 0..n-1: pass n_{whats}= (or "
                f"the ids), or build with Annotations.from_frame, which factorises values")
        return size

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dense(cls, matrix: Any, missing: Any = MISSING, classes: Optional[Sequence] = None, *,
                   item_ids: Any = None, annotator_ids: Any = None) -> "Annotations":
        """From an items × annotators matrix of class codes, ``missing`` where absent.

        Args:
            matrix: array-like of shape ``(items, annotators)``.
            missing: the marker of an absent annotation (default -1; may be NaN).
            classes: class names in code order; default ``0..max code``.
        """
        rows, cols, labels, classes, shape = dense_codes(matrix, missing, classes,
                                                         allow_empty=item_ids is not None)
        return cls._checked(rows, cols, labels, classes,
                            item_ids=item_ids, annotator_ids=annotator_ids,
                            n_items=shape[0], n_annotators=shape[1],
                            where=lambda n: f"row {rows[n]}, column {cols[n]}")

    @classmethod
    def from_label_matrix(cls, L: Any, cardinality: Optional[int] = None, *,
                          classes: Optional[Sequence] = None) -> "Annotations":
        """From a Snorkel label matrix ``L`` (items × labeling functions, -1 = abstain).

        Vectorised: one pass to validate (two reductions for an integer matrix; an entry is
        located only when one is bad) and one ``nonzero``; no sort, since row-major order is
        already (item, function) order. Items are ``0..n-1``, annotators ``0..m-1``.

        Args:
            cardinality: number of classes ``k`` (codes ``0..k-1``); default ``max(L) + 1``.
            classes: class names in code order (instead of ``cardinality``).

        Raises :class:`crowd_keras.CrowdDataError` naming the row and column of the first bad
        entry (NaN, a non-integer, a code below -1 or outside the classes), as :meth:`from_dense`.
        """
        m, classes = label_matrix_codes(L, cardinality, classes)
        flat = np.flatnonzero(m >= 0)  # row-major: sorted by (item, annotator), no duplicates
        rows, cols = np.divmod(flat, m.shape[1])
        return cls._trusted(rows, cols, m.reshape(-1)[flat], n_items=m.shape[0],
                            n_annotators=m.shape[1],
                            classes=classes)

    @classmethod
    def _trusted(cls, items: np.ndarray, annotators: np.ndarray, labels: np.ndarray, *,
                 n_items: int, n_annotators: int, classes: Any) -> "Annotations":
        """Build from codes already validated, sorted by (item, annotator) and unique; the
        item and annotator ids are ``0..n-1`` (no uniqueness check needed)."""
        self = object.__new__(cls)
        self._items = frozen(np.asarray(items, dtype=np.int64))
        self._annotators = frozen(np.asarray(annotators, dtype=np.int64))
        self._labels = frozen(np.asarray(labels, dtype=np.int64))
        self._item_ids = frozen(np.arange(n_items))
        self._annotator_ids = frozen(np.arange(n_annotators))
        self._classes = ids_array(classes)
        check_unique_ids(self._classes, "class")
        self._n_duplicates = 0
        self._cache = {}
        return self

    @classmethod
    def from_frame(cls, df: pd.DataFrame, item: str = "task", annotator: str = "worker",
                   label: str = "label", classes: Optional[Sequence] = None, *,
                   item_ids: Optional[Sequence] = None, annotator_ids: Optional[Sequence] = None,
                   duplicates: str = "error") -> "Annotations":
        """From a long frame with one row per annotation (crowd-kit's layout).

        Labels may be strings or integers. Without ``classes``, compact integer labels give
        classes ``0..max`` (:func:`~crowd_keras.codes.compact_codes`), other labels their
        sorted distinct values (one stray ``10**9`` makes one class, not a billion).
        ``item_ids`` may list items that have no annotation (they are kept); without it the
        items are the distinct values of the ``item`` column in sorted order.

        Vectorised: each column is checked and factorised in a few numpy/pandas passes and
        the rows are ordered by two counting sorts (10M rows in seconds on one core). Bad
        rows raise :class:`~crowd_keras.CrowdDataError` naming the row, its item and
        annotator and the value: a missing value, a list/dict value, a column mixing types
        (``1`` and ``"1"``), a negative, fractional, infinite or too large number, a
        duplicate (item, annotator) pair (both rows named).
        """
        if not isinstance(df, pd.DataFrame):
            raise CrowdDataError(f"expected a pandas DataFrame, got {type(df).__name__}")
        missing_cols = [c for c in (item, annotator, label) if c not in df.columns]
        if missing_cols:
            raise CrowdDataError(f"frame has no column(s) {missing_cols}; columns are {list(df.columns)}")
        if len(df) == 0 and item_ids is None:
            raise CrowdDataError("frame has no annotations")
        cols = {"item": df[item], "annotator": df[annotator], "label": df[label]}
        cols = {k: pd.Series(np.asarray(c, dtype=object), index=c.index)
                if isinstance(c.dtype, pd.CategoricalDtype) else c for k, c in cols.items()}

        def where(n: int, skip: str = "label") -> str:
            shown = ", ".join(f"{role} {show(cols[role].iloc[n])}"
                              for role in ("item", "annotator", "label") if role not in (skip, "label"))
            return f"row {n} ({shown})" if shown else f"row {n}"

        for role, name in (("item", item), ("annotator", annotator), ("label", label)):
            null = cols[role].isna().to_numpy()
            if null.any():
                r = int(np.argmax(null))
                raise CrowdDataError(f"missing value (NaN/None) in column {show(name)} at "
                                     f"{where(r, skip=role)}: the {role} of every row is needed")
        if classes is None:
            codes, classes = factorize_labels(cols["label"], where)
        else:
            codes = pd.Index(list(classes)).get_indexer(cols["label"])
            if (codes < 0).any():
                n = int(np.argmax(codes < 0))
                raise CrowdDataError(f"label {show(cols['label'].iloc[n])} at {where(n)} is not one "
                                     f"of the classes {list(classes)}")
        ids = {}
        for role, given in (("item", item_ids), ("annotator", annotator_ids)):
            if given is None:
                ids[role] = factorize_ids(cols[role], role, lambda n, r=role: where(n, skip=r))
                continue
            found = pd.Index(list(given)).get_indexer(cols[role])
            if (found < 0).any():
                n = int(np.argmax(found < 0))
                raise CrowdDataError(f"{role} {show(cols[role].iloc[n])} at row {n} is not in "
                                     f"{role}_ids")
            ids[role] = (found.astype(np.int64), given)
        (item_codes, item_ids), (ann_codes, annotator_ids) = ids["item"], ids["annotator"]
        return cls._checked(item_codes, ann_codes, codes, classes, item_ids=item_ids,
                            annotator_ids=annotator_ids, duplicates=duplicates, where=where)

    @classmethod
    def from_counts(cls, counts: Any, classes: Optional[Sequence] = None) -> "Annotations":
        """From (items, K) label counts without annotator ids: the ``k``-th label of an item
        is credited to a pseudo-annotator ``"slot-k"``.

        Raises:
            CrowdDataError: not a 2-D array of non-negative integer counts.
        """
        r = np.asarray(counts)
        if r.ndim != 2:
            raise CrowdDataError(f"label counts must be a 2-D items × classes array, got shape "
                                 f"{r.shape}")
        if r.dtype.kind not in "iuf" or (r.dtype.kind == "f" and not np.isfinite(r).all()):
            bad = "non-numeric" if r.dtype.kind not in "iuf" else "non-finite"
            raise CrowdDataError(f"label counts must be finite numbers; got {bad} values")
        if (r < 0).any() or (r != np.round(r)).any():
            pos = tuple(int(p) for p in np.argwhere((r < 0) | (r != np.round(r)))[0])
            raise CrowdDataError(f"label counts must be non-negative integers; got {r[pos]} at "
                                 f"(item, class) {pos}")
        r = r.astype(np.int64)
        n, k = r.shape
        if classes is not None and len(classes) != k:
            raise CrowdDataError(f"{len(classes)} classes given for {k} count columns")
        items = np.repeat(np.repeat(np.arange(n), k), r.ravel())
        labels = np.repeat(np.tile(np.arange(k), n), r.ravel())
        starts = np.concatenate([[0], np.cumsum(r.sum(axis=1))[:-1]])
        slots = np.arange(len(items)) - starts[items]
        n_slots = max(int(r.sum(axis=1).max()) if n else 0, 1)
        return cls(items, slots, labels, n_items=n,
                   annotator_ids=[f"slot-{s}" for s in range(n_slots)],
                   classes=classes, n_classes=k)

    @classmethod
    def from_padded(cls, annotator_idx: Any, labels: Any, n_annotators: Optional[int] = None,
                    classes: Optional[Sequence] = None, *, item_ids: Any = None,
                    annotator_ids: Any = None) -> "Annotations":
        """Inverse of :meth:`to_padded`: per-item annotator codes and labels padded with -1."""
        a = np.asarray(annotator_idx)
        y = np.asarray(labels)
        if a.shape != y.shape or a.ndim != 2:
            raise CrowdDataError(f"padded annotator ids and labels must be 2-d and of one shape, got "
                                 f"{a.shape} and {y.shape}")
        a = integer_codes(a, "padded annotator ids", "(row, slot) ")
        y = integer_codes(y, "padded labels", "(row, slot) ")
        present = a >= 0
        if ((y >= 0) != present).any():
            r, c = np.argwhere((y >= 0) != present)[0]
            raise CrowdDataError(f"padding mismatch at row {r}, slot {c}: annotator {a[r, c]}, "
                                 f"label {y[r, c]} (both must be -1 or both set)")
        rows, slots = np.nonzero(present)
        if n_annotators is None and annotator_ids is None:
            n_annotators = int(a.max()) + 1 if present.any() else 0
        return cls._checked(rows, a[rows, slots], y[rows, slots], classes, item_ids=item_ids,
                            annotator_ids=annotator_ids, n_items=a.shape[0],
                            n_annotators=n_annotators,
                            where=lambda n: f"row {rows[n]}, slot {slots[n]}")

    @classmethod
    def _checked(cls, items, annotators, labels, classes, *, where, **kwargs) -> "Annotations":
        """Construct, re-raising range errors with the caller's notion of position."""
        labels = np.asarray(labels, dtype=np.int64)
        if classes is not None:
            bad = (labels < 0) | (labels >= len(classes))
            if bad.any():
                n = int(np.argmax(bad))
                raise CrowdDataError(f"label code {labels[n]} at {where(n)} is outside the "
                                     f"{len(classes)} classes {list(classes)}")
        return cls(items, annotators, labels, classes=classes, **kwargs)

    # ------------------------------------------------------------------ properties
    items = property(lambda self: self._items, doc="Item code per annotation, (n_annotations,).")
    annotators = property(lambda self: self._annotators,
                          doc="Annotator code per annotation, (n_annotations,).")
    labels = property(lambda self: self._labels, doc="Label code per annotation, (n_annotations,).")
    item_ids = property(lambda self: self._item_ids, doc="Item identifiers, (n_items,).")
    annotator_ids = property(lambda self: self._annotator_ids,
                             doc="Annotator identifiers, (n_annotators,).")
    classes = property(lambda self: self._classes, doc="Class names in code order, (n_classes,).")
    n_duplicates = property(lambda self: self._n_duplicates,
                            doc="Repeated (item, annotator) annotations dropped at construction.")

    @property
    def n_items(self) -> int:
        return len(self._item_ids)

    @property
    def n_annotators(self) -> int:
        return len(self._annotator_ids)

    @property
    def n_classes(self) -> int:
        return len(self._classes)

    @property
    def n_annotations(self) -> int:
        return len(self._labels)

    def __len__(self) -> int:
        return self.n_annotations

    def __repr__(self) -> str:
        return (f"Annotations(n_items={self.n_items}, n_annotators={self.n_annotators}, "
                f"n_classes={self.n_classes}, n_annotations={self.n_annotations})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Annotations):
            return NotImplemented
        return (np.array_equal(self._items, other._items)
                and np.array_equal(self._annotators, other._annotators)
                and np.array_equal(self._labels, other._labels)
                and np.array_equal(self._item_ids, other._item_ids)
                and np.array_equal(self._annotator_ids, other._annotator_ids)
                and np.array_equal(self._classes, other._classes))

    __hash__ = None  # mutable-looking container semantics: compare by value, do not hash

    # ------------------------------------------------------------------ views
    def to_dense(self, missing: int = MISSING) -> np.ndarray:
        """Items × annotators int64 matrix of label codes, ``missing`` where absent."""
        out = np.full((self.n_items, self.n_annotators), missing, dtype=np.int64)
        out[self._items, self._annotators] = self._labels
        return out

    def to_label_matrix(self) -> np.ndarray:
        """Snorkel's layout: items × annotators (labeling functions), -1 = abstain."""
        return self.to_dense(MISSING)

    def to_frame(self, item: str = "task", annotator: str = "worker",
                 label: str = "label") -> pd.DataFrame:
        """Long frame, one row per annotation, with the user's ids and class names."""
        return pd.DataFrame({item: self._item_ids[self._items],
                             annotator: self._annotator_ids[self._annotators],
                             label: self._classes[self._labels]})

    def _cached(self, key: str, make: Any) -> Any:
        """A derived view, computed on first use; arrays are returned read-only."""
        if key not in self._cache:
            value = make()
            if isinstance(value, np.ndarray):
                value = frozen(value)
            self._cache[key] = value
        return self._cache[key]

    def annotations_per_item(self) -> np.ndarray:
        """Number of annotations of each item, (n_items,) (read-only, cached)."""
        return self._cached("per_item", lambda: np.bincount(self._items, minlength=self.n_items))

    def annotations_per_annotator(self) -> np.ndarray:
        """Number of annotations by each annotator, (n_annotators,) (read-only, cached)."""
        return self._cached("per_annotator",
                            lambda: np.bincount(self._annotators, minlength=self.n_annotators))

    def annotator_label_counts(self) -> np.ndarray:
        """(n_annotators, n_classes) int64: how often each annotator gave each label (cached)."""
        k = self.n_classes
        return self._cached("annotator_labels", lambda: np.bincount(
            pair_index(self._annotators, self._labels, k),
            minlength=self.n_annotators * k).reshape(self.n_annotators, k))

    def vote_incidence(self) -> Any:
        """(n_items, n_annotators × n_classes) sparse 0/1 matrix: item i got label l from a.

        Column ``a · K + l``. The E- and M-steps of the Dawid-Skene family are products with
        this matrix and its transpose: O(annotations × classes), no Python loop over
        annotations or annotators. Cached; treat it as read-only.
        """
        return self._cached("incidence", self._incidence)

    def _incidence(self) -> Any:
        # annotations are sorted by (item, annotator): the CSR arrays directly, no COO sort
        indptr = np.zeros(self.n_items + 1, dtype=np.int64)
        np.cumsum(self.annotations_per_item(), out=indptr[1:])
        cols = pair_index(self._annotators, self._labels, self.n_classes)
        return sp.csr_matrix((np.ones(self.n_annotations), cols, indptr),
                             shape=(self.n_items, self.n_annotators * self.n_classes))

    def to_padded(self, max_annotations: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """Per item, the annotator codes and labels, padded with -1.

        Returns:
            ``(annotator_idx, labels)``, both int64 of shape ``(n_items, k)`` with
            ``k = max_annotations`` or the largest number of annotations on one item (at
            least 1). This feeds Keras without an items × annotators matrix.
        """
        if max_annotations is None:
            return self._cached("padded", self._padded)
        return self._padded(max_annotations)

    def _padded(self, max_annotations: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        per_item = self.annotations_per_item()
        k = max(int(per_item.max()) if len(per_item) else 0, 1)
        if max_annotations is not None:
            if max_annotations < k:
                raise CrowdDataError(f"max_annotations={max_annotations} but an item has {k} "
                                     "annotations")
            k = int(max_annotations)
        starts = np.concatenate([[0], np.cumsum(per_item)[:-1]])
        slot = np.arange(self.n_annotations) - starts[self._items]  # rank within the item
        ann = np.full((self.n_items, k), MISSING, dtype=np.int64)
        lab = np.full((self.n_items, k), MISSING, dtype=np.int64)
        ann[self._items, slot] = self._annotators
        lab[self._items, slot] = self._labels
        return frozen(ann), frozen(lab)

    def label_counts(self, normalize: bool = False) -> np.ndarray:
        """Items × classes float matrix of vote counts (or fractions, 0 rows for unlabelled
        items); the counts are cached and read-only."""
        counts = self._cached("label_counts", lambda: np.bincount(
            pair_index(self._items, self._labels, self.n_classes),
            minlength=self.n_items * self.n_classes).reshape(self.n_items, self.n_classes)
            .astype(np.float64))
        if normalize:
            total = counts.sum(axis=1, keepdims=True)
            counts = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
        return counts

    def subset(self, items: Any) -> "Annotations":
        """The annotations of the given item codes (in that order), keeping all annotators."""
        sel = np.asarray(items, dtype=np.int64)
        remap = np.full(self.n_items, -1, dtype=np.int64)
        remap[sel] = np.arange(len(sel))
        keep = remap[self._items] >= 0
        return Annotations(remap[self._items[keep]], self._annotators[keep], self._labels[keep],
                           item_ids=self._item_ids[sel], annotator_ids=self._annotator_ids,
                           classes=self._classes)

    def select(self, mask: Any) -> "Annotations":
        """A copy with only the annotations where ``mask`` (n_annotations,) is true; all items stay."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != self._labels.shape:
            raise CrowdDataError(f"mask must have shape {self._labels.shape}, got {mask.shape}")
        return Annotations(self._items[mask], self._annotators[mask], self._labels[mask],
                           item_ids=self._item_ids, annotator_ids=self._annotator_ids,
                           classes=self._classes)

    def item_index(self, ids: Iterable[Any]) -> np.ndarray:
        """Codes of the given item ids; raises if one is unknown."""
        return self._lookup(self._item_ids, ids, "item")

    def annotator_index(self, ids: Iterable[Any]) -> np.ndarray:
        """Codes of the given annotator ids; raises if one is unknown."""
        return self._lookup(self._annotator_ids, ids, "annotator")

    @staticmethod
    def _lookup(table: np.ndarray, ids: Iterable[Any], what: str) -> np.ndarray:
        ids = list(ids)
        codes = pd.Index(table).get_indexer(ids)
        if (codes < 0).any():
            n = int(np.argmax(codes < 0))
            raise CrowdDataError(f"unknown {what} id {show(ids[n])}")
        return codes.astype(np.int64)
