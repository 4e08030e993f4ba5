"""The default label model: pick the model the crowd supports, by held-out annotation likelihood.

Plain Dawid-Skene run to convergence wins by 2-14 points on crowds whose annotators each give
many labels, and falls below majority vote where many annotators give few labels or answer
alike (it fits every annotator's confusion matrix to a handful of labels). Which case a crowd
is cannot be read off its size; it can be measured without gold: hide some of each item's
annotations, fit a model on the rest, and score how well it predicts the hidden labels. A
model that overfits its annotators predicts their hidden labels badly.

:class:`AutoLabelModel` does that over a ladder of models from "the whole crowd is one
annotator" to "every annotator has its own confusion matrix", with the hierarchical prior's
strength (Paun et al., TACL 2018) as the rung, and refits the winner on all annotations.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..progress import progress_bar
from .base import LabelModel
from .dawid_skene import DawidSkene, OneCoinDawidSkene
from .labeling_functions import LabelingFunctionFallback

__all__ = ["AutoLabelModel", "default_candidates", "heldout_folds", "annotation_folds",
           "heldout_log_likelihood", "predictive_log_likelihood", "item_offsets"]


def default_candidates(n_classes: int) -> List[Tuple[str, LabelModel]]:
    """The ladder, simplest first: ``[(name, unfitted model), ...]``.

    - ``"shared"``: one confusion matrix for the whole crowd (prior strength ∞): a vote-level
      model that still learns which classes the crowd confuses;
    - ``"one_coin@m"``: one accuracy per annotator, shrunk toward the crowd's with
      ``m ∈ {32, 8, 2}`` pseudo-labels;
    - ``"dawid_skene@m"``: a confusion matrix per annotator, shrunk toward the crowd's
      (population mean) with ``m ∈ {16K, 4K, K}`` pseudo-labels per row.

    The grid starts at one pseudo-count per outcome of the estimated distribution (2 for
    right/wrong, K for a confusion row: Laplace's rule centred on the crowd) and grows by 4
    toward voting. Nothing in it refers to a data set: on the 7 crowd sets of the benchmark
    and on simulated crowds the held-out optimum lies inside it.
    """
    k = int(n_classes)
    ladder: List[Tuple[str, LabelModel]] = [
        ("shared", DawidSkene(prior_strength=np.inf, prior_mean="pooled"))]
    ladder += [(f"one_coin@{m}", OneCoinDawidSkene(prior_strength=float(m))) for m in (32, 8, 2)]
    ladder += [(f"dawid_skene@{m * k}", DawidSkene(prior_strength=float(m * k)))
               for m in (16, 4, 1)]
    return ladder


def item_offsets(item_ids: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """A pseudo-random fold offset per item, ``0..n_folds-1``, from a seeded hash of its id:
    the same for an item wherever it is (a partitioned fit draws the same folds)."""
    ids = np.asarray(item_ids)
    seed = int(seed) % 10**5
    key = f"crowd-keras{seed:05d}"                                  # 16 characters
    h = pd.util.hash_array(ids, hash_key=key, categorize=False)
    if ids.dtype.kind not in "OSU" and seed:
        # the key seeds only the hashing of strings: numbers get the seed by a second hash
        # (seed 0 keeps the plain hash), so every pass of AutoLabelModel draws its own folds
        h = pd.util.hash_array(h ^ np.uint64(seed * 0x9E3779B97F4A7C15 % 2**64),
                               categorize=False)
    return (h % np.uint64(n_folds)).astype(np.int64)


def annotation_folds(item_ids: np.ndarray, per_item: np.ndarray, n_folds: int,
                     seed: int) -> np.ndarray:
    """:func:`heldout_folds` of annotations stored by item: ``per_item[i]`` annotations of the
    item ``item_ids[i]``, consecutive. Only the items' ids and their annotations' ranks
    decide, so a block of items (a partitioned fit) draws the folds of its annotations alone,
    exactly as the whole set draws them."""
    per_item = np.asarray(per_item, dtype=np.int64)
    starts = np.cumsum(per_item) - per_item
    rank = np.arange(int(per_item.sum())) - np.repeat(starts, per_item)
    fold = (rank + np.repeat(item_offsets(item_ids, n_folds, seed), per_item)) % n_folds
    fold[np.repeat(per_item < 2, per_item)] = -1
    return fold


def heldout_folds(ann: Annotations, n_folds: int, seed: int) -> np.ndarray:
    """Fold of each annotation, ``(n_annotations,)`` in ``0..n_folds-1``; -1: never held out.

    Folds are drawn within items: the annotation of rank ``r`` in its item (annotations are
    stored by item, then annotator) goes to fold ``(r + o_i) mod F`` with a pseudo-random
    offset ``o_i`` per item (:func:`item_offsets`), so a fold hides about ``n_i / F`` of an
    item's annotations and never all of them. Items with a single annotation are never held
    out (nothing would be left to predict it from). See :func:`annotation_folds`.
    """
    return annotation_folds(ann.item_ids, ann.annotations_per_item(), n_folds, seed)


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
    """The model the crowd supports, chosen by held-out annotation likelihood (no gold).

    1. Labeling functions (most votes cast by functions that only ever vote one class): the
       abstain-aware Dawid-Skene (``regime_``, as every crowd model of the library).
    2. Otherwise each candidate (:func:`default_candidates`: one shared matrix, one-coin and
       full Dawid-Skene each at three prior strengths) is scored by the mean log-likelihood of
       held-out annotations: within-item folds (:func:`heldout_folds`); for each fold the
       candidate is fitted on the other annotations (every item keeps at least one) and scores
       each hidden one by its posterior predictive (:func:`heldout_log_likelihood`). Folds are
       scored until ``min_heldout`` annotations have been held out or ``max_repeats`` passes
       are done (large sets: one fold; small sets: repeated passes, so the choice does not
       hinge on one split).
    3. The best mean wins; an exact tie goes to the simpler candidate (earlier in the list).
    4. The winner is refitted on all annotations; the fitted model is ``model_`` and this
       object answers through it.

    Why: Dawid-Skene's per-annotator matrices are what wins on crowds with many labels per
    annotator and what overfits on crowds with few; the prior's strength says how many labels
    an annotator needs before its own estimate dominates, and the held-out likelihood is the
    unsupervised test of that (an overconfident annotator model predicts its annotator's
    hidden labels badly). Measured (``benchmarks/label_models.py``): at least majority vote
    on every shared set and within 0.005 of the best of crowd-kit's MV / DS / GLAD and
    Snorkel there; on simulated crowds with few labels per annotator and 30 % spammers never
    below majority vote. Held-out likelihood rewards modelling the annotations, not the truth:
    a crowd whose shared errors follow another concept than the gold can still mislead it.

    Args:
        candidates: ``[(name, unfitted label model), ...]`` (simplest first), or None for
            :func:`default_candidates`. Their ``max_iter``/``tol``/``smoothing`` are set from
            this model's.
        n_folds: folds per pass. min_heldout: stop scoring once this many annotations were
            held out. max_repeats: most passes (each with its own fold draw).
        random_state: seed of the fold draws (the only randomness).
        max_iter, tol, smoothing, class_prior: the candidates' EM settings and fixed class
            prior (see :class:`DawidSkene`).
        progress: show a progress bar over the held-out fits.
        labeling_functions: ``"auto"`` or ``"ignore"`` (see :class:`DawidSkene`).

    Attributes:
        chosen_: the winning candidate's name.
        model_: the winning candidate, refitted on all annotations.
        heldout_log_likelihood_: ``{name: mean held-out log-likelihood}``.
        n_heldout_: number of annotations scored.
        posteriors_, confusion_matrices_, class_priors_, n_iter_: the chosen model's (the
            labeling-function model's in that regime).
    """

    def __init__(self, candidates: Optional[Sequence[Tuple[str, LabelModel]]] = None,
                 n_folds: int = 5, min_heldout: int = 100_000, max_repeats: int = 5,
                 random_state: Optional[int] = 0, max_iter: int = 100, tol: float = 1e-5,
                 smoothing: float = 0.01, class_prior: Optional[Any] = None,
                 progress: bool = False, labeling_functions: str = "auto") -> None:
        self.candidates = candidates
        self.n_folds = n_folds
        self.min_heldout = min_heldout
        self.max_repeats = max_repeats
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.class_prior = class_prior
        self.progress = progress
        self.labeling_functions = labeling_functions

    def _check_params(self) -> None:
        if int(self.n_folds) < 2:
            raise ValueError(f"n_folds must be at least 2, got {self.n_folds!r}")
        if int(self.max_repeats) < 1:
            raise ValueError(f"max_repeats must be at least 1, got {self.max_repeats!r}")

    def _ladder(self, n_classes: int) -> List[Tuple[str, LabelModel]]:
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
            out.append((name, _clone(model, **{k: v for k, v in settings.items() if k in own})))
        return out

    def _fit_crowd(self, ann: Annotations) -> "AutoLabelModel":
        if ann.n_annotations == 0:
            raise CrowdDataError("no annotations to fit")
        ladder = self._ladder(ann.n_classes)
        scores = self._heldout_scores(ann, ladder)
        means = None if scores is None else {name: float(s.mean()) for name, s in scores.items()}
        chosen = self._choose(ladder, means)
        return self._adopt(chosen, self._candidate(ladder, chosen).fit(ann), ann)

    def _choose(self, ladder: List[Tuple[str, LabelModel]],
                means: Optional[Dict[str, float]]) -> str:
        """The best mean held-out log-likelihood (``means``; None: nothing could be held out,
        the simplest candidate); an exact tie goes to the earlier candidate. Sets
        ``heldout_log_likelihood_``."""
        self.heldout_log_likelihood_ = {} if means is None else dict(means)
        if means is None:   # every item has one annotation: nothing to compare on
            return ladder[0][0]
        return max((name for name, _ in ladder), key=lambda name: means[name])

    @staticmethod
    def _candidate(ladder: List[Tuple[str, LabelModel]], name: str) -> LabelModel:
        """A fresh, unfitted copy of the candidate ``name``."""
        return _clone(dict(ladder)[name])

    def _adopt(self, chosen: str, model: LabelModel, ann: Annotations) -> "AutoLabelModel":
        """Answer through ``model``, the candidate ``chosen`` fitted on ``ann`` (also a
        partitioned fit's, with ``ann`` its coding only)."""
        self.chosen_, self.model_ = chosen, model
        self.annotations_ = ann
        self.posteriors_ = model.posteriors_
        self.confusion_matrices_ = model.confusion_matrices_
        self.class_priors_ = model.class_priors_
        self.n_iter_ = model.n_iter_
        return self

    def _heldout_scores(self, ann: Annotations,
                        ladder: List[Tuple[str, LabelModel]]) -> Optional[Dict[str, np.ndarray]]:
        """Per candidate, the held-out log-likelihood of every scored annotation (averaged over
        the passes that held it out); None when no annotation can be held out."""
        total = {name: np.zeros(ann.n_annotations) for name, _ in ladder}
        times = np.zeros(ann.n_annotations)
        seed = 0 if self.random_state is None else int(self.random_state)
        n_folds, scored = int(self.n_folds), 0
        bar = progress_bar(range(int(self.max_repeats) * n_folds), desc="auto: held-out fits",
                           disable=not self.progress)
        for step in bar:
            repeat, fold = divmod(step, n_folds)
            if fold == 0:
                folds = heldout_folds(ann, n_folds, seed + repeat)
            test = folds == fold
            if not test.any():
                continue
            train = ann.select(~test)
            for name, model in ladder:
                total[name][test] += heldout_log_likelihood(_clone(model).fit(train), ann, test)
            times[test] += 1
            scored += int(test.sum())
            if scored >= int(self.min_heldout):
                break
        bar.close()
        held = times > 0
        self.n_heldout_ = int(held.sum())
        if not held.any():
            return None
        return {name: t[held] / times[held] for name, t in total.items()}

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        if getattr(self, "labeling_function_model_", None) is not None:
            return super()._posteriors_for_new(new)
        return self.model_._posteriors_for_new(new)

    @property
    def annotator_quality_(self) -> pd.DataFrame:
        self._check_fitted()
        if getattr(self, "labeling_function_model_", None) is not None:
            return self.labeling_function_model_.annotator_quality_
        return self.model_.annotator_quality_
