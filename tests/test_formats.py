"""NDArray files in every version, and symbol JSON from every MXNet era.

Expected values are what MXNet 1.9.1 loads from the same files
(scripts/make_fixtures.py formats). MXNDListCreate converts every dtype to
float32, so the comparison is against the expected arrays cast to float32.
"""
import json
import os
import struct

import numpy as np
import pytest

from capi import CAPIError
from conftest import FIXTURES, assert_close, load_cases
from cpp_build import amalgamate

FORMATS = os.path.join(FIXTURES, 'formats')
with open(os.path.join(FORMATS, 'manifest.json'), encoding='utf-8') as _f:
    MANIFEST = json.load(_f)
DENSE_FILES = sorted(name for name, meta in MANIFEST['files'].items() if meta.get('expected'))


def read(name):
    with open(os.path.join(FORMATS, name), 'rb') as f:
        return f.read()


@pytest.mark.parametrize('name', DENSE_FILES)
def test_ndarray_file_loads_like_mxnet(api, name):
    meta = MANIFEST['files'][name]
    expected = np.load(os.path.join(FORMATS, meta['expected']))
    loaded = api.nd_list(read(name))
    assert len(loaded) == len(meta['arrays'])
    for (key, array), spec in zip(loaded, meta['arrays']):
        kind, _, ident = spec['key'].partition(':')
        assert key == (ident if kind == 'name' else '')
        want = expected[spec['key']]
        assert array.shape == tuple(spec['shape'])
        np.testing.assert_array_equal(array, want.astype(np.float32))


def test_all_record_versions_covered():
    versions = {meta['record_version'] for meta in MANIFEST['files'].values()}
    assert {'V1', 'V2', 'V3', 'legacy'} <= versions


def test_sparse_file_is_refused_clearly(api):
    with pytest.raises(CAPIError, match='row_sparse.*dense arrays only'):
        api.nd_list(read('sparse.params'))


LEGACY_CASES = load_cases(FORMATS)


@pytest.mark.parametrize('case', LEGACY_CASES, ids=[c.name for c in LEGACY_CASES])
def test_legacy_symbol_json_matches_mxnet(api, case):
    inputs, expected = case.io()
    outputs = api.predict(case.symbol_json, case.params, inputs, num_outputs=len(expected))
    for ours, theirs in zip(outputs, expected):
        assert_close(ours, theirs, case.rtol, case.name)


# --- corrupt files: each must fail with a message naming the problem -------

def v2_file(dtype_flag=0, shape=(2, 3), payload=None, magic=0x112, names=(b'arg:w',)):
    data = struct.pack('<QQQ', magic, 0, 1)
    data += struct.pack('<Iii', 0xF993FAC9, 0, len(shape))
    data += struct.pack(f'<{len(shape)}q', *shape)
    data += struct.pack('<iii', 1, 0, dtype_flag)
    data += payload if payload is not None else np.arange(np.prod(shape), dtype='<f4').tobytes()
    data += struct.pack('<Q', len(names))
    for name in names:
        data += struct.pack('<Q', len(name)) + name
    return data


def test_handmade_v2_file_round_trips(api):
    [(key, array)] = api.nd_list(v2_file())
    assert key == 'arg:w'
    np.testing.assert_array_equal(array, np.arange(6, dtype=np.float32).reshape(2, 3))


@pytest.mark.parametrize('cut', [0, 5, 8, 20, 30, 50, 60, 70, 75])
def test_truncated_file_is_reported(api, cut):
    data = v2_file()
    with pytest.raises(CAPIError, match='truncated|NDArray file'):
        api.nd_list(data[:cut])


def test_wrong_magic_is_reported(api):
    with pytest.raises(CAPIError, match=r'not an MXNet NDArray file \(header 0x113'):
        api.nd_list(v2_file(magic=0x113))


def test_unknown_dtype_flag_is_reported(api):
    with pytest.raises(CAPIError, match='unknown dtype flag 42'):
        api.nd_list(v2_file(dtype_flag=42))


def test_absurd_shape_is_reported_without_allocating(api):
    with pytest.raises(CAPIError, match='truncated: array #0'):
        api.nd_list(v2_file(shape=(1 << 40, 1 << 20), payload=b''))


def test_name_count_mismatch_is_reported(api):
    with pytest.raises(CAPIError, match='1 arrays but 2 names'):
        api.nd_list(v2_file(names=(b'a', b'b')))


def test_trailing_garbage_is_reported(api):
    with pytest.raises(CAPIError, match='unexpected bytes'):
        api.nd_list(v2_file() + b'xx')


# --- writing: files mxlite saves load in MXNet 1.9.1 to the same arrays ----

ORACLE_PYTHON = os.environ.get(
    'MXLITE_ORACLE_PYTHON', os.path.join(os.path.dirname(FIXTURES), '..', 'build', 'venv-mxnet',
                                         'bin', 'python'))
MXNET_LOADER = '''
import sys, numpy as np, mxnet as mx
loaded = mx.nd.load(sys.argv[1])
items = loaded.items() if isinstance(loaded, dict) else enumerate(loaded)
np.savez(sys.argv[2], **{f'{k}': v.asnumpy() for k, v in items})
'''


@pytest.fixture(scope='module')
def ndarray_tool(tmp_path_factory):
    import subprocess
    from conftest import ROOT
    out = tmp_path_factory.mktemp('ndarray_tool')
    amalgamate(out)
    exe = out / 'ndarray_tool'
    subprocess.run(['g++', '-std=c++17', '-O1', os.path.join(ROOT, 'tests', 'cpp',
                                                             'ndarray_tool.cc'),
                    str(out / 'mxlite-all.cc'), '-o', str(exe), '-lpthread'], check=True)
    return exe


@pytest.mark.parametrize('name', [n for n in DENSE_FILES if MANIFEST['files'][n]['record_version']
                                  != 'V3'])
def test_saved_file_loads_in_mxnet(ndarray_tool, tmp_path, name):
    import subprocess
    assert os.path.exists(ORACLE_PYTHON), 'the MXNet oracle venv is missing: run make test'
    meta = MANIFEST['files'][name]
    resaved = tmp_path / 'resaved.params'
    subprocess.run([str(ndarray_tool), 'resave', os.path.join(FORMATS, name), str(resaved)],
                   check=True)
    result = subprocess.run([ORACLE_PYTHON, '-c', MXNET_LOADER, str(resaved),
                             str(tmp_path / 'mx.npz')], capture_output=True, text=True,
                            env={**os.environ, 'MXNET_MKLDNN_ENABLED': '0'})
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = np.load(tmp_path / 'mx.npz')
    expected = np.load(os.path.join(FORMATS, meta['expected']))
    for index, spec in enumerate(meta['arrays']):
        kind, _, ident = spec['key'].partition(':')
        got = loaded[ident if kind == 'name' else str(index)]
        want = expected[spec['key']]
        assert got.dtype == want.dtype and got.shape == want.shape, spec['key']
        np.testing.assert_array_equal(got, want)
    # And byte for byte what MXNet itself writes for V2 files.
    if meta['record_version'] == 'V2' and 'gpu' not in name:
        assert resaved.read_bytes() == read(name)


def test_v3_scalar_cannot_be_written_as_v2(ndarray_tool, tmp_path):
    import subprocess
    result = subprocess.run([str(ndarray_tool), 'resave', os.path.join(FORMATS, 'v3_np.params'),
                             str(tmp_path / 'x.params')], capture_output=True, text=True)
    assert result.returncode == 1
    assert "V2 format cannot hold a 0-d array" in result.stderr
