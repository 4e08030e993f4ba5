"""IBCC, EBCC and BWA (crowd_keras.aggregation.bayesian) against their authors' code, and on
the EM-step protocol's contract (blocks, gold clamps, new items, parameters).

The authors' code (``../shared/reference/truth_inference``, a peer, imported, never copied)
stops when the posteriors move by less than 1e-3. To compare at 1e-6 its module's ``np`` is
replaced by a namespace whose ``allclose`` asks for 1e-12 and counts its calls (the
reference's iterations); ours then runs exactly that many iterations (``tol=-1``), from the
same start: the same trajectory, however far from its fixed point the reference stopped.
"""
import sys
import types
from typing import Optional

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from conftest import require_data
from crowd_keras import Annotations
from crowd_keras.aggregation import MajorityVote, get_label_model
from crowd_keras.aggregation.bayesian import BWA, EBCC, IBCC
from crowd_keras.aggregation.em import Block, gold_log_prior, run_em
from crowd_keras.datasets import load_labelme, load_music, simulate_crowd

TRUTH_INFERENCE = ("bluebirds", "dog", "product", "weather_sentiment", "adult_content")
SETS = TRUTH_INFERENCE + ("labelme", "music")
MODELS = {"ibcc": IBCC, "ebcc": EBCC, "bwa": BWA}


# ------------------------------------------------------------------ data and the reference
def load_set(name: str) -> Annotations:
    """The set's annotations; repeated (item, worker) answers reduced to the latest (the
    reference gets the same tuples)."""
    if name == "labelme":
        return load_labelme(require_data("labelme")).annotations
    if name == "music":
        return load_music(require_data("music")).annotations
    answers = pd.read_csv(require_data("truth_inference", name, "answer.csv"))
    k = int(answers["answer"].max()) + 1
    return Annotations.from_frame(answers, item="question", annotator="worker", label="answer",
                                  classes=list(range(k)), duplicates="last")


def tuples_of(ann: Annotations) -> np.ndarray:
    """(item, worker, class) rows, as the reference reads them (every code used)."""
    assert (ann.annotations_per_item() > 0).all() and (ann.annotations_per_annotator() > 0).all()
    return np.stack([ann.items, ann.annotators, ann.labels], axis=1).astype(np.int64)


class TightReference:
    """A reference module whose posterior-change test asks for 1e-12 and counts iterations."""

    def __init__(self, module_name: str, monkeypatch, cap: Optional[int] = None) -> None:
        sys.path.insert(0, str(require_data("..", "reference", "truth_inference")))
        try:
            self.module = __import__(module_name)
        finally:
            sys.path.pop(0)
        self.calls = 0

        def allclose(a, b, rtol=1e-5, atol=1e-8):   # ``cap``: stop after that many
            self.calls += 1
            return self.calls == cap or np.allclose(a, b, rtol=0.0, atol=1e-12)

        tight = types.SimpleNamespace(**{n: getattr(np, n) for n in dir(np)
                                         if not n.startswith("__")})
        tight.allclose = allclose
        monkeypatch.setattr(self.module, "np", tight)


# ------------------------------------------------------------------ IBCC = the authors' IBCC
# adult_content runs 455 iterations to 1e-12: 100 of them here (the same trajectory), all slow
@pytest.mark.parametrize("name,cap", [(name, 100 if name == "adult_content" else None)
                                      for name in SETS]
                         + [pytest.param("adult_content", None, marks=pytest.mark.slow)])
def test_ibcc_matches_reference(name, cap, monkeypatch):
    ann = load_set(name)
    ref = TightReference("ibcc", monkeypatch, cap)
    expected = ref.module.ibcc(tuples_of(ann), a_v=4, b_v=1, alpha=1)
    model = IBCC(a_v=4, b_v=1, alpha=1, max_iter=ref.calls, tol=-1.0,
                 labeling_functions="ignore").fit(ann)
    assert model.n_iter_ == ref.calls and (cap is None or ref.calls == cap)
    np.testing.assert_allclose(model.posteriors_, expected, rtol=0, atol=1e-6)


