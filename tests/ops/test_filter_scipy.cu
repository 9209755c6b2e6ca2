// Agreement of the filters with scipy.ndimage, on the fixtures written by
// tests/ops/gen_filter_fixtures.py (scipy 1.10.1): float64 inputs in [0, 1) or [-1, 1), run
// here as double and as float volumes, and a uint16 input run as uint16.
//
// Tolerances against scipy's float64 outputs:
//   double volumes: gaussian and uniform 1e-12, sobel and gradient magnitude 1e-11 (sums of up
//     to 27 products in another order), median / erosion / dilation exact.
//   float volumes (input rounded to float): gaussian and uniform 2e-6, sobel and gradient
//     magnitude 1e-5, median / erosion / dilation 1e-7 (the float rounding of the input).
//   uint16 volumes: exact, including uniform, whose passes truncate exactly as scipy's do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/ops/filter.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/fixtures.hpp"
#include "../common/volumes.hpp"

namespace {

using vox::extent3;
using vox_test::fetch;

using fixture_case = vox_test::index_line;
using vox_test::numbers;

std::vector<fixture_case> load_index() { return vox_test::read_index("filter_index.txt"); }

std::vector<double> load_f64(const std::string& name, std::size_t n) {
  return vox_test::read_raw<double>(name, n);
}

vox::border mode_of(const std::string& m) {
  if (m == "nearest") return vox::border::nearest;
  if (m == "constant") return vox::border::constant;
  if (m == "wrap") return vox::border::wrap;
  return vox::border::reflect;
}

struct tolerances {
  double smooth;  // gaussian, uniform
  double sobel;   // sobel, gradient magnitude
  double rank;    // median, erosion, dilation
};

/// Runs every fixture case whose input dtype is `dtype` on volumes of T; returns cases run.
template <class T>
int run_fixtures(const std::string& dtype, const tolerances& tol, vox::slice_mapping mapping) {
  using F = vox::filter_real_t<T>;
  vox::stream_set_options so;
  so.mapping = mapping;
  vox::stream_set set(3, so);
  int ran = 0;
  for (const fixture_case& c : load_index()) {
    if (c.kv.at("dtype") != dtype) continue;
    SCOPED_TRACE(c.line);
    const std::vector<double> ext = numbers(c.kv.at("ext"));
    const extent3 e{std::size_t(ext[0]), std::size_t(ext[1]), std::size_t(ext[2])};
    const std::vector<double> in_h = load_f64(c.kv.at("in"), e.voxels());
    const std::vector<double> want = load_f64(c.kv.at("out"), e.voxels());
    std::vector<T> in_t(in_h.begin(), in_h.end());
    vox::volume<T> in(set, e);
    vox::upload(set, in_t.data(), in_t.size(), in);

    vox::filter_options o;
    o.mode = mode_of(c.kv.at("mode"));
    o.cval = std::stod(c.kv.at("cval"));
    o.dims = std::stoi(c.kv.at("dims"));

    std::vector<double> got;
    double t = 0;
    if (c.op == "gaussian" || c.op == "sobel" || c.op == "gradmag") {
      vox::volume<F> out(set, e);
      if (c.op == "gaussian") {
        const std::vector<double> s = numbers(c.kv.at("sigma"));
        vox::gaussian(set, in, out, {s[0], s[1], o.dims == 3 ? s[2] : 1.0}, o);
        t = tol.smooth;
      } else if (c.op == "sobel") {
        const std::string a = c.kv.at("axis");
        vox::sobel(set, in, out,
                   a == "x"   ? vox::filter_axis::x
                   : a == "y" ? vox::filter_axis::y
                              : vox::filter_axis::z,
                   o);
        t = tol.sobel;
      } else {
        vox::gradient_magnitude(set, in, out, o);
        t = tol.sobel;
      }
      const std::vector<F> h = fetch(set, out);
      got.assign(h.begin(), h.end());
    } else {
      vox::volume<T> out(set, e);
      if (c.op == "median") {
        vox::median(set, in, out, std::stoul(c.kv.at("size")), o);
        t = tol.rank;
      } else {
        const std::vector<double> s = numbers(c.kv.at("size"));
        const vox::filter_size size{std::size_t(s[0]), std::size_t(s[1]), std::size_t(s[2])};
        if (c.op == "uniform") {
          vox::uniform(set, in, out, size, o);
          t = tol.smooth;
        } else if (c.op == "erosion") {
          vox::grey_erosion(set, in, out, size, o);
          t = tol.rank;
        } else {
          vox::grey_dilation(set, in, out, size, o);
          t = tol.rank;
        }
      }
      const std::vector<T> h = fetch(set, out);
      got.assign(h.begin(), h.end());
    }
    std::size_t bad = 0;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double d = std::fabs(got[i] - want[i]);
      worst = std::max(worst, d);
      if (!(d <= t) && ++bad <= 3)
        ADD_FAILURE() << "voxel " << i << ": got " << got[i] << ", scipy " << want[i];
    }
    EXPECT_EQ(bad, 0u) << "largest difference " << worst << ", tolerance " << t;
    ++ran;
  }
  return ran;
}

TEST(FilterScipy, DoubleVolumesMatchScipy) {
  EXPECT_GE(run_fixtures<double>("f64", {1e-12, 1e-11, 0.0}, vox::slice_mapping::contiguous), 30);
}

TEST(FilterScipy, FloatVolumesMatchScipy) {
  EXPECT_GE(run_fixtures<float>("f64", {2e-6, 1e-5, 1e-7}, vox::slice_mapping::round_robin), 30);
}

TEST(FilterScipy, Uint16VolumesMatchScipyExactly) {
  EXPECT_GE(run_fixtures<std::uint16_t>("u16", {0.0, 0.0, 0.0}, vox::slice_mapping::contiguous), 6);
}

}  // namespace
