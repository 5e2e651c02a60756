"""scripts/bench.py: the worker processes, the machine's load, and the measuring."""

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

from bench_setup import *  # noqa: F401,F403


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


# bench.py --isa: the settings that cap each runtime's instruction set (ONNX
# Runtime has none; its kernels follow CPUID).
ISA_CAPS = {'avx2': {'mxlite': ('MXLITE_ISA', 'avx2'), 'mxnet': ('DNNL_MAX_CPU_ISA', 'AVX2')}}


def worker_env(runtime, threads, isa=None):
    env = dict(os.environ)
    # The thread count of each runtime, and of nothing else in its process.
    env['OMP_NUM_THREADS'] = str(threads)
    env['OPENBLAS_NUM_THREADS'] = '1'
    # Caps come from --isa only, never from the caller's environment.
    for name in ('MXLITE_ISA', 'DNNL_MAX_CPU_ISA'):
        env.pop(name, None)
    caps = ISA_CAPS.get(isa, {})
    if runtime in MXLITE_RUNTIMES:
        env['MXLITE_NUM_THREADS'] = str(threads)
        if 'mxlite' in caps:
            env[caps['mxlite'][0]] = caps['mxlite'][1]
    elif runtime == 'mxnet':
        # MXNet as a user gets it: oneDNN and its graph fusion stay on.
        for name in ('MXNET_MKLDNN_ENABLED', 'MXNET_SUBGRAPH_BACKEND'):
            env.pop(name, None)
        env['MXNET_ENGINE_TYPE'] = 'NaiveEngine'
        env['OPENBLAS_NUM_THREADS'] = str(threads)
        if 'mxnet' in caps:
            env[caps['mxnet'][0]] = caps['mxnet'][1]
    elif runtime in ('numpy', 'numpy_avx512'):
        env['OPENBLAS_NUM_THREADS'] = str(threads)
        env.pop('OPENBLAS_CORETYPE', None)
        if runtime == 'numpy_avx512':
            # numpy's OpenBLAS may not know the CPU and fall back to AVX2 kernels
            # (0.3.31 does on Zen 5); this is the best numpy can do here.
            env['OPENBLAS_CORETYPE'] = 'SkylakeX'
    return env


def start_worker(runtime, threads, case_name, setup):
    if runtime in MXLITE_RUNTIMES + ('mxnet',):
        library = (setup['mxnet_lib'] if runtime == 'mxnet' else
                   setup['%s_lib' % runtime]['pinned'])
        python, extra = (setup['bench_python'] if runtime in MXLITE_RUNTIMES
                         else setup['oracle_python']), ['capi', library]
    else:
        python, extra = setup['bench_python'], [runtime.split('_')[0]]
    log_dir = os.path.join(WORK_DIR, 'logs')
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, '%s-%s-%dt.log' % (case_name, runtime, threads))
    return Worker(runtime, [python, WORKER] + extra,
                  worker_env(runtime, threads, setup.get('isa')), log_path, setup['niceness'])


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

    def gap_s(self):
        """The pause after a turn: longer than the pools spin, above one thread."""
        return turn_gap_ms(self.plan['gap_ms'], self.threads) / 1000.0

    def one_round(self, index, into):
        """One turn per runtime (plan['turn'] inferences), in an order that
        rotates with index, reversed every other round (so each runtime
        follows each of the others, whose pools may still spin, as often)."""
        order = rotate(self.live(), index // 2)
        for runtime in (order[::-1] if index % 2 else order):
            reply = self.ask(runtime, cmd='run', n=self.plan['turn'])
            if reply:
                into.setdefault(runtime, []).extend(
                    zip(reply['times'], reply['preempted'], reply['cpu']))
            time.sleep(self.gap_s())

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

    def round_trip(self):
        """Where the host has the CPUs now (multi-thread cases only): the round trip in ns."""
        probe = self.setup.get('round_trip_probe')
        return round_trip_ns(probe) if probe and self.threads > 1 else None

    def run(self):
        plan = self.plan
        waited = wait_for_quiet(plan['quiet_wait_s']) if plan['quiet_wait_s'] > 0 else 0.0
        trips = [self.round_trip()]
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
                                plan['turn'] + self.gap_s() for r in self.live())
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
        trips.append(self.round_trip())
        for result in self.results.values():
            if result['times'] and result['error'] is None:
                result['median_ms'] = 1000.0 * statistics.median(result['times'])
                result['min_ms'] = 1000.0 * min(result['times'])
                result['cpu_median_ms'] = 1000.0 * statistics.median(result['cpu_times'])
        return self.results, {'others_cores': background, 'waited_s': waited,
                              'round_trip_ns': [t for t in trips if t is not None] or None}


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
        limit = case['rtol'] if runtime in MXLITE_RUNTIMES else PEER_RTOL
        if not result['rel_err'] <= limit:
            warnings.append('%s on %s: output differs from MXNet reference by %.3g '
                            '(max |diff| / max |expected|; limit %g)' % (
                                LABELS[runtime], case['name'], result['rel_err'], limit))
    return warnings


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
