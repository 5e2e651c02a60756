"""`mxlite predict` on detection and segmentation models, and its progress bar.

The models here pass their input through to outputs of the layouts the CLI
recognises: GluonCV's detectors' (ids (B, N, 1), scores (B, N, 1), boxes
(B, N, 4)), MultiBoxDetection's rows (B, N, 6), and a segmentation head's
(B, C, H, W) scores; so the expected boxes and class maps follow from the
input by arithmetic (filter, sort; argmax), and the runtime computes the
outputs the CLI reads. tests/test_model_families.py checks the real SSD,
YOLOv3, CenterNet and FastSCNN exports against MXNet.
"""
import csv
import io
import json

import numpy as np
import pytest

from test_cli import pillow, run


def write_checkpoint(prefix, nodes, heads):
    symbol = {'nodes': nodes, 'arg_nodes': [0], 'heads': heads,
              'node_row_ptr': list(range(len(nodes) + 1)),
              'attrs': {'mxnet_version': ['int', 10901]}}
    with open(f'{prefix}-symbol.json', 'w', encoding='utf-8') as f:
        json.dump(symbol, f)
    # An empty NDArray list: magic, reserved, zero arrays, zero names.
    with open(f'{prefix}-0000.params', 'wb') as f:
        f.write(np.array([0x112, 0, 0, 0], np.uint64).tobytes())


def triple_detector(prefix, flat=False):
    """data (B, N, 6) -> its columns as ids, scores, boxes; with `flat` ids
    and scores are (B, N), as CenterNet gives them, else (B, N, 1)."""
    def part(name, begin, end):
        return {'op': 'slice_axis', 'name': name, 'inputs': [[0, 0, 0]],
                'attrs': {'axis': '2', 'begin': str(begin), 'end': str(end)}}
    nodes = [{'op': 'null', 'name': 'data', 'inputs': []},
             part('ids', 0, 1), part('scores', 1, 2), part('boxes', 2, 6)]
    heads = [[1, 0, 0], [2, 0, 0], [3, 0, 0]]
    if flat:
        nodes += [{'op': 'Flatten', 'name': 'ids_flat', 'inputs': [[1, 0, 0]]},
                  {'op': 'Flatten', 'name': 'scores_flat', 'inputs': [[2, 0, 0]]}]
        heads = [[4, 0, 0], [5, 0, 0], [3, 0, 0]]
    write_checkpoint(prefix, nodes, heads)


def passthrough(prefix):
    """data -> a copy of it: one output of the input's shape."""
    write_checkpoint(prefix, [{'op': 'null', 'name': 'data', 'inputs': []},
                              {'op': '_copy', 'name': 'out', 'inputs': [[0, 0, 0]]}],
                     [[1, 0, 0]])


def detection_rows(rng, count):
    """count rows of [id, score, x1, y1, x2, y2]: some padding (id -1), some
    below the threshold, two equal scores."""
    rows = np.zeros((count, 6), np.float32)
    rows[:, 0] = rng.integers(0, 20, count)
    rows[:, 1] = rng.uniform(0, 1, count)
    rows[:, 2:4] = rng.uniform(0, 100, (count, 2))
    rows[:, 4:6] = rows[:, 2:4] + rng.uniform(1, 50, (count, 2))
    rows[::5, 0] = -1
    rows[1, 1] = rows[2, 1] = 0.75
    return rows


def expected_detections(rows, threshold, limit):
    keep = [i for i in range(len(rows)) if rows[i, 0] >= 0 and rows[i, 1] >= threshold]
    keep.sort(key=lambda i: -float(rows[i, 1]))  # stable: equal scores keep their order
    return [(int(rows[i, 0]), float(rows[i, 1]), [float(v) for v in rows[i, 2:]])
            for i in keep[:limit]]


