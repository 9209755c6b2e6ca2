#include <voxstream/ops/distance.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/volume/access.hpp>

#include "detail/common.cuh"
#include "detail/distance.hpp"
#include "detail/distance_kernels.cuh"
#include "../detail/voxel_types.hpp"

namespace vox {

namespace detail::edt {

namespace {
std::atomic<int> stack_override{0};  // 0: automatic, 1: shared, 2: global
}  // namespace

void force_stack_place(int mode) noexcept { stack_override.store(mode); }

/// Largest shared-memory stack block (32 columns of 4-byte entries): columns up to 512 voxels,
/// three blocks per multiprocessor on an H200. Longer columns keep their stacks in a global
/// buffer instead (more columns in flight, at the cost of the stack's traffic through L2).
/// Not yet tuned on a GPU.
inline constexpr std::size_t smem_stack_bytes = 64 * 1024;
/// ... and the most that force_stack_place(1) puts there (below sm_90's 227 KiB per block).
inline constexpr std::size_t smem_stack_forced_max = 200 * 1024;

/// Where a column pass over columns of `n` voxels keeps its stacks.
stack_place place_for(std::size_t n) {
  if (!fits_stack32(n)) return stack_place::global;
  const int forced = stack_override.load();
  if (forced == 1 && std::size_t{32} * n * sizeof(std::uint32_t) <= smem_stack_forced_max)
    return stack_place::shared;
  if (forced == 2) return stack_place::global;
  return std::size_t{32} * n * sizeof(std::uint32_t) <= smem_stack_bytes ? stack_place::shared
                                                                          : stack_place::global;
}

#if VOX_BACKEND_CUDA
/// Calls go(S{}, place constant) for the stack of a column pass over columns of `n` voxels.
template <class Go>
void with_stack(std::size_t n, stack_place place, Go&& go) {
  using shared_t = std::integral_constant<stack_place, stack_place::shared>;
  using global_t = std::integral_constant<stack_place, stack_place::global>;
  if (!fits_stack32(n)) {
    go(std::uint64_t{}, global_t{});
  } else if (place == stack_place::shared) {
    go(std::uint32_t{}, shared_t{});
  } else {
    go(std::uint32_t{}, global_t{});
  }
}

/// Dynamic shared memory of a column kernel `k` over columns of `n` voxels.
template <class K>
std::size_t stack_smem(K* k, std::size_t n, stack_place place, const char* op) {
  if (place != stack_place::shared) return 0;
  const std::size_t bytes = std::size_t{col_threads} * n * sizeof(std::uint32_t);
  if (bytes > 48 * 1024)
    VOX_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)),
                 op);
  return bytes;
}
#endif

