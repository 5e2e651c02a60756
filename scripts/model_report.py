#!/usr/bin/env python3
"""Check the models scripts/model_families.py exported against mxlite and write docs/models.md.

Runs under any Python with numpy (the test venv, or the oracle venv): mxlite is reached through
its C API with tests/capi.py (ctypes), from MXLITE_LIBRARY or the installed package. Usage::

    model_report.py OUTDIR [--out docs/models.md] [--prune] [--timeout S]

Each exported model is checked in a child process (a crash is reported, not inherited): create
the predictor from NAME-symbol.json + NAME-0000.params, feed NAME-io.npz's inputs and compare
every output with MXNet's, ``max|ours - MXNet| <= 1e-4 * max|MXNet|``. A model then

* matches: every output within the tolerance;
* differs after NMS / top-k ties: an output differs, but every tensor entering the model's
  NMS and top-k operators matches MXNet's (computed in the oracle venv, --oracle-python), or
  every tensor entering the first of them (in graph order) whose output differs does: the
  differences come from the order of values a float32 rounding apart;
* ill-conditioned: an output differs, MXNet's own float32 output is more than RTOL from its
  float64 one (run in the oracle venv), and mxlite's is within ILL_CONDITIONED_FACTOR times
  MXNet's error of the float64 output;
* gives wrong numbers (!): it runs, and an output differs (or has another shape);
* fails to load: MXPredCreate or MXPredForward returns an error (the operators the symbol
  uses that mxlite's registry, predict/operators/op_list.inc, does not hold are listed);
* crashes (!): the child process died.

With ``--record docs/models.json`` the results are merged into a record of every model's
latest result (a model this run skipped keeps its earlier row), and ``--out`` is written from
the record: the zoo is checked in parts, one run per part (``--run`` labels it).

Results are kept in OUTDIR/report.json, so a run can be repeated while model_families.py
--all is still exporting; ``--prune`` deletes a model's checkpoint once it is checked (the
full zoo does not fit on a small disk), unless it gives wrong numbers or crashes.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests'))

RTOL = 1e-4
SUFFIXES = ('-symbol.json', '-0000.params', '-io.npz')


def known_operators(op_list):
    """Operator names (and aliases) a symbol file may use, from the registry's list."""
    text = open(op_list, encoding='utf-8').read()
    names = set(re.findall(r'^MXL_OPERATOR\("([^"]+)"', text, re.M))
    names |= set(re.findall(r'^MXL_OPERATOR_ALIAS\("([^"]+)"', text, re.M))
    return names


def relative_error(ours, theirs):
    """max |ours - theirs| / max |theirs|, in float64 (0 for empty arrays)."""
    if not theirs.size:
        return 0.0
    theirs = theirs.astype(np.float64)
    return float(np.max(np.abs(ours.astype(np.float64) - theirs))) / max(
        float(np.max(np.abs(theirs))), 1e-30)


def load_export(prefix):
    """An exported model's symbol text, params bytes, the io.npz and its inputs by name."""
    with open(prefix + '-symbol.json', encoding='utf-8') as f:
        symbol_json = f.read()
    with open(prefix + '-0000.params', 'rb') as f:
        params = f.read()
    io = np.load(prefix + '-io.npz')
    inputs = {k.split(':', 1)[1]: io[k] for k in io.files if k.startswith('input:')}
    return symbol_json, params, io, inputs


