"""Mixture of annotator groups (Mena & Ñanculef 2019, "CMM"): the whole family in one place.

* :mod:`.em`: the numpy EM pieces (global scenario on label counts, one group per annotator,
  K-means initialisation, group pruning, section 3.4);
* :mod:`.label_model`: :class:`MixtureOfGroupsModel`, feature-free (registered as
  ``"mixture_of_groups"``);
* :mod:`.layers`: :class:`MixtureOfGroups`, the Keras layer; :mod:`.losses`:
  :class:`LabelCountCrossEntropy` (Eq. 4);
* :mod:`.trainer`: :class:`MixtureOfGroupsEM`, the paper's EM around any Keras classifier.

Nothing is imported here, so the numpy modules never pull in Keras.
"""
