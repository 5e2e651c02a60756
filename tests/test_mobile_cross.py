"""The one file on ARM, and the minimal build, against MXNet 1.9.1.

- The amalgamation cross-compiles warning-free with Debian's GCC for
  aarch64 and armv7 (hard float; as it comes and with NEON as Android's
  armeabi-v7a has it), with no -I or -D, and the C conformance
  driver (tests/c/conformance_main.c) runs under qemu-user: every operator
  case plus zoo models, each output within the oracle tolerance (1e-5 for
  operators, 1e-4 for models) of MXNet's.
- The predict-only build (-DMXLITE_PREDICT_ONLY, -fno-exceptions, -Os)
  still matches on the host, and rejects what it left out with a message
  that says so.
"""
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, load_cases
from mobile_support import (AMALGAMATE, CONFORMANCE_MAIN, check_results, op_cases,
                            require_tool, run, write_plan, zoo_cases)

TARGETS = {
    # name: (triple, qemu, extra compiler flags, zoo models run there)
    'aarch64': ('aarch64-linux-gnu', 'qemu-aarch64', [],
                ['squeezenet1.1', 'mobilenet1.0', 'mobilenetv2_1.0', 'resnet18_v1']),
    # Debian's armhf baseline (VFPv3-D16, no NEON): the file as it comes.
    'armv7': ('arm-linux-gnueabihf', 'qemu-arm', [],
              ['squeezenet1.1', 'mobilenet1.0', 'resnet18_v1']),
    # What Android's armeabi-v7a guarantees: the vector code becomes NEON.
    'armv7-neon': ('arm-linux-gnueabihf', 'qemu-arm', ['-march=armv7-a', '-mfpu=neon'],
                   ['squeezenet1.1', 'mobilenet1.0']),
}


@pytest.fixture(scope='module')
def amalgamation(tmp_path_factory):
    out = tmp_path_factory.mktemp('amalgamation')
    run([sys.executable, AMALGAMATE, '--out-dir', str(out)])
    return out


def build_driver(amalgamation, work, cxx, cc, flags=(), link_flags=()):
    """Compiles the amalgamation and the C driver into one executable."""
    run([cxx, '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror', *flags, '-c',
         str(amalgamation / 'mxlite-all.cc'), '-o', str(work / 'mxlite-all.o')])
    run([cc, '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror', '-I', str(amalgamation), '-c',
         CONFORMANCE_MAIN, '-o', str(work / 'conformance_main.o')])
    exe = work / 'conformance_main'
    run([cxx, *link_flags, str(work / 'conformance_main.o'), str(work / 'mxlite-all.o'),
         '-o', str(exe)])
    return exe


@pytest.mark.parametrize('target', sorted(TARGETS))
def test_cross_build_matches_mxnet_under_qemu(amalgamation, tmp_path, target):
    triple, qemu, flags, models = TARGETS[target]
    cxx = require_tool(f'{triple}-g++', f'g++-{triple}')
    cc = require_tool(f'{triple}-gcc', f'gcc-{triple}')
    require_tool(qemu, 'qemu-user')
    # Static, so that qemu needs no target sysroot.
    exe = build_driver(amalgamation, tmp_path, cxx, cc, flags=flags, link_flags=['-static'])
    cases = op_cases() + zoo_cases(models)
    plan = write_plan(cases, tmp_path)
    report = run([qemu, str(exe), plan], cwd=tmp_path).stdout
    check_results(report, cases, tmp_path, target)


@pytest.fixture(scope='module')
def predict_only_driver(amalgamation, tmp_path_factory):
    # Exceptions off as well: the build wasm32-wasi gets, here with GCC.
    return build_driver(amalgamation, tmp_path_factory.mktemp('predict-only'), 'g++', 'gcc',
                        flags=['-DMXLITE_PREDICT_ONLY', '-fno-exceptions', '-Os'])


def format_cases():
    return {case.name: case for case in load_cases(os.path.join(FIXTURES, 'formats'))}


def test_predict_only_build_matches_mxnet(predict_only_driver, tmp_path):
    cases = op_cases() + zoo_cases(['squeezenet1.1']) + [format_cases()['legacy_0900']]
    plan = write_plan(cases, tmp_path)
    report = run([str(predict_only_driver), plan], cwd=tmp_path).stdout
    check_results(report, cases, tmp_path, 'predict-only')


def test_predict_only_build_names_what_it_left_out(predict_only_driver, tmp_path):
    plan = write_plan([format_cases()['legacy_0800']], tmp_path)
    result = subprocess.run([str(predict_only_driver), plan], cwd=tmp_path, capture_output=True,
                            text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'case legacy_0800 error: MXPredCreateEx: symbol JSON:' in result.stdout
    assert 'before 0.9.0' in result.stdout and 'MXLITE_NO_LEGACY_JSON' in result.stdout
