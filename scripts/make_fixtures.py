#!/usr/bin/env python3
"""Generate MXNet 1.9.1 oracle fixtures for the mxlite test-suite.

Runs inside the MXNet oracle venv (see scripts/setup_oracle.sh).  The product
tests run under a different Python (numpy 2.x, no mxnet) and only *read* what
this script writes, so every expected value is computed here by MXNet itself.

Usage::

    make_fixtures.py ops     OUTDIR               # committed: tests/fixtures/ops
    make_fixtures.py formats OUTDIR               # committed: tests/fixtures/formats
    make_fixtures.py zoo     OUTDIR [--models a,b] # not committed: build/fixtures/zoo

A *case* is one checkpoint plus oracle I/O, laid out in OUTDIR as

* ``NAME-symbol.json`` / ``NAME-0000.params`` -- exactly as MXNet writes them
  (``Symbol.save`` + ``mx.nd.save`` with ``arg:``/``aux:`` prefixes, or Gluon
  ``HybridBlock.export``);
* ``NAME-io.npz`` -- ``input:<name>`` (float32) and ``output:<i>`` arrays; the
  outputs are MXNet's classic executor results (``Symbol.bind``,
  ``grad_req='null'``, ``is_train=False``) for the symbol and params *re-loaded
  from those files*, in head order;
* an entry in ``OUTDIR/manifest.json``::

      {"generated_by": "scripts/make_fixtures.py", ...,
       "cases": {NAME: {"inputs": {name: shape}, "outputs": [shape, ...],
                        "rtol": float, "notes": str, "ops": [op, ...],
                        "mxnet_err_vs_fp64": float | null}}}

  A test loads the checkpoint, feeds the inputs and checks, per output,
  ``max|ours - mxnet| <= rtol * max|mxnet|``.  ``mxnet_err_vs_fp64`` is the
  same relative error measured between MXNet's float32 run and a float64 run
  of the same graph: it shows how much of the tolerance MXNet's own rounding
  already uses.

Modes:

* ``ops``: one small case per operator configuration (random inputs/params,
  awkward sizes, batch 2), rtol 1e-5.
* ``formats``: NDArray container files in every on-disk version (V2 dict and
  list, V3/np, V1 and legacy written by hand, a GPU-context record, sparse)
  with ``NAME-expected.npz`` holding the arrays as ``mx.nd.load`` returns them,
  plus pre-1.0 symbol JSON cases (``legacy_0800``, ``legacy_0900``) that
  MXNet's legacy upgrader must accept.
* ``zoo``: Gluon model-zoo networks (random weights, randomised BatchNorm
  statistics) exported as checkpoints, batch 1, rtol 1e-4.  Each model is
  skipped when its files exist and were made by an identical copy of this
  script (sha256 recorded per case).

Everything is seeded (per case, from a CRC of the case name), and the npz
files are written with fixed zip timestamps, so re-running produces
byte-identical committed fixtures.
"""

import os

# Must be set before mxnet is imported: use MXNet's reference CPU kernels
# (no oneDNN/MKLDNN fusion or subgraph rewriting), which is what the runtime
# is compared against, and keep the storage-fallback warnings quiet.
os.environ["MXNET_MKLDNN_ENABLED"] = "0"
os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
# With oneDNN off, MXNet 1.9.1 still builds its oneDNN RNN state unless told
# not to, then runs the native kernel on it (garbage); this selects the
# native CPU RNN (rnn_impl.h) throughout.
os.environ["MXNET_USE_MKLDNN_RNN"] = "0"
os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zipfile  # noqa: E402
import zlib  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable, Dict, List, Optional, Tuple  # noqa: E402

import numpy as np  # noqa: E402
import mxnet as mx  # noqa: E402

GENERATED_BY = "scripts/make_fixtures.py"
OPS_RTOL = 1e-5
ZOO_RTOL = 1e-4
# If MXNet's own float32 result is further than this from its float64 result,
# a 1e-5 tolerance would leave a correct runtime almost no room: such cases
# get rtol 1e-4 and say so in their notes.
FP32_ERR_BUDGET = OPS_RTOL / 4

CTX = mx.cpu()


# --------------------------------------------------------------------------
# Small utilities
# --------------------------------------------------------------------------

def case_seed(name: str) -> int:
    """Stable per-case seed, so adding or reordering cases changes nothing else."""
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def seed_all(name: str) -> np.random.RandomState:
    """Seed numpy's and MXNet's global generators and return a per-case RNG."""
    seed = case_seed(name)
    np.random.seed(seed)
    mx.random.seed(seed)
    return np.random.RandomState(seed)


def script_sha256() -> str:
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def save_npz(path: str, arrays: Dict[str, np.ndarray]) -> None:
    """np.savez equivalent with fixed zip timestamps (byte-reproducible output)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fid:
                np.lib.format.write_array(fid, np.asarray(arr), allow_pickle=False)


def to_json(obj, indent: int = 0) -> str:
    """Indented JSON that keeps short values (shapes, name lists, small dicts) on one line."""
    pad = " " * indent
    flat = json.dumps(obj)
    if indent > 0 and len(flat) <= 100:
        return flat
    if isinstance(obj, dict) and obj:
        items = ["%s %s: %s" % (pad, json.dumps(k), to_json(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, dict) for v in obj):
        items = ["%s %s" % (pad, to_json(v, indent + 1)) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj)


def write_manifest(outdir: str, mode: str, body: dict) -> None:
    """Write OUTDIR/manifest.json; its first line says it is generated, and how."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = os.path.relpath(os.path.abspath(outdir), repo)
    if where.startswith(".."):  # outside the repo: no machine-specific path
        where = "OUTDIR"
    head = {"generated_by": GENERATED_BY,
            "note": "GENERATED FILE, do not edit; regenerate with: %s %s %s" % (GENERATED_BY, mode, where)}
    first = json.dumps(head)[:-1]  # '{"generated_by": ..., "note": ...' on line 1
    rest = to_json(body)
    text = first + ("," + rest[1:] if body else "}")
    json.loads(text)  # paranoia: must stay valid JSON
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        f.write(text + "\n")


def error_summary(e: Exception) -> str:
    """The informative last line of an MXNetError (the first is 'Traceback ...')."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[-1] if lines else repr(e)


def shape_list(shape) -> List[int]:
    return [int(d) for d in shape]


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    """max|got - ref| / max|ref| -- the metric the tests use."""
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def graph_ops(sym: mx.sym.Symbol) -> List[str]:
    """Distinct operator names in a symbol, in first-use order."""
    ops: List[str] = []
    for node in json.loads(sym.tojson())["nodes"]:
        if node["op"] != "null" and node["op"] not in ops:
            ops.append(node["op"])
    return ops


# --------------------------------------------------------------------------
# Running the oracle
# --------------------------------------------------------------------------

def run_symbol(sym: mx.sym.Symbol, inputs: Dict[str, np.ndarray],
               args: Dict[str, np.ndarray], auxs: Dict[str, np.ndarray],
               dtype=np.float32) -> List[np.ndarray]:
    """Forward `sym` with MXNet's classic executor in inference mode.

    Arguments that are neither inputs nor params (e.g. SoftmaxOutput's
    `<name>_label`) are unused at inference; they get zeros of the inferred
    shape, as MXPredCreate does. dtype None runs every array in its own
    dtype (inputs and params as given, labels as MXNet infers them).
    """
    arg_shapes, _, _ = sym.infer_shape(**{k: v.shape for k, v in inputs.items()})
    arg_types = [np.float32] * len(arg_shapes)
    if dtype is None:
        known = {k: v.dtype for k, v in list(args.items()) + list(inputs.items())}
        arg_types, _, _ = sym.infer_type(**known)
    arg_arrays = []
    for name, shape, typ in zip(sym.list_arguments(), arg_shapes, arg_types):
        if name in inputs:
            value = inputs[name]
        elif name in args:
            value = args[name]
        else:
            assert name.endswith("_label"), "no value for argument %r" % name
            value = np.zeros(shape, dtype=typ)
        arg_arrays.append(mx.nd.array(value, ctx=CTX, dtype=dtype or value.dtype))
    aux_arrays = [mx.nd.array(auxs[n], ctx=CTX, dtype=dtype or auxs[n].dtype)
                  for n in sym.list_auxiliary_states()]
    exe = sym.bind(CTX, args=arg_arrays, aux_states=aux_arrays, grad_req="null")
    outs = [o.asnumpy() for o in exe.forward(is_train=False)]
    mx.nd.waitall()
    return outs


def load_checkpoint(prefix: str) -> Tuple[mx.sym.Symbol, dict, dict]:
    """Load NAME-symbol.json / NAME-0000.params the way MXPredCreate does."""
    sym = mx.sym.load(prefix + "-symbol.json")
    saved = mx.nd.load(prefix + "-0000.params")
    if isinstance(saved, list):  # a param-less graph: an empty file loads as []
        assert not saved, "params file without names"
        saved = {}
    args = {k[4:]: v.asnumpy() for k, v in saved.items() if k.startswith("arg:")}
    auxs = {k[4:]: v.asnumpy() for k, v in saved.items() if k.startswith("aux:")}
    assert len(args) + len(auxs) == len(saved), "unprefixed names in params file"
    return sym, args, auxs


def oracle_from_files(prefix: str, inputs: Dict[str, np.ndarray], dtypes: str = "float32"):
    """Outputs from the files on disk, plus float64 cross-check error.

    dtypes "float32": everything runs in float32 (and again in float64 for the
    cross-check). "typed": inputs and params run in their own dtypes, as
    MXPredCreateEx would run them. "float32_values": MXNet's CPU build has no
    float16 kernels for most operators, so a float16 model is run on the same
    values in float32 (its "__dtype__" hints dropped) to give the reference.
    """
    sym, args, auxs = load_checkpoint(prefix)
    if dtypes == "typed":
        return sym, run_symbol(sym, inputs, args, auxs, dtype=None), None
    if dtypes == "float32_values":
        graph = json.loads(sym.tojson())
        for node in graph["nodes"]:
            node.get("attrs", {}).pop("__dtype__", None)
        sym32 = mx.sym.load_json(json.dumps(graph))
        as32 = lambda arrays: {k: v.astype(np.float32) for k, v in arrays.items()}
        return sym, run_symbol(sym32, as32(inputs), as32(args), as32(auxs)), None
    outs = run_symbol(sym, inputs, args, auxs)
    try:
        outs64 = run_symbol(sym, inputs, args, auxs, dtype=np.float64)
        err64: Optional[float] = max(rel_err(a, b) for a, b in zip(outs, outs64))
    except mx.base.MXNetError as e:  # an op without a float64 CPU kernel
        print("    (no float64 cross-check: %s)" % error_summary(e))
        err64 = None
    return sym, outs, err64


def write_case(outdir: str, name: str, sym: mx.sym.Symbol,
               inputs: Dict[str, np.ndarray], params: Dict[str, np.ndarray],
               rtol: float, notes: str, symbol_json: Optional[str] = None,
               dtypes: str = "float32", output_dtypes: Optional[List[str]] = None) -> dict:
    """Write one checkpoint case and return its manifest entry.

    `params` maps argument/aux names to values; they are split into arg:/aux:
    by asking the symbol.  `symbol_json`, if given, is written instead of
    sym.tojson() (used for the hand-made legacy files).
    """
    prefix = os.path.join(outdir, name)
    if symbol_json is None:
        sym.save(prefix + "-symbol.json")
    else:
        with open(prefix + "-symbol.json", "w") as f:
            f.write(symbol_json)

    arg_names = set(sym.list_arguments())
    aux_names = set(sym.list_auxiliary_states())
    saved = {}
    for pname, value in params.items():
        assert pname not in inputs
        if pname in aux_names:
            saved["aux:" + pname] = mx.nd.array(value, ctx=CTX, dtype=value.dtype)
        else:
            assert pname in arg_names, "%s: unknown param %r" % (name, pname)
            saved["arg:" + pname] = mx.nd.array(value, ctx=CTX, dtype=value.dtype)
    mx.nd.save(prefix + "-0000.params", saved)

    loaded_sym, outs, err64 = oracle_from_files(prefix, inputs, dtypes)
    for i, o in enumerate(outs):
        if not np.all(np.isfinite(o)):
            raise RuntimeError("%s: output %d is not finite" % (name, i))
    if err64 is not None and err64 > FP32_ERR_BUDGET and rtol < 1e-4:
        rtol = 1e-4
        notes += (" rtol raised to 1e-4: MXNet's own float32 result is %.1e (relative) "
                  "away from its float64 result, so 1e-5 would leave no margin." % err64)

    io = {"input:" + k: v if dtypes != "float32" else v.astype(np.float32)
          for k, v in inputs.items()}
    io.update({"output:%d" % i: o for i, o in enumerate(outs)})
    save_npz(prefix + "-io.npz", io)
    entry = {"input_dtypes": {k: str(v.dtype) for k, v in inputs.items()}} if dtypes != "float32" else {}
    return dict(entry, **{
        "output_dtypes": output_dtypes or [str(o.dtype) for o in outs],
        "inputs": {k: shape_list(v.shape) for k, v in inputs.items()},
        "outputs": [shape_list(o.shape) for o in outs],
        "rtol": rtol,
        "notes": notes,
        "ops": graph_ops(loaded_sym),
        "max_abs_output": [float(np.max(np.abs(o))) if o.size else 0.0 for o in outs],
        "mxnet_err_vs_fp64": err64,
    })


# --------------------------------------------------------------------------
# Random parameters
# --------------------------------------------------------------------------

def random_param(name: str, shape, rng: np.random.RandomState) -> np.ndarray:
    """Initialise a parameter by its conventional name suffix.

    Weights are fan-in scaled so activations stay O(1); BN statistics are
    deliberately far from the identity (var in [0.5, 2], gamma != 1) so that
    eps, fix_gamma and the moving stats all visibly matter.
    """
    shape = tuple(int(d) for d in shape)
    if name.endswith("_weight"):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        value = rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape)
    elif name.endswith("_bias"):
        value = rng.uniform(-0.5, 0.5, shape)
    elif name.endswith("_gamma"):
        value = rng.uniform(0.5, 1.5, shape)
    elif name.endswith("_beta"):
        value = rng.uniform(-0.5, 0.5, shape)
    elif name.endswith("_moving_mean"):
        value = rng.normal(0.0, 0.5, shape)
    elif name.endswith("_moving_var"):
        value = rng.uniform(0.5, 2.0, shape)
    elif name.endswith("_parameters"):  # an RNN's weights and biases, one flat vector
        value = rng.uniform(-0.4, 0.4, shape)
    elif name.endswith("_values"):  # plain values, whole and positive for integer storage
        value = np.round(rng.uniform(0.0, 100.0, shape), 1)
    else:
        raise ValueError("no init rule for parameter %r" % name)
    return value.astype(np.float32)


def random_params(sym: mx.sym.Symbol, input_shapes: Dict[str, tuple],
                  rng: np.random.RandomState) -> Dict[str, np.ndarray]:
    """Random values for every argument that is not an input/label, and every aux."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**input_shapes)
    params = {}
    for pname, shape in zip(sym.list_arguments(), arg_shapes):
        if pname in input_shapes or pname.endswith("_label"):
            continue  # inputs go to the npz; labels are unused at inference
        params[pname] = random_param(pname, shape, rng)
    for pname, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        params[pname] = random_param(pname, shape, rng)
    return params


# --------------------------------------------------------------------------
# ops
# --------------------------------------------------------------------------

InputFn = Callable[[np.random.RandomState, tuple], np.ndarray]


def normal(scale: float = 1.0, shift: float = 0.0) -> InputFn:
    return lambda rng, shape: rng.normal(shift, scale, shape)


def softrelu_input(rng: np.random.RandomState, shape: tuple) -> np.ndarray:
    """Wide inputs plus exact values around softrelu's x > 20 switch-over."""
    x = rng.normal(0.0, 12.0, shape)
    flat = x.reshape(-1)
    flat[:8] = [20.0, 20.5, 19.5, 25.0, 40.0, -25.0, -40.0, 0.0]
    return x


@dataclass
class OpCase:
    name: str
    sym: mx.sym.Symbol
    inputs: Dict[str, tuple]          # input name -> shape
    notes: str
    make_input: InputFn = field(default_factory=normal)
    rtol: float = OPS_RTOL
    symbol_json: Optional[str] = None  # written instead of sym.tojson() (legacy files)
    # Typed cases: numpy dtype names of inputs and of parameters (cast after
    # random initialisation), how the oracle runs them (see
    # oracle_from_files) and, for "float32_values", the output dtypes the
    # model really has.
    input_dtypes: Optional[Dict[str, str]] = None
    param_dtypes: Optional[Dict[str, str]] = None
    dtypes: str = "float32"
    output_dtypes: Optional[List[str]] = None


