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
    result = run('inspect', prefix, '--shape', 'data:1,3', expect=2)
    assert 'argument --shape: must look like NAME=D1,D2' in result.stderr
    # The package under test is the C++ compiler's build: no GPU backend.
    np.save(tmp_path / 'x.npy', np.zeros((1, 3, 224, 224), np.float32))
    result = run('predict', prefix, '--input', tmp_path / 'x.npy', '--gpu', '0', expect=1)
    assert 'gpu(0) is not available: mxlite is built without a GPU backend' in result.stderr
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
                            'lower_bound_bytes', 'graph']
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


# --- issue 35: the command line's edges --------------------------------------

def assert_usage_error(result, *fragments):
    """A bad command line: one argparse message, exit 2, no traceback."""
    assert 'Traceback' not in result.stderr, result.stderr
    assert 'mxlite' in result.stderr and 'error:' in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_version_prints_the_package_version():
    out = run('--version').stdout
    assert out.startswith(f'mxlite {mxlite.__version__}'), out
    assert run('--version', module=True).stdout == out


def test_numeric_options_are_validated_by_argparse(tmp_path):
    Image = pillow()
    Image.fromarray(np.zeros((40, 40, 3), np.uint8)).save(tmp_path / 'img.png')
    prefix = os.path.join(ZOO_DIR, 'squeezenet1.1')
    predict = ('predict', prefix, '--input', tmp_path / 'img.png')
    bad = [(('--size', 'abc'), '--size'), (('--size', '0'), '--size'),
           (('--size', '1,2,3'), '--size'), (('--mean', 'x,1,2'), '--mean'),
           (('--std', '1,0,1'), '--std'), (('--scale', 'nan'), '--scale'),
           (('--resize-short', '-4'), '--resize-short'), (('--threads', '0'), '--threads'),
           (('--epoch', 'one'), '--epoch'), (('--output-index', '-1'), '--output-index'),
           (('--top-k', 'many'), '--top-k')]
    for option, name in bad:
        assert_usage_error(run(*predict, *option, expect=2), f'argument {name}')
    # A per-channel statistic needs one value or one per channel of the model's input.
    assert_usage_error(run(*predict, '--mean', '1,2', expect=2), '--mean', '3 channels')
    assert_usage_error(run(*predict, '--std', '1,2,3,4', expect=2), '--std', '3 channels')
    assert_usage_error(run('demo', '--threads', 'x', expect=2), 'argument --threads')
    assert_usage_error(run('plan', prefix, '--shape', 'data=1,a', expect=2), 'argument --shape')


def test_top_k_must_be_positive_and_is_clamped(tmp_path):
    case = zoo_case('squeezenet1.1')
    inputs, _ = case.io()
    np.save(tmp_path / 'x.npy', inputs['data'])
    prefix = os.path.join(ZOO_DIR, 'squeezenet1.1')
    for k in ('0', '-3'):
        assert_usage_error(run('predict', prefix, '--input', tmp_path / 'x.npy', '--top-k', k,
                               expect=2), 'argument --top-k', '>= 1')
    result = run('predict', prefix, '--input', tmp_path / 'x.npy', '--top-k', '5000')
    lines = [line for line in result.stdout.splitlines() if re.match(r'\s+\d+\. class', line)]
    assert len(lines) == 1000 and 'top-1000:' in result.stdout
    assert '1000 classes' in result.stderr
    [predictions] = json.loads(run('predict', prefix, '--input', tmp_path / 'x.npy', '--top-k',
                                   '5000', '--json').stdout)['predictions']
    assert len(predictions) == 1000


def test_layout_mismatch_is_explained(tmp_path):
    Image = pillow()
    Image.fromarray(np.zeros((50, 60, 3), np.uint8)).save(tmp_path / 'img.png')
    prefix = os.path.join(ZOO_DIR, 'squeezenet1.1')
    for extra in ((), ('--shape', 'data=1,3,224,224')):
        result = run('predict', prefix, '--input', tmp_path / 'img.png', '--layout', 'nhwc',
                     *extra, expect=1)
        assert 'expects NCHW' in result.stderr and 'squeezenet0_conv0_fwd' in result.stderr
        assert 'weight' not in result.stderr and 'Traceback' not in result.stderr
    # A colour image for a one-channel model is converted to grey, not refused.
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / 'digit.png')
    out = run('predict', DEMO_PREFIX, '--input', tmp_path / 'digit.png', '--size', '8').stdout
    assert '(1, 1, 8, 8)' in out


