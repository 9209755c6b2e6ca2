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
std::atomic<int> capacity_override{0};  // 0: automatic
std::atomic<bool> deferred_roots{false};
std::atomic<int> window_override{0};  // 0: automatic, -1: off
std::atomic<bool> staged_windows{true};
std::atomic<std::size_t> pool_override{0};  // 0: automatic
/// The windowed passes' search limit (distance along the column, in voxels) when automatic: a
/// tile of 32 columns with a voxel whose search would go further takes the envelope instead, so
/// the windowed kernel spends at most about 2 * 32 loads a voxel on a tile it gives up.
constexpr int window_reach = 32;
}  // namespace

void force_stack_capacity(int entries) noexcept { capacity_override.store(std::max(entries, 0)); }
void defer_square_roots(bool on) noexcept { deferred_roots.store(on); }
void force_window(int reach) noexcept { window_override.store(std::max(reach, -1)); }
void stage_windows(bool on) noexcept { staged_windows.store(on); }
void force_pool_bytes(std::size_t bytes) noexcept { pool_override.store(bytes); }

/// The windowed passes' search limit from now on; 0: no windowed pass.
int window_limit() {
  const int forced = window_override.load(std::memory_order_relaxed);
  return forced < 0 ? 0 : forced > 0 ? forced : window_reach;
}

/// Entries of the bounded stack of a column pass over columns of `n` voxels with entries of
/// `entry` bytes, automatically `block_bytes` of shared memory per block of 128 columns; 0:
/// unbounded (host backend, no override).
int stack_capacity(std::size_t n, std::size_t entry, std::size_t block_bytes) {
  const int forced = capacity_override.load();
#if VOX_BACKEND_CUDA
  const std::size_t automatic = block_bytes / (std::size_t{col_block} * entry);
  const std::size_t most = 48 * 1024 / (std::size_t{col_block} * entry);
  const std::size_t cap =
      forced > 0 ? std::min<std::size_t>(static_cast<std::size_t>(forced), most) : automatic;
  return static_cast<int>(std::max<std::size_t>(std::min(cap, n), 1));
#else
  (void)entry;
  (void)block_bytes;
  return forced > 0 ? static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(forced), n))
                    : 0;
#endif
}

/// True when the sampling is isotropic and scipy's squared distances are exact in double for
/// every offset in the volume (sampling m 2^e with an odd m <= 1024, extents <= 32767: each
/// s * d has at most 25 significant bits, so every product and sum is exact, and equals
/// s^2 (dz^2 + dy^2 + dx^2)): the argmin over sites, ties included, is then the one of unit
/// spacing in integers, and the distance sqrt(s^2 D) with an integer D.
bool exact_sampling(const vec3d& s, const extent3& e) {
  if (!(s.x == s.y && s.y == s.z)) return false;
  if (std::max({e.x, e.y, e.z}) > 32767) return false;
  int ex = 0;
  const double f = std::frexp(s.x, &ex);
  if (ex < -400 || ex > 400) return false;  // far from underflow and overflow
  auto m = static_cast<std::uint64_t>(std::ldexp(f, 53));
  while (m != 0 && m % 2 == 0) m /= 2;
  return m != 0 && m <= 1024;
}

