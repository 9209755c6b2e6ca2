#include <voxstream/ops/elementwise.hpp>

#include <thrust/copy.h>
#include <thrust/fill.h>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/access.hpp>

namespace vox {

template <class T>
void fill(stream_set& streams, volume<T>& out, T value) {
  VOX_EXPECTS(!out.empty(), "fill", "output volume is empty");
  const std::size_t slice = out.extent().slice_voxels();
  T* base = out.data();
  exec::run_op(streams, "fill", streams.plan(out.extent().z), {write(out)},
               [&](stream_view s, const slab& w) {
                 thrust::device_ptr<T> first(base + w.z0 * slice);
                 thrust::fill_n(detail::make_policy(s), first, w.depth() * slice, value);
               });
}

template <class T>
void copy(stream_set& streams, const volume<T>& in, volume<T>& out) {
  VOX_EXPECTS(!in.empty(), "copy", "input volume is empty");
  VOX_EXPECTS(!out.empty(), "copy", "output volume is empty");
  expect_same_extent(in.extent(), out.extent(), "copy");
  const std::size_t slice = in.extent().slice_voxels();
  const T* src = in.data();
  T* dst = out.data();
  exec::run_op(streams, "copy", streams.plan(in.extent().z), {read(in), write(out)},
               [&](stream_view s, const slab& w) {
                 thrust::device_ptr<const T> first(src + w.z0 * slice);
                 thrust::copy_n(detail::make_policy(s), first, w.depth() * slice,
                                thrust::device_ptr<T>(dst + w.z0 * slice));
               });
}

#define VOX_INSTANTIATE(T)                                   \
  template void fill<T>(stream_set&, volume<T>&, T);         \
  template void copy<T>(stream_set&, const volume<T>&, volume<T>&);
VOX_INSTANTIATE(std::uint8_t)
VOX_INSTANTIATE(std::uint16_t)
VOX_INSTANTIATE(std::int16_t)
VOX_INSTANTIATE(std::int32_t)
VOX_INSTANTIATE(float)
VOX_INSTANTIATE(double)
#undef VOX_INSTANTIATE

}  // namespace vox
