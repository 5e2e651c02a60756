"""Each of the 17 C predict API functions, with MXNet 1.9.1's semantics.

Expected numbers come from the oracle fixtures, or from arithmetic on them
(e.g. relu and sigmoid of an internal output that MXNet computed both heads
from).
"""
import ctypes
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

from capi import MONITOR_CALLBACK, CAPIError
from conftest import FIXTURES, HERE, assert_close, load_cases

CASES = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}
EXPORTED = ['MXGetLastError', 'MXPredCreate', 'MXPredCreateEx', 'MXPredCreatePartialOut',
            'MXPredCreateMultiThread', 'MXPredReshape', 'MXPredGetOutputShape',
            'MXPredGetOutputType', 'MXPredSetInput', 'MXPredForward', 'MXPredPartialForward',
            'MXPredGetOutput', 'MXPredFree', 'MXPredSetMonitorCallback', 'MXNDListCreate',
            'MXNDListGet', 'MXNDListFree']
# mxlite's extensions (mxlite.h), exported beside MXNet's functions.
EXTENSIONS = ['MXLitePredCreateWithOptions']


@pytest.fixture
def composite():
    case = CASES['composite_net']
    inputs, expected = case.io()
    return case, inputs['data'], expected[0]


def run(api, handle, data):
    api.set_input(handle, 'data', data)
    api.forward(handle)
    return api.output(handle, 0)


def test_library_exports_all_17_functions(api):
    for name in EXPORTED:
        assert hasattr(api.lib, name), name


def test_create_forward_get_output(api, composite):
    case, data, expected = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    try:
        assert api.output_shape(handle, 0) == expected.shape
        assert_close(run(api, handle, data), expected, case.rtol)
        # A second forward with the same handle gives the same answer.
        assert_close(run(api, handle, data), expected, case.rtol)
    finally:
        api.free(handle)


def test_create_ex_float32_dtype(api, composite):
    case, data, expected = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape}, dtypes={'data': 0})
    try:
        assert api.output_type(handle, 0) == 0
        assert_close(run(api, handle, data), expected, case.rtol)
    finally:
        api.free(handle)


def test_create_ex_unknown_dtype_flag(api, composite):
    case, data, _ = composite
    with pytest.raises(CAPIError, match="argument 'data': unknown dtype flag 77"):
        api.create(case.symbol_json, case.params, {'data': data.shape}, dtypes={'data': 77})


def test_get_output_type_writes_only_out_dtype(api):
    case = CASES['multi_head']
    inputs, _ = case.io()
    handle = api.create(case.symbol_json, case.params, {'data': inputs['data'].shape})
    try:
        # MXNet wrote out_dtype[index]; mxlite writes *out_dtype.
        slots = (ctypes.c_int * 2)(-7, -7)
        api.check(api.lib.MXPredGetOutputType(handle, ctypes.c_uint32(1), slots))
        assert list(slots) == [0, -7]
        with pytest.raises(CAPIError, match='output index 2 is out of range'):
            api.output_type(handle, 2)
    finally:
        api.free(handle)


def test_partial_out_selects_internal_outputs(api):
    case = CASES['multi_head']
    inputs, (relu_head, sigmoid_head) = case.io()
    handle = api.create(case.symbol_json, case.params, {'data': inputs['data'].shape},
                        output_keys=['conv0', 'relu0'])
    try:
        conv = run(api, handle, inputs['data'])
        relu = api.output(handle, 1)
        assert_close(np.maximum(conv, 0), relu_head, 1e-6, 'relu of conv0_output')
        assert_close(1 / (1 + np.exp(-conv.astype(np.float64))), sigmoid_head, 1e-5,
                     'sigmoid of conv0_output')
        assert_close(relu, relu_head, 1e-6, 'relu0_output')
    finally:
        api.free(handle)


def test_partial_out_unknown_key(api):
    case = CASES['multi_head']
    with pytest.raises(CAPIError, match="no internal output named 'nope_output'"):
        api.create(case.symbol_json, case.params, {'data': (2, 3, 7, 9)}, output_keys=['nope'])


