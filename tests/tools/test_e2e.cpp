// End to end: the built `voxstream` binary (VOX_CLI_EXE) on small files, in a fresh directory
// per test. Results are checked against the library computing the same thing in the test, and
// the streamed runs (a small --budget, or --stream) against the in-memory ones.
#include <gtest/gtest.h>

#include <voxstream/core/backend.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>
#include <cmath>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <limits>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/png.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/distance.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/label.hpp>
#include <voxstream/ops/morphology.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/regions.hpp>
#include <voxstream/volume.hpp>

#include "phantom.hpp"

namespace {

namespace fs = std::filesystem;

struct tool_result {
  int rc{-1};
  std::string out;
  std::string err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    dir_ = fs::temp_directory_path() / ("voxstream_cli_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Runs the tool with `args` in the test's directory; stdout and stderr are captured.
  tool_result run(const std::vector<std::string>& args) const {
    std::string cmd = "cd " + quote(dir_.string()) + " && " + quote(VOX_CLI_EXE);
    for (const auto& a : args) cmd += " " + quote(a);
    cmd += " >" + quote(path("stdout.txt")) + " 2>" + quote(path("stderr.txt")) + " </dev/null";
    const int st = std::system(cmd.c_str());
    tool_result r;
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(path("stdout.txt"));
    r.err = slurp(path("stderr.txt"));
    return r;
  }
  /// Runs the tool and expects success.
  tool_result ok(const std::vector<std::string>& args) const {
    tool_result r = run(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_EQ(r.rc, 0) << line << "\nstderr: " << r.err << "\nstdout: " << r.out;
    return r;
  }
  /// Runs the tool and expects failure with status `rc` and a message on stderr.
  tool_result fails(const std::vector<std::string>& args, int rc,
                    const std::string& message) const {
    tool_result r = run(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_EQ(r.rc, rc) << line << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos)
        << line << "\nexpected '" << message << "' in stderr: " << r.err;
    EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
    return r;
  }
  /// A noisy float phantom of extent `size` in `name`.
  void phantom(const std::string& name, const std::string& size, double noise = 0.05) const {
    ok({"phantom", "-o", name, "--size", size, "--noise", std::to_string(noise), "-q"});
  }

  fs::path dir_;
};

template <class T>
vox::host_volume<T> read_file(const std::string& p, vox::io::volume_info* info = nullptr) {
  vox::host_volume<T> h;
  const vox::io::volume_info i = vox::io::read(p, h);
  if (info != nullptr) *info = i;
  return h;
}

template <class T>
void expect_same(const vox::host_volume<T>& a, const vox::host_volume<T>& b, double tol = 0) {
  ASSERT_EQ(a.extent(), b.extent());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a.data()[i]);
    const double y = static_cast<double>(b.data()[i]);
    const bool same = tol == 0 ? (x == y || (std::isnan(x) && std::isnan(y)))
                               : std::abs(x - y) <= tol * std::max(1.0, std::abs(x));
    if (!same && bad++ < 5) ADD_FAILURE() << "voxel " << i << ": " << x << " vs " << y;
  }
  EXPECT_EQ(bad, 0u);
}

template <class T>
vox::volume<T> to_device(vox::stream_set& s, const vox::host_volume<T>& h) {
  vox::volume<T> v(s, h.extent());
  vox::upload(s, h, v);
  return v;
}

template <class T>
vox::host_volume<T> to_host(vox::stream_set& s, const vox::volume<T>& v) {
  vox::host_volume<T> h(v.extent());
  vox::download(s, v, h);
  h.synchronize();
  return h;
}

// --- help, phantom, info --------------------------------------------------------------------------

TEST_F(ToolTest, HelpAndVersion) {
  const tool_result h = ok({"--help"});
  for (const char* cmd : {"info", "run", "mip", "phantom"})
    EXPECT_NE(h.out.find(cmd), std::string::npos) << h.out;
  const tool_result r = ok({"run", "--help"});
  EXPECT_NE(r.out.find("--gradient-magnitude"), std::string::npos);
  EXPECT_NE(r.out.find("threshold -> uint8"), std::string::npos);
  const tool_result v = ok({"--version"});
  EXPECT_NE(v.out.find("voxstream"), std::string::npos);
}

TEST_F(ToolTest, PhantomThenInfo) {
  const tool_result p = ok({"phantom", "-o", "p.nrrd", "--size", "32"});
  EXPECT_NE(p.out.find("wrote p.nrrd: 32x32x32 float32"), std::string::npos) << p.out;
  vox::io::volume_info info;
  const auto h = read_file<float>(path("p.nrrd"), &info);
  ASSERT_EQ(h.extent(), (vox::extent3{32, 32, 32}));
  const auto m = vox::cli::shepp_logan_3d();
  for (std::size_t z = 0; z < 32; ++z)
    for (std::size_t y = 0; y < 32; ++y)
      for (std::size_t x = 0; x < 32; ++x)
        ASSERT_EQ(h(x, y, z), static_cast<float>(vox::cli::phantom_voxel(m, h.extent(), 1.0, 0.0,
                                                                        1, x, y, z)));
  const tool_result i = ok({"info", "p.nrrd"});
  EXPECT_NE(i.out.find("extent:   32 x 32 x 32"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("type:     float32"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("spacing:  1 1 1"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("range:    0 .. 1\n"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("format:   nrrd"), std::string::npos) << i.out;
  const tool_result ho = ok({"info", "p.nrrd", "--header-only"});
  EXPECT_EQ(ho.out.find("range:"), std::string::npos) << ho.out;
}

TEST_F(ToolTest, PhantomUint16AndFormats) {
  ok({"phantom", "-o", "p.mha", "--size", "24,20,16", "--type", "uint16", "-q"});
  const auto h = read_file<std::uint16_t>(path("p.mha"));
  ASSERT_EQ(h.extent(), (vox::extent3{24, 20, 16}));
  EXPECT_EQ(*std::max_element(h.data(), h.data() + h.size()), 1000);
  EXPECT_EQ(*std::min_element(h.data(), h.data() + h.size()), 0);
  const tool_result i = ok({"info", "p.mha"});
  EXPECT_NE(i.out.find("range:    0 .. 1000\n"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("format:   metaimage"), std::string::npos) << i.out;
  // A raw file and info through --raw-extent.
  ok({"phantom", "-o", "p.raw", "--size", "24,20,16", "--type", "uint16", "-q"});
  const tool_result r =
      ok({"info", "p.raw", "--raw-extent", "24,20,16", "--raw-type", "uint16"});
  EXPECT_NE(r.out.find("range:    0 .. 1000\n"), std::string::npos) << r.out;
}

TEST_F(ToolTest, InfoInSlabsGivesTheSameRange) {
  phantom("p.nrrd", "32", 0.1);
  const tool_result whole = ok({"info", "p.nrrd"});
  // 4 KiB slices: a 20 KiB budget reads the file in slabs of 2 slices.
  const tool_result slabs = ok({"info", "p.nrrd", "--budget", "20K", "--progress", "plain"});
  const auto line = [](const std::string& s, const char* key) {
    const std::size_t a = s.find(key);
    return a == std::string::npos ? std::string() : s.substr(a, s.find('\n', a) - a);
  };
  EXPECT_EQ(line(whole.out, "range:"), line(slabs.out, "range:"));
  EXPECT_FALSE(line(whole.out, "range:").empty());
  EXPECT_NE(slabs.err.find("info: 16/16 slabs (100%)"), std::string::npos) << slabs.err;
  // A gzip-compressed copy, read in slabs from one gzip stream.
  {
    const auto h = read_file<float>(path("p.nrrd"));
    vox::io::write_options wo;
    wo.enc = vox::io::encoding::gzip;
    vox::io::write(path("p_gz.nrrd"), h, wo);
  }
  const tool_result gz = ok({"info", "p_gz.nrrd", "--budget", "20K", "--progress", "off"});
  EXPECT_NE(gz.out.find("(gzip, little-endian)"), std::string::npos) << gz.out;
  EXPECT_EQ(line(whole.out, "range:"), line(gz.out, "range:"));
  // The mean agrees to rounding.
  const double m1 = std::stod(line(whole.out, "mean:").substr(9));
  const double m2 = std::stod(line(slabs.out, "mean:").substr(9));
  EXPECT_NEAR(m1, m2, 1e-5 * std::abs(m1));
}

// --- run --------------------------------------------------------------------------------------------

TEST_F(ToolTest, RunMatchesTheLibrary) {
  phantom("p.nrrd", "32");
  const tool_result r = ok({"run", "p.nrrd", "-o", "r.nrrd", "--gaussian", "1",
                            "--gradient-magnitude", "--threshold", "0.1"});
  EXPECT_NE(r.out.find("in memory"), std::string::npos) << r.out;
  const auto got = read_file<std::uint8_t>(path("r.nrrd"));

  vox::stream_set s(4);
  const auto in = read_file<float>(path("p.nrrd"));
  const vox::volume<float> d = to_device(s, in);
  vox::volume<float> g(s, d.extent()), gm(s, d.extent());
  vox::volume<std::uint8_t> mask(s, d.extent());
  vox::gaussian(s, d, g, 1.0);
  vox::gradient_magnitude(s, g, gm);
  vox::threshold(s, gm, mask, 0.1);
  const auto want = to_host(s, mask);
  expect_same(got, want);
  std::size_t ones = 0;
  for (std::size_t i = 0; i < want.size(); ++i) ones += want.data()[i];
  EXPECT_GT(ones, want.size() / 20);  // edges were found
  EXPECT_LT(ones, want.size());
}

TEST_F(ToolTest, RunSecondChainMatchesTheLibrary) {
  ok({"phantom", "-o", "p.nrrd", "--size", "24,20,16", "--type", "uint16", "--noise", "0.02",
      "-q"});
  ok({"run", "p.nrrd", "-o", "r.mha", "--median", "3", "--clamp", "100:900", "--uniform", "3",
      "--normalize", "0:255", "--convert", "uint8", "-q"});
  const auto got = read_file<std::uint8_t>(path("r.mha"));
  vox::stream_set s(3);
  const auto in = read_file<std::uint16_t>(path("p.nrrd"));
  const vox::volume<std::uint16_t> d = to_device(s, in);
  vox::volume<std::uint16_t> a(s, d.extent()), b(s, d.extent()), c(s, d.extent());
  vox::volume<float> n(s, d.extent());
  vox::volume<std::uint8_t> u(s, d.extent());
  vox::median(s, d, a, 3);
  vox::clamp(s, a, b, std::uint16_t{100}, std::uint16_t{900});
  vox::uniform(s, b, c, 3);
  vox::normalize(s, c, n, 0.0, 255.0);
  vox::convert(s, n, u);
  expect_same(got, to_host(s, u));
}

TEST_F(ToolTest, OpOrderDecidesTheResult) {
  phantom("p.nrrd", "16");
  ok({"run", "p.nrrd", "-o", "a.nrrd", "--threshold", "0.5", "--gaussian", "1", "-q"});
  ok({"run", "p.nrrd", "-o", "b.nrrd", "--gaussian", "1", "--threshold", "0.5", "-q"});
  EXPECT_EQ(vox::io::probe(path("a.nrrd")).type, vox::dtype::float32);
  EXPECT_EQ(vox::io::probe(path("b.nrrd")).type, vox::dtype::uint8);
}

TEST_F(ToolTest, ProjectionToPngAndVolume) {
  phantom("p.nrrd", "32,24,16");
  ok({"run", "p.nrrd", "-o", "m.nrrd", "--max-projection", "y", "-q"});
  const auto m = read_file<float>(path("m.nrrd"));
  EXPECT_EQ(m.extent(), (vox::extent3{32, 16, 1}));
  vox::stream_set s(2);
  const vox::volume<float> d = to_device(s, read_file<float>(path("p.nrrd")));
  vox::volume<float> want(s, vox::projection_extent(d.extent(), vox::projection_axis::y));
  vox::max_projection(s, d, want, vox::projection_axis::y);
  expect_same(m, to_host(s, want));
  // A 2D result can be a PNG.
  ok({"run", "p.nrrd", "-o", "m.png", "--gaussian", "1", "--mean-projection", "x", "-q"});
  const vox::io::png_image png = vox::io::read_png(path("m.png"));
  EXPECT_EQ(png.width, 24u);
  EXPECT_EQ(png.height, 16u);
}

// --- mip ----------------------------------------------------------------------------------------------

TEST_F(ToolTest, MipWritesAPng) {
  phantom("p.nrrd", "40,32,24", 0.0);
  const tool_result r = ok({"mip", "p.nrrd", "-o", "mip.png"});
  EXPECT_NE(r.out.find("wrote mip.png: 40x32"), std::string::npos) << r.out;
  const vox::io::png_image z = vox::io::read_png(path("mip.png"));  // decoded by libpng
  EXPECT_EQ(z.width, 40u);
  EXPECT_EQ(z.height, 32u);
  EXPECT_EQ(z.bit_depth, 8);
  ASSERT_EQ(z.pixels.size(), 40u * 32u);
  // Auto window: the skull (1.0) is white, the outside (0) black.
  EXPECT_EQ(*std::max_element(z.pixels.begin(), z.pixels.end()), 255);
  EXPECT_EQ(*std::min_element(z.pixels.begin(), z.pixels.end()), 0);
  EXPECT_EQ(z.pixels[0], 0);                  // a corner is outside the head
  EXPECT_EQ(z.pixels[16 * 40 + 20], 255);     // the centre column crosses the skull

  ok({"mip", "p.nrrd", "-o", "y.png", "--axis", "y", "--bits", "16", "-q"});
  const vox::io::png_image y = vox::io::read_png(path("y.png"));
  EXPECT_EQ(y.width, 40u);
  EXPECT_EQ(y.height, 24u);
  EXPECT_EQ(y.bit_depth, 16);
  // A window/level that maps everything above 0.25 to white.
  ok({"mip", "p.nrrd", "-o", "w.png", "--mode", "mean", "--window", "0.25", "--level", "0.125",
      "-q"});
  const vox::io::png_image w = vox::io::read_png(path("w.png"));
  EXPECT_EQ(w.width, 40u);
  EXPECT_EQ(w.pixels[0], 0);
}

// --- errors ---------------------------------------------------------------------------------------------

TEST_F(ToolTest, BadArgumentsExitWithTwo) {
  phantom("p.nrrd", "8", 0.0);
  fails({}, 2, "");
  fails({"frobnicate"}, 2, "frobnicate");
  fails({"run", "p.nrrd"}, 2, "--output");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--frobnicate", "1"}, 2, "frobnicate");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--gaussian", "-1"}, 2, "--gaussian");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--median", "4"}, 2, "--median");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--max-projection", "z", "--gaussian", "1"}, 2,
        "must be the last op");
  fails({"run", "p.nrrd", "-o", "x.png", "--gaussian", "1"}, 2, "PNG");
  fails({"run", "p.nrrd", "-o", "x.xyz"}, 2, "unknown extension");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--downsample", "9"}, 2, "larger than the extent");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--gaussian", "1", "--stream", "--budget", "1K"}, 2,
        "too small");
  fails({"mip", "p.nrrd", "-o", "x.nrrd"}, 2, ".png");
  fails({"phantom", "-o", "x.png"}, 2, "PNG");
  EXPECT_FALSE(fs::exists(path("x.nrrd")));
  EXPECT_FALSE(fs::exists(path("x.png")));
}

