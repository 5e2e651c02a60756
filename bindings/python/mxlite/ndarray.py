"""mxlite.nd.NDArray: MXNet's lazy, asynchronous NDArray on mxlite's engine.

Every operation on an NDArray -- arithmetic, a registered operator, a copy,
a fill, a random draw -- is pushed to the dependency engine with the arrays
it reads and writes, and returns at once with its (not yet computed)
outputs. Reading values (asnumpy, asscalar, printing, numpy conversion)
waits for the writes pushed before it, and raises MXLiteError if one of them
failed. Views (a[i], a[i:j], reshape) share storage and dependencies with
their base, as in MXNet.

Operators compute in float32 like the executor; other dtypes are converted
on the way in and out.
"""
import numbers

import numpy as np

from ._native import core as _core
from .context import Context, current_context
from .errors import MXLiteError

__all__ = ['NDArray', 'empty', 'zeros', 'ones', 'full', 'array', 'arange', 'dot', 'waitall',
           'invoke', 'concat', 'stack', 'add_n', 'zeros_like', 'ones_like', 'add', 'subtract',
           'multiply', 'divide', 'modulo', 'power', 'maximum', 'minimum', 'equal', 'not_equal',
           'greater', 'lesser']

# MXNet's dtype flags, in flag order (bfloat16, which numpy lacks, is not offered).
_DTYPE_NAMES = ['float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64', 'bool',
                'int16', 'uint16', 'uint32', 'uint64']
_FLAG_OF = {name: flag for flag, name in enumerate(_DTYPE_NAMES)}


def _dtype_flag(dtype):
    """The MXNet flag of a dtype given as a name, numpy type or np.dtype."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise MXLiteError(f'unknown dtype {dtype!r}') from None
    if name not in _FLAG_OF:
        raise MXLiteError(f'dtype {name} is not supported by NDArray')
    return _FLAG_OF[name]


def _shape_tuple(shape):
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _format_attr(value):
    """An attribute value the way MXNet's Python frontend writes it."""
    if isinstance(value, (list, tuple)):
        return '(' + ', '.join(_format_attr(v) for v in value) + (',)' if len(value) == 1 else ')')
    if isinstance(value, (np.dtype, type)):
        return np.dtype(value).name
    return str(value)


