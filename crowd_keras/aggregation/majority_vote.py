"""Majority vote, hard and soft."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..annotations import Annotations
from ..numerics import GOLDEN64, id_keys, mix64, normalize_rows, softmax_rows, top_classes
from .base import LabelModel, as_annotations, check_settings, gold_codes
from .dawid_skene import sufficient_statistics
from .em import Block, EMLabelModel, Summary, gold_log_prior

__all__ = ["MajorityVote", "TieBrokenVote", "CalibratedVote"]

_TIE_BREAKS = ("lowest", "random", "uniform", "prior")


class MajorityVote(LabelModel):
    """Majority vote over each item's annotations.

    Args:
        soft: if True, ``predict_proba`` is the fraction of votes per class; if False
            (default) it is one-hot on the winning class.
        tie_break: how hard votes resolve ties: ``"lowest"`` (default) gives the win to the
            lowest class code; ``"random"`` picks one of the tied classes with
            ``random_state``, drawn from each item's id (the same pick in any order,
            subset or partition of the items: :meth:`tie_draws`); ``"uniform"`` splits the
            probability evenly among them (then ``predict`` returns the lowest tied code);
            ``"prior"`` gives the win to the tied class most frequent among all votes (the
            maximum a posteriori class when every annotator is equally reliable).
        random_state: seed for ``tie_break="random"``.

    Items with no annotation get the class prior: the frequency of each class among all
    votes of the fit (``vote_prior_``; new items of ``predict_proba(new)`` too, not the new
    batch's few votes). Annotator quality is agreement with the majority label. ``tied_items_`` /
    ``n_tied_items_`` are the annotated items whose top vote count is shared, whatever
    ``tie_break`` did with them: on binary crowds with an even number of labels per item the
    lowest-code rule can move accuracy by several points, so the count is always reported.
    New annotations (``predict_proba(new)``) count every vote, whoever gave it.

    Attributes:
        vote_prior_: (K,) each class's share of all votes of the fit: the posterior of the
            items without annotations.
        posteriors_: (items, K) the vote (one-hot, or the vote fractions with ``soft``).
        confusion_matrices_: (annotators, K, K) each annotator's labels counted against the
            winning class (plus 0.01 per cell), rows = winning class, normalised.
        class_priors_: (K,) the share of the annotated items each class won (plus 0.01).
    """

    def __init__(self, soft: bool = False, tie_break: str = "lowest",
                 random_state: Optional[int] = None) -> None:
        self.soft = soft
        self.tie_break = tie_break
        self.random_state = random_state

    accepts_gold = True

    def fit(self, annotations: Any, gold: Any = None, pred_probs: Any = None,
            **kwargs: Any) -> "MajorityVote":
        """Vote on each item; ``gold`` (see :func:`~crowd_keras.aggregation.base.gold_codes`)
        fixes the gold items' labels, and the annotators' confusions are counted against
        them there. ``pred_probs`` is refused (``accepts_pred_probs`` is False), as by the
        other models that take none."""
        if pred_probs is not None:
            raise TypeError(f"{type(self).__name__}.fit() does not take pred_probs")
        self.check_tie_break()
        check_settings(self)
        ann = as_annotations(annotations, **kwargs)
        self.annotations_ = ann
        self.vote_prior_ = self._vote_prior(ann)
        self.posteriors_ = self._posteriors_for(ann)
        self.item_log_prior_ = None     # gold clamps, which the quality scores add too
        if gold is not None:
            items, classes = gold_codes(ann, gold, annotations)
            self.posteriors_[items] = np.eye(ann.n_classes)[classes]
            self.item_log_prior_ = gold_log_prior(ann.n_items, ann.n_classes, items, classes)
        winners = np.argmax(self.posteriors_, axis=1)
        labelled = ann.annotations_per_item() > 0
        counts = np.zeros((ann.n_annotators, ann.n_classes, ann.n_classes))
        np.add.at(counts, (ann.annotators, winners[ann.items], ann.labels), 1.0)
        prior = np.bincount(winners[labelled], minlength=ann.n_classes).astype(float)
        self.set_fitted_counts(counts, prior)
        return self

    def check_tie_break(self) -> None:
        """``tie_break`` one of the rules, and a ``random_state`` the tie draws can hash
        (below 2**64), before any work (the in-memory and the partitioned fit)."""
        if self.tie_break not in _TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {_TIE_BREAKS}, got {self.tie_break!r}")
        seed = self.random_state
        if self.tie_break == "random" and isinstance(seed, (int, np.integer)) \
                and int(seed) >= 2 ** 64:   # numpy's OverflowError named no argument
            raise ValueError(f"MajorityVote random_state must be below 2**64 (the tie draws "
                             f"hash it in 64 bits), got {seed}")

    @property
    def tied_items_(self) -> np.ndarray:
        """Boolean (items,): annotated items whose most-voted class is not unique (a gold
        item is not: its class is known)."""
        self._check_fitted()
        self._check_items_held()
        counts = self.annotations_.label_counts()
        tied = (top_classes(counts).sum(axis=1) > 1) & (counts.sum(axis=1) > 0)
        gold = getattr(self, "item_log_prior_", None)
        return tied if gold is None else tied & (np.isfinite(gold).sum(axis=1) > 1)

    def set_fitted_counts(self, counts: np.ndarray, winners: np.ndarray) -> None:
        """Set the confusion matrices and prior from the (annotators, winner, label) counts and
        the (K,) number of labelled items each class won: sums over items, so a partitioned fit
        (:mod:`crowd_keras.distributed`) finishes the model with its summed counts."""
        self.confusion_matrices_ = normalize_rows(counts + 1e-2)
        self.class_priors_ = (winners + 1e-2) / (winners + 1e-2).sum()

    def _vote_prior(self, ann: Annotations) -> np.ndarray:
        """The frequency of each class among all votes (uniform without votes)."""
        return normalize_rows(np.bincount(ann.labels, minlength=ann.n_classes).astype(float))

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        return _votes_of_anyone(self, new)

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        # the fitted crowd's vote shares: an unlabelled new item is not given its batch's votes
        return self.posteriors_from_counts(ann.label_counts(), self.vote_prior_, ann.item_ids)

    def posteriors_from_counts(self, counts: np.ndarray, vote_prior: np.ndarray,
                               item_ids: Optional[np.ndarray] = None) -> np.ndarray:
        """Posteriors from (items, K) label counts; items without votes get ``vote_prior``.
        ``item_ids`` (items,): the ids that ``tie_break="random"`` draws from (default: the
        positions ``0..items-1``)."""
        empty = counts.sum(axis=1) == 0
        if self.soft:
            proba = counts / np.where(empty, 1.0, counts.sum(axis=1))[:, None]
        else:
            top = top_classes(counts)
            if self.tie_break == "uniform":
                proba = top / top.sum(axis=1, keepdims=True)
            else:
                if self.tie_break == "prior":
                    pick = np.argmax(np.where(top, vote_prior[None, :], -1.0), axis=1)
                elif self.tie_break == "random":
                    pick = np.argmax(np.where(top, self.tie_draws(counts, item_ids), -1.0),
                                     axis=1)
                else:
                    pick = np.argmax(top, axis=1)
                proba = np.eye(counts.shape[1])[pick]
        proba[empty] = vote_prior
        return proba

    def tie_draws(self, counts: np.ndarray, item_ids: Optional[np.ndarray] = None) -> np.ndarray:
        """(items, K) uniform draws of ``tie_break="random"``: item ``i``'s depend only on
        ``random_state`` and its id (:func:`~crowd_keras.numerics.id_keys`), so an item's
        tie is broken alike in any order, subset or partition of the items (a position-seeded
        draw broke it by where the item stood). ``random_state=None``: a fresh seed per call."""
        n, k = counts.shape
        ids = np.arange(n) if item_ids is None else np.asarray(item_ids)
        seed = self.random_state
        if seed is None:
            seed = int(np.random.default_rng().integers(2 ** 63))
        with np.errstate(over="ignore"):
            words = id_keys(ids, int(seed))[:, None] \
                + np.arange(1, k + 1, dtype=np.uint64) * GOLDEN64
        return (mix64(words) >> np.uint64(11)).astype(np.float64)


class TieBrokenVote(EMLabelModel):
    """Majority vote whose ties are broken by a Bayesian label model's posterior.

    An item's most-voted classes win; among tied classes the posterior of ``tie_model``
    (IBCC by default, an EM-protocol model fitted on the same annotations) decides, and with no
    vote at all its posterior is the answer. Voting with ties split at random loses half of
    every tie, and a crowd with two labels per item left ties on most disagreements: as the
    default label model's reference this vote is compared with candidates that weigh
    annotators, which break ties by construction (see :class:`~crowd_keras.aggregation.
    AutoLabelModel`). Runs through the EM-step protocol of ``tie_model``, so it fits
    partitioned like any EM model.

    Args:
        tie_model: registry name of the EM-protocol model that breaks ties (one that runs a
            single EM: MACE and the mixture of groups, which run restarts, are refused).
        max_iter, tol, smoothing, class_prior: that model's EM settings; a ``smoothing`` or
            ``class_prior`` other than the default that ``tie_model`` does not take (IBCC
            takes neither) is an error.
        progress: a progress bar over the EM iterations.

    Attributes:
        tie_model_: the fitted tie-breaking model.
        n_iter_: its EM iterations.
        state_: its last EM state (``predict_proba(new)`` is the E-step of the new items
            under it).
        posteriors_: (items, classes), mass only on the most-voted classes.
        confusion_matrices_: (annotators, classes, classes) the tie-breaking model's.
        class_priors_: (classes,) the tie-breaking model's.
    """

    accepts_gold = True
    em_name = "EM (tie-breaking model)"

    def __init__(self, tie_model: str = "ibcc", max_iter: int = 100, tol: float = 1e-5,
                 smoothing: float = 0.01, class_prior: Optional[Any] = None,
                 progress: bool = False) -> None:
        self.tie_model = tie_model
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.class_prior = class_prior
        self.progress = progress

    @property
    def needs_annotator_keys(self) -> bool:
        """The tie model's: run_em then gathers the annotators' fingerprints for it."""
        return getattr(self._unfitted_tie_model(), "needs_annotator_keys", False)

    # the EM-step protocol: the tie-breaking model's, with the votes beside its latent state
    def init_state(self, summary: Summary) -> "TieBrokenVote":
        super().init_state(summary)
        own = {"max_iter": self.max_iter, "tol": self.tol, "smoothing": self.smoothing,
               "class_prior": self.class_prior, "labeling_functions": "ignore"}
        model = self._unfitted_tie_model()
        params = model.get_params(deep=False)
        defaults = TieBrokenVote().get_params(deep=False)
        unused = [k for k in ("smoothing", "class_prior")
                  if k not in params and not _same(own[k], defaults[k])]
        if unused:   # else set and silently without effect
            raise ValueError(f"TieBrokenVote: {unused[0]}={own[unused[0]]!r} is not a setting "
                             f"of tie_model={self.tie_model!r} "
                             f"({type(model).__name__}); leave it at its default or choose "
                             "a tie_model that takes it")
        model.set_params(**{k: v for k, v in own.items() if k in params})
        runner = model.init_state(summary)
        if runner is not model:
            # a model that hands its fit over (MACE's and the mixture of groups' restarts run
            # side by side) needs its runner's own iteration count, which this loop does not
            # read: its restarts were cut short, an error about a winner never chosen
            raise ValueError(f"TieBrokenVote: tie_model={self.tie_model!r} "
                             f"({type(model).__name__}) runs restarts side by side, which "
                             "the tie-breaking loop does not drive; choose a single-run "
                             "EM model (e.g. 'ibcc', 'dawid_skene', 'ebcc')")
        self.tie_model_ = runner
        return self

    def _unfitted_tie_model(self) -> EMLabelModel:
        from .registry import get_label_model

        model = get_label_model(self.tie_model)
        if not isinstance(model, EMLabelModel):
            raise ValueError(f"tie_model must name an EM-protocol label model, got "
                             f"{self.tie_model!r}")
        return model

    def takes_setting(self, name: str) -> bool:
        """Whether the setting ``name`` is used: ``"smoothing"`` and ``"class_prior"`` only
        when ``tie_model`` takes them (IBCC, the default, takes neither: setting one is an
        error), so that a caller that sets them where taken (the default model's EM
        settings, the Snorkel adapter's class balance) can ask; others when a parameter."""
        if name in ("smoothing", "class_prior"):
            return name in self._unfitted_tie_model().get_params(deep=False)
        return name in self.get_params(deep=False)

    def initial_statistics(self, block: Block) -> Any:
        return self.tie_model_.initial_statistics(block)

    def m_step(self, stats: Any) -> Any:
        return self.tie_model_.m_step(stats)

    def e_step(self, block: Block, state: Any) -> tuple:
        latent, objective = self.tie_model_.e_step(block, state)
        top = top_classes(block.label_counts(self.n_classes_)).astype(np.float64)
        top[block.annotations_per_item() == 0] = 1.0
        if block.item_log_prior is not None:   # gold items: their known class only
            known = np.isfinite(block.item_log_prior)
            clamped = known.sum(axis=1) < known.shape[1]
            top[clamped] = known[clamped]
        return (latent, top), objective

    def sufficient_statistics(self, block: Block, latent: Any) -> Any:
        return self.tie_model_.sufficient_statistics(block, latent[0])

    def class_posteriors(self, latent: Any) -> np.ndarray:
        inner, top = latent
        post = top * self.tie_model_.class_posteriors(inner)
        empty = post.sum(axis=1) <= 0
        post[empty] = top[empty]
        return normalize_rows(post)

    def objective_scale(self, summary: Summary) -> float:
        return self.tie_model_.objective_scale(summary)

    def finish(self, state: Any, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "TieBrokenVote":
        model = self.tie_model_.finish(state, summary, template, history)
        self.annotations_ = template
        self.confusion_matrices_ = model.confusion_matrices_
        self.class_priors_ = model.class_priors_
        self.n_iter_ = model.n_iter_
        self.state_ = state
        return self

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        """New items: their most-voted classes, ties broken by the tie-breaking model's
        E-step under the fitted ``state_`` (an item without votes: that posterior)."""
        latent, _ = self.e_step(Block.from_annotations(ann), self.state_)
        return self.class_posteriors(latent)


def _votes_of_anyone(model: LabelModel, new: Annotations) -> np.ndarray:
    """``predict_proba(new)`` of a model whose posterior reads the items' vote counts alone
    (:class:`MajorityVote`, :class:`CalibratedVote`): every vote counts, whoever gave it, so
    annotators unseen in fit are not left out (no ``n_unknown_annotations_``)."""
    model._check_classes(new)
    model.__dict__.pop("n_unknown_annotations_", None)
    return model._posteriors_for(new)


def _same(value: Any, default: Any) -> bool:
    """``value`` is ``default`` (an array compares whole, without numpy's ambiguity)."""
    try:
        return value is default or bool(np.all(value == default))
    except (TypeError, ValueError):
        return False


#: the smallest ``log r``: a crowd no better than chance still ranks classes by their votes
_MIN_LOG_ODDS = 1e-6


class CalibratedVote(EMLabelModel):
    """Majority vote's labels with the posterior of a crowd whose annotators share one
    accuracy: a calibrated ``predict_proba`` for the vote.

    The model is Dawid-Skene (1979) with one symmetric confusion matrix for every annotator
    (accuracy ``p`` on the diagonal, ``(1 − p)/(K − 1)`` elsewhere) and equal class weights,
    so an item's posterior depends on its vote counts ``v_ik`` alone:
    ``q_ik ∝ r^{v_ik}`` with ``r = p (K − 1) / (1 − p)``, whose most probable class is the
    most-voted one, ties to the lowest code (``r`` is kept above 1 so that a crowd no better
    than chance still orders the classes by their votes). EM fits ``p``: the expected share of
    all labels equal to their item's class (Eq. 2.3 with the counts pooled over annotators).
    Items without votes get the crowd's vote shares, as :class:`MajorityVote`; gold items
    (``fit(..., gold=...)``) are held at their class and enter ``p``.

    Args:
        max_iter: maximum number of EM iterations.
        tol: stop when the mean log-likelihood per annotation moves by less than this.
        smoothing: pseudo-count of the reported confusion counts and class frequencies.
        progress: show a progress bar over EM iterations.

    Attributes:
        accuracy_: the shared accuracy ``p``.
        log_odds_: ``log r``.
        n_iter_: EM iterations.
        log_likelihood_: the log-likelihood after each iteration.
        posteriors_: (items, K) the item posteriors.
        confusion_matrices_: (annotators, K, K), rows = true class: each annotator's labels
            counted against the posteriors (reported, as :class:`MajorityVote`'s; the
            posterior uses ``p`` alone).
        class_priors_: (K,) the posteriors' class totals, normalised.
    """

    accepts_gold = True
    em_name = "EM"

    def __init__(self, max_iter: int = 100, tol: float = 1e-6, smoothing: float = 0.01,
                 progress: bool = False) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.progress = progress

    # the EM-step protocol (crowd_keras.aggregation.em)
    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        return sufficient_statistics(block.XT, latent)

    def m_step(self, stats: tuple) -> tuple:
        """``(log r, log (r + K − 1), counts, class_mass)`` from the pooled expected counts."""
        counts, class_mass = stats
        k = class_mass.shape[0]
        by_label = counts.reshape(-1, k, k)                    # [annotator, label, truth]
        agreed = np.trace(by_label, axis1=1, axis2=2).sum()
        p = (agreed + self.smoothing) / (counts.sum() + 2 * self.smoothing)
        log_r = max(np.log(p) - np.log1p(-p) + np.log(max(k - 1, 1)), _MIN_LOG_ODDS) \
            if k > 1 else 0.0
        return log_r, np.logaddexp(log_r, np.log(max(k - 1, 1e-300))), counts, class_mass

    def e_step(self, block: Block, state: tuple) -> tuple:
        log_r, log_norm, _, _ = state
        counts = block.label_counts(self.n_classes_)
        logits = counts * log_r
        per_item = block.annotations_per_item()
        empty = per_item == 0
        logits[empty] = np.log(np.maximum(self.vote_shares_, 1e-300))
        if block.item_log_prior is not None:
            logits += block.item_log_prior
        post, lse = softmax_rows(logits, out=logits)
        # log p(labels_i) = log Σ_k (1/K) r^{v_ik} (r + K − 1)^{-n_i}; items without votes: 0
        voted = ~empty
        objective = lse[voted].sum() - voted.sum() * np.log(self.n_classes_) \
            - log_norm * per_item.sum()
        return post, float(objective)

    def finish(self, state: tuple, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "CalibratedVote":
        log_r, log_norm, counts, class_mass = state
        k = summary.n_classes
        self.annotations_ = template
        self.accuracy_ = float(np.exp(log_r - log_norm)) if k > 1 else 1.0
        self.log_odds_ = float(log_r)
        self.confusion_matrices_ = normalize_rows(
            counts.reshape(-1, k, k).transpose(0, 2, 1) + self.smoothing)
        self.class_priors_ = normalize_rows(class_mass + self.smoothing)
        self.log_likelihood_ = np.asarray(history)
        self.n_iter_ = len(history)
        return self

    def _posteriors_for_new(self, new: Annotations) -> np.ndarray:
        return _votes_of_anyone(self, new)

    def _posteriors_for(self, ann: Annotations) -> np.ndarray:
        logits = ann.label_counts().astype(np.float64) * self.log_odds_
        logits[ann.annotations_per_item() == 0] = np.log(np.maximum(self.vote_shares_, 1e-300))
        return softmax_rows(logits, out=logits)[0]

