#!/usr/bin/env python3
"""CPU latency of mxlite against MXNet 1.9.1 and ONNX Runtime, in one run.

    python3 scripts/bench.py                      # everything; writes BENCHMARKS.md
    python3 scripts/bench.py --models resnet18_v1 --threads 1 --no-write
    python3 scripts/bench.py --quick              # a rough look in about a minute
    python3 scripts/bench.py --baseline-commit main --runtimes mxlite --no-write
                                                  # this change against main, in one run
    python3 scripts/bench.py --batch 1,8,64 --batch-models resnet18_v1,mobilenetv2_1.0 \
        --section "CPU performance on Intel Xeon"  # latency and throughput, one machine's table
    python3 scripts/bench.py --isa avx2 --section "CPU performance on Intel Xeon, AVX2"
                                                  # the AVX2 paths on an AVX-512 machine

For every zoo model (batch 1, float32, the checkpoints in build/fixtures/zoo
that scripts/make_fixtures.py writes) and every thread count it measures

* mxlite through its C predict API (build/libmxlite.so, MXLITE_NUM_THREADS);
* MXNet 1.9.1 through the same C predict API of the pip wheel's libmxnet.so,
  as shipped: oneDNN and its subgraph fusion on, NaiveEngine so that the
  calling thread runs the operators, OMP_NUM_THREADS threads;
* ONNX Runtime on models exported with mx.onnx.export_model (see
  scripts/bench/oracle_tools.py), intra-op threads = the thread count, one
  inter-op thread, all graph optimizations, sequential execution;

and, for the dot case (a 2048x2048 by 2048x2048 product, FullyConnected with
no bias), mxlite, MXNet and numpy.matmul. With --batch 1,8,64 the models of
--batch-models are measured again at each larger batch (the fixture's image
repeated; ONNX Runtime gets a model exported at that batch) and reported as
images per second. Each run also records the machine: the CPU model and ISA,
the FMA peak of one core (scripts/bench/fma_peak.cc) and, beside every
multi-thread row, where the host placed the CPUs (the cache-line round trip
of scripts/bench/core_latency.cc before and after the row). BENCHMARKS.md
keeps one section per machine: --section names it. --isa avx2 caps mxlite
(MXLITE_ISA) and MXNet's oneDNN (DNNL_MAX_CPU_ISA) at AVX2, for the AVX2-only
machines the goal covers; ONNX Runtime has no such setting, so it keeps the
machine's widest kernels and its ratios are not like for like.

A baseline: --baseline-library PATH (a libmxlite.so) or --baseline-commit
COMMIT (built like --commit, from a clean git archive of that commit under
build/bench/builds) adds "mxlite (baseline)" as one more runtime, right after
mxlite, in its own worker taking turns with the others, and a column
"mxlite / baseline" (its median over the baseline's; below 1 is faster) to the
latency, CPU-time and dot tables; the peers' ratio and the goal leave it out.
This is how a change shows that performance is unchanged: both libraries
measured in one run, on the same machine and load. Without these options the
output is as before.

How it measures. Each runtime lives in its own worker process
(scripts/bench/worker.py) with its thread settings in its environment, driven
over a pipe. A fresh set of workers serves each (model, thread count): so
every worker's peak RSS (ru_maxrss) belongs to one model, and nothing one
model leaves behind (arenas, caches, pools) affects the next. The workers load
one after the other (load time = build the predictor or session from the
files), warm up, check their output against MXNet's from the fixture, and then
run alternately, --turn inferences each (default 5), in an order that rotates
every round, so that clock drift and other load on the machine hit all
runtimes alike; every other round runs in the reverse order, so that each
runtime follows each other one equally often. Thread pools spin for a while
after their work (ONNX Runtime's, OpenMP's and mxlite's all do, mxlite's 100 ms
by default), and the next runtime's turn shares the cores with those spinners:
it times the contention rather than itself. So the pause after each turn is
longer than that at more than one thread (150 ms; 10 ms at one thread, where
no pool has workers). With 10 ms and the order only rotated (which keeps each
runtime behind the same one), the same library measured twice in one run of
mobilenetv2_1.0 at two threads took 4.27 ms in one slot and 6.15 ms in the one
behind it; with the 150 ms pause, 3.99 and 3.98 (Xeon model 167). Turns of
several inferences (--turn) still matter for the spin inside a runtime's own
turn (resnet18_v1 at 2 threads: 13 ms in turns of 5, 26 ms in turns of 1). The
number of rounds is chosen from the warm-up times to spend about --budget-s
seconds per model and thread count, within
[--min-iters, --max-iters]; --iters fixes it. The table reports medians.

On a shared machine (other builds, other test runs) a measurement can time
the machine instead of the runtime. So the harness waits a while for idle CPUs
before each model, drops inferences during which the scheduler preempted the
worker (its involuntary context switches, from getrusage) and runs more rounds
to replace them, and reports how many cores other processes kept busy
(/proc/stat minus the workers' own CPU time) beside every row.

Environments (created on first use): the oracle venv (build/venv-mxnet from
scripts/setup_oracle.sh, or MXLITE_ORACLE_PYTHON) gets onnx==1.14.1 for the
export; build/venv-bench (or MXLITE_BENCH_PYTHON) holds numpy and onnxruntime
for the mxlite, ONNX Runtime and numpy workers. Exported models and the dot
case are cached under build/bench, raw results go to build/bench/results.json.
"""

