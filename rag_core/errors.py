"""Errors that carry a message meant for the user (shown as is, never a traceback)."""


class GroundworkError(Exception):
    """Base: the message is safe and useful to show to a user."""


class LoadError(GroundworkError):
    """A file could not be read; the message says which and why."""


class OcrUnavailable(LoadError):
    """The OCR engine could not start (not installed, or no room for it in the reader's
    memory cap). Not "this page has no text": the reader retries once in a fresh process."""


class UnsupportedFileType(LoadError):
    pass


class InputError(GroundworkError):
    """Bad user input (query, name, setting)."""


class NotFound(GroundworkError):
    pass


class MissingDependency(GroundworkError):
    """An optional provider was selected but its package is not installed."""
