"""Every operator configuration against MXNet 1.9.1 (tests/fixtures/ops), with
inputs, parameters and outputs in MXNet's dtypes; every alias MXNet accepts;
and the load-time errors for unknown operators, bad attributes and
unsupported dtypes."""
import json
import os
import re

import numpy as np
import pytest

from capi import CAPIError
from conftest import FIXTURES, ROOT, assert_close, load_cases

CASES = load_cases(f'{FIXTURES}/ops')
BY_NAME = {case.name: case for case in CASES}


def test_fixtures_present():
    assert len(CASES) >= 300, 'tests/fixtures/ops is missing or incomplete'


DTYPE_FLAGS = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
               'int64': 6}


def run_case(api, case, symbol_json=None):
    """Outputs for a fixture's inputs; typed inputs go through MXPredCreateEx
    and are set in their own dtype, as MXNet's predict API reads them."""
    inputs, expected = case.io()
    symbol_json = symbol_json or case.symbol_json
    input_dtypes = case.meta.get('input_dtypes')
    if not input_dtypes:
        return api.predict(symbol_json, case.params, inputs, num_outputs=len(expected)), expected
    handle = api.create(symbol_json, case.params, {k: v.shape for k, v in inputs.items()},
                        dtypes={k: DTYPE_FLAGS[v] for k, v in input_dtypes.items()})
    try:
        for name, value in inputs.items():
            assert str(value.dtype) == input_dtypes[name]
            api.set_input(handle, name, value)
        api.forward(handle)
        return [api.output(handle, i) for i in range(len(expected))], expected
    finally:
        api.free(handle)


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_op_matches_mxnet(api, case):
    outputs, expected = run_case(api, case)
    for index, (ours, theirs) in enumerate(zip(outputs, expected)):
        # MXPredGetOutputType gives MXNet's output dtype, and the data come
        # out in it.
        assert str(ours.dtype) == case.meta['output_dtypes'][index], f'{case.name} output {index}'
        assert_close(ours, theirs, case.rtol, f'{case.name} output {index}')


def test_typed_cases_present():
    typed = [c.name for c in CASES if c.meta.get('input_dtypes') or
             any(d != 'float32' for d in c.meta['output_dtypes'])]
    assert len(typed) >= 8, typed


def test_unsupported_dtype_names_node_and_dtype(api):
    # Convolution computes on floats only: int32 data is refused at load.
    case = BY_NAME['conv_3x3_pad1']
    with pytest.raises(CAPIError) as error:
        api.create(case.symbol_json, case.params, {'data': (2, 3, 13, 13)}, dtypes={'data': 4})
    message = str(error.value)
    assert "'conv0' (Convolution)" in message and 'int32' in message, message


# ---------------------------------------------------------------------------
# Aliases: MXNet registers an alias as the same operator, so a file naming
# the alias must give exactly what the canonical name gives. Each alias in
# the registry is checked on a fixture whose graph uses its canonical name.

def registry_aliases():
    with open(os.path.join(ROOT, 'predict', 'operators', 'op_list.inc'), encoding='utf-8') as f:
        return re.findall(r'MXL_OPERATOR_ALIAS\("([^"]+)", "([^"]+)"\)', f.read())


ALIASES = registry_aliases()


def case_using(op):
    """The smallest fixture whose graph uses `op` (by its saved, canonical name)."""
    using = [c for c in CASES if op in c.meta['ops']]
    return min(using, key=lambda c: len(c.symbol_json)) if using else None


def test_aliases_listed():
    assert len(ALIASES) >= 60
    for alias in ('Softmax', 'ElementWiseSum', '_Plus', 'split', 'crop', 'sum_axis',
                  'broadcast_plus', '_PlusScalar', 'identity', 'flatten', 'concat', 'reshape',
                  'cast', 'pad', 'swapaxes', 'stop_gradient', 'flip'):
        assert alias in dict(ALIASES), alias


