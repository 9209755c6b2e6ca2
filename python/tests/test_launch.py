"""launch_per_slice, occupancy and voxstream.profile on the host backend: the kernel is a Python
callable run per slice with numpy views, under the same run_op (ledger) as on CUDA. The pure
occupancy report and the one-timeline rule are tested on both backends."""
import json

import numpy as np
import pytest

import voxstream as vs
from conftest import random_array

host_only = pytest.mark.skipif(vs.backend != "host", reason="host backend (callables, op slabs)")


def scale_slice(src, dst, factor, z):
    dst[...] = src * factor + z


@host_only
def test_slices_get_views_scalars_and_index(streams):
    a = random_array((9, 5, 6), "float32")
    out = np.zeros_like(a)
    n = vs.launch_per_slice(scale_slice, (1, 1), (32, 32),
                            [vs.slice_ptr(vs.read_access(a)), vs.slice_ptr(vs.write_access(out)),
                             np.float32(2.0), vs.slice_index], streams=streams)
    assert n == 9
    assert np.array_equal(out, a * np.float32(2.0) + np.arange(9, dtype=np.float32)[:, None, None])


@host_only
def test_each_slice_once_and_argument_kinds(streams):
    v = vs.zeros((12, 3, 4), "int32", streams)
    seen = []

    def k(s, whole, z, z32, i, f, b):
        assert s.shape == (3, 4) and whole.shape == (12, 3, 4)
        assert isinstance(z, int) and z == z32
        assert (i, f, b) == (7, 0.5, True)
        s[...] = z
        seen.append(z)

    wa = vs.write_access(v)
    vs.launch_per_slice(k, 1, 1, [vs.slice_ptr(wa), wa, vs.slice_index, vs.slice_index32, 7, 0.5,
                                  True])
    assert sorted(seen) == list(range(12))
    assert np.array_equal(v.to_numpy(), np.broadcast_to(np.arange(12)[:, None, None], (12, 3, 4)))


@host_only
def test_read_views_are_read_only(streams):
    a = random_array((4, 3, 3), "uint8")
    before = a.copy()

    def k(src):
        src[0, 0] = 1

    with pytest.raises(ValueError, match="read-only"):
        vs.launch_per_slice(k, 1, 1, [vs.slice_ptr(vs.read_access(a))], streams=streams)
    assert np.array_equal(a, before)


@host_only
def test_ordered_with_other_ops_by_the_ledger(streams):
    # fill -> kernel (reads the fill, adds z) -> add: each step sees the one before.
    v = vs.zeros((16, 8, 8), "float32", streams)
    out = vs.zeros((16, 8, 8), "float32", streams)
    vs.fill(v, 3.0)

    def k(src, dst, z):
        dst[...] = src + z

    vs.launch_per_slice(k, (1, 1), (8, 8), [vs.slice_ptr(vs.read_access(v)),
                                            vs.slice_ptr(vs.write_access(out)), vs.slice_index])
    r = vs.add(out, 1.0)
    want = 4.0 + np.arange(16, dtype=np.float32)[:, None, None]
    assert np.array_equal(r.to_numpy(), np.broadcast_to(want, (16, 8, 8)))


@host_only
def test_periodic_halo_read(streams):
    # A kernel with periodic z borders: out[z] = v[z - 1] + v[z + 1], the indices wrapping
    # around; it reads the whole volume (read_access on its own) with a periodic halo of 1.
    v = vs.asvolume(random_array((9, 4, 5), "float32"), streams, copy=True)
    out = vs.zeros((9, 4, 5), "float32", streams)
    src = vs.read_access(v, halo=1, periodic=True)
    assert "periodic=True" in repr(src) and "halo=1" in repr(src)

    def k(whole, dst, z):
        n = whole.shape[0]
        dst[...] = whole[(z - 1) % n] + whole[(z + 1) % n]

    vs.launch_per_slice(k, 1, 1, [src, vs.slice_ptr(vs.write_access(out)), vs.slice_index])
    a = v.to_numpy()
    assert np.array_equal(out.to_numpy(), np.roll(a, 1, axis=0) + np.roll(a, -1, axis=0))


@host_only
def test_slabs_on_the_sets_streams(streams):
    # The timeline shows the launch's slabs on the set's streams, each slab once.
    s = vs.StreamSet(4)
    v = vs.zeros((32, 4, 4), "float32", s)
    with vs.profile.timeline(streams=s) as t:
        vs.launch_per_slice(lambda d: None, 1, 1, [vs.slice_ptr(vs.write_access(v))])
    recs = [r for r in t.records() if r.name == "voxstream.launch_per_slice"]
    assert recs and all(r.kind == "op" for r in recs)
    assert {r.stream_index for r in recs} <= {0, 1, 2, 3}
    assert len({r.stream_index for r in recs}) == len(recs)  # one slab per stream


