"""Every registered label model (classification and sequence registries) behaves as the
scikit-learn estimator a scikit-learn user expects: parameters, ``clone``, ``repr``, the
unfitted state (``NotFittedError``, ``check_is_fitted``), fit returning self, pickling and
copying, determinism and refits that keep nothing of the previous fit.

The fits are of tiny simulated crowds (a few dozen items) so that the file stays fast.
"""
import copy
import inspect
import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest

sk_base = pytest.importorskip("sklearn.base")
from sklearn.exceptions import NotFittedError as SklearnNotFittedError  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

from crowd_keras.aggregation.registry import available_label_models, get_label_model  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.sequences.registry import (available_sequence_models,  # noqa: E402
                                            get_sequence_model)
from sequence_data import simulated_spans  # noqa: E402

#: settings that keep the slow models' fits of the tiny crowds short
FAST = {"lia": {"em_iterations": 1, "m_steps": 2}, "auto": {"n_folds": 2, "max_repeats": 1}}

CLASSIFICATION = [("classification", name) for name in available_label_models(aliases=False)]
SEQUENCE = [("sequence", name) for name in available_sequence_models()]
MODELS = CLASSIFICATION + SEQUENCE
IDS = [f"{kind}-{name}" for kind, name in MODELS]


def make(kind, name, **params):
    if kind == "classification":
        return get_label_model(name, **{**FAST.get(name, {}), **params})
    return get_sequence_model(name, **params)


_DATA = {}


def data(kind, which):
    """Two small data sets per kind (the second with fewer items and annotators, so that a
    refit changes every shape)."""
    key = (kind, which)
    if key not in _DATA:
        if kind == "classification":
            size = {1: dict(n_items=40, n_annotators=7, seed=1),
                    2: dict(n_items=30, n_annotators=5, seed=2)}[which]
            _DATA[key] = simulate_crowd(n_classes=3, annotations_per_item=3, **size).annotations
        else:
            size = {1: dict(n_docs=6, n_workers=5, seed=1),
                    2: dict(n_docs=4, n_workers=4, seed=2)}[which]
            _DATA[key] = simulated_spans(per_doc=3, **size)[0]
    return _DATA[key]


def fit(kind, name, which=1, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # small crowds: convergence and regime warnings
        return make(kind, name, **params).fit(data(kind, which))


def learned(model):
    """The learned attributes: ``_``-ending, not dunder, not a constructor parameter (BWA's
    ``lambda_``)."""
    params = set(model.get_params(deep=False))
    return {k: v for k, v in vars(model).items()
            if k.endswith("_") and not k.startswith("__") and k not in params}


def same(a, b, path="", seen=None):
    """Differences between two fitted states, as a list of paths (recursing into arrays,
    frames, containers and plain objects)."""
    seen = set() if seen is None else seen
    if type(a) is not type(b):
        return [f"{path}: {type(a).__name__} vs {type(b).__name__}"]
    if id(a) in seen:
        return []
    if isinstance(a, np.ndarray):
        ok = a.shape == b.shape and a.dtype == b.dtype and (
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        return [] if ok else [path]
    if isinstance(a, (pd.DataFrame, pd.Series, pd.Index)):
        return [] if a.equals(b) else [path]
    if isinstance(a, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(map(str, set(a) ^ set(b)))}"]
        return [d for k in a for d in same(a[k], b[k], f"{path}[{k!r}]", seen)]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: length"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{path}[{i}]", seen)]
    if isinstance(a, (int, float, str, bytes, bool, complex, type(None), np.generic)):
        return [] if a == b or (a != a and b != b) else [path]
    if callable(a) and not hasattr(a, "__dict__"):
        return []
    state = getattr(a, "__dict__", None)
    if state is None and hasattr(a, "__slots__"):
        state = {s: getattr(a, s) for s in a.__slots__ if hasattr(a, s)}
    if state is None:
        return [] if a == b else [path]
    seen.add(id(a))
    return same(state, getattr(b, "__dict__", None) if hasattr(a, "__dict__")
                else {s: getattr(b, s) for s in b.__slots__ if hasattr(b, s)}, path, seen)