@pytest.mark.parametrize('alias,canonical', ALIASES, ids=[a for a, _ in ALIASES])
def test_alias_computes_like_its_operator(api, alias, canonical):
    case = case_using(canonical)
    assert case is not None, f'no fixture uses {canonical} (needed to test its alias {alias})'
    graph = json.loads(case.symbol_json)
    renamed = 0
    for node in graph['nodes']:
        if node['op'] == canonical:
            node['op'] = alias
            renamed += 1
    assert renamed
    outputs, expected = run_case(api, case, json.dumps(graph))
    for index, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert_close(ours, theirs, case.rtol, f'{alias} as {case.name} output {index}')


# ---------------------------------------------------------------------------
# Errors at load time: an unknown operator, an unknown attribute or a value
# outside what the operator takes fails MXPredCreate, naming the node, the
# operator and the attribute; nothing is left to fail at run time.

def one_node_graph(op, attrs, num_inputs=1):
    nodes = [{'op': 'null', 'name': 'data%d' % i, 'inputs': []} for i in range(num_inputs)]
    nodes.append({'op': op, 'name': 'the_node', 'attrs': attrs,
                  'inputs': [[i, 0, 0] for i in range(num_inputs)]})
    return json.dumps({'nodes': nodes, 'arg_nodes': list(range(num_inputs)),
                       'heads': [[num_inputs, 0, 0]], 'attrs': {'mxnet_version': ['int', 10901]}})


BAD_ATTRIBUTES = [
    ('Activation', {'act_type': 'swish'}, 'act_type', 'swish'),
    ('LeakyReLU', {'act_type': 'mish'}, 'act_type', 'mish'),
    ('LRN', {'nsize': '4'}, 'nsize', 'odd'),
    ('LRN', {}, 'nsize', 'required'),
    ('Reshape', {'shape': '(0, -5)'}, 'shape', '-5'),
    ('Pad', {'mode': 'constant', 'pad_width': '(1, 0, 0, 0, 1, 1, 1, 1)'}, 'pad_width', 'batch'),
    ('Pad', {'mode': 'wrap', 'pad_width': '(0, 0, 0, 0, 1, 1, 1, 1)'}, 'mode', 'wrap'),
    ('Cast', {'dtype': 'complex64'}, 'dtype', 'complex64'),
    ('topk', {'ret_typ': 'bogus'}, 'ret_typ', 'bogus'),
    ('norm', {'ord': '3'}, 'ord', '3'),
    ('Deconvolution', {'kernel': '(3, 3)', 'num_filter': '4', 'stride': '(2,)'}, 'stride', 'entries'),
    ('UpSampling', {'scale': '2', 'sample_type': 'cubic', 'num_args': '1'}, 'sample_type', 'cubic'),
    ('slice', {'begin': '(0, 1)', 'end': '(1,)'}, 'end', 'entries'),
    ('slice', {'begin': '(0,)', 'end': '(1,)', 'step': '(0,)'}, 'step', '0'),
    ('Embedding', {'input_dim': '0', 'output_dim': '3'}, 'input_dim', '0'),
    ('_plus_scalar', {'scalar': 'two'}, 'scalar', 'two'),
    ('sum', {'axis': '(0, x)'}, 'axis', 'tuple'),
    ('Crop', {'num_args': '3'}, 'num_args', '3'),
    ('take', {'mode': 'nearest'}, 'mode', 'nearest'),
    ('SliceChannel', {'num_outputs': '0'}, 'num_outputs', '0'),
    ('Convolution', {'kernel': '(3, 3)', 'num_filter': '4', 'colour': 'red'}, 'colour', 'unknown'),
    ('exp', {'scalar': '2'}, 'scalar', 'unknown'),
    ('_contrib_AdaptiveAvgPooling2D', {'output_size': '(2, 3, 4)'}, 'output_size', 'positive'),
    ('_contrib_AdaptiveAvgPooling2D', {'output_size': '(0,)'}, 'output_size', '(0)'),
    ('_contrib_BilinearResize2D', {'mode': 'bicubic'}, 'mode', 'bicubic'),
    ('_contrib_BilinearResize2D', {'mode': 'odd_scale'}, 'scale_height', 'required'),
    ('_contrib_BilinearResize2D', {'scale_height': '2'}, 'scale_width', 'required'),
    ('_contrib_BilinearResize2D', {'height': '0'}, 'height', '0'),
    ('_arange', {'start': '0', 'stop': '5', 'step': '0'}, 'step', '0'),
    ('_arange', {'start': '5', 'stop': '1'}, 'stop', '1'),
    ('_arange', {'start': '0', 'stop': '4', 'repeat': '0'}, 'repeat', '0'),
    ('_arange', {'stop': '4'}, 'start', 'required'),
    ('_full', {'shape': '(2, 3)'}, 'value', 'required'),
    ('_zeros', {'shape': '(2, -1)'}, 'shape', 'negative'),
    ('_ones', {'shape': '(2,)', 'dtype': 'complex64'}, 'dtype', 'complex64'),
    ('_contrib_arange_like', {'repeat': '0'}, 'repeat', '0'),
    ('shape_array', {'axis': '1'}, 'axis', 'unknown'),
    ('_contrib_box_nms', {'in_format': 'xywh'}, 'in_format', 'xywh'),
    ('_contrib_box_nms', {'coord_start': '-1'}, 'coord_start', '-1'),
    ('_contrib_box_nms', {'score_index': '3'}, 'score_index', 'coordinates'),
    ('_contrib_box_nms', {'id_index': '1'}, 'id_index', 'score_index'),
    ('_contrib_box_nms', {'topk': 'all'}, 'topk', 'all'),
    ('_contrib_box_decode', {'format': 'xyxy'}, 'format', 'xyxy'),
    ('_contrib_box_decode', {'std0': 'x'}, 'std0', 'x'),
]


