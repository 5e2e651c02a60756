"""Pure-Python client of the C predict API, shaped like MXNet's mxnet_predict.py.

It needs no compiled extension: only ctypes, numpy and a libmxlite shared
library (the package's own, the one named by MXLITE_LIBRARY, or a path given
to load_library). Code written for MXNet's amalgamation client works with it:

    from mxlite.ctypes_predict import Predictor
    pred = Predictor(open('m-symbol.json').read(), open('m-0000.params', 'rb').read(),
                     {'data': (1, 3, 224, 224)})
    pred.forward(data=image)
    scores = pred.get_output(0)
"""
import ctypes
import os

import numpy as np

from .errors import MXLiteError, MXLiteFileNotFoundError

__all__ = ['Predictor', 'load_ndarray_file', 'load_library', 'MXLiteError',
           'MXLiteFileNotFoundError']

_mx_uint = ctypes.c_uint32
_DTYPE_NP_TO_MX = {None: -1, np.float32: 0, np.float64: 1, np.float16: 2, np.uint8: 3,
                   np.int32: 4, np.int8: 5, np.int64: 6}
_DTYPE_MX_TO_NP = {flag: dtype for dtype, flag in _DTYPE_NP_TO_MX.items() if dtype is not None}
_MONITOR = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)
_DEVICES = {'cpu': 1, 'gpu': 2, 'cpu_pinned': 3}
_LIBS = {}  # absolute path -> loaded library


def load_library(path=None):
    """Loads (once per path) and returns a libmxlite shared library.

    path: the library to use; by default MXLITE_LIBRARY if set, else the
    package's own copy (mxlite.lib_path()). A path that does not exist
    raises MXLiteFileNotFoundError (an MXLiteError and a FileNotFoundError);
    a file the system cannot load raises MXLiteError.
    """
    if path is None:
        from . import lib_path
        path = lib_path()
    path = os.path.abspath(os.fspath(path))
    lib = _LIBS.get(path)
    if lib is None:
        # A missing file is told apart from one the loader refuses (wrong
        # architecture, not a library), as the file loaders do.
        if not os.path.exists(path):
            raise MXLiteFileNotFoundError(f'cannot load the mxlite library {path}: no such file')
        try:
            lib = ctypes.CDLL(path)
        except OSError as error:
            raise MXLiteError(f'cannot load the mxlite library {path}: {error}') from None
        lib.MXGetLastError.restype = ctypes.c_char_p
        _LIBS[path] = lib
    return lib


def _check(rc, lib):
    """Raises MXLiteError with MXGetLastError()'s text when a call failed."""
    if rc != 0:
        raise MXLiteError(lib.MXGetLastError().decode('utf-8', 'replace'))


def _c_strings(values):
    return (ctypes.c_char_p * len(values))(*[v.encode('utf-8') for v in values])


def _shape_arrays(input_shapes):
    keys, indptr, data = [], [0], []
    for key, shape in input_shapes.items():
        if not isinstance(shape, tuple):
            raise ValueError(f'input shape of {key!r} must be a tuple, got {shape!r}')
        keys.append(key)
        data.extend(int(d) for d in shape)
        indptr.append(len(data))
    return (len(keys), _c_strings(keys), (_mx_uint * len(indptr))(*indptr),
            (_mx_uint * max(1, len(data)))(*data))


