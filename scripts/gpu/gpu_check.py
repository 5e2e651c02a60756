#!/usr/bin/env python3
"""GPU checks of the CUDA backend: conformance against MXNet's goldens and a
benchmark against PyTorch. Run by scripts/gpu/gpu_check.sh on a machine with
an NVIDIA GPU; each stage is one process, so a crash in one loses nothing
else. Results go to OUT/<stage>.json and a Markdown summary on stdout.

Stages:
  ops     every committed operator fixture (tests/fixtures/ops, MXNet 1.9.1's
          outputs) on GPU 0, 1e-4 relative or the case's own tolerance;
          nodes without a GPU kernel run on the host (the fallback is part
          of what is checked).
  zoo     the zoo models whose MXNet fixtures were sent along (ZOO_DIR), on
          GPU 0 against MXNet's outputs.
  random  every zoo architecture (scripts/gpu/zoo_shapes.json) with seeded
          random weights, GPU 0 against mxlite's CPU path in the same
          process (which CI checks against MXNet on the same models), at
          batch 1 and 4.
  bench   batch-1 latency and batch-64 throughput of resnet18_v1,
          resnet50_v2 and mobilenetv2_1.0 against PyTorch eager
          (torchvision's resnet18, resnet50, mobilenet_v2; cuDNN, float32,
          TF32 off), host arrays in and out for both, and PyTorch with its
          input already on the GPU too. mxlite runs as configured (cuDNN
          where MXLITE_CUDNN names it), without cuDNN, with conv_tuning,
          and at batch 64 also unfused; the configurations' outputs are compared, and per-node
          GPU profiles at batch 64 go to OUT/profile-*.txt.
  python  the Python package built with MXLITE_CUDA=1: Predictor(ctx=
          mx.gpu(0)) against MXNet and against its CPU path, summary()'s
          device line, predict()'s time.
  sanitize  one small model and a few operators on GPU 0, to run under
          compute-sanitizer.
"""
import argparse
import json
import os
import re
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from capi import API, CAPIError, load_library  # noqa: E402
import ndfile  # noqa: E402

DTYPE_FLAGS = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
               'int64': 6}
GPU, CPU = 2, 1


def load_cases(directory):
    manifest = os.path.join(directory, 'manifest.json')
    if not os.path.exists(manifest):
        return []
    with open(manifest, encoding='utf-8') as f:
        return sorted(json.load(f)['cases'].items())


def read(path, mode='rb'):
    with open(path, mode) as f:
        return f.read()


def gpu_ops():
    """The operators with a GPU kernel, from predict/cuda/cuda_op_list.inc."""
    text = read(os.path.join(ROOT, 'predict', 'cuda', 'cuda_op_list.inc'), 'r')
    return set(re.findall(r'^MXL_CUDA_OP\("([^"]+)"', text, re.M))


def relative_error(actual, expected):
    """max |actual - expected| / max |expected| (the tests' criterion)."""
    if expected.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(expected.astype(np.float64)))), 1e-30)
    return float(np.max(np.abs(actual.astype(np.float64) - expected.astype(np.float64)))) / scale


def run_fixture(api, directory, name, meta, dev_type):
    """A fixture's outputs on one device (typed inputs through MXPredCreateEx)."""
    data = np.load(os.path.join(directory, f'{name}-io.npz'))
    inputs = {k.split(':', 1)[1]: data[k] for k in data.files if k.startswith('input:')}
    expected = [data[f'output:{i}'] for i in range(len(meta['outputs']))]
    symbol = read(os.path.join(directory, f'{name}-symbol.json'), 'r')
    params = read(os.path.join(directory, f'{name}-0000.params'))
    input_dtypes = meta.get('input_dtypes')
    dtypes = {k: DTYPE_FLAGS[v] for k, v in input_dtypes.items()} if input_dtypes else None
    handle = api.create(symbol, params, {k: v.shape for k, v in inputs.items()}, dtypes=dtypes,
                        dev_type=dev_type)
    try:
        for key, value in inputs.items():
            api.set_input(handle, key, value if input_dtypes else value.astype(np.float32))
        api.forward(handle)
        return [api.output(handle, i) for i in range(len(expected))], expected
    finally:
        api.free(handle)


