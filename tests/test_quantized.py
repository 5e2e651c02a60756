"""MXNet's int8 (MKLDNN-quantized) graphs: malformed ones are refused at load with
a message naming the node and the problem. (Their outputs are checked against
MXNet by test_ops.py on the q8_* fixtures, which scripts/fixtures/quantized_cases.py
makes with MXNet's own quantization pass.)"""
import json

import numpy as np
import pytest

from capi import CAPIError
from conftest import FIXTURES, assert_close, load_cases

CASES = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}
SUM_CASE = 'q8_conv_bn_sum_pool_int8in'


def graph():
    return json.loads(CASES[SUM_CASE].symbol_json)


def node_named(g, prefix):
    return next(n for n in g['nodes'] if n['name'].startswith(prefix))


def load_error(api, g):
    case = CASES[SUM_CASE]
    with pytest.raises(CAPIError) as error:
        api.create(json.dumps(g), case.params, {'data': tuple(case.meta['inputs']['data'])})
    return str(error.value)


def test_q8_fixtures_present():
    names = [n for n in CASES if n.startswith('q8_')]
    assert len(names) >= 3, names
    used = set()
    for name in names:
        used.update(CASES[name].meta['ops'])
    assert {'_contrib_quantize_v2', '_sg_mkldnn_conv', '_contrib_quantized_pooling',
            '_contrib_dequantize'} <= used


def test_unchanged_graph_loads_and_matches(api):
    case = CASES[SUM_CASE]
    inputs, expected = case.io()
    outputs = api.predict(case.symbol_json, case.params, inputs, num_outputs=len(expected))
    for ours, theirs in zip(outputs, expected):
        assert_close(ours, theirs, case.rtol, case.name)


def test_conv_without_subgraph(api):
    g = graph()
    del node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['subgraphs']
    message = load_error(api, g)
    assert '_sg_mkldnn_conv' in message and '"subgraphs"' in message, message


def test_conv_with_two_subgraphs(api):
    g = graph()
    node = node_named(g, 'quantized_sg_mkldnn_conv_bn_act')
    node['subgraphs'] = node['subgraphs'] * 2
    message = load_error(api, g)
    assert 'exactly one' in message, message


def test_subgraph_disagrees_with_flags(api):
    g = graph()
    del node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['attrs']['with_bn']
    message = load_error(api, g)
    assert 'Convolution, BatchNorm, Activation' in message and 'call for' in message, message


def test_subgraph_activation_other_than_relu(api):
    g = graph()
    sub = node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['subgraphs'][0]
    next(n for n in sub['nodes'] if n['op'] == 'Activation')['attrs']['act_type'] = 'tanh'
    message = load_error(api, g)
    assert 'tanh' in message and 'relu only' in message, message


def test_subgraph_bad_inner_attribute(api):
    g = graph()
    sub = node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['subgraphs'][0]
    next(n for n in sub['nodes'] if n['op'] == 'Convolution')['attrs']['num_filter'] = '0'
    message = load_error(api, g)
    assert 'subgraph' in message and 'num_filter' in message, message


def test_subgraph_inputs_out_of_order(api):
    g = graph()
    sub = node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['subgraphs'][0]
    conv = next(n for n in sub['nodes'] if n['op'] == 'Convolution')
    conv['inputs'].append([len(sub['nodes']), 0, 0])  # a node that does not come before it
    message = load_error(api, g)
    assert 'does not come before it' in message, message


def test_float_conv_not_supported(api):
    g = graph()
    node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['attrs']['quantized'] = 'false'
    message = load_error(api, g)
    assert "'quantized'" in message and 'float' in message, message


def test_uncalibrated_conv_not_supported(api):
    g = graph()
    del node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['attrs']['min_calib_range']
    message = load_error(api, g)
    assert 'min_calib_range' in message and 'calibrated' in message, message


def test_float_data_into_quantized_conv(api):
    g = graph()
    node = node_named(g, 'quantized_sg_mkldnn_conv_bn_act')
    data = next(i for i, n in enumerate(g['nodes']) if n['name'] == 'data')
    node['inputs'][0] = [data, 0, 0]
    message = load_error(api, g)
    assert 'float32' in message and 'int8 or uint8' in message, message


def test_subgraph_on_other_operator(api):
    g = graph()
    g['nodes'][-1]['subgraphs'] = node_named(g, 'quantized_sg_mkldnn_conv_bn_act')['subgraphs']
    message = load_error(api, g)
    assert 'subgraphs' in message and 'not supported' in message, message


def test_quantized_pooling_sum_refused(api):
    g = graph()
    node = next(n for n in g['nodes'] if n['op'] == '_contrib_quantized_pooling')
    node['attrs']['pool_type'] = 'sum'
    message = load_error(api, g)
    assert 'pool_type' in message and 'max and avg' in message, message


def test_dequantize_of_float_data(api):
    g = graph()
    node = next(n for n in g['nodes'] if n['op'] == '_contrib_dequantize')
    data = next(i for i, n in enumerate(g['nodes']) if n['name'] == 'data')
    node['inputs'][0] = [data, 0, 0]
    message = load_error(api, g)
    assert '_contrib_dequantize' in message and 'int8 or uint8' in message, message


def test_quantize_v2_codes_pass_through(api):
    """quantize_v2 on codes already int8 passes them through (MXNet's identity)."""
    case = CASES[SUM_CASE]
    g = graph()
    quantize = next(n for n in g['nodes'] if n['op'] == '_contrib_quantize_v2')
    quantize['attrs'] = {'out_type': 'int8'}
    g['heads'] = [[g['nodes'].index(quantize), 0, 0]]
    codes = np.array([[-128, -1, 0, 5, 127]], dtype=np.int8)
    handle = api.create(json.dumps(g), case.params, {'data': codes.shape}, dtypes={'data': 5})
    try:
        api.set_input(handle, 'data', codes)
        api.forward(handle)
        out = api.output(handle, 0)
    finally:
        api.free(handle)
    assert out.dtype == np.int8 and np.array_equal(out, codes)
