#!/usr/bin/python3
"""Regenerates the scipy.ndimage fixtures of the distance transform tests (test_distance.cu).

Run from anywhere with Debian's python3-scipy:  /usr/bin/python3 tests/ops/gen_distance_fixtures.py

Each case stores, in x-fastest order (numpy C order of an array indexed [z, y, x]):
  edt_<tag>_mask.u8   the mask, uint8 (0 or 1)
  edt_<tag>_dist.f64  scipy.ndimage.distance_transform_edt(mask, sampling), little-endian float64
  edt_<tag>_ind.i16   its indices (return_indices=True) as three little-endian int16 volumes:
                      x, then y, then z (scipy's indices[2], [1], [0])
The index, fixtures/edt_index.txt, has one case per line:

    <tag> ext=<nx>,<ny>,<nz> sampling=<sx>,<sy>,<sz>

Sampling is given x first, as voxstream takes it; scipy gets it reversed. Every mask has at
least one zero voxel (scipy's result without one is not meaningful).
"""
import os

import numpy as np
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
rng = np.random.default_rng(20240620)
lines = []


def case(tag, mask, sampling):
    mask = np.ascontiguousarray(mask, dtype=np.uint8)
    assert (mask == 0).any()
    nz, ny, nx = mask.shape
    sx, sy, sz = sampling
    dist, ind = ndi.distance_transform_edt(mask, sampling=(sz, sy, sx), return_indices=True)
    mask.tofile(os.path.join(OUT, f"edt_{tag}_mask.u8"))
    np.ascontiguousarray(dist, dtype="<f8").tofile(os.path.join(OUT, f"edt_{tag}_dist.f64"))
    assert ind.max() < 32768
    np.ascontiguousarray(np.stack([ind[2], ind[1], ind[0]]), dtype="<i2").tofile(
        os.path.join(OUT, f"edt_{tag}_ind.i16"))
    lines.append(f"{tag} ext={nx},{ny},{nz} sampling={sx!r},{sy!r},{sz!r}")


def random_mask(shape, zero_fraction):
    m = (rng.random(shape) >= zero_fraction).astype(np.uint8)
    if not (m == 0).any():
        m.flat[rng.integers(m.size)] = 0
    return m


ODD = (9, 13, 17)  # [z, y, x]: 17 x 13 x 9
for frac, name in ((0.7, "dense"), (0.2, "mid"), (0.02, "sparse")):
    m = random_mask(ODD, frac)
    case(f"{name}_unit", m, (1.0, 1.0, 1.0))
    case(f"{name}_aniso", m, (0.5, 1.0, 2.5))
# ~30% foreground, a larger volume, anisotropic sampling that is not exactly representable
case("big_aniso", random_mask((17, 25, 32), 0.7), (0.3, 0.7, 1.1))
# blobs: distances of several voxels, long stacks
z, y, x = np.mgrid[0:16, 0:18, 0:22]
blobs = (((x - 8) ** 2 + (y - 8) ** 2 + (z - 8) ** 2 < 42) |
         ((x - 16) ** 2 + (y - 12) ** 2 + (z - 6) ** 2 < 25)).astype(np.uint8)
case("blobs_unit", blobs, (1.0, 1.0, 1.0))
case("blobs_aniso", blobs, (0.5, 1.0, 2.5))
# one slice
case("slice_unit", random_mask((1, 19, 23), 0.1), (1.0, 1.0, 1.0))
case("slice_aniso", random_mask((1, 19, 23), 0.1), (2.5, 0.5, 1.0))
# a single zero voxel
m = np.ones((7, 9, 11), np.uint8)
m[3, 4, 6] = 0
case("single_unit", m, (1.0, 1.0, 1.0))
case("single_aniso", m, (1.0, 2.5, 0.5))
# zeros only in one corner (a 2 x 2 x 2 block at the far corner)
m = np.ones((8, 10, 12), np.uint8)
m[6:, 8:, 10:] = 0
case("corner_unit", m, (1.0, 1.0, 1.0))
case("corner_aniso", m, (0.5, 2.5, 1.0))
# long columns along z (a single zero near one end)
m = np.ones((300, 3, 5), np.uint8)
m[7, 1, 2] = 0
m[250, 0, 4] = 0
case("column_unit", m, (1.0, 1.0, 1.0))

with open(os.path.join(OUT, "edt_index.txt"), "w") as f:
    f.write("# written by tests/ops/gen_distance_fixtures.py (scipy %s)\n" % __import__("scipy").__version__)
    f.write("\n".join(lines) + "\n")
