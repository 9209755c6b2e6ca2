"""Volume, StreamSet and the memory exchange (host backend: numpy, zero-copy)."""
import gc

import numpy as np
import pytest

import voxstream as vs
from conftest import DTYPES, random_array

pytestmark = pytest.mark.skipif(vs.backend != "host", reason="host-backend tests (numpy memory)")


def test_backend_and_streamset():
    s = vs.StreamSet(5)
    assert len(s) == 5
    s.synchronize()
    assert "StreamSet(5)" in repr(s)
    with s:  # a no-op context on the host backend (CuPy's current stream on CUDA)
        pass
    with pytest.raises(ValueError):
        vs.StreamSet(0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_volume_every_dtype(streams, dtype):
    v = vs.Volume(streams, (4, 5, 6), dtype)
    assert v.shape == (4, 5, 6)
    assert v.dtype == np.dtype(dtype)
    assert v.nbytes == 4 * 5 * 6 * np.dtype(dtype).itemsize
    assert not v.external
    assert np.array_equal(v.to_numpy(), np.zeros((4, 5, 6), dtype))
    f = vs.full((2, 3, 4), 7, dtype, streams)
    assert np.array_equal(np.asarray(f), np.full((2, 3, 4), 7, dtype))


def test_spacing_and_origin(streams):
    v = vs.zeros((2, 3, 4), streams=streams)
    assert v.spacing == (1.0, 1.0, 1.0) and v.origin == (0.0, 0.0, 0.0)
    v.spacing = (2.5, 0.5, 0.25)  # z, y, x
    v.origin = (-1.0, 2.0, 3.0)
    assert v.spacing == (2.5, 0.5, 0.25) and v.origin == (-1.0, 2.0, 3.0)
    with pytest.raises(ValueError):
        v.spacing = (0.0, 1.0, 1.0)
    assert v.spacing == (2.5, 0.5, 0.25)


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_array_is_zero_copy_both_ways(streams, dtype):
    a = random_array((3, 4, 5), dtype)
    v = vs.Volume.from_array(streams, a)
    assert v.external and v.data_ptr == a.ctypes.data
    assert v.shape == a.shape and v.dtype == a.dtype
    b = np.asarray(v)  # __array_interface__
    assert b.ctypes.data == a.ctypes.data and b.dtype == a.dtype and b.shape == a.shape
    c = np.from_dlpack(v)  # __dlpack__
    assert c.ctypes.data == a.ctypes.data
    assert v.__dlpack_device__() == (1, 0)
    assert not hasattr(v, "__cuda_array_interface__")
    assert np.array_equal(v.to_numpy(), a)
    assert vs.asvolume(v) is v


def test_from_dlpack_and_array_ops_in_place(streams):
    a = random_array((4, 4, 4), "int16")
    v = vs.from_dlpack(a, streams)
    assert v.data_ptr == a.ctypes.data
    vs.fill(v, 9)
    assert np.all(a == 9)
    vs.fill(a, -3)  # an array used as the op's output in place
    assert np.all(a == -3)


def test_lower_rank_arrays_become_3d(streams):
    a = random_array((6, 7), "float32")
    v = vs.asvolume(a, streams)
    assert v.shape == (1, 6, 7) and v.data_ptr == a.ctypes.data
    assert vs.asvolume(np.arange(5, dtype=np.uint8), streams).shape == (1, 1, 5)


def test_volume_keeps_wrapped_array_alive(streams):
    a = random_array((3, 3, 3), "float64")
    expect = a.copy()
    v = vs.asvolume(a, streams)
    del a
    gc.collect()
    assert np.array_equal(v.to_numpy(), expect)
    e = np.asarray(v)
    del v
    gc.collect()
    assert np.array_equal(e, expect)  # the array view keeps the volume alive


def test_non_contiguous_or_other_dtypes(streams):
    a = random_array((4, 6, 8), "float32")
    s = a[:, ::2, :]
    v = vs.asvolume(s, streams)  # copied
    assert v.data_ptr != a.ctypes.data and np.array_equal(v.to_numpy(), s)
    with pytest.raises(ValueError):
        vs.asvolume(s, streams, copy=False)
    with pytest.raises(ValueError, match="unsupported dtype"):
        vs.asvolume(np.zeros((2, 2, 2), np.int64), streams)
    with pytest.raises(ValueError, match="unsupported dtype"):
        vs.from_dlpack(np.zeros((2, 2, 2), np.int8), streams)
    with pytest.raises(ValueError):
        vs.asvolume(np.zeros((2, 2, 2, 2), np.float32), streams)
    ro = np.zeros((2, 2, 2), np.float32)
    ro.flags.writeable = False
    assert np.array_equal(vs.copy(ro).to_numpy(), ro)  # read-only input: fine
    with pytest.raises(ValueError, match="read-only"):
        vs.copy(a[:2, :2, :2].copy(), out=ro)


def test_errors_map_to_python_exceptions(streams):
    with pytest.raises(ValueError, match="voxstream"):
        vs.zeros((0, 3, 3), streams=streams)
    with pytest.raises(MemoryError, match="voxstream"):
        vs.zeros((2 ** 14, 2 ** 20, 2 ** 20), "float32", streams)
    v = vs.zeros((2, 2, 2), "float32", streams)
    with pytest.raises(ValueError, match="out has dtype"):
        vs.copy(v, out=vs.zeros((2, 2, 2), "int32", streams))
    with pytest.raises(ValueError):
        vs.copy(v, out=vs.zeros((2, 2, 3), "float32", streams))
    with pytest.raises(ValueError, match="mode"):
        vs.uniform_filter(v, 3, mode="mirror")
    with pytest.raises(BufferError):
        v.__dlpack__(copy=True)
