#!/usr/bin/env python3
"""Builds and runs mxlite's libFuzzer harnesses (tests/fuzz/fuzz_*.cc).

Each harness is linked with the amalgamation compiled by clang with
AddressSanitizer, UndefinedBehaviorSanitizer (float-cast-overflow included,
nothing recoverable) and LeakSanitizer, and started on a fresh copy of its
seed corpus (the op fixtures' symbols and params, the format fixtures, and
structured inputs built from them) with tests/fuzz/mxlite.dict.

    run_fuzz.py [--seconds S] [--runs N] [--parallel] [--out DIR] [--jobs N]
                [--opt=-O2] [harness ...]

runs each harness for S seconds, or until N executions with S as a cap
(--parallel: the harnesses at once, a process each), prints, per harness,
the executions, the time and the corpus size, and exits non-zero
when a harness finds a crash, a sanitizer report, a leak, a timeout or an
out-of-memory. tests/test_fuzz_harnesses.py runs each for a few seconds;
docs/security.md records the last long campaign.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OPS = os.path.join(ROOT, 'tests', 'fixtures', 'ops')
FORMATS = os.path.join(ROOT, 'tests', 'fixtures', 'formats')
HARNESSES = ('fuzz_symbol', 'fuzz_params', 'fuzz_structured')
SANITIZE = 'address,undefined,float-cast-overflow'
# The symbol and params the symbol and params harnesses pair their input with.
COMPANION = 'composite_net'


def build(out, opt='-O2'):
    """Compiles the amalgamation once and links every harness; returns paths.
    -O0 compiles in a fraction of -O2's time: the suite's choice. Campaigns
    use -O2, which runs several times as many executions a second (the JSON
    parser dominates; docs/security.md has the rates)."""
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'),
                    '--out-dir', out], check=True, capture_output=True)
    flags = ['-std=c++17', opt, '-gline-tables-only', '-fno-omit-frame-pointer',
             f'-fno-sanitize-recover={SANITIZE}']
    # The instrumented amalgamation takes minutes to compile: kept under
    # build/test-objects by the hash of its source and flags.
    source = os.path.join(out, 'mxlite-all.cc')
    with open(source, 'rb') as f:
        key = hashlib.sha256(f.read() + ' '.join(flags).encode()).hexdigest()[:16]
    cache = os.path.join(ROOT, 'build', 'test-objects')
    os.makedirs(cache, exist_ok=True)
    obj = os.path.join(cache, f'mxlite-all-fuzz-{key}.o')
    if not os.path.exists(obj):
        partial = f'{obj}.{os.getpid()}.tmp'
        compile_ = subprocess.run(['clang++', *flags, f'-fsanitize=fuzzer-no-link,{SANITIZE}',
                                   '-Wno-pass-failed', '-c', source, '-o', partial],
                                  capture_output=True, text=True)
        if compile_.returncode != 0:
            raise RuntimeError(compile_.stderr[-4000:])
        os.replace(partial, obj)
    built = {}
    for name in HARNESSES:
        exe = os.path.join(out, name)
        link = subprocess.run(['clang++', *flags, f'-fsanitize=fuzzer,{SANITIZE}', '-I', out,
                               '-Wall', '-Wextra', '-Werror', os.path.join(HERE, name + '.cc'),
                               obj, '-o', exe, '-lpthread'], capture_output=True, text=True)
        if link.returncode != 0:
            raise RuntimeError(link.stderr[-4000:])
        built[name] = exe
    return built


def seed_corpus(name, directory):
    """A fresh corpus directory holding the harness's seeds."""
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    if name == 'fuzz_symbol':
        sources = sorted(glob.glob(os.path.join(OPS, '*-symbol.json')) +
                         glob.glob(os.path.join(FORMATS, '*-symbol.json')))
    elif name == 'fuzz_params':
        sources = sorted(glob.glob(os.path.join(OPS, '*.params')) +
                         [p for p in glob.glob(os.path.join(FORMATS, '*'))
                          if not p.endswith(('.json', '.npz'))])
    else:
        sources = []
    for index, path in enumerate(sources):
        shutil.copy(path, os.path.join(directory, f'seed{index:04d}'))
    if name == 'fuzz_structured':
        with open(os.path.join(OPS, 'manifest.json'), encoding='utf-8') as f:
            cases = json.load(f)['cases']
        count = 0
        for case, meta in sorted(cases.items()):
            shape = meta['inputs'].get('data')
            if shape is None or not 1 <= len(shape) <= 5 or meta.get('input_dtypes'):
                continue
            with open(os.path.join(OPS, case + '-symbol.json'), 'rb') as f:
                symbol = f.read()
            with open(os.path.join(OPS, case + '-0000.params'), 'rb') as f:
                params = f.read()
            if len(symbol) > 0xffff:
                continue
            dims = [(d - 1) % 32 for d in shape] + [0] * (5 - len(shape))
            header = bytes([len(shape) - 1] + dims) + struct.pack('<H', len(symbol))
            with open(os.path.join(directory, f'seed{count:04d}'), 'wb') as f:
                f.write(header + symbol + params)
            count += 1
    return directory


