#!/usr/bin/env python3
"""Pooling computed by MXNet 1.9.1 for the differential sweep.

Runs in the oracle venv (scripts/setup_oracle.sh). Writes OUTDIR/cases.txt
and, per case, raw little-endian float32 arrays NAME.data and NAME.out (what
tests/cpp/pool_sweep_test.cc replays with every applicable algorithm
forced, comparing bit for bit).

The cases are
  * a fixed list of edges: windows hanging past the padding ('full'),
    windows wholly in the padding, 'same', 3-D averages with empty windows
    (NaN), global pooling, lp with p 1, 2, 3, count_include_pad both ways;
  * COUNT random geometries from a seeded generator (1-D, 2-D, 3-D, odd and
    prime sizes, kernels 1-7, strides 1-3, pads below the kernel, every
    kind and convention).

    pool_sweep_cases.py OUTDIR [--count N] [--seed S]

Skips the work when OUTDIR/cases.txt was written by an identical copy of
this script with the same arguments.
"""
import os
import sys

import oracle_cases  # sets MXNet's environment; before mxnet
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402


def case(name, batch, channels, shape, kernel, pool_type="max", stride=None, pad=None,
         convention="valid", p=1, include=True, global_pool=False):
    rank = len(shape)
    return dict(name=name, batch=batch, channels=channels, shape=tuple(shape),
                kernel=tuple(kernel), pool_type=pool_type, stride=tuple(stride or (1,) * rank),
                pad=tuple(pad or (0,) * rank), convention=convention, p=p, include=include,
                global_pool=global_pool)


def edge_cases():
    return [
        case("full_hang_max", 1, 3, (7, 8), (3, 3), stride=(2, 3), convention="full"),
        case("full_hang_avg", 2, 5, (9, 7), (2, 3), "avg", (3, 2), (1, 1), "full"),
        case("full_hang_avg_excl", 1, 17, (10, 11), (3, 3), "avg", (2, 2), (1, 0), "full",
             include=False),
        case("pad_window_avg", 1, 4, (6, 7), (1, 1), "avg", (2, 2), (1, 1)),
        case("line_same", 2, 3, (13,), (4,), "avg", (3,), convention="same"),
        case("line_full_sum", 1, 6, (11,), (5,), "sum", (3,), (2,), "full"),
        case("cube_avg_empty", 1, 2, (3, 4, 5), (1, 2, 2), "avg", (3, 1, 2), (1, 0, 1),
             include=False),
        case("cube_depth1_pad", 1, 3, (1, 6, 6), (1, 3, 3), "max", (3, 1, 1), (1, 1, 1)),
        case("global_avg", 2, 20, (7, 7), (7, 7), "avg", global_pool=True),
        case("global_max_cube", 1, 9, (3, 4, 5), (3, 4, 5), "max", global_pool=True),
        case("lp1", 1, 8, (9, 9), (3, 3), "lp", (2, 2), (1, 1), p=1),
        case("lp2", 1, 8, (9, 9), (3, 3), "lp", (2, 2), (1, 1), p=2),
        case("lp3_cube", 1, 4, (4, 5, 6), (2, 2, 2), "lp", (1, 2, 2), (1, 1, 0), p=3),
        case("inception_avg", 1, 32, (17, 17), (3, 3), "avg", (1, 1), (1, 1)),
        case("resnet_max", 1, 16, (27, 27), (3, 3), "max", (2, 2), (1, 1)),
        case("densenet_avg", 1, 24, (28, 28), (2, 2), "avg", (2, 2)),
    ]


def random_cases(count, seed):
    rng = np.random.RandomState(seed)
    cases = []
    while len(cases) < count:
        rank = int(rng.choice([1, 2, 2, 2, 3, 3]))
        pool_type = str(rng.choice(["max", "max", "avg", "avg", "sum", "lp"]))
        shape = [int(rng.choice([rng.randint(1, 10 if rank == 3 else 24), 13, 17, 29]))
                 for _ in range(rank)]
        kernel = [int(rng.randint(1, 8)) if rng.rand() < 0.4 else int(rng.randint(1, 4))
                  for _ in range(rank)]
        stride = [int(rng.randint(1, 4)) for _ in range(rank)]
        pad = [int(rng.randint(0, k)) if rng.rand() < 0.6 else 0 for k in kernel]
        if any(k > s + 2 * p for s, k, p in zip(shape, kernel, pad)):
            continue
        convention = "full" if rng.rand() < 0.4 else "valid"
        global_pool = rng.rand() < 0.08
        if global_pool:
            kernel, stride, pad, convention = list(shape), [1] * rank, [0] * rank, "valid"
        channels = int(rng.choice([1, 3, 5, 16, 17, 33]))
        batch = 1 if rng.rand() < 0.7 else 2
        cases.append(case(f"random{len(cases)}", batch, channels, shape, kernel, pool_type,
                          stride, pad, convention, int(rng.randint(1, 4)), rng.rand() < 0.5,
                          global_pool))
    return cases


def out_extent(size, k, s, p, convention):
    if convention == "valid":
        return 1 + (size + 2 * p - k) // s
    if convention == "full":
        return 1 + -(-(size + 2 * p - k) // s)
    return -(-size // s)


def main():
    args, stamp = oracle_cases.start(__file__, __doc__, default_count=100,
                                     default_seed=20261127)
    if stamp is None:
        return 0
    manifest = os.path.join(args.outdir, "cases.txt")
    rng = np.random.RandomState(args.seed + 1)
    lines = [f"# {stamp}",
             "# name batch channels rank type p count_include_pad in... kernel... stride... "
             "pad... out..."]
    for c in edge_cases() + random_cases(args.count, args.seed):
        x = rng.uniform(-1, 1, (c["batch"], c["channels"]) + c["shape"]).astype(np.float32)
        if rng.rand() < 0.15:
            x = np.floor(x * 4) / 4  # ties
        kwargs = dict(kernel=c["kernel"], pool_type=c["pool_type"], stride=c["stride"],
                      pad=c["pad"], pooling_convention=c["convention"],
                      global_pool=c["global_pool"])
        if c["convention"] == "same":
            kwargs["pad"] = (0, 0, 0)  # MXNet 1.9.1 reads pad[0..2] for 'same'
        if c["pool_type"] == "lp":
            kwargs["p_value"] = c["p"]
        if c["pool_type"] == "avg":
            kwargs["count_include_pad"] = c["include"]
        out = mx.nd.Pooling(mx.nd.array(x), **kwargs).asnumpy()
        expected = tuple(out_extent(s, k, st, p, c["convention"]) for s, k, st, p in
                         zip(c["shape"], c["kernel"], c["stride"], c["pad"]))
        assert out.shape[2:] == expected, (c, out.shape)
        base = os.path.join(args.outdir, c["name"])
        oracle_cases.write_raw(f"{base}.data", x)
        oracle_cases.write_raw(f"{base}.out", out)
        axes = " ".join(" ".join(map(str, v)) for v in
                        (c["shape"], c["kernel"], c["stride"], c["pad"], expected))
        p = c["p"] if c["pool_type"] == "lp" else 1
        lines.append(f"{c['name']} {c['batch']} {c['channels']} {len(c['shape'])} "
                     f"{c['pool_type']} {p} {int(c['include'])} {axes}")
    with open(manifest, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"pool_sweep_cases: wrote {len(lines) - 2} cases to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
