"""The zoo, operator and in-place residual suites again on every kernel path
and without graph optimisation: MXLITE_ISA caps the instruction set (AVX2,
portable), and MXLITE_GRAPH_OPT=0 / MXLITE_WINOGRAD=0 / MXLITE_SHIFTED_GEMM=0 /
MXLITE_NUM_THREADS=1 turn off the fused operators, the Winograd and
shifted-view convolutions (im2col instead) and threading. Each configuration
must still match MXNet 1.9.1; each runs in its own process because the
choices are read once per process."""
import os
import subprocess
import sys

import pytest

from conftest import HERE

CONFIGURATIONS = {
    'portable-kernels': {'MXLITE_ISA': 'scalar'},
    'avx2-kernels': {'MXLITE_ISA': 'avx2'},
    'no-graph-optimisation': {'MXLITE_GRAPH_OPT': '0'},
    'im2col-one-thread': {'MXLITE_WINOGRAD': '0', 'MXLITE_SHIFTED_GEMM': '0',
                          'MXLITE_NUM_THREADS': '1'},
}


@pytest.mark.parametrize('name', sorted(CONFIGURATIONS))
def test_suites_pass_under(name, tmp_path):
    env = {**os.environ, **CONFIGURATIONS[name]}
    # The inner session's own --basetemp: left to number its own directory
    # under /tmp, it would take part in pytest's rotation of those, which
    # can remove the outer session's (see test_sanitizers.py).
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '--basetemp', str(tmp_path / 'inner'), 'test_zoo.py', 'test_ops.py',
         'test_residual_in_place.py'],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:]
