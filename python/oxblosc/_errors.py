"""Exceptions raised by oxblosc."""


class ChunkError(ValueError, RuntimeError):
    """A chunk (or frame) is malformed: truncated, lying about its sizes, or corrupt.

    Subclasses both ValueError and RuntimeError, so code written for python-blosc2
    (which raises either, depending on the call) keeps catching it.
    """


class FrameChangedError(RuntimeError):
    """A handle opened with ``locking=True`` read a frame that another handle changed since.

    ``SChunk`` methods handle it themselves (re-read the frame and retry); it reaches the caller
    only from a writer whose view is out of date (another writer committed first).
    """
