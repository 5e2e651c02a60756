"""A corpus of malformed inputs, generated in code: each one is refused with a
message that names the problem, and nothing crashes or hangs.

Table-driven: every case is (name, action, expected) where action makes the
calls (through the C API via capi.py, or through the mxlite package) and
expected is a regular expression that the error message must contain. A C
API call that fails must return exactly -1 (not just non-zero). Everything
runs in the pytest process, as test_bad_input.py does, so a crash ends the
run; the few cases that could hang or exhaust the host (a 100 000-operator
graph, a 50000x50000 input) run in a child with a timeout and an
address-space limit.

docs/security.md records the number of cases (test_the_corpus_size checks
the count it quotes).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from capi import CAPIError, load_library
from conftest import HERE, ROOT
from malformed_cases import ACCEPTED, CASE, C_CASES, PY_CASES, StrictAPI


@pytest.fixture(scope='module')
def strict():
    return StrictAPI(load_library())


def test_the_corpus_size():
    """docs/security.md quotes these counts; keep them in step."""
    total = len(C_CASES) + len(PY_CASES) + len(CHILD_CASES) + len(ACCEPTED)
    with open(os.path.join(ROOT, 'docs', 'security.md'), encoding='utf-8') as f:
        doc = ' '.join(f.read().split())  # line breaks as spaces
    assert (f'{total} malformed inputs ({len(C_CASES)} through the C API and {len(PY_CASES)} '
            f'through Python that must fail, {len(ACCEPTED)} that MXNet accepts too, '
            f'{len(CHILD_CASES)} in child processes)') in doc, (total, len(C_CASES), len(PY_CASES),
                                                             len(ACCEPTED), len(CHILD_CASES))
    assert total >= 250
    names = [name for name, *_ in C_CASES + PY_CASES + CHILD_CASES + ACCEPTED]
    assert len(set(names)) == len(names), 'case names must be unique'


@pytest.mark.parametrize('name, action, expected', C_CASES, ids=[c[0] for c in C_CASES])
def test_c_api_refuses(strict, name, action, expected):
    with pytest.raises(CAPIError) as info:
        action(strict)
    message = str(info.value)
    assert message.strip(), 'a failure must carry a message'
    assert re.search(expected, message), f'{name}: message does not name the problem: {message}'


@pytest.mark.parametrize('name, action, expected', PY_CASES, ids=[c[0] for c in PY_CASES])
def test_python_refuses(name, action, expected):
    from mxlite import MXLiteError
    with pytest.raises(MXLiteError) as info:
        action()
    message = str(info.value)
    assert re.search(expected, message), f'{name}: message does not name the problem: {message}'


@pytest.mark.parametrize('name, action', ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted_as_mxnet_accepts(strict, name, action):
    action(strict)


def test_library_still_works_after_the_corpus(strict):
    inputs, expected = CASE.io()
    [out] = strict.predict(CASE.symbol_json, CASE.params, inputs)
    np.testing.assert_allclose(out, expected[0], rtol=0, atol=1e-5 * np.abs(expected[0]).max())


# --------------------------------------------------------------------------
# Cases that could hang or exhaust memory: each in a child process with a
# timeout and an address-space limit, so that a hang or an OOM kill fails the
# case instead of the host.

CHILD = r'''
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from capi import API, CAPIError, load_library
api = API(load_library())
with open('/proc/self/status', encoding='ascii') as f:
    vm_kib = next(int(line.split()[1]) for line in f if line.startswith('VmSize:'))
limit = vm_kib * 1024 + (int(sys.argv[3]) << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
exec(sys.argv[2])
'''

RELU_CHAIN = r'''
def chain(n, bad_at=None):
    nodes = [{'op': 'null', 'name': 'data', 'inputs': []}]
    for i in range(1, n + 1):
        op = 'NoSuchOp' if i == bad_at else 'Activation'
        nodes.append({'op': op, 'name': f'r{i}', 'attrs': {'act_type': 'relu'},
                      'inputs': [[i - 1, 0, 0]]})
    return json.dumps({'nodes': nodes, 'arg_nodes': [0], 'heads': [[n, 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})
'''

INPUT_50000 = r'''
import sys
sys.path.insert(0, sys.argv[1])
from conftest import FIXTURES, load_cases
case = {c.name: c for c in load_cases(FIXTURES + '/ops')}['act_relu']
try:
    handle = api.create(case.symbol_json, case.params, {'data': (50000, 50000)})
    print('created')
    api.free(handle)
except CAPIError as error:
    print('error', error)
'''

# (name, code run in the child, address space allowed in MiB above what the
# child's imports took, a regular expression its output must match)
CHILD_CASES = [
    ('graph-100000-operators-loads', RELU_CHAIN + r'''
import numpy as np
out = api.predict(chain(100000), b'', {'data': np.array([[-1.0, 2.0]], np.float32)})[0]
print('ok', out.tolist())
''', 2048, r'ok \[\[0\.0, 2\.0\]\]'),
    ('graph-100000-operators-bad-last', RELU_CHAIN + r'''
try:
    api.create(chain(100000, bad_at=99999), b'', {'data': (1, 2)})
except CAPIError as error:
    print('error', error)
''', 2048, r"error .*node 'r99999': operator 'NoSuchOp' is not supported"),
    ('graph-100000-operators-cycle', RELU_CHAIN + r'''
graph = json.loads(chain(100000))
graph['nodes'][1]['inputs'] = [[100000, 0, 0]]
try:
    api.create(json.dumps(graph), b'', {'data': (1, 2)})
except CAPIError as error:
    print('error', error)
''', 2048, r'error .*come before'),
    ('input-50000x50000', INPUT_50000, 1024, r'error .*(memory|allocat|too large|budget)'),
    # Without an address-space limit: the host's overcommit may let the
    # arena be reserved (10 GB, never touched without a forward pass), or
    # refuse it; either way the process lives.
    ('input-50000x50000-no-limit', INPUT_50000, 1 << 30, r'created|error .*(out of memory|over the memory budget)'),
    ('conv-input-50000x50000', r'''
import sys
sys.path.insert(0, sys.argv[1])
from conftest import FIXTURES, load_cases
case = {c.name: c for c in load_cases(FIXTURES + '/ops')}['composite_net']
try:
    handle = api.create(case.symbol_json, case.params, {'data': (1, 3, 50000, 50000)})
    print('created')
    api.free(handle)
except CAPIError as error:
    print('error', error)
''', 1024, r'error .*(memory|allocat|too large|budget)'),
]


@pytest.mark.parametrize('name, code, mib, expected', CHILD_CASES,
                         ids=[c[0] for c in CHILD_CASES])
def test_in_a_child_without_hang_or_oom(name, code, mib, expected):
    if 'asan' in os.environ.get('LD_PRELOAD', ''):
        pytest.skip('AddressSanitizer needs more address space than the limit leaves')
    result = subprocess.run([sys.executable, '-c', CHILD, HERE, code, str(mib)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f'{name}: the child died: {result.stderr[-3000:]}'
    assert re.search(expected, result.stdout), f'{name}: {result.stdout[-2000:]}'
