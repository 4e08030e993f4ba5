"""Exceptions raised by crowd-keras, and messages that name Python arguments (:class:`Message`),
which a command line renders with its own flags, and warnings told at the user's line
(:func:`warn`)."""
import os
import sys
import warnings


class CrowdDataError(ValueError):
    """Bad crowd-annotation input.

    The message names what is wrong and where (row, item id, annotator id) so that
    the user can find the offending record in their own data.
    """


class NotFittedError(RuntimeError, ValueError, AttributeError):
    """A model was used before ``fit``: a ``ValueError`` and an ``AttributeError`` as
    scikit-learn's ``NotFittedError`` (so ``hasattr(model, "annotator_quality_")`` is False
    before fit), and a ``RuntimeError``.

    Once scikit-learn is imported, the error raised is also a
    ``sklearn.exceptions.NotFittedError``, so ``except`` clauses naming scikit-learn's class
    catch it; this module does not import scikit-learn (it is not a dependency), and code
    that has not imported it cannot name that class.
    """

    def __new__(cls, *args: object, **kwargs: object) -> "NotFittedError":
        if cls is NotFittedError:
            cls = _with_sklearn_not_fitted()
        return super().__new__(cls, *args, **kwargs)

    def __reduce__(self) -> tuple:
        # the class made for scikit-learn is not a module attribute: it unpickles as this
        # one, which becomes it again where scikit-learn is loaded
        made = type(self) in _SKLEARN_NOT_FITTED.values()
        return (NotFittedError if made else type(self)), self.args, self.__dict__ or None


_SKLEARN_NOT_FITTED: dict = {}


def _with_sklearn_not_fitted() -> type:
    """:class:`NotFittedError`, or its subclass that is also scikit-learn's ``NotFittedError``
    when ``sklearn.exceptions`` is loaded (made once)."""
    base = getattr(sys.modules.get("sklearn.exceptions"), "NotFittedError", None)
    if not isinstance(base, type) or not issubclass(base, Exception):
        return NotFittedError
    if base not in _SKLEARN_NOT_FITTED:
        _SKLEARN_NOT_FITTED[base] = type("NotFittedError", (NotFittedError, base),
                                         {"__module__": __name__,
                                          "__doc__": NotFittedError.__doc__})
    return _SKLEARN_NOT_FITTED[base]


_NO_VALUE = object()


class Argument:
    """A Python argument named in a :class:`Message`: ``name=value``, or ``name=`` when the
    message names the argument without a value. Front ends (the command lines) render it in
    their own words (a flag) from their own table."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: object = _NO_VALUE) -> None:
        self.name, self.value = name, value

    @property
    def has_value(self) -> bool:
        return self.value is not _NO_VALUE

    def __str__(self) -> str:
        return f"{self.name}={self.value!r}" if self.has_value else f"{self.name}="

    def __repr__(self) -> str:
        return f"Argument({self.name!r}" + (f", {self.value!r})" if self.has_value else ")")

    def __reduce__(self) -> tuple:
        return (Argument, (self.name, self.value) if self.has_value else (self.name,))


class Message(str):
    """An error message or note that names Python arguments, as a ``str`` in Python's words.

    ``Message("pass {fix} to keep one", fix=Argument("duplicates", "last"))`` reads ``pass
    duplicates='last' to keep one``; :meth:`render` writes the arguments otherwise (the
    command lines: ``--duplicates last``) without touching the rest of the text. Fields
    that are not :class:`Argument` are formatted as usual.
    """

    template: str
    fields: dict

    def __new__(cls, template: str, **fields: object) -> "Message":
        self = super().__new__(cls, template.format(**fields))
        self.template, self.fields = template, fields
        return self

    def render(self, argument) -> str:
        """The text with each :class:`Argument` written as ``argument(arg)`` returns."""
        return self.template.format(**{k: argument(v) if isinstance(v, Argument) else v
                                       for k, v in self.fields.items()})

    def __reduce__(self) -> tuple:
        return (_message, (self.template, self.fields))


def _message(template: str, fields: dict) -> Message:
    return Message(template, **fields)


class MissingExtraError(ImportError):
    """A part of crowd-keras needs an optional dependency that is not installed.

    The message is one line that names the ``pip install 'crowd-keras[...]'`` to run.
    """


class DownloadError(OSError):
    """A data set could not be downloaded (offline, HTTP error, or a file whose checksum
    differs from the pinned one). The message names the URL and the environment variables
    that point the loaders at local files instead."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def warn(message: str, category: type = UserWarning) -> None:
    """``warnings.warn(message, category)`` at the first frame outside the package: the
    user's line, however many of the package's frames (fallbacks, hand-overs, loaders) lie
    between it and the check that warns."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
