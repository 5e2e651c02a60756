"""The dependency engine (predict/engine/engine.h) through tests/cpp/engine_test.cc:
read-after-write, write-after-read and write-after-write orderings with
deliberately slow operations, a random program checked against a sequential
run, concurrent pushers, waits, and failures surfacing at the next wait; on
the naive engine, the threaded engine with one worker and with many.

The test program is built from the amalgamated source (the code that
ships), run repeatedly with more worker threads than cores, then built again
from the engine's sources alone under ThreadSanitizer, and once more with
MXLITE_NO_THREADS and without exceptions, where every engine is naive."""
import os
import subprocess

import pytest

from conftest import ROOT
from cpp_build import build_driver

ENGINE_TEST = os.path.join(ROOT, 'tests', 'cpp', 'engine_test.cc')
ENGINE_SOURCES = [os.path.join(ROOT, 'predict', *name.split('/'))
                  for name in ('engine/engine.cc', 'engine/threaded_engine.cc',
                               'base/options.cc', 'c_api/environment.cc')]


def build(args, output):
    result = subprocess.run(['g++', '-std=c++17', '-Wall', '-Wextra', '-Werror', *args,
                             '-o', str(output), '-lpthread'], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-6000:]
    return output


def run(exe, *args, env=None, timeout=600):
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def assert_passed(result):
    assert result.returncode == 0, (result.stdout[-4000:] + result.stderr[-4000:])
    assert result.stdout.strip().endswith(' 0 failures'), result.stdout[-4000:]


@pytest.fixture(scope='module')
def engine_test(tmp_path_factory):
    return build_driver('engine_test', tmp_path_factory.mktemp('engine'))


def test_orderings_and_failures_hold_repeatedly_under_many_threads(engine_test):
    # 64 workers on a machine with a few cores: operations are preempted
    # mid-way, which is when a missing dependency shows.
    assert_passed(run(engine_test, '--repeat', '4', '--threads', '64'))


def test_engine_is_clean_under_thread_sanitizer(tmp_path):
    exe = build(['-O1', '-g', '-fsanitize=thread', ENGINE_TEST, *ENGINE_SOURCES],
                tmp_path / 'engine_test_tsan')
    result = run(exe, '--repeat', '2', '--threads', '16',
                 env={'TSAN_OPTIONS': 'halt_on_error=1'})
    assert 'WARNING: ThreadSanitizer' not in result.stderr, result.stderr[-6000:]
    assert_passed(result)


def test_no_threads_build_has_only_the_naive_engine(tmp_path):
    exe = build(['-O1', '-DMXLITE_NO_THREADS', '-fno-exceptions', ENGINE_TEST,
                 *ENGINE_SOURCES], tmp_path / 'engine_test_no_threads')
    assert_passed(run(exe, '--repeat', '1'))
    assert run(exe, '--global', env={'MXLITE_ENGINE': 'threaded'}).stdout.strip() == \
        'engine: naive'


@pytest.mark.parametrize('setting, expected', [
    (None, 'engine: threaded'),
    ('threaded', 'engine: threaded'),
    ('naive', 'engine: naive'),
])
def test_mxlite_engine_chooses_the_engine(engine_test, setting, expected):
    env = {k: v for k, v in os.environ.items() if k != 'MXLITE_ENGINE'}
    if setting is not None:
        env['MXLITE_ENGINE'] = setting
    result = subprocess.run([str(engine_test), '--global'], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == expected


@pytest.mark.parametrize('variable, value, message', [
    ('MXLITE_ENGINE', 'parallel',
     "MXLITE_ENGINE must be 'naive' or 'threaded', not 'parallel'"),
    ('MXLITE_ENGINE_THREADS', 'many',
     "MXLITE_ENGINE_THREADS must be a whole number from 1 to 4096, not 'many'"),
])
def test_bad_engine_settings_are_errors_naming_them(engine_test, variable, value, message):
    result = run(engine_test, '--global', env={variable: value})
    assert result.returncode == 1
    assert result.stdout.strip() == 'error: ' + message
