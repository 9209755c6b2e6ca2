// The tool's op parsing and the types, extents, geometry and halos it derives (pure logic).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/volume.hpp>

#include "op_list.hpp"

namespace {

using vox::dtype;
using vox::extent3;
using vox::cli::op_kind;
using vox::cli::op_spec;
using vox::cli::parse_op;
using vox::cli::usage_error;

TEST(OpList, EveryOpParses) {
  EXPECT_EQ(parse_op("gaussian", "2").kind, op_kind::gaussian);
  EXPECT_DOUBLE_EQ(parse_op("gaussian", "2").sigma.z, 2.0);
  const op_spec g = parse_op("gaussian", "1,2,3.5");
  EXPECT_DOUBLE_EQ(g.sigma.x, 1.0);
  EXPECT_DOUBLE_EQ(g.sigma.y, 2.0);
  EXPECT_DOUBLE_EQ(g.sigma.z, 3.5);
  EXPECT_EQ(parse_op("uniform", "5").size, (extent3{5, 5, 5}));
  EXPECT_EQ(parse_op("uniform", "3,5,1").size, (extent3{3, 5, 1}));
  EXPECT_EQ(parse_op("median", "5").size.x, 5u);
  EXPECT_EQ(parse_op("median", "7,5,3").size.z, 3u);  // any odd box up to 15 along each axis
  EXPECT_EQ(parse_op("erode", "3").kind, op_kind::erode);
  EXPECT_EQ(parse_op("dilate", "1,1,3").size, (extent3{1, 1, 3}));
  EXPECT_EQ(parse_op("sobel", "Y").axis, vox::filter_axis::y);
  EXPECT_EQ(parse_op("gradient-magnitude", "").kind, op_kind::gradient_magnitude);
  const op_spec t1 = parse_op("threshold", "0.3");
  EXPECT_FALSE(t1.range);
  EXPECT_DOUBLE_EQ(t1.a, 0.3);
  const op_spec t2 = parse_op("threshold", "-0.5:1e3");
  EXPECT_TRUE(t2.range);
  EXPECT_DOUBLE_EQ(t2.a, -0.5);
  EXPECT_DOUBLE_EQ(t2.b, 1000.0);
  const op_spec c = parse_op("clamp", "-1:1");
  EXPECT_DOUBLE_EQ(c.a, -1.0);
  EXPECT_DOUBLE_EQ(c.b, 1.0);
  const op_spec r1 = parse_op("rescale", "2");
  EXPECT_DOUBLE_EQ(r1.a, 2.0);
  EXPECT_DOUBLE_EQ(r1.b, 0.0);
  const op_spec r2 = parse_op("rescale", "2:-1");  // offset below the scale is fine
  EXPECT_DOUBLE_EQ(r2.a, 2.0);
  EXPECT_DOUBLE_EQ(r2.b, -1.0);
  EXPECT_DOUBLE_EQ(parse_op("normalize", "0:255").b, 255.0);
  EXPECT_EQ(parse_op("convert", "u16").type, dtype::uint16);
  EXPECT_EQ(parse_op("downsample", "2").size, (extent3{2, 2, 2}));
  EXPECT_EQ(parse_op("max-projection", "x").paxis, vox::projection_axis::x);
  EXPECT_EQ(parse_op("min-projection", "y").kind, op_kind::min_projection);
  EXPECT_EQ(parse_op("mean-projection", "z").kind, op_kind::mean_projection);
  EXPECT_EQ(parse_op("gaussian", "2").text, "--gaussian 2");
  EXPECT_EQ(vox::cli::op_names().size(), 26u);
  for (const std::string& name : vox::cli::op_names())
    EXPECT_FALSE(vox::cli::op_help(name).second.empty()) << name;
}

TEST(OpList, Crop) {
  const op_spec c = parse_op("crop", "2:10,:5, 3:");
  EXPECT_EQ(c.lo, (extent3{2, 0, 3}));
  EXPECT_EQ(c.hi, (extent3{10, 5, 0}));
  const auto box = vox::cli::crop_box(c, extent3{12, 8, 20});
  EXPECT_EQ(box.first, (extent3{2, 0, 3}));
  EXPECT_EQ(box.second, (extent3{10, 5, 20}));
  EXPECT_EQ(vox::cli::result_extent(c, extent3{12, 8, 20}), (extent3{8, 5, 17}));
  EXPECT_THROW((void)vox::cli::result_extent(c, extent3{9, 8, 20}), usage_error);  // x1 > 9
  EXPECT_THROW((void)vox::cli::result_extent(c, extent3{12, 8, 3}), usage_error);  // z empty
  const auto g = vox::cli::result_geometry(c, vox::cli::geometry{{0.5, 2, 3}, {1, 1, 1}});
  EXPECT_EQ(g.origin, (vox::vec3d{2.0, 1.0, 10.0}));
  EXPECT_EQ(g.spacing, (vox::vec3d{0.5, 2, 3}));
  const op_spec s = vox::cli::crop_along(vox::projection_axis::y, 4, 9);
  EXPECT_EQ(vox::cli::result_extent(s, extent3{10, 20, 30}), (extent3{10, 5, 30}));
  EXPECT_THROW((void)vox::cli::crop_along(vox::projection_axis::z, 4, 4), usage_error);
  EXPECT_EQ(vox::cli::z_radius(c), 0u);
  EXPECT_FALSE(vox::cli::is_terminal(c));
  EXPECT_EQ(vox::cli::parse_index_range("3:7", "--slab"), (std::pair<std::size_t, std::size_t>{3, 7}));
  EXPECT_THROW((void)vox::cli::parse_index_range("7:7", "--slab"), usage_error);
}

TEST(OpList, BadValuesNameTheOption) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"gaussian", "0"},       {"gaussian", "-1"},    {"gaussian", "1,2"},
      {"gaussian", "abc"},     {"gaussian", "nan"},   {"gaussian", "inf"},
      {"gaussian", ""},        {"uniform", "4"},      {"uniform", "0"},
      {"uniform", "3,3"},      {"median", "17"},       {"median", "3.5"},
      {"sobel", "w"},          {"threshold", "1:0"},  {"threshold", "x"},
      {"clamp", "1"},          {"clamp", "2:1"},      {"normalize", "1:1"},
      {"rescale", "1:2:3"},    {"convert", "int8"},   {"downsample", "0"},
      {"max-projection", "q"}, {"gradient-magnitude", "1"}, {"erode", "2"},
      {"crop", "1:2,3:4"},     {"crop", "5:5,:,:"},   {"crop", "a:b,:,:"},
      {"label", "5"},          {"label", "x"},        {"label", "6:"},
      {"fill-holes", "27"},    {"keep-largest", "-6"}, {"remove-small", ""},
      {"remove-small", "a"},   {"remove-small", "5:7"}, {"remove-small", "5:6:6"},
      {"edt", "0"},            {"edt", "1,2"},        {"edt", "-1,1,1"},
      {"edt", "inf"},          {"binary-erosion", "sphere:2"}, {"binary-erosion", "ball"},
      {"binary-erosion", "ball:0"}, {"binary-erosion", "ball:61"}, {"binary-dilation", "box:2"},
      {"binary-dilation", "box"}, {"binary-opening", "cross:1"}, {"binary-closing", "ball:1,2"},
      {"binary-closing", "disk:1,1,1"}, {"binary-opening", "ball:0,0,0"},
  };
  for (const auto& [name, value] : bad) {
    try {
      (void)parse_op(name, value);
      ADD_FAILURE() << "--" << name << " " << value << " was accepted";
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find("--" + name), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)parse_op("frobnicate", "1"), usage_error);
}

