"""mxlite.Predictor (the nanobind module) against MXNet 1.9.1 and the C API.

Every operator fixture and every zoo model runs through the Python API and
must match MXNet's outputs (the oracle criterion of test_ops/test_zoo) and
equal the C API's outputs bit for bit. Then the Python-specific behaviour:
input conversion, zero-copy inputs and outputs, outputs that stay valid,
the GIL released during a pass, reshape, partial outputs, summaries.
"""
import gc
import json
import re
import os
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

from conftest import FIXTURES, ZOO_DIR, assert_close, load_cases

import mxlite
from mxlite import MXLiteError, Predictor

OP_CASES = load_cases(f'{FIXTURES}/ops')
ZOO_CASES = {case.name: case for case in load_cases(ZOO_DIR)}
ZOO_MODELS = ['resnet18_v1', 'resnet50_v2', 'mobilenet1.0', 'mobilenetv2_1.0', 'squeezenet1.1',
              'densenet121', 'inceptionv3', 'vgg11', 'alexnet']
DEMO_PREFIX = os.path.join(os.path.dirname(mxlite.__file__), 'demo', 'digits')
ORACLE_PYTHON = os.environ.get(
    'MXLITE_ORACLE_PYTHON',
    os.path.join(os.path.dirname(FIXTURES), '..', 'build', 'venv-mxnet', 'bin', 'python'))


def zoo_case(name):
    assert name in ZOO_CASES, f'{name} missing from {ZOO_DIR}: run scripts/run_tests.sh'
    return ZOO_CASES[name]


def as_list(outputs):
    return outputs if isinstance(outputs, list) else [outputs]


DTYPE_FLAGS = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
               'int64': 6}


def c_api_outputs(api, case, inputs, count):
    """The C API's outputs, typed inputs going through MXPredCreateEx."""
    dtypes = case.meta.get('input_dtypes')
    if not dtypes:
        return api.predict(case.symbol_json, case.params, inputs, num_outputs=count)
    handle = api.create(case.symbol_json, case.params, {k: v.shape for k, v in inputs.items()},
                        dtypes={k: DTYPE_FLAGS[v] for k, v in dtypes.items()})
    try:
        for name, value in inputs.items():
            api.set_input(handle, name, value)
        api.forward(handle)
        return [api.output(handle, i) for i in range(count)]
    finally:
        api.free(handle)


def check_against_oracle_and_c_api(api, case):
    inputs, expected = case.io()
    shapes = {name: value.shape for name, value in inputs.items()}
    predictor = Predictor(case.symbol_json, case.params, input_shapes=shapes,
                          input_dtypes=case.meta.get('input_dtypes'))
    ours = as_list(predictor(**inputs))
    assert len(ours) == len(expected), case.name
    c_api = c_api_outputs(api, case, inputs, len(expected))
    output_dtypes = case.meta.get('output_dtypes', ['float32'] * len(expected))
    for index, (mine, theirs, c_output) in enumerate(zip(ours, expected, c_api)):
        assert str(mine.dtype) == output_dtypes[index], f'{case.name} output {index}'
        assert_close(mine, theirs, case.rtol, f'{case.name} output {index}')
        assert mine.dtype == c_output.dtype and mine.shape == c_output.shape
        assert np.array_equal(mine, c_output, equal_nan=True), \
            f'{case.name} output {index}: Python and C API differ'
    return predictor, inputs, ours


