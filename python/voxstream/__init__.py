"""voxstream: 3D volumes on a set of CUDA streams with a per-slice dependency ledger.

Volumes are indexed (z, y, x) as numpy arrays are. Ops take scipy.ndimage's names and keywords,
accept a Volume or any array (wrapped without a copy where it can be), and return a new Volume,
or write into ``out=`` (a Volume or an array, used in place) and return it. Reductions return
asynchronous results: ``voxstream.sum(v).get()``.

The backend (``voxstream.backend``) is "cuda" (device memory, CuPy interop through DLPack and
``__cuda_array_interface__``) or "host" (host memory, numpy interop through
``__array_interface__``; ``numpy.asarray(volume)`` is zero-copy).
"""
from __future__ import annotations

import numbers

import numpy as _np

from . import _voxstream as _vs
from ._voxstream import AsyncValue, Histogram, StreamSet, Volume

__all__ = [
    "backend", "StreamSet", "Volume", "AsyncValue", "Histogram", "default_streams",
    "asvolume", "from_dlpack", "zeros", "full", "empty_like", "read", "write",
    "copy", "fill", "threshold", "threshold_range", "astype", "add", "subtract", "multiply",
    "divide", "sum", "min", "max", "minimum", "maximum", "mean", "std", "standard_deviation",
    "variance", "histogram", "uniform_filter", "gaussian_filter", "median_filter", "rank_filter",
    "percentile_filter", "grey_erosion", "grey_dilation", "sobel", "gradient_magnitude",
    "max_projection", "min_projection", "mean_projection",
]

backend = _vs.backend
_DTYPES = ("uint8", "uint16", "int16", "int32", "float32", "float64")
_MODES = {"reflect": 0, "nearest": 1, "constant": 2, "grid-constant": 2, "wrap": 3,
          "grid-wrap": 3}

_default = None


def default_streams() -> StreamSet:
    """The stream set used when an op gets only arrays (4 streams, made on first use)."""
    global _default
    if _default is None:
        _default = StreamSet(4)
    return _default


def _dtype_name(dtype) -> str:
    name = _np.dtype(dtype).name
    if name not in _DTYPES:
        raise ValueError(f"voxstream: unsupported dtype '{name}' (voxstream volumes hold "
                         "uint8, uint16, int16, int32, float32 or float64)")
    return name


# --- StreamSet and Volume additions ------------------------------------------------------------
def _streams_enter(self):
    """On CUDA, makes stream 0 of the set CuPy's current stream inside the ``with`` block."""
    if backend == "cuda":
        import cupy  # noqa: PLC0415 (optional dependency)
        s = cupy.cuda.ExternalStream(self.stream_ptr(0), self.device)
        s.__enter__()
        _cupy_stack.append(s)
    return self


def _streams_exit(self, *exc):
    if backend == "cuda" and _cupy_stack:
        _cupy_stack.pop().__exit__(*exc)
    return False


_cupy_stack = []
StreamSet.__enter__ = _streams_enter
StreamSet.__exit__ = _streams_exit


def _volume_dtype(self):
    return _np.dtype(self._dtype_name)


def _to_numpy(self):
    """A copy of the voxels as a numpy array (z, y, x); waits for the work that writes them."""
    a = _np.empty(self.shape, dtype=self.dtype)
    self._download(a.ctypes.data, a.nbytes)
    return a


def _volume_repr(self):
    return f"voxstream.Volume(shape={self.shape}, dtype={self.dtype.name})"


def _from_array(cls, streams, arr):
    """A Volume holding ``arr`` (zero-copy where possible, see asvolume) on ``streams``."""
    return asvolume(arr, streams=streams)


Volume.dtype = property(_volume_dtype)
Volume.ndim = property(lambda self: 3)
Volume.to_numpy = _to_numpy
Volume.__repr__ = _volume_repr
Volume.from_array = classmethod(_from_array)
Volume.__len__ = lambda self: self.shape[0]


