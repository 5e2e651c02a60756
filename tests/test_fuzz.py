"""Randomly damaged symbol files and params files, loaded in this process.

Each attempt must either load (and then run) or fail with a message; a
crash or abort would end the pytest process. Seeded, so a failure repeats.
"""
import json
import random

import numpy as np
import pytest

from capi import CAPIError
from conftest import FIXTURES, load_cases

CASE = {case.name: case for case in load_cases(f'{FIXTURES}/ops')}['composite_net']
SHAPE = (2, 3, 13, 13)


def mutate(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        action = rng.random()
        position = rng.randrange(len(data)) if data else 0
        if action < 0.4 and data:
            data[position] = rng.randrange(256)
        elif action < 0.6:
            del data[position:position + rng.randint(1, 16)]
        elif action < 0.8:
            chunk = data[position:position + rng.randint(1, 32)]
            data[position:position] = chunk
        else:
            data = data[:position]
    return bytes(data)


def attempt(api, symbol, params):
    try:
        handle = api.create(symbol, params, {'data': SHAPE})
    except CAPIError as error:
        assert str(error), 'a failure must carry a message'
        return False
    try:
        api.set_input(handle, 'data', np.ones(SHAPE, np.float32))
        api.forward(handle)
        api.output(handle, 0)
    except CAPIError as error:
        assert str(error)
    finally:
        api.free(handle)
    return True


@pytest.mark.parametrize('seed', range(4))
def test_damaged_params(api, seed):
    rng = random.Random(seed)
    for _ in range(150):
        attempt(api, CASE.symbol_json, mutate(CASE.params, rng))


@pytest.mark.parametrize('seed', range(4))
def test_damaged_symbol_bytes(api, seed):
    rng = random.Random(100 + seed)
    text = CASE.symbol_json.encode()
    for _ in range(150):
        damaged = mutate(text, rng).replace(b'\0', b' ')
        attempt(api, damaged, CASE.params)


ATTR_VALUES = ['0', '-1', '1', '3', '1000000', '(0, 0)', '(3,)', '(1, 1, 1)', '(-2, 3)',
               '(99999, 99999)', 'True', 'None', '', 'max', 'full', '(3, 3)', '1e30', 'nan']


@pytest.mark.parametrize('seed', range(4))
def test_damaged_attributes(api, seed):
    """Valid JSON whose operator attributes take hostile values."""
    rng = random.Random(200 + seed)
    graph = json.loads(CASE.symbol_json)
    operators = [n for n in graph['nodes'] if n['op'] != 'null']
    for _ in range(150):
        damaged = json.loads(json.dumps(graph))
        node = rng.choice([n for n in damaged['nodes'] if n['op'] != 'null'])
        keys = list(node.get('attrs', {})) + ['kernel', 'stride', 'pad', 'num_filter', 'axis',
                                               'dim', 'num_hidden', 'num_group', 'dilate']
        node.setdefault('attrs', {})[rng.choice(keys)] = rng.choice(ATTR_VALUES)
        attempt(api, json.dumps(damaged), CASE.params)
    assert operators
