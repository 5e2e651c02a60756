"""mxlite: run Apache MXNet checkpoints with a small, dependency-free runtime.

This package ships the runtime's shared library, which implements MXNet's C
predict API (c_predict_api.h) function for function.
"""
import os
import sys

__version__ = '0.1.0'

_LIB_NAME = 'libmxlite.dylib' if sys.platform == 'darwin' else 'libmxlite.so'


def lib_path():
    """Path of the shared library bundled with this package.

    The environment variable MXLITE_LIBRARY overrides it (for a library built
    elsewhere, e.g. with `make lib`).
    """
    override = os.environ.get('MXLITE_LIBRARY')
    if override:
        return os.path.abspath(override)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIB_NAME)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f'{path} is missing: install mxlite with `pip install .` so that the '
            'library is built, or set MXLITE_LIBRARY')
    return path
