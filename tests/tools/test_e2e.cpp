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
#include <cstdint>
#include <cstdlib>
#include <filesystem>
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
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/projection.hpp>
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

TEST_F(ToolTest, UnwritableOutputFailsBeforeAnyWork) {
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

}  // namespace