class NDArray:
    """An n-dimensional array on a context, computed lazily by the engine."""

    __slots__ = ('_handle', '_ctx', '__weakref__')
    # MXNet arrays are hashable by identity although == is elementwise.
    __hash__ = object.__hash__
    # Make numpy defer to NDArray's operators (np_array + nd_array -> NDArray).
    __array_priority__ = 1000.0

    def __init__(self, handle, ctx=None):
        ctx = ctx or current_context()
        if ctx.device_type == 'gpu':
            raise MXLiteError(f'mx.nd arrays live in host memory in mxlite, not on {ctx}: '
                              'GPUs run predictors (mxlite.Predictor(..., ctx=mx.gpu(i))); '
                              'make arrays on mx.cpu()')
        self._handle = handle
        self._ctx = ctx

    # --- properties ---------------------------------------------------------
    @property
    def shape(self):
        """The dimensions, a tuple of ints."""
        return self._handle.shape

    @property
    def ndim(self):
        """The number of dimensions."""
        return len(self._handle.shape)

    @property
    def size(self):
        """The number of elements."""
        return int(np.prod(self._handle.shape, dtype=np.int64))

    @property
    def dtype(self):
        """The element type, a numpy scalar type (numpy.float32, ...)."""
        return np.dtype(_DTYPE_NAMES[self._handle.dtype]).type

    @property
    def nbytes(self):
        """The bytes the elements take."""
        return self.size * np.dtype(self.dtype).itemsize

    @property
    def context(self):
        """The Context the array lives on (also `ctx`)."""
        return self._ctx

    ctx = context

    @property
    def stype(self):
        """The storage type: always 'default' (dense)."""
        return 'default'

    @property
    def T(self):
        """The transpose (the array itself below two dimensions)."""
        if self.ndim < 2:
            return self
        return invoke('transpose', [self])

    # --- reading ------------------------------------------------------------
    def asnumpy(self):
        """Waits for pending writes and returns a numpy copy of the values."""
        return self._handle.asnumpy()

    def asscalar(self):
        """The value of a one-element array as a numpy scalar."""
        if self.size != 1:
            raise MXLiteError(f'asscalar needs an array of one element, not shape {self.shape}')
        return self.asnumpy().reshape(())[()]

    def wait_to_read(self):
        """Blocks until the values are computed; raises a failure that computed them."""
        self._handle.wait_to_read()

    def __array__(self, dtype=None, copy=None):
        del copy
        values = self.asnumpy()
        return values if dtype is None else values.astype(dtype)

    def __repr__(self):
        shape_info = 'x'.join(str(d) for d in self.shape)
        return f'\n{self.asnumpy()}\n<{type(self).__name__} {shape_info} @{self._ctx}>'

    def __len__(self):
        if not self.shape:
            raise TypeError('len() of a 0-d NDArray')
        return self.shape[0]

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    def __bool__(self):
        if self.size == 0:
            return False
        if self.size != 1:
            raise ValueError('The truth value of an NDArray with multiple elements is ambiguous.')
        return bool(self.asscalar())

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def tolist(self):
        """The values as nested Python lists (waits for them)."""
        return self.asnumpy().tolist()

    # --- copies, contexts, dtypes ---------------------------------------------
    def copyto(self, other):
        """Copies into NDArray `other` (returns it) or onto Context `other` (a new array)."""
        if isinstance(other, NDArray):
            if other.shape != self.shape:
                raise MXLiteError(f'copyto: shape {self.shape} does not match the target\'s '
                                  f'{other.shape}')
            self._handle.copy_to(other._handle)
            return other
        if isinstance(other, Context):
            result = empty(self.shape, ctx=other, dtype=self.dtype)
            self._handle.copy_to(result._handle)
            return result
        raise MXLiteError(f'copyto takes an NDArray or a Context, not {type(other).__name__}')

    def copy(self):
        """A copy on the same context."""
        return self.copyto(self._ctx)

    def as_in_context(self, context):
        """Itself when already on `context`, else a copy there."""
        return self if context == self._ctx else self.copyto(context)

    as_in_ctx = as_in_context

    def astype(self, dtype, copy=True):
        """The values converted to `dtype` (itself when copy=False and the
        dtype is already that)."""
        if not copy and np.dtype(dtype) == np.dtype(self.dtype):
            return self
        result = empty(self.shape, ctx=self._ctx, dtype=dtype)
        self._handle.copy_to(result._handle)
        return result

    def __reduce__(self):
        return (_unpickle, (self.asnumpy(), str(self._ctx.device_type), self._ctx.device_id))

    # --- shapes -------------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        """A view of another shape (MXNet codes: 0 keeps a dim, -1 infers one)."""
        if 'shape' in kwargs:
            shape = kwargs.pop('shape')
        elif len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        if kwargs:
            raise MXLiteError(f'reshape: unsupported arguments {sorted(kwargs)}')
        dims = []
        for index, dim in enumerate(shape):
            if dim == 0:
                if index >= self.ndim:
                    raise MXLiteError(f'reshape: code 0 at position {index} but the array has '
                                      f'{self.ndim} dimensions')
                dims.append(self.shape[index])
            elif dim >= -1:
                dims.append(int(dim))
            else:
                return invoke('Reshape', [self], shape=tuple(shape))
        if dims.count(-1) > 1:
            raise MXLiteError(f'reshape: more than one -1 in {tuple(shape)}')
        if -1 in dims:
            known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
            if known == 0 or self.size % known:
                raise MXLiteError(f'reshape: cannot reshape {self.shape} into {tuple(shape)}')
            dims[dims.index(-1)] = self.size // known
        if int(np.prod(dims, dtype=np.int64)) != self.size:
            raise MXLiteError(f'reshape: cannot reshape {self.shape} ({self.size} elements) '
                              f'into {tuple(dims)}')
        return NDArray(self._handle.view(0, dims), self._ctx)

    def reshape_like(self, other):
        """A view with `other`'s shape."""
        return self.reshape(other.shape)

    def flatten(self):
        """A view of shape (first dimension, the rest's product)."""
        return self.reshape(self.shape[0] if self.shape else 1, -1)

    def broadcast_to(self, shape):
        """The array broadcast to `shape`, as numpy broadcasts."""
        return invoke('broadcast_to', [self], shape=tuple(shape))

    def broadcast_like(self, other):
        """The array broadcast to `other`'s shape."""
        return self.broadcast_to(other.shape)

    def transpose(self, axes=None):
        """The axes permuted (reversed when `axes` is None)."""
        return invoke('transpose', [self], axes=axes)

    def expand_dims(self, axis):
        """A new axis of length 1 inserted at `axis`."""
        return invoke('expand_dims', [self], axis=axis)

    # --- indexing -------------------------------------------------------------
    def _leading_view(self, key):
        """The view a key on the leading axis selects, or None when it is not one."""
        if not self.shape:
            return None
        rows = self.shape[0]
        row = self.size // rows if rows else 0
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            index = int(key) + (rows if key < 0 else 0)
            if not 0 <= index < rows:
                raise IndexError(f'index {key} is out of bounds for axis 0 with size {rows}')
            shape = self.shape[1:] or (1,)
            return NDArray(self._handle.view(index * row, shape), self._ctx)
        if isinstance(key, slice):
            start, stop, step = key.indices(rows)
            if step != 1:
                return None
            stop = max(start, stop)
            return NDArray(self._handle.view(start * row, (stop - start,) + self.shape[1:]),
                           self._ctx)
        return None

    def __getitem__(self, key):
        """Indexing: an int or a unit-step slice on the first axis gives a view
        (no copy); other keys (tuples, steps, NDArray indices) give a copy."""
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        view = self._leading_view(key)
        if view is not None:
            return view
        if isinstance(key, NDArray):
            return invoke('take', [self, key], axis=0)
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > self.ndim:
            raise IndexError(f'too many indices ({len(key)}) for an array of {self.ndim} '
                             'dimensions')
        begin, end, step, dropped = [], [], [], []
        for axis, part in enumerate(key):
            size = self.shape[axis]
            if isinstance(part, numbers.Integral) and not isinstance(part, bool):
                index = int(part) + (size if part < 0 else 0)
                if not 0 <= index < size:
                    raise IndexError(f'index {part} is out of bounds for axis {axis} with size '
                                     f'{size}')
                begin.append(index)
                end.append(index + 1)
                step.append(1)
                dropped.append(axis)
            elif isinstance(part, slice):
                start, stop, stride = part.indices(size)
                begin.append(start)
                end.append(stop if stop >= 0 else None)
                step.append(stride)
            else:
                raise MXLiteError(f'unsupported index {part!r}: use integers and slices')
        result = invoke('slice', [self], begin=tuple(begin), end=tuple(end), step=tuple(step))
        if dropped:
            kept = [d for axis, d in enumerate(result.shape) if axis not in dropped]
            result = result.reshape(kept or [1])
        return result

    def __setitem__(self, key, value):
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        target = self if (isinstance(key, slice) and key == slice(None)) else \
            self._leading_view(key)
        if target is None:
            # A general basic index: write through numpy once the array is ready.
            values = self.asnumpy()
            values[key] = value.asnumpy() if isinstance(value, NDArray) else value
            self._handle.write(np.ascontiguousarray(values))
            return
        target._assign(value)

    def _assign(self, value):
        if isinstance(value, NDArray):
            if value.shape != self.shape:
                value = invoke('broadcast_to', [value], shape=self.shape)
            value._handle.copy_to(self._handle)
        elif isinstance(value, numbers.Number):
            self._handle.fill(float(value))
        else:
            values = np.broadcast_to(np.asarray(value, dtype=self.dtype), self.shape)
            self._handle.write(np.ascontiguousarray(values))

    # --- arithmetic -----------------------------------------------------------
    def _binary(self, other, array_op, scalar_op, reverse_scalar_op=None, reverse=False):
        if isinstance(other, NDArray):
            inputs = [other, self] if reverse else [self, other]
            return invoke(array_op, inputs)
        if isinstance(other, numbers.Number):
            op = reverse_scalar_op if reverse else scalar_op
            return invoke(op, [self], scalar=float(other))
        if isinstance(other, (np.ndarray, list, tuple)):
            other = array(other, ctx=self._ctx, dtype=self.dtype)
            return self._binary(other, array_op, scalar_op, reverse_scalar_op, reverse)
        return NotImplemented

    def __eq__(self, other):
        return False if other is None else self._binary(other, 'broadcast_equal', '_equal_scalar')

    def __ne__(self, other):
        if other is None:
            return True
        return self._binary(other, 'broadcast_not_equal', '_not_equal_scalar')

    def __neg__(self):
        return invoke('negative', [self])

    def __pos__(self):
        return self

    def __abs__(self):
        return invoke('abs', [self])

    # Registered operators as methods: a.exp(), a.sum(axis=1), a.transpose().
    def __getattr__(self, name):
        if name.startswith('__') or not _core_op_exists(name):
            raise AttributeError(f"'NDArray' object has no attribute {name!r}")
        return lambda *args, **kwargs: _call_op(name, (self,) + args, kwargs)


