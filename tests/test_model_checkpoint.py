"""mx.model.load_checkpoint and the light Symbol (mxlite.model, mxlite.symbol)
against MXNet 1.9.1's own load_checkpoint on the same files.

MXNet runs in the oracle environment (build/venv-mxnet) and writes what its
load_checkpoint returned: the symbol's list_arguments(),
list_auxiliary_states(), list_outputs(), get_internals().list_outputs(), and
every parameter's name, dtype, shape and values. mxlite's must be the same.
"""
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import FIXTURES, ROOT
from test_python_api import DEMO_PREFIX

import mxlite as mx
from mxlite import MXLiteError, MXLiteFileNotFoundError, Predictor

ORACLE_PYTHON = os.environ.get('MXLITE_ORACLE_PYTHON',
                               os.path.join(ROOT, 'build', 'venv-mxnet', 'bin', 'python'))
# Checkpoints with BatchNorm statistics (aux states), several heads, a fused
# pattern and a pre-1.0 symbol file that loading upgrades.
CHECKPOINTS = {
    'demo_digits': DEMO_PREFIX,
    'composite_net': os.path.join(FIXTURES, 'ops', 'composite_net'),
    'bn_relu_conv1x1_folded': os.path.join(FIXTURES, 'ops', 'bn_relu_conv1x1_folded'),
    'box_encode': os.path.join(FIXTURES, 'ops', 'box_encode'),
    'legacy_0800': os.path.join(FIXTURES, 'formats', 'legacy_0800'),
}
MXNET_LOADER = '''
import json, sys, numpy as np, mxnet as mx
out = sys.argv[1]
for name, prefix in zip(sys.argv[2::2], sys.argv[3::2]):
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
    arrays = {f'arg:{k}': v.asnumpy() for k, v in arg_params.items()}
    arrays.update({f'aux:{k}': v.asnumpy() for k, v in aux_params.items()})
    np.savez(f'{out}/{name}.npz', **arrays)
    with open(f'{out}/{name}.json', 'w') as f:
        json.dump({'arguments': sym.list_arguments(), 'aux_states': sym.list_auxiliary_states(),
                   'outputs': sym.list_outputs(),
                   'internals': sym.get_internals().list_outputs(),
                   'arg_names': list(arg_params), 'aux_names': list(aux_params),
                   'types': {'sym': type(sym).__name__, 'arg': type(arg_params).__name__}}, f)
'''


@pytest.fixture(scope='module')
def mxnet_loaded(tmp_path_factory):
    """{checkpoint: (facts, arrays)} from MXNet's load_checkpoint."""
    assert os.path.exists(ORACLE_PYTHON), 'the MXNet oracle venv is missing: run make test'
    out = tmp_path_factory.mktemp('mxnet_checkpoints')
    # One MXNet process for all checkpoints (importing MXNet takes seconds).
    pairs = [part for item in CHECKPOINTS.items() for part in item]
    result = subprocess.run([ORACLE_PYTHON, '-c', MXNET_LOADER, str(out)] + pairs,
                            capture_output=True, text=True,
                            env={**os.environ, 'MXNET_MKLDNN_ENABLED': '0'})
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = {}
    for name in CHECKPOINTS:
        with open(out / f'{name}.json') as f:
            facts = json.load(f)
        loaded[name] = facts, dict(np.load(out / f'{name}.npz'))
    return loaded