# --- making volumes ----------------------------------------------------------------------------
def zeros(shape, dtype="float32", streams=None) -> Volume:
    """A new zero-filled volume of numpy ``shape`` (z, y, x)."""
    return Volume(streams or default_streams(), list(_shape3(shape)), _dtype_name(dtype))


def full(shape, value, dtype="float32", streams=None) -> Volume:
    v = zeros(shape, dtype, streams)
    _vs.fill(v, float(value))
    return v


def empty_like(v: Volume, dtype=None) -> Volume:
    return zeros(v.shape, dtype or v.dtype, v.streams)


def _shape3(shape):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if not 1 <= len(shape) <= 3:
        raise ValueError("voxstream: a volume has 1 to 3 axes (z, y, x)")
    return shape


def _c_contiguous(shape, strides, itemsize):
    if strides is None:
        return True
    want = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != want:
            return False
        want *= n
    return True


def _cupy_current_stream():
    try:
        import cupy  # noqa: PLC0415
    except ImportError:
        return None
    return cupy.cuda.get_current_stream().ptr or 1


def _wrap(x, streams, writable=False):
    """(volume, owner_stream) for array ``x`` without a copy, or None when it cannot be."""
    if backend == "host":
        ai = getattr(x, "__array_interface__", None)
        if ai is None or ai.get("mask") is not None:
            return None
        shape = tuple(ai["shape"])
        typestr = ai["typestr"]
        dt = _np.dtype(typestr)
        if dt.name not in _DTYPES or not dt.isnative or ai.get("offset", 0):
            return None
        if not _c_contiguous(shape, ai.get("strides"), dt.itemsize) or not 1 <= len(shape) <= 3:
            return None
        ptr, readonly = ai["data"]
        if writable and readonly:
            raise ValueError("voxstream: out= is a read-only array")
        if 0 in shape:
            raise ValueError("voxstream: every axis must be longer than 0")
        return _vs._wrap_pointer(streams, ptr, list(shape), dt.name, x, None), None
    # CUDA: DLPack first (the producer orders our home stream after its work), then the CUDA
    # array interface (our home stream waits on its stream entry).
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev = x.__dlpack_device__()[0]
        if dev in (2, 13):
            return _vs._from_dlpack(streams, x), _cupy_current_stream()
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dt = _np.dtype(cai["typestr"])
        if dt.name not in _DTYPES or not _c_contiguous(shape, cai.get("strides"), dt.itemsize):
            return None
        ptr, readonly = cai["data"]
        if writable and readonly:
            raise ValueError("voxstream: out= is a read-only array")
        stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
        return _vs._wrap_pointer(streams, ptr, list(shape), dt.name, x, stream), stream
    return None


def asvolume(x, streams=None, copy=None) -> Volume:
    """``x`` as a Volume: a Volume as it is; an array wrapped without a copy when it is
    C-contiguous, of a voxel type and in the backend's memory (numpy on host, CuPy or any
    DLPack / CUDA-array-interface array on CUDA); otherwise (or with copy=True) a copy.
    copy=False raises ValueError where a copy would be needed."""
    if isinstance(x, Volume):
        if copy:
            return _vs.copy(x)
        return x
    streams = streams or default_streams()
    if not copy:
        w = _wrap(x, streams)
        if w is not None:
            return w[0]
        if copy is False:
            raise ValueError("voxstream.asvolume: the array cannot be used without a copy "
                             "(not C-contiguous, another dtype, or not in this backend's memory)")
    if hasattr(x, "get") and not isinstance(x, _np.ndarray) and backend == "cuda":
        x = x.get()  # a device array that could not be wrapped: through the host
    a = _np.ascontiguousarray(x)
    name = _dtype_name(a.dtype)
    if a.ndim == 0 or a.ndim > 3:
        raise ValueError("voxstream: a volume has 1 to 3 axes (z, y, x)")
    return _vs._upload(streams, a.ctypes.data, list(a.shape), name)


