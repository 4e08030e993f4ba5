"""CoNAL, common noise adaptation (Chu, Ma & Wang, AAAI 2021): one model family, three forms.

* :mod:`.layers`: :class:`AnnotatorGate` and :class:`CommonNoiseAdaptation`, the Keras layers
  (a common and an individual confusion matrix per annotation, mixed by ω);
* :mod:`.label_model`: :class:`CommonNoiseModel`, the same noise model without features,
  fitted by EM (registered as ``"conal"``).

Nothing is imported here, so the numpy label model never pulls in Keras; use the modules or
the re-exports in :mod:`crowd_keras.layers` and :mod:`crowd_keras.aggregation`.
"""