@pytest.mark.parametrize('name', sorted(CHECKPOINTS))
def test_load_checkpoint_matches_mxnet(mxnet_loaded, name):
    facts, arrays = mxnet_loaded[name]
    assert facts['types'] == {'sym': 'Symbol', 'arg': 'dict'}
    sym, arg_params, aux_params = mx.model.load_checkpoint(CHECKPOINTS[name], 0)
    assert isinstance(sym, mx.sym.Symbol)
    assert sym.list_arguments() == facts['arguments']
    assert sym.list_auxiliary_states() == facts['aux_states']
    assert sym.list_outputs() == facts['outputs']
    assert sym.get_internals().list_outputs() == facts['internals']
    assert list(arg_params) == facts['arg_names']
    assert list(aux_params) == facts['aux_names']
    for kind, params in (('arg', arg_params), ('aux', aux_params)):
        for key, value in params.items():
            assert isinstance(value, mx.nd.NDArray), key
            expected = arrays[f'{kind}:{key}']
            got = value.asnumpy()
            assert got.dtype == expected.dtype and got.shape == expected.shape, key
            np.testing.assert_array_equal(got, expected, err_msg=key)


def test_symbol_and_params_make_the_same_predictor():
    sym, arg_params, aux_params = mx.model.load_checkpoint(DEMO_PREFIX, 0)
    assert len(aux_params) > 0  # the demo has BatchNorm statistics
    images = np.load(f'{DEMO_PREFIX}-test.npz')['images'][:16]
    batch = (images.astype(np.float32) / np.float32(16.0))[:, None, :, :]  # as the demo
    reference = Predictor.load(DEMO_PREFIX)
    expected = reference(data=batch)
    from_checkpoint = Predictor(sym, {**arg_params, **aux_params})
    np.testing.assert_array_equal(from_checkpoint(data=batch), expected)
    # Prefixed names, as the params file has them, work the same.
    prefixed = {**{f'arg:{k}': v for k, v in arg_params.items()},
                **{f'aux:{k}': v for k, v in aux_params.items()}}
    np.testing.assert_array_equal(Predictor(sym, prefixed)(data=batch), expected)
    # An internal output selected on the Symbol is what the predictor computes.
    internals = sym.get_internals()
    name = [n for n in internals.list_outputs() if n.endswith('_output')][2]
    feature = internals[name]
    assert feature.list_outputs() == [name] and len(feature) == 1
    partial = Predictor(feature, {**arg_params, **aux_params})
    assert partial.output_names == [name]
    np.testing.assert_array_equal(partial(data=batch),
                                  reference.with_outputs(name)(data=batch))
    # By position too; an explicit outputs= wins over the Symbol's.
    position = internals.list_outputs().index(name)
    assert internals[position].list_outputs() == [name]
    other = Predictor(feature, {**arg_params, **aux_params}, outputs=sym.list_outputs())
    np.testing.assert_array_equal(other(data=batch), expected)
    assert sym.tojson() == open(f'{DEMO_PREFIX}-symbol.json').read()


def test_symbol_errors(tmp_path):
    sym = mx.sym.load(f'{DEMO_PREFIX}-symbol.json')
    with pytest.raises(MXLiteError, match="no output 'nope'"):
        sym['nope']
    with pytest.raises(MXLiteError, match='out of range'):
        sym[5]
    with pytest.raises(MXLiteFileNotFoundError, match='nothing-symbol.json: no such file'):
        mx.model.load_checkpoint(str(tmp_path / 'nothing'), 0)
    (tmp_path / 'bad-symbol.json').write_text('{"nodes": [')
    with pytest.raises(MXLiteError, match='bad-symbol.json'):
        mx.model.load_checkpoint(str(tmp_path / 'bad'), 0)
    # A symbol without its params file.
    (tmp_path / 'half-symbol.json').write_text(sym.tojson())
    with pytest.raises(MXLiteFileNotFoundError, match='half-0007.params: no such file'):
        mx.model.load_checkpoint(str(tmp_path / 'half'), 7)
    # Gluon's save_parameters names have no arg:/aux: prefix.
    mx.nd.save(str(tmp_path / 'gluon-0000.params'), {'features.0.weight': np.ones((2, 2))})
    (tmp_path / 'gluon-symbol.json').write_text(sym.tojson())
    with pytest.raises(MXLiteError, match='no "arg:" or "aux:" prefix'):
        mx.model.load_checkpoint(str(tmp_path / 'gluon'), 0)