def check(prefix, reference=None):
    """Compare one model with MXNet's outputs (or those in the npz file reference): a dict with
    status and details."""
    from capi import API, CAPIError, load_library
    api = API(load_library())
    symbol_json, params, io, inputs = load_export(prefix)
    if reference is not None:
        io = np.load(reference)
    expected = [io['output:%d' % i] for i in range(sum(k.startswith('output:') for k in io.files))]
    try:
        handle = api.create(symbol_json, params, {k: v.shape for k, v in inputs.items()})
    except CAPIError as e:
        return {'status': 'fails to load', 'error': str(e).strip().splitlines()[0][:300]}
    try:
        for name, value in inputs.items():
            api.set_input(handle, name, value.astype(np.float32))
        api.forward(handle)
        outputs = [api.output(handle, i) for i in range(len(expected))]
    except CAPIError as e:
        return {'status': 'fails to load', 'error': 'forward: ' + str(e).strip().splitlines()[0][:300]}
    finally:
        api.free(handle)
    errors, worst = [], None
    for i, (ours, theirs) in enumerate(zip(outputs, expected)):
        if ours.shape != theirs.shape:
            return {'status': 'wrong numbers', 'error': 'output %d: shape %s, MXNet %s' % (
                i, list(ours.shape), list(theirs.shape))}
        rel = relative_error(ours, theirs)
        errors.append(rel)
        if rel > RTOL and worst is None:
            theirs = theirs.astype(np.float64)
            worst = 'output %d: max abs error %.3g, max|MXNet| %.3g' % (
                i, np.max(np.abs(ours - theirs)), np.max(np.abs(theirs)))
    if worst:
        gap = closest_values(expected)
        if gap is not None:
            worst += '; closest distinct values in an output of MXNet: %.2g apart' % gap
        return {'status': 'wrong numbers', 'error': worst, 'rel_errors': errors}
    return {'status': 'matches', 'rel_errors': errors}


def closest_values(outputs):
    """The smallest gap between two distinct values of one float output (outputs of up to
    100 000 elements), or None. A detection model's top-k and NMS order boxes by score: where
    scores lie a float32 rounding apart, which box comes first (and what it suppresses) can
    differ between two correct implementations."""
    gaps = []
    for values in outputs:
        if values.dtype.kind != 'f' or not 2 <= values.size <= 100000:
            continue
        distinct = np.unique(values.astype(np.float64).ravel())
        if distinct.size >= 2:
            gaps.append(float(np.min(np.diff(distinct))))
    return min(gaps) if gaps else None


# Operators whose output depends on the order of values (NMS, top-k): where MXNet's values lie
# a float32 rounding apart, two correct implementations may keep or order other rows.
DECISION_OPS = ('_contrib_box_nms', '_contrib_box_non_maximum_suppression', 'topk',
                '_contrib_MultiBoxDetection')

# Runs in the oracle venv: MXNet's values of the tensors the decision operators take (reference
# kernels), saved to an .npz by internal output name.
DECISION_INPUTS_SNIPPET = r"""
import json, os, sys
os.environ['MXNET_MKLDNN_ENABLED'] = '0'
os.environ['MXNET_SUBGRAPH_BACKEND'] = 'NONE'
import numpy as np
import mxnet as mx
prefix, out_path, ops = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
sys.path.insert(0, sys.argv[4])
from model_families import zero_left_out_rois  # MXNet's goldens come from this graph
sym = zero_left_out_rois(mx.sym.load(prefix + '-symbol.json'))
nodes = json.loads(sym.tojson())['nodes']
internals = sym.get_internals()
available = set(internals.list_outputs())
names, steps = [], []  # steps: per decision operator in graph order, its inputs and output
for node in nodes:
    if node['op'] in ops:
        step = {'inputs': [], 'output': None}
        for src, index, _ in node['inputs']:
            name = nodes[src]['name'] + '_output'
            if nodes[src]['op'] != 'null' and index == 0 and name in available:
                step['inputs'].append(name)
                if name not in names:
                    names.append(name)
        # What the operator chose: its output, or (an output of several, which a predict
        # key cannot name) the first single output computed from it.
        me = nodes.index(node)
        candidates = [node['name'] + '_output'] + [
            other['name'] + '_output' for other in nodes
            if any(src == me and index == 0 for src, index, _ in other['inputs'])]
        for name in candidates:
            if name in available:
                step['output'] = name
                if name not in names:
                    names.append(name)
                break
        steps.append(step)
if not names:
    print(json.dumps([]))
    sys.exit(0)
group = mx.sym.Group([internals[n] for n in names])
params = mx.nd.load(prefix + '-0000.params')
args = {k[4:]: v for k, v in params.items() if k.startswith('arg:')}
aux = {k[4:]: v for k, v in params.items() if k.startswith('aux:')}
io = np.load(prefix + '-io.npz')
for key in io.files:
    if key.startswith('input:'):
        args[key[6:]] = mx.nd.array(io[key], dtype=io[key].dtype)
executor = group.bind(mx.cpu(), {k: v for k, v in args.items() if k in group.list_arguments()},
                      aux_states={k: v for k, v in aux.items()
                                  if k in group.list_auxiliary_states()})
values = executor.forward()
np.savez(out_path, **{n: v.asnumpy() for n, v in zip(names, values)})
print(json.dumps(steps))
"""


