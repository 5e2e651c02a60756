"""The `mxlite` command, run as a user runs it: a subprocess per command.

predict's answers are checked against MXNet's outputs (zoo fixtures) and
against the Python API on the same preprocessed pixels; inspect's totals
against the params file and hand arithmetic; demo against the accuracy the
training script recorded from MXNet.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ZOO_DIR
from test_python_api import DEMO_PREFIX, zoo_case

import mxlite

BIN_DIR = os.path.dirname(sys.executable)


def mxlite_command():
    path = os.path.join(BIN_DIR, 'mxlite')
    assert os.path.exists(path), (f'the mxlite console script is not in {BIN_DIR}: install the '
                                  'package (pip install .) into the Python running the tests')
    return path


def run(*args, expect=0, module=False):
    command = [sys.executable, '-m', 'mxlite'] if module else [mxlite_command()]
    result = subprocess.run(command + [str(a) for a in args], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == expect, (
        f'{args}: exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}')
    return result


def pillow():
    try:
        from PIL import Image
    except ImportError:
        pytest.fail('Pillow is required for the image tests: pip install Pillow')
    return Image


def test_help_for_every_command():
    top = run('--help').stdout
    for command in ('predict', 'inspect', 'demo'):
        assert command in top
    assert '--input' in run('predict', '--help').stdout
    assert '--imagenet' in run('predict', '--help').stdout
    assert '--shape' in run('inspect', '--help').stdout
    assert 'MXNet' in run('demo', '--help').stdout
    assert 'predict' in run('--help', module=True).stdout
    usage = run(expect=2).stderr
    assert 'usage: mxlite' in usage


def test_demo_prints_mxnets_accuracy():
    with open(DEMO_PREFIX + '.json', encoding='utf-8') as f:
        meta = json.load(f)
    total = meta['test_images']
    out = run('demo', module=True).stdout
    accuracy = re.search(r'held-out accuracy: (\d+)/(\d+) = ([\d.]+)', out)
    assert accuracy, out
    assert int(accuracy.group(1)) == meta['mxnet_correct'] and int(accuracy.group(2)) == total
    assert f'(MXNet 1.9.1 on the same images: {meta["mxnet_correct"]}/{total} =' in out
    assert re.search(r'time per image: [\d.]+ us', out)
    assert 'pred ' in out and 'true ' in out
    # The console script runs the same code.
    assert 'held-out accuracy' in run('demo', '--show', '2').stdout


def test_predict_npy_matches_mxnet(tmp_path):
    case = zoo_case('resnet18_v1')
    inputs, expected = case.io()
    np.save(tmp_path / 'x.npy', inputs['data'])
    out = run('predict', os.path.join(ZOO_DIR, 'resnet18_v1'), '--input', tmp_path / 'x.npy',
              '--json').stdout
    report = json.loads(out)
    assert report['output_shape'] == [1, 1000]
    [predictions] = report['predictions']
    scores = expected[0][0]
    assert [p['index'] for p in predictions] == list(np.argsort(-scores, kind='stable')[:5])
    for p in predictions:
        assert abs(p['score'] - scores[p['index']]) <= case.rtol * np.abs(scores).max()
    probabilities = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    assert abs(predictions[0]['probability'] - probabilities[predictions[0]['index']]) < 1e-4


def test_predict_image_applies_the_preprocessing_it_documents(tmp_path):
    Image = pillow()
    rng = np.random.RandomState(11)
    pixels = rng.randint(0, 256, size=(224, 224, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / 'img.png')
    prefix = os.path.join(ZOO_DIR, 'squeezenet1.1')
    out = run('predict', prefix, '--input', tmp_path / 'img.png', '--mean', '10,20,30',
              '--std', '40,50,60', '--json').stdout
    [predictions] = json.loads(out)['predictions']
    batch = ((pixels.astype(np.float32) - np.float32([10, 20, 30])) / np.float32([40, 50, 60]))
    scores = mxlite.Predictor.load(prefix)(data=batch.transpose(2, 0, 1)[None])[0]
    assert [p['index'] for p in predictions] == list(np.argsort(-scores, kind='stable')[:5])
    assert np.allclose([p['score'] for p in predictions],
                       scores[[p['index'] for p in predictions]], rtol=1e-6, atol=1e-7)
    # BGR order reverses the channels (and the per-channel statistics with them).
    out = run('predict', prefix, '--input', tmp_path / 'img.png', '--mean', '10,20,30',
              '--std', '40,50,60', '--channel-order', 'bgr', '--json').stdout
    [bgr] = json.loads(out)['predictions']
    flipped = (pixels[:, :, ::-1].astype(np.float32) - np.float32([10, 20, 30])) / \
        np.float32([40, 50, 60])
    scores = mxlite.Predictor.load(prefix)(data=flipped.transpose(2, 0, 1)[None])[0]
    assert [p['index'] for p in bgr] == list(np.argsort(-scores, kind='stable')[:5])


def test_predict_image_prints_a_labelled_top5(tmp_path):
    Image = pillow()
    rng = np.random.RandomState(12)
    Image.fromarray(rng.randint(0, 256, size=(300, 400, 3)).astype(np.uint8)).save(
        tmp_path / 'photo.jpg')
    (tmp_path / 'synset.txt').write_text(''.join(f'n{i:08d} class number {i}\n'
                                                 for i in range(1000)))
    out = run('predict', os.path.join(ZOO_DIR, 'mobilenet1.0'), '--input',
              tmp_path / 'photo.jpg', '--imagenet', '--resize-short', '256', '--synset',
              tmp_path / 'synset.txt').stdout
    lines = [line for line in out.splitlines() if re.match(r'\s+\d\. class', line)]
    assert len(lines) == 5, out
    for rank, line in enumerate(lines, 1):
        index = int(re.search(r'class (\d+)', line).group(1))
        assert line.strip().startswith(f'{rank}.')
        assert line.endswith(f'n{index:08d} class number {index}')
    assert 'top-5:' in out and '(1, 3, 224, 224)' in out


def test_predict_reports_bad_arguments(tmp_path):
    prefix = os.path.join(ZOO_DIR, 'squeezenet1.1')
    result = run('predict', prefix, '--input', tmp_path / 'missing.npy', expect=1)
    assert 'mxlite: error:' in result.stderr and 'no such file' in result.stderr
    result = run('predict', tmp_path / 'nothing', '--input', tmp_path / 'x.npy', expect=1)
    assert 'nothing-symbol.json: no such file' in result.stderr
    np.save(tmp_path / 'bad.npy', np.zeros((1, 3, 5, 5), np.float32))
    result = run('predict', prefix, '--input', tmp_path / 'bad.npy', expect=1)
    assert 'mxlite: error:' in result.stderr and 'Pooling' in result.stderr
    (tmp_path / 'notes.txt').write_text('hello')
    result = run('predict', prefix, '--input', tmp_path / 'notes.txt', expect=1)
    assert 'unknown input type' in result.stderr
    result = run('inspect', prefix, '--shape', 'data:1,3', expect=1)
    assert '--shape must look like NAME=D1,D2' in result.stderr
    assert 'Traceback' not in result.stderr


def test_inspect_counts_parameters_and_macs():
    out = run('inspect', DEMO_PREFIX, '--shape', 'data=1,1,8,8').stdout
    params = mxlite.nd.load(DEMO_PREFIX + '-0000.params')
    total = sum(array.size for array in params.values())
    total_bytes = sum(array.nbytes for array in params.values())
    assert f'parameters: {total:,}' in out
    # conv0 16x(1x3x3) over 8x8, conv1 32x(16x3x3) over 4x4, dense 128->64, 64->10.
    macs = 16 * 8 * 8 * 9 + 32 * 4 * 4 * 16 * 9 + 64 * 128 + 10 * 64
    assert f'MACs: {macs:,}' in out
    for name in ('digits_conv0_fwd', 'Convolution', '(1,16,8,8)', 'digits_dense1_fwd', '(1,10)'):
        assert name in out
    report = json.loads(run('inspect', DEMO_PREFIX, '--shape', 'data=1,1,8,8', '--json').stdout)
    assert report['params'] == total and report['param_bytes'] == total_bytes
    assert report['macs'] == macs and report['flops'] == 2 * macs
    assert report['ops']['Convolution'] == 2 and report['num_operators'] == len(report['nodes'])


def test_inspect_a_zoo_model_and_without_shapes():
    prefix = os.path.join(ZOO_DIR, 'resnet18_v1')
    report = json.loads(run('inspect', prefix, '--shape', 'data=1,3,224,224', '--json').stdout)
    params = mxlite.nd.load(prefix + '-0000.params')
    assert report['params'] == sum(array.size for array in params.values())
    assert report['outputs'][0]['shape'] == [1, 1000]
    first_conv = next(n for n in report['nodes'] if n['op'] == 'Convolution')
    # 64 filters of 3x7x7 over a 112x112 output.
    assert first_conv['macs'] == 64 * 112 * 112 * 3 * 7 * 7
    out = run('inspect', prefix).stdout
    assert 'MACs: unknown until the input shapes are given' in out
    assert '--shape data=' in out


def test_plan_reports_every_strategy():
    prefix = os.path.join(ZOO_DIR, 'resnet18_v1')
    assert '--shape' in run('plan', '--help').stdout
    report = json.loads(run('plan', prefix, '--shape', 'data=1,3,224,224', '--json').stdout)
    assert list(report) == ['naive_bytes', 'inplace_bytes', 'coshare_bytes', 'planned_bytes',
                            'lower_bound_bytes']
    # MXNet 1.9.1 plans 7,432,096 bytes for this graph (reference section 5).
    assert report['lower_bound_bytes'] <= report['planned_bytes'] <= 7_432_096
    assert report['planned_bytes'] <= 1.05 * report['lower_bound_bytes']
    assert report['planned_bytes'] <= report['coshare_bytes'] <= report['naive_bytes']
    assert report['inplace_bytes'] <= report['naive_bytes']
    fused = json.loads(run('plan', prefix, '--shape', 'data=1,3,224,224', '--json',
                           '--fused').stdout)
    assert fused['planned_bytes'] < report['planned_bytes']
    text = run('plan', prefix, '--shape', 'data=1,3,224,224').stdout
    assert 'lower bound' in text and 'MiB' in text
    assert 'give the input shapes' in run('plan', prefix, expect=1).stderr
