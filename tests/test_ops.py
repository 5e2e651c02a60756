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
import ndfile

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


def check_with_options(api, name, options):
    """Fixture `name` through MXLitePredCreateWithOptions with `options`: MXNet's numbers."""
    case = BY_NAME[name]
    inputs, expected = case.io()
    [handle] = api.create_with_options(case.symbol_json, case.params,
                                       {k: v.shape for k, v in inputs.items()}, options)
    try:
        for key, value in inputs.items():
            api.set_input(handle, key, value)
        api.forward(handle)
        for index, theirs in enumerate(expected):
            assert_close(api.output(handle, index), theirs, case.rtol, f'{name} {options}')
    finally:
        api.free(handle)


PREPACKED_CASES = sorted(name for name in BY_NAME
                         if name.startswith(('deconv', 'upsampling_bilinear', 'deformable',
                                             'modulated_deformable')))


@pytest.mark.parametrize('options', [{'threads': '1'}, {'threads': '2', 'split_batch': '0'},
                                     {'threads': '2', 'split_batch': '0',
                                      'compact_weights': '1'}])
@pytest.mark.parametrize('name', PREPACKED_CASES)
def test_packed_weight_operators_at_each_thread_count(api, name, options):
    """Deconvolution (bilinear UpSampling among them: one group per channel) and the deformable
    convolutions pack constant weights once and split their work over the threads, whole
    groups per thread where there are several; under compact_weights they pack per call. Each
    way (two threads with the batch kept whole, so that one predictor uses both), MXNet's
    numbers."""
    check_with_options(api, name, options)


# Operators that split one tensor's rows, groups or runs over the threads
# (the fixtures larger than one elementwise task, with float32 inputs).
SPLIT_CASES = sorted(name for name in BY_NAME
                     if name.endswith(('_large', '_rows', '_planes', '_groups', '_h260'))
                     and set(BY_NAME[name].meta.get('input_dtypes', {}).values()) <= {'float32'})


@pytest.mark.parametrize('name', SPLIT_CASES)
def test_split_operators_with_the_batch_whole(api, name):
    """The fixtures run at batch 2, which a two-thread predictor splits into one image per
    thread, each operator on one thread. With the batch kept whole the operators themselves
    split their work (elementwise runs, softmax rows, normalisation groups, RNN gate blocks):
    MXNet's numbers that way too."""
    check_with_options(api, name, {'threads': '2', 'split_batch': '0'})


@pytest.mark.parametrize('threads', ['1', '2'])
@pytest.mark.parametrize('sizes', [(2, 1, 3), (16, 17000, 5), (40000, 7), (100,)])
def test_concat_copies_rows_of_any_length(api, sizes, threads):
    """Concat along an inner axis copies each input's row of every outer index: many short
    rows go to the threads grouped, a row past 64 KiB in several pieces. Exactly numpy's
    concatenation, at one and two threads."""
    rng = np.random.default_rng(len(sizes))
    count = len(sizes)
    nodes = [{'op': 'null', 'name': f'x{i}', 'inputs': []} for i in range(count)]
    nodes.append({'op': 'Concat', 'name': 'cat', 'attrs': {'dim': '1', 'num_args': str(count)},
                  'inputs': [[i, 0, 0] for i in range(count)]})
    symbol = json.dumps({'nodes': nodes, 'arg_nodes': list(range(count)),
                         'heads': [[count, 0, 0]], 'attrs': {'mxnet_version': ['int', 10901]}})
    inputs = {f'x{i}': rng.standard_normal((300 if size < 64 else 3, size)).astype(np.float32)
              for i, size in enumerate(sizes)}
    rows = {value.shape[0] for value in inputs.values()}
    if len(rows) > 1:  # one outer extent for all inputs
        inputs = {k: np.resize(v, (min(rows), v.shape[1])) for k, v in inputs.items()}
    [handle] = api.create_with_options(symbol, ndfile.save({}),
                                       {k: v.shape for k, v in inputs.items()},
                                       {'threads': threads, 'split_batch': '0'})
    try:
        for key, value in inputs.items():
            api.set_input(handle, key, value)
        api.forward(handle)
        want = np.concatenate([inputs[f'x{i}'] for i in range(count)], axis=1)
        np.testing.assert_array_equal(api.output(handle, 0), want)
    finally:
        api.free(handle)


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
    # The window attributes of every convolution and pooling: rank and minimum.
    ('Convolution', {'kernel': '(3, 3)', 'num_filter': '4', 'dilate': '(1, 1, 1)'}, 'dilate',
     '(1, 1, 1) has 3 entries but kernel (3, 3) has 2'),
    ('Convolution', {'kernel': '(3, 3)', 'num_filter': '4', 'stride': '(1, 0)'}, 'stride',
     '(1, 0): entries must be >= 1'),
    ('Deconvolution', {'kernel': '(2, 2)', 'num_filter': '4', 'adj': '(0, -1)'}, 'adj',
     '(0, -1): entries must be >= 0'),
    ('Pooling', {'kernel': '(2, 2)', 'pad': '(1,)'}, 'pad', '(1) has 1 entries but kernel (2, 2) has 2'),
    ('Pooling', {'kernel': '(2, 2)', 'pad': '(0, -1)'}, 'pad', '(0, -1): entries must be >= 0'),
    ('_contrib_DeformableConvolution', {'kernel': '(3, 3)', 'num_filter': '4', 'pad': '(1,)'},
     'pad', '(1) has 1 entries but the kernel has 2'),
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
    ('_contrib_ROIAlign', {'pooled_size': '(2,)', 'spatial_scale': '0.5'}, 'pooled_size', '(2)'),
    ('_contrib_ROIAlign', {'pooled_size': '(2, 0)', 'spatial_scale': '0.5'}, 'pooled_size',
     'positive'),
    ('_contrib_ROIAlign', {'pooled_size': '(2, 2)', 'spatial_scale': '2'}, 'spatial_scale', '2'),
    ('_contrib_ROIAlign', {'pooled_size': '(2, 2)'}, 'spatial_scale', 'required'),
    ('_contrib_interleaved_matmul_selfatt_qk', {}, 'heads', 'required'),
    ('_contrib_interleaved_matmul_encdec_valatt', {'heads': '0'}, 'heads', '0'),
    ('gather_nd', {'axis': '0'}, 'axis', 'unknown'),
    ('_contrib_MultiBoxPrior', {'steps': '(0.1, -1)'}, 'steps', 'both'),
    ('_contrib_MultiBoxPrior', {'offsets': '(0.5, 1.5)'}, 'offsets', '[0, 1]'),
    ('_contrib_MultiBoxPrior', {'sizes': '(0.1, x)'}, 'sizes', 'numbers'),
    ('_contrib_MultiBoxPrior', {'ratios': '()'}, 'ratios', 'at least one'),
    ('_contrib_MultiBoxDetection', {'variances': '(0.1, 0.2)'}, 'variances', '4'),
    ('_contrib_MultiBoxDetection', {'keep_topk': '5'}, 'keep_topk', 'unknown'),
    ('log_softmax', {'use_length': 'True'}, 'use_length', 'no length input'),
    ('RNN', {'state_size': '4', 'num_layers': '1'}, 'mode', 'required'),
    ('RNN', {'state_size': '4', 'num_layers': '0', 'mode': 'gru'}, 'num_layers', '0'),
    ('RNN', {'state_size': '4', 'num_layers': '1', 'mode': 'lstm', 'p': '1'}, 'p', '1'),
    ('RNN', {'state_size': '4', 'num_layers': '1', 'mode': 'gru', 'projection_size': '2'},
     'projection_size', 'only supported for LSTM'),
    ('RNN', {'state_size': '4', 'num_layers': '1', 'mode': 'lstm', 'projection_size': '5'},
     'projection_size', '5'),
    ('RNN', {'state_size': '4', 'num_layers': '1', 'mode': 'lstm', 'use_sequence_length': 'True'},
     'use_sequence_length', 'not supported by mxlite'),
    ('RNN', {'state_size': '4', 'num_layers': '1', 'mode': 'lstm', 'lstm_state_clip_min': '-1',
             'lstm_state_clip_max': '1'}, 'lstm_state_clip_min', 'not supported by mxlite'),
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


PROPOSAL_SHAPE_ERRORS = [
    ('_contrib_Proposal', {}, (2, 24, 3, 4), 'takes one image'),
    ('_contrib_MultiProposal', {'scales': '(8,)'}, (2, 24, 3, 4), 'needs 6 channels'),
]


@pytest.mark.parametrize('op,attrs,shape,detail', PROPOSAL_SHAPE_ERRORS,
                         ids=[op for op, _, _, _ in PROPOSAL_SHAPE_ERRORS])
def test_proposal_shape_errors(api, op, attrs, shape, detail):
    graph = one_node_graph(op, attrs, num_inputs=3)
    with pytest.raises(CAPIError) as error:
        api.create(graph, b'', {'data0': shape})
    message = str(error.value)
    assert "'the_node'" in message and detail in message, message


def test_proposal_needs_a_map_as_large_as_im_info(api):
    # MXNet checks that im_info / feature_stride fits the feature map (CHECK_GE).
    graph = one_node_graph('_contrib_Proposal', {'feature_stride': '8'}, num_inputs=3)
    handle = api.create(graph, b'', {'data0': (1, 24, 3, 4), 'data1': (1, 48, 3, 4),
                                     'data2': (1, 3)})
    try:
        api.set_input(handle, 'data0', np.zeros((1, 24, 3, 4), np.float32))
        api.set_input(handle, 'data1', np.zeros((1, 48, 3, 4), np.float32))
        api.set_input(handle, 'data2', np.array([[40, 32, 1]], np.float32))
        with pytest.raises(CAPIError, match="node 'the_node'.*at least 5 x 4"):
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


def run_one_node(api, op, attrs, values):
    """Outputs of a one-node graph on `values` (data0, data1, ...)."""
    graph = one_node_graph(op, attrs, num_inputs=len(values))
    handle = api.create(graph, b'', {'data%d' % i: v.shape for i, v in enumerate(values)})
    try:
        for i, value in enumerate(values):
            api.set_input(handle, 'data%d' % i, value)
        api.forward(handle)
        return api.output(handle, 0)
    finally:
        api.free(handle)


@pytest.mark.parametrize('index', [3, -4, 2.5, -3.5, float('nan')])
def test_gather_nd_index_out_of_range_is_an_error(api, index):
    # MXNet raises IndexError outside [-d, d - 1] (fractions included: 2.5
    # is past the last row of 3); NaN, which MXNet would read out of
    # bounds with, is refused too.
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[0, index], [1, 2]], np.float32)
    with pytest.raises(CAPIError, match="node 'the_node'.*IndexError: index .* out of bounds "
                                        "for axis 0 with size 3"):
        run_one_node(api, 'gather_nd', {}, [data, indices])


GATHER_ND_SHAPE_ERRORS = [((3, 4), (5,), 'at least 2 dims'), ((3, 4), (3, 2), 'first dim (3'),
                          ((3, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2), (11, 2), 'first dim (11')]


@pytest.mark.parametrize('data,indices,detail', GATHER_ND_SHAPE_ERRORS,
                         ids=[d for _, _, d in GATHER_ND_SHAPE_ERRORS])
def test_gather_nd_shape_errors(api, data, indices, detail):
    with pytest.raises(CAPIError) as error:
        api.create(one_node_graph('gather_nd', {}, num_inputs=2), b'',
                   {'data0': data, 'data1': indices})
    message = str(error.value)
    assert "'the_node' (gather_nd)" in message and detail in message, message


ATTENTION_SHAPE_ERRORS = [
    ('_contrib_interleaved_matmul_selfatt_qk', [(5, 2, 32)], 'multiple of 9'),
    ('_contrib_interleaved_matmul_selfatt_valatt', [(5, 2, 36), (4, 5, 5)], 'needs (6, 5, 5)'),
    ('_contrib_interleaved_matmul_encdec_qk', [(4, 2, 12), (5, 2, 12)], 'twice the last dim'),
    ('_contrib_interleaved_matmul_encdec_valatt', [(5, 2, 24), (6, 4, 6)], 'needs (6, queries, 5)'),
]


@pytest.mark.parametrize('op,shapes,detail', ATTENTION_SHAPE_ERRORS,
                         ids=[o.split('_matmul_')[1] for o, _, _ in ATTENTION_SHAPE_ERRORS])
def test_interleaved_matmul_shape_errors(api, op, shapes, detail):
    # Shapes MXNet's shape functions let through but its kernels cannot use
    # (heads that do not divide the last dim, an attention batch other than
    # batch * heads) fail at load.
    with pytest.raises(CAPIError) as error:
        api.create(one_node_graph(op, {'heads': '3'}, num_inputs=len(shapes)), b'',
                   {'data%d' % i: s for i, s in enumerate(shapes)})
    message = str(error.value)
    assert "'the_node'" in message and detail in message, message


@pytest.mark.parametrize('length', [-1, 6])
def test_softmax_length_out_of_range_is_an_error(api, length):
    # MXNet writes (below 0) or reads (past the axis) out of bounds.
    graph = one_node_graph('softmax', {'use_length': 'True'}, num_inputs=2)
    handle = api.create(graph, b'', {'data0': (2, 5), 'data1': (2,)}, dtypes={'data1': 4})
    try:
        api.set_input(handle, 'data0', np.zeros((2, 5), np.float32))
        api.set_input(handle, 'data1', np.array([3, length], np.int32))
        with pytest.raises(CAPIError, match="node 'the_node'.*length %d .* out of range" % length):
            api.forward(handle)
    finally:
        api.free(handle)


def test_softmax_length_needs_integer_lengths(api):
    # MXNet's kernel takes int32 or int64 lengths only.
    graph = one_node_graph('softmax', {'use_length': 'True'}, num_inputs=2)
    with pytest.raises(CAPIError, match="'length' has dtype float32"):
        api.create(graph, b'', {'data0': (2, 5), 'data1': (2,)}, dtypes={'data1': 0})


ROI_ALIGN = {'pooled_size': '(2, 2)', 'spatial_scale': '0.5'}


def test_roi_align_negative_batch_index_gives_zeros(api):
    # A batch index below 0 (after truncation: -0.5 is image 0) leaves the
    # roi out with zeros, as MXNet documents; the other rois are unaffected.
    data = np.random.RandomState(0).normal(size=(2, 3, 6, 5)).astype(np.float32)
    rois = np.array([[1, 0, 0, 6, 8], [-1, 0, 0, 6, 8], [-0.5, 0, 0, 6, 8],
                     [0, 0, 0, 6, 8]], np.float32)
    out = run_one_node(api, '_contrib_ROIAlign', ROI_ALIGN, [data, rois])
    assert out.shape == (4, 3, 2, 2)
    assert not out[1].any()
    np.testing.assert_array_equal(out[2], out[3])
    assert out[0].any() and out[3].any() and not np.array_equal(out[0], out[3])


@pytest.mark.parametrize('roi,attrs,detail', [
    ([2, 0, 0, 4, 4], {}, 'names batch index 2 but the data has 2 images'),
    ([0, 3, 3, 3, 5], {'aligned': 'True'}, 'width and height must be positive'),
    ([0, 0, float('inf'), 4, 4], {}, 'non-finite'),
    ([0, 0, 0, 4, 4], {'sample_ratio': '100000'}, 'samples per bin')])
def test_roi_align_bad_roi_is_an_error(api, roi, attrs, detail):
    # MXNet would read past the batch, fails a CHECK for an empty aligned roi,
    # and allocates whatever a huge sampling grid needs.
    data = np.zeros((2, 3, 6, 5), np.float32)
    rois = np.array([[0, 0, 0, 4, 4], roi], np.float32)
    with pytest.raises(CAPIError, match="node 'the_node'.*" + re.escape(detail)):
        run_one_node(api, '_contrib_ROIAlign', dict(ROI_ALIGN, **attrs), [data, rois])


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


def test_rnn_parameters_of_the_wrong_size_fail_at_load(api):
    # Layer 0 of a GRU with C=3, H=4: 3 * 4 * (3 + 4 + 2) = 108 parameters.
    graph = one_node_graph('RNN', {'state_size': '4', 'num_layers': '1', 'mode': 'gru'},
                           num_inputs=3)
    with pytest.raises(CAPIError) as error:
        api.create(graph, b'', {'data0': (5, 2, 3), 'data1': (107,), 'data2': (1, 2, 4)})
    message = str(error.value)
    assert "'the_node' (RNN)" in message and "'parameters'" in message and '(108,)' in message, \
        message


def test_rnn_param_concat_infers_both_input_weights(api):
    # Gluon declares the two input-to-hidden weights of a bidirectional first
    # layer (4H, 0): only the RNN knows its input size. _rnn_param_concat
    # gives two unknown inputs equal shares of what the other parameters
    # leave (MXNet's RNNParamConcatShape), so without them in the params
    # file the load fails for their missing values, not for their shapes.
    case = BY_NAME['rnn_gluon_lstm_2layer_bidir']
    dropped = ('arg:lstm0_l0_i2h_weight', 'arg:lstm0_r0_i2h_weight')
    params = {k: v for k, v in api.nd_list(case.params) if k not in dropped}
    inputs, _ = case.io()
    with pytest.raises(CAPIError) as error:
        api.create(case.symbol_json, ndfile.save(params), {k: v.shape for k, v in inputs.items()})
    message = str(error.value)
    assert "'lstm0_l0_i2h_weight'" in message and 'neither in the params file' in message, message


def test_rnn_projection_without_state_outputs(api):
    # MXNet 1.9.1's CPU LSTM with projection keeps its projected state in
    # the state output, so without state_outputs it crashes (a segmentation
    # fault): no fixture can hold it. mxlite's output is the one it gives
    # with state_outputs.
    case = BY_NAME['rnn_lstm_projection']
    graph = json.loads(case.symbol_json)
    for node in graph['nodes']:
        if node['op'] == 'RNN':
            node['attrs']['state_outputs'] = 'False'
    graph['heads'] = graph['heads'][:1]
    inputs, expected = case.io()
    outputs = api.predict(json.dumps(graph), case.params, inputs, num_outputs=1)
    assert_close(outputs[0], expected[0], case.rtol, 'output 0 without state_outputs')