import argparse
import datetime
import json
import os
import shlex
import sys
import time

# The benchmark's modules live in scripts/bench/ (next to its workers); their
# names are re-exported here for scripts/arith_bound.py and the tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bench'))

from bench_setup import *  # noqa: E402,F401,F403
from bench_measure import *  # noqa: E402,F401,F403
from bench_report import *  # noqa: E402,F401,F403


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--models', default=','.join(DEFAULT_MODELS),
                        help='comma-separated zoo models (default: %(default)s)')
    parser.add_argument('--threads', default='1,2', help='thread counts (default: %(default)s)')
    parser.add_argument('--batch', default='1',
                        help='batch sizes (default: %(default)s); batch 1 gives the latency '
                             'tables, larger ones a throughput table')
    parser.add_argument('--batch-models', metavar='MODELS',
                        help='the models measured at the batches above 1 (default: --models)')
    parser.add_argument('--section', default=SECTION,
                        help='the BENCHMARKS.md section to write (default: "%(default)s"); one '
                             'per machine, e.g. "CPU performance on Intel Xeon"')
    parser.add_argument('--runtimes', default=','.join(RUNTIMES),
                        help='subset of %s, mxlite first (default: all)' % ','.join(RUNTIMES))
    parser.add_argument('--iters', type=int, default=0,
                        help='measured rounds per model and thread count (default: from '
                             '--budget-s)')
    parser.add_argument('--budget-s', type=float, default=6.0,
                        help='seconds of measuring per model and thread count (default: '
                             '%(default)s)')
    parser.add_argument('--min-iters', type=int, default=9)
    parser.add_argument('--max-iters', type=int, default=100)
    parser.add_argument('--warmup', type=int, default=3, help='warm-up rounds (default: 3)')
    parser.add_argument('--turn', type=int, default=5,
                        help='consecutive inferences of one runtime per turn (default: 5; see '
                             'the module docstring for why not 1)')
    parser.add_argument('--gap-ms', type=float, default=None,
                        help='pause after each turn (default: %g at one thread, %g above: '
                             'longer than the thread pools spin after their work, see the '
                             'module docstring)' % (SINGLE_THREAD_GAP_MS, MULTI_THREAD_GAP_MS))
    parser.add_argument('--quiet-wait-s', type=float, default=10.0,
                        help='per model and thread count, wait up to this long for other '
                             'processes to leave the CPUs idle before measuring, and measure '
                             'up to this much longer to replace inferences that other processes '
                             'preempted (default: %(default)s; 0: never)')
    parser.add_argument('--nice', type=int, default=0,
                        help='niceness of the workers; negative (root only) favours them over '
                             'other processes on a shared machine (default: 0)')
    parser.add_argument('--isa', choices=['avx2'], default=None,
                        help='cap the instruction set: mxlite through MXLITE_ISA, MXNet\'s '
                             'oneDNN through DNNL_MAX_CPU_ISA; ONNX Runtime has no such '
                             'setting and runs with all the machine has (default: no cap)')
    parser.add_argument('--dot', type=int, default=2048,
                        help='size of the dot case; 0 leaves it out (default: %(default)s)')
    parser.add_argument('--quick', action='store_true',
                        help='a rough look: 1 warm-up round, about 1 s per model')
    parser.add_argument('--library', help='libmxlite.so to measure (default: MXLITE_LIBRARY, '
                                          'else build/libmxlite.so)')
    parser.add_argument('--commit', help='measure a library built from this commit (a clean '
                                         'git archive, built under build/bench/builds) instead')
    parser.add_argument('--baseline-library', metavar='PATH',
                        help='also measure this libmxlite.so, as "mxlite (baseline)" with a '
                             '"mxlite / baseline" column')
    parser.add_argument('--baseline-commit', metavar='COMMIT',
                        help='the same with a library built from this commit (a clean git '
                             'archive, built under build/bench/builds)')
    parser.add_argument('--zoo', default=os.environ.get(
        'MXLITE_ZOO_FIXTURES', os.path.join(BUILD, 'fixtures', 'zoo')))
    parser.add_argument('--oracle-python', default=os.environ.get(
        'MXLITE_ORACLE_PYTHON', os.path.join(BUILD, 'venv-mxnet', 'bin', 'python')))
    parser.add_argument('--bench-python', default=os.environ.get(
        'MXLITE_BENCH_PYTHON', os.path.join(BUILD, 'venv-bench', 'bin', 'python')))
    parser.add_argument('--benchmarks-file', default=os.path.join(ROOT, 'BENCHMARKS.md'))
    parser.add_argument('--no-write', action='store_true', help='print only')
    parser.add_argument('--note', default='', help='a paragraph to put above the table')
    parser.add_argument('--results-json', default=os.path.join(WORK_DIR, 'results.json'))
    parser.add_argument('--from-json', metavar='RESULTS_JSON',
                        help='measure nothing: render (and write) the section again from the '
                             'results of an earlier run')
    args = parser.parse_args(argv)
    if args.quick:
        args.warmup, args.budget_s, args.min_iters, args.max_iters = 1, 1.0, 3, 20
    args.model_list = [m for m in args.models.split(',') if m]
    args.thread_list = [int(t) for t in args.threads.split(',') if t]
    try:
        args.batch_list = [int(b) for b in args.batch.split(',') if b]
    except ValueError:
        parser.error('--batch: positive integers')
    if not args.batch_list or min(args.batch_list) < 1:
        parser.error('--batch: positive integers')
    args.batch_model_list = ([m for m in args.batch_models.split(',') if m]
                             if args.batch_models else list(args.model_list))
    unknown_models = [m for m in args.batch_model_list if m not in args.model_list]
    if unknown_models:
        parser.error('--batch-models: %s not in --models' % ','.join(unknown_models))
    args.runtime_list = [r for r in args.runtimes.split(',') if r]
    unknown = [r for r in args.runtime_list if r not in RUNTIMES]
    if unknown or not args.runtime_list or args.runtime_list[0] != 'mxlite':
        parser.error('--runtimes: a list starting with mxlite from %s' % ','.join(RUNTIMES))
    if not args.thread_list or min(args.thread_list) < 1:
        parser.error('--threads: positive integers')
    if args.baseline_library and args.baseline_commit:
        parser.error('--baseline-library and --baseline-commit exclude each other')
    return args