TEST_F(ToolTest, MissingAndMalformedFilesExitWithOne) {
  fails({"info", "missing.nrrd"}, 1, "missing.nrrd");
  fails({"run", "missing.nrrd", "-o", "x.nrrd", "--gaussian", "1"}, 1, "missing.nrrd");
  fails({"mip", "missing.nrrd", "-o", "x.png"}, 1, "missing.nrrd");
  {
    std::ofstream f(path("bad.nrrd"), std::ios::binary);
    f << "NRRD0004\ntype: banana\ndimension: 3\nsizes: 4 4 4\nencoding: raw\n\n";
  }
  fails({"info", "bad.nrrd"}, 1, "bad.nrrd");
  {
    // A valid header whose data is short: 4x4x4 float needs 256 bytes.
    std::ofstream f(path("short.nrrd"), std::ios::binary);
    f << "NRRD0004\ntype: float\ndimension: 3\nsizes: 4 4 4\nendian: little\nencoding: raw\n\n"
      << std::string(100, '\0');
  }
  fails({"info", "short.nrrd"}, 1, "short.nrrd");
  fails({"run", "short.nrrd", "-o", "x.nrrd", "--gaussian", "1"}, 1, "short.nrrd");
  fails({"run", "short.nrrd", "-o", "x.nrrd", "--gaussian", "1", "--stream"}, 1, "short.nrrd");
  fails({"info", "p.raw", "--raw-extent", "4,4,4", "--raw-type", "float32"}, 1, "p.raw");
  EXPECT_FALSE(fs::exists(path("x.nrrd")));
  EXPECT_FALSE(fs::exists(path("x.png")));
  // No temporary files left behind by the failed runs.
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string n = e.path().filename().string();
    EXPECT_TRUE(n == "bad.nrrd" || n == "short.nrrd" || n == "stdout.txt" || n == "stderr.txt")
        << n;
  }
}

