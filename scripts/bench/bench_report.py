"""scripts/bench.py: the BENCHMARKS.md section rendered from a run's report."""

import os
import platform
import subprocess

from bench_setup import *  # noqa: F401,F403


def fmt_ms(value):
    if value is None:
        return '–'
    if value < 10:
        return '%.2f' % value
    if value < 100:
        return '%.1f' % value
    return '%.0f' % value


def cell(result):
    if result is None:
        return '–'
    if result.get('error'):
        return 'failed'
    return fmt_ms(result.get('median_ms'))


def peers(runtimes):
    """The runtimes mxlite is compared with: all but mxlite and its baseline."""
    return [r for r in runtimes if r not in MXLITE_RUNTIMES]


def ratio_cell(results, peers, mine='mxlite'):
    mine = results.get(mine, {}).get('median_ms')
    medians = [(results[p]['median_ms'], p) for p in peers
               if p in results and results[p].get('median_ms') is not None]
    if mine is None or not medians:
        return '–'
    best, peer = min(medians)
    return '%.2f (%s)' % (mine / best, LABELS[peer])


def baseline_cell(results):
    """mxlite's median over the baseline library's: below 1 is faster than the baseline."""
    mine = results.get('mxlite', {}).get('median_ms')
    base = results.get('baseline', {}).get('median_ms')
    if mine is None or not base:
        return '–'
    return '%.3f' % (mine / base)


def goal_counts(report, per_model):
    """(met, total): the (model, threads) rows of per_model ({model: {threads: results}})
    where mxlite is at most 0.85x the faster peer."""
    met, total = 0, 0
    for per_threads in per_model.values():
        for t in report['threads']:
            results = per_threads.get(str(t), {})
            mine = results.get('mxlite', {}).get('median_ms')
            peers = [res['median_ms'] for r, res in results.items()
                     if r not in MXLITE_RUNTIMES and res.get('median_ms') is not None]
            if mine is None or not peers:
                continue
            total += 1
            met += mine <= 0.85 * min(peers)
    return met, total


def goal_summary(report, models):
    """How many (model, threads) rows meet the issue's goal of <= 0.85x the best peer."""
    met, total = goal_counts(report, {m: report['results'][m] for m in models})
    return 'Goal met (mxlite ≤ 0.85 × the faster peer) in %d of %d model and thread rows.' % (
        met, total)


def placement(load):
    """The CPUs' round trip before and after a multi-thread case, 'far' past the threshold."""
    trips = (load or {}).get('round_trip_ns')
    if not trips:
        return '–'
    text = '/'.join('%.0f' % t for t in trips)
    return text + (' far' if max(trips) > FAR_ROUND_TRIP_NS else '')


def throughput_cell(result, batch):
    if result is None:
        return '–'
    if result.get('error'):
        return 'failed'
    median = result.get('median_ms')
    return '–' if not median else '%.1f' % (1000.0 * batch / median)


def table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |',
             '|' + '|'.join('---' if i == 0 else '---:' for i in range(len(header))) + '|']
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return '\n'.join(lines)


def cores(load):
    if not load or load.get('others_cores') is None:
        return '–'
    return '%.2f' % load['others_cores']


def mb(kb):
    return '–' if kb is None else '%.0f' % (kb / 1024.0)


def lscpu_fields():
    fields = {}
    try:
        output = subprocess.run(['lscpu'], capture_output=True, text=True).stdout
    except OSError:
        return fields
    for line in output.splitlines():
        key, _, value = line.partition(':')
        fields[key.strip()] = value.strip()
    return fields


def cpu_flags():
    return set(lscpu_fields().get('Flags', '').split())


def gap_text(args, threads):
    """The pause after each turn, as bench.py chose it per thread count."""
    if 'gap_ms' not in args:  # a run from before the pause depended on threads
        return '%g ms' % SINGLE_THREAD_GAP_MS
    one, multi = turn_gap_ms(args['gap_ms'], 1), turn_gap_ms(args['gap_ms'], 2)
    if max(threads) == 1 or one == multi:
        return '%g ms' % one
    if 1 not in threads:
        return '%g ms' % multi
    return '%g ms at one thread and %g ms above one thread' % (one, multi)


