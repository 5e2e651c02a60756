"""A thin ctypes binding of the C predict API, for the tests.

It calls the functions exactly as a C program would and raises CAPIError with
MXGetLastError()'s text when one returns -1.
"""
import ctypes
import os

import numpy as np

mx_uint = ctypes.c_uint32
DTYPE_TO_NUMPY = {0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8, 4: np.int32,
                  5: np.int8, 6: np.int64}
MONITOR_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)


class CAPIError(Exception):
    pass


def load_library(path=None):
    path = path or os.environ.get('MXLITE_LIBRARY')
    if path is None:
        import mxlite
        path = mxlite.lib_path()
    lib = ctypes.CDLL(path)
    lib.MXGetLastError.restype = ctypes.c_char_p
    return lib


class API:
    def __init__(self, lib):
        self.lib = lib

    def check(self, rc):
        if rc != 0:
            raise CAPIError(self.lib.MXGetLastError().decode('utf-8', 'replace'))

    def last_error(self):
        return self.lib.MXGetLastError().decode('utf-8', 'replace')

    @staticmethod
    def shape_arrays(input_shapes):
        keys = list(input_shapes)
        indptr = [0]
        data = []
        for key in keys:
            data.extend(input_shapes[key])
            indptr.append(len(data))
        c_keys = (ctypes.c_char_p * len(keys))(*[k.encode() for k in keys])
        return (len(keys), c_keys, (mx_uint * len(indptr))(*indptr),
                (mx_uint * max(1, len(data)))(*data))

    def create(self, symbol_json, params, input_shapes, dtypes=None, output_keys=None,
               dev_type=1):
        handle = ctypes.c_void_p()
        count, keys, indptr, data = self.shape_arrays(input_shapes)
        sym = symbol_json.encode() if isinstance(symbol_json, str) else symbol_json
        if output_keys is not None:
            out_keys = (ctypes.c_char_p * len(output_keys))(*[k.encode() for k in output_keys])
            self.check(self.lib.MXPredCreatePartialOut(
                ctypes.c_char_p(sym), params, ctypes.c_int(len(params)), dev_type, 0,
                mx_uint(count), keys, indptr, data, mx_uint(len(output_keys)), out_keys,
                ctypes.byref(handle)))
        elif dtypes is not None:
            names = (ctypes.c_char_p * len(dtypes))(*[k.encode() for k in dtypes])
            flags = (ctypes.c_int * len(dtypes))(*dtypes.values())
            self.check(self.lib.MXPredCreateEx(
                ctypes.c_char_p(sym), params, ctypes.c_int(len(params)), dev_type, 0,
                mx_uint(count), keys, indptr, data, mx_uint(len(dtypes)), names, flags,
                ctypes.byref(handle)))
        else:
            self.check(self.lib.MXPredCreate(
                ctypes.c_char_p(sym), params, ctypes.c_int(len(params)), dev_type, 0,
                mx_uint(count), keys, indptr, data, ctypes.byref(handle)))
        return handle

    def create_multi(self, symbol_json, params, input_shapes, num_threads):
        handles = (ctypes.c_void_p * num_threads)()
        count, keys, indptr, data = self.shape_arrays(input_shapes)
        self.check(self.lib.MXPredCreateMultiThread(
            ctypes.c_char_p(symbol_json.encode()), params, ctypes.c_int(len(params)), 1, 0,
            mx_uint(count), keys, indptr, data, ctypes.c_int(num_threads), handles))
        return [ctypes.c_void_p(h) for h in handles]

    def create_with_options(self, symbol_json, params, input_shapes, options, num_handles=1,
                            output_keys=()):
        """MXLitePredCreateWithOptions (mxlite.h): a list of num_handles handles."""
        handles = (ctypes.c_void_p * max(1, num_handles))()
        count, keys, indptr, data = self.shape_arrays(input_shapes)
        sym = symbol_json.encode() if isinstance(symbol_json, str) else symbol_json
        names = (ctypes.c_char_p * max(1, len(options)))(*[k.encode() for k in options])
        values = (ctypes.c_char_p * max(1, len(options)))(
            *[str(v).encode() for v in options.values()])
        out_keys = (ctypes.c_char_p * max(1, len(output_keys)))(
            *[k.encode() for k in output_keys])
        self.check(self.lib.MXLitePredCreateWithOptions(
            ctypes.c_char_p(sym), params, ctypes.c_int(len(params)), 1, 0, mx_uint(count),
            keys, indptr, data, mx_uint(len(output_keys)), out_keys, mx_uint(len(options)),
            names, values, ctypes.c_int(num_handles), handles))
        return [ctypes.c_void_p(h) for h in handles[:num_handles]]

    def reshape(self, handle, input_shapes):
        new = ctypes.c_void_p()
        count, keys, indptr, data = self.shape_arrays(input_shapes)
        self.check(self.lib.MXPredReshape(mx_uint(count), keys, indptr, data, handle,
                                          ctypes.byref(new)))
        return new

    def set_input(self, handle, name, array):
        array = np.ascontiguousarray(array)
        self.check(self.lib.MXPredSetInput(handle, name.encode(),
                                           array.ctypes.data_as(ctypes.c_void_p),
                                           mx_uint(array.size)))

    def forward(self, handle):
        self.check(self.lib.MXPredForward(handle))

    def partial_forward(self, handle, step):
        left = ctypes.c_int(-1)
        self.check(self.lib.MXPredPartialForward(handle, ctypes.c_int(step), ctypes.byref(left)))
        return left.value

    def output_shape(self, handle, index):
        data = ctypes.POINTER(mx_uint)()
        ndim = mx_uint()
        self.check(self.lib.MXPredGetOutputShape(handle, mx_uint(index), ctypes.byref(data),
                                                 ctypes.byref(ndim)))
        return tuple(data[i] for i in range(ndim.value))

    def output_type(self, handle, index):
        dtype = ctypes.c_int(-99)
        self.check(self.lib.MXPredGetOutputType(handle, mx_uint(index), ctypes.byref(dtype)))
        return dtype.value

    def output(self, handle, index):
        shape = self.output_shape(handle, index)
        out = np.empty(shape, dtype=DTYPE_TO_NUMPY[self.output_type(handle, index)])
        self.check(self.lib.MXPredGetOutput(handle, mx_uint(index),
                                            out.ctypes.data_as(ctypes.c_void_p),
                                            mx_uint(out.size)))
        return out

    def free(self, handle):
        self.check(self.lib.MXPredFree(handle))

    def set_monitor(self, handle, callback, monitor_all=False):
        self.check(self.lib.MXPredSetMonitorCallback(handle, callback, None,
                                                     ctypes.c_bool(monitor_all)))

    def nd_list(self, data):
        handle = ctypes.c_void_p()
        length = mx_uint()
        self.check(self.lib.MXNDListCreate(data, ctypes.c_int(len(data)), ctypes.byref(handle),
                                           ctypes.byref(length)))
        result = []
        try:
            for i in range(length.value):
                key = ctypes.c_char_p()
                values = ctypes.POINTER(ctypes.c_float)()
                shape = ctypes.POINTER(mx_uint)()
                ndim = mx_uint()
                self.check(self.lib.MXNDListGet(handle, mx_uint(i), ctypes.byref(key),
                                                ctypes.byref(values), ctypes.byref(shape),
                                                ctypes.byref(ndim)))
                dims = tuple(shape[d] for d in range(ndim.value))
                size = int(np.prod(dims))  # 1 for a 0-d scalar
                array = (np.ctypeslib.as_array(values, shape=(size,)).reshape(dims).copy()
                         if size else np.zeros(dims, np.float32))
                result.append((key.value.decode(), array))
        finally:
            self.check(self.lib.MXNDListFree(handle))
        return result

    def predict(self, symbol_json, params, inputs, num_outputs=1, **create_args):
        """Create, set every input, forward, fetch the outputs, free."""
        shapes = {name: value.shape for name, value in inputs.items()}
        handle = self.create(symbol_json, params, shapes, **create_args)
        try:
            for name, value in inputs.items():
                self.set_input(handle, name, value.astype(np.float32))
            self.forward(handle)
            return [self.output(handle, index) for index in range(num_outputs)]
        finally:
            self.free(handle)
