"""scripts/bench.py still runs: one small model, two rounds, every runtime.

No timing is asserted (timings live in BENCHMARKS.md); what is checked is that
the harness drives mxlite, MXNet's C predict API and ONNX Runtime to outputs
that match MXNet's, and that it rewrites only its own section of BENCHMARKS.md.
The first run creates build/venv-bench (numpy, onnxruntime) and installs
onnx into the oracle venv, as a full benchmark run would.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, ZOO_DIR
from cpp_build import amalgamate

BENCH = os.path.join(ROOT, 'scripts', 'bench.py')
ORACLE_PYTHON = os.environ.get('MXLITE_ORACLE_PYTHON',
                               os.path.join(ROOT, 'build', 'venv-mxnet', 'bin', 'python'))


def load_bench_module():
    spec = importlib.util.spec_from_file_location('mxlite_bench', BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def library_under_test():
    path = os.environ.get('MXLITE_LIBRARY')
    if path is None:
        import mxlite
        path = mxlite.lib_path()
    return path


def test_replace_section_keeps_the_other_sections():
    bench = load_bench_module()
    text = ('# Benchmarks\n\nintro\n\n## Memory\n\nmemory table\n\n## CPU performance\n\nold\n'
            'old table\n\n## Size and compile time\n\nsizes\n')
    updated = bench.replace_section(text, 'CPU performance', '## CPU performance\n\nnew\n')
    assert updated == ('# Benchmarks\n\nintro\n\n## Memory\n\nmemory table\n\n'
                       '## CPU performance\n\nnew\n\n## Size and compile time\n\nsizes\n')
    appended = bench.replace_section('# Benchmarks\n\nintro\n', 'CPU performance',
                                     '## CPU performance\n\nnew\n')
    assert appended == '# Benchmarks\n\nintro\n\n## CPU performance\n\nnew\n'


def test_an_isa_cap_reaches_the_runtimes_that_have_one(monkeypatch):
    bench = load_bench_module()
    monkeypatch.setenv('MXLITE_ISA', 'scalar')  # the caller's own cap never leaks in
    monkeypatch.setenv('DNNL_MAX_CPU_ISA', 'SSE41')
    plain = {runtime: bench.worker_env(runtime, 2) for runtime in ('mxlite', 'mxnet', 'ort')}
    assert all('DNNL_MAX_CPU_ISA' not in env and 'MXLITE_ISA' not in env
               for env in plain.values())
    capped = {runtime: bench.worker_env(runtime, 2, 'avx2')
              for runtime in ('mxlite', 'mxnet', 'ort')}
    assert capped['mxlite']['MXLITE_ISA'] == 'avx2'
    assert capped['mxnet']['DNNL_MAX_CPU_ISA'] == 'AVX2'
    assert 'DNNL_MAX_CPU_ISA' not in capped['ort']
    assert capped['mxlite']['MXLITE_NUM_THREADS'] == '2'


def test_bench_runs_every_runtime_on_a_small_model(tmp_path):
    assert os.path.exists(ORACLE_PYTHON), 'the MXNet oracle venv is missing: run make test'
    assert os.path.exists(os.path.join(ZOO_DIR, 'squeezenet1.1-0000.params')), (
        'zoo fixtures missing in %s: run make test' % ZOO_DIR)
    benchmarks = tmp_path / 'BENCHMARKS.md'
    benchmarks.write_text('# Benchmarks\n\nintro\n\n## Memory\n\nkept as it is\n')
    results_json = tmp_path / 'results.json'
    command = [sys.executable, BENCH, '--models', 'squeezenet1.1', '--threads', '1,2',
               '--batch', '1,3', '--section', 'CPU performance on a test machine',
               '--iters', '2', '--turn', '2', '--warmup', '1', '--dot', '64',
               '--quiet-wait-s', '0',
               '--gap-ms', '0', '--library', library_under_test(), '--zoo', ZOO_DIR,
               '--oracle-python', ORACLE_PYTHON, '--benchmarks-file', str(benchmarks),
               '--results-json', str(results_json)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    report = json.loads(results_json.read_text())
    results = report['results']['squeezenet1.1']['1']
    assert set(results) == {'mxlite', 'mxnet', 'ort'}
    for runtime, result in results.items():
        assert result['error'] is None, (runtime, result['error'])
        # Two rounds of two-inference turns ran; an inference another process
        # preempted may be set aside (a busy machine), so at least two clean
        # times remain (half, else all are reported).
        assert result['samples'] == 4, runtime
        assert 2 <= len(result['times']) <= 4, runtime
        assert result['maxrss_kb'] > 0 and result['load_s'] > 0, runtime
    assert results['mxlite']['rel_err'] <= 1e-4
    assert results['mxnet']['rel_err'] <= 1e-3 and results['ort']['rel_err'] <= 1e-3
    # Batch 3: the image repeated, every runtime (ORT from a batch-3 export) checked per row.
    for threads in ('1', '2'):
        batched = report['batch_results']['squeezenet1.1']['3'][threads]
        assert set(batched) == {'mxlite', 'mxnet', 'ort'}
        for runtime, result in batched.items():
            assert result['error'] is None, (runtime, result['error'])
            assert result['rel_err'] <= (1e-4 if runtime == 'mxlite' else 1e-3), runtime
    # The dot case (a 64x64 product) beside the models, every runtime checked.
    for threads in ('1', '2'):
        for runtime, result in report['dot']['results'][threads].items():
            assert result['error'] is None and result['rel_err'] <= 1e-3, (runtime, result)
    # The machine: the FMA peak, and the CPUs' round trip beside the two-thread rows.
    assert report['fma_peaks'] and min(report['fma_peaks'].values()) > 0
    trips = report['background']['squeezenet1.1']['2']['round_trip_ns']
    assert len(trips) == 2 and min(trips) > 0
    assert report['background']['squeezenet1.1']['1']['round_trip_ns'] is None
    # Warnings about other processes on the machine are about timing, not checked here.
    assert [w for w in report['warnings'] if 'other processes' not in w] == []

    text = benchmarks.read_text()
    assert text.startswith('# Benchmarks\n\nintro\n\n## Memory\n\nkept as it is\n')
    assert text.count('## CPU performance') == 1
    assert '## CPU performance on a test machine' in text
    assert 'GFLOP/s' in text
    batch_row = next(line for line in text.splitlines()
                     if line.startswith('| squeezenet1.1 | 3 |'))
    for value in [c.strip() for c in batch_row.strip('|').split('|')][2:5]:
        assert float(value) > 0  # images per second, each runtime
    assert 'Command: `python3 scripts/bench.py --models squeezenet1.1' in text
    row = next(line for line in text.splitlines() if line.startswith('| squeezenet1.1 |'))
    cells = [c.strip() for c in row.strip('|').split('|')]
    for value in cells[1:4]:  # mxlite, MXNet, ORT medians
        float(value)
    assert cells[4].endswith('(MXNet)') or cells[4].endswith('(ORT)')

    # The section rendered again from the saved results, with a note written
    # after the run: the same table, the note above it.
    rerender = subprocess.run([sys.executable, BENCH, '--from-json', str(results_json),
                               '--note', 'Note (by hand): checked afterwards.',
                               '--benchmarks-file', str(benchmarks)],
                              capture_output=True, text=True, timeout=120)
    assert rerender.returncode == 0, rerender.stderr[-3000:]
    again = benchmarks.read_text()
    assert again.count('## CPU performance') == 1
    assert 'Note (by hand): checked afterwards.' in again
    assert row in again.splitlines()


def test_core_latency_probe_builds_warning_free_and_reports(tmp_path):
    source = os.path.join(ROOT, 'scripts', 'bench', 'core_latency.cc')
    for compiler in ('g++', 'clang++'):
        exe = str(tmp_path / ('core_latency_' + compiler.replace('+', 'x')))
        build = subprocess.run([compiler, '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror',
                                source, '-o', exe, '-lpthread'], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        run = subprocess.run([exe, '0.05'], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report['cpus'] == [0, 1] and report['round_trip_ns'] > 0


def test_nchwc_probe_builds_warning_free_and_agrees_with_the_gemm(tmp_path):
    # The probe's NCHW16c kernel is AVX-512 only; the machines of this
    # project have it.
    with open('/proc/cpuinfo') as cpuinfo:
        if ' avx512f' not in cpuinfo.read():
            pytest.skip('no AVX-512 on this CPU')
    amalgamate(tmp_path)
    exe = str(tmp_path / 'nchwc_probe')
    source = os.path.join(ROOT, 'scripts', 'bench', 'nchwc_probe.cc')
    build = subprocess.run(['g++', '-std=c++17', '-O1', '-Wall', '-Wextra', '-Werror',
                            '-I', str(tmp_path), source, '-o', exe, '-lpthread'],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    # 64 filters, 48 channels, 25 pixels (a partial group of 6), blocks of 32.
    run = subprocess.run([exe, '64', '48', '25', '32'], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    difference = float(run.stdout.rsplit('largest difference ', 1)[1])
    assert difference <= 1e-4, run.stdout
    bad = subprocess.run([exe, '60', '48', '25'], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and 'multiple of 64' in bad.stderr


def test_placement_check_prints_windows_and_both_summaries():
    script = os.path.join(ROOT, 'scripts', 'bench', 'placement_check.py')
    run = subprocess.run([sys.executable, script, '--model', 'squeezenet1.1', '--seconds', '1.5',
                          '--window-s', '0.3', '--probe-s', '0.05', '--zoo', ZOO_DIR,
                          '--library', library_under_test()],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    windows = [line for line in lines if 'squeezenet1.1 at 2 threads' in line]
    assert len(windows) >= 2 and all('round trip' in line for line in windows)
    summaries = [line for line in lines if line.startswith(('near', 'far'))]
    assert [line.split()[0] for line in summaries] == ['near', 'far']
    # Every window is counted on one side or the other.
    counted = sum(int(line.split(': ')[1].split()[0]) for line in summaries)
    assert counted == len(windows)


def synthetic_report():
    """A report with the structure bench.py's main() writes (--results-json):
    results[model][str(threads)][runtime] with median_ms, and a failed runtime."""
    def result(median):
        return {'error': None, 'times': [median / 1000.0] * 3, 'warmup': [], 'samples': 3,
                'median_ms': median}
    return {
        'command': 'python3 scripts/bench.py --models a b', 'date': '2026-11-27 01:00 UTC',
        'machine': 'Test CPU (family 1, model 2), 2 cores, avx2 fma; Linux-test',
        'commit': 'abc1234', 'mxlite_lib': 'build/libmxlite.so', 'versions': {},
        'threads': [1, 2], 'runtimes': ['mxlite', 'baseline', 'mxnet', 'ort'],
        'models': ['model_a', 'model_b'],
        'args': {'warmup': 1, 'note': None, 'nice': 0, 'turn': 5},
        'results': {
            'model_a': {'1': {'mxlite': result(8.0), 'baseline': result(1.0),
                              'mxnet': result(10.0), 'ort': result(20.0)},
                        '2': {'mxlite': result(6.0), 'baseline': result(1.0),
                              'mxnet': result(5.0),
                              'ort': {'error': 'failed', 'times': [], 'warmup': []}}},
            'model_b': {'1': {'mxlite': {'error': 'failed', 'times': [], 'warmup': []},
                              'mxnet': result(3.0), 'ort': result(2.0)},
                        '2': {'mxlite': result(1.0), 'mxnet': result(3.0), 'ort': result(2.0)}}},
        'background': {}, 'warnings': [], 'load_warnings': [], 'results_json': 'x.json',
        'rounds_text': '3', 'elapsed_s': 1.0}


def plot_python():
    """An interpreter with matplotlib: this one, else build/venv-plot (created
    here as scripts/plotting.py would); None when it cannot be installed."""
    for python in (sys.executable, os.path.join(ROOT, 'build', 'venv-plot', 'bin', 'python')):
        if os.path.exists(python) and subprocess.run(
                [python, '-c', 'import matplotlib, numpy'], capture_output=True).returncode == 0:
            return python
    venv = os.path.join(ROOT, 'build', 'venv-plot')
    python = os.path.join(venv, 'bin', 'python')
    made = (os.path.exists(python) or subprocess.run(
        [sys.executable, '-m', 'venv', venv], capture_output=True).returncode == 0)
    if made and subprocess.run([python, '-m', 'pip', 'install', '-q', 'matplotlib', 'numpy'],
                               capture_output=True, timeout=600).returncode == 0:
        return python
    return None


def test_plot_bench_reads_the_ratios_bench_py_reports():
    sys.path.insert(0, os.path.join(ROOT, 'scripts'))
    try:
        spec = importlib.util.spec_from_file_location(
            'mxlite_plot_bench', os.path.join(ROOT, 'scripts', 'plot_bench.py'))
        plot_bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plot_bench)
    finally:
        sys.path.remove(os.path.join(ROOT, 'scripts'))
    # The baseline library is not a peer; a failed runtime has no median.
    assert plot_bench.ratios(synthetic_report()) == {
        1: [('model_a', 0.8, 'mxnet')],
        2: [('model_a', 1.2, 'mxnet'), ('model_b', 0.5, 'ort')]}
    assert plot_bench.cpu_name(synthetic_report()['machine']) == 'Test CPU (family 1, model 2)'


def test_plot_bench_writes_the_figure(tmp_path):
    import pytest
    python = plot_python()
    if python is None:
        pytest.skip('matplotlib cannot be installed here')
    report = tmp_path / 'results.json'
    report.write_text(json.dumps(synthetic_report()))
    png = tmp_path / 'performance.png'
    run = subprocess.run([python, os.path.join(ROOT, 'scripts', 'plot_bench.py'),
                          '--json', str(report), '--png', str(png)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
