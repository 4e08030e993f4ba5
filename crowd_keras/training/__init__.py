"""Training procedures that go beyond a single `fit` (EM over a classifier and a crowd model)."""
from .lia_em import LIATrainer
from .mixture_em import MixtureOfGroupsEM

__all__ = ["MixtureOfGroupsEM", "LIATrainer"]
