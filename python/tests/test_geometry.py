"""Geometry, clip/rescale/normalize, the other reductions and histogram percentiles against
numpy / scipy.ndimage (host backend)."""
import itertools
import operator

import numpy as np
import pytest

import voxstream as vs
from conftest import DTYPES, random_array

pytestmark = pytest.mark.skipif(vs.backend != "host", reason="host-backend tests (numpy memory)")

SHAPE = (7, 9, 11)


def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# --- geometry ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("factor", [2.0, (0.5, 1.7, 1.3), (1, 0.6, 2)])
def test_zoom_matches_scipy(dtype, factor):
    ndi = pytest.importorskip("scipy.ndimage")
    a = random_array(SHAPE, dtype, 1)
    want = ndi.zoom(a.astype(np.float64), factor, order=1, mode="nearest", grid_mode=False)
    got = np.asarray(vs.zoom(a, factor))
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-4)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32"])
def test_resize_integers_and_out(dtype):
    ndi = pytest.importorskip("scipy.ndimage")
    a = random_array(SHAPE, dtype, 2)
    shape = (13, 5, 11)
    out = np.zeros(shape, dtype)
    assert vs.resize(a, None, out=out) is out
    want = ndi.zoom(a.astype(np.float64), np.divide(shape, SHAPE), order=1, mode="nearest")
    assert want.shape == shape
    assert np.abs(out.astype(np.float64) - round_half_away(want)).max() <= 1
    with pytest.raises(ValueError, match="order=1"):
        vs.zoom(a, 2, order=3)


