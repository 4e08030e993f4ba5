"""Sequence label models by name (``crowd-keras label-studio aggregate --sequence-model``).

A registry of its own, beside :mod:`crowd_keras.aggregation.registry`: the models here fit a
:class:`~.annotations.SequenceAnnotations` (documents, token order, texts), not the
:class:`~crowd_keras.Annotations` that ``get_label_model``'s contract (and every command line
and adapter using it) hands a label model, so listing them there would offer models that
cannot fit what those callers pass. A :class:`~crowd_keras.registry.LazyRegistry` of lazy
``"module:Class"`` paths, as there.
"""
from __future__ import annotations

from typing import Any, List

from ..registry import LazyRegistry

__all__ = ["get_sequence_model", "sequence_model_class", "available_sequence_models",
           "register_sequence_model", "new_sequence_model", "DEFAULT_SEQUENCE_MODEL",
           "SEQUENCE_MODELS"]

#: The sequence model used when none is named (the Label Studio span aggregation's default):
#: token Dawid-Skene with a cross-fitted word-window prior, chosen by held-out annotator
#: agreement on PICO's training abstracts (benchmarks/results/spans.md gives the rule).
DEFAULT_SEQUENCE_MODEL = "text_prior_dawid_skene"

#: Every sequence label model by name, in the order the command line lists them.
SEQUENCE_MODELS = LazyRegistry("sequence model")
SEQUENCE_MODELS.register("majority_vote", "crowd_keras.sequences.models:TokenMajorityVote", "mv")
SEQUENCE_MODELS.register("dawid_skene", "crowd_keras.sequences.models:TokenDawidSkene", "ds")
SEQUENCE_MODELS.register("hmm_crowd", "crowd_keras.sequences.hmm:HMMCrowd", "hmm")
SEQUENCE_MODELS.register("text_prior_dawid_skene",
                         "crowd_keras.sequences.text_prior:WindowPriorDawidSkene", "text_ds")
SEQUENCE_MODELS.register("bsc_seq", "crowd_keras.sequences.bsc:SequentialAnnotatorHMM", "bsc")
SEQUENCE_MODELS.register("calibrated", "crowd_keras.sequences.calibration:CalibratedThreshold")
SEQUENCE_MODELS.register("span_length_prior",
                         "crowd_keras.sequences.length_prior:SpanLengthPrior", "chain")
SEQUENCE_MODELS.register("abstain_dawid_skene", "crowd_keras.sequences.weak:AbstainDawidSkene",
                         "lf_ds")


def register_sequence_model(name: str, factory: Any, *aliases: str) -> None:
    """Make ``get_sequence_model(name, **kwargs)`` build ``factory(**kwargs)`` (a class,
    callable or lazy ``"module:Class"`` path)."""
    SEQUENCE_MODELS.register(name, factory, *aliases)


def sequence_model_class(name: str) -> Any:
    """The class registered under ``name`` (or an alias: ``mv``, ``ds``, ``hmm``, ``text_ds``,
    ``bsc``, ``chain``, ``lf_ds``)."""
    return SEQUENCE_MODELS.resolve(name)


def get_sequence_model(name: str = DEFAULT_SEQUENCE_MODEL, **kwargs: Any) -> Any:
    """A new, unfitted sequence label model."""
    return SEQUENCE_MODELS.create(name, **kwargs)


def new_sequence_model(model: Any) -> Any:
    """A new, unfitted sequence model from a registered name, or from an unfitted sequence
    model (a clone built from its ``get_params``): what a wrapper model fits."""
    from .base import SequenceLabelModel
    if isinstance(model, str):
        return get_sequence_model(model)
    if not isinstance(model, SequenceLabelModel):
        raise TypeError(f"model must be a sequence model name or a SequenceLabelModel, "
                        f"got {type(model).__name__}")
    return type(model)(**model.get_params(deep=False))


def available_sequence_models() -> List[str]:
    """Primary names, in the order the command line lists them."""
    return SEQUENCE_MODELS.names()
