"""A user's own label model, as the docs tell one to write it: a subclass of a library model,
an EM-step protocol model, a plain ``fit``/``predict_proba`` model, registered by name and
used where the library's models are (clone, the registry, Dask, ``auto``)."""
import numpy as np
import pytest

from crowd_keras.aggregation import DawidSkene
from crowd_keras.aggregation.base import LabelModel, as_annotations
from crowd_keras.aggregation.em import EMLabelModel
from crowd_keras.datasets import simulate_crowd
from crowd_keras.numerics import softmax_rows


@pytest.fixture(scope="module")
def sim():
    return simulate_crowd(n_items=120, n_classes=3, n_annotators=8, annotations_per_item=3,
                          seed=1)


@pytest.fixture(scope="module")
def crowd(sim):
    return sim.annotations


class SharedAccuracy(EMLabelModel):
    """ARCHITECTURE.md's worked example of the EM-step protocol: one accuracy for the whole
    crowd, errors spread evenly; its E-step adds the block's item log-prior (gold)."""

    accepts_gold = True

    def __init__(self, max_iter: int = 50, tol: float = 1e-8):
        self.max_iter = max_iter
        self.tol = tol

    def sufficient_statistics(self, block, latent):
        k = latent.shape[1]
        counts = np.asarray(block.XT @ latent).reshape(-1, k, k)     # [a, label, truth]
        return np.array([np.trace(counts, axis1=1, axis2=2).sum(), counts.sum()]), \
            latent.sum(axis=0)

    def m_step(self, stats):
        (correct, total), mass = stats
        k = len(mass)
        acc = (correct + 1) / (total + 2)
        log_pi = np.log(np.where(np.eye(k, dtype=bool), acc, (1 - acc) / (k - 1)))
        return np.log((mass + 1) / (mass + 1).sum()), log_pi

    def e_step(self, block, state):
        log_prior, log_pi = state
        weights = np.tile(log_pi.T, (block.X.shape[1] // len(log_prior), 1))
        post, log_norm = softmax_rows(block.with_log_prior(block.X @ weights + log_prior))
        return post, float(log_norm.sum())

    def finish(self, state, summary, template, history):
        log_prior, log_pi = state
        self.class_priors_ = np.exp(log_prior)
        self.confusion_matrices_ = np.broadcast_to(
            np.exp(log_pi), (len(template.annotator_ids),) + log_pi.shape).copy()
        self.n_iter_ = len(history)
        return self


class SharedAccuracyWithClassifier(SharedAccuracy):
    accepts_pred_probs = True


class PassThroughDawidSkene(DawidSkene):
    """A subclass that forwards the parent's settings through ``**kwargs``."""

    def __init__(self, extra: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.extra = extra


def test_a_subclass_that_takes_kwargs_is_refused_not_copied_without_its_settings():
    """``get_params`` would list ``extra`` only: ``clone`` (and every copy the library makes:
    ``auto``'s candidates, a Dask fit) would silently reset ``max_iter`` to the default."""
    model = PassThroughDawidSkene(extra=2.0, max_iter=5)
    with pytest.raises(TypeError, match=r"PassThroughDawidSkene.__init__ must not take "
                                        r"\*\*kwargs"):
        model.get_params()
    with pytest.raises(TypeError, match=r"\*\*kwargs"):
        model.set_params(max_iter=3)


class Delegating(EMLabelModel):
    """An EM-protocol model whose parameter is another label model: it runs that model's
    steps (``init_state`` returns the model that runs)."""

    accepts_gold = True

    def __init__(self, base=None, max_iter: int = 100, tol: float = 1e-5):
        self.base = base
        self.max_iter = max_iter
        self.tol = tol

    def init_state(self, summary):
        return (DawidSkene() if self.base is None else self.base).init_state(summary)


def test_a_model_with_a_label_model_parameter_runs_on_dask(crowd):
    """``aggregate`` copies the model with its parameters: not with ``get_params()``'s nested
    ``base__max_iter`` keys, which no constructor takes."""
    from protocol_blocks import dask_posteriors

    pytest.importorskip("dask.dataframe")
    reference = Delegating(base=DawidSkene(max_iter=5)).fit(crowd)
    proba, result, _ = dask_posteriors(crowd, Delegating(base=DawidSkene(max_iter=5)), 3)
    assert result.n_iter == reference.n_iter_ == 5
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-9)


def test_a_protocol_model_that_accepts_pred_probs_takes_them_in_memory_as_on_dask(sim, crowd):
    """``accepts_pred_probs`` made Dask wrap the model in ``ClassifierAnnotator``, while
    ``fit(annotations, pred_probs=...)`` refused the argument as a reader's keyword."""
    pd = pytest.importorskip("pandas")
    from protocol_blocks import dask_posteriors

    pytest.importorskip("dask.dataframe")
    probs = np.full((crowd.n_items, 3), 0.2)
    probs[np.arange(crowd.n_items), sim.y] = 0.6
    model = SharedAccuracyWithClassifier().fit(crowd, pred_probs=probs)
    frame = pd.DataFrame(probs, index=crowd.item_ids, columns=crowd.classes)
    proba, result, _ = dask_posteriors(crowd, SharedAccuracyWithClassifier(), 3,
                                       pred_probs=frame)
    assert model.classifier_weight_ > 0
    assert result.model.classifier_weight_ == pytest.approx(model.classifier_weight_)
    np.testing.assert_allclose(proba, model.predict_proba(), atol=1e-9)
    model.fit(crowd)                                # a refit without them forgets them
    assert not hasattr(model, "classifier_weight_")
    with pytest.raises(TypeError, match=r"^SharedAccuracy.fit\(\) does not take pred_probs"):
        SharedAccuracy().fit(crowd, pred_probs=probs)


def test_a_model_registered_as_a_function_runs_on_dask_by_name(crowd):
    """``register_label_model`` takes "a class or callable"; ``aggregate`` looked the name's
    factory up as a class and refused a function."""
    from protocol_blocks import dask_posteriors
    from crowd_keras.aggregation import get_label_model, register_label_model

    pytest.importorskip("dask.dataframe")
    register_label_model("shared_accuracy_fn", lambda max_iter=50: SharedAccuracy(max_iter))
    reference = get_label_model("shared_accuracy_fn", max_iter=4).fit(crowd)
    proba, result, _ = dask_posteriors(crowd, "shared_accuracy_fn", 3, max_iter=4)
    assert result.n_iter == reference.n_iter_ == 4
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-9)


class SmoothedVote(LabelModel):
    """A plain label model: ``fit`` and ``_posteriors_for`` (smoothed vote shares)."""

    def __init__(self, smoothing: float = 1.0):
        self.smoothing = smoothing

    def _posteriors_for(self, annotations):
        counts = annotations.label_counts() + self.smoothing
        return counts / counts.sum(axis=1, keepdims=True)

    def fit(self, annotations):
        self.annotations_ = as_annotations(annotations)
        self.posteriors_ = self._posteriors_for(self.annotations_)
        return self


def test_the_snorkel_adapter_saves_a_user_model_without_building_the_other_entries(
        crowd, tmp_path):
    """``save`` found the model's registry name by building every registered model in turn:
    an entry that cannot import (LIA without Keras, or here a lazy path to nowhere) made
    saving any model registered after it fail."""
    from crowd_keras.aggregation import register_label_model
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    register_label_model("not_installed", "no_such_package.models:Model")
    register_label_model("smoothed_vote", SmoothedVote)
    L = np.full((crowd.n_items, crowd.n_annotators), -1)
    L[crowd.items, crowd.annotators] = crowd.labels
    model = CrowdLabelModel(cardinality=3, method="smoothed_vote", smoothing=2.0).fit(L)
    model.save(tmp_path / "model.npz")
    loaded = CrowdLabelModel().load(tmp_path / "model.npz")
    assert loaded.label_model_.smoothing == 2.0
    np.testing.assert_allclose(loaded.predict_proba(L), model.predict_proba(L))


def test_gold_enters_a_protocol_model_that_accepts_it_in_memory_and_on_dask(sim, crowd):
    """ARCHITECTURE.md: gold enters every protocol model through the block's item log-prior;
    a model that adds it in its E-step says so with ``accepts_gold``."""
    from protocol_blocks import dask_posteriors

    pytest.importorskip("dask.dataframe")
    flipped = (SharedAccuracy().fit(crowd).predict()[:10] + 1) % 3    # not the crowd's answer
    gold = dict(zip(crowd.item_ids[:10], crowd.classes[flipped]))
    model = SharedAccuracy().fit(crowd, gold=gold)
    np.testing.assert_array_equal(model.predict()[:10], flipped)
    proba, *_ = dask_posteriors(crowd, SharedAccuracy(), 3, gold=gold)
    np.testing.assert_allclose(proba, model.predict_proba(), atol=1e-9)

    class NoGold(SharedAccuracy):
        accepts_gold = False

    with pytest.raises(TypeError, match=r"NoGold.fit\(\) does not take gold labels"):
        NoGold().fit(crowd, gold=gold)


def test_a_subclass_of_a_built_in_model_runs_its_parents_strategy_on_dask():
    """A subclass of the abstain-aware model ran as a bare ``ProtocolMethod`` on Dask: its
    annotator report had other columns than in memory (and than its parent's on Dask), and
    its ``class_balance_`` another value."""
    from protocol_blocks import dask_posteriors
    from crowd_keras.aggregation import AbstainAwareDawidSkene, register_label_model

    pytest.importorskip("dask.dataframe")

    class MyAbstain(AbstainAwareDawidSkene):
        pass

    ann = simulate_crowd(n_items=150, n_classes=2, n_annotators=6, annotations_per_item=3,
                         seed=2).annotations
    register_label_model("my_abstain", MyAbstain)
    reference = MyAbstain().fit(ann)
    for method in ("my_abstain", MyAbstain()):
        proba, result, _ = dask_posteriors(ann, method, 3)
        assert type(result.model) is MyAbstain
        np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-9)
        assert list(result.annotator_quality.columns) == \
            list(reference.annotator_quality_.columns)
        np.testing.assert_allclose(result.model.class_balance_, reference.class_balance_,
                                   atol=1e-9)