def test_ctx_names_the_device():
    """ctx=mx.cpu() is the default; the package under test has no GPU
    backend, so a GPU named through the options is refused with the core's
    reason, and a ctx that contradicts the options is an error."""
    case = OP_CASES[0]
    inputs, expected = case.io()
    shapes = {name: value.shape for name, value in inputs.items()}
    predictor = Predictor.load(case.path(''), input_shapes=shapes, ctx=mxlite.cpu())
    outputs = predictor.predict(**{name: value.astype(np.float32)
                                   for name, value in inputs.items()})
    assert predictor._core.device_report() == ''  # summary() adds no device line
    assert_close(outputs if isinstance(outputs, np.ndarray) else outputs[0], expected[0],
                 case.rtol, case.name)
    with pytest.raises(MXLiteError, match='this build of mxlite has no CUDA backend'):
        Predictor.load(case.path(''), input_shapes=shapes, options={'device': 'gpu'})
    with pytest.raises(MXLiteError, match='name different devices'):
        Predictor.load(case.path(''), input_shapes=shapes, ctx=mxlite.cpu(),
                       options={'device': 'gpu:1'})
    with pytest.raises(MXLiteError, match='ctx must be an mxlite Context'):
        Predictor.load(case.path(''), input_shapes=shapes, ctx='gpu')
    with pytest.raises(MXLiteError, match='built without a GPU backend'):
        mxlite.gpu(0)
    assert mxlite.context.num_gpus() == 0


@pytest.mark.parametrize('case', OP_CASES, ids=[c.name for c in OP_CASES])
def test_op_fixture_matches_mxnet_and_c_api(api, case):
    check_against_oracle_and_c_api(api, case)


@pytest.mark.parametrize('name', ZOO_MODELS)
def test_zoo_model_matches_mxnet_and_c_api(api, name):
    case = zoo_case(name)
    _, _, outputs = check_against_oracle_and_c_api(api, case)
    assert outputs[0].argmax() == case.io()[1][0].argmax()


def test_load_reads_a_checkpoint_from_its_prefix():
    case = zoo_case('squeezenet1.1')
    inputs, expected = case.io()
    predictor = Predictor.load(os.path.join(ZOO_DIR, 'squeezenet1.1'))
    assert predictor.input_names == ['data']
    assert not predictor._core.is_bound  # no "__shape__" hint on data: binds on first use
    scores = predictor(data=inputs['data'])
    assert_close(scores, expected[0], case.rtol, 'squeezenet1.1 via load()')
    assert predictor.input_shapes == {'data': inputs['data'].shape}
    assert predictor.output_shapes == [expected[0].shape]


def test_demo_model_reaches_mxnets_accuracy():
    import json
    with open(DEMO_PREFIX + '.json', encoding='utf-8') as f:
        meta = json.load(f)
    test = np.load(DEMO_PREFIX + '-test.npz')
    predictor = Predictor.load(DEMO_PREFIX)
    logits = predictor(data=(test['images'] / 16.0)[:, None])   # float64 in: converted once
    assert_close(logits, test['mxnet_logits'], 1e-4, 'demo logits')
    assert int((logits.argmax(1) == test['labels']).sum()) == meta['mxnet_correct']


def test_positional_input_for_a_single_input_model():
    predictor = Predictor.load(DEMO_PREFIX, input_shapes={'data': (2, 1, 8, 8)})
    x = np.random.RandomState(0).rand(2, 1, 8, 8).astype(np.float32)
    assert np.array_equal(predictor(x), predictor.predict(data=x))


# --- inputs: any dtype and layout, converted once; float32 read in place ---

def test_every_numeric_dtype_and_layout_gives_the_float32_result():
    predictor = Predictor.load(DEMO_PREFIX, input_shapes={'data': (3, 1, 8, 8)})
    pixels = np.random.RandomState(1).randint(0, 17, size=(3, 1, 8, 8))
    reference = predictor(data=pixels.astype(np.float32))
    variants = [pixels, pixels.astype(np.uint8), pixels.astype(np.int16), pixels.astype(np.float64),
                pixels.astype(np.float16), np.asfortranarray(pixels.astype(np.float32)),
                pixels.astype(np.float32)[:, :, ::-1, :][:, :, ::-1, :],  # negative strides
                pixels.tolist()]
    for variant in variants:
        assert np.array_equal(predictor(data=variant), reference), type(variant)
    assert np.array_equal(predictor(data=pixels > 8), predictor(data=(pixels > 8).astype('f4')))