def machine_description():
    fields = lscpu_fields()
    flags = set(fields.get('Flags', '').split())
    isa = [name for name in ('avx2', 'fma', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni',
                             'asimd') if name in flags]
    model = fields.get('Model name') or platform.processor() or platform.machine()
    if fields.get('CPU family'):
        model += ' (family %s, model %s)' % (fields['CPU family'], fields.get('Model', '?'))
    # lscpu's totals over all instances, e.g. "4 MiB (2 instances)" (L1d and L2
    # are per core): what the GEMM's fixed block sizes are measured against.
    caches = ', '.join('%s %s' % (name, fields[key]) for name, key in
                       (('L1d', 'L1d cache'), ('L2', 'L2 cache'), ('L3', 'L3 cache'))
                       if fields.get(key))
    return '%s, %d cores, %s%s; %s' % (model, os.cpu_count() or 0,
                                       ' '.join(isa) or 'no SIMD flags',
                                       '; caches: ' + caches if caches else '',
                                       platform.platform())


def git_description(args):
    if args.commit_built:
        return '%s (built from a clean export of that commit)' % args.commit_built
    commit = git('rev-parse', '--short', 'HEAD') or 'unknown'
    if args.library_given:
        return 'HEAD %s, library %s' % (commit, args.library)
    dirty = git('status', '--porcelain', '--', 'predict', 'amalgamation')
    return commit + (' with uncommitted changes under predict/' if dirty else '')


def thread_columns(report):
    """Per thread count: each runtime, the ratio to the faster peer (and to the baseline),
    the other processes' load and, above one thread, the CPU placement."""
    header = []
    for t in report['threads']:
        header += ['%s %dt' % (LABELS[r], t) for r in report['runtimes']]
        header += ['mxlite / best %dt' % t]
        header += ['mxlite / baseline %dt' % t] if 'baseline' in report['runtimes'] else []
        header += ['others %dt' % t]
        header += ['round trip ns %dt' % t] if t > 1 else []
    return header


def thread_cells(report, per_threads, loads, value_cell):
    """The cells of thread_columns for one row: per_threads and loads by thread count,
    value_cell(result) the runtime's cell."""
    row = []
    for t in report['threads']:
        results = per_threads.get(str(t), {})
        row += [value_cell(results.get(r)) for r in report['runtimes']]
        row += [ratio_cell(results, peers(report['runtimes']))]
        row += [baseline_cell(results)] if 'baseline' in report['runtimes'] else []
        load = loads.get(str(t))
        row += [cores(load)]
        row += [placement(load)] if t > 1 else []
    return row


