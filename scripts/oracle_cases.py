"""What the generators of MXNet-computed sweep cases share
(conv_sweep_cases.py, pool_sweep_cases.py, graph_sweep_cases.py): MXNet's
reference CPU kernels, the command line (OUTDIR [--count N] [--seed S]),
the up-to-date check and the raw float32 arrays the C++ drivers read.

Import it before mxnet: it sets the environment MXNet reads at import.
"""
import argparse
import hashlib
import os

os.environ["MXNET_MKLDNN_ENABLED"] = "0"
os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
os.environ.setdefault("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")

import numpy as np  # noqa: E402


def start(script, doc, default_count, default_seed):
    """Parses the command line; returns (args, stamp), stamp None when
    OUTDIR/cases.txt was written by identical copies of `script` and this
    module with the same arguments (then there is nothing to do). The
    generator writes "# STAMP" as the first line of cases.txt."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--count", type=int, default=default_count)
    parser.add_argument("--seed", type=int, default=default_seed)
    args = parser.parse_args()
    digest = hashlib.sha256()
    for path in (script, __file__):
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update(repr((args.count, args.seed)).encode())
    stamp = digest.hexdigest()
    manifest = os.path.join(args.outdir, "cases.txt")
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as f:
            if f.readline().strip() == f"# {stamp}":
                print(f"{os.path.basename(script)}: {args.outdir} is up to date")
                return args, None
    os.makedirs(args.outdir, exist_ok=True)
    return args, stamp


def write_raw(path, array):
    """Little-endian float32, no header: what the C++ drivers read."""
    np.ascontiguousarray(array, dtype="<f4").tofile(path)