def stage_ops(api, args):
    directory = os.path.join(ROOT, 'tests', 'fixtures', 'ops')
    on_gpu = gpu_ops()
    results = []
    log = open(os.path.join(args.out, 'ops.log'), 'w', encoding='utf-8')
    for name, meta in load_cases(directory):
        log.write(name + '\n')
        log.flush()  # a crash names its case
        ops = set(meta.get('ops', []))
        entry = {'case': name, 'gpu_kernels': bool(ops) and ops <= on_gpu}
        try:
            outputs, expected = run_fixture(api, directory, name, meta, GPU)
            errors = [relative_error(o, e) for o, e in zip(outputs, expected)]
            shapes = all(o.shape == e.shape for o, e in zip(outputs, expected))
            entry['error'] = max(errors) if errors else 0.0
            entry['ok'] = shapes and all(e <= meta['rtol'] for e in errors)
            if not shapes:
                entry['problem'] = 'shape'
        except CAPIError as e:
            entry['ok'] = False
            entry['problem'] = str(e)[:300]
        results.append(entry)
    failed = [r for r in results if not r['ok']]
    summary = {'cases': len(results), 'passed': len(results) - len(failed),
               'cases_all_gpu_kernels': sum(r['gpu_kernels'] for r in results),
               'failed': failed}
    print(f"ops: {summary['passed']} of {summary['cases']} fixtures match MXNet on the GPU "
          f"({summary['cases_all_gpu_kernels']} of them use GPU kernels only)")
    for r in failed[:40]:
        print(f"  FAIL {r['case']}: {r.get('problem') or 'error %.3g' % r['error']}")
    return summary


def stage_zoo(api, args):
    results = []
    for name, meta in load_cases(args.zoo_dir):
        if not os.path.exists(os.path.join(args.zoo_dir, f'{name}-0000.params')):
            continue
        try:
            outputs, expected = run_fixture(api, args.zoo_dir, name, meta, GPU)
            error = relative_error(outputs[0], expected[0])
            same_class = int(outputs[0].argmax()) == int(expected[0].argmax())
            results.append({'model': name, 'error': error, 'rtol': meta['rtol'],
                            'ok': error <= meta['rtol'] and same_class})
        except CAPIError as e:
            results.append({'model': name, 'ok': False, 'problem': str(e)[:300]})
        r = results[-1]
        print(f"zoo {name}: {'match' if r['ok'] else 'MISMATCH'} against MXNet "
              f"({r.get('problem') or 'relative error %.2g' % r['error']})")
    results.extend(api_paths(api, args))
    return {'models': results}


def api_paths(api, args):
    """MXPredPartialForward and MXPredReshape on the GPU, against a whole
    pass on the CPU."""
    cases = dict(load_cases(args.zoo_dir))
    name = 'squeezenet1.1'
    if name not in cases or not os.path.exists(os.path.join(args.zoo_dir, f'{name}-0000.params')):
        return []
    symbol = symbol_of(args, name)
    params = read(os.path.join(args.zoo_dir, f'{name}-0000.params'))
    x = np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype(np.float32)
    x2 = np.random.default_rng(4).standard_normal((2, 3, 224, 224)).astype(np.float32)
    results = []
    try:
        expected = api.predict(symbol, params, {'data': x}, dev_type=CPU)[0]
        expected2 = api.predict(symbol, params, {'data': x2}, dev_type=CPU)[0]
        handle = api.create(symbol, params, {'data': x.shape}, dev_type=GPU)
        api.set_input(handle, 'data', x)
        step = 0
        while api.partial_forward(handle, step) > 0:
            step += 1
        error = relative_error(api.output(handle, 0), expected)
        results.append({'model': name + ' partial forward', 'error': error, 'ok': error <= 1e-4})
        reshaped = api.reshape(handle, {'data': x2.shape})
        api.set_input(reshaped, 'data', x2)
        api.forward(reshaped)
        error = relative_error(api.output(reshaped, 0), expected2)
        results.append({'model': name + ' reshaped to batch 2', 'error': error, 'ok': error <= 1e-4})
        api.free(reshaped)
        api.free(handle)
    except CAPIError as e:
        results.append({'model': name + ' API paths', 'ok': False, 'problem': str(e)[:300]})
    for r in results:
        print(f"api {r['model']}: {'match' if r['ok'] else 'MISMATCH'} GPU vs CPU "
              f"({r.get('problem') or 'relative error %.2g' % r['error']})")
    return results


