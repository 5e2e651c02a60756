"""mxlite.Predictor: an MXNet checkpoint that takes and returns numpy arrays.

    pred = mxlite.Predictor.load('resnet18_v1')         # prefix-symbol.json, prefix-0000.params
    scores = pred(data=batch)                           # binds to batch.shape on first use
    pred.reshape(data=(8, 3, 224, 224))                 # rebind; weights are shared
    features = pred.with_outputs('resnetv10_pool1_fwd_output')(data=batch)

Inputs of any numeric dtype and layout are converted once to C-contiguous
arrays of the input's dtype (float32 unless input_dtypes says otherwise);
arrays that already are that are read in place, without a copy. Outputs
are numpy arrays that own their memory (no copy is made to return them),
unaffected by later calls. The forward pass runs without the GIL, so other
Python threads keep running; one predictor serves one pass at a time.
Errors are mxlite.MXLiteError, with the runtime's message.
"""
from __future__ import annotations

import operator
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex, Union

import numpy as np
import numpy.typing as npt

from ._native import core as _core
from .context import Context
from .errors import MXLiteError, read_file

if TYPE_CHECKING:
    from .symbol import Symbol

__all__ = ['Predictor', 'Outputs']

# What predict() returns: one array for a one-output model, else a list.
Outputs = Union[npt.NDArray[Any], list[npt.NDArray[Any]]]


def _shape_dict(shapes: Mapping[str, Sequence[SupportsIndex]] | None
                ) -> dict[str, tuple[int, ...]]:
    """{name: sequence of ints} -> {name: tuple of ints}, with clear errors."""
    if shapes is None:
        return {}
    if not hasattr(shapes, 'items'):
        raise MXLiteError('input shapes must be a dict {name: shape}, not '
                          f'{type(shapes).__name__}')
    result = {}
    for name, shape in shapes.items():
        if not isinstance(name, str):
            raise MXLiteError(f'input names must be strings, got {name!r}')
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise MXLiteError(f'the shape of {name!r} must be a sequence of integers, '
                              f'got {shape!r}') from None
        result[name] = dims
    return result


def runtime_options() -> list[dict[str, str]]:
    """The runtime options a Predictor takes (options={...}), as a list of
    {'name', 'environment', 'values', 'meaning'} dicts; each can also be set
    with its environment variable."""
    return [dict(zip(('name', 'environment', 'values', 'meaning'), entry))
            for entry in _core.runtime_options()]


def _option_texts(threads: int | None,
                  options: Mapping[str, str | int | bool] | None) -> dict[str, str]:
    """{name: text} for the core: `options` (values str, int or bool), then
    `threads` over them."""
    texts: dict[str, str] = {}
    if options is not None:
        if not isinstance(options, Mapping):
            raise MXLiteError(f'options must be a dict of option names to values, '
                              f'got {type(options).__name__}')
        for name, value in options.items():
            if not isinstance(name, str):
                raise MXLiteError(f'option names must be strings, got {name!r}')
            if isinstance(value, bool):
                text = '1' if value else '0'
            elif isinstance(value, int):
                if value < 0:
                    raise MXLiteError(f'option {name}: invalid value {value} (negative)')
                text = str(value)
            elif isinstance(value, str):
                text = value
            else:
                raise MXLiteError(f'option {name}: value must be a str, int or bool, '
                                  f'got {value!r}')
            texts[name] = text
    if threads is not None:
        try:
            count = operator.index(threads)
        except TypeError:
            raise MXLiteError(f'threads must be a positive integer or None, '
                              f'got {threads!r}') from None
        if count < 1:
            raise MXLiteError(f'threads must be a positive integer or None, got {threads!r}')
        texts['threads'] = str(count)  # the runtime clamps it to its maximum (256)
    return texts


