"""Exceptions raised by oxblosc."""


class ChunkError(ValueError, RuntimeError):
    """A chunk (or frame) is malformed: truncated, lying about its sizes, or corrupt.

    Subclasses both ValueError and RuntimeError, so code written for python-blosc2
    (which raises either, depending on the call) keeps catching it.
    """


class FrameChangedError(RuntimeError):
    """A handle read or was about to write a frame that another handle changed since.

    With ``locking=True``, ``SChunk`` methods handle it themselves (re-read the frame and retry);
    it reaches the caller only from a writer whose view is out of date (another writer committed
    first). A writer opened without locking raises it when another handle wrote the file since
    it read it (reopen the file); it then leaves the file as it is, closing included.
    """
