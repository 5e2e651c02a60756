"""Builds mxlite's native parts from the amalgamated source.

amalgamation/amalgamate.py merges the C++ core into build/mxlite-all.cc. The
core compiles once, into one object, and links once, into one library:

  libmxlite.so   the core. It exports the C predict API (the functions of
                 c_predict_api.h and mxlite.h) for the ctypes client and C
                 programs (mxlite.lib_path()), and the C++ API in namespace
                 mxlite for the extension below. A linker version script
                 (bindings/python/libmxlite.map) keeps everything else (the
                 C++ standard library's instantiations, helpers outside the
                 namespace) local.
  mxlite._core   the nanobind extension: the binding (bindings/python/src/
                 core.cc and convert.h, over the core's C++ API) and
                 nanobind's own sources (src/nb_combined.cpp from the
                 installed nanobind package), linked against libmxlite.so
                 beside it (rpath $ORIGIN).

On CPython 3.12 and newer (not free-threaded) the extension is built for the
stable ABI (Py_LIMITED_API=0x030C0000, nanobind's STABLE_ABI), named
_core.abi3.so, and the wheel is tagged cp312-abi3: one wheel serves 3.12+.
Older Pythons get a per-version extension and wheel. The core object does not
include Python headers, so its cache entry serves every Python version.

With MXLITE_CUDA=1 the core is compiled by nvcc instead (NVCC names it,
CUDA_ARCH its targets as in the Makefile) and linked with cuBLAS and the CUDA
runtime (MXLITE_CUDA_LIBS, default "-lcublas -lcudart"; a library given by
path also puts its folder on the rpath): predictors then run on CUDA GPUs
with ctx=mx.gpu(i) (docs/cuda.md). The binding and nanobind stay C++.

Objects are cached in build/python/ under a hash of everything that goes into
them (sources, headers, flags, compiler, and for the Python-facing objects the
Python and nanobind versions), so a reinstall of an unchanged tree compiles
nothing. The three objects compile in parallel (MXLITE_BUILD_JOBS, default: up
to 3, one per core). CXX picks the compiler. Every compiler command is printed.
See docs/packaging.md for the choices.
"""
import concurrent.futures
import glob
import hashlib
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, 'build')
CACHE = os.path.join(BUILD, 'python')
LIB_NAME = 'libmxlite.dylib' if sys.platform == 'darwin' else 'libmxlite.so'
BINDING_SOURCE = os.path.join(ROOT, 'bindings', 'python', 'src', 'core.cc')
BINDING_HEADERS = [os.path.join(ROOT, 'bindings', 'python', 'src', 'convert.h')]
VERSION_SCRIPT = os.path.join(ROOT, 'bindings', 'python', 'libmxlite.map')
# The stable ABI: nanobind supports Py_LIMITED_API from CPython 3.12 on, and
# not on free-threaded builds.
STABLE_ABI = (sys.version_info >= (3, 12) and sys.implementation.name == 'cpython'
              and not sysconfig.get_config_var('Py_GIL_DISABLED'))
LIMITED_API = ['-DPy_LIMITED_API=0x030C0000'] if STABLE_ABI else []

# The core's flags are the Makefile's (LIB_FLAGS), less the link flags, with
# default visibility so that the version script can export namespace mxlite to
# the extension; inline functions stay hidden (each user has its own copy),
# and -fno-semantic-interposition keeps calls inside the library direct and
# inlinable although their targets are exported.
CORE_FLAGS = ['-std=c++17', '-O2', '-Wall', '-Wextra', '-fPIC', '-fvisibility-inlines-hidden',
              '-fno-semantic-interposition', '-ffunction-sections', '-fdata-sections']
# nanobind's recommended release flags (see the top of src/nb_combined.cpp).
NANOBIND_FLAGS = ['-std=c++17', '-O2', '-fPIC', '-fvisibility=hidden', '-DNDEBUG',
                  '-DNB_COMPACT_ASSERTIONS', '-fno-strict-aliasing', '-ffunction-sections',
                  '-fdata-sections']
