#!/usr/bin/env python3
"""CPU latency of mxlite against MXNet 1.9.1 and ONNX Runtime, in one run.

    python3 scripts/bench.py                      # everything; writes BENCHMARKS.md
    python3 scripts/bench.py --models resnet18_v1 --threads 1 --no-write
    python3 scripts/bench.py --quick              # a rough look in about a minute

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
no bias), mxlite, MXNet and numpy.matmul.

How it measures. Each runtime lives in its own worker process
(scripts/bench/worker.py) with its thread settings in its environment, driven
over a pipe. A fresh set of workers serves each (model, thread count): so
every worker's peak RSS (ru_maxrss) belongs to one model, and nothing one
model leaves behind (arenas, caches, pools) affects the next. The workers load
one after the other (load time = build the predictor or session from the
files), warm up, check their output against MXNet's from the fixture, and then
run alternately, --turn inferences each (default 5), in an order that rotates
every round, so that clock drift and other load on the machine hit all
runtimes alike. A short pause after each turn lets the previous runtime's
threads settle. Thread pools spin for a while after their work (ONNX Runtime's,
OpenMP's and mxlite's all do, 100 ms or more by default); with one inference
per turn the next runtime's inference would share the cores with those
spinners and time the contention rather than itself (measured: mxlite's
resnet18_v1 at 2 threads 13 ms in turns of 5, 26 ms in turns of 1). In turns
of several, only the first inference of a turn meets the leftover spinning,
and the median passes over it. The number of rounds is chosen from the warm-up
times to spend about --budget-s seconds per model and thread count, within
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
import hashlib
import json
import math
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_TOOLS = os.path.join(ROOT, 'scripts', 'bench')
WORKER = os.path.join(BENCH_TOOLS, 'worker.py')
ORACLE_TOOLS = os.path.join(BENCH_TOOLS, 'oracle_tools.py')
BUILD = os.path.join(ROOT, 'build')
WORK_DIR = os.path.join(BUILD, 'bench')

DEFAULT_MODELS = ['resnet18_v1', 'mobilenet1.0', 'mobilenetv2_1.0', 'squeezenet1.1',
                  'densenet121', 'inceptionv3', 'resnet50_v2', 'vgg11']
RUNTIMES = ['mxlite', 'mxnet', 'ort']
LABELS = {'mxlite': 'mxlite', 'mxnet': 'MXNet', 'ort': 'ORT', 'numpy': 'numpy',
          'numpy_avx512': 'numpy, AVX-512 forced'}
ONNX_VERSION = '1.14.1'
SECTION = 'CPU performance'
# Agreement with MXNet's reference output (max |diff| / max |expected|): mxlite
# must meet the fixture's rtol; oneDNN and ONNX Runtime round differently
# (fused BatchNorm, other summation orders), so they get a looser bound.
PEER_RTOL = 1e-3
# Other processes using more than this many cores during a measurement make it suspect.
BACKGROUND_WARN_CORES = 0.2


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------
# environments and inputs
# --------------------------------------------------------------------------

def run_checked(argv, what, **kwargs):
    result = subprocess.run(argv, **kwargs)
    if result.returncode != 0:
        raise BenchError('%s failed (exit %d): %s' % (what, result.returncode,
                                                      ' '.join(map(shlex.quote, argv))))


def python_query(python, code):
    """Run a snippet in another interpreter and parse the JSON it prints."""
    result = subprocess.run([python, '-c', code], capture_output=True, text=True)
    if result.returncode != 0:
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


VERSIONS_SNIPPET = '''
import importlib.metadata as m, json
out = {}
for name in %r:
    try:
        out[name] = m.version(name)
    except m.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
'''


def package_versions(python, names):
    return python_query(python, VERSIONS_SNIPPET % (list(names),)) or {}


def ensure_oracle(args, need_onnx):
    python = args.oracle_python
    default = os.path.join(BUILD, 'venv-mxnet', 'bin', 'python')
    if not os.path.exists(python):
        if os.path.abspath(python) != default:
            raise BenchError('oracle python %s does not exist' % python)
        print('== creating the MXNet oracle venv (scripts/setup_oracle.sh)', flush=True)
        run_checked(['bash', os.path.join(ROOT, 'scripts', 'setup_oracle.sh'),
                     os.path.dirname(os.path.dirname(default))], 'setup_oracle.sh')
    versions = package_versions(python, ['mxnet', 'onnx', 'numpy'])
    if versions.get('mxnet') != '1.9.1':
        raise BenchError('%s has no mxnet 1.9.1 (found %s)' % (python, versions.get('mxnet')))
    if need_onnx and versions.get('onnx') != ONNX_VERSION:
        # mx.onnx in 1.9.1 is written against onnx 1.14-era APIs; numpy stays
        # below 1.24 because MXNet 1.9.1 still uses np.bool.
        print('== installing onnx==%s into the oracle venv' % ONNX_VERSION, flush=True)
        run_checked([python, '-m', 'pip', 'install', '-q', 'onnx==' + ONNX_VERSION,
                     'numpy<1.24'], 'pip install onnx')
        versions = package_versions(python, ['mxnet', 'onnx', 'numpy'])
    # numpy here is the oracle's (old) one; the numpy that is measured is venv-bench's.
    return {'mxnet': versions.get('mxnet'), 'onnx': versions.get('onnx')}


def ensure_bench_python(args, need_ort):
    python = args.bench_python
    default = os.path.join(BUILD, 'venv-bench', 'bin', 'python')
    if not os.path.exists(python):
        if os.path.abspath(python) != default:
            raise BenchError('bench python %s does not exist' % python)
        print('== creating build/venv-bench', flush=True)
        run_checked([sys.executable, '-m', 'venv', os.path.dirname(os.path.dirname(default))],
                    'python -m venv build/venv-bench')
    wanted = ['numpy'] + (['onnxruntime'] if need_ort else [])
    versions = package_versions(python, wanted)
    missing = [name for name in wanted if not versions.get(name)]
    if missing:
        print('== installing %s into %s' % (' '.join(missing), python), flush=True)
        run_checked([python, '-m', 'pip', 'install', '-q'] + missing, 'pip install')
        versions = package_versions(python, wanted)
    return versions


def mxnet_library(oracle_python):
    where = python_query(oracle_python, (
        'import importlib.util, json, os; '
        'print(json.dumps(importlib.util.find_spec("mxnet").submodule_search_locations[0]))'))
    path = os.path.join(where or '', 'libmxnet.so')
    if not os.path.exists(path):
        raise BenchError('libmxnet.so not found in the oracle venv (%s)' % path)
    return path


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def git(*argv):
    result = subprocess.run(['git', '-C', ROOT] + list(argv), capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ''


def build_library_at(revision):
    """Build libmxlite.so from a clean export of a commit (not the working tree)."""
    commit = git('rev-parse', '--verify', revision + '^{commit}')
    if not commit:
        raise BenchError('--commit %s: no such commit' % revision)
    out = os.path.join(WORK_DIR, 'builds', commit[:12])
    library = os.path.join(out, 'build', 'libmxlite.so')
    if not os.path.exists(library):
        print('== building libmxlite.so at %s' % commit[:12], flush=True)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        archive = subprocess.run(['git', '-C', ROOT, 'archive', commit], capture_output=True)
        if archive.returncode != 0:
            raise BenchError('git archive %s failed' % commit)
        subprocess.run(['tar', '-x', '-C', out], input=archive.stdout, check=True)
        run_checked(['make', '-C', out, 'lib'], 'make lib at %s' % commit[:12],
                    stdout=sys.stderr)
    return library, commit[:12]


def pin_mxlite_library(args):
    """Copy the library under test aside, so a rebuild during the run changes nothing."""
    path = args.library
    if path is None:
        path = os.environ.get('MXLITE_LIBRARY') or os.path.join(BUILD, 'libmxlite.so')
    if not os.path.exists(path):
        raise BenchError('%s is missing: run `make lib` (or pass --library)' % path)
    digest = file_sha256(path)[:12]
    pinned_dir = os.path.join(WORK_DIR, 'lib')
    os.makedirs(pinned_dir, exist_ok=True)
    pinned = os.path.join(pinned_dir, 'libmxlite-%s.so' % digest)
    if not os.path.exists(pinned):
        shutil.copyfile(path, pinned + '.tmp')
        os.replace(pinned + '.tmp', pinned)
    return {'path': os.path.abspath(path), 'pinned': pinned, 'sha256': digest}


def load_manifest(zoo_dir):
    path = os.path.join(zoo_dir, 'manifest.json')
    if not os.path.exists(path):
        return {}
    with open(path, encoding='utf-8') as f:
        return json.load(f).get('cases', {})


def ensure_zoo(args, models):
    cases = load_manifest(args.zoo)
    missing = [m for m in models if m not in cases or not all(
        os.path.exists(os.path.join(args.zoo, m + suffix))
        for suffix in ('-symbol.json', '-0000.params', '-io.npz'))]
    if missing:
        print('== making zoo fixtures: %s' % ' '.join(missing), flush=True)
        run_checked([args.oracle_python, os.path.join(ROOT, 'scripts', 'make_fixtures.py'),
                     'zoo', args.zoo, '--models', ','.join(missing)], 'make_fixtures.py zoo')
        cases = load_manifest(args.zoo)
    result = {}
    for name in models:
        meta = cases[name]
        (input_name, input_shape), = meta['inputs'].items()
        prefix = os.path.join(args.zoo, name)
        result[name] = {'name': name, 'symbol': prefix + '-symbol.json',
                        'params': prefix + '-0000.params', 'io': prefix + '-io.npz',
                        'input_name': input_name, 'input_shape': input_shape,
                        'rtol': meta['rtol']}
    return result


def stamp_matches(stamp_path, stamp):
    try:
        with open(stamp_path, encoding='utf-8') as f:
            return json.load(f) == stamp
    except (OSError, ValueError):
        return False


def write_stamp(stamp_path, stamp):
    with open(stamp_path, 'w', encoding='utf-8') as f:
        json.dump(stamp, f)


def ensure_onnx_models(args, cases):
    """Export (once per checkpoint and exporter version) the ONNX models."""
    out_dir = os.path.join(WORK_DIR, 'onnx')
    os.makedirs(out_dir, exist_ok=True)
    tools_sha = file_sha256(ORACLE_TOOLS)
    stale = []
    for name, case in cases.items():
        info = os.stat(case['params'])
        stamp = {'tools': tools_sha, 'params_size': info.st_size,
                 'params_mtime_ns': info.st_mtime_ns, 'symbol_sha': file_sha256(case['symbol'])}
        case['onnx'] = os.path.join(out_dir, name + '.onnx')
        case['onnx_stamp'] = stamp
        if not (os.path.exists(case['onnx']) and stamp_matches(case['onnx'] + '.json', stamp)):
            stale.append(name)
    if stale:
        print('== exporting to ONNX: %s' % ' '.join(stale), flush=True)
        run_checked([args.oracle_python, ORACLE_TOOLS, 'export-onnx', args.zoo, out_dir] + stale,
                    'ONNX export', stdout=sys.stderr, stderr=subprocess.DEVNULL)
        for name in stale:
            write_stamp(cases[name]['onnx'] + '.json', cases[name]['onnx_stamp'])


def ensure_dot_case(args):
    size = args.dot
    out_dir = os.path.join(WORK_DIR, 'cases')
    prefix = os.path.join(out_dir, 'dot%d' % size)
    stamp = {'tools': file_sha256(ORACLE_TOOLS), 'size': size}
    files = [prefix + s for s in ('-symbol.json', '-0000.params', '-io.npz', '-weight.npy')]
    if not (all(map(os.path.exists, files)) and stamp_matches(prefix + '.json', stamp)):
        print('== making the dot case (%d x %d)' % (size, size), flush=True)
        run_checked([args.oracle_python, ORACLE_TOOLS, 'make-dot-case', out_dir, str(size)],
                    'make-dot-case', stdout=sys.stderr, stderr=subprocess.DEVNULL)
        write_stamp(prefix + '.json', stamp)
    return {'name': 'dot%d' % size, 'symbol': files[0], 'params': files[1], 'io': files[2],
            'weight_npy': files[3], 'input_name': 'data', 'input_shape': [size, size],
            'rtol': 1e-4}


# --------------------------------------------------------------------------
# workers
# --------------------------------------------------------------------------

class Worker:
    """A runtime in its own process, answering one JSON line per request."""

    def __init__(self, runtime, argv, env, log_path, niceness=0):
        self.runtime = runtime
        self.log_path = log_path
        self.log = open(log_path, 'w')

        def apply_niceness():  # runs in the child; its threads inherit it
            if niceness:
                os.setpriority(os.PRIO_PROCESS, 0, niceness)

        try:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=self.log, env=env, text=True, bufsize=1,
                                            preexec_fn=apply_niceness)
        except (OSError, subprocess.SubprocessError) as error:
            self.log.close()
            raise BenchError('%s worker did not start: %s' % (runtime, error))
        self.ready = self.receive('start')

    def log_tail(self):
        self.log.flush()
        try:
            with open(self.log_path, encoding='utf-8', errors='replace') as f:
                lines = f.read().strip().splitlines()
        except OSError:
            return ''
        return ' | '.join(lines[-3:])

    def receive(self, what):
        line = self.process.stdout.readline()
        if not line:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            raise BenchError('%s worker died during %s (exit %s); log %s: %s' % (
                self.runtime, what, self.process.poll(), self.log_path, self.log_tail()))
        reply = json.loads(line)
        if 'error' in reply:
            raise BenchError('%s: %s' % (self.runtime, reply['error']))
        return reply

    def request(self, **message):
        try:
            self.process.stdin.write(json.dumps(message) + '\n')
            self.process.stdin.flush()
        except OSError:  # it died; receive() reports how
            pass
        return self.receive(message['cmd'])

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.write('{"cmd": "exit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.log.close()


def worker_env(runtime, threads):
    env = dict(os.environ)
    # The thread count of each runtime, and of nothing else in its process.
    env['OMP_NUM_THREADS'] = str(threads)
    env['OPENBLAS_NUM_THREADS'] = '1'
    if runtime == 'mxlite':
        env['MXLITE_NUM_THREADS'] = str(threads)
        env.pop('MXLITE_ISA', None)
    elif runtime == 'mxnet':
        # MXNet as a user gets it: oneDNN and its graph fusion stay on.
        for name in ('MXNET_MKLDNN_ENABLED', 'MXNET_SUBGRAPH_BACKEND'):
            env.pop(name, None)
        env['MXNET_ENGINE_TYPE'] = 'NaiveEngine'
        env['OPENBLAS_NUM_THREADS'] = str(threads)
    elif runtime in ('numpy', 'numpy_avx512'):
        env['OPENBLAS_NUM_THREADS'] = str(threads)
        env.pop('OPENBLAS_CORETYPE', None)
        if runtime == 'numpy_avx512':
            # numpy's OpenBLAS may not know the CPU and fall back to AVX2 kernels
            # (0.3.31 does on Zen 5); this is the best numpy can do here.
            env['OPENBLAS_CORETYPE'] = 'SkylakeX'
    return env


def start_worker(runtime, threads, case_name, setup):
    if runtime in ('mxlite', 'mxnet'):
        library = setup['mxlite_lib']['pinned'] if runtime == 'mxlite' else setup['mxnet_lib']
        python, extra = (setup['bench_python'] if runtime == 'mxlite'
                         else setup['oracle_python']), ['capi', library]
    else:
        python, extra = setup['bench_python'], [runtime.split('_')[0]]
    log_dir = os.path.join(WORK_DIR, 'logs')
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, '%s-%s-%dt.log' % (case_name, runtime, threads))
    return Worker(runtime, [python, WORKER] + extra, worker_env(runtime, threads), log_path,
                  setup['niceness'])


# --------------------------------------------------------------------------
# the rest of the machine
# --------------------------------------------------------------------------

def cpu_busy_seconds():
    """CPU time the whole machine has spent busy (all cores, /proc/stat), or None."""
    try:
        with open('/proc/stat', encoding='ascii') as f:
            fields = f.readline().split()
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal: all but idle and iowait,
    # steal included (a hypervisor's other guests take the core just the same).
    ticks = [int(value) for value in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / float(os.sysconf('SC_CLK_TCK'))


def own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wait_for_quiet(max_wait_s, threshold_cores=0.15, sample_s=0.5):
    """Wait (at most max_wait_s) until other processes use under threshold_cores.

    The machine may be shared (builds, test runs); a 2-thread measurement on
    2 cores is meaningless while something else runs. Returns the seconds waited.
    """
    start = time.time()
    while True:
        busy0, own0 = cpu_busy_seconds(), own_cpu_seconds()
        if busy0 is None:
            return 0.0
        time.sleep(sample_s)
        others = (cpu_busy_seconds() - busy0 - (own_cpu_seconds() - own0)) / sample_s
        waited = time.time() - start
        if others < threshold_cores or waited >= max_wait_s:
            return waited


# --------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------

def rotate(items, by):
    by %= len(items)
    return items[by:] + items[:by]


class CaseMeasurement:
    """The workers of one case at one thread count, and what they measured."""

    def __init__(self, case, runtimes, threads, plan, setup):
        self.case, self.threads, self.plan, self.setup = case, threads, plan, setup
        self.runtimes = runtimes
        self.results = {runtime: {'error': None, 'times': [], 'warmup': []}
                        for runtime in runtimes}
        self.workers = {}

    def live(self):
        return [r for r in self.runtimes if self.results[r]['error'] is None]

    def ask(self, runtime, **message):
        """One request; a failure marks that runtime failed and returns None."""
        try:
            return self.workers[runtime].request(**message)
        except BenchError as error:
            self.results[runtime]['error'] = str(error)
            print('  warning: %s' % error, file=sys.stderr, flush=True)
            return None

    def start(self):
        for runtime in self.runtimes:
            try:
                self.workers[runtime] = start_worker(runtime, self.threads, self.case['name'],
                                                     self.setup)
            except BenchError as error:
                self.results[runtime]['error'] = str(error)
                continue
            loaded = self.ask(runtime, cmd='load', model=self.case, threads=self.threads)
            if loaded:
                self.results[runtime].update(
                    load_s=loaded['load_s'], rss_start_kb=self.workers[runtime].ready['maxrss_kb'],
                    rss_before_load_kb=loaded['rss_before_kb'])

    def one_round(self, index, into):
        """One turn per runtime (plan['turn'] inferences), in an order that
        rotates with index."""
        for runtime in rotate(self.live(), index):
            reply = self.ask(runtime, cmd='run', n=self.plan['turn'])
            if reply:
                into.setdefault(runtime, []).extend(
                    zip(reply['times'], reply['preempted'], reply['cpu']))
            time.sleep(self.plan['gap_s'])

    def workers_cpu(self):
        total = 0.0
        for runtime in self.live():
            stats = self.ask(runtime, cmd='stats')
            if stats:
                total += stats['cpu_s']
        return total

    def measure(self, rounds, extend_s):
        """Run the rounds; return the cores other processes used meanwhile.

        An inference during which the worker was preempted (an involuntary
        context switch: another process took the core) measured the machine,
        not the runtime. Such samples are set aside, and rounds go on until every
        runtime has `rounds` clean ones, for at most extend_s more than the
        planned rounds took (and at most 4x the rounds). A runtime with fewer
        than half its rounds clean is reported from all its samples, flagged."""
        samples = {}
        workers0, busy0, own0 = self.workers_cpu(), cpu_busy_seconds(), own_cpu_seconds()
        start = time.time()
        planned_s = None
        index = 0
        while self.live():
            self.one_round(index, samples)
            index += 1
            if index < rounds:
                continue
            if planned_s is None:
                planned_s = time.time() - start
            clean_enough = all(sum(1 for sample in samples.get(r, []) if sample[1] == 0)
                               >= rounds * self.plan['turn'] for r in self.live())
            if (clean_enough or index >= 4 * rounds or
                    time.time() - start >= planned_s + extend_s):
                break
        workers1, wall = self.workers_cpu(), time.time() - start
        for runtime, measured in samples.items():
            result = self.results[runtime]
            clean = [t for t, switches, _ in measured if switches == 0]
            result['samples'] = len(measured)
            result['preempted_samples'] = len(measured) - len(clean)
            result['disturbed'] = len(clean) < max(1, rounds * self.plan['turn'] // 2)
            result['times'] = [t for t, _, _ in measured] if result['disturbed'] else clean
            result['cpu_times'] = [cpu for _, _, cpu in measured]
        if busy0 is None or wall <= 0:
            return None
        others = cpu_busy_seconds() - busy0 - (workers1 - workers0) - (own_cpu_seconds() - own0)
        return max(0.0, others / wall)

    def run(self):
        plan = self.plan
        waited = wait_for_quiet(plan['quiet_wait_s']) if plan['quiet_wait_s'] > 0 else 0.0
        # A machine that stayed busy through the wait will not be quiet a few
        # seconds later either: then measure the planned rounds only.
        extend_s = plan['quiet_wait_s'] if waited < plan['quiet_wait_s'] else 0.0
        try:
            self.start()
            warmup = {}
            for index in range(plan['warmup']):
                self.one_round(index, warmup)
            for runtime in self.live():
                self.results[runtime]['warmup'] = [sample[0] for sample in warmup.get(runtime, [])]
                checked = self.ask(runtime, cmd='check')
                if checked:
                    self.results[runtime]['rel_err'] = checked['rel_err']
            if plan['iters']:
                rounds = plan['iters']
            else:
                per_round = sum(statistics.median(self.results[r]['warmup'] or [0.0]) *
                                plan['turn'] + plan['gap_s'] for r in self.live())
                rounds = math.ceil(plan['budget_s'] / max(per_round, 1e-6))
                rounds = max(plan['min_iters'], min(plan['max_iters'], rounds))
            background = self.measure(rounds, extend_s)
            for runtime in self.live():
                stats = self.ask(runtime, cmd='stats')
                if stats:
                    self.results[runtime]['maxrss_kb'] = stats['maxrss_kb']
        finally:
            for worker in self.workers.values():
                worker.close()
        for result in self.results.values():
            if result['times'] and result['error'] is None:
                result['median_ms'] = 1000.0 * statistics.median(result['times'])
                result['min_ms'] = 1000.0 * min(result['times'])
                result['cpu_median_ms'] = 1000.0 * statistics.median(result['cpu_times'])
        return self.results, {'others_cores': background, 'waited_s': waited}


def measure_case(case, runtimes, threads, plan, setup):
    """Measure one case at one thread count: ({runtime: result}, machine load info)."""
    return CaseMeasurement(case, runtimes, threads, plan, setup).run()


def load_warnings(name, threads, results, load):
    """One line per case measured on a busy machine, or none."""
    others = load['others_cores']
    disturbed = ['%s %d/%d' % (LABELS[r], res['preempted_samples'], res['samples'])
                 for r, res in results.items() if res.get('disturbed') and res.get('samples')]
    busy = others is not None and others > BACKGROUND_WARN_CORES
    if not busy and not disturbed:
        return []
    text = '%s at %d thread%s:' % (name, threads, '' if threads == 1 else 's')
    if busy:
        text += ' other processes kept %.2f cores busy;' % others
    if disturbed:
        text += (' inferences preempted by other processes: %s (too few clean ones: the '
                 'median includes them)' % ', '.join(disturbed))
    return [text.rstrip(';')]


def output_warnings(case, results):
    warnings = []
    for runtime, result in results.items():
        if 'rel_err' not in result:
            continue
        limit = case['rtol'] if runtime == 'mxlite' else PEER_RTOL
        if not result['rel_err'] <= limit:
            warnings.append('%s on %s: output differs from MXNet reference by %.3g '
                            '(max |diff| / max |expected|; limit %g)' % (
                                LABELS[runtime], case['name'], result['rel_err'], limit))
    return warnings


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------

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


def ratio_cell(results, peers):
    mine = results.get('mxlite', {}).get('median_ms')
    medians = [(results[p]['median_ms'], p) for p in peers
               if p in results and results[p].get('median_ms') is not None]
    if mine is None or not medians:
        return '–'
    best, peer = min(medians)
    return '%.2f (%s)' % (mine / best, LABELS[peer])


def goal_summary(report, models):
    """How many (model, threads) rows meet the issue's goal of <= 0.85x the best peer."""
    met, total = 0, 0
    for model in models:
        for t in report['threads']:
            results = report['results'][model].get(str(t), {})
            mine = results.get('mxlite', {}).get('median_ms')
            peers = [res['median_ms'] for r, res in results.items()
                     if r != 'mxlite' and res.get('median_ms') is not None]
            if mine is None or not peers:
                continue
            total += 1
            met += mine <= 0.85 * min(peers)
    return 'Goal met (mxlite ≤ 0.85 × the faster peer) in %d of %d model and thread rows.' % (
        met, total)


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


