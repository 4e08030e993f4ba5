"""``AutoLabelModel(target_prior=...)`` divides out the class-prior factor that the chosen
model's posteriors actually carry (``posterior_log_prior_``). The variational IBCC and EBCC
weigh class k by ``exp E[log τ_k]`` in their E-step, not by ``class_priors_ = E[τ_k]``:
divided by ``E[τ]``, their posteriors kept a bias against the rare classes. The expected
values below are the model's own E-step with its class weights replaced by the target."""
import numpy as np
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import EBCC, IBCC, AutoLabelModel, DawidSkene
from crowd_keras.aggregation.bayesian.base import expected_log_dirichlet
from crowd_keras.aggregation.bayesian.ebcc import ebcc_e_step
from crowd_keras.aggregation.bayesian.ibcc import ibcc_e_step
from crowd_keras.aggregation.dawid_skene import e_step as ds_e_step
from crowd_keras.datasets import simulate_failure_kind
from crowd_keras.numerics import shift_class_prior

TARGET = np.array([0.4, 0.35, 0.25])


@pytest.fixture(scope="module")
def crowd():
    """400 items of classes 18/14/368: the rare classes' ``ν_k`` are small, where
    ``exp E[log τ_k]`` and ``E[τ_k]`` differ most."""
    ann = simulate_failure_kind("skewed_prolific", 0, scale=0.05).annotations
    new = ann.select(np.arange(ann.n_annotations) % 3 != 0)     # scored after the fit
    return ann, new


def under_target(model, ann, new):
    auto = AutoLabelModel(candidates=[("only", model)], target_prior=TARGET, n_folds=2,
                          max_repeats=1).fit(ann)
    assert auto.target_prior_applied_
    return auto.model_, auto.predict_proba(), auto.predict_proba(new)


def ibcc_with_target(model, ann):
    """IBCC's E-step (Kim & Ghahramani 2012, section 3) with ``log target`` for ``E[log τ]``."""
    _, log_v, _, _ = model.state_
    return ibcc_e_step(ann.vote_incidence(), np.log(TARGET), log_v)[0]


def ebcc_with_target(model, ann):
    """EBCC's E-step (Li et al. 2019, section 4), subtype (k, m) scored with ``log target_k +
    E[log π_km]`` for ``E[log τ_k] + E[log π_km]``, its subtypes summed per class."""
    _, log_v, live, eta, _, _, _ = model.state_
    m = model.num_groups
    bias = (np.log(TARGET)[:, None] + expected_log_dirichlet(eta, axis=1)).ravel()[live]
    latent, _ = ebcc_e_step(ann.vote_incidence(), bias, log_v, live, m)
    return model.class_posteriors(latent)


@pytest.mark.parametrize("model, expected", [(IBCC(), ibcc_with_target),
                                             (EBCC(), ebcc_with_target)], ids=["ibcc", "ebcc"])
def test_a_variational_models_labels_are_its_e_step_under_the_target(crowd, model, expected):
    ann, new = crowd
    fitted, post, post_new = under_target(model, ann, new)
    want = expected(fitted, ann)
    np.testing.assert_allclose(post, want, atol=1e-10)
    np.testing.assert_allclose(post_new, expected(fitted, new), atol=1e-10)   # and new ones
    # on this crowd dividing by E[τ] instead is measurably off
    by_mean = shift_class_prior(fitted.posteriors_, fitted.class_priors_, TARGET)
    assert np.abs(by_mean - want).max() > 1e-3
    # the factor: E[log τ] of q(τ) = Dir(ν), ν the state's concentrations
    nu = fitted.state_[2] if isinstance(fitted, IBCC) else fitted.state_[4]
    np.testing.assert_allclose(fitted.posterior_log_prior_, expected_log_dirichlet(nu, 0))


def test_dawid_skene_still_divides_out_its_class_priors(crowd):
    ann, new = crowd
    fitted, post, post_new = under_target(DawidSkene(), ann, new)
    np.testing.assert_allclose(fitted.posterior_log_prior_, np.log(fitted.class_priors_))
    np.testing.assert_allclose(post, shift_class_prior(fitted.posteriors_, fitted.class_priors_,
                                                       TARGET), atol=1e-12)
    log_pi = np.log(fitted.confusion_matrices_)
    np.testing.assert_allclose(post, ds_e_step(ann.vote_incidence(), log_pi, TARGET)[0],
                               atol=1e-10)
    np.testing.assert_allclose(post_new, ds_e_step(new.vote_incidence(), log_pi, TARGET)[0],
                               atol=1e-10)


def test_the_factor_is_an_error_before_fit_and_the_abstain_aware_models_on_its_votes():
    with pytest.raises(AttributeError, match="not fitted yet"):
        IBCC().posterior_log_prior_
    # labeling functions (each votes one class or abstains): the abstain-aware model answers,
    # with its own class prior as the factor (it has no q(τ))
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 300)
    own = np.arange(6) % 2                           # function j votes class j % 2 or abstains
    fires = rng.random((300, 6)) < np.where(truth[:, None] == own, 0.6, 0.1)
    matrix = np.where(fires, own, -1)
    for model in (IBCC(), EBCC()):
        model.fit(Annotations.from_label_matrix(matrix, cardinality=2))
        assert model.regime_ == "labeling_functions"
        np.testing.assert_array_equal(model.posterior_log_prior_,
                                      np.log(model.labeling_function_model_.class_priors_))
