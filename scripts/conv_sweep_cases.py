#!/usr/bin/env python3
"""Convolutions computed by MXNet 1.9.1 for the differential sweep.

Runs in the oracle venv (scripts/setup_oracle.sh). Writes OUTDIR/cases.txt
and, per case, raw little-endian float32 arrays NAME.data, NAME.weight,
NAME.bias, NAME.out (what tests/cpp/conv_sweep_test.cc replays with every
applicable algorithm forced) plus NAME-symbol.json and NAME-0000.params (a
one-node checkpoint, for the C API test that lets the runtime choose).

The cases are
  * a fixed list with a unit kernel axis in 1-D, 2-D and 3-D (depth 1 and
    more, with strides, pads, dilations, groups and depthwise), among them
    the shape that gave GluonCV's video models wrong numbers: kernel
    (1, 3, 3), stride 1, pad (0, 1, 1) over an input of depth > 1 with
    enough channels and tiles for Winograd;
  * COUNT random geometries from a seeded generator (odd and prime sizes,
    groups, dilation, per-axis pads up to the kernel, strides up to 3).

    conv_sweep_cases.py OUTDIR [--count N] [--seed S]

Skips the work when OUTDIR/cases.txt was written by an identical copy of
this script with the same arguments.
"""
import os
import sys

import oracle_cases  # sets MXNet's environment; before mxnet
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402


def unit_axis_cases():
    """(name, batch, channels, filters, groups, in, kernel, stride, pad, dilate)."""
    cases = []

    def add(name, batch, channels, filters, groups, shape, kernel, stride=None, pad=None,
            dilate=None):
        rank = len(kernel)
        cases.append((name, batch, channels, filters, groups, tuple(shape), tuple(kernel),
                      tuple(stride or (1,) * rank), tuple(pad or (0,) * rank),
                      tuple(dilate or (1,) * rank)))

    # GluonCV's I3D / R(2+1)D / P3D / SlowFast layer: (1,3,3) over depth 4,
    # 32 -> 32 channels at 24x24 (36 F(4x4) tiles: Winograd's territory).
    add("video_1x3x3_depth4", 1, 32, 32, 1, (4, 24, 24), (1, 3, 3), pad=(0, 1, 1))
    add("video_1x3x3_depth8_batch2", 2, 16, 24, 1, (8, 14, 14), (1, 3, 3), pad=(0, 1, 1))
    add("video_1x3x3_depth1", 1, 32, 32, 1, (1, 24, 24), (1, 3, 3), pad=(0, 1, 1))
    add("video_1x5x5_depth3", 1, 32, 32, 1, (3, 12, 12), (1, 5, 5), pad=(0, 2, 2))
    add("video_1x7x1_depth3", 1, 40, 40, 1, (3, 11, 9), (1, 7, 1), pad=(0, 3, 0))
    add("video_1x3x3_stride122", 1, 16, 16, 1, (4, 13, 13), (1, 3, 3), (1, 2, 2), (0, 1, 1))
    add("video_1x3x3_stride211", 1, 16, 16, 1, (5, 12, 12), (1, 3, 3), (2, 1, 1), (0, 1, 1))
    add("video_1x3x3_depthpad", 1, 16, 16, 1, (1, 12, 12), (1, 3, 3), pad=(1, 1, 1))
    add("video_1x3x3_depthpad_d3", 1, 16, 8, 1, (3, 9, 9), (1, 3, 3), pad=(2, 1, 1))
    add("video_1x3x3_dilate", 1, 16, 16, 1, (4, 11, 11), (1, 3, 3), pad=(0, 2, 2),
        dilate=(2, 2, 2))
    add("video_1x3x3_groups2", 1, 16, 16, 2, (3, 10, 10), (1, 3, 3), pad=(0, 1, 1))
    add("video_depthwise_1x3x3", 2, 16, 16, 16, (3, 9, 9), (1, 3, 3), pad=(0, 1, 1))
    add("video_depthwise_1x3x3_s2", 1, 17, 17, 17, (2, 11, 11), (1, 3, 3), (1, 2, 2), (0, 1, 1))
    add("video_stem_1x7x7", 1, 3, 16, 1, (4, 23, 23), (1, 7, 7), (1, 2, 2), (0, 3, 3))
    add("video_3x1x1", 1, 16, 16, 1, (6, 7, 7), (3, 1, 1), pad=(1, 0, 0))
    add("video_1x1x1_s2", 1, 16, 8, 1, (5, 9, 9), (1, 1, 1), (2, 2, 2))
    add("video_3x3x1", 1, 8, 8, 1, (5, 7, 6), (3, 3, 1), pad=(1, 1, 0))
    add("video_1x1x3", 1, 8, 12, 2, (4, 5, 9), (1, 1, 3), pad=(0, 0, 1))
    # 2-D with a unit axis.
    add("plane_1x3", 2, 12, 10, 1, (9, 13), (1, 3), pad=(0, 1))
    add("plane_3x1_s2", 1, 12, 10, 2, (13, 9), (3, 1), (2, 1), (1, 0))
    add("plane_1x3_dilate", 1, 6, 9, 3, (8, 17), (1, 3), pad=(1, 2), dilate=(1, 2))
    add("plane_1x1_pad", 1, 5, 7, 1, (6, 6), (1, 1), pad=(1, 0))
    add("plane_1x1_s2", 2, 9, 4, 1, (7, 11), (1, 1), (2, 3))
    add("plane_depthwise_1x3", 1, 8, 8, 8, (7, 9), (1, 3), pad=(0, 1))
    # Planar 3x3 layers of the Winograd and depthwise kernels, as 2-D and
    # as 3-D of depth 1.
    add("plane_3x3_winograd2x2", 1, 32, 32, 1, (14, 14), (3, 3), pad=(1, 1))
    add("plane_3x3_winograd_odd", 2, 17, 33, 1, (13, 11), (3, 3), pad=(2, 0))
    add("plane_3x3_tiny", 1, 32, 32, 1, (3, 5), (3, 3), pad=(1, 2))
    add("cube_3x3_winograd_depth1", 1, 32, 32, 1, (1, 12, 12), (1, 3, 3), pad=(0, 1, 1))
    add("plane_depthwise_3x3", 2, 19, 19, 19, (9, 13), (3, 3), pad=(1, 1))
    add("plane_depthwise_3x3_s2_pad2", 1, 33, 33, 33, (11, 8), (3, 3), (2, 2), (2, 0))
    add("cube_depthwise_3x3_depth1", 1, 16, 16, 16, (1, 10, 10), (1, 3, 3), pad=(0, 1, 1))
    # 1-D.
    add("line_k1", 2, 7, 5, 1, (11,), (1,))
    add("line_k1_s2_pad", 1, 6, 4, 2, (9,), (1,), (2,), (1,))
    add("line_k3_dilate", 1, 5, 6, 1, (17,), (3,), (1,), (2,), (2,))
    add("line_depthwise", 2, 6, 6, 6, (13,), (3,), (2,), (1,))
    return cases


