"""CuPy interop on the cuda backend (skipped without CuPy or on the host backend): zero-copy
exchange, op results equal to the C++ ops, launch_per_slice of a cupy.RawKernel, occupancy, the
sync audit of the interop path, a timeline that sees CuPy's kernels, and a CUDA graph captured
in global mode around the interop path."""
import numpy as np
import pytest

import voxstream as vs
from voxstream import _voxstream
from conftest import random_array

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.skipif(vs.backend != "cuda", reason="cuda-backend tests (CuPy memory)")

SCALE_SRC = r"""
extern "C" __global__ void scale_slice(const float* in, float* out, unsigned long long nx,
                                       unsigned long long ny, unsigned long long z, float f) {
  const unsigned long long x = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long y = blockIdx.y * (unsigned long long)blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const unsigned long long i = y * nx + x;   // in and out point at slice z
  out[i] = in[i] * f + (float)z;
}
extern "C" __global__ void scale_whole(const float* in, float* out, int nx, int ny, int z,
                                       float f) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const long long i = ((long long)z * ny + y) * nx + x;   // whole-volume pointers
  out[i] = in[i] * f + (float)z;
}
"""


@pytest.fixture(scope="module")
def kernels():
    mod = cupy.RawModule(code=SCALE_SRC)
    return mod.get_function("scale_slice"), mod.get_function("scale_whole")


def reference(a, f):
    z = np.arange(a.shape[0], dtype=np.float32)[:, None, None]
    return a * np.float32(f) + z


def filter_reference(name, a, param_xyz, out_dtype=None):
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, out_dtype or a.dtype)
    _voxstream._testing.filter_reference(name, a.ctypes.data, out.ctypes.data, a.shape,
                                         a.dtype.name, tuple(float(p) for p in param_xyz),
                                         vs._MODES["reflect"], 0.0, 4.0, 3)
    return out


def test_zero_copy_both_ways(streams):
    x = cupy.asarray(random_array((6, 17, 19), "float32"))
    v = vs.asvolume(x, streams)
    assert v.data_ptr == x.data.ptr and v.external
    y = cupy.asarray(v)  # __cuda_array_interface__
    assert y.data.ptr == x.data.ptr
    w = cupy.from_dlpack(v)
    assert w.data.ptr == x.data.ptr
    vs.fill(v, 2.5)
    streams.synchronize()
    assert bool((x == 2.5).all())


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64"])
def test_ops_on_cupy_equal_the_cpp_ops(streams, dtype):
    a = random_array((9, 31, 33), dtype, 3)
    x = cupy.asarray(a)
    out_dtype = np.float64 if dtype == "float64" else np.float32
    got = vs.gaussian_filter(x, 1.5, out=cupy.empty(a.shape, out_dtype), streams=streams)
    want = filter_reference("gaussian", a, (1.5, 1.5, 1.5), out_dtype)
    assert np.array_equal(cupy.asnumpy(got), want)
    m = vs.median_filter(x, 3, streams=streams)
    assert np.array_equal(m.to_numpy(), filter_reference("median", a, (3, 3, 3)))


