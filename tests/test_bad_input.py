"""Bad input gets -1 and a message naming the problem; the process goes on.

Every case here runs in the pytest process itself: a crash or abort in the
library would end the whole run.
"""
import json

import numpy as np
import pytest

import ndfile
from capi import CAPIError
from conftest import FIXTURES, load_cases

CASE = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}['composite_net']
SHAPE = (2, 3, 13, 13)




@pytest.fixture
def weights(api):
    return dict(api.nd_list(CASE.params))


def create(api, symbol=None, params=None, shapes=None):
    return api.create(symbol if symbol is not None else CASE.symbol_json,
                      params if params is not None else CASE.params,
                      shapes if shapes is not None else {'data': SHAPE})


def edit_symbol(edit):
    graph = json.loads(CASE.symbol_json)
    edit(graph)
    return json.dumps(graph)


def node(graph, name):
    return next(n for n in graph['nodes'] if n['name'] == name)


@pytest.mark.parametrize('cut', [10, 1000, len(CASE.params) // 2, len(CASE.params) - 3])
def test_truncated_params(api, cut):
    with pytest.raises(CAPIError, match='params: truncated'):
        create(api, params=CASE.params[:cut])


@pytest.mark.parametrize('cut', [24, 100])
def test_params_cut_before_their_arrays_say_truncated_with_sizes(api, cut):
    # The header's array count is intact, but too few bytes follow it to hold
    # that many arrays: the message said "invalid array count 40".
    data = ndfile.save({f'arg:w{i}': np.zeros(1, np.float32) for i in range(40)})
    with pytest.raises(CAPIError, match=f'params: truncated: the header lists 40 arrays, '
                                        f'.* but only {cut - 24} of the file.s {cut} bytes'):
        create(api, params=data[:cut])


def test_params_wrong_magic(api):
    with pytest.raises(CAPIError, match='params: not an MXNet NDArray file'):
        create(api, params=b'\x13' + CASE.params[1:])


def test_params_unknown_dtype_flag(api, weights):
    data = bytearray(ndfile.save({'arg:c1_weight': weights['arg:c1_weight']}))
    # The dtype flag is the i32 right before the data; the shape is 4-D here.
    offset = 24 + 4 + 4 + 4 + 4 * 8 + 8
    data[offset:offset + 4] = (99).to_bytes(4, 'little')
    with pytest.raises(CAPIError, match='unknown dtype flag 99'):
        create(api, params=bytes(data))


def test_malformed_json(api):
    text = CASE.symbol_json.replace('"nodes": [', '"nodes": [[', 1)
    with pytest.raises(CAPIError, match='malformed JSON at line'):
        create(api, symbol=text)


def test_truncated_json(api):
    text = CASE.symbol_json[: len(CASE.symbol_json) // 2]
    with pytest.raises(CAPIError, match='malformed JSON at line .*(unterminated string|unexpected end of input)'):
        create(api, symbol=text)


def test_json_that_is_not_a_graph(api):
    with pytest.raises(CAPIError, match='missing "nodes"'):
        create(api, symbol='{"heads": []}')
    with pytest.raises(CAPIError, match='must be an object'):
        create(api, symbol='[1, 2]')


def test_unknown_operator(api):
    text = edit_symbol(lambda g: node(g, 'c2').update(op='FancyConvolution'))
    with pytest.raises(CAPIError, match="node 'c2': operator 'FancyConvolution' is not supported"):
        create(api, symbol=text)


@pytest.mark.parametrize('op', ['_FusedConvolution', '_FusedBatchNorm'])
def test_internal_operators_are_refused_in_symbol_files(api, op):
    # mxlite's graph optimiser writes these; in a user's file they are
    # unknown operators, as MXNet 1.9.1 says of them.
    name = 'c2' if op == '_FusedConvolution' else 'b2'
    text = edit_symbol(lambda g: node(g, name).update(op=op))
    with pytest.raises(CAPIError, match=f"node '{name}': operator '{op}' is not supported"):
        create(api, symbol=text)


def softmax_symbol(temperature):
    return json.dumps({
        'nodes': [{'op': 'null', 'name': 'data', 'inputs': []},
                  {'op': 'softmax', 'name': 's', 'attrs': {'temperature': temperature},
                   'inputs': [[0, 0, 0]]}],
        'arg_nodes': [0], 'heads': [[1, 0, 0]], 'attrs': {'mxnet_version': ['int', 10901]}})


@pytest.mark.parametrize('temperature', ['nan', 'NaN', 'inf', '-inf', '1e999', '0x10'])
def test_softmax_temperature_that_mxnet_cannot_read_is_refused(api, temperature):
    # MXNet 1.9.1: "Invalid Parameter format for temperature expect double or None".
    with pytest.raises(CAPIError, match=f"node 's' \\(softmax\\): attribute 'temperature': "
                                        f"value '{temperature}' is not a finite"):
        api.create(softmax_symbol(temperature), b'', {'data': (1, 3)})


@pytest.mark.parametrize('temperature, expected', [
    # MXNet 1.9.1's outputs for [[1, 2, 3]]: it accepts these.
    ('-1', [0.66524094, 0.24472846, 0.09003057]),
    ('0', [np.nan] * 3),
    ('1e-50', [np.nan] * 3),
    ('1e40', [1 / 3] * 3),
    ('2', [0.18632373, 0.3071959, 0.5064804]),
    ('None', [0.09003057, 0.24472846, 0.66524094]),
])
def test_softmax_temperature_that_mxnet_reads(api, temperature, expected):
    [out] = api.predict(softmax_symbol(temperature), b'',
                        {'data': np.array([[1, 2, 3]], np.float32)})
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)


def test_unknown_attribute(api):
    text = edit_symbol(lambda g: node(g, 'c2')['attrs'].update(wiggle='3'))
    with pytest.raises(CAPIError, match=r"node 'c2' \(Convolution\): unknown attribute 'wiggle'"):
        create(api, symbol=text)


def test_bad_attribute_value(api):
    text = edit_symbol(lambda g: node(g, 'c2')['attrs'].update(kernel='(3, x)'))
    with pytest.raises(CAPIError, match=r"node 'c2' \(Convolution\): attribute 'kernel'"):
        create(api, symbol=text)


@pytest.mark.parametrize('edit, message', [
    (lambda a: a.pop('key'), "required attribute 'key' is missing"),
    (lambda a: a.update(axis='1'), "unknown attribute 'axis'"),
    (lambda a: a.update(cudnn_off='False'), "unknown attribute 'cudnn_off'"),
    (lambda a: a.update(ndev='two'), "attribute 'ndev'"),
    (lambda a: a.update(output_mean_var='True'), "attribute 'output_mean_var': is not supported"),
], ids=['no key', 'axis', 'cudnn_off', 'ndev', 'output_mean_var'])
def test_sync_batch_norm_attributes_mxnet_refuses(api, edit, message):
    # MXNet 1.9.1 requires key and has no axis or cudnn_off; at inference it leaves the mean
    # and var outputs unwritten.
    case = {c.name: c for c in load_cases(f'{FIXTURES}/ops')}['sync_bn_default_4d']
    graph = json.loads(case.symbol_json)
    edit(node(graph, 'sbn0')['attrs'])
    with pytest.raises(CAPIError, match=r"node 'sbn0' \(_contrib_SyncBatchNorm\): " + message):
        api.create(json.dumps(graph), case.params, {'data': (2, 5, 7, 13)})


def test_bad_enum_value(api):
    text = edit_symbol(lambda g: node(g, 'r1')['attrs'].update(act_type='swish'))
    with pytest.raises(CAPIError, match="attribute 'act_type': value 'swish' is not supported"):
        create(api, symbol=text)


def test_input_referring_forward_is_rejected(api):
    text = edit_symbol(lambda g: node(g, 'c1').update(inputs=[[20, 0, 0], [1, 0, 0], [2, 0, 0]]))
    with pytest.raises(CAPIError, match='does not come before it'):
        create(api, symbol=text)


def test_missing_parameter(api, weights):
    del weights['arg:c2_weight']
    with pytest.raises(CAPIError, match="parameter 'c2_weight'.*neither in the params file"):
        create(api, params=ndfile.save(weights))


def test_parameter_of_wrong_shape(api, weights):
    weights['arg:fc_bias'] = np.zeros(3, np.float32)
    with pytest.raises(CAPIError, match="fc_bias"):
        create(api, params=ndfile.save(weights))


def test_params_of_another_model_are_refused_saying_so(api, weights):
    # A Gluon save_parameters() file names parameters by their place in the
    # network: nothing matches, and the message says what the file holds.
    gluon = {f'features.{i}.weight': value for i, value in enumerate(weights.values())}
    with pytest.raises(CAPIError, match=r"params: the file provides none of the model's 14 "
                                        r"parameters \(first expected: 'c1_weight'\); it holds "
                                        r"'features.0.weight', 'features.1.weight', "
                                        r"'features.2.weight' and 11 more: was it saved for "
                                        r"another model, or by Gluon's save_parameters\(\)\?"):
        create(api, params=ndfile.save(gluon))


def test_unprefixed_params_are_accepted(api, weights):
    plain = {name.split(':', 1)[1]: value for name, value in weights.items()}
    inputs, expected = CASE.io()
    [out] = api.predict(CASE.symbol_json, ndfile.save(plain), inputs)
    np.testing.assert_allclose(out, expected[0], rtol=0, atol=1e-5 * np.abs(expected[0]).max())


def test_input_of_wrong_size(api):
    handle = create(api)
    try:
        with pytest.raises(CAPIError, match=r"input 'data' has shape \(2,3,13,13\) \(1014 elements\)"
                                            r" but 1013 elements were given"):
            api.set_input(handle, 'data', np.zeros(1013, np.float32))
    finally:
        api.free(handle)


def test_input_of_wrong_name(api):
    with pytest.raises(CAPIError, match="input 'image' is not an input of the graph"):
        create(api, shapes={'image': SHAPE})


def test_output_buffer_of_wrong_size(api):
    handle = create(api)
    try:
        out = np.zeros(3, np.float32)
        rc = api.lib.MXPredGetOutput(handle, 0, out.ctypes.data_as(__import__('ctypes').c_void_p), 3)
        assert rc == -1
        assert "output 0 ('prob_output') has shape (2,7) (14 elements) but size is 3" in api.last_error()
    finally:
        api.free(handle)


def test_shape_that_breaks_inference(api):
    # Four channels where the first convolution's weights expect three.
    with pytest.raises(CAPIError, match="parameter 'c1_weight' has shape"):
        create(api, shapes={'data': (2, 4, 13, 13)})
    # A 3x3 convolution without padding cannot take a 2x2 image (MXNet
    # 1.9.1 refuses it too).
    text = edit_symbol(lambda g: node(g, 'c1')['attrs'].update(pad='(0, 0)'))
    with pytest.raises(CAPIError, match=r"shape inference failed at node 'c1' \(Convolution\)"):
        create(api, symbol=text, shapes={'data': (2, 3, 2, 2)})


def test_missing_input_shape(api):
    with pytest.raises(CAPIError, match="shape of 'data'"):
        create(api, shapes={})


def test_zero_dimension_is_refused(api):
    with pytest.raises(CAPIError, match=r"input 'data': dimensions must be positive, got "
                                        r"\(2,0,13,13\) \(dimension 1 is 0\)"):
        create(api, shapes={'data': (2, 0, 13, 13)})


def test_library_still_works_after_errors(api):
    inputs, expected = CASE.io()
    [out] = api.predict(CASE.symbol_json, CASE.params, inputs)
    np.testing.assert_allclose(out, expected[0], rtol=0, atol=1e-5 * np.abs(expected[0]).max())


def test_absurd_input_shape_is_refused(api):
    with pytest.raises(CAPIError, match='too large'):
        create(api, shapes={'data': (4000000000, 3, 4000000, 13)})


@pytest.mark.parametrize('version, shown', [('1e300', r'1e\+300'), ('1e999', 'inf'),
                                            ('-1e999', '-inf'), ('10901.5', '10901.5')])
def test_mxnet_version_out_of_range_is_refused(api, version, shown):
    # Cast to int, such a value was undefined behaviour (UBSan's
    # float-cast-overflow) and the file then passed as a pre-0.9 one; MXNet
    # refuses it.
    text = CASE.symbol_json.replace('"attrs": {"mxnet_version": ["int", 10901]}',
                                    f'"attrs": {{"mxnet_version": ["int", {version}]}}')
    assert text != CASE.symbol_json
    with pytest.raises(CAPIError, match=f'mxnet_version must be a whole number .*, not {shown}$'):
        create(api, symbol=text)


def reshape_symbol(shape):
    return json.dumps({
        'nodes': [{'op': 'null', 'name': 'data', 'inputs': []},
                  {'op': 'Reshape', 'name': 'r', 'attrs': {'shape': shape}, 'inputs': [[0, 0, 0]]}],
        'arg_nodes': [0], 'heads': [[1, 0, 0]], 'attrs': {'mxnet_version': ['int', 10901]}})


@pytest.mark.parametrize('shape, message', [
    ('(4294967296, 4294967296, 4)', r'output shape \(4294967296,4294967296,4\) has too many '
                                    r'elements'),
    ('(-1, 4294967296, 4294967296)', 'the other dims have too many elements'),
    ('(-4, 4294967296, 4294967296)', '1 cannot be split into 4294967296 x 4294967296'),
])
def test_reshape_whose_element_count_overflows_is_refused(api, shape, message):
    # The product of these dims overflows int64 (undefined, and it wrapped to
    # a count of 0 before the check that then refused it with a wrong count).
    with pytest.raises(CAPIError, match=message):
        api.create(reshape_symbol(shape), b'', {'data': (1, 8)})
    assert api.predict(reshape_symbol('(4, 2)'), b'', {'data': np.ones((1, 8), np.float32)})[0].shape == (4, 2)
