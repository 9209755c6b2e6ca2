#include "detail/tiff.hpp"

#if VOXSTREAM_HAVE_TIFF

#include <tiffio.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "detail/fail.hpp"
#include "detail/text.hpp"

namespace vox::io::detail {

namespace {

namespace fs = std::filesystem;

// ---- libtiff handles with their own error messages --------------------------------------------

struct tiff_messages {
  std::string first_error;
};

#if TIFFLIB_VERSION >= 20221213
int on_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* m = static_cast<tiff_messages*>(user);
  if (m != nullptr && m->first_error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    m->first_error = std::string(module ? module : "libtiff") + ": " + buf;
  }
  return 1;  // handled: libtiff's global handler (stderr) is not called
}
// Warnings are dropped, except libtiff's "IO error during reading of <tag>; tag ignored": that
// tag lies past the end of the file, which is truncated.
int on_warning(TIFF* t, void* user, const char* module, const char* fmt, va_list ap) {
  if (std::strstr(fmt, "IO error") != nullptr) return on_error(t, user, module, fmt, ap);
  return 1;
}
#else
// Before libtiff 4.5 handlers are global: messages go to the handle being used on this thread.
thread_local tiff_messages* g_messages = nullptr;
void on_error_global(const char* module, const char* fmt, va_list ap) {
  if (g_messages != nullptr && g_messages->first_error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    g_messages->first_error = std::string(module ? module : "libtiff") + ": " + buf;
  }
}
void on_warning_global(const char* module, const char* fmt, va_list ap) {
  if (std::strstr(fmt, "IO error") != nullptr) on_error_global(module, fmt, ap);
}
#endif

struct memory_file {
  const unsigned char* data{nullptr};
  toff_t size{0};
  toff_t pos{0};
};

tmsize_t mem_read(thandle_t h, void* buf, tmsize_t n) {
  auto* m = static_cast<memory_file*>(h);
  if (n <= 0 || m->pos >= m->size) return 0;
  const toff_t k = std::min<toff_t>(static_cast<toff_t>(n), m->size - m->pos);
  std::memcpy(buf, m->data + m->pos, static_cast<std::size_t>(k));
  m->pos += k;
  return static_cast<tmsize_t>(k);
}
tmsize_t mem_write(thandle_t, void*, tmsize_t) { return -1; }
toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  auto* m = static_cast<memory_file*>(h);
  toff_t base = 0;
  if (whence == SEEK_CUR)
    base = m->pos;
  else if (whence == SEEK_END)
    base = m->size;
  else if (whence != SEEK_SET)
    return static_cast<toff_t>(-1);
  if (off > std::numeric_limits<toff_t>::max() - base) return static_cast<toff_t>(-1);
  m->pos = base + off;
  return m->pos;
}
int mem_close(thandle_t) { return 0; }
toff_t mem_size(thandle_t h) { return static_cast<memory_file*>(h)->size; }
int mem_map(thandle_t, void**, toff_t*) { return 0; }
void mem_unmap(thandle_t, void*, toff_t) {}

class tiff_file {
 public:
  /// Opens `path` with libtiff `mode` ("r", "wl", "wb", "w8l", ...).
  tiff_file(const fs::path& path, const char* mode, const char* op)
      : name_(path.string()), op_(op), msgs_(std::make_unique<tiff_messages>()) {
#if TIFFLIB_VERSION >= 20221213
    TIFFOpenOptions* o = options();
    t_ = TIFFOpenExt(name_.c_str(), mode, o);
    TIFFOpenOptionsFree(o);
#else
    use_global_handlers(msgs_.get());
    t_ = TIFFOpen(name_.c_str(), mode);
#endif
    if (t_ == nullptr) fail("cannot open as TIFF");
  }
  /// Opens a TIFF held in memory, read-only.
  tiff_file(std::string_view bytes, std::string_view name, const char* op)
      : name_(name),
        op_(op),
        msgs_(std::make_unique<tiff_messages>()),
        mem_(std::make_unique<memory_file>()) {
    mem_->data = reinterpret_cast<const unsigned char*>(bytes.data());
    mem_->size = bytes.size();
#if TIFFLIB_VERSION >= 20221213
    TIFFOpenOptions* o = options();
    t_ = TIFFClientOpenExt(name_.c_str(), "rm", mem_.get(), mem_read, mem_write, mem_seek,
                           mem_close, mem_size, mem_map, mem_unmap, o);
    TIFFOpenOptionsFree(o);
#else
    use_global_handlers(msgs_.get());
    t_ = TIFFClientOpen(name_.c_str(), "rm", mem_.get(), mem_read, mem_write, mem_seek, mem_close,
                        mem_size, mem_map, mem_unmap);
#endif
    if (t_ == nullptr) fail("cannot open as TIFF");
  }
  ~tiff_file() {
    if (t_ != nullptr) TIFFClose(t_);
#if TIFFLIB_VERSION < 20221213
    g_messages = nullptr;
#endif
  }
  tiff_file(const tiff_file&) = delete;
  tiff_file& operator=(const tiff_file&) = delete;

