"""LIA-E's numpy EM (``crowd_keras.lia.em.FeatureFreeLIA``) against the Keras trainer.

The numpy engine claims the trainer's model, objective, optimiser and batches with the
gradients written out: from the same starting weights the two must give the same fit, step
for step, to float32 rounding. Each case below changes one thing the gradients or the
optimiser depend on (full batch or minibatches that repeat an item, the latent size, the
annotator penalty: Cauchy, L2 or none, which makes the table's update lazy).
"""
from __future__ import annotations

import keras
import numpy as np
import pytest

from crowd_keras.aggregation.dawid_skene import DawidSkene
from crowd_keras.datasets import simulate_crowd
from crowd_keras.errors import CrowdDataError
from crowd_keras.lia.em import FeatureFreeLIA, lia_batch_size
from crowd_keras.lia.model import WEIGHT_SHAPES
from crowd_keras.lia.label_model import LIA
from crowd_keras.lia.trainer import LIATrainer

CASES = {
    # name: (items, settings)
    "full batch, Cauchy": (300, dict(annotator_l2=0.3, annotator_scale=1.0)),
    "minibatches repeating items": (700, dict(annotator_l2=0.3, annotator_scale=1.0,
                                              batch_size=160)),
    "latent 2, L2": (300, dict(latent_dim=2, annotator_l2=1.0, annotator_scale=None)),
    "no annotator penalty (lazy table)": (400, dict(annotator_l2=0.0, batch_size=128)),
}


# Minibatches (and a table without a penalty) update rows lazily: the numpy engine as the
# trainer's LazyAdam does on TensorFlow; on JAX and torch LazyAdam is Adam.
LAZY = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                          reason="LazyAdam's sparse update is TensorFlow's (elsewhere it is Adam)")


def _fit_both(n_items: int, settings: dict, em_iterations: int = 3, m_steps: int = 15):
    sim = simulate_crowd(n_items=n_items, n_classes=3, n_annotators=25,
                         annotations_per_item=4, seed=11)
    ann = sim.annotations
    post = DawidSkene(labeling_functions="ignore").fit(ann).posteriors_
    common = dict(num_classes=ann.n_classes, instance_l2=100.0, classifier_l2=100.0,
                  em_iterations=em_iterations, m_steps=m_steps, tol=0.0, seed=0, **settings)
    trainer_kw = dict(common, hidden_units=(), marginal_steps=0)
    start = LIATrainer(**trainer_kw).initial_weights(ann, post)
    keras_fit = LIATrainer(**trainer_kw).fit(None, ann, initial_posteriors=post)
    numpy_fit = FeatureFreeLIA(**common).fit(ann, initial_posteriors=post, initial_weights=start)
    return ann, keras_fit, numpy_fit


@pytest.mark.parametrize("case", [pytest.param(c, marks=LAZY) if "batch_size" in CASES[c][1]
                                  else c for c in sorted(CASES)])
def test_numpy_em_is_the_trainers_fit(case):
    n_items, settings = CASES[case]
    ann, keras_fit, numpy_fit = _fit_both(n_items, settings)
    if "batch_size" in settings:   # the case is there to cover batches holding an item twice
        assert n_items % settings["batch_size"] != 0
    np.testing.assert_allclose(numpy_fit.posteriors_, keras_fit.posteriors_, atol=2e-5)
    np.testing.assert_allclose([h["loss"] for h in numpy_fit.history_],
                               [h["loss"] for h in keras_fit.history_], rtol=2e-5)
    assert numpy_fit.n_iter_ == keras_fit.n_iter_ == 3
    # the fitted tensors of Eq. 1 too, not only the posteriors they give
    np.testing.assert_allclose(numpy_fit.competence_tensors(), keras_fit.competence_tensors(),
                               atol=2e-4)
    np.testing.assert_allclose(numpy_fit.difficulty_tensors(), keras_fit.difficulty_tensors(),
                               atol=2e-4)
    np.testing.assert_allclose(numpy_fit.predict_proba(), keras_fit.predict_proba(), atol=2e-5)


