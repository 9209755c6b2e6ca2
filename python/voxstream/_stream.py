"""voxstream.stream_process: out-of-core slab streaming with a Python pipeline (the C++
vox::stream_process). Imported into the voxstream namespace."""
from __future__ import annotations

import os

import numpy as _np

from . import _voxstream as _vs
from . import _DTYPES, _dtype_name, default_streams

__all__ = ["stream_process", "SlabInfo", "probe", "slab_ranges"]

SlabInfo = _vs.SlabInfo


def probe(path) -> dict:
    """What a volume file holds, without reading its voxels: shape (z, y, x), dtype, spacing,
    origin, format, compressed, detached. The format is recognised by content."""
    return _vs.probe(os.fspath(path))


def slab_ranges(slices, slab_depth, ramp=True):
    """The output slices [z0, z1) of each slab that stream_process cuts ``slices`` slices into
    for ``slab_depth`` (the depth it uses, see its report) and ``ramp``."""
    return _vs.slab_ranges(int(slices), int(slab_depth), bool(ramp))


def _array_endpoint(a, what, writable):
    if not isinstance(a, _np.ndarray):
        raise ValueError(f"voxstream.stream_process: the {what} must be a file path or a numpy "
                         f"array, not {type(a).__name__}")
    if a.dtype == _np.bool_:
        a = a.view(_np.uint8)
    if a.dtype.name not in _DTYPES or not a.dtype.isnative:
        raise ValueError(f"voxstream.stream_process: the {what} array has dtype {a.dtype} (not "
                         "a voxel type)")
    if not a.flags.c_contiguous or not 1 <= a.ndim <= 3 or a.size == 0:
        raise ValueError(f"voxstream.stream_process: the {what} array must be C-contiguous, "
                         "non-empty, with 1 to 3 axes")
    if writable and not a.flags.writeable:
        raise ValueError(f"voxstream.stream_process: the {what} array is read-only")
    shape = (1,) * (3 - a.ndim) + tuple(a.shape)
    return a, shape


def stream_process(source, sink, callback, slab=64, halo=0, *, dtype=None, streams=None,
                   buffers=3, device_budget=0, ramp=True, progress=None, compress=False):
    """Streams a volume through ``callback`` slab by slab (vox::stream_process): only
    ``buffers`` slabs of ``slab`` output slices (plus ``halo`` slices each side) are on the
    device at a time, and the copies overlap the compute.

    ``source``: a file path (raw-less NRRD, MetaImage, TIFF stack, or a raw NRRD/MetaImage,
    memory-mapped) or a numpy array (host memory, read in place). ``sink``: a file path
    (NRRD or MetaImage, written under a temporary name and renamed at the end, so that a failed
    run leaves no partial file; ``compress=True`` for gzip), a numpy array of the source's
    shape (written in place), or None (nothing is downloaded: for callbacks that keep what
    they need on the device). ``dtype``: the output voxel type: the input's (default; an array
    sink's own dtype), float32, float64 or uint8.

    ``callback(streams, in_slab, out_slab, info)`` is called once per slab, in z order, on the
    calling thread: ``in_slab`` is a Volume of the slab's input slices (halo included),
    ``out_slab`` a Volume of the same shape and the output dtype to write the result into
    (only its own slices, info.halo_lo .. depth - info.halo_hi, are kept), and ``info`` a
    SlabInfo (index, count, z0, z1 and depth of the output slices in the volume, in_z0, in_z1,
    halo_lo, halo_hi). Call voxstream ops on them with ``out=`` (they are ordered after the
    slab's upload and before its download on the device, with no host wait). The two Volumes
    are the run's own buffers: they are valid only during the call (afterwards they are
    empty), and ``in_slab`` must not be written (the next slab copies its overlapping slices
    from it; C++ pipelines get it as const). A pipeline of filters whose z radii sum to at most ``halo`` gives exactly the
    whole-volume result. An exception raised by the callback (or an op it calls) stops the run:
    the copies in flight drain, a file sink is removed, and the exception propagates.

    ``progress(done, total)`` is called after each slab reached the sink. ``device_budget``
    (bytes, 0: none) caps the slab buffers (the slab depth is reduced to fit). Returns a dict
    (slabs, slab_depth, buffers, device_bytes, pinned_bytes, bytes_uploaded,
    bytes_downloaded, seconds)."""
    op = "voxstream.stream_process"
    if not callable(callback):
        raise ValueError(f"{op}: the pipeline callback is not callable")
    streams = streams or default_streams()
    src_path = dst_path = None
    src_ptr = dst_ptr = 0
    src_shape = dst_shape = (0, 0, 0)
    src_dtype = ""
    keep = []
    if isinstance(source, (str, os.PathLike)):
        src_path = os.fspath(source)
    else:
        a, src_shape = _array_endpoint(source, "source", False)
        keep.append(a)
        src_ptr, src_dtype = a.ctypes.data, a.dtype.name
    out_dtype = _dtype_name(dtype) if dtype is not None else ""
    discard = sink is None
    if isinstance(sink, (str, os.PathLike)):
        dst_path = os.fspath(sink)
    elif not discard:
        a, dst_shape = _array_endpoint(sink, "sink", True)
        keep.append(a)
        dst_ptr = a.ctypes.data
        if out_dtype and out_dtype != a.dtype.name:
            raise ValueError(f"{op}: dtype={out_dtype} but the sink array is {a.dtype.name}")
        out_dtype = a.dtype.name
        if src_path is None and tuple(dst_shape) != tuple(src_shape):
            raise ValueError(f"{op}: the sink array has shape {a.shape}, the source "
                             f"{source.shape}")
    if int(slab) < 1:
        raise ValueError(f"{op}: slab must be >= 1")
    if int(halo) < 0:
        raise ValueError(f"{op}: halo must be >= 0")
    return _vs.stream_process(streams, streams, src_path, src_ptr, tuple(src_shape), src_dtype,
                              dst_path, dst_ptr, tuple(dst_shape), out_dtype, discard,
                              callback, int(slab), int(halo), int(buffers), int(device_budget),
                              bool(ramp), progress, bool(compress))
