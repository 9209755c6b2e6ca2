// Geometry ops of voxstream._voxstream (downsample_mean, resize, permute, crop, pad), the
// elementwise ops ops.cpp does not have (clamp, rescale, normalize), the other reductions
// (statistics, argmin/argmax with positions, per-slice reductions) and percentiles of a
// histogram. Tuples arrive in x, y, z order; python/voxstream/_geometry.py has the numpy- and
// scipy-style keywords.
#include "common.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/reduce.hpp>

namespace voxpy {

namespace {

using xyz = std::tuple<std::size_t, std::size_t, std::size_t>;

vox::extent3 ext(const xyz& t) { return vox::extent3{std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }

// --- geometry ---------------------------------------------------------------------------------
nb::object downsample_mean(Volume& in, xyz factors, bool keep_partial, Volume* out) {
  const vox::extent3 f = ext(factors);
  const vox::extent3 e =
      out != nullptr ? out->extent() : vox::downsampled_extent(in.extent(), f, keep_partial);
  return run_op<same_t>(
      "voxstream.downsample_mean", in, out,
      [&](auto& s, const auto& a, auto& o) { vox::downsample_mean(s, a, o, f); }, e);
}

nb::object resize(Volume& in, xyz shape, Volume* out) {
  const vox::extent3 e = ext(shape);
  VOX_EXPECTS(!e.empty(), "voxstream.resize", "every axis of the output must be longer than 0");
  return run_op<same_t>(
      "voxstream.resize", in, out, [&](auto& s, const auto& a, auto& o) { vox::resize(s, a, o); },
      e);
}

nb::object permute(Volume& in, std::tuple<int, int, int> axes, Volume* out) {
  const vox::axis_permutation p{std::get<0>(axes), std::get<1>(axes), std::get<2>(axes)};
  const vox::extent3 e = vox::permuted_extent(in.extent(), p);
  return run_op<same_t>(
      "voxstream.permute", in, out,
      [&](auto& s, const auto& a, auto& o) { vox::permute(s, a, o, p); }, e);
}

nb::object crop(Volume& in, xyz offset, xyz shape, Volume* out) {
  const vox::extent3 off = ext(offset);
  const vox::extent3 e = out != nullptr ? out->extent() : ext(shape);
  VOX_EXPECTS(!e.empty(), "voxstream.crop", "every axis of the box must be longer than 0");
  // Checked here too (before a new output is allocated); the op checks it again.
  const vox::extent3 n = in.extent();
  VOX_EXPECTS(off.x + e.x <= n.x && off.y + e.y <= n.y && off.z + e.z <= n.z, "voxstream.crop",
              "the box " + off.str() + " + " + e.str() + " does not lie inside the volume " +
                  n.str());
  return run_op<same_t>(
      "voxstream.crop", in, out, [&](auto& s, const auto& a, auto& o) { vox::crop(s, a, o, off); },
      e);
}

nb::object pad(Volume& in, xyz before, xyz after, int mode, double value, Volume* out) {
  VOX_EXPECTS(mode >= 0 && mode <= 3, "voxstream.pad", "unknown border mode");
  const vox::pad_widths w{ext(before), ext(after)};
  const vox::extent3 e = vox::padded_extent(in.extent(), w);
  return run_op<same_t>(
      "voxstream.pad", in, out,
      [&](auto& s, const auto& a, auto& o) {
        using T = typename std::decay_t<decltype(a)>::value_type;
        vox::pad(s, a, o, w, static_cast<vox::border>(mode), vox::saturate_cast<T>(value));
      },
      e);
}

// --- elementwise ------------------------------------------------------------------------------
nb::object clamp(Volume& in, double lo, double hi, Volume* out) {
  return run_op<same_t>("voxstream.clip", in, out, [&](auto& s, const auto& a, auto& o) {
    using T = typename std::decay_t<decltype(a)>::value_type;
    vox::clamp(s, a, o, vox::saturate_cast<T>(lo), vox::saturate_cast<T>(hi));
  });
}

/// rescale (normalize = false: fma(in, a, b)) or normalize ([min, max] onto [a, b]) into
/// `dtype` (an empty name: the input's), or into `out` (whose dtype wins).
nb::object linear(bool normalize, Volume& in, double a, double b, const std::string& dtype,
                  Volume* out) {
  const vox::dtype target = out != nullptr ? out->dtype()
                            : dtype.empty() ? in.dtype()
                                            : parse_dtype(dtype);
  return visit(target, [&](auto tag) {
    using O = typename decltype(tag)::type;
    return run_op<to<O>::template t>(normalize ? "voxstream.normalize" : "voxstream.rescale", in,
                                     out, [&](auto& s, const auto& x, auto& o) {
                                       if (normalize) {
                                         vox::normalize(s, x, o, a, b);
                                       } else {
                                         vox::rescale(s, x, o, a, b);
                                       }
                                     });
  });
}

// --- reductions -------------------------------------------------------------------------------
AsyncValue statistics(Volume& in, std::size_t ddof) {
  return std::visit(
      [&](auto& v) {
        auto r = [&] {
          nb::gil_scoped_release nogil;
          return vox::statistics(*in.set, v, ddof);
        }();
        return make_async(std::move(r), [](const vox::volume_stats& st) -> nb::object {
          nb::dict d;
          d["count"] = st.count;
          d["min"] = st.min;
          d["max"] = st.max;
          d["sum"] = st.sum;
          d["mean"] = st.mean;
          d["variance"] = st.variance;
          d["std"] = st.stddev;
          return nb::object(std::move(d));
        });
      },
      in.v);
}

/// argmin / argmax; `what`: "index" (numpy's flat index), "position" ((z, y, x), as
/// scipy.ndimage.minimum_position) or "both" ((value, (z, y, x))).
AsyncValue arg_extremum(Volume& in, bool largest, const std::string& what) {
  VOX_EXPECTS(what == "index" || what == "position" || what == "both", "voxstream.argmin",
              "unknown result '" + what + "'");
  return std::visit(
      [&](auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        auto r = [&] {
          nb::gil_scoped_release nogil;
          return largest ? vox::argmax(*in.set, v) : vox::argmin(*in.set, v);
        }();
        return make_async(std::move(r), [what](const vox::extremum<T>& x) -> nb::object {
          if (what == "index") return nb::cast(x.index);
          nb::object pos = nb::make_tuple(x.z, x.y, x.x);
          if (what == "position") return pos;
          return nb::make_tuple(x.value, pos);
        });
      },
      in.v);
}

nb::object reduce_slices(Volume& in, const std::string& kind, Volume* out) {
  constexpr const char* op = "voxstream.reduce_slices";
  vox::slice_reduction r = vox::slice_reduction::mean;
  if (kind == "min") {
    r = vox::slice_reduction::min;
  } else if (kind == "max") {
    r = vox::slice_reduction::max;
  } else if (kind == "sum") {
    r = vox::slice_reduction::sum;
  } else {
    VOX_EXPECTS(kind == "mean", op, "the reduction is min, max, sum or mean, not '" + kind + "'");
  }
  return run_op<to<double>::template t>(
      op, in, out, [&](auto& s, const auto& a, auto& o) { vox::reduce_slices(s, a, o, r); },
      vox::slice_reduction_extent(in.extent()));
}

std::vector<double> percentiles(const Histogram& h, const std::vector<double>& qs) {
  nb::gil_scoped_release nogil;
  return vox::percentiles(*h.h, qs);
}

}  // namespace

void bind_geometry(nb::module_& m) {
  const auto out = nb::arg("out").none() = nb::none();
  m.def("downsample_mean", &downsample_mean, nb::arg("input"), nb::arg("factors"),
        nb::arg("keep_partial"), out);
  m.def("resize", &resize, nb::arg("input"), nb::arg("shape"), out);
  m.def("permute", &permute, nb::arg("input"), nb::arg("axes"), out);
  m.def("crop", &crop, nb::arg("input"), nb::arg("offset"), nb::arg("shape"), out);
  m.def("pad", &pad, nb::arg("input"), nb::arg("before"), nb::arg("after"), nb::arg("mode"),
        nb::arg("value"), out);
  m.def("clamp", &clamp, nb::arg("input"), nb::arg("lo"), nb::arg("hi"), out);
  m.def("linear", &linear, nb::arg("normalize"), nb::arg("input"), nb::arg("a"), nb::arg("b"),
        nb::arg("dtype"), out);
  m.def("statistics", &statistics, nb::arg("input"), nb::arg("ddof") = 0);
  m.def("arg_extremum", &arg_extremum, nb::arg("input"), nb::arg("largest"), nb::arg("what"));
  m.def("reduce_slices", &reduce_slices, nb::arg("input"), nb::arg("kind"), out);
  m.def("percentiles", &percentiles, nb::arg("histogram"), nb::arg("q"));
}

}  // namespace voxpy