def test_contiguous_float32_input_is_not_copied():
    # numpy reports its buffers to tracemalloc: a copy of a 2.4 MB input
    # would show up in the peak. The outputs are 4 KB.
    case = zoo_case('squeezenet1.1')
    batch = np.random.RandomState(2).randn(4, 3, 224, 224).astype(np.float32)
    predictor = Predictor(case.symbol_json, case.params, input_shapes={'data': batch.shape})
    predictor(data=batch)
    tracemalloc.start()
    try:
        predictor(data=batch)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        predictor(data=batch.astype(np.float64))
        _, peak_converted = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < batch.nbytes // 10, f'{peak} bytes allocated for a float32 input'
    assert peak_converted >= batch.nbytes  # the float64 input did need its conversion


def test_outputs_own_their_memory_and_survive_later_passes():
    case = zoo_case('resnet18_v1')
    inputs, _ = case.io()
    predictor = Predictor(case.symbol_json, case.params, input_shapes={'data': (1, 3, 224, 224)})
    first = predictor(**inputs)
    kept = first.copy()
    second = predictor(data=np.zeros((1, 3, 224, 224), np.float32))
    assert not np.shares_memory(first, second)
    assert np.array_equal(first, kept), 'a later pass changed an earlier output'
    assert first.flags.writeable
    first[:] = 0  # writing to an output does not disturb the predictor
    assert np.array_equal(predictor(**inputs), kept)
    second_copy = second.copy()
    del predictor
    gc.collect()
    assert np.array_equal(second, second_copy), 'an output died with its predictor'


def test_multi_output_model_returns_a_list_in_output_order(api):
    case = {c.name: c for c in OP_CASES}['multi_head']
    inputs, expected = case.io()
    predictor = Predictor(case.symbol_json, case.params)
    outputs = predictor(**inputs)
    assert isinstance(outputs, list) and len(outputs) == len(expected) == 2
    assert predictor.output_names == ['relu0_output', 'sig0_output']
    for mine, theirs in zip(outputs, expected):
        assert_close(mine, theirs, case.rtol, 'multi_head')


# --- threads and the GIL -----------------------------------------------------

def test_forward_releases_the_gil():
    case = zoo_case('resnet50_v2')
    batch = np.random.RandomState(3).randn(1, 3, 224, 224).astype(np.float32)
    predictor = Predictor(case.symbol_json, case.params, input_shapes={'data': batch.shape},
                          threads=1)
    predictor(data=batch)
    ticks = []
    running = threading.Event()
    stop = threading.Event()

    def counter():
        running.set()
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.0005)

    thread = threading.Thread(target=counter)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        thread.start()
        running.wait()
        start = time.perf_counter()
        before = len(ticks)
        for _ in range(3):
            predictor(data=batch)
        during = len(ticks) - before
        elapsed = time.perf_counter() - start
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(switch)
    # Holding the GIL through three resnet50 passes would starve the counter
    # (it could only tick between passes).
    assert during > 20, f'{during} ticks in {elapsed:.3f} s of forward passes'


def test_threads_share_one_predictor_safely():
    predictor = Predictor.load(DEMO_PREFIX, input_shapes={'data': (5, 1, 8, 8)})
    rng = np.random.RandomState(4)
    batches = [rng.rand(5, 1, 8, 8).astype(np.float32) for _ in range(4)]
    expected = [predictor(data=b) for b in batches]
    results = {}

    def worker(index):
        for _ in range(30):
            results.setdefault(index, []).append(predictor(data=batches[index]))

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for index, outputs in results.items():
        for output in outputs:
            assert np.array_equal(output, expected[index])


# DenseNet without Winograd: with it, its 56x56 3x3 layers take the 1-D
# Winograd kernel on two threads and F(4x4) on one (Winograd1dPays weighs
# the thread count), two algorithms with their own rounding.
@pytest.mark.parametrize('name, options', [('mobilenet1.0', {}), ('mobilenetv2_1.0', {}),
                                           ('resnet50_v2', {}),
                                           ('densenet121', {'winograd': False})])
