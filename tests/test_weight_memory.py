"""Prepared weights kept once per model, and the compact_weights option.

Every executor of a model shares what operators prepare from the parameters
(operators/prepared_cache.h), so a further MXPredCreateMultiThread handle
costs its activations, not another packed copy of the weights; under
compact_weights convolutions read the parameters in place, so one predictor
holds about one copy of the params file. Numbers against MXNet's outputs,
memory measured as resident set size in a child process
(scripts/bench/handle_memory.py, which BENCHMARKS.md's table comes from).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, ZOO_DIR, assert_close, load_cases

CASES = {case.name: case for case in load_cases(ZOO_DIR)} if os.path.isdir(ZOO_DIR) else {}
COMPACT = {'compact_weights': '1'}
# Issue 32's bounds: an extra handle at most its activations plus a quarter
# of the params file; a compact predictor at most 1.2x the params file plus
# its planned activations.
EXTRA_HANDLE_PARAMS_SHARE = 0.25
COMPACT_PARAMS_FACTOR = 1.2


def zoo_case(name):
    assert name in CASES, f'{name} missing from {ZOO_DIR}: run scripts/run_tests.sh'
    return CASES[name]


def run_handles(api, handles, inputs, count):
    outputs = []
    for handle in handles:
        for key, value in inputs.items():
            api.set_input(handle, key, value.astype(np.float32))
        api.forward(handle)
        outputs.append([api.output(handle, i) for i in range(count)])
    return outputs


@pytest.mark.parametrize('name', ['resnet18_v1', 'resnet50_v2', 'mobilenet1.0',
                                  'mobilenetv2_1.0', 'squeezenet1.1', 'densenet121',
                                  'inceptionv3', 'alexnet'])
def test_compact_weights_match_mxnet(api, name):
    """Convolutions reading the parameters in place, a fused BatchNorm as a
    scale of the output: MXNet's numbers on every zoo family (vgg11 is left
    to test_zoo: its 500 MB of weights take the same kernels as alexnet)."""
    case = zoo_case(name)
    inputs, expected = case.io()
    shapes = {key: value.shape for key, value in inputs.items()}
    [handle] = api.create_with_options(case.symbol_json, case.params, shapes, COMPACT)
    try:
        [outputs] = run_handles(api, [handle], inputs, len(expected))
    finally:
        api.free(handle)
    for got, want in zip(outputs, expected):
        assert_close(got, want, case.rtol, name)


@pytest.mark.parametrize('options', [{}, COMPACT])
def test_handles_share_prepared_weights_and_match(api, options):
    """Four MultiThread handles (one prepared copy) and a reshape to batch 2
    (the kernels prepared at batch 1 serve it) all give MXNet's output."""
    case = zoo_case('resnet18_v1')
    inputs, expected = case.io()
    shapes = {key: value.shape for key, value in inputs.items()}
    handles = api.create_with_options(case.symbol_json, case.params, shapes, options,
                                      num_handles=4)
    try:
        for outputs in run_handles(api, handles, inputs, 1):
            assert_close(outputs[0], expected[0], case.rtol, 'MultiThread handle')
        data = inputs['data']
        pair = api.reshape(handles[0], {'data': (2,) + data.shape[1:]})
        try:
            [[output]] = run_handles(api, [pair], {'data': np.concatenate([data, data])}, 1)
            for row in output:
                assert_close(row[None], expected[0], case.rtol, 'batch 2 after reshape')
        finally:
            api.free(pair)
    finally:
        for handle in handles:
            api.free(handle)


def measure(prefix, options):
    library = os.environ.get('MXLITE_LIBRARY')
    command = [sys.executable, os.path.join(ROOT, 'scripts', 'bench', 'handle_memory.py'),
               '--child', prefix, '--handles', '4',
               '--options', ','.join(f'{k}={v}' for k, v in options.items())]
    if library:
        command += ['--library', library]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def planned_mib(case):
    from mxlite._core import memory_report
    inputs, _ = case.io()
    report = memory_report(case.symbol_json, {k: v.shape for k, v in inputs.items()}, fuse=True)
    return report['planned_bytes'] / 2**20


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='reads /proc/self/statm')
def test_resident_memory_per_handle_and_compact():
    """resnet18_v1, one thread: each further handle costs at most its
    activations plus 0.25x the params file; a compact predictor at most
    1.2x the params file plus its plan, above the process baseline."""
    case = zoo_case('resnet18_v1')
    prefix = os.path.join(ZOO_DIR, 'resnet18_v1')
    plan = planned_mib(case)
    default = measure(prefix, {'threads': 1})
    params = default['params_mib']
    assert default['per_extra_handle_mib'] <= plan + EXTRA_HANDLE_PARAMS_SHARE * params, default
    compact = measure(prefix, {'threads': 1, **COMPACT})
    assert compact['one_predictor_mib'] <= COMPACT_PARAMS_FACTOR * params + plan, compact
    assert compact['per_extra_handle_mib'] <= plan + EXTRA_HANDLE_PARAMS_SHARE * params, compact
    # The option does what it says: less than the default's prepared copies.
    assert compact['one_predictor_mib'] < default['one_predictor_mib'], (compact, default)


