"""Quality scores of a fitted label model: per item, per annotation, what to relabel next.

Pure numpy / pandas functions of a label model's posteriors ``(I, K)``, the
:class:`~crowd_keras.annotations.Annotations` they were computed from and, where the model
has them, its per-annotator confusion matrices ``(A, K, K)`` (rows = true class) or
accuracies ``(A,)``. :class:`~crowd_keras.aggregation.base.LabelModel` exposes them as
``consensus_quality``, ``annotation_quality``, ``label_issues`` and ``next_to_label``.

**Calibration of the consensus quality.** A label model's own maximum posterior is not the
chance that its consensus is right: Dawid-Skene's is over-confident (each annotator's matrix
is fitted to posteriors that the annotator's own labels pulled toward it, which matters most
for annotators with few labels), majority vote's is 1 on every item, and the Bayesian
models' can be under-confident. The score here is the **held-out posterior** of the
consensus class (no gold needed):

1. Per-annotator label counts by true class are taken from the posteriors,
   ``N_a[k, l] = Σ_{i labelled l by a} q_i(k)`` (one Dawid-Skene M-step, Dawid & Skene 1979,
   Eq. 2.3), and each row is shrunk toward the crowd's pooled confusion row by
   ``pseudo_labels`` pseudo-labels (a Dirichlet prior centred on the crowd, as in Paun et
   al. 2018), so an annotator with two labels reads as the crowd average, not as perfect.
2. Item ``i``'s posterior is recomputed from matrices and class prior with item ``i``'s own
   contribution removed (leave one item out: ``N_a[k, l] - q_i(k)`` for each of its
   annotations), ``q_i(k) ∝ ρ_k^{-i} Π_{(i,a,l)} π_a^{-i}[k, l]`` (Dawid & Skene Eq. 2.5).
   The class shares ``ρ^{-i}`` are taken over the items that hold a label or a gold or
   classifier prior: an item with neither (a task nobody labelled yet) holds only the
   model's guess and leaves the others' scores as they are.
3. Steps 1-2 are repeated ``rounds`` times from the held-out posteriors (the model's
   posteriors only start it), so over-confident posteriors do not inflate the counts.

What an item's scores got besides its labels in the fit (gold clamps, a classifier's prior:
the model's ``item_log_prior_``) is added in step 2 too, so a consensus that rests on the
classifier is scored with it.

The consensus quality of item ``i`` is ``q_i(c_i)`` with ``c_i`` the model's consensus. On
simulated crowds its expected calibration error against the truth stays below 0.05
(``tests/test_quality_scores.py``). Crowds whose annotators copy each other's errors break
the independence every label model assumes, and no score computed without gold can see it:
there the score stays over-confident.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..codes import show
from ..errors import CrowdDataError
from ..numerics import softmax_rows
from .pred_probs import check_probability_matrix

__all__ = ["PSEUDO_LABELS", "ROUNDS", "Reference", "reference", "held_out_posteriors",
           "annotator_confusions", "consensus_quality", "annotation_quality", "label_issues",
           "expected_gains", "next_to_label", "confusions_from_accuracies",
           "expected_calibration_error", "annotator_accuracy", "annotator_accuracy_sums"]

#: pseudo-labels per confusion row pulling each annotator toward the crowd's pooled confusion
PSEUDO_LABELS = 10.0
#: re-estimations of the held-out posteriors (the first starts from the model's posteriors)
ROUNDS = 3
_SMOOTHING = 0.01           # Dirichlet pseudo-count per cell, as the label models' default
_CELLS = 1 << 22            # values per block of annotations or items (bounds memory)


def _check(posteriors: Any, ann: Annotations) -> np.ndarray:
    """(I, K) float64 posteriors of ``ann``'s items: finite, non-negative, rows summing to 1."""
    if not isinstance(ann, Annotations):
        raise TypeError(f"annotations must be an Annotations (Annotations.from_frame, "
                        f"from_dense, ...), got {type(ann).__name__}")
    shape = (ann.n_items, ann.n_classes)
    post = check_probability_matrix(posteriors, shape, "posteriors",
                                    f"(items, classes) = {shape}",
                                    lambda i: f"item {show(ann.item_ids[i])}")
    return post


def _label_counts(post: np.ndarray, ann: Annotations) -> np.ndarray:
    """``N_a[k, l] = Σ_{(i,a,l)} post_i(k)``, (A, K, K): a loop over the K true classes."""
    a_dim, k_dim = ann.n_annotators, ann.n_classes
    cell = ann.annotators * k_dim + ann.labels
    counts = np.empty((a_dim, k_dim, k_dim))
    for k in range(k_dim):
        counts[:, k, :] = np.bincount(cell, weights=post[ann.items, k],
                                      minlength=a_dim * k_dim).reshape(a_dim, k_dim)
    return counts