def render(report):
    args = report['args']
    threads = report['threads']
    multi = [t for t in threads if t > 1]
    peaks = report.get('fma_peaks')
    batches = [b for b in report.get('batches', [1]) if b != 1]
    lines = ['## ' + report.get('section', SECTION), '']
    if args['note']:
        lines += [args['note'], '']
    lines += [
        'Command: `%s`' % report['command'],
        '',
        '- date: %s; machine: %s' % (report['date'], report['machine']),
        '- FMA peak of one core, measured at the start (scripts/bench/fma_peak.cc): %s' % (
            ', '.join('%s %.0f GFLOP/s' % (isa, gflops) for isa, gflops in peaks.items()))
        if peaks else None,
        '- CPU placement: "round trip" is the time a cache line takes from CPU 0 to CPU 1 and '
        'back (scripts/bench/core_latency.cc), probed before and after each multi-thread row; '
        '"far" (over %.0f ns) means the host placed the two CPUs apart, which slows two-thread '
        'rows (scripts/bench/placement_check.py)' % FAR_ROUND_TRIP_NS if multi else None,
        '- mxlite: commit %s, library sha256 %s…; threads: MXLITE_NUM_THREADS' % (
            report['commit'], report['mxlite_lib']['sha256']),
        '- mxlite (baseline): %s, library sha256 %s…, measured as one more runtime taking '
        'turns with the others; "mxlite / baseline" below 1 is faster than it' % (
            report['baseline_lib']['commit'], report['baseline_lib']['sha256'])
        if report.get('baseline_lib') else None,
        '- MXNet %s: pip wheel, C predict API of libmxnet.so, oneDNN on (default subgraph '
        'fusion), MXNET_ENGINE_TYPE=NaiveEngine, threads: OMP_NUM_THREADS' % (
            report['versions'].get('mxnet')),
        '- ONNX Runtime %s: models from mx.onnx.export_model (onnx %s) with initializers '
        'removed from the graph inputs, and gamma = 1 written for BatchNorm with fix_gamma '
        '(the exporter ignores the flag; resnet50_v2 differs by 7%% without it); '
        'intra_op_num_threads = threads, inter_op 1, ORT_ENABLE_ALL, sequential' % (
            report['versions'].get('onnxruntime'), report['versions'].get('onnx')),
        '- instruction set capped at AVX2: mxlite through MXLITE_ISA=avx2, MXNet\'s oneDNN '
        'through DNNL_MAX_CPU_ISA=AVX2; ONNX Runtime has no such setting and used all the '
        'machine has' if args.get('isa') == 'avx2' else None,
        '- workers at niceness %d' % args['nice'] if args['nice'] else None,
        '- batch 1%s, float32; one inference = set input + forward + copy output; the runtimes '
        'take turns of %d consecutive inferences (order rotating, reversed every other round; '
        'a pause of %s after each turn), after %d warm-up rounds; the median is over %s '
        'inferences per runtime, leaving out those that another process preempted when '
        'enough others remain; thread counts %s' % (
            ', and batch %s (one image repeated) for the throughput table' % ', '.join(
                map(str, batches)) if batches else '',
            args.get('turn', 1), gap_text(args, threads), args['warmup'], report['rounds_text'],
            ', '.join(map(str, threads))),
        '']
    lines = [line for line in lines if line is not None]
    models = [m for m in report['models'] if m in report['results']]
    baseline = 'baseline' in report['runtimes']
    if models:
        header = ['model'] + thread_columns(report)
        rows = [[model] + thread_cells(report, report['results'][model],
                                       report['background'].get(model, {}), cell)
                for model in models]
        lines += ['Median latency (ms), mxlite / the faster peer (≤ 0.85 is the goal), and '
                  '"others": the cores other processes on the machine kept busy meanwhile '
                  '(/proc/stat; near 0 for a clean measurement):', '',
                  table(header, rows), '']
        if peers(report['runtimes']):
            lines += [goal_summary(report, models), '']
        busy = [load.get('others_cores') or 0.0 for per_model in report['background'].values()
                for load in per_model.values()]
        if busy and max(busy) > BACKGROUND_WARN_CORES:
            lines += ['Other processes kept the machine busy during this run (up to %.1f cores; '
                      'see "others" and the warnings): the latencies are inflated, those at '
                      'more than one thread most. The CPU-time table below compares the '
                      'runtimes more fairly meanwhile; rerun on an idle machine for the '
                      'figures that count.' % max(busy), '']
        if 1 in threads:
            header = ['model'] + [LABELS[r] for r in report['runtimes']] + ['mxlite / best'] + (
                ['mxlite / baseline'] if baseline else [])
            rows = []
            for model in models:
                results = report['results'][model].get('1', {})
                cpu = {r: {'median_ms': res.get('cpu_median_ms')} for r, res in results.items()
                       if res.get('error') is None}
                rows.append([model] + [cell(cpu.get(r)) for r in report['runtimes']] +
                            [ratio_cell(cpu, peers(report['runtimes']))] +
                            ([baseline_cell(cpu)] if baseline else []))
            lines += ['CPU time per inference at 1 thread (median ms of the worker process\'s '
                      'CPU time, all inferences). Unlike latency it does not grow when other '
                      'processes take the core, so it stays comparable on a busy machine; it '
                      'still grows when they crowd the caches and memory bus:', '',
                      table(header, rows), '']
        first = str(threads[0])
        header = ['model'] + ['load ms %s' % LABELS[r] for r in report['runtimes']] + [
            'peak RSS MB %s' % LABELS[r] for r in report['runtimes']] + [
            'RSS growth MB %s' % LABELS[r] for r in report['runtimes']]
        rows = []
        for model in models:
            results = report['results'][model].get(first, {})
            row = [model]
            row += [fmt_ms(1000.0 * results[r]['load_s']) if results.get(r, {}).get('load_s')
                    is not None else '–' for r in report['runtimes']]
            row += [mb(results.get(r, {}).get('maxrss_kb')) for r in report['runtimes']]
            row += [mb(results[r]['maxrss_kb'] - results[r]['rss_before_load_kb'])
                    if results.get(r, {}).get('maxrss_kb') else '–' for r in report['runtimes']]
            rows.append(row)
        lines += ['Load time (files to a ready predictor/session) and peak RSS of the worker '
                  'process at %s thread%s; RSS growth is the peak minus the worker\'s peak '
                  'before loading (interpreter, numpy and the runtime\'s library):' % (
                      first, '' if first == '1' else 's'), '',
                  table(header, rows), '']
    batch_results = report.get('batch_results') or {}
    if batch_results:
        header = ['model', 'batch'] + thread_columns(report)
        rows = []
        counted = {}
        for model in report.get('batch_models') or list(batch_results):
            for batch in batches:
                per_threads = batch_results.get(model, {}).get(str(batch))
                if per_threads is None:
                    continue
                counted['%s@%d' % (model, batch)] = per_threads
                loads = report['batch_background'].get(model, {}).get(str(batch), {})
                rows.append([model, str(batch)] + thread_cells(
                    report, per_threads, loads,
                    lambda result, batch=batch: throughput_cell(result, batch)))
        lines += ['Throughput at larger batches (images per second, higher is better; the ratio '
                  'is still mxlite\'s time over the faster peer\'s, ≤ 0.85 the goal):', '',
                  table(header, rows), '']
        if peers(report['runtimes']):
            met, total = goal_counts(report, counted)
            lines += ['Goal met in %d of %d model, batch and thread rows.' % (met, total), '']
    if report.get('dot'):
        dot = report['dot']
        dot_baseline = 'baseline' in dot['runtimes']
        header = ['threads'] + [LABELS[r] for r in dot['runtimes']] + ['mxlite / numpy'] + (
            ['mxlite / baseline'] if dot_baseline else []) + ['others']
        rows = []
        for t in threads:
            results = dot['results'].get(str(t), {})
            rows.append([str(t)] + [cell(results.get(r)) for r in dot['runtimes']] +
                        [ratio_cell(results, ['numpy', 'numpy_avx512'])] +
                        ([baseline_cell(results)] if dot_baseline else []) +
                        [cores(report['background'].get(dot['name'], {}).get(str(t)))])
        forced = ('; "AVX-512 forced" runs it with OPENBLAS_CORETYPE=SkylakeX, because '
                  'OpenBLAS does not pick its AVX-512 kernels on every AVX-512 CPU'
                  if 'numpy_avx512' in dot['runtimes'] else '')
        lines += ['%s: a %s float32 product, median ms (FullyConnected with no bias through '
                  'the C API for mxlite and MXNet; numpy %s matmul with the OpenBLAS its wheel '
                  'ships%s):' % (dot['name'], dot['shape'], report['versions'].get('numpy'),
                                 forced), '',
                  table(header, rows), '']
    load_lines = report.get('load_warnings', [])
    if len(load_lines) > 3:  # the busy-machine paragraph says it; the details are in the JSON
        load_lines = ['%d of the rows above were measured while other processes ran (details '
                      'in %s, "load_warnings")' % (
                          len(load_lines),
                          report.get('results_json', 'build/bench/results.json'))]
    if report['warnings'] or load_lines:
        lines += ['Warnings:', ''] + ['- ' + w for w in report['warnings'] + load_lines] + ['']
    else:
        lines += ['Every output matched MXNet\'s reference output (mxlite within the fixture '
                  'rtol, the peers within %g).' % PEER_RTOL, '']
    return '\n'.join(lines)


