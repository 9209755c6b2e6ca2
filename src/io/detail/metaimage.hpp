// Private to io (tests and fuzzers use it too): MetaImage headers (ITK's .mha / .mhd), parsed
// from and formatted to memory. Implemented in src/io/metaimage.cpp. Files are read and written
// through vox::io::probe / read / write (format.hpp).
//
// Read: NDims 1..3, DimSize, ElementType MET_UCHAR / MET_USHORT / MET_SHORT / MET_INT /
// MET_FLOAT / MET_DOUBLE, ElementSpacing (or ElementSize), Offset (or Origin, Position),
// BinaryDataByteOrderMSB (or ElementByteOrderMSB), CompressedData (zlib) with an optional
// CompressedDataSize, HeaderSize (-1 too), ElementDataFile LOCAL (.mha) or a file name (.mhd).
// Other keys (TransformMatrix, AnatomicalOrientation, ...) are accepted and ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <voxstream/io/format.hpp>

#include "header.hpp"

namespace vox::io::detail {

/// @brief Parses the MetaImage header at the start of `text`, up to and including the
///        ElementDataFile line (attached voxels follow it). Pure: touches no file. Throws
///        io_error naming `name` on any malformed, inconsistent or unsupported header.
[[nodiscard]] parsed_header parse_metaimage_header(std::string_view text,
                                                   std::string_view name = "<memory>");

/// @brief The header text for `info`. `data_file` empty: "ElementDataFile = LOCAL". A nonzero
///        `compressed_bytes` is written as CompressedDataSize.
[[nodiscard]] std::string format_metaimage_header(const volume_info& info,
                                                  std::string_view data_file,
                                                  std::uint64_t compressed_bytes);

}  // namespace vox::io::detail
