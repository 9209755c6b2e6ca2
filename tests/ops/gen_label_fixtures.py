#!/usr/bin/python3
"""Regenerates the scipy.ndimage fixtures of vox::label and vox::binary_fill_holes
(tests/ops/test_label.cu).

Run from anywhere with Debian's python3-scipy:  /usr/bin/python3 tests/ops/gen_label_fixtures.py

Masks are stored as raw uint8 (0 or 1), labels as raw little-endian uint16 (every case has fewer than 65536
components) and filled masks as raw
uint8, all in x-fastest order (numpy C order of an array indexed [z, y, x]). The index,
fixtures/label_index.txt, has one case per line:

    label mask=<file> ext=<nx>,<ny>,<nz> conn=<c> out=<file> n=<components>
    fill  mask=<file> ext=<nx>,<ny>,<nz> conn=<c> out=<file>

Connectivity c is voxstream's: 6, 18, 26 (scipy's 3D structures of rank 3 and connectivity 1, 2,
3) or 4, 8 (in-plane: a 3x3x3 structure whose z = +-1 planes are zero).
"""
import os
import sys

import numpy as np
import scipy
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
CONNS = (4, 8, 6, 18, 26)

lines = []
masks = {}


def structure(conn):
    if conn in (6, 18, 26):
        return ndi.generate_binary_structure(3, {6: 1, 18: 2, 26: 3}[conn])
    s = np.zeros((3, 3, 3), bool)
    s[1] = ndi.generate_binary_structure(2, 1 if conn == 4 else 2)
    return s


def mask_file(tag, m):
    name = f"label_mask_{tag}.u8"
    if name in masks:
        assert np.array_equal(masks[name], m), f"two masks tagged {tag}"
    else:
        np.ascontiguousarray(m, dtype=np.uint8).tofile(os.path.join(OUT, name))
        masks[name] = m
    return name


def ext(m):
    nz, ny, nx = m.shape
    return f"{nx},{ny},{nz}"


def label_case(tag, m, conn):
    lab, n = ndi.label(m, structure=structure(conn))
    if m.shape[0] == 1 and conn in (4, 8):  # the same as scipy's 2D label of the slice
        lab2, n2 = ndi.label(m[0], structure=ndi.generate_binary_structure(2, 1 if conn == 4 else 2))
        assert n2 == n and (lab2 == lab[0]).all()
    assert n < 65536
    out = f"label_{tag}_c{conn}.u16"
    np.ascontiguousarray(lab, dtype="<u2").tofile(os.path.join(OUT, out))
    lines.append(f"label mask={mask_file(tag, m)} ext={ext(m)} conn={conn} out={out} n={n}")


def fill_case(tag, m, conn):
    f = ndi.binary_fill_holes(m, structure=structure(conn))
    out = f"label_fill_{tag.removeprefix('fill_')}_c{conn}.u8"
    np.ascontiguousarray(f, dtype=np.uint8).tofile(os.path.join(OUT, out))
    lines.append(f"fill mask={mask_file(tag, m)} ext={ext(m)} conn={conn} out={out}")


def blobs(rng, shape, sigma, fraction):
    """Smooth random field thresholded so that about `fraction` of the voxels are set."""
    f = ndi.gaussian_filter(rng.standard_normal(shape), sigma)
    return f > np.quantile(f, 1.0 - fraction)