def check_decision_inputs(prefix, npz_path):
    """mxlite's values of the tensors saved in npz_path (internal outputs) against MXNet's."""
    from capi import API, CAPIError, load_library
    api = API(load_library())
    reference = np.load(npz_path)
    names = list(reference.files)
    symbol_json, params, _, inputs = load_export(prefix)
    keys = [n[:-len('_output')] for n in names]
    try:
        [handle] = api.create_with_options(symbol_json, params,
                                           {k: v.shape for k, v in inputs.items()}, {},
                                           output_keys=keys)
        for name, value in inputs.items():
            api.set_input(handle, name, value.astype(np.float32))
        api.forward(handle)
        outputs = [api.output(handle, i) for i in range(len(names))]
        api.free(handle)
    except CAPIError as e:
        return {'error': str(e).strip().splitlines()[0][:300]}
    errors = {}
    for name, ours in zip(names, outputs):
        theirs = reference[name]
        errors[name] = (relative_error(ours, theirs)
                        if ours.shape == theirs.shape and theirs.size else float('inf'))
    return {'rel_errors': errors}


def decision_check(prefix, oracle_python, timeout):
    """For a model whose outputs differ: do the tensors entering its NMS / top-k operators
    match MXNet's? A dict to update the model's result with (status 'differs after ties' when
    they all do), or {} when it has no such operators or the check cannot run."""
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        npz_path = os.path.join(scratch, 'decision_inputs.npz')
        try:
            run = subprocess.run([oracle_python, '-c', DECISION_INPUTS_SNIPPET, prefix, npz_path,
                                  ','.join(DECISION_OPS), HERE], capture_output=True, text=True,
                                 timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith('[')]
        if run.returncode != 0 or not lines or not json.loads(lines[-1]):
            return {}
        cmd = [sys.executable, os.path.abspath(__file__), '--check-internals', prefix, npz_path]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {}
        found = [ln for ln in proc.stdout.splitlines() if ln.startswith('{')]
        if proc.returncode != 0 or not found:
            return {}
        result = json.loads(found[-1])
    if 'rel_errors' not in result:
        return {}
    errors = result['rel_errors']
    steps = json.loads(lines[-1])
    entering = {name for step in steps for name in step['inputs']}
    if entering and all(errors[name] <= RTOL for name in entering):
        worst = max(errors[name] for name in entering)
        return {'status': 'differs after ties', 'decision_inputs': errors, 'decision_steps': steps,
                'error': 'the %d tensor(s) entering NMS / top-k match MXNet within %.2g; '
                         'outputs differ after them' % (len(entering), worst)}
    # An operator downstream of another NMS / top-k sees that one's choices: the first in graph
    # order whose output differs decides, if what entered it matches.
    for step in steps:
        if any(errors[name] > RTOL for name in step['inputs']):
            break
        if step['output'] and errors[step['output']] > RTOL and step['inputs']:
            worst = max(errors[name] for name in step['inputs'])
            return {'status': 'differs after ties', 'decision_inputs': errors,
                    'decision_steps': steps,
                    'error': 'the tensors entering the first NMS / top-k whose output differs '
                             '(%s) match MXNet within %.2g' % (step['output'], worst)}
    return {'decision_inputs': errors, 'decision_steps': steps}