def _device_option(ctx: Context | None, texts: dict[str, str]) -> dict[str, str]:
    """`texts` with the device option that `ctx` names (mx.cpu(), mx.gpu(i));
    a different device in the options too is an error."""
    if ctx is None:
        return texts
    if not isinstance(ctx, Context):
        raise MXLiteError(f'ctx must be an mxlite Context (mx.cpu(), mx.gpu(i)), got {ctx!r}')
    device = f'gpu:{ctx.device_id}' if ctx.device_type == 'gpu' else 'cpu'
    if texts.get('device', device) != device:
        raise MXLiteError(f"ctx={ctx} and options {{'device': {texts['device']!r}}} name "
                          'different devices')
    return dict(texts, device=device)


def _output_names(outputs: str | int | Sequence[str | int] | None) -> list[str | int] | None:
    """Output selectors: names (str) or positions in get_internals() (int)."""
    if outputs is None:
        return None
    names = [outputs] if isinstance(outputs, (str, int)) else list(outputs)
    if not names or not all(isinstance(name, str) or (isinstance(name, int) and
                                                      not isinstance(name, bool))
                            for name in names):
        raise MXLiteError('outputs must be a non-empty list of output names (str) or positions '
                          f'in get_internals() (int), got {outputs!r}')
    return names


def _encode_params(params: Mapping[str, Any]) -> bytes:
    """{name: NDArray or array} -> the bytes of an NDArray file holding them."""
    names, arrays = [], []
    for name, value in params.items():
        if not isinstance(name, str):
            raise MXLiteError(f'parameter names must be strings, got {name!r}')
        names.append(name)
        arrays.append(np.ascontiguousarray(value.asnumpy() if hasattr(value, 'asnumpy')
                                           else np.asarray(value)))
    return _core.save_ndarrays(arrays, names)


_FLOAT32 = np.dtype(np.float32)  # inputs not in input_dtypes

# MXNet's type flags (mshadow's), which the compiled module takes.
_DTYPE_FLAGS = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
                'int64': 6, 'bool': 7, 'int16': 8, 'uint16': 9, 'uint32': 10, 'uint64': 11}


def _dtype_flags(dtypes: Mapping[str, npt.DTypeLike] | None) -> dict[str, int]:
    """{name: numpy dtype or its name} -> {name: MXNet type flag}."""
    if dtypes is None:
        return {}
    if not hasattr(dtypes, 'items'):
        raise MXLiteError(f'input_dtypes must be a dict {{name: dtype}}, not '
                          f'{type(dtypes).__name__}')
    flags = {}
    for name, dtype in dtypes.items():
        try:
            flags[name] = _DTYPE_FLAGS[np.dtype(dtype).name]
        except (TypeError, KeyError):
            raise MXLiteError(f'input_dtypes: {name!r} has dtype {dtype!r}; mxlite takes '
                              f'{", ".join(_DTYPE_FLAGS)}') from None
    return flags


