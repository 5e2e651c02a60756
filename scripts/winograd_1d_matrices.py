#!/usr/bin/env python3
"""Derive the Winograd matrices of predict/kernels/winograd1d.cc exactly.

Toom-Cook over the points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity (8 in all):
for an r-tap kernel and m = 9 - r outputs, the correlation
    y_i = sum_j g_j d_(i+j),  i < m,
equals A^T [(G g) .* (B^T d)] with
    A^T[i][k] = p_k^i            (the infinity column: 1 in the last row),
    G[k][j]   = p_k^j            (the infinity row: picks g_(r-1)),
    B^T       = transpose of the inverse of the 8x8 Vandermonde matrix.
B^T does not depend on r. Its rows are scaled to coprime integers (what the
kernel's InputTransform8 computes) and G's rows carry the inverse scales
(the kernel's kGScale).

The script checks the identity in exact rational arithmetic for every r
from 2 to 7 on random integer data, prints B^T and the G scales, and with
--check-source compares them with the constants in winograd1d.cc. Exit
status 0 when everything holds.
"""
import argparse
import math
import os
import random
import re
import sys
from fractions import Fraction
from functools import reduce

POINTS = [Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2),
          Fraction(1, 2), Fraction(-1, 2)]
N = len(POINTS) + 1  # with infinity


def vandermonde(columns):
    rows = [[p ** j for j in range(columns)] for p in POINTS]
    rows.append([Fraction(int(j == columns - 1)) for j in range(columns)])
    return rows


def inverse(matrix):
    size = len(matrix)
    work = [row[:] + [Fraction(int(i == j)) for j in range(size)] for i, row in enumerate(matrix)]
    for col in range(size):
        pivot = next(r for r in range(col, size) if work[r][col] != 0)
        work[col], work[pivot] = work[pivot], work[col]
        scale = work[col][col]
        work[col] = [x / scale for x in work[col]]
        for r in range(size):
            if r != col and work[r][col] != 0:
                factor = work[r][col]
                work[r] = [x - factor * y for x, y in zip(work[r], work[col])]
    return [row[size:] for row in work]


def integer_rows():
    """B^T with each row scaled to coprime integers, and the scales."""
    inv = inverse(vandermonde(N))
    bt = [[inv[l][k] for l in range(N)] for k in range(N)]
    rows, scales = [], []
    for row in bt:
        lcm = reduce(math.lcm, [x.denominator for x in row])
        scaled = [x * lcm for x in row]
        gcd = reduce(math.gcd, [int(x) for x in scaled if x != 0])
        rows.append([int(x) // gcd for x in scaled])
        scales.append(Fraction(gcd, lcm))  # G's row k is multiplied by this
    return rows, scales


def check_identity(rows, scales, trials=50):
    rng = random.Random(7)
    for taps in range(2, N):
        outputs = N + 1 - taps
        g_matrix = [[scales[k] * x for x in row] for k, row in enumerate(vandermonde(taps))]
        a_t = [[row[i] for row in vandermonde(outputs)] for i in range(outputs)]
        for _ in range(trials):
            d = [Fraction(rng.randint(-99, 99)) for _ in range(N)]
            g = [Fraction(rng.randint(-99, 99)) for _ in range(taps)]
            t = [sum(rows[k][l] * d[l] for l in range(N)) *
                 sum(g_matrix[k][j] * g[j] for j in range(taps)) for k in range(N)]
            y = [sum(a_t[i][k] * t[k] for k in range(N)) for i in range(outputs)]
            want = [sum(g[j] * d[i + j] for j in range(taps)) for i in range(outputs)]
            if y != want:
                return f'identity fails for {taps} taps'
    return None


def check_source(scales, path):
    text = open(path).read()
    match = re.search(r'kGScale\[kPoints\] = \{([^}]*)\}', text)
    if not match:
        return 'kGScale not found in ' + path
    values = []
    for term in match.group(1).split(','):  # "1.0 / 4" and the like
        if term.strip():
            numerator, _, denominator = term.partition('/')
            values.append(float(numerator) / float(denominator or 1))
    if len(values) != N or any(abs(v - float(s)) > 1e-15 for v, s in zip(values, scales)):
        return f'kGScale {values} differs from {[str(s) for s in scales]}'
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--check-source', metavar='WINOGRAD1D_CC',
                        help='compare the G scales with those in this source file')
    args = parser.parse_args()
    rows, scales = integer_rows()
    print('B^T (rows scaled to coprime integers):')
    for row in rows:
        print('  ' + ' '.join(f'{x:5d}' for x in row))
    print('G row scales: ' + ', '.join(str(s) for s in scales))
    error = check_identity(rows, scales)
    if error is None and args.check_source:
        error = check_source(scales, args.check_source)
    if error:
        print('FAIL: ' + error)
        return 1
    print('identity holds for 2 to 7 taps' +
          (f'; {os.path.basename(args.check_source)} agrees' if args.check_source else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
