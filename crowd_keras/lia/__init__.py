"""LIA, "Learning from Imperfect Annotations" (ICLR 2020 submission): the whole family.

A confusion matrix per (item, annotator) pair from a learned item difficulty and annotator
competence (Eq. 1), trained by EM around a classifier:

* :mod:`.layers`: :class:`DifficultyCompetence` (Eq. 1) and :class:`AnnotationLogLikelihoods`;
* :mod:`.losses`: :class:`ExpectedCompleteNLL` (Eq. 7), :class:`MarginalNLL` (Eq. 9);
* :mod:`.trainer`: :class:`LIATrainer`, the paper's EM (Eqs. 4, 7, 8, 9) around any classifier;
* :mod:`.em`: :class:`FeatureFreeLIA`, the trainer's feature-free EM (LIA-E) in numpy;
* :mod:`.label_model`: :class:`LIA`, the label-model surface (registered as ``"lia"``).

Every module here but :mod:`.em` imports Keras; nothing is imported by this file.
"""