def random_params(spec, seed):
    """Weights that keep activations in range through deep networks (He
    scaling), with BatchNorm statistics and affine terms randomised."""
    rng = np.random.default_rng(seed)
    params = {}
    for key, entry in spec['params'].items():
        shape = tuple(entry['shape'])
        name = key.split(':', 1)[-1]
        if name.endswith(('_gamma', '_running_var', '_moving_var')):
            value = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(('_beta', '_running_mean', '_moving_mean', '_bias')):
            value = rng.normal(0, 0.1, shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            value = rng.normal(0, np.sqrt(2.0 / max(fan_in, 1)), shape)
        params[key] = value.astype(entry['dtype'])
    return ndfile.save(params)


def symbol_of(args, model):
    return read(os.path.join(args.zoo_dir, f'{model}-symbol.json'), 'r')


def stage_random(api, args):
    with open(os.path.join(HERE, 'zoo_shapes.json'), encoding='utf-8') as f:
        models = json.load(f)['models']
    rng = np.random.default_rng(7)
    results = []
    # Smallest first, so a time limit leaves out the largest.
    order = sorted(models, key=lambda m: sum(np.prod(p['shape']) for p in models[m]['params'].values()))
    for model in order:
        spec = models[model]
        symbol = symbol_of(args, model)
        params = random_params(spec, seed=len(model))
        for batch in (1, 4):
            started = time.perf_counter()
            inputs = {k: rng.standard_normal([batch] + v[1:]).astype(np.float32)
                      for k, v in spec['inputs'].items()}
            try:
                cpu = api.predict(symbol, params, inputs, dev_type=CPU)[0]
                gpu = api.predict(symbol, params, inputs, dev_type=GPU)[0]
                error = relative_error(gpu, cpu)
                same = bool((gpu.argmax(axis=-1) == cpu.argmax(axis=-1)).all())
                results.append({'model': model, 'batch': batch, 'error': error,
                                'ok': error <= 1e-4 and same})
            except CAPIError as e:
                results.append({'model': model, 'batch': batch, 'ok': False,
                                'problem': str(e)[:300]})
            r = results[-1]
            r['seconds'] = time.perf_counter() - started
            print(f"random {model} batch {batch}: {'match' if r['ok'] else 'MISMATCH'} GPU vs CPU "
                  f"({r.get('problem') or 'relative error %.2g' % r['error']}; {r['seconds']:.1f} s)")
    return {'runs': results}


def stderr_of(path, work):
    """Runs work() with file descriptor 2 sent to `path`; the file's text."""
    saved = os.dup(2)
    with open(path, 'w') as sink:
        os.dup2(sink.fileno(), 2)
        try:
            work()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    return read(path, 'r')


def describe(api, args, model, params, shapes):
    """The runner's own account of where each node runs (profile=1 prints it)."""
    def work():
        handles = api.create_with_options(symbol_of(args, model), params, shapes,
                                          {'device': 'gpu:0', 'profile': '1'})
        api.free(handles[0])
    try:
        text = stderr_of(os.path.join(args.out, f'describe-{model}.txt'), work)
    except CAPIError as e:
        return f'(no description: {e})'
    lines = [line for line in text.splitlines() if line.startswith('mxlite GPU')]
    return lines[0] if lines else '(no description)'


def profile(api, args, model, params, x, options, passes=5):
    """Per-node GPU times (profile=2, node by node between CUDA events) of
    `passes` passes after the first, written to OUT/profile-<model>-<tag>.txt;
    the total in ms per pass (the profile's own mean)."""
    tag = '-'.join(f'{k}_{v}' for k, v in options.items()) or 'default'
    path = os.path.join(args.out, f'profile-{model}-b{x.shape[0]}-{tag}.txt')

    def work():
        handle = api.create_with_options(symbol_of(args, model), params, {'data': x.shape},
                                         dict(options, device='gpu:0', profile='2'))[0]
        for _ in range(passes + 1):
            api.set_input(handle, 'data', x)
            api.forward(handle)
        api.free(handle)
    text = stderr_of(path, work)
    found = re.search(r'([0-9.]+) ms in operators', text)
    return float(found.group(1)) if found else float('nan')


def time_loop(run, warmup, repeats):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def stage_bench(api, args):
    import torch
    import torchvision
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(HERE, 'zoo_shapes.json'), encoding='utf-8') as f:
        models = json.load(f)['models']
    peers = {'resnet18_v1': 'resnet18', 'resnet50_v2': 'resnet50',
             'mobilenetv2_1.0': 'mobilenet_v2'}
    rows = []
    for model, peer in peers.items():
        params = random_params(models[model], seed=len(model))
        net = getattr(torchvision.models, peer)().eval().cuda()
        row = {'model': model, 'peer': f'torchvision {peer}',
               'describe': describe(api, args, model, params, {'data': (1, 3, 224, 224)})}
        for batch, warmup, repeats in ((1, 20, 100), (64, 3, 10)):
            x = np.random.default_rng(1).standard_normal((batch, 3, 224, 224)).astype(np.float32)
            timed, outputs = {}, {}
            # The default (cuDNN's first choice where it loaded, chains
            # fused), cuDNN off (im2col GEMM), convolution forms timed at
            # bind (conv_tuning), and at batch 64 the graph as written.
            configs = [('mxlite_ms', {}), ('mxlite_gemm_ms', {'cudnn': 'off'}),
                       ('mxlite_tuned_ms', {'conv_tuning': '1'})]
            if batch == 64:
                configs.append(('mxlite_unfused_ms', {'graph_optimization': '0'}))
            for tag, options in configs:
                handle = api.create_with_options(symbol_of(args, model), params,
                                                 {'data': x.shape},
                                                 dict(options, device='gpu:0'))[0]

                def ours():
                    api.set_input(handle, 'data', x)
                    api.forward(handle)
                    return api.output(handle, 0)

                timed[tag] = time_loop(ours, warmup, repeats)
                outputs[tag] = ours()
                if tag == 'mxlite_ms':  # the pass's parts: input in, forward, output out
                    pieces = (('set_input_ms', lambda: api.set_input(handle, 'data', x)),
                              ('forward_ms', lambda: api.forward(handle)),
                              ('output_ms', lambda: api.output(handle, 0)))
                    for part, run_part in pieces:
                        timed[part] = time_loop(run_part, 2, repeats)
                api.free(handle)
            mine = timed['mxlite_ms']
            # Every configuration computes the same numbers (GPU against GPU).
            agreement = max(relative_error(outputs[tag], outputs['mxlite_ms'])
                            for tag in outputs)
            x_gpu = torch.from_numpy(x).cuda()

            def theirs_host():
                with torch.inference_mode():
                    net(torch.from_numpy(x).cuda()).cpu()

            def theirs_device():
                with torch.inference_mode():
                    net(x_gpu)
                torch.cuda.synchronize()

            host = time_loop(theirs_host, warmup, repeats)
            device = time_loop(theirs_device, warmup, repeats)
            row[f'batch{batch}'] = dict({tag: t * 1e3 for tag, t in timed.items()},
                                        torch_host_ms=host * 1e3, torch_device_ms=device * 1e3,
                                        configs_relative_error=agreement)
            if batch == 64:  # where the time goes, with and without cuDNN
                for options in ({}, {'cudnn': 'off'}):
                    key = 'kernels_ms' + ('_gemm' if options else '')
                    row[f'batch{batch}'][key] = profile(api, args, model, params, x, options)
            unfused = (f', {timed["mxlite_unfused_ms"] * 1e3:.3f} unfused'
                       if 'mxlite_unfused_ms' in timed else '')
            parts = (f'set_input {timed["set_input_ms"] * 1e3:.3f} + forward '
                     f'{timed["forward_ms"] * 1e3:.3f} + output {timed["output_ms"] * 1e3:.3f} ms')
            print(f'bench {model} batch {batch}: mxlite {mine * 1e3:.3f} ms ({parts}) '
                  f'({timed["mxlite_gemm_ms"] * 1e3:.3f} without cuDNN, '
                  f'{timed["mxlite_tuned_ms"] * 1e3:.3f} tuned{unfused}; configurations '
                  f'agree to {agreement:.2g}), PyTorch '
                  f'{host * 1e3:.3f} ms host to host, {device * 1e3:.3f} ms on the device; '
                  f'ratio {mine / host:.2f} / {mine / device:.2f}'
                  + (f'; node by node {row["batch64"]["kernels_ms"]:.2f} ms '
                     f'({row["batch64"]["kernels_ms_gemm"]:.2f} without cuDNN)'
                     if batch == 64 else ''))
        print(f"  {row['describe']}")
        rows.append(row)
        net = None
        torch.cuda.empty_cache()
    return {'rows': rows, 'torch': torch.__version__,
            'device': torch.cuda.get_device_name(0)}


