"""Segmentation and binary morphology against scipy.ndimage / numpy (host backend)."""
import numpy as np
import pytest

import voxstream as vs
from conftest import DTYPES

pytestmark = pytest.mark.skipif(vs.backend != "host", reason="host-backend tests (numpy memory)")
ndi = pytest.importorskip("scipy.ndimage")

SHAPE = (11, 13, 15)


def blobs(shape=SHAPE, p=0.55, seed=0, smooth=1.0):
    """A seeded random mask with components of several sizes (smoothed noise, thresholded)."""
    rng = np.random.default_rng(seed)
    a = ndi.gaussian_filter(rng.random(shape), smooth)
    return a > np.quantile(a, p)


def in_plane(s2):
    s = np.zeros((3, 3, 3), bool)
    s[1] = s2
    return s


CONNECTIVITY = {  # voxstream connectivity: the scipy structure
    6: ndi.generate_binary_structure(3, 1),
    18: ndi.generate_binary_structure(3, 2),
    26: ndi.generate_binary_structure(3, 3),
    4: in_plane(ndi.generate_binary_structure(2, 1)),
    8: in_plane(ndi.generate_binary_structure(2, 2)),
}


# --- label -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("conn", sorted(CONNECTIVITY))
def test_label_matches_scipy(streams, conn):
    m = blobs(seed=conn)
    want, n_want = ndi.label(m, CONNECTIVITY[conn])
    labels, n = vs.label(m, CONNECTIVITY[conn], streams=streams)  # structure -> connectivity
    assert labels.dtype == np.int32 and n.get() == n_want and int(n) == n_want
    assert np.array_equal(np.asarray(labels), want)
    labels2, n2 = vs.label(m.astype(np.float32), connectivity=conn)
    assert np.array_equal(np.asarray(labels2), want) and n2.get() == n_want


def test_label_2d_structure_and_array_out():
    m = blobs((1, 21, 23), seed=3)
    want, n_want = ndi.label(m[0], ndi.generate_binary_structure(2, 2))
    out = np.full(m.shape, -7, np.int32)
    r, n = vs.label(m[0], ndi.generate_binary_structure(2, 2), out=out[0])
    assert r is out[0] or np.shares_memory(r, out)
    assert np.array_equal(out[0], want) and n.get() == n_want
    # AsyncValue conversions: range(n + 1) works through int / __index__
    assert len(range(n)) == n_want and float(n) == n_want and bool(n) == (n_want > 0)


def test_label_errors_leave_out_untouched():
    m = blobs(seed=4)
    bad = np.full(SHAPE, 5.0, np.float32)
    with pytest.raises(ValueError, match="out has dtype float32, expected int32"):
        vs.label(m, out=bad)
    assert (bad == 5.0).all()
    with pytest.raises(ValueError, match="connectivity must be"):
        vs.label(m, connectivity=5)
    with pytest.raises(ValueError, match="structure must be one of"):
        vs.label(m, np.ones((5, 5, 5)))
    with pytest.raises(ValueError, match="not both"):
        vs.label(m, CONNECTIVITY[6], connectivity=6)
    small = np.full((3, 3, 3), 9, np.int32)
    with pytest.raises(ValueError, match="label"):  # extents differ: the C++ check
        vs.label(m, out=small)
    assert (small == 9).all()


# --- binary_fill_holes -------------------------------------------------------------------------
@pytest.mark.parametrize("conn", [6, 26, 4, 8])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_binary_fill_holes(conn, dtype):
    m = np.random.default_rng(5).random(SHAPE) > 0.3  # background specks: holes
    want = ndi.binary_fill_holes(m, CONNECTIVITY[conn])
    got = vs.binary_fill_holes(m.astype(dtype), CONNECTIVITY[conn])
    assert got.dtype == np.dtype(dtype)
    assert np.array_equal(np.asarray(got), want.astype(dtype))
    assert conn in (18, 26) or want.sum() > m.sum()  # the case has holes


# --- distance_transform_edt --------------------------------------------------------------------
@pytest.mark.parametrize("sampling", [None, 2.0, (1.0, 2.0, 0.5), (3, 1, 2)])
def test_edt_matches_scipy(sampling):
    m = blobs(seed=6, p=0.4)
    want = ndi.distance_transform_edt(m, sampling=sampling)
    got = np.asarray(vs.distance_transform_edt(m, sampling))
    assert got.dtype == np.float64
    if sampling is None or np.isscalar(sampling) or sampling == (3, 1, 2):
        assert np.array_equal(got, want)  # unique distances, or integer sampling: exact
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    f = np.asarray(vs.distance_transform_edt(m, sampling, dtype="float32"))
    assert f.dtype == np.float32 and np.array_equal(f, want.astype(np.float32))