def _binary_method(array_op, scalar_op, reverse_scalar_op, reverse):
    def method(self, other):
        return self._binary(other, array_op, scalar_op, reverse_scalar_op, reverse)
    return method


# Python operator -> (broadcasting op, op with a scalar right, op with a scalar left).
_ARITHMETIC = {
    'add': ('broadcast_add', '_plus_scalar', '_plus_scalar'),
    'sub': ('broadcast_sub', '_minus_scalar', '_rminus_scalar'),
    'mul': ('broadcast_mul', '_mul_scalar', '_mul_scalar'),
    'truediv': ('broadcast_div', '_div_scalar', '_rdiv_scalar'),
    'mod': ('broadcast_mod', '_mod_scalar', '_rmod_scalar'),
    'pow': ('broadcast_power', '_power_scalar', '_rpower_scalar'),
}
# Comparisons: (broadcasting op, op with a scalar right); Python reflects them itself.
_COMPARISONS = {
    'gt': ('broadcast_greater', '_greater_scalar'),
    'ge': ('broadcast_greater_equal', '_greater_equal_scalar'),
    'lt': ('broadcast_lesser', '_lesser_scalar'),
    'le': ('broadcast_lesser_equal', '_lesser_equal_scalar'),
}


def _inplace_method(name):
    """a op= b computes a op b and writes it into a's storage (MXNet's in-place ops)."""
    def method(self, other):
        result = getattr(self, f'__{name}__')(other)
        if result is NotImplemented:
            return result
        result._handle.copy_to(self._handle)
        return self
    return method


