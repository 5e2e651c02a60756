"""Load time and peak memory of a predictor against the size of its graph.

    python scripts/bench/load_scaling.py [--library PATH] [--nodes 1000 10000 100000] [--json]

For each size N, a fresh child process builds the symbol JSON of a chain of
N relu nodes (Activation act_type=relu, each reading the one before; no
parameters), creates a predictor for it through the C predict API
(MXPredCreate: parsing, shape inference, memory planning, operator
preparation), runs one forward pass, and checks the output. It reports the
seconds MXPredCreate took, the seconds of the forward pass, and the child's
peak resident memory (ru_maxrss) before and after. The library is the
package's libmxlite, MXLITE_LIBRARY, or --library. tests/test_c_api.py runs
it to check that loading stays near linear in the graph size.
"""
import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def relu_chain(nodes):
    """Symbol JSON of data -> relu_0 -> ... -> relu_{nodes-1}."""
    parts = ['{"op": "null", "name": "data", "inputs": []}']
    for i in range(nodes):
        parts.append('{"op": "Activation", "name": "relu_%d", "attrs": {"act_type": "relu"}, '
                     '"inputs": [[%d, 0, 0]]}' % (i, i))
    return ('{"nodes": [' + ', '.join(parts) + '], "arg_nodes": [0], "heads": [[%d, 0, 0]], '
            '"attrs": {"mxnet_version": ["int", 10901]}}' % nodes)


def reset_peak_rss():
    """Starts the peak-RSS count afresh. A child started from a large process
    (a long pytest run) inherits its high-water mark across exec, so
    ru_maxrss would report the parent's size; Linux resets the mark when "5"
    is written to /proc/self/clear_refs."""
    try:
        with open('/proc/self/clear_refs', 'w', encoding='ascii') as f:
            f.write('5')
    except OSError:
        pass


def peak_rss_kib():
    """VmHWM (since the reset above), else ru_maxrss."""
    try:
        with open('/proc/self/status', encoding='ascii') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(library, nodes):
    """Runs in the child: one size, printed as one JSON line."""
    reset_peak_rss()
    symbol = relu_chain(nodes).encode()
    rss_before = peak_rss_kib()
    lib = ctypes.CDLL(library)
    lib.MXGetLastError.restype = ctypes.c_char_p
    keys = (ctypes.c_char_p * 1)(b'data')
    indptr = (ctypes.c_uint32 * 2)(0, 2)
    shape = (ctypes.c_uint32 * 2)(1, 8)
    handle = ctypes.c_void_p()
    start = time.perf_counter()
    rc = lib.MXPredCreate(symbol, b'', 0, 1, 0, 1, keys, indptr, shape, ctypes.byref(handle))
    load = time.perf_counter() - start
    if rc != 0:
        sys.exit('MXPredCreate failed: ' + lib.MXGetLastError().decode())
    values = [float(i) - 3.5 for i in range(8)]
    data = (ctypes.c_float * 8)(*values)
    output = (ctypes.c_float * 8)()
    start = time.perf_counter()
    ok = (lib.MXPredSetInput(handle, b'data', data, 8) == 0 and lib.MXPredForward(handle) == 0
          and lib.MXPredGetOutput(handle, 0, output, 8) == 0)
    forward = time.perf_counter() - start
    if not ok:
        sys.exit('forward failed: ' + lib.MXGetLastError().decode())
    if list(output) != [max(v, 0.0) for v in values]:
        sys.exit(f'wrong output {list(output)}')
    lib.MXPredFree(handle)
    rss_after = peak_rss_kib()
    print(json.dumps({'nodes': nodes, 'load_s': load, 'forward_s': forward,
                      'peak_rss_mib': rss_after / 1024, 'rss_before_mib': rss_before / 1024}))


def measure(library, nodes, timeout=None):
    """Runs one size in a fresh child; returns its dict (raises on failure)."""
    result = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', library,
                             str(nodes)], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f'{nodes} nodes: exit {result.returncode}: {result.stderr[-2000:]}')
    return json.loads(result.stdout.splitlines()[-1])


def default_library():
    if os.environ.get('MXLITE_LIBRARY'):
        return os.environ['MXLITE_LIBRARY']
    # The installed package's library; the source tree's package (whose
    # library exists only after an in-place build) only when none is installed.
    sys.path.append(os.path.join(ROOT, 'bindings', 'python'))
    import mxlite
    return mxlite.lib_path()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == '--child':
        child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--library', help='libmxlite to load (default: MXLITE_LIBRARY, '
                        "else the installed package's)")
    parser.add_argument('--nodes', type=int, nargs='+', default=[1000, 10000, 100000])
    parser.add_argument('--json', action='store_true', help='one JSON object per size')
    args = parser.parse_args()
    library = args.library or default_library()
    if not args.json:
        print(f'{"nodes":>8} {"load s":>9} {"forward s":>10} {"peak RSS MiB":>13}')
    for nodes in args.nodes:
        row = measure(library, nodes)
        if args.json:
            print(json.dumps(row))
        else:
            print(f'{nodes:>8} {row["load_s"]:>9.3f} {row["forward_s"]:>10.4f} '
                  f'{row["peak_rss_mib"]:>13.1f}')


if __name__ == '__main__':
    main()