// --- streaming ------------------------------------------------------------------------------------------

TEST_F(ToolTest, SmallBudgetStreamsAndMatchesInMemory) {
  // 48x48x96 float (864 KiB): in memory it needs input, output and the Gaussian's scratch,
  // about 2.5 MiB, so a 1 MiB budget streams it in slabs.
  phantom("p.nrrd", "48,48,96");
  const std::vector<std::string> ops = {"--gaussian", "1", "--threshold", "0.1"};
  std::vector<std::string> mem = {"run", "p.nrrd", "-o", "mem.nrrd", "--in-memory"};
  std::vector<std::string> str = {"run", "p.nrrd", "-o", "str.nrrd", "--budget", "1M",
                                  "--progress", "plain"};
  mem.insert(mem.end(), ops.begin(), ops.end());
  str.insert(str.end(), ops.begin(), ops.end());
  ok(mem);
  const tool_result r = ok(str);
  EXPECT_NE(r.out.find("streamed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("halo 4"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("slabs (100%)"), std::string::npos) << r.err;
  expect_same(read_file<std::uint8_t>(path("str.nrrd")), read_file<std::uint8_t>(path("mem.nrrd")));
}

struct chain_case {
  const char* name;
  std::vector<std::string> ops;
  const char* slab_depth;
  double tol;  // 0: bitwise
};

void PrintTo(const chain_case& c, std::ostream* os) { *os << c.name; }

class StreamedChains : public ToolTest, public ::testing::WithParamInterface<chain_case> {};

TEST_P(StreamedChains, EqualInMemory) {
  const chain_case& c = GetParam();
  phantom("p.nrrd", "20,18,30");
  std::vector<std::string> mem = {"run", "p.nrrd", "-o", "mem.nrrd", "--in-memory", "-q"};
  std::vector<std::string> str = {"run",         "p.nrrd",     "-o", "str.nrrd", "--stream",
                                  "--slab-depth", c.slab_depth, "-q"};
  mem.insert(mem.end(), c.ops.begin(), c.ops.end());
  str.insert(str.end(), c.ops.begin(), c.ops.end());
  ok(mem);
  ok(str);
  const vox::io::volume_info a = vox::io::probe(path("mem.nrrd"));
  const vox::io::volume_info b = vox::io::probe(path("str.nrrd"));
  ASSERT_EQ(a.type, b.type);
  ASSERT_EQ(a.extent, b.extent);
  EXPECT_EQ(a.spacing, b.spacing);
  EXPECT_EQ(a.origin, b.origin);
  switch (a.type) {
    case vox::dtype::uint8:
      expect_same(read_file<std::uint8_t>(path("str.nrrd")),
                  read_file<std::uint8_t>(path("mem.nrrd")), c.tol);
      break;
    case vox::dtype::int16:
      expect_same(read_file<std::int16_t>(path("str.nrrd")),
                  read_file<std::int16_t>(path("mem.nrrd")), c.tol);
      break;
    case vox::dtype::float32:
      expect_same(read_file<float>(path("str.nrrd")), read_file<float>(path("mem.nrrd")), c.tol);
      break;
    default:
      FAIL() << "unexpected type " << vox::dtype_name(a.type);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tool, StreamedChains,
    ::testing::Values(
        chain_case{"filters", {"--gaussian", "1.5", "--median", "3", "--sobel", "z"}, "4", 0},
        chain_case{"max_z", {"--gaussian", "1", "--max-projection", "z"}, "7", 0},
        chain_case{"min_y", {"--uniform", "3", "--min-projection", "y"}, "5", 0},
        chain_case{"max_x", {"--gradient-magnitude", "--max-projection", "x"}, "3", 0},
        chain_case{"mean_y", {"--erode", "3", "--mean-projection", "y"}, "6", 0},
        // Along z the slabs' means are summed in double: equal up to the float rounding.
        chain_case{"mean_z", {"--median", "3", "--mean-projection", "z"}, "7", 1e-6},
        chain_case{"normalize", {"--gaussian", "1", "--normalize", "0:100"}, "8", 0},
        chain_case{"two_normalize",
                   {"--normalize", "0:1", "--dilate", "3", "--normalize", "-1:1", "--convert",
                    "int16"},
                   "5",
                   0},
        chain_case{"downsample", {"--uniform", "3", "--downsample", "2,3,3"}, "6", 0},
        chain_case{"threshold_convert", {"--threshold", "0.1:0.5", "--convert", "int16"}, "11", 0},
        chain_case{"no_ops", {}, "9", 0},
        chain_case{"crop_z", {"--crop", ":,:,5:23", "--gaussian", "1"}, "4", 0},
        chain_case{"crop_z_normalize", {"--crop", ":,:,3:20", "--normalize", "0:1"}, "5", 0},
        chain_case{"crop_xyz_mip",
                   {"--crop", "2:15,3:,4:", "--median", "3", "--max-projection", "z"},
                   "5",
                   0},
        // Binary morphology streams per slab with its element's z radius (twice for opening
        // and closing) as the halo.
        chain_case{"binary_erosion_dilation",
                   {"--threshold", "0.1", "--binary-erosion", "--binary-dilation=disk:2"},
                   "2",
                   0},
        chain_case{"binary_opening_ball", {"--threshold", "0.1", "--binary-opening=ball:2"}, "3",
                   0},
        chain_case{"binary_closing_box",
                   {"--threshold", "0.25", "--binary-closing", "box:3,3,5"},
                   "4",
                   0}),
    [](const ::testing::TestParamInfo<chain_case>& i) { return std::string(i.param.name); });

TEST_F(ToolTest, StreamedRawInput) {
  ok({"phantom", "-o", "p.raw", "--size", "16,12,20", "--type", "uint16", "--noise", "0.05",
      "-q"});
  ok({"run", "p.raw", "--raw-extent", "16,12,20", "--raw-type", "uint16", "-o", "mem.nrrd",
      "--median", "3", "--gaussian", "1", "--in-memory", "-q"});
  ok({"run", "p.raw", "--raw-extent", "16,12,20", "--raw-type", "uint16", "-o", "str.nrrd",
      "--median", "3", "--gaussian", "1", "--stream", "--slab-depth", "3", "-q"});
  expect_same(read_file<float>(path("str.nrrd")), read_file<float>(path("mem.nrrd")));
  ok({"mip", "p.raw", "--raw-extent", "16,12,20", "--raw-type", "uint16", "-o", "a.png",
      "--in-memory", "-q"});
  ok({"mip", "p.raw", "--raw-extent", "16,12,20", "--raw-type", "uint16", "-o", "b.png",
      "--stream", "--slab-depth", "4", "-q"});
  const auto a = vox::io::read_png(path("a.png"));
  const auto b = vox::io::read_png(path("b.png"));
  EXPECT_EQ(a.width, 16u);
  EXPECT_EQ(a.pixels, b.pixels);
}

TEST_F(ToolTest, SlabMip) {
  phantom("p.nrrd", "24,20,30");
  ok({"mip", "p.nrrd", "-o", "a.png", "--slab", "8:20", "-q"});
  ok({"mip", "p.nrrd", "-o", "b.png", "--slab", "8:20", "--stream", "--slab-depth", "5", "-q"});
  ok({"run", "p.nrrd", "-o", "c.png", "--crop", ":,:,8:20", "--max-projection", "z", "-q"});
  const auto a = vox::io::read_png(path("a.png"));
  const auto b = vox::io::read_png(path("b.png"));
  const auto c = vox::io::read_png(path("c.png"));
  EXPECT_EQ(a.width, 24u);
  EXPECT_EQ(a.height, 20u);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.pixels, c.pixels);
  // A slab along y: x wide, z high.
  ok({"mip", "p.nrrd", "-o", "y.png", "--axis", "y", "--slab", "0:10", "-q"});
  const auto y = vox::io::read_png(path("y.png"));
  EXPECT_EQ(y.width, 24u);
  EXPECT_EQ(y.height, 30u);
  fails({"mip", "p.nrrd", "-o", "z.png", "--slab", "10:40"}, 2, "--slab");
}

TEST_F(ToolTest, StreamedOpRestrictions) {
  phantom("p.nrrd", "8", 0.0);
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--gaussian", "1", "--crop", ":,:,1:5", "--stream"}, 2,
        "must be the first op of a streamed run");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--crop", "1:5,:,:", "--stream"}, 2,
        "crops along x or y only when");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--downsample", "2", "--gaussian", "1", "--stream"}, 2,
        "must be the last op of a streamed run");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--downsample", "2", "--stream", "--slab-depth", "3"},
        2, "multiple of 2");
  fails({"run", "p.nrrd", "-o", "x.tif", "--gaussian", "1", "--stream"}, 2, "streamed run writes");
}

