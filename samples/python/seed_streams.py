#!/usr/bin/env python3
"""seed_streams.py: the seed experiment (shared/ANCHORS.md section 1, samples/seed_streams.cu)
written in Python, first in CuPy as a user writes it, then with voxstream.

A volume of 32 z-slices, one launch of the seed kernel `simple_copy` per slice, blocks of 32x32
threads, for 1024^2, 128^2 and 32^2 slices:

- CuPy: 32 cupy.RawKernel launches on 1 and on 32 non-blocking streams (slice z on stream
  z mod n), timed with CUDA events from a separate timing stream (fork and join by events);
- voxstream: the same kernel through voxstream.launch_per_slice(..., graph=False) on a
  StreamSet of 1 and of 32 streams (one launch per slice, as the user wrote it): a few lines,
  the ledger recording each slice's read and write, so that the launches wait (on the device)
  only for the earlier work on their slices;
- voxstream as called by default (graph=True): the same call replayed as the set's cached
  graph of 32 independent kernel nodes, on a set of 1 stream.

With 1024^2 slices one launch is 1024 blocks: it fills an H200 alone, so launches cannot overlap
and 32 streams gain almost nothing; with small slices the streams do overlap.
voxstream.occupancy says which of the two a launch is, beforehand. Every run copies a random
input into a poisoned (NaN) output, checked bit for bit. Writes a timeline (Chrome trace JSON and
SVG) of the CuPy and the voxstream runs of each slice size into --out, and prints RESULT lines:

    RESULT seed_py <slice> <name>=<value>

Exit status 0 and "seed_streams.py: PASS" only if every run produced an exact copy. Without
CuPy, or on voxstream's host backend, it says so and exits with status 0.

    PYTHONPATH=build/cuda/python python3 samples/python/seed_streams.py [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

SLICES = 32
RUNS = 5  # timed runs per measurement, after one warm-up
ITERATIONS = 1000  # the seed's copy loop
CASES = [("1024x1024", 1024, 32), ("128x128", 128, 4), ("32x32", 32, 1)]

SOURCE = r"""
// The seed's kernel: one thread per voxel of slice z copies its voxel `iterations` times
// (volatile store, so every iteration stays), as samples/seed_streams.cu does.
extern "C" __global__ void simple_copy(const float* in, float* out, unsigned long long nx,
                                       unsigned long long ny, unsigned long long z,
                                       int iterations) {
  const unsigned long long x = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long y = blockIdx.y * (unsigned long long)blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const unsigned long long i = (z * ny + y) * nx + x;
  volatile float* dst = out + i;
  for (int k = 0; k < iterations; ++k) *dst = in[i];
}
"""


def result(case, name, value):
    print(f"RESULT seed_py {case} {name}={value:.4f}")


def summarize(ms):
    return min(ms), statistics.median(ms)


class ForkJoinTimer:
    """CUDA events on a timing stream: every work stream waits on `start`; each then records
    a join event that the timing stream waits on before `stop`. No device-wide sync."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.timing = cupy.cuda.Stream(non_blocking=True)
        self.start = cupy.cuda.Event()
        self.stop = cupy.cuda.Event()

    def begin(self, work):
        self.start.record(self.timing)
        for s in work:
            s.wait_event(self.start)

    def end(self, work):
        for s in work:
            join = self.cupy.cuda.Event(disable_timing=True)
            join.record(s)
            self.timing.wait_event(join)
        self.stop.record(self.timing)

    def elapsed_ms(self):
        self.stop.synchronize()
        return self.cupy.cuda.get_elapsed_time(self.start, self.stop)


def exact(want, got, what, run):
    import numpy as np  # noqa: PLC0415

    if np.array_equal(want.view(np.uint32), got.view(np.uint32)):
        return True
    i = int(np.flatnonzero(want.view(np.uint32).ravel() != got.view(np.uint32).ravel())[0])
    print(f"MISMATCH in {what}, run {run}: voxel {i} is {got.ravel()[i]}, expected "
          f"{want.ravel()[i]}")
    return False


# ------------------------------------------------------------------ CuPy, as a user writes it
def run_cupy(cupy, kernel, n, grid, nstreams, host_in):
    import numpy as np  # noqa: PLC0415

    x = cupy.asarray(host_in)
    out = cupy.empty_like(x)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(nstreams)]
    timer = ForkJoinTimer(cupy)
    ms, ok = [], True
    for r in range(-1, RUNS):
        out.fill(np.nan)  # poison, on CuPy's current stream, before `start`
        cupy.cuda.get_current_stream().synchronize()
        timer.begin(streams)
        for z in range(SLICES):
            with streams[z % nstreams]:  # (RawKernel.__call__ launches on the current stream)
                kernel((grid, grid), (32, 32),
                       (x, out, np.uint64(n), np.uint64(n), np.uint64(z), np.int32(ITERATIONS)))
        timer.end(streams)
        elapsed = timer.elapsed_ms()
        ok = exact(host_in, cupy.asnumpy(out), f"CuPy, {nstreams} stream(s)", r) and ok
        if r >= 0:
            ms.append(elapsed)
    return summarize(ms), ok


