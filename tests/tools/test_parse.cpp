// The command line (CLI11): subcommands, defaults, op order, and the values it rejects.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cli.hpp"

std::string message_of(const std::vector<std::string>& args);

namespace {

using vox::cli::command;
using vox::cli::op_kind;
using vox::cli::parse_args;
using vox::cli::parsed_command;
using vox::cli::usage_error;

TEST(Parse, RunKeepsTheOrderOfTheOps) {
  const parsed_command pc = parse_args({"run", "in.nrrd", "-o", "out.nrrd", "--gaussian", "2",
                                        "--threshold", "0.3:1", "--max-projection", "z"});
  ASSERT_EQ(pc.cmd, command::run);
  EXPECT_EQ(pc.run.input.path, "in.nrrd");
  EXPECT_FALSE(pc.run.input.raw.has_value());
  EXPECT_EQ(pc.run.output, "out.nrrd");
  ASSERT_EQ(pc.run.ops.size(), 3u);
  EXPECT_EQ(pc.run.ops[0].kind, op_kind::gaussian);
  EXPECT_DOUBLE_EQ(pc.run.ops[0].sigma.x, 2.0);
  EXPECT_EQ(pc.run.ops[1].kind, op_kind::threshold);
  EXPECT_TRUE(pc.run.ops[1].range);
  EXPECT_EQ(pc.run.ops[2].kind, op_kind::max_projection);
  EXPECT_EQ(pc.run.budget, 0u);  // the default, decided at run time
  EXPECT_EQ(pc.run.streaming, vox::cli::stream_choice::automatic);
}

TEST(Parse, RepeatedOpsKeepTheirOwnValues) {
  const parsed_command pc =
      parse_args({"run", "in.nrrd", "--gaussian=1", "--median", "3", "--gradient-magnitude",
                  "--gaussian", "2.5", "--clamp", "-1:1", "--gradient-magnitude", "--threshold",
                  "-0.5", "-o", "x.mha", "--convert", "uint16"});
  ASSERT_EQ(pc.run.ops.size(), 8u);
  const op_kind kinds[] = {op_kind::gaussian,  op_kind::median,
                           op_kind::gradient_magnitude, op_kind::gaussian,
                           op_kind::clamp,     op_kind::gradient_magnitude,
                           op_kind::threshold};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(pc.run.ops[i].kind, kinds[i]) << i;
  EXPECT_DOUBLE_EQ(pc.run.ops[0].sigma.x, 1.0);
  EXPECT_DOUBLE_EQ(pc.run.ops[3].sigma.x, 2.5);
  EXPECT_DOUBLE_EQ(pc.run.ops[4].a, -1.0);
  EXPECT_DOUBLE_EQ(pc.run.ops[6].a, -0.5);
  EXPECT_FALSE(pc.run.ops[6].range);
  EXPECT_EQ(pc.run.ops[7].kind, op_kind::convert);  // after -o: options mix freely
  EXPECT_EQ(pc.run.ops[7].type, vox::dtype::uint16);
}

TEST(Parse, RunOptions) {
  const parsed_command pc =
      parse_args({"run", "in.raw", "-o", "o.nrrd", "--budget", "512M", "--streams", "4",
                  "--stream", "--slab-depth", "16", "--raw-extent", "10,20,30", "--raw-type",
                  "uint16", "--raw-offset", "8", "--big-endian", "--progress", "plain", "-q"});
  EXPECT_EQ(pc.run.budget, std::size_t{512} << 20);
  EXPECT_EQ(pc.run.streams, 4u);
  EXPECT_EQ(pc.run.streaming, vox::cli::stream_choice::always);
  EXPECT_EQ(pc.run.slab_depth, 16u);
  EXPECT_EQ(pc.run.progress, vox::cli::progress_mode::plain);  // given: --quiet does not hide it
  EXPECT_TRUE(pc.quiet);
  ASSERT_TRUE(pc.run.input.raw.has_value());
  EXPECT_EQ(pc.run.input.raw->extent, (vox::extent3{10, 20, 30}));
  EXPECT_EQ(pc.run.input.raw->type, vox::dtype::uint16);
  EXPECT_EQ(pc.run.input.raw->offset, 8u);
  EXPECT_EQ(pc.run.input.raw->order, vox::io::byte_order::big);
  EXPECT_TRUE(pc.run.ops.empty());
  // --quiet alone turns progress off.
  EXPECT_EQ(parse_args({"run", "a.nrrd", "-o", "b.nrrd", "-q"}).run.progress,
            vox::cli::progress_mode::off);
  EXPECT_EQ(parse_args({"run", "a.nrrd", "-o", "b.nrrd", "--in-memory"}).run.streaming,
            vox::cli::stream_choice::never);
}

TEST(Parse, InfoMipPhantom) {
  const parsed_command i = parse_args({"info", "v.nrrd", "--header-only"});
  EXPECT_EQ(i.cmd, command::info);
  EXPECT_FALSE(i.info.stats);
  EXPECT_EQ(i.info.input.path, "v.nrrd");

  const parsed_command m = parse_args({"mip", "v.nrrd", "-o", "m.png"});
  EXPECT_EQ(m.cmd, command::mip);
  EXPECT_EQ(m.mip.kind, op_kind::max_projection);
  EXPECT_EQ(m.mip.axis, vox::projection_axis::z);
  EXPECT_TRUE(std::isnan(m.mip.png.low) && std::isnan(m.mip.png.high));  // auto min/max
  EXPECT_EQ(m.mip.png.bit_depth, 8);
  const parsed_command m2 = parse_args({"mip", "v.nrrd", "-o", "m.png", "--axis", "y", "--mode",
                                        "mean", "--window", "2", "--level", "1", "--bits", "16"});
  EXPECT_EQ(m2.mip.axis, vox::projection_axis::y);
  EXPECT_EQ(m2.mip.kind, op_kind::mean_projection);
  EXPECT_DOUBLE_EQ(m2.mip.png.low, 0.0);
  EXPECT_DOUBLE_EQ(m2.mip.png.high, 2.0);
  EXPECT_EQ(m2.mip.png.bit_depth, 16);
  EXPECT_FALSE(m.mip.slab.has_value());
  const parsed_command m3 =
      parse_args({"mip", "v.nrrd", "-o", "m.png", "--range", "0.1:0.9", "--slab", "10:20"});
  ASSERT_TRUE(m3.mip.slab.has_value());
  EXPECT_EQ(m3.mip.slab->first, 10u);
  EXPECT_EQ(m3.mip.slab->second, 20u);
  EXPECT_DOUBLE_EQ(m3.mip.png.low, 0.1);
  EXPECT_DOUBLE_EQ(m3.mip.png.high, 0.9);

  const parsed_command p = parse_args({"phantom", "-o", "p.nrrd"});
  EXPECT_EQ(p.cmd, command::phantom);
  EXPECT_EQ(p.phantom.phantom.extent, (vox::extent3{128, 128, 128}));
  EXPECT_EQ(p.phantom.phantom.type, vox::dtype::float32);
  EXPECT_DOUBLE_EQ(p.phantom.phantom.scale, 1.0);
  EXPECT_DOUBLE_EQ(p.phantom.phantom.noise, 0.0);
  const parsed_command p2 = parse_args({"phantom", "-o", "p.mha", "--size", "32,24,16", "--type",
                                        "uint16", "--noise", "0.05", "--seed", "7"});
  EXPECT_EQ(p2.phantom.phantom.extent, (vox::extent3{32, 24, 16}));
  EXPECT_EQ(p2.phantom.phantom.type, vox::dtype::uint16);
  EXPECT_DOUBLE_EQ(p2.phantom.phantom.scale, 1000.0);  // the uint16 default
  EXPECT_DOUBLE_EQ(p2.phantom.phantom.noise, 0.05);
  EXPECT_EQ(p2.phantom.phantom.seed, 7u);
}

TEST(Parse, OptionalOpValues) {
  // Left out (before another option, or last), with '=', or as the next argument.
  const parsed_command pc = parse_args(
      {"run", "in.nrrd", "-o", "out.nrrd", "--threshold", "0.5", "--label", "--keep-largest=26",
       "--fill-holes", "18", "--edt", "--binary-opening=ball:2", "--binary-closing"});
  ASSERT_EQ(pc.run.ops.size(), 7u);
  EXPECT_EQ(pc.run.ops[1].kind, op_kind::label);
  EXPECT_EQ(pc.run.ops[1].connectivity, 6);
  EXPECT_EQ(pc.run.ops[2].kind, op_kind::keep_largest);
  EXPECT_EQ(pc.run.ops[2].connectivity, 26);
  EXPECT_EQ(pc.run.ops[3].kind, op_kind::fill_holes);
  EXPECT_EQ(pc.run.ops[3].connectivity, 18);
  EXPECT_EQ(pc.run.ops[4].kind, op_kind::edt);
  EXPECT_FALSE(pc.run.ops[4].sampling_given);
  EXPECT_EQ(pc.run.ops[5].se.kind, vox::structuring_element::shape::ball);
  EXPECT_EQ(pc.run.ops[5].se.radius_x, 2u);
  EXPECT_EQ(pc.run.ops[6].kind, op_kind::binary_closing);
  EXPECT_EQ(pc.run.ops[6].se.kind, vox::structuring_element::shape::cross);
  // Repeated, with and without values, in order; a last optional value left out does not
  // take the input that follows it.
  const parsed_command r = parse_args({"run", "-o", "o.nrrd", "--label", "--edt=2", "--label=26",
                                       "--edt", "--remove-small", "10:18", "--label", "in.nrrd"});
  EXPECT_EQ(r.run.input.path, "in.nrrd");
  ASSERT_EQ(r.run.ops.size(), 6u);
  EXPECT_EQ(r.run.ops[0].connectivity, 6);
  EXPECT_EQ(r.run.ops[5].connectivity, 6);
  EXPECT_TRUE(r.run.ops[1].sampling_given);
  EXPECT_EQ(r.run.ops[1].sampling, (vox::vec3d{2, 2, 2}));
  EXPECT_EQ(r.run.ops[2].connectivity, 26);
  EXPECT_FALSE(r.run.ops[3].sampling_given);
  EXPECT_EQ(r.run.ops[4].min_size, 10u);
  EXPECT_EQ(r.run.ops[4].connectivity, 18);
}

TEST(Parse, Stats) {
  const parsed_command s = parse_args({"stats", "l.nrrd"});
  ASSERT_EQ(s.cmd, command::stats);
  EXPECT_EQ(s.stats.labels.path, "l.nrrd");
  EXPECT_FALSE(s.stats.values.has_value());
  EXPECT_EQ(s.stats.connectivity, 0);  // int32 input: labels as they are
  const parsed_command v =
      parse_args({"stats", "m.raw", "--values", "ct.nrrd", "--connectivity", "26", "--raw-extent",
                  "4,5,6", "--raw-type", "uint8", "--streams", "2", "--budget", "64M"});
  ASSERT_TRUE(v.stats.values.has_value());
  EXPECT_EQ(*v.stats.values, "ct.nrrd");
  EXPECT_EQ(v.stats.connectivity, 26);
  ASSERT_TRUE(v.stats.labels.raw.has_value());
  EXPECT_EQ(v.stats.labels.raw->extent, (vox::extent3{4, 5, 6}));
  EXPECT_EQ(v.stats.streams, 2u);
  EXPECT_EQ(v.stats.budget, std::size_t{64} << 20);
  EXPECT_NE(message_of({"stats", "l.nrrd", "--connectivity", "7"}).find("--connectivity: '7'"),
            std::string::npos);
}

TEST(Stats, CsvColumnsAndNumbers) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<vox::region_row> rows(3);
  rows[0] = {2, 0.30000000000000004, 0.15000000000000002, 0.1, 0.2, {1, 2, 3}, {4, 5, 6},
             {1.5, 2, 3.25}};
  rows[1] = {0, 0, nan, nan, nan, {0, 0, 0}, {0, 0, 0}, {nan, nan, nan}};  // no voxels: no line
  rows[2] = {1, -nan, nan, inf, -inf, {7, 0, 0}, {8, 1, 1}, {7, 0, 0}};    // only NaN values
  EXPECT_EQ(vox::cli::region_csv(rows, true),
            "label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
            "1,2,0.30000000000000004,0.15000000000000002,0.1,0.2,1,2,3,4,5,6,1.5,2,3.25\n"
            "3,1,nan,nan,inf,-inf,7,0,0,8,1,1,7,0,0\n");
  EXPECT_EQ(vox::cli::region_csv(rows, false),
            "label,count,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
            "1,2,1,2,3,4,5,6,1.5,2,3.25\n"
            "3,1,7,0,0,8,1,1,7,0,0\n");
  EXPECT_EQ(vox::cli::region_csv({}, false), "label,count,x0,y0,z0,x1,y1,z1,cx,cy,cz\n");
}

