"""Bad input to the Python API: always mxlite.MXLiteError with a useful
message, never a crash or a wrong answer.

The last test corrupts checkpoints at random in a child process, so that a
crash would show as the child dying rather than take pytest down.
"""
import ast
import json
import subprocess
import sys

import numpy as np
import pytest

import ndfile
from conftest import FIXTURES, load_cases
from test_python_api import DEMO_PREFIX

from mxlite import MXLiteError, MXLiteFileNotFoundError, Predictor

CASES = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}
CASE = CASES['composite_net']


def make(**kwargs):
    return Predictor(CASE.symbol_json, CASE.params, **kwargs)


def test_error_type():
    assert issubclass(MXLiteError, RuntimeError)
    assert issubclass(MXLiteFileNotFoundError, MXLiteError)
    assert issubclass(MXLiteFileNotFoundError, FileNotFoundError)


def test_missing_checkpoint_files(tmp_path):
    with pytest.raises(MXLiteFileNotFoundError, match=r'nothing-symbol\.json: no such file'):
        Predictor.load(tmp_path / 'nothing')
    (tmp_path / 'half-symbol.json').write_text(CASE.symbol_json)
    with pytest.raises(MXLiteFileNotFoundError, match=r'half-0003\.params: no such file'):
        Predictor.load(tmp_path / 'half', epoch=3)
    with pytest.raises(MXLiteError, match='epoch must be in 0..9999'):
        Predictor.load(tmp_path / 'half', epoch=-1)
    with pytest.raises(MXLiteError, match='epoch must be an integer'):
        Predictor.load(tmp_path / 'half', epoch='0')


def test_bad_symbol_json_names_the_problem(tmp_path):
    with pytest.raises(MXLiteError, match='JSON'):
        Predictor('{"nodes": [', CASE.params)
    with pytest.raises(MXLiteError, match='symbol_json must be str, bytes'):
        Predictor(12345, CASE.params)
    graph = json.loads(CASE.symbol_json)
    for node in graph['nodes']:
        if node['op'] == 'Convolution':
            node['op'] = 'NoSuchOperator'
            break
    with pytest.raises(MXLiteError, match='NoSuchOperator'):
        Predictor(json.dumps(graph), CASE.params)
    # Through load(), the message starts with the checkpoint's prefix.
    (tmp_path / 'broken-symbol.json').write_text('[1, 2')
    (tmp_path / 'broken-0000.params').write_bytes(CASE.params)
    with pytest.raises(MXLiteError, match=r'broken: .*JSON'):
        Predictor.load(tmp_path / 'broken')


def test_bad_params_name_the_problem():
    with pytest.raises(MXLiteError, match='params: truncated'):
        Predictor(CASE.symbol_json, CASE.params[:-7])
    with pytest.raises(MXLiteError, match='params must be bytes'):
        Predictor(CASE.symbol_json, 'not bytes')
    # Without the params file the weights become inputs the caller must give.
    bare = Predictor(CASE.symbol_json, b'')
    assert 'c1_weight' in bare.required_inputs
    with pytest.raises(MXLiteError, match="missing input.*'c1_weight'"):
        bare(data=np.zeros((2, 3, 8, 8), np.float32))