@pytest.mark.parametrize('layout', ['triple', 'flat', 'rows'])
def test_detection_boxes_as_json_and_csv(tmp_path, layout):
    prefix = str(tmp_path / 'detector')
    if layout == 'rows':
        passthrough(prefix)
    else:
        triple_detector(prefix, flat=layout == 'flat')
    rng = np.random.default_rng(7)
    images = [detection_rows(rng, 12)[None] for _ in range(3)]
    files = []
    for i, image in enumerate(images):
        files.append(str(tmp_path / f'image{i}.npy'))
        np.save(files[-1], image)
    labels = tmp_path / 'labels.txt'
    labels.write_text(''.join(f'thing{i}\n' for i in range(20)), encoding='utf-8')
    # The default --task auto recognises the layout; two files a batch
    # leave a ragged last batch.
    result = run('predict', prefix, '--input', *files, '--format', 'json', '--threshold', 0.3,
                 '--max-detections', 4, '--batch-size', 2, '--synset', labels)
    report = json.loads(result.stdout)
    assert [entry['file'] for entry in report] == files
    for entry, image in zip(report, images):
        want = expected_detections(image[0], 0.3, 4)
        got = [(d['index'], d['score'], d['box']) for d in entry['detections']]
        assert [g[0] for g in got] == [w[0] for w in want]
        np.testing.assert_allclose([g[1] for g in got], [w[1] for w in want], rtol=1e-6)
        np.testing.assert_allclose(np.array([g[2] for g in got]).reshape(-1, 4),
                                   np.array([w[2] for w in want]).reshape(-1, 4), rtol=1e-6)
        assert [d['label'] for d in entry['detections']] == [f'thing{w[0]}' for w in want]
    result = run('predict', prefix, '--input', files[0], '--task', 'detect', '--format', 'csv')
    table = list(csv.reader(io.StringIO(result.stdout)))
    assert table[0] == ['file', 'index', 'label', 'score', 'x1', 'y1', 'x2', 'y2']
    want = expected_detections(images[0][0], 0.5, 100)
    assert [int(row[1]) for row in table[1:]] == [w[0] for w in want]
    # One file, no --format: the text report.
    result = run('predict', prefix, '--input', files[0])
    assert result.stdout.splitlines()[0] == f'{files[0]}: {len(want)} boxes'


def test_segmentation_classes_by_area_and_masks(tmp_path):
    prefix = str(tmp_path / 'segmenter')
    passthrough(prefix)
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(2, 5, 9, 11)).astype(np.float32)
    scores[:, 3] += 0.8  # one class takes most pixels
    np.save(tmp_path / 'scores.npy', scores)
    masks = tmp_path / 'masks'
    result = run('predict', prefix, '--input', tmp_path / 'scores.npy', '--task', 'segment',
                 '--format', 'json', '--top-k', 3, '--mask-dir', masks)
    report = json.loads(result.stdout)
    image = pillow()
    for sample, entry in enumerate(report):
        class_map = scores[sample].argmax(axis=0)
        counts = np.bincount(class_map.ravel(), minlength=5)
        order = sorted(range(5), key=lambda c: (-counts[c], c))[:3]
        assert [c['index'] for c in entry['classes']] == order
        assert [c['pixels'] for c in entry['classes']] == [int(counts[c]) for c in order]
        assert entry['classes'][0]['fraction'] == pytest.approx(counts[order[0]] / (9 * 11))
        with image.open(entry['mask']) as mask:
            np.testing.assert_array_equal(np.asarray(mask), class_map)


def test_task_errors_are_clear(tmp_path):
    prefix = str(tmp_path / 'plain')
    passthrough(prefix)
    np.save(tmp_path / 'vector.npy', np.ones((1, 10), np.float32))
    result = run('predict', prefix, '--input', tmp_path / 'vector.npy', '--task', 'detect',
                 expect=1)
    assert 'mxlite: error: --task detect: the outputs (1, 10) are neither' in result.stderr
    result = run('predict', prefix, '--input', tmp_path / 'vector.npy', '--task', 'segment',
                 expect=1)
    assert 'per-pixel classes need (B, C, H, W)' in result.stderr
    result = run('predict', prefix, '--input', tmp_path / 'vector.npy', '--mask-dir',
                 tmp_path / 'm', expect=2)
    assert 'argument --mask-dir: needs --task segment' in result.stderr
    # A (1, 10) output under --task auto stays a classifier: top-k.
    result = run('predict', prefix, '--input', tmp_path / 'vector.npy', '--top-k', 2)
    assert 'top-2:' in result.stdout


def test_progress_bar_over_several_files(tmp_path):
    prefix = str(tmp_path / 'plain')
    passthrough(prefix)
    files = []
    for i in range(3):
        files.append(str(tmp_path / f'x{i}.npy'))
        np.save(files[-1], np.full((1, 4), i, np.float32))
    result = run('predict', prefix, '--input', *files, '--batch-size', 1, '--top-k', 2,
                 '--progress')
    assert '3/3' in result.stderr, result.stderr
    result = run('predict', prefix, '--input', *files, '--batch-size', 1, '--top-k', 2)
    assert result.stderr == ''  # not a terminal: no bar unless asked
