"""Ops against numpy / scipy.ndimage and the C++ ops themselves (bit for bit), host backend."""
import numpy as np
import pytest

import voxstream as vs
from voxstream import _voxstream
from conftest import DTYPES, random_array

pytestmark = pytest.mark.skipif(vs.backend != "host", reason="host-backend tests (numpy memory)")

try:
    import scipy.ndimage as ndi
except ImportError:  # the scipy comparisons are skipped, the rest runs
    ndi = None
needs_scipy = pytest.mark.skipif(ndi is None, reason="scipy is not installed")

MODES = ["reflect", "nearest", "constant", "wrap"]
SHAPE = (7, 9, 11)


def real_dtype(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def cpp_filter(name, a, param_xyz, mode="reflect", cval=0.0, truncate=4.0, dims=3, out=None):
    """The C++ op on plain host memory (voxstream._voxstream._testing)."""
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, out or a.dtype)
    _voxstream._testing.filter_reference(name, a.ctypes.data, out.ctypes.data, a.shape,
                                         a.dtype.name, tuple(float(p) for p in param_xyz),
                                         vs._MODES[mode], cval, truncate, dims)
    return out


# --- elementwise ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_fill_threshold(streams, dtype):
    a = random_array(SHAPE, dtype, 1)
    c = vs.copy(a, streams=streams)
    assert c.data_ptr != a.ctypes.data and np.array_equal(c.to_numpy(), a)
    m = vs.threshold(a, 10)
    assert m.dtype == np.uint8 and np.array_equal(np.asarray(m), (a > 10).astype(np.uint8))
    r = vs.threshold_range(a, -20, 30)
    assert np.array_equal(np.asarray(r), ((a >= -20) & (a <= 30)).astype(np.uint8))
    out = np.empty(SHAPE, dtype)
    assert vs.copy(a, out=out) is out  # out= an array: written in place, returned
    assert np.array_equal(out, a)


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_astype_saturates(src, dst):
    a = random_array((3, 4, 5), src, 2)
    got = np.asarray(vs.astype(a, dst))
    d = np.dtype(dst)
    if d.kind == "f":
        want = a.astype(d)
    else:
        info = np.iinfo(d)
        want = np.clip(np.rint(a.astype(np.float64)), info.min, info.max).astype(d)
    assert got.dtype == d and np.array_equal(got, want)


def test_arithmetic(streams):
    a = random_array(SHAPE, "float32", 3)
    b = random_array(SHAPE, "float32", 4)
    assert np.array_equal(np.asarray(vs.add(a, b)), a + b)
    assert np.array_equal(np.asarray(vs.subtract(a, b)), a - b)
    assert np.array_equal(np.asarray(vs.multiply(a, b)), a * b)
    assert np.allclose(np.asarray(vs.multiply(a, 2.5)), a * np.float32(2.5))
    out = np.empty_like(a)
    vs.add(a, 1.0, out=out)
    assert np.array_equal(out, a + np.float32(1))
    with pytest.raises(ValueError, match="second operand"):
        vs.add(a, b.astype(np.float64))


# --- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions(streams, dtype):
    a = random_array(SHAPE, dtype, 5)
    s = vs.sum(a, streams=streams)
    assert isinstance(s, vs.AsyncValue)
    if np.dtype(dtype).kind == "f":
        assert s.get() == pytest.approx(a.sum(dtype=np.float64), rel=1e-12, abs=1e-9)
    else:
        assert s.get() == int(a.sum(dtype=np.int64)) and isinstance(s.get(), int)
    assert s.ready()
    assert vs.min(a).get() == a.min() and vs.max(a).get() == a.max()
    assert vs.minimum(a).get() == a.min() and vs.maximum(a).get() == a.max()
    x = a.astype(np.float64)
    assert vs.mean(a).get() == pytest.approx(x.mean(), rel=1e-12, abs=1e-12)
    assert vs.std(a).get() == pytest.approx(x.std(), rel=1e-10)
    assert vs.variance(a, ddof=1).get() == pytest.approx(x.var(ddof=1), rel=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_histogram(dtype):
    a = random_array(SHAPE, dtype, 6)
    h = vs.histogram(a, -50, 60, 11)
    c = h.get()
    assert c.dtype == np.uint64 and h.bins == 11 and (h.lo, h.hi) == (-50.0, 60.0)
    x = a.astype(np.float64)
    inside = x[(x >= -50) & (x < 60)]
    want = np.minimum(np.floor((inside + 50) * (11 / 110)), 10).astype(int)
    assert np.array_equal(c, np.bincount(want, minlength=11))
    if ndi is not None and np.dtype(dtype).kind == "f":
        assert np.array_equal(c, ndi.histogram(a, -50, 60, 11))
    with pytest.raises(ValueError):
        vs.histogram(a, 1, 1, 4)


# --- filters -------------------------------------------------------------------------------------
@needs_scipy
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64"])
def test_gaussian_matches_scipy_and_cpp(streams, mode, dtype):
    a = random_array(SHAPE, dtype, 7)
    sigma = (1.0, 1.5, 0.8)  # z, y, x
    got = vs.gaussian_filter(a, sigma, mode=mode, cval=2.0, streams=streams)
    assert got.dtype == real_dtype(dtype)
    want = ndi.gaussian_filter(a.astype(np.float64), sigma, mode=mode, cval=2.0)
    tol = 1e-10 if dtype == "float64" else 2e-4
    assert np.allclose(np.asarray(got), want, rtol=tol, atol=tol * 100)
    cpp = cpp_filter("gaussian", a, sigma[::-1], mode, 2.0, out=real_dtype(dtype))
    assert np.array_equal(np.asarray(got), cpp)  # bit for bit


@needs_scipy
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_uniform_matches_scipy_and_cpp(mode, dtype):
    a = random_array(SHAPE, dtype, 8)
    got = np.asarray(vs.uniform_filter(a, (3, 5, 3), mode=mode))
    cpp = cpp_filter("uniform", a, (3, 5, 3), mode)
    assert np.array_equal(got, cpp)
    if np.dtype(dtype).kind == "f":
        want = ndi.uniform_filter(a.astype(np.float64), (3, 5, 3), mode=mode)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-3)
    else:  # scipy rounds after each 1D pass, voxstream once: they may differ by one or two
        want = ndi.uniform_filter(a, (3, 5, 3), mode=mode)
        assert np.max(np.abs(got.astype(np.float64) - want)) <= 2.0