TEST(OpList, SegmentationOpsParse) {
  using vox::structuring_element;
  using shape = structuring_element::shape;
  // Optional values: left out, the op's default (scipy's).
  EXPECT_EQ(parse_op("label", "").connectivity, 6);
  EXPECT_EQ(parse_op("label", "26").connectivity, 26);
  EXPECT_EQ(parse_op("label", " 4 ").connectivity, 4);
  EXPECT_EQ(parse_op("label", "").text, "--label");
  EXPECT_EQ(parse_op("label", "18").text, "--label 18");
  EXPECT_EQ(parse_op("fill-holes", "").connectivity, 6);
  EXPECT_EQ(parse_op("fill-holes", "8").connectivity, 8);
  EXPECT_EQ(parse_op("keep-largest", "").connectivity, 6);
  const op_spec rs = parse_op("remove-small", "20:26");
  EXPECT_EQ(rs.min_size, 20u);
  EXPECT_EQ(rs.connectivity, 26);
  EXPECT_EQ(parse_op("remove-small", "5").connectivity, 6);
  const op_spec e0 = parse_op("edt", "");
  EXPECT_FALSE(e0.sampling_given);
  const op_spec e1 = parse_op("edt", "2");
  EXPECT_TRUE(e1.sampling_given);
  EXPECT_EQ(e1.sampling, (vox::vec3d{2, 2, 2}));
  EXPECT_EQ(parse_op("edt", "0.5,1,3").sampling, (vox::vec3d{0.5, 1, 3}));
  EXPECT_EQ(parse_op("binary-erosion", "").se.kind, shape::cross);
  EXPECT_EQ(parse_op("binary-erosion", "cross").se.kind, shape::cross);
  const op_spec b = parse_op("binary-dilation", "ball:3");
  EXPECT_EQ(b.se.kind, shape::ball);
  EXPECT_EQ(b.se.radius_x, 3u);
  EXPECT_EQ(b.se.radius_z, 3u);
  const op_spec b3 = parse_op("binary-dilation", "ball:1,2,0");
  EXPECT_EQ(b3.se.radius_y, 2u);
  EXPECT_EQ(b3.se.radius_z, 0u);
  const op_spec d = parse_op("binary-opening", "disk:2");
  EXPECT_EQ(d.se.kind, shape::ball);
  EXPECT_EQ(d.se.dims, 2);
  const op_spec x = parse_op("binary-closing", "box:3,5,1");
  EXPECT_EQ(x.se.kind, shape::box);
  EXPECT_EQ(x.se.size.x, 3u);
  EXPECT_EQ(x.se.size.y, 5u);
  EXPECT_EQ(x.se.size.z, 1u);
  EXPECT_TRUE(vox::cli::op_value_optional("label"));
  EXPECT_TRUE(vox::cli::op_value_optional("binary-erosion"));
  EXPECT_FALSE(vox::cli::op_value_optional("remove-small"));
  EXPECT_FALSE(vox::cli::op_value_optional("gaussian"));
  EXPECT_FALSE(vox::cli::op_is_flag("label"));
  EXPECT_THROW((void)parse_op("gaussian", ""), usage_error);  // a value that is not optional
}

