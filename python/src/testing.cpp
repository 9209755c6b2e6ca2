// voxstream._voxstream._testing: the C++ ops called directly on plain host memory (upload, op,
// download), without the binding's Volume wrapping, dispatch or keyword handling. The pytest
// suite compares the package's results with these bit for bit.
#include "common.hpp"

#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/filter.hpp>

namespace voxpy {

namespace {

/// Runs filter `name` on the C-contiguous host array at `src` (numpy shape (z, y, x), dtype
/// `dtype`) and writes the result to `dst` (the op's output type, same shape).
void filter_reference(const std::string& name, std::uintptr_t src, std::uintptr_t dst,
                      std::tuple<std::size_t, std::size_t, std::size_t> zyx,
                      const std::string& dtype, std::tuple<double, double, double> param_xyz,
                      int mode, double cval, double truncate, int dims) {
  const vox::extent3 e{std::get<2>(zyx), std::get<1>(zyx), std::get<0>(zyx)};
  vox::stream_set s(2);
  vox::filter_options o;
  o.mode = static_cast<vox::border>(mode);
  o.cval = cval;
  o.truncate = truncate;
  o.dims = dims;
  const auto [px, py, pz] = param_xyz;
  const vox::filter_size size(static_cast<std::size_t>(px), static_cast<std::size_t>(py),
                              static_cast<std::size_t>(pz));
  visit(parse_dtype(dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = vox::filter_real_t<T>;
    vox::volume<T> in(s, e);
    vox::upload(s, reinterpret_cast<const T*>(src), e.voxels(), in);
    if (name == "uniform" || name == "median" || name == "grey_erosion" ||
        name == "grey_dilation") {
      vox::volume<T> out(s, e);
      if (name == "uniform") vox::uniform(s, in, out, size, o);
      if (name == "median") vox::median(s, in, out, size, o);
      if (name == "grey_erosion") vox::grey_erosion(s, in, out, size, o);
      if (name == "grey_dilation") vox::grey_dilation(s, in, out, size, o);
      vox::download(s, out, reinterpret_cast<T*>(dst), e.voxels());
      return;
    }
    vox::volume<R> out(s, e);
    if (name == "gaussian") {
      vox::gaussian(s, in, out, vox::sigma3(px, py, pz), o);
    } else if (name == "sobel") {
      vox::sobel(s, in, out, static_cast<vox::filter_axis>(static_cast<int>(px)), o);
    } else if (name == "gradient_magnitude") {
      vox::gradient_magnitude(s, in, out, o);
    } else {
      VOX_FAIL("_testing.filter_reference", "unknown filter " + name);
    }
    vox::download(s, out, reinterpret_cast<R*>(dst), e.voxels());
  });
}

}  // namespace

void bind_testing(nb::module_& m) {
  nb::module_ t = m.def_submodule("_testing", "C++ ops on plain host memory (for the tests)");
  t.def("filter_reference", &filter_reference);
}

}  // namespace voxpy
