// Internal helpers of src/ops/*.cu (elementwise, reduce, histogram, projection). Not installed.
// Included only from .cu files: on the cuda backend they are compiled by nvcc, on the host
// backend by g++ as C++ (the kernels are then OpenMP loops).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/memory/device_buffer.hpp>
#include <voxstream/ops/reduce.hpp>

#include "../../detail/cuda_check.hpp"
#include "../../exec/stream_cache.hpp"
#include "../../memory/detail/counters.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#else
#include <omp.h>
#endif

// Internals of the intensity ops live in their own namespace so that they cannot collide with
// other ops' private helpers of the same name (ODR).
namespace vox::detail::iops {

/// Threads per block of the ops' one-dimensional kernels.
inline constexpr unsigned op_threads = 256;

#if VOX_BACKEND_CUDA
/// Multiprocessors of the current device (queried once per device).
inline std::size_t sm_count(const char* op) {
  static std::mutex mutex;
  static std::vector<int> cache;
  int dev = 0;
  VOX_CUDA_TRY(cudaGetDevice(&dev), op);
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() <= static_cast<std::size_t>(dev)) cache.resize(dev + 1, 0);
  if (cache[dev] == 0)
    VOX_CUDA_TRY(cudaDeviceGetAttribute(&cache[dev], cudaDevAttrMultiProcessorCount, dev), op);
  return static_cast<std::size_t>(cache[dev]);
}
#endif

/// Blocks (CUDA) or chunks (host) for one pass over `n` elements: at least `min_items` per
/// thread, and at most one resident wave of op_threads-thread blocks (so that a slab's launch
/// can fill the device on its own, and several slabs' launches can share it).
inline std::size_t pass_blocks(std::size_t n, std::size_t min_items, const char* op) {
#if VOX_BACKEND_CUDA
  const std::size_t per = std::size_t{op_threads} * min_items;
  const std::size_t wave = sm_count(op) * (2048 / op_threads);
  return std::clamp<std::size_t>((n + per - 1) / per, 1, wave);
#else
  (void)op;
  (void)min_items;
  const std::size_t threads = static_cast<std::size_t>(std::max(omp_get_max_threads(), 1));
  return std::clamp<std::size_t>((n + 32767) / 32768, 1, threads);
#endif
}

/// Stream-ordered zero fill of `bytes` at `p` on `s`.
inline void zero_async(void* p, std::size_t bytes, stream_view s, const char* op) {
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, s.value()), op);
#else
  (void)s;
  (void)op;
  std::memset(p, 0, bytes);
#endif
}

/// Records an event on stream `i` of the set and returns it as a ledger mark.
inline exec::mark record_mark(stream_set& set, std::size_t i, const char* op) {
  return exec::record_mark(set.state(i), op);
}

/// The mark that run_op left for stream `i` among the readers of slice `z` of `l`.
inline exec::mark reader_mark(const exec::slice_ledger& l, std::size_t z, const stream_set& set,
                              std::size_t i) {
  for (const auto& r : l.entry(z).readers)
    if (r.stream == set.state(i)) return r;
  return exec::mark{};
}

/// `bytes` of scratch for work the caller enqueues on `s` alone, inside run_op's enqueue for
/// `s`: the stream's cached scratch (after its zero head) when the cache may be used (the pool
/// is the current resource, no capture on `s`) and `bytes` <= `max_cached`; otherwise a
/// stream-ordered allocation held in `temp`, freed on `s` when `temp` goes. Both backends.
inline void* slab_scratch(stream_view s, std::size_t bytes,
                          std::optional<device_buffer<unsigned char>>& temp, const char* op,
                          std::size_t max_cached = static_cast<std::size_t>(-1)) {
  if (bytes <= max_cached && cache_allowed() && !stream_capturing(s, op))
    return static_cast<unsigned char*>(stream_scratch(s, bytes, op)) + scratch_head_bytes;
  temp.emplace(std::max<std::size_t>(bytes, 1), s);
  return temp->data();
}

/// A private one-slice ledger written by an op: run_op leaves the op's mark on its stream as
/// the writer, which the op then reads without touching any shared ledger.
inline exec::access done_access(exec::slice_ledger& done) {
  exec::access a;
  a.ledger = &done;
  a.ext = extent3{1, 1, 1};
  a.mode = exec::access_mode::write;
  a.whole = true;
  a.data = &done;
  a.elem_bytes = 1;
  return a;
}

