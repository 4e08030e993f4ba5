"""`Annotations`: who said what about which item.

One immutable container of sparse crowd annotations shared by every label model, layer
and integration of the library. An annotation is a triple of integer codes
``(item, annotator, label)``; ``item_ids``, ``annotator_ids`` and ``classes`` map the
codes back to the user's own identifiers. Items without any annotation stay in the
container (label models give them the prior), so no input item is dropped silently.
"""
from __future__ import annotations

from numbers import Real
from typing import Any, Iterable, Optional

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .annotation_readers import AnnotationReaders
from .arguments import check_count
from .codes import (alike_hint, check_unique_ids, frozen, ids_array, integer_codes, keyed_order,
                    materialized, position_codes, show, sort_order, stored_ids)
from .errors import Argument, CrowdDataError, Message
from .numerics import MISSING, pair_index
from .wide import to_wide as wide_frame

__all__ = ["Annotations"]

_DUPLICATE_POLICIES = ("error", "last", "first")


class Annotations(AnnotationReaders):
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
        items: int64 item codes, shape ``(n_annotations,)``.
        annotators: int64 annotator codes, shape ``(n_annotations,)``.
        labels: int64 class codes, shape ``(n_annotations,)``.
        item_ids: shape ``(n_items,)``. Every reader stores ids and classes alike
            (:func:`~crowd_keras.codes.stored_ids`): integer ids of any width, and numbers
            that are all whole (``1.0, 2.0``, as a CSV column of integers with a missing value
            elsewhere is read), are an int64 array (``[1, 2]``); any other ids (text,
            fractions such as ``1.5``, a mix of types) are an object array of the values
            given; booleans stay booleans.
        annotator_ids: shape ``(n_annotators,)``, stored as ``item_ids``.
        classes: shape ``(n_classes,)``, stored as ``item_ids``.
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
        items, annotators, labels, item_ids, annotator_ids, classes = (
            materialized(v) for v in (items, annotators, labels, item_ids, annotator_ids, classes))
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
        return stored_ids(out)

    def _store(self, items: np.ndarray, annotators: np.ndarray, labels: np.ndarray,
               duplicates: str, row_numbers: Optional[np.ndarray] = None) -> None:
        """Sort the (n,) int64 code arrays by (item, annotator), stably (later rows of a
        duplicate pair stay later), apply the duplicate policy and store them."""
        n_ann = max(len(self._annotator_ids), 1)
        fits = len(self._item_ids) * n_ann < 2 ** 62
        key = items * n_ann + annotators if fits else None  # one int64 sort key per annotation
        in_order = fits and (len(key) < 2 or bool((key[1:] >= key[:-1]).all()))
        keyed = keyed_order(key, len(self._item_ids) * n_ann, labels, len(self._classes)) \
            if fits and not in_order else None
        if in_order:
            order = None
        elif keyed is not None:   # sorted with the keys and the labels: no gather of them
            order, key, labels = keyed
        else:   # pandas' counting sorts: key and row index need over 63 bits, or no key fits
            order = sort_order(items, annotators, len(self._item_ids), n_ann)
            if order is not None:   # (None: fewer than two annotations)
                labels = labels[order]
                if fits:
                    key = key[order]
                else:
                    items, annotators = items[order], annotators[order]
        same = np.zeros(len(items), dtype=bool)
        if len(items) > 1:
            same[1:] = (key[1:] == key[:-1]) if fits else \
                (items[1:] == items[:-1]) & (annotators[1:] == annotators[:-1])
        if fits:   # numpy divides by one integer without a hardware division (libdivide):
            # half the time of rebuilding the items as runs of their counts
            items, annotators = np.divmod(key, n_ann)
        n_dup = int(same.sum())
        if n_dup and duplicates == "error":
            n = int(np.argmax(same))
            rows = sorted(int(order[k]) if order is not None else k for k in (n - 1, n))
            if row_numbers is not None:
                rows = sorted(int(row_numbers[r]) for r in rows)
            raise CrowdDataError(Message(
                "{n} duplicate (item, annotator) annotation(s); first: item {item}, annotator "
                "{annotator} at row {row0} and row {row1} (input order). Pass {last} (or "
                "{first}) to keep one and count the rest", n=n_dup,
                item=show(self._item_ids[items[n]]),
                annotator=show(self._annotator_ids[annotators[n]]),
                row0=rows[0], row1=rows[1], last=Argument("duplicates", "last"),
                first=Argument("duplicates", "first")))
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
        whats = "classes" if what == "class" else f"{what}s"
        if n is not None:   # -1 or 2.5 items are not truncated to 0 or 2
            n = check_count(n, f"n_{whats}", 0)
        if ids is not None:
            size = len(ids)
            if n is not None and n != size:
                raise CrowdDataError(f"n_{whats}={n} disagrees with {size} {what} ids")
            return size
        if n is not None:
            return n
        size = int(codes.max()) + 1 if len(codes) else 0
        if size > max(2 ** 20, 16 * len(codes)):  # a stray code, not a size: no huge id array
            k = int(np.argmax(codes))
            raise CrowdDataError(
                f"{what} code {size - 1} at annotation {k} would make {size} {whats} for "
                f"{len(codes)} annotations; codes index {whats} 0..n-1: pass n_{whats}= (or "
                f"the ids), or build with Annotations.from_frame, which factorises values")
        return size

    # ------------------------------------------------------------------ constructors
    @classmethod
    def _trusted(cls, items: np.ndarray, annotators: np.ndarray, labels: np.ndarray, *,
                 item_ids: np.ndarray, annotator_ids: np.ndarray,
                 classes: np.ndarray) -> "Annotations":
        """Build from codes already validated, sorted by (item, annotator) and unique, and from
        id arrays already checked (``0..n-1`` ranges, or another ``Annotations``' own): no
        validation and no sort, for the library's internal views of valid data."""
        self = object.__new__(cls)
        self._items = frozen(np.asarray(items, dtype=np.int64))
        self._annotators = frozen(np.asarray(annotators, dtype=np.int64))
        self._labels = frozen(np.asarray(labels, dtype=np.int64))
        self._item_ids = frozen(item_ids)
        self._annotator_ids = frozen(annotator_ids)
        self._classes = frozen(classes)
        self._n_duplicates = 0
        self._cache = {}
        return self

    @classmethod
    def _from_valid_codes(cls, items: np.ndarray, annotators: np.ndarray, labels: np.ndarray, *,
                          item_ids: Any, annotator_ids: Any, classes: Any,
                          duplicates: str, distinct: Iterable[str] = (),
                          row_numbers: Optional[np.ndarray] = None) -> "Annotations":
        """Build from int codes known to be in range (a constructor's own factorisation): the
        ids are checked, the annotations sorted and deduplicated, the codes not re-validated.

        ``items`` and ``annotators`` are int64 arrays this call may keep (fresh codes);
        ``labels`` is copied (integer labels can be their own codes, the caller's memory).
        ``distinct`` names the id arrays (``"item"``, ``"annotator"``, ``"class"``) that are
        the distinct values of a factorisation: they are not checked for repeats again.
        ``row_numbers`` (n,): the rows a duplicate's message names (default ``0..n-1``).
        """
        if duplicates not in _DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {_DUPLICATE_POLICIES}, got {show(duplicates)}")
        self = object.__new__(cls)
        distinct = set(distinct)
        self._item_ids, self._annotator_ids, self._classes = (
            stored_ids(ids_array(ids)) if what in distinct else self._ids(ids, len(ids), what)
            for ids, what in ((item_ids, "item"), (annotator_ids, "annotator"),
                              (classes, "class")))
        if not len(self._classes):   # as the constructor: a model of no classes fails later
            raise CrowdDataError("at least one class is needed; " + (
                "classes= is empty" if "class" not in distinct else
                "pass classes= (a frame without rows has no labels to find them in)"))
        self._store(np.asarray(items, dtype=np.int64), np.asarray(annotators, dtype=np.int64),
                    np.array(labels, dtype=np.int64), duplicates, row_numbers)
        return self

    # ------------------------------------------------------------------ properties
    items = property(lambda self: self._items, doc="Item code per annotation, (n_annotations,).")
    annotators = property(lambda self: self._annotators,
                          doc="Annotator code per annotation, (n_annotations,).")
    labels = property(lambda self: self._labels, doc="Label code per annotation, (n_annotations,).")
    item_ids = property(lambda self: self._item_ids,
                        doc="Item identifiers, (n_items,): int64 for integer (and whole-number "
                            "float) ids, else an object array.")
    annotator_ids = property(lambda self: self._annotator_ids,
                             doc="Annotator identifiers, (n_annotators,): int64 for integer (and "
                                 "whole-number float) ids, else an object array.")
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

    def __getstate__(self) -> tuple:
        """The stored codes and ids, without the cache (rebuilt on use)."""
        return None, {slot: getattr(self, slot) for slot in self.__slots__ if slot != "_cache"}

    def __setstate__(self, state: tuple) -> None:
        # unpickled and deep-copied arrays come back writeable: freeze them again, as the
        # cached views of the copy assume
        for slot, value in state[1].items():
            object.__setattr__(self, slot, frozen(value) if isinstance(value, np.ndarray)
                               else value)
        self._cache = {}

    # ------------------------------------------------------------------ views
    def to_dense(self, missing: int = MISSING) -> np.ndarray:
        """Items × annotators int64 matrix of label codes, ``missing`` where absent."""
        out = np.full((self.n_items, self.n_annotators), missing, dtype=np.int64)
        out[self._items, self._annotators] = self._labels
        return out

    def to_wide(self, class_names: bool = False) -> pd.DataFrame:
        """cleanlab's wide layout (:meth:`from_wide`): items × annotators, index = item ids,
        columns = annotator ids, class codes as floats (``class_names``: the class names,
        read back by ``from_wide(frame, classes=annotations.classes)`` when they are text:
        numbers in the cells are read as codes), NaN where absent. Class names that are
        numbers other than the codes ``0..K-1`` (ratings 1..5) are refused with
        ``class_names``: ``from_wide`` would read them back as codes, shifted."""
        if class_names:
            plain = [c.item() if hasattr(c, "item") else c for c in self._classes]
            numbers = [isinstance(c, Real) and not isinstance(c, bool) for c in plain]
            if any(numbers) and plain != list(range(len(plain))):
                raise ValueError(f"to_wide(class_names=True): the classes {plain[:10]} are "
                                 "numbers, which from_wide reads back as class codes (a "
                                 "rating 1 as the class of code 1, the second); write the "
                                 "codes, to_wide(), and read them with from_wide(frame, "
                                 "classes=annotations.classes)")
        labels = self._classes[self._labels] if class_names else self._labels
        return wide_frame(self._items, self._annotators, labels, self._item_ids,
                       self._annotator_ids)

    def to_label_matrix(self) -> np.ndarray:
        """Snorkel's layout: items × annotators (labeling functions), -1 = abstain."""
        return self.to_dense(MISSING)

    def to_frame(self, item: str = "task", annotator: str = "worker",
                 label: str = "label") -> pd.DataFrame:
        """Long frame, one row per annotation, with the user's ids and class names: columns
        ``item``, ``annotator``, ``label`` (three distinct names), rows in stored order.

        ``from_frame`` reads it back; items and annotators without annotations and classes
        no label uses are not in it: pass ``item_ids=``, ``annotator_ids=`` and ``classes=``
        of these annotations to get them back too."""
        names = {"item": item, "annotator": annotator, "label": label}
        for role, name in names.items():   # one dict key: a column would vanish silently
            other = next((r for r, n in names.items() if r != role and n == name), None)
            if other is not None:
                raise ValueError(f"to_frame: {show(name)} is given as both the {role} and the "
                                 f"{other} column name; give three different names")
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

    def item_starts(self) -> np.ndarray:
        """(n_items + 1,) int64 offsets: item ``i``'s annotations are rows
        ``item_starts()[i]:item_starts()[i + 1]`` (annotations are sorted by item; read-only,
        cached)."""
        def make() -> np.ndarray:
            starts = np.zeros(self.n_items + 1, dtype=np.int64)
            np.cumsum(self.annotations_per_item(), out=starts[1:])
            return starts
        return self._cached("item_starts", make)

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
        indptr = self.item_starts().copy()   # scipy may keep and sort its arrays in place
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
            max_annotations = check_count(max_annotations, "max_annotations", 1)   # 3.5 was 3
            if max_annotations < k:
                raise CrowdDataError(f"max_annotations={max_annotations} but an item has {k} "
                                     "annotations")
            k = int(max_annotations)
        slot = np.arange(self.n_annotations) - self.item_starts()[self._items]  # rank within the item
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
        sel = position_codes(items, self.n_items, "item", "Annotations.subset", unique=True,
                             from_ids="subset(annotations.item_index(ids))")
        remap = np.full(self.n_items, -1, dtype=np.int64)
        remap[sel] = np.arange(len(sel))
        keep = remap[self._items] >= 0
        return Annotations(remap[self._items[keep]], self._annotators[keep], self._labels[keep],
                           item_ids=self._item_ids[sel], annotator_ids=self._annotator_ids,
                           classes=self._classes)

    def select(self, mask: Any) -> "Annotations":
        """A copy with only the annotations where ``mask`` (n_annotations,) is true; all items stay."""
        given = np.asarray(mask)
        if given.dtype != bool and given.size:
            # positions or codes were read by their truth value: [0, 2, 1] kept the last two
            raise CrowdDataError(f"Annotations.select takes a boolean mask, one per annotation, "
                                 f"got {given.dtype} values; for positions give "
                                 "np.isin(np.arange(len(annotations)), positions)")
        mask = given.astype(bool)
        if mask.shape != self._labels.shape:
            raise CrowdDataError(f"mask must have shape {self._labels.shape}, got {mask.shape}")
        # a subset of valid, sorted, unique annotations stays so: no re-validation, no sort
        return Annotations._trusted(self._items[mask], self._annotators[mask],
                                    self._labels[mask], item_ids=self._item_ids,
                                    annotator_ids=self._annotator_ids, classes=self._classes)

    def item_index(self, ids: Iterable[Any]) -> np.ndarray:
        """Codes of the given item ids; raises if one is unknown."""
        return self._lookup(self._item_ids, ids, "item")

    def annotator_index(self, ids: Iterable[Any]) -> np.ndarray:
        """Codes of the given annotator ids; raises if one is unknown."""
        return self._lookup(self._annotator_ids, ids, "annotator")

    @staticmethod
    def _lookup(table: np.ndarray, ids: Iterable[Any], what: str) -> np.ndarray:
        ids = list(ids_array(ids))   # one string is refused, not read as its characters
        codes = pd.Index(table).get_indexer(ids)
        if (codes < 0).any():
            n = int(np.argmax(codes < 0))
            # an id of another type written alike (7 for the "7" of a CSV header) says so
            raise CrowdDataError(f"unknown {what} id {show(ids[n])}"
                                 f"{alike_hint(ids[n], table, what)}")
        return codes.astype(np.int64)
