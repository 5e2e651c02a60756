"""MXNet's CPU tie order (predict/operators/mxnet_sort.h) against libstdc++'s
std::sort and std::partial_sort, which MXNet 1.9.1's topk, sort and argsort
call: tests/cpp/mxnet_sort_test.cc compares whole permutations on rows full of
ties, sorted, reversed and organ-pipe rows and rows with NaN, every k, both
directions, under AddressSanitizer and UBSan. The op fixtures named ties_*
(tests/test_ops.py) check the same order against MXNet itself."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.skipif(shutil.which('g++') is None, reason='needs g++ (libstdc++ is the reference)')
def test_sort_orders_ties_as_libstdcxx(tmp_path):
    exe = tmp_path / 'mxnet_sort_test'
    build = subprocess.run(
        ['g++', '-std=c++17', '-O1', '-g', '-fsanitize=address,undefined',
         '-fno-sanitize-recover=undefined', '-Wall', '-Wextra', '-Werror',
         os.path.join(ROOT, 'tests', 'cpp', 'mxnet_sort_test.cc'), '-o', str(exe)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert run.stdout.strip().endswith(' 0 failures'), run.stdout[-2000:]
