"""Splitting a batch (predict/executor/executor.h): a batch runs image by image through
workers bound for one image, when every operator computes the images apart.

MXNet's outputs for two different images at batch 2 come from the model-family suite
(scripts/model_families.py --suite); batches of other sizes are assembled from those two
images and their outputs. Graphs that mix images (Concat along axis 0, softmax over axis 0)
must keep the batch whole; their expected values are numpy arithmetic.
"""
import json
import os

import numpy as np
import pytest

from conftest import ZOO_DIR, assert_close
from mxlite import Predictor
from test_model_families import FAMILIES_DIR, MODELS

RTOL = 1e-4
# Suite models with a batch-2 fixture whose graphs compute images apart: a ResNet with
# squeeze-excitation (broadcast_mul), a segmentation net (BilinearResize2D, Concat) and a
# face embedding (PReLU, depthwise convolutions, L2Normalization).
SPLIT_MODELS = ['se_resnet18_v1', 'fcn_resnet_thin', 'mobilefacenet']


def batch_fixture(name):
    if name not in MODELS or 'batch' not in MODELS[name]:
        pytest.skip(f'{name} has no batch fixture in {FAMILIES_DIR}: run scripts/run_tests.sh')
    prefix = os.path.join(FAMILIES_DIR, name)
    with open(prefix + '-symbol.json', encoding='utf-8') as f:
        symbol = f.read()
    with open(prefix + '-0000.params', 'rb') as f:
        params = f.read()
    data = np.load(prefix + '-b2-io.npz')
    inputs = {k.split(':', 1)[1]: data[k] for k in data.files if k.startswith('input:')}
    outputs = [data[k] for k in sorted(k for k in data.files if k.startswith('output:'))]
    return symbol, params, inputs, outputs


def run(symbol, params, inputs, threads, split):
    predictor = Predictor(symbol, params, input_shapes={k: v.shape for k, v in inputs.items()},
                          threads=threads, options={'split_batch': split})
    outputs = predictor.predict(**inputs)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    return outputs, predictor.memory_stats()['arena_bytes']


@pytest.mark.parametrize('threads', [1, 2])
@pytest.mark.parametrize('name', SPLIT_MODELS)
def test_split_batch_matches_mxnet_and_plans_one_image(name, threads):
    symbol, params, inputs, expected = batch_fixture(name)
    order = [0, 1, 1, 0]
    batch = {k: v[order] for k, v in inputs.items()}
    split, split_arena = run(symbol, params, batch, threads, True)
    whole, whole_arena = run(symbol, params, batch, threads, False)
    for i, theirs in enumerate(expected):
        assert_close(split[i], theirs[order], RTOL, f'{name} split, output {i}')
        assert_close(whole[i], theirs[order], RTOL, f'{name} whole, output {i}')
    # Split, each of the workers (one per thread) plans one image of the four.
    assert split_arena <= whole_arena * threads // 4 + 4096 * threads


@pytest.mark.parametrize('order,threads', [
    ([0, 1, 1, 0, 1], 2),  # two workers, three images and two
    ([1, 0, 0], 2),        # three images on two threads: one worker with both
    ([1, 1, 0, 1], 1),
])
def test_split_batch_keeps_each_image_in_its_place(order, threads):
    symbol, params, inputs, expected = batch_fixture('se_resnet18_v1')
    batch = {k: v[order] for k, v in inputs.items()}
    outputs, _ = run(symbol, params, batch, threads, True)
    for i, theirs in enumerate(expected):
        assert_close(outputs[i], theirs[order], RTOL, f'output {i}, images {order}')


def symbol_json(nodes, heads):
    return json.dumps({'nodes': nodes, 'arg_nodes': [0], 'heads': heads,
                       'node_row_ptr': list(range(len(nodes) + 1)),
                       'attrs': {'mxnet_version': ['int', 10901]}})


