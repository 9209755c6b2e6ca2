/// @file format.hpp
/// @brief Volume files: probe, read and write raw, NRRD, MetaImage and TIFF stacks into and from
///        pinned host volumes. Every function here does file I/O and blocks the host; none of them
///        enqueues work on a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <voxstream/core/dtype.hpp>
#include <voxstream/core/error.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/io/host_volume.hpp>

namespace vox {

namespace io {

/// @brief A file could not be read or written: missing, malformed, truncated, unsupported, or an
///        OS error. The message names the file and the problem; path() is the file.
class io_error : public vox::error {
 public:
  io_error(const std::string& what, std::string path) : error(what), path_(std::move(path)) {}
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

enum class file_format : std::uint8_t { raw, nrrd, metaimage, tiff, png };
enum class byte_order : std::uint8_t { little, big };
/// @brief How the voxels are stored: as is, zlib/gzip-compressed (NRRD gzip, MetaImage
///        CompressedData, TIFF deflate), or compressed another way (TIFF LZW, PackBits, ...).
enum class encoding : std::uint8_t { raw, gzip, other };

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
inline constexpr byte_order native_byte_order = byte_order::big;
#else
inline constexpr byte_order native_byte_order = byte_order::little;
#endif

/// @brief "raw", "nrrd", "metaimage", "tiff" or "png".
[[nodiscard]] const char* format_name(file_format f) noexcept;
/// @brief The format that a file name's extension stands for: .raw/.bin/.dat, .nrrd/.nhdr,
///        .mha/.mhd, .tif/.tiff, .png (case-insensitive). Empty when there is none.
[[nodiscard]] std::optional<file_format> format_from_extension(const std::filesystem::path& p);
/// @brief Whether this build reads and writes TIFF stacks (libtiff was found at configure time).
[[nodiscard]] bool tiff_supported() noexcept;

/// @brief What a file holds, as found by probe(): enough to read it, or to map its voxels.
struct volume_info {
  file_format format{file_format::raw};
  extent3 extent{};  ///< voxels along x, y, z (1 for axes the file lacks)
  dtype type{dtype::uint8};
  unsigned dimension{3};                ///< axes in the file (1, 2 or 3)
  vec3d spacing{1.0, 1.0, 1.0};         ///< physical size of a voxel
  vec3d origin{0.0, 0.0, 0.0};          ///< physical position of voxel (0,0,0)
  byte_order order{native_byte_order};  ///< of the voxels in the file
  encoding enc{encoding::raw};
  bool detached{false};               ///< header and voxels in different files (.nhdr, .mhd)
  std::filesystem::path header_file;  ///< the probed file
  std::filesystem::path data_file;    ///< the file that holds the voxels
  std::uint64_t header_bytes{0};      ///< size of the header text in header_file
  /// @brief Byte offset in data_file of the voxels (raw encoding) or of the compressed stream.
  std::uint64_t data_offset{0};
  /// @brief Bytes of the data file given to the compressed stream (0: to the end of the file).
  std::uint64_t compressed_bytes{0};
  /// @brief Decompressed bytes to skip before the voxels (NRRD "byte skip" with gzip).
  std::uint64_t decoded_skip{0};

  /// @brief Bytes of voxel data (extent voxels times dtype size).
  [[nodiscard]] std::uint64_t data_bytes() const noexcept {
    return static_cast<std::uint64_t>(extent.voxels()) * dtype_size(type);
  }
};

/// @brief How write() stores a volume. Defaults: format from the file name's extension, unit
///        spacing, zero origin, uncompressed, native byte order.
struct write_options {
  std::optional<file_format> format;    ///< empty: from the extension (.nhdr/.mhd mean detached)
  vec3d spacing{1.0, 1.0, 1.0};         ///< every component finite and > 0
  vec3d origin{0.0, 0.0, 0.0};          ///< every component finite
  encoding enc{encoding::raw};          ///< raw or gzip (not for raw files or PNG)
  byte_order order{native_byte_order};  ///< ignored by PNG (always big-endian)
  /// @brief Header and voxels in separate files. Implied by .nhdr and .mhd; the data file is
  ///        next to the header, named <stem>.raw (<stem>.raw.gz for gzip NRRD, .zraw for
  ///        compressed MetaImage).
  bool detached{false};
  int compression_level{6};  ///< zlib level 1..9 for gzip

