"""Keras callbacks of the library."""
from __future__ import annotations

from typing import Any

from . import keras_required  # noqa: F401  (one clear line without Keras)
import keras
import numpy as np
from keras import ops

from ._keras_utils import checked_bool, checked_codes, checked_finite, checked_int, n_rows
from .errors import CrowdDataError
from .progress import Progress

__all__ = ["TruthValidation", "FitProgress"]


class FitProgress(keras.callbacks.Callback):
    """Progress of ``model.fit(..., verbose=0)`` through :class:`crowd_keras.progress.Progress`:
    a tqdm bar over all batches of all epochs when tqdm is installed and the stream is a
    terminal or a notebook's, else (a log file, a pipe) a line on stderr every ``interval``
    seconds, and a last line with the epoch reached and its logs.

    Keras' own ``verbose=1`` bar is per epoch and floods a log file; this one is one bar for
    the whole fit, and ends early (``stopped``) under early stopping. ``stream`` and
    ``use_tqdm`` as in :class:`~crowd_keras.progress.Progress`.
    """

    def __init__(self, desc: str = "training", interval: float = 5.0, disable: bool = False,
                 stream: Any = None, use_tqdm: Any = None) -> None:
        super().__init__()
        # checked here: a string or None interval failed at the first batch of training,
        # and disable="no" (truthy) hid the progress
        self.interval = checked_finite(interval, "interval")
        if self.interval < 0:
            raise ValueError(f"Received an invalid value for `interval`, expected seconds >= 0. "
                             f"Received: interval={interval!r}")
        self.desc, self.disable = desc, checked_bool(disable, "disable")
        self.stream = stream
        self.use_tqdm = None if use_tqdm is None else checked_bool(use_tqdm, "use_tqdm")
        self._bar = None
        self._epoch = 0
        self._first_epoch = None   # the fit's initial_epoch, known at its first epoch
        self._steps = None         # batches per epoch, counted in the first when unknown

    def on_train_begin(self, logs: Any = None) -> None:
        self._bar, self._first_epoch, self._steps = None, None, self.params.get("steps")

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch = epoch
        if self._bar is None:
            # Keras' params hold the last epoch, not initial_epoch: the bar counts the batches
            # of the epochs this fit runs (a dataset of unknown length: the first epoch's
            # batches times the epochs, set when the first epoch ends)
            self._first_epoch = epoch
            epochs = max((self.params.get("epochs") or 1) - epoch, 1)
            self._bar = Progress((self._steps or 1) * epochs, self.desc, disable=self.disable,
                                 interval=self.interval, unit="batch", stream=self.stream,
                                 use_tqdm=self.use_tqdm)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        # under steps_per_execution > 1 Keras calls this once per execution with the index of
        # its last batch (past the epoch's end for a short last one): the bar follows the
        # index, as Keras' own progress bar does, not the number of calls
        in_epoch = batch + 1 if self._steps is None else min(batch + 1, self._steps)
        position = (self._epoch - self._first_epoch) * (self._steps or 0) + in_epoch
        if position > self._bar.done:
            self._bar.update(position - self._bar.done)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self._steps is None and epoch == self._first_epoch:
            self._steps = self._bar.done
            epochs = max((self.params.get("epochs") or 1) - epoch, 1)
            self._bar.set_total(self._steps * epochs)
        if logs:
            self._bar.set_postfix(epoch=epoch + 1,
                                  **{k: f"{float(v):.4f}" for k, v in logs.items()})

    def on_train_end(self, logs: Any = None) -> None:
        if self._bar is not None:
            self._bar.close()


