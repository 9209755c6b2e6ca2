// voxstream._voxstream.stream_process: vox::stream_process (io/stream_process.hpp) with a Python
// pipeline. The run itself goes without the GIL; the pipeline callback (and the progress
// callback) take it. The callback gets the slab's device buffers as two Volume objects: the
// ring's own volumes, moved into the Volume objects for the duration of the call and moved back
// after it (also when it raises), so that the ops it calls are ordered by the buffers' own
// ledgers after the upload and before the download, exactly as a C++ pipeline's are. A Volume
// kept past its call is empty afterwards (ops reject it). An exception of the callback
// propagates to the caller once stream_process has drained its copies and aborted the sink.
#include "common.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <voxstream/io/format.hpp>
#include <voxstream/io/stream_process.hpp>

namespace voxpy {

namespace {

/// voxstream.SlabInfo: where the slab given to the callback lies (numpy z).
struct SlabInfo {
  vox::slab_position p;
};

using zyx = std::tuple<std::size_t, std::size_t, std::size_t>;

/// The endpoints as Python described them: a file (path) or host memory (ptr, shape, dtype);
/// a sink may also be nothing (discard).
struct endpoint {
  std::optional<std::string> path;
  std::uintptr_t ptr{0};
  vox::extent3 extent{};
  vox::dtype type{vox::dtype::uint8};
};

/// Moves `v` into a Volume object for the callback and back when it ends.
template <class T>
struct lend {
  vox::volume<T>& owner;
  nb::object obj;
  lend(const std::shared_ptr<vox::stream_set>& set, vox::volume<T>& v) : owner(v) {
    obj = nb::cast(Volume{set, vox::volume<T>(std::move(v))});
  }
  lend(const lend&) = delete;
  lend& operator=(const lend&) = delete;
  ~lend() {
    Volume& py = nb::cast<Volume&>(obj);  // the GIL is held (the callback's scope)
    if (auto* p = std::get_if<vox::volume<T>>(&py.v)) owner = std::move(*p);
  }
};

template <class In, class Out>
nb::dict run(StreamSet& ss, nb::handle streams_obj, const endpoint& src, const endpoint& dst,
             bool discard, nb::object callback, std::size_t slab, std::size_t halo,
             std::size_t buffers, std::size_t budget, bool ramp, nb::object progress,
             bool compress) {
  std::shared_ptr<vox::stream_set> set = ss.set;
  vox::slab_source<In> source =
      src.path ? vox::file_source<In>(*src.path)
               : vox::host_source<In>(reinterpret_cast<const In*>(src.ptr), src.extent.voxels(),
                                      src.extent);
  const vox::extent3 e = source.extent;
  vox::slab_sink<Out> sink;
  if (discard) {
    sink.extent = e;
    sink.name = "discard";
  } else if (dst.path) {
    vox::io::write_options opt;
    opt.spacing = source.spacing;
    opt.origin = source.origin;
    if (compress) opt.enc = vox::io::encoding::gzip;
    sink = vox::file_sink<Out>(*dst.path, e, opt);
  } else {
    sink = vox::host_sink<Out>(reinterpret_cast<Out*>(dst.ptr), dst.extent.voxels(), dst.extent);
  }

  vox::slab_pipeline_at<In, Out> pipeline = [&](vox::stream_set&, const vox::volume<In>& in,
                                                vox::volume<Out>& out,
                                                const vox::slab_position& where) {
    nb::gil_scoped_acquire gil;
    // `in` is one of the ring's (non-const) volumes, handed to pipelines as const.
    lend<In> lin(set, const_cast<vox::volume<In>&>(in));
    lend<Out> lout(set, out);
    callback(streams_obj, lin.obj, lout.obj, SlabInfo{where});
  };
  vox::stream_options opts;
  opts.buffers = buffers;
  opts.device_budget_bytes = budget;
  opts.ramp = ramp;
  if (!progress.is_none()) {
    opts.progress = [&progress](std::size_t done, std::size_t total) {
      nb::gil_scoped_acquire gil;
      progress(done, total);
    };
  }
  vox::stream_report rep;
  {
    nb::gil_scoped_release nogil;
    rep = vox::stream_process(source, sink, slab, halo, pipeline, *set, opts);
  }
  nb::dict d;
  d["slabs"] = rep.slabs;
  d["slab_depth"] = rep.slab_depth;
  d["buffers"] = rep.buffers;
  d["device_bytes"] = rep.device_bytes;
  d["pinned_bytes"] = rep.pinned_bytes;
  d["bytes_uploaded"] = rep.bytes_uploaded;
  d["bytes_downloaded"] = rep.bytes_downloaded;
  d["seconds"] = rep.seconds;
  return d;
}

endpoint make_endpoint(std::optional<std::string> path, std::uintptr_t ptr, zyx shape,
                       const std::string& dtype) {
  endpoint p;
  p.path = std::move(path);
  p.ptr = ptr;
  p.extent = vox::extent3{std::get<2>(shape), std::get<1>(shape), std::get<0>(shape)};
  if (!dtype.empty()) p.type = parse_dtype(dtype);
  return p;
}

/// source: a file (`src_path`) or host memory (`src_ptr`, numpy `src_shape`, `src_dtype`);
/// sink: a file (`dst_path`), host memory (`dst_ptr`, ...) or nothing (`discard`). The output
/// voxel type is `out_dtype` (an empty name: the input's; the array sink's dtype must match).
nb::dict stream_process(StreamSet& ss, nb::handle streams_obj, std::optional<std::string> src_path,
                        std::uintptr_t src_ptr, zyx src_shape, const std::string& src_dtype,
                        std::optional<std::string> dst_path, std::uintptr_t dst_ptr,
                        zyx dst_shape, const std::string& out_dtype, bool discard,
                        nb::object callback, std::size_t slab, std::size_t halo,
                        std::size_t buffers, std::size_t budget, bool ramp, nb::object progress,
                        bool compress) {
  constexpr const char* op = "voxstream.stream_process";
  VOX_EXPECTS(PyCallable_Check(callback.ptr()) != 0, op, "the pipeline callback is not callable");
  VOX_EXPECTS(progress.is_none() || PyCallable_Check(progress.ptr()) != 0, op,
              "progress is not callable");
  endpoint src = make_endpoint(std::move(src_path), src_ptr, src_shape, src_dtype);
  if (src.path) {
    nb::gil_scoped_release nogil;
    src.type = vox::io::probe(*src.path).type;
  }
  endpoint dst = make_endpoint(std::move(dst_path), dst_ptr, dst_shape, "");
  const vox::dtype out = out_dtype.empty() ? src.type : parse_dtype(out_dtype);
  return visit(src.type, [&](auto tag) -> nb::dict {
    using In = typename decltype(tag)::type;
    auto go = [&](auto otag) {
      using Out = typename decltype(otag)::type;
      return run<In, Out>(ss, streams_obj, src, dst, discard, callback, slab, halo, buffers,
                          budget, ramp, progress, compress);
    };
    if (out == src.type) return go(vox::dtype_tag<In>{});
    if (out == vox::dtype::float32) return go(vox::dtype_tag<float>{});
    if (out == vox::dtype::float64) return go(vox::dtype_tag<double>{});
    if (out == vox::dtype::uint8) return go(vox::dtype_tag<std::uint8_t>{});
    VOX_FAIL(op, std::string("the output of a ") + vox::dtype_name(src.type) +
                     " volume is of its own type, float32, float64 or uint8, not " +
                     vox::dtype_name(out));
  });
}

/// What a volume file holds (vox::io::probe), numpy order.
nb::dict probe(const std::string& path) {
  vox::io::volume_info i;
  {
    nb::gil_scoped_release nogil;
    i = vox::io::probe(path);
  }
  nb::dict d;
  d["shape"] = nb::make_tuple(i.extent.z, i.extent.y, i.extent.x);
  d["dtype"] = vox::dtype_name(i.type);
  d["spacing"] = nb::make_tuple(i.spacing.z, i.spacing.y, i.spacing.x);
  d["origin"] = nb::make_tuple(i.origin.z, i.origin.y, i.origin.x);
  d["format"] = vox::io::format_name(i.format);
  d["compressed"] = i.enc != vox::io::encoding::raw;
  d["detached"] = i.detached;
  return d;
}

nb::list slab_ranges(std::size_t slices, std::size_t depth, bool ramp) {
  nb::list l;
  for (const vox::z_range& r : vox::slab_ranges(slices, depth, ramp)) {
    l.append(nb::make_tuple(r.z0, r.z1));
  }
  return l;
}

}  // namespace

void bind_stream(nb::module_& m) {
  m.def("probe", &probe, nb::arg("path"));
  m.def("slab_ranges", &slab_ranges, nb::arg("slices"), nb::arg("slab_depth"),
        nb::arg("ramp") = true);
  nb::class_<SlabInfo>(m, "SlabInfo", "Where the slab given to a stream_process callback lies")
      .def_prop_ro("index", [](const SlabInfo& s) { return s.p.index; }, "the slab's place, 0-based")
      .def_prop_ro("count", [](const SlabInfo& s) { return s.p.count; }, "slabs in the run")
      .def_prop_ro("z0", [](const SlabInfo& s) { return s.p.out.z0; },
                   "first output slice (volume z)")
      .def_prop_ro("z1", [](const SlabInfo& s) { return s.p.out.z1; },
                   "one past the last output slice")
      .def_prop_ro("depth", [](const SlabInfo& s) { return s.p.out.depth(); },
                   "output slices of the slab")
      .def_prop_ro("in_z0", [](const SlabInfo& s) { return s.p.in.z0; },
                   "volume z of the input slab's slice 0 (halo included)")
      .def_prop_ro("in_z1", [](const SlabInfo& s) { return s.p.in.z1; })
      .def_prop_ro("halo_lo", [](const SlabInfo& s) { return s.p.halo_lo(); },
                   "halo slices below the output slices (0 at the volume's start)")
      .def_prop_ro("halo_hi", [](const SlabInfo& s) { return s.p.halo_hi(); },
                   "halo slices above the output slices (0 at the volume's end)")
      .def("__repr__", [](const SlabInfo& s) {
        return "voxstream.SlabInfo(index=" + std::to_string(s.p.index) + ", count=" +
               std::to_string(s.p.count) + ", z0=" + std::to_string(s.p.out.z0) + ", z1=" +
               std::to_string(s.p.out.z1) + ", halo_lo=" + std::to_string(s.p.halo_lo()) +
               ", halo_hi=" + std::to_string(s.p.halo_hi()) + ")";
      });
  m.def("stream_process", &stream_process, nb::arg("streams"), nb::arg("streams_obj"),
        nb::arg("src_path").none(), nb::arg("src_ptr"), nb::arg("src_shape"),
        nb::arg("src_dtype"), nb::arg("dst_path").none(), nb::arg("dst_ptr"),
        nb::arg("dst_shape"), nb::arg("out_dtype"), nb::arg("discard"), nb::arg("callback"),
        nb::arg("slab"), nb::arg("halo"), nb::arg("buffers"), nb::arg("budget"),
        nb::arg("ramp"), nb::arg("progress").none(), nb::arg("compress"));
}

}  // namespace voxpy
