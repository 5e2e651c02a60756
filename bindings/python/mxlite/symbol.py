"""mxlite.symbol (also mxlite.sym): a light, read-only stand-in for MXNet's Symbol.

    import mxlite as mx
    sym = mx.sym.load('resnet18_v1-symbol.json')
    sym.list_arguments()          # ['data', 'resnetv10_conv0_weight', ...]
    sym.list_outputs()            # ['resnetv10_dense0_fwd_output']
    feature = sym.get_internals()['resnetv10_pool1_fwd_output']
    pred = mx.Predictor(feature, params)    # computes that output

It holds the symbol file's JSON and answers what MXNet's Symbol answers
about the graph as written: list_arguments(), list_auxiliary_states(),
list_inputs(), list_outputs(), get_internals(), indexing an output by name
or position, tojson(). It cannot compose new graphs or run shape inference
(bind a Predictor for shapes: its input_shapes and output_shapes).
mxlite.Predictor accepts a Symbol wherever it takes symbol JSON, and then
computes the Symbol's outputs.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from ._native import core as _core
from .errors import MXLiteError, read_file

__all__ = ['Symbol', 'load', 'load_json']


class Symbol:
    """The graph of a symbol file and a choice of its outputs (MXNet's heads
    unless the Symbol came from get_internals() or indexing)."""

    __slots__ = ('_json', '_info', '_selection', '_names')

    def __init__(self, json_text: str | bytes, _info: dict[str, list[str]] | None = None,
                 _selection: Sequence[int] | None = None) -> None:
        """json_text: the symbol file's text (str or bytes). The other
        arguments are internal (get_internals() and indexing use them)."""
        if isinstance(json_text, bytes):
            json_text = json_text.decode('utf-8')
        if not isinstance(json_text, str):
            raise MXLiteError(f'symbol JSON must be str or bytes, not {type(json_text).__name__}')
        self._json = json_text
        # Parsing checks the whole graph (unknown operators and attributes
        # are errors here, as when MXNet loads the file).
        self._info = _info if _info is not None else _core.symbol_info(json_text)
        # None: the symbol's own outputs. Else what Predictor's outputs=
        # takes: positions in get_internals() (names may be shared).
        self._selection = None if _selection is None else list(_selection)
        if _selection is None:
            self._names = list(self._info['outputs'])
        else:
            self._names = [self._info['internals'][i] for i in _selection]

    def tojson(self) -> str:
        """The symbol file's JSON text, as loaded. A Symbol from
        get_internals() or indexing still returns the whole graph: its
        outputs are kept in the Symbol, and Predictor applies them."""
        return self._json

    def list_arguments(self) -> list[str]:
        """The variables that are not auxiliary states (inputs, weights,
        biases, labels), in graph order."""
        return list(self._info['arguments'])

    def list_auxiliary_states(self) -> list[str]:
        """The variables some operator updates (BatchNorm's moving_mean and
        moving_var), in graph order."""
        return list(self._info['aux_states'])

    def list_inputs(self) -> list[str]:
        """Every variable: list_arguments() then list_auxiliary_states()."""
        return self.list_arguments() + self.list_auxiliary_states()

    def list_outputs(self) -> list[str]:
        """The names of this Symbol's outputs ("<node>_output", or a
        variable's own name), in order."""
        return list(self._names)

    def get_internals(self) -> Symbol:
        """A Symbol whose outputs are every variable and every visible
        operator output, in graph order."""
        return Symbol(self._json, self._info, list(range(len(self._info['internals']))))

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, index: str | int) -> Symbol:
        """The output at a position, or of a name (which must be unique among
        this Symbol's outputs, as MXNet requires), as a one-output Symbol."""
        positions = (self._selection if self._selection is not None else
                     [self._info['internals'].index(name) for name in self._names])
        if isinstance(index, str):
            matches = [i for i, name in enumerate(self._names) if name == index]
            if not matches:
                raise MXLiteError(f'the symbol has no output {index!r}; its outputs are '
                                  f'{_shorten(self._names)}')
            if len(matches) > 1:
                raise MXLiteError(f'several outputs are named {index!r} (positions {matches}); '
                                  'select one by position')
            index = matches[0]
        elif isinstance(index, int) and not isinstance(index, bool):
            if not -len(self._names) <= index < len(self._names):
                raise MXLiteError(f'output index {index} is out of range: the symbol has '
                                  f'{len(self._names)} outputs')
        else:
            raise MXLiteError(f'index a symbol by output name or position, not {index!r}')
        return Symbol(self._json, self._info, [positions[index]])

    def _predictor_outputs(self) -> list[int] | None:
        """What Predictor's outputs= gets: None for the symbol's own outputs."""
        return None if self._selection is None else list(self._selection)

    def __repr__(self) -> str:
        return f'<mxlite.symbol.Symbol outputs: {_shorten(self._names)}>'


def _shorten(names: Sequence[str], limit: int = 8) -> str:
    if len(names) <= limit:
        return ', '.join(names)
    return ', '.join(names[:limit]) + f', ... ({len(names)} in all)'


def load_json(json_text: str | bytes) -> Symbol:
    """A Symbol from symbol JSON text (MXNet's mx.sym.load_json)."""
    return Symbol(json_text)


def load(path: str | os.PathLike[str]) -> Symbol:
    """Reads a symbol file (`prefix`-symbol.json), as MXNet's mx.sym.load.

    A missing file raises MXLiteFileNotFoundError; a graph mxlite cannot
    read raises MXLiteError naming the file.
    """
    path = os.fspath(path)
    data = read_file(path)
    try:
        return Symbol(data)
    except UnicodeDecodeError:
        raise MXLiteError(f'{path}: not UTF-8 text') from None
    except MXLiteError as error:
        raise MXLiteError(f'{path}: {error}') from None
