"""Runtime options (predict/base/options.h): set per predictor from C
(MXLitePredCreateWithOptions in mxlite.h), from Python (options=) and from
the environment, in one process; the memory budget; shared thread pools;
docs/options.md against the runtime's own list."""
import os
import re
import threading
import time

import numpy as np
import pytest

import mxlite
from capi import CAPIError
from conftest import FIXTURES, ROOT, ZOO_DIR, load_cases

CASES = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}
NET = CASES['composite_net']


def zoo_case(name):
    cases = {case.name: case for case in load_cases(ZOO_DIR)}
    assert name in cases, f'{name} missing from {ZOO_DIR}: run scripts/run_tests.sh'
    return cases[name]


def run_handle(api, handle, inputs):
    for name, value in inputs.items():
        api.set_input(handle, name, value.astype(np.float32))
    api.forward(handle)
    return api.output(handle, 0)


def predict_with(api, options, case=NET):
    inputs, expected = case.io()
    shapes = {name: value.shape for name, value in inputs.items()}
    [handle] = api.create_with_options(case.symbol_json, case.params, shapes, options)
    try:
        return run_handle(api, handle, inputs), expected[0]
    finally:
        api.free(handle)


@pytest.mark.parametrize('options', [
    {},
    {'threads': 2, 'share_threads': 0, 'spin_ms': 0},
    {'threads': 3, 'share_threads': 'on'},
    {'winograd': 'false', 'shifted_gemm': 'off'},
    {'graph_optimization': 0},
    {'memory_budget': '1G'},
])
def test_c_api_options_keep_mxnets_numbers(api, options):
    out, expected = predict_with(api, options)
    np.testing.assert_allclose(out, expected, rtol=NET.rtol, atol=NET.rtol)


@pytest.mark.parametrize('name, value, message', [
    ('thread', '2', "unknown option 'thread' (options: threads, spin_ms"),
    ('threads', '-1', "option threads: invalid value '-1' (expected integer >= 0)"),
    ('threads', 'two', "option threads: invalid value 'two'"),
    ('spin_ms', '1.5', "option spin_ms: invalid value '1.5'"),
    ('winograd', 'maybe', "option winograd: invalid value 'maybe' (expected switch)"),
    ('profile', '3', "option profile: invalid value '3' (expected 0, 1 or 2)"),
    ('memory_budget', '12T', "option memory_budget: invalid value '12T'"),
    ('memory_budget', '99999999999999999999', 'option memory_budget: invalid value'),
    ('memory_budget', '17179869184G', 'option memory_budget: invalid value'),
    ('memory_budget', '', "option memory_budget: invalid value ''"),
])
def test_bad_options_are_errors_naming_them(api, name, value, message):
    inputs, _ = NET.io()
    shapes = {k: v.shape for k, v in inputs.items()}
    with pytest.raises(CAPIError, match=re.escape(message)):
        api.create_with_options(NET.symbol_json, NET.params, shapes, {name: value})


def test_memory_budget_is_checked_before_allocating(api):
    inputs, _ = NET.io()
    shapes = {'data': (64,) + inputs['data'].shape[1:]}
    with pytest.raises(CAPIError, match=r'needs [0-9.]+ KiB for its inputs, intermediate results '
                                        r'and outputs, over the memory budget of 64.0 KiB'):
        api.create_with_options(NET.symbol_json, NET.params, shapes, {'memory_budget': '64K'})
    # The same shapes within a budget that holds them.
    [handle] = api.create_with_options(NET.symbol_json, NET.params, shapes,
                                       {'memory_budget': '256M'})
    api.free(handle)


def test_default_budget_refuses_a_shape_no_machine_holds(api):
    # 3 x 2^20 x 2^20 float32 is 12 TiB: refused from the plan, with nothing
    # allocated (before the budget, this reserved the address space and a
    # 50000 x 50000 input passed MXPredCreate on a 23 GB machine).
    with pytest.raises(CAPIError, match='over the memory budget'):
        api.create(NET.symbol_json, NET.params, {'data': (1, 3, 1 << 20, 1 << 20)})
    # The 50000 x 50000 image (30 GB of input alone) under a 16 GiB budget.
    with pytest.raises(CAPIError, match='over the memory budget of 16.00 GiB'):
        api.create_with_options(NET.symbol_json, NET.params, {'data': (1, 3, 50000, 50000)},
                                {'memory_budget': '16G'})


def test_environment_sets_options_and_explicit_ones_win(api, monkeypatch):
    inputs, _ = NET.io()
    shapes = {'data': (64,) + inputs['data'].shape[1:]}
    monkeypatch.setenv('MXLITE_MEMORY_BUDGET', '64K')
    with pytest.raises(CAPIError, match='over the memory budget of 64.0 KiB'):
        api.create(NET.symbol_json, NET.params, shapes)
    [handle] = api.create_with_options(NET.symbol_json, NET.params, shapes,
                                       {'memory_budget': '256M'})
    api.free(handle)
    monkeypatch.setenv('MXLITE_MEMORY_BUDGET', 'lots')
    with pytest.raises(CAPIError, match="environment variable MXLITE_MEMORY_BUDGET: option "
                                        "memory_budget: invalid value 'lots'"):
        api.create(NET.symbol_json, NET.params, shapes)


