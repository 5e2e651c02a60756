#!/usr/bin/env python3
"""Random small networks computed by MXNet 1.9.1, for the graph-rewrite sweep.

Runs in the oracle venv. Each case is a network drawn from the patterns the
graph optimiser rewrites (predict/graph/fuse.cc) and the memory planner lays
out specially, in random combinations and sizes:
  * Convolution (1x1, 3x3, strided, grouped, depthwise, with and without
    bias) followed or not by BatchNorm (fix_gamma either way, random eps),
    then relu, relu6 (clip 0..6), another clip, sigmoid or nothing;
  * residual adds (elemwise_add / broadcast_add / add_n) before a clamp;
  * pre-activation BatchNorm + relu read by a 1x1 convolution (or by it and
    another reader, which must keep the BatchNorm);
  * Concat of branches (batch 1 lays inputs in place), Pooling, Dropout,
    Flatten + FullyConnected heads, two outputs (Group);
  * stems (STEMS more cases, their own random stream): a convolution of the
    input (or of a BatchNorm of it) [+ BatchNorm] [+ clamp] then max
    pooling, which the optimiser folds into the convolution (3-4 input
    channels: the direct kernel, in row bands; 8: whole planes), on inputs
    large enough for several bands;
  * average poolings beside 1x1 convolutions (POOLS more cases, their own
    random stream), which the optimiser folds into one convolution of the
    pooled input: a pooling read only by a 1x1 convolution [+ BatchNorm]
    [+ residual] [+ clamp] (Inception's branches), and a 1x1 convolution
    of a BatchNorm [+ relu] [+ BatchNorm] pooled without padding
    (DenseNet's transitions); with filters fewer and more than channels,
    padded, strided and 'full' poolings, and a second reader or a
    padding that keeps the two apart;
BatchNorm statistics and every bias are random. Writes per case
NAME-symbol.json, NAME-0000.params (arg:/aux: prefixed) and NAME-io.npz
(input:data, output:<i>), and OUTDIR/cases.txt with one name a line.

    graph_sweep_cases.py OUTDIR [--count N] [--seed S]
"""
import os
import sys

import oracle_cases  # sets MXNet's environment; before mxnet
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from make_fixtures import random_param  # noqa: E402  (fan-in weights, BatchNorm statistics)

S = mx.sym


class Builder:
    """Draws one random network; tracks the channel count of the value."""

    def __init__(self, rng):
        self.rng = rng
        self.count = 0

    def name(self, kind):
        self.count += 1
        return f"{kind}{self.count}"

    def chance(self, p):
        return self.rng.rand() < p

    def clamp(self, x):
        kind = self.rng.randint(0, 5)
        if kind == 0:
            return S.Activation(x, act_type="relu", name=self.name("relu"))
        if kind == 1:
            return S.clip(x, a_min=0.0, a_max=6.0, name=self.name("relu6"))
        if kind == 2:
            return S.clip(x, a_min=-0.5, a_max=float(self.rng.choice([0.5, 2.0])),
                          name=self.name("clip"))
        if kind == 3:
            return S.Activation(x, act_type="sigmoid", name=self.name("sigmoid"))
        return x

    def batch_norm(self, x):
        return S.BatchNorm(x, fix_gamma=bool(self.chance(0.5)),
                           eps=float(self.rng.choice([1e-5, 1e-3, 2e-5])),
                           name=self.name("bn"))

    def conv(self, x, channels, filters, kernel=None, stride=1, groups=1):
        kernel = kernel if kernel is not None else int(self.rng.choice([1, 3, 3]))
        return S.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride),
                             pad=(kernel // 2, kernel // 2), num_filter=filters,
                             num_group=groups, no_bias=bool(self.chance(0.4)),
                             name=self.name("conv"))

    def conv_unit(self, x, channels, filters, **kw):
        """conv [+ bn] [+ clamp]"""
        y = self.conv(x, channels, filters, **kw)
        if self.chance(0.7):
            y = self.batch_norm(y)
        return self.clamp(y) if self.chance(0.7) else y

    def block(self, x, c):
        kind = self.rng.randint(0, 7)
        if kind == 0:  # plain unit, maybe strided or grouped
            stride = 2 if self.chance(0.25) else 1
            f = int(self.rng.choice([4, 8, 12, 16]))
            groups = 2 if (c % 2 == 0 and f % 2 == 0 and self.chance(0.3)) else 1
            return self.conv_unit(x, c, f, stride=stride, groups=groups), f
        if kind == 1:  # residual: clamp(x + conv-bn(x))
            y = self.conv(x, c, c)
            if self.chance(0.8):
                y = self.batch_norm(y)
            add = self.rng.randint(0, 3)
            s = (S.elemwise_add(y, x, name=self.name("add")) if add == 0 else
                 S.broadcast_add(x, y, name=self.name("badd")) if add == 1 else
                 S.add_n(y, x, name=self.name("addn")))
            return self.clamp(s), c
        if kind == 2:  # pre-activation BN + relu into a 1x1 convolution
            pre = self.batch_norm(x)
            if self.chance(0.7):
                pre = S.Activation(pre, act_type="relu", name=self.name("relu"))
            f = int(self.rng.choice([4, 8, 16]))
            y = self.conv(pre, c, f, kernel=1)
            if self.chance(0.3):  # a second reader keeps the BatchNorm standing
                z = self.conv(pre, c, f, kernel=1)
                y = S.elemwise_add(y, z, name=self.name("add"))
            return y, f
        if kind == 3:  # concat of branches
            branches, total = [], 0
            for _ in range(self.rng.randint(2, 4)):
                f = int(self.rng.choice([2, 4, 6]))
                branches.append(self.conv_unit(x, c, f))
                total += f
            if self.chance(0.3):
                branches.append(x)
                total += c
            return S.Concat(*branches, dim=1, name=self.name("concat")), total
        if kind == 4:  # pooling
            kind = "max" if self.chance(0.5) else "avg"
            stride = int(self.rng.choice([1, 2]))
            return S.Pooling(x, kernel=(3, 3), stride=(stride, stride), pad=(1, 1),
                             pool_type=kind, name=self.name("pool")), c
        if kind == 5:  # depthwise unit
            return self.conv_unit(x, c, c, kernel=3, groups=c), c
        # dropout then standing BatchNorm + clamp
        y = S.Dropout(x, p=0.3, name=self.name("drop"))
        return self.clamp(self.batch_norm(y)), c