for _name, _ops in _ARITHMETIC.items():
    setattr(NDArray, f'__{_name}__', _binary_method(*_ops, reverse=False))
    setattr(NDArray, f'__r{_name}__', _binary_method(*_ops, reverse=True))
    setattr(NDArray, f'__i{_name}__', _inplace_method(_name))
for _name, (_array_op, _scalar_op) in _COMPARISONS.items():
    setattr(NDArray, f'__{_name}__', _binary_method(_array_op, _scalar_op, None, reverse=False))
NDArray.__div__, NDArray.__rdiv__ = NDArray.__truediv__, NDArray.__rtruediv__


def _unpickle(values, device_type, device_id):
    return array(values, ctx=Context(device_type, device_id), dtype=values.dtype)


def _core_op_exists(name):
    return bool(_core.nd_op_name(name))


# Operators taking any number of inputs, with the attribute that counts them.
_VARIADIC = {'concat': 'num_args', 'Concat': 'num_args', 'stack': 'num_args',
             'add_n': 'num_args', 'ElementWiseSum': 'num_args'}


def invoke(op_name, inputs, out=None, **attrs):
    """Pushes registered operator `op_name` on NDArrays `inputs` with keyword attributes.

    Returns its output (or list of outputs) at once; `out` receives a copy.
    """
    if op_name in _VARIADIC and _VARIADIC[op_name] not in attrs:
        attrs[_VARIADIC[op_name]] = len(inputs)
    attrs = {key: _format_attr(value) for key, value in attrs.items() if value is not None}
    ctx = inputs[0]._ctx if inputs else current_context()
    handles = _core.nd_invoke(op_name, attrs, [x._handle for x in inputs])
    results = [NDArray(handle, ctx) for handle in handles]
    if out is not None:
        outs = out if isinstance(out, (list, tuple)) else [out]
        for result, target in zip(results, outs):
            result.copyto(target)
        return out
    return results[0] if len(results) == 1 else results