BENCHMARKS_INTRO = """# Benchmarks

Measurements of mxlite against the runtimes it replaces. Every section states the command
that produced it and the machine it ran on; rerun that command to refresh the section
(scripts rewrite only their own section).
"""


def replace_section(text, title, body, keep_after=None):
    """Replace the '## title' section of a markdown file (up to the next '## ').
    keep_after: text on the last line a script generates; what the old
    section holds after the first line containing it (notes written by hand)
    follows the new body."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == '## ' + title), None)
    if start is None:
        return text.rstrip('\n') + '\n\n' + body.rstrip('\n') + '\n'
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('## ')),
               len(lines))
    new_lines = body.rstrip('\n').splitlines()
    if keep_after is not None:
        old = lines[start:end]
        last = next((i for i, line in enumerate(old) if keep_after in line), None)
        kept = '\n'.join(old[last + 1:]).strip('\n') if last is not None else ''
        if kept:
            new_lines += [''] + kept.splitlines()
    tail = lines[end:]
    merged = lines[:start] + new_lines + ([''] + tail if tail else [])
    return '\n'.join(merged).rstrip('\n') + '\n'


def write_benchmarks(path, body, section=SECTION):
    text = BENCHMARKS_INTRO
    if os.path.exists(path):  # read right before writing: others own other sections
        with open(path, encoding='utf-8') as f:
            text = f.read()
    updated = replace_section(text, section, body)
    with open(path + '.tmp', 'w', encoding='utf-8') as f:
        f.write(updated)
    os.replace(path + '.tmp', path)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
