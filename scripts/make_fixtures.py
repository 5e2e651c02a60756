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
  script (sha256 recorded per case; see below).

The script is this file plus the package scripts/fixtures/ (common.py: seeding,
manifests, oracle runs, OpCase; ops.py, coverage_cases.py, special_cases.py,
detection_cases.py: the ops cases; formats.py; zoo.py).  Its sha256, recorded
in the zoo manifest, covers all of them: make_fixtures.py, then
fixtures/*.py sorted by name, each fed as relative path, NUL, length, NUL,
bytes (fixtures.common.script_sha256).

Everything is seeded (per case, from a CRC of the case name), and the npz
files are written with fixed zip timestamps, so re-running produces
byte-identical committed fixtures.
"""

import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

# The fixture modules live in scripts/fixtures/ (a package next to this file).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# fixtures.common sets MXNet's environment before mxnet is imported.  Its names
# (random_param, run_symbol, save_npz, ...) are re-exported here for
# scripts/model_families.py and scripts/graph_sweep_cases.py.
from fixtures.common import *  # noqa: E402,F401,F403
from fixtures.common import argparse, mx  # noqa: E402
from fixtures.formats import cmd_formats  # noqa: E402
from fixtures.ops import cmd_ops, define_op_cases  # noqa: E402,F401
from fixtures.zoo import ZOO_MODELS, cmd_zoo  # noqa: E402


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
