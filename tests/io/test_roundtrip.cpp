// Round trips: every voxel type through every format, encoding, byte order and header layout,
// with spacing and origin preserved.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/io/format.hpp>

#include "io_test_util.hpp"

namespace {

using namespace vox_io_test;
using vox::extent3;
using vox::vec3d;
namespace io = vox::io;

template <class T>
class io_roundtrip : public temp_dir_test {};
TYPED_TEST_SUITE(io_roundtrip, voxel_types);

struct layout_case {
  const char* file;  // name (its extension picks the format and the header layout)
  io::encoding enc;
  io::byte_order order;
};

std::string describe(const layout_case& c) {
  return std::string(c.file) + (c.enc == io::encoding::gzip ? " gzip" : " raw") +
         (c.order == io::byte_order::big ? " big" : " little");
}

template <class T>
void round_trip(const temp_dir_test& t, const layout_case& c, extent3 e, std::uint64_t seed) {
  SCOPED_TRACE(describe(c) + " " + e.str());
  const auto v = random_volume<T>(e, seed);
  io::write_options o;
  o.enc = c.enc;
  o.order = c.order;
  o.spacing = {0.7, 1.25, 3.0000000000000004};
  o.origin = {-12.5, 0.1, 1e-300};
  const auto p = t.path(c.file);
  io::write(p, v, o);

  const io::volume_info info = io::probe(p);
  EXPECT_EQ(info.extent, e);
  EXPECT_EQ(info.type, vox::dtype_of<T>);
  if (sizeof(T) > 1 || info.format == io::file_format::tiff) {
    EXPECT_EQ(info.order, c.order);
  }
  EXPECT_EQ(info.enc, c.enc);
  EXPECT_EQ(info.spacing, o.spacing);
  EXPECT_EQ(info.origin, o.origin);

  vox::host_volume<T> r;
  const io::volume_info info2 = io::read(p, r);
  EXPECT_EQ(info2.spacing, o.spacing);
  EXPECT_TRUE(same_voxels(v, r));

  // write_options::like keeps the layout ...
  const auto p2 = t.path(std::string("again_") + c.file);
  io::write(p2, r, io::write_options::like(info2));
  vox::host_volume<T> r2;
  const io::volume_info info3 = io::read(p2, r2);
  EXPECT_TRUE(same_voxels(v, r2));
  EXPECT_EQ(info3.origin, o.origin);
  EXPECT_EQ(info3.detached, info.detached);

  // ... and conversions: the format comes from the new name.
  const auto p3 = t.path(info.format == io::file_format::metaimage ? "conv.nrrd" : "conv.mha");
  io::write(p3, r, io::write_options::like(info2));
  vox::host_volume<T> r3;
  const io::volume_info info4 = io::read(p3, r3);
  EXPECT_NE(info4.format, info.format);
  EXPECT_FALSE(info4.detached);
  EXPECT_EQ(info4.spacing, o.spacing);
  EXPECT_EQ(info4.enc, c.enc);
  EXPECT_TRUE(same_voxels(v, r3));
}

const std::vector<layout_case>& header_cases() {
  static const std::vector<layout_case> cases = [] {
    std::vector<layout_case> c;
    for (const char* f : {"v.nrrd", "v.nhdr", "v.mha", "v.mhd"})
      for (io::encoding enc : {io::encoding::raw, io::encoding::gzip})
        for (io::byte_order order : {io::byte_order::little, io::byte_order::big})
          c.push_back({f, enc, order});
    return c;
  }();
  return cases;
}

TYPED_TEST(io_roundtrip, nrrd_and_metaimage_every_layout) {
  std::uint64_t seed = 1;
  for (const layout_case& c : header_cases()) {
    round_trip<TypeParam>(*this, c, extent3{13, 7, 5}, seed++);
    for (const auto& name : this->listing()) ASSERT_EQ(name.find(".tmp"), std::string::npos);
  }
}

TYPED_TEST(io_roundtrip, edge_extents) {
  std::uint64_t seed = 100;
  for (extent3 e : {extent3{1, 1, 1}, extent3{17, 1, 1}, extent3{1, 9, 1}, extent3{5, 3, 1},
                    extent3{2, 2, 31}}) {
    for (const char* f : {"e.nrrd", "e.mha", "e.nhdr"})
      round_trip<TypeParam>(*this, {f, io::encoding::gzip, io::byte_order::big}, e, seed++);
    round_trip<TypeParam>(*this, {"e.mhd", io::encoding::raw, io::byte_order::little}, e, seed++);
  }
}

TYPED_TEST(io_roundtrip, raw_both_byte_orders) {
  using T = TypeParam;
  const extent3 e{11, 6, 4};
  const auto v = random_volume<T>(e, 7);
  for (io::byte_order order : {io::byte_order::little, io::byte_order::big}) {
    io::write_options o;
    o.order = order;
    const auto p = this->path("v.raw");
    io::write(p, v, o);
    EXPECT_EQ(slurp(p), voxel_bytes(v, order));
    vox::host_volume<T> r;
    const auto info = io::read_raw(p, io::raw_layout{e, vox::dtype_of<T>, order, 0}, r);
    EXPECT_EQ(info.data_offset, 0u);
    EXPECT_TRUE(same_voxels(v, r));
  }
  // An offset skips a leading header of the caller's.
  const auto p = this->path("skip.bin");
  spit(p, std::string(37, 'h') + voxel_bytes(v, io::byte_order::big));
  vox::host_volume<T> r;
  (void)io::read_raw(p, io::raw_layout{e, vox::dtype_of<T>, io::byte_order::big, 37}, r);
  EXPECT_TRUE(same_voxels(v, r));
}

TYPED_TEST(io_roundtrip, tiff_stacks) {
  if (!io::tiff_supported()) GTEST_SKIP() << "built without libtiff";
  std::uint64_t seed = 200;
  for (extent3 e : {extent3{13, 7, 5}, extent3{300, 301, 2}, extent3{1, 1, 1}})
    for (io::encoding enc : {io::encoding::raw, io::encoding::gzip})
      for (io::byte_order order : {io::byte_order::little, io::byte_order::big})
        round_trip<TypeParam>(*this, {"s.tif", enc, order}, e, seed++);
}

TYPED_TEST(io_roundtrip, any_host_volume) {
  using T = TypeParam;
  const auto v = random_volume<T>(extent3{9, 4, 3}, 11);
  const auto p = this->path("any.nrrd");
  io::write(p, v);
  io::volume_info info;
  io::any_host_volume a = io::read_any(p, &info);
  EXPECT_EQ(io::type_of(a), vox::dtype_of<T>);
  EXPECT_EQ(io::extent_of(a), v.extent());
  EXPECT_EQ(info.type, vox::dtype_of<T>);
  ASSERT_TRUE(std::holds_alternative<vox::host_volume<T>>(a));
  EXPECT_TRUE(same_voxels(v, std::get<vox::host_volume<T>>(a)));
  const auto p2 = this->path("any.mha");
  io::write_any(p2, a);
  vox::host_volume<T> r;
  (void)io::read(p2, r);
  EXPECT_TRUE(same_voxels(v, r));
}

TYPED_TEST(io_roundtrip, read_voxels_slabs) {
  using T = TypeParam;
  const extent3 e{6, 5, 9};
  const auto v = random_volume<T>(e, 21);
  std::vector<std::string> files = {"s.nrrd", "s.nhdr", "s.mha"};
  if (io::tiff_supported()) files.push_back("s.tiff");
  for (const std::string& f : files) {
    for (io::encoding enc : {io::encoding::raw, io::encoding::gzip}) {
      SCOPED_TRACE(f);
      io::write_options o;
      o.enc = enc;
      o.order = io::byte_order::big;
      io::write(this->path(f), v, o);
      const auto info = io::probe(this->path(f));
      for (std::size_t z0 : {0, 1, 4, 8})
        for (std::size_t nz : {1, 2, 5}) {
          if (z0 + nz > e.z) continue;
          std::vector<T> slab(e.slice_voxels() * nz);
          io::read_voxels(info, z0, nz, slab.data(), slab.size() * sizeof(T));
          EXPECT_EQ(0, std::memcmp(slab.data(), v.data() + z0 * e.slice_voxels(),
                                   slab.size() * sizeof(T)))
              << "z0=" << z0 << " nz=" << nz;
        }
      std::vector<T> one(e.slice_voxels());
      EXPECT_THROW(io::read_voxels(info, 8, 2, one.data(), one.size() * sizeof(T)),
                   vox::invalid_argument);
    }
  }
}

}  // namespace
