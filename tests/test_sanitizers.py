"""The bad-input, fuzz and C API suites again, against a library built with
AddressSanitizer and UndefinedBehaviorSanitizer (float-cast-overflow
included): a memory error or undefined behaviour that happens not to crash
in the normal build fails here."""
import os
import subprocess
import sys

from conftest import HERE
from cpp_build import amalgamate


def test_suites_are_clean_under_asan_and_ubsan(tmp_path):
    amalgamate(tmp_path)
    library = tmp_path / 'libmxlite-asan.so'
    build = subprocess.run(
        # float-cast-overflow (a double out of range cast to an integer) is
        # not part of GCC's or clang's -fsanitize=undefined.
        ['g++', '-std=c++17', '-O1', '-g', '-fsanitize=address,undefined,float-cast-overflow',
         '-fno-sanitize-recover=undefined,float-cast-overflow', '-fPIC', '-shared',
         str(tmp_path / 'mxlite-all.cc'),
         '-o', str(library), '-lpthread'], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    runtimes = [subprocess.run(['gcc', f'-print-file-name={name}'], capture_output=True,
                               text=True, check=True).stdout.strip()
                for name in ('libasan.so', 'libubsan.so')]
    env = {**os.environ, 'LD_PRELOAD': ' '.join(runtimes), 'MXLITE_LIBRARY': str(library),
           # Python itself leaks by design; huge requests must return NULL, as
           # calloc does outside the sanitizer.
           'ASAN_OPTIONS': 'detect_leaks=0:allocator_may_return_null=1'}
    # The inner session keeps its temporary files under this test's own
    # directory (--basetemp): numbering one of its own under /tmp put it in
    # pytest's rotation of those directories, and once (after
    # test_isa_paths' four inner sessions) the library built above vanished
    # before the inner tests loaded it (OSError in every test's setup).
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '--basetemp', str(tmp_path / 'inner'), 'test_fuzz.py', 'test_bad_input.py',
         'test_c_api.py', 'test_ops.py'],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout[-3000:] + result.stderr[-6000:])
    assert 'ERROR: AddressSanitizer' not in result.stderr
    assert 'runtime error' not in result.stderr