def test_params_of_another_model_are_refused_at_load(api):
    # A Gluon save_parameters() file (structural names, no arg:/aux:) or
    # another model's params matched nothing: the weights silently became
    # inputs and the first call failed with every one of them listed.
    weights = dict(api.nd_list(CASE.params))
    gluon = ndfile.save({f'features.{i}.weight': value for i, value in enumerate(weights.values())})
    for params, held in [(gluon, r"'features.0.weight', 'features.1.weight', "
                                 r"'features.2.weight' and 11 more"),
                         (CASES['multi_head'].params, "'arg:conv0_weight', 'arg:conv0_bias'")]:
        with pytest.raises(MXLiteError, match=r"the file provides none of the model's 14 "
                                              r"parameters \(first expected: 'c1_weight'\); "
                                              f"it holds {held}: .*save_parameters"):
            Predictor(CASE.symbol_json, params)
    # Half of them: the first missing one, and how many more, as the C API says it.
    half = ndfile.save(dict(list(weights.items())[:7]))
    with pytest.raises(MXLiteError, match=r"parameter 'b1_moving_mean' \(input 'moving_mean' of "
                                          r"node 'b1' \(BatchNorm\)\) is neither in the params "
                                          r"file nor among the inputs, nor are 6 more of the "
                                          r"model's 14 parameters"):
        Predictor(CASE.symbol_json, half)
    # A parameter named among the input shapes is the caller's to give.
    partial = ndfile.save({k: v for k, v in weights.items() if k != 'arg:fc_bias'})
    predictor = Predictor(CASE.symbol_json, partial, input_shapes={'fc_bias': (7,)})
    assert predictor.required_inputs == ['data', 'fc_bias']
    # Labels need no value, and a graph without parameters takes any inputs.
    softmax = CASES['softmax_output_2d']
    inputs, expected = softmax.io()
    np.testing.assert_allclose(Predictor(softmax.symbol_json, softmax.params)(**inputs),
                               expected[0], rtol=1e-5)


def test_lists_of_missing_names_are_cut_short():
    bare = Predictor(CASE.symbol_json, b'')
    with pytest.raises(MXLiteError, match=r"missing input\(s\) 'c1_weight', .* and 6 more; the "
                                          r"model's inputs are 'data', .* and 7 more$"):
        bare(data=np.zeros((2, 3, 8, 8), np.float32))


def test_bad_input_shapes_and_outputs():
    with pytest.raises(MXLiteError, match="'label': it is not an input of this model"):
        make(input_shapes={'label': (1,)})
    with pytest.raises(MXLiteError, match='must be a sequence of integers'):
        make(input_shapes={'data': 'abc'})
    with pytest.raises(MXLiteError, match='sequence of integers'):
        make(input_shapes={'data': (1.5, 3)})
    with pytest.raises(MXLiteError, match='must be a dict'):
        make(input_shapes=[1, 3, 8, 8])
    with pytest.raises(MXLiteError, match="input 'data'"):
        make(input_shapes={'data': (1, 3)})  # shape inference names the input
    with pytest.raises(MXLiteError, match="no output named 'nope'"):
        make(outputs=['nope'])
    with pytest.raises(MXLiteError, match='non-empty list of output names'):
        make(outputs=[])
    with pytest.raises(MXLiteError, match='threads must be a positive integer'):
        make(threads=0)
    with pytest.raises(MXLiteError, match='not known yet'):
        _ = make().output_shapes


def test_bad_inputs_at_predict():
    predictor = make(input_shapes={'data': (2, 3, 8, 8)})
    x = np.zeros((2, 3, 8, 8), np.float32)
    with pytest.raises(MXLiteError, match="missing input.*'data'"):
        predictor()
    with pytest.raises(MXLiteError, match="'images' is not an input of this model; its inputs "
                                          "are 'data'"):
        predictor(images=x)
    with pytest.raises(MXLiteError, match=r"has shape \(1,3,8,8\) but the predictor is bound to "
                                          r"\(2,3,8,8\); call reshape"):
        predictor(data=x[:1])
    with pytest.raises(MXLiteError, match='dtype complex128'):
        predictor(data=x.astype(np.complex128))
    with pytest.raises(MXLiteError, match="input 'data' has dtype <U"):
        predictor(data=np.full((2, 3, 8, 8), 'x'))
    with pytest.raises(MXLiteError, match="cannot make an array"):
        predictor(data=[[1, 2], [3]])
    with pytest.raises(MXLiteError, match='give inputs by name'):
        predictor(x, x)
    with pytest.raises(MXLiteError, match='0-d array'):
        make()(data=np.float32(1))
    # The predictor still works after all that.
    assert predictor(data=x).shape == (2, 7)


