"""The benchmark's steps that need MXNet 1.9.1; runs in the oracle venv.

    oracle_tools.py export-onnx ZOO_DIR OUT_DIR [--batch N] MODEL...
    oracle_tools.py make-dot-case OUT_DIR SIZE

export-onnx writes OUT_DIR/MODEL.onnx (MODEL-bN.onnx with --batch N: the
input's first axis N) for each zoo checkpoint with
mx.onnx.export_model (onnx 1.14.1), then removes the initializers from the
graph inputs: the exporter lists every weight as an input too, and ONNX Runtime
cannot constant-fold (fuse BatchNorm into Conv, pre-pack weights) a tensor
that a caller could override. Before exporting it works around one exporter
bug: BatchNorm with fix_gamma=True (MXNet's default, and the first BatchNorm
of the resnet v2 models) uses gamma = 1, but the exporter copies the stored
gamma, so the exported model would compute something else. Writing gamma = 1
into the exported weights gives the network MXNet runs.

make-dot-case writes a FullyConnected (no bias) checkpoint that multiplies a
SIZE x SIZE input by a SIZE x SIZE weight, MXNet's output for it (reference
CPU kernels, no oneDNN), and the weight as .npy for numpy.
"""
import os

# Reference kernels for the oracle output of the dot case; the ONNX exporter
# does not run the graph, so this does not change the exported models.
os.environ.setdefault('MXNET_MKLDNN_ENABLED', '0')
os.environ.setdefault('MXNET_SUBGRAPH_BACKEND', 'NONE')

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import mxnet as mx  # noqa: E402
import onnx  # noqa: E402


def parse_bool(text):
    return str(text).strip().lower() in ('true', '1')


def fixed_gamma_names(symbol_path):
    """gamma inputs of BatchNorm nodes whose gamma MXNet ignores (fix_gamma)."""
    with open(symbol_path, encoding='utf-8') as f:
        graph = json.load(f)
    nodes = graph['nodes']
    names = []
    for node in nodes:
        if node['op'] != 'BatchNorm':
            continue
        attrs = node.get('attrs', node.get('param', {})) or {}
        if parse_bool(attrs.get('fix_gamma', 'True')):
            gamma_index = node['inputs'][1][0]
            names.append(nodes[gamma_index]['name'])
    return names


def drop_initializer_inputs(model):
    initializers = {tensor.name for tensor in model.graph.initializer}
    kept = [value for value in model.graph.input if value.name not in initializers]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model


def export_onnx(zoo_dir, out_dir, names, batch=1):
    """NAME.onnx per zoo model, or NAME-bBATCH.onnx with the batch as its input's first axis."""
    with open(os.path.join(zoo_dir, 'manifest.json'), encoding='utf-8') as f:
        cases = json.load(f)['cases']
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        start = time.time()
        prefix = os.path.join(zoo_dir, name)
        symbol = mx.sym.load(prefix + '-symbol.json')
        params = mx.nd.load(prefix + '-0000.params')
        fixed = fixed_gamma_names(prefix + '-symbol.json')
        for gamma in fixed:
            key = 'arg:' + gamma if 'arg:' + gamma in params else gamma
            params[key] = mx.nd.ones_like(params[key])
        # export_model takes one dict of arg and aux params without prefixes.
        plain = {key.split(':', 1)[-1]: value for key, value in params.items()}
        (input_name, input_shape), = cases[name]['inputs'].items()
        input_shape = [batch] + list(input_shape[1:]) if batch != 1 else input_shape
        target = os.path.join(out_dir, name + ('-b%d' % batch if batch != 1 else '') + '.onnx')
        scratch = target + '.tmp'
        mx.onnx.export_model(symbol, plain, in_shapes=[tuple(input_shape)],
                             in_types=[np.float32], onnx_file_path=scratch)
        model = drop_initializer_inputs(onnx.load(scratch))
        if [value.name for value in model.graph.input] != [input_name]:
            raise SystemExit('%s: exported inputs %s, expected [%s]' % (
                name, [value.name for value in model.graph.input], input_name))
        onnx.save(model, scratch)
        os.replace(scratch, target)
        print('export-onnx: %s (%d fix_gamma BatchNorm set to gamma=1) %.1fs' % (
            name, len(fixed), time.time() - start), flush=True)


def make_dot_case(out_dir, size):
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.RandomState(2048)
    data = rng.standard_normal((size, size)).astype(np.float32)
    weight = rng.standard_normal((size, size)).astype(np.float32)
    symbol = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=size, no_bias=True,
                                   name='dot')
    prefix = os.path.join(out_dir, 'dot%d' % size)
    symbol.save(prefix + '-symbol.json')
    mx.nd.save(prefix + '-0000.params', {'arg:dot_weight': mx.nd.array(weight)})
    output = mx.nd.dot(mx.nd.array(data), mx.nd.array(weight), transpose_b=True).asnumpy()
    np.savez(prefix + '-io.npz', **{'input:data': data, 'output:0': output})
    np.save(prefix + '-weight.npy', weight)
    print('make-dot-case: %s' % prefix, flush=True)


def main(argv):
    if len(argv) >= 3 and argv[0] == 'export-onnx':
        batch = 1
        if argv[3:4] == ['--batch']:
            batch, argv = int(argv[4]), argv[:3] + argv[5:]
        export_onnx(argv[1], argv[2], argv[3:], batch)
    elif len(argv) == 3 and argv[0] == 'make-dot-case':
        make_dot_case(argv[1], int(argv[2]))
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
