"""launch_per_slice: a user kernel once per z-slice on the slice's stream, under the ledger.

On the cuda backend the kernel is a ``cupy.RawKernel`` (or a ``cupy.cuda.function.Function``,
or a CUfunction handle as an int), launched with the driver's cuLaunchKernel. On the host
backend there are no CUDA kernels: the kernel is a Python callable, called once per slice with
numpy views in place of the volume arguments, so that code using the ledger (the order of
launches against other ops) runs and is tested without a GPU.

Arguments are given in the kernel's parameter order:

- ``slice_ptr(read_access(v, halo=0))`` / ``slice_ptr(write_access(v))``: a pointer to slice z
  of ``v`` (host: the 2D numpy view ``v[z]``); ``read_access(v, halo, periodic=True)``: a halo
  that wraps around the volume's ends;
- ``read_access(v)`` / ``write_access(v)`` on their own: a pointer to the whole volume (host:
  the 3D view); ``read_all(v)`` / ``write_all(v)``: the same, declaring that every slice's
  launch may touch every slice of ``v``;
- ``slice_index`` (a 64-bit ``size_t``) or ``slice_index32`` (32 bits): the slice's z;
- numpy scalars, passed with their type (``numpy.int32(n)``); Python ``int`` is passed as int64,
  ``float`` as float64 and ``bool`` as bool, as CuPy passes them to a RawKernel.

``v`` is a Volume or an array that the ops accept (wrapped without a copy where possible; a
written array must be usable in place). Every access declared is recorded in the volume's
ledger per slice, so the launches wait, on the device, only for the earlier work on the slices
they touch, and later ops wait for them.
"""
from __future__ import annotations

import numbers

import numpy as _np

from . import _voxstream as _vs

_READ, _WRITE = 0, 1


class Access:
    """A declared access to a volume (see read_access / write_access)."""

    __slots__ = ("target", "mode", "halo", "whole", "periodic")

    def __init__(self, target, mode, halo=0, whole=False, periodic=False):
        self.target = target
        self.mode = mode
        self.halo = int(halo)
        self.whole = bool(whole)
        self.periodic = bool(periodic)
        if self.halo < 0:
            raise ValueError("voxstream: a read's halo must be 0 or more slices")

    def __repr__(self):
        kind = "read" if self.mode == _READ else "write"
        extra = f", halo={self.halo}" if self.halo else ""
        extra += ", periodic=True" if self.periodic else ""
        return f"voxstream.{kind}{'_all' if self.whole else '_access'}(...{extra})"


class SlicePtr:
    """A pointer to slice z of an access's volume (see slice_ptr)."""

    __slots__ = ("access",)

    def __init__(self, access):
        self.access = access


class SliceIndex:
    """The slice index z as a kernel argument, ``nbytes`` (8 or 4) wide."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes):
        self.nbytes = nbytes

    def __repr__(self):
        return "voxstream.slice_index" + ("32" if self.nbytes == 4 else "")


slice_index = SliceIndex(8)
slice_index32 = SliceIndex(4)


def read_access(v, halo=0, periodic=False) -> Access:
    """Declares a read of each slice of ``v`` (plus ``halo`` slices either side).

    ``periodic=True``: the halo wraps around the volume's ends (slice z - 1 of slice 0 is the
    last slice), as a kernel with periodic (``wrap``) z borders reads; the launches then also
    wait for the writers of the slices across the ends.
    """
    return Access(v, _READ, halo, periodic=periodic)


def write_access(v) -> Access:
    """Declares a write (or read-modify-write) of each slice of ``v``."""
    return Access(v, _WRITE)


def read_all(v) -> Access:
    """Declares a read of the whole of ``v`` by every slice's launch."""
    return Access(v, _READ, whole=True)


def write_all(v) -> Access:
    """Declares a write of the whole of ``v`` by every slice's launch."""
    return Access(v, _WRITE, whole=True)


def slice_ptr(access) -> SlicePtr:
    """The kernel receives a pointer to slice z of the access's volume."""
    if not isinstance(access, Access):
        raise TypeError("voxstream.slice_ptr takes an access: slice_ptr(read_access(v)) or "
                        "slice_ptr(write_access(v))")
    if access.whole:
        raise ValueError("voxstream.slice_ptr: a whole-volume access (read_all, write_all) has "
                         "no slice of its own; use read_access or write_access")
    return SlicePtr(access)


