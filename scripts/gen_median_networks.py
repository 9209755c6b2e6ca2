#!/usr/bin/env python3
"""Generates src/ops/detail/median_network5.cuh: the selection networks of the 5x5 median, and
the full merges of sorted lists that the rank filters take: two 9-lists (merge_9x9, 3x3x3), two
5-lists and two 10-lists (merge_5x5, merge_10x10: four sorted columns of a 5x5 window).

The kernel sorts every column of 5 voxels once (sort5, shared by the five windows that hold
the column); a window's median then comes from its five sorted columns c[j][i] (column j, i-th
smallest) by:
  1. ranks across the columns: row i = (c[0][i], ..., c[4][i]) sorted, only its order
     statistics that step 2 needs (the others are pruned);
  2. the candidates: the j-th smallest a(i, j) of row i has at least (i + 1)(j + 1) values of
     the window at or below it and (5 - i)(5 - j) at or above it (each of the j + 1 smallest
     of its row brings the i values under it in its column). So a(i, j) lies below the median
     (rank m = 12 of 25) when (5 - i)(5 - j) > 25 - m, above it when (i + 1)(j + 1) > m + 1;
     the median is the (m - #below)-th smallest of the rest, 13 values in five sorted runs;
  3. those runs merged by Batcher's odd-even merges, with every comparator whose outputs are
     not needed pruned.

median25_pair_of_sorted_columns does the same for two neighbouring windows (six columns), the
rows of their four common columns sorted once (189 min/max against 2 x 118).

merge_9x9 is Batcher's odd-even merge of two sorted lists of 9 (60 min/max): all 18 ranks, for
a rank other than the median (the median's merge_9x9_mid in median_network.cuh keeps ranks 5..14
only). merge_5x5 (26) and merge_10x10 (70) likewise; a caller that keeps only some ranks of a
merge leaves the compiler to drop the comparators that feed none of them.

Each network is checked here on every 0-1 input (the 0-1 principle: a comparator network that
selects the k-th value of every 0-1 input selects it of every input), 2^25 windows for the
median; tests/ops/test_filter.cu checks the generated C++ the same way.

    python3 scripts/gen_median_networks.py > src/ops/detail/median_network5.cuh

Needs numpy (the checks); about two seconds.
"""
import itertools
import sys

import numpy as np


class Prog:
    """A straight-line program of vmin / vmax over named values (SSA)."""

    def __init__(self):
        self.ops = []  # (name, fn, a, b)

    def cmp(self, a, b):
        lo = f"t{len(self.ops) + 1}"
        self.ops.append((lo, "vmin", a, b))
        hi = f"t{len(self.ops) + 1}"
        self.ops.append((hi, "vmax", a, b))
        return lo, hi


def merge(p, a, b):
    """Batcher's odd-even merge of sorted lists a and b of any lengths."""
    if not a:
        return list(b)
    if not b:
        return list(a)
    if len(a) == 1 and len(b) == 1:
        return list(p.cmp(a[0], b[0]))
    e = merge(p, a[0::2], b[0::2])
    o = merge(p, a[1::2], b[1::2])
    out = [e[0]]
    i = 0
    while i < len(o) and i + 1 < len(e):
        lo, hi = p.cmp(o[i], e[i + 1])
        out += [lo, hi]
        i += 1
    out += o[i:] + e[i + 1:]
    return out


def sort(p, v):
    if len(v) <= 1:
        return list(v)
    h = len(v) // 2
    return merge(p, sort(p, v[:h]), sort(p, v[h:]))


def prune(p, outputs):
    """The ops that the outputs need, in order."""
    live = set(outputs)
    keep = []
    for op in reversed(p.ops):
        if op[0] in live:
            keep.append(op)
            live.update(op[2:])
    return list(reversed(keep))


def median_of_sorted_columns(k):
    """The program of step 1-3 for a k x k window; returns (ops, output name)."""
    p = Prog()
    rows = [sort(p, [f"c[{j}][{i}]" for j in range(k)]) for i in range(k)]
    out = select_median(p, k, rows)
    return prune(p, [out]), out


