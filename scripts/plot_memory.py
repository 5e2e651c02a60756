#!/usr/bin/env python3
"""Internal memory of the zoo models under each planning strategy: the figure
of MXNet's design overview ("in-place and co-share cut memory 2-4x"),
reproduced for mxlite, plus MXNet 1.9.1's own plan for the same graphs.

    python3 scripts/plot_memory.py [--zoo build/fixtures/zoo] [--png docs/memory.png]
                                   [--benchmarks BENCHMARKS.md] [--oracle-python PY]

For each zoo model at batch 1 and 64 it runs tests/cpp/plan_tool (built here
from the amalgamation) on the symbol file alone and reads the bytes of
operator outputs (weights and inputs excluded) with no sharing, in place
only, co-share only and both, and the lower bound (the most bytes live at
once). With the MXNet oracle interpreter (default build/venv-mxnet) it adds
MXNet's exact plan (tests/mxnet_memory_plan.py). It draws the PNG and
rewrites the "Memory planning" section of BENCHMARKS.md, keeping the notes
written by hand after its generated text.

matplotlib comes from build/venv-plot, which the script creates on first
use (python -m venv + pip install matplotlib) when the running interpreter
lacks it.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

from plotting import ensure_matplotlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bench'))
from bench_report import replace_section  # noqa: E402  (the section writing bench.py uses)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ['alexnet', 'vgg11', 'resnet18_v1', 'resnet50_v2', 'squeezenet1.1', 'mobilenet1.0',
          'mobilenetv2_1.0', 'densenet121', 'inceptionv3']
BATCHES = [1, 64]
STRATEGIES = [('naive_bytes', 'no sharing'), ('inplace_bytes', 'in place only'),
              ('coshare_bytes', 'co-share only'), ('planned_bytes', 'both (mxlite plan)')]
SECTION = '## Memory planning'
# How the generated text ends; what the section holds after it was written by
# hand (dated findings in prose), and a rewrite keeps it.
FIGURE_LINE = 'Figure: `docs/memory.png`.'
MIB = float(1 << 20)


def build_plan_tool():
    out = os.path.join(ROOT, 'build', 'plot')
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, 'amalgamation', 'amalgamate.py'),
                    '--out-dir', out], check=True, capture_output=True)
    exe = os.path.join(out, 'plan_tool')
    subprocess.run(['g++', '-std=c++17', '-O2', os.path.join(ROOT, 'tests', 'cpp', 'plan_tool.cc'),
                    os.path.join(out, 'mxlite-all.cc'), '-o', exe, '-lpthread'], check=True)
    return exe


def input_shape(zoo, name, batch):
    with open(os.path.join(zoo, 'manifest.json'), encoding='utf-8') as f:
        shape = json.load(f)['cases'][name]['inputs']['data']
    return [batch] + shape[1:]


def run_plan(tool, zoo, name, batch, fused):
    shape = ','.join(map(str, input_shape(zoo, name, batch)))
    args = [tool, os.path.join(zoo, f'{name}-symbol.json'), '--shape', f'data={shape}', '--json']
    result = subprocess.run(args + (['--fused'] if fused else []), check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout.splitlines()[0])


def mxnet_plans(oracle_python, zoo):
    if not oracle_python or not os.path.exists(oracle_python):
        print('(no MXNet oracle interpreter: MXNet plan column left out)', file=sys.stderr)
        return {}
    args = [os.path.join(zoo, f'{name}-symbol.json') + '=' +
            ','.join(map(str, input_shape(zoo, name, batch)))
            for name in MODELS for batch in BATCHES]
    env = {**os.environ, 'MXNET_MKLDNN_ENABLED': '0', 'MXNET_SUBGRAPH_BACKEND': 'NONE'}
    result = subprocess.run([oracle_python, os.path.join(ROOT, 'tests', 'mxnet_memory_plan.py'),
                             *args], check=True, capture_output=True, text=True, env=env)
    plans = {}
    for line in result.stdout.splitlines():
        record = json.loads(line)
        name = os.path.basename(record['symbol'])[:-len('-symbol.json')]
        if record['replayed_bytes'] // (1 << 20) != record['debug_str_mb']:
            sys.exit(f'MXNet replay disagrees with MXNet for {name}: {record}')
        plans[(name, record['shape'][0])] = record['replayed_bytes']
    return plans


def draw(results, mxnet, png):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(BATCHES), figsize=(15, 5.2))
    colors = ['#b0b0b0', '#f2a65a', '#5b9bd5', '#2e7d32']
    width = 0.2
    for ax, batch in zip(axes, BATCHES):
        x = np.arange(len(MODELS))
        for k, (key, label) in enumerate(STRATEGIES):
            values = [results[(name, batch)][key] / MIB for name in MODELS]
            ax.bar(x + (k - 1.5) * width, values, width, label=label, color=colors[k])
        bound = [results[(name, batch)]['lower_bound_bytes'] / MIB for name in MODELS]
        ax.scatter(x + 1.5 * width, bound, marker='_', s=260, color='black', zorder=3,
                   label='lower bound (most bytes live at once)')
        if mxnet:
            ax.scatter(x + 1.5 * width, [mxnet[(name, batch)] / MIB for name in MODELS],
                       marker='x', s=40, color='#c62828', zorder=3, label='MXNet 1.9.1 plan')
        ax.set_yscale('log')
        ax.set_xticks(x)
        ax.set_xticklabels(MODELS, rotation=30, ha='right')
        ax.set_ylabel('internal memory (MiB, log scale)')
        ax.set_title(f'prediction, batch {batch}')
        ax.grid(axis='y', which='both', alpha=0.25)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc='lower center', ncol=len(labels), fontsize=9, frameon=False)
    fig.suptitle('Memory for operator outputs (weights and inputs excluded) by planning strategy')
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    os.makedirs(os.path.dirname(png), exist_ok=True)
    fig.savefig(png, dpi=110)


def mib(value):
    return f'{value / MIB:,.2f}'


def section_text(results, fused, mxnet, command):
    lines = [SECTION, '',
             f'Command: `{command}` ({datetime.date.today().isoformat()}, '
             f'{platform.machine()} host).', '',
             'Bytes the arena needs for operator outputs (weights and inputs excluded; the graph '
             'output is inside it), in MiB, from the symbol file alone (`tests/cpp/plan_tool`, '
             'which `mxlite plan` mirrors). *No sharing*: every output its own buffer. *In place*: '
             'outputs take over their input\'s buffer where the operator allows. *Co-share*: '
             'buffers whose lifetimes do not overlap share bytes (offset placement). *Both* is '
             'the plan mxlite uses; *lower bound* is the most bytes live at once in execution '
             'order. *MXNet* is MXNet 1.9.1\'s plan for the same graph (`simple_bind`, '
             '`grad_req=\'null\'`, the pip build, whose max pooling has a hidden workspace '
             'output of the output\'s size; exact figure from `tests/mxnet_memory_plan.py`, '
             'which agrees with MXNet\'s printed whole-MiB figure). *Fused* is the plan for the graph the executor runs by default '
             '(convolution + BatchNorm + add + activation folded; on x86 with AVX2 or AVX-512 '
             'also a stem\'s max pooling, whose convolution output the plan then no longer '
             'holds: the operator pools bands of it in its workspace, a few hundred KiB a '
             'thread; and an average pooling beside a 1x1 convolution, whose pooled input '
             'or unpooled output, one image of it, the operator keeps in its workspace).', '']
    for batch in BATCHES:
        lines += [f'Batch {batch}:', '',
                  '| model | no sharing | in place | co-share | both | lower bound | MXNet 1.9.1 '
                  '| both vs no sharing | both vs MXNet | fused graph |',
                  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
        for name in MODELS:
            r = results[(name, batch)]
            theirs = mxnet.get((name, batch))
            lines.append(
                f'| {name} | {mib(r["naive_bytes"])} | {mib(r["inplace_bytes"])} | '
                f'{mib(r["coshare_bytes"])} | **{mib(r["planned_bytes"])}** | '
                f'{mib(r["lower_bound_bytes"])} | {mib(theirs) if theirs else "–"} | '
                f'{r["naive_bytes"] / r["planned_bytes"]:.1f}x smaller | '
                + (f'{theirs / r["planned_bytes"]:.2f}x smaller' if theirs else '–')
                + f' | {mib(fused[(name, batch)]["planned_bytes"])} |')
        lines.append('')
    total_naive = sum(results[(n, b)]['naive_bytes'] for n in MODELS for b in BATCHES)
    total_plan = sum(results[(n, b)]['planned_bytes'] for n in MODELS for b in BATCHES)
    at_bound = sum(results[(n, b)]['planned_bytes'] == results[(n, b)]['lower_bound_bytes']
                   for n in MODELS for b in BATCHES)
    lines += [f'Over these {len(MODELS) * len(BATCHES)} cases the plan is {total_naive / total_plan:.1f}x '
              f'smaller than no sharing in total and equals the lower bound in {at_bound}. '
              + FIGURE_LINE, '']
    return '\n'.join(lines)


def write_section(path, text):
    old = ''
    if os.path.exists(path):
        with open(path, encoding='utf-8') as f:
            old = f.read()
    if not old:
        old = ('# Benchmarks\n\nEach section below gives the command that produced it; '
               'rerun the command to refresh the section.\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(replace_section(old, SECTION[len('## '):], text, keep_after=FIGURE_LINE))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--zoo', default=os.path.join(ROOT, 'build', 'fixtures', 'zoo'))
    parser.add_argument('--png', default=os.path.join(ROOT, 'docs', 'memory.png'))
    parser.add_argument('--benchmarks', default=os.path.join(ROOT, 'BENCHMARKS.md'))
    parser.add_argument('--oracle-python',
                        default=os.path.join(ROOT, 'build', 'venv-mxnet', 'bin', 'python'))
    args = parser.parse_args()
    ensure_matplotlib(__file__)
    if not os.path.exists(os.path.join(args.zoo, 'manifest.json')):
        sys.exit(f'no zoo fixtures in {args.zoo}: run scripts/run_tests.sh (or '
                 'scripts/make_fixtures.py zoo) first')
    tool = build_plan_tool()
    results, fused = {}, {}
    for name in MODELS:
        for batch in BATCHES:
            results[(name, batch)] = run_plan(tool, args.zoo, name, batch, fused=False)
            fused[(name, batch)] = run_plan(tool, args.zoo, name, batch, fused=True)
    mxnet = mxnet_plans(args.oracle_python, args.zoo)
    draw(results, mxnet, args.png)
    write_section(args.benchmarks, section_text(results, fused, mxnet,
                                                'python3 scripts/plot_memory.py'))
    print(f'wrote {os.path.relpath(args.png, ROOT)} and the memory section of '
          f'{os.path.relpath(args.benchmarks, ROOT)}')


if __name__ == '__main__':
    main()
