#!/usr/bin/python3
"""Regenerates the scipy.ndimage fixtures of the binary morphology tests
(tests/ops/test_morphology.cu).

Run from anywhere with Debian's python3-scipy:  /usr/bin/python3 tests/ops/gen_morphology_fixtures.py

Inputs are random masks (blobs and noise) whose foreground voxels hold 1, 3 or 200 (so that "nonzero", not "== 1",
is what counts), stored as raw uint8 in x-fastest order (numpy C order of an array indexed
[z, y, x]) in fixtures/morph_in_<name>.u8. Every expected output (0/1, same order) is
appended to fixtures/morph_out.bits, packed 8 voxels a byte (voxel i in bit i % 8 of byte i / 8,
each output padded to whole bytes); the index, fixtures/morph_index.txt, has one case per line:

    <op> in=<name> ext=<nx>,<ny>,<nz> se=<kind> p=<a>,<b>,<c> dims=<2|3> it=<n> bv=<0|1>
         off=<byte offset in morph_out.bits>

kind is box (p = sizes x, y, z), cross (p unused) or ball (p = radii x, y, z). The ball is
skimage.morphology.ball(r) for equal radii (dx^2 + dy^2 + dz^2 <= r^2; skimage is not needed),
and for unequal ones the ellipsoid sum (d_a / r_a)^2 <= 1 over axes of nonzero radius, computed
in integers as voxstream does. dims=2 means the element has z extent 1 (per-slice morphology).
"""
import os

import numpy as np
import scipy
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
rng = np.random.default_rng(20)


def mask(shape, density, sigma=1.5):
    # Blobs (smoothed noise above a quantile) with 3% of the voxels flipped: structure at every
    # scale, so that erosions and dilations by the larger elements stay non-trivial.
    field = ndi.gaussian_filter(rng.standard_normal(shape), sigma, mode="wrap")
    fg = field > np.quantile(field, 1 - density)
    fg ^= rng.random(shape) < 0.03
    vals = rng.choice(np.array([1, 3, 200], dtype=np.uint8), size=shape)
    return np.where(fg, vals, 0).astype(np.uint8)


INPUTS = {
    "half": mask((9, 13, 17), 0.5),
    "dense": mask((9, 13, 17), 0.85),
    "sparse": mask((9, 13, 17), 0.12),
    "flat": mask((1, 13, 17), 0.6),
    "tiny": mask((3, 4, 5), 0.7),
    "big": mask((15, 23, 31), 0.5, 2.5),
}


def ellipsoid(rx, ry, rz):
    r = [rx, ry, rz]
    p = 1
    for v in r:
        if v > 0:
            p *= v * v
    f = [p // (v * v) if v > 0 else 0 for v in r]
    z, y, x = np.ogrid[-rz:rz + 1, -ry:ry + 1, -rx:rx + 1]
    return (x * x * f[0] + y * y * f[1] + z * z * f[2]) <= p


def structure(kind, p, dims):
    if kind == "box":
        sx, sy, sz = p
        return np.ones((1 if dims == 2 else sz, sy, sx), dtype=bool)
    if kind == "cross":
        if dims == 2:
            return ndi.generate_binary_structure(2, 1)[None]
        return ndi.generate_binary_structure(3, 1)
    rx, ry, rz = p
    return ellipsoid(rx, ry, 0 if dims == 2 else rz)


def run(op, a, st, it, bv):
    fn = {"erosion": ndi.binary_erosion, "dilation": ndi.binary_dilation,
          "opening": ndi.binary_opening, "closing": ndi.binary_closing}[op]
    return fn(a, structure=st, iterations=it, border_value=bv)


SES = [
    ("box", (3, 3, 3), 3),
    ("box", (5, 3, 1), 3),
    ("box", (3, 5, 7), 2),
    ("box", (1, 1, 1), 3),
    ("cross", (0, 0, 0), 3),
    ("cross", (0, 0, 0), 2),
    ("ball", (1, 1, 1), 3),
    ("ball", (2, 2, 2), 3),
    ("ball", (3, 3, 3), 3),
    ("ball", (2, 2, 2), 2),
    ("ball", (3, 1, 2), 3),
    ("ball", (0, 2, 1), 3),
]
OPS = ["erosion", "dilation", "opening", "closing"]
COMBOS = [(1, 0), (2, 1), (1, 1), (2, 0)]  # (iterations, border_value)


def main():
    for name, a in INPUTS.items():
        np.ascontiguousarray(a).tofile(os.path.join(OUT, f"morph_in_{name}.u8"))
    names = list(INPUTS)
    lines = [f"# scipy {scipy.__version__}, numpy {np.__version__}; see gen_morphology_fixtures.py"]
    blob = bytearray()
    n = 0
    for si, (kind, p, dims) in enumerate(SES):
        for oi, op in enumerate(OPS):
            for ci, (it, bv) in enumerate(COMBOS):
                if kind == "box" and p == (1, 1, 1) and ci >= 2:
                    continue
                # The inputs in turn, from a rotating start; the first whose result is not
                # constant (an all-0 or all-1 result tests little).
                st = structure(kind, p, dims)
                for j in range(len(names)):
                    name = names[(si + oi + ci + j) % len(names)]
                    a = INPUTS[name]
                    got = run(op, a, st, it, bool(bv)).astype(np.uint8)
                    if got.min() != got.max():
                        break
                nz, ny, nx = a.shape
                lines.append(f"{op} in={name} ext={nx},{ny},{nz} se={kind} "
                             f"p={p[0]},{p[1]},{p[2]} dims={dims} it={it} bv={bv} off={len(blob)}")
                blob += np.packbits(got.ravel(), bitorder="little").tobytes()
                n += 1
    with open(os.path.join(OUT, "morph_out.bits"), "wb") as f:
        f.write(blob)
    with open(os.path.join(OUT, "morph_index.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{n} cases, {len(blob)} bytes of outputs")


if __name__ == "__main__":
    main()
