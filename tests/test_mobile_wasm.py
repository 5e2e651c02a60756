"""The one file as WebAssembly (wasm32-wasi), run by wasmtime.

- `make wasm` builds the amalgamation with clang for wasm32-wasi (no threads,
  no exceptions, SIMD128 on) warning-free, and links a module that exports
  the C predict API;
- the C conformance driver, built against that object, runs every operator
  case and zoo models under wasmtime, each output within the oracle
  tolerance of MXNet 1.9.1's;
- the API module works on its own, called the way a browser would call it:
  MXPredCreate / SetInput / Forward / GetOutput through linear memory, and
  an error comes back through MXGetLastError;
- the JavaScript binding for browsers (mobile/wasm/mxlite.js) runs a zoo
  model under Node and matches MXNet, also with runtime options (through
  MXLitePredCreateWithOptions); an unknown option throws the core's message
  naming it, a value of the wrong type a TypeError naming it.
"""
import importlib
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES, ROOT, ZOO_DIR, assert_close
from mobile_support import CONFORMANCE_MAIN, check_results, op_cases, require_tool, run, \
    write_plan, zoo_cases

ZOO_MODELS = ['squeezenet1.1', 'mobilenet1.0', 'mobilenetv2_1.0', 'resnet18_v1']
WASM_PACKAGES = 'clang lld libc++-dev-wasm32 libclang-rt-dev-wasm32'


