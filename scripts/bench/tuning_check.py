#!/usr/bin/env python3
"""What conv_tuning changes on this machine: mxlite with the algorithm table's
choices against mxlite with timed choices, in one run.

    python3 scripts/bench/tuning_check.py                       # the zoo, 1 and 2 threads
    python3 scripts/bench/tuning_check.py --models resnet18_v1 --threads 1

Per zoo model and thread count, two benchmark workers (scripts/bench/worker.py,
the C predict API of build/libmxlite.so) load the model, one with
MXLITE_CONV_TUNING=1 and a fresh tuning cache, and take turns of --turn
inferences for --rounds rounds, the order alternating every round. It prints
the load times (the tuned one includes the timing of every layer), the median
latency and CPU time of each, their ratio, and how many layers the tuned
predictor gave each algorithm (from the cache file; layers with one
applicable algorithm are not timed and not listed), as a
markdown table for BENCHMARKS.md ("Convolution tuning"). Both outputs are
checked against MXNet's (the zoo fixture).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_setup import (DEFAULT_MODELS, ROOT, WORK_DIR, WORKER, fma_peaks,  # noqa: E402
                         ROUND_TRIP_SOURCE, build_tool, round_trip_ns)
from bench_measure import Worker  # noqa: E402
from bench_setup import BenchError  # noqa: E402
from bench_report import machine_description  # noqa: E402


def start(python, library, threads, extra_env, label, model):
    """A benchmark worker (bench_measure.Worker) over the C API of `library`."""
    env = dict(os.environ, MXLITE_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               **extra_env)
    env.pop('MXLITE_ISA', None)
    log_dir = os.path.join(WORK_DIR, 'logs')
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, 'tuning-%s-%s-%dt.log' % (model, label, threads))
    return Worker(label, [python, WORKER, 'capi', library], env, log_path)


def tuned_algorithms(cache_lines):
    """{algorithm: layers} of a tuning cache's lines."""
    counts = {}
    for line in cache_lines:
        name = line.split('\t')[-1]
        counts[name] = counts.get(name, 0) + 1
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default=','.join(DEFAULT_MODELS))
    parser.add_argument('--threads', default='1,2')
    parser.add_argument('--rounds', type=int, default=12)
    parser.add_argument('--turn', type=int, default=3)
    parser.add_argument('--library', default=os.path.join(ROOT, 'build', 'libmxlite.so'))
    parser.add_argument('--zoo', default=os.path.join(ROOT, 'build', 'fixtures', 'zoo'))
    parser.add_argument('--python', default=os.path.join(ROOT, 'build', 'venv-bench', 'bin',
                                                         'python'))
    args = parser.parse_args(argv)
    with open(os.path.join(args.zoo, 'manifest.json'), encoding='utf-8') as f:
        manifest = json.load(f)['cases']
    tools = os.path.join(ROOT, 'build', 'bench', 'tools')
    probe = build_tool(ROUND_TRIP_SOURCE, tools)
    print('machine: %s; FMA peaks %s; python %s' % (
        machine_description(), fma_peaks(tools), platform.python_version()), flush=True)
    rows = []
    for model in args.models.split(','):
        (name, shape), = manifest[model]['inputs'].items()
        case = {'name': model, 'symbol': os.path.join(args.zoo, model + '-symbol.json'),
                'params': os.path.join(args.zoo, model + '-0000.params'),
                'io': os.path.join(args.zoo, model + '-io.npz'), 'input_name': name,
                'input_shape': shape}
        for threads in [int(t) for t in args.threads.split(',')]:
            with tempfile.TemporaryDirectory() as scratch:
                cache = os.path.join(scratch, 'tuning.txt')
                workers = {
                    'table': start(args.python, args.library, threads, {}, 'table', model),
                    'tuned': start(args.python, args.library, threads,
                                   {'MXLITE_CONV_TUNING': '1', 'MXLITE_TUNING_CACHE': cache},
                                   'tuned', model),
                }
                load_s, errors = {}, {}
                for label, worker in workers.items():
                    load_s[label] = worker.request(cmd='load', model=case,
                                                   threads=threads)['load_s']
                    errors[label] = worker.request(cmd='check')['rel_err']
                times = {label: [] for label in workers}
                cpu = {label: [] for label in workers}
                trip = round_trip_ns(probe) if threads > 1 else None
                for index in range(args.rounds + 1):
                    order = list(workers) if index % 2 == 0 else list(workers)[::-1]
                    for label in order:
                        reply = workers[label].request(cmd='run', n=args.turn)
                        if index:  # the first round warms up
                            times[label] += reply['times']
                            cpu[label] += reply['cpu']
                for worker in workers.values():
                    worker.close()
                with open(cache, encoding='utf-8') as f:
                    chosen = tuned_algorithms(f.read().splitlines())
            median = {label: 1e3 * statistics.median(values) for label, values in times.items()}
            cpu_median = {label: 1e3 * statistics.median(v) for label, v in cpu.items()}
            rows.append('| %s | %d | %.0f | %.0f | %.2f | %.2f | %.3f | %.3f | %s | %s | %.1e |' % (
                model, threads, 1e3 * load_s['table'], 1e3 * load_s['tuned'], median['table'],
                median['tuned'], median['tuned'] / median['table'],
                cpu_median['tuned'] / cpu_median['table'],
                ', '.join('%s %d' % item for item in sorted(chosen.items())),
                '–' if trip is None else '%.0f' % trip,
                max(errors.values())))
            print(rows[-1], flush=True)
    print()
    print('| model | threads | load ms, table | load ms, tuned | ms, table | ms, tuned | '
          'tuned / table | CPU time tuned / table | tuned choices (layers) | round trip ns | '
          'largest error vs MXNet |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|')
    print('\n'.join(rows))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except BenchError as error:  # a worker failed: say which, without a traceback
        sys.exit('tuning_check.py: %s' % error)