def stage_sanitize(api, args):
    problems = []
    for name in ('squeezenet1.1',):
        if os.path.exists(os.path.join(args.zoo_dir, f'{name}-0000.params')):
            meta = dict(load_cases(args.zoo_dir))[name]
            outputs, expected = run_fixture(api, args.zoo_dir, name, meta, GPU)
            if relative_error(outputs[0], expected[0]) > meta['rtol']:
                problems.append(name)
    directory = os.path.join(ROOT, 'tests', 'fixtures', 'ops')
    wanted = re.compile(r'^(conv|pool|fc|softmax|bn|concat|act)')
    for name, meta in load_cases(directory):
        if wanted.match(name):
            outputs, expected = run_fixture(api, directory, name, meta, GPU)
            if any(relative_error(o, e) > meta['rtol'] for o, e in zip(outputs, expected)):
                problems.append(name)
    print(f'sanitize run: {len(problems)} mismatches {problems}')
    return {'mismatches': problems}


def stage_probe(api, args):
    """One model (--model) node by node on the GPU, printing each step
    before it runs: where a pass hangs or fails, and the runner's account."""
    with open(os.path.join(HERE, 'zoo_shapes.json'), encoding='utf-8') as f:
        spec = json.load(f)['models'][args.model]
    symbol = symbol_of(args, args.model)
    params = random_params(spec, seed=len(args.model))
    shapes = {k: tuple(v) for k, v in spec['inputs'].items()}
    inputs = {k: np.random.default_rng(5).standard_normal(v).astype(np.float32)
              for k, v in shapes.items()}
    print('describe:', describe(api, args, args.model, params, shapes), flush=True)
    started = time.perf_counter()
    expected = api.predict(symbol, params, inputs, dev_type=CPU)[0]
    print(f'cpu pass: {time.perf_counter() - started:.2f} s', flush=True)
    nodes = [n for n in json.loads(symbol)['nodes']]
    handle = api.create(symbol, params, shapes, dev_type=GPU)
    for key, value in inputs.items():
        api.set_input(handle, key, value)
    step = 0
    while True:
        node = nodes[step] if step < len(nodes) else {}
        print(f"step {step} {node.get('op')} {node.get('name')}", flush=True)
        if api.partial_forward(handle, step) <= 0:
            break
        step += 1
    error = relative_error(api.output(handle, 0), expected)
    print(f'gpu node by node: relative error {error:.2g}', flush=True)
    started = time.perf_counter()
    api.forward(handle)
    api.forward(handle)
    print(f'gpu two passes: {time.perf_counter() - started:.3f} s, relative error '
          f'{relative_error(api.output(handle, 0), expected):.2g}', flush=True)
    api.free(handle)
    return {'error': error}


