// Malformed, truncated and corrupted files: each must raise vox::io::io_error naming the file,
// never crash, and never hand back a partial volume (the output stays untouched).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/io/format.hpp>

#include "io_test_util.hpp"

namespace {

using namespace vox_io_test;
using vox::extent3;
namespace io = vox::io;

class io_malformed : public temp_dir_test {
 protected:
  /// Reads `p` as T into a volume of random voxels and expects io_error naming `named`, with
  /// that volume left exactly as it was (never a partial volume).
  template <class T = float>
  void expect_read_fails(const fs::path& p, const std::string& named, const std::string& why) {
    auto out = random_volume<T>(extent3{2, 3, 1}, 99);
    const auto copy = random_volume<T>(extent3{2, 3, 1}, 99);
    try {
      (void)io::read(p, out);
      ADD_FAILURE() << why << ": read succeeded";
    } catch (const io::io_error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos)
          << why << ": message does not name " << named << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << why << ": threw something other than io_error: " << e.what();
    }
    ASSERT_TRUE(same_voxels(out, copy)) << why;
  }

  /// Offsets to truncate a file of `size` bytes at: every byte of the first `dense` bytes, then
  /// about 40 spread over the rest, and the last few.
  static std::vector<std::size_t> cut_points(std::size_t size, std::size_t dense) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 0; i < std::min(size, dense); ++i) cuts.push_back(i);
    for (std::size_t i = dense; i < size; i += std::max<std::size_t>(1, (size - dense) / 40))
      cuts.push_back(i);
    for (std::size_t k = 1; k <= 9 && k <= size; ++k) cuts.push_back(size - k);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    return cuts;
  }
};

struct file_case {
  const char* name;
  io::encoding enc;
};

TEST_F(io_malformed, truncated_attached_files) {
  std::vector<file_case> cases = {{"t.nrrd", io::encoding::raw},
                                  {"t.nrrd", io::encoding::gzip},
                                  {"t.mha", io::encoding::raw},
                                  {"t.mha", io::encoding::gzip}};
  if (io::tiff_supported()) {
    cases.push_back({"t.tif", io::encoding::raw});
    cases.push_back({"t.tif", io::encoding::gzip});
  }
  const auto v = random_volume<float>(extent3{9, 8, 3}, 1);
  for (const file_case& c : cases) {
    io::write_options o;
    o.enc = c.enc;
    o.order = io::byte_order::big;
    io::write(path(c.name), v, o);
    const std::string full = slurp(path(c.name));
    const std::size_t header = io::probe(path(c.name)).header_bytes;
    for (std::size_t cut : cut_points(full.size(), header + 16)) {
      const fs::path p = path(std::string("cut_") + c.name);
      spit(p, full.substr(0, cut));
      expect_read_fails(p, p.filename().string(),
                        std::string(c.name) + (c.enc == io::encoding::gzip ? " gzip" : " raw") +
                            " cut at " + std::to_string(cut) + "/" + std::to_string(full.size()));
    }
  }
}

TEST_F(io_malformed, truncated_detached_data) {
  const auto v = random_volume<std::int32_t>(extent3{7, 5, 4}, 2);
  for (const char* name : {"d.nhdr", "d.mhd"}) {
    for (io::encoding enc : {io::encoding::raw, io::encoding::gzip}) {
      io::write_options o;
      o.enc = enc;
      io::write(path(name), v, o);
      const io::volume_info info = io::probe(path(name));
      ASSERT_TRUE(info.detached);
      const std::string data = slurp(info.data_file);
      for (std::size_t cut : cut_points(data.size(), 24)) {
        spit(info.data_file, data.substr(0, cut));
        expect_read_fails<std::int32_t>(path(name), info.data_file.filename().string(),
                                        std::string(name) + " data cut at " + std::to_string(cut));
      }
      spit(info.data_file, data);
      vox::host_volume<std::int32_t> r;
      (void)io::read(path(name), r);
      EXPECT_TRUE(same_voxels(v, r));
      // The header cut anywhere is refused too (a detached header may lose its last lines).
      const std::string header = slurp(path(name));
      for (std::size_t cut = 0; cut < header.size(); ++cut) {
        const fs::path p = path(std::string("h_") + name);
        spit(p, header.substr(0, cut));
        try {
          vox::host_volume<std::int32_t> out;
          (void)io::read(p, out);
          // Only a cut that drops optional trailing text may still describe the same volume.
          EXPECT_TRUE(same_voxels(v, out)) << name << " header cut at " << cut;
        } catch (const io::io_error&) {}
      }
    }
  }
}

