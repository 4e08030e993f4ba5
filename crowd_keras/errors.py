"""Exceptions raised by crowd-keras."""


class CrowdDataError(ValueError):
    """Bad crowd-annotation input.

    The message names what is wrong and where (row, item id, annotator id) so that
    the user can find the offending record in their own data.
    """


class MissingExtraError(ImportError):
    """A part of crowd-keras needs an optional dependency that is not installed.

    The message is one line that names the ``pip install 'crowd-keras[...]'`` to run.
    """


class DownloadError(OSError):
    """A data set could not be downloaded (offline, HTTP error, or a file whose checksum
    differs from the pinned one). The message names the URL and the environment variables
    that point the loaders at local files instead."""
