"""The CUDA build (`make cuda`: build/libmxlite-cuda.so, build/mxlite-all.cc
compiled by nvcc) with NVIDIA's pip toolchain in build/venv-cuda, which
scripts/run_tests.sh installs. No GPU is needed: the library must compile
without a warning, run the oracle fixtures on the CPU like the plain build,
and refuse a GPU it cannot use with CUDA's own reason instead of crashing.
The plain build (the library under test) refuses GPUs as having no CUDA
backend.

Without the toolchain environment the CUDA tests skip, except when CI is set
(.ci/run sets it): there its absence is a failure.
"""
import ctypes
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np

import pytest

from capi import API, CAPIError, load_library
from conftest import ROOT, assert_close
from test_ops import BY_NAME, CASES, run_case

CUDA_VENV = os.path.join(ROOT, 'build', 'venv-cuda')
LIBRARY = os.path.join(ROOT, 'build', 'libmxlite-cuda.so')
# The compiler's output for LIBRARY, after the command that made it: a
# library that is up to date is reused with the output of its build.
BUILD_LOG = os.path.join(ROOT, 'build', 'libmxlite-cuda.log')
NO_CUDA = ('GPU 0 is not available: this build of mxlite has no CUDA backend '
           '(compile it with nvcc: make cuda, see docs/cuda.md)')
BAD_DEVICES = ['gpu:x', 'tpu', 'gpu:', 'gpu:-1', 'GPU', 'cuda:0', 'gpu0', '']


def toolkit():
    """The pip toolchain's root (bin/nvcc, lib/, include/), or None."""
    found = sorted(glob.glob(os.path.join(CUDA_VENV, 'lib', 'python3*', 'site-packages',
                                          'nvidia', 'cu13')))
    found = [path for path in found if os.access(os.path.join(path, 'bin', 'nvcc'), os.X_OK)]
    return found[-1] if found else None


