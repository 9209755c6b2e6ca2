// Private to io: volume files read and written slab by slab, for vox::stream_process
// (file_source, file_sink). Implemented in src/io/streamed_file.cpp, over the internals that the
// whole-volume readers and writers use too (detail/: temporary files, byte order, zlib streams).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

/// @brief A raw, NRRD or MetaImage file (attached or detached, raw or gzip, either byte order)
///        written in z order: the header of an attached file first, then the voxels as they are
///        appended, into temporary files in the target's directory. commit() renames them over
///        the target (data file first), so the target is either the old file or the complete new
///        one; discard() or destruction without commit() removes the temporaries. Blocks (file
///        I/O). Not thread-safe.
class streamed_file_writer {
 public:
  /// @brief Checks `opt` against `e` (vox::invalid_argument: unknown extension, bad options, TIFF
  ///        or PNG) before touching any file, then creates the temporary data file and writes an
  ///        attached header into it. Throws io_error.
  streamed_file_writer(const std::filesystem::path& path, const extent3& e, dtype t,
                       const write_options& opt);
  ~streamed_file_writer();
  streamed_file_writer(const streamed_file_writer&) = delete;
  streamed_file_writer& operator=(const streamed_file_writer&) = delete;

  /// @brief Appends `bytes` of native-order voxels (whole voxels). Throws io_error, and
  ///        vox::invalid_argument past the volume's end or after commit() / discard().
  void append(const void* data, std::size_t bytes);
  /// @brief Ends the compressed stream, writes a detached header, makes the files durable and
  ///        renames them into place. Throws vox::invalid_argument unless every voxel was
  ///        appended, io_error (the temporaries are then removed).
  void commit();
  /// @brief Removes the temporary files now; later calls throw.
  void discard() noexcept;
  /// @brief Voxel bytes still to append.
  [[nodiscard]] std::uint64_t remaining() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// @brief Reads slabs of the volume that `info` describes, keeping a gzip stream open from one
///        call to the next: slabs requested in increasing z are decoded once in all (read_voxels
///        starts every call from the beginning of the stream). A request before the position
///        reached restarts the stream. Other encodings go to read_voxels. Blocks (file I/O).
///        Not thread-safe.
class sequential_voxel_reader {
 public:
  explicit sequential_voxel_reader(volume_info info);
  ~sequential_voxel_reader();
  sequential_voxel_reader(const sequential_voxel_reader&) = delete;
  sequential_voxel_reader& operator=(const sequential_voxel_reader&) = delete;

  /// @brief As read_voxels(info, z0, nz, dst, dst_bytes). Throws io_error, vox::invalid_argument.
  void read(std::size_t z0, std::size_t nz, void* dst, std::size_t dst_bytes);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace vox::io::detail
