"""Prepared weights and large arrays in huge-page slabs (predict/base/large_pages.h).

The allocator itself through tests/cpp/large_pages_test.cc, with huge pages
on, off, and a bad MXLITE_HUGE_PAGES; and a zoo model's output, to the bit,
with and without them (MXLITE_HUGE_PAGES is a process setting, read once:
each run is its own process)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import HERE, ROOT, ZOO_DIR, assert_close, load_cases

SOURCES = [os.path.join(ROOT, 'tests', 'cpp', 'large_pages_test.cc')] + [
    os.path.join(ROOT, 'predict', *name.split('/'))
    for name in ('base/large_pages.cc', 'base/options.cc', 'c_api/environment.cc')]


@pytest.fixture(scope='module')
def driver(tmp_path_factory):
    exe = tmp_path_factory.mktemp('large_pages') / 'large_pages_test'
    result = subprocess.run(['g++', '-std=c++17', '-O1', '-Wall', '-Wextra', '-Werror', *SOURCES,
                             '-o', str(exe), '-lpthread'], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    return exe


@pytest.mark.parametrize('setting', [None, '1', 'true', '0', 'off', 'false'])
def test_slabs(driver, setting):
    env = {k: v for k, v in os.environ.items() if k != 'MXLITE_HUGE_PAGES'}
    if setting is not None:
        env['MXLITE_HUGE_PAGES'] = setting
    result = subprocess.run([str(driver)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().splitlines()[-1] == '0 failures', result.stdout
    on = setting not in ('0', 'off', 'false')
    used = on and sys.platform.startswith('linux')
    assert f'slabs {"used" if used else "not used"}' in result.stdout, result.stdout


def test_a_bad_setting_is_an_error_naming_it(driver):
    result = subprocess.run([str(driver)], env={**os.environ, 'MXLITE_HUGE_PAGES': 'sometimes'},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "MXLITE_HUGE_PAGES must be 1/true/on or 0/false/off, not 'sometimes'" in result.stdout


def test_outputs_are_the_same_bits_with_and_without_huge_pages(tmp_path):
    cases = {case.name: case for case in load_cases(ZOO_DIR)}
    assert 'resnet18_v1' in cases, f'resnet18_v1 missing from {ZOO_DIR}: run scripts/run_tests.sh'
    script = (
        'import sys, numpy as np\n'
        f'sys.path.insert(0, {HERE!r})\n'
        'from capi import API, load_library\n'
        'from conftest import ZOO_DIR, load_cases\n'
        'case = {c.name: c for c in load_cases(ZOO_DIR)}["resnet18_v1"]\n'
        'inputs, expected = case.io()\n'
        'out = API(load_library()).predict(case.symbol_json, case.params, inputs,\n'
        '                                  num_outputs=len(expected))[0]\n'
        'np.save(sys.argv[1], out)\n')
    outputs = {}
    for setting in ('1', '0'):
        path = str(tmp_path / f'out{setting}.npy')
        result = subprocess.run([sys.executable, '-c', script, path], cwd=HERE,
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, 'MXLITE_HUGE_PAGES': setting})
        assert result.returncode == 0, result.stderr[-3000:]
        outputs[setting] = np.load(path)
    assert np.array_equal(outputs['1'], outputs['0'])
    case = cases['resnet18_v1']
    assert_close(outputs['1'], case.io()[1][0], case.rtol, 'resnet18_v1')