template <class T, class R, class W, class Ar>
void run(stream_set& streams, const volume<T>& mask, volume<R>& out, const geom& g, const Ar& ay,
         const Ar& az, volume<std::int32_t>* ix, volume<std::int32_t>* iy,
         volume<std::int32_t>* iz, const char* op) {
  const extent3 e = mask.extent();
  const std::size_t voxels = e.voxels();
  const std::size_t c = streams.plan(e.z).front().stream;
  // Passes 1 and 2 per slab: about three copies' worth of traffic, and compute.
  const std::vector<slab> plan = streams.plan(exec::work_of({read(mask), write(out)}, op, 3.0));

  // Pass 2 writes its words to b; pass 1 writes its words to out's storage where they fit there
  // (pass 3 overwrites it), to a scratch buffer otherwise. Pass 2's overflowing columns keep
  // their stacks in a (dead after pass 2).
  iops::scratch<W> b(streams, c, voxels, e.z, false, op);
  const bool a_in_out = sizeof(R) >= sizeof(W);
  std::optional<iops::scratch<W>> a_own;
  if (!a_in_out) a_own.emplace(streams, c, voxels, e.z, false, op);
  W* a = a_in_out ? reinterpret_cast<W*>(out.data()) : a_own->data();
  // Shared memory per block of 128 columns, and so blocks per multiprocessor (227 KiB; 1 KiB
  // more per block): pass 2 (32 to 40 registers; __launch_bounds__ for 12 blocks) 16 KiB, 12
  // blocks (48 warps; 32 entries of 4 bytes); pass 3 (56 registers at most:
  // __launch_bounds__ for 9 blocks) 24 KiB, 9 blocks (36 warps; 24 entries of 8 bytes). Not
  // yet tuned on a GPU.
  const int cap_y = stack_capacity(e.y, sizeof(W), 16 * 1024);
  const int cap_z = stack_capacity(e.z, sizeof(z_entry<W>), 24 * 1024);
  // The windowed passes (window_search, a thread per voxel) and, for the tiles of 32 columns
  // they give up, the envelope: a flag per tile, pass 2's (z, x / 32), then pass 3's
  // (y, x / 32).
  const int reach = window_limit();
  const auto xblocks = static_cast<std::size_t>(x_tiles(g.nx));
  std::optional<iops::scratch<unsigned char>> yflags, zflags;
  if (reach > 0) {
    yflags.emplace(streams, c, e.z * xblocks, e.z, false, op);
    zflags.emplace(streams, c, e.y * xblocks, e.z, false, op);
  }
#if VOX_BACKEND_CUDA
  // The staged windowed kernels where their shared memory (and the static flag beside it) fits
  // the default 48 KiB.
  const bool staged = staged_windows.load(std::memory_order_relaxed) &&
                      stage_bytes<W>(reach) + 16 <= (std::size_t{48} << 10);
#endif
  unsigned char* yf = reach > 0 ? yflags->data() : nullptr;
  unsigned char* zf = reach > 0 ? zflags->data() : nullptr;

#if VOX_BACKEND_CUDA
  // Overflow lists. Pass 2: a count per slab (at the slab's first slice), then the slab's column
  // ids from z0 * nx on. Pass 3: a count, then the ids.
  iops::scratch<unsigned long long> ylist(streams, c, e.z + e.z * e.x, e.z, false, op);
  iops::scratch<unsigned long long> zlist(streams, c, 1 + e.x * e.y, e.z, false, op);
  // Pass 3's overflow stacks: a slot of nz entries per fallback thread, in a pool of half b's
  // bytes (32 MiB at least), 65536 slots at most. Where distances are far (a large solid object)
  // most columns overflow, and the fallback's threads are then all the pass has: 32 MiB gave a
  // 512^3 volume 8192 of them, about two warps per multiprocessor. On an H100 (2026-12-06, the
  // ball of bench_ops --segment) pools of 32, 64, 128 and 256 MiB took 44.4, 33.1, 25.2 and
  // 20.6 ms.
  const std::size_t slot_bytes = e.z * sizeof(z_entry<W>);
  const std::size_t forced_pool = pool_override.load(std::memory_order_relaxed);
  const std::size_t pool_bytes =
      forced_pool > 0 ? forced_pool : std::max(std::size_t{32} << 20, voxels * sizeof(W) / 2);
  std::size_t slots =
      std::clamp<std::size_t>(pool_bytes / slot_bytes, fallback_threads, std::size_t{65536});
  slots = std::min(slots, (e.x * e.y + fallback_threads - 1) / fallback_threads * fallback_threads);
  slots = std::max<std::size_t>(slots / fallback_threads * fallback_threads, fallback_threads);
  iops::scratch<z_entry<W>> pool(streams, c, slots * e.z, e.z, false, op);
#endif

  const T* src = mask.data();
  W* bw = b.data();
  {
    std::vector<exec::access> acc{read(mask), b.slabs(exec::access_mode::write)};
    acc.push_back(a_in_out ? exec::access(write(out)) : a_own->slabs(exec::access_mode::write));
#if VOX_BACKEND_CUDA
    acc.push_back(ylist.slabs(exec::access_mode::write));
#endif
    if (reach > 0) acc.push_back(yflags->slabs(exec::access_mode::write));
    exec::run_op(streams, op, plan, acc, [&](stream_view s, const slab& w) {
      const idx r0 = static_cast<idx>(w.z0) * g.ny, r1 = static_cast<idx>(w.z1) * g.ny;
      // The slab's tile flags (indexed by z * xblocks + x / 32) start clear.
      if (reach > 0) iops::zero_async(yf + w.z0 * xblocks, w.depth() * xblocks, s, op);
#if VOX_BACKEND_CUDA
      const std::size_t wave = iops::sm_count(op) * (2048 / row_threads) * 4;
      const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>(
          static_cast<std::size_t>(r1 - r0 + row_threads / 32 - 1) / (row_threads / 32), 1, wave));
      edt_rows_kernel<T, W><<<blocks, row_threads, 0, s.value()>>>(src, a, g.nx, r0, r1);
      check_launch(op);
      if (reach > 0 && staged) {
        const dim3 wgrid(static_cast<unsigned>(xblocks),
                         static_cast<unsigned>(std::min<std::size_t>(
                             (e.y + stage_span - 1) / stage_span, max_grid_yz)),
                         static_cast<unsigned>(std::min<std::size_t>(w.depth(), max_grid_yz)));
        edt_y_stage_kernel<W, Ar>
            <<<wgrid, dim3(col_threads, stage_warps, 1), stage_bytes<W>(reach), s.value()>>>(
                a, bw, g, ay, reach, static_cast<idx>(w.z0), static_cast<idx>(w.z1), yf);
        check_launch(op);
      } else if (reach > 0) {
        const dim3 wgrid(static_cast<unsigned>(xblocks),
                         static_cast<unsigned>(std::min<std::size_t>(
                             (e.y + window_rows - 1) / window_rows, max_grid_yz)),
                         static_cast<unsigned>(std::min<std::size_t>(w.depth(), max_grid_yz)));
        edt_y_window_kernel<W, Ar><<<wgrid, dim3(col_threads, window_rows, 1), 0, s.value()>>>(
            a, bw, g, ay, reach, static_cast<idx>(w.z0), static_cast<idx>(w.z1), yf);
        check_launch(op);
      }
      unsigned long long* count = ylist.data() + w.z0;
      unsigned long long* ids = ylist.data() + e.z + w.z0 * e.x;
      iops::zero_async(count, sizeof(unsigned long long), s, op);
      const dim3 grid(static_cast<unsigned>((e.x + col_threads - 1) / col_threads),
                      static_cast<unsigned>(std::min<std::size_t>(
                          (w.depth() + col_rows - 1) / col_rows, max_grid_yz)),
                      1);
      const std::size_t smem = std::size_t{col_block} * static_cast<std::size_t>(cap_y) * sizeof(W);
      edt_y_kernel<W, Ar><<<grid, dim3(col_threads, col_rows, 1), smem, s.value()>>>(
          a, bw, g, ay, cap_y, static_cast<idx>(w.z0), static_cast<idx>(w.z1), count, ids, yf);
      check_launch(op);
      const auto fb = static_cast<unsigned>(std::clamp<std::size_t>(
          (w.depth() * e.x + fallback_threads - 1) / fallback_threads, 1, iops::sm_count(op) * 8));
      edt_y_fallback_kernel<W, Ar><<<fb, fallback_threads, 0, s.value()>>>(
          a, bw, g, ay, static_cast<idx>(w.z0), count, ids);
      check_launch(op);
#else
      (void)s;
      host_rows<T, W>(src, a, g.nx, r0, r1);
      if (reach > 0)
        host_y_window<W, Ar>(a, bw, g, ay, reach, static_cast<idx>(w.z0), static_cast<idx>(w.z1),
                             yf);
      host_y<W, Ar>(a, bw, g, ay, cap_y, static_cast<idx>(w.z0), static_cast<idx>(w.z1), yf);
#endif
    });
  }

  // Pass 3 needs whole columns along z: one launch on c, after the ledger has joined the slab
  // streams that wrote b (and, deferring its square roots, one more for them).
  R* dst = out.data();
  const bool defer = deferred_roots.load(std::memory_order_relaxed);
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
  acc.push_back(zlist.slabs(exec::access_mode::write));
  acc.push_back(pool.slabs(exec::access_mode::write));