# Runs in the oracle venv: MXNet's outputs in float64 (the same graph as the goldens).
FLOAT64_SNIPPET = r"""
import os, sys
os.environ['MXNET_MKLDNN_ENABLED'] = '0'
os.environ['MXNET_SUBGRAPH_BACKEND'] = 'NONE'
import numpy as np
prefix, out_path = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from model_families import zero_left_out_rois
from make_fixtures import load_checkpoint, run_symbol
sym, args, auxs = load_checkpoint(prefix)
io = np.load(prefix + '-io.npz')
inputs = {k[6:]: io[k] for k in io.files if k.startswith('input:')}
outs = run_symbol(zero_left_out_rois(sym), inputs, args, auxs, dtype=np.float64)
np.savez(out_path, **{'output:%d' % i: o for i, o in enumerate(outs)})
print('[saved]')
"""

# A model whose result MXNet's own float32 misses by more than RTOL is ill-conditioned: its 1e-4
# comparison says nothing. mxlite's float32 is then held to float64, within this many times
# MXNet's own float32 error (Winograd and other summation orders round differently).
ILL_CONDITIONED_FACTOR = 10


def conditioning_check(prefix, oracle_python, timeout):
    """For a model whose outputs differ: how far MXNet's own float32 outputs are from its float64
    ones, and mxlite's. A dict to update the model's result with (status 'ill-conditioned' when
    MXNet's own error exceeds RTOL and mxlite's is within ILL_CONDITIONED_FACTOR of it), or {}
    when the check cannot run (an operator without a float64 kernel)."""
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        npz_path = os.path.join(scratch, 'float64.npz')
        try:
            run = subprocess.run([oracle_python, '-c', FLOAT64_SNIPPET, prefix, npz_path, HERE],
                                 capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        if run.returncode != 0 or not os.path.exists(npz_path):
            return {}
        ours = check_in_child(prefix, timeout, reference=npz_path)
        if 'rel_errors' not in ours:
            return {}
        float64 = np.load(npz_path)
        mxnet32 = np.load(prefix + '-io.npz')
        theirs = []
        for key in float64.files:
            exact, rounded = float64[key], mxnet32[key]
            theirs.append(relative_error(rounded, exact) if exact.shape == rounded.shape else 0.0)
    mxnet_error, our_error = max(theirs), max(ours['rel_errors'])
    result = {'float64': {'mxnet': theirs, 'mxlite': ours['rel_errors']}}
    if mxnet_error > RTOL and our_error <= ILL_CONDITIONED_FACTOR * mxnet_error:
        result.update(status='ill-conditioned', error=(
            "MXNet's own float32 output is %.2g (relative) from its float64 one, mxlite's %.2g"
            % (mxnet_error, our_error)))
    return result


def check_in_child(prefix, timeout, reference=None):
    cmd = [sys.executable, os.path.abspath(__file__), '--check', prefix]
    if reference:
        cmd += ['--reference', reference]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {'status': 'fails to load', 'error': 'no result within %ds' % timeout}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('{')]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ['exit status %d' % proc.returncode])[-1]
        return {'status': 'crashes', 'error': 'exit status %d: %s' % (proc.returncode, tail[:300])}
    return json.loads(lines[-1])


FAMILY_ORDER = ['ImageNet classification', 'CIFAR classification', 'semantic segmentation',
                'object detection', 'pose estimation', 'video, 2-D (TSN)', 'video, 3-D convolution',
                'depth estimation', 'tracking', 'recurrent (plain symbol)', 'NLP (GluonNLP)',
                'quantized (int8)']
MARK = {'matches': 'matches', 'differs after ties': 'differs after NMS / top-k ties',
        'ill-conditioned': 'ill-conditioned (see below)',
        'wrong numbers': '**wrong numbers (!)**', 'fails to load': 'fails to load',
        'crashes': '**crashes (!)**'}


def rows_of(manifest, results, run):
    """One row per model of this run: family, status, input shapes, error, missing operators."""
    rows = {}
    for name, entry in manifest['models'].items():
        row = {'family': entry['family'], 'run': run, 'missing': [],
               'input': ', '.join('x'.join(str(d) for d in s)
                                  for s in entry.get('inputs', {}).values())}
        if entry['status'] != 'exported':
            row.update(status=entry['status'], error=entry.get('error', ''))
        else:
            res = results.get(name, {'status': 'not checked'})
            row.update(status=res['status'], error=res.get('error', ''),
                       missing=res.get('missing', []))
        rows[name] = row
    return rows


