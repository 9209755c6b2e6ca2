// The file formats: their names, the extensions that stand for them, write options.
#include <voxstream/io/format.hpp>

#include <optional>
#include <string>

#include "detail/text.hpp"
#include "detail/tiff.hpp"

namespace vox::io {

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

std::optional<file_format> format_from_extension(const fs::path& p) {
  const std::string ext = detail::lower(p.extension().string());
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

}  // namespace vox::io