def test_auto_with_gold_names_a_candidate_that_does_not_take_gold(crowd):
    """In memory the held-out fit failed with the candidate's own TypeError; on Dask the
    candidate silently had gold held in its fits."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    from crowd_keras.aggregation import AutoLabelModel, MajorityVote
    from crowd_keras.distributed import aggregate

    class NoGold(SharedAccuracy):
        accepts_gold = False

    gold = dict(zip(crowd.item_ids[:5], crowd.classes[[0, 1, 2, 0, 1]]))
    message = r"^AutoLabelModel candidate 'mine' \(NoGold\) does not take gold labels"
    auto = AutoLabelModel(candidates=[("mv", MajorityVote()), ("mine", NoGold())],
                          max_repeats=1)
    with pytest.raises(TypeError, match=message):
        auto.fit(crowd, gold=gold)
    with pytest.raises(TypeError, match=message), dask.config.set(scheduler="sync"):
        aggregate(dd.from_pandas(crowd.to_frame(), npartitions=2), auto, gold=gold)
    assert AutoLabelModel(candidates=[("mv", MajorityVote()), ("mine", SharedAccuracy())],
                          max_repeats=1).fit(crowd, gold=gold).n_gold_ == 5


def test_a_fit_with_a_classifier_is_shown_under_the_models_name(sim, crowd, capsys):
    """The progress bar of ``fit(..., pred_probs=...)`` was named after the wrapper
    (``ClassifierAnnotator``) and its ``progress="auto"`` was turned into ``True``."""
    from crowd_keras.aggregation.em import ClassifierAnnotator

    class Shown(SharedAccuracyWithClassifier):
        def __init__(self, max_iter: int = 3, tol: float = 1e-8, progress=True):
            super().__init__(max_iter, tol)
            self.progress = progress

    assert ClassifierAnnotator(Shown(progress="auto")).progress == "auto"
    probs = np.full((crowd.n_items, 3), 0.2)
    probs[np.arange(crowd.n_items), sim.y] = 0.6
    Shown().fit(crowd, pred_probs=probs)
    shown = capsys.readouterr().err
    assert "Shown EM with a classifier" in shown and "ClassifierAnnotator" not in shown


def test_dask_stops_em_by_the_running_models_rule_as_in_memory(crowd):
    """The engine stopped by the handing-over model's ``tol``, not the running one's, and
    ignored ``relative_tol``: on Dask such models ran other iterations than in memory."""
    from protocol_blocks import dask_posteriors

    pytest.importorskip("dask.dataframe")

    class RelativeSharedAccuracy(SharedAccuracy):
        relative_tol = True

        def objective_scale(self, summary):
            return 1.0          # the summed objective: relative and absolute tol differ

    for make in (lambda: Delegating(base=DawidSkene(tol=1e-2), tol=1e-12),
                 lambda: RelativeSharedAccuracy(tol=1e-3)):
        reference = make().fit(crowd)
        proba, result, _ = dask_posteriors(crowd, make(), 3)
        assert result.n_iter == reference.n_iter_ < 50, type(make()).__name__
        np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-9)


def test_the_snorkel_adapter_reads_a_method_alias_as_its_registry_name():
    """``method="default"`` (the registry's alias of ``"auto"``) skipped the adapter's choice
    for labeling functions and fitted another model than ``"auto"``; ``" Auto"`` was
    unknown to the adapter though the registry reads it."""
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    L = np.full((300, 6), -1)
    for j in range(6):                                   # one-class labeling functions
        fires = (rng.random(300) < 0.4) & ((y == j % 2) | (rng.random(300) < 0.2))
        L[fires, j] = j % 2
    fitted = {method: CrowdLabelModel(cardinality=2, method=method).fit(L, progress_bar=False)
              for method in ("auto", "default", " Auto")}
    kinds = {method: type(model.label_model_).__name__ for method, model in fitted.items()}
    assert set(kinds.values()) == {"AbstainAwareDawidSkene"}, kinds
    np.testing.assert_allclose(fitted["default"].get_weights(), fitted["auto"].get_weights())


@pytest.mark.parametrize("name", ["majority_vote", "abstain_dawid_skene"])
def test_a_built_in_name_given_to_another_model_runs_that_model_on_dask(crowd, name):
    """registries.md: a name registered again replaces the earlier entry, a built-in one too.
    ``aggregate`` kept the built-in's strategy for the name and failed on the new model
    ('SharedAccuracy' object has no attribute 'check_tie_break' / 'class_mass')."""
    from protocol_blocks import dask_posteriors
    from crowd_keras.aggregation import register_label_model
    from crowd_keras.aggregation.registry import label_model_class

    pytest.importorskip("dask.dataframe")
    original = label_model_class(name)
    register_label_model(name, SharedAccuracy)
    try:
        reference = SharedAccuracy(max_iter=4).fit(crowd)
        proba, result, _ = dask_posteriors(crowd, name, 3, max_iter=4)
        assert type(result.model) is SharedAccuracy
        np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-9)
    finally:
        register_label_model(name, original)
    assert label_model_class(name) is original


def test_a_protocol_step_left_out_is_named():
    # a bare NotImplementedError said nothing of which step was missing
    class NoMStep(SharedAccuracy):
        m_step = EMLabelModel.m_step

    class NoFinish(SharedAccuracy):
        finish = EMLabelModel.finish

    ann = simulate_crowd(n_items=30, n_classes=2, n_annotators=4, annotations_per_item=2,
                         seed=0).annotations
    with pytest.raises(NotImplementedError, match=r"NoMStep does not define the EM-step "
                                                  r"protocol's m_step\(stats\)"):
        NoMStep().fit(ann)
    with pytest.raises(NotImplementedError, match=r"NoFinish does not define .* finish\("):
        NoFinish().fit(ann)


def test_max_iter_0_is_refused_naming_the_model(crowd):
    with pytest.raises(ValueError, match="SharedAccuracy max_iter must be at least 1 for an "
                                         "EM fit, got 0"):
        SharedAccuracy(max_iter=0).fit(crowd)