def test_thread_count_does_not_change_the_answer(name, options):
    # Not a bit either: MobileNetV2's projections, and the 1x1 layers that
    # normalise their input on DenseNet's and ResNet v2's 14x14 and 7x7
    # maps, split their depth between two threads and add the halves, and
    # one thread sums them the same way.
    case = zoo_case(name)
    inputs, expected = case.io()
    one = Predictor(case.symbol_json, case.params, threads=1, options=options)(**inputs)
    assert_close(one, expected[0], case.rtol, 'threads=1')
    for threads in (2, 3):
        more = Predictor(case.symbol_json, case.params, threads=threads, options=options)(**inputs)
        assert np.array_equal(more, one), f'threads={threads} changed bits'


# --- shapes, outputs, summaries ------------------------------------------------

def test_reshape_rebinds_and_matches_a_fresh_predictor():
    case = zoo_case('squeezenet1.1')
    predictor = Predictor(case.symbol_json, case.params, input_shapes={'data': (1, 3, 224, 224)})
    batch = np.random.RandomState(5).randn(3, 3, 224, 224).astype(np.float32)
    with pytest.raises(MXLiteError, match=r"bound to \(1,3,224,224\); call reshape"):
        predictor(data=batch)
    predictor.reshape(data=batch.shape)
    assert predictor.input_shapes == {'data': (3, 3, 224, 224)}
    assert predictor.output_shapes == [(3, 1000)]
    fresh = Predictor(case.symbol_json, case.params, input_shapes={'data': batch.shape})
    assert np.array_equal(predictor(data=batch), fresh(data=batch))
    # Each sample of the batch is what a batch of one gives.
    single = Predictor(case.symbol_json, case.params)(data=batch[1:2])
    np.testing.assert_allclose(predictor(data=batch)[1:2], single, rtol=1e-5, atol=1e-6)


def test_shape_hints_bind_at_load():
    # The demo's data variable has no hint; a symbol with one binds at once.
    import json
    case = {c.name: c for c in OP_CASES}['composite_net']
    inputs, expected = case.io()
    graph = json.loads(case.symbol_json)
    for node in graph['nodes']:
        if node['name'] == 'data':
            node.setdefault('attrs', {})['__shape__'] = str(tuple(inputs['data'].shape))
    predictor = Predictor(json.dumps(graph), case.params)
    assert predictor._core.is_bound
    assert predictor.input_shapes == {'data': inputs['data'].shape}
    assert_close(predictor(**inputs), expected[0], case.rtol, 'hinted composite_net')


def test_internal_outputs_match_the_c_apis_partial_outputs(api):
    case = zoo_case('resnet18_v1')
    inputs, _ = case.io()
    predictor = Predictor(case.symbol_json, case.params)
    internals = predictor.get_internals()
    assert internals[0] == 'data' and 'resnetv10_stage1_activation0_output' in internals
    keys = ['resnetv10_stage1_activation0', 'resnetv10_pool1_fwd']
    partial = predictor.with_outputs(*[f'{key}_output' for key in keys])
    ours = partial(**inputs)
    handle = api.create(case.symbol_json, case.params, {'data': inputs['data'].shape},
                        output_keys=keys)
    try:
        api.set_input(handle, 'data', inputs['data'])
        api.forward(handle)
        for index, mine in enumerate(ours):
            assert np.array_equal(mine, api.output(handle, index))
    finally:
        api.free(handle)
    # The same through the constructor, with MXNet's key form.
    again = Predictor(case.symbol_json, case.params, outputs=keys)(**inputs)
    for mine, other in zip(ours, again):
        assert np.array_equal(mine, other)


def test_summary_lists_operators_parameters_and_macs():
    predictor = Predictor.load(DEMO_PREFIX, input_shapes={'data': (1, 1, 8, 8)})
    text = predictor.summary()
    params = mxlite.nd.load(DEMO_PREFIX + '-0000.params')
    total = sum(array.size for array in params.values())
    assert f'parameters: {total:,}' in text
    # conv0: 16 filters of 1x3x3 over an 8x8 output (padding 1): 16*8*8*9.
    assert 'digits_conv0_fwd' in text and f'{16 * 8 * 8 * 9:,}' in text
    assert 'intermediate memory' in text
    assert repr(predictor).startswith('<mxlite.Predictor inputs: data(1, 1, 8, 8)')