def import_or_install(module, package):
    """The module, pip-installing `package` first when it is missing
    (scripts/run_tests.sh installs it; a bare pytest run installs it here)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        result = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', package],
                                capture_output=True, text=True)
        assert result.returncode == 0, f'pip install {package} failed:\n{result.stderr}'
        return importlib.import_module(module)


def import_wasmtime():
    return import_or_install('wasmtime', 'wasmtime')


@pytest.fixture(scope='module')
def wasm_build(tmp_path_factory):
    require_tool('clang++', WASM_PACKAGES)
    build = tmp_path_factory.mktemp('wasm-build')
    result = subprocess.run(['make', '-s', 'wasm', f'BUILD={build}', 'WARN=-Wall -Wextra -Werror'],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, (
        f'make wasm failed (needs apt-get install {WASM_PACKAGES}):\n'
        f'{result.stdout[-3000:]}\n{result.stderr[-3000:]}')
    return build


class GuestPaths:
    """Host folders preopened for the module, and the paths it sees."""

    def __init__(self, folders):
        self.folders = {f'/m{i}': os.path.abspath(host) for i, host in enumerate(folders)}

    def __call__(self, host_path):
        host_path = os.path.abspath(host_path)
        for guest, host in self.folders.items():
            if host_path.startswith(host + os.sep):
                return guest + host_path[len(host):]
        raise AssertionError(f'{host_path} is outside the preopened folders')


def run_wasi_command(wasmtime, module_path, argv, guest, stdout_path):
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    config = wasmtime.WasiConfig()
    config.argv = argv
    for guest_folder, host_folder in guest.folders.items():
        config.preopen_dir(host_folder, guest_folder)
    config.stdout_file = str(stdout_path)
    config.inherit_stderr()
    store.set_wasi(config)
    instance = linker.instantiate(store, wasmtime.Module.from_file(engine, str(module_path)))
    try:
        instance.exports(store)['_start'](store)
        return 0
    except wasmtime.ExitTrap as exit_trap:
        return exit_trap.code


def test_conformance_under_wasmtime(wasm_build, tmp_path):
    wasmtime = import_wasmtime()
    include = str(wasm_build)
    run(['clang', '--target=wasm32-wasi', '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror',
         '-I', include, '-c', CONFORMANCE_MAIN, '-o', str(tmp_path / 'main.o')])
    module = tmp_path / 'conformance_main.wasm'
    run(['clang++', '--target=wasm32-wasi', str(tmp_path / 'main.o'),
         str(wasm_build / 'wasm' / 'mxlite.o'), '-o', str(module)])
    cases = op_cases() + zoo_cases(ZOO_MODELS)
    guest = GuestPaths([tmp_path, FIXTURES, ZOO_DIR])
    plan = write_plan(cases, tmp_path, guest)
    report_path = tmp_path / 'report.txt'
    status = run_wasi_command(wasmtime, module, ['conformance_main', guest(plan)], guest,
                              report_path)
    report = report_path.read_text()
    assert status == 0, f'conformance_main exited with {status}:\n{report[-3000:]}'
    check_results(report, cases, tmp_path, 'wasm32')


class WasmPredictAPI:
    """The API module (build/wasm/mxlite.wasm), called through linear memory."""

    def __init__(self, wasmtime, path):
        engine = wasmtime.Engine()
        self.store = wasmtime.Store(engine)
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        self.store.set_wasi(wasmtime.WasiConfig())
        instance = linker.instantiate(self.store, wasmtime.Module.from_file(engine, str(path)))
        self.exports = instance.exports(self.store)
        self.memory = self.exports['memory']
        self.exports['_initialize'](self.store)

    def call(self, name, *args):
        return self.exports[name](self.store, *args)

    def put(self, data):
        address = self.call('malloc', len(data))
        assert address != 0
        self.memory.write(self.store, bytes(data), address)
        return address

    def get(self, address, size):
        return bytes(self.memory.read(self.store, address, address + size))

    def c_string(self, address):
        data = bytearray()
        while True:
            chunk = self.get(address + len(data), 64)
            if b'\0' in chunk:
                return (data + chunk[:chunk.index(b'\0')]).decode()
            data += chunk

    def u32_array(self, values):
        return self.put(struct.pack(f'<{len(values)}I', *values))

    def last_error(self):
        return self.c_string(self.call('MXGetLastError'))

    def create(self, symbol_json, params, shapes):
        symbol = self.put(symbol_json.encode() + b'\0')
        param_bytes = self.put(params)
        names = [self.put(name.encode() + b'\0') for name in shapes]
        keys = self.u32_array(names)
        indptr, dims = [0], []
        for shape in shapes.values():
            dims += shape
            indptr.append(len(dims))
        handle_out = self.put(b'\0' * 4)
        status = self.call('MXPredCreate', symbol, param_bytes, len(params), 1, 0, len(shapes),
                           keys, self.u32_array(indptr), self.u32_array(dims or [0]), handle_out)
        return status, struct.unpack('<I', self.get(handle_out, 4))[0]


def test_api_module_exports_the_c_api(wasm_build):
    wasmtime = import_wasmtime()
    api = WasmPredictAPI(wasmtime, wasm_build / 'wasm' / 'mxlite.wasm')
    case = {c.name: c for c in op_cases()}['composite_net']
    inputs, expected = case.io()
    status, handle = api.create(case.symbol_json, case.params,
                                {name: list(value.shape) for name, value in inputs.items()})
    assert status == 0, api.last_error()
    for name, value in inputs.items():
        data = np.ascontiguousarray(value, dtype='<f4')
        assert api.call('MXPredSetInput', handle, api.put(name.encode() + b'\0'),
                        api.put(data.tobytes()), data.size) == 0, api.last_error()
    assert api.call('MXPredForward', handle) == 0, api.last_error()
    size = expected[0].size
    out = api.call('malloc', size * 4)
    assert api.call('MXPredGetOutput', handle, 0, out, size) == 0, api.last_error()
    ours = np.frombuffer(api.get(out, size * 4), dtype='<f4').reshape(expected[0].shape)
    assert_close(ours, expected[0], case.rtol, 'wasm API module')
    # A wrong size is refused with a message, not a trap.
    assert api.call('MXPredGetOutput', handle, 0, out, size + 1) == -1
    assert 'elements' in api.last_error()
    assert api.call('MXPredFree', handle) == 0


def test_api_module_reports_bad_json(wasm_build):
    wasmtime = import_wasmtime()
    api = WasmPredictAPI(wasmtime, wasm_build / 'wasm' / 'mxlite.wasm')
    status, _ = api.create('{"nodes": [', b'', {'data': [1, 2]})
    assert status == -1
    assert api.last_error().startswith('symbol JSON:')


# Drives mobile/wasm/mxlite.js under Node: one case through the JavaScript
# API, output 0 to a file, the same with runtime options (output 0 to
# OUT.options), then a broken JSON, an unknown option and an option of the
# wrong type, which must throw.
NODE_DRIVER = r'''
import { readFileSync, writeFileSync } from 'node:fs';
const [jsPath, wasmPath, symbolPath, paramsPath, inputPath, dims, outPath] =
    process.argv.slice(2);
const { loadMXLite } = await import(jsPath);
const mxlite = await loadMXLite(readFileSync(wasmPath));
const shape = dims.split(',').map(Number);
const predictor = mxlite.createPredictor(readFileSync(symbolPath, 'utf8'),
                                         readFileSync(paramsPath), { data: shape });
const input = readFileSync(inputPath);
predictor.setInput('data', new Float32Array(input.buffer, input.byteOffset,
                                            input.byteLength / 4));
predictor.forward();
const output = predictor.getOutput(0);
writeFileSync(outPath, Buffer.from(output.data.buffer));
console.log(`shape ${output.shape.join(' ')}`);
predictor.free();
try {
  mxlite.createPredictor('{"nodes": [', new Uint8Array(0), { data: shape });
  console.log('bad json: no error');
} catch (error) {
  console.log(`bad json: ${error.message}`);
}
const withOptions = mxlite.createPredictor(
    readFileSync(symbolPath, 'utf8'), readFileSync(paramsPath), { data: shape },
    { memory_budget: '1G', graph_optimization: 0, winograd: false });
withOptions.setInput('data', new Float32Array(input.buffer, input.byteOffset,
                                              input.byteLength / 4));
withOptions.forward();
writeFileSync(outPath + '.options', Buffer.from(withOptions.getOutput(0).data.buffer));
withOptions.free();
console.log('options: ran');
for (const [what, options] of [['unknown option', { no_such_option: '1' }],
                               ['bad type', { threads: {} }]]) {
  try {
    mxlite.createPredictor(readFileSync(symbolPath, 'utf8'), readFileSync(paramsPath),
                           { data: shape }, options);
    console.log(`${what}: no error`);
  } catch (error) {
    console.log(`${what}: ${error.name}: ${error.message}`);
  }
}
'''


def test_javascript_binding_under_node(wasm_build, tmp_path):
    node = require_tool('node', 'nodejs')
    (tmp_path / 'driver.mjs').write_text(NODE_DRIVER)
    case = zoo_cases(['squeezenet1.1'])[0]
    inputs, expected = case.io()
    inputs['data'].astype('<f4').tofile(tmp_path / 'input.f32')
    js = 'file://' + os.path.join(ROOT, 'mobile', 'wasm', 'mxlite.js')
    report = run([node, str(tmp_path / 'driver.mjs'), js, str(wasm_build / 'wasm' / 'mxlite.wasm'),
                  case.path('-symbol.json'), case.path('-0000.params'),
                  str(tmp_path / 'input.f32'), ','.join(map(str, inputs['data'].shape)),
                  str(tmp_path / 'out.f32')]).stdout
    lines = report.strip().split('\n')
    assert lines[0] == 'shape ' + ' '.join(map(str, expected[0].shape))
    ours = np.fromfile(tmp_path / 'out.f32', dtype='<f4').reshape(expected[0].shape)
    assert_close(ours, expected[0], case.rtol, 'JavaScript API')
    assert lines[1].startswith('bad json: symbol JSON:')
    # Without fusion and Winograd the arithmetic differs a little, within
    # the case's tolerance of MXNet's.
    assert lines[2] == 'options: ran'
    ours = np.fromfile(tmp_path / 'out.f32.options', dtype='<f4').reshape(expected[0].shape)
    assert_close(ours, expected[0], case.rtol, 'JavaScript API with options')
    assert lines[3].startswith("unknown option: Error: unknown option 'no_such_option'"), \
        lines[3]
    assert lines[4] == ("bad type: TypeError: mxlite: option 'threads' must be a string or a "
                        "number, not object"), lines[4]
