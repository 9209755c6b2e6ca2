// Internal: scratch_volume, an op's intermediate volume without the value-initialisation that
// vox::volume's constructors enqueue. Not installed.
#pragma once

#include <cstddef>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/memory/memory_resource.hpp>
#include <voxstream/volume.hpp>

namespace vox::detail {

/// @brief An intermediate volume of extent `e` on `streams` whose voxels are not initialised,
///        for an op whose first pass writes every voxel before anything reads one: storage from
///        the current memory resource on the set's home stream (stream 0), wrapped as a volume
///        of external memory that frees it there, stream-ordered, when the volume lets go of it
///        (after the home stream has waited for every access the ledger knows of).
///        volume(streams, e) would fill it first: a kernel launch on the host and a write of
///        every voxel on the device, for nothing. Throws vox::invalid_argument (empty or
///        overflowing extent) and vox::out_of_memory, naming `op`, before any work is enqueued.
template <class T>
volume<T> scratch_volume(stream_set& streams, const extent3& e, const char* op) {
  const std::size_t bytes = checked_voxels(e, sizeof(T), op) * sizeof(T);
  memory_resource& mr = current_memory_resource();
  const stream_view home = streams.stream(0);
  T* p = static_cast<T*>(mr.allocate(bytes, home));
  try {
    return volume<T>(streams, e, p, [p, bytes, &mr](stream_view s) { mr.deallocate(p, bytes, s); });
  } catch (...) {
    mr.deallocate(p, bytes, home);
    throw;
  }
}

}  // namespace vox::detail