@pytest.mark.parametrize('op,attrs,attribute,detail', BAD_ATTRIBUTES,
                         ids=['%s-%s' % (b[0], b[2]) for b in BAD_ATTRIBUTES])
def test_bad_attribute_fails_at_load(api, op, attrs, attribute, detail):
    with pytest.raises(CAPIError) as error:
        api.create(one_node_graph(op, attrs), b'', {'data0': (2, 3, 4, 5)})
    message = str(error.value)
    for part in ("node 'the_node'", op, "'%s'" % attribute, detail):
        assert part in message, f'{part!r} missing from: {message}'


def test_unknown_operator_fails_at_load(api):
    with pytest.raises(CAPIError) as error:
        api.create(one_node_graph('_contrib_FancyThing', {}), b'', {'data0': (2, 3)})
    assert "node 'the_node'" in str(error.value)
    assert "operator '_contrib_FancyThing' is not supported" in str(error.value)


def test_shape_error_names_node_and_input(api):
    graph = one_node_graph('dot', {}, num_inputs=2)
    with pytest.raises(CAPIError) as error:
        api.create(graph, b'', {'data0': (2, 3), 'data1': (4, 5)})
    message = str(error.value)
    assert "'the_node' (dot)" in message and '(2,3)' in message and '(4,5)' in message


BOX_SHAPE_ERRORS = [
    ({'id_index': '0'}, (2, 4, 5), 'id_index'),
    ({'coord_start': '3'}, (2, 4, 6), 'coord_start'),
    ({'score_index': '7'}, (2, 4, 6), 'score_index'),
    ({}, (7,), 'num_boxes, box_width'),
]


@pytest.mark.parametrize('attrs,shape,detail', BOX_SHAPE_ERRORS,
                         ids=[d for _, _, d in BOX_SHAPE_ERRORS])
def test_box_nms_shape_errors_name_the_attribute(api, attrs, shape, detail):
    # Attributes valid alone that the boxes' width cannot hold fail at load.
    with pytest.raises(CAPIError) as error:
        api.create(one_node_graph('_contrib_box_nms', attrs), b'', {'data0': shape})
    message = str(error.value)
    assert "'the_node'" in message and detail in message, message


