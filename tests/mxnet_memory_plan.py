"""MXNet 1.9.1's memory plan for inference, exactly, for the memory-plan tests.

Run with the oracle interpreter (MXNet installed):

    python mxnet_memory_plan.py SYMBOL_JSON=N,C,H,W ...   -> one JSON line for each

MXNet prints its plan only floored to whole MiB ("Total 7 MB allocated" in
Executor.debug_str()), which cannot tell 6.1 MiB from 6.9 MiB. So this
script also replays the planner pass (MXPlanMemory, src/nnvm/plan_memory.cc,
as ../shared/reference/MXNET_REFERENCE.md §5.1 describes it) over the same
graph with the shapes MXNet infers, and prints both: the test trusts the
exact replay only where it agrees with MXNet's own floored figure.

The replay, in MXNet's terms: entries are counted 4 bytes per element;
each op node in order first takes in-place buffers (its FInplaceOption
pairs; the input's storage must have one pending reader left, or the pair is
an identity; the output must have a reader and the same size), then requests
storage for its other outputs, largest first, from a free list keyed by
size (smallest free block in [size, 16 size], else the largest in
[size / 16, size), growing it; else a new block), then releases the inputs
its read finished and the outputs nobody reads. The plan is the sum of the
blocks' largest sizes.
"""
import json
import os
import sys

os.environ.setdefault('MXNET_MKLDNN_ENABLED', '0')
os.environ.setdefault('MXNET_SUBGRAPH_BACKEND', 'NONE')

import mxnet as mx  # noqa: E402

MATCH_RANGE = 16
# FInplaceOption (and FInplaceIdentity) of the forward operators in the zoo,
# from MXNet 1.9.1's registrations.
INPLACE = {
    'Activation': [(0, 0, False)], 'LeakyReLU': [(0, 0, False)], 'softmax': [(0, 0, False)],
    'SoftmaxOutput': [(0, 0, False)], 'SoftmaxActivation': [(0, 0, False)],
    'Dropout': [(0, 0, False)],
    'elemwise_add': [(0, 0, False), (1, 0, False)], '_Plus': [(0, 0, False), (1, 0, False)],
    'broadcast_add': [(0, 0, False), (1, 0, False)],
    'Flatten': [(0, 0, True)], 'flatten': [(0, 0, True)], 'Reshape': [(0, 0, True)],
    'reshape': [(0, 0, True)], 'expand_dims': [(0, 0, True)],
}


class FreeList:
    """MXNet's GraphAllocator free list: a multimap from bytes to block."""

    def __init__(self):
        self.free = []  # (bytes, insertion number, block), sorted
        self.sizes = []
        self.inserted = 0

    def request(self, size):
        keys = [entry[0] for entry in self.free]
        mid = next((i for i, k in enumerate(keys) if k >= size), len(keys))
        for i in range(mid, len(keys)):  # larger blocks first, smallest of them
            if keys[i] > size * MATCH_RANGE:
                break
            return self._take(i, size)
        for i in range(mid - 1, -1, -1):  # then the largest smaller block
            if keys[i] < size // MATCH_RANGE:
                break
            return self._take(i, size)
        self.sizes.append(size)
        return len(self.sizes) - 1

    def _take(self, i, size):
        block = self.free.pop(i)[2]
        self.sizes[block] = max(self.sizes[block], size)
        return block

    def release(self, block):
        self.free.append((self.sizes[block], self.inserted, block))
        self.inserted += 1
        self.free.sort()


def replay(symbol, data_shape):
    graph = json.loads(symbol.tojson())
    nodes = graph['nodes']
    internals = symbol.get_internals()
    _, shapes, _ = internals.infer_shape(data=data_shape)
    shape_of = dict(zip(internals.list_outputs(), shapes))

    def output_shapes(nid):
        node = nodes[nid]
        visible = shape_of[node['name'] + '_output']
        data = shape_of[entry_name(node['inputs'][0])] if node['inputs'] else None
        if node['op'] == 'BatchNorm':  # output, mean, var
            return [visible, (data[1],), (data[1],)]
        if node['op'] == 'Dropout':  # output, mask
            return [visible, data]
        if node['op'] == 'Pooling' and node.get('attrs', {}).get('pool_type', 'max') == 'max':
            # The pip build is compiled with oneDNN, which registers a hidden
            # workspace output of the output's shape for max pooling, even
            # when MXNET_MKLDNN_ENABLED=0 keeps oneDNN from running.
            return [visible, visible]
        return [visible]

    def entry_name(entry):
        node = nodes[entry[0]]
        return node['name'] if node['op'] == 'null' else node['name'] + '_output'

    def size(shape):
        count = 1
        for dim in shape:
            count *= dim
        return count

    outputs = {nid: output_shapes(nid) for nid, node in enumerate(nodes) if node['op'] != 'null'}
    readers = {}
    for node in nodes:
        for entry in node['inputs']:
            readers[(entry[0], entry[1])] = readers.get((entry[0], entry[1]), 0) + 1
    for head in graph['heads']:
        readers[(head[0], head[1])] = readers.get((head[0], head[1]), 0) + 1

    storage = {}  # entry -> block
    block_refs = {}
    allocator = FreeList()
    for nid, node in enumerate(nodes):
        if node['op'] == 'null':
            continue
        shapes_out = outputs[nid]
        taken = set()
        for i, o, identity in INPLACE.get(node['op'], []):
            source = tuple(node['inputs'][i][:2])
            if i in taken or (nid, o) in storage or source not in storage:
                continue
            if (block_refs[storage[source]] == 1 or identity) and readers.get((nid, o), 0) > 0 \
                    and size(shapes_out[o]) == size(shape_of[entry_name(node['inputs'][i])]):
                storage[(nid, o)] = storage[source]
                block_refs[storage[source]] += readers.get((nid, o), 0)
                taken.add(i)
        # Largest first; among equal sizes the last output first (MXNet walks
        # a multimap keyed by size backwards).
        order = sorted(range(len(shapes_out)), key=lambda o: (-size(shapes_out[o]), -o))
        for o in order:
            if (nid, o) in storage:
                continue
            block = allocator.request(size(shapes_out[o]) * 4)
            storage[(nid, o)] = block
            block_refs[block] = readers.get((nid, o), 0)
        for entry in node['inputs']:
            block = storage.get(tuple(entry[:2]))
            if block is not None:
                block_refs[block] -= 1
                if block_refs[block] == 0:
                    allocator.release(block)
        for o in range(len(shapes_out)):
            if readers.get((nid, o), 0) == 0 and block_refs[storage[(nid, o)]] == 0:
                allocator.release(storage[(nid, o)])
    return sum(allocator.sizes)


def debug_mb(symbol, data_shape):
    executor = symbol.simple_bind(mx.cpu(), grad_req='null', data=data_shape)
    line = next(l for l in executor.debug_str().splitlines() if l.endswith('MB allocated'))
    return int(line.split()[1])


def main():
    for argument in sys.argv[1:]:
        path, text = argument.rsplit('=', 1)
        symbol = mx.sym.load(path)
        shape = tuple(int(d) for d in text.split(','))
        print(json.dumps({'symbol': path, 'shape': list(shape),
                          'debug_str_mb': debug_mb(symbol, shape),
                          'replayed_bytes': replay(symbol, shape)}), flush=True)


if __name__ == '__main__':
    main()