def from_dlpack(x, streams=None) -> Volume:
    """A Volume sharing the memory of DLPack producer ``x`` (no copy)."""
    return _vs._from_dlpack(streams or default_streams(), x)


# --- op plumbing -------------------------------------------------------------------------------
class _Call:
    """An op's arguments as volumes: arrays are wrapped (zero-copy where possible); on CUDA each
    wrapped array's owner stream is then made to wait, on the device, for the op's work."""

    def __init__(self, streams=None):
        self.streams = streams
        self.handback = []

    def input(self, x):
        if isinstance(x, Volume):
            if self.streams is None:
                self.streams = x.streams
            return x
        s = self.streams or default_streams()
        self.streams = s
        w = _wrap(x, s)
        if w is None:
            return asvolume(x, s, copy=True)
        self.handback.append(w)
        return w[0]

    def output(self, out):
        """(volume or None, what the op returns when out was given)."""
        if out is None or isinstance(out, Volume):
            return out
        w = _wrap(out, self.streams or default_streams(), writable=True)
        if w is None:
            raise ValueError("voxstream: out= must be a Volume or a C-contiguous array of a "
                             "voxel type in this backend's memory (it is written in place)")
        self.handback.append(w)
        return w[0]

    def done(self, result, out):
        for vol, stream in self.handback:
            _vs._hand_back(vol, stream)
        self.handback.clear()
        if out is not None and not isinstance(out, Volume):
            return out
        return result


def _unary(fn, input, out, *args, streams=None):
    c = _Call(streams)
    v = c.input(input)
    o = c.output(out)
    return c.done(fn(v, *args, out=o), out)


def _mode(mode):
    try:
        return _MODES[mode]
    except KeyError:
        raise ValueError(f"voxstream: mode '{mode}' is not supported (reflect, nearest, "
                         "constant, wrap)") from None


def _xyz(value, dims, name, cast=int):
    """A scalar or a (z, y, x) / (y, x) sequence as an (x, y, z) tuple."""
    if isinstance(value, numbers.Number):
        v = (cast(value),) * 3
        return v
    seq = tuple(cast(s) for s in value)
    if len(seq) == 3:
        return seq[::-1]
    if len(seq) == 2 and dims == 2:
        return (seq[1], seq[0], 1 if cast is int else 0.0)
    raise ValueError(f"voxstream: {name} takes a scalar or one value per axis (z, y, x)")


def _axis(axis):
    a = int(axis)
    if a < 0:
        a += 3
    if not 0 <= a <= 2:
        raise ValueError(f"voxstream: axis {axis} is out of range for a 3D volume")
    return 2 - a  # numpy axis (z, y, x) -> voxstream axis (x, y, z)


# --- elementwise -------------------------------------------------------------------------------
def copy(input, out=None, *, streams=None):
    """A copy of ``input`` (or into ``out``)."""
    return _unary(_vs.copy, input, out, streams=streams)


def fill(volume, value, *, streams=None):
    """Sets every voxel of ``volume`` (a Volume or array, in place) to ``value`` (saturated)."""
    c = _Call(streams)
    v = c.output(volume)
    _vs.fill(v, float(value))
    return c.done(volume, volume)


def threshold(input, t, out=None, *, streams=None):
    """uint8 mask of ``input > t``."""
    return _unary(_vs.threshold, input, out, float(t), streams=streams)


def threshold_range(input, lo, hi, out=None, *, streams=None):
    """uint8 mask of ``lo <= input <= hi``."""
    return _unary(_vs.threshold_range, input, out, float(lo), float(hi), streams=streams)


def astype(input, dtype, out=None, *, streams=None):
    """``input`` converted to ``dtype`` with saturation (integers round to nearest even)."""
    return _unary(_vs.astype, input, out, _dtype_name(dtype), streams=streams)


