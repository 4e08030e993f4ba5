"""The default label model: the candidate that agrees best with annotations it did not see.

No single label model is right for every crowd: per-annotator confusion matrices win where
annotators give many labels with their own biases and lose to voting where a few prolific or
correlated workers dominate; one-accuracy-per-worker and Bayesian models sit in between.
Choosing by held-out annotation *likelihood* rewards the model that best predicts the
annotators' habits (a prolific worker's bias, the crowd's shared confusions), not the truth.

:class:`AutoLabelModel` chooses by held-out **agreement** instead: hide part of each item's
annotations, fit each candidate on the rest, and count how often its most probable class
equals a hidden label, each annotator's hidden labels weighted by ``n_a^-γ`` (``γ = 1/2``) so
that a few prolific workers cannot decide alone. For an annotator whose most likely answer is
the truth, agreement with its hidden label rises with the accuracy of the prediction,
whatever the annotator's confusions; the model's own picture of the annotators plays no part.
A hidden label is a fair test label only if, given the truth, it is independent of the labels
the candidate saw on the same item; annotators who copy each other break that (a copier's
hidden label rewards reproducing its partners), so pairs of annotators that agree far more
than independent annotators can (:func:`copying_pairs`) count as one voice on an item
(:func:`copy_weights`).
With enough gold labels the choice is by cross-validated accuracy on them instead, and every
fit holds the gold items' classes fixed.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..annotations import Annotations
from ..arguments import check_count, check_number
from ..errors import CrowdDataError
from ..numerics import (label_profile_keys, mix64, ranks_within, shift_class_prior,
                        top_classes)
from ..progress import progress_bar
from .base import LabelModel, check_flags, partitioned_report
from .dawid_skene import DawidSkene
from .em import Block
from .labeling_functions import LabelingFunctionFallback
from .majority_vote import CalibratedVote, MajorityVote
from .registry import get_label_model

__all__ = ["AutoLabelModel", "default_candidates", "heldout_folds", "annotation_folds",
           "fold_keys", "block_folds", "content_fingerprints", "paired_gains",
           "tied_with_best",
           "heldout_log_likelihood", "predictive_log_likelihood", "item_offsets",
           "agreement_scores", "agreement_sums", "agreement_bounds", "annotator_weights",
           "selection_steps", "selection_done", "gold_sums", "gold_bounds",
           "pair_sums", "pair_buckets", "copying_pairs", "copy_weights", "SELECTION_EXPONENT",
           "MIN_COMMON_ITEMS", "PAIR_ANNOTATIONS", "TARGET_PRIORS",
           "LEARNED_PRIOR", "GOLD_PRIOR", "gold_target", "named_classes",
           "classifier_top_counts", "under_target"]

#: γ of the held-out weights ``n_a^-γ``: between counting every annotation (0, prolific
#: workers decide) and every annotator once (1, single-label annotators' noise decides)
SELECTION_EXPONENT = 0.5

#: items two annotators must share before their agreement can mark them as copying each other
MIN_COMMON_ITEMS = 20

#: pairwise agreements are summed over the items of about this many annotations (a hashed
#: sample of a larger crowd): enough for any pair busy enough to matter, without pairwise
#: products over every item of a large crowd
PAIR_ANNOTATIONS = 1_000_000

#: ``AutoLabelModel(target_prior=...)``'s names: a uniform prior, the chosen model's own (also
#: None), or the class mix of the gold items given (:func:`gold_target`)
LEARNED_PRIOR = "learned"
GOLD_PRIOR = "gold"
TARGET_PRIORS = ("uniform", LEARNED_PRIOR, GOLD_PRIOR)

#: what ``AutoLabelModel(vote_posterior=...)`` accepts
VOTE_POSTERIORS = ("calibrated", "one_hot")


def default_candidates(n_classes: int) -> List[Tuple[str, LabelModel]]:
    """The candidates, simplest first (each later one assumes less about the workers; a tie
    in held-out agreement goes to the later, :meth:`AutoLabelModel.choose`):
    ``[(name, model)]``.

    - ``"majority_vote"`` (ties to the lowest class code): the reference every other must
      beat by more than ``confidence`` standard errors;
    - ``"bwa"``: one precision per annotator, Bayesian (Li, Rubinstein & Cohn, WWW 2019);
    - ``"ibcc"``: a confusion matrix per annotator with Dirichlet priors (Kim & Ghahramani
      2012);
    - ``"dawid_skene@K"``: Dawid-Skene shrunk toward the crowd's matrix with K pseudo-labels per
      row (Paun et al. 2018);
    - ``"ebcc"``: confusions as mixtures of shared subtypes, for correlated workers (Li,
      Rubinstein & Cohn, ICML 2019).
    """
    k = int(n_classes)
    return [("majority_vote", MajorityVote()),
            ("bwa", get_label_model("bwa")),
            ("ibcc", get_label_model("ibcc")),
            (f"dawid_skene@{k}", DawidSkene(prior_strength=float(k))),
            ("ebcc", get_label_model("ebcc"))]


def annotator_weights(counts: np.ndarray, annotators: np.ndarray,
                      exponent: float = SELECTION_EXPONENT) -> np.ndarray:
    """(n,) weight ``n_a^-γ`` of annotations by ``annotators`` (n,) codes, ``counts`` (A,) the
    annotators' numbers of annotations over all items."""
    n = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    return n[annotators] ** -float(exponent)


