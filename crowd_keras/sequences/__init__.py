"""Spans and sequences from crowds: tokens, span ↔ tag coding, sequence label models.

A family package (docstring only, like ``crowd_keras.conal``): every module here is numpy
only (layer 2 of ``ARCHITECTURE.md``); the Keras side of sequence labelling is the sequence
form of :class:`crowd_keras.layers.CrowdLayer` with its Keras mask.

Modules:

* :mod:`.tokens`: explicit, pluggable tokenisation (default: maximal runs of non-space
  characters, ``str.isspace``, with character offsets) into one flat :class:`Tokens` table.
* :mod:`.spans`: character spans ↔ per-token IO/BIO tags, vectorised, with every odd case
  counted.
* :mod:`.annotations`: :class:`SequenceAnnotations`, who marked which spans in which
  document, encoded for the label models as a token-level :class:`crowd_keras.Annotations`.
* :mod:`.models` (token majority vote, token Dawid-Skene with shrinkage, a text prior and
  tempered decoding), :mod:`.hmm` (HMM-Crowd), on the surface of :mod:`.base`; by name
  through :mod:`.registry`. Token Dawid-Skene and HMM-Crowd are the EM-step protocol of
  :mod:`crowd_keras.aggregation.em` over blocks of whole documents (:mod:`.em`).
* :mod:`.text_prior` (token Dawid-Skene with a cross-fitted word-window prior: the default),
  :mod:`.bsc` (BSC-seq's sequential worker model by EM), :mod:`.calibration` (a decoding
  threshold chosen by held-out annotator agreement), :mod:`.length_prior` (the crowd's own
  tag chain as a span-length prior over any token model).
* :mod:`.labeling_functions` (span labeling functions, their votes and summary) and
  :mod:`.weak` (token Dawid-Skene with abstain as an outcome: functions and annotators
  together).
* :mod:`.formats`: spans in and out as token tag lists (IO, BIO, BILOU), character-offset
  JSON lines and spaCy ``Doc.spans`` / ``Doc.ents``.
* :mod:`.chains`: forward-backward and Viterbi vectorised across sequences.
* :mod:`.quality` (per-annotator span/token quality, token P/R/F1), :mod:`.selection` (the
  held-out worker likelihood used to choose settings without gold), :mod:`.batches`
  (vocabulary and fixed-length windows for Keras taggers).
"""
