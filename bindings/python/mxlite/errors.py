"""The exceptions mxlite raises (pure Python: the ctypes client needs no extension)."""

__all__ = ['MXLiteError', 'MXLiteFileNotFoundError']


class MXLiteError(RuntimeError):
    """An error reported by the mxlite runtime; the message is the core's.

    The compiled module, the ctypes client (MXGetLastError()'s text) and the
    command line all raise it, for bad models, parameters, shapes and inputs.
    """


class MXLiteFileNotFoundError(MXLiteError, FileNotFoundError):
    """A checkpoint or NDArray file that does not exist (also a FileNotFoundError)."""
