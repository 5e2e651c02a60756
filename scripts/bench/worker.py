"""One runtime of the benchmark, driven by scripts/bench.py over a pipe.

    python worker.py capi LIBRARY   # a library with MXNet's C predict API
                                    # (libmxlite.so or MXNet's libmxnet.so)
    python worker.py ort            # ONNX Runtime (onnxruntime must import)
    python worker.py numpy          # numpy.matmul, for the dot case only

The parent sets the thread count through the environment (and, for ONNX
Runtime, the THREADS argument of "load") before it starts the worker, so each
runtime keeps its own thread pool and libraries in its own process.

Protocol: one JSON object per line on stdin; one JSON reply per line on the
file descriptor that was stdout when the worker started. Stdout itself is
pointed at stderr first, so a library that prints cannot corrupt the replies.

    {"cmd": "load", "model": {...}, "threads": T}
        (model["batch"] > 1: the fixture's image repeated that many times, the
        input shape and ONNX file made for that batch)
        -> {"load_s": seconds to build the predictor/session from the files,
            "rss_before_kb": peak RSS before loading}
    {"cmd": "run", "n": N}  -> {"times": [seconds per iteration],
                                "cpu": [CPU seconds of all the process's threads
                                        per iteration],
                                "preempted": [involuntary context switches of the
                                              process's threads per iteration]}
    {"cmd": "check"}        -> {"rel_err": max|out - expected| / max|expected|}
    {"cmd": "stats"}        -> {"maxrss_kb": peak RSS so far,
                                "cpu_s": CPU time of the process so far}
    {"cmd": "exit"}

An iteration is one inference as an application does it: set the input, run,
copy the output out (MXPredSetInput + MXPredForward + MXPredGetOutput, or
InferenceSession.run, which does the same three things). Errors come back as
{"error": text}.
"""
import ctypes
import json
import os
import resource
import sys
import time
import traceback

import numpy as np

mx_uint = ctypes.c_uint32


def peak_rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)  # all threads of this process
    return usage.ru_utime + usage.ru_stime


def relative_error(actual, expected):
    scale = float(np.max(np.abs(expected)))
    return float(np.max(np.abs(actual.astype(np.float64) - expected))) / max(scale, 1e-30)


class CPredictRuntime:
    """MXNet's C predict API over ctypes; the same code drives mxlite and MXNet."""

    def __init__(self, library):
        self.lib = ctypes.CDLL(library)
        self.lib.MXGetLastError.restype = ctypes.c_char_p
        self.handle = None

    def check(self, rc, call):
        if rc != 0:
            raise RuntimeError('%s failed: %s' % (call, self.lib.MXGetLastError().decode(
                'utf-8', 'replace')))

    def load(self, model, threads):
        del threads  # set through the environment before the library was loaded
        start = time.perf_counter()
        with open(model['symbol'], 'rb') as f:
            symbol_json = f.read()
        with open(model['params'], 'rb') as f:
            params = f.read()
        shape = model['input_shape']
        keys = (ctypes.c_char_p * 1)(model['input_name'].encode())
        indptr = (mx_uint * 2)(0, len(shape))
        dims = (mx_uint * len(shape))(*shape)
        handle = ctypes.c_void_p()
        self.check(self.lib.MXPredCreate(ctypes.c_char_p(symbol_json), params,
                                         ctypes.c_int(len(params)), 1, 0, mx_uint(1), keys,
                                         indptr, dims, ctypes.byref(handle)), 'MXPredCreate')
        self.handle = handle
        # The output buffer is sized once, as an application would do.
        out_dims = ctypes.POINTER(mx_uint)()
        ndim = mx_uint()
        self.check(self.lib.MXPredGetOutputShape(handle, mx_uint(0), ctypes.byref(out_dims),
                                                 ctypes.byref(ndim)), 'MXPredGetOutputShape')
        self.output = np.empty([out_dims[i] for i in range(ndim.value)], dtype=np.float32)
        return time.perf_counter() - start

    def prepare(self, inputs):
        self.input_name = next(iter(inputs)).encode()
        self.input = np.ascontiguousarray(next(iter(inputs.values())), dtype=np.float32)
        self.input_ptr = self.input.ctypes.data_as(ctypes.c_void_p)
        self.output_ptr = self.output.ctypes.data_as(ctypes.c_void_p)

    def infer(self):
        lib, handle = self.lib, self.handle
        self.check(lib.MXPredSetInput(handle, self.input_name, self.input_ptr,
                                      mx_uint(self.input.size)), 'MXPredSetInput')
        self.check(lib.MXPredForward(handle), 'MXPredForward')
        self.check(lib.MXPredGetOutput(handle, mx_uint(0), self.output_ptr,
                                       mx_uint(self.output.size)), 'MXPredGetOutput')
        return self.output