def select_median(p, k, rows):
    """Steps 2-3 on the sorted rows of a k x k window; returns the median's name."""
    n = k * k
    m = n // 2
    below = [(i, j) for i in range(k) for j in range(k) if (k - i) * (k - j) > n - m]
    above = [(i, j) for i in range(k) for j in range(k) if (i + 1) * (j + 1) > m + 1]
    runs = []
    for i in range(k):
        run = [rows[i][j] for j in range(k) if (i, j) not in below and (i, j) not in above]
        if run:
            runs.append(run)
    while len(runs) > 1:
        runs.sort(key=len)
        runs = [merge(p, runs[0], runs[1])] + runs[2:]
    return runs[0][m - len(below)]


def median_pair_of_sorted_columns(k):
    """Two neighbouring k x k windows from k + 1 sorted columns (window a: columns 0 .. k - 1,
    b: 1 .. k): the rows of their k - 1 common columns are sorted once, and each window's rows
    are that row merged with its own column's value; then steps 2-3 for each. Returns (ops,
    name of a, name of b)."""
    p = Prog()
    rows_a, rows_b = [], []
    for i in range(k):
        common = sort(p, [f"c[{j}][{i}]" for j in range(1, k)])
        rows_a.append(merge(p, [f"c[0][{i}]"], common))
        rows_b.append(merge(p, common, [f"c[{k}][{i}]"]))
    a = select_median(p, k, rows_a)
    b = select_median(p, k, rows_b)
    return prune(p, [a, b]), a, b


def sort_program(k):
    p = Prog()
    s = sort(p, [f"v[{i}]" for i in range(k)])
    return prune(p, s), s


def merge_program(n, m):
    p = Prog()
    out = merge(p, [f"p[{i}]" for i in range(n)], [f"q[{i}]" for i in range(m)])
    return prune(p, out), out


def check_merge(n, m):
    """Every pair of sorted 0-1 lists (the 0-1 principle for merging networks)."""
    ops, outs = merge_program(n, m)
    for a in range(n + 1):
        for b in range(m + 1):
            pa = [i >= n - a for i in range(n)]  # a ones at the top of p
            qb = [i >= m - b for i in range(m)]
            env = {f"p[{i}]": np.array([v]) for i, v in enumerate(pa)}
            env.update({f"q[{i}]": np.array([v]) for i, v in enumerate(qb)})
            env = run(ops, env)
            assert [bool(env[o][0]) for o in outs] == sorted(pa + qb), (n, m, a, b)


def run(ops, env):
    """Evaluates ops on numpy bool arrays (0-1 inputs): vmin = and, vmax = or."""
    env = dict(env)
    for name, fn, a, b in ops:
        env[name] = (env[a] & env[b]) if fn == "vmin" else (env[a] | env[b])
    return env


def check_sort(k):
    ops, outs = sort_program(k)
    for bits in itertools.product([False, True], repeat=k):
        env = run(ops, {f"v[{i}]": np.array([b]) for i, b in enumerate(bits)})
        got = [bool(env[o][0]) for o in outs]
        assert got == sorted(bits), (k, bits, got)


def zero_one_windows(k):
    """Every 0-1 window of k x k, 2^20 at a time: yields (sorted columns, majority), the first
    a dict of "c[j][i]" (the i-th smallest of column j, sorted by sort_program) to numpy bool
    arrays, the second whether most of the window is 1 (the median of 0-1 values)."""
    sops, souts = sort_program(k)
    n = k * k
    low = 20 if n > 20 else n
    idx = np.arange(1 << low, dtype=np.uint64)
    for high in range(1 << (n - low)):
        x = [((idx >> np.uint64(b)) & np.uint64(1)).astype(bool) for b in range(low)]
        x += [np.full(idx.shape, bool((high >> b) & 1)) for b in range(n - low)]
        cols = {}
        for j in range(k):  # column j: window voxels j, j + k, ...
            col = run(sops, {f"v[{i}]": x[i * k + j] for i in range(k)})
            for i in range(k):
                cols[f"c[{j}][{i}]"] = col[souts[i]]
        count = np.zeros(idx.shape, dtype=np.int32)
        for v in x:
            count += v
        yield cols, count > n // 2


def check_median(k):
    """Every 0-1 window of k x k: columns sorted by sort_program, then the median's program."""
    mops, mout = median_of_sorted_columns(k)
    for cols, want in zero_one_windows(k):
        assert np.array_equal(run(mops, cols)[mout], want), k