def _binary(fn, a, b, out, streams):
    c = _Call(streams)
    va = c.input(a)
    vb = b if isinstance(b, numbers.Number) else c.input(b)
    o = c.output(out)
    return c.done(fn(va, vb, out=o), out)


def add(a, b, out=None, *, streams=None):
    return _binary(_vs.add, a, b, out, streams)


def subtract(a, b, out=None, *, streams=None):
    return _binary(_vs.subtract, a, b, out, streams)


def multiply(a, b, out=None, *, streams=None):
    return _binary(_vs.multiply, a, b, out, streams)


def divide(a, b, out=None, *, streams=None):
    return _binary(_vs.divide, a, b, out, streams)


# --- reductions (asynchronous: .get() waits) ---------------------------------------------------
def _reduce(fn, input, *args, streams=None):
    c = _Call(streams)
    v = c.input(input)
    r = fn(v, *args)
    c.done(None, None)
    return r


def sum(input, *, streams=None) -> AsyncValue:  # noqa: A001 (scipy.ndimage's name)
    """Sum of the voxels (int for integer volumes, float for float ones)."""
    return _reduce(_vs.sum, input, streams=streams)


def min(input, *, streams=None) -> AsyncValue:  # noqa: A001
    return _reduce(_vs.min, input, streams=streams)


def max(input, *, streams=None) -> AsyncValue:  # noqa: A001
    return _reduce(_vs.max, input, streams=streams)


def mean(input, *, streams=None) -> AsyncValue:
    return _reduce(_vs.mean, input, streams=streams)


def variance(input, ddof=0, *, streams=None) -> AsyncValue:
    return _reduce(_vs.variance, input, int(ddof), streams=streams)


def std(input, ddof=0, *, streams=None) -> AsyncValue:
    return _reduce(_vs.std, input, int(ddof), streams=streams)


minimum, maximum, standard_deviation = min, max, std


def histogram(input, min, max, bins, *, streams=None) -> Histogram:  # noqa: A002
    """Counts in ``bins`` equal bins over [min, max) (half-open, also the last bin); voxels
    outside and NaN are not counted. ``.get()`` returns the counts as a numpy uint64 array."""
    c = _Call(streams)
    v = c.input(input)
    h = _vs.histogram(v, float(min), float(max), int(bins))
    c.done(None, None)
    return h


_hist_get = Histogram.get
Histogram.get = lambda self: _np.asarray(_hist_get(self), dtype=_np.uint64)


# --- filters -----------------------------------------------------------------------------------
def uniform_filter(input, size=3, out=None, mode="reflect", cval=0.0, *, dims=3, streams=None):
    """scipy.ndimage.uniform_filter (mean over a box). dims=2 filters each z-slice on its own."""
    return _unary(_vs.uniform_filter, input, out, _xyz(size, dims, "size"), _mode(mode),
                  float(cval), int(dims), streams=streams)


def gaussian_filter(input, sigma, out=None, mode="reflect", cval=0.0, truncate=4.0, *, dims=3,
                    streams=None):
    """scipy.ndimage.gaussian_filter; the result is float32 (float64 for float64 input)."""
    return _unary(_vs.gaussian_filter, input, out, _xyz(sigma, dims, "sigma", float), _mode(mode),
                  float(cval), float(truncate), int(dims), streams=streams)


def median_filter(input, size=3, out=None, mode="reflect", cval=0.0, *, dims=3, streams=None):
    return _unary(_vs.median_filter, input, out, _xyz(size, dims, "size"), _mode(mode),
                  float(cval), int(dims), streams=streams)


def rank_filter(input, rank, size=3, out=None, mode="reflect", cval=0.0, *, dims=3,
                streams=None):
    return _unary(_vs.rank_filter, input, out, int(rank), _xyz(size, dims, "size"), _mode(mode),
                  float(cval), int(dims), streams=streams)


