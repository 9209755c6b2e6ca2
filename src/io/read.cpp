// vox::io::read and read_voxels: the voxels of raw, NRRD, MetaImage and TIFF files, whole or by
// slices; decode_payload and attached_payload do the same from memory.
#include <voxstream/io/format.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "detail/byte_stream.hpp"
#include "detail/fail.hpp"
#include "detail/header.hpp"
#include "detail/tiff.hpp"
#include "../detail/voxel_types.hpp"

namespace vox::io {

namespace fs = std::filesystem;

namespace {

/// Reads slices [z0, z0+nz) from `raw` (positioned at the start of the payload stream).
void decode_from(detail::source& raw, const volume_info& info, std::size_t z0, std::size_t nz,
                 void* dst, const char* op, const std::string& path) {
  const std::size_t elem = dtype_size(info.type);
  const std::uint64_t slice = static_cast<std::uint64_t>(info.extent.slice_voxels()) * elem;
  const std::uint64_t total = info.data_bytes();
  const std::size_t want = static_cast<std::size_t>(slice * nz);
  if (info.enc == encoding::raw) {
    detail::skip_bytes(raw, slice * z0, op, path);
    detail::read_exact(raw, dst, want, total, op, path);
  } else if (info.enc == encoding::gzip) {
    detail::inflate_source z(raw, op, path);
    detail::skip_bytes(z, info.decoded_skip + slice * z0, op, path);
    detail::read_exact(z, dst, want, total, op, path);
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
  if (info.order != native_byte_order && elem > 1) detail::swap_bytes(dst, want / elem, elem);
}

}  // namespace

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
  const detail::fd_file f(info.data_file, O_RDONLY, op);
  const std::uint64_t size = f.size(op);
  if (info.data_offset > size)
    VOX_IO_FAIL(op, f.path(), "voxel data truncated: the file ends before the data begins");
  std::uint64_t limit = size - info.data_offset;
  if (info.enc == encoding::gzip && info.compressed_bytes != 0)
    limit = std::min(limit, info.compressed_bytes);
  detail::file_source s(f, info.data_offset, limit, op);
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

#define VOX_IO_INSTANTIATE(T)                                     \
  template volume_info read<T>(const fs::path&, host_volume<T>&); \
  template volume_info read_raw<T>(const fs::path&, const raw_layout&, host_volume<T>&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_IO_INSTANTIATE)
#undef VOX_IO_INSTANTIATE

}  // namespace vox::io
