#!/usr/bin/env python3
"""The host cost of calling voxstream from Python, per op, against the same op called from C++
(issue 21's target: at most 10 us above C++ per call).

    PYTHONPATH=build/cuda/python python3 bench/python_overhead.py [--n 2000] [--shape 1,8,8]

For each op (fill, copy, add a scalar) on a tiny float32 volume on a set of 1 stream, the same
call is enqueued --n times in a loop from Python (voxstream.fill / copy / add with out=, Volumes
as arguments) and in a C++ loop (voxstream._voxstream._testing.enqueue_loop, the library's
vox::fill / copy / add without the binding), each timed on the host (the median of 5 batches,
the set synchronised before each batch, not inside it). With a CUDA backend and CuPy, also
launch_per_slice of a one-slice volume with a cupy.RawKernel, and the same kernel launched by
CuPy itself, for scale. Prints a table and one line per op:

    RESULT python_overhead <op> python_us=... cpp_us=... overhead_us=... target_met=0|1

On the host backend the ops run on the CPU inside the call, so the numbers there are
informational (run with OMP_NUM_THREADS=1 to keep OpenMP start-up out of them).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

try:
    import numpy as np
    import voxstream as vs
    from voxstream import _voxstream
except ImportError as e:  # pragma: no cover
    print(f"python_overhead: cannot import voxstream ({e}); set PYTHONPATH to the build's "
          "python folder, e.g. PYTHONPATH=build/cuda/python")
    sys.exit(1)

TARGET_US = 10.0


def batches(fn, n, sync, reps=5):
    """Median over `reps` batches of the host µs per call of `fn`, called `n` times a batch."""
    per_call = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per_call.append((time.perf_counter() - t0) * 1e6 / n)
    sync()
    return statistics.median(per_call)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="calls per batch (default 2000)")
    ap.add_argument("--shape", default="1,8,8", help="volume shape z,y,x (default 1,8,8)")
    args = ap.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split(","))
    n = args.n

    s = vs.StreamSet(1)
    a = vs.full(shape, 2.0, "float32", s)
    b = vs.zeros(shape, "float32", s)
    print(f"python_overhead: backend {vs.backend}, volume {shape} float32, 1 stream, "
          f"{n} calls per batch, median of 5 batches")

    py_calls = {
        "fill": lambda: vs.fill(b, 1.0),
        "copy": lambda: vs.copy(a, out=b),
        "add": lambda: vs.add(a, 1.0, out=b),
    }
    rows = []
    for op, fn in py_calls.items():
        fn()  # warm-up (first-call costs)
        _voxstream._testing.enqueue_loop(op, a, b, 10)
        py_us = batches(fn, n, s.synchronize)
        cpp_us = statistics.median(_voxstream._testing.enqueue_loop(op, a, b, n)
                                   for _ in range(5))
        rows.append((op, py_us, cpp_us))

    extra = []
    if vs.backend == "cuda":
        try:
            import cupy  # noqa: PLC0415
        except ImportError:
            cupy = None
        if cupy is not None:
            k = cupy.RawKernel(r"""
extern "C" __global__ void touch(float* p, unsigned long long n) {
  const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}""", "touch")
            nvox = shape[1] * shape[2]
            one = vs.zeros((1,) + shape[1:], "float32", s)
            launch = lambda: vs.launch_per_slice(  # noqa: E731
                k, (nvox + 255) // 256, 256,
                [vs.slice_ptr(vs.write_access(one)), np.uint64(nvox)], streams=s)
            launch()
            lps_us = batches(launch, n, s.synchronize)
            x = cupy.zeros(nvox, np.float32)
            stream = cupy.cuda.Stream(non_blocking=True)

            def cupy_launch():
                k(((nvox + 255) // 256,), (256,), (x, np.uint64(nvox)))

            with stream:  # RawKernel.__call__ launches on CuPy's current stream
                cupy_launch()
                cupy_us = batches(cupy_launch, n, stream.synchronize)
            extra.append(("launch_per_slice", lps_us, cupy_us))

    print(f"{'op':<18} {'python us':>10} {'C++ us':>10} {'overhead us':>12}")
    ok = True
    for op, py_us, cpp_us in rows:
        over = py_us - cpp_us
        met = over <= TARGET_US
        ok = ok and met
        print(f"{op:<18} {py_us:10.2f} {cpp_us:10.2f} {over:12.2f}")
        print(f"RESULT python_overhead {op} python_us={py_us:.3f} cpp_us={cpp_us:.3f} "
              f"overhead_us={over:.3f} target_met={int(met)}")
    for op, py_us, ref_us in extra:
        print(f"{op:<18} {py_us:10.2f} {ref_us:10.2f} {py_us - ref_us:12.2f}   "
              "(reference: the same RawKernel launched by CuPy)")
        print(f"RESULT python_overhead {op} python_us={py_us:.3f} cupy_us={ref_us:.3f} "
              f"overhead_us={py_us - ref_us:.3f}")
    verdict = "met" if ok else "NOT met"
    note = " (host backend: informational)" if vs.backend != "cuda" else ""
    print(f"python_overhead: Python call overhead <= {TARGET_US:g} us above C++: {verdict}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