def test_a_closed_pipe_ends_quietly():
    for command in (('inspect', DEMO_PREFIX, '--shape', 'data=1,1,8,8', '--all'),
                    ('demo', '--show', '2')):
        process = subprocess.Popen([mxlite_command(), *command], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        process.stdout.close()   # as `| head -0` does: nobody reads what it prints
        stderr = process.stderr.read()
        process.wait(timeout=300)
        assert 'Traceback' not in stderr and 'BrokenPipe' not in stderr, stderr
        assert stderr == '', stderr


def test_inspect_and_plan_name_the_graph_they_report():
    prefix = os.path.join(ZOO_DIR, 'resnet18_v1')
    shape = ('--shape', 'data=1,3,224,224')
    written = json.loads(run('plan', prefix, *shape, '--json').stdout)
    fused = json.loads(run('plan', prefix, *shape, '--json', '--fused').stdout)
    assert written['graph'] == 'as written' and fused['graph'] == 'fused'
    assert 'graph as written' in run('plan', prefix, *shape).stdout
    assert 'fused graph' in run('plan', prefix, *shape, '--fused').stdout
    report = json.loads(run('inspect', prefix, *shape, '--json').stdout)
    memory = report['memory']
    assert memory['graph'] == 'fused'
    assert memory['arena_bytes'] == fused['planned_bytes']
    assert memory['unshared_bytes'] == fused['naive_bytes']
    assert report['memory_as_written'] == {'planned_bytes': written['planned_bytes'],
                                           'naive_bytes': written['naive_bytes']}
    text = run('inspect', prefix, *shape).stdout
    mib = f'{fused["planned_bytes"] / 2**20:.2f} MiB'
    assert re.search(rf'fused graph.*{re.escape(mib)} planned', text), text
    mib = f'{written["planned_bytes"] / 2**20:.2f} MiB'
    assert re.search(rf'graph as written.*{re.escape(mib)} planned', text), text


def test_demo_show_zero_draws_nothing():
    out = run('demo', '--show', '0').stdout
    assert 'pred ' not in out and '\n\n\n' not in out
    assert out.splitlines()[1:3] == ['', out.splitlines()[2]]
    assert out.splitlines()[2].startswith('held-out accuracy')
    assert_usage_error(run('demo', '--show', '-1', expect=2), 'argument --show')


def test_predict_batches_files_folders_and_globs(tmp_path):
    Image = pillow()
    rng = np.random.RandomState(13)
    images = tmp_path / 'images'
    images.mkdir()
    pixels = [rng.randint(0, 256, size=(224, 224, 3)).astype(np.uint8) for _ in range(5)]
    for i, p in enumerate(pixels):
        Image.fromarray(p).save(images / f'img{i}.png')
    prefix = os.path.join(ZOO_DIR, 'squeezenet1.1')
    predictor = mxlite.Predictor.load(prefix)
    expected = {f'img{i}.png': np.argsort(-predictor(data=p.astype(np.float32).transpose(
        2, 0, 1)[None].copy())[0], kind='stable')[:3] for i, p in enumerate(pixels)}
    (tmp_path / 'synset.txt').write_text(''.join(f'label{i}\n' for i in range(1000)))
    # A folder, in batches of 2 (the last one short), as CSV: one row per image.
    run('predict', prefix, '--input', images, '--batch-size', '2', '--top-k', '3', '--format',
        'csv', '--output', tmp_path / 'out.csv', '--synset', tmp_path / 'synset.txt')
    import csv
    with open(tmp_path / 'out.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert [os.path.basename(row['file']) for row in rows] == sorted(expected)
    for row in rows:
        want = expected[os.path.basename(row['file'])]
        assert [int(row[f'index_{r}']) for r in (1, 2, 3)] == list(want)
        assert row['label_1'] == f'label{want[0]}'
        assert 0 < float(row['probability_1']) <= 1
    # A glob (quoted, expanded by mxlite) and a file, as JSON on stdout.
    out = run('predict', prefix, '--input', str(images / 'img[01].png'), images / 'img4.png',
              '--format', 'json').stdout
    report = json.loads(out)
    assert [os.path.basename(r['file']) for r in report] == ['img0.png', 'img1.png', 'img4.png']
    for r in report:
        assert [p['index'] for p in r['predictions'][:3]] == \
            list(expected[os.path.basename(r['file'])])
    # Several files in text: one block per file.
    out = run('predict', prefix, '--input', images / 'img0.png', images / 'img1.png').stdout
    assert out.count('1. class') == 2 and 'img1.png:' in out
    assert 'no file matches' in run('predict', prefix, '--input', str(tmp_path / 'none*.png'),
                                    expect=1).stderr
    assert_usage_error(run('predict', prefix, '--input', images, '--batch-size', '0',
                           expect=2), 'argument --batch-size')
