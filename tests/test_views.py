"""View operators (Reshape, expand_dims, squeeze, reshape_like, _copy) move
bytes: values of any dtype pass through exactly, and a view whose input and
output element counts differ is refused at bind time rather than copied.

The second rule came from the fuzz campaign (docs/security.md): a Reshape
with no shape attribute takes its output shape from a consumer, which could
make it larger than its input, and the copy then read past the input.
"""
import json

import numpy as np
import pytest

from capi import CAPIError
from test_ops import DTYPE_FLAGS


def graph(nodes, heads, arg_nodes):
    return json.dumps({'nodes': nodes, 'arg_nodes': arg_nodes, 'heads': heads,
                       'node_row_ptr': list(range(len(nodes) + 1)),
                       'attrs': {'mxnet_version': ['int', 10901]}})


VIEWS = [
    ('Reshape', {'shape': '(-1,)'}, lambda x: x.reshape(-1)),
    ('Reshape', {'shape': '(3, 0)'}, lambda x: x.reshape(3, 2)),
    ('expand_dims', {'axis': '1'}, lambda x: x[:, None]),
    ('_copy', {}, lambda x: x),
]


@pytest.mark.parametrize('dtype', ['int64', 'float64', 'int32', 'uint8'])
@pytest.mark.parametrize('op, attrs, expect', VIEWS, ids=[f'{v[0]}{v[1]}' for v in VIEWS])
def test_views_keep_every_value_of_their_dtype(api, dtype, op, attrs, expect):
    """int64 values past 2^24 and float64 ones past float32's precision come
    out as they went in (before, views ran on float32 copies and rounded them)."""
    symbol = graph([{'op': 'null', 'name': 'data', 'inputs': []},
                    {'op': op, 'name': 'view', 'attrs': attrs, 'inputs': [[0, 0, 0]]}],
                   [[1, 0, 0]], [0])
    values = {'int64': np.array([[1000000007, -3], [2**40 + 1, 7], [5, -2**50 - 3]], np.int64),
              'float64': np.array([[1 + 2**-40, 0.1], [1e300, -2.5], [3.0, 1 / 3]]),
              'int32': np.array([[16777217, -1], [2**31 - 1, 3], [4, -2**31]], np.int32),
              'uint8': np.array([[0, 255], [1, 128], [7, 9]], np.uint8)}[dtype]
    handle = api.create(symbol, b'', {'data': values.shape}, dtypes={'data': DTYPE_FLAGS[dtype]})
    try:
        api.set_input(handle, 'data', values)
        api.forward(handle)
        out = api.output(handle, 0)
    finally:
        api.free(handle)
    want = expect(values)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)


def test_a_view_that_changes_the_element_count_is_refused(api):
    """Reshape without a shape, its output (8,) dictated by elemwise_add's
    other input, on a (2, 3) input: refused at create with both counts."""
    symbol = graph([{'op': 'null', 'name': 'data', 'inputs': []},
                    {'op': 'Reshape', 'name': 'free_view', 'inputs': [[0, 0, 0]]},
                    {'op': 'null', 'name': 'other', 'inputs': []},
                    {'op': 'elemwise_add', 'name': 'sum', 'inputs': [[1, 0, 0], [2, 0, 0]]}],
                   [[3, 0, 0]], [0, 2])
    with pytest.raises(CAPIError, match=r"free_view.*input 'data' has shape \(2,3\) \(6 "
                                        r"elements\) but the output has shape \(8,\) \(8 "
                                        r"elements\): a view keeps the element count"):
        api.create(symbol, b'', {'data': (2, 3), 'other': (8,)})