def define_op_cases() -> List[OpCase]:
    data = mx.sym.var("data")
    cases: List[OpCase] = []

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    # ---- Convolution -----------------------------------------------------
    def conv(name, shape, notes, **attrs):
        add(name, mx.sym.Convolution(data, name="conv0", **attrs), {"data": shape}, notes)

    conv("conv_3x3_pad1", (2, 3, 13, 13), "Convolution 3x3, pad 1, C=3 -> F=5.",
         kernel=(3, 3), pad=(1, 1), num_filter=5)
    conv("conv_stride2", (2, 3, 13, 13), "Convolution 3x3 stride 2 pad 1 on odd input (13 -> 7).",
         kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=5)
    conv("conv_dilate2", (2, 3, 13, 13), "Convolution 3x3 dilate 2 pad 2.",
         kernel=(3, 3), dilate=(2, 2), pad=(2, 2), num_filter=5)
    conv("conv_k1x7", (2, 5, 9, 13), "Asymmetric kernel (1,7) with pad (0,3) (inceptionv3 style).",
         kernel=(1, 7), pad=(0, 3), num_filter=4)
    conv("conv_k7x1", (2, 5, 13, 9), "Asymmetric kernel (7,1) with pad (3,0) (inceptionv3 style).",
         kernel=(7, 1), pad=(3, 0), num_filter=4)
    conv("conv_k1x7_winograd", (2, 40, 9, 13),
         "1x7 with 40 channels and 36 filters: the one-dimensional Winograd F(2, 7) path on "
         "AVX-512 (a 13-wide row is 7 tiles, the last half used).",
         kernel=(1, 7), pad=(0, 3), num_filter=36)
    conv("conv_k7x1_winograd", (2, 33, 11, 9),
         "7x1 with 33 channels and 40 filters, pad (2, 0): the F(2, 7) path down columns, "
         "an output of 9 rows (odd) in 9 columns.",
         kernel=(7, 1), pad=(2, 0), num_filter=40)
    conv("conv_k5x5_winograd", (2, 35, 12, 10),
         "5x5 pad 2 with 35 channels and 33 filters: Winograd F(4, 5) down the rows with "
         "five shifted column views on AVX-512 (12 rows: 3 tiles of 4).",
         kernel=(5, 5), pad=(2, 2), num_filter=33)
    conv("conv_group2", (2, 6, 11, 11), "Grouped convolution num_group=2, C=6 -> F=4.",
         kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=2)
    conv("conv_depthwise", (2, 5, 13, 13), "Depthwise convolution C=F=num_group=5, stride 2.",
         kernel=(3, 3), pad=(1, 1), stride=(2, 2), num_filter=5, num_group=5)
    conv("conv_depthwise_blocks", (2, 37, 9, 11),
         "Depthwise 3x3, 37 channels (two whole 16-channel blocks and a partial one), stride 1.",
         kernel=(3, 3), pad=(1, 1), num_filter=37, num_group=37)
    conv("conv_stem_7x7", (2, 3, 23, 37),
         "ResNet-style stem: 3 channels, 7x7 stride 2 pad 3, 10 filters (the direct kernel).",
         kernel=(7, 7), pad=(3, 3), stride=(2, 2), num_filter=10)
    conv("conv_1x1", (2, 13, 7, 7), "Pointwise 1x1 convolution, C=13 -> F=5.",
         kernel=(1, 1), num_filter=5)
    conv("conv_no_bias", (2, 3, 13, 13), "Convolution with no_bias=True (no bias param).",
         kernel=(3, 3), pad=(1, 1), num_filter=5, no_bias=True)
    conv("conv_nonsquare", (2, 3, 13, 7), "Non-square odd input 13x7, per-axis stride (2,1) and pad (0,1).",
         kernel=(3, 3), stride=(2, 1), pad=(0, 1), num_filter=5)
    conv("conv_11x11_s4", (2, 3, 35, 35), "AlexNet-style 11x11 stride 4 pad 2 (35 -> 8).",
         kernel=(11, 11), stride=(4, 4), pad=(2, 2), num_filter=5)
    conv("conv1d_k3", (2, 3, 13), "1-D convolution (NCW), kernel (3,), pad (1,).",
         kernel=(3,), pad=(1,), num_filter=5)

    # ---- BatchNorm -------------------------------------------------------
    bn_in = normal(2.0, 0.3)

    def bn(name, shape, notes, **attrs):
        add(name, mx.sym.BatchNorm(data, name="bn0", **attrs), {"data": shape}, notes,
            make_input=bn_in)

    bn("bn_default_4d", (2, 5, 7, 13),
       "BatchNorm with no attrs: fix_gamma defaults to True (stored gamma is random and must "
       "be ignored) and eps to 1e-3.")
    bn("bn_fix_gamma_false_eps1e5_4d", (2, 5, 7, 13),
       "BatchNorm fix_gamma=False, eps=1e-5, random moving stats.", fix_gamma=False, eps=1e-5)
    bn("bn_fix_gamma_true_eps1e5_4d", (2, 13, 5, 3),
       "BatchNorm explicit fix_gamma=True (random stored gamma ignored), eps=1e-5.",
       fix_gamma=True, eps=1e-5)
    bn("bn_fix_gamma_false_2d", (2, 13),
       "BatchNorm on 2-D (N,C) input, fix_gamma=False, eps default (1e-3).", fix_gamma=False)
    bn("bn_fix_gamma_true_2d", (2, 5),
       "BatchNorm on 2-D (N,C) input, explicit fix_gamma=True, eps=1e-5.",
       fix_gamma=True, eps=1e-5)

    # Pre-activation BatchNorm + relu read only by a 1x1 convolution: the
    # graph optimiser folds them into the convolution, which normalises its
    # input as the GEMM reads it (DenseNet, ResNet v2). 20x20 = 400
    # columns: two column panels; 260 channels: two depth blocks.
    pre = mx.sym.BatchNorm(data, fix_gamma=False, eps=1e-5, name="bn_pre")
    pre = mx.sym.Activation(pre, act_type="relu", name="relu_pre")
    conv1 = mx.sym.Convolution(pre, kernel=(1, 1), num_filter=24, name="conv_a")
    conv1 = mx.sym.BatchNorm(conv1, fix_gamma=False, name="bn_a")
    conv1 = mx.sym.Activation(conv1, act_type="relu", name="relu_a")
    add("bn_relu_conv1x1_folded", conv1, {"data": (2, 260, 20, 20)},
        "BatchNorm (fix_gamma=False) + relu before a 1x1 convolution with its own BatchNorm + "
        "relu after: the optimiser folds all five into one convolution that normalises its "
        "input as it reads it.", make_input=bn_in)
    pre = mx.sym.BatchNorm(data, name="bn_pre")
    add("bn_conv1x1_no_bias_folded",
        mx.sym.Convolution(pre, kernel=(1, 1), num_filter=7, no_bias=True, name="conv_b"),
        {"data": (2, 33, 9, 11)},
        "BatchNorm (fix_gamma default) with no relu before a plain 1x1 convolution without "
        "bias: folded into it as its input normalisation.", make_input=bn_in)

    # ---- Activation ------------------------------------------------------
    for act in ("relu", "sigmoid", "tanh", "softsign"):
        add("act_" + act, mx.sym.Activation(data, act_type=act, name="act0"),
            {"data": (2, 5, 7, 13)}, "Activation act_type=%s, inputs ~ N(0, 4^2)." % act,
            make_input=normal(4.0))
    add("act_softrelu", mx.sym.Activation(data, act_type="softrelu", name="act0"),
        {"data": (2, 5, 7, 13)},
        "Activation softrelu; inputs ~ N(0, 12^2) plus exact 20, 20.5, 19.5, 25, 40, -25, -40, 0 "
        "(MXNet returns x itself for x > 20).", make_input=softrelu_input)

    # ---- Pooling ---------------------------------------------------------
    def pool(name, shape, notes, **attrs):
        add(name, mx.sym.Pooling(data, name="pool0", **attrs), {"data": shape}, notes)

    k3s2 = dict(kernel=(3, 3), stride=(2, 2))
    pool("pool_max_valid", (2, 3, 14, 13), "Max pool k3 s2 valid; H=14 gives 6 (full would give 7).",
         pool_type="max", **k3s2)
    pool("pool_max_full", (2, 3, 14, 13), "Max pool k3 s2 full (ceil); H=14 -> 7, W=13 -> 6.",
         pool_type="max", pooling_convention="full", **k3s2)
    pool("pool_max_full_56", (2, 2, 56, 15), "Max pool k3 s2 full, H=56 -> 28 (valid: 27).",
         pool_type="max", pooling_convention="full", **k3s2)
    pool("pool_max_pad1", (2, 3, 13, 13), "Max pool k3 s2 pad 1 (ResNet stem); padding never wins.",
         pool_type="max", pad=(1, 1), **k3s2)
    pool("pool_avg_valid_pad1_incl", (2, 3, 14, 13),
         "Avg pool k3 s2 pad 1 valid, count_include_pad omitted (defaults to True).",
         pool_type="avg", pad=(1, 1), **k3s2)
    pool("pool_avg_valid_pad1_excl", (2, 3, 14, 13),
         "Avg pool k3 s2 pad 1 valid, count_include_pad=False.",
         pool_type="avg", pad=(1, 1), count_include_pad=False, **k3s2)
    pool("pool_avg_full_pad1_incl", (2, 3, 14, 13),
         "Avg pool k3 s2 pad 1 full, count_include_pad=True: H=14 -> 8 (valid 7); the last window "
         "reaches past the padding and its divisor is clipped to in+pad.",
         pool_type="avg", pad=(1, 1), pooling_convention="full", count_include_pad=True, **k3s2)
    pool("pool_avg_full_pad1_excl", (2, 3, 14, 13),
         "Avg pool k3 s2 pad 1 full, count_include_pad=False.",
         pool_type="avg", pad=(1, 1), pooling_convention="full", count_include_pad=False, **k3s2)
    pool("pool_avg_full_nopad", (2, 3, 14, 13),
         "Avg pool k3 s2 full without pad: last window hangs off the input (H=14 -> 7).",
         pool_type="avg", pooling_convention="full", **k3s2)
    pool("pool_global_max", (2, 5, 7, 13), "Global max pool (kernel omitted).",
         pool_type="max", global_pool=True)
    pool("pool_global_avg", (2, 5, 7, 13),
         "Global avg pool written the Gluon way: kernel (1,1), pooling_convention full (no effect).",
         pool_type="avg", global_pool=True, kernel=(1, 1), pooling_convention="full")
    pool("pool_sum", (2, 3, 13, 13), "Sum pool k3 s2 pad 1.", pool_type="sum", pad=(1, 1), **k3s2)
    pool("pool_lp2", (2, 3, 13, 13), "Lp pool p_value=2 k3 s2: sqrt(sum x^2).",
         pool_type="lp", p_value=2, **k3s2)
    pool("pool_lp1", (2, 3, 13, 13), "Lp pool p_value=1 k3 s2 pad 1: the plain sum.",
         pool_type="lp", p_value=1, pad=(1, 1), **k3s2)
    pool("pool_lp3_global", (2, 5, 7, 6), "Global Lp pool p_value=3: cbrt(sum x^3).",
         pool_type="lp", p_value=3, global_pool=True)

    # ---- FullyConnected, Flatten ----------------------------------------
    add("fc_flatten_4d", mx.sym.FullyConnected(data, num_hidden=7, name="fc0"),
        {"data": (2, 5, 3, 3)}, "FullyConnected flatten=True (default) on 4-D input.")
    add("fc_no_flatten_3d", mx.sym.FullyConnected(data, num_hidden=7, flatten=False, name="fc0"),
        {"data": (2, 5, 13)}, "FullyConnected flatten=False on 3-D input: acts on the last axis.")
    add("fc_no_bias", mx.sym.FullyConnected(data, num_hidden=7, no_bias=True, name="fc0"),
        {"data": (2, 13)}, "FullyConnected no_bias=True.")
    add("flatten", mx.sym.Flatten(data, name="flatten0"), {"data": (2, 5, 3, 7)},
        "Flatten (2,5,3,7) -> (2,105).")

    # ---- Concat, elemwise_add, Dropout, clip ----------------------------
    d0, d1, d2 = (mx.sym.var("data%d" % i) for i in range(3))
    add("concat_dim1", mx.sym.Concat(d0, d1, d2, dim=1, name="concat0"),
        {"data0": (2, 3, 5, 7), "data1": (2, 5, 5, 7), "data2": (2, 1, 5, 7)},
        "Concat of 3 inputs on the channel axis (default dim=1).")
    add("concat_dim0", mx.sym.Concat(d0, d1, dim=0, name="concat0"),
        {"data0": (2, 3, 5), "data1": (1, 3, 5)}, "Concat on dim 0 (batch).")
    add("concat_dim2", mx.sym.Concat(d0, d1, dim=2, name="concat0"),
        {"data0": (2, 3, 5, 7), "data1": (2, 3, 2, 7)}, "Concat on dim 2 (height).")
    add("elemwise_add", mx.sym.elemwise_add(d0, d1, name="add0"),
        {"data0": (2, 5, 7, 13), "data1": (2, 5, 7, 13)}, "elemwise_add of two inputs.")
    add("dropout", mx.sym.Dropout(data, p=0.5, name="drop0"), {"data": (2, 5, 7, 7)},
        "Dropout p=0.5: identity at inference.")
    add("clip_relu6", mx.sym.clip(data, a_min=0.0, a_max=6.0, name="clip0"),
        {"data": (2, 5, 7, 7)}, "clip(0, 6) as MobileNetV2's relu6; inputs ~ N(0, 5^2).",
        make_input=normal(5.0))
    add("clip_asym", mx.sym.clip(data, a_min=-0.5, a_max=0.75, name="clip0"),
        {"data": (2, 5, 7)}, "clip(-0.5, 0.75).")

    # ---- softmax family --------------------------------------------------
    add("softmax_last_axis", mx.sym.softmax(data, name="softmax0"), {"data": (2, 5, 13)},
        "softmax with axis omitted (-1); inputs ~ N(0, 3^2).", make_input=normal(3.0))
    add("softmax_axis1_temp", mx.sym.softmax(data, axis=1, temperature=2.5, name="softmax0"),
        {"data": (2, 5, 3, 7)}, "softmax axis=1, temperature=2.5.", make_input=normal(3.0))
    add("softmax_last_axis_temp", mx.sym.softmax(data, axis=-1, temperature=0.5, name="softmax0"),
        {"data": (2, 3, 13)}, "softmax axis=-1, temperature=0.5.", make_input=normal(3.0))
    add("softmax_output_2d", mx.sym.SoftmaxOutput(data, name="softmax"), {"data": (2, 13)},
        "SoftmaxOutput on 2-D input. Its `softmax_label` argument is unused at inference: it is "
        "neither in the params file nor among the inputs, the runtime must supply it itself.",
        make_input=normal(3.0))
    add("softmax_activation_instance",
        mx.sym.SoftmaxActivation(data, mode="instance", name="sact0"), {"data": (2, 5, 3, 3)},
        "SoftmaxActivation mode=instance: softmax over all non-batch dims flattened.",
        make_input=normal(2.0))
    add("softmax_activation_channel",
        mx.sym.SoftmaxActivation(data, mode="channel", name="sact0"), {"data": (2, 5, 3, 3)},
        "SoftmaxActivation mode=channel: softmax along axis 1.", make_input=normal(2.0))

    cases.extend(coverage_cases())
    cases.extend(dtype_cases())
    cases.extend(tie_order_cases())
    cases.extend(resize_cases())
    cases.extend(constant_cases())
    cases.extend(rnn_cases())
    cases.extend(bbox_cases())
    cases.extend(gather_attention_roi_cases())
    cases.extend(multibox_cases())

    # ---- graphs ----------------------------------------------------------
    shared = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=5, name="conv0")
    add("multi_head", mx.sym.Group([mx.sym.Activation(shared, act_type="relu", name="relu0"),
                                    mx.sym.Activation(shared, act_type="sigmoid", name="sig0")]),
        {"data": (2, 3, 7, 9)}, "Two heads (Group) sharing one convolution: output:0 relu, output:1 sigmoid.")
    add("composite_net", composite_net(data), {"data": (2, 3, 13, 13)},
        "conv-bn-relu-maxpool-conv-bn(defaults)-residual add-relu-global avg pool-flatten-fc-softmax.")
    add("mixed_net", mixed_net(), {"data": (2, 3, 9, 9), "tokens": (2, 5)},
        "Many operators beyond the zoo in one model: an image branch (Convolution, prelu, LRN, "
        "Deconvolution, InstanceNorm, lp Pooling, nearest UpSampling, residual add, reflect Pad, "
        "slice, transpose, Reshape -3, LayerNorm, mean) and a token branch (Embedding with "
        "out-of-range ids, sum) joined by concat, then FullyConnected, tanh, norm, scalar and "
        "broadcast arithmetic, and two heads: SoftmaxOutput and argmax.",
        make_input=lambda rng, shape: (rng.randint(-1, 13, shape).astype(np.float64)
                                       if len(shape) == 2 else rng.normal(0.0, 1.0, shape)))
    legacy = json.loads(mx.sym.argmax(data, axis=-1, name="argmax0").tojson())
    legacy["attrs"]["mxnet_version"] = ["int", 904]
    add("legacy_argmax_0904", mx.sym.argmax(data, name="argmax0"), {"data": (2, 3, 5)},
        "A symbol file from MXNet 0.9.4 with argmax axis=-1, which files before 0.9.5 wrote for "
        "'no axis': MXNet's upgrade (and mxlite's) gives the argmax of the flattened input.",
        make_input=lambda rng, shape: rng.permutation(int(np.prod(shape))).reshape(shape) * 1.0,
        symbol_json=json.dumps(legacy))
    return cases


def uniform(lo: float, hi: float) -> InputFn:
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def integers(lo: int, hi: int) -> InputFn:
    """Whole numbers in [lo, hi] (as float32, the predict API's input type)."""
    return lambda rng, shape: rng.randint(lo, hi + 1, shape).astype(np.float64)


# Input ranges that keep each unary function finite and away from its poles.
UNARY_DOMAINS = {
    "sqrt": uniform(0.1, 4.0), "rsqrt": uniform(0.1, 4.0), "log": uniform(0.1, 4.0),
    "log10": uniform(0.1, 4.0), "log2": uniform(0.1, 4.0), "log1p": uniform(-0.9, 3.0),
    "arcsin": uniform(-0.99, 0.99), "arccos": uniform(-0.99, 0.99), "arctanh": uniform(-0.99, 0.99),
    "arccosh": uniform(1.01, 4.0), "gamma": uniform(0.2, 4.0), "gammaln": uniform(0.2, 4.0),
    "reciprocal": uniform(0.2, 3.0), "rcbrt": uniform(0.2, 3.0),
    # halves exercise round (away from zero) versus rint (to even)
    "round": lambda rng, shape: rng.randint(-8, 9, shape) / 2.0,
    "rint": lambda rng, shape: rng.randint(-8, 9, shape) / 2.0,
    "sign": integers(-2, 2), "logical_not": integers(-1, 1),
}
UNARY_FUNCTIONS = (
    "abs sign negative reciprocal square sqrt rsqrt cbrt rcbrt exp expm1 log log10 log2 log1p "
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh degrees radians "
    "floor ceil round rint trunc fix erf gamma gammaln relu sigmoid softsign logical_not "
    "zeros_like ones_like").split()
BINARY_FUNCTIONS = ("add sub mul div mod power maximum minimum hypot equal not_equal greater "
                    "greater_equal lesser lesser_equal logical_and logical_or logical_xor").split()
COMPARISONS = {"equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
               "logical_and", "logical_or", "logical_xor"}
SCALAR_OPS = ("_plus_scalar _minus_scalar _rminus_scalar _mul_scalar _div_scalar _rdiv_scalar "
              "_mod_scalar _rmod_scalar _power_scalar _rpower_scalar _maximum_scalar "
              "_minimum_scalar _hypot_scalar _equal_scalar _not_equal_scalar _greater_scalar "
              "_greater_equal_scalar _lesser_scalar _lesser_equal_scalar _logical_and_scalar "
              "_logical_or_scalar _logical_xor_scalar smooth_l1").split()


def binary_input(function: str) -> InputFn:
    """Operands for a binary function: whole numbers for comparisons (so that ties occur),
    positive bases for power, signed values for mod, denominators away from 0."""
    if function in COMPARISONS:
        return integers(-2, 2)
    if function == "power":
        return uniform(0.2, 2.0)
    if function == "mod":
        return lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 4.0, shape)
    if function == "div":
        return lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 3.0, shape)
    return normal()


def sym_op(name: str):
    """mx.sym.<name>, or the underscore-named internal operator of that name."""
    return getattr(mx.sym, name, None) or getattr(mx.sym._internal, name)