# ------------------------------------------------------------------ EBCC = the authors' EBCC
def reference_start(ann: Annotations, seed: int = 1234, groups: int = 10) -> np.ndarray:
    """The authors' start: the soft vote times ``np.random.dirichlet`` after ``seed``."""
    vote = ann.label_counts() / ann.annotations_per_item()[:, None]
    np.random.seed(seed)
    return np.random.dirichlet(np.ones(groups), vote.shape) * vote[:, :, None]


# (set, empirical_prior, iterations, prune_below): iterations None runs to the reference's own
# 1e-12 stop, a number caps both (the same trajectory, a shorter test); prune_below 0 is the
# exact VB, the default 1e-10 drops dead subtypes (the same posteriors to 1e-6)
EBCC_CASES = [("bluebirds", False, None, 0.0), ("bluebirds", True, None, 1e-10),
              ("dog", True, None, 1e-10), ("weather_sentiment", False, 60, 1e-10),
              ("labelme", True, 40, 1e-10), ("music", False, 30, 1e-10),
              ("product", True, 20, 1e-10), ("adult_content", False, 10, 1e-10),
              pytest.param("weather_sentiment", True, None, 1e-10, marks=pytest.mark.slow),
              pytest.param("labelme", False, None, 1e-10, marks=pytest.mark.slow),
              pytest.param("music", True, None, 1e-10, marks=pytest.mark.slow),
              pytest.param("product", False, None, 1e-10, marks=pytest.mark.slow),
              pytest.param("adult_content", True, 60, 1e-10, marks=pytest.mark.slow)]


@pytest.mark.parametrize("name,empirical,cap,prune", EBCC_CASES)
def test_ebcc_matches_reference(name, empirical, cap, prune, monkeypatch):
    ann = load_set(name)
    ref = TightReference("ebcc", monkeypatch)
    expected, _ = ref.module.ebcc_vb(tuples_of(ann), num_groups=10, a_pi=0.1, alpha=1, a_v=4,
                                     b_v=1, seed=1234, max_iter=cap or 500,
                                     empirical_prior=empirical)
    model = EBCC(num_groups=10, a_pi=0.1, alpha=1, a_v=4, b_v=1, empirical_prior=empirical,
                 init=reference_start(ann), prune_below=prune, max_iter=ref.calls, tol=-1.0,
                 labeling_functions="ignore").fit(ann)
    assert model.n_iter_ == ref.calls and (cap is None or ref.calls == cap)
    np.testing.assert_allclose(model.posteriors_, expected, rtol=0, atol=1e-6)


def test_ebcc_elbo_is_the_references_up_to_its_prior_constants(monkeypatch):
    """The authors' ELBO leaves out the priors' normalisers ``−log B(·)``; with them added it
    is ours, at the same converged point, for every seed."""
    from scipy.special import gammaln

    ann = load_set("bluebirds")
    ref = TightReference("ebcc", monkeypatch)
    k, m, a_pi = ann.n_classes, 10, 0.1

    def log_beta(a):
        return gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))

    beta = np.eye(k) * 3.0 + 1.0
    constants = -(ann.n_annotators * m * log_beta(beta).sum() + k * log_beta(np.full(m, a_pi / m))
                  + log_beta(np.ones(k)))
    for seed in (1, 2):
        ref.calls = 0
        _, elbo = ref.module.ebcc_vb(tuples_of(ann), seed=seed, max_iter=2000)
        model = EBCC(init=reference_start(ann, seed), max_iter=ref.calls, tol=-1.0,
                     prune_below=0.0, labeling_functions="ignore").fit(ann)
        assert model.elbo_ == pytest.approx(elbo + constants, abs=1e-6)



