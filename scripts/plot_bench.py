#!/usr/bin/env python3
"""mxlite's latency relative to the faster peer, per zoo model, from a
scripts/bench.py run.

    python3 scripts/plot_bench.py [--json build/bench/results.json] [--png docs/performance.png]

For every model and thread count in the run's report (the JSON that bench.py
writes with --results-json) it draws mxlite's median latency over the faster
of the peers' medians (MXNet 1.9.1, ONNX Runtime; a baseline library is not a
peer) as a bar per thread count, with a line at the 0.85 goal; below the line
meets it. The title names the CPU and date of the run. Rows where mxlite or
every peer has no median (failed, not run) are left out. matplotlib comes
from build/venv-plot (scripts/plotting.py).
"""
import argparse
import json
import os
import re
import sys

from plotting import ROOT, ensure_matplotlib

GOAL = 0.85
# Runtimes that are mxlite itself (bench_setup.MXLITE_RUNTIMES), not peers.
MXLITE_RUNTIMES = ('mxlite', 'baseline')


def ratios(report):
    """{threads: [(model, mxlite median / faster peer's median, peer)]} in the run's order."""
    out = {}
    for model in report.get('models') or list(report['results']):
        for threads in report['threads']:
            results = report['results'].get(model, {}).get(str(threads), {})
            mine = (results.get('mxlite') or {}).get('median_ms')
            peers = [(res['median_ms'], name) for name, res in results.items()
                     if name not in MXLITE_RUNTIMES and res.get('median_ms') is not None]
            if mine is None or not peers:
                continue
            best, peer = min(peers)
            out.setdefault(threads, []).append((model, mine / best, peer))
    return out


def cpu_name(machine):
    """The CPU model from bench.py's machine description ("MODEL, N cores, ISA; OS")."""
    match = re.match(r'(.*?), \d+ cores', machine or '')
    return match.group(1) if match else (machine or 'unknown CPU').split(';')[0]


def draw(report, png):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import numpy as np

    by_threads = ratios(report)
    if not by_threads:
        sys.exit('no model has both an mxlite and a peer median in this report')
    models = [m for m in (report.get('models') or list(report['results']))
              if any(m == row[0] for rows in by_threads.values() for row in rows)]
    thread_counts = sorted(by_threads)
    width = 0.8 / len(thread_counts)
    x = np.arange(len(models))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(models) + 2), 4.8))
    colors = ['#5b9bd5', '#2e7d32', '#f2a65a', '#8e7cc3']
    for k, threads in enumerate(thread_counts):
        values = dict((m, r) for m, r, _ in by_threads[threads])
        heights = [values.get(m, np.nan) for m in models]
        ax.bar(x + (k - (len(thread_counts) - 1) / 2) * width, heights, width,
               label=f'{threads} thread{"" if threads == 1 else "s"}',
               color=colors[k % len(colors)])
    ax.axhline(GOAL, color='#c62828', linestyle='--', linewidth=1.2,
               label=f'goal ({GOAL}× the faster peer)')
    ax.axhline(1.0, color='black', linewidth=0.6, alpha=0.5)
    ax.set_xticks(x)
    ax.set_xticklabels(models, rotation=30, ha='right')
    ax.set_ylabel('mxlite latency / faster peer\'s (lower is better)')
    ax.set_title(f'{cpu_name(report.get("machine", ""))}, {report.get("date", "")}', fontsize=10)
    fig.suptitle('mxlite against the faster of MXNet 1.9.1 and ONNX Runtime, batch 1')
    ax.grid(axis='y', alpha=0.25)
    top = max(r for rows in by_threads.values() for _, r, _ in rows)
    ax.set_ylim(0, max(1.0, top) * 1.3)  # room for the legend above the bars
    ax.legend(fontsize=9, frameon=False, loc='upper left', ncol=len(thread_counts) + 1)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--json', default=os.path.join(ROOT, 'build', 'bench', 'results.json'))
    parser.add_argument('--png', default=os.path.join(ROOT, 'docs', 'performance.png'))
    args = parser.parse_args()
    if not os.path.exists(args.json):
        sys.exit(f'no results in {args.json}: run python3 scripts/bench.py first')
    ensure_matplotlib(__file__)
    with open(args.json, encoding='utf-8') as f:
        report = json.load(f)
    draw(report, args.png)
    print(f'wrote {args.png}')


if __name__ == '__main__':
    main()
