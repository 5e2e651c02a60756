"""mxlite: run Apache MXNet checkpoints with a small, dependency-free runtime.

    import mxlite
    pred = mxlite.Predictor.load('resnet18_v1', input_shapes={'data': (1, 3, 224, 224)})
    scores = pred(data=image)                  # numpy in, numpy out
    top5 = scores[0].argsort()[::-1][:5]

mxlite.Predictor and mxlite.nd use the compiled module (mxlite._core);
mxlite.ctypes_predict is MXNet's mxnet_predict.py API in pure Python over the
shared library (mxlite.lib_path()), for machines without a compiler.
mxlite.model.load_checkpoint and mxlite.sym (mxlite.symbol) are MXNet's
checkpoint loader and a light Symbol. The
`mxlite` command (python -m mxlite) predicts, inspects and runs the demo.
"""
import importlib
import os
import sys
from typing import TYPE_CHECKING

from .errors import MXLiteError, MXLiteFileNotFoundError

if TYPE_CHECKING:  # what __getattr__ below imports on first use, for type checkers
    from . import context, ctypes_predict, model, nd, ndarray, random, symbol
    from . import symbol as sym
    from .context import Context, cpu, gpu
    from .predictor import Predictor, runtime_options

__version__ = '0.1.0'
__all__ = ['Predictor', 'MXLiteError', 'MXLiteFileNotFoundError', 'nd', 'lib_path',
           'ctypes_predict', 'cpu', 'gpu', 'Context', 'random', 'context', 'model', 'symbol',
           'sym', 'runtime_options']

_LIB_NAME = 'libmxlite.dylib' if sys.platform == 'darwin' else 'libmxlite.so'
# Loaded on first use, so that `import mxlite.ctypes_predict` works where the
# compiled extension is absent.
_LAZY = {'Predictor': ('.predictor', 'Predictor'), 'nd': ('.nd', None),
         'ctypes_predict': ('.ctypes_predict', None), 'random': ('.random', None),
         'context': ('.context', None), 'ndarray': ('.ndarray', None),
         'cpu': ('.context', 'cpu'), 'gpu': ('.context', 'gpu'),
         'Context': ('.context', 'Context'), 'model': ('.model', None),
         'symbol': ('.symbol', None), 'sym': ('.symbol', None),
         'runtime_options': ('.predictor', 'runtime_options')}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name, __name__)
    value = getattr(module, attribute) if attribute else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def lib_path() -> str:
    """Path of the shared library (the C predict API) bundled with this package.

    The environment variable MXLITE_LIBRARY overrides it (for a library built
    elsewhere, e.g. with `make lib`). A library file that does not exist
    raises MXLiteFileNotFoundError.
    """
    override = os.environ.get('MXLITE_LIBRARY')
    if override:
        path = os.path.abspath(override)
        if not os.path.exists(path):
            raise MXLiteFileNotFoundError(f'MXLITE_LIBRARY names {path}, which does not exist')
        return path
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIB_NAME)
    if not os.path.exists(path):
        raise MXLiteFileNotFoundError(
            f'{path} is missing: install mxlite with `pip install .` so that the '
            'library is built, or set MXLITE_LIBRARY')
    return path