def test_ebcc_empirical_prior_with_a_class_no_one_voted_has_a_finite_elbo():
    """The empirical prior gives an unvoted class no mass (α_k = 0): the class gets no
    posterior and the ELBO stays a number (its Dirichlets' KL is over the other classes)."""
    labels = np.random.default_rng(2).integers(1, 3, (30, 4))     # class 0 is never used
    ann = Annotations.from_dense(labels, classes=[0, 1, 2])
    model = EBCC(empirical_prior=True).fit(ann)
    assert np.isfinite(model.elbo_)
    assert model.class_priors_[0] == 0 and (model.posteriors_[:, 0] == 0).all()
    np.testing.assert_allclose(model.posteriors_.sum(axis=1), 1.0)

def test_ebcc_start_is_per_item():
    ann = small_crowd(4)
    model = EBCC(max_iter=1).fit(ann)
    model.init_state(Block.from_annotations(ann).summary(ann.n_classes))
    whole = model.initial_latent(Block.from_annotations(ann))[0]
    part = model.initial_latent(Block.from_annotations(ann.subset(np.arange(50, 80))))[0]
    np.testing.assert_array_equal(part, whole[50:80])
    other = clone(model).set_params(seed=7)
    other.init_state(Block.from_annotations(ann).summary(ann.n_classes))
    assert not np.allclose(other.initial_latent(Block.from_annotations(ann))[0], whole)
    # each (item, class) draw is a Dirichlet(1, ..., 1) times the soft vote
    draws = whole.reshape(ann.n_items, ann.n_classes, -1)
    np.testing.assert_allclose(draws.sum(axis=2), ann.label_counts(normalize=True))
    assert abs(draws[:, 0].max(axis=1).mean() / draws[:, 0].sum(axis=1).mean()
               - np.mean([1 / k for k in range(1, 11)]) * 1.0) < 0.05


def test_ebcc_names_a_seed_too_large_for_its_64_bit_draws():
    # the other seeded models take any integer >= 0; here numpy's OverflowError named nothing
    with pytest.raises(ValueError, match=r"EBCC seed must be an integer below 2\*\*64"):
        EBCC(seed=2 ** 64).fit(small_crowd(4))
    assert EBCC(seed=2 ** 64 - 1, max_iter=2).fit(small_crowd(4)).n_iter_ == 2