def test_label_model_engines_and_the_trainer_built_from_numpy_weights():
    """``LIA`` runs numpy feature-free and Keras with features; ``trainer_`` after a numpy
    fit is a Keras trainer holding the numpy weights: its E-step, competence and confusions
    are the numpy model's."""
    sim = simulate_crowd(n_items=200, n_classes=3, n_annotators=20, annotations_per_item=3,
                         seed=2)
    ann = sim.annotations
    model = LIA(em_iterations=2, m_steps=10, seed=0).fit(ann)
    assert isinstance(model.engine_, FeatureFreeLIA) and "_trainer" not in vars(model)
    trainer = model.trainer_
    assert isinstance(trainer, LIATrainer) and model.trainer_ is trainer
    np.testing.assert_allclose(trainer.posteriors(None, ann), model.posteriors_, atol=1e-5)
    np.testing.assert_allclose(
        trainer.predict_competence(None, class_probs=model.posteriors_),
        model.predict_competence(), atol=1e-5)
    q = trainer.confusions()                                           # (items, A, K, K)
    direct = np.einsum("iak,ik->a", np.diagonal(q, axis1=-2, axis2=-1), model.posteriors_)
    np.testing.assert_allclose(model.expected_accuracy_, direct / ann.n_items, atol=1e-5)
    assert model.n_iter_ == trainer.n_iter_ == 2
    # new annotations of the fitted items: the numpy E-step
    np.testing.assert_allclose(model.predict_proba(ann), model.posteriors_, atol=1e-6)
    # a refit forgets the trainer built for the previous fit
    model.fit(ann)
    assert "_trainer" not in vars(model)
    # with features, or hidden layers, or marginal fine-tuning: the Keras trainer
    with_features = LIA(em_iterations=1, m_steps=3, seed=0).fit(ann, features=sim.x)
    assert isinstance(with_features.engine_, LIATrainer)
    assert with_features.trainer_ is with_features.engine_
    keras = LIA(em_iterations=1, m_steps=3, seed=0, engine="keras").fit(ann)
    assert isinstance(keras.engine_, LIATrainer)
    assert isinstance(LIA(em_iterations=1, m_steps=3, seed=0, marginal_steps=2)
                      .fit(ann).engine_, LIATrainer)
    with pytest.raises(ValueError, match="engine='numpy' fits LIA-E only"):
        LIA(engine="numpy", hidden_units=(4,)).fit(ann)
    with pytest.raises(ValueError, match="engine must be"):
        LIA(engine="jax").fit(ann)


def test_numpy_em_is_seeded_and_checks_its_inputs():
    sim = simulate_crowd(n_items=150, n_classes=3, n_annotators=12, annotations_per_item=3,
                         seed=6)
    ann = sim.annotations
    kw = dict(em_iterations=2, m_steps=5, seed=3)
    a = FeatureFreeLIA(**kw).fit(ann)
    b = FeatureFreeLIA(**kw).fit(ann)
    np.testing.assert_array_equal(a.posteriors_, b.posteriors_)
    assert set(a.weights_) == set(WEIGHT_SHAPES)
    assert all(w.flags.c_contiguous and w.dtype == np.float32 for w in a.weights_.values())
    other = FeatureFreeLIA(**dict(kw, seed=4)).fit(ann)
    assert not np.array_equal(a.weights_["truth_embedding"], other.weights_["truth_embedding"])
    with pytest.raises(CrowdDataError, match="initial_posteriors must be"):
        FeatureFreeLIA(**kw).fit(ann, initial_posteriors=np.ones((3, 3)))
    weights = dict(a.weights_)
    weights["truth_kernel"] = weights["truth_kernel"][:, :2]
    with pytest.raises(ValueError, match=r"initial_weights\['truth_kernel'\] must have shape"):
        FeatureFreeLIA(**kw).fit(ann, initial_weights=weights)
    with pytest.raises(ValueError, match="must name exactly"):
        FeatureFreeLIA(**kw).fit(ann, initial_weights={"truth_kernel": 0})
    with pytest.raises(CrowdDataError, match="item codes in"):
        a.difficulty_tensors([150])
    with pytest.raises(RuntimeError, match="not fitted"):
        FeatureFreeLIA().competence_tensors()


