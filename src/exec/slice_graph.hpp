// Internal to src/exec: the cache of launch_per_slice graphs that a stream_set owns (see
// launch.hpp). Each entry is one CUDA graph of `slices` kernel nodes in slice_graph_chains
// chains (slice z after slice z - chains; the slices of such an op are independent, the chains
// only make the graph cheap to replay), instantiated once, with the packed arguments it was last
// given; a launch with other arguments updates the nodes whose arguments changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <voxstream/config.hpp>
#include <voxstream/exec/launch.hpp>

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vox::exec {

/// Independent chains of a launch_per_slice graph: slice z follows slice z - chains.
inline constexpr std::size_t slice_graph_chains = 32;

#if VOX_BACKEND_CUDA
class slice_graph_cache {
 public:
  /// Graphs held at most; the least recently launched one goes first.
  static constexpr std::size_t capacity = 16;

  slice_graph_cache() = default;
  ~slice_graph_cache();
  slice_graph_cache(const slice_graph_cache&) = delete;
  slice_graph_cache& operator=(const slice_graph_cache&) = delete;

  /// Packs l's arguments, finds (or builds) the graph for l's key, updates the nodes whose
  /// arguments changed and launches it on `s`. Errors name "launch_per_slice". Not thread-safe:
  /// the set's lock serialises callers.
  void launch(const detail::slice_launch& l, stream_view s);

  [[nodiscard]] detail::slice_graph_stats stats() const noexcept;

 private:
  struct entry;
  entry* find_(const detail::slice_launch& l) noexcept;
  entry& build_(const detail::slice_launch& l);
  void update_(entry& e, const detail::slice_launch& l);

  std::vector<std::unique_ptr<entry>> entries_;
  std::vector<unsigned char> scratch_;  // this call's packed arguments
  std::vector<void*> params_;           // kernelParams of one node
  std::uint64_t tick_{0};
  detail::slice_graph_stats stats_{};
};
#else
/// The host backend has no launch_per_slice: nothing to cache.
class slice_graph_cache {};
#endif

}  // namespace vox::exec
