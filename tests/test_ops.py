"""Every operator configuration against MXNet 1.9.1 (tests/fixtures/ops)."""
import pytest

from conftest import FIXTURES, assert_close, load_cases

CASES = load_cases(f'{FIXTURES}/ops')


def test_fixtures_present():
    assert len(CASES) >= 40, 'tests/fixtures/ops is missing or incomplete'


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_op_matches_mxnet(api, case):
    inputs, expected = case.io()
    outputs = api.predict(case.symbol_json, case.params, inputs, num_outputs=len(expected))
    for index, (ours, theirs) in enumerate(zip(outputs, expected)):
        assert_close(ours, theirs, case.rtol, f'{case.name} output {index}')
