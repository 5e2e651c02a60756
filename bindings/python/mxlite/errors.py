"""The exceptions mxlite raises (pure Python: the ctypes client needs no extension)."""

__all__ = ['MXLiteError', 'MXLiteFileNotFoundError']


class MXLiteError(RuntimeError):
    """An error reported by the mxlite runtime; the message is the core's.

    The compiled module, the ctypes client (MXGetLastError()'s text) and the
    command line all raise it, for bad models, parameters, shapes and inputs.
    """


class MXLiteFileNotFoundError(MXLiteError, FileNotFoundError):
    """A checkpoint or NDArray file that does not exist (also a FileNotFoundError)."""


def read_file(path: str) -> bytes:
    """The bytes of `path`; a missing file raises MXLiteFileNotFoundError, any
    other failure MXLiteError, each naming the file."""
    try:
        with open(path, 'rb') as f:
            return f.read()
    except FileNotFoundError:
        raise MXLiteFileNotFoundError(f'{path}: no such file') from None
    except OSError as error:
        raise MXLiteError(f'{path}: cannot read it: {error.strerror or error}') from None
