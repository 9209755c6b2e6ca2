#include "stream_cache.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <voxstream/memory/stream_allocator.hpp>

#include "../detail/cuda_check.hpp"
#include "capture_flag.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vox::detail {

namespace {

struct stream_entry {
  std::vector<void*> chunks;      // slot chunks (result_slots_per_chunk slots each)
  std::vector<void*> free_slots;  // slots ready for reuse on this stream
  void* scratch{nullptr};
  std::size_t scratch_bytes{0};  // usable bytes after the head
  std::size_t scratch_allocations{0};
};

// Every stream's cache. A heap object never destroyed: static stream_sets may release their
// streams after other statics are gone.
struct registry {
  std::mutex mutex;
  std::unordered_map<native_stream, stream_entry> streams;
};

registry& the_registry() noexcept {
  static registry* r = new registry;  // NOLINT: intentionally never destroyed
  return *r;
}

void zero_head(void* p, stream_view s, const char* op) {
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaMemsetAsync(p, 0, scratch_head_bytes, s.value()), op);
#else
  (void)s;
  (void)op;
  std::memset(p, 0, scratch_head_bytes);
#endif
}

class slot_resource final : public memory_resource {
  void* do_allocate(std::size_t bytes, stream_view s) override {
    if (bytes > result_slot_bytes) return pool_memory_resource().allocate(bytes, s);
    registry& r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    stream_entry& e = r.streams[s.value()];
    if (e.free_slots.empty()) {
      e.chunks.reserve(e.chunks.size() + 1);
      e.free_slots.reserve(e.free_slots.size() + result_slots_per_chunk);
      auto* chunk = static_cast<unsigned char*>(
          detail::allocate_async(result_slot_bytes * result_slots_per_chunk, s));
      e.chunks.push_back(chunk);
      // Handed out from the front of the chunk first (back of the free list).
      for (std::size_t i = result_slots_per_chunk; i-- > 0;)
        e.free_slots.push_back(chunk + i * result_slot_bytes);
    }
    void* p = e.free_slots.back();
    e.free_slots.pop_back();
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, stream_view s) noexcept override {
    if (bytes > result_slot_bytes) {
      pool_memory_resource().deallocate(p, bytes, s);
      return;
    }
    registry& r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.streams.find(s.value());
    if (it == r.streams.end()) {
      // Cannot happen while the slot's owner keeps its stream_state alive; the slot's chunk
      // went back to the pool with the stream.
      detail::log_error("result_slot_resource", "slot freed after its stream was released");
      return;
    }
    try {
      it->second.free_slots.push_back(p);  // capacity reserved when the chunk was made
    } catch (...) {
      detail::log_error("result_slot_resource", "cannot keep a freed slot");
    }
  }
};

}  // namespace

bool cache_allowed() noexcept {
  return &current_memory_resource() == &pool_memory_resource();
}

bool stream_capturing(stream_view s, const char* op) {
  if (detail::capturing_on_this_thread()) return true;
#if VOX_BACKEND_CUDA
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  VOX_CUDA_TRY(cudaStreamIsCapturing(s.value(), &st), op);
  return st != cudaStreamCaptureStatusNone;
#else
  (void)s;
  (void)op;
  return false;
#endif
}

memory_resource& result_slot_resource() noexcept {
  static slot_resource* r = new slot_resource;  // NOLINT: never destroyed (static handles)
  return *r;
}

void* stream_scratch(stream_view s, std::size_t bytes, const char* op) {
  registry& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  stream_entry& e = r.streams[s.value()];
  if (e.scratch == nullptr || e.scratch_bytes < bytes) {
    // Grow geometrically (whole 4 KiB pages), so that a stream sees few allocations.
    std::size_t want = std::max<std::size_t>(bytes, 2 * e.scratch_bytes);
    want = (want + 4095) / 4096 * 4096;
    void* p = detail::allocate_async(scratch_head_bytes + want, s);
    try {
      zero_head(p, s, op);
    } catch (...) {
      detail::deallocate_async(p, scratch_head_bytes + want, s);
      throw;
    }
    if (e.scratch != nullptr)
      detail::deallocate_async(e.scratch, scratch_head_bytes + e.scratch_bytes, s);
    e.scratch = p;
    e.scratch_bytes = want;
    ++e.scratch_allocations;
  }
  return e.scratch;
}

void release_stream_cache(native_stream s) noexcept {
  stream_entry e;
  {
    registry& r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.streams.find(s);
    if (it == r.streams.end()) return;
    e = std::move(it->second);
    r.streams.erase(it);
  }
  const stream_view v{s};
  for (void* c : e.chunks)
    detail::deallocate_async(c, result_slot_bytes * result_slots_per_chunk, v);
  if (e.scratch != nullptr)
    detail::deallocate_async(e.scratch, scratch_head_bytes + e.scratch_bytes, v);
}

stream_cache_stats cache_stats(native_stream s) {
  registry& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  stream_cache_stats out;
  const auto it = r.streams.find(s);
  if (it == r.streams.end()) return out;
  out.slot_chunks = it->second.chunks.size();
  out.free_slots = it->second.free_slots.size();
  out.scratch_bytes = it->second.scratch == nullptr ? 0 : it->second.scratch_bytes;
  out.scratch_allocations = it->second.scratch_allocations;
  return out;
}

std::size_t cached_streams() {
  registry& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.streams.size();
}

}  // namespace vox::detail