def merge_record(record, rows, run, run_info):
    """The record (docs/models.json) with this run's rows: a model this run skipped or did not
    check keeps its earlier row, so that a zoo too long for one sitting is checked in parts.
    Runs no row refers to any more are dropped."""
    models = dict(record.get('models', {}))
    for name, row in rows.items():
        earlier = models.get(name)
        if row['status'] in ('skipped', 'not checked') and earlier and \
                earlier['status'] not in ('skipped', 'not checked'):
            continue
        models[name] = row
    runs = dict(record.get('runs', {}), **{run: run_info})
    used = {row['run'] for row in models.values()}
    return {'note': 'GENERATED FILE, do not edit: written by scripts/model_report.py --record',
            'runs': {k: v for k, v in runs.items() if k in used}, 'models': models}


def write_markdown(path, rows, runs):
    families = {}
    for name, row in rows.items():
        families.setdefault(row['family'], []).append(name)
    order = [f for f in FAMILY_ORDER if f in families] + sorted(set(families) - set(FAMILY_ORDER))

    def row_status(name):
        return rows[name]['status'], rows[name].get('error', '')

    counts, blockers, only = {}, {}, {}
    for name in rows:
        status, _ = row_status(name)
        counts[status] = counts.get(status, 0) + 1
        missing = rows[name].get('missing', [])
        if status == 'fails to load':
            for op in missing:
                blockers[op] = blockers.get(op, 0) + 1
            if len(missing) == 1:
                only[missing[0]] = only.get(missing[0], 0) + 1

    out = ['<!-- GENERATED FILE, do not edit: written by scripts/model_report.py (see "How this '
           'was made" below) -->', '', '# Models that run', '',
           'Every model below was built by `scripts/model_families.py` with MXNet 1.9.1 and '
           'GluonCV 0.10.5.post0 / GluonNLP 0.10.0 from random weights (nothing downloaded; '
           'BatchNorm statistics, gamma/beta and biases randomised), run once on a small input '
           'and exported; `scripts/model_report.py` loaded the export with mxlite through the C '
           'API and compared each output with MXNet\'s: *matches* means '
           '`max |mxlite - MXNet| <= 1e-4 * max |MXNet|` for every output. Where an output '
           'differs and the model has NMS or top-k operators, the tensors entering them are '
           'compared too (MXNet\'s values from its internal outputs): *differs after NMS / '
           'top-k ties* means they all match to 1e-4, or those entering the first such operator '
           'whose output differs do (an R-CNN\'s RPN NMS chooses the rois its second NMS sees), '
           'and the outputs differ only after those operators, which order and suppress boxes by values that random weights leave a '
           'float32 rounding apart (the closest two are printed). Where an output still '
           'differs, MXNet runs the model again in float64: *ill-conditioned* means MXNet\'s own '
           'float32 output is more than 1e-4 from its float64 one (random weights in a very deep '
           'network amplify rounding), so the 1e-4 comparison says nothing, and mxlite\'s is '
           'within %d times MXNet\'s own error of the float64 output (both printed).'
           % ILL_CONDITIONED_FACTOR, '',
           '## Summary', '', '| status | models |', '|---|---:|']
    for status in ['matches', 'differs after ties', 'ill-conditioned', 'wrong numbers', 'crashes', 'fails to load',
                   'export failed',
                   'needs download', 'timed out', 'skipped', 'not checked']:
        if counts.get(status):
            out.append('| %s | %d |' % (MARK.get(status, status), counts[status]))
    out.append('| all | %d |' % len(rows))
    out += ['', 'Per family (matches / checked in mxlite / listed):', '']
    out += ['| family | matches | checked | listed |', '|---|---:|---:|---:|']
    for fam in order:
        names = families[fam]
        checked = [n for n in names if row_status(n)[0] in MARK]
        ok = [n for n in names if row_status(n)[0] == 'matches']
        out.append('| %s | %d | %d | %d |' % (fam, len(ok), len(checked), len(names)))
    if blockers:
        out += ['', '## Missing operators', '',
                'Operators the exported symbols use that mxlite does not implement, with the '
                'number of models that fail to load and need each one ("alone": the models it '
                'is the only missing operator of).', '',
                '| operator | models | alone |', '|---|---:|---:|']
        for op, n in sorted(blockers.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append('| `%s` | %d | %d |' % (op, n, only.get(op, 0)))
    for fam in order:
        out += ['', '## %s' % fam, '', '| model | input | status | missing operators or error |',
                '|---|---|---|---|']
        for name in sorted(families[fam]):
            status, error = row_status(name)
            shape = rows[name].get('input', '')
            missing = rows[name].get('missing', [])
            detail = ', '.join('`%s`' % op for op in missing) if missing else error
            if status == 'skipped':
                detail = 'not built yet (left out by --skip)'
            detail = detail.replace('|', '\\|').replace('\n', ' ')
            if len(detail) > 300:
                detail = detail[:297] + '...'
            out.append('| %s | %s | %s | %s |' % (name, shape, MARK.get(status, status), detail))
    out += ['', '## How this was made', '', 'Statuses besides those of mxlite\'s check: '
            '*export failed* (MXNet could not build, run or export the model at the input shapes '
            'tried; the error is MXNet\'s), *needs download* (GluonCV loads pretrained files '
            'whatever `pretrained=False` says), *timed out* (the per-model limit of '
            'model_families.py), *skipped* (left out of every run so far by `--skip`).', '',
            'MXNet\'s outputs for the R-CNNs come from the exported graph with each '
            '`_contrib_ROIAlign` reading its rois with the batch indices raised to at least 0 '
            'and its output followed by `where(batch index > -1, output, 0)` '
            '(`zero_left_out_rois` in scripts/model_families.py): MXNet documents zeros for a roi '
            'whose batch index is below 0, and its GPU kernel writes them, but its CPU kernel '
            'leaves that roi\'s output unwritten and writes a 0 at flat index n of the output '
            '(inside the first rois\' values) instead. The FPN R-CNNs feed every level\'s '
            'ROIAlign the other levels\' rois with batch index -1 and sum the levels, so '
            'MXNet\'s own CPU result is wrong in the first roi and whatever its memory held in '
            'the others. The files exported are the original graph.', '',
            'A run of the two commands below may cover part of the zoo (`--models`, or `--skip` '
            'for the rest; all of it takes about 45 minutes on 2 cores, the R-CNNs most of '
            'that): scripts/model_report.py --record keeps every model\'s latest result in '
            'docs/models.json and writes this page from it. The run of each row:', '',
            '| run | models | mxlite | command |', '|---|---:|---|---|']
    for run, info in sorted(runs.items()):
        n = sum(1 for row in rows.values() if row['run'] == run)
        out.append('| %s | %d | %s | `%s` |' % (run, n, info.get('mxlite', ''),
                                               info.get('command', '').replace('|', '\\|')))
    out.append('')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(out))