@pytest.mark.parametrize("dtype", ["uint8", "float64"])
@pytest.mark.parametrize("keep_partial", [False, True])
def test_downsample_mean(dtype, keep_partial):
    a = random_array((9, 10, 11), dtype, 3)
    if np.dtype(dtype).kind == "u":
        a = a.astype(np.float64).clip(0, 255).astype(dtype)
    f = (2, 3, 4)
    got = np.asarray(vs.downsample_mean(a, f, keep_partial=keep_partial))
    n = [(s + k - 1) // k if keep_partial else s // k for s, k in zip(a.shape, f)]
    want = np.empty(n)
    for z, y, x in itertools.product(*map(range, n)):
        want[z, y, x] = a[z * 2:z * 2 + 2, y * 3:y * 3 + 3, x * 4:x * 4 + 4].astype(np.float64).mean()
    if dtype == "uint8":
        want = round_half_away(want)
    assert got.shape == tuple(n)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("axes", list(itertools.permutations(range(3))) + [None, (-1, 0, 1)])
def test_transpose(axes):
    a = random_array(SHAPE, "int16", 4)
    got = vs.transpose(a, axes)
    assert np.array_equal(np.asarray(got), np.transpose(a, axes))


def test_crop_and_errors():
    a = random_array(SHAPE, "float32", 5)
    got = vs.crop(a, (1, 2, 3), (4, 5, 6))
    assert np.array_equal(np.asarray(got), a[1:5, 2:7, 3:9])
    out = np.full((2, 2, 2), -1, np.float32)
    assert vs.crop(a, (5, 7, 9), out=out) is out and np.array_equal(out, a[5:, 7:, 9:])
    with pytest.raises(ValueError, match="does not lie inside"):
        vs.crop(a, (5, 0, 0), (3, 1, 1), out=None)
    out2 = np.full((3, 1, 1), 2.0, np.float32)
    with pytest.raises(ValueError):
        vs.crop(a, (6, 0, 0), out=out2)
    assert (out2 == 2.0).all()


@pytest.mark.parametrize("mode", ["constant", "edge", "symmetric", "wrap"])
@pytest.mark.parametrize("dtype", ["uint16", "float32"])
def test_pad_matches_numpy(mode, dtype):
    a = random_array(SHAPE, dtype, 6)
    pw = ((1, 2), (0, 3), (4, 1))
    kw = {"constant_values": 7} if mode == "constant" else {}
    got = vs.pad(a, pw, mode, **kw)
    assert np.array_equal(np.asarray(got), np.pad(a, pw, mode, **kw))
    assert np.array_equal(np.asarray(vs.pad(a, 2, mode)), np.pad(a, 2, mode))


def test_pad_errors():
    a = random_array(SHAPE, "float32", 7)
    with pytest.raises(ValueError, match="reflect"):
        vs.pad(a, 1, "reflect")
    with pytest.raises(ValueError, match=">= 0"):
        vs.pad(a, -1)


# --- elementwise ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_rescale_normalize(dtype):
    a = random_array(SHAPE, dtype, 8)
    lo, hi = (-20, 30) if np.dtype(dtype).kind != "u" else (20, 300)
    got = np.asarray(vs.clip(a, lo, hi))
    assert got.dtype == a.dtype and np.array_equal(got, np.clip(a, lo, hi).astype(a.dtype))
    r = np.asarray(vs.rescale(a, 0.5, 3.0, dtype="float64"))
    np.testing.assert_allclose(r, a.astype(np.float64) * 0.5 + 3.0)
    n = np.asarray(vs.normalize(a, -1.0, 1.0, dtype="float64"))
    af = a.astype(np.float64)
    np.testing.assert_allclose(n, (af - af.min()) * (2.0 / (af.max() - af.min())) - 1.0,
                               atol=1e-12)
    out = np.empty(SHAPE, np.uint8)
    vs.normalize(a, 0, 255, out=out)  # out's dtype wins
    assert out.min() == 0 and out.max() == 255
    with pytest.raises(ValueError):
        vs.normalize(a, 1.0, 1.0)


# --- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_statistics_and_positions(dtype):
    ndi = pytest.importorskip("scipy.ndimage")
    a = random_array(SHAPE, dtype, 9)
    st = vs.statistics(a, ddof=1).get()
    af = a.astype(np.float64)
    assert st["count"] == a.size and st["min"] == af.min() and st["max"] == af.max()
    np.testing.assert_allclose([st["sum"], st["mean"], st["variance"], st["std"]],
                               [af.sum(), af.mean(), af.var(ddof=1), af.std(ddof=1)])
    assert vs.argmin(a).get() == np.argmin(a) and vs.argmax(a).get() == np.argmax(a)
    assert vs.minimum_position(a).get() == ndi.minimum_position(a)
    assert vs.maximum_position(a).get() == ndi.maximum_position(a)
    mn, mx, pmn, pmx = vs.extrema(a)
    assert (mn.get(), mx.get(), pmn.get(), pmx.get()) == ndi.extrema(a)


def test_nan_argmin_and_async_conversions():
    a = random_array(SHAPE, "float32", 10)
    a[0, 0, 0] = np.nan
    assert vs.argmin(a).get() == np.nanargmin(a) and vs.argmax(a).get() == np.nanargmax(a)
    i = vs.argmax(a)
    assert int(i) == operator.index(i) == np.nanargmax(a) and "AsyncValue" in repr(i)
    with pytest.raises(TypeError):
        operator.index(vs.mean(a))
    b = np.nan_to_num(a)
    assert float(vs.mean(b)) == pytest.approx(float(b.astype(np.float64).mean()))


@pytest.mark.parametrize("reduction", ["min", "max", "sum", "mean"])
def test_reduce_slices(reduction):
    a = random_array(SHAPE, "int16", 11)
    got = vs.reduce_slices(a, reduction)
    assert got.shape == (SHAPE[0], 1, 1) and got.dtype == np.float64
    want = getattr(np, reduction)(a.astype(np.float64), axis=(1, 2))
    np.testing.assert_allclose(np.asarray(got)[:, 0, 0], want)
    with pytest.raises(ValueError, match="min, max, sum or mean"):
        vs.reduce_slices(a, "median")


def test_histogram_percentiles():
    a = random_array((16, 16, 16), "float32", 12)
    h = vs.histogram(a, -100.0, 100.0, 400)
    bin_width = 0.5
    qs = [0, 10, 50, 90, 100]
    got = h.percentiles(qs)
    want = np.percentile(a, qs)
    assert np.abs(got - want).max() <= bin_width + 1e-6
    assert h.percentile(50) == got[2]
    with pytest.raises(ValueError):
        h.percentile(101)


def test_2d_arrays_keep_their_axes():
    ndi = pytest.importorskip("scipy.ndimage")
    a = random_array((9, 11), "float64", 13)
    z = vs.zoom(a, 1.5)
    assert z.shape == (1,) + ndi.zoom(a, 1.5, order=1).shape
    np.testing.assert_allclose(np.asarray(z)[0], ndi.zoom(a, 1.5, order=1, mode="nearest"))
    assert vs.downsample_mean(a, 2).shape == (1, 4, 5)
    assert np.array_equal(np.asarray(vs.pad(a, 2, "edge"))[0], np.pad(a, 2, "edge"))
    assert np.array_equal(np.asarray(vs.pad(a, (1, 3)))[0], np.pad(a, (1, 3)))
