"""The crowd layer (Rodrigues & Pereira, AAAI 2018): a noise layer per annotator on a classifier.

* :mod:`.layers`: :class:`CrowdLayer` (``MW``, ``VW``, ``VB``, ``VW+B``, ``S``);
* :mod:`.regression`: :class:`CrowdRegressionLayer` (``S``, ``B``, ``S+B``).

Train them with :class:`crowd_keras.models.CrowdModel` and the masked losses of
:mod:`crowd_keras.losses`. Re-exported by :mod:`crowd_keras.layers`.
"""