// --- interruption, outputs, messages (issue 18) -----------------------------------------------

/// Starts the tool with `args` in `dir` (stdout and stderr to files there); returns its pid.
pid_t spawn_tool(const fs::path& dir, const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(127);
    const int out = ::open("stdout.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) ::_exit(127);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::dup2(in, 0);
    std::vector<std::string> a{VOX_CLI_EXE};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& x : a) argv.push_back(x.data());
    argv.push_back(nullptr);
    ::execv(VOX_CLI_EXE, argv.data());
    ::_exit(127);
  }
  return pid;
}

/// The hidden temporaries (".NAME.tmpPID.N") in `dir`.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> t;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 1 && n[0] == '.' && n.find(".tmp") != std::string::npos) t.push_back(n);
  }
  return t;
}

class Interrupted : public ToolTest, public ::testing::WithParamInterface<int> {};

TEST_P(Interrupted, LeavesNoPartialFile) {
  const int sig = GetParam();
  // A streamed run of several seconds on the host backend, and of several hundred megabytes of
  // file i/o on the CUDA backend (where the median itself takes milliseconds): its output grows
  // in a temporary from the first slab on.
  phantom("p.nrrd", VOX_BACKEND_CUDA ? "384" : "128", 0.1);
  const pid_t pid = spawn_tool(dir_, {"run", "p.nrrd", "-o", "out.nrrd", "--median", "5",
                                      "--stream", "--slab-depth", "4", "-q"});
  ASSERT_GT(pid, 0);
  const auto t0 = std::chrono::steady_clock::now();
  bool seen = false;
  int st = 0;
  while (!seen && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    seen = !temporaries(dir_).empty();
    if (!seen) {
      ASSERT_EQ(::waitpid(pid, &st, WNOHANG), 0) << "the run ended before it wrote anything";
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ASSERT_TRUE(seen) << "no temporary file appeared";
  std::this_thread::sleep_for(std::chrono::milliseconds(VOX_BACKEND_CUDA ? 20 : 200));
  ASSERT_EQ(::kill(pid, sig), 0);
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st << "; stderr: " << slurp(path("stderr.txt"));
  EXPECT_EQ(WTERMSIG(st), sig);
  EXPECT_TRUE(temporaries(dir_).empty()) << temporaries(dir_).front();
  EXPECT_FALSE(fs::exists(path("out.nrrd")));
  EXPECT_NE(slurp(path("stderr.txt")).find("removed the partial output"), std::string::npos)
      << slurp(path("stderr.txt"));
}

INSTANTIATE_TEST_SUITE_P(Signals, Interrupted, ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGTERM ? "SIGTERM" : "SIGINT");
                         });

TEST_F(ToolTest, StaleTemporariesOfTheOutputAreSwept) {
  const pid_t child = ::fork();  // a pid that no longer runs
  if (child == 0) ::_exit(0);
  int st = 0;
  ::waitpid(child, &st, 0);
  const std::string dead = std::to_string(child);
  for (const std::string& n : {".p.nrrd.tmp" + dead + ".0", ".q.nrrd.tmp" + dead + ".0"})
    std::ofstream(path(n)) << "partial";
  phantom("p.nrrd", "8", 0.0);
  EXPECT_FALSE(fs::exists(path(".p.nrrd.tmp" + dead + ".0")));
  EXPECT_TRUE(fs::exists(path(".q.nrrd.tmp" + dead + ".0")));  // another output's
  ok({"run", "p.nrrd", "-o", "q.nrrd", "--gaussian", "1", "-q"});
  EXPECT_FALSE(fs::exists(path(".q.nrrd.tmp" + dead + ".0")));
}

// "Timing" in the name: a wall-clock bound, so the GPU check runs it with the timed tests, one
// at a time (five processes each starting a CUDA context took 5.35 s among ten parallel tests).
TEST_F(ToolTest, TimingUnwritableOutputFailsBeforeAnyWork) {
  phantom("p.nrrd", "64", 0.1);
  const auto t0 = std::chrono::steady_clock::now();
  // Each of these would compute for seconds before writing.
  fails({"run", "p.nrrd", "-o", "no/such/dir/x.nrrd", "--median", "5", "--median", "5"}, 1,
        "the directory 'no/such/dir' does not exist");
  fails({"run", "p.nrrd", "-o", "no/x.nrrd", "--median", "5", "--stream", "--slab-depth", "2"},
        1, "does not exist");
  fails({"mip", "p.nrrd", "-o", "no/x.png"}, 1, "does not exist");
  fails({"phantom", "-o", "no/x.nrrd", "--size", "600"}, 1, "does not exist");
  std::ofstream(path("plain")) << "x";
  fails({"phantom", "-o", "plain/x.nrrd", "--size", "600"}, 1, "is not a directory");
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0) << "the checks came after the work";
  EXPECT_FALSE(fs::exists(path("no")));
}

