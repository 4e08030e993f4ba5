"""Import Keras and its backend, or fail with one line that says which extra to install.

The core of crowd-keras (annotations, label models, the command lines) needs numpy, pandas
and scipy only; the Keras components come with an extra per backend. Every module that
imports Keras imports this module first, so a missing Keras or backend is reported as a
:class:`~crowd_keras.errors.MissingExtraError` instead of a ``ModuleNotFoundError`` from deep
inside Keras.
"""
from __future__ import annotations

import os

from .errors import MissingExtraError

__all__ = ["EXTRA_FOR_BACKEND", "missing_keras_message"]

#: The ``pip install 'crowd-keras[...]'`` extra that brings Keras with each backend.
EXTRA_FOR_BACKEND = {"tensorflow": "tensorflow", "torch": "torch", "jax": "jax"}


def missing_keras_message(missing: str) -> str:
    """The one-line message for a Keras import that failed on module ``missing``."""
    backend = os.environ.get("KERAS_BACKEND", "").strip().lower()
    extra = EXTRA_FOR_BACKEND.get(backend)
    if extra and missing != "keras":
        how = f"pip install 'crowd-keras[{extra}]' (KERAS_BACKEND={backend})"
    else:
        how = ("pip install 'crowd-keras[tensorflow]' (or [tensorflow-cpu], [torch], [jax]; "
               "set KERAS_BACKEND to match)")
    return (f"crowd-keras' Keras layers, losses and models need Keras 3 and a backend "
            f"(missing: {missing}): {how}")


try:
    import keras  # noqa: F401  (the import that is checked; Keras 3 imports its backend here)
except ImportError as exc:
    raise MissingExtraError(missing_keras_message(exc.name or "keras")) from None