# ------------------------------------------------------------------ voxstream
def run_vox(cupy, vs, kernel, n, grid, nstreams, host_in, graph=False):
    import numpy as np  # noqa: PLC0415

    s = vs.StreamSet(nstreams)
    vin = vs.asvolume(cupy.asarray(host_in), s)  # zero-copy
    vout = vs.zeros(host_in.shape, "float32", s)
    work = [cupy.cuda.ExternalStream(s.stream_ptr(i)) for i in range(len(s))]
    timer = ForkJoinTimer(cupy)
    ms, enqueue_us, ok = [], [], True
    for r in range(-1, RUNS):
        vs.fill(vout, np.nan)  # poison
        s.synchronize()  # outside the timed region
        timer.begin(work)
        t0 = time.perf_counter()
        # The seed in voxstream: one call; the ledger orders it after the fill, by events.
        vs.launch_per_slice(kernel, (grid, grid), (32, 32),
                            [vs.read_access(vin), vs.write_access(vout), np.uint64(n),
                             np.uint64(n), vs.slice_index, np.int32(ITERATIONS)], streams=s,
                            graph=graph)
        t1 = time.perf_counter()
        timer.end(work)
        elapsed = timer.elapsed_ms()
        what = f"voxstream, {nstreams} stream(s)" + (", graph" if graph else "")
        ok = exact(host_in, vout.to_numpy(), what, r) and ok
        if r >= 0:
            ms.append(elapsed)
            enqueue_us.append((t1 - t0) * 1e6)
    return summarize(ms), statistics.median(enqueue_us), ok