def check_median_pair(k):
    """Each window of the pair on every 0-1 window (2^25 each): its median depends on its own
    k columns only, so the other window's extra column is held at 0."""
    pops, pa, pb = median_pair_of_sorted_columns(k)
    for first, out in ((0, pa), (1, pb)):
        for cols, want in zero_one_windows(k):
            zero = np.zeros(want.shape, dtype=bool)
            env = {f"c[{j}][{i}]": zero for j in range(k + 1) for i in range(k)}
            for j in range(k):  # window column j is pair column first + j
                for i in range(k):
                    env[f"c[{first + j}][{i}]"] = cols[f"c[{j}][{i}]"]
            assert np.array_equal(run(pops, env)[out], want), (k, first)


def emit(ops, outs, indent="  "):
    lines = []
    for name, fn, a, b in ops:
        lines.append(f"{indent}const V {name} = {fn}({a}, {b});")
    return lines, outs


def main():
    check_sort(5)
    check_median(5)
    check_median_pair(5)
    check_merge(9, 9)
    check_merge(5, 5)
    check_merge(10, 10)
    sops, souts = sort_program(5)
    mops, mout = median_of_sorted_columns(5)
    pops, pa, pb = median_pair_of_sorted_columns(5)
    out = []
    out.append("// Generated by scripts/gen_median_networks.py (do not edit): the 5x5 median's "
               "networks and")
    out.append("// the full merges of sorted lists that the rank filters take, checked")
    out.append("// there and in tests/ops/test_filter.cu on every 0-1 input. Internal to "
               "src/ops/filter_median.cu.")
    out.append("#pragma once")
    out.append("")
    out.append("#include <voxstream/core/macros.hpp>")
    out.append("")
    out.append("#include \"filter_arith.cuh\"")
    out.append("")
    out.append("namespace vox::detail::filt {")
    out.append("")
    out.append(f"/// Sorts 5 values in place ({len(sops)} min/max).")
    out.append("template <class V>")
    out.append("VOX_HD inline void sort5(V (&v)[5]) {")
    body, _ = emit(sops, souts)
    out += body
    for i, s in enumerate(souts):
        out.append(f"  v[{i}] = {s};")
    out.append("}")
    out.append("")
    out.append(f"/// The median of a 5x5 window given its five sorted columns, c[j][i] the i-th "
               f"smallest of")
    out.append(f"/// column j ({len(mops)} min/max): see the generator for the method.")
    out.append("template <class V>")
    out.append("VOX_HD inline V median25_of_sorted_columns(const V (&c)[5][5]) {")
    body, _ = emit(mops, [mout])
    out += body
    out.append(f"  return {mout};")
    out.append("}")
    out.append("")
    out.append(f"/// The medians of two neighbouring 5x5 windows given their six sorted columns, c[j][i] the")
    out.append(f"/// i-th smallest of column j; window a takes columns 0-4, b columns 1-5 ({len(pops)} min/max,")
    out.append(f"/// against 2 x {len(mops)} for the two apart): the rows of the four common columns are sorted")
    out.append(f"/// once. For voxels that take one value a register (no 16-bit lanes).")
    out.append("template <class V>")
    out.append("VOX_HD inline void median25_pair_of_sorted_columns(const V (&c)[6][5], V& a, V& b) {")
    body, _ = emit(pops, [pa, pb])
    out += body
    out.append(f"  a = {pa};")
    out.append(f"  b = {pb};")
    out.append("}")
    out.append("")
    for n in (9, 5, 10):
        mops, mouts = merge_program(n, n)
        out.append(f"/// Two sorted {n}-lists -> their sorted {2 * n} ({len(mops)} min/max): Batcher's odd-even merge.")
        out.append("template <class V>")
        out.append(f"VOX_HD inline void merge_{n}x{n}(const V (&p)[{n}], const V (&q)[{n}], V (&out)[{2 * n}]) {{")
        body, _ = emit(mops, mouts)
        out += body
        for i, o in enumerate(mouts):
            out.append(f"  out[{i}] = {o};")
        out.append("}")
        out.append("")
    out.append("}  // namespace vox::detail::filt")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
