"""Symbol files in which several nodes share a name (GluonCV's video models
reuse one relu name): the outputs stay right, and selecting an output by the
shared name is an error that lists the nodes and says how to choose,
instead of taking the first one silently.

MXNet 1.9.1 on the graph below (measured): get_internals().list_outputs() is
['data', 'relu0_output', 'scale_output', 'relu0_output', 'out_output'];
sym.get_internals()['relu0_output'] raises ValueError 'There are multiple
outputs with name "relu0_output"'; get_internals()[1] and [3] select each;
the forward pass gives relu(3 * relu(x)) + 1. Its MXPredCreatePartialOut takes
the first 'relu0' without a word (key 'relu0' gives relu(x)); mxlite refuses
that key like the Python API does."""
import json
import struct

import numpy as np
import pytest

from capi import CAPIError

# data -> relu0 (relu) -> scale (x3) -> relu0 (relu again) -> out (+1)
SYMBOL = json.dumps({
    'nodes': [
        {'op': 'null', 'name': 'data', 'inputs': []},
        {'op': 'Activation', 'name': 'relu0', 'attrs': {'act_type': 'relu'},
         'inputs': [[0, 0, 0]]},
        {'op': '_mul_scalar', 'name': 'scale', 'attrs': {'scalar': '3'}, 'inputs': [[1, 0, 0]]},
        {'op': 'Activation', 'name': 'relu0', 'attrs': {'act_type': 'relu'},
         'inputs': [[2, 0, 0]]},
        {'op': '_plus_scalar', 'name': 'out', 'attrs': {'scalar': '1'}, 'inputs': [[3, 0, 0]]}],
    'arg_nodes': [0], 'node_row_ptr': [0, 1, 2, 3, 4, 5], 'heads': [[4, 0, 0]],
    'attrs': {'mxnet_version': ['int', 10901]}})
# An NDArray list file with no arrays (magic, reserved, 0 arrays, 0 names).
NO_PARAMS = struct.pack('<QQQQ', 0x112, 0, 0, 0)
X = np.array([[-1.0, 2.0, -3.0, 0.5]], dtype=np.float32)
FIRST_RELU = np.maximum(X, 0)
SECOND_RELU = np.maximum(3 * FIRST_RELU, 0) * 1.0
INTERNALS = ['data', 'relu0_output', 'scale_output', 'relu0_output', 'out_output']


def test_c_api_outputs_stay_right(api):
    (out,) = api.predict(SYMBOL, NO_PARAMS, {'data': X})
    np.testing.assert_array_equal(out, np.maximum(3 * np.maximum(X, 0), 0) + 1)


def test_c_api_partial_out_refuses_a_shared_name(api):
    with pytest.raises(CAPIError) as error:
        api.create(SYMBOL, NO_PARAMS, {'data': X.shape}, output_keys=['relu0'])
    message = str(error.value)
    assert "output key 'relu0': 2 outputs are named 'relu0_output'" in message, message
    assert "'relu0' (Activation) reading 'data'" in message, message
    assert "'relu0' (Activation) reading 'scale_output'" in message, message
    assert 'a name of its own' in message, message


def test_c_api_partial_out_unique_names_still_select(api):
    scale, out = api.predict(SYMBOL, NO_PARAMS, {'data': X}, num_outputs=2,
                             output_keys=['scale', 'out'])
    np.testing.assert_array_equal(scale, 3 * FIRST_RELU)
    np.testing.assert_array_equal(out, SECOND_RELU + 1)


# --- the Python binding -------------------------------------------------------

mxlite = pytest.importorskip('mxlite')


def predictor(**kwargs):
    return mxlite.Predictor(SYMBOL, None, {'data': X.shape}, **kwargs)


def test_python_internals_list_every_node():
    assert predictor().get_internals() == INTERNALS


@pytest.mark.parametrize('name', ['relu0_output', 'relu0'])
def test_python_shared_name_is_refused_with_positions(name):
    pred = predictor()
    with pytest.raises(mxlite.MXLiteError) as error:
        pred.with_outputs(name)
    message = str(error.value)
    assert f"output '{name}' is ambiguous: 2 outputs are named 'relu0_output'" in message
    assert "'relu0' (Activation) reading 'data'; 'relu0' (Activation) reading 'scale_output'" \
        in message, message
    assert 'position in get_internals() instead, 1 or 3' in message, message
    assert 'with_outputs(3)' in message, message
    with pytest.raises(mxlite.MXLiteError, match='is ambiguous'):
        predictor(outputs=[name])


def test_python_positions_select_each_node():
    pred = predictor()
    np.testing.assert_array_equal(pred.with_outputs(1)(data=X), FIRST_RELU)
    np.testing.assert_array_equal(pred.with_outputs(3)(data=X), SECOND_RELU)
    both = predictor(outputs=[3, 'scale', 1])
    assert both.output_names == ['relu0_output', 'scale_output', 'relu0_output']
    second, scale, first = both(data=X)
    np.testing.assert_array_equal(second, SECOND_RELU)
    np.testing.assert_array_equal(scale, 3 * FIRST_RELU)
    np.testing.assert_array_equal(first, FIRST_RELU)
    np.testing.assert_array_equal(predictor(outputs=4)(data=X), SECOND_RELU + 1)


@pytest.mark.parametrize('bad,match', [
    (5, r'output position 5 is outside get_internals\(\), which lists 5 outputs \(0 to 4\)'),
    (-1, 'output position -1 is outside get_internals'),
    (True, 'or positions in get_internals'),
    (2.0, 'or positions in get_internals')])
def test_python_bad_positions(bad, match):
    with pytest.raises(mxlite.MXLiteError, match=match):
        predictor().with_outputs(bad)