def coverage_cases() -> List[OpCase]:
    """The operator set beyond the model zoo (issue 4), one case per configuration."""
    cases: List[OpCase] = []
    data = mx.sym.var("data")
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    # ---- unary math ------------------------------------------------------
    for fn in UNARY_FUNCTIONS:
        add("unary_" + fn, getattr(mx.sym, fn)(data, name="op0"), {"data": (2, 3, 5)},
            "Unary %s." % fn, make_input=UNARY_DOMAINS.get(fn, normal(1.5)))

    # ---- binary: same shape and broadcasting ----------------------------
    for fn in BINARY_FUNCTIONS:
        elemwise = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
                    "div": "elemwise_div"}.get(fn, "_" + fn)
        if fn != "add":  # elemwise_add has its case above
            add("elemwise_" + fn, sym_op(elemwise)(lhs, rhs, name="op0"),
                {"lhs": (2, 3, 5), "rhs": (2, 3, 5)}, "%s on equal shapes." % elemwise,
                make_input=binary_input(fn))
        add("broadcast_" + fn, getattr(mx.sym, "broadcast_" + fn)(lhs, rhs, name="op0"),
            {"lhs": (2, 3, 1, 5), "rhs": (3, 4, 1)},
            "broadcast_%s: (2,3,1,5) with (3,4,1) -> (2,3,4,5), rank and unit dims on both "
            "sides." % fn, make_input=binary_input(fn))
    add("broadcast_add_channel_bias", mx.sym.broadcast_add(lhs, rhs, name="op0"),
        {"lhs": (2, 5, 3, 7), "rhs": (1, 5, 1, 1)}, "broadcast_add of a per-channel bias.")
    add("broadcast_mul_scalar_like", mx.sym.broadcast_mul(lhs, rhs, name="op0"),
        {"lhs": (1,), "rhs": (2, 3, 5)}, "broadcast_mul of a (1,) tensor with (2,3,5).")
    add("add_n_3", mx.sym.add_n(lhs, rhs, data, name="op0"),
        {"lhs": (2, 3, 5), "rhs": (2, 3, 5), "data": (2, 3, 5)}, "add_n of three inputs.")
    cond = mx.sym.var("condition")
    add("where_same_shape", mx.sym.where(cond, lhs, rhs, name="op0"),
        {"condition": (2, 3, 5), "lhs": (2, 3, 5), "rhs": (2, 3, 5)},
        "where with a condition of x's shape (values -1, 0, 1: non-zero selects x).",
        make_input=integers(-1, 1))
    add("where_rows", mx.sym.where(cond, lhs, rhs, name="op0"),
        {"condition": (3,), "lhs": (3, 2, 5), "rhs": (3, 2, 5)},
        "where with a 1-D condition selecting whole rows along x's first axis.",
        make_input=integers(-1, 1))

    # ---- views: Reshape and friends --------------------------------------
    for label, shape, kw in [
            ("codes_0_m1", (2, 3, 5, 7), dict(shape=(0, -1))),
            ("code_m2", (2, 3, 5, 7), dict(shape=(0, -1, -2))),
            ("code_m3", (2, 3, 5, 7), dict(shape=(-3, -2))),
            ("code_m4", (2, 15, 7), dict(shape=(0, -4, 3, -1, 0))),
            ("code_m4_left", (2, 15, 7), dict(shape=(0, -4, -1, 5, -2))),
            ("literal", (2, 3, 5, 7), dict(shape=(7, 5, 6))),
            ("reverse", (2, 3, 5, 7), dict(shape=(-1, 0), reverse=True)),
            ("reverse_m3", (2, 3, 5, 7), dict(shape=(0, -3, 0), reverse=True)),
            ("target_shape", (2, 3, 5, 7), dict(target_shape=(0, 7))),
            ("target_keep_highest", (2, 3, 5, 7), dict(target_shape=(5, 0), keep_highest=True))]:
        add("reshape_" + label, mx.sym.Reshape(data, name="op0", **kw), {"data": shape},
            "Reshape %s." % ", ".join("%s=%s" % item for item in kw.items()))
    add("expand_dims_neg", mx.sym.expand_dims(data, axis=-1, name="op0"), {"data": (2, 3, 5)},
        "expand_dims axis=-1 (new last dim).")
    add("expand_dims_1", mx.sym.expand_dims(data, axis=1, name="op0"), {"data": (2, 3, 5)},
        "expand_dims axis=1.")
    add("squeeze_all", mx.sym.squeeze(data, name="op0"), {"data": (2, 1, 5, 1)},
        "squeeze without axis: every unit dim.")
    add("squeeze_axis", mx.sym.squeeze(data, axis=(-1,), name="op0"), {"data": (2, 1, 5, 1)},
        "squeeze axis=(-1,): only the last unit dim.")
    add("reshape_like", mx.sym.reshape_like(lhs, rhs, name="op0"),
        {"lhs": (2, 3, 5), "rhs": (5, 6)}, "reshape_like: lhs data in rhs's shape.")
    add("reshape_like_range", mx.sym.reshape_like(lhs, rhs, lhs_begin=1, lhs_end=3, rhs_begin=0,
                                                  rhs_end=1, name="op0"),
        {"lhs": (2, 3, 5), "rhs": (15, 4)}, "reshape_like replacing lhs dims [1,3) by rhs dims [0,1).")
    for op in ("_copy", "BlockGrad", "make_loss"):
        add("identity" + op if op.startswith("_") else "identity_" + op,
            mx.sym.Activation(sym_op(op)(data, name="op0"), act_type="relu", name="relu0"),
            {"data": (2, 3, 5)}, "%s (identity at inference) followed by relu." % op)
    add("identity_MakeLoss", mx.sym.MakeLoss(data, grad_scale=0.5, normalization="batch",
                                             name="op0"),
        {"data": (2, 3, 5)}, "MakeLoss with gradient-only attributes: identity at inference.")

    # ---- rearranging elements -------------------------------------------
    add("transpose_default", mx.sym.transpose(data, name="op0"), {"data": (2, 3, 5, 7)},
        "transpose without axes: all dims reversed.")
    add("transpose_axes", mx.sym.transpose(data, axes=(0, 2, 3, 1), name="op0"),
        {"data": (2, 3, 5, 7)}, "transpose NCHW -> NHWC.")
    add("swapaxis", mx.sym.SwapAxis(data, dim1=1, dim2=3, name="op0"), {"data": (2, 3, 5, 7)},
        "SwapAxis dim1=1 dim2=3.")
    add("swapaxis_default", mx.sym.SwapAxis(data, name="op0"), {"data": (2, 3, 5)},
        "SwapAxis with defaults (0, 0): identity.")
    add("slice_basic", mx.sym.slice(data, begin=(0, 1), end=(2, 3), name="op0"),
        {"data": (2, 3, 5, 7)}, "slice begin=(0,1) end=(2,3): leading dims only.")
    add("slice_step_none", mx.sym.slice(data, begin=(None, 1, -4), end=(None, None, -1),
                                        step=(1, 2, 1), name="op0"),
        {"data": (2, 5, 7)}, "slice with None entries, a step of 2 and negative indices.")
    add("slice_negative_step", mx.sym.slice(data, begin=(None, None, 5), end=(None, None, 0),
                                            step=(-1, 1, -2), name="op0"),
        {"data": (2, 3, 7)}, "slice with negative steps (None begin = last, explicit end).")
    add("slice_axis", mx.sym.slice_axis(data, axis=2, begin=1, end=-1, name="op0"),
        {"data": (2, 3, 7)}, "slice_axis axis=2 begin=1 end=-1.")
    add("slice_axis_end_none", mx.sym.slice_axis(data, axis=-2, begin=-2, end=None, name="op0"),
        {"data": (2, 3, 7)}, "slice_axis axis=-2 begin=-2 end=None.")
    add("slice_like", mx.sym.slice_like(lhs, rhs, name="op0"),
        {"lhs": (3, 5, 7), "rhs": (2, 4, 5)}, "slice_like on all axes.")
    add("slice_like_axes", mx.sym.slice_like(lhs, rhs, axes=(0, -1), name="op0"),
        {"lhs": (3, 5, 7), "rhs": (2, 9, 5)}, "slice_like on axes (0, -1) only.")
    add("reverse", mx.sym.reverse(data, axis=(0, 2), name="op0"), {"data": (2, 3, 5)},
        "reverse (flip) axes 0 and 2.")
    add("tile_more_reps", mx.sym.tile(data, reps=(2, 1, 3), name="op0"), {"data": (3, 5)},
        "tile with more reps than dims: (3,5) -> (2,3,15).")
    add("tile_fewer_reps", mx.sym.tile(data, reps=(2,), name="op0"), {"data": (2, 3, 5)},
        "tile with fewer reps than dims: applies to the last dims.")
    add("repeat_axis", mx.sym.repeat(data, repeats=3, axis=1, name="op0"), {"data": (2, 3, 5)},
        "repeat 3 times along axis 1.")
    add("repeat_flat", mx.sym.repeat(data, repeats=2, name="op0"), {"data": (2, 3)},
        "repeat without axis: the flattened input.")
    add("broadcast_to", mx.sym.broadcast_to(data, shape=(2, 0, 5, 4), name="op0"),
        {"data": (1, 3, 1, 4)}, "broadcast_to (2,0,5,4): 0 keeps the input dim.")
    add("broadcast_axis", mx.sym.broadcast_axis(data, axis=(0, 2), size=(2, 5), name="op0"),
        {"data": (1, 3, 1)}, "broadcast_axis axis=(0,2) size=(2,5).")
    add("broadcast_like", mx.sym.broadcast_like(lhs, rhs, name="op0"),
        {"lhs": (1, 3, 1), "rhs": (2, 3, 5)}, "broadcast_like to rhs's shape.")
    add("broadcast_like_axes", mx.sym.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(2,),
                                                     name="op0"),
        {"lhs": (1, 3, 4), "rhs": (2, 3, 5)}, "broadcast_like lhs_axes=(0,) rhs_axes=(2,).")
    add("depth_to_space", mx.sym.depth_to_space(data, block_size=2, name="op0"),
        {"data": (2, 12, 3, 5)}, "depth_to_space block 2.")
    add("space_to_depth", mx.sym.space_to_depth(data, block_size=2, name="op0"),
        {"data": (2, 3, 6, 4)}, "space_to_depth block 2.")
    add("split_axis1", mx.sym.Group(list(mx.sym.split(data, num_outputs=3, name="op0"))),
        {"data": (2, 6, 5)}, "SliceChannel (split) into 3 along axis 1: three outputs.")
    add("split_squeeze", mx.sym.Group(list(mx.sym.SliceChannel(data, num_outputs=3, axis=-1,
                                                               squeeze_axis=True, name="op0"))),
        {"data": (2, 5, 3)}, "SliceChannel along the last axis with squeeze_axis.")
    add("stack_axis0", mx.sym.stack(lhs, rhs, name="op0"), {"lhs": (2, 3, 5), "rhs": (2, 3, 5)},
        "stack of two inputs on a new axis 0.")
    add("stack_axis_neg", mx.sym.stack(lhs, rhs, data, axis=-1, name="op0"),
        {"lhs": (2, 3), "rhs": (2, 3), "data": (2, 3)}, "stack of three inputs on a new last axis.")
    add("concat_last_axis", mx.sym.concat(lhs, rhs, dim=-1, name="op0"),
        {"lhs": (2, 3, 5), "rhs": (2, 3, 2)}, "Concat on the last axis (dim=-1).")

    # ---- nn layers -------------------------------------------------------
    def deconv(name, shape, notes, **attrs):
        add(name, mx.sym.Deconvolution(data, name="deconv0", **attrs), {"data": shape}, notes)

    deconv("deconv_3x3_s2", (2, 3, 5, 7), "Deconvolution 3x3 stride 2 pad 1, C=3 -> F=5, "
           "no_bias defaults to True.", kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=5)
    deconv("deconv_bias_adj", (2, 3, 5, 7), "Deconvolution 4x4 stride 2 pad 1 adj 1 with bias.",
           kernel=(4, 4), stride=(2, 2), pad=(1, 1), adj=(1, 1), num_filter=4, no_bias=False)
    deconv("deconv_groups_dilate", (2, 6, 5, 5), "Deconvolution num_group=2, dilate 2, "
           "non-square kernel (3,2).", kernel=(3, 2), dilate=(2, 2), num_filter=4, num_group=2)
    deconv("deconv_target_shape", (2, 3, 5, 7), "Deconvolution with target_shape (10, 13): pad "
           "and adj derived from it.", kernel=(3, 3), stride=(2, 2), target_shape=(10, 13),
           num_filter=5)
    deconv("deconv_1d", (2, 3, 9), "1-D Deconvolution kernel 5 stride 3.", kernel=(5,),
           stride=(3,), num_filter=4, no_bias=False)
    deconv("deconv_1x1", (2, 7, 3, 5), "Deconvolution 1x1 (a channel mix).", kernel=(1, 1),
           num_filter=3)
    add("upsampling_nearest", mx.sym.UpSampling(data, scale=2, sample_type="nearest", name="up0"),
        {"data": (2, 3, 5, 7)}, "UpSampling nearest, scale 2.")
    d0, d1 = mx.sym.var("data0"), mx.sym.var("data1")
    add("upsampling_nearest_concat", mx.sym.UpSampling(d0, d1, scale=2, sample_type="nearest",
                                                       num_args=2, name="up0"),
        {"data0": (2, 3, 4, 6), "data1": (2, 2, 2, 3)},
        "UpSampling nearest of two inputs to the first one's size x2, concatenated on channels "
        "(the second is enlarged x4).")
    add("upsampling_nearest_sum", mx.sym.UpSampling(d0, d1, scale=3, sample_type="nearest",
                                                    num_args=2, multi_input_mode="sum", name="up0"),
        {"data0": (2, 3, 2, 3), "data1": (2, 3, 6, 9)},
        "UpSampling nearest of two inputs summed (the second already at the output size).")
    for scale in (2, 3):
        add("upsampling_bilinear_%d" % scale,
            mx.sym.UpSampling(data, scale=scale, sample_type="bilinear", num_filter=3,
                              name="up0"),
            {"data": (2, 3, 5, 7)}, "UpSampling bilinear, scale %d: a grouped Deconvolution "
            "with a learned (C,1,k,k) weight." % scale)
    add("lrn_5", mx.sym.LRN(data, nsize=5, name="lrn0"), {"data": (2, 7, 5, 3)},
        "LRN nsize 5 with default alpha, beta, knorm; inputs ~ N(0, 3^2) so the norm matters.",
        make_input=normal(3.0))
    add("lrn_3_params", mx.sym.LRN(data, nsize=3, alpha=0.01, beta=0.5, knorm=1.0, name="lrn0"),
        {"data": (2, 5, 3, 3)}, "LRN nsize 3, alpha 0.01, beta 0.5, knorm 1.",
        make_input=normal(3.0))
    for act in ("leaky", "elu", "selu", "gelu"):
        kw = {"slope": 0.1} if act in ("leaky", "elu") else {}
        add("leaky_relu_" + act, mx.sym.LeakyReLU(data, act_type=act, name="act0", **kw),
            {"data": (2, 3, 5, 7)}, "LeakyReLU act_type=%s %s." % (act, kw or ""),
            make_input=normal(2.0))
    add("leaky_relu_rrelu", mx.sym.LeakyReLU(data, act_type="rrelu", name="act0")[0],
        {"data": (2, 3, 5, 7)}, "LeakyReLU rrelu at inference: slope (lower+upper)/2. Only "
        "output 0 is compared: MXNet leaves the visible mask output unwritten at inference.",
        make_input=normal(2.0))
    add("leaky_relu_prelu", mx.sym.LeakyReLU(data, act_type="prelu", name="act0"),
        {"data": (2, 5, 3, 3)}, "LeakyReLU prelu: per-channel gamma (5,) from the params file.",
        make_input=normal(2.0))
    add("leaky_relu_prelu_2d", mx.sym.LeakyReLU(data, act_type="prelu", name="act0"),
        {"data": (3, 7)}, "LeakyReLU prelu on 2-D input.", make_input=normal(2.0))
    add("hard_sigmoid", mx.sym.hard_sigmoid(data, alpha=0.3, beta=0.4, name="op0"),
        {"data": (2, 3, 5)}, "hard_sigmoid alpha 0.3 beta 0.4.", make_input=normal(3.0))
    add("log_softmax", mx.sym.log_softmax(data, name="op0"), {"data": (2, 3, 7)},
        "log_softmax over the last axis.", make_input=normal(3.0))
    add("log_softmax_axis1_temp", mx.sym.log_softmax(data, axis=1, temperature=2.0, name="op0"),
        {"data": (2, 5, 3)}, "log_softmax axis 1, temperature 2.", make_input=normal(3.0))
    add("softmin", mx.sym.softmin(data, axis=1, name="op0"), {"data": (2, 5, 3)},
        "softmin along axis 1.", make_input=normal(3.0))
    add("softmax_output_multi", mx.sym.SoftmaxOutput(data, multi_output=True, name="softmax"),
        {"data": (2, 5, 3, 3)}, "SoftmaxOutput multi_output: over axis 1 at every position.",
        make_input=normal(2.0))
    add("softmax_output_preserve", mx.sym.SoftmaxOutput(data, preserve_shape=True, name="softmax"),
        {"data": (2, 3, 5)}, "SoftmaxOutput preserve_shape: over the last axis.",
        make_input=normal(2.0))
    add("softmax_alias", mx.sym.Softmax(data, name="softmax"), {"data": (2, 5)},
        "Softmax (the old name of SoftmaxOutput).", make_input=normal(2.0))
    for op in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
        add("regression_" + op, getattr(mx.sym, op)(data, name="reg0"), {"data": (2, 3, 5)},
            "%s: its label is unused at inference." % op, make_input=normal(2.0))
    add("regression_column", mx.sym.LinearRegressionOutput(data, name="reg0"), {"data": (4, 1)},
        "LinearRegressionOutput on (N, 1) data: the label is inferred as (N,).")
    bn_like = normal(2.0, 0.5)
    add("instance_norm", mx.sym.InstanceNorm(data, name="in0"), {"data": (2, 3, 5, 7)},
        "InstanceNorm, eps default 1e-3.", make_input=bn_like)
    add("instance_norm_3d", mx.sym.InstanceNorm(data, eps=1e-5, name="in0"), {"data": (2, 3, 11)},
        "InstanceNorm on (N, C, W), eps 1e-5.", make_input=bn_like)
    add("layer_norm", mx.sym.LayerNorm(data, name="ln0"), {"data": (2, 3, 7)},
        "LayerNorm over the last axis.", make_input=bn_like)
    add("layer_norm_axis1", mx.sym.LayerNorm(data, axis=1, eps=1e-3, name="ln0"),
        {"data": (2, 5, 3, 2)}, "LayerNorm over axis 1, eps 1e-3.", make_input=bn_like)
    add("layer_norm_mean_var", mx.sym.Group(list(mx.sym.LayerNorm(data, output_mean_var=True,
                                                                  name="ln0"))),
        {"data": (2, 3, 7)}, "LayerNorm with output_mean_var: output, mean and std visible.",
        make_input=bn_like)
    add("group_norm", mx.sym.GroupNorm(data, num_groups=3, name="gn0"), {"data": (2, 6, 3, 5)},
        "GroupNorm with 3 groups of 2 channels; gamma/beta per group.", make_input=bn_like)
    for mode in ("instance", "channel", "spatial"):
        add("l2_normalization_" + mode, mx.sym.L2Normalization(data, mode=mode, name="l2n0"),
            {"data": (2, 3, 5, 4)}, "L2Normalization mode=%s." % mode)
    for mode in ("constant", "edge", "reflect"):
        add("pad_" + mode, mx.sym.Pad(data, mode=mode, pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                      constant_value=1.5, name="pad0"),
            {"data": (2, 3, 4, 5)}, "Pad mode=%s, pad_width (0,0,0,0,1,2,2,1)." % mode)
    add("pad_5d_reflect", mx.sym.Pad(data, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 0, 2, 2, 0),
                                     name="pad0"),
        {"data": (1, 2, 3, 4, 5)}, "Pad a 5-D input, mode reflect.")
    add("crop_h_w", mx.sym.Crop(data, num_args=1, h_w=(3, 4), offset=(1, 2), name="crop0"),
        {"data": (2, 3, 5, 7)}, "Crop to 3x4 at offset (1, 2).")
    add("crop_center_like", mx.sym.Crop(lhs, rhs, num_args=2, center_crop=True, name="crop0"),
        {"lhs": (2, 3, 7, 8), "rhs": (2, 1, 4, 5)}, "Crop like a second input, centred.")

    add("svm_output", mx.sym.SVMOutput(data, margin=0.5, name="svm0"), {"data": (3, 5)},
        "SVMOutput: identity at inference; its (N,) label is unused.")

    rois = mx.sym.var("rois")
    # Regions inside (and one past the edge of) a 16x12 image, batch index 0 or 1.
    roi_values = np.array([[0, 0, 0, 15, 11], [1, 2.4, 3.6, 9.5, 7.5], [0, 5, 1, 6, 2],
                           [1, 10, 8, 19, 14], [0, 3.5, 2.5, 3.5, 2.5]])
    add("roi_pooling", mx.sym.ROIPooling(data, rois, pooled_size=(3, 2), spatial_scale=0.5,
                                         name="roi0"),
        {"data": (2, 3, 8, 6), "rois": (5, 5)},
        "ROIPooling 3x2 at scale 0.5: whole image, fractional corners (rounding), a 1-pixel "
        "region, one reaching past the map, one degenerate.",
        make_input=lambda rng, shape: roi_values if shape == (5, 5) else rng.normal(0, 1, shape))

    # ---- sequences -------------------------------------------------------
    seq_len = mx.sym.var("seq_len")
    # Lengths are whole numbers in [1, T]; the data are ordinary values.
    lengths = lambda rng, shape: (rng.randint(1, 6, shape).astype(np.float64) if len(shape) == 1
                                  else rng.normal(0.0, 1.0, shape))
    for op in ("SequenceMask", "SequenceLast", "SequenceReverse"):
        kw = {"value": -2.5} if op == "SequenceMask" else {}
        add(op.lower() + "_lengths", getattr(mx.sym, op)(data, seq_len, use_sequence_length=True,
                                                         name="seq0", **kw),
            {"data": (5, 3, 4), "seq_len": (3,)}, "%s, time-major, lengths 1..5 per sequence." % op,
            make_input=lengths)
        add(op.lower() + "_full", getattr(mx.sym, op)(data, name="seq0"), {"data": (4, 2, 3)},
            "%s without lengths: every sequence is full." % op)
    add("sequencemask_axis1", mx.sym.SequenceMask(data, seq_len, use_sequence_length=True, axis=1,
                                                  name="seq0"),
        {"data": (3, 5, 2), "seq_len": (3,)}, "SequenceMask batch-major (axis 1).",
        make_input=lengths)
    add("sequencelast_axis1", mx.sym.SequenceLast(data, seq_len, use_sequence_length=True, axis=1,
                                                  name="seq0"),
        {"data": (3, 5, 2), "seq_len": (3,)}, "SequenceLast batch-major (axis 1).",
        make_input=lengths)

    # ---- reductions ------------------------------------------------------
    for op in ("sum", "mean", "prod", "max", "min", "nansum", "nanprod"):
        make = uniform(0.5, 1.5) if "prod" in op else normal()
        add("reduce_%s_all" % op, sym_op(op)(data, name="op0"), {"data": (2, 3, 5)},
            "%s over every axis (axis None)." % op, make_input=make)
        add("reduce_%s_axis" % op, sym_op(op)(data, axis=(0, 2), name="op0"),
            {"data": (2, 3, 5, 4)}, "%s over axes (0, 2): a gather before reducing." % op,
            make_input=make)
    add("reduce_sum_keepdims", mx.sym.sum(data, axis=-1, keepdims=True, name="op0"),
        {"data": (2, 3, 5)}, "sum over the last axis with keepdims.")
    add("reduce_sum_exclude", mx.sym.sum(data, axis=1, exclude=True, name="op0"),
        {"data": (2, 3, 5)}, "sum with exclude: every axis except 1.")
    add("reduce_mean_exclude_keepdims", mx.sym.mean(data, axis=(1,), exclude=True,
                                                    keepdims=True, name="op0"),
        {"data": (2, 3, 5)}, "mean with exclude and keepdims.")
    add("reduce_sum_axis_alias", mx.sym.sum_axis(data, axis=1, name="op0"), {"data": (2, 3, 5)},
        "sum_axis (the old name of sum) over axis 1.")
    add("reduce_max_empty_axis", mx.sym.max(data, axis=(), name="op0"), {"data": (2, 3, 5)},
        "max with axis=(): reduces everything.")
    for label, kw in [("all", {}), ("ord1_axis", dict(ord=1, axis=1)),
                      ("axes_keepdims", dict(axis=(1, 2), keepdims=True))]:
        add("norm_" + label, mx.sym.norm(data, name="op0", **kw), {"data": (2, 3, 5)},
            "norm %s." % (kw or "defaults (ord 2, all axes)"))

    # ---- arg-extremes, pick, topk, sort ----------------------------------
    ties_free = lambda rng, shape: rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 - 5
    for op in ("argmax", "argmin"):
        add(op + "_axis1", sym_op(op)(data, axis=1, name="op0"), {"data": (2, 7, 5)},
            "%s along axis 1." % op, make_input=ties_free)
        add(op + "_none", sym_op(op)(data, name="op0"), {"data": (2, 7, 5)},
            "%s over the flattened input (axis None)." % op, make_input=ties_free)
        add(op + "_keepdims", sym_op(op)(data, axis=-1, keepdims=True, name="op0"),
            {"data": (2, 7, 5)}, "%s along the last axis with keepdims." % op,
            make_input=ties_free)
    add("argmax_ties", mx.sym.argmax(data, axis=1, name="op0"), {"data": (2, 7, 5)},
        "argmax with ties (values in {-1, 0, 1}): the first index wins.", make_input=integers(-1, 1))
    add("argmax_channel", mx.sym.argmax_channel(data, name="op0"), {"data": (3, 7)},
        "argmax_channel: argmax over the last axis.", make_input=ties_free)
    idx = mx.sym.var("index")
    add("pick_clip", mx.sym.pick(data, idx, axis=1, name="op0"),
        {"data": (2, 5, 3), "index": (2, 3)}, "pick along axis 1, indices -2..6 clipped.",
        make_input=integers(-2, 6))
    add("pick_wrap_keepdims", mx.sym.pick(data, idx, axis=-1, mode="wrap", keepdims=True,
                                          name="op0"),
        {"data": (2, 5, 3), "index": (2, 5, 1)}, "pick along the last axis, mode wrap, keepdims.",
        make_input=integers(-4, 5))
    for ret in ("indices", "value", "mask", "both"):
        add("topk_" + ret, mx.sym.Group(list(mx.sym.topk(data, k=3, ret_typ=ret, name="op0")))
            if ret == "both" else mx.sym.topk(data, k=3, ret_typ=ret, name="op0"),
            {"data": (2, 3, 7)}, "topk k=3 on the last axis, ret_typ=%s." % ret,
            make_input=ties_free)
    add("topk_axis1_ascend", mx.sym.topk(data, axis=1, k=2, ret_typ="value", is_ascend=True,
                                         name="op0"),
        {"data": (2, 5, 3)}, "topk k=2 along axis 1, ascending.", make_input=ties_free)
    add("topk_axis_none", mx.sym.topk(data, axis=None, k=4, name="op0"), {"data": (2, 5, 3)},
        "topk over the flattened input (axis None).", make_input=ties_free)
    add("sort_default", mx.sym.sort(data, name="op0"), {"data": (2, 3, 7)},
        "sort along the last axis, ascending.", make_input=ties_free)
    add("sort_axis0_descend", mx.sym.sort(data, axis=0, is_ascend=False, name="op0"),
        {"data": (4, 3, 5)}, "sort along axis 0, descending.", make_input=ties_free)
    add("argsort", mx.sym.argsort(data, axis=1, name="op0"), {"data": (2, 5, 3)},
        "argsort along axis 1.", make_input=ties_free)

    # ---- indexing --------------------------------------------------------
    add("embedding", mx.sym.Embedding(data, input_dim=7, output_dim=5, name="emb0"),
        {"data": (2, 3)}, "Embedding of indices -2..9 (clipped to [0, 6]), input_dim 7.",
        make_input=integers(-2, 9))
    add("embedding_fractional", mx.sym.Embedding(data, input_dim=5, output_dim=3, name="emb0"),
        {"data": (4,)}, "Embedding of fractional indices: truncated towards zero.",
        make_input=lambda rng, shape: np.array([0.9, 2.5, 3.99, -0.7]))
    a = mx.sym.var("a")
    for mode, lo, hi in (("clip", -3, 8), ("wrap", -9, 12)):
        add("take_" + mode, mx.sym.take(a, idx, mode=mode, name="op0"),
            {"a": (5, 3), "index": (2, 4)}, "take along axis 0, mode %s, indices %d..%d." %
            (mode, lo, hi), make_input=integers(lo, hi))
    add("take_axis1", mx.sym.take(a, idx, axis=1, name="op0"), {"a": (2, 5, 3), "index": (4,)},
        "take along axis 1.", make_input=integers(0, 4))
    add("take_axis_neg", mx.sym.take(a, idx, axis=-1, mode="wrap", name="op0"),
        {"a": (2, 5, 3), "index": (2, 2)}, "take along the last axis, mode wrap.",
        make_input=integers(-4, 4))
    add("one_hot", mx.sym.one_hot(data, depth=6, name="op0"), {"data": (2, 3)},
        "one_hot depth 6 of indices -1..7 (out of range: all off).", make_input=integers(-1, 7))
    add("one_hot_values", mx.sym.one_hot(data, depth=4, on_value=2.5, off_value=-1, name="op0"),
        {"data": (5,)}, "one_hot with on_value 2.5 and off_value -1.", make_input=integers(0, 3))

    # ---- matrix products -------------------------------------------------
    for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
        ls = (5, 3) if ta else (3, 5)
        rs = (7, 5) if tb else (5, 7)
        add("dot_%s%s" % ("T" if ta else "N", "T" if tb else "N"),
            mx.sym.dot(lhs, rhs, transpose_a=ta, transpose_b=tb, name="op0"),
            {"lhs": ls, "rhs": rs}, "dot of matrices, transpose_a=%s transpose_b=%s." % (ta, tb))
        bl = (2,) + ls
        br = (2,) + rs
        add("batch_dot_%s%s" % ("T" if ta else "N", "T" if tb else "N"),
            mx.sym.batch_dot(lhs, rhs, transpose_a=ta, transpose_b=tb, name="op0"),
            {"lhs": bl, "rhs": br}, "batch_dot, transpose_a=%s transpose_b=%s." % (ta, tb))
    add("dot_nd", mx.sym.dot(lhs, rhs, name="op0"), {"lhs": (2, 3, 5), "rhs": (5, 2, 3)},
        "dot of a 3-D and a 3-D array: (2,3,5) . (5,2,3) -> (2,3,2,3).")
    add("dot_nd_transpose_a", mx.sym.dot(lhs, rhs, transpose_a=True, name="op0"),
        {"lhs": (5, 2, 3), "rhs": (5, 4)}, "dot with transpose_a of a 3-D lhs: (5,2,3)^T . (5,4).")
    add("dot_vectors", mx.sym.dot(lhs, rhs, name="op0"), {"lhs": (7,), "rhs": (7,)},
        "dot of two vectors: shape (1,).")
    add("dot_vector_matrix", mx.sym.dot(lhs, rhs, name="op0"), {"lhs": (5,), "rhs": (5, 3)},
        "dot of a vector and a matrix.")

    # ---- Cast ------------------------------------------------------------
    add("cast_float32", mx.sym.Cast(data, dtype="float32", name="op0"), {"data": (2, 3, 5)},
        "Cast to float32 (a copy).")

    # ---- scalar operand --------------------------------------------------
    for op in SCALAR_OPS:
        fn = op.strip("_").replace("_scalar", "").lstrip("r") if op != "smooth_l1" else "smooth_l1"
        scalar = {"smooth_l1": 1.5, "power": 1.7, "mod": -1.5}.get(fn, 0.75 if op != "_rpower_scalar" else 2.5)
        if fn in COMPARISONS:
            scalar = 1.0
        make = integers(-2, 2) if fn in COMPARISONS else (
            uniform(0.2, 2.0) if fn in ("power", "div") or op == "_rmod_scalar" else normal(2.0))
        add("scalar" + op if op.startswith("_") else "scalar_" + op,
            sym_op(op)(data, scalar=scalar, name="op0"), {"data": (2, 3, 5)},
            "%s with scalar=%g." % (op, scalar), make_input=make)
    return cases


