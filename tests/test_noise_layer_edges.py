"""The layers beyond the plain crowd layer (LIA's DifficultyCompetence, MixtureOfGroups,
CoNAL) and their trainers, as a Keras user adding them to a model meets them: the errors a
wrong combination or input gets, and what the trainers accept."""
import keras
import numpy as np
import pytest

from crowd_keras.layers import DifficultyCompetence
from crowd_keras.models import CrowdModel

N, D, K, A = 24, 5, 3, 4


def _classifier(k: int = K):
    return keras.Sequential([keras.Input((D,)), keras.layers.Dense(k, activation="softmax")])


def test_crowd_model_refuses_difficulty_competence_naming_the_trainer():
    """It is not a noise layer (it maps a representation to (batch, k, C, C) matrices): the
    model was made and then failed in the loss (TensorFlow), the call (JAX) or could not be
    built at all (torch)."""
    with pytest.raises(TypeError, match=r"DifficultyCompetence is not a CrowdModel noise "
                                         r"layer.*LIATrainer"):
        CrowdModel(_classifier(), DifficultyCompetence(K, num_annotators=A))


def _one_class_annotations():
    from crowd_keras import Annotations

    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(N), 2)
    annotators = np.concatenate([rng.permutation(A)[:2] for _ in range(N)])
    return Annotations(items, annotators, np.zeros(2 * N, int), n_items=N, n_annotators=A)


def test_the_trainers_refuse_a_single_class_before_training():
    """MixtureOfGroupsEM ran its whole EM (restarts included, the classifier's weights
    replaced) and then failed building its layer; LIATrainer failed with the layer's message
    about a ``num_classes=1`` the user never gave."""
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.training import LIATrainer, MixtureOfGroupsEM

    ann = _one_class_annotations()
    x = np.random.default_rng(1).normal(size=(N, D)).astype("float32")
    clf = _classifier(1)
    before = [w.copy() for w in clf.get_weights()]
    with pytest.raises(CrowdDataError, match=r"1 class; the mixture of groups needs at least "
                                             r"2"):
        MixtureOfGroupsEM(clf, max_iter=1, progress=False).fit(x, ann)
    assert all((a == b).all() for a, b in zip(before, clf.get_weights()))   # not trained
    with pytest.raises(CrowdDataError, match=r"1 class; the mixture of groups"):
        MixtureOfGroupsEM(clf, max_iter=1, progress=False).fit(x, counts=np.full((N, 1), 2))
    with pytest.raises(CrowdDataError, match=r"the model has 1 class \(num_classes=None, "
                                             r"annotations have 1\); LIATrainer needs at "
                                             r"least 2"):
        LIATrainer(progress=False).fit(x, ann)


def test_mixture_of_groups_em_refuses_a_classifier_without_probabilities_before_em():
    """Logits (no softmax) gave NaN posteriors through the whole EM, then a ValueError about
    the mixing coefficients."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.training import MixtureOfGroupsEM

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    logits = keras.Sequential([keras.Input((D,)), keras.layers.Dense(K)])
    for scenario in ("global", "individual"):
        with pytest.raises(CrowdDataError, match=r"the classifier must output class "
                                                 r"probabilities .*for row \d+ of x"):
            MixtureOfGroupsEM(logits, scenario=scenario, max_iter=2,
                              progress=False).fit(sim.x, sim.annotations)


@pytest.mark.parametrize("bad,match", [(K, r"class 3 at \(0,\) is outside 0\.\.2"),
                                       (-1, r"y_val holds true class codes; -1 at position 0"),
                                       (0.5, r"class 0\.5 at \(0,\) is not an integer")])
def test_mixture_of_groups_em_refuses_validation_labels_that_are_not_classes(bad, match):
    """A y_val code outside the classes was scored as a wrong guess: a silent val_accuracy of
    0, not an error."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.training import MixtureOfGroupsEM

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    y_val = sim.y.astype("float64" if isinstance(bad, float) else "int64")
    y_val[0] = bad
    with pytest.raises(CrowdDataError, match=rf"validation_data y_val: {match}|{match}"):
        MixtureOfGroupsEM(_classifier(), max_iter=1, progress=False).fit(
            sim.x, sim.annotations, validation_data=(sim.x, y_val))