BINDING_FLAGS = ['-std=c++17', '-O2', '-Wall', '-Wextra', '-fPIC', '-fvisibility=hidden',
                 '-DNDEBUG', '-DNB_COMPACT_ASSERTIONS', '-ffunction-sections',
                 '-fdata-sections']


def compiler():
    return shlex.split(os.environ.get('CXX', 'c++'))


def makefile_variable(name):
    """The value the Makefile (which the sdist carries) gives `name`, split
    into arguments: its CUDA targets and the nvcc front-end diagnostics it
    suppresses are the CUDA build's here too (see its `cuda` rule)."""
    with open(os.path.join(ROOT, 'Makefile'), encoding='utf-8') as f:
        for line in f:
            match = re.match(rf'{name}\s*[?:]?=\s*(.*)$', line)
            if match:
                return shlex.split(match.group(1))
    sys.exit(f'mxlite: the Makefile sets no {name}')


def cuda_requested():
    return os.environ.get('MXLITE_CUDA', '0') not in ('', '0')


def cuda_link_arguments():
    """The CUDA libraries to link the core with, and an rpath entry for the
    folder of each one given by path."""
    libraries = shlex.split(os.environ.get('MXLITE_CUDA_LIBS', '-lcublas -lcudart'))
    folders = sorted({os.path.dirname(os.path.abspath(part)) for part in libraries
                      if not part.startswith('-') and os.path.isfile(part)})
    return libraries + [f'-Wl,-rpath,{folder}' for folder in folders] + ['-ldl']


def compiler_accepts(flag):
    """Whether the C++ compiler takes `flag` (it compiles a one-line file)."""
    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, 'probe.cc')
        with open(source, 'w', encoding='utf-8') as f:
            f.write('int probe;\n')
        result = subprocess.run(compiler() + [flag, '-c', source, '-o', source + '.o'],
                                capture_output=True)
        return result.returncode == 0


def run(command):
    print(' '.join(shlex.quote(part) for part in command), flush=True)
    subprocess.check_call(command)


def digest(parts, files):
    """sha256 over strings and file contents: the cache key of an object."""
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() + b'\0')
    for path in files:
        with open(path, 'rb') as f:
            hasher.update(f.read())
    return hasher.hexdigest()[:16]


class ObjectJob:
    """One compiler command producing one cached object file."""

    def __init__(self, name, source, flags, depends=(), python=True, command=None):
        self.name = name
        self.command_base = (command or compiler()) + flags + ['-c', source]
        # An object that includes no Python header serves every Python.
        key = digest(self.command_base + ([sys.version] if python else []), [source, *depends])
        self.output = os.path.join(CACHE, f'{name}-{key}.o')

    def run(self):
        if os.path.exists(self.output):
            print(f'using cached {os.path.relpath(self.output, ROOT)}', flush=True)
            return self.output
        partial = self.output + '.tmp'
        run(self.command_base + ['-o', partial])
        os.replace(partial, self.output)
        # Older versions of this object only take space now (those of the
        # last hour may belong to a build running beside this one).
        for stale in glob.glob(os.path.join(CACHE, f'{glob.escape(self.name)}-*.o')):
            if stale != self.output and time.time() - os.path.getmtime(stale) > 3600:
                os.remove(stale)
        return self.output


def nanobind_paths():
    try:
        import nanobind
    except ImportError:
        sys.exit('mxlite: building the Python extension needs nanobind '
                 '(pip install nanobind, or build with build isolation)')
    return nanobind.source_dir(), nanobind.include_dir(), nanobind.__version__