TEST_F(io_malformed, corrupted_compressed_data) {
  const auto v = random_volume<std::uint16_t>(extent3{16, 16, 4}, 3);
  for (const char* name : {"c.nrrd", "c.mha"}) {
    io::write_options o;
    o.enc = io::encoding::gzip;
    io::write(path(name), v, o);
    const std::string full = slurp(path(name));
    const std::size_t header = io::probe(path(name)).header_bytes;
    for (std::size_t at = header; at < full.size();
         at += std::max<std::size_t>(1, (full.size() - header) / 25)) {
      std::string bad = full;
      bad[at] = static_cast<char>(bad[at] ^ 0x5a);
      spit(path("bad.bin"), bad);
      expect_read_fails<std::uint16_t>(path("bad.bin"), "bad.bin",
                                       std::string(name) + " byte " + std::to_string(at));
    }
  }
}

TEST_F(io_malformed, random_header_damage_never_crashes) {
  const auto v = random_volume<std::int16_t>(extent3{5, 4, 3}, 4);
  std::mt19937 rng(12345);
  std::vector<std::string> names = {"h.nrrd", "h.mha"};
  if (io::tiff_supported()) names.push_back("h.tif");
  for (const std::string& name : names) {
    io::write(path(name), v);
    const std::string full = slurp(path(name));
    const std::size_t header = name == "h.tif"
                                   ? full.size()
                                   : static_cast<std::size_t>(io::probe(path(name)).header_bytes);
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = full;
      const int flips = 1 + trial % 3;
      for (int k = 0; k < flips; ++k) {
        const std::size_t at = std::uniform_int_distribution<std::size_t>(0, header - 1)(rng);
        bad[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
      }
      spit(path("damaged"), bad);
      try {
        io::volume_info info;
        io::any_host_volume a = io::read_any(path("damaged"), &info);
        EXPECT_EQ(io::extent_of(a), info.extent);
      } catch (const io::io_error&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << " trial " << trial << ": not an io_error: " << e.what();
      }
    }
  }
}

TEST_F(io_malformed, wrong_type_missing_and_odd_files) {
  io::write(path("i16.nrrd"), random_volume<std::int16_t>(extent3{3, 3, 3}, 5));
  expect_read_fails<float>(path("i16.nrrd"), "holds int16 voxels, not float32", "wrong type");
  expect_read_fails(path("absent.nrrd"), "absent.nrrd", "missing file");
  fs::create_directories(path("dir.nrrd"));
  expect_read_fails(path("dir.nrrd"), "dir.nrrd", "a directory");
  // A detached header whose data file is a directory.
  fs::create_directories(path("vox.raw"));
  spit(path("h.nhdr"),
       "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n"
       "data file: vox.raw\n");
  expect_read_fails(path("h.nhdr"), "vox.raw", "data file is a directory");
  // Header claims far more than the compressed bytes could hold: refused before allocating.
  spit(path("bomb.nrrd"),
       "NRRD0004\ntype: double\ndimension: 3\nsizes: 100000 100000 100000\nendian: little\n"
       "encoding: gzip\n\n\x1f\x8b");
  expect_read_fails(path("bomb.nrrd"), "bomb.nrrd", "implausible gzip size");
  spit(path("huge.mha"),
       "NDims = 3\nDimSize = 4000000000 4000000000 4000000000\nElementType = MET_UCHAR\n"
       "ElementDataFile = LOCAL\n");
  expect_read_fails(path("huge.mha"), "huge.mha", "overflowing extent");
  // Extra voxels in a compressed stream are refused too: the header disagrees with the data.
  const auto v = random_volume<std::uint8_t>(extent3{4, 4, 2}, 6);
  io::write_options o;
  o.enc = io::encoding::gzip;
  io::write(path("g.nrrd"), v, o);
  std::string g = slurp(path("g.nrrd"));
  const std::size_t s = g.find("sizes: 4 4 2");
  ASSERT_NE(s, std::string::npos);
  g.replace(s, 12, "sizes: 4 4 1");
  spit(path("g.nrrd"), g);
  expect_read_fails<std::uint8_t>(path("g.nrrd"), "g.nrrd", "more data than declared");
  // Raw reads that the file cannot satisfy.
  spit(path("short.raw"), std::string(10, 'x'));
  vox::host_volume<float> r;
  EXPECT_THROW((void)io::read_raw(path("short.raw"),
                                  io::raw_layout{extent3{2, 2, 1}, vox::dtype::float32}, r),
               io::io_error);
  EXPECT_THROW(
      (void)io::read_raw(
          path("short.raw"),
          io::raw_layout{extent3{2, 1, 1}, vox::dtype::float32, io::native_byte_order, 3}, r),
      io::io_error);
  EXPECT_THROW(
      (void)io::read_raw(path("short.raw"), io::raw_layout{extent3{2, 1, 1}, vox::dtype::uint8}, r),
      io::io_error);  // type mismatch
  EXPECT_TRUE(r.empty());
}

}  // namespace