def _dim3(d, what):
    """A CUDA (x, y, z) dimension from an int or a sequence of 1 to 3 ints."""
    if isinstance(d, numbers.Integral):
        d = (int(d),)
    d = tuple(int(x) for x in d)
    if not 1 <= len(d) <= 3:
        raise ValueError(f"voxstream: {what} is an int or (x[, y[, z]])")
    d = d + (1,) * (3 - len(d))
    if any(x < 1 for x in d):
        raise ValueError(f"voxstream: {what} must be at least 1 in every dimension")
    return d


def _kernel_handle(kernel):
    """The CUfunction of a cupy.RawKernel (compiled for the current device on first use), of a
    cupy.cuda.function.Function, or an int handle."""
    if isinstance(kernel, numbers.Integral):
        return int(kernel)
    fn = getattr(kernel, "kernel", None)  # cupy.RawKernel.kernel: a cupy.cuda.function.Function
    ptr = getattr(fn, "ptr", None) if fn is not None else getattr(kernel, "ptr", None)
    if ptr is None or not isinstance(ptr, numbers.Integral) or int(ptr) == 0:
        raise TypeError("voxstream: the kernel must be a cupy.RawKernel, a "
                        "cupy.cuda.function.Function or a CUfunction handle (int)")
    return int(ptr)


def _value(x):
    """(bytes, alignment) of a scalar kernel argument."""
    if isinstance(x, _np.generic):
        a = x
    elif isinstance(x, bool):
        a = _np.bool_(x)
    elif isinstance(x, numbers.Integral):
        a = _np.int64(x)
    elif isinstance(x, numbers.Real):
        a = _np.float64(x)
    else:
        raise TypeError(f"voxstream.launch_per_slice: argument of type {type(x).__name__} is not "
                        "a scalar; declare volumes and arrays with read_access / write_access "
                        "(and slice_ptr for a pointer to the slice)")
    return a.tobytes(), a.dtype.alignment


def launch_per_slice(kernel, grid, block, args, streams=None, shared_mem=0, *, graph=True):
    """Launches ``kernel`` once per z-slice with ``grid`` x ``block`` (CUDA order (x, y, z), an
    int or a tuple) on the slice's stream of ``streams`` (default: that of the first Volume
    argument, else the default set), ordered by the volumes' ledgers. Asynchronous. Returns the
    number of slices (that of the first per-slice access; every per-slice access must have the
    same shape).

    cuda backend: ``kernel`` is a cupy.RawKernel (or Function, or CUfunction int). host backend:
    ``kernel`` is a callable, called as ``kernel(*args)`` per slice in slice order within each
    stream's slab, with numpy views for the accesses (read accesses read-only), z for
    slice_index and the scalars as given; grid, block and shared_mem are checked, not used.

    graph (cuda backend; default True, as vox::launch_per_slice in C++): where the C++ template
    would use it (the set's per_slice_graphs option on, at least 8 slices, slices independent,
    no capture going on) the launches run as the set's cached CUDA graph of per-slice kernel
    nodes (32 independent chains) on stream 0 of the set: one graph launch instead of a
    cuLaunchKernel per slice (the seed's 32 small slices: 0.133 ms instead of 0.308 ms on an
    H200). The set caches the graph per kernel, configuration, slice count and argument layout,
    so a kernel launched with graph=True over at least 8 slices is kept alive for the rest of
    the process (as CuPy keeps its compiled modules). graph=False: always one launch per slice
    on the slice's stream.
    """
    from . import _Call, backend, default_streams  # noqa: PLC0415 (the package imports us)

    if not isinstance(args, (list, tuple)):
        raise TypeError("voxstream.launch_per_slice: args is a list or tuple of arguments")
    g = _dim3(grid, "grid")
    b = _dim3(block, "block")
    smem = int(shared_mem)
    if smem < 0:
        raise ValueError("voxstream.launch_per_slice: shared_mem must be 0 or more bytes")

    handle = _kernel_handle(kernel) if backend == "cuda" else None
    if backend != "cuda" and not callable(kernel):
        raise TypeError("voxstream.launch_per_slice: on the host backend the kernel is a Python "
                        "callable, called per slice with numpy views (CUDA kernels need the "
                        "cuda backend)")
    call = _Call(streams)
    try:
        n = _launch(call, kernel, handle, g, b, smem, args, backend, default_streams, bool(graph))
        if graph and handle is not None and n >= _GRAPH_MIN_SLICES:
            # The set's cached graph may now hold the kernel's CUfunction: keep its module
            # loaded (the caller holds the kernel during the call itself).
            _graph_kernels.setdefault(handle, kernel)
        return n
    finally:
        call.done(None, None)  # wrapped arrays' owner streams wait for the launches