  [[nodiscard]] TIFF* get() const noexcept { return t_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Whether libtiff has reported an error on this handle (some calls fail only through it).
  [[nodiscard]] bool had_error() const noexcept { return !msgs_->first_error.empty(); }

  [[noreturn]] void fail(const std::string& what) const {
    std::string m = what;
    if (!msgs_->first_error.empty()) m += " (" + msgs_->first_error + ")";
    VOX_IO_FAIL(op_, name_, m);
  }

  /// Flushes and closes; throws on failure.
  void close() {
    TIFF* t = std::exchange(t_, nullptr);
    const bool ok = TIFFFlush(t) != 0;
    TIFFClose(t);
    if (!ok) fail("cannot write the TIFF file");
  }

 private:
#if TIFFLIB_VERSION >= 20221213
  TIFFOpenOptions* options() {
    TIFFOpenOptions* o = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, msgs_.get());
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, msgs_.get());
    return o;
  }
#else
  static void use_global_handlers(tiff_messages* m) {
    static const bool installed = [] {
      TIFFSetErrorHandler(on_error_global);
      TIFFSetWarningHandler(on_warning_global);
      return true;
    }();
    (void)installed;
    g_messages = m;
  }
#endif

  std::string name_;
  const char* op_;
  std::unique_ptr<tiff_messages> msgs_;
  std::unique_ptr<memory_file> mem_;
  TIFF* t_{nullptr};
};

// ---- pages ---------------------------------------------------------------------------------------

struct page {
  std::uint32_t width{0};
  std::uint32_t height{0};
  dtype type{dtype::uint8};
  std::uint16_t compression{COMPRESSION_NONE};
};

page read_page(const tiff_file& f, std::size_t index) {
  TIFF* t = f.get();
  const std::string where = "page " + std::to_string(index);
  std::uint32_t w = 0, h = 0;
  std::uint16_t bps = 1, fmt = SAMPLEFORMAT_UINT, spp = 1, comp = COMPRESSION_NONE;
  if (TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) != 1 || TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h) != 1)
    f.fail(where + " has no image size");
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
  if (w == 0 || h == 0) f.fail(where + " is empty");
  if (spp != 1)
    f.fail(where + " has " + std::to_string(spp) +
           " samples per pixel; only single-channel (grey) stacks are supported");
  page p;
  p.width = w;
  p.height = h;
  p.compression = comp;
  if (fmt == SAMPLEFORMAT_UINT && bps == 8)
    p.type = dtype::uint8;
  else if (fmt == SAMPLEFORMAT_UINT && bps == 16)
    p.type = dtype::uint16;
  else if (fmt == SAMPLEFORMAT_INT && bps == 16)
    p.type = dtype::int16;
  else if (fmt == SAMPLEFORMAT_INT && bps == 32)
    p.type = dtype::int32;
  else if (fmt == SAMPLEFORMAT_IEEEFP && bps == 32)
    p.type = dtype::float32;
  else if (fmt == SAMPLEFORMAT_IEEEFP && bps == 64)
    p.type = dtype::float64;
  else
    f.fail(where + ": " + std::to_string(bps) + "-bit " +
           (fmt == SAMPLEFORMAT_INT      ? "signed"
            : fmt == SAMPLEFORMAT_IEEEFP ? "float"
                                         : "unsigned") +
           " samples are not supported (8/16-bit unsigned, 16/32-bit signed, 32/64-bit float are)");
  return p;
}