def machine_description():
    fields = lscpu_fields()
    flags = set(fields.get('Flags', '').split())
    isa = [name for name in ('avx2', 'fma', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni',
                             'asimd') if name in flags]
    model = fields.get('Model name') or platform.processor() or platform.machine()
    if fields.get('CPU family'):
        model += ' (family %s, model %s)' % (fields['CPU family'], fields.get('Model', '?'))
    return '%s, %d cores, %s; %s' % (model, os.cpu_count() or 0, ' '.join(isa) or 'no SIMD flags',
                                     platform.platform())


def git_description(args):
    if args.commit_built:
        return '%s (built from a clean export of that commit)' % args.commit_built
    commit = git('rev-parse', '--short', 'HEAD') or 'unknown'
    if args.library_given:
        return 'HEAD %s, library %s' % (commit, args.library)
    dirty = git('status', '--porcelain', '--', 'predict', 'amalgamation')
    return commit + (' with uncommitted changes under predict/' if dirty else '')


def render(report):
    args = report['args']
    threads = report['threads']
    lines = ['## ' + SECTION, '']
    if args['note']:
        lines += [args['note'], '']
    lines += [
        'Command: `%s`' % report['command'],
        '',
        '- date: %s; machine: %s' % (report['date'], report['machine']),
        '- mxlite: commit %s, library sha256 %s…; threads: MXLITE_NUM_THREADS' % (
            report['commit'], report['mxlite_lib']['sha256']),
        '- MXNet %s: pip wheel, C predict API of libmxnet.so, oneDNN on (default subgraph '
        'fusion), MXNET_ENGINE_TYPE=NaiveEngine, threads: OMP_NUM_THREADS' % (
            report['versions'].get('mxnet')),
        '- ONNX Runtime %s: models from mx.onnx.export_model (onnx %s) with initializers '
        'removed from the graph inputs, and gamma = 1 written for BatchNorm with fix_gamma '
        '(the exporter ignores the flag; resnet50_v2 differs by 7%% without it); '
        'intra_op_num_threads = threads, inter_op 1, ORT_ENABLE_ALL, sequential' % (
            report['versions'].get('onnxruntime'), report['versions'].get('onnx')),
        '- workers at niceness %d' % args['nice'] if args['nice'] else None,
        '- batch 1, float32; one inference = set input + forward + copy output; the runtimes '
        'take turns of %d consecutive inferences, after %d warm-up rounds; the median is over %s '
        'inferences per runtime, leaving out those that another process preempted when '
        'enough others remain; thread counts %s' % (
            args.get('turn', 1), args['warmup'], report['rounds_text'],
            ', '.join(map(str, threads))),
        '']
    lines = [line for line in lines if line is not None]
    models = [m for m in report['models'] if m in report['results']]
    if models:
        header = ['model']
        for t in threads:
            header += ['%s %dt' % (LABELS[r], t) for r in report['runtimes']]
            header += ['mxlite / best %dt' % t, 'others %dt' % t]
        rows = []
        for model in models:
            row = [model]
            for t in threads:
                results = report['results'][model].get(str(t), {})
                row += [cell(results.get(r)) for r in report['runtimes']]
                row += [ratio_cell(results, [r for r in report['runtimes'] if r != 'mxlite']),
                        cores(report['background'].get(model, {}).get(str(t)))]
            rows.append(row)
        lines += ['Median latency (ms), mxlite / the faster peer (≤ 0.85 is the goal), and '
                  '"others": the cores other processes on the machine kept busy meanwhile '
                  '(/proc/stat; near 0 for a clean measurement):', '',
                  table(header, rows), '']
        if len(report['runtimes']) > 1:
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
            header = ['model'] + [LABELS[r] for r in report['runtimes']] + ['mxlite / best']
            rows = []
            for model in models:
                results = report['results'][model].get('1', {})
                cpu = {r: {'median_ms': res.get('cpu_median_ms')} for r, res in results.items()
                       if res.get('error') is None}
                rows.append([model] + [cell(cpu.get(r)) for r in report['runtimes']] +
                            [ratio_cell(cpu, [r for r in report['runtimes'] if r != 'mxlite'])])
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
    if report.get('dot'):
        dot = report['dot']
        header = ['threads'] + [LABELS[r] for r in dot['runtimes']] + ['mxlite / numpy',
                                                                        'others']
        rows = []
        for t in threads:
            results = dot['results'].get(str(t), {})
            rows.append([str(t)] + [cell(results.get(r)) for r in dot['runtimes']] +
                        [ratio_cell(results, ['numpy', 'numpy_avx512']),
                         cores(report['background'].get(dot['name'], {}).get(str(t)))])
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