def pair_buckets(n_annotations: int) -> int:
    """Buckets of items of which :func:`pair_sums` reads one: about :data:`PAIR_ANNOTATIONS`
    annotations (1: every item)."""
    return max(1, -(-int(n_annotations) // PAIR_ANNOTATIONS))


def pair_sums(block: Block, n_classes: int, buckets: int = 1, seed: int = 0,
              profiles: Optional[np.ndarray] = None
              ) -> Tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """Pairwise sums over a block's items from which copying pairs follow
    (:func:`copying_pairs`); summable over blocks. With ``buckets`` > 1 only the items whose
    :func:`item_offsets` (``buckets``, ``seed``) of their content keys
    (``Block.item_content_keys`` from the crowd's ``profiles``,
    :func:`~crowd_keras.numerics.label_profile_keys`) is 0 count: a sample drawn from what
    the items were told, the same wherever an item is and whatever its id.

    Returns:
        ``common`` (A, A) sparse: items labelled by both annotators (the diagonal: each one's
        labels); ``agreed`` (A, A) sparse: those on which both gave the same label; ``votes``
        (A, K): each annotator's labels per class.
    """
    k = int(n_classes)
    if int(buckets) > 1:
        if profiles is None:
            raise ValueError("pair_sums: sampling items (buckets > 1) needs the crowd's "
                             "label profiles")
        keys = block.item_content_keys(k, profiles)
        block = block.subset(item_offsets(keys, int(buckets), seed) == 0)
    X = block.X
    n_items, n_annotators = X.shape[0], X.shape[1] // k
    items = np.repeat(np.arange(n_items), np.diff(X.indptr))
    annotators, labels = X.indices // k, X.indices % k
    ones = np.ones(len(items))
    by_item = sp.csr_matrix((ones, (items, annotators)), shape=(n_items, n_annotators))
    by_label = sp.csr_matrix((ones, (items * k + labels, annotators)),
                             shape=(n_items * k, n_annotators))
    votes = np.bincount(X.indices, minlength=X.shape[1]).reshape(-1, k)
    return ((by_item.T @ by_item).tocsr(), (by_label.T @ by_label).tocsr(), votes)


def _rank_one(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, weights: np.ndarray,
              n: int, n_iter: int = 100) -> np.ndarray:
    """(n,) ``t`` minimising ``Σ w (x_ab − t_a t_b)²`` over the given symmetric entries, by
    damped alternating least squares (the undamped update swaps the scale of ``t`` each step)."""
    total = np.bincount(rows, weights=weights, minlength=n)
    mean = np.bincount(rows, weights=weights * values, minlength=n) / np.maximum(total, 1e-300)
    t = np.sqrt(np.maximum(mean, 1e-4))
    for _ in range(n_iter):
        num = np.bincount(rows, weights=weights * values * t[cols], minlength=n)
        den = np.bincount(rows, weights=weights * t[cols] ** 2, minlength=n)
        t = 0.5 * (t + np.where(den > 0, num / np.maximum(den, 1e-300), 0.0))
    return t


def copying_pairs(common: sp.spmatrix, agreed: sp.spmatrix, votes: np.ndarray, z: float,
                  min_common: int = MIN_COMMON_ITEMS, fit_z: float = 2.0,
                  max_rounds: int = 20) -> sp.csr_matrix:
    """(A, A) symmetric boolean sparse: pairs of annotators who agree far more than annotators
    independent given the truth can, from :func:`pair_sums` (no truth needed).

    When annotators label independently given the true class k, each with label distribution
    ``α_a e_k + β_a`` (a one-coin worker with errors spread evenly, a spammer, a worker biased
    to a favourite class: Dawid-Skene confusions of that form), the agreement above chance on
    items both labelled, ``x_ab = o_ab − Σ_l m_a(l) m_b(l)`` (``m`` each one's label shares),
    is ``α_a α_b Σ_l p_l (1 − p_l)``: rank one, ``t_a t_b``.

    ``t`` is fitted by least squares over the pairs sharing at least ``min_common`` items, one
    equation per pair (weighting by the items shared would let an annotator's few busiest
    pairs, the copying ones among them, set its ``t`` and hide themselves), leaving out the
    pairs whose agreement exceeds the fit by more than ``fit_z`` binomial standard errors of
    the fitted agreement, refitted until that set is stable. A pair is copying when its
    agreement exceeds the final fit by more than ``z`` such standard errors (large: many pairs
    are tested).
    """
    check_count(max_rounds, "copying_pairs max_rounds", 1)    # 0 left no fit to score by
    common = sp.coo_matrix(common)
    keep = (common.row != common.col) & (common.data >= int(min_common))
    rows, cols, shared = common.row[keep], common.col[keep], common.data[keep].astype(np.float64)
    n = votes.shape[0]
    if not len(rows):
        return sp.csr_matrix((n, n), dtype=bool)
    agree = np.asarray(sp.csr_matrix(agreed)[rows, cols]).ravel() / shared
    shares = votes / np.maximum(votes.sum(axis=1, keepdims=True), 1)
    chance = np.einsum("pk,pk->p", shares[rows], shares[cols])
    excess = agree - chance
    left_out = np.zeros(len(rows), dtype=bool)
    for _ in range(int(max_rounds)):
        t = _rank_one(rows, cols, excess, (~left_out).astype(np.float64), n)
        expected = np.clip(chance + t[rows] * t[cols], 0.5 / shared, 1 - 0.5 / shared)
        score = (agree - expected) / np.sqrt(expected * (1 - expected) / shared)
        if np.array_equal(score > float(fit_z), left_out):
            break
        left_out = score > float(fit_z)
    marked = score > float(z)
    return sp.csr_matrix((np.ones(int(marked.sum()), dtype=bool), (rows[marked], cols[marked])),
                         shape=(n, n))


def copy_weights(block: Block, pairs: sp.spmatrix, n_classes: int,
                 scored: Optional[np.ndarray] = None) -> np.ndarray:
    """(n,) factor ``1 / (1 + c)`` per annotation of a block, ``c`` the number of its
    annotator's copying partners (``pairs``, :func:`copying_pairs`) that labelled the same
    item: a copy group's hidden labels on an item count as one. ``scored``: optional (n,)
    mask of the annotations that need it (the others get 1)."""
    k = int(n_classes)
    X = block.X
    pairs = sp.csr_matrix(pairs, dtype=np.float64)
    factor = np.ones(X.nnz)
    if pairs.nnz == 0 or X.nnz == 0:
        return factor
    annotators = X.indices // k
    items = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    in_pair = np.diff(pairs.indptr) > 0
    # partners are looked up among the annotations of annotators in a pair only
    member = in_pair[annotators]
    by_item = sp.csr_matrix((np.ones(int(member.sum())), (items[member], annotators[member])),
                            shape=(X.shape[0], X.shape[1] // k))
    need = member if scored is None else member & scored
    partners = (by_item @ pairs)[items[need], annotators[need]]
    factor[need] = 1.0 / (1.0 + np.asarray(partners).ravel())
    return factor


def agreement_scores(posteriors: np.ndarray, items: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per hidden annotation, the share of the item's most probable classes that equal its
    label (1 or 0; ``1/t`` when ``t`` classes tie): ``posteriors`` (I, K) of a model fitted
    without these annotations, their item and label codes (n,)."""
    top = top_classes(posteriors, tol=1e-9)
    return top[items, labels] / top[items].sum(axis=1)


def selection_steps(n_folds: int, max_repeats: int) -> List[Tuple[int, int]]:
    """The (pass, fold) fits in order; scoring may stop after any fold of the first pass and
    after the last fold of a later pass (so every scored annotation was held out equally
    often)."""
    return [(r, f) for r in range(int(max_repeats)) for f in range(int(n_folds))]


def selection_done(step: Tuple[int, int], n_folds: int, scored: int, min_heldout: int) -> bool:
    """Whether scoring stops after ``step`` with ``scored`` annotations held out so far: at
    least ``min_heldout`` and at least one (``min_heldout=0`` stopped after a first fold that
    held nothing out, and the choice was made without scores)."""
    repeat, fold = step
    return scored >= max(int(min_heldout), 1) and (repeat == 0 or fold == n_folds - 1)


def agreement_sums(block: Block, tests: Sequence[np.ndarray],
                   posteriors: Sequence[Sequence[np.ndarray]], weights: np.ndarray) -> np.ndarray:
    """Sums over a block's items from which held-out agreement and its standard error follow
    (:func:`agreement_bounds`); summable over blocks.

    Args:
        block: the items and all their annotations.
        tests: per fit ``s``, the (n,) mask of the block's annotations held out.
        posteriors: ``posteriors[s][c]`` (I, K): candidate c fitted without ``tests[s]``.
        weights: (n,) weight of each annotation (:func:`annotator_weights`).

    Returns:
        (C, 6 + C): per candidate ``[Σ w·ā, Σ w, Σ_i D_i, Σ_i D_i², Σ_i D_i W_i]``, in the 6th
        column of row 0 (0 in the other rows) ``Σ_i W_i²``, and in columns ``6 + b`` the
        products ``Σ_i D_i D_i^b`` with every candidate b (for the paired standard error of
        two candidates, :func:`paired_gains`): ``ā`` an annotation's agreement averaged over
        the fits that held it out, ``D_i = Σ_{n∈i} w_n (ā_c − ā_0)`` and
        ``W_i = Σ_{n∈i} w_n`` over the scored annotations of item i (the reference is
        candidate 0).
    """
    n_cand = len(posteriors[0]) if posteriors else 0
    per_item = block.annotations_per_item()
    items = np.repeat(np.arange(block.n_items), per_item)
    n_classes = posteriors[0][0].shape[1] if n_cand else 1
    labels = block.X.indices % n_classes
    total = np.zeros((n_cand, len(items)))
    times = np.zeros(len(items))
    for test, posts in zip(tests, posteriors):
        held_out = np.flatnonzero(test)
        test_items, test_labels = items[held_out], labels[held_out]
        for c, post in enumerate(posts):
            total[c, held_out] += agreement_scores(post, test_items, test_labels)
        times[held_out] += 1
    held = times > 0
    w = np.where(held, weights, 0.0)
    mean = total / np.maximum(times, 1)
    w_item = np.bincount(items, weights=w, minlength=block.n_items)
    out = np.zeros((n_cand, 6 + n_cand))
    d_items = np.zeros((n_cand, block.n_items))
    for c in range(n_cand):
        d_items[c] = np.bincount(items, weights=w * (mean[c] - mean[0]), minlength=block.n_items)
        out[c, :5] = [(w * mean[c]).sum(), w.sum(), d_items[c].sum(), (d_items[c] ** 2).sum(),
                      (d_items[c] * w_item).sum()]
    if n_cand:
        out[0, 5] = (w_item ** 2).sum()
        out[:, 6:] = d_items @ d_items.T
    return out


def paired_gains(sums: np.ndarray, reference: int) -> Tuple[np.ndarray, np.ndarray]:
    """From :func:`agreement_sums` summed over blocks: per candidate c its weighted mean
    held-out agreement minus that of candidate ``reference`` (C,) and the standard error of
    that difference (C,; 0 for the reference itself), clustered by item (an item's hidden
    labels share one prediction): with ``d_i = D_i^c − D_i^r``, the residuals
    ``Σ_i (d_i − gain·W_i)²`` expanded into the sums over items."""
    total_w = max(float(sums[0, 1]), 1e-300)
    r = int(reference)
    gram = sums[:, 6:]
    gain = (sums[:, 2] - sums[r, 2]) / total_w
    d_squared = np.diag(gram) - 2 * gram[:, r] + gram[r, r]
    d_w = sums[:, 4] - sums[r, 4]
    resid = d_squared - 2 * gain * d_w + gain ** 2 * sums[0, 5]
    se = np.sqrt(np.maximum(resid, 0.0)) / total_w
    se[r] = 0.0
    return gain, se


def agreement_bounds(sums: np.ndarray, z: float) -> Tuple[np.ndarray, np.ndarray]:
    """From :func:`agreement_sums` summed over blocks: per candidate the weighted mean
    held-out agreement (C,) and ``gain − z·SE`` of its gain over candidate 0 (C,; 0 for it)
    (:func:`paired_gains`)."""
    means = sums[:, 0] / max(float(sums[0, 1]), 1e-300)
    gain, se = paired_gains(sums, 0)
    bounds = gain - float(z) * se
    bounds[0] = 0.0
    return means, bounds


def tied_with_best(sums: np.ndarray, eligible: Sequence[int], z: float) -> List[int]:
    """The ``eligible`` candidates (indices, ascending) whose held-out agreement is within
    ``z`` paired standard errors (:func:`paired_gains`) of the best eligible one's, that one
    included (an exact tie of the best goes to the earlier as its reference)."""
    means = sums[:, 0] / max(float(sums[0, 1]), 1e-300)
    best = max(eligible, key=lambda c: (means[c], -c))
    gain, se = paired_gains(sums, best)
    return [c for c in eligible if c == best or -gain[c] <= float(z) * se[c]]


def gold_sums(hits: np.ndarray) -> np.ndarray:
    """(C, 1 + C) sums over gold items of per-item hits ``hits`` (C, n): ``[Σ_i h_c,i,
    Σ_i h_c,i h_c',i]``, from which gold accuracies and paired standard errors follow
    (:func:`gold_bounds`); summable over folds and blocks."""
    hits = np.asarray(hits, dtype=np.float64)
    return np.concatenate([hits.sum(axis=1, keepdims=True), hits @ hits.T], axis=1)


def gold_bounds(sums: np.ndarray, n_gold: int, reference: int,
                z: float) -> Tuple[np.ndarray, np.ndarray]:
    """From :func:`gold_sums` over ``n_gold`` items: each candidate's gold accuracy (C,) and
    ``gain − z·SE`` of its gain over candidate ``reference`` (paired over gold items; 0 for
    the reference)."""
    n = max(int(n_gold), 1)
    acc = sums[:, 0] / n
    gain = acc - acc[reference]
    second = sums[:, 1:]
    sq = np.diag(second) - 2 * second[:, reference] + second[reference, reference]
    var = np.maximum(sq / n - gain ** 2, 0.0) / max(n - 1, 1)
    bounds = gain - float(z) * np.sqrt(var)
    bounds[reference] = 0.0
    return acc, bounds


def classifier_top_counts(pred_probs: np.ndarray) -> np.ndarray:
    """(K,) items per class that the classifier's ``pred_probs`` (I, K) rank strictly first
    (an item whose top probability is shared, a uniform row, speaks for no class)."""
    p = np.asarray(pred_probs, dtype=np.float64)
    if not len(p):
        return np.zeros(p.shape[1], dtype=np.int64)
    top = p.max(axis=1, keepdims=True)
    alone = (p == top).sum(axis=1) == 1
    return np.bincount(np.argmax(p[alone], axis=1), minlength=p.shape[1])


def named_classes(votes: np.ndarray, pred_probs: Optional[np.ndarray] = None) -> np.ndarray:
    """(K,) bool: the classes something speaks for, those that some annotation names (``votes``
    (K,) annotations per class) and, with a classifier's ``pred_probs`` (I, K), those that
    it ranks strictly first for some item (:func:`classifier_top_counts`: a class no
    annotator chose but the classifier finds is a label the target prior must allow,
    :func:`gold_target`)."""
    named = np.asarray(votes) > 0
    if pred_probs is not None:
        named = named | (classifier_top_counts(pred_probs) > 0)
    return named


def gold_target(gold_counts: np.ndarray, named: Optional[np.ndarray] = None) -> np.ndarray:
    """(K,) the class mix to decide labels for, from ``gold_counts`` (K,) gold items per class:
    ``(n_k + 1) / (n + K)``, the posterior mean of the mix under a uniform Dirichlet prior
    (uniform without gold). Expected accuracy on items of mix ``π`` is ``Σ_k π_k recall_k``,
    linear in ``π``, so this mean is the mix to decide for when it is uncertain.

    ``named`` (K,) bool: the classes some annotation names; the others (unless a gold item
    holds them) get 0 and K counts the rest. Nothing speaks for a class no one named: its
    learned prior is near 0, and a share of the target would multiply its posterior by the
    ratio of the two, so that contested items got a label no annotator gave (labels 1..5
    read as codes 0..5 made an unused class 0)."""
    counts = np.asarray(gold_counts, dtype=np.float64)
    live = np.ones(len(counts), dtype=bool) if named is None else np.asarray(named, bool)
    live = live | (counts > 0)
    if not live.any():
        live[:] = True
    return np.where(live, counts + 1.0, 0.0) / (counts.sum() + live.sum())


def under_target(post: np.ndarray, class_priors: np.ndarray, target: Optional[np.ndarray],
                 has_class_prior: bool) -> np.ndarray:
    """(I, K) posteriors ``post`` re-expressed under ``target`` (K,) when it is given and the
    posteriors are Bayes' rule with a class prior (``has_class_prior``); else ``post`` itself.

    ``class_priors`` (K,): the class-prior factor that ``post`` carries, a fitted model's
    ``exp(posterior_log_prior_)``: its ``class_priors_`` for Dawid-Skene, ``exp E[log τ]``
    for the variational IBCC and EBCC (their ``E[τ]`` would leave a bias against the rare
    classes). Its scale does not matter (rows are normalised)."""
    if target is None or not has_class_prior:
        return post
    return shift_class_prior(post, class_priors, target)


def item_offsets(item_ids: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """A pseudo-random fold offset per item, ``0..n_folds-1``, from a seeded hash of its id:
    the same for an item wherever it is (a partitioned fit draws the same folds)."""
    n_folds = check_count(n_folds, "item_offsets n_folds", 1)     # 0 was a modulo by zero
    ids = np.asarray(item_ids)
    if ids.dtype == object and pd.api.types.infer_dtype(ids, skipna=False) == "integer":
        # integers held as objects (a categorical column's ids) hash as the integers they are
        ids = np.array(ids.tolist())
    elif ids.dtype.kind in "SU":
        # numpy strings hash as the same strings held as objects (pandas refuses them)
        ids = ids.astype(object)
    seed, high = int(seed) % 10**5, int(seed) // 10**5
    key = f"crowd-keras{seed:05d}"                                  # 16 characters
    h = pd.util.hash_array(ids, hash_key=key, categorize=False)
    if ids.dtype.kind != "O" and seed:
        # the key seeds only the hashing of strings: numbers get the seed by a second hash
        # (seed 0 keeps the plain hash), so every pass of AutoLabelModel draws its own folds
        h = pd.util.hash_array(h ^ np.uint64(seed * 0x9E3779B97F4A7C15 % 2**64),
                               categorize=False)
    if high:
        # the key holds the last five digits: a larger seed mixes in the rest (else
        # random_state=100000 drew the folds of random_state=0)
        h = pd.util.hash_array(h ^ np.uint64(high * 0xC2B2AE3D27D4EB4F % 2**64),
                               categorize=False)
    return (h % np.uint64(n_folds)).astype(np.int64)


def fold_keys(block: Block, n_classes: int, fingerprints: np.ndarray, seed: int,
              item_keys: np.ndarray) -> np.ndarray:
    """(n,) uint64 key of each annotation of ``block`` that orders an item's annotations for
    :func:`annotation_folds`: a seeded mix of its annotator's ``fingerprints`` (A,) and its
    own (item, label) hash, the item by its content key ``item_keys`` (I,)
    (``Block.item_content_keys``), so that which annotations are hidden together depends on
    what the annotators said, never on the names or codes of annotators or items."""
    hashes = block.annotation_hashes(n_classes, item_keys)
    salt = mix64(np.array([int(seed) % 2**64], dtype=np.uint64))
    with np.errstate(over="ignore"):
        # the fingerprint mixed before the sum: an annotator of one label has the label's
        # hash as fingerprint, and fingerprint ^ hash gave all of them one key (ties in code
        # order)
        return mix64(mix64(fingerprints[block.X.indices // n_classes]) + hashes + salt)


def annotation_folds(item_ids: np.ndarray, per_item: np.ndarray, n_folds: int,
                     seed: int, keys: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`heldout_folds` of annotations stored by item: ``per_item[i]`` annotations of the
    item ``item_ids[i]`` (its id or content key), consecutive, ranked within their item by
    ``keys`` (n,) (:func:`fold_keys`; None: by storage order). Only the items' ids and the
    keys decide, so a block of items (a partitioned fit) draws the folds of its annotations
    alone, exactly as the whole set draws them."""
    # one fold would hide every annotation of an item, with nothing left to predict it from
    n_folds = check_count(n_folds, "n_folds", 2)
    per_item = np.asarray(per_item, dtype=np.int64)
    if keys is None:
        starts = np.cumsum(per_item) - per_item
        rank = np.arange(int(per_item.sum())) - np.repeat(starts, per_item)
    else:
        rank = ranks_within(per_item, keys)
    fold = (rank + np.repeat(item_offsets(item_ids, n_folds, seed), per_item)) % n_folds
    fold[np.repeat(per_item < 2, per_item)] = -1
    return fold


def content_fingerprints(block: Block, n_classes: int, profiles: np.ndarray) -> np.ndarray:
    """(A,) uint64 fingerprints of the annotators (``Block.annotator_fingerprints``) with the
    items known by their content keys (``Block.item_content_keys`` from the crowd's
    ``profiles``, :func:`~crowd_keras.numerics.label_profile_keys`): no item id nor
    annotator name plays a part; summable over blocks (wrapping)."""
    return block.content_fingerprints(n_classes, profiles)


def block_folds(block: Block, n_classes: int, profiles: np.ndarray, fingerprints: np.ndarray,
                n_folds: int, seed: int) -> np.ndarray:
    """:func:`annotation_folds` of a block's annotations, the items by their content keys
    (from the crowd's label ``profiles``) and ranked by :func:`fold_keys` (the annotators'
    :func:`content_fingerprints`, summed over every block)."""
    item_keys = block.item_content_keys(n_classes, profiles)
    return annotation_folds(item_keys, block.annotations_per_item(), n_folds, seed,
                            fold_keys(block, n_classes, fingerprints, seed, item_keys))


def heldout_folds(ann: Annotations, n_folds: int, seed: int) -> np.ndarray:
    """Fold of each annotation, ``(n_annotations,)`` in ``0..n_folds-1``; -1: never held out.

    Folds are drawn within items: the annotation of rank ``r`` in its item goes to fold
    ``(r + o_i) mod F`` with a pseudo-random offset ``o_i`` per item (:func:`item_offsets`),
    so a fold hides about ``n_i / F`` of an item's annotations and never all of them. The
    offsets and the ranks are drawn from what the annotators said (:func:`fold_keys`, the
    items' content keys), not from the names of annotators or items, so renaming or
    reordering either draws the same folds. Items with a single annotation are never held
    out (nothing would be left to predict it from).
    """
    block = Block.from_annotations(ann)
    k = ann.n_classes
    profiles = label_profile_keys(ann.annotator_label_counts())
    return block_folds(block, k, profiles, content_fingerprints(block, k, profiles), n_folds,
                       seed)


def heldout_log_likelihood(model: LabelModel, ann: Annotations, mask: np.ndarray) -> np.ndarray:
    """``log Σ_k q_ik π_a[k, l]`` of the annotations where ``mask`` is true (the posterior
    predictive of a hidden label), for ``model`` fitted on the others of the same items."""
    return predictive_log_likelihood(model.posteriors_[ann.items[mask]],
                                     model.confusion_matrices_, ann.annotators[mask],
                                     ann.labels[mask])


def predictive_log_likelihood(posteriors: np.ndarray, confusion: np.ndarray,
                              annotators: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``log Σ_k q_k π_a[k, l]`` per annotation: ``posteriors`` (n, K) of the annotations'
    items, ``confusion`` (A, K, K) of a fitted model, the annotations' annotator and label
    codes (n,)."""
    p = np.einsum("nk,nk->n", posteriors, confusion[annotators, :, labels])
    return np.log(np.maximum(p, 1e-300))


def _clone(model: LabelModel, **params: Any) -> LabelModel:
    return type(model)(**{**model.get_params(deep=False), **params})


class AutoLabelModel(LabelingFunctionFallback, LabelModel):
    """The candidate that agrees best with held-out annotations (or gold), refitted on all.

    1. Labeling functions (most votes cast by functions that only ever vote one class): the
       abstain-aware Dawid-Skene (``regime_``, as every crowd model of the library).
    2. Each candidate (:func:`default_candidates`) is scored by held-out agreement:
       within-item folds (:func:`heldout_folds`); for each fold the candidate is fitted on the
       other annotations (every item keeps at least one) and each hidden annotation scores
       :func:`agreement_scores`, weighted by :func:`annotator_weights` and, for annotators
       that copy each other (:func:`copying_pairs`), by :func:`copy_weights`. Folds are
       scored until ``min_heldout`` annotations were held out or ``max_repeats`` passes are
       done.
    3. The first candidate (majority vote) is the reference: another is eligible only if its
       agreement gain over it exceeds ``confidence`` standard errors, clustered by item
       (:func:`agreement_bounds`). The eligible candidates within ``confidence`` paired
       standard errors of the best one's score are tied with it (:func:`tied_with_best`),
       and the tie goes to the one latest in the ladder, the most general: what the held-out
       labels cannot tell apart is decided against the simpler model's untested assumption
       (step 30 of ``benchmarks/results/default_label_model.md``).
    4. With at least ``min_gold`` gold items (``fit(..., gold=...)``): each candidate is
       also scored by its accuracy on gold items hidden from it (``gold_folds`` folds over the
       gold items, the others held fixed); the best candidate that beats the choice above by
       more than ``confidence`` paired standard errors replaces it
       (:meth:`choose_by_gold`).
    5. The winner is refitted on all annotations (gold items held at their class); the fitted
       model is ``model_`` and this object answers through it. When majority vote wins, its
       labels are answered with the posterior of :class:`CalibratedVote` (one accuracy shared
       by the crowd, fitted by EM): the same labels, a calibrated ``predict_proba``
       (``vote_posterior``; :meth:`final_model`).

    Args:
        candidates: ``[(name, unfitted label model), ...]`` (simplest first), or None for
            :func:`default_candidates`. Their ``max_iter``/``tol``/``smoothing`` are set from
            this model's.
        n_folds: folds per pass.
        min_heldout: stop scoring once this many annotations were held out.
        max_repeats: most passes (each with its own fold draw): a small crowd gets up to
            this many, so that the choice does not ride on one draw; a large one stops at
            ``min_heldout``.
        selection_exponent: γ of the weights ``n_a^-γ`` (:data:`SELECTION_EXPONENT`).
        confidence: standard errors by which a candidate must beat the reference.
        copy_confidence: standard errors by which a pair's agreement must exceed what
            independent annotators explain to be taken as copying (:func:`copying_pairs`);
            None: no pair is.
        min_gold: gold items needed to choose by gold.
        gold_folds: the folds over the gold items of the choice by gold.
        random_state: seed of the fold draws (the only randomness): an integer >= 0; None
            draws as 0 (folds are a seeded hash of what each item was told, so every fit is
            repeatable; pass another seed for another draw).
        max_iter, tol, smoothing, class_prior: the candidates' EM settings (``max_iter`` at
            least 1) and fixed class prior (see :class:`DawidSkene`), each passed to the
            candidates that take it
            (``class_prior``: the Dawid-Skene ones; to decide labels for another class
            balance, use ``target_prior``).
        progress: show a progress bar over the held-out fits.
        labeling_functions: ``"auto"`` or ``"ignore"`` (see :class:`DawidSkene`).
        vote_posterior: ``"calibrated"`` (default) or ``"one_hot"``: the posterior returned
            when majority vote (ties to the lowest code) is chosen; the labels are the same.
        target_prior: the class balance the labels are decided for. ``"gold"`` (default):
            the mix of the gold items' classes given to ``fit``, ``(n_k + 1) / (n + K)``
            (:func:`gold_target`), so without gold every class alike. With every class alike
            the labels are decided as majority vote decides (it carries no class prior): what
            the chosen model adds to voting is per-class recall, which holds whatever the mix
            of classes in the items the labels are judged on; gold is the user's sample of
            those items, so its mix moves the target toward the classes it holds.
            ``"uniform"``: every class alike, gold or not. Both spread the target over the
            classes that some annotation or gold item names, or that a classifier's
            ``pred_probs`` rank first for some item, alone (:func:`named_classes`): a class
            nothing speaks for is never the label. ``"learned"`` (or None): the chosen
            model's own class priors, which maximise the expected accuracy on items drawn
            like the crowd's (rare classes then need stronger evidence). A (K,) vector (in the
            annotations' class order) or a ``pandas.Series`` / dict keyed by class: that
            prior. The chosen model's posteriors are re-expressed under the target
            (:func:`~crowd_keras.numerics.shift_class_prior`) when they are Bayes' rule with a
            class prior (``posterior_has_class_prior``: Dawid-Skene, IBCC, EBCC), dividing out
            the factor their E-step weighed the classes by (``posterior_log_prior_``: the
            variational IBCC and EBCC weigh by ``exp E[log τ]``, not ``E[τ]``); majority
            vote's and BWA's carry none and are returned as they are. Choice by gold scores
            each candidate's labels under the target (of the gold outside the hidden fold);
            the choice by agreement does not depend on it
            (``benchmarks/results/default_label_model.md``, steps 24-25).

    Attributes:
        chosen_: the winning candidate's name.
        model_: the winning candidate, refitted on all annotations.
        selection_: ``"agreement"``, ``"gold"``, ``"single"`` (nothing to compare on) or
            ``"labeling_functions"`` (step 1: ``chosen_`` is ``"abstain_dawid_skene"``).
        selection_scores_: ``{name: score}`` the eligible candidates' held-out agreement.
        tied_: the eligible candidates tied with the best (:func:`tied_with_best`), in ladder
            order; the choice by agreement is the last.
        gold_accuracy_: ``{name: accuracy}`` on hidden gold items (empty without enough gold).
        heldout_agreement_: every candidate's agreement score.
        n_heldout_: annotations scored.
        copy_pairs_: (P, 2) annotator ids of the copying pairs found.
        n_gold_: gold items given.
        n_iter_: the chosen model's iterations.
        target_prior_applied_: whether ``posteriors_`` are under ``target_prior``.
        target_prior_: (K,) the target decided for (None: the learned prior).
        gold_class_counts_: (K,) gold items per class.
        named_classes_: (K,) bool, the classes some annotation names or the classifier
            ranks first, alone, for some item (:func:`named_classes`).
        posteriors_: (I, K) the chosen model's, under ``target_prior_`` when
            ``target_prior_applied_``.
        confusion_matrices_: (A, K, K) the chosen model's.
        class_priors_: (K,) the chosen model's.
    """

    accepts_gold = True
    accepts_pred_probs = True

    def __init__(self, candidates: Optional[Sequence[Tuple[str, LabelModel]]] = None,
                 n_folds: int = 5, min_heldout: int = 100_000, max_repeats: int = 10,
                 selection_exponent: float = SELECTION_EXPONENT, confidence: float = 1.64,
                 copy_confidence: Optional[float] = 4.0, min_gold: int = 20,
                 gold_folds: int = 5, random_state: Optional[int] = 0, max_iter: int = 100,
                 tol: float = 1e-5, smoothing: float = 0.01, class_prior: Optional[Any] = None,
                 progress: bool = False, labeling_functions: str = "auto",
                 vote_posterior: str = "calibrated", target_prior: Optional[Any] = GOLD_PRIOR
                 ) -> None:
        self.candidates = candidates
        self.n_folds = n_folds
        self.min_heldout = min_heldout
        self.max_repeats = max_repeats
        self.selection_exponent = selection_exponent
        self.confidence = confidence
        self.copy_confidence = copy_confidence
        self.min_gold = min_gold
        self.gold_folds = gold_folds
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.class_prior = class_prior
        self.progress = progress
        self.labeling_functions = labeling_functions
        self.vote_posterior = vote_posterior
        self.target_prior = target_prior

    def _check_params(self) -> None:
        # max_iter: the candidates' EM iterations (and the calibrated vote's), named here
        # rather than by the first candidate that refuses it ("BWA max_iter ...")
        for name, low in (("n_folds", 2), ("max_repeats", 1), ("gold_folds", 2),
                          ("min_gold", 0), ("min_heldout", 0), ("max_iter", 1)):
            check_count(getattr(self, name), f"AutoLabelModel {name}", low)
        check_flags(self)    # progress: read by truth value below
        check_number(self.selection_exponent, "AutoLabelModel selection_exponent")
        check_number(self.confidence, "AutoLabelModel confidence")
        if self.copy_confidence is not None and \
                not check_number(self.copy_confidence, "AutoLabelModel copy_confidence") > 0:
            raise ValueError(f"AutoLabelModel copy_confidence must be > 0 or None, got "
                             f"{self.copy_confidence!r}")
        if self.random_state is not None:
            check_count(self.random_state, "AutoLabelModel random_state")
        if self.vote_posterior not in VOTE_POSTERIORS:
            raise ValueError(f"AutoLabelModel vote_posterior must be one of {VOTE_POSTERIORS}, "
                             f"got {self.vote_posterior!r}")
        target = self.target_prior
        if not (target is None or (target in TARGET_PRIORS if isinstance(target, str)
                                   else isinstance(target, dict) or np.ndim(target) == 1)):
            raise ValueError(f"AutoLabelModel target_prior must be 'uniform', 'learned' (or "
                             f"None), 'gold', a vector of class probabilities or a Series / "
                             f"dict of them keyed by class, got {target!r}")
        if self.candidates is not None:
            bad = [c for c in (self.candidates if isinstance(self.candidates, (list, tuple))
                               else [self.candidates])
                   if not (isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str)
                           and isinstance(c[1], LabelModel))]
            if bad or not isinstance(self.candidates, (list, tuple)):
                raise TypeError(f"AutoLabelModel candidates must be a list of (name, unfitted "
                                f"label model) pairs, got {bad[0] if bad else self.candidates!r}")

    def ladder(self, n_classes: int) -> List[Tuple[str, LabelModel]]:
        """The unfitted candidates with this model's EM settings: ``[(name, model), ...]``."""
        self._check_params()
        ladder = default_candidates(n_classes) if self.candidates is None else list(self.candidates)
        names = [name for name, _ in ladder]
        if not ladder or len(set(names)) != len(names):
            raise ValueError(f"candidates must be a non-empty list of (name, label model) with "
                             f"distinct names, got {names}")
        settings = {"max_iter": self.max_iter, "tol": self.tol, "smoothing": self.smoothing,
                    "class_prior": self.class_prior, "labeling_functions": "ignore"}
        out = []
        for name, model in ladder:
            own = model.get_params(deep=False)
            # a setting the candidate takes but would not use is an error there (TieBrokenVote
            # with IBCC breaking its ties takes no smoothing nor class prior)
            takes = getattr(model, "takes_setting", lambda setting: True)
            out.append((name, _clone(model, **{k: v for k, v in settings.items()
                                               if k in own and takes(k)})))
        return out

    @staticmethod
    def check_gold_candidates(ladder: List[Tuple[str, LabelModel]]) -> None:
        """Gold is held at its class in every candidate's fits: ``TypeError`` naming the first
        candidate that does not take gold labels (``accepts_gold``), before any fit."""
        for name, model in ladder:
            if not getattr(model, "accepts_gold", False):
                raise TypeError(f"AutoLabelModel candidate {name!r} ({type(model).__name__}) "
                                "does not take gold labels; fit without gold, or leave it out "
                                "of the candidates")

    def _fit_crowd(self, ann: Annotations, item_log_prior: Optional[np.ndarray] = None,
                   pred_probs: Optional[np.ndarray] = None) -> "AutoLabelModel":
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        # a wrong target fails before the fits
        self.target_prior_vector(ann.n_classes, classes=ann.classes)
        self.named_classes_ = named_classes(ann.annotator_label_counts().sum(axis=0),
                                            pred_probs)
        ladder = self.ladder(ann.n_classes)
        gold = None
        if item_log_prior is not None:
            self.check_gold_candidates(ladder)
            gold = np.flatnonzero(np.isfinite(item_log_prior).sum(axis=1) == 1)
        self.n_gold_ = 0 if gold is None else len(gold)
        self.gold_class_counts_ = np.zeros(ann.n_classes, dtype=np.int64) if gold is None else \
            np.bincount(np.argmax(item_log_prior[gold], axis=1), minlength=ann.n_classes)
        self.heldout_agreement_, self.n_heldout_, self.gold_accuracy_ = {}, 0, {}
        self.tied_ = []
        self.copy_pairs_ = np.asarray(ann.annotator_ids)[np.empty((0, 2), dtype=np.int64)]
        scores = self._heldout_scores(ann, ladder, item_log_prior, pred_probs)
        self.selection_ = "single" if scores is None else "agreement"
        self.selection_scores_ = {} if scores is None else dict(scores)
        chosen = self.choose(ladder, scores, self.tied_)
        if self.chooses_by_gold(len(ladder)):
            chosen = self.choose_by_gold(ladder, chosen,
                                         self._gold_sums(ann, ladder, item_log_prior, gold,
                                                         pred_probs))
        model = _fit(self.final_model(ladder, chosen), ann, item_log_prior, pred_probs)
        return self.adopt(chosen, model, ann)

    def adopt_labeling_function_model(self, model: LabelModel, ann: Annotations) -> None:
        """Step 1: answer through the abstain-aware model; the selection attributes say so."""
        super().adopt_labeling_function_model(model, ann)
        self.chosen_, self.model_, self.selection_ = "abstain_dawid_skene", model, \
            "labeling_functions"
        self.selection_scores_, self.heldout_agreement_, self.gold_accuracy_ = {}, {}, {}
        self.n_heldout_, self.tied_ = 0, []
        self.copy_pairs_ = np.asarray(ann.annotator_ids)[np.empty((0, 2), dtype=np.int64)]
        self.target_prior_applied_ = False      # labeling functions: their model's own prior
        self.target_prior_ = None
        self.named_classes_ = ann.annotator_label_counts().sum(axis=0) > 0   # not a refit's
        self.n_gold_, self.gold_class_counts_ = 0, np.zeros(ann.n_classes, dtype=np.int64)

    def hold_gold(self, items: np.ndarray, classes: np.ndarray, n_classes: int) -> None:
        super().hold_gold(items, classes, n_classes)
        self.count_gold(np.bincount(classes, minlength=n_classes))

    def count_gold(self, class_counts: np.ndarray) -> None:
        """After a labeling-function fit: the gold given, ``class_counts`` (K,) gold items per
        class (``n_gold_``, ``gold_class_counts_``; a partitioned fit sums them over its
        blocks)."""
        self.gold_class_counts_ = np.asarray(class_counts, dtype=np.int64)
        self.n_gold_ = int(self.gold_class_counts_.sum())

    def final_model(self, ladder: List[Tuple[str, LabelModel]], chosen: str) -> LabelModel:
        """The unfitted model refitted on all annotations for the candidate ``chosen``: the
        candidate itself, except hard majority vote with ties to the lowest code, which with
        ``vote_posterior="calibrated"`` answers through :class:`CalibratedVote` (its labels,
        a posterior that is not one-hot)."""
        model = dict(ladder)[chosen]
        if self.vote_posterior == "calibrated" and isinstance(model, MajorityVote) and \
                not model.soft and model.tie_break == "lowest":
            return CalibratedVote(max_iter=int(self.max_iter), smoothing=float(self.smoothing))
        return model

    def chooses_by_gold(self, n_candidates: int) -> bool:
        """Whether the gold given (``n_gold_``) is enough to choose among ``n_candidates`` by
        it: ``min_gold`` items and at least one (``min_gold=0`` without gold scores nothing)."""
        return self.n_gold_ >= max(int(self.min_gold), 1) and n_candidates > 1

    def choose_by_gold(self, ladder: List[Tuple[str, LabelModel]], chosen: str,
                       sums: np.ndarray) -> str:
        """The candidate whose gold accuracy beats that of ``chosen`` (the choice by held-out
        agreement) by more than ``confidence`` paired standard errors and is the best such,
        else ``chosen``; sets ``gold_accuracy_`` and, on a switch, ``selection_ = "gold"``."""
        names = [name for name, _ in ladder]
        acc, bounds = gold_bounds(sums, self.n_gold_, names.index(chosen), float(self.confidence))
        self.gold_accuracy_ = dict(zip(names, acc.tolist()))
        eligible = [i for i in range(len(names)) if bounds[i] > 0]
        if not eligible:
            return chosen
        self.selection_ = "gold"
        return names[max(eligible, key=lambda i: acc[i])]

    @staticmethod
    def choose(ladder: List[Tuple[str, LabelModel]], scores: Optional[Dict[str, float]],
               tied: Sequence[str] = ()) -> str:
        """Of the scored names tied with the best (``tied``, :func:`tied_with_best`; empty:
        the best alone, an exact tie to the earlier), the one latest in the ladder, the most
        general (step 30 of ``benchmarks/results/default_label_model.md``); no scores: the
        first candidate."""
        if not scores:
            return ladder[0][0]
        names = [name for name, _ in ladder if name in scores]
        if not tied:
            return max(names, key=lambda n: scores[n])
        return [name for name in names if name in tied][-1]

    def adopt(self, chosen: str, model: LabelModel, ann: Annotations) -> "AutoLabelModel":
        """Answer through ``model``, the candidate ``chosen`` fitted on ``ann`` (or fitted
        elsewhere, a partitioned fit, with ``ann`` its coding). Returns self."""
        self.chosen_, self.model_ = chosen, model
        self.annotations_ = ann
        self.target_prior_ = self.target_prior_vector(
            ann.n_classes, getattr(self, "gold_class_counts_", None), ann.classes,
            getattr(self, "named_classes_", None))
        self.target_prior_applied_ = self.target_prior_ is not None and \
            model.posterior_has_class_prior
        self.posteriors_ = self.to_target(model.posteriors_, ann.n_classes)
        self.item_log_prior_ = getattr(model, "item_log_prior_", None)
        self.confusion_matrices_ = model.confusion_matrices_
        self.class_priors_ = model.class_priors_
        self.n_iter_ = getattr(model, "n_iter_", 0)
        for name in ("classifier_weight_", "classifier_quality_", "classifier_marginal_"):
            if hasattr(model, name):
                setattr(self, name, getattr(model, name))
        return self

    def _heldout_scores(self, ann: Annotations, ladder: List[Tuple[str, LabelModel]],
                        item_log_prior: Optional[np.ndarray],
                        pred_probs: Optional[np.ndarray] = None) -> Optional[Dict[str, float]]:
        """The eligible candidates' weighted mean held-out agreement: the first candidate's,
        and each other's whose gain over it is above ``confidence`` standard errors. Sets
        ``heldout_agreement_`` (every candidate's) and ``n_heldout_``; None when nothing can
        be held out."""
        seed = 0 if self.random_state is None else int(self.random_state)
        n_folds, scored = int(self.n_folds), 0
        tests, posteriors = [], []
        folds: Dict[int, np.ndarray] = {}
        bar = progress_bar(selection_steps(n_folds, self.max_repeats), desc="auto: held-out fits",
                           disable=not self.progress)
        block = Block.from_annotations(ann)
        profiles = label_profile_keys(ann.annotator_label_counts())
        fingerprints = content_fingerprints(block, ann.n_classes, profiles)   # every pass's
        for repeat, fold in bar:
            if repeat not in folds:
                folds[repeat] = block_folds(block, ann.n_classes, profiles, fingerprints,
                                            n_folds, seed + repeat)
            test = folds[repeat] == fold
            if test.any():
                train = ann.select(~test)
                tests.append(test)
                posteriors.append([_fit(model, train, item_log_prior, pred_probs).posteriors_
                                   for _, model in ladder])
                scored += int(test.sum())
            if selection_done((repeat, fold), n_folds, scored, int(self.min_heldout)):
                break
        bar.close()
        if not tests:
            self.n_heldout_ = 0
            return None
        self.n_heldout_ = int(np.logical_or.reduce(tests).sum())
        weights = annotator_weights(ann.annotations_per_annotator(), ann.annotators,
                                    self.selection_exponent)
        sample = (pair_buckets(ann.n_annotations), seed + int(self.max_repeats))
        pairs = self.find_copying_pairs(None if self.copy_confidence is None else
                                        pair_sums(block, ann.n_classes, *sample, profiles),
                                        ann.annotator_ids)
        weights = weights * copy_weights(block, pairs, ann.n_classes,
                                         np.logical_or.reduce(tests))
        sums = agreement_sums(block, tests, posteriors, weights)
        return self.eligible_scores(ladder, sums)

    def find_copying_pairs(self, sums: Optional[tuple],
                           annotator_ids: np.ndarray) -> sp.csr_matrix:
        """:func:`copying_pairs` from summed :func:`pair_sums` (None: no detection, an empty
        matrix); sets ``copy_pairs_``, the (P, 2) annotator ids of the pairs."""
        n = len(annotator_ids)
        if sums is None:
            pairs = sp.csr_matrix((n, n), dtype=bool)
        else:
            pairs = copying_pairs(*sums, z=float(self.copy_confidence))
        upper = sp.triu(pairs, k=1).tocoo()
        ids = np.asarray(annotator_ids)
        self.copy_pairs_ = np.stack([ids[upper.row], ids[upper.col]], axis=1)
        return pairs

    def eligible_scores(self, ladder: List[Tuple[str, LabelModel]],
                        sums: np.ndarray) -> Dict[str, float]:
        """From summed :func:`agreement_sums`: sets ``heldout_agreement_`` and ``tied_`` (the
        eligible candidates within ``confidence`` paired standard errors of the best,
        :func:`tied_with_best`) and returns the mean agreement of the first candidate and of
        each candidate whose gain over it is more than ``confidence`` standard errors."""
        z = float(self.confidence)
        means, bounds = agreement_bounds(sums, z)
        names = [name for name, _ in ladder]
        self.heldout_agreement_ = dict(zip(names, means.tolist()))
        eligible = [i for i in range(len(names)) if i == 0 or bounds[i] > 0]
        self.tied_ = [names[i] for i in tied_with_best(sums, eligible, z)]
        return {names[i]: float(means[i]) for i in eligible}

    def _gold_sums(self, ann: Annotations, ladder: List[Tuple[str, LabelModel]],
                   item_log_prior: np.ndarray, gold: np.ndarray,
                   pred_probs: Optional[np.ndarray] = None) -> np.ndarray:
        """:func:`gold_sums` of each candidate's hits on gold items hidden from it (ties:
        fractional), over ``gold_folds`` folds of the gold items drawn from their content
        keys (``Block.item_content_keys``, as the held-out folds); each
        candidate's labels are those it would return, under the target of the gold items
        outside the fold (:meth:`target_prior_vector`)."""
        n_folds = min(int(self.gold_folds), len(gold))
        seed = 0 if self.random_state is None else int(self.random_state)
        profiles = label_profile_keys(ann.annotator_label_counts())
        keys = Block.from_annotations(ann).item_content_keys(ann.n_classes, profiles)
        fold_of = item_offsets(keys[gold], n_folds, seed)
        truth = np.argmax(item_log_prior[gold], axis=1)
        sums = np.zeros((len(ladder), 1 + len(ladder)))
        for fold in range(n_folds):
            hidden = gold[fold_of == fold]
            if len(hidden) == 0:
                continue
            prior = item_log_prior.copy()
            prior[hidden] = 0.0
            target = self.target_prior_vector(
                ann.n_classes, np.bincount(truth[fold_of != fold], minlength=ann.n_classes),
                ann.classes, self.named_classes_)
            hits = []
            for _, model in ladder:
                fitted = _fit(model, ann, prior, pred_probs)
                post = under_target(fitted.posteriors_, np.exp(fitted.posterior_log_prior_),
                                    target, fitted.posterior_has_class_prior)
                hits.append(agreement_scores(post, hidden, truth[fold_of == fold]))
            sums += gold_sums(np.stack(hits))
        return sums

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        if getattr(self, "labeling_function_model_", None) is not None:
            return super()._posteriors_for_new(new)
        return self.to_target(self._handed_over(self.model_, new), self.annotations_.n_classes)

    def target_prior_vector(self, n_classes: int, gold_counts: Optional[np.ndarray] = None,
                            classes: Optional[np.ndarray] = None,
                            named: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
        """``target_prior`` as a (K,) vector (None for the learned prior; ``"gold"``:
        :func:`gold_target` of ``gold_counts`` (K,), uniform when None); a clear error when
        it does not fit ``n_classes``. A dict, or a ``pandas.Series`` with an index of its own,
        keyed by the ``classes`` (the annotations' class labels) is read by its keys; a
        vector (a Series on pandas' default index too) in the classes' order.
        ``named`` (K,) bool: the classes some annotation names; ``"uniform"`` and ``"gold"``
        spread the target over those and the gold's classes only (:func:`gold_target`)."""
        self._check_params()
        if self.target_prior is None or (isinstance(self.target_prior, str)
                                         and self.target_prior == LEARNED_PRIOR):
            return None
        if isinstance(self.target_prior, str):
            counts = np.zeros(int(n_classes)) if gold_counts is None else \
                np.asarray(gold_counts, dtype=np.float64)
            if self.target_prior == GOLD_PRIOR:
                return gold_target(counts, named)
            # "uniform": the gold's classes count as named, its mix plays no part
            named = None if named is None else np.asarray(named, bool) | (counts > 0)
            return gold_target(np.zeros(int(n_classes)), named)
        problem = f"AutoLabelModel target_prior must be {n_classes} positive class " \
            f"probabilities summing to 1 (class order: the annotations' classes"
        given = self.target_prior
        if isinstance(given, dict):
            given = pd.Series(given, dtype=object)
        # a dict is keyed by class, keys 0..K-1 too (read by position, classes [1, 0] and
        # {0: 0.9, 1: 0.1} gave class 1 the 0.9); a Series on pandas' default index is a vector
        if isinstance(given, pd.Series) and (isinstance(self.target_prior, dict)
                                             or not isinstance(given.index, pd.RangeIndex)):
            if classes is None or len(given) != len(classes) or \
                    (pos := pd.Index(given.index).get_indexer(classes)).min() < 0:
                raise ValueError(f"{problem}; keyed by class, the keys must be the classes "
                                 f"{[] if classes is None else np.asarray(classes).tolist()}), "
                                 f"got {self.target_prior!r}")
            given = given.to_numpy()[pos]
        try:
            target = np.asarray(given, np.float64)
        except (TypeError, ValueError):      # strings: numpy's message named no argument
            target = np.full(int(n_classes), np.nan)
        if target.shape != (int(n_classes),) or not np.isfinite(target).all() or \
                (target <= 0).any() or abs(target.sum() - 1.0) > 1e-6:
            raise ValueError(f"{problem}), got {self.target_prior!r}")
        return target

    def to_target(self, post: np.ndarray, n_classes: int) -> np.ndarray:
        """(I, K) posteriors of the fitted winner re-expressed under ``target_prior`` when
        ``target_prior_applied_``, else ``post`` itself."""
        if not getattr(self, "target_prior_applied_", False):
            return post
        return under_target(post, np.exp(self.model_.posterior_log_prior_), self.target_prior_,
                            True)

    def own_vote_factors(self, votes: Any, start: int, stop: int) -> np.ndarray:
        """The chosen model's (:meth:`LabelModel.own_vote_factors`): its E-step's, whose
        posteriors the annotator report scores."""
        if getattr(self, "labeling_function_model_", None) is not None:
            return super().own_vote_factors(votes, start, stop)   # the abstain-aware model's
        self._check_fitted()
        return self.model_.own_vote_factors(votes, start, stop)

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        self._check_fitted()
        report = partitioned_report(self)
        if report is not None:
            return report
        if getattr(self, "labeling_function_model_", None) is not None:
            return self.labeling_function_quality()
        return self.model_.annotator_quality_

    def __repr__(self) -> str:
        chosen = getattr(self, "chosen_", None)
        return super().__repr__() if chosen is None else \
            f"{super().__repr__()}  # chose {chosen!r} by {self.selection_}"


def _fit(model: LabelModel, ann: Annotations, item_log_prior: Optional[np.ndarray],
         pred_probs: Optional[np.ndarray] = None) -> LabelModel:
    """A fresh copy of ``model`` fitted on ``ann``, with the items whose ``item_log_prior``
    allows one class only held at that class, and ``pred_probs`` for a candidate that
    ``accepts_pred_probs`` (the others fit the annotations alone)."""
    fresh = _clone(model)
    extra = {"pred_probs": pred_probs} if pred_probs is not None and \
        getattr(fresh, "accepts_pred_probs", False) else {}
    if item_log_prior is None:
        return fresh.fit(ann, **extra)
    gold = np.flatnonzero(np.isfinite(item_log_prior).sum(axis=1) == 1)
    codes = np.full(ann.n_items, -1, dtype=np.int64)
    codes[gold] = np.argmax(item_log_prior[gold], axis=1)
    return fresh.fit(ann, gold=codes, **extra)