def test_float16_parameters_converted_once_and_shared(api):
    """A float16 checkpoint: its parameters are converted to float32 once,
    into copies the model's executors share (MXPredReshape to the same
    shape makes a second one); both give MXNet's output."""
    from test_ops import CASES as OP_CASES, DTYPE_FLAGS
    case = next(c for c in OP_CASES if c.name == 'dtype_float16_cnn')
    inputs, expected = case.io()
    handle = api.create(case.symbol_json, case.params, {k: v.shape for k, v in inputs.items()},
                        dtypes={k: DTYPE_FLAGS[v] for k, v in case.meta['input_dtypes'].items()})
    try:
        twin = api.reshape(handle, {k: v.shape for k, v in inputs.items()})
        try:
            for run in range(2):  # a second pass reads the copies converted once
                for h in (handle, twin):
                    for key, value in inputs.items():
                        api.set_input(h, key, value)
                    api.forward(h)
                    assert_close(api.output(h, 0), expected[0], case.rtol, f'pass {run}')
        finally:
            api.free(twin)
    finally:
        api.free(handle)



def test_float32_copies_count_in_the_memory_budget(api, monkeypatch):
    """A float16 network computes on float32 copies of its arrays; those
    count in the memory budget before each is made."""
    import mxlite
    from capi import CAPIError
    from test_ops import CASES as OP_CASES, DTYPE_FLAGS
    case = next(c for c in OP_CASES if c.name == 'dtype_float16_cnn')
    inputs, expected = case.io()
    batch = 64
    shapes = {k: (batch,) + v.shape[1:] for k, v in inputs.items()}
    dtypes = case.meta['input_dtypes']
    # The batch whole: one image at a time (tests/test_split_batch.py) needs far less.
    monkeypatch.setenv('MXLITE_SPLIT_BATCH', '0')
    stats = mxlite.Predictor(case.symbol_json, case.params, shapes, threads=1,
                             input_dtypes=dtypes).memory_stats()
    assert stats['float32_copy_bytes'] > stats['arena_bytes'], stats
    io_bytes = (sum(v.nbytes for v in inputs.values()) +
                sum(v.nbytes for v in expected)) * batch // inputs['data'].shape[0]
    activations = stats['arena_bytes'] + io_bytes
    flags = {k: DTYPE_FLAGS[v] for k, v in dtypes.items()}
    monkeypatch.setenv('MXLITE_NUM_THREADS', '1')
    monkeypatch.setenv('MXLITE_MEMORY_BUDGET',
                       str(activations + stats['float32_copy_bytes'] // 2))
    with pytest.raises(CAPIError, match='for its activations and their float32 copies .*'
                                        'over the memory budget'):
        api.create(case.symbol_json, case.params, shapes, dtypes=flags)
    monkeypatch.setenv('MXLITE_MEMORY_BUDGET', str(
        activations + stats['float32_copy_bytes'] + stats['prepared_bytes'] +
        stats['workspace_bytes'] + 4096))
    api.free(api.create(case.symbol_json, case.params, shapes, dtypes=flags))

def computed_weight_graph():
    """conv(data, weight = w * k), w a parameter, k an input, no bias."""
    nodes = [{'op': 'null', 'name': 'data', 'inputs': []},
             {'op': 'null', 'name': 'w', 'inputs': []},
             {'op': 'null', 'name': 'k', 'inputs': []},
             {'op': 'broadcast_mul', 'name': 'scaled', 'inputs': [[1, 0, 0], [2, 0, 0]]},
             {'op': 'Convolution', 'name': 'conv',
              'attrs': {'kernel': '(3, 3)', 'num_filter': '4', 'no_bias': 'True'},
              'inputs': [[0, 0, 0], [3, 0, 0]]}]
    return json.dumps({'nodes': nodes, 'arg_nodes': [0, 1, 2], 'heads': [[4, 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})


@pytest.mark.parametrize('options', [{}, COMPACT])
def test_weights_the_graph_computes_are_read_on_every_run(api, options):
    """A convolution whose weights change between runs uses each run's
    weights: doubling them doubles the output, exactly (scaling by 2 is
    exact in float arithmetic)."""
    from ndfile import save
    rng = np.random.default_rng(3)
    data = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    weight = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    [handle] = api.create_with_options(computed_weight_graph(), save({'arg:w': weight}),
                                       {'data': data.shape, 'k': (1,)}, options)
    try:
        outputs = []
        for k in (1.0, 2.0):
            api.set_input(handle, 'data', data)
            api.set_input(handle, 'k', np.array([k], np.float32))
            api.forward(handle)
            outputs.append(api.output(handle, 0))
        np.testing.assert_array_equal(outputs[1], 2 * outputs[0])
        assert np.abs(outputs[0]).max() > 0
    finally:
        api.free(handle)


def test_overwritten_weight_is_not_served_from_the_cache(api):
    """MXPredSetInput on a parameter (MXNet allows it) reaches the prepared
    kernels, also when another handle of the model prepared them first and
    still holds them: the result is that of a fresh model given the same
    weight before its first run."""
    case = zoo_case('resnet18_v1')
    inputs, _ = case.io()
    shapes = {key: value.shape for key, value in inputs.items()}
    name = 'resnetv10_conv0_weight'
    weight = np.random.default_rng(5).standard_normal((64, 3, 7, 7)).astype(np.float32)
    first, second = api.create_with_options(case.symbol_json, case.params, shapes, {},
                                            num_handles=2)
    [fresh] = api.create_with_options(case.symbol_json, case.params, shapes, {})
    try:
        run_handles(api, [first, second], inputs, 1)
        api.set_input(second, name, weight)
        api.set_input(fresh, name, weight)
        [[changed], [want]] = run_handles(api, [second, fresh], inputs, 1)
        np.testing.assert_array_equal(changed, want)
    finally:
        for handle in (first, second, fresh):
            api.free(handle)


def test_prepared_weights_count_in_the_memory_budget(api):
    """The packed and Winograd-transformed copies of the weights count in the
    memory budget, as the activations do: a budget that holds resnet18_v1's
    activations and scratch but not its prepared weights is refused, naming
    them, and the same budget holds the model under compact_weights."""
    import mxlite
    from capi import CAPIError
    case = zoo_case('resnet18_v1')
    inputs, expected = case.io()
    shapes = {key: value.shape for key, value in inputs.items()}
    stats = mxlite.Predictor(case.symbol_json, case.params, shapes, threads=1).memory_stats()
    compact = mxlite.Predictor(case.symbol_json, case.params, shapes, threads=1,
                               options=COMPACT).memory_stats()
    # Winograd keeps 36/9 of each 3x3 layer's weights; compact keeps only
    # biases and BatchNorm scales.
    assert stats['prepared_bytes'] > 1.5 * stats['param_bytes'], stats
    assert compact['prepared_bytes'] < 0.01 * compact['param_bytes'], compact
    io_bytes = sum(value.nbytes for value in inputs.values()) + expected[0].nbytes
    without_prepared = (stats['arena_bytes'] + io_bytes +
                        max(stats['workspace_bytes'], compact['workspace_bytes']))
    budget = {'memory_budget': str(without_prepared + stats['prepared_bytes'] // 2),
              'threads': '1'}
    with pytest.raises(CAPIError, match=r'needs [0-9.]+ MiB for its activations and prepared '
                                        r'weights .*over the memory budget'):
        api.create_with_options(case.symbol_json, case.params, shapes, budget)
    [handle] = api.create_with_options(case.symbol_json, case.params, shapes,
                                       {**budget, **COMPACT})
    try:
        [outputs] = run_handles(api, [handle], inputs, 1)
        assert_close(outputs[0], expected[0], case.rtol, 'compact, within the budget')
    finally:
        api.free(handle)
    enough = {'memory_budget': str(without_prepared + stats['prepared_bytes'] + (1 << 20)),
              'threads': '1'}
    [handle] = api.create_with_options(case.symbol_json, case.params, shapes, enough)
    api.free(handle)
