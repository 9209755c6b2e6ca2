#!/usr/bin/python3
"""Regenerates tests/ops/fixtures/geometry_*: scipy.ndimage / numpy results for the geometry ops.

    /usr/bin/python3 tests/ops/gen_geometry_fixtures.py    (Debian's python3-scipy, python3-numpy)

Volumes are raw little-endian float64, x fastest (numpy C order of a (z, y, x) array).
geometry_index.txt has one line per case (extents are x y z):

    <op> <input file> <in x y z> <expected file> <out x y z> <params...>

    resize [u16|i16]                         scipy.ndimage.zoom(order=1, mode='nearest',
                                             grid_mode=False) to the output extent; with a
                                             type, the input holds integers and the zoom ran
                                             on that numpy type (scipy rounds half away from 0)
    permute <a0 a1 a2>                       numpy.transpose; output axis k = input axis a_k
                                             (0 = x, 1 = y, 2 = z)
    pad <bx by bz> <ax ay az> <mode> <value> numpy.pad; mode in voxstream's names: reflect
                                             (numpy 'symmetric'), nearest ('edge'), wrap,
                                             constant (constant_values=value). A 'wrap' wider
                                             than the array is periodic, as in numpy >= 2.0
                                             (numpy 1.x folds it differently)
    crop <ox oy oz>                          numpy slicing of the output's extent at the offset
    downsample <fx fy fz>                    block means; an output extent of ceil(n / f) keeps
                                             the partial last block (numpy.add.reduceat)

The output is deterministic (seeded); rerunning it rewrites the same bytes.
"""

import os
import sys

import numpy as np
import scipy
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")