def build_native(package_dir, extension_path):
    """Compiles the objects (or reuses cached ones) and links both libraries."""
    run([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'), '--out-dir', BUILD])
    os.makedirs(CACHE, exist_ok=True)
    nb_source, nb_include, nb_version = nanobind_paths()
    python_include = sysconfig.get_paths()['include']
    robin_map = os.path.join(os.path.dirname(nb_source), 'ext', 'robin_map', 'include')
    system_includes = ['-isystem', python_include, '-isystem', nb_include]
    predict_headers = sorted(glob.glob(os.path.join(ROOT, 'predict', '**', '*.h'), recursive=True)
                             + glob.glob(os.path.join(ROOT, 'predict', '**', '*.inc'),
                                         recursive=True))
    # GCC gives the static variables of template functions (kernels'
    # thread-local scratch) STB_GNU_UNIQUE binding, which the dynamic linker
    # shares between every library in the process that defines them, even
    # when loaded RTLD_LOCAL: with a second copy of libmxlite loaded through
    # ctypes, both copies then used one scratch (wrong outputs) and both
    # destroyed it (a double free at exit). Clang emits no unique symbols.
    unique = ['-fno-gnu-unique'] if compiler_accepts('-fno-gnu-unique') else []
    core_source = os.path.join(BUILD, 'mxlite-all.cc')
    if cuda_requested():
        host_flags = [flag for flag in CORE_FLAGS + unique if flag not in ('-std=c++17', '-O2')]
        core = ObjectJob('mxlite-all-cuda', core_source,
                         ['-x', 'cu', '-std=c++17', '-O2']
                         + (shlex.split(os.environ['CUDA_ARCH']) if 'CUDA_ARCH' in os.environ
                            else makefile_variable('CUDA_ARCH'))
                         + ['-Xcompiler', ','.join(host_flags)]
                         + makefile_variable('CUDA_SUPPRESS'),
                         python=False, command=shlex.split(os.environ.get('NVCC', 'nvcc')))
    else:
        core = ObjectJob('mxlite-all', core_source, CORE_FLAGS + unique, python=False)
    nanobind = ObjectJob(f'nanobind-{nb_version}', os.path.join(nb_source, 'nb_combined.cpp'),
                         NANOBIND_FLAGS + LIMITED_API + system_includes
                         + ['-isystem', robin_map])
    binding = ObjectJob('core', BINDING_SOURCE,
                        BINDING_FLAGS + LIMITED_API + system_includes
                        + ['-I', os.path.join(ROOT, 'predict')],
                        depends=predict_headers + BINDING_HEADERS
                        + [os.path.join(nb_include, 'nanobind', 'nanobind.h')])
    jobs = int(os.environ.get('MXLITE_BUILD_JOBS', min(3, os.cpu_count() or 1)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        core_object, nanobind_object, binding_object = pool.map(
            ObjectJob.run, [core, nanobind, binding])

    os.makedirs(package_dir, exist_ok=True)
    library = os.path.join(package_dir, LIB_NAME)
    if sys.platform == 'darwin':
        library_link = ['-Wl,-install_name,@rpath/' + LIB_NAME]
        extension_link = ['-undefined', 'dynamic_lookup', '-Wl,-rpath,@loader_path']
    else:
        # -Bsymbolic-functions: the library's own calls never go to another
        # definition of an exported function. -s drops the local symbol table,
        # as for the extension; the exported (dynamic) symbols stay.
        library_link = ['-Wl,--gc-sections', '-Wl,-Bsymbolic-functions', '-Wl,-s',
                        f'-Wl,--version-script={VERSION_SCRIPT}']
        extension_link = ['-Wl,--gc-sections', '-Wl,-s', '-Wl,-rpath,$ORIGIN']
    cuda_link = cuda_link_arguments() if cuda_requested() else []
    run(compiler() + ['-shared', core_object, '-o', library, *library_link, '-lpthread',
                      *cuda_link])
    run(compiler() + ['-shared', binding_object, nanobind_object, '-o', extension_path,
                      '-L', package_dir, '-lmxlite', *extension_link, '-lpthread'])


class BuildNative(build_ext):
    """Builds libmxlite and mxlite._core with the commands above."""

    def build_extension(self, ext):
        extension_path = self.get_ext_fullpath(ext.name)
        build_native(os.path.dirname(extension_path), extension_path)


# py_limited_api names the extension _core.abi3.so; bdist_wheel's option tags
# the wheel cp312-abi3.
setup(ext_modules=[Extension('mxlite._core', sources=[], py_limited_api=STABLE_ABI)],
      cmdclass={'build_ext': BuildNative},
      options={'bdist_wheel': {'py_limited_api': 'cp312'}} if STABLE_ABI else {})