template <class T, class R, class W>
void run(stream_set& streams, const volume<T>& mask, volume<R>& out, const geom& g,
         volume<std::int32_t>* ix, volume<std::int32_t>* iy, volume<std::int32_t>* iz,
         const char* op) {
  const extent3 e = mask.extent();
  const std::size_t voxels = e.voxels();
  const std::size_t c = streams.plan(e.z).front().stream;
  // Passes 1 and 2 per slab: about three copies' worth of traffic, and compute.
  const std::vector<slab> plan = streams.plan(exec::work_of({read(mask), write(out)}, op, 3.0));

  // Pass 2 writes its words to b; pass 1 writes its words to out's storage where they fit there
  // (pass 3 overwrites it), to a scratch buffer otherwise.
  iops::scratch<W> b(streams, c, voxels, e.z, false, op);
  const bool a_in_out = sizeof(R) >= sizeof(W);
  std::optional<iops::scratch<W>> a_own;
  if (!a_in_out) a_own.emplace(streams, c, voxels, e.z, false, op);
  W* a = a_in_out ? reinterpret_cast<W*>(out.data()) : a_own->data();

  const stack_place py = place_for(e.y), pz = place_for(e.z);
#if VOX_BACKEND_CUDA
  const bool need_global = py == stack_place::global || pz == stack_place::global;
  const std::size_t entry = fits_stack32(std::max(e.y, e.z)) ? 4 : 8;
  std::optional<iops::scratch<unsigned char>> gstack;
  if (need_global) gstack.emplace(streams, c, voxels * entry, e.z, false, op);
  unsigned char* gs = need_global ? gstack->data() : nullptr;
#else
  (void)py;
  (void)pz;
#endif

  const T* src = mask.data();
  W* bw = b.data();
  {
    std::vector<exec::access> acc{read(mask), b.slabs(exec::access_mode::write)};
    acc.push_back(a_in_out ? exec::access(write(out)) : a_own->slabs(exec::access_mode::write));
#if VOX_BACKEND_CUDA
    if (py == stack_place::global) acc.push_back(gstack->slabs(exec::access_mode::write));
#endif
    exec::run_op(streams, op, plan, acc, [&](stream_view s, const slab& w) {
      const idx r0 = static_cast<idx>(w.z0) * g.ny, r1 = static_cast<idx>(w.z1) * g.ny;
#if VOX_BACKEND_CUDA
      const std::size_t wave = iops::sm_count(op) * (2048 / row_threads) * 4;
      const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>(
          static_cast<std::size_t>(r1 - r0 + row_threads / 32 - 1) / (row_threads / 32), 1, wave));
      edt_rows_kernel<T, W><<<blocks, row_threads, 0, s.value()>>>(src, a, g.nx, r0, r1);
      check_launch(op);
      with_stack(e.y, py, [&](auto s_tag, auto p_tag) {
        using S = decltype(s_tag);
        constexpr stack_place P = decltype(p_tag)::value;
        auto* k = edt_y_kernel<W, S, P>;
        const std::size_t smem = stack_smem(k, e.y, P, op);
        constexpr unsigned rows = col_rows(P);
        const dim3 grid(static_cast<unsigned>((e.x + col_threads - 1) / col_threads),
                        static_cast<unsigned>(
                            std::min<std::size_t>((w.depth() + rows - 1) / rows, max_grid_yz)),
                        1);
        k<<<grid, dim3(col_threads, rows, 1), smem, s.value()>>>(a, bw, reinterpret_cast<S*>(gs), g,
                                                  static_cast<idx>(w.z0),
                                                  static_cast<idx>(w.z1));
        check_launch(op);
      });
#else
      (void)s;
      host_rows<T, W>(src, a, g.nx, r0, r1);
      host_y<W>(a, bw, g, static_cast<idx>(w.z0), static_cast<idx>(w.z1));
#endif
    });
  }

  // Pass 3 needs whole columns along z: one launch on c, after the ledger has joined the slab
  // streams that wrote b.
  R* dst = out.data();
  std::int32_t* px = ix != nullptr ? ix->data() : nullptr;
  std::int32_t* pyi = iy != nullptr ? iy->data() : nullptr;
  std::int32_t* pzi = iz != nullptr ? iz->data() : nullptr;
  std::vector<exec::access> acc{b.slabs(exec::access_mode::read), write(out)};
  if (ix != nullptr) {
    acc.push_back(write(*ix));
    acc.push_back(write(*iy));
    acc.push_back(write(*iz));
  }
#if VOX_BACKEND_CUDA
  if (pz == stack_place::global) acc.push_back(gstack->slabs(exec::access_mode::write));
#endif
  exec::run_op(streams, op, {slab{c, 0, e.z}}, acc, [&](stream_view s, const slab&) {
#if VOX_BACKEND_CUDA
    with_stack(e.z, pz, [&](auto s_tag, auto p_tag) {
      using S = decltype(s_tag);
      constexpr stack_place P = decltype(p_tag)::value;
      auto* k = edt_z_kernel<W, S, P, R>;
      const std::size_t smem = stack_smem(k, e.z, P, op);
      constexpr unsigned rows = col_rows(P);
      const dim3 grid(static_cast<unsigned>((e.x + col_threads - 1) / col_threads),
                      static_cast<unsigned>(std::min<std::size_t>((e.y + rows - 1) / rows, max_grid_yz)),
                      1);
      k<<<grid, dim3(col_threads, rows, 1), smem, s.value()>>>(bw, dst, px, pyi, pzi,
                                                              reinterpret_cast<S*>(gs), g);
      check_launch(op);
    });
#else
    (void)s;
    host_z<W, R>(bw, dst, px, pyi, pzi, g);
#endif
  });
}

