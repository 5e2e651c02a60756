"""A fused 1x1 convolution whose output takes over its residual's buffer.

For the CPU the graph optimizer marks a 1x1 convolution chain with a
residual add `residual_in_place` (predict/graph/fuse.cc), and the memory
plan may then give the output the residual's buffer. The AVX-512 GEMM reads
each residual element before it writes the output there when the weights
are one depth block (up to kGemmInPlaceBlockDepth = 1024 channels); deeper
layers, and the AVX2 and portable kernels with their blocks of 256, get a
copy of the residual first (convolution.cc). Every case must give
relu(BatchNorm(conv(x)) + x) (then a sigmoid: a graph output keeps a buffer
of its own) as numpy computes it; test_isa_paths.py runs this file again on
the AVX2 and portable kernels.
"""
import json

import numpy as np
import pytest

import ndfile
from conftest import assert_close

MAP = (7, 7)
EPS = 1e-3


def residual_block(channels, residual='side'):
    """Symbol JSON for sigmoid(relu(bn(conv1x1(pre)) + r)), pre = relu(data) and
    r = tanh(data) ('side'), or r = pre ('pre': the convolution's own input,
    which the output must not overwrite)."""
    nodes = [
        ('null', 'data', {}, []),
        ('Activation', 'pre', {'act_type': 'relu'}, [0]),
        ('null', 'conv_weight', {}, []),
        ('null', 'conv_bias', {}, []),
        ('Convolution', 'conv', {'kernel': '(1, 1)', 'num_filter': str(channels)}, [1, 2, 3]),
        ('null', 'bn_gamma', {}, []),
        ('null', 'bn_beta', {}, []),
        ('null', 'bn_moving_mean', {}, []),
        ('null', 'bn_moving_var', {}, []),
        ('BatchNorm', 'bn', {'eps': str(EPS), 'fix_gamma': 'False'}, [4, 5, 6, 7, 8]),
        ('Activation', 'side', {'act_type': 'tanh'}, [0]),
        ('elemwise_add', 'add', {}, [9, 10 if residual == 'side' else 1]),
        ('Activation', 'out', {'act_type': 'relu'}, [11]),
        # A reader after the block: a graph output keeps a buffer of its own.
        ('Activation', 'head', {'act_type': 'sigmoid'}, [12]),
    ]
    graph = {
        'nodes': [{'op': op, 'name': name, 'attrs': attrs, 'inputs': [[i, 0, 0] for i in inputs]}
                  for op, name, attrs, inputs in nodes],
        'arg_nodes': [i for i, node in enumerate(nodes) if node[0] == 'null'],
        'heads': [[len(nodes) - 1, 0, 0]],
        'attrs': {'mxnet_version': ['int', 10901]},
    }
    return json.dumps(graph)


def parameters(channels, rng):
    weight = rng.normal(0, 1 / np.sqrt(channels), (channels, channels, 1, 1))
    params = {
        'arg:conv_weight': weight,
        'arg:conv_bias': rng.normal(0, 0.1, channels),
        'arg:bn_gamma': rng.uniform(0.5, 1.5, channels),
        'arg:bn_beta': rng.normal(0, 0.1, channels),
        'aux:bn_moving_mean': rng.normal(0, 0.1, channels),
        'aux:bn_moving_var': rng.uniform(0.5, 1.5, channels),
    }
    return {name: value.astype(np.float32) for name, value in params.items()}


def expected_output(x, params, residual='side'):
    """The block in float64, from its definition."""
    p = {name.split(':', 1)[1]: value.astype(np.float64) for name, value in params.items()}
    pre = np.maximum(x.astype(np.float64), 0)
    other = np.tanh(x.astype(np.float64)) if residual == 'side' else pre
    channels = pre.shape[1]
    conv = np.einsum('fc,nchw->nfhw', p['conv_weight'].reshape(channels, channels), pre)
    conv += p['conv_bias'][None, :, None, None]
    scale = p['bn_gamma'] / np.sqrt(p['bn_moving_var'] + EPS)
    bn = (conv - p['bn_moving_mean'][None, :, None, None]) * scale[None, :, None, None]
    bn += p['bn_beta'][None, :, None, None]
    return 1 / (1 + np.exp(-np.maximum(bn + other, 0)))


# 16 and 300 channels: one depth block on AVX-512 (in place); 300 is two
# blocks of 150 on AVX2 and the portable kernels, and 1040 two blocks
# everywhere (a copy of the residual first).
# The residual read as the convolution's own input too ('pre') stays apart.
@pytest.mark.parametrize('channels', [16, 300, 1040])
@pytest.mark.parametrize('batch', [1, 2])
@pytest.mark.parametrize('residual', ['side', 'pre'])
def test_block_matches_numpy(api, channels, batch, residual):
    rng = np.random.default_rng(channels + batch)
    params = parameters(channels, rng)
    x = rng.normal(0, 1, (batch, channels) + MAP).astype(np.float32)
    (ours,) = api.predict(residual_block(channels, residual), ndfile.save(params), {'data': x})
    assert_close(ours, expected_output(x, params, residual), 1e-4,
                 f'{channels} channels, batch {batch}, residual {residual}')


def test_plan_puts_the_output_over_the_residual():
    """Fused, the graph holds pre, side, the convolution and the sigmoid after
    it. The convolution takes side's buffer, and the sigmoid the
    convolution's: two buffers in place, where without the pair side would
    keep a third."""
    from mxlite._core import memory_report

    channels = 16
    entry = channels * MAP[0] * MAP[1] * 4  # a multiple of the 64-byte alignment
    report = memory_report(residual_block(channels), {'data': (1, channels) + MAP}, fuse=True)
    assert report['inplace_bytes'] == 2 * entry, report
