// Private to io: the bytes under the file formats. A POSIX file handle, byte sinks (a file, a
// vector, a zlib/gzip deflate stream) and byte sources (a file range, memory, an inflate stream)
// and byte swapping. Implemented in byte_stream.cpp, with the test hook of test_hooks.hpp.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

// ---- files ---------------------------------------------------------------------------------------

/// RAII POSIX file descriptor.
class fd_file {
 public:
  fd_file() = default;
  /// Opens `p` with `flags` (O_CLOEXEC added). Throws io_error.
  fd_file(const std::filesystem::path& p, int flags, const char* op, mode_t mode = 0666);
  ~fd_file();
  fd_file(const fd_file&) = delete;
  fd_file& operator=(const fd_file&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// The file's size; throws io_error for a directory.
  [[nodiscard]] std::uint64_t size(const char* op) const;
  /// Reads up to n bytes at `offset`; returns the bytes read (fewer only at the end of the file).
  std::size_t pread_some(void* dst, std::size_t n, std::uint64_t offset, const char* op) const;
  /// Writes all n bytes (or fails as fail_writes_after() asks).
  void write_all(const void* src, std::size_t n, const char* op);
  void sync(const char* op);
  void close(const char* op);

 private:
  std::string path_;
  int fd_{-1};
};

// ---- byte sinks (writing) ------------------------------------------------------------------------

class sink {
 public:
  virtual ~sink() = default;
  virtual void put(const void* p, std::size_t n) = 0;
  /// Flushes whatever the sink buffers (the end of a compressed stream).
  virtual void finish() {}
};

class file_sink final : public sink {
 public:
  file_sink(fd_file& f, const char* op) : f_(f), op_(op) {}
  void put(const void* p, std::size_t n) override { f_.write_all(p, n, op_); }

 private:
  fd_file& f_;
  const char* op_;
};

class vector_sink final : public sink {
 public:
  explicit vector_sink(std::vector<unsigned char>& v) : v_(v) {}
  void put(const void* p, std::size_t n) override;

 private:
  std::vector<unsigned char>& v_;
};

/// zlib (MetaImage) or gzip (NRRD) deflate stream into another sink.
class deflate_sink final : public sink {
 public:
  deflate_sink(sink& out, int level, bool gzip_wrapper, const char* op, std::string path);
  ~deflate_sink() override;
  deflate_sink(const deflate_sink&) = delete;
  deflate_sink& operator=(const deflate_sink&) = delete;

  void put(const void* p, std::size_t n) override;
  void finish() override;

 private:
  void pump(int flush);

  sink& out_;
  const char* op_;
  std::string path_;
  z_stream z_{};
  std::vector<unsigned char> buf_;
};

/// Reverses the bytes of each of `count` elements of `elem` bytes.
void swap_bytes(void* data, std::size_t count, std::size_t elem) noexcept;

/// Writes `bytes` of native-order voxels of size `elem` in byte order `order`.
void put_voxels(sink& s, const void* data, std::size_t bytes, std::size_t elem, byte_order order);

// ---- byte sources (reading) ----------------------------------------------------------------------

class source {
 public:
  virtual ~source() = default;
  /// Reads up to n bytes; fewer only at the end of the data.
  virtual std::size_t get(void* dst, std::size_t n) = 0;
};

/// `limit` bytes of a file from `offset`.
class file_source final : public source {
 public:
  file_source(const fd_file& f, std::uint64_t offset, std::uint64_t limit, const char* op)
      : f_(f), off_(offset), left_(limit), op_(op) {}
  std::size_t get(void* dst, std::size_t n) override;

 private:
  const fd_file& f_;
  std::uint64_t off_;
  std::uint64_t left_;
  const char* op_;
};

class memory_source final : public source {
 public:
  explicit memory_source(std::string_view s) : s_(s) {}
  std::size_t get(void* dst, std::size_t n) override;

 private:
  std::string_view s_;
};

/// Inflates a zlib or gzip stream (detected from its header) read from another source.
class inflate_source final : public source {
 public:
  inflate_source(source& in, const char* op, std::string path);
  ~inflate_source() override;
  inflate_source(const inflate_source&) = delete;
  inflate_source& operator=(const inflate_source&) = delete;

  [[nodiscard]] bool ended() const noexcept { return ended_; }

  std::size_t get(void* dst, std::size_t n) override;

 private:
  source& in_;
  const char* op_;
  std::string path_;
  z_stream z_{};
  std::vector<unsigned char> buf_;
  bool ended_{false};
};

/// Reads exactly n bytes; throws io_error ("voxel data truncated", of `expected_total` bytes)
/// when the source ends first.
void read_exact(source& s, void* dst, std::size_t n, std::uint64_t expected_total, const char* op,
                const std::string& path);

/// Reads and drops n bytes; throws io_error when the source ends first.
void skip_bytes(source& s, std::uint64_t n, const char* op, const std::string& path);

}  // namespace vox::io::detail