# --------------------------------------------------------------------------
# topk / sort / argsort tie order (issue 29, item 4)
# --------------------------------------------------------------------------

def tie_order_cases() -> List[OpCase]:
    """topk, sort and argsort on whole numbers from a small range, so that most
    comparisons are ties: MXNet's CPU kernels order each row with libstdc++'s
    std::sort (k * 8 > n) or std::partial_sort (k * 8 <= n), neither stable,
    and the indices (and the mask's set) show that order exactly. Rows are
    longer than 16 (the introsort's insertion-sort threshold) and both
    algorithms are reached."""
    cases: List[OpCase] = []
    data = mx.sym.var("data")

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase("ties_" + name, sym, inputs, notes, **kw))

    def topk(**kw):
        op = mx.sym.topk(data, name="op0", **kw)
        return mx.sym.Group(list(op)) if kw.get("ret_typ") == "both" else op

    few = integers(0, 3)
    two = integers(0, 1)
    for ret in ("indices", "value", "mask", "both"):
        for ascend in (False, True):
            for k in (3, 12):  # 3 * 8 <= 40: partial_sort; 12 * 8 > 40: sort
                add("topk_%s_%s_k%d" % (ret, "ascend" if ascend else "descend", k),
                    topk(k=k, ret_typ=ret, is_ascend=ascend), {"data": (3, 40)},
                    "topk k=%d of 40 per row, ret_typ=%s, is_ascend=%s, values in 0..3 "
                    "(ties: MXNet's libstdc++ %s order)."
                    % (k, ret, ascend, "partial_sort" if k * 8 <= 40 else "sort"),
                    make_input=few)
    add("topk_axis1_both", topk(axis=1, k=5, ret_typ="both"), {"data": (2, 37, 3)},
        "topk k=5 along axis 1 (not the last), ret_typ=both, values in 0..1.", make_input=two)
    add("topk_axis0_mask_ascend", topk(axis=0, k=9, ret_typ="mask", is_ascend=True),
        {"data": (33, 2, 2)}, "topk k=9 along axis 0, ret_typ=mask, ascending, values in 0..3.",
        make_input=few)
    add("topk_axis_none_indices", topk(axis=None, k=7, ret_typ="indices"), {"data": (4, 25)},
        "topk k=7 over the flattened input (axis None), values in 0..3.", make_input=few)
    add("topk_1d_k20", topk(k=20, ret_typ="indices"), {"data": (300,)},
        "topk k=20 of 300 (partial_sort), 1-D, values in 0..1.", make_input=two)
    add("topk_1d_k150", topk(k=150, ret_typ="both", is_ascend=True), {"data": (300,)},
        "topk k=150 of 300 (introsort), 1-D, ascending, values in 0..3.", make_input=few)
    for ascend in (True, False):
        word = "ascend" if ascend else "descend"
        add("sort_" + word, mx.sym.sort(data, is_ascend=ascend, name="op0"), {"data": (3, 40)},
            "sort along the last axis, is_ascend=%s, values in 0..3." % ascend, make_input=few)
        add("argsort_" + word, mx.sym.argsort(data, is_ascend=ascend, name="op0"),
            {"data": (3, 40)}, "argsort along the last axis, is_ascend=%s, values in 0..3."
            % ascend, make_input=few)
        add("argsort_axis0_" + word, mx.sym.argsort(data, axis=0, is_ascend=ascend, name="op0"),
            {"data": (50, 3)}, "argsort along axis 0, is_ascend=%s, values in 0..1." % ascend,
            make_input=two)
    add("argsort_1d_long", mx.sym.argsort(data, name="op0"), {"data": (500,)},
        "argsort of 500 values in 0..3, 1-D (deep introsort).", make_input=few)
    add("argsort_axis_none", mx.sym.argsort(data, axis=None, is_ascend=False, name="op0"),
        {"data": (5, 9)}, "argsort of the flattened input (axis None), descending, values in 0..3.",
        make_input=few)

    def with_nan(rng, shape):
        x = rng.randint(0, 4, shape).astype(np.float64)
        x.reshape(-1)[::7] = np.nan
        return x

    add("argsort_nan", mx.sym.argsort(data, name="op0"), {"data": (3, 40)},
        "argsort with NaN at every 7th element among values in 0..3: NaN compares false both "
        "ways, and the indices come out where libstdc++'s sort leaves them.", make_input=with_nan)
    add("topk_nan_indices", topk(k=4, ret_typ="indices"), {"data": (3, 40)},
        "topk k=4 (partial_sort) with NaN at every 7th element, values in 0..3.",
        make_input=with_nan)
    return cases

# ---- end of the tie-order cases -------------------------------------------


# --------------------------------------------------------------------------
# Spatial resizing: _contrib_AdaptiveAvgPooling2D, _contrib_BilinearResize2D
# (issue 30)
# --------------------------------------------------------------------------

def resize_cases() -> List[OpCase]:
    """Adaptive average pooling and bilinear resizing on awkward sizes: whole
    and non-whole ratios, up and down, outputs larger than the input, and
    every BilinearResize2D mode, with and without align_corners."""
    cases: List[OpCase] = []
    data, like = mx.sym.var("data"), mx.sym.var("like")
    C = mx.sym.contrib

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    def adaptive(name, shape, notes, **kw):
        add("adaptive_avg_pool_" + name, C.AdaptiveAvgPooling2D(data, name="op0", **kw),
            {"data": shape}, "AdaptiveAvgPooling2D " + notes)

    adaptive("default", (2, 3, 7, 9), "with the default output_size (1x1: a global mean).")
    adaptive("int4", (2, 3, 7, 10), "output_size=4 on 7x10 (overlapping windows).",
             output_size=4)
    adaptive("5x3", (2, 3, 13, 11), "output_size=(5, 3) on 13x11 (non-whole ratios).",
             output_size=(5, 3))
    adaptive("larger", (2, 2, 5, 6), "output_size=(9, 8) on 5x6: an output larger than the "
             "input repeats input cells.", output_size=(9, 8))

    def bilinear(name, shape, notes, **kw):
        add("bilinear_resize_" + name, C.BilinearResize2D(data, name="op0", **kw),
            {"data": shape}, "BilinearResize2D " + notes)

    bilinear("up", (2, 3, 5, 7), "mode size, 5x7 -> 11x17, align_corners (default).",
             height=11, width=17)
    bilinear("down", (2, 3, 13, 11), "mode size, 13x11 -> 4x5, align_corners.",
             height=4, width=5)
    bilinear("up_no_align", (2, 3, 5, 9), "mode size, 5x9 -> 11x6 (up and down), "
             "align_corners=False.", height=11, width=6, align_corners=False)
    bilinear("down_no_align", (2, 2, 13, 11), "mode size, 13x11 -> 5x4, align_corners=False.",
             height=5, width=4, align_corners=False)
    bilinear("to_one_row", (2, 2, 6, 7), "mode size, 6x7 -> 1x9 (a single output row reads "
             "row 0).", height=1, width=9)
    bilinear("same_size", (2, 2, 7, 8), "mode size to the input's own 7x8: a copy.",
             height=7, width=8)
    bilinear("scale", (2, 3, 9, 10), "mode size with scale_height=1.7, scale_width=0.6 "
             "(9x10 -> 15x6).", scale_height=1.7, scale_width=0.6)
    bilinear("odd_scale", (2, 2, 7, 8), "mode odd_scale, scale 2 (odd 7 -> 13, even 8 -> 16), "
             "align_corners=False.", mode="odd_scale", scale_height=2.0, scale_width=2.0,
             align_corners=False)
    for mode in ("to_even_down", "to_even_up", "to_odd_down", "to_odd_up"):
        bilinear(mode, (2, 2, 7, 8), "mode %s on 7x8." % mode, mode=mode)
    add("bilinear_resize_like", C.BilinearResize2D(data, like, mode="like", name="op0"),
        {"data": (2, 3, 5, 6), "like": (2, 1, 9, 13)},
        "BilinearResize2D mode like: data 5x6 resized to the like input's 9x13.")
    return cases

