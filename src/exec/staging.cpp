// The pinned staging ring of a stream_set (src/exec/staging.hpp), which io's pageable transfers
// use.
#include "staging.hpp"

#include <cstddef>
#include <cstring>
#include <exception>

#include <voxstream/core/error.hpp>
#include <voxstream/memory/stream_allocator.hpp>

namespace vox {

stream_set::staging::staging(std::size_t buffers, std::size_t nbytes) : bytes(nbytes) {
  ring.resize(buffers);
  try {
    for (auto& b : ring) b.data = detail::allocate_pinned(nbytes, "stream_set staging");
  } catch (...) {
    for (auto& b : ring) detail::free_pinned(b.data);
    throw;
  }
}

stream_set::staging::~staging() {
  for (auto& b : ring) {
    if (b.used) {
      try {
        b.done.synchronize();
      } catch (const std::exception& ex) {
        detail::log_error("stream_set::~stream_set", ex.what());
      }
    }
    detail::free_pinned(b.data);
  }
}

stream_set::staging::buffer& stream_set::staging::acquire(const char* op) {
  buffer& b = ring[next];
  next = (next + 1) % ring.size();
  if (b.used) {
    b.done.synchronize();  // VOX_ALLOW_SYNC: a pageable transfer must reuse its staging buffer
    b.used = false;
  }
  if (b.pending_dst != nullptr) {
    std::memcpy(b.pending_dst, b.data, b.pending_bytes);
    b.pending_dst = nullptr;
  }
  (void)op;
  return b;
}

void stream_set::staging::drain(const char* op) {
  for (std::size_t i = 0; i < ring.size(); ++i) acquire(op);
}

}  // namespace vox
