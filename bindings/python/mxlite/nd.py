"""mxlite.nd: NDArray files in MXNet's binary format, as numpy arrays.

    params = mxlite.nd.load('resnet18_v1-0000.params')   # {'arg:...': ndarray, ...}
    mxlite.nd.save('arrays.nd', {'w': np.ones((2, 3), np.float32)})

load() reads every version MXNet wrote (V1, V2, V3 numpy-mode, pre-1.0
legacy) and keeps each array's dtype (bfloat16, which numpy lacks, becomes
float32). save() writes MXNet 1.x's V2 layout, byte for byte what
mx.nd.save writes, so MXNet 1.9.1 loads the file back to the same arrays.
A file with names is a dict, one without is a list, in both directions.
"""
import os

import numpy as np

from ._native import core as _core
from .errors import MXLiteError, MXLiteFileNotFoundError

__all__ = ['load', 'save']

# Element types MXNet's format holds (numpy has no bfloat16).
_SAVABLE = {np.dtype(name) for name in ('float32', 'float64', 'float16', 'uint8', 'int32', 'int8',
                                        'int64', 'bool', 'int16', 'uint16', 'uint32', 'uint64')}


def load(path):
    """Reads an NDArray file (a .params checkpoint or mx.nd.save output).

    Returns {name: numpy array} when the file has names, else a list. An
    empty ("none") array comes back as None. Errors are MXLiteError naming
    the file and the byte where it went wrong.
    """
    path = os.fspath(path)
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except FileNotFoundError:
        raise MXLiteFileNotFoundError(f'{path}: no such file') from None
    except OSError as error:
        raise MXLiteError(f'{path}: cannot read it: {error.strerror or error}') from None
    arrays, names = _core.load_ndarrays(data, path)
    return dict(zip(names, arrays)) if names else arrays


def save(path, data):
    """Writes arrays to `path` in MXNet's format (what mx.nd.save writes).

    data: {name: array} (a file with names), a list or tuple of arrays (a
    file without), or a single array. Arrays may have any dtype MXNet knows
    and at least one dimension (MXNet 1.x's format has no 0-d arrays).
    """
    path = os.fspath(path)
    if isinstance(data, dict):
        names = list(data)
        values = list(data.values())
        for name in names:
            if not isinstance(name, str):
                raise MXLiteError(f'array names must be strings, got {name!r}')
    elif isinstance(data, (list, tuple)):
        names, values = [], list(data)
    else:
        names, values = [], [data]
    arrays = []
    for index, value in enumerate(values):
        label = repr(names[index]) if names else f'#{index}'
        array = np.asarray(value, order='C')
        if array.dtype not in _SAVABLE:
            raise MXLiteError(f'array {label} has dtype {array.dtype}, which MXNet\'s format '
                              'cannot hold')
        arrays.append(array)
    try:
        encoded = _core.save_ndarrays(arrays, names)
    except MXLiteError as error:
        raise MXLiteError(f'{path}: {error}') from None
    with open(path, 'wb') as f:
        f.write(encoded)