class OrtRuntime:
    """ONNX Runtime on the CPU with the settings a latency-minded user picks."""

    def __init__(self):
        import onnxruntime
        self.ort = onnxruntime

    def load(self, model, threads):
        ort = self.ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        start = time.perf_counter()
        self.session = ort.InferenceSession(model['onnx'], options,
                                            providers=['CPUExecutionProvider'])
        return time.perf_counter() - start

    def prepare(self, inputs):
        self.feed = {name: np.ascontiguousarray(value, dtype=np.float32)
                     for name, value in inputs.items()}
        self.output_names = [self.session.get_outputs()[0].name]

    def infer(self):
        return self.session.run(self.output_names, self.feed)[0]


class NumpyMatmulRuntime:
    """numpy.matmul (OpenBLAS in numpy's wheel) of the dot case: data x weight^T."""

    def load(self, model, threads):
        del threads  # OPENBLAS_NUM_THREADS, set by the parent
        start = time.perf_counter()
        self.weight_t = np.load(model['weight_npy']).T  # a view: BLAS reads it transposed
        return time.perf_counter() - start

    def prepare(self, inputs):
        self.input = np.ascontiguousarray(next(iter(inputs.values())), dtype=np.float32)
        self.output = np.empty((self.input.shape[0], self.weight_t.shape[1]), np.float32)

    def infer(self):
        return np.matmul(self.input, self.weight_t, out=self.output)


def make_runtime(argv):
    kind = argv[0] if argv else ''
    if kind == 'capi' and len(argv) == 2:
        return CPredictRuntime(argv[1])
    if kind == 'ort':
        return OrtRuntime()
    if kind == 'numpy':
        return NumpyMatmulRuntime()
    raise SystemExit('usage: worker.py capi LIBRARY | ort | numpy')


class Worker:
    def __init__(self, runtime):
        self.runtime = runtime
        self.expected = None

    def load(self, request):
        model = request['model']
        rss_before = peak_rss_kb()
        load_s = self.runtime.load(model, int(request.get('threads', 1)))
        io = np.load(model['io'])
        # A batch case repeats the fixture's one image; every row must give MXNet's output.
        data, expected = io['input:' + model['input_name']], io['output:0']
        batch = int(model.get('batch', data.shape[0]))
        if batch != data.shape[0]:
            data = np.repeat(data[:1], batch, axis=0)
            expected = np.repeat(expected[:1], batch, axis=0)
        self.runtime.prepare({model['input_name']: data})
        self.expected = expected
        return {'load_s': load_s, 'rss_before_kb': rss_before}

    def run(self, request):
        # An involuntary switch means the scheduler gave one of our threads'
        # cores to another process mid-inference: the parent can drop that time.
        # CPU time is what the inference cost whatever else ran on the machine.
        infer = self.runtime.infer
        clock, cpu_clock = time.perf_counter, time.process_time
        usage = resource.getrusage
        times, cpu, preempted = [], [], []
        for _ in range(int(request['n'])):
            switches = usage(resource.RUSAGE_SELF).ru_nivcsw
            cpu_start = cpu_clock()
            start = clock()
            infer()
            times.append(clock() - start)
            cpu.append(cpu_clock() - cpu_start)
            preempted.append(usage(resource.RUSAGE_SELF).ru_nivcsw - switches)
        return {'times': times, 'cpu': cpu, 'preempted': preempted}

    def check(self, request):
        del request
        return {'rel_err': relative_error(np.asarray(self.runtime.infer()), self.expected)}

    def stats(self, request):
        del request
        return {'maxrss_kb': peak_rss_kb(), 'cpu_s': cpu_seconds()}


def main(argv):
    # Replies go to the original stdout; anything a library prints goes to stderr.
    replies = os.fdopen(os.dup(1), 'w', buffering=1)
    os.dup2(2, 1)
    try:
        worker = Worker(make_runtime(argv))
    except Exception as error:  # report a library that fails to load, then stop
        replies.write(json.dumps({'error': 'start: %s: %s' % (type(error).__name__, error)}) + '\n')
        return 1
    replies.write(json.dumps({'ready': True, 'maxrss_kb': peak_rss_kb()}) + '\n')
    handlers = {'load': worker.load, 'run': worker.run, 'check': worker.check,
                'stats': worker.stats}
    for line in sys.stdin:
        request = json.loads(line)
        command = request.get('cmd')
        if command == 'exit':
            break
        try:
            reply = handlers[command](request)
        except Exception as error:  # the parent records it and goes on with other runtimes
            traceback.print_exc()
            reply = {'error': '%s: %s: %s' % (command, type(error).__name__, error)}
        replies.write(json.dumps(reply) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
