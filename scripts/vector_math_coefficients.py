#!/usr/bin/env python3
"""Fit the polynomials of the vector math kernels (predict/operators/math_row.h).

Each is a near-minimax fit of relative error (Lawson's iteratively reweighted
least squares on Chebyshev nodes, in double precision, against Python's math
module), printed as the float constants the kernels use:

  exp:   e^r = 1 + r + r^2 q(r),            |r| <= ln2 / 2 (after r = x - n ln2)
  tanh:  tanh(x) = x + x^3 t(x^2),          |x| < 0.625
  erf:   erf(z) = z p(z^2),                 |z| < 0.875
  erfc:  erfc(a) = e^(-a^2) s(1 / (1 + a)), 0.875 <= a <= 4

Past 4, erf rounds to +-1 in float. With --check-source the script compares
the fitted constants, rounded to float, with those in math_row.h (or the
header named) and exits non-zero where they differ. The kernels' accuracy in float arithmetic is
tested against the C library by tests/cpp/math_row_test.cc.
"""
import argparse
import math
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, 'predict', 'operators', 'math_row.h')

TANH_LIMIT = 0.625
ERF_LIMIT = 0.875
ERF_ONE = 4.0


def chebyshev_nodes(low, high, count):
    k = np.arange(count)
    return (low + high) / 2 + (high - low) / 2 * np.cos((2 * k + 1) * np.pi / (2 * count))


def minimax(xs, target, columns, weight):
    """c minimising max |weight * (columns @ c - target)|, by Lawson's method."""
    a = columns * weight[:, None]
    b = target * weight
    w = np.ones_like(xs)
    for _ in range(200):
        root = np.sqrt(w)
        c = np.linalg.lstsq(a * root[:, None], b * root, rcond=None)[0]
        error = np.abs(a @ c - b)
        w = np.maximum(w * error / np.sum(w * error), 1e-300)
    return c, float(np.max(np.abs(a @ c - b)))


def fits():
    """name -> (float32 coefficients, lowest power first; max relative error)."""
    out = {}
    ln2_half = math.log(2) / 2
    r = chebyshev_nodes(-ln2_half, ln2_half, 3000)
    e = np.exp(r)
    out['kExpQ'] = minimax(r, e - 1 - r, np.stack([r ** (j + 2) for j in range(5)], 1), 1 / e)
    x = chebyshev_nodes(1e-4, TANH_LIMIT, 3000)
    t = np.tanh(x)
    out['kTanhT'] = minimax(x, t - x, np.stack([x ** (2 * j + 3) for j in range(5)], 1), 1 / t)
    z = chebyshev_nodes(1e-4, ERF_LIMIT, 3000)
    erf = np.array([math.erf(v) for v in z])
    out['kErfP'] = minimax(z, erf, np.stack([z ** (2 * j + 1) for j in range(6)], 1), 1 / erf)
    a = chebyshev_nodes(ERF_LIMIT, ERF_ONE, 3000)
    s = np.array([math.erfc(v) * math.exp(v * v) for v in a])
    u = 1 / (1 + a)
    out['kErfcS'] = minimax(a, s, np.stack([u ** j for j in range(8)], 1), 1 / s)
    return {name: ([float(np.float32(v)) for v in c], err) for name, (c, err) in out.items()}


def source_constants(header):
    with open(header, encoding='utf-8') as f:
        text = f.read()
    found = {}
    for name, body in re.findall(r'constexpr float (k\w+)\[\] = \{([^}]*)\}', text):
        found[name] = [float(np.float32(v.strip().rstrip('f'))) for v in body.split(',')
                       if v.strip()]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--check-source', nargs='?', const=HEADER, metavar='HEADER',
                        help='compare with the constants in HEADER (default math_row.h)')
    args = parser.parse_args()
    fitted = fits()
    for name, (coefficients, error) in fitted.items():
        body = ', '.join(f'{np.float32(v)!r}f'.replace('np.float32(', '').replace(')', '')
                         for v in coefficients)
        print(f'// max relative error of the fit: {error:.2g}')
        print(f'constexpr float {name}[] = {{{body}}};')
    if not args.check_source:
        return 0
    source = source_constants(args.check_source)
    status = 0
    for name, (coefficients, _) in fitted.items():
        if source.get(name) != coefficients:
            print(f'{name} differs: math_row.h has {source.get(name)}, the fit {coefficients}')
            status = 1
    print('math_row.h matches the fits' if status == 0 else 'math_row.h differs')
    return status


if __name__ == '__main__':
    sys.exit(main())