def stage_python(api, args):
    """The Python package built with MXLITE_CUDA=1 (gpu_check.sh installs it
    into OUT/python-cuda): Predictor(ctx=mx.gpu(0)) against MXNet on the
    zoo fixtures sent along and against the same package's CPU path with
    random weights, the device line of summary() after a few passes
    (where nodes run, whether the pass replays as a CUDA graph), and
    predict()'s time at batch 1 and 64."""
    del api
    sys.path.insert(0, os.path.join(args.out, 'python-cuda'))
    import mxlite as mx
    print(f'package {mx.__file__}: {mx.context.num_gpus()} GPU(s)')
    device = mx.gpu(0) if GPU == 2 else mx.cpu()  # --dev-type 1: the script on the CPU
    results = []
    for name, meta in load_cases(args.zoo_dir):
        prefix = os.path.join(args.zoo_dir, name)
        if not os.path.exists(prefix + '-0000.params'):
            continue
        data = np.load(prefix + '-io.npz')
        x = data['input:data']
        output = mx.Predictor.load(prefix, input_shapes={'data': x.shape},
                                   ctx=device).predict(data=x)
        error = relative_error(output, data['output:0'])
        results.append({'model': name, 'error': error, 'ok': error <= meta['rtol']})
        print(f"python {name} on {device}: {'match' if results[-1]['ok'] else 'MISMATCH'} "
              f'against MXNet (relative error {error:.2g})')
    with open(os.path.join(HERE, 'zoo_shapes.json'), encoding='utf-8') as f:
        models = json.load(f)['models']
    for model in ('resnet18_v1', 'mobilenetv2_1.0'):
        params = random_params(models[model], seed=len(model))
        for batch, repeats in ((1, 50), (64, 10)):
            x = np.random.default_rng(2).standard_normal((batch, 3, 224, 224)).astype(np.float32)
            symbol = symbol_of(args, model)
            gpu = mx.Predictor(symbol, params, {'data': x.shape}, ctx=device)
            cpu = mx.Predictor(symbol, params, {'data': x.shape}).predict(data=x)
            seconds = time_loop(lambda: gpu.predict(data=x), 3, repeats)
            error = relative_error(gpu.predict(data=x), cpu)
            where = gpu.summary().splitlines()[-1]
            results.append({'model': f'{model} batch {batch}', 'error': error,
                            'ok': error <= 1e-4, 'predict_ms': seconds * 1e3,
                            'device': where})
            print(f"python {model} batch {batch}: {'match' if error <= 1e-4 else 'MISMATCH'} "
                  f'GPU vs CPU (relative error {error:.2g}); predict {seconds * 1e3:.3f} ms\n'
                  f'  {where}')
    return {'results': results}