_ATTR_NAMES = {}


def _call_op(op_name, args, kwargs):
    """Invokes an operator as MXNet's generated functions do: NDArray inputs first
    (positionally, or as lists), then attributes positionally in the operator's
    order or by keyword."""
    inputs, positional = [], []
    for arg in args:
        if positional or not (isinstance(arg, NDArray) or (
                isinstance(arg, (list, tuple)) and arg and
                all(isinstance(a, NDArray) for a in arg))):
            positional.append(arg)
        elif isinstance(arg, NDArray):
            inputs.append(arg)
        else:
            inputs.extend(arg)
    if positional:
        if op_name not in _ATTR_NAMES:
            _ATTR_NAMES[op_name] = _core.nd_op_attrs(op_name)
        names = _ATTR_NAMES[op_name]
        if len(positional) > len(names):
            raise MXLiteError(f'{op_name}: {len(positional)} positional attributes given but it '
                              f'has {len(names)} ({", ".join(names) or "none"}); pass '
                              'NDArray inputs first')
        for name, value in zip(names, positional):
            if isinstance(value, NDArray):
                raise MXLiteError(f'{op_name}: NDArray inputs must come before attributes')
            if name in kwargs:
                raise MXLiteError(f'{op_name}: attribute {name!r} given twice')
            kwargs[name] = value
    for key, value in kwargs.items():
        if isinstance(value, NDArray):
            raise MXLiteError(f'{op_name}: pass NDArray input {key!r} positionally')
    kwargs.pop('name', None)
    return invoke(op_name, inputs, **kwargs)


# --- creation -------------------------------------------------------------------
def empty(shape, ctx=None, dtype='float32'):
    """An array of `shape` (zero-filled in mxlite; MXNet leaves it uninitialised)."""
    flag = _dtype_flag(dtype or 'float32')
    return NDArray(_core.ArrayHandle.empty(_shape_tuple(shape), flag), ctx or current_context())


def zeros(shape, ctx=None, dtype='float32', **kwargs):
    """An array of `shape` filled with 0."""
    del kwargs
    return empty(shape, ctx, dtype)


def full(shape, val, ctx=None, dtype='float32', out=None):
    """An array of `shape` filled with `val` (written into `out` when given)."""
    result = out if out is not None else empty(shape, ctx, dtype)
    result._handle.fill(float(val))
    return result


def ones(shape, ctx=None, dtype='float32', **kwargs):
    """An array of `shape` filled with 1."""
    del kwargs
    return full(shape, 1, ctx, dtype)


def array(source_array, ctx=None, dtype=None):
    """An array holding a copy of `source_array` (numpy, list, NDArray).

    The dtype is `dtype`, else the source's for an NDArray, else float32 (MXNet's rule).
    """
    if isinstance(source_array, NDArray):
        dtype = dtype or source_array.dtype
        result = empty(source_array.shape, ctx or source_array.context, dtype)
        source_array._handle.copy_to(result._handle)
        return result
    values = np.asarray(source_array, dtype=np.dtype(dtype or 'float32'), order='C')
    result = empty(values.shape, ctx, values.dtype)
    result._handle.write(values)
    return result


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype='float32'):
    """Evenly spaced values in [start, stop), each repeated `repeat` times."""
    del infer_range
    values = np.arange(start, stop, step, dtype=np.float64)
    values = np.repeat(values, repeat).astype(np.dtype(dtype or 'float32'))
    return array(values, ctx=ctx, dtype=values.dtype)