def _pooled(counts: np.ndarray) -> np.ndarray:
    """The crowd's confusion (K, K): every annotator's counts together, rows normalised."""
    pool = counts.sum(axis=0) + _SMOOTHING
    return pool / pool.sum(axis=1, keepdims=True)


def _held_out_shares(post: np.ndarray, ann: Annotations,
                     item_log_prior: Optional[np.ndarray] = None) -> np.ndarray:
    """(I, K) ρ^{-i}: the class shares without item i (add-one smoothed), over the items that
    hold evidence: a label, or an ``item_log_prior`` row that favours some class (gold, a
    classifier). An item with neither holds the model's prior guess (GLAD's and MACE's are
    uniform), which would move every other item's score with the number of unlabelled tasks
    in an export."""
    n_items, k_dim = post.shape
    known = np.bincount(ann.items, minlength=n_items) > 0
    if item_log_prior is not None:
        with np.errstate(invalid="ignore"):   # -inf - -inf in a gold row: not a constant row
            known |= ~(np.ptp(item_log_prior, axis=1) == 0)
    if known.all():   # the sums as before, to the bit
        return (post.sum(axis=0)[None, :] - post + 1.0) / (n_items - 1.0 + k_dim)
    own = np.where(known[:, None], post, 0.0)
    return (post[known].sum(axis=0)[None, :] - own + 1.0) / \
        (known.sum() - known[:, None] + float(k_dim))


