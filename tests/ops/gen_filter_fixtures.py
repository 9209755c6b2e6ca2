#!/usr/bin/python3
"""Regenerates the scipy.ndimage fixtures of the filter tests (tests/ops/test_filter.cu).

Run from anywhere with Debian's python3-scipy:  /usr/bin/python3 tests/ops/gen_filter_fixtures.py

Every array is stored as raw little-endian float64 in x-fastest order (numpy C order of an array
indexed [z, y, x]); integer inputs and outputs are stored as their exact float64 values. The
index, fixtures/filter_index.txt, has one case per line:

    <op> in=<file> dtype=<f64|u16> ext=<nx>,<ny>,<nz> out=<file> dims=<2|3> mode=<mode>
         cval=<value> [size=<sx>,<sy>,<sz> | sigma=<sx>,<sy>,<sz> | axis=<x|y|z>]

Sizes and sigmas are given x first, as voxstream takes them; scipy gets them reversed. dims=2
means voxstream's per-slice filter: scipy's 2D filter applied to every z-slice.
"""
import os
import sys

import numpy as np
import scipy
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
AXIS = {"x": 2, "y": 1, "z": 0}  # voxstream axis -> numpy axis of a [z, y, x] array
AXIS2D = {"x": 1, "y": 0}  # ... of a [y, x] slice

lines = []


def save(name, a):
    np.ascontiguousarray(a, dtype="<f8").tofile(os.path.join(OUT, name))


def per_slice(fn, a):
    return np.stack([fn(a[k]) for k in range(a.shape[0])])


def run(op, a, dims, mode, cval, p):
    kw = dict(mode=mode, cval=cval)
    if op == "uniform":
        sx, sy, sz = p
        size = (1, sy, sx) if dims == 2 else (sz, sy, sx)
        return ndi.uniform_filter(a, size=size, **kw)
    if op == "erosion":
        sx, sy, sz = p
        size = (1, sy, sx) if dims == 2 else (sz, sy, sx)
        return ndi.grey_erosion(a, size=size, **kw)
    if op == "dilation":
        sx, sy, sz = p
        size = (1, sy, sx) if dims == 2 else (sz, sy, sx)
        return ndi.grey_dilation(a, size=size, **kw)
    if op == "median":
        size = (1, p, p) if dims == 2 else p
        return ndi.median_filter(a, size=size, **kw)
    if op == "gaussian":
        sx, sy, sz = p
        if dims == 2:
            return per_slice(lambda s: ndi.gaussian_filter(s, (sy, sx), **kw), a)
        return ndi.gaussian_filter(a, (sz, sy, sx), **kw)
    if op == "sobel":
        if dims == 2:
            return per_slice(lambda s: ndi.sobel(s, AXIS2D[p], **kw), a)
        return ndi.sobel(a, AXIS[p], **kw)
    if op == "gradmag":
        if dims == 2:
            return per_slice(lambda s: ndi.generic_gradient_magnitude(s, ndi.sobel, **kw), a)
        return ndi.generic_gradient_magnitude(a, ndi.sobel, **kw)
    raise ValueError(op)


