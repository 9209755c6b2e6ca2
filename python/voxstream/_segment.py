"""Segmentation and binary morphology: label, binary_fill_holes, distance_transform_edt,
region_stats, sizes, remove_small_objects, keep_largest, binary_erosion/dilation/opening/closing
and their structuring elements (box, cross, ball, disk). Imported into the voxstream namespace.

Masks may be boolean numpy arrays (viewed as uint8 without a copy) or volumes of any voxel
type (nonzero is foreground)."""
from __future__ import annotations

import numbers

import numpy as _np

from . import _voxstream as _vs
from . import _Call, _dtype_name  # noqa: F401 (package helpers, defined before this import)

__all__ = [
    "RegionTable", "LabelSizes", "StructuringElement", "box", "cross", "ball", "disk",
    "label", "binary_fill_holes", "distance_transform_edt", "region_stats", "sizes",
    "remove_small_objects", "keep_largest", "binary_erosion", "binary_dilation",
    "binary_opening", "binary_closing",
]

RegionTable = _vs.RegionTable
LabelSizes = _vs.LabelSizes
_CONNECTIVITIES = (4, 6, 8, 18, 26)


def _mask(c, x):
    """A mask argument as a volume: a boolean array is viewed as uint8 (no copy)."""
    if isinstance(x, _np.ndarray) and x.dtype == _np.bool_:
        x = x.view(_np.uint8)
    return c.input(x)


def _mask_out(c, out):
    """An out= argument; a boolean array is written as uint8 0 / 1 in place (valid bools)."""
    if isinstance(out, _np.ndarray) and out.dtype == _np.bool_:
        out = out.view(_np.uint8)
    return c.output(out)


# --- connectivity ------------------------------------------------------------------------------
def _offsets_structure(order):
    """scipy.ndimage.generate_binary_structure(3, order) as a bool array."""
    d = _np.indices((3, 3, 3)) - 1
    return _np.abs(d).sum(axis=0) <= order


def _in_plane(structure2d):
    s = _np.zeros((3, 3, 3), bool)
    s[1] = structure2d
    return s


def _connectivity(op, structure, connectivity, default=6):
    """voxstream's connectivity (4, 8: in-plane; 6, 18, 26: 3D) from scipy's ``structure``
    (None, or one of generate_binary_structure's 3D or 2D structures) or ``connectivity``."""
    if connectivity is not None:
        if structure is not None:
            raise ValueError(f"voxstream.{op}: give structure or connectivity, not both")
        if connectivity not in _CONNECTIVITIES:
            raise ValueError(f"voxstream.{op}: connectivity must be 4, 8 (each z-slice on its "
                             f"own), 6, 18 or 26, got {connectivity!r}")
        return int(connectivity)
    if structure is None:
        return default
    s = _np.asarray(structure).astype(bool)
    cross2 = _offsets_structure(1)[1]
    if s.shape == (3, 3):
        s = _in_plane(s)
    if s.shape == (3, 3, 3):
        for conn, want in ((6, _offsets_structure(1)), (18, _offsets_structure(2)),
                           (26, _offsets_structure(3)), (4, _in_plane(cross2)),
                           (8, _in_plane(_np.ones((3, 3), bool)))):
            if _np.array_equal(s, want):
                return conn
    raise ValueError(f"voxstream.{op}: structure must be one of "
                     "scipy.ndimage.generate_binary_structure(3, 1 | 2 | 3) or (2, 1 | 2) "
                     f"(connectivity 6, 18, 26, 4, 8); got an array of shape {s.shape}")


# --- labels ------------------------------------------------------------------------------------
def label(input, structure=None, out=None, *, connectivity=None, streams=None):  # noqa: A002
    """scipy.ndimage.label: ``(labels, n)``, labels an int32 Volume (background 0, components
    1..n numbered by their first voxel in memory order, exactly scipy's labels) and ``n`` an
    AsyncValue (``n.get()`` or ``int(n)`` waits for it; the labels need no wait). ``structure``
    as scipy's (generate_binary_structure(3, 1), the default, 2 or 3; a 2D cross or square
    labels each z-slice on its own), or ``connectivity`` 6, 18, 26, 4 or 8. ``out``: an int32
    Volume or array."""
    conn = _connectivity("label", structure, connectivity)
    c = _Call(streams)
    v = _mask(c, input)
    o = c.output(out)
    labels, n = _vs.label(v, conn, out=o)
    return c.done(labels, out), n