TEST_F(ToolTest, ProgressOfInMemoryRunsAndPhantom) {
  const tool_result p = ok({"phantom", "-o", "p.nrrd", "--size", "16", "--progress", "plain"});
  EXPECT_NE(p.err.find("phantom: 2/2 steps (100%)"), std::string::npos) << p.err;
  const tool_result r = ok({"run", "p.nrrd", "-o", "g.nrrd", "--gaussian", "1", "--threshold",
                            "0.5", "--in-memory", "--progress", "plain"});
  // Reading, two ops, the result to the host, writing.
  EXPECT_NE(r.err.find("run: 5/5 steps (100%)"), std::string::npos) << r.err;
  const tool_result m = ok({"mip", "p.nrrd", "-o", "m.png", "--progress", "plain"});
  EXPECT_NE(m.err.find("mip: 4/4 steps (100%)"), std::string::npos) << m.err;
  // Not a terminal and no --progress: in-memory runs print no progress.
  const tool_result quiet = ok({"run", "p.nrrd", "-o", "h.nrrd", "--gaussian", "1"});
  EXPECT_EQ(quiet.err, "");
  const tool_result ph = ok({"phantom", "-o", "p2.nrrd", "--size", "16"});
  EXPECT_EQ(ph.err, "");
}

TEST_F(ToolTest, MessagesAreForUsers) {
  phantom("p.nrrd", "8", 0.0);
  std::ofstream(path("data.raw"), std::ios::binary) << std::string(512, '\0');
  std::ofstream(path("bad.nrrd"), std::ios::binary)
      << "NRRD0004\ntype: banana\ndimension: 3\nsizes: 4 4 4\nencoding: raw\n\n";
  const std::vector<std::pair<std::vector<std::string>, const char*>> cases = {
      {{"info", "data.raw"}, "--raw-extent X,Y,Z --raw-type TYPE"},
      {{"run", "data.raw", "-o", "x.nrrd", "--gaussian", "1"}, "--raw-extent"},
      {{"info", "missing.nrrd"}, "missing.nrrd"},
      {{"info", "bad.nrrd"}, "bad.nrrd"},
      {{"info", "data.raw", "--raw-extent", "16,16,16", "--raw-type", "float32"}, "data.raw"},
      {{"run", "p.nrrd", "-o", "nodir/x.nrrd"}, "does not exist"},
      {{"phantom", "-o", "p.nrrd", "--noise", "-1"}, "--noise: -1 must be >= 0"},
      {{"run", "p.nrrd", "-o", "x.nrrd", "--streams", "many"}, "not a whole number"},
  };
  for (const auto& [args, expect] : cases) {
    const tool_result r = run(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_NE(r.rc, 0) << line;
    EXPECT_NE(r.err.find(expect), std::string::npos) << line << "\nstderr: " << r.err;
    // No build-tree paths, source locations or internal names; the error is said once.
    for (const char* internal : {"src/", ".cpp:", ".cu:", "::", "read_raw", "(ignored"})
      EXPECT_EQ(r.err.find(internal), std::string::npos) << line << "\nstderr: " << r.err;
    const std::string first = r.err.substr(0, r.err.find('\n'));
    EXPECT_EQ(first.rfind("voxstream: error: ", 0), 0u) << r.err;
    EXPECT_EQ(first.find("voxstream", 1), std::string::npos) << r.err;
  }
}

// --- segmentation (issue 20) -----------------------------------------------------------------------

/// Writes `v` (x fastest) as a volume file of extent `e` with voxel size `spacing`.
template <class T>
void write_volume(const std::string& p, vox::extent3 e, const std::vector<T>& v,
                  vox::vec3d spacing = {1, 1, 1}) {
  vox::host_volume<T> h(e);
  std::copy(v.begin(), v.end(), h.data());
  vox::io::write_options wo;
  wo.spacing = spacing;
  vox::io::write(p, h, wo);
}

template <class T>
std::vector<T> voxels_of(const vox::host_volume<T>& h) {
  return std::vector<T>(h.data(), h.data() + h.size());
}

using offset3 = std::array<long, 3>;

/// The neighbours of a voxel under connectivity 6, 18 or 26.
std::vector<offset3> neighbours(int conn) {
  std::vector<offset3> o;
  for (long dz = -1; dz <= 1; ++dz)
    for (long dy = -1; dy <= 1; ++dy)
      for (long dx = -1; dx <= 1; ++dx) {
        const long n = std::labs(dx) + std::labs(dy) + std::labs(dz);
        if (n == 0 || (conn == 6 && n > 1) || (conn == 18 && n > 2)) continue;
        o.push_back({dx, dy, dz});
      }
  return o;
}

/// A plain host flood fill over the voxels where `in(i)` holds, from `seeds`, under `conn`;
/// marks reached voxels with `id` in `out`.
template <class In>
void flood(vox::extent3 e, In in, std::vector<std::int32_t>& out, std::deque<std::size_t> seeds,
           std::int32_t id, int conn) {
  const auto nb = neighbours(conn);
  const long nx = static_cast<long>(e.x), ny = static_cast<long>(e.y), nz = static_cast<long>(e.z);
  for (std::size_t s : seeds) out[s] = id;
  while (!seeds.empty()) {
    const std::size_t i = seeds.front();
    seeds.pop_front();
    const long x = static_cast<long>(i % e.x), y = static_cast<long>(i / e.x % e.y),
               z = static_cast<long>(i / (e.x * e.y));
    for (const offset3& d : nb) {
      const long a = x + d[0], b = y + d[1], c = z + d[2];
      if (a < 0 || b < 0 || c < 0 || a >= nx || b >= ny || c >= nz) continue;
      const auto j = static_cast<std::size_t>((c * ny + b) * nx + a);
      if (out[j] != 0 || !in(j)) continue;
      out[j] = id;
      seeds.push_back(j);
    }
  }
}

/// scipy.ndimage.label on the host: components of nonzero voxels, numbered by their first voxel
/// in memory order.
std::vector<std::int32_t> host_label(vox::extent3 e, const std::vector<std::uint8_t>& m, int conn) {
  std::vector<std::int32_t> l(m.size(), 0);
  std::int32_t next = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i] != 0 && l[i] == 0) flood(e, [&](std::size_t j) { return m[j] != 0; }, l, {i}, ++next, conn);
  return l;
}

/// The voxel count of each label 0..max.
std::vector<std::size_t> label_counts(const std::vector<std::int32_t>& l) {
  std::vector<std::size_t> c(static_cast<std::size_t>(*std::max_element(l.begin(), l.end())) + 1);
  for (std::int32_t v : l) ++c[static_cast<std::size_t>(v)];
  return c;
}

