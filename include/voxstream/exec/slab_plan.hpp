/// @file slab_plan.hpp
/// @brief The slab vocabulary of the exec layer and the one slab policy of every op.
///
/// An op splits its z-slices into slabs, one launch (or copy) per slab, each slab on a stream of
/// the set. A slab buys overlap with neighbouring work and locality; it costs a launch, an event
/// and a ledger update (about 4 µs of host and device time on an H200), and re-reads its halo.
/// So the number of slabs follows the work, not the number of streams:
///
///   slabs = min(streams, slices / min_depth,
///               1 + max_halo_fraction * slices / (2 * halo),      (halo re-reads bounded)
///               device time of the op / min_slab_us)             (launch cost amortised)
///
/// and at least one. The device time is the op's bytes over the rate of what carries them (the
/// device's memory, or the host link for transfers), times the op's cost factor. When the
/// policy leaves every stream its slab, the plan is the set's mapping (make_plan(slices, N,
/// mapping)); otherwise it is `slabs` contiguous slabs of near-equal depth, slab i on stream
/// i * N / slabs, so that plans of 1, 2, 4, ... slabs nest on the same streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <voxstream/core/z_range.hpp>

namespace vox {

/// @brief How z-slices map to the streams of a set.
enum class slice_mapping : std::uint8_t {
  contiguous,   ///< slab i of near-equal depth on stream i (default: fewest cross-stream edges)
  round_robin,  ///< slice z on stream z mod N
};

/// @brief A contiguous range of slices [z0, z1) assigned to stream `stream` of a set.
struct slab {
  std::size_t stream{0};
  std::size_t z0{0};
  std::size_t z1{0};
  [[nodiscard]] std::size_t depth() const noexcept { return z1 - z0; }
  /// @brief The slab's slices as a z_range.
  [[nodiscard]] z_range range() const noexcept { return {z0, z1}; }
  [[nodiscard]] bool operator==(const slab& o) const noexcept {
    return stream == o.stream && z0 == o.z0 && z1 == o.z1;
  }
};

/// @brief How many slabs an op gets (see the file comment). One per stream set.
struct slab_policy {
  /// Shortest slab worth its own launch, in µs of device time. A slab costs the host about
  /// 4 µs (launch, event record, ledger update; measured on an H200): at 1 ms per slab the
  /// host spends under 0.5% of the device time, an op of the library stays one slab up to 2 ms
  /// of work (so that its host time does not grow with the stream count), and transfers over
  /// the host link, 100 times slower, still spread over a set. 0: no launch bound.
  double min_slab_us{1000.0};
  /// Halo slices re-read by all slabs together, at most this fraction of the op's slices.
  double max_halo_fraction{0.125};
  /// Device memory bandwidth in GB/s; 0: 85% of the device's peak (its memory clock and bus
  /// width), queried once per device.
  double device_gbps{0.0};
  /// Host link (uploads and downloads) in GB/s.
  double link_gbps{25.0};

  /// @brief A slab on every stream whatever the work (the plan of voxstream before the policy;
  ///        for tests that need many slabs of small volumes). min_depth still holds.
  [[nodiscard]] static slab_policy every_stream() noexcept {
    slab_policy p;
    p.min_slab_us = 0.0;
    p.max_halo_fraction = std::numeric_limits<double>::infinity();
    return p;
  }
};

namespace exec {

/// @brief What carries an op's bytes.
enum class traffic : std::uint8_t {
  device,  ///< the device's memory
  link,    ///< the host link (uploads, downloads)
};

/// @brief An op's work, as the slab policy sees it.
struct work {
  std::size_t slices{0};       ///< z-slices the op covers
  double bytes_per_slice{0};   ///< bytes read and written per slice, halo re-reads excluded
  double cost{1.0};            ///< device time against moving those bytes once (>1: compute-bound)
  std::size_t halo{0};         ///< slices each slab re-reads on either side
  std::size_t min_depth{1};    ///< shallowest useful slab (burst-sized runs, kernel chunks)
  traffic kind{traffic::device};
};

/// @brief Device time of `w` in µs at `gbps` GB/s.
[[nodiscard]] double work_us(const work& w, double gbps) noexcept;

/// @brief The number of slabs the policy gives `w` on `streams` streams, bounds other than the
///        stream count included (pure; host-tested). 0 only for no slices or no streams.
[[nodiscard]] std::size_t slab_limit(const work& w, const slab_policy& p, double device_gbps);

}  // namespace exec

/// @brief Makes the slab plan for `slices` slices over `streams` streams: the set's mapping
///        with one slab per stream (contiguous) or per slice (round-robin). Pure; host-tested.
std::vector<slab> make_plan(std::size_t slices, std::size_t streams, slice_mapping mapping);

/// @brief The policy's plan for `w` (see the file comment). Pure; host-tested. `device_gbps` is
///        the device's memory bandwidth (policy.device_gbps where that is set).
std::vector<slab> make_plan(const exec::work& w, std::size_t streams, slice_mapping mapping,
                            const slab_policy& policy, double device_gbps);

}  // namespace vox