STAGES = {'ops': stage_ops, 'probe': stage_probe, 'zoo': stage_zoo, 'random': stage_random,
          'bench': stage_bench, 'python': stage_python, 'sanitize': stage_sanitize}


def main():
    global GPU
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('stage', choices=sorted(STAGES))
    parser.add_argument('--library', default=os.path.join(ROOT, 'build', 'libmxlite-cuda.so'))
    parser.add_argument('--zoo-dir', default=os.path.join(ROOT, 'build', 'gpu_carry'))
    parser.add_argument('--out', default=os.path.join(ROOT, 'build', 'gpu_check'))
    parser.add_argument('--model', default='inceptionv3', help='the probe stage\'s model')
    parser.add_argument('--dev-type', type=int, default=GPU,
                        help='1 checks the script itself on the CPU')
    args = parser.parse_args()
    GPU = args.dev_type
    os.makedirs(args.out, exist_ok=True)
    api = API(load_library(args.library))
    started = time.time()
    try:
        result = STAGES[args.stage](api, args)
    except Exception:  # recorded, so the other stages' results still make a report
        traceback.print_exc()
        result = {'crashed': traceback.format_exc()}
    result['seconds'] = time.time() - started
    with open(os.path.join(args.out, f'{args.stage}.json'), 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=1)
    return 1 if 'crashed' in result else 0


if __name__ == '__main__':
    sys.exit(main())
