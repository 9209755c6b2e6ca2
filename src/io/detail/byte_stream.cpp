#include "byte_stream.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "fail.hpp"
#include "test_hooks.hpp"

namespace vox::io::detail {

// ---- test hook -----------------------------------------------------------------------------------

namespace {
std::uint64_t g_write_budget = std::numeric_limits<std::uint64_t>::max();
}

void fail_writes_after(std::uint64_t bytes) noexcept { g_write_budget = bytes; }

// ---- files ---------------------------------------------------------------------------------------

fd_file::fd_file(const std::filesystem::path& p, int flags, const char* op, mode_t mode)
    : path_(p.string()) {
  do {
    fd_ = ::open(path_.c_str(), flags | O_CLOEXEC, mode);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int err = errno;
    VOX_IO_FAIL(op, path_, "cannot open: " + os_error(err));
  }
}

fd_file::~fd_file() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t fd_file::size(const char* op) const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    VOX_IO_FAIL(op, path_, "cannot stat: " + os_error(err));
  }
  if (S_ISDIR(st.st_mode)) VOX_IO_FAIL(op, path_, "is a directory");
  return static_cast<std::uint64_t>(st.st_size);
}

std::size_t fd_file::pread_some(void* dst, std::size_t n, std::uint64_t offset,
                                const char* op) const {
  std::size_t done = 0;
  auto* p = static_cast<char*>(dst);
  while (done < n) {
    const std::size_t chunk = std::min<std::size_t>(n - done, std::size_t{1} << 30);
    const ssize_t r = ::pread(fd_, p + done, chunk, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      VOX_IO_FAIL(op, path_, "read failed: " + os_error(err));
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return done;
}

void fd_file::write_all(const void* src, std::size_t n, const char* op) {
  auto* p = static_cast<const char*>(src);
  while (n > 0) {
    std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
    if (g_write_budget != std::numeric_limits<std::uint64_t>::max()) {
      if (g_write_budget == 0) VOX_IO_FAIL(op, path_, "write failed: injected failure");
      chunk = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, g_write_budget));
      g_write_budget -= chunk;
    }
    const ssize_t r = ::write(fd_, p, chunk);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      VOX_IO_FAIL(op, path_, "write failed: " + os_error(err));
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void fd_file::sync(const char* op) {
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    const int err = errno;
    VOX_IO_FAIL(op, path_, "fsync failed: " + os_error(err));
  }
}

void fd_file::close(const char* op) {
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    VOX_IO_FAIL(op, path_, "close failed: " + os_error(err));
  }
}

// ---- byte sinks (writing) ------------------------------------------------------------------------

void vector_sink::put(const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  v_.insert(v_.end(), b, b + n);
}

deflate_sink::deflate_sink(sink& out, int level, bool gzip_wrapper, const char* op,
                           std::string path)
    : out_(out), op_(op), path_(std::move(path)), buf_(1 << 16) {
  if (level < 1 || level > 9) VOX_FAIL(op, "compression_level must be 1..9");
  if (deflateInit2(&z_, level, Z_DEFLATED, gzip_wrapper ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    VOX_IO_FAIL(op_, path_, "zlib deflateInit2 failed");
}

deflate_sink::~deflate_sink() { deflateEnd(&z_); }

void deflate_sink::put(const void* p, std::size_t n) {
  auto* in = static_cast<const unsigned char*>(p);
  while (n > 0) {
    const std::size_t chunk = std::min<std::size_t>(n, 1u << 30);
    z_.next_in = const_cast<unsigned char*>(in);  // zlib's API is not const-correct
    z_.avail_in = static_cast<uInt>(chunk);
    pump(Z_NO_FLUSH);
    in += chunk;
    n -= chunk;
  }
}

void deflate_sink::finish() {
  z_.next_in = nullptr;
  z_.avail_in = 0;
  pump(Z_FINISH);
}

void deflate_sink::pump(int flush) {
  for (;;) {
    z_.next_out = buf_.data();
    z_.avail_out = static_cast<uInt>(buf_.size());
    const int r = deflate(&z_, flush);
    if (r == Z_STREAM_ERROR) VOX_IO_FAIL(op_, path_, "zlib deflate failed");
    const std::size_t have = buf_.size() - z_.avail_out;
    if (have > 0) out_.put(buf_.data(), have);
    if (flush == Z_FINISH ? r == Z_STREAM_END : (z_.avail_in == 0 && z_.avail_out != 0)) break;
  }
}

void swap_bytes(void* data, std::size_t count, std::size_t elem) noexcept {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += elem) std::reverse(p, p + elem);
}

void put_voxels(sink& s, const void* data, std::size_t bytes, std::size_t elem, byte_order order) {
  if (order == native_byte_order || elem == 1) {
    // In pieces, so that the fault-injection hook and OS limits see ordinary writes.
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t off = 0; off < bytes; off += std::size_t{1} << 24)
      s.put(p + off, std::min<std::size_t>(bytes - off, std::size_t{1} << 24));
    return;
  }
  std::vector<unsigned char> buf(std::min<std::size_t>(bytes, std::size_t{1} << 20));
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t off = 0; off < bytes; off += buf.size()) {
    const std::size_t n = std::min(buf.size(), bytes - off);
    std::memcpy(buf.data(), p + off, n);
    swap_bytes(buf.data(), n / elem, elem);
    s.put(buf.data(), n);
  }
}

