"""mxlite.Context: where an NDArray lives, shaped like mxnet.Context.

mx.cpu(i) names CPU "device" i, as in MXNet (all share the same memory).
mx.gpu(i) names CUDA device i for predictors (Predictor(..., ctx=mx.gpu(i)))
in a package built with the CUDA backend (MXLITE_CUDA=1 pip install .,
docs/cuda.md); mx.nd arrays stay in host memory, so asking for one on a GPU
is an error. A package built by a plain C++ compiler has no GPU backend:
mx.gpu(i) raises MXLiteError, so tutorial code fails at the line that asks
for one.
"""
import threading

from .errors import MXLiteError

__all__ = ['Context', 'cpu', 'gpu', 'current_context', 'num_gpus']


class Context:
    """A device: Context('cpu', 0) or Context(other_context)."""

    devtype2str = {1: 'cpu', 2: 'gpu', 3: 'cpu_pinned', 5: 'cpu_shared'}
    devstr2type = {name: code for code, name in devtype2str.items()}
    _default = threading.local()

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise MXLiteError(f'unknown device type {device_type!r}; mxlite has cpu only')
        if device_type == 'gpu' and _gpu_count() < 0:
            raise MXLiteError(f'gpu({device_id}) is not available: mxlite is built without a GPU '
                              'backend (build it with MXLITE_CUDA=1 pip install ., see '
                              'docs/cuda.md); use mx.cpu()')
        self.device_type = device_type
        self.device_id = int(device_id)
        self._previous = None

    @property
    def device_typeid(self):
        """MXNet's device type number: 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared."""
        return self.devstr2type[self.device_type]

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __str__(self):
        return f'{self.device_type}({self.device_id})'

    __repr__ = __str__

    def __enter__(self):
        self._previous = current_context()
        Context._default.value = self
        return self

    def __exit__(self, *exc_info):
        Context._default.value = self._previous

    def empty_cache(self):
        """Nothing to release: arrays free their memory when dropped."""


def cpu(device_id=0):
    """The CPU context (MXNet's mx.cpu)."""
    return Context('cpu', device_id)


def gpu(device_id=0):
    """CUDA device `device_id`, for predictors; MXLiteError in a build
    without the CUDA backend."""
    return Context('gpu', device_id)


def _gpu_count():
    """CUDA devices the compiled core can use; -1 without a CUDA backend
    (or without the compiled core)."""
    try:
        from ._native import core
    except ImportError:
        return -1
    return core.gpu_count()


def num_gpus():
    """The CUDA devices predictors can use (0 in a build without the CUDA
    backend, or where CUDA finds none)."""
    return max(0, _gpu_count())


def current_context():
    """The context arrays are made on when none is given (cpu(0), or a `with` block's)."""
    return getattr(Context._default, 'value', None) or Context('cpu', 0)
