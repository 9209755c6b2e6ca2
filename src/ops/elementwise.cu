#include <voxstream/ops/elementwise.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <thrust/copy.h>
#include <thrust/fill.h>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "detail/reduce.cuh"
#include "../detail/voxel_types.hpp"

namespace vox {

#if VOX_BACKEND_CUDA
namespace {
// Write-only fill with 16-byte stores: thrust::fill_n reached only ~75% of cudaMemsetAsync's
// write rate on an H200. The range is split into a scalar head up to the first 16-byte boundary,
// a body of uint4 stores of the replicated value, and a scalar tail.
template <class T>
__global__ void fill_kernel(T* first, std::size_t n, T value, std::size_t head, std::size_t nvec) {
  static_assert(16 % sizeof(T) == 0, "voxel size must divide 16");
  constexpr std::size_t per = 16 / sizeof(T);
  union {
    uint4 v;
    T t[per];
  } pattern;
#pragma unroll
  for (std::size_t k = 0; k < per; ++k) pattern.t[k] = value;
  const std::size_t tid = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  uint4* body = reinterpret_cast<uint4*>(first + head);
  for (std::size_t i = tid; i < nvec; i += stride) body[i] = pattern.v;
  const std::size_t tail0 = head + nvec * per;
  if (tid < head) first[tid] = value;
  if (tid < n - tail0) first[tail0 + tid] = value;
}
}  // namespace
#endif

template <class T>
void fill(stream_set& streams, volume<T>& out, T value) {
  VOX_EXPECTS(!out.empty(), "fill", "output volume is empty");
  const std::size_t slice = out.extent().slice_voxels();
  T* base = out.data();
  exec::run_op(streams, "fill", {write(out)},
               [&](stream_view s, const slab& w) {
#if VOX_BACKEND_CUDA
                 T* first = base + w.z0 * slice;
                 const std::size_t n = w.depth() * slice;
                 constexpr std::size_t per = 16 / sizeof(T);
                 const std::size_t misalign = reinterpret_cast<std::uintptr_t>(first) % 16;
                 std::size_t head = misalign == 0 ? 0 : (16 - misalign) / sizeof(T);
                 if (head > n) head = n;
                 const std::size_t nvec = (n - head) / per;
                 const std::size_t threads = 256;
                 const std::size_t work = nvec > per ? nvec : per;  // covers head/tail threads
                 const std::size_t blocks =
                     std::min<std::size_t>((work + threads * 4 - 1) / (threads * 4), 1u << 20);
                 fill_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, s.value()>>>(
                     first, n, value, head, nvec);
                 detail::check_launch("fill");
#else
                 thrust::device_ptr<T> first(base + w.z0 * slice);
                 thrust::fill_n(detail::make_policy(s), first, w.depth() * slice, value);
#endif
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
  exec::run_op(streams, "copy", {read(in), write(out)},
               [&](stream_view s, const slab& w) {
                 thrust::device_ptr<const T> first(src + w.z0 * slice);
                 thrust::copy_n(detail::make_policy(s), first, w.depth() * slice,
                                thrust::device_ptr<T>(dst + w.z0 * slice));
               });
}

namespace detail::iops {

// --- functors (host and device) -----------------------------------------------------------------

template <class In, class Out>
struct convert_fn {
  VOX_HD Out operator()(In v) const { return saturate_cast<Out>(v); }
};

enum class arith : std::uint8_t { add, subtract, multiply, divide };

VOX_HD inline double apply(arith op, double a, double b) {
  switch (op) {
    case arith::add:
      return a + b;
    case arith::subtract:
      return a - b;
    case arith::multiply:
      return a * b;
    case arith::divide:
    default:
      return a / b;
  }
}

// Computed in double: exact for + - * of 32-bit integers in range, and for float the double
// result rounds to the correctly rounded float result.
template <class T, arith Op>
struct arith_fn {
  VOX_HD T operator()(T a, T b) const {
    return saturate_cast<T>(apply(Op, static_cast<double>(a), static_cast<double>(b)));
  }
};

template <class T, arith Op>
struct arith_scalar_fn {
  double s;
  VOX_HD T operator()(T a) const { return saturate_cast<T>(apply(Op, static_cast<double>(a), s)); }
};

template <class T>
struct clamp_fn {
  T lo;
  T hi;
  VOX_HD T operator()(T v) const { return v < lo ? lo : (hi < v ? hi : v); }
};

template <class In, class Out>
struct rescale_fn {
  double scale;
  double offset;
  VOX_HD Out operator()(In v) const {
    return saturate_cast<Out>(::fma(static_cast<double>(v), scale, offset));
  }
};

template <class In, class Out>
struct normalize_fn {
  const normalize_params* p;  // device scalar written by the combine
  double lo;
  VOX_HD Out operator()(In v) const {
    return saturate_cast<Out>(::fma(static_cast<double>(v) - p->min, p->scale, lo));
  }
};

template <class T>
struct threshold_fn {
  double t;
  VOX_HD std::uint8_t operator()(T v) const {
    return static_cast<double>(v) > t ? std::uint8_t{1} : std::uint8_t{0};
  }
};

template <class T>
struct range_fn {
  double lo;
  double hi;
  VOX_HD std::uint8_t operator()(T v) const {
    const double d = static_cast<double>(v);
    return (lo <= d && d <= hi) ? std::uint8_t{1} : std::uint8_t{0};
  }
};

// --- drivers ------------------------------------------------------------------------------------

template <class A, class B>
void expect_pair(const volume<A>& in, const volume<B>& out, const char* op) {
  VOX_EXPECTS(!in.empty(), op, "input volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  expect_same_extent(in.extent(), out.extent(), op);
}

static void expect_finite(double v, const char* op, const char* what) {
  VOX_EXPECTS(std::isfinite(v), op, std::string(what) + " must be finite");
}

/// out = f(in) per slab, one launch per slab on its stream. Validate first.
template <class In, class Out, class F>
void unary(stream_set& streams, const volume<In>& in, volume<Out>& out, const F& f,
           const char* op) {
  const std::size_t slice = in.extent().slice_voxels();
  const In* src = in.data();
  Out* dst = out.data();
  exec::run_op(streams, op, {read(in), write(out)},
               [&](stream_view s, const slab& w) {
                 map1(s, src + w.z0 * slice, dst + w.z0 * slice, w.depth() * slice, f, op);
               });
}

template <class T, arith Op>
void binary(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out,
            const char* op) {
  expect_pair(a, out, op);
  VOX_EXPECTS(!b.empty(), op, "second input volume is empty");
  expect_same_extent(a.extent(), b.extent(), op);
  const std::size_t slice = a.extent().slice_voxels();
  const T* pa = a.data();
  const T* pb = b.data();
  T* dst = out.data();
  exec::run_op(streams, op, {read(a), read(b), write(out)},
               [&](stream_view s, const slab& w) {
                 const std::size_t o = w.z0 * slice;
                 map2(s, pa + o, pb + o, dst + o, w.depth() * slice, arith_fn<T, Op>{}, op);
               });
}

template <class T, arith Op>
void scalar(stream_set& streams, const volume<T>& a, double v, volume<T>& out, const char* op) {
  expect_pair(a, out, op);
  expect_finite(v, op, "the scalar");
  unary(streams, a, out, arith_scalar_fn<T, Op>{v}, op);
}

}  // namespace detail::iops

namespace iops = detail::iops;

template <class In, class Out>
void convert(stream_set& streams, const volume<In>& in, volume<Out>& out) {
  iops::expect_pair(in, out, "convert");
  iops::unary(streams, in, out, iops::convert_fn<In, Out>{}, "convert");
}

template <class T>
void add(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out) {
  iops::binary<T, iops::arith::add>(streams, a, b, out, "add");
}
template <class T>
void subtract(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out) {
  iops::binary<T, iops::arith::subtract>(streams, a, b, out, "subtract");
}
template <class T>
void multiply(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out) {
  iops::binary<T, iops::arith::multiply>(streams, a, b, out, "multiply");
}
template <class T>
void divide(stream_set& streams, const volume<T>& a, const volume<T>& b, volume<T>& out) {
  iops::binary<T, iops::arith::divide>(streams, a, b, out, "divide");
}

template <class T>
void add(stream_set& streams, const volume<T>& a, double s, volume<T>& out) {
  iops::scalar<T, iops::arith::add>(streams, a, s, out, "add");
}
template <class T>
void subtract(stream_set& streams, const volume<T>& a, double s, volume<T>& out) {
  iops::scalar<T, iops::arith::subtract>(streams, a, s, out, "subtract");
}
template <class T>
void multiply(stream_set& streams, const volume<T>& a, double s, volume<T>& out) {
  iops::scalar<T, iops::arith::multiply>(streams, a, s, out, "multiply");
}
template <class T>
void divide(stream_set& streams, const volume<T>& a, double s, volume<T>& out) {
  iops::scalar<T, iops::arith::divide>(streams, a, s, out, "divide");
}

template <class T>
void clamp(stream_set& streams, const volume<T>& in, volume<T>& out, T lo, T hi) {
  iops::expect_pair(in, out, "clamp");
  VOX_EXPECTS(lo == lo && hi == hi, "clamp", "the bounds must not be NaN");
  VOX_EXPECTS(!(hi < lo), "clamp", "the lower bound is above the upper bound");
  iops::unary(streams, in, out, iops::clamp_fn<T>{lo, hi}, "clamp");
}

template <class In, class Out>
void rescale(stream_set& streams, const volume<In>& in, volume<Out>& out, double scale,
             double offset) {
  iops::expect_pair(in, out, "rescale");
  iops::expect_finite(scale, "rescale", "scale");
  iops::expect_finite(offset, "rescale", "offset");
  iops::unary(streams, in, out, iops::rescale_fn<In, Out>{scale, offset}, "rescale");
}

template <class In, class Out>
void normalize(stream_set& streams, const volume<In>& in, volume<Out>& out, double lo, double hi) {
  const char* op = "normalize";
  iops::expect_pair(in, out, op);
  iops::expect_finite(lo, op, "lo");
  iops::expect_finite(hi, op, "hi");
  VOX_EXPECTS(lo < hi, op, "the target range [lo, hi] is empty or inverted: lo must be < hi");
  iops::reduce_ctx ctx = iops::whole_ctx(in);
  ctx.p0 = lo;
  ctx.p1 = hi;
  const std::size_t slice = in.extent().slice_voxels();
  const In* src = in.data();
  Out* dst = out.data();
  const std::vector<slab> rplan =
      iops::reduction_plan(streams, in.extent().z, slice * sizeof(In));
  const std::vector<slab> mplan = streams.plan(exec::work_of({read(in), write(out)}, op));
  if (rplan.size() == 1 && mplan.size() == 1 && rplan.front().stream == mplan.front().stream) {
    // One slab for both passes: the fused min/max launch leaves {min, scale} in the stream's
    // scratch, and the rescale after it on the same stream reads them there. Two launches, one
    // event, no allocation once warm.
    const std::size_t n = in.extent().voxels();
    exec::run_op(streams, op, mplan, {read(in), write(out)}, [&](stream_view s, const slab&) {
      const bool cached = detail::cache_allowed() && !detail::stream_capturing(s, op);
      iops::reduce_single<In, iops::normalize_policy<In>>(
          s, src, n, ctx, cached, nullptr,
          [&](const iops::normalize_params* p) {
            iops::map1(s, src, dst, n, iops::normalize_fn<In, Out>{p, lo}, op);
          },
          op);
    });
    return;
  }
  const std::size_t c = rplan.front().stream;
  // Device scalar {min, scale}: written on c by the combine, read by every slab's rescale.
  iops::scratch<iops::normalize_params> params(streams, c, 1, 1, false, op);
  iops::reduce_to<In, iops::normalize_policy<In>>(streams, in, op, ctx, params.data(),
                                                  {params.whole(exec::access_mode::write)});
  const iops::normalize_fn<In, Out> f{params.data(), lo};
  // The rescale's plan is the one of reading in and writing out: the parameters' access (whose
  // voxel size the scratch does not declare) must not make the work unknown, which would give a
  // slab to every stream of the set.
  exec::run_op(streams, op, mplan, {read(in), write(out), params.whole(exec::access_mode::read)},
               [&](stream_view s, const slab& w) {
                 iops::map1(s, src + w.z0 * slice, dst + w.z0 * slice, w.depth() * slice, f, op);
               });
  // ~scratch: c joins the slab streams that read the parameters, then frees them on c.
}

template <class T>
void threshold(stream_set& streams, const volume<T>& in, volume<std::uint8_t>& mask, double t) {
  iops::expect_pair(in, mask, "threshold");
  VOX_EXPECTS(t == t, "threshold", "the threshold must not be NaN");
  iops::unary(streams, in, mask, iops::threshold_fn<T>{t}, "threshold");
}

template <class T>
void threshold_range(stream_set& streams, const volume<T>& in, volume<std::uint8_t>& mask,
                     double lo, double hi) {
  const char* op = "threshold_range";
  iops::expect_pair(in, mask, op);
  VOX_EXPECTS(lo == lo && hi == hi, op, "the bounds must not be NaN");
  VOX_EXPECTS(lo <= hi, op, "the range [lo, hi] is empty: lo > hi");
  iops::unary(streams, in, mask, iops::range_fn<T>{lo, hi}, op);
}

// --- instantiations -----------------------------------------------------------------------------

#define VOX_INSTANTIATE(T)                                                                       \
  template void fill<T>(stream_set&, volume<T>&, T);                                             \
  template void copy<T>(stream_set&, const volume<T>&, volume<T>&);                              \
  template void add<T>(stream_set&, const volume<T>&, const volume<T>&, volume<T>&);             \
  template void subtract<T>(stream_set&, const volume<T>&, const volume<T>&, volume<T>&);        \
  template void multiply<T>(stream_set&, const volume<T>&, const volume<T>&, volume<T>&);        \
  template void divide<T>(stream_set&, const volume<T>&, const volume<T>&, volume<T>&);          \
  template void add<T>(stream_set&, const volume<T>&, double, volume<T>&);                       \
  template void subtract<T>(stream_set&, const volume<T>&, double, volume<T>&);                  \
  template void multiply<T>(stream_set&, const volume<T>&, double, volume<T>&);                  \
  template void divide<T>(stream_set&, const volume<T>&, double, volume<T>&);                    \
  template void clamp<T>(stream_set&, const volume<T>&, volume<T>&, T, T);                       \
  template void threshold<T>(stream_set&, const volume<T>&, volume<std::uint8_t>&, double);      \
  template void threshold_range<T>(stream_set&, const volume<T>&, volume<std::uint8_t>&, double, \
                                   double);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

#define VOX_INSTANTIATE_PAIR(In, Out)                                                           \
  template void convert<In, Out>(stream_set&, const volume<In>&, volume<Out>&);                 \
  template void rescale<In, Out>(stream_set&, const volume<In>&, volume<Out>&, double, double); \
  template void normalize<In, Out>(stream_set&, const volume<In>&, volume<Out>&, double, double);
#define VOX_INSTANTIATE_FROM(In)          \
  VOX_INSTANTIATE_PAIR(In, std::uint8_t)  \
  VOX_INSTANTIATE_PAIR(In, std::uint16_t) \
  VOX_INSTANTIATE_PAIR(In, std::int16_t)  \
  VOX_INSTANTIATE_PAIR(In, std::int32_t)  \
  VOX_INSTANTIATE_PAIR(In, float)         \
  VOX_INSTANTIATE_PAIR(In, double)
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE_FROM)
#undef VOX_INSTANTIATE_FROM
#undef VOX_INSTANTIATE_PAIR

}  // namespace vox
