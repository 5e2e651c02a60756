"""The Android Java API (mobile/android), on this machine's JVM.

mobile/android/build.sh --host builds libmxlite_jni.so for x86-64 from the
amalgamation and the JNI layer, and mxlite.jar; a small Java driver
(mobile/android/test/org/mxlite/ConformanceCheck.java) then runs through
org.mxlite.Predictor:
- the operator cases with float32 inputs and zoo models, each output
  within the oracle tolerance of MXNet 1.9.1's (outputs of other types
  come back converted to float);
- reshape to another batch size;
- every kind of misuse, which must come back as a Java exception carrying
  the core's message, never a crash;
- ImageTensor on a non-square image, against the arithmetic done here;
- runtime options (Predictor.load with a Map, MXLitePredCreateWithOptions):
  threads=2 gives MXNet's answer, an unknown option or a bad value is an
  MXLiteException naming it.
The same build script cross-builds the library for both Android ARM ABIs
with Debian's compilers (the NDK path is the same CMakeLists.txt).
"""
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import ROOT, assert_close
from mobile_support import check_results, op_cases, require_tool, run, write_plan, zoo_cases

ANDROID = os.path.join(ROOT, 'mobile', 'android')
BUILD_SCRIPT = os.path.join(ANDROID, 'build.sh')
JDK_PACKAGE = 'default-jdk-headless'
ZOO_MODELS = ['squeezenet1.1', 'mobilenet1.0', 'resnet18_v1']


def build_environment():
    env = dict(os.environ)
    env.pop('ANDROID_NDK', None)  # the Debian path, whatever the caller has
    return env


@pytest.fixture(scope='module')
def java_build(tmp_path_factory):
    for tool in ('javac', 'java', 'jar'):
        require_tool(tool, JDK_PACKAGE)
    require_tool('cmake', 'cmake')
    out = tmp_path_factory.mktemp('android-host')
    run(['bash', BUILD_SCRIPT, '--host', str(out)], env=build_environment())
    classes = out / 'test-classes'
    run(['javac', '-d', str(classes), '-cp', str(out / 'mxlite.jar'),
         os.path.join(ANDROID, 'test', 'org', 'mxlite', 'ConformanceCheck.java')])
    return out


def java(build, *args, check=True):
    command = ['java', f'-Djava.library.path={build / "host"}', '-Xcheck:jni',
               '-cp', f'{build / "mxlite.jar"}{os.pathsep}{build / "test-classes"}',
               'org.mxlite.ConformanceCheck', *map(str, args)]
    if check:
        return run(command).stdout
    return subprocess.run(command, capture_output=True, text=True)


def composite_case():
    return {case.name: case for case in op_cases()}['composite_net']


def test_java_api_matches_mxnet(java_build, tmp_path):
    # float[] in, float[] out: outputs of other types come back converted.
    cases = op_cases(float32_inputs_only=True) + zoo_cases(ZOO_MODELS)
    plan = write_plan(cases, tmp_path)
    check_results(java(java_build, 'plan', plan), cases, tmp_path, 'Java API',
                  outputs_as_float32=True)


def test_java_reshape_to_batch_one(java_build, tmp_path):
    case = composite_case()
    inputs, expected = case.io()
    data = inputs['data']
    data[:1].astype('<f4').tofile(tmp_path / 'first.f32')
    dims = ','.join(str(d) for d in data.shape)
    report = java(java_build, 'reshape', case.path('-symbol.json'), case.path('-0000.params'),
                  'data', dims, tmp_path / 'first.f32', tmp_path / 'out.f32')
    assert report.strip() == f'reshaped output shape 1 {expected[0].shape[1]}'
    ours = np.fromfile(tmp_path / 'out.f32', dtype='<f4').reshape(1, -1)
    # Inference treats batch items independently, so item 0 of MXNet's
    # batch-2 output is the batch-1 answer.
    assert_close(ours, expected[0][:1], case.rtol, 'Java reshape')


