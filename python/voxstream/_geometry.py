"""Geometry (zoom, resize, downsample_mean, transpose, crop, pad), the other elementwise ops
(clip, rescale, normalize), the other reductions (statistics, argmin/argmax, minimum_position,
maximum_position, extrema, reduce_slices), histogram percentiles and the conversions of
AsyncValue. Imported into the voxstream namespace."""
from __future__ import annotations

import numbers

import numpy as _np

from . import _voxstream as _vs
from . import _Call, _dtype_name, _unary  # noqa: F401 (package helpers)

__all__ = [
    "zoom", "resize", "downsample_mean", "transpose", "crop", "pad", "clip", "clamp",
    "rescale", "normalize", "statistics", "argmin", "argmax", "minimum_position",
    "maximum_position", "extrema", "reduce_slices",
]


def _zyx(value, name, n=3):
    """A scalar or a (z, y, x) sequence as a (z, y, x) tuple of ints (2 values: (y, x), z 1)."""
    if isinstance(value, numbers.Number):
        return (int(value),) * 3
    t = tuple(int(v) for v in value)
    if len(t) == 2:
        return (1,) + t
    if len(t) != n:
        raise ValueError(f"voxstream: {name} takes a scalar or one value per axis (z, y, x)")
    return t


def _lead(x):
    """Leading axes of length 1 that a 1D or 2D array gains as a volume (0 for volumes)."""
    return 3 - int(getattr(x, "ndim", 3))


def _per_axis(value, x, cast):
    """A scalar for each of the input's own axes (the added leading ones get 1)."""
    if isinstance(value, numbers.Number):
        k = _lead(x)
        return (cast(1),) * k + (cast(value),) * (3 - k)
    return value


def _shape_of(x):
    s = tuple(x.shape)
    return (1,) * (3 - len(s)) + s


# --- geometry ----------------------------------------------------------------------------------
def resize(input, output_shape, out=None, *, streams=None):  # noqa: A002
    """Trilinear resize to numpy ``output_shape`` (z, y, x), corner-aligned: output index i
    samples input coordinate i * (n_in - 1) / (n_out - 1), as scipy.ndimage.zoom with order=1,
    mode='nearest', grid_mode=False (skimage.transform.resize aligns pixel centres instead).
    Integer results are rounded to nearest, halves away from zero. Shape from ``out`` when
    given."""
    c = _Call(streams)
    v = c.input(input)
    o = c.output(out)
    shape = _shape_of(o) if o is not None else _zyx(output_shape, "output_shape")
    return c.done(_vs.resize(v, shape[::-1], out=o), out)


def zoom(input, zoom, out=None, order=1, mode="nearest", grid_mode=False, *,  # noqa: A002
         streams=None):
    """scipy.ndimage.zoom with order=1 (trilinear; scipy's default order is 3, which voxstream
    does not have): the output shape is round(shape * zoom) per axis. Only order=1 and
    grid_mode=False are supported; with them no sample falls outside the volume, so ``mode``
    'nearest', 'reflect' and 'mirror' give the same result (others raise)."""
    if order != 1:
        raise ValueError("voxstream.zoom: only order=1 (trilinear) is supported")
    if grid_mode:
        raise ValueError("voxstream.zoom: only grid_mode=False is supported")
    if mode not in ("nearest", "reflect", "mirror"):
        raise ValueError(f"voxstream.zoom: mode '{mode}' is not supported (nearest, reflect, "
                         "mirror: the same for order 1)")
    c = _Call(streams)
    v = c.input(input)
    o = c.output(out)
    shape = v.shape
    if o is not None:
        new = o.shape
    else:
        z = tuple(map(float, _per_axis(zoom, input, float)))
        if len(z) == 2:
            z = (1.0,) + z
        if len(z) != 3:
            raise ValueError("voxstream.zoom: zoom takes a scalar or one value per axis")
        new = tuple(int(round(n * f)) for n, f in zip(shape, z))
    return c.done(_vs.resize(v, tuple(new)[::-1], out=o), out)


def downsample_mean(input, factors, out=None, keep_partial=False, *, streams=None):  # noqa: A002
    """Means of blocks of ``factors`` (scalar or (z, y, x)) voxels. The shape is shape //
    factors (a trailing partial block dropped) or, with keep_partial, rounded up (a partial
    block is the mean of the voxels it has; skimage.transform.downscale_local_mean pads it
    with zeros instead). Integer means round to nearest, halves away from zero."""
    c = _Call(streams)
    v = c.input(input)
    o = c.output(out)
    f = _zyx(_per_axis(factors, input, int), "factors")
    return c.done(_vs.downsample_mean(v, f[::-1], bool(keep_partial), out=o), out)