def percentile_filter(input, percentile, size=3, out=None, mode="reflect", cval=0.0, *, dims=3,
                      streams=None):
    return _unary(_vs.percentile_filter, input, out, float(percentile), _xyz(size, dims, "size"),
                  _mode(mode), float(cval), int(dims), streams=streams)


def grey_erosion(input, size=3, out=None, mode="reflect", cval=0.0, *, dims=3, streams=None):
    return _unary(_vs.grey_erosion, input, out, _xyz(size, dims, "size"), _mode(mode),
                  float(cval), int(dims), streams=streams)


def grey_dilation(input, size=3, out=None, mode="reflect", cval=0.0, *, dims=3, streams=None):
    return _unary(_vs.grey_dilation, input, out, _xyz(size, dims, "size"), _mode(mode),
                  float(cval), int(dims), streams=streams)


def sobel(input, axis=-1, out=None, mode="reflect", cval=0.0, *, dims=3, streams=None):
    """scipy.ndimage.sobel along numpy ``axis`` (0: z, 1: y, 2: x); float32 (float64) result."""
    return _unary(_vs.sobel, input, out, _axis(axis), _mode(mode), float(cval), int(dims),
                  streams=streams)


def gradient_magnitude(input, out=None, mode="reflect", cval=0.0, *, dims=3, streams=None):
    """sqrt of the sum of the squared Sobel responses along each axis
    (scipy.ndimage.generic_gradient_magnitude(input, sobel))."""
    return _unary(_vs.gradient_magnitude, input, out, _mode(mode), float(cval), int(dims),
                  streams=streams)


# --- projections -------------------------------------------------------------------------------
def max_projection(input, axis=0, out=None, *, streams=None):
    """Maximum along numpy ``axis``: shape (1,) + numpy.max(input, axis).shape, i.e.
    ``result[0]`` equals ``numpy.max(input, axis)``."""
    return _unary(_vs.projection, input, out, "max", _axis(axis), streams=streams)


def min_projection(input, axis=0, out=None, *, streams=None):
    return _unary(_vs.projection, input, out, "min", _axis(axis), streams=streams)


def mean_projection(input, axis=0, out=None, *, streams=None):
    return _unary(_vs.projection, input, out, "mean", _axis(axis), streams=streams)


# --- files -------------------------------------------------------------------------------------
def read(path, streams=None) -> Volume:
    """Reads a raw-less volume file (NRRD, MetaImage, TIFF stack, PNG), whatever its voxel type,
    with its spacing and origin."""
    return _vs.read(streams or default_streams(), str(path))


def write(path, volume, compress=False, *, streams=None) -> None:
    """Writes ``volume`` (Volume or array) to ``path``; the format comes from the extension
    (.nrrd, .nhdr, .mha, .mhd, .tif, .png, .raw). compress=True: gzip where the format has it."""
    c = _Call(streams)
    v = c.input(volume)
    _vs.write(str(path), v, bool(compress))
    c.done(None, None)



# --- segmentation, morphology, geometry, more reductions, stream_process -----------------------
from . import _geometry, _segment, _stream  # noqa: E402 (they use the helpers above)
from ._geometry import *  # noqa: E402,F401,F403
from ._segment import *  # noqa: E402,F401,F403
from ._stream import *  # noqa: E402,F401,F403

__all__ += _segment.__all__ + _geometry.__all__ + _stream.__all__

# --- user kernels per slice, occupancy, profiling (python/voxstream/_launch.py, profile.py) ---
from . import profile  # noqa: E402
from ._launch import (  # noqa: E402
    launch_per_slice, occupancy, occupancy_report, read_access, read_all, slice_index,
    slice_index32, slice_ptr, write_access, write_all,
)
from ._voxstream import OccupancyReport  # noqa: E402

__all__ += [
    "profile", "launch_per_slice", "occupancy", "occupancy_report", "OccupancyReport",
    "read_access", "write_access", "read_all", "write_all", "slice_ptr", "slice_index",
    "slice_index32",
]