def changed_param(model):
    """A (name, value) differing from the default, for the repr test."""
    for name, p in sorted(inspect.signature(type(model).__init__).parameters.items()):
        if isinstance(p.default, bool):
            return name, not p.default
        if isinstance(p.default, int):
            return name, p.default + 3
        if isinstance(p.default, float):
            return name, p.default * 2 + 0.125
    return None


@pytest.mark.parametrize("kind,name", MODELS, ids=IDS)
def test_parameters_round_trip_clone_and_repr(kind, name):
    model = make(kind, name)
    shallow, deep = model.get_params(deep=False), model.get_params(deep=True)
    assert set(shallow) <= set(deep)
    again = make(kind, name).set_params(**deep)
    assert again.get_params(deep=False).keys() == shallow.keys()
    assert all(again.get_params(deep=False)[k] is v for k, v in shallow.items())
    with pytest.raises(ValueError, match="bogus"):
        make(kind, name).set_params(bogus=1)
    clone = sk_base.clone(model)
    assert clone is not model and learned(clone) == {}
    assert repr(type(model)()) == f"{type(model).__name__}()"   # defaults are not shown
    change = changed_param(model)
    if change is not None:
        model.set_params(**{change[0]: change[1]})
        assert f"{change[0]}={change[1]!r}" in repr(model)
        assert sk_base.clone(model).get_params(deep=False)[change[0]] == change[1]


@pytest.mark.parametrize("kind,name", MODELS, ids=IDS)
def test_unfitted_model_says_so_as_scikit_learn_does(kind, name):
    model = make(kind, name)
    assert set(vars(model)) == set(model.get_params(deep=False))   # nothing but parameters
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(model)
    for call in (model.predict, model.predict_proba):
        with pytest.raises(SklearnNotFittedError, match="not fitted yet; call fit"):
            call()
    learned_properties = [attr for attr, value in inspect.getmembers(type(model))
                          if isinstance(value, property) and attr.endswith("_")]
    assert "annotator_quality_" in learned_properties
    for attr in learned_properties:
        with pytest.raises(SklearnNotFittedError, match="not fitted yet"):
            getattr(model, attr)
    # a property of a fitted model is absent before fit, as scikit-learn's are
    assert not hasattr(model, "annotator_quality_") and not hasattr(model, "tied_items_")


@pytest.mark.parametrize("kind,name", MODELS, ids=IDS)
def test_fit_returns_self_and_the_fitted_model_pickles_and_copies(kind, name):
    model = make(kind, name)
    for copied in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert copied.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model.fit(data(kind, 1)) is model
    check_is_fitted(model)
    assert learned(model) and "posteriors_" in learned(model)
    proba, labels = model.predict_proba(), model.predict()
    if kind == "classification":   # sequences decode spans, not the per-token argmax
        assert np.array_equal(labels, np.argmax(proba, axis=1))
    for copied in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert np.array_equal(copied.predict_proba(), proba)
        assert np.array_equal(copied.predict(), labels)
    clone = sk_base.clone(model)
    assert learned(clone) == {}
    with pytest.raises(SklearnNotFittedError):
        check_is_fitted(clone)