def test_multi_thread_handles_run_concurrently(api, composite):
    case, data, expected = composite
    handles = api.create_multi(case.symbol_json, case.params, {'data': data.shape}, 4)
    rng = np.random.default_rng(0)
    batches = [data] + [rng.standard_normal(data.shape).astype(np.float32) for _ in range(3)]
    # Reference answers, one handle at a time.
    references = [run(api, handles[0], batch) for batch in batches]
    assert_close(references[0], expected, case.rtol)
    results = [None] * 4

    def worker(i):
        for _ in range(20):
            results[i] = run(api, handles[i], batches[i])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for result, reference in zip(results, references):
        np.testing.assert_array_equal(result, reference)
    for handle in handles:
        api.free(handle)


def test_reshape_makes_a_new_handle_and_keeps_the_old(api, composite):
    case, data, expected = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    single = api.reshape(handle, {'data': (1,) + data.shape[1:]})
    try:
        assert api.output_shape(single, 0) == (1,) + expected.shape[1:]
        assert_close(run(api, single, data[1:2]), expected[1:2], case.rtol, 'reshaped')
        assert_close(run(api, handle, data), expected, case.rtol, 'original')
        # The two share intermediate memory (as in MXNet): taking turns is fine.
        assert_close(run(api, single, data[0:1]), expected[0:1], case.rtol, 'reshaped again')
        assert_close(run(api, handle, data), expected, case.rtol, 'original again')
        # Growing past the original allocates anew.
        big = api.reshape(single, {'data': (4,) + data.shape[1:]})
        try:
            assert_close(run(api, big, np.concatenate([data, data]))[2:],
                         expected, case.rtol, 'grown')
        finally:
            api.free(big)
        assert_close(run(api, handle, data), expected, case.rtol, 'original after growth')
    finally:
        api.free(single)
        api.free(handle)


def test_reshape_rejects_unknown_input(api, composite):
    case, data, _ = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    try:
        with pytest.raises(CAPIError, match="cannot reshape 'c1_weight'"):
            api.reshape(handle, {'c1_weight': (1, 2)})
    finally:
        api.free(handle)


def test_partial_forward_steps_through_every_node(api, composite):
    case, data, expected = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    try:
        api.set_input(handle, 'data', data)
        steps = 0
        while True:
            left = api.partial_forward(handle, steps)
            steps += 1
            if left == 0:
                break
        assert steps == 27  # every node of composite_net, variables included
        assert_close(api.output(handle, 0), expected, case.rtol)
        assert api.partial_forward(handle, 1000) == 0
    finally:
        api.free(handle)


def test_monitor_callback_sees_every_operator(api, composite):
    case, data, _ = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    seen = []
    callback = MONITOR_CALLBACK(lambda name, array, user: seen.append(name.decode()))
    try:
        api.set_monitor(handle, callback)
        run(api, handle, data)
        # Hidden outputs (BatchNorm's mean and var) are reported too, as in MXNet.
        assert seen == ['c1_output', 'b1_output', 'b1_mean', 'b1_var', 'r1_output',
                        'p1_output', 'c2_output', 'b2_output', 'b2_mean', 'b2_var',
                        'add0_output', 'r2_output', 'gp_output', 'flat_output', 'fc_output',
                        'prob_output']
        seen.clear()
        api.set_monitor(handle, callback, monitor_all=True)
        run(api, handle, data)
        assert seen[:4] == ['c1_data', 'c1_weight', 'c1_bias', 'c1_output']
    finally:
        api.free(handle)


def test_set_input_may_overwrite_a_weight(api):
    case = CASES['multi_head']
    inputs, _ = case.io()
    handle = api.create(case.symbol_json, case.params, {'data': inputs['data'].shape})
    try:
        api.set_input(handle, 'conv0_weight', np.zeros((5, 3, 3, 3), np.float32))
        api.set_input(handle, 'conv0_bias', np.full(5, 2.0, np.float32))
        api.set_input(handle, 'data', inputs['data'])
        api.forward(handle)
        np.testing.assert_allclose(api.output(handle, 0), 2.0)
    finally:
        api.free(handle)