// ---- byte sources (reading) ----------------------------------------------------------------------

std::size_t file_source::get(void* dst, std::size_t n) {
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, left_));
  const std::size_t r = f_.pread_some(dst, n, off_, op_);
  off_ += r;
  left_ -= r;
  return r;
}

std::size_t memory_source::get(void* dst, std::size_t n) {
  n = std::min(n, s_.size());
  if (n > 0) std::memcpy(dst, s_.data(), n);
  s_.remove_prefix(n);
  return n;
}

inflate_source::inflate_source(source& in, const char* op, std::string path)
    : in_(in), op_(op), path_(std::move(path)), buf_(1 << 16) {
  if (inflateInit2(&z_, 15 + 32) != Z_OK) VOX_IO_FAIL(op_, path_, "zlib inflateInit2 failed");
}

inflate_source::~inflate_source() { inflateEnd(&z_); }

std::size_t inflate_source::get(void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  std::size_t done = 0;
  while (done < n && !ended_) {
    if (z_.avail_in == 0) {
      const std::size_t r = in_.get(buf_.data(), buf_.size());
      if (r == 0) VOX_IO_FAIL(op_, path_, "compressed data truncated: the stream ends early");
      z_.next_in = buf_.data();
      z_.avail_in = static_cast<uInt>(r);
    }
    const std::size_t chunk = std::min<std::size_t>(n - done, 1u << 30);
    z_.next_out = out + done;
    z_.avail_out = static_cast<uInt>(chunk);
    const int r = inflate(&z_, Z_NO_FLUSH);
    done += chunk - z_.avail_out;
    if (r == Z_STREAM_END) {
      ended_ = true;
    } else if (r == Z_NEED_DICT || r == Z_DATA_ERROR || r == Z_STREAM_ERROR) {
      VOX_IO_FAIL(op_, path_,
                  std::string("corrupt compressed data: ") + (z_.msg ? z_.msg : "zlib error"));
    } else if (r == Z_MEM_ERROR) {
      VOX_IO_FAIL(op_, path_, "zlib out of memory");
    }
    // Z_BUF_ERROR: no progress possible with this input; more input is read above.
  }
  return done;
}

void read_exact(source& s, void* dst, std::size_t n, std::uint64_t expected_total, const char* op,
                const std::string& path) {
  const std::size_t r = s.get(dst, n);
  if (r != n)
    VOX_IO_FAIL(op, path,
                "voxel data truncated: expected " + std::to_string(expected_total) +
                    " bytes, the data ends " + std::to_string(n - r) + " bytes early");
}

void skip_bytes(source& s, std::uint64_t n, const char* op, const std::string& path) {
  std::vector<unsigned char> scratch(static_cast<std::size_t>(std::min<std::uint64_t>(n, 1 << 16)));
  while (n > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n, scratch.size()));
    if (s.get(scratch.data(), want) != want)
      VOX_IO_FAIL(op, path, "voxel data truncated: the data ends before the skipped bytes");
    n -= want;
  }
}

}  // namespace vox::io::detail