# ---- end of the resize cases ----------------------------------------------


# --------------------------------------------------------------------------
# Recurrent layers: RNN and _rnn_param_concat (issue 30)
# --------------------------------------------------------------------------

def rnn_cases() -> List[OpCase]:
    """The fused RNN operator in every mode (lstm, gru, rnn_tanh, rnn_relu),
    one to three layers, uni- and bidirectional, with and without
    state_outputs, LSTM projection, on awkward sizes (T=5, C=7, H=9) at
    batch 1, 3 and 6 (past the few rows that take matrix-vector products);
    mx.rnn's FusedRNNCell (NTC input, _zeros begin states); Gluon's
    rnn.LSTM / rnn.GRU / LSTM with projection as they export, their
    parameters joined by _rnn_param_concat."""
    from mxnet.gluon import rnn as gluon_rnn
    cases: List[OpCase] = []
    S = mx.sym
    data, state, cell = S.var("data"), S.var("state"), S.var("state_cell")

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    def fused(name, mode, shape, hidden, notes, layers=1, bidirectional=False,
              state_outputs=False, projection=None):
        steps, batch, _ = shape
        states = layers * (2 if bidirectional else 1)
        inputs = {"data": shape, "state": (states, batch, projection or hidden)}
        kw = {"state_cell": cell} if mode == "lstm" else {}
        if mode == "lstm":
            inputs["state_cell"] = (states, batch, hidden)
        if projection:
            kw["projection_size"] = projection
        sym = S.RNN(data=data, parameters=S.var("rnn0_parameters"), state=state, mode=mode,
                    state_size=hidden, num_layers=layers, bidirectional=bidirectional,
                    state_outputs=state_outputs, name="rnn0", **kw)
        add("rnn_" + name, sym, inputs, "RNN mode %s, T=%d N=%d C=%d H=%d, %d layer(s)%s%s%s: %s"
            % (mode, steps, batch, shape[2], hidden, layers,
               ", bidirectional" if bidirectional else "",
               ", projection_size=%d" % projection if projection else "",
               ", state_outputs" if state_outputs else "", notes))

    fused("lstm", "lstm", (5, 3, 7), 9, "the plain layer.")
    fused("lstm_states_batch1", "lstm", (5, 1, 7), 9, "batch 1, final h and c.",
          state_outputs=True)
    fused("lstm_2layer_bidir", "lstm", (5, 3, 7), 9, "layer 1 reads both directions of layer 0.",
          layers=2, bidirectional=True, state_outputs=True)
    fused("lstm_3layer_bidir_batch1", "lstm", (4, 1, 5), 6, "three layers (two buffers between "
          "them).", layers=3, bidirectional=True)
    fused("lstm_batch6", "lstm", (4, 6, 20), 40, "batch 6: the state product is a GEMM.",
          bidirectional=True, state_outputs=True)
    fused("lstm_projection", "lstm", (5, 3, 7), 9, "LSTMP: the output and hidden state are "
          "projected to 5 by Wr.", layers=2, bidirectional=True, state_outputs=True,
          projection=5)
    fused("lstm_projection_batch6", "lstm", (4, 6, 7), 12, "LSTMP at batch 6 (GEMMs).",
          state_outputs=True, projection=5)
    fused("gru", "gru", (5, 3, 7), 9, "gates r, z, n with n = tanh(Wx_n x + bx_n + "
          "r (Wh_n h + bh_n)).", state_outputs=True)
    fused("gru_2layer_bidir", "gru", (5, 3, 7), 9, "stacked bidirectional GRU.", layers=2,
          bidirectional=True, state_outputs=True)
    fused("gru_3layer_batch1", "gru", (6, 1, 7), 9, "three layers at batch 1.", layers=3)
    fused("gru_batch6", "gru", (3, 6, 20), 33, "batch 6, H=33.", layers=2, bidirectional=True)
    fused("tanh", "rnn_tanh", (5, 3, 7), 9, "h = tanh(Wx x + bx + Wh h + bh).")
    fused("tanh_2layer_bidir_batch1", "rnn_tanh", (5, 1, 7), 9, "batch 1.", layers=2,
          bidirectional=True, state_outputs=True)
    fused("relu_2layer", "rnn_relu", (5, 3, 7), 9, "h = relu(...).", layers=2,
          state_outputs=True)
    fused("relu_bidir_batch6", "rnn_relu", (5, 6, 7), 9, "batch 6.", bidirectional=True)

    lstm_cell = mx.rnn.FusedRNNCell(9, num_layers=2, mode="lstm", bidirectional=True,
                                    get_next_state=True, prefix="fused_")
    outputs, states = lstm_cell.unroll(5, inputs=data, layout="NTC", merge_outputs=True)
    add("rnn_fused_cell_lstm", S.Group([outputs] + states), {"data": (3, 5, 7)},
        "mx.rnn.FusedRNNCell LSTM, 2 layers, bidirectional, NTC input (swapaxes around the RNN), "
        "begin states from _zeros whose batch dim the RNN infers; outputs, h and c.")

    def gluon(name, layer, shape, notes, batch=None):
        """The graph a hybridized Gluon layer exports: each i2h/h2h weight and
        bias reshaped to 1-D and joined by _rnn_param_concat. With `batch`,
        the begin states are inputs and the final states outputs; without,
        the layer begins from _zeros."""
        inputs = {"data": shape}
        if batch:
            infos = layer.state_info(batch)
            out, ends = layer(data, [S.var("state%d" % i) for i in range(len(infos))])
            sym = S.Group([out] + ends)
            inputs.update(("state%d" % i, info["shape"]) for i, info in enumerate(infos))
        else:
            sym = layer(data)
        add("rnn_gluon_" + name, sym, inputs, notes)

    gluon("lstm_2layer_bidir", gluon_rnn.LSTM(9, num_layers=2, bidirectional=True,
                                              prefix="lstm0_"), (5, 3, 7),
          "Gluon rnn.LSTM(9, num_layers=2, bidirectional=True) with begin states given; "
          "output, h and c.", batch=3)
    gluon("gru_ntc", gluon_rnn.GRU(9, num_layers=2, layout="NTC", prefix="gru0_"), (3, 5, 7),
          "Gluon rnn.GRU(9, num_layers=2, layout NTC) without begin states (_zeros).")
    gluon("lstmp", gluon_rnn.LSTM(9, bidirectional=True, projection_size=5, prefix="lstmp0_"),
          (5, 3, 7), "Gluon rnn.LSTM(9, bidirectional, projection_size=5): h2r weights in the "
          "concatenation.", batch=3)
    gluon("rnn_relu", gluon_rnn.RNN(9, activation="relu", num_layers=2, prefix="rnn0_"),
          (5, 1, 7), "Gluon rnn.RNN(9, relu, 2 layers) at batch 1.", batch=1)

    a, b = S.var("a"), S.var("b")
    add("rnn_param_concat_dim1", S._internal._rnn_param_concat(a, b, dim=1, num_args=2,
                                                                 name="op0"),
        {"a": (3, 4), "b": (3, 2)}, "_rnn_param_concat of (3, 4) and (3, 2) along dim 1 "
        "(Concat's arithmetic).")
    return cases

# ---- end of the rnn cases -------------------------------------------------


# --------------------------------------------------------------------------
# Outputs from attributes or input shapes alone: _zeros, _ones, _full,
# _arange, _contrib_arange_like, shape_array, size_array (issue 30)
# --------------------------------------------------------------------------

def constant_cases() -> List[OpCase]:
    """Constant and shape operators. Those without inputs are heads beside a
    node that combines them with the data input (the predict API binds at
    least one input), so both their own values and their use are checked."""
    cases: List[OpCase] = []
    S = mx.sym
    data = S.var("data")

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    def with_data(const, combine, shape, name, notes, **kw):
        add(name, S.Group([const, combine(data, const, name="use0")]), {"data": shape}, notes,
            **kw)

    with_data(S.zeros(shape=(1, 4), name="op0"), S.broadcast_add, (2, 3, 4), "const_zeros",
              "_zeros of shape (1, 4), and broadcast-added to the data.")
    with_data(S.ones(shape=(3, 5), dtype="int32", name="op0"),
              lambda d, c, name: S.broadcast_mul(d, S.Cast(c, dtype="float32", name="cast0"),
                                                 name=name),
              (2, 3, 5), "const_ones_int32", "_ones of shape (3, 5) with dtype int32 (an int32 "
              "output), cast and multiplied into the data.")
    with_data(S.full(shape=(2, 1, 3), val=-2.75, name="op0"), S.broadcast_mul, (2, 4, 3),
              "const_full", "_full of shape (2, 1, 3), value -2.75, multiplied into the data.")
    add("const_zeros_shape_from_consumer",
        S.elemwise_add(data, S.zeros(shape=(0, 4), name="op0"), name="add0"), {"data": (3, 4)},
        "_zeros with shape (0, 4): the 0 dim is unknown (legacy shapes) and comes from the "
        "elemwise_add consumer.")
    with_data(S.arange(start=2, stop=11, step=1.5, name="op0"), S.broadcast_add, (2, 6),
              "arange_fractional_step", "_arange(2, 11, step 1.5): 6 values, added to (2, 6) data.")
    with_data(S.arange(start=-1, stop=2.3, step=0.7, repeat=3, name="op0"), S.broadcast_add,
              (15,), "arange_repeat", "_arange(-1, 2.3, step 0.7, repeat 3): 5 values each "
              "three times.")
    with_data(S.arange(start=7, name="op0"), S.broadcast_mul, (3, 7), "arange_stop_omitted",
              "_arange(7): stop omitted means the range [0, 7).")
    with_data(S.arange(start=5, stop=-2, step=-1.25, name="op0"), S.broadcast_add, (6,),
              "arange_negative_step", "_arange(5, -2, step -1.25): a descending range of 6.")
    with_data(S.arange(start=1, stop=20, step=2.5, dtype="int32", name="op0"),
              lambda d, c, name: S.broadcast_add(d, S.Cast(c, dtype="float32", name="cast0"),
                                                 name=name), (8,),
              "arange_int32", "_arange(1, 20, step 2.5) with dtype int32: 8 values, the step "
              "truncated to 2 as MXNet converts it to the output type.")
    add("arange_infer_range",
        S.elemwise_add(data, S.arange(start=3, step=0.5, infer_range=True, name="op0"),
                       name="use0"), {"data": (7,)},
        "_arange with infer_range and no stop: its length (7) comes from the elemwise_add "
        "consumer; values 3, 3.5, ...")
    add("arange_like_all", S.contrib.arange_like(data, start=1.5, step=0.25, name="op0"),
        {"data": (2, 3, 4)}, "_contrib_arange_like without axis: the data's shape, values "
        "1.5, 1.75, ...")
    add("arange_like_axis_repeat",
        S.contrib.arange_like(data, start=-3, step=2, repeat=2, axis=-1, name="op0"),
        {"data": (2, 3, 7)}, "_contrib_arange_like along axis -1 (7 values), repeat 2.")
    add("shape_array", S.shape_array(data, name="op0"), {"data": (2, 3, 5, 7)},
        "shape_array: the data's shape as an int64 vector.")
    add("size_array", S.size_array(data, name="op0"), {"data": (2, 3, 5, 7)},
        "size_array: the data's element count as an int64 vector of one.")
    return cases

# ---- end of the constant cases --------------------------------------------


# --------------------------------------------------------------------------
# Detection post-processing: _contrib_box_nms, _contrib_box_decode,
# _contrib_box_encode (issue 30)
# --------------------------------------------------------------------------

def nms_boxes(lead, n, scores=(0.25, 0.5, 0.75), invalid=0.0, classes=0, width=6,
              layout=(0, 1, 2), center=False, grid=8, max_size=6):
    """An InputFn of detection rows on a coarse grid (so boxes overlap and
    IoUs repeat), scores drawn from a few values (so most are ties) with a
    share `invalid` of them set to -0.25, class ids in [0, classes) when
    classes > 0 (else 0). `layout` is (id_index, score_index, coord_start);
    the other columns are filler. Every value is exact in float32."""
    id_index, score_index, coord_start = layout

    def make(rng, shape):
        assert tuple(shape) == tuple(lead) + (n, width), shape
        rows = rng.randint(-4, 5, tuple(shape)).astype(np.float64) * 0.125
        count = int(np.prod(shape[:-1]))
        flat = rows.reshape(count, width)
        x1 = rng.randint(0, grid, count) * 0.5
        y1 = rng.randint(0, grid, count) * 0.5
        w = rng.randint(0, max_size, count) * 0.5
        h = rng.randint(0, max_size, count) * 0.5
        if center:
            coords = [x1 + w / 2, y1 + h / 2, w, h]
        else:
            coords = [x1, y1, x1 + w, y1 + h]
        for k in range(4):
            flat[:, coord_start + k] = coords[k]
        s = np.asarray(scores, np.float64)[rng.randint(0, len(scores), count)]
        s[rng.rand(count) < invalid] = -0.25
        flat[:, score_index] = s
        if id_index >= 0:
            flat[:, id_index] = rng.randint(0, classes, count) if classes else 0
        return rows
    return make


def fixed_rows(rows):
    """An InputFn returning these rows, whatever the generator."""
    arr = np.asarray(rows, np.float64)
    return lambda rng, shape: arr.reshape(shape)


