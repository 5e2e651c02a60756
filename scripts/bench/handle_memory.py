"""Resident memory of a predictor and of each further MXPredCreateMultiThread handle.

    python scripts/bench/handle_memory.py PREFIX [--shape 1,3,224,224] [--handles 4]
                                                [--library PATH] [--options k=v,...]

In a fresh child process: the RSS (from /proc/self/statm) after loading the
library and reading the checkpoint's files (the baseline), after one
predictor (MXLitePredCreateWithOptions, one handle) and one forward pass,
and after each further handle of a MultiThread create with N handles, each
run once. Reports MiB above the baseline, and the params file size for
scale (issue 32's goal: an extra handle costs at most its activation arena
plus 0.25x the params file). Linux only. Results go to BENCHMARKS.md,
"Memory per predictor handle", with the CPU and commit.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tests'))


def rss_mib():
    with open('/proc/self/statm', encoding='ascii') as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf('SC_PAGE_SIZE') / 2**20


def child(args):
    import numpy as np
    from capi import API, load_library
    api = API(load_library(args.library))
    with open(args.prefix + '-symbol.json', encoding='utf-8') as f:
        symbol = f.read()
    with open(args.prefix + '-0000.params', 'rb') as f:
        params = f.read()
    shape = tuple(int(d) for d in args.shape.split(','))
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    options = dict(item.split('=', 1) for item in args.options.split(',') if item)
    baseline = rss_mib()
    report = {'params_mib': len(params) / 2**20, 'options': options}

    def run(handle):
        api.set_input(handle, 'data', data)
        api.forward(handle)
        api.output(handle, 0)

    [single] = api.create_with_options(symbol, params, {'data': shape}, options)
    run(single)
    report['one_predictor_mib'] = rss_mib() - baseline
    api.free(single)
    start = rss_mib()
    handles = api.create_with_options(symbol, params, {'data': shape}, options,
                                      num_handles=args.handles)
    for handle in handles:
        run(handle)
    report['handles'] = args.handles
    report['per_extra_handle_mib'] = (rss_mib() - start - report['one_predictor_mib']) / max(
        1, args.handles - 1)
    for handle in handles:
        api.free(handle)
    print(json.dumps(report))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('prefix')
    parser.add_argument('--shape', default='1,3,224,224')
    parser.add_argument('--handles', type=int, default=4)
    parser.add_argument('--library')
    parser.add_argument('--options', default='')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    command = [sys.executable, os.path.abspath(__file__), '--child', args.prefix, '--shape',
               args.shape, '--handles', str(args.handles), '--options', args.options]
    if args.library:
        command += ['--library', args.library]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        print(result.stderr, file=sys.stderr)
        return result.returncode
    report = json.loads(result.stdout)
    print(f"params file {report['params_mib']:.1f} MiB; one predictor "
          f"{report['one_predictor_mib']:.1f} MiB above the baseline; each further handle "
          f"of {report['handles']} {report['per_extra_handle_mib']:.1f} MiB "
          f"(options: {report['options'] or 'defaults'})")
    return 0


if __name__ == '__main__':
    sys.exit(main())
