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

The filter sweep of issue 16 (bench_ops --sweep, see bench/ops/main.cu):

    python3 bench/cupy_compare.py build/cuda/bench/ops/bench_ops --sweep \
        [--sweep-shapes 512x512x300,512^3] [--sweep-types u8,u16,f32] [--sweep-ops all] \
        [--sweep-cap-ms 1000] [--streams N] [--no-cucim]

runs `bench_ops --sweep` with those flags, parses its `RESULT sweep` lines, then times the same
cases in cupyx.scipy.ndimage on the same shapes (numpy order (z, y, x)) and types: uniform_filter
(size s, or (1, s, s) per slice), grey_erosion / grey_dilation (size), gaussian_filter (sigma
reversed to (z, y, x), output float32), median_filter (size), and a.copy() as cupyx's copy. Same
method as bench_ops: 3 rotated seeded random inputs, CUDA events, 3 warm-ups and the median of
--reps runs; a case whose probe run takes over 20 ms gets 1 warm-up and
max(5, min(reps, cap / probe)) runs (--sweep-cap-ms, default 1000). With cuCIM installed (and
without --no-cucim), a cuCIM column times cucim.skimage's gaussian (float32 input), median,
erosion and dilation (no uniform in cuCIM). Prints a table (case, type, shape, voxstream ms,
x copy, cupyx ms, speedup over cupyx[, cuCIM ms, speedup]) and, last, the worst of every op
family: ratio to copy against its target and the least speedup over cupyx (median 5: at least
10x on every type). One line per case:

    RESULT cupy_sweep <case> <dtype> shape=XxYxZ vox_ms=... xcopy=... cupyx_ms=... speedup=...
        cupyx_xcopy=<cupyx ms / cupyx copy ms> [cucim_ms=... cucim_speedup=...]

GPU time of the full side-by-side run (estimate, H200): bench_ops ~1 min, cupyx ~2-4 min (its
median 5 takes ~150 ms a call; CuPy compiles each kernel on first use, a minute or two more the
first time), about as much again for cuCIM. A quick subset:

    python3 bench/cupy_compare.py build/cuda/bench/ops/bench_ops --sweep \
        --sweep-shapes 512x512x300 --sweep-types f32 --sweep-ops box+minmax+gaussian+median_size=3
"""

import argparse
import math
import os
import re
import statistics
import subprocess
import sys

SWEEP_RE = re.compile(r"^RESULT sweep (\S+) (\S+) (.*)$")
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


def run_bench(path, reps, filt, streams=None):
    """Runs bench_ops; returns ([(name, dtype, ms)], ok). Echoes its output."""
    cmd = [path, "--reps", str(reps)] + (["--filter", filt] if filt else [])
    if streams:
        cmd += ["--streams", str(streams)]
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


# ---------------------------------------------------------------------------------------------
# The filter sweep (bench_ops --sweep)

# family: (target ratio to copy, least speedup over cupyx required or None)
SWEEP_FAMILIES = (
    ("box_3d", 2.0, None), ("box_2d", 2.0, None), ("minmax_3d", 2.0, None),
    ("minmax_2d", 2.0, None), ("gaussian_f32", 2.5, None), ("gaussian_int", 3.0, None),
    ("median_size=3", 3.0, None), ("median_size=5", 25.0, 10.0),
    # sigma over 4: no copy target in issue 16, only "no case slower than cupyx"
    ("gaussian_wide", math.inf, 1.0),
    # the rank machinery beyond the cases (median 7, rank_filter, percentile_filter):
    # no targets, only "not slower than cupyx"
    ("median_wide", math.inf, 1.0), ("rank", math.inf, 1.0),
)
SWEEP_TYPES = {"u8": "uint8", "u16": "uint16", "f32": "float32"}


def sweep_cases():
    """The cases of bench_ops --sweep, as it names them: [{name, op, dims, size | sigma_xyz}]."""
    cases = []
    for op in ("uniform", "erosion", "dilation"):
        for dims in (3, 2):
            for s in (3, 5, 7, 9):
                opname = op + ("2d" if dims == 2 else "")
                cases.append({"name": "%s_size=%d" % (opname, s), "op": opname, "dims": dims,
                              "size": s})
    for sg in ((1, 1, 1), (2, 2, 2), (4, 4, 4), (1, 1, 3), (8, 8, 8)):
        iso = sg[0] == sg[1] == sg[2]
        name = "gaussian_sigma=" + ("%g" % sg[0] if iso else "x%gy%gz%g" % sg)
        cases.append({"name": name, "op": "gaussian", "dims": 3, "sigma_xyz": sg})
    for dims in (3, 2):
        for s in (3, 5):
            opname = "median" + ("2d" if dims == 2 else "")
            cases.append({"name": "%s_size=%d" % (opname, s), "op": opname, "dims": dims,
                          "size": s})
    cases.append({"name": "median_size=7", "op": "median", "dims": 3, "size": 7})
    cases.append({"name": "rank_size=3", "op": "rank", "dims": 3, "size": 3, "rank": 6})
    cases.append({"name": "rank2d_size=3", "op": "rank2d", "dims": 2, "size": 3, "rank": 2})
    cases.append({"name": "percentile2d_size=5", "op": "percentile2d", "dims": 2, "size": 5,
                  "q": 25.0})
    cases.append({"name": "percentile_size=5", "op": "percentile", "dims": 3, "size": 5,
                  "q": 25.0})
    return cases


def sweep_selected(case, tokens):
    """bench_ops' --sweep-ops rule: case name, op name, box, minmax, 3d, 2d or all."""
    for t in tokens:
        if t in ("all", case["name"], case["op"]):
            return True
        if t == "box" and case["op"].startswith("uniform"):
            return True
        if t == "minmax" and case["op"].startswith(("erosion", "dilation")):
            return True
        if t == "%dd" % case["dims"]:
            return True
        if t == "rank" and case["op"] in ("rank", "rank2d", "percentile", "percentile2d"):
            return True
    return False