TEST(OpList, SegmentationTypesHalosAndRoles) {
  const auto t = [](const char* name, const char* value, dtype in) {
    return vox::cli::result_type(parse_op(name, value), in);
  };
  EXPECT_EQ(t("label", "", dtype::float32), dtype::int32);
  EXPECT_EQ(t("label", "26", dtype::uint8), dtype::int32);
  EXPECT_EQ(t("fill-holes", "", dtype::uint16), dtype::uint16);
  EXPECT_EQ(t("keep-largest", "", dtype::int32), dtype::uint8);
  EXPECT_EQ(t("remove-small", "3", dtype::uint8), dtype::uint8);
  EXPECT_EQ(t("remove-small", "3", dtype::int32), dtype::int32);  // labels stay labels
  EXPECT_EQ(t("edt", "", dtype::uint8), dtype::float32);
  EXPECT_EQ(t("edt", "", dtype::float64), dtype::float64);
  EXPECT_EQ(t("binary-erosion", "", dtype::int16), dtype::int16);
  // Whole-volume ops are never streamed; morphology streams with its element's z radius (twice
  // for opening and closing, 0 for an element within each z-slice).
  for (const char* name : {"label", "fill-holes", "keep-largest", "edt"})
    EXPECT_TRUE(vox::cli::needs_whole_volume(parse_op(name, ""))) << name;
  EXPECT_TRUE(vox::cli::needs_whole_volume(parse_op("remove-small", "3")));
  EXPECT_FALSE(vox::cli::needs_whole_volume(parse_op("binary-erosion", "")));
  EXPECT_FALSE(vox::cli::needs_whole_volume(parse_op("gaussian", "1")));
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-erosion", "")), 1u);
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-dilation", "ball:3")), 3u);
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-dilation", "ball:3,3,1")), 1u);
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-erosion", "box:3,3,5")), 2u);
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-opening", "ball:2")), 4u);
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-closing", "")), 2u);
  EXPECT_EQ(vox::cli::z_radius(parse_op("binary-closing", "disk:3")), 0u);
  // Memory: labels are int32 (1000 voxels of uint8 in, 4000 bytes out).
  EXPECT_EQ(vox::cli::peak_device_bytes({parse_op("label", "")}, extent3{10, 10, 10},
                                        dtype::uint8),
            5000u);
}

