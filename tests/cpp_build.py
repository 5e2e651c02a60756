"""Builds C++ test drivers (tests/cpp/*.cc) against the amalgamated source.

The amalgamation is compiled once per content and flags into an object file
cached under build/test-objects, so several test files linking their own
driver against the same code pay for the big compile once."""
import hashlib
import os
import subprocess
import sys
import time

from conftest import ROOT

CACHE = os.path.join(ROOT, 'build', 'test-objects')
WARNINGS = ['-Wall', '-Wextra', '-Werror']


def amalgamate(out_dir):
    """Writes this checkout's amalgamation (mxlite-all.cc and its headers) to
    out_dir; returns the path of mxlite-all.cc."""
    subprocess.run([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'),
                    '--out-dir', str(out_dir)], check=True, capture_output=True)
    return os.path.join(str(out_dir), 'mxlite-all.cc')


def amalgamation_object(tmp_path, flags=('-O1',)):
    """The object file of build/mxlite-all.cc as this checkout generates it."""
    amalgamate(tmp_path)
    source = tmp_path / 'mxlite-all.cc'
    key = hashlib.sha256(source.read_bytes() + ' '.join(flags).encode()).hexdigest()[:16]
    os.makedirs(CACHE, exist_ok=True)
    obj = os.path.join(CACHE, f'mxlite-all-{key}.o')
    if not os.path.exists(obj):
        partial = obj + f'.{os.getpid()}.tmp'
        result = subprocess.run(['g++', '-std=c++17', *flags, *WARNINGS, '-c', str(source),
                                 '-o', partial], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-6000:]
        os.replace(partial, obj)  # atomic: a concurrent run sees all or nothing
        # Objects of older sources are dead weight after an hour.
        for name in os.listdir(CACHE):
            path = os.path.join(CACHE, name)
            if path != obj and time.time() - os.path.getmtime(path) > 3600:
                os.remove(path)
    return obj


def build_driver(driver, tmp_path, flags=('-O1',)):
    """tests/cpp/<driver>.cc linked with the amalgamation; returns the executable."""
    obj = amalgamation_object(tmp_path, flags)
    exe = tmp_path / driver
    result = subprocess.run(['g++', '-std=c++17', *flags, *WARNINGS,
                             os.path.join(ROOT, 'tests', 'cpp', driver + '.cc'), obj,
                             '-o', str(exe), '-lpthread'], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-6000:]
    return exe
