"""Quiet start-up of TensorFlow for the command lines and examples.

TensorFlow prints banners when it is imported (oneDNN, CPU instructions, absl's "log
messages before absl::InitializeLog()"): noise for a user who asked for labels. The switches
are read once, when TensorFlow is imported, so :func:`quiet_tensorflow` must run before
that; it sets defaults only, and a value the user exported wins. ``verbose=True`` (the
``--verbose`` flag) leaves everything as it is. The full TensorFlow wheel also writes a CUDA
probe from C++ while it loads, which no setting silences: :func:`quiet_import` filters it.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from typing import Iterator

__all__ = ["quiet_tensorflow", "quiet_import", "QUIET_ENV"]

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


# Lines TensorFlow writes to the process' stderr (file descriptor 2, from C++) while it loads,
# before its logging settings apply: the CUDA probe of the full wheel on a machine without
# CUDA drivers, absl's pre-initialisation notice, oneDNN and CPU-instruction banners.
_NOISE = re.compile(
    r"cudart_stub\.cc|All log messages before absl::InitializeLog|could not find cuda drivers"
    r"|Unable to register cu(DNN|FFT|BLAS) factory|computation_placer|oneDNN custom operations"
    r"|cpu_feature_guard|This TensorFlow binary is optimized|rebuild TensorFlow with the"
    r"|^To enable the following instructions", re.IGNORECASE)


@contextlib.contextmanager
def quiet_import(verbose: bool = False) -> Iterator[None]:
    """``with quiet_import(): import keras`` hides TensorFlow's load-time lines from C++.

    Descriptor 2 is sent to a temporary file during the block; afterwards every line that
    is not one of the known start-up notices is written back to stderr, so warnings and
    errors still show. ``verbose=True``: nothing is hidden.
    """
    quiet_tensorflow(verbose)
    if verbose:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines = tmp.read().decode("utf-8", "replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not _NOISE.search(line)))
            sys.stderr.flush()
