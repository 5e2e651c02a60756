"""mxlite.nd: MXNet's imperative NDArray API (mx.nd) and its file format.

    import mxlite as mx
    a = mx.nd.ones((2, 3), ctx=mx.cpu())
    b = mx.nd.dot(a, a.T) * 2 + 1            # pushed to the engine, returns at once
    print(b.asnumpy())                          # waits for the values
    params = mx.nd.load('resnet18_v1-0000.params')   # {'arg:...': NDArray, ...}
    mx.nd.save('arrays.nd', {'w': np.ones((2, 3), np.float32)})

The arrays (mxlite.ndarray.NDArray) are lazy: see that module. Registered
operators are reachable by name, with attributes as keywords:
mx.nd.exp(a), mx.nd.sum(a, axis=1, keepdims=True), mx.nd.Activation(a,
act_type='relu'). mx.nd.random is mxlite.random (mxlite's own generator).

load() reads every version MXNet wrote (V1, V2, V3 numpy-mode, pre-1.0
legacy) and keeps each array's dtype (bfloat16, which numpy lacks, becomes
float32). save() writes MXNet 1.x's V2 layout, byte for byte what
mx.nd.save writes, so MXNet 1.9.1 loads the file back to the same arrays.
A file with names is a dict, one without is a list, in both directions.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import ndarray as _ndarray
from . import random
from ._native import core as _core
from .errors import MXLiteError, read_file
from .ndarray import *  # noqa: F401,F403  (the mx.nd functions)
from .ndarray import NDArray
from .random import normal, uniform

__all__ = ['load', 'save', 'NDArray', 'random', 'uniform', 'normal'] + _ndarray.__all__

# Element types MXNet's format holds (numpy has no bfloat16).
_SAVABLE = {np.dtype(name) for name in ('float32', 'float64', 'float16', 'uint8', 'int32', 'int8',
                                        'int64', 'bool', 'int16', 'uint16', 'uint32', 'uint64')}


def load(path: str | os.PathLike[str]) -> dict[str, NDArray | None] | list[NDArray | None]:
    """Reads an NDArray file (a .params checkpoint or mx.nd.save output).

    Returns {name: NDArray} when the file has names, else a list, as
    mx.nd.load does (NDArrays convert to numpy with np.asarray or
    .asnumpy()). An empty ("none") array comes back as None. Errors are MXLiteError naming
    the file and the byte where it went wrong.
    """
    path = os.fspath(path)
    data = read_file(path)
    arrays, names = _core.load_ndarrays(data, path)
    arrays = [None if a is None else _ndarray.array(a, dtype=a.dtype) for a in arrays]
    return dict(zip(names, arrays)) if names else arrays


def save(path: str | os.PathLike[str],
         data: Mapping[str, Any] | Sequence[Any] | NDArray | np.ndarray[Any, Any]) -> None:
    """Writes arrays to `path` in MXNet's format (what mx.nd.save writes).

    data: {name: array} (a file with names), a list or tuple of arrays (a
    file without), or a single array; NDArrays or numpy arrays. Arrays may
    have any dtype MXNet knows and at least one dimension (MXNet 1.x's
    format has no 0-d arrays).
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
        array = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value, order='C')
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


def __getattr__(name):
    """A registered operator by name: mx.nd.exp(a), mx.nd.sum(a, axis=1)."""
    if name.startswith('__') or not _core.nd_op_name(name):
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    def operator(*args, **kwargs):
        return _ndarray._call_op(name, args, kwargs)
    operator.__name__ = name
    operator.__doc__ = f'Pushes the registered operator {name} (see docs/operators.md).'
    return operator
