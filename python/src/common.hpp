// Shared types of the Python binding: the StreamSet and Volume wrappers, dtype dispatch, and the
// helper that turns an op into one short function (run_op below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <nanobind/nanobind.h>

#include <voxstream/core/dtype.hpp>
#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/volume.hpp>

namespace nb = nanobind;

namespace voxpy {

/// A volume of any voxel type; index() == static_cast<std::size_t>(vox::dtype).
using any_volume =
    std::variant<vox::volume<std::uint8_t>, vox::volume<std::uint16_t>, vox::volume<std::int16_t>,
                 vox::volume<std::int32_t>, vox::volume<float>, vox::volume<double>>;

/// voxstream.StreamSet: shared, so that volumes keep the set they were made on alive.
struct StreamSet {
  std::shared_ptr<vox::stream_set> set;
};

/// voxstream.Volume: a vox::volume<T> of one of the six types and the set it runs on.
struct Volume {
  std::shared_ptr<vox::stream_set> set;
  any_volume v;

  [[nodiscard]] vox::dtype dtype() const noexcept { return static_cast<vox::dtype>(v.index()); }
  [[nodiscard]] vox::extent3 extent() const {
    return std::visit([](const auto& x) { return x.extent(); }, v);
  }
  [[nodiscard]] const void* data() const {
    return std::visit([](const auto& x) { return static_cast<const void*>(x.data()); }, v);
  }
  [[nodiscard]] std::size_t bytes() const {
    return std::visit([](const auto& x) { return x.bytes(); }, v);
  }
  [[nodiscard]] vox::exec::slice_ledger& ledger() const {
    return std::visit([](const auto& x) -> vox::exec::slice_ledger& { return x.ledger(); }, v);
  }
};

/// The volume<T> inside `v`; ValueError (vox::invalid_argument) naming `op` for another type.
template <class T>
vox::volume<T>& get(Volume& v, const char* op, const char* what) {
  auto* p = std::get_if<vox::volume<T>>(&v.v);
  if (p == nullptr) {
    VOX_FAIL(op, std::string(what) + " has dtype " + vox::dtype_name(v.dtype()) + ", expected " +
                     vox::dtype_name(vox::dtype_of<T>));
  }
  return *p;
}

/// voxstream.AsyncValue: a result computed on the streams; get() blocks (without the GIL) until
/// it is there. `get` converts the C++ value to Python (an int, a float, a dict, a tuple...).
struct AsyncValue {
  std::function<nb::object()> get;
  std::function<bool()> ready;
};

/// An AsyncValue over a vox::async_value (or anything with get() and ready()); `convert` turns
/// the value into a Python object (with the GIL held).
template <class V, class C>
AsyncValue make_async(V&& value, C convert) {
  auto p = std::make_shared<std::decay_t<V>>(std::forward<V>(value));
  return AsyncValue{[p, convert]() -> nb::object {
                      auto r = [&] {
                        nb::gil_scoped_release nogil;
                        return p->get();
                      }();
                      return convert(r);
                    },
                    [p] { return p->ready(); }};
}
template <class V>
AsyncValue make_async(V&& value) {
  return make_async(std::forward<V>(value), [](const auto& r) { return nb::cast(r); });
}

/// voxstream.Histogram: histogram counts computed on the streams.
struct Histogram {
  std::shared_ptr<vox::histogram_counts> h;
};

/// A new owning volume of type `t`, extent `e`, value-initialised, on `set`.
Volume new_volume(const std::shared_ptr<vox::stream_set>& set, vox::extent3 e, vox::dtype t);

/// Output voxel type of an op: the input's (same), float or double (real), uint8 (mask).
template <class T>
struct same_t {
  using type = T;
};
template <class T>
struct real_t {
  using type = std::conditional_t<std::is_same_v<T, double>, double, float>;
};
template <class T>
struct mask_t {
  using type = std::uint8_t;
};

/// Output voxel type O whatever the input's: run_op<to<O>::template t>.
template <class O>
struct to {
  template <class>
  struct t {
    using type = O;
  };
};

/// Runs `f(set, in, out)` for the input's voxel type T, out a volume<Out<T>::type>: `out` when
/// given (its dtype checked; the op checks its extent), else a new volume of the input's extent
/// (or `out_extent` when not empty). Returns the output Volume object. The op runs without
/// the GIL. Adding an op to the module is one call of this.
template <template <class> class Out, class F>
nb::object run_op(const char* op, Volume& in, Volume* out, F&& f, vox::extent3 out_extent = {}) {
  return std::visit(
      [&](auto& vin) -> nb::object {
        using T = typename std::decay_t<decltype(vin)>::value_type;
        using O = typename Out<T>::type;
        vox::stream_set& set = *in.set;
        if (out != nullptr) {
          auto& vout = get<O>(*out, op, "out");
          {
            nb::gil_scoped_release nogil;
            f(set, static_cast<const vox::volume<T>&>(vin), vout);
          }
          return nb::find(out);
        }
        const vox::extent3 e = out_extent.empty() ? vin.extent() : out_extent;
        Volume res{in.set, vox::volume<O>(set, e)};
        {
          nb::gil_scoped_release nogil;
          f(set, static_cast<const vox::volume<T>&>(vin), std::get<vox::volume<O>>(res.v));
        }
        return nb::cast(std::move(res));
      },
      in.v);
}

/// Calls `f(dtype_tag<T>)` for dtype `t` (vox::visit_dtype), for ops that create volumes.
template <class F>
decltype(auto) visit(vox::dtype t, F&& f) {
  return vox::visit_dtype(t, std::forward<F>(f));
}

/// The voxstream dtype named `name` ("uint8", ..., "float64"); ValueError otherwise.
vox::dtype parse_dtype(const std::string& name);

/// Module sections (module.cpp: types, memory exchange; ops.cpp: ops and I/O).
void bind_ops(nb::module_& m);
void bind_testing(nb::module_& m);
/// ops_segment.cpp: labels, distance transform, regions, binary morphology.
void bind_segment(nb::module_& m);
/// ops_geometry.cpp: geometry, the other elementwise ops and reductions, percentiles.
void bind_geometry(nb::module_& m);
/// stream.cpp: stream_process with a Python pipeline.
void bind_stream(nb::module_& m);

}  // namespace voxpy