def command_line(argv):
    return ' '.join(['python3', 'scripts/bench.py'] + [shlex.quote(a) for a in argv])


def rerender(args):
    with open(args.from_json, encoding='utf-8') as f:
        report = json.load(f)
    if args.note:  # a note written after the run replaces the run's own
        report.setdefault('args', {})['note'] = args.note
    if args.section != SECTION:  # a section named now replaces the run's own
        report['section'] = args.section
    body = render(report)
    print(body)
    if not args.no_write:
        write_benchmarks(args.benchmarks_file, body, report.get('section', SECTION))
        print('wrote the "%s" section of %s' % (report.get('section', SECTION),
                                                args.benchmarks_file))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.from_json:
        return rerender(args)
    started = time.time()
    need_ort = 'ort' in args.runtime_list
    os.makedirs(WORK_DIR, exist_ok=True)
    args.library_given = args.library is not None
    args.commit_built = None
    if args.commit:
        if args.library:
            raise BenchError('--commit and --library exclude each other')
        args.library, args.commit_built = build_library_at(args.commit)
    versions = {}
    versions.update(ensure_oracle(args, need_onnx=need_ort))
    versions.update(ensure_bench_python(args, need_ort))
    setup = {'oracle_python': args.oracle_python, 'bench_python': args.bench_python,
             'mxlite_lib': pin_mxlite_library(args), 'niceness': args.nice,
             'isa': args.isa}
    setup['baseline_lib'] = pin_baseline_library(args)
    if setup['baseline_lib']:  # one more runtime, right after mxlite
        args.runtime_list.insert(1, 'baseline')
    if 'mxnet' in args.runtime_list or args.dot:
        setup['mxnet_lib'] = mxnet_library(args.oracle_python)
    cases = ensure_zoo(args, args.model_list) if args.model_list else {}
    if need_ort and cases and 1 in args.batch_list:
        ensure_onnx_models(args, cases)
    batched = {}  # batch -> {model: case}
    for batch in [b for b in args.batch_list if b != 1]:
        batched[batch] = batch_cases({m: cases[m] for m in args.batch_model_list}, batch)
        if need_ort:
            ensure_onnx_models(args, batched[batch], batch)
    tools_dir = os.path.join(WORK_DIR, 'tools')
    if max(args.thread_list) > 1:
        setup['round_trip_probe'] = build_tool(ROUND_TRIP_SOURCE, tools_dir)
    dot_case = ensure_dot_case(args) if args.dot else None

    plan = {'warmup': args.warmup, 'iters': args.iters, 'budget_s': args.budget_s,
            'min_iters': args.min_iters, 'max_iters': args.max_iters,
            'gap_ms': args.gap_ms, 'quiet_wait_s': args.quiet_wait_s,
            'turn': args.turn}
    report = {'command': command_line(argv), 'date': datetime.datetime.now(
        datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'), 'machine': machine_description(),
        'commit': git_description(args), 'mxlite_lib': setup['mxlite_lib'], 'versions': versions,
        'threads': args.thread_list, 'runtimes': args.runtime_list, 'models': args.model_list,
        'args': {'warmup': args.warmup, 'note': args.note, 'nice': args.nice,
                 'turn': args.turn, 'gap_ms': args.gap_ms, 'isa': args.isa},
        'results': {}, 'background': {}, 'warnings': [],
        'load_warnings': [], 'results_json': args.results_json, 'section': args.section,
        'batches': args.batch_list, 'batch_models': args.batch_model_list,
        'batch_results': {}, 'batch_background': {},
        'fma_peaks': fma_peaks(tools_dir)}
    if setup['baseline_lib']:
        report['baseline_lib'] = setup['baseline_lib']
    rounds_seen = []
    runs = [(model, 1, cases[model]) for model in args.model_list if 1 in args.batch_list]
    runs += [(model, batch, batched[batch][model]) for batch in sorted(batched)
             for model in args.batch_model_list]
    for model, batch, case in runs:
        label = model if batch == 1 else '%s at batch %d' % (model, batch)
        into, load_into = (report['results'].setdefault(model, {}),
                           report['background'].setdefault(model, {}))
        if batch != 1:
            into = report['batch_results'].setdefault(model, {}).setdefault(str(batch), {})
            load_into = report['batch_background'].setdefault(model, {}).setdefault(
                str(batch), {})
        for threads in args.thread_list:
            print('== %s, %d thread%s' % (label, threads, '' if threads == 1 else 's'),
                  flush=True)
            results, load = measure_case(case, args.runtime_list, threads, plan, setup)
            into[str(threads)] = results
            load_into[str(threads)] = load
            report['load_warnings'] += load_warnings(label, threads, results, load)
            report['warnings'] += output_warnings(case, results)
            report['warnings'] += ['%s on %s at %d thread%s failed: %s' % (
                LABELS[r], label, threads, '' if threads == 1 else 's', res['error'])
                for r, res in results.items() if res['error']]
            rounds_seen += [len(res['times']) for res in results.values() if res['times']]
            print('   ' + '  '.join('%s %s ms' % (LABELS[r], cell(res))
                                    for r, res in results.items()), flush=True)
    if dot_case:
        dot_runtimes = ['mxlite'] + [r for r in ('baseline', 'mxnet') if r in args.runtime_list]
        dot_runtimes += ['numpy']
        if 'avx512f' in cpu_flags():
            dot_runtimes.append('numpy_avx512')
        report['dot'] = {'name': dot_case['name'], 'runtimes': dot_runtimes, 'results': {},
                         'shape': '%d×%d by %d×%d' % (tuple(dot_case['input_shape']) * 2)}
        for threads in args.thread_list:
            print('== %s, %d thread%s' % (dot_case['name'], threads, '' if threads == 1 else 's'),
                  flush=True)
            results, load = measure_case(dot_case, dot_runtimes, threads, plan, setup)
            report['dot']['results'][str(threads)] = results
            report['background'].setdefault(dot_case['name'], {})[str(threads)] = load
            report['load_warnings'] += load_warnings(dot_case['name'], threads, results, load)
            report['warnings'] += output_warnings(dot_case, results)
            report['warnings'] += ['%s on %s at %d threads failed: %s' % (
                LABELS[r], dot_case['name'], threads, res['error'])
                for r, res in results.items() if res['error']]
            rounds_seen += [len(res['times']) for res in results.values() if res['times']]
            print('   ' + '  '.join('%s %s ms' % (LABELS[r], cell(res))
                                    for r, res in results.items()), flush=True)
    low, high = (min(rounds_seen), max(rounds_seen)) if rounds_seen else (0, 0)
    report['rounds_text'] = str(low) if low == high else '%d–%d' % (low, high)
    report['elapsed_s'] = time.time() - started
    body = render(report)
    print()
    print(body)
    print('(%.0f s, %d warnings, %d rows measured on a busy machine)' % (
        report['elapsed_s'], len(report['warnings']), len(report['load_warnings'])))
    os.makedirs(os.path.dirname(os.path.abspath(args.results_json)), exist_ok=True)
    with open(args.results_json, 'w', encoding='utf-8') as f:
        json.dump(report, f, indent=1)
    if not args.no_write:
        write_benchmarks(args.benchmarks_file, body, args.section)
        print('wrote the "%s" section of %s' % (args.section, args.benchmarks_file))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except BenchError as error:
        print('bench.py: %s' % error, file=sys.stderr)
        sys.exit(1)