TEST(Parse, Rejects) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"frobnicate"},
      {"run", "in.nrrd"},                                        // no -o
      {"run", "-o", "x.nrrd"},                                   // no input
      {"run", "in.nrrd", "-o", "x.nrrd", "--gaussian"},          // no value
      {"run", "in.nrrd", "-o", "x.nrrd", "--gaussian", "2", "3"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--gaussian", "-2"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--unknown-op", "1"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--max-projection", "z", "--gaussian", "1"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--stream", "--in-memory"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--budget", "lots"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--streams", "0"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--slab-depth", "0"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--raw-extent", "4,4,4"},  // no --raw-type
      {"run", "in.nrrd", "-o", "x.nrrd", "--big-endian"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--progress", "sometimes"},
      {"mip", "v.nrrd", "-o", "m.png", "--window", "2"},
      {"mip", "v.nrrd", "-o", "m.png", "--window", "0", "--level", "1"},
      {"mip", "v.nrrd", "-o", "m.png", "--window", "2", "--level", "1", "--range", "0:1"},
      {"mip", "v.nrrd", "-o", "m.png", "--bits", "12"},
      {"mip", "v.nrrd", "-o", "m.png", "--axis", "w"},
      {"mip", "v.nrrd", "-o", "m.png", "--range", "1:1"},
      {"mip", "v.nrrd", "-o", "m.png", "--slab", "5:2"},
      {"phantom", "-o", "p.nrrd", "--size", "0"},
      {"phantom", "-o", "p.nrrd", "--type", "int32"},
      {"phantom", "-o", "p.nrrd", "--noise", "-1"},
      {"phantom"},
      {"info"},
      {"stats"},
      {"stats", "l.nrrd", "--connectivity", "5"},
      {"stats", "l.nrrd", "--values"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--label", "7"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--remove-small"},
      {"run", "in.nrrd", "-o", "x.nrrd", "--binary-erosion=ball"},
  };
  for (const auto& args : bad) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_THROW((void)parse_args(args), usage_error) << line;
  }
}

}  // namespace

