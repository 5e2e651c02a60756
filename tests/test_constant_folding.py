"""Constant folding (predict/executor/executor.cc, FoldConstants): with graph optimisation
and fold_constants on (the defaults), the nodes that only rearrange parameters (Reshape,
Concat, transpose, ... as GluonNLP's attention does with its query, key and value weights)
run once when a predictor is bound, not on every pass. The numbers are those of the graph
computed in full, the graph outputs stay computed, and the profile shows which nodes still
run."""
import json
import os
import subprocess
import sys

import numpy as np

from mxlite import Predictor

RNG = np.random.default_rng(5)
PARAMS = {'w_a': RNG.normal(size=(3, 6)).astype(np.float32),
          'w_b': RNG.normal(size=(3, 6)).astype(np.float32),
          'bias': RNG.normal(size=(6,)).astype(np.float32)}


def graph():
    """fc(data, reshape(transpose(concat(w_a, w_b)))) + bias, and reshape(w_b) as a second
    output (a graph output made of parameters alone: computed, never folded)."""
    nodes = [
        {'op': 'null', 'name': 'data', 'inputs': []},
        {'op': 'null', 'name': 'w_a', 'inputs': []},
        {'op': 'null', 'name': 'w_b', 'inputs': []},
        {'op': 'Concat', 'name': 'joined', 'attrs': {'dim': '0', 'num_args': '2'},
         'inputs': [[1, 0, 0], [2, 0, 0]]},
        {'op': 'transpose', 'name': 'turned', 'inputs': [[3, 0, 0]]},
        {'op': 'Reshape', 'name': 'weight', 'attrs': {'shape': '(6, 6)'},
         'inputs': [[4, 0, 0]]},
        {'op': 'null', 'name': 'bias', 'inputs': []},
        {'op': 'FullyConnected', 'name': 'fc', 'attrs': {'num_hidden': '6'},
         'inputs': [[0, 0, 0], [5, 0, 0], [6, 0, 0]]},
        {'op': 'Reshape', 'name': 'flat_b', 'attrs': {'shape': '(-1,)'},
         'inputs': [[2, 0, 0]]},
    ]
    return json.dumps({'nodes': nodes, 'arg_nodes': [0, 1, 2, 6], 'heads': [[7, 0, 0], [8, 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})


def expected(data):
    weight = np.concatenate([PARAMS['w_a'], PARAMS['w_b']]).T.reshape(6, 6)
    return data @ weight.T + PARAMS['bias'], PARAMS['w_b'].reshape(-1)


def test_folded_graph_matches_the_full_one():
    data = RNG.normal(size=(2, 6)).astype(np.float32)
    for options in ({}, {'graph_optimization': False}, {'fold_constants': False}):
        predictor = Predictor(graph(), PARAMS, {'data': (2, 6)}, options=options)
        outputs = predictor.predict(data=data)
        for ours, theirs in zip(outputs, expected(data)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        # Reshaped to another batch, and a second predictor: the folded values shared.
        predictor.reshape({'data': (3, 6)})
        more = RNG.normal(size=(3, 6)).astype(np.float32)
        np.testing.assert_allclose(predictor.predict(data=more)[0], expected(more)[0],
                                   rtol=1e-5, atol=1e-6)
        again = Predictor(graph(), PARAMS, {'data': (2, 6)}, options=options)
        np.testing.assert_allclose(again.predict(data=data)[0], expected(data)[0],
                                   rtol=1e-5, atol=1e-6)


PROFILE_SCRIPT = r'''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_constant_folding import PARAMS, graph
from mxlite import Predictor
predictor = Predictor(graph(), PARAMS, {'data': (2, 6)}, threads=1)
predictor.predict(data=np.ones((2, 6), np.float32))
del predictor
'''


def profiled_nodes(optimize, fold=True):
    env = {**os.environ, 'MXLITE_PROFILE': '2', 'MXLITE_GRAPH_OPT': '1' if optimize else '0',
           'MXLITE_FOLD_CONSTANTS': '1' if fold else '0'}
    result = subprocess.run([sys.executable, '-c', PROFILE_SCRIPT, os.path.dirname(__file__)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith('mxlite profile')]
    assert len(header) == 1, result.stderr[-2000:]
    return [line.split()[1] for line in lines[header[0] + 1:]]


def test_parameter_rearrangements_run_once_when_optimising():
    assert profiled_nodes(optimize=False) == ['joined', 'turned', 'weight', 'fc', 'flat_b']
    assert profiled_nodes(optimize=True, fold=False) == ['joined', 'turned', 'weight', 'fc',
                                                         'flat_b']
    # Folded: the weight's three nodes no longer run; the output made of w_b still does.
    assert profiled_nodes(optimize=True) == ['fc', 'flat_b']
