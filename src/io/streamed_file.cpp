// Volume files written and read slab by slab, for vox::stream_process (file_sink, file_source):
// streamed_file_writer and sequential_voxel_reader (detail/streamed_file.hpp).
#include "detail/streamed_file.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "detail/atomic_write.hpp"
#include "detail/byte_stream.hpp"
#include "detail/fail.hpp"
#include "detail/metaimage.hpp"
#include "detail/nrrd.hpp"
#include "detail/write.hpp"

namespace vox::io::detail {

namespace fs = std::filesystem;

struct streamed_file_writer::impl {
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
  std::unique_ptr<file_sink> raw_out;
  std::unique_ptr<deflate_sink> zip_out;
  sink* out{nullptr};
  std::uint64_t remaining{0};
};

streamed_file_writer::streamed_file_writer(const fs::path& path, const extent3& e, dtype t,
                                           const write_options& opt) {
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
    VOX_EXPECTS(
        m->data_name != path.filename().string(), op,
        "the detached data file would overwrite the header: rename '" + path.string() + "'");
    data_path = path.parent_path() / m->data_name;
  }
  m->data_tmp = m->staged.reserve(data_path);
  m->file = std::make_unique<fd_file>(m->data_tmp, O_WRONLY | O_TRUNC, op);
  m->raw_out = std::make_unique<file_sink>(*m->file, op);
  if (m->data_name.empty() && target.format != file_format::raw) {
    const std::string h =
        nrrd ? format_nrrd_header(m->info, {}) : format_metaimage_header(m->info, {}, 0);
    m->raw_out->put(h.data(), h.size());
  }
  m->out = m->raw_out.get();
  if (opt.enc == encoding::gzip) {
    // NRRD takes a gzip stream, MetaImage a zlib one (as write() writes them). An attached
    // MetaImage header cannot give CompressedDataSize ahead of the data; it is optional.
    m->zip_out =
        std::make_unique<deflate_sink>(*m->raw_out, opt.compression_level, nrrd, op, path.string());
    m->out = m->zip_out.get();
  }
  impl_ = std::move(m);
}

streamed_file_writer::~streamed_file_writer() = default;

void streamed_file_writer::append(const void* data, std::size_t bytes) {
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

void streamed_file_writer::commit() {
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
                              ? format_nrrd_header(m->info, m->data_name)
                              : format_metaimage_header(m->info, m->data_name, csize);
    m->staged.add(m->path, [&](const fs::path& tmp) { write_bytes(tmp, h, {}, op); });
  }
  m->staged.commit();
}

void streamed_file_writer::discard() noexcept { impl_.reset(); }

std::uint64_t streamed_file_writer::remaining() const noexcept {
  return impl_ ? impl_->remaining : 0;
}

struct sequential_voxel_reader::impl {
  static constexpr const char* op = "file_source";
  volume_info info;
  // The open gzip stream (declared in the order they depend on each other).
  std::unique_ptr<fd_file> file;
  std::unique_ptr<file_source> raw_in;
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
    raw_in = std::make_unique<file_source>(*file, info.data_offset, limit, op);
    zip_in = std::make_unique<inflate_source>(*raw_in, op, file->path());
    skip_bytes(*zip_in, info.decoded_skip, op, file->path());
    pos = 0;
  }
};

sequential_voxel_reader::sequential_voxel_reader(volume_info info)
    : impl_(std::make_unique<impl>()) {
  impl_->info = std::move(info);
}

sequential_voxel_reader::~sequential_voxel_reader() = default;

void sequential_voxel_reader::read(std::size_t z0, std::size_t nz, void* dst,
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

}  // namespace vox::io::detail
