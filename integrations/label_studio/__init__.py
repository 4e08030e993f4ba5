"""Label Studio: read exports, aggregate, push predictions and write annotator quality.

Reading (:func:`read_export`) needs only the standard library, numpy and pandas; a
labeling config (``label_config=``) is parsed offline by ``label-studio-sdk``'s
``LabelInterface``, and pushing (:func:`push_predictions`) uses its ``LabelStudio``
client. The SDK is an optional extra (``pip install crowd-keras[label-studio]``), imported
only by the functions that need it.

Mapping
-------
* items = Label Studio tasks (every task of the export, also those without annotation, in
  export order), annotators = users (their integer id; the e-mail when the export carries
  only e-mails), classes = the choices of one ``Choices`` control (or the values of one
  ``Rating`` control), from the labeling config when given, else the sorted values seen
  (choices that all spell numbers, a ``<Choices>`` scale 1..10, in numeric order).
* One annotation of a user on a task = one crowd annotation. Skipped (``was_cancelled``)
  annotations are counted, not used. Several annotations of one user on one task: the
  latest (``updated_at``, then ``created_at``, then annotation id) wins, the others are
  counted as superseded (a summary note when they are at least as many as those kept, or
  one user holds them all: annotations imported without ``completed_by`` all belong to the
  importing user). ``ground_truth`` annotations are kept apart in
  :attr:`LabelStudioExport.gold` unless ``include_gold=True``; every fit here
  (:func:`fit_label_model`: ``aggregate``, ``report``, :func:`predictions_from_model`,
  :func:`annotator_report`, :func:`quality_report`) holds those tasks at their class when
  the label model takes gold, unless ``use_gold=False`` (``--no-gold``). Note that
  Label Studio flags annotations imported together with tasks as ground truth unless the
  import says ``"ground_truth": false``: for such projects pass ``include_gold=True``.
* Multiple choice: a single-label model needs exactly one class per annotation, so an
  annotation with several choices raises :class:`~crowd_keras.CrowdDataError` unless
  ``multiple="combination"`` (each distinct *set* of choices becomes one class, named by
  joining the choices with ``separator``; predictions write the set back) or
  ``multiple="skip"`` (such annotations are left out and counted). One annotation per
  chosen label is never produced: it would make one user vote twice on one task.
* Span controls (``Labels``, ``HyperTextLabels``, ``ParagraphLabels``): ``read_export`` returns
  a :class:`LabelStudioSpans`: per task and user the spans (start, end, label, text) and a
  :class:`~crowd_keras.sequences.annotations.SequenceAnnotations` (documents = tasks, the
  text from the task data field the control's object shows). A user's used annotation
  without spans says "no span here" (all tokens O); no annotation means not seen. Fit a
  sequence label model (``crowd_keras.sequences``); :func:`predictions_from_model` writes
  ``labels`` predictions (start, end, text, labels, score) that go through the same
  idempotent push, and :func:`annotator_report` span and token precision/recall/F1.

Formats
-------
Full JSON (list of tasks; ``completed_by`` an int or an object), JSON_MIN and CSV/TSV (one
row per annotation). JSON_MIN, CSV and TSV leave out skipped annotations, ``ground_truth``
flags, the ``to_name`` of controls and tasks whose annotations were all skipped; they do not
say which columns are controls, so pass ``control=`` or ``label_config=`` for them.

Annotator quality has no slot in Label Studio: :func:`annotator_report` writes it as CSV and
JSON keyed by user id and e-mail. The API token is read from an argument or the
``LABEL_STUDIO_API_KEY`` environment variable and is scrubbed from every error message.

Modules: :mod:`.reader` parses an export into a :class:`LabelStudioExport` (with the private
``_records`` for the export formats, ``_controls`` for the labeling config and ``_spans`` for
span controls, whose predictions and report are in ``_span_results``);
:mod:`.predictions` and :mod:`.report` turn a label model fitted on it into predictions and
an annotator report; :mod:`.client` talks to a server (checks, retries), :mod:`.target`
checks that the export's tasks are the target project's, and :mod:`.push` sends predictions
(created in batches; changed ones updated in place or swapped in bulk; a stopped push takes
from no task the prediction it had), through the requests of ``_push_ops``. Everything is importable from here.
"""
import os  # noqa: F401 - kept reachable as ``ls.os`` (tests patch ``ls.os.replace``)

from .client import (API_KEY_ENV, LabelStudioError, PushInterrupted, check_project, check_url,
                     connect, describe_error, fetch_user_emails, is_transient)
from .client import _scrub  # noqa: F401 - used as ``ls._scrub`` (tests)
from .push import PushResult, StalePredictionsWarning, push_predictions
from .target import TaskCheck, check_against_config, check_tasks
from .predictions import predictions_from_model, to_predictions, write_predictions
from .reader import FORMATS  # noqa: F401 - public constant, kept out of __all__
from .reader import ExportSummary, LabelStudioExport, read_export
from ._model import fit_label_model, gold_for_fit
from .report import annotator_report, gold_accuracy, write_report
from .quality import export_controls, quality_report
from ._span_results import gold_span_scores, span_predictions, span_report
from ._spans import LabelStudioSpans, SpanExportSummary

__all__ = [
    "LabelStudioExport", "ExportSummary", "PushResult", "LabelStudioError", "PushInterrupted",
    "read_export",
    "to_predictions", "predictions_from_model", "write_predictions", "push_predictions",
    "annotator_report", "write_report", "gold_accuracy", "connect", "fetch_user_emails",
    "describe_error", "API_KEY_ENV", "check_project", "check_url", "is_transient",
    "LabelStudioSpans", "SpanExportSummary", "span_predictions", "span_report",
    "gold_span_scores", "export_controls", "quality_report", "check_tasks", "TaskCheck",
    "check_against_config", "fit_label_model", "gold_for_fit", "StalePredictionsWarning",
]