bool parse_triple(std::string_view v, vec3d& out, bool positive) {
  double d[3];
  for (int i = 0; i < 3; ++i) {
    const std::size_t c = v.find(',');
    if ((c == std::string_view::npos) != (i == 2)) return false;
    if (!parse_double(v.substr(0, c), d[i]) || !std::isfinite(d[i])) return false;
    if (positive && !(d[i] > 0)) return false;
    if (c != std::string_view::npos) v.remove_prefix(c + 1);
  }
  out = vec3d{d[0], d[1], d[2]};
  return true;
}

volume_info probe_open(tiff_file& f, const fs::path& path) {
  TIFF* t = f.get();
  const page first = read_page(f, 0);
  std::size_t pages = 1;
  while (TIFFReadDirectory(t) == 1) {
    const page p = read_page(f, pages);
    if (p.width != first.width || p.height != first.height || p.type != first.type)
      f.fail("page " + std::to_string(pages) + " differs from page 0 in size or sample type");
    ++pages;
  }
  // TIFFReadDirectory returns 0 both at the end of the chain and on a damaged directory.
  if (f.had_error())
    f.fail("damaged or truncated directory after page " + std::to_string(pages - 1));
  volume_info info;
  info.format = file_format::tiff;
  info.extent = extent3{first.width, first.height, pages};
  info.type = first.type;
  info.dimension = pages > 1 ? 3 : 2;
  check_extent(info.extent, info.type, "io::probe", f.name());
  info.order = TIFFIsBigEndian(t) ? byte_order::big : byte_order::little;
  info.enc =
      first.compression == COMPRESSION_NONE ? encoding::raw
      : (first.compression == COMPRESSION_ADOBE_DEFLATE || first.compression == COMPRESSION_DEFLATE)
          ? encoding::gzip
          : encoding::other;
  info.header_file = path;
  info.data_file = path;

  if (TIFFSetDirectory(t, 0) != 1) f.fail("cannot return to page 0");
  float xres = 0, yres = 0;
  if (TIFFGetField(t, TIFFTAG_XRESOLUTION, &xres) == 1 && std::isfinite(xres) && xres > 0)
    info.spacing.x = 1.0 / xres;
  if (TIFFGetField(t, TIFFTAG_YRESOLUTION, &yres) == 1 && std::isfinite(yres) && yres > 0)
    info.spacing.y = 1.0 / yres;
  char* desc = nullptr;
  if (TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc) == 1 && desc != nullptr) {
    std::string_view d(desc);
    while (!d.empty()) {
      const std::size_t nl = d.find('\n');
      const std::string_view line = d.substr(0, nl);
      d = nl == std::string_view::npos ? std::string_view{} : d.substr(nl + 1);
      const std::size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view k = trim(line.substr(0, eq));
      const std::string_view v = trim(line.substr(eq + 1));
      double z = 0;
      vec3d tr;
      if (k == "spacing" && parse_double(v, z) && std::isfinite(z) && z > 0)
        info.spacing.z = z;
      else if (k == "voxstream_spacing" && parse_triple(v, tr, true))
        info.spacing = tr;
      else if (k == "voxstream_origin" && parse_triple(v, tr, false))
        info.origin = tr;
    }
  }
  return info;
}

