// vox::io::probe and raw_info: what a file holds, from its header (or the caller's layout), and
// where its voxels are.
#include <voxstream/io/format.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "detail/byte_stream.hpp"
#include "detail/fail.hpp"
#include "detail/header.hpp"
#include "detail/metaimage.hpp"
#include "detail/nrrd.hpp"
#include "detail/text.hpp"
#include "detail/tiff.hpp"

namespace vox::io {

namespace fs = std::filesystem;

namespace {

using detail::fd_file;

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const char* op,
                          const std::string& path) {
  if (a > std::numeric_limits<std::uint64_t>::max() - b)
    VOX_IO_FAIL(op, path, "data offset overflows 64 bits");
  return a + b;
}

// Deflate expands at most ~1032:1; a header that claims more than that from the bytes at hand
// describes a truncated (or hostile) file, which is refused before any allocation.
constexpr std::uint64_t max_inflate_ratio = 1040;

/// Turns a parsed header into a complete volume_info: finds the data file, applies the skips and
/// checks that the data can be there.
volume_info resolve(const detail::parsed_header& ph, const fs::path& header, const char* op) {
  volume_info info = ph.info;
  info.header_file = header;
  info.header_bytes = ph.header_bytes;
  std::uint64_t base = 0;
  if (ph.data_file.empty()) {
    info.data_file = header;
    info.detached = false;
    base = ph.header_bytes;
  } else {
    const fs::path df(ph.data_file);
    info.data_file = df.is_absolute() ? df : header.parent_path() / df;
    info.detached = true;
  }
  const std::string hp = header.string();
  const std::string dp = info.data_file.string();
  std::unique_ptr<fd_file> f;
  try {
    f = std::make_unique<fd_file>(info.data_file, O_RDONLY, op);
  } catch (const io_error& e) {
    if (!info.detached) throw;
    VOX_IO_FAIL(op, hp, std::string("its data file cannot be read: ") + e.what());
  }
  const std::uint64_t size = f->size(op);
  if (base > size) VOX_IO_FAIL(op, dp, "file shorter than its header");
  if (ph.line_skip > 0) {
    std::uint64_t lines = ph.line_skip;
    std::vector<char> buf(1 << 16);
    while (lines > 0) {
      const std::size_t r = f->pread_some(buf.data(), buf.size(), base, op);
      if (r == 0) VOX_IO_FAIL(op, dp, "voxel data truncated: the file ends within 'line skip'");
      std::size_t i = 0;
      for (; i < r && lines > 0; ++i)
        if (buf[i] == '\n') --lines;
      base += i;
    }
  }
  const std::uint64_t bytes = info.data_bytes();
  if (info.enc == encoding::raw) {
    if (ph.data_at_end) {
      if (size < bytes || size - bytes < base)
        VOX_IO_FAIL(op, dp,
                    "voxel data truncated: the header declares " + std::to_string(bytes) +
                        " bytes of voxels, the file has " +
                        std::to_string(size > base ? size - base : 0) + " after the header");
      info.data_offset = size - bytes;
    } else {
      info.data_offset = checked_add(base, ph.byte_skip, op, dp);
      if (checked_add(info.data_offset, bytes, op, dp) > size)
        VOX_IO_FAIL(op, dp,
                    "voxel data truncated: the header declares " + std::to_string(bytes) +
                        " bytes of voxels at offset " + std::to_string(info.data_offset) +
                        ", the file has " + std::to_string(size) + " bytes");
    }
  } else {
    info.data_offset = base;
    info.decoded_skip = ph.byte_skip;
    const std::uint64_t avail = size - base;
    if (info.compressed_bytes > avail)
      VOX_IO_FAIL(op, dp,
                  "compressed data truncated: the header declares " +
                      std::to_string(info.compressed_bytes) + " bytes, the file has " +
                      std::to_string(avail));
    if (info.compressed_bytes == 0) info.compressed_bytes = avail;
    const std::uint64_t need = checked_add(bytes, info.decoded_skip, op, dp);
    if (info.compressed_bytes == 0 || need / max_inflate_ratio > info.compressed_bytes)
      VOX_IO_FAIL(op, dp,
                  "compressed data truncated: " + std::to_string(info.compressed_bytes) +
                      " compressed bytes cannot hold the " + std::to_string(need) +
                      " bytes the header declares");
  }
  return info;
}

constexpr std::size_t max_header_bytes = std::size_t{1} << 20;

bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

bool looks_like_metaimage(std::string_view text) {
  // First non-blank line of the form "Key = Value" with a MetaImage-ish key.
  std::size_t i = 0;
  while (i < text.size() && (text[i] == '\n' || text[i] == '\r' || text[i] == ' ')) ++i;
  const std::size_t e = text.find('\n', i);
  const std::string_view line =
      text.substr(i, e == std::string_view::npos ? text.size() - i : e - i);
  const std::size_t eq = line.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  const std::string_view key = detail::trim(line.substr(0, eq));
  for (char c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return !key.empty();
}

}  // namespace

volume_info probe(const fs::path& path) {
  constexpr const char* op = "io::probe";
  const std::string p = path.string();
  std::string text;
  {
    fd_file f(path, O_RDONLY, op);
    const std::uint64_t size = f.size(op);
    text.resize(static_cast<std::size_t>(std::min<std::uint64_t>(size, max_header_bytes)));
    text.resize(f.pread_some(text.data(), text.size(), 0, op));
  }
  if (text.empty()) VOX_IO_FAIL(op, p, "empty file");
  const std::string_view t(text);
  if (starts_with(t, "NRRD")) return resolve(detail::parse_nrrd_header(t, p), path, op);
  const bool tiff =
      t.size() >= 4 && ((t[0] == 'I' && t[1] == 'I' && (t[2] == 42 || t[2] == 43) && t[3] == 0) ||
                        (t[0] == 'M' && t[1] == 'M' && t[2] == 0 && (t[3] == 42 || t[3] == 43)));
  if (tiff) {
#if VOXSTREAM_HAVE_TIFF
    return detail::probe_tiff(path);
#else
    VOX_IO_FAIL(op, p, "a TIFF file, but this voxstream was built without libtiff");
#endif
  }
  if (starts_with(t, "\x89PNG"))
    VOX_IO_FAIL(op, p, "PNG is an export format here: read it with vox::io::read_png");
  if (looks_like_metaimage(t)) return resolve(detail::parse_metaimage_header(t, p), path, op);
  VOX_IO_FAIL(op, p,
              "unrecognised format (not NRRD, MetaImage or TIFF; headerless raw files need "
              "read_raw with their layout)");
}

volume_info raw_info(const fs::path& path, const raw_layout& layout) {
  constexpr const char* op = "io::raw_info";
  checked_voxels(layout.extent, dtype_size(layout.type), op);
  detail::parsed_header ph;
  ph.info.format = file_format::raw;
  ph.info.extent = layout.extent;
  ph.info.type = layout.type;
  ph.info.order = layout.order;
  ph.info.enc = encoding::raw;
  ph.info.dimension = 3;
  ph.byte_skip = layout.offset;
  return resolve(ph, path, op);  // no data file name: the voxels are in `path`, after 0 bytes
}

}  // namespace vox::io
