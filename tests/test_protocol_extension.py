"""A user's own label model, as the docs tell one to write it: a subclass of a library model,
an EM-step protocol model, a plain ``fit``/``predict_proba`` model, registered by name and
used where the library's models are (clone, the registry, Dask, ``auto``)."""
import numpy as np
import pytest

from crowd_keras.aggregation import DawidSkene
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