def test_box_decode_needs_an_anchor_per_box(api):
    graph = one_node_graph('_contrib_box_decode', {}, num_inputs=2)
    with pytest.raises(CAPIError) as error:
        api.create(graph, b'', {'data0': (2, 5, 4), 'data1': (1, 4, 4)})
    assert "'the_node'" in str(error.value) and 'fewer anchors' in str(error.value)


def test_box_encode_refuses_a_match_out_of_range(api):
    graph = one_node_graph('_contrib_box_encode', {}, num_inputs=6)
    shapes = {'data0': (1, 2), 'data1': (1, 2), 'data2': (1, 2, 4), 'data3': (1, 3, 4),
              'data4': (4,), 'data5': (4,)}
    handle = api.create(graph, b'', shapes)
    try:
        box = np.array([[[0, 0, 1, 1], [0, 0, 2, 2]]], np.float32)
        values = {'data0': np.array([[1, 1]], np.float32), 'data1': np.array([[0, 3]], np.float32),
                  'data2': box, 'data3': np.ones((1, 3, 4), np.float32),
                  'data4': np.zeros(4, np.float32), 'data5': np.ones(4, np.float32)}
        for name, value in values.items():
            api.set_input(handle, name, value)
        with pytest.raises(CAPIError, match="node 'the_node'.*'matches' holds 3"):
            api.forward(handle)
    finally:
        api.free(handle)


def test_index_out_of_range_in_raise_mode_is_an_error(api):
    graph = one_node_graph('take', {'mode': 'raise'}, num_inputs=2)
    handle = api.create(graph, b'', {'data0': (4, 3), 'data1': (2,)})
    try:
        api.set_input(handle, 'data0', np.zeros((4, 3), np.float32))
        api.set_input(handle, 'data1', np.array([1, 7], np.float32))
        with pytest.raises(CAPIError, match="node 'the_node'.*index 7 is out of range"):
            api.forward(handle)
    finally:
        api.free(handle)


def test_legacy_argmax_axis_minus_one_case_present():
    # Files before MXNet 0.9.5 wrote axis=-1 for "no axis"; the fixture is
    # such a file and MXNet's own upgrade gives the flattened argmax.
    case = BY_NAME['legacy_argmax_0904']
    assert '"-1"' in case.symbol_json and '904' in case.symbol_json


FOLDED_INPUT_NORM = ['bn_relu_conv1x1_folded', 'bn_conv1x1_no_bias_folded']


@pytest.mark.parametrize('name', FOLDED_INPUT_NORM)
def test_input_batchnorm_folded_into_1x1_convolution(api, name, monkeypatch, capfd):
    """The optimiser folds a pre-activation BatchNorm (and its relu) into the
    1x1 convolution that alone reads it: the profile shows one convolution
    and no BatchNorm left, the result matches MXNet (test_op_matches_mxnet),
    and where nothing else is folded (no BatchNorm after the convolution) it
    equals the unfused graph's bit for bit, on one thread and on two: the
    convolution normalises with the BatchNorm operator's own arithmetic."""
    case = next(c for c in CASES if c.name == name)
    monkeypatch.setenv('MXLITE_GRAPH_OPT', '1')  # test_isa_paths runs this with it off
    monkeypatch.setenv('MXLITE_PROFILE', '2')
    capfd.readouterr()
    outputs, expected = run_case(api, case)
    profile = capfd.readouterr().err
    nodes = [line for line in profile.splitlines() if re.match(r'\s+\d+ ', line)]
    assert len(nodes) == 1 and '_FusedConvolution 1x1 gemm' in nodes[0], profile
    assert_close(outputs[0], expected[0], case.rtol, name)
    monkeypatch.delenv('MXLITE_PROFILE')
    if name != 'bn_conv1x1_no_bias_folded':
        return
    results = {}
    for graph_opt in ('0', '1'):
        for threads in ('1', '2'):
            monkeypatch.setenv('MXLITE_GRAPH_OPT', graph_opt)
            monkeypatch.setenv('MXLITE_NUM_THREADS', threads)
            results[graph_opt, threads] = run_case(api, case)[0][0]
    for key, value in results.items():
        assert np.array_equal(value, results['0', '1']), key