def parse_shape(s):
    """'512x512x300' (x by y by z) or '512^3' -> (x, y, z)."""
    if "^" in s:
        n, e = s.split("^")
        if e != "3":
            raise ValueError(s)
        return (int(n),) * 3
    p = [int(v) for v in s.split("x")]
    if len(p) == 1:
        p = p * 3
    if len(p) != 3 or min(p) <= 0:
        raise ValueError(s)
    return tuple(p)


def shape_name(xyz):
    return "%dx%dx%d" % xyz


def sweep_family(case, dtype):
    op = case["op"]
    if op.startswith("uniform"):
        return "box_2d" if case["dims"] == 2 else "box_3d"
    if op.startswith(("erosion", "dilation")):
        return "minmax_2d" if case["dims"] == 2 else "minmax_3d"
    if op == "gaussian":
        if max(case["sigma_xyz"]) > 4:
            return "gaussian_wide"
        return "gaussian_f32" if dtype == "f32" else "gaussian_int"
    if op in ("rank", "rank2d", "percentile", "percentile2d"):
        return "rank"
    if case["size"] > 5:
        return "median_wide"
    return "median_size=%d" % case["size"]


def parse_sweep_line(line):
    """'RESULT sweep <case> <dtype> k=v ...' -> dict, or None."""
    m = SWEEP_RE.match(line.strip())
    if not m:
        return None
    r = {"name": m.group(1), "dtype": m.group(2)}
    for kv in m.group(3).split():
        k, _, v = kv.partition("=")
        r[k] = v
    r["ms"] = float(r["ms"])
    r["xcopy"] = float(r.get("xcopy", "nan"))
    r["dims"] = int(r.get("dims", "3"))
    if "size" in r:
        r["size"] = int(r["size"])
    if "rank" in r:
        r["rank"] = int(r["rank"])
    if "q" in r:
        r["q"] = float(r["q"])
    if "sigma_xyz" in r:
        r["sigma_xyz"] = tuple(float(v) for v in r["sigma_xyz"].split(","))
    return r


def run_sweep_bench(path, args, reps):
    """Runs bench_ops --sweep; returns ([result dicts], ok). Echoes its output as it comes."""
    cmd = [path, "--sweep", "--reps", str(reps), "--sweep-shapes", args.sweep_shapes,
           "--sweep-types", args.sweep_types, "--sweep-ops", args.sweep_ops,
           "--sweep-cap-ms", str(args.sweep_cap_ms)]
    if args.streams:
        cmd += ["--streams", str(args.streams)]
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        print("cupy_compare: cannot run %s: %s" % (path, e), file=sys.stderr)
        return [], False
    results = []
    for line in p.stdout:
        sys.stdout.write(line)
        r = parse_sweep_line(line)
        if r:
            results.append(r)
    rc = p.wait()
    sys.stdout.flush()
    if rc != 0:
        print("cupy_compare: %s exited with %d" % (path, rc), file=sys.stderr)
    return results, rc == 0


