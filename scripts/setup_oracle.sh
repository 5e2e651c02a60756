#!/usr/bin/env bash
# Create (once) the Python venv holding the MXNet 1.9.1 "oracle" used by
# scripts/make_fixtures.py.  The product itself never imports mxnet; only the
# fixture generator does.
#
#   usage: scripts/setup_oracle.sh VENV_DIR
#
# Idempotent: if VENV_DIR/bin/python already imports mxnet 1.9.1 nothing is
# done.  numpy is pinned below 1.24 because mxnet 1.9.1 uses np.bool & co.,
# which numpy 1.24 removed.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 VENV_DIR" >&2
    exit 2
fi
venv=$1
py="$venv/bin/python"

# Silence MXNet's start-up chatter and keep it on its plain CPU code paths.
export MXNET_MKLDNN_ENABLED=0 MXNET_SUBGRAPH_BACKEND=NONE

if [[ -x "$py" ]] && "$py" -c 'import sys, mxnet; sys.exit(mxnet.__version__ != "1.9.1")' >/dev/null 2>&1; then
    echo "setup_oracle: $venv already has mxnet 1.9.1; nothing to do"
    exit 0
fi

echo "setup_oracle: creating venv $venv"
python3 -m venv "$venv"
echo "setup_oracle: installing mxnet==1.9.1 and numpy<1.24 into $venv"
"$venv/bin/pip" install -q mxnet==1.9.1 "numpy<1.24"
"$py" -c 'import mxnet, numpy; print("setup_oracle: ready: mxnet", mxnet.__version__, "numpy", numpy.__version__)'
