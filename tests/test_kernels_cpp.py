"""C++ operator tests (tests/cpp/op_smoke_test.cc): each operator against a
naive reference written in the test, on awkward sizes, plus shape inference
and attribute errors. Built from the amalgamated source, so it exercises
exactly the code that ships."""
import os
import subprocess

import pytest

from conftest import ROOT
from cpp_build import amalgamate


# Each kernel path in turn: the instruction set capped (AVX2, portable), and
# the shifted-view convolutions turned off (im2col for every 2-D layer).
CONFIGURATIONS = {
    'default': {},
    'avx2': {'MXLITE_ISA': 'avx2'},
    'scalar': {'MXLITE_ISA': 'scalar'},
    'im2col': {'MXLITE_SHIFTED_GEMM': '0'},
}


@pytest.fixture(scope='module')
def op_smoke_test(tmp_path_factory):
    out = tmp_path_factory.mktemp('op_smoke')
    amalgamate(out)
    exe = out / 'op_smoke_test'
    build = subprocess.run(
        ['g++', '-std=c++17', '-O1', '-Wall', '-Wextra', '-Werror',
         os.path.join(ROOT, 'tests', 'cpp', 'op_smoke_test.cc'), str(out / 'mxlite-all.cc'),
         '-o', str(exe), '-lpthread'], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    return exe


@pytest.mark.parametrize('name', sorted(CONFIGURATIONS))
def test_operators_match_naive_references(op_smoke_test, name):
    env = {**os.environ, **CONFIGURATIONS[name]}
    result = subprocess.run([str(op_smoke_test)], capture_output=True, text=True, timeout=600,
                            env=env)
    assert result.returncode == 0, result.stdout[-4000:]
    assert result.stdout.strip().endswith('0 failures')
