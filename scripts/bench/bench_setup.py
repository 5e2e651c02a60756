"""scripts/bench.py: constants, environments, libraries and the cases to measure."""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys


# The pause after each turn: at one thread no pool has workers; above one it
# is longer than the thread pools spin after their work (see scripts/bench.py).
SINGLE_THREAD_GAP_MS = 10.0
MULTI_THREAD_GAP_MS = 150.0


def turn_gap_ms(gap_ms, threads):
    """The pause after each turn at `threads` threads: gap_ms (--gap-ms) if given."""
    if gap_ms is not None:
        return gap_ms
    return SINGLE_THREAD_GAP_MS if threads == 1 else MULTI_THREAD_GAP_MS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_TOOLS = os.path.join(ROOT, 'scripts', 'bench')
WORKER = os.path.join(BENCH_TOOLS, 'worker.py')
ORACLE_TOOLS = os.path.join(BENCH_TOOLS, 'oracle_tools.py')
FMA_PEAK_SOURCE = os.path.join(BENCH_TOOLS, 'fma_peak.cc')
ROUND_TRIP_SOURCE = os.path.join(BENCH_TOOLS, 'core_latency.cc')
BUILD = os.path.join(ROOT, 'build')
WORK_DIR = os.path.join(BUILD, 'bench')

DEFAULT_MODELS = ['resnet18_v1', 'mobilenet1.0', 'mobilenetv2_1.0', 'squeezenet1.1',
                  'densenet121', 'inceptionv3', 'resnet50_v2', 'vgg11']
RUNTIMES = ['mxlite', 'mxnet', 'ort']
LABELS = {'mxlite': 'mxlite', 'mxnet': 'MXNet', 'ort': 'ORT', 'numpy': 'numpy',
          'numpy_avx512': 'numpy, AVX-512 forced', 'baseline': 'mxlite (baseline)'}
# mxlite's own runtimes: the library under test and, with --baseline-*, another one.
MXLITE_RUNTIMES = ('mxlite', 'baseline')
ONNX_VERSION = '1.14.1'
SECTION = 'CPU performance'
# Agreement with MXNet's reference output (max |diff| / max |expected|): mxlite
# must meet the fixture's rtol; oneDNN and ONNX Runtime round differently
# (fused BatchNorm, other summation orders), so they get a looser bound.
PEER_RTOL = 1e-3
# Other processes using more than this many cores during a measurement make it suspect.
BACKGROUND_WARN_CORES = 0.2
# A cache-line round trip between the two CPUs above this means the host placed
# them apart (another core complex or socket; scripts/bench/core_latency.cc).
FAR_ROUND_TRIP_NS = 150.0


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


def build_library_at(revision, option='--commit'):
    """Build libmxlite.so from a clean export of a commit (not the working tree)."""
    commit = git('rev-parse', '--verify', revision + '^{commit}')
    if not commit:
        raise BenchError('%s %s: no such commit' % (option, revision))
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
    return pin_library(path)


def pin_baseline_library(args):
    """The baseline library (--baseline-library, or built at --baseline-commit), pinned,
    with 'commit' saying where it came from; None without a baseline."""
    if args.baseline_commit:
        path, commit = build_library_at(args.baseline_commit, '--baseline-commit')
        described = '%s (built from a clean export of that commit)' % commit
    elif args.baseline_library:
        path = args.baseline_library
        if not os.path.exists(path):
            raise BenchError('--baseline-library %s is missing' % path)
        described = 'library %s' % path
    else:
        return None
    pinned = pin_library(path)
    pinned['commit'] = described
    return pinned


def pin_library(path):
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


def ensure_onnx_models(args, cases, batch=1):
    """Export (once per checkpoint, batch and exporter version) the ONNX models."""
    out_dir = os.path.join(WORK_DIR, 'onnx')
    os.makedirs(out_dir, exist_ok=True)
    tools_sha = file_sha256(ORACLE_TOOLS)
    suffix = '-b%d' % batch if batch != 1 else ''
    stale = []
    for name, case in cases.items():
        info = os.stat(case['params'])
        stamp = {'tools': tools_sha, 'params_size': info.st_size,
                 'params_mtime_ns': info.st_mtime_ns, 'symbol_sha': file_sha256(case['symbol'])}
        case['onnx'] = os.path.join(out_dir, name + suffix + '.onnx')
        case['onnx_stamp'] = stamp
        if not (os.path.exists(case['onnx']) and stamp_matches(case['onnx'] + '.json', stamp)):
            stale.append(name)
    if stale:
        print('== exporting to ONNX%s: %s' % (' at batch %d' % batch if batch != 1 else '',
                                              ' '.join(stale)), flush=True)
        run_checked([args.oracle_python, ORACLE_TOOLS, 'export-onnx', args.zoo, out_dir] +
                    (['--batch', str(batch)] if batch != 1 else []) + stale,
                    'ONNX export', stdout=sys.stderr, stderr=subprocess.DEVNULL)
        for name in stale:
            write_stamp(cases[name]['onnx'] + '.json', cases[name]['onnx_stamp'])


def batch_cases(cases, batch):
    """The zoo cases at another batch: the same files, the input's first axis `batch`, and a
    name of their own (for logs); the worker repeats the fixture's image to fill the batch."""
    out = {}
    for name, case in cases.items():
        copy = dict(case, batch=batch, name='%s-b%d' % (name, batch))
        copy['input_shape'] = [batch] + list(case['input_shape'][1:])
        out[name] = copy
    return out


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


# --------------------------------------------------------------------------
# the machine: FMA peak and CPU placement
# --------------------------------------------------------------------------

def build_tool(source, work_dir):
    """Compile one of scripts/bench's single-file C++ probes; its path."""
    os.makedirs(work_dir, exist_ok=True)
    exe = os.path.join(work_dir, os.path.splitext(os.path.basename(source))[0])
    run_checked(['g++', '-std=c++17', '-O2', source, '-o', exe, '-lpthread'],
                'building ' + os.path.basename(source))
    return exe


def fma_peak(work_dir, threads=1, isa=''):
    """{"isa", "threads", "gflops"}: the FMA rate of one core (or threads), measured now,
    with the widest vectors the CPU has or the ISA named ("avx512", "avx2"; "isa": None
    where the CPU lacks it)."""
    exe = build_tool(FMA_PEAK_SOURCE, work_dir)
    result = subprocess.run([exe, str(threads)] + ([isa] if isa else []), capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise BenchError('fma_peak failed: ' + result.stderr[-500:])
    return json.loads(result.stdout)


def fma_peaks(work_dir):
    """The one-core FMA peak of each x86 vector width the CPU has: {isa: GFLOP/s}."""
    peaks = {}
    for isa in ('avx512', 'avx2'):
        report = fma_peak(work_dir, 1, isa)
        if report.get('isa'):
            peaks[isa] = report['gflops']
    return peaks


def round_trip_ns(probe, seconds=0.3):
    """The cache-line round trip between CPUs 0 and 1 now (ns), or None without two CPUs."""
    if (os.cpu_count() or 1) < 2:
        return None
    result = subprocess.run([probe, str(seconds)], capture_output=True, text=True)
    if result.returncode != 0:
        return None
    return json.loads(result.stdout)['round_trip_ns']

