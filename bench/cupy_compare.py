#!/usr/bin/env python3
"""Runs voxstream's bench_ops and the same ops in CuPy / cupyx.scipy.ndimage on the same GPU, in
the same call, and prints voxstream's time divided by CuPy's.

    python3 bench/cupy_compare.py [BENCH_OPS] [--reps N] [--filter SUBSTRING]

BENCH_OPS (default build/cuda/bench/bench_ops, then build/cuda/bench/ops/bench_ops) is run first,
as a subprocess; its `RESULT ops <name> <dtype> ms=... GBps=... frac=...` lines are parsed. Each
op that has a CuPy equivalent in CUPY_OPS below is then timed in CuPy like bench_ops times it:
512^3 float32 (uniform in [0, 1)) and uint16 (uniform in [0, 4096)) inputs, 3 inputs rotated so
that L2 cannot serve them, 3 warm-up runs, CUDA events (cupy.cuda.Event) around each run, median
of >= 20 runs. Prints a table (op, dtype, voxstream ms, CuPy ms, voxstream / CuPy) and one line
per op:

    RESULT cupy <name> <dtype> ms=<CuPy ms> ratio=<voxstream ms / CuPy ms>

Ops without a CuPy equivalent are listed as "no CuPy equivalent". Needs CuPy (14.x) with cupyx;
`--help` works without it.
"""

import argparse
import math
import os
import re
import statistics
import subprocess
import sys

RESULT_RE = re.compile(r"^RESULT ops (\S+) (\S+) ms=(\S+) GBps=(\S+) frac=(\S+)"
                       r"(?: host_us=\S+)?(?: streams=\S+)?\s*$")
DEFAULT_BENCH = ("build/cuda/bench/bench_ops", "build/cuda/bench/ops/bench_ops")
DTYPES = ("f32", "u16")


def key(name):
    """bench_ops prints names with spaces replaced by underscores."""
    return name.replace(" ", "_")