@pytest.mark.parametrize("kind,name", CLASSIFICATION, ids=[f"{k}-{n}" for k, n in CLASSIFICATION])
def test_fit_predict_is_fit_then_predict_as_in_scikit_learn_and_crowd_kit(kind, name):
    # fit_predict_proba was there, fit_predict (the call crowd-kit users make) was not
    fitted = fit(kind, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = make(kind, name).fit_predict(data(kind, 1))
        proba = make(kind, name).fit_predict_proba(data(kind, 1))
    assert np.array_equal(labels, fitted.predict())
    assert np.array_equal(proba, fitted.predict_proba())


@pytest.mark.parametrize("kind,name", MODELS, ids=IDS)
def test_the_same_fit_twice_gives_the_same_posteriors(kind, name):
    first = fit(kind, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = first.predict_proba().copy(), first.fit(data(kind, 1)).predict_proba()
    assert np.array_equal(*again)
    assert np.array_equal(fit(kind, name).predict_proba(), again[0])
    with warnings.catch_warnings():   # a clone (of the fitted model) fits the same
        warnings.simplefilter("ignore")
        clone = sk_base.clone(first).fit(data(kind, 1))
    assert np.array_equal(clone.predict_proba(), again[0])



@pytest.mark.parametrize("kind,name", MODELS, ids=IDS)
def test_a_refit_keeps_nothing_of_the_previous_fit(kind, name):
    model = fit(kind, name)
    try:   # scoring new data under the first fit sets predict-time state
        model.predict_proba(data(kind, 2))
    except Exception:   # noqa: BLE001 - some models score only their fitted items
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data(kind, 2))
    fresh = fit(kind, name, which=2)
    assert sorted(learned(model)) == sorted(learned(fresh))
    assert same(vars(model), vars(fresh)) == []


@pytest.mark.parametrize("kind,name", MODELS, ids=IDS)
def test_the_constructor_takes_any_value_and_checks_nothing(kind, name):
    params = make(kind, name).get_params(deep=False)
    model = make(kind, name, **{p: "not a value" for p in params})
    assert all(v == "not a value" for v in model.get_params(deep=False).values())


#: settings that gave NaN or meaningless posteriors (or numpy's message naming no setting)
#: without a word; each is refused at fit, naming it
BAD_SETTINGS = [
    ("classification", "glad", "alpha_prior", float("nan")),
    ("classification", "glad", "beta_prior", float("nan")),
    ("classification", "glad", "newton_rounds", -1),
    ("classification", "conal", "init_omega", -1.0),
    ("classification", "conal", "init_omega", float("nan")),
    ("classification", "conal", "omega_prior", (0.5, 0.5)),
    ("classification", "conal", "omega_prior", "ab"),
    ("classification", "mace", "strategy_prior", -1.0),
    ("classification", "mace", "strategy_prior", float("nan")),
    ("classification", "mace", "theta_prior", (0.0, 0.5)),
    ("classification", "mace", "theta_prior", "abc"),
    ("classification", "mace", "restarts", 0),
    ("classification", "abstain_dawid_skene", "one_class_share", float("nan")),
    ("classification", "abstain_dawid_skene", "one_class_share", -1.0),
    ("classification", "dawid_skene", "class_prior", "abc"),
    ("sequence", "text_prior_dawid_skene", "min_count", float("nan")),
    ("sequence", "dawid_skene", "temperature", "abc"),
]


@pytest.mark.parametrize("kind,name,param,value", BAD_SETTINGS,
                         ids=[f"{n}-{p}={v!r}" for _, n, p, v in BAD_SETTINGS])
def test_a_bad_setting_is_refused_at_fit_naming_it(kind, name, param, value):
    model = make(kind, name, **{param: value})   # nothing checked yet
    words = "class prior" if param == "class_prior" else param
    with pytest.raises((ValueError, TypeError), match=words.replace("_", "[_ ]")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data(kind, 1))


@pytest.mark.parametrize("name", ["calibrated", "span_length_prior"])
def test_nested_parameters_of_a_wrapped_sequence_model(name):
    from crowd_keras.sequences.models import TokenDawidSkene

    model = get_sequence_model(name, model=TokenDawidSkene(max_iter=7))
    assert model.get_params(deep=True)["model__max_iter"] == 7
    assert model.set_params(model__max_iter=5).model.max_iter == 5
    assert "model=TokenDawidSkene(max_iter=5)" in repr(model)
    clone = sk_base.clone(model)
    assert clone.model is not model.model and clone.model.max_iter == 5
    # a registered name has no parameters of its own: a ValueError naming it, as for any
    # invalid parameter (was an AttributeError of str)
    with pytest.raises(ValueError, match="model__max_iter.*'dawid_skene'|model is"):
        get_sequence_model(name, model="dawid_skene").set_params(model__max_iter=5)



def test_lia_refits_keep_no_feature_scaling_of_an_earlier_fit():
    sim = simulate_crowd(n_items=40, n_classes=3, n_annotators=7, annotations_per_item=3,
                         n_features=4, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make("classification", "lia").fit(sim.annotations, features=sim.x)
        assert "feature_mean_" in learned(model)
        model.set_params(standardize=False).fit(sim.annotations, features=sim.x)
        assert "feature_mean_" not in learned(model) and "feature_scale_" not in learned(model)
        model.set_params(standardize=True).fit(sim.annotations, features=sim.x)
        model.fit(data("classification", 2))   # without features
    fresh = fit("classification", "lia", which=2)
    assert sorted(learned(model)) == sorted(learned(fresh))
    assert same(vars(model), vars(fresh)) == []


#: (kind, name, switch): every constructor parameter defaulting to True or False
SWITCHES = [(kind, name, p.name) for kind, name in MODELS
            for p in inspect.signature(type(make(kind, name)).__init__).parameters.values()
            if isinstance(p.default, bool)]


@pytest.mark.parametrize("kind,name,switch", SWITCHES,
                         ids=[f"{k}-{n}-{s}" for k, n, s in SWITCHES])
def test_a_switch_that_is_not_a_bool_is_refused_at_fit_naming_it(kind, name, switch):
    # "no" and 0.5 were read by their truth value: soft="no" voted softly without a word
    for value in ("no", 0.5):
        model = make(kind, name, **{switch: value})
        with pytest.raises(ValueError, match=f"{switch} must be True.*False.*got {value!r}"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(data(kind, 1))
    default = inspect.signature(type(make(kind, name)).__init__).parameters[switch].default
    with warnings.catch_warnings():   # numpy's bools are bools (a value read from an array)
        warnings.simplefilter("ignore")
        assert make(kind, name, **{switch: np.bool_(default)}).fit(data(kind, 1)) is not None


def test_the_snorkel_adapter_has_scikit_learn_parameters_and_clones():
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    model = CrowdLabelModel(cardinality=3, method="dawid_skene", max_iter=30)
    # the label model's arguments are parameters as passed (clone failed: no get_params)
    assert model.get_params() == {"cardinality": 3, "method": "dawid_skene", "verbose": False,
                                  "device": "cpu", "max_iter": 30}
    assert repr(model) == "CrowdLabelModel(cardinality=3, method='dawid_skene', max_iter=30)"
    assert repr(CrowdLabelModel()) == "CrowdLabelModel()"
    L = data("classification", 1).to_dense()
    with pytest.raises(SklearnNotFittedError):   # an AttributeError: no __sklearn_tags__
        check_is_fitted(model)
    assert model.fit(L) is model
    check_is_fitted(model)
    clone = sk_base.clone(model)
    assert clone.get_params() == model.get_params() and not hasattr(clone, "label_model_")
    assert clone.method_kwargs is not model.method_kwargs
    assert np.array_equal(clone.fit(L).predict_proba(L), model.predict_proba(L))
    assert model.set_params(method="glad", max_iter=7) is model
    assert repr(model) == "CrowdLabelModel(cardinality=3, method='glad', max_iter=7)"
    with pytest.raises(ValueError, match="invalid parameter 'bogus' for CrowdLabelModel"):
        model.set_params(bogus=1)
    with pytest.raises(ValueError, match="invalid parameter 'learn_class_prior'.*method='mace'"):
        CrowdLabelModel(method="mace").set_params(learn_class_prior=True)
    assert model.get_params()["max_iter"] == 7 and "bogus" not in model.get_params()


#: LIA's sizes, strengths and rates that were taken as given (a negative rate or L2, a zero
#: scale) or failed deep in numpy with a message naming no setting
LIA_BAD = [("learning_rate", -0.5), ("learning_rate", "0.05"), ("marginal_learning_rate", 0.0),
           ("annotator_l2", -1.0), ("instance_l2", -1.0), ("classifier_l2", float("nan")),
           ("annotator_scale", 0.0), ("latent_dim", 0), ("latent_dim", "2"), ("batch_size", "8"),
           ("marginal", "items")]


@pytest.mark.parametrize("param,value", LIA_BAD, ids=[f"{p}={v!r}" for p, v in LIA_BAD])
def test_lia_refuses_a_bad_size_strength_or_rate_at_fit_naming_it(param, value):
    from crowd_keras.lia.em import FeatureFreeLIA

    fitters = [make("classification", "lia", **{param: value})]
    if param in inspect.signature(FeatureFreeLIA).parameters:   # the numpy engine's own
        fitters.append(FeatureFreeLIA(em_iterations=1, m_steps=2, **{param: value}))
    for fitter in fitters:
        with pytest.raises((ValueError, TypeError),
                           match=f"{type(fitter).__name__} {param} must be .*got .*"
                                 + re.escape(repr(value))):
            fitter.fit(data("classification", 1))


def test_a_global_mixture_of_groups_refit_keeps_no_individual_fit_state():
    keras = pytest.importorskip("keras")
    from crowd_keras.training import MixtureOfGroupsEM

    sim = simulate_crowd(n_items=40, n_classes=3, n_annotators=7, annotations_per_item=3,
                         n_features=4, seed=1)

    def trainer(scenario):
        keras.utils.set_random_seed(0)
        classifier = keras.Sequential([keras.Input((4,)),
                                       keras.layers.Dense(3, activation="softmax")])
        return MixtureOfGroupsEM(classifier, 2, scenario=scenario, max_iter=1, seed=0,
                                 progress=False)

    model = trainer("individual").fit(sim.x, sim.annotations)
    assert hasattr(model, "memberships_") and hasattr(model, "annotations_")
    model.set_params(scenario="global").fit(sim.x, sim.annotations)
    fresh = trainer("global").fit(sim.x, sim.annotations)
    # the individual fit's memberships and annotations were left on the global model
    assert sorted(learned(model)) == sorted(learned(fresh))
    assert not hasattr(model, "memberships_") and not hasattr(model, "annotations_")


def test_an_unfitted_trainer_has_no_annotator_summary_as_scikit_learn_says_it():
    keras = pytest.importorskip("keras")
    from crowd_keras.layers import CrowdLayer
    from crowd_keras.models import CrowdModel
    from crowd_keras.training import LIATrainer, MixtureOfGroupsEM

    classifier = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    for trainer in (LIATrainer(), MixtureOfGroupsEM(classifier, 2),
                    CrowdModel(classifier, CrowdLayer(5))):
        for attr in ("annotator_quality_", "confusion_matrices_", "class_priors_"):
            # a RuntimeError before: hasattr raised instead of answering False
            assert not hasattr(trainer, attr)
            with pytest.raises(SklearnNotFittedError, match="no annotator summary yet"):
                getattr(trainer, attr)


def test_mixture_of_groups_em_refuses_a_progress_that_is_not_a_bool():
    keras = pytest.importorskip("keras")
    from crowd_keras.training import MixtureOfGroupsEM

    sim = simulate_crowd(n_items=20, n_classes=3, n_annotators=5, n_features=4, seed=1)
    classifier = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    with pytest.raises(ValueError, match="MixtureOfGroupsEM progress must be True, False or "
                                         "'auto', got 'no'"):   # it showed the bars
        MixtureOfGroupsEM(classifier, 2, progress="no").fit(sim.x, sim.annotations)