def test_edt_indices_and_outputs():
    m = blobs(seed=7, p=0.5)
    sampling = (1.0, 1.5, 2.0)
    dist, (iz, iy, ix) = vs.distance_transform_edt(m, sampling, return_indices=True)
    zz, yy, xx = np.indices(SHAPE)
    iz, iy, ix = np.asarray(iz), np.asarray(iy), np.asarray(ix)
    assert not m[iz, iy, ix].any()  # every index points at a zero voxel
    d = np.sqrt(((iz - zz) * sampling[0]) ** 2 + ((iy - yy) * sampling[1]) ** 2
                + ((ix - xx) * sampling[2]) ** 2)
    np.testing.assert_allclose(np.asarray(dist), d, rtol=1e-12)
    np.testing.assert_allclose(d, ndi.distance_transform_edt(m, sampling=sampling), rtol=1e-12)
    # scipy's layout: one int32 array (3,) + shape, written in place; distances into out
    ind = np.full((3,) + SHAPE, -5, np.int32)
    dout = np.empty(SHAPE, np.float32)
    r = vs.distance_transform_edt(m, sampling, distances=dout, indices=ind, return_indices=True)
    assert r[0] is dout and r[1] is ind
    assert np.array_equal(ind[0], iz) and np.array_equal(ind[2], ix)
    only = vs.distance_transform_edt(m, return_distances=False, return_indices=True)
    assert len(only) == 3


def test_edt_spacing_no_zero_and_errors():
    m = blobs(seed=8)
    v = vs.asvolume(m.astype(np.uint8))
    v.spacing = (2.0, 1.0, 3.0)
    want = ndi.distance_transform_edt(m, sampling=(2.0, 1.0, 3.0))
    np.testing.assert_allclose(np.asarray(vs.distance_transform_edt(v)), want, rtol=1e-12)
    ones = np.ones((3, 4, 5), np.uint8)
    d, (iz, _, _) = vs.distance_transform_edt(ones, return_indices=True)
    assert np.isinf(np.asarray(d)).all() and (np.asarray(iz) == -1).all()
    with pytest.raises(ValueError, match="float32 or float64"):
        vs.distance_transform_edt(m, dtype="int32")
    with pytest.raises(ValueError, match="return_distances"):
        vs.distance_transform_edt(m, return_distances=False)
    with pytest.raises(ValueError, match="sampling"):
        vs.distance_transform_edt(m, sampling=(1.0, -1.0, 1.0))
    out = np.full(SHAPE, 3.0)
    with pytest.raises(ValueError):
        vs.distance_transform_edt(m, sampling=(1.0, 0.0, 1.0), distances=out)
    assert (out == 3.0).all()


# --- regions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_region_stats_matches_scipy(dtype):
    m = blobs(seed=9, p=0.6)
    labels, n = ndi.label(m)
    labels = labels.astype(np.int32)
    rng = np.random.default_rng(10)
    values = rng.integers(0, 100, size=SHAPE).astype(dtype)
    idx = np.arange(1, n + 1)
    t = vs.region_stats(labels, values, n)
    assert isinstance(t, vs.RegionTable) and len(t) == n
    r = t.get()
    assert np.array_equal(r["label"], idx)
    assert np.array_equal(r["count"], np.bincount(labels.ravel(), minlength=n + 1)[1:])
    np.testing.assert_allclose(r["sum"], ndi.sum(values.astype(np.float64), labels, idx))
    np.testing.assert_allclose(r["mean"], ndi.mean(values.astype(np.float64), labels, idx))
    assert np.array_equal(r["min"], ndi.minimum(values, labels, idx).astype(np.float64))
    assert np.array_equal(r["max"], ndi.maximum(values, labels, idx).astype(np.float64))
    np.testing.assert_allclose(r["centroid"], np.array(ndi.center_of_mass(m, labels, idx)))
    boxes = ndi.find_objects(labels)
    assert np.array_equal(r["bbox_lo"], [[s.start for s in b] for b in boxes])
    assert np.array_equal(r["bbox_hi"], [[s.stop for s in b] for b in boxes])