def build_output(cu):
    """Builds LIBRARY with `make cuda` unless it is up to date; the compiler's output."""
    variables = [f'NVCC={cu}/bin/nvcc',
                 f'CUDA_LIBS=-Xlinker {cu}/lib/libcublas.so.13 -Xlinker {cu}/lib/libcudart.so.13']
    command = ['make', '--no-print-directory', 'cuda'] + variables
    key = ' '.join(command)
    # `make -q` on the file (`cuda` is phony, so always out of date): 0 when
    # neither the amalgamation nor a source under predict/ changed since.
    up_to_date = subprocess.run(['make', '-q', 'build/libmxlite-cuda.so'] + variables, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if up_to_date and os.path.exists(BUILD_LOG) and \
            os.path.getmtime(BUILD_LOG) >= os.path.getmtime(LIBRARY):
        with open(BUILD_LOG, encoding='utf-8') as f:
            first, _, output = f.read().partition('\n')
        if first == key:
            return output
    if os.path.exists(LIBRARY):
        os.remove(LIBRARY)  # so that make runs nvcc, whose output the test reads
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    assert result.returncode == 0, f'{key} failed:\n{result.stdout}'
    with open(BUILD_LOG, 'w', encoding='utf-8') as f:
        f.write(key + '\n' + result.stdout)
    return result.stdout


@pytest.fixture(scope='module')
def cuda_toolkit():
    cu = toolkit()
    if cu is None:
        reason = (f'no CUDA toolchain (bin/nvcc under {CUDA_VENV}/lib/python3*/site-packages/'
                  'nvidia/cu13): scripts/run_tests.sh installs it')
        if os.environ.get('CI'):
            pytest.fail(f'{reason}; CI is set, so the CUDA build must be tested')
        pytest.skip(reason)
    return cu


@pytest.fixture(scope='module')
def cuda_build(cuda_toolkit):
    return build_output(cuda_toolkit)


@pytest.fixture(scope='module')
def cudart(cuda_toolkit, cuda_build):
    """CUDA's runtime and cuBLAS, loaded for the whole process so that the
    library's DT_NEEDED entries (sonames, no run path) resolve to them."""
    lib = os.path.join(cuda_toolkit, 'lib')
    runtime = ctypes.CDLL(os.path.join(lib, 'libcudart.so.13'), mode=ctypes.RTLD_GLOBAL)
    ctypes.CDLL(os.path.join(lib, 'libcublas.so.13'), mode=ctypes.RTLD_GLOBAL)  # finds cublasLt
    runtime.cudaGetErrorString.restype = ctypes.c_char_p
    return runtime


@pytest.fixture(scope='module')
def cuda_api(cudart):
    return API(load_library(LIBRARY))


@pytest.fixture(scope='module')
def gpu(cudart):
    """(number of GPUs, CUDA's error string or None), as CUDA reports them."""
    count = ctypes.c_int(0)
    error = cudart.cudaGetDeviceCount(ctypes.byref(count))
    if error != 0:
        cudart.cudaGetLastError()
        return 0, cudart.cudaGetErrorString(error).decode()
    return count.value, None


def has_driver():
    try:
        ctypes.CDLL('libcuda.so.1')
    except OSError:
        return False
    return True


def expected_gpu_error(gpu):
    """What the CUDA build says of GPU 0 where it cannot use it."""
    count, reason = gpu
    if reason is not None:
        return f'GPU 0 is not available: CUDA reports "{reason}"'
    return 'GPU 0 is not available: CUDA sees 0 devices'


def check_case(api, case, **create_args):
    if create_args:
        inputs, expected = case.io()
        outputs = api.predict(case.symbol_json, case.params, inputs,
                              num_outputs=len(expected), **create_args)
    else:
        outputs, expected = run_case(api, case)
    for index, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert str(ours.dtype) == case.meta['output_dtypes'][index], f'{case.name} output {index}'
        assert_close(ours, theirs, case.rtol, f'{case.name} output {index}')


def predict_with_options(api, case, options):
    inputs, expected = case.io()
    handles = api.create_with_options(case.symbol_json, case.params,
                                      {name: value.shape for name, value in inputs.items()},
                                      options)
    try:
        for name, value in inputs.items():
            api.set_input(handles[0], name, value.astype('float32'))
        api.forward(handles[0])
        return [api.output(handles[0], i) for i in range(len(expected))], expected
    finally:
        for handle in handles:
            api.free(handle)


def option_error(api, case, options):
    with pytest.raises(CAPIError) as error:
        predict_with_options(api, case, options)
    return str(error.value)


# --------------------------------------------------------------------------
# The CUDA build.

def test_cuda_build_has_no_warnings(cuda_build):
    assert os.path.exists(LIBRARY)
    lines = [line for line in cuda_build.splitlines() if 'warning' in line.lower()]
    assert not lines, 'the CUDA build warns:\n' + '\n'.join(lines)


def test_cuda_library_has_device_code_and_the_same_api(cuda_build):
    sections = subprocess.run(['readelf', '-SW', LIBRARY], stdout=subprocess.PIPE, text=True,
                              check=True).stdout
    assert '.nv_fatbin' in sections, 'no device code in the CUDA build'

    def api_symbols(path):
        listing = subprocess.run(['nm', '-D', '--defined-only', path], stdout=subprocess.PIPE,
                                 text=True, check=True).stdout
        return sorted(line.split()[-1] for line in listing.splitlines()
                      if line.split()[-1].startswith('MX'))
    plain = api_symbols(load_library()._name)
    assert api_symbols(LIBRARY) == plain and len(plain) >= 17


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_cuda_build_matches_mxnet_on_the_cpu(cuda_api, case):
    check_case(cuda_api, case)


def test_gpu_dev_type_fails_with_cudas_reason(cuda_api, gpu):
    case = BY_NAME['composite_net']
    inputs, _ = case.io()
    shapes = {name: value.shape for name, value in inputs.items()}
    if gpu[0] > 0:
        check_case(cuda_api, case, dev_type=2)  # a machine with a GPU: it runs there
        return
    with pytest.raises(CAPIError) as error:
        cuda_api.create(case.symbol_json, case.params, shapes, dev_type=2)
    message = str(error.value)
    assert expected_gpu_error(gpu) in message, (message, gpu)
    if not has_driver():
        assert 'CUDA driver version is insufficient' in message, message
    # The failure left nothing behind: the CPU still predicts.
    check_case(cuda_api, case, dev_type=1)


def test_device_option_fails_with_cudas_reason(cuda_api, gpu):
    case = BY_NAME['composite_net']
    if gpu[0] > 0:
        outputs, expected = predict_with_options(cuda_api, case, {'device': 'gpu:0'})
        for ours, theirs in zip(outputs, expected):
            assert_close(ours, theirs, case.rtol, case.name)
        return
    for device in ('gpu:0', 'gpu'):
        message = option_error(cuda_api, case, {'device': device})
        assert expected_gpu_error(gpu) in message, (device, message, gpu)
        if not has_driver():
            assert 'CUDA driver version is insufficient' in message, message
    outputs, expected = predict_with_options(cuda_api, case, {'device': 'cpu'})
    for ours, theirs in zip(outputs, expected):
        assert_close(ours, theirs, case.rtol, case.name)


@pytest.mark.parametrize('device', BAD_DEVICES)
def test_device_option_bad_values_cuda_build(cuda_api, device):
    message = option_error(cuda_api, BY_NAME['composite_net'], {'device': device})
    assert f"option device: invalid value '{device}' (expected cpu, gpu or gpu:N)" in message


# --------------------------------------------------------------------------
# The Python package built with the CUDA backend (MXLITE_CUDA=1 pip install).

CUDA_PACKAGE = os.path.join(ROOT, 'build', 'python-cuda')

# Run in a process of its own with the CUDA package first on sys.path: the
# context and nd rules, the GPU refused with CUDA's reason, and the case's
# outputs on the CPU (saved for the test to compare with MXNet's).
PACKAGE_SCRIPT = r"""
import json, sys
import numpy as np
import mxlite as mx
from mxlite._native import core
prefix, inputs_path, outputs_path = sys.argv[1:4]
report = {'file': mx.__file__, 'gpu_count': core.gpu_count(),
          'num_gpus': mx.context.num_gpus(), 'gpu_context': str(mx.gpu(0))}
try:
    mx.nd.zeros((2,), ctx=mx.gpu(0))
except mx.MXLiteError as e:
    report['nd_error'] = str(e)
inputs = dict(np.load(inputs_path))
shapes = {k: v.shape for k, v in inputs.items()}
try:
    mx.Predictor.load(prefix, input_shapes=shapes, ctx=mx.gpu(0))
except mx.MXLiteError as e:
    report['gpu_error'] = str(e)
outputs = mx.Predictor.load(prefix, input_shapes=shapes).predict(**inputs)
np.save(outputs_path, outputs if isinstance(outputs, np.ndarray) else outputs[0])
print(json.dumps(report))
"""


@pytest.fixture(scope='module')
def cuda_package(cuda_toolkit):
    """The package built with MXLITE_CUDA=1 and the pip toolchain, installed
    into CUDA_PACKAGE (its objects are cached by setup.py like the plain
    build's)."""
    cu = cuda_toolkit
    env = dict(os.environ, MXLITE_CUDA='1', NVCC=os.path.join(cu, 'bin', 'nvcc'),
               MXLITE_CUDA_LIBS=f'{cu}/lib/libcublas.so.13 {cu}/lib/libcudart.so.13')
    result = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-build-isolation',
                             '--no-deps', '--upgrade', '--target', CUDA_PACKAGE, ROOT],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert result.returncode == 0, result.stdout[-4000:]
    return CUDA_PACKAGE


