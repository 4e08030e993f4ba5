"""``expected_accuracy`` divides out the factor each vote actually put in its item's posterior
(``LabelModel.own_vote_factors``). The variational IBCC scores a vote with ``E[log v_akl]``,
not ``log E[v]`` (``confusion_matrices_``), and EBCC per subtype of the true class: divided
by ``E[v]``, their scores kept part of the annotator's own vote. The expected values below
are each model's own E-step on its items with one annotation removed."""
import numpy as np
import pytest

from crowd_keras import Annotations
from scipy.special import log_expit

from crowd_keras.aggregation import BWA, EBCC, GLAD, IBCC, DawidSkene, quality
from crowd_keras.aggregation.bayesian import ebcc as ebcc_module
from crowd_keras.aggregation.bayesian.bwa import bwa_e_step
from crowd_keras.aggregation.bayesian.ebcc import ebcc_e_step
from crowd_keras.aggregation.bayesian.ibcc import ibcc_e_step
from crowd_keras.numerics import normalize_rows, softmax_rows
from crowd_keras.datasets import simulate_crowd


@pytest.fixture(scope="module")
def crowd():
    """Sparse annotators (60 for 300 items, 3 labels an item): their ``q(v)`` are wide,
    where ``exp E[log v]`` and ``E[v]`` differ most."""
    sim = simulate_crowd(n_items=300, n_classes=3, n_annotators=60, annotations_per_item=3,
                         seed=0)
    rng = np.random.default_rng(0)
    truth = np.eye(3)[sim.y]
    probs = 0.3 * truth + 0.7 * rng.dirichlet(np.ones(3), len(sim.y))   # a weak classifier
    return sim.annotations, probs


def leave_one_out(ann):
    """``(pseudo-items, item of each)``: pseudo-item j holds the other annotations of
    annotation j's item (none for an item's only annotation)."""
    starts = ann.item_starts()
    per = np.diff(starts)[ann.items]
    j = np.repeat(np.arange(ann.n_annotations), per)
    other = starts[ann.items[j]] + np.arange(len(j)) - np.repeat(np.cumsum(per) - per, per)
    keep = other != j
    return Annotations(j[keep], ann.annotators[other[keep]], ann.labels[other[keep]],
                       item_ids=np.arange(ann.n_annotations),
                       annotator_ids=ann.annotator_ids, classes=ann.classes), ann.items


def ibcc_e_step_without(model, ann):
    """IBCC's E-step (Kim & Ghahramani 2012, section 3) of each annotation's item without
    that annotation: ``E[log τ] + Σ_{other votes} E[log v]`` (+ the item's log-prior)."""
    rest, item = leave_one_out(ann)
    prior = None if model.item_log_prior_ is None else model.item_log_prior_[item]
    return ibcc_e_step(rest.vote_incidence(), model.state_[0], model.state_[1], prior)[0]


def ebcc_e_step_without(model, ann):
    """EBCC's E-step (Li et al. 2019, section 4) likewise, its subtypes summed per class."""
    rest, item = leave_one_out(ann)
    bias, log_v, live = model.state_[:3]
    prior = None if model.item_log_prior_ is None else model.item_log_prior_[item]
    latent, _ = ebcc_e_step(rest.vote_incidence(), bias, log_v, live, model.num_groups, prior)
    return model.class_posteriors(latent)


def bwa_e_step_without(model, ann):
    """BWA's E-step (Li et al. 2019, section 3) likewise: the precision-weighted average of
    the other votes, normalised."""
    rest, item = leave_one_out(ann)
    weights, mean = model.state_[:2]
    prior = None if model.item_log_prior_ is None else model.item_log_prior_[item]
    scores, _ = bwa_e_step(rest.vote_incidence(), weights, mean, model.lambda_, prior)
    return normalize_rows(np.maximum(scores, 0.0))


