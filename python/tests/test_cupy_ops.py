"""The ops on the cuda backend with CuPy arrays in place (skipped without CuPy, scipy or on the
host backend): each result against scipy.ndimage / numpy on the same seeded input, as the host
tests check them on numpy arrays. Odd shapes, several voxel types, inputs never all zeros."""
import numpy as np
import pytest

import voxstream as vs
from conftest import random_array

cupy = pytest.importorskip("cupy")
ndi = pytest.importorskip("scipy.ndimage")
pytestmark = pytest.mark.skipif(vs.backend != "cuda", reason="cuda-backend tests (CuPy memory)")

SHAPE = (13, 29, 37)


def host(r):
    """A result (Volume or CuPy array) as a numpy array."""
    if isinstance(r, vs.Volume):
        return r.to_numpy()
    return cupy.asnumpy(r)


def blobs(shape, seed, frac=0.35):
    """A seeded mask of smooth blobs (about `frac` foreground), uint8."""
    rng = np.random.default_rng(seed)
    f = ndi.gaussian_filter(rng.random(shape), 1.5)
    return (f > np.quantile(f, 1.0 - frac)).astype(np.uint8)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
@pytest.mark.parametrize("size", [3, 5, 7])
def test_box_min_max_filters(streams, dtype, size):
    a = random_array(SHAPE, dtype, size)
    x = cupy.asarray(a)
    assert np.array_equal(host(vs.grey_erosion(x, size, streams=streams)),
                          ndi.grey_erosion(a, size=size, mode="reflect"))
    assert np.array_equal(host(vs.grey_dilation(x, size, mode="nearest", streams=streams)),
                          ndi.grey_dilation(a, size=size, mode="nearest"))
    got = host(vs.uniform_filter(x, size, streams=streams))
    want = ndi.uniform_filter(a, size=size, mode="reflect")
    if a.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    else:
        assert np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
@pytest.mark.parametrize("size", [3, 5])
def test_median_rank_percentile(streams, dtype, size):
    a = random_array(SHAPE, dtype, 40 + size)
    x = cupy.asarray(a)
    assert np.array_equal(host(vs.median_filter(x, size, streams=streams)),
                          ndi.median_filter(a, size=size, mode="reflect"))
    n = size ** 3
    assert np.array_equal(host(vs.rank_filter(x, n // 4, size, streams=streams)),
                          ndi.rank_filter(a, n // 4, size=size, mode="reflect"))
    assert np.array_equal(host(vs.percentile_filter(x, 80, size, mode="constant", cval=3,
                                                    streams=streams)),
                          ndi.percentile_filter(a, 80, size=size, mode="constant", cval=3))


@pytest.mark.parametrize("sigma", [1.0, 2.5, (1.0, 1.0, 3.0)])
def test_gaussian(streams, sigma):
    a = random_array(SHAPE, "float32", 7)
    got = host(vs.gaussian_filter(cupy.asarray(a), sigma, streams=streams))
    want = ndi.gaussian_filter(a.astype(np.float64), sigma, mode="reflect")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("conn", [6, 18, 26])
def test_label_fill_holes_sizes(streams, conn):
    m = blobs(SHAPE, conn)
    x = cupy.asarray(m)
    rank = {6: 1, 18: 2, 26: 3}[conn]
    st = ndi.generate_binary_structure(3, rank)
    labels, n = vs.label(x, connectivity=conn, streams=streams)
    want, wn = ndi.label(m, structure=st)
    assert int(n.get()) == wn
    assert np.array_equal(host(labels), want)
    assert np.array_equal(host(vs.binary_fill_holes(x, connectivity=conn, streams=streams)),
                          ndi.binary_fill_holes(m, structure=st).astype(np.uint8))
    got = vs.sizes(labels, n, streams=streams).get()
    assert np.array_equal(got, np.bincount(want.ravel(), minlength=wn + 1)[1:])


@pytest.mark.parametrize("sampling", [None, (2.0, 0.5, 1.25)])
def test_distance_transform_edt(streams, sampling):
    m = blobs(SHAPE, 11, frac=0.6)
    d = host(vs.distance_transform_edt(cupy.asarray(m), sampling=sampling, streams=streams))
    want = ndi.distance_transform_edt(m, sampling=sampling)
    if sampling is None:
        np.testing.assert_array_equal(d, want)  # integer arithmetic: exact
    else:
        np.testing.assert_allclose(d, want, rtol=1e-12)
    d32 = host(vs.distance_transform_edt(cupy.asarray(m), sampling=sampling, dtype="float32",
                                         streams=streams))
    np.testing.assert_array_equal(d32, want.astype(np.float32))


def test_region_stats(streams):
    m = blobs(SHAPE, 5)
    want, n = ndi.label(m)
    v = random_array(SHAPE, "float32", 6)
    t = vs.region_stats(cupy.asarray(want.astype(np.int32)), cupy.asarray(v), n,
                        streams=streams).get()
    idx = np.arange(1, n + 1)
    np.testing.assert_array_equal(t["count"], np.bincount(want.ravel(), minlength=n + 1)[1:])
    np.testing.assert_allclose(t["sum"], ndi.sum(v.astype(np.float64), want, idx), rtol=1e-9)
    np.testing.assert_array_equal(t["min"], ndi.minimum(v, want, idx))
    np.testing.assert_array_equal(t["max"], ndi.maximum(v, want, idx))
    np.testing.assert_allclose(t["centroid"], np.array(ndi.center_of_mass(m, want, idx)),
                               rtol=1e-9)


def test_binary_morphology(streams):
    m = blobs(SHAPE, 8, frac=0.5)
    x = cupy.asarray(m)
    st = ndi.generate_binary_structure(3, 1)
    assert np.array_equal(host(vs.binary_erosion(x, streams=streams)).astype(bool),
                          ndi.binary_erosion(m, structure=st))
    assert np.array_equal(host(vs.binary_dilation(x, streams=streams)).astype(bool),
                          ndi.binary_dilation(m, structure=st))


def test_reductions_and_projections(streams):
    a = random_array(SHAPE, "float32", 12)
    x = cupy.asarray(a)
    # float32 voxels are added in pairs of floats before the double accumulation (reduce.hpp):
    # the error bound is relative to the sum of magnitudes, as the C++ tests take it
    a64 = a.astype(np.float64)
    assert abs(vs.sum(x, streams=streams).get() - a64.sum()) <= 3e-7 * np.abs(a64).sum()
    assert vs.min(x, streams=streams).get() == a.min()
    assert vs.max(x, streams=streams).get() == a.max()
    assert np.array_equal(host(vs.max_projection(x, 0, streams=streams)).reshape(-1),
                          a.max(axis=0).reshape(-1))


def test_threshold_into_cupy_out(streams):
    a = random_array(SHAPE, "float32", 13)
    x = cupy.asarray(a)
    out = cupy.full(SHAPE, 7, dtype=cupy.uint8)  # poisoned
    r = vs.threshold(x, 10.0, out=out, streams=streams)
    streams.synchronize()
    assert r is out
    assert np.array_equal(cupy.asnumpy(out), (a > 10.0).astype(np.uint8))