@pytest.mark.parametrize("graph", [True, False])  # the default: the cached graph; direct
def test_launch_per_slice_raw_kernel(streams, kernels, graph):
    per_slice, whole = kernels
    a = random_array((40, 37, 45), "float32", 5)
    x = cupy.asarray(a)
    out = cupy.full(a.shape, np.nan, np.float32)
    nz, ny, nx = a.shape
    grid, block = ((nx + 15) // 16, (ny + 15) // 16), (16, 16)
    n = vs.launch_per_slice(per_slice, grid, block,
                            [vs.slice_ptr(vs.read_access(x)), vs.slice_ptr(vs.write_access(out)),
                             np.uint64(nx), np.uint64(ny), vs.slice_index, np.float32(2.0)],
                            streams=streams, graph=graph)
    assert n == nz
    # f = 2: the product is exact, so a contracted multiply-add rounds as numpy does.
    assert np.array_equal(cupy.asnumpy(out), reference(a, 2.0))
    # Whole-volume pointers and a 32-bit slice index, into a Volume, then an op after it.
    v = vs.zeros(a.shape, "float32", streams)
    vs.launch_per_slice(whole, grid, block,
                        [vs.read_access(x), vs.write_access(v), np.int32(nx), np.int32(ny),
                         vs.slice_index32, np.float32(-1.0)], graph=graph)
    assert np.array_equal(v.to_numpy(), reference(a, -1.0))


def test_launch_per_slice_graph(kernels):
    # graph=True: the set's cached graph of per-slice nodes, built once, then updated.
    per_slice, _ = kernels
    s = vs.StreamSet(4)
    a = random_array((40, 24, 40), "float32", 6)
    x = cupy.asarray(a)
    nz, ny, nx = a.shape
    outs = [vs.zeros(a.shape, "float32", s) for _ in range(2)]
    stats = _voxstream._testing.slice_graph_stats
    before = stats(s)["launches"]
    for rep in range(3):
        for out, f in zip(outs, (2.0, 0.5)):
            vs.fill(out, np.nan)
            n = vs.launch_per_slice(per_slice, ((nx + 15) // 16, (ny + 15) // 16), (16, 16),
                                    [vs.slice_ptr(vs.read_access(x)),
                                     vs.slice_ptr(vs.write_access(out)), np.uint64(nx),
                                     np.uint64(ny), vs.slice_index, np.float32(f)],
                                    streams=s, graph=True)
            assert n == nz
            assert np.array_equal(out.to_numpy(), reference(a, f)), (rep, f)
    # Each call was one launch of the cached graph, built once and updated for new arguments.
    st = stats(s)
    assert st["launches"] - before == 6, st
    assert st["built"] == 1 and st["cached"] == 1, st
    assert st["updates"] == 5, st  # every call after the first had new arguments
    # graph=False: direct launches, no graph launch.
    out = outs[0]
    vs.launch_per_slice(per_slice, ((nx + 15) // 16, (ny + 15) // 16), (16, 16),
                        [vs.slice_ptr(vs.read_access(x)), vs.slice_ptr(vs.write_access(out)),
                         np.uint64(nx), np.uint64(ny), vs.slice_index, np.float32(4.0)],
                        streams=s, graph=False)
    # f = 4: exact products (a contracted multiply-add would round 3.0's differently from numpy).
    assert np.array_equal(out.to_numpy(), reference(a, 4.0))
    assert stats(s)["launches"] == st["launches"]
    # Fewer than 8 slices: the direct launches, same result.
    small = cupy.asarray(a[:4])
    out = cupy.empty_like(small)
    vs.launch_per_slice(per_slice, ((nx + 15) // 16, (ny + 15) // 16), (16, 16),
                        [vs.slice_ptr(vs.read_access(small)), vs.slice_ptr(vs.write_access(out)),
                         np.uint64(nx), np.uint64(ny), vs.slice_index, np.float32(2.0)],
                        streams=s, graph=True)
    assert np.array_equal(cupy.asnumpy(out), reference(a[:4], 2.0))
    assert stats(s)["launches"] == st["launches"]


def test_launch_checks_the_kernels_parameters(streams, kernels):
    per_slice, _ = kernels
    x = cupy.zeros((4, 8, 8), np.float32)
    with pytest.raises(ValueError, match="bytes"):  # a Python float is float64, not float
        vs.launch_per_slice(per_slice, 1, (8, 8),
                            [vs.slice_ptr(vs.read_access(x)), vs.slice_ptr(vs.write_access(x)),
                             8, 8, vs.slice_index, 3.0], streams=streams)
    with pytest.raises(ValueError, match="arguments"):
        vs.launch_per_slice(per_slice, 1, (8, 8), [vs.slice_ptr(vs.write_access(x))],
                            streams=streams)


def test_launch_ordered_after_and_before_other_ops(kernels):
    per_slice, _ = kernels
    s = vs.StreamSet(8)
    v = vs.zeros((64, 64, 64), "float32", s)
    out = vs.zeros((64, 64, 64), "float32", s)
    for it in range(3):
        vs.fill(v, float(it))
        vs.launch_per_slice(per_slice, (4, 4), (16, 16),
                            [vs.slice_ptr(vs.read_access(v)), vs.slice_ptr(vs.write_access(out)),
                             np.uint64(64), np.uint64(64), vs.slice_index, np.float32(2.0)])
        got = vs.max(out).get()
        assert got == 2.0 * it + 63


def test_occupancy_of_a_raw_kernel(kernels):
    per_slice, _ = kernels
    big = vs.occupancy(per_slice, (64, 64), (16, 16))
    small = vs.occupancy(per_slice, (1, 1), (32, 32))
    assert big.sm_count > 0 and big.blocks_per_launch == 4096
    assert big.fills_device and "cannot overlap" in str(big)
    assert small.concurrent_launches > 1 and "can run at the same time" in str(small)


def test_sync_audit_interop_path_is_clean(kernels):
    per_slice, _ = kernels
    s = vs.StreamSet(4)
    a = random_array((16, 64, 64), "float32", 7)
    x = cupy.asarray(a)
    y = cupy.empty_like(x)
    z = cupy.empty_like(x)
    per_slice.kernel  # compile and load before the audit  # noqa: B018
    warm = cupy.empty_like(x)
    warm *= 2  # CuPy's kernel compiled before the audit
    cupy.cuda.Device().synchronize()
    s.synchronize()
    with s:  # CuPy's current stream: stream 0 of the set (non-blocking)
        with vs.profile.sync_audit() as audit:
            vs.gaussian_filter(x, 1.0, out=y, streams=s)
            vs.launch_per_slice(per_slice, (4, 4), (16, 16),
                                [vs.slice_ptr(vs.read_access(y)),
                                 vs.slice_ptr(vs.write_access(z)), np.uint64(64), np.uint64(64),
                                 vs.slice_index, np.float32(1.0)], streams=s)
            v = vs.asvolume(z, s)
            w = cupy.from_dlpack(v)  # (cupy.asarray would synchronise: CAI v3 sync)
            w *= 2  # CuPy on the set's stream 0
    cupy.cuda.Device().synchronize()
    assert audit.synchronising_calls() == 0, audit.report()
    assert audit.default_stream_calls() == 0, audit.report()
    want = 2 * (filter_reference("gaussian", a, (1.0, 1.0, 1.0), np.float32) +
                np.arange(16, dtype=np.float32)[:, None, None])
    assert np.allclose(cupy.asnumpy(z), want, rtol=0, atol=0)


def test_timeline_sees_cupy_and_voxstream(tmp_path, kernels):
    per_slice, _ = kernels
    s = vs.StreamSet(4)
    x = cupy.ones((32, 32, 32), np.float32)
    out = cupy.empty_like(x)
    with vs.profile.timeline(tmp_path / "t.json", svg=tmp_path / "t.svg", streams=s) as t:
        cupy.sqrt(x)  # a CuPy kernel
        vs.launch_per_slice(per_slice, (2, 2), (16, 16),
                            [vs.slice_ptr(vs.read_access(x)), vs.slice_ptr(vs.write_access(out)),
                             np.uint64(32), np.uint64(32), vs.slice_index, np.float32(1.0)],
                            streams=s)
    names = [r.name for r in t.records() if r.kind == "kernel"]
    assert sum("scale_slice" in n for n in names) == 32
    assert any("sqrt" in n for n in names)
    assert t.stats().kernels >= 33
    assert (tmp_path / "t.json").stat().st_size > 0 and (tmp_path / "t.svg").stat().st_size > 0


def _capture(s, body):
    """Runs body() under a global-mode capture of stream 0 of set ``s``; returns the graph."""
    stream = cupy.cuda.ExternalStream(s.stream_ptr(0))
    if not hasattr(stream, "begin_capture"):
        pytest.skip("this CuPy has no Stream.begin_capture")
    with stream:
        stream.begin_capture(mode=cupy.cuda.runtime.streamCaptureModeGlobal)
        try:
            body()
        finally:
            graph = stream.end_capture()
    return stream, graph


def _capture_case(kernels, wrap_inside):
    per_slice, _ = kernels
    s = vs.StreamSet(1)  # one stream: all of the set's work is on the captured stream
    a = random_array((8, 32, 32), "float32", 9)
    x = cupy.asarray(a)
    y = cupy.empty_like(x)
    z = cupy.empty_like(x)
    per_slice.kernel  # noqa: B018
    cupy.cuda.Device().synchronize()
    s.synchronize()
    if wrap_inside:
        ins = (x, y, z)
    else:  # wrapped (zero-copy) before the capture
        ins = tuple(vs.asvolume(t, s) for t in (x, y, z))
        s.synchronize()

    def body():
        vs.gaussian_filter(ins[0], 1.0, out=ins[1], streams=s)
        vs.launch_per_slice(per_slice, (2, 2), (16, 16),
                            [vs.slice_ptr(vs.read_access(ins[1])),
                             vs.slice_ptr(vs.write_access(ins[2])), np.uint64(32),
                             np.uint64(32), vs.slice_index, np.float32(0.5)], streams=s)

    stream, graph = _capture(s, body)
    y.fill(0)
    z.fill(np.nan)
    cupy.cuda.Device().synchronize()
    graph.launch(stream)
    stream.synchronize()
    g = filter_reference("gaussian", a, (1.0, 1.0, 1.0), np.float32)
    assert np.array_equal(cupy.asnumpy(y), g)
    assert np.array_equal(cupy.asnumpy(z), reference(g, 0.5))


def test_graph_capture_global_mode_on_volumes(kernels):
    _capture_case(kernels, wrap_inside=False)


def test_graph_capture_wrapping_inside_is_refused_and_leaves_the_capture_valid(kernels):
    # Wrapping a CuPy array records events and queues a release on the set's home stream: refused
    # with a clear error while that stream is captured, before anything is enqueued, so the
    # capture stays valid and its graph (empty here) still ends and launches.
    s = vs.StreamSet(1)
    x = cupy.asarray(random_array((4, 16, 16), "float32", 3))
    s.synchronize()
    cupy.cuda.Device().synchronize()
    errors = []

    def body():
        try:
            vs.gaussian_filter(x, 1.0, streams=s)
        except ValueError as e:
            errors.append(str(e))

    stream, graph = _capture(s, body)
    assert len(errors) == 1 and "before the capture begins" in errors[0]
    graph.launch(stream)
    stream.synchronize()


def test_stream_process_through_device_slabs(tmp_path):
    # numpy source and sink (host memory) streamed through device slabs with a Python pipeline:
    # equal to the whole-volume op; then file to file; then an exception from the callback.
    s = vs.StreamSet(4)
    a = random_array((37, 40, 33), "float32", 12)
    out = np.full(a.shape, np.nan, np.float32)

    def gauss(streams, src, dst, info):
        assert streams is s
        vs.gaussian_filter(src, 1.0, out=dst, truncate=3.0)

    rep = vs.stream_process(a, out, gauss, slab=8, halo=3, streams=s)
    want = vs.gaussian_filter(cupy.asarray(a), 1.0, truncate=3.0, streams=s).to_numpy()
    assert np.array_equal(out, want)
    assert rep["slabs"] >= 5 and rep["bytes_uploaded"] == a.nbytes
    assert rep["bytes_downloaded"] == out.nbytes

    src, dst = tmp_path / "in.nrrd", tmp_path / "out.nrrd"
    vs.write(src, vs.asvolume(cupy.asarray(a), s))

    def thr(streams, x, y, info):
        vs.threshold(x, 10, out=y)

    vs.stream_process(src, dst, thr, slab=8, dtype="uint8", streams=s)
    assert np.array_equal(vs.read(dst, s).to_numpy(), (a > 10).astype(np.uint8))

    never = tmp_path / "never.nrrd"

    def boom(streams, x, y, info):
        if info.index == 1:
            raise KeyError("slab 1")
        vs.copy(x, out=y)

    with pytest.raises(KeyError, match="slab 1"):
        vs.stream_process(a, never, boom, slab=8, streams=s)
    assert not never.exists()
