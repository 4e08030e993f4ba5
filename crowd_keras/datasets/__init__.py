"""Synthetic crowds with known truth, and loaders for the public crowdsourcing sets.

The loaders find their files in the folder they are given, ``$CROWD_KERAS_DATA``, the user
cache (``$CROWD_KERAS_CACHE``, default ``~/.cache/crowd-keras``), or download them once from
the set's public source with pinned checksums (:mod:`crowd_keras.datasets.fetch`).
"""
from .fetch import CACHE_ENV, DATA_ENV, MIRROR_ENV, cache_dir, locate
from .loaders import (LABELME_CLASSES, TRUTH_INFERENCE_SETS, WRENCH_SETS, CrowdDataset,
                      load_labelme, load_music, load_truth_inference,
                      load_truth_inference_features, load_wrench)
from .pico import PICO_SPLITS, load_pico
from .failure_kinds import FAILURE_KINDS, FailureCrowd, simulate_failure_kind, simulate_hard_crowd
from .simulate import DEFAULT_GROUPS, SimulatedCrowd, simulate_crowd

__all__ = ["simulate_crowd", "SimulatedCrowd", "DEFAULT_GROUPS", "CrowdDataset", "load_labelme",
           "load_music", "load_truth_inference", "load_truth_inference_features", "load_wrench",
           "load_pico", "PICO_SPLITS", "TRUTH_INFERENCE_SETS", "WRENCH_SETS", "LABELME_CLASSES",
           "locate", "cache_dir", "DATA_ENV", "CACHE_ENV", "MIRROR_ENV",
           "FAILURE_KINDS", "FailureCrowd", "simulate_failure_kind", "simulate_hard_crowd"]