def test_package_exports():
    assert issubclass(MXLiteError, RuntimeError)
    assert mxlite.MXLiteError is mxlite.ctypes_predict.MXLiteError
    assert callable(mxlite.nd.load) and callable(mxlite.nd.save)
    assert os.path.exists(mxlite.lib_path())
    stub = os.path.join(os.path.dirname(mxlite.__file__), '_core.pyi')
    assert os.path.exists(stub) and os.path.exists(os.path.join(os.path.dirname(stub), 'py.typed'))


def test_committed_type_stub_is_current():
    import subprocess
    from conftest import ROOT
    generator = os.path.join(ROOT, 'bindings', 'python', 'generate_stubs.py')
    committed = os.path.join(ROOT, 'bindings', 'python', 'mxlite', '_core.pyi')
    result = subprocess.run([sys.executable, '-c', 'import sys; sys.path.insert(0, sys.argv[1]);'
                             ' import generate_stubs; sys.stdout.write(generate_stubs.generate())',
                             os.path.dirname(generator)], capture_output=True, text=True,
                            cwd=os.path.dirname(ROOT))
    assert result.returncode == 0, result.stderr[-2000:]
    with open(committed, encoding='utf-8') as f:
        assert f.read() == result.stdout, \
            'bindings/python/mxlite/_core.pyi is stale: run bindings/python/generate_stubs.py'


def test_stub_generator_without_nanobind_keeps_the_stub(tmp_path):
    # A failed run (here nanobind cannot be imported) says why and leaves the
    # output as it was (it used to truncate it to nothing first).
    import subprocess
    from conftest import ROOT
    blocker = tmp_path / 'blocker' / 'nanobind'
    blocker.mkdir(parents=True)
    (blocker / '__init__.py').write_text('raise ImportError("nanobind blocked by the test")\n')
    stub = tmp_path / 'stub.pyi'
    stub.write_text('previous\n')
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'bindings', 'python',
                                                          'generate_stubs.py'),
                             '--output', str(stub)], capture_output=True, text=True,
                            env={**os.environ, 'PYTHONPATH': str(tmp_path / 'blocker')},
                            cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'nanobind blocked by the test' in result.stderr
    assert 'pip install nanobind==3.1.0' in result.stderr
    assert stub.read_text() == 'previous\n'


