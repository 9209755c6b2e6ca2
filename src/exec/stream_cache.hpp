// Private to the library (ops and tests include it): small device memory cached per stream of a
// stream_set, so that a warm op allocates nothing (issue 17: a pool allocation and its free cost
// the host several µs each, and one that reuses a block freed on another stream may make the
// device wait on that stream).
//
// Everything here is reused in stream order on the one stream it belongs to, as cudaFreeAsync
// followed by cudaMallocAsync on the same stream would be: no event, no wait. The memory comes
// from voxstream's pool and goes back to it, on its stream, when the stream's stream_state is
// destroyed (~stream_state calls release_stream_cache), so the set's last handle or volume
// frees it. Callers use the caches only when the current memory resource is the pool
// (cache_allowed) and no graph is being captured on the stream (stream_capturing); otherwise
// they allocate as before.
#pragma once

#include <cstddef>

#include <voxstream/core/backend.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/memory/memory_resource.hpp>

namespace vox::detail {

/// Bytes of a result slot; results of ops are at most this large.
inline constexpr std::size_t result_slot_bytes = 256;
/// Slots per device allocation of the result-slot cache.
inline constexpr std::size_t result_slots_per_chunk = 64;
/// Bytes at the start of a stream's scratch that are zero whenever no work that uses them is
/// queued: the cache zeroes them when it allocates, and every user leaves them zero (device
/// counters of single-pass kernels).
inline constexpr std::size_t scratch_head_bytes = 256;

/// True when ops may use the caches: the current memory resource is voxstream's pool (a user's
/// resource gets every allocation, as before).
[[nodiscard]] bool cache_allowed() noexcept;

/// True when `s` is being captured into a graph (a library capture on this thread, or a capture
/// begun on `s` by hand): cached memory must not be baked into a graph. Cheap (no device work).
[[nodiscard]] bool stream_capturing(stream_view s, const char* op);

/// A memory_resource for allocations of at most result_slot_bytes that live past an op (the
/// device slot of an async_value): slots are cached per stream, a freed slot is reused by the
/// next allocation on the same stream; larger requests go to the pool. Thread-safe; lives for
/// the whole process. deallocate() must get the stream of the allocate().
[[nodiscard]] memory_resource& result_slot_resource() noexcept;

/// The scratch of stream `s`: scratch_head_bytes of zeroed head, then at least `bytes` bytes.
/// For work enqueued on `s` alone, by the caller, before anything else uses the scratch: call it
/// inside run_op's enqueue for `s` (the set's lock serialises the users of its streams) and
/// enqueue every use before returning. A larger request replaces it (the old one is freed on
/// `s`, after the work queued there). Throws vox::out_of_memory like the pool.
[[nodiscard]] void* stream_scratch(stream_view s, std::size_t bytes, const char* op);

/// Frees everything cached for `s` (stream-ordered on `s`) and forgets it. Called by
/// ~stream_state before the stream is destroyed; never throws.
void release_stream_cache(native_stream s) noexcept;

/// What is cached for a stream (tests).
struct stream_cache_stats {
  std::size_t slot_chunks{0};          ///< device allocations of result slots
  std::size_t free_slots{0};           ///< slots ready for reuse
  std::size_t scratch_bytes{0};        ///< usable scratch bytes after the head (0: none yet)
  std::size_t scratch_allocations{0};  ///< scratch allocations so far (growth)
};
/// The cache of `s` (all zero if it has none). Thread-safe.
[[nodiscard]] stream_cache_stats cache_stats(native_stream s);
/// Streams that have a cache (tests: every released stream is forgotten). Thread-safe.
[[nodiscard]] std::size_t cached_streams();

}  // namespace vox::detail
