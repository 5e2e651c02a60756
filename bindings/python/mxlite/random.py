"""mxlite.random (also mxlite.nd.random): random arrays, shaped like mxnet.random.

The numbers come from mxlite's own counter-based generator: element i of the
n-th draw after seed(s) is a hash of (s, n, i). Results are reproducible for
a seed, whatever the threads, but they are NOT the numbers MXNet's generator
gives for the same seed.
"""
import threading

from .errors import MXLiteError

__all__ = ['seed', 'uniform', 'normal', 'randn']

_state = {'seed': 0, 'stream': 0}
_lock = threading.Lock()


def seed(seed_state, ctx='all'):
    """Restarts the generator from `seed_state` (an int); ctx is accepted for MXNet's sake."""
    del ctx
    if not isinstance(seed_state, int):
        raise MXLiteError(f'seed must be an int, got {type(seed_state).__name__}')
    with _lock:
        _state['seed'] = seed_state & 0xFFFFFFFFFFFFFFFF
        _state['stream'] = 0


def _next_stream():
    with _lock:
        stream = _state['stream']
        _state['stream'] += 1
        return _state['seed'], stream


def _draw(kind, a, b, shape, dtype, ctx, out):
    from . import ndarray
    if out is None:
        out = ndarray.empty(_shape_of(shape), ctx=ctx, dtype=dtype or 'float32')
    seed_value, stream = _next_stream()
    ndarray._core.nd_random(out._handle, kind, float(a), float(b), seed_value, stream)
    return out


def _shape_of(shape):
    if shape is None or shape == ():
        return (1,)
    return (shape,) if isinstance(shape, int) else tuple(shape)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples in [low, high) (MXNet's mx.nd.random.uniform)."""
    del kwargs
    return _draw('uniform', low, high, shape, dtype, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale^2) (MXNet's mx.nd.random.normal)."""
    del kwargs
    return _draw('normal', loc, scale, shape, dtype, ctx, out)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, **kwargs):
    """normal() with the shape given as arguments."""
    del kwargs
    return normal(loc, scale, shape or None, dtype, ctx)
