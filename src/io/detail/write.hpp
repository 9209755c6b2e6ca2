// Private to io: what vox::io::write and the slab-by-slab writer (streamed_file.cpp) share: where
// a write goes, the header it gets and how a header file is written. Implemented in
// src/io/write.cpp.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

/// Where write() puts a volume: the format, and whether header and voxels are separate files.
struct write_target {
  file_format format{file_format::raw};
  bool detached{false};
};

/// The format (from the options or the extension) and layout of a write to `path`, with the
/// options checked. Throws vox::invalid_argument.
[[nodiscard]] write_target target_of(const std::filesystem::path& path, const extent3& e,
                                     const write_options& o, const char* op);

/// What the header of a written volume says.
[[nodiscard]] volume_info written_info(const extent3& e, dtype t, const write_options& o,
                                       file_format f);

/// The name of the data file of a detached header at `header`: <stem>.raw, <stem>.raw.gz (gzip
/// NRRD) or <stem>.zraw (compressed MetaImage).
[[nodiscard]] std::string detached_name(const std::filesystem::path& header, file_format f,
                                        encoding enc);

/// Writes `header` then `body` to the existing file `path` (a temporary). Throws io_error.
void write_bytes(const std::filesystem::path& path, std::string_view header,
                 const std::vector<unsigned char>& body, const char* op);

}  // namespace vox::io::detail