/// scipy.ndimage.binary_fill_holes on the host: background not reached from the border is filled.
std::vector<std::uint8_t> host_fill_holes(vox::extent3 e, const std::vector<std::uint8_t>& m,
                                          int conn) {
  std::vector<std::int32_t> outside(m.size(), 0);
  std::deque<std::size_t> border;
  for (std::size_t z = 0; z < e.z; ++z)
    for (std::size_t y = 0; y < e.y; ++y)
      for (std::size_t x = 0; x < e.x; ++x) {
        const std::size_t i = (z * e.y + y) * e.x + x;
        const bool edge = x == 0 || y == 0 || z == 0 || x + 1 == e.x || y + 1 == e.y || z + 1 == e.z;
        if (edge && m[i] == 0) border.push_back(i);
      }
  flood(e, [&](std::size_t j) { return m[j] == 0; }, outside, border, 1, conn);
  std::vector<std::uint8_t> f(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) f[i] = (m[i] != 0 || outside[i] == 0) ? 1 : 0;
  return f;
}

/// Brute-force Euclidean distance to the nearest zero voxel, with scipy's sum order.
std::vector<float> host_edt(vox::extent3 e, const std::vector<std::uint8_t>& m, vox::vec3d s) {
  std::vector<float> d(m.size(), 0.0f);
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] == 0) continue;
    double best = std::numeric_limits<double>::infinity();
    const double x = static_cast<double>(i % e.x), y = static_cast<double>(i / e.x % e.y),
                 z = static_cast<double>(i / (e.x * e.y));
    for (std::size_t j = 0; j < m.size(); ++j) {
      if (m[j] != 0) continue;
      const double dx = s.x * (x - static_cast<double>(j % e.x));
      const double dy = s.y * (y - static_cast<double>(j / e.x % e.y));
      const double dz = s.z * (z - static_cast<double>(j / (e.x * e.y)));
      best = std::min(best, std::sqrt((dz * dz + dy * dy) + dx * dx));
    }
    d[i] = static_cast<float>(best);
  }
  return d;
}

/// The offsets of a ball of radius r, or of a box of odd size 2r + 1.
std::vector<offset3> element(long r, bool box) {
  std::vector<offset3> o;
  for (long dz = -r; dz <= r; ++dz)
    for (long dy = -r; dy <= r; ++dy)
      for (long dx = -r; dx <= r; ++dx)
        if (box || dx * dx + dy * dy + dz * dz <= r * r) o.push_back({dx, dy, dz});
  return o;
}

/// Brute-force binary erosion (every voxel under the element set, outside the volume being 0)
/// or dilation (any voxel under the element set); the elements are symmetric.
std::vector<std::uint8_t> host_morph(vox::extent3 e, const std::vector<std::uint8_t>& m,
                                     const std::vector<offset3>& se, bool erode) {
  std::vector<std::uint8_t> out(m.size());
  const long nx = static_cast<long>(e.x), ny = static_cast<long>(e.y), nz = static_cast<long>(e.z);
  for (long z = 0; z < nz; ++z)
    for (long y = 0; y < ny; ++y)
      for (long x = 0; x < nx; ++x) {
        bool all = true, any = false;
        for (const offset3& d : se) {
          const long a = x + d[0], b = y + d[1], c = z + d[2];
          const bool in = a >= 0 && b >= 0 && c >= 0 && a < nx && b < ny && c < nz;
          const bool v = in && m[static_cast<std::size_t>((c * ny + b) * nx + a)] != 0;
          all = all && v;
          any = any || v;
        }
        out[static_cast<std::size_t>((z * ny + y) * nx + x)] = (erode ? all : any) ? 1 : 0;
      }
  return out;
}

/// A 12x10x8 mask: a cube shell around a 3^3 cavity, a bar, a chain of voxels joined only by
/// corners, single voxels, and diagonal lines in the top slice.
std::vector<std::uint8_t> segmentation_mask(vox::extent3 e) {
  std::vector<std::uint8_t> m(e.voxels(), 0);
  const auto at = [&](std::size_t x, std::size_t y, std::size_t z) -> std::uint8_t& {
    return m[(z * e.y + y) * e.x + x];
  };
  for (std::size_t z = 1; z <= 5; ++z)
    for (std::size_t y = 1; y <= 5; ++y)
      for (std::size_t x = 1; x <= 5; ++x)
        if (x == 1 || x == 5 || y == 1 || y == 5 || z == 1 || z == 5) at(x, y, z) = 1;
  for (std::size_t x = 7; x <= 11; ++x) at(x, 5, 4) = 1;  // bar
  at(8, 1, 1) = at(9, 2, 2) = at(10, 3, 3) = 1;             // corner-joined chain
  at(8, 8, 5) = at(10, 8, 2) = 1;                            // single voxels
  // Diagonal lines in the top slice: single voxels with 6, lines with 18 and 26.
  for (std::size_t y = 0; y < e.y; ++y)
    for (std::size_t x = 0; x < e.x; ++x)
      if ((x + y) % 4 == 1) at(x, y, 7) = 1;
  return m;
}

TEST_F(ToolTest, SegmentationOpsMatchHostReferences) {
  const vox::extent3 e{12, 10, 8};
  const std::vector<std::uint8_t> m = segmentation_mask(e);
  const vox::vec3d spacing{0.5, 1.0, 2.0};
  write_volume(path("m.nrrd"), e, m, spacing);
  const auto run_to = [&](const std::string& out, std::vector<std::string> ops) {
    std::vector<std::string> args = {"run", "m.nrrd", "-o", out, "-q"};
    args.insert(args.end(), ops.begin(), ops.end());
    ok(args);
  };
  // Labels, exactly as scipy numbers them.
  const std::vector<std::int32_t> l6 = host_label(e, m, 6);
  const std::vector<std::int32_t> l26 = host_label(e, m, 26);
  ASSERT_GT(*std::max_element(l6.begin(), l6.end()), *std::max_element(l26.begin(), l26.end()));
  run_to("l6.nrrd", {"--label"});
  run_to("l18.nrrd", {"--label", "18"});
  run_to("l26.nrrd", {"--label=26"});
  EXPECT_EQ(vox::io::probe(path("l6.nrrd")).type, vox::dtype::int32);
  EXPECT_EQ(vox::io::probe(path("l6.nrrd")).spacing, spacing);
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("l6.nrrd"))), l6);
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("l18.nrrd"))), host_label(e, m, 18));
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("l26.nrrd"))), l26);

  // Holes: the cavity of the shell (27 voxels) and whatever the sprinkle encloses.
  run_to("f.nrrd", {"--fill-holes"});
  const std::vector<std::uint8_t> filled = host_fill_holes(e, m, 6);
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("f.nrrd"))), filled);
  EXPECT_EQ(filled[(3 * e.y + 3) * e.x + 3], 1);

  // The largest component (the shell, 98 voxels), and the small ones removed.
  const std::vector<std::size_t> c6 = label_counts(l6);
  const auto largest = static_cast<std::int32_t>(
      std::max_element(c6.begin() + 1, c6.end()) - c6.begin());  // first of the largest
  std::vector<std::uint8_t> keep(m.size()), big6(m.size()), big26(m.size());
  std::vector<std::int32_t> big_labels(m.size());
  const std::vector<std::size_t> c26 = label_counts(l26);
  for (std::size_t i = 0; i < m.size(); ++i) {
    keep[i] = l6[i] == largest ? 1 : 0;
    big6[i] = l6[i] != 0 && c6[static_cast<std::size_t>(l6[i])] >= 3 ? 1 : 0;
    big26[i] = l26[i] != 0 && c26[static_cast<std::size_t>(l26[i])] >= 3 ? 1 : 0;
    big_labels[i] = big6[i] != 0 ? l6[i] : 0;
  }
  EXPECT_EQ(c6[static_cast<std::size_t>(largest)], 98u);
  run_to("k.nrrd", {"--keep-largest"});
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("k.nrrd"))), keep);
  run_to("r6.nrrd", {"--remove-small", "3"});
  run_to("r26.nrrd", {"--remove-small=3:26"});
  run_to("rl.nrrd", {"--label", "--remove-small", "3"});  // labels in, labels out
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("r6.nrrd"))), big6);
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("r26.nrrd"))), big26);
  EXPECT_NE(big6, big26);  // the corner-joined chain survives only with 26
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("rl.nrrd"))), big_labels);
  // keep-largest of the labels equals keep-largest of the mask.
  run_to("kl.nrrd", {"--label", "--keep-largest"});
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("kl.nrrd"))), keep);

  // Distances: in units of the file's spacing, or of the voxel size given.
  run_to("d.nrrd", {"--edt"});
  run_to("d1.nrrd", {"--edt=1"});
  run_to("d3.nrrd", {"--edt", "1,2,3"});
  EXPECT_EQ(vox::io::probe(path("d.nrrd")).type, vox::dtype::float32);
  const auto edt_file = [&](const std::string& name) {
    return read_file<float>(path(name));
  };
  const auto expect_edt = [&](const std::string& name, vox::vec3d s) {
    SCOPED_TRACE(name);
    vox::host_volume<float> want(e);
    const std::vector<float> d = host_edt(e, m, s);
    std::copy(d.begin(), d.end(), want.data());
    expect_same(edt_file(name), want, 1e-6);
  };
  expect_edt("d.nrrd", spacing);
  expect_edt("d1.nrrd", {1, 1, 1});
  expect_edt("d3.nrrd", {1, 2, 3});

  // Binary morphology (border 0, as scipy's default).
  const auto cross = element(1, false);
  const auto ball2 = element(2, false);
  const auto box3 = element(1, true);
  run_to("e.nrrd", {"--binary-erosion"});
  run_to("dl.nrrd", {"--binary-dilation=box:3"});
  run_to("o.nrrd", {"--binary-opening", "ball:2"});
  run_to("c.nrrd", {"--binary-closing=ball:1"});
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("e.nrrd"))), host_morph(e, m, cross, true));
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("dl.nrrd"))), host_morph(e, m, box3, false));
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("o.nrrd"))),
            host_morph(e, host_morph(e, m, ball2, true), ball2, false));
  EXPECT_EQ(voxels_of(read_file<std::uint8_t>(path("c.nrrd"))),
            host_morph(e, host_morph(e, m, cross, false), cross, true));
}

