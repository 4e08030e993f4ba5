"""Sequence label models by name (``crowd-keras label-studio aggregate --sequence-model``).

A registry of its own, beside :mod:`crowd_keras.aggregation.registry`: the models here fit a
:class:`~.annotations.SequenceAnnotations` (documents, token order, texts), not the
:class:`~crowd_keras.Annotations` that ``get_label_model``'s contract (and every command line
and adapter using it) hands a label model, so listing them there would offer models that
cannot fit what those callers pass. Entries are lazy ``"module:Class"`` paths, as there.
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, List

__all__ = ["get_sequence_model", "sequence_model_class", "available_sequence_models",
           "DEFAULT_SEQUENCE_MODEL"]

#: The sequence model used when none is named (the Label Studio span aggregation's default):
#: token Dawid-Skene with a cross-fitted word-window prior, chosen by held-out annotator
#: agreement on PICO's training abstracts (benchmarks/results/spans.md gives the rule).
DEFAULT_SEQUENCE_MODEL = "text_prior_dawid_skene"

_MODELS: Dict[str, str] = {
    "majority_vote": "crowd_keras.sequences.models:TokenMajorityVote",
    "dawid_skene": "crowd_keras.sequences.models:TokenDawidSkene",
    "hmm_crowd": "crowd_keras.sequences.hmm:HMMCrowd",
    "text_prior_dawid_skene": "crowd_keras.sequences.text_prior:WindowPriorDawidSkene",
    "bsc_seq": "crowd_keras.sequences.bsc:SequentialAnnotatorHMM",
    "calibrated": "crowd_keras.sequences.calibration:CalibratedThreshold",
    "abstain_dawid_skene": "crowd_keras.sequences.weak:AbstainDawidSkene",
}
_ALIASES = {"mv": "majority_vote", "ds": "dawid_skene", "hmm": "hmm_crowd",
            "text_ds": "text_prior_dawid_skene", "bsc": "bsc_seq", "lf_ds": "abstain_dawid_skene"}


def _key(name: str) -> str:
    key = str(name).strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in _MODELS:
        raise ValueError(f"unknown sequence model {name!r}; available: {available_sequence_models()}")
    return key


def sequence_model_class(name: str) -> Any:
    """The class registered under ``name`` (or an alias: ``mv``, ``ds``, ``hmm``, ``text_ds``,
    ``bsc``, ``lf_ds``)."""
    module, _, attr = _MODELS[_key(name)].partition(":")
    return getattr(importlib.import_module(module), attr)


def get_sequence_model(name: str = DEFAULT_SEQUENCE_MODEL, **kwargs: Any) -> Any:
    """A new, unfitted sequence label model."""
    return sequence_model_class(name)(**kwargs)


def available_sequence_models() -> List[str]:
    """Primary names, in the order the command line lists them."""
    return list(_MODELS)