def replace_section(text, title, body):
    """Replace the '## title' section of a markdown file (up to the next '## ')."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == '## ' + title), None)
    if start is None:
        return text.rstrip('\n') + '\n\n' + body.rstrip('\n') + '\n'
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('## ')),
               len(lines))
    tail = lines[end:]
    merged = lines[:start] + body.rstrip('\n').splitlines() + ([''] + tail if tail else [])
    return '\n'.join(merged).rstrip('\n') + '\n'


def write_benchmarks(path, body):
    text = BENCHMARKS_INTRO
    if os.path.exists(path):  # read right before writing: others own other sections
        with open(path, encoding='utf-8') as f:
            text = f.read()
    updated = replace_section(text, SECTION, body)
    with open(path + '.tmp', 'w', encoding='utf-8') as f:
        f.write(updated)
    os.replace(path + '.tmp', path)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--models', default=','.join(DEFAULT_MODELS),
                        help='comma-separated zoo models (default: %(default)s)')
    parser.add_argument('--threads', default='1,2', help='thread counts (default: %(default)s)')
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
    parser.add_argument('--gap-ms', type=float, default=10.0,
                        help='pause after each turn (default: %(default)s)')
    parser.add_argument('--quiet-wait-s', type=float, default=10.0,
                        help='per model and thread count, wait up to this long for other '
                             'processes to leave the CPUs idle before measuring, and measure '
                             'up to this much longer to replace inferences that other processes '
                             'preempted (default: %(default)s; 0: never)')
    parser.add_argument('--nice', type=int, default=0,
                        help='niceness of the workers; negative (root only) favours them over '
                             'other processes on a shared machine (default: 0)')
    parser.add_argument('--dot', type=int, default=2048,
                        help='size of the dot case; 0 leaves it out (default: %(default)s)')
    parser.add_argument('--quick', action='store_true',
                        help='a rough look: 1 warm-up round, about 1 s per model')
    parser.add_argument('--library', help='libmxlite.so to measure (default: MXLITE_LIBRARY, '
                                          'else build/libmxlite.so)')
    parser.add_argument('--commit', help='measure a library built from this commit (a clean '
                                         'git archive, built under build/bench/builds) instead')
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
    args.runtime_list = [r for r in args.runtimes.split(',') if r]
    unknown = [r for r in args.runtime_list if r not in RUNTIMES]
    if unknown or not args.runtime_list or args.runtime_list[0] != 'mxlite':
        parser.error('--runtimes: a list starting with mxlite from %s' % ','.join(RUNTIMES))
    if not args.thread_list or min(args.thread_list) < 1:
        parser.error('--threads: positive integers')
    return args


def command_line(argv):
    return ' '.join(['python3', 'scripts/bench.py'] + [shlex.quote(a) for a in argv])


def rerender(args):
    with open(args.from_json, encoding='utf-8') as f:
        report = json.load(f)
    if args.note:  # a note written after the run replaces the run's own
        report.setdefault('args', {})['note'] = args.note
    body = render(report)
    print(body)
    if not args.no_write:
        write_benchmarks(args.benchmarks_file, body)
        print('wrote the "%s" section of %s' % (SECTION, args.benchmarks_file))
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
             'mxlite_lib': pin_mxlite_library(args), 'niceness': args.nice}
    if 'mxnet' in args.runtime_list or args.dot:
        setup['mxnet_lib'] = mxnet_library(args.oracle_python)
    cases = ensure_zoo(args, args.model_list) if args.model_list else {}
    if need_ort and cases:
        ensure_onnx_models(args, cases)
    dot_case = ensure_dot_case(args) if args.dot else None

    plan = {'warmup': args.warmup, 'iters': args.iters, 'budget_s': args.budget_s,
            'min_iters': args.min_iters, 'max_iters': args.max_iters,
            'gap_s': args.gap_ms / 1000.0, 'quiet_wait_s': args.quiet_wait_s,
            'turn': args.turn}
    report = {'command': command_line(argv), 'date': datetime.datetime.now(
        datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'), 'machine': machine_description(),
        'commit': git_description(args), 'mxlite_lib': setup['mxlite_lib'], 'versions': versions,
        'threads': args.thread_list, 'runtimes': args.runtime_list, 'models': args.model_list,
        'args': {'warmup': args.warmup, 'note': args.note, 'nice': args.nice,
                 'turn': args.turn},
        'results': {}, 'background': {}, 'warnings': [],
        'load_warnings': [], 'results_json': args.results_json}
    rounds_seen = []
    for model in args.model_list:
        for threads in args.thread_list:
            print('== %s, %d thread%s' % (model, threads, '' if threads == 1 else 's'),
                  flush=True)
            results, load = measure_case(cases[model], args.runtime_list, threads, plan, setup)
            report['results'].setdefault(model, {})[str(threads)] = results
            report['background'].setdefault(model, {})[str(threads)] = load
            report['load_warnings'] += load_warnings(model, threads, results, load)
            report['warnings'] += output_warnings(cases[model], results)
            report['warnings'] += ['%s on %s at %d thread%s failed: %s' % (
                LABELS[r], model, threads, '' if threads == 1 else 's', res['error'])
                for r, res in results.items() if res['error']]
            rounds_seen += [len(res['times']) for res in results.values() if res['times']]
            print('   ' + '  '.join('%s %s ms' % (LABELS[r], cell(res))
                                    for r, res in results.items()), flush=True)
    if dot_case:
        dot_runtimes = ['mxlite'] + [r for r in ('mxnet',) if r in args.runtime_list] + ['numpy']
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
        write_benchmarks(args.benchmarks_file, body)
        print('wrote the "%s" section of %s' % (SECTION, args.benchmarks_file))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except BenchError as error:
        print('bench.py: %s' % error, file=sys.stderr)
        sys.exit(1)
