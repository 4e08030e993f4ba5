"""Synthetic crowds with known truth, and loaders for the public crowdsourcing sets."""
from .loaders import (CrowdDataset, load_labelme, load_music, load_truth_inference,
                      load_truth_inference_features, load_wrench)
from .pico import PICO_SPLITS, load_pico
from .failure_kinds import FAILURE_KINDS, FailureCrowd, simulate_failure_kind, simulate_hard_crowd
from .simulate import DEFAULT_GROUPS, SimulatedCrowd, simulate_crowd

__all__ = ["simulate_crowd", "SimulatedCrowd", "DEFAULT_GROUPS", "CrowdDataset", "load_labelme",
           "load_music", "load_truth_inference", "load_truth_inference_features", "load_wrench", "load_pico", "PICO_SPLITS",
           "FAILURE_KINDS", "FailureCrowd", "simulate_failure_kind", "simulate_hard_crowd"]