def timeline_of(vs, cupy, kernel, case, n, grid, host_in, out_dir):
    """One CuPy run on 32 streams and one voxstream run on a set of 32, each in a timeline."""
    import numpy as np  # noqa: PLC0415

    stats = {}
    x = cupy.asarray(host_in)
    out = cupy.empty_like(x)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(SLICES)]
    cupy.cuda.Device().synchronize()
    path = os.path.join(out_dir, f"seed_py_{case}_cupy")
    with vs.profile.timeline(path + ".json", svg=path + ".svg",
                             title=f"seed {case}: CuPy, 32 streams") as t:
        for z in range(SLICES):
            with streams[z % SLICES]:
                kernel((grid, grid), (32, 32),
                       (x, out, np.uint64(n), np.uint64(n), np.uint64(z), np.int32(ITERATIONS)))
    stats["cupy"] = t.stats()
    s = vs.StreamSet(SLICES)
    vin = vs.asvolume(x, s)
    vout = vs.zeros(host_in.shape, "float32", s)
    s.synchronize()
    path = os.path.join(out_dir, f"seed_py_{case}_vox")
    with vs.profile.timeline(path + ".json", svg=path + ".svg", streams=s,
                             title=f"seed {case}: voxstream.launch_per_slice, 32 streams") as t:
        vs.launch_per_slice(kernel, (grid, grid), (32, 32),
                            [vs.read_access(vin), vs.write_access(vout), np.uint64(n),
                             np.uint64(n), vs.slice_index, np.int32(ITERATIONS)], graph=False)
    stats["vox"] = t.stats()
    return stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="seed_streams_py", help="folder for the timeline files")
    args = ap.parse_args(argv)
    try:
        import cupy  # noqa: PLC0415
        import numpy as np  # noqa: PLC0415
    except ImportError:
        print("seed_streams.py: CuPy is not installed (pip install cupy-cuda13x); nothing to run")
        return 0
    try:
        import voxstream as vs  # noqa: PLC0415
    except ImportError as e:
        print(f"seed_streams.py: cannot import voxstream ({e}); set PYTHONPATH to the build's "
              "python folder, e.g. PYTHONPATH=build/cuda/python")
        return 1
    if vs.backend != "cuda":
        print("seed_streams.py: voxstream's host backend has no CUDA kernels; build the cuda "
              "backend to run the seed experiment")
        return 0

    os.makedirs(args.out, exist_ok=True)
    kernel = cupy.RawKernel(SOURCE, "simple_copy")
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    conn = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "unset (8 hardware queues)")
    print("seed_streams.py: shared/ANCHORS.md section 1 in CuPy and in voxstream (Python)")
    print(f"device {dev.id}: {name}, {props['multiProcessorCount']} SMs; "
          f"CUDA_DEVICE_MAX_CONNECTIONS={conn}")
    print(f"{SLICES} slices, one simple_copy launch per slice, blocks of 32x32 threads, "
          f"{ITERATIONS} copies per thread\n")

    ok = True
    rows = []
    graphs = []
    for case, n, grid in CASES:
        rng = np.random.default_rng(1234 + n)
        host_in = rng.uniform(-1.0, 1.0, size=(SLICES, n, n)).astype(np.float32)
        c1, o1 = run_cupy(cupy, kernel, n, grid, 1, host_in)
        c32, o2 = run_cupy(cupy, kernel, n, grid, SLICES, host_in)
        v1, e1, o3 = run_vox(cupy, vs, kernel, n, grid, 1, host_in)
        v32, e32, o4 = run_vox(cupy, vs, kernel, n, grid, SLICES, host_in)
        # launch_per_slice's default (graph=True): the set's cached graph of 32 per-slice nodes.
        vg, eg, o5 = run_vox(cupy, vs, kernel, n, grid, 1, host_in, graph=True)
        graphs.append((vg, eg))
        ok = ok and o1 and o2 and o3 and o4 and o5
        occ = vs.occupancy(kernel, (grid, grid), (32, 32))
        tl = timeline_of(vs, cupy, kernel, case, n, grid, host_in, args.out)
        rows.append((case, grid, c1, c32, v1, v32, e1, e32, occ, tl))

    def cell(t):
        return f"{t[0]:8.3f} ({t[1]:8.3f})"

    print(f"times in ms: minimum of {RUNS} runs (median), CUDA events on a timing stream")
    print(f"{'slice':<10} {'grid':<6} {'CuPy, 1 stream':<21} {'CuPy, 32 streams':<21} "
          f"{'vox, 1 stream':<21} {'vox, 32 streams':<21} {'vox 1->32':<9} vox vs CuPy")
    for case, grid, c1, c32, v1, v32, *_ in rows:
        best_c, best_v = min(c1[0], c32[0]), min(v1[0], v32[0])
        print(f"{case:<10} {f'{grid}x{grid}':<6} {cell(c1):<21} {cell(c32):<21} {cell(v1):<21} "
              f"{cell(v32):<21} {v1[0] / v32[0]:8.2f}x {100 * (best_v - best_c) / best_c:+7.2f}%")
    print("(vox vs CuPy: best of 1 and 32 streams each, + means voxstream is slower)")
    print("launch_per_slice as called by default (graph=True: the set's cached graph; a set of "
          "1 stream):")
    for (case, _, c1, *_), (vg, _) in zip(rows, graphs):
        print(f"  {case:<10} {cell(vg):<21} {c1[0] / vg[0]:8.2f}x over CuPy on 1 stream")
    print()
    print("why (voxstream.occupancy):")
    for case, *_, occ, _ in rows:
        print(f"  {case:<10} {occ}")
    print("\ntimelines (32 streams; files in " + args.out + "):")
    for case, *_, tl in rows:
        print(f"  {case:<10} CuPy: {tl['cupy'].summary()}")
        print(f"  {'':<10} vox:  {tl['vox'].summary()}")
    print()

    for (case, grid, c1, c32, v1, v32, e1, e32, occ, tl), (vg, eg) in zip(rows, graphs):
        best_c, best_v = min(c1[0], c32[0]), min(v1[0], v32[0])
        result(case, "cupy1_min_ms", c1[0])
        result(case, "cupy1_median_ms", c1[1])
        result(case, "cupy32_min_ms", c32[0])
        result(case, "cupy32_median_ms", c32[1])
        result(case, "vox1_min_ms", v1[0])
        result(case, "vox1_median_ms", v1[1])
        result(case, "vox32_min_ms", v32[0])
        result(case, "vox32_median_ms", v32[1])
        result(case, "vox_speedup_1_to_32", v1[0] / v32[0])
        result(case, "cupy_speedup_1_to_32", c1[0] / c32[0])
        result(case, "vox_vs_cupy_pct", 100 * (best_v - best_c) / best_c)
        result(case, "vox1_enqueue_us", e1)
        result(case, "vox32_enqueue_us", e32)
        result(case, "vox_graph_min_ms", vg[0])
        result(case, "vox_graph_speedup_over_cupy1", c1[0] / vg[0])
        result(case, "vox_graph_enqueue_us", eg)
        result(case, "blocks_per_launch", occ.blocks_per_launch)
        result(case, "resident_blocks", occ.resident_blocks)
        result(case, "concurrent_launches", occ.concurrent_launches)
        result(case, "cupy32_concurrency", tl["cupy"].concurrency)
        result(case, "vox32_concurrency", tl["vox"].concurrency)
        result(case, "vox32_max_at_once", tl["vox"].max_concurrent)
    print(f"seed_streams.py: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
