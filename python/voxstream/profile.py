"""voxstream.profile: what ran, when and on which stream (timeline), and which runtime calls
would serialise a multi-stream pipeline (sync_audit). Both wrap vox::profile.

cuda backend: the timeline records, through CUPTI, every kernel, copy and memset of the whole
process while it is open, CuPy's included; sync_audit watches every CUDA runtime call of the
process. host backend: the timeline records the host start and end of each slab of each
voxstream op (what runs there); sync_audit raises RuntimeError (no CUDA runtime to audit).

    with voxstream.profile.timeline("trace.json", svg="trace.svg", streams=s) as t:
        ...                                   # voxstream ops, CuPy kernels
    print(t.stats().summary())                # "32 kernels on 32 streams, span ..., concurrency"

    with voxstream.profile.sync_audit() as audit:
        ...
    assert audit.clean(), audit.report()

Only one timeline can record at a time in a process (a second raises ValueError).
"""
from __future__ import annotations

from . import _voxstream as _vs

_p = _vs._profile

Record = _p.Record
TimelineStats = _p.TimelineStats
compute_stats = _p.compute_stats
chrome_trace_json = _p.chrome_trace_json
timeline_svg = _p.timeline_svg
has_sync_audit = _p.has_sync_audit

__all__ = ["timeline", "sync_audit", "Record", "TimelineStats", "compute_stats",
           "chrome_trace_json", "timeline_svg", "has_sync_audit"]


class timeline:  # noqa: N801 (a context manager named like the C++ class)
    """Records from ``__enter__`` (or start()) to ``__exit__`` (or stop()). On stop, waits for the
    device's work (the records are complete only then), then writes ``path`` (Chrome trace JSON,
    for Perfetto or chrome://tracing) and ``svg`` (an SVG picture titled ``title``) when given.
    ``streams``: a StreamSet whose streams label the lanes by index. ``api_calls``: also record
    each CUDA runtime call's host time (CUDA backend)."""

    def __init__(self, path=None, svg=None, *, streams=None, api_calls=False,
                 title="voxstream timeline"):
        self.path = None if path is None else str(path)
        self.svg = None if svg is None else str(svg)
        self.title = title
        self._streams = streams
        self._api_calls = bool(api_calls)
        self._t = None
        self._records = None
        self.dropped = 0  # records CUPTI dropped for lack of buffer space

    def start(self):
        if self._t is not None:
            raise RuntimeError("voxstream.profile.timeline: already recording")
        self._records = None
        self._t = _p._Timeline(self._streams, self._api_calls)
        return self

    def stop(self):
        """Stops recording (waits for the device), writes the files, frees the recorder."""
        if self._t is None:
            return
        t, self._t = self._t, None
        try:
            self._records = t.records()
            self.dropped = t.dropped
            if self.path:
                t.write_chrome_trace(self.path)
            if self.svg:
                t.write_svg(self.svg, self.title)
        finally:
            t.close()

    @property
    def recording(self):
        return self._t is not None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def records(self):
        """The records (Record objects, in start order); stops the timeline first."""
        self.stop()
        return list(self._records or [])

    def stats(self):
        """TimelineStats of the records: kernels, span_ns, concurrency, max_concurrent, gaps,
        per-stream busy time; summary() as one line."""
        return compute_stats(self.records())


class sync_audit:  # noqa: N801
    """Audits the CUDA runtime calls made while open (cuda backend): host synchronisation,
    synchronous allocation and copies, work on a default stream, blocking streams. After the
    block: findings(), count(), synchronising_calls(), default_stream_calls(), clean(),
    report(). The host backend raises RuntimeError: it has no CUDA runtime to audit."""

    def __init__(self):
        if not has_sync_audit:
            raise RuntimeError("voxstream.profile.sync_audit: not available on the host backend "
                               "(there is no CUDA runtime to audit)")
        self._a = None

    def start(self):
        if self._a is None:
            self._a = _p._SyncAudit()
        return self

    def stop(self):
        if self._a is not None:
            self._a.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _audit(self):
        if self._a is None:
            raise RuntimeError("voxstream.profile.sync_audit: not started")
        return self._a

    def findings(self):
        """One dict per finding, in call order: kind, function, kernel, stream, where."""
        return [dict(kind=k, function=f, kernel=kn, stream=s if has else None, where=w)
                for k, f, kn, has, s, w in self._audit().findings()]

    def count(self):
        return self._audit().count()

    def synchronising_calls(self):
        return self._audit().synchronising_calls()

    def default_stream_calls(self):
        return self._audit().default_stream_calls()

    def clean(self):
        return self._audit().clean()

    def report(self):
        return self._audit().report()

    def __str__(self):
        return self.report()
