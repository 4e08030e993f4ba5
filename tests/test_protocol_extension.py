"""A user's own label model, as the docs tell one to write it: a subclass of a library model,
an EM-step protocol model, a plain ``fit``/``predict_proba`` model, registered by name and
used where the library's models are (clone, the registry, Dask, ``auto``)."""
import numpy as np
import pytest

from crowd_keras.aggregation import DawidSkene
from crowd_keras.aggregation.em import EMLabelModel
from crowd_keras.datasets import simulate_crowd


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(n_items=120, n_classes=3, n_annotators=8, annotations_per_item=3,
                          seed=1).annotations


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