def binary_fill_holes(input, structure=None, out=None, *, connectivity=None,  # noqa: A002
                      streams=None):
    """scipy.ndimage.binary_fill_holes: 1 where ``input`` is nonzero or in a hole (a background
    component, connected by ``structure`` / ``connectivity``, not touching the border), 0
    elsewhere; of the input's voxel type (uint8 for a boolean array; scipy returns bool)."""
    conn = _connectivity("binary_fill_holes", structure, connectivity)
    c = _Call(streams)
    v = _mask(c, input)
    o = _mask_out(c, out)
    return c.done(_vs.binary_fill_holes(v, conn, out=o), out)


def _sampling(sampling):
    if sampling is None:
        return None
    if isinstance(sampling, numbers.Number):
        return (float(sampling),) * 3
    s = tuple(float(x) for x in sampling)
    if len(s) == 3:
        return s[::-1]
    if len(s) == 2:
        return (s[1], s[0], 1.0)
    raise ValueError("voxstream.distance_transform_edt: sampling takes a scalar or one value "
                     "per axis (z, y, x)")


def distance_transform_edt(input, sampling=None, return_distances=True,  # noqa: A002
                           return_indices=False, distances=None, indices=None, *,
                           dtype="float64", streams=None):
    """scipy.ndimage.distance_transform_edt: the exact Euclidean distance of every voxel to the
    nearest zero voxel, in units of ``sampling`` (scalar or (z, y, x); None: the volume's
    spacing, 1 for arrays). ``dtype`` float64 (scipy's) or float32. ``return_indices``: also
    the (z, y, x) index of that zero voxel, as a tuple of three int32 Volumes (iz, iy, ix)
    (scipy: one array of shape (3,) + shape; ``indices=`` takes either, e.g. an int32 array of
    shape (3, nz, ny, nx), written in place). Tied nearest voxels may be reported differently
    from scipy (same distance). A mask without any zero gives +inf and index -1 (scipy:
    meaningless finite values). Returns what scipy returns: distances, indices, or both."""
    op = "voxstream.distance_transform_edt"
    if not return_distances and not return_indices:
        raise ValueError(f"{op}: at least one of return_distances / return_indices must be True")
    c = _Call(streams)
    v = _mask(c, input)
    o = c.output(distances)
    idx = [None, None, None]
    if indices is not None:
        if len(indices) != 3:
            raise ValueError(f"{op}: indices= takes three outputs (z, y, x)")
        if not return_indices:
            raise ValueError(f"{op}: indices= given with return_indices=False")
        idx = [c.output(indices[k]) for k in range(3)]
    r = _vs.distance_transform_edt(v, _sampling(sampling), _dtype_name(dtype),
                                   bool(return_indices), out=o, ix=idx[2], iy=idx[1], iz=idx[0])
    c.done(None, None)
    if return_indices:
        dist, iz, iy, ix = r
        ind = indices if indices is not None else (iz, iy, ix)
    else:
        dist = r
    if distances is not None and not isinstance(distances, _vs.Volume):
        dist = distances
    if return_distances and return_indices:
        return dist, ind
    return dist if return_distances else ind


# --- regions -----------------------------------------------------------------------------------
def _num_labels(labels_volume, num_labels):
    """A host label count: given (an int or an AsyncValue), or the largest label (waits)."""
    if num_labels is None:
        return max(0, int(_vs.max(labels_volume).get()))
    if isinstance(num_labels, _vs.AsyncValue):
        num_labels = num_labels.get()
    n = int(num_labels)
    if n < 0:
        raise ValueError("voxstream: num_labels must be >= 0")
    return n


def _region_dtype():
    lay = _vs._region_row_layout
    names, formats, offsets = [], [], []
    for name, fmt in (("count", "<u8"), ("sum", "<f8"), ("mean", "<f8"), ("min", "<f8"),
                      ("max", "<f8"), ("bbox_lo", ("<i4", 3)), ("bbox_hi", ("<i4", 3)),
                      ("centroid", ("<f8", 3))):
        names.append(name)
        formats.append(fmt)
        offsets.append(lay[name])
    return _np.dtype({"names": names, "formats": formats, "offsets": offsets,
                      "itemsize": lay["itemsize"]})


