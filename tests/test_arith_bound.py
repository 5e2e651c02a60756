"""scripts/arith_bound.py: its MAC counts and its section of BENCHMARKS.md.

The script counts multiply-accumulates with MXNet's shape inference (in the
oracle venv); mxlite counts them with its own (graph_info.analyze, behind
`mxlite inspect`). Two implementations over different shape inference must
give the same totals per model. The section is rendered from a stand-in
results file, and the FMA probe must report a positive rate.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import mxlite
from mxlite.graph_info import analyze

from conftest import ROOT, ZOO_DIR

SCRIPT = os.path.join(ROOT, 'scripts', 'arith_bound.py')
ORACLE_PYTHON = os.environ.get('MXLITE_ORACLE_PYTHON',
                               os.path.join(ROOT, 'build', 'venv-mxnet', 'bin', 'python'))
MODELS = ['mobilenet1.0', 'squeezenet1.1', 'inceptionv3']


def load_script():
    spec = importlib.util.spec_from_file_location('mxlite_arith_bound', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def counts():
    return load_script().count_macs(ORACLE_PYTHON, ZOO_DIR, MODELS)


@pytest.mark.parametrize('model', MODELS)
def test_mac_totals_match_mxlite(counts, model):
    with open(os.path.join(ZOO_DIR, 'manifest.json')) as f:
        shapes = json.load(f)['cases'][model]['inputs']
    predictor = mxlite.Predictor.load(os.path.join(ZOO_DIR, model), input_shapes=shapes)
    classes = counts[model]
    assert sum(classes.values()) == analyze(predictor).total_macs


def test_classes(counts):
    # MobileNet has depthwise layers and no 3x3 stride-1 dense ones;
    # SqueezeNet the reverse; InceptionV3's 1x7/7x1 layers are 'other'.
    assert counts['mobilenet1.0']['depthwise'] > 0 and counts['mobilenet1.0']['winograd'] == 0
    assert counts['squeezenet1.1']['winograd'] > 0 and counts['squeezenet1.1']['depthwise'] == 0
    assert counts['inceptionv3']['other'] > counts['inceptionv3']['winograd'] > 0


def test_section_from_results(tmp_path):
    results = {'date': '2026-01-01 00:00 UTC', 'results': {
        'squeezenet1.1': {'1': {'mxlite': {'median_ms': 3.0}, 'mxnet': {'median_ms': 4.0},
                                'ort': {'median_ms': 2.0}}}}}
    results_path = tmp_path / 'results.json'
    results_path.write_text(json.dumps(results))
    benchmarks = tmp_path / 'BENCHMARKS.md'
    benchmarks.write_text('# Benchmarks\n\n## CPU performance\n\nkept\n')
    run = subprocess.run([sys.executable, SCRIPT, '--models', 'squeezenet1.1', '--zoo', ZOO_DIR,
                          '--results', str(results_path), '--oracle-python', ORACLE_PYTHON,
                          '--benchmarks-file', str(benchmarks)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    text = benchmarks.read_text()
    assert '## CPU performance\n\nkept' in text
    row = next(line for line in text.splitlines() if line.startswith('| squeezenet1.1 |'))
    cells = [c.strip() for c in row.strip('|').split('|')]
    # The faster peer is ORT at 2.0 ms; the goal is 0.85 of it.
    assert cells[6] == '2.00 (ORT)' and cells[7] == '1.70'
    peak = float(text.split('GFLOP/s)')[0].rsplit(', ', 1)[1])
    at_peak = float(cells[5])
    assert peak > 0 and at_peak > 0
    # The share is computed before the time is rounded to two decimals.
    assert abs(float(cells[8].rstrip('%')) - 100 * at_peak / 1.70) <= 1
    # One Strassen level: 7/8 of the multiplications, so 7/8 of the share.
    assert abs(float(cells[9].rstrip('%')) - 100 * 7 / 8 * at_peak / 1.70) <= 1