TEST(OpList, ProjectionMustBeLast) {
  const auto ok = vox::cli::parse_ops({{"gaussian", "1"}, {"max-projection", "z"}});
  EXPECT_NO_THROW(vox::cli::check_op_list(ok));
  const auto bad = vox::cli::parse_ops({{"max-projection", "z"}, {"gaussian", "1"}});
  EXPECT_THROW(vox::cli::check_op_list(bad), usage_error);
  // Downsampling may be followed by other ops (in memory).
  EXPECT_NO_THROW(vox::cli::check_op_list(
      vox::cli::parse_ops({{"downsample", "2"}, {"gaussian", "1"}})));
}

TEST(OpList, HaloIsTheSumOfTheZRadii) {
  // Gaussian: int(4 sigma + 0.5) (scipy's truncate 4); windows: (size - 1) / 2; Sobel: 1.
  const auto ops = vox::cli::parse_ops({{"gaussian", "2"},
                                        {"uniform", "3,3,5"},
                                        {"median", "3"},
                                        {"sobel", "x"},
                                        {"gradient-magnitude", ""},
                                        {"threshold", "0.5"},
                                        {"gaussian", "9,9,0.3"},
                                        {"max-projection", "z"}});
  EXPECT_EQ(vox::cli::z_radius(ops[0]), 8u);
  EXPECT_EQ(vox::cli::z_radius(ops[1]), 2u);
  EXPECT_EQ(vox::cli::z_radius(ops[2]), 1u);
  EXPECT_EQ(vox::cli::z_radius(ops[3]), 1u);
  EXPECT_EQ(vox::cli::z_radius(ops[4]), 1u);
  EXPECT_EQ(vox::cli::z_radius(ops[5]), 0u);
  EXPECT_EQ(vox::cli::z_radius(ops[6]), 1u);
  EXPECT_EQ(vox::cli::z_radius(ops[7]), 0u);
  EXPECT_EQ(vox::cli::halo_of(ops), 14u);
}

TEST(OpList, ResultTypes) {
  const auto t = [](const char* name, const char* value, dtype in) {
    return vox::cli::result_type(parse_op(name, value), in);
  };
  EXPECT_EQ(t("gaussian", "1", dtype::uint16), dtype::float32);
  EXPECT_EQ(t("gaussian", "1", dtype::float64), dtype::float64);
  EXPECT_EQ(t("uniform", "3", dtype::int16), dtype::int16);
  EXPECT_EQ(t("median", "3", dtype::uint8), dtype::uint8);
  EXPECT_EQ(t("sobel", "z", dtype::int32), dtype::float32);
  EXPECT_EQ(t("threshold", "1", dtype::float64), dtype::uint8);
  EXPECT_EQ(t("clamp", "0:1", dtype::uint16), dtype::uint16);
  EXPECT_EQ(t("rescale", "2", dtype::uint8), dtype::float32);
  EXPECT_EQ(t("normalize", "0:1", dtype::float64), dtype::float64);
  EXPECT_EQ(t("convert", "int32", dtype::float32), dtype::int32);
  EXPECT_EQ(t("downsample", "2", dtype::uint16), dtype::uint16);
  EXPECT_EQ(t("max-projection", "z", dtype::int16), dtype::int16);
  EXPECT_EQ(t("mean-projection", "z", dtype::int16), dtype::float32);
  const auto chain = vox::cli::parse_ops(
      {{"gaussian", "1"}, {"threshold", "0.5"}, {"convert", "uint16"}, {"max-projection", "y"}});
  EXPECT_EQ(vox::cli::result_type(chain, dtype::float32), dtype::uint16);
  EXPECT_EQ(vox::cli::result_extent(chain, extent3{10, 20, 30}), (extent3{10, 30, 1}));
}

