#!/usr/bin/env python3
"""How close the CPU goal can come: each zoo model's arithmetic at the FMA peak.

    python3 scripts/arith_bound.py                 # writes its section of BENCHMARKS.md
    python3 scripts/arith_bound.py --no-write      # prints it

The goal of issue 6 is mxlite at <= 0.85x the faster peer's latency. A
lower bound on any runtime's time is the arithmetic it cannot avoid, run at
the processor's peak. For the layers that are plain matrix products (1x1
convolutions and FullyConnected layers) only Strassen-type algorithms need
fewer multiplications: one level of Strassen's does a product in 7/8 of
them (two levels in 49/64), paying with extra additions and passes over
memory; Winograd applies only to 3x3 stride-1 layers, so those are counted
apart. This script

* counts the multiply-accumulates of every Convolution and FullyConnected
  node from the checkpoint's shapes (MXNet's shape inference in the oracle
  venv), split into 1x1 + FullyConnected, 3x3 stride-1, depthwise, and
  other convolutions (stems, 1x7, strided 3x3);
* measures the FMA peak of one core (scripts/bench/fma_peak.cc: twelve
  independent FMA chains in the widest vectors the CPU has);
* reads the peers' one-thread medians from the last bench run
  (build/bench/results.json, written by scripts/bench.py);

and reports, per model, the time the 1x1 + FullyConnected layers alone
take at the peak against 0.85x the faster peer, and the same share with one
Strassen level (7/8 of it: an optimistic bound, with its additions free).
Where that share is near or above 100%, the goal is out of reach for
float32 on this machine, whatever the kernels do: the peer already runs
those products near the peak.
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import bench  # noqa: E402  (shared helpers: section writing, machine description)

SECTION = 'Arithmetic bound'
GOAL = 0.85
# One level of Strassen's algorithm: 7 half-size products where the plain one has 8.
STRASSEN_LEVEL = 7 / 8

# Runs in the oracle venv: MACs per class for each model of the zoo.
COUNT_SNIPPET = r'''
import ast, json, sys
import mxnet as mx
zoo, models = sys.argv[1], sys.argv[2].split(",")
cases = json.load(open(zoo + "/manifest.json"))["cases"]
out = {}
for name in models:
    shape = tuple(cases[name]["inputs"]["data"])
    sym = mx.sym.load("%s/%s-symbol.json" % (zoo, name))
    internals = sym.get_internals()
    arg_shapes, out_shapes, _ = internals.infer_shape(data=shape)
    shapes = dict(zip(internals.list_outputs(), out_shapes))
    shapes.update(zip(internals.list_arguments(), arg_shapes))
    counts = {"gemm": 0, "winograd": 0, "depthwise": 0, "other": 0}
    nodes = json.loads(sym.tojson())["nodes"]
    for node in nodes:
        op, attrs = node["op"], node.get("attrs", {})
        if op not in ("Convolution", "FullyConnected"):
            continue
        weight = shapes[nodes[node["inputs"][1][0]]["name"]]
        output = shapes[node["name"] + "_output"]
        per_output = 1
        for d in weight[1:]:
            per_output *= d
        outputs = 1
        for d in output:
            outputs *= d
        macs = outputs * per_output
        if op == "FullyConnected":
            counts["gemm"] += macs
            continue
        kernel = ast.literal_eval(attrs.get("kernel", "()"))
        stride = ast.literal_eval(attrs.get("stride", "()")) or (1,) * len(kernel)
        dilate = ast.literal_eval(attrs.get("dilate", "()")) or (1,) * len(kernel)
        group = int(attrs.get("num_group", "1"))
        if group > 1 and group == weight[0] and weight[1] == 1:
            counts["depthwise"] += macs
        elif all(k == 1 for k in kernel):
            counts["gemm"] += macs
        elif (tuple(kernel) == (3, 3) and all(s == 1 for s in stride)
              and all(d == 1 for d in dilate) and group == 1):
            counts["winograd"] += macs
        else:
            counts["other"] += macs
    out[name] = counts
print(json.dumps(out))
'''


def count_macs(oracle_python, zoo, models):
    result = subprocess.run([oracle_python, '-c', COUNT_SNIPPET, zoo, ','.join(models)],
                            capture_output=True, text=True,
                            env=dict(os.environ, MXNET_MKLDNN_ENABLED='0'))
    if result.returncode != 0:
        raise SystemExit('counting MACs failed:\n' + result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def best_peer_ms(results, model, threads='1'):
    runs = results.get('results', {}).get(model, {}).get(threads, {})
    peers = {name: r['median_ms'] for name, r in runs.items()
             if name != 'mxlite' and r and not r.get('error') and r.get('median_ms')}
    if not peers:
        return None, None
    name = min(peers, key=peers.get)
    return name, peers[name]


def render(counts, peak, results, command, section=SECTION):
    gflops = peak['gflops']
    lines = ['## ' + section, '',
             'Command: `%s` (%s, %s).' % (command, datetime.datetime.now(
                 datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
                 bench.machine_description()), '',
             'Multiply-accumulates per inference (batch 1) by layer class, and the time the '
             '1x1 convolutions and FullyConnected layers alone take at the FMA peak of one '
             'core, measured now with `scripts/bench/fma_peak.cc` (%s, %.0f GFLOP/s), '
             'against %.2fx the faster peer\'s one-thread median from the last '
             '`scripts/bench.py` run (%s). Only Strassen-type algorithms multiply matrices in '
             'fewer operations: one level of Strassen\'s takes 7/8 of the multiplications '
             '(two levels 49/64) and adds additions and passes over memory, which products '
             'of these sizes (a few hundred rows and columns) cannot hide; the last column '
             'is the share with one level at the peak and its additions free, an optimistic '
             'bound for that route. Where the shares near 100%% the goal cannot be met on '
             'this machine; 3x3 stride-1 layers are apart because Winograd '
             'F(4x4, 3x3) does them in up to 4x fewer multiplications (of the "other" '
             'layers, 1x7, 7x1 and 5x5 ones take Winograd along one axis, 1.75x and '
             '2.5x fewer).'
             % (peak['isa'], gflops, GOAL, results.get('date', 'no run')), '',
             '| model | MMACs 1x1 + FC | MMACs 3x3/1 | MMACs depthwise | MMACs other '
             '| 1x1 + FC at peak (ms) | faster peer 1t (ms) | goal (ms) | share of goal '
             '| share, one Strassen level |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for model, c in counts.items():
        at_peak = 2 * c['gemm'] / (gflops * 1e9) * 1e3
        peer, peer_ms = best_peer_ms(results, model)
        label = bench.LABELS.get(peer, peer) if peer else '-'
        goal = GOAL * peer_ms if peer_ms else None
        lines.append('| %s | %.0f | %.0f | %.0f | %.0f | %.2f | %s | %s | %s | %s |' % (
            model, c['gemm'] / 1e6, c['winograd'] / 1e6, c['depthwise'] / 1e6,
            c['other'] / 1e6, at_peak,
            '%.2f (%s)' % (peer_ms, label) if peer_ms else '-',
            '%.2f' % goal if goal else '-',
            '%.0f%%' % (100 * at_peak / goal) if goal else '-',
            '%.0f%%' % (100 * STRASSEN_LEVEL * at_peak / goal) if goal else '-'))
    return '\n'.join(lines) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default=','.join(bench.DEFAULT_MODELS))
    parser.add_argument('--zoo', default=os.path.join(bench.BUILD, 'fixtures', 'zoo'))
    parser.add_argument('--results', default=os.path.join(bench.WORK_DIR, 'results.json'))
    parser.add_argument('--oracle-python',
                        default=os.environ.get('MXLITE_ORACLE_PYTHON') or
                        os.path.join(bench.BUILD, 'venv-mxnet', 'bin', 'python'))
    parser.add_argument('--benchmarks-file', default=os.path.join(ROOT, 'BENCHMARKS.md'))
    parser.add_argument('--section', default=SECTION,
                        help='the BENCHMARKS.md section to write (default: "%(default)s"); one '
                             'per machine, as bench.py\'s')
    parser.add_argument('--no-write', action='store_true', help='print only')
    args = parser.parse_args(argv)
    models = args.models.split(',')
    counts = count_macs(args.oracle_python, args.zoo, models)
    peak = bench.fma_peak(os.path.join(bench.WORK_DIR, 'tools'))
    if peak.get('isa') is None:
        raise SystemExit('this CPU has neither AVX-512 nor AVX2+FMA; no peak to report')
    results = {}
    if os.path.exists(args.results):
        with open(args.results, encoding='utf-8') as f:
            results = json.load(f)
    given = sys.argv[1:] if argv is None else argv
    command = 'python3 scripts/arith_bound.py' + ''.join(' ' + shlex.quote(a) for a in given)
    body = render(counts, peak, results, command.strip(), args.section)
    print(body)
    if not args.no_write:
        text = open(args.benchmarks_file, encoding='utf-8').read()
        with open(args.benchmarks_file + '.tmp', 'w', encoding='utf-8') as f:
            f.write(bench.replace_section(text, args.section, body))
        os.replace(args.benchmarks_file + '.tmp', args.benchmarks_file)
        print('wrote the "%s" section of %s' % (args.section, args.benchmarks_file))


if __name__ == '__main__':
    main()
