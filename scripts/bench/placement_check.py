#!/usr/bin/env python3
"""mxlite's two-thread latency beside the round trip between the two CPUs.

    python3 scripts/bench/placement_check.py                  # resnet18_v1, 60 s
    python3 scripts/bench/placement_check.py --model squeezenet1.1 --seconds 120

On a virtual machine the host may move the two virtual CPUs between core
complexes while a program runs; a cache line then takes about 300 ns to go
from one to the other and back instead of about 50 (scripts/bench/
core_latency.cc). This runs inferences of one zoo model through the C
predict API (build/libmxlite.so, MXLITE_NUM_THREADS=2 unless set) in windows
of --window-s seconds and probes the round trip after each window, printing
one line per window and, at the end, the median latency of the windows on
either side of --far-ns. The zoo checkpoints come from scripts/make_fixtures.py
(`make test` writes them to build/fixtures/zoo).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker import CPredictRuntime  # noqa: E402  (the benchmark's C predict API driver)
from bench_setup import (FAR_ROUND_TRIP_NS, ROUND_TRIP_SOURCE, build_tool,  # noqa: E402
                         round_trip_ns)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_predictor(library, zoo, model):
    """One zoo model behind the C predict API, through the benchmark worker's
    driver (worker.py's CPredictRuntime), with a random input."""
    with open(os.path.join(zoo, 'manifest.json')) as f:
        (name, shape), = json.load(f)['cases'][model]['inputs'].items()
    runtime = CPredictRuntime(library)
    runtime.load({'symbol': os.path.join(zoo, model + '-symbol.json'),
                  'params': os.path.join(zoo, model + '-0000.params'),
                  'input_name': name, 'input_shape': shape}, threads=None)
    runtime.prepare({name: np.random.default_rng(0).random(shape, dtype=np.float32)})
    return runtime


def timed_inference(runtime):
    """One inference as an application makes it (set input, forward, get
    output); its seconds."""
    start = time.perf_counter()
    runtime.infer()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--model', default='resnet18_v1')
    parser.add_argument('--seconds', type=float, default=60.0)
    parser.add_argument('--window-s', type=float, default=1.0)
    parser.add_argument('--probe-s', type=float, default=0.5)
    parser.add_argument('--far-ns', type=float, default=FAR_ROUND_TRIP_NS,
                        help='round trips above this count as a far placement')
    parser.add_argument('--library', default=os.path.join(ROOT, 'build', 'libmxlite.so'))
    parser.add_argument('--zoo', default=os.path.join(ROOT, 'build', 'fixtures', 'zoo'))
    args = parser.parse_args(argv)
    os.environ.setdefault('MXLITE_NUM_THREADS', '2')

    probe = build_tool(ROUND_TRIP_SOURCE, os.path.join(ROOT, 'build', 'bench', 'tools'))
    predictor = load_predictor(args.library, args.zoo, args.model)
    for _ in range(3):
        predictor.infer()
    windows = []  # (median ms, round trip ns)
    start = time.time()
    while time.time() - start < args.seconds:
        times = []
        window_start = time.time()
        while time.time() - window_start < args.window_s:
            times.append(timed_inference(predictor))
        latency_ms = 1e3 * statistics.median(times)
        trip = round_trip_ns(probe, args.probe_s)
        windows.append((latency_ms, trip))
        print('%6.1f s  %s at %s threads: median %7.2f ms over %4d  | round trip %4.0f ns' % (
            time.time() - start, args.model, os.environ['MXLITE_NUM_THREADS'], latency_ms,
            len(times), trip), flush=True)
    for label, selected in (('near', [w for w in windows if w[1] <= args.far_ns]),
                            ('far', [w for w in windows if w[1] > args.far_ns])):
        summary = '%s (round trip %s %.0f ns): %d windows' % (
            label, '<=' if label == 'near' else '>', args.far_ns, len(selected))
        if selected:
            summary += ', median of their medians %.2f ms' % statistics.median(
                w[0] for w in selected)
        print(summary)
    return 0


if __name__ == '__main__':
    sys.exit(main())
