#!/usr/bin/env python3
"""Train the handwritten-digits demo model that ships inside the mxlite package.

mxlite runs MXNet checkpoints without MXNet.  To show that on something real
(not random weights), the package carries one small, genuinely trained
checkpoint plus MXNet's own answers for it, in ``bindings/python/mxlite/demo/``.
This script makes those files; the first command of the README runs it.

What it does
------------
1. Loads ``sklearn.datasets.load_digits()``: 1797 grayscale 8x8 images of the
   digits 0-9, pixel values 0..16.  The data set ships inside scikit-learn, so
   nothing is downloaded.
2. Splits it with ``train_test_split(test_size=0.2, random_state=0,
   stratify=labels)``: 1437 training and 360 held-out images, the same every
   time.  The network input is ``pixel / 16.0`` as float32, shape (N, 1, 8, 8).
3. Trains a small Gluon CNN on CPU (Adam, fixed seeds, a few seconds)::

       Conv2D(16, 3x3, pad 1) - BatchNorm - relu - MaxPool2D(2)   # 16x4x4
       Conv2D(32, 3x3, pad 1) - BatchNorm - relu - MaxPool2D(2)   # 32x2x2
       Flatten - Dense(64) - relu - Dropout(0.25) - Dense(10)     # logits

   (about 14k parameters, a ~60 KB params file).  Only these common operators
   are used, so the demo exercises Convolution, BatchNorm, Activation, Pooling,
   Flatten, FullyConnected and Dropout (an identity at inference).
4. Exports it with ``HybridBlock.export`` to ``demo/digits-symbol.json`` and
   ``demo/digits-0000.params`` -- exactly the files MXNet 1.9.1 users have.
5. Re-loads those exported files with MXNet's classic symbolic API
   (``mx.sym.load`` + ``simple_bind``, ``grad_req='null'``,
   ``is_train=False``), runs the held-out images through them as one batch,
   and records the result.  These re-loaded numbers, not the in-memory Gluon
   model's, are the oracle that mxlite is compared against.

Outputs (in ``bindings/python/mxlite/demo/`` unless ``--out`` says otherwise)
----------------------------------------------------------------------------
* ``digits-symbol.json``, ``digits-0000.params``: the checkpoint; input name
  ``data``, one output of shape (batch, 10) (logits, no softmax).
* ``digits-test.npz``: ``images`` (uint8, (N, 8, 8), the raw 0..16 pixels of
  the held-out images), ``labels`` (int64, (N,)) and ``mxnet_logits``
  (float32, (N, 10), from the re-loaded checkpoint).  Written with fixed zip
  timestamps, so an unchanged result gives a byte-identical file.
* ``digits.json``: a summary (MXNet's held-out accuracy, input name, scale and
  shape, number of test images, training time).

The run is deterministic: every random source is seeded and MXNet runs its
plain CPU kernels single-threaded, so running it twice gives the same
accuracy (printed at the end) and the same files, apart from
``train_seconds`` in ``digits.json``.  It fails (exit status 1) if the
re-loaded checkpoint scores below 97% on the held-out images.

Requirements
------------
The MXNet 1.9.1 venv made by ``scripts/setup_oracle.sh`` plus scikit-learn.
MXNet 1.9.1 needs numpy < 1.24 and a plain ``pip install scikit-learn`` would
upgrade numpy, so pin all three::

    VENV/bin/pip install "numpy==1.23.5" "scikit-learn<1.4" "scipy<1.12"
    VENV/bin/python scripts/train_demo_model.py [--out DIR]
"""

import os

# Must be set before mxnet is imported: MXNet's reference CPU kernels (no
# oneDNN/MKLDNN, no subgraph rewriting), and one thread everywhere so that
# float reductions happen in the same order on every machine.
os.environ["MXNET_MKLDNN_ENABLED"] = "0"
os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "MXNET_CPU_WORKER_NTHREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zipfile  # noqa: E402

import numpy as np  # noqa: E402
import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

try:
    from sklearn.datasets import load_digits  # noqa: E402
    from sklearn.model_selection import train_test_split  # noqa: E402
except ImportError:  # pragma: no cover - environment problem, explained below
    sys.exit('train_demo_model: scikit-learn is missing; install it with\n'
             '    pip install "numpy==1.23.5" "scikit-learn<1.4" "scipy<1.12"')

GENERATED_BY = "scripts/train_demo_model.py"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "bindings", "python", "mxlite", "demo")
PREFIX = "digits"

SEED = 0
TEST_SIZE = 0.2
EPOCHS = 40
BATCH_SIZE = 64
LEARNING_RATE = 2e-3
MIN_ACCURACY = 0.97
CTX = mx.cpu()