def _region_get(self):
    """The table as a dict of numpy arrays, one entry per label 1..n: label, count (uint64),
    sum, mean, min, max (float64), bbox_lo / bbox_hi (int32, (n, 3), z y x, half-open as
    skimage's bbox), centroid (float64, (n, 3), z y x). Waits for the table."""
    rows = _np.frombuffer(self._rows(), dtype=_region_dtype())
    n = len(rows)
    return {
        "label": _np.arange(1, n + 1, dtype=_np.int32),
        "count": rows["count"].copy(),
        "sum": rows["sum"].copy(),
        "mean": rows["mean"].copy(),
        "min": rows["min"].copy(),
        "max": rows["max"].copy(),
        "bbox_lo": rows["bbox_lo"][:, ::-1].copy(),
        "bbox_hi": rows["bbox_hi"][:, ::-1].copy(),
        "centroid": rows["centroid"][:, ::-1].copy(),
    }


RegionTable.get = _region_get
RegionTable.__len__ = lambda self: self.num_labels
LabelSizes.get = lambda self: _np.frombuffer(self._rows(), dtype=_np.uint64).copy()
LabelSizes.__len__ = lambda self: self.num_labels


def region_stats(labels, values=None, num_labels=None, *, streams=None) -> RegionTable:
    """Count, sum, mean, min, max, bounding box and centroid of ``values`` (default: the labels
    themselves) over each label 1..num_labels of the int32 ``labels`` (skimage.measure
    .regionprops' core; other label values are ignored). ``num_labels``: an int, the AsyncValue
    of ``label``, or None (the largest label: waits for it). Asynchronous: ``.get()`` returns
    a dict of numpy arrays (see RegionTable.get)."""
    c = _Call(streams)
    lv = c.input(labels)
    vv = c.input(values) if values is not None else None
    n = _num_labels(lv, num_labels)
    t = _vs.region_stats(lv, vv, n)
    c.done(None, None)
    return t


def sizes(labels, num_labels=None, *, streams=None) -> LabelSizes:
    """Voxel count of each label 1..num_labels of the int32 ``labels`` (scipy.ndimage.sum of
    ones over index 1..n). Asynchronous: ``.get()`` returns a numpy uint64 array, label l at
    index l - 1."""
    c = _Call(streams)
    lv = c.input(labels)
    t = _vs.sizes(lv, _num_labels(lv, num_labels))
    c.done(None, None)
    return t


def _labels_of(c, ar, connectivity, op):
    """(int32 label volume, num_labels or None, was_mask) for a label volume or a mask."""
    v = _mask(c, ar)
    if v.dtype == _np.int32:
        return v, None, False
    if connectivity not in _CONNECTIVITIES:
        raise ValueError(f"voxstream.{op}: connectivity must be 4, 8, 6, 18 or 26")
    labels, n = _vs.label(v, int(connectivity))
    return labels, n, True


def remove_small_objects(ar, min_size=64, connectivity=6, *, out=None, num_labels=None,
                         streams=None):
    """skimage.morphology.remove_small_objects: objects of fewer than ``min_size`` voxels are
    removed. An int32 ``ar`` is a label volume (labels 1..num_labels; the result is int32 with
    the small labels set to 0); any other (a mask) is labelled first with ``connectivity``
    (voxstream's 6, 18, 26, 4 or 8; skimage counts hops, 1 = 6) and the result is a uint8
    mask (skimage: bool)."""
    if min_size < 0:
        raise ValueError("voxstream.remove_small_objects: min_size must be >= 0")
    c = _Call(streams)
    labels, n, was_mask = _labels_of(c, ar, connectivity, "remove_small_objects")
    n = _num_labels(labels, n if n is not None else num_labels)
    if not was_mask:
        o = c.output(out)
        return c.done(_vs.remove_small_objects(labels, n, int(min_size), out=o), out)
    kept = _vs.remove_small_objects(labels, n, int(min_size), out=labels)
    o = _mask_out(c, out)
    return c.done(_vs.threshold(kept, 0.0, out=o), out)


