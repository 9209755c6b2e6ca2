// Private to io (tests and fuzzers use it too): NRRD headers (teem's "nearly raw raster data"),
// parsed from and formatted to memory. Implemented in src/io/nrrd.cpp. Files are read and written
// through vox::io::probe / read / write (format.hpp).
//
// Read: NRRD0001..NRRD0005, dimension 1..3, every type alias of the six voxel types ("uchar",
// "unsigned char", "uint8", "uint8_t", "short", ...), encodings raw and gzip, endian little and
// big, attached (.nrrd) and detached ("data file", .nhdr) data, "byte skip" (-1 too) and "line
// skip", spacing from "spacings" or the norms of "space directions", origin from "space origin".
// Written: NRRD0004 with "space directions" and "space origin", so that spacing and origin
// round-trip exactly.
#pragma once

#include <string>
#include <string_view>

#include <voxstream/io/format.hpp>

#include "header.hpp"

namespace vox::io::detail {

/// @brief Parses the NRRD header at the start of `text` (which may continue with attached data).
///        Pure: touches no file. Throws io_error naming `name` on any malformed, inconsistent or
///        unsupported header.
[[nodiscard]] parsed_header parse_nrrd_header(std::string_view text,
                                              std::string_view name = "<memory>");

/// @brief The header text for `info` (extent, type, spacing, origin, order, enc), ending with the
///        blank line. `data_file` empty: attached; otherwise written as "data file".
[[nodiscard]] std::string format_nrrd_header(const volume_info& info, std::string_view data_file);

}  // namespace vox::io::detail
