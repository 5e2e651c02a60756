"""Builds mxlite's shared library from the amalgamated source into the package.

The C++ core is merged into build/mxlite-all.cc by amalgamation/amalgamate.py
and compiled once, with one compiler command, into libmxlite.so, which the
wheel ships inside the `mxlite` package (see mxlite.lib_path()).
"""
import os
import shlex
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, 'build')
LIB_NAME = 'libmxlite.dylib' if sys.platform == 'darwin' else 'libmxlite.so'


def build_library():
    subprocess.check_call([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'),
                           '--out-dir', BUILD])
    source = os.path.join(BUILD, 'mxlite-all.cc')
    library = os.path.join(BUILD, LIB_NAME)
    if os.path.exists(library) and os.path.getmtime(library) >= os.path.getmtime(source):
        return library
    compiler = shlex.split(os.environ.get('CXX', 'c++'))
    command = compiler + ['-std=c++17', '-O2', '-Wall', '-Wextra', '-fPIC', '-shared',
                          '-fvisibility=hidden', source, '-o', library, '-lpthread']
    print(' '.join(command), flush=True)
    subprocess.check_call(command)
    return library


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        library = build_library()
        target = os.path.join(self.build_lib, 'mxlite', LIB_NAME)
        self.copy_file(library, target)


class BinaryDistribution(Distribution):
    """The wheel carries a native library, so it is platform specific."""

    def has_ext_modules(self):
        return True


setup(cmdclass={'build_py': BuildWithLibrary}, distclass=BinaryDistribution)