def test_bad_reshape():
    predictor = make(input_shapes={'data': (1, 3, 8, 8)})
    with pytest.raises(MXLiteError, match="not an input"):
        predictor.reshape(label=(1,))
    with pytest.raises(MXLiteError, match="input 'data'"):
        predictor.reshape(data=(1, 3))
    # Zero dimensions are refused, as the C API refuses them (batch 0 was
    # accepted, and bound an empty predictor).
    for shape, dim in [((0, 3, 8, 8), 0), ((1, 3, 0, 8), 2)]:
        with pytest.raises(MXLiteError, match=r"input 'data': dimensions must be positive, got "
                                              f"\\({','.join(map(str, shape))}\\) "
                                              f"\\(dimension {dim} is 0\\)"):
            predictor.reshape(data=shape)
    with pytest.raises(MXLiteError, match=r"input 'data': dimensions must be positive"):
        make(input_shapes={'data': (0, 3, 8, 8)})
    with pytest.raises(MXLiteError, match=r"input 'data': dimensions must be positive"):
        make()(data=np.zeros((0, 3, 8, 8), np.float32))
    # A failed reshape leaves the old binding in place.
    assert predictor.input_shapes == {'data': (1, 3, 8, 8)}
    assert predictor(data=np.zeros((1, 3, 8, 8), np.float32)).shape == (1, 7)


FUZZ = r'''
import sys, random, numpy as np, mxlite
symbol = open(sys.argv[1], 'rb').read()
params = open(sys.argv[2], 'rb').read()
rng = random.Random(int(sys.argv[3]))
outcomes = {'ok': 0, 'error': 0}
for trial in range(150):
    s, p = bytearray(symbol), bytearray(params)
    target = s if trial % 2 else p
    for _ in range(rng.randint(1, 6)):
        position = rng.randrange(len(target))
        choice = rng.random()
        if choice < 0.4:
            target[position] = rng.randrange(256)
        elif choice < 0.7:
            del target[position:position + rng.randint(1, 64)]
        else:
            target[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    try:
        text = bytes(s).decode('utf-8', 'replace')
        pred = mxlite.Predictor(text, bytes(p), input_shapes={'data': (1, 1, 8, 8)})
        out = pred(data=np.ones((1, 1, 8, 8), np.float32))
        outcomes['ok'] += 1
    except mxlite.MXLiteError:
        outcomes['error'] += 1
print(outcomes)
'''


@pytest.mark.parametrize('seed', [1, 2])
def test_corrupted_checkpoints_never_crash(seed):
    result = subprocess.run([sys.executable, '-c', FUZZ, DEMO_PREFIX + '-symbol.json',
                             DEMO_PREFIX + '-0000.params', str(seed)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f'crashed or raised another exception:\n{result.stderr[-3000:]}'
    outcomes = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    assert outcomes['error'] > 50, outcomes  # most corruptions are caught


THREADS_CHILD = r'''
import resource, sys
import numpy as np
from mxlite import Predictor
symbol, params, threads = open(sys.argv[1]).read(), open(sys.argv[2], 'rb').read(), int(sys.argv[3])
x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
one = Predictor(symbol, params, threads=1)(data=x)
with open('/proc/self/status', encoding='ascii') as f:
    vm_kib = next(int(line.split()[1]) for line in f if line.startswith('VmSize:'))
limit = vm_kib * 1024 + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
many = Predictor(symbol, params, threads=threads)(data=x)
print(float(np.max(np.abs(many - one))))
'''


@pytest.mark.parametrize('threads', [10**9, 10**30])
def test_absurd_thread_counts_are_clamped(threads):
    # Accepted, and then the first call aborted the process when the system
    # refused a thread; now the count is clamped (to 256) and the pool runs
    # with the threads it could make, here under an address-space limit that
    # leaves room for about 32 thread stacks. In a child: an abort would end
    # pytest.
    result = subprocess.run([sys.executable, '-c', THREADS_CHILD, CASE.path('-symbol.json'),
                             CASE.path('-0000.params'), str(threads)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert float(result.stdout.split()[-1]) < 1e-5, result.stdout
