"""mxlite.nd.load / mxlite.nd.save against MXNet 1.9.1, in both directions.

- Files MXNet wrote (tests/fixtures/formats, every record version) load to
  MXNet's arrays with their dtypes;
- files mxlite writes load in MXNet 1.9.1 (the oracle venv) to the same
  arrays, and are byte for byte what mx.nd.save writes;
- files MXNet writes now, in the oracle venv, from arrays made here, load
  back to those arrays;
- bad files and unsavable arrays give MXLiteError naming the problem.
"""
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import FIXTURES
from test_python_api import ORACLE_PYTHON

import mxlite
from mxlite import MXLiteError, MXLiteFileNotFoundError

FORMATS = os.path.join(FIXTURES, 'formats')
with open(os.path.join(FORMATS, 'manifest.json'), encoding='utf-8') as _f:
    MANIFEST = json.load(_f)
DENSE_FILES = sorted(name for name, meta in MANIFEST['files'].items() if meta.get('expected'))
ORACLE_ENV = {**os.environ, 'MXNET_MKLDNN_ENABLED': '0', 'MXNET_SUBGRAPH_BACKEND': 'NONE'}


def oracle(script, *args):
    assert os.path.exists(ORACLE_PYTHON), \
        f'the MXNet oracle venv is missing ({ORACLE_PYTHON}): run scripts/run_tests.sh'
    result = subprocess.run([ORACLE_PYTHON, '-c', script, *map(str, args)], capture_output=True,
                            text=True, env=ORACLE_ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def expected_arrays(name):
    meta = MANIFEST['files'][name]
    expected = np.load(os.path.join(FORMATS, meta['expected']))
    return meta, expected


@pytest.mark.parametrize('name', DENSE_FILES)
def test_mxnet_files_load_with_their_dtypes(name):
    meta, expected = expected_arrays(name)
    loaded = mxlite.nd.load(os.path.join(FORMATS, name))
    if meta['keyed_by'] == 'name':
        assert isinstance(loaded, dict) and list(loaded) == meta['names']
        arrays = list(loaded.values())
    else:
        assert isinstance(loaded, list)
        arrays = loaded
    assert len(arrays) == len(meta['arrays'])
    for array, spec in zip(arrays, meta['arrays']):
        want = expected[spec['key']]
        assert array.dtype == want.dtype, spec['key']
        assert array.shape == want.shape, spec['key']
        np.testing.assert_array_equal(array, want)


MXNET_LOADER = '''
import sys, numpy as np, mxnet as mx
loaded = mx.nd.load(sys.argv[1])
kind = 'dict' if isinstance(loaded, dict) else 'list'
items = loaded.items() if kind == 'dict' else enumerate(loaded)
np.savez(sys.argv[2], **{f'{kind}:{k}': v.asnumpy() for k, v in items})
'''


@pytest.mark.parametrize('name', [n for n in DENSE_FILES
                                  if MANIFEST['files'][n]['record_version'] != 'V3'])
def test_saved_files_load_in_mxnet_and_match_its_bytes(tmp_path, name):
    meta, expected = expected_arrays(name)
    loaded = mxlite.nd.load(os.path.join(FORMATS, name))
    saved = tmp_path / 'resaved.nd'
    mxlite.nd.save(saved, loaded)
    oracle(MXNET_LOADER, saved, tmp_path / 'mx.npz')
    back = np.load(tmp_path / 'mx.npz')
    kind = 'dict' if meta['keyed_by'] == 'name' else 'list'
    for index, spec in enumerate(meta['arrays']):
        key = f'{kind}:{meta["names"][index]}' if kind == 'dict' else f'list:{index}'
        got, want = back[key], expected[spec['key']]
        assert got.dtype == want.dtype and got.shape == want.shape, spec['key']
        np.testing.assert_array_equal(got, want)
    if meta['record_version'] == 'V2' and 'gpu' not in name:
        with open(os.path.join(FORMATS, name), 'rb') as f:
            assert saved.read_bytes() == f.read(), 'not what mx.nd.save writes'


MXNET_WRITER = '''
import sys, numpy as np, mxnet as mx
arrays = dict(np.load(sys.argv[1]))
as_list = sys.argv[3] == 'list'
nd = {k: mx.nd.array(v, dtype=v.dtype) for k, v in arrays.items()}
mx.nd.save(sys.argv[2], [nd[k] for k in sorted(nd)] if as_list else nd)
'''


@pytest.mark.parametrize('layout', ['dict', 'list'])
def test_files_mxnet_writes_now_load_back(tmp_path, layout):
    rng = np.random.RandomState(7)
    arrays = {
        'a_f32': rng.randn(2, 3, 4).astype(np.float32),
        'b_f64': rng.randn(5).astype(np.float64),
        'c_f16': rng.randn(3, 2).astype(np.float16),
        'd_u8': rng.randint(0, 256, size=(4, 4)).astype(np.uint8),
        'e_i32': rng.randint(-1000, 1000, size=(6,)).astype(np.int32),
        'f_i8': rng.randint(-128, 128, size=(2, 2)).astype(np.int8),
        'g_i64': rng.randint(-2**40, 2**40, size=(3,)).astype(np.int64),
        'h_big': rng.randn(1, 3, 32, 32).astype(np.float32),
    }
    np.savez(tmp_path / 'in.npz', **arrays)
    written = tmp_path / 'mx.nd'
    oracle(MXNET_WRITER, tmp_path / 'in.npz', written, layout)
    loaded = mxlite.nd.load(written)
    if layout == 'dict':
        assert sorted(loaded) == sorted(arrays)
        pairs = [(loaded[k], arrays[k]) for k in arrays]
    else:
        assert isinstance(loaded, list)
        pairs = list(zip(loaded, [arrays[k] for k in sorted(arrays)]))
    for got, want in pairs:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # And mxlite writes that file back byte for byte.
    mxlite.nd.save(tmp_path / 'again.nd', loaded)
    assert (tmp_path / 'again.nd').read_bytes() == written.read_bytes()


def test_round_trip_keeps_every_dtype_and_layout(tmp_path):
    rng = np.random.RandomState(8)
    arrays = {name: rng.randint(0, 100, size=(3, 4)).astype(name)
              for name in ('float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64',
                           'bool', 'int16', 'uint16', 'uint32', 'uint64')}
    arrays['fortran'] = np.asfortranarray(rng.randn(3, 5).astype(np.float32))
    arrays['strided'] = rng.randn(6, 6).astype(np.float32)[::2, 1::2]
    arrays['empty'] = np.zeros((0, 3), np.float32)
    mxlite.nd.save(tmp_path / 'all.nd', arrays)
    back = mxlite.nd.load(tmp_path / 'all.nd')
    assert list(back) == list(arrays)
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape, name
        np.testing.assert_array_equal(back[name], array)
    mxlite.nd.save(tmp_path / 'list.nd', [arrays['float32'], arrays['int8']])
    assert [a.dtype for a in mxlite.nd.load(tmp_path / 'list.nd')] == [np.float32, np.int8]
    mxlite.nd.save(tmp_path / 'one.nd', arrays['uint8'])
    [single] = mxlite.nd.load(tmp_path / 'one.nd')
    np.testing.assert_array_equal(single, arrays['uint8'])


def test_loaded_params_drive_a_predictor(tmp_path):
    # A checkpoint re-saved by mxlite.nd predicts exactly as the original.
    prefix = os.path.join(os.path.dirname(mxlite.__file__), 'demo', 'digits')
    params = mxlite.nd.load(prefix + '-0000.params')
    mxlite.nd.save(tmp_path / 'digits-0000.params', params)
    with open(prefix + '-symbol.json', encoding='utf-8') as f:
        (tmp_path / 'digits-symbol.json').write_text(f.read())
    x = np.random.RandomState(9).rand(4, 1, 8, 8).astype(np.float32)
    original = mxlite.Predictor.load(prefix)(data=x)
    resaved = mxlite.Predictor.load(tmp_path / 'digits')(data=x)
    assert np.array_equal(original, resaved)


def test_bad_files_and_arrays_raise_mxlite_error(tmp_path):
    with pytest.raises(MXLiteFileNotFoundError, match='no such file'):
        mxlite.nd.load(tmp_path / 'missing.nd')
    with pytest.raises(FileNotFoundError):
        mxlite.nd.load(tmp_path / 'missing.nd')
    with open(os.path.join(FORMATS, 'v2_dict.params'), 'rb') as f:
        good = f.read()
    (tmp_path / 'cut.nd').write_bytes(good[:100])
    with pytest.raises(MXLiteError, match=r'cut\.nd: truncated'):
        mxlite.nd.load(tmp_path / 'cut.nd')
    (tmp_path / 'text.nd').write_bytes(b'hello world, not an ndarray file')
    with pytest.raises(MXLiteError, match=r'text\.nd: not an MXNet NDArray file'):
        mxlite.nd.load(tmp_path / 'text.nd')
    with pytest.raises(MXLiteError, match='row_sparse'):
        mxlite.nd.load(os.path.join(FORMATS, 'sparse.params'))
    with pytest.raises(MXLiteError, match="cannot hold a 0-d array"):
        mxlite.nd.save(tmp_path / 'x.nd', {'scalar': np.float32(3)})
    with pytest.raises(MXLiteError, match="'z' has dtype complex64"):
        mxlite.nd.save(tmp_path / 'x.nd', {'z': np.zeros(3, np.complex64)})
    with pytest.raises(MXLiteError, match='names must be strings'):
        mxlite.nd.save(tmp_path / 'x.nd', {1: np.zeros(3, np.float32)})
    with pytest.raises(MXLiteError, match="dtype object"):
        mxlite.nd.save(tmp_path / 'x.nd', [np.array(['a', None], dtype=object)])


def test_v3_numpy_file_keeps_its_scalar_and_empty_arrays():
    loaded = mxlite.nd.load(os.path.join(FORMATS, 'v3_np.params'))
    assert loaded['scalar_0d'].shape == () and loaded['empty_0x3'].shape == (0, 3)