class TruthValidation(keras.callbacks.Callback):
    """Score the classifier on gold-labelled validation data each epoch; keep the best weights.

    Model selection for a crowd model must not use test labels: give it a validation split
    with true labels (e.g. LabelMe's). Logs ``logs[name]`` (accuracy) every epoch and, with
    ``restore_best_weights``, puts back the classifier's best weights when training ends.
    Keras' monitor callbacks (``EarlyStopping``, ``ModelCheckpoint``) watching ``name`` need
    ``mode="max"``: a value a callback logs is no compiled metric whose direction they can read.

    Args:
        x, y: validation inputs (an array) and true class codes ``(n,)``, integers in
            ``0..K-1`` (anything else is a :class:`~crowd_keras.CrowdDataError`).
        classifier: the model to score; default ``self.model.classifier`` (a ``CrowdModel``).
        restore_best_weights: put back the classifier's weights of its best epoch when
            training ends.
        name: the key of the accuracy in the epoch's ``logs``.
        batch_size: rows of ``x`` per prediction call.

    Attributes:
        best_: the best accuracy so far.
        best_epoch_: its epoch (None before the first).
        history_: the accuracy of every epoch.
    """

    def __init__(self, x: Any, y: Any, classifier: Any = None, restore_best_weights: bool = True,
                 name: str = "val_truth_accuracy", batch_size: int = 1024) -> None:
        super().__init__()
        self.x, self.y = x, np.asarray(y)
        if self.y.ndim == 2 and self.y.shape[1] == 1:   # a column of codes, as Keras takes
            self.y = self.y[:, 0]
        rows = n_rows(x)   # arrays, tensors, or a list / dict of them (a multi-input model)
        # one code per row: (n, 1) or one-hot (n, K) labels met the (n,) predictions in a
        # broadcast comparison, a wrong accuracy without an error
        if self.y.ndim != 1 or (rows is not None and rows != len(self.y)):
            raise ValueError(f"TruthValidation: y must hold the true class codes of each row of x "
                             f"({rows} rows), got shape {self.y.shape}")
        # class codes 0..K-1 (K checked against the classifier at the first epoch's end):
        # names such as "cat", -1 or 1.5 never equal an argmax, an accuracy of 0 every epoch
        self.y = checked_codes(self.y, None, "true class", "TruthValidation y", "classes")
        if (self.y < 0).any():
            row = int(np.argmax(self.y < 0))
            raise CrowdDataError(f"TruthValidation y: true class -1 at row {row} is no class "
                                 "code; validation rows need a true class (leave out the rows "
                                 "without one)")
        self.classifier = classifier
        self.restore_best_weights = checked_bool(restore_best_weights, "restore_best_weights")
        # checked here: 0 failed at the first epoch's end in range(), 2.5 in slicing
        self.name, self.batch_size = name, checked_int(batch_size, "batch_size")
        self.best_, self.best_epoch_, self.history_ = -np.inf, None, []
        self._best_weights = None

    def _target(self) -> Any:
        if self.classifier is not None:
            return self.classifier
        clf = getattr(self.model, "classifier", None)
        if clf is None:   # a plain Keras model ending in a crowd layer: an AttributeError
            raise ValueError(f"TruthValidation scores the classifier of a CrowdModel; model "
                             f"{self.model.name!r} ({type(self.model).__name__}) has none: pass "
                             "classifier= (the model that outputs the class probabilities)")
        return clf

    def on_train_begin(self, logs: Any = None) -> None:
        self._target()   # before the first epoch's training: a model without a classifier
        self.best_, self.best_epoch_, self.history_, self._best_weights = -np.inf, None, [], None

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        clf = self._target()
        step = self.batch_size
        probs = np.concatenate([  # direct calls: cheaper than predict() once per epoch
            ops.convert_to_numpy(clf(keras.tree.map_structure(lambda a: a[i:i + step], self.x),
                                     training=False))
            for i in range(0, len(self.y), step)])
        if probs.ndim != 2:
            raise ValueError("TruthValidation scores one class per row: the classifier must "
                             f"output (rows, classes), got shape {probs.shape}")
        if len(self.y) and self.y.max() >= probs.shape[1]:   # never an argmax: no hit
            row = int(np.argmax(self.y))
            raise CrowdDataError(f"TruthValidation y: true class {self.y[row]} at row {row} is "
                                 f"outside 0..{probs.shape[1] - 1} (the classifier's "
                                 f"{probs.shape[1]} classes)")
        acc = float(np.mean(np.argmax(probs, axis=-1) == self.y))
        self.history_.append(acc)
        if logs is not None:
            logs[self.name] = acc
        if acc > self.best_:
            self.best_, self.best_epoch_ = acc, epoch
            if self.restore_best_weights:
                self._best_weights = clf.get_weights()

    def on_train_end(self, logs: Any = None) -> None:
        if self.restore_best_weights and self._best_weights is not None:
            self._target().set_weights(self._best_weights)