template <class T, class R>
void edt(stream_set& streams, const volume<T>& mask, volume<R>& out, const vec3d& sampling,
         volume<std::int32_t>* ix, volume<std::int32_t>* iy, volume<std::int32_t>* iz) {
  static_assert(std::is_floating_point<R>::value,
                "distance_transform_edt: float or double output");
  const char* op = "distance_transform_edt";
  VOX_EXPECTS(!mask.empty(), op, "mask volume is empty");
  VOX_EXPECTS(!out.empty(), op, "output volume is empty");
  const extent3 e = mask.extent();
  VOX_EXPECTS(out.extent() == e, op,
              "output extent " + out.extent().str() + " differs from the mask's " + e.str());
  constexpr std::size_t max_axis = 0x7fffffff;
  VOX_EXPECTS(e.x <= max_axis && e.y <= max_axis && e.z <= max_axis, op,
              "extent " + e.str() + " exceeds 2^31 - 1 voxels along an axis");
  const double sv[3] = {sampling.x, sampling.y, sampling.z};
  for (int i = 0; i < 3; ++i)
    VOX_EXPECTS(std::isfinite(sv[i]) && sv[i] > 0.0, op,
                std::string("sampling along ") + "xyz"[i] + " must be positive and finite, not " +
                    std::to_string(sv[i]));
  std::vector<const void*> storage{static_cast<const void*>(mask.data()),
                                   static_cast<const void*>(out.data())};
  if (ix != nullptr) {
    const char* names[3] = {"ix", "iy", "iz"};
    volume<std::int32_t>* v[3] = {ix, iy, iz};
    for (int i = 0; i < 3; ++i) {
      VOX_EXPECTS(!v[i]->empty(), op, std::string("index volume ") + names[i] + " is empty");
      VOX_EXPECTS(v[i]->extent() == e, op,
                  std::string("index volume ") + names[i] + " extent " + v[i]->extent().str() +
                      " differs from the mask's " + e.str());
      storage.push_back(static_cast<const void*>(v[i]->data()));
    }
  }
  for (std::size_t i = 0; i < storage.size(); ++i)
    for (std::size_t j = i + 1; j < storage.size(); ++j)
      VOX_EXPECTS(storage[i] != storage[j], op,
                  "the mask, the output and the index volumes must be distinct volumes");

  const geom g{static_cast<idx>(e.x), static_cast<idx>(e.y), static_cast<idx>(e.z),
               sampling.x,            sampling.y,            sampling.z};
  if (fits_word32(e.x, e.y)) {
    run<T, R, std::uint32_t>(streams, mask, out, g, ix, iy, iz, op);
  } else {
    run<T, R, std::uint64_t>(streams, mask, out, g, ix, iy, iz, op);
  }
}

}  // namespace detail::edt

template <class T, class R>
void distance_transform_edt(stream_set& streams, const volume<T>& mask, volume<R>& out) {
  detail::edt::edt<T, R>(streams, mask, out, mask.spacing(), nullptr, nullptr, nullptr);
}

template <class T, class R>
void distance_transform_edt(stream_set& streams, const volume<T>& mask, volume<R>& out,
                            vec3d sampling) {
  detail::edt::edt<T, R>(streams, mask, out, sampling, nullptr, nullptr, nullptr);
}

template <class T, class R>
void distance_transform_edt(stream_set& streams, const volume<T>& mask, volume<R>& out,
                            vec3d sampling, volume<std::int32_t>& ix, volume<std::int32_t>& iy,
                            volume<std::int32_t>& iz) {
  detail::edt::edt<T, R>(streams, mask, out, sampling, &ix, &iy, &iz);
}

#define VOX_INSTANTIATE_R(T, R)                                                                  \
  template void distance_transform_edt<T, R>(stream_set&, const volume<T>&, volume<R>&);        \
  template void distance_transform_edt<T, R>(stream_set&, const volume<T>&, volume<R>&, vec3d); \
  template void distance_transform_edt<T, R>(stream_set&, const volume<T>&, volume<R>&, vec3d,  \
                                             volume<std::int32_t>&, volume<std::int32_t>&,      \
                                             volume<std::int32_t>&);
#define VOX_INSTANTIATE(T) VOX_INSTANTIATE_R(T, float) VOX_INSTANTIATE_R(T, double)
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE
#undef VOX_INSTANTIATE_R

}  // namespace vox