def run(name, exe, out, seconds, jobs=1, mutations=None, runs=None):
    """Runs one harness for `seconds`, or, with `mutations`, until the seed
    corpus and that many mutated inputs have run (seeded, so repeatable), or,
    with `runs`, until that many executions, each with `seconds` as a cap;
    returns (ok, executions, seeds, corpus size, log tail)."""
    corpus = seed_corpus(name, os.path.join(out, 'corpus-' + name))
    seeds = len(os.listdir(corpus))
    artifacts = os.path.join(out, 'artifacts-' + name) + os.sep
    os.makedirs(artifacts, exist_ok=True)
    env = {**os.environ, 'MXLITE_NUM_THREADS': '1',
           'MXLITE_FUZZ_SYMBOL': os.path.join(OPS, COMPANION + '-symbol.json'),
           'MXLITE_FUZZ_PARAMS': os.path.join(OPS, COMPANION + '-0000.params'),
           'ASAN_OPTIONS': 'detect_leaks=1:allocator_may_return_null=1',
           'UBSAN_OPTIONS': 'print_stacktrace=1'}
    args = [exe, corpus, f'-dict={os.path.join(HERE, "mxlite.dict")}',
            f'-max_total_time={seconds}', '-timeout=20', '-rss_limit_mb=3072',
            '-print_final_stats=1', f'-artifact_prefix={artifacts}']
    if mutations is not None:
        args += [f'-runs={seeds + mutations}', '-seed=1']
    elif runs is not None:
        args += [f'-runs={runs}']
    if jobs > 1:
        args += [f'-fork={jobs}', '-ignore_crashes=0']
    result = subprocess.run(args, env=env, capture_output=True, text=True,
                            timeout=seconds + 300)
    log = result.stderr
    executions = sum(int(n) for n in re.findall(r'stat::number_of_executed_units: (\d+)', log))
    if executions == 0:  # -fork mode reports the total in its last status line
        counts = re.findall(r'#(\d+): cov', log) or re.findall(r'#(\d+)\s', log)
        executions = int(counts[-1]) if counts else 0
    found = sorted(os.listdir(artifacts))
    ok = result.returncode == 0 and not found
    return ok, executions, seeds, len(os.listdir(corpus)), log[-6000:] + ''.join(
        f'\nartifact: {artifacts}{f}' for f in found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('harness', nargs='*', default=list(HARNESSES))
    parser.add_argument('--seconds', type=int, default=60)
    parser.add_argument('--out', default=os.path.join(ROOT, 'build', 'fuzz'))
    parser.add_argument('--runs', type=int, help='stop each harness after this many executions')
    parser.add_argument('--parallel', action='store_true', help='run the harnesses at once')
    parser.add_argument('--jobs', type=int, default=1)
    parser.add_argument('--opt', default='-O2', help='optimisation flag for the build')
    args = parser.parse_args()
    built = build(args.out, args.opt)

    def campaign(name):
        start = time.monotonic()
        result = run(name, built[name], args.out, args.seconds, args.jobs, runs=args.runs)
        return result, time.monotonic() - start

    with concurrent.futures.ThreadPoolExecutor(len(args.harness) if args.parallel else 1) as pool:
        results = list(pool.map(campaign, args.harness))
    failed = False
    for name, ((ok, executions, _, corpus, log), seconds) in zip(args.harness, results):
        print(f'{name}: {executions} executions in {seconds:.0f} s, corpus {corpus}, '
              f'{"clean" if ok else "FOUND SOMETHING"}', flush=True)
        if not ok:
            failed = True
            print(log)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
