"""Inter-annotator agreement: chance-corrected statistics, pairwise and per annotator, per
class, for spans, with bootstrap intervals and one report (numpy, scipy and pandas only).

>>> from crowd_keras.agreement import krippendorff_alpha, fleiss_kappa, cohen_kappa_matrix
>>> alpha = krippendorff_alpha(annotations, level="nominal")      # doctest: +SKIP

Every function takes a :class:`~crowd_keras.Annotations` or a
:class:`~crowd_keras.sequences.annotations.SequenceAnnotations` (token level). Items with a
single annotation pair with nothing: the statistics leave them out and
:func:`item_counts` / :func:`agreement_report` count them. See ``docs/agreement.md``.
"""
from .alpha import LEVELS, coincidence_matrix, krippendorff_alpha, per_class_alpha
from .bootstrap import bootstrap_ci
from .kappa import (annotator_agreement, cohen_kappa_matrix, fleiss_kappa, item_agreement,
                    overlap_matrix, pairwise_kappas, percent_agreement)
from .report import AgreementReport, agreement_report, item_counts
from .spans import span_agreement, span_pairwise_f1, SPAN_MATCHINGS

__all__ = ["LEVELS", "krippendorff_alpha", "coincidence_matrix", "per_class_alpha",
           "fleiss_kappa", "percent_agreement", "item_agreement", "pairwise_kappas",
           "cohen_kappa_matrix", "overlap_matrix", "annotator_agreement", "bootstrap_ci",
           "span_agreement", "span_pairwise_f1", "SPAN_MATCHINGS", "AgreementReport",
           "agreement_report", "item_counts"]