def test_subtype_draws_blocks_change_no_bit(monkeypatch):
    """The in-place draws, block by block (several blocks, the last one short), equal the
    whole-array formula of the docstring bit for bit, for integer and string ids."""
    from crowd_keras import numerics
    from crowd_keras.aggregation.bayesian import ebcc

    def whole(ids, k, m, seed):
        key = pd.util.hash_array(ids.astype(object) if ids.dtype.kind not in "iub" else ids)
        with np.errstate(over="ignore"):
            key = numerics.mix64(key.astype(np.uint64)
                              + numerics.mix64(np.array([seed], dtype=np.uint64)))
            words = numerics.mix64(key[:, None]
                                + np.arange(1, k * m + 1, dtype=np.uint64) * numerics.GOLDEN64)
        draws = -np.log(((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53)
        draws = draws.reshape(len(ids), k, m)
        return draws / draws.sum(axis=2, keepdims=True)

    monkeypatch.setattr(ebcc, "_DRAW_BLOCK", 64 * 12)
    for ids in (np.arange(1000, 1301), np.array([f"item {i}" for i in range(130)], dtype=object)):
        np.testing.assert_array_equal(ebcc.subtype_draws(ids, 3, 4, 99), whole(ids, 3, 4, 99))
    # and on threads (blocks of items, each its own blocks of rows)
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", "3")
    ids = np.arange(1000, 1301)
    np.testing.assert_array_equal(ebcc.subtype_draws(ids, 3, 4, 99), whole(ids, 3, 4, 99))
    assert ebcc.subtype_draws(ids[:0], 3, 4, 99).shape == (0, 3, 4)


# ------------------------------------------------------------------ BWA = the authors' BWA
@pytest.mark.parametrize("name", SETS)
def test_bwa_matches_reference(name, monkeypatch):
    ann = load_set(name)
    ref = TightReference("bwa", monkeypatch)
    expected = ref.module.bwa(tuples_of(ann), a_v=15, lambda_=1, prior_correction=True)
    model = BWA(a_v=15, lambda_=1, prior_correction=True, max_iter=3000, tol=1e-13,
                labeling_functions="ignore").fit(ann)
    assert model.n_iter_ < 3000
    np.testing.assert_allclose(model.scores_, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.posteriors_, expected / expected.sum(axis=1)[:, None],
                               rtol=0, atol=1e-6)


# ------------------------------------------------------------------ the protocol's contract
def small_crowd(seed: int = 0) -> Annotations:
    return simulate_crowd(n_items=300, n_classes=3, n_annotators=12, annotations_per_item=4,
                          seed=seed).annotations


def test_bwa_vote_spread_is_made_once_per_block(monkeypatch):
    """BWA's vote spread ``Σ_i c_ik − c_ik² / n_i`` (the votes alone) is counted once per
    block, not in every iteration (it read the block's vote counts each time), and is the
    formula's."""
    from crowd_keras.aggregation.bayesian.bwa import bwa_statistics
    ann = small_crowd()
    reads = []
    counts_of = Block.label_counts
    monkeypatch.setattr(Block, "label_counts",
                        lambda self, k: reads.append(k) or counts_of(self, k))
    model = BWA(max_iter=20, tol=-1.0, labeling_functions="ignore").fit(ann)
    assert model.n_iter_ == 20
    assert len(reads) <= 2               # the soft-vote start and the spread
    block = Block.from_annotations(ann)
    c = ann.label_counts().astype(np.float64)
    want = (c - c ** 2 / c.sum(axis=1, keepdims=True)).sum(axis=0)
    spread = bwa_statistics(block, model.posteriors_)[2]
    np.testing.assert_allclose(spread, want, rtol=1e-12)
    assert bwa_statistics(block, model.posteriors_)[2] is spread


@pytest.mark.parametrize("name", sorted(MODELS))
def test_blocks_sum_to_one_fit(name):
    ann = small_crowd()
    k = ann.n_classes
    model = get_label_model(name, max_iter=15, tol=-1.0, labeling_functions="ignore")
    whole = Block.from_annotations(ann)
    one = run_em(model, [whole], whole.summary(k))
    parts = np.array_split(np.arange(ann.n_items), 3)
    blocks = [whole.subset(np.isin(np.arange(ann.n_items), rows)) for rows in parts]
    summary = blocks[0].summary(k) + blocks[1].summary(k) + blocks[2].summary(k)
    split = run_em(clone(model), blocks, summary)
    post_one = one.runner.class_posteriors(one.latents[0])
    post_split = np.concatenate([split.runner.class_posteriors(lat) for lat in split.latents])
    np.testing.assert_allclose(post_split, post_one, rtol=0, atol=1e-10)
    np.testing.assert_allclose(split.history, one.history, rtol=1e-10)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gold_clamp(name):
    ann = small_crowd(1)
    # clamp items to the class their votes favour least: only the prior can put them there
    least = np.argmin(ann.label_counts() + 1e-3 * np.arange(ann.n_classes), axis=1)
    gold = np.arange(0, ann.n_items, 10)
    prior = gold_log_prior(ann.n_items, ann.n_classes, gold, least[gold])
    model = get_label_model(name, labeling_functions="ignore").fit_block(ann, prior)
    np.testing.assert_array_equal(model.predict()[gold], least[gold])
    np.testing.assert_allclose(model.posteriors_[gold, least[gold]], 1.0, atol=1e-12)
    free = get_label_model(name, labeling_functions="ignore").fit(ann)
    assert (free.predict()[gold] != least[gold]).mean() > 0.5   # the clamp did the work


@pytest.mark.parametrize("name", sorted(MODELS))
def test_predict_proba_new_items(name):
    ann = small_crowd(2)
    model = get_label_model(name, labeling_functions="ignore").fit(ann)
    np.testing.assert_allclose(model.predict_proba(ann), model.posteriors_, atol=1e-8)
    half = ann.subset(np.arange(0, ann.n_items, 2))
    new = model.predict_proba(half)
    assert new.shape == (half.n_items, ann.n_classes)
    np.testing.assert_allclose(new.sum(axis=1), 1.0)
    # an item's posterior under the fitted state depends on its own annotations only
    np.testing.assert_allclose(new, model.posteriors_[::2], atol=1e-8)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_surface_and_params(name):
    ann = small_crowd(3)
    model = get_label_model(name)
    assert set(vars(model)) == set(model.get_params())               # no work in __init__
    twin = clone(model.set_params(max_iter=7))
    assert twin.get_params() == model.get_params() and twin is not model
    with pytest.raises(TypeError):
        type(model)(no_such_setting=1)
    fitted = model.fit(ann)
    k, a = ann.n_classes, ann.n_annotators
    assert fitted.posteriors_.shape == (ann.n_items, k)
    np.testing.assert_allclose(fitted.posteriors_.sum(axis=1), 1.0)
    np.testing.assert_allclose(fitted.class_priors_.sum(), 1.0)
    assert fitted.confusion_matrices_.shape == (a, k, k)
    np.testing.assert_allclose(fitted.confusion_matrices_.sum(axis=2), 1.0)
    quality = fitted.annotator_quality_
    assert list(quality.columns) == ["annotator", "n_annotations", "accuracy", "expected_accuracy"]
    assert ((quality["accuracy"] > 0) & (quality["accuracy"] < 1)).all()
    assert 1 <= fitted.n_iter_ <= 7
    truth = simulate_crowd(n_items=300, n_classes=3, n_annotators=12, annotations_per_item=4,
                           seed=3).y
    vote = (MajorityVote().fit(ann).predict() == truth).mean()
    assert (fitted.predict() == truth).mean() >= vote - 0.02
    # a long frame and the reader's keyword arguments, as every label model takes them
    frame = ann.to_frame(item="q", annotator="w", label="y")
    again = clone(fitted).fit(frame, item="q", annotator="w", label="y")
    np.testing.assert_allclose(again.posteriors_, fitted.posteriors_, atol=1e-12)
    with pytest.raises(TypeError):
        clone(fitted).fit(frame, item="q", annotator="w", label="y", no_such_reader_option=1)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bad_settings_raise(name):
    with pytest.raises(ValueError, match="must be a positive number"):
        get_label_model(name, a_v=-1).fit(small_crowd())


def test_ebcc_empirical_prior_refuses_gold_on_a_class_no_vote_names():
    """The empirical prior gives such a class no mass: the gold item is impossible under the
    model and elbo_ was -inf for every seed (the best-of-seeds choice returned the first)."""
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import EBCC

    labels = np.random.default_rng(2).integers(1, 3, (30, 4))      # classes 1 and 2 only
    ann = Annotations.from_dense(labels, classes=[0, 1, 2])
    with pytest.raises(CrowdDataError, match=r"gold holds the class code\(s\) \[0\], which no "
                                             r"vote names"):
        EBCC(empirical_prior=True).fit(ann, gold={3: 0})
    assert np.isfinite(EBCC(empirical_prior=True).fit(ann, gold={3: 1}).elbo_)
    assert np.isfinite(EBCC().fit(ann, gold={3: 0}).elbo_)


@pytest.mark.parametrize("empty_rows", [0.0, 0.6])
@pytest.mark.parametrize("threads", [1, 3])
def test_confusion_expectations_reuse_the_prior_on_rows_nobody_gave(monkeypatch, empty_rows,
                                                                     threads):
    """``expected_log_confusions`` equals ``ψ(mu) − ψ(Σ_l mu)`` computed everywhere, whether
    or not some annotators never gave some labels (rows of nil counts), in blocks of
    annotators (here of 2, some blocks without a nil row) on one thread or several: the
    blocks change no bit."""
    from scipy.special import digamma

    from crowd_keras import numerics
    from crowd_keras.aggregation.bayesian import base
    from crowd_keras.aggregation.bayesian.base import (confusion_prior,
                                                       expected_log_confusions)
    rng = np.random.default_rng(3)
    counts = rng.gamma(0.5, 2.0, size=(30, 4, 6))
    counts[rng.random((30, 4)) < empty_rows] = 0.0
    prior = confusion_prior(4, 2.0, 1.0)[:, [0, 0, 1, 2, 3, 3]]
    mu, expected = expected_log_confusions(counts, prior)
    want = counts + prior[None]
    np.testing.assert_array_equal(mu, want)
    np.testing.assert_allclose(expected, digamma(want) - digamma(want.sum(1, keepdims=True)),
                               rtol=0, atol=1e-13)
    monkeypatch.setattr(base, "_CONFUSION_BLOCK", 48)
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", str(threads))
    blocked = expected_log_confusions(counts, prior)
    assert all(np.array_equal(a, b) for a, b in zip(blocked, (mu, expected)))


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("gold", [False, True])
def test_bwa_e_step_in_runs_of_items_is_the_averages_formula(monkeypatch, threads, gold):
    """BWA's E-step (Li et al. 2019, section 3) computed a few items at a time in the
    product's row blocks on threads: the same bits as the formula over the whole crowd,
    gold clamps included; and the statistics' [z | z²] product is the plain one."""
    from crowd_keras import numerics
    from crowd_keras.aggregation.bayesian import bwa
    ann = simulate_crowd(n_items=300, n_classes=3, n_annotators=20, annotations_per_item=4,
                         seed=2).annotations
    block = Block.from_annotations(ann)
    model = BWA(max_iter=3, tol=-1.0)
    weights, mean = run_em(model, [block], block.summary(3)).state[:2]
    prior = gold_log_prior(300, 3, np.arange(0, 300, 9), np.arange(0, 300, 9) % 3) \
        if gold else None
    sums = np.asarray(block.X @ weights)
    agree, total = sums[:, :3], sums[:, 3:]
    z = (1.0 * mean + agree) / (1.0 + total)
    if gold:
        allowed = np.exp(prior - prior.max(axis=1, keepdims=True))
        z = z * allowed
        known = (allowed > 0).sum(axis=1) == 1
        z[known] = allowed[known]
    fit = agree - 2.0 * z * agree + z * z * total + 1.0 * (z - mean) ** 2
    monkeypatch.setattr(bwa, "_E_STEP_ROWS", 7)
    monkeypatch.setattr(numerics, "_PARALLEL_WORK", 1)
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    monkeypatch.setenv("CROWD_KERAS_THREADS", str(threads))
    scores, objective = bwa.bwa_e_step(block.X, weights, mean, 1.0, prior)
    assert np.array_equal(scores, z)
    assert objective == float(-0.5 * fit.sum())
    products = bwa.bwa_statistics(block, scores)[0]
    np.testing.assert_allclose(products, np.asarray(block.X.T @ np.c_[z, z * z]),
                               rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["dawid_skene", "ibcc", "ebcc", "bwa"])
def test_fits_on_threads_equal_the_one_thread_fit(monkeypatch, name):
    """Large products and softmaxes run on threads (crowd_keras.numerics): the same labels,
    and posteriors within rounding of the one-thread fit (the transposed products' column
    blocks add up in another order)."""
    from crowd_keras import numerics
    monkeypatch.setattr(numerics, "_PARALLEL_WORK", 1)             # every call on threads
    monkeypatch.setattr(numerics, "_PARALLEL_VALUES", 1)
    ann = simulate_crowd(n_items=600, n_classes=3, n_annotators=25, annotations_per_item=4,
                         seed=5).annotations
    monkeypatch.setenv("CROWD_KERAS_THREADS", "1")
    serial = get_label_model(name).fit(ann)
    monkeypatch.setenv("CROWD_KERAS_THREADS", "2")
    threaded = get_label_model(name).fit(ann)
    assert serial.n_iter_ == threaded.n_iter_
    np.testing.assert_allclose(threaded.posteriors_, serial.posteriors_, rtol=0, atol=1e-9)
    assert np.array_equal(threaded.predict(ann), serial.predict(ann))


def test_bwa_precision_of_a_class_nobody_disagrees_on_stays_finite():
    """A class whose votes never disagree has no spread and no residual: its precision was
    about 1e301, the vote factors overflowed or cancelled to 0, and expected_accuracy read 0
    for perfect annotators."""
    import warnings
    rows = [(i, w, i % 2) for i in range(6) for w in "abc"]           # every item unanimous
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = BWA().fit(pd.DataFrame(rows, columns=["task", "worker", "label"]))
        quality = model.annotator_quality_
    assert np.isfinite(model.precisions_).all()
    assert np.allclose(quality["expected_accuracy"], 1.0, atol=1e-6)
    rng = np.random.default_rng(0)                     # class 2 always agreed on, 0/1 noisy
    rows = [(i, a, 2 if i % 3 == 2 else (i % 3 if rng.random() < 0.8 else 1 - i % 3))
            for i in range(60) for a in range(5)]
    quality = BWA().fit(pd.DataFrame(rows, columns=["task", "worker", "label"])
                        ).annotator_quality_
    assert (quality["expected_accuracy"] > 0.6).all(), quality


@pytest.mark.parametrize("name", ["ibcc", "ebcc", "bwa"])
def test_a_refused_refit_leaves_the_previous_fit_whole(name):
    """max_iter=0 was refused only after the new crowd's classes were set: the 3-class
    model then scored new annotations with 4 columns."""
    from crowd_keras.errors import CrowdDataError
    crowd = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, seed=4).annotations
    other = simulate_crowd(n_items=40, n_classes=4, n_annotators=6, seed=5).annotations
    model = get_label_model(name).fit(crowd)
    before = model.predict_proba(crowd.to_frame().iloc[:6])
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1, got 0"):
        model.set_params(max_iter=0).fit(other)
    model.set_params(max_iter=500)
    assert np.array_equal(model.predict_proba(crowd.to_frame().iloc[:6]), before)
    if name != "ebcc":
        return
    wider = Annotations(crowd.items, crowd.annotators, crowd.labels, item_ids=crowd.item_ids,
                        annotator_ids=crowd.annotator_ids, classes=[0, 1, 2, 3])
    model = EBCC(empirical_prior=True).fit(crowd)
    with pytest.raises(CrowdDataError, match=r"class code\(s\) \[3\], which no vote names"):
        model.fit(wider, gold={crowd.item_ids[0]: 3})
    assert model.confusion_matrices_.shape == (6, 3, 3)
    assert model.annotator_quality_.shape[0] == 6


def test_ebcc_elbo_reads_its_own_alpha():
    """The class prior was rebuilt as ν − Σ(η − a_pi/M): with a tiny alpha the rounding of
    the class mass made it <= 0, and the fit blamed gold and an empirical prior it had not
    been given."""
    crowd = simulate_crowd(n_items=50, n_classes=3, n_annotators=6, seed=7).annotations
    tiny = EBCC(alpha=1e-15).fit(crowd)
    assert np.isfinite(tiny.elbo_)
    assert np.array_equal(tiny.state_[6], np.full(3, 1e-15))
    usual = EBCC().fit(crowd)
    assert np.array_equal(usual.state_[6], np.ones(3))


@pytest.mark.parametrize("name, attribute", [("bwa", "scores_"), ("ebcc", "elbo_"),
                                             ("ibcc", "state_")])
def test_crowd_attributes_after_the_labeling_function_fit_say_why(name, attribute):
    rng = np.random.default_rng(0)
    votes = np.full((120, 6), -1)
    truth = rng.integers(0, 2, 120)
    for j in range(6):
        votes[(rng.random(120) < 0.5) & (truth == j % 2), j] = j % 2
    model = get_label_model(name).fit(votes)
    assert model.regime_ == "labeling_functions"
    with pytest.raises(AttributeError, match=rf"has no {attribute}: .*labeling_functions="
                                             r"'ignore'"):
        getattr(model, attribute)
    assert not hasattr(model, "not_an_attribute")


# ------------------------------------------------------------------ EBCC in float32
@pytest.mark.parametrize("name", ["music", "bluebirds"])
def test_ebcc_in_float32_is_the_float64_fit_to_rounding(name):
    """``dtype="float32"``: the (items, subtypes) posteriors and the two sparse products in
    float32, the statistics and the M-step in float64: the same labels and iterations, the
    posteriors and the ELBO within float32 rounding of the float64 fit."""
    ann = load_set(name)
    double = EBCC(labeling_functions="ignore").fit(ann)
    single = EBCC(labeling_functions="ignore", dtype="float32").fit(ann)
    assert single.posteriors_.dtype == np.float64 and single.n_iter_ == double.n_iter_
    np.testing.assert_allclose(single.posteriors_, double.posteriors_, rtol=0, atol=1e-4)
    assert np.array_equal(single.predict(), double.predict())
    assert abs(single.elbo_ - double.elbo_) <= 1e-6 * abs(double.elbo_)
    assert 0 < np.abs(single.posteriors_ - double.posteriors_).max()    # float32 was used


def test_ebcc_float32_runs_its_products_in_float32_and_keeps_every_path(monkeypatch):
    """Gold clamps, new items, blocks and threads in float32; the products' arguments are
    float32 (not float64 copies), the statistics summed in float64."""
    from crowd_keras.aggregation.bayesian import ebcc
    seen = []
    product = ebcc.sparse_dot_of_blocks

    def spy(matrix, blocks):
        seen.append((matrix.dtype, {np.asarray(b).dtype for b in blocks}))
        return product(matrix, blocks)

    monkeypatch.setattr(ebcc, "sparse_dot_of_blocks", spy)
    ann = small_crowd(1)
    least = np.argmin(ann.label_counts() + 1e-3 * np.arange(ann.n_classes), axis=1)
    gold = np.arange(0, ann.n_items, 10)
    prior = gold_log_prior(ann.n_items, ann.n_classes, gold, least[gold])
    model = EBCC(labeling_functions="ignore", dtype="float32").fit_block(ann, prior)
    assert seen and all(m == np.float32 and b == {np.dtype(np.float32)} for m, b in seen)
    np.testing.assert_array_equal(model.predict()[gold], least[gold])
    half = ann.subset(np.arange(0, ann.n_items, 2))
    np.testing.assert_allclose(model.predict_proba(half),
                               EBCC(labeling_functions="ignore").fit_block(ann, prior)
                               .predict_proba(half), atol=1e-4)
    k = ann.n_classes
    whole = Block.from_annotations(ann)
    single = EBCC(labeling_functions="ignore", dtype="float32", max_iter=10, tol=-1.0)
    one = run_em(single, [whole], whole.summary(k))
    blocks = [whole.subset(np.arange(ann.n_items) % 3 == r) for r in range(3)]
    split = run_em(clone(single), blocks, sum((b.summary(k) for b in blocks[1:]),
                                              blocks[0].summary(k)))
    post_one = one.runner.class_posteriors(one.latents[0])
    order = np.concatenate([np.flatnonzero(np.arange(ann.n_items) % 3 == r) for r in range(3)])
    post_split = np.concatenate([split.runner.class_posteriors(lat) for lat in split.latents])
    np.testing.assert_allclose(post_split, post_one[order], rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "int64", None, True, 3, "double precision"])
def test_ebcc_dtype_other_than_float64_or_float32_is_refused_by_name(dtype):
    # np.dtype(None) is float64 and numpy compares a dtype equal to None: both refused
    with pytest.raises(ValueError, match=r"EBCC: dtype must be 'float64' or 'float32', got"):
        EBCC(dtype=dtype).fit(small_crowd())