def time_adaptive(cp, fn, inputs, reps, cap_ms, slow_ms=20.0):
    """bench_ops --sweep's method: one warm-up, a probe; fast cases get 1 more warm-up (3 in
    all) and `reps` runs, slow ones max(5, min(reps, cap_ms / probe)) runs. Median ms, runs."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def once(a):
        start.record()
        out = fn(a)
        stop.record()
        stop.synchronize()
        del out
        return cp.cuda.get_elapsed_time(start, stop)

    once(inputs[0])
    probe = once(inputs[1 % len(inputs)])
    if probe > slow_ms:
        n = max(5, min(reps, int(cap_ms / probe)))
    else:
        once(inputs[2 % len(inputs)])
        n = reps
    times = sorted(once(inputs[r % len(inputs)]) for r in range(n))
    return times[len(times) // 2], n


def cupyx_sweep_fn(cp, ndi, case):
    op, dims = case["op"], case["dims"]
    if op == "copy":
        return lambda a: a.copy()
    if op == "gaussian":
        sx, sy, sz = case["sigma_xyz"]
        return lambda a: ndi.gaussian_filter(a, sigma=(sz, sy, sx), output=cp.float32)
    s = case["size"]
    size = (1, s, s) if dims == 2 else s
    if op.startswith("uniform"):
        return lambda a: ndi.uniform_filter(a, size=size)
    if op.startswith("erosion"):
        return lambda a: ndi.grey_erosion(a, size=size)
    if op.startswith("dilation"):
        return lambda a: ndi.grey_dilation(a, size=size)
    if op.startswith("median"):
        return lambda a: ndi.median_filter(a, size=size)
    if op in ("rank", "rank2d"):
        return lambda a: ndi.rank_filter(a, rank=case["rank"], size=size)
    if op in ("percentile", "percentile2d"):
        return lambda a: ndi.percentile_filter(a, percentile=case["q"], size=size)
    return None


def cucim_sweep_fn(cp, case):
    """cuCIM's nearest op for a case, or None (uniform, copy: none)."""
    import cucim.skimage.filters as cf  # noqa: E402
    import cucim.skimage.morphology as cm  # noqa: E402
    op, dims = case["op"], case["dims"]
    if op == "gaussian":
        sx, sy, sz = case["sigma_xyz"]
        # skimage converts integers to float64; give it float32, as voxstream's output type.
        return lambda a: cf.gaussian(a if a.dtype == cp.float32 else a.astype(cp.float32),
                                     sigma=(sz, sy, sx), mode="reflect", truncate=4.0,
                                     preserve_range=True)
    if "size" not in case:
        return None
    s = case["size"]
    fp = cp.ones((1, s, s) if dims == 2 else (s, s, s), dtype=bool)
    if op.startswith("median"):
        return lambda a: cf.median(a, footprint=fp, mode="reflect")
    if op.startswith("erosion"):
        return lambda a: cm.erosion(a, footprint=fp)
    if op.startswith("dilation"):
        return lambda a: cm.dilation(a, footprint=fp)
    return None


def make_sweep_inputs(cp, xyz, dtype, rotate, seed):
    rs = cp.random.RandomState(seed)
    shape = (xyz[2], xyz[1], xyz[0])  # numpy order (z, y, x)
    if dtype == "f32":
        return [rs.random_sample(shape, dtype=cp.float32) for _ in range(rotate)]
    hi = 256 if dtype == "u8" else 4096
    return [rs.randint(0, hi, size=shape, dtype=getattr(cp, SWEEP_TYPES[dtype]))
            for _ in range(rotate)]


def fmt(v, spec):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else spec % v