def random_network(rng):
    b = Builder(rng)
    data = S.Variable("data")
    c = int(rng.choice([3, 4, 8, 16]))
    x, channels = data, c
    for _ in range(rng.randint(2, 7)):
        x, channels = b.block(x, channels)
    outputs = [x]
    if rng.rand() < 0.4:
        pooled = S.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1),
                           name=b.name("gap"))
        fc = S.FullyConnected(S.Flatten(pooled, name=b.name("flatten")),
                              num_hidden=int(rng.choice([5, 10])), name=b.name("fc"))
        outputs = [fc] if rng.rand() < 0.6 else [fc, x]
    net = outputs[0] if len(outputs) == 1 else S.Group(outputs)
    return net, c


STEMS = 24


def stem_network(rng):
    """conv [+ bn] [+ clamp] of the input (or of a BatchNorm of it, as ResNet v2
    normalises its image first), max pooling, maybe one more unit."""
    b = Builder(rng)
    c = int(rng.choice([3, 3, 4, 8]))
    kernel, stride = int(rng.choice([3, 5, 7])), int(rng.choice([1, 2]))
    image = b.batch_norm(S.Variable("data")) if b.chance(0.3) else S.Variable("data")
    y = S.Convolution(image, kernel=(kernel, kernel), stride=(stride, stride),
                      pad=(kernel // 2, kernel // 2), num_filter=int(rng.choice([4, 8, 12, 16])),
                      no_bias=bool(b.chance(0.5)), name=b.name("conv"))
    if b.chance(0.6):
        y = b.batch_norm(y)
    if b.chance(0.8):
        y = b.clamp(y)
    pool_kernel = int(rng.choice([2, 3]))
    pool_pad = int(rng.choice([0, 1])) if pool_kernel == 3 else 0
    pool_stride = int(rng.choice([1, 2, 2]))
    y = S.Pooling(y, kernel=(pool_kernel, pool_kernel), stride=(pool_stride, pool_stride),
                  pad=(pool_pad, pool_pad), pool_type="max",
                  pooling_convention=str(rng.choice(["valid", "full"])), name=b.name("pool"))
    if b.chance(0.5):
        y = b.conv_unit(y, 0, 8)
    return y, c


POOLS = 16


def pool_network(rng):
    """An average pooling then a 1x1 convolution, or a 1x1 convolution then
    an average pooling, in the forms fuse.cc folds and some it must not."""
    b = Builder(rng)
    c = int(rng.choice([8, 16, 24, 32]))
    data = S.Variable("data")
    x = b.conv_unit(data, c, c, kernel=3) if b.chance(0.3) else data
    filters = int(rng.choice([4, 8, c // 2, 2 * c]))
    if b.chance(0.5):  # Inception's branch: pooling, then the convolution
        residual = b.chance(0.25)  # added after it, of the same shape
        kernel = 3 if residual else int(rng.choice([2, 3, 3]))
        pad = 1 if residual else int(rng.choice([0, 1])) if kernel == 3 else 0
        stride = 1 if residual or b.chance(0.7) else 2
        convention = "valid" if residual else str(rng.choice(["valid", "valid", "full"]))
        pooled = S.Pooling(x, kernel=(kernel, kernel), stride=(stride, stride), pad=(pad, pad),
                           pool_type="avg", count_include_pad=bool(b.chance(0.6)),
                           pooling_convention=convention, name=b.name("pool"))
        y = b.conv(pooled, c, filters, kernel=1)
        if b.chance(0.6):
            y = b.batch_norm(y)
        if residual:
            y = S.elemwise_add(y, b.conv(x, c, filters, kernel=1), name=b.name("add"))
        y = b.clamp(y) if b.chance(0.7) else y
        if b.chance(0.15):  # a second reader keeps the pooling standing
            y = S.Concat(y, pooled, dim=1, name=b.name("concat"))
    else:  # DenseNet's transition: normalised 1x1 convolution, then pooling
        pre = b.batch_norm(x)
        if b.chance(0.7):
            pre = S.Activation(pre, act_type="relu", name=b.name("relu"))
        y = b.conv(pre, c, filters, kernel=1)
        if b.chance(0.3):
            y = b.batch_norm(y)
        kernel = int(rng.choice([2, 2, 3]))
        pad = 1 if kernel == 3 and b.chance(0.3) else 0  # padded: not folded
        y = S.Pooling(y, kernel=(kernel, kernel), stride=(2, 2), pad=(pad, pad),
                      pool_type="avg", count_include_pad=bool(b.chance(0.7)),
                      pooling_convention=str(rng.choice(["valid", "valid", "full"])),
                      name=b.name("pool"))
    if b.chance(0.4):
        y = b.conv_unit(y, 0, 8)
    return y, c


def main():
    args, stamp = oracle_cases.start(__file__, __doc__, default_count=60,
                                     default_seed=20261126)
    if stamp is None:
        return 0
    manifest = os.path.join(args.outdir, "cases.txt")
    rng = np.random.RandomState(args.seed)
    stem_rng = np.random.RandomState(args.seed + 1)
    pool_rng = np.random.RandomState(args.seed + 2)
    names = []
    for index in range(args.count + STEMS + POOLS):
        stem = args.count <= index < args.count + STEMS
        pools = index >= args.count + STEMS
        case_rng = stem_rng if stem else pool_rng if pools else rng
        net, channels = (stem_network(case_rng) if stem else
                         pool_network(case_rng) if pools else random_network(case_rng))
        batch = 1 if case_rng.rand() < 0.6 else 2
        low, high = (9, 48) if stem else (6, 36) if pools else (5, 18)
        shape = (batch, channels) + tuple(int(case_rng.randint(low, high)) for _ in range(2))
        arg_shapes, _, aux_shapes = net.infer_shape(data=shape)
        args_ = {n: random_param(n, s, case_rng)
                 for n, s in zip(net.list_arguments(), arg_shapes) if n != "data"}
        auxs = {n: random_param(n, s, case_rng)
                for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
        x = case_rng.uniform(-1, 1, shape).astype(np.float32)
        exe = net.bind(mx.cpu(), args={"data": mx.nd.array(x),
                                       **{k: mx.nd.array(v) for k, v in args_.items()}},
                       aux_states={k: mx.nd.array(v) for k, v in auxs.items()}, grad_req="null")
        outs = [o.asnumpy() for o in exe.forward(is_train=False)]
        name = (f"stem{index - args.count}" if stem else
                f"pools{index - args.count - STEMS}" if pools else f"graph{index}")
        base = os.path.join(args.outdir, name)
        net.save(f"{base}-symbol.json")
        mx.nd.save(f"{base}-0000.params",
                   {**{f"arg:{k}": mx.nd.array(v) for k, v in args_.items()},
                    **{f"aux:{k}": mx.nd.array(v) for k, v in auxs.items()}})
        np.savez(f"{base}-io.npz", **{"input:data": x},
                 **{f"output:{i}": o for i, o in enumerate(outs)})
        names.append(name)
    with open(manifest, "w", encoding="utf-8") as f:
        f.write(f"# {stamp}\n" + "\n".join(names) + "\n")
    print(f"graph_sweep_cases: wrote {len(names)} networks to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