def git_head():
    """The checkout's commit (short), '' outside a git checkout."""
    try:
        return subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('outdir', nargs='?')
    ap.add_argument('--check', metavar='PREFIX', help=argparse.SUPPRESS)
    ap.add_argument('--reference', help=argparse.SUPPRESS)
    ap.add_argument('--check-internals', nargs=2, metavar=('PREFIX', 'NPZ'), help=argparse.SUPPRESS)
    ap.add_argument('--oracle-python', default=os.path.join(ROOT, 'build', 'venv-mxnet', 'bin',
                                                            'python'),
                    help='MXNet 1.9.1 (for the tensors entering NMS / top-k of models whose '
                         'outputs differ)')
    ap.add_argument('--out', help='write this markdown file (docs/models.md)')
    ap.add_argument('--prune', action='store_true', help='delete checkpoints once checked')
    ap.add_argument('--timeout', type=int, default=600, help='seconds per model check')
    ap.add_argument('--command', help='the commands of this run, for the markdown')
    ap.add_argument('--run', help="this run's label in the record (default: today's date)")
    ap.add_argument('--record', help='merge into this record of every model\'s latest result '
                                     '(docs/models.json) and write --out from it')
    ap.add_argument('--op-list', default=os.path.join(ROOT, 'predict', 'operators', 'op_list.inc'),
                    help="the library's operator list (names the missing operators)")
    a = ap.parse_args(argv)
    if a.check:
        print(json.dumps(check(a.check, a.reference)), flush=True)
        return 0
    if a.check_internals:
        print(json.dumps(check_decision_inputs(*a.check_internals)), flush=True)
        return 0
    if not a.outdir:
        ap.error('OUTDIR is required')
    with open(os.path.join(a.outdir, 'manifest.json'), encoding='utf-8') as f:
        manifest = json.load(f)
    report_path = os.path.join(a.outdir, 'report.json')
    results = {}
    if os.path.exists(report_path):
        with open(report_path, encoding='utf-8') as f:
            results = json.load(f)
    known = known_operators(a.op_list)
    for name, entry in sorted(manifest['models'].items()):
        prefix = os.path.join(a.outdir, name)
        if entry['status'] != 'exported':
            continue
        have_files = all(os.path.exists(prefix + s) for s in SUFFIXES)
        if not have_files:
            continue  # pruned: keep the result on record
        t0 = time.time()
        res = check_in_child(prefix, a.timeout)
        res['missing'] = []
        if res['status'] == 'fails to load':
            res['missing'] = sorted(set(entry.get('ops', [])) - known)
            named = re.search(r"operator '([^']+)' is not supported", res.get('error', ''))
            if named and named.group(1) not in res['missing']:
                print('model_report: %s: the library lacks %s, which %s lists' % (
                    name, named.group(1), a.op_list))
                res['missing'] = sorted(set(res['missing']) | {named.group(1)})
        if res['status'] == 'wrong numbers' and os.path.exists(a.oracle_python):
            tie = decision_check(prefix, a.oracle_python, a.timeout)
            if tie.get('status'):
                tie['error'] = tie['error'] + ' (' + res['error'] + ')'
            res.update(tie)
        if res['status'] == 'wrong numbers' and os.path.exists(a.oracle_python):
            res.update(conditioning_check(prefix, a.oracle_python, a.timeout))
        res['seconds'] = round(time.time() - t0, 2)
        results[name] = res
        print('  %-44s %-14s %5.1fs %s' % (name, res['status'], res['seconds'],
                                           ' '.join(res['missing']) or res.get('error', '')), flush=True)
        with open(report_path + '.tmp', 'w', encoding='utf-8') as f:
            json.dump(results, f, indent=1, sort_keys=True)
        os.replace(report_path + '.tmp', report_path)
        if a.prune and res['status'] not in ('wrong numbers', 'crashes'):  # kept to look into
            for s in SUFFIXES:
                os.remove(prefix + s)
    run = a.run or time.strftime('%Y-%m-%d')
    rows = rows_of(manifest, results, run)
    runs = {run: {'date': time.strftime('%Y-%m-%d'), 'mxlite': git_head(),
                  'command': a.command or 'model_report.py %s' % a.outdir}}
    if a.record:
        record = {}
        if os.path.exists(a.record):
            with open(a.record, encoding='utf-8') as f:
                record = json.load(f)
        record = merge_record(record, rows, run, runs[run])
        with open(a.record + '.tmp', 'w', encoding='utf-8') as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write('\n')
        os.replace(a.record + '.tmp', a.record)
        rows, runs = record['models'], record['runs']
    if a.out:
        write_markdown(a.out, rows, runs)
    bad = [n for n, r in results.items() if r['status'] in ('wrong numbers', 'crashes')]
    if bad:
        print('model_report: WRONG NUMBERS OR CRASH: ' + ', '.join(sorted(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
