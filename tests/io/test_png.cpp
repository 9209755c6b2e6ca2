// PNG export: slices along each axis and 2D images, window/level and min/max mappings, 8- and
// 16-bit grey, checked pixel by pixel against a double-precision reference.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include <voxstream/io/png.hpp>

#include "io_test_util.hpp"

namespace {

using namespace vox_io_test;
using vox::extent3;
namespace io = vox::io;

class io_png : public temp_dir_test {};

double reference_grey(double v, double lo, double hi, int bits) {
  const double maxv = bits == 8 ? 255.0 : 65535.0;
  if (std::isnan(v) || !(hi > lo)) return 0.0;
  const double g = (v - lo) / (hi - lo) * maxv;
  return std::floor(std::clamp(g, 0.0, maxv) + 0.5);
}

template <class T>
void check_slice(const vox::host_volume<T>& v, io::slice_axis axis, std::size_t index,
                 const io::png_image& img, double lo, double hi, int bits) {
  const extent3 e = v.extent();
  const std::size_t w = axis == io::slice_axis::x ? e.y : e.x;
  const std::size_t h = axis == io::slice_axis::z ? e.y : e.z;
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  ASSERT_EQ(img.bit_depth, bits);
  int mismatches = 0;
  for (std::size_t r = 0; r < h; ++r)
    for (std::size_t c = 0; c < w; ++c) {
      const T val = axis == io::slice_axis::x   ? v(index, c, r)
                    : axis == io::slice_axis::y ? v(c, index, r)
                                                : v(c, r, index);
      const double want = reference_grey(static_cast<double>(val), lo, hi, bits);
      // The library maps in double too; allow one level for the rounding of (v - lo) * scale.
      if (std::fabs(img.pixels[r * w + c] - want) > 1.0 && ++mismatches < 5)
        ADD_FAILURE() << "pixel (" << c << "," << r << ") = " << img.pixels[r * w + c]
                      << ", expected " << want << " for voxel " << +val;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(io_png, window_level_8_bit_slices_along_every_axis) {
  const auto v = random_volume<std::uint16_t>(extent3{23, 17, 9}, 1);
  const auto opt = io::png_options::window_level(30000, 32768, 8);
  for (io::slice_axis axis : {io::slice_axis::x, io::slice_axis::y, io::slice_axis::z}) {
    io::write_png(path("s.png"), v, 5, axis, opt);
    check_slice(v, axis, 5, io::read_png(path("s.png")), 32768 - 15000, 32768 + 15000, 8);
  }
}

TEST_F(io_png, min_max_16_bit_with_nan) {
  auto v = random_volume<float>(extent3{31, 12, 3}, 2);
  v(3, 4, 1) = std::numeric_limits<float>::quiet_NaN();
  v(5, 4, 1) = std::numeric_limits<float>::infinity();
  io::write_png(path("f.png"), v, 1, io::slice_axis::z, io::png_options::min_max(16));
  double lo = 1e300, hi = -1e300;
  for (std::size_t y = 0; y < 12; ++y)
    for (std::size_t x = 0; x < 31; ++x)
      if (std::isfinite(v(x, y, 1))) {
        lo = std::min<double>(lo, v(x, y, 1));
        hi = std::max<double>(hi, v(x, y, 1));
      }
  const io::png_image img = io::read_png(path("f.png"));
  check_slice(v, io::slice_axis::z, 1, img, lo, hi, 16);
  EXPECT_EQ(img.pixels[4 * 31 + 3], 0);      // NaN is black
  EXPECT_EQ(img.pixels[4 * 31 + 5], 65535);  // +inf is white
}

TEST_F(io_png, two_d_images_and_projections) {
  auto img2d = random_volume<std::int16_t>(extent3{40, 20, 1}, 3);
  io::write_png(path("p.png"), img2d, io::png_options::range(-1000, 1000, 16));
  check_slice(img2d, io::slice_axis::z, 0, io::read_png(path("p.png")), -1000, 1000, 16);
  io::write(path("w.png"), img2d);  // write() exports 2D images with their min/max
  const io::png_image w = io::read_png(path("w.png"));
  EXPECT_EQ(w.bit_depth, 8);
  EXPECT_EQ(*std::max_element(w.pixels.begin(), w.pixels.end()), 255);
  EXPECT_EQ(*std::min_element(w.pixels.begin(), w.pixels.end()), 0);
  vox::host_volume<double> flat(extent3{3, 2, 1});
  std::fill(flat.data(), flat.data() + flat.size(), 7.0);
  io::write_png(path("flat.png"), flat);
  for (auto p : io::read_png(path("flat.png")).pixels) EXPECT_EQ(p, 0);
}

TEST_F(io_png, invalid_requests_and_bad_files) {
  const auto v = random_volume<std::int32_t>(extent3{4, 4, 3}, 4);
  EXPECT_THROW(io::write_png(path("a.png"), v), vox::invalid_argument);  // not 2D
  EXPECT_THROW(io::write_png(path("a.png"), v, 3), vox::invalid_argument);
  EXPECT_THROW(io::write_png(path("a.png"), v, 4, io::slice_axis::x), vox::invalid_argument);
  io::png_options bad;
  bad.bit_depth = 12;
  EXPECT_THROW(io::write_png(path("a.png"), v, 0, io::slice_axis::z, bad), vox::invalid_argument);
  bad = {};
  bad.low = 1;
  EXPECT_THROW(io::write_png(path("a.png"), v, 0, io::slice_axis::z, bad), vox::invalid_argument);
  EXPECT_THROW((void)io::png_options::window_level(0, 5), vox::invalid_argument);
  EXPECT_THROW((void)io::png_options::range(5, 5), vox::invalid_argument);
  EXPECT_TRUE(listing().empty());

  io::write_png(path("ok.png"), v, 1);
  const std::string full = slurp(path("ok.png"));
  for (std::size_t cut = 0; cut < full.size(); cut += 3) {
    spit(path("cut.png"), full.substr(0, cut));
    EXPECT_THROW((void)io::read_png(path("cut.png")), io::io_error) << "cut at " << cut;
  }
  EXPECT_THROW((void)io::read_png(path("absent.png")), io::io_error);
}

}  // namespace