def transpose(input, axes=None, out=None, *, streams=None):  # noqa: A002
    """numpy.transpose of the (z, y, x) volume: output axis j is input axis axes[j] (numpy
    axes; default reversed, (2, 1, 0))."""
    if axes is None:
        axes = (2, 1, 0)
    ax = tuple(int(a) + 3 if int(a) < 0 else int(a) for a in axes)
    if sorted(ax) != [0, 1, 2]:
        raise ValueError(f"voxstream.transpose: axes {tuple(axes)} is not a permutation of "
                         "(0, 1, 2)")
    # voxstream axis k (0 = x) is numpy axis 2 - k.
    native = tuple(2 - ax[2 - k] for k in range(3))
    return _unary(_vs.permute, input, out, native, streams=streams)


def crop(input, start, shape=None, out=None, *, streams=None):  # noqa: A002
    """input[z0:z0+nz, y0:y0+ny, x0:x0+nx] as a new volume: ``start`` (z0, y0, x0), ``shape``
    (nz, ny, nx) (from ``out`` when given). The box must lie inside the volume."""
    c = _Call(streams)
    v = c.input(input)
    o = c.output(out)
    if o is None and shape is None:
        raise ValueError("voxstream.crop: give shape= or out=")
    s = _shape_of(o) if o is not None else _zyx(shape, "shape")
    st = _zyx(start, "start")
    if min(st) < 0:
        raise ValueError("voxstream.crop: start must be >= 0")
    return c.done(_vs.crop(v, st[::-1], s[::-1], out=o), out)


_PAD_MODES = {"constant": 2, "edge": 1, "symmetric": 0, "wrap": 3}


def _pad_widths(pad_width):
    """numpy.pad's pad_width ((before, after) per axis, z y x) as (before xyz, after xyz)."""
    pw = _np.asarray(pad_width, dtype=_np.int64)
    if pw.ndim == 0:
        pw = _np.full((3, 2), int(pw))
    elif pw.shape in ((1,), (2,), (1, 2)):
        pw = _np.tile(pw.reshape(-1)[:2] if pw.size == 2 else _np.repeat(pw.reshape(-1), 2),
                      (3, 1))
    elif pw.shape == (2, 2):
        pw = _np.vstack([[0, 0], pw])
    if pw.shape != (3, 2):
        raise ValueError("voxstream.pad: pad_width takes an int, (before, after) or one "
                         "(before, after) per axis (z, y, x)")
    if (pw < 0).any():
        raise ValueError("voxstream.pad: pad widths must be >= 0")
    before = tuple(int(b) for b in pw[::-1, 0])
    after = tuple(int(a) for a in pw[::-1, 1])
    return before, after


def pad(input, pad_width, mode="constant", constant_values=0, out=None, *,  # noqa: A002
        streams=None):
    """numpy.pad with mode 'constant' (constant_values: one number), 'edge', 'symmetric' or
    'wrap' (numpy's 'reflect', which does not repeat the edge voxel, is not supported)."""
    if mode not in _PAD_MODES:
        raise ValueError(f"voxstream.pad: mode '{mode}' is not supported (constant, edge, "
                         "symmetric, wrap)")
    if not isinstance(constant_values, numbers.Number):
        raise ValueError("voxstream.pad: constant_values must be one number")
    if _lead(input) and _np.ndim(pad_width) <= 1:  # numpy pads only the array's own axes
        pw = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64).reshape(-1), (2,))
        pad_width = [(0, 0)] * _lead(input) + [tuple(pw)] * (3 - _lead(input))
    before, after = _pad_widths(pad_width)
    return _unary(_vs.pad, input, out, before, after, _PAD_MODES[mode], float(constant_values),
                  streams=streams)


# --- elementwise -------------------------------------------------------------------------------
def clip(input, a_min, a_max, out=None, *, streams=None):  # noqa: A002
    """numpy.clip: min(max(input, a_min), a_max), of the input's type (bounds saturated to
    it, integers rounded to nearest); NaN stays NaN."""
    return _unary(_vs.clamp, input, out, float(a_min), float(a_max), streams=streams)


clamp = clip


def rescale(input, scale, offset=0.0, dtype=None, out=None, *, streams=None):  # noqa: A002
    """input * scale + offset in double, saturated into ``dtype`` (default: the input's; the
    dtype of ``out`` when given). voxstream's name: not skimage.transform.rescale."""
    return _linear(False, input, scale, offset, dtype, out, streams)