def test_softmax_output_needs_no_label(api):
    case = CASES['softmax_output_2d']
    inputs, expected = case.io()
    assert 'softmax_label' not in inputs
    [out] = api.predict(case.symbol_json, case.params, inputs)
    assert_close(out, expected[0], case.rtol)


def test_last_error_is_per_failure(api, composite):
    case, data, _ = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    try:
        with pytest.raises(CAPIError):
            api.set_input(handle, 'nope', data)
        assert "cannot find input key 'nope'" in api.last_error()
    finally:
        api.free(handle)


def test_free_null_is_harmless(api):
    assert api.lib.MXPredFree(None) == 0
    assert api.lib.MXNDListFree(None) == 0


def test_gpu_device_is_refused(api, composite):
    # The library under test is the plain build (no CUDA backend): GPU 0 is
    # refused as such (tests/test_cuda_build.py has the CUDA build's errors).
    case, data, _ = composite
    with pytest.raises(CAPIError, match=re.escape(
            'GPU 0 is not available: this build of mxlite has no CUDA backend')):
        api.create(case.symbol_json, case.params, {'data': data.shape}, dev_type=2)
    for dev_type in (0, 4, 99, -1):
        with pytest.raises(CAPIError, match=f'dev_type {dev_type} is not available: mxlite runs '
                                            'on the CPU'):
            api.create(case.symbol_json, case.params, {'data': data.shape}, dev_type=dev_type)


# A child that predicts composite_net under an address-space limit with far
# more threads than the limit leaves stacks for (8 MiB each by default).
THREAD_LIMIT_CHILD = r'''
import resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from capi import API, load_library
from conftest import FIXTURES, load_cases
api = API(load_library())
case = {c.name: c for c in load_cases(FIXTURES + '/ops')}['composite_net']
inputs, expected = case.io()
with open('/proc/self/status', encoding='ascii') as f:
    vm_kib = next(int(line.split()[1]) for line in f if line.startswith('VmSize:'))
limit = vm_kib * 1024 + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
out = api.predict(case.symbol_json, case.params, {'data': inputs['data']})[0]
print('max error', float(np.max(np.abs(out - expected[0]))))
'''


