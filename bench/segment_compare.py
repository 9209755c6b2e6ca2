#!/usr/bin/env python3
"""Segmentation ops side by side (issue 20): voxstream's bench_ops --segment, then the same ops on
the same masks in cupyx.scipy.ndimage (and cuCIM where installed), in one call on one GPU.

    python3 bench/segment_compare.py [BENCH_OPS] [--shape 512^3] [--reps 10] [--no-cucim]
                                     [--cap-ms 2000] [--only REGEX]

BENCH_OPS (default build/cuda/bench/ops/bench_ops) runs first: `bench_ops --segment --shape S
--reps N --write-masks DIR` makes the masks on the GPU (see bench/ops/segment.cu: "blobs", seeded
uniform noise smoothed by a Gaussian of sigma 2 and thresholded at its 70th percentile, ~30%
foreground; "phantom", a thresholded ellipsoid phantom with hollow shells), times voxstream's
ops on them and writes the masks (uint8) and the float32 values to DIR. Its lines

    RESULT segment <case> <mask> ms=<median ms> xcopy=<ms / copy of the mask ms> [labels=N]

are parsed. This script then loads the same masks and times, with CUDA events, a first run (CuPy
compiles its kernels), then bench/cupy_compare.py's time_adaptive (a warm-up, a probe, and the
median of max(5, min(reps, cap / probe)) runs; fast ones: one more warm-up and `reps` runs); a
case whose first run takes over 500 ms is timed once more, once (cupyx's per-label measurements
take seconds on 512^3):
- label: cupyx.scipy.ndimage.label with the 6- and 26-neighbourhood structures;
- edt (and its variants edt_deferred, edt_envelope and edt_unstaged, compared with the same competitor times):
  cupyx.scipy.ndimage.distance_transform_edt (float32 distances) and, with cuCIM,
  cucim.core.operations.morphology.distance_transform_edt (PBA+), also on "ball" (one solid
  ball: far distances);
- fill_holes: cupyx.scipy.ndimage.binary_fill_holes;
- erosion_ball: cupyx.scipy.ndimage.binary_erosion with a ball of the same radius;
- region_stats: cupyx's sum_labels + minimum + maximum + center_of_mass + label counts over
  index 1..N (labels from cupyx.label, equal to voxstream's) and, with cuCIM,
  cucim.skimage.measure.regionprops_table (area, bbox, centroid, intensity mean/min/max);
  on "cells" (~10^5 labels, written by bench_ops as cells.i32) the same on those labels, and a
  cupy bincount-based equivalent (counts, sums and index sums by cp.bincount, min and max by
  cupyx minimum/maximum).
It prints one table (case, mask, voxstream ms, x copy, cupyx ms, speedup[, cuCIM ms, speedup])
and lines

    RESULT segment_cmp <case> <mask> vox_ms=.. cupyx_ms=.. speedup=.. [cucim_ms=.. cucim_speedup=..]

then the issue's targets: label >= 10x faster than cupyx and <= 10x copy; EDT >= 3x faster than
cuCIM and <= 15x copy; region stats <= 3x a read of both volumes (bench_ops' read_both case).
Needs CuPy (14.x); `--help` works without it.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cupy_compare import time_adaptive  # noqa: E402  (bench_ops' timing method)

LINE_RE = re.compile(r"^RESULT segment (\S+) (\S+) (.*)$")


def parse_kv(rest):
    out = {}
    for tok in rest.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def run_bench(path, shape, reps, outdir):
    cmd = [path, "--segment", "--shape", shape, "--reps", str(reps), "--write-masks", outdir]
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        print("segment_compare: cannot run %s: %s" % (path, e), file=sys.stderr)
        return [], None, False
    results, ext = [], None
    for line in p.stdout:
        sys.stdout.write(line)
        m = LINE_RE.match(line.strip())
        if m:
            r = parse_kv(m.group(3))
            r["case"], r["mask"] = m.group(1), m.group(2)
            results.append(r)
        m2 = re.match(r"^segment shape=(\d+)x(\d+)x(\d+)", line.strip())
        if m2:
            ext = tuple(int(g) for g in m2.groups())
    rc = p.wait()
    if rc != 0:
        print("segment_compare: %s exited with %d" % (path, rc), file=sys.stderr)
    return results, ext, rc == 0


def time_fn(cp, fn, arg, reps, cap_ms):
    """A first run (CuPy compiles its kernels); a very slow op (over 500 ms) is then timed once
    more, any other by cupy_compare.time_adaptive, bench_ops' method."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def once():
        start.record()
        out = fn(arg)
        stop.record()
        stop.synchronize()
        del out
        return cp.cuda.get_elapsed_time(start, stop)

    if once() > 500.0:
        return once()
    return time_adaptive(cp, fn, [arg], reps, cap_ms)[0]