void read_open(tiff_file& f, const volume_info& info, std::size_t z0, std::size_t nz, void* dst,
               std::size_t dst_bytes) {
  TIFF* t = f.get();
  const std::size_t elem = dtype_size(info.type);
  const std::size_t w = info.extent.x;
  const std::size_t h = info.extent.y;
  const std::size_t row = w * elem;
  const std::size_t slice = row * h;
  if (dst_bytes != slice * nz) f.fail("internal: destination size mismatch");
  auto* out = static_cast<unsigned char*>(dst);
  std::vector<unsigned char> buf;
  for (std::size_t z = z0; z < z0 + nz; ++z, out += slice) {
    if (z > std::numeric_limits<tdir_t>::max() || TIFFSetDirectory(t, static_cast<tdir_t>(z)) != 1)
      f.fail("cannot read page " + std::to_string(z) + " (truncated?)");
    const page p = read_page(f, z);
    if (f.had_error()) f.fail("damaged or truncated directory of page " + std::to_string(z));
    if (p.width != w || p.height != h || p.type != info.type)
      f.fail("page " + std::to_string(z) + " differs from page 0 in size or sample type");
    if (TIFFIsTiled(t)) {
      std::uint32_t tw = 0, th = 0;
      if (TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw) != 1 ||
          TIFFGetField(t, TIFFTAG_TILELENGTH, &th) != 1 || tw == 0 || th == 0)
        f.fail("page " + std::to_string(z) + ": bad tile size");
      const std::uint64_t tile_bytes = static_cast<std::uint64_t>(tw) * th * elem;
      if (tile_bytes > std::max<std::uint64_t>(std::uint64_t{1} << 24, slice))
        f.fail("page " + std::to_string(z) + ": implausible tile size " + std::to_string(tw) + "x" +
               std::to_string(th));
      buf.resize(static_cast<std::size_t>(tile_bytes));
      for (std::size_t ty = 0; ty < h; ty += th) {
        for (std::size_t tx = 0; tx < w; tx += tw) {
          const ttile_t tile = TIFFComputeTile(t, static_cast<std::uint32_t>(tx),
                                               static_cast<std::uint32_t>(ty), 0, 0);
          const tmsize_t n =
              TIFFReadEncodedTile(t, tile, buf.data(), static_cast<tmsize_t>(tile_bytes));
          if (n < 0 || static_cast<std::uint64_t>(n) < tile_bytes)
            f.fail("page " + std::to_string(z) + ": cannot decode tile " + std::to_string(tile));
          const std::size_t cols = std::min<std::size_t>(tw, w - tx);
          const std::size_t rows = std::min<std::size_t>(th, h - ty);
          for (std::size_t r = 0; r < rows; ++r)
            std::memcpy(out + (ty + r) * row + tx * elem, buf.data() + r * tw * elem, cols * elem);
        }
      }
    } else {
      std::uint32_t rps = 0;
      TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rps);
      const std::size_t rows_per = rps == 0 || rps > h ? h : rps;
      const std::size_t strips = (h + rows_per - 1) / rows_per;
      if (TIFFNumberOfStrips(t) < strips)
        f.fail("page " + std::to_string(z) + " has fewer strips than its size needs");
      buf.resize(rows_per * row);
      for (std::size_t s = 0; s < strips; ++s) {
        const std::size_t rows = std::min(rows_per, h - s * rows_per);
        const tmsize_t n = TIFFReadEncodedStrip(t, static_cast<std::uint32_t>(s), buf.data(),
                                                static_cast<tmsize_t>(rows * row));
        if (n < 0 || static_cast<std::size_t>(n) < rows * row)
          f.fail("page " + std::to_string(z) + ": cannot decode strip " + std::to_string(s) +
                 " (truncated or corrupt)");
        std::memcpy(out + s * rows_per * row, buf.data(), rows * row);
      }
    }
  }
}

}  // namespace

volume_info probe_tiff(const fs::path& path) {
  tiff_file f(path, "r", "io::probe");
  return probe_open(f, path);
}

void read_tiff(const volume_info& info, std::size_t z0, std::size_t nz, void* dst,
               std::size_t dst_bytes) {
  tiff_file f(info.data_file, "r", "io::read_voxels");
  read_open(f, info, z0, nz, dst, dst_bytes);
}

volume_info probe_tiff_memory(std::string_view bytes, std::string_view name) {
  tiff_file f(bytes, name, "io::probe");
  return probe_open(f, fs::path(std::string(name)));
}

void read_tiff_memory(std::string_view bytes, const volume_info& info, void* dst,
                      std::size_t dst_bytes, std::string_view name) {
  tiff_file f(bytes, name, "io::read_voxels");
  read_open(f, info, 0, info.extent.z, dst, dst_bytes);
}

