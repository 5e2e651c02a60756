"""The source distribution holds everything the wheel is built from, and the
wheel built from it (offline, as pip builds it) is complete and works.

- the sdist (python -m build --sdist, or setup.py sdist where the `build`
  package is absent) lists the C++ core (every file under predict/), the
  amalgamation script and its source list, the nanobind binding (core.cc),
  the package with its demo checkpoint and stubs, README, LICENSE, NOTICE
  and the third-party licences;
- its metadata says Apache-2.0 as an SPDX expression and the Python
  versions nanobind 3.1.0 builds for;
- pip builds a wheel from the unpacked sdist without network or build
  isolation; the wheel carries the library, the extension and the licence
  files, and run from the wheel alone the demo model predicts what the
  installed package predicts.
"""
import email
import importlib.util
import os
import subprocess
import sys
import tarfile
import zipfile

import numpy as np
import pytest

from conftest import ROOT

NAME = 'mxlite-0.1.0'
NEEDED = ['pyproject.toml', 'setup.py', 'MANIFEST.in', 'README.md', 'LICENSE', 'NOTICE',
          'licenses/nanobind-LICENSE', 'licenses/robin-map-LICENSE',
          'amalgamation/amalgamate.py', 'amalgamation/sources.txt',
          'bindings/python/src/core.cc', 'bindings/python/src/convert.h',
          'bindings/python/mxlite/__init__.py',
          'bindings/python/mxlite/_core.pyi', 'bindings/python/mxlite/py.typed',
          'bindings/python/mxlite/demo/digits-symbol.json',
          'bindings/python/mxlite/demo/digits-0000.params',
          'bindings/python/mxlite/demo/digits-test.npz']


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f'{command} failed:\n{result.stdout[-3000:]}\n' \
                                   f'{result.stderr[-3000:]}'
    return result


def predict_sources():
    """Every file under predict/ (the amalgamation reads them all)."""
    found = []
    for root, dirs, files in os.walk(os.path.join(ROOT, 'predict')):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        found += [os.path.relpath(os.path.join(root, f), ROOT).replace(os.sep, '/')
                  for f in files]
    return sorted(found)


@pytest.fixture(scope='module')
def sdist(tmp_path_factory):
    out = tmp_path_factory.mktemp('sdist')
    if importlib.util.find_spec('build'):
        command = [sys.executable, '-m', 'build', '--sdist', '--no-isolation', '--outdir',
                   str(out), ROOT]
    else:  # setuptools alone (the test environment need not have `build`)
        command = [sys.executable, 'setup.py', '-q', 'sdist', '--dist-dir', str(out)]
    run(command, cwd=ROOT)
    [archive] = list(out.glob('*.tar.gz'))
    assert archive.name == f'{NAME}.tar.gz'
    return archive


def test_sdist_holds_what_the_build_needs(sdist):
    with tarfile.open(sdist) as tar:
        names = {name[len(NAME) + 1:] for name in tar.getnames() if name.startswith(NAME + '/')}
        pkg_info = tar.extractfile(f'{NAME}/PKG-INFO').read().decode()
    missing = [path for path in NEEDED + predict_sources() if path not in names]
    assert not missing, f'the sdist lacks {missing}'
    assert not [n for n in names if '__pycache__' in n or n.endswith(('.o', '.so', '.pyc'))]
    metadata = email.message_from_string(pkg_info)
    assert metadata['License-Expression'] == 'Apache-2.0'
    assert metadata['Requires-Python'] == '>=3.10'
    classifiers = metadata.get_all('Classifier')
    assert 'Programming Language :: Python :: 3 :: Only' in classifiers
    # PEP 639: with an SPDX expression no "License ::" classifier may appear.
    assert not [c for c in classifiers if c.startswith('License ::')]
    license_text = open(os.path.join(ROOT, 'LICENSE')).read()
    assert 'Apache License' in license_text and 'Version 2.0, January 2004' in license_text


def test_requires_python_matches_nanobind():
    # nanobind, the pinned build requirement, sets the lowest Python.
    from importlib.metadata import PackageNotFoundError, metadata
    try:
        nanobind = metadata('nanobind')
    except PackageNotFoundError:
        pytest.skip('nanobind is not installed here')
    with open(os.path.join(ROOT, 'pyproject.toml')) as f:
        pyproject = f.read()
    assert f'"nanobind=={nanobind["Version"]}"' in pyproject
    assert f'requires-python = "{nanobind["Requires-Python"]}"' in pyproject


def test_wheel_built_from_the_sdist_works(sdist, tmp_path):
    if not importlib.util.find_spec('nanobind'):
        pytest.skip('building the wheel offline needs nanobind in this environment')
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / 'src', filter='data')
    source = tmp_path / 'src' / NAME
    run([sys.executable, '-m', 'pip', 'wheel', '--no-build-isolation', '--no-deps', '--no-index',
         '-w', str(tmp_path / 'wheel'), str(source)], cwd=tmp_path)
    [wheel] = list((tmp_path / 'wheel').glob('mxlite-0.1.0-*.whl'))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = email.message_from_bytes(archive.read(f'{NAME}.dist-info/METADATA'))
        archive.extractall(tmp_path / 'installed')
    dist_info = f'{NAME}.dist-info'
    for path in ('LICENSE', 'NOTICE', 'licenses/nanobind-LICENSE',
                 'licenses/robin-map-LICENSE'):
        assert f'{dist_info}/licenses/{path}' in names, path
    assert 'mxlite/libmxlite.so' in names and 'mxlite/py.typed' in names
    assert [n for n in names if n.startswith('mxlite/_core.') and n.endswith('.so')]
    assert metadata['License-Expression'] == 'Apache-2.0'
    # Run from the wheel's files alone: the demo model predicts what the
    # installed package predicts.
    import mxlite
    test = np.load(os.path.join(os.path.dirname(mxlite.__file__), 'demo', 'digits-test.npz'))
    batch = (test['images'][:32].astype(np.float32) / np.float32(16.0))[:, None, :, :]
    expected = mxlite.Predictor.load(os.path.join(os.path.dirname(mxlite.__file__), 'demo',
                                                  'digits'))(data=batch)
    np.save(tmp_path / 'batch.npy', batch)
    code = ('import os, sys, numpy as np, mxlite\n'
            'assert mxlite.__file__.startswith(sys.argv[1]), mxlite.__file__\n'
            'prefix = os.path.join(os.path.dirname(mxlite.__file__), "demo", "digits")\n'
            'out = mxlite.Predictor.load(prefix)(data=np.load(sys.argv[2]))\n'
            'np.save(sys.argv[3], out)\n'
            'assert os.path.dirname(mxlite.lib_path()) == os.path.dirname(mxlite.__file__)\n')
    env = {k: v for k, v in os.environ.items() if k != 'MXLITE_LIBRARY'}
    env['PYTHONPATH'] = str(tmp_path / 'installed')
    run([sys.executable, '-c', code, str(tmp_path / 'installed'), str(tmp_path / 'batch.npy'),
         str(tmp_path / 'out.npy')], env=env, cwd=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / 'out.npy'), expected)