// --- messages for users (issue 18) ----------------------------------------------------------

/// The usage_error message of `args`, or "" when they parse.
std::string message_of(const std::vector<std::string>& args) {
  try {
    (void)parse_args(args);
  } catch (const usage_error& e) {
    return vox::cli::user_message(e.what());
  }
  return "";
}

TEST(Parse, NumbersGiveReadableMessages) {
  struct bad_number {
    std::vector<std::string> args;
    const char* expect;
  };
  const std::vector<bad_number> cases = {
      {{"run", "in.nrrd", "-o", "x.nrrd", "--streams", "abc"},
       "--streams: 'abc' is not a whole number"},
      {{"run", "in.nrrd", "-o", "x.nrrd", "--streams", "2000"}, "from 1 to 1024"},
      {{"run", "in.nrrd", "-o", "x.nrrd", "--slab-depth", "-1"},
       "--slab-depth: -1 is out of range"},
      {{"run", "in.nrrd", "-o", "x.nrrd", "--slab-depth", "99999999999999999999999"},
       "out of range"},
      {{"run", "in.nrrd", "-o", "x.nrrd", "--raw-extent", "4,4,4", "--raw-type", "uint8",
        "--raw-offset", "x"},
       "--raw-offset: 'x' is not a whole number"},
      {{"run", "in.nrrd", "-o", "x.nrrd", "--gaussian", "1e400"}, "out of range"},
      {{"run", "in.nrrd", "-o", "x.nrrd", "--gaussian", "two"}, "expected a number"},
      {{"mip", "v.nrrd", "-o", "m.png", "--window", "wide", "--level", "1"},
       "--window: 'wide' is not a number"},
      {{"mip", "v.nrrd", "-o", "m.png", "--bits", "eight"}, "expected 8 or 16"},
      {{"phantom", "-o", "p.nrrd", "--noise", "-1"}, "--noise: -1 must be >= 0"},
      {{"phantom", "-o", "p.nrrd", "--noise", "loud"}, "--noise: 'loud' is not a number"},
      {{"phantom", "-o", "p.nrrd", "--scale", "1e999"}, "out of range"},
      {{"phantom", "-o", "p.nrrd", "--seed", "-5"}, "--seed: -5 is out of range"},
      {{"phantom", "-o", "p.nrrd", "--size", "99999999999999999999999"}, "out of range"},
  };
  for (const auto& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    const std::string m = message_of(c.args);
    EXPECT_NE(m.find(c.expect), std::string::npos) << line << "\ngot: " << m;
    // No bounds of a type (CLI11 printed DBL_MAX with its 309 digits).
    EXPECT_LT(m.size(), 160u) << line << "\ngot: " << m;
    EXPECT_EQ(m.find("179769313486"), std::string::npos) << m;
    EXPECT_EQ(m.find("Could not convert"), std::string::npos) << m;
  }
}

