// Private to io (tests and fuzzers use it too): a volume file's header parsed from memory
// (detail/nrrd.hpp, detail/metaimage.hpp), and its attached voxels decoded from memory.
// parsed_header is resolved against the files by probe.cpp; attached_payload and decode_payload
// are implemented in read.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

/// @brief A header parsed from memory, before its data file is looked at.
struct parsed_header {
  volume_info info;             ///< header_file and data_file empty; offsets not yet resolved
  std::string data_file;        ///< as written in the header; empty when the voxels are attached
  std::size_t header_bytes{0};  ///< where attached voxels begin in the text
  std::uint64_t line_skip{0};   ///< NRRD "line skip": lines to skip in the data file first
  std::uint64_t byte_skip{0};   ///< bytes to skip: in the file (raw), decompressed (gzip)
  bool data_at_end{false};      ///< the voxels are the last data_bytes() bytes of the data file
};

/// @brief For a header parsed from the in-memory file `file` with attached voxels (no data file):
///        fills `info` as probe() would (offsets, skips) and returns the bytes that hold the
///        voxels (or the compressed stream). Throws io_error naming `name` when the voxels
///        cannot be there (truncated). For the fuzzers and tests.
[[nodiscard]] std::string_view attached_payload(const parsed_header& ph, std::string_view file,
                                                volume_info& info, std::string_view name);

/// @brief Decodes the voxels of an attached header from memory: `payload` starts at
///        info.data_offset of the file. Fills `dst` (dst_bytes == info.data_bytes()) in native
///        byte order. For the fuzzers and tests. Throws io_error naming `name`.
void decode_payload(const volume_info& info, std::string_view payload, void* dst,
                    std::size_t dst_bytes, std::string_view name);

}  // namespace vox::io::detail
