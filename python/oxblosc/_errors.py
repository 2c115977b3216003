"""Exceptions raised by oxblosc."""


class ChunkError(ValueError, RuntimeError):
    """A chunk (or frame) is malformed: truncated, lying about its sizes, or corrupt.

    Subclasses both ValueError and RuntimeError, so code written for python-blosc2
    (which raises either, depending on the call) keeps catching it.
    """