/// Scratch device memory for an op, allocated stream-ordered on stream `c` of the set and
/// tracked by a private ledger with one entry per slice of the op's input, so that run_op orders
/// the slab streams that write it after the allocation, and the combine on `c` after them.
/// Destruction makes `c` wait for every other stream that still uses it, then frees on `c`.
template <class T>
class scratch {
 public:
  scratch(stream_set& set, std::size_t c, std::size_t count, std::size_t slices, bool zero,
          const char* op)
      : set_(&set),
        c_(c),
        slices_(slices),
        op_(op),
        buf_(std::max<std::size_t>(count, 1), set.stream(c)),
        ledger_(slices) {
    if (zero) zero_async(buf_.data(), buf_.bytes(), set.stream(c), op);
    ledger_.set_all_written(record_mark(set, c, op));
  }
  ~scratch() {
    try {
      exec::join_all(ledger_, *set_->state(c_), op_);
    } catch (const std::exception& ex) {
      log_error(op_, ex.what());
    }
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;

  [[nodiscard]] T* data() const noexcept { return buf_.data(); }
  /// Access by each slab of the op (slice z of the ledger stands for slice z of the input).
  [[nodiscard]] exec::access slabs(exec::access_mode m) { return make_(m, false); }
  /// Access to all of it by every slab of the op.
  [[nodiscard]] exec::access whole(exec::access_mode m) { return make_(m, true); }
  [[nodiscard]] const exec::slice_ledger& ledger() const noexcept { return ledger_; }
  /// After an op on `c` that joined every other user: forget them (they need no second join).
  void joined(const exec::mark& m) { ledger_.set_all_written(m); }

 private:
  exec::access make_(exec::access_mode m, bool whole) {
    exec::access a;
    a.ledger = &ledger_;
    a.ext = extent3{1, 1, slices_};
    a.mode = m;
    a.halo = 0;
    a.whole = whole;
    a.data = static_cast<const void*>(buf_.data());
    return a;
  }
  stream_set* set_;
  std::size_t c_;
  std::size_t slices_;
  const char* op_;
  device_buffer<T> buf_;
  exec::slice_ledger ledger_;
};

/// The plan of a whole-volume reduction of `slices` slices of `slice_bytes` each: the slab
/// policy's for reading them once (each slab adds its partials and a launch, which the policy
/// already counts).
inline std::vector<slab> reduction_plan(const stream_set& set, std::size_t slices,
                                        std::size_t slice_bytes) {
  exec::work w;
  w.slices = slices;
  w.bytes_per_slice = static_cast<double>(slice_bytes);
  return set.plan(w);
}

/// Index of the slab of `plan` that starts at slice z0 (the plans are sorted by z0).
inline std::size_t slab_index(const std::vector<slab>& plan, std::size_t z0) {
  const auto it = std::lower_bound(plan.begin(), plan.end(), z0,
                                   [](const slab& w, std::size_t z) { return w.z0 < z; });
  return static_cast<std::size_t>(it - plan.begin());
}

// --- elementwise maps ---------------------------------------------------------------------------

#if VOX_BACKEND_CUDA
/// Elements per thread of the map kernels: each thread loads ILP elements, a block's tile of
/// op_threads * ILP contiguous elements, before it computes and stores any (loads in flight).
inline constexpr unsigned map_ilp = 4;

template <class In, class Out, class F>
__global__ void __launch_bounds__(op_threads)
    map1_kernel(const In* in, Out* out, std::size_t n, F f) {
  constexpr std::size_t tile = std::size_t{op_threads} * map_ilp;
  for (std::size_t base = std::size_t{blockIdx.x} * tile + threadIdx.x; base < n;
       base += std::size_t{gridDim.x} * tile) {
    In v[map_ilp];
#pragma unroll
    for (unsigned k = 0; k < map_ilp; ++k) {
      const std::size_t i = base + std::size_t{k} * op_threads;
      v[k] = i < n ? in[i] : In{};
    }
#pragma unroll
    for (unsigned k = 0; k < map_ilp; ++k) {
      const std::size_t i = base + std::size_t{k} * op_threads;
      if (i < n) out[i] = f(v[k]);
    }
  }
}

template <class A, class B, class Out, class F>
__global__ void __launch_bounds__(op_threads)
    map2_kernel(const A* a, const B* b, Out* out, std::size_t n, F f) {
  constexpr std::size_t tile = std::size_t{op_threads} * map_ilp;
  for (std::size_t base = std::size_t{blockIdx.x} * tile + threadIdx.x; base < n;
       base += std::size_t{gridDim.x} * tile) {
    A va[map_ilp];
    B vb[map_ilp];
#pragma unroll
    for (unsigned k = 0; k < map_ilp; ++k) {
      const std::size_t i = base + std::size_t{k} * op_threads;
      va[k] = i < n ? a[i] : A{};
      vb[k] = i < n ? b[i] : B{};
    }
#pragma unroll
    for (unsigned k = 0; k < map_ilp; ++k) {
      const std::size_t i = base + std::size_t{k} * op_threads;
      if (i < n) out[i] = f(va[k], vb[k]);
    }
  }
}

inline unsigned map_blocks(std::size_t n) {
  constexpr std::size_t tile = std::size_t{op_threads} * map_ilp;
  return static_cast<unsigned>(std::clamp<std::size_t>((n + tile - 1) / tile, 1, max_grid_x));
}
#endif

/// out[i] = f(in[i]) for i in [0, n), as one launch on `s`.
template <class In, class Out, class F>
void map1(stream_view s, const In* in, Out* out, std::size_t n, const F& f, const char* op) {
#if VOX_BACKEND_CUDA
  map1_kernel<<<map_blocks(n), op_threads, 0, s.value()>>>(in, out, n, f);
  check_launch(op);
#else
  (void)s;
  (void)op;
  const auto m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) out[i] = f(in[i]);
#endif
  count_launch();
}

