"""Every kernel variant against its reference, each ISA path forced in turn.

MXLITE_ISA caps the instruction set the run-time dispatch may pick, so one
AVX-512 machine covers the AVX-512, AVX2 and portable paths. The C++
drivers compare the blocked GEMM (all epilogues, threads), the GEMV, the
3x3 depthwise, direct (few-channel) and Winograd kernels and the int8
convolution's int16 pair GEMM with naive loops on awkward sizes, the
activation rows (relu, leaky) with their definitions bit for bit, and the
vector math rows (exp, expm1, sigmoid, tanh, erf, gelu, elu) with the C
library's functions within a few ulps.
"""
import os
import subprocess

import pytest

from conftest import ROOT

KERNELS = ['cpu_features.cc', 'thread_pool.cc', 'gemm_generic.cc', 'gemm_x86.cc', 'gemm_neon.cc',
           'gemm.cc',
           'depthwise.cc', 'depthwise_avx512.cc', 'depthwise_avx2.cc', 'direct_conv.cc',
           'strided_copy.cc', 'winograd.cc', 'int16_pair_gemm.cc', 'int16_pair_gemm_avx2.cc',
           'winograd_avx512.cc', 'winograd_avx2.cc', 'winograd2x2.cc', 'winograd1d.cc']
# What the kernels' drivers need besides kernels: the options the ISA cap
# comes from, the huge-page slabs packed matrices live in, and the
# environment the driver (the API boundary) applies.
BOUNDARY = [os.path.join(ROOT, 'predict', 'base', 'options.cc'),
            os.path.join(ROOT, 'predict', 'base', 'large_pages.cc'),
            os.path.join(ROOT, 'predict', 'c_api', 'environment.cc')]
DRIVERS = {'gemm': 'gemm_test.cc', 'depthwise': 'depthwise_test.cc',
           'direct_conv': 'direct_conv_test.cc',
           'winograd': 'winograd_test.cc', 'winograd2x2': 'winograd2x2_test.cc',
           'winograd1d': 'winograd1d_test.cc',
           'strided_copy': 'strided_copy_test.cc', 'int16_pair_gemm': 'int16_pair_gemm_test.cc',
           'activation_row': 'activation_row_test.cc', 'math_row': 'math_row_test.cc'}
# Kernel families that live with their operators (predict/operators), per driver.
OPERATOR_KERNELS = {'activation_row': ['activation_row.cc', 'activation_row_avx512.cc',
                                       'activation_row_avx2.cc'],
                    'math_row': ['math_row.cc', 'math_row_avx512.cc', 'math_row_avx2.cc']}