def test_readme_python_examples_run(tmp_path):
    # The README's Python blocks, run in order as one script, next to a zoo
    # checkpoint, so that the documented calls cannot drift from the API.
    import re
    import subprocess
    from conftest import ROOT
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    section = readme[readme.index('## Use it from Python'):]
    section = section[:section.index('\n## ', 1)]
    blocks = re.findall(r'```python\n(.*?)```', section, re.S)
    assert len(blocks) >= 3, 'the README lost its Python examples'
    case = zoo_case('resnet18_v1')
    for suffix in ('-symbol.json', '-0000.params'):
        os.symlink(case.path(suffix), tmp_path / f'resnet18_v1{suffix}')
    result = subprocess.run([sys.executable, '-c', '\n'.join(blocks)], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    saved = mxlite.nd.load(tmp_path / 'copy.params')
    with open(case.path('-0000.params'), 'rb') as f:
        assert (tmp_path / 'copy.params').read_bytes() == f.read()
    assert len(saved) > 10


def test_binding_compiles_warning_free_with_gcc_and_clang():
    import shutil
    import subprocess
    import sysconfig
    import nanobind
    from conftest import ROOT
    source = os.path.join(ROOT, 'bindings', 'python', 'src', 'core.cc')
    flags = ['-std=c++17', '-Wall', '-Wextra', '-Werror', '-fsyntax-only',
             '-fvisibility=hidden', '-isystem', sysconfig.get_paths()['include'],
             '-isystem', nanobind.include_dir(),
             '-I', os.path.join(ROOT, 'predict'), source]
    for compiler in ('g++', 'clang++'):
        assert shutil.which(compiler), f'{compiler} is required (apt-get install g++ clang)'
        result = subprocess.run([compiler] + flags, capture_output=True, text=True)
        assert result.returncode == 0, f'{compiler}:\n{result.stderr[-3000:]}'


def test_typed_inputs_convert_to_the_declared_dtype():
    case = {c.name: c for c in OP_CASES}['dtype_float16_cnn']
    inputs, expected = case.io()
    predictor = Predictor(case.symbol_json, case.params, input_dtypes={'data': np.float16})
    assert predictor.input_dtypes == {'data': np.dtype('float16')}
    half = predictor(data=inputs['data'])
    assert half.dtype == np.float16
    assert np.array_equal(predictor(data=inputs['data'].astype(np.float64)), half)
    with pytest.raises(MXLiteError, match="input_dtypes: 'data' has dtype 'complex64'"):
        Predictor(case.symbol_json, case.params, input_dtypes={'data': 'complex64'})
    with pytest.raises(MXLiteError, match="input_dtypes: 'nope' is not an input"):
        Predictor(case.symbol_json, case.params, input_dtypes={'nope': 'float16'})


PROFILE_SCRIPT = r'''
import sys
import numpy as np
import mxlite
prefix = sys.argv[1]
predictor = mxlite.Predictor.load(prefix, input_shapes={'data': (1, 3, 224, 224)}, threads=1)
predictor.predict(data=np.zeros((1, 3, 224, 224), np.float32))
predictor.predict(data=np.zeros((1, 3, 224, 224), np.float32))
del predictor
'''


@pytest.mark.parametrize('level', ['1', '2'])
def test_profile_report_on_stderr(level):
    # MXLITE_PROFILE=1 sums the time per operator type and kernel; =2 lists
    # every node in execution order with its output shape.
    import json
    import subprocess
    case = zoo_case('resnet18_v1')
    prefix = case.path('')
    result = subprocess.run([sys.executable, '-c', PROFILE_SCRIPT, prefix], capture_output=True,
                            text=True, timeout=300, env={**os.environ, 'MXLITE_PROFILE': level})
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith('mxlite profile (1 threads)')]
    assert len(header) == 1, result.stderr[-2000:]
    # The figures are the second pass's; the first's total is kept apart.
    assert re.search(r'[0-9.]+ ms in operators a pass, the mean of the 1 after the first '
                     r'\(the first: [0-9.]+ ms\)$', lines[header[0]]), lines[header[0]]
    rows = lines[header[0] + 1:]
    assert all(re.search(r' ms +[0-9.]+%  first +[0-9.]+ ms ', line) for line in rows), rows
    # Two forward passes: each node ran twice, each operator type a multiple of that.
    assert rows and all(line.endswith(' calls') and int(line.split()[-2]) % 2 == 0
                        for line in rows), rows
    if level == '1':
        names = [line.split()[0] for line in rows]
        assert '_FusedConvolution' in names and 'FullyConnected' in names
        assert not any(line.split()[0].isdigit() for line in rows)
        return
    graph = json.loads(case.symbol_json)
    numbers = [int(line.split()[0]) for line in rows]
    assert numbers == sorted(numbers)
    assert all(line.endswith(' 2 calls') for line in rows), rows
    # The stem's convolution, BatchNorm, relu and max pooling run as one node.
    assert rows[0].split()[1] == 'resnetv10_pool0_fwd' and '-> (1,64,56,56)' in rows[0]
    assert 'max pool' in rows[0], rows[0]
    assert rows[-1].split()[1] == graph['nodes'][graph['heads'][0][0]]['name']
    assert '-> (1,1000)' in rows[-1]