def bbox_cases() -> List[OpCase]:
    """box_nms with MXNet's CPU order for equal scores (a stable sort by
    descending score: ties keep their input order), boxes at and below
    valid_thresh, topk smaller than the valid count, class-aware and forced
    suppression, a background class, both box formats in and out (MXNet
    leaves a box whose first coordinate is negative unconverted), batches
    with different valid counts, zero-area boxes and IoUs exactly at the
    threshold; box_decode in both anchor formats, with and without clip;
    box_encode."""
    cases: List[OpCase] = []
    data = mx.sym.var("data")
    C = mx.sym.contrib

    def nms(name, shape, make_input, notes, **kw):
        cases.append(OpCase("box_nms_" + name, C.box_nms(data, name="op0", **kw),
                            {"data": shape}, "box_nms " + notes, make_input=make_input))

    nms("ties_order", (2, 60, 6), nms_boxes((2,), 60, scores=(0.25, 0.5, 0.75), invalid=0.2),
        "with overlap_thresh 1 (nothing suppressed): 60 boxes per batch, scores in "
        "{0.25, 0.5, 0.75} and 20% at -0.25 (invalid): the output order shows MXNet's tie rule "
        "(stable sort, equal scores in input order).", overlap_thresh=1.0)
    nms("ties_suppress", (2, 50, 6), nms_boxes((2,), 50, scores=(0.5, 0.75), invalid=0.1),
        "overlap_thresh 0.3 on 50 overlapping boxes per batch with two score values: which of "
        "two equal-score boxes survives follows the tie order.", overlap_thresh=0.3)
    nms("valid_thresh_topk", (2, 40, 6),
        nms_boxes((2,), 40, scores=(0.125, 0.25, 0.375, 0.5, 0.625), invalid=0.1),
        "valid_thresh 0.25 (scores equal to it are dropped: strictly greater is valid), topk 9 "
        "of about 25 valid boxes.", valid_thresh=0.25, topk=9, overlap_thresh=0.4)
    nms("class_aware", (2, 40, 6), nms_boxes((2,), 40, classes=3, invalid=0.1),
        "id_index 0, force_suppress False: only boxes of the same class suppress each other.",
        id_index=0, overlap_thresh=0.3)
    nms("force_suppress", (2, 40, 6), nms_boxes((2,), 40, classes=3, invalid=0.1),
        "id_index 0, force_suppress True: any class suppresses any other.",
        id_index=0, force_suppress=True, overlap_thresh=0.3)
    nms("background", (2, 40, 6), nms_boxes((2,), 40, classes=3),
        "id_index 0, background_id 1: class-1 boxes are dropped before suppression.",
        id_index=0, background_id=1, overlap_thresh=0.45, topk=20)
    nms("center_in_out", (2, 30, 6), nms_boxes((2,), 30, center=True, invalid=0.1),
        "in_format and out_format center.", in_format="center", out_format="center",
        overlap_thresh=0.3)
    nms("center_to_corner", (2, 30, 6), nms_boxes((2,), 30, center=True, invalid=0.1),
        "in_format center, out_format corner.", in_format="center", out_format="corner",
        overlap_thresh=0.3)

    def shifted(make):
        def f(rng, shape):
            rows = make(rng, shape)
            rows[..., 2:6] -= 1.5  # some boxes start left of 0: MXNet leaves them unconverted
            return rows
        return f

    nms("corner_to_center", (2, 30, 6), shifted(nms_boxes((2,), 30, invalid=0.1)),
        "in_format corner, out_format center; coordinates shifted by -1.5, so some boxes start "
        "at x < 0, which MXNet's conversion leaves as they are.", out_format="center",
        overlap_thresh=0.3)
    nms("batch_4d", (2, 3, 12, 6), nms_boxes((2, 3), 12, invalid=0.5, classes=2),
        "on (2, 3, 12, 6): six batches, about half the boxes invalid, so each batch has its own "
        "valid count.", id_index=0, overlap_thresh=0.35)

    def batch_counts(rng, shape):
        rows = nms_boxes((3,), 10, invalid=0.0)(rng, shape)
        rows[0, :, 1] = -0.25          # batch 0: nothing valid
        rows[1, 3:, 1] = -0.25         # batch 1: three valid
        return rows

    nms("batch_valid_counts", (3, 10, 6), batch_counts,
        "batch 0 with no valid box, batch 1 with three, batch 2 with ten.", overlap_thresh=0.4)
    nms("all_invalid", (2, 5, 6), fixed_rows(np.full((2, 5, 6), -0.5)),
        "every score invalid: the whole output is -1.")
    nms("topk_zero", (2, 7, 6), nms_boxes((2,), 7, invalid=0.3),
        "topk 0: the input is copied unchanged (not sorted, not filtered).", topk=0)
    zero_area = [[0, 0.5, 1, 1, 1, 3], [0, 0.5, 1, 1, 1, 3], [0, 0.75, 2, 2, 2, 2],
                 [0, 0.75, 2, 2, 2, 2], [0, 0.25, 0, 0, 4, 4], [0, 0.5, 1, 1, 3, 1],
                 [0, 0.5, 3, 3, 1, 1], [0, 0.625, 3, 3, 1, 1]]
    nms("zero_area", (1, 8, 6), fixed_rows(zero_area),
        "zero-area and inverted boxes: identical zero-area boxes give IoU 0/0 (NaN), never "
        "suppressed; an inverted box has area 0.", overlap_thresh=0.1)
    at_threshold = [
        [0, 0.75, 0, 0, 3, 1], [0, 0.5, 1, 0, 4, 1],      # IoU 2/4 = 0.5 exactly: kept
        [0, 0.75, 0, 4, 3, 5], [0, 0.5, 0.875, 4, 3.875, 5],  # IoU just above 0.5: dropped
        [0, 0.625, 0, 8, 4, 9], [0, 0.625, 2, 8, 6, 9],   # IoU 2/6: kept at 0.5
        [0, 0.375, 0, 12, 2, 14], [0, 0.375, 0, 12, 2, 14],  # identical, equal score
    ]
    nms("overlap_at_threshold", (1, 8, 6), fixed_rows(at_threshold),
        "IoUs of exactly 0.5 (kept: suppression needs IoU > overlap_thresh), just above 0.5 "
        "(suppressed), 1/3, and identical boxes of equal score (the later one suppressed).",
        overlap_thresh=0.5)
    nms("layout", (2, 20, 7), nms_boxes((2,), 20, width=7, layout=(5, 4, 0),
                                                  classes=2, invalid=0.2),
        "coord_start 0, score_index 4, id_index 5, seven columns (one extra), class-aware, "
        "topk 6.", coord_start=0, score_index=4, id_index=5, topk=6, overlap_thresh=0.2)

    def decode_input(rng, shape):
        if shape[0] == 1:  # anchors: corners (or centers) of boxes inside [0, 1]
            xy = rng.uniform(0.0, 0.8, shape[:-1] + (2,))
            wh = rng.uniform(0.05, 0.5, shape[:-1] + (2,))
            return np.concatenate([xy, wh], axis=-1)
        return rng.normal(0.0, 1.5, shape)

    def corner_anchors(rng, shape):
        a = decode_input(rng, shape)
        if shape[0] == 1:
            a[..., 2:] += a[..., :2]
        return a

    anchors = mx.sym.var("anchors")

    def decode(name, make_input, notes, **kw):
        cases.append(OpCase("box_decode_" + name,
                            C.box_decode(data, anchors, name="op0", **kw),
                            {"data": (2, 33, 4), "anchors": (1, 33, 4)}, "box_decode " + notes,
                            make_input=make_input))

    decode("center", decode_input, "with the defaults (center anchors, std 1, no clip).")
    decode("corner_std", corner_anchors, "with corner anchors and std (0.1, 0.1, 0.2, 0.2) "
           "(GluonCV's SSD).", format="corner", std0=0.1, std1=0.1, std2=0.2, std3=0.2)
    decode("clip", corner_anchors, "with corner anchors, std2 = std3 = 1.5 and clip 1.2 "
           "(widths above exp(1.2) clipped).", format="corner", std2=1.5, std3=1.5, clip=1.2)

    def encode_input():
        calls = []

        def make(rng, shape):
            calls.append(shape)
            which = len(calls)
            if which == 1:      # samples: -1, 0, 1
                return rng.randint(-1, 2, shape).astype(np.float64)
            if which == 2:      # matches into refs' 5 boxes
                return rng.randint(0, 5, shape).astype(np.float64)
            if which in (3, 4):  # anchors, refs: corners
                xy = rng.uniform(0.0, 0.8, shape[:-1] + (2,))
                wh = rng.uniform(0.05, 0.5, shape[:-1] + (2,))
                return np.concatenate([xy, xy + wh], axis=-1)
            if which == 5:      # means
                return np.array([0.0, 0.125, -0.25, 0.0])
            return np.array([0.1, 0.1, 0.2, 0.2])  # stds
        return make

    names = ["samples", "matches", "anchors", "refs", "means", "stds"]
    V = {k: mx.sym.var(k) for k in names}
    enc = C.box_encode(*[V[k] for k in names], name="op0")
    cases.append(OpCase("box_encode", mx.sym.Group(list(enc)),
                        {"samples": (2, 21), "matches": (2, 21), "anchors": (2, 21, 4),
                         "refs": (2, 5, 4), "means": (4,), "stds": (4,)},
                        "box_encode: samples in {-1, 0, 1} (targets and masks 0 where not "
                        "positive), matches into 5 refs, means and stds as inputs.",
                        make_input=encode_input()))

    def with_record(sym):
        """The symbol's JSON with box_nms's hidden second output as a second
        head (Python cannot name it; a symbol file can, and MXNet runs it)."""
        graph = json.loads(sym.tojson())
        node = len(graph["nodes"]) - 1
        graph["heads"] = [[node, 0, 0], [node, 1, 0]]
        return json.dumps(graph, indent=2)

    for name, shape, notes, kw in [
            ("record", (2, 3, 12, 6), "with its hidden second output as a head: for each "
             "written row, the input row it came from counted over all six batches "
             "(b * 12 + i), else -1; class-aware, topk 5.", dict(id_index=0, topk=5,
                                                                 overlap_thresh=0.3)),
            ("record_topk_zero", (2, 7, 6), "topk 0 with its hidden second output as a head: "
             "0, 1, 2, ... (the input copied row for row).", dict(topk=0))]:
        sym = C.box_nms(data, name="op0", **kw)
        cases.append(OpCase("box_nms_" + name, sym, {"data": shape}, "box_nms " + notes,
                            make_input=nms_boxes(shape[:-2], shape[-2], invalid=0.3, classes=2),
                            symbol_json=with_record(sym)))
    return cases

# ---- end of the bounding-box cases ----------------------------------------


# --------------------------------------------------------------------------
# gather_nd, the attention products of GluonNLP's BERT and _contrib_ROIAlign
# (issue 30)
# --------------------------------------------------------------------------

def gather_indices(index_shape, dims, fractional=False):
    """An InputFn: `index_shape` (M, ...) gets whole indices in [-d, d - 1]
    for row j (d = dims[j]), or with `fractional` values with fractions in
    that range plus its exact ends; any other shape gets N(0, 1) data."""
    def make(rng, shape):
        if tuple(shape) != tuple(index_shape):
            return rng.normal(0.0, 1.0, shape)
        rows = []
        for j in range(shape[0]):
            d = dims[j]
            if fractional:
                row = rng.randint(-4 * d, 4 * (d - 1) + 1, shape[1:]) / 4.0
                flat = row.reshape(-1)
                flat[:4] = [-d, d - 1, -0.5, d - 1.25]
            else:
                row = rng.randint(-d, d, shape[1:]).astype(np.float64)
            rows.append(row)
        return np.stack(rows)
    return make


def gather_attention_roi_cases() -> List[OpCase]:
    """gather_nd (M of the data's dims indexed, negative and fractional
    indices, int64 indices as CenterNet's decoder gives them, integer data);
    _contrib_div_sqrt_dim; the interleaved self-attention and
    encoder-decoder products (several heads, head dims and sequence lengths
    that are not powers of two, one head, a BERT-style qk -> softmax ->
    valatt chain); _contrib_ROIAlign with adaptive and fixed sampling,
    aligned, position-sensitive, on rois over both images that reach past
    the map, are degenerate, or have fractional batch indices."""
    cases: List[OpCase] = []
    data, indices = mx.sym.var("data"), mx.sym.var("indices")
    C = mx.sym.contrib

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    # ---- gather_nd -------------------------------------------------------
    def gather(name, dshape, ishape, notes, fractional=False, **kw):
        add("gather_nd_" + name, mx.sym.gather_nd(data, indices, name="op0"),
            {"data": dshape, "indices": ishape}, "gather_nd " + notes,
            make_input=kw.pop("make_input", gather_indices(ishape, dshape, fractional)), **kw)

    gather("elements", (2, 3, 5), (3, 4, 2), "of single elements (M = data.ndim = 3), indices "
           "(3, 4, 2) in [-d, d - 1] (negative ones count from the end): output (4, 2).")
    gather("slices", (3, 5, 2, 3), (2, 7), "of (2, 3) slices: M = 2 of 4 dims, output (7, 2, 3).")
    gather("rows", (6, 4), (1, 2, 3), "of rows (M = 1), indices (1, 2, 3): output (2, 3, 4).")
    gather("fractional", (4, 3, 2), (2, 9), "with fractional float indices: MXNet uses "
           "int64(i + d) % d, rounding down (-0.5 is d - 1), and both ends -d and d - 1.",
           fractional=True)

    def centernet(rng, shape):
        if shape == (3, 10):  # batch, flat position, x (0) or y (1): CenterNet's decoder
            return np.stack([rng.randint(0, 2, 10), rng.randint(0, 12, 10), rng.randint(0, 2, 10)])
        return rng.normal(0.0, 1.0, shape)

    gather("int64_indices", (2, 12, 2), (3, 10), "with int64 indices (batch, position, x or y) "
           "into float32 (2, 12, 2), as GluonCV's CenterNet decoder.", make_input=centernet,
           input_dtypes={"indices": "int64"}, dtypes="typed")

    def int_data(rng, shape):
        if shape == (3, 4):
            return rng.randint(-50, 50, shape).astype(np.float64)
        return gather_indices((2, 5), (3, 4))(rng, shape)

    gather("int32", (3, 4), (2, 5), "of int32 data with int32 indices: an int32 output.",
           make_input=int_data, input_dtypes={"data": "int32", "indices": "int32"},
           dtypes="typed")

    # ---- div_sqrt_dim ----------------------------------------------------
    add("div_sqrt_dim", C.div_sqrt_dim(data, name="op0"), {"data": (2, 3, 7)},
        "_contrib_div_sqrt_dim: data / sqrt(7).")
    add("div_sqrt_dim_int32", C.div_sqrt_dim(data, name="op0"), {"data": (2, 5)},
        "_contrib_div_sqrt_dim of int32 data: MXNet divides by int32(sqrt(5)) = 2, truncating.",
        make_input=integers(-20, 20), input_dtypes={"data": "int32"}, dtypes="typed")

    # ---- interleaved attention products ----------------------------------
    qkv, att = mx.sym.var("qkv"), mx.sym.var("att")
    queries, kv = mx.sym.var("queries"), mx.sym.var("kv")
    add("selfatt_qk", C.interleaved_matmul_selfatt_qk(qkv, heads=2, name="op0"),
        {"qkv": (7, 3, 30)}, "_contrib_interleaved_matmul_selfatt_qk, 2 heads of dim 5, sequence "
        "7, batch 3: output (6, 7, 7).")
    add("selfatt_qk_one_head", C.interleaved_matmul_selfatt_qk(qkv, heads=1, name="op0"),
        {"qkv": (9, 2, 39)}, "_contrib_interleaved_matmul_selfatt_qk, one head of dim 13.")
    add("selfatt_valatt", C.interleaved_matmul_selfatt_valatt(qkv, att, heads=2, name="op0"),
        {"qkv": (7, 3, 30), "att": (6, 7, 7)}, "_contrib_interleaved_matmul_selfatt_valatt, 2 "
        "heads of dim 5, sequence 7, batch 3: output (7, 3, 10).")
    scores = C.interleaved_matmul_selfatt_qk(qkv, heads=3, name="qk0")
    weights = mx.sym.softmax(scores, axis=-1, name="softmax0")
    add("selfatt_chain", C.interleaved_matmul_selfatt_valatt(qkv, weights, heads=3, name="va0"),
        {"qkv": (5, 2, 36)}, "BERT's attention: selfatt_qk, softmax, selfatt_valatt; 3 heads of "
        "dim 4, sequence 5, batch 2.")
    add("encdec_qk", C.interleaved_matmul_encdec_qk(queries, kv, heads=2, name="op0"),
        {"queries": (4, 3, 10), "kv": (6, 3, 20)}, "_contrib_interleaved_matmul_encdec_qk, 2 "
        "heads of dim 5, 4 queries, 6 keys, batch 3: output (6, 4, 6).")
    add("encdec_valatt", C.interleaved_matmul_encdec_valatt(kv, att, heads=2, name="op0"),
        {"kv": (6, 3, 20), "att": (6, 4, 6)}, "_contrib_interleaved_matmul_encdec_valatt, 2 "
        "heads of dim 5, 4 queries, 6 keys, batch 3: output (4, 3, 10).")

    # ---- what GluonNLP's BERT and GluonCV's CenterNet graphs also do -------
    wq, wk = mx.sym.var("fcq_weight", shape=(3, 6)), mx.sym.var("fck_weight", shape=(4, 6))
    fused = mx.sym.Concat(wq, wk, dim=0, name="concat0")
    add("fc_computed_weight", mx.sym.FullyConnected(data, fused, num_hidden=7, no_bias=True,
                                                    flatten=False, name="fc0"),
        {"data": (2, 5, 6)}, "FullyConnected whose weight the graph computes (Concat of two "
        "parameters, as BERT's fused query/key/value projection), 10 rows: the weight changes "
        "with every run, so it must not be packed when the model is bound.")
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    add("concat_int64", mx.sym.Concat(lhs, rhs, dim=0, name="concat0"),
        {"lhs": (1, 7), "rhs": (2, 7)}, "Concat of int64 arrays (CenterNet's decoder joins its "
        "int64 indices so).", make_input=integers(-1000, 1000),
        input_dtypes={"lhs": "int64", "rhs": "int64"}, dtypes="typed")

    # ---- softmax with lengths (BERT's attention mask) --------------------
    length = mx.sym.var("length")

    def lengths(extent, lead):
        def make(rng, shape):
            if shape == lead:
                values = rng.randint(0, extent + 1, shape)
                flat = values.reshape(-1)
                flat[:2] = [0, extent]  # an empty row and a full one
                return values.astype(np.float64)
            return rng.normal(0.0, 2.0, shape)
        return make

    add("softmax_length", mx.sym.softmax(data, length=length, axis=-1, use_length=True, name="op0"),
        {"data": (2, 3, 7), "length": (2, 3)}, "softmax with use_length over the last axis: "
        "int32 lengths 0..7 (0: a row of zeros), the elements past each length 0.",
        make_input=lengths(7, (2, 3)), input_dtypes={"length": "int32"}, dtypes="typed")
    add("softmax_length_axis1", mx.sym.softmax(data, length=length, axis=1, use_length=True,
                                               temperature=2.0, name="op0"),
        {"data": (2, 6, 3), "length": (2, 3)}, "softmax with use_length along axis 1 (not "
        "the last), temperature 2, int64 lengths 0..6.",
        make_input=lengths(6, (2, 3)), input_dtypes={"length": "int64"}, dtypes="typed")

    # ---- ROIAlign --------------------------------------------------------
    rois = mx.sym.var("rois")

    def roi_align(name, dshape, roi_values, notes, **kw):
        values = np.asarray(roi_values, np.float64)
        add("roi_align_" + name, C.ROIAlign(data, rois, name="roi0", **kw),
            {"data": dshape, "rois": values.shape}, "_contrib_ROIAlign " + notes,
            make_input=lambda rng, shape: values if shape == values.shape
            else rng.normal(0, 1, shape))

    # An image of 16 x 12 (a 2x-subsampled 8 x 6 map at spatial_scale 0.5).
    mixed = [[0, 0, 0, 15, 11], [1, 2.4, 3.6, 9.5, 7.5], [0, 5, 1, 6, 2],
             [1, 10, 8, 19, 14], [0, 3.5, 2.5, 3.5, 2.5], [1, -3, -2.5, 4, 3],
             [1.7, 0.3, 6.2, 14.9, 11.7], [-0.5, 7, 9, 2, 4], [0, 14.5, 10.5, 30, 26]]
    roi_align("adaptive", (2, 3, 8, 6), mixed, "pooled 3x2 at scale 0.5, adaptive sampling "
              "(sample_ratio -1): the whole image, fractional corners, a 1-pixel box, one "
              "reaching past the map, a zero-size box (taken as 1x1), one starting at negative "
              "coordinates, batch index 1.7 (image 1), an inverted box with batch index -0.5 "
              "(image 0), one mostly outside the map.", pooled_size=(3, 2), spatial_scale=0.5)
    roi_align("sample2", (2, 4, 9, 11), [[0, 0, 0, 40, 33], [1, 5.5, 7.25, 30, 20],
                                         [1, 12, 3, 13, 4], [0, 22, 18, 60, 50]],
              "pooled 2x2 at scale 0.25 with sample_ratio 2 (GluonCV's Faster R-CNN): rois on "
              "a 9 x 11 map, one running off its edges.", pooled_size=(2, 2),
              spatial_scale=0.25, sample_ratio=2)
    roi_align("large", (1, 2, 13, 17), [[0, 1, 2, 33, 25], [0, 0, 0, 16.5, 12.5]],
              "pooled 3x4 at scale 0.5 on large rois: adaptive grids of up to 5 x 4 samples "
              "per bin.", pooled_size=(3, 4), spatial_scale=0.5)
    roi_align("aligned", (2, 3, 8, 6), [[0, 0, 0, 15, 11], [1, 2.4, 3.6, 9.5, 7.5],
                                        [0, 5, 1, 6, 2], [1, 10, 8, 19, 14],
                                        [1, -3, -2.5, 4, 3]],
              "with aligned=True (Detectron2's half-pixel offset), pooled 3x2 at scale 0.5, "
              "adaptive sampling.", pooled_size=(3, 2), spatial_scale=0.5, aligned=True)
    roi_align("position_sensitive", (2, 12, 7, 5), [[0, 0, 0, 9, 13], [1, 1.5, 2.5, 7, 8],
                                                   [1, 4, 0, 9.5, 5.5]],
              "position_sensitive, pooled 2x3 (12 channels -> 2), scale 0.5, sample_ratio 3.",
              pooled_size=(2, 3), spatial_scale=0.5, sample_ratio=3, position_sensitive=True)
    return cases

# ---- end of the gather / attention / ROIAlign cases -----------------------


# --------------------------------------------------------------------------
# _contrib_MultiBoxPrior, _contrib_MultiBoxDetection (MXNet's SSD example;
# issue 30)
# --------------------------------------------------------------------------

def multibox_inputs(batches, classes, anchors, levels=(0.05, 0.1, 0.25, 0.4, 0.6)):
    """An InputFn for MultiBoxDetection: cls_prob (B, C, N) from a few
    levels (so equal scores occur), loc_pred (B, N * 4) small offsets,
    anchors (1, N, 4) corners of overlapping boxes in [0, 1] (some reaching
    past it)."""
    def make(rng, shape):
        if shape == (batches, classes, anchors):
            return np.asarray(levels)[rng.randint(0, len(levels), shape)]
        if shape == (batches, anchors * 4):
            return rng.normal(0.0, 0.75, shape)
        xy = rng.randint(0, 8, (1, anchors, 2)) * 0.125
        wh = rng.randint(1, 5, (1, anchors, 2)) * 0.125
        return np.concatenate([xy, xy + wh], axis=-1)
    return make


