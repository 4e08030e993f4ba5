"""crowd-keras: train Keras models from the noisy labels of many annotators.

The core (``Annotations``, the label models in ``crowd_keras.aggregation``, the simulator
and loaders in ``crowd_keras.datasets``) needs only numpy, scipy and pandas; Keras is
imported only by ``crowd_keras.layers``, ``crowd_keras.losses`` and ``crowd_keras.models``.
"""
from .annotations import Annotations
from .errors import CrowdDataError

__version__ = "0.1.0"

__all__ = ["Annotations", "CrowdDataError", "__version__"]
