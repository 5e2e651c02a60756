#!/usr/bin/env bash
# Create (once) the Python venv holding the MXNet 1.9.1 "oracle" used by
# scripts/make_fixtures.py, with GluonCV 0.10.5.post0 and GluonNLP 0.10.0 for
# scripts/model_families.py.  The product itself never imports mxnet; only the
# fixture generators do.
#
#   usage: scripts/setup_oracle.sh VENV_DIR
#
# Idempotent: if VENV_DIR/bin/python already imports mxnet 1.9.1, gluoncv and
# gluonnlp 0.10.0 nothing is done (an older venv with mxnet alone gets the two
# added).  numpy is pinned below 1.24 because mxnet 1.9.1 uses np.bool & co.,
# which numpy 1.24 removed; GluonCV's dependencies are held to the last
# releases that still accept that numpy (opencv-python 4.12 and scipy 1.16
# need numpy 2 / 1.25).
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 VENV_DIR" >&2
    exit 2
fi
venv=$1
py="$venv/bin/python"

# Silence MXNet's start-up chatter and keep it on its plain CPU code paths.
export MXNET_MKLDNN_ENABLED=0 MXNET_SUBGRAPH_BACKEND=NONE

packages=(mxnet==1.9.1 "numpy<1.24" gluoncv==0.10.5.post0 gluonnlp==0.10.0
          "opencv-python<4.12" "scipy<1.16" "pandas<2.4" "matplotlib<3.11")
check='import sys, mxnet, gluoncv, gluonnlp
sys.exit(mxnet.__version__ != "1.9.1" or gluonnlp.__version__ != "0.10.0")'

if [[ -x "$py" ]] && "$py" -c "$check" >/dev/null 2>&1; then
    echo "setup_oracle: $venv already has mxnet 1.9.1, gluoncv and gluonnlp 0.10.0; nothing to do"
    exit 0
fi

if [[ ! -x "$py" ]]; then
    echo "setup_oracle: creating venv $venv"
    python3 -m venv "$venv"
fi
echo "setup_oracle: installing ${packages[*]} into $venv"
"$venv/bin/pip" install -q "${packages[@]}"
"$py" -c 'import mxnet, numpy, gluoncv, gluonnlp
print("setup_oracle: ready: mxnet", mxnet.__version__, "numpy", numpy.__version__,
      "gluoncv", gluoncv.__version__, "gluonnlp", gluonnlp.__version__)'