/// out[i] = f(a[i], b[i]) for i in [0, n), as one launch on `s`.
template <class A, class B, class Out, class F>
void map2(stream_view s, const A* a, const B* b, Out* out, std::size_t n, const F& f,
          const char* op) {
#if VOX_BACKEND_CUDA
  map2_kernel<<<map_blocks(n), op_threads, 0, s.value()>>>(a, b, out, n, f);
  check_launch(op);
#else
  (void)s;
  (void)op;
  const auto m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) out[i] = f(a[i], b[i]);
#endif
  count_launch();
}

// --- vectorised traversal -----------------------------------------------------------------------

#if VOX_BACKEND_CUDA
/// Visits data[0, n) from thread `tid` of `nthreads`: vis.scalar(x, i) for the elements before
/// the first 16-byte boundary and after the last, vis.vector(v, i0) for 16-byte vectors in
/// between (loaded Unroll at a time, coalesced). data must be aligned to sizeof(T).
template <int Unroll, class T, class Visitor>
__device__ __forceinline__ void visit_range(const T* data, std::size_t n, std::size_t tid,
                                            std::size_t nthreads, Visitor& vis) {
  constexpr std::size_t V = 16 / sizeof(T);
  const std::size_t mis = (reinterpret_cast<std::uintptr_t>(data) & 15u) / sizeof(T);
  const std::size_t head = std::min<std::size_t>(mis == 0 ? 0 : V - mis, n);
  for (std::size_t i = tid; i < head; i += nthreads) vis.scalar(data[i], i);
  const std::size_t nvec = (n - head) / V;
  const auto* vp = reinterpret_cast<const uint4*>(data + head);
  std::size_t j = tid;
  for (; j + (Unroll - 1) * nthreads < nvec; j += Unroll * nthreads) {
    uint4 u[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) u[k] = __ldg(vp + j + k * nthreads);
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      T v[V];
      memcpy(v, &u[k], 16);
      vis.vector(v, head + (j + k * nthreads) * V);
    }
  }
  for (; j < nvec; j += nthreads) {
    const uint4 u = __ldg(vp + j);
    T v[V];
    memcpy(v, &u, 16);
    vis.vector(v, head + j * V);
  }
  for (std::size_t i = head + nvec * V + tid; i < n; i += nthreads) vis.scalar(data[i], i);
}
#endif

}  // namespace vox::detail::iops