TEST_F(ToolTest, SegmentationMatchesTheLibraryOnAPhantom) {
  // A chain through the whole volume: threshold, opening, labels, fill holes, distances.
  phantom("p.nrrd", "24,20,16");
  ok({"run", "p.nrrd", "-o", "l.nrrd", "--threshold", "0.15", "--binary-opening", "--label=26",
      "-q"});
  ok({"run", "p.nrrd", "-o", "d.nrrd", "--threshold", "0.15", "--fill-holes", "--edt", "-q"});
  vox::stream_set s(3);
  const vox::volume<float> in = to_device(s, read_file<float>(path("p.nrrd")));
  vox::volume<std::uint8_t> mask(s, in.extent()), open(s, in.extent()), filled(s, in.extent());
  vox::volume<std::int32_t> labels(s, in.extent());
  vox::volume<float> dist(s, in.extent());
  vox::threshold(s, in, mask, 0.15);
  vox::binary_opening(s, mask, open);
  const std::int32_t n = vox::label(s, open, labels, 26).get();
  vox::binary_fill_holes(s, mask, filled);
  vox::distance_transform_edt<std::uint8_t, float>(s, filled, dist, {1, 1, 1});
  const auto got = read_file<std::int32_t>(path("l.nrrd"));
  expect_same(got, to_host(s, labels));
  EXPECT_EQ(*std::max_element(got.data(), got.data() + got.size()), n);
  EXPECT_GE(n, 1);
  expect_same(read_file<float>(path("d.nrrd")), to_host(s, dist));
}

TEST_F(ToolTest, DistancesAndLabelsByHand) {
  write_volume<float>(path("row.nrrd"), {5, 1, 1}, {1, 1, 0, 1, 1});
  ok({"run", "row.nrrd", "-o", "d.nrrd", "--edt", "-q"});
  ok({"run", "row.nrrd", "-o", "d2.nrrd", "--edt=2", "-q"});
  ok({"run", "row.nrrd", "-o", "l.nrrd", "--label", "-q"});
  EXPECT_EQ(voxels_of(read_file<float>(path("d.nrrd"))), (std::vector<float>{2, 1, 0, 1, 2}));
  EXPECT_EQ(voxels_of(read_file<float>(path("d2.nrrd"))), (std::vector<float>{4, 2, 0, 2, 4}));
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("l.nrrd"))),
            (std::vector<std::int32_t>{1, 1, 0, 2, 2}));
  // One zero in the middle of a 3x3 slice: sqrt(2) at the corners.
  write_volume<std::uint8_t>(path("sq.nrrd"), {3, 3, 1}, {1, 1, 1, 1, 0, 1, 1, 1, 1});
  ok({"run", "sq.nrrd", "-o", "s.nrrd", "--edt", "-q"});
  const float r2 = static_cast<float>(std::sqrt(2.0));
  EXPECT_EQ(voxels_of(read_file<float>(path("s.nrrd"))),
            (std::vector<float>{r2, 1, r2, 1, 0, 1, r2, 1, r2}));
  // No zero voxel: no feature, +infinity everywhere (scipy's values there are meaningless).
  write_volume<std::uint8_t>(path("full.nrrd"), {2, 1, 1}, {1, 1});
  ok({"run", "full.nrrd", "-o", "inf.nrrd", "--edt", "-q"});
  for (float v : voxels_of(read_file<float>(path("inf.nrrd")))) EXPECT_TRUE(std::isinf(v)) << v;
  // Diagonal neighbours in a slice: 2 components with 6, 1 with 26; in-plane 8 joins them too.
  write_volume<std::uint8_t>(path("diag.nrrd"), {2, 2, 1}, {1, 0, 0, 1});
  ok({"run", "diag.nrrd", "-o", "l6.nrrd", "--label", "-q"});
  ok({"run", "diag.nrrd", "-o", "l8.nrrd", "--label=8", "-q"});
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("l6.nrrd"))),
            (std::vector<std::int32_t>{1, 0, 0, 2}));
  EXPECT_EQ(voxels_of(read_file<std::int32_t>(path("l8.nrrd"))),
            (std::vector<std::int32_t>{1, 0, 0, 1}));
}