@pytest.fixture(scope='module')
def drivers(tmp_path_factory):
    out = tmp_path_factory.mktemp('kernels')
    built = {}
    for name, source in DRIVERS.items():
        exe = out / name
        result = subprocess.run(
            ['g++', '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror',
             os.path.join(ROOT, 'tests', 'cpp', source)] +
            [os.path.join(ROOT, 'predict', 'kernels', k) for k in KERNELS] +
            [os.path.join(ROOT, 'predict', 'operators', k)
             for k in OPERATOR_KERNELS.get(name, [])] + BOUNDARY +
            ['-o', str(exe), '-lpthread'], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        built[name] = exe
    return built


@pytest.mark.parametrize('isa', ['scalar', 'avx2', 'avx512'])
@pytest.mark.parametrize('driver', sorted(DRIVERS))
def test_kernel_variant_matches_reference(drivers, driver, isa):
    result = subprocess.run([str(drivers[driver])], env={**os.environ, 'MXLITE_ISA': isa},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.strip().endswith(' 0 failures')
    if driver == 'gemm' and isa == 'scalar':
        assert 'micro-kernel: generic-6x8' in result.stdout


def _cpu_vendor():
    with open('/proc/cpuinfo') as info:
        for line in info:
            if line.startswith('vendor_id'):
                return line.split(':', 1)[1].strip()
    return ''


@pytest.mark.parametrize('setting', ['auto', '1', '0'])
def test_gemm_wide_tiles_each_way_match_reference(drivers, setting):
    """AVX-512 cuts a row's last 41-52 columns either as one wide tile or as
    a 32-column tile and a tail (gemm.cc, UseWideTiles): both forced, and
    the default by vendor (wide on AMD only), against the naive loops."""
    result = subprocess.run([str(drivers['gemm'])],
                            env={**os.environ, 'MXLITE_ISA': 'avx512',
                                 'MXLITE_GEMM_WIDE_TILES': setting},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.strip().endswith(' 0 failures')
    if 'micro-kernel: avx512' not in result.stdout:
        pytest.skip('no AVX-512 on this machine')
    wide = {'1': True, '0': False, 'auto': _cpu_vendor() == 'AuthenticAMD'}[setting]
    expected = 'avx512-12x32-wide' if wide else 'avx512-12x32'
    assert f'micro-kernel: {expected}\n' in result.stdout


def test_a_bad_wide_tiles_setting_is_an_error_naming_it(drivers):
    result = subprocess.run([str(drivers['gemm'])],
                            env={**os.environ, 'MXLITE_GEMM_WIDE_TILES': 'sometimes'},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert ("MXLITE_GEMM_WIDE_TILES must be auto, 1/true/on or 0/false/off, not 'sometimes'"
            in result.stdout + result.stderr)


ARM_TARGETS = {
    'aarch64': (['aarch64-linux-gnu-g++'], 'qemu-aarch64', 'neon-8x12'),
    'armv7-neon': (['arm-linux-gnueabihf-g++', '-mfpu=neon'], 'qemu-arm', 'neon-4x8'),
}


@pytest.mark.parametrize('target', sorted(ARM_TARGETS))
def test_neon_kernels_under_qemu(tmp_path, target):
    """The NEON micro-kernel (chosen at compile time on ARM) and the kernels
    built on it, against the same naive references, under qemu-user."""
    import shutil
    compiler, qemu, kernel_name = ARM_TARGETS[target]
    for tool in (compiler[0], qemu):
        assert shutil.which(tool), f'{tool} is required (.ci/run installs it from Debian)'
    for name in ('gemm', 'winograd'):
        exe = tmp_path / f'{name}_{target}'
        result = subprocess.run(
            compiler + ['-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror', '-static',
                        os.path.join(ROOT, 'tests', 'cpp', DRIVERS[name])] +
            [os.path.join(ROOT, 'predict', 'kernels', k) for k in KERNELS] + BOUNDARY +
            ['-o', str(exe), '-lpthread'], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        for isa in ('', 'scalar'):
            run = subprocess.run([qemu, str(exe)], env={**os.environ, 'MXLITE_ISA': isa},
                                 capture_output=True, text=True, timeout=600)
            assert run.returncode == 0, run.stdout[-3000:]
            assert run.stdout.strip().endswith(' 0 failures')
            if name == 'gemm':
                expected = 'generic-6x8' if isa == 'scalar' else kernel_name
                assert f'micro-kernel: {expected}' in run.stdout


SANITIZED = {'strided_copy': ('strided_copy_test.cc', ['strided_copy.cc']),
             'depthwise': ('depthwise_test.cc',
                           ['depthwise.cc', 'depthwise_avx512.cc', 'depthwise_avx2.cc']),
             'direct_conv': ('direct_conv_test.cc', ['direct_conv.cc', 'strided_copy.cc'])}


@pytest.mark.parametrize('isa', ['scalar', 'avx2', 'avx512'])
@pytest.mark.parametrize('driver', sorted(SANITIZED))
def test_masked_kernels_read_only_their_arrays_under_sanitizers(tmp_path, driver, isa):
    """im2col's row gather and the depthwise kernels start masked loads
    before a row and run them past its end, and the depthwise channel
    blocks and the direct convolution keep scratch per thread: under AddressSanitizer (every plane
    exactly its size on the heap) and UBSan (no pointer before an array,
    none from null) on every path."""
    test_source, kernels = SANITIZED[driver]
    exe = tmp_path / (driver + '_sanitized')
    build = subprocess.run(
        ['g++', '-std=c++17', '-O1', '-g', '-fsanitize=address,undefined',
         '-fno-sanitize-recover=undefined', '-Wall', '-Wextra', '-Werror',
         os.path.join(ROOT, 'tests', 'cpp', test_source)] +
        [os.path.join(ROOT, 'predict', 'kernels', k) for k in kernels + ['cpu_features.cc']] +
        BOUNDARY + ['-o', str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    result = subprocess.run([str(exe)], env={**os.environ, 'MXLITE_ISA': isa},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip().endswith(' 0 failures')