def test_java_misuse_raises_exceptions_with_the_core_message(java_build):
    case = composite_case()
    inputs, _ = case.io()
    dims = ','.join(str(d) for d in inputs['data'].shape)
    report = java(java_build, 'errors', case.path('-symbol.json'), case.path('-0000.params'),
                  'data', dims)
    lines = dict(line.split(': ', 1) for line in report.strip().split('\n'))
    assert lines['bad_json'].startswith('MXLiteException: symbol JSON:')
    assert lines['unknown_input'].startswith('MXLiteException: ')
    assert 'no_such_input' in lines['unknown_input']
    assert lines['negative_dim'] == (
        "IllegalArgumentException: input 'data': dimensions must be positive")
    size = int(np.prod(inputs['data'].shape))
    assert lines['wrong_size'].startswith('MXLiteException: ')
    assert str(size) in lines['wrong_size'] and '3' in lines['wrong_size']
    assert re.match(r'MXLiteException: output index 1 is out of range', lines['bad_index'])
    assert lines['closed'] == 'IllegalStateException: the predictor is closed'


def test_java_options_reach_the_core(java_build, tmp_path):
    case = composite_case()
    inputs, expected = case.io()
    data = inputs['data']
    data.astype('<f4').tofile(tmp_path / 'data.f32')
    dims = ','.join(str(d) for d in data.shape)
    report = java(java_build, 'options', case.path('-symbol.json'), case.path('-0000.params'),
                  'data', dims, tmp_path / 'data.f32', tmp_path / 'out.f32')
    lines = dict(line.split(': ', 1) for line in report.strip().split('\n'))
    assert lines['threads_2'] == 'ran'
    ours = np.fromfile(tmp_path / 'out.f32', dtype='<f4').reshape(expected[0].shape)
    assert_close(ours, expected[0], case.rtol, 'Java with threads=2')
    assert lines['unknown_option'].startswith('MXLiteException: '), lines['unknown_option']
    assert "unknown option 'no_such_option'" in lines['unknown_option']
    assert lines['bad_value'].startswith('MXLiteException: '), lines['bad_value']
    assert 'threads' in lines['bad_value'] and 'lots' in lines['bad_value']
    assert lines['null_options'].startswith('NullPointerException: options')


def test_image_tensor_keeps_width_and_height_apart(java_build, tmp_path):
    width, height = 5, 3  # not square: a swapped width/height shows
    rng = np.random.default_rng(7)
    rgb = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint32)
    argb = (0xFF << 24) | (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    argb.astype('<u4').tofile(tmp_path / 'pixels.i32')
    java(java_build, 'image', tmp_path / 'pixels.i32', width, height, tmp_path / 'tensor')

    planar = rgb.transpose(2, 0, 1).astype(np.float64)  # (3, height, width), RGB
    mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
    gluon = np.fromfile(tmp_path / 'tensor.gluon.f32', dtype='<f4').reshape(3, height, width)
    np.testing.assert_allclose(gluon, (planar / 255 - mean) / std, rtol=1e-5, atol=1e-5)
    bgr = np.fromfile(tmp_path / 'tensor.bgr.f32', dtype='<f4').reshape(3, height, width)
    expected_bgr = planar[::-1] - np.array([104.0, 117.0, 123.0]).reshape(3, 1, 1)
    np.testing.assert_allclose(bgr, expected_bgr, rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize('abi,machine', [('arm64-v8a', 'AArch64'), ('armeabi-v7a', 'ARM')])
def test_android_abis_build_with_debian_cross_compilers(android_build, abi, machine):
    library = android_build / abi / 'libmxlite_jni.so'
    header = run(['readelf', '-h', str(library)]).stdout
    assert re.search(rf'Machine:\s+{machine}\b', header), header
    symbols = run(['readelf', '--dyn-syms', '-W', str(library)]).stdout
    for native in ('nativeCreate', 'nativeReshape', 'nativeSetInput', 'nativeForward',
                   'nativeOutputCount', 'nativeGetOutputShape', 'nativeGetOutput', 'nativeFree'):
        assert f'Java_org_mxlite_Predictor_{native}' in symbols, native
    assert (android_build / 'mxlite.jar').exists()


@pytest.fixture(scope='module')
def android_build(tmp_path_factory):
    for triple in ('aarch64-linux-gnu', 'arm-linux-gnueabihf'):
        require_tool(f'{triple}-g++', f'g++-{triple}')
    require_tool('cmake', 'cmake')
    require_tool('javac', JDK_PACKAGE)
    out = tmp_path_factory.mktemp('android')
    run(['bash', BUILD_SCRIPT, str(out)], env=build_environment())
    return out