def multibox_cases() -> List[OpCase]:
    """MultiBoxPrior with the defaults, several sizes and ratios with clip,
    explicit steps and offsets; MultiBoxDetection on scores with ties (a
    stable sort keeps equal scores in anchor order), with and without clip,
    nms_topk below the valid count (rows past it keep their unsorted
    contents with class -1, as MXNet), force_suppress, a threshold that
    drops most anchors, NMS off (nms_threshold 0: compaction only), and an
    SSD-style graph with the anchors from MultiBoxPrior."""
    cases: List[OpCase] = []
    data = mx.sym.var("data")
    C = mx.sym.contrib

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    add("multibox_prior_default", C.MultiBoxPrior(data, name="op0"), {"data": (2, 3, 5, 7)},
        "_contrib_MultiBoxPrior with the defaults (size 1, ratio 1) on a 5 x 7 map.")
    add("multibox_prior_sizes_ratios", C.MultiBoxPrior(data, sizes=(0.2, 0.35, 0.5),
                                                       ratios=(1, 2, 0.5, 3), clip=True,
                                                       name="op0"),
        {"data": (1, 4, 6, 9)}, "_contrib_MultiBoxPrior, 3 sizes and 4 ratios (6 anchors per "
        "cell) on a 6 x 9 map, clipped into [0, 1].")
    add("multibox_prior_steps_offsets", C.MultiBoxPrior(data, sizes=(0.3,), ratios=(1, 2),
                                                        steps=(0.1, 0.125),
                                                        offsets=(0.25, 0.75), name="op0"),
        {"data": (2, 2, 4, 3)}, "_contrib_MultiBoxPrior with steps (0.1, 0.125) and offsets "
        "(0.25, 0.75), not clipped.")

    cls, loc, anchor = mx.sym.var("cls_prob"), mx.sym.var("loc_pred"), mx.sym.var("anchor")

    def detect(name, batches, classes, anchors, notes, levels=(0.05, 0.1, 0.25, 0.4, 0.6), **kw):
        add("multibox_detection_" + name, C.MultiBoxDetection(cls, loc, anchor, name="op0", **kw),
            {"cls_prob": (batches, classes, anchors), "loc_pred": (batches, anchors * 4),
             "anchor": (1, anchors, 4)}, "_contrib_MultiBoxDetection " + notes,
            make_input=multibox_inputs(batches, classes, anchors, levels))

    detect("default", 2, 4, 37, "with the defaults (clip, threshold 0.01, nms_threshold 0.5): "
           "3 classes and the background, 37 anchors, scores from 5 levels (ties).")
    detect("topk_force", 3, 5, 29, "with nms_topk 6 (of about 29 valid), force_suppress, "
           "nms_threshold 0.3, no clip, variances (0.2, 0.2, 0.1, 0.1).", nms_topk=6,
           force_suppress=True, nms_threshold=0.3, clip=False, variances=(0.2, 0.2, 0.1, 0.1))
    detect("threshold", 2, 3, 25, "with threshold 0.35 (scores at or above it kept; most "
           "anchors become background) and nms_threshold 0.25.", threshold=0.35,
           nms_threshold=0.25, levels=(0.1, 0.2, 0.35, 0.5))
    detect("no_nms", 2, 4, 19, "with nms_threshold 0 and threshold 0.3: the valid rows "
           "compacted in anchor order, neither sorted nor suppressed, -1 rows after them.",
           nms_threshold=0, threshold=0.3)

    feature = mx.sym.var("feature")
    prior = C.MultiBoxPrior(feature, sizes=(0.3, 0.6), ratios=(1, 2, 0.5), clip=True,
                            name="prior0")
    probs = mx.sym.softmax(cls, axis=1, name="softmax0")
    ssd = C.MultiBoxDetection(probs, loc, prior, nms_threshold=0.45, name="det0")

    def ssd_inputs(rng, shape):
        if shape == (2, 3, 4, 5):
            return rng.normal(0.0, 1.0, shape)
        if shape == (2, 3, 80):
            return rng.normal(0.0, 2.0, shape)
        return rng.normal(0.0, 0.5, shape)

    add("multibox_detection_ssd", ssd, {"feature": (2, 3, 4, 5), "cls_prob": (2, 3, 80),
                                        "loc_pred": (2, 320)},
        "An SSD head: MultiBoxPrior (2 sizes, 3 ratios) on a 4 x 5 feature map gives 80 "
        "anchors; softmax over 3 classes, MultiBoxDetection with nms_threshold 0.45.",
        make_input=ssd_inputs)
    return cases

# ---- end of the MultiBox cases --------------------------------------------


def mixed_net() -> mx.sym.Symbol:
    """Operators beyond the model zoo chained in one graph with two heads."""
    S = mx.sym
    data, tokens = S.var("data"), S.var("tokens")                         # (2,3,9,9), (2,5)
    x = S.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=6, name="c1")
    x = S.LeakyReLU(x, act_type="prelu", name="prelu1")
    x = S.LRN(x, nsize=3, name="lrn1")
    x = S.Deconvolution(x, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=4,
                        name="dc1")                                         # (2,4,18,18)
    x = S.InstanceNorm(x, name="in1")
    p = S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2, name="lp1")
    u = S.UpSampling(p, scale=2, sample_type="nearest", name="up1")        # (2,4,18,18)
    x = S.elemwise_add(u, x, name="res1")
    x = S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 1, 1), name="pad1")
    x = S.slice(x, begin=(None, None, 2, 3), end=(None, None, 18, 19), name="sl1")
    x = S.transpose(x, axes=(0, 2, 3, 1), name="tr1")                      # (2,16,16,4)
    x = S.Reshape(x, shape=(0, -3, 0), name="rs1")                          # (2,256,4)
    x = S.LayerNorm(x, name="ln1")
    image = S.mean(x, axis=1, name="mean1")                                # (2,4)
    words = S.Embedding(tokens, input_dim=10, output_dim=4, name="emb")    # (2,5,4)
    words = S.sum(words, axis=1, name="sum1")                              # (2,4)
    h = S.concat(image, words, dim=1, name="cat1")                          # (2,8)
    h = S.FullyConnected(h, num_hidden=6, name="fc1")
    h = S.Activation(h, act_type="tanh", name="tanh1")
    scale = S._internal._plus_scalar(S.norm(h, axis=1, keepdims=True, name="norm1"),
                                     scalar=0.5, name="ps1")
    h = S.broadcast_div(h, scale, name="bdiv1")
    h = S._internal._mul_scalar(h, scalar=3.0, name="ms1")
    return S.Group([S.SoftmaxOutput(h, name="softmax"), S.argmax(h, axis=1, name="am1")])


def dtype_cases() -> List[OpCase]:
    """Models whose inputs, parameters or outputs are not float32."""
    cases: List[OpCase] = []
    S = mx.sym

    def add(name, sym, inputs, notes, **kw):
        cases.append(OpCase(name, sym, inputs, notes, **kw))

    # A float16 export (Gluon's net.cast('float16')): float16 input, weights,
    # statistics and output. MXNet's CPU build has no float16 GEMM or
    # BatchNorm, so the reference is MXNet's float32 run of the same values;
    # mxlite rounds every intermediate result to float16 as a float16 run
    # would, hence the float16-sized tolerance.
    data = S.var("data", dtype="float16")
    x = S.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=5, name="c1")
    x = S.BatchNorm(x, fix_gamma=False, name="bn1")
    x = S.Activation(x, act_type="relu", name="r1")
    x = S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p1")
    x = S.FullyConnected(x, num_hidden=7, name="fc1")
    fp16_net = S.softmax(x, name="prob")
    names = fp16_net.list_arguments() + fp16_net.list_auxiliary_states()
    add("dtype_float16_cnn", fp16_net, {"data": (2, 3, 7, 7)},
        "A float16 model: input, weights, BatchNorm statistics and output in float16 (input "
        "given through MXPredCreateEx). Reference: MXNet's float32 run of the same values "
        "(its CPU build has no float16 convolution); rtol 1e-2 covers float16 rounding.",
        input_dtypes={"data": "float16"}, param_dtypes={n: "float16" for n in names if n != "data"},
        dtypes="float32_values", output_dtypes=["float16"], rtol=1e-2)

    # Element-wise float16 operators MXNet does run on the CPU: a real
    # float16 reference.
    half = S.var("data", dtype="float16")
    y = S.Activation(half, act_type="tanh", name="t1")
    y = S._internal._mul_scalar(y, scalar=3.0, name="m1")
    y = S.softmax(y, name="s1")
    y = S.LayerNorm(y, name="ln1")
    add("dtype_float16_elementwise", y, {"data": (2, 3, 7)},
        "tanh, scalar multiply, softmax and LayerNorm in float16, run by MXNet in float16.",
        input_dtypes={"data": "float16"}, param_dtypes={"ln1_gamma": "float16", "ln1_beta": "float16"},
        dtypes="typed", rtol=5e-3)

    # Casts inside a float32 graph.
    data = S.var("data")
    z = S.Cast(data, dtype="float16", name="to_half")
    z = S.Activation(z, act_type="relu", name="r1")
    z = S._internal._mul_scalar(z, scalar=1.7, name="m1")
    z = S.Cast(z, dtype="float32", name="to_float")
    z = S.FullyConnected(z, num_hidden=5, name="fc1")
    add("dtype_cast_float16_roundtrip", z, {"data": (2, 13)},
        "Cast to float16, relu and a scalar multiply in float16, Cast back, FullyConnected.",
        dtypes="typed")
    add("dtype_cast_to_integers", S.Group([S.Cast(data, dtype=t, name="to_" + t)
                                            for t in ("uint8", "int8", "int32")]),
        {"data": (3, 11)}, "Cast of values in [-300, 300] to uint8, int8 (both wrap) and int32.",
        make_input=uniform(-300.0, 300.0), dtypes="typed")

    # Parameters stored as int8, dequantised by the graph.
    weight = S.var("fc1_weight", dtype="int8")
    scaled = S._internal._mul_scalar(S.Cast(weight, dtype="float32", name="dq"), scalar=0.02,
                                     name="scale")
    add("dtype_int8_weights", S.FullyConnected(data, weight=scaled, num_hidden=6, no_bias=True,
                                               name="fc1"),
        {"data": (2, 9)}, "An int8 weight in the params file, Cast to float32 and scaled.",
        param_dtypes={"fc1_weight": "int8"}, dtypes="typed")

    # Integer inputs.
    tokens = S.var("tokens")
    add("dtype_int32_tokens", S.sum(S.Embedding(tokens, input_dim=11, output_dim=4, name="emb"),
                                    axis=1, name="sum1"),
        {"tokens": (3, 5)}, "int32 token ids (MXPredCreateEx) into an Embedding, summed.",
        make_input=integers(0, 10), input_dtypes={"tokens": "int32"}, dtypes="typed")
    image = S.var("image")
    u = S._internal._mul_scalar(S.Cast(image, dtype="float32", name="to_float"),
                                scalar=1.0 / 255, name="norm")
    add("dtype_uint8_image", S.Convolution(u, kernel=(3, 3), num_filter=4, name="c1"),
        {"image": (2, 3, 6, 5)}, "A uint8 image input, Cast and scaled, into a Convolution.",
        make_input=integers(0, 255), input_dtypes={"image": "uint8"}, dtypes="typed")
    add("dtype_one_hot_int32", S.one_hot(tokens, depth=5, dtype="int32", name="oh"),
        {"tokens": (2, 3)}, "one_hot with an int32 output.", make_input=integers(-1, 5),
        dtypes="typed")
    add("dtype_topk_int32_indices", S.Group(list(S.topk(data, k=2, ret_typ="both",
                                                        dtype="int32", name="tk"))),
        {"data": (2, 7)}, "topk returning float32 values and int32 indices.",
        make_input=lambda rng, shape: rng.permutation(int(np.prod(shape))).reshape(shape) * 0.5,
        dtypes="typed")

    # Parameters stored in every integer and float type, each Cast by the graph.
    stored = {"u8_values": "uint8", "i32_values": "int32", "i64_values": "int64",
              "f16_values": "float16", "f64_values": "float64"}
    terms = [S.Cast(S.var(n, dtype=t, shape=(1, 3)), dtype="float32", name="cast_" + n)
             for n, t in stored.items()]
    summed = S.broadcast_add(data, S.add_n(*terms, name="sum_params"), name="add_params")
    add("dtype_param_types", summed, {"data": (2, 3)},
        "Parameters stored as uint8, int32, int64, float16 and float64, each Cast to float32 by "
        "the graph and added to the input.",
        param_dtypes=stored, dtypes="typed")

    # float64 throughout (mxlite computes it in float32).
    wide = S.var("data", dtype="float64")
    add("dtype_float64", S.softmax(S.FullyConnected(wide, num_hidden=5, name="fc1"), name="prob"),
        {"data": (2, 9)}, "A float64 model: input, weights and output float64 (mxlite computes "
        "in float32, well inside the tolerance).",
        input_dtypes={"data": "float64"}, param_dtypes={"fc1_weight": "float64", "fc1_bias": "float64"},
        dtypes="typed")
    return cases


def composite_net(data: mx.sym.Symbol) -> mx.sym.Symbol:
    """A miniature ResNet: exercises op chaining, in-place ops and the residual join."""
    c1 = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=5, name="c1")
    b1 = mx.sym.BatchNorm(c1, fix_gamma=False, eps=1e-5, name="b1")
    r1 = mx.sym.Activation(b1, act_type="relu", name="r1")
    p1 = mx.sym.Pooling(r1, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="p1")
    c2 = mx.sym.Convolution(p1, kernel=(3, 3), pad=(1, 1), num_filter=5, name="c2")
    b2 = mx.sym.BatchNorm(c2, name="b2")
    s = mx.sym.elemwise_add(b2, p1, name="add0")
    r2 = mx.sym.Activation(s, act_type="relu", name="r2")
    g = mx.sym.Pooling(r2, global_pool=True, kernel=(1, 1), pool_type="avg", name="gp")
    f = mx.sym.Flatten(g, name="flat")
    fc = mx.sym.FullyConnected(f, num_hidden=7, name="fc")
    return mx.sym.softmax(fc, name="prob")


def case_values(c: OpCase, rng: np.random.RandomState):
    """Random inputs and parameters of a case, in the dtypes it asks for."""
    inputs = {k: c.make_input(rng, shape).astype((c.input_dtypes or {}).get(k, np.float32))
              for k, shape in c.inputs.items()}
    params = random_params(c.sym, c.inputs, rng)
    for k, dtype in (c.param_dtypes or {}).items():
        params[k] = params[k].astype(dtype)
    return inputs, params


def cmd_ops(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    cases = {}
    for c in define_op_cases():
        rng = seed_all(c.name)
        inputs, params = case_values(c, rng)
        entry = write_case(outdir, c.name, c.sym, inputs, params, c.rtol, c.notes,
                           symbol_json=c.symbol_json, dtypes=c.dtypes,
                           output_dtypes=c.output_dtypes)
        cases[c.name] = entry
        print("  %-32s out %-22s max|out| %-9.3g fp32-vs-fp64 %s" % (
            c.name, entry["outputs"], max(entry["max_abs_output"]),
            "n/a" if entry["mxnet_err_vs_fp64"] is None else "%.1e" % entry["mxnet_err_vs_fp64"]))
    write_manifest(outdir, "ops", {"cases": cases})


# --------------------------------------------------------------------------
# formats
# --------------------------------------------------------------------------

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
TYPE_FLAGS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
              np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
              np.dtype(np.int64): 6, np.dtype(np.bool_): 7}


def pack_container(records: List[bytes], names: List[str]) -> bytes:
    """NDArray list container (reference doc section 2.1)."""
    out = struct.pack("<QQQ", LIST_MAGIC, 0, len(records)) + b"".join(records)
    out += struct.pack("<Q", len(names))
    for n in names:
        raw = n.encode("utf-8")
        out += struct.pack("<Q", len(raw)) + raw
    return out


def pack_v1_record(arr: np.ndarray, dev_type: int = 1, dev_id: int = 0) -> bytes:
    """V1 record: magic, TShape (i32 ndim + i64 dims), ctx, type flag, data."""
    return (struct.pack("<Ii", V1_MAGIC, arr.ndim) + struct.pack("<%dq" % arr.ndim, *arr.shape)
            + struct.pack("<iii", dev_type, dev_id, TYPE_FLAGS[arr.dtype])
            + np.ascontiguousarray(arr).tobytes())


def pack_legacy_record(arr: np.ndarray) -> bytes:
    """Pre-V1 record: no magic, u32 ndim, u32 dims, ctx, type flag, data."""
    return (struct.pack("<I", arr.ndim) + struct.pack("<%dI" % arr.ndim, *arr.shape)
            + struct.pack("<iii", 1, 0, TYPE_FLAGS[arr.dtype])
            + np.ascontiguousarray(arr).tobytes())


def pack_v2_dense_record(arr: np.ndarray, dev_type: int, dev_id: int) -> bytes:
    """V2 dense record, as NDArray::Save writes it (used to fake a GPU context)."""
    return (struct.pack("<Iii", 0xF993FAC9, 0, arr.ndim) + struct.pack("<%dq" % arr.ndim, *arr.shape)
            + struct.pack("<iii", dev_type, dev_id, TYPE_FLAGS[arr.dtype])
            + np.ascontiguousarray(arr).tobytes())


def sample_arrays(rng: np.random.RandomState) -> Dict[str, np.ndarray]:
    """One array per classic dtype, in assorted ranks (1-D .. 4-D)."""
    return {
        "arg:f32_4d": rng.normal(0, 1, (2, 3, 4, 5)).astype(np.float32),
        "arg:f64_1d": rng.normal(0, 1, (7,)).astype(np.float64),
        "aux:f16_2d": rng.normal(0, 1, (3, 5)).astype(np.float16),
        "u8_3d": rng.randint(0, 256, (2, 3, 4)).astype(np.uint8),
        "i32_1d": rng.randint(-2**31, 2**31 - 1, (5,)).astype(np.int32),
        "i8_2d": rng.randint(-128, 128, (4, 3)).astype(np.int8),
        "i64_2d": rng.randint(-2**62, 2**62, (2, 3), dtype=np.int64),
        "bool_1d": rng.rand(9) > 0.5,
        "f32_single": np.array([3.25], dtype=np.float32),
        "name with spaces ü": rng.normal(0, 1, (1, 1, 1, 2)).astype(np.float32),
    }


def to_nd(arr: np.ndarray) -> mx.nd.NDArray:
    return mx.nd.array(arr, ctx=CTX, dtype=arr.dtype)


def record_expected(outdir: str, fname: str, loaded, source, notes: str, version: str,
                    load_mode: str = "classic") -> dict:
    """Check `loaded` (what MXNet read back) against `source`, save it, describe it."""
    stem = fname[:-len(".params")]
    if isinstance(loaded, dict):
        names = list(loaded.keys())
        arrays = [loaded[n] for n in names]
        keys = ["name:" + n for n in names]
        src = [source[n] for n in names]
    else:
        names = []
        arrays = list(loaded)
        keys = ["index:%d" % i for i in range(len(arrays))]
        src = list(source)
    # mx.nd.load gives NDArrays; the V3 path passes numpy arrays already.
    np_arrays = [a if isinstance(a, np.ndarray) else a.asnumpy() for a in arrays]
    for k, got, want in zip(keys, np_arrays, src):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), \
            "%s %s: MXNet read back something else" % (fname, k)
    save_npz(os.path.join(outdir, stem + "-expected.npz"), dict(zip(keys, np_arrays)))
    return {
        "expected": stem + "-expected.npz",
        "record_version": version,
        "load_mode": load_mode,
        "keyed_by": "name" if isinstance(loaded, dict) else "index",
        "names": names,
        "arrays": [{"key": k, "dtype": a.dtype.name, "shape": shape_list(a.shape)}
                   for k, a in zip(keys, np_arrays)],
        "notes": notes,
    }


