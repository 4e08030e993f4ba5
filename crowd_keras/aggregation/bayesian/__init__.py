"""Bayesian label models: IBCC, EBCC and BWA, each written as the EM-step protocol.

- :class:`IBCC` (Kim & Ghahramani, AISTATS 2012): Dawid-Skene with Dirichlet priors on the
  class proportions and on every row of every annotator's confusion matrix, fitted by
  variational Bayes (:mod:`.ibcc`).
- :class:`EBCC` (Li, Rubinstein & Cohn, ICML 2019): IBCC whose confusion of each true class is
  a mixture of ``num_groups`` subtypes shared by all annotators, which lets annotators'
  errors be correlated (:mod:`.ebcc`).
- :class:`BWA` (Li, Rubinstein & Cohn, WWW 2019): one binary Bayesian weighted average per
  class, one precision per annotator and class (:mod:`.bwa`).

Every model is a :class:`~crowd_keras.aggregation.em.EMLabelModel`: its statistics are sums
over items of sparse products with the vote incidence, so a fit split into blocks is the
same fit (see :mod:`crowd_keras.aggregation.em`). See ``docs/bayesian-label-models.md``.
"""
from .base import BayesianLabelModel
from .bwa import BWA
from .ebcc import EBCC
from .ibcc import IBCC

__all__ = ["BayesianLabelModel", "IBCC", "EBCC", "BWA"]
