// voxstream._voxstream: the profiling layer (vox::profile) for Python. The package's
// voxstream.profile module turns these into context managers.
//
// timeline: CUPTI activity records of the whole process on the cuda backend (so CuPy's kernels
// and copies are there too), the host start and end of each slab of each voxstream op on the
// host backend. sync_audit: the runtime calls that would serialise a multi-stream pipeline
// (CUDA only: on the host backend there is no CUDA runtime to audit, and the binding says so).
#include "common.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <voxstream/config.hpp>
#include <voxstream/profile/sync_audit.hpp>
#include <voxstream/profile/timeline.hpp>

namespace voxpy {

namespace {

/// voxstream._voxstream._Timeline: records from construction until stop(). Holds the stream set
/// whose streams label the lanes (declared first: destroyed after the timeline).
struct Timeline {
  std::shared_ptr<vox::stream_set> set;
  std::optional<vox::profile::timeline> t;
};

Timeline* new_timeline(Timeline* self, nb::object streams, bool api_calls) {
  vox::profile::timeline_options o;
  o.api_calls = api_calls;
  auto* tl = new (self) Timeline{};
  try {
    if (streams.is_none()) {
      tl->t.emplace(o);
    } else {
      tl->set = nb::cast<StreamSet&>(streams).set;
      tl->t.emplace(*tl->set, o);
    }
  } catch (...) {
    tl->~Timeline();
    throw;
  }
  return tl;
}

vox::profile::timeline& get(Timeline& t) {
  if (!t.t) throw vox::error("voxstream.profile.timeline: the timeline was closed");
  return *t.t;
}

#if VOX_BACKEND_CUDA
using finding_tuple = std::tuple<std::string, std::string, std::string, bool, std::uintptr_t,
                                 std::string>;
#endif

}  // namespace

void bind_profile(nb::module_& m) {
  using namespace vox::profile;
  nb::module_ p = m.def_submodule("_profile", "vox::profile bindings (see voxstream.profile)");

  nb::class_<activity_record>(p, "Record", "One recorded interval of a timeline")
      .def_prop_ro("kind",
                   [](const activity_record& r) { return std::string(activity_kind_name(r.kind)); })
      .def_ro("start_ns", &activity_record::start_ns)
      .def_ro("end_ns", &activity_record::end_ns)
      .def_prop_ro("duration_ns", &activity_record::duration_ns)
      .def_ro("stream", &activity_record::stream)
      .def_ro("stream_index", &activity_record::stream_index)
      .def_ro("name", &activity_record::name)
      .def_prop_ro("grid",
                   [](const activity_record& r) {
                     return std::make_tuple(r.grid.x, r.grid.y, r.grid.z);
                   })
      .def_prop_ro("block",
                   [](const activity_record& r) {
                     return std::make_tuple(r.block.x, r.block.y, r.block.z);
                   })
      .def_ro("correlation", &activity_record::correlation)
      .def_ro("bytes", &activity_record::bytes)
      .def_ro("blocks_host", &activity_record::blocks_host)
      .def("__repr__", [](const activity_record& r) {
        return "voxstream.profile.Record(" + std::string(activity_kind_name(r.kind)) + " '" +
               r.name + "', stream " + std::to_string(r.stream_index) + ", " +
               std::to_string(r.duration_ns()) + " ns)";
      });

  nb::class_<timeline_stats>(p, "TimelineStats", "Statistics of a timeline's work records")
      .def_ro("kernels", &timeline_stats::kernels)
      .def_ro("copies", &timeline_stats::copies)
      .def_ro("host_waits", &timeline_stats::host_waits)
      .def_ro("span_ns", &timeline_stats::span_ns)
      .def_ro("kernel_ns", &timeline_stats::kernel_ns)
      .def_ro("concurrency", &timeline_stats::concurrency)
      .def_ro("max_concurrent", &timeline_stats::max_concurrent)
      .def_ro("gaps", &timeline_stats::gaps)
      .def_ro("max_gap_ns", &timeline_stats::max_gap_ns)
      .def_ro("mean_gap_ns", &timeline_stats::mean_gap_ns)
      .def_ro("host_ops", &timeline_stats::host_ops)
      .def_ro("api_calls", &timeline_stats::api_calls)
      .def_ro("api_ns", &timeline_stats::api_ns)
      .def_prop_ro("streams",
                   [](const timeline_stats& s) {
                     std::vector<std::tuple<std::int64_t, std::uint64_t, std::size_t,
                                            std::uint64_t>>
                         v;
                     for (const auto& x : s.streams)
                       v.emplace_back(x.stream_index, x.stream, x.kernels, x.busy_ns);
                     return v;
                   },
                   "(stream_index, stream id, work records, busy ns) per stream with work")
      .def("summary", &timeline_stats::summary)
      .def("__str__", &timeline_stats::summary);

  nb::class_<Timeline>(p, "_Timeline")
      .def("__init__", &new_timeline, nb::arg("streams").none(), nb::arg("api_calls") = false)
      .def("stop",
           [](Timeline& t) {
             nb::gil_scoped_release nogil;
             get(t).stop();
           })
      .def_prop_ro("recording", [](Timeline& t) { return t.t && t.t->recording(); })
      .def("records",
           [](Timeline& t) {
             {
               nb::gil_scoped_release nogil;
               get(t).stop();
             }
             return get(t).records();
           })
      .def("stats",
           [](Timeline& t) {
             nb::gil_scoped_release nogil;
             return get(t).stats();
           })
      .def("write_chrome_trace",
           [](Timeline& t, const std::string& path) {
             nb::gil_scoped_release nogil;
             get(t).write_chrome_trace(path);
           })
      .def(
          "write_svg",
          [](Timeline& t, const std::string& path, const std::string& title) {
            nb::gil_scoped_release nogil;
            get(t).write_svg(path, title);
          },
          nb::arg("path"), nb::arg("title") = "voxstream timeline")
      .def_prop_ro("dropped", [](Timeline& t) { return get(t).dropped(); })
      .def("close", [](Timeline& t) {
        nb::gil_scoped_release nogil;
        t.t.reset();  // stops it (never throws); another timeline may open now
      });

  p.def("compute_stats", &compute_stats, nb::arg("records"));
  p.def("chrome_trace_json", &chrome_trace_json, nb::arg("records"));
  p.def(
      "timeline_svg",
      [](const std::vector<activity_record>& r, const std::string& title, int width) {
        svg_options o;
        o.title = title;
        o.width = width;
        return timeline_svg(r, o);
      },
      nb::arg("records"), nb::arg("title") = "voxstream timeline", nb::arg("width") = 1200);

#if VOX_BACKEND_CUDA
  p.attr("has_sync_audit") = true;
  nb::class_<sync_audit>(p, "_SyncAudit")
      .def(nb::init<>())
      .def("stop", &sync_audit::stop)
      .def_prop_ro("auditing", &sync_audit::auditing)
      .def("findings",
           [](const sync_audit& a) {
             // (kind, function, kernel, has_stream, stream, where) per finding, in call order.
             std::vector<finding_tuple> v;
             for (const audit_finding& f : a.findings())
               v.emplace_back(finding_kind_name(f.kind), f.function, f.kernel, f.has_stream,
                              f.stream, f.where());
             return v;
           })
      .def("count", [](const sync_audit& a) { return a.count(); })
      .def("synchronising_calls", &sync_audit::synchronising_calls)
      .def("default_stream_calls", &sync_audit::default_stream_calls)
      .def("clean", &sync_audit::clean)
      .def("report", &sync_audit::report);
#else
  p.attr("has_sync_audit") = false;
#endif
}

}  // namespace voxpy