def normalize(input, lo=0.0, hi=1.0, dtype="float32", out=None, *, streams=None):  # noqa: A002
    """[min(input), max(input)] mapped linearly onto [lo, hi] (NaN ignored by min/max; all lo
    for a constant volume), saturated into ``dtype``. No host wait."""
    return _linear(True, input, lo, hi, dtype, out, streams)


def _linear(norm, input, a, b, dtype, out, streams):  # noqa: A002
    c = _Call(streams)
    v = c.input(input)
    o = c.output(out)
    name = _dtype_name(dtype) if dtype is not None else ""
    return c.done(_vs.linear(norm, v, float(a), float(b), name, out=o), out)


# --- reductions --------------------------------------------------------------------------------
def _reduce(fn, input, *args, streams=None):  # noqa: A002
    c = _Call(streams)
    v = c.input(input)
    r = fn(v, *args)
    c.done(None, None)
    return r


def statistics(input, ddof=0, *, streams=None):  # noqa: A002
    """count, min, max, sum, mean, variance and std in one pass (min/max ignore NaN).
    Asynchronous: ``.get()`` returns a dict."""
    return _reduce(_vs.statistics, input, int(ddof), streams=streams)


def argmin(input, *, streams=None):  # noqa: A002
    """numpy.argmin: the flat (C-order) index of the smallest voxel, first occurrence, NaN
    ignored (numpy.nanargmin). Asynchronous (an AsyncValue of an int)."""
    return _reduce(_vs.arg_extremum, input, False, "index", streams=streams)


def argmax(input, *, streams=None):  # noqa: A002
    """numpy.nanargmax (first occurrence). Asynchronous."""
    return _reduce(_vs.arg_extremum, input, True, "index", streams=streams)


def minimum_position(input, *, streams=None):  # noqa: A002
    """scipy.ndimage.minimum_position (no labels): (z, y, x) of the smallest voxel, first in
    memory order, NaN ignored. Asynchronous."""
    return _reduce(_vs.arg_extremum, input, False, "position", streams=streams)


def maximum_position(input, *, streams=None):  # noqa: A002
    """scipy.ndimage.maximum_position (no labels). Asynchronous."""
    return _reduce(_vs.arg_extremum, input, True, "position", streams=streams)


def extrema(input, *, streams=None):  # noqa: A002
    """scipy.ndimage.extrema (no labels): (min, max, min_position, max_position), four
    AsyncValues."""
    c = _Call(streams)
    v = c.input(input)
    r = (_vs.min(v), _vs.max(v), _vs.arg_extremum(v, False, "position"),
         _vs.arg_extremum(v, True, "position"))
    c.done(None, None)
    return r


def reduce_slices(input, reduction="mean", out=None, *, streams=None):  # noqa: A002
    """The min, max, sum or mean of each z-slice, in float64, as a volume of shape (nz, 1, 1)
    (``result[:, 0, 0]`` equals numpy's ``reduction(input, axis=(1, 2))``; min/max ignore NaN).
    No host wait."""
    return _unary(_vs.reduce_slices, input, out, str(reduction), streams=streams)


# --- histogram percentiles ---------------------------------------------------------------------
def _percentile(self, q):
    """The q-th percentile (0..100) estimated from the counts, interpolated within its bin
    (exact up to one bin width). Waits for the counts."""
    return _vs.percentiles(self, [float(q)])[0]


def _percentiles(self, qs):
    """Several percentiles from one download of the counts, as a numpy float64 array."""
    return _np.asarray(_vs.percentiles(self, [float(q) for q in qs]), dtype=_np.float64)


_vs.Histogram.percentile = _percentile
_vs.Histogram.percentiles = _percentiles


# --- AsyncValue conversions --------------------------------------------------------------------
def _async_int(self):
    return int(self.get())


def _async_index(self):
    v = self.get()
    if not isinstance(v, numbers.Integral):
        raise TypeError("voxstream.AsyncValue: the result is not an integer")
    return int(v)


def _async_repr(self):
    return f"voxstream.AsyncValue({self.get()!r})" if self.ready() else \
        "voxstream.AsyncValue(<pending>)"


_vs.AsyncValue.__int__ = _async_int
_vs.AsyncValue.__float__ = lambda self: float(self.get())
_vs.AsyncValue.__index__ = _async_index
_vs.AsyncValue.__bool__ = lambda self: bool(self.get())
_vs.AsyncValue.__repr__ = _async_repr