# numpy.pad mode for each voxstream border mode.
NUMPY_PAD = {"reflect": "symmetric", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


def xyz(a):
    """Extent (x, y, z) of a (z, y, x) array."""
    return (a.shape[2], a.shape[1], a.shape[0])


def save(name, a):
    path = os.path.join(OUT, name)
    np.ascontiguousarray(a, dtype="<f8").tofile(path)
    return name


def zoom_to(a, ext):
    """scipy.ndimage.zoom of a (z, y, x) array to extent (x, y, z)."""
    shape = (ext[2], ext[1], ext[0])
    zoom = [o / i for o, i in zip(shape, a.shape)]
    r = ndi.zoom(a, zoom, order=1, mode="nearest", grid_mode=False)
    assert r.shape == shape, (r.shape, shape)
    return r


def block_mean(a, f):
    """Means of f = (fx, fy, fz) blocks; a partial last block is averaged over what it has."""
    fz, fy, fx = f[2], f[1], f[0]
    s = a
    counts = np.ones_like(a)
    for axis, step in ((0, fz), (1, fy), (2, fx)):
        idx = np.arange(0, a.shape[axis], step)
        s = np.add.reduceat(s, idx, axis=axis)
        counts = np.add.reduceat(counts, idx, axis=axis)
    return s / counts


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.startswith("geometry_"):
            os.remove(os.path.join(OUT, old))
    rng = np.random.default_rng(20240611)
    # Inputs, as (z, y, x) arrays: extents 7x6x5 and 4x1x3 (x y z).
    a = rng.uniform(-1.0, 1.0, size=(5, 6, 7))
    b = rng.uniform(-1.0, 1.0, size=(3, 1, 4))
    # Integer inputs for the rounding of integer zooms: c is uint16, d int16 (small values, so
    # that float and double interpolation round alike).
    c = rng.integers(0, 1000, size=(4, 5, 6)).astype(np.float64)
    d = rng.integers(-500, 500, size=(4, 5, 6)).astype(np.float64)
    inputs = {"a": (a, save("geometry_in_a.f64", a)), "b": (b, save("geometry_in_b.f64", b)),
              "c": (c, save("geometry_in_c_u16.f64", c)), "d": (d, save("geometry_in_d_i16.f64", d))}
    lines = []

    def add(op, src, expected, tag, params=()):
        arr, in_file = inputs[src]
        out_file = save("geometry_%s_%s_%s.f64" % (op, src, tag), expected)
        fields = [op, in_file, *xyz(arr), out_file, *xyz(expected), *params]
        lines.append(" ".join(str(f) for f in fields))

    for src, exts in (("a", [(13, 4, 9), (14, 12, 10), (3, 3, 2), (1, 11, 5), (7, 6, 5)]),
                      ("b", [(6, 3, 1), (1, 1, 1), (9, 2, 7)])):
        for e in exts:
            add("resize", src, zoom_to(inputs[src][0], e), "%dx%dx%d" % e)

    for src, np_type, tag in (("c", np.uint16, "u16"), ("d", np.int16, "i16")):
        for e in ((11, 9, 7), (4, 3, 2)):
            r = zoom_to(inputs[src][0].astype(np_type), e)
            assert r.dtype == np_type
            add("resize", src, r.astype(np.float64), "%dx%dx%d" % e, (tag,))

    for axes in ((0, 1, 2), (1, 0, 2), (2, 1, 0), (0, 2, 1), (1, 2, 0), (2, 0, 1)):
        # numpy axes are (z, y, x): output numpy axis j is our axis 2 - j, fed by our axis
        # axes[2 - j], which is numpy axis 2 - axes[2 - j].
        np_axes = tuple(2 - axes[2 - j] for j in range(3))
        add("permute", "a", np.transpose(a, np_axes), "%d%d%d" % axes, axes)

    # Widths wider than the volume (z before 7 > 5, x after 9 > 7) exercise repeated folding.
    for src, before, after, tag in (("a", (3, 0, 7), (9, 2, 1), "wide"),
                                    ("a", (2, 1, 0), (1, 3, 4), "narrow"),
                                    ("b", (1, 2, 0), (0, 3, 4), "wide")):
        arr = inputs[src][0]
        np_width = ((before[2], after[2]), (before[1], after[1]), (before[0], after[0]))
        for mode, np_mode in NUMPY_PAD.items():
            value = 2.5 if mode == "constant" else 0
            kw = {"constant_values": value} if mode == "constant" else {}
            padded = np.pad(arr, np_width, mode=np_mode, **kw)
            if mode == "wrap" and any(max(w) > n for w, n in zip(np_width, arr.shape)):
                # numpy < 2.0 folds a 'wrap' pad wider than the array oddly; numpy >= 2.0 (and
                # voxstream) repeat the array periodically, which is what indexing modulo n gives.
                periodic = arr[np.ix_(*[(np.arange(n + w[0] + w[1]) - w[0]) % n
                                        for w, n in zip(np_width, arr.shape)])]
                if int(np.__version__.split(".")[0]) >= 2:
                    assert np.array_equal(padded, periodic)
                padded = periodic
            add("pad", src, padded, "%s_%s" % (tag, mode), (*before, *after, mode, value))

    for off, ext in (((1, 2, 1), (5, 3, 4)), ((0, 0, 0), (7, 6, 5)), ((6, 5, 4), (1, 1, 1))):
        ox, oy, oz = off
        ex, ey, ez = ext
        add("crop", "a", a[oz:oz + ez, oy:oy + ey, ox:ox + ex], "%d%d%d" % off, off)

    for f in ((2, 2, 2), (3, 2, 5), (7, 1, 2)):
        full = block_mean(a, f)
        # Remainders dropped: the leading whole blocks (numpy reshape-mean agrees).
        nz, ny, nx = (a.shape[0] // f[2], a.shape[1] // f[1], a.shape[2] // f[0])
        drop = a[:nz * f[2], :ny * f[1], :nx * f[0]]
        drop = drop.reshape(nz, f[2], ny, f[1], nx, f[0]).mean(axis=(1, 3, 5))
        assert np.allclose(drop, full[:nz, :ny, :nx])
        tag = "%d%d%d" % f
        add("downsample", "a", drop, tag + "_drop", f)
        if full.shape != drop.shape:
            add("downsample", "a", full, tag + "_keep", f)

    with open(os.path.join(OUT, "geometry_index.txt"), "w") as fh:
        fh.write("# Generated by tests/ops/gen_geometry_fixtures.py (scipy %s, numpy %s).\n"
                 % (scipy.__version__, np.__version__))
        fh.write("# <op> <input> <in x y z> <expected> <out x y z> <params...>; see the script.\n")
        fh.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (len(lines), OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
