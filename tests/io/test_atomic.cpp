// Atomic writes: a write that fails part-way leaves the old file (or pair of files) as it was
// and no temporary behind; invalid requests touch no file at all.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/io/format.hpp>
#include <voxstream/io/png.hpp>

#include "../../src/io/detail/test_hooks.hpp"
#include "io_test_util.hpp"

namespace {

using namespace vox_io_test;
using vox::extent3;
namespace io = vox::io;

class io_atomic : public temp_dir_test {
 protected:
  void TearDown() override {
    io::detail::fail_writes_after(std::uint64_t(-1));
    temp_dir_test::TearDown();
  }
};

TEST_F(io_atomic, failure_part_way_keeps_the_old_file) {
  const auto old_v = random_volume<double>(extent3{16, 16, 8}, 1);
  const auto new_v = random_volume<double>(extent3{16, 16, 9}, 2);  // 18 KiB
  for (const char* name : {"a.nrrd", "a.mha", "a.raw", "a.nhdr", "a.mhd"}) {
    for (io::encoding enc : {io::encoding::raw, io::encoding::gzip}) {
      if (std::string(name) == "a.raw" && enc == io::encoding::gzip) continue;
      SCOPED_TRACE(std::string(name) + (enc == io::encoding::gzip ? " gzip" : " raw"));
      io::write_options o;
      o.enc = enc;
      io::write(path(name), old_v, o);
      const std::vector<std::string> files = listing();
      std::vector<std::string> before;
      for (const auto& f : files) before.push_back(slurp(path(f)));
      for (std::uint64_t budget : {0ull, 1ull, 100ull, 1000ull, 8000ull, 12000ull}) {
        io::detail::fail_writes_after(budget);
        EXPECT_THROW(io::write(path(name), new_v, o), io::io_error) << "budget " << budget;
        io::detail::fail_writes_after(std::uint64_t(-1));
        ASSERT_EQ(listing(), files) << "a temporary was left behind (budget " << budget << ")";
        for (std::size_t i = 0; i < files.size(); ++i)
          EXPECT_TRUE(slurp(path(files[i])) == before[i]) << files[i] << " changed";
      }
      if (std::string(name) != "a.raw") {
        vox::host_volume<double> r;
        (void)io::read(path(name), r);
        EXPECT_TRUE(same_voxels(old_v, r));
      }
      io::write(path(name), new_v, o);  // and with no failure the new volume replaces it
      if (std::string(name) != "a.raw") {
        vox::host_volume<double> r;
        (void)io::read(path(name), r);
        EXPECT_TRUE(same_voxels(new_v, r));
      }
      for (const auto& f : listing()) fs::remove(path(f));
    }
  }
}

TEST_F(io_atomic, rename_failure_removes_the_temporary) {
  const auto v = random_volume<std::uint8_t>(extent3{4, 4, 4}, 3);
  fs::create_directories(path("taken.nrrd/inside"));
  EXPECT_THROW(io::write(path("taken.nrrd"), v), io::io_error);
  if (io::tiff_supported()) {
    fs::create_directories(path("taken.tif/inside"));
    EXPECT_THROW(io::write(path("taken.tif"), v), io::io_error);
  }
  fs::create_directories(path("taken.png/inside"));
  EXPECT_THROW(io::write_png(path("taken.png"), v, 0), io::io_error);
  std::vector<std::string> expect = {"taken.nrrd", "taken.png"};
  if (io::tiff_supported()) expect.push_back("taken.tif");
  EXPECT_EQ(listing(), expect);
  EXPECT_TRUE(fs::exists(path("taken.nrrd/inside")));
  // A detached header whose data rename succeeds but whose header rename fails.
  fs::create_directories(path("pair.nhdr/inside"));
  EXPECT_THROW(io::write(path("pair.nhdr"), v), io::io_error);
  for (const auto& f : listing()) EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  EXPECT_THROW(io::write(path("no/such/dir/x.nrrd"), v), io::io_error);
}

TEST_F(io_atomic, invalid_requests_touch_no_file) {
  const auto v = random_volume<float>(extent3{4, 3, 2}, 4);
  io::write_options o;
  o.spacing = {1, 0, 1};
  EXPECT_THROW(io::write(path("a.nrrd"), v, o), vox::invalid_argument);
  o = {};
  o.origin.x = std::numeric_limits<double>::infinity();
  EXPECT_THROW(io::write(path("a.nrrd"), v, o), vox::invalid_argument);
  o = {};
  o.enc = io::encoding::gzip;
  EXPECT_THROW(io::write(path("a.raw"), v, o), vox::invalid_argument);
  o.compression_level = 0;
  EXPECT_THROW(io::write(path("a.nrrd"), v, o), vox::invalid_argument);
  o = {};
  o.enc = io::encoding::other;
  EXPECT_THROW(io::write(path("a.mha"), v, o), vox::invalid_argument);
  EXPECT_THROW(io::write(path("a.vtk"), v), vox::invalid_argument);
  EXPECT_THROW(io::write(path("a.png"), v), vox::invalid_argument);  // z = 2
  EXPECT_THROW(io::write(path("a.nrrd"), vox::host_volume<float>{}), vox::invalid_argument);
  o = {};
  o.detached = true;
  o.format = io::file_format::nrrd;
  EXPECT_THROW(io::write(path("a.raw"), v, o), vox::invalid_argument);  // data would be a.raw
  EXPECT_TRUE(listing().empty());
}

}  // namespace