def main_sweep(args, reps):
    tokens = [t for t in re.split(r"[,+|]", args.sweep_ops) if t]
    types = []
    for t in args.sweep_types.split(","):
        t = {"uint8": "u8", "uint16": "u16", "float": "f32", "float32": "f32"}.get(t, t)
        if t not in SWEEP_TYPES:
            print("cupy_compare: --sweep-types: %r is not u8, u16 or f32" % t, file=sys.stderr)
            return 2
        types.append(t)
    try:
        shapes = [shape_name(parse_shape(s)) for s in args.sweep_shapes.split(",") if s]
    except ValueError as e:
        print("cupy_compare: --sweep-shapes: bad shape %s" % e, file=sys.stderr)
        return 2

    ok = True
    if args.cupy_only:
        vox = []
        for sh in shapes:
            for dt in types:
                vox.append({"name": "copy", "dtype": dt, "shape": sh, "op": "copy", "dims": 3,
                            "ms": math.nan, "xcopy": math.nan})
                for c in sweep_cases():
                    if sweep_selected(c, tokens):
                        vox.append(dict(c, dtype=dt, shape=sh, ms=math.nan, xcopy=math.nan))
    else:
        vox, ok = run_sweep_bench(find_bench(args.bench), args, reps)
        if not vox:
            print("cupy_compare: no RESULT sweep lines from bench_ops (--cupy-only times CuPy "
                  "alone)", file=sys.stderr)
            return 1

    import cupy as cp  # noqa: E402  (after argument handling: --help works without CuPy)
    import cupyx.scipy.ndimage as ndi  # noqa: E402
    use_cucim = False
    if not args.no_cucim:
        try:
            import cucim  # noqa: F401,E402
            import cucim.skimage.filters  # noqa: F401,E402
            import cucim.skimage.morphology  # noqa: F401,E402
            use_cucim = True
        except Exception:  # not installed, or not for this CUDA: no cuCIM column
            use_cucim = False

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print("\ncupyx (CuPy %s)%s on %s: median of %d runs (slow cases: max(5, %g ms / probe)), "
          "3 inputs rotated" % (cp.__version__,
                                " and cuCIM %s" % cucim.__version__ if use_cucim else "",
                                name, reps, args.sweep_cap_ms), flush=True)
    pool = cp.get_default_memory_pool()

    rows = []
    groups = []  # (shape, dtype) in bench_ops' order
    for r in vox:
        g = (r["shape"], r["dtype"])
        if g not in groups:
            groups.append(g)
    for sh, dt in groups:
        inputs = make_sweep_inputs(cp, parse_shape(sh), dt, 3, 1234)
        cupyx_copy = None
        for r in [v for v in vox if (v["shape"], v["dtype"]) == (sh, dt)]:
            cx = cu = math.nan
            cx_runs = 0
            try:
                cx, cx_runs = time_adaptive(cp, cupyx_sweep_fn(cp, ndi, r), inputs, reps,
                                            args.sweep_cap_ms)
            except Exception as e:  # one failing case must not hide the others
                print("cupy_compare: %s %s %s failed in cupyx: %s" % (r["name"], dt, sh, e),
                      file=sys.stderr)
            pool.free_all_blocks()
            if use_cucim and r["op"] != "copy":
                try:
                    f = cucim_sweep_fn(cp, r)
                    if f is not None:
                        cu, _ = time_adaptive(cp, f, inputs, reps, args.sweep_cap_ms)
                except Exception as e:
                    print("cupy_compare: %s %s %s failed in cuCIM: %s" % (r["name"], dt, sh, e),
                          file=sys.stderr)
                pool.free_all_blocks()
            if r["op"] == "copy":
                cupyx_copy = cx
            row = dict(r, cupyx_ms=cx, cupyx_runs=cx_runs, cucim_ms=cu,
                       cupyx_xcopy=cx / cupyx_copy if cupyx_copy else math.nan)
            rows.append(row)
            print("  %-24s %-4s %-12s cupyx %9.3f ms (%d runs)%s" % (
                r["name"], dt, sh, cx, cx_runs,
                "  cuCIM %s ms" % fmt(cu, "%.3f") if use_cucim else ""), flush=True)
        del inputs
        pool.free_all_blocks()

    def speedup(ref, ms):
        return ref / ms if ms and not math.isnan(ms) and not math.isnan(ref) else math.nan

    head = "%-24s %-4s %-12s %10s %7s %10s %8s" % ("case", "type", "shape", "vox ms", "x copy",
                                                  "cupyx ms", "speedup")
    if use_cucim:
        head += " %10s %8s" % ("cuCIM ms", "speedup")
    print("\n" + head)
    for r in rows:
        line = "%-24s %-4s %-12s %10s %7s %10s %8s" % (
            r["name"], r["dtype"], r["shape"], fmt(r["ms"], "%.3f"), fmt(r["xcopy"], "%.2fx"),
            fmt(r["cupyx_ms"], "%.3f"), fmt(speedup(r["cupyx_ms"], r["ms"]), "%.1fx"))
        if use_cucim:
            line += " %10s %8s" % (fmt(r["cucim_ms"], "%.3f"),
                                   fmt(speedup(r["cucim_ms"], r["ms"]), "%.1fx"))
        print(line)
    print()
    for r in rows:
        extra = ""
        if use_cucim and not math.isnan(r["cucim_ms"]):
            extra = " cucim_ms=%.4f cucim_speedup=%.3f" % (r["cucim_ms"],
                                                          speedup(r["cucim_ms"], r["ms"]))
        print("RESULT cupy_sweep %s %s shape=%s vox_ms=%.4f xcopy=%.3f cupyx_ms=%.4f "
              "speedup=%.3f cupyx_xcopy=%.3f%s" % (
                  r["name"], r["dtype"], r["shape"], r["ms"], r["xcopy"], r["cupyx_ms"],
                  speedup(r["cupyx_ms"], r["ms"]), r["cupyx_xcopy"], extra))

    # Worst of every family, last: ratio to copy (voxstream) and least speedup over cupyx.
    print("\nworst of every op family")
    print("%-14s %8s %7s %-7s %10s %8s  %s" % ("family", "x copy", "target", "", "speedup",
                                              "needs", "worst cases (x copy; speedup)"))
    for fam, target, need in SWEEP_FAMILIES:
        fr = [r for r in rows if r["op"] != "copy" and sweep_family(r, r["dtype"]) == fam]
        if not fr:
            print("%-14s %8s %6.1fx %-7s" % (fam, "-", target, "not run"))
            continue
        wx = max(fr, key=lambda r: -math.inf if math.isnan(r["xcopy"]) else r["xcopy"])
        ws = min(fr, key=lambda r: math.inf if math.isnan(speedup(r["cupyx_ms"], r["ms"]))
                 else speedup(r["cupyx_ms"], r["ms"]))
        x, sp = wx["xcopy"], speedup(ws["cupyx_ms"], ws["ms"])
        verdict = "-" if math.isnan(x) or math.isinf(target) else (
            "meets" if x <= target else "misses")
        sv = ""
        if need is not None:
            sv = "-" if math.isnan(sp) else ("meets" if sp >= need else "misses")
        print("%-14s %8s %6.1fx %-7s %10s %8s  %s/%s/%s; %s/%s/%s %s" % (
            fam, fmt(x, "%.2fx"), target, verdict, fmt(sp, "%.1fx"),
            ">=%gx" % need if need else "-", wx["name"], wx["dtype"], wx["shape"], ws["name"],
            ws["dtype"], ws["shape"], sv))
        print("RESULT cupy_sweep_worst %s xcopy=%.3f target=%.1f %s speedup=%.3f%s case=%s/%s/%s "
              "slowest_vs_cupyx=%s/%s/%s" % (
                  fam, x, target, verdict, sp,
                  (" needs=%.1f %s" % (need, sv)) if need else "", wx["name"], wx["dtype"],
                  wx["shape"], ws["name"], ws["dtype"], ws["shape"]), flush=True)
    return 0 if ok else 1


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
    ap.add_argument("--streams", type=int, default=None,
                    help="passed to bench_ops as --streams (default: bench_ops' own)")
    sw = ap.add_argument_group("filter sweep (issue 16)")
    sw.add_argument("--sweep", action="store_true",
                    help="run bench_ops --sweep and time the same cases in cupyx side by side")
    sw.add_argument("--sweep-shapes", default="512x512x300,512^3",
                    help="volumes, x by y by z (default 512x512x300,512^3)")
    sw.add_argument("--sweep-types", default="u8,u16,f32", help="u8, u16, f32 (default all)")
    sw.add_argument("--sweep-ops", default="all",
                    help="case names, op names or box, minmax, 3d, 2d, all; ',' or '+' between "
                         "(bench_ops --sweep-list prints the names)")
    sw.add_argument("--sweep-cap-ms", type=float, default=1000.0,
                    help="timed ms per slow case (> 20 ms a run), in bench_ops and in cupyx")
    sw.add_argument("--no-cucim", action="store_true", help="no cuCIM column even if installed")
    args = ap.parse_args(argv)
    reps = max(20, args.reps)
    if args.sweep:
        if args.list:
            for c in sweep_cases():
                print("%-24s op=%s dims=%d" % (c["name"], c["op"], c["dims"]))
            return 0
        return main_sweep(args, reps)
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
        vox, ok = run_bench(find_bench(args.bench), reps, args.filter, args.streams)
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
