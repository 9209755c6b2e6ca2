// Headers written by other tools: every NRRD type alias and field spelling voxstream accepts,
// MetaImage key aliases, skips, CRLF line ends, detached data in other directories.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/io/format.hpp>

#include "../../src/io/detail/header.hpp"
#include "../../src/io/detail/metaimage.hpp"
#include "../../src/io/detail/nrrd.hpp"
#include "io_test_util.hpp"

namespace {

using namespace vox_io_test;
using vox::extent3;
using vox::vec3d;
namespace io = vox::io;
namespace d = vox::io::detail;

class io_headers : public temp_dir_test {};

TEST(io_nrrd_parse, type_aliases) {
  const std::pair<const char*, vox::dtype> aliases[] = {{"uchar", vox::dtype::uint8},
                                                        {"unsigned char", vox::dtype::uint8},
                                                        {"uint8", vox::dtype::uint8},
                                                        {"uint8_t", vox::dtype::uint8},
                                                        {"ushort", vox::dtype::uint16},
                                                        {"unsigned short", vox::dtype::uint16},
                                                        {"unsigned short int", vox::dtype::uint16},
                                                        {"uint16", vox::dtype::uint16},
                                                        {"uint16_t", vox::dtype::uint16},
                                                        {"short", vox::dtype::int16},
                                                        {"short int", vox::dtype::int16},
                                                        {"signed short", vox::dtype::int16},
                                                        {"signed short int", vox::dtype::int16},
                                                        {"int16", vox::dtype::int16},
                                                        {"int16_t", vox::dtype::int16},
                                                        {"int", vox::dtype::int32},
                                                        {"signed int", vox::dtype::int32},
                                                        {"int32", vox::dtype::int32},
                                                        {"int32_t", vox::dtype::int32},
                                                        {"float", vox::dtype::float32},
                                                        {"double", vox::dtype::float64},
                                                        {"Unsigned  Char", vox::dtype::uint8}};
  for (const auto& [name, t] : aliases) {
    const std::string h = std::string("NRRD0001\ntype: ") + name +
                          "\ndimension: 1\nsizes: 4\nendian: big\nencoding: raw\n\n";
    EXPECT_EQ(d::parse_nrrd_header(h).info.type, t) << name;
  }
  for (const char* bad : {"int8", "signed char", "uint32", "int64", "ulonglong", "block", "quad"}) {
    const std::string h = std::string("NRRD0001\ntype: ") + bad +
                          "\ndimension: 1\nsizes: 4\nendian: big\nencoding: raw\n\n";
    EXPECT_THROW((void)d::parse_nrrd_header(h), io::io_error) << bad;
  }
}

TEST(io_nrrd_parse, fields_spacing_origin) {
  const std::string h =
      "NRRD0005\r\n"
      "# a comment\r\n"
      "content: test\r\n"
      "type: short\r\n"
      "dimension: 3\r\n"
      "space: left-posterior-superior\r\n"
      "sizes: 4 3 2\r\n"
      "space directions: (0,2,0) (3,0,0) (0,0,-0.5)\r\n"
      "kinds: domain domain domain\r\n"
      "endian: big\r\n"
      "encoding: gz\r\n"
      "space origin: (1.5, -2, 3e2)\r\n"
      "byteskip: 7\r\n"
      "lineskip: 2\r\n"
      "datafile: ./sub dir/data.raw.gz\r\n"
      "my key:=a value: with colons\r\n"
      "\r\n";
  const d::parsed_header ph = d::parse_nrrd_header(h);
  EXPECT_EQ(ph.info.extent, (extent3{4, 3, 2}));
  EXPECT_EQ(ph.info.type, vox::dtype::int16);
  EXPECT_EQ(ph.info.spacing, (vec3d{2, 3, 0.5}));
  EXPECT_EQ(ph.info.origin, (vec3d{1.5, -2, 300}));
  EXPECT_EQ(ph.info.order, io::byte_order::big);
  EXPECT_EQ(ph.info.enc, io::encoding::gzip);
  EXPECT_EQ(ph.byte_skip, 7u);
  EXPECT_EQ(ph.line_skip, 2u);
  EXPECT_EQ(ph.data_file, "./sub dir/data.raw.gz");
  EXPECT_EQ(ph.header_bytes, h.size());

  const std::string s =
      "NRRD0002\ntype: float\ndimension: 2\nsizes: 5 6\nspacings: 0.25 nan\nendian: little\n"
      "encoding: raw\nbyte skip: -1\n\n";
  const d::parsed_header ps = d::parse_nrrd_header(s);
  EXPECT_EQ(ps.info.extent, (extent3{5, 6, 1}));
  EXPECT_EQ(ps.info.dimension, 2u);
  EXPECT_EQ(ps.info.spacing, (vec3d{0.25, 1, 1}));
  EXPECT_TRUE(ps.data_at_end);
}

TEST(io_nrrd_parse, malformed_headers_throw_io_error) {
  const std::string ok =
      "NRRD0004\ntype: float\ndimension: 3\nsizes: 2 2 2\nendian: little\nencoding: raw\n\n";
  EXPECT_NO_THROW((void)d::parse_nrrd_header(ok));
  const char* bad[] = {
      "",
      "NRRD",
      "NRRD0009\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n\n",
      "nrrd0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n\n",
      // missing fields
      "NRRD0004\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\nsizes: 2\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nencoding: raw\n\n",
      // bad values
      "NRRD0004\ntype: float\ndimension: 4\nsizes: 2 2 2 2\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 0\nsizes: \nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 2\nsizes: 2\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 0\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: -3\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2x\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 3\nsizes: 4294967296 4294967296 4294967296\n"
      "endian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: middle\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: bzip2\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: ascii\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: zip\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspacings: 0\nendian: little\n"
      "encoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspacings: 1 2\nendian: little\n"
      "encoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace directions: (1,0,0)\n"
      "endian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace dimension: 3\n"
      "space directions: (1,0)\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace dimension: 3\n"
      "space directions: (0,0,0)\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace dimension: 3\n"
      "space directions: (1,0,0\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace dimension: 3\n"
      "space directions: (1,0,0) (1,0,0)\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace dimension: 3\n"
      "space origin: (1,nan,0)\nendian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace: martian\nendian: little\n"
      "encoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nspace: RAS\nspace dimension: 2\n"
      "endian: little\nencoding: raw\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: gzip\n"
      "byte skip: -1\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n"
      "byte skip: -2\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n"
      "data file: LIST\n\n",
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n"
      "data file: slice%03d.raw 0 9 1\n\n",
      // structure
      "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n",
      "NRRD0004\ntype: float\ntype: float\ndimension: 1\nsizes: 2\nendian: little\n"
      "encoding: raw\n\n",
      "NRRD0004\ntype float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n\n",
      "NRRD0004\n: x\ntype: float\ndimension: 1\nsizes: 2\nendian: little\nencoding: raw\n\n",
  };
  for (const char* h : bad) {
    try {
      (void)d::parse_nrrd_header(h, "hdr.nrrd");
      ADD_FAILURE() << "accepted:\n" << h;
    } catch (const io::io_error& e) {
      EXPECT_NE(std::string(e.what()).find("'hdr.nrrd'"), std::string::npos) << e.what();
      EXPECT_EQ(e.path(), "hdr.nrrd");
    }
  }
}

TEST(io_metaimage_parse, keys_and_aliases) {
  const std::string h =
      "ObjectType = Image\r\n"
      "NDims = 2\r\n"
      "DimSize = 7 3\r\n"
      "ElementSize = 0.5 0.25\r\n"
      "Position = 1 -1\r\n"
      "ElementByteOrderMSB = true\r\n"
      "BinaryData = True\r\n"
      "AnatomicalOrientation = RAI\r\n"
      "ElementNumberOfChannels = 1\r\n"
      "HeaderSize = -1\r\n"
      "ElementType = MET_USHORT\r\n"
      "ElementDataFile = image.raw\r\n"
      "trailing = ignored\r\n";
  const d::parsed_header ph = d::parse_metaimage_header(h);
  EXPECT_EQ(ph.info.extent, (extent3{7, 3, 1}));
  EXPECT_EQ(ph.info.type, vox::dtype::uint16);
  EXPECT_EQ(ph.info.spacing, (vec3d{0.5, 0.25, 1}));
  EXPECT_EQ(ph.info.origin, (vec3d{1, -1, 0}));
  EXPECT_EQ(ph.info.order, io::byte_order::big);
  EXPECT_TRUE(ph.data_at_end);
  EXPECT_EQ(ph.data_file, "image.raw");
  EXPECT_EQ(ph.header_bytes, h.find("trailing"));

  const std::pair<const char*, vox::dtype> types[] = {
      {"MET_UCHAR", vox::dtype::uint8},   {"MET_USHORT", vox::dtype::uint16},
      {"MET_SHORT", vox::dtype::int16},   {"MET_INT", vox::dtype::int32},
      {"MET_FLOAT", vox::dtype::float32}, {"MET_DOUBLE", vox::dtype::float64}};
  for (const auto& [name, t] : types) {
    const std::string m = std::string("NDims = 1\nDimSize = 3\nElementType = ") + name +
                          "\nElementDataFile = LOCAL\n";
    EXPECT_EQ(d::parse_metaimage_header(m).info.type, t) << name;
  }
}

TEST(io_metaimage_parse, malformed_headers_throw_io_error) {
  const char* bad[] = {
      "",
      "NDims = 3\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\n",
      "DimSize = 2 2 2\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n",
      "NDims = 3\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementDataFile = LOCAL\n",
      "NDims = 4\nDimSize = 2 2 2 2\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 0 2\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_CHAR\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_UINT\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = float\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nElementSpacing = 1 0 1\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nOffset = 1 2\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nOffset = 1 2 3\nOrigin = 1 2 3\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nBinaryData = False\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nBinaryDataByteOrderMSB = maybe\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nElementNumberOfChannels = 3\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nCompressedData = True\n"
      "HeaderSize = -1\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nElementDataFile = LIST\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nElementDataFile = s%03d.raw 1 9 1\n",
      "ObjectType = Mesh\nNDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\n"
      "ElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize 2 2 2\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n",
      "NDims = 3\nDimSize = 2 2 2\nElementType = MET_FLOAT\nElementDataFile = \n",
  };
  for (const char* h : bad) {
    EXPECT_THROW((void)d::parse_metaimage_header(h, "m.mha"), io::io_error) << h;
  }
}

TEST_F(io_headers, nrrd_written_by_hand_attached_and_detached) {
  const extent3 e{3, 2, 2};
  auto v = random_volume<std::int16_t>(e, 5);
  // Attached, big-endian, with "byte skip" from the end.
  spit(path("a.nrrd"),
       "NRRD0004\ntype: short\ndimension: 3\nsizes: 3 2 2\nspacings: 1.5 2 nan\nendian: big\n"
       "encoding: raw\nbyte skip: -1\n\n" +
           std::string(5, 'x') + voxel_bytes(v, io::byte_order::big));
  vox::host_volume<std::int16_t> r;
  auto info = io::read(path("a.nrrd"), r);
  EXPECT_TRUE(same_voxels(v, r));
  EXPECT_EQ(info.spacing, (vec3d{1.5, 2, 1}));
  EXPECT_FALSE(info.detached);

  // Detached in a subdirectory, with line skip and byte skip before the voxels.
  fs::create_directories(path("data"));
  spit(path("data/v.bin"), "line one\nline two\nXYZ" + voxel_bytes(v, io::byte_order::little));
  spit(path("d.nhdr"),
       "NRRD0004\ntype: int16\ndimension: 3\nsizes: 3 2 2\nendian: little\nencoding: raw\n"
       "line skip: 2\nbyte skip: 3\ndata file: data/v.bin\n");
  info = io::read(path("d.nhdr"), r);
  EXPECT_TRUE(same_voxels(v, r));
  EXPECT_TRUE(info.detached);
  EXPECT_EQ(info.data_file, path("data/v.bin"));
  EXPECT_EQ(info.data_offset, 21u);
}

TEST_F(io_headers, metaimage_header_size_and_missing_data_file) {
  const extent3 e{4, 3, 2};
  auto v = random_volume<float>(e, 9);
  spit(path("v.raw"), std::string(16, '\0') + voxel_bytes(v, io::byte_order::big));
  spit(path("v.mhd"),
       "ObjectType = Image\nNDims = 3\nDimSize = 4 3 2\nElementType = MET_FLOAT\n"
       "BinaryDataByteOrderMSB = True\nHeaderSize = 16\nElementDataFile = v.raw\n");
  vox::host_volume<float> r;
  (void)io::read(path("v.mhd"), r);
  EXPECT_TRUE(same_voxels(v, r));

  spit(path("gone.mhd"),
       "NDims = 3\nDimSize = 4 3 2\nElementType = MET_FLOAT\nElementDataFile = nothere.raw\n");
  try {
    (void)io::read(path("gone.mhd"), r);
    ADD_FAILURE() << "read a header whose data file is missing";
  } catch (const io::io_error& ex) {
    const std::string m = ex.what();
    EXPECT_NE(m.find("gone.mhd"), std::string::npos) << m;
    EXPECT_NE(m.find("nothere.raw"), std::string::npos) << m;
  }
  EXPECT_TRUE(same_voxels(v, r));  // untouched
}

TEST_F(io_headers, probe_recognises_formats_by_content) {
  const auto v = random_volume<std::uint8_t>(extent3{4, 4, 2}, 3);
  io::write_options o;
  o.format = io::file_format::nrrd;
  io::write(path("noext"), v, o);
  EXPECT_EQ(io::probe(path("noext")).format, io::file_format::nrrd);
  o.format = io::file_format::metaimage;
  io::write(path("noext2.dat"), v, o);
  EXPECT_EQ(io::probe(path("noext2.dat")).format, io::file_format::metaimage);
  spit(path("junk.nrrd"), "hello world\n");
  EXPECT_THROW((void)io::probe(path("junk.nrrd")), io::io_error);
  spit(path("empty.nrrd"), "");
  EXPECT_THROW((void)io::probe(path("empty.nrrd")), io::io_error);
  EXPECT_THROW((void)io::probe(path("missing.nrrd")), io::io_error);
  EXPECT_THROW((void)io::probe(dir_), io::io_error);  // a directory
  io::write(path("pic.png"), random_volume<std::uint8_t>(extent3{4, 4, 1}, 1));
  EXPECT_THROW((void)io::probe(path("pic.png")), io::io_error);
}

TEST_F(io_headers, extreme_spacing_and_origin_round_trip) {
  // Squares of these overflow or underflow: norms of "space directions" must not.
  const auto v = random_volume<std::uint8_t>(extent3{3, 2, 2}, 8);
  io::write_options o;
  o.spacing = {1e200, 4.9e-324, 1.7976931348623157e308};
  o.origin = {-1.7976931348623157e308, 4.9e-324, -0.0};
  std::vector<std::string> names = {"x.nrrd", "x.nhdr", "x.mha", "x.mhd"};
  if (io::tiff_supported()) names.push_back("x.tif");
  for (const std::string& name : names) {
    io::write(path(name), v, o);
    vox::host_volume<std::uint8_t> r;
    const io::volume_info info = io::read(path(name), r);
    EXPECT_EQ(info.spacing, o.spacing) << name;
    EXPECT_EQ(info.origin, o.origin) << name;
    EXPECT_TRUE(same_voxels(v, r)) << name;
  }
}

TEST_F(io_headers, tiff_without_libtiff_is_refused_clearly) {
  if (io::tiff_supported()) GTEST_SKIP() << "built with libtiff";
  const auto v = random_volume<std::uint8_t>(extent3{2, 2, 2}, 9);
  try {
    io::write(path("a.tif"), v);
    ADD_FAILURE() << "wrote a TIFF without libtiff";
  } catch (const io::io_error& e) {
    EXPECT_NE(std::string(e.what()).find("without libtiff"), std::string::npos) << e.what();
  }
  spit(path("b.tif"), std::string("II*\0\x08\0\0\0", 8));
  EXPECT_THROW((void)io::probe(path("b.tif")), io::io_error);
  EXPECT_TRUE(listing() == std::vector<std::string>{"b.tif"});
}

TEST(io_format, names_and_extensions) {
  EXPECT_EQ(io::format_from_extension("a/b.NRRD"), io::file_format::nrrd);
  EXPECT_EQ(io::format_from_extension("b.nhdr"), io::file_format::nrrd);
  EXPECT_EQ(io::format_from_extension("b.mhd"), io::file_format::metaimage);
  EXPECT_EQ(io::format_from_extension("b.Tif"), io::file_format::tiff);
  EXPECT_EQ(io::format_from_extension("b.raw"), io::file_format::raw);
  EXPECT_EQ(io::format_from_extension("b.png"), io::file_format::png);
  EXPECT_FALSE(io::format_from_extension("b.vtk").has_value());
  EXPECT_FALSE(io::format_from_extension("nrrd").has_value());
  EXPECT_EQ(vox::dtype_size(vox::dtype::float64), 8u);
  EXPECT_STREQ(vox::dtype_name(vox::dtype::int16), "int16");
  EXPECT_STREQ(io::format_name(io::file_format::metaimage), "metaimage");
  static_assert(vox::dtype_of<float> == vox::dtype::float32);
}

}  // namespace