def test_python_package_with_cuda_backend(cuda_package, gpu, tmp_path):
    case = BY_NAME['composite_net']
    inputs, expected = case.io()
    np.savez(tmp_path / 'inputs.npz', **{k: v.astype(np.float32) for k, v in inputs.items()})
    result = subprocess.run([sys.executable, '-c', PACKAGE_SCRIPT, case.path(''),
                             str(tmp_path / 'inputs.npz'), str(tmp_path / 'outputs.npy')],
                            env=dict(os.environ, PYTHONPATH=cuda_package),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report['file'].startswith(cuda_package), report['file']
    count = gpu[0]
    assert report['gpu_count'] == count and report['num_gpus'] == count, report
    assert report['gpu_context'] == 'gpu(0)'
    assert 'mx.nd arrays live in host memory in mxlite, not on gpu(0)' in report['nd_error']
    if count == 0:
        assert expected_gpu_error(gpu) in report['gpu_error'], report
    assert_close(np.load(tmp_path / 'outputs.npy'), expected[0], case.rtol, case.name)


# --------------------------------------------------------------------------
# The plain build (the library under test): no CUDA backend.

def test_plain_build_refuses_gpu_dev_type(api):
    case = BY_NAME['composite_net']
    with pytest.raises(CAPIError) as error:
        api.create(case.symbol_json, case.params, {'data': (1, 3, 8, 8)}, dev_type=2)
    assert NO_CUDA in str(error.value)


@pytest.mark.parametrize('device', ['gpu:0', 'gpu'])
def test_plain_build_refuses_device_option(api, device):
    assert NO_CUDA in option_error(api, BY_NAME['composite_net'], {'device': device})


def test_plain_build_device_cpu_and_bad_values(api):
    case = BY_NAME['composite_net']
    outputs, expected = predict_with_options(api, case, {'device': 'cpu'})
    for ours, theirs in zip(outputs, expected):
        assert_close(ours, theirs, case.rtol, case.name)
    for device in BAD_DEVICES:
        message = option_error(api, case, {'device': device})
        assert f"option device: invalid value '{device}' (expected cpu, gpu or gpu:N)" in message


def test_plain_build_device_from_the_environment(api, monkeypatch):
    case = BY_NAME['composite_net']
    monkeypatch.setenv('MXLITE_DEVICE', 'tpu')
    message = option_error(api, case, {})
    assert re.search(r"environment variable MXLITE_DEVICE: option device: invalid value 'tpu'",
                     message), message
    monkeypatch.setenv('MXLITE_DEVICE', 'gpu:0')
    assert NO_CUDA in option_error(api, case, {})
    monkeypatch.setenv('MXLITE_DEVICE', 'cpu')
    outputs, expected = predict_with_options(api, case, {})
    for ours, theirs in zip(outputs, expected):
        assert_close(ours, theirs, case.rtol, case.name)


def test_cuda_docs_list_every_gpu_kernel():
    """docs/cuda.md's table is generated from predict/cuda/cuda_op_list.inc."""
    result = subprocess.run(['python3', os.path.join(ROOT, 'scripts', 'gen_cuda_docs.py'),
                             '--check'], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_gpu_kernels_name_registered_operators():
    """Every operator with a GPU kernel is one the CPU registry knows by that
    canonical name (the runner looks kernels up by it): a public operator, or
    one of the graph optimiser's fused forms."""
    with open(os.path.join(ROOT, 'predict', 'cuda', 'cuda_op_list.inc'), encoding='utf-8') as f:
        gpu = re.findall(r'^MXL_CUDA_OP\("([^"]+)"', f.read(), re.M)
    with open(os.path.join(ROOT, 'predict', 'operators', 'op_list.inc'), encoding='utf-8') as f:
        cpu = set(re.findall(r'^MXL_(?:INTERNAL_)?OPERATOR\("([^"]+)"', f.read(), re.M))
    assert gpu and set(gpu) <= cpu, sorted(set(gpu) - cpu)
