"""mxlite.ctypes_predict: MXNet's mxnet_predict.py API in pure Python.

It must give MXNet's outputs on the oracle fixtures, equal the nanobind
module's bit for bit (both run the same core), work over any libmxlite
(argument, MXLITE_LIBRARY, the package's copy), and run where the compiled
extension is absent.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES, assert_close, load_cases
from test_python_api import DEMO_PREFIX, zoo_case

import mxlite
from mxlite import MXLiteError, MXLiteFileNotFoundError
from mxlite.ctypes_predict import Predictor, load_library, load_ndarray_file

OP_CASES = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}
CTYPES_OPS = ['composite_net', 'multi_head', 'conv_group2', 'pool_avg_full_pad1_excl',
              'softmax_output_2d', 'fc_flatten_4d', 'concat_dim1', 'bn_default_4d']


def run_case(case):
    inputs, expected = case.io()
    predictor = Predictor(case.symbol_json, case.params,
                          {name: value.shape for name, value in inputs.items()})
    predictor.forward(**inputs)
    return [predictor.get_output(i) for i in range(len(expected))], expected


@pytest.mark.parametrize('name', CTYPES_OPS)
def test_op_fixture_matches_mxnet(name):
    case = OP_CASES[name]
    outputs, expected = run_case(case)
    for index, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert_close(ours, theirs, case.rtol, f'{name} output {index}')


@pytest.mark.parametrize('name', ['resnet18_v1', 'mobilenetv2_1.0', 'inceptionv3'])
def test_zoo_model_matches_mxnet_and_the_python_module(name):
    case = zoo_case(name)
    [ours], expected = run_case(case)
    assert_close(ours, expected[0], case.rtol, name)
    inputs, _ = case.io()
    native = mxlite.Predictor(case.symbol_json, case.params)(**inputs)
    assert np.array_equal(ours, native), 'ctypes client and nanobind module differ'


def test_reshape_and_type_dict():
    case = zoo_case('squeezenet1.1')
    inputs, expected = case.io()
    predictor = Predictor(case.symbol_json, case.params, {'data': (2, 3, 224, 224)},
                          type_dict={'data': np.float32})
    predictor.reshape({'data': (1, 3, 224, 224)})
    predictor.forward(data=inputs['data'].astype(np.float64))  # converted by forward
    assert_close(predictor.get_output(0), expected[0], case.rtol, 'after reshape')


def test_monitor_callback_sees_every_operator_output():
    case = OP_CASES['composite_net']
    inputs, _ = case.io()
    predictor = Predictor(case.symbol_json, case.params,
                          {name: value.shape for name, value in inputs.items()})
    seen = []
    predictor.set_monitor_callback(lambda name, array: seen.append(name.decode()))
    predictor.forward(**inputs)
    assert seen and all(isinstance(name, str) for name in seen)
    assert seen[-1].endswith('_output')


FORMATS = os.path.join(FIXTURES, 'formats')


def test_load_ndarray_file_gives_float32_like_mxnets_c_api():
    with open(os.path.join(FORMATS, 'v2_dict.params'), 'rb') as f:
        loaded = load_ndarray_file(f.read())
    native = mxlite.nd.load(os.path.join(FORMATS, 'v2_dict.params'))
    assert list(loaded) == list(native)
    for name, array in loaded.items():
        assert array.dtype == np.float32
        np.testing.assert_array_equal(array, native[name].astype(np.float32))
    with open(os.path.join(FORMATS, 'v2_list.params'), 'rb') as f:
        assert isinstance(load_ndarray_file(f.read()), list)


def test_errors_are_mxlite_errors_with_the_core_message():
    case = OP_CASES['composite_net']
    with pytest.raises(MXLiteError, match="input 'data'"):
        Predictor(case.symbol_json, case.params, {'data': (2, 3)})
    with pytest.raises(MXLiteError, match='GPU 0 is not available: this build of mxlite has no '
                                          'CUDA backend'):
        Predictor(case.symbol_json, case.params, {'data': (1, 3, 8, 8)}, dev_type='gpu')
    predictor = Predictor(case.symbol_json, case.params, {'data': (1, 3, 8, 8)})
    with pytest.raises(MXLiteError, match='cannot find input key'):
        predictor.forward(nonexistent=np.zeros((1,), np.float32))
    with pytest.raises(MXLiteError, match='out of range'):
        predictor.get_output(5)
    with pytest.raises(ValueError, match='numpy'):
        predictor.forward(data=[1, 2, 3])
    with pytest.raises(MXLiteError, match='not an MXNet NDArray file'):
        load_ndarray_file(b'not a file at all, really not')


def test_library_argument_and_environment_variable(tmp_path):
    copy = tmp_path / 'libmxlite-copy.so'
    copy.write_bytes(open(mxlite.lib_path(), 'rb').read())
    lib = load_library(str(copy))
    assert lib is load_library(str(copy)) and lib is not load_library()
    case = OP_CASES['composite_net']
    inputs, expected = case.io()
    predictor = Predictor(case.symbol_json, case.params, {'data': inputs['data'].shape},
                          library=str(copy))
    predictor.forward(**inputs)
    assert_close(predictor.get_output(0), expected[0], case.rtol, 'library=')
    # A missing file is MXLiteFileNotFoundError (also an MXLiteError and a
    # FileNotFoundError); a file that is no library only MXLiteError.
    with pytest.raises(MXLiteFileNotFoundError, match=r'missing\.so: no such file') as missing:
        load_library(str(tmp_path / 'missing.so'))
    assert isinstance(missing.value, MXLiteError) and isinstance(missing.value, FileNotFoundError)
    (tmp_path / 'not-a-library.so').write_bytes(b'not an ELF file')
    with pytest.raises(MXLiteError, match='cannot load the mxlite library') as refused:
        load_library(str(tmp_path / 'not-a-library.so'))
    assert not isinstance(refused.value, FileNotFoundError)
    # MXLITE_LIBRARY, in a fresh interpreter.
    code = ('import mxlite, mxlite.ctypes_predict as c; import sys; '
            'sys.stdout.write(c.load_library()._name)')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env={**os.environ, 'MXLITE_LIBRARY': str(copy)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == str(copy)
    # MXLITE_LIBRARY naming a file that does not exist.
    code = ('import mxlite, sys\n'
            'try:\n    mxlite.lib_path()\n'
            'except mxlite.MXLiteFileNotFoundError as e:\n    sys.stdout.write(str(e))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env={**os.environ, 'MXLITE_LIBRARY': str(tmp_path / 'gone.so')},
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f'MXLITE_LIBRARY names {tmp_path / "gone.so"}, which does not exist'


def test_works_without_the_compiled_extension(tmp_path):
    # A device with Python but no compiler: the package's pure-Python files
    # and a libmxlite, no mxlite._core.
    import shutil
    package = tmp_path / 'mxlite'
    source = os.path.dirname(mxlite.__file__)
    shutil.copytree(source, package, ignore=shutil.ignore_patterns('_core*', '__pycache__'))
    case = OP_CASES['composite_net']
    inputs, expected = case.io()
    np.save(tmp_path / 'data.npy', inputs['data'])
    np.save(tmp_path / 'expected.npy', expected[0])
    (tmp_path / 'sym.json').write_text(case.symbol_json)
    (tmp_path / 'model.params').write_bytes(case.params)
    script = '''
import numpy as np, mxlite
from mxlite.ctypes_predict import Predictor
data = np.load('data.npy')
pred = Predictor(open('sym.json').read(), open('model.params', 'rb').read(), {'data': data.shape})
pred.forward(data=data)
out = pred.get_output(0)
want = np.load('expected.npy')
assert np.max(np.abs(out - want)) <= 1e-4 * np.max(np.abs(want)), 'wrong output'
try:
    mxlite.Predictor
except ImportError as error:
    assert 'mxlite.ctypes_predict works without it' in str(error), error
    print('no extension:', type(error).__name__)
'''
    result = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, 'PYTHONPATH': str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'no extension: ImportError' in result.stdout


def test_demo_checkpoint_through_ctypes():
    import json
    with open(DEMO_PREFIX + '.json', encoding='utf-8') as f:
        meta = json.load(f)
    test = np.load(DEMO_PREFIX + '-test.npz')
    with open(DEMO_PREFIX + '-symbol.json', encoding='utf-8') as f:
        symbol = f.read()
    with open(DEMO_PREFIX + '-0000.params', 'rb') as f:
        params = f.read()
    images = (test['images'].astype(np.float32) / np.float32(16))[:, None]
    predictor = Predictor(symbol, params, {'data': images.shape})
    predictor.forward(data=images)
    logits = predictor.get_output(0)
    assert int((logits.argmax(1) == test['labels']).sum()) == meta['mxnet_correct']
    assert np.array_equal(logits, mxlite.Predictor(symbol, params)(data=images))


def test_two_copies_of_the_library_in_one_process_exit_cleanly(tmp_path):
    """The extension's libmxlite and a copy loaded by ctypes each run the
    same kernels (each has its own thread-local scratch), and the process
    exits without a double free: the library exports no function-local
    statics, which the dynamic linker would otherwise share between copies."""
    copy = tmp_path / 'libmxlite-copy.so'
    copy.write_bytes(open(mxlite.lib_path(), 'rb').read())
    case = OP_CASES['composite_net']
    inputs, _ = case.io()
    np.save(tmp_path / 'data.npy', inputs['data'])
    (tmp_path / 'sym.json').write_text(case.symbol_json)
    (tmp_path / 'model.params').write_bytes(case.params)
    script = f'''
import numpy as np, mxlite
from mxlite.ctypes_predict import Predictor
data = np.load('data.npy')
symbol, params = open('sym.json').read(), open('model.params', 'rb').read()
outputs = []
for library in ({str(copy)!r}, None):
    pred = Predictor(symbol, params, {{'data': data.shape}}, library=library)
    pred.forward(data=data)
    outputs.append(pred.get_output(0))
native = mxlite.Predictor(symbol, params, {{'data': data.shape}})
outputs.append(np.asarray(native.predict(data=data)))
scale = np.abs(outputs[0]).max()
assert all(np.abs(outputs[0] - o).max() <= 1e-5 * scale for o in outputs[1:]), 'copies disagree'
print('done')
'''
    result = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == 'done\n', result.stderr[-2000:]