TEST(OpList, ResultExtents) {
  const extent3 e{10, 21, 33};
  EXPECT_EQ(vox::cli::result_extent(parse_op("downsample", "2"), e), (extent3{5, 10, 16}));
  EXPECT_EQ(vox::cli::result_extent(parse_op("max-projection", "x"), e), (extent3{21, 33, 1}));
  EXPECT_EQ(vox::cli::result_extent(parse_op("min-projection", "y"), e), (extent3{10, 33, 1}));
  EXPECT_EQ(vox::cli::result_extent(parse_op("mean-projection", "z"), e), (extent3{10, 21, 1}));
  EXPECT_EQ(vox::cli::result_extent(parse_op("gaussian", "1"), e), e);
  EXPECT_THROW((void)vox::cli::result_extent(parse_op("downsample", "11"), e), usage_error);
}

TEST(OpList, DownsampleGeometryMatchesTheLibrary) {
  vox::stream_set s(2);
  const extent3 e{12, 9, 10};
  vox::volume<float> in(s, e, 1.0f);
  in.set_spacing({0.5, 2.0, 3.0});
  in.set_origin({-4.0, 1.0, 7.0});
  const op_spec op = parse_op("downsample", "2,3,4");
  vox::volume<float> out(s, vox::cli::result_extent(op, e));
  vox::downsample_mean(s, in, out, op.size);
  const vox::cli::geometry g =
      vox::cli::result_geometry(op, vox::cli::geometry{in.spacing(), in.origin()});
  EXPECT_EQ(g.spacing, out.spacing());
  EXPECT_EQ(g.origin, out.origin());
  s.synchronize();
}

TEST(OpList, ProjectionGeometryKeepsTheTwoOtherAxes) {
  const vox::cli::geometry in{{0.5, 2.0, 3.0}, {-4.0, 1.0, 7.0}};
  const auto gx = vox::cli::result_geometry(parse_op("max-projection", "x"), in);
  EXPECT_EQ(gx.spacing, (vox::vec3d{2.0, 3.0, 1.0}));
  EXPECT_EQ(gx.origin, (vox::vec3d{1.0, 7.0, 0.0}));
  const auto gy = vox::cli::result_geometry(parse_op("max-projection", "y"), in);
  EXPECT_EQ(gy.spacing, (vox::vec3d{0.5, 3.0, 1.0}));
  const auto gz = vox::cli::result_geometry(parse_op("mean-projection", "z"), in);
  EXPECT_EQ(gz.spacing, (vox::vec3d{0.5, 2.0, 1.0}));
  EXPECT_EQ(gz.origin, (vox::vec3d{-4.0, 1.0, 0.0}));
  const auto gg = vox::cli::result_geometry(parse_op("gaussian", "2"), in);
  EXPECT_EQ(gg.spacing, in.spacing);
}

TEST(OpList, PeakDeviceBytes) {
  const extent3 e{10, 10, 10};  // 1000 voxels
  // No ops: the input alone.
  EXPECT_EQ(vox::cli::peak_device_bytes({}, e, dtype::uint16), 2000u);
  // Gaussian of uint16: in (2000) + float out (4000) + float scratch (4000).
  EXPECT_EQ(vox::cli::peak_device_bytes({parse_op("gaussian", "1")}, e, dtype::uint16), 10000u);
  // Then a threshold: float in (4000) + uint8 out (1000) < 10000.
  EXPECT_EQ(vox::cli::peak_device_bytes({parse_op("gaussian", "1"), parse_op("threshold", "1")},
                                        e, dtype::uint16),
            10000u);
}

