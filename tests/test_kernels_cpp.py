"""C++ operator tests (tests/cpp/op_smoke_test.cc): each operator against a
naive reference written in the test, on awkward sizes, plus shape inference
and attribute errors. Built from the amalgamated source, so it exercises
exactly the code that ships."""
import os
import subprocess
import sys

from conftest import ROOT


def test_operators_match_naive_references(tmp_path):
    subprocess.run([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'),
                    '--out-dir', str(tmp_path)], check=True, capture_output=True)
    exe = tmp_path / 'op_smoke_test'
    build = subprocess.run(
        ['g++', '-std=c++17', '-O1', '-Wall', '-Wextra', '-Werror',
         os.path.join(ROOT, 'tests', 'cpp', 'op_smoke_test.cc'), str(tmp_path / 'mxlite-all.cc'),
         '-o', str(exe), '-lpthread'], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
    assert result.stdout.strip().endswith('0 failures')
