#include <voxstream/io/transfer.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "../detail/cuda_check.hpp"
#include "../exec/staging.hpp"
#include "../detail/voxel_types.hpp"

namespace vox {

namespace {

enum class direction { to_device, to_host };

void copy_async(void* dst, const void* src, std::size_t bytes, direction d, stream_view s,
                const char* op) {
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes,
                               d == direction::to_device ? cudaMemcpyHostToDevice
                                                         : cudaMemcpyDeviceToHost,
                               s.value()),
               op);
#else
  (void)d;
  (void)s;
  (void)op;
  std::memcpy(dst, src, bytes);
#endif
}

template <class V>
void expect_nonempty(const V& v, const char* op, const char* which) {
  VOX_EXPECTS(!v.empty(), op, std::string(which) + " volume is empty");
}

}  // namespace

/// The slab policy's work of a transfer of `v` over the host link (pageable transfers declare
/// only the device volume's access).
template <class T>
exec::work link_work(const volume<T>& v) {
  exec::work w;
  w.slices = v.extent().z;
  w.bytes_per_slice = static_cast<double>(v.extent().slice_voxels() * sizeof(T));
  w.kind = exec::traffic::link;
  return w;
}

// --- pinned transfers -------------------------------------------------------------------------

template <class T>
void upload(stream_set& streams, const host_volume<T>& src, volume<T>& dst) {
  expect_nonempty(src, "upload", "source");
  expect_nonempty(dst, "upload", "destination");
  expect_same_extent(src.extent(), dst.extent(), "upload");
  const std::size_t slice = dst.extent().slice_voxels();
  T* d = dst.data();
  const T* h = src.data();
  exec::run_op(streams, "upload", {read(src), write(dst)},
               [&](stream_view s, const slab& w) {
                 copy_async(d + w.z0 * slice, h + w.z0 * slice, w.depth() * slice * sizeof(T),
                            direction::to_device, s, "upload");
               });
}

template <class T>
void download(stream_set& streams, const volume<T>& src, host_volume<T>& dst) {
  expect_nonempty(src, "download", "source");
  expect_nonempty(dst, "download", "destination");
  expect_same_extent(src.extent(), dst.extent(), "download");
  const std::size_t slice = src.extent().slice_voxels();
  const T* d = src.data();
  T* h = dst.data();
  exec::run_op(streams, "download", {read(src), write(dst)},
               [&](stream_view s, const slab& w) {
                 copy_async(h + w.z0 * slice, d + w.z0 * slice, w.depth() * slice * sizeof(T),
                            direction::to_host, s, "download");
               });
}

// --- pageable transfers through the staging ring ----------------------------------------------

template <class T>
void upload(stream_set& streams, const T* src, std::size_t count, volume<T>& dst) {
  expect_nonempty(dst, "upload", "destination");
  VOX_EXPECTS(src != nullptr, "upload", "source pointer is null");
  VOX_EXPECTS(count == dst.size(), "upload",
              "source holds " + std::to_string(count) + " voxels but the volume " +
                  dst.extent().str() + " holds " + std::to_string(dst.size()));
  const std::size_t slice = dst.extent().slice_voxels();
  T* d = dst.data();
#if VOX_BACKEND_CUDA
  auto& stage = streams.staging_buffers();
  const std::size_t chunk = std::max<std::size_t>(stage.bytes / sizeof(T), 1) * sizeof(T);
#endif
  exec::run_op(streams, "upload", streams.plan(link_work(dst)), {write(dst)},
               [&](stream_view s, const slab& w) {
                 const auto* from = reinterpret_cast<const unsigned char*>(src + w.z0 * slice);
                 auto* to = reinterpret_cast<unsigned char*>(d + w.z0 * slice);
                 const std::size_t bytes = w.depth() * slice * sizeof(T);
#if VOX_BACKEND_CUDA
                 for (std::size_t off = 0; off < bytes; off += chunk) {
                   const std::size_t n = std::min(chunk, bytes - off);
                   auto& b = stage.acquire("upload");
                   std::memcpy(b.data, from + off, n);
                   copy_async(to + off, b.data, n, direction::to_device, s, "upload");
                   b.done.record(s);
                   b.used = true;
                 }
#else
                 copy_async(to, from, bytes, direction::to_device, s, "upload");
#endif
               });
}

template <class T>
void download(stream_set& streams, const volume<T>& src, T* dst, std::size_t count) {
  expect_nonempty(src, "download", "source");
  VOX_EXPECTS(dst != nullptr, "download", "destination pointer is null");
  VOX_EXPECTS(count == src.size(), "download",
              "destination holds " + std::to_string(count) + " voxels but the volume " +
                  src.extent().str() + " holds " + std::to_string(src.size()));
  const std::size_t slice = src.extent().slice_voxels();
  const T* d = src.data();
#if VOX_BACKEND_CUDA
  auto& stage = streams.staging_buffers();
  const std::size_t chunk = std::max<std::size_t>(stage.bytes / sizeof(T), 1) * sizeof(T);
#endif
  const std::vector<slab> plan = streams.plan(link_work(src));
  exec::run_op(streams, "download", plan, {read(src)},
               [&](stream_view s, const slab& w) {
                 const auto* from = reinterpret_cast<const unsigned char*>(d + w.z0 * slice);
                 auto* to = reinterpret_cast<unsigned char*>(dst + w.z0 * slice);
                 const std::size_t bytes = w.depth() * slice * sizeof(T);
#if VOX_BACKEND_CUDA
                 for (std::size_t off = 0; off < bytes; off += chunk) {
                   const std::size_t n = std::min(chunk, bytes - off);
                   auto& b = stage.acquire("download");
                   copy_async(b.data, from + off, n, direction::to_host, s, "download");
                   b.done.record(s);
                   b.used = true;
                   b.pending_dst = to + off;
                   b.pending_bytes = n;
                 }
                 // The drain (the wait that copies the staged voxels out) runs inside the op,
                 // after the last slab's copies: under the set's lock, so that another thread's
                 // op cannot take a staging buffer between the copies and the drain.
                 if (w == plan.back()) stage.drain("download");
#else
                 copy_async(to, from, bytes, direction::to_host, s, "download");
#endif
               });
}

#define VOX_INSTANTIATE(T)                                                              \
  template void upload<T>(stream_set&, const host_volume<T>&, volume<T>&);             \
  template void download<T>(stream_set&, const volume<T>&, host_volume<T>&);           \
  template void upload<T>(stream_set&, const T*, std::size_t, volume<T>&);             \
  template void download<T>(stream_set&, const volume<T>&, T*, std::size_t);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox
