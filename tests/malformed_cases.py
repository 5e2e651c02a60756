"""The malformed-input corpus of test_malformed_corpus.py: the cases, built in code.

C_CASES, PY_CASES and ACCEPTED hold (name, action[, expected]) triples that
the tests run; StrictAPI is capi.API with the -1 rule of MXNet's C API.
"""
import ctypes
import json
import struct

import numpy as np

import ndfile
from capi import API, load_library, mx_uint
from conftest import FIXTURES, load_cases

OPS = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}
CASE = OPS['composite_net']
SHAPE = (2, 3, 13, 13)
GRAPH = json.loads(CASE.symbol_json)


class StrictAPI(API):
    """capi.API, but a failing call must return exactly -1."""

    def check(self, rc):
        if rc != 0:
            assert rc == -1, f'a failing call returned {rc}, not -1'
        super().check(rc)



# --------------------------------------------------------------------------
# Helpers that build malformed inputs from the composite_net fixture.

def create(api, symbol=None, params=None, shapes=None):
    handle = api.create(symbol if symbol is not None else CASE.symbol_json,
                        params if params is not None else CASE.params,
                        shapes if shapes is not None else {'data': SHAPE})
    api.free(handle)  # reached only by a case that wrongly loads


def edited(edit, graph=None):
    """composite_net's symbol JSON after edit(graph) (a deep copy is edited)."""
    graph = json.loads(json.dumps(graph if graph is not None else GRAPH))
    edit(graph)
    return json.dumps(graph)


def node(graph, name):
    return next(n for n in graph['nodes'] if n['name'] == name)


def set_key(key, value):
    def edit(graph):
        if value is MISSING:
            del graph[key]
        else:
            graph[key] = value
    return edit


def set_node(name, key, value):
    def edit(graph):
        if value is MISSING:
            del node(graph, name)[key]
        else:
            node(graph, name)[key] = value
    return edit


def set_attr(name, key, value):
    return lambda graph: node(graph, name).setdefault('attrs', {}).__setitem__(key, value)


MISSING = object()
C_CASES = []  # (name, action(api), expected regex)
PY_CASES = []  # (name, action(), expected regex)
# Inputs that look malformed but that MXNet 1.9.1 accepts (checked through
# its own C predict API): mxlite must accept them too, and run.
ACCEPTED = []  # (name, action(api))


def c_case(name, expected, action):
    if expected is None:
        ACCEPTED.append((name, action))
    else:
        C_CASES.append((name, action, expected))


def symbol_case(name, expected, edit=None, text=None, shapes=None):
    symbol = text if text is not None else edited(edit)
    c_case(f'symbol/{name}', expected, lambda api: create(api, symbol=symbol, shapes=shapes))


# --------------------------------------------------------------------------
# Symbol JSON: the top-level keys, missing or of the wrong type.

WRONG_TYPES = {'number': 7, 'string': 'x', 'null': None, 'bool': True, 'object': {'a': 1},
               'list': [1, 2]}
def right_name(kind):
    return 'array' if kind == 'list' else kind


TOP_LEVEL = {'nodes': 'list', 'arg_nodes': 'list', 'node_row_ptr': 'list', 'heads': 'list',
             'attrs': 'object'}
for key, right in TOP_LEVEL.items():
    for kind, value in WRONG_TYPES.items():
        if kind != right:
            symbol_case(f'{key}-is-{kind}', rf'"{key}" must be an? {right_name(right)}, not',
                        set_key(key, value))
symbol_case('nodes-missing', 'missing "nodes"', set_key('nodes', MISSING))
symbol_case('heads-missing', 'heads', set_key('heads', MISSING))
symbol_case('nodes-empty', 'nodes', set_key('nodes', []))
symbol_case('heads-empty', 'heads', set_key('heads', []))
symbol_case('attrs-version-string', 'mxnet_version', set_key('attrs', {'mxnet_version': 'abc'}))
symbol_case('attrs-version-list-of-str', 'mxnet_version',
            set_key('attrs', {'mxnet_version': ['int', 'abc']}))
for text_name, text in [('empty', ''), ('whitespace', '   \n'), ('array', '[1, 2]'),
                        ('number', '42'), ('string', '"nodes"'), ('null', 'null'),
                        ('truncated', CASE.symbol_json[:len(CASE.symbol_json) // 3]),
                        ('trailing-garbage', CASE.symbol_json + ' }'),
                        ('unclosed-string', '{"nodes": [{"op": "null, "name": "x"}]}'),
                        ('bad-escape', '{"nodes": [{"op": "nu\\qll"}]}'),
                        ('bad-number', '{"nodes": [], "heads": [[0, 0, 01x]]}'),
                        ('single-quotes', CASE.symbol_json.replace('"', "'")),
                        ('nan-literal', '{"nodes": NaN}'),
                        ('comment', '// comment\n' + CASE.symbol_json),
                        ]:
    symbol_case(f'text-{text_name}', r'symbol JSON: (malformed JSON at line \d+, column \d+|'
                                     r'the document must be an object)', text=text)

for text_name, text in [('deep-array-1e5', '[' * 100000 + ']' * 100000),
                        ('deep-object-1e5', '{"a":' * 100000 + '1' + '}' * 100000),
                        ('deep-unclosed-1e5', '[' * 100000)]:
    symbol_case(f'text-{text_name}', 'nesting too deep', text=text)
# A raw control character in a name: MXNet's reader takes it as it is.
symbol_case('text-control-char', None, text=CASE.symbol_json.replace('"c1"', '"c\x011"', 1))

# Deep nesting inside an otherwise valid graph: in a node's attrs, and as an input.
symbol_case('deep-in-attr', 'nesting too deep',
            text=CASE.symbol_json.replace('"act_type": "relu"',
                                          '"act_type": ' + '[' * 100000 + ']' * 100000, 1))
symbol_case('deep-in-inputs', 'nesting too deep',
            text=CASE.symbol_json.replace('[[8, 0, 0]]', '[' * 100000 + ']' * 100000, 1))

# --------------------------------------------------------------------------
# Symbol JSON: nodes.

NODE_FIELDS = {'op': 'string', 'name': 'string', 'inputs': 'list', 'attrs': 'object'}
for field, right in NODE_FIELDS.items():
    for kind in ('number', 'null', 'list' if right != 'list' else 'object'):
        symbol_case(f'node-{field}-is-{kind}', rf'node (#13|\'c2\'): "{field}" must be',
                    set_node('c2', field, WRONG_TYPES[kind]))
symbol_case('node-op-missing', r'node #13: missing "op"', set_node('c2', 'op', MISSING))
symbol_case('node-inputs-missing-on-operator', r"node 'c2' \(Convolution\) has 0 input",
            set_node('c2', 'inputs', MISSING))
symbol_case('node-is-number', 'node #13 must be an object', lambda g: g['nodes'].__setitem__(13, 5))
symbol_case('node-is-list', 'node #13 must be an object', lambda g: g['nodes'].__setitem__(13, ['Convolution']))
# An unquoted number is read as its text: kernel=3 is a 1-D kernel, which
# the 2-D pad contradicts.
symbol_case('node-attr-value-number', r"node 'c2' \(Convolution\): attribute 'pad'",
            set_attr('c2', 'kernel', 3))
symbol_case('node-attr-value-list', r"node 'c2': attribute 'kernel' must be a string",
            set_attr('c2', 'kernel', [3, 3]))
symbol_case('node-param-is-number', r"node 'c2': \"param\" must be an object",
            set_node('c2', 'param', 5))

for op in ['', 'FancyConvolution', 'convolution', 'Convolution ', ' Convolution', 'CONVOLUTION',
           '_FusedConvolution', '_FusedBatchNorm', 'Convolution_v1', '_backward_Convolution',
           'Custom', '_foreach', '_while_loop', '_cond', 'x' * 5000, 'Convolution\u00e9',
           '_contrib_quantized_conv', 'BatchNorm_v1', 'Correlation']:
    symbol_case(f'op-{op[:24]!r}', r"node 'c2': operator '.*' is not supported",
                set_node('c2', 'op', op))
symbol_case('null-with-inputs', r"node 'c2': a variable \(op \"null\"\) cannot have inputs", lambda g: node(g, 'c2').update(op='null'))

# Input references out of range, of the wrong form, forward and cyclic.
for label, ref in [('node-99', [99, 0, 0]), ('node-minus-1', [-1, 0, 0]),
                   ('node-2pow32', [2 ** 32, 0, 0]), ('node-2pow63', [2 ** 63 - 1, 0, 0]),
                   ('node-self', [13, 0, 0]), ('node-forward', [20, 0, 0]),
                   ('output-1-of-null', [10, 1, 0]), ('output-minus-1', [10, -1, 0]),
                   ('output-2pow32', [10, 2 ** 32, 0]), ('version-minus-1', [10, 0, -1]),
                   ('one-field', [10]), ('empty', []),
                   ('four-fields', [10, 0, 0, 0]), ('strings', ['10', '0', '0']),
                   ('float', [10.5, 0, 0]), ('nested', [[10, 0, 0]])]:
    symbol_case(f'input-{label}', r"node 'c2' input 0: (refers to|entry values must|an entry must)",
                lambda g, ref=ref: node(g, 'c2')['inputs'].__setitem__(0, ref))
# [node, output] without the version is how pre-0.9 files wrote entries.
symbol_case('input-two-fields', None,
            lambda g: node(g, 'c2')['inputs'].__setitem__(0, [10, 0]))
symbol_case('head-two-fields', None, lambda g: g.__setitem__('heads', [[26, 0]]))
symbol_case('input-count-too-few', r"node 'c2' \(Convolution\) has 2 input", lambda g: node(g, 'c2')['inputs'].pop())
symbol_case('input-count-too-many', r"node 'c2' \(Convolution\) has 4 input",
            lambda g: node(g, 'c2')['inputs'].append([0, 0, 0]))
symbol_case('inputs-is-list-of-numbers', r"node 'c2' input 0: an entry must", set_node('c2', 'inputs', [10, 0, 0]))


def make_cycle(graph):
    # c1 reads from r2 (node 20), which depends on c1: a cycle through
    # forward references.
    node(graph, 'c1')['inputs'][0] = [20, 0, 0]


symbol_case('cycle-through-forward-reference', 'come before', make_cycle)
symbol_case('cycle-two-nodes', 'come before',
            lambda g: node(g, 'add0')['inputs'].__setitem__(1, [20, 0, 0]))
for label, head in [('node-99', [99, 0, 0]), ('node-minus-1', [-1, 0, 0]),
                    ('output-5', [26, 5, 0]), ('string', ['26', 0, 0]),
                    ('number', 26)]:
    symbol_case(f'head-{label}', r"head 0: (refers to|entry values must|an entry must)",
                lambda g, head=head: g.__setitem__('heads', [head]))
for label, value in [('99', [0, 99]), ('minus-1', [0, -1]), ('operator-node', [0, 3]),
                     ('string', ['0'])]:
    symbol_case(f'arg-nodes-{label}', r'"arg_nodes" (item|must hold)',
                lambda g, value=value: g.__setitem__('arg_nodes', value))
symbol_case('node-row-ptr-strings', r'"node_row_ptr" must hold non-negative integers',
            lambda g: g.__setitem__('node_row_ptr', ['0'] * 28))
# MXNet reads node_row_ptr and ignores its values.
for label, value in [('short', [0, 1, 2]), ('decreasing', list(range(28, 0, -1)))]:
    symbol_case(f'node-row-ptr-{label}', None,
                lambda g, value=value: g.__setitem__('node_row_ptr', value))


def duplicate_weight(graph):
    # Two variables named 'c1_weight' with different shapes (c2's has 5
    # input channels, c1's 3): the params file can only give one of them.
    node(graph, 'c2_weight')['name'] = 'c1_weight'


symbol_case('duplicate-variable-name', r"parameter 'c1_weight' has shape \(5,3,3,3\) in the "
            r"params file but the graph needs \(5,5,3,3\)", duplicate_weight)
# c1's weight renamed 'data': the input's shape lands on the weight slot.
symbol_case('duplicate-input-name', r"shape inference failed at node 'c1'",
            lambda g: node(g, 'c1_weight').update(name='data'))

# --------------------------------------------------------------------------
# Operators: an unknown attribute for every operator of the fixtures, and
# bad values for the attributes of the common ones.


def first_operator(graph):
    return next(n for n in graph['nodes'] if n['op'] != 'null')


def fixture_case(case, edit, shapes=None):
    graph = json.loads(case.symbol_json)
    edit(graph)
    symbol = json.dumps(graph)
    if shapes is None:
        inputs, _ = case.io()
        shapes = {name: value.shape for name, value in inputs.items()}
    return lambda api: create(api, symbol=symbol, params=case.params, shapes=shapes)


def one_fixture_per_operator():
    chosen = {}
    for case in OPS.values():
        op = first_operator(json.loads(case.symbol_json))['op']
        chosen.setdefault(op, case)
    return chosen


PER_OPERATOR = one_fixture_per_operator()
# An attribute that no operator reads is refused for every operator (MXNet
# refuses it for operators with parameters; it ignores it for the few
# without, such as elemwise_add, where mxlite is the stricter).
for op, case in sorted(PER_OPERATOR.items()):
    c_case(f'attr/{op}-unknown-attribute', rf"unknown attribute 'wiggle'",
           fixture_case(case, lambda g: first_operator(g).setdefault('attrs', {}).update(
               wiggle='3')))

BAD_VALUES = [
    ('Convolution', 'c2', 'kernel', '(3, x)'), ('Convolution', 'c2', 'kernel', '(0, 0)'),
    ('Convolution', 'c2', 'kernel', '(99999, 99999)'), ('Convolution', 'c2', 'kernel', '()'),
    ('Convolution', 'c2', 'kernel', '(3, 3, 3, 3)'), ('Convolution', 'c2', 'num_filter', '0'),
    ('Convolution', 'c2', 'num_filter', '-5'), ('Convolution', 'c2', 'num_filter', 'five'),
    ('Convolution', 'c2', 'num_filter', '4294967301'),
    ('Convolution', 'c2', 'num_filter', '1e30'), ('Convolution', 'c2', 'stride', '(0, 0)'),
    ('Convolution', 'c2', 'stride', '(-1, 1)'), ('Convolution', 'c2', 'dilate', '(0, 0)'),
    ('Convolution', 'c2', 'pad', '(-1, -1)'), ('Convolution', 'c2', 'pad', '(4294967296, 0)'),
    ('Convolution', 'c2', 'num_group', '0'), ('Convolution', 'c2', 'num_group', '2'),
    ('Convolution', 'c2', 'layout', 'NCHWX'), ('Convolution', 'c2', 'no_bias', 'maybe'),
    ('BatchNorm', 'b2', 'eps', 'tiny'), ('BatchNorm', 'b2', 'axis', '7'),
    ('BatchNorm', 'b2', 'fix_gamma', '2'), ('BatchNorm', 'b2', 'momentum', '(1,)'),
    ('BatchNorm', 'b2', 'use_global_stats', 'always'), ('BatchNorm', 'b2', 'cudnn_off', 'x'),
    ('Convolution', 'c2', 'cudnn_tune', 'quickest'), ('Convolution', 'c2', 'cudnn_off', '2'),
    ('Pooling', 'p1', 'cudnn_off', 'no way'),
    ('Activation', 'r1', 'act_type', 'swish'), ('Activation', 'r1', 'act_type', ''),
    ('Activation', 'r1', 'act_type', 'RELU'),
    ('Pooling', 'p1', 'pool_type', 'median'), ('Pooling', 'p1', 'kernel', '(0, 0)'),
    ('Pooling', 'p1', 'kernel', '(x, 3)'), ('Pooling', 'p1', 'stride', '(0, 0)'),
    ('Pooling', 'p1', 'pad', '(-3, -3)'), ('Pooling', 'p1', 'pooling_convention', 'round'),
    ('Pooling', 'p1', 'layout', 'NWC'), ('Pooling', 'p1', 'p_value', 'two'),
    ('Pooling', 'p1', 'global_pool', 'yes please'),
    ('FullyConnected', 'fc', 'num_hidden', '0'), ('FullyConnected', 'fc', 'num_hidden', '-7'),
    ('FullyConnected', 'fc', 'num_hidden', 'seven'),
    ('FullyConnected', 'fc', 'num_hidden', '1099511627776'),
    ('FullyConnected', 'fc', 'flatten', 'sometimes'),
    ('FullyConnected', 'fc', 'no_bias', '3'),
    ('softmax', 'prob', 'axis', '5'), ('softmax', 'prob', 'axis', '-3'),
    ('softmax', 'prob', 'axis', 'last'), ('softmax', 'prob', 'temperature', 'nan'),
    ('softmax', 'prob', 'dtype', 'float128'), ('softmax', 'prob', 'use_length', 'perhaps'),
    ('Flatten', 'flat', 'axis', '1'),
    ('Convolution', 'c2', 'pad', '(-, 1)'), ('Convolution', 'c2', 'stride', '(-)'),
    ('elemwise_add', 'add0', 'wiggle', '1'),
]
# workspace is an unsigned integer to MXNet, which reads -1 as its largest
# value; both ignore it on a CPU.
symbol_case('attr/c2-workspace=-1', None, set_attr('c2', 'workspace', '-1'))
# A sign without a number once read nothing and looped, growing the shape
# (found by the fuzz campaign in docs/security.md).
for hint in ('(1- 3)', '(-)', '(5, -, 3)', '(3, -'):
    symbol_case(f'attr/c1_weight-__shape__={hint}', "variable 'c1_weight': cannot parse __shape__",
                set_attr('c1_weight', '__shape__', hint))
for op, name, key, value in BAD_VALUES:
    symbol_case(f'attr/{name}-{key}={value[:20]}',
                rf"attribute '?{key}|shape inference failed|parameter 'fc_weight' has shape",
                set_attr(name, key, value))

# Absurd shapes written into attributes: each must be refused, not allocated.
ABSURD = [
    ('Reshape', {'shape': '(4294967296, 4294967296, 4)'}, 'too many elements'),
    ('Reshape', {'shape': '(-1, 4294967296, 4294967296)'}, 'the other dims have too many'),
    ('Reshape', {'shape': '(100000, 100000, 100000)'}, r'element|shape'),
    ('Reshape', {'shape': '(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)'}, r'shape'),
    ('Reshape', {'shape': '(' + ', '.join(['1'] * 100) + ')'}, r'shape|dim'),
    ('broadcast_to', {'shape': '(1000000000, 1000000000)'}, r'shape|broadcast'),
    ('tile', {'reps': '(1000000000, 1000000000)'}, r'element|large|reps'),
    ('repeat', {'repeats': '4611686018427387904'}, r"'repeats'.*from 0 to 2147483647"),
    ('repeat', {'repeats': '2147483647', 'axis': '0'}, r'out of memory|too many elements|over the memory budget'),
    ('_zeros', {'shape': '(1000000000, 1000000000, 1000000000)'}, r'element|large|shape'),
    ('_ones', {'shape': '(-1, 5)'}, r'shape'),
    ('_full', {'shape': '(4294967296, 4294967296)', 'value': '1'}, r'element|large|shape'),
    ('_arange', {'start': '0', 'stop': '1e300'}, r'element|large|stop|arange'),
    ('_arange', {'start': '0', 'stop': '10', 'step': '0'}, r'step'),
    ('Pad', {'mode': 'constant', 'pad_width': '(0, 0, 0, 0, 4294967296, 4294967296, 0, 0)'},
     r'out of memory allocating \d+ bytes|over the memory budget|too many elements'),
    ('UpSampling', {'scale': '1000000', 'sample_type': 'nearest', 'num_args': '1'},
     r'out of memory allocating \d+ bytes|over the memory budget|too many elements'),
    ('SliceChannel', {'num_outputs': '0'}, r'num_outputs'),
    ('SliceChannel', {'num_outputs': '1000000'}, r'num_outputs|split|divisible'),
    ('one_hot', {'depth': '4611686018427387904'}, r'depth|element|large'),
    ('expand_dims', {'axis': '100'}, r'axis'),
    ('transpose', {'axes': '(0, 0, 1, 2)'}, r'axes'),
    ('transpose', {'axes': '(0, 1, 2, 99)'}, r'axes'),
    ('slice_axis', {'axis': '9', 'begin': '0', 'end': '1'}, r'axis'),
    ('sum', {'axis': '(17,)'}, r'axis'),
    ('Concat', {'dim': '9', 'num_args': '1'}, r'dim|axis'),
]


def unary_symbol(op, attrs, with_input=True):
    nodes = [{'op': 'null', 'name': 'data', 'inputs': []}] if with_input else []
    nodes.append({'op': op, 'name': 'n', 'attrs': attrs,
                  'inputs': [[0, 0, 0]] if with_input else []})
    return json.dumps({'nodes': nodes, 'arg_nodes': [0] if with_input else [],
                       'heads': [[len(nodes) - 1, 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})


for op, attrs, expected in ABSURD:
    creator = op in ('_zeros', '_ones', '_full', '_arange')
    symbol = unary_symbol(op, attrs, with_input=not creator)
    shapes = {} if creator else {'data': (1, 2, 3, 4)}
    c_case(f'absurd/{op}-{",".join(attrs)}={list(attrs.values())[-1][:16]}', expected,
           lambda api, symbol=symbol, shapes=shapes: create(api, symbol, b'', shapes))

# --------------------------------------------------------------------------
# Params files.

WEIGHTS = {}


def weights():
    if not WEIGHTS:
        WEIGHTS.update(API(load_library()).nd_list(CASE.params))
    return dict(WEIGHTS)


def params_case(name, expected, data):
    c_case(f'params/{name}', expected,
           lambda api: create(api, params=data() if callable(data) else data))


for magic in (0, 0x113, 0x111, 0xFFFFFFFFFFFFFFFF, 0x112 << 32):
    params_case(f'magic-{magic:#x}', 'not an MXNet NDArray file',
                struct.pack('<Q', magic) + CASE.params[8:])
params_case('json-as-params', 'not an MXNet NDArray file', CASE.symbol_json.encode())
params_case('seven-bytes', r'truncated|not an MXNet', CASE.params[:7])
size = len(CASE.params)
for cut in sorted({8, 16, 23, 24, 25, 28, 32, 40, 48, 60, 64, 100, 128, 200, 333, 512, 1000,
                   size // 3, size // 2, 2 * size // 3, size - 100, size - 30, size - 9,
                   size - 8, size - 1}):
    params_case(f'truncated-at-{cut}', 'truncated', CASE.params[:cut])


def one_array(dtype_flag=0, ndim=2, dims=(5, 3), payload=None, array_magic=0xF993FAC9,
              stype=None, name='arg:fc_bias', count=1, names=1):
    head = struct.pack('<QQQ', 0x112, 0, count)
    if array_magic == 0xF993FACA or stype is not None:
        array = struct.pack('<Ii', 0xF993FACA, stype or 0)
    else:
        array = struct.pack('<I', array_magic) + (struct.pack('<i', 0) if array_magic ==
                                                  0xF993FAC9 else b'')
    array += struct.pack('<i', ndim) + struct.pack(f'<{len(dims)}q', *dims)
    array += struct.pack('<iii', 1, 0, dtype_flag)
    elements = int(np.prod(dims)) if dims and all(0 <= d < 1000 for d in dims) else 4
    array += payload if payload is not None else b'\0' * 4 * elements
    tail = struct.pack('<Q', names) + (struct.pack('<Q', len(name)) + name.encode()) * names
    return head + array + tail


for flag in (-1, 13, 99, 2 ** 31 - 1):
    params_case(f'dtype-flag-{flag}', rf'dtype flag {flag}|dtype', one_array(dtype_flag=flag))
for label, ndim, dims in [('ndim-minus-1', -1, ()), ('ndim-2pow31', 2 ** 31 - 1, (5, 3)),
                          ('ndim-100', 100, (1,) * 100), ('dim-negative', 2, (-5, 3)),
                          ('dim-2pow62', 2, (2 ** 62, 4)), ('dims-overflow', 3, (2 ** 40,) * 3),
                          ('dim-huge-count', 2, (2 ** 31, 2 ** 31))]:
    params_case(label, r'dim|shape|truncated|element', one_array(ndim=ndim, dims=dims))
params_case('sparse-csr', r'stored as csr; mxlite supports dense arrays only',
            one_array(stype=2))
params_case('sparse-row', r'stored as row_sparse; mxlite supports dense arrays only',
            one_array(stype=1))
params_case('array-magic-bad', r'magic|NDArray|array', one_array(array_magic=0xDEADBEEF))
params_case('array-count-huge', r'truncated|count',
            struct.pack('<QQQ', 0x112, 0, 2 ** 62) + CASE.params[24:])
params_case('name-count-mismatch', r'name', one_array(names=3))
params_case('name-length-huge', r'truncated|name',
            one_array()[:-len('arg:fc_bias') - 8] + struct.pack('<Q', 2 ** 60) + b'arg:fc_bias')
params_case('payload-short', 'truncated', one_array()[:-8 - 8 - len('arg:fc_bias') - 4])
params_case('other-model', "provides none of the model's", OPS['multi_head'].params)
params_case('gluon-names', r"provides none.*save_parameters", lambda: ndfile.save(
    {f'features.{i}.weight': v for i, v in enumerate(weights().values())}))
params_case('unnamed-list', r"name|provides none|parameter",
            lambda: ndfile.save(list(weights().values())))
params_case('weight-of-wrong-shape', r"c2_weight", lambda: ndfile.save(
    {**weights(), 'arg:c2_weight': np.zeros((5, 5, 1, 1), np.float32)}))
params_case('weight-of-wrong-rank', r"fc_weight", lambda: ndfile.save(
    {**weights(), 'arg:fc_weight': np.zeros(35, np.float32)}))
params_case('bias-scalar', r"fc_bias", lambda: ndfile.save(
    {**weights(), 'arg:fc_bias': np.zeros((), np.float32)}))
params_case('weight-missing', r"c2_weight.*neither in the params", lambda: ndfile.save(
    {k: v for k, v in weights().items() if k != 'arg:c2_weight'}))
params_case('bad-prefix', r"provides none|parameter|prefix", lambda: ndfile.save(
    {'param:' + k.split(':', 1)[1]: v for k, v in weights().items()}))

# MXNDListCreate on its own.


def nd_list_case(name, expected, data, size=None):
    def action(api):
        handle = ctypes.c_void_p()
        length = mx_uint()
        api.check(api.lib.MXNDListCreate(data, ctypes.c_int(len(data) if size is None else size),
                                         ctypes.byref(handle), ctypes.byref(length)))
        api.lib.MXNDListFree(handle)
    c_case(f'ndlist/{name}', expected, action)


nd_list_case('bad-magic', 'not an MXNet NDArray file', b'\x13' + CASE.params[1:])
nd_list_case('truncated-header', 'truncated', CASE.params[:12])
nd_list_case('truncated-middle', 'truncated', CASE.params[:len(CASE.params) // 2])
nd_list_case('negative-size', r'size|negative', CASE.params, size=-1)
nd_list_case('dtype-flag-99', 'dtype', one_array(dtype_flag=99))
nd_list_case('symbol-json', 'not an MXNet NDArray file', CASE.symbol_json.encode())


def nd_list_get_case(name, expected, index):
    def action(api):
        handle = ctypes.c_void_p()
        length = mx_uint()
        api.check(api.lib.MXNDListCreate(CASE.params, len(CASE.params), ctypes.byref(handle),
                                         ctypes.byref(length)))
        try:
            key, data = ctypes.c_char_p(), ctypes.POINTER(ctypes.c_float)()
            shape, ndim = ctypes.POINTER(mx_uint)(), mx_uint()
            api.check(api.lib.MXNDListGet(handle, mx_uint(index), ctypes.byref(key),
                                          ctypes.byref(data), ctypes.byref(shape),
                                          ctypes.byref(ndim)))
        finally:
            api.lib.MXNDListFree(handle)
    c_case(f'ndlist/{name}', expected, action)


for index in (15, 1000, 2 ** 32 - 1):
    nd_list_get_case(f'get-index-{index}', r'index|out of range', index)

# --------------------------------------------------------------------------
# Input shapes at create, reshape to bad shapes.

for label, shape in [('zero-batch', (0, 3, 13, 13)), ('zero-channel', (2, 0, 13, 13)),
                     ('all-zero', (0, 0, 0, 0)), ('negative-as-uint32', (2, 3, 2 ** 32 - 1, 13)),
                     ('minus-2-as-uint32', (2 ** 32 - 2, 3, 13, 13))]:
    c_case(f'shape/{label}', r"input 'data'.*(dimensions must be positive|too large)|"
                             r"out of memory allocating \d+ bytes|over the memory budget",
           lambda api, shape=shape: create(api, shapes={'data': shape}))
for label, shape in [('rank-1', (2,)), ('rank-2', (2, 3)), ('rank-3', (2, 3, 13)),
                     ('rank-5', (2, 3, 13, 13, 1)), ('rank-10', (1,) * 10),
                     ('rank-33', (1,) * 33), ('rank-0', ()), ('channels-4', (2, 4, 13, 13)),
                     ('all-uint32-max', (2 ** 32 - 1,) * 4),
                     ('product-overflows-int64', (2 ** 32 - 1, 2 ** 32 - 1, 2 ** 31, 4))]:
    c_case(f'shape/{label}', r"input 'data'|parameter 'c1_weight' has shape",
           lambda api, shape=shape: create(api, shapes={'data': shape}))
c_case('shape/unknown-input', "input 'image' is not an input of the graph",
       lambda api: create(api, shapes={'image': SHAPE}))
c_case('shape/missing-input', "shape of 'data'", lambda api: create(api, shapes={}))
c_case('shape/image-1x1', None, lambda api: create(api, shapes={'data': (2, 3, 1, 1)}))
c_case('shape/weight-shape-contradicts-params', r"shape inference failed at node 'c1'",
       lambda api: create(api, shapes={'data': SHAPE, 'c1_weight': (1, 1, 1, 1)}))


def raw_create(keys, indptr, data, symbol=None, params=None):
    def action(api):
        handle = ctypes.c_void_p()
        sym = (symbol if symbol is not None else CASE.symbol_json).encode()
        par = params if params is not None else CASE.params
        c_keys = (ctypes.c_char_p * max(1, len(keys)))(
            *[None if k is None else k.encode() for k in keys])
        rc = api.lib.MXPredCreate(
            sym, par, len(par), 1, 0, mx_uint(len(keys)), c_keys,
            (mx_uint * len(indptr))(*indptr), (mx_uint * max(1, len(data)))(*data),
            ctypes.byref(handle))
        if rc == 0:
            api.lib.MXPredFree(handle)
        api.check(rc)
    return action


c_case('shape/indptr-decreasing', r'indptr|shape', raw_create(['data'], [4, 0], [2, 3, 13, 13]))
c_case('shape/indptr-not-from-zero', r'indptr|shape',
       raw_create(['data'], [1, 4], [2, 3, 13, 13]))
c_case('shape/duplicate-key', r"'data'.*(twice|more than once|duplicate)",
       raw_create(['data', 'data'], [0, 4, 8], [2, 3, 13, 13] * 2))
c_case('shape/null-key', r'key|name|null|NULL', raw_create([None], [0, 4], [2, 3, 13, 13]))
c_case('shape/empty-key', r"''|key|name|input",
       raw_create([''], [0, 4], [2, 3, 13, 13]))
c_case('create/null-symbol', r'symbol|null|NULL', lambda api: api.check(api.lib.MXPredCreate(
    None, CASE.params, len(CASE.params), 1, 0, 1, (ctypes.c_char_p * 1)(b'data'),
    (mx_uint * 2)(0, 4), (mx_uint * 4)(*SHAPE), ctypes.byref(ctypes.c_void_p()))))
c_case('create/null-params-with-size', r'param|null|NULL',
       lambda api: api.check(api.lib.MXPredCreate(
           CASE.symbol_json.encode(), None, 100, 1, 0, 1, (ctypes.c_char_p * 1)(b'data'),
           (mx_uint * 2)(0, 4), (mx_uint * 4)(*SHAPE), ctypes.byref(ctypes.c_void_p()))))
c_case('create/negative-params-size', r'param|size|negative',
       lambda api: api.check(api.lib.MXPredCreate(
           CASE.symbol_json.encode(), CASE.params, -5, 1, 0, 1, (ctypes.c_char_p * 1)(b'data'),
           (mx_uint * 2)(0, 4), (mx_uint * 4)(*SHAPE), ctypes.byref(ctypes.c_void_p()))))
c_case('create/dev-type-3-cpu-pinned', None, lambda api: api.free(api.create(
    CASE.symbol_json, CASE.params, {'data': SHAPE}, dev_type=3)))
for dev_type in (0, 2, 99, -1):
    # dev_type 2 is a CUDA GPU: the plain build has no CUDA backend.
    c_case(f'create/dev-type-{dev_type}',
           r'GPU 0 is not available: this build of mxlite has no CUDA backend' if dev_type == 2
           else rf'dev_type {dev_type} is not available',
           lambda api, dev_type=dev_type: api.free(api.create(
               CASE.symbol_json, CASE.params, {'data': SHAPE}, dev_type=dev_type)))
for flag in (-1, 12, 99):
    c_case(f'create-ex/dtype-flag-{flag}', r'dtype|type',
           lambda api, flag=flag: api.free(api.create(
               CASE.symbol_json, CASE.params, {'data': SHAPE}, dtypes={'data': flag})))
c_case('create-ex/dtype-of-unknown-input', None,
       lambda api: api.free(api.create(CASE.symbol_json, CASE.params, {'data': SHAPE},
                                       dtypes={'image': 0})))
for key in ('nope', '', 'c1_output_output', 'prob_output ', 'c1_weight_output'):
    c_case(f'partial-out/{key!r}', rf"output key '{key}': the graph has no internal output", lambda api, key=key: api.free(
        api.create(CASE.symbol_json, CASE.params, {'data': SHAPE}, output_keys=[key])))
for count in (0, -1, -1000):
    c_case(f'multi-thread/count-{count}', rf'num_threads must be at least 1 \(got {count}\)',
           lambda api, count=count: api.check(api.lib.MXPredCreateMultiThread(
               CASE.symbol_json.encode(), CASE.params, len(CASE.params), 1, 0, 1,
               (ctypes.c_char_p * 1)(b'data'), (mx_uint * 2)(0, 4), (mx_uint * 4)(*SHAPE),
               ctypes.c_int(count), (ctypes.c_void_p * 1)())))


class Bound:
    """A composite_net handle for the calls on an existing predictor."""

    def __init__(self, api):
        self.api = api
        self.handle = api.create(CASE.symbol_json, CASE.params, {'data': SHAPE})

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc):
        self.api.free(self.handle)


def on_handle(name, expected, call):
    def action(api):
        with Bound(api) as handle:
            call(api, handle)
    c_case(name, expected, action)


for label, shape in [('zero', (0, 3, 13, 13)), ('rank-2', (2, 3)), ('channels-4', (2, 4, 13, 13)),
                     ('uint32-max', (2, 3, 2 ** 32 - 1, 13)), ('too-many-dims', (1,) * 40),
                     ('product-overflows', (2 ** 32 - 1,) * 4), ('rank-0', ())]:
    on_handle(f'reshape/{label}', r"input 'data'|parameter 'c1_weight' has shape|"
                                  r"out of memory allocating \d+ bytes|over the memory budget",
              lambda api, handle, shape=shape: api.free(api.reshape(handle, {'data': shape})))
on_handle('reshape/unknown-input', r"cannot reshape 'image': it is not an input", lambda api, handle: api.reshape(
    handle, {'image': SHAPE}))
on_handle('reshape/weight', r"cannot reshape 'c1_weight': it is not an input",
          lambda api, handle: api.free(api.reshape(handle, {'c1_weight': (9, 9, 9, 9)})))
c_case('reshape/null-handle', r'MXPredReshape: the predictor handle is NULL', lambda api: api.reshape(None, {'data': SHAPE}))

for label, count in [('too-small', 1013), ('too-large', 1015), ('zero', 0),
                     ('uint32-max', 2 ** 32 - 1)]:
    on_handle(f'set-input/{label}', rf"input 'data' has shape .* but {count} elements",
              lambda api, handle, count=count: api.check(api.lib.MXPredSetInput(
                  handle, b'data', np.zeros(1015, np.float32).ctypes.data_as(ctypes.c_void_p),
                  mx_uint(count))))
for key in (b'image', b'', b'prob_output', b'data '):
    on_handle(f'set-input/name-{key!r}', r"cannot find input key",
              lambda api, handle, key=key: api.check(api.lib.MXPredSetInput(
                  handle, key, np.zeros(1014, np.float32).ctypes.data_as(ctypes.c_void_p),
                  1014)))
on_handle('set-input/null-data', r'data|null|NULL', lambda api, handle: api.check(
    api.lib.MXPredSetInput(handle, b'data', None, 1014)))
on_handle('set-input/null-key', r'key|name|null|NULL', lambda api, handle: api.check(
    api.lib.MXPredSetInput(handle, None, np.zeros(1014, np.float32).ctypes.data_as(
        ctypes.c_void_p), 1014)))
for index in (1, 2, 99, 2 ** 31, 2 ** 32 - 1):
    on_handle(f'output/index-{index}', rf'output index {index} is out of range',
              lambda api, handle, index=index: api.output(handle, index))
    on_handle(f'output-shape/index-{index}', rf'output index {index} is out of range',
              lambda api, handle, index=index: api.output_shape(handle, index))
    on_handle(f'output-type/index-{index}', rf'output index {index} is out of range',
              lambda api, handle, index=index: api.output_type(handle, index))
for size in (0, 13, 15, 2 ** 32 - 1):
    on_handle(f'output/size-{size}', rf'has shape \(2,7\) \(14 elements\) but size is {size}',
              lambda api, handle, size=size: api.check(api.lib.MXPredGetOutput(
                  handle, 0, np.zeros(16, np.float32).ctypes.data_as(ctypes.c_void_p),
                  mx_uint(size))))
on_handle('output/null-buffer', r'data|null|NULL|buffer', lambda api, handle: api.check(
    api.lib.MXPredGetOutput(handle, 0, None, 14)))
# MXNet reads a step past the last (or a negative one, cast to size_t) as
# "nothing left"; mxlite refuses a negative step and agrees on the others.
for step in (28, 1000):
    on_handle(f'partial-forward/step-{step}', None, lambda api, handle, step=step:
              api.partial_forward(handle, step))
for step in (-1, -(2 ** 31)):
    on_handle(f'partial-forward/step-{step}', r'step must not be negative', lambda api, handle, step=step:
              api.partial_forward(handle, step))
for name, call in [
        ('forward', lambda api: api.lib.MXPredForward(None)),
        ('set-input', lambda api: api.lib.MXPredSetInput(None, b'data', None, 0)),
        ('get-output', lambda api: api.lib.MXPredGetOutput(None, 0, None, 0)),
        ('get-output-shape', lambda api: api.lib.MXPredGetOutputShape(
            None, 0, ctypes.byref(ctypes.POINTER(mx_uint)()), ctypes.byref(mx_uint()))),
        ('get-output-type', lambda api: api.lib.MXPredGetOutputType(
            None, 0, ctypes.byref(ctypes.c_int()))),
        ('partial-forward', lambda api: api.lib.MXPredPartialForward(
            None, 0, ctypes.byref(ctypes.c_int()))),
        ('nd-list-get', lambda api: api.lib.MXNDListGet(
            None, 0, ctypes.byref(ctypes.c_char_p()), ctypes.byref(ctypes.c_void_p()),
            ctypes.byref(ctypes.c_void_p()), ctypes.byref(mx_uint()))),
        ('set-monitor', lambda api: api.lib.MXPredSetMonitorCallback(None, None, None, False))]:
    c_case(f'null-handle/{name}', r'(predictor|list) handle is NULL',
           lambda api, call=call: api.check(call(api)))

# --------------------------------------------------------------------------
# The Python package.


def py_case(name, expected, action):
    PY_CASES.append((name, action, expected))


def predictor(symbol=None, params=None, **kwargs):
    from mxlite import Predictor
    return Predictor(symbol if symbol is not None else CASE.symbol_json,
                     params if params is not None else CASE.params, **kwargs)


PY_SYMBOLS = [
    ('bad-json', '{"nodes": [', 'JSON'),
    ('deep-array', '[' * 100000 + ']' * 100000, 'nesting too deep'),
    ('unknown-op', edited(set_node('c2', 'op', 'FancyConvolution')), 'FancyConvolution'),
    ('internal-op', edited(set_node('c2', 'op', '_FusedConvolution')), '_FusedConvolution'),
    ('unknown-attr', edited(set_attr('c2', 'wiggle', '3')), "unknown attribute 'wiggle'"),
    ('bad-kernel', edited(set_attr('c2', 'kernel', '(3, x)')), "attribute 'kernel'"),
    ('cycle', edited(make_cycle), 'come before'),
    ('head-out-of-range', edited(lambda g: g.__setitem__('heads', [[99, 0, 0]])), r'head|99'),
    ('nodes-missing', edited(set_key('nodes', MISSING)), 'missing "nodes"'),
    ('nodes-is-string', edited(set_key('nodes', 'x')), 'nodes'),
    ('softmax-temperature-nan', edited(set_attr('prob', 'temperature', 'nan')), 'temperature'),
    ('version-1e300', CASE.symbol_json.replace('10901', '1e300'), 'mxnet_version'),
]
for label, symbol, expected in PY_SYMBOLS:
    py_case(f'py-symbol/{label}', expected, lambda symbol=symbol: predictor(symbol=symbol))
for label, params, expected in [
        ('truncated', CASE.params[:-7], 'params: truncated'),
        ('truncated-100', CASE.params[:100], 'params: truncated'),
        ('bad-magic', b'\x13' + CASE.params[1:], 'not an MXNet NDArray file'),
        ('dtype-99', one_array(dtype_flag=99), 'dtype'),
        ('other-model', OPS['multi_head'].params, "provides none of the model's"),
        ('json', CASE.symbol_json.encode(), 'not an MXNet NDArray file'),
        ('sparse', one_array(stype=2), 'stored as csr; mxlite supports dense arrays only')]:
    py_case(f'py-params/{label}', expected, lambda params=params: predictor(params=params))
for label, kwargs, expected in [
        ('shape-zero', {'input_shapes': {'data': (0, 3, 8, 8)}}, 'dimensions must be positive'),
        ('shape-negative', {'input_shapes': {'data': (-2, 3, 8, 8)}}, r'data|negative|positive'),
        ('shape-huge', {'input_shapes': {'data': (2 ** 40, 3, 8, 8)}},
         r'data|large|range|out of memory|over the memory budget'),
        ('shape-rank-2', {'input_shapes': {'data': (1, 3)}}, "input 'data'"),
        ('shape-rank-40', {'input_shapes': {'data': (1,) * 40}}, r"'data'|dim"),
        ('shape-unknown', {'input_shapes': {'label': (1,)}}, 'not an input of this model'),
        ('shape-float', {'input_shapes': {'data': (1.5, 3)}}, 'sequence of integers'),
        ('shape-string', {'input_shapes': {'data': 'abc'}}, 'sequence of integers'),
        ('shapes-list', {'input_shapes': [1, 3, 8, 8]}, 'must be a dict'),
        ('outputs-unknown', {'outputs': ['nope']}, "no output named 'nope'"),
        ('outputs-empty', {'outputs': []}, 'non-empty list of output names'),
        ('threads-zero', {'threads': 0}, 'threads must be a positive integer'),
        ('threads-negative', {'threads': -3}, 'threads must be a positive integer'),
        ('threads-string', {'threads': 'many'}, 'threads')]:
    py_case(f'py-create/{label}', expected, lambda kwargs=kwargs: predictor(**kwargs))
py_case('py-create/symbol-int', 'symbol_json must be str, bytes',
        lambda: predictor(symbol=12345))
py_case('py-create/params-str', 'params must be bytes', lambda: predictor(params='x'))


def bound_predictor():
    return predictor(input_shapes={'data': (2, 3, 8, 8)})


X = np.zeros((2, 3, 8, 8), np.float32)
for label, call, expected in [
        ('missing-input', lambda p: p(), "missing input.*'data'"),
        ('unknown-input', lambda p: p(images=X), "'images' is not an input"),
        ('wrong-shape', lambda p: p(data=X[:1]), 'call reshape'),
        ('complex', lambda p: p(data=X.astype(np.complex128)), 'dtype complex128'),
        ('strings', lambda p: p(data=np.full((2, 3, 8, 8), 'x')), "has dtype <U"),
        ('ragged', lambda p: p(data=[[1, 2], [3]]), 'cannot make an array'),
        ('positional', lambda p: p(X, X), 'give inputs by name'),
        ('reshape-zero', lambda p: p.reshape(data=(0, 3, 8, 8)), 'dimensions must be positive'),
        ('reshape-rank-2', lambda p: p.reshape(data=(1, 3)), "input 'data'"),
        ('reshape-unknown', lambda p: p.reshape(label=(1,)), 'not an input'),
        ('reshape-huge', lambda p: p.reshape(data=(2 ** 40, 3, 8, 8)),
         r'data|large|range|out of memory|over the memory budget'),
        ('with-outputs-unknown', lambda p: p.with_outputs('nope'), "nope")]:
    py_case(f'py-call/{label}', expected, lambda call=call: call(bound_predictor()))


# --------------------------------------------------------------------------
# The tests.