@host_only
def test_errors_before_anything_runs(streams):
    a = random_array((4, 3, 3), "float32")
    b = random_array((5, 3, 3), "float32")
    calls = []

    def k(*args):
        calls.append(args)

    with pytest.raises(ValueError, match="at least one"):
        vs.launch_per_slice(k, 1, 1, [1, 2.0], streams=streams)
    with pytest.raises(ValueError, match="extents differ"):
        vs.launch_per_slice(k, 1, 1, [vs.slice_ptr(vs.read_access(a)),
                                      vs.slice_ptr(vs.write_access(b))], streams=streams)
    with pytest.raises(TypeError, match="argument 1"):
        vs.launch_per_slice(k, 1, 1, [vs.slice_ptr(vs.read_access(a)), "x"], streams=streams)
    with pytest.raises(TypeError, match="access"):
        vs.slice_ptr(a)
    with pytest.raises(ValueError, match="whole-volume"):
        vs.slice_ptr(vs.read_all(a))
    with pytest.raises(ValueError, match="grid"):
        vs.launch_per_slice(k, (0, 1), 1, [vs.slice_ptr(vs.read_access(a))], streams=streams)
    with pytest.raises(ValueError, match="halo"):
        vs.read_access(a, halo=-1)
    with pytest.raises(TypeError, match="callable"):
        vs.launch_per_slice(12345, 1, 1, [vs.slice_ptr(vs.read_access(a))], streams=streams)
    # A halo read of the volume the launch writes: the ledger refuses it.
    with pytest.raises(ValueError):
        vs.launch_per_slice(k, 1, 1, [vs.slice_ptr(vs.read_access(a, halo=1)),
                                      vs.slice_ptr(vs.write_access(a))], streams=streams)
    assert calls == []


@host_only
def test_kernel_exception_propagates(streams):
    a = random_array((4, 3, 3), "float32")

    def k(src, z):
        if z == 2:
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        vs.launch_per_slice(k, 1, 1, [vs.slice_ptr(vs.read_access(a)), vs.slice_index],
                            streams=streams)
    # The set still works afterwards.
    out = np.zeros_like(a)
    vs.launch_per_slice(scale_slice, 1, 1, [vs.slice_ptr(vs.read_access(a)),
                                            vs.slice_ptr(vs.write_access(out)), 1.0,
                                            vs.slice_index], streams=streams)
    assert np.array_equal(out, a + np.arange(4, dtype=np.float32)[:, None, None])


def test_occupancy_report_explains():
    fill = vs.occupancy_report(2, 132, 1024)
    assert isinstance(fill, vs.OccupancyReport)
    assert fill.fills_device and fill.resident_blocks == 264 and fill.concurrent_launches == 1
    assert str(fill) == ("1024 blocks per launch, 264 fit at once: each launch fills the GPU, so "
                         "launches cannot overlap")
    small = vs.occupancy_report(2, 132, 16)
    assert not small.fills_device and small.concurrent_launches == 16
    assert "up to 16 launches can run at the same time" in str(small)
    assert "resident kernels" in small.explain() or small.concurrent_launches < 128
    with pytest.raises(ValueError):
        vs.occupancy_report(2, 132, 0)


@host_only
def test_occupancy_needs_cuda():
    with pytest.raises(RuntimeError, match="host backend"):
        vs.occupancy(lambda: None, (32, 32), (32, 32))


@host_only
def test_slice_graph_stats_need_cuda(streams):
    from voxstream import _voxstream
    with pytest.raises(RuntimeError, match="host backend"):
        _voxstream._testing.slice_graph_stats(streams)


@host_only
def test_timeline_files_and_stats(tmp_path, streams):
    trace, svg = tmp_path / "t.json", tmp_path / "t.svg"
    with vs.profile.timeline(trace, svg=svg, streams=streams, title="pytest") as t:
        assert t.recording
        v = vs.zeros((8, 16, 16), "float32", streams)
        vs.gaussian_filter(v, 1.0)
    assert not t.recording
    st = t.stats()
    assert st.kernels >= 1 and st.host_ops and st.span_ns > 0
    assert "op slab" in st.summary()
    names = {r.name for r in t.records()}
    assert any("gaussian" in n for n in names)
    doc = json.loads(trace.read_text())
    assert doc["traceEvents"]
    text = svg.read_text()
    assert text.startswith("<svg") or "<svg" in text[:200]
    assert "pytest" in text
    # The pure functions over the same records.
    assert vs.profile.compute_stats(t.records()).kernels == st.kernels
    assert "traceEvents" in vs.profile.chrome_trace_json(t.records())
    assert "<svg" in vs.profile.timeline_svg(t.records(), "again")


def test_one_timeline_at_a_time():
    with vs.profile.timeline():
        with pytest.raises(ValueError, match="already recording"):
            vs.profile.timeline().start()
    with vs.profile.timeline() as t:  # the first one closed: a new one may open
        pass
    assert isinstance(t.records(), list)


@host_only
def test_sync_audit_is_cuda_only():
    assert not vs.profile.has_sync_audit
    with pytest.raises(RuntimeError, match="not available on the host backend"):
        with vs.profile.sync_audit():
            pass