def test_lia_trainer_posteriors_refuse_labels_of_classes_the_model_does_not_have():
    """A label 3 of a 3-class model was silently left out of the E-step: the posteriors
    equalled those of the annotations without it."""
    from crowd_keras import Annotations
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.training import LIATrainer

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    ann = sim.annotations
    trainer = LIATrainer(em_iterations=1, m_steps=2, marginal_steps=0, progress=False,
                         seed=0).fit(sim.x, ann)
    labels = ann.labels.copy()
    labels[0] = K
    wider = Annotations(ann.items, ann.annotators, labels, n_items=N, n_annotators=A)
    for method in (trainer.posteriors, trainer.predict_proba_items, trainer.consensus_labels):
        with pytest.raises(CrowdDataError, match=r"annotations have 4 classes; the model has 3"):
            method(sim.x, wider)


TRAINER_SETTINGS = [
    ("LIATrainer", {"m_steps": 0}, ValueError, r"LIATrainer m_steps must be an integer >= 1, "
                                               r"got 0"),
    ("LIATrainer", {"marginal_steps": -1}, ValueError, r"marginal_steps must be an integer >= 0"),
    ("LIATrainer", {"em_iterations": 1.5}, TypeError, r"em_iterations must be an integer >= 0 "
                                                      r"\(a whole number, not a float\)"),
    ("LIATrainer", {"tol": float("nan")}, ValueError, r"LIATrainer tol must be a finite number"),
    ("LIA", {"m_steps": 0}, ValueError, r"FeatureFreeLIA m_steps must be an integer >= 1"),
    ("LIA", {"em_iterations": -1}, ValueError, r"em_iterations must be an integer >= 0"),
    ("MixtureOfGroupsEM", {"restarts": 0}, ValueError, r"MixtureOfGroupsEM restarts must be an "
                                                       r"integer >= 1, got 0"),
    ("MixtureOfGroupsEM", {"batch_size": 0}, ValueError, r"batch_size must be an integer >= 1"),
    ("MixtureOfGroupsEM", {"max_iter": 1.5}, TypeError, r"max_iter must be an integer >= 1 \(a "
                                                        r"whole number"),
    ("MixtureOfGroupsEM", {"pretrain_epochs": -1}, ValueError, r"pretrain_epochs must be an "
                                                               r"integer >= 0"),
    ("MixtureOfGroupsEM", {"num_groups": 2.0}, TypeError, r"MixtureOfGroupsEM num_groups must "
                                                           r"be an integer >= 1 \(a whole"),
    ("MixtureOfGroupsEM", {"smoothing": -1}, ValueError, r"MixtureOfGroupsEM smoothing must be "
                                                         r"a finite number >= 0, got -1"),
]


@pytest.mark.parametrize("trainer,setting,exc,match", TRAINER_SETTINGS,
                         ids=[f"{t}-{next(iter(s))}" for t, s, _, _ in TRAINER_SETTINGS])
def test_the_trainers_check_their_settings_before_any_work(trainer, setting, exc, match):
    """Before: m_steps=0 learned nothing (LIA's numpy engine) or failed in Keras ("max() arg
    is an empty sequence"), restarts=0 ran one restart, batch_size=0 trained with Keras'
    default, 2.5 iterations were truncated, a negative pretrain_epochs was ignored and a
    negative smoothing failed after the EM."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.training import LIATrainer, MixtureOfGroupsEM

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    from crowd_keras.aggregation import LIA

    make = {"LIA": lambda: LIA(),   # the numpy engine, FeatureFreeLIA
            "LIATrainer": lambda: LIATrainer(em_iterations=1, m_steps=2, marginal_steps=0,
                                             progress=False),
            "MixtureOfGroupsEM": lambda: MixtureOfGroupsEM(_classifier(), max_iter=1,
                                                           progress=False)}[trainer]
    model = make().set_params(**setting)
    with pytest.raises(exc, match=match):
        if trainer == "LIA":
            model.fit(sim.annotations)
        else:
            model.fit(sim.x, sim.annotations)
    assert not hasattr(model, "posteriors_")


def test_mixture_of_groups_em_refuses_non_finite_inputs_naming_the_row():
    """A NaN in x made every weight NaN through training, and the fit failed after the EM
    about the mixing coefficients (LIATrainer names the row up front)."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.training import MixtureOfGroupsEM

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    x = sim.x.copy()
    x[17, 2] = np.nan
    clf = _classifier()
    before = [w.copy() for w in clf.get_weights()]
    for scenario in ("global", "individual"):
        with pytest.raises(CrowdDataError, match=r"x has a non-finite value in row 17"):
            MixtureOfGroupsEM(clf, scenario=scenario, max_iter=2,
                              progress=False).fit(x, sim.annotations)
    assert all((a == b).all() for a, b in zip(before, clf.get_weights()))