TEST(OpList, StreamedSlabDepthFitsTheBudget) {
  const extent3 e{100, 100, 1000};  // 10000 voxels per slice
  // float in, uint8 out, 3 buffers: 3 * 10000 * 5 = 150000 per slice; plus the chain's peak on a
  // slice: threshold float -> uint8 = 50000. 200000 bytes per slice.
  const auto chain = vox::cli::parse_ops({{"threshold", "0.5"}});
  EXPECT_EQ(vox::cli::streamed_slab_depth(200000 * 30, e, dtype::float32, dtype::uint8, chain, 0,
                                          0),
            30u);
  // A halo of 2 costs 4 slices; fixed bytes come off the top.
  EXPECT_EQ(vox::cli::streamed_slab_depth(200000 * 30 + 1000, e, dtype::float32, dtype::uint8,
                                          chain, 2, 1000),
            26u);
  // Never deeper than the volume; a multiple of 4 when asked.
  EXPECT_EQ(vox::cli::streamed_slab_depth(std::size_t{1} << 40, e, dtype::float32, dtype::uint8,
                                          chain, 0, 0),
            1000u);
  EXPECT_EQ(vox::cli::streamed_slab_depth(200000 * 30, e, dtype::float32, dtype::uint8, chain, 0,
                                          0, 3, 4),
            28u);
  // Too small for one slice plus the halo.
  EXPECT_THROW((void)vox::cli::streamed_slab_depth(200000 * 4, e, dtype::float32, dtype::uint8,
                                                   chain, 2, 0),
               usage_error);
}

TEST(OpList, Bytes) {
  EXPECT_EQ(vox::cli::parse_bytes("4096"), 4096u);
  EXPECT_EQ(vox::cli::parse_bytes("64k"), 65536u);
  EXPECT_EQ(vox::cli::parse_bytes("512M"), 512u << 20);
  EXPECT_EQ(vox::cli::parse_bytes("512MiB"), 512u << 20);
  EXPECT_EQ(vox::cli::parse_bytes("512 MB"), 512u << 20);
  EXPECT_EQ(vox::cli::parse_bytes("2G"), std::size_t{2} << 30);
  EXPECT_EQ(vox::cli::parse_bytes("1.5g"), std::size_t{3} << 29);
  EXPECT_EQ(vox::cli::parse_bytes("1T"), std::size_t{1} << 40);
  for (const char* bad : {"", "M", "-1G", "1X", "0", "1e3", "0.1B", "G2"})
    EXPECT_THROW((void)vox::cli::parse_bytes(bad), usage_error) << bad;
  EXPECT_EQ(vox::cli::format_bytes(100), "100 B");
  EXPECT_EQ(vox::cli::format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(vox::cli::format_bytes(512u << 20), "512 MiB");
  EXPECT_EQ(vox::cli::format_bytes(std::size_t{3} << 29), "1.50 GiB");
}

TEST(OpList, ValueParsers) {
  EXPECT_EQ(vox::cli::parse_dtype("float"), dtype::float32);
  EXPECT_EQ(vox::cli::parse_dtype("Float64"), dtype::float64);
  EXPECT_EQ(vox::cli::parse_dtype("i16"), dtype::int16);
  EXPECT_THROW((void)vox::cli::parse_dtype("complex"), usage_error);
  EXPECT_EQ(vox::cli::parse_extent("64", "--size"), (extent3{64, 64, 64}));
  EXPECT_EQ(vox::cli::parse_extent("32,24,16", "--size"), (extent3{32, 24, 16}));
  EXPECT_EQ(vox::cli::parse_extent("32x24x16", "--size"), (extent3{32, 24, 16}));
  EXPECT_THROW((void)vox::cli::parse_extent("0", "--size"), usage_error);
  EXPECT_THROW((void)vox::cli::parse_extent("3,4", "--size"), usage_error);
  EXPECT_THROW((void)vox::cli::parse_extent("-3", "--size"), usage_error);
  EXPECT_EQ(vox::cli::parse_axis(" Z ", "--axis"), vox::projection_axis::z);
  EXPECT_THROW((void)vox::cli::parse_axis("xy", "--axis"), usage_error);
  EXPECT_EQ(vox::cli::parse_range("-2.5:3", "--clamp"), (std::pair<double, double>{-2.5, 3.0}));
}

}  // namespace
