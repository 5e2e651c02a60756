"""Gluon model-zoo networks against MXNet 1.9.1 through the C API.

The checkpoints and MXNet's outputs are made by scripts/make_fixtures.py zoo
(run by scripts/run_tests.sh); they are too large to commit.
"""
import pytest

from conftest import ZOO_DIR, assert_close, load_cases

ZOO_MODELS = ['resnet18_v1', 'resnet50_v2', 'mobilenet1.0', 'mobilenetv2_1.0', 'squeezenet1.1',
              'densenet121', 'inceptionv3', 'vgg11', 'alexnet']
CASES = {case.name: case for case in load_cases(ZOO_DIR)}


@pytest.mark.parametrize('name', ZOO_MODELS)
def test_zoo_model_matches_mxnet(api, name):
    assert name in CASES, f'{name} missing from {ZOO_DIR}: run scripts/run_tests.sh'
    case = CASES[name]
    inputs, expected = case.io()
    outputs = api.predict(case.symbol_json, case.params, inputs, num_outputs=len(expected))
    assert_close(outputs[0], expected[0], case.rtol, name)
    # The same class wins, as a user would check first.
    assert outputs[0].argmax() == expected[0].argmax()