def save_npz(path, arrays):
    """np.savez_compressed equivalent with fixed zip timestamps (byte-reproducible)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as fid:
                np.lib.format.write_array(fid, np.asarray(arr), allow_pickle=False)


def load_split():
    """Held-out split of sklearn's digits: (train_pixels, train_labels, test_pixels, test_labels).

    Pixels are the raw uint8 values 0..16, shape (N, 8, 8); labels are int64.
    """
    digits = load_digits()
    pixels = digits.images.astype(np.uint8)
    assert np.array_equal(pixels, digits.images) and pixels.max() <= 16
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        pixels, labels, test_size=TEST_SIZE, random_state=SEED, stratify=labels)
    return x_train, y_train, x_test, y_test


def to_input(pixels):
    """Raw 0..16 pixels (N, 8, 8) -> network input float32 (N, 1, 8, 8) = pixel / 16."""
    return (pixels.astype(np.float32) / np.float32(16.0))[:, None, :, :]


def build_net():
    net = nn.HybridSequential(prefix="digits_")
    with net.name_scope():
        net.add(nn.Conv2D(16, kernel_size=3, padding=1, in_channels=1),
                nn.BatchNorm(in_channels=16),
                nn.Activation("relu"),
                nn.MaxPool2D(pool_size=2),
                nn.Conv2D(32, kernel_size=3, padding=1, in_channels=16),
                nn.BatchNorm(in_channels=32),
                nn.Activation("relu"),
                nn.MaxPool2D(pool_size=2),
                nn.Flatten(),
                nn.Dense(64, in_units=32 * 2 * 2),
                nn.Activation("relu"),
                nn.Dropout(0.25),
                nn.Dense(10, in_units=64))
    return net


def train(net, x, y):
    """Train `net` in place on float32 inputs x (N,1,8,8) and int64 labels y."""
    rng = np.random.RandomState(SEED)
    net.initialize(mx.init.Xavier(magnitude=2.0), ctx=CTX)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": LEARNING_RATE})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    n = len(x)
    for epoch in range(EPOCHS):
        order = rng.permutation(n)
        total = 0.0
        # Drop the ragged last batch so every BatchNorm step sees a full batch.
        for start in range(0, n - BATCH_SIZE + 1, BATCH_SIZE):
            idx = order[start:start + BATCH_SIZE]
            data = mx.nd.array(x[idx], ctx=CTX)
            label = mx.nd.array(y[idx], ctx=CTX, dtype="float32")
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(BATCH_SIZE)
            total += float(loss.sum().asscalar())
        if epoch % 10 == 9 or epoch == EPOCHS - 1:
            print(f"  epoch {epoch + 1:3d}/{EPOCHS}: mean train loss "
                  f"{total / (n // BATCH_SIZE * BATCH_SIZE):.4f}", flush=True)


def run_exported(prefix, x):
    """Logits (float32, (N, 10)) of the exported checkpoint `prefix`, re-loaded
    with the classic symbolic API and run on x as a single batch."""
    sym = mx.sym.load(prefix + "-symbol.json")
    saved = mx.nd.load(prefix + "-0000.params")
    arg_params = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux_params = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    assert len(arg_params) + len(aux_params) == len(saved), sorted(saved)
    exe = sym.simple_bind(CTX, grad_req="null", data=x.shape)
    for name, arr in exe.arg_dict.items():
        if name == "data":
            continue
        arg_params[name].copyto(arr)
    for name, arr in exe.aux_dict.items():
        aux_params[name].copyto(arr)
    exe.arg_dict["data"][:] = x
    exe.forward(is_train=False)
    assert len(exe.outputs) == 1
    return exe.outputs[0].asnumpy().astype(np.float32)


def graph_ops(symbol_json):
    with open(symbol_json) as f:
        nodes = json.load(f)["nodes"]
    ops = []
    for node in nodes:
        if node["op"] != "null" and node["op"] not in ops:
            ops.append(node["op"])
    return ops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="output folder (default: bindings/python/mxlite/demo)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    prefix = os.path.join(args.out, PREFIX)

    np.random.seed(SEED)
    mx.random.seed(SEED)

    x_train, y_train, x_test, y_test = load_split()
    print(f"train_demo_model: mxnet {mx.__version__}, {len(x_train)} training / "
          f"{len(x_test)} held-out images", flush=True)

    net = build_net()
    t0 = time.perf_counter()
    train(net, to_input(x_train), y_train)
    train_seconds = time.perf_counter() - t0

    # Gluon's own (in-memory) prediction, only to cross-check the export.
    gluon_logits = net(mx.nd.array(to_input(x_test), ctx=CTX)).asnumpy()

    net.export(prefix, epoch=0)

    # The oracle: the exported files, re-loaded and run by MXNet's executor.
    logits = run_exported(prefix, to_input(x_test))
    err = float(np.max(np.abs(logits - gluon_logits)))
    if err > 1e-4 * max(1.0, float(np.max(np.abs(gluon_logits)))):
        sys.exit(f"train_demo_model: re-loaded checkpoint disagrees with Gluon (max |diff| {err})")
    predicted = logits.argmax(axis=1)
    correct = int((predicted == y_test).sum())
    accuracy = correct / len(y_test)

    save_npz(prefix + "-test.npz", {
        "images": x_test.astype(np.uint8),
        "labels": y_test.astype(np.int64),
        "mxnet_logits": logits,
    })
    summary = {
        "generated_by": GENERATED_BY,
        "mxnet_version": mx.__version__,
        "input_name": "data",
        "input_scale": "pixel / 16.0",
        "input_shape": [1, 1, 8, 8],
        "test_images": int(len(y_test)),
        "mxnet_accuracy": round(accuracy, 6),
        "mxnet_correct": correct,
        "train_seconds": round(train_seconds, 2),
    }
    with open(os.path.join(args.out, PREFIX + ".json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    files = [PREFIX + s for s in ("-symbol.json", "-0000.params", "-test.npz", ".json")]
    total = 0
    for name in files:
        size = os.path.getsize(os.path.join(args.out, name))
        total += size
        print(f"  wrote {os.path.join(args.out, name)} ({size} bytes)")
    print(f"  total {total} bytes; graph ops: {', '.join(graph_ops(prefix + '-symbol.json'))}")
    print(f"train_demo_model: trained in {train_seconds:.1f} s; re-loaded checkpoint: "
          f"held-out accuracy {accuracy:.4f} ({correct}/{len(y_test)})")
    if accuracy < MIN_ACCURACY:
        sys.exit(f"train_demo_model: accuracy {accuracy:.4f} is below {MIN_ACCURACY}")


if __name__ == "__main__":
    main()
