"""FullyConnected's algorithms (predict/operators/fully_connected.h), each
forced on every seeded random size it applies to, against a double
reference, under each instruction-set cap (tests/cpp/fc_sweep_test.cc)."""
import os
import re
import subprocess

import pytest

from cpp_build import build_driver


@pytest.fixture(scope='module')
def sweep(tmp_path_factory):
    return build_driver('fc_sweep_test', tmp_path_factory.mktemp('fc_sweep'))


@pytest.mark.parametrize('isa', ['avx512', 'avx2', 'scalar'])
def test_every_fully_connected_algorithm_matches_reference(sweep, isa):
    result = subprocess.run([str(sweep), '--cases', '300', '--seed', str(len(isa))],
                            env={**os.environ, 'MXLITE_ISA': isa}, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    ran = dict(re.findall(r'^  (.+?)\s+(\d+) runs$', result.stdout, re.M))
    assert set(ran) == {'gemv rows', 'prepacked gemm', 'gemm'}, ran
    assert result.stdout.strip().endswith(' 0 failures')
