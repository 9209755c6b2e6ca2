// The ops of voxstream._voxstream. Each is one short function: argument conversion, then
// run_op (common.hpp) with the C++ call. Keyword handling in the scipy.ndimage style (mode
// names, z-y-x tuples, defaults) is in python/voxstream/__init__.py; here sizes and sigmas
// arrive in x, y, z order and modes as vox::border values.
#include "common.hpp"

#include <functional>
#include <optional>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/reduce.hpp>

namespace voxpy {

namespace {

using xyz = std::tuple<std::size_t, std::size_t, std::size_t>;
using xyzd = std::tuple<double, double, double>;

vox::filter_options options(int mode, double cval, int dims, double truncate = 4.0) {
  VOX_EXPECTS(mode >= 0 && mode <= 3, "voxstream", "unknown border mode");
  vox::filter_options o;
  o.mode = static_cast<vox::border>(mode);
  o.cval = cval;
  o.dims = dims;
  o.truncate = truncate;
  return o;
}
vox::filter_size fsize(const xyz& s) {
  return vox::filter_size(std::get<0>(s), std::get<1>(s), std::get<2>(s));
}

/// Runs a reduction `f(set, in)` -> async_value<...> for the input's type.
template <class F>
AsyncValue reduce(Volume& in, F&& f) {
  return std::visit(
      [&](auto& v) {
        auto r = [&] {
          nb::gil_scoped_release nogil;
          return f(*in.set, static_cast<const std::remove_reference_t<decltype(v)>&>(v));
        }();
        return make_async(std::move(r));
      },
      in.v);
}

// --- elementwise ------------------------------------------------------------------------------
nb::object copy(Volume& in, Volume* out) {
  return run_op<same_t>("voxstream.copy", in, out,
                        [](auto& s, const auto& a, auto& o) { vox::copy(s, a, o); });
}

void fill(Volume& v, double value) {
  std::visit(
      [&](auto& x) {
        using T = typename std::decay_t<decltype(x)>::value_type;
        nb::gil_scoped_release nogil;
        vox::fill(*v.set, x, vox::saturate_cast<T>(value));
      },
      v.v);
}

nb::object threshold(Volume& in, double t, Volume* out) {
  return run_op<mask_t>("voxstream.threshold", in, out,
                        [&](auto& s, const auto& a, auto& o) { vox::threshold(s, a, o, t); });
}

nb::object threshold_range(Volume& in, double lo, double hi, Volume* out) {
  return run_op<mask_t>("voxstream.threshold_range", in, out, [&](auto& s, const auto& a, auto& o) {
    vox::threshold_range(s, a, o, lo, hi);
  });
}

/// convert (saturate_cast) to `dtype`, or into `out` (whose dtype wins).
nb::object astype(Volume& in, const std::string& dtype, Volume* out) {
  const vox::dtype target = out != nullptr ? out->dtype() : parse_dtype(dtype);
  return visit(target, [&](auto tag) {
    using O = typename decltype(tag)::type;
    return run_op<to<O>::template t>("voxstream.astype", in, out,
                                     [](auto& s, const auto& a, auto& o) { vox::convert(s, a, o); });
  });
}

/// a (op) b for two volumes of one type, or a (op) scalar.
template <class F>
nb::object binary(const char* op, Volume& a, nb::object b, Volume* out, F&& f) {
  if (nb::isinstance<Volume>(b)) {
    Volume& vb = nb::cast<Volume&>(b);
    return run_op<same_t>(op, a, out, [&](auto& s, const auto& x, auto& o) {
      using T = typename std::decay_t<decltype(x)>::value_type;
      f(s, x, static_cast<const vox::volume<T>&>(get<T>(vb, op, "the second operand")), o);
    });
  }
  const double k = nb::cast<double>(b);
  return run_op<same_t>(op, a, out, [&](auto& s, const auto& x, auto& o) { f(s, x, k, o); });
}

// --- reductions -------------------------------------------------------------------------------
AsyncValue sum(Volume& in) {
  return reduce(in, [](auto& s, const auto& v) { return vox::sum(s, v); });
}
AsyncValue min(Volume& in) {
  return reduce(in, [](auto& s, const auto& v) { return vox::min_value(s, v); });
}
AsyncValue max(Volume& in) {
  return reduce(in, [](auto& s, const auto& v) { return vox::max_value(s, v); });
}
AsyncValue mean(Volume& in) {
  return reduce(in, [](auto& s, const auto& v) { return vox::mean(s, v); });
}
AsyncValue variance(Volume& in, std::size_t ddof) {
  return reduce(in, [&](auto& s, const auto& v) { return vox::variance(s, v, ddof); });
}
AsyncValue stddev(Volume& in, std::size_t ddof) {
  return reduce(in, [&](auto& s, const auto& v) { return vox::stddev(s, v, ddof); });
}

Histogram histogram(Volume& in, double lo, double hi, std::size_t bins) {
  return std::visit(
      [&](auto& v) {
        nb::gil_scoped_release nogil;
        return Histogram{std::make_shared<vox::histogram_counts>(vox::histogram(*in.set, v, bins, lo, hi))};
      },
      in.v);
}

// --- filters ----------------------------------------------------------------------------------
nb::object uniform_filter(Volume& in, xyz size, int mode, double cval, int dims, Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<same_t>("voxstream.uniform_filter", in, out, [&](auto& s, const auto& a, auto& r) {
    vox::uniform(s, a, r, fsize(size), o);
  });
}
nb::object gaussian_filter(Volume& in, xyzd sigma, int mode, double cval, double truncate,
                           int dims, Volume* out) {
  const auto o = options(mode, cval, dims, truncate);
  const vox::sigma3 sg(std::get<0>(sigma), std::get<1>(sigma), std::get<2>(sigma));
  return run_op<real_t>("voxstream.gaussian_filter", in, out,
                        [&](auto& s, const auto& a, auto& r) { vox::gaussian(s, a, r, sg, o); });
}
nb::object median_filter(Volume& in, xyz size, int mode, double cval, int dims, Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<same_t>("voxstream.median_filter", in, out, [&](auto& s, const auto& a, auto& r) {
    vox::median(s, a, r, fsize(size), o);
  });
}
nb::object rank_filter(Volume& in, long rank, xyz size, int mode, double cval, int dims,
                       Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<same_t>("voxstream.rank_filter", in, out, [&](auto& s, const auto& a, auto& r) {
    vox::rank_filter(s, a, r, rank, fsize(size), o);
  });
}
nb::object percentile_filter(Volume& in, double pct, xyz size, int mode, double cval, int dims,
                             Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<same_t>("voxstream.percentile_filter", in, out,
                        [&](auto& s, const auto& a, auto& r) {
                          vox::percentile_filter(s, a, r, pct, fsize(size), o);
                        });
}
nb::object grey_erosion(Volume& in, xyz size, int mode, double cval, int dims, Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<same_t>("voxstream.grey_erosion", in, out, [&](auto& s, const auto& a, auto& r) {
    vox::grey_erosion(s, a, r, fsize(size), o);
  });
}
nb::object grey_dilation(Volume& in, xyz size, int mode, double cval, int dims, Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<same_t>("voxstream.grey_dilation", in, out, [&](auto& s, const auto& a, auto& r) {
    vox::grey_dilation(s, a, r, fsize(size), o);
  });
}
nb::object sobel(Volume& in, int axis, int mode, double cval, int dims, Volume* out) {
  VOX_EXPECTS(axis >= 0 && axis <= 2, "voxstream.sobel", "axis out of range");
  const auto o = options(mode, cval, dims);
  return run_op<real_t>("voxstream.sobel", in, out, [&](auto& s, const auto& a, auto& r) {
    vox::sobel(s, a, r, static_cast<vox::filter_axis>(axis), o);
  });
}
nb::object gradient_magnitude(Volume& in, int mode, double cval, int dims, Volume* out) {
  const auto o = options(mode, cval, dims);
  return run_op<real_t>("voxstream.gradient_magnitude", in, out,
                        [&](auto& s, const auto& a, auto& r) { vox::gradient_magnitude(s, a, r, o); });
}

// --- projections ------------------------------------------------------------------------------
nb::object projection(Volume& in, const std::string& kind, int axis, Volume* out) {
  constexpr const char* op = "voxstream.projection";
  VOX_EXPECTS(axis >= 0 && axis <= 2, op, "axis out of range");
  const auto a = static_cast<vox::projection_axis>(axis);
  const vox::extent3 e = vox::projection_extent(in.extent(), a);
  if (kind == "max") {
    return run_op<same_t>(op, in, out, [&](auto& s, const auto& x, auto& r) { vox::max_projection(s, x, r, a); }, e);
  }
  if (kind == "min") {
    return run_op<same_t>(op, in, out, [&](auto& s, const auto& x, auto& r) { vox::min_projection(s, x, r, a); }, e);
  }
  VOX_EXPECTS(kind == "mean", op, "kind must be max, min or mean");
  return run_op<real_t>(op, in, out, [&](auto& s, const auto& x, auto& r) { vox::mean_projection(s, x, r, a); }, e);
}

// --- file I/O ---------------------------------------------------------------------------------
Volume read(StreamSet& ss, const std::string& path) {
  vox::io::volume_info info;
  vox::io::any_host_volume h;
  {
    nb::gil_scoped_release nogil;
    h = vox::io::read_any(path, &info);
  }
  Volume v = new_volume(ss.set, vox::io::extent_of(h), vox::io::type_of(h));
  std::visit(
      [&](auto& vol) {
        using T = typename std::decay_t<decltype(vol)>::value_type;
        auto& hv = std::get<vox::host_volume<T>>(h);
        vol.set_spacing(info.spacing);
        vol.set_origin(info.origin);
        nb::gil_scoped_release nogil;
        // Pageable upload: returns once staged, so the host volume may go.
        vox::upload(*ss.set, static_cast<const T*>(hv.data()), hv.size(), vol);
      },
      v.v);
  return v;
}

void write(const std::string& path, Volume& v, bool compress) {
  std::visit(
      [&](auto& vol) {
        using T = typename std::decay_t<decltype(vol)>::value_type;
        vox::io::write_options opt;
        opt.spacing = vol.spacing();
        opt.origin = vol.origin();
        if (compress) opt.enc = vox::io::encoding::gzip;
        nb::gil_scoped_release nogil;
        vox::host_volume<T> hv(vol.extent());
        vox::download(*v.set, vol, hv.data(), hv.size());  // blocks until the data is there
        vox::io::write(path, hv, opt);
      },
      v.v);
}

}  // namespace

void bind_ops(nb::module_& m) {
  nb::class_<AsyncValue>(m, "AsyncValue", "A result computed on the streams; get() waits for it")
      .def("get", [](AsyncValue& a) { return a.get(); })
      .def("ready", [](AsyncValue& a) { return a.ready(); });
  nb::class_<Histogram>(m, "Histogram", "Histogram counts computed on the streams")
      .def_prop_ro("bins", [](const Histogram& h) { return h.h->bins(); })
      .def_prop_ro("lo", [](const Histogram& h) { return h.h->lo(); })
      .def_prop_ro("hi", [](const Histogram& h) { return h.h->hi(); })
      .def("ready", [](const Histogram& h) { return h.h->ready(); })
      .def("get", [](const Histogram& h) {
        const std::vector<std::uint64_t>* c = nullptr;
        {
          nb::gil_scoped_release nogil;
          c = &h.h->counts();
        }
        return *c;
      });

  const auto out = nb::arg("out").none() = nb::none();
  m.def("copy", &copy, nb::arg("input"), out);
  m.def("fill", &fill, nb::arg("volume"), nb::arg("value"));
  m.def("threshold", &threshold, nb::arg("input"), nb::arg("t"), out);
  m.def("threshold_range", &threshold_range, nb::arg("input"), nb::arg("lo"), nb::arg("hi"), out);
  m.def("astype", &astype, nb::arg("input"), nb::arg("dtype"), out);
  m.def("add", [](Volume& a, nb::object b, Volume* o) {
    return binary("voxstream.add", a, b, o, [](auto& s, const auto& x, const auto& y, auto& r) { vox::add(s, x, y, r); });
  }, nb::arg("a"), nb::arg("b"), out);
  m.def("subtract", [](Volume& a, nb::object b, Volume* o) {
    return binary("voxstream.subtract", a, b, o, [](auto& s, const auto& x, const auto& y, auto& r) { vox::subtract(s, x, y, r); });
  }, nb::arg("a"), nb::arg("b"), out);
  m.def("multiply", [](Volume& a, nb::object b, Volume* o) {
    return binary("voxstream.multiply", a, b, o, [](auto& s, const auto& x, const auto& y, auto& r) { vox::multiply(s, x, y, r); });
  }, nb::arg("a"), nb::arg("b"), out);
  m.def("divide", [](Volume& a, nb::object b, Volume* o) {
    return binary("voxstream.divide", a, b, o, [](auto& s, const auto& x, const auto& y, auto& r) { vox::divide(s, x, y, r); });
  }, nb::arg("a"), nb::arg("b"), out);

  m.def("sum", &sum);
  m.def("min", &min);
  m.def("max", &max);
  m.def("mean", &mean);
  m.def("variance", &variance, nb::arg("input"), nb::arg("ddof") = 0);
  m.def("std", &stddev, nb::arg("input"), nb::arg("ddof") = 0);
  m.def("histogram", &histogram, nb::arg("input"), nb::arg("lo"), nb::arg("hi"), nb::arg("bins"));

  m.def("uniform_filter", &uniform_filter, nb::arg("input"), nb::arg("size"), nb::arg("mode"),
        nb::arg("cval"), nb::arg("dims"), out);
  m.def("gaussian_filter", &gaussian_filter, nb::arg("input"), nb::arg("sigma"), nb::arg("mode"),
        nb::arg("cval"), nb::arg("truncate"), nb::arg("dims"), out);
  m.def("median_filter", &median_filter, nb::arg("input"), nb::arg("size"), nb::arg("mode"),
        nb::arg("cval"), nb::arg("dims"), out);
  m.def("rank_filter", &rank_filter, nb::arg("input"), nb::arg("rank"), nb::arg("size"),
        nb::arg("mode"), nb::arg("cval"), nb::arg("dims"), out);
  m.def("percentile_filter", &percentile_filter, nb::arg("input"), nb::arg("percentile"),
        nb::arg("size"), nb::arg("mode"), nb::arg("cval"), nb::arg("dims"), out);
  m.def("grey_erosion", &grey_erosion, nb::arg("input"), nb::arg("size"), nb::arg("mode"),
        nb::arg("cval"), nb::arg("dims"), out);
  m.def("grey_dilation", &grey_dilation, nb::arg("input"), nb::arg("size"), nb::arg("mode"),
        nb::arg("cval"), nb::arg("dims"), out);
  m.def("sobel", &sobel, nb::arg("input"), nb::arg("axis"), nb::arg("mode"), nb::arg("cval"),
        nb::arg("dims"), out);
  m.def("gradient_magnitude", &gradient_magnitude, nb::arg("input"), nb::arg("mode"),
        nb::arg("cval"), nb::arg("dims"), out);
  m.def("projection", &projection, nb::arg("input"), nb::arg("kind"), nb::arg("axis"), out);

  m.def("read", &read, nb::arg("streams"), nb::arg("path"));
  m.def("write", &write, nb::arg("path"), nb::arg("volume"), nb::arg("compress") = false);
}

}  // namespace voxpy