def test_numpy_em_posteriors_refuse_annotations_with_more_classes_naming_them():
    # was numpy's "IndexError: index 3 is out of bounds for axis 0 with size 3" from the E-step
    from crowd_keras import Annotations
    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=6)
    ann = sim.annotations
    model = FeatureFreeLIA(em_iterations=1, m_steps=2, seed=0).fit(ann)
    wider = Annotations(ann.items, ann.annotators, np.where(ann.labels == 0, 3, ann.labels),
                        n_items=ann.n_items, n_annotators=ann.n_annotators, n_classes=4)
    with pytest.raises(CrowdDataError, match="annotations have 4 classes; the model has 3"):
        model.posteriors(annotations=wider)


@LAZY   # batches of 64
def test_items_without_annotations_and_e_step_blocks(monkeypatch):
    """Items that nobody labelled (two in three here) sit in the batches and the E-step's
    blocks without taking annotations from their neighbours: the same fit as the trainer,
    and the same posteriors whatever the E-step's block size."""
    import crowd_keras.lia.model as lia_model
    from crowd_keras import Annotations

    rng = np.random.default_rng(0)
    items = np.sort(rng.choice(np.arange(0, 300, 3), 900))
    ann = Annotations.from_frame(__import__("pandas").DataFrame(
        {"task": items, "worker": rng.integers(0, 20, 900), "label": rng.integers(0, 3, 900)}
    ).drop_duplicates(["task", "worker"]), item_ids=np.arange(300), classes=[0, 1, 2])
    assert (ann.annotations_per_item() == 0).sum() == 200
    kw = dict(num_classes=3, em_iterations=2, m_steps=5, batch_size=64, tol=0.0, seed=0,
              instance_l2=100.0, classifier_l2=100.0, annotator_l2=0.3, annotator_scale=1.0)
    trainer_kw = dict(kw, hidden_units=(), marginal_steps=0)
    start = LIATrainer(**trainer_kw).initial_weights(ann)
    keras_fit = LIATrainer(**trainer_kw).fit(None, ann)
    numpy_fit = FeatureFreeLIA(**kw).fit(ann, initial_weights=start)
    np.testing.assert_allclose(numpy_fit.posteriors_, keras_fit.posteriors_, atol=2e-5)
    empty = ann.annotations_per_item() == 0
    np.testing.assert_allclose(numpy_fit.posteriors_[empty], numpy_fit.predict_proba()[empty],
                               atol=1e-6)
    monkeypatch.setattr(lia_model, "_CHUNK", 7)
    np.testing.assert_allclose(numpy_fit.posteriors(), numpy_fit.posteriors_, atol=1e-12)