def test_several_handles_share_weights_and_run_concurrently(api):
    inputs, expected = NET.io()
    shapes = {k: v.shape for k, v in inputs.items()}
    handles = api.create_with_options(NET.symbol_json, NET.params, shapes,
                                      {'spin_ms': 0}, num_handles=3)
    results = [None] * len(handles)

    def work(index):
        results[index] = [run_handle(api, handles[index], inputs) for _ in range(5)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(handles))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for handle in handles:
        api.free(handle)
    for runs in results:
        for out in runs:
            np.testing.assert_allclose(out, expected[0], rtol=NET.rtol, atol=NET.rtol)


def thread_count():
    """Threads of this process, once threads that were joined have left
    /proc (a joined Python thread's OS thread may linger a moment)."""
    count = len(os.listdir('/proc/self/task'))
    for _ in range(40):
        time.sleep(0.05)
        now = len(os.listdir('/proc/self/task'))
        if now == count:
            break
        count = now
    return count


@pytest.mark.skipif(not os.path.isdir('/proc/self/task'), reason='counts threads in /proc')
def test_predictors_share_one_pool_unless_asked_not_to(api):
    inputs, _ = NET.io()
    shapes = {k: v.shape for k, v in inputs.items()}
    # An unusual thread count, so that no earlier test's pool is reused.
    before = thread_count()
    shared = [api.create_with_options(NET.symbol_json, NET.params, shapes,
                                      {'threads': 5, 'spin_ms': 0})[0] for _ in range(4)]
    assert thread_count() - before == 4  # one pool: the caller plus 4 workers
    own = [api.create_with_options(NET.symbol_json, NET.params, shapes,
                                   {'threads': 5, 'spin_ms': 0, 'share_threads': 0})[0]
           for _ in range(2)]
    assert thread_count() - before == 4 + 2 * 4
    for handle in shared + own:
        api.free(handle)
    assert thread_count() == before


def test_python_options(tmp_path):
    inputs, expected = NET.io()
    for options in ({'threads': 2, 'winograd': False, 'spin_ms': 0},
                    {'graph_optimization': '0', 'memory_budget': 1 << 30}):
        predictor = mxlite.Predictor(NET.symbol_json, NET.params, options=options)
        np.testing.assert_allclose(predictor.predict(**inputs), expected[0],
                                   rtol=NET.rtol, atol=NET.rtol)
    with pytest.raises(mxlite.MXLiteError, match="unknown option 'winograd_4x4'"):
        mxlite.Predictor(NET.symbol_json, NET.params, options={'winograd_4x4': 0})
    with pytest.raises(mxlite.MXLiteError, match='option spin_ms: invalid value -5'):
        mxlite.Predictor(NET.symbol_json, NET.params, options={'spin_ms': -5})
    with pytest.raises(mxlite.MXLiteError, match='options must be a dict'):
        mxlite.Predictor(NET.symbol_json, NET.params, options=[('threads', 1)])
    # A lazily bound predictor checks the budget when the first arrays come.
    predictor = mxlite.Predictor(NET.symbol_json, NET.params, options={'memory_budget': '64K'})
    big = np.zeros((64,) + inputs['data'].shape[1:], np.float32)
    with pytest.raises(mxlite.MXLiteError, match='over the memory budget of 64.0 KiB'):
        predictor.predict(data=big)


def test_algorithm_switches_change_the_kernel_in_one_process(capfd):
    # The options reach the convolution's choice: with profile 1 each
    # predictor prints the kernels it ran when freed.
    case = zoo_case('resnet18_v1')
    data = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    kernels = {}
    outputs = {}
    for winograd in (True, False):
        predictor = mxlite.Predictor.load(case.path(''), input_shapes={'data': data.shape},
                                          options={'winograd': winograd, 'profile': 1,
                                                   'threads': 1})
        outputs[winograd] = predictor.predict(data=data)[0]
        del predictor
        kernels[winograd] = capfd.readouterr().err
    assert 'winograd' in kernels[True], kernels[True]
    assert 'winograd' not in kernels[False], kernels[False]
    np.testing.assert_allclose(outputs[False], outputs[True], rtol=1e-4, atol=1e-4)


def test_docs_list_every_option():
    with open(os.path.join(ROOT, 'docs', 'options.md'), encoding='utf-8') as f:
        text = f.read()
    rows = re.findall(r'^\| `(\w+)` \| `(\w+)` \| ([^|]+) \| ([^|]+) \|$', text, re.M)
    assert [(name, env, values.strip(), meaning.strip()) for name, env, values, meaning in rows] \
        == [(o['name'], o['environment'], o['values'], o['meaning'])
            for o in mxlite.runtime_options()]
