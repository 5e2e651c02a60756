"""ThreadSanitizer over the C API's concurrent paths: several
MXPredCreateMultiThread handles run by threads of their own at once (each
also reshaping its handle), and one handle whose batch runs through two
workers at once (split_batch) or whose operators split their work over a pool
of MXLITE_NUM_THREADS=2 threads (split_batch=0), many times.

The amalgamation and tests/c/stress_main.c are built with clang++
-fsanitize=thread -O1 -g, once per module (and cached under
build/test-objects by content, as cpp_build.py caches its objects). TSan
does not instrument 256- and 512-bit vector loads and stores, so the driver
runs with MXLITE_ISA=scalar (every kernel in plain C++, all accesses seen)
and again with the default ISA (the dispatch and the vector kernels'
threading). halt_on_error=1 and exitcode=66: the first report ends the run
with status 66, and the report itself must not appear.
"""
import hashlib
import os
import shutil
import subprocess
import time

import pytest

from conftest import FIXTURES, ROOT
from cpp_build import amalgamate

CACHE = os.path.join(ROOT, 'build', 'test-objects')
FLAGS = ['-O1', '-g', '-fsanitize=thread']
CASE = 'composite_net'
SHAPE = '4,3,48,48'  # big enough that operators split work over the pool
TSAN_EXIT = 66

pytestmark = pytest.mark.skipif(shutil.which('clang++') is None, reason='needs clang++')


def tsan_object(tmp_path):
    """The amalgamation compiled with TSan: cached by its content and flags."""
    amalgamate(tmp_path)
    source = tmp_path / 'mxlite-all.cc'
    key = hashlib.sha256(source.read_bytes() + ' '.join(['clang++'] + FLAGS).encode())
    os.makedirs(CACHE, exist_ok=True)
    obj = os.path.join(CACHE, f'mxlite-all-tsan-{key.hexdigest()[:16]}.o')
    if not os.path.exists(obj):
        partial = f'{obj}.{os.getpid()}.tmp'
        result = subprocess.run(['clang++', '-std=c++17', *FLAGS, '-Wall', '-Wextra', '-Werror',
                                 '-c', str(source), '-o', partial],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-6000:]
        os.replace(partial, obj)  # atomic: a concurrent run sees all or nothing
        for name in os.listdir(CACHE):  # older sources' objects are dead weight
            path = os.path.join(CACHE, name)
            if path != obj and name.startswith('mxlite-all-tsan-') and \
                    time.time() - os.path.getmtime(path) > 3600:
                os.remove(path)
    return obj


@pytest.fixture(scope='module')
def driver(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('tsan')
    obj = tsan_object(tmp_path)
    exe = tmp_path / 'stress_main'
    main_obj = tmp_path / 'stress_main.o'
    for command in (['clang', '-std=c99', *FLAGS, '-Wall', '-Wextra', '-Werror',
                     '-I', os.path.join(ROOT, 'predict', 'include'), '-c',
                     os.path.join(ROOT, 'tests', 'c', 'stress_main.c'), '-o', str(main_obj)],
                    ['clang++', *FLAGS, str(main_obj), obj, '-o', str(exe), '-lpthread']):
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-6000:]
    return exe


def run_driver(driver, isa, extra_env=None, handles=4, iterations=10):
    env = {**os.environ,
           'TSAN_OPTIONS': f'halt_on_error=1 exitcode={TSAN_EXIT} second_deadlock_stack=1',
           'MXLITE_NUM_THREADS': '2',
           # Workers sleep soon after a loop, so the pool's wake-up path runs
           # between forwards too, not only the spinning one.
           'MXLITE_SPIN_MS': '1'}
    env.pop('LD_PRELOAD', None)  # the ASan suite's runtime must not load here
    env.pop('MXLITE_ISA', None)
    if isa != 'default':
        env['MXLITE_ISA'] = isa
    env.update(extra_env or {})
    prefix = os.path.join(FIXTURES, 'ops', CASE)
    return subprocess.run([str(driver), 'threads', prefix + '-symbol.json',
                           prefix + '-0000.params', SHAPE, str(handles), str(iterations)],
                          env=env, capture_output=True, text=True, timeout=300)


# split_batch on: the batch of 4 runs through two one-thread workers at once
# (executor.h, "Splitting a batch"); off: each operator splits its work over
# the pool.
@pytest.mark.parametrize('split', ['1', '0'])
@pytest.mark.parametrize('isa', ['scalar', 'default'])
def test_concurrent_handles_and_pool_are_race_free(driver, isa, split):
    result = run_driver(driver, isa, {'MXLITE_SPLIT_BATCH': split})
    assert 'ThreadSanitizer' not in result.stderr, result.stderr[-8000:]
    assert result.returncode == 0, result.stderr[-8000:]
    assert 'ok: 4 handles x 10 iterations' in result.stdout


def test_tsan_reports_a_race(tmp_path):
    """The check can fail: a deliberate race, built the same way, halts
    with the exit code above and a report."""
    source = tmp_path / 'race.c'
    source.write_text(
        '#include <pthread.h>\n'
        'static int counter;\n'
        'static void *bump(void *arg) { (void)arg; for (int i = 0; i < 1000; ++i) ++counter;'
        ' return 0; }\n'
        'int main(void) { pthread_t a, b; pthread_create(&a, 0, bump, 0);'
        ' pthread_create(&b, 0, bump, 0); pthread_join(a, 0); pthread_join(b, 0);'
        ' return counter == 0; }\n')
    exe = tmp_path / 'race'
    subprocess.run(['clang', *FLAGS, str(source), '-o', str(exe), '-lpthread'], check=True)
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, 'TSAN_OPTIONS':
                                 f'halt_on_error=1 exitcode={TSAN_EXIT}'})
    assert result.returncode == TSAN_EXIT, result.stderr[-3000:]
    assert 'WARNING: ThreadSanitizer: data race' in result.stderr
