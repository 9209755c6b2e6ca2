#include <voxstream/io/png.hpp>

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>

#include "detail/atomic_write.hpp"
#include "detail/fail.hpp"
#include "../detail/voxel_types.hpp"

namespace vox::io {

namespace fs = std::filesystem;

png_options png_options::window_level(double window, double level, int bit_depth) {
  VOX_EXPECTS(std::isfinite(window) && window > 0 && std::isfinite(level),
              "io::png_options::window_level", "window must be finite and > 0, level finite");
  png_options o;
  o.bit_depth = bit_depth;
  o.low = level - window / 2;
  o.high = level + window / 2;
  return o;
}

png_options png_options::range(double low, double high, int bit_depth) {
  VOX_EXPECTS(std::isfinite(low) && std::isfinite(high) && low < high, "io::png_options::range",
              "low and high must be finite, low < high");
  png_options o;
  o.bit_depth = bit_depth;
  o.low = low;
  o.high = high;
  return o;
}

png_options png_options::min_max(int bit_depth) {
  png_options o;
  o.bit_depth = bit_depth;
  return o;
}

namespace {

// ---- libpng glue: C-style functions; nothing with a destructor lives across setjmp -------------

struct png_status {
  char message[256];
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<png_status*>(png_get_error_ptr(png));
  if (s != nullptr) std::snprintf(s->message, sizeof s->message, "%s", msg ? msg : "libpng error");
  png_longjmp(png, 1);  // to the setjmp in encode_png/decode_png (returning would print to stderr)
}
void on_png_warning(png_structp, png_const_charp) {}

struct png_writer {
  std::vector<unsigned char>* out;
};

void on_png_write(png_structp png, png_bytep data, png_size_t n) {
  auto* w = static_cast<png_writer*>(png_get_io_ptr(png));
  bool failed = false;
  try {
    w->out->insert(w->out->end(), data, data + n);
  } catch (...) {
    failed = true;
  }
  if (failed) png_error(png, "out of memory");
}
void on_png_flush(png_structp) {}

bool encode_png(std::vector<unsigned char>* out, png_status* status, png_uint_32 width,
                png_uint_32 height, int depth, png_bytepp rows) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, status, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(status->message, sizeof status->message, "png_create_write_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(status->message, sizeof status->message, "png_create_info_struct failed");
    return false;
  }
  png_writer writer{out};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, &writer, on_png_write, on_png_flush);
  png_set_IHDR(png, info, width, height, depth, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

struct png_reader {
  const unsigned char* data;
  std::size_t size;
  std::size_t pos;
};

void on_png_read(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<png_reader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "the file is truncated");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

struct png_decoded {
  png_uint_32 width;
  png_uint_32 height;
  int bit_depth;
  std::vector<unsigned char>* bytes;  // rows, 1 or 2 (big-endian) bytes per sample
  std::vector<png_bytep>* rows;
};

bool decode_png(const unsigned char* data, std::size_t size, png_status* status, png_decoded* out) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, status, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(status->message, sizeof status->message, "png_create_read_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(status->message, sizeof status->message, "png_create_info_struct failed");
    return false;
  }
  png_reader reader{data, size, 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &reader, on_png_read);
  png_read_info(png, info);
  const int color = png_get_color_type(png, info);
  if (color != PNG_COLOR_TYPE_GRAY) png_error(png, "not a grey PNG (colour, palette or alpha)");
  const int depth = png_get_bit_depth(png, info);
  if (depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out->width = png_get_image_width(png, info);
  out->height = png_get_image_height(png, info);
  out->bit_depth = depth < 8 ? 8 : depth;
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  bool failed = false;
  try {
    out->bytes->resize(row_bytes * out->height);
    out->rows->resize(out->height);
    for (std::size_t y = 0; y < out->height; ++y)
      (*out->rows)[y] = out->bytes->data() + y * row_bytes;
  } catch (...) {
    failed = true;
  }
  if (failed) png_error(png, "out of memory");
  png_read_image(png, out->rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// ---- mapping -------------------------------------------------------------------------------------

void expect_png_options(const png_options& o, const char* op) {
  VOX_EXPECTS(o.bit_depth == 8 || o.bit_depth == 16, op, "bit_depth must be 8 or 16");
  const bool auto_range = std::isnan(o.low) && std::isnan(o.high);
  VOX_EXPECTS(auto_range || (std::isfinite(o.low) && std::isfinite(o.high) && o.low < o.high), op,
              "low and high must both be NaN (min/max of the picture) or finite with low < high");
}

template <class T>
void export_png(const fs::path& path, const host_volume<T>& v, std::size_t index, slice_axis axis,
                const png_options& opt, const char* op) {
  VOX_EXPECTS(!v.empty(), op, "the volume is empty");
  expect_png_options(opt, op);
  const extent3& e = v.extent();
  const std::size_t depth_n = axis == slice_axis::x ? e.x : axis == slice_axis::y ? e.y : e.z;
  VOX_EXPECTS(index < depth_n, op,
              "slice " + std::to_string(index) + " is outside the volume's " +
                  std::to_string(depth_n) + " slices along that axis");
  const std::size_t width = axis == slice_axis::x ? e.y : e.x;
  const std::size_t height = axis == slice_axis::z ? e.y : e.z;
  VOX_EXPECTS(width <= 0x7fffffff && height <= 0x7fffffff, op, "picture too large for PNG");
  v.synchronize();
  const auto at = [&](std::size_t c, std::size_t r) -> double {
    switch (axis) {
      case slice_axis::x:
        return static_cast<double>(v(index, c, r));
      case slice_axis::y:
        return static_cast<double>(v(c, index, r));
      case slice_axis::z:
        break;
    }
    return static_cast<double>(v(c, r, index));
  };
  double lo = opt.low, hi = opt.high;
  if (std::isnan(lo)) {
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (std::size_t r = 0; r < height; ++r)
      for (std::size_t c = 0; c < width; ++c) {
        const double d = at(c, r);
        if (!std::isfinite(d)) continue;
        lo = std::min(lo, d);
        hi = std::max(hi, d);
      }
    if (!(lo <= hi)) lo = hi = 0;  // no finite value
  }
  const double maxv = opt.bit_depth == 8 ? 255.0 : 65535.0;
  const double scale = hi > lo ? maxv / (hi - lo) : 0.0;
  const std::size_t bps = opt.bit_depth / 8;
  std::vector<unsigned char> pixels(width * height * bps);
  std::vector<png_bytep> rows(height);
  for (std::size_t r = 0; r < height; ++r) {
    rows[r] = pixels.data() + r * width * bps;
    for (std::size_t c = 0; c < width; ++c) {
      const double d = at(c, r);
      double g = std::isnan(d) ? 0.0 : (d - lo) * scale;
      g = std::floor(std::clamp(g, 0.0, maxv) + 0.5);
      const auto q = static_cast<unsigned>(std::min(g, maxv));
      unsigned char* p = rows[r] + c * bps;
      if (bps == 1) {
        p[0] = static_cast<unsigned char>(q);
      } else {
        p[0] = static_cast<unsigned char>(q >> 8);  // PNG samples are big-endian
        p[1] = static_cast<unsigned char>(q & 0xff);
      }
    }
  }
  std::vector<unsigned char> file;
  png_status status{};
  if (!encode_png(&file, &status, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height),
                  opt.bit_depth, rows.data()))
    VOX_IO_FAIL(op, path.string(), std::string("PNG encoding failed: ") + status.message);
  detail::write_file_atomically(
      path, std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), op);
}

}  // namespace

template <class T>
void write_png(const fs::path& path, const host_volume<T>& v, std::size_t index, slice_axis axis,
               const png_options& opt) {
  export_png(path, v, index, axis, opt, "io::write_png");
}

template <class T>
void write_png(const fs::path& path, const host_volume<T>& image, const png_options& opt) {
  constexpr const char* op = "io::write_png";
  VOX_EXPECTS(image.empty() || image.extent().z == 1, op,
              "a 2D image has extent.z == 1; this volume has " + std::to_string(image.extent().z) +
                  " slices (pass a slice index)");
  export_png(path, image, 0, slice_axis::z, opt, op);
}

png_image read_png(const fs::path& path) {
  constexpr const char* op = "io::read_png";
  const std::string p = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) VOX_IO_FAIL(op, p, "cannot open");
  std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (in.bad()) VOX_IO_FAIL(op, p, "read failed");
  if (data.size() < 8 || png_sig_cmp(data.data(), 0, 8) != 0) VOX_IO_FAIL(op, p, "not a PNG file");
  std::vector<unsigned char> bytes;
  std::vector<png_bytep> rows;
  png_decoded d{0, 0, 0, &bytes, &rows};
  png_status status{};
  if (!decode_png(data.data(), data.size(), &status, &d))
    VOX_IO_FAIL(op, p, std::string("cannot decode: ") + status.message);
  png_image img;
  img.width = d.width;
  img.height = d.height;
  img.bit_depth = d.bit_depth;
  img.pixels.resize(img.width * img.height);
  for (std::size_t i = 0; i < img.pixels.size(); ++i)
    img.pixels[i] = d.bit_depth == 16
                        ? static_cast<std::uint16_t>((bytes[2 * i] << 8) | bytes[2 * i + 1])
                        : bytes[i];
  return img;
}

#define VOX_PNG_INSTANTIATE(T)                                                                \
  template void write_png<T>(const fs::path&, const host_volume<T>&, std::size_t, slice_axis, \
                             const png_options&);                                             \
  template void write_png<T>(const fs::path&, const host_volume<T>&, const png_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_PNG_INSTANTIATE)
#undef VOX_PNG_INSTANTIATE

}  // namespace vox::io
