#!/usr/bin/env python3
"""Where the segmentation ops spend their device time, kernel by kernel (CUPTI timeline).

    python3 bench/segment_profile.py [--shape 512] [--streams 32]

Needs the voxstream Python package built for CUDA (python/gpu_test.sh builds it into
build/cuda/python: PYTHONPATH=build/cuda/python) and CuPy. Makes a blobs mask like
`bench_ops --segment` (seeded uniform noise, Gaussian of sigma 2 by cupyx, thresholded at its
70th percentile: about 30% foreground), runs label (6 and 26), binary_fill_holes,
distance_transform_edt (float32) and region_stats once each to warm up, then once more under a
voxstream.profile.timeline, and prints per op its span and each kernel's summed time and launch
count, longest first:

    RESULT segprof <op> span_ms=... kernel_ms=... kernels=...
    RESULT segprof <op> kernel=<name> ms=... n=...

A span far above the summed kernel time means gaps (host work, waits) between kernels.
"""
import argparse
import collections
import re
import sys


def short(name):
    """A kernel's name without its template arguments and parameter list."""
    name = re.sub(r"\(.*", "", name)
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).replace("void ", "").strip()[-60:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", type=int, default=512, help="edge of the cubic mask (512)")
    ap.add_argument("--streams", type=int, default=32, help="stream-set size (32)")
    ap.add_argument("--top", type=int, default=8, help="kernels printed per op (8)")
    a = ap.parse_args()
    try:
        import cupy
        import cupyx.scipy.ndimage as cndi
    except ImportError:
        print("segment_profile.py: CuPy is not installed: nothing to profile")
        return 0
    import voxstream as vs
    if vs.backend != "cuda":
        print("segment_profile.py: the voxstream package is the host backend: nothing to profile")
        return 0

    n = a.shape
    rng = cupy.random.default_rng(2026)
    noise = rng.random((n, n, n), dtype=cupy.float32)
    smooth = cndi.gaussian_filter(noise, 2.0)
    thr = float(cupy.percentile(smooth[::4, ::4, ::4], 70))
    mask = (smooth > thr).astype(cupy.uint8)
    del noise
    cupy.cuda.Device().synchronize()

    s = vs.StreamSet(a.streams)
    m = vs.asvolume(mask, s)
    values = vs.asvolume(smooth, s)
    s.synchronize()
    labels6, count6 = vs.label(m, connectivity=6, streams=s)
    nlab = int(count6.get())
    s.synchronize()

    ops = {
        "label_6": lambda: vs.label(m, connectivity=6, streams=s),
        "label_26": lambda: vs.label(m, connectivity=26, streams=s),
        "fill_holes": lambda: vs.binary_fill_holes(m, connectivity=6, streams=s),
        "edt": lambda: vs.distance_transform_edt(m, dtype="float32", streams=s),
        "region_stats": lambda: vs.region_stats(labels6, values, nlab, streams=s),
    }
    for op, fn in ops.items():
        fn()
        s.synchronize()
        with vs.profile.timeline(streams=s) as t:
            keep = fn()
            s.synchronize()
        del keep
        per = collections.defaultdict(lambda: [0, 0])
        for r in t.records():
            if r.kind != "kernel":
                continue
            k = per[short(r.name)]
            k[0] += r.duration_ns
            k[1] += 1
        st = t.stats()
        print(f"RESULT segprof {op} span_ms={st.span_ns / 1e6:.3f} "
              f"kernel_ms={st.kernel_ns / 1e6:.3f} kernels={st.kernels}")
        for name, (ns, cnt) in sorted(per.items(), key=lambda kv: -kv[1][0])[:a.top]:
            print(f"RESULT segprof {op} kernel={name} ms={ns / 1e6:.3f} n={cnt}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
