"""voxstream.stream_process with a Python pipeline (host backend): results equal to the
whole-volume ops, slab geometry, files, discard, progress, errors and their clean-up."""
import os

import numpy as np
import pytest

import voxstream as vs
from conftest import random_array

pytestmark = pytest.mark.skipif(vs.backend != "host", reason="host-backend tests (numpy memory)")

SHAPE = (23, 12, 13)


def gauss(streams, src, dst, info):
    vs.gaussian_filter(src, 1.0, out=dst, truncate=3.0)  # z radius 3


@pytest.mark.parametrize("slab,ramp", [(5, True), (4, False), (64, True)])
def test_array_to_array_equals_whole_volume(streams, slab, ramp):
    a = random_array(SHAPE, "float32", 1)
    out = np.full(SHAPE, np.nan, np.float32)
    rep = vs.stream_process(a, out, gauss, slab=slab, halo=3, ramp=ramp, streams=streams)
    want = np.asarray(vs.gaussian_filter(a, 1.0, truncate=3.0))
    assert np.array_equal(out, want)
    assert rep["slabs"] >= 1 and rep["bytes_uploaded"] == a.nbytes
    assert rep["bytes_downloaded"] == out.nbytes


def test_slab_info_and_dtype(streams):
    a = random_array(SHAPE, "uint16", 2)
    out = np.zeros(SHAPE, np.float32)
    seen = []

    def pipe(s, src, dst, info):
        assert s is streams
        assert src.dtype == np.uint16 and dst.dtype == np.float32
        assert src.shape == dst.shape == (info.in_z1 - info.in_z0,) + SHAPE[1:]
        assert info.depth == info.z1 - info.z0
        assert info.halo_lo == info.z0 - info.in_z0 and info.halo_hi == info.in_z1 - info.z1
        seen.append((info.index, info.count, info.z0, info.z1))
        vs.astype(src, "float32", out=dst)
        vs.multiply(dst, 2.0, out=dst)

    progress = []
    vs.stream_process(a, out, pipe, slab=6, halo=2, streams=streams,
                      progress=lambda d, t: progress.append((d, t)))
    assert np.array_equal(out, a.astype(np.float32) * 2)
    assert [s[0] for s in seen] == list(range(len(seen))) and seen[0][1] == len(seen)
    assert seen[0][2] == 0 and seen[-1][3] == SHAPE[0]
    assert all(seen[k][3] == seen[k + 1][2] for k in range(len(seen) - 1))
    assert progress[-1] == (len(seen), len(seen)) and len(progress) == len(seen)
    assert [tuple(s[2:]) for s in seen] == vs.slab_ranges(SHAPE[0], 6)


def test_file_to_file_and_discard(tmp_path, streams):
    a = random_array(SHAPE, "int16", 3)
    src = tmp_path / "in.nrrd"
    dst = tmp_path / "out.nrrd"
    vs.write(src, a)

    def pipe(s, x, y, info):
        vs.threshold(x, 10, out=y)

    vs.stream_process(src, dst, pipe, slab=8, dtype="uint8", compress=True, streams=streams)
    info = vs.probe(dst)
    assert info["shape"] == SHAPE and info["dtype"] == "uint8" and info["compressed"]
    assert np.array_equal(vs.read(dst).to_numpy(), (a > 10).astype(np.uint8))
    # no sink: nothing downloaded; the callback keeps what it needs (here, on the host)
    maxima = []

    def keep(s, x, y, info):
        own = vs.crop(x, (info.halo_lo, 0, 0), (info.depth,) + SHAPE[1:])
        maxima.append(vs.max(own))

    rep = vs.stream_process(str(src), None, keep, slab=5, halo=1)
    assert rep["bytes_downloaded"] == 0
    assert max(m.get() for m in maxima) == a.max()


class Boom(Exception):
    pass


@pytest.mark.parametrize("fail_at", [0, 1])
def test_callback_exception_propagates_and_cleans_up(tmp_path, streams, fail_at):
    a = random_array(SHAPE, "float32", 4)
    dst = tmp_path / "never.nrrd"
    calls = []

    def pipe(s, x, y, info):
        calls.append(info.index)
        if info.index == fail_at:
            raise Boom(f"slab {fail_at}")
        vs.copy(x, out=y)

    with pytest.raises(Boom, match=f"slab {fail_at}"):
        vs.stream_process(a, dst, pipe, slab=5, streams=streams)
    assert calls == list(range(fail_at + 1))
    assert not dst.exists() and os.listdir(tmp_path) == []  # no partial or temporary file

    def stop(done, total):
        raise Boom("progress")

    with pytest.raises(Boom, match="progress"):
        vs.stream_process(a, dst, gauss, slab=5, streams=streams, progress=stop)
    assert os.listdir(tmp_path) == []

    def bad_op(s, x, y, info):
        vs.copy(x, out=vs.zeros(x.shape, "float64"))  # dtype mismatch: ValueError from C++

    out = np.full(SHAPE, 1.5, np.float32)
    with pytest.raises(ValueError, match="out has dtype float64"):
        vs.stream_process(a, out, bad_op, slab=5, streams=streams)
    # the set is usable afterwards
    assert np.array_equal(np.asarray(vs.copy(a, streams=streams)), a)


def test_slab_volumes_are_only_valid_during_the_call(streams):
    a = random_array(SHAPE, "float32", 5)
    kept = []

    def pipe(s, x, y, info):
        kept.append(x)
        vs.copy(x, out=y)

    out = np.zeros(SHAPE, np.float32)
    vs.stream_process(a, out, pipe, slab=10, streams=streams)
    assert np.array_equal(out, a)
    assert kept[0].shape == (0, 0, 0)
    with pytest.raises(ValueError, match="empty"):
        vs.copy(kept[0])


def test_argument_errors(streams):
    a = random_array(SHAPE, "float32", 6)
    with pytest.raises(ValueError, match="not callable"):
        vs.stream_process(a, None, 3)
    with pytest.raises(ValueError, match="float32, float64 or uint8"):
        vs.stream_process(a, None, gauss, dtype="int16")
    with pytest.raises(ValueError, match="shape"):
        vs.stream_process(a, np.zeros((3, 12, 13), np.float32), gauss)
    with pytest.raises(ValueError, match="dtype=float64 but the sink array is float32"):
        vs.stream_process(a, np.zeros(SHAPE, np.float32), gauss, dtype="float64")
    with pytest.raises(ValueError, match="halo"):
        vs.stream_process(a, None, gauss, halo=SHAPE[0] + 1)
    with pytest.raises(OSError):
        vs.stream_process("/nonexistent/in.nrrd", None, gauss)
    with pytest.raises(ValueError, match="file path or a numpy array"):
        vs.stream_process([1, 2, 3], None, gauss)
