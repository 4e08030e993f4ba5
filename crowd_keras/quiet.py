"""Quiet start-up of TensorFlow for the command lines and examples.

TensorFlow prints banners when it is imported (oneDNN, CPU instructions, absl's "log
messages before absl::InitializeLog()"): noise for a user who asked for labels. The switches
are read once, when TensorFlow is imported, so :func:`quiet_tensorflow` must run before
that; it sets defaults only, and a value the user exported wins. ``verbose=True`` (the
``--verbose`` flag) leaves everything as it is.
"""
from __future__ import annotations

import logging
import os

__all__ = ["quiet_tensorflow", "QUIET_ENV"]

#: Environment defaults that silence TensorFlow's C++ logging and its oneDNN notice.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}


def quiet_tensorflow(verbose: bool = False) -> None:
    """Silence TensorFlow's start-up messages unless ``verbose`` (call before importing it)."""
    if verbose:
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    # absl (TensorFlow's Python logging) goes through the "absl" logger once it is imported
    logging.getLogger("absl").setLevel(logging.ERROR)
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
