// The fuzzers' seed corpus and the regressions they are meant to catch (fuzz/corpus/*/regress_*),
// replayed through the same checks as the fuzz targets (see fuzz/README.md): each input is either
// refused with vox::io::io_error, or accepted with a header that formats and parses back to the
// same description.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/io/format.hpp>

#include "../../src/io/detail/header.hpp"
#include "../../src/io/detail/metaimage.hpp"
#include "../../src/io/detail/nrrd.hpp"
#include "../../src/io/detail/tiff.hpp"
#include "io_test_util.hpp"

namespace {

using namespace vox_io_test;
namespace io = vox::io;
namespace d = vox::io::detail;

enum class kind { nrrd, metaimage };

void check_header(const std::string& bytes, kind k, const std::string& name) {
  const auto parse = [k](std::string_view text, std::string_view n) {
    return k == kind::nrrd ? d::parse_nrrd_header(text, n) : d::parse_metaimage_header(text, n);
  };
  d::parsed_header ph;
  try {
    ph = parse(bytes, name);
  } catch (const io::io_error&) {
    return;
  }
  const std::string again =
      k == kind::nrrd ? d::format_nrrd_header(ph.info, ph.data_file)
                      : d::format_metaimage_header(ph.info, ph.data_file, ph.info.compressed_bytes);
  d::parsed_header ph2;
  ASSERT_NO_THROW(ph2 = parse(again, "again")) << name << ": formatted header refused:\n" << again;
  EXPECT_EQ(ph2.info.extent, ph.info.extent) << name;
  EXPECT_EQ(ph2.info.type, ph.info.type) << name;
  EXPECT_EQ(ph2.info.spacing, ph.info.spacing) << name;
  EXPECT_EQ(ph2.info.origin, ph.info.origin) << name;
  EXPECT_EQ(ph2.info.enc, ph.info.enc) << name;
  EXPECT_EQ(ph2.data_file, ph.data_file) << name;
  if (!ph.data_file.empty() || ph.info.data_bytes() > (1u << 20)) return;
  try {
    io::volume_info info;
    const std::string_view payload = d::attached_payload(ph, bytes, info, name);
    std::vector<unsigned char> out(info.data_bytes());
    d::decode_payload(info, payload, out.data(), out.size(), name);
  } catch (const io::io_error&) {}
}

std::vector<fs::path> corpus(const std::string& target) {
  const fs::path dir = fs::path(VOX_IO_CORPUS_DIR) / target;
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(io_corpus, nrrd_header) {
  const auto files = corpus("nrrd_header");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) check_header(slurp(f), kind::nrrd, f.filename().string());
}

TEST(io_corpus, metaimage_header) {
  const auto files = corpus("metaimage_header");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) check_header(slurp(f), kind::metaimage, f.filename().string());
}

TEST(io_corpus, tiff) {
#if VOXSTREAM_HAVE_TIFF
  const auto files = corpus("tiff");
  ASSERT_FALSE(files.empty());
  int read = 0;
  for (const auto& f : files) {
    const std::string bytes = slurp(f);
    try {
      const io::volume_info info = d::probe_tiff_memory(bytes, f.filename().string());
      if (info.data_bytes() > (1u << 22)) continue;
      std::vector<unsigned char> out(info.data_bytes());
      d::read_tiff_memory(bytes, info, out.data(), out.size(), f.filename().string());
      ++read;
    } catch (const io::io_error&) {}
  }
  EXPECT_GT(read, 0);  // the seeds themselves are valid stacks
#else
  GTEST_SKIP() << "built without libtiff";
#endif
}

}  // namespace