def zeros_like(data, **kwargs):
    """Zeros of `data`'s shape, dtype and context."""
    del kwargs
    return zeros(data.shape, data.context, data.dtype)


def ones_like(data, **kwargs):
    """Ones of `data`'s shape, dtype and context."""
    del kwargs
    return ones(data.shape, data.context, data.dtype)


# --- computation ------------------------------------------------------------------
def dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None, **kwargs):
    """Matrix product. 2-d float32 arrays use mxlite's GEMM on the shared threads;
    other cases run the registered `dot` operator."""
    if lhs.ndim == 2 and rhs.ndim == 2 and lhs.dtype == np.float32 and \
            rhs.dtype == np.float32 and not kwargs:
        result = NDArray(_core.nd_dot(lhs._handle, rhs._handle, bool(transpose_a),
                                      bool(transpose_b)), lhs.context)
        return result if out is None else result.copyto(out)
    return invoke('dot', [lhs, rhs], out=out, transpose_a=transpose_a,
                  transpose_b=transpose_b, **kwargs)


def concat(*data, dim=1, **kwargs):
    """The arrays joined along axis `dim` (MXNet's Concat)."""
    return _call_op('Concat', data, dict(kwargs, dim=dim))


def stack(*data, axis=0, **kwargs):
    """The arrays stacked along a new axis `axis`."""
    return _call_op('stack', data, dict(kwargs, axis=axis))


def add_n(*args, **kwargs):
    """The elementwise sum of the arrays."""
    return _call_op('add_n', args, kwargs)


def waitall():
    """Waits for every pushed operation; raises the first failure not yet reported."""
    _core.nd_waitall()


def _elementwise(array_op, scalar_op, reverse_scalar_op, what):
    def apply(lhs, rhs):
        if isinstance(lhs, NDArray):
            return lhs._binary(rhs, array_op, scalar_op, reverse_scalar_op)
        if isinstance(rhs, NDArray):
            return rhs._binary(lhs, array_op, scalar_op, reverse_scalar_op, reverse=True)
        raise MXLiteError(f'{array_op}: needs at least one NDArray')
    apply.__doc__ = (f'{what}, elementwise, with numpy broadcasting; either side may be a '
                     'number, one must be an NDArray.')
    return apply


add = _elementwise('broadcast_add', '_plus_scalar', '_plus_scalar', 'lhs + rhs')
subtract = _elementwise('broadcast_sub', '_minus_scalar', '_rminus_scalar', 'lhs - rhs')
multiply = _elementwise('broadcast_mul', '_mul_scalar', '_mul_scalar', 'lhs * rhs')
divide = _elementwise('broadcast_div', '_div_scalar', '_rdiv_scalar', 'lhs / rhs')
modulo = _elementwise('broadcast_mod', '_mod_scalar', '_rmod_scalar', 'lhs % rhs')
power = _elementwise('broadcast_power', '_power_scalar', '_rpower_scalar', 'lhs ** rhs')
maximum = _elementwise('broadcast_maximum', '_maximum_scalar', '_maximum_scalar', 'The larger of lhs and rhs')
minimum = _elementwise('broadcast_minimum', '_minimum_scalar', '_minimum_scalar', 'The smaller of lhs and rhs')
equal = _elementwise('broadcast_equal', '_equal_scalar', '_equal_scalar', '1 where lhs == rhs, else 0')
not_equal = _elementwise('broadcast_not_equal', '_not_equal_scalar', '_not_equal_scalar', '1 where lhs != rhs, else 0')
greater = _elementwise('broadcast_greater', '_greater_scalar', '_lesser_scalar', '1 where lhs > rhs, else 0')
lesser = _elementwise('broadcast_lesser', '_lesser_scalar', '_greater_scalar', '1 where lhs < rhs, else 0')