def _label_scores(counts: np.ndarray, ann: Annotations, who: np.ndarray, pseudo_labels: float,
                  n_items: int, own: Optional[tuple] = None) -> np.ndarray:
    """(I, K) ``Σ_{(i,a,l)} log π_a[k, l]`` of ``ann``'s annotations under the (A, K, K)
    ``counts`` shrunk toward their pooled confusion; ``who`` codes each annotation's annotator
    in ``counts`` (a row of zeros: the crowd's average).

    ``own``: what each annotation's item put into the counts, left out (step 2):
    ``(post (I', K), item (n,), in_label (n,), in_row (n,))``: row ``item`` of ``post`` (a
    row of zeros for none) times ``in_label`` comes out of the annotation's cell, times
    ``in_row`` out of its annotator's row total (None: every annotation's); ``own`` None:
    nothing (the items took no part)."""
    k_dim = counts.shape[1]
    pool = _pooled(counts)
    rows = counts.sum(axis=2)
    scores = np.zeros((n_items, k_dim))
    step = max(1, _CELLS // k_dim)
    for lo in range(0, ann.n_annotations, step):    # blocks of annotations bound the memory
        items, coded, labels = (v[lo:lo + step] for v in (ann.items, who, ann.labels))
        num, den = counts[coded, :, labels], rows[coded]
        if own is not None:
            post, item, in_label, in_row = own
            mine = post[item[lo:lo + step]]                               # (n, K)
            num = num - (mine if in_label is None else mine * in_label[lo:lo + step, None])
            den = den - (mine if in_row is None else mine * in_row[lo:lo + step, None])
        # π_a^{-i}[k, l] of each annotation (i, a, l), for every true class k: (n, K)
        num = num + pseudo_labels * pool[:, labels].T + _SMOOTHING
        den = den + pseudo_labels + k_dim * _SMOOTHING
        log_pi = np.log(np.maximum(num, 1e-300)) - np.log(den)
        for k in range(k_dim):
            scores[:, k] += np.bincount(items, weights=log_pi[:, k], minlength=n_items)
    return scores


def _held_out_round(post: np.ndarray, ann: Annotations, pseudo_labels: float,
                    item_log_prior: Optional[np.ndarray] = None) -> np.ndarray:
    """One re-estimation (steps 1-2 of the module docstring): (I, K) held-out posteriors."""
    scores = _label_scores(_label_counts(post, ann), ann, ann.annotators, pseudo_labels,
                           post.shape[0], (post, ann.items, None, None))
    scores += np.log(_held_out_shares(post, ann, item_log_prior))
    if item_log_prior is not None:      # what the item knows besides its labels: gold, a classifier
        scores += item_log_prior
    return softmax_rows(scores, out=scores)[0]


class Reference(NamedTuple):
    """What the fit's last held-out round scores with (:func:`reference`), so that new
    annotations are scored under the fit, each item alone, whatever is scored beside it.

    Attributes:
        post: (I, K) the fitted items' posteriors that enter the last round.
        counts: (A, K, K) ``N_a[k, l]`` of the fitted annotations under ``post``.
        known: (I,) the fitted items that hold evidence (the class shares' items).
        item_ids: (I,) the fit's item ids.
        annotator_ids: (A,) the fit's annotator ids.
        labels: (I, A) sparse, each fitted label + 1.
    """

    post: np.ndarray
    counts: np.ndarray
    known: np.ndarray
    item_ids: np.ndarray
    annotator_ids: np.ndarray
    labels: sp.csr_matrix


def reference(posteriors: Any, annotations: Annotations, pseudo_labels: float = PSEUDO_LABELS,
              rounds: int = ROUNDS, item_log_prior: Optional[Any] = None) -> Reference:
    """What a model's fitted annotations give the scores of new ones (the last of
    ``rounds``: the fitted items' posteriors after ``rounds - 1`` held-out rounds, as
    :func:`held_out_posteriors` uses them). Arguments as there, of the fit."""
    post = _check(posteriors, annotations)
    prior = _checked_log_prior(item_log_prior, post, annotations)
    pseudo_labels = check_number(pseudo_labels, "pseudo_labels")
    for _ in range(check_count(rounds, "rounds", 1) - 1):
        post = _held_out_round(post, annotations, pseudo_labels, prior)
    known = np.bincount(annotations.items, minlength=len(post)) > 0
    if prior is not None:
        with np.errstate(invalid="ignore"):
            known |= ~(np.ptp(prior, axis=1) == 0)
    labels = sp.csr_matrix((annotations.labels + 1.0, (annotations.items,
                                                        annotations.annotators)),
                           shape=(annotations.n_items, annotations.n_annotators))
    return Reference(post, _label_counts(post, annotations), known,
                     np.asarray(annotations.item_ids), np.asarray(annotations.annotator_ids),
                     labels)


def _scored_with(ref: Reference, post: np.ndarray, ann: Annotations, pseudo_labels: float,
                 item_log_prior: Optional[np.ndarray]) -> np.ndarray:
    """(I, K) posteriors of new annotations under the fit's ``ref``. An item of the fit
    (the same id) is scored with its fitted labels' share of the counts and shares left
    out, as the fit scores it (the fitted annotations given again score as fitted); any
    other item with nothing left out. Annotators not in the fit read as the crowd's average."""
    k_dim = ref.counts.shape[1]
    if k_dim != post.shape[1]:
        raise CrowdDataError(f"the reference has {k_dim} classes, the annotations "
                             f"{post.shape[1]}")
    who = pd.Index(ref.annotator_ids).get_indexer(ann.annotator_ids)[ann.annotators]
    counts = ref.counts
    new_annotator = who < 0
    if new_annotator.any():
        counts = np.concatenate([counts, np.zeros((1, k_dim, k_dim))])
        who = np.where(new_annotator, len(ref.counts), who)
    fitted = pd.Index(ref.item_ids).get_indexer(ann.item_ids)            # (I,) or -1
    item = fitted[ann.items]
    both = (item >= 0) & ~new_annotator
    given = np.zeros(ann.n_annotations)
    if both.any():
        given[both] = np.asarray(ref.labels[item[both], who[both]]).ravel()
    own = (np.vstack([ref.post, np.zeros((1, k_dim))]), np.where(item >= 0, item, len(ref.post)),
           (given == ann.labels + 1.0).astype(np.float64), (given > 0).astype(np.float64))
    scores = _label_scores(counts, ann, who, pseudo_labels, len(post), own)
    # the class shares of the fit's items, a fitted item's own posterior left out
    total, n_known = ref.post[ref.known].sum(axis=0), float(ref.known.sum())
    held = (fitted >= 0) & ref.known[np.maximum(fitted, 0)]
    mine = np.where(held[:, None], ref.post[np.maximum(fitted, 0)], 0.0)
    scores += np.log((total[None, :] - mine + 1.0) / (n_known - held[:, None] + k_dim))
    if item_log_prior is not None:
        scores += item_log_prior
    return softmax_rows(scores, out=scores)[0]


def _checked_log_prior(item_log_prior: Optional[Any], post: np.ndarray,
                       annotations: Annotations) -> Optional[np.ndarray]:
    if item_log_prior is None:
        return None
    prior = np.asarray(item_log_prior, dtype=np.float64)
    if prior.shape != post.shape:
        raise CrowdDataError(f"item_log_prior must have shape (items, classes) = "
                             f"{post.shape}, got {prior.shape}")
    # -inf rules a class out (a gold clamp); NaN or +inf is no log-weight
    bad = np.isnan(prior).any(axis=1) | (prior == np.inf).any(axis=1) | \
        (prior == -np.inf).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise CrowdDataError(f"item_log_prior of item {show(annotations.item_ids[i])} (row "
                             f"{i}) is not a log-weight per class (NaN, +inf, or every "
                             f"class -inf): {prior[i].tolist()}")
    return prior


def held_out_posteriors(posteriors: Any, annotations: Annotations,
                        pseudo_labels: float = PSEUDO_LABELS, rounds: int = ROUNDS,
                        item_log_prior: Optional[Any] = None,
                        reference: Optional[Reference] = None) -> np.ndarray:
    """Each item's posterior with its own labels left out of the annotators' matrices, (I, K).

    Args:
        posteriors: (I, K) a label model's posteriors for ``annotations``' items (they start
            the re-estimation; see the module docstring for the three steps).
        annotations: the annotations the posteriors were computed from.
        pseudo_labels: pseudo-labels per confusion row toward the crowd's pooled confusion.
        rounds: re-estimations (at least 1).
        item_log_prior: optional (I, K) log-weights the model added to each item's class
            scores (gold clamps, a classifier's prior: the fit's ``item_log_prior_``), added
            to the held-out scores too.
        reference: the fit's :func:`reference` when ``annotations`` are new ones (annotators
            and classes of the fit): each item is then scored under the fit's counts, as one
            more item of the fit whose labels took no part in it, whatever other items are
            scored beside it (without it a batch re-estimated the matrices from its own items:
            an item alone scored 1/K). ``rounds`` and ``pseudo_labels`` are then the
            reference's.
    """
    post = _check(posteriors, annotations)
    prior = _checked_log_prior(item_log_prior, post, annotations)
    pseudo_labels = check_number(pseudo_labels, "pseudo_labels")
    if reference is not None:
        return _scored_with(reference, post, annotations, pseudo_labels, prior)
    rounds = check_count(rounds, "rounds", 1)
    for _ in range(rounds):
        post = _held_out_round(post, annotations, pseudo_labels, prior)
    return post


def annotator_confusions(posteriors: Any, annotations: Annotations,
                         confusions: Optional[np.ndarray] = None,
                         pseudo_labels: float = PSEUDO_LABELS) -> np.ndarray:
    """(A, K, K) annotator confusions (rows = true class) shrunk toward the crowd's.

    With ``confusions`` (a model's fitted matrices), row ``k`` of annotator ``a`` is
    ``(n_ak π_a[k] + m · pool[k]) / (n_ak + m)``, ``n_ak = Σ_{i labelled by a} q_i(k)`` its
    expected number of class-``k`` items and ``m = pseudo_labels``; without, the counts
    themselves are shrunk (``(N_a[k] + m · pool[k]) / (n_ak + m)``). An annotator with no
    labels gets the crowd's pooled matrix.
    """
    post = _check(posteriors, annotations)
    counts = _label_counts(post, annotations)
    pool = _pooled(counts)
    n_ak = counts.sum(axis=2, keepdims=True)                            # (A, K, 1)
    m = check_number(pseudo_labels, "pseudo_labels")
    if confusions is None:
        own = counts
    else:
        conf = np.asarray(confusions, dtype=np.float64)
        k_dim = annotations.n_classes
        if conf.shape != (annotations.n_annotators, k_dim, k_dim):
            raise CrowdDataError(f"confusion matrices must have shape (annotators, classes, "
                                 f"classes) = {(annotations.n_annotators, k_dim, k_dim)}, got "
                                 f"{conf.shape}")
        # each row is normalised below: it needs finite non-negative weights, not all 0
        bad = ~((conf >= 0) & np.isfinite(conf)).all(axis=2) | (conf.sum(axis=2) <= 0)
        if bad.any():
            a, row = np.unravel_index(int(np.argmax(bad)), bad.shape)
            raise CrowdDataError(f"confusion matrix of annotator "
                                 f"{show(annotations.annotator_ids[a])}, true class "
                                 f"{show(annotations.classes[row])}: {conf[a, row].tolist()} "
                                 f"is not a row of non-negative weights with a positive sum")
        own = n_ak * conf / np.maximum(conf.sum(axis=2, keepdims=True), 1e-300)
    out = own + m * pool[None] + _SMOOTHING
    return out / out.sum(axis=2, keepdims=True)


def confusions_from_accuracies(accuracies: Any, n_classes: int) -> np.ndarray:
    """(A, K, K) one-coin matrices: accuracy on the diagonal, the rest spread evenly."""
    acc = np.asarray(accuracies, dtype=np.float64)
    if acc.ndim != 1:
        raise CrowdDataError(f"accuracies must be one number per annotator, got shape {acc.shape}")
    bad = ~((acc >= 0) & (acc <= 1))      # NaN too
    if bad.any():
        a = int(np.argmax(bad))
        raise CrowdDataError(f"accuracy {show(acc[a])} of annotator {a} is not a probability in "
                             "[0, 1]")
    k = check_count(n_classes, "n_classes", 1)
    off = (1.0 - acc)[:, None, None] / max(k - 1, 1)
    return np.where(np.eye(k, dtype=bool)[None], acc[:, None, None], off)


def _consensus(post: np.ndarray, consensus: Optional[Any]) -> np.ndarray:
    if consensus is None:
        return np.argmax(post, axis=1)
    codes = np.asarray(consensus)
    if codes.shape != (post.shape[0],) or codes.dtype.kind not in "iu" or \
            ((codes < 0) | (codes >= post.shape[1])).any():
        raise CrowdDataError(f"consensus must be {post.shape[0]} class codes in "
                             f"0..{post.shape[1] - 1}")
    return codes


def consensus_quality(posteriors: Any, annotations: Annotations, consensus: Optional[Any] = None,
                      pseudo_labels: float = PSEUDO_LABELS, rounds: int = ROUNDS,
                      item_log_prior: Optional[Any] = None,
                      reference: Optional[Reference] = None) -> np.ndarray:
    """(I,) calibrated chance in [0, 1] that each item's consensus class is its true class.

    The held-out posterior (:func:`held_out_posteriors`, ``reference`` for new annotations)
    of ``consensus`` (I,) class codes (default: the argmax of ``posteriors``).
    """
    held = held_out_posteriors(posteriors, annotations, pseudo_labels, rounds, item_log_prior,
                               reference)
    codes = _consensus(np.asarray(posteriors, dtype=np.float64), consensus)
    return held[np.arange(len(codes)), codes]


def annotation_quality(posteriors: Any, annotations: Annotations,
                       pseudo_labels: float = PSEUDO_LABELS, rounds: int = ROUNDS,
                       item_log_prior: Optional[Any] = None,
                       reference: Optional[Reference] = None) -> np.ndarray:
    """(n_annotations,) chance that each annotation's label is its item's true class.

    ``q_i(l)`` for annotation ``(i, a, l)``: the held-out posterior of the label given, in
    the annotations' stored order (``annotations.items`` / ``annotations.to_frame()`` rows).
    """
    held = held_out_posteriors(posteriors, annotations, pseudo_labels, rounds, item_log_prior,
                               reference)
    return held[annotations.items, annotations.labels]


def label_issues(posteriors: Any, annotations: Annotations, consensus: Optional[Any] = None,
                 quality: Optional[np.ndarray] = None, **kwargs: Any) -> pd.DataFrame:
    """Items ranked by likely error: the lowest consensus quality first.

    Returns a frame with ``item`` (id), ``consensus_label`` (class name),
    ``consensus_quality`` and ``n_annotations``, one row per item; ties keep the item order.
    ``quality``: precomputed :func:`consensus_quality` (else computed with ``kwargs``).
    """
    post = _check(posteriors, annotations)
    codes = _consensus(post, consensus)
    if quality is None:
        quality = consensus_quality(post, annotations, codes, **kwargs)
    elif kwargs:
        raise TypeError(f"label_issues: {sorted(kwargs)} compute the quality, which is given")
    elif np.shape(quality) != (annotations.n_items,):
        raise CrowdDataError(f"quality must be one consensus quality per item "
                             f"({annotations.n_items},), got shape {np.shape(quality)}")
    else:
        quality = np.asarray(quality, dtype=np.float64)
        bad = ~((quality >= 0) & (quality <= 1))     # NaN too: it would sort last, unseen
        if bad.any():
            i = int(np.argmax(bad))
            raise CrowdDataError(f"quality of item {show(annotations.item_ids[i])} (row {i}) "
                                 f"is {show(quality[i])}, not a chance in [0, 1]")
    frame = pd.DataFrame({"item": annotations.item_ids,
                          "consensus_label": annotations.classes[codes],
                          "consensus_quality": np.asarray(quality, dtype=np.float64),
                          "n_annotations": annotations.annotations_per_item()})
    return frame.sort_values("consensus_quality", kind="stable").reset_index(drop=True)


def expected_gains(belief: Any, confusions: np.ndarray,
                   exclude: Optional[Annotations] = None) -> np.ndarray:
    """(I, A) expected rise of each item's maximum posterior after one more label from ``a``.

    ``E_l[max_k p(k | labels, l)] - max_k p(k | labels) = Σ_l max_k b_i(k) π_a[k, l] -
    max_k b_i(k)`` (the expected error reduction of one label: the new label ``l`` has
    chance ``Σ_k b_i(k) π_a[k, l]`` and turns the belief into ``b_i(k) π_a[k, l]`` over it).
    ``belief`` (I, K); ``confusions`` (A, K, K), rows = true class; pairs already in
    ``exclude`` get ``-inf``. Computed in blocks of items (a loop over the K labels inside).
    """
    b = np.asarray(belief, dtype=np.float64)
    if b.ndim != 2:
        raise CrowdDataError(f"belief must be (items, classes), got shape {b.shape}")
    b = check_probability_matrix(b, b.shape, "belief", "(items, classes)",
                                 lambda i: f"item {i}")
    pi = np.asarray(confusions, dtype=np.float64)
    k = b.shape[1]
    if pi.ndim != 3 or pi.shape[1:] != (k, k):
        raise CrowdDataError(f"confusions must have shape (annotators, classes, classes) = "
                             f"(A, {k}, {k}) for a belief of {k} classes, got {pi.shape}")
    gains = np.empty((b.shape[0], pi.shape[0]))
    for start, stop in _item_blocks(b.shape[0], pi.shape[0] * b.shape[1]):
        gains[start:stop] = _block_gains(b[start:stop], pi)
    if exclude is not None and exclude.n_annotations:
        gains[exclude.items, exclude.annotators] = -np.inf
    return gains


def _item_blocks(n_items: int, per_item: int) -> list:
    """(start, stop) blocks of items with about ``_CELLS`` values of ``per_item`` each."""
    step = max(1, _CELLS // max(per_item, 1))
    return [(lo, min(lo + step, n_items)) for lo in range(0, n_items, step)]


def _block_gains(b: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """(items, A) expected gains of a block of beliefs (items, K) under ``pi`` (A, K, K).

    As ``Σ_l [max_k b_i(k) π_a[k, l] - b_i(c) π_a[c, l]]`` with ``c`` the belief's argmax
    (equal, rows of ``π_a`` summing to 1): each term is exactly 0 where the label cannot
    change the argmax, so a label that changes nothing gains exactly 0 (not a rounding
    residue of either sign) and such ties keep the item order.
    """
    top = np.argmax(b, axis=1)
    kept = b[np.arange(len(b)), top][:, None, None] * pi[:, top, :].transpose(1, 0, 2)
    total = np.zeros((b.shape[0], pi.shape[0]))
    for label in range(b.shape[1]):
        # (items, A, K): b_i(k) π_a[k, label]; its max over k, less the argmax class's term
        total += np.max(b[:, None, :] * pi[None, :, :, label], axis=2) - kept[:, :, label]
    return total


def next_to_label(k: int, posteriors: Any, annotations: Annotations,
                  confusions: Optional[np.ndarray] = None,
                  accuracies: Optional[Any] = None,
                  annotators: Optional[Sequence[Any]] = None,
                  pseudo_labels: float = PSEUDO_LABELS, rounds: int = ROUNDS,
                  item_log_prior: Optional[Any] = None) -> pd.DataFrame:
    """The ``k`` items whose one more annotation would most reduce the expected error.

    The belief is the held-out posterior (:func:`held_out_posteriors`); each candidate
    annotator's answer is modelled by :func:`annotator_confusions` (the model's
    ``confusions``, or one-coin matrices from ``accuracies``, shrunk toward the crowd) and
    the gain of a pair is :func:`expected_gains`. Each item gets its best annotator among
    ``annotators`` (ids; default every annotator) who has not labelled it yet.

    Returns a frame ``item, annotator, expected_gain`` (best first, at most ``k`` rows, one
    per item). Without ``confusions`` or ``accuracies`` nobody's quality is known: the
    gain is that of an annotator with the crowd's pooled matrix and ``annotator`` is None.
    Items whose class ``item_log_prior`` fixes (gold: ``-inf`` on every other class) are
    never proposed: no annotation can change them.
    """
    k = check_count(k, "k (items to choose)", 0)
    if isinstance(annotators, (str, bytes)):
        raise TypeError(f"annotators must be a list of annotator ids, got the string "
                        f"{annotators!r} (one annotator: [{annotators!r}])")
    if annotators is not None and not hasattr(annotators, "__iter__"):
        raise TypeError(f"annotators must be a list of annotator ids, got "
                        f"{type(annotators).__name__} {show(annotators)} (one annotator: "
                        f"[{show(annotators)}])")
    post = _check(posteriors, annotations)
    belief = held_out_posteriors(post, annotations, pseudo_labels, rounds, item_log_prior)
    known = confusions is not None or accuracies is not None
    if confusions is not None and accuracies is not None:
        raise TypeError("next_to_label takes confusions or accuracies, not both (accuracies "
                        "make one-coin confusions)")
    if not known and annotators is not None:
        raise TypeError("next_to_label: annotators needs confusions or accuracies; without "
                        "them nobody's quality is known and no annotator is chosen")
    # gold items gain 0, as do items no single answer can flip: without this, a k beyond
    # the items with a positive gain listed gold items among the latter
    open_item = np.ones(annotations.n_items, dtype=bool)
    if item_log_prior is not None:
        open_item = (~np.isneginf(np.asarray(item_log_prior))).sum(axis=1) > 1
    if not known:
        pooled = _pooled(_label_counts(belief, annotations))
        gains = expected_gains(belief, pooled[None])[:, 0]
        order = np.argsort(-gains, kind="stable")
        order = order[open_item[order]][:int(k)]
        return pd.DataFrame({"item": annotations.item_ids[order],
                             "annotator": np.full(len(order), None, dtype=object),
                             "expected_gain": gains[order]})
    if annotators is None:
        candidates = np.arange(annotations.n_annotators)
    else:
        candidates = np.unique(annotations.annotator_index(list(annotators)))
        if len(candidates) == 0:
            raise ValueError("annotators is empty: name at least one annotator id, or pass "
                             "None for every annotator")
    if confusions is None:
        if np.shape(accuracies) != (annotations.n_annotators,):
            raise CrowdDataError(f"accuracies must be one per annotator "
                                 f"({annotations.n_annotators},), got shape "
                                 f"{np.shape(accuracies)}")
        confusions = confusions_from_accuracies(accuracies, annotations.n_classes)
    pi = annotator_confusions(belief, annotations, confusions, pseudo_labels)[candidates]
    # Each item's best candidate, in blocks of items by decreasing chance of error
    # 1 - max_k b_i(k): no label can gain more than that, so once k items gain more than the
    # next item's chance of error the rest cannot enter the top k nor tie with it (exact, and
    # it stops early).
    column = np.full(annotations.n_annotators, -1)
    column[candidates] = np.arange(len(candidates))
    starts = annotations.item_starts()
    error = 1.0 - belief.max(axis=1)
    by_error = np.argsort(-error, kind="stable")
    by_error = by_error[open_item[by_error]]
    done, gain_of, best_of = [], [], []
    for start, stop in _item_blocks(len(by_error), len(candidates) * annotations.n_classes):
        items = by_error[start:stop]
        gains = _block_gains(belief[items], pi)
        # pairs already labelled: the annotations of each item in the block (sorted by item)
        n_own = starts[items + 1] - starts[items]
        rows = np.repeat(np.arange(len(items)), n_own)
        own = np.repeat(starts[items] - np.cumsum(n_own) + n_own, n_own) + np.arange(n_own.sum())
        col = column[annotations.annotators[own]]
        gains[rows[col >= 0], col[col >= 0]] = -np.inf   # nobody labels an item twice
        best = np.argmax(gains, axis=1)
        done.append(items)
        best_of.append(best)
        gain_of.append(gains[np.arange(len(items)), best])
        found = np.concatenate(gain_of)
        if stop < len(by_error) and int(k) > 0 and np.isfinite(found).sum() >= int(k) and \
                np.sort(found)[-int(k)] > error[by_error[stop]]:
            break
    items = np.concatenate(done) if done else np.zeros(0, dtype=np.int64)
    best = np.concatenate(best_of) if best_of else np.zeros(0, dtype=np.int64)
    item_gain = np.concatenate(gain_of) if gain_of else np.zeros(0)
    order = np.lexsort((items, -item_gain))[:int(k)]     # best first, ties by item order
    order = order[np.isfinite(item_gain[order])]
    return pd.DataFrame({"item": annotations.item_ids[items[order]],
                         "annotator": annotations.annotator_ids[candidates[best[order]]],
                         "expected_gain": item_gain[order]})


def expected_calibration_error(confidence: Any, correct: Any, n_bins: int = 10) -> float:
    """Expected calibration error: ``Σ_b (n_b / n) |mean correct_b - mean confidence_b|``
    over ``n_bins`` equal-width bins of ``confidence`` in [0, 1] (Guo et al. 2017, Eq. 3)."""
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    if conf.shape != hit.shape or conf.ndim != 1 or len(conf) == 0:
        raise ValueError(f"confidence and correct must be two equal non-empty vectors, got "
                         f"shapes {conf.shape} and {hit.shape}")
    n_bins = check_count(n_bins, "n_bins", 1)
    for name, values in (("confidence", conf), ("correct", hit)):
        bad = ~((values >= 0) & (values <= 1))      # NaN too: no bin, no share right
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name} must be in [0, 1]; entry {i} is {show(values[i])}")
    bins = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    gap = np.bincount(bins, conf - hit, minlength=n_bins)
    return float(np.abs(gap).sum() / len(conf))


def annotator_accuracy_sums(posteriors: np.ndarray, items: np.ndarray, annotators: np.ndarray,
                            labels: np.ndarray, confusions: np.ndarray,
                            factors: Optional[Callable[[int, int], np.ndarray]] = None
                            ) -> np.ndarray:
    """(A,) per annotator the sum over its labels of ``q_i^{-a}(l)``: the numerators of
    :func:`annotator_accuracy`, sums over annotations, so that blocks of items add up.

    ``posteriors`` (I, K) of the items that ``items`` (n,) index; ``annotators`` and
    ``labels`` (n,) codes; ``confusions`` (A, K, K) rows = true class. ``factors``:
    ``(start, stop) -> (stop - start, K)``, the factor each of the annotations ``start:stop``
    put on its item's posterior (a model's
    :meth:`~crowd_keras.aggregation.base.LabelModel.own_vote_factors`), divided out in
    place of ``confusions[a, :, l]``. A label whose item has no mass left once the own vote
    is divided out scores 0.
    """
    pi = np.asarray(confusions, dtype=np.float64)
    k = pi.shape[1]
    sums = np.zeros(pi.shape[0])
    step = max(1, _CELLS // max(k, 1))
    for start in range(0, len(items), step):
        part = slice(start, start + step)
        if factors is None:
            own = pi[annotators[part], :, labels[part]]             # (n, K) p(l | k, a)
        else:
            stop = min(start + step, len(items))
            own = factors(start, stop)
            if np.shape(own) != (stop - start, k):
                raise CrowdDataError(f"factors({start}, {stop}) must have shape "
                                     f"{(stop - start, k)} (one row per annotation), got "
                                     f"{np.shape(own)}")
        rest = posteriors[items[part]] / np.maximum(own, 1e-300)
        total = rest.sum(axis=1)
        score = rest[np.arange(len(own)), labels[part]] / np.where(total > 0, total, 1.0)
        sums += np.bincount(annotators[part], weights=np.where(total > 0, score, 0.0),
                            minlength=len(sums))
    return sums


def annotator_accuracy(posteriors: Any, annotations: Annotations, confusions: Any,
                       factors: Optional[Callable[[int, int], np.ndarray]] = None
                       ) -> np.ndarray:
    """(A,) each annotator's expected accuracy on the items it labelled, NaN without labels.

    Each label ``(i, a, l)`` is scored by the posterior of its item with the annotator's own
    vote divided out, ``q_i^{-a}(k) ∝ q_i(k) / π_a[k, l]`` (Dawid & Skene Eq. 2.5 without
    that factor), so an annotator earns nothing for agreeing with itself; the score is the mean
    of ``q_i^{-a}(l)`` over its labels (:func:`annotator_accuracy_sums` over the number of
    labels). ``posteriors`` (I, K), ``confusions`` (A, K, K) rows = true class. ``factors``:
    what each annotation (in ``annotations``' stored order) put on its item's posterior
    in place of ``π_a[k, l]`` (:func:`annotator_accuracy_sums`), for a model whose E-step
    weighs a vote otherwise (IBCC's ``exp E[log v_akl]``: ``LabelModel.own_vote_factors``).
    """
    post = _check(posteriors, annotations)
    pi = np.asarray(confusions, dtype=np.float64)
    k = annotations.n_classes
    if pi.shape != (annotations.n_annotators, k, k):
        raise CrowdDataError(f"confusions must have shape (annotators, classes, classes) = "
                             f"{(annotations.n_annotators, k, k)}, got {pi.shape}")
    sums = annotator_accuracy_sums(post, annotations.items, annotations.annotators,
                                   annotations.labels, pi, factors)
    n = np.bincount(annotations.annotators, minlength=annotations.n_annotators)
    return np.where(n > 0, sums / np.maximum(n, 1), np.nan)