@pytest.mark.parametrize("annotators", [20, 2000])   # the logits' bound from the table, from z
def test_unshifted_softmax_is_the_shifted_one(monkeypatch, annotators):
    """With L = 1 and every logit within ±_EXP_SAFE a step computes Eq. 1's softmax without
    the max shift, annotations first; the general path (forced by a zero bound) gives the
    same fit. Logits beyond the bound (half the table started 100 higher) take the shifted
    path and stay finite, where exp alone would overflow float32."""
    import crowd_keras.lia.model as lia_model

    sim = simulate_crowd(n_items=600, n_classes=3, n_annotators=annotators,
                         annotations_per_item=3, seed=4)
    ann = sim.annotations
    kw = dict(num_classes=3, em_iterations=3, m_steps=8, batch_size=200, tol=0.0, seed=0,
              instance_l2=100.0, classifier_l2=100.0, annotator_l2=0.3, annotator_scale=1.0)
    calls = []
    unshifted = lia_model._annotation_terms_l1

    def counted(*args):
        calls.append(len(args[0]))
        return unshifted(*args)

    monkeypatch.setattr(lia_model, "_annotation_terms_l1", counted)
    fast = FeatureFreeLIA(**kw).fit(ann)
    assert len(calls) == 3 * 8   # every step took the unshifted path
    assert (annotators > max(calls)) == (annotators == 2000)   # both bounds were exercised
    start = {name: np.array(w) for name, w in fast.weights_.items()}
    start["competence_table"][::2] += 100.0
    calls.clear()
    big = FeatureFreeLIA(**kw).fit(ann, initial_weights=start)
    assert not calls
    assert np.isfinite(big.posteriors_).all()
    assert all(np.isfinite(h["loss"]) for h in big.history_)
    monkeypatch.setattr(lia_model, "_EXP_SAFE", 0.0)
    calls.clear()
    shifted = FeatureFreeLIA(**kw).fit(ann)
    assert not calls
    np.testing.assert_allclose(fast.posteriors_, shifted.posteriors_, atol=1e-5)
    np.testing.assert_allclose([h["loss"] for h in fast.history_],
                               [h["loss"] for h in shifted.history_], rtol=1e-5)
    np.testing.assert_allclose(fast.competence_tensors(), shifted.competence_tensors(),
                               atol=1e-4)
    big_shifted = FeatureFreeLIA(**kw).fit(ann, initial_weights=start)
    np.testing.assert_allclose(big.posteriors_, big_shifted.posteriors_, atol=1e-5)


@pytest.mark.parametrize("num_classes, latent_dim", [(3, 1), (5, 2)])
def test_initial_biases_pool_the_confusions_over_annotations(num_classes, latent_dim):
    """The shared biases' pooled confusion matrix, summed per item from its label counts, is
    the sum over annotations that defines it: π_kl ∝ 0.5 + Σ_{(i,j): y_ij = l} ŷ_ik (also with
    more classes than the labels use, and a latent axis)."""
    from crowd_keras.lia.model import initial_biases

    ann = simulate_crowd(n_items=60, n_classes=3, n_annotators=7, annotations_per_item=3,
                         seed=2).annotations
    post = np.random.default_rng(0).dirichlet(np.ones(num_classes), size=ann.n_items)
    pooled = np.full((num_classes, num_classes), 0.5)
    for item, label in zip(ann.items, ann.labels):   # the definition, one annotation at a time
        pooled[:, label] += post[item]
    log_pi = np.log(pooled / pooled.sum(axis=1, keepdims=True))
    bias, truth = initial_biases(post, ann, latent_dim)
    np.testing.assert_allclose(
        bias.reshape(num_classes, num_classes, latent_dim),
        np.repeat(log_pi[:, :, None], latent_dim, axis=2) - np.log(latent_dim), rtol=1e-6)
    prior = post.mean(0) + 1e-3
    np.testing.assert_allclose(truth, np.log(prior / prior.sum()), rtol=1e-6)


@pytest.mark.parametrize("latent_dim, scale, dtype", [(1, 3.0, "float32"), (1, 3.0, "float64"),
                                                      (1, 200.0, "float32"), (2, 3.0, "float32")])
