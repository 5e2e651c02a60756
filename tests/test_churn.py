"""Churn: 10 000 create/forward/free cycles in one process leave the
resident set flat.

tests/c/stress_main.c, linked with the library under test (MXLITE_LIBRARY or
the installed package's), runs the cycles on composite_net (convolutions,
batch norms, pooling, a fully connected layer, softmax: the common operators'
state, workspaces and arenas) and prints the RSS (/proc/self/statm) after
the first 1 000 cycles, by when the allocator's free lists and the per-thread
caches are warm, and at the end. Three loops: create/forward/free; the same
with an MXPredReshape of each handle and a forward on the reshaped one; and
MXNDListCreate/Get/Free of the params file.

The bound, 2 MiB over 9 000 cycles: a leak of 233 bytes or more per cycle
(less than one graph node's record, far less than one weight or arena)
exceeds it, while the allocator's own slack (a few arenas' top chunks,
page-granular trimming) stays well below it: measured growth is 0-200 KiB.
A C driver, not ctypes: the Python interpreter's own allocations would blur
a bound this small.
"""
import os
import subprocess

import pytest

from capi import load_library
from conftest import FIXTURES, ROOT

CASE = 'composite_net'
SHAPE = '2,3,13,13'
CYCLES = 10000
BOUND_KIB = 2048


@pytest.fixture(scope='module')
def driver(tmp_path_factory):
    library = load_library()._name
    tmp_path = tmp_path_factory.mktemp('churn')
    exe = tmp_path / 'stress_main'
    result = subprocess.run(
        ['gcc', '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror',
         '-I', os.path.join(ROOT, 'predict', 'include'),
         os.path.join(ROOT, 'tests', 'c', 'stress_main.c'), library,
         f'-Wl,-rpath,{os.path.dirname(os.path.abspath(library))}', '-lpthread', '-o', str(exe)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-6000:]
    return exe


def rss_after(driver, mode, cycles):
    """(RSS after 1000 cycles, RSS at the end) in KiB."""
    prefix = os.path.join(FIXTURES, 'ops', CASE)
    # One operator thread: the loop measures the handles, not a pool's
    # threads starting and stopping.
    env = {**os.environ, 'MXLITE_NUM_THREADS': '1'}
    result = subprocess.run([str(driver), mode, prefix + '-symbol.json', prefix + '-0000.params',
                             SHAPE, str(cycles)], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith('rss_kib'))
    warm, end = map(int, line.split()[1:])
    assert warm > 0 and end > 0, line
    return warm, end


@pytest.mark.parametrize('mode', ['churn', 'churn-reshape', 'churn-ndlist'])
def test_resident_set_stays_flat(driver, mode):
    warm, end = rss_after(driver, mode, CYCLES)
    print(f'{mode}: RSS {warm} KiB after 1000 cycles, {end} KiB after {CYCLES}')
    assert end - warm < BOUND_KIB, (
        f'{mode}: RSS grew {end - warm} KiB between cycle 1000 and {CYCLES} '
        f'({warm} -> {end} KiB)')


def test_the_measurement_sees_a_leak(driver):
    # The same loop, never freeing its handles: 500 leaked composite_net
    # predictors between the two samples (about 65 KiB each) must exceed
    # the bound.
    warm, end = rss_after(driver, 'churn-leak', 1500)
    assert end - warm >= BOUND_KIB, (warm, end)
