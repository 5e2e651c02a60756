"""Oracle cases run by drivers outside this Python process.

The mobile and edge tests run the same cases through programs built for
other targets (a C driver under qemu or wasmtime, a Java driver on the host
JVM). They share one plan format, read by tests/c/conformance_main.c and by
mobile/android/test/org/mxlite/ConformanceCheck.java:

    case NAME / symbol PATH / params PATH / input NAME PATH NDIM D0 .. /
    dtype NAME FLAG / output PREFIX / run

write_plan() turns oracle cases into such a plan (inputs as raw files in
their own dtype, a dtype line for each typed input), and check_results()
reads the driver's report ("output I dtype FLAG shape D0 ..") and output
files back and compares every output with MXNet 1.9.1's, dtype included,
to the case's tolerance.
"""
import os
import re
import shutil
import subprocess

import numpy as np

from capi import DTYPE_TO_NUMPY
from conftest import FIXTURES, ROOT, ZOO_DIR, assert_close, load_cases

AMALGAMATE = os.path.join(ROOT, 'amalgamation', 'amalgamate.py')
CONFORMANCE_MAIN = os.path.join(ROOT, 'tests', 'c', 'conformance_main.c')


def require_tool(tool, package):
    path = shutil.which(tool)
    assert path, f'{tool} is required: apt-get install {package} (.ci/run installs it)'
    return path


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f'{" ".join(map(str, command))} failed ({result.returncode}):\n'
        f'{result.stdout[-4000:]}\n{result.stderr[-4000:]}')
    return result


DTYPE_FLAGS = {np.dtype(numpy_type).name: flag for flag, numpy_type in DTYPE_TO_NUMPY.items()}


def op_cases(float32_inputs_only=False):
    """The operator cases; float32_inputs_only leaves out those whose inputs
    MXNet types otherwise (for APIs that take float arrays)."""
    cases = load_cases(os.path.join(FIXTURES, 'ops'))
    assert cases, 'tests/fixtures/ops has no cases'
    if float32_inputs_only:
        cases = [case for case in cases if not case.meta.get('input_dtypes')]
    return cases


def zoo_cases(names):
    found = {case.name: case for case in load_cases(ZOO_DIR)}
    missing = [name for name in names if name not in found]
    assert not missing, f'{missing} missing from {ZOO_DIR}: run scripts/run_tests.sh'
    return [found[name] for name in names]


def write_plan(cases, work_dir, guest_path=str):
    """Writes plan.txt and the inputs under work_dir; returns the plan's path.

    guest_path maps a host path to the path the driver sees (a WebAssembly
    module sees only its preopened folders)."""
    work_dir = str(work_dir)
    lines = []
    for case in cases:
        inputs, _ = case.io()
        lines += [f'case {case.name}',
                  f'symbol {guest_path(case.path("-symbol.json"))}',
                  f'params {guest_path(case.path("-0000.params"))}']
        typed = case.meta.get('input_dtypes') or {}
        for name, value in inputs.items():
            path = os.path.join(work_dir, f'{case.name}.in.{name}.bin')
            dtype = np.dtype(typed.get(name, 'float32')).newbyteorder('<')
            np.ascontiguousarray(value, dtype=dtype).tofile(path)
            dims = ' '.join(str(d) for d in value.shape)
            lines.append(f'input {name} {guest_path(path)} {value.ndim} {dims}')
            if name in typed:
                lines.append(f'dtype {name} {DTYPE_FLAGS[typed[name]]}')
        lines += [f'output {guest_path(os.path.join(work_dir, case.name + ".out"))}', 'run']
    plan = os.path.join(work_dir, 'plan.txt')
    with open(plan, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')
    return plan


def check_results(report, cases, work_dir, what, outputs_as_float32=False):
    """Compares the driver's outputs with MXNet's; report is its stdout.
    outputs_as_float32: the API hands every output out as float32 (Java)."""
    errors = re.findall(r'^case (\S+) error: (.*)$', report, re.M)
    assert not errors, f'{what}: cases failed: {errors}'
    for case in cases:
        _, expected = case.io()
        match = re.search(rf'^case {re.escape(case.name)} outputs (\d+)$', report, re.M)
        assert match, f'{what}: no result for {case.name} in:\n{report[-2000:]}'
        assert int(match.group(1)) == len(expected), f'{what}: {case.name} output count'
        for index, oracle in enumerate(expected):
            match = re.search(rf'^case {re.escape(case.name)} outputs \d+\n(?:output .*\n)*?'
                              rf'output {index} dtype (\d+) shape', report, re.M)
            assert match, f'{what}: no dtype for {case.name} output {index}'
            dtype = np.dtype(DTYPE_TO_NUMPY[int(match.group(1))])
            # MXNet's output type (the manifest's; older manifests lack it).
            oracle_dtype = np.dtype(case.meta.get('output_dtypes', [oracle.dtype.name] *
                                                  len(expected))[index])
            wanted = np.float32 if outputs_as_float32 else oracle_dtype
            assert dtype == wanted, f'{what}: {case.name} output {index} is {dtype}, not {wanted}'
            path = os.path.join(str(work_dir), f'{case.name}.out.{index}.bin')
            ours = np.fromfile(path, dtype=dtype.newbyteorder('<'))
            assert ours.size == oracle.size, f'{what}: {case.name} output {index} size'
            assert_close(ours.reshape(oracle.shape), oracle, case.rtol,
                         f'{what}: {case.name} output {index}')
