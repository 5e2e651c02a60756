"""The polynomials of the vector math kernels (predict/operators/math_row.h).

scripts/vector_math_coefficients.py fits them again (near-minimax relative
error, in double precision) and compares the float constants with the
header's; tests/cpp/math_row_test.cc (through test_kernels_isa.py) checks
the kernels built from them against the C library."""
import os
import re
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, 'scripts', 'vector_math_coefficients.py')
HEADER = os.path.join(ROOT, 'predict', 'operators', 'math_row.h')


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300)


def test_fits_match_the_header_and_are_accurate():
    result = run('--check-source')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'math_row.h matches the fits' in result.stdout
    errors = [float(e) for e in re.findall(r'max relative error of the fit: (\S+)', result.stdout)]
    assert len(errors) == 4 and max(errors) < 2e-8, result.stdout


def test_a_changed_constant_is_reported(tmp_path):
    text = open(HEADER, encoding='utf-8').read()
    assert '0.16666521f' in text
    broken = tmp_path / 'math_row.h'
    broken.write_text(text.replace('0.16666521f', '0.16666522f', 1))
    result = run('--check-source', str(broken))
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'kExpQ differs' in result.stdout