def _as_input(name: str, value: npt.ArrayLike, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """The array the runtime reads for input `name`: C-contiguous, of `dtype`."""
    if type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous:
        return value  # read in place
    try:
        array = np.asarray(value)
    except Exception as error:  # anything numpy cannot make an array of
        raise MXLiteError(f'input {name!r}: cannot make an array of {type(value).__name__}: '
                          f'{error}') from None
    if array.dtype.kind not in 'biuf':
        raise MXLiteError(f'input {name!r} has dtype {array.dtype}; mxlite takes bool, '
                          'integer or floating-point arrays')
    return np.asarray(array, dtype=dtype, order='C')


class Predictor:
    """A checkpoint ready to predict, bound to input shapes.

    Predictor(symbol_json, params=None, input_shapes=None, outputs=None, threads=None,
              input_dtypes=None, options=None, ctx=None)

    symbol_json: the symbol file's text (str or bytes), or an
        mxlite.symbol.Symbol (mx.model.load_checkpoint's), whose outputs
        are computed unless `outputs` says otherwise.
    params: the bytes of the .params file, or a dict {name: NDArray or
        numpy array} such as {**arg_params, **aux_params} from
        load_checkpoint (names with or without "arg:"/"aux:"); None: a
        graph without parameters.
    input_shapes: {input name: shape}. Inputs not given take their
        "__shape__" hint when it is complete; a predictor whose inputs still
        lack shapes binds to the shapes of the first arrays it is given.
    outputs: output names to compute instead of the symbol's own (any of
        get_internals(); MXNet's partial-output key "conv0" means
        "conv0_output"), or positions in get_internals(); the graph is pruned
        to what they need. A name that several nodes share is an error that
        lists their positions (as MXNet's get_internals()[name] refuses it).
    threads: threads the forward pass may use (None: MXLITE_NUM_THREADS, else
        one per core); at most 256, and fewer where the system refuses to
        create more threads. Less than 1 is an error.
    options: runtime options {name: value} over the MXLITE_* environment
        (docs/options.md, mxlite.runtime_options()): e.g. {'memory_budget':
        '512M', 'winograd': False, 'spin_ms': 0}. An unknown name or a bad
        value is an MXLiteError naming it.
    input_dtypes: {input name: dtype} for inputs that are not float32 (a
        float16 network, int32 token ids, uint8 pixels), as MXNet's
        type_dict; arrays given to predict are converted to these.
    ctx: where the predictor runs: mx.cpu() (the default) or mx.gpu(i),
        which needs a package built with the CUDA backend (MXLITE_CUDA=1
        pip install ., docs/cuda.md); the same as options={'device': ...}.
        Inputs and outputs stay numpy arrays either way.
    """

    __slots__ = ('_core', '_required', '_dtypes')

    def __init__(self, symbol_json: str | bytes | Symbol,
                 params: bytes | Mapping[str, Any] | None = None,
                 input_shapes: Mapping[str, Sequence[SupportsIndex]] | None = None,
                 outputs: str | int | Sequence[str | int] | None = None,
                 threads: int | None = None,
                 input_dtypes: Mapping[str, npt.DTypeLike] | None = None,
                 options: Mapping[str, str | int | bool] | None = None,
                 ctx: Context | None = None) -> None:
        from .symbol import Symbol
        if isinstance(symbol_json, Symbol):
            if outputs is None:
                outputs = symbol_json._predictor_outputs()
            symbol_json = symbol_json.tojson()
        if isinstance(params, Mapping):
            params = _encode_params(params)
        self._core = _core.Predictor(symbol_json, params, _shape_dict(input_shapes),
                                     _output_names(outputs),
                                     _device_option(ctx, _option_texts(threads, options)),
                                     _dtype_flags(input_dtypes))
        self._adopt()

    def _adopt(self) -> None:
        """Caches what every call needs from the compiled predictor."""
        self._required = tuple(self._core.required_inputs)
        self._dtypes = {name: np.dtype(dtype) for name, dtype in self._core.input_dtypes.items()}

    @classmethod
    def load(cls, prefix: str | os.PathLike[str], epoch: int = 0,
             input_shapes: Mapping[str, Sequence[SupportsIndex]] | None = None,
             outputs: str | int | Sequence[str | int] | None = None,
             threads: int | None = None,
             input_dtypes: Mapping[str, npt.DTypeLike] | None = None,
             options: Mapping[str, str | int | bool] | None = None,
             ctx: Context | None = None) -> Predictor:
        """Loads `prefix`-symbol.json and `prefix`-%04d.params (MXNet's checkpoint names).

        The other arguments are the constructor's. A missing file raises
        MXLiteFileNotFoundError (an MXLiteError and a FileNotFoundError).
        """
        prefix = os.fspath(prefix)
        try:
            epoch = operator.index(epoch)
        except TypeError:
            raise MXLiteError(f'epoch must be an integer, got {epoch!r}') from None
        if not 0 <= epoch <= 9999:
            raise MXLiteError(f'epoch must be in 0..9999, got {epoch}')
        symbol = read_file(f'{prefix}-symbol.json')
        params = read_file(f'{prefix}-{epoch:04d}.params')
        try:
            return cls(symbol, params, input_shapes, outputs, threads, input_dtypes, options, ctx)
        except MXLiteError as error:
            raise MXLiteError(f'{prefix}: {error}') from None

    def predict(self, *args: npt.ArrayLike, **inputs: npt.ArrayLike) -> Outputs:
        """Runs one forward pass and returns the outputs as numpy arrays.

        Inputs are given by name (pred.predict(data=x)), or as one positional
        array for a model with one required input (pred.predict(x)). Every
        required input is needed; the others (labels, shape-only inputs) may
        be given. Returns a single array for a one-output model, else a list.
        """
        if args:
            if len(args) != 1 or inputs or len(self._required) != 1:
                raise MXLiteError('give inputs by name: this model\'s inputs are '
                                  f'{self._core.input_names}')
            inputs = {self._required[0]: args[0]}
        dtypes = self._dtypes
        arrays = {name: _as_input(name, value, dtypes.get(name, _FLOAT32))
                  for name, value in inputs.items()}
        outputs = self._core.predict(arrays)
        return outputs[0] if len(outputs) == 1 else outputs

    __call__ = predict

    def reshape(self, input_shapes: Mapping[str, Sequence[SupportsIndex]] | None = None,
                **shapes: Sequence[SupportsIndex]) -> None:
        """Rebinds for new input shapes, given by name (reshape(data=(8, 3, 224, 224)))
        or as a dict. Inputs not named keep their shapes; weights are shared."""
        given = _shape_dict(input_shapes)
        given.update(_shape_dict(shapes))
        self._core.reshape(given)

    @property
    def input_names(self) -> list[str]:
        """The variables a caller gives (those the params file lacks), in graph
        order. Labels and other inputs whose values no operator reads (only
        their shapes matter) are listed too, but may be left out."""
        return self._core.input_names

    @property
    def required_inputs(self) -> list[str]:
        """The inputs every forward pass needs: the ones operators read."""
        return list(self._required)

    @property
    def input_dtypes(self) -> dict[str, np.dtype[Any]]:
        """{input name: numpy dtype} the inputs are converted to (float32 unless
        input_dtypes said otherwise)."""
        return dict(self._dtypes)

    @property
    def output_names(self) -> list[str]:
        """The outputs' names (MXNet's "<node>_output" form), in order."""
        return self._core.output_names

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """{input name: shape} as bound (or as known so far, before binding)."""
        return self._core.input_shapes

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        """The outputs' shapes for the bound input shapes."""
        return self._core.output_shapes

    def get_internals(self) -> list[str]:
        """Every output name that `outputs=` and with_outputs() accept: the
        variables and each operator's visible outputs, in graph order (what
        MXNet's sym.get_internals().list_outputs() gives). Nodes that share a
        name appear once each; select those by position in this list."""
        return self._core.internals()

    def with_outputs(self, *names: str | int) -> Predictor:
        """A predictor for other outputs (names from get_internals(), or their
        positions in it) of the same checkpoint; it shares this one's weights
        and input shapes."""
        other = object.__new__(type(self))
        selected = _output_names(list(names))
        assert selected is not None  # _output_names refuses an empty list
        other._core = self._core.with_outputs(selected)
        other._adopt()
        return other

    def memory_stats(self) -> dict[str, int]:
        """What the bound predictor holds, in bytes: 'arena_bytes' (planned
        intermediate results; 'unshared_bytes' without sharing),
        'param_bytes' (the parameters), 'prepared_bytes' (the packed and
        transformed copies of the weights its kernels read, shared with other
        predictors of the model), 'float32_copy_bytes' (float32 copies for
        operators reading other dtypes) and 'workspace_bytes' (operator
        scratch). All but the parameters count in the memory_budget option
        (docs/options.md)."""
        stats: dict[str, int] = self._core.memory_stats()
        return stats

    def summary(self) -> str:
        """A table of the graph: each operator with its output shape,
        parameters and multiply-adds, then the totals; for a predictor on a
        GPU, a last line says where the nodes run (those on the host, and
        why) and whether the pass replays as one CUDA graph."""
        from .graph_info import analyze, format_report
        report: str = format_report(analyze(self))
        device: str = self._core.device_report()
        return f'{report}\n{device}' if device else report

    def __repr__(self) -> str:
        shapes = self._core.input_shapes
        inputs = ', '.join(f'{name}{tuple(shapes[name]) if name in shapes else ""}'
                           for name in self._core.input_names)
        return f'<mxlite.Predictor inputs: {inputs}; outputs: {", ".join(self.output_names)}>'