TEST(Parse, TheSeedIsAnyWholeNumber) {
  const parsed_command pc =
      parse_args({"phantom", "-o", "p.nrrd", "--seed", "18446744073709551615"});
  EXPECT_EQ(pc.phantom.phantom.seed, 18446744073709551615ull);
  EXPECT_EQ(parse_args({"run", "i.nrrd", "-o", "o.nrrd", "--streams", " 16 "}).run.streams, 16u);
}

TEST(UserMessage, DropsSourceLocationsAndInternalNames) {
  using vox::cli::user_message;
  EXPECT_EQ(user_message("voxstream: io::write: '/tmp/a/x.nrrd': cannot create a temporary file "
                         "in its directory: No such file or directory "
                         "(../../src/io/format.cpp:917)"),
            "'/tmp/a/x.nrrd': cannot create a temporary file in its directory: No such file or "
            "directory");
  EXPECT_EQ(user_message("voxstream: gaussian: sigma must be >= 0 (/work/src/ops/filter.cu:42)"),
            "gaussian: sigma must be >= 0");
  // Nested: the inner message's prefix and location, and the op named again, go.
  EXPECT_EQ(user_message("voxstream: probe: 'a.nhdr': its data file cannot be read: voxstream: "
                         "probe: 'a.raw': cannot open: No such file or directory "
                         "(src/io/format.cpp:300) (src/io/format.cpp:603)"),
            "probe: 'a.nhdr': its data file cannot be read: 'a.raw': cannot open: No such file "
            "or directory");
  EXPECT_EQ(user_message("voxstream: vox::stream_process(): slab 3: too small (x.cu:1)"),
            "slab 3: too small");
  // Messages of the tool itself are kept as they are.
  EXPECT_EQ(user_message("--noise: -1 must be >= 0 (a standard deviation)"),
            "--noise: -1 must be >= 0 (a standard deviation)");
}