def concat_graph(nested):
    """data -> 1x1 conv s -> 1x1 convs a and b -> cat = Concat(a, b) -> 1x1
    conv out, with random weights: symbol JSON, params bytes and a numpy
    forward. `nested`: then conv c of s, Concat(cat, c), relu (in place over
    the join) and out of that, so that a and b lie two joins deep."""
    from ndfile import save
    nodes, params, arg_nodes = [{'op': 'null', 'name': 'data', 'inputs': []}], {}, [0]
    index = {'data': 0}
    rng = np.random.default_rng(7)
    sizes = {'s': (4, 8), 'a': (8, 16), 'b': (8, 16), 'c': (8, 16),
             'out': (48 if nested else 32, 4)}

    def conv(name, source):
        channels, filters = sizes[name]
        params[f'arg:{name}_weight'] = rng.standard_normal((filters, channels, 1, 1), np.float32)
        params[f'arg:{name}_bias'] = rng.standard_normal(filters, np.float32)
        for suffix in ('weight', 'bias'):
            arg_nodes.append(len(nodes))
            nodes.append({'op': 'null', 'name': f'{name}_{suffix}', 'inputs': []})
        index[name] = len(nodes)
        nodes.append({'op': 'Convolution', 'name': name,
                      'attrs': {'kernel': '(1, 1)', 'num_filter': str(filters)},
                      'inputs': [[index[source], 0, 0], [len(nodes) - 2, 0, 0],
                                 [len(nodes) - 1, 0, 0]]})

    def node(op, name, attrs, sources):
        index[name] = len(nodes)
        nodes.append({'op': op, 'name': name, 'attrs': attrs,
                      'inputs': [[index[source], 0, 0] for source in sources]})

    conv('s', 'data')
    conv('a', 's')
    conv('b', 's')
    node('Concat', 'cat', {'num_args': '2', 'dim': '1'}, ['a', 'b'])
    if nested:
        conv('c', 's')
        node('Concat', 'cat2', {'num_args': '2', 'dim': '1'}, ['cat', 'c'])
        node('Activation', 'relu', {'act_type': 'relu'}, ['cat2'])
    conv('out', 'relu' if nested else 'cat')
    symbol_json = json.dumps({'nodes': nodes, 'arg_nodes': arg_nodes,
                              'heads': [[index['out'], 0, 0]],
                              'attrs': {'mxnet_version': ['int', 10901]}})

    def forward(x):
        def conv1x1(name, value):
            weight = params[f'arg:{name}_weight'][:, :, 0, 0].astype(np.float64)
            bias = params[f'arg:{name}_bias'].astype(np.float64)
            return np.einsum('fc,nchw->nfhw', weight, value) + bias[None, :, None, None]
        s = conv1x1('s', x.astype(np.float64))
        a, b = conv1x1('a', s), conv1x1('b', s)
        values = {'a': a, 'cat': np.concatenate([a, b], axis=1)}
        if nested:
            values['relu'] = np.maximum(np.concatenate([values['cat'], conv1x1('c', s)], axis=1),
                                        0)
        values['out'] = conv1x1('out', values['relu' if nested else 'cat'])
        return values

    return symbol_json, save(params), forward


@pytest.mark.parametrize('nested', [False, True])
@pytest.mark.parametrize('graph_opt', ['1', '0'])
@pytest.mark.parametrize('batch', [1, 3])
def test_concat_inputs_written_in_place_give_the_joined_values(monkeypatch, batch, graph_opt,
                                                              nested):
    # At batch 1 with graph optimisation the planner lays a and b inside
    # cat's buffer (and, nested, cat and c inside cat2's, which relu then
    # overwrites in place) and the Concats copy nothing (test_memory_plan
    # checks the layout); at batch 3, or with MXLITE_GRAPH_OPT=0, they copy.
    # Each must give the joined values, also when a is itself an output
    # (then copied).
    monkeypatch.setenv('MXLITE_GRAPH_OPT', graph_opt)
    symbol_json, params, forward = concat_graph(nested)
    x = np.random.default_rng(batch).standard_normal((batch, 4, 6, 6), np.float32)
    expected = forward(x)
    predictor = Predictor(symbol_json, params, input_shapes={'data': x.shape})
    for _ in range(2):  # a second pass over the same buffers
        assert_close(predictor(data=x), expected['out'], 1e-5, 'out')
    partial = Predictor(symbol_json, params, input_shapes={'data': x.shape},
                        outputs=['a', 'cat', 'out'])
    for got, name in zip(partial(data=x), ['a', 'cat', 'out']):
        assert_close(got, expected[name], 1e-5, name)