#endif
  if (reach > 0) acc.push_back(zflags->slabs(exec::access_mode::write));
  exec::run_op(streams, op, {slab{c, 0, e.z}}, acc, [&](stream_view s, const slab&) {
    if (reach > 0) iops::zero_async(zf, e.y * xblocks, s, op);
#if VOX_BACKEND_CUDA
    unsigned long long* count = zlist.data();
    iops::zero_async(count, sizeof(unsigned long long), s, op);
    const dim3 grid(static_cast<unsigned>((e.x + col_threads - 1) / col_threads),
                    static_cast<unsigned>(
                        std::min<std::size_t>((e.y + col_rows - 1) / col_rows, max_grid_yz)),
                    1);
    const std::size_t smem =
        std::size_t{col_block} * static_cast<std::size_t>(cap_z) * sizeof(z_entry<W>);
    auto pass3 = [&](auto defer) {
      constexpr bool D = decltype(defer)::value;
      if (reach > 0 && staged) {
        const dim3 wgrid(static_cast<unsigned>(xblocks),
                         static_cast<unsigned>(std::min<std::size_t>(
                             (e.z + stage_span - 1) / stage_span, max_grid_yz)),
                         static_cast<unsigned>(std::min<std::size_t>(e.y, max_grid_yz)));
        edt_z_stage_kernel<W, R, Ar, D>
            <<<wgrid, dim3(col_threads, stage_warps, 1), stage_bytes<W>(reach), s.value()>>>(
                bw, dst, px, pyi, pzi, g, az, reach, zf);
        check_launch(op);
      } else if (reach > 0) {
        const dim3 wgrid(static_cast<unsigned>(xblocks),
                         static_cast<unsigned>(std::min<std::size_t>(
                             (e.z + window_rows - 1) / window_rows, max_grid_yz)),
                         static_cast<unsigned>(std::min<std::size_t>(e.y, max_grid_yz)));
        edt_z_window_kernel<W, R, Ar, D>
            <<<wgrid, dim3(col_threads, window_rows, 1), 0, s.value()>>>(bw, dst, px, pyi, pzi, g,
                                                                         az, reach, zf);
        check_launch(op);
      }
      edt_z_kernel<W, R, Ar, D><<<grid, dim3(col_threads, col_rows, 1), smem, s.value()>>>(
          bw, dst, px, pyi, pzi, g, az, cap_z, count, count + 1, zf);
      check_launch(op);
      edt_z_fallback_kernel<W, R, Ar, D>
          <<<static_cast<unsigned>(slots / fallback_threads), fallback_threads, 0, s.value()>>>(
              bw, dst, px, pyi, pzi, g, az, pool.data(), count, count + 1);
      check_launch(op);
    };
    if constexpr (std::is_same<Ar, exact_arith>::value) {
      if (defer) {
        pass3(std::true_type{});
        edt_finish_kernel<R><<<static_cast<unsigned>(iops::pass_blocks(voxels, 4, op)),
                               iops::op_threads, 0, s.value()>>>(dst, voxels, az.ss);
        check_launch(op);
        return;
      }
    }
    pass3(std::false_type{});
#else
    (void)s;
    if constexpr (std::is_same<Ar, exact_arith>::value) {
      if (defer) {
        if (reach > 0) host_z_window<W, R, Ar, true>(bw, dst, px, pyi, pzi, g, az, reach, zf);
        host_z<W, R, Ar, true>(bw, dst, px, pyi, pzi, g, az, cap_z, zf);
        host_finish<R>(dst, voxels, az.ss);
        return;
      }
    }
    if (reach > 0) host_z_window<W, R, Ar, false>(bw, dst, px, pyi, pzi, g, az, reach, zf);
    host_z<W, R, Ar, false>(bw, dst, px, pyi, pzi, g, az, cap_z, zf);
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
  if (exact_sampling(sampling, e)) {
    const exact_arith ar{sampling.x * sampling.x};
    run<T, R, std::uint32_t>(streams, mask, out, g, ar, ar, ix, iy, iz, op);
  } else {
    const double_arith ay{sampling.x, sampling.y, sampling.y * sampling.y, sampling.y};
    const double_arith az{sampling.x, sampling.y, sampling.z * sampling.z, sampling.z};
    if (fits_word32(e.x, e.y)) {
      run<T, R, std::uint32_t>(streams, mask, out, g, ay, az, ix, iy, iz, op);
    } else {
      run<T, R, std::uint64_t>(streams, mask, out, g, ay, az, ix, iy, iz, op);
    }
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