class Predictor:
    """A predictor over one checkpoint, with MXNet's mxnet_predict.Predictor API.

    symbol_file: the symbol JSON text (not a path, as in MXNet's client).
    param_raw_bytes: the bytes of the .params file.
    input_shapes: {input name: shape tuple}.
    type_dict: optional {input name: numpy dtype}.
    """

    def __init__(self, symbol_file, param_raw_bytes, input_shapes, dev_type='cpu', dev_id=0,
                 type_dict=None, library=None):
        self.handle = None
        lib = load_library(library)
        self._lib = lib
        if dev_type not in _DEVICES:
            raise MXLiteError(f'unknown dev_type {dev_type!r}; expected one of {list(_DEVICES)}')
        count, keys, indptr, data = _shape_arrays(input_shapes)
        self.type_dict = dict(type_dict) if type_dict else None
        names = list(self.type_dict) if self.type_dict else []
        flags = []
        for name in names:
            flag = _DTYPE_NP_TO_MX.get(np.dtype(self.type_dict[name]).type)
            if flag is None:
                raise MXLiteError(f'type_dict: {name!r} has dtype {np.dtype(self.type_dict[name])}'
                                  f', which the predict API does not take')
            flags.append(flag)
        symbol = symbol_file.encode('utf-8') if isinstance(symbol_file, str) else symbol_file
        params = bytes(param_raw_bytes)
        handle = ctypes.c_void_p()
        _check(lib.MXPredCreateEx(
            ctypes.c_char_p(symbol), params, ctypes.c_int(len(params)),
            ctypes.c_int(_DEVICES[dev_type]), ctypes.c_int(dev_id), _mx_uint(count), keys,
            indptr, data, _mx_uint(len(names)), _c_strings(names),
            (ctypes.c_int * max(1, len(flags)))(*flags), ctypes.byref(handle)), lib)
        self.handle = handle
        self._monitor = None

    def _check(self, rc):
        _check(rc, self._lib)

    def __del__(self):
        if getattr(self, 'handle', None) is not None:
            self._lib.MXPredFree(self.handle)
            self.handle = None

    def forward(self, **kwargs):
        """Sets each named input from a numpy array and runs the network."""
        lib = self._lib
        for name, value in kwargs.items():
            if not isinstance(value, np.ndarray):
                raise ValueError('inputs must be numpy arrays')
            dtype = self.type_dict.get(name, np.float32) if self.type_dict else np.float32
            value = np.ascontiguousarray(value, dtype=dtype)
            self._check(lib.MXPredSetInput(self.handle, name.encode('utf-8'),
                                           value.ctypes.data_as(ctypes.c_void_p),
                                           _mx_uint(value.size)))
        self._check(lib.MXPredForward(self.handle))

    def reshape(self, input_shapes):
        """Rebinds for new input shapes (the weights are shared)."""
        count, keys, indptr, data = _shape_arrays(input_shapes)
        new = ctypes.c_void_p()
        self._check(self._lib.MXPredReshape(_mx_uint(count), keys, indptr, data, self.handle,
                                            ctypes.byref(new)))
        self._check(self._lib.MXPredFree(self.handle))
        self.handle = new

    def get_output(self, index):
        """Output `index` of the last forward pass, as a new numpy array."""
        lib = self._lib
        shape_data = ctypes.POINTER(_mx_uint)()
        ndim = _mx_uint()
        self._check(lib.MXPredGetOutputShape(self.handle, _mx_uint(index),
                                             ctypes.byref(shape_data), ctypes.byref(ndim)))
        shape = tuple(shape_data[i] for i in range(ndim.value))
        dtype = ctypes.c_int()
        self._check(lib.MXPredGetOutputType(self.handle, _mx_uint(index), ctypes.byref(dtype)))
        out = np.empty(shape, dtype=_DTYPE_MX_TO_NP[dtype.value])
        self._check(lib.MXPredGetOutput(self.handle, _mx_uint(index),
                                        out.ctypes.data_as(ctypes.c_void_p), _mx_uint(out.size)))
        return out

    def set_monitor_callback(self, callback, monitor_all=False):
        """callback(name: bytes, array_handle) after every operator."""
        self._monitor = _MONITOR(lambda name, array, _user: callback(name, array))
        self._check(self._lib.MXPredSetMonitorCallback(self.handle, self._monitor, None,
                                                       ctypes.c_bool(monitor_all)))


def load_ndarray_file(nd_bytes, library=None):
    """Reads NDArray file bytes (a .params file): a dict by name, or a list
    if the file has no names. Every dtype comes back as float32, as MXNet's
    MXNDListCreate gives it."""
    lib = load_library(library)
    handle = ctypes.c_void_p()
    length = _mx_uint()
    nd_bytes = bytes(nd_bytes)
    _check(lib.MXNDListCreate(nd_bytes, ctypes.c_int(len(nd_bytes)), ctypes.byref(handle),
                              ctypes.byref(length)), lib)
    keys, arrays = [], []
    try:
        for i in range(length.value):
            key = ctypes.c_char_p()
            data = ctypes.POINTER(ctypes.c_float)()
            shape = ctypes.POINTER(_mx_uint)()
            ndim = _mx_uint()
            _check(lib.MXNDListGet(handle, _mx_uint(i), ctypes.byref(key), ctypes.byref(data),
                                   ctypes.byref(shape), ctypes.byref(ndim)), lib)
            dims = tuple(shape[d] for d in range(ndim.value))
            size = int(np.prod(dims)) if dims else 1
            array = np.zeros(dims, np.float32)
            if data and size:
                ctypes.memmove(array.ctypes.data, data, size * 4)
            keys.append(key.value.decode('utf-8'))
            arrays.append(array)
    finally:
        _check(lib.MXNDListFree(handle), lib)
    if keys and keys[0]:
        return dict(zip(keys, arrays))
    return arrays