def ball(cp, r):
    g = cp.arange(-r, r + 1)
    z, y, x = cp.meshgrid(g, g, g, indexing="ij")
    return (x * x + y * y + z * z) <= r * r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench", nargs="?", default="build/cuda/bench/ops/bench_ops")
    ap.add_argument("--shape", default="512^3", help="x by y by z, or N^3 (default 512^3)")
    ap.add_argument("--reps", type=int, default=10, help="timed runs of a fast case")
    ap.add_argument("--cap-ms", type=float, default=2000.0, help="timed ms of a slow case")
    ap.add_argument("--no-cucim", action="store_true")
    ap.add_argument("--only", default="",
                    help="compare only the cases matching this regex (e.g. '^edt'); "
                         "bench_ops still times every case")
    args = ap.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="vox_segment_")
    results, ext, ok = run_bench(args.bench, args.shape, args.reps, tmp)
    if not results or ext is None:
        print("segment_compare: no RESULT segment lines", file=sys.stderr)
        return 1
    import cupy as cp  # noqa: E402
    import cupyx.scipy.ndimage as ndi  # noqa: E402
    cucim_edt = cucim_rp = None
    if not args.no_cucim:
        try:
            from cucim.core.operations.morphology import distance_transform_edt as cucim_edt
            from cucim.skimage.measure import regionprops_table as cucim_rp
        except Exception as e:  # noqa: BLE001
            print("segment_compare: no cuCIM (%s)" % e)
    nx, ny, nz = ext
    masks = {}
    for name in ("blobs", "phantom", "ball"):
        f = os.path.join(tmp, name + ".u8")
        if os.path.exists(f):
            import numpy as np  # noqa: E402
            masks[name] = cp.asarray(np.fromfile(f, dtype=np.uint8).reshape(nz, ny, nx))
    cells = None
    f = os.path.join(tmp, "cells.i32")
    if os.path.exists(f):
        import numpy as np  # noqa: E402
        cells = cp.asarray(np.fromfile(f, dtype=np.int32).reshape(nz, ny, nx))
        masks["cells"] = cells
    values = None
    f = os.path.join(tmp, "values.f32")
    if os.path.exists(f):
        import numpy as np  # noqa: E402
        values = cp.asarray(np.fromfile(f, dtype=np.float32).reshape(nz, ny, nx))
    s6 = ndi.generate_binary_structure(3, 1)
    s26 = ndi.generate_binary_structure(3, 3)

    def cupyx_fn(case):
        if case == "label_6":
            return lambda m: ndi.label(m, structure=s6)
        if case == "label_26":
            return lambda m: ndi.label(m, structure=s26)
        if case in ("edt", "edt_deferred", "edt_envelope", "edt_unstaged"):
            return lambda m: ndi.distance_transform_edt(m, float64_distances=False)
        if case == "fill_holes":
            return lambda m: ndi.binary_fill_holes(m)
        if case.startswith("erosion_ball"):
            fp = ball(cp, int(case[len("erosion_ball"):]))
            return lambda m: ndi.binary_erosion(m, structure=fp)
        if case == "region_stats" and values is not None and m is cells:
            def stats_cells(lab):
                n = int(lab.max())
                idx = cp.arange(1, n + 1)
                return (ndi.sum_labels(values, lab, idx), ndi.minimum(values, lab, idx),
                        ndi.maximum(values, lab, idx),
                        ndi.center_of_mass(cp.ones(lab.shape, cp.float32), lab, idx),
                        cp.bincount(lab.ravel()))
            return stats_cells
        if case == "region_stats" and values is not None:
            def stats(m):
                lab, n = ndi.label(m, structure=s6)
                idx = cp.arange(1, n + 1)
                return (ndi.sum_labels(values, lab, idx), ndi.minimum(values, lab, idx),
                        ndi.maximum(values, lab, idx),
                        ndi.center_of_mass(m.astype(cp.float32), lab, idx),
                        cp.bincount(lab.ravel()))
            return stats
        return None

    def cucim_fn(case):
        if case in ("edt", "edt_deferred", "edt_envelope", "edt_unstaged") and cucim_edt is not None:
            return lambda m: cucim_edt(m, float64_distances=False)
        if case == "region_stats" and cucim_rp is not None and values is not None and m is cells:
            return lambda lab: cucim_rp(lab, intensity_image=values,
                                        properties=("area", "bbox", "centroid", "intensity_mean",
                                                    "intensity_min", "intensity_max"))
        if case == "region_stats" and cucim_rp is not None and values is not None:
            def rp(m):
                lab, _ = ndi.label(m, structure=s6)
                return cucim_rp(lab, intensity_image=values,
                                properties=("area", "bbox", "centroid", "intensity_mean",
                                            "intensity_min", "intensity_max"))
            return rp
        return None

    def bincount_fn(case):
        """counts, value sums and index sums (centroids) by cp.bincount, min and max by cupyx
        (cp has no scatter-min): the cheapest cupy route to the same table."""
        if case != "region_stats" or values is None:
            return None

        def run(lab):
            flat = lab.ravel()
            n = int(flat.max()) + 1
            idx = cp.arange(1, n)
            zz, yy, xx = cp.indices(lab.shape, dtype=cp.int32)
            return (cp.bincount(flat, minlength=n), cp.bincount(flat, values.ravel(), n),
                    cp.bincount(flat, xx.ravel(), n), cp.bincount(flat, yy.ravel(), n),
                    cp.bincount(flat, zz.ravel(), n), ndi.minimum(values, lab, idx),
                    ndi.maximum(values, lab, idx))
        return run

    rows = []
    memo = {}  # (library, case family, mask) -> ms: the EDT variants share one competitor time

    def timed(lib, case, mask, fn, m):
        key = (lib, "edt" if case.startswith("edt") else case, mask)
        if key not in memo:
            memo[key] = time_fn(cp, fn, m, args.reps, args.cap_ms)
        return memo[key]

    for r in results:
        case, mask = r["case"], r["mask"]
        if case.startswith("copy"):
            continue
        if args.only and not re.search(args.only, case):
            continue
        m = masks.get(mask)
        row = dict(r)
        fn = cupyx_fn(case) if m is not None else None
        if fn is not None:
            try:
                row["cupyx_ms"] = timed("cupyx", case, mask, fn, m)
            except Exception as e:  # noqa: BLE001
                print("segment_compare: cupyx %s failed: %s" % (case, e))
        fn = cucim_fn(case) if m is not None else None
        if fn is not None:
            try:
                row["cucim_ms"] = timed("cucim", case, mask, fn, m)
            except Exception as e:  # noqa: BLE001
                print("segment_compare: cuCIM %s failed: %s" % (case, e))
        fn = bincount_fn(case) if m is not None and m is cells else None
        if fn is not None:
            try:
                row["bincount_ms"] = time_fn(cp, fn, m, args.reps, args.cap_ms)
                print("cmp %-14s %-8s cupy bincount-based %.3f ms" % (case, mask,
                                                                     row["bincount_ms"]))
            except Exception as e:  # noqa: BLE001
                print("segment_compare: bincount %s failed: %s" % (case, e))
        rows.append(row)
        print("cmp %-14s %-8s vox %.3f ms  cupyx %s  cuCIM %s" % (
            case, mask, row["ms"], "%.3f ms" % row["cupyx_ms"] if "cupyx_ms" in row else "-",
            "%.3f ms" % row["cucim_ms"] if "cucim_ms" in row else "-"), flush=True)

    print("\n%-16s %-8s %10s %8s %10s %8s %10s %8s" % ("case", "mask", "vox ms", "x copy",
                                                       "cupyx ms", "speedup", "cuCIM ms",
                                                       "speedup"))
    for row in rows:
        v = row.get("ms")
        cx, cc = row.get("cupyx_ms"), row.get("cucim_ms")
        print("%-16s %-8s %10.3f %8s %10s %8s %10s %8s" % (
            row["case"], row["mask"], v, "%.2f" % row["xcopy"] if "xcopy" in row else "-",
            "%.3f" % cx if cx else "-", "%.1fx" % (cx / v) if cx else "-",
            "%.3f" % cc if cc else "-", "%.1fx" % (cc / v) if cc else "-"))
        line = "RESULT segment_cmp %s %s vox_ms=%.4f" % (row["case"], row["mask"], v)
        if cx:
            line += " cupyx_ms=%.4f speedup=%.2f" % (cx, cx / v)
        if cc:
            line += " cucim_ms=%.4f cucim_speedup=%.2f" % (cc, cc / v)
        if row.get("bincount_ms"):
            line += " bincount_ms=%.4f" % row["bincount_ms"]
        print(line)

    print("\ntargets (issue 20):")
    for row in rows:
        case, v = row["case"], row["ms"]
        if case.startswith("label"):
            cx = row.get("cupyx_ms")
            print("  %-10s %-8s x copy %.2f (<= 10): %s; vs cupyx %s (>= 10x): %s" % (
                case, row["mask"], row["xcopy"], "met" if row["xcopy"] <= 10 else "missed",
                "%.1fx" % (cx / v) if cx else "-",
                ("met" if cx / v >= 10 else "missed") if cx else "not measured"))
        elif case in ("edt", "edt_deferred", "edt_envelope", "edt_unstaged"):
            cc = row.get("cucim_ms")
            print("  %-10s %-8s x copy %.2f (<= 15): %s; vs cuCIM %s (>= 3x): %s" % (
                case, row["mask"], row["xcopy"], "met" if row["xcopy"] <= 15 else "missed",
                "%.1fx" % (cc / v) if cc else "-",
                ("met" if cc / v >= 3 else "missed") if cc else "not measured"))
        elif case == "region_stats":
            xr = row.get("xread")
            if xr is not None:
                print("  %-10s %-8s x read of both volumes %.2f (<= 3): %s; labels %d" % (
                    case, row["mask"], xr, "met" if xr <= 3 else "missed",
                    int(row.get("labels", 0))))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