# Kernels that may sit in a set's cached per-slice graph, by CUfunction; never released (as
# CuPy keeps its compiled modules). vox::per_slice_graph_min_slices: fewer slices never take
# the graph.
_graph_kernels = {}
_GRAPH_MIN_SLICES = 8


def _launch(call, kernel, handle, g, b, smem, args, backend, default_streams, graph):
    from . import Volume  # noqa: PLC0415

    accesses, acc_ids, params = [], {}, []
    resolved = {}  # id(Access) -> its Volume

    def volume_of(a):
        if id(a) not in resolved:
            v = call.input(a.target) if a.mode == _READ else call.output(a.target)
            if v is None:
                raise ValueError("voxstream.launch_per_slice: an access has no volume")
            resolved[id(a)] = v
        return resolved[id(a)]

    def access_index(a):
        if id(a) not in acc_ids:
            acc_ids[id(a)] = len(accesses)
            accesses.append((volume_of(a), a.mode, a.halo, a.whole, a.periodic))
        return acc_ids[id(a)]

    # The set: streams=, else that of the first Volume among the accesses, else the default.
    if call.streams is None:
        for x in args:
            a = x.access if isinstance(x, SlicePtr) else x
            if isinstance(a, Access) and isinstance(a.target, Volume):
                call.streams = a.target.streams
                break
    for x in args:
        a = x.access if isinstance(x, SlicePtr) else x
        if isinstance(a, Access):
            access_index(a)
    for i, x in enumerate(args):
        if isinstance(x, SlicePtr):
            params.append((2, access_index(x.access), b"", 8))
        elif isinstance(x, Access):
            params.append((1, access_index(x), b"", 8))
        elif isinstance(x, SliceIndex):
            params.append((3, 0, b"\0" * x.nbytes, x.nbytes))
        else:
            try:
                data, align = _value(x)
            except TypeError as e:
                raise TypeError(f"{e} (argument {i})") from None
            params.append((0, 0, data, align))
    s = call.streams or default_streams()

    if backend == "cuda":
        return _vs._launch_per_slice(s, handle, g, b, smem, accesses, params, graph)

    # Host backend: numpy views of the volumes (host memory), read accesses read-only.
    views = []
    for vol, mode, *_ in accesses:
        arr = _np.asarray(vol)
        if mode == _READ:
            arr = arr.view()
            arr.flags.writeable = False
        views.append(arr)
    getters = []
    for x, (kind, idx, _, _) in zip(args, params):
        if kind == 2:
            getters.append(lambda z, a=views[idx]: a[z])
        elif kind == 1:
            getters.append(lambda z, a=views[idx]: a)
        elif kind == 3:
            getters.append(lambda z: z)
        else:
            getters.append(lambda z, v=x: v)

    def per_slice(z):
        kernel(*[get(z) for get in getters])

    return _vs._launch_per_slice(s, per_slice, g, b, smem, accesses, params)


def occupancy(kernel, grid, block, shared_mem=0):
    """How many launches of ``kernel`` with ``grid`` x ``block`` fit on the GPU at once: an
    OccupancyReport whose str() says why per-slice launches do or do not overlap (e.g. "1024
    blocks per launch, 264 fit at once: each launch fills the GPU, so launches cannot
    overlap"). Enqueues nothing. cuda backend only (the host backend raises RuntimeError)."""
    from . import backend  # noqa: PLC0415

    g = _dim3(grid, "grid")
    b = _dim3(block, "block")
    if backend != "cuda":
        return _vs._occupancy(0, g, b, int(shared_mem))  # raises: not on the host backend
    return _vs._occupancy(_kernel_handle(kernel), g, b, int(shared_mem))


def occupancy_report(blocks_per_sm, sm_count, blocks_per_launch, max_resident_kernels=128):
    """An OccupancyReport from given numbers (any backend): what occupancy() would say for a
    kernel of which ``blocks_per_sm`` blocks fit on each of ``sm_count`` multiprocessors."""
    return _vs._occupancy_report(int(blocks_per_sm), int(sm_count), int(blocks_per_launch),
                                 int(max_resident_kernels))
