// vox::io::write: whole volumes to raw, NRRD, MetaImage, TIFF and PNG files, atomically.
#include <voxstream/io/format.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <system_error>

#include <voxstream/io/png.hpp>

#include "detail/atomic_write.hpp"
#include "detail/byte_stream.hpp"
#include "detail/fail.hpp"
#include "detail/metaimage.hpp"
#include "detail/nrrd.hpp"
#include "detail/text.hpp"
#include "detail/tiff.hpp"
#include "detail/write.hpp"
#include "../detail/voxel_types.hpp"

namespace vox::io {

namespace fs = std::filesystem;

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

}  // namespace

namespace detail {

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

std::string detached_name(const fs::path& header, file_format f, encoding enc) {
  std::string stem = header.stem().string();
  if (f == file_format::nrrd) return stem + (enc == encoding::gzip ? ".raw.gz" : ".raw");
  return stem + (enc == encoding::gzip ? ".zraw" : ".raw");
}

void write_bytes(const fs::path& path, std::string_view header,
                 const std::vector<unsigned char>& body, const char* op) {
  fd_file f(path, O_WRONLY | O_TRUNC, op);
  file_sink fs_(f, op);
  fs_.put(header.data(), header.size());
  if (!body.empty()) fs_.put(body.data(), body.size());
  f.close(op);
}

}  // namespace detail

namespace {

/// Writes header + payload to `path` (temporary), compressing the payload when asked.
void write_stream(const fs::path& path, std::string_view header, const void* data,
                  std::size_t bytes, std::size_t elem, const write_options& o, bool gzip_wrapper,
                  const char* op) {
  detail::fd_file f(path, O_WRONLY | O_TRUNC, op);
  detail::file_sink fs_(f, op);
  if (!header.empty()) fs_.put(header.data(), header.size());
  if (o.enc == encoding::gzip) {
    detail::deflate_sink z(fs_, o.compression_level, gzip_wrapper, op, f.path());
    detail::put_voxels(z, data, bytes, elem, o.order);
    z.finish();
  } else {
    detail::put_voxels(fs_, data, bytes, elem, o.order);
  }
  f.close(op);
}

void write_impl(const fs::path& path, const void* data, const extent3& e, dtype t,
                const write_options& o) {
  constexpr const char* op = "io::write";
  const std::string p = path.string();
  const detail::write_target target = detail::target_of(path, e, o, op);
  const file_format f = target.format;
  const bool detached = target.detached;
  const std::size_t elem = dtype_size(t);
  const std::size_t bytes = e.voxels() * elem;
  const volume_info info = detail::written_info(e, t, o, f);

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
            detail::vector_sink vs(body);
            detail::deflate_sink z(vs, o.compression_level, false, op, p);
            detail::put_voxels(z, data, bytes, elem, o.order);
            z.finish();
          }
          const std::string h = detail::format_metaimage_header(info, {}, body.size());
          detail::write_atomically(
              path, [&](const fs::path& tmp) { detail::write_bytes(tmp, h, body, op); }, op);
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
      const std::string dname = detail::detached_name(path, f, o.enc);
      VOX_EXPECTS(dname != path.filename().string(), op,
                  "the detached data file would overwrite the header: rename '" + p + "'");
      const fs::path dpath = path.parent_path() / dname;
      detail::staged_files staged(op);
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
      staged.add(path, [&](const fs::path& tmp) { detail::write_bytes(tmp, h, {}, op); });
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

#define VOX_IO_INSTANTIATE(T) \
  template void write<T>(const fs::path&, const host_volume<T>&, const write_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_IO_INSTANTIATE)
#undef VOX_IO_INSTANTIATE

}  // namespace vox::io