  /// @brief Options that keep what `info` describes: spacing, origin, byte order and encoding
  ///        (encoding::other becomes gzip). The format and the header layout still come from
  ///        the file name, so that like() also serves conversions (.nhdr to .mha, ...).
  [[nodiscard]] static write_options like(const volume_info& info);
};

/// @brief Layout of a headerless raw file: the caller says what it holds.
struct raw_layout {
  extent3 extent{};
  dtype type{dtype::uint8};
  byte_order order{native_byte_order};
  std::uint64_t offset{0};  ///< bytes to skip at the start of the file
};

/// @brief Reads a file's header and says what it holds; blocks (file I/O). The format is
///        recognised by content (NRRD magic, MetaImage keys, TIFF magic), not by extension.
///        Raw files have no header: use raw_info(). Throws io_error.
[[nodiscard]] volume_info probe(const std::filesystem::path& path);

/// @brief The volume_info of a raw file laid out as `layout`; checks that the file is large
///        enough. Throws io_error (missing or short file), vox::invalid_argument (empty extent).
[[nodiscard]] volume_info raw_info(const std::filesystem::path& path, const raw_layout& layout);

/// @brief Reads the volume in `path` into `out`; blocks. The file's voxel type must be T and its
///        extent non-empty. The voxels are read into a new pinned volume of the file's extent
///        (allocating pinned memory synchronises the device on the cuda backend), which then
///        replaces `out`; on any error `out` is untouched. Returns the file's info (spacing,
///        origin, layout). Throws io_error (file problems, including a voxel type other than T),
///        vox::out_of_memory.
template <class T>
volume_info read(const std::filesystem::path& path, host_volume<T>& out);

/// @brief Reads a headerless raw file laid out as `layout` (layout.type must be T); blocks. Same
///        guarantees as read().
template <class T>
volume_info read_raw(const std::filesystem::path& path, const raw_layout& layout,
                     host_volume<T>& out);

/// @brief Writes `v` to `path`; blocks: first waits for transfers that touch `v`
///        (v.synchronize()), then writes. Atomic: the file is written under a temporary name in
///        the same directory and renamed over `path`, so `path` is either the old file or the
///        complete new one. A detached header and its data file are both written before either
///        is renamed (data file first), so a failed write leaves the old pair as it was. A .png
///        path (or format png) exports a 2D volume (z == 1) with png_options{} (see png.hpp).
///        Throws vox::invalid_argument (empty volume, bad options, unknown extension) before
///        touching any file, io_error on I/O failure.
template <class T>
void write(const std::filesystem::path& path, const host_volume<T>& v,
           const write_options& opt = {});

/// @brief Low level: reads slices [z0, z0 + nz) of the volume that `info` describes into `dst`
///        (dst_bytes must equal nz slices of voxels), in native byte order; blocks. On error the
///        contents of dst are unspecified. Throws io_error, vox::invalid_argument.
void read_voxels(const volume_info& info, std::size_t z0, std::size_t nz, void* dst,
                 std::size_t dst_bytes);

/// @brief A host volume of any of the six voxel types; index() == static_cast<size_t>(dtype).
using any_host_volume =
    std::variant<host_volume<std::uint8_t>, host_volume<std::uint16_t>, host_volume<std::int16_t>,
                 host_volume<std::int32_t>, host_volume<float>, host_volume<double>>;

/// @brief The voxel type held by `v`.
[[nodiscard]] inline dtype type_of(const any_host_volume& v) noexcept {
  return static_cast<dtype>(v.index());
}
/// @brief The extent of the volume held by `v`.
[[nodiscard]] extent3 extent_of(const any_host_volume& v) noexcept;

/// @brief Reads the volume in `path`, whatever its voxel type; blocks. Throws io_error. When
///        `info` is given it receives the file's info.
[[nodiscard]] any_host_volume read_any(const std::filesystem::path& path,
                                       volume_info* info = nullptr);
/// @brief write() for whichever volume `v` holds; blocks.
void write_any(const std::filesystem::path& path, const any_host_volume& v,
               const write_options& opt = {});

}  // namespace io
}  // namespace vox

