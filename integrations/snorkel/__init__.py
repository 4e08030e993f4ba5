"""A drop-in replacement for Snorkel's ``LabelModel`` backed by the label models of crowd-keras.

Snorkel users apply labeling functions to get a label matrix ``L`` (data points × functions,
-1 = abstain) and fit a label model to it. :class:`CrowdLabelModel` has the surface of
``snorkel.labeling.model.LabelModel`` (``fit``, ``predict``, ``predict_proba``, ``score``,
``get_weights``, ``get_conditional_probs``, ``save``, ``load``) with the same argument names,
defaults, validation and exception types, and any label model of the library behind it
(``method=``)::

    from crowd_keras.integrations.snorkel import CrowdLabelModel
    label_model = CrowdLabelModel(cardinality=2)          # was: LabelModel(cardinality=2)
    label_model.fit(L_train, n_epochs=500, seed=123)
    probs_train = label_model.predict_proba(L_train)
    df_train_filtered, probs_filtered = filter_unlabeled_dataframe(df_train, probs_train, L_train)

It needs only ``L`` and numpy: Snorkel itself is not imported. :func:`lf_quality` is
``LFAnalysis.lf_summary`` with an estimated accuracy and confusion matrix per function, no gold
labels needed.

Snorkel's contract, kept:

- ``L`` holds integers in ``-1..cardinality-1`` (integral floats accepted) and at least 3
  labeling functions (any number for ``method="majority_vote"``); anything else raises
  :class:`crowd_keras.CrowdDataError` (a ``ValueError``) naming the row and column.
- A row where every function abstains keeps its place and gets the class balance, whatever
  the model: uniform unless ``class_balance`` or ``Y_dev`` was given, so ``predict`` returns
  -1 there under ``tie_break_policy="abstain"`` and ``score`` leaves it out (not covered).
- ``class_balance`` / ``Y_dev`` and every train setting of Snorkel's ``fit`` are validated as
  Snorkel does (see :func:`check_train_config`); ``Y_dev`` alone sets the class balance, as in
  Snorkel, and with ``L_dev`` (the dev split's label matrix, not in Snorkel) the dev rows join
  the fit as gold (:func:`check_dev_set`); ``mu_eps`` bounds the conditional
  probabilities; EM has no optimizer, so ``lr``, ``l2``, ``optimizer*``, ``lr_scheduler*``,
  ``prec_init`` and ``log_freq`` are checked and otherwise without effect.
- A function that never votes has no influence on the predictions; its weight is NaN.
- A data point where any function votes gets a class under ``tie_break_policy="abstain"``
  (Snorkel #1422): when the default model keeps majority vote on crowd answers, its posterior
  stays one-hot here (``vote_posterior="one_hot"``; ``CrowdLabelModel(vote_posterior=
  "calibrated")`` gives :class:`~crowd_keras.aggregation.CalibratedVote`'s posterior, whose
  ties of votes are ties).

What differs: the model (EM on the votes and, for labeling functions, on the abstentions,
instead of Snorkel's matrix completion), so predictions on rows with votes, the weights and
the conditional probabilities are this model's; ``save`` writes ``.npz`` + JSON (no pickle),
and ``load`` refuses Snorkel's pickles with a message that says so.
"""
from .analysis import lf_quality
from .label_model import (DEFAULT_METHOD, CrowdLabelModel, available_methods, covote_misfit,
                          register_method)
from .metrics import probs_to_preds
from .validation import (UnexpectedArgumentError, check_class_balance, check_dev_set,
                         check_gold_labels, check_label_matrix, check_train_config)

__all__ = ["CrowdLabelModel", "DEFAULT_METHOD", "covote_misfit", "lf_quality", "check_label_matrix",
           "check_class_balance", "check_dev_set", "check_gold_labels", "check_train_config",
           "probs_to_preds", "register_method", "available_methods", "UnexpectedArgumentError"]