@pytest.mark.parametrize('threads', ['64', '1000000000', '99999999999999999999'])
def test_refused_threads_do_not_abort(threads):
    # The pool runs with the threads the system lets it create (at most
    # 256): before, the first refused thread terminated the process
    # ("terminate called without an active exception"). The child sets
    # the limit after its imports, 256 MiB above the address space they took.
    if 'asan' in os.environ.get('LD_PRELOAD', ''):
        pytest.skip('AddressSanitizer maps its shadow memory on demand, '
                    'which an address-space limit breaks')
    result = subprocess.run(
        [sys.executable, '-c', THREAD_LIMIT_CHILD, HERE],
        env={**os.environ, 'MXLITE_NUM_THREADS': threads}, capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert float(result.stdout.split()[-1]) < 1e-4, result.stdout


def test_load_time_and_memory_grow_linearly_with_the_graph():
    # A chain of 100 000 relu nodes: above kMaxParallelSafeOperators (16384)
    # the planner used to add an ordering edge per earlier access of the one
    # in-place buffer (n^2 / 2), and loading did not finish in minutes. Each
    # size runs in a fresh child (scripts/bench/load_scaling.py), which
    # checks the output; 100x the nodes may take at most 1000x the time of
    # the small chain (linear is 100x, quadratic 10 000x) and under 1 GiB.
    sys.path.insert(0, os.path.join(HERE, '..', 'scripts', 'bench'))
    import load_scaling
    library = load_scaling.default_library()
    small = load_scaling.measure(library, 1000, timeout=120)
    large = load_scaling.measure(library, 100000, timeout=120)
    assert large['load_s'] < 1000 * max(small['load_s'], 0.005), (small, large)
    # AddressSanitizer's shadow memory and quarantine add about as much again
    # (1.2 GiB measured under test_sanitizers.py); the bound is the plain build's.
    if 'asan' not in os.environ.get('LD_PRELOAD', ''):
        assert large['peak_rss_mib'] < 1024, large


IN_USE = 'this predictor handle is in use by another thread'


def test_a_busy_handle_refuses_calls_from_other_threads(api, composite):
    # While a forward pass runs (the monitor callback is called inside it),
    # another thread's call on the same handle, or on a handle MXPredReshape
    # made from it (they share memory and threads), fails at once with -1
    # instead of racing; a handle of its own is unaffected. Freeing the busy
    # handle is refused too.
    case, data, expected = composite
    handle = api.create(case.symbol_json, case.params, {'data': data.shape})
    single = api.reshape(handle, {'data': (1,) + data.shape[1:]})
    other = api.create(case.symbol_json, case.params, {'data': data.shape})
    results = {}

    def from_another_thread():
        out = np.zeros(expected.size, np.float32)
        pointer = out.ctypes.data_as(ctypes.c_void_p)
        for name, call in [('forward', lambda: api.lib.MXPredForward(handle)),
                           ('get_output', lambda: api.lib.MXPredGetOutput(
                               handle, 0, pointer, expected.size)),
                           ('set_input', lambda: api.lib.MXPredSetInput(
                               handle, b'data', pointer, data.size)),
                           ('reshaped', lambda: api.lib.MXPredForward(single)),
                           ('free', lambda: api.lib.MXPredFree(handle))]:
            results[name] = (call(), api.last_error())
        try:
            results['other'] = run(api, other, data)
        except CAPIError as error:
            results['other'] = error

    def monitor(name, array, user):
        if not results:
            worker = threading.Thread(target=from_another_thread)
            worker.start()
            worker.join()

    callback = MONITOR_CALLBACK(monitor)
    try:
        api.set_monitor(handle, callback)
        assert_close(run(api, handle, data), expected, case.rtol)
        for name in ['forward', 'get_output', 'set_input', 'reshaped', 'free']:
            rc, message = results[name]
            assert rc == -1 and IN_USE in message and 'MXPredCreateMultiThread' in message, name
        assert_close(results['other'], expected, case.rtol, 'own handle')
        # Free again, the handles work from any thread, one at a time.
        assert_close(run(api, single, data[:1]), expected[:1], case.rtol, 'reshaped')
    finally:
        api.free(other)
        api.free(single)
        api.free(handle)


# Threads forwarding on one handle at once (what the header forbids), and on
# a handle MXPredReshape made from it. Every thread gives its handle the same
# input, so any output read back must be the right one: each call either
# works or is refused because the handle is busy, and never computes garbage.
CONCURRENT_USE_CHILD = r'''
import sys, threading
import numpy as np
sys.path.insert(0, sys.argv[1])
from capi import API, CAPIError, load_library
from conftest import FIXTURES, load_cases
api = API(load_library())
case = {c.name: c for c in load_cases(FIXTURES + '/ops')}['composite_net']
inputs, _ = case.io()
data = inputs['data']
handle = api.create(case.symbol_json, case.params, {'data': data.shape})
single = api.reshape(handle, {'data': (1,) + data.shape[1:]})
jobs = [(handle, data), (single, data[:1])]
references = []
for h, x in jobs:
    api.set_input(h, 'data', x)
    api.forward(h)
    references.append(api.output(h, 0))
counts = {'ok': 0, 'refused': 0, 'wrong': 0}
errors = []

def worker(h, x, reference):
    for _ in range(150):
        try:
            api.set_input(h, 'data', x)
            api.forward(h)
            out = api.output(h, 0)
        except CAPIError as error:
            if 'this predictor handle is in use by another thread' in str(error):
                counts['refused'] += 1
                continue
            errors.append(str(error))
            return
        counts['ok' if np.array_equal(out, reference) else 'wrong'] += 1

threads = [threading.Thread(target=worker, args=jobs[i % 2] + (references[i % 2],))
           for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(counts, errors)
'''


def test_concurrent_use_of_one_handle_never_gives_wrong_outputs():
    result = subprocess.run([sys.executable, '-c', CONCURRENT_USE_CHILD, HERE],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    counts = eval(result.stdout.split(' [')[0])  # noqa: S307 (the child's own dict)
    assert counts['wrong'] == 0 and counts['ok'] > 0, result.stdout
    assert result.stdout.rstrip().endswith('[]'), result.stdout