def test_confusions_are_eq1_in_every_form(latent_dim, scale, dtype):
    """``confusions`` (the summary's and predict_competence's Eq. 1) against float64
    logsumexp-softmax: the unshifted flat form (L = 1, logits within ±_EXP_SAFE), the
    shifted one (logits of ±200 would overflow exp; L = 2), broadcast shapes, dtype kept."""
    from scipy.special import logsumexp, softmax

    from crowd_keras.lia.model import confusions

    rng = np.random.default_rng(0)
    d = (scale * rng.standard_normal((6, 1, 3, 3, latent_dim))).astype(dtype)
    c = (scale * rng.standard_normal((1, 5, 3, 3, latent_dim))).astype(dtype)
    z = d.astype("float64") + c.astype("float64")
    expected = softmax(logsumexp(z, axis=-1), axis=-1)                  # (6, 5, 3, 3)
    q = confusions(d, c)
    assert q.shape == (6, 5, 3, 3) and q.dtype == np.dtype(dtype)
    assert np.isfinite(q).all()
    np.testing.assert_allclose(q, expected, atol=1e-6, rtol=1e-5)
    row = confusions(d[:, 0], np.repeat(c[:, 0], 6, axis=0))            # (6, 3, 3, L) each
    np.testing.assert_allclose(row, expected[:, 0], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("annotator_l2", [0.3, 0.0])   # the annotator table dense, or lazy
def test_blockwise_amsgrad_is_the_whole_array_update(monkeypatch, annotator_l2):
    """Large AMSGrad updates run block by block (the caches); a block of 37 elements forces
    it on a small fit (the item rows, the dense weights, a batch spanning two passes): the
    weights and posteriors are bitwise those of whole-array updates."""
    import crowd_keras.lia.em as lia_em

    sim = simulate_crowd(n_items=500, n_classes=3, n_annotators=30, annotations_per_item=3,
                         seed=5)
    kw = dict(num_classes=3, em_iterations=2, m_steps=7, batch_size=150, tol=0.0, seed=0,
              annotator_l2=annotator_l2)
    whole = FeatureFreeLIA(**kw).fit(sim.annotations)
    blocks = []
    rule = lia_em._Adam._rule

    def counted(g, *args):
        blocks.append(g.size)
        return rule(g, *args)

    monkeypatch.setattr(lia_em, "_ADAM_BLOCK", 37)
    monkeypatch.setattr(lia_em._Adam, "_rule", staticmethod(counted))
    blocked = FeatureFreeLIA(**kw).fit(sim.annotations)
    assert blocks.count(37) > 2 * 7 * 10   # every step's item rows in blocks
    for name, w in whole.weights_.items():
        assert np.array_equal(w, blocked.weights_[name]), name
    assert np.array_equal(whole.posteriors_, blocked.posteriors_)


def test_default_batch_is_the_papers_1024_unless_a_pass_needs_more():
    """``batch_size=None``: every item up to 1024 (full batch), then 1024 items until an
    M-step of ``m_steps`` steps needs more to pass over every item: no jump in a step's work
    (with full batches up to 4096 items, 4,000 items cost six times 4,200). Both engines
    take their batches from this rule."""
    # every size to 20,000, then around each m_steps bound (1024 · m_steps)
    n = np.unique(np.r_[1:20_001, [b + d for b in (102_400, 204_800) for d in (-1, 0, 1)],
                        300_000])
    for m_steps in (1, 100, 200):
        got = np.array([lia_batch_size(None, int(i), m_steps) for i in n])
        want = np.minimum(n, np.maximum(1024, -(-n // m_steps)))
        np.testing.assert_array_equal(got, want)
        assert (np.diff(got) >= 0).all()   # never fewer items per step for more items
    assert lia_batch_size(64, 5000, 100) == 64 and lia_batch_size(64, 10, 100) == 10
    with pytest.raises(ValueError, match="batch_size"):
        lia_batch_size(0, 10, 100)


def test_one_class_annotations_are_refused_under_lias_own_name():
    """With labeling_functions='ignore' the engine refused them as "FeatureFreeLIA
    num_classes", a name the user never met."""
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import get_label_model

    ann = Annotations.from_dense(np.zeros((20, 3), int))
    with pytest.raises(CrowdDataError, match=r"LIA needs two classes or more; these annotations "
                                             r"have one, 0 \(pass classes="):
        get_label_model("lia", labeling_functions="ignore").fit(ann)