def make_params_files(outdir: str) -> dict:
    rng = seed_all("formats")
    files = {}

    # V2, named and unnamed -- what mx.nd.save writes in 1.9.1.
    arrays = sample_arrays(rng)
    path = os.path.join(outdir, "v2_dict.params")
    mx.nd.save(path, {k: to_nd(v) for k, v in arrays.items()})
    files["v2_dict.params"] = record_expected(
        outdir, "v2_dict.params", mx.nd.load(path), arrays, version="V2",
        notes="mx.nd.save of a dict: all 8 classic dtypes (float32/64/16, uint8, int32, int8, int64, "
              "bool), ranks 1-4, arg:/aux:/unprefixed names, a UTF-8 name with spaces.")

    listed = [v for k, v in arrays.items() if k in ("arg:f32_4d", "i64_2d", "bool_1d", "aux:f16_2d")]
    path = os.path.join(outdir, "v2_list.params")
    mx.nd.save(path, [to_nd(v) for v in listed])
    files["v2_list.params"] = record_expected(
        outdir, "v2_list.params", mx.nd.load(path), listed, version="V2",
        notes="mx.nd.save of a list: name count K=0.")

    # V3: numpy-shape semantics, where ndim 0 is a real scalar and 0-size dims are legal.
    from mxnet import npx
    v3 = {"scalar_0d": np.array(2.5, dtype=np.float32),
          "f32_2d": rng.normal(0, 1, (3, 4)).astype(np.float32),
          "i64_1d": np.arange(-3, 4, dtype=np.int64),
          "empty_0x3": np.zeros((0, 3), dtype=np.float32)}
    path = os.path.join(outdir, "v3_np.params")
    npx.set_np()
    try:
        npx.save(path, {k: mx.np.array(v, dtype=v.dtype) for k, v in v3.items()})
        loaded = {k: v.asnumpy() for k, v in npx.load(path).items()}
    finally:
        npx.reset_np()
    files["v3_np.params"] = record_expected(
        outdir, "v3_np.params", loaded, v3, version="V3", load_mode="numpy (npx.set_np)",
        notes="npx.save in numpy mode: V3 records; includes a 0-d scalar (ndim 0 = one element) "
              "and a (0,3) zero-size array. Loading needs np-shape mode in MXNet.")
    try:  # document the quirk the runtime may choose not to copy
        mx.nd.load(path)
        files["v3_np.params"]["classic_mode_load"] = "ok"
    except mx.base.MXNetError as e:
        files["v3_np.params"]["classic_mode_load"] = "error: " + error_summary(e)

    # V1 and legacy records, written by hand from the reference doc section 2.2.
    hand = {"arg:w_f32_4d": rng.normal(0, 1, (2, 3, 2, 2)).astype(np.float32),
            "arg:b_f64_1d": rng.normal(0, 1, (3,)).astype(np.float64),
            "aux:i32_2d": rng.randint(-1000, 1000, (2, 5)).astype(np.int32),
            "u8_1d": rng.randint(0, 256, (6,)).astype(np.uint8)}
    for fname, pack, version in (("v1.params", pack_v1_record, "V1"),
                                 ("legacy.params", pack_legacy_record, "legacy")):
        path = os.path.join(outdir, fname)
        with open(path, "wb") as f:
            f.write(pack_container([pack(v) for v in hand.values()], list(hand)))
        files[fname] = record_expected(
            outdir, fname, mx.nd.load(path), hand, version=version,
            notes="Written by hand with struct: %s" % (
                "V1 records (magic 0xF993FAC8, i32 ndim + i64 dims, no stype)." if version == "V1"
                else "legacy records (no magic: u32 ndim then u32 dims)."))

    # A V2 file as saved from a GPU: ctx (2, 1).  MXNet loads it onto the CPU.
    gpu = {"arg:gpu_w": rng.normal(0, 1, (4, 3)).astype(np.float32)}
    path = os.path.join(outdir, "v2_gpu_ctx.params")
    # First prove the hand packer right: with a CPU ctx it must match mx.nd.save byte for byte.
    mx.nd.save(path, {k: to_nd(v) for k, v in gpu.items()})
    with open(path, "rb") as f:
        assert f.read() == pack_container([pack_v2_dense_record(v, 1, 0) for v in gpu.values()],
                                          list(gpu)), "V2 layout differs from the reference doc"
    with open(path, "wb") as f:
        f.write(pack_container([pack_v2_dense_record(v, 2, 1) for v in gpu.values()], list(gpu)))
    files["v2_gpu_ctx.params"] = record_expected(
        outdir, "v2_gpu_ctx.params", mx.nd.load(path), gpu, version="V2",
        notes="Hand-written V2 record with ctx dev_type=2 (gpu), dev_id=1, as in checkpoints saved "
              "from GPU training; MXNet (CPU build) loads it as cpu(0).")

    # Sparse storage: the runtime must reject it with a clear error.
    rsp = mx.nd.sparse.row_sparse_array(
        (rng.normal(0, 1, (2, 3)).astype(np.float32), np.array([1, 4], dtype=np.int64)), shape=(6, 3))
    csr = mx.nd.sparse.csr_matrix(np.array([[0, 1.5, 0], [0, 0, 0], [2.0, 0, -1.0]], np.float32))
    path = os.path.join(outdir, "sparse.params")
    mx.nd.save(path, {"arg:rsp": rsp, "arg:csr": csr, "arg:dense": to_nd(np.ones((2, 2), np.float32))})
    loaded = mx.nd.load(path)
    files["sparse.params"] = {
        "expected": None,
        "record_version": "V2",
        "names": list(loaded.keys()),
        "stypes": {k: v.stype for k, v in loaded.items()},
        "expect_error": True,
        "notes": "row_sparse (stype 1) and csr (stype 2) records next to a dense one: unsupported, "
                 "the runtime must fail with a clear error mentioning sparse storage.",
    }
    return files


# ---- legacy symbol JSON ---------------------------------------------------

# The legacy cases use one small network; conv0 carries op-level hidden keys,
# fc0 an `<arg>_lr_mult` key that the upgrader must move onto fc0_weight.
LEGACY_HIDDEN = {"conv0": {"ctx_group": "stage1", "lr_mult": "0.1"},
                 "fc0": {"weight_lr_mult": "1.2", "wd_mult": "0.5"}}


def legacy_net() -> mx.sym.Symbol:
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=5, name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn0")  # eps left at the 1e-3 default
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    return mx.sym.FullyConnected(x, num_hidden=4, name="fc0")


def legacy_json(sym: mx.sym.Symbol, version: int) -> str:
    """Rewrite a 1.9.1 symbol JSON the way MXNet 0.8 (version 800) or 0.9 (900) wrote it.

    Both: op params under `param`, user attrs under `attr`, `backward_source_id`.
    800: 2-element inputs, no mxnet_version, and BatchNorm without its
    moving_mean/moving_var inputs (the upgrader must re-create them).
    900: 3-element inputs and attrs.mxnet_version = ["int", 900].
    """
    graph = json.loads(sym.tojson())
    old_nodes = graph["nodes"]
    drop = set()
    if version < 900:
        drop = {i for i, n in enumerate(old_nodes)
                if n["op"] == "null" and n["name"].endswith(("_moving_mean", "_moving_var"))}
    new_id = {}
    nodes = []
    for i, n in enumerate(old_nodes):
        if i in drop:
            continue
        new_id[i] = len(nodes)
        inputs = [[new_id[e[0]], e[1]] + ([] if version < 900 else [e[2]])
                  for e in n["inputs"] if e[0] not in drop]
        # Variables had an empty `param`; 1.9.1 copies the op's attrs (and
        # __init__) onto implicitly created weight variables, which 0.8 did not.
        op_params = {} if n["op"] == "null" else dict(n.get("attrs", {}))
        node = {"op": n["op"], "param": op_params, "name": n["name"],
                "inputs": inputs, "backward_source_id": -1}
        if n["name"] in LEGACY_HIDDEN:
            node["attr"] = dict(LEGACY_HIDDEN[n["name"]])
        nodes.append(node)
    out = {"nodes": nodes,
           "arg_nodes": [new_id[i] for i in graph["arg_nodes"] if i not in drop],
           "heads": [[new_id[h[0]], h[1]] + ([] if version < 900 else [h[2]]) for h in graph["heads"]]}
    if version >= 900:
        out["node_row_ptr"] = graph["node_row_ptr"]
        out["attrs"] = {"mxnet_version": ["int", version]}
    return to_json(out) + "\n"


def make_legacy_cases(outdir: str) -> dict:
    cases = {}
    modern = legacy_net()
    for version, name in ((800, "legacy_0800"), (900, "legacy_0900")):
        rng = seed_all(name)
        inputs = {"data": rng.normal(0, 1, (2, 3, 7, 7)).astype(np.float32)}
        params = random_params(modern, {"data": (2, 3, 7, 7)}, rng)
        text = legacy_json(modern, version)
        # MXNet must load and upgrade the hand-written file (written here first
        # so mx.sym.load can read it; write_case rewrites the same text)...
        with open(os.path.join(outdir, name + "-symbol.json"), "w") as f:
            f.write(text)
        upgraded = mx.sym.load(os.path.join(outdir, name + "-symbol.json"))
        assert upgraded.list_auxiliary_states() == ["bn0_moving_mean", "bn0_moving_var"], \
            upgraded.list_auxiliary_states()
        assert upgraded.list_arguments() == modern.list_arguments(), upgraded.list_arguments()
        attrs = upgraded.attr_dict()
        hidden = {node: {k: v for k, v in a.items() if k.startswith("__")}
                  for node, a in attrs.items()}
        hidden = {k: v for k, v in hidden.items() if v}
        assert hidden["conv0"]["__ctx_group__"] == "stage1" and hidden["conv0"]["__lr_mult__"] == "0.1"
        assert hidden["fc0_weight"]["__lr_mult__"] == "1.2", hidden
        entry = write_case(outdir, name, upgraded, inputs, params, OPS_RTOL,
                           "", symbol_json=text)
        # ...and compute exactly what the modern graph computes.
        ref = run_symbol(modern, inputs, {k: v for k, v in params.items() if k in modern.list_arguments()},
                         {k: v for k, v in params.items() if k in modern.list_auxiliary_states()})
        got = np.load(os.path.join(outdir, name + "-io.npz"))["output:0"]
        assert np.array_equal(got, ref[0]), "legacy upgrade changed the result"
        entry["notes"] = (
            "Hand-written MXNet %s symbol JSON (conv-BatchNorm-relu-fc): nodes use `param`/`attr`, "
            "`backward_source_id`, %s. conv0 has attr ctx_group/lr_mult, fc0 has weight_lr_mult/"
            "wd_mult. Params name the BN stats aux:bn0_moving_mean/var. MXNet 1.9.1 loads it via "
            "its legacy upgrader; outputs equal the modern graph's bit for bit." % (
                "0.8" if version < 900 else "0.9",
                "2-element inputs, no mxnet_version, BatchNorm without moving_mean/moving_var "
                "inputs (re-created as bn0_moving_mean/var)" if version < 900
                else "3-element inputs, mxnet_version ['int', 900], BN stats present"))
        entry["mxnet_upgrade"] = {
            "arguments": upgraded.list_arguments(),
            "aux_states": upgraded.list_auxiliary_states(),
            "hidden_attrs": hidden,
        }
        cases[name] = entry
    return cases


def cmd_formats(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    files = make_params_files(outdir)
    for fname, info in files.items():
        print("  %-20s %-7s %s" % (fname, info["record_version"],
                                   ", ".join("%s %s%s" % (a["key"], a["dtype"], a["shape"])
                                             for a in info.get("arrays", []))
                                   or "stypes %s" % info.get("stypes")))
    cases = make_legacy_cases(outdir)
    for name, entry in cases.items():
        print("  %-20s case, outputs %s, upgraded aux %s" % (
            name, entry["outputs"], entry["mxnet_upgrade"]["aux_states"]))
    write_manifest(outdir, "formats", {"files": files, "cases": cases})


# --------------------------------------------------------------------------
# zoo
# --------------------------------------------------------------------------

ZOO_MODELS = {  # name -> input side length
    "resnet18_v1": 224, "resnet50_v2": 224, "mobilenet1.0": 224, "mobilenetv2_1.0": 224,
    "squeezenet1.1": 224, "densenet121": 224, "inceptionv3": 299, "vgg11": 224, "alexnet": 224,
}
# Output magnitudes outside ZOO_MAG_RANGE make a degenerate oracle.  Anything
# outside the narrower comfort band is rescaled to max|out| ~ 1, so a model is
# never shipped sitting at the edge of the acceptable range.
ZOO_MAG_RANGE = (1e-3, 1e6)
ZOO_MAG_COMFORT = (1e-2, 1e4)


def build_zoo_model(name: str, side: int, rng: np.random.RandomState):
    """Random-weight, hybridized Gluon model with randomised BN stats, plus its input."""
    from mxnet.gluon.model_zoo import vision
    # A fresh NameManager gives the canonical prefixes (resnetv10_...) whatever
    # else this process has built.
    with mx.name.NameManager():
        net = vision.get_model(name, pretrained=False)
    net.initialize(mx.init.Xavier(), ctx=CTX)
    net.hybridize()
    x = mx.nd.array(rng.normal(0, 1, (1, 3, side, side)), ctx=CTX, dtype=np.float32)
    net(x).wait_to_read()  # materialise the deferred-init parameters

    # Make every BN's statistics matter (defaults would be mean 0 / var 1 / gamma 1).
    for pname, p in sorted(net.collect_params().items()):
        for suffix, lo, hi in (("running_mean", -0.2, 0.2), ("running_var", 0.5, 1.5),
                               ("gamma", 0.5, 1.5), ("beta", -0.2, 0.2)):
            if pname.endswith("_" + suffix):
                p.set_data(mx.nd.array(rng.uniform(lo, hi, p.shape), ctx=CTX, dtype=np.float32))
    return net, x


def rescale_classifier(net, factor: float) -> str:
    """Scale the last weight (and bias) of the network: the classifier layer."""
    params = list(net.collect_params().items())  # creation order: the head is last
    weight_name = [n for n, _ in params if n.endswith("_weight")][-1]
    layer = weight_name[:-len("_weight")]
    for pname, p in params:
        if pname in (layer + "_weight", layer + "_bias"):
            p.set_data(p.data() * factor)
    return layer


def cmd_zoo(outdir: str, models: List[str]) -> None:
    os.makedirs(outdir, exist_ok=True)
    digest = script_sha256()
    manifest_path = os.path.join(outdir, "manifest.json")
    cases = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            cases = json.load(f).get("cases", {})
    t_all = time.time()
    for name in models:
        prefix = os.path.join(outdir, name)
        old = cases.get(name)
        if (old and old.get("script_sha256") == digest and
                all(os.path.exists(prefix + s) for s in ("-symbol.json", "-0000.params", "-io.npz"))):
            print("  %-16s up to date, skipped" % name)
            continue
        t0 = time.time()
        rng = seed_all(name)
        side = ZOO_MODELS[name]
        net, x = build_zoo_model(name, side, rng)
        notes = ("Gluon model zoo %s, pretrained=False, Xavier init, BatchNorm stats and "
                 "gamma/beta (where present) randomised; input N(0,1) %dx%d batch 1."
                 % (name, side, side))
        gluon_out = net(x).asnumpy()
        mag = float(np.max(np.abs(gluon_out)))
        if not ZOO_MAG_COMFORT[0] <= mag <= ZOO_MAG_COMFORT[1]:
            layer = rescale_classifier(net, 1.0 / mag)
            notes += (" Output magnitude was %.3g with plain Xavier (signal decays/grows through "
                      "the layers), so %s was scaled by %.4g to bring max|out| to ~1 (biases are "
                      "zero, the head is positively homogeneous)." % (mag, layer, 1.0 / mag))
            gluon_out = net(x).asnumpy()
            mag = float(np.max(np.abs(gluon_out)))
        if not ZOO_MAG_RANGE[0] <= mag <= ZOO_MAG_RANGE[1]:
            raise RuntimeError("%s: degenerate output magnitude %g" % (name, mag))
        net.export(prefix)  # writes NAME-symbol.json and NAME-0000.params
        t_build = time.time() - t0

        inputs = {"data": x.asnumpy()}
        _, outs, err64 = oracle_from_files(prefix, inputs)
        # The exported checkpoint must reproduce what the live Gluon net computed.
        assert rel_err(outs[0], gluon_out) < 1e-5, rel_err(outs[0], gluon_out)
        save_npz(prefix + "-io.npz", {"input:data": inputs["data"],
                                      **{"output:%d" % i: o for i, o in enumerate(outs)}})
        sym = mx.sym.load(prefix + "-symbol.json")
        secs = time.time() - t0
        cases[name] = {
            "inputs": {"data": [1, 3, side, side]},
            "outputs": [shape_list(o.shape) for o in outs],
            "rtol": ZOO_RTOL,
            "notes": notes,
            "ops": graph_ops(sym),
            "max_abs_output": [float(np.max(np.abs(o))) for o in outs],
            "mxnet_err_vs_fp64": err64,
            "script_sha256": digest,
            "seconds": round(secs, 2),
        }
        print("  %-16s %6.1fs (build+export %.1fs)  out %s  max|out| %.4g  fp32-vs-fp64 %s" % (
            name, secs, t_build, cases[name]["outputs"], cases[name]["max_abs_output"][0],
            "n/a" if err64 is None else "%.1e" % err64))
        # Persist after every model so an interrupted run keeps its progress.
        write_manifest(outdir, "zoo", {"script_sha256": digest, "cases": cases})
    write_manifest(outdir, "zoo", {"script_sha256": digest, "cases": cases})
    print("zoo: %.1fs total" % (time.time() - t_all))


# --------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("ops", "formats", "zoo"))
    ap.add_argument("outdir")
    ap.add_argument("--models", help="zoo only: comma-separated subset of " + ",".join(ZOO_MODELS))
    a = ap.parse_args(argv)
    if mx.__version__ != "1.9.1":
        ap.error("needs mxnet 1.9.1, found %s (run scripts/setup_oracle.sh)" % mx.__version__)
    if a.models and a.mode != "zoo":
        ap.error("--models only applies to zoo")
    t0 = time.time()
    if a.mode == "ops":
        cmd_ops(a.outdir)
    elif a.mode == "formats":
        cmd_formats(a.outdir)
    else:
        models = a.models.split(",") if a.models else list(ZOO_MODELS)
        unknown = [m for m in models if m not in ZOO_MODELS]
        if unknown:
            ap.error("unknown models: %s" % ", ".join(unknown))
        cmd_zoo(a.outdir, models)
    print("%s: done in %.1fs" % (a.mode, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