void write_tiff(const fs::path& path, const void* data, const volume_info& info, bool deflate) {
  constexpr const char* op = "io::write";
  const std::size_t elem = dtype_size(info.type);
  const extent3& e = info.extent;
  if (e.x > std::numeric_limits<std::uint32_t>::max() ||
      e.y > std::numeric_limits<std::uint32_t>::max() || e.z > std::numeric_limits<tdir_t>::max())
    VOX_FAIL(op, "TIFF pages are at most 2^32-1 wide and high; this volume is " + e.str());
  const std::uint64_t bytes = static_cast<std::uint64_t>(e.voxels()) * elem;
  std::string mode = "w";
  mode += info.order == byte_order::big ? "b" : "l";
  if (bytes > (std::uint64_t{1} << 32) - (std::uint64_t{1} << 26)) mode += "8";  // BigTIFF
  tiff_file f(path, mode.c_str(), op);
  TIFF* t = f.get();

  std::uint16_t bps = static_cast<std::uint16_t>(elem * 8);
  std::uint16_t fmt = SAMPLEFORMAT_UINT;
  if (info.type == dtype::int16 || info.type == dtype::int32) fmt = SAMPLEFORMAT_INT;
  if (info.type == dtype::float32 || info.type == dtype::float64) fmt = SAMPLEFORMAT_IEEEFP;
  const std::size_t row = e.x * elem;
  const std::size_t rows_per = std::clamp<std::size_t>((std::size_t{1} << 18) / row, 1, e.y);
  const std::string desc =
      "ImageJ=1.11a\nimages=" + std::to_string(e.z) + "\nslices=" + std::to_string(e.z) +
      "\nspacing=" + format_double(info.spacing.z) +
      "\nloop=false\nvoxstream_spacing=" + format_double(info.spacing.x) + "," +
      format_double(info.spacing.y) + "," + format_double(info.spacing.z) +
      "\nvoxstream_origin=" + format_double(info.origin.x) + "," + format_double(info.origin.y) +
      "," + format_double(info.origin.z) + "\n";
  std::vector<unsigned char> buf(rows_per * row);  // libtiff may swap the buffer in place
  const auto* in = static_cast<const unsigned char*>(data);
  for (std::size_t z = 0; z < e.z; ++z) {
    bool ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(e.x)) &&
              TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(e.y)) &&
              TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bps) &&
              TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1)) &&
              TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, fmt) &&
              TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK) &&
              TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
              TIFFSetField(t, TIFFTAG_COMPRESSION,
                           deflate ? COMPRESSION_ADOBE_DEFLATE : COMPRESSION_NONE) &&
              TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, static_cast<std::uint32_t>(rows_per)) &&
              TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE) &&
              TIFFSetField(t, TIFFTAG_XRESOLUTION, 1.0 / info.spacing.x) &&
              TIFFSetField(t, TIFFTAG_YRESOLUTION, 1.0 / info.spacing.y) &&
              TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, RESUNIT_NONE) &&
              TIFFSetField(t, TIFFTAG_SOFTWARE, "voxstream");
    // Horizontal differencing helps deflate on integers. No floating-point predictor: libtiff
    // 4.5 garbles it in files of the other byte order (found by the round-trip tests).
    if (ok && deflate && fmt != SAMPLEFORMAT_IEEEFP)
      ok = TIFFSetField(t, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL) != 0;
    if (ok && e.z <= 65535)
      ok = TIFFSetField(t, TIFFTAG_PAGENUMBER, static_cast<std::uint16_t>(z),
                        static_cast<std::uint16_t>(e.z)) != 0;
    if (ok && z == 0) ok = TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, desc.c_str()) != 0;
    if (!ok) f.fail("cannot set the tags of page " + std::to_string(z));
    for (std::size_t y = 0, s = 0; y < e.y; y += rows_per, ++s) {
      const std::size_t n = std::min(rows_per, e.y - y) * row;
      std::memcpy(buf.data(), in + (z * e.y + y) * row, n);
      if (TIFFWriteEncodedStrip(t, static_cast<std::uint32_t>(s), buf.data(),
                                static_cast<tmsize_t>(n)) < 0)
        f.fail("cannot write page " + std::to_string(z));
    }
    if (TIFFWriteDirectory(t) != 1) f.fail("cannot write page " + std::to_string(z));
  }
  f.close();
}

}  // namespace vox::io::detail

#endif  // VOXSTREAM_HAVE_TIFF