MIXING_GRAPHS = {
    'Concat along axis 0': (
        [{'op': 'null', 'name': 'data', 'inputs': []},
         {'op': 'Activation', 'name': 'relu', 'attrs': {'act_type': 'relu'},
          'inputs': [[0, 0, 0]]},
         {'op': 'Concat', 'name': 'cat', 'attrs': {'dim': '0', 'num_args': '2'},
          'inputs': [[1, 0, 0], [0, 0, 0]]}],
        lambda x: np.concatenate([np.maximum(x, 0), x], axis=0)),
    'softmax over axis 0': (
        [{'op': 'null', 'name': 'data', 'inputs': []},
         {'op': 'softmax', 'name': 'sm', 'attrs': {'axis': '0'}, 'inputs': [[0, 0, 0]]}],
        lambda x: np.exp(x) / np.exp(x).sum(axis=0, keepdims=True)),
}


@pytest.mark.parametrize('graph', sorted(MIXING_GRAPHS))
def test_graphs_that_mix_images_keep_the_batch_whole(graph):
    nodes, numpy_fn = MIXING_GRAPHS[graph]
    symbol = symbol_json(nodes, [[len(nodes) - 1, 0, 0]])
    x = np.random.RandomState(0).randn(4, 3, 5).astype(np.float32)
    split, split_arena = run(symbol, b'', {'data': x}, 2, True)
    whole, whole_arena = run(symbol, b'', {'data': x}, 2, False)
    assert_close(split[0], numpy_fn(x.astype(np.float64)), RTOL, graph)
    assert split_arena == whole_arena


def test_split_batch_fits_a_budget_the_whole_batch_exceeds():
    """The budget counts every worker's arena, the batch's inputs and outputs and the
    shared prepared weights once; a batch that fits only split runs split."""
    symbol, params, inputs, expected = batch_fixture('se_resnet18_v1')
    order = [0, 1] * 4
    batch = {k: v[order] for k, v in inputs.items()}
    shapes = {k: v.shape for k, v in batch.items()}

    def stats(split):
        return Predictor(symbol, params, input_shapes=shapes, threads=1,
                         options={'split_batch': split}).memory_stats()
    split, whole = stats(True), stats(False)
    io_bytes = sum(v.nbytes for v in batch.values()) + expected[0][order].nbytes
    need_split = (split['arena_bytes'] + split['prepared_bytes'] + split['workspace_bytes'] +
                  io_bytes)
    need_whole = whole['arena_bytes'] + whole['prepared_bytes'] + io_bytes
    assert need_split < need_whole
    budget = (need_split + need_whole) // 2
    predictor = Predictor(symbol, params, input_shapes=shapes, threads=1,
                          options={'split_batch': True, 'memory_budget': budget})
    assert predictor.memory_stats()['arena_bytes'] == split['arena_bytes']
    assert_close(predictor.predict(**batch), expected[0][order], RTOL, 'in the budget')
    with pytest.raises(Exception, match='over the memory budget'):
        Predictor(symbol, params, input_shapes=shapes, threads=1,
                  options={'split_batch': False, 'memory_budget': budget})


@pytest.mark.parametrize('name,splits', [('squeezenet1.1', True), ('mobilenetv2_1.0', True),
                                         ('resnet18_v1', False), ('vgg11', False)])
def test_auto_splits_where_the_weights_are_smaller_than_the_activations(name, splits):
    """split_batch=auto (the default) splits squeezenet1.1 and mobilenetv2_1.0 (weights
    0.28 and 0.50 of one image's intermediate results) and keeps resnet18_v1 and vgg11
    (4.4 and 15) whole: docs/performance.md has the measurements behind the rule."""
    prefix = os.path.join(ZOO_DIR, name)
    if not os.path.exists(prefix + '-symbol.json'):
        pytest.skip(f'{name} missing from {ZOO_DIR}: run scripts/run_tests.sh')
    shapes = {'data': (2, 3, 224, 224)}

    def arena(**options):
        return Predictor.load(prefix, input_shapes=shapes, threads=1,
                              options=options).memory_stats()['arena_bytes']
    whole, split, auto = arena(split_batch=False), arena(split_batch=True), arena()
    assert split < whole
    assert auto == (split if splits else whole)
