"""The Winograd F(m, r) matrices of kernels/winograd1d.cc, derived exactly.

scripts/winograd_1d_matrices.py rebuilds B^T and G from the interpolation
points in rational arithmetic, checks the convolution identity for every
kernel length, and compares G's row scales with the constants in the source
(the C++ driver winograd1d_test checks the kernel's B^T numerically)."""
import os
import subprocess
import sys

from conftest import ROOT


def test_matrices_derive_and_match_source():
    script = os.path.join(ROOT, 'scripts', 'winograd_1d_matrices.py')
    source = os.path.join(ROOT, 'predict', 'kernels', 'winograd1d.cc')
    result = subprocess.run([sys.executable, script, '--check-source', source],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'identity holds for 2 to 7 taps; winograd1d.cc agrees' in result.stdout
    # The integer rows InputTransform8 hard-codes (t0 and t7: 4, 21; the
    # paired rows: 17, 4; 5, 4, 2; 8, 10, 4, 5).
    assert '    4     0   -21     0    21     0    -4     0' in result.stdout


def test_source_mismatch_is_reported(tmp_path):
    script = os.path.join(ROOT, 'scripts', 'winograd_1d_matrices.py')
    source = open(os.path.join(ROOT, 'predict', 'kernels', 'winograd1d.cc')).read()
    broken = tmp_path / 'winograd1d.cc'
    broken.write_text(source.replace('1.0 / 18,', '1.0 / 19,', 1))
    result = subprocess.run([sys.executable, script, '--check-source', str(broken)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert 'kGScale' in result.stdout