def cupy_ops(cp, ndi, n):
    """{bench_ops name: (callable(a) -> result, dtypes it applies to)} for an n^3 volume."""
    h = n // 2
    q = n * 3 // 4  # resize target: 384 for 512
    lo, hi = n // 16, n - n // 16  # crop box: [32, 480) for 512

    def hist_range(a):
        return (0.0, 1.0) if a.dtype == cp.float32 else (0.0, 4096.0)

    def threshold(a):
        return a > (0.5 if a.dtype == cp.float32 else 2048)

    def downsample(a):
        m = a.reshape(h, 2, h, 2, h, 2).mean(axis=(1, 3, 5), dtype=cp.float32)
        return m if a.dtype == cp.float32 else cp.rint(m).astype(a.dtype)

    def rescale(a):
        r = a.astype(cp.float32) * 0.5 + 1.0
        return r if a.dtype == cp.float32 else cp.rint(r).astype(a.dtype)

    both = DTYPES
    ops = {
        # reference
        "copy_reference": (lambda a: a.copy(), ("f32",)),
        # filters
        "gaussian sigma=2": (lambda a: ndi.gaussian_filter(a, sigma=2), both),
        "uniform 3": (lambda a: ndi.uniform_filter(a, size=3), both),
        "median 3": (lambda a: ndi.median_filter(a, size=3), both),
        "sobel z": (lambda a: ndi.sobel(a, axis=0), both),  # (z, y, x) array order
        "sobel x": (lambda a: ndi.sobel(a, axis=2), both),
        "gradient magnitude": (
            lambda a: ndi.generic_gradient_magnitude(a, ndi.sobel, output=cp.float32), both),
        "erosion 3": (lambda a: ndi.grey_erosion(a, size=3), both),
        # reductions, statistics, projections, elementwise
        "sum": (lambda a: cp.sum(a), both),
        "min": (lambda a: cp.min(a), both),
        "max": (lambda a: cp.max(a), both),
        "mean": (lambda a: cp.mean(a), both),
        "std": (lambda a: cp.std(a), both),
        "argmax": (lambda a: cp.argmax(a), both),
        "histogram 256": (lambda a: cp.histogram(a, bins=256, range=hist_range(a)), both),
        "max projection z": (lambda a: a.max(axis=0), both),
        "min projection z": (lambda a: a.min(axis=0), both),
        "mean projection z": (lambda a: a.mean(axis=0, dtype=cp.float32), both),
        "threshold": (threshold, both),
        "convert f32->u16": (
            lambda a: cp.clip(cp.rint(a * 65535.0), 0, 65535).astype(cp.uint16), ("f32",)),
        "rescale": (rescale, both),
        # geometry
        "downsample 2x": (downsample, both),
        "resize 384": (
            lambda a: ndi.zoom(a, q / n, order=1, mode="nearest", grid_mode=False), both),
        "transpose xy": (lambda a: cp.ascontiguousarray(a.transpose(0, 2, 1)), both),
        "transpose xz": (lambda a: cp.ascontiguousarray(a.transpose(2, 1, 0)), both),
        "crop 448": (lambda a: a[lo:hi, lo:hi, lo:hi].copy(), both),
        "pad 8 reflect": (lambda a: cp.pad(a, n // 64, mode="symmetric"), both),
    }
    return {key(k): v for k, v in ops.items()}


def find_bench(path):
    if path:
        return path
    for p in DEFAULT_BENCH:
        if os.path.exists(p):
            return p
    return DEFAULT_BENCH[0]


def run_bench(path, reps, filt):
    """Runs bench_ops; returns ([(name, dtype, ms)], ok). Echoes its output."""
    cmd = [path, "--reps", str(reps)] + (["--filter", filt] if filt else [])
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        print("cupy_compare: cannot run %s: %s" % (path, e), file=sys.stderr)
        return [], False
    sys.stdout.write(p.stdout)
    results = []
    for line in p.stdout.splitlines():
        m = RESULT_RE.match(line.strip())
        if m:
            results.append((m.group(1), m.group(2), float(m.group(3))))
    if p.returncode != 0:
        print("cupy_compare: %s exited with %d" % (path, p.returncode), file=sys.stderr)
    return results, p.returncode == 0


def make_inputs(cp, n, rotate, seed):
    rs = cp.random.RandomState(seed)
    f32 = [rs.random_sample((n, n, n), dtype=cp.float32) for _ in range(rotate)]
    u16 = [rs.randint(0, 4096, size=(n, n, n), dtype=cp.uint16) for _ in range(rotate)]
    return {"f32": f32, "u16": u16}


def time_cupy(cp, fn, inputs, reps, warmup=3):
    """Median ms of fn over reps runs, each between two CUDA events on the current stream."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for w in range(warmup):
        fn(inputs[w % len(inputs)])
    cp.cuda.get_current_stream().synchronize()
    times = []
    for r in range(reps):
        a = inputs[r % len(inputs)]
        start.record()
        out = fn(a)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
        del out
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Time voxstream's bench_ops against CuPy / cupyx.scipy.ndimage on the same "
                    "GPU and print voxstream ms / CuPy ms.")
    ap.add_argument("bench", nargs="?", default=None,
                    help="path of the bench_ops binary (default: %s)" % " or ".join(DEFAULT_BENCH))
    ap.add_argument("--reps", type=int, default=20, help="timed runs per op (at least 20)")
    ap.add_argument("--filter", default="",
                    help="only ops whose name contains this substring (passed to bench_ops)")
    ap.add_argument("--size", type=int, default=512, help="volume edge for CuPy (default 512, "
                    "as bench_ops; must be a multiple of 64)")
    ap.add_argument("--cupy-only", action="store_true",
                    help="do not run bench_ops; time every op of the CuPy table")
    ap.add_argument("--list", action="store_true",
                    help="print the op names that have a CuPy equivalent and exit")
    args = ap.parse_args(argv)
    reps = max(20, args.reps)
    if args.size <= 0 or args.size % 64:
        ap.error("--size must be a positive multiple of 64")

    if args.list:
        class _Stub:  # names only: no CuPy needed
            float32 = "float32"
            uint16 = "uint16"
        for k, (_, dts) in cupy_ops(_Stub, None, args.size).items():
            print("%-28s %s" % (k, ",".join(dts)))
        return 0

    ok = True
    if args.cupy_only:
        vox = []
    else:
        vox, ok = run_bench(find_bench(args.bench), reps, args.filter)
        if not vox:
            print("cupy_compare: no RESULT lines from bench_ops (--cupy-only times CuPy alone)",
                  file=sys.stderr)
            return 1

    import cupy as cp  # noqa: E402  (after argument handling: --help works without CuPy)
    import cupyx.scipy.ndimage as ndi  # noqa: E402

    ops = cupy_ops(cp, ndi, args.size)
    if args.cupy_only:
        vox = [(k, dt, math.nan) for k, (_, dts) in ops.items() for dt in dts
               if not args.filter or key(args.filter) in k]

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print("\nCuPy %s on %s, %d^3 volumes, median of %d runs, 3 inputs rotated"
          % (cp.__version__, name, args.size, reps), flush=True)
    inputs = make_inputs(cp, args.size, 3, 1234)
    pool = cp.get_default_memory_pool()

    rows = []
    for op_name, dtype, vox_ms in vox:
        entry = ops.get(op_name)
        if entry is None or dtype not in entry[1]:
            rows.append((op_name, dtype, vox_ms, None))
            continue
        fn = entry[0]
        try:
            ms = time_cupy(cp, fn, inputs[dtype], reps)
        except Exception as e:  # report and go on: one failing op must not hide the others
            print("cupy_compare: %s %s failed in CuPy: %s" % (op_name, dtype, e), file=sys.stderr)
            ms = math.nan
        pool.free_all_blocks()
        rows.append((op_name, dtype, vox_ms, ms))

    print("\n%-28s %-5s %14s %11s %16s" % ("op", "dtype", "voxstream ms", "CuPy ms",
                                           "voxstream/CuPy"))
    for op_name, dtype, vox_ms, ms in rows:
        if ms is None:
            print("%-28s %-5s %14.4f %11s %16s" % (op_name, dtype, vox_ms, "-",
                                                   "no CuPy equivalent"))
            continue
        ratio = vox_ms / ms if ms and not math.isnan(ms) else math.nan
        print("%-28s %-5s %14.4f %11.4f %16.3f" % (op_name, dtype, vox_ms, ms, ratio))
    print()
    for op_name, dtype, vox_ms, ms in rows:
        if ms is None:
            continue
        ratio = vox_ms / ms if ms and not math.isnan(ms) else math.nan
        print("RESULT cupy %s %s ms=%.4f ratio=%.4f" % (op_name, dtype, ms, ratio))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