def snake(nx, ny, nz):
    """A one-voxel path up and down z through columns (x, y) stepping over the slice in x, then y:
    it crosses every slice boundary once per column, and 4- or 6-connected stays one component."""
    m = np.zeros((nz, ny, nx), bool)
    up = True
    cols = [(x, y) for y in range(0, ny, 2) for x in (range(0, nx, 2) if (y // 2) % 2 == 0
                                                        else range((nx - 1) // 2 * 2, -1, -2))]
    prev = None
    for x, y in cols:
        if prev is not None:  # link the previous column's end to this column in the end slice
            px, py = prev
            z = 0 if up else nz - 1
            for xx in range(min(px, x), max(px, x) + 1):
                m[z, py, xx] = True
            for yy in range(min(py, y), max(py, y) + 1):
                m[z, yy, x] = True
        m[:, y, x] = True
        up = not up
        prev = (x, y)
    return m


def hollow_sphere(n, r_out, r_in):
    c = (n - 1) / 2.0
    z, y, x = np.mgrid[:n, :n, :n]
    d = np.sqrt((x - c) ** 2 + (y - c) ** 2 + (z - c) ** 2)
    return (d <= r_out) & (d >= r_in)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.startswith("label_"):
            os.remove(os.path.join(OUT, f))
    rng = np.random.default_rng(20261220)

    # Random voxels of several densities, odd extents 17 x 13 x 9 (x, y, z).
    for d in (10, 30, 50, 70):
        m = rng.random((9, 13, 17)) < d / 100.0
        for c in CONNS:
            label_case(f"rand{d}", m, c)
    # Blobs (~30% set) over more slices, 20 x 16 x 25: many components cross many slabs.
    m = blobs(rng, (25, 16, 20), 1.5, 0.3)
    for c in CONNS:
        label_case("blobs30", m, c)
    # One slice (scipy's 2D label for 4 and 8; the 3D structures see no z neighbour).
    m = rng.random((1, 19, 23)) < 0.45
    for c in CONNS:
        label_case("slice", m, c)
    # Rows and columns: 37 x 1 x 1 and 1 x 1 x 29.
    m = rng.random((1, 1, 37)) < 0.5
    for c in (4, 6, 26):
        label_case("row", m, c)
    m = rng.random((29, 1, 1)) < 0.5
    for c in (8, 6, 18):
        label_case("column", m, c)
    # A single voxel, set; and isolated voxels in 5 x 4 x 3.
    label_case("one", np.ones((1, 1, 1), bool), 26)
    m = np.zeros((3, 4, 5), bool)
    m[0, 0, 0] = m[2, 3, 4] = m[1, 2, 2] = m[2, 0, 4] = True
    for c in (6, 26):
        label_case("isolated", m, c)
    # One object through every slice (a column joined to random voxels) over 11 x 9 x 40.
    m = rng.random((40, 9, 11)) < 0.2
    m[:, 4, 5] = True
    for c in (6, 18, 26, 4):
        label_case("spanning", m, c)
    # A snake that crosses every slice boundary many times, alone and in noise.
    m = snake(9, 7, 23)
    for c in CONNS:
        label_case("snake", m, c)
    noisy = m | (rng.random(m.shape) < 0.08)
    for c in (6, 26):
        label_case("snake_noise", noisy, c)
    # Diagonal chains: joined only by edges or corners.
    m = np.zeros((12, 12, 12), bool)
    for k in range(12):
        m[k, k, k] = True  # corners only
        m[k, (k + 3) % 12, 0] = True  # edges in y-z
    for c in (6, 18, 26):
        label_case("diagonal", m, c)

    # binary_fill_holes: a hollow sphere (its inside is a hole), a cup open to the border (not
    # filled), random masks dense enough to hold holes, one slice, and the snake.
    sphere = hollow_sphere(15, 6.5, 4.0)
    for c in (6, 26, 4):
        fill_case("sphere", sphere, c)
    cup = np.zeros((10, 11, 12), bool)
    cup[2:, 2:9, 2:10] = True
    cup[4:, 4:7, 4:8] = False  # open at z = nz - 1
    cup[5:8, 1:5, 5] = False  # and a pocket that is closed
    for c in (6, 18):
        fill_case("cup", cup, c)
    for d in (60, 75):
        m = rng.random((9, 13, 17)) < d / 100.0
        for c in CONNS:
            fill_case(f"rand{d}", m, c)
    m = blobs(rng, (25, 16, 20), 1.5, 0.7)
    for c in (6, 26, 8):
        fill_case("blobs70", m, c)
    m = rng.random((1, 19, 23)) < 0.7
    for c in CONNS:
        fill_case("fill_slice", m, c)
    ring = np.zeros((30, 9, 9), bool)
    ring[:, 1:8, 1:8] = True
    ring[:, 3:6, 3:6] = False  # a tube along z: in-plane holes, open in 3D
    ring[0, 3:6, 3:6] = ring[-1, 3:6, 3:6] = True  # closed at both ends: a 3D hole too
    for c in (6, 26, 4, 8):
        fill_case("tube", ring, c)

    with open(os.path.join(OUT, "label_index.txt"), "w") as f:
        f.write(f"# Generated by tests/ops/gen_label_fixtures.py (scipy {scipy.__version__}, "
                f"numpy {np.__version__}); see the script for the format.\n")
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT)
                if n.startswith("label_"))
    print(f"{len(lines)} cases, {total} bytes in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
