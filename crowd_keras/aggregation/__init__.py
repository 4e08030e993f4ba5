"""Label models without features: infer true labels from the annotations alone."""
from .abstain_dawid_skene import AbstainAwareDawidSkene
from .base import LabelModel, as_annotations
from .common_noise import CommonNoiseModel
from .dawid_skene import DawidSkene
from .lia import LIA
from .majority_vote import MajorityVote
from .mixture_of_groups import MixtureOfGroupsModel, counts_to_annotations
from .registry import available_label_models, get_label_model, register_label_model

register_label_model("majority_vote", MajorityVote, "mv")
register_label_model("dawid_skene", DawidSkene, "ds")
register_label_model("conal", CommonNoiseModel, "common_noise")
register_label_model("mixture_of_groups", MixtureOfGroupsModel, "mog", "cmm")
register_label_model("lia", LIA, "difficulty_competence")

__all__ = ["LabelModel", "as_annotations", "MajorityVote", "DawidSkene", "AbstainAwareDawidSkene",
           "CommonNoiseModel", "MixtureOfGroupsModel", "LIA", "counts_to_annotations",
           "register_label_model", "get_label_model", "available_label_models"]
