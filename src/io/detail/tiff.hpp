// Private to io (tests and fuzzers use it too): TIFF stacks through libtiff, one page per z-slice,
// one sample per pixel, 8/16-bit unsigned, 16/32-bit signed, 32/64-bit float; strips or tiles,
// any compression libtiff decodes. Implemented in src/io/tiff.cpp. Files are read and written
// through vox::io::probe / read / write (format.hpp); vox::io::tiff_supported() says whether this
// build has them. These functions exist only when VOXSTREAM_HAVE_TIFF is 1.
//
// Written: little- or big-endian ("II"/"MM"; BigTIFF above 4 GiB), uncompressed or deflate
// (write_options::enc == gzip), x/y spacing as 1/XResolution and 1/YResolution (no unit), and
// an ImageJ-style ImageDescription ("spacing=" for z, "voxstream_origin=x,y,z") that is read back.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

#include <voxstream/io/format.hpp>

#ifndef VOXSTREAM_HAVE_TIFF
#define VOXSTREAM_HAVE_TIFF 0  // normally defined (0 or 1) by cmake/voxstreamIO.cmake
#endif

#if VOXSTREAM_HAVE_TIFF
namespace vox::io::detail {

/// @brief Reads the directories of a TIFF file; blocks. Throws io_error.
[[nodiscard]] volume_info probe_tiff(const std::filesystem::path& path);
/// @brief Reads pages [z0, z0 + nz) of the TIFF that `info` describes into `dst`; blocks.
void read_tiff(const volume_info& info, std::size_t z0, std::size_t nz, void* dst,
               std::size_t dst_bytes);
/// @brief Writes `info.extent` voxels of type `info.type` from `data` as a TIFF stack at `path`
///        (not atomically: write.cpp passes a temporary path). Throws io_error.
void write_tiff(const std::filesystem::path& path, const void* data, const volume_info& info,
                bool deflate);

/// @brief probe_tiff() on a file held in memory (for the fuzzer).
[[nodiscard]] volume_info probe_tiff_memory(std::string_view bytes, std::string_view name);
/// @brief read_tiff() of every page of a file held in memory (for the fuzzer).
void read_tiff_memory(std::string_view bytes, const volume_info& info, void* dst,
                      std::size_t dst_bytes, std::string_view name);

}  // namespace vox::io::detail
#endif