/// A 4x3x2 label volume (labels 1, 2, 3, 5; a -1 that is ignored) and its values x + 4y + 12z.
void write_stats_fixture(const std::string& labels, const std::string& mask,
                         const std::string& values) {
  const std::vector<std::int32_t> l = {1, 1, 0, 2,   //
                                       0, -1, 0, 2,  //
                                       3, 0, 0, 0,   // z = 0
                                       0, 0, 0, 2,   //
                                       0, 0, 5, 0,   //
                                       3, 3, 0, 0};  // z = 1
  write_volume(labels, {4, 3, 2}, l);
  std::vector<std::uint8_t> m(l.size());
  for (std::size_t i = 0; i < l.size(); ++i) m[i] = l[i] > 0 ? 1 : 0;
  write_volume(mask, {4, 3, 2}, m);
  std::vector<std::uint16_t> v(l.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(i);
  write_volume(values, {4, 3, 2}, v);
}

TEST_F(ToolTest, StatsPrintsTheRegionTableAsCsv) {
  write_stats_fixture(path("l.nrrd"), path("m.nrrd"), path("v.nrrd"));
  // By hand: label 1 = voxels 0, 1; label 2 = 3, 7, 15; label 3 = 8, 20, 21; label 5 = 18; no
  // label 4 (no line); the values are the voxel indices.
  const tool_result r = ok({"stats", "l.nrrd", "--values", "v.nrrd"});
  EXPECT_EQ(r.out,
            "label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
            "1,2,1,0.5,0,1,0,0,0,2,1,1,0.5,0,0\n"
            "2,3,25,8.333333333333334,3,15,3,0,0,4,2,2,3,0.3333333333333333,0.3333333333333333\n"
            "3,3,49,16.333333333333332,8,21,0,2,0,2,3,2,0.3333333333333333,2,0.6666666666666666\n"
            "5,1,18,18,18,18,2,1,1,3,2,2,2,1,1\n");
  EXPECT_EQ(r.err, "");
  // Without values: no value columns.
  const tool_result g = ok({"stats", "l.nrrd"});
  EXPECT_EQ(g.out,
            "label,count,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
            "1,2,0,0,0,2,1,1,0.5,0,0\n"
            "2,3,3,0,0,4,2,2,3,0.3333333333333333,0.3333333333333333\n"
            "3,3,0,2,0,2,3,2,0.3333333333333333,2,0.6666666666666666\n"
            "5,1,2,1,1,3,2,2,2,1,1\n");
  // A mask is labelled first (6-connected): the same regions, numbered 1..4.
  const tool_result mk = ok({"stats", "m.nrrd", "--values", "v.nrrd"});
  EXPECT_EQ(mk.out,
            "label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
            "1,2,1,0.5,0,1,0,0,0,2,1,1,0.5,0,0\n"
            "2,3,25,8.333333333333334,3,15,3,0,0,4,2,2,3,0.3333333333333333,0.3333333333333333\n"
            "3,3,49,16.333333333333332,8,21,0,2,0,2,3,2,0.3333333333333333,2,0.6666666666666666\n"
            "4,1,18,18,18,18,2,1,1,3,2,2,2,1,1\n");
  // 26-connected, every region touches the next by an edge or a corner: one region.
  const tool_result one = ok({"stats", "m.nrrd", "--values", "v.nrrd", "--connectivity", "26"});
  EXPECT_EQ(one.out,
            "label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
            "1,9,93,10.333333333333334,0,21,0,0,0,4,3,2,1.4444444444444444,0.8888888888888888,"
            "0.4444444444444444\n");
  // --connectivity relabels an int32 input too (its -1 voxel is foreground then: 10 voxels).
  const tool_result re = ok({"stats", "l.nrrd", "--connectivity", "26"});
  EXPECT_EQ(re.out.substr(re.out.find('\n') + 1, 5), "1,10,");
  // The labels of run --label give the mask's table.
  ok({"run", "m.nrrd", "-o", "ml.nrrd", "--label", "-q"});
  EXPECT_EQ(ok({"stats", "ml.nrrd", "--values", "v.nrrd"}).out, mk.out);
  // A raw label input.
  {
    const auto h = read_file<std::int32_t>(path("l.nrrd"));
    std::ofstream f(path("l.raw"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(h.data()),
            static_cast<std::streamsize>(h.size() * sizeof(std::int32_t)));
  }
  EXPECT_EQ(ok({"stats", "l.raw", "--raw-extent", "4,3,2", "--raw-type", "int32"}).out, g.out);
  // No region at all: the header alone.
  write_volume<std::int32_t>(path("zero.nrrd"), {3, 2, 1}, {0, 0, -4, 0, 0, 0});
  EXPECT_EQ(ok({"stats", "zero.nrrd"}).out, "label,count,x0,y0,z0,x1,y1,z1,cx,cy,cz\n");
}

TEST_F(ToolTest, WholeVolumeOpsAreNotStreamed) {
  phantom("p.nrrd", "16", 0.0);
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--threshold", "0.1", "--label", "--stream"}, 2,
        "'--label' needs the whole volume in device memory and cannot run in a streamed run");
  fails({"run", "p.nrrd", "-o", "x.nrrd", "--threshold", "0.1", "--keep-largest=26",
         "--max-projection", "z", "--stream"},
        2, "'--keep-largest 26' needs the whole volume");
  // Too large for the budget: refused rather than streamed, with what to do.
  const tool_result r =
      fails({"run", "p.nrrd", "-o", "x.nrrd", "--edt", "--budget", "8K"}, 2, "raise --budget");
  EXPECT_NE(r.err.find("'--edt' needs the whole volume"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("x.nrrd")));
  // Forced in memory, the budget does not matter.
  ok({"run", "p.nrrd", "-o", "x.nrrd", "--threshold", "0.1", "--fill-holes", "--budget", "8K",
      "--in-memory", "-q"});
  // stats needs the whole volume too.
  ok({"run", "p.nrrd", "-o", "l.nrrd", "--threshold", "0.1", "--label", "-q"});
  fails({"stats", "l.nrrd", "--budget", "4K"}, 2, "raise --budget");
}

TEST_F(ToolTest, SegmentationBadInput) {
  write_stats_fixture(path("l.nrrd"), path("m.nrrd"), path("v.nrrd"));
  write_volume<float>(path("other.nrrd"), {4, 3, 3}, std::vector<float>(36, 1.0f));
  std::ofstream(path("data.raw"), std::ios::binary) << std::string(96, '\0');
  fails({"run", "m.nrrd", "-o", "x.nrrd", "--label", "7"}, 2, "--label: '7'");
  fails({"run", "m.nrrd", "-o", "x.nrrd", "--remove-small"}, 2, "--remove-small");
  fails({"run", "m.nrrd", "-o", "x.nrrd", "--binary-erosion=sphere:1"}, 2, "the shape is");
  fails({"run", "m.nrrd", "-o", "x.nrrd", "--binary-dilation=box:2"}, 2, "odd");
  fails({"run", "m.nrrd", "-o", "x.nrrd", "--edt=0"}, 2, "--edt");
  fails({"stats", "missing.nrrd"}, 1, "missing.nrrd");
  fails({"stats", "l.nrrd", "--values", "missing.nrrd"}, 1, "missing.nrrd");
  fails({"stats", "l.nrrd", "--values", "other.nrrd"}, 2, "differs from the labels'");
  fails({"stats", "l.nrrd", "--values", "data.raw"}, 1, "data.raw");
  fails({"stats", "l.nrrd", "--connectivity", "5"}, 2, "--connectivity: '5'");
  fails({"stats", "data.raw"}, 1, "--raw-extent");
  fails({"frobnicate", "l.nrrd"}, 2, "stats");
  EXPECT_FALSE(fs::exists(path("x.nrrd")));
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"stats", "l.nrrd", "--values", "other.nrrd"}, {"stats", "l.nrrd", "--values", "data.raw"}}) {
    const tool_result r = run(args);
    for (const char* internal : {"src/", ".cpp:", ".cu:", "::"})
      EXPECT_EQ(r.err.find(internal), std::string::npos) << r.err;
  }
}

TEST_F(ToolTest, HelpNamesTheSegmentationOps) {
  EXPECT_NE(ok({"--help"}).out.find("stats"), std::string::npos);
  const tool_result r = ok({"run", "--help"});
  for (const char* s : {"--label [CONN]", "--edt", "--fill-holes", "--keep-largest",
                        "--remove-small N[:CONN]", "--binary-opening", "label -> int32",
                        "need the whole volume"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  const tool_result st = ok({"stats", "--help"});
  EXPECT_NE(st.out.find("label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz"),
            std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("--values"), std::string::npos);
  EXPECT_NE(st.out.find("--connectivity"), std::string::npos);
}

}  // namespace