def test_lia_trainer_predicts_class_codes_as_the_mixture_of_groups_trainer_does():
    """LIATrainer had predict_proba but no predict (MixtureOfGroupsEM has both)."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.training import LIATrainer

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    trainer = LIATrainer(em_iterations=1, m_steps=2, marginal_steps=0, progress=False,
                         seed=0).fit(sim.x, sim.annotations)
    np.testing.assert_array_equal(trainer.predict(sim.x[:5]),
                                  trainer.predict_proba(sim.x[:5]).argmax(axis=1))
    # batch sizes of the per-item read-outs are checked counts (0 was range()'s message)
    for method in (trainer.confusions, trainer.difficulty_tensors):
        with pytest.raises(ValueError, match=r"batch_size must be an integer >= 1, got 0"):
            method(sim.x[:5], batch_size=0)
        with pytest.raises(TypeError, match=r"batch_size must be an integer >= 1 \(a whole"):
            method(sim.x[:5], batch_size=2.5)


def test_constructor_values_that_make_every_output_nan_are_refused():
    """A NaN gate scale, a NaN or infinite difference weight and NaN annotator features
    gave NaN outputs or losses without an error; annotator features without a row made a
    layer of no annotators."""
    from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation

    with pytest.raises(ValueError, match=r"`scale`, expected a finite number"):
        AnnotatorGate(A, scale=float("nan"))
    for text in ("2", True):       # float("2") took a string; True read as 1.0
        with pytest.raises(TypeError, match=r"`scale`, expected a number"):
            AnnotatorGate(A, scale=text)
    for weight in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"`difference_weight`, expected a finite number"):
            CommonNoiseAdaptation(A, K, omega=0.5, difference_weight=weight)
    feats = np.ones((A, 2), "float32")
    feats[2, 1] = np.nan
    for make in (lambda f: AnnotatorGate(annotator_features=f),
                 lambda f: DifficultyCompetence(K, annotator_features=f)):
        with pytest.raises(ValueError, match=r"annotator_features must be finite, got nan at "
                                             r"\(annotator 2, feature 1\)"):
            make(feats)
        with pytest.raises(ValueError, match=r"annotator_features must be \(annotators, "
                                             r"features\) with at least one annotator, got "
                                             r"shape \(0, 2\)"):
            make(np.zeros((0, 2)))


class SubclassedClassifier(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(K, activation="softmax")

    def call(self, x):
        return self.dense(x)


@pytest.mark.parametrize("scenario", ["global", "individual"])
def test_mixture_of_groups_annotation_model_of_a_subclassed_classifier(scenario):
    """annotation_model() read the classifier's input_shape, which a subclassed model does not
    have: an AttributeError after a successful fit."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.training import MixtureOfGroupsEM

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    em = MixtureOfGroupsEM(SubclassedClassifier(), scenario=scenario, max_iter=1, progress=False,
                           seed=0).fit(sim.x, sim.annotations)
    model = em.annotation_model()
    probs = em.predict_proba(sim.x).astype("float32")
    if scenario == "global":
        want = keras.ops.convert_to_numpy(em.layer_(probs))
        got = model.predict(sim.x, verbose=0)
    else:
        ids = sim.annotations.to_padded()[0].astype("int32")
        want = keras.ops.convert_to_numpy(em.layer_([probs, ids]))
        got = model.predict({"x": sim.x, "annotator_ids": ids}, verbose=0)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("engine", ["numpy", "keras"])
def test_lia_refuses_initial_posteriors_that_are_not_probabilities(engine):
    """NaN rows gave NaN posteriors (numpy engine) or an error about the posteriors after
    training (trainer); negative or unnormalised scores were used as given."""
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.errors import CrowdDataError
    from crowd_keras.lia.em import FeatureFreeLIA
    from crowd_keras.training import LIATrainer

    sim = simulate_crowd(n_items=N, n_classes=K, n_annotators=A, annotations_per_item=2,
                         n_features=D, seed=0)
    settings = dict(em_iterations=1, m_steps=1, progress=False)
    fit = (lambda post: FeatureFreeLIA(**settings).fit(sim.annotations, post)) \
        if engine == "numpy" else \
        (lambda post: LIATrainer(marginal_steps=0, **settings).fit(sim.x, sim.annotations, post))
    good = np.full((N, K), 1 / K)
    for row, value in ((3, np.nan), (5, -0.5), (7, 2.0)):
        bad = good.copy()
        bad[row, 0] = value
        with pytest.raises(CrowdDataError, match=rf"initial_posteriors row {row} is not a "
                                                 r"probability distribution"):
            fit(bad)