def test_region_stats_num_labels_forms_and_sizes():
    m = blobs(seed=11)
    labels, n = vs.label(m)
    a = vs.region_stats(labels).get()  # num_labels from the largest label (waits)
    b = vs.region_stats(labels, num_labels=n).get()  # the AsyncValue of label
    assert len(a["count"]) == n.get() and np.array_equal(a["count"], b["count"])
    np.testing.assert_allclose(a["mean"], np.arange(1, n.get() + 1))  # values: the labels
    s = vs.sizes(labels, n)
    assert np.array_equal(s.get(), np.bincount(np.asarray(labels).ravel())[1:])
    assert s.get().dtype == np.uint64 and len(s) == n.get()
    with pytest.raises(ValueError, match="labels has dtype uint8, expected int32"):
        vs.sizes(m.astype(np.uint8), 3)
    assert len(vs.sizes(labels, 0).get()) == 0


def test_remove_small_objects_and_keep_largest():
    m = blobs(seed=12, p=0.7)
    labels, n = ndi.label(m)
    labels = labels.astype(np.int32)
    counts = np.bincount(labels.ravel())
    min_size = int(np.median(counts[1:])) + 1
    small = np.isin(labels, np.nonzero(counts < min_size)[0]) & (labels > 0)
    want = np.where(small, 0, labels)
    got = vs.remove_small_objects(labels, min_size)
    assert got.dtype == np.int32 and np.array_equal(np.asarray(got), want)
    out = labels.copy()
    assert vs.remove_small_objects(out, min_size, out=out) is out  # in place
    assert np.array_equal(out, want)
    mask = vs.remove_small_objects(m, min_size)  # a mask: labelled first, uint8 result
    assert mask.dtype == np.uint8 and np.array_equal(np.asarray(mask), (want > 0))
    largest = 1 + np.argmax(counts[1:])
    k = vs.keep_largest(labels, n)
    assert np.array_equal(np.asarray(k), (labels == largest).astype(np.uint8))
    assert np.array_equal(np.asarray(vs.keep_largest(m)), (labels == largest))
    with pytest.raises(ValueError, match="min_size"):
        vs.remove_small_objects(labels, -1)


# --- binary morphology -------------------------------------------------------------------------
ELEMENTS = [None, vs.cross(2), vs.box((3, 5, 3)), vs.box((3, 3)), vs.ball(2),
            vs.ball((1, 2, 3)), vs.disk(2)]
OPS = ["erosion", "dilation", "opening", "closing"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("k", range(len(ELEMENTS)))
def test_binary_morphology_matches_scipy(op, k):
    se = ELEMENTS[k]
    m = blobs(seed=20 + k, p=0.5)
    structure = None if se is None else se.to_array()
    iterations, border = (1 + k % 2), k % 3 == 0
    want = getattr(ndi, "binary_" + op)(m, structure, iterations=iterations,
                                        border_value=border)
    got = getattr(vs, "binary_" + op)(m, se, iterations, border_value=border)
    assert got.dtype == np.uint8 and np.array_equal(np.asarray(got), want)
    if structure is not None:  # the same element recognised from scipy's array
        got2 = getattr(vs, "binary_" + op)(m.astype(np.float32), structure, iterations,
                                           border_value=border)
        assert np.array_equal(np.asarray(got2), want.astype(np.float32))


def test_structure_recognition_and_errors():
    assert vs._segment._element("x", ndi.generate_binary_structure(3, 1)) == vs.cross()
    assert vs._segment._element("x", ndi.generate_binary_structure(2, 1)) == vs.cross(2)
    assert vs._segment._element("x", np.ones((3, 3, 3))) == vs.box(3)
    assert vs._segment._element("x", vs.ball(3).to_array()) == vs.ball(3)
    assert vs._segment._element("x", vs.disk(2).to_array()[0]) == vs.disk(2)
    m = blobs(seed=30)
    with pytest.raises(ValueError, match="is not one voxstream runs"):
        vs.binary_erosion(m, np.eye(3))
    with pytest.raises(ValueError, match="odd"):
        vs.box((2, 3, 3))
    out = np.full(SHAPE, 7, np.uint8)
    with pytest.raises(ValueError):
        vs.binary_dilation(m, iterations=0, out=out)
    assert (out == 7).all()
    with pytest.raises(ValueError, match="out has dtype int32, expected uint8"):
        vs.binary_dilation(m, out=np.zeros(SHAPE, np.int32))
    b = np.zeros(SHAPE, bool)  # scipy's output=bool array: written in place
    assert vs.binary_dilation(m, out=b) is b
    assert np.array_equal(b, ndi.binary_dilation(m))
    assert vs.binary_fill_holes(m, out=b) is b and np.array_equal(b, ndi.binary_fill_holes(m))