def keep_largest(ar, num_labels=None, out=None, *, connectivity=6, streams=None):
    """uint8 mask of the largest region (ties: the smallest label) of an int32 label volume,
    or of a mask labelled with ``connectivity``; all 0 when there is none."""
    c = _Call(streams)
    labels, n, _ = _labels_of(c, ar, connectivity, "keep_largest")
    n = _num_labels(labels, n if n is not None else num_labels)
    o = _mask_out(c, out)
    return c.done(_vs.keep_largest(labels, n, out=o), out)


# --- structuring elements ----------------------------------------------------------------------
class StructuringElement:
    """A binary structuring element of voxstream: a box, the cross or an (anisotropic) ball,
    in 3D or in each z-slice (dims=2). Make one with box(), cross(), ball() or disk();
    ``to_array()`` gives the equivalent scipy/skimage boolean structure (z, y, x)."""

    _KINDS = {"box": 0, "cross": 1, "ball": 2}

    def __init__(self, kind, dims=3, size=(3, 3, 3), radius=(1, 1, 1)):
        if kind not in self._KINDS:
            raise ValueError(f"voxstream: unknown structuring element '{kind}'")
        if dims not in (2, 3):
            raise ValueError("voxstream: a structuring element has dims 2 or 3")
        self.kind, self.dims = kind, dims
        self.size = tuple(int(s) for s in size)  # z, y, x
        self.radius = tuple(int(r) for r in radius)  # z, y, x
        if kind == "box" and any(s < 1 or s % 2 == 0 for s in self.size[3 - dims:]):
            raise ValueError(f"voxstream: box sizes must be odd and >= 1, got {self.size}")
        if kind == "ball" and min(self.radius) < 0:
            raise ValueError("voxstream: ball radii must be >= 0")

    def __repr__(self):
        what = {"box": f"size={self.size}", "cross": "", "ball": f"radius={self.radius}"}
        return f"voxstream.StructuringElement({self.kind!r}, dims={self.dims}, {what[self.kind]})"

    def __eq__(self, other):
        return isinstance(other, StructuringElement) and self._args() == other._args()

    def __hash__(self):
        return hash(self._args())

    def _args(self):
        size = self.size if self.kind == "box" else (1, 1, 1)
        radius = self.radius if self.kind == "ball" else (0, 0, 0)
        if self.dims == 2:
            size, radius = (1,) + size[1:], (0,) + radius[1:]
        return self.kind, self.dims, size, radius

    def _native(self):
        """(kind, dims, size xyz, radii xyz) for _voxstream.binary_morphology."""
        kind, dims, size, radius = self._args()
        return self._KINDS[kind], dims, size[::-1], radius[::-1]

    def to_array(self):
        """The element as a boolean array (z, y, x); shape (1, h, w) for dims=2."""
        kind, dims, size, radius = self._args()
        if kind == "box":
            return _np.ones(size, bool)
        if kind == "cross":
            s = _offsets_structure(1)
            return s[1:2] if dims == 2 else s
        r = radius
        shape = tuple(2 * x + 1 for x in r)
        d = _np.indices(shape) - _np.array(r).reshape(3, 1, 1, 1)
        # sum (d_a / r_a)^2 <= 1 over the axes of nonzero radius, in exact integers
        nz = [a for a in range(3) if r[a] > 0]
        prod = 1
        for a in nz:
            prod *= r[a] ** 2
        acc = _np.zeros(shape, _np.int64)
        for a in nz:
            acc += d[a].astype(_np.int64) ** 2 * (prod // r[a] ** 2)
        return acc <= prod


def box(size, dims=3) -> StructuringElement:
    """All-ones box of odd ``size`` (scalar or (z, y, x)): scipy's structure=np.ones(size)."""
    if isinstance(size, numbers.Number):
        size = (int(size),) * 3
    size = tuple(int(s) for s in size)
    if len(size) == 2:
        size, dims = (1,) + size, 2
    if len(size) != 3:
        raise ValueError("voxstream.box: size takes a scalar or (z, y, x)")
    return StructuringElement("box", dims, size=size)


def cross(dims=3) -> StructuringElement:
    """scipy's default structure, generate_binary_structure(3, 1) (6 neighbours); dims=2: the
    4-neighbour cross in each z-slice."""
    return StructuringElement("cross", dims)


def ball(radius) -> StructuringElement:
    """skimage.morphology.ball(radius): offsets with dz^2 + dy^2 + dx^2 <= r^2; (rz, ry, rx)
    gives an ellipsoid (an axis of radius 0 has only offset 0)."""
    if isinstance(radius, numbers.Number):
        radius = (int(radius),) * 3
    radius = tuple(int(r) for r in radius)
    if len(radius) != 3:
        raise ValueError("voxstream.ball: radius takes a scalar or (z, y, x)")
    return StructuringElement("ball", 3, radius=radius)


def disk(radius) -> StructuringElement:
    """skimage.morphology.disk(radius) in each z-slice."""
    r = int(radius)
    return StructuringElement("ball", 2, radius=(0, r, r))


def _element(op, structure):
    """A StructuringElement from scipy's ``structure``: None (the cross), an element, or an
    array equal to a cross, an all-ones box of odd sizes, a ball or a disk (2D arrays and
    (1, h, w) arrays work on each z-slice)."""
    if structure is None:
        return cross(3)
    if isinstance(structure, StructuringElement):
        return structure
    s = _np.asarray(structure).astype(bool)
    if s.ndim == 2:
        s = s[None]
    if s.ndim != 3 or 0 in s.shape:
        raise ValueError(f"voxstream.{op}: structure must be a 2D or 3D array or a "
                         "voxstream.StructuringElement")
    dims = 2 if s.shape[0] == 1 else 3
    candidates = []
    if all(n % 2 == 1 for n in s.shape):
        if s.shape[1:] == (3, 3) and s.shape[0] in (1, 3):
            candidates.append(cross(dims))  # before ball(1), the same element
        candidates.append(StructuringElement("box", dims, size=s.shape))
        r = tuple(n // 2 for n in s.shape)
        candidates.append(StructuringElement("ball", dims, radius=r))
    for e in candidates:
        if e.to_array().shape == s.shape and _np.array_equal(e.to_array(), s):
            return e
    raise ValueError(f"voxstream.{op}: structure (shape {s.shape}) is not one voxstream runs: "
                     "a cross (generate_binary_structure(n, 1)), an all-ones box of odd sizes, "
                     "a ball or ellipsoid (skimage ball), or a disk; see voxstream.box, cross, "
                     "ball and disk")


def _binary(which, input, structure, iterations, out, border_value, streams):  # noqa: A002
    se = _element("binary_" + which, structure)
    kind, dims, size, radius = se._native()
    c = _Call(streams)
    v = _mask(c, input)
    o = _mask_out(c, out)
    r = _vs.binary_morphology(which, v, kind, dims, size, radius, int(iterations),
                              bool(border_value), out=o)
    return c.done(r, out)


def binary_erosion(input, structure=None, iterations=1, *, out=None, border_value=0,  # noqa: A002
                   streams=None):
    """scipy.ndimage.binary_erosion (no mask, origin 0, iterations >= 1): 1 where every voxel
    under the structuring element is nonzero, voxels outside being ``border_value``. The result
    has the input's voxel type (uint8 for a boolean array). ``structure``: see _element."""
    return _binary("erosion", input, structure, iterations, out, border_value, streams)


def binary_dilation(input, structure=None, iterations=1, *, out=None, border_value=0,  # noqa: A002
                    streams=None):
    """scipy.ndimage.binary_dilation (see binary_erosion)."""
    return _binary("dilation", input, structure, iterations, out, border_value, streams)


def binary_opening(input, structure=None, iterations=1, *, out=None, border_value=0,  # noqa: A002
                   streams=None):
    """scipy.ndimage.binary_opening: ``iterations`` erosions then as many dilations."""
    return _binary("opening", input, structure, iterations, out, border_value, streams)


def binary_closing(input, structure=None, iterations=1, *, out=None, border_value=0,  # noqa: A002
                   streams=None):
    """scipy.ndimage.binary_closing: ``iterations`` dilations then as many erosions, each with
    ``border_value`` (as scipy: with 0, foreground at the volume's edge can be eroded)."""
    return _binary("closing", input, structure, iterations, out, border_value, streams)