@needs_scipy
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rank_and_morphology_equal_scipy(mode, dtype):
    a = random_array(SHAPE, dtype, 9)
    kw = dict(mode=mode, cval=3.0)
    med = np.asarray(vs.median_filter(a, 3, **kw))
    assert np.array_equal(med, ndi.median_filter(a, 3, **kw))
    assert np.array_equal(med, cpp_filter("median", a, (3, 3, 3), mode, 3.0))
    ero = np.asarray(vs.grey_erosion(a, (3, 1, 5), **kw))
    assert np.array_equal(ero, ndi.grey_erosion(a, size=(3, 1, 5), **kw))
    assert np.array_equal(ero, cpp_filter("grey_erosion", a, (5, 1, 3), mode, 3.0))
    dil = np.asarray(vs.grey_dilation(a, 3, **kw))
    assert np.array_equal(dil, ndi.grey_dilation(a, size=3, **kw))
    rk = np.asarray(vs.rank_filter(a, 4, (1, 3, 3), **kw))
    assert np.array_equal(rk, ndi.rank_filter(a, 4, size=(1, 3, 3), **kw))
    pc = np.asarray(vs.percentile_filter(a, 75, 3, **kw))
    assert np.array_equal(pc, ndi.percentile_filter(a, 75, size=3, **kw))


@needs_scipy
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", ["uint16", "float32", "float64"])
def test_sobel_and_gradient_magnitude(axis, dtype):
    a = random_array(SHAPE, dtype, 10)
    got = np.asarray(vs.sobel(a, axis))
    want = ndi.sobel(a.astype(np.float64), axis)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-2)
    vox_axis = 2 - (axis % 3)
    assert np.array_equal(got, cpp_filter("sobel", a, (vox_axis, 0, 0), out=real_dtype(dtype)))
    gm = np.asarray(vs.gradient_magnitude(a))
    want = ndi.generic_gradient_magnitude(a.astype(np.float64), ndi.sobel)
    assert np.allclose(gm, want, rtol=1e-5, atol=1e-2)
    assert np.array_equal(gm, cpp_filter("gradient_magnitude", a, (0, 0, 0),
                                         out=real_dtype(dtype)))


@needs_scipy
def test_per_slice_filters():
    a = random_array(SHAPE, "float32", 11)
    got = np.asarray(vs.uniform_filter(a, (3, 5), dims=2))  # (y, x) of each z-slice
    want = np.stack([ndi.uniform_filter(s.astype(np.float64), (3, 5)) for s in a])
    assert np.allclose(got, want, rtol=1e-5, atol=1e-3)


def test_out_in_place_zero_copy(streams):
    a = random_array(SHAPE, "float32", 12)
    out = np.empty(SHAPE, np.float32)
    ptr = out.ctypes.data
    r = vs.gaussian_filter(a, 1.0, out=out)
    assert r is out and out.ctypes.data == ptr
    assert np.array_equal(out, cpp_filter("gaussian", a, (1, 1, 1)))
    vol = vs.zeros(SHAPE, "float32", streams)
    assert vs.gaussian_filter(a, 1.0, out=vol) is vol
    assert np.array_equal(np.asarray(vol), out)
    with pytest.raises(ValueError, match="out"):
        vs.gaussian_filter(a, 1.0, out=np.empty(SHAPE, np.float32)[:, ::1, ::-1])


# --- projections ---------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_projections(axis):
    a = random_array(SHAPE, "int32", 13)
    assert np.array_equal(np.asarray(vs.max_projection(a, axis))[0], a.max(axis))
    assert np.array_equal(np.asarray(vs.min_projection(a, axis))[0], a.min(axis))
    assert np.allclose(np.asarray(vs.mean_projection(a, axis))[0], a.mean(axis), rtol=1e-6)


# --- files ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ext", [".nrrd", ".mha"])
def test_write_read_roundtrip(tmp_path, streams, dtype, ext):
    v = vs.asvolume(random_array((3, 4, 5), dtype, 14), streams)
    v.spacing = (2.0, 0.5, 0.25)
    v.origin = (1.0, -2.0, 3.0)
    path = tmp_path / ("vol" + ext)
    vs.write(path, v, compress=(ext == ".nrrd"))
    r = vs.read(path, streams)
    assert r.dtype == v.dtype and r.shape == v.shape
    assert r.spacing == v.spacing and r.origin == v.origin
    assert np.array_equal(r.to_numpy(), v.to_numpy())


def test_io_errors(tmp_path):
    with pytest.raises(OSError, match="voxstream"):
        vs.read(tmp_path / "missing.nrrd")
    with pytest.raises(ValueError):
        vs.write(tmp_path / "x.unknown", np.zeros((2, 2, 2), np.float32))