def random_cases(count, seed):
    rng = np.random.RandomState(seed)
    cases = []
    while len(cases) < count:
        rank = int(rng.choice([1, 2, 2, 3, 3]))
        kernel = [int(rng.choice([1, 1, 2, 3, 3, 5])) for _ in range(rank)]
        stride = [1 if rng.rand() < 0.6 else int(rng.randint(2, 4)) for _ in range(rank)]
        dilate = [1 if rng.rand() < 0.75 else int(rng.randint(2, 4)) for _ in range(rank)]
        pad = [int(rng.randint(0, k + 1)) for k in kernel]
        shape = [int(rng.randint(1, 8 if rank == 3 else 20)) for _ in range(rank)]
        if any(s + 2 * p < d * (k - 1) + 1 for s, p, d, k in zip(shape, pad, dilate, kernel)):
            continue
        if rng.rand() < 0.25:
            groups = int(rng.randint(2, 9))
            per_in = per_out = 1  # depthwise
        else:
            groups = 1 if rng.rand() < 0.7 else int(rng.randint(2, 4))
            per_in = int(rng.choice([1, 2, 3, 5, 8, 16, 17]))
            per_out = int(rng.choice([1, 2, 4, 7, 16, 33]))
        batch = 1 if rng.rand() < 0.7 else 2
        cases.append((f"random{len(cases)}", batch, groups * per_in, groups * per_out, groups,
                      tuple(shape), tuple(kernel), tuple(stride), tuple(pad), tuple(dilate)))
    return cases


def main():
    args, stamp = oracle_cases.start(__file__, __doc__, default_count=200,
                                     default_seed=20261126)
    if stamp is None:
        return 0
    manifest = os.path.join(args.outdir, "cases.txt")
    rng = np.random.RandomState(args.seed + 1)
    lines = [f"# {stamp}",
             "# name batch channels filters groups rank in... kernel... stride... pad... dilate..."]
    for (name, batch, channels, filters, groups, shape, kernel, stride, pad,
         dilate) in unit_axis_cases() + random_cases(args.count, args.seed):
        data = mx.sym.Variable("data")
        sym = mx.sym.Convolution(data, kernel=kernel, stride=stride, pad=pad, dilate=dilate,
                                 num_filter=filters, num_group=groups, name="conv0")
        x = rng.uniform(-1, 1, (batch, channels) + shape).astype(np.float32)
        w = rng.uniform(-1, 1, (filters, channels // groups) + kernel).astype(np.float32)
        b = rng.uniform(-1, 1, (filters,)).astype(np.float32)
        exe = sym.bind(mx.cpu(), args={"data": mx.nd.array(x), "conv0_weight": mx.nd.array(w),
                                       "conv0_bias": mx.nd.array(b)}, grad_req="null")
        out = exe.forward(is_train=False)[0].asnumpy()
        base = os.path.join(args.outdir, name)
        for suffix, array in (("data", x), ("weight", w), ("bias", b), ("out", out)):
            oracle_cases.write_raw(f"{base}.{suffix}", array)
        sym.save(f"{base}-symbol.json")
        mx.nd.save(f"{base}-0000.params", {"arg:conv0_weight": mx.nd.array(w),
                                           "arg:conv0_bias": mx.nd.array(b)})
        axes = " ".join(" ".join(map(str, v)) for v in (shape, kernel, stride, pad, dilate))
        lines.append(f"{name} {batch} {channels} {filters} {groups} {len(kernel)} {axes}")
    with open(manifest, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"conv_sweep_cases: wrote {len(lines) - 2} cases to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
