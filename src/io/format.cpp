#include <voxstream/io/format.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include <voxstream/io/metaimage.hpp>
#include <voxstream/io/nrrd.hpp>
#include <voxstream/io/png.hpp>
#include <voxstream/io/tiff.hpp>

#include "streamed_file.hpp"

namespace vox {

namespace io {

namespace fs = std::filesystem;

const char* format_name(file_format f) noexcept {
  switch (f) {
    case file_format::raw:
      return "raw";
    case file_format::nrrd:
      return "nrrd";
    case file_format::metaimage:
      return "metaimage";
    case file_format::tiff:
      return "tiff";
    case file_format::png:
      return "png";
  }
  return "?";
}

bool tiff_supported() noexcept { return VOXSTREAM_HAVE_TIFF != 0; }

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string os_error(int err) { return std::generic_category().message(err); }

}  // namespace

std::optional<file_format> format_from_extension(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  if (ext == ".raw" || ext == ".bin" || ext == ".dat") return file_format::raw;
  if (ext == ".nrrd" || ext == ".nhdr") return file_format::nrrd;
  if (ext == ".mha" || ext == ".mhd") return file_format::metaimage;
  if (ext == ".tif" || ext == ".tiff") return file_format::tiff;
  if (ext == ".png") return file_format::png;
  return std::nullopt;
}

write_options write_options::like(const volume_info& info) {
  write_options o;
  o.spacing = info.spacing;
  o.origin = info.origin;
  o.enc = info.enc == encoding::other ? encoding::gzip : info.enc;
  o.order = info.order;
  return o;
}

namespace detail {

void throw_io(const char* op, const std::string& path, const std::string& what, const char* file,
              int line) {
  throw io_error(vox::detail::format_error(op, "'" + path + "': " + what, file, line), path);
}

// ---- text helpers --------------------------------------------------------------------------------

std::string_view trim(std::string_view s) noexcept {
  const auto ws = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (i < s.size()) {
    while (i < s.size() && ws(s[i])) ++i;
    const std::size_t b = i;
    while (i < s.size() && !ws(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

bool parse_u64(std::string_view s, std::uint64_t& out) noexcept {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

bool parse_i64(std::string_view s, std::int64_t& out) noexcept {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

bool parse_double(std::string_view s, double& out) noexcept {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec == std::errc::result_out_of_range) return false;
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string excerpt(std::string_view s, std::size_t n) {
  std::string r;
  for (std::size_t i = 0; i < s.size() && i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    r += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > n) r += "...";
  return r;
}

void check_extent(const extent3& e, dtype t, const char* op, std::string_view name) {
  if (e.empty()) VOX_IO_FAIL(op, std::string(name), "empty extent " + e.str());
  const std::uint64_t limit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / dtype_size(t);
  std::uint64_t n = e.x;
  for (std::uint64_t d : {static_cast<std::uint64_t>(e.y), static_cast<std::uint64_t>(e.z)}) {
    if (n > limit / d)
      VOX_IO_FAIL(op, std::string(name),
                  "extent " + e.str() + " of " + dtype_name(t) + " overflows 63 bits of bytes");
    n *= d;
  }
  if (n > std::numeric_limits<std::size_t>::max() / dtype_size(t))
    VOX_IO_FAIL(op, std::string(name), "extent " + e.str() + " does not fit in memory");
}

// ---- test hook -----------------------------------------------------------------------------------

namespace {
std::uint64_t g_write_budget = std::numeric_limits<std::uint64_t>::max();
}

void fail_writes_after(std::uint64_t bytes) noexcept { g_write_budget = bytes; }

}  // namespace detail

namespace {

using detail::excerpt;

// ---- files ---------------------------------------------------------------------------------------

/// RAII POSIX file descriptor.
class fd_file {
 public:
  fd_file() = default;
  fd_file(const fs::path& p, int flags, const char* op, mode_t mode = 0666) : path_(p.string()) {
    do {
      fd_ = ::open(path_.c_str(), flags | O_CLOEXEC, mode);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) {
      const int err = errno;
      VOX_IO_FAIL(op, path_, "cannot open: " + os_error(err));
    }
  }
  ~fd_file() {
    if (fd_ >= 0) ::close(fd_);
  }
  fd_file(const fd_file&) = delete;
  fd_file& operator=(const fd_file&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  [[nodiscard]] std::uint64_t size(const char* op) const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      VOX_IO_FAIL(op, path_, "cannot stat: " + os_error(err));
    }
    if (S_ISDIR(st.st_mode)) VOX_IO_FAIL(op, path_, "is a directory");
    return static_cast<std::uint64_t>(st.st_size);
  }

  /// Reads up to n bytes at `offset`; returns the bytes read (fewer only at the end of the file).
  std::size_t pread_some(void* dst, std::size_t n, std::uint64_t offset, const char* op) const {
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

  void write_all(const void* src, std::size_t n, const char* op) {
    auto* p = static_cast<const char*>(src);
    while (n > 0) {
      std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
      if (detail::g_write_budget != std::numeric_limits<std::uint64_t>::max()) {
        if (detail::g_write_budget == 0) VOX_IO_FAIL(op, path_, "write failed: injected failure");
        chunk = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, detail::g_write_budget));
        detail::g_write_budget -= chunk;
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

  void sync(const char* op) {
    if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
      const int err = errno;
      VOX_IO_FAIL(op, path_, "fsync failed: " + os_error(err));
    }
  }

  void close(const char* op) {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) {
      const int err = errno;
      VOX_IO_FAIL(op, path_, "close failed: " + os_error(err));
    }
  }

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
  void put(const void* p, std::size_t n) override {
    const auto* b = static_cast<const unsigned char*>(p);
    v_.insert(v_.end(), b, b + n);
  }

 private:
  std::vector<unsigned char>& v_;
};

/// zlib (MetaImage) or gzip (NRRD) deflate stream into another sink.
class deflate_sink final : public sink {
 public:
  deflate_sink(sink& out, int level, bool gzip_wrapper, const char* op, std::string path)
      : out_(out), op_(op), path_(std::move(path)), buf_(1 << 16) {
    if (level < 1 || level > 9) VOX_FAIL(op, "compression_level must be 1..9");
    if (deflateInit2(&z_, level, Z_DEFLATED, gzip_wrapper ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
      VOX_IO_FAIL(op_, path_, "zlib deflateInit2 failed");
  }
  ~deflate_sink() override { deflateEnd(&z_); }
  deflate_sink(const deflate_sink&) = delete;
  deflate_sink& operator=(const deflate_sink&) = delete;

  void put(const void* p, std::size_t n) override {
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
  void finish() override {
    z_.next_in = nullptr;
    z_.avail_in = 0;
    pump(Z_FINISH);
  }

 private:
  void pump(int flush) {
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

  sink& out_;
  const char* op_;
  std::string path_;
  z_stream z_{};
  std::vector<unsigned char> buf_;
};

void swap_bytes(void* data, std::size_t count, std::size_t elem) noexcept {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += elem) std::reverse(p, p + elem);
}

/// Writes `bytes` of native-order voxels of size `elem` in byte order `order`.
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

class source {
 public:
  virtual ~source() = default;
  /// Reads up to n bytes; fewer only at the end of the data.
  virtual std::size_t get(void* dst, std::size_t n) = 0;
};

class file_source final : public source {
 public:
  file_source(const fd_file& f, std::uint64_t offset, std::uint64_t limit, const char* op)
      : f_(f), off_(offset), left_(limit), op_(op) {}
  std::size_t get(void* dst, std::size_t n) override {
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, left_));
    const std::size_t r = f_.pread_some(dst, n, off_, op_);
    off_ += r;
    left_ -= r;
    return r;
  }

 private:
  const fd_file& f_;
  std::uint64_t off_;
  std::uint64_t left_;
  const char* op_;
};

class memory_source final : public source {
 public:
  explicit memory_source(std::string_view s) : s_(s) {}
  std::size_t get(void* dst, std::size_t n) override {
    n = std::min(n, s_.size());
    if (n > 0) std::memcpy(dst, s_.data(), n);
    s_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view s_;
};

/// Inflates a zlib or gzip stream (detected from its header) read from another source.
class inflate_source final : public source {
 public:
  inflate_source(source& in, const char* op, std::string path)
      : in_(in), op_(op), path_(std::move(path)), buf_(1 << 16) {
    if (inflateInit2(&z_, 15 + 32) != Z_OK) VOX_IO_FAIL(op_, path_, "zlib inflateInit2 failed");
  }
  ~inflate_source() override { inflateEnd(&z_); }
  inflate_source(const inflate_source&) = delete;
  inflate_source& operator=(const inflate_source&) = delete;

  [[nodiscard]] bool ended() const noexcept { return ended_; }

  std::size_t get(void* dst, std::size_t n) override {
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

 private:
  source& in_;
  const char* op_;
  std::string path_;
  z_stream z_{};
  std::vector<unsigned char> buf_;
  bool ended_{false};
};

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

/// Reads slices [z0, z0+nz) from `raw` (positioned at the start of the payload stream).
void decode_from(source& raw, const volume_info& info, std::size_t z0, std::size_t nz, void* dst,
                 const char* op, const std::string& path) {
  const std::size_t elem = dtype_size(info.type);
  const std::uint64_t slice = static_cast<std::uint64_t>(info.extent.slice_voxels()) * elem;
  const std::uint64_t total = info.data_bytes();
  const std::size_t want = static_cast<std::size_t>(slice * nz);
  if (info.enc == encoding::raw) {
    skip_bytes(raw, slice * z0, op, path);
    read_exact(raw, dst, want, total, op, path);
  } else if (info.enc == encoding::gzip) {
    inflate_source z(raw, op, path);
    skip_bytes(z, info.decoded_skip + slice * z0, op, path);
    read_exact(z, dst, want, total, op, path);
    if (z0 + nz == info.extent.z) {
      // The whole stream must be there: reaching its end checks the CRC (gzip) or Adler-32.
      unsigned char extra = 0;
      if (z.get(&extra, 1) != 0)
        VOX_IO_FAIL(op, path,
                    "the compressed stream holds more than the " + std::to_string(total) +
                        " bytes of voxels the header declares");
    }
  } else {
    VOX_IO_FAIL(op, path, "unsupported encoding for this format");
  }
  if (info.order != native_byte_order && elem > 1) swap_bytes(dst, want / elem, elem);
}

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

// ---- probe ---------------------------------------------------------------------------------------

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

// ---- read ----------------------------------------------------------------------------------------

void read_voxels(const volume_info& info, std::size_t z0, std::size_t nz, void* dst,
                 std::size_t dst_bytes) {
  constexpr const char* op = "io::read_voxels";
  checked_voxels(info.extent, dtype_size(info.type), op);
  VOX_EXPECTS(z0 <= info.extent.z && nz <= info.extent.z - z0, op,
              "slices [" + std::to_string(z0) + ", " + std::to_string(z0 + nz) +
                  ") are outside the volume's " + std::to_string(info.extent.z));
  const std::uint64_t slice =
      static_cast<std::uint64_t>(info.extent.slice_voxels()) * dtype_size(info.type);
  VOX_EXPECTS(dst_bytes == slice * nz, op,
              "dst holds " + std::to_string(dst_bytes) + " bytes, the slices need " +
                  std::to_string(slice * nz));
  VOX_EXPECTS(dst != nullptr || nz == 0, op, "dst is null");
  if (nz == 0) return;
  if (info.format == file_format::tiff) {
#if VOXSTREAM_HAVE_TIFF
    detail::read_tiff(info, z0, nz, dst, dst_bytes);
    return;
#else
    VOX_IO_FAIL(op, info.data_file.string(), "this voxstream was built without libtiff");
#endif
  }
  if (info.format == file_format::png)
    VOX_IO_FAIL(op, info.data_file.string(), "PNG is an export format here");
  const fd_file f(info.data_file, O_RDONLY, op);
  const std::uint64_t size = f.size(op);
  if (info.data_offset > size)
    VOX_IO_FAIL(op, f.path(), "voxel data truncated: the file ends before the data begins");
  std::uint64_t limit = size - info.data_offset;
  if (info.enc == encoding::gzip && info.compressed_bytes != 0)
    limit = std::min(limit, info.compressed_bytes);
  file_source s(f, info.data_offset, limit, op);
  decode_from(s, info, z0, nz, dst, op, f.path());
}

void detail::decode_payload(const volume_info& info, std::string_view payload, void* dst,
                            std::size_t dst_bytes, std::string_view name) {
  constexpr const char* op = "io::decode_payload";
  check_extent(info.extent, info.type, op, name);
  VOX_EXPECTS(dst_bytes == info.data_bytes(), op, "dst_bytes must equal info.data_bytes()");
  if (info.enc == encoding::gzip && info.compressed_bytes != 0 &&
      info.compressed_bytes < payload.size())
    payload = payload.substr(0, static_cast<std::size_t>(info.compressed_bytes));
  memory_source s(payload);
  decode_from(s, info, 0, info.extent.z, dst, op, std::string(name));
}

std::string_view detail::attached_payload(const parsed_header& ph, std::string_view file,
                                          volume_info& info, std::string_view name) {
  constexpr const char* op = "io::attached_payload";
  const std::string n(name);
  VOX_EXPECTS(ph.data_file.empty(), op, "the header names a data file: its voxels are detached");
  info = ph.info;
  info.detached = false;
  info.header_bytes = ph.header_bytes;
  if (ph.header_bytes > file.size()) VOX_IO_FAIL(op, n, "file shorter than its header");
  std::string_view rest = file.substr(ph.header_bytes);
  for (std::uint64_t lines = ph.line_skip; lines > 0; --lines) {
    const std::size_t nl = rest.find('\n');
    if (nl == std::string_view::npos)
      VOX_IO_FAIL(op, n, "voxel data truncated: the file ends within 'line skip'");
    rest.remove_prefix(nl + 1);
  }
  const std::uint64_t bytes = info.data_bytes();
  if (info.enc == encoding::raw) {
    if (ph.data_at_end) {
      if (rest.size() < bytes) VOX_IO_FAIL(op, n, "voxel data truncated");
      rest.remove_prefix(static_cast<std::size_t>(rest.size() - bytes));
    } else {
      if (ph.byte_skip > rest.size() || rest.size() - ph.byte_skip < bytes)
        VOX_IO_FAIL(op, n, "voxel data truncated");
      rest.remove_prefix(static_cast<std::size_t>(ph.byte_skip));
    }
  } else {
    info.decoded_skip = ph.byte_skip;
    if (info.compressed_bytes > rest.size()) VOX_IO_FAIL(op, n, "compressed data truncated");
    if (info.compressed_bytes == 0) info.compressed_bytes = rest.size();
    rest = rest.substr(0, static_cast<std::size_t>(info.compressed_bytes));
  }
  info.data_offset = static_cast<std::uint64_t>(rest.data() - file.data());
  return rest;
}

namespace {

template <class T>
volume_info read_into(const volume_info& info, host_volume<T>& out, const char* op) {
  if (info.type != dtype_of<T>)
    VOX_IO_FAIL(op, info.header_file.string(),
                std::string("holds ") + dtype_name(info.type) + " voxels, not " +
                    dtype_name(dtype_of<T>) + " (use read_any to read whatever type it holds)");
  host_volume<T> tmp(info.extent);
  read_voxels(info, 0, info.extent.z, tmp.data(), tmp.bytes());
  out = std::move(tmp);
  return info;
}

}  // namespace

template <class T>
volume_info read(const fs::path& path, host_volume<T>& out) {
  return read_into(probe(path), out, "io::read");
}

template <class T>
volume_info read_raw(const fs::path& path, const raw_layout& layout, host_volume<T>& out) {
  return read_into(raw_info(path, layout), out, "io::read_raw");
}

extent3 extent_of(const any_host_volume& v) noexcept {
  return std::visit([](const auto& h) { return h.extent(); }, v);
}

any_host_volume read_any(const fs::path& path, volume_info* info) {
  const volume_info i = probe(path);
  any_host_volume out;
  switch (i.type) {
    case dtype::uint8:
      out.emplace<0>();
      read_into(i, std::get<0>(out), "io::read_any");
      break;
    case dtype::uint16:
      out.emplace<1>();
      read_into(i, std::get<1>(out), "io::read_any");
      break;
    case dtype::int16:
      out.emplace<2>();
      read_into(i, std::get<2>(out), "io::read_any");
      break;
    case dtype::int32:
      out.emplace<3>();
      read_into(i, std::get<3>(out), "io::read_any");
      break;
    case dtype::float32:
      out.emplace<4>();
      read_into(i, std::get<4>(out), "io::read_any");
      break;
    case dtype::float64:
      out.emplace<5>();
      read_into(i, std::get<5>(out), "io::read_any");
      break;
  }
  if (info != nullptr) *info = i;
  return out;
}

// ---- write ---------------------------------------------------------------------------------------

namespace {

/// Files written under temporary names in their final directories, renamed into place together
/// by commit(); whatever was not committed is removed on destruction.
class staged_files {
 public:
  explicit staged_files(const char* op) : op_(op) {}
  ~staged_files() {
    for (const auto& [tmp, dest] : files_) ::unlink(tmp.c_str());
  }
  staged_files(const staged_files&) = delete;
  staged_files& operator=(const staged_files&) = delete;

  /// Creates a fresh temporary next to `dest` and lets `fill` write it.
  void add(const fs::path& dest, const std::function<void(const fs::path& tmp)>& fill) {
    const fs::path tmp = reserve(dest);
    fill(tmp);
    fd_file f(tmp, O_RDONLY, op_);  // durable before it replaces the old file
    f.sync(op_);
    f.close(op_);
  }

  /// Creates a fresh, empty temporary next to `dest` for the caller to write (and make durable)
  /// before commit().
  fs::path reserve(const fs::path& dest) {
    static std::atomic<unsigned> counter{0};
    const std::string p = dest.string();
    if (dest.filename().empty() || dest.filename() == "." || dest.filename() == "..")
      VOX_IO_FAIL(op_, p, "not a file name");
    fs::path tmp;
    for (int attempt = 0;; ++attempt) {
      tmp = dest.parent_path() /
            ("." + dest.filename().string() + ".tmp" + std::to_string(::getpid()) + "." +
             std::to_string(counter.fetch_add(1)));
      const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        ::close(fd);
        break;
      }
      const int err = errno;
      if (err != EEXIST || attempt > 100)
        VOX_IO_FAIL(op_, p, "cannot create a temporary file in its directory: " + os_error(err));
    }
    files_.emplace_back(tmp, dest);
    return tmp;
  }

  /// Renames every temporary over its destination, in the order they were added.
  void commit() {
    while (!files_.empty()) {
      const auto& [tmp, dest] = files_.front();
      if (::rename(tmp.c_str(), dest.c_str()) != 0) {
        const int err = errno;
        VOX_IO_FAIL(op_, dest.string(),
                    "cannot rename the temporary file over it: " + os_error(err));
      }
      files_.erase(files_.begin());
    }
  }

 private:
  const char* op_;
  std::vector<std::pair<fs::path, fs::path>> files_;
};

}  // namespace

void detail::write_atomically(const fs::path& path,
                              const std::function<void(const fs::path& tmp)>& fill,
                              const char* op) {
  staged_files staged(op);
  staged.add(path, fill);
  staged.commit();
}

void detail::write_file_atomically(const fs::path& path, std::string_view bytes, const char* op) {
  write_atomically(
      path,
      [&](const fs::path& tmp) {
        fd_file f(tmp, O_WRONLY | O_TRUNC, op);
        f.write_all(bytes.data(), bytes.size(), op);
        f.close(op);
      },
      op);
}

namespace {

void expect_options(const write_options& o, const extent3& e, file_format f, const char* op) {
  const auto finite = [](const vec3d& v) {
    return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
  };
  VOX_EXPECTS(finite(o.spacing) && o.spacing.x > 0 && o.spacing.y > 0 && o.spacing.z > 0, op,
              "spacing must be finite and > 0");
  VOX_EXPECTS(finite(o.origin), op, "origin must be finite");
  VOX_EXPECTS(o.enc != encoding::other, op, "encoding::other cannot be written; use raw or gzip");
  VOX_EXPECTS(o.enc == encoding::raw || (o.compression_level >= 1 && o.compression_level <= 9), op,
              "compression_level must be 1..9");
  VOX_EXPECTS(f != file_format::raw || o.enc == encoding::raw, op,
              "raw files are uncompressed: use NRRD or MetaImage for gzip");
  VOX_EXPECTS(f != file_format::png || e.z == 1, op,
              "PNG holds one 2D image: this volume has " + std::to_string(e.z) +
                  " slices (use vox::io::write_png with a slice index)");
}

/// Writes header + payload to `path` (temporary), compressing the payload when asked.
void write_stream(const fs::path& path, std::string_view header, const void* data,
                  std::size_t bytes, std::size_t elem, const write_options& o, bool gzip_wrapper,
                  const char* op) {
  fd_file f(path, O_WRONLY | O_TRUNC, op);
  file_sink fs_(f, op);
  if (!header.empty()) fs_.put(header.data(), header.size());
  if (o.enc == encoding::gzip) {
    deflate_sink z(fs_, o.compression_level, gzip_wrapper, op, f.path());
    put_voxels(z, data, bytes, elem, o.order);
    z.finish();
  } else {
    put_voxels(fs_, data, bytes, elem, o.order);
  }
  f.close(op);
}

void write_bytes(const fs::path& path, std::string_view header,
                 const std::vector<unsigned char>& body, const char* op) {
  fd_file f(path, O_WRONLY | O_TRUNC, op);
  file_sink fs_(f, op);
  fs_.put(header.data(), header.size());
  if (!body.empty()) fs_.put(body.data(), body.size());
  f.close(op);
}

std::string detached_name(const fs::path& header, file_format f, encoding enc) {
  std::string stem = header.stem().string();
  if (f == file_format::nrrd) return stem + (enc == encoding::gzip ? ".raw.gz" : ".raw");
  return stem + (enc == encoding::gzip ? ".zraw" : ".raw");
}

/// Where write() puts a volume: the format, and whether header and voxels are separate files.
struct write_target {
  file_format format{file_format::raw};
  bool detached{false};
};

/// The format (from the options or the extension) and layout of a write to `path`, with the
/// options checked. Throws vox::invalid_argument.
write_target target_of(const fs::path& path, const extent3& e, const write_options& o,
                       const char* op) {
  const std::string p = path.string();
  const std::optional<file_format> ext = format_from_extension(path);
  VOX_EXPECTS(o.format || ext, op,
              "cannot tell the format of '" + p +
                  "' from its extension (.raw .nrrd .nhdr .mha .mhd .tif .tiff .png): set "
                  "write_options::format");
  const file_format f = o.format ? *o.format : *ext;
  expect_options(o, e, f, op);
  const std::string ext_l = lower(path.extension().string());
  return {f, o.detached || ext_l == ".nhdr" || ext_l == ".mhd"};
}

/// What the header of a written volume says.
volume_info written_info(const extent3& e, dtype t, const write_options& o, file_format f) {
  volume_info info;
  info.format = f;
  info.extent = e;
  info.type = t;
  info.dimension = 3;
  info.spacing = o.spacing;
  info.origin = o.origin;
  info.order = o.order;
  info.enc = o.enc;
  return info;
}

void write_impl(const fs::path& path, const void* data, const extent3& e, dtype t,
                const write_options& o) {
  constexpr const char* op = "io::write";
  const std::string p = path.string();
  const write_target target = target_of(path, e, o, op);
  const file_format f = target.format;
  const bool detached = target.detached;
  const std::size_t elem = dtype_size(t);
  const std::size_t bytes = e.voxels() * elem;
  const volume_info info = written_info(e, t, o, f);

  switch (f) {
    case file_format::raw:
      detail::write_atomically(
          path,
          [&](const fs::path& tmp) { write_stream(tmp, {}, data, bytes, elem, o, false, op); }, op);
      return;
    case file_format::nrrd:
    case file_format::metaimage: {
      const bool nrrd = f == file_format::nrrd;
      if (!detached) {
        if (nrrd) {
          const std::string h = detail::format_nrrd_header(info, {});
          detail::write_atomically(
              path,
              [&](const fs::path& tmp) { write_stream(tmp, h, data, bytes, elem, o, true, op); },
              op);
        } else if (o.enc == encoding::gzip) {
          // CompressedDataSize precedes the data: compress first.
          std::vector<unsigned char> body;
          {
            vector_sink vs(body);
            deflate_sink z(vs, o.compression_level, false, op, p);
            put_voxels(z, data, bytes, elem, o.order);
            z.finish();
          }
          const std::string h = detail::format_metaimage_header(info, {}, body.size());
          detail::write_atomically(
              path, [&](const fs::path& tmp) { write_bytes(tmp, h, body, op); }, op);
        } else {
          const std::string h = detail::format_metaimage_header(info, {}, 0);
          detail::write_atomically(
              path,
              [&](const fs::path& tmp) { write_stream(tmp, h, data, bytes, elem, o, false, op); },
              op);
        }
        return;
      }
      // Both files are staged before either is renamed: a failure while writing leaves the old
      // pair intact. The data file is renamed first, so a header never names missing data.
      const std::string dname = detached_name(path, f, o.enc);
      VOX_EXPECTS(dname != path.filename().string(), op,
                  "the detached data file would overwrite the header: rename '" + p + "'");
      const fs::path dpath = path.parent_path() / dname;
      staged_files staged(op);
      std::uint64_t csize = 0;
      staged.add(dpath, [&](const fs::path& tmp) {
        write_stream(tmp, {}, data, bytes, elem, o, nrrd, op);
        std::error_code ec;
        csize = fs::file_size(tmp, ec);
        if (ec) VOX_IO_FAIL(op, tmp.string(), "cannot stat: " + ec.message());
      });
      const std::string h =
          nrrd ? detail::format_nrrd_header(info, dname)
               : detail::format_metaimage_header(info, dname, o.enc == encoding::gzip ? csize : 0);
      staged.add(path, [&](const fs::path& tmp) { write_bytes(tmp, h, {}, op); });
      staged.commit();
      return;
    }
    case file_format::tiff:
#if VOXSTREAM_HAVE_TIFF
      detail::write_atomically(
          path,
          [&](const fs::path& tmp) {
            detail::write_tiff(tmp, data, info, o.enc == encoding::gzip);
          },
          op);
      return;
#else
      VOX_IO_FAIL(op, p, "cannot write TIFF: this voxstream was built without libtiff");
#endif
    case file_format::png:
      break;
  }
  VOX_FAIL(op, "internal: unhandled format");
}

}  // namespace

template <class T>
void write(const fs::path& path, const host_volume<T>& v, const write_options& opt) {
  constexpr const char* op = "io::write";
  VOX_EXPECTS(!v.empty(), op, "the volume is empty");
  v.synchronize();
  const std::optional<file_format> f = opt.format ? opt.format : format_from_extension(path);
  if (f == file_format::png) {
    expect_options(opt, v.extent(), *f, op);
    write_png(path, v, png_options{});
    return;
  }
  write_impl(path, v.data(), v.extent(), dtype_of<T>, opt);
}

void write_any(const fs::path& path, const any_host_volume& v, const write_options& opt) {
  std::visit([&](const auto& h) { write(path, h, opt); }, v);
}

// ---- slab by slab (vox::stream_process) ---------------------------------------------------------

struct detail::streamed_file_writer::impl {
  static constexpr const char* op = "file_sink";
  // Declared first, destroyed last: the temporaries are removed after the file is closed.
  staged_files staged{op};
  fs::path path;
  std::string data_name;  // detached: the data file's name, as the header gives it
  fs::path data_tmp;      // the temporary the voxels go to
  write_target target;
  volume_info info;
  write_options opt;
  std::unique_ptr<fd_file> file;
  std::unique_ptr<io::file_sink> raw_out;
  std::unique_ptr<deflate_sink> zip_out;
  sink* out{nullptr};
  std::uint64_t remaining{0};
};

detail::streamed_file_writer::streamed_file_writer(const fs::path& path, const extent3& e,
                                                   dtype t, const write_options& opt) {
  constexpr const char* op = impl::op;
  checked_voxels(e, dtype_size(t), op);
  const write_target target = target_of(path, e, opt, op);
  VOX_EXPECTS(target.format == file_format::raw || target.format == file_format::nrrd ||
                  target.format == file_format::metaimage,
              op,
              std::string("writes raw, NRRD and MetaImage files slab by slab, not ") +
                  format_name(target.format) + " ('" + path.string() +
                  "'): write a whole volume with vox::io::write");
  auto m = std::make_unique<impl>();
  m->path = path;
  m->target = target;
  m->opt = opt;
  m->info = written_info(e, t, opt, target.format);
  m->remaining = m->info.data_bytes();
  const bool nrrd = target.format == file_format::nrrd;
  fs::path data_path = path;
  if (target.detached && target.format != file_format::raw) {
    m->data_name = detached_name(path, target.format, opt.enc);
    VOX_EXPECTS(m->data_name != path.filename().string(), op,
                "the detached data file would overwrite the header: rename '" + path.string() +
                    "'");
    data_path = path.parent_path() / m->data_name;
  }
  m->data_tmp = m->staged.reserve(data_path);
  m->file = std::make_unique<fd_file>(m->data_tmp, O_WRONLY | O_TRUNC, op);
  m->raw_out = std::make_unique<io::file_sink>(*m->file, op);
  if (m->data_name.empty() && target.format != file_format::raw) {
    const std::string h = nrrd ? detail::format_nrrd_header(m->info, {})
                               : detail::format_metaimage_header(m->info, {}, 0);
    m->raw_out->put(h.data(), h.size());
  }
  m->out = m->raw_out.get();
  if (opt.enc == encoding::gzip) {
    // NRRD takes a gzip stream, MetaImage a zlib one (as write() writes them). An attached
    // MetaImage header cannot give CompressedDataSize ahead of the data; it is optional.
    m->zip_out = std::make_unique<deflate_sink>(*m->raw_out, opt.compression_level, nrrd, op,
                                                path.string());
    m->out = m->zip_out.get();
  }
  impl_ = std::move(m);
}

detail::streamed_file_writer::~streamed_file_writer() = default;

void detail::streamed_file_writer::append(const void* data, std::size_t bytes) {
  constexpr const char* op = impl::op;
  VOX_EXPECTS(impl_ != nullptr, op, "the file was already committed or discarded");
  VOX_EXPECTS(bytes <= impl_->remaining, op,
              "'" + impl_->path.string() + "': " + std::to_string(bytes) +
                  " more bytes of voxels, but only " + std::to_string(impl_->remaining) +
                  " remain in the volume");
  const std::size_t elem = dtype_size(impl_->info.type);
  VOX_EXPECTS(bytes % elem == 0, op, "appends whole voxels only");
  put_voxels(*impl_->out, data, bytes, elem, impl_->opt.order);
  impl_->remaining -= bytes;
}

void detail::streamed_file_writer::commit() {
  constexpr const char* op = impl::op;
  VOX_EXPECTS(impl_ != nullptr, op, "the file was already committed or discarded");
  VOX_EXPECTS(impl_->remaining == 0, op,
              "'" + impl_->path.string() + "': " + std::to_string(impl_->remaining) +
                  " bytes of voxels were never written");
  std::unique_ptr<impl> m = std::move(impl_);  // whatever happens, the temporaries go with m
  if (m->zip_out) m->zip_out->finish();
  m->file->sync(op);
  m->file->close(op);
  if (!m->data_name.empty()) {
    std::uint64_t csize = 0;
    if (m->opt.enc == encoding::gzip) {
      struct stat st {};
      if (::stat(m->data_tmp.c_str(), &st) != 0) {
        const int err = errno;
        VOX_IO_FAIL(op, m->path.string(), "cannot stat the data file: " + os_error(err));
      }
      csize = static_cast<std::uint64_t>(st.st_size);
    }
    const std::string h = m->target.format == file_format::nrrd
                              ? detail::format_nrrd_header(m->info, m->data_name)
                              : detail::format_metaimage_header(m->info, m->data_name, csize);
    m->staged.add(m->path, [&](const fs::path& tmp) { write_bytes(tmp, h, {}, op); });
  }
  m->staged.commit();
}

void detail::streamed_file_writer::discard() noexcept { impl_.reset(); }

std::uint64_t detail::streamed_file_writer::remaining() const noexcept {
  return impl_ ? impl_->remaining : 0;
}

struct detail::sequential_voxel_reader::impl {
  static constexpr const char* op = "file_source";
  volume_info info;
  // The open gzip stream (declared in the order they depend on each other).
  std::unique_ptr<fd_file> file;
  std::unique_ptr<io::file_source> raw_in;
  std::unique_ptr<inflate_source> zip_in;
  std::size_t pos{0};  // slices decoded so far

  void restart() {
    zip_in.reset();
    raw_in.reset();
    file.reset();
    file = std::make_unique<fd_file>(info.data_file, O_RDONLY, op);
    const std::uint64_t size = file->size(op);
    if (info.data_offset > size)
      VOX_IO_FAIL(op, file->path(), "voxel data truncated: the file ends before the data begins");
    std::uint64_t limit = size - info.data_offset;
    if (info.compressed_bytes != 0) limit = std::min(limit, info.compressed_bytes);
    raw_in = std::make_unique<io::file_source>(*file, info.data_offset, limit, op);
    zip_in = std::make_unique<inflate_source>(*raw_in, op, file->path());
    skip_bytes(*zip_in, info.decoded_skip, op, file->path());
    pos = 0;
  }
};

detail::sequential_voxel_reader::sequential_voxel_reader(volume_info info)
    : impl_(std::make_unique<impl>()) {
  impl_->info = std::move(info);
}

detail::sequential_voxel_reader::~sequential_voxel_reader() = default;

void detail::sequential_voxel_reader::read(std::size_t z0, std::size_t nz, void* dst,
                                           std::size_t dst_bytes) {
  impl& m = *impl_;
  const volume_info& info = m.info;
  if (info.enc != encoding::gzip || info.format == file_format::tiff) {
    read_voxels(info, z0, nz, dst, dst_bytes);
    return;
  }
  constexpr const char* op = impl::op;
  checked_voxels(info.extent, dtype_size(info.type), op);
  VOX_EXPECTS(z0 <= info.extent.z && nz <= info.extent.z - z0, op,
              "slices [" + std::to_string(z0) + ", " + std::to_string(z0 + nz) +
                  ") are outside the volume's " + std::to_string(info.extent.z));
  const std::size_t elem = dtype_size(info.type);
  const std::uint64_t slice = static_cast<std::uint64_t>(info.extent.slice_voxels()) * elem;
  VOX_EXPECTS(dst_bytes == slice * nz, op,
              "dst holds " + std::to_string(dst_bytes) + " bytes, the slices need " +
                  std::to_string(slice * nz));
  VOX_EXPECTS(dst != nullptr || nz == 0, op, "dst is null");
  if (nz == 0) return;
  if (!m.zip_in || z0 < m.pos) m.restart();
  const std::string& path = m.file->path();
  try {
    skip_bytes(*m.zip_in, slice * (z0 - m.pos), op, path);
    read_exact(*m.zip_in, dst, static_cast<std::size_t>(slice * nz), info.data_bytes(), op, path);
    m.pos = z0 + nz;
    if (m.pos == info.extent.z) {
      // As read_voxels: reaching the stream's end checks its CRC (gzip) or Adler-32.
      unsigned char extra = 0;
      if (m.zip_in->get(&extra, 1) != 0)
        VOX_IO_FAIL(op, path,
                    "the compressed stream holds more than the " +
                        std::to_string(info.data_bytes()) + " bytes of voxels the header declares");
    }
  } catch (...) {
    m.zip_in.reset();  // a failed stream is not resumed: the next read starts over
    throw;
  }
  if (info.order != native_byte_order && elem > 1) swap_bytes(dst, dst_bytes / elem, elem);
}

#define VOX_IO_INSTANTIATE(T)                                                            \
  template volume_info read<T>(const fs::path&, host_volume<T>&);                        \
  template volume_info read_raw<T>(const fs::path&, const raw_layout&, host_volume<T>&); \
  template void write<T>(const fs::path&, const host_volume<T>&, const write_options&);
VOX_IO_INSTANTIATE(std::uint8_t)
VOX_IO_INSTANTIATE(std::uint16_t)
VOX_IO_INSTANTIATE(std::int16_t)
VOX_IO_INSTANTIATE(std::int32_t)
VOX_IO_INSTANTIATE(float)
VOX_IO_INSTANTIATE(double)
#undef VOX_IO_INSTANTIATE

}  // namespace io
}  // namespace vox