def case(op, src, dims, mode, cval, p, tag):
    name, a, dtype = src
    out = f"filter_{op}_{tag}.f64"
    save(out, run(op, a, dims, mode, cval, p))
    nz, ny, nx = a.shape
    line = (f"{op} in={name} dtype={dtype} ext={nx},{ny},{nz} out={out} dims={dims} "
            f"mode={mode} cval={cval!r}")
    if op in ("uniform", "erosion", "dilation", "gaussian"):
        key = "sigma" if op == "gaussian" else "size"
        line += f" {key}={p[0]!r},{p[1]!r},{p[2]!r}"
    elif op == "median":
        line += f" size={p}"
    elif op == "sobel":
        line += f" axis={p}"
    lines.append(line)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.startswith("filter_"):
            os.remove(os.path.join(OUT, f))
    rng = np.random.default_rng(20261202)
    # a: the main float64 input, 17 x 13 x 11 (x, y, z) in [0, 1).
    a = rng.random((11, 13, 17))
    save("filter_in_a.f64", a)
    A = ("filter_in_a.f64", a, "f64")
    # b: a small float64 input for the per-slice (2D) variants, 9 x 7 x 5.
    b = rng.random((5, 7, 9)) * 2.0 - 1.0
    save("filter_in_b.f64", b)
    B = ("filter_in_b.f64", b, "f64")
    # c: a tiny input, 4 x 3 x 2, for windows larger than the volume in every mode.
    c = rng.random((2, 3, 4))
    save("filter_in_c.f64", c)
    C = ("filter_in_c.f64", c, "f64")
    # u: uint16 over the full range, 9 x 7 x 5: outputs stay uint16 as in voxstream.
    u = rng.integers(0, 65535, size=(5, 7, 9), endpoint=True).astype(np.uint16)
    save("filter_in_u16.f64", u)
    U = ("filter_in_u16.f64", u, "u16")

    for mode in ("reflect", "nearest", "constant", "wrap"):
        cval = 0.5 if mode == "constant" else 0.0
        case("gaussian", A, 3, mode, cval, (1.0, 1.5, 2.0), f"a_{mode}")
    case("uniform", A, 3, "reflect", 0.0, (3, 3, 3), "a_3_reflect")
    case("uniform", A, 3, "constant", 0.5, (5, 5, 5), "a_5_constant")
    for ax in ("x", "y", "z"):
        case("sobel", A, 3, "reflect", 0.0, ax, f"a_{ax}_reflect")
    case("sobel", A, 3, "constant", 0.5, "y", "a_y_constant")
    case("gradmag", A, 3, "nearest", 0.0, None, "a_nearest")
    case("median", A, 3, "reflect", 0.0, 3, "a_3_reflect")
    case("median", A, 3, "wrap", 0.0, 5, "a_5_wrap")
    case("erosion", A, 3, "reflect", 0.0, (3, 3, 3), "a_3_reflect")
    case("dilation", A, 3, "constant", 0.25, (3, 3, 3), "a_3_constant")

    case("gaussian", B, 2, "reflect", 0.0, (1.5, 1.0, 0.0), "b2d_reflect")
    case("uniform", B, 2, "wrap", 0.0, (3, 5, 1), "b2d_35_wrap")
    case("sobel", B, 2, "constant", 0.5, "x", "b2d_x_constant")
    case("gradmag", B, 2, "reflect", 0.0, None, "b2d_reflect")
    case("median", B, 2, "nearest", 0.0, 3, "b2d_3_nearest")
    case("median", B, 2, "constant", -0.25, 5, "b2d_5_constant")
    case("erosion", B, 2, "wrap", 0.0, (5, 3, 1), "b2d_53_wrap")

    for mode in ("reflect", "nearest", "constant", "wrap"):
        cval = 0.75 if mode == "constant" else 0.0
        case("uniform", C, 3, mode, cval, (5, 5, 7), f"c_557_{mode}")
        case("gaussian", C, 3, mode, cval, (2.0, 2.0, 2.0), f"c_{mode}")
    case("median", C, 3, "reflect", 0.0, 5, "c_5_reflect")
    case("sobel", C, 3, "wrap", 0.0, "z", "c_z_wrap")
    case("gradmag", C, 3, "constant", 0.75, None, "c_constant")

    case("uniform", U, 3, "reflect", 0.0, (3, 3, 3), "u16_3_reflect")
    case("uniform", U, 3, "constant", 2.5, (5, 3, 5), "u16_535_constant")
    case("uniform", U, 2, "nearest", 0.0, (5, 5, 1), "u16_2d_55_nearest")
    case("erosion", U, 3, "constant", 7.0, (3, 3, 3), "u16_3_constant")
    case("dilation", U, 3, "wrap", 0.0, (3, 5, 3), "u16_353_wrap")
    case("median", U, 3, "reflect", 0.0, 3, "u16_3_reflect")

    with open(os.path.join(OUT, "filter_index.txt"), "w") as f:
        f.write(f"# Generated by tests/ops/gen_filter_fixtures.py (scipy {scipy.__version__}, "
                f"numpy {np.__version__}); see the script for the format.\n")
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT)
                if n.startswith("filter_"))
    print(f"{len(lines)} cases, {total} bytes in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