def glad_e_step_without(model, ann):
    """GLAD's Eq. 3 likewise, at the item's fitted inverse difficulty ``β``: ``log ρ_k +
    Σ_{other votes} [log σ(x) if l = k else log σ(−x) − log(K − 1)]``, ``x = α_a e^{β_i}``."""
    rest, item = leave_one_out(ann)
    k = ann.n_classes
    x = model.abilities_[rest.annotators] * np.exp(model.log_inverse_difficulties_[item][
        rest.items])
    per_vote = np.repeat((log_expit(-x) - np.log(k - 1))[:, None], k, axis=1)
    per_vote[np.arange(len(x)), rest.labels] = log_expit(x)
    logits = np.log(model.class_priors_) + np.zeros((ann.n_annotations, k))
    np.add.at(logits, rest.items, per_vote)
    if model.item_log_prior_ is not None:
        logits += model.item_log_prior_[item]
    return softmax_rows(logits)[0]


def mean_per_annotator(ann, held):
    score = held[np.arange(ann.n_annotations), ann.labels]
    return np.bincount(ann.annotators, score, ann.n_annotators) / \
        np.bincount(ann.annotators, minlength=ann.n_annotators)


CASES = [(IBCC, {}, ibcc_e_step_without),
         # three live subtypes per class: the vote is divided out of each
         (EBCC, {"num_groups": 3, "a_pi": 10.0}, ebcc_e_step_without),
         # a weighted average, not a product of factors: z / z^{-a} is divided out
         (BWA, {}, bwa_e_step_without),
         # one-coin confusions averaged over an annotator's items, the vote's factor per item
         (GLAD, {}, glad_e_step_without)]
IDS = ["ibcc", "ebcc", "bwa", "glad"]


@pytest.mark.parametrize("with_classifier", [False, True], ids=["votes", "classifier"])
@pytest.mark.parametrize("cls, params, held_out", CASES, ids=IDS)
def test_expected_accuracy_is_the_e_step_without_the_annotators_vote(crowd, cls, params,
                                                                     held_out, with_classifier):
    ann, probs = crowd
    if cls is GLAD and with_classifier:     # GLAD takes gold, not a classifier's prior
        gold = np.full(ann.n_items, -1)
        gold[::7] = probs[::7].argmax(axis=1)
        model = cls(**params).fit(ann, gold=gold)
        assert model.item_log_prior_ is not None
    else:
        model = cls(**params).fit(ann, pred_probs=probs if with_classifier else None)
    if cls is EBCC:
        assert (model.live_subtypes_.sum(axis=1) == 3).all()
    want = mean_per_annotator(ann, held_out(model, ann))
    got = model.annotator_quality_["expected_accuracy"].to_numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)
    # dividing by confusion_matrices_ (E[v]) instead is measurably off
    by_mean = quality.annotator_accuracy(model.posteriors_, ann, model.confusion_matrices_)
    assert np.abs(by_mean - want).max() > 0.02


@pytest.mark.parametrize("cls, params, held_out", CASES, ids=IDS)
def test_blocks_that_split_an_item_change_nothing(crowd, cls, params, held_out, monkeypatch):
    ann, _ = crowd
    model = cls(**params).fit(ann)
    whole = model.annotator_quality_["expected_accuracy"].to_numpy()
    monkeypatch.setattr(quality, "_CELLS", 3 * 7)              # 7 annotations a block
    monkeypatch.setattr(ebcc_module, "_FACTOR_CELLS", 9 * 2)    # 2 votes a block in EBCC
    np.testing.assert_allclose(model.annotator_quality_["expected_accuracy"], whole,
                               atol=1e-14)


def test_dawid_skene_still_divides_by_its_confusion_matrices_to_the_bit(crowd):
    ann, _ = crowd
    model = DawidSkene().fit(ann)
    votes = ann.vote_incidence()
    np.testing.assert_array_equal(model.own_vote_factors(votes, 0, ann.n_annotations),
                                  model.confusion_matrices_[ann.annotators, :, ann.labels])
    np.testing.assert_array_equal(
        model.annotator_quality_["expected_accuracy"],
        quality.annotator_accuracy(model.posteriors_, ann, model.confusion_matrices_))


def test_factors_of_the_wrong_shape_are_an_error(crowd):
    ann, _ = crowd
    model = DawidSkene().fit(ann)
    with pytest.raises(Exception, match=r"factors\(0, \d+\) must have shape"):
        quality.annotator_accuracy(model.posteriors_, ann, model.confusion_matrices_,
                                   factors=lambda start, stop: np.ones((stop - start, 2)))
