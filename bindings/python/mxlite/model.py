"""mxlite.model: MXNet's checkpoint loaders (mx.model.load_checkpoint).

    import mxlite as mx
    sym, arg_params, aux_params = mx.model.load_checkpoint('resnet18_v1', 0)
    pred = mx.Predictor(sym, {**arg_params, **aux_params})
    scores = pred(data=image)

The return values have MXNet 1.9.1's structure: a Symbol (mxlite.symbol's
light one) and two dicts {name: mxlite.nd.NDArray}, the names without their
"arg:"/"aux:" prefixes.
"""
from __future__ import annotations

import logging
from typing import cast

from . import nd, symbol
from .errors import MXLiteError
from .ndarray import NDArray

__all__ = ['load_checkpoint', 'load_params']


def load_params(prefix: str, epoch: int) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """Reads `prefix`-%04d.params into (arg_params, aux_params), as MXNet.

    Names are split at the first ':'; "arg:" entries go to arg_params,
    "aux:" entries to aux_params, other prefixes are dropped (as MXNet
    drops them). A name without a prefix (Gluon's save_parameters) is an
    MXLiteError here, where MXNet raised a bare ValueError.
    """
    path = '%s-%04d.params' % (prefix, epoch)
    save_dict = nd.load(path)
    arg_params: dict[str, NDArray] = {}
    aux_params: dict[str, NDArray] = {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", path)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise MXLiteError(f'{path}: the arrays have no names, so they are not a checkpoint\'s '
                          'parameters')
    for key, value in save_dict.items():
        kind, sep, name = key.partition(':')
        if not sep:
            raise MXLiteError(f'{path}: array {key!r} has no "arg:" or "aux:" prefix (a Gluon '
                              'save_parameters() file? export() writes a checkpoint)')
        if kind == 'arg':
            arg_params[name] = cast(NDArray, value)
        elif kind == 'aux':
            aux_params[name] = cast(NDArray, value)
    return arg_params, aux_params


def load_checkpoint(prefix: str,
                    epoch: int) -> tuple[symbol.Symbol, dict[str, NDArray], dict[str, NDArray]]:
    """Loads `prefix`-symbol.json and `prefix`-%04d.params.

    Returns (symbol, arg_params, aux_params) as MXNet's
    mx.model.load_checkpoint: an mxlite.symbol.Symbol and two dicts
    {name: NDArray}. Missing files raise MXLiteFileNotFoundError.
    """
    sym = symbol.load('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return sym, arg_params, aux_params
